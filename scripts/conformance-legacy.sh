#!/usr/bin/env bash
# Builds the conformance fixture server and runs the official MCP
# conformance suite's frozen 2025-11-25 requirement set against it (the
# legacy era: initialize, sessions, server-to-client requests), on the same
# endpoint that scripts/conformance.sh tests at 2026-07-28.
set -euo pipefail
shared=${WEFT_SHARED:-../shared}
port=${CONFORMANCE_PORT:-3918}
mkdir -p bin
go build -o bin/weft-conformance ./cmd/weft-conformance
"$shared/tools/conformance.sh" --url "http://127.0.0.1:$port/mcp" --spec-version 2025-11-25 --mode required \
  --start "exec ./bin/weft-conformance -eras both -addr 127.0.0.1:$port" --out .conformance/legacy-required
