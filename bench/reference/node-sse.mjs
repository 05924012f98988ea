#!/usr/bin/env node
// The reference the issue compares Glassbox with: a plain Node.js SSE server (node:http, two
// processes through node:cluster, stores nothing) that answers `POST /api/chat` the way the load
// generator reads Glassbox: `message_started`, the scenario's `clock_text` deltas (each the wall
// clock in microseconds, read just before it is written) paced by `delta_interval_ms` with
// setTimeout, then `message_final`. It takes Glassbox's command line, so the load generator starts
// it in place of the binary:
//
//   target/release/loadgen --binary bench/reference/node-sse.mjs burst --runs 1000 --over 1
//
// Only node's standard library: nothing to install.
import cluster from "node:cluster";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

const PROCESSES = 2;

function option(name) {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

function scenario() {
  const dir = option("scenarios-dir");
  const file = fs.readdirSync(dir).find((name) => name.endsWith(".json"));
  const parsed = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));
  const deltas = parsed.steps.reduce((sum, step) => sum + (step.clock_text ?? 0), 0);
  return { deltas, interval: parsed.delta_interval_ms ?? 20 };
}

const micros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

function serve({ deltas, interval }) {
  let runs = 0;
  const server = http.createServer((request, response) => {
    if (request.method !== "POST" || request.url !== "/api/chat") {
      response.writeHead(404).end();
      return;
    }
    request.resume();
    request.on("end", () => stream(response, `run_${process.pid}_${++runs}`, deltas, interval));
  });
  server.keepAliveTimeout = 60_000;
  const [host, port] = option("addr").split(":");
  server.listen(Number(port), host);
}

function stream(response, runId, deltas, interval) {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  response.socket.setNoDelay(true);
  let seq = 0;
  const send = (fields) => {
    seq += 1;
    const json = JSON.stringify({ seq, run_id: runId, ts: new Date().toISOString(), ...fields });
    response.write(`id: ${seq}\ndata: ${json}\n\n`);
  };
  send({ type: "message_started", message_id: `msg_${runId}` });
  let sent = 0;
  const tick = () => {
    if (response.destroyed) return;
    if (sent === deltas) {
      send({ type: "message_final", message_id: `msg_${runId}` });
      response.end();
      return;
    }
    sent += 1;
    send({ type: "text_delta", segment_id: "txt_1", delta: `${micros()} ` });
    setTimeout(tick, interval);
  };
  setTimeout(tick, interval);
}

if (cluster.isPrimary) {
  for (let i = 0; i < PROCESSES; i += 1) cluster.fork();
  process.on("SIGTERM", () => process.exit(0));
} else {
  serve(scenario());
}
