// Branches (issue 36): regenerate an answer (with the same model and with another), edit a
// question, and move between the versions with `< n / m >`; each state checked again after a
// reload (the server's render, then hydration) with no console or hydration problem. Two fake
// OpenAI models answer "Answer N by MODEL", N counting the requests, and record what they got.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../support/server.mjs';
import { startFakeOpenAI, providersFile, chunk } from '../support/fake-openai.mjs';
import { launchBrowser, openPage, waitForHydration, useModel, send } from '../support/browser.mjs';

let server;
let browser;
let fake;
const requests = [];

/** Answers "Answer N by MODEL", N counting the requests, and records each request. */
function answerAndRecord(parsed) {
  requests.push(parsed);
  return [chunk({ content: `Answer ${requests.length} by ${parsed.model}` }), chunk({}, 'stop')];
}

before(async () => {
  fake = await startFakeOpenAI({ respond: answerAndRecord });
  const dir = mkdtempSync(join(tmpdir(), 'glassbox-branches-'));
  const providers = providersFile(dir, fake.baseUrl, { writeFileSync, join }, ['m', 'n']);
  // `scenario:slow` streams for about 20 s, unless stopped.
  const slow = { delta_chars: 4, delta_interval_ms: 50, steps: [{ text: 'A slow answer that takes its time. '.repeat(50) }] };
  server = await startServer({ args: ['--providers-file', providers], scenarios: { slow } });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await fake?.close();
});

/** A finished one-turn conversation, made through the API: its id. */
async function conversation(question) {
  const started = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ content: question, model: 'fake/m' }),
  }).then((response) => response.json());
  await fetch(`${server.url}/api/runs/${started.run_id}/events`).then((response) => response.text());
  return started.conversation_id;
}

async function reload(page) {
  await page.reload();
  await waitForHydration(page);
}

const answer = (page) => page.locator('.message.assistant').last();
const question = (page) => page.locator('.message.user').last();

/** Waits until the last answer reads `text` and shows the version `count` (e.g. "2 / 3"). */
async function answerIs(page, text, count) {
  await answer(page).locator('.message-text, .text-segment, p', { hasText: text }).first().waitFor();
  await answer(page).locator('.sibling-count', { hasText: count }).waitFor();
}

test('an answer is regenerated, with another model too, and its versions survive a reload', async () => {
  const id = await conversation('What is two plus two?');
  const { page, context, problems } = await openPage(browser);
  await page.goto(`${server.url}/c/${id}`);
  await waitForHydration(page);
  await answer(page).getByRole('button', { name: 'Regenerate', exact: true }).click();
  await answerIs(page, 'Answer 2 by m', '2 / 2');
  const history = requests[1].messages.filter((m) => m.role !== 'system');
  assert.deepEqual(history.map((m) => m.role), ['user'], 'the old answer is not in the history');
  await answer(page).getByRole('button', { name: 'Previous version' }).click();
  await answerIs(page, 'Answer 1 by m', '1 / 2');
  await reload(page);
  await answerIs(page, 'Answer 1 by m', '1 / 2');
  // Another model for the rerun.
  await answer(page).locator('.regenerate-menu > button').click();
  await answer(page).getByRole('menuitem', { name: 'fake/n' }).click();
  await answerIs(page, 'Answer 3 by n', '3 / 3');
  assert.equal(requests[2].model, 'n');
  await reload(page);
  await answerIs(page, 'Answer 3 by n', '3 / 3');
  assert.ok(await answer(page).locator('a.compare-link').getAttribute('href').then((href) => href.startsWith('/compare/')));
  assert.deepEqual(problems, []);
  await context.close();
});

test('a question is edited and sent again; Esc cancels; both versions stay reachable after a reload', async () => {
  const id = await conversation('What is one plus one?');
  const asked = requests.length;
  const { page, context, problems } = await openPage(browser);
  await page.goto(`${server.url}/c/${id}`);
  await waitForHydration(page);
  await question(page).getByRole('button', { name: 'Edit' }).click();
  await page.getByLabel('Edit the question').fill('never sent');
  await page.getByLabel('Edit the question').press('Escape');
  assert.equal(await page.getByLabel('Edit the question').count(), 0);
  assert.equal(await question(page).locator('.message-text').innerText(), 'What is one plus one?');
  await question(page).getByRole('button', { name: 'Edit' }).click();
  await page.getByLabel('Edit the question').fill('What is three plus three?');
  await page.getByRole('button', { name: 'Send', exact: true }).first().click();
  await question(page).locator('.message-text', { hasText: 'What is three plus three?' }).waitFor();
  await answer(page).locator('.message-footer').waitFor();
  await question(page).locator('.sibling-count', { hasText: '2 / 2' }).waitFor();
  const history = requests[asked].messages.filter((m) => m.role !== 'system');
  assert.deepEqual(history.map((m) => m.content), ['What is three plus three?']);
  await reload(page);
  await question(page).locator('.sibling-count', { hasText: '2 / 2' }).waitFor();
  await question(page).getByRole('button', { name: 'Previous version' }).click();
  await question(page).locator('.message-text', { hasText: 'What is one plus one?' }).waitFor();
  await answer(page).locator('p, .message-text, .text-segment', { hasText: `Answer ${asked} by m` }).first().waitFor();
  await reload(page);
  await question(page).locator('.sibling-count', { hasText: '1 / 2' }).waitFor();
  assert.equal(await question(page).locator('.message-text').innerText(), 'What is one plus one?');
  assert.deepEqual(problems, []);
  await context.close();
});

test('while a run goes the earlier Edit and Regenerate hide, and they come back when it ends', async () => {
  const id = await conversation('What is five plus five?');
  const { page, context, problems } = await openPage(browser);
  await useModel(page, 'scenario:slow');
  await page.goto(`${server.url}/c/${id}`);
  await waitForHydration(page);
  const edit = page.locator('.message.user').first().getByRole('button', { name: 'Edit' });
  const regenerate = page.locator('.message.assistant').first().getByRole('button', { name: 'Regenerate', exact: true });
  const menu = page.locator('.message.assistant').first().locator('.regenerate-menu > button');
  for (const control of [edit, regenerate, menu]) await control.waitFor({ state: 'visible' });
  await send(page, 'And now something long');
  await page.getByRole('button', { name: /Stop/ }).waitFor();
  for (const control of [edit, regenerate, menu]) await control.waitFor({ state: 'hidden' });
  await page.getByRole('button', { name: /Stop/ }).click();
  await page.locator('.message.assistant').last().locator('.message-footer').waitFor();
  for (const control of [edit, regenerate, menu]) await control.waitFor({ state: 'visible' });
  assert.deepEqual(problems, []);
  await context.close();
});

test('a search hit on another branch switches the conversation to it', async () => {
  const first = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ content: 'Tell me about zebras', model: 'fake/m' }),
  }).then((response) => response.json());
  await fetch(`${server.url}/api/runs/${first.run_id}/events`).then((response) => response.text());
  const edited = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ conversation_id: first.conversation_id, edit: first.user_message_id, content: 'Tell me about okapis' }),
  }).then((response) => response.json());
  await fetch(`${server.url}/api/runs/${edited.run_id}/events`).then((response) => response.text());
  const back = await fetch(`${server.url}/api/conversations/${first.conversation_id}/branch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message_id: first.user_message_id }),
  });
  assert.equal(back.status, 200);

  const { page, context, problems } = await openPage(browser);
  await page.goto(`${server.url}/`);
  await waitForHydration(page);
  await page.locator('#search-input').fill('okapis');
  const hit = page.locator('#sidebar .search-hit[data-kind="question"]');
  await hit.waitFor();
  await hit.click();
  await page.waitForURL((url) => url.searchParams.get('m') === edited.user_message_id);
  await page.locator(`article[data-message-id="${edited.user_message_id}"]`).waitFor();
  await question(page).locator('.sibling-count', { hasText: '2 / 2' }).waitFor();
  await reload(page);
  assert.equal(await question(page).locator('.message-text').innerText(), 'Tell me about okapis');
  assert.deepEqual(problems, []);
  await context.close();
});
