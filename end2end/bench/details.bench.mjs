// How many user-agent shadow style sheets Chromium processes when 40 <details> go in before 200 or
// 2,000 others (docs/benchmarks.md, issue 38): run from end2end/ with 'node bench/details.bench.mjs'.
import { launchBrowser, openPage } from '../support/browser.mjs';
const browser = await launchBrowser();
const { page } = await openPage(browser);
for (const n of [200, 2000]) {
  await page.setContent(`<div id=list>${'<article><details><summary>s</summary>x</details><p>t</p></article>'.repeat(n)}</div>`);
  await page.evaluate(() => document.body.offsetHeight);
  for (const kind of ['details', 'div']) {
    await browser.startTracing(page, { categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink'] });
    await page.evaluate((kind) => {
      const list = document.getElementById('list');
      const frag = document.createDocumentFragment();
      for (let i = 0; i < 40; i++) { const a = document.createElement('article'); a.innerHTML = kind === 'details' ? '<details><summary>s</summary>x</details>' : '<div>s</div>'; frag.appendChild(a); }
      list.insertBefore(frag, list.firstChild);
      document.body.offsetHeight;
    }, kind);
    const events = JSON.parse((await browser.stopTracing()).toString()).traceEvents;
    const count = (name) => events.filter((e) => e.name === name).length;
    const ms = (name) => events.filter((e) => e.name === name && e.dur).reduce((s, e) => s + e.dur / 1000, 0).toFixed(2);
    console.log(`${n} details, inserting 40 ${kind}: processStyleSheet x${count('StyleElement::processStyleSheet')}, updateActiveStyleSheets ${ms('StyleEngine::updateActiveStyleSheets')} ms, UpdateLayoutTree ${ms('UpdateLayoutTree')} ms`);
  }
}
await browser.close();
