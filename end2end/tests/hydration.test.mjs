// The HTML the server renders and the DOM the browser hydrates must agree. Every document in
// end2end/corpus/markdown is stored as an answer (and as reasoning), beside messages of every
// status and tool calls of every status; each conversation is reloaded in each display mode and
// any hydration message, console error or panic fails the test.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration, useModel, send, waitForRendered } from '../support/browser.mjs';

const corpusDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'corpus', 'markdown');
const corpus = readdirSync(corpusDir)
  .filter((name) => name.endsWith('.md') && name !== 'README.md')
  .sort()
  .map((name) => ({ name: name.replace(/\.md$/, ''), text: readFileSync(join(corpusDir, name), 'utf8') }));

const MODES = ['minimal', 'normal', 'verbose'];
const TABLE = '| Path | Line |\n|---|--:|\n| `src/main.rs` | 12 |\n| notes.md | 4 |';

function scenarios() {
  const all = {
    table: { delta_chars: 5, delta_interval_ms: 5, steps: [{ text: `Found these:\n\n${TABLE}\n\nDone.` }] },
    statuses_complete: { delta_interval_ms: 0, steps: [
      { reasoning: ['First part.', 'Second **part**.'] },
      { tool_calls: [
        { name: 'grep_search', args: { query: 'TODO' } },
        { name: 'fail', args: { message: 'the disk is on fire' } },
        { name: 'no_such_tool', args: {} },
        { name: 'sleep', args: { seconds: 0.6 } },
      ] },
      { text: `Answer with a table:\n\n${TABLE}` },
      { usage: { input_tokens: 10, output_tokens: 5 } },
    ] },
    statuses_error: { delta_interval_ms: 0, steps: [
      { tool_calls: [{ name: 'fail', args: { message: 'broken' } }] },
      { text: `Partial table:\n\n${TABLE}` },
      { error: { code: 'model_error', message: 'The model went away.' } },
    ] },
    // Stopped (cancelled) or killed (interrupted) while a tool runs.
    statuses_long: { delta_interval_ms: 0, steps: [
      { reasoning: ['Thinking before the long job.'] },
      { text: `Before the long job:\n\n${TABLE}` },
      { tool_calls: [{ name: 'sleep', args: { seconds: 60 } }, { name: 'grep_search', args: { query: 'TODO' } }] },
      { text: 'never reached' },
    ] },
  };
  for (const { name, text } of corpus) {
    all[`md_${name.replaceAll(/[^A-Za-z0-9_-]/g, '_')}`] = { delta_chars: 4096, delta_interval_ms: 0, steps: [
      { reasoning: [text, 'After the document.'] },
      { tool_calls: [{ name: 'grep_search', args: { query: 'TODO' } }] },
      { text },
    ] };
  }
  return all;
}

let server;
let browser;
/** [{ label, conversationId, assistants }] */
const conversations = [];

async function startRun(model, conversationId) {
  const response = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ content: `Show ${model}`, model, conversation_id: conversationId }),
  });
  assert.equal(response.status, 201, await response.clone().text());
  return response.json();
}

/** Reads a run's stream until it ends; returns the event types. */
async function finish(run) {
  const body = await (await fetch(`${server.url}${run.events_url}`)).text();
  return [...body.matchAll(/"type":"([a-z_]+)"/g)].map((m) => m[1]);
}

/** Resolves once the run's stream has shown an event of `type`. */
async function waitForEvent(run, type) {
  const response = await fetch(`${server.url}${run.events_url}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let seen = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended before ${type}`);
    seen += decoder.decode(value, { stream: true });
    if (seen.includes(`"type":"${type}"`)) break;
  }
  await reader.cancel();
}

before(async () => {
  server = await startServer({ scenarios: scenarios(), workspace: { 'notes.md': 'TODO: write the docs\n' } });
  for (const { name } of corpus) {
    const run = await startRun(`scenario:md_${name.replaceAll(/[^A-Za-z0-9_-]/g, '_')}`);
    assert.ok((await finish(run)).includes('message_final'), name);
    conversations.push({ label: `corpus ${name}`, conversationId: run.conversation_id, assistants: 1 });
  }

  // One conversation with an answer of every status: complete, error, cancelled, interrupted.
  const complete = await startRun('scenario:statuses_complete');
  const id = complete.conversation_id;
  assert.ok((await finish(complete)).includes('message_final'));
  assert.ok((await finish(await startRun('scenario:statuses_error', id))).includes('message_error'));
  const stopped = await startRun('scenario:statuses_long', id);
  await waitForEvent(stopped, 'tool_call_started');
  const cancel = await fetch(`${server.url}/api/runs/${stopped.run_id}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(cancel.status, 200);
  const killed = await startRun('scenario:statuses_long', id);
  await waitForEvent(killed, 'tool_call_started');
  await new Promise((r) => setTimeout(r, 600)); // past the checkpoint window
  await server.kill();
  server = await startServer({ reuse: server });
  conversations.push({ label: 'every status', conversationId: id, assistants: 4 });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Waits for hydration, or for the page to say the wasm panicked. */
async function hydratedOrCrashed(page) {
  await page.waitForSelector('body[data-hydrated="true"], body[data-crashed="true"]', { timeout: 15_000 });
  return page.evaluate(() => document.body.dataset.crashed === 'true');
}

for (const mode of MODES) {
  test(`every stored answer hydrates cleanly in ${mode} mode`, async () => {
    const { page, context, problems } = await openPage(browser);
    await context.addCookies([{ name: 'glassbox_settings', value: `mode=${mode}`, url: server.url }]);
    const failures = [];
    for (const { label, conversationId, assistants } of conversations) {
      const before = problems.length;
      await page.goto(`${server.url}/c/${conversationId}`);
      const crashed = await hydratedOrCrashed(page);
      await page.waitForTimeout(50); // let late hydration warnings reach the console
      const found = await page.locator('.message.assistant').count();
      const mine = problems.slice(before);
      if (crashed || mine.length || found !== assistants) {
        failures.push(`${label}: crashed=${crashed} assistants=${found}/${assistants}\n  ${mine.join('\n  ')}`);
      }
    }
    assert.deepEqual(failures, []);
    await context.close();
  });
}

test('verbose mode arrives expanded from the server, with no flash', async () => {
  const { conversationId } = conversations.find((c) => c.label === 'every status');
  const html = await (await fetch(`${server.url}/c/${conversationId}`, { headers: { cookie: 'glassbox_settings=mode=verbose' } })).text();
  // Every block (menus aside: they open on a click in any mode).
  const blocks = (html) => html.match(/<div[^>]*class="segment (?:tool-call|reasoning)[^"]*"[^>]*>/g) ?? [];
  const open = (tag) => /class="[^"]*\bopen\b/.test(tag);
  assert.ok(blocks(html).length >= 5, `reasoning and tool blocks: ${blocks(html).length}`);
  for (const tag of blocks(html)) assert.ok(open(tag), tag);
  const normal = await (await fetch(`${server.url}/c/${conversationId}`, { headers: { cookie: 'glassbox_settings=mode=normal' } })).text();
  assert.ok(blocks(normal).length >= 5, `reasoning and tool blocks: ${blocks(normal).length}`);
  assert.deepEqual(blocks(normal).filter(open), [], 'normal: stored blocks collapsed');
  // No <details> among the messages: each one that goes in costs Chromium time in proportion to
  // every element already styled (issue 38), and a streaming answer would insert many.
  const messages = html.slice(html.indexOf('<section class="messages'), html.indexOf('</section>', html.indexOf('<section class="messages')));
  assert.match(messages, /class="segment tool-call/, 'the message list and its blocks are in the page');
  assert.equal((messages.match(/<details/g) ?? []).length, 0, 'blocks and menus are buttons and what they show');
});

test('an answer with a table survives a reload: the page stays alive and can send again', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.goto(server.url);
  await waitForHydration(page);
  await useModel(page, 'scenario:table');
  await send(page, 'Where are the TODOs?');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"] table tbody tr').first(), { timeout: 15_000 });
  await page.reload();
  assert.equal(await hydratedOrCrashed(page), false, 'no panic on reload');
  assert.equal(await page.locator('.message.assistant table th').count(), 2);
  await send(page, 'And again?');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]').nth(1), { timeout: 15_000 });
  assert.deepEqual(problems, []);
  await context.close();
});

test('a reloaded conversation and its trace hydrate from the data in the page, asking the server for nothing again', async () => {
  // The server writes each resource's value into the page and the browser reads it back
  // (app/src/json.rs). Were the two to disagree, hydration would quietly fetch it all again.
  const { conversationId } = conversations.find((c) => c.label === 'every status');
  const { page, context, problems } = await openPage(browser);
  const asked = [];
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname;
    if (path.startsWith('/api/fn/')) asked.push(path);
  });
  await page.goto(`${server.url}/c/${conversationId}`);
  await page.reload();
  assert.equal(await hydratedOrCrashed(page), false);
  await page.waitForTimeout(200); // time for a refetch to start, were there one
  assert.equal(await page.locator('.message.assistant').count(), 4);
  assert.ok(await page.locator('.sidebar a[href^="/c/"]').count() > 0, 'the conversation list');
  const href = await page.getByRole('link', { name: 'View trace' }).first().getAttribute('href');
  await page.goto(new URL(href, server.url).href);
  await page.reload();
  assert.equal(await hydratedOrCrashed(page), false);
  await page.waitForTimeout(200);
  assert.equal(await page.locator('.trace-header h1').textContent(), 'Trace');
  assert.deepEqual(asked, []);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a page opened while a run streams hydrates its live view, and Stop works', async () => {
  const run = await startRun('scenario:statuses_long');
  await waitForEvent(run, 'tool_call_started');
  const { page, context, problems } = await openPage(browser);
  await page.goto(`${server.url}/c/${run.conversation_id}`);
  assert.equal(await hydratedOrCrashed(page), false);
  await page.getByRole('button', { name: /Stop/ }).click();
  await waitForRendered(page.locator('.message.assistant[data-status="cancelled"]'), { timeout: 10_000 });
  assert.deepEqual(problems, []);
  await context.close();
});

test('a panic in the wasm shows a visible notice instead of a dead page', async () => {
  const { page, context, problems } = await openPage(browser);
  await context.addInitScript(() => { window.__glassboxTestHooks = {}; });
  await page.goto(server.url);
  await waitForHydration(page);
  // The test hook (frontend/src/lib.rs) panics inside the wasm on purpose.
  await page.evaluate(() => window.dispatchEvent(new CustomEvent('glassbox-test-panic')));
  await page.locator('#crash-notice[role="alert"]', { hasText: 'Something went wrong' }).waitFor();
  assert.ok(problems.some((p) => /panicked/.test(p)), `the panic is logged: ${problems.join('\n')}`);
  await context.close();
});
