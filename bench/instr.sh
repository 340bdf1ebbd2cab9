#!/usr/bin/env bash
# instr.sh - instructions and locked (atomic) instructions per call,
# counted by callgrind, which the VM's noise cannot move:
#
#   bash bench/instr.sh [OUTDIR]    (make bench-instr; bench/run.sh too)
#
# - every command of issue 12's goal table (bench/ops_instr.c) by shmkv
#   (plain API and prepared key) and its baselines (the mutex map,
#   rculfhash): ops_instr runs N and 2N calls under
#   valgrind --tool=callgrind --collect-bus=yes
#   --toggle-collect=ops_instr_call, so only the calls under test count;
#   (total at 2N - total at N) / N is one call's cost, event Ir for
#   instructions and Ge ("global bus events": lock-prefixed and other
#   atomic read-modify-write instructions) for locked ones;
# - a safe and a pattern lock's acquire+release cycle (bench/lock_instr.c),
#   the same way over the whole program (its set-up cancels out);
# - integers alone (bench/int_instr.c): formatting and parsing one, and a
#   GET of an inline integer as text and as a number, plain and prepared,
#   over the whole program too (its loop's few instructions included).
#
# Writes OUTDIR/instr.csv and OUTDIR/instr.txt (default bench/results;
# QUICK=1: fewer calls, and OUTDIR defaults to $BUILD/bench/quick). The
# table names the commit whose src/ it measured.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
quick=${QUICK:-0}
[ "$quick" = 0 ] && quick=
if [ -n "$quick" ]; then
	out=${1:-$build/bench/quick}
	calls=64 cycles=100 icalls=1000
else
	out=${1:-bench/results}
	calls=1024 cycles=1000 icalls=100000
fi
ops_prog=$build/bench/ops_instr
lock_prog=$build/bench/lock_instr
int_prog=$build/bench/int_instr
if ! command -v valgrind >/dev/null 2>&1; then
	echo "instr.sh: valgrind not installed (make deps, or apt-get install valgrind)" >&2
	exit 1
fi
for p in "$ops_prog" "$lock_prog" "$int_prog"; do
	if [ ! -x "$p" ]; then
		echo "instr.sh: $p not built; run make bench-build" >&2
		exit 1
	fi
done
mkdir -p "$out"

# "Ir Ge" collected by one run of "$@" under callgrind (extra callgrind
# options first, up to --); exit status 3 from ops_instr: no such command.
counts() {
	local opts=() log rc=0
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	log=$(valgrind --tool=callgrind --collect-bus=yes \
		--callgrind-out-file=/dev/null "${opts[@]}" "$@" 2>&1) || rc=$?
	if [ $rc -ne 0 ]; then
		[ $rc -eq 3 ] && return 3
		printf 'instr.sh: %s failed under valgrind:\n%s\n' "$*" "$log" >&2
		exit 1
	fi
	# "Collected : Ir Ge"; callgrind leaves a zero Ge out.
	sed -n 's/.*Collected : \([0-9]*\) *\([0-9]*\).*/\1 \2/p' <<<"$log" |
		awk '{ print $1, $2 == "" ? 0 : $2 }'
}

# Per call: (2N run - N run) / N, for Ir and Ge; "-" "-" if unsupported.
per_call() { # n opts... -- prog args... (the count last)
	local n=$1 a b rc=0
	shift
	a=$(counts "$@" "$n") || rc=$?
	[ $rc -eq 3 ] && { echo "- -"; return; }
	[ $rc -eq 0 ] || exit 1
	b=$(counts "$@" $((2 * n))) || exit 1
	awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		printf("%.1f %.2f\n", (y[1] - x[1]) / n, (y[2] - x[2]) / n)
	}'
}

# What was measured: the commit, and the last one that changed the code.
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
commit="$commit (src/ and include/ as of $(git log -1 --format='%h, %cs' -- src include 2>/dev/null || echo '?'))"
if ! git diff --quiet HEAD -- src include 2>/dev/null; then
	commit="$commit with uncommitted changes to src/ or include/"
fi
impls="shmkv prepared mutex rculfhash"
ops="get_int set_int setnx del setnx_del incr set_16b get_16b set_16b_2l get_16b_2l del_16b delifeq_16b"
csv=$out/instr.csv
echo "impl,op,instructions,locked,calls" >"$csv.tmp"
for op in $ops; do
	for impl in $impls; do
		res=$(per_call "$calls" --toggle-collect=ops_instr_call \
			-- "$ops_prog" "$impl" "$op")
		read -r ir ge <<<"$res"
		echo "$impl,$op,$ir,$ge,$calls" >>"$csv.tmp"
	done
done
for kind in safe pattern; do
	res=$(per_call "$cycles" -- "$lock_prog" "$kind")
	read -r ir ge <<<"$res"
	echo "${kind}_lock,cycle,$ir,$ge,$cycles" >>"$csv.tmp"
done
mv "$csv.tmp" "$csv"

{
	echo "# shmkv instructions per call, counted by callgrind" \
		"($(valgrind --version))${quick:+ (QUICK: smoke run, few calls)}"
	echo "# commit: $commit"
	echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "# method: (total at 2N - total at N) / N calls, N = $calls" \
		"(lock cycles: $cycles); only the calls under test counted;" \
		"in brackets: locked instructions (callgrind's Ge)"
	echo "# keys: 12 bytes; 32768 keys at 50% load; hot key or uniform"
	echo
	awk -F, -v fmt=txt -f bench/instr_table.awk "$csv"
} | tee "$out/instr.txt"

{
	echo
	echo "integers (bench/int_instr.c), instructions per call:"
	for op in ll2string string2ll ll2string_ms string2ll_ms get key_get \
		get_int key_get_int; do
		read -r c _ <<<"$(per_call "$icalls" -- "$int_prog" "$op")"
		printf '  %-12s %6.0f\n' "$op" "$c"
	done
} | tee -a "$out/instr.txt"
