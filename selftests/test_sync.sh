#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# rinx.sync on the testbed: ASP, SSP and InHAD on the parameter server that
# rank 0's process runs (user/python/tests/sync_ranks.py in every host
# namespace), then the training example with --backend asp,ssp,inhad. Both
# started by tools/train/run.sh, one process per host.
#
#                      <P>sp                 spine
#                     /     \
#               <P>t0         <P>t1          ToRs (XDP switches, INA)
#              /    \        /    \
#          <P>h0  <P>h1  <P>h2  <P>h3        one Python process per host
#          rank 0 (+PS)  rank 2   rank 3     InHAD groups: the racks
#                 rank 1                     {0,1} and {2,3}
#
# ASP: pushes in a fixed order across the ranks; every answer must be the
# parameters after exactly the pushes so far, updated in float32 one after
# the other (momentum and scale included), bit for bit. SSP (staleness 2):
# while rank 3 pushes nothing the PS's counters must show ranks 0-2 held at
# clock 3, after rank 3's first push held again at clock 4; no answer more
# than 2 ahead; final parameters exact. InHAD (staleness 1, pull every 2):
# group 0's agent held at clock 2 while group 1 reports nothing; pulls at
# every second iteration and local steps with the group's rinx sum (on
# its rack's ToR: plan rina) in between; the members of a group
# bit-identical after every step; final parameters against the reference. Bad input (sizes, staleness, types,
# groups) raises; a killed PS raises rinx.sync.PSError at once, a hung one
# rinx.TimeoutError after the timeout, a dead worker rinx.TimeoutError
# naming it at once.
#
# Training: digits (or synthetic), 4 ranks, ASP, SSP, InHAD and InHAD on
# rinx's data plane (inhad-xdp: the racks' agents push into a store in rank
# 0's host program) in the same processes: every rank exits 0 with the PS's
# final parameters identical on every rank, each mode above MIN_ACC, no
# answer past its bound.
#
#   selftests/test_sync.sh [builddir]
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
P=${RINX_TEST_NS:-}${RINX_NS_PREFIX:-rxZ}$$	# unique: runs can overlap
EPOCHS=4
MIN_ACC=0.60		# 4 epochs (BSP: ~89%); one that learns nothing: ~10%
# (the PS modes at momentum 0.7, which learns faster in the first epochs
# on the TCP PS: 80-83% after 4, against 73-82% at the default 0.9; a CI
# run on a busy machine saw ASP at 68.83% with rank 0 73 steps ahead of
# the slowest, which asynchronous training allows: 0.70 was no bound)
n=0
fail=0
logs=
up=0

needs_python sync.py
trap cleanup_logs EXIT
trap 'exit 1' INT TERM
logs=$(mktemp -d)

# the modes' test: world job J, its groups' J+1; training J+2 (the i-th
# backend's group J+3+8i, its store J+7+8i)
job=$((0x180001 + (RANDOM % 4096) * 64))

testbed_up "2 racks x 2 hosts, both ToRs INA" --hosts 4 --racks 2 \
	--ina switch --window 2048 --jobs 4
# InHAD's groups are whole racks with INA: they sum on their ToRs
export RINX_TEST_GROUP_PLAN=rina

# ---- the modes ----
t0=$SECONDS
RINX_JOB=$job timeout -k 5 150 "$run" --spec "$spec" --build "$build" \
	--time 120 --logs "$logs/modes" \
	--script "$root/user/python/tests/sync_ranks.py" \
	>"$logs/modes.out" 2>&1
rc=$?
grep -vE $'^\\[rank [0-9]\\] (check\t[^\t]*\t1\t|digest\t)' "$logs/modes.out" | diag
echo "# modes: $((SECONDS - t0)) s"
ok $rc "modes: every rank exits 0"

# one TAP line per check name, in the order the ranks reported them; a
# check passes when every rank that reached it passed it
checks=$(awk -F'\t' '
	/^\[rank [0-9]+\] check\t/ {
		r = substr($1, 7) + 0
		name = $2
		if (!(name in seen)) { seen[name] = 1; order[++k] = name }
		if ($3 != 1) { bad[name] = bad[name] " rank " r ": " $4 }
	}
	END {
		for (i = 1; i <= k; i++) {
			nm = order[i]
			print (nm in bad ? "1" : "0") "\t" nm "\t" bad[nm]
		}
	}' "$logs/modes.out")
tap_checks "" "$checks"
ndone=$(grep -cE $'^\\[rank [0-3]\\] phase\tdone\t' "$logs/modes.out")
[ $nchecks -ge 25 ] && [ "$ndone" -eq 4 ]
ok $? "modes: every rank ran every phase to the end ($ndone of 4; $nchecks checks, want >= 25)"

# digests: ASP's and InHAD's final parameters on every rank; InHAD's after
# each step within each group
dig=$(grep -E $'^\\[rank [0-3]\\] digest\t' "$logs/modes.out" |
	awk -F'\t' '{ n[$2]++; d[$2 "\t" $3] = 1 }
		END {
			bad = 0; k = 0
			for (x in n) {
				k++; m = 0
				for (y in d) if (index(y, x "\t") == 1) m++
				want = (x ~ /^inhad-[01]-/) ? 2 : 4
				if (m != 1 || n[x] != want) bad++
			}
			print bad, k
		}')
set -- $dig
[ "${1:-1}" = 0 ] && [ "${2:-0}" -eq 14 ]
ok $? "modes: ASP's and InHAD's final parameters bit-identical on every rank, InHAD's members after each of 6 steps (${2:-0} digests of 14, ${1:-?} differ)"

# ---- training ----
t0=$SECONDS
RINX_JOB=$((job + 2)) timeout -k 5 290 "$run" --spec "$spec" --build "$build" \
	--time 260 --logs "$logs/train" \
	-- --backend asp,ssp,inhad,inhad-xdp --epochs $EPOCHS --check epoch \
	--inhad-group 0 --ps-momentum 0.7 >"$logs/train.out" 2>&1
rc=$?
grep -vE '^\[rank [1-9]\]' "$logs/train.out" | cut -c1-300 | diag
echo "# training: $((SECONDS - t0)) s"
ok $rc "training: every rank exits 0 (the PS's final parameters identical on every rank)"

verdict=$(grep -E '^\[rank 0\] result ' "$logs/train.out" | sed 's/^\[rank 0\] result //' |
	MIN_ACC=$MIN_ACC EPOCHS=$EPOCHS "$python" -c '
import json, os, sys
r = {}
for line in sys.stdin:
    d = json.loads(line)
    r[d["backend"]] = d
lo = float(os.environ["MIN_ACC"])
for m, bound in (("asp", None), ("ssp", 2), ("inhad", 2), ("inhad-xdp", 2)):
    d = r.get(m)
    if not d:
        print("1\t%s: no result" % m)
        continue
    s = d["sync"]
    total = d["steps"]
    ok = (d["accuracy"] >= lo and d["check_detects_one_ulp"] and
          len(d["accuracy_by_epoch"]) == int(os.environ["EPOCHS"]) and
          (bound is None or s["max_lead"] <= bound))
    print("%d\t%s: accuracy %.2f%% (>= %.0f%%), %d steps of rank 0, %.1f "
          "global steps, max lead %d (bound %s), %d answers held" % (
              not ok, m, d["accuracy"] * 100, lo * 100, d["steps"],
              d["global_steps"], s["max_lead"], bound, s["held"]))
' 2>&1)
tap_checks "training: " "$verdict"
nv=$nchecks
[ $nv -eq 4 ]
ok $? "training: results parsed ($nv of 4 verdicts)"

testbed_down_end
