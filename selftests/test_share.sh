#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: a rinx job beside a long TCP flow on one rate-limited link
# (tools/share-bench.sh, whose topology it uses). The rinx job's every
# collective verified while the TCP flow runs, and the TCP flow moving data
# alone and beside the job; each side's share is printed, not asserted
# (speed is the benchmark's business).
#
#          sp
#        /    \            every port 1000 Mbit/s, queue, ECN marks
#      t0      t1
#     h0 h1   h2 h3        ring h0 h1 h2 h3; TCP h0 -> h3
#
#   selftests/test_share.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
n=0
fail=0

needs_root ip timeout awk python3
plan 5

# the run's own prefix, as every test's (RINX_TEST_NS first)
out=$(timeout 300 "$here/../tools/share-bench.sh" -s 1M -n 5 \
	-P "${RINX_TEST_NS:-}rxM$$" "$build" 2>&1)
rc=$?
echo "$out" | diag
[ $rc -eq 0 ]
ok $? "share-bench ran, the rinx job verified alone and beside TCP (exit $rc)"
t_alone=$(echo "$out" | sed -n 's/^tcp alone: *\([0-9.]*\) Mbit.*/\1/p')
t_both=$(echo "$out" | sed -n 's/^together: *tcp \([0-9.]*\) Mbit.*/\1/p')
r_both=$(echo "$out" | sed -n 's/^together:.* rinx \([0-9.]*\) Mbit.*/\1/p')
awk -v t="${t_alone:-0}" 'BEGIN { exit !(t > 0) }'
ok $? "the TCP flow alone moved data (${t_alone:-none} Mbit/s)"
awk -v t="${t_both:-0}" 'BEGIN { exit !(t > 0) }'
ok $? "the TCP flow beside the rinx job moved data (${t_both:-none} Mbit/s)"
awk -v r="${r_both:-0}" 'BEGIN { exit !(r > 0) }'
ok $? "the rinx job beside TCP moved data (${r_both:-none} Mbit/s busbw)"
P=$(echo "$out" | sed -n 's/^# share-bench: testbed \([A-Za-z0-9]*\),.*/\1/p')
left=$(P=${P:-none}; ours | wc -l)
[ -n "$P" ] && [ "$left" -eq 0 ]
ok $? "share-bench took its testbed down ($left namespaces left)"
echo "# $fail of $n failed" | grep -v "^# 0 of"
[ $fail -eq 0 ]
