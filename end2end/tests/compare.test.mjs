// Comparing two runs (issue 36, part 2): two real runs of a fake OpenAI-compatible model in one
// conversation, with different tool calls; "Compare with…" on the first run's trace page opens
// the compare view (aligned rows, the inserted call marked, the answers' word diff); a reload
// renders the same on the server and hydrates without a warning.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../support/server.mjs';
import { startFakeOpenAI, providersFile, chunk, toolCall } from '../support/fake-openai.mjs';
import { launchBrowser, openPage, waitForHydration, send, waitForRendered } from '../support/browser.mjs';
import { busyRun, otherRun, storedRun } from '../bench/scenarios.mjs';

let server;
let fake;
let browser;

/** Model `one` reads notes.md; model `two` reads it and lists the folder. Then each answers. */
function readThenAnswer(parsed) {
  const two = parsed.model === 'two';
  // The conversation's earlier turns are sent too: only tool results after the question count.
  const messages = parsed.messages ?? [];
  const question = messages.map((m) => m.role).lastIndexOf('user');
  const answered = messages.slice(question + 1).some((m) => m.role === 'tool');
  return answered
    ? [chunk({ content: two ? 'The notes have two TODO items.' : 'The notes have one TODO.' }), chunk({}, 'stop')]
    : [toolCall(0, 'read_file', { path: 'notes.md' }), ...(two ? [toolCall(1, 'list_dir', { path: '.' })] : []), chunk({}, 'tool_calls')];
}

before(async () => {
  fake = await startFakeOpenAI({ respond: readThenAnswer });
  const dir = mkdtempSync(join(tmpdir(), 'glassbox-compare-'));
  const providers = providersFile(dir, fake.baseUrl, { writeFileSync, join }, ['one', 'two']);
  server = await startServer({
    args: ['--providers-file', providers],
    workspace: { 'notes.md': 'TODO: write the docs\n' },
    // Two runs of 62 steps each (a reasoning part, 30 tool calls, 31 texts), for the long view.
    scenarios: { long_a: busyRun(310, 30, 0), long_b: otherRun(busyRun(310, 30, 0)) },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await fake?.close();
});

/** What the compare view shows: each row's change and tool names, and the word diff's marks. */
async function compareView(page) {
  await page.locator('.compare-rows').waitFor();
  const rows = await page.locator('.compare-row').evaluateAll((items) => items.map((item) => ({
    change: item.dataset.change,
    text: item.innerText,
  })));
  const deleted = await page.locator('.word-diff del').allInnerTexts();
  const inserted = await page.locator('.word-diff ins').allInnerTexts();
  return { rows, deleted, inserted };
}

/**
 * Checks the compare view once it has settled: after a client-side navigation the browser builds
 * the rows a chunk per task, so a row can be read before its cells are in (seen once in a fresh
 * clone under load: row 0's text empty, its kind already set). Retries for up to 10 s, then
 * reports what the last read saw.
 */
async function checkSettled(page) {
  const until = Date.now() + 10_000;
  for (;;) {
    const view = await compareView(page);
    try {
      check(view);
      return;
    } catch (error) {
      if (Date.now() > until) throw error;
    }
    await page.waitForTimeout(100);
  }
}

function check(view) {
  assert.deepEqual(view.rows.map((row) => row.change), ['same', 'inserted', 'changed']);
  assert.match(view.rows[0].text, /read_file[\s\S]*read_file/);
  assert.match(view.rows[1].text, /\+ only in B[\s\S]*list_dir/);
  assert.ok(!/list_dir[\s\S]*list_dir/.test(view.rows[1].text), 'list_dir is in B only');
  assert.deepEqual(view.deleted, ['one', 'TODO.']);
  assert.deepEqual(view.inserted, ['two TODO', 'items.']);
}

test('two runs with different tool calls compare step by step, the same after a reload', async () => {
  const { page, problems } = await openPage(browser);
  await page.goto(server.url);
  await waitForHydration(page);
  await page.getByLabel('Model').selectOption('fake/one');
  await send(page, 'How many TODOs are in the notes?');
  const done = page.locator('.message.assistant[data-status="complete"]');
  await waitForRendered(done.first(), { timeout: 15_000 });
  await page.getByLabel('Model').selectOption('fake/two');
  await send(page, 'How many TODOs, and what else is here?');
  await waitForRendered(done.nth(1), { timeout: 15_000 });

  // The first run's trace page: "Compare with…" lists the second run (same conversation first).
  await done.first().getByRole('link', { name: 'View trace' }).click();
  await page.waitForURL(/\/t\/trace_/);
  await waitForHydration(page);
  const first = page.url().split('/t/')[1];
  await page.locator('.compare-with > summary').click();
  const choice = page.locator('.compare-choice', { hasText: 'what else is here?' });
  await choice.waitFor();
  assert.match(await choice.innerText(), /fake\/two[\s\S]*completed[\s\S]*this conversation/);
  await choice.click();
  await page.waitForURL(new RegExp(`/compare/${first}/trace_`));
  await checkSettled(page);
  assert.match(await page.locator('.compare-side.side-a').innerText(), /How many TODOs are in the notes\?/);
  assert.equal(await page.locator('.compare-timeline').count(), 2);

  // A reload: the server renders the same view, and it hydrates without a warning.
  await page.reload();
  await waitForHydration(page);
  await checkSettled(page);

  // On a phone the two runs stack: run B's step under run A's, not beside it.
  await page.setViewportSize({ width: 390, height: 800 });
  const [left, right] = await page.locator('.compare-row.same .compare-cell').evaluateAll((cells) => cells.map((cell) => cell.getBoundingClientRect().toJSON()));
  assert.ok(right.top >= left.bottom - 1, `stacked: ${JSON.stringify([left, right])}`);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scroll');
  assert.deepEqual(problems, []);
});

/** Whether the compare view's `index`th row (or the last) has its contents laid out. */
function rowDrawn(page, index) {
  return page.locator('.compare-row').evaluateAll((rows, at) => {
    const row = at < 0 ? rows[rows.length - 1] : rows[at];
    return row.querySelector('.compare-cell').checkVisibility();
  }, index);
}

// Issue 36's speed. Opened directly, the server's page lays out only the rows near the top in its
// first frames; the others and the timelines' bars are drawn as the reader nears them, and in the
// end all of them. Reached from another page, the browser builds the rows a chunk per task, and
// all of them arrive.
test('a long comparison draws its later rows and bars as the reader scrolls to them', async () => {
  const a = (await storedRun(server, 'scenario:long_a')).traceId;
  const b = (await storedRun(server, 'scenario:long_b')).traceId;
  const comparison = await (await fetch(`${server.url}/api/compare/${a}/${b}`)).json();
  const expected = comparison.rows.length;
  const bars = comparison.a.steps.length + comparison.b.steps.length;
  assert.ok(expected > 60, `${expected} rows`);
  // The server's page as it arrives, before its script runs (the wasm held back): the first rows
  // drawn, the later ones waiting.
  const { page: before, context } = await openPage(browser, { viewport: { width: 1280, height: 720 } });
  await before.route('**/pkg/**', (route) => route.abort('aborted'));
  await before.goto(`${server.url}/compare/${a}/${b}`);
  assert.equal(await rowDrawn(before, 0), true, 'the first row is drawn');
  assert.equal(await rowDrawn(before, -1), false, 'the last row waits until a script draws it');
  await context.close();
  const { page, problems } = await openPage(browser, { viewport: { width: 1280, height: 720 } });
  const opened = async () => {
    await waitForHydration(page);
    await page.waitForFunction((count) => document.querySelectorAll('.compare-row').length === count, expected);
    await page.waitForFunction((count) => document.querySelectorAll('.compare-timeline .timeline-row').length === count, bars);
    assert.equal(await rowDrawn(page, 0), true, 'the first row is drawn');
    await page.locator('.compare-row').last().evaluate((row) => row.scrollIntoView());
    await page.waitForFunction(() => [...document.querySelectorAll('.compare-row')].at(-1).querySelector('.compare-cell').checkVisibility());
    await page.locator('.compare-timeline .timeline-row').last().evaluate((row) => row.scrollIntoView());
    const bar = page.locator('.compare-timeline .timeline-bar').last();
    await bar.waitFor({ state: 'visible' });
    assert.ok((await bar.boundingBox()).width > 0, 'the last bar is drawn');
    // In the end nothing waits: the whole comparison is drawn, for screen readers and printing.
    await page.waitForFunction(() => !document.querySelector('.compare-body [hidden]'));
  };
  await page.goto(`${server.url}/compare/${a}/${b}`);
  await opened();
  await page.goto(`${server.url}/t/${a}`);
  await waitForHydration(page);
  // A link to the comparison on the trace page, followed by the router (as "Compare with…" is):
  // the page is not loaded again, so the marker set before the click is still there.
  await page.evaluate((href) => {
    window.__samePage = true;
    const link = Object.assign(document.createElement('a'), { href, textContent: 'compare' });
    document.querySelector('main').append(link);
    link.click();
  }, `/compare/${a}/${b}`);
  await page.waitForURL(/\/compare\//);
  await opened();
  assert.equal(await page.evaluate(() => window.__samePage), true, 'built in the browser, not loaded');
  assert.deepEqual(problems, []);
});

test('a run compared with itself says so, and a missing one is the not-found page', async () => {
  const { page } = await openPage(browser);
  const response = await page.goto(`${server.url}/compare/trace_x/trace_x`);
  assert.equal(response.status(), 400);
  await page.getByText('cannot be compared with itself').waitFor();
  const missing = await page.goto(`${server.url}/compare/trace_x/trace_y`);
  assert.equal(missing.status(), 404);
  await page.getByText('One of these runs does not exist.').waitFor();
});
