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
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
total_p = total_f = 0
for group in sorted(os.listdir(out)):
    d = os.path.join(out, group)
    if not os.path.isdir(d):
        continue
    gp = gf = 0
    for root, _, files in os.walk(d):
        if "checks.json" not in files:
            continue
        checks = json.load(open(os.path.join(root, "checks.json")))
        p = sum(c["status"] == "SUCCESS" for c in checks)
        f = sum(c["status"] == "FAILURE" for c in checks)
        scen = os.path.basename(root).rsplit("-", 7)[0]
        if f:
            for c in checks:
                if c["status"] == "FAILURE":
                    print(f"failed: {group} {scen} :: {c['id']} - {c.get('errorMessage') or c.get('description')}")
        gp, gf = gp + p, gf + f
    print(f"{group}: {gp} passed, {gf} failed")
    total_p, total_f = total_p + gp, total_f + gf
print(f"{total_p} passed, {total_f} failed")
PY
exit $status
