#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `rinxctl doctor` on a testbed's hosts: every check ok on a host that is up
# and on one that is not (its XDP probe attached and detached), the maps'
# memory as the kernel charges it; then failures made on purpose, each with
# its verdict and exit 6: a too-small MTU, a pin path that is no bpffs, an
# interface that does not exist, the spec's address missing (where `up`
# refuses with the report and `up --force` attaches), not root.
#
#            <P>t0              ToR: rinx_switch on p0, p1
#          p0 /  \ p1
#        eth0      eth0
#       <P>h0      <P>h1       h0 up; h1 taken down for the probes
#
#   selftests/test_doctor.sh [builddir]    (RINX_TEST_PREFIX: prefix, default rxdr)
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}${RINX_TEST_PREFIX:-rxdr}$$		# unique: runs can overlap
n=0
fail=0
up=0
tmp=

needs_root ip bpftool setpriv timeout
doctor_cleanup() {
	cleanup
	[ -n "$tmp" ] && rm -rf "$tmp"
}
trap doctor_cleanup EXIT
trap 'exit 1' INT TERM

checks="root kernel btf bpf program bpffs memory memlock interface mtu mac ip
	xdp multibuf af_xdp queues"

# doctor ARGS...: runs doctor into $out and its exit status into $rc
doctor() {
	out=$(timeout 60 "$rinxctl" doctor "$@" 2>&1)
	rc=$?
}

# verdict CHECK: the verdict word of CHECK's line in $out
verdict() {
	echo "$out" | awk -v c="$1" '$2 == c && $1 ~ /^(ok|warn|missing)$/ {
		print $1; exit }'
}

# all_ok: every check of $checks has an ok line and none is not ok
all_ok() {
	local c bad=0

	for c in $checks; do
		[ "$(verdict "$c")" = ok ] || { echo "$c: '$(verdict "$c")'"; bad=1; }
	done
	echo "$out" | grep -qE '^  (missing|warn) ' && bad=1
	return $bad
}

# only_missing CHECK: $out has CHECK missing, exactly one check missing,
# a fix line, and exit 6
only_missing() {
	[ "$rc" = 6 ] && [ "$(verdict "$1")" = missing ] &&
	[ "$(echo "$out" | grep -cE '^  missing ')" = 1 ] &&
	echo "$out" | grep -qE '^ +fix: ' &&
	echo "$out" | grep -q '1 missing.*cannot run the job'
}

spec=/run/rinx-testbed/$P.spec
tmp=$(mktemp -d /tmp/rxdr.XXXXXX)
"$rinxctl" testbed up --prefix "$P" --hosts 2 --window 4096 --jobs 4 2>&1 | diag
ok "${PIPESTATUS[0]}" "testbed up (2 hosts)"
up=1

doctor --spec "$spec" --node h0
echo "$out" | diag
all_ok; ok $? "h0 (up): every check ok"
[ "$rc" = 0 ]; ok $? "h0 (up): exit 0"
echo "$out" | grep -qE '^  ok +xdp +eth0: native \(a program is attached\)'
ok $? "h0 (up): XDP native, from the attached program"

# the memory doctor computes against what the kernel charged h0's maps
want=$(for m in /run/rinx/$P/h0/*; do
	[ "${m##*/}" = link ] || bpftool map show pinned "$m"
done | awk '{ for (i = 1; i < NF; i++) if ($i == "memlock") { sub("B", "", $(i + 1)); s += $(i + 1) } } END { printf "%.0f", s / 1048576 }')
got=$(echo "$out" | sed -n 's/.* memory .*maps take \([0-9]*\) MiB.*/\1/p')
echo "# memory: doctor $got MiB, kernel memlock of the pinned maps $want MiB"
[ -n "$got" ] && [ -n "$want" ] && [ "$want" -gt 0 ] &&
	[ $((got * 100 / want)) -ge 98 ] && [ $((got * 100 / want)) -le 102 ]
ok $? "memory: the maps' size within 2% of the kernel's memlock"

"$rinxctl" down --spec "$spec" --node h1 2>&1 | diag
doctor --spec "$spec" --node h1
echo "$out" | diag
all_ok; ok $? "h1 (down): every check ok"
[ "$rc" = 0 ]; ok $? "h1 (down): exit 0"
echo "$out" | grep -qE '^  ok +xdp +eth0: native \(probe attached and detached\)'
ok $? "h1 (down): XDP native, probed"
! ip -n "${P}h1" link show dev eth0 | grep -q 'prog/xdp'
ok $? "h1: the probe left no XDP program"

doctor
echo "$out" | diag
[ "$rc" = 0 ] && [ "$(verdict kernel)" = ok ] && [ "$(verdict af_xdp)" = ok ]
ok $? "no spec: the host itself, exit 0"

# a too-small MTU on the node's interface
ip -n "${P}h1" link set dev eth0 mtu 1400
doctor --spec "$spec" --node h1
echo "$out" | diag
only_missing mtu && echo "$out" | grep -q 'fix: ip link set dev eth0 mtu'
ok $? "MTU 1400: mtu missing with its fix, exit 6"
ip -n "${P}h1" link set dev eth0 mtu 9000
doctor --spec "$spec" --node h1
[ "$rc" = 0 ] && echo "$out" | grep -qE '^  ok +multibuf +needed for MTU 9000'
ok $? "MTU 9000: multi-buffer needed, and the driver takes it"
ip -n "${P}h1" link set dev eth0 mtu 3400

# a copy of the spec whose pin path is a plain directory
mkdir -p "$tmp/pin"
sed "s|^\(cluster .*\)pin=[^ ]*|\1pin=$tmp/pin|" "$spec" >"$tmp/nobpffs.spec"
doctor --spec "$tmp/nobpffs.spec" --node h0
echo "$out" | diag
only_missing bpffs && echo "$out" | grep -q "fix: .*mount -t bpf bpf $tmp/pin"
ok $? "pin path not a bpffs: bpffs missing, exit 6"

# a copy whose h0 names an interface that does not exist
sed '/^host name=h0 /s/ifname=eth0/ifname=rxnone0/' "$spec" >"$tmp/noif.spec"
doctor --spec "$tmp/noif.spec" --node h0
echo "$out" | diag
only_missing interface && echo "$out" | grep -q 'rxnone0 does not exist'
ok $? "no such interface: interface missing, exit 6"

# the spec's address gone from h1: up refuses with the report, --force
# attaches
ip -n "${P}h1" addr flush dev eth0
doctor --spec "$spec" --node h1
echo "$out" | diag
only_missing ip
ok $? "address missing: ip missing, exit 6"
uout=$("$rinxctl" up --spec "$spec" --node h1 2>&1)
urc=$?
echo "$uout" | diag
[ "$urc" = 6 ] && echo "$uout" | grep -qE '^  missing +ip ' &&
	echo "$uout" | grep -q 'refused' && [ ! -e "/run/rinx/$P/h1/link" ] &&
	! ip -n "${P}h1" link show dev eth0 | grep -q 'prog/xdp'
ok $? "up refuses (exit 6) with doctor's report, nothing attached"
uout=$("$rinxctl" up --spec "$spec" --node h1 --force 2>&1)
urc=$?
echo "$uout" | diag
[ "$urc" = 0 ] && [ -e "/run/rinx/$P/h1/link" ] &&
	ip -n "${P}h1" link show dev eth0 | grep -q 'prog/xdp.*rinx_host'
ok $? "up --force attaches the host program"
ip -n "${P}h1" addr add 10.71.0.2/16 dev eth0
doctor --spec "$spec" --node h1
all_ok && [ "$rc" = 0 ]
ok $? "address back: every check ok again"

# not root
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$rinxctl" doctor 2>&1)
rc=$?
echo "$out" | diag
[ "$rc" = 6 ] && [ "$(verdict root)" = missing ] && [ "$(verdict bpf)" = missing ]
ok $? "not root: root and bpf missing, exit 6"

testbed_down_end
