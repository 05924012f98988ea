// What one element costs to insert into the last answer of the long-chat benchmark's conversation
// (200 turns, 400 messages shown), by kind, before and after the reader has scrolled the whole
// list once (docs/benchmarks.md, issue 38). Run from end2end/ with 'node bench/insert.bench.mjs'
// (the release binary and site built, as for 'npm run bench'). Median of 15, one frame apart,
// the layout forced after each insertion.
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration } from '../support/browser.mjs';
import { insertionCosts } from './insertion.mjs';

function turn(index) {
  const calls = Array.from({ length: 10 }, (_, call) => ({ name: 'grep_search', args: { query: `term${(index + call) % 5}` } }));
  const text = `Turn ${index}: the **answer** with a table.\n\n| file | hits |\n|---|---|\n| a.rs | ${index} |\n| b.rs | 3 |\n\n` +
    'A paragraph of explanation that runs on for a while, as answers do. '.repeat(6);
  return { delta_chars: 400, delta_interval_ms: 0, steps: [{ reasoning: [`Turn ${index}.`] }, { tool_calls: calls }, { text }] };
}
const workspace = {};
for (let file = 0; file < 5; file += 1) {
  workspace[`src/module${file}.rs`] = Array.from({ length: 40 }, (_, line) => `let term${line % 5} = ${line};`).join('\n');
}
const KINDS = {
  details: '<details><summary>s</summary><p>x</p></details>',
  'div and button': '<div><button type="button">s</button><div hidden>x</div></div>',
  p: '<p>x</p>',
};
const probe = { kinds: KINDS, target: 'article.message.assistant' };

const server = await startServer({ workspace, scenarios: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`turn${i}`, turn(i)])) });
const browser = await launchBrowser();
try {
  let conversationId = null;
  for (let index = 0; index < 200; index += 1) {
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'Next turn', model: `scenario:turn${index % 10}`, conversation_id: conversationId }),
    });
    const body = await response.text();
    conversationId ??= /"conversation_id":"([^"]+)"/.exec(body)?.[1];
  }
  const { page } = await openPage(browser);
  await page.goto(`${server.url}/c/${conversationId}`);
  await waitForHydration(page);
  // Every earlier page, as the benchmark loads them (the button goes while a page loads).
  for (let tries = 0; tries < 400 && (await page.locator('article.message').count()) < 400; tries += 1) {
    const button = page.locator('.load-earlier:not([disabled])');
    if (await button.count()) await button.click().catch(() => {});
    await page.waitForTimeout(150);
  }
  console.log(`${await page.locator('article.message').count()} messages shown, every page loaded: ${await page.evaluate(insertionCosts, probe)}`);
  await page.evaluate(async () => {
    const list = document.querySelector('section.messages');
    const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
    for (let y = list.scrollTop; y > 0; y -= 3000) { list.scrollTop = y; await frame(); }
    for (let y = 0; y < list.scrollHeight; y += 3000) { list.scrollTop = y; await frame(); }
    list.scrollTop = list.scrollHeight;
    await new Promise((resolve) => setTimeout(resolve, 300));
  });
  console.log(`after scrolling the list end to end: ${await page.evaluate(insertionCosts, probe)}`);
} finally {
  await browser.close();
  await server.stop();
}
