#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Open MPI launcher agent for the rinx testbed (--mca plm_rsh_agent).
# mpirun calls it like ssh: [options] HOST COMMAND...; HOST is the name of a
# network namespace (the hostfile lists namespaces). COMMAND runs in that
# namespace, in a fresh UTS namespace whose hostname is HOST, so that Open MPI
# sees one node per namespace.
while [ $# -gt 0 ]; do
	case "$1" in
	-l|-p|-o|-i|-F) shift 2 ;;	# ssh options that take a value
	-*) shift ;;
	*) break ;;
	esac
done
if [ $# -lt 2 ]; then
	echo "mpi-agent: usage: $0 NETNS COMMAND..." >&2
	exit 2
fi
ns=$1
shift
if ! ip netns list | grep -q "^$ns\( \|$\)"; then
	echo "mpi-agent: no network namespace '$ns'" >&2
	exit 255
fi
# shellcheck disable=SC2016
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$1" && shift && eval "$*"' mpi-agent "$ns" "$@"
