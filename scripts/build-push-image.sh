#!/bin/sh
# Builds the lock-reaper image from this checkout for linux/amd64 and
# linux/arm64 and pushes it to a registry of your own (an air-gapped
# cluster's, say), stamped with the version, the commit and the build date:
# --build-arg VERSION (`lock-reaper version` and the
# org.opencontainers.image.version label), REVISION (.revision) and
# BUILD_DATE (.created). It prints the pushed digest and the Helm values
# that pin it.
#
# Usage: IMAGE=registry.example.com/pulp/lock-reaper [VERSION=0.1.0]
#        [PLATFORMS=linux/amd64,linux/arm64] [BUILDER=auto|docker|podman]
#        [DRY_RUN=1] scripts/build-push-image.sh
#   VERSION defaults to the chart's appVersion; the image is tagged with it.
#   REVISION defaults to git rev-parse HEAD (-dirty with local changes).
#   BUILDER auto takes docker with buildx when docker is installed, else
#   podman (RHEL). Docker's default builder (driver "docker") cannot build
#   several platforms at once: the script then creates and uses a builder of
#   the docker-container driver, lock-reaper-builder, once. No emulation is
#   needed: the Dockerfile cross-compiles on the build host's platform.
#   DRY_RUN=1 prints the commands that would create a builder, build and
#   push, and runs none of them.
#   Log in to the registry first (docker login / podman login).
#
# A single-platform image for your own machine needs none of this:
#   docker build -t lock-reaper .
set -eu

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

: "${IMAGE:?set IMAGE to the repository to push to, e.g. registry.example.com/pulp/lock-reaper}"
VERSION="${VERSION:-$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/lock-reaper/Chart.yaml)}"
PLATFORMS="${PLATFORMS:-linux/amd64,linux/arm64}"
BUILDER="${BUILDER:-auto}"
DRY_RUN="${DRY_RUN:-}"
BUILD_DATE="${BUILD_DATE:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}"
# REVISION: the commit, marked -dirty when tracked files differ from it.
if [ -z "${REVISION:-}" ]; then
	REVISION="$(git rev-parse HEAD)"
	if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
		REVISION="$REVISION-dirty"
	fi
fi
builder_name=lock-reaper-builder

say() { echo "build-push-image: $*" >&2; }

# run runs a command that creates, builds or pushes; DRY_RUN prints it.
run() {
	if [ -n "$DRY_RUN" ]; then
		printf '+' && printf ' %s' "$@" && printf '\n'
	else
		"$@"
	fi
}

case "$BUILDER" in
auto)
	if command -v docker >/dev/null 2>&1; then
		BUILDER=docker
	elif command -v podman >/dev/null 2>&1; then
		BUILDER=podman
	else
		say "neither docker (with buildx) nor podman is installed: install one (Debian/Ubuntu apt-get install docker.io docker-buildx, RHEL/Fedora dnf install podman)"
		exit 1
	fi
	;;
docker | podman) ;;
*)
	say "BUILDER=$BUILDER: want auto, docker or podman"
	exit 2
	;;
esac

# multi_platform_driver says whether the current buildx builder can build
# several platforms in one image: the docker driver cannot, the
# docker-container, kubernetes and remote drivers can.
multi_platform_driver() {
	driver="$(docker buildx inspect 2>/dev/null | sed -n 's/^Driver: *//p' | head -n 1)"
	case "$driver" in
	docker-container | kubernetes | remote) return 0 ;;
	*) return 1 ;;
	esac
}

metadata="$(mktemp)"
trap 'rm -f "$metadata"' EXIT
if [ "$BUILDER" = docker ]; then
	if ! docker buildx version >/dev/null 2>&1; then
		say "docker has no buildx plugin: install it (Debian/Ubuntu apt-get install docker-buildx), or use BUILDER=podman"
		exit 1
	fi
	if multi_platform_driver; then
		say "building with docker buildx, builder $(docker buildx inspect | sed -n 's/^Name: *//p' | head -n 1) (driver $driver)"
	elif docker buildx inspect "$builder_name" >/dev/null 2>&1; then
		say "building with docker buildx, builder $builder_name (the current builder's driver \"$driver\" builds one platform only)"
		run docker buildx use "$builder_name"
	else
		say "building with docker buildx: creating builder $builder_name (driver docker-container; the current builder's driver \"$driver\" builds one platform only)"
		run docker buildx create --use --name "$builder_name" --driver docker-container
	fi
	run docker buildx build \
		--platform "$PLATFORMS" \
		--build-arg "VERSION=$VERSION" \
		--build-arg "REVISION=$REVISION" \
		--build-arg "BUILD_DATE=$BUILD_DATE" \
		--tag "$IMAGE:$VERSION" \
		--metadata-file "$metadata" \
		--push \
		.
	[ -z "$DRY_RUN" ] || exit 0
	digest="$(sed -n 's/.*"containerimage.digest": *"\(sha256:[0-9a-f]\{64\}\)".*/\1/p' "$metadata" | head -n 1)"
else
	say "building with podman (a manifest list of $PLATFORMS)"
	# A manifest list of the same name left by an earlier run would gather
	# this run's images beside that run's.
	if [ -z "$DRY_RUN" ]; then
		podman manifest rm "$IMAGE:$VERSION" >/dev/null 2>&1 || true
	fi
	run podman build \
		--platform "$PLATFORMS" \
		--build-arg "VERSION=$VERSION" \
		--build-arg "REVISION=$REVISION" \
		--build-arg "BUILD_DATE=$BUILD_DATE" \
		--manifest "$IMAGE:$VERSION" \
		.
	run podman manifest push --all --digestfile "$metadata" "$IMAGE:$VERSION" "docker://$IMAGE:$VERSION"
	[ -z "$DRY_RUN" ] || exit 0
	digest="$(grep -o 'sha256:[0-9a-f]\{64\}' "$metadata" | head -n 1)"
fi

if [ -z "$digest" ]; then
	say "pushed $IMAGE:$VERSION; no digest in the build's output: read it with docker buildx imagetools inspect $IMAGE:$VERSION (or skopeo inspect docker://$IMAGE:$VERSION)"
	exit 1
fi
echo "pushed $IMAGE:$VERSION@$digest (revision $REVISION)"
echo "Helm values:"
echo "  --set image.repository=$IMAGE --set image.tag=$VERSION --set image.digest=$digest"
