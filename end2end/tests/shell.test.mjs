// The chat shell: served, hydrated, interactive, and clean in the console.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration, waitForRendered } from '../support/browser.mjs';

let server;
let browser;

before(async () => {
  server = await startServer({ scenarios: { hello: { delta_interval_ms: 0, steps: [{ text: 'Hello from a scenario.' }] } } });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('the bundle is content-hashed, precompressed and cached for a year; pages revalidate', async () => {
  const page = await fetch(server.url);
  assert.equal(page.headers.get('cache-control'), 'private, no-store');
  const html = await page.text();
  const names = [...html.matchAll(/\/pkg\/glassbox\.[\w-]+\.(?:js|wasm|css)/g)].map((m) => m[0]);
  assert.equal(new Set(names.map((n) => n.split('.').pop())).size, 3, `js, wasm and css: ${names}`);
  for (const [encoding, expected] of [['br', 'br'], ['gzip', 'gzip']]) {
    for (const name of new Set(names)) {
      const asset = await fetch(new URL(name, server.url), { headers: { 'accept-encoding': encoding } });
      assert.equal(asset.status, 200, name);
      assert.equal(asset.headers.get('content-encoding'), expected, `${name} as ${encoding}`);
      assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable', name);
      await asset.arrayBuffer();
    }
  }
});

test('the first page is server-rendered with the sidebar, message list and composer', async () => {
  const response = await fetch(server.url);
  assert.equal(response.status, 200);
  const html = await response.text();
  assert.match(html, /<nav[^>]*class="sidebar"/);
  assert.match(html, /No conversations yet/);
  assert.match(html, /<textarea[^>]*aria-label="Message"/);
  assert.match(html, /<button[^>]*disabled[^>]*class="send"|<button[^>]*class="send"[^>]*disabled/);
  assert.match(html, /\/pkg\/glassbox\.[\w-]+\.js/, "the hydration bundle, named after its content");
});

test('the page hydrates: typing enables Send without a reload, and the console stays clean', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.goto(server.url);
  await waitForHydration(page);
  await page.evaluate(() => { window.__sameDocument = true; });

  const send = page.getByRole('button', { name: 'Send' });
  assert.equal(await send.isDisabled(), true, 'Send starts disabled');
  await page.getByLabel('Message').fill('What is in this workspace?');
  await page.waitForFunction(() => !document.querySelector('button.send').disabled);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'no reload happened');

  await page.getByLabel('Message').fill('   ');
  await page.waitForFunction(() => document.querySelector('button.send').disabled);
  assert.deepEqual(problems, []);
  await context.close();
});

test('sending a message starts a run and opens its conversation in the sidebar', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.goto(server.url);
  await waitForHydration(page);
  // The model picker lists the models by name; choose the scripted agent.
  const picker = page.getByLabel('Model');
  assert.equal(await picker.inputValue(), 'demo', 'the demo agent is the default');
  const options = await picker.locator('option').allInnerTexts();
  assert.ok(options.includes('scenario:hello') && options.some((o) => o.startsWith('demo')), options.join());
  await picker.selectOption('scenario:hello');
  await page.getByLabel('Message').fill('Say hello');
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/c\/[0-9a-f-]+$/);
  await page.getByRole('link', { name: 'Say hello' }).waitFor();
  await page.locator('.message.user', { hasText: 'Say hello' }).waitFor();
  await page.locator('.message.assistant', { hasText: 'Hello from a scenario.' }).waitFor();
  assert.equal(await page.getByLabel('Model').inputValue(), 'scenario:hello', 'the conversation keeps its model');
  assert.deepEqual(problems, []);
  await context.close();
});

test('an unknown page answers 404 with a way back', async () => {
  // A browser's navigation gets the page; other clients get the JSON error shape.
  const response = await fetch(`${server.url}/no/such/page`, { headers: { accept: 'text/html' } });
  assert.equal(response.status, 404);
  assert.match(await response.text(), /Page not found/);
  const api = await fetch(`${server.url}/no/such/page`);
  assert.equal(api.status, 404);
  assert.equal((await api.json()).code, 'not_found');
});

test('the app hydrates and streams under its Content-Security-Policy, with no violation', async () => {
  const { page, context, problems } = await openPage(browser);
  const response = await page.goto(server.url);
  const csp = response.headers()['content-security-policy'];
  assert.match(csp, /script-src 'self' 'nonce-[\w-]+' 'wasm-unsafe-eval'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.equal(response.headers()['x-content-type-options'], 'nosniff');
  await waitForHydration(page);
  await page.getByLabel('Message').fill('What is in this workspace?');
  await page.keyboard.press('Enter');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 15_000 });
  assert.deepEqual(problems, [], 'no violation while hydrating and streaming');
  // An inline script without the nonce does not run.
  const ran = await page.evaluate(() => {
    const script = document.createElement('script');
    script.textContent = 'window.__injected = true';
    document.body.append(script);
    return window.__injected === true;
  });
  assert.equal(ran, false, 'an injected inline script was blocked');
  assert.ok(problems.length > 0, 'the blocked script was reported');
  assert.deepEqual(problems.filter((p) => !/Content Security Policy|CSP violation: script-src/.test(p)), []);
  await context.close();
});
