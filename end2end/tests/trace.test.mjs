// Opening a past message's trace: replay, timeline, inspector; and traces that ended early.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../support/server.mjs';
import { startFakeOpenAI, providersFile } from '../support/fake-openai.mjs';
import { launchBrowser, openPage, waitForHydration, send, waitForRendered } from '../support/browser.mjs';
import { busyRun, storedRun } from '../bench/scenarios.mjs';

let server;
let fake;
let browser;

before(async () => {
  fake = await startFakeOpenAI({ answer: 'The TODO is in notes.md.' });
  const dir = mkdtempSync(join(tmpdir(), 'glassbox-providers-'));
  server = await startServer({
    args: ['--providers-file', providersFile(dir, fake.baseUrl, { writeFileSync, join })],
    workspace: { 'notes.md': 'TODO: write the docs\n' },
    scenarios: {
      work: { delta_chars: 6, delta_interval_ms: 25, steps: [
        { reasoning: ['Search the notes.', 'Then answer.'] },
        { tool_calls: [{ name: 'grep_search', args: { query: 'TODO' } }, { name: 'sleep', args: { seconds: 0.6 } }] },
        { text: 'There is **one** TODO: write the docs.' },
        { usage: { input_tokens: 120, output_tokens: 40 } },
      ] },
      long: { delta_interval_ms: 0, steps: [{ text: 'Partial.' }, { tool_calls: [{ name: 'sleep', args: { seconds: 60 } }] }] },
      // A long stored answer: 30 tool calls between texts, about 60 blocks.
      many: busyRun(310, 30, 0),
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await fake?.close();
});

/** Milliseconds from a duration as the page writes it ("850 ms", "2.3 s"). */
function parseDuration(text) {
  const [, number, unit] = text.match(/^([\d.]+) (ms|s)$/);
  return Number(number) * (unit === 's' ? 1000 : 1);
}

async function chat(page, model, text) {
  await page.goto(server.url);
  await waitForHydration(page);
  await page.getByLabel('Model').selectOption(model);
  await send(page, text);
}

test('a past message opens its trace; replay at 4x ends in the same view as the live run', async () => {
  const { page, context, problems } = await openPage(browser);
  await chat(page, 'scenario:work', 'Find the TODO');
  const assistant = page.locator('.message.assistant[data-status="complete"]');
  await waitForRendered(assistant, { timeout: 15_000 });
  const liveView = (await assistant.locator(':scope > :not(.message-footer)').allInnerTexts()).join('\n');

  // The footer's figures are the stored trace's.
  const href = await assistant.getByRole('link', { name: 'View trace' }).getAttribute('href');
  const stored = await (await fetch(`${server.url}/api${href.replace('/t/', '/traces/')}`)).json();
  assert.equal(await assistant.locator('.footer-model').innerText(), 'scenario:work');
  assert.equal(await assistant.locator('.footer-tokens').innerText(), `${stored.input_tokens} in · ${stored.output_tokens} out tokens`);
  assert.equal(stored.input_tokens, 120);
  assert.equal(await assistant.locator('.footer-tools').innerText(), `${stored.total_tool_calls} tool calls`);
  const shown = await assistant.locator('.footer-duration').innerText();
  assert.ok(Math.abs(parseDuration(shown) - stored.total_duration_ms) <= 50, `${shown} vs ${stored.total_duration_ms} ms`);
  await assistant.getByRole('button', { name: 'Copy' }).click();
  await assistant.getByRole('button', { name: 'Copied' }).waitFor();

  await assistant.getByRole('link', { name: 'View trace' }).click();
  await page.waitForURL(/\/t\/trace_/);
  await page.locator('.trace-status', { hasText: /^Completed in/ }).waitFor();
  const replay = page.locator('.message.replay');
  await replay.and(page.locator('[data-replay="done"]')).waitFor();
  assert.equal((await replay.locator(':scope > *').allInnerTexts()).join('\n'), liveView, 'the trace opens on the final view');

  assert.equal(await page.getByRole('button', { name: '4×' }).getAttribute('aria-pressed'), 'true');
  await page.getByRole('button', { name: /Replay/ }).click();
  await page.locator('.message.replay[data-replay="playing"]').waitFor();
  await page.locator('.message.replay .tool-call.running .spinner').first().waitFor();
  await page.locator('.message.replay[data-replay="done"]').waitFor({ timeout: 10_000 });
  assert.equal((await replay.locator(':scope > *').allInnerTexts()).join('\n'), liveView, 'replay ends where the live run ended');

  // The scrubber moves through the stored events without running anything.
  await page.getByLabel('Position in the trace').fill('3');
  assert.match(await page.locator('.replay-position').innerText(), /^event 3 of \d+/);
  await page.getByRole('button', { name: 'Instant' }).click();
  await page.getByRole('button', { name: /Replay/ }).click();
  await page.locator('.message.replay[data-replay="done"]').waitFor();

  await page.getByRole('tab', { name: 'Timeline' }).click();
  const rows = page.locator('.timeline-row');
  await rows.first().waitFor();
  assert.ok((await rows.count()) >= 4, 'reasoning parts, two tools and the answer');
  const bars = await page.locator('.timeline-bar.tool').evaluateAll((els) => els.map((el) => [parseFloat(el.style.left), parseFloat(el.style.width)]));
  assert.equal(bars.length, 2);
  assert.ok(Math.abs(bars[0][0] - bars[1][0]) < 5, 'parallel tool calls start together on the time axis');
  assert.deepEqual(problems, []);
  await context.close();
});

test('the inspector lists the model requests and tool calls as drop-downs', async () => {
  const { page, context, problems } = await openPage(browser);
  await chat(page, 'fake/m', 'Where is the TODO?');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 15_000 });
  await page.getByRole('link', { name: 'View trace' }).click();
  await page.waitForURL(/\/t\/trace_/);
  await page.getByRole('tab', { name: 'Inspector' }).click();
  const entries = page.locator('.inspector-entry');
  await entries.first().waitFor();
  assert.deepEqual(await entries.locator(':scope > summary').allInnerTexts(), ['1. LLM request · m', '2. Tool call · grep_search', '3. LLM request · m']);
  const first = entries.nth(0);
  await first.locator(':scope > summary').click();
  assert.equal(await first.getByLabel('Model').inputValue(), 'm');
  assert.deepEqual(await first.locator('.inspector-message > summary').allInnerTexts(), ['user']);
  assert.match(await first.locator('.inspector-call').innerText(), /grep_search[\s\S]*query[\s\S]*TODO/);
  const last = entries.nth(2);
  await last.locator(':scope > summary').click();
  assert.equal(await last.getByLabel('Output').inputValue(), 'The TODO is in notes.md.');
  assert.deepEqual(problems, []);
  await context.close();
});

test('a stopped run\'s trace opens and says how it ended', async () => {
  const { page, context, problems } = await openPage(browser);
  await chat(page, 'scenario:long', 'Start and stop');
  await page.locator('.tool-call.running').waitFor();
  await page.getByRole('button', { name: /Stop/ }).click();
  const stopped = page.locator('.message.assistant[data-status="cancelled"]');
  await waitForRendered(stopped);
  await stopped.getByRole('link', { name: 'View trace' }).click();
  await page.locator('.trace-status', { hasText: /^Stopped \(user\)/ }).waitFor();
  assert.match(await page.locator('.message.replay').innerText(), /Partial\./);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a trace page opened directly preloads its chunk beside the main bundle, and fetches it once', async () => {
  const { page, context, problems } = await openPage(browser);
  await chat(page, 'scenario:work', 'Find the TODO once more');
  const assistant = page.locator('.message.assistant[data-status="complete"]');
  await waitForRendered(assistant, { timeout: 15_000 });
  const href = await assistant.getByRole('link', { name: 'View trace' }).getAttribute('href');
  const requested = [];
  page.on('request', (r) => { if (r.url().includes('/pkg/')) requested.push(new URL(r.url()).pathname); });
  const warnings = [];
  page.on('console', (m) => { if (/preload/i.test(m.text())) warnings.push(m.text()); });
  await page.goto(new URL(href, server.url).href);
  await waitForHydration(page);
  await page.getByRole('tab', { name: 'Inspector' }).click();
  await page.locator('.inspector-entry').first().waitFor();
  const preloads = await page.locator('head link[rel="preload"], head link[rel="modulepreload"]').evaluateAll(
    (links) => links.map((link) => new URL(link.href).pathname),
  );
  assert.ok(preloads.some((path) => path.startsWith('/pkg/split_')), `the head preloads the chunk: ${preloads}`);
  assert.ok(preloads.some((path) => path.startsWith('/pkg/__wasm_split.')), `and its loader: ${preloads}`);
  const chunks = requested.filter((path) => path.startsWith('/pkg/split_'));
  assert.equal(chunks.length, 1, `the chunk is fetched once (the preload is the fetch the loader uses): ${requested}`);
  await page.waitForTimeout(3_500); // Chromium warns of an unused preload 3 s after load.
  assert.deepEqual(warnings, []);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the trace page is a lazily loaded wasm chunk: a chat never fetches it, the trace page does', async () => {
  const { page, context, problems } = await openPage(browser);
  const wasm = [];
  page.on('response', (r) => { if (r.url().endsWith('.wasm')) wasm.push(new URL(r.url()).pathname); });
  await chat(page, 'scenario:work', 'Find the TODO again');
  const assistant = page.locator('.message.assistant[data-status="complete"]');
  await waitForRendered(assistant, { timeout: 15_000 });
  assert.deepEqual(wasm.map((path) => path.split('.')[0]), ['/pkg/glassbox'], 'the chat loads the main bundle only');

  // Opened directly (server-rendered, then hydrated once the chunk is in), the page works.
  const href = await assistant.getByRole('link', { name: 'View trace' }).getAttribute('href');
  wasm.length = 0;
  await page.goto(new URL(href, server.url).href);
  await waitForHydration(page);
  await page.getByRole('tab', { name: 'Inspector' }).click();
  await page.locator('.inspector-entry').first().waitFor();
  const chunk = wasm.find((path) => path.startsWith('/pkg/split_'));
  assert.ok(chunk, `the trace page loaded its chunk: ${wasm}`);

  // The chunk is content-hashed, precompressed and cached like the main bundle.
  const response = await fetch(new URL(chunk, server.url), { headers: { 'accept-encoding': 'br' } });
  assert.equal(response.headers.get('content-encoding'), 'br');
  assert.equal(response.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  assert.deepEqual(problems, []);
  await context.close();
});

// Issue 36's trace page of a long run: the server's page lays out the blocks near the top in its
// first frames and sends the later ones `hidden="until-found"`; the page draws each as the reader
// nears it and, in the end, all of them. Replay rebuilds the blocks in the browser, none waiting.
test('a long stored answer draws its later blocks as the reader scrolls to them, and all in the end', async () => {
  const traceId = (await storedRun(server, 'scenario:many')).traceId;
  const blocks = '.replay > .segment, .replay > .message-text';
  const drawn = (page, at) => page.locator(blocks).evaluateAll((all, index) => {
    const block = all.at(index);
    return block.getAttribute('hidden') === null && block.firstElementChild.checkVisibility();
  }, at);
  // The server's page as it arrives, before its script runs (the script and wasm held back, the
  // style sheet not).
  const { page: before, context } = await openPage(browser, { viewport: { width: 1280, height: 720 } });
  await before.route(/\/pkg\/.*\.(js|wasm)$/, (route) => route.abort('aborted'));
  await before.goto(`${server.url}/t/${traceId}`);
  const count = await before.locator(blocks).count();
  assert.ok(count > 40, `${count} blocks`);
  assert.equal(await drawn(before, 0), true, 'the first block is drawn');
  assert.equal(await before.locator(`${blocks}`).last().getAttribute('hidden'), 'until-found', 'the last block waits');
  await context.close();

  const { page, context: opened, problems } = await openPage(browser, { viewport: { width: 1280, height: 720 } });
  await page.goto(`${server.url}/t/${traceId}`);
  await waitForHydration(page);
  // Scrolled to while most still wait (the background drawing goes from the top, 25 a frame,
  // a second after hydration), the last block is drawn.
  await page.locator(blocks).last().evaluate((block) => block.scrollIntoView());
  await page.waitForFunction((selector) => {
    const last = [...document.querySelectorAll(selector)].at(-1);
    return last.getAttribute('hidden') === null && last.firstElementChild.checkVisibility();
  }, blocks);
  // In the end nothing waits, and the blocks hydrated: the last tool call opens on a click.
  await page.waitForFunction(() => !document.querySelector('.replay [hidden="until-found"]'));
  await page.locator('.replay > .tool-call').last().locator('.segment-header').click();
  await page.waitForFunction(() => [...document.querySelectorAll('.replay > .tool-call')].at(-1).classList.contains('open'));
  // A replay builds the blocks again in the browser (it starts from none): the same count.
  await page.evaluate((selector) => {
    window.__fewest = Infinity;
    new MutationObserver(() => {
      window.__fewest = Math.min(window.__fewest, document.querySelectorAll(selector).length);
    }).observe(document.querySelector('.message.replay'), { childList: true });
  }, blocks);
  await page.getByRole('button', { name: /Replay/ }).click();
  await page.waitForFunction((selector) => window.__fewest < 10
    && document.querySelector('.message.replay[data-replay="done"]')
    && document.querySelectorAll(selector).length > 40, blocks, { timeout: 60_000 });
  assert.equal(await page.locator(blocks).count(), count);
  assert.deepEqual(problems, []);
  await opened.close();
});
