#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: every plan of the engine (ring, rina, ps, ps:2, ps-ina,
# ps-ina:2, har, tree, dbtree) runs a verified allreduce (`rinxctl bench
# --plan P --verify`: float32 within rinx_f32_bound, int32 bit-exact) on
# testbeds of 2, 3, 4 and 8 hosts:
#
#   a: 2 hosts, one rack              ps, tree, dbtree, har
#   b: 3 hosts, one rack              ring, ps, ps:2, tree, dbtree, har
#   c: 4 hosts, 2 racks x 2, rack 0   rina, ps-ina, ps:2, har, tree, dbtree
#      an INA ToR, rack 1 plain       (partial deployment)
#   d: 8 hosts, 2 racks x 4, rack 0   rina, ps-ina, ps-ina:2, har, tree, ps,
#      an INA ToR, rack 1 an agent    dbtree, ring; then every plan again
#                                     under 1% drop + 1% dup + 1% reorder
#                                     on every switch port
#   e: 8 hosts, 2 racks x 4, both     rina; then under the same faults at
#      INA ToRs                       4 and 16 MiB (12 rounds: a worker
#                                     that missed a ToR's gather at the
#                                     end of a round, its rack gone on,
#                                     fetches it from a peer)
#
# sizes from one element to 16 MiB (64 MiB for ps-ina and tree on d). After
# the fault-free runs of a testbed no host program and no switch may have
# aborted, and every plan's output of `rinxctl plan` names its aggregators.
#
#   selftests/test_plans.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxP$$			# unique: runs can overlap; + one letter per case
TIMEOUT_MS=20000	# per allreduce without progress
BENCH_LIMIT=300		# seconds for one bench run, whatever happens
n=0
fail=0
used=()

# check_bench OUT SIZES: every size verified ok, and the summary says so.
check_bench() {
	local bad=0

	verified_sizes "$1" "$2" || bad=1
	echo "$1" | grep -q '^# verify: every element ok;' ||
		{ echo "no 'every element ok' summary"; bad=1; }
	return $bad
}

# bench NAME SPEC PLAN DTYPE SIZES: one verified sweep, two TAP lines
bench() {
	local name=$1 spec=$2 plan=$3 dt=$4 sizes=$5 out rc msg t0=$SECONDS

	out=$(timeout -k 5 $BENCH_LIMIT "$rinxctl" bench --spec "$spec" \
		--plan "$plan" --verify --iters 1 --warmup 0 --dtype "$dt" \
		--sizes "$sizes" --timeout $TIMEOUT_MS 2>&1)
	rc=$?
	echo "$out" | grep -vE '^#  +bytes' | diag
	echo "# ($((SECONDS - t0)) s)"
	ok $rc "$name: plan $plan: $dt: bench --verify exit status ($rc)"
	msg=$(check_bench "$out" "$sizes")
	ok $? "$name: plan $plan: $dt: every size verified ok"
	[ -n "$msg" ] && echo "$msg" | diag
}

# no_abort SPEC PREFIX: no host program or switch counted an abort
no_abort() {
	local json show bad=0

	json=$("$rinxctl" stats --spec "$1" --json 2>&1)
	if ! echo "$json" | grep -q '"aborted":0' ||
	   echo "$json" | grep -qE '"aborted":[1-9]'; then
		echo "host aborts: $json"
		bad=1
	fi
	show=$("$rinxctl" testbed show "$2" 2>&1)
	if echo "$show" | grep -qE '(ina_)?aborted=[1-9]'; then
		echo "switch aborts:"
		echo "$show" | grep -E 'aborted=[1-9]'
		bad=1
	fi
	return $bad
}

# run_case LETTER RACKS PER-RACK INA "PLANS" SIZES [faults]
run_case() {
	local p=$P$1 racks=$2 per=$3 ina=$4 plans=$5 sizes=$6 faults=${7:-}
	local fsizes=${8:-3076,1048576}
	local hosts=$(($2 * $3)) spec out rc pl sz msg
	local name="$hosts hosts ($racks x $per, ina $ina)"

	spec=/run/rinx-testbed/$p.spec
	used+=("$p")
	echo "# $name, prefix $p"
	out=$("$rinxctl" testbed up --prefix "$p" --racks "$racks" \
		--per-rack "$per" --ina "$ina" 2>&1)
	rc=$?
	ok $rc "$name: testbed up"
	if [ $rc -ne 0 ]; then
		echo "$out" | diag
		return
	fi
	for pl in $plans; do
		out=$("$rinxctl" plan --spec "$spec" --plan "$pl" 2>&1)
		rc=$?
		echo "$out" | head -3 | diag
		[ $rc -eq 0 ] && echo "$out" | grep -q "^plan: ${pl}," &&
			{ [[ $pl == ring* ]] ||
			  echo "$out" | grep -qE 'aggregat|agg\+'; }
		ok $? "$name: rinxctl plan --plan $pl prints the plan and its aggregators"
		sz=$sizes
		# the largest size once per testbed for the plans that go there
		[[ " $BIG " == *" $1:$pl "* ]] && sz=$sizes,67108864
		bench "$name" "$spec" "$pl" float32 "$sz"
		bench "$name" "$spec" "$pl" int32 4,3076,1048576
	done
	msg=$(no_abort "$spec" "$p")
	ok $? "$name: no host program or switch aborted"
	[ -n "$msg" ] && echo "$msg" | diag
	if [ -n "$faults" ]; then
		out=$("$rinxctl" testbed fault "$p" --all --drop 10000 \
			--dup 10000 --reorder 10000 2>&1)
		ok $? "$name: 1% drop + 1% dup + 1% reorder on every port"
		for pl in $plans; do
			bench "$name, faults" "$spec" "$pl" float32 "$fsizes"
		done
	fi
	"$rinxctl" testbed down "$p" 2>&1 | diag
	rc=${PIPESTATUS[0]}
	[ $rc -eq 0 ] && [ -z "$(ours_of "$p")" ] && [ ! -e "$spec" ]
	ok $? "$name: testbed down, no namespace or spec left"
}

needs_root ip timeout awk
trap cleanup_used EXIT
trap 'exit 1' INT TERM

SMALL=4,28,3072,3076,1048576
BIG="d:ps-ina d:tree"
PLANS_D="rina ps-ina ps-ina:2 har tree ps dbtree ring"
# per plan: 1 plan line + 2 x 2 bench lines; per case: up, no abort, down
echo "1..$(( 3 + 4 * 5 + 3 + 6 * 5 + 3 + 6 * 5 + 3 + 8 * 5 + 1 + 8 * 2 +
	     3 + 1 * 5 + 1 + 1 * 2 ))"
run_case a 1 2 none "ps tree dbtree har" "$SMALL"
run_case b 1 3 none "ring ps ps:2 tree dbtree har" "$SMALL"
run_case c 2 2 switch,none "rina ps-ina ps:2 har tree dbtree" "$SMALL"
run_case d 2 4 switch,agent "$PLANS_D" "$SMALL,16777216" faults
run_case e 2 4 switch rina "$SMALL" faults 4194304,16777216

if [ $fail -ne 0 ]; then
	echo "# $fail of $n failed"
	exit 1
fi
exit 0
