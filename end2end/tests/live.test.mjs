// The live view: overlays while a run streams, persisted segments after, Stop, resume, safety.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openChat, waitForHydration, send, waitForRendered } from '../support/browser.mjs';

const ANSWER = 'The answer arrives in many small pieces so that a reload lands in the middle of it. '.repeat(3).trim();
const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>';

let server;
let browser;

before(async () => {
  server = await startServer({
    workspace: { 'notes.md': '# Notes\nTODO: write the docs\n', 'evil.html': `${HOSTILE}\n` },
    scenarios: {
      tools: { delta_chars: 4, delta_interval_ms: 20, steps: [
        { reasoning: ['Look for TODO notes.', 'Then wait a little.'] },
        { tool_calls: [
          { name: 'grep_search', args: { query: 'TODO' } },
          { name: 'sleep', args: { seconds: 1.5 } },
          { name: 'sleep', args: { seconds: 1.5, blocking: true } },
        ] },
        { text: 'Found **one** TODO.' },
      ] },
      long: { delta_interval_ms: 0, steps: [
        { text: 'Starting a long job.' },
        { tool_calls: [{ name: 'sleep', args: { seconds: 60 } }] },
        { text: 'never shown' },
      ] },
      slow_text: { delta_chars: 3, delta_interval_ms: 40, steps: [{ text: ANSWER }] },
      hostile: { delta_chars: 7, delta_interval_ms: 5, steps: [
        { tool_calls: [{ name: 'read_file', args: { path: 'evil.html' } }] },
        { text: HOSTILE },
      ] },
      failing: { delta_interval_ms: 0, steps: [
        { tool_calls: [{ name: 'fail', args: { message: 'the disk is on fire' } }] },
        { text: 'Partial.' },
        { error: { code: 'model_error', message: 'The model went away.' } },
      ] },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

function newChat(model) {
  return openChat(browser, server.url, model);
}

test('tools show a spinner while running, then a check mark and duration; reasoning streams without a toggle', async () => {
  const { page, context, problems } = await newChat('scenario:tools');
  await send(page, 'Find the TODOs');

  // While streaming: live reasoning, two sleeps running at once, no "Show reasoning" collapsible.
  await page.locator('.reasoning.live').waitFor();
  assert.equal(await page.locator('.reasoning .segment-header').count(), 0, 'no collapsible while streaming');
  await page.waitForFunction(() => document.querySelectorAll('.tool-call.running .spinner').length === 2);
  // Output updates live: the async sleep streams a tick every 0.5 s into its open block.
  const sleeping = page.locator('.tool-call.running', { hasText: 'Sleeping 1.5 s' }).first();
  await sleeping.locator('.tool-output', { hasText: 'tick 1' }).waitFor();
  assert.equal(await sleeping.evaluate((el) => el.classList.contains('running')), true, 'still running while its output grows');
  await page.locator('.tool-call.success', { hasText: "Searching for 'TODO'" }).waitFor();
  assert.match(await page.locator('.tool-call', { hasText: "Searching for 'TODO'" }).innerText(), /✓\s*\d+ ms/);
  await page.locator('.stop').waitFor();

  // After message_final: persisted segments, reasoning collapsed, three check marks.
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 15_000 });
  assert.equal(await page.locator('.reasoning.live').count(), 0, 'the overlay gave way');
  const reasoning = page.locator('.segment.reasoning:not(.live)');
  assert.equal(await reasoning.count(), 1);
  assert.equal(await reasoning.evaluate((el) => el.classList.contains('open')), false, 'closed by default');
  assert.match(await reasoning.locator('.segment-header').innerText(), /Thought for \d/);
  assert.equal(await page.locator('.tool-call.success').count(), 3);
  assert.match(await page.locator('.tool-call', { hasText: 'Sleeping 1.5 s' }).first().innerText(), /✓\s*1\.\d s/);
  await reasoning.locator('.segment-header').click();
  await page.locator('.reasoning-parts', { hasText: 'Then wait a little.' }).waitFor();
  const liveView = await page.locator('.message.assistant').innerText();

  // A page load renders the stored message the same way.
  await page.reload();
  await waitForHydration(page);
  await page.locator('.segment.reasoning > .segment-header').click();
  // A collapsed block's body is drawn when it first opens.
  await page.locator('.reasoning-parts', { hasText: 'Then wait a little.' }).waitFor();
  assert.equal(await page.locator('.message.assistant').innerText(), liveView);
  assert.deepEqual(problems, []);
  await context.close();
});

test('Stop ends the run at once, keeps the partial answer, and the stored trace is cancelled', async () => {
  const { page, context, problems } = await newChat('scenario:long');
  await send(page, 'Start the long job');
  await page.locator('.tool-call.running').waitFor();
  const started = Date.now();
  await page.getByRole('button', { name: /Stop/ }).click();
  await waitForRendered(page.locator('.message.assistant[data-status="cancelled"]'));
  assert.ok(Date.now() - started < 3000, 'stopped promptly');
  const text = await page.locator('.message.assistant').innerText();
  assert.match(text, /Starting a long job\./);
  assert.match(text, /Stopped/);
  assert.doesNotMatch(text, /never shown/);

  const conversationId = page.url().split('/c/')[1];
  const conversation = await (await fetch(`${server.url}/api/conversations/${conversationId}`)).json();
  assert.equal(conversation.messages[1].status, 'cancelled');
  const calls = conversation.messages[1].segments.filter((s) => s.type === 'tool_call');
  assert.equal(calls[0].status, 'cancelled');
  const trace = await (await fetch(`${server.url}/api/traces/${conversation.messages[1].trace_id}`)).json();
  assert.equal(trace.status, 'cancelled');
  assert.equal(trace.cancelled_by, 'user');
  const types = trace.events.map((e) => e.type);
  assert.ok(types.includes('tool_call_started') && types.includes('text_delta'), 'partial events kept');
  assert.equal(types.at(-1), 'message_cancelled');
  assert.deepEqual(problems, []);
  await context.close();
});

test('Escape stops a run too', async () => {
  const { page, context, problems } = await newChat('scenario:long');
  await send(page, 'Start another long job');
  await page.locator('.tool-call.running').waitFor();
  await page.keyboard.press('Escape');
  await waitForRendered(page.locator('.message.assistant[data-status="cancelled"]'));
  assert.deepEqual(problems, []);
  await context.close();
});

test('a reload mid-stream reattaches and finishes with no duplicated or missing text', async () => {
  const { page, context, problems } = await newChat('scenario:slow_text');
  await send(page, 'Talk slowly');
  await page.waitForURL(/\/c\//);
  await page.waitForFunction(() => (document.querySelector('.message-text.streaming')?.textContent ?? '').length > 20);
  await page.reload();
  await waitForHydration(page);
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 20_000 });
  assert.equal(await page.locator('.message.assistant .message-text').innerText(), ANSWER);
  assert.deepEqual(problems, []);
  await context.close();
});

test('HTML and scripts from the model or a tool are shown as text and never run', async () => {
  const { page, context, problems } = await newChat('scenario:hostile');
  await send(page, 'Read the evil file');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'));
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator('.messages img, .messages script').count(), 0);
  assert.match(await page.locator('.message.assistant .message-text').innerText(), /<script>window.__pwned=1<\/script>/);
  await page.locator('.tool-call .segment-header').click();
  assert.match(await page.locator('.tool-output').innerText(), /<img src=x onerror/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a failing tool shows a cross and its error; a failed run says so and offers a retry', async () => {
  const { page, context, problems } = await newChat('scenario:failing');
  await send(page, 'Break something');
  await waitForRendered(page.locator('.message.assistant[data-status="error"]'));
  // Interact once the ended message has settled (its Retry is drawn): see the note on issue 11.
  await page.getByRole('button', { name: 'Retry' }).waitFor();
  const tool = page.locator('.tool-call.error');
  // CI once read this block empty right after the status turned: the ended message's contents
  // were skipped until the next rendering update (see `waitForRendered`).
  await tool.locator('.tool-status', { hasText: 'Failed' }).waitFor({ timeout: 5_000 });
  assert.match(await tool.innerText(), /✗\s*Failed/);
  await tool.locator('.segment-header').click();
  await tool.locator('.tool-error').waitFor({ timeout: 5_000 });
  assert.match(await tool.innerText(), /the disk is on fire/);
  assert.match(await page.locator('.message.assistant').innerText(), /Partial\.[\s\S]*The run failed\.[\s\S]*The model went away\./);
  await page.getByRole('button', { name: 'Retry' }).click();
  await page.waitForFunction(() => document.querySelectorAll('.message.assistant[data-status="error"]').length === 2);
  assert.deepEqual(problems, []);
  await context.close();
});
