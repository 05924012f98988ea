// Browser benchmark: how the page copes with a long, busy run, and with opening a big stored trace.
// Run from end2end/ with `npm run bench` (scripts/bench.sh builds the release binary first).
// It drives Debian's Chromium against the real binary, like the tests, and prints its figures.
//
// 1. Streams a 10,000-token answer with 50 tool calls (a delta per ms, about 5 to 10 times a fast
//    model's speed) and records long tasks (over 50 ms), total scripting time (CDP
//    Performance.getMetrics), and the time from `message_final` reaching the page to the final
//    message being in the DOM and painted.
// 2. Opens the stored trace of a 5,000-event run and records the time to the replay's final view.
// 3. Replays stored traces of about 1,000 and 5,000 events at Instant and at 4x: time per event
//    (wall and scripting) and their ratio, which is near 1 when the replay is linear.
// 4. A conversation of 200 turns, 2,000 tool calls and a 5,000-event trace: long tasks while it
//    opens, while every earlier page loads (to 400 messages shown, each page timed), while the
//    reader's wheel scrolls the message list end to end, and while a new answer streams.
// 5. Two runs of about 500 steps on the compare page (issue 36): long tasks while it opens,
//    directly and from run A's trace page (whose own opening is measured on the way).
// `npm run bench -- stream|trace|replay|long|compare` runs one part.

import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration, send, useModel } from '../support/browser.mjs';
import { busyRun, otherRun, storedRun, chatTurn, WORKSPACE } from './scenarios.mjs';

const TOKENS = 10_000;
const TOOL_CALLS = 50;
const workspace = WORKSPACE;

// Recorded in the page from its first script on: long tasks, and when message_final arrives.
const INSTRUMENT = () => {
  window.__bench = { longTasks: [], finalReceived: null, finalInDom: null, finalPainted: null };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__bench.longTasks.push({ start: entry.startTime, duration: entry.duration });
  }).observe({ type: 'longtask', buffered: true });
  const NativeEventSource = window.EventSource;
  window.EventSource = class extends NativeEventSource {
    constructor(...args) {
      super(...args);
      // Added before the app's own handler, so it runs first: the moment the event is delivered.
      this.addEventListener('message', (event) => {
        if (window.__bench.finalReceived === null && event.data.includes('"type":"message_final"')) {
          window.__bench.finalReceived = performance.now();
        }
      });
    }
  };
  new MutationObserver(() => {
    const bench = window.__bench;
    if (bench.finalReceived === null || bench.finalInDom !== null) return;
    if (document.querySelector('article.message.assistant[data-status="complete"]') && !document.querySelector('article.live')) {
      bench.finalInDom = performance.now();
      // The frame after the DOM change: style, layout and paint have run by the next task.
      requestAnimationFrame(() => setTimeout(() => { bench.finalPainted = performance.now(); }, 0));
    }
  }).observe(document, { childList: true, subtree: true, attributes: true });
};

async function metrics(cdp) {
  const { metrics: list } = await cdp.send('Performance.getMetrics');
  return Object.fromEntries(list.map(({ name, value }) => [name, value]));
}

async function streamingBenchmark(browser, server) {
  const { page, context, problems } = await openPage(browser);
  await page.addInitScript(INSTRUMENT);
  await useModel(page, 'scenario:busy');
  await page.goto(server.url);
  await waitForHydration(page);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  const before = await metrics(cdp);
  const startedLongTasks = await page.evaluate(() => window.__bench.longTasks.length);
  const started = Date.now();
  await send(page, 'Write the long answer');
  await page.waitForFunction(() => window.__bench.finalPainted !== null, null, { timeout: 300_000, polling: 100 });
  const wall = (Date.now() - started) / 1000;
  const after = await metrics(cdp);
  const bench = await page.evaluate(() => window.__bench);
  const longTasks = bench.longTasks.slice(startedLongTasks);
  const words = (await page.locator('article.message.assistant[data-status="complete"]').innerText()).split(/\s+/).length;
  const tools = await page.locator('article.message.assistant[data-status="complete"] .tool-call').count();
  await context.close();
  if (problems.length) throw new Error(`the page reported problems:\n${problems.join('\n')}`);
  const longest = longTasks.reduce((max, task) => Math.max(max, task.duration), 0);
  console.log(`streaming ${TOKENS} tokens + ${TOOL_CALLS} tool calls: ${wall.toFixed(1)} s wall, ${words} words and ${tools} tool calls rendered`);
  const when = longTasks.map((task) => `${task.duration.toFixed(0)} ms at ${((task.start - bench.finalReceived) / 1000).toFixed(2)} s`);
  console.log(`  long tasks over 50 ms while streaming: ${longTasks.length}${longTasks.length ? ` (longest ${longest.toFixed(0)} ms; relative to message_final: ${when.join(', ')})` : ''}`);
  console.log(`  scripting ${(after.ScriptDuration - before.ScriptDuration).toFixed(2)} s, style ${(after.RecalcStyleDuration - before.RecalcStyleDuration).toFixed(2)} s, layout ${(after.LayoutDuration - before.LayoutDuration).toFixed(2)} s, all tasks ${(after.TaskDuration - before.TaskDuration).toFixed(2)} s`);
  console.log(`  message_final -> final message in the DOM: ${(bench.finalInDom - bench.finalReceived).toFixed(1)} ms; -> painted: ${(bench.finalPainted - bench.finalReceived).toFixed(1)} ms`);
}

async function traceBenchmark(browser, server) {
  // Start the 5,000-event run through the API and wait for it to end.
  const response = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ content: 'A big trace', model: 'scenario:big' }),
  });
  const body = await response.text();
  const events = body.split('\n').filter((line) => line.startsWith('data:'));
  const traceId = /"trace_id":"([^"]+)"/.exec(events[0])?.[1];
  if (!traceId) throw new Error('no trace id in the run\'s first event');
  const runs = [];
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const { page, context, problems } = await openPage(browser);
    await page.addInitScript(INSTRUMENT);
    const started = Date.now();
    await page.goto(`${server.url}/t/${traceId}`, { waitUntil: 'commit' });
    await page.locator('.message.replay[data-replay="done"]').waitFor({ timeout: 60_000 });
    const shown = Date.now() - started;
    await waitForHydration(page);
    const hydrated = Date.now() - started;
    const longTasks = await page.evaluate(() => window.__bench.longTasks);
    const bytes = await page.evaluate(() => performance.getEntriesByType('navigation')[0]?.encodedBodySize ?? 0);
    await context.close();
    if (problems.length) throw new Error(`the page reported problems:\n${problems.join('\n')}`);
    runs.push({ shown, hydrated, longest: longTasks.reduce((max, task) => Math.max(max, task.duration), 0), bytes });
  }
  runs.sort((a, b) => a.hydrated - b.hydrated);
  const median = runs[Math.floor(runs.length / 2)];
  console.log(`opening a stored trace of ${events.length} events (${(median.bytes / 1024).toFixed(0)} KiB of HTML), median of ${runs.length}:`);
  console.log(`  final view shown (server-rendered) ${median.shown} ms; interactive (hydrated) ${median.hydrated} ms; longest task ${median.longest.toFixed(0)} ms`);
}

/** Replays a stored trace at `speed` ('Instant' or '4×'): wall time and scripting time per event. */
async function replayOnce(browser, server, traceId, speed) {
  const { page, context, problems } = await openPage(browser);
  await page.goto(`${server.url}/t/${traceId}`);
  await waitForHydration(page);
  // Fetch the events first (a scrub to the start), so the replay itself is what is measured.
  await page.locator('.scrubber').fill('0');
  await page.locator('.replay-position', { hasText: /^event 0 of/ }).waitFor();
  await page.getByRole('button', { name: speed, exact: true }).click();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  const before = await metrics(cdp);
  const started = Date.now();
  await page.getByRole('button', { name: /Replay/ }).click();
  await page.locator('.message.replay[data-replay="done"]').waitFor({ timeout: 300_000 });
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0))));
  const wall = Date.now() - started;
  const after = await metrics(cdp);
  await context.close();
  if (problems.length) throw new Error(`the page reported problems:\n${problems.join('\n')}`);
  return { wall, scripting: (after.ScriptDuration - before.ScriptDuration) * 1000 };
}

/** Replay must be linear: time per event at 1,000 and at 5,000 events, at Instant and at 4x. */
async function replayBenchmark(browser, server) {
  const small = await storedRun(server, 'scenario:replay_1k');
  const large = await storedRun(server, 'scenario:replay_5k');
  for (const speed of ['Instant', '4×']) {
    const per = [];
    for (const run of [small, large]) {
      const { wall, scripting } = await replayOnce(browser, server, run.traceId, speed);
      per.push({ count: run.count, wall: wall / run.count, scripting: scripting / run.count });
    }
    const [a, b] = per;
    console.log(`replay at ${speed}: ${a.count} events ${a.wall.toFixed(3)} ms/event wall, ${a.scripting.toFixed(3)} ms/event scripting; ` +
      `${b.count} events ${b.wall.toFixed(3)} / ${b.scripting.toFixed(3)} ms/event; ratio ${(b.wall / a.wall).toFixed(2)} wall, ${(b.scripting / a.scripting).toFixed(2)} scripting`);
  }
}

/** Two runs of about 500 steps each (reasoning, 249 tool calls, 250 texts) side by side: the
 * compare page opened directly, its long tasks and time to hydrate (issue 36). */
async function compareBenchmark(browser, server) {
  const a = (await storedRun(server, 'scenario:compare_a')).traceId;
  const b = (await storedRun(server, 'scenario:compare_b')).traceId;
  const timed = await fetch(`${server.url}/api/compare/${a}/${b}`);
  const comparison = await timed.json();
  console.log(`compare: ${comparison.a.steps.length} and ${comparison.b.steps.length} steps, ${comparison.rows.length} rows`);
  for (let round = 0; round < 3; round += 1) {
    const { page, context, problems } = await openPage(browser);
    await page.addInitScript(INSTRUMENT);
    const started = Date.now();
    await page.goto(`${server.url}/compare/${a}/${b}`);
    await waitForHydration(page);
    const hydrated = Date.now() - started;
    const tasks = await page.evaluate(() => window.__bench.longTasks.map((task) => task.duration));
    const rows = await page.locator('.compare-row').count();
    console.log(`  round ${round}: ${rows} rows drawn, hydrated in ${hydrated} ms; long tasks over 50 ms: ${tasks.length}${tasks.length ? ` (longest ${Math.max(...tasks).toFixed(0)} ms)` : ''}`);
    await context.close();
    if (problems.length) throw new Error(`the page reported problems:\n${problems.join('\n')}`);
  }
  // Reached from run A's trace page, as its "Compare with…" link does: built in the browser.
  for (let round = 0; round < 3; round += 1) {
    const { page, context, problems } = await openPage(browser);
    await page.addInitScript(INSTRUMENT);
    await page.goto(`${server.url}/t/${a}`);
    await waitForHydration(page);
    await page.waitForTimeout(1_000);
    const opening = await page.evaluate(() => window.__bench.longTasks.map((task) => task.duration));
    const before = opening.length;
    const started = Date.now();
    await page.evaluate((href) => {
      const link = Object.assign(document.createElement('a'), { href, textContent: 'Compare' });
      document.querySelector('main').append(link);
      link.click();
    }, `/compare/${a}/${b}`);
    await page.locator('.compare-row').first().waitFor();
    const shown = Date.now() - started;
    await page.waitForFunction((count) => document.querySelectorAll('.compare-row').length === count, comparison.rows.length);
    const all = Date.now() - started;
    await page.waitForTimeout(500);
    const tasks = await page.evaluate((from) => window.__bench.longTasks.slice(from).map((task) => task.duration), before);
    console.log(`  run A's trace page (${comparison.a.steps.length} steps) opened: long tasks over 50 ms: ${opening.length}${opening.length ? ` (${opening.map((ms) => ms.toFixed(0)).join(', ')} ms)` : ''}`);
    console.log(`  from the trace page ${round}: first rows in ${shown} ms, all ${comparison.rows.length} in ${all} ms; long tasks over 50 ms: ${tasks.length}${tasks.length ? ` (longest ${Math.max(...tasks).toFixed(0)} ms)` : ''}`);
    await context.close();
    if (problems.length) throw new Error(`the page reported problems:\n${problems.join('\n')}`);
  }
}

/** 200 turns with 2,000 tool calls (and one 5,000-event trace): open, scroll, stream a new answer. */
async function longConversationBenchmark(browser, server) {
  let conversationId = null;
  const post = async (model) => {
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'Next turn', model, conversation_id: conversationId }),
    });
    const body = await response.text();
    conversationId ??= /"conversation_id":"([^"]+)"/.exec(body)?.[1];
    return /"trace_id":"([^"]+)"/.exec(body)?.[1];
  };
  const built = Date.now();
  const bigTrace = await post('scenario:big');
  for (let index = 1; index < 200; index += 1) await post(`scenario:turn${index % 10}`);
  console.log(`long conversation: 200 turns stored in ${((Date.now() - built) / 1000).toFixed(1)} s`);
  // A second version of the last answer, to switch between (issue 36).
  const stored = await fetch(`${server.url}/api/conversations/${conversationId}`).then((r) => r.json());
  const last = stored.messages[stored.messages.length - 1].id;
  const regenerated = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ conversation_id: conversationId, regenerate: last, model: 'scenario:turn3' }),
  });
  await regenerated.text();

  const { page, context, problems } = await openPage(browser);
  await page.addInitScript(INSTRUMENT);
  // The floor: a new chat (no messages) compiles and starts the same wasm.
  await page.goto(`${server.url}/`);
  await waitForHydration(page);
  const empty = await page.evaluate(() => window.__bench.longTasks.map((task) => task.duration.toFixed(0)));
  console.log(`  a new chat, for comparison: long tasks while opening: ${empty.length}${empty.length ? ` (${empty.join(', ')} ms)` : ''}`);
  await useModel(page, 'scenario:busy_short');
  const started = Date.now();
  await page.goto(`${server.url}/c/${conversationId}`);
  await waitForHydration(page);
  const opened = Date.now() - started;
  const bytes = await page.evaluate(() => performance.getEntriesByType('navigation')[0]?.encodedBodySize ?? 0);
  const phase = async (name, work) => {
    const from = await page.evaluate(() => window.__bench.longTasks.length);
    await work();
    const tasks = (await page.evaluate(() => window.__bench.longTasks)).slice(from);
    const longest = tasks.reduce((max, task) => Math.max(max, task.duration), 0);
    console.log(`  ${name}: ${tasks.length} long tasks over 50 ms${tasks.length ? ` (longest ${longest.toFixed(0)} ms)` : ''}`);
  };
  const all = await page.evaluate(() => window.__bench.longTasks);
  console.log(`  opened in ${opened} ms (${(bytes / 1024).toFixed(0)} KiB of HTML, ${await page.locator('article.message').count()} messages, ${await page.locator('.tool-call').count()} tool blocks); long tasks while opening: ${all.length}${all.length ? ` (longest ${all.reduce((m, t) => Math.max(m, t.duration), 0).toFixed(0)} ms)` : ''}`);
  await phase('switching between the two versions of the last answer, three times each way', async () => {
    const times = [];
    for (let round = 0; round < 3; round += 1) {
      for (const [button, count] of [['Previous version', '1 / 2'], ['Next version', '2 / 2']]) {
        // Measured in the page, as a page load is: from the press (a click on the button) to
        // the next painted frame once the last answer shows the other version's `n / m`
        // (Playwright's click and polling would add their own round trips to the figure).
        times.push(await page.evaluate(async ({ button, count }) => {
          const last = () => [...document.querySelectorAll('article.message.assistant')].pop();
          const start = performance.now();
          last().querySelector(`button[aria-label="${button}"]`).click();
          await new Promise((resolve) => {
            const look = () => (last()?.querySelector('.sibling-count')?.textContent === count
              ? resolve() : requestAnimationFrame(look));
            look();
          });
          await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
          return performance.now() - start;
        }, { button, count }));
      }
    }
    console.log(`  (each switch, from the press to the version shown: ${times.map((t) => t.toFixed(0)).join(', ')} ms)`);
  });
  // Each earlier page as a reader loads it (the button; scrolling up does the same): how long from
  // the press to the next painted frame, and Chromium's script, style and layout time for it, by
  // how many messages were shown before. A page costs the same at 40 as at 400 when no work grows
  // with the messages already there.
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  const counters = async () => Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
  const loads = [];
  await phase('loading every earlier page', async () => {
    while (await page.locator('.load-earlier').count()) {
      const shown = await page.locator('article.message').count();
      const before = await counters();
      // Waits for the page to go in without looking at the list (a query over every message
      // would itself cost more the more are shown), then for the next painted frame.
      const took = await page.evaluate(async () => {
        const column = document.querySelector('section.messages .message-column') ?? document.querySelector('section.messages');
        const start = performance.now();
        const inserted = new Promise((resolve) => {
          const observer = new MutationObserver(() => { observer.disconnect(); resolve(); });
          observer.observe(column, { childList: true });
        });
        document.querySelector('.load-earlier').click();
        await inserted;
        await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
        return performance.now() - start;
      });
      const after = await counters();
      const ms = (name) => (after[name] - before[name]) * 1000;
      loads.push({ shown, took, script: ms('ScriptDuration'), style: ms('RecalcStyleDuration'), layout: ms('LayoutDuration') });
    }
  });
  const fmt = (load) => `${load.shown} shown: ${load.took.toFixed(0)} ms (script ${load.script.toFixed(1)}, style ${load.style.toFixed(1)}, layout ${load.layout.toFixed(1)})`;
  console.log(`  every earlier page, by messages shown before it: ${loads.map(fmt).join('; ')}`);
  const near = (target) => loads.filter((load) => Math.abs(load.shown - target) <= 30);
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
  const [early, late] = [near(40), loads.slice(-3)];
  const per = (set, key) => median(set.map((load) => load[key]));
  console.log(`  per-page load at about 40 shown: ${per(early, 'took').toFixed(0)} ms (script ${per(early, 'script').toFixed(1)}, style ${per(early, 'style').toFixed(1)}); ` +
    `at ${late.map((load) => load.shown).join('/')} shown: ${per(late, 'took').toFixed(0)} ms (script ${per(late, 'script').toFixed(1)}, style ${per(late, 'style').toFixed(1)}); ` +
    `ratio ${(per(late, 'took') / per(early, 'took')).toFixed(2)}`);
  console.log(`  messages shown: ${await page.locator('article.message').count()}; the page scrolls by ${await page.evaluate(() => document.documentElement.scrollHeight - window.innerHeight)} px (0: only the list does)`);
  // The reader's wheel over the message list, from the end to the top and back.
  await phase('scrolling the message list end to end', async () => {
    const box = await page.locator('section.messages').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const top = () => page.locator('section.messages').evaluate((list) => list.scrollTop);
    const atEnd = () => page.locator('section.messages').evaluate((list) => list.scrollHeight - list.scrollTop - list.clientHeight <= 1);
    let wheels = 0;
    for (; (await top()) > 0 && wheels < 400; wheels += 1) {
      await page.mouse.wheel(0, -4000);
      await page.waitForTimeout(16);
    }
    const height = await page.locator('section.messages').evaluate((list) => list.scrollHeight);
    for (; !(await atEnd()) && wheels < 800; wheels += 1) {
      await page.mouse.wheel(0, 4000);
      await page.waitForTimeout(16);
    }
    console.log(`  (${wheels} wheel turns over a ${height} px list)`);
  });
  await phase('streaming a new answer', async () => {
    const answers = await page.locator('article.message.assistant').count();
    await send(page, 'One more');
    await page.locator('article.message.assistant[data-status="complete"]').nth(answers).waitFor({ timeout: 120_000 });
    // The chat ends the run a task after the frame that draws the message complete: wait for
    // that too, and for the frame after it, so the phase holds the run's whole end.
    await page.locator('section.messages:not(.run-going)').waitFor({ timeout: 10_000 });
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0))));
  });
  // The conversation's big trace (its first answer: about 5,000 events), opened and replayed at
  // each speed, Instant included, as a reader does from the message's trace link.
  await phase('opening the big trace', async () => {
    await page.goto(`${server.url}/t/${bigTrace}`);
    await waitForHydration(page);
  });
  // The page opens on the final view ("done"), so each phase waits in the page for the replay to
  // start playing (its events fetched the first time) and then to be done; a wait for "done"
  // alone ended at once and left the replay's work to the next phase. Instant is pressed while a
  // 4x replay plays: the rest of the trace drawn at once (from the end it does nothing).
  for (const speed of ['4×', 'Instant']) {
    await phase(`replaying the big trace at ${speed}`, async () => {
      await page.evaluate(async (instant) => {
        const article = document.querySelector('.message.replay');
        const button = (label) => [...document.querySelectorAll('.replay-controls button')].find((b) => b.textContent.trim() === label);
        // Fails after five minutes, or as soon as the page says the replay cannot go on.
        const until = (wanted) => new Promise((resolve, reject) => {
          if (article.dataset.replay === wanted) return resolve();
          const timer = setTimeout(() => { observer.disconnect(); reject(new Error(`the replay never got to ${wanted}`)); }, 300_000);
          const observer = new MutationObserver(() => {
            const failed = document.querySelector('.replay-controls ~ .error')?.textContent;
            if (article.dataset.replay !== wanted && !failed) return;
            observer.disconnect();
            clearTimeout(timer);
            if (failed) reject(new Error(failed)); else resolve();
          });
          observer.observe(article, { attributes: true, attributeFilter: ['data-replay'] });
          observer.observe(article.parentNode, { childList: true });
        });
        button('4×').click();
        const playing = until('playing');
        document.querySelector('.replay-controls button.play').click();
        await playing;
        if (instant) button('Instant').click();
        await until('done');
        await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
      }, speed === 'Instant');
    });
  }
  await context.close();
  if (problems.length) throw new Error(`the page reported problems:\n${problems.join('\n')}`);
}

const only = process.argv[2];
const server = await startServer({
  workspace,
  scenarios: {
    busy: busyRun(TOKENS, TOOL_CALLS, 1),
    replay_1k: busyRun(800, 4, 1),
    replay_5k: busyRun(4_000, 20, 1),
    busy_short: busyRun(2_000, 10, 1),
    ...Object.fromEntries(Array.from({ length: 10 }, (_, index) => [`turn${index}`, chatTurn(index)])),
    // Each grep_search call streams 40 matching lines: about 42 events per call.
    big: busyRun(4_160, 30, 0),
    compare_a: busyRun(2_000, 249, 0),
    compare_b: otherRun(busyRun(2_000, 249, 0)),
  },
});
const browser = await launchBrowser();
try {
  if (!only || only === 'stream') await streamingBenchmark(browser, server);
  if (!only || only === 'trace') await traceBenchmark(browser, server);
  if (!only || only === 'replay') await replayBenchmark(browser, server);
  if (!only || only === 'long') await longConversationBenchmark(browser, server);
  if (!only || only === 'compare') await compareBenchmark(browser, server);
} finally {
  await browser.close();
  await server.stop();
}
