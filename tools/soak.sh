#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# rinx soak: allreduces on a lossy testbed must all be exact, and a killed
# trainer must turn into an error in bounded time.
#
#   tools/soak.sh [BUILD] [RUNS]      (make soak: RUNS=1000)
#
#   h0..h3 --- t0 ---+--- sp ---+--- t1 --- h4..h7      every switch port:
#   (rack 0)          uplinks           (rack 1)        1% drop, 1% duplicate,
#                                                       1% reorder
#
# 1. RUNS allreduces of 4 MiB float32 on 8 hosts with the faults above,
#    every element verified; the same on the fault-free testbed (RUNS/20
#    runs) for the time ratio.
# 2. A trainer killed in the middle of a 64 MiB allreduce: the time until
#    the other ranks return their error, and the error.
# Every phase is bounded by timeout(1); the testbed is removed on exit.
set -u
build=${1:-build}
runs=${2:-1000}
rinxctl=$build/rinxctl
prefix=rxK$$
spec=/run/rinx-testbed/$prefix.spec
cleanup() { "$rinxctl" testbed down "$prefix" >/dev/null 2>&1; }
trap cleanup EXIT
trap 'exit 1' INT TERM

[ "$(id -u)" = 0 ] || { echo "soak: must run as root" >&2; exit 4; }
"$rinxctl" testbed up --racks 2 --per-rack 4 --prefix "$prefix" \
	--drop 10000 --dup 10000 --reorder 10000 >/dev/null || exit 1

median() { sed -nE 's/^ +4194304 +1048576 +[0-9.]+ +([0-9.]+) .*/\1/p'; }

echo "== $runs allreduces of 4 MiB, 8 hosts, 1% drop/dup/reorder on every link"
t0=$(date +%s)
out=$(timeout $((runs * 3 + 300)) "$rinxctl" bench --spec "$spec" \
	--sizes 4M --iters "$runs" --warmup 0 --verify --timeout 30000)
rc=$?
echo "$out" | grep -v '^#  '
lossy=$(echo "$out" | median)
echo "   exit $rc after $(( $(date +%s) - t0 )) s"
"$rinxctl" stats --spec "$spec" --json | tr ',' '\n' |
	grep -E '"(repair|nack_miss|agg_reemit|drop_stale)"' |
	awk -F: '{ s[$1] += $2 } END { for (k in s) print "   " k, s[k] }'
"$rinxctl" testbed show "$prefix" | grep -oE 'fault_(drop|dup|reorder|hold_lost)=[0-9]+' |
	awk -F= '{ s[$1] += $2 } END { for (k in s) print "   injected " k, s[k] }'
[ $rc = 0 ] || { echo "soak: FAILED"; exit 1; }

echo "== the same without faults ($((runs / 20 + 1)) runs)"
"$rinxctl" testbed fault "$prefix" --all --drop 0 --dup 0 --reorder 0 >/dev/null
out=$(timeout 600 "$rinxctl" bench --spec "$spec" --sizes 4M \
	--iters $((runs / 20 + 1)) --warmup 1 --verify --timeout 30000) ||
	{ echo "$out"; echo "soak: FAILED"; exit 1; }
echo "$out" | grep -v '^#  '
clean=$(echo "$out" | median)
awk -v a="$lossy" -v b="$clean" 'BEGIN {
	printf "   median time per allreduce: %.1f ms with faults, %.1f ms without: %.2fx\n",
	       a / 1000, b / 1000, a / b }'

echo "== a trainer killed in the middle of a 64 MiB allreduce (timeout 2000 ms)"
"$rinxctl" bench --spec "$spec" --sizes 64M --iters 20 --warmup 0 \
	--timeout 2000 >/tmp/rinx-soak.$$ 2>&1 &
bench=$!
sleep 3
victim=$(pgrep -P $bench | sed -n 3p)
kill -9 "$victim" 2>/dev/null && t1=$(date +%s%N)
timeout 60 tail --pid=$bench -f /dev/null
t2=$(date +%s%N)
wait $bench
rc=$?
grep -m3 'timed out\|died\|answer' /tmp/rinx-soak.$$ | sed 's/^/   /'
rm -f /tmp/rinx-soak.$$
echo "   rank 2 killed; bench ended (exit $rc) $(( (t2 - t1) / 1000000 )) ms later"
[ $rc != 0 ] || { echo "soak: a killed trainer went unnoticed"; exit 1; }
echo "soak: ok"
