#!/usr/bin/env bash
# The README's first command. On a fresh Debian/Ubuntu machine with Rust: installs Debian's
# chromium when no browser is found, builds the release binary, and runs `cdp-relay demo` —
# Chromium behind the relay, driven through a small built-in web app — which ends by printing the
# path of the report.html it recorded.
#
#   scripts/run.sh                      the demo; extra arguments go to `demo` (e.g. --headed)
#   scripts/run.sh launch [ARGS...]     any other cdp-relay command instead, e.g. `launch`
set -euo pipefail
cd "$(dirname "$0")/.."
# as_root, apt_install
source scripts/lib.sh
if [ -z "${CDP_RELAY_BROWSER:-}" ] && ! command -v chromium >/dev/null 2>&1 \
   && ! command -v chromium-browser >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1 \
   && ! command -v google-chrome-stable >/dev/null 2>&1; then
  echo "==> no Chromium found; installing Debian's chromium" >&2
  apt_install chromium
fi
echo "==> building cdp-relay (release)" >&2
cargo build --release --locked --bin cdp-relay >&2
case "${1:-}" in
  ""|-*) exec target/release/cdp-relay demo "$@" ;;
  *) exec target/release/cdp-relay "$@" ;;
esac
