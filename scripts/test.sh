#!/usr/bin/env bash
# Every check CI runs, from a fresh machine: installs what is missing (Debian's chromium and nginx,
# the npm test clients, pyppeteer and kubernetes-validate in venvs under target/, the nightly toolchain and
# cargo-fuzz), then formatting, lints, the Kubernetes manifests against the Kubernetes schemas,
# the full test suite against a real headless Chromium and real Playwright/Puppeteer, a benchmark
# smoke run, and a bounded fuzzing pass.
#
#   scripts/test.sh                 everything
#   FUZZ_SECONDS=0 scripts/test.sh  skip fuzzing (default 10 s per target)
#   FUZZ_SANITIZER=address scripts/test.sh   fuzz with AddressSanitizer (default none here)
#   FUZZ_OPT_LEVEL=3 scripts/test.sh   fuzz targets fully optimized (default 1 here)
#   TEST_THREADS=2 scripts/test.sh  tests at a time in each test binary (default 4)
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-10}"
# CI's short fuzzing pass replays the kept corpus and explores a little; it does not need
# AddressSanitizer, which finds memory errors in unsafe code (every crate of ours but sys/
# forbids it) and made the targets' build the most expensive of CI's (about 1,050 CPU seconds
# against 650 without). Campaigns (scripts/fuzz.sh) keep it.
export FUZZ_SANITIZER="${FUZZ_SANITIZER:-none}"
# And at opt-level 1 without debug info: a third of the CPU of the default build (364 against
# 649 CPU seconds) for about two thirds of its executions per second.
export FUZZ_OPT_LEVEL="${FUZZ_OPT_LEVEL:-1}"
# The end-to-end tests mostly wait (on Chromium, a typing gap, a child's exit): with two at a
# time the machine was half idle; four at a time cut the e2e binary from 546 s to 454 s.
TEST_THREADS="${TEST_THREADS:-4}"
# CI builds from a clean tree once: incremental compilation would only write caches nobody reads.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"; fi

# Each step's wall time, printed as a table when the script ends (also on failure).
t0=$(date +%s)
step_name=""
step_t=$t0
step_log=()
step_end() {
  if [ -n "$step_name" ]; then step_log+=("$(printf '%5d s  %s' $(($(date +%s) - step_t)) "$step_name")"); fi
  step_name=""
}
step() { step_end; step_name="$*"; step_t=$(date +%s); printf '\n==> %s\n' "$*" >&2; }
print_times() {
  step_end
  printf '\nstep times:\n' >&2
  printf '  %s\n' "${step_log[@]}" >&2
  printf '  %5d s  total\n' $(($(date +%s) - t0)) >&2
}
# Jobs started in the background while the workspace compiles: "pid name log" each. All are
# waited for before the first test runs, so no test shares the machine with them.
background=()
on_exit() {
  # A failed step does not orphan a background job (the container preparation runs as root).
  local job
  for job in "${background[@]}"; do wait "${job%% *}" 2>/dev/null || true; done
  print_times
}
trap on_exit EXIT
in_background() {
  local name=$1 log=$2; shift 2
  step "$name: started in the background (log: $log)"
  mkdir -p "$(dirname "$log")"
  "$@" >"$log" 2>&1 &
  background+=("$! $log $name")
}
wait_background() {
  local job pid log name rc failed=0
  for job in "${background[@]}"; do
    read -r pid log name <<<"$job"
    step "waiting for the background job: $name"
    rc=0
    wait "$pid" || rc=$?
    if [ "$rc" -ne 0 ]; then
      tail -n 30 "$log" >&2
      echo "test.sh: $name failed (log above: $log)" >&2
      failed=1
    fi
  done
  background=()
  if [ "$failed" -ne 0 ]; then exit 1; fi
}
# as_root, apt_install
source scripts/lib.sh


# The test clients and the browser: downloads and disk, so a background job while the
# workspace compiles (on a fresh machine apt's chromium alone took most of a minute).
test_prerequisites() {
  if [ -z "${CDP_RELAY_BROWSER:-}" ] && ! command -v chromium >/dev/null 2>&1; then
    step "installing Debian's chromium"
    apt_install chromium
  fi
  if [ ! -x /usr/sbin/nginx ] && ! command -v nginx >/dev/null 2>&1; then
    step "installing Debian's nginx (a peer in the benchmark smoke run)"
    apt_install nginx
  fi
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    step "installing Node.js"
    apt_install nodejs npm
  fi
  if [ ! -d tests/clients/node_modules/playwright-core ] || [ ! -d tests/clients/node_modules/puppeteer-core ] \
     || [ ! -d tests/clients/node_modules/typescript ] || [ tests/clients/package-lock.json -nt tests/clients/node_modules/.package-lock.json ]; then
    step "installing the npm test clients (playwright-core, puppeteer-core, chrome-devtools-mcp, @playwright/mcp; no browser downloads) and TypeScript"
    PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
      npm ci --prefix tests/clients --no-audit --no-fund --loglevel=error
  fi
  local py=target/pyclients
  if [ ! -x "$py/bin/python" ] || [ tests/clients/requirements.txt -nt "$py/installed" ]; then
    step "installing the Python test clients (tests/clients/requirements.txt: pyppeteer) into $py"
    python_venv "$py"
    "$py/bin/pip" install --quiet --disable-pip-version-check -r tests/clients/requirements.txt
    touch "$py/installed"
  fi
  if [ ! -x "$kv/bin/kubernetes-validate" ]; then
    step "installing kubernetes-validate (PyPI) into $kv"
    python_venv "$kv"
    "$kv/bin/pip" install --quiet --disable-pip-version-check kubernetes-validate
  fi
}
# A fresh virtual environment at $1 (Debian's python3-venv when the machine's python3 lacks venv).
python_venv() {
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
    apt_install python3 python3-venv
  fi
  rm -rf "$1"
  if ! python3 -m venv "$1" >/dev/null 2>&1; then
    apt_install python3-venv
    python3 -m venv "$1"
  fi
}
kv=target/kubernetes-validate

# While the workspace compiles (CPU-bound, with idle stretches where one crate or link holds
# the build): the test clients and the browser, the container test's base image (apt installs,
# mmdebstrap from Debian's mirror, podman import: downloads and disk) and the fuzz targets
# (their own nightly build).
in_background "the browser and the test clients" target/test-prerequisites.log test_prerequisites
in_background "the container's base image (scripts/container-test.sh prepare)" \
  target/container/prepare.log scripts/container-test.sh prepare
if [ "$FUZZ_SECONDS" -gt 0 ]; then
  in_background "the fuzz targets' build (scripts/fuzz.sh build)" target/fuzz-build.log \
    scripts/fuzz.sh build
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

if ! command -v cargo-deny >/dev/null 2>&1; then
  # Unoptimized, without its release profile's fat LTO and single codegen unit: 88 CPU seconds
  # instead of several minutes, and the checks CI runs still take under two seconds.
  step "installing cargo-deny (from the Rust package registry, unoptimized) into ~/.cargo/bin"
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 CARGO_PROFILE_RELEASE_OPT_LEVEL=0 \
    CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=false cargo install cargo-deny --locked
fi
step "cargo deny check licenses bans sources (deny.toml: licenses, bans, the one Rust package registry; offline)"
cargo deny check --hide-inclusion-graph licenses bans sources

step "every library without its default features"
cargo check --workspace --lib --locked --no-default-features

step "cargo test --no-run (builds the binary the end-to-end tests run, with the tests' features)"
cargo test --workspace --locked --no-run

wait_background

# The page agent (capture/src/direct/agent.js): JavaScript the relay installs in every page,
# which no Rust test compiles. Type-checked (TypeScript from tests/clients), then its rules run
# on a page of their own in a headless Chromium of its own, before any Rust test starts one.
step "the page agent's type check (tsc -p capture/src/direct/tsconfig.json)"
tests/clients/node_modules/.bin/tsc -p capture/src/direct/tsconfig.json
step "the page agent on its own page (tests/clients/agent_page.mjs: Chromium, no relay)"
timeout -k 10 120 node tests/clients/agent_page.mjs

step "deploy/kubernetes against the Kubernetes schemas (kubernetes-validate, offline)"
# The oldest Kubernetes release still commonly run, and the newest the package knows.
"$kv/bin/kubernetes-validate" --strict --quiet -k 1.29.0 deploy/kubernetes/*.yaml
"$kv/bin/kubernetes-validate" --strict --quiet deploy/kubernetes/*.yaml

step "cargo test ($TEST_THREADS tests at a time per binary)"
cargo test --workspace --locked -- --test-threads "$TEST_THREADS"

# The test build's binary (its features include the tests' env-gated hooks, inert here): a
# release build only for this step would add minutes to CI; scripts/container-test.sh alone
# builds and checks the release binary.
step "the container: deploy/Containerfile built without a registry and checked running (scripts/container-test.sh)"
# s3-server too: `cargo test --no-run` built it (the e2e tests run it), with the tests' features.
CONTAINER_BINARY=target/debug/cdp-relay CONTAINER_S3_SERVER=target/debug/s3-server scripts/container-test.sh

step "benchmark smoke run (tiny sizes: keeps relay-bench working; timings are not tests)"
target/debug/relay-bench all --smoke >/dev/null

if [ "$FUZZ_SECONDS" -gt 0 ]; then
  # Two targets at a time from the kept corpus (fuzz/corpus-kept, where the last campaign
  # ended) and the seeds; new inputs go to target/fuzz-campaign, the kept corpus is not
  # touched (scripts/fuzz.sh without FUZZ_MERGE=0 merges it). Ten targets in five rounds of
  # FUZZ_SECONDS. Built already, in the background while the workspace compiled.
  step "fuzzing each target for ${FUZZ_SECONDS}s, two at a time (sanitizer: $FUZZ_SANITIZER)"
  FUZZ_MERGE=0 scripts/fuzz.sh "$FUZZ_SECONDS"
fi

step "all checks passed"
