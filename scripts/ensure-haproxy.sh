#!/usr/bin/env bash
# Makes sure the haproxy binary is installed (Debian's package), for the
# rolling-restart test of soak/rolling_test.go. It only installs: the test
# starts its own HAProxy with its own configuration and stops it. Safe to
# run repeatedly.
set -euo pipefail

if command -v haproxy >/dev/null 2>&1; then
  echo "haproxy: $(haproxy -v | head -n1)"
  exit 0
fi
echo "haproxy: installing from Debian packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends haproxy >/dev/null
command -v haproxy >/dev/null 2>&1 || { echo "haproxy: not found after install" >&2; exit 1; }
echo "haproxy: $(haproxy -v | head -n1)"
