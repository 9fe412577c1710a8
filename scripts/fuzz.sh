#!/usr/bin/env bash
# A fuzzing campaign over every target, two at a time (two cores), each starting from the kept
# corpus (fuzz/corpus-kept/<target>, in the repository) and the seeds (fuzz/seeds/<target>).
# New inputs go to a scratch directory under target/; at the end each target's kept corpus is
# minimized (libFuzzer's merge, what `cargo fuzz cmin` does) from kept + scratch, bounded to
# KEEP_FILES files and KEEP_BYTES bytes, so the next run (and CI's short one) starts there.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]   default 600
#   scripts/fuzz.sh build                  only build the targets (all in one cargo build)
#   scripts/fuzz.sh merge                  only merge what the last run found into the kept corpus
#                                          (after a run where a target crashed: the others' finds)
#   FUZZ_MERGE=0 scripts/fuzz.sh 20        CI: fuzz only, leave the kept corpus untouched
#   FUZZ_PARALLEL=1 scripts/fuzz.sh 60     one target at a time
#   FUZZ_TARGETS="sanitize_text mcp_args" scripts/fuzz.sh 3600   only these targets
#   FUZZ_SANITIZER=none                    no AddressSanitizer (default address; see docs/fuzzing.md)
#   FUZZ_CODEGEN_UNITS=16                  faster build, slower runs (default: cargo fuzz's 1)
#   FUZZ_OPT_LEVEL=1                       faster build, slower runs, no debug info (default 3)
#
# Prints per target: executions, coverage (cov/ft of libFuzzer's final stats), corpus size, and
# the artifact of any crash. Exits non-zero if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_ONLY=0
MERGE_ONLY=0
if [ "${1:-}" = build ]; then BUILD_ONLY=1; shift; fi
if [ "${1:-}" = merge ]; then MERGE_ONLY=1; shift; fi
SECONDS_PER_TARGET="${1:-600}"
FUZZ_MERGE="${FUZZ_MERGE:-1}"
FUZZ_PARALLEL="${FUZZ_PARALLEL:-2}"
KEEP_FILES="${KEEP_FILES:-1000}"
KEEP_BYTES="${KEEP_BYTES:-409600}"
# Longest input kept: 1,000 files of this size stay near the byte bound.
KEEP_MAX_LEN="${KEEP_MAX_LEN:-4096}"
FUZZ_SANITIZER="${FUZZ_SANITIZER:-address}"
FUZZ_CODEGEN_UNITS="${FUZZ_CODEGEN_UNITS:-}"
FUZZ_OPT_LEVEL="${FUZZ_OPT_LEVEL:-3}"
case "$SECONDS_PER_TARGET" in '' | *[!0-9]*)
  echo "usage: scripts/fuzz.sh [build] [SECONDS_PER_TARGET] (a whole number of seconds)" >&2
  exit 2
  ;;
esac
case "$FUZZ_SANITIZER" in address | none) ;; *)
  echo "fuzz: FUZZ_SANITIZER is address or none, not '$FUZZ_SANITIZER'" >&2
  exit 2
  ;;
esac
case "$FUZZ_CODEGEN_UNITS" in *[!0-9]*)
  echo "fuzz: FUZZ_CODEGEN_UNITS is a number, not '$FUZZ_CODEGEN_UNITS'" >&2
  exit 2
  ;;
esac
case "$FUZZ_OPT_LEVEL" in 0 | 1 | 2 | 3) ;; *)
  echo "fuzz: FUZZ_OPT_LEVEL is 0, 1, 2 or 3, not '$FUZZ_OPT_LEVEL'" >&2
  exit 2
  ;;
esac
# The same flags for build, run and merge (different ones would rebuild everything). Another
# flavour than the default builds in its own target directory, so switching rebuilds nothing.
build_flags=(--sanitizer "$FUZZ_SANITIZER")
if [ -n "$FUZZ_CODEGEN_UNITS" ]; then build_flags+=(--codegen-units "$FUZZ_CODEGEN_UNITS"); fi
# A lower optimization level (cargo fuzz builds its release profile) drops the debug info too:
# only crash reports use it, and it is a good part of the build's cost.
if [ "$FUZZ_OPT_LEVEL" != 3 ]; then
  export CARGO_PROFILE_RELEASE_OPT_LEVEL="$FUZZ_OPT_LEVEL" CARGO_PROFILE_RELEASE_DEBUG=0
fi
if [ "$FUZZ_SANITIZER" != address ] || [ -n "$FUZZ_CODEGEN_UNITS" ] || [ "$FUZZ_OPT_LEVEL" != 3 ]; then
  build_flags+=(--target-dir "$PWD/target/fuzz-$FUZZ_SANITIZER-cgu${FUZZ_CODEGEN_UNITS:-1}-o$FUZZ_OPT_LEVEL")
fi

if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

kept=fuzz/corpus-kept
work=target/fuzz-campaign
if [ "$MERGE_ONLY" = 0 ]; then rm -rf "$work"; fi
mkdir -p "$work"
targets=$(cd fuzz && cargo +nightly fuzz list)
if [ -n "${FUZZ_TARGETS:-}" ]; then
  for t in $FUZZ_TARGETS; do
    if ! grep -qx "$t" <<<"$targets"; then
      echo "fuzz: no target '$t' in FUZZ_TARGETS; the targets are: $(echo $targets)" >&2
      exit 2
    fi
  done
  targets=$FUZZ_TARGETS
fi
# Built once up front, all targets in one cargo build: parallel `cargo fuzz run`s would wait on
# each other's build lock.
(cd fuzz && cargo +nightly fuzz build "${build_flags[@]}") >"$work/build.log" 2>&1 || {
  tail -n 40 "$work/build.log" >&2
  echo "fuzz: the fuzz targets do not build (log above)" >&2
  exit 1
}
if [ "$BUILD_ONLY" = 1 ]; then
  exit 0
fi

run_one() {
  local t=$1
  mkdir -p "$work/$t/new" "$work/$t/artifacts" "$kept/$t"
  local dirs=("../$kept/$t")
  if [ -d "fuzz/seeds/$t" ]; then dirs+=("seeds/$t"); fi
  # The first directory receives new inputs: the scratch one, never the kept corpus.
  if (cd fuzz && cargo +nightly fuzz run "${build_flags[@]}" "$t" "../$work/$t/new" "${dirs[@]}" -- \
        -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 \
        -artifact_prefix="../$work/$t/artifacts/") >"$work/$t/log" 2>&1; then
    echo 0 >"$work/$t/rc"
  else
    echo 1 >"$work/$t/rc"
  fi
  # CPU seconds the run got (its children's user + system time): on a shared machine a run of
  # N seconds may get much less of a core.
  # (`times` straight into a file: in a pipeline it would run in a subshell that has no children.)
  times >"$work/$t/times"
  tail -n 1 "$work/$t/times" | awk '{ printf "%d\n", to_s($1) + to_s($2) }
    function to_s(v,  m) { m = v; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", v); sub(/s$/, "", v); return m * 60 + v }' \
    >"$work/$t/cpu"
}

if [ "$MERGE_ONLY" = 0 ]; then
running=0
for t in $targets; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$FUZZ_PARALLEL" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=0
printf '%-18s %7s %12s %8s %9s %8s  %s\n' target cpu_s executions cov ft corpus crash
for t in $targets; do
  log="$work/$t/log"
  # `#123456 DONE cov: 812 ft: 3021 corp: 240/18Kb ...`, or the last stats line before a crash.
  stats=$(grep -E '^#[0-9]+' "$log" | grep -E 'cov: ' | tail -n 1 || true)
  execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$stats")
  done_runs=$(sed -nE 's/^Done ([0-9]+) runs.*/\1/p' "$log" | tail -n 1)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$stats")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$stats")
  corp=$(sed -nE 's/.* corp: ([0-9]+\/[0-9A-Za-z]+).*/\1/p' <<<"$stats")
  crash=-
  if [ "$(cat "$work/$t/rc" 2>/dev/null || echo 1)" != 0 ]; then
    failed=1
    crash=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$log" | tail -n 1)
    crash="${crash:-no artifact: see $log}"
    crash="${crash#../}"
  fi
  printf '%-18s %7s %12s %8s %9s %8s  %s\n' "$t" "$(cat "$work/$t/cpu" 2>/dev/null || echo ?)" "${done_runs:-${execs:-?}}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$crash"
done

if [ "$failed" -ne 0 ]; then
  for t in $targets; do
    if [ "$(cat "$work/$t/rc")" != 0 ]; then
      echo "--- $t ($work/$t/log)" >&2
      grep -E -A12 'panicked|ERROR: ' "$work/$t/log" | head -n 30 >&2 || tail -n 30 "$work/$t/log" >&2
    fi
  done
  echo "fuzz: a target crashed; the kept corpus was not changed. Reproduce with:" >&2
  echo "  (cd fuzz && cargo +nightly fuzz run ${build_flags[*]} TARGET ../ARTIFACT)" >&2
  exit 1
fi
fi
if [ "$FUZZ_MERGE" = 0 ]; then
  exit 0
fi

echo
echo "minimizing the kept corpus ($kept/<target>: at most $KEEP_FILES files, $KEEP_BYTES bytes, inputs of at most $KEEP_MAX_LEN bytes)"
for t in $targets; do
  if [ ! -d "$work/$t/new" ]; then
    echo "fuzz: nothing to merge for $t ($work/$t/new is missing)" >&2
    continue
  fi
  merged="$work/$t/merged"
  rm -rf "$merged"
  mkdir -p "$merged"
  # Merge keeps the smallest set of inputs with the same coverage (what `cargo fuzz cmin` runs).
  # Inputs longer than KEEP_MAX_LEN are left out first so the bound cannot be broken by one file.
  find "$work/$t/new" "$kept/$t" -type f -size +"$KEEP_MAX_LEN"c -delete
  if ! (cd fuzz && cargo +nightly fuzz run "${build_flags[@]}" "$t" "../$merged" "../$kept/$t" "../$work/$t/new" -- \
          -merge=1 -max_len="$KEEP_MAX_LEN" -rss_limit_mb=2048) >"$work/$t/merge.log" 2>&1; then
    tail -n 20 "$work/$t/merge.log" >&2
    echo "fuzz: merging $t's corpus failed; its kept corpus is unchanged" >&2
    exit 1
  fi
  # The bounds: largest files go first (merge already dropped what adds nothing).
  while :; do
    n=$(find "$merged" -type f | wc -l)
    bytes=$(find "$merged" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}')
    if [ "$n" -le "$KEEP_FILES" ] && [ "$bytes" -le "$KEEP_BYTES" ]; then break; fi
    # awk, not head: head's early exit would kill sort with SIGPIPE, which pipefail reports.
    find "$merged" -type f -printf '%s %p\n' | sort -rn | awk 'NR <= 50' | cut -d' ' -f2- | xargs rm -f
  done
  rm -rf "$kept/$t"
  mv "$merged" "$kept/$t"
  printf '%-18s %5d files %9d bytes\n' "$t" "$n" "$bytes"
done
echo "commit fuzz/corpus-kept to keep it: git add fuzz/corpus-kept"
