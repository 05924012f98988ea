// Managing conversations (issue 35): rename inline in the sidebar and from the header, archive and
// unarchive, delete after a confirmation (refused, with the server's reason, while a run goes),
// delete all from the settings. Each action is checked
// again after a reload (the server's render, then hydration) with no console or hydration problem.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration } from '../support/browser.mjs';

let server;
let browser;

before(async () => {
  server = await startServer({
    scenarios: {
      quick: { delta_interval_ms: 0, steps: [{ text: 'a quick answer' }] },
      slow: { delta_interval_ms: 0, steps: [{ text: 'started' }, { pause_ms: 60000 }, { text: 'never' }] },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A finished conversation, made through the API: its id. */
async function conversation(question) {
  const started = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ content: question, model: 'scenario:quick' }),
  }).then((response) => response.json());
  await fetch(`${server.url}/api/runs/${started.run_id}/events`).then((response) => response.text());
  return started.conversation_id;
}

async function open(path) {
  const session = await openPage(browser);
  await session.page.goto(`${server.url}${path}`);
  await waitForHydration(session.page);
  return session;
}

async function reload(page) {
  await page.reload();
  await waitForHydration(page);
}

const item = (page, title) => page.locator('#sidebar .conversation-item', { hasText: title });

async function menu(page, title, action) {
  await item(page, title).hover();
  await item(page, title).locator('.item-menu > summary').click();
  await item(page, title).getByRole('menuitem', { name: action }).click();
}

test('a conversation is renamed inline in the sidebar, and the name holds after a reload', async () => {
  const id = await conversation('first question to rename');
  const { page, context, problems } = await open(`/c/${id}`);
  await menu(page, 'first question to rename', 'Rename');
  const field = page.locator('#sidebar .rename-input');
  await field.fill('<b>Renamed</b> in the sidebar');
  await field.press('Enter');
  await item(page, '<b>Renamed</b> in the sidebar').waitFor();
  await page.locator('.conversation-title-text', { hasText: '<b>Renamed</b> in the sidebar' }).waitFor();
  await reload(page);
  assert.equal(await item(page, '<b>Renamed</b> in the sidebar').locator('a').innerText(), '<b>Renamed</b> in the sidebar');
  assert.equal(await page.locator('#sidebar b').count(), 0, 'the title is text, not markup');
  // Escape cancels.
  await menu(page, '<b>Renamed</b>', 'Rename');
  await page.locator('#sidebar .rename-input').fill('never saved');
  await page.locator('#sidebar .rename-input').press('Escape');
  assert.equal(await item(page, 'never saved').count(), 0);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the open conversation is renamed from its header', async () => {
  const id = await conversation('a header question');
  const { page, context, problems } = await open(`/c/${id}`);
  await page.locator('.conversation-header .title-rename').click();
  await page.locator('.conversation-header .rename-input').fill('Named in the header');
  await page.locator('.conversation-header .rename-input').press('Enter');
  await page.locator('.conversation-title-text', { hasText: 'Named in the header' }).waitFor();
  await item(page, 'Named in the header').waitFor();
  await reload(page);
  assert.equal(await page.locator('.conversation-title-text').innerText(), 'Named in the header');
  assert.deepEqual(problems, []);
  await context.close();
});

test('a conversation is archived and unarchived', async () => {
  await conversation('to the archive');
  const { page, context, problems } = await open('/');
  await menu(page, 'to the archive', 'Archive');
  await item(page, 'to the archive').waitFor({ state: 'detached' });
  await reload(page);
  assert.equal(await page.locator('#sidebar .conversation-list > .conversation-item', { hasText: 'to the archive' }).count(), 0);
  await page.locator('.archived-list > summary').click();
  const archived = page.locator('.archived-list .conversation-item', { hasText: 'to the archive' });
  await archived.waitFor();
  await archived.hover();
  await archived.locator('.item-menu > summary').click();
  await archived.getByRole('menuitem', { name: 'Unarchive' }).click();
  await archived.waitFor({ state: 'detached' });
  await reload(page);
  await item(page, 'to the archive').waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});

test('a conversation is deleted after a confirmation; the open one goes back to the start', async () => {
  const id = await conversation('delete me please');
  const { page, context, problems } = await open(`/c/${id}`);
  await menu(page, 'delete me please', 'Delete');
  const confirm = item(page, 'delete me please').getByRole('alertdialog');
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  await reload(page);
  await item(page, 'delete me please').waitFor();

  await menu(page, 'delete me please', 'Delete');
  await item(page, 'delete me please').getByRole('alertdialog').getByRole('button', { name: 'Delete' }).click();
  await page.waitForURL(`${server.url}/`);
  await item(page, 'delete me please').waitFor({ state: 'detached' });
  await reload(page);
  assert.equal(await item(page, 'delete me please').count(), 0);
  const gone = await fetch(`${server.url}/api/conversations/${id}`);
  assert.equal(gone.status, 404);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a conversation whose run is going is not deleted: the server\'s reason shows, and it stays', async () => {
  const started = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ content: 'still running here', model: 'scenario:slow' }),
  }).then((response) => response.json());
  const { page, context, problems } = await open('/');
  await menu(page, 'still running here', 'Delete');
  await item(page, 'still running here').getByRole('alertdialog').getByRole('button', { name: 'Delete' }).click();
  const refused = item(page, 'still running here').locator('.item-error');
  await refused.waitFor();
  assert.match(await refused.innerText(), /Could not delete: .*(running|going|Stop)/i);
  await reload(page);
  await item(page, 'still running here').waitFor();
  const kept = await fetch(`${server.url}/api/conversations/${started.conversation_id}`);
  assert.equal(kept.status, 200);
  await fetch(`${server.url}/api/runs/${started.run_id}/cancel`, { method: 'POST' });
  // The refusal is the expected 409; only it may show as a failed request in the console.
  assert.deepEqual(problems.filter((problem) => !/409/.test(problem)), []);
  await context.close();
});

test('every conversation is deleted from the settings', async () => {
  await conversation('one of all');
  const { page, context, problems } = await open('/');
  await page.getByRole('button', { name: 'Settings' }).click();
  await page.locator('.delete-all-start').click();
  await page.locator('.delete-all-yes').click();
  await page.waitForURL(`${server.url}/`);
  await waitForHydration(page);
  await page.getByText('No conversations yet.').waitFor();
  const list = await fetch(`${server.url}/api/conversations`).then((response) => response.json());
  assert.deepEqual(list, []);
  assert.deepEqual(problems, []);
  await context.close();
});
