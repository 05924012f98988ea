#!/usr/bin/env bash
# Builds Glassbox and serves it on http://127.0.0.1:3000 with its embedded defaults: a SQLite file
# in ./data and the built-in demo agent. Extra arguments go to the server (see `--help`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/setup.sh

ensure_build_tools
build_site

log "starting $GLASSBOX_BIN (Ctrl+C stops it)"
exec "$GLASSBOX_BIN" "$@"
