#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Runs planners' plans on a topology testbed and prints the rate each
# reached beside the simulator's, as ratios to the last scheme: the
# testbed's check of the planners, independent of them (the ranks start at
# their own links' rate and congestion control finds the plan's rate; the
# switches sum at most their capacity). Needs root.
#
#   tools/topo/ratios.sh [options] [-- testbed up options (default
#                                       --ecn 30000 --buffer 120000)]
#     --gen SPEC | --topo FILE   the topology (default --gen grid-toy)
#     --schemes LIST             planners, comma-separated; ratios are to
#                                the last (default grid,ps-ina,ps)
#     --size BYTES               per rank (default 4M)
#     --iters N                  timed runs per scheme, after a warm-up
#                                (default 3; the median is taken)
#     --rounds N                 the schemes in turn, N times (default 1)
#     --prefix P                 testbed prefix (default rxr + 4 digits)
#     --build DIR                build directory (default ./build)
#
# Output: per scheme and round, the simulator's rate per worker (Gbit/s of
# the topology), the measured rate per worker (Mbit/s: tensor bits over
# the median allreduce time), the two ratios to the last scheme and
# measured / simulated ratio; with three schemes or more, then every pair
# A/B of them: the simulator's ratio, the measured one, measured /
# simulated.

set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../build
topo=(--gen grid-toy)
schemes=grid,ps-ina,ps
size=4M
iters=3
rounds=1
P=rxr$((RANDOM % 10000))
while [ $# -gt 0 ]; do
	case $1 in
	--gen|--topo) topo=("$1" "$2"); shift 2 ;;
	--schemes) schemes=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--prefix) P=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "ratios.sh: unknown option $1 (see the head of $0)" >&2
	   exit 2 ;;
	esac
done
# Queues sized for the scaled rates: a port's default buffer and mark
# threshold are the line-rate port's in bytes, 20-50 times as long in
# time at the testbed's rates, longer than congestion control's loop
# (docs/sim.md, "Paced by congestion control alone").
[ $# -gt 0 ] || set -- --ecn 30000 --buffer 120000
rinxctl=$build/rinxctl
spec=/run/rinx-testbed/$P.spec
IFS=, read -r -a list <<< "$schemes"
last=${list[${#list[@]} - 1]}

cleanup() { "$rinxctl" testbed down "$P" >/dev/null 2>&1; }
trap cleanup EXIT

# the simulator's rate per worker of every scheme
sim=$("$rinxctl" sim "${topo[@]}" --scheme "$schemes" --json) ||
	{ echo "ratios.sh: rinxctl sim failed" >&2; exit 1; }
simrate() {
	python3 -c 'import json, sys
d = json.loads(sys.argv[1])
print(next(s["min_rate_gbps"] for s in d["schemes"] if s["scheme"] == sys.argv[2]))' "$sim" "$1"
}

timeout 300 "$rinxctl" testbed up "${topo[@]}" --prefix "$P" \
	--plan "topo:${list[0]}" "$@" >/dev/null ||
	{ echo "ratios.sh: testbed up failed" >&2; exit 1; }

bytes=$(python3 -c 'import sys
s = sys.argv[1]; m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
print(int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s))' "$size")
printf '%-6s %-10s %9s %9s %10s %9s %8s\n' round scheme sim_gbps sim_ratio \
	meas_mbit meas_ratio meas/sim
for ((r = 1; r <= rounds; r++)); do
	declare -A meas=()
	for s in "${list[@]}"; do
		timeout 120 "$rinxctl" testbed plan "$P" "topo:$s" >/dev/null ||
			{ echo "ratios.sh: testbed plan topo:$s failed" >&2
			  exit 1; }
		us=$(timeout 900 "$rinxctl" bench --spec "$spec" --sizes "$size" \
			--iters "$iters" --warmup 1 --verify --json \
			--timeout 20000 | python3 -c 'import json, sys
d = json.load(sys.stdin)["results"][0]
assert d["verified"] is not False, "verify failed"
print(d["median_us"])') ||
			{ echo "ratios.sh: bench of topo:$s failed" >&2; exit 1; }
		meas[$s]=$(python3 -c "print($bytes * 8 / $us)")
	done
	for s in "${list[@]}"; do
		python3 - "$r" "$s" "$(simrate "$s")" "$(simrate "$last")" \
			"${meas[$s]}" "${meas[$last]}" <<'EOF'
import sys
r, s, sim, simb, m, mb = sys.argv[1:7]
sr = float(sim) / float(simb)
mr = float(m) / float(mb)
print("%-6s %-10s %9.4g %9.4g %10.4g %9.4g %8.3f"
      % (r, s, float(sim), sr, float(m), mr, mr / sr))
EOF
	done
	# with three schemes or more, every pair (forest/ring beside
	# forest/tree)
	((${#list[@]} > 2)) || continue
	for ((i = 0; i < ${#list[@]}; i++)); do
		for ((j = i + 1; j < ${#list[@]}; j++)); do
			a=${list[$i]} b=${list[$j]}
			python3 - "$r" "$a/$b" "$(simrate "$a")" "$(simrate "$b")" \
				"${meas[$a]}" "${meas[$b]}" <<'EOF'
import sys
r, ab, sa, sb, ma, mb = sys.argv[1:7]
sr = float(sa) / float(sb)
mr = float(ma) / float(mb)
print("%-6s %-20s %9.4g %20.4g %8.3f" % (r, ab, sr, mr, mr / sr))
EOF
		done
	done
done
