// A pydantic-ai agent of one's own (examples/agents, AG-UI, a scripted model) in the browser: its
// reasoning, running tool block and answer stream into the chat, a reload shows the same blocks
// from the store, and the trace page replays it.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startServer } from '../support/server.mjs';
import { launchBrowser, openChat, waitForHydration, send, waitForRendered } from '../support/browser.mjs';

const root = resolve(import.meta.dirname, '..', '..');
let agent;
let server;
let browser;

/** Starts examples/agents/pydantic_agent.py on a free port; resolves to its URL. */
function startAgent() {
  const python = process.env.GLASSBOX_AGENT_PYTHON ?? join(root, 'target/agents-venv/bin/python');
  assert.ok(existsSync(python), `${python} is missing: scripts/test.sh installs it (ensure_agent_venv)`);
  agent = spawn(python, [join(root, 'examples/agents/pydantic_agent.py'), '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((done, fail) => {
    const lines = createInterface({ input: agent.stdout });
    lines.once('line', (line) => {
      const address = line.match(/^listening on (\S+)$/)?.[1];
      address ? done(`http://${address}/`) : fail(new Error(`the agent said ${line}`));
    });
    agent.once('exit', (code) => fail(new Error(`the agent exited (${code})`)));
  });
}

before(async () => {
  const url = await startAgent();
  const config = join(mkdtempSync(join(tmpdir(), 'glassbox-agents-')), 'providers.json');
  writeFileSync(config, JSON.stringify({ agents: [{ name: 'pyd', url }] }));
  server = await startServer({ args: ['--providers-file', config] });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  agent?.kill();
});

test('a pydantic-ai run streams into the chat, reloads the same, and its trace replays it', async () => {
  const { page, context, problems } = await openChat(browser, server.url, 'agent/pyd');
  await send(page, 'What is the weather in Paris?');
  // While it runs: the reasoning, the tool block, then the answer.
  await page.locator('.message.assistant :is(.reasoning, .live-part)').first().waitFor({ timeout: 15_000 });
  const call = page.locator('div.tool-call').first();
  await call.waitFor({ timeout: 15_000 });
  assert.match(await call.locator('.tool-name').innerText(), /get_weather/);
  const assistant = page.locator('.message.assistant[data-status="complete"]');
  await waitForRendered(assistant, { timeout: 15_000 });
  await page.getByText('It is sunny in Paris, 21 °C.').waitFor();
  const blocks = async () => (await assistant.locator(':scope > :not(.message-footer)').allInnerTexts()).join('\n');
  const live = await blocks();
  assert.match(live, /get_weather/);

  await page.waitForURL(/\/c\//);
  await page.reload();
  await waitForHydration(page);
  await waitForRendered(assistant);
  assert.equal(await blocks(), live, 'the stored message shows the same blocks');
  await assistant.locator('div.tool-call').first().evaluate((element) => { if (!element.classList.contains('open')) element.querySelector('.segment-header').click(); });
  assert.match(await assistant.locator('.tool-args').first().innerText(), /"city": "Paris"/);
  assert.match(await assistant.locator('.tool-output').first().innerText(), /Sunny, 21 °C/);

  await assistant.getByRole('link', { name: 'View trace' }).click();
  await page.waitForURL(/\/t\/trace_/);
  await page.locator('.trace-status', { hasText: /^Completed in/ }).waitFor();
  const replay = page.locator('.message.replay');
  await replay.and(page.locator('[data-replay="done"]')).waitFor();
  assert.match((await replay.locator(':scope > *').allInnerTexts()).join('\n'), /It is sunny in Paris, 21 °C\./);
  assert.deepEqual(problems, []);
  await context.close();
});
