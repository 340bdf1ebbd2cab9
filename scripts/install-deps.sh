#!/bin/sh
# install-deps.sh - install what building and testing shmkv needs, on Debian.
#
# Idempotent: checks each dependency and touches nothing when all are
# present. Otherwise, as root, runs apt-get update once and installs the
# missing packages; not root, names them and exits 1.
set -eu

missing=""

need() {
	# need PACKAGE: PACKAGE is missing; list it once.
	case " $missing " in
	*" $1 "*) ;;
	*) missing="${missing:+$missing }$1" ;;
	esac
}

have_cmd() {
	command -v "$1" >/dev/null 2>&1
}

# Asks the compiler, so the multiarch include dirs count.
have_header() {
	have_cmd cc || return 1
	echo "#include <$1>" | cc -E -x c - >/dev/null 2>&1
}

have_cmd cc || need build-essential
have_cmd make || need build-essential
have_header urcu/uatomic.h || need liburcu-dev
have_header urcu/rculfhash.h || need liburcu-dev
[ -f /usr/include/criterion/criterion.h ] || need libcriterion-dev
have_header hiredis/hiredis.h || need libhiredis-dev
have_cmd redis-server || [ -x /usr/bin/redis-server ] || need redis-server
have_cmd pkg-config || need pkg-config
have_cmd tmux || need tmux
have_cmd gnuplot || need gnuplot-nox
have_header editline/readline.h || need libedit-dev

# make fuzz (tests/fuzz/): clang, and its libFuzzer runtime, which Debian
# ships apart (libclang-rt-dev; clang only recommends it). Asks the linker.
have_fuzzer() {
	have_cmd clang || return 1
	echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)
{ (void)d; (void)n; return 0; }' |
		clang -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1
}
have_cmd clang || need clang
have_fuzzer || need libclang-rt-dev

# make lint, make valgrind, make tsan (clang's ThreadSanitizer runtime is
# in libclang-rt-dev too; asked of the linker, like the fuzzer's).
have_tsan() {
	have_cmd clang || return 1
	echo 'int main(void) { return 0; }' |
		clang -fsanitize=thread -x c - -o /dev/null >/dev/null 2>&1
}
have_cmd cppcheck || need cppcheck
have_cmd clang-tidy || need clang-tidy
have_cmd valgrind || need valgrind
have_tsan || need libclang-rt-dev
# tests/tsan.supp matches function names, which the TSan runtime gets from
# llvm-symbolizer: Debian's llvm ships it (clang does not pull it in).
have_cmd llvm-symbolizer || need llvm

# make model (tests/model/): the spin model checker.
have_cmd spin || need spin

# The Python module (python/): built against Debian's interpreter and its
# headers, tested with its pytest and redis-py (the differential test),
# installed into a venv by a test (venv, pip, setuptools: no PyPI).
have_py_mod() {
	[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import $1" >/dev/null 2>&1
}
[ -f "$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)/Python.h" ] ||
	need python3-dev
have_py_mod pytest || need python3-pytest
have_py_mod setuptools || need python3-setuptools
have_py_mod wheel || need python3-wheel
have_py_mod ensurepip || need python3-venv
have_py_mod pip || need python3-pip
have_py_mod redis || need python3-redis

if [ -z "$missing" ]; then
	echo "deps: all present"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages: $missing" >&2
	echo "deps: run as root: apt-get update &&" \
		"apt-get install -y --no-install-recommends $missing" >&2
	exit 1
fi

echo "deps: installing $missing"

# Keep package scripts from starting daemons (redis-server): tests start
# their own on private ports, and a container has no init to run them.
# Only a policy file we created is removed again.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
	trap 'exit 1' INT TERM
fi

export DEBIAN_FRONTEND=noninteractive
# Wait for another apt run (a colleague's) instead of failing on its lock.
apt-get -o DPkg::Lock::Timeout=600 update
# $missing is a space-separated list of package names: split it.
# shellcheck disable=SC2086
apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends \
	$missing
echo "deps: installed $missing"
