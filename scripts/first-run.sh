#!/usr/bin/env bash
# first-run.sh: the README's first command timed from a fresh clone: how long
# `go run ./cmd/weft-demo` takes until the demo answers, with an empty Go
# build cache (cold) and then with the cache it filled (warm). Modules come
# from the machine's module cache (GOMODCACHE), so download time is not
# counted. With --weft, `go run ./cmd/weft serve` (the whole tool) is timed
# the same way, for comparison. Prints one line per run; docs/benchmarks.md
# ("First run") reports the figures.
#
#   bash scripts/first-run.sh [--weft]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
git clone -q "$root" "$tmp/weft"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# measure NAME CMD...: runs CMD in the clone and waits for /healthz.
measure() {
	local name=$1; shift
	local start end
	start=$(date +%s.%N)
	(cd "$tmp/weft" && exec "$@" --addr "127.0.0.1:$port" --data "$tmp/data-$name" >"$tmp/$name.log" 2>&1) &
	pid=$!
	until curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "$name: the server stopped:" >&2
			cat "$tmp/$name.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	end=$(date +%s.%N)
	pkill -TERM -P "$pid" 2>/dev/null || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
	# go run leaves its binary running until it sees the signal.
	while curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do sleep 0.1; done
	printf '%-28s %6.1f s\n' "$name" "$(awk "BEGIN{print $end - $start}")"
}

export GOCACHE="$tmp/gocache"
measure "weft-demo cold" go run ./cmd/weft-demo
measure "weft-demo warm" go run ./cmd/weft-demo
if [ "${1:-}" = "--weft" ]; then
	export GOCACHE="$tmp/gocache-weft"
	measure "weft serve cold" go run ./cmd/weft serve
	measure "weft serve warm" go run ./cmd/weft serve
fi
