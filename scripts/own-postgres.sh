#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster of its own, with trust authentication
# on 127.0.0.1 only, on a free port in a new temporary directory, and prints
# the shell lines that point the tests at it:
#
#   eval "$(scripts/own-postgres.sh)"
#
# It touches no other server. Stop it and remove its directory with the
# command it prints in $OWN_POSTGRES_STOP.
set -euo pipefail

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "own-postgres: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)" >&2
  exit 1
fi
port=""
for p in $(seq 55432 55531); do
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "own-postgres: no free port in 55432-55531" >&2; exit 1; }

dir=$(mktemp -d /tmp/lock-reaper-pg.XXXXXX)
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
echo "own-postgres: started PostgreSQL on 127.0.0.1:$port in $dir" >&2
stop="${run[*]} $bin/pg_ctl -D $dir/data -m fast stop; rm -rf $dir"
printf 'export REAPER_TEST_DATABASE_URL=%q\n' "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
printf 'export OWN_POSTGRES_STOP=%q\n' "$stop"
