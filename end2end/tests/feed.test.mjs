// The one event feed: blocks keep their DOM (and what the person opened) while a run streams, the
// end of a run keeps the DOM it streamed into, and a streaming answer redraws only its last block.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, openChat, waitForHydration, useModel, send, waitForRendered } from '../support/browser.mjs';

const PARAGRAPHS = Array.from({ length: 8 }, (_, i) => `Paragraph ${i + 1} of a long answer, written slowly.`);
const THOUGHT = `First, the part to select: ${'a steady sentence. '.repeat(3).trim()}\n\n${'More thinking streams after it. '.repeat(40).trim()}`;

let server;
let browser;

before(async () => {
  server = await startServer({
    scenarios: {
      ticking: { delta_interval_ms: 0, steps: [
        { tool_calls: [{ name: 'sleep', args: { seconds: 3 } }, { name: 'sleep', args: { seconds: 3 } }] },
        { text: 'Done ticking.' },
      ] },
      quick: { delta_interval_ms: 0, steps: [{ tool_calls: [{ name: 'sleep', args: { seconds: 0 } }] }, { text: 'Quick answer.' }] },
      paragraphs: { delta_chars: 6, delta_interval_ms: 15, steps: [
        { tool_calls: [{ name: 'sleep', args: { seconds: 0.2 } }] },
        { text: PARAGRAPHS.join('\n\n') },
      ] },
      thinking: { delta_chars: 4, delta_interval_ms: 20, steps: [{ reasoning: [THOUGHT] }, { text: 'Thought it through.' }] },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

function newChat(model) {
  return openChat(browser, server.url, model);
}

async function setNumber(page, label, value) {
  if (!(await page.locator('#settings-panel').isVisible())) await page.getByRole('button', { name: 'Settings' }).click();
  const input = page.getByLabel(label);
  await input.fill(String(value));
  await input.dispatchEvent('change');
  await page.getByRole('button', { name: 'Settings' }).click();
}

test('a running tool block keeps what the person chose (closed, Show all) while its output streams', async () => {
  const { page, context, problems } = await newChat('scenario:ticking');
  await setNumber(page, 'Preview output longer than (lines)', 1);
  await send(page, 'Tick twice');
  const blocks = page.locator('div.tool-call.running');
  await page.waitForFunction(() => document.querySelectorAll('div.tool-call.running.open').length === 2);
  const [first, second] = [blocks.nth(0), blocks.nth(1)];

  // The person closes the first block and asks for all of the second one's output.
  await first.locator('.segment-header').click();
  await second.locator('.tool-output', { hasText: 'tick 1' }).waitFor();
  await second.getByRole('button', { name: 'Show all' }).click();
  await page.evaluate(() => { document.querySelector('div.tool-call').__kept = true; });
  await second.locator('.segment-body').evaluate((el) => { el.__kept = true; });

  // More ticks stream into both; the choices hold.
  await second.locator('.tool-output', { hasText: 'tick 3' }).waitFor({ timeout: 5_000 });
  assert.equal(await first.evaluate((el) => el.classList.contains('open')), false, 'the closed block stays closed');
  assert.equal(await first.evaluate((el) => el.__kept), true, 'the same element, not a redrawn one');
  assert.match(await second.locator('.tool-output').innerText(), /tick 1\ntick 2\ntick 3/, 'Show all stays pressed');
  assert.equal(await second.locator('.preview-notice').count(), 0);
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 10_000 });

  // The call ended and its block closed by itself (normal mode): its body stays (what the person
  // did in it with it), hidden, and opening the block shows that same body again.
  const ended = page.locator('div.tool-call').nth(1);
  await page.waitForFunction(() => !document.querySelectorAll('div.tool-call')[1].classList.contains('open'));
  assert.equal(await ended.locator('.segment-body').evaluate((el) => el.__kept, null, { timeout: 2_000 }), true, 'the body stays when the block closes by itself');
  assert.equal(await ended.locator('.segment-body').isVisible(), false, 'hidden while closed');
  await ended.locator('.segment-header').click();
  await ended.locator('.tool-output', { hasText: 'Slept 3 s.' }).waitFor();
  assert.equal(await ended.locator('.segment-body').evaluate((el) => el.__kept), true, 'the same body, not a redrawn one');
  assert.deepEqual(problems, []);
  await context.close();
});

test('the end of a run keeps the DOM it streamed into, and only the last paragraph is redrawn', async () => {
  const { page, context, problems } = await newChat('scenario:paragraphs');
  await send(page, 'Write slowly');
  await page.locator('.message.assistant .markdown p', { hasText: 'Paragraph 2' }).waitFor();
  // Mark the article and the tool block, and watch every paragraph: once a paragraph is no longer
  // the last one, its element must stay until the end.
  await page.evaluate(() => {
    const article = document.querySelector('.message.assistant');
    article.__mark = 'article';
    article.querySelector('div.tool-call').__mark = 'tool';
    window.__kept = [];
    window.__redrawn = [];
    const watch = () => {
      const paragraphs = [...article.querySelectorAll('.message-text .markdown p')];
      paragraphs.slice(0, -1).forEach((p, index) => {
        if (window.__kept[index] && window.__kept[index] !== p) window.__redrawn.push(`paragraph ${index + 1}`);
        window.__kept[index] = p;
      });
    };
    watch();
    new MutationObserver(watch).observe(article, { childList: true, subtree: true, characterData: true });
  });
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 20_000 });
  const marks = await page.evaluate(() => {
    const article = document.querySelector('.message.assistant');
    const paragraphs = [...article.querySelectorAll('.message-text .markdown p')];
    const replaced = window.__kept.flatMap((p, index) => (paragraphs[index] === p ? [] : [`paragraph ${index + 1}`]));
    return [article.__mark, article.querySelector('div.tool-call').__mark, window.__kept.length, window.__redrawn, replaced];
  });
  assert.deepEqual(
    marks,
    ['article', 'tool', PARAGRAPHS.length - 1, [], []],
    'nothing was replaced; no paragraph but the last was redrawn once another followed it',
  );
  assert.equal(await page.locator('.message.assistant .markdown p').count(), PARAGRAPHS.length);
  assert.equal(await page.locator('.message.assistant .message-text').innerText(), PARAGRAPHS.join('\n\n'));
  assert.deepEqual(problems, []);
  await context.close();
});

test('a selection in a streaming reasoning part is still there after 50 more deltas', async () => {
  const { page, context, problems } = await newChat('scenario:thinking');
  await send(page, 'Think it through');
  await page.locator('.reasoning.live .live-part p', { hasText: 'More thinking' }).waitFor();
  // The person selects the part's first paragraph while the part goes on streaming.
  const selected = await page.evaluate(() => {
    const part = document.querySelector('.reasoning.live .live-part');
    const range = document.createRange();
    range.selectNodeContents(part.querySelector('p'));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    window.__lengthAtSelection = part.textContent.length;
    return getSelection().toString();
  });
  assert.match(selected, /^First, the part to select: a steady sentence\./);
  // 50 deltas of 4 characters later (the part is still streaming)...
  await page.waitForFunction(() => document.querySelector('.reasoning.live .live-part').textContent.length >= window.__lengthAtSelection + 200);
  const after = await page.evaluate(() => [getSelection().toString(), getSelection().anchorNode?.isConnected ?? false]);
  assert.equal(await page.locator('.reasoning.live .live-part:not(.complete)').count(), 1, 'measured while the part streams');
  // ...the same text is selected, in the same nodes.
  assert.deepEqual(after, [selected, true]);
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 20_000 });
  assert.deepEqual(problems, []);
  await context.close();
});

test('a long conversation opens on its newest messages and loads the earlier ones on request', async () => {
  let conversationId = null;
  for (let turn = 0; turn < 35; turn += 1) {
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: `Question ${turn}`, model: 'scenario:quick', conversation_id: conversationId }),
    });
    const body = await response.text();
    conversationId ??= /"conversation_id":"([^"]+)"/.exec(body)?.[1];
  }
  const { page, context, problems } = await openPage(browser);
  await page.goto(`${server.url}/c/${conversationId}`);
  await waitForHydration(page);
  // A page is 20 messages (CONVERSATION_PAGE): 35 turns are 70 messages, so three pages are older.
  assert.equal(await page.locator('article.message').count(), 20, 'the newest page');
  // (textContent: the page opens at its end, and off-screen messages are not rendered.)
  assert.equal(await page.locator('article.message.user .message-text').first().textContent(), 'Question 25');
  const messages = page.locator('section.messages');
  // Only the message list scrolls: the page is as tall as the screen, however long the list.
  const pageTall = () => page.evaluate(() => document.documentElement.scrollHeight - window.innerHeight);
  assert.equal(await pageTall(), 0, 'the page does not scroll at open');
  const firstInView = () => page.evaluate(() => {
    const list = document.querySelector('section.messages');
    const top = list.getBoundingClientRect().top;
    return [...list.querySelectorAll('article.message.user')].find((m) => m.getBoundingClientRect().bottom > top)?.querySelector('.message-text')?.textContent;
  });
  // Scrolling up to the top loads the page before, once, above what the reader sees.
  await messages.evaluate((element) => { element.scrollTop = 0; });
  await page.locator('article.message.user', { hasText: 'Question 15' }).waitFor();
  await page.waitForTimeout(500);
  assert.equal(await page.locator('article.message').count(), 40, 'one page, not all of them');
  assert.equal(await firstInView(), 'Question 25', 'the reader stays where they were');
  // The button does the same (for the keyboard).
  await page.getByRole('button', { name: 'Show earlier messages (30 more)' }).click();
  await page.locator('article.message.user', { hasText: 'Question 5' }).waitFor();
  for (let tries = 0; tries < 50 && (await page.locator('.load-earlier').count()); tries += 1) {
    await messages.evaluate((element) => { element.scrollTop = 0; });
    await page.waitForTimeout(100);
  }
  await page.locator('article.message.user', { hasText: 'Question 0' }).waitFor();
  assert.equal(await page.locator('article.message').count(), 70);
  assert.equal(await page.locator('.load-earlier').count(), 0, 'nothing more to load');
  assert.equal(await pageTall(), 0, 'the page does not scroll with every page loaded');
  // Still a working conversation: a new question streams at the end.
  await useModel(page, 'scenario:quick');
  await send(page, 'Question 35');
  await waitForRendered(page.locator('article.message.assistant[data-status="complete"]').nth(35));
  assert.equal(await pageTall(), 0, 'the page does not scroll after an answer streamed');
  assert.deepEqual(problems, []);
  await context.close();
});
