#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Sharing links (docs/benchmark.md, "jobs sharing links, and a job beside
# TCP"). Every switch port at RATE Mbit/s with the testbed's queue and ECN
# mark threshold. Modes (-m):
#
# tcp   a rinx job beside a long TCP flow. Two racks of two hosts; the
#       ring's h1 -> h2 hop and a TCP flow h0 -> h3 both cross rack 0's
#       uplink towards the spine:
#
#          sp
#        /    \            every port RATE Mbit/s, queue, ECN marks
#      t0      t1
#     h0 h1   h2 h3        ring h0 h1 h2 h3; TCP h0 -> h3
#
#       The TCP flow runs alone first, then the rinx job alone, then both
#       at once; each side's share of the port is its rate over RATE:
#       TCP's from the bytes its receiver counted while the rinx job ran,
#       rinx's from its busbw (on a ring every link carries busbw; the
#       warm-up collective counts in the time, not in busbw). With -i the
#       ToRs aggregate (-p rina: a Rina job; its share is its algbw, as
#       in mode rina). Then the port's own count of the same: the bytes
#       rack 0's uplink sent (its `links` entry read every 50 ms while the
#       rinx run lasts), rinx frames' and the rest, over what RATE carries
#       in the time; the medians over the 50 ms in which rinx sent more
#       than a tenth of the port (its setup and the gaps between
#       collectives left out).
# rina  the ring job beside a Rina job (both ToRs INA) on the same four
#       hosts, each in its own processes; gloo: beside a Gloo allreduce
#       (a ring over TCP, the same hosts in the same order). Each side
#       alone, then each measured while the other runs over and over in
#       the background (so every run of it is shared); the share of a
#       side is what it puts on the port over RATE: a ring's busbw (every
#       link of a ring carries busbw), a Rina job's algbw (its ToRs sum:
#       every link carries the data once each way, busbw x n / (2 (n -
#       1)), 2/3 on the four hosts).
# jobs  K jobs of PLAN (-k, ids 1, 5, 9, ...) in K separate processes on
#       2 racks of 4 hosts (-i: the racks' INA, switch or agent), one job
#       alone first; every job's busbw, its ratio to 1/K of the job alone,
#       and the aggregate over the job alone.
#
# Every rinx run verifies every element of every collective (`bench
# --verify`), Gloo every element of its own.
#
#   tools/share-bench.sh [-m MODE] [-l RATE] [-s SIZE] [-n ITERS] [-c CC]
#                        [-r MS] [-t] [-w PCT] [-q] [-p PLAN] [-k K]
#                        [-i INA] [-P PREFIX] [BUILDDIR]
#
#   -m   tcp (default), rina, gloo or jobs
#   -l   port rate in Mbit/s (default 1000)
#   -s   the collective's size (default 16M)
#   -n   collectives per run (default 20)
#   -c   tcp: the TCP sender's congestion control (TCP_CONGESTION; default
#        cubic), with ECN on (net.ipv4.tcp_ecn=1) at both ends
#   -r   tcp: the TCP flow's least retransmission timeout in ms at both
#        ends (the route's rto_min; default the kernel's, 200 ms)
#   -t   tcp: the TCP flow paced by the kernel (SO_MAX_PACING_RATE set
#        above the port's rate: the flow leaves at about its window per
#        round trip instead of in bursts; default: not paced)
#   -w   two classes in every port's queue, rinx frames served at PCT
#        percent of the port while the rest waits too (`testbed up
#        --share PCT`; default: one queue for every frame)
#   -q   real queues: frames that are not rinx's wait at every port until
#        its queue would send them (`testbed up --queue real`; default:
#        virtual, every frame leaves at once)
#   -p   the rinx plan (default ring)
#   -k   jobs: how many (default 2); tcp: that many rinx jobs beside the
#        flow at once (ids 1, 5, 9, ...; their busbw summed; default one)
#   -i   jobs: the racks' INA kind, switch (default) or agent; tcp: the
#        racks' INA kind (default: none)
#   -P   the testbed's prefix (default rxM and 4 random hex digits)
#
# The testbed is brought up with a fresh prefix and taken down at the end,
# also on failure or interrupt. Prints one line per run and the shares.

set -u
rate=1000 size=16M iters=20 cc=cubic plan=ring mode=tcp k=2 ina=switch
ina_set= rto= share= paced= k_set= real=
p=rxM$(printf %04x $((RANDOM % 65536)))
while getopts m:l:s:n:c:r:tw:qp:k:i:P: o; do
	case $o in
	m) mode=$OPTARG ;;
	k) k=$OPTARG k_set=1 ;;
	i) ina=$OPTARG ina_set=1 ;;
	l) rate=$OPTARG ;;
	s) size=$OPTARG ;;
	n) iters=$OPTARG ;;
	c) cc=$OPTARG ;;
	r) rto=$OPTARG ;;
	w) share=$OPTARG ;;
	t) paced=1 ;;
	q) real=1 ;;
	p) plan=$OPTARG ;;
	P) p=$OPTARG ;;
	*) sed -n '46,75p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-$(dirname "$0")/../build}
rinxctl=$build/rinxctl
spec=/run/rinx-testbed/$p.spec
port=5201
tmp=$(mktemp -d)
pids=()

down() {
	local x

	for x in "${pids[@]}"; do
		kill "$x" 2>/dev/null
	done
	# Gloo's ranks (their timeout forwards the signal)
	# shellcheck disable=SC2046	# one pid a line
	[ -f "$tmp/gloo.pids" ] && kill $(cat "$tmp/gloo.pids") 2>/dev/null
	"$rinxctl" testbed down "$p" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap down EXIT
trap 'exit 1' INT TERM

if [ "$(id -u)" != 0 ]; then
	echo "share-bench: needs root (namespaces, XDP)" >&2
	exit 6
fi
case $mode in
tcp) shape="--racks 2 --per-rack 2${ina_set:+ --ina $ina}" ;;
rina|gloo) shape="--racks 2 --per-rack 2 --ina switch" ;;
jobs) shape="--racks 2 --per-rack 4 --ina $ina" ;;
*) echo "share-bench: unknown mode $mode" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
"$rinxctl" testbed up --prefix "$p" $shape --rate "$rate" \
	${share:+--share "$share"} ${real:+--queue real} \
	>"$tmp/up" 2>&1 || { cat "$tmp/up" >&2; exit 1; }
for h in h0 h3; do
	ip netns exec "$p$h" sysctl -qw net.ipv4.tcp_ecn=1
	if [ -n "$rto" ]; then
		# the host's one route (its subnet), with the least RTO
		# shellcheck disable=SC2046	# the route's words
		ip netns exec "$p$h" ip route change $(ip netns exec "$p$h" \
			ip route show | head -1) rto_min "${rto}ms" ||
			{ echo "share-bench: cannot set rto_min" >&2; exit 1; }
	fi
done
dst=$(awk '/^host name=h3 /{for (i = 1; i <= NF; i++) if ($i ~ /^ip=/) print substr($i, 4)}' "$spec")

# tcp SECONDS [FROM TO]: a bulk TCP flow h0 -> h3 for SECONDS; prints the
# Mbit/s the receiver counted, over the whole flow, or between the
# CLOCK_MONOTONIC times in the files FROM and TO (written meanwhile)
tcp() {
	ip netns exec "${p}h3" python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); s.settimeout(30)
c, _ = s.accept(); c.settimeout(30); n = 0; log = []
while True:
    b = c.recv(1 << 20)
    if not b: break
    n += len(b); log.append((time.monotonic(), n))
def rate(a, z):
    pts = [x for x in log if a <= x[0] <= z]
    if len(pts) < 2: return 0.0
    return (pts[-1][1] - pts[0][1]) * 8 / (pts[-1][0] - pts[0][0]) / 1e6
if len(sys.argv) > 3:
    # the start and end of the rinx run, written while the flow ran
    for _ in range(600):
        try:
            a = float(open(sys.argv[2]).read())
            z = float(open(sys.argv[3]).read())
            break
        except (OSError, ValueError):
            time.sleep(0.1)
    else:
        a = z = 0.0
    if log and z > log[-1][0]:
        print("share-bench: the TCP flow ended before the rinx job",
              file=sys.stderr)
    print("%.1f" % rate(a, z))
else:
    print("%.1f" % (rate(log[0][0], log[-1][0]) if log else 0.0))
' "$port" "${@:2}" >"$tmp/rx" &
	local rx=$!
	pids+=("$rx")
	sleep 0.5
	ip netns exec "${p}h0" python3 -c '
import socket, sys, time
# the receiver may take longer than the half second to listen on a busy
# machine: try again for 20 s
for _ in range(200):
    c = socket.socket()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                 sys.argv[4].encode())
    if sys.argv[5]:
        # SO_MAX_PACING_RATE (47) below ~0 turns on the kernel pacing
        # of the flow (no fq qdisc here); the cap, 10 Gbit/s in bytes/s,
        # is above any port of the testbed
        c.setsockopt(socket.SOL_SOCKET, 47, 1250000000)
    c.settimeout(30)
    try:
        c.connect((sys.argv[1], int(sys.argv[2])))
        break
    except ConnectionRefusedError:
        c.close()
        time.sleep(0.1)
else:
    sys.exit("no receiver")
buf = bytes(1 << 20); end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end: c.sendall(buf)
c.close()
' "$dst" "$port" "$1" "$cc" "$paced" || echo "share-bench: TCP sender failed (congestion control $cc?)" >&2
	wait "$rx"
	cat "$tmp/rx"
}

# usample STOPFILE: rack 0's uplink counters every 50 ms until STOPFILE
# exists, a line each: CLOCK_MONOTONIC seconds, bytes sent, of them rinx
# frames' (n_bytes and n_rinx of its `links` entry, struct rinx_sw_link:
# offsets 96 and 112)
usample() {
	local ifx

	ifx=$(ip netns exec "${p}t0" cat /sys/class/net/uplink/ifindex)
	python3 -c '
import json, os, struct, subprocess, sys, time
path, ifx, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
key = [str(b) for b in struct.pack("<I", ifx)]
while not os.path.exists(stop):
    out = subprocess.run(["bpftool", "-j", "map", "lookup", "pinned", path,
                          "key"] + key, capture_output=True, text=True).stdout
    try:
        v = bytes(int(x, 16) for x in json.loads(out)["value"])
        print("%.4f %d %d" % (time.monotonic(),
              struct.unpack_from("<Q", v, 96)[0],
              struct.unpack_from("<Q", v, 112)[0]), flush=True)
    except (ValueError, KeyError, struct.error):
        pass
    time.sleep(0.05)
' "/run/rinx/$p/sw-${p}t0/links" "$ifx" "$1"
}

# bench [PLAN [JOB]]: a rinx job; prints its busbw in Mbit/s, or "failed"
bench() {
	local out

	out=$("$rinxctl" bench --spec "$spec" --plan "${1:-$plan}" \
		--sizes "$size" --iters "$iters" --warmup 1 --verify \
		${2:+--job "$2"} 2>&1)
	if ! echo "$out" | grep -q "verify: every element ok"; then
		echo "$out" | tail -3 >&2
		echo failed
		return
	fi
	echo "$out" | awk '$1 ~ /^[0-9]+$/ && NF >= 9 { printf "%.1f", $7 * 8000 }'
}

# gloo: a Gloo allreduce over the four hosts, ranks in host order; prints
# its busbw in Mbit/s, or "failed" (a wrong element counts as failed)
gloo() {
	local i ip0 out

	ip0=$(awk '/^host name=h0 /{for (i = 1; i <= NF; i++) if ($i ~ /^ip=/) print substr($i, 4)}' "$spec")
	for i in 3 2 1 0; do
		ip netns exec "${p}h$i" env RANK=$i WORLD_SIZE=4 \
			MASTER_ADDR="$ip0" MASTER_PORT=$((port + 1)) \
			GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 \
			timeout 600 /usr/bin/python3 \
			"$(dirname "$0")/peers/gloo_bench.py" --sizes "$size" \
			--iters "$iters" --warmup 1 >"$tmp/gloo$i" 2>&1 &
		# a subshell's: down() ends them on an interrupt
		echo $! >>"$tmp/gloo.pids"
	done
	wait
	out=$(grep '"busbw_gbs"' "$tmp/gloo0")
	if [ -z "$out" ] || ! echo "$out" | grep -q '"verified":true'; then
		tail -n 3 "$tmp/gloo0" >&2
		echo failed
		return
	fi
	echo "$out" | sed -E 's/.*"busbw_gbs":([0-9.]+).*/\1/' |
		awk '{ printf "%.1f", $1 * 8000 }'
}

# loop CMD...: runs CMD over and over in the background until stop() (the
# side that shares every run of the one measured meanwhile)
loop() {
	rm -f "$tmp/stop" "$tmp/loop"
	( while [ ! -e "$tmp/stop" ]; do "$@" >>"$tmp/loop"; echo >>"$tmp/loop"
	  done ) &
	lp=$!
	pids+=("$lp")
	sleep 3
}
stop() {	# bg: how many runs the background made and how many failed
	touch "$tmp/stop"
	wait "$lp"
	bg=$(awk '{ n++; if ($1 == "failed") f++ }
		END { printf "(background: %d runs, %d failed)", n, f }' "$tmp/loop")
}

share() {	# share NAME MBIT: NAME's load on the port (MBIT: its busbw)
	awk -v n="$1" -v r="$2" -v l="$rate" 'BEGIN {
		if (n == "rina")	# algbw: busbw x 4 / (2 x 3)
			r = r * 2 / 3
		printf "  %s: %.2f of the %d Mbit/s port\n", n, r / l, l }'
}

case $mode in
tcp)
	echo "# share-bench: testbed $p, 2 racks x 2${ina_set:+ (ToRs INA: $ina)}, ports at $rate Mbit/s${share:+ (rinx class $share%)}; TCP h0 -> h3 ($cc, ECN on${rto:+, rto_min $rto ms}${paced:+, paced}); rinx $plan${k_set:+ x $k jobs}, $size x $iters, verified"
	t_alone=$(tcp 10)
	echo "tcp alone:  $t_alone Mbit/s"
	r_alone=$(bench)
	echo "rinx alone: $r_alone Mbit/s (busbw)"
	# both: TCP for three times as long as the rinx run took alone (it is
	# slower beside TCP, and far slower on a busy machine)
	secs=$(awk -v r="$r_alone" -v s="$size" -v n="$iters" 'BEGIN {
		m = s + 0; if (s ~ /K$/) m *= 1024; if (s ~ /M$/) m *= 1048576
		printf "%d", (r > 0 ? 4 * (n + 1) * m * 8 * 3 / (r * 1e6) : 60) + 20 }')
	now() { python3 -c 'import time; print(time.monotonic())'; }
	tcp "$secs" "$tmp/from" "$tmp/to" >"$tmp/both_tcp" &
	tp=$!
	pids+=("$tp")
	sleep 2
	now >"$tmp/from"
	# the uplink's counters while the rinx run lasts
	rm -f "$tmp/ustop"
	usample "$tmp/ustop" >"$tmp/usamples" &
	up_s=$!
	pids+=("$up_s")
	if [ -n "$k_set" ] && [ "$k" -gt 1 ]; then
		# k jobs at once: their loads on the port add up
		jp=()
		for i in $(seq 1 "$k"); do
			{ bench "$plan" $((4 * i - 3)); echo; } >"$tmp/job$i" &
			jp+=($!)
		done
		wait "${jp[@]}"
		r_both=$(cat "$tmp"/job* | awk '$1 == "failed" { f = 1 }
			{ s += $1 } END { if (f) print "failed"
					  else printf "%.1f", s }')
		echo "jobs beside tcp: $(cat "$tmp"/job* | tr '\n' ' ')(Mbit/s busbw each)"
	else
		r_both=$(bench)
	fi
	touch "$tmp/ustop"
	wait "$up_s"
	now >"$tmp/to"
	wait "$tp"
	t_both=$(cat "$tmp/both_tcp")
	echo "together:   tcp $t_both Mbit/s, rinx $r_both Mbit/s (busbw${k_set:+, $k jobs summed})"
	# a Rina job with INA ToRs puts its algbw on the port (mode rina)
	awk -v t="$t_both" -v r="$r_both" -v l="$rate" \
	    -v a="$([ "$plan" = rina ] && [ -n "$ina_set" ] && echo 1)" 'BEGIN {
		if (a) r = r * 2 / 3
		printf "shares of the %d Mbit/s port: tcp %.2f, rinx %.2f%s\n",
		       l, t / l, r / l, a ? " (algbw)" : "" }'
	# what the port itself counted: its frames' bytes in each 50 ms of
	# the rinx run in which rinx sent (over a tenth of the port: its
	# setup, the gaps between collectives and the edges left out),
	# rinx frames' and the rest (TCP's data and anything else leaving
	# rack 0; TCP's ACKs come the other way); the medians of those
	awk -v l="$rate" 'NF == 3 && p {
		d = ($1 - t) * l * 1e6 / 8; r = ($3 - pr) / d
		if (d > 0 && r > 0.1) { n++; rs[n] = r; os[n] = ($2 - pb) / d - r }
	} NF == 3 { p = 1; t = $1; pb = $2; pr = $3 }
	function med(a, n,   i, j, x) {
		for (i = 2; i <= n; i++) { x = a[i]
			for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]
			a[j + 1] = x }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	END { if (n) printf "uplink counters, median of %d x 50 ms with rinx sending: tcp and the rest %.2f, rinx %.2f of the port\n",
		n, med(os, n), med(rs, n) }' "$tmp/usamples"
	[ "$r_both" != failed ] && [ "$r_alone" != failed ]
	;;
rina|gloo)
	echo "# share-bench: testbed $p, 2 racks x 2 (ToRs INA), ports at $rate Mbit/s${share:+ (rinx class $share%)}; rinx $plan (job 1) beside $mode, $size x $iters, verified"
	if [ "$mode" = rina ]; then
		other() { bench rina 2; }
	else
		other() { gloo; }
	fi
	r_alone=$(bench "$plan" 1)
	echo "$plan alone: $r_alone Mbit/s (busbw)"
	o_alone=$(other)
	echo "$mode alone: $o_alone Mbit/s (busbw)"
	loop other
	r_both=$(bench "$plan" 1)
	stop
	echo "$plan beside $mode: $r_both Mbit/s (busbw) $bg"
	loop bench "$plan" 1
	o_both=$(other)
	stop
	echo "$mode beside $plan: $o_both Mbit/s (busbw) $bg"
	echo "shares while both ran:"
	share "$plan" "$r_both"
	share "$mode" "$o_both"
	[ "$r_alone" != failed ] && [ "$r_both" != failed ] &&
		[ "$o_alone" != failed ] && [ "$o_both" != failed ]
	;;
jobs)
	echo "# share-bench: testbed $p, 2 racks x 4 (ina $ina), ports at $rate Mbit/s${share:+ (rinx class $share%)}; $k jobs of $plan in $k processes, $size x $iters, verified"
	one=$(bench "$plan" 1)
	echo "one job alone: $one Mbit/s (busbw)"
	for i in $(seq 1 "$k"); do
		{ bench "$plan" $((4 * i - 3)); echo; } >"$tmp/job$i" &
	done
	wait
	bad=0
	for i in $(seq 1 "$k"); do
		b=$(cat "$tmp/job$i")
		[ "$b" = failed ] && bad=1
		echo "job $((4 * i - 3)): $b Mbit/s (busbw)"
	done
	[ $bad -eq 0 ] && cat "$tmp"/job* | awk -v one="$one" -v k="$k" '
		{ b[NR] = $1; s += $1; if (NR == 1 || $1 < lo) lo = $1
		  if ($1 > hi) hi = $1 }
		END { printf "each / (one / %d): ", k
		      for (i = 1; i <= NR; i++) printf "%.2f ", b[i] * k / one
		      printf "\nslowest / fastest: %.2f; sum / one: %.2f\n",
			lo / hi, s / one }'
	[ "$one" != failed ] && [ $bad -eq 0 ]
	;;
esac
