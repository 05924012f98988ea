#!/usr/bin/env bash
# Measures what the run memory caps hold (docs/security.md, "Memory budget"):
#   A. one run of 56 MiB of text (2 x 8 MiB reasoning, 20 MiB answer) past the 32 MiB run cap:
#      bytes streamed, the terminal event's bytes, the trace read back after a restart, the data
#      folder, and the run memory /healthz reports right after the end and 1 s later;
#   B. ten runs of 40 MiB each at once under --run-memory-mib 200: peak RSS (VmHWM), bytes
#      streamed, the largest terminal event, how the runs ended.
# Usage: scripts/measure-run-memory.sh [BINARY] (default target/release/glassbox). Needs curl, python3.
set -u
BIN=${1:-target/release/glassbox}
D=$(mktemp -d)
trap 'kill $PID 2>/dev/null; rm -rf "$D"' EXIT
mkdir -p "$D/data" "$D/scenarios" "$D/workspace" "$D/site/pkg"
echo '// none' > "$D/site/pkg/glassbox.js"
python3 - "$D" <<'PY'
import json, sys
d = sys.argv[1]
words = lambda mib: "word " * (mib * 1024 * 1024 // 5)
def scenario(name, part_mib, text_mib):
    steps = [{"reasoning": [words(part_mib), words(part_mib)]}, {"text": words(text_mib)}]
    json.dump({"delta_chars": 8000, "delta_interval_ms": 0, "steps": steps}, open(f"{d}/scenarios/{name}.json", "w"))
scenario("huge", 8, 20)
scenario("big", 10, 20)
PY
start() { # PORT [OPTIONS...]
  local port=$1; shift
  "$BIN" --addr "127.0.0.1:$port" --data-dir "$D/data" --site-root "$D/site" --workspace "$D/workspace" \
    --scenarios-dir "$D/scenarios" "$@" >/dev/null 2>&1 &
  PID=$!
  for _ in $(seq 100); do curl -s -o /dev/null "127.0.0.1:$port/healthz" && break; sleep 0.1; done
}
chat() { # PORT SCENARIO -> run id
  curl -s -H 'content-type: application/json' -H 'accept: application/json' \
    -d "{\"content\":\"go\",\"model\":\"scenario:$2\"}" "127.0.0.1:$1/api/chat" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])'
}
memory() { curl -s "127.0.0.1:$1/healthz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_memory_bytes"])'; }
last_event_bytes() { grep '^data:' "$1" | tail -1 | wc -c; }

P=18931
start $P
RUN=$(chat $P huge)
curl -s "127.0.0.1:$P/api/runs/$RUN/events" -o "$D/live.sse"
M1=$(memory $P); sleep 1; M2=$(memory $P)
kill $PID; wait $PID 2>/dev/null
start $P
curl -s "127.0.0.1:$P/api/runs/$RUN/events" -o "$D/stored.sse"
kill $PID; wait $PID 2>/dev/null
echo "A. one run past the 32 MiB run cap: streamed $(stat -c %s "$D/live.sse") B," \
  "terminal event $(last_event_bytes "$D/live.sse") B, read back after a restart $(stat -c %s "$D/stored.sse") B," \
  "data folder $(du -sb "$D/data" | cut -f1) B, run memory at the end $M1 B, 1 s later $M2 B"

rm -rf "$D/data"; mkdir "$D/data"
P=18932
start $P --run-memory-mib 200
WAIT=(); for i in $(seq 10); do chat $P big > "$D/run$i" & WAIT+=($!); done; wait "${WAIT[@]}"
WAIT=(); for i in $(seq 10); do curl -s "127.0.0.1:$P/api/runs/$(cat "$D/run$i")/events" -o "$D/b$i.sse" & WAIT+=($!); done
wait "${WAIT[@]}"
PEAK=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
ENDINGS=$(for i in $(seq 10); do grep -o '"code":"[a-z_]*"' "$D/b$i.sse" | tail -1; done | sort | uniq -c | tr -s ' \n' ' ')
LARGEST=$(for i in $(seq 10); do last_event_bytes "$D/b$i.sse"; done | sort -n | tail -1)
echo "B. ten runs of 40 MiB under --run-memory-mib 200: peak RSS $PEAK kB, streamed $(cat "$D"/b*.sse | wc -c) B," \
  "largest terminal event $LARGEST B, endings:$ENDINGS"
