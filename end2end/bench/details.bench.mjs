// What one element costs to insert (and lay out) in a page whose messages have all been styled,
// by kind: a `<details>` against any other element (docs/benchmarks.md, issue 38). Run from
// end2end/ with 'node bench/details.bench.mjs'. A page of N articles like an answer's (ten
// blocks each, a table, paragraphs), all drawn (a message that has been on screen once keeps its
// style, `content-visibility` or not); one element goes into the last article and the layout is
// forced, median of 15, one frame apart.
import { launchBrowser, openPage } from '../support/browser.mjs';
import { insertionCosts } from './insertion.mjs';

const article = `<article>${'<div class="block"><button>grep_search</button></div>'.repeat(10)}` +
  '<table><tr><td>a.rs</td><td>3</td></tr></table>' + '<p>A paragraph of explanation that runs on.</p>'.repeat(4) + '</article>';
const KINDS = {
  details: '<details><summary>s</summary><p>x</p></details>',
  'empty details': '<details></details>',
  'div and button': '<div><button>s</button><div hidden>x</div></div>',
  'div hidden=until-found': '<div><button>s</button><div hidden="until-found">x</div></div>',
  p: '<p>x</p>',
};
const browser = await launchBrowser();
const { page } = await openPage(browser);
for (const n of [8, 400, 2000]) {
  await page.setContent(`<main>${article.repeat(n)}</main>`);
  const costs = await page.evaluate(insertionCosts, { kinds: KINDS, target: 'main > article' });
  console.log(`${n} articles: ${costs}`);
}
await browser.close();
