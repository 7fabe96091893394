#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Every plan of the engine side by side on one testbed (docs/benchmark.md,
# "Plans"): `rinxctl bench --plan P --verify` for each plan, one line per
# plan and size (median busbw of the slowest rank, link utilization when the
# links have a rate).
#
#   tools/plans-bench.sh [-r RACKS] [-p PER-RACK] [-i INA] [-l MBIT]
#                        [-s SIZES] [-n ITERS] [-P "PLANS"] [-d DATA] [BUILDDIR]
#
#   -i   ina of each rack, as `testbed up --ina` (default switch,none:
#        partial deployment, rack 0 aggregates on its ToR)
#   -l   rate of every switch port in Mbit/s (default 0: unlimited)
#   -d   the data, as `rinxctl bench --data` (default grad)
#
# The testbed is brought up with a fresh prefix and taken down at the end,
# also on failure or interrupt.

set -u
racks=2 per=4 ina=switch,none rate=0 sizes=1M,16M,64M iters=5 data=grad
plans="ring rina har ps ps:2 ps-ina ps-ina:2 tree dbtree"
while getopts r:p:i:l:s:n:P:d: o; do
	case $o in
	r) racks=$OPTARG ;;
	p) per=$OPTARG ;;
	i) ina=$OPTARG ;;
	l) rate=$OPTARG ;;
	s) sizes=$OPTARG ;;
	n) iters=$OPTARG ;;
	P) plans=$OPTARG ;;
	d) data=$OPTARG ;;
	*) sed -n '9,19p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
build=${1:-$(dirname "$0")/../build}
rinxctl=$build/rinxctl
p=rxB$(printf %04x $((RANDOM % 65536)))
spec=/run/rinx-testbed/$p.spec

trap '"$rinxctl" testbed down "$p" >/dev/null 2>&1' EXIT
trap 'exit 1' INT TERM
link=()
[ "$rate" != 0 ] && link=(--rate "$rate")
"$rinxctl" testbed up --prefix "$p" --racks "$racks" --per-rack "$per" \
	--ina "$ina" "${link[@]}" >/dev/null || exit 1
echo "# plans on $racks racks x $per hosts, ina $ina, links ${rate/#0/unlimited}" \
     "Mbit/s, data $data, median of $iters, verified"
printf '%-10s %10s %10s %8s %6s  %s\n' plan bytes median_us busbw util verify
for pl in $plans; do
	out=$(timeout -k 5 900 "$rinxctl" bench --spec "$spec" --plan "$pl" \
		--sizes "$sizes" --iters "$iters" --data "$data" --verify \
		--timeout 30000 2>&1)
	rc=$?
	echo "$out" | awk -v pl="$pl" '
		/^# / { next }
		$1 ~ /^[0-9]+$/ && NF >= 9 {
			util = NF >= 10 ? $(NF - 1) : "-"
			printf "%-10s %10s %10s %8s %6s  %s\n", pl, $1, $4, $7,
			       util, $NF
		}'
	[ $rc -ne 0 ] && echo "# $pl: bench exit $rc: $(echo "$out" | tail -1)"
done
exit 0
