#!/usr/bin/env bash
# ensure-hydra.sh: builds Ory Hydra v2.3.0 (the upstream OIDC provider of the
# authorization tests) once per machine into a cache outside the repository
# and prints the binary's path. Tests find it through internal/hydratest,
# which looks in the same place (or at $WEFT_HYDRA).
#
# Hydra's own go.mod replaces gobuffalo/pop/v6 with ory/pop/v6; a replace in a
# dependency is ignored, so the throwaway tool module below repeats it. The
# in-memory database (DSN=memory) needs cgo and the sqlite build tags.
# A cold build takes about three minutes on two cores.
set -euo pipefail

version="${WEFT_HYDRA_VERSION:-v2.3.0}"
cache="${WEFT_HYDRA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/weft-hydra}"
dir="$cache/$version"
bin="$dir/hydra"

if [[ -n "${WEFT_HYDRA:-}" && -x "${WEFT_HYDRA}" ]]; then
	echo "${WEFT_HYDRA}"
	exit 0
fi
if [[ -x "$bin" ]]; then
	echo "$bin"
	exit 0
fi

mkdir -p "$dir/mod"
exec 9>"$dir/.lock"
flock 9
if [[ -x "$bin" ]]; then # another build finished while we waited
	echo "$bin"
	exit 0
fi

cd "$dir/mod"
cat > go.mod <<GOMOD
module weft.local/hydratool

go 1.24

replace github.com/gobuffalo/pop/v6 => github.com/ory/pop/v6 v6.2.1-0.20241121111754-e5dfc0f3344b
GOMOD
cat > tools.go <<'GO'
//go:build tools

package hydratool

import _ "github.com/ory/hydra/v2"
GO
echo "ensure-hydra: building Ory Hydra $version into $dir (about three minutes cold)" >&2
GOFLAGS=-mod=mod go get "github.com/ory/hydra/v2@$version" >&2
CGO_ENABLED=1 GOFLAGS=-mod=mod go build -tags sqlite,sqlite_omit_load_extension -o "$bin.tmp" github.com/ory/hydra/v2 >&2
mv "$bin.tmp" "$bin"
echo "$bin"
