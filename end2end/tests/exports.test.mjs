// The exports, validated against their JSON Schemas, and the D2 compiled by the real d2 compiler.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import { D2 } from '@terrastruct/d2';
import { startServer } from '../support/server.mjs';
import { startFakeOpenAI, providersFile } from '../support/fake-openai.mjs';

const docs = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'schemas');
const schema = (name) => JSON.parse(readFileSync(join(docs, name), 'utf8'));
const TRICKY = 'ünïcødé 漢字 🙂 Quotes "double" and \'single\', {braces}, [brackets], $HOME, back\\slash, a -> b: c;\nnew line, tab\t, <script>x</script>';

let server;
let fake;

before(async () => {
  fake = await startFakeOpenAI({ answer: `Answer with ${TRICKY}` });
  const dir = mkdtempSync(join(tmpdir(), 'glassbox-providers-'));
  server = await startServer({
    args: ['--providers-file', providersFile(dir, fake.baseUrl, { writeFileSync, join })],
    workspace: { 'notes.md': `TODO: ${TRICKY}\n` },
    scenarios: {
      tricky: { delta_interval_ms: 0, steps: [
        { reasoning: [`Thinking about ${TRICKY}`] },
        { tool_calls: [{ name: 'grep_search', args: { query: 'TODO' } }, { name: 'read_file', args: { path: 'nope.txt' } }] },
        { text: TRICKY },
      ] },
    },
  });
});

after(async () => {
  await server?.stop();
  await fake?.close();
});

async function run(model, content, conversationId) {
  const response = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ model, content, conversation_id: conversationId }),
  });
  assert.equal(response.status, 201);
  const started = await response.json();
  for (let i = 0; i < 200; i += 1) {
    const conversation = await (await fetch(`${server.url}/api/conversations/${started.conversation_id}`)).json();
    if (!conversation.active_run) return started;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the run did not end');
}

test('the inspector export of a model run and of a scripted run matches its schema', async () => {
  const ajv = new Ajv2020({ allErrors: true });
  const validate = ajv.compile(schema('inspector.schema.json'));
  const modelRun = await run('fake/m', TRICKY);
  const scripted = await run('scenario:tricky', TRICKY);
  for (const started of [modelRun, scripted]) {
    const entries = await (await fetch(`${server.url}/api/traces/${started.trace_id}/inspector.json`)).json();
    assert.ok(validate(entries), JSON.stringify(validate.errors, null, 2));
    assert.ok(entries.some((e) => e.type === 'tool_call' && e.tool_name === 'grep_search'));
  }
  const entries = await (await fetch(`${server.url}/api/traces/${modelRun.trace_id}/inspector.json`)).json();
  assert.deepEqual(entries.map((e) => e.type), ['llm_request', 'tool_call', 'llm_request']);
  assert.equal(entries[0].response.choices[0].message.tool_calls[0].function.name, 'grep_search');
  assert.match(entries[2].response.choices[0].message.content, /^Answer with ünïcødé 漢字 🙂 Quotes "double"/);
});

test('the ThoughtFlow JSON matches its schema and its D2 compiles with the real d2 compiler', async () => {
  const ajv = new Ajv2020({ allErrors: true });
  const validate = ajv.compile(schema('thoughtflow.schema.json'));
  const first = await run('scenario:tricky', TRICKY);
  await run('fake/m', `Follow-up: ${TRICKY}`, first.conversation_id);
  const flow = await (await fetch(`${server.url}/thoughtflow/${first.conversation_id}.json`)).json();
  assert.ok(validate(flow), JSON.stringify(validate.errors, null, 2));
  assert.equal(flow.runs.length, 2);

  const response = await fetch(`${server.url}/thoughtflow/${first.conversation_id}.d2`);
  assert.equal(response.status, 200);
  const source = await response.text();
  const d2 = new D2();
  let compiled;
  try {
    compiled = await d2.compile(source);
  } finally {
    // The compiler runs in a worker thread that would keep the test process alive.
    await d2.worker?.terminate?.();
  }
  assert.ok(compiled.diagram, 'the d2 compiler accepted the diagram');
  const labels = JSON.stringify(compiled.diagram);
  assert.match(labels, /ünïcødé 漢字 🙂/);
  assert.match(labels, /\{braces\}/);
});
