#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: rinx frames follow the network's MTU. A testbed whose every
# link has MTU 1,500 (`rinxctl testbed up --mtu 1500`): blocks of 352
# values in 1,504-byte frames, a 3,168-byte frame could not cross a link.
# Ring, Rina (one rack's ToR aggregates, the other's agent) and the other
# plans give exact sums; a spec whose mtu= the interfaces cannot carry, a
# host whose MTU differs from the others' and an interface below the least
# MTU rinx needs are refused with errors that name the MTU. Then the same
# at MTU 9,000 (jumbo frames: 3,168-byte rinx frames, and the switches
# carry 9,000-byte IP packets of the hosts' stacks).
#
#      <P>sp             rack 0: ToR aggregates (ina=switch)
#      /     \           rack 1: its agent host aggregates (ina=agent)
#   <P>t0   <P>t1        every link: MTU 1500, then 9000
#   h0  h1  h2  h3
#
#   selftests/test_mtu.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxU$$
spec=/run/rinx-testbed/$P.spec
bad_spec=$(mktemp /tmp/rinx-mtu.XXXXXX)
TIMEOUT_MS=20000
LIMIT=300
# whole blocks and tails of both sizes: 1 value, 353 (one small block and
# one value), 769, 1 MiB
SIZES=4,1412,3076,1048576
n=0
fail=0
up=0

cleanup_mtu() {
	rm -f "$bad_spec"
	cleanup
}

# mtu_of NS IF
mtu_of() {
	ip -n "$1" -o link show "$2" 2>/dev/null |
		sed -n 's/.* mtu \([0-9]*\) .*/\1/p'
}

needs_root ip timeout awk ping
trap cleanup_mtu EXIT
trap 'exit 1' INT TERM
plan 21

"$rinxctl" testbed up --prefix "$P" --mtu 1400 >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] && [ -z "$(ours)" ]
ok $? "testbed up --mtu 1400 refused as a usage error ($rc), nothing made"

# ---- MTU 1500 ----
out=$("$rinxctl" testbed up --prefix "$P" --racks 2 --per-rack 2 \
	--ina switch,agent --mtu 1500 2>&1)
rc=$?
echo "$out" | diag
ok $rc "testbed up --racks 2 --per-rack 2 --ina switch,agent --mtu 1500"
[ $rc -eq 0 ] || exit 1
up=1
echo "$out" | grep -q "^testbed $P: .*, MTU 1500\$"
ok $? "testbed up says MTU 1500"
bad=0
for i in 0 1 2 3; do
	r=$((i / 2))
	for end in "${P}h$i eth0" "${P}t$r p$i"; do
		set -- $end
		m=$(mtu_of "$1" "$2")
		[ "$m" = 1500 ] || { echo "# $1 $2: MTU '$m'"; bad=1; }
	done
done
ok $bad "every host link has MTU 1500 at both ends"

bench_verified "MTU 1500, ring, float32" 1504 "$SIZES" --plan ring
bench_verified "MTU 1500, rina (ToR and agent aggregate), float32" 1504 "$SIZES" --plan rina
bench_verified "MTU 1500, rina, int32" 1504 "$SIZES" --plan rina --dtype int32
for pl in ps-ina har; do
	bench_verified "MTU 1500, $pl, float32" 1504 "$SIZES" --plan $pl
done

# a spec asking for more than the interfaces carry
sed 's/^cluster \(.*\)$/cluster \1 mtu=9000/' "$spec" > "$bad_spec"
out=$(timeout -k 5 60 "$rinxctl" bench --spec "$bad_spec" --sizes 4096 \
	--plan ring --timeout 5000 2>&1)
rc=$?
echo "$out" | diag
[ $rc -ne 0 ] &&
	echo "$out" | grep -q "has MTU 1500; the spec's mtu=9000 gives 3168-byte frames, which need an MTU of 3154"
ok $? "spec mtu=9000 on MTU-1500 links: refused at open, naming the MTU needed (3154)"

# one host whose interface (and its port) has a larger MTU: its blocks
# would be larger; every rank that hears it says so
ip -n "${P}h0" link set eth0 mtu 3400 && ip -n "${P}t0" link set p0 mtu 3400
out=$(timeout -k 5 60 "$rinxctl" bench --spec "$spec" --sizes 4096 \
	--plan ring --timeout 5000 2>&1)
rc=$?
echo "$out" | diag
[ $rc -ne 0 ] &&
	echo "$out" | grep -q "sends 1504-byte frames (blocks of 352 values), rank 0 3168-byte (768): their MTUs differ"
ok $? "one host at MTU 3400, the others at 1500: open fails, naming both frame sizes"
ip -n "${P}h0" link set eth0 mtu 1500 && ip -n "${P}t0" link set p0 mtu 1500
[ "$(mtu_of "${P}h0" eth0)" = 1500 ] && [ "$(mtu_of "${P}t0" p0)" = 1500 ]
ok $? "host h0 back to MTU 1500 (both ends)"

# below what rinx frames need: `up` refuses the interface
"$rinxctl" down --spec "$spec" --node h1 >/dev/null 2>&1
ip -n "${P}h1" link set eth0 mtu 1400
out=$(ip netns exec "${P}h1" "$rinxctl" up --spec "$spec" --node h1 2>&1)
rc=$?
echo "$out" | diag
[ $rc -ne 0 ] && echo "$out" | grep -q "has MTU 1400; rinx frames need an MTU of at least 1490"
ok $? "rinxctl up on an interface of MTU 1400: refused, naming 1490"
ip -n "${P}h1" link set eth0 mtu 1500
out=$(ip netns exec "${P}h1" "$rinxctl" up --spec "$spec" --node h1 2>&1)
rc=$?
echo "$out" | diag
ok $rc "rinxctl up on h1 again at MTU 1500"
bench_verified "MTU 1500 after the refusals, rina, float32" 1504 "$SIZES" --plan rina

"$rinxctl" testbed down "$P" 2>&1 | diag
rc=${PIPESTATUS[0]}
[ $rc -eq 0 ] && [ -z "$(ours)" ]
ok $? "testbed down (exit $rc), no namespace left"

# ---- MTU 9000 ----
out=$("$rinxctl" testbed up --prefix "$P" --racks 2 --per-rack 2 \
	--ina switch,agent --mtu 9000 2>&1)
rc=$?
echo "$out" | diag
ok $rc "testbed up --racks 2 --per-rack 2 --ina switch,agent --mtu 9000"
if [ $rc -eq 0 ]; then
	bench_verified "MTU 9000, ring, float32" 3168 "$SIZES" --plan ring
	bench_verified "MTU 9000, rina, float32" 3168 "$SIZES" --plan rina
	# the hosts' own stacks use the jumbo MTU across both switches
	ip="$(awk '/^host / && / name=h3 / { for (i = 1; i <= NF; i++)
		if ($i ~ /^ip=/) print substr($i, 4) }' "$spec")"
	out=$(ip netns exec "${P}h0" ping -c 2 -W 2 -M do -s 8972 "$ip" 2>&1)
	rc=$?
	echo "$out" | tail -2 | diag
	ok $rc "a 9000-byte IP packet (DF) crosses both XDP switches, h0 to h3 ($ip)"
fi

testbed_down_end
