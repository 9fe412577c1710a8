#!/usr/bin/env bash
# Runs cdp-relay's main job on a fresh machine: installs Debian's chromium when no browser is
# found, builds the release binary, and starts `cdp-relay launch` (headless Chromium on a
# temporary profile, relayed on 127.0.0.1:9223 by default). Extra arguments go to `launch`,
# e.g. `scripts/run.sh --listen 127.0.0.1:0` or `scripts/run.sh -- --window-size=1280,800`.
set -euo pipefail
cd "$(dirname "$0")/.."
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if [ -z "${CDP_RELAY_BROWSER:-}" ] && ! command -v chromium >/dev/null 2>&1 \
   && ! command -v chromium-browser >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1 \
   && ! command -v google-chrome-stable >/dev/null 2>&1; then
  echo "==> no Chromium found; installing Debian's chromium" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
cargo build --release --locked --bin cdp-relay >&2
exec target/release/cdp-relay launch "$@"
