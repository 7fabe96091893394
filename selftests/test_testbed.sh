#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: `rinxctl testbed up|show|down` with 2 racks x 2 hosts, in
# native and in generic XDP mode.
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
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=rxtb$$		# unique: runs can overlap
n=0
fail=0

ok() {	# ok COND-EXIT-STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fail=$((fail + 1))
	fi
}

diag() { sed 's/^/# /'; }

ours() {	# namespaces of testbed $P, one per line
	ip netns list 2>/dev/null | awk '{print $1}' |
		grep -E "^${P}(h[0-9]+|t[0-9]+|sp)\$"
}

cleanup() {
	"$rinxctl" testbed down "$P" >/dev/null 2>&1
	for ns in $(ours); do
		ip netns del "$ns" 2>/dev/null
	done
}

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root (namespaces, XDP)"
	exit 4
fi
for tool in ip ping; do
	if ! command -v $tool >/dev/null; then
		echo "1..0 # SKIP $tool not installed"
		exit 4
	fi
done
if [ ! -x "$rinxctl" ]; then
	echo "1..0 # SKIP $rinxctl not built (make)"
	exit 4
fi
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "1..30"
for mode in native generic; do
	echo "# mode $mode, prefix $P"
	spec=/run/rinx-testbed/$P.spec
	out=$("$rinxctl" testbed up --prefix "$P" --racks 2 --per-rack 2 \
		--mode $mode 2>&1)
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

	"$rinxctl" testbed up --prefix "$P" --hosts 2 >/dev/null 2>&1
	rc=$?
	[ $rc -ne 0 ] && [ "$(ours | wc -l)" = 7 ]
	ok $? "$mode: second up with the same prefix refused (exit $rc), testbed intact"

	"$rinxctl" testbed down "$P" 2>&1 | diag
	ok "${PIPESTATUS[0]}" "$mode: testbed down"
	[ -z "$(ours)" ]
	ok $? "$mode: no namespace of $P remains"
	[ ! -e "$spec" ] && [ ! -e "/run/rinx/$P" ]
	ok $? "$mode: spec and pins removed"
	"$rinxctl" testbed down "$P" >/dev/null 2>&1
	ok $? "$mode: down again succeeds (idempotent)"
done

if [ $fail -ne 0 ]; then
	echo "# $fail of $n failed"
	exit 1
fi
exit 0
