#!/bin/sh
# bench/run.sh - runs the benchmark suite: tables on stdout, CSV and logs
# under the results directory, PNG plots (when gnuplot is installed) and
# the README's Performance section (bench/README.md) regenerated from them.
#
#   bench/run.sh            full run (~10 minutes on 2 cores); results to
#                           bench/results/, the section to bench/README.md
#   QUICK=1 bench/run.sh    smoke run (seconds); everything goes under
#                           $BUILD/bench/quick/, so the committed results
#                           are never overwritten
#   BUILD=dir               where the Makefile put bench/<program> (build)
#   SANITIZE=...            (set by make) a sanitized build's results go to
#                           $BUILD/bench/results/, never to bench/results/
#   BENCHES="core ..."      which programs (bench_<name>) to run (their
#                           lines are added to run.txt: the record of the
#                           last full run stays at its head); default:
#                           core table scale lock misses memory grow
#                           tablegrow evict backends instr python
#                           ("instr" is bench/instr.sh: instructions per
#                           call counted by callgrind; "python" is
#                           bench/python_bench.py, run by
#                           $PYTHON, default /usr/bin/python3, with the
#                           module `make python` built in $BUILD/python;
#                           neither under SANITIZE)
#
# bench_misses gets --private-shm 1 when run as root: it mounts a tmpfs
# with huge=advise on /dev/shm in a mount namespace of its own, so that a
# store can be measured on huge pages without reconfiguring the system's
# /dev/shm (nothing outside that process sees the mount).
#   RUNS=N                  timed runs per figure (each program's default)
#
# Every bench program takes --quick, --runs N and --csv PATH (bench.h).
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
	readme=$outdir/README.md
elif [ -n "${SANITIZE:-}" ]; then
	# Sanitized figures are not results: keep them out of bench/.
	flags=
	outdir=$bindir/results
	readme=$outdir/README.md
else
	flags=
	outdir=$root/bench/results
	readme=$root/bench/README.md
fi
if [ -n "${RUNS:-}" ]; then
	flags="$flags --runs $RUNS"
fi
benches=${BENCHES:-core table scale lock misses memory grow tablegrow evict backends instr python}

mkdir -p "$outdir"
started=$(date +%s)
# A run of some programs (BENCHES) adds to the record of the last full
# run, whose results the other programs' sections still show.
if [ -n "${BENCHES:-}" ] && [ -s "$outdir/run.txt" ]; then
	record="tee -a"
else
	record=tee
fi
echo "# bench/run.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)" |
	$record "$outdir/run.txt"
status=0
for name in $benches; do
	if [ "$name" = instr ]; then
		if [ -n "${SANITIZE:-}" ]; then
			# valgrind cannot run a sanitized program.
			echo "== instr: skipped under SANITIZE=$SANITIZE"
			continue
		fi
		echo "== bench/instr.sh (callgrind)"
		t0=$(date +%s)
		if ! BUILD=$build QUICK=$quick bash "$root/bench/instr.sh" "$outdir"; then
			echo "bench/run.sh: bench/instr.sh failed" >&2
			status=1
			continue
		fi
		echo "(instr: $(($(date +%s) - t0)) s;" \
			"csv: ${outdir#"$root"/}/instr.csv)" | tee -a "$outdir/run.txt"
		echo
		continue
	fi
	if [ "$name" = python ]; then
		if [ -n "${SANITIZE:-}" ]; then
			# An interpreter cannot load a sanitized module
			# without the runtime preloaded.
			echo "== python: skipped under SANITIZE=$SANITIZE"
			continue
		fi
		# Python's figures come from the interpreter, not a C program:
		# same flags, same log and CSV beside the others.
		py=${PYTHON:-/usr/bin/python3}
		echo "== bench/python_bench.py${flags:+ $flags}"
		t0=$(date +%s)
		# shellcheck disable=SC2086 # $flags: options without blanks inside
		{
			rc=0
			PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH} \
				"$py" "$root/bench/python_bench.py" $flags \
				--csv "$outdir/python.csv" || rc=$?
			echo $rc >"$outdir/.rc"
		} | tee "$outdir/python.txt"
		if [ "$(cat "$outdir/.rc")" != 0 ]; then
			echo "bench/run.sh: bench/python_bench.py failed" >&2
			status=1
			continue
		fi
		echo "(python: $(($(date +%s) - t0)) s;" \
			"csv: ${outdir#"$root"/}/python.csv)" | tee -a "$outdir/run.txt"
		echo
		continue
	fi
	prog=$bindir/bench_$name
	if [ ! -x "$prog" ]; then
		echo "bench/run.sh: $prog not built; run make first" >&2
		status=1
		continue
	fi
	own=
	if [ "$name" = misses ] && [ "$(id -u)" = 0 ]; then
		own="--private-shm 1"
	fi
	echo "== bench_$name${flags:+ $flags}${own:+ $own}"
	t0=$(date +%s)
	# The table goes to the terminal and to a log beside the CSV; the
	# program's exit status comes back through a file (POSIX sh has no
	# pipefail).
	# shellcheck disable=SC2086 # $flags, $own: options without blanks inside
	{
		rc=0
		"$prog" $flags $own --csv "$outdir/$name.csv" || rc=$?
		echo $rc >"$outdir/.rc"
	} | tee "$outdir/$name.txt"
	if [ "$(cat "$outdir/.rc")" != 0 ]; then
		echo "bench/run.sh: bench_$name failed" >&2
		status=1
		continue
	fi
	echo "(bench_$name: $(($(date +%s) - t0)) s;" \
		"csv: ${outdir#"$root"/}/$name.csv)" | tee -a "$outdir/run.txt"
	echo
done
rm -f "$outdir/.rc"
echo "# finished after $(($(date +%s) - started)) s, load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$outdir/run.txt"

if command -v gnuplot >/dev/null 2>&1; then
	if gnuplot -e "dir='$outdir'; src='$root/bench'" "$root/bench/plot.gp"; then
		echo "plots:" "$outdir"/*.png
	else
		echo "bench/run.sh: gnuplot failed" >&2
		status=1
	fi
else
	echo "bench/run.sh: gnuplot not installed: no plots" \
		"(apt-get install gnuplot-nox)" >&2
fi
if [ $status -eq 0 ]; then
	sh "$root/bench/report.sh" "$outdir" >"$readme.tmp"
	mv "$readme.tmp" "$readme"
	echo "section: ${readme#"$root"/}"
fi
exit $status
