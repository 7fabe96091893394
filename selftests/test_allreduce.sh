#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: verified allreduce (`rinxctl bench --verify`) on testbeds of
# 2, 3, 4 and 8 hosts, 8 hosts also as 2 racks x 4 (blocks cross the spine),
# and 3 hosts in generic XDP mode; float32 (within rinx_f32_bound) and int32
# (bit-exact), sizes 1 element, 7 elements, one block (768 elements), one
# block + 1, 1 MiB, and 64 MiB on 4 hosts and on 2 racks x 4. float32 runs
# on the default data (grad: gradient-like) and, on 3 and 8 hosts, also on
# --data worst (block exponents that differ between ranks); int32 on ints;
# every table must name its data.
#
#   one rack (<C> = a..f: one testbed per case)    two racks (case e)
#
#            <P><C>t0  ToR: rinx_switch                  <P>esp
#          p0 / ... \ pN-1                           t0 /      \ t1
#        eth0        eth0                           <P>et0     <P>et1
#    <P><C>h0 ...  <P><C>hN-1                      p0..p3      p4..p7
#    hosts: rinx host program on eth0,             <P>eh0..h3  <P>eh4..h7
#    one trainer per host (forked by bench)
#
#   selftests/test_allreduce.sh [builddir]
#
# After the runs of a testbed every drop_* and aborted counter of every
# host program and every switch drop counter must be 0. Also the conversion
# alone (`rinxctl bench --convert`, no testbed): a row per path this CPU
# runs, each verified (slots equal to the portable path's, round trip within
# the bound), in the table and in --json. TAP output. Exit 0 pass, 1 fail,
# 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxE$$			# unique: runs can overlap; + one letter per case
TIMEOUT_MS=20000	# per allreduce: a lost frame ends in bounded time
BENCH_LIMIT=420		# seconds for one bench run, whatever happens
SMALL=4,28,3072,3076,1048576
LARGE=$SMALL,67108864
n=0
fail=0
used=()


# check_counters SPEC PREFIX: no drop and no abort on any host or switch.
check_counters() {
	local spec=$1 p=$2 hosts=$3 json show bad=0 nonzero cnt

	json=$("$rinxctl" stats --spec "$spec" --json 2>&1) || {
		echo "rinxctl stats failed: $json"
		return 1
	}
	cnt=$(echo "$json" | grep -o '"aborted":[0-9]*' | wc -l)
	if [ "$cnt" != "$hosts" ]; then
		echo "stats --json lists $cnt hosts, want $hosts: $json"
		bad=1
	fi
	# drop_dup: a ring hop drops a block it passed on already this round
	# (a repair that raced the late original, or a resend): never a loss
	nonzero=$(echo "$json" | grep -oE '"(node|drop_[a-z_]+|aborted)":"?[^,}]*' |
		grep -v '"drop_dup"' |
		awk -F: '/"node"/ { node = $2; next } $2 != 0 { print node, $0 }')
	# A repair (a stall on a busy machine looks like a loss) sends blocks
	# again; their late copies are dropped as stale: legitimate then.
	if echo "$json" | grep -qE '"(repair|nack_miss)":[1-9]'; then
		echo "repairs ran: drop_stale tolerated" \
		     "($(echo "$nonzero" | grep -c drop_stale) hosts)"
		nonzero=$(echo "$nonzero" | grep -v '"drop_stale"')
	fi
	# the field must be there (a renamed counter would pass unseen)
	if [ -n "$nonzero" ] || ! echo "$json" | grep -q '"drop_stale":[0-9]'; then
		echo "host drops: ${nonzero:-no drop_stale field}"
		bad=1
	fi
	show=$("$rinxctl" testbed show "$p" 2>&1)
	nonzero=$(echo "$show" | grep -oE '^ *[^ ]+ +(tor|spine) |drop_[a-z_]+=[0-9]+' |
		awk '/ (tor|spine) $/ { sw = $1; next } !/=0$/ { print sw, $0 }')
	if [ -n "$nonzero" ] || ! echo "$show" | grep -q 'drop_hairpin='; then
		echo "switch drops: ${nonzero:-no switch counters}"
		echo "$show"
		bad=1
	fi
	return $bad
}

# run_case LETTER MODE RACKS PER-RACK SIZES [RUNS]: RUNS are DTYPE:DATA
# (default float32:grad int32:ints)
run_case() {
	local p=$P$1 mode=$2 racks=$3 per=$4 sizes=$5 hosts=$(($3 * $4))
	local runs=${6:-float32:grad int32:ints} run data dopt
	local name="$hosts hosts ($racks x $per, $mode)" spec out rc dt t0 msg

	spec=/run/rinx-testbed/$p.spec
	used+=("$p")
	echo "# $name, prefix $p, sizes $sizes"
	out=$("$rinxctl" testbed up --prefix "$p" --racks "$racks" \
		--per-rack "$per" --mode "$mode" 2>&1)
	rc=$?
	ok $rc "$name: testbed up"
	if [ $rc -ne 0 ]; then
		echo "$out" | diag
		# keep the plan: the 8 results of this case fail
		for dt in $runs; do
			for msg in "exit status" "every size verified" \
				   "summary line"; do
				ok 1 "$name: $dt: $msg (no testbed)"
			done
		done
		ok 1 "$name: no drops (no testbed)"
		"$rinxctl" testbed down "$p" >/dev/null 2>&1
		[ -z "$(ours_of "$p")" ]
		ok $? "$name: testbed down, no namespace left"
		return
	fi
	for run in $runs; do
		dt=${run%:*}
		data=${run#*:}
		# grad and ints are the dtypes' defaults: only worst is named
		dopt=()
		[ "$data" = worst ] && dopt=(--data worst)
		t0=$SECONDS
		out=$(timeout -k 5 $BENCH_LIMIT "$rinxctl" bench --spec "$spec" \
			--verify --iters 2 --warmup 0 --dtype $dt "${dopt[@]}" \
			--sizes "$sizes" --timeout $TIMEOUT_MS 2>&1)
		rc=$?
		echo "$out" | diag
		echo "# ($((SECONDS - t0)) s)"
		ok $rc "$name: $run: bench --verify exit status ($rc)"
		msg=$(verified_sizes "$out" "$sizes")
		ok $? "$name: $run: every size verified ok"
		[ -n "$msg" ] && echo "$msg" | diag
		echo "$out" | grep -q '^# verify: every element ok;' &&
			echo "$out" | grep -q "^# rinx allreduce: $hosts ranks, $dt, data $data, " &&
			echo "$out" | grep -q "^# data $data: "
		ok $? "$name: $run: summary says every element ok, the header names data $data"
	done
	msg=$(check_counters "$spec" "$p" "$hosts")
	ok $? "$name: no drop or abort counted by host programs or switches"
	[ -n "$msg" ] && echo "$msg" | diag
	"$rinxctl" testbed down "$p" 2>&1 | diag
	rc=${PIPESTATUS[0]}
	[ $rc -eq 0 ] && [ -z "$(ours_of "$p")" ] && [ ! -e "$spec" ]
	ok $? "$name: testbed down, no namespace or spec left"
}

needs_root ip timeout awk
trap cleanup_used EXIT
trap 'exit 1' INT TERM

echo "1..65"
# conversion alone: sizes of 1 element, one block + 1, 1 MiB
out=$(timeout 120 "$rinxctl" bench --convert --sizes 4,3076,1048576 \
	--iters 2 2>&1)
ok $? "bench --convert exits 0"
paths=$(echo "$out" | awk '$1 ~ /^[0-9]+$/ { print $3 }' | sort -u | wc -l)
rows=$(echo "$out" | awk '$1 ~ /^[0-9]+$/ && $NF == "ok"' | wc -l)
[ "$paths" -ge 1 ] && [ "$rows" -eq $((paths * 3)) ] &&
	echo "$out" | grep -q ' portable .* ok$' &&
	echo "$out" | grep -q '^# rinx conversion alone: .*, data grad '
ok $? "bench --convert: $rows rows verified, $paths paths x 3 sizes, data grad named"
[ $? -eq 0 ] || echo "$out" | sed 's/^/# /'
out=$(timeout 120 "$rinxctl" bench --convert --sizes 3076 --iters 1 --json)
echo "$out" | /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["data"] == "grad", j
d = j["convert"]
assert d and all(r["verified"] and r["bytes"] == 3076 for r in d), d
assert all(r[k] > 0 for r in d for k in ("quant_ns_per_elem",
           "dequant_ns_per_elem", "memcpy_ns_per_elem")), d
assert "portable" in [r["path"] for r in d], d
'
ok $? "bench --convert --json: every path verified and timed (quantize, dequantize, copy)"
"$rinxctl" bench --convert --spec /nonexistent >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "bench --convert with --spec is a usage error"
"$rinxctl" bench --spec /nonexistent --data ints >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "bench --data ints with float32 is a usage error"
run_case a native 1 2 "$SMALL"
run_case b native 1 3 "$SMALL" "float32:grad int32:ints float32:worst"
run_case c native 1 4 "$LARGE"
run_case d native 1 8 "$SMALL" "float32:grad int32:ints float32:worst"
run_case e native 2 4 "$LARGE"
run_case f generic 1 3 "$SMALL"

if [ $fail -ne 0 ]; then
	echo "# $fail of $n failed"
	exit 1
fi
exit 0
