#!/usr/bin/env bash
# The flake hunt of issue 41: runs a package's tests many times under the
# race detector while other work keeps the machine's cores busy, and lists
# every test that failed even once, with its count. A test that waits for a
# signal and then assumes a later state (started => queued, listening =>
# subscribed, sent => received) fails here long before it fails in CI.
#
#   make flake PKG=./gateway                      # 20 runs, one core kept busy
#   make flake PKG=. RUN='TestFair|TestGate' COUNT=50
#   make flake PKG=./client LOAD=2 PARALLEL=2
#
# PKG: the package (one, as `go test` names it). RUN: a -run pattern
# (default: every test). COUNT: runs (default 20). LOAD: busy loops kept
# running beside the tests (default 1: the other core of a 2-core machine).
# PARALLEL: processes of the test binary run side by side, each doing its
# share of COUNT (default 1). TIMEOUT: the bound of each process (default
# 60m). The test binary is built once; the busy loops end with the hunt and
# stop by themselves at TIMEOUT. The full log stays in the file it names.
# Not part of `make test`: it is the check to repeat before a stop.
set -euo pipefail
pkg=${PKG:?"PKG=./some/package is required"}
run=${RUN:-.}
count=${COUNT:-20}
load=${LOAD:-1}
parallel=${PARALLEL:-1}
timeout=${TIMEOUT:-60m}

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-flake.XXXXXX")
log="$work/flake.log"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

dir=$(go list -f '{{.Dir}}' "$pkg")
bin="$work/pkg.test"
echo "flake: building $pkg with -race"
go test -race -c -o "$bin" "$pkg"
if [ ! -x "$bin" ]; then
  echo "flake: $pkg has no tests" >&2
  exit 2
fi

secs=$(( $(sed -E 's/m$/*60/; s/s$//; s/h$/*3600/' <<<"$timeout") ))
for _ in $(seq 1 "$load"); do
  timeout "$secs" sh -c 'while :; do :; done' &
  pids+=("$!")
done

echo "flake: $pkg -run '$run' x$count under -race, $load busy loop(s), $parallel process(es); log: $log"
start=$(date +%s)
per=$(( (count + parallel - 1) / parallel ))
runners=()
for i in $(seq 1 "$parallel"); do
  n=$per
  if [ "$i" -eq "$parallel" ]; then n=$(( count - per * (parallel - 1) )); fi
  [ "$n" -gt 0 ] || continue
  (cd "$dir" && "$bin" -test.run "$run" -test.count "$n" -test.timeout "$timeout" -test.v >"$work/run$i.log" 2>&1) &
  runners+=("$!")
done
status=0
for r in "${runners[@]}"; do wait "$r" || status=$?; done
cat "$work"/run*.log >"$log"
elapsed=$(( $(date +%s) - start ))

passes=$(grep -cE '^(\s*)--- PASS' "$log" || true)
fails=$(grep -E '^\s*--- FAIL' "$log" | sed -E 's/^\s*--- FAIL: ([^ ]+).*/\1/' | sort | uniq -c | sort -rn || true)
echo "flake: $elapsed s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$fails" ] || [ "$status" -ne 0 ]; then
  echo "flake: FAILED (test results passed: $passes); failures per test:"
  echo "${fails:-  (no --- FAIL line: a panic, a data race or the timeout; see the log)}"
  grep -nE '^(panic:|WARNING: DATA RACE|FAIL|\s+\S+_test\.go:[0-9]+:)' "$log" | head -40 || true
  exit 1
fi
echo "flake: all $count runs passed ($passes test results)"
