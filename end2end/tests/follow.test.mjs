// The chat follows every answer: a follow-up question in a conversation that already has a tall
// answer streams in view, on desktop and phone, after a reload in the middle of it too; the reader
// who scrolls up is left alone and gets a way back to the end; only the message list scrolls.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, waitForHydration, useModel, send, waitForRendered } from '../support/browser.mjs';

// A tall answer (about 1,500 px at 1280 x 720) and a slow one that outgrows the screen.
const TALL = Array.from({ length: 40 }, (_, i) => `Paragraph ${i + 1} of a tall answer that was given before.`);
const SLOW = Array.from({ length: 30 }, (_, i) => `Line ${i + 1} of the follow-up answer, streamed slowly.`);
const PHONE = { viewport: { width: 390, height: 760 }, isMobile: true, hasTouch: true };

let server;
let browser;

before(async () => {
  server = await startServer({
    scenarios: {
      tall: { delta_interval_ms: 0, steps: [{ text: TALL.join('\n\n') }] },
      slow: { delta_chars: 8, delta_interval_ms: 20, steps: [
        { tool_calls: [{ name: 'sleep', args: { seconds: 0.2 } }] },
        { text: SLOW.join('\n\n') },
      ] },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A conversation of `turns` questions with tall answers, made through the API. */
async function tallConversation(turns) {
  let conversationId = null;
  for (let turn = 0; turn < turns; turn += 1) {
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: `Question ${turn}`, model: 'scenario:tall', conversation_id: conversationId }),
    });
    const body = await response.text();
    conversationId ??= /"conversation_id":"([^"]+)"/.exec(body)?.[1];
  }
  return conversationId;
}

async function openConversation(id, options = {}) {
  const session = await openPage(browser, options);
  await session.page.goto(`${server.url}/c/${id}`);
  await waitForHydration(session.page);
  await useModel(session.page, 'scenario:slow');
  return session;
}

/** How far the list's end is below what it shows, and whether the document itself scrolls. */
function measure(page) {
  return page.evaluate(() => {
    const list = document.querySelector('section.messages');
    const root = document.documentElement;
    return {
      gap: list.scrollHeight - list.scrollTop - list.clientHeight,
      scrollTop: list.scrollTop,
      pageTall: root.scrollHeight - root.clientHeight,
      streaming: document.querySelector('article.message.assistant[data-status="streaming"]') !== null,
    };
  });
}

/**
 * Samples the list every 40 ms until the last answer completes: the largest gap below the view
 * while it streamed, and whether the document ever became taller than the screen.
 */
async function followUntilComplete(page, count) {
  const worst = { gap: 0, pageTall: 0, samples: 0 };
  const done = page.locator('article.message.assistant[data-status="complete"]').nth(count - 1);
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    const now = await measure(page);
    if (now.streaming) {
      worst.gap = Math.max(worst.gap, now.gap);
      worst.samples += 1;
    }
    worst.pageTall = Math.max(worst.pageTall, now.pageTall);
    if (!now.streaming && (await done.count())) break;
    await page.waitForTimeout(40);
  }
  await waitForRendered(done, { timeout: 1_000 });
  return worst;
}

async function lastLineInView(page) {
  return page.evaluate(() => {
    const list = document.querySelector('section.messages').getBoundingClientRect();
    const lines = document.querySelectorAll('article.message.assistant:last-of-type .markdown p');
    const last = lines[lines.length - 1]?.getBoundingClientRect();
    return Boolean(last) && last.bottom <= list.bottom + 1 && last.top >= list.top;
  });
}

for (const [name, options] of [['desktop', {}], ['phone', PHONE]]) {
  test(`a follow-up question in a conversation with a tall answer streams in view (${name})`, async () => {
    const id = await tallConversation(3);
    const { page, context, problems } = await openConversation(id, options);
    const opened = await measure(page);
    assert.ok(opened.gap <= 2, `the conversation opens at its end (gap ${opened.gap})`);

    await send(page, 'A follow-up question');
    await page.locator('article.message.assistant[data-status="streaming"]').waitFor();
    const worst = await followUntilComplete(page, 4);
    assert.ok(worst.samples > 5, `sampled while it streamed (${worst.samples})`);
    assert.ok(worst.gap <= 80, `the answer streamed in view (largest gap below the view: ${worst.gap} px)`);
    assert.ok(await lastLineInView(page), 'its last line is on screen at the end');
    assert.equal(await page.locator('.jump-to-end').count(), 0, 'no "jump to the end": the reader is there');
    assert.equal(opened.pageTall, 0, 'the page itself does not scroll at open');
    assert.equal(worst.pageTall, 0, 'the page itself never scrolled');
    // An answer's open export menu reaches past it (its message is drawn in full meanwhile).
    const answer = page.locator('article.message.assistant').nth(2);
    await answer.locator('.export-menu > button').click();
    await answer.locator('.export-menu [role="menuitem"]').first().waitFor();
    await page.waitForFunction((el) => el.classList.contains('menu-open'), await answer.elementHandle(), { timeout: 2_000 });
    await answer.locator('.export-menu > button').click();
    await page.waitForFunction((el) => !el.classList.contains('menu-open'), await answer.elementHandle());
    assert.deepEqual(problems, []);
    await context.close();
  });
}

test('a reload in the middle of a follow-up answer opens at its end and follows it', async () => {
  const id = await tallConversation(2);
  const { page, context, problems } = await openConversation(id);
  await send(page, 'A follow-up question');
  await page.locator('article.message.assistant .markdown p', { hasText: 'Line 3 ' }).waitFor();
  await page.reload();
  await waitForHydration(page);
  assert.equal(await page.locator('article.message.assistant[data-status="streaming"]').count(), 1, 'still streaming');
  const worst = await followUntilComplete(page, 3);
  assert.ok(worst.gap <= 80, `the answer streamed in view after the reload (largest gap: ${worst.gap} px)`);
  assert.ok(await lastLineInView(page), 'its last line is on screen at the end');
  assert.equal(worst.pageTall, 0, 'the page itself never scrolled');
  assert.deepEqual(problems, []);
  await context.close();
});

test('a reader who scrolls up while an answer streams is left there, and can jump back to the end', async () => {
  const id = await tallConversation(2);
  const { page, context, problems } = await openConversation(id);
  await send(page, 'A follow-up question');
  await page.locator('article.message.assistant .markdown p', { hasText: 'Line 2 ' }).waitFor();
  const list = await page.locator('section.messages').boundingBox();
  await page.mouse.move(list.x + list.width / 2, list.y + list.height / 2);
  await page.mouse.wheel(0, -900);
  await page.locator('.jump-to-end').waitFor({ timeout: 2_000 });
  await page.waitForTimeout(300);
  const left = await measure(page);
  await page.locator('article.message.assistant .markdown p', { hasText: 'Line 12 ' }).waitFor();
  const later = await measure(page);
  assert.ok(Math.abs(later.scrollTop - left.scrollTop) <= 2, `the reader stays where they scrolled (${left.scrollTop} then ${later.scrollTop})`);
  assert.ok(later.gap > 400, `the answer goes on below the view (${later.gap} px)`);

  await page.locator('.jump-to-end').click();
  const worst = await followUntilComplete(page, 3);
  assert.ok(worst.gap <= 80, `after "jump to the end" the answer streams in view again (largest gap: ${worst.gap} px)`);
  assert.ok(await lastLineInView(page), 'its last line is on screen at the end');
  assert.equal(await page.locator('.jump-to-end').count(), 0, 'the control goes once the reader is at the end');
  assert.deepEqual(problems, []);
  await context.close();
});

test('a reader who scrolls to the top just as an earlier page goes in stays at the top', async () => {
  const id = await tallConversation(20);
  const session = await openPage(browser);
  const { page, context, problems } = session;
  // The page's animation frames can be held: the list keeps the reader's place over the three
  // frames after a page goes in, and the reader's scroll has to land inside them.
  await context.addInitScript(() => {
    const native = window.requestAnimationFrame.bind(window);
    window.__held = null;
    window.requestAnimationFrame = (callback) => {
      if (window.__held) {
        window.__held.push(callback);
        return 0;
      }
      return native(callback);
    };
    window.__releaseFrames = () => {
      const held = window.__held ?? [];
      window.__held = null;
      for (const callback of held) native(callback);
    };
  });
  // Earlier pages arrive when the test lets them.
  const waiting = [];
  await page.route('**/api/fn/conversation**', (route) => { waiting.push(route); });
  await page.goto(`${server.url}/c/${id}`);
  await waitForHydration(page);
  const count = () => page.locator('article.message').count();
  const top = () => page.locator('section.messages').evaluate((list) => list.scrollTop);
  const shown = await count();
  // The reader reaches the top: the page before is asked for.
  await page.locator('section.messages').evaluate((list) => { list.scrollTop = 0; });
  for (let tries = 0; tries < 100 && waiting.length === 0; tries += 1) await page.waitForTimeout(50);
  assert.equal(waiting.length, 1, 'at the top, the page before is asked for');

  await page.evaluate(() => { window.__held = []; });
  await waiting.shift().continue();
  await page.waitForFunction((n) => document.querySelectorAll('article.message').length > n, shown, { polling: 20 });
  assert.ok((await page.evaluate(() => window.__held.length)) > 0, 'keeping the place waits for the next frame');
  // The page went in; before the frames that keep the place run, the reader scrolls down a little
  // into it and back to the top.
  const list = await page.locator('section.messages').boundingBox();
  await page.mouse.move(list.x + list.width / 2, list.y + list.height / 2);
  await page.mouse.wheel(0, 1500);
  await page.waitForFunction(() => document.querySelector('section.messages').scrollTop > 0, null, { polling: 20 });
  let wheels = 0;
  do {
    await page.mouse.wheel(0, -20000);
    await page.waitForTimeout(50);
    wheels += 1;
  } while (wheels < 20 && (await top()) > 0);
  assert.equal(await top(), 0, 'the reader reached the top');
  await page.evaluate(() => window.__releaseFrames());
  await page.waitForTimeout(300);
  assert.equal(await top(), 0, 'the reader\'s scroll is not undone');
  for (const route of waiting) await route.continue();
  await page.unroute('**/api/fn/conversation**');
  assert.deepEqual(problems, []);
  await context.close();
});
