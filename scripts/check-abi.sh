#!/usr/bin/env bash
# check-abi.sh BUILD_DIR - the library exports exactly its public API.
#
# Three lists must be equal, or this fails naming each difference:
#   1. the functions BUILD_DIR/libshmkv.so exports (nm -D --defined-only,
#      type T, version suffix dropped);
#   2. the names in src/libshmkv.map (every version node);
#   3. the functions declared with SHMKV_API in include/*.h.
# Also no internal shmkv__* symbol (of any type) may be exported.
# Exit: 0 equal, 1 a difference, 2 usage or a missing file.
set -euo pipefail

usage() {
	echo "usage: $0 BUILD_DIR  (the directory holding libshmkv.so)" >&2
	exit 2
}
[ $# -eq 1 ] || usage
lib=$1/libshmkv.so
cd "$(dirname "$0")/.."
map=src/libshmkv.map
for f in "$lib" "$map"; do
	[ -r "$f" ] || { echo "check-abi: cannot read $f" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The text of files without their /* */ and // comments, so a name in a
# comment is never taken for a declaration.
strip_comments() {
	awk '{
		line = $0; out = ""
		while (line != "") {
			if (in_comment) {
				i = index(line, "*/")
				if (i == 0) { line = ""; break }
				line = substr(line, i + 2); in_comment = 0
			} else {
				i = index(line, "/*")
				if (i == 0) { out = out line; line = "" }
				else {
					out = out substr(line, 1, i - 1)
					line = substr(line, i + 2); in_comment = 1
				}
			}
		}
		sub(/\/\/.*/, "", out)
		print out
	}' "$@"
}

# 1. Exported functions. _init and _fini are the linker's, not ours.
nm -D --defined-only "$lib" |
	awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' |
	grep -v -x -e _init -e _fini | sort -u >"$tmp/exported" || true

# 2. The map's names: every "name;" line (a global of some node).
strip_comments "$map" |
	sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);[[:space:]]*$/\1/p' |
	sort -u >"$tmp/map"

# 3. Declarations marked SHMKV_API: preprocessor lines dropped (the
# marker's own #define), then each "SHMKV_API <type> name(" joined up
# whatever its line breaks.
strip_comments include/*.h | grep -v '^[[:space:]]*#' | tr '\n' ' ' |
	grep -o 'SHMKV_API[^;{}()]*(' |
	sed 's/.*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*($/\1/' |
	sort -u >"$tmp/header"

fail=0
# Prints each name of list $1 missing from list $2, with the reason $3.
missing() {
	local name
	for name in $(comm -23 "$tmp/$1" "$tmp/$2"); do
		echo "check-abi: $name: $3" >&2
		fail=1
	done
}
missing exported map "exported by $lib but not in $map"
missing map exported "in $map but not exported by $lib"
missing header map "declared SHMKV_API in include/ but not in $map"
missing map header "in $map but not declared SHMKV_API in include/"

internal=$(nm -D --defined-only "$lib" |
	awk '$3 ~ /^shmkv__/ { sub(/@.*/, "", $3); print $3 }')
for name in $internal; do
	echo "check-abi: $name: internal (shmkv__) symbol exported" >&2
	fail=1
done

if [ "$fail" -ne 0 ]; then
	echo "check-abi: FAILED: the exports, the map and the headers differ" >&2
	exit 1
fi
echo "check-abi: $(wc -l <"$tmp/map") functions: exports, map and headers agree"
