#!/usr/bin/env bash
# Runs every test: formatting, clippy for the server (ssr) and browser (hydrate) builds, the Rust
# unit and integration tests, then the browser tests against the real release binary.
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

ensure_cargo
ensure_rust_components
ensure_wasm_target
ensure_cargo_leptos
ensure_wasm_bindgen
ensure_node
ensure_chromium
npm_ci_in end2end

step "cargo fmt --check"
cargo fmt --all -- --check

step "clippy (ssr: app + server)"
cargo clippy -p app -p server --all-targets --locked -- -D warnings

step "clippy (hydrate: app + frontend, wasm)"
cargo clippy -p app -p frontend --target wasm32-unknown-unknown --locked -- -D warnings

step "cargo test (app + server)"
cargo test -p app -p server --locked

step "build the site (cargo leptos)"
build_site

step "browser tests (end2end)"
(cd end2end && npm test)

step "done"
printf '\n%s\n' "${timings[@]}"
printf 'total %ss\n' $((SECONDS - started))
