#!/bin/sh
# bench/run.sh - runs the benchmark suite and prints its tables.
#
#   bench/run.sh            full run; CSV to bench/results/<name>.csv
#   QUICK=1 bench/run.sh    smoke run (seconds); CSV to $BUILD/bench/quick/,
#                           so the committed results are never overwritten
#   BUILD=dir               where the Makefile put bench/<program> (build)
#   SANITIZE=...            (set by make) a sanitized build's CSV goes to
#                           $BUILD/bench/results/, never to bench/results/
#   BENCHES="core ..."      which programs (bench_<name>) to run; default:
#                           every built bench_* program
#   RUNS=N                  timed runs per figure (each program's default)
#
# Every bench program takes --quick and --csv PATH (see bench/bench.h) and
# prints its table on stdout; only the CSV files are kept as results.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case $build in
/*) ;;
*) build=$root/$build ;;
esac
bindir=$build/bench
quick=${QUICK:-0}

if [ "$quick" != 0 ] && [ -n "$quick" ]; then
	flags=--quick
	outdir=$bindir/quick
elif [ -n "${SANITIZE:-}" ]; then
	# Sanitized figures are not results: keep them out of bench/results.
	flags=
	outdir=$bindir/results
else
	flags=
	outdir=$root/bench/results
fi
if [ -n "${RUNS:-}" ]; then
	flags="$flags --runs $RUNS"
fi

benches=${BENCHES:-}
if [ -z "$benches" ]; then
	for prog in "$bindir"/bench_*; do
		[ -x "$prog" ] || continue
		benches="$benches ${prog##*/bench_}"
	done
fi
if [ -z "$benches" ]; then
	echo "bench/run.sh: no bench programs in $bindir; run make first" >&2
	exit 1
fi

mkdir -p "$outdir"
status=0
for name in $benches; do
	prog=$bindir/bench_$name
	if [ ! -x "$prog" ]; then
		echo "bench/run.sh: $prog not built; run make first" >&2
		status=1
		continue
	fi
	echo "== bench_$name${flags:+ $flags}"
	# shellcheck disable=SC2086 # $flags: options without blanks inside
	if ! "$prog" $flags --csv "$outdir/$name.csv"; then
		echo "bench/run.sh: bench_$name failed" >&2
		status=1
		continue
	fi
	echo "(csv: ${outdir#"$root"/}/$name.csv)"
	echo
done
exit $status
