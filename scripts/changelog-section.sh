#!/bin/sh
# Prints the section of CHANGELOG.md (Keep a Changelog) of one version: the
# lines under its "## [VERSION]" heading, up to the next "## " heading,
# without the heading, the file's link definitions and blank lines at either
# end. The release
# workflow makes it the body of the GitHub release, so a tag whose version
# has no section fails the release instead of publishing an empty one.
#
# Usage: scripts/changelog-section.sh VERSION [CHANGELOG]
#   VERSION may carry the tag's leading v (v0.1.0 and 0.1.0 are the same).
#   CHANGELOG defaults to CHANGELOG.md at the repository root.
set -eu

[ $# -ge 1 ] && [ -n "$1" ] || { echo "usage: $0 VERSION [CHANGELOG]" >&2; exit 2; }
version="${1#v}"
file="${2:-$(cd "$(dirname "$0")/.." && pwd)/CHANGELOG.md}"
[ -r "$file" ] || { echo "changelog-section: cannot read $file" >&2; exit 1; }

section="$(awk -v v="$version" '
	/^## / {
		if (found) exit
		heading = $0
		sub(/^## +\[?/, "", heading)
		if (index(heading, v) == 1) {
			rest = substr(heading, length(v) + 1)
			if (rest == "" || rest ~ /^(\]|[ \t])/) { found = 1; next }
		}
	}
	# The link definitions at the end of the file ([0.1.0]: https://...)
	# belong to no section.
	found && !/^\[[^]]+\]: / { print }
' "$file" | sed -e '/./,$!d' | awk '{ lines[NR] = $0 } END { n = NR; while (n > 0 && lines[n] ~ /^[ \t]*$/) n--; for (i = 1; i <= n; i++) print lines[i] }')"

if [ -z "$section" ]; then
	echo "changelog-section: $file has no section \"## [$version]\" (or it is empty): add it before tagging v$version" >&2
	exit 1
fi
printf '%s\n' "$section"
