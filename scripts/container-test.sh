#!/usr/bin/env bash
# Builds deploy/Containerfile without a registry and checks the running image the way a fleet
# runs it (docs/deploy.md, "The container test"):
#   - a Debian base from Debian's mirror with mmdebstrap (cached in target/container/, rebuilt only
#     when its suite or package list changes), `podman import`ed as a local image;
#   - the image built with buildah (--isolation chroot) on that base, `--target prebuilt`: the
#     release binary is built here, outside the image, and copied in;
#   - run with podman and runc, read-only, with the Kubernetes manifest's mounts, args, user and
#     security settings; then checked from outside: user, browser, auth, Playwright, the
#     evidence volume, the health check and probes, SIGTERM -> finalize -> upload to the tests'
#     S3 server within --shutdown-grace, and nothing left running.
# Installs podman, buildah, mmdebstrap, runc and uidmap with apt when missing. Needs root (or
# sudo), the npm test clients (tests/clients/node_modules, as scripts/test.sh installs them) and
# network access to Debian's mirror, which is read from this machine's apt sources.
#
#   scripts/container-test.sh
#   scripts/container-test.sh prepare only the prerequisites and the base image (imported), no
#                                     cargo build: CI runs it while it compiles
#   CONTAINER_SUITE=trixie            the Debian release of the base (default trixie)
#   CONTAINER_MIRROR=url              Debian's mirror (default: the machine's apt sources')
#   CONTAINER_SECURITY_MIRROR=url     its security archive (default: the apt sources', else
#                                     the mirror's URL with -security appended)
#   CONTAINER_KEEP=1                  keep the image and the run's files after the test
#   CONTAINER_BINARY=path             copy this cdp-relay into the image instead of building
#                                     target/release/cdp-relay when it is older than the sources
#   CONTAINER_S3_SERVER=path          run this s3-server instead of building the tests' one
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir=$(pwd)

MODE="${1:-test}"
case "$MODE" in test | prepare) ;; *)
  echo "usage: scripts/container-test.sh [prepare]" >&2
  exit 2
  ;;
esac

SUITE="${CONTAINER_SUITE:-trixie}"
KEEP="${CONTAINER_KEEP:-0}"
work=target/container
BUCKET=fleet
PREFIX=cdp-relay
POD=cdp-relay-0

step() { printf '\n==> %s\n' "$*" >&2; }
die() { printf 'container-test: %s\n' "$*" >&2; exit 1; }
# as_root, apt_install
source scripts/lib.sh

# The URL of the archive whose path ends in /$1 (debian, debian-security) in this machine's apt
# sources, deb822 or one-line, comments left out: the mirror the machine already trusts.
apt_archive() {
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list \
    2>/dev/null | sed 's/#.*//' | grep -oE 'https?://[^ ]+' | sed 's:/*$::' | grep -E "/$1\$" |
    head -n 1 || true
}
MIRROR="${CONTAINER_MIRROR:-$(apt_archive debian)}"
[ -n "$MIRROR" ] ||
  die "no Debian mirror in this machine's apt sources: set CONTAINER_MIRROR to one's URL"
SECURITY="${CONTAINER_SECURITY_MIRROR:-$(apt_archive debian-security)}"
SECURITY="${SECURITY:-$MIRROR-security}"

# Phase timing: each phase's wall time, printed as a table at the end (and on failure).
now() { date +%s.%N; }
t_start=$(now)
phase_name=""
phase_t=""
phase_log=()
phase_end() {
  if [ -n "$phase_name" ]; then
    phase_log+=("$(awk -v a="$phase_t" -v b="$(now)" -v n="$phase_name" 'BEGIN { printf "%7.1f s  %s", b - a, n }')")
  fi
  phase_name=""
}
phase() { phase_end; phase_name="$*"; phase_t=$(now); step "$*"; }
print_times() {
  phase_end
  printf '\ncontainer-test phase times:\n' >&2
  printf '  %s\n' "${phase_log[@]}" >&2
  awk -v a="$t_start" -v b="$(now)" 'BEGIN { printf "  %7.1f s  total\n", b - a }' >&2
}

# Checks: each failure is one line, collected; the script fails at the end if any failed.
failures=()
pass() { printf '  ok    %s\n' "$*" >&2; }
fail() { printf '  FAIL  %s\n' "$*" >&2; failures+=("$*"); }
# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s until it succeeds or the deadline.
wait_for() {
  local secs=$1 what=$2; shift 2
  local deadline; deadline=$(awk -v t="$(now)" -v s="$secs" 'BEGIN { printf "%.3f", t + s }')
  until "$@" >/dev/null 2>&1; do
    if awk -v t="$(now)" -v d="$deadline" 'BEGIN { exit !(t > d) }'; then
      return 1
    fi
    sleep 0.2
  done
  return 0
}

# Podman as these machines need it: runc (crun refuses the hybrid cgroup layout), cgroupfs and
# file events (no systemd), logs in a file (no journald).
pm() { as_root podman --runtime runc --cgroup-manager cgroupfs --events-backend file "$@"; }

# ---------------------------------------------------------------------------------------------
phase "prerequisites (podman, buildah, mmdebstrap, runc, uidmap from Debian; the test clients)"
missing=()
for tool in podman:podman buildah:buildah mmdebstrap:mmdebstrap runc:runc newuidmap:uidmap curl:curl; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  step "installing ${missing[*]}"
  apt_install "${missing[@]}"
fi
# Only the test drives Playwright: scripts/test.sh installs it while the preparation runs.
if [ "$MODE" = test ]; then
  command -v node >/dev/null 2>&1 || die "node is missing: install Node.js (scripts/test.sh does) and retry"
  [ -d tests/clients/node_modules/playwright-core ] \
    || die "tests/clients/node_modules/playwright-core is missing: run \`npm ci --prefix tests/clients\` (scripts/test.sh does) and retry"
fi

# ---------------------------------------------------------------------------------------------
bin=target/release/cdp-relay
s3bin=target/debug/s3-server
if [ "$MODE" = test ]; then
  phase "binaries: the cdp-relay copied into the image and the tests' s3-server"
  if [ -n "${CONTAINER_BINARY:-}" ]; then
    # A binary built elsewhere (e.g. by an earlier CI step), taken as it is.
    [ -x "$CONTAINER_BINARY" ] || die "CONTAINER_BINARY=$CONTAINER_BINARY is not an executable file"
    bin=$CONTAINER_BINARY
  else
    stale=""
    if [ -x "$bin" ]; then
      stale=$(find . -path ./target -prune -o -path ./fuzz -prune -o -path ./tests/clients/node_modules -prune -o \
        \( -name '*.rs' -o -name Cargo.toml -o -name Cargo.lock \) -newer "$bin" -print -quit)
    fi
    if [ ! -x "$bin" ] || [ -n "$stale" ]; then
      step "building $bin ($([ -n "$stale" ] && echo "older than $stale" || echo missing))"
      cargo build --release --locked --bin cdp-relay
    fi
  fi
  if [ -n "${CONTAINER_S3_SERVER:-}" ]; then
    # Built elsewhere (CI: by `cargo test --no-run`, with the tests' features; built alone here
    # it would rebuild the crates under it with another feature set).
    [ -x "$CONTAINER_S3_SERVER" ] || die "CONTAINER_S3_SERVER=$CONTAINER_S3_SERVER is not an executable file"
    s3bin=$CONTAINER_S3_SERVER
  else
    cargo build --locked -p cdp-relay-tests --bin s3-server
  fi
fi

# ---------------------------------------------------------------------------------------------
phase "Debian base ($SUITE, mmdebstrap; cached in $work)"
# The packages are the Containerfile's own apt-get install list, so its RUN finds them installed.
mapfile -t pkgs < <(tr '\n' ' ' < deploy/Containerfile | sed 's/\\ / /g' \
  | grep -o 'apt-get install [^&]*' | head -n 1 | tr -s ' ' '\n' \
  | grep -v -e '^-' -e '^$' -e '^apt-get$' -e '^install$' | sort -u)
[ "${#pkgs[@]}" -gt 0 ] || die "found no apt-get install list in deploy/Containerfile"
sources=("deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY $SUITE-security main")
key=$(printf '%s\n' "minbase" "${sources[@]}" "${pkgs[@]}" | sha256sum | cut -c1-16)
base_tar="$work/base-$SUITE-$key.tar"
mkdir -p "$work"
if [ -s "$base_tar" ]; then
  step "cached: $base_tar"
else
  rm -f "$work"/base-*.tar "$work"/.base-*.tar
  step "mmdebstrap $SUITE with: ${pkgs[*]}"
  as_root mmdebstrap --quiet --variant=minbase --include="$(IFS=,; echo "${pkgs[*]}")" \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    "$SUITE" "$work/.base-$key.tar" "${sources[@]}"
  mv "$work/.base-$key.tar" "$base_tar"
fi

base_image="localhost/cdp-relay-base:$key"
import_base() {
  phase "podman import the base"
  if pm image exists "$base_image"; then
    step "imported already: $base_image"
  else
    pm import --quiet "$base_tar" "$base_image" >/dev/null
  fi
}
if [ "$MODE" = prepare ]; then
  # Left for the test run, which removes it when it ends.
  import_base
  print_times
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# Everything from here on is removed on exit (CONTAINER_KEEP=1 keeps the image and the files).
run_id="$$-$(date +%s)"
image="localhost/cdp-relay-test:$run_id"
ctr="cdp-relay-test-$run_id"
tmp=$(mktemp -d "$root_dir/$work/run.XXXXXX")
s3_pid=""
cleanup() {
  local rc=$?
  set +e
  pm rm -f -t 0 "$ctr" >/dev/null 2>&1
  pm rm -f -t 0 "$ctr-probe" >/dev/null 2>&1
  [ -n "$s3_pid" ] && kill "$s3_pid" 2>/dev/null && wait "$s3_pid" 2>/dev/null
  if [ "$KEEP" != 1 ]; then
    pm rmi -f "$image" >/dev/null 2>&1
    pm rmi -f "$base_image" >/dev/null 2>&1
    as_root rm -rf "$tmp"
  else
    printf 'kept: image %s, files %s\n' "$image" "$tmp" >&2
  fi
  print_times
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

import_base

phase "buildah: deploy/Containerfile --target prebuilt on the local base"
# The context holds only the binary: the prebuilt stage copies target/release/cdp-relay, and the
# repository's .containerignore (sources only) leaves target/ out.
ctx="$tmp/context"
mkdir -p "$ctx/target/release"
ln "$bin" "$ctx/target/release/cdp-relay" 2>/dev/null || cp "$bin" "$ctx/target/release/cdp-relay"
# --format docker keeps HEALTHCHECK (OCI image configs have no such field). BUILD_IMAGE points at
# the local base too, so nothing is ever pulled: the source stage is not built for this target.
as_root buildah bud --quiet --isolation chroot --pull=never --format docker --layers=false \
  --build-arg "BASE_IMAGE=$base_image" --build-arg "BUILD_IMAGE=$base_image" \
  --target prebuilt -f deploy/Containerfile -t "$image" "$ctx" >/dev/null

# ---------------------------------------------------------------------------------------------
phase "static: entrypoint, health check and manifest against the binary in the image"
# Every run: explicit limits within the hard ones (podman's defaults exceed them here and runc
# then fails to set them), no health check timer (podman schedules it with systemd, absent here;
# the check's own command is run in the container below).
hard_nofile=$(ulimit -Hn); hard_nproc=$(ulimit -Hu)
[ "$hard_nofile" = unlimited ] && hard_nofile=65536
[ "$hard_nproc" = unlimited ] && hard_nproc=8192
nofile=$(( hard_nofile < 65536 ? hard_nofile : 65536 ))
nproc=$(( hard_nproc < 8192 ? hard_nproc : 8192 ))
# The manifest's securityContext: all capabilities dropped, no privilege escalation (the user,
# 10001, is the image's; podman's default seccomp profile stands in for RuntimeDefault).
pod_security=(--cap-drop ALL --security-opt no-new-privileges)
run_opts=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc" --no-healthcheck)
entry_json=$(pm image inspect --format '{{json .Config.Entrypoint}}' "$image")
health_json=$(pm image inspect --format '{{json .Config.Healthcheck.Test}}' "$image" 2>/dev/null || true)
user=$(pm image inspect --format '{{.Config.User}}' "$image")
mapfile -t entry < <(node -e 'for (const a of JSON.parse(process.argv[1])) console.log(a)' "$entry_json")
listen=""
for i in "${!entry[@]}"; do [ "${entry[$i]}" = --listen ] && listen=${entry[$((i + 1))]}; done
image_port=${listen##*:}
[ -n "$image_port" ] || die "no --listen in the image's entrypoint: $entry_json"
[ "$user" = "10001:10001" ] && pass "image user is $user" || fail "image user is '$user', not 10001:10001"
if [ -n "$health_json" ] && [ "$health_json" != null ]; then
  if [[ "$health_json" == *"127.0.0.1:$image_port/relay/v1/ready"* ]]; then
    pass "HEALTHCHECK asks /relay/v1/ready on the entrypoint's port $image_port"
  else
    fail "HEALTHCHECK $health_json does not ask http://127.0.0.1:$image_port/relay/v1/ready"
  fi
else
  fail "the image has no HEALTHCHECK"
fi
sts=deploy/kubernetes/statefulset.yaml
container_port=$(awk '/- name: relay/ { n = 1; next } n && /containerPort:/ { print $2; exit }' "$sts")
[ "$container_port" = "$image_port" ] \
  && pass "the manifest's containerPort 'relay' ($container_port) is the entrypoint's port" \
  || fail "the manifest's containerPort '$container_port' is not the entrypoint's --listen port $image_port"
mapfile -t probes < <(awk '/Probe:$/ { p = $1; sub(":$", "", p) } p && /path:/ { print p " " $2 } p && /port:/ { print p " port " $2; p = "" }' "$sts")
probe_paths=()
for line in "${probes[@]}"; do
  set -- $line
  if [ "$2" = port ]; then
    [ "$3" = relay ] && pass "$1 uses the port named relay" || fail "$1 uses port '$3', not relay"
  else
    probe_paths+=("$1 $2")
  fi
done
[ "${#probe_paths[@]}" -ge 3 ] || fail "expected readiness, liveness and startup probes in $sts, found: ${probe_paths[*]:-none}"
# The pod's args, as Kubernetes expands them for pod $POD.
args_json=$(sed -n 's/^ *args: *\(\[.*\]\) *$/\1/p' "$sts" | head -n 1)
mapfile -t pod_args < <(node -e 'for (const a of JSON.parse(process.argv[1])) console.log(a.replace("$(POD_NAME)", process.argv[2]))' "${args_json:-[]}" "$POD")
# The image's own entrypoint with the pod's args: clap answers --help only once every flag parsed.
if out=$(pm run --rm --network none "${run_opts[@]}" --name "$ctr-probe" "$image" "${pod_args[@]}" --help 2>&1) \
   && [[ "$out" == *"Usage: cdp-relay launch"* ]]; then
  pass "the image's entrypoint and the manifest's args (${pod_args[*]}) are accepted by cdp-relay launch"
else
  fail "the image's entrypoint with ${pod_args[*]} --help is refused: $(printf '%s' "$out" | tail -n 1)"
fi
set +e
out=$(pm run --rm --network none "${run_opts[@]}" --name "$ctr-probe" "$image" 2>&1); rc=$?
set -e
[ "$rc" -eq 64 ] && pass "without a token the image refuses to start (exit 64)" \
  || fail "without a token the image exited $rc, not 64: $(printf '%s' "$out" | tail -n 1)"

# ---------------------------------------------------------------------------------------------
phase "start the S3 server and the container (read-only, the manifest's mounts)"
# It serves until its stdin closes: this script holds the fifo's write end, so the server goes
# with the script however the script ends.
mkfifo "$tmp/s3.in"
"$s3bin" "$BUCKET" >"$tmp/s3.env" <"$tmp/s3.in" 2>"$tmp/s3.err" &
s3_pid=$!
exec 9>"$tmp/s3.in"
wait_for 30 "s3-server" grep -qx READY "$tmp/s3.env" || die "s3-server did not start: $(tail -n 3 "$tmp/s3.err")"
mapfile -t s3_env < <(grep '^AWS_' "$tmp/s3.env")
s3_data=$(sed -n 's/^S3_DATA=//p' "$tmp/s3.env")

# The relay's port on the host network: a free one, picked now.
free_port() { node -e 'const s = require("net").createServer().listen(0, process.argv[1], () => { console.log(s.address().port); s.close(); })' "$1"; }
port=$(free_port 0.0.0.0)
host_ip=$(hostname -I 2>/dev/null | awk '{ print $1 }')
host_ip=${host_ip:-127.0.0.1}
token=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
# The manifest's volumes: the token Secret (a directory, 0440, group 10001), the evidence, /tmp
# and /home/relay emptyDirs; nothing else is writable.
mkdir -p "$tmp/secret" "$tmp/evidence" "$tmp/tmpdir" "$tmp/home"
printf '%s' "$token" >"$tmp/secret/token"
chmod 0440 "$tmp/secret/token"
chmod 0755 "$tmp/secret"
as_root chown -R 10001:10001 "$tmp/evidence" "$tmp/tmpdir" "$tmp/home"
as_root chown root:10001 "$tmp/secret/token"

# The image's entrypoint with only the port changed: with --network=host a fixed port could be taken.
run_entry=$(node -e 'const e = JSON.parse(process.argv[1]); console.log(JSON.stringify(e.map(a => a.replace(/^0\.0\.0\.0:\d+$/, "0.0.0.0:" + process.argv[2]))))' "$entry_json" "$port")
env_args=()
for kv in "${s3_env[@]}"; do env_args+=(-e "$kv"); done
t_run=$(now)
pm run -d --name "$ctr" --network host "${run_opts[@]}" "${pod_security[@]}" \
  --read-only --read-only-tmpfs=false \
  --log-driver k8s-file \
  -v "$tmp/secret:/var/run/secrets/cdp-relay:ro" \
  -v "$tmp/evidence:/var/lib/cdp-relay/evidence" \
  -v "$tmp/tmpdir:/tmp" -v "$tmp/home:/home/relay" \
  -e POD_NAME="$POD" -e CDP_RELAY_TOKEN_FILE=/var/run/secrets/cdp-relay/token \
  -e CDP_RELAY_EVIDENCE_UPLOAD="s3://$BUCKET/$PREFIX" "${env_args[@]}" \
  --entrypoint "$run_entry" "$image" "${pod_args[@]}" >/dev/null
logs() { pm logs "$ctr" 2>&1 | tail -n "${1:-20}"; }
base_url="http://$host_ip:$port"
ready() { [ "$(curl -fsS --max-time 2 "$base_url/relay/v1/ready")" = ready ]; }
if ! wait_for 60 "ready" ready; then
  printf '%s\n' "--- container log (last 30 lines)" >&2; logs 30 >&2
  die "the container did not answer ready on $base_url/relay/v1/ready within 60 s"
fi
awk -v a="$t_run" -v b="$(now)" 'BEGIN { printf "  ready %.1f s after podman run\n", b - a }' >&2

# ---------------------------------------------------------------------------------------------
phase "checks against the running container"
pid1=$(pm inspect --format '{{.State.Pid}}' "$ctr")
# The container's processes, seen from the host: the tree under its PID 1.
tree() {
  ps -e -o pid=,ppid=,uid=,comm= | awk -v root="$pid1" '
    { pid[NR] = $1; ppid[NR] = $2; line[NR] = $0 }
    END { keep[root] = 1; changed = 1
      while (changed) { changed = 0
        for (i = 1; i <= NR; i++) if (!(pid[i] in keep) && (ppid[i] in keep)) { keep[pid[i]] = 1; changed = 1 } }
      for (i = 1; i <= NR; i++) if (pid[i] in keep) print line[i] }'
}
procs=$(tree)
not_ours=$(printf '%s\n' "$procs" | awk '$3 != 10001')
[ -z "$not_ours" ] && pass "every process in the container runs as uid 10001 ($(printf '%s\n' "$procs" | wc -l) processes)" \
  || fail "processes not running as uid 10001: $(printf '%s' "$not_ours" | tr '\n' ';')"
[ "$(printf '%s\n' "$procs" | awk 'NR == 1 { print $4 }')" = tini ] && pass "PID 1 is tini" \
  || fail "PID 1 is $(printf '%s\n' "$procs" | awk 'NR == 1 { print $4 }'), not tini"
mapfile -t chromium_pids < <(printf '%s\n' "$procs" | awk '$4 ~ /^chrom/ { print $1 }')
if [ "${#chromium_pids[@]}" -gt 0 ]; then
  pass "Chromium runs (${#chromium_pids[@]} processes)"
  if tr '\0' '\n' <"/proc/${chromium_pids[0]}/cmdline" | grep -qx -e --no-sandbox; then
    pass "Chromium runs with --no-sandbox (CDP_RELAY_BROWSER_NO_SANDBOX=true: see docs/deploy.md)"
  else
    fail "Chromium's command line has no --no-sandbox, though the image sets CDP_RELAY_BROWSER_NO_SANDBOX=true"
  fi
else
  fail "no Chromium process in the container: $(printf '%s' "$procs" | tr '\n' ';')"
fi

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true; }
for path in /relay/v1/live /relay/v1/ready; do
  c=$(code "$base_url$path")
  [ "$c" = 200 ] && pass "GET $path without the token: 200" || fail "GET $path without the token: $c, not 200"
done
for path in /json/version /json/list /relay/v1/status /relay/v1/metrics; do
  c=$(code "$base_url$path")
  [ "$c" = 401 ] && pass "GET $path without the token: 401" || fail "GET $path without the token: $c, not 401"
  c=$(code -H "Authorization: Bearer wrong-$token" "$base_url$path")
  [ "$c" = 401 ] && pass "GET $path with a wrong token: 401" || fail "GET $path with a wrong token: $c, not 401"
  c=$(code -H "Authorization: Bearer $token" "$base_url$path")
  [ "$c" = 200 ] && pass "GET $path with the token: 200" || fail "GET $path with the token: $c, not 200"
done
version=$(curl -fsS --max-time 5 -H "Authorization: Bearer $token" "$base_url/json/version" || true)
[[ "$version" == *'"Browser"'*Chrom* ]] && pass "the browser answers /json/version through the relay" \
  || fail "/json/version with the token did not name the browser: ${version:0:200}"

# The health check's own command, inside the container, on the port the relay listens on here.
if [ -n "$health_json" ] && [ "$health_json" != null ]; then
  mapfile -t hc < <(node -e 'const t = JSON.parse(process.argv[1]); if (t[0] === "CMD") for (const a of t.slice(1)) console.log(a.replace(":" + process.argv[2] + "/", ":" + process.argv[3] + "/"))' "$health_json" "$image_port" "$port")
  if [ "${#hc[@]}" -gt 0 ] && pm exec "$ctr" "${hc[@]}" >/dev/null 2>&1; then
    pass "the HEALTHCHECK command succeeds in the container (${hc[*]})"
  else
    fail "the HEALTHCHECK command fails in the container: ${hc[*]:-not an exec-form CMD: $health_json}"
  fi
fi
for pp in "${probe_paths[@]}"; do
  set -- $pp
  c=$(code "$base_url$2")
  [ "$c" = 200 ] && pass "$1 GET $2 without the token: 200" || fail "$1 GET $2 without the token: $c, not 200"
done

# Read-only: the root is mounted read-only, and the only writable mounts are the manifest's
# volumes (besides the kernel's and the runtime's own: /proc, /sys, /dev, /dev/shm, the files
# podman writes for name resolution; Kubernetes adds the same).
mounts=$(awk '{ split($0, parts, " - "); split(parts[2], fs, " "); print $5, $6, fs[1] }' "/proc/$pid1/mountinfo")
root_opts=$(printf '%s\n' "$mounts" | awk '$1 == "/" { print $2 }' | tail -n 1)
[[ ",$root_opts," == *,ro,* ]] && pass "the root file system is read-only" || fail "the root file system is mounted $root_opts"
unexpected=$(printf '%s\n' "$mounts" | awk '
  $2 !~ /(^|,)rw(,|$)/ { next }
  $1 == "/var/lib/cdp-relay/evidence" || $1 == "/tmp" || $1 == "/home/relay" { next }
  $3 ~ /^(proc|sysfs|devpts|mqueue|cgroup2?)$/ { next }
  $3 == "tmpfs" && ($1 == "/dev" || $1 == "/dev/shm") { next }
  $1 ~ /^\/(etc\/(hosts|hostname|resolv\.conf)|run\/\.containerenv)$/ { next }
  $1 ~ /^\/(proc|sys)\// { next }
  { print $1 " (" $3 ")" }')
[ -z "$unexpected" ] && pass "writable mounts are only the manifest's volumes" \
  || fail "writable mounts beyond the manifest's volumes: $(printf '%s' "$unexpected" | tr '\n' ' ')"
if pm exec -u 0 "$ctr" sh -c 'echo x > /usr/local/bin/.w' >/dev/null 2>&1; then
  fail "root in the container could write /usr/local/bin"
else
  pass "even root in the container cannot write the image's files"
fi

# Playwright through the container's port, the README's way: connectOverCDP with the token in
# an Authorization header. It loads a page this script serves, which logs a console error and
# asks for a missing file (a run with failures), and leaves a screenshot.
cat >"$tmp/client.js" <<'EOF'
const http = require('http');
const { chromium } = require('playwright-core');
const [url, token] = process.argv.slice(2);
const page_html = '<!doctype html><title>container test</title><h1 id="h">container test</h1>' +
  '<script>console.error("container-test console error"); fetch("/container-test-missing");</script>';
const site = http.createServer((req, res) => {
  if (req.url === '/container-test.html') { res.writeHead(200, { 'content-type': 'text/html' }); res.end(page_html); }
  else { res.writeHead(404); res.end('missing'); }
});
(async () => {
  await new Promise(r => site.listen(0, '127.0.0.1', r));
  const pageUrl = `http://127.0.0.1:${site.address().port}/container-test.html`;
  const browser = await chromium.connectOverCDP(url, { headers: { Authorization: `Bearer ${token}` }, timeout: 30000 });
  const context = browser.contexts()[0] || await browser.newContext();
  const page = await context.newPage();
  const failed = page.waitForResponse(r => r.url().endsWith('/container-test-missing'), { timeout: 30000 });
  await page.goto(pageUrl, { timeout: 30000 });
  await failed;
  const text = await page.textContent('#h');
  if (text !== 'container test') throw new Error(`the page says ${text}`);
  await page.screenshot();
  await page.close();
  await browser.close();
  return pageUrl;
  // Exit at once: the browser may hold a keep-alive connection to the site open.
})().then(u => { console.log(u); process.exit(0); },
          e => { console.error(String(e && e.message || e).split('\n')[0]); process.exit(1); });
EOF
# The same port without a token refuses the websocket before it reaches the browser.
cat >"$tmp/ws.js" <<'EOF'
const http = require('http');
const [base, path, token] = process.argv.slice(2);
const headers = { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'Y29udGFpbmVyLXRlc3Qtd3M9PQ==' };
if (token) headers.Authorization = `Bearer ${token}`;
const req = http.request(base + path, { headers, timeout: 5000 });
req.on('upgrade', (res, socket) => { console.log(res.statusCode); socket.destroy(); });
req.on('response', res => { console.log(res.statusCode); res.resume(); });
req.on('timeout', () => { console.log('timeout'); req.destroy(); });
req.on('error', e => console.log('error ' + e.code));
req.end();
EOF
ws_path=$(printf '%s' "$version" | node -e 'let s = ""; process.stdin.on("data", d => s += d).on("end", () => { try { console.log(new URL(JSON.parse(s).webSocketDebuggerUrl).pathname) } catch { console.log("/devtools/browser") } })')
c=$(NODE_PATH=tests/clients/node_modules node "$tmp/ws.js" "$base_url" "$ws_path" "")
[ "$c" = 401 ] && pass "the browser websocket without the token: 401" || fail "the browser websocket without the token: $c, not 401"
c=$(NODE_PATH=tests/clients/node_modules node "$tmp/ws.js" "$base_url" "$ws_path" "$token")
[ "$c" = 101 ] && pass "the browser websocket with the token: 101" || fail "the browser websocket with the token: $c, not 101"
t_pw=$(now)
if page_url=$(NODE_PATH=tests/clients/node_modules timeout 90 node "$tmp/client.js" "$base_url" "$token" 2>"$tmp/client.err"); then
  pass "Playwright connectOverCDP through $base_url with the token: page loaded, screenshot taken ($(awk -v a="$t_pw" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'))"
else
  fail "Playwright through $base_url: $(tail -n 1 "$tmp/client.err" | grep . || echo 'no answer within 90 s')"
  page_url=""
fi
run_dir=$(as_root find "$tmp/evidence/runs" -mindepth 1 -maxdepth 1 -type d ! -name '.*' 2>/dev/null | head -n 1)
run=${run_dir##*/}
journal="$run_dir/actions.jsonl"
if [ -n "$run" ] && [ -n "$page_url" ] && wait_for 20 "journal" as_root grep -q "container-test.html" "$journal"; then
  pass "the run $run in the mounted volume records the page"
else
  fail "no run in the mounted evidence volume records the page (${run:-no run directory})"
fi
[ -n "$(as_root find "$s3_data/$BUCKET/$PREFIX" -name .cdp-relay-write-check 2>/dev/null)" ] \
  && pass "the relay wrote its start check to the bucket" || fail "no $PREFIX/.cdp-relay-write-check in the bucket"

phase "note: Chromium's own sandbox under the manifest's security settings"
# Not a check: whether Chromium's own sandbox could run under the manifest's security settings
# (docs/deploy.md says why the image turns it off). The relay exits if the browser cannot start.
sbx_port=$(free_port 127.0.0.1)
pm run -d --name "$ctr-probe" --network host "${run_opts[@]}" "${pod_security[@]}" \
  -e CDP_RELAY_TOKEN="$token" -e CDP_RELAY_BROWSER_NO_SANDBOX=false \
  --entrypoint "$(printf '%s' "$run_entry" | sed "s/0\.0\.0\.0:$port/127.0.0.1:$sbx_port/")" "$image" --no-evidence >/dev/null
sbx_answer() { [ "$(curl -fsS --max-time 2 "http://127.0.0.1:$sbx_port/relay/v1/ready")" = ready ] \
  || [ "$(pm inspect --format '{{.State.Status}}' "$ctr-probe")" = exited ]; }
wait_for 30 "sandbox probe" sbx_answer || true
if [ "$(curl -fsS --max-time 2 "http://127.0.0.1:$sbx_port/relay/v1/ready" 2>/dev/null)" = ready ]; then
  step "note: Chromium's sandbox DOES start under the manifest's security settings on this host"
else
  step "note: with its sandbox on, Chromium does not start under the manifest's security settings: $(pm logs "$ctr-probe" 2>&1 | grep -o 'FATAL:[^|]*' | head -n 1)"
fi
pm rm -f -t 0 "$ctr-probe" >/dev/null 2>&1 || true

# ---------------------------------------------------------------------------------------------
phase "podman stop: SIGTERM to PID 1, finalize, upload within --shutdown-grace"
grace=25
for i in "${!entry[@]}"; do [ "${entry[$i]}" = --shutdown-grace ] && grace=${entry[$((i + 1))]}; done
t_stop=$(now)
pm stop -t $((grace + 10)) "$ctr" >/dev/null
stop_s=$(awk -v a="$t_stop" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
exit_code=$(pm inspect --format '{{.State.ExitCode}}' "$ctr")
if awk -v s="$stop_s" -v g="$grace" 'BEGIN { exit !(s < g) }'; then
  pass "the container stopped ${stop_s} s after SIGTERM (grace ${grace} s), exit $exit_code"
else
  fail "the container took ${stop_s} s to stop after SIGTERM; --shutdown-grace is ${grace} s"
fi
[ "$exit_code" = 0 ] || fail "the container exited $exit_code after SIGTERM, not 0: $(logs 1)"
state=$(as_root cat "$run_dir/upload.json" 2>/dev/null | node -e 'let s = ""; process.stdin.on("data", d => s += d).on("end", () => { try { console.log(JSON.parse(s).state) } catch { console.log("unreadable") } })')
[ "$state" = uploaded ] && pass "upload.json in the volume says uploaded" || fail "upload.json in the volume says '$state', not uploaded"
manifest="$s3_data/$BUCKET/$PREFIX/$run/manifest.json"
if [ -n "$run" ] && as_root test -s "$manifest" && as_root grep -q '"finalized"' "$manifest"; then
  pass "the finalized run's manifest is in the bucket ($(as_root find "$s3_data/$BUCKET/$PREFIX/$run" -type f | wc -l) objects)"
else
  fail "no finalized manifest for run ${run:-?} in the bucket"
fi
listed=$(env "${s3_env[@]}" "$bin" runs --remote "s3://$BUCKET/$PREFIX" --session "$POD" --json 2>&1 || true)
[[ -n "$run" && "$listed" == *"$run"* ]] && pass "cdp-relay runs --remote lists $run in session $POD" \
  || fail "cdp-relay runs --remote --session $POD does not list ${run:-the run}: ${listed:0:200}"
ctr_state=$(pm inspect --format '{{.State.Status}}' "$ctr")
[ "$ctr_state" = exited ] && pass "the container has exited" || fail "the container is '$ctr_state' after podman stop"
left=""
for p in "$pid1" "${chromium_pids[@]}"; do kill -0 "$p" 2>/dev/null && left+=" $p"; done
[ -z "$left" ] && [ -z "$(ps -u 10001 -o pid= 2>/dev/null)" ] && pass "nothing left running (no tini, relay or Chromium)" \
  || fail "still running after stop:$left $(ps -u 10001 -o pid=,comm= 2>/dev/null | tr '\n' ' ')"

phase_end
if [ "${#failures[@]}" -gt 0 ]; then
  printf '\ncontainer-test: %d check(s) failed:\n' "${#failures[@]}" >&2
  printf '  %s\n' "${failures[@]}" >&2
  exit 1
fi
printf '\ncontainer-test: all checks passed\n' >&2
