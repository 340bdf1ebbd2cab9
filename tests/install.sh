#!/usr/bin/env bash
# tests/install.sh BUILD - `make install` as a user of the library meets
# it: installed into a PREFIX of a temporary directory, a program built
# with pkg-config's flags from there (and -Wl,-rpath, since that PREFIX is
# no directory of the loader's) runs, on the installed shared library and
# not the build's; shmctl runs from bindir; a DESTDIR install stages the
# same files under PREFIX /usr/local with a .pc that names /usr/local; the
# ldconfig of a system install runs only for the loader's directories,
# never for a DESTDIR; uninstall removes every file install put.
set -euo pipefail

BUILD=${1:-${BUILD:-build}}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d /tmp/shmkv-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "install test: $*" >&2
	exit 1
}
# Quiet make that still shows its errors; BUILD shared with the caller.
mk() { make -s --no-print-directory BUILD="$BUILD" "$@" >"$tmp/make.log" ||
	{ cat "$tmp/make.log" >&2; fail "make $*"; }; }

# A stand-in ldconfig: lists $tmp/sys/lib as one of the loader's
# directories (for -v -N -X) and logs any other call.
cat >"$tmp/ldconfig" <<EOS
#!/bin/sh
if [ "\$*" = "-v -N -X" ]; then echo "$tmp/sys/lib: (from test)"; exit 0; fi
echo "ldconfig \$*" >>"$tmp/ldconfig.log"
EOS
chmod +x "$tmp/ldconfig"

# 1. PREFIX in a temporary directory, the way a user without root would.
prefix=$tmp/prefix
mk install PREFIX="$prefix" LDCONFIG="$tmp/ldconfig"
[ ! -e "$tmp/ldconfig.log" ] || fail "ldconfig ran for $prefix/lib: $(cat "$tmp/ldconfig.log")"
for f in lib/libshmkv.a lib/libshmkv.so lib/libshmkv.so.0 include/shmkv.h \
	include/shmkv_lock.h include/shmkv_exec.h lib/pkgconfig/shmkv.pc \
	bin/shmctl share/man/man1/shmctl.1 share/doc/shmkv/LICENSE; do
	[ -e "$prefix/$f" ] || fail "make install put no $prefix/$f"
done
"$prefix/bin/shmctl" --version >/dev/null || fail "installed shmctl does not run"

cat >"$tmp/app.c" <<'EOC'
#include <shmkv.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char name[64], buf[16];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	shmkv_t *kv;
	int rc;

	snprintf(name, sizeof(name), "shmkv-install-test-%ld", (long)getpid());
	rc = shmkv_create(name, NULL, &kv);
	if (rc) {
		fprintf(stderr, "create %s: %s\n", name, shmkv_strerror(rc));
		return 1;
	}
	rc = shmkv_set(kv, "k", 1, "installed", 9, 0, 0, NULL);
	if (rc == 1)
		rc = shmkv_get(kv, "k", 1, &v);
	shmkv_close(kv);
	shmkv_unlink(name);
	if (rc != 1 || v.len != 9 || memcmp(buf, "installed", 9) != 0)
		return 1;
	printf("shmkv %s: ok\n", shmkv_version(NULL, NULL, NULL));
	return 0;
}
EOC
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
libdir=$(pkg-config --variable=libdir shmkv)
[ "$libdir" = "$prefix/lib" ] || fail "shmkv.pc's libdir is $libdir, not $prefix/lib"
# shellcheck disable=SC2046 # pkg-config's flags are words
cc -o "$tmp/app" "$tmp/app.c" $(pkg-config --cflags --libs shmkv) \
	-Wl,-rpath,"$libdir" || fail "cannot build against the install"
out=$(env -u LD_LIBRARY_PATH "$tmp/app") || fail "the program built with pkg-config and -rpath fails"
case $out in "shmkv "*": ok") ;; *) fail "program said: $out" ;; esac
# (ldd's output kept whole: grep -q would stop reading it, and pipefail
# would take ldd's SIGPIPE for a failure.)
libs=$(ldd "$tmp/app")
case $libs in *"libshmkv.so.0 => $prefix/lib/libshmkv.so.0 "*) ;;
*) fail "the program does not load $prefix/lib's library: $libs" ;;
esac
# Without the rpath, LD_LIBRARY_PATH finds it instead.
# shellcheck disable=SC2046
cc -o "$tmp/app-norpath" "$tmp/app.c" $(pkg-config --cflags --libs shmkv)
LD_LIBRARY_PATH=$libdir "$tmp/app-norpath" >/dev/null ||
	fail "the program without -rpath fails under LD_LIBRARY_PATH"
# Static: pkg-config --static adds Libs.private.
# shellcheck disable=SC2046
cc -static-libgcc -o "$tmp/app-static" "$tmp/app.c" \
	$(pkg-config --cflags shmkv) "$prefix/lib/libshmkv.a" \
	$(pkg-config --static --libs-only-l shmkv | sed 's/-lshmkv//') ||
	fail "cannot link the static library"
"$tmp/app-static" >/dev/null || fail "the statically linked program fails"
unset PKG_CONFIG_PATH

mk uninstall PREFIX="$prefix" LDCONFIG="$tmp/ldconfig"
left=$(find "$prefix" -type f -o -type l)
[ -z "$left" ] || fail "uninstall left: $left"

# 2. A staged install (DESTDIR) for PREFIX /usr/local: no ldconfig, files
# under the stage, and a .pc for where the package will put them.
mk install DESTDIR="$tmp/stage" PREFIX=/usr/local LDCONFIG="$tmp/ldconfig"
[ ! -e "$tmp/ldconfig.log" ] || fail "ldconfig ran for a DESTDIR install"
grep -qx 'libdir=/usr/local/lib' "$tmp/stage/usr/local/lib/pkgconfig/shmkv.pc" ||
	fail "staged shmkv.pc does not name /usr/local/lib"
[ -x "$tmp/stage/usr/local/bin/shmctl" ] || fail "no staged shmctl"
mk uninstall DESTDIR="$tmp/stage" PREFIX=/usr/local LDCONFIG="$tmp/ldconfig"
left=$(find "$tmp/stage" -type f -o -type l)
[ -z "$left" ] || fail "uninstall left: $left"

# 3. A system install (the loader's directory, as root, no DESTDIR) runs
# ldconfig once, and uninstall once more.
if [ "$(id -u)" = 0 ]; then
	mk install PREFIX="$tmp/sys" LDCONFIG="$tmp/ldconfig"
	[ "$(cat "$tmp/ldconfig.log" 2>/dev/null)" = "ldconfig " ] ||
		fail "a system install did not run ldconfig once: $(cat "$tmp/ldconfig.log" 2>/dev/null)"
	mk uninstall PREFIX="$tmp/sys" LDCONFIG="$tmp/ldconfig"
	[ "$(wc -l <"$tmp/ldconfig.log")" = 2 ] || fail "uninstall did not run ldconfig"
else
	echo "install test: not root: the system install's ldconfig is not checked"
fi
echo "install test: PREFIX, DESTDIR, pkg-config + rpath, static, uninstall: ok"
