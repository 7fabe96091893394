#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: rinx on rate-limited links (every switch port a queue with a
# rate, a buffer and an ECN mark threshold), without and with loss, one and
# two jobs at once. Every allreduce is verified element by element against
# an independent reference (int32 bit-exact, float32 within the bound);
# the congestion feedback is checked through counters: with the rates in
# the spec every rank paces from its plan's ceiling on and never above it;
# without them (a copy of the spec) the ranks start at line rate, the ports
# mark rinx frames (all of them ECN-capable), the hosts count the marks and
# the ranks pace themselves. No time is asserted: the speed is the benchmark's
# (docs/benchmark.md).
#
#   <P>h0 <P>h1         <P>h2 <P>h3
#      \   /               \   /
#      <P>t0 --- <P>sp --- <P>t1      every port: --rate 300 (Mbit/s)
#
#   selftests/test_congestion.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxQ$$
spec=
n=0
fail=0

# swsum KEY: a switch counter summed over every switch of the testbed
swsum() {
	"$rinxctl" testbed show "$P" 2>/dev/null |
		awk -v k="$1" '$2 == "tor" || $2 == "spine" {
			for (i = 3; i <= NF; i++) {
				split($i, a, "="); if (a[1] == k) s += a[2] } }
			END { print s + 0 }'
}

# hostsum KEY: a host-program counter summed over every host
hostsum() {
	"$rinxctl" stats --spec "$spec" --json 2>/dev/null |
		grep -o "\"$1\":[0-9]*" | awk -F: '{ s += $2 } END { print s + 0 }'
}

# links_with KEY=VALUE...: how many of the 8 switch ports' links (testbed
# show) have every KEY=VALUE
links_with() {
	"$rinxctl" testbed show "$P" 2>/dev/null |
		awk -v want="$*" -v ns="^$P" '$1 ~ ns && / rate=/ {
			n = split(want, w, " "); k = 0
			for (i = 1; i <= n; i++)
				for (j = 3; j <= NF; j++)
					if ($j == w[i]) { k++; break }
			if (k == n) c++ }
			END { print c + 0 }'
}

# bench --sizes SIZES ARGS...: a verified run; its output goes to TAP
# diagnostics and stays in $out for the checks. Succeeds when bench exits 0,
# says every element is ok and its row of every size (K, M: KiB, MiB) has
# "ok" in its verify column (a job's rows, with --jobs)
bench() {
	local sizes=$2 bytes="" s vs

	for s in ${sizes//,/ }; do
		case $s in
		*K) s=$((${s%K} * 1024)) ;;
		*M) s=$((${s%M} * 1048576)) ;;
		esac
		bytes+=${bytes:+,}$s
	done
	out=$(timeout 240 "$rinxctl" bench --spec "$spec" --verify --iters 2 \
		--warmup 0 --timeout 20000 "$@" 2>&1)
	rc=$?
	echo "$out" | diag
	verified_sizes "$out" "$bytes" | diag
	vs=${PIPESTATUS[0]}
	[ $rc -eq 0 ] && [ "$vs" -eq 0 ] &&
		echo "$out" | grep -q '^# verify: every element ok;'
}

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root (namespaces, XDP)"
	exit 4
fi
if [ ! -x "$rinxctl" ]; then
	echo "1..0 # SKIP $rinxctl not built"
	exit 4
fi
trap cleanup EXIT INT TERM
plan 19

out=$("$rinxctl" testbed up --racks 2 --per-rack 2 --prefix "$P" \
	--rate 300 2>&1)
ok $? "testbed up: 2 racks x 2 hosts, every port 300 Mbit/s"
echo "$out" | diag
spec=/run/rinx-testbed/$P.spec
grep -q "link=300" "$spec"
ok $? "the spec carries the link rates"

# 1: rate-limited, no loss
bench --sizes 4,3076,1M,4M --dtype int32
ok $? "int32 on 300 Mbit/s links: every element exact"
echo "$out" | grep -q "util"
ok $? "bench reports link utilization when the spec has link rates"
bench --sizes 3076,4M --profile
ok $? "float32 on 300 Mbit/s links: every element within the bound"
# the spec gives the rates: every rank paces from the start at most at its
# plan's ceiling (the links' rate), so the run may well see no mark
echo "$out" | awk '/pace rate min\/median\/max/ {
		for (i = 1; i <= NF; i++) {
			if ($i == "min/median/max") split($(i + 1), r, "/")
			if ($i == "ceiling") split($(i + 1), c, "\\.\\.")
		}
		if (!(c[1] > 0 && r[1] > 0 && r[3] + 0 <= c[2] + 0)) bad = 1
		seen++
	}
	END { exit !(seen && !bad) }'
ok $? "every rank paced from its ceiling on, never above it"
# without the rates in the spec the ranks start at line rate: the ports'
# queues fill, mark, and the ranks pace themselves from the marks
norate=$(mktemp)
sed 's/ link=[0-9]*//; s/ uplink=[0-9]*//' "$spec" >"$norate"
spec_rated=$spec
spec=$norate
bench --sizes 4M --profile
ok $? "float32, the spec without link rates: every element within the bound"
spec=$spec_rated
rm -f "$norate"
marks=$(swsum ecn_mark)
notect=$(swsum ecn_not_ect)
ce=$(hostsum ecn_ce)
echo "switch marks $marks (not ECN-capable above the threshold: $notect), host ecn_ce $ce" | diag
[ "$marks" -gt 0 ] && [ "$notect" -eq 0 ]
ok $? "ports marked rinx frames, every one of them ECN-capable"
# a mark stays on a block for the rest of its path, so every host that
# stores the block afterwards counts it: at most 4 counts per mark
[ "$ce" -gt 0 ] && [ "$ce" -le $((marks * 4)) ]
ok $? "hosts counted marked blocks (at most one per host and mark)"
echo "$out" | grep -q "pace rate min/median/max [1-9]"
ok $? "every rank paced itself after the marks (pace rate > 0)"

# 2: the same links with 1% loss, 1% duplicates and 1% reordering
out=$("$rinxctl" testbed fault "$P" --drop 10000 --dup 10000 \
	--reorder 10000 2>&1)
rc=$?
k=$(links_with rate=300 drop=10000 dup=10000 reorder=10000)
[ $rc -eq 0 ] && [ "$k" -eq 8 ]
ok $? "testbed fault: 1% drop, dup, reorder on top of the rate ($k of 8 links)"
bench --sizes 4,1M,4M --dtype int32 --profile
ok $? "int32, rate-limited and lossy: every element exact"
echo "$out" | grep -q "blocks resent"
ok $? "loss repair reported"
bench --sizes 3076,4M
ok $? "float32, rate-limited and lossy: every element within the bound"
out=$("$rinxctl" testbed fault "$P" --drop 0 --dup 0 --reorder 0 2>&1)
rc=$?
k=$(links_with rate=300 drop=0 dup=0 reorder=0)
[ $rc -eq 0 ] && [ "$k" -eq 8 ]
ok $? "testbed fault: loss off, the rate kept ($k of 8 links)"

# 3: two jobs at once over the same links
bench --sizes 1M,4M --dtype int32 --jobs 2
ok $? "two jobs at once: every element of both exact"
[ "$(echo "$out" | grep -c "#   job [0-9]* of 2: median")" -eq 4 ]
ok $? "a time for each job at each size"

"$rinxctl" testbed down "$P" 2>&1 | diag
ok "${PIPESTATUS[0]}" "testbed down"
[ -z "$(ours)" ] && [ ! -e "$spec" ] && [ ! -e "/run/rinx/$P" ]
ok $? "no namespace, spec or pin of $P left"

[ "$fail" -eq 0 ]
