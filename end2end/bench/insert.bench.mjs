// What one element costs to insert into the last answer of the long-chat benchmark's conversation
// (200 turns, 400 messages shown), by kind, before and after the reader has scrolled the whole
// list once (docs/benchmarks.md, issue 38). Run from end2end/ with 'node bench/insert.bench.mjs'
// (the release binary and site built, as for 'npm run bench'). Median of 15, one frame apart,
// the layout forced after each insertion.
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration } from '../support/browser.mjs';
import { insertionCosts } from './insertion.mjs';
import { CHAT_TURNS, WORKSPACE, storedConversation } from './scenarios.mjs';

const KINDS = {
  details: '<details><summary>s</summary><p>x</p></details>',
  'div and button': '<div><button type="button">s</button><div hidden>x</div></div>',
  p: '<p>x</p>',
};
const probe = { kinds: KINDS, target: 'article.message.assistant' };

const server = await startServer({ workspace: WORKSPACE, scenarios: CHAT_TURNS });
const browser = await launchBrowser();
try {
  const conversationId = await storedConversation(server, 200);
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
