// Display modes and settings: applied at once, kept across reloads, honoured by the server render.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration, useModel, send, waitForRendered } from '../support/browser.mjs';

const LONG_LINE = 'x'.repeat(90);
const LONG_FILE = Array.from({ length: 50 }, (_, i) => `${String(i + 1).padStart(2, '0')} ${LONG_LINE}`).join('\n');

let server;
let browser;

before(async () => {
  server = await startServer({
    workspace: { 'long.txt': `${LONG_FILE}\n`, 'a.md': 'alpha\n' },
    scenarios: {
      three_tools: { delta_interval_ms: 0, steps: [
        { reasoning: ['Reading three things.'] },
        { tool_calls: [
          { name: 'read_file', args: { path: 'long.txt' } },
          { name: 'list_dir', args: { path: '.' } },
          { name: 'sleep', args: { seconds: 1.5 } },
        ] },
        { text: 'Here is **bold**, a [safe link](https://example.com), an [unsafe one](javascript:alert(1)) and code:\n\n```rust\nfn main() {}\n```' },
      ] },
      // The same calls with a sleep long enough to be seen running on a loaded machine: with
      // 1.5 s, a page slow to show the quick calls' results could miss it (once in CI's load).
      three_tools_slow: { delta_interval_ms: 0, steps: [
        { tool_calls: [
          { name: 'read_file', args: { path: 'long.txt' } },
          { name: 'list_dir', args: { path: '.' } },
          { name: 'sleep', args: { seconds: 6 } },
        ] },
        { text: 'Done.' },
      ] },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function setMode(page, label) {
  if (!(await page.locator('#settings-panel').isVisible())) await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel(new RegExp(`^${label}`)).check();
}

test('minimal hides the blocks, verbose expands them, normal collapses them: all without a reload', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.goto(server.url);
  await waitForHydration(page);
  await useModel(page, 'scenario:three_tools');
  await send(page, 'Read things');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 15_000 });
  await page.evaluate(() => { window.__sameDocument = true; });

  const openBlocks = () => page.locator('div.tool-call.open').count();
  const visibleBlocks = () => page.locator('div.tool-call:visible, .segment.reasoning:visible').count();
  assert.equal(await openBlocks(), 0, 'normal: persisted tool blocks start collapsed');
  assert.equal(await visibleBlocks(), 4);

  await setMode(page, 'Verbose');
  assert.equal(await openBlocks(), 3, 'verbose: every tool block is open');
  assert.match(await page.locator('.tool-call', { hasText: 'Reading long.txt' }).innerText(), /50 xxxx/, 'verbose shows the full output');

  await setMode(page, 'Minimal');
  assert.equal(await visibleBlocks(), 0, 'minimal: no tool or reasoning blocks');
  assert.match(await page.locator('.message.assistant').innerText(), /Here is bold/);

  await setMode(page, 'Normal');
  assert.equal(await visibleBlocks(), 4);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload happened');
  assert.deepEqual(problems, []);
  await context.close();
});

test('long output shows a preview with a notice and a way to see it all', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.goto(server.url);
  await waitForHydration(page);
  await useModel(page, 'scenario:three_tools');
  await send(page, 'Read the long file');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 15_000 });
  const block = page.locator('.tool-call', { hasText: 'Reading long.txt' });
  await block.locator('.segment-header').click();
  const notice = block.locator('.preview-notice');
  assert.match(await notice.innerText(), /^Showing [\d,]+ of [\d,]+ chars/);
  const [shown, total] = (await notice.innerText()).match(/[\d,]+/g).map((n) => Number(n.replaceAll(',', '')));
  assert.ok(shown <= 500 && total > 4000, `${shown} of ${total}`);
  assert.doesNotMatch(await block.locator('.tool-output').innerText(), /50 xxxx/);
  await block.getByRole('button', { name: 'Show all' }).click();
  assert.match(await block.locator('.tool-output').innerText(), /50 xxxx/);
  assert.equal(await notice.count(), 0);
  assert.deepEqual(problems, []);
  await context.close();
});

test('normal mode collapses every block of a message with more tools than the limit, even while running', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.goto(server.url);
  await waitForHydration(page);
  await page.getByRole('button', { name: 'Settings' }).click();
  const limit = page.getByLabel('Collapse all when more tools than');
  await limit.fill('2');
  await limit.dispatchEvent('change');
  await useModel(page, 'scenario:three_tools_slow');
  await send(page, 'Collapse them');
  // The three calls run at once: wait until the two quick ones are done and only the sleep runs.
  await page.locator('.tool-call.success').nth(1).waitFor();
  await page.locator('.tool-call.running', { hasText: 'sleep' }).waitFor();
  assert.equal(await page.locator('div.tool-call.open').count(), 0, 'three tools > 2: all collapsed');
  // A new chat navigates to its conversation, which closes the panel.
  if (!(await page.locator('#settings-panel').isVisible())) await page.getByRole('button', { name: 'Settings' }).click();
  await limit.fill('5');
  await limit.dispatchEvent('change');
  assert.equal(await page.locator('div.tool-call.running.open').count(), 1, 'within the limit a running block opens');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 20_000 });
  assert.deepEqual(problems, []);
  await context.close();
});

test('settings survive a reload and the server renders the chosen mode', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.goto(server.url);
  await waitForHydration(page);
  await useModel(page, 'scenario:three_tools');
  await send(page, 'Remember my mode');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 15_000 });
  await setMode(page, 'Minimal');
  const url = page.url();

  const cookies = await context.cookies();
  const cookie = cookies.find((c) => c.name === 'glassbox_settings');
  assert.ok(cookie, 'settings are stored');
  const html = await (await fetch(url, { headers: { cookie: `${cookie.name}=${cookie.value}` } })).text();
  assert.match(html, /<div[^>]*hidden[^>]*class="segment tool-call|<div[^>]*class="segment tool-call[^"]*"[^>]*hidden/, 'the server render hides the blocks');

  await page.reload();
  await waitForHydration(page);
  assert.equal(await page.locator('div.tool-call:visible').count(), 0);
  await page.getByRole('button', { name: 'Settings' }).click();
  assert.equal(await page.getByLabel(/^Minimal/).isChecked(), true);
  await setMode(page, 'Normal');
  assert.deepEqual(problems, []);
  await context.close();
});

test('markdown renders safely: formatting, safe links only, code with a copy button', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.goto(server.url);
  await waitForHydration(page);
  await useModel(page, 'scenario:three_tools');
  await send(page, 'Format it');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 15_000 });
  const answer = page.locator('.message.assistant .message-text');
  assert.equal(await answer.locator('strong').innerText(), 'bold');
  const link = answer.getByRole('link', { name: 'safe link' });
  assert.equal(await link.getAttribute('href'), 'https://example.com');
  assert.equal(await link.getAttribute('rel'), 'noopener noreferrer');
  assert.equal(await answer.locator('a[href^="javascript"]').count(), 0);
  assert.match(await answer.innerText(), /unsafe one/);
  assert.equal(await answer.locator('.code-block code').innerText(), 'fn main() {}');
  await answer.getByRole('button', { name: 'Copy code' }).waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});
