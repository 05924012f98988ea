// Renders the product's main states to docs/screenshots/*.png, which the README shows.
// Run after a release build whenever the UI changes:
//   cargo leptos build --release --split && (cd end2end && npm run screenshots)
// It starts the real binary with a scenario agent (nothing else is needed) and drives Chromium.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './support/server.mjs';
import { launchBrowser, openChat, openPage, waitForHydration, useModel, send } from './support/browser.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(repo, 'docs', 'screenshots');
mkdirSync(out, { recursive: true });

// The real MCP server the tests use (scripts/test.sh installs it), and list_dir asking first.
const everything = join(repo, 'tools/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const providers = join(mkdtempSync(join(tmpdir(), 'glassbox-shots-')), 'providers.json');
writeFileSync(providers, JSON.stringify({
  mcp_servers: { everything: { command: 'node', args: [everything, 'stdio'] } },
  approval: { mcp: 'auto', tools: { list_dir: 'ask' } },
}));

const server = await startServer({
  args: ['--providers-file', providers],
  workspace: {
    'notes.md': '# Notes\nTODO: write the docs\nTODO: add a changelog\n',
    'main.rs': 'fn main() {\n    // TODO: read the config\n}\n',
  },
  scenarios: {
    tour: { delta_chars: 3, delta_interval_ms: 25, steps: [
      { reasoning: ['The question is about open TODOs.', 'Search the workspace, then read the notes and the code side by side.'] },
      { tool_calls: [{ name: 'grep_search', args: { query: 'TODO' } }] },
      { tool_calls: [
        { name: 'read_file', args: { path: 'notes.md' } },
        { name: 'read_file', args: { path: 'main.rs' } },
        { name: 'sleep', args: { seconds: 3 } },
        { name: 'sleep', args: { seconds: 2, blocking: true } },
      ] },
      { text: 'There are **three** open TODOs:\n\n| File | Line | Note |\n|---|---|---|\n| notes.md | 2 | write the docs |\n| notes.md | 3 | add a changelog |\n| main.rs | 2 | read the config |\n\nThe two in `notes.md` are about documentation.' },
      { usage: { input_tokens: 2140, output_tokens: 412, reasoning_tokens: 96 } },
    ] },
    ask: { delta_chars: 6, delta_interval_ms: 5, steps: [
      { text: 'Let me look at the folder first.' },
      { tool_calls: [{ name: 'list_dir', args: { path: '.' } }] },
      { text: 'Done.' },
    ] },
    long: { delta_interval_ms: 5, steps: [
      { text: 'Starting the long operation on the MCP server.' },
      { tool_calls: [{ name: 'everything__trigger-long-running-operation', args: { duration: 30, steps: 60 } }] },
      { text: 'Done.' },
    ] },
  },
});
const browser = await launchBrowser();

async function shot(page, name) {
  await page.screenshot({ path: join(out, `${name}.png`) });
  console.log(`docs/screenshots/${name}.png`);
}

try {
  const { page } = await openPage(browser);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(server.url);
  await waitForHydration(page);
  await useModel(page, 'scenario:tour');
  await send(page, 'Which TODOs are still open?');
  await page.waitForFunction(() => document.querySelectorAll('.tool-call.running').length >= 2, null, { timeout: 20_000 });
  await page.waitForTimeout(600);
  await shot(page, 'streaming');

  const answer = page.locator('.message.assistant[data-status="complete"]');
  await answer.waitFor({ timeout: 30_000 });
  await page.waitForTimeout(300);
  await shot(page, 'answer');

  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, 'dark');
  await page.emulateMedia({ colorScheme: 'light' });

  await page.getByRole('button', { name: 'Settings' }).click();
  await shot(page, 'settings');
  await page.keyboard.press('Escape');

  await page.setViewportSize({ width: 390, height: 844 });
  await page.evaluate(() => document.activeElement?.blur());
  await page.waitForTimeout(500);
  await shot(page, 'mobile');
  await page.getByRole('button', { name: 'Conversations and settings' }).click();
  await page.waitForTimeout(300);
  await shot(page, 'mobile-drawer');
  await page.keyboard.press('Escape');
  await page.setViewportSize({ width: 1280, height: 800 });

  await answer.getByRole('link', { name: 'View trace' }).click();
  await page.waitForURL(/\/t\//);
  await page.locator('.message.replay[data-replay="done"]').waitFor();
  await shot(page, 'trace-replay');
  await page.getByRole('tab', { name: 'Timeline' }).click();
  await page.waitForTimeout(300);
  await shot(page, 'trace-timeline');

  const asking = await openChat(browser, server.url, 'scenario:ask');
  await asking.page.setViewportSize({ width: 1280, height: 800 });
  await send(asking.page, 'What is in the workspace?');
  await asking.page.getByRole('button', { name: 'Approve' }).waitFor({ timeout: 15_000 });
  await asking.page.waitForTimeout(300);
  await shot(asking.page, 'approval');

  const mcp = await openChat(browser, server.url, 'scenario:long');
  await mcp.page.setViewportSize({ width: 1280, height: 800 });
  await send(mcp.page, 'Run the long operation');
  await mcp.page.waitForFunction(() => Number(document.querySelector('.tool-progress progress')?.value) >= 8, null, { timeout: 20_000 });
  await shot(mcp.page, 'mcp-progress');
  await mcp.page.getByRole('button', { name: 'Stop' }).click();
} finally {
  await browser.close();
  await server.stop();
}
