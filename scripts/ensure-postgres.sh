#!/usr/bin/env bash
# Makes sure a PostgreSQL server accepts trusted connections on
# 127.0.0.1:5432 with a database "test" (the DSN the tests default to).
# Uses the running server when there is one; otherwise installs Debian's
# packages and starts a cluster. Safe to run repeatedly.
set -euo pipefail

if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if ! command -v psql >/dev/null 2>&1 ||
     psql -h 127.0.0.1 -U root -d test -tAc 'SELECT 1' >/dev/null 2>&1; then
    echo "postgres: already accepting connections on 127.0.0.1:5432"
    exit 0
  fi
  echo "postgres: running, but role root or database test is missing; creating them"
  running=1
fi

if [ -z "${running:-}" ] && ! command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "postgres: installing from Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi

if [ -z "${running:-}" ]; then
  ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1 || true)
  if [ -z "$ver" ]; then
    echo "postgres: no cluster found after install" >&2
    exit 1
  fi
  conf=/etc/postgresql/$ver/main
  # Trust local loopback connections (test machines only).
  if ! grep -q "weft-ci" "$conf/pg_hba.conf"; then
    {
      echo "# weft-ci: trust loopback for the test suite"
      echo "local all all trust"
      echo "host all all 127.0.0.1/32 trust"
      echo "host all all ::1/128 trust"
      cat "$conf/pg_hba.conf"
    } > "$conf/pg_hba.conf.new"
    mv "$conf/pg_hba.conf.new" "$conf/pg_hba.conf"
  fi
  sed -i "s/^#\?listen_addresses.*/listen_addresses = '127.0.0.1'/" "$conf/postgresql.conf"
  pg_ctlcluster --skip-systemctl-redirect "$ver" main start || pg_ctlcluster --skip-systemctl-redirect "$ver" main restart

  for _ in $(seq 1 30); do
    pg_isready -q -h 127.0.0.1 -p 5432 && break
    sleep 1
  done
  pg_isready -h 127.0.0.1 -p 5432
fi

psql_su() { (cd / && su postgres -c "psql -v ON_ERROR_STOP=1 -q -h 127.0.0.1 $*"); }
psql_su "-tc \"SELECT 1 FROM pg_roles WHERE rolname='root'\"" | grep -q 1 || psql_su "-c 'CREATE ROLE root SUPERUSER LOGIN'"
psql_su "-tc \"SELECT 1 FROM pg_database WHERE datname='test'\"" | grep -q 1 || psql_su "-c 'CREATE DATABASE test OWNER root'"
echo "postgres: ready on 127.0.0.1:5432"
