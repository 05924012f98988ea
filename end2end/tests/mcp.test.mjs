// MCP tools in the browser, through the real `@modelcontextprotocol/server-everything` from npm
// (tools/mcp): the block shows the server and the tool, the long-running operation's progress
// streams into it, and Stop ends it mid-way.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openChat, send } from '../support/browser.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const everything = join(repo, 'tools/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js');

let server;
let browser;

before(async () => {
  assert.ok(existsSync(everything), `${everything} is missing: scripts/test.sh installs tools/mcp`);
  const config = join(mkdtempSync(join(tmpdir(), 'glassbox-mcp-')), 'providers.json');
  writeFileSync(config, JSON.stringify({
    mcp_servers: { everything: { command: 'node', args: [everything, 'stdio'] } },
    approval: { mcp: 'auto' },
  }));
  server = await startServer({
    args: ['--providers-file', config],
    scenarios: {
      long: { delta_interval_ms: 5, steps: [
        { text: 'Starting the long operation.' },
        { tool_calls: [{ name: 'everything__trigger-long-running-operation', args: { duration: 30, steps: 60 } }] },
        { text: 'never shown' },
      ] },
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('an MCP call shows its server and tool, streams its progress, and Stop ends it at once', async () => {
  const { page, context, problems } = await openChat(browser, server.url, 'scenario:long');
  await send(page, 'Run the long operation');
  const block = page.locator('div.tool-call.running');
  await block.waitFor({ timeout: 15_000 });
  assert.equal(await block.locator('.tool-server').innerText(), 'everything');
  assert.match(await block.locator('.tool-name').innerText(), /trigger-long-running-operation/);
  // The name shows once: no title line repeating `everything__trigger-long-running-operation`.
  assert.doesNotMatch(await block.locator('.segment-header').innerText(), /everything__/);

  const bar = block.locator('.tool-progress progress');
  await bar.waitFor({ timeout: 15_000 });
  await page.waitForFunction(() => Number(document.querySelector('.tool-progress progress')?.value) >= 2, null, { timeout: 15_000 });
  assert.equal(await bar.getAttribute('max'), '60');
  assert.match(await block.locator('.tool-progress').innerText(), /of 60/);

  const stopped = Date.now();
  await page.getByRole('button', { name: 'Stop' }).click();
  await page.locator('div.tool-call.cancelled').waitFor({ timeout: 5_000 });
  assert.ok(Date.now() - stopped < 5_000, 'Stop does not wait for the MCP server');
  await page.getByText('Stopped. The partial answer is kept.').waitFor();
  assert.deepEqual(problems, []);
  await context.close();
});
