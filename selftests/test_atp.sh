#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: ps-ina as ATP designs it, with a pool so small that slot
# collisions are the rule (4 slots for a 1 MiB tensor of 342 blocks):
#
#        h0 (PS)  h1  h2          h3  h4  h5
#          \      |   /            \   |   /
#           t0 (plain)             t1 (INA ToR, pool=4)
#                 \                 /
#                  +----- spine ---+
#
# The ToR aggregates h3..h5's shares in its pool; a share whose slot holds
# another block passes on to the PS unaggregated, a share sent again
# flushes what the slot holds of its block; the PS sums coverages.
# `rinxctl bench --verify` compares every element with a reference the
# bench computes on its own (int32 bit-exact, float32 within the bound);
# the ToR's counters must show both aggregated blocks and passed-on shares.
# Then the same under 1% drop + 1% dup + 1% reorder on every switch port,
# and once with a slot per block (pool=0).
#
#   selftests/test_atp.sh [builddir]
#
# RINX_NS_PREFIX (default rxA) starts the namespaces' names.
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}${RINX_NS_PREFIX:-rxA}$$	# unique: runs can overlap
TIMEOUT_MS=20000	# per allreduce without progress
BENCH_LIMIT=240		# seconds for one bench run, whatever happens
spec=/run/rinx-testbed/$P.spec
n=0
fail=0

# bench NAME DTYPE SIZES: one verified sweep of ps-ina, two TAP lines
bench() {
	local name=$1 dt=$2 sizes=$3 out rc t0=$SECONDS

	out=$(timeout -k 5 $BENCH_LIMIT "$rinxctl" bench --spec "$spec" \
		--plan ps-ina --verify --iters 3 --warmup 0 --dtype "$dt" \
		--sizes "$sizes" --timeout $TIMEOUT_MS 2>&1)
	rc=$?
	echo "$out" | grep -vE '^#  +bytes' | diag
	echo "# ($((SECONDS - t0)) s)"
	ok $rc "$name: $dt: bench --verify exit status ($rc)"
	msg=$(verified_sizes "$out" "$sizes"; echo "$out" |
		grep -q '^# verify: every element ok;' || echo "no summary")
	[ -z "$msg" ]
	ok $? "$name: $dt: every element of every size verified"
	[ -n "$msg" ] && echo "$msg" | diag
}

# tor_counter NAME: the ToR aggregator's counter NAME (0 if not shown)
tor_counter() {
	"$rinxctl" testbed show "$P" 2>/dev/null |
		awk -v k="$1" '/agg1 counters:/ { for (i = 1; i <= NF; i++) {
			split($i, a, "="); if (a[1] == k) v = a[2] } }
			END { print v + 0 }'
}

needs_root ip timeout awk sed
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "1..18"
out=$("$rinxctl" testbed up --prefix "$P" --racks 2 --per-rack 3 \
	--ina none,switch 2>&1)
rc=$?
ok $rc "testbed up: 2 racks x 3, rack 1 an INA ToR"
if [ $rc -ne 0 ]; then
	echo "$out" | diag
	exit 1
fi
sed -i 's/^\(rack id=1 ina=switch.*\)$/\1 pool=4/' "$spec"
out=$("$rinxctl" plan --spec "$spec" --plan ps-ina 2>&1)
echo "$out" | grep -E 'agg1|^  reduce  at h0' | diag
echo "$out" | grep -q 'at agg1 .*agg+fwd .*in a pool of 4 slots' &&
	echo "$out" | grep -q 'at h0 .*by coverage (partial sums from {agg1})'
ok $? "rinxctl plan: the ToR aggregates in a pool of 4 slots, the PS by coverage"

bench "pool=4" float32 4,3076,1048576
bench "pool=4" int32 1048576
agg=$(tor_counter agg_done) pass=$(tor_counter pool_pass)
flush=$(tor_counter pool_flush) add=$(tor_counter agg_add)
echo "# ToR: $agg sums complete, $add shares added, $pass shares passed on" \
	"(collisions), $flush partial sums flushed"
[ "$agg" -gt 0 ] && [ "$pass" -gt 0 ]
ok $? "pool=4: the ToR aggregated blocks ($agg) and passed shares on ($pass)"
[ "$(tor_counter aborted)" -eq 0 ]
ok $? "pool=4: the ToR never aborted"

out=$("$rinxctl" testbed fault "$P" --all --drop 10000 --dup 10000 \
	--reorder 10000 2>&1)
ok $? "1% drop + 1% dup + 1% reorder on every port"
bench "pool=4, faults" float32 3076,1048576
bench "pool=4, faults" int32 1048576
out=$("$rinxctl" stats --spec "$spec" --node h0 2>&1)
echo "$out" | grep -E 'agg_overlap|drop_agg_dup|agg_done' | diag

out=$("$rinxctl" testbed fault "$P" --all --drop 0 --dup 0 --reorder 0 2>&1)
ok $? "faults off"
sed -i 's/ pool=4$/ pool=0/' "$spec"
pass0=$(tor_counter pool_pass)
bench "pool=0 (a slot per block)" int32 1048576
[ "$(tor_counter pool_pass)" -eq "$pass0" ]
ok $? "pool=0: no share passed on"

"$rinxctl" testbed down "$P" 2>&1 | diag
rc=${PIPESTATUS[0]}
[ $rc -eq 0 ] && [ -z "$(ours)" ] && [ ! -e "$spec" ]
ok $? "testbed down, no namespace or spec left"

if [ $fail -ne 0 ]; then
	echo "# $fail of $n failed"
	exit 1
fi
exit 0
