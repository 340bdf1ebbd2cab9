#!/usr/bin/env bash
# valgrind-shmctl.sh - runs shmctl through every command under valgrind's
# memcheck (make valgrind): each run must exit as shmctl documents and
# valgrind must find no invalid access, no use of uninitialised memory and
# no leak (definite or indirect).
#
# usage: tests/valgrind-shmctl.sh [SHMCTL]   (default: $BUILD/shmctl)
#
# Valgrind's error exit code is 99, not 1: shmctl itself exits 1 for a nil
# reply, and the expected status of every run is checked.
set -euo pipefail

BUILD=${BUILD:-build}
cd "$(dirname "$0")/.."
SHMCTL=${1:-$BUILD/shmctl}
VG_ERR=99
store=/shmkv-valgrind-$$
work=$(mktemp -d)
runs=0

cleanup() {
	"$SHMCTL" destroy "$store" --force >/dev/null 2>&1 || true
	"$SHMCTL" destroy "$store-huge" --force >/dev/null 2>&1 || true
	"$SHMCTL" destroy "$store-bad" --force >/dev/null 2>&1 || true
	"$SHMCTL" destroy "$store-small" --force >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

command -v valgrind >/dev/null || {
	echo "valgrind-shmctl: valgrind is not installed (make deps)" >&2
	exit 1
}
[ -x "$SHMCTL" ] || {
	echo "valgrind-shmctl: $SHMCTL is not built" >&2
	exit 1
}

# vg WANT ARGS...: runs shmctl ARGS under memcheck (stdin inherited) and
# fails unless it exits WANT; valgrind's report goes to a log kept on error.
vg() {
	local want=$1 rc=0 log
	shift
	runs=$((runs + 1))
	log=$work/vg.$runs.log
	valgrind --quiet --error-exitcode=$VG_ERR --leak-check=full \
		--show-leak-kinds=definite,indirect \
		--errors-for-leak-kinds=definite,indirect \
		--track-origins=yes --log-file="$log" \
		"$SHMCTL" "$@" >"$work/out" 2>"$work/err" || rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "valgrind-shmctl: shmctl $* exited $rc, expected $want" >&2
		[ "$rc" -ne $VG_ERR ] || cat "$log" >&2
		cat "$work/err" >&2
		exit 1
	fi
}

vg 0 --version
vg 2 create # usage error: no name
vg 0 create "$store" --slots 64 --value-max 512 --max-memory 8m \
	--maxmemory-policy volatile-ttl --mode 600
vg 3 create "$store" # exists
vg 2 create "$store-bad" --maxmemory-policy lru # usage error: no such policy
# A huge-page store: create measures what it got, info in a pre-faulted
# mapping (both read /proc/self/smaps).
vg 0 create "$store-huge" --slots 64 --huge-pages
vg 0 info "$store-huge"
vg 0 info --json "$store-huge"
vg 0 destroy --force "$store-huge"
vg 0 "$store" set greeting hello
vg 0 "$store" set n 41
vg 0 "$store" incr n
vg 0 "$store" set lease abc PX 600000
vg 1 "$store" setnx greeting other # exists: 0
vg 1 "$store" get missing
vg 0 "$store" getset greeting "$(head -c 300 /dev/zero | tr '\0' x)"
vg 0 "$store" get greeting
vg 0 "$store" expire n 600
vg 0 "$store" ttl n
vg 0 "$store" delifeq lease abc
vg 5 "$store" incr greeting # ERR value is not an integer
vg 0 "$store" ping
vg 0 --raw "$store" get n
vg 0 --no-raw "$store" get n
FAKETTY=1 vg 0 "$store" get n
vg 0 "$store" dbsize
vg 0 "$store" keys 'g*'
vg 5 "$store" kyes # unknown: Redis's reply, then "did you mean 'keys'?"
vg 3 inof "$store" # no such store /inof: "did you mean 'info'?"
vg 2 help dbsiez
SHMKV_STORE=$store vg 0 get greeting # the default store
printf 'dbsize\nkeys *\nhelp keys\nkyes\n' | vg 0 "$store"
vg 2 create "$store-small" --slots 1024 --memory 384k # below 448 KiB
printf 'set typed 1\nget typed\nincrby typed 5\n' | vg 0 "$store"
vg 0 keys "$store"
vg 0 keys "$store" 'g*' --json
vg 0 scan "$store" 0 --count 64
vg 0 info "$store"
vg 0 info "$store" --json
vg 0 ls
vg 0 locks "$store" --json
vg 0 check "$store"
vg 0 check "$store" --json
vg 0 recover "$store"
vg 0 sweep "$store" --json
# The table (64 slots) doubles under these writes; maintain finishes a
# growth left under way, or says there is none.
for i in $(seq 1 120); do echo "set grow:$i $i"; done | vg 0 "$store"
vg 0 maintain "$store"
vg 0 maintain "$store" --json
vg 0 "$store" maintain
printf 'maintain\n' | vg 0 "$store"
vg 2 maintain # usage error: no name
vg 3 maintain "$store-bad" # no such store
vg 0 config "$store" get
vg 0 config "$store" set maxmemory 0
vg 2 config "$store" set maxmemory 1k
vg 0 config "$store" get maxmemory-policy
vg 0 config "$store" get 'MAXMEMORY*'
vg 2 config "$store" set maxmemory-policy lru
# An LRU policy: the dump below reads on a read-only handle, which records
# no use.
vg 0 config "$store" set maxmemory-policy allkeys-lru
vg 0 watch "$store" --interval 0.1 --count 1 </dev/null
vg 0 dump "$store" --output "$work/dump"
vg 0 dump "$store"
vg 0 destroy "$store" --force </dev/null
vg 3 info "$store" # gone
vg 0 restore "$store" "$work/dump"
vg 0 "$store" get greeting
vg 0 check "$store"
printf 'not a dump\n' >"$work/bad"
vg 6 restore "$store" "$work/bad"
# All or nothing: 24 keys do not fit a table of 16 slots that may not
# grow; in a store restore creates (removed) and in an existing one (the
# keys it wrote put back). The limit that keeps it from growing is its
# initial size, which create's refusal of a smaller one says.
small_max=$({ "$SHMCTL" create "$store-small" --slots 16 --key-max 16 \
	--value-max 64 --memory 192k --max-memory 1 2>&1 || true; } |
	sed -n 's/.* below the \([0-9]*\) KiB this store uses.*/\1/p')
[ -n "$small_max" ] || {
	echo "valgrind-shmctl: create did not say the store's initial size" >&2
	exit 1
}
small_max=$((small_max * 1024))
{
	echo "SHMKV-DUMP 1 slots=16 key_max=16 value_max=64 probe_limit=16" \
		"value_memory=196608 max_memory=$small_max mode=0600"
	for i in $(seq 0 23); do echo "\"k$i\" \"v\" -1"; done
	echo "END 24"
} >"$work/big"
vg 3 restore "$store-small" "$work/big"
vg 0 create "$store-small" --slots 16 --key-max 16 --value-max 64 \
	--memory 192k --max-memory "$small_max"
vg 0 "$store-small" set k3 old
vg 3 restore "$store-small" "$work/big"
vg 0 "$store-small" get k3
vg 0 destroy "$store-small" --force </dev/null
vg 0 destroy "$store" --force </dev/null
echo "valgrind-shmctl: $runs runs of shmctl under memcheck, all clean"
