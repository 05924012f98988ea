// Launches Debian's Chromium through playwright-core and records every console error, page error
// and hydration warning, so a test can fail on any of them.

import { chromium } from 'playwright-core';
import { existsSync } from 'node:fs';

export function chromiumPath() {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  const found = candidates.find((path) => path && existsSync(path));
  if (!found) throw new Error('No Chromium found: scripts/test.sh installs Debian\'s chromium package.');
  return found;
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // A closed network: no background services, no first-run checks, no QUIC.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/**
 * A fresh page that collects problems: console errors, uncaught exceptions, failed requests, and any
 * console message that mentions hydration.
 */
export async function openPage(browser, options = {}) {
  const context = await browser.newContext(options);
  // A script, style, frame or connection the Content-Security-Policy blocked is a problem too.
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      console.error(`CSP violation: ${event.violatedDirective} blocked ${event.blockedURI || 'inline code'}`);
    });
  });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (message) => {
    const text = message.text();
    if (message.type() === 'error' || /hydrat/i.test(text)) problems.push(`console.${message.type()}: ${text}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) => {
    const failure = request.failure()?.errorText ?? '';
    // A navigation away aborts in-flight requests; that is not a failure of the page.
    if (!failure.includes('ERR_ABORTED')) problems.push(`request failed: ${request.url()} ${failure}`);
  });
  return { page, context, problems };
}

/** A new context on the app's start page, hydrated, whose chat requests use `model`. */
export async function openChat(browser, url, model) {
  const session = await openPage(browser);
  await session.page.goto(url);
  await waitForHydration(session.page);
  await useModel(session.page, model);
  return session;
}

/** Resolves once the wasm has hydrated the page (the app marks <body> when it has). */
export async function waitForHydration(page) {
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 15_000 });
}

/** Makes the page's chat requests use `model` (the UI's default is the demo agent). */
export async function useModel(page, model) {
  await page.route('**/api/chat', async (route) => {
    const body = JSON.parse(route.request().postData() ?? '{}');
    await route.continue({ postData: JSON.stringify({ ...body, model }) });
  });
}

/** Types a message and sends it with Enter. */
export async function send(page, text) {
  await page.getByLabel('Message').fill(text);
  await page.keyboard.press('Enter');
}

/**
 * Waits for `locator` (an ended message, or something in one) and then for the browser's next
 * rendering update. A message that ends leaves its live state and its contents become
 * `content-visibility: auto` (style/glassbox.css); until the next rendering update finds it on
 * screen they are skipped, and `innerText` reads '' inside it (CI read an ended answer empty so).
 * The update decides before it paints, so a person never sees that moment; a test reading the
 * DOM in the same task as the change does.
 */
export async function waitForRendered(locator, options = {}) {
  await locator.waitFor(options);
  await afterRendering(locator.page());
}

/** Resolves after the page's next rendering update: a frame's callbacks, then a task after them. */
async function afterRendering(page) {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0))));
}
