#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: jumbo blocks (2,048 values in 8,288-byte frames of several
# buffers, `bench --block jumbo`, rinx_comm_opts.block_values) on a testbed
# whose links have MTU 9,000: float32 and int32 allreduces of sizes that are
# no multiple of 2,048 values (a short last block) and of several rounds,
# every element checked against bench's independent reference; then the
# refusals (a plan that aggregates, a spec mtu= or an interface below the
# 8,274 jumbo frames need) and their fallback with --block largest; then
# the same allreduce under 1% drop, duplication and reordering, whose
# repair makes the host programs answer NACKs and RNACKs with jumbo frames.
#
#      <P>t0             one rack, no INA; every link MTU 9000
#   h0  h1  h2  h3
#
#   selftests/test_jumbo.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxJ$$
spec=/run/rinx-testbed/$P.spec
bad_spec=$(mktemp /tmp/rinx-jumbo.XXXXXX)
TIMEOUT_MS=20000
LIMIT=300
# 1 value, 2,049 (a block and one value), 6,145 (three and one), and
# 1,048,577 values (4 MiB + 4 bytes: five rounds of a 640-slot window,
# 213 jumbo blocks each, the last block of one value)
SIZES=4,8196,24580,4194308
n=0
fail=0

cleanup_jumbo() {
	rm -f "$bad_spec"
	cleanup
}

# refused NAME PATTERN SPEC ARGS...: bench fails at open with PATTERN
refused() {
	local name=$1 pat=$2 sp=$3 out rc

	shift 3
	out=$(timeout -k 5 60 "$rinxctl" bench --spec "$sp" --sizes 8192 \
		--timeout 5000 "$@" 2>&1)
	rc=$?
	echo "$out" | diag
	[ $rc -ne 0 ] && echo "$out" | grep -q -- "$pat"
	ok $? "$name"
}

# repairs: the NACKs and RNACKs the host programs answered, every node
repairs() {
	"$rinxctl" stats --spec "$spec" 2>/dev/null |
		awk '$1 == "repair" || $1 == "rrepair" { s += $2 }
		     END { print s + 0 }'
}

needs_root ip timeout awk
trap cleanup_jumbo EXIT
trap 'exit 1' INT TERM
plan 17

out=$("$rinxctl" testbed up --prefix "$P" --hosts 4 --mtu 9000 2>&1)
rc=$?
echo "$out" | diag
ok $rc "testbed up --hosts 4 --mtu 9000"
[ $rc -eq 0 ] || exit 1

bench_verified "jumbo, ring, float32" 8288 $SIZES --block jumbo --plan ring
bench_verified "jumbo, ring, int32" 8288 $SIZES --block jumbo --plan ring \
	--dtype int32
# the spec's plan (rina) without INA racks is a plain ring: jumbo allowed
bench_verified "largest, the spec's plan (no INA rack)" 8288 8196,1048580 \
	--block largest

# plans whose hops aggregate or store hold blocks of one slot
refused "tree with --block jumbo: refused at open, naming the plan" \
	"jumbo blocks (2048 values, 8288-byte frames) refused: plan tree aggregates" \
	"$spec" --plan tree --block jumbo
refused "ps with --block jumbo: refused at open, naming the plan" \
	"refused: plan ps aggregates" "$spec" --plan ps --block jumbo
bench_verified "tree with --block largest: the MTU's blocks" 3168 8196,1048580 \
	--plan tree --block largest

# a spec whose network carries smaller frames than the interfaces
sed 's/^cluster \(.*\)$/cluster \1 mtu=3154/' "$spec" > "$bad_spec"
refused "spec mtu=3154 with --block jumbo: refused, naming the MTU" \
	"refused: the spec's mtu=3154 is below the 8274 they need" \
	"$bad_spec" --plan ring --block jumbo
spec_keep=$spec
spec=$bad_spec
bench_verified "spec mtu=3154 with --block largest: the MTU's blocks" 3168 \
	8196,1048580 --plan ring --block largest
spec=$spec_keep

# one host's interface (and its port) below what jumbo frames need
ip -n "${P}h2" link set eth0 mtu 3400 && ip -n "${P}t0" link set p2 mtu 3400
refused "an interface of MTU 3400 with --block jumbo: refused, naming it" \
	"rank 2: jumbo blocks (2048 values, 8288-byte frames) refused: interface eth0 has MTU 3400, below the 8274" \
	"$spec" --plan ring --block jumbo
# largest: that rank takes 768-value blocks, the others jumbo ones, and
# the open barrier fails naming both sizes
refused "an interface of MTU 3400 with --block largest: the open fails, naming both sizes" \
	"runs blocks of 2048 values, rank 2 of 768: jumbo blocks need every rank" \
	"$spec" --plan ring --block largest
ip -n "${P}h2" link set eth0 mtu 9000 && ip -n "${P}t0" link set p2 mtu 9000
bench_verified "back at MTU 9000: jumbo again" 8288 8196 --block jumbo --plan ring

# loss: the ring's repair of jumbo blocks (NACK, RNACK and resends)
"$rinxctl" testbed fault "$P" --all --drop 10000 --dup 10000 \
	--reorder 10000 2>&1 | diag
ok "${PIPESTATUS[0]}" "testbed fault --all: 1% drop, 1% dup, 1% reorder"
before=$(repairs)
bench_verified "jumbo under faults, ring, float32" 8288 1048580,4194308 \
	--block jumbo --plan ring
after=$(repairs)
echo "# NACKs and RNACKs answered in XDP: $before before, $after after"
[ "$after" -gt "$before" ]
ok $? "the host programs answered NACKs or RNACKs of jumbo blocks"
bench_verified "jumbo under faults, ring, int32" 8288 1048580 --block jumbo \
	--plan ring --dtype int32

testbed_down_end
