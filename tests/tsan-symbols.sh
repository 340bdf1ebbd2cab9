#!/usr/bin/env bash
# tsan-symbols.sh CC - fails unless a ThreadSanitizer build made by CC
# names the functions in its reports. tests/tsan.supp matches function
# names: a runtime that cannot symbolize prints every frame as <null>,
# nothing is suppressed, and the by-design seqlock reads of tsan_stress
# bury the run in reports that say nothing. The runtime symbolizes with
# an external llvm-symbolizer (Debian's package llvm, make deps), so a
# tiny race is provoked and its report must name the racing function.
set -euo pipefail

CC=${1:-clang}
tmp=$(mktemp -d /tmp/shmkv-tsan-symbols.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The thread writes, then raises a relaxed flag (no happens-before for
# TSan); main waits for it and writes: the race is always reported, with
# the thread's function in the report's second stack.
cat >"$tmp/race.c" <<'EOF'
#include <pthread.h>
#include <stdatomic.h>

static int racy_word;
static atomic_int written;

static void *tsan_symbols_probe_writer(void *arg)
{
	(void)arg;
	racy_word = 1;
	atomic_store_explicit(&written, 1, memory_order_relaxed);
	return NULL;
}

int main(void)
{
	pthread_t thread;

	if (pthread_create(&thread, NULL, tsan_symbols_probe_writer, NULL))
		return 2;
	while (!atomic_load_explicit(&written, memory_order_relaxed))
		;
	racy_word = 2;
	return pthread_join(thread, NULL) ? 2 : 0;
}
EOF

if ! "$CC" -g -O0 -fsanitize=thread "$tmp/race.c" -o "$tmp/race" \
	-lpthread 2>"$tmp/cc.log"; then
	cat "$tmp/cc.log" >&2
	echo "tsan-symbols: $CC cannot build with -fsanitize=thread" \
		"(its runtime: libclang-rt-dev, make deps)" >&2
	exit 1
fi
# Only the report is wanted: its exit status is not the question here.
TSAN_OPTIONS='exitcode=0 halt_on_error=0' "$tmp/race" >"$tmp/report" 2>&1 ||
	true
if ! grep -q 'WARNING: ThreadSanitizer: data race' "$tmp/report"; then
	cat "$tmp/report" >&2
	echo "tsan-symbols: the probe's race was not reported (above)" >&2
	exit 1
fi
if ! grep -q 'tsan_symbols_probe_writer' "$tmp/report"; then
	echo "ThreadSanitizer cannot symbolize frames: llvm-symbolizer" \
		"missing; suppressions would match nothing" \
		"(install Debian's llvm: make deps)" >&2
	exit 1
fi
