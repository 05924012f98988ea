// Which task of a conversation's opening is long (issue 38): opens a new chat, then a 30-turn
// conversation of the long-chat benchmark's turns (its first page: 8 messages, 40 tool blocks),
// in a fresh browser context per round, and prints each long task (over 50 ms) with its start,
// beside when the wasm's instantiation started and ended. A task before `instantiated` is the
// page's first style and layout (before any script); one after it is hydration. Run from
// end2end/ with 'node bench/opening.bench.mjs' (the release binary and site built, as for
// 'npm run bench'); ROUNDS=n sets the rounds (6), COLD=1 skips the new chat.
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration } from '../support/browser.mjs';

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

const server = await startServer({ workspace, scenarios: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`turn${i}`, turn(i)])) });
const browser = await launchBrowser();
try {
  let conversationId = null;
  for (let index = 0; index < 30; index += 1) {
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'Next turn', model: `scenario:turn${index % 10}`, conversation_id: conversationId }),
    });
    const body = await response.text();
    conversationId ??= /"conversation_id":"([^"]+)"/.exec(body)?.[1];
  }
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
