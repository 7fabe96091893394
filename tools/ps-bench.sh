#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Pushes per second of the parameter server on rinx's data plane (the
# store in rank 0's host program, rinx.ps) against the Python TCP
# parameter server in rank 0's process (rinx.sync's reference), with the
# same rinx.sync.ASP steps and no compute: push a gradient of N values,
# take the parameters (docs/benchmark.md, "Parameter server"); with -S,
# also the store split over S servers (rinx.ps.Shards).
#
#   tools/ps-bench.sh [-H HOSTS] [-r RACKS] [-l RATE] [-n VALUES]
#                     [-k STEPS] [-R REPEAT] [-S SHARDS] [BUILDDIR]
#
#   -H   ranks, one per host (default 8)
#   -r   racks (default 2)
#   -l   every switch port's rate in Mbit/s (default 1000; 0: unlimited)
#   -n   values of the gradient (default 26122, the example's model)
#   -k   steps (pushes) per rank and run (default 200)
#   -R   runs of each, interleaved TCP, rinx, TCP, rinx ... (default 3)
#   -S   also the store split over S servers, spread over the ranks
#        (ranks 0 and 4 for 2 of 8), in every run after the other two
#
# A run's pushes per second: every rank's pushes over the slowest rank's
# time from a barrier to its last pull. Prints one line per run and the
# median of each with their ratio. The testbed is brought up with a fresh
# prefix and taken down at the end, also on failure or interrupt.

set -u
hosts=8 racks=2 rate=1000 values=26122 steps=200 repeat=3 shards=1
while getopts H:r:l:n:k:R:S: o; do
	case $o in
	H) hosts=$OPTARG ;;
	r) racks=$OPTARG ;;
	l) rate=$OPTARG ;;
	n) values=$OPTARG ;;
	k) steps=$OPTARG ;;
	R) repeat=$OPTARG ;;
	S) shards=$OPTARG ;;
	*) sed -n '11,24p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
rinxctl=$build/rinxctl
p=hpb$(printf %04x $((RANDOM % 65536)))
spec=/run/rinx-testbed/$p.spec
out=$(mktemp)
trap '"$rinxctl" testbed down "$p" >/dev/null 2>&1; rm -f "$out"' EXIT
trap 'exit 1' INT TERM

"$rinxctl" testbed up --prefix "$p" --hosts "$hosts" --racks "$racks" \
	--jobs 6 >/dev/null || exit 1
if [ "$rate" != 0 ]; then
	"$rinxctl" testbed fault "$p" --rate "$rate" >/dev/null || exit 1
fi
echo "# $hosts ranks, $racks racks, links ${rate} Mbit/s (0: unlimited)," \
	"$values values, $steps pushes per rank and run"
job=$((0x380001 + (RANDOM % 4096) * 64))
RINX_JOB=$job timeout -k 5 1200 "$here/train/run.sh" --spec "$spec" \
	--build "$build" --time 1100 --script "$here/train/ps_bench.py" \
	-- --job "$job" --values "$values" --steps "$steps" \
	--repeat "$repeat" --shards "$shards" >"$out" 2>&1 ||
	{ cat "$out"; exit 1; }
awk -F'\t' -v shards="$shards" '
	/\] bench\t/ {
		k = $2 "\t" $3
		n[k] += $4
		if ($5 > t[k]) t[k] = $5
		if (!($3 in seen)) { seen[$3] = 1; runs[++nr] = $3 }
	}
	function median(a, m,   i, j, x) {
		for (i = 1; i <= m; i++)
			for (j = i + 1; j <= m; j++)
				if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	function rate(tr, r) { return n[tr "\t" r] / t[tr "\t" r] }
	END {
		sh = shards > 1
		printf "%-4s %14s %14s %7s", "run", "tcp pushes/s",
		       "rinx pushes/s", "ratio"
		if (sh)
			printf " %14s %7s", shards " servers", "ratio"
		printf "\n"
		for (i = 1; i <= nr; i++) {
			r = runs[i]
			A[i] = rate("tcp", r); B[i] = rate("xdp", r)
			Q[i] = B[i] / A[i]
			printf "%-4s %14.0f %14.0f %6.2fx", r, A[i], B[i], Q[i]
			if (sh) {
				C[i] = rate("xdp" shards, r); P[i] = C[i] / A[i]
				printf " %14.0f %6.2fx", C[i], P[i]
			}
			printf "\n"
		}
		printf "%-4s %14.0f %14.0f %6.2fx", "med", median(A, nr),
		       median(B, nr), median(Q, nr)
		if (sh)
			printf " %14.0f %6.2fx", median(C, nr), median(P, nr)
		printf "\n"
	}' "$out"
