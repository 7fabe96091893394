#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: `rinxctl testbed up|show|down` with 2 racks x 2 hosts, in
# native and in generic XDP mode; then Rina racks (--ina switch,agent): the
# aggregator's identity in the spec, its pins, the groups of the ToRs.
#
#                      <P>sp            spine: rinx_switch on t0, t1
#                    t0 /  \ t1
#                uplink     uplink
#                <P>t0       <P>t1      ToRs: rinx_switch on p*, uplink
#              p0 /  \ p1   p2 /  \ p3
#            eth0   eth0  eth0   eth0   hosts: rinx host program on eth0
#           <P>h0  <P>h1  <P>h2  <P>h3  10.71.<rack>.<h+1>/16
#
#   selftests/test_testbed.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxtb$$		# unique: runs can overlap
n=0
fail=0

needs_root ip ping pgrep chrt
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "1..68"
for mode in native generic; do
	echo "# mode $mode, prefix $P"
	spec=/run/rinx-testbed/$P.spec
	napi=
	[ $mode = native ] && napi="--napi threaded"
	# the NAPI threads there before (of other runs' testbeds)
	napi_before=$(pgrep '^napi/' | sort)
	# shellcheck disable=SC2086
	out=$("$rinxctl" testbed up --prefix "$P" --racks 2 --per-rack 2 \
		--mode $mode $napi 2>&1)
	ok $? "$mode: testbed up"
	echo "$out" | diag
	echo "$out" | grep -q "^spec: $spec\$"
	ok $? "$mode: up prints the spec path"
	[ "$(grep -c '^host ' "$spec" 2>/dev/null)" = 4 ]
	ok $? "$mode: spec lists 4 hosts"
	[ "$(ours | wc -l)" = 7 ]
	ok $? "$mode: 7 namespaces (4 hosts, 2 ToRs, spine)"

	xdp=0
	flag=xdp
	[ $mode = generic ] && flag=xdpgeneric
	for sw in t0:p0 t0:p1 t0:uplink t1:p2 t1:p3 t1:uplink sp:t0 sp:t1; do
		link=$(ip -n "$P${sw%%:*}" link show dev "${sw#*:}" 2>&1)
		echo "$link" | grep -q "> mtu 3400 $flag " || xdp=1
		echo "$link" | grep -q 'prog/xdp.*name rinx_switch' || xdp=1
	done
	ok $xdp "$mode: rinx_switch in $mode mode on every switch port"
	ip -n "${P}h3" link show dev eth0 | grep -q 'prog/xdp.*name rinx_host'
	ok $? "$mode: host program on eth0"
	# threaded NAPI (testbed up --napi threaded, native mode here): a
	# kernel thread per veth; generic XDP polls by no NAPI
	if [ $mode = native ]; then
		napi=0
		for end in h3:eth0 h0:eth0 t0:p0 t0:uplink t1:p3 sp:t1; do
			v=$(ip netns exec "$P${end%%:*}" \
				cat "/sys/class/net/${end#*:}/threaded" 2>&1)
			[ "$v" = 1 ] || { echo "# $end: threaded '$v'"; napi=1; }
		done
		ok $napi "$mode: threaded NAPI on the hosts' eth0 and the switch ports"
		# each of its threads at real-time priority (SCHED_FIFO 50):
		# 12 new threads (4 hosts, 2 x 3 ToR ports, 2 spine ports), a
		# concurrent run's threaded testbed may add more, set alike
		new=$(comm -13 <(echo "$napi_before") <(pgrep '^napi/' | sort))
		fifo=0 other=0
		for t in $new; do
			if chrt -p "$t" 2>/dev/null | grep -q 'SCHED_FIFO' &&
			   chrt -p "$t" | grep -q 'priority: 50$'; then
				fifo=$((fifo + 1))
			else
				other=$((other + 1))
				chrt -p "$t" 2>&1 | diag
			fi
		done
		[ $fifo -ge 12 ] && [ $other = 0 ]
		ok $? "$mode: its NAPI threads run SCHED_FIFO 50 ($fifo new, $other not)"
		want="napi: threaded on 4 of 4 hosts, 4 of them at SCHED_FIFO 50"
	else
		ok 0 "$mode: threaded NAPI # SKIP generic XDP polls by no NAPI"
		ok 0 "$mode: NAPI threads' priority # SKIP generic XDP polls by no NAPI"
		want="napi: softirq"
	fi
	got=$("$rinxctl" testbed show "$P" 2>&1 | grep '^napi: ')
	[ "$got" = "$want" ]
	ok $? "$mode: show says how the hosts are polled ($got)"

	pings=0
	for pair in 0:10.71.1.2 3:10.71.0.1 0:10.71.0.2 2:10.71.0.2; do
		res=$(ip netns exec "${P}h${pair%%:*}" ping -c 2 -i 0.2 -W 1 \
			"${pair#*:}" 2>&1)
		if ! echo "$res" | grep -q ' 2 received'; then
			pings=1
			echo "$res" | diag
		fi
	done
	ok $pings "$mode: ping within and across racks"
	ip netns exec "${P}h1" ping -c 2 -i 0.2 -W 1 -M do -s 3300 \
		10.71.1.1 2>&1 | grep -q ' 2 received'
	ok $? "$mode: 3328-byte frames (MTU 3400) across racks"

	show=$("$rinxctl" testbed show "$P" 2>&1)
	echo "$show" | diag
	# 4 pings of 2 echoes across racks: 16 frames through the spine
	# (IPv6 is off and neighbours are static: nothing else crosses).
	fwd=$(echo "$show" | awk '$2 == "spine" { sub("fwd=", "", $3); print $3 }')
	[ "${fwd:-0}" -ge 16 ]
	ok $? "$mode: spine forwarded the cross-rack frames (fwd=${fwd:-none})"
	echo "$show" | grep -q 'drop_no_port=[1-9]\|drop_hairpin=[1-9]'
	[ $? -ne 0 ]
	ok $? "$mode: no switch drops"
	[ "$(ip netns exec "${P}h2" cat /proc/sys/net/ipv4/tcp_ecn)" = 1 ]
	ok $? "$mode: hosts ask for ECN on TCP (tcp_ecn=1)"

	# Link rates into the spec: a rack's uplink is the slower direction.
	"$rinxctl" testbed fault "$P" --port sp:t1 --rate 500 >/dev/null &&
		"$rinxctl" testbed fault "$P" --port t1:uplink --rate 800 \
			>/dev/null &&
		"$rinxctl" testbed fault "$P" --port t0:p1 --rate 2000 \
			>/dev/null
	ok $? "$mode: testbed fault --rate on sp:t1, t1:uplink, t0:p1"
	grep -q '^rack id=1 ina=none uplink=500$' "$spec" &&
		grep -q '^rack id=0 ina=none$' "$spec" &&
		grep -q '^host name=h1 .* link=2000$' "$spec" &&
		[ "$(grep -c 'link=' "$spec")" = 2 ] &&
		"$rinxctl" testbed show "$P" | grep -q '^slowest link: 500 Mbit/s$'
	ok $? "$mode: spec: rack 1 uplink=500, h1 link=2000; slowest link 500"

	"$rinxctl" testbed up --prefix "$P" --hosts 2 >/dev/null 2>&1
	rc=$?
	[ $rc -ne 0 ] && [ "$(ours | wc -l)" = 7 ]
	ok $? "$mode: second up with the same prefix refused (exit $rc), testbed intact"

	# An interface whose MTU cannot carry rinx frames (below the 1490 of
	# small frames): a communicator's open and `rinxctl up` refuse,
	# naming the MTU needed.
	ip -n "${P}h3" link set eth0 mtu 1400
	out=$(timeout 60 "$rinxctl" bench --spec "$spec" --sizes 4 --iters 1 \
		--warmup 0 --timeout 3000 2>&1)
	rc=$?
	echo "$out" | grep -i mtu | diag
	[ $rc -ne 0 ] && echo "$out" | grep -q "eth0 has MTU 1400" &&
		echo "$out" | grep -q "need an MTU of at least 1490"
	ok $? "$mode: open on a host with MTU 1400 fails naming the MTU needed (exit $rc)"
	"$rinxctl" down --spec "$spec" --node h3 >/dev/null 2>&1
	out=$("$rinxctl" up --spec "$spec" --node h3 2>&1)
	rc=$?
	ip -n "${P}h3" link set eth0 mtu 3400 &&
		"$rinxctl" up --spec "$spec" --node h3 >/dev/null 2>&1
	rc2=$?
	[ $rc -ne 0 ] && echo "$out" | grep -q "need an MTU of at least 1490" &&
		[ $rc2 -eq 0 ]
	ok $? "$mode: up with MTU 1400 refused (exit $rc), with 3400 done ($rc2)"

	"$rinxctl" testbed down "$P" 2>&1 | diag
	ok "${PIPESTATUS[0]}" "$mode: testbed down"
	[ -z "$(ours)" ]
	ok $? "$mode: no namespace of $P remains"
	[ ! -e "$spec" ] && [ ! -e "/run/rinx/$P" ]
	ok $? "$mode: spec and pins removed"
	"$rinxctl" testbed down "$P" >/dev/null 2>&1
	ok $? "$mode: down again succeeds (idempotent)"
done

# ---- Rina: rack 0 aggregates in its ToR (agg0), rack 1 has an agent ----

# frames: python3 sending/capturing raw frames on eth0 (optional)
frames_py='
import os, socket, struct, sys, time
def mac(s): return bytes(int(x, 16) for x in s.split(":"))
if sys.argv[1] == "recv":
    # recv SECONDS READY DONE: says READY once bound; stops SECONDS after
    # the start, or half a second after DONE appears
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind(("eth0", 0)); s.settimeout(0.1)
    open(sys.argv[3], "w").close()
    end = time.time() + float(sys.argv[2])
    while time.time() < end:
        if os.path.exists(sys.argv[4]): end = min(end, time.time() + 0.5)
        try: d, a = s.recvfrom(4096)
        except socket.timeout: continue
        if a[2] == socket.PACKET_OUTGOING or len(d) < 42: continue
        if d[12:14] != b"\x08\x00" or d[23] != 17 or d[36:38] != b"\x27\x0f":
            continue
        print(":".join("%02x" % x for x in d[0:6]), d[42:].decode(), flush=True)
else:
    dst, src, ips, ipd, pl = sys.argv[2:7]
    pl = pl.encode()
    udp = struct.pack("!HHHH", 1234, 9999, 8 + len(pl), 0) + pl
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17,
                     0, socket.inet_aton(ips), socket.inet_aton(ipd))
    c = sum(struct.unpack("!10H", ip)); c = (c & 0xffff) + (c >> 16)
    c = (c & 0xffff) + (c >> 16)
    ip = ip[:10] + struct.pack("!H", ~c & 0xffff) + ip[12:]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind(("eth0", 0))
    s.send(mac(dst) + mac(src) + b"\x08\x00" + ip + udp)
'
H2MAC=02:72:78:00:01:01

for mode in native generic; do
	echo "# Rina, mode $mode, prefix $P"
	spec=/run/rinx-testbed/$P.spec
	pin=/run/rinx/$P
	out=$("$rinxctl" testbed up --prefix "$P" --racks 2 --per-rack 2 \
		--ina switch,agent --mode $mode 2>&1)
	ok $? "rina $mode: testbed up --ina switch,agent"
	echo "$out" | diag
	grep -qx "rack id=0 ina=switch name=agg0 mac=02:72:78:fe:00:01 ip=10.71.0.254 netns=${P}t0" "$spec" &&
		grep -qx "rack id=1 ina=agent" "$spec"
	ok $? "rina $mode: spec has the rack records (agg0 in ${P}t0)"
	pins=0
	for m in jobs nodes hops aggs stats; do
		[ -e "$pin/agg0/$m" ] || pins=1
	done
	[ ! -e "$pin/agg1" ] || pins=1
	ok $pins "rina $mode: agg0's maps pinned under $pin/agg0, none for rack 1"
	if command -v bpftool >/dev/null; then
		win=$(sed -nE 's/^cluster .*window=([0-9]+).*/\1/p' "$spec")
		njobs=$(sed -nE 's/^cluster .*jobs=([0-9]+).*/\1/p' "$spec")
		bpftool map show pinned "$pin/agg0/aggs" 2>&1 |
			grep -q "max_entries $((${njobs:-0} * ${win:-0})) "
		ok $? "rina $mode: agg0 slots sized the spec's jobs ($njobs) x window ($win)"
	else
		ok 0 "rina $mode: agg0 slots sized # SKIP no bpftool"
	fi
	ip -n "${P}h2" neigh show 10.71.0.254 dev eth0 |
		grep -q 'lladdr 02:72:78:fe:00:01 PERMANENT'
	ok $? "rina $mode: hosts have a static neighbour for agg0"

	pings=0
	for pair in 0:10.71.1.2 3:10.71.0.1 1:10.71.0.2 2:10.71.1.2; do
		res=$(ip netns exec "${P}h${pair%%:*}" ping -c 2 -i 0.2 -W 1 \
			"${pair#*:}" 2>&1)
		if ! echo "$res" | grep -q ' 2 received'; then
			pings=1
			echo "$res" | diag
		fi
	done
	ok $pings "rina $mode: ping within and across racks"

	show=$("$rinxctl" testbed show "$P" 2>&1)
	echo "$show" | diag
	echo "$show" | grep -q "^rack 0  ina switch  aggregator agg0 02:72:78:fe:00:01 10.71.0.254 in ${P}t0\$" &&
		echo "$show" | grep -q '^  agg0 counters:' &&
		! echo "$show" | grep -q 'not pinned' &&
		echo "$show" | grep -q '^rack 1  ina agent$'
	ok $? "rina $mode: show prints the racks and agg0's counters"

	# The agent (h2) multicasts into its rack and on to h0 through the
	# uplink, and sends a frame to itself through its ToR.
	if command -v python3 >/dev/null; then
		cap=$(mktemp -d)
		for h in 0 1 2 3; do
			ip netns exec "${P}h$h" python3 -c "$frames_py" recv 20 \
				"$cap/ready$h" "$cap/done" >"$cap/h$h" 2>&1 &
		done
		# the receivers are up (bounded: they stop by themselves)
		for i in $(seq 100); do
			[ -e "$cap/ready0" ] && [ -e "$cap/ready1" ] &&
				[ -e "$cap/ready2" ] && [ -e "$cap/ready3" ] && break
			sleep 0.1
		done
		ip netns exec "${P}h2" python3 -c "$frames_py" send \
			03:72:78:01:00:01 $H2MAC 10.71.1.1 10.71.0.1 all
		ip netns exec "${P}h2" python3 -c "$frames_py" send \
			03:72:78:01:00:00 $H2MAC 10.71.1.1 10.71.1.2 hosts
		ip netns exec "${P}h2" python3 -c "$frames_py" send \
			$H2MAC $H2MAC 10.71.1.1 10.71.1.1 self
		touch "$cap/done"
		wait
		for h in 0 1 2 3; do
			sed "s/^/h$h /" "$cap/h$h"
		done | sort >"$cap/all"
		diag <"$cap/all"
		printf '%s\n' "h0 02:72:78:00:00:01 all" \
			"h2 02:72:78:00:01:01 self" \
			"h3 03:72:78:01:00:00 hosts" \
			"h3 03:72:78:01:00:01 all" | cmp -s - "$cap/all"
		ok $? "rina $mode: agent's group frames reach the rack (and h0 by unicast MAC); self-addressed frame comes back"
		rm -rf "$cap"
		show=$("$rinxctl" testbed show "$P" 2>&1)
		echo "$show" | grep "${P}t1 " | grep -q ' group=2 hairpin_self=1 drop_no_neigh=0'
		ok $? "rina $mode: rack 1's ToR counted 2 group frames and 1 self-addressed"
	else
		ok 0 "rina $mode: group frames # SKIP no python3"
		ok 0 "rina $mode: group counters # SKIP no python3"
	fi

	"$rinxctl" testbed down "$P" 2>&1 | diag
	ok "${PIPESTATUS[0]}" "rina $mode: testbed down"
	[ -z "$(ours)" ] && [ ! -e "$spec" ] && [ ! -e "$pin" ]
	ok $? "rina $mode: namespaces, spec and pins (agg0 too) removed"
done

if [ $fail -ne 0 ]; then
	echo "# $fail of $n failed"
	exit 1
fi
exit 0
