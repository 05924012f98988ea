import { startServer } from '/work/main/end2end/support/server.mjs';
import { launchBrowser, openPage, waitForHydration, useModel, send } from '/work/main/end2end/support/browser.mjs';
const server = await startServer({ workspace: { 'notes.md': '# Notes\nTODO: write the docs\n' }, scenarios: { q: { delta_chars: 4, delta_interval_ms: 20, steps: [
        { reasoning: ['Look for TODO notes.', 'Then wait a little.'] },
        { tool_calls: [ { name: 'grep_search', args: { query: 'TODO' } }, { name: 'sleep', args: { seconds: 1.5 } } ] },
        { text: 'Found **one** TODO.' }, { usage: { input_tokens: 1200, output_tokens: 310, reasoning_tokens: 128 } } ] } } });
const browser = await launchBrowser();
const { page, problems } = await openPage(browser);
await page.setViewportSize({ width: 1280, height: 720 });
await page.goto(server.url);
await waitForHydration(page);
await useModel(page, 'scenario:q');
await send(page, 'Find the TODOs');
await page.locator('.message.assistant[data-status="complete"]').waitFor();
await page.waitForTimeout(300);
await page.screenshot({ path: '/tmp/s-desktop.png' });
await page.locator('.message-footer .export-menu summary').click();
await page.screenshot({ path: '/tmp/s-menu.png' });
await page.setViewportSize({ width: 390, height: 800 });
await page.screenshot({ path: '/tmp/s-mobile.png' });
await page.emulateMedia({ colorScheme: 'dark' });
await page.setViewportSize({ width: 1280, height: 720 });
await page.screenshot({ path: '/tmp/s-dark.png' });
console.log(problems);
await browser.close(); await server.stop();
