#!/usr/bin/env bash
# N failing sign-ins at once, each from its own loopback address (127.0.x.y) and name, against a
# fresh `glassbox --auth password`: the statuses, and the server's memory before, at its peak
# (VmHWM) and after. Usage: bench/signin_crowd.sh BINARY [N=300]. Figures: docs/security.md.
set -euo pipefail
BIN=$1
N=${2:-300}
PORT=$((20000 + RANDOM % 20000))
DIR=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null; rm -rf "$DIR"' EXIT
mkdir -p "$DIR/site/pkg" "$DIR/ws"
echo "//" >"$DIR/site/pkg/glassbox.js"
"$BIN" --addr "127.0.0.1:$PORT" --data-dir "$DIR/data" --workspace "$DIR/ws" \
  --site-root "$DIR/site" --auth password >/dev/null 2>&1 &
PID=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
rss() { awk "/^$1:/ {printf \"%.0f MiB\", \$2/1024}" "/proc/$PID/status"; }
echo "before: $(rss VmRSS)"
seq 1 "$N" | xargs -P "$N" -I{} sh -c 'curl -s -o /dev/null -w "%{http_code}\n" \
  --interface 127.0.$(( {} / 250 + 1 )).$(( {} % 250 + 1 )) \
  -d "name=user{}&password=wrong" http://127.0.0.1:'"$PORT"'/auth/login' | sort | uniq -c
echo "peak: $(rss VmHWM), after: $(rss VmRSS)"
