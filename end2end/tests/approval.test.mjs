// A person's approval before a tool runs, in the browser: approve, deny with a reason, answer from
// a second tab after a reload, Stop while waiting. The question lives in the run's events, so any
// page that shows the run can answer it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openChat, openPage, waitForHydration, send } from '../support/browser.mjs';

let server;
let browser;

before(async () => {
  // list_dir asks for approval; everything else runs at once.
  const config = join(mkdtempSync(join(tmpdir(), 'glassbox-approval-')), 'providers.json');
  writeFileSync(config, JSON.stringify({ approval: { tools: { list_dir: 'ask' } } }));
  server = await startServer({
    workspace: { 'notes.md': '# Notes\n' },
    args: ['--providers-file', config],
    scenarios: {
      ask: { delta_chars: 6, delta_interval_ms: 5, steps: [
        { text: 'Let me look at the folder.' },
        { tool_calls: [{ name: 'list_dir', args: { path: '.' } }] },
        { text: 'Done looking.' },
      ] },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Sends a message and waits for the tool block's question. */
async function askedIn(page) {
  await send(page, 'What is in the folder?');
  const block = page.locator('div.tool-call.awaiting-approval');
  await block.waitFor({ timeout: 15_000 });
  return block;
}

test('Approve runs the call and the answer says who approved it', async () => {
  const { page, context, problems } = await openChat(browser, server.url, 'scenario:ask');
  const block = await askedIn(page);
  assert.match(await block.locator('.tool-args').innerText(), /"path": "\."/);
  assert.match(await block.locator('.tool-status').innerText(), /Waiting for approval/);
  // Drawn, not a glyph: U+23F8 is missing from Chromium's fonts here and showed as a box.
  assert.equal(await block.locator('.tool-status .pause svg').count(), 1);
  await block.getByRole('button', { name: 'Approve' }).click();
  await page.getByText('Done looking.').waitFor({ timeout: 15_000 });
  const done = page.locator('div.tool-call.success');
  await done.waitFor();
  await done.evaluate((element) => { if (!element.classList.contains('open')) element.querySelector('.segment-header').click(); });
  assert.match(await done.locator('.approval-answer').innerText(), /Approved by local/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('Deny with a reason ends the call denied and the run goes on', async () => {
  const { page, context, problems } = await openChat(browser, server.url, 'scenario:ask');
  const block = await askedIn(page);
  await block.getByLabel('Reason for denying').fill('not this folder');
  await block.getByRole('button', { name: 'Deny' }).click();
  await page.getByText('Done looking.').waitFor({ timeout: 15_000 });
  const denied = page.locator('div.tool-call.denied');
  await denied.waitFor();
  assert.match(await denied.locator('.tool-status').innerText(), /Denied/);
  await denied.evaluate((element) => { if (!element.classList.contains('open')) element.querySelector('.segment-header').click(); });
  assert.match(await denied.locator('.approval-answer').innerText(), /Denied by local: not this folder/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a reload still shows the question, and a second tab answers it; the first tab follows', async () => {
  const first = await openChat(browser, server.url, 'scenario:ask');
  await askedIn(first.page);
  await first.page.waitForURL(/\/c\//);
  await first.page.reload();
  await waitForHydration(first.page);
  const again = first.page.locator('div.tool-call.awaiting-approval');
  await again.waitFor({ timeout: 15_000 });

  const second = await openPage(browser);
  await second.page.goto(first.page.url());
  await waitForHydration(second.page);
  const block = second.page.locator('div.tool-call.awaiting-approval');
  await block.waitFor({ timeout: 15_000 });
  await block.getByRole('button', { name: 'Approve' }).click();
  await second.page.getByText('Done looking.').waitFor({ timeout: 15_000 });
  // The first tab sees the answer arrive through its own stream.
  await first.page.getByText('Done looking.').waitFor({ timeout: 15_000 });
  await first.page.locator('div.tool-call.success').waitFor();

  // A late answer from the first tab is refused: the first answer won.
  const runs = await (await fetch(`${server.url}/api/conversations/${first.page.url().split('/c/')[1]}`)).json();
  const call = runs.messages[1].segments.find((s) => s.type === 'tool_call');
  assert.equal(call.approval.decision, 'approve');
  assert.deepEqual(first.problems, []);
  assert.deepEqual(second.problems, []);
  await first.context.close();
  await second.context.close();
});

test('Stop while waiting ends the run as stopped and the call as cancelled', async () => {
  const { page, context, problems } = await openChat(browser, server.url, 'scenario:ask');
  await askedIn(page);
  await page.getByRole('button', { name: 'Stop' }).click();
  await page.getByText('Stopped. The partial answer is kept.').waitFor({ timeout: 15_000 });
  const cancelled = page.locator('div.tool-call.cancelled');
  await cancelled.waitFor();
  assert.equal(await page.locator('.approval-actions').count(), 0);
  assert.deepEqual(problems, []);
  await context.close();
});
