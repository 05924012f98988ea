// Search (issue 35): `/` focuses the sidebar's search box (not while typing in a field), a word
// finds a tool's output with the match marked, and the hit opens its conversation with that tool
// call expanded and in view, again after a reload (the server's render, then hydration), with no
// console or hydration problem; typing asks once the keys pause; a hit in an older page (not
// loaded yet) loads the pages down to it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration } from '../support/browser.mjs';

let server;
let browser;

const filler = 'A paragraph that only fills the page so that the first answer scrolls away. '.repeat(6);

before(async () => {
  server = await startServer({
    workspace: { 'notes/cargo.txt': 'the zeppelin manifest lists 42 crates\n' },
    scenarios: {
      target: {
        delta_interval_ms: 0,
        steps: [
          { reasoning: ['looking for the manifest'] },
          { tool_calls: [{ name: 'read_file', args: { path: 'notes/cargo.txt' } }] },
          { text: 'Found the manifest.' },
        ],
      },
      short: { delta_interval_ms: 0, steps: [{ text: 'Noted.' }] },
      long: { delta_interval_ms: 0, delta_chars: 4000, steps: [{ text: `${filler}\n\n`.repeat(30) }] },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A finished run, through the API: the `POST /api/chat` answer. */
async function run(question, model, conversationId) {
  const started = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ content: question, model, conversation_id: conversationId }),
  }).then((response) => response.json());
  await fetch(`${server.url}/api/runs/${started.run_id}/events`).then((response) => response.text());
  return started;
}

/** Whether `selector`'s element is inside the visible part of the message list, within 5 s. */
async function inView(page, selector) {
  for (let i = 0; i < 50; i += 1) {
    const visible = await page.evaluate((selector) => {
      const element = document.querySelector(selector);
      const list = document.querySelector('section.messages');
      if (!element || !list) return false;
      const [a, b] = [element.getBoundingClientRect(), list.getBoundingClientRect()];
      return a.top < b.bottom && a.bottom > b.top;
    }, selector);
    if (visible) return true;
    await page.waitForTimeout(100);
  }
  return false;
}

test('/ focuses the search box, a word finds a tool output, and its hit opens the call in view', async () => {
  const first = await run('what is in the notes', 'scenario:target');
  await run('and now something long', 'scenario:long', first.conversation_id);
  await run('more of it', 'scenario:long', first.conversation_id);

  const { page, context, problems } = await openPage(browser);
  await page.goto(`${server.url}/`);
  await waitForHydration(page);

  // `/` typed into the composer is text; elsewhere it focuses the search box.
  const composer = page.locator('textarea').first();
  await composer.click();
  await page.keyboard.type('a/b');
  assert.equal(await composer.inputValue(), 'a/b');
  await composer.fill('');
  await page.evaluate(() => document.activeElement?.blur());
  await page.keyboard.press('/');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'search-input');
  // Typing asks once the keys pause, not once per key.
  const asked = [];
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/api/search') asked.push(request.url());
  });
  await page.keyboard.type('Zeppelin');

  const hit = page.locator('#sidebar .search-hit[data-kind="tool"]');
  await hit.waitFor();
  assert.equal(await page.locator('#sidebar .search-hit').count(), 1);
  assert.equal((await hit.locator('mark').innerText()).toLowerCase(), 'zeppelin');
  assert.ok(asked.length <= 2, `one search for the word typed, not one per key: ${asked.join(' ')}`);
  assert.match(await hit.innerText(), /tool read_file/);
  await hit.click();

  await page.waitForURL((url) => url.pathname === `/c/${first.conversation_id}` && url.searchParams.get('m') === first.message_id);
  const step = new URL(page.url()).searchParams.get('step');
  assert.ok(step, 'the hit names its step');
  const call = `div[data-call-id="${step}"]`;
  await page.locator(`${call}.open`).waitFor();
  assert.ok(await inView(page, call), 'the tool call is in view');
  const [scrolled, tall] = await page.evaluate(() => {
    const list = document.querySelector('section.messages');
    return [list.scrollTop, list.scrollHeight > 2 * list.clientHeight];
  });
  assert.ok(tall, 'the conversation is taller than the list, so the call had to be scrolled to');
  assert.ok(scrolled < 2000, `the list is near its start (scrollTop ${scrolled}), not at its end`);
  await page.locator(call, { hasText: 'zeppelin manifest' }).waitFor();

  // After a reload: the server's render, hydrated, opens it again.
  await page.reload();
  await waitForHydration(page);
  await page.locator(`${call}.open`).waitFor();
  assert.ok(await inView(page, call), 'the tool call is in view after a reload');
  assert.deepEqual(problems, []);
  await context.close();
});

test('a search that finds nothing says so, and a bad query shows the server\'s message', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.goto(`${server.url}/`);
  await waitForHydration(page);
  await page.locator('#search-input').fill('nothingmatchesthisword');
  await page.locator('#sidebar .search-none').waitFor();
  await page.locator('#search-input').fill('* ( )');
  await page.locator('#sidebar .search-error').waitFor();
  // The error is the expected 422; only it may show as a failed request in the console.
  assert.deepEqual(problems.filter((problem) => !/422/.test(problem)), []);
  await context.close();
});

test('a hit in a page not loaded yet loads the pages down to it and shows it', async () => {
  const first = await run('where did the quokka go', 'scenario:short');
  for (let turn = 0; turn < 14; turn += 1) {
    await run(`follow-up number ${turn}`, 'scenario:short', first.conversation_id);
  }
  const { page, context, problems } = await openPage(browser);
  await page.goto(`${server.url}/`);
  await waitForHydration(page);
  await page.locator('#search-input').fill('quokka');
  const hit = page.locator('#sidebar .search-hit[data-kind="question"]');
  await hit.waitFor();
  await hit.click();
  await page.waitForURL((url) => url.searchParams.get('m') === first.user_message_id);
  const question = `article[data-message-id="${first.user_message_id}"]`;
  await page.locator(question).waitFor({ timeout: 10000 });
  assert.ok(await inView(page, question), 'the question from an older page is in view');

  // Opened directly (the server's render has only the newest page): the same.
  await page.goto(`${server.url}/c/${first.conversation_id}?m=${first.user_message_id}`);
  await waitForHydration(page);
  await page.locator(question).waitFor({ timeout: 10000 });
  assert.ok(await inView(page, question), 'in view when opened by its link');
  assert.deepEqual(problems, []);
  await context.close();
});
