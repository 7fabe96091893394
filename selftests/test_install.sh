#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `make install` and `make uninstall` into a staging directory (DESTDIR):
#
#   make install DESTDIR=$T PREFIX=/usr   every file where docs/install.md
#                                          says, the soname links, rinx.pc
#   cc prog.c $(pkg-config rinx)          a program that includes only the
#     (PKG_CONFIG_SYSROOT_DIR=$T)         installed librinx.h, linked with the
#                                          installed librinx.so and, a second
#                                          time, statically with librinx.a
#   ./prog bad.spec                       rinx_comm_open fails on a bad spec
#                                          with librinx's text; no network
#   /usr/bin/python3 -c 'import rinx'     the installed package, its librinx
#     (PYTHONPATH=$T/usr/lib/python3/...) the installed one
#   make uninstall ...                    not a file left under $T
#
# and the same install with PREFIX=/usr/local: its Python directory must be
# one Debian's /usr/bin/python3 searches. Needs no root and no namespace.
#
#   selftests/test_install.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/.." && pwd)
build=${1:-${RINX_BUILD:-$root/build}}
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
n=0 fail=0

for tool in make cc pkg-config /usr/bin/python3 readelf; do
	command -v $tool >/dev/null || {
		echo "1..0 # SKIP $tool not installed"
		exit 4
	}
done
[ -x "$build/rinxctl" ] && [ -f "$build/librinx.so" ] || {
	echo "1..0 # SKIP $build is not built (make all)"
	exit 4
}
# install writes rinx.pc for its PREFIX into the build: a user who may not
# write there (a run without root on root's build) cannot install from it
[ -w "$build" ] || {
	echo "1..0 # SKIP $build is not writable (make install writes rinx.pc there)"
	exit 4
}

T=$(mktemp -d /tmp/rinx-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
mk() { make -s --no-print-directory -C "$root" OUT="$build" "$@"; }
# every file and link under a staging directory, relative to it
files() { (cd "$1" && find . -mindepth 1 ! -type d | sed 's|^\./||' | sort); }

echo "1..17"

stage=$T/stage
mk install DESTDIR="$stage" PREFIX=/usr >"$T/log" 2>&1
ok $? "make install DESTDIR PREFIX=/usr"
diag <"$T/log"
py=usr/lib/python3/dist-packages
expect="usr/bin/rinxctl
usr/include/librinx.h
usr/lib/librinx.a
usr/lib/librinx.so
usr/lib/librinx.so.1
usr/lib/librinx.so.1.5.0
usr/lib/pkgconfig/rinx.pc
$py/rinx/__init__.py
$py/rinx/_backend.py
$py/rinx/_lib.py
$py/rinx/librinx.so
$py/rinx/osp.py
$py/rinx/ps.py
$py/rinx/sync.py
$py/rinx/torch.py
usr/share/doc/rinx/LICENSE
usr/share/man/man8/rinxctl.8"
# the MPI interposer where mpicc built it (make check installs Open MPI)
command -v "${MPICC:-mpicc}" >/dev/null &&
	expect="$expect
usr/lib/librinx-mpi.so"
got=$(files "$stage")
[ "$got" = "$(sort <<<"$expect")" ]
ok $? "installed files are the documented ones"
[ "$got" = "$(sort <<<"$expect")" ] ||
	diff <(sort <<<"$expect") <(echo "$got") | diag

lib=$stage/usr/lib
[ "$(readlink "$lib/librinx.so")" = librinx.so.1 ] &&
	[ "$(readlink "$lib/librinx.so.1")" = librinx.so.1.5.0 ] &&
	readelf -d "$lib/librinx.so.1.5.0" | grep -q 'SONAME.*\[librinx\.so\.1\]'
ok $? "librinx.so -> librinx.so.1 -> librinx.so.1.5.0, soname librinx.so.1"

cmp -s "$build/librinx.so" "$lib/librinx.so.1.5.0" &&
	cmp -s "$build/librinx.a" "$lib/librinx.a" &&
	cmp -s "$root/user/librinx.h" "$stage/usr/include/librinx.h" &&
	cmp -s "$build/rinxctl.8" "$stage/usr/share/man/man8/rinxctl.8" &&
	cmp -s "$root/LICENSE" "$stage/usr/share/doc/rinx/LICENSE"
ok $? "library, archive, header, man page and LICENSE are the built ones"

"$stage/usr/bin/rinxctl" --help >"$T/help" 2>&1 &&
	"$build/rinxctl" --help | cmp -s - "$T/help"
ok $? "installed rinxctl runs (--help)"

# pkg-config as a cross build sees it: the .pc names /usr, the sysroot
# puts the staging directory in front
export PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_PATH=$lib/pkgconfig
ver=$(pkg-config --modversion rinx 2>&1)
[ "$ver" = 1.5.0 ] && grep -qx 'prefix=/usr' "$lib/pkgconfig/rinx.pc"
ok $? "pkg-config finds rinx $ver, prefix=/usr"

mkdir -p "$T/src"
cat >"$T/src/prog.c" <<'EOF'
/* A trainer's view: the installed header and library, nothing else. */
#include <errno.h>
#include <stdio.h>
#include <librinx.h>

int main(int argc, char **argv)
{
	struct rinx_comm_opts o = { .sz = sizeof(o), .spec = argv[1],
				    .rank = 0, .job = 1 };
	struct rinx_comm *c = (struct rinx_comm *)&o;
	int err;

	if (argc != 2)
		return 2;
	err = rinx_comm_open(&o, &c);
	printf("open %d%s: %s\n", err, c ? " (comm set)" : "",
	       rinx_comm_error(NULL));
	printf("bound %.17g\n", rinx_f32_bound(4, 1.0));
	return err == -EINVAL && !c ? 0 : 1;
}
EOF
printf 'cluster port=47001\nswitch id=0\n' >"$T/src/bad.spec"
want="open -$(/usr/bin/python3 -c 'import errno; print(errno.EINVAL)'): line 2: unknown record 'switch' (cluster, rack, host)"

cflags=$(pkg-config --cflags rinx) && libs=$(pkg-config --libs rinx) &&
	cc -std=c11 -Wall -Wextra -Werror $cflags -o "$T/src/prog" \
	   "$T/src/prog.c" $libs >"$T/log" 2>&1
ok $? "compile and link with pkg-config --cflags --libs rinx ($libs)"
diag <"$T/log"

readelf -d "$T/src/prog" | grep -q 'NEEDED.*\[librinx\.so\.1\]' &&
	LD_LIBRARY_PATH=$lib ldd "$T/src/prog" | grep -q "librinx.so.1 => $lib/librinx.so.1 "
ok $? "the program needs librinx.so.1 and loads the installed one"

out=$(LD_LIBRARY_PATH=$lib "$T/src/prog" "$T/src/bad.spec" 2>&1)
rc=$?
[ $rc -eq 0 ] && [ "$(head -n 1 <<<"$out")" = "$want" ]
ok $? "rinx_comm_open on a bad spec: -EINVAL and librinx's text"
echo "$out" | diag
bound=$(sed -n 's/^bound //p' <<<"$out")

slibs=$(pkg-config --static --libs rinx | sed 's/-lrinx/-l:librinx.a/') &&
	cc -std=c11 -Wall -Wextra -Werror $cflags -o "$T/src/prog-static" \
	   "$T/src/prog.c" $slibs >"$T/log" 2>&1 &&
	! readelf -d "$T/src/prog-static" | grep -q 'NEEDED.*librinx' &&
	[ "$("$T/src/prog-static" "$T/src/bad.spec" 2>&1)" = "$out" ]
ok $? "linked with librinx.a (pkg-config --static): no librinx.so needed, same output"
diag <"$T/log"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH

# The installed package, not the build tree's: from /, without
# RINX_LIBRARY; the library it maps must be the installed file. Byte code
# allowed, as for any user, so that uninstall must remove it too.
pyout=$(cd / && env -u RINX_LIBRARY -u PYTHONDONTWRITEBYTECODE \
	PYTHONPATH="$stage/$py" /usr/bin/python3 -c '
import rinx
print(rinx.__file__)
maps = [l.split()[-1] for l in open("/proc/self/maps") if "librinx" in l]
print(maps[0] if maps else "librinx not mapped")
print("bound %.17g" % rinx.f32_bound(4, 1.0))
' 2>&1)
[ $? -eq 0 ] && [ -d "$stage/$py/rinx/__pycache__" ]
ok $? "python3 imports rinx from the installed tree (and writes its byte code)"
echo "$pyout" | diag
[ "$(sed -n 1p <<<"$pyout")" = "$stage/$py/rinx/__init__.py" ] &&
	[ "$(sed -n 2p <<<"$pyout")" = "$lib/librinx.so.1.5.0" ]
ok $? "the package is the installed one and maps the installed librinx"
[ -n "$bound" ] && [ "$(sed -n 3p <<<"$pyout")" = "bound $bound" ]
ok $? "rinx.f32_bound from Python equals rinx_f32_bound from C ($bound)"

mk uninstall DESTDIR="$stage" PREFIX=/usr >"$T/log" 2>&1
ok $? "make uninstall DESTDIR PREFIX=/usr"
diag <"$T/log"
left=$(files "$stage")
[ -z "$left" ] && [ ! -e "$stage/$py/rinx" ]
ok $? "nothing left after uninstall (byte code included)"
[ -z "$left" ] || echo "$left" | diag

# /usr/local: the package must land where Debian's python3 looks
local=$T/local
mk install DESTDIR="$local" PREFIX=/usr/local >"$T/log" 2>&1 &&
	init=$(cd "$local" && find . -path '*/rinx/__init__.py' | sed 's|^\.||') &&
	dir=${init%/rinx/__init__.py} && [ -n "$dir" ] &&
	/usr/bin/python3 -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "$dir"
ok $? "PREFIX=/usr/local: the package's directory (${dir:-none}) is on /usr/bin/python3's path"
diag <"$T/log"
mk uninstall DESTDIR="$local" PREFIX=/usr/local >"$T/log" 2>&1 &&
	[ -z "$(files "$local")" ]
ok $? "PREFIX=/usr/local: uninstall leaves nothing"
diag <"$T/log"

exit $((fail > 0))
