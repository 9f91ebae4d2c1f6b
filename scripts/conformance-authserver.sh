#!/usr/bin/env bash
# Runs the official MCP conformance suite's authorization-server scenarios
# (authorization-server-metadata-endpoint, authorization-code-grant) against
# the authserver package in front of a real Ory Hydra: the Go test drives
# the user's browser part of the flow headless. Needs Hydra
# (scripts/ensure-hydra.sh) and the shared conformance runner.
set -euo pipefail
shared=${WEFT_SHARED:-../shared}
bash scripts/ensure-hydra.sh >/dev/null
WEFT_CONFORMANCE_AS=1 WEFT_CONFORMANCE_SH="$(cd "$shared/tools" && pwd)/conformance.sh" \
  go test -count=1 -run '^TestConformanceAuthorizationServer$' -v ./authserver
