#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# rinxctl compare on a 3-host testbed: rinx, Open MPI (tuned and ring) and
# Gloo, two tiny sizes (4 KiB and one block + 1 element), 2 interleaved runs,
# every result verified; table, --csv and --json; the peers on their bridge
# network (the default), on both networks, and on rate-limited links; the
# default data (grad) in the table and --json, --data worst in --csv, named
# by every output and reduced by every candidate.
# Needs Open MPI and Debian's python3-torch: when they are missing the test
# SKIPs (exit 4) instead of installing them (run tools/deps.sh peers to
# enable it). TAP output.
#
#   rinx:  P h0..h2 -- eth0 -- [P t0: XDP switch] (host programs on eth0)
#   peers: P-b<pid> h0..h2 -- eth0 -- [P-b<pid> t0: br0] (no XDP), made and
#          deleted by every compare run
#   marker: Pm eth0 10.9.0.1 -- p0 [ecn_mark: 1 Mbit/s, mark above 3000 B]
#           Pn 10.9.0.2
#
#   selftests/test_compare.sh [builddir]

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxC$$
spec=/run/rinx-testbed/$P.spec
SIZES=4K,3076
n=0
fail=0

skip() {
	echo "1..0 # SKIP $1"
	echo "# SKIP $1"
	exit 4
}

[ "$(id -u)" -eq 0 ] || skip "needs root"
[ -x "$rinxctl" ] || skip "no $rinxctl (make first)"
command -v mpirun >/dev/null && command -v mpicc >/dev/null ||
	skip "Open MPI not installed (tools/deps.sh peers)"
/usr/bin/python3 -c 'import numpy, torch.distributed' 2>/dev/null ||
	skip "Debian python3-torch not installed (tools/deps.sh peers)"

cleanup() {
	ip netns del "${P}m" 2>/dev/null
	ip netns del "${P}n" 2>/dev/null
	rm -rf "$tmp"
	"$rinxctl" testbed down "$P" >/dev/null 2>&1
}
tmp=$(mktemp -d)
trap cleanup EXIT

# namespaces of the peers' bridge networks of this testbed still there
leftover() {
	ip netns list | awk '{print $1}' | grep -c "^$P-b"
}

echo "1..17"
out=$("$rinxctl" testbed up --hosts 3 --prefix "$P" 2>&1)
ok $? "testbed up (3 hosts)"
[ -f "$spec" ] || { echo "$out" | sed 's/^/# /'; exit 1; }

# table: one row per candidate and size, every verify column ok, rinx on
# the testbed, the peers on the bridge (the default --peer-net)
out=$(timeout 600 "$rinxctl" compare --spec "$spec" --sizes $SIZES \
	--iters 2 --no-install 2>&1)
rc=$?
ok $rc "compare (table) exits 0"
rows=$(echo "$out" | awk '(($1 == "rinx-ring" && $2 == "testbed") ||
	($1 ~ /^(ompi-tuned|ompi-ring|gloo-ring)$/ && $2 == "bridge")) &&
	$10 == "ok"' | wc -l)
[ "$rows" -eq 8 ]
ok $? "table: 4 candidates x 2 sizes verified ok, peers on bridge ($rows rows)"
[ "$rc" -eq 0 ] && [ "$rows" -eq 8 ] || echo "$out" | sed 's/^/# /'
echo "$out" | grep -q 'rinx-ring vs ompi-tuned (bridge): busbw [0-9.]*x'
ok $? "table: ratio lines name the network"
echo "$out" | grep -q '^# rinxctl compare: 3 ranks, float32, data grad, ' &&
	echo "$out" | grep -q '^# data grad (every candidate the same numbers): gradient-like'
ok $? "table: the header names the data (grad, the default)"
echo "$out" | grep -q "^# net bridge .*TSO on the hosts' interfaces: on$"
ok $? "table: the bridge network keeps TSO on the hosts"
[ "$(leftover)" -eq 0 ]
ok $? "no namespace of the bridge network left"

# csv, both networks (Gloo only): rinx + gloo on bridge + gloo on testbed,
# and Open MPI with every rank in one namespace (shared memory); all of them
# on --data worst (a peer whose header names other data fails)
out=$(timeout 600 "$rinxctl" compare --spec "$spec" --sizes $SIZES \
	--iters 1 --warmup 0 --csv --peers gloo,mpi-shm --peer-net both \
	--data worst --no-install 2>/dev/null)
echo "$out" | head -1 |
	grep -q '^bytes,candidate,network,algorithm,data,ranks,runs,median_us' &&
	[ "$(echo "$out" | grep -c '^[0-9]*,rinx-ring,testbed,.*,worst,3,.*,true,')" -eq 2 ] &&
	[ "$(echo "$out" | grep -c '^[0-9]*,gloo-ring,bridge,.*,worst,3,.*,true,')" -eq 2 ] &&
	[ "$(echo "$out" | grep -c '^[0-9]*,gloo-ring,testbed,.*,worst,3,.*,true,')" -eq 2 ] &&
	[ "$(echo "$out" | grep -c '^[0-9]*,ompi-shm,shm,.*,worst,3,.*,true,')" -eq 2 ]
ok $? "--csv --peer-net both --data worst: header, 8 verified rows on data worst and their networks (ompi-shm on shm)"
[ $? -eq 0 ] || echo "$out" | sed 's/^/# /'
[ "$(leftover)" -eq 0 ]
ok $? "no namespace left after --peer-net both"

# json on rate-limited links: the bridge is shaped and marks, rows carry
# util. 4 MiB through 500 Mbit/s ports fills their queues past the
# marking threshold: Gloo's hosts receive CE-marked packets
"$rinxctl" testbed fault "$P" --rate 500 >/dev/null 2>&1
ok $? "testbed fault --rate 500"
out=$(timeout 600 "$rinxctl" compare --spec "$spec" --sizes 4K,4M --iters 1 \
	--peers gloo --json --no-install 2>/dev/null)
echo "$out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["candidate"]: x for x in d["results"]}
assert d["ranks"] == 3 and set(r) == {"rinx-ring", "gloo-ring"}, d
assert d["data"] == "grad", d
assert len(d["results"]) == 4, d
assert r["rinx-ring"]["network"] == "testbed", r
assert r["gloo-ring"]["network"] == "bridge", r
assert all(x["verified"] for x in d["results"]), d
assert r["gloo-ring"]["vs"]["rinx-ring"]["busbw_ratio"] > 0, r
assert d["slowest_link_mbit"] == 500, d
assert d["networks"]["bridge"]["tso"] is True, d
assert d["networks"]["bridge"]["shaped"] == "tbf", d
assert d["networks"]["bridge"]["ecn_marks"] is True, d
c = {x["name"]: x for x in d["candidates"]}
assert c["gloo-ring"]["ce_packets"] > 0, c
assert "ce_packets" not in c["rinx-ring"], c
for x in d["results"]:
	u = x["busbw_gbs"] * 1e9 * 8 / 500e6
	assert abs(x["util"] - u) <= 2e-3 + 1e-3 * u, (x, u)
'
ok $? "--json: data grad, networks, verified, ratios, bridge shaped and marking (Gloo received CE), util = busbw/link"
[ "$(leftover)" -eq 0 ]
ok $? "no namespace left after the shaped run"

# The bridge ports' CE marker alone: 30 back-to-back 1442 B pings into a
# 1 Mbit/s port (nothing drains between them) that marks above 3000 B:
# the first three arrive at or below 3000 B of backlog, the rest above.
in_ce() {
	ip netns exec "${P}m" awk '/^IpExt:/ { if (!h) { for (i = 1; i <= NF; i++)
		n[i] = $i; h = 1 } else for (i = 1; i <= NF; i++)
		if (n[i] == "InCEPkts") print $i }' /proc/net/netstat
}
clang -O2 -g -target bpf -mcpu=v3 -Wall -Werror \
	-I/usr/include/"$(gcc -dumpmachine)" -DRATE_MBIT=1 -DBUFFER=100000 \
	-DECN_BYTES=3000 -c "$here/../tools/peers/ecn_mark.bpf.c" \
	-o "$tmp/mark.o" &&
	ip netns add "${P}m" && ip netns add "${P}n" &&
	ip link add eth0 netns "${P}m" type veth peer name p0 netns "${P}n" &&
	ip -n "${P}m" addr add 10.9.0.1/24 dev eth0 &&
	ip -n "${P}n" addr add 10.9.0.2/24 dev p0 &&
	ip -n "${P}m" link set eth0 up && ip -n "${P}n" link set p0 up &&
	tc -n "${P}n" qdisc add dev p0 clsact &&
	tc -n "${P}n" filter add dev p0 egress bpf direct-action \
		obj "$tmp/mark.o" sec tc
ok $? "ECN marker built and attached"
ce0=$(in_ce)
timeout 20 ip netns exec "${P}n" ping -q -f -c 30 -s 1400 -Q 2 10.9.0.1 \
	>/dev/null
ce1=$(in_ce)
[ $((ce1 - ce0)) -ge 20 ] && [ $((ce1 - ce0)) -le 27 ]
ok $? "ECN marker: ECT pings above the threshold get CE ($((ce1 - ce0)) of 30)"
timeout 20 ip netns exec "${P}n" ping -q -f -c 30 -s 1400 -Q 0 10.9.0.1 \
	>/dev/null
ce2=$(in_ce)
[ "$ce2" -eq "$ce1" ]
ok $? "ECN marker: not-ECT pings are left alone ($((ce2 - ce1)) CE)"

"$rinxctl" compare --spec "$spec" --peers bogus >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "bad --peers is a usage error"
"$rinxctl" compare --spec "$spec" --peer-net bogus >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "bad --peer-net is a usage error"
exit $((fail > 0))
