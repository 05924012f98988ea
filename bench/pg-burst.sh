#!/usr/bin/env bash
# First events of 1,000 runs started over 1 s, on PostgreSQL and on SQLite, alternated round by
# round (issue 37, item 3: PostgreSQL's p99 within 2x of SQLite's). Each PostgreSQL round gets a
# fresh database of one throwaway cluster, which logs its checkpoints and autovacuum runs, so a
# slow round can be laid beside what the cluster was doing then; the log is copied to
# target/pg-burst-server.log, the rounds to target/pg-burst.txt. Exits 1 if a burst failed.
#   bench/pg-burst.sh [rounds]     (after `cargo build --release -p bench` and the server's build)
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
# shellcheck source=../scripts/lib/setup.sh
source scripts/lib/setup.sh
start_throwaway_postgres || exit 1
# Keep the cluster's log even when the script is stopped (the trap of start_throwaway_postgres
# removes the cluster).
trap 'cp "$PG_DIR/server.log" target/pg-burst-server.log 2>/dev/null; stop_throwaway_postgres' EXIT
(cd /tmp && "${PG_AS[@]}" "$PG_BIN/psql" "$PG_URL" -q -c "ALTER SYSTEM SET log_checkpoints = on" \
  -c "ALTER SYSTEM SET log_autovacuum_min_duration = 0" -c "ALTER SYSTEM SET log_line_prefix = '%m [%p] '" \
  && "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" reload >/dev/null) || exit 1
# One burst; prints its first-event line, or loadgen's error (a round with failed runs is not a
# clean round) and fails.
burst() {
  local out
  if ! out=$(target/release/loadgen "$@" burst --runs 1000 --over 1 2>&1); then
    echo "FAILED: $(tail -1 <<<"$out")"
    return 1
  fi
  grep '^first event' <<<"$out" | sed 's/^first event (request sent -> first event read): //'
}
failed=0
for round in $(seq "$rounds"); do
  (cd /tmp && "${PG_AS[@]}" "$PG_BIN/psql" "$PG_URL" -q -c "CREATE DATABASE round$round") || exit 1
  echo "round $round, PostgreSQL, from $(date +%T.%N | cut -c1-12), load $(cut -d' ' -f1 /proc/loadavg): $(
    burst --postgres "${PG_URL%/postgres}/round$round" || echo "(failed)")"
  echo "round $round, SQLite: $(burst || echo "(failed)")"
done | tee target/pg-burst.txt
grep -q FAILED target/pg-burst.txt && failed=1
cp "$PG_DIR/server.log" target/pg-burst-server.log
grep -E 'checkpoint (starting|complete)' target/pg-burst-server.log | cut -c1-110
exit "$failed"
