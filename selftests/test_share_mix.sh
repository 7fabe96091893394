#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: jobs of different plans, and a TCP flow, on the same
# rate-limited links and aggregators at once (issue 28's mixed sharing).
# Every sum is checked bit for bit (int32); nothing about speed is asserted
# (the shares are the benchmark's: tools/share-bench.sh).
#
#          sp
#        /    \            every port 1000 Mbit/s, queue, ECN marks;
#      t0      t1          both ToRs aggregate (INA)
#     h0 h1   h2 h3
#
# - mixed: a ring job, a Rina job and a ps-ina job, each in processes of
#   its own, open on h0 at once while a TCP flow h0 -> h3 crosses rack 0's
#   uplink with them (the ring's h1 -> h2 hop and the INA plans' ToR-to-
#   spine hop take it too); each job runs again and again until the three
#   were seen open at once, and verifies every element of every size in
#   every run; the TCP receiver counted bytes while they ran.
# - classes: every port with two classes and real queues (`testbed fault
#   --share 50 --queue real`), the ring beside the TCP flow again:
#   verified, rack 0's uplink carried frames of both classes, and the
#   frames it held in the real queue were not rinx's.
# - jobs: four jobs of one plan in one process (`bench --jobs 4`, every
#   job's ToR slots and pool in use at once), for the ring, Rina and
#   ps-ina, int32 bit-exact.
#
#   selftests/test_share_mix.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxX$$
spec=/run/rinx-testbed/$P.spec
tmp=$(mktemp -d)
n=0
fail=0
pids=()
port=5301

needs_root ip timeout awk python3
trap cleanup_groups EXIT
trap 'exit 1' INT TERM
plan 12

sizes=1048576,4194304

# hostip NAME: the testbed address of host NAME
hostip() {
	awk -v h="$1" '$1 == "host" && $2 == "name=" h {
		for (i = 1; i <= NF; i++) if ($i ~ /^ip=/) print substr($i, 4) }' \
		"$spec"
}

# tcp_start: a TCP flow h0 -> h3 (cubic, ECN at both ends) until
# $tmp/stop exists, at most 300 s; the receiver writes the bytes it
# counted to $tmp/tcp when the sender closes
tcp_start() {
	local ns

	for ns in "${P}h0" "${P}h3"; do
		ip netns exec "$ns" sysctl -qw net.ipv4.tcp_ecn=1
	done
	set -m
	timeout 320 ip netns exec "${P}h3" python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); s.settimeout(60)
c, _ = s.accept(); c.settimeout(60); n = 0
while True:
    b = c.recv(1 << 20)
    if not b: break
    n += len(b)
open(sys.argv[2], "w").write("%d\n" % n)
' "$port" "$tmp/tcp" >/dev/null 2>&1 &
	pids+=($!)
	timeout 320 ip netns exec "${P}h0" python3 -c '
import os, socket, sys, time
for _ in range(200):
    c = socket.socket()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
    c.settimeout(60)
    try:
        c.connect((sys.argv[1], int(sys.argv[2])))
        break
    except ConnectionRefusedError:
        c.close(); time.sleep(0.1)
else:
    sys.exit("no receiver")
buf = bytes(1 << 16); end = time.monotonic() + 300
while time.monotonic() < end and not os.path.exists(sys.argv[3]):
    c.sendall(buf)
c.close()
' "$(hostip h3)" "$port" "$tmp/stop" >"$tmp/tcp.out" 2>&1 &
	pids+=($!)
	set +m
}

# mixed_start: one bench process per plan, each its own job, in process
# groups of their own; each runs again and again (every run verified)
# until $tmp/jobs-stop exists, at most 200 s, so that all three are seen
# open at once however the machine schedules their starts
mixed_start() {
	local job=1 pl

	set -m
	for pl in ring rina ps-ina; do
		(
			end=$((SECONDS + 200))
			k=0
			while [ ! -e "$tmp/jobs-stop" ] && [ $SECONDS -lt $end ]; do
				timeout 120 "$rinxctl" -v bench --spec "$spec" \
					--plan "$pl" --sizes 1M,4M --iters 6 \
					--job $job --dtype int32 --verify \
					>"$tmp/$pl.$k.out" 2>&1
				echo $? >"$tmp/$pl.$k.rc"
				k=$((k + 1))
			done
		) &
		pids+=($!)
		job=$((job + 1))
	done
	set +m
}

"$rinxctl" testbed up --prefix "$P" --racks 2 --per-rack 2 --ina switch \
	--rate 1000 >"$tmp/up" 2>&1
rc=$?
ok $rc "testbed up, 2 racks x 2, INA ToRs, 1000 Mbit/s (prefix $P)"
[ $rc -eq 0 ] || diag <"$tmp/up"

tcp_start
mixed_start
# the three jobs open on h0 at once (each runs for seconds)
most=0
t_end=$((SECONDS + 90))
while [ $SECONDS -lt $t_end ]; do
	seen=$("$rinxctl" stats --spec "$spec" --node h0 2>/dev/null |
		grep -cE '^  job (1|2|3) ')
	[ "$seen" -gt "$most" ] && most=$seen
	[ "$most" -eq 3 ] && break
	sleep 0.1
done
[ "$most" -eq 3 ]
ok $? "ring (job 1), Rina (job 2) and ps-ina (job 3) open on h0 at once ($most of 3)"

touch "$tmp/jobs-stop"
for i in 2 3 4; do
	wait "${pids[$i]}"
done
for pl in ring rina ps-ina; do
	runs=0
	bad=""
	for f in "$tmp/$pl".*.rc; do
		[ -e "$f" ] || continue
		k=${f%.rc}
		k=${k##*.}
		rc=$(cat "$f")
		why=$(verified_sizes "$(cat "$tmp/$pl.$k.out")" $sizes)
		runs=$((runs + 1))
		if [ "$rc" != 0 ] || [ -n "$why" ]; then
			bad="run $k: exit $rc ${why:-}"
			tail -n 5 "$tmp/$pl.$k.out" | diag
		fi
	done
	[ $runs -gt 0 ] && [ -z "$bad" ]
	ok $? "$pl beside the others and TCP: every element of every size verified in each of its $runs runs, int32 bit-exact ${bad:+($bad)}"
done
touch "$tmp/stop"
wait "${pids[1]}"
wait "${pids[0]}"
got=$(cat "$tmp/tcp" 2>/dev/null)
[ "${got:-0}" -gt 0 ]
ok $? "the TCP flow beside them moved data (${got:-no} bytes)"
[ "${got:-0}" -gt 0 ] || diag <"$tmp/tcp.out"
pids=()

# Two classes on every port (testbed fault --share), real queues: the
# ring beside TCP again, rinx frames in one class and TCP in the other on
# rack 0's uplink, TCP's frames held until they are due, rinx's never.
"$rinxctl" testbed fault "$P" --all --share 50 --queue real >"$tmp/fault" 2>&1
ok $? "testbed fault --all --share 50 --queue real: two classes and real queues on every port"
rm -f "$tmp/stop" "$tmp/tcp"
port=$((port + 1))
tcp_start
out=$(timeout 120 "$rinxctl" bench --spec "$spec" --plan ring \
	--sizes 1M,4M --iters 6 --job 21 --dtype int32 --verify 2>&1)
rc=$?
why=$(verified_sizes "$out" $sizes)
touch "$tmp/stop"
wait "${pids[1]}"
wait "${pids[0]}"
pids=()
got=$(cat "$tmp/tcp" 2>/dev/null)
read -r bytes rinx frames held < <("$rinxctl" testbed show "$P" 2>/dev/null |
	awk -v ns="${P}t0" '$1 == ns && $2 == "uplink" {
		for (i = 3; i <= NF; i++) { split($i, a, "=")
			if (a[1] == "bytes") b = a[2]
			if (a[1] == "rinx_bytes") r = a[2]
			if (a[1] == "frames") f = a[2]
			if (a[1] == "real_held") h = a[2] }
		print b, r, f, h }')
# the frames that were not rinx's: at most frames less rinx's bytes over
# the largest frame (3,400 B; a rinx frame is 3,210 at most). Held rinx
# frames would come on top of TCP's: held as TCP's are, they would take
# the count far past it (the exact class of each held frame is checked
# in test_switch)
other=$(( ${frames:-0} - ${rinx:-0} / 3400 ))
echo "# uplink: $frames frames, $bytes B, rinx $rinx B, held $held (others at most $other)"
[ $rc -eq 0 ] && [ -z "$why" ] && [ "${got:-0}" -gt 0 ] &&
	[ "${rinx:-0}" -gt 0 ] 2>/dev/null && [ "${bytes:-0}" -gt "$rinx" ] &&
	[ "${held:-0}" -gt 0 ] && [ "$held" -le "$other" ]
ok $? "ring beside TCP, two classes, real queues: every element verified, int32 bit-exact (exit $rc ${why:-}); rack 0's uplink carried both (rinx ${rinx:-?} of ${bytes:-?} B) and held ${held:-?} frames, none rinx's; TCP ${got:-no} B"
[ $rc -eq 0 ] || echo "$out" | tail -n 5 | diag

for pl in ring rina ps-ina; do
	out=$(timeout 240 "$rinxctl" bench --spec "$spec" --plan "$pl" \
		--sizes 1M,4M --iters 3 --jobs 4 --job 11 --dtype int32 \
		--verify 2>&1)
	rc=$?
	why=$(verified_sizes "$out" $sizes)
	[ $rc -eq 0 ] && [ -z "$why" ]
	ok $? "four $pl jobs in one process: every element verified, int32 bit-exact (exit $rc ${why:-})"
	if [ $rc -ne 0 ] || [ -n "$why" ]; then
		echo "$out" | tail -n 5 | diag
	fi
done

testbed_down_end
