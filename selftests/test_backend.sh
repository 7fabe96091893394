#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The torch.distributed backend "rinx" (rinx.torch) on the testbed, started
# by torchrun: one torchrun per host namespace (tools/train/run.sh
# --torchrun), static rendezvous at rank 0's address, and in the
# environment RINX_SPEC only (no RINX_JOB, no RINX_TOKEN: the backend gets
# both from the rendezvous). Each rank runs user/python/tests/
# backend_ranks.py.
#
#              <P>t0              ToR: rinx_switch on p0..p3
#         p0 /  p1|  p2|  \ p3
#       eth0   eth0  eth0  eth0   host program on eth0
#      <P>h0  <P>h1  <P>h2  <P>h3 torchrun -> one rank per host
#
# init_process_group("rinx"): the same job id and token on every rank, not
# 0; all_reduce SUM (float32 of 1 to 300,000 values, int32), AVG, async,
# a strided view: every element against a reference computed from every
# rank's inputs (int32 exact, float32 within rinx.f32_bound), and every one
# of them counted by librinx; broadcast, all_gather, float64 and MAX
# all_reduce, barrier on the backend's Gloo group; DDP without a hook: 20
# steps, parameters identical on every rank after each, its gradient the
# mean of every rank's, its buckets reduced by rinx; ranks reducing
# tensors of different sizes all raise rinx.MismatchError or
# rinx.TimeoutError (no hang), at least one naming the mismatch. A check
# passes when all 4 ranks reached and passed it.
#
# Without the testbed first: a clear error when RINX_SPEC is missing or the
# world size is not the spec's number of hosts.
#
#   selftests/test_backend.sh [builddir]
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
P=${RINX_TEST_NS:-}${RINX_NS_PREFIX:-rxB}$$	# unique: runs can overlap
n=0
fail=0
logs=
up=0

needs_python _backend.py
if ! command -v torchrun >/dev/null; then
	echo "1..0 # SKIP torchrun missing (tools/deps.sh python)"
	exit 4
fi
trap cleanup_logs EXIT
trap 'exit 1' INT TERM
logs=$(mktemp -d)

# ---- configuration errors, one process, no network ----
# a spec of 4 hosts that nothing runs on: the errors come before any
# communicator opens
printf 'cluster port=47001\nhost name=a rank=0 ip=10.0.0.1\nhost name=b rank=1 ip=10.0.0.2\nhost name=c rank=2 ip=10.0.0.3\nhost name=d rank=3 ip=10.0.0.4\n' \
	>"$logs/four.spec"
conf=$(cd "$logs" && PYTHONPATH=$build/python timeout -k 5 60 \
	env -u RINX_SPEC -u RINX_JOB -u RINX_TOKEN "$python" -c '
import sys
import torch.distributed as dist
import rinx, rinx.torch

def try_init(name, *words):
    store = dist.HashStore()
    try:
        dist.init_process_group("rinx", store=store, rank=0, world_size=1)
    except rinx.ConfigError as e:
        ok = all(w in str(e) for w in words)
        print("%d\t%s\t%s" % (not ok, name, e))
        return
    except Exception as e:
        print("1\t%s\t%s: %s" % (name, type(e).__name__, e))
        return
    print("1\t%s\tno exception" % name)
    dist.destroy_process_group()

try_init("no RINX_SPEC: rinx.ConfigError naming it", "RINX_SPEC")
import os
os.environ["RINX_SPEC"] = sys.argv[1]
try_init("world size 1, spec of 4 hosts: rinx.ConfigError naming both",
         "world size 1", "4 hosts")
' "$logs/four.spec" 2>&1)
tap_checks "config: " "$conf"
[ "$nchecks" -eq 2 ]
ok $? "config: both cases ran ($nchecks of 2)"

# ---- torchrun on the testbed ----
testbed_up "4 hosts" --hosts 4 --window 2048 --jobs 4

t0=$SECONDS
env -u RINX_JOB -u RINX_TOKEN timeout -k 5 200 "$run" --torchrun \
	--spec "$spec" --build "$build" --time 150 --logs "$logs/ranks" \
	--script "$root/user/python/tests/backend_ranks.py" \
	>"$logs/ranks.out" 2>&1
rc=$?
grep -v $'^\\[rank [0-9]\\] check\t[^\t]*\t1\t' "$logs/ranks.out" | diag
echo "# torchrun: $((SECONDS - t0)) s"

# one TAP line per check name, in the order rank 0 reported them
checks=$(awk -F'\t' '
	/^\[rank [0-9]+\] check\t/ {
		r = substr($1, 7) + 0
		name = $2
		if (!(name in seen)) { seen[name] = 1; order[++k] = name }
		reached[name]++
		if ($3 != 1) { bad[name] = bad[name] " rank " r ": " $4 }
	}
	END {
		for (i = 1; i <= k; i++) {
			nm = order[i]
			if (reached[nm] < 4)
				bad[nm] = bad[nm] " reached by " reached[nm] " of 4 ranks"
			print (nm in bad ? "1" : "0") "\t" nm "\t" bad[nm]
		}
	}' "$logs/ranks.out")
tap_checks "torchrun: " "$checks"
ndone=$(grep -cE $'^\\[rank [0-3]\\] phase\tdone\t' "$logs/ranks.out")
[ $nchecks -ge 30 ] && [ "$ndone" -eq 4 ]
ok $? "torchrun: every rank ran every phase ($ndone of 4 done; $nchecks checks, want >= 30)"
ok $rc "torchrun: every rank exits 0"

testbed_down_end
