#!/usr/bin/env bash
# Makes sure Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432, user
# postgres without a password) are installed and running, for the demo, the
# audit target and the tests.
#
# It never changes a server's configuration: when it cannot connect it says
# what it tried and how to point the tests elsewhere, and fails. The tests
# start a redis-server of their own (only the binary is needed here) unless
# REAPER_TEST_REDIS_URL names one. With REAPER_TEST_REDIS_URL or
# REAPER_TEST_DATABASE_URL set, the matching service is left alone.
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
  return 1
}

# redis-server is what the tests start for themselves; redis-cli checks.
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "services: installing redis-server"
  apt_install redis-server redis-tools
fi

if [ -n "${REAPER_TEST_REDIS_URL:-}" ]; then
  echo "services: REAPER_TEST_REDIS_URL is set: the local Redis is left alone"
else
  redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
  if ! redis_up; then
    if (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
      echo "services: something listens on 127.0.0.1:6379 but does not answer redis-cli -h 127.0.0.1 -p 6379 ping" >&2
      echo "services: (a password or ACL?) The tests use a redis-server of their own; for the demo, pass --redis-url." >&2
    else
      echo "services: starting redis on 127.0.0.1:6379 (no persistence)"
      redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
      wait_for redis redis_up || { echo "services: redis-server on 127.0.0.1:6379 did not answer PING within 30 s" >&2; exit 1; }
    fi
  fi
fi

if [ -n "${REAPER_TEST_DATABASE_URL:-}" ]; then
  echo "services: REAPER_TEST_DATABASE_URL is set: the local PostgreSQL is left alone"
  echo "services: ready"
  exit 0
fi

pg_try() { psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -w -Atqc 'select 1' 2>&1; }
pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 && [ "$(pg_try)" = 1 ]; }

if ! ls /etc/postgresql/*/main >/dev/null 2>&1 && ! command -v pg_isready >/dev/null; then
  echo "services: installing postgresql"
  apt_install postgresql postgresql-contrib
fi
if ! pg_isready -q -h 127.0.0.1 -p 5432 && ls /etc/postgresql/*/main >/dev/null 2>&1; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "services: starting postgresql $version"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_for postgresql pg_isready -q -h 127.0.0.1 -p 5432 || true
fi
if ! pg_up; then
  cat >&2 <<MSG
services: cannot use PostgreSQL at 127.0.0.1:5432 as user postgres without a password.
services: tried: psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -w -c 'select 1'
services: it said: $(pg_try | head -n 3)
services: this script never changes a server's configuration (pg_hba.conf, roles). Either
services:   - point the tests at a server and a role that may CREATE DATABASE:
services:       export REAPER_TEST_DATABASE_URL='postgres://USER:PASSWORD@HOST:5432/postgres'
services:   - or start a throwaway PostgreSQL of your own (stopped with the command it prints):
services:       eval "\$(scripts/own-postgres.sh)"
MSG
  exit 1
fi
echo "services: redis and postgresql are up"
