// A fake OpenAI-compatible Chat Completions server: by default the first turn asks for
// grep_search and the next one answers; a test can script its own turns with `respond`. It speaks
// the real streaming wire format (data: chunks, data: [DONE]).

import { createServer } from 'node:http';

/** One streamed chunk: a `delta` and, on the last one, the `finish` reason. */
export function chunk(delta, finish = null) {
  return `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

/** A chunk with a whole tool call: the `index`th call, of `name` with `args` (an object). */
export function toolCall(index, name, args) {
  return chunk({ tool_calls: [{ index, id: `call_${index}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }] });
}

/** Splits text into pieces of `size` code points (never inside a character). */
function codePointChunks(text, size) {
  const points = Array.from(text);
  const pieces = [];
  for (let i = 0; i < points.length; i += size) pieces.push(points.slice(i, i + size).join(''));
  return pieces;
}

/** The default script: the first turn thinks and asks for grep_search, the next one answers. */
function searchThenAnswer(answer) {
  return (parsed) => {
    const hasResults = (parsed.messages ?? []).some((m) => m.role === 'tool');
    return hasResults
      ? [chunk({ reasoning_content: 'The search found the note.' }), ...codePointChunks(answer, 6).map((t) => chunk({ content: t })), chunk({}, 'stop')]
      : [
        chunk({ content: '<think>I will search.</think>' }),
        chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'grep_search', arguments: '{"query":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: ' "TODO"}' } }] }),
        chunk({}, 'tool_calls'),
      ];
  };
}

/**
 * Starts the fake on a free port. `respond(request)` gets each parsed request body and returns the
 * chunks to stream (made with `chunk` and `toolCall`); without it the fake searches, then answers
 * `answer`. `delayMs` waits between chunks.
 */
export async function startFakeOpenAI({ answer = 'Found it.', delayMs = 0, respond = searchThenAnswer(answer) } = {}) {
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (part) => { body += part; });
    request.on('end', async () => {
      const frames = respond(JSON.parse(body || '{}'));
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const frame of frames) {
        response.write(frame);
        if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      }
      response.end('data: [DONE]\n\n');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { baseUrl: `http://127.0.0.1:${port}/v1`, close: () => new Promise((r) => server.close(r)) };
}

/** Writes a providers file for glassbox pointing at the fake, offering `models`; returns its path. */
export function providersFile(dir, baseUrl, { writeFileSync, join }, models = ['m']) {
  const path = join(dir, 'providers.json');
  writeFileSync(path, JSON.stringify({ providers: [{ name: 'fake', kind: 'openai_chat', base_url: baseUrl, models }] }));
  return path;
}
