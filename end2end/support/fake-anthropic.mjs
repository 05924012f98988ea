// A fake Anthropic Messages server that thinks: the first turn thinks, signs its thinking, adds a
// redacted block and asks for grep_search; the turn after the tool thinks again and answers. It
// speaks the real streaming wire format (`event: <type>` + `data: <json>` frames) and keeps every
// request body, so a test can check what came back.

import { createServer } from 'node:http';

export const SIGNATURE = 'EqQBCkgIARABGAIiQH+/1a2b3c4d5e6f7g8h9i0j/k+l=mN0pQrStUvWxYz==';
export const REDACTED_DATA = 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2Yf';

const frame = (event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
const start = (index, block) => ({ type: 'content_block_start', index, content_block: block });
const delta = (index, d) => ({ type: 'content_block_delta', index, delta: d });
const stop = (index) => ({ type: 'content_block_stop', index });

function turn(afterTool) {
  const content = afterTool
    ? [
      start(0, { type: 'thinking', thinking: '', signature: '' }),
      delta(0, { type: 'thinking_delta', thinking: 'Found it in ' }),
      delta(0, { type: 'thinking_delta', thinking: 'notes.md.' }),
      delta(0, { type: 'signature_delta', signature: 'ErcBCkgIAhABGAIiQJ' }),
      stop(0),
      start(1, { type: 'text', text: '' }),
      delta(1, { type: 'text_delta', text: 'One TODO, in notes.md.' }),
      stop(1),
    ]
    : [
      start(0, { type: 'thinking', thinking: '', signature: '' }),
      delta(0, { type: 'thinking_delta', thinking: 'I should search ' }),
      delta(0, { type: 'thinking_delta', thinking: 'for TODO.' }),
      delta(0, { type: 'signature_delta', signature: SIGNATURE }),
      stop(0),
      start(1, { type: 'redacted_thinking', data: REDACTED_DATA }),
      stop(1),
      start(2, { type: 'tool_use', id: 'toolu_1', name: 'grep_search', input: {} }),
      delta(2, { type: 'input_json_delta', partial_json: '{"query": "TODO"}' }),
      stop(2),
    ];
  return [
    { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 20, output_tokens: 1 } } },
    ...content,
    { type: 'message_delta', delta: { stop_reason: afterTool ? 'end_turn' : 'tool_use' }, usage: { output_tokens: 30 } },
    { type: 'message_stop' },
  ];
}

export async function startFakeAnthropic({ delayMs = 0 } = {}) {
  const requests = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (part) => { body += part; });
    request.on('end', async () => {
      const parsed = JSON.parse(body || '{}');
      requests.push(parsed);
      const last = parsed.messages?.at(-1)?.content;
      const afterTool = Array.isArray(last) && last.some((block) => block.type === 'tool_result');
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const event of turn(afterTool)) {
        response.write(frame(event));
        if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      }
      response.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { baseUrl: `http://127.0.0.1:${port}/v1`, requests, close: () => new Promise((r) => server.close(r)) };
}
