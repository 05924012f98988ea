// Starts the real `glassbox` binary on a free port with a fresh temporary database, and stops it.
// It builds nothing: scripts/test.sh builds the binary and the site first.

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The binary under test: GLASSBOX_BIN, else the release build, else the debug build. */
export function binaryPath() {
  const fromEnv = process.env.GLASSBOX_BIN ? resolve(process.env.GLASSBOX_BIN) : undefined;
  const candidates = [fromEnv, join(repo, 'target/release/glassbox'), join(repo, 'target/debug/glassbox')];
  const found = candidates.find((path) => path && existsSync(path));
  if (!found) throw new Error('No glassbox binary: run scripts/test.sh (or cargo leptos build) first.');
  return found;
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolvePort(port));
    });
  });
}

/**
 * Starts glassbox. Options:
 * - scenarios: { name: scenarioObject } written to a scenarios folder (enables `scenario:<name>`)
 * - workspace: { 'relative/path': 'contents' } written to the tools' workspace folder
 * - args: extra command-line arguments; env: extra environment variables
 * - reuse: a stopped server's { dir, port }: start again on its database and port (after kill())
 * Returns { url, dir, port, logs, stop(), kill() }.
 */
export async function startServer({ scenarios = {}, workspace = {}, args = [], env = {}, reuse } = {}) {
  const dir = reuse?.dir ?? mkdtempSync(join(tmpdir(), 'glassbox-e2e-'));
  const scenariosDir = join(dir, 'scenarios');
  const workspaceDir = join(dir, 'workspace');
  mkdirSync(scenariosDir, { recursive: true });
  mkdirSync(workspaceDir, { recursive: true });
  for (const [name, scenario] of Object.entries(scenarios)) {
    writeFileSync(join(scenariosDir, `${name}.json`), JSON.stringify(scenario));
  }
  for (const [path, contents] of Object.entries(workspace)) {
    mkdirSync(dirname(join(workspaceDir, path)), { recursive: true });
    writeFileSync(join(workspaceDir, path), contents);
  }
  const port = reuse?.port ?? await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    binaryPath(),
    [
      '--addr', `127.0.0.1:${port}`,
      '--data-dir', join(dir, 'data'),
      '--workspace', workspaceDir,
      '--scenarios-dir', scenariosDir,
      '--enable-test-tools',
      ...args,
    ],
    { cwd: repo, env: { ...process.env, RUST_LOG: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const logs = [];
  child.stdout.on('data', (chunk) => logs.push(chunk.toString()));
  child.stderr.on('data', (chunk) => logs.push(chunk.toString()));
  let spawnError;
  child.once('error', (error) => { spawnError = error; });
  const exited = new Promise((resolveExit) => child.once('exit', (code, signal) => resolveExit({ code, signal })));

  const deadline = Date.now() + 20_000;
  for (;;) {
    if (spawnError) throw new Error(`cannot start ${binaryPath()}: ${spawnError.message}`);
    if (child.exitCode !== null) throw new Error(`glassbox exited during start:\n${logs.join('')}`);
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`glassbox did not answer /healthz:\n${logs.join('')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  // MCP servers join when they are ready (start-up does not wait for them): wait until none is
  // still starting. (Signed-out answers under --auth password are not 200: nothing to wait for.)
  for (;;) {
    const response = await fetch(`${url}/api/tools`).catch(() => null);
    if (!response?.ok) break;
    const { mcp_servers: servers = [] } = await response.json();
    if (!servers.some((s) => s.state === 'starting')) break;
    if (Date.now() > deadline) throw new Error(`an MCP server did not start:\n${logs.join('')}`);
    await new Promise((r) => setTimeout(r, 50));
  }

  return {
    url,
    dir,
    port,
    logs,
    /** SIGKILL, keeping the folder, so `startServer({ reuse: server })` can recover its runs. */
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
