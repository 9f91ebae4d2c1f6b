#!/usr/bin/env bash
# Runs the official MCP conformance suite's 2026-07-28 server scenarios
# against `weft gateway` fronting the conformance fixture (prefixes off):
# what passes against the fixture must pass through the gateway too. Twice:
# the gateway starts the fixture as a stdio command (cmd/weft-conformance
# -stdio), then reaches it over loopback HTTP.
set -euo pipefail
shared=${WEFT_SHARED:-../shared}
fixture_port=${CONFORMANCE_FIXTURE_PORT:-3921}
port=${CONFORMANCE_PORT:-3922}
mkdir -p bin .conformance
go build -o bin/weft-conformance ./cmd/weft-conformance
go build -o bin/weft ./cmd/weft
tmp=$(mktemp -d)
fixture_pid=
cleanup() {
  if [ -n "$fixture_pid" ]; then kill "$fixture_pid" 2>/dev/null || true; wait "$fixture_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
run() { # name config
  "$shared/tools/conformance.sh" --url "http://127.0.0.1:$port/mcp" --mode all \
    --start "exec ./bin/weft gateway --config $2 --addr 127.0.0.1:$port --data $tmp/data-$1" \
    --out ".conformance/gateway-$1" | tee ".conformance/gateway-$1.txt"
  echo "gateway ($1 upstream): $(grep -E '^[0-9]+ passed, [0-9]+ failed$' ".conformance/gateway-$1.txt" | tail -n 1)"
}
printf '{"upstreams":[{"name":"fixture","command":"%s","args":["-stdio"]}]}\n' "$PWD/bin/weft-conformance" > "$tmp/stdio.json"
run stdio "$tmp/stdio.json"

printf '{"upstreams":[{"name":"fixture","url":"http://127.0.0.1:%s/mcp"}]}\n' "$fixture_port" > "$tmp/http.json"
./bin/weft-conformance -addr "127.0.0.1:$fixture_port" > "$tmp/fixture.log" 2>&1 &
fixture_pid=$!
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$fixture_port") 2>/dev/null; then break; fi
  sleep 0.1
done
run http "$tmp/http.json"
