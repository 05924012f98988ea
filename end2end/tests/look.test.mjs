// Look and feel (issue 16): the drawer on a phone, keyboard-only use, and axe-core's accessibility
// rules on the chat (while streaming and after), the settings panel and the trace page's three
// tabs, in light and dark.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { AxeBuilder } from '@axe-core/playwright';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openPage, openChat, waitForHydration, useModel, send, waitForRendered } from '../support/browser.mjs';

let server;
let browser;

before(async () => {
  server = await startServer({
    workspace: { 'notes.md': '# Notes\nTODO: write the docs\n' },
    scenarios: {
      work: { delta_chars: 4, delta_interval_ms: 30, steps: [
        { reasoning: ['Look for TODO notes in every file of the workspace, then read them.'] },
        { tool_calls: [
          { name: 'grep_search', args: { query: 'TODO notes that mention the documentation of the project' } },
          { name: 'sleep', args: { seconds: 2 } },
        ] },
        { text: 'Found **one** TODO: write the docs.' },
        { usage: { input_tokens: 1200, output_tokens: 310, reasoning_tokens: 128 } },
      ] },
      long: { delta_chars: 12, delta_interval_ms: 15, steps: [
        { text: Array.from({ length: 60 }, (_, i) => `Paragraph ${i + 1} of a long answer.`).join('\n\n') },
      ] },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** axe-core's serious and critical violations on the page as it is now. */
async function serious(page, what) {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${what}: ${v.id} (${v.impact}) ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`);
}

test('at 390 px the sidebar is a drawer behind a menu button; everything fits and titles wrap', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.setViewportSize({ width: 390, height: 800 });
  await page.goto(server.url);
  await waitForHydration(page);
  await useModel(page, 'scenario:work');
  await send(page, 'Find the TODOs');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 20_000 });
  await page.waitForURL(/\/c\//);

  const sidebar = page.locator('#sidebar');
  const menu = page.getByRole('button', { name: 'Conversations and settings' });
  assert.equal(await sidebar.isVisible(), false, 'the sidebar starts hidden');
  assert.equal(await menu.getAttribute('aria-expanded'), 'false');
  await menu.click();
  await sidebar.getByRole('link', { name: '+ New chat' }).waitFor({ state: 'visible' });
  assert.equal(await menu.getAttribute('aria-expanded'), 'true');
  assert.equal(await sidebar.getByRole('link', { name: 'Find the TODOs' }).isVisible(), true);
  await page.keyboard.press('Escape');
  await sidebar.waitFor({ state: 'hidden' });
  assert.equal(await page.locator('.message.assistant[data-status="complete"]').count(), 1, 'Escape closed the drawer, nothing else');

  // Opening a conversation from the drawer closes it.
  await menu.click();
  await sidebar.getByRole('link', { name: '+ New chat' }).click();
  await page.waitForURL((url) => url.pathname === '/');
  await sidebar.waitFor({ state: 'hidden' });
  await page.goBack();
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'));

  // Nothing is wider than the screen; touch targets are 44 px; a long tool title wraps.
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow} px wider than the screen`);
  for (const target of [menu, page.getByRole('button', { name: 'Send' }), page.locator('.tool-call > .segment-header').first(), page.locator('.footer-action').first()]) {
    const box = await target.boundingBox();
    assert.ok(box && box.height >= 44, `a touch target of ${box?.height} px`);
  }
  const title = page.locator('.tool-title', { hasText: 'TODO notes that mention' });
  const cut = await title.evaluate((el) => el.scrollWidth > el.clientWidth + 1);
  assert.equal(cut, false, 'the title wraps instead of being cut');
  assert.match(await title.innerText(), /documentation of the project/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the activity strip has a lane per tool call; parallel calls overlap; a lane opens its block', async () => {
  const { page, context, problems } = await openChat(browser, server.url, 'scenario:work');
  await send(page, 'Find the TODOs');
  const answer = page.locator('.message.assistant[data-status="complete"]');
  await waitForRendered(answer, { timeout: 20_000 });
  const lanes = answer.locator('.activity-lane');
  assert.equal(await lanes.count(), await answer.locator('.tool-call').count());
  assert.equal(await lanes.count(), 2);
  const [a, b] = [await lanes.nth(0).locator('.lane-bar').boundingBox(), await lanes.nth(1).locator('.lane-bar').boundingBox()];
  assert.ok(a.x < b.x + b.width && b.x < a.x + a.width, `the two calls ran side by side: ${JSON.stringify([a, b])}`);
  const sleep = answer.locator('.activity-lane', { hasText: 'Sleeping' });
  assert.ok((await sleep.locator('.lane-bar').boundingBox()).width > 100, 'the long call is long');
  assert.equal(await answer.locator('.tool-call.open').count(), 0);
  await sleep.getByRole('button').click();
  await answer.locator('.tool-call.open', { hasText: 'Sleeping' }).waitFor();
  assert.equal(await answer.locator('.tool-call.open').count(), 1);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the chat follows the answer as it grows, stops when the person scrolls up, and opens at the end', async () => {
  const { page, context, problems } = await openPage(browser);
  await page.setViewportSize({ width: 1000, height: 500 });
  await page.goto(server.url);
  await waitForHydration(page);
  await useModel(page, 'scenario:long');
  const messages = page.locator('.messages');
  const gap = () => messages.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
  await send(page, 'Write a long answer');
  await page.getByText('Paragraph 20 of').waitFor({ timeout: 15_000 });
  assert.ok((await messages.evaluate((el) => el.scrollHeight - el.clientHeight)) > 300, 'the answer is taller than the view');
  assert.ok((await gap()) <= 80, `following the answer: ${await gap()} px from the end`);
  // The person scrolls up to read: the view stays where they put it.
  await messages.hover();
  await page.mouse.wheel(0, -5000);
  await page.waitForTimeout(200);
  const readingAt = await messages.evaluate((el) => el.scrollTop);
  await page.getByText('Paragraph 40 of').waitFor({ timeout: 15_000 });
  assert.equal(await messages.evaluate((el) => el.scrollTop), readingAt, 'not pulled down while reading');
  await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 15_000 });
  await page.waitForURL(/\/c\//);
  await page.reload();
  await waitForHydration(page);
  await page.waitForTimeout(200);
  assert.ok((await gap()) <= 80, `a conversation opens at its end: ${await gap()} px from it`);
  assert.deepEqual(problems, []);
  await context.close();
});

test('by keyboard alone: send, stop, open a tool block, open the settings', async () => {
  const { page, context, problems } = await openChat(browser, server.url, 'scenario:work');
  const tabTo = async (matches, limit = 40) => {
    for (let i = 0; i < limit; i += 1) {
      await page.keyboard.press('Tab');
      if (await page.evaluate(matches)) return;
    }
    throw new Error(`not reached by Tab: ${matches}`);
  };
  await tabTo(() => document.activeElement?.getAttribute('aria-label') === 'Message');
  await page.keyboard.type('Find the TODOs');
  await page.keyboard.press('Enter');
  await page.locator('.tool-call.running').first().waitFor({ timeout: 15_000 });
  await tabTo(() => document.activeElement?.classList.contains('stop'));
  const focused = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(focused, 'none', 'focus is visible');
  await page.keyboard.press('Enter');
  await waitForRendered(page.locator('.message.assistant[data-status="cancelled"]'));

  await tabTo(() => document.activeElement?.matches('.tool-call > .segment-header'));
  await page.keyboard.press('Enter');
  await page.locator('.tool-call.open .tool-args').first().waitFor();
  assert.equal(await page.locator('.tool-call.open').count() >= 1, true);

  await tabTo(() => document.activeElement?.classList.contains('settings-toggle'), 80);
  await page.keyboard.press('Enter');
  await page.locator('#settings-panel').waitFor({ state: 'visible' });
  await page.keyboard.press('Escape');
  await page.locator('#settings-panel').waitFor({ state: 'hidden' });
  assert.deepEqual(problems, []);
  await context.close();
});

for (const scheme of ['light', 'dark']) {
  test(`axe-core finds no serious or critical violation (${scheme})`, async () => {
    const { page, context, problems } = await openChat(browser, server.url, 'scenario:work');
    await page.emulateMedia({ colorScheme: scheme, reducedMotion: 'reduce' });
    const found = [];
    found.push(...(await serious(page, 'new chat')));
    await send(page, 'Find the TODOs');
    await page.locator('.tool-call.running').first().waitFor({ timeout: 15_000 });
    found.push(...(await serious(page, 'streaming')));
    await waitForRendered(page.locator('.message.assistant[data-status="complete"]'), { timeout: 20_000 });
    found.push(...(await serious(page, 'ended')));
    await page.getByRole('button', { name: 'Settings' }).click();
    found.push(...(await serious(page, 'settings')));
    await page.keyboard.press('Escape');

    await page.getByRole('link', { name: 'View trace' }).click();
    await page.waitForURL(/\/t\//);
    await waitForHydration(page);
    for (const tab of ['Steps & replay', 'Timeline', 'Inspector']) {
      await page.getByRole('tab', { name: tab }).click();
      await page.waitForTimeout(200);
      found.push(...(await serious(page, `trace: ${tab}`)));
    }
    assert.deepEqual(found, []);
    assert.deepEqual(problems, []);
    await context.close();
  });
}
