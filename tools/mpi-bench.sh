#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The same unmodified MPI program (build/mpi/allreduce_check --bench) on a
# testbed, first on Open MPI alone (TCP on the hosts' interface), then with
# the interposer (LD_PRELOAD=build/librinx-mpi.so): MPI_Allreduce(SUM) of
# float, every element of every run verified, busbw of the median run.
#
#   tools/mpi-bench.sh SPEC [SIZES] [ITERS] [BUILD]
#
# SIZES default 1M,16M,64M (bytes per rank), ITERS 5 (after 1 warm-up),
# BUILD the build directory (default build; `make mpi` first).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
spec=${1:?usage: $0 SPEC [SIZES] [ITERS] [BUILD]}
sizes=${2:-1M,16M,64M}
iters=${3:-5}
build=${4:-$here/../build}
prog=$build/mpi/allreduce_check
so=$build/librinx-mpi.so
for f in "$prog" "$so"; do
	[ -e "$f" ] || { echo "mpi-bench: $f missing (make mpi)" >&2; exit 2; }
done
rc=0
for what in mpi rinx; do
	echo "# $what: $(if [ $what = rinx ]; then echo "Open MPI + librinx-mpi.so"; else echo "Open MPI (TCP)"; fi)"
	if [ $what = rinx ]; then pre="--preload $so"; else pre=; fi
	# shellcheck disable=SC2086
	"$here/mpirun.sh" "$spec" $pre -- "$prog" --bench "$sizes" \
		--iters "$iters" --warmup 1 || rc=1
done
exit $rc
