#!/usr/bin/env bash
# Runs the official MCP conformance suite's CLIENT scenarios against Weft's
# Go client (cmd/weft-conformance's client mode: the suite starts a mock
# server per scenario and runs `weft-conformance client URL`): every
# scenario of 2026-07-28 and of 2025-11-25 (`--suite all`), then the six
# authorization extension scenarios, which no spec version selects.
# The closing line is the total over all three runs: "N passed, M failed".
set -euo pipefail
shared=${WEFT_SHARED:-../shared}
out=${CONFORMANCE_CLIENT_OUT:-.conformance/client}
mkdir -p bin
go build -o bin/weft-conformance ./cmd/weft-conformance
cmd="$PWD/bin/weft-conformance client"
rm -rf "$out"
mkdir -p "$out"
status=0
run() { # name, suite arguments...
	local name=$1
	shift
	if ! "$shared/tools/conformance.sh" --suite-cli client --command "$cmd" "$@" -o "$PWD/$out/$name" >"$out/$name.txt" 2>&1; then
		status=1
	fi
}
run 2026-07-28 --suite all --spec-version 2026-07-28
run 2025-11-25 --suite all --spec-version 2025-11-25
for s in auth/client-credentials-basic auth/client-credentials-jwt auth/enterprise-managed-authorization \
	auth/dpop auth/dpop-nonce auth/wif-jwt-bearer; do
	run "ext-${s#auth/}" --scenario "$s"
done
# Count the checks of every scenario from its checks.json (SUCCESS and
# FAILURE count, as the suite does; a scenario whose client failed to run
# shows as failures there too).
./bin/weft-conformance client-summary "$out" || status=1
exit $status
