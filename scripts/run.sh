#!/usr/bin/env bash
# Builds Glassbox and serves it on http://127.0.0.1:3000 with its embedded defaults: a SQLite file
# in ./data and the built-in demo agent. Extra arguments go to the server (see `--help`).
#
# `scripts/run.sh --example-agents [server options]` also starts the two example AG-UI agents of
# examples/agents (pydantic-ai on 127.0.0.1:8001, LangGraph on 127.0.0.1:8002; scripted, no key,
# no network) and serves Glassbox with a providers file that lists them: pick the model
# `agent/pydantic-example` or `agent/langgraph-example`. The agents stop with the server.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh

example_agents=""
if [ "${1:-}" = "--example-agents" ]; then
  example_agents=1
  shift
fi

ensure_build_tools
build_site

if [ -z "$example_agents" ]; then
  log "starting $GLASSBOX_BIN (Ctrl+C stops it)"
  exec "$GLASSBOX_BIN" "$@"
fi

ensure_agent_venv
"$GLASSBOX_AGENT_PYTHON" examples/agents/pydantic_agent.py --port 8001 &
pydantic_pid=$!
"$GLASSBOX_AGENT_PYTHON" examples/agents/langgraph_agent.py --port 8002 &
langgraph_pid=$!
trap 'kill $pydantic_pid $langgraph_pid 2>/dev/null || true' EXIT
# Serve only once both agents listen (a first question would otherwise meet a closed port).
for port in 8001 8002; do
  for _ in $(seq 1 120); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.5
  done
done
mkdir -p data
providers=data/example-agents.providers.json
cat >"$providers" <<'JSON'
{
  "agents": [
    {"name": "pydantic-example", "url": "http://127.0.0.1:8001/",
     "description": "Scripted pydantic-ai agent: weather, parallel, delete (approval), sleep, fail"},
    {"name": "langgraph-example", "url": "http://127.0.0.1:8002/",
     "description": "Scripted LangGraph agent: weather, with steps and state"}
  ]
}
JSON
log "starting $GLASSBOX_BIN with the example agents (model agent/pydantic-example; Ctrl+C stops all)"
"$GLASSBOX_BIN" --providers-file "$providers" --default-model agent/pydantic-example "$@"
