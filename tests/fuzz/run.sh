#!/usr/bin/env bash
# run.sh - run the libFuzzer harnesses that `make fuzz-build` puts in
# build-fuzz/ (FUZZ_BUILD). Each run first replays the committed seeds
# (tests/fuzz/corpus/<harness>/) and crash reproducers
# (tests/fuzz/crashes/<harness>/), then fuzzes; new inputs go to
# build-fuzz/corpus/<harness>/, crashes to build-fuzz/artifacts/<harness>/,
# the full log to build-fuzz/logs/<harness>.log. Exits 1 if any harness
# crashed, hung (-timeout) or leaked.
#
#   tests/fuzz/run.sh [--time S] [HARNESS...]  fuzz each S seconds (10)
#   tests/fuzz/run.sh --replay [HARNESS...]    only replay seeds, crashes
#   tests/fuzz/run.sh --seeds                  regenerate the seed corpora
#
# HARNESS is fuzz_attach, fuzz_commands, fuzz_scribble, fuzz_shmctl_args
# or fuzz_restore (default: all). FUZZ_ARGS adds libFuzzer options (e.g. -jobs=2).
set -euo pipefail

cd "$(dirname "$0")/../.."
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
time=10
mode=fuzz
harnesses=()

while [ $# -gt 0 ]; do
	case $1 in
	--time)
		time=$2
		shift
		;;
	--replay) mode=replay ;;
	--seeds) mode=seeds ;;
	-h | --help)
		sed -n '2,17s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	-*)
		echo "run.sh: unknown option $1" >&2
		exit 2
		;;
	*) harnesses+=("$1") ;;
	esac
	shift
done
if [ ${#harnesses[@]} -eq 0 ]; then
	for src in tests/fuzz/fuzz_*.c; do
		harnesses+=("$(basename "$src" .c)")
	done
fi

# What a run leaves in /dev/shm when it crashes: names carry its pid.
cleanup_shm() {
	local h=${1#fuzz_} pid=$2

	[ "$h" = shmctl_args ] && h=args
	rm -f /dev/shm/shmkv-fuzz-"$h"-"$pid"-*
}

# One stat line from a libFuzzer log: "stat::name: value".
fuzz_stat() {
	sed -n "s/^stat::$2: *//p" "$1" | tail -n 1
}

summary() {
	local h=$1 log=$2 cov

	cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" |
		tail -n 1)
	printf '%-18s %10s execs %7s exec/s  %s  peak rss %s MB\n' "$h" \
		"$(fuzz_stat "$log" number_of_executed_units)" \
		"$(fuzz_stat "$log" average_exec_per_sec)" "${cov:-cov: ?}" \
		"$(fuzz_stat "$log" peak_rss_mb)"
}

run_one() {
	local h=$1 bin=$FUZZ_BUILD/$1 log=$FUZZ_BUILD/logs/$1.log
	local dirs=() opts=() pid rc=0

	[ -x "$bin" ] || {
		echo "run.sh: $bin missing: make fuzz-build" >&2
		return 1
	}
	mkdir -p "$FUZZ_BUILD/corpus/$h" "$FUZZ_BUILD/artifacts/$h" \
		"$FUZZ_BUILD/logs"
	# The first directory is where libFuzzer adds inputs: never ours.
	dirs+=("$FUZZ_BUILD/corpus/$h" "tests/fuzz/corpus/$h")
	[ -d "tests/fuzz/crashes/$h" ] && dirs+=("tests/fuzz/crashes/$h")
	[ -f "tests/fuzz/$h.dict" ] && opts+=("-dict=tests/fuzz/$h.dict")
	if [ "$mode" = replay ]; then
		opts+=(-runs=0)
	else
		opts+=("-max_total_time=$time")
	fi
	# -timeout: a single input running 10 s is a hang (a typical one
	# takes well under a millisecond). -max_len: the seeds are smaller.
	# shellcheck disable=SC2086
	"$bin" "${opts[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
		-print_final_stats=1 -artifact_prefix="$FUZZ_BUILD/artifacts/$h/" \
		${FUZZ_ARGS:-} "${dirs[@]}" >"$log" 2>&1 &
	pid=$!
	wait "$pid" || rc=$?
	cleanup_shm "$h" "$pid"
	summary "$h" "$log"
	if [ "$rc" -ne 0 ]; then
		echo "run.sh: $h FAILED (exit $rc); log $log:" >&2
		grep -E -A 30 '^==[0-9]+==|property broken|ERROR: libFuzzer' \
			"$log" | head -n 60 >&2
		# shellcheck disable=SC2012 # names are crash-<sha1>: plain
		echo "run.sh: newest artifact (the failing input):" \
			"$(ls -td "$FUZZ_BUILD/artifacts/$h/"* 2>/dev/null |
				head -n 1)" >&2
		return 1
	fi
}

if [ "$mode" = seeds ]; then
	# Overwrites the generated seeds; other files there stay.
	for h in "${harnesses[@]}"; do
		mkdir -p "tests/fuzz/corpus/$h"
		FUZZ_SEEDS_OUT="tests/fuzz/corpus/$h" "$FUZZ_BUILD/$h"
	done
	exit 0
fi

failed=0
for h in "${harnesses[@]}"; do
	run_one "$h" || failed=1
done
exit "$failed"
