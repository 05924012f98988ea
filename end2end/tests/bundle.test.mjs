// The size budget of what a chat page downloads (issue 37): the main wasm, its JavaScript and the
// chunk loader that script imports, brotli-compressed at quality 11 as the server sends them (the
// lazily loaded chunks are not: the trace and compare pages', and those of the chat's parts that
// only an interaction shows, fetched by that interaction). Measured on the release site that
// scripts/test.sh builds.
//
// Issue 37 asks for at most 480 KB (ISSUE_TARGET), and the page fails the test above it whatever
// BUDGET says. BUDGET is a ratchet under it, a few hundred bytes above what the page measures
// (docs/benchmarks.md, "Bundle size"), so that each change pays for its bytes: lower it with
// every saving, raise it only for a change whose bytes are worth it, and say so in that section.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants } from 'node:zlib';

const BUDGET = 444_400;
const ISSUE_TARGET = 480_000;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const pkg = join(process.env.LEPTOS_SITE_ROOT ?? join(root, 'target', 'site'), 'pkg');

// The chunk loader's name carries a hash of its text, and cargo-leptos's wasm-split writes the
// loader's imports in a hash map's order, so that name (in the main wasm's imports and in its
// script) changes from build to build of the same code, and the brotli size with it: 531,826 to
// 532,096 B for three builds of one commit. Measured with the name made the same every time, the
// same code gives the same figure, and the budget can be a ratchet without flaking.
const LOADER_NAME = /__wasm_split\.[A-Za-z0-9_-]+\.js/g;

function brotli(file) {
  const sent = readFileSync(join(pkg, file));
  const bytes = Buffer.from(sent.toString('latin1').replace(LOADER_NAME, (name) => `__wasm_split.${'x'.repeat(name.length - 16)}.js`), 'latin1');
  const compressed = brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
  return { raw: sent.length, brotli: compressed.length };
}

test('what a chat page downloads stays within the size budget', () => {
  // Names carry a content hash: glassbox.<hash>.wasm, glassbox.<hash>.js, __wasm_split.<hash>.js.
  const files = readdirSync(pkg).filter((name) => /^(glassbox\.[^.]+\.(wasm|js)|__wasm_split\.[^.]+\.js)$/.test(name));
  // The loader exists in a split build only (`--split`, as scripts/test.sh builds).
  const kinds = files.map((name) => `${name.split('.')[0]}.${name.split('.').pop()}`).sort();
  assert.deepEqual(kinds.filter((kind) => kind.startsWith('glassbox.')), ['glassbox.js', 'glassbox.wasm'],
    `one main wasm and one main script in ${pkg} (build the site first: scripts/test.sh does)`);
  assert.ok(kinds.filter((kind) => kind === '__wasm_split.js').length <= 1, `one chunk loader at most: ${files}`);
  const sizes = files.map((name) => ({ name, ...brotli(name) }));
  const total = sizes.reduce((sum, file) => sum + file.brotli, 0);
  const listed = sizes.map((file) => `${file.name}: ${file.raw} B raw, ${file.brotli} B brotli`).join('; ');
  console.log(`chat page: ${total} B brotli (${listed}); budget ${BUDGET} B, issue 37's target ${ISSUE_TARGET} B`);
  assert.ok(total <= ISSUE_TARGET, `the chat page downloads ${total} B brotli, over issue 37's ${ISSUE_TARGET} B (${listed})`);
  assert.ok(total <= BUDGET, `the chat page downloads ${total} B brotli, over its budget of ${BUDGET} B (${listed})`);
});
