#!/usr/bin/env bash
# Runs every benchmark in docs/benchmarks.md and prints its figures. It builds the release site and
# the load generator first. It takes about 10 minutes; pass a benchmark's name to run only that one
# (streams, burst (beside the Node.js reference), otlp, ai-sdk, agent, cancel, resume, crash, storage,
# instances, micro, browser, bundle, floor).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh

ensure_build_tools
ensure_browser_tools
build_site
log "cargo build --release -p bench (the load generator)"
cargo build --release -p bench --bin loadgen --locked
loadgen() { target/release/loadgen --binary "$GLASSBOX_BIN" "$@"; }

# Prints a file's size raw, as gzip -9 and as brotli 11 (node's zlib): sizes LABEL FILE.
sizes() {
  node -e '
    const fs = require("fs"), zlib = require("zlib");
    const bytes = fs.readFileSync(process.argv[2]);
    const gzip = zlib.gzipSync(bytes, { level: 9 }).length;
    const brotli = zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
    console.log(`${process.argv[1]}: raw ${bytes.length} B, gzip ${gzip} B, brotli ${brotli} B`);
  ' "$1" "$2"
}

wanted="${1:-all}"
run() { [ "$wanted" = all ] || [ "$wanted" = "$1" ]; }

if run streams; then
  log "streams: 100, 1,000 and 5,000 runs at 5 and at 20 events/s"
  loadgen streams --streams 100,1000,5000 --rate 5 --seconds 10
  loadgen streams --streams 100,1000 --rate 20 --seconds 10
  # 100,000 events/s: beyond what 2 cores carry with the generator beside the server.
  loadgen streams --streams 5000 --rate 20 --seconds 10 || log "5,000 streams x 20 events/s did not complete"
fi
if run burst; then
  log "bursts of new runs (250 deltas at 50/s each): 1,000 over 1 s and 3,000 over 3 s, three times each"
  for _ in 1 2 3; do loadgen burst --runs 1000 --over 1; done
  for _ in 1 2 3; do loadgen burst --runs 3000 --over 3 || log "3,000 over 3 s did not complete"; done
  log "steady streams at 50 events/s: 1,000 and 3,000"
  loadgen streams --streams 1000,3000 --rate 50 --seconds 10 || log "3,000 x 50 events/s did not complete"
  log "beside the issue's reference, a plain Node.js SSE server (bench/reference/node-sse.mjs), in turn"
  beside() { loadgen --reference bench/reference/node-sse.mjs "$@"; }
  for _ in 1 2 3; do beside burst --runs 1000 --over 1; done
  for _ in 1 2 3; do beside burst --runs 3000 --over 3 || log "3,000 over 3 s did not complete"; done
  for _ in 1 2 3; do
    beside streams --streams 1000,3000 --rate 50 --seconds 10 || log "3,000 x 50 events/s did not complete"
  done
fi
if run otlp; then
  log "the OTLP export's cost: 1,000 runs over 10 s (250 deltas at 50/s each), without and with --otlp, interleaved"
  for _ in 1 2 3; do
    loadgen burst --runs 1000 --over 10
    loadgen --otlp burst --runs 1000 --over 10
  done
fi
if run ai-sdk; then
  log "the AI SDK UI message stream beside Glassbox's own SSE: 1,000 runs at 50 events/s, read either way"
  loadgen streams --streams 1000 --rate 50 --seconds 10
  loadgen streams --streams 1000 --rate 50 --seconds 10 --format ai-sdk
fi
if run agent; then
  log "an AG-UI agent's runs beside scenario runs: 1,000 runs at 50 events/s (the agent is loadgen ag-ui-agent)"
  for _ in 1 2 3; do
    loadgen streams --streams 1000 --rate 50 --seconds 10
    loadgen streams --streams 1000 --rate 50 --seconds 10 --agent
  done
fi
if run cancel; then
  log "cancel latency, idle and beside 1,000 streaming runs"
  loadgen cancel --trials 100
  loadgen cancel --trials 100 --background 1000
fi
if run resume; then
  log "resume a 10,000-event run"
  loadgen resume --events 10000 --repeat 20
fi
if run crash; then
  log "crash window"
  loadgen crash --trials 20
fi
if run storage; then
  log "SQLite checkpoint and finalize"
  loadgen storage --events 1000 --traces 20
  log "the writer indexing a checkpoint's finished steps (250 pieces a write over 1,000 running traces), three times"
  for _ in 1 2 3; do loadgen index; done
fi
if run instances; then
  log "two instances on one PostgreSQL: 100 and 1,000 streams at 20 events/s, read on the same and the other instance"
  start_throwaway_postgres
  loadgen instances --database-url "$PG_URL" --streams 100,1000 --rate 20 --seconds 10
fi
if run micro; then
  log "criterion: reducer and sanitizer"
  cargo bench -p bench --bench micro --locked
fi
if run browser; then
  log "browser: streaming render and opening a stored trace"
  (cd end2end && npm run bench)
fi
if run bundle; then
  log "bytes of a first and a second visit, from Chromium's network log"
  (cd end2end && npm run -s bench:transfer)
  log "bundle sizes (raw, gzip -9, brotli 11)"
  # Names carry a content hash (glassbox.<hash>.wasm); the .br and .gz beside them are skipped.
  # With --split: the lazily loaded chunks (split_*.wasm) and their loader (__wasm_split.*.js).
  for file in target/site/pkg/glassbox*.wasm target/site/pkg/split_*.wasm target/site/pkg/glassbox*.js \
    target/site/pkg/__wasm_split.*.js target/site/pkg/glassbox*.css; do
    sizes "$file" "$file"
  done
fi
if run floor; then
  log "the floor: the smallest Leptos app with hydration, the router, a server function and markdown, and the same in islands mode (bench/wasm-floor)"
  floor_dir="$PWD/target/wasm-floor"
  for features in "" router server-fn markdown islands; do
    (cd bench/wasm-floor && CARGO_TARGET_DIR="$floor_dir" cargo build --lib --locked --quiet \
      --target wasm32-unknown-unknown --profile wasm-release ${features:+--features "$features"})
    rm -rf "$floor_dir/pkg"
    wasm-bindgen --target web --no-typescript --out-dir "$floor_dir/pkg" \
      "$floor_dir/wasm32-unknown-unknown/wasm-release/wasm_floor.wasm"
    # The flags cargo-leptos 0.3.10 gives wasm-opt for a release build.
    wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
      "$floor_dir/pkg/wasm_floor_bg.wasm" -o "$floor_dir/pkg/floor.wasm"
    sizes "floor ${features:-(a component and a signal)}" "$floor_dir/pkg/floor.wasm"
  done
fi
