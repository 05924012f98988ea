// Which task of a conversation's opening is long (issue 38): opens a new chat, then a 30-turn
// conversation of the long-chat benchmark's turns (its first page: 8 messages, 40 tool blocks),
// in a fresh browser context per round, and prints each long task (over 50 ms) with its start,
// beside when the wasm's instantiation started and ended. A task before `instantiated` is the
// page's first style and layout (before any script); one after it is hydration. Run from
// end2end/ with 'node bench/opening.bench.mjs' (the release binary and site built, as for
// 'npm run bench'); ROUNDS=n sets the rounds (6), COLD=1 skips the new chat.
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration } from '../support/browser.mjs';
import { CHAT_TURNS, WORKSPACE, storedConversation } from './scenarios.mjs';

// In the page from its first script on: long tasks, and the wasm's instantiation.
const INSTRUMENT = () => {
  window.__opening = [];
  const note = (what) => window.__opening.push(`${what} ${Math.round(performance.now())}`);
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__opening.push(`long task ${Math.round(entry.startTime)}+${Math.round(entry.duration)}`);
  }).observe({ type: 'longtask', buffered: true });
  const instantiate = WebAssembly.instantiateStreaming;
  WebAssembly.instantiateStreaming = async (...args) => {
    note('instantiating');
    const instance = await instantiate(...args);
    note('instantiated');
    return instance;
  };
};

const server = await startServer({ workspace: WORKSPACE, scenarios: CHAT_TURNS });
const browser = await launchBrowser();
try {
  const conversationId = await storedConversation(server, 30);
  for (let round = 0; round < Number(process.env.ROUNDS ?? 6); round += 1) {
    const { page, context } = await openPage(browser);
    await page.addInitScript(INSTRUMENT);
    // As the long-chat benchmark does, a new chat first (the wasm is then in the HTTP cache);
    // COLD=1 opens the conversation first, as a first visit does.
    let empty = ['skipped'];
    if (!process.env.COLD) {
      await page.goto(`${server.url}/`);
      await waitForHydration(page);
      empty = await page.evaluate(() => window.__opening);
    }
    await page.goto(`${server.url}/c/${conversationId}`);
    await waitForHydration(page);
    await page.waitForTimeout(300);
    const opened = await page.evaluate(() => window.__opening);
    console.log(`round ${round}: new chat: ${empty.join(', ')}\n         conversation: ${opened.join(', ')}`);
    await context.close();
  }
} finally {
  await browser.close();
  await server.stop();
}
