// Accounts (--auth password): two people sign in in their own browsers; each sees only their own
// conversations, and the other's conversation page shows nothing of it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, binaryPath } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration, useModel, send } from '../support/browser.mjs';

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
    scenarios: { secret: { delta_interval_ms: 0, steps: [{ text: 'Only Alice may read this answer.' }] } },
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
  await alice.page.locator('.message.assistant[data-status="complete"]').waitFor();
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
  assert.deepEqual(bob.problems, []);
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
