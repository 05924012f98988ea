// Pathological markdown (issue 30, item 1): nesting thousands of levels deep, a 100k-item list,
// huge tables, very long lines. Before the nesting bound, `>` x 2,000 in an answer gave "memory
// access out of bounds" from the wasm and the answer was not drawn. Every document of
// end2end/corpus/hostile.json is stored as an answer and as reasoning; each conversation is
// reloaded in verbose mode (everything drawn) and must hydrate with no error, and one is drawn
// live as it streams.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, openChat, send, waitForRendered } from '../support/browser.mjs';

const corpusFile = join(dirname(fileURLToPath(import.meta.url)), '..', 'corpus', 'hostile.json');
const corpus = JSON.parse(readFileSync(corpusFile, 'utf8')).documents.map(({ name, parts }) => ({
  name,
  text: parts.map(([piece, count]) => piece.repeat(count)).join(''),
}));

let server;
let browser;
const stored = [];

function scenarios() {
  const all = {};
  for (const { name, text } of corpus) {
    all[`hostile_${name}`] = { delta_chars: 8192, delta_interval_ms: 0, steps: [{ reasoning: [text] }, { text }] };
  }
  const quotes = corpus.find((d) => d.name === 'quoted-lists').text;
  all.hostile_live = { delta_chars: 64, delta_interval_ms: 1, steps: [{ text: quotes }] };
  return all;
}

before(async () => {
  server = await startServer({ scenarios: scenarios() });
  for (const { name } of corpus) {
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ content: `Show ${name}`, model: `scenario:hostile_${name}` }),
    });
    assert.equal(response.status, 201, await response.clone().text());
    const run = await response.json();
    const body = await (await fetch(`${server.url}${run.events_url}`)).text();
    assert.ok(body.includes('"type":"message_final"'), `${name}: the run completed`);
    stored.push({ name, conversationId: run.conversation_id });
  }
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('every hostile document hydrates as a stored answer and reasoning', async () => {
  const { page, context, problems } = await openPage(browser);
  await context.addCookies([{ name: 'glassbox_settings', value: 'mode=verbose', url: server.url }]);
  const failures = [];
  for (const { name, conversationId } of stored) {
    const before = problems.length;
    const html = await (await fetch(`${server.url}/c/${conversationId}`)).text();
    if (!html.includes('</html>')) failures.push(`${name}: the server's page is not whole`);
    await page.goto(`${server.url}/c/${conversationId}`, { timeout: 60_000 });
    await page.waitForSelector('body[data-hydrated="true"], body[data-crashed="true"]', { timeout: 60_000 });
    const crashed = await page.evaluate(() => document.body.dataset.crashed === 'true');
    await page.waitForTimeout(50);
    const drawn = await page.locator('.message.assistant .markdown').count();
    const mine = problems.slice(before);
    if (crashed || mine.length || drawn < 2) {
      failures.push(`${name}: crashed=${crashed} markdown blocks=${drawn}\n  ${mine.join('\n  ')}`);
    }
  }
  assert.deepEqual(failures, []);
  await context.close();
});

test('a hostile answer is drawn live as it streams', async () => {
  const { page, context, problems } = await openChat(browser, server.url, 'scenario:hostile_live');
  await send(page, 'Go deep');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 60_000 });
  assert.equal(await page.evaluate(() => document.body.dataset.crashed === 'true'), false);
  assert.match(await page.locator('.message.assistant .markdown').last().textContent(), /deep/);
  assert.deepEqual(problems, []);
  await context.close();
});
