#!/usr/bin/env bash
# Runs the relay benchmark side by side (direct, cdp-relay with and without evidence, nginx,
# node-http-proxy) against real Chromium and against the synthetic upstream, BENCH_RUNS times
# (default 3), and rewrites the "Relay overhead" section of BENCHMARKS.md with the tables.
# Installs what it needs when missing (Debian's chromium and nginx, the npm clients).
#
#   scripts/bench.sh                 three full runs (about 10 minutes)
#   BENCH_RUNS=1 scripts/bench.sh    one run
#   scripts/bench.sh --smoke         tiny sizes, prints the tables, leaves BENCHMARKS.md alone
#   BENCH_MCP_FEEDBACK=1 scripts/bench.sh [--smoke]
#                                    also, once, `relay-bench mcp-feedback` (the real browser MCP
#                                    servers through `cdp-relay mcp` with and without feedback:
#                                    about 10 minutes, a minute with --smoke); its table goes to
#                                    stdout, for the hand-written "Feedback in tool results" section
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${BENCH_RUNS:-3}"
SMOKE=""
if [ "${1:-}" = "--smoke" ]; then SMOKE="--smoke"; RUNS=1; fi

# as_root, apt_install
source scripts/lib.sh
need_apt=()
command -v chromium >/dev/null 2>&1 || [ -n "${CDP_RELAY_BROWSER:-}" ] || need_apt+=(chromium)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || need_apt+=(nginx)
if [ "${#need_apt[@]}" -gt 0 ]; then apt_install "${need_apt[@]}"; fi
if [ ! -d tests/clients/node_modules/http-proxy ]; then
  PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    npm ci --prefix tests/clients --no-audit --no-fund --loglevel=error
fi

cargo build --release --locked --bin cdp-relay -p cdp-relay-tests --bins >&2

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for i in $(seq 1 "$RUNS"); do
  echo "==> run $i/$RUNS" >&2
  {
    echo "#### Run $i"
    echo
    target/release/relay-bench all $SMOKE | sed 's/^### /##### /; s/^#### /###### /'
  } >>"$out"
done

if [ "${BENCH_MCP_FEEDBACK:-0}" = 1 ]; then
  echo "==> mcp-feedback" >&2
  target/release/relay-bench mcp-feedback $SMOKE
fi

if [ -n "$SMOKE" ]; then
  cat "$out"
  exit 0
fi

machine="$(nproc) vCPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, Linux $(uname -r), $(rustc --version | cut -d' ' -f1-2), $(chromium --version 2>/dev/null | head -1), $(/usr/sbin/nginx -v 2>&1 | cut -d: -f2 | sed 's/^ *//')"
python3 - "$out" "$machine" <<'PY'
import re, sys
tables, machine = open(sys.argv[1]).read(), sys.argv[2]
path = "BENCHMARKS.md"
doc = open(path).read()
begin, end = "<!-- relay-bench:begin -->", "<!-- relay-bench:end -->"
block = f"{begin}\n\nMachine: {machine}. Measured by `scripts/bench.sh`.\n\n{tables}\n{end}"
if begin in doc:
    doc = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, doc, flags=re.S)
else:
    doc = doc.rstrip() + "\n\n" + block + "\n"
open(path, "w").write(doc)
PY
echo "BENCHMARKS.md updated" >&2
