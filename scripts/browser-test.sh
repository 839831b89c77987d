#!/usr/bin/env bash
# What the status page's browser test (e2e/browser) needs, for `make test`:
#
#   scripts/browser-test.sh prepare   # npm ci in e2e/browser, when npm is
#                                     # installed and node_modules is missing
#                                     # or older than the lock file
#   scripts/browser-test.sh report    # a banner when the test cannot run
#
# The test skips itself locally when node, chromium or its npm packages are
# missing, which `go test` reports in one quiet line at most; the banner at
# the end of `make test` says so where nobody can miss it. Under CI (CI=true)
# the test fails instead (e2e/browser/browser_test.go), and so does a failed
# npm ci here. Nothing is installed with apt: .ci/run does that.
set -euo pipefail
cd "$(dirname "$0")/../e2e/browser"
chromium=${CHROMIUM:-/usr/bin/chromium}
in_ci() { case "${CI:-}" in true | TRUE | True | 1) return 0 ;; esac; return 1; }

# installed: the lock file's packages are in node_modules, and npm has not
# been given a newer lock file since (npm ci writes node_modules/.package-lock.json).
installed() {
  local stamp=node_modules/.package-lock.json
  [ -e node_modules/playwright-core ] && [ -e node_modules/axe-core ] && [ -e "$stamp" ] &&
    ! [ package-lock.json -nt "$stamp" ] && ! [ package.json -nt "$stamp" ]
}

# missing prints what keeps the browser test from running, if anything, in
# the order the test checks it.
missing() {
  if ! command -v node >/dev/null; then
    echo "node not found; install nodejs and npm (apt-get install nodejs npm) and chromium to run it"
  elif [ ! -e "$chromium" ]; then
    echo "$chromium not found; install chromium (apt-get install chromium), or set CHROMIUM to a chromium, to run it"
  elif [ ! -e node_modules/playwright-core ] || [ ! -e node_modules/axe-core ]; then
    if command -v npm >/dev/null; then
      echo "its npm packages are not installed (npm ci in e2e/browser failed or did not run: see above)"
    else
      echo "npm not found; install npm (apt-get install npm) to run it: make test then runs npm ci in e2e/browser"
    fi
  fi
}

case "${1:-}" in
prepare)
  command -v npm >/dev/null || exit 0
  installed && exit 0
  echo "== e2e/browser: npm ci (the browser test's packages, from package-lock.json)"
  if ! npm ci --no-audit --no-fund --loglevel=error; then
    echo "browser-test: npm ci failed in e2e/browser" >&2
    if in_ci; then exit 1; fi
  fi
  ;;
report)
  why=$(missing)
  [ -n "$why" ] || exit 0
  line='************************************************************************'
  if in_ci; then
    printf '%s\nFAILED: the browser test (e2e/browser) could not run: %s\n%s\n' "$line" "$why" "$line" >&2
  else
    printf '%s\nSKIPPED: the browser test (e2e/browser) did not run: %s\n%s\n' "$line" "$why" "$line" >&2
  fi
  ;;
*)
  echo "usage: $0 prepare|report" >&2
  exit 2
  ;;
esac
