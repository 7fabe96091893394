#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The MPI interposer (build/librinx-mpi.so, docs/mpi.md) under mpirun on the
# testbed: a plain MPI program (selftests/mpi/allreduce_check.c, no rinx
# header) runs its cases without and with LD_PRELOAD; every element of
# every result is checked against the program's own reference both ways.
#
#              <P>t0              ToR: rinx_switch on p0..p3
#         p0 /  p1|  p2|  \ p3
#       eth0   eth0  eth0  eth0   host program on eth0, window 256 blocks
#      <P>h0  <P>h1  <P>h2  <P>h3 one MPI rank per host (Open MPI over TCP
#                                  on eth0, tools/mpirun.sh)
#
# With the interposer, RINX_MPI_VERBOSE=1 must show on every rank exactly
# the calls the program makes that rinx takes (float/int SUM on the world,
# a dup, a reversed split) and those that stay with MPI, by reason (MAX,
# double, 0 elements, half of the ranks); librinx's own statistics of the
# world's job must count the operations and the host programs' counters
# must have moved. Then: mismatched sizes end on every rank with
# MPI_ERR_OTHER within the timeout, and the next call fails at once;
# RINX_RANKMAP with the ranks placed in reverse; a missing spec and a bad
# RINX_RANKMAP are reported and abort (MPI_ERRORS_ARE_FATAL).
#
#   selftests/test_mpi.sh [builddir]
#
# Needs Open MPI (tools/deps.sh peers; `make check` installs it). TAP
# output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/.." && pwd)
build=${1:-${RINX_BUILD:-$root/build}}
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
rinxctl=$build/rinxctl
so=$build/librinx-mpi.so
prog=$build/mpi/allreduce_check
mpirun_sh=$root/tools/mpirun.sh
P=${RINX_TEST_NS:-}rxM$$
spec=/run/rinx-testbed/$P.spec
n=0
fail=0
tmp=

skip() {
	echo "1..0 # SKIP $*"
	exit 4
}

[ "$(id -u)" -eq 0 ] || skip "needs root (namespaces, XDP)"
[ -x "$rinxctl" ] || skip "$rinxctl not built (make)"
command -v mpirun >/dev/null && command -v mpicc >/dev/null ||
	skip "Open MPI not installed (tools/deps.sh peers)"
if [ ! -f "$so" ] || [ ! -x "$prog" ]; then
	make -s -C "$root" --no-print-directory OUT="$build" mpi >&2 ||
		skip "make mpi failed"
fi

cleanup() {
	"$rinxctl" testbed down "$P" >/dev/null 2>&1
	for ns in $(ours); do
		ip netns del "$ns" 2>/dev/null
	done
	[ -n "$tmp" ] && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
tmp=$(mktemp -d)

# runs the program under mpirun, bounded; output in $tmp/$1.out
run() {
	local name=$1 secs=$2

	shift 2
	timeout -k 5 "$secs" "$mpirun_sh" "$spec" "$@" >"$tmp/$name.out" 2>&1
}

# the cases' lines ("check<TAB>name<TAB>1|0") as TAP, with a prefix
cases_tap() {
	local file=$1 what=$2 name res

	while IFS=$'\t' read -r _ name res; do
		[ "$res" = 1 ]
		ok $? "$what: $name"
	done < <(grep $'^check\t' "$file")
}

# 26 checks and the 20 cases under the interposer
echo "1..46"
out=$("$rinxctl" testbed up --hosts 4 --prefix "$P" --window 256 2>&1)
rc=$?
echo "$out" | diag
ok $rc "testbed up (4 hosts, window 256, prefix $P)"
[ $rc -eq 0 ] || { echo "Bail out! no testbed"; exit 1; }

# ---- plain MPI: the program and its references are right ----
t0=$SECONDS
run plain 180 -- "$prog"
rc=$?
echo "# plain MPI: $((SECONDS - t0)) s, exit $rc"
grep -v $'^check\t.*\t1$' "$tmp/plain.out" | diag
ok $rc "plain MPI: the program exits 0"
[ "$(grep -c $'^check\t' "$tmp/plain.out")" -eq 20 ]
ok $? "plain MPI: 20 cases reported"

# ---- the same under the interposer ----
"$rinxctl" stats --spec "$spec" --json >"$tmp/stats0" 2>/dev/null
t0=$SECONDS
run rinx 180 --preload "$so" -x RINX_MPI_VERBOSE=1 -- "$prog"
rc=$?
echo "# with librinx-mpi.so: $((SECONDS - t0)) s, exit $rc"
grep -v $'^check\t.*\t1$' "$tmp/rinx.out" | grep -v '^rinx-mpi: ' | diag
ok $rc "interposer: the program exits 0"
cases_tap "$tmp/rinx.out" "interposer"
[ "$(grep -c $'^check\t' "$tmp/rinx.out")" -eq 20 ]
ok $? "interposer: 20 cases reported"

# what went where, on every rank (the program's calls, counted by hand)
want() {	# want LINE-SUFFIX DESCRIPTION
	local k=0 r

	for r in 0 1 2 3; do
		grep -qxF "rinx-mpi: rank $r: $1" "$tmp/rinx.out" && k=$((k + 1))
	done
	[ $k -eq 4 ]
	ok $? "$2 (4 of 4 ranks: '$1')"
}
want "MPI_Allreduce -> rinx 10 calls 33653292 bytes" \
	"verbose: the 10 float/int SUM allreduces on world, dup, reversed split went to rinx"
want "MPI_Allreduce -> MPI 4 calls 48000 bytes (op 1, datatype 1, empty 1, communicator 1)" \
	"verbose: MPI_MAX, MPI_DOUBLE, 0 elements and half of the ranks went to MPI"
want "MPI_Iallreduce -> rinx 10 calls 1475112 bytes" \
	"verbose: the 10 float/int SUM iallreduces went to rinx"
want "MPI_Iallreduce -> MPI 1 calls 16000 bytes (datatype 1)" \
	"verbose: the MPI_DOUBLE iallreduce went to MPI"
k=$(grep -cE '^rinx-mpi: rank [0-3]: rinx job [0-9]+ \(MPI_COMM_WORLD\): 12 ops 34544020 bytes, .* 0 timeouts' "$tmp/rinx.out")
[ "$k" -eq 4 ]
ok $? "librinx's statistics of the world's job: 12 ops, 34544020 bytes, no timeout (4 of 4 ranks)"
k=$(grep -cE '^rinx-mpi: rank [0-3]: rinx job [0-9]+ \(' "$tmp/rinx.out")
[ "$k" -eq 16 ]
ok $? "four rinx jobs per rank (world, two dups, reversed split): $k lines"
"$rinxctl" stats --spec "$spec" --json >"$tmp/stats1" 2>/dev/null
moved() {	# total of counter $1 over the hosts in a stats --json file
	grep -o "\"$1\":[0-9]*" "$2" | awk -F: '{ s += $2 } END { print s + 0 }'
}
a=$(moved reduce_finish "$tmp/stats0")
b=$(moved reduce_finish "$tmp/stats1")
[ "$b" -gt "$a" ]
ok $? "host programs finished blocks in XDP during the run (reduce_finish $a -> $b)"
grep -q 'rinx-mpi: .*rinx errors' "$tmp/rinx.out"
[ $? -ne 0 ]
ok $? "no rinx error reported"

# ---- mismatched sizes: an error on every rank, bounded ----
t0=$SECONDS
run mismatch 60 --preload "$so" -x RINX_TIMEOUT=1500 -- "$prog" --mismatch
rc=$?
secs=$((SECONDS - t0))
diag < "$tmp/mismatch.out"
ok $rc "mismatch: the program ends normally ($secs s, exit $rc)"
k=$(awk -F'\t' '$1 == "mismatch" && $3 != 0 && $4 < 9.5 && $5 != 0' "$tmp/mismatch.out" | wc -l)
[ "$k" -eq 4 ]
ok $? "mismatch: MPI_ERR_OTHER returned on 4 of 4 ranks within the 1.5 s timeout + 8 s, and again by the next call ($k)"
grep -qE 'rinx-mpi: rank [0-3]: MPI_Allreduce on MPI_COMM_WORLD .*(different tensor|timed out)' "$tmp/mismatch.out"
ok $? "mismatch: stderr explains (different tensor / timed out)"
grep -qE 'rinx-mpi: rank [0-3]: MPI_Allreduce on MPI_COMM_WORLD: its rinx communicator failed earlier' "$tmp/mismatch.out"
ok $? "mismatch: the next call says the communicator failed earlier"

# ---- RINX_RANKMAP: MPI rank i on the host of spec rank 3-i ----
run rankmap 120 --reverse --preload "$so" -x RINX_RANKMAP=h3,h2,1,0 \
	-x RINX_MPI_VERBOSE=1 -- "$prog"
rc=$?
grep -v $'^check\t.*\t1$' "$tmp/rankmap.out" | grep -v '^rinx-mpi: ' | diag
[ $rc -eq 0 ] && ! grep -q $'^check\t.*\t0$' "$tmp/rankmap.out" &&
	[ "$(grep -c $'^check\t' "$tmp/rankmap.out")" -eq 20 ]
ok $? "RINX_RANKMAP=h3,h2,1,0 with the ranks placed in reverse: 20 cases pass (exit $rc)"
k=$(grep -c 'MPI_Allreduce -> rinx 10 calls' "$tmp/rankmap.out")
[ "$k" -eq 4 ]
ok $? "RINX_RANKMAP: the allreduces went to rinx on 4 of 4 ranks"

# ---- configuration errors: reported, then MPI_ERRORS_ARE_FATAL ----
run nospec 60 -x LD_PRELOAD="$so" -x RINX_SPEC="$tmp/none.spec" -- "$prog"
rc=$?
grep -E 'rinx-mpi|MPI_ERR' "$tmp/nospec.out" | head -n 6 | diag
[ $rc -ne 0 ]
ok $? "missing spec: the job aborts (exit $rc)"
grep -q "rinx-mpi: rank 0: RINX_SPEC: .*none.spec" "$tmp/nospec.out"
ok $? "missing spec: stderr names the spec file"
run badmap 60 --preload "$so" -x RINX_RANKMAP=0,1,1,3 -- "$prog"
rc=$?
grep -E 'rinx-mpi' "$tmp/badmap.out" | head -n 4 | diag
[ $rc -ne 0 ] && grep -q "RINX_RANKMAP names spec rank 1 twice" "$tmp/badmap.out"
ok $? "RINX_RANKMAP=0,1,1,3: aborts with 'names spec rank 1 twice' (exit $rc)"
run badblock 60 --preload "$so" -x RINX_BLOCK=huge -- "$prog"
rc=$?
grep -E 'rinx-mpi' "$tmp/badblock.out" | head -n 4 | diag
[ $rc -ne 0 ] && grep -q "RINX_BLOCK=huge is not mtu, jumbo or largest" "$tmp/badblock.out"
ok $? "RINX_BLOCK=huge: aborts naming it (exit $rc)"
# jumbo blocks at the testbed's MTU (3,400): every rank's open is refused,
# naming the MTU, and the calls fail instead of running
run jumbo 60 --preload "$so" -x RINX_BLOCK=jumbo -x RINX_TIMEOUT=1500 -- "$prog"
rc=$?
grep -E 'rinx-mpi' "$tmp/jumbo.out" | head -n 4 | diag
[ $rc -ne 0 ] && grep -qE 'rinx-mpi: rank [0-3]: opening rinx job .*jumbo blocks .*MTU 3400' "$tmp/jumbo.out"
ok $? "RINX_BLOCK=jumbo below its MTU: the open refused naming the MTU, the program fails (exit $rc)"

# ---- nothing left behind ----
k=$("$rinxctl" stats --spec "$spec" 2>/dev/null | grep -c '^  job [0-9]')
[ "$k" -eq 0 ]
ok $? "no rinx job left installed on the hosts after MPI_Finalize ($k)"
"$rinxctl" testbed down "$P" 2>&1 | diag
rc=${PIPESTATUS[0]}
[ $rc -eq 0 ] && [ -z "$(ours)" ] && [ ! -e "$spec" ]
ok $? "testbed down (exit $rc): no namespace or spec of $P left"
cleanup
trap - EXIT
tmp=
[ $fail -eq 0 ]
