#!/usr/bin/env bash
# Replays every fuzz corpus (a normal `go test` does that) and then fuzzes
# each target briefly. FUZZTIME sets the time per target (default 10s).
set -euo pipefail
fuzztime=${FUZZTIME:-10s}
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
  pkg=./$(dirname "${file#./}")
  for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
    echo "fuzz: $pkg $target ($fuzztime)"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" "$pkg" >/tmp/weft-fuzz.log 2>&1 || { cat /tmp/weft-fuzz.log; exit 1; }
  done
done
echo "fuzz: all targets ran"
