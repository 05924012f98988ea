// The Vercel AI SDK (npm `ai`, no React) as the client of Glassbox's UI message stream.
// Usage: node check.mjs <case> <base URL>. Prints what it checked; exits 1 on the first failure.
// Cases: demo, agent (an AG-UI agent's call whose arguments stream in), model (a model with tools through the test's fake OpenAI server, and an approval
// answered by a request like the one addToolApprovalResponse makes), chat (the SDK's own Chat
// with DefaultChatTransport and addToolApprovalResponse), resume (a dropped connection, then
// GET .../stream), errors.
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
} from "ai";
import assert from "node:assert/strict";

const [, , which, base, otherBase] = process.argv;
const api = `${base}/api/ai-sdk/chat`;
let sequence = 0;
const newId = () => `chat-${process.pid}-${Date.now()}-${++sequence}`;
const userMessage = (text) => ({ id: newId(), role: "user", parts: [{ type: "text", text }] });

/// POSTs the body DefaultChatTransport sends.
async function post(chatId, messages, extra = {}) {
  return fetch(api, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...extra, id: chatId, messages, trigger: "submit-message", messageId: undefined }),
  });
}

/// The response's UI messages as readUIMessageStream yields them (the last is the whole one), the
/// chunks, and the raw text. `chunks` may be given to watch them arrive; `errors` collects error
/// chunks (else one fails the read).
async function read(response, message, chunks = [], errors = null) {
  if (response.status !== 200) assert.fail(`status ${response.status}: ${await response.text()}`);
  assert.equal(response.headers.get("x-vercel-ai-ui-message-stream"), "v1");
  assert.match(response.headers.get("content-type"), /^text\/event-stream/);
  const [forParse, forRaw] = response.body.tee();
  const parsed = parseJsonEventStream({ stream: forParse, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw result.error;
        chunks.push(result.value);
        controller.enqueue(result.value);
      },
    }),
  );
  const rawText = new Response(forRaw).text();
  let last;
  const onError = (error) => {
    if (!errors) throw error;
    errors.push(error.message);
  };
  for await (const snapshot of readUIMessageStream({ stream: parsed, message, onError, terminateOnError: !errors })) {
    last = snapshot;
  }
  return { message: structuredClone(last), chunks, raw: await rawText };
}

function endsWith(raw, finishReason) {
  const frames = raw.split("\n\n").filter((frame) => frame.startsWith("data: "));
  assert.equal(frames.at(-1), "data: [DONE]", "the last frame is [DONE]");
  const finish = JSON.parse(frames.at(-2).slice(6));
  assert.equal(finish.type, "finish", "the frame before [DONE] is finish");
  if (finishReason) assert.equal(finish.finishReason, finishReason);
  return finish;
}

const partsOf = (message, type) => message.parts.filter((part) => part.type === type);
const text = (message) => partsOf(message, "text").map((part) => part.text).join("");
const tool = (message, name) => message.parts.find((part) => part.type === "dynamic-tool" && part.toolName === name);

function noDuplicates(message) {
  const calls = message.parts.filter((part) => part.type === "dynamic-tool").map((part) => part.toolCallId);
  assert.equal(new Set(calls).size, calls.length, `a tool part twice: ${calls}`);
  const texts = partsOf(message, "text").map((part) => part.text);
  assert.equal(new Set(texts).size, texts.length, `a text part twice: ${JSON.stringify(texts)}`);
}

const cases = {
  async demo() {
    const chatId = newId();
    const first = await read(await post(chatId, [userMessage("Where is the TODO in the notes?")]));
    endsWith(first.raw, "stop");
    const message = first.message;
    assert.equal(message.role, "assistant");
    assert.equal(message.parts[0].type, "data-glassbox-run");
    const run = message.parts[0].data;
    assert.equal(run.status, "complete");
    assert.match(run.trace_id, /./);
    assert.ok(run.duration_ms >= 0, "the run's duration");
    assert.equal(partsOf(message, "step-start").length, 1, "the demo is one step");
    const tools = partsOf(message, "dynamic-tool");
    assert.ok(tools.length >= 1, "the demo calls tools");
    for (const part of tools) assert.equal(part.state, "output-available", JSON.stringify(part));
    const durations = partsOf(message, "data-glassbox-tool");
    assert.equal(durations.length, tools.length, "a duration per tool");
    assert.ok(text(message).length > 0, "an answer");
    assert.ok(partsOf(message, "text").every((part) => part.state === "done"));
    noDuplicates(message);
    // The same chat id continues the same conversation.
    const second = await read(await post(chatId, [userMessage("x"), message, userMessage("And again?")]));
    endsWith(second.raw, "stop");
    assert.equal(second.message.parts[0].data.conversation_id, run.conversation_id);
    assert.notEqual(second.message.parts[0].data.trace_id, run.trace_id);
    return { parts: message.parts.map((part) => part.type), conversation_id: run.conversation_id };
  },

  async agent() {
    // An AG-UI agent's call whose arguments stream in: deltas, then the whole input, then the output.
    const { message, chunks, raw } = await read(await post(newId(), [userMessage("Weather?")], { model: "agent/streamer" }));
    endsWith(raw, "stop");
    const types = chunks.map((chunk) => chunk.type);
    const deltas = chunks.filter((chunk) => chunk.type === "tool-input-delta");
    assert.ok(deltas.length >= 1, `input deltas: ${types}`);
    assert.ok(types.indexOf("tool-input-start") < types.indexOf("tool-input-delta"), `${types}`);
    assert.ok(types.indexOf("tool-input-delta") < types.indexOf("tool-input-available"), `${types}`);
    const call = tool(message, "weather");
    assert.equal(call.state, "output-available", JSON.stringify(call));
    assert.deepEqual(call.input, { city: "Paris" });
    assert.equal(call.output, "sunny");
    assert.equal(text(message), "It is sunny.");
    return { deltas: deltas.length };
  },

  async model() {
    const chatId = newId();
    const question = userMessage("Find the TODO");
    const first = await read(await post(chatId, [question], { model: "fake/tools" }));
    endsWith(first.raw, "tool-calls");
    const paused = first.message;
    assert.equal(tool(paused, "grep_search").state, "output-available");
    const asked = tool(paused, "list_dir");
    assert.equal(asked.state, "approval-requested");
    assert.deepEqual(asked.input, { path: "." });
    // What addToolApprovalResponse leaves in the message, sent as the next request.
    const answered = structuredClone(paused);
    const part = tool(answered, "list_dir");
    part.state = "approval-responded";
    part.approval = { ...part.approval, approved: true, reason: "fine" };
    const next = await read(await post(chatId, [question, answered]), structuredClone(answered));
    const finish = endsWith(next.raw, "stop");
    assert.equal(next.chunks[0].type, "start");
    assert.equal(next.chunks[0].messageId, paused.id);
    const message = next.message;
    assert.equal(message.id, paused.id);
    assert.equal(tool(message, "list_dir").state, "output-available");
    assert.equal(tool(message, "grep_search").state, "output-available");
    assert.equal(text(message), "Found one TODO.");
    assert.equal(partsOf(message, "step-start").length, 2, "two model turns, two steps");
    noDuplicates(message);
    const run = message.parts[0].data;
    assert.equal(run.status, "complete");
    assert.deepEqual(run.usage, { input_tokens: 400, output_tokens: 25 });
    assert.equal(finish.messageMetadata.trace_id, run.trace_id);
    return { parts: message.parts.map((part) => part.type), trace_id: run.trace_id };
  },

  async chat() {
    const chat = new Chat({
      transport: new DefaultChatTransport({ api, body: { model: "fake/tools" } }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    await chat.sendMessage({ text: "Find the TODO" });
    assert.equal(chat.status, "ready", String(chat.error));
    const asked = tool(chat.lastMessage, "list_dir");
    assert.equal(asked.state, "approval-requested");
    await chat.addToolApprovalResponse({ id: asked.approval.id, approved: false, reason: "not now" });
    await until(() => chat.status === "ready" && tool(chat.lastMessage, "list_dir").state !== "approval-responded");
    assert.equal(chat.error, undefined, String(chat.error));
    assert.equal(chat.messages.length, 2);
    const message = chat.lastMessage;
    assert.equal(tool(message, "list_dir").state, "output-denied");
    assert.equal(tool(message, "grep_search").state, "output-available");
    assert.equal(text(message), "Found one TODO.");
    noDuplicates(message);
    return { parts: message.parts.map((part) => part.type) };
  },

  async resume() {
    const chatId = newId();
    const controller = new AbortController();
    const response = await fetch(api, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: chatId, messages: [userMessage("slowly")], trigger: "submit-message", model: "scenario:slow" }),
      signal: controller.signal,
    });
    assert.equal(response.status, 200);
    // Read a few frames, then drop the connection.
    const reader = response.body.getReader();
    let seen = "";
    while (!seen.includes("text-delta")) {
      const { value } = await reader.read();
      seen += new TextDecoder().decode(value);
    }
    controller.abort();
    const resumed = await fetch(`${api}/${encodeURIComponent(chatId)}/stream`);
    const { message, raw } = await read(resumed);
    endsWith(raw, "stop");
    const expected = "one two three four five six seven eight nine ten eleven twelve";
    assert.equal(text(message), expected, "the answer once, whole");
    assert.equal(partsOf(message, "text").length, 1);
    assert.equal(message.parts[0].data.status, "complete", "the dropped connection did not stop the run");
    noDuplicates(message);
    const after = await fetch(`${api}/${encodeURIComponent(chatId)}/stream`);
    assert.equal(after.status, 204, "nothing runs any more");
    const unknown = await fetch(`${api}/never-seen/stream`);
    assert.equal(unknown.status, 204);
    // The SDK's own reconnect: nothing to resume is no stream.
    const transport = new DefaultChatTransport({ api });
    assert.equal(await transport.reconnectToStream({ chatId }), null);
    return { resumed_chunks: raw.split("\n\n").length };
  },

  async instances() {
    // Started on A; B has it only through the database.
    const chatId = newId();
    const question = userMessage("Find the TODO");
    const first = await read(await post(chatId, [question], { model: "fake/tools" }));
    endsWith(first.raw, "tool-calls");
    const otherApi = `${otherBase}/api/ai-sdk/chat`;
    const replay = await read(await fetch(`${otherApi}/${encodeURIComponent(chatId)}/stream`));
    endsWith(replay.raw, "tool-calls");
    assert.deepEqual(
      replay.message.parts.map((part) => [part.type, part.state]),
      first.message.parts.map((part) => [part.type, part.state]),
      "B replays what A streamed, to the same pause",
    );
    const answered = structuredClone(first.message);
    const part = tool(answered, "list_dir");
    part.state = "approval-responded";
    part.approval = { ...part.approval, approved: true };
    const response = await fetch(otherApi, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: chatId, messages: [question, answered], trigger: "submit-message" }),
    });
    const next = await read(response, structuredClone(answered));
    endsWith(next.raw, "stop");
    assert.equal(tool(next.message, "list_dir").state, "output-available");
    assert.equal(text(next.message), "Found one TODO.");
    noDuplicates(next.message);
    return { parts: next.message.parts.map((part) => part.type) };
  },

  async stop() {
    const response = await post(newId(), [userMessage("take your time")], { model: "scenario:long" });
    const chunks = [];
    const reading = read(response, undefined, chunks);
    await until(() => chunks.some((chunk) => chunk.type === "text-delta"));
    const runId = chunks.find((chunk) => chunk.type === "data-glassbox-run").data.run_id;
    const cancel = await fetch(`${base}/api/runs/${runId}/cancel`, { method: "POST" });
    assert.equal(cancel.status, 200, `Stop is the cancel endpoint: ${await cancel.text()} after ${chunks.length} chunks`);
    const { message, raw } = await reading;
    const frames = raw.split("\n\n").filter((frame) => frame.startsWith("data: "));
    assert.equal(frames.at(-1), "data: [DONE]");
    const abort = JSON.parse(frames.at(-2).slice(6));
    assert.equal(abort.type, "abort", "a stopped run ends with abort");
    assert.equal(abort.reason, "Stopped by the user.");
    assert.ok(!chunks.some((chunk) => chunk.type === "finish"), "no finish after abort");
    assert.equal(message.parts[0].data.status, "cancelled");
    assert.equal(message.parts[0].data.cancelled_by, "user");
    assert.equal(partsOf(message, "text")[0].state, "done", "the open text was closed");
    return { text: text(message) };
  },

  async failed() {
    const errors = [];
    const { message, raw } = await read(
      await post(newId(), [userMessage("fail")], { model: "scenario:fails" }),
      undefined,
      [],
      errors,
    );
    endsWith(raw, "error");
    assert.deepEqual(errors, ["The model failed."]);
    assert.equal(text(message), "Partial answer");
    assert.equal(message.parts[0].data.status, "error");
    assert.equal(message.parts[0].data.error_code, "provider_error");
    return { errors };
  },

  async errors() {
    const bad = async (body, status) => {
      const response = await fetch(api, { method: "POST", headers: { "content-type": "application/json" }, body });
      assert.equal(response.status, status, `${body}: ${response.status}`);
      const json = await response.json();
      assert.ok(json.code && json.message, JSON.stringify(json));
      return json.code;
    };
    const codes = [
      await bad("{not json", 400),
      await bad(JSON.stringify({ id: "x", messages: [] }), 422),
      await bad(JSON.stringify({ messages: [userMessage("hi")] }), 422),
      await bad(JSON.stringify({ id: "x", messages: [userMessage("   ")] }), 422),
      await bad(JSON.stringify({ id: "x", messages: [{ role: "assistant", parts: [] }] }), 422),
      await bad(JSON.stringify({ id: "x", messages: [userMessage("hi")], model: "no-such-model" }), 422),
    ];
    return { codes };
  },
};

/// A Chat without React: the SDK's AbstractChat over a plain state.
class PlainState {
  constructor() {
    this.messages = [];
    this.status = "ready";
    this.error = undefined;
  }
  pushMessage(message) {
    this.messages = this.messages.concat(message);
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), this.snapshot(message), ...this.messages.slice(index + 1)];
  }
  snapshot(value) {
    return structuredClone(value);
  }
}

class Chat extends AbstractChat {
  constructor(init) {
    super({ ...init, state: new PlainState() });
  }
}

async function until(condition, ms = 20000) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const run = cases[which];
if (!run) {
  console.error(`unknown case ${which}; one of ${Object.keys(cases).join(", ")}`);
  process.exit(2);
}
try {
  const summary = await run();
  console.log(JSON.stringify({ case: which, ok: true, ...summary }));
} catch (error) {
  console.error(`${which}: ${error.stack ?? error}`);
  process.exit(1);
}
