# Shared by scripts/run.sh and scripts/test.sh: install what is missing, skip what is there.
# Everything comes from a package registry (crates.io, npm, Debian); nothing else is downloaded.

CARGO_LEPTOS_VERSION="0.3.10"

log() { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31merror:\033[0m %s\n' "$*" >&2; exit 1; }

# Runs a command as root: directly when we are root, through sudo otherwise.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else die "need root (or sudo) to run: $*"; fi
}

APT_UPDATED=""
apt_install() {
  command -v apt-get >/dev/null || die "apt-get not found: install $* with your system's package manager"
  if [ -z "$APT_UPDATED" ]; then
    log "apt-get update"
    as_root apt-get update -qq
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_cargo() {
  command -v cargo >/dev/null || die "cargo not found: install Rust with rustup first (https://rustup.rs)"
  export PATH="$HOME/.cargo/bin:$PATH"
}

ensure_wasm_target() {
  if ! rustup target list --installed 2>/dev/null | grep -qx 'wasm32-unknown-unknown'; then
    log "rustup target add wasm32-unknown-unknown"
    rustup target add wasm32-unknown-unknown
  fi
}

ensure_rust_components() {
  for component in clippy rustfmt; do
    if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
      log "rustup component add $component"
      rustup component add "$component"
    fi
  done
}

ensure_cargo_leptos() {
  if ! cargo leptos --version 2>/dev/null | grep -q "$CARGO_LEPTOS_VERSION"; then
    log "cargo install cargo-leptos $CARGO_LEPTOS_VERSION (about 12 minutes, once)"
    cargo install cargo-leptos --locked --version "$CARGO_LEPTOS_VERSION" --features no_downloads
  fi
}

# wasm-bindgen-cli must match the wasm-bindgen crate in Cargo.lock exactly.
wasm_bindgen_lock_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock
}

ensure_wasm_bindgen() {
  local wanted
  wanted="$(wasm_bindgen_lock_version)"
  [ -n "$wanted" ] || die "no wasm-bindgen entry in Cargo.lock"
  if ! wasm-bindgen --version 2>/dev/null | grep -qx "wasm-bindgen $wanted"; then
    log "cargo install wasm-bindgen-cli $wanted (about 2 minutes, once)"
    # Not --locked: the CLI's own lock file names a crate version crates.io no longer serves.
    cargo install wasm-bindgen-cli --version "$wanted" --force
  fi
}

ensure_node() {
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    apt_install nodejs npm
  fi
}

# `npm ci` in a folder when its node_modules is missing or older than its lock file.
npm_ci_in() {
  local dir="$1"
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    log "npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# The release wasm goes through wasm-opt. We use binaryen from npm (tools/): Debian's binaryen 108
# produces a wasm that Chromium rejects. Sets WASM_OPT_READY=1 when wasm-opt is usable.
ensure_wasm_opt() {
  WASM_OPT_READY=""
  if command -v npm >/dev/null; then
    npm_ci_in tools
    export PATH="$PWD/tools/node_modules/.bin:$PATH"
  fi
  if command -v wasm-opt >/dev/null; then WASM_OPT_READY=1; fi
}

ensure_chromium() {
  if [ -n "${CHROMIUM_PATH:-}" ] && [ -x "$CHROMIUM_PATH" ]; then return; fi
  for candidate in /usr/bin/chromium /usr/bin/chromium-browser; do
    if [ -x "$candidate" ]; then export CHROMIUM_PATH="$candidate"; return; fi
  done
  apt_install chromium chromium-driver
  export CHROMIUM_PATH=/usr/bin/chromium
}

# PostgreSQL's server binaries, for the tests that run the suite against PostgreSQL. The tests start
# their own server (a temporary cluster on a free port, as the `postgres` user when run as root);
# any server the package starts is left alone.
ensure_postgres() {
  if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && id postgres >/dev/null 2>&1; then return; fi
  apt_install postgresql
}

# A throwaway PostgreSQL for the benchmarks, with its default durability (fsync on), on a free port,
# as the postgres user when run as root; sets PG_URL. Stopped and removed when the script exits.
start_throwaway_postgres() {
  ensure_postgres
  local bin port
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
  PG_AS=()
  if [ "$(id -u)" -eq 0 ]; then PG_AS=(runuser -u postgres --); fi
  PG_DIR=$(cd /tmp && "${PG_AS[@]}" mktemp -d /tmp/glassbox-bench-pg-XXXXXX)
  PG_BIN=$bin
  (cd /tmp && "${PG_AS[@]}" "$bin/initdb" -D "$PG_DIR/data" -U glassbox --auth=trust -E UTF8 >/dev/null)
  (cd /tmp && "${PG_AS[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
    -o "-p $port -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=300" start >/dev/null)
  trap stop_throwaway_postgres EXIT
  PG_URL="postgres://glassbox@127.0.0.1:$port/postgres"
}

stop_throwaway_postgres() {
  (cd /tmp && "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1) || true
  (cd /tmp && "${PG_AS[@]}" rm -rf "$PG_DIR") || true
}

# What building the site needs: cargo, the wasm target, cargo-leptos, wasm-bindgen-cli, Node.
ensure_build_tools() {
  ensure_cargo
  ensure_wasm_target
  ensure_cargo_leptos
  ensure_wasm_bindgen
  ensure_node
}

# What driving the browser needs: Chromium and the end2end packages.
ensure_browser_tools() {
  ensure_chromium
  npm_ci_in end2end
}

# The MCP servers the tests start for real (tools/mcp: @modelcontextprotocol/server-everything),
# and the AG-UI reference client that drives POST /api/ag-ui (tools/ag-ui-client: @ag-ui/client).
ensure_mcp_servers() {
  ensure_node
  npm_ci_in tools/mcp
  npm_ci_in tools/ag-ui-client
}

# The Python venv for the example AG-UI agents (examples/agents), which the tests start as agents
# over HTTP: Debian's python3, the packages pinned in examples/agents/requirements.lock from PyPI, and
# nothing else. Rebuilt when the lock file changes (its sha256 is stamped in the venv). Exports
# GLASSBOX_AGENT_PYTHON, the venv's python.
ensure_agent_venv() {
  local venv="$PWD/target/agents-venv" lock="$PWD/examples/agents/requirements.lock" wanted
  wanted="$(sha256sum "$lock" | cut -d' ' -f1)"
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.requirements-lock.sha256" 2>/dev/null)" != "$wanted" ]; then
    [ -x /usr/bin/python3 ] || apt_install python3
    rm -rf "$venv"
    # Debian's python3 makes a venv only with python3-venv (ensurepip) installed.
    if ! /usr/bin/python3 -m venv "$venv" >/dev/null 2>&1; then
      rm -rf "$venv"
      apt_install python3-venv
      /usr/bin/python3 -m venv "$venv"
    fi
    log "pip install examples/agents/requirements.lock into target/agents-venv (about a minute, once)"
    "$venv/bin/pip" install --require-virtualenv --disable-pip-version-check --no-input -q -r "$lock"
    echo "$wanted" >"$venv/.requirements-lock.sha256"
  fi
  export GLASSBOX_AGENT_PYTHON="$venv/bin/python"
}

# The AI SDK (npm `ai`, tools/ai-sdk) that server/tests/ai_sdk.rs drives as the real client of the
# UI message stream.
ensure_ai_sdk_client() {
  ensure_node
  npm_ci_in tools/ai-sdk
}

# Builds the server and the hydrate bundle. Release when wasm-opt is available, else debug.
build_site() {
  ensure_wasm_opt
  if [ -n "$WASM_OPT_READY" ]; then
    # --precompress writes .br and .gz beside each asset; the server picks one per Accept-Encoding.
    # --split moves lazily loaded code (the trace page) into wasm chunks of its own.
    log "cargo leptos build --release --precompress --split"
    cargo leptos build --release --precompress --split
    GLASSBOX_BIN="$PWD/target/release/glassbox"
  else
    log "wasm-opt not found (no npm?): building the debug profile instead of release"
    cargo leptos build
    GLASSBOX_BIN="$PWD/target/debug/glassbox"
  fi
  export GLASSBOX_BIN
}
