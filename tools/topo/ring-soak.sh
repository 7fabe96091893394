#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Runs a plan's verified benches on a topology testbed, one after the
# other, until one fails or the time is up: the reproducer of a round
# that stalls for good now and then (docs/sim.md, the ring on hetero4).
# On a failure it prints the bench's output, every node's counters
# (rinxctl stats) and the switches' ports (testbed show), taken before
# the testbed goes. Needs root.
#
#   tools/topo/ring-soak.sh [options] [-- testbed up options]
#     --topo FILE    the topology (default tools/topo/hetero4-diag.topo)
#     --plan NAME    the planner (default ring: topo:ring)
#     --size BYTES   per rank (default 1M)
#     --iters N      collectives per bench (default 3)
#     --time S       stop starting benches after S seconds (default 600)
#     --prefix P     testbed prefix (default rxs + 4 digits)
#     --build DIR    build directory (default ./build)
#
# Output: a line per bench (its number, exit status, seconds); exit 0 if
# every bench verified every element, 1 at the first that did not.

set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../build
topo=$here/hetero4-diag.topo
plan=ring
size=1M
iters=3
secs=600
P=rxs$((RANDOM % 10000))
while [ $# -gt 0 ]; do
	case $1 in
	--topo) topo=$2; shift 2 ;;
	--plan) plan=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--time) secs=$2; shift 2 ;;
	--prefix) P=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "ring-soak.sh: unknown option $1 (see the head of $0)" >&2
	   exit 2 ;;
	esac
done
rinxctl=$build/rinxctl
spec=/run/rinx-testbed/$P.spec

cleanup() { timeout 120 "$rinxctl" testbed down "$P" >/dev/null 2>&1; }
trap cleanup EXIT
trap 'exit 1' INT TERM

timeout 300 "$rinxctl" testbed up --topo "$topo" --prefix "$P" \
	--plan "topo:$plan" "$@" >/dev/null ||
	{ echo "ring-soak.sh: testbed up failed" >&2; exit 1; }
end=$((SECONDS + secs))
i=0
while [ $SECONDS -lt $end ]; do
	i=$((i + 1))
	t0=$SECONDS
	# a stalled collective ends after --timeout without progress; the
	# outer bound covers a bench that would not end at all
	out=$(timeout -k 5 $((60 + 30 * iters)) "$rinxctl" bench \
		--spec "$spec" --verify --iters "$iters" --warmup 0 \
		--sizes "$size" --timeout 20000 --profile 2>&1)
	rc=$?
	echo "bench $i: exit $rc, $((SECONDS - t0)) s"
	if [ $rc -ne 0 ] ||
	   ! echo "$out" | grep -q '^# verify: every element ok;'; then
		echo "$out"
		timeout 60 "$rinxctl" stats --spec "$spec"
		timeout 60 "$rinxctl" testbed show "$P"
		exit 1
	fi
done
echo "$i benches, every element verified"
