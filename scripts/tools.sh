#!/usr/bin/env bash
# Fetches the programs the tests run that no Go module provides, without
# installing or starting any service, into .cache/tools/bin, and prints the
# line that puts them on PATH:
#
#   eval "$(scripts/tools.sh)"
#
# promtool: the Debian package prometheus would also install and enable a
# Prometheus server on :9090 (lock-reaper's own default port), so the
# package is only downloaded and promtool alone unpacked from it.
# pgbouncer: the tests start their own pgbouncer processes; the Debian
# package's service is masked before it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="$PWD/.cache/tools"
mkdir -p "$cache/bin"
apt_updated=""
apt_update() { if [ -z "$apt_updated" ]; then apt-get update -qq >&2; apt_updated=1; fi; }

if ! command -v promtool >/dev/null && [ ! -x "$cache/bin/promtool" ]; then
  apt_update
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq prometheus >&2)
  dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
  cp "$tmp/x/usr/bin/promtool" "$cache/bin/promtool"
  rm -rf "$tmp"
  echo "tools: promtool unpacked into $cache/bin (no Prometheus server installed)" >&2
fi

if ! command -v pgbouncer >/dev/null; then
  apt_update
  # No service: the tests run pgbouncer themselves on free ports.
  systemctl mask pgbouncer.service >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null
  echo "tools: pgbouncer installed" >&2
fi

printf 'export PATH=%q:"$PATH"\n' "$cache/bin"
