#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Install the Debian packages rinx needs, only those that are missing.
#   deps.sh build   compiler, BPF toolchain, libraries, iproute2
#   deps.sh peers   Open MPI and PyTorch (side-by-side benchmark)
#   deps.sh plot    plotting for `rinxctl bench --plot`
#   deps.sh python  the Python package and its training example (PyTorch,
#                   NumPy, scikit-learn's bundled digits data set)
set -e
case "${1:-build}" in
build) pkgs="make gcc clang llvm libbpf-dev libxdp-dev bpftool libelf-dev zlib1g-dev pkg-config iproute2 iputils-ping linux-libc-dev procps util-linux" ;;
peers) pkgs="openmpi-bin libopenmpi-dev python3-torch util-linux" ;;
plot)  pkgs="gnuplot-nox" ;;
python) pkgs="python3 python3-torch python3-numpy python3-sklearn" ;;
*) echo "usage: $0 build|peers|plot|python" >&2; exit 2 ;;
esac
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "rinx: missing packages:$missing (run as root to install them)" >&2
	exit 1
fi
echo "rinx: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 || { echo "rinx: apt-get update failed" >&2; exit 1; }
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2 ||
	{ echo "rinx: could not install:$missing" >&2; exit 1; }
