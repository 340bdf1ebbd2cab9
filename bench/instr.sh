#!/usr/bin/env bash
# instr.sh - instructions per acquire+release cycle of the safe and the
# pattern lock, counted by callgrind (which the VM's noise cannot move):
# build/bench/lock_instr runs 1,000 and 2,000 cycles, and the difference
# of the two totals over 1,000 is one cycle's cost, set-up cancelled out.
# Run by `make bench-instr`.
set -euo pipefail
cd "$(dirname "$0")/.."
prog=${BUILD:-build}/bench/lock_instr
total() { # kind cycles
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$prog" "$1" "$2" 2>&1 |
		sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for kind in safe pattern; do
	a=$(total "$kind" 1000)
	b=$(total "$kind" 2000)
	echo "$kind lock: $(((b - a) / 1000)) instructions per acquire+release"
done
