#!/usr/bin/env bash
# The statements a run start sends to PostgreSQL, one round trip each: starts a throwaway
# PostgreSQL that logs every statement, a glassbox on it, and one run in a new and one in an
# existing conversation; prints the statements of each run's start (up to its first COMMIT).
#   bench/pg-round-trips.sh [target/release/glassbox]
set -uo pipefail
cd "$(dirname "$0")/.."
binary=${1:-target/release/glassbox}
# shellcheck source=../scripts/lib/setup.sh
source scripts/lib/setup.sh
start_throwaway_postgres
(cd /tmp && "${PG_AS[@]}" "$PG_BIN/psql" "$PG_URL" -q -c "ALTER SYSTEM SET log_statement = 'all'" \
  && "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" reload >/dev/null)
work=$(mktemp -d)
mkdir -p "$work/scenarios" "$work/workspace" "$work/data"
echo '{"steps":[{"text":"hi"}]}' >"$work/scenarios/one.json"
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
"$binary" --database-url "$PG_URL" --addr "127.0.0.1:$port" --scenarios-dir "$work/scenarios" \
  --workspace "$work/workspace" --data-dir "$work/data" >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"; stop_throwaway_postgres' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { echo "the server did not start" >&2; exit 1; }
sleep 1
log=$PG_DIR/server.log
start() { # $1: the request body; prints the start's statements
  local from
  from=$(wc -l <"$log")
  curl -sN -X POST "http://127.0.0.1:$port/api/chat" -H 'content-type: application/json' -d "$1" >"$work/answer"
  sleep 0.5
  tail -n "+$((from + 1))" "$log" | grep -oE 'LOG:  (statement|execute [^:]*): .{0,60}' \
    | awk '{ print } /COMMIT/ { exit }'
}
echo "== a new conversation"
start '{"content":"hello","model":"scenario:one"}' | tee "$work/first"
echo "   $(grep -c . "$work/first") round trips"
conversation=$(grep -o '"conversation_id":"[^"]*"' "$work/answer" | head -1 | cut -d'"' -f4)
echo "== a follow-up in it"
start "{\"content\":\"again\",\"model\":\"scenario:one\",\"conversation_id\":\"$conversation\"}" | tee "$work/second"
echo "   $(grep -c . "$work/second") round trips"
