#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: link faults and port queues of the testbed's XDP switch
# (`rinxctl testbed up --drop/--dup/--reorder`, `testbed fault --rate
# --buffer --ecn --share --queue`, `testbed show`) on a 2-host testbed,
# checked against ping, the hosts' own counters and the switch's counters.
# Only counters are compared, and once a lower bound on a time that only a
# queue holding frames can meet (the real queue's).
#
#   <P>h0 eth0 -- p0 <P>t0 p1 -- eth0 <P>h1
#   10.71.0.1      ToR           10.71.0.2
#
#   selftests/test_faults.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxF$$
n=0
fail=0

# received COUNT [ping options]: echo replies counted by ping (h0 -> h1)
received() {
	local c=$1
	shift
	ip netns exec "${P}h0" ping -q -c "$c" -W 1 "$@" 10.71.0.2 2>&1 |
		awk '/packets transmitted/ { print $4 }'
}

# sw COUNTER: the ToR's switch counter
sw() {
	"$rinxctl" testbed show "$P" 2>/dev/null |
		awk -v k="$1" '$2 == "tor" { for (i = 3; i <= NF; i++) {
			split($i, a, "="); if (a[1] == k) print a[2] } }'
}

# port IF KEY: a per-port fault field of the ToR's port IF
port() {
	"$rinxctl" testbed show "$P" 2>/dev/null |
		awk -v p="$1" -v k="$2" -v ns="${P}t0" '$1 == ns && $2 == p {
			for (i = 3; i <= NF; i++) {
				split($i, a, "="); if (a[1] == k) print a[2] } }'
}

needs_root ip tc ping awk
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "1..34"
out=$("$rinxctl" testbed up --prefix "$P" --hosts 2 --drop 200000 2>&1)
ok $? "testbed up --hosts 2 --drop 200000"
echo "$out" | diag
[ -e "/run/rinx/$P/sw-${P}t0/links" ]
ok $? "the ToR's links map is pinned at /run/rinx/$P/sw-${P}t0/links"
[ "$(port p0 drop)" = 200000 ] && [ "$(port p1 drop)" = 200000 ] &&
	[ "$(port p1 rate)" = 0 ]
ok $? "show: drop 200000 ppm on both ToR ports"

# 20% on each way: a ping survives with p = 0.64
got=$(received 50 -i 0.01)
lost=$((50 - ${got:-0}))
drops=$(sw fault_drop)
echo "# 50 pings, $got answered; switch fault_drop=$drops" \
	"(p0 $(port p0 dropped), p1 $(port p1 dropped))"
[ "${got:-0}" -gt 0 ] && [ "${got:-0}" -lt 50 ]
ok $? "drop 20%: some but not all pings lost ($lost of 50)"
[ "${drops:-x}" = "$lost" ] &&
	[ $(($(port p0 dropped) + $(port p1 dropped))) = "$lost" ]
ok $? "every lost ping is one counted drop ($drops)"

"$rinxctl" testbed fault "$P" --all --drop 0 2>&1 | diag
ok "${PIPESTATUS[0]}" "testbed fault --all --drop 0"
got=$(received 50 -i 0.01)
[ "${got:-0}" = 50 ] && [ "$(sw fault_drop)" = "$drops" ]
ok $? "drop 0: 50 of 50 answered, no new drop"

# Duplication: every frame sent twice. h1 answers both copies of a
# request, and each answer is doubled on p0: 1 + 3 duplicates a ping.
"$rinxctl" testbed fault "$P" --dup 1000000 >/dev/null 2>&1
res=$(ip netns exec "${P}h0" ping -q -c 20 -i 0.01 -W 1 10.71.0.2 2>&1)
echo "$res" | diag
echo "# dup counters: p1 $(port p1 duplicated), p0 $(port p0 duplicated)"
[ "$(port p1 duplicated)" = 20 ] && [ "$(port p0 duplicated)" = 40 ] &&
	[ "$(sw fault_dup)" = 60 ] && [ "$(sw fault_skip)" = 0 ]
ok $? "dup 100%: 20 requests and 40 replies duplicated (counters)"
dups=$(echo "$res" | sed -n 's/.* +\([0-9]*\) duplicates.*/\1/p')
[ "${dups:-0}" -ge 40 ]
ok $? "dup 100%: ping saw the copies (+${dups:-0} duplicates, 60 sent)"

# Reorder: half the frames held and sent in a later frame's place.
"$rinxctl" testbed fault "$P" --port t0:p1 --dup 0 --reorder 500000 \
	--hold 1000 >/dev/null 2>&1 &&
	"$rinxctl" testbed fault "$P" --port t0:p0 --dup 0 >/dev/null 2>&1
ok $? "testbed fault --port t0:p1 --reorder 500000 --hold 1000"
res=$(ip netns exec "${P}h0" ping -c 40 -i 0.01 -W 2 10.71.0.2 2>&1)
seqs=$(echo "$res" | sed -n 's/.*icmp_seq=\([0-9]*\).*/\1/p' | tr '\n' ' ')
echo "# reply order: $seqs"
echo "# p1: held=$(port p1 held) reordered=$(port p1 reordered)" \
	"lost=$(port p1 lost) skipped=$(port p1 skipped)"
[ "$(port p1 held)" -ge 1 ] && [ "$(port p1 reordered)" -ge 1 ] &&
	[ $(($(port p1 held) + $(port p1 reordered))) -le 40 ] &&
	[ "$(port p1 skipped)" = 0 ] && [ "$(port p0 reordered)" = 0 ]
ok $? "reorder: requests held and swapped on p1 only (counters)"
echo "$seqs" | awk '{ for (i = 2; i <= NF; i++) if ($i < $(i-1)) b = 1 }
	END { exit !b }'
ok $? "reorder: ping saw replies out of order"
"$rinxctl" testbed fault "$P" --reorder 0 >/dev/null 2>&1

# The port queue: 10 Mbit/s, defaults buffer 68760 B (about 22 frames of
# 3 KB) and mark threshold 27504 B (eight frames). A host's link rate also
# paces what its own stack sends (tc tbf on eth0), so the flood below
# comes from h0 with p0 (h0's link) unlimited again: 100 pings of 3 KB
# sent at once (preload) with ECT(0) are 300 KB, 240 ms at 10 Mbit/s: p1's
# queue overflows whatever the speed of this machine, short of a 200 ms
# stall. h1's replies are paced by its bucket (1000 frames deep: none
# lost there).
spec=/run/rinx-testbed/$P.spec
tbf() {	# tbf HOST: the rate of the host's token bucket on eth0, or none
	tc -n "${P}$1" qdisc show dev eth0 2>/dev/null |
		sed -n 's/^qdisc tbf .* rate \([0-9a-zA-Z]*\) .*/\1/p' |
		grep . || echo none
}
"$rinxctl" testbed fault "$P" --rate 10 >/dev/null 2>&1
[ "$(port p0 rate)" = 10 ] && [ "$(port p1 rate)" = 10 ] &&
	[ "$(port p1 buffer)" = 68760 ] && [ "$(port p1 ecn)" = 27504 ]
ok $? "testbed fault --rate 10: both ports, default buffer and threshold"
[ "$(grep -c '^host .* link=10$' "$spec")" = 2 ] &&
	"$rinxctl" testbed show "$P" | grep -q '^slowest link: 10 Mbit/s$' &&
	[ "$(tbf h0)" = 10Mbit ] && [ "$(tbf h1)" = 10Mbit ]
ok $? "the spec gives both hosts link=10, both are paced at 10Mbit; show names the slowest link"
"$rinxctl" testbed fault "$P" --port t0:p0 --rate 0 >/dev/null 2>&1
[ "$(tbf h0)" = none ] && [ "$(tbf h1)" = 10Mbit ] &&
	[ "$(grep -c 'link=' "$spec")" = 1 ]
ok $? "--port t0:p0 --rate 0: h0 unpaced, its link gone from the spec"
before=$(sw queue_drop)
ce0=$(ip netns exec "${P}h1" awk '/^IpExt:/ { if (!h) { split($0, k); h = 1 }
	else for (i = 2; i <= NF; i++) if (k[i] == "InCEPkts") print $i }' \
	/proc/net/netstat)
got=$(received 100 -l 100 -s 3000 -Q 2)
qd=$(($(sw queue_drop) - before))
ce1=$(ip netns exec "${P}h1" awk '/^IpExt:/ { if (!h) { split($0, k); h = 1 }
	else for (i = 2; i <= NF; i++) if (k[i] == "InCEPkts") print $i }' \
	/proc/net/netstat)
echo "# 100 pings of 3 KB at once: $got answered, queue_drop +$qd;" \
	"p1: frames=$(port p1 frames) tail_drops=$(port p1 tail_drops)" \
	"marks=$(port p1 marks) peak=$(port p1 peak) util=$(port p1 util);" \
	"h1 received $((ce1 - ce0)) with CE"
[ "$qd" -gt 0 ] && [ $((100 - ${got:-0})) = "$qd" ] &&
	[ $(($(port p0 tail_drops) + $(port p1 tail_drops))) = "$qd" ]
ok $? "rate 10 Mbit/s: the queue overflows, every lost ping a counted tail drop ($qd)"
[ "$(port p1 marks)" -gt 0 ] && [ "$(port p1 not_ect)" = 0 ] &&
	[ $(($(port p1 frames) + $(port p1 tail_drops))) = 100 ] &&
	[ "$(port p1 peak)" -gt 27504 ] && [ "$(port p1 peak)" -le 68760 ]
ok $? "ECT(0) requests above the threshold marked; peak between threshold and buffer"
[ $((ce1 - ce0)) = "$(port p1 marks)" ]
ok $? "h1's stack received every marked request with CE ($((ce1 - ce0)))"
got=$(received 30 -l 30 -s 3000)
[ "$(port p1 not_ect)" -gt 0 ]
ok $? "non-ECT pings above the threshold are not marked, counted not_ect"
"$rinxctl" testbed fault "$P" --port t0:p1 --rate 5 --buffer 20000 \
	--ecn off >/dev/null 2>&1
[ "$(port p1 rate)" = 5 ] && [ "$(port p1 buffer)" = 20000 ] &&
	[ "$(port p1 ecn)" = off ] && [ "$(port p1 frames)" = 0 ] &&
	[ "$(port p0 rate)" = 0 ] && [ "$(tbf h1)" = 5Mbit ] &&
	grep -q '^host name=h1 .* link=5$' "$spec" &&
	[ "$(grep -c 'link=' "$spec")" = 1 ]
ok $? "fault --port t0:p1 --rate 5 --buffer 20000 --ecn off: that port only, counters afresh, spec link=5, h1 paced at 5Mbit"
# Two classes: UDP to the rinx port in one, the rest in the other.
"$rinxctl" testbed fault "$P" --port t0:p1 --share 50 >/dev/null 2>&1
pay=$(printf '%0100d' 0)	# 100 B: frames of 142 B
for dport in 47001 47001 47001 47002 47002 47002; do
	ip netns exec "${P}h0" bash -c "echo -n $pay >/dev/udp/10.71.0.2/$dport" 2>/dev/null
done
[ "$(port p1 share)" = 50 ] && [ "$(port p1 rate)" = 5 ] &&
	[ "$(port p1 frames)" = 6 ] && [ "$(port p1 bytes)" = $((6 * 142)) ] &&
	[ "$(port p1 rinx_bytes)" = $((3 * 142)) ] && [ "$(port p0 rinx_bytes)" = - ]
ok $? "fault --share 50: 3 datagrams to the rinx port in its class (rinx_bytes $(port p1 rinx_bytes)), 3 to another port not"
"$rinxctl" testbed fault "$P" --port t0:p1 --share 0 >/dev/null 2>&1
# A flood's copies take the queue of their port too (devmap program).
ip netns exec "${P}h0" ping -q -b -c 3 -i 0.2 -W 1 10.71.255.255 >/dev/null 2>&1
[ "$(port p1 frames)" = 3 ] && [ "$(port p1 bytes)" = $((3 * 98)) ]
ok $? "3 broadcast pings: 3 flooded copies through p1's queue ($(port p1 frames))"
"$rinxctl" testbed fault "$P" --burst 32768 >/dev/null 2>&1
[ $? = 2 ] && "$rinxctl" testbed fault "$P" --burst 1 2>&1 |
	grep -q -- '--burst is gone.*--buffer'
ok $? "--burst is refused with a pointer to --buffer"
"$rinxctl" testbed up --prefix "${P}s" --hosts 2 --share 50 >/dev/null 2>&1
[ $? = 2 ] && "$rinxctl" testbed up --prefix "${P}s" --hosts 2 \
	--share 50 2>&1 | grep -q -- '--share needs --rate' &&
	! ip netns list | grep -q "^${P}s"
ok $? "up --share without --rate is refused, nothing made"
"$rinxctl" testbed fault "$P" --rate 0 >/dev/null 2>&1
before=$(sw queue_drop)
got=$(received 100 -l 100 -s 3000)
[ "${got:-0}" = 100 ] && [ "$(sw queue_drop)" = "$before" ] &&
	[ "$(grep -c 'link=' "$spec")" = 0 ] && [ "$(tbf h1)" = none ]
ok $? "rate 0: the same burst passes whole ($got of 100), links gone from the spec, h1 unpaced"

# Real queues: frames that are not rinx's wait in the queue process until
# their port's queue would send them. 100 datagrams of 1,000 B (frames of
# 1,042 B, 1,066 on the wire) sent at once to p1 at 10 Mbit/s leave it one
# every 853 us: their last arrives at least 99 x 853 us = 84 ms after the
# first; the virtual queue lets them all through at once. A lower bound
# the machine's speed cannot break: only a queue that holds them meets it.
# burst: "COUNT SPREAD_MS" of the datagrams h1 received
burst() {
	ip netns exec "${P}h1" timeout 20 python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# SO_RCVBUFFORCE: room for the whole burst at once
s.setsockopt(socket.SOL_SOCKET, 33, 1 << 22)
s.bind(("0.0.0.0", 9999)); s.settimeout(10); t = []
try:
    while len(t) < 100:
        s.recv(2048); t.append(time.monotonic()); s.settimeout(2)
except socket.timeout:
    pass
print(len(t), int((t[-1] - t[0]) * 1000) if t else 0)
' >"$P.burst" &
	local rx=$!
	sleep 0.5
	ip netns exec "${P}h0" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(100): s.sendto(bytes(1000), ("10.71.0.2", 9999))
'
	wait "$rx"
	cat "$P.burst"
	rm -f "$P.burst"
}
"$rinxctl" testbed fault "$P" --port t0:p1 --rate 10 --buffer 200000 \
	--ecn off --queue real >/dev/null 2>&1 &&
	"$rinxctl" testbed show "$P" | grep -q '^real queue: pid [0-9]*, 2 ports'
ok $? "fault --port t0:p1 --queue real: the queue process serves the ToR's 2 ports"
held=$(sw real_held)
read -r got spread <<<"$(burst)"
echo "# real: $got datagrams over $spread ms; held $(( $(sw real_held) - held ))"
[ "${got:-0}" = 100 ] && [ "${spread:-0}" -ge 84 ] &&
	[ $(( $(sw real_held) - held )) -ge 99 ] && [ "$(port p1 tail_drops)" = 0 ]
ok $? "queue real: 100 datagrams through 10 Mbit/s all delivered, spread over ${spread:-?} ms (>= 84), 99 or more held"
"$rinxctl" testbed fault "$P" --port t0:p1 --queue virtual >/dev/null 2>&1
held=$(sw real_held)
read -r got spread <<<"$(burst)"
echo "# virtual: $got datagrams over $spread ms"
[ "${got:-0}" = 100 ] && [ "$(sw real_held)" = "$held" ] &&
	[ "$(port p1 queue)" = virtual ]
ok $? "queue virtual again: the burst passes, none held"
"$rinxctl" testbed fault "$P" --port t0:p1 --queue real >/dev/null 2>&1
qpid=$("$rinxctl" testbed show "$P" | sed -n 's/^real queue: pid \([0-9]*\),.*/\1/p')
kill -9 "${qpid:-0}" 2>/dev/null
sleep 0.2
none=$(sw real_none)
read -r got spread <<<"$(burst)"
echo "# process $qpid killed: $got datagrams over $spread ms;" \
	"real_none $none -> $(sw real_none)"
[ -n "$qpid" ] && [ "${got:-0}" = 100 ] &&
	[ $(( $(sw real_none) - none )) -ge 99 ] &&
	"$rinxctl" testbed show "$P" | grep -q '^real queue: not running'
ok $? "queue process killed: the frames leave at once (counted real_none), nothing lost"
"$rinxctl" testbed fault "$P" --port t0:p1 --queue real >/dev/null 2>&1
qpid=$("$rinxctl" testbed show "$P" | sed -n 's/^real queue: pid \([0-9]*\),.*/\1/p')
[ -n "$qpid" ]
ok $? "fault --queue real starts the process again"
"$rinxctl" testbed fault "$P" --port t0:p1 --rate 0 --queue virtual >/dev/null 2>&1
"$rinxctl" testbed up --prefix "${P}s" --hosts 2 --queue real >/dev/null 2>&1
[ $? = 2 ] && "$rinxctl" testbed up --prefix "${P}s" --hosts 2 \
	--queue real 2>&1 | grep -q -- '--queue real needs --rate' &&
	! ip netns list | grep -q "^${P}s"
ok $? "up --queue real without --rate is refused, nothing made"

# Link rates in a spec of real hosts: parsed, checked, the slowest shown.
tmp=$(mktemp -d)
cat >"$tmp/ok.spec" <<EOF
rack id=0 ina=none uplink=40
rack id=1 ina=none
host name=a rank=0 rack=0 mac=02:00:00:00:00:01 ip=10.9.0.1 link=100
host name=b rank=1 rack=1 mac=02:00:00:00:00:02 ip=10.9.0.2 link=0
EOF
sed 's/link=100/link=fast/' "$tmp/ok.spec" >"$tmp/bad.spec"
sed 's/uplink=40/uplink=1000001/' "$tmp/ok.spec" >"$tmp/big.spec"
"$rinxctl" testbed show "$tmp/ok.spec" 2>&1 | grep -q '^slowest link: 40 Mbit/s$' &&
	"$rinxctl" testbed show "$tmp/bad.spec" 2>&1 |
	grep -q 'line 3: link must be 0..1000000 Mbit/s' &&
	"$rinxctl" testbed show "$tmp/big.spec" 2>&1 |
	grep -q 'line 1: uplink must be 0..1000000 Mbit/s'
ok $? "spec link=/uplink=: slowest of 100 and 40 is 40; bad values refused by line"
rm -rf "$tmp"

"$rinxctl" testbed show "$P" 2>&1 | diag
"$rinxctl" testbed down "$P" 2>&1 | diag
ok "${PIPESTATUS[0]}" "testbed down"
# the queue process: gone, or a zombie its new parent has yet to reap
st=$(ps -o stat= -p "${qpid:-0}" 2>/dev/null)
case $st in "" | Z*) qgone=1 ;; *) qgone=0 ;; esac
[ -z "$(ours)" ] && [ ! -e "/run/rinx/$P" ] && [ -n "$qpid" ] &&
	[ "$qgone" = 1 ]
ok $? "namespaces, fault pins and the queue process removed"

if [ $fail -ne 0 ]; then
	echo "# $fail of $n failed"
	exit 1
fi
exit 0
