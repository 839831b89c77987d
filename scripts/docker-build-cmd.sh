#!/bin/sh
# Builds lock-reaper outside Docker exactly as the Dockerfile's build stage
# does: the same go build command, the same environment assignment, and the
# same VERSION, REVISION and BUILD_DATE defaults as the Dockerfile's ARGs.
# Outside Docker Go also records the checkout's commit itself (vcs.revision,
# which `lock-reaper version` prefers); the release stamps BUILD_DATE.
# deploy/dockerfile_test.go runs this script against the Dockerfile's RUN line
# and fails when they drift apart, so change both together.
#
# Usage: [VERSION=v1.2.3] [REVISION=<commit>] [BUILD_DATE=<RFC 3339>]
#        scripts/docker-build-cmd.sh [OUTPUT]
#   OUTPUT defaults to bin/lock-reaper in the repository root; a relative
#   OUTPUT is taken from the directory the script is called from.
#   GOOS and GOARCH are taken from the environment, as in the Dockerfile.
set -eu

VERSION="${VERSION:-dev}"
REVISION="${REVISION:-unknown}"
BUILD_DATE="${BUILD_DATE:-unknown}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/bin/lock-reaper}"
case "$out" in
/*) ;;
*) out="$PWD/$out" ;;
esac

cd "$root"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION} -X main.buildDate=${BUILD_DATE}" -o "$out" .
