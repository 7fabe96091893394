#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Start one training process per host of a rinx cluster spec, each inside
# its host's network namespace, the way torchrun starts ranks: RANK,
# LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR (rank 0's address),
# MASTER_PORT, plus RINX_SPEC, RINX_JOB and RINX_TOKEN (random unless set);
# or with --torchrun, one torchrun per host namespace.
#
#   tools/train/run.sh --spec FILE [options] [-- train.py options]
#   tools/train/run.sh --hosts N   [options] [-- train.py options]
#
#   --spec FILE     a cluster spec whose hosts have netns= (rinxctl testbed up)
#   --hosts N       bring up a testbed of N hosts for this run, down after it
#   --build DIR     build directory (default: build beside tools/)
#   --time S        kill every rank after S seconds (default 600)
#   --logs DIR      keep each rank's output in DIR/rank<i>.log (default: a
#                   temporary directory, removed)
#   --script FILE   the program to run (default tools/train/train.py)
#   --torchrun      start it with torchrun, one per host namespace (static
#                   rendezvous at rank 0's address, one process per node);
#                   the environment gets RINX_SPEC only: RINX_JOB and
#                   RINX_TOKEN only when set here (the backend "rinx"
#                   agrees on both through the rendezvous otherwise)
#
# Every rank's output is printed, prefixed with its rank. When a rank fails
# the others get 30 s to fail too (a dead peer makes their next allreduce
# time out) before they are killed. Exit 0 when every rank exited 0, else 1
# (2 for bad usage).

set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
spec=
hosts=0
limit=600
logs=
script=$here/train.py
torchrun=0
python=/usr/bin/python3
grace=30

usage() { sed -n '/^#   tools/,/^# (2 for/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while [ $# -gt 0 ]; do
	case $1 in
	--spec) spec=${2:?}; shift 2 ;;
	--hosts) hosts=${2:?}; shift 2 ;;
	--build) build=${2:?}; shift 2 ;;
	--time) limit=${2:?}; shift 2 ;;
	--logs) logs=${2:?}; shift 2 ;;
	--script) script=${2:?}; shift 2 ;;
	--torchrun) torchrun=1; shift ;;
	--) shift; break ;;
	-h|--help) usage ;;
	*) echo "run.sh: unknown option $1" >&2; usage ;;
	esac
done
if [ -z "$spec" ] && [ "$hosts" -lt 1 ] 2>/dev/null; then
	echo "run.sh: --spec FILE or --hosts N is required" >&2
	usage
fi
[ -x "$python" ] || { echo "run.sh: $python not found (tools/deps.sh python)" >&2; exit 1; }
[ -f "$build/python/rinx/__init__.py" ] ||
	{ echo "run.sh: $build/python/rinx missing (make)" >&2; exit 1; }

pids=()
tmp=
prefix=
# a torchrun has its own session (setsid): its workers die with it
kill_rank() {
	kill -KILL -- "-$1" 2>/dev/null || kill -KILL "$1" 2>/dev/null
}
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill_rank "$p"
	done
	wait 2>/dev/null
	[ -n "$prefix" ] && "$build/rinxctl" testbed down "$prefix" >/dev/null 2>&1
	[ -n "$tmp" ] && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if [ -z "$spec" ]; then
	prefix=rxtr$(printf '%04x' $((RANDOM)))
	"$build/rinxctl" testbed up --hosts "$hosts" --prefix "$prefix" >&2 ||
		{ echo "run.sh: testbed up failed" >&2; exit 1; }
	spec=/run/rinx-testbed/$prefix.spec
fi
[ -r "$spec" ] || { echo "run.sh: cannot read spec $spec" >&2; exit 1; }

# rank -> netns, ip, ifname from the spec's host records
declare -A ns ip ifn
n=0
while read -r kind rest; do
	[ "$kind" = host ] || continue
	r= a= s= i=eth0
	for kv in $rest; do
		case $kv in
		rank=*) r=${kv#rank=} ;;
		ip=*) a=${kv#ip=} ;;
		netns=*) s=${kv#netns=} ;;
		ifname=*) i=${kv#ifname=} ;;
		esac
	done
	if [ -z "$r" ] || [ -z "$s" ]; then
		echo "run.sh: host without rank= or netns= in $spec" >&2
		exit 1
	fi
	ns[$r]=$s ip[$r]=$a ifn[$r]=$i
	n=$((n + 1))
done < <(sed 's/#.*//' "$spec")
[ "$n" -ge 1 ] && [ -n "${ip[0]:-}" ] || { echo "run.sh: no rank 0 in $spec" >&2; exit 1; }

if [ -z "$logs" ]; then
	tmp=$(mktemp -d)
	logs=$tmp
fi
mkdir -p "$logs"
job=${RINX_JOB:-$((1 + (RANDOM << 10 | RANDOM) % 1000000))}
token=${RINX_TOKEN:-$(od -An -N8 -tu8 /dev/urandom | tr -d " ")}
port=${MASTER_PORT:-$((20000 + RANDOM % 20000))}

if [ $torchrun = 1 ]; then
	trun=$(command -v torchrun) ||
		{ echo "run.sh: torchrun not found (tools/deps.sh python)" >&2; exit 1; }
	echo "# $n torchrun nodes, spec $spec, job ${RINX_JOB:-from the rendezvous}, master ${ip[0]}:$port, logs $logs" >&2
	for ((r = 0; r < n; r++)); do
		# only what torchrun does not set: rinx's spec (RINX_JOB and
		# RINX_TOKEN pass through when the caller set them). torch
		# 1.13's torchrun cannot parse its own default --redirects and
		# --tee "0" on Python 3.11 (IntFlag no longer lists NONE); a
		# setting for local rank 1, which does not exist, leaves local
		# rank 0 at "none"
		RINX_SPEC=$spec PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH} \
		OMP_NUM_THREADS=1 \
			setsid ip netns exec "${ns[$r]}" "$python" "$trun" \
				--nnodes "$n" --nproc_per_node 1 --node_rank "$r" \
				--master_addr "${ip[0]}" --master_port "$port" \
				--max_restarts 0 --redirects 1:0 --tee 1:0 \
				"$script" "$@" \
				>"$logs/rank$r.log" 2>&1 &
		pids[$r]=$!
	done
else
	echo "# $n ranks, spec $spec, job $job, master ${ip[0]}:$port, logs $logs" >&2
	for ((r = 0; r < n; r++)); do
		RANK=$r LOCAL_RANK=0 WORLD_SIZE=$n LOCAL_WORLD_SIZE=1 GROUP_RANK=$r \
		MASTER_ADDR=${ip[0]} MASTER_PORT=$port GLOO_SOCKET_IFNAME=${ifn[$r]} \
		RINX_SPEC=$spec RINX_JOB=$job RINX_TOKEN=$token \
		PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH} OMP_NUM_THREADS=1 \
			ip netns exec "${ns[$r]}" "$python" "$script" "$@" \
				>"$logs/rank$r.log" 2>&1 &
		pids[$r]=$!
	done
fi

# Wait for all, bounded: the whole run by --time, the others by $grace
# seconds once one rank failed.
declare -A rc
deadline=$((SECONDS + limit))
failed_at=0
left=$n
while [ $left -gt 0 ]; do
	for ((r = 0; r < n; r++)); do
		[ -n "${rc[$r]:-}" ] && continue
		if ! kill -0 "${pids[$r]}" 2>/dev/null; then
			wait "${pids[$r]}" 2>/dev/null
			rc[$r]=$?
			left=$((left - 1))
			[ "${rc[$r]}" -ne 0 ] && [ $failed_at -eq 0 ] && failed_at=$SECONDS
		fi
	done
	[ $left -eq 0 ] && break
	if [ $SECONDS -ge $deadline ] ||
	   { [ $failed_at -gt 0 ] && [ $SECONDS -ge $((failed_at + grace)) ]; }; then
		for ((r = 0; r < n; r++)); do
			if [ -z "${rc[$r]:-}" ]; then
				kill_rank "${pids[$r]}"
				wait "${pids[$r]}" 2>/dev/null
				rc[$r]=killed
				left=$((left - 1))
			fi
		done
		break
	fi
	sleep 0.2
done
pids=()

bad=0
for ((r = 0; r < n; r++)); do
	sed "s/^/[rank $r] /" "$logs/rank$r.log"
	echo "# rank $r: exit ${rc[$r]}" >&2
	[ "${rc[$r]}" = 0 ] || bad=1
done
exit $bad
