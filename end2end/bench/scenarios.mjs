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
