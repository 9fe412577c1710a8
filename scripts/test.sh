#!/usr/bin/env bash
# Every check CI runs, from a fresh machine: installs what is missing (Debian's chromium and nginx,
# the npm test clients, pyppeteer and kubernetes-validate in venvs under target/, the nightly toolchain and
# cargo-fuzz), then formatting, lints, the Kubernetes manifests against the Kubernetes schemas,
# the full test suite against a real headless Chromium and real Playwright/Puppeteer, a benchmark
# smoke run, and a bounded fuzzing pass.
#
#   scripts/test.sh                 everything
#   FUZZ_SECONDS=0 scripts/test.sh  skip fuzzing (default 20 s per target)
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
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
container_prepare=""
on_exit() {
  # A failed step does not orphan the background preparation (it runs as root).
  if [ -n "$container_prepare" ]; then wait "$container_prepare" 2>/dev/null || true; fi
  print_times
}
trap on_exit EXIT
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" -eq 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  # Waits for dpkg's lock: the container preparation may be installing at the same time.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$@" >/dev/null
}

step "prerequisites"
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
   || [ tests/clients/package-lock.json -nt tests/clients/node_modules/.package-lock.json ]; then
  step "installing the npm test clients (playwright-core, puppeteer-core, chrome-devtools-mcp, @playwright/mcp; no browser downloads)"
  PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    npm ci --prefix tests/clients --no-audit --no-fund --loglevel=error
fi

py=target/pyclients
if [ ! -x "$py/bin/python" ] || [ tests/clients/requirements.txt -nt "$py/installed" ]; then
  step "installing the Python test clients (tests/clients/requirements.txt: pyppeteer) into $py"
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
    apt_install python3 python3-venv
  fi
  rm -rf "$py"
  if ! python3 -m venv "$py" >/dev/null 2>&1; then
    apt_install python3-venv
    python3 -m venv "$py"
  fi
  "$py/bin/pip" install --quiet --disable-pip-version-check -r tests/clients/requirements.txt
  touch "$py/installed"
fi

if ! command -v cargo-deny >/dev/null 2>&1; then
  step "installing cargo-deny (crates.io) into ~/.cargo/bin"
  cargo install cargo-deny --locked
fi

# The container test's base image (apt installs, mmdebstrap from Debian's mirror, podman import:
# mostly downloads and disk) is prepared in the background while the workspace compiles; it is
# waited for before any test runs, so no test shares the machine with it.
step "container base image: started in the background (log: target/container/prepare.log)"
mkdir -p target/container
scripts/container-test.sh prepare >target/container/prepare.log 2>&1 &
container_prepare=$!
wait_container_prepare() {
  if [ -z "$container_prepare" ]; then return 0; fi
  step "waiting for the container base image (scripts/container-test.sh prepare)"
  local rc=0
  wait "$container_prepare" || rc=$?
  container_prepare=""
  if [ "$rc" -ne 0 ]; then
    tail -n 30 target/container/prepare.log >&2
    echo "test.sh: preparing the container base image failed (log above, target/container/prepare.log)" >&2
    exit 1
  fi
  grep -E '^ +[0-9.]+ s ' target/container/prepare.log >&2 || true
}

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo deny check licenses bans sources (deny.toml: licenses, bans, crates.io only; offline)"
cargo deny check --hide-inclusion-graph licenses bans sources

step "every library without its default features"
cargo check --workspace --lib --locked --no-default-features

step "deploy/kubernetes against the Kubernetes schemas (kubernetes-validate, offline)"
kv=target/kubernetes-validate
if [ ! -x "$kv/bin/kubernetes-validate" ]; then
  step "installing kubernetes-validate (PyPI) into $kv"
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
    apt_install python3 python3-venv
  fi
  rm -rf "$kv"
  if ! python3 -m venv "$kv" >/dev/null 2>&1; then
    apt_install python3-venv
    python3 -m venv "$kv"
  fi
  "$kv/bin/pip" install --quiet --disable-pip-version-check kubernetes-validate
fi
# The oldest Kubernetes release still commonly run, and the newest the package knows.
"$kv/bin/kubernetes-validate" --strict --quiet -k 1.29.0 deploy/kubernetes/*.yaml
"$kv/bin/kubernetes-validate" --strict --quiet deploy/kubernetes/*.yaml

step "cargo test --no-run (builds the binary the end-to-end tests run, with the tests' features)"
cargo test --workspace --locked --no-run

wait_container_prepare

step "cargo test"
cargo test --workspace --locked

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
  # FUZZ_SECONDS: less time than seven targets one after another.
  step "fuzzing each target for ${FUZZ_SECONDS}s, two at a time"
  FUZZ_MERGE=0 scripts/fuzz.sh "$FUZZ_SECONDS"
fi

step "all checks passed"
