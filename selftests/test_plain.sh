#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: rinx on plain switches, as on real ones without rinx support
# (`rinxctl testbed up --plain`): the switches forward by MAC, flood group
# MACs like any multicast, never send a frame back out of the port it came
# in by, rewrite nothing at the uplink and aggregate nothing. Rack 0's
# agent host aggregates (ina=agent), rack 1 is plain ring members; every
# link loses, duplicates and reorders 1% of its frames. Every plan that
# needs no switch of rinx's gives exact sums, and the switches' counters
# show that they did nothing of rinx's: no self-addressed frame came back
# (the agent adds its own share in its host program), no rack group was
# handled as one, no aggregation.
#
#      <P>sp
#      /     \
#   <P>t0   <P>t1        plain switches; 1% drop, dup, reorder per port
#  h0 h1 h2  h3 h4 h5    rack 0: agent h0 (ina=agent); rack 1: ina=none
#
#   selftests/test_plain.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxJ$$
spec=/run/rinx-testbed/$P.spec
TIMEOUT_MS=20000
LIMIT=300
SIZES=4,3076,1048576
n=0
fail=0
up=0

# sw_sum COUNTER: the switches' COUNTER summed (testbed show)
sw_sum() {
	"$rinxctl" testbed show "$P" 2>/dev/null |
		grep -oE " $1=[0-9]+" | awk -F= '{ s += $2 } END { print s + 0 }'
}

needs_root ip timeout awk
trap cleanup EXIT
trap 'exit 1' INT TERM
plan 15

"$rinxctl" testbed up --prefix "$P" --racks 2 --per-rack 2 --ina switch \
	--plain >/dev/null 2>&1
rc=$?
[ $rc -ne 0 ] && [ -z "$(ours)" ]
ok $? "testbed up --plain --ina switch refused (a plain ToR cannot aggregate; exit $rc), nothing made"
"$rinxctl" testbed up --prefix "$P" --gen grid-toy --plain >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] && [ -z "$(ours)" ]
ok $? "testbed up --plain --gen refused as a usage error ($rc)"

out=$("$rinxctl" testbed up --prefix "$P" --racks 2 --per-rack 3 \
	--ina agent,none --plain --drop 10000 --dup 10000 --reorder 10000 2>&1)
rc=$?
echo "$out" | diag
ok $rc "testbed up --racks 2 --per-rack 3 --ina agent,none --plain, 1% faults"
[ $rc -eq 0 ] || exit 1
up=1
echo "$out" | grep -q "^testbed $P: .*, plain switches\$"
ok $? "testbed up says plain switches"

# a NIC filters multicast: every host joined its rack's groups and the
# fabric's (rinxctl up), which plain switches flood to it
k=0
for i in 0 1 2 3 4 5; do
	r=$((i / 3))
	m=$(ip -n "${P}h$i" maddr show dev eth0 2>/dev/null)
	for g in 03:72:78:0$r:00:00 03:72:78:0$r:00:01 03:72:78:ff:ff:00; do
		echo "$m" | grep -q "link  *$g" ||
			{ echo "# h$i: $g not joined"; k=1; }
	done
done
ok $k "every host joined its rack's group MACs and the fabric's on eth0"

for pl in ring rina har ps tree dbtree; do
	out=$(timeout -k 5 $LIMIT "$rinxctl" bench --spec "$spec" --verify \
		--iters 2 --warmup 1 --sizes "$SIZES" --timeout $TIMEOUT_MS \
		--plan $pl 2>&1)
	rc=$?
	echo "$out" | diag
	verified_sizes "$out" "$SIZES" | diag
	vs=${PIPESTATUS[0]}
	[ $rc -eq 0 ] && [ "$vs" -eq 0 ] &&
		echo "$out" | grep -q '^# verify: every element ok;'
	ok $? "plan $pl on plain switches under 1% faults: every element verified"
done

"$rinxctl" testbed show "$P" 2>&1 | grep -E "^  $P(t|sp)" | diag
fwd=$(sw_sum fwd)
flood=$(sw_sum flood)
[ "$fwd" -gt 0 ] && [ "$flood" -gt 0 ]
ok $? "the switches forwarded ($fwd) and flooded multicast, the rack groups among it ($flood)"
k=0
for c in hairpin_self drop_hairpin group ina_fwd ina_group ina_drop \
	 drop_no_neigh class_group; do
	v=$(sw_sum $c)
	[ "$v" = 0 ] || { echo "# $c = $v"; k=1; }
done
ok $k "no frame came back by its ingress, no rack group and no aggregation in a switch"
dropped=$(sw_sum fault_drop)
[ "$dropped" -gt 0 ]
ok $? "the ports lost frames ($dropped), repaired by the hosts"

testbed_down_end
