// Scenarios shared by the browser benchmarks (render.bench.mjs, compare-trace.mjs): busy runs
// of one-word deltas with tool calls between them, the compare part's second run, and a run
// stored through the API.

export const WORDS = ['glass ', 'box ', 'shows ', 'every ', 'step ', 'while ', 'it ', 'runs. '];

/** A run of `tokens` one-word deltas, with `calls` tool calls spread between them. */
export function busyRun(tokens, calls, intervalMs) {
  const steps = [{ reasoning: ['Plan the answer.', 'Search the workspace between paragraphs.'] }];
  const perChunk = Math.floor(tokens / (calls + 1));
  let word = 0;
  const chunkText = (count) => {
    let text = '';
    for (let i = 0; i < count; i += 1) {
      text += WORDS[word % WORDS.length];
      word += 1;
      // A paragraph every 60 words, so the markdown has structure to render.
      if (word % 60 === 0) text += '\n\n';
    }
    return text;
  };
  for (let call = 0; call < calls; call += 1) {
    steps.push({ text: chunkText(perChunk) });
    steps.push({ tool_calls: [{ name: 'grep_search', args: { query: `term${call % 5}` } }] });
  }
  steps.push({ text: chunkText(tokens - perChunk * calls) });
  // One word per delta: the scenario splits text every `delta_chars` characters.
  return { delta_chars: 6, delta_interval_ms: intervalMs, steps };
}

/** Run A's scenario with every seventh call made with other arguments and every eleventh left out. */
export function otherRun(run) {
  let call = 0;
  const steps = [];
  for (const step of run.steps) {
    if (!step.tool_calls) { steps.push(step); continue; }
    call += 1;
    if (call % 11 === 0) continue;
    steps.push(call % 7 === 0 ? { tool_calls: [{ name: 'grep_search', args: { query: `other${call}` } }] } : step);
  }
  return { ...run, steps };
}

/** Starts a run through the API, waits for its end, and returns its trace id and event count. */
export async function storedRun(server, model) {
  const response = await fetch(`${server.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ content: 'A trace to replay', model }),
  });
  const events = (await response.text()).split('\n').filter((line) => line.startsWith('data:'));
  const traceId = /"trace_id":"([^"]+)"/.exec(events[0])?.[1];
  if (!traceId) throw new Error('no trace id in the run\'s first event');
  return { traceId, count: events.length };
}

/** Five source files whose lines the grep_search tool of `chatTurn` finds. */
export const WORKSPACE = Object.fromEntries(Array.from({ length: 5 }, (_, file) => [
  `src/module${file}.rs`,
  Array.from({ length: 40 }, (_, line) => `let term${line % 5} = ${line};`).join('\n'),
]));

/** A turn of the long-chat benchmark: ten quick tool calls and a few paragraphs with a table. */
export function chatTurn(index) {
  const calls = Array.from({ length: 10 }, (_, call) => ({ name: 'grep_search', args: { query: `term${(index + call) % 5}` } }));
  const text = `Turn ${index}: the **answer** with a table.\n\n| file | hits |\n|---|---|\n| a.rs | ${index} |\n| b.rs | 3 |\n\n` +
    'A paragraph of explanation that runs on for a while, as answers do. '.repeat(6);
  return { delta_chars: 400, delta_interval_ms: 0, steps: [{ reasoning: [`Turn ${index}.`] }, { tool_calls: calls }, { text }] };
}

/** Scenarios `turn0` to `turn9`, as `chatTurn` makes them. */
export const CHAT_TURNS = Object.fromEntries(Array.from({ length: 10 }, (_, index) => [`turn${index}`, chatTurn(index)]));

/** A conversation of `turns` turns of `CHAT_TURNS`, stored through the API; returns its id. */
export async function storedConversation(server, turns) {
  let conversationId = null;
  for (let index = 0; index < turns; index += 1) {
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'Next turn', model: `scenario:turn${index % 10}`, conversation_id: conversationId }),
    });
    const body = await response.text();
    conversationId ??= /"conversation_id":"([^"]+)"/.exec(body)?.[1];
  }
  return conversationId;
}
