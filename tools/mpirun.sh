#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Runs an MPI program with Open MPI on the hosts of a testbed spec, one rank
# per host namespace in spec order (rank i on the spec's rank i), over TCP
# on the hosts' interface, as `rinxctl peer mpi` does:
#
#   tools/mpirun.sh SPEC [--preload SO] [--reverse] [-x VAR[=VALUE]]...
#                   -- PROGRAM ARGS...
#
# --preload SO runs the ranks with LD_PRELOAD=SO and RINX_SPEC=SPEC (the
# MPI interposer, docs/mpi.md); --reverse puts MPI rank i on the host of
# spec rank n-1-i (for RINX_RANKMAP); -x passes variables to the ranks as mpirun
# does. mpirun runs in the namespace of rank 0 (hostname = its namespace);
# tools/peers/mpi-agent.sh starts the other ranks in theirs. Exit status:
# mpirun's.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 SPEC [--preload SO] [-x VAR]... -- PROGRAM ARGS..." >&2; exit 2; }
spec=$1
shift
[ -r "$spec" ] || { echo "mpirun.sh: cannot read spec $spec" >&2; exit 2; }
pre=
rev=0
xs=
while [ $# -gt 0 ]; do
	case $1 in
	--preload) pre=$2; shift 2 ;;
	--reverse) rev=1; shift ;;
	-x) xs="$xs -x $2"; shift 2 ;;
	--) shift; break ;;
	*) echo "mpirun.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
[ $# -ge 1 ] || { echo "mpirun.sh: no program" >&2; exit 2; }

# host lines in rank order: "rank netns ifname"
hosts=$(awk '$1 == "host" {
		r = ""; ns = ""; ifn = ""
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "rank") r = kv[2]
			if (kv[1] == "netns") ns = kv[2]
			if (kv[1] == "ifname") ifn = kv[2]
		}
		print r, ns, ifn
	}' "$spec" | sort -n)
[ $rev -eq 1 ] && hosts=$(echo "$hosts" | sort -rn)
[ -n "$hosts" ] || { echo "mpirun.sh: no hosts in $spec" >&2; exit 2; }
np=$(echo "$hosts" | wc -l)
ns0=$(echo "$hosts" | awk 'NR == 1 { print $2 }')
ifname=$(echo "$hosts" | awk 'NR == 1 { print $3 }')
[ -n "$ns0" ] || { echo "mpirun.sh: the hosts of $spec have no netns (not a testbed)" >&2; exit 2; }

hostfile=$(mktemp)
trap 'rm -f "$hostfile"' EXIT
echo "$hosts" | awk '{ print $2 " slots=1" }' > "$hostfile"
if [ -n "$pre" ]; then
	[ -r "$pre" ] || { echo "mpirun.sh: cannot read $pre" >&2; exit 2; }
	xs="$xs -x LD_PRELOAD=$pre -x RINX_SPEC=$spec"
fi

# shellcheck disable=SC2086,SC2016
ip netns exec "$ns0" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$ns0" \
	mpirun --allow-run-as-root -np "$np" --hostfile "$hostfile" \
	--bind-to none \
	--mca plm_rsh_agent "$here/peers/mpi-agent.sh" \
	--mca plm_rsh_no_tree_spawn 1 \
	--mca pml ob1 --mca btl tcp,self \
	--mca btl_tcp_if_include "$ifname" --mca oob_tcp_if_include "$ifname" \
	--mca mpi_yield_when_idle 1 \
	$xs "$@"
