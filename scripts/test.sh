#!/usr/bin/env bash
# Runs every test: formatting, clippy for the server (ssr) and browser (hydrate) builds, the Rust
# unit and integration tests (the integration tests twice: on SQLite, then on PostgreSQL), then the browser tests against the real release binary, and a
# small run of the benchmarks' load generator.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh

started=$SECONDS
step_start=$SECONDS
timings=()
step() {
  timings+=("$(printf '%-34s %4ss' "$current_step" $((SECONDS - step_start)))")
  current_step="$1"
  step_start=$SECONDS
  log "$1"
}
current_step="setup"

ensure_build_tools
ensure_rust_components
ensure_browser_tools
ensure_mcp_servers
ensure_agent_venv
ensure_ai_sdk_client
ensure_postgres

# A test run builds once: incremental state (7 GB on a fresh clone) only costs disk here.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

step "cargo fmt --check"
cargo fmt --all -- --check

step "clippy (ssr: app + server + bench)"
cargo clippy -p app -p server -p bench --all-targets --locked -- -D warnings

step "clippy (hydrate: app + frontend, wasm)"
cargo clippy -p app -p frontend --target wasm32-unknown-unknown --locked -- -D warnings

step "cargo test (app + server + bench)"
cargo test -p app -p server -p bench --locked

# The same integration tests (engine, HTTP API, exports, crash recovery, accounts) against a real
# PostgreSQL that the tests start themselves (server/tests/common/postgres.rs).
step "cargo test (server, on PostgreSQL)"
# The tests of several instances are #[ignore]d on SQLite (reported as skipped there) and run here.
GLASSBOX_TEST_STORE=postgres cargo test -p app -p server -p bench --locked --test '*' -- --include-ignored

step "build the site (cargo leptos)"
build_site

step "browser tests (end2end)"
(cd end2end && npm test)

# The benchmarks' load generator, at a tiny scale: it must keep working against the real binary
# (scripts/bench.sh runs it at full scale).
step "load generator smoke run (bench)"
# The same packages and targets as `cargo test`, so the features unify the same way and only the
# loadgen binary links (`-p bench` alone rebuilt the server library with other features).
cargo build -p app -p server -p bench --bins --tests --locked
loadgen() { target/debug/loadgen --binary "$GLASSBOX_BIN" "$@"; }
loadgen streams --streams 20 --rate 20 --seconds 1
loadgen streams --streams 20 --rate 20 --seconds 1 --format ai-sdk
loadgen burst --runs 50 --over 0.5 --deltas 20
loadgen --reference bench/reference/node-sse.mjs burst --runs 50 --over 0.5 --deltas 20
loadgen --otlp burst --runs 50 --over 0.5 --deltas 20
loadgen cancel --trials 3
loadgen resume --events 500 --repeat 2
loadgen crash --trials 2
loadgen storage --events 200 --traces 2
loadgen index --runs 20 --writes 4
start_throwaway_postgres
loadgen instances --database-url "$PG_URL" --streams 20 --rate 20 --seconds 1

step "done"
printf '\n%s\n' "${timings[@]}"
printf 'total %ss\n' $((SECONDS - started))
