// Accounts (--auth password): two people sign in in their own browsers; each sees only their own
// conversations, and the other's conversation page shows nothing of it. A share link opens one
// trace, live while it runs, to someone with no account, until its owner revokes it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, binaryPath } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration, useModel, send, waitForRendered } from '../support/browser.mjs';

/** What Chromium logs for a page that answers 404. */
const NOT_FOUND = 'console.error: Failed to load resource: the server responded with a status of 404 (Not Found)';

let server;
let browser;

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'glassbox-e2e-'));
  for (const name of ['alice', 'bob']) {
    execFileSync(binaryPath(), ['--data-dir', join(dir, 'data'), 'users', 'add', name], {
      input: `${name}-password\n`,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
  }
  server = await startServer({
    reuse: { dir },
    args: ['--auth', 'password'],
    scenarios: {
      secret: { delta_interval_ms: 0, steps: [{ text: 'Only Alice may read this answer.' }] },
      // About 12 s: the share link is opened while it still runs.
      slow: { delta_chars: 2, delta_interval_ms: 100, steps: [{ text: `${'Shared live, word by word. '.repeat(9)}The end.` }] },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A new browser context that signs in on the page the app sends it to. */
async function signIn(name, path = '/') {
  const session = await openPage(browser);
  const { page } = session;
  await page.goto(new URL(path, server.url).href);
  assert.match(new URL(page.url()).pathname, /^\/login$/, 'sent to the sign-in page');
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Password').fill(`${name}-password`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.pathname === path);
  await waitForHydration(page);
  return session;
}

test('two people each see only their own conversations; signing out ends the session', async () => {
  const alice = await signIn('alice');
  await useModel(alice.page, 'scenario:secret');
  assert.match(await alice.page.locator('.account').innerText(), /alice[\s\S]*Sign out/);
  await send(alice.page, 'Tell me a secret');
  await waitForRendered(alice.page.locator('.message.assistant[data-status="complete"]'));
  await alice.page.waitForURL(/\/c\//);
  const conversation = new URL(alice.page.url()).pathname;
  assert.match(await alice.page.locator('.conversation-list').innerText(), /Tell me a secret/);

  // Bob, signed in elsewhere, opening Alice's conversation: sent there after signing in, and
  // shown nothing of it.
  const bob = await signIn('bob', conversation);
  assert.match(await bob.page.locator('main').innerText(), /does not exist/);
  assert.doesNotMatch(await bob.page.content(), /Only Alice may read|Tell me a secret/);
  assert.match(await bob.page.locator('.sidebar').innerText(), /No conversations yet/);

  await bob.page.getByRole('button', { name: 'Sign out' }).click();
  await bob.page.waitForURL((url) => url.pathname === '/login');
  await bob.page.goto(server.url);
  assert.equal(new URL(bob.page.url()).pathname, '/login', 'signed out: back to the sign-in page');

  // Alice's page still works after a reload.
  await alice.page.reload();
  await waitForHydration(alice.page);
  assert.match(await alice.page.locator('.message.assistant').innerText(), /Only Alice may read this answer/);

  assert.deepEqual(alice.problems, []);
  // Alice's conversation is not Bob's: its page answers 404, which Chromium logs, and nothing else.
  assert.deepEqual(bob.problems, [NOT_FOUND]);
  await alice.context.close();
  await bob.context.close();
});

test('a wrong password shows the form again with the reason', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.goto(`${server.url}/login`);
  await page.getByLabel('Name').fill('alice');
  await page.getByLabel('Password').fill('not-her-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('.login-error').waitFor();
  assert.match(await page.locator('.login-error').innerText(), /wrong name or password/);
  // The 401 of the form post is the answer, not a broken page.
  assert.deepEqual(problems.filter((p) => !/401/.test(p)), []);
  await context.close();
});

test('a share link shows a running trace live to someone without an account, until revoked', async () => {
  const alice = await signIn('alice');
  const started = await alice.page.request.post(`${server.url}/api/chat`, {
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    data: { content: 'Share this', model: 'scenario:slow' },
  });
  assert.equal(started.status(), 201);
  const { trace_id: trace } = await started.json();
  await alice.page.goto(`${server.url}/t/${trace}`);
  await waitForHydration(alice.page);
  await alice.page.locator('.share-panel > summary').click();
  await alice.page.getByRole('button', { name: 'Create a link' }).click();
  const link = await alice.page.locator('.share-url').first().inputValue();
  assert.match(link, new RegExp(`^${server.url}/t/${trace}\\?share=[0-9a-f]{64}$`));

  // Someone without an account follows the run as it happens, then sees it finished.
  const guest = await openPage(browser);
  await guest.page.goto(link);
  await waitForHydration(guest.page);
  assert.match(await guest.page.locator('.shared-note').innerText(), /read only/);
  assert.equal(await guest.page.locator('.share-panel').count(), 0, 'no share controls for a guest');
  assert.equal(await guest.page.getByText('Back to the conversation').count(), 0);
  await guest.page.locator('.live-note').waitFor({ state: 'visible' });
  const answer = guest.page.locator('.message.replay');
  const early = (await answer.innerText()).length;
  await guest.page.waitForFunction(
    (before) => document.querySelector('.message.replay')?.innerText.length > before + 20,
    early,
    { timeout: 15_000 },
  );
  await guest.page.locator('.trace-status.completed').waitFor({ timeout: 30_000 });
  assert.match(await answer.innerText(), /Shared live, word by word\.[\s\S]*The end\./);
  assert.equal(await guest.page.locator('.live-note').isVisible(), false);
  // The replay and the other tabs work for the guest too.
  await guest.page.getByRole('button', { name: 'Instant' }).click();
  await guest.page.getByRole('button', { name: '▶ Replay' }).click();
  await guest.page.locator('.message.replay[data-replay="done"]').waitFor();
  await guest.page.getByRole('tab', { name: 'Inspector' }).click();
  await guest.page.locator('.inspector p').first().waitFor();

  // Revoked: the same link shows nothing of the trace.
  await alice.page.reload();
  await waitForHydration(alice.page);
  await alice.page.locator('.share-panel > summary').click();
  await alice.page.getByRole('button', { name: 'Revoke' }).click();
  await alice.page.locator('.share-url').waitFor({ state: 'detached' });
  await guest.page.reload();
  assert.match(await guest.page.locator('main').innerText(), /does not exist or was revoked/);
  assert.doesNotMatch(await guest.page.content(), /Shared live/);

  assert.deepEqual(alice.problems, []);
  // The revoked link's page answers 404, which Chromium logs, and nothing else went wrong.
  assert.deepEqual(guest.problems, [NOT_FOUND]);
  await alice.context.close();
  await guest.context.close();
});
