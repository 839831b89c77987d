#!/bin/sh
# Builds the lock-reaper image from this checkout and pushes it to a registry
# of your own (an air-gapped cluster's, say), stamped with the version and
# the commit: --build-arg VERSION (the binary's `lock-reaper --version` and
# the org.opencontainers.image.version label) and REVISION (the
# org.opencontainers.image.revision label). It prints the pushed digest and
# the Helm values that pin it.
#
# Usage: IMAGE=registry.example.com/pulp/lock-reaper [VERSION=0.1.0]
#        [PLATFORMS=linux/amd64,linux/arm64] scripts/build-push-image.sh
#   VERSION defaults to the chart's appVersion; the image is tagged with it.
#   REVISION defaults to git rev-parse HEAD (-dirty with local changes).
#   Needs docker with buildx, logged in to the registry (docker login).
set -eu

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

: "${IMAGE:?set IMAGE to the repository to push to, e.g. registry.example.com/pulp/lock-reaper}"
VERSION="${VERSION:-$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/lock-reaper/Chart.yaml)}"
PLATFORMS="${PLATFORMS:-linux/amd64,linux/arm64}"
# REVISION: the commit, marked -dirty when tracked files differ from it.
if [ -z "${REVISION:-}" ]; then
	REVISION="$(git rev-parse HEAD)"
	if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
		REVISION="$REVISION-dirty"
	fi
fi

metadata="$(mktemp)"
trap 'rm -f "$metadata"' EXIT
docker buildx build \
	--platform "$PLATFORMS" \
	--build-arg "VERSION=$VERSION" \
	--build-arg "REVISION=$REVISION" \
	--tag "$IMAGE:$VERSION" \
	--metadata-file "$metadata" \
	--push \
	.

digest="$(sed -n 's/.*"containerimage.digest": *"\(sha256:[0-9a-f]\{64\}\)".*/\1/p' "$metadata" | head -n 1)"
if [ -z "$digest" ]; then
	echo "pushed $IMAGE:$VERSION; no digest in the build metadata: read it with docker buildx imagetools inspect $IMAGE:$VERSION" >&2
	exit 1
fi
echo "pushed $IMAGE:$VERSION@$digest (revision $REVISION)"
echo "Helm values:"
echo "  --set image.repository=$IMAGE --set image.tag=$VERSION --set image.digest=$digest"
