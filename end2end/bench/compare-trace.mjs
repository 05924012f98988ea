// The compare page opened directly on two runs of about 500 steps (the runs of `npm run bench --
// compare`), traced: the four longest top-level tasks of the page's main thread in each round,
// with the script, style, layout and paint inside them. Longtask entries show only tasks over
// 50 ms and not the rendering; a trace shows both. The trace's own overhead lengthens script.
// Run from end2end/: `node bench/compare-trace.mjs [rounds] [trace]` (after the release build);
// with `trace`, run A's trace page (`/t/{a}`, one answer of 500 blocks) is opened instead.

import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration } from '../support/browser.mjs';
import { busyRun, otherRun, storedRun } from './scenarios.mjs';

const KINDS = ['FunctionCall', 'ParseHTML', 'UpdateLayoutTree', 'Layout', 'PrePaint', 'Paint', 'MinorGC', 'MajorGC'];
const rounds = Number(process.argv[2] ?? 6);
const tracePage = process.argv[3] === 'trace';
const server = await startServer({
  workspace: { 'notes.md': 'x\n' },
  scenarios: { compare_a: busyRun(2_000, 249, 0), compare_b: otherRun(busyRun(2_000, 249, 0)) },
});
const browser = await launchBrowser();
const run = async (model) => (await storedRun(server, model)).traceId;

/** The longest top-level tasks of the main thread (the one that parsed the HTML). */
function longest(events) {
  const parse = events.find((e) => e.name === 'ParseHTML');
  const main = events
    .filter((e) => e.pid === parse.pid && e.tid === parse.tid && e.ph === 'X')
    .sort((x, y) => x.ts - y.ts || y.dur - x.dur);
  const tops = [];
  let end = -1;
  for (const e of main) if (e.ts >= end) { tops.push(e); end = e.ts + e.dur; }
  const t0 = tops[0].ts;
  return [...tops].sort((x, y) => y.dur - x.dur).slice(0, 4).sort((x, y) => x.ts - y.ts).map((task) => {
    const inside = main.filter((e) => e.ts >= task.ts && e.ts + e.dur <= task.ts + task.dur);
    const kinds = KINDS
      .map((kind) => [kind, inside.filter((e) => e.name === kind).reduce((sum, e) => sum + e.dur, 0)])
      .filter(([, us]) => us > 1500)
      .map(([kind, us]) => `${kind} ${(us / 1000).toFixed(0)}`);
    return `${(task.dur / 1000).toFixed(0)} ms at ${((task.ts - t0) / 1000).toFixed(0)} [${kinds.join(', ')}]`;
  });
}

try {
  const [a, b] = [await run('scenario:compare_a'), await run('scenario:compare_b')];
  for (let round = 0; round < rounds; round += 1) {
    const { page, context } = await openPage(browser);
    const cdp = await context.newCDPSession(page);
    const events = [];
    cdp.on('Tracing.dataCollected', (data) => events.push(...data.value));
    const complete = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve));
    await cdp.send('Tracing.start', {
      transferMode: 'ReportEvents',
      traceConfig: { includedCategories: ['toplevel', 'devtools.timeline', 'v8.execute', 'v8'] },
    });
    await page.goto(tracePage ? `${server.url}/t/${a}` : `${server.url}/compare/${a}/${b}`);
    await waitForHydration(page);
    await page.waitForTimeout(300);
    await cdp.send('Tracing.end');
    await complete;
    console.log(`round ${round}: ${longest(events).join(' | ')}`);
    await context.close();
  }
} finally {
  await browser.close();
  await server.stop();
}
