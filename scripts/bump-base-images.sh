#!/bin/sh
# Bumps the Dockerfile's base images: each `FROM image:tag@sha256:...` gets
# the digest that the registry serves for image:tag now, and the golang tag
# follows go.mod's go directive. Review the diff and commit it; a build never
# moves to new bases on its own.
#
# Usage: scripts/bump-base-images.sh [DOCKERFILE]
#   DOCKERFILE defaults to the repository's Dockerfile.
# Needs one of: crane (go-containerregistry), or docker with buildx. Both
# print the digest of the multi-arch index, which every platform resolves.
set -eu

root="$(cd "$(dirname "$0")/.." && pwd)"
dockerfile="${1:-$root/Dockerfile}"

digest() {
	if command -v crane >/dev/null 2>&1; then
		crane digest "$1"
	elif command -v docker >/dev/null 2>&1; then
		docker buildx imagetools inspect --format '{{.Manifest.Digest}}' "$1"
	else
		echo "bump-base-images: needs crane or docker buildx to look up $1" >&2
		exit 1
	fi
}

go_version="$(sed -n 's/^go \([0-9][0-9.]*\)[[:space:]]*$/\1/p' "$root/go.mod")"
[ -n "$go_version" ] || { echo "bump-base-images: no go directive in $root/go.mod" >&2; exit 1; }

tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
# The golang tag is go.mod's release, keeping the variant (-bookworm).
sed "s|golang:[0-9][0-9.]*\(-[a-z0-9]*\)\{0,1\}@|golang:$go_version\1@|" "$dockerfile" >"$tmp"

refs="$(awk '$1 == "FROM" { for (i = 2; i <= NF; i++) if ($i ~ /@sha256:/) { sub(/@.*/, "", $i); print $i } }' "$tmp")"
for ref in $refs; do
	new="$(digest "$ref")"
	case "$new" in
	sha256:????????????????????????????????????????????????????????????????) ;;
	*) echo "bump-base-images: $ref: not a digest: $new" >&2; exit 1 ;;
	esac
	sed "s|$ref@sha256:[0-9a-f]\{64\}|$ref@$new|" "$tmp" >"$tmp.next" && mv "$tmp.next" "$tmp"
	echo "$ref@$new"
done
cat "$tmp" >"$dockerfile"
