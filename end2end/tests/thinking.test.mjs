// An Anthropic model that thinks, calls a tool and thinks again: both reasoning parts stream into
// the overlay, collapse once the answer is there, come back with the tool result to the model
// (signature and redacted data unchanged), and replay from the trace page.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../support/server.mjs';
import { startFakeAnthropic, SIGNATURE, REDACTED_DATA } from '../support/fake-anthropic.mjs';
import { launchBrowser, openChat, send, waitForRendered } from '../support/browser.mjs';

let server;
let fake;
let browser;

before(async () => {
  fake = await startFakeAnthropic({ delayMs: 120 });
  const dir = mkdtempSync(join(tmpdir(), 'glassbox-anthropic-'));
  const providers = join(dir, 'providers.json');
  writeFileSync(providers, JSON.stringify({ providers: [{
    name: 'anth', kind: 'anthropic', base_url: fake.baseUrl,
    models: [{ id: 'think', thinking_budget: 2048 }],
  }] }));
  server = await startServer({
    args: ['--providers-file', providers],
    workspace: { 'notes.md': 'TODO: write the docs\n' },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await fake?.close();
});

test('thinking before and after a tool call shows live, collapses after the answer and replays', async () => {
  const { page, context, problems } = await openChat(browser, server.url, 'anth/think');
  await send(page, 'Where are the TODOs?');

  // Live: the first thinking part in the overlay, then the one after the tool.
  await page.locator('.reasoning.live', { hasText: 'I should search for TODO.' }).waitFor({ timeout: 15_000 });
  await page.locator('.reasoning.live', { hasText: 'Found it in notes.md.' }).waitFor({ timeout: 15_000 });

  const assistant = page.locator('.message.assistant[data-status="complete"]');
  await waitForRendered(assistant, { timeout: 15_000 });
  await assistant.getByText('One TODO, in notes.md.').waitFor();
  assert.equal(await page.locator('.reasoning.live').count(), 0, 'the overlay gave way');
  const reasoning = assistant.locator('.segment.reasoning:not(.live)');
  assert.equal(await reasoning.count(), 2, 'one block before the tool, one after');
  assert.deepEqual(await reasoning.evaluateAll((all) => all.map((el) => el.classList.contains('open'))), [false, false], 'collapsed');
  for (const header of await reasoning.locator('.segment-header').all()) await header.click();
  await assistant.locator('.reasoning-parts', { hasText: 'I should search for TODO.' }).waitFor();
  await assistant.locator('.reasoning-parts', { hasText: 'redacted reasoning' }).waitFor();
  await assistant.locator('.reasoning-parts', { hasText: 'Found it in notes.md.' }).waitFor();
  const html = await page.content();
  assert.ok(!html.includes(REDACTED_DATA) && !html.includes(SIGNATURE), 'never the data or the signature');

  // The model got its blocks back with the tool result.
  const blocks = fake.requests[1].messages[1].content;
  assert.deepEqual(blocks.slice(0, 2), [
    { type: 'thinking', thinking: 'I should search for TODO.', signature: SIGNATURE },
    { type: 'redacted_thinking', data: REDACTED_DATA },
  ]);

  // The trace page replays both parts.
  await assistant.getByRole('link', { name: 'View trace' }).click();
  await page.waitForURL(/\/t\/trace_/);
  await page.locator('.trace-status', { hasText: /^Completed in/ }).waitFor();
  const replay = page.locator('.message.replay');
  await replay.and(page.locator('[data-replay="done"]')).waitFor();
  const replayed = replay.locator('.segment.reasoning:not(.live)');
  assert.equal(await replayed.count(), 2);
  for (const header of await replayed.locator('.segment-header').all()) await header.click();
  await replay.locator('.reasoning-parts', { hasText: 'I should search for TODO.' }).waitFor();
  await replay.locator('.reasoning-parts', { hasText: 'Found it in notes.md.' }).waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});
