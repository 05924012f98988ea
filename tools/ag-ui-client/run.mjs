// Drives one run of Glassbox's `POST /api/ag-ui` with the AG-UI reference client, `HttpAgent` from
// `@ag-ui/client` (which verifies the stream: verifyEvents), and prints each event it applies as a
// JSON line `{"event": ...}`, then `{"end": "completed" | "aborted" | "failed", ...}`.
//
//   node run.mjs URL '{"threadId": "...", "message": "...", "model": "demo",
//                      "abortOn": "TOOL_CALL_START", "resume": [...]}'
//
// `abortOn` aborts the run (closes the connection) at the first event of that type; `resume`
// answers interrupts (the message is then optional).
import { HttpAgent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";

const [url, optionsText] = process.argv.slice(2);
const options = JSON.parse(optionsText ?? "{}");
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

const initialMessages = options.message
  ? [{ id: randomUUID(), role: "user", content: options.message }]
  : [];
const agent = new HttpAgent({ url, threadId: options.threadId, initialMessages });
let aborted = false;
try {
  await agent.runAgent(
    {
      runId: options.runId ?? randomUUID(),
      forwardedProps: options.model ? { model: options.model } : {},
      ...(options.resume ? { resume: options.resume } : {}),
    },
    {
      onEvent: ({ event }) => {
        print({ event });
        if (!aborted && options.abortOn && event.type === options.abortOn) {
          aborted = true;
          agent.abortRun();
        }
      },
    },
  );
  print({ end: aborted ? "aborted" : "completed", pendingInterrupts: agent.pendingInterrupts });
} catch (error) {
  print({ end: "failed", error: String(error?.message ?? error) });
  process.exitCode = 1;
}
