#!/usr/bin/env bash
# Runs the official MCP conformance suite's 2026-07-28 server scenarios
# against `weft gateway` fronting the conformance fixture (prefixes off):
# what passes against the fixture must pass through the gateway too. Twice:
# the gateway starts the fixture as a stdio command (cmd/weft-conformance
# -stdio), then reaches it over loopback HTTP; then the skills scenarios
# through the stdio fixture.
set -euo pipefail
shared=${WEFT_SHARED:-../shared}
# free_port prints a loopback port nothing listens on (and not $1): a
# random one below the ephemeral range, so that several runs on one
# machine (other worktrees, other suites) do not collide. Fixed ports can
# still be given in CONFORMANCE_FIXTURE_PORT and CONFORMANCE_PORT.
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 12000))
    if [ "$p" != "${1:-}" ] && ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "conformance-gateway.sh: no free port found; set CONFORMANCE_PORT and CONFORMANCE_FIXTURE_PORT" >&2
  return 1
}
fixture_port=${CONFORMANCE_FIXTURE_PORT:-$(free_port)}
port=${CONFORMANCE_PORT:-$(free_port "$fixture_port")}
echo "conformance-gateway.sh: gateway on 127.0.0.1:$port, HTTP fixture on 127.0.0.1:$fixture_port"
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
run() { # name config [mode]
  local mode=${3:-all} out=".conformance/gateway-$1-${3:-all}"
  "$shared/tools/conformance.sh" --url "http://127.0.0.1:$port/mcp" --mode "$mode" \
    --start "exec ./bin/weft gateway --config $2 --addr 127.0.0.1:$port --data $tmp/data-$1" \
    --out "$out" | tee "$out.txt"
  echo "gateway ($1 upstream, $mode): $(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out.txt" | tail -n 1)"
  # The required set also runs the tasks-extension scenarios (not scored):
  # relayed through the gateway, they must pass too.
  if grep -qE '^(FAIL|fail) ' "$out.txt"; then
    echo "conformance through the gateway ($1, $mode): a scenario failed" >&2
    return 1
  fi
}
printf '{"upstreams":[{"name":"fixture","command":"%s","args":["-stdio"]}]}\n' "$PWD/bin/weft-conformance" > "$tmp/stdio.json"
run stdio "$tmp/stdio.json"
run stdio "$tmp/stdio.json" required

printf '{"upstreams":[{"name":"fixture","url":"http://127.0.0.1:%s/mcp"}]}\n' "$fixture_port" > "$tmp/http.json"
./bin/weft-conformance -addr "127.0.0.1:$fixture_port" > "$tmp/fixture.log" 2>&1 &
fixture_pid=$!
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$fixture_port") 2>/dev/null; then break; fi
  sleep 0.1
done
run http "$tmp/http.json"

# The Skills extension scenarios (SEP-2640, run only when named), through
# the gateway's skills relay: each must run every check (a gateway that
# does not relay the extension passes 1 check and skips the others).
for sc in sep-2640-skills-directory sep-2640-skills-enumeration sep-2640-skills-manifest; do
  out=".conformance/gateway-stdio-$sc"
  rc=0
  "$shared/tools/conformance.sh" --url "http://127.0.0.1:$port/mcp" --mode required --scenario "$sc" \
    --start "exec ./bin/weft gateway --config $tmp/stdio.json --addr 127.0.0.1:$port --data $tmp/data-skills" \
    --out "$out" > "$out.txt" 2>&1 || rc=$?
  line=$(grep -E "^(pass|fail|PASS|FAIL) +$sc " "$out.txt" || true)
  echo "gateway (stdio upstream): $line"
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ] || ! grep -qE "^pass +$sc +[0-9]+ passed, 0 failed +\[" <<< "$line"; then
    echo "conformance through the gateway: $sc failed or skipped checks" >&2
    exit 1
  fi
done
