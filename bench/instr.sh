#!/usr/bin/env bash
# instr.sh - instructions per acquire+release cycle of the safe and the
# pattern lock, counted by callgrind (which the VM's noise cannot move):
# build/bench/lock_instr runs 1,000 and 2,000 cycles, and the difference
# of the two totals over 1,000 is one cycle's cost, set-up cancelled out.
# Then the same for integers (build/bench/int_instr): formatting and
# parsing one, and GET of an inline integer as text and as a number.
# Run by `make bench-instr`.
set -euo pipefail
cd "$(dirname "$0")/.."
prog=${BUILD:-build}/bench/lock_instr
iprog=${BUILD:-build}/bench/int_instr
total() { # kind cycles [program]
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "${3:-$prog}" "$1" "$2" 2>&1 |
		sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for kind in safe pattern; do
	a=$(total "$kind" 1000)
	b=$(total "$kind" 2000)
	echo "$kind lock: $(((b - a) / 1000)) instructions per acquire+release"
done
for op in ll2string string2ll get key_get get_int key_get_int; do
	a=$(total "$op" 100000 "$iprog")
	b=$(total "$op" 200000 "$iprog")
	echo "$op: $(((b - a) / 100000)) instructions per call"
done
