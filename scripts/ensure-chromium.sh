#!/usr/bin/env bash
# Makes sure headless Chromium (Debian's package "chromium") is installed,
# for the authorization server's consent-page test
# (authserver/chromium_test.go). It only installs. Safe to run repeatedly.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
echo "chromium: installing from Debian packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null 2>&1 || { echo "chromium: not found after install" >&2; exit 1; }
