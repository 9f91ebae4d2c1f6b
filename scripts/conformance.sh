#!/usr/bin/env bash
# Builds the conformance fixture server and runs the official MCP
# conformance suite against it: all 40 2026-07-28 scenarios.
set -euo pipefail
shared=${WEFT_SHARED:-../shared}
port=${CONFORMANCE_PORT:-3917}
mkdir -p bin
go build -o bin/weft-conformance ./cmd/weft-conformance
"$shared/tools/conformance.sh" --url "http://127.0.0.1:$port/mcp" --mode all \
  --start "exec ./bin/weft-conformance -addr 127.0.0.1:$port" --out .conformance/all
