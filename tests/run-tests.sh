#!/usr/bin/env bash
# The test suite `make test` runs (and so CI): unit and multi-process tests,
# the differential test against a real redis-server, and a short run of each
# benchmark so they cannot rot. BUILD is set by the Makefile.
set -euo pipefail

BUILD=${BUILD:-build}
cd "$(dirname "$0")/.."

passed=0
step() {
	[ -z "${current:-}" ] || passed=$((passed + 1))
	current=$*
	printf '\n== %s\n' "$*"
}

step "unit and multi-process tests (Criterion)"
"$BUILD"/tests/unit --jobs 2

step "differential test against redis-server"
# Exit 77 means redis-server is missing: a failure here, never a pass, since
# `make test` installs it. Several seeds, each a fresh random stream.
for seed in 1 2 3 4 5; do
	"$BUILD"/tests/diff_redis --seed "$seed" --ops 20000
done

step "benchmarks, a few iterations each (figures not meaningful)"
"$BUILD"/bench/bench_core --quick >/dev/null
"$BUILD"/bench/bench_lock --quick >/dev/null
echo "bench_core, bench_lock: ran"

step "demo (its own store name, so a user's /shmkv is never touched)"
"$BUILD"/shmkv-demo --workers 4 --cycles 2000 --name "/shmkv-demo-test-$$"
passed=$((passed + 1))

# Each step above stops the script on failure (set -e), so reaching here
# means every step passed.
printf '\nrun-tests: %d passed, 0 failed\n' "$passed"
