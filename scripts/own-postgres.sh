#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster of its own, with trust authentication
# on 127.0.0.1 only, on a free port in a new temporary directory, and prints
# the shell lines that point the tests at it:
#
#   eval "$(scripts/own-postgres.sh)"
#
# It touches no other server. Stop it and remove its directory with the
# command it prints in $OWN_POSTGRES_STOP; a start that fails removes the
# directory itself. The server's programs are looked for as the demo looks
# for them: initdb on PATH, then Debian's /usr/lib/postgresql/*/bin and RHEL's
# /usr/pgsql-*/bin, newest version first.
set -euo pipefail

has_server() { [ -x "$1/initdb" ] && [ -x "$1/pg_ctl" ] && [ -x "$1/postgres" ]; }
bin=""
if initdb=$(command -v initdb 2>/dev/null); then
  for d in "$(dirname "$initdb")" "$(dirname "$(readlink -f "$initdb")")"; do
    if has_server "$d"; then bin=$d; break; fi
  done
fi
if [ -z "$bin" ]; then
  for d in $(ls -d /usr/lib/postgresql/*/bin /usr/pgsql-*/bin 2>/dev/null | sort -V -r); do
    if has_server "$d"; then bin=$d; break; fi
  done
fi
if [ -z "$bin" ]; then
  echo "own-postgres: no PostgreSQL server programs (initdb, pg_ctl, postgres) on PATH, in /usr/lib/postgresql/*/bin or /usr/pgsql-*/bin" \
    "(Debian/Ubuntu: apt-get install postgresql; RHEL/Fedora: dnf install postgresql-server; macOS: brew install postgresql)" >&2
  exit 1
fi

# A free port is one the kernel hands out to a bind on port 0: nothing
# listens on it now. (Probing by connecting would take a port where a
# server is starting, or one a firewall drops, for free.) bash cannot bind,
# so python3 does, or perl, whose Socket module is in every Debian system.
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  elif command -v perl >/dev/null 2>&1; then
    perl -MSocket -e 'socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
      bind($s, sockaddr_in(0, inet_aton("127.0.0.1"))) or die "bind: $!";
      my ($port) = sockaddr_in(getsockname($s)); print "$port\n"'
  else
    echo "own-postgres: python3 or perl is needed to find a free port" >&2
    return 1
  fi
}
port=$(free_port)
[ -n "$port" ] || { echo "own-postgres: no free port" >&2; exit 1; }

dir=$(mktemp -d /tmp/lock-reaper-pg.XXXXXX)
started=""
cleanup_on_failure() {
  [ -n "$started" ] && return 0
  rm -rf "$dir"
}
trap cleanup_on_failure EXIT
# initdb refuses to run as root: the cluster belongs to the postgres user then.
run=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || { echo "own-postgres: running as root and there is no postgres user to own the cluster" >&2; exit 1; }
  chown postgres "$dir"
  run=(runuser -u postgres --)
fi
"${run[@]}" "$bin/initdb" -A trust -U postgres -D "$dir/data" >"$dir/initdb.log" 2>&1 ||
  { echo "own-postgres: initdb failed:" >&2; cat "$dir/initdb.log" >&2; exit 1; }
"${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null ||
  { echo "own-postgres: the server did not start:" >&2; cat "$dir/server.log" >&2; exit 1; }
started=1
echo "own-postgres: started PostgreSQL on 127.0.0.1:$port in $dir" >&2
stop="${run[*]} $bin/pg_ctl -D $dir/data -m fast -w stop; rm -rf $dir"
printf 'export REAPER_TEST_DATABASE_URL=%q\n' "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
printf 'export OWN_POSTGRES_STOP=%q\n' "$stop"
