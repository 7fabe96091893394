#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The Python package on the testbed: the binding (user/python/tests/ranks.py
# in every host namespace) and the DDP training example (tools/train) with
# the rinx hook against plain Gloo DDP. Both started by tools/train/run.sh,
# one process per host, environment as torchrun sets it.
#
#              <P>t0              ToR: rinx_switch on p0..p3
#         p0 /  p1|  p2|  \ p3
#       eth0   eth0  eth0  eth0   host program on eth0, window 2048 blocks
#      <P>h0  <P>h1  <P>h2  <P>h3 one Python process per host (rank 0..3)
#
# Binding: types and errors (TypeError / ValueError / rinx.ConfigError ...),
# in-place sums of numpy arrays and torch tensors compared element by element
# with a numpy reference (int32 exact, float32 within rinx.f32_bound),
# asynchronous requests, BusyError, the hook's futures, stats, closed
# communicators; rinx.osp against BSP and its overlap (stage 2 in flight
# as step() returns while rank 3 holds its own back, and completed while
# the caller only polls); then rank 3 is killed and ranks 0-2 must raise
# rinx.TimeoutError naming it within the timeout (1.5 s). A check passes
# when every rank that reached it passed it and ranks 0-2 all reached it.
# Every rank's float32 results must be bit-identical.
#
# Training: digits (or synthetic) data, 4 ranks, Gloo DDP, DDP with
# rinx.torch.allreduce_hook, and rinx.osp in the same processes and seed:
# parameters compared across ranks (SHA-256 all-gathered) after every step,
# final accuracies within 0.5 percentage points, the hook used for every
# bucket; OSP's staleness bound (one stage-2 sum in flight) and a
# correction per step; then DDP on the backend "rinx" in the same
# processes, its group beside the hook's open job (RINX_JOB) on a job id
# of its own, parameters compared after every step.
#
#   selftests/test_python.sh [builddir]
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
P=${RINX_TEST_NS:-}rxY$$
EPOCHS=6		# 114 steps of 4 x 16 samples
MAX_PP=0.5		# accuracy difference allowed, percentage points
MIN_ACC=0.85		# a run that learns nothing would match trivially
DEAD_MS=1500
BINDING_CHECKS=106	# the checks of user/python/tests/ranks.py, by name
n=0
fail=0
logs=
up=0

needs_python __init__.py
trap cleanup_logs EXIT
trap 'exit 1' INT TERM
# the ranks' checks; 7 of the binding's and the training's own; 7 verdicts
plan $((BINDING_CHECKS + 7 + 7))
logs=$(mktemp -d)

# jobs J, J+1, J+2 (binding), J+3 (training): four ids, each in a slot
# of its own, so the job the killed rank leaves behind is in nobody's way
job=$((0x100001 + (RANDOM % 4096) * 64))

testbed_up "4 hosts" --hosts 4 --window 2048 --jobs 4

# ---- the binding ----
t0=$SECONDS
RINX_JOB=$job timeout -k 5 240 "$run" --spec "$spec" --build "$build" \
	--time 180 --logs "$logs/binding" --script "$root/user/python/tests/ranks.py" \
	-- --header "$root/user/librinx.h" --uapi "$root/uapi/rinx.h" \
	--dead-timeout-ms $DEAD_MS >"$logs/binding.out" 2>&1
grep -v $'^\\[rank [0-9]\\] check\t[^\t]*\t1\t' "$logs/binding.out" | diag
echo "# binding: $((SECONDS - t0)) s"

# one TAP line per check name, in the order rank 0 reported them
checks=$(awk -F'\t' '
	/^\[rank [0-9]+\] check\t/ {
		r = substr($1, 7) + 0
		name = $2
		if (!(name in seen)) { seen[name] = 1; order[++k] = name }
		if (r < 3) reached[name]++
		if ($3 != 1) { bad[name] = bad[name] " rank " r ": " $4 }
	}
	END {
		for (i = 1; i <= k; i++) {
			nm = order[i]
			if (reached[nm] < 3)
				bad[nm] = bad[nm] " reached by " reached[nm] " of ranks 0-2"
			print (nm in bad ? "1" : "0") "\t" nm "\t" bad[nm]
		}
	}' "$logs/binding.out")
tap_checks "binding: " "$checks"
ndone=$(grep -cE $'^\\[rank [012]\\] phase\tdone\t' "$logs/binding.out")
[ $nchecks -eq $BINDING_CHECKS ] && [ "$ndone" -eq 3 ]
ok $? "binding: ranks 0-2 ran every phase to the end ($ndone of 3; $nchecks of $BINDING_CHECKS checks)"

codes=$(grep -E '^# rank [0-9]+: exit' "$logs/binding.out" | awk '{print $5}' | tr '\n' ' ')
[ "$codes" = "0 0 0 killed " ] || [ "$codes" = "0 0 0 137 " ]
ok $? "binding: ranks 0-2 exit 0, rank 3 killed (exits: $codes)"

ndig=$(grep -E $'^\\[rank [0-9]\\] digest\t' "$logs/binding.out" | wc -l)
ddig=$(grep -E $'^\\[rank [0-9]\\] digest\t' "$logs/binding.out" |
	cut -f2,3 | sort -u | wc -l)
[ "$ndig" -eq 20 ] && [ "$ddig" -eq 5 ]
ok $? "binding: float32 results bit-identical on every rank ($ndig digests, $ddig distinct, want 20 and 5)"

# ---- DDP: Gloo, the rinx hook, OSP, then DDP on the backend "rinx" in
# the same processes: RINX_JOB is the hook's job, open on every node, so
# the backend's group must take an id of its own ----
t0=$SECONDS
RINX_JOB=$((job + 3)) timeout -k 5 300 "$run" --spec "$spec" --build "$build" \
	--time 240 --logs "$logs/train" \
	-- --backend gloo,rinx,osp,rinx-backend --epochs $EPOCHS --check step \
	>"$logs/train.out" 2>&1
rc=$?
grep -vE '^\[rank [1-9]\]' "$logs/train.out" | diag
echo "# training: $((SECONDS - t0)) s"
ok $rc "training: every rank exits 0 (parameters identical after every step)"

verdict=$(grep -E '^\[rank 0\] result ' "$logs/train.out" | sed 's/^\[rank 0\] result //' |
	MAX_PP=$MAX_PP MIN_ACC=$MIN_ACC "$python" -c '
import json, os, sys
r = {}
for line in sys.stdin:
    d = json.loads(line)
    r[d["backend"]] = d
g, x = r.get("gloo"), r.get("rinx")
if not g or not x:
    print("1\tresults missing: %s" % sorted(r)); print("1\t-"); print("1\t-")
    print("1\t-"); sys.exit()
pp = abs(g["accuracy"] - x["accuracy"]) * 100
lo = min(g["accuracy"], x["accuracy"])
print("%d\taccuracy gloo %.2f%% rinx %.2f%%, difference %.2f pp (max %s), "
      "both >= %s" % (not (pp <= float(os.environ["MAX_PP"]) and
                           lo >= float(os.environ["MIN_ACC"])),
                      g["accuracy"] * 100, x["accuracy"] * 100, pp,
                      os.environ["MAX_PP"], os.environ["MIN_ACC"]))
both = all(d["checks_passed"] == d["steps"] > 0 and d["check"] == "step" and
           d["check_detects_one_ulp"] for d in (g, x))
print("%d\tparameters compared after each of %d/%d steps, the check sees "
      "one ulp" % (not both, g["checks_passed"], x["checks_passed"]))
ops = x["rinx"]["ops"]
print("%d\trinx hook: %d allreduces over %d steps (%.2f buckets per step), "
      "%d timeouts" % (not (ops > x["steps"] and
                            x["rinx"]["timeouts"] == 0), ops, x["steps"],
                       x["rinx"]["ops_per_step"], x["rinx"]["timeouts"]))
print("%d\tsame data and steps: %d epochs, %d steps each" % (
      not (g["steps"] == x["steps"] and g["epochs"] == x["epochs"]),
      x["epochs"], x["steps"]))
b = r.get("rinx-backend", {})
print("%d\trinx-backend beside the open hook (RINX_JOB set): %d of %d steps "
      "with parameters compared, accuracy %.2f%%" % (
      not (b.get("checks_passed", 0) == b.get("steps", -1) > 0 and
           b.get("check") == "step" and
           (b.get("accuracy") or 0) >= float(os.environ["MIN_ACC"])),
      b.get("checks_passed", 0), b.get("steps", 0),
      (b.get("accuracy") or 0) * 100))
o = r.get("osp")
if not o:
    print("1\tosp: no result"); print("1\t-"); sys.exit()
lost = (g["accuracy"] - o["accuracy"]) * 100
print("%d\tosp: accuracy %.2f%%, %.2f pp below gloo (max %s)" % (
      not (lost <= float(os.environ["MAX_PP"]) and
           o["accuracy"] >= float(os.environ["MIN_ACC"])),
      o["accuracy"] * 100, lost, os.environ["MAX_PP"]))
os_ = o["osp"]
print("%d\tosp: %d steps, %d corrections, at most %d stage-2 sum in flight, "
      "stage 2 = %d of %d elements, agreed parameters identical after every "
      "step and all at every epoch end (%d checks)" % (
      not (os_["corrections"] == os_["steps"] == o["steps"] > 0 and
           os_["max_inflight"] == 1 and os_["stage2_elements"] > 0 and
           o["checks_passed"] == o["steps"] + o["epochs"] and
           o["check_detects_one_ulp"]),
      os_["steps"], os_["corrections"], os_["max_inflight"],
      os_["stage2_elements"], os_["stage1_elements"] + os_["stage2_elements"],
      o["checks_passed"]))
' 2>&1)
tap_checks "training: " "$verdict"
nv=$nchecks
[ $nv -eq 7 ]
ok $? "training: results parsed ($nv of 7 verdicts)"

testbed_down_end
