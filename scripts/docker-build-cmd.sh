#!/bin/sh
# Builds lock-reaper outside Docker exactly as the Dockerfile's build stage
# does: the same go build command, the same environment assignment, and the
# same VERSION default as the Dockerfile's `ARG VERSION=dev`.
# deploy/dockerfile_test.go runs this script against the Dockerfile's RUN line
# and fails when they drift apart, so change both together.
#
# Usage: [VERSION=v1.2.3] scripts/docker-build-cmd.sh [OUTPUT]
#   OUTPUT defaults to bin/lock-reaper in the repository root; a relative
#   OUTPUT is taken from the directory the script is called from.
#   GOOS and GOARCH are taken from the environment, as in the Dockerfile.
set -eu

VERSION="${VERSION:-dev}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/bin/lock-reaper}"
case "$out" in
/*) ;;
*) out="$PWD/$out" ;;
esac

cd "$root"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o "$out" .
