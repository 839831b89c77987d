#!/usr/bin/env bash
# Makes sure Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432, user
# postgres, trust auth) are running, installing them with apt-get when absent.
# Tests, the demo and the audit target use these defaults; point
# REAPER_TEST_REDIS_URL / REAPER_TEST_DATABASE_URL elsewhere to skip this.
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

wait_for() { # description, command...
  local what=$1; shift
  for _ in $(seq 1 60); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "services: $what did not come up" >&2; return 1
}

redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "services: installing redis-server"
  apt_install redis-server redis-tools
fi
if ! redis_up; then
  echo "services: starting redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  wait_for redis redis_up
fi

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 && psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' | grep -q 1; }

installed_pg=""
if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  echo "services: installing postgresql"
  apt_install postgresql postgresql-contrib
  installed_pg=1
fi
version=$(ls /etc/postgresql | sort -V | tail -n 1)
hba=/etc/postgresql/$version/main/pg_hba.conf
if [ -n "$installed_pg" ] || ! grep -Eq '^host\s+all\s+all\s+127\.0\.0\.1/32\s+trust' "$hba"; then
  if ! pg_up; then
    # A fresh cluster asks for passwords over TCP; tests connect as postgres
    # with trust auth on loopback only.
    as_root sed -i -E 's/^(local|host)(\s+all\s+all\s+.*)(peer|md5|scram-sha-256)\s*$/\1\2trust/' "$hba"
  fi
fi
if ! pg_up; then
  echo "services: starting postgresql $version"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_for postgresql pg_up
fi
echo "services: redis and postgresql are up"
