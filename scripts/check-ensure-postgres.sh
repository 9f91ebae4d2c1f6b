#!/usr/bin/env bash
# Checks every branch of scripts/ensure-postgres.sh on a machine without
# PostgreSQL: a fresh Debian root (debootstrap) run with chroot, where the
# script installs Debian's packages, creates role root and database test,
# and is then run again (already running), with the database dropped
# (running, database missing) and with the cluster stopped (installed, not
# running). After each run the pgstore tests connect to that server.
#
# The chroot shares the machine's network (apt needs it), so port 5432 must
# be free: a local cluster is stopped for the check and started again at
# the end. It does that only with WEFT_ALLOW_STOP_POSTGRES=1. Needs root,
# debootstrap and Debian's mirror; takes about two minutes. Not part of
# `make test`: `make check-ensure-postgres`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${WEFT_ALLOW_STOP_POSTGRES:-}" != 1 ]; then
  echo "check-ensure-postgres: stops the local PostgreSQL for a while; set WEFT_ALLOW_STOP_POSTGRES=1" >&2
  exit 2
fi
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null

root=$(mktemp -d /tmp/weft-pgroot.XXXXXX)
chmod 755 "$root" # it becomes /, which every user must traverse
host_ver=""
cleanup() {
  chroot "$root" bash -c 'for v in $(ls /etc/postgresql 2>/dev/null); do pg_ctlcluster --skip-systemctl-redirect "$v" main stop; done' 2>/dev/null || true
  for m in dev/pts dev sys proc; do umount "$root/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$root"
  if [ -n "$host_ver" ]; then
    pg_ctlcluster --skip-systemctl-redirect "$host_ver" main start
    echo "check-ensure-postgres: started the local cluster $host_ver again"
  fi
}
trap cleanup EXIT

echo "check-ensure-postgres: debootstrap into $root"
debootstrap --variant=minbase "$(. /etc/os-release && echo "$VERSION_CODENAME")" "$root" http://deb.debian.org/debian >/dev/null
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
cp scripts/ensure-postgres.sh "$root/root/"

if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  host_ver=$(ls /etc/postgresql | sort -V | tail -n1)
  pg_ctlcluster --skip-systemctl-redirect "$host_ver" main stop
fi
if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  echo "check-ensure-postgres: something still answers on 127.0.0.1:5432" >&2
  exit 1
fi

in_root() { chroot "$root" bash -c "cd /root && $1"; }
# step NAME EXPECT COMMAND: runs COMMAND in the root, which must succeed and
# print EXPECT, then the pgstore tests must pass against the server.
step() {
  local out
  if ! out=$(in_root "$3" 2>&1); then
    printf '%s\n' "$out" >&2
    echo "check-ensure-postgres: $1: the script failed" >&2
    exit 1
  fi
  printf '%s\n' "$out"
  if ! grep -q "$2" <<<"$out"; then
    echo "check-ensure-postgres: $1: expected \"$2\" in its output" >&2
    exit 1
  fi
  CI=1 go test -count=1 -tags pgstore ./task/pgstore/ >/dev/null
  echo "check-ensure-postgres: $1: ok (the pgstore tests passed against it)"
}

step "installed from nothing" "installing from Debian packages" 'bash ensure-postgres.sh'
step "already running" "already accepting connections" 'bash ensure-postgres.sh'
step "running, database missing" "database test is missing" \
  'su postgres -c "cd / && psql -q -c \"DROP DATABASE test\"" && bash ensure-postgres.sh'
step "installed, stopped" "ready on" \
  'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main stop && ! pg_isready -q -h 127.0.0.1 && bash ensure-postgres.sh'
echo "check-ensure-postgres: all branches passed"
