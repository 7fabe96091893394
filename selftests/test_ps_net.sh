#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The parameter server on rinx's data plane, on the testbed: rinx.ps stores
# and rinx.sync's ASP and SSP on them (user/python/tests/ps_ranks.py in
# every host namespace, through tools/train/run.sh), once on clean links
# and once with 3% loss and 3% duplication on every switch port.
#
#                      <P>sp                 spine
#                     /     \
#               <P>t0         <P>t1          ToRs (XDP switches)
#              /    \        /    \
#          <P>h0  <P>h1  <P>h2  <P>h3        one Python process per host
#          rank 0: the store in its host program
#
# The testbed's job slots hold a window of 2 blocks: the stores (3 blocks)
# are larger, as a model's store is larger than any window (its blocks are
# entries of their own on the server's host).
#
# Stores: every rank pushes 30 deltas (multiples of 1/16, from rank and
# iteration) and pulls after each, rank 3 the slowest; the final store must
# equal the first values plus every push, element by element, on every
# rank (a resent or duplicated push added twice, or one lost, fails it);
# SSP (bound 1): no pull more than 1 iteration ahead. The same with the
# store split over ranks 0 and 2 (rinx.ps.Shards), pushed and pulled with
# Shards.pushpull: without a bound every part at once
# (rinx_ps_pushpull_many, which refuses 0 or 17 parts), with one part by
# part; each part must have taken every push once. The server's host
# program must have counted exactly one added push per block of every push
# (ps_push), pulls (ps_pull) and, with faults, the duplicates it refused to
# add (ps_dup). Training: least squares with real gradients, ASP and SSP
# on the store: the loss below 1% of its start, every rank's final
# parameters identical; ASP with momentum and constant gradients: every
# parameter as BSP's momentum would make it (each rank's own buffer
# decays by the momentum per push), and the same with the store split
# over ranks 0 and 2 (rinx.ps.Shards), each part's pushes counted by its
# server. Refusals: a push past the bound (ps_stale) and a
# push of a worker of another job (drop_token) counted by the server and
# leaving the store as it was. InHAD on the store (the racks as groups,
# their agents 0 and 2 the store's workers): converges, members
# bit-identical after every step, the store never k or more iterations
# behind a group, no pull answered past the bound.
#
#   selftests/test_ps_net.sh [builddir]
#
# TAP output. Exit 0 pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/.." && pwd)
build=${1:-${RINX_BUILD:-$root/build}}
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
rinxctl=$build/rinxctl
python=/usr/bin/python3
run=$root/tools/train/run.sh
P=${RINX_TEST_NS:-}${RINX_NS_PREFIX:-hp}$$	# unique: runs can overlap
STEPS=30
NB=3			# blocks of the test's stores (2,000 values)
INHAD_STEPS=120		# steps of each rank in InHAD's training (k = 2)
n=0
fail=0
logs=
up=0

needs_python ps.py
trap cleanup_logs EXIT
trap 'exit 1' INT TERM
logs=$(mktemp -d)
job=$((0x280001 + (RANDOM % 4096) * 64))

testbed_up "2 racks x 2 hosts, window 2" --hosts 4 --racks 2 --jobs 4 \
	--window 2

# counter NAME [RANK]: rank 0's (or RANK's) host program's counter NAME
counter() {
	"$rinxctl" stats --spec "$spec" --json 2>/dev/null | "$python" -c '
import json, sys
d = json.load(sys.stdin)
nodes = d["nodes"] if isinstance(d, dict) and "nodes" in d else d
n0 = nodes[int(sys.argv[2])]
c = n0.get("counters", n0)
print(c.get(sys.argv[1], 0))' "$1" "${2:-0}"
}

# one sitting: TAG, then the ranks' checks and the server's counters
sitting() {
	local tag=$1 j=$2 push0 pull0 dup0 stale0 tok0 out rc checks ndig push2
	push0=$(counter ps_push) pull0=$(counter ps_pull) dup0=$(counter ps_dup)
	push2=$(counter ps_push 2)
	stale0=$(counter ps_stale) tok0=$(counter drop_token)
	out=$logs/$tag.out
	RINX_JOB=$j timeout -k 5 240 "$run" --spec "$spec" --build "$build" \
		--time 220 --logs "$logs/$tag" \
		--script "$root/user/python/tests/ps_ranks.py" \
		-- --job "$j" --tag "$tag" --steps $STEPS >"$out" 2>&1
	rc=$?
	grep -vE $'^\\[rank [0-9]\\] (check\t[^\t]*\t1\t|g?digest\t)' "$out" |
		cut -c1-300 | diag
	ok $rc "$tag: every rank exits 0"
	checks=$(awk -F'\t' '
		/^\[rank [0-9]+\] check\t/ {
			r = substr($1, 7) + 0
			name = $2
			if (!(name in seen)) { seen[name] = 1; order[++k] = name }
			if ($3 != 1) { bad[name] = bad[name] " rank " r ": " $4 }
			cnt[name]++
		}
		END {
			for (i = 1; i <= k; i++) {
				nm = order[i]
				if (cnt[nm] < 4 && nm !~ /refused$/ &&
				    nm !~ /agent/)
					bad[nm] = bad[nm] " only " cnt[nm] " ranks"
				print (nm in bad ? "1" : "0") "\t" nm "\t" bad[nm]
			}
		}' "$out")
	tap_checks "" "$checks"
	[ "$nchecks" -eq 29 ]
	ok $? "$tag: every check reported ($nchecks of 29)"
	ndig=$(grep -E $'^\\[rank [0-3]\\] digest\t' "$out" |
		awk -F'\t' '{ n[$2]++; d[$2 "\t" $3] = 1 }
			END { k = 0; for (y in d) k++; m = 0
			      for (x in n) if (n[x] == 4) m++; print k, m }')
	set -- $ndig
	[ "${1:-0}" -eq 3 ] && [ "${2:-0}" -eq 3 ]
	ok $? "$tag: training's final parameters identical on every rank (${1:-0} digests for 3 runs)"
	# InHAD: after every step, one digest per group, from both members
	ndig=$(grep -E $'^\\[rank [0-3]\\] gdigest\t' "$out" |
		awk -F'\t' '{ k = $2 "\t" $3; n[k]++; d[k "\t" $4] = 1 }
			END { bad = 0; m = 0
			      for (x in n) { m++; c = 0
				for (y in d) if (index(y, x "\t") == 1) c++
				if (c != 1 || n[x] != 2) bad++ }
			      print m, bad }')
	set -- $ndig
	[ "${1:-0}" -eq $((2 * INHAD_STEPS)) ] && [ "${2:-1}" -eq 0 ]
	ok $? "$tag: InHAD's members bit-identical after every step (${1:-0} group steps of $((2 * INHAD_STEPS)), ${2:-?} differ)"
	# two stores of STEPS pushes of NB blocks by 4 ranks, each block
	# added once; the training's pushes on top (its own stores)
	local push=$(( $(counter ps_push) - push0 ))
	local pull=$(( $(counter ps_pull) - pull0 ))
	local dup=$(( $(counter ps_dup) - dup0 ))
	local stale=$(( $(counter ps_stale) - stale0 ))
	local tok=$(( $(counter drop_token) - tok0 ))
	# InHAD: each of the 2 agents pushes its group's k = 2 iterations
	# (one block); the refusals' store: 4 first pushes, rank 3's second;
	# the momentum store: 12 pushes of 2 blocks by 4 ranks; split over
	# ranks 0 and 2, 13 pushes (the last of zeros) of its first block by
	# 4 ranks (and of the second at rank 2); the stores split over ranks
	# 0 and 2 (ASP and SSP): STEPS pushes of each part's 2 blocks by 4
	# ranks, at either server
	local want=$((2 * STEPS * NB * 4 + 2 * 120 * 4 + 5 * NB + \
		2 * INHAD_STEPS / 2 + 12 * 2 * 4 + 13 * 4 + 2 * STEPS * 2 * 4))
	push2=$(( $(counter ps_push 2) - push2 ))
	echo "# $tag: server counted ps_push $push (want $want), ps_pull $pull, ps_dup $dup, ps_stale $stale, drop_token $tok"
	grep -E $'psstats\t' "$out" | diag
	[ "$push" -eq "$want" ]
	ok $? "$tag: the server's host program added every push once (ps_push $push = $want)"
	[ "$push2" -eq $((13 * 4 + 2 * STEPS * 2 * 4)) ]
	ok $? "$tag: the split stores' second parts added in rank 2's host program, every push once (ps_push $push2 = $((13 * 4 + 2 * STEPS * 2 * 4)))"
	[ "$pull" -ge $((2 * (STEPS + 1) * NB * 4)) ]
	ok $? "$tag: pulls answered in XDP (ps_pull $pull)"
	[ "$stale" -ge 1 ]
	ok $? "$tag: the push past the bound refused and counted by the server (ps_stale $stale)"
	[ "$tok" -ge 1 ]
	ok $? "$tag: the push of a worker of another job dropped and counted by the server (drop_token $tok)"
	if [ "$tag" = faults ]; then
		[ "$dup" -gt 0 ]
		ok $? "$tag: duplicated or resent pushes acknowledged, not added (ps_dup $dup)"
	fi
}

sitting clean $job
"$rinxctl" testbed fault "$P" --drop 30000 --dup 30000 2>&1 | diag
sitting faults $((job + 32))

testbed_down_end
