#!/usr/bin/env bash
# Wake-ups of an idle relay, per thread: starts `cdp-relay launch` (headless Chromium, evidence
# on, the direct reader on), waits until it serves, then reads every thread's context switches
# (voluntary + nonvoluntary, /proc/PID/task/*/status) twice, SECONDS apart, and prints each
# thread's wake-ups per second. The relay and its browser are stopped at the end.
#
# Usage: scripts/wakeups.sh [SECONDS]   (default 10)
# Env:   CDP_RELAY=path/to/cdp-relay    (default target/debug/cdp-relay; build it first)
#        MAX_PER_THREAD=N               exit 1 when a relay thread wakes more than N times a second
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-10}
bin=${CDP_RELAY:-target/debug/cdp-relay}
[[ -x $bin ]] || { echo "wakeups.sh: $bin not found; build it (cargo build -p cdp-relay-cli) or set CDP_RELAY" >&2; exit 2; }

work=$(mktemp -d)
pid=
cleanup() {
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
        kill -INT "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

"$bin" launch --listen 127.0.0.1:0 --evidence-dir "$work/evidence" >"$work/out" 2>"$work/err" &
pid=$!

# Serving once the endpoint is printed; then a few seconds for start-up work to settle.
for _ in $(seq 300); do
    grep -q 'http://127\.0\.0\.1:' "$work/out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { echo "wakeups.sh: the relay exited:" >&2; cat "$work/err" >&2; exit 2; }
    sleep 0.1
done
grep -q 'http://127\.0\.0\.1:' "$work/out" || { echo "wakeups.sh: the relay printed no endpoint" >&2; cat "$work/err" >&2; exit 2; }
sleep 3

# tid name switches, one line per thread.
sample() {
    for t in /proc/"$pid"/task/*; do
        local name v n
        name=$(tr ' ' '_' <"$t/comm" 2>/dev/null) || continue
        v=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null) || continue
        n=$(awk '/^nonvoluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null) || continue
        echo "${t##*/} $name $((v + n))"
    done
}

sample >"$work/before"
sleep "$secs"
sample >"$work/after"

echo "wake-ups per second of an idle relay over ${secs} s (pid $pid), per thread:"
join -j 1 -o 1.1,1.2,1.3,2.3 <(sort "$work/before") <(sort "$work/after") |
    awk -v s="$secs" -v max="${MAX_PER_THREAD:-}" '
        { rate = ($4 - $3) / s; total += rate; printf "  %-8s %-20s %8.1f\n", $1, $2, rate
          if (max != "" && rate > max) over++ }
        END { printf "  %-29s %8.1f\n", "total", total
              if (over) { printf "wakeups.sh: %d thread(s) above %s a second\n", over, max; exit 1 } }'
