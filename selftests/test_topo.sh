#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: a planner's plan on a topology testbed, the GRID paper's toy
# (rinxctl testbed up --gen grid-toy), with the real data plane:
#
#        W1 W2 W3 W4        W5 W6
#         \  |  |  /          \ /
#            S1 ------l9------ S2        every switch aggregates (ina=yes)
#              \              /          switch links 3 "Gbit/s", the PS's
#              l8           l10          9, hosts' 10, all x --scale
#                \          /
#                    S3 --l11-- PS       PS: a one-port INA node
#                   /  \
#                  W7   W8
#
# The triangle S1-S2-S3 is a cycle: floods and the fabric's group must
# stay on the spanning tree (S3-S1, S3-S2) and unicast must follow routes.
# Under each scheme of the paper (topo:ps: no INA, every worker to the PS,
# W1 routed S1-S2-S3 by max-flow; topo:ps-ina: ATP, the nearest switch
# aggregates; topo:grid: W4 routed to S2 and aggregated there):
#  - `rinxctl plan` prints the aggregators the scheme must have;
#  - `rinxctl bench --verify` (every element against an independent
#    reference: int32 bit-exact, float32 within rinx_f32_bound), 1 element
#    to 1 MiB;
#  - every aggregator summed as many contributions per block as the plan
#    says (its counters: K - 1 consumed for each slot completed), so W4's
#    blocks met at S2 under grid and at S1 under ps-ina;
#  - the S1->S2 port (l9 at S1) carries W4's blocks under grid and W1's
#    under ps (routes off the MAC table's shortest path S1-S3).
# SwitchML (topo:switchml: S1 sums all 8 workers) returns the result on its
# own broadcast route, S1-S2 for W5 and W6, off the spanning tree: l9 at S1
# carries the finished blocks.
# Forest packing runs too (trees rooted at workers, exact sums).
# Every plan is paced by congestion control alone: the ranks' ceiling is
# their own link's rate, never the plan's (checked on topo:grid), and the
# aggregating switches sum at most their capacity (cap=9, scaled).
# Then bad input (a topology whose hosts link directly, a ring whose
# members aggregate racks, an unknown planner) gets a clear error, and down
# leaves nothing behind.
#
# Then forest packing on tools/topo/hetero4-diag.topo (four switches, one
# worker each, a mesh of unequal links with a diagonal), where its trees
# route one pair of workers several ways and broadcast on trees of their
# own: the routes go in per class (testbed up warns of no pair routed two
# ways), the sums are exact, and every finished block takes its class's
# broadcast route at every switch (each is on every tree), none the
# spanning tree. Then the ring planner's ring (topo:ring) on the same
# graph: its hops' routes, exact sums, its blocks round the ring.
#
#   selftests/test_topo.sh [builddir]   (RINX_TOPO_PREFIX: namespace prefix
#                                       head, default rxT; the pid follows)
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}${RINX_TOPO_PREFIX:-rxT}$$	# unique: runs can overlap (the variable
				# picks another head, e.g. one per user)
spec=/run/rinx-testbed/$P.spec
topo=/run/rinx-testbed/$P.topo
TIMEOUT_MS=20000	# per allreduce without progress
LIMIT=200		# seconds for one rinxctl run, whatever happens
SIZES=4,3076,1048576
BLOCKS_1M=342		# blocks of 1 MiB (768 values each)
BLOCK_FRAME=3168	# bytes of a block's frame (control frames: 96)
n=0
fail=0
used=("$P")

# bytes PORT-NS IF: bytes sent so far by switch port IF of namespace NS
bytes() {
	timeout 60 "$rinxctl" testbed show "$P" 2>/dev/null |
		awk -v ns="$1" -v ifn="$2" '$1 == ns && $2 == ifn {
			for (i = 3; i <= NF; i++)
				if ($i ~ /^bytes=/) { sub(/^bytes=/, "", $i);
						      print $i; exit } }'
}

# aggs: "NAME add done" for every aggregator (S1 S2 S3 PS), one per line
aggs() {
	timeout 60 "$rinxctl" testbed show "$P" 2>/dev/null |
		awk '$2 == "counters:" { a = 0; d = 0
			for (i = 3; i <= NF; i++) {
				# a contribution whose frame went back as a pull
				# was added too
				if ($i ~ /^agg_add=/) { sub(/^agg_add=/, "", $i); a += $i }
				if ($i ~ /^agg_pull=/) { sub(/^agg_pull=/, "", $i); a += $i }
				if ($i ~ /^agg_done=/) { sub(/^agg_done=/, "", $i); d = $i }
			}
			print $1, a, d }'
}

# agg_check BEFORE AFTER "NAME:K ...": between the two aggs snapshots,
# aggregator NAME summed K contributions per block it finished (K - 1
# consumed for every one that completed a slot; K 0: it finished none)
agg_check() {
	local spec_k name k a0 d0 a1 d1 da dd bad=0

	for spec_k in $3; do
		name=${spec_k%:*} k=${spec_k#*:}
		read -r a0 d0 <<<"$(echo "$1" | awk -v n="$name" '$1 == n { print $2, $3 }')"
		read -r a1 d1 <<<"$(echo "$2" | awk -v n="$name" '$1 == n { print $2, $3 }')"
		da=$(( ${a1:-0} - ${a0:-0} )) dd=$(( ${d1:-0} - ${d0:-0} ))
		echo "# $name: $da contributions consumed, $dd slots completed (want $k per block)"
		if [ "$k" -eq 0 ]; then
			[ "$dd" -eq 0 ] || bad=1
		elif [ "$dd" -lt $BLOCKS_1M ] || [ "$da" -ne $(( (k - 1) * dd )) ]; then
			bad=1
		fi
	done
	return $bad
}

# bench SCHEME DTYPE: one verified sweep, two TAP lines
bench() {
	local out rc msg t0=$SECONDS

	out=$(timeout -k 5 $LIMIT "$rinxctl" bench --spec "$spec" --verify \
		--iters 1 --warmup 0 --dtype "$2" --sizes "$SIZES" \
		--timeout $TIMEOUT_MS 2>&1)
	rc=$?
	echo "$out" | grep -vE '^#  +bytes' | diag
	echo "# ($((SECONDS - t0)) s)"
	ok $rc "$1: $2: bench --verify exit status ($rc)"
	msg=$(verified_sizes "$out" "$SIZES")
	rc=$?
	echo "$out" | grep -q '^# verify: every element ok;' || rc=1
	ok $rc "$1: $2: every element of every size verified ok"
	[ -n "$msg" ] && echo "$msg" | diag
}

# scheme NAME AGGREGATORS-REGEX L9-CHECK "NAME:K ...": plan, routes, sums,
# S1->S2 use, who aggregated how many contributors
scheme() {
	local name=$1 want=$2 check=$3 aggk=$4 out rc before after d a0 a1

	out=$(timeout 60 "$rinxctl" testbed plan "$P" "topo:$name" 2>&1)
	rc=$?
	echo "$out" | diag
	ok $rc "topo:$name: testbed plan installs its routes"
	out=$(timeout 60 "$rinxctl" plan --spec "$spec" 2>&1)
	rc=$?
	echo "$out" | head -4 | diag
	[ $rc -eq 0 ] && echo "$out" | grep -q "^plan: topo:$name," &&
		echo "$out" | grep -qE "$want"
	ok $? "topo:$name: rinxctl plan prints the plan with $want"
	before=$(bytes "${P}t0" l9)
	a0=$(aggs)
	bench "topo:$name" int32
	bench "topo:$name" float32
	after=$(bytes "${P}t0" l9)
	a1=$(aggs)
	if [ -n "$aggk" ]; then
		agg_check "$a0" "$a1" "$aggk"
		ok $? "topo:$name: aggregators summed what the plan says ($aggk)"
	fi
	d=$(( ${after:-0} - ${before:-0} ))
	echo "# S1->S2 (l9 at S1): $d bytes during topo:$name"
	[ "$check" = many ] || return
	[ -n "$before" ] && [ "$d" -ge $((2 * BLOCKS_1M * BLOCK_FRAME)) ]
	ok $? "topo:$name: S1->S2 carries a sweep's blocks ($d bytes; a 1 MiB sweep is $BLOCKS_1M frames of $BLOCK_FRAME B)"
}

needs_root ip timeout awk
trap cleanup_used EXIT
trap 'exit 1' INT TERM

echo "1..61"
out=$(timeout -k 5 120 "$rinxctl" testbed up --prefix "$P" --gen grid-toy \
	--plan topo:grid 2>&1)
rc=$?
echo "$out" | diag
ok $rc "grid-toy testbed up"
if [ $rc -ne 0 ]; then
	echo "# cannot go on without the testbed"
	exit 1
fi
grep -q "^cluster .*plan=topo:grid topo=$topo scale=20\$" "$spec" &&
	[ "$(grep -c '^rack .*ina=switch' "$spec")" -eq 4 ] &&
	[ "$(grep -c '^host ' "$spec")" -eq 8 ] &&
	grep -q '^link a=S1 b=S2 gbps=3$' "$topo" &&
	[ "$(ours | wc -l)" -eq 12 ]
ok $? "spec: 8 hosts, 4 aggregators (S1-S3, PS), the topology beside it at scale 20, 12 namespaces"
# the toy's links at 20 Mbit/s per Gbit/s: 3 -> 60, 9 -> 180, 10 -> 200
out=$(timeout 60 "$rinxctl" testbed show "$P" 2>&1)
echo "$out" | grep -qE "^  ${P}t0 +l9 +rate=60 " &&
	echo "$out" | grep -qE "^  ${P}t2 +l11 +rate=180 " &&
	echo "$out" | grep -qE "^  ${P}t3 +eth0 +rate=180 " &&
	echo "$out" | grep -qE "^  ${P}t0 +l0 +rate=200 "
ok $? "ports run at their link's scaled rate"

# Paced by congestion control alone: every rank's ceiling is its own
# link's rate (10 Gbit/s x 20: 200 Mbit/s, in frames as the wire carries
# them, 98% of it), not the plan's (GRID: 3 x 20, a third of it), and the
# sums are exact however the rate was found
out=$(timeout -k 5 $LIMIT "$rinxctl" bench --spec "$spec" --verify --profile \
	--iters 1 --warmup 0 --sizes 1048576 --timeout $TIMEOUT_MS 2>&1)
rc=$?
echo "$out" | grep -E '^ +[0-9]|network|verify' | diag
want=$(awk -v f=$BLOCK_FRAME 'BEGIN { printf "%d", 200e6 / 8 / (f + 24) * 0.98 }')
echo "$out" | grep -qE "ceiling $want\.\.$want " &&
	echo "$out" | grep -q '^# verify: every element ok;'
ok $? "topo:grid paced from its links: every ceiling $want blocks/s, every element verified ($rc)"

# GRID: W4 to S2, so S1 and S2 sum 3 each, S3 2, the PS the 3 switches;
# ATP: S1 sums its 4 (class 0, 12 of 13 blocks; class 1 bypasses it);
# no INA: the PS sums all 8, no switch aggregates
scheme grid 'S2\{W4,W5,W6\}' many "S1:3 S2:3 S3:2 PS:3"
scheme ps-ina 'S1\{W1,W2,W3,W4\}' none "S1:4 S2:2 S3:2"
scheme ps 'PS\{W1,W2,W3,W4,W5,W6,W7,W8\}' many "S1:0 S2:0 S3:0 PS:8"
# SwitchML: S1 sums every worker and sends the result out from itself
scheme switchml 'S1\{W1,W2,W3,W4,W5,W6,W7,W8\}' many "S1:8 S2:0 S3:0 PS:0"
# forest packing: trees rooted at workers (a root adds its own share),
# the switches inner nodes; no PS
scheme forest 'class 0: root W[0-9]+; aggregators: W[0-9]+\{[^}]*self\}' none ""

out=$(timeout 60 "$rinxctl" testbed show "$P" 2>&1)
! echo "$out" | grep -qE '(ina_)?aborted=[1-9]'
ok $? "no switch or aggregator aborted"

# bad input: clear errors, nothing made
out=$(timeout 60 "$rinxctl" testbed up --prefix "${P}x" \
	--gen random:hosts=4,switches=0 2>&1)
rc=$?
used+=("${P}x")
echo "$out" | diag
[ $rc -ne 0 ] && echo "$out" | grep -q "through switches only" &&
	[ -z "$(ours_of "${P}x")" ]
ok $? "hosts linked to hosts: refused with the reason, no namespace made"
out=$(timeout 60 "$rinxctl" testbed plan "$P" topo:rina 2>&1)
rc=$?
echo "$out" | diag
[ $rc -ne 0 ] && echo "$out" | grep -q "ring members aggregate racks" &&
	grep -q "plan=topo:forest " "$spec"
ok $? "a ring whose members are aggregating switches (topo:rina): refused with the reason, the spec's plan kept"
out=$(timeout 60 "$rinxctl" testbed plan "$P" topo:nosuch 2>&1)
rc=$?
echo "$out" | diag
[ $rc -ne 0 ] && echo "$out" | grep -q "planner"
ok $? "an unknown planner: refused"

timeout 120 "$rinxctl" testbed down "$P" 2>&1 | diag
rc=${PIPESTATUS[0]}
[ $rc -eq 0 ] && [ -z "$(ours)" ] && [ ! -e "$spec" ] && [ ! -e "$topo" ]
ok $? "testbed down: no namespace, spec or topology file left"

# forest on a mesh of unequal links with a diagonal: its classes' routes
P2=${P}f
used+=("$P2")
out=$(timeout -k 5 120 "$rinxctl" testbed up --prefix "$P2" \
	--topo "$here/../tools/topo/hetero4-diag.topo" --plan topo:forest 2>&1)
rc=$?
echo "$out" | diag
ok $rc "hetero4-diag testbed up, plan topo:forest"
! echo "$out" | grep -q "two ways"
ok $? "hetero4-diag: every class's routes installed (no pair routed two ways in a class)"
# counters NAME: "NS flood class_group" of every switch
swcount() {
	timeout 60 "$rinxctl" testbed show "$P2" 2>/dev/null |
		awk -v p="$P2" '$1 ~ "^" p "t" && $3 ~ /^fwd=/ { f = ""; c = ""
			for (i = 3; i <= NF; i++) {
				if ($i ~ /^flood=/) { sub(/^flood=/, "", $i); f = $i }
				if ($i ~ /^class_group=/) { sub(/^class_group=/, "", $i); c = $i }
			}
			print $1, f, c }'
}
c0=$(swcount)
spec_toy=$spec
spec=/run/rinx-testbed/$P2.spec
bench "topo:forest on hetero4-diag" int32
bench "topo:forest on hetero4-diag" float32
spec=$spec_toy
c1=$(swcount)
# blocks broadcast by the two sweeps: 4 B, 3076 B and 1 MiB, 1 + 2 + 342
want=$(( 2 * (1 + 2 + BLOCKS_1M) ))
echo "$c0" | sed 's/^/# before: /'
echo "$c1" | sed 's/^/# after: /'
[ "$(echo "$c1" | wc -l)" -eq 4 ] &&
	join <(echo "$c0" | sort) <(echo "$c1" | sort) |
	awk -v w=$want '{ if ($4 - $2 != 0 || $5 - $3 < w) bad = 1 }
			END { exit bad }'
ok $? "hetero4-diag: every switch sent every finished block on its class's route ($want blocks or more each), no group on the spanning tree"

# The ring planner on the same graph (topo:ring): members W1 W2 W3 W4
# (rack order), each hop's pair routed along the planner's path through
# two switches (8 flow entries, in any class: every class of the ring's
# tables sends every hop), no broadcast route; every element verified.
# Each block crosses every arc of the ring once at least (reduce from
# its first member round to its last, then the gather), so each switch
# port the ring leaves by (S1->S2 l4, S2->S3 l5, S3->S4 l6, S4->S1 l7)
# carries the two 1 MiB sweeps' blocks; the diagonal S1-S3 (l8), which a
# ring in another order would take (W1 -> W3), is no hop of this one and
# carries less than one sweep's. (A ring run backwards would pass this:
# repairs go backwards in full frames; the plan's print above and
# test_plan_ir check the order.)
out=$(timeout 60 "$rinxctl" testbed plan "$P2" topo:ring 2>&1)
rc=$?
echo "$out" | diag
[ $rc -eq 0 ] &&
	echo "$out" | grep -q "plan topo:ring, 8 flow entries, 0 broadcast entries"
ok $? "hetero4-diag: testbed plan topo:ring routes the ring's 4 hops (8 flow entries, no broadcast)"
spec=/run/rinx-testbed/$P2.spec
out=$(timeout 60 "$rinxctl" plan --spec "$spec" 2>&1)
echo "$out" | head -3 | diag
echo "$out" | grep -q "^plan: topo:ring, a planner's ring on the spec's topology, 4 hosts, 4 ring members, 4 classes" &&
	echo "$out" | grep -q "^members: W1 W2 W3 W4$"
ok $? "hetero4-diag: rinxctl plan prints the ring W1 W2 W3 W4 in 4 classes"
ringports="${P2}t0:l4 ${P2}t1:l5 ${P2}t2:l6 ${P2}t3:l7 ${P2}t0:l8 ${P2}t2:l8"
declare -A rb0=()
for pi in $ringports; do rb0[$pi]=$(P=$P2 bytes "${pi%:*}" "${pi#*:}"); done
bench "topo:ring on hetero4-diag" int32
bench "topo:ring on hetero4-diag" float32
spec=$spec_toy
bad=0
for pi in $ringports; do
	b1=$(P=$P2 bytes "${pi%:*}" "${pi#*:}")
	d=$(( ${b1:-0} - ${rb0[$pi]:-0} ))
	echo "# $pi sent $d bytes during topo:ring"
	if [ -z "$b1" ]; then
		bad=1
	elif [ "${pi#*:}" = l8 ]; then
		[ "$d" -lt $((BLOCKS_1M * BLOCK_FRAME)) ] || bad=1
	else
		[ "$d" -ge $((2 * BLOCKS_1M * BLOCK_FRAME)) ] || bad=1
	fi
done
ok $bad "hetero4-diag: topo:ring's blocks took the ring's arcs S1->S2->S3->S4->S1 (two sweeps' blocks or more each), not the diagonal"
timeout 120 "$rinxctl" testbed down "$P2" 2>&1 | diag
rc=${PIPESTATUS[0]}
[ $rc -eq 0 ] && [ -z "$(ours_of "$P2")" ]
ok $? "hetero4-diag testbed down: no namespace left"

if [ $fail -ne 0 ]; then
	echo "# $fail of $n failed"
	exit 1
fi
exit 0
