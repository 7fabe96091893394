#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# rinxctl compare on a 3-host testbed: rinx, Open MPI (tuned and ring) and
# Gloo, two tiny sizes (4 KiB and one block + 1 element), 2 interleaved runs,
# every result verified; table, --csv and --json. Needs Open MPI and Debian's
# python3-torch: when they are missing the test SKIPs (exit 4) instead of
# installing them (run tools/deps.sh peers to enable it). TAP output.
#
#   selftests/test_compare.sh [builddir]

set -u

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=rxK$$
spec=/run/rinx-testbed/$P.spec
SIZES=4K,3076
n=0
fail=0

ok() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fail=$((fail + 1))
	fi
}

skip() {
	echo "1..0 # SKIP $1"
	echo "# SKIP $1"
	exit 4
}

[ "$(id -u)" -eq 0 ] || skip "needs root"
[ -x "$rinxctl" ] || skip "no $rinxctl (make first)"
command -v mpirun >/dev/null && command -v mpicc >/dev/null ||
	skip "Open MPI not installed (tools/deps.sh peers)"
/usr/bin/python3 -c 'import numpy, torch.distributed' 2>/dev/null ||
	skip "Debian python3-torch not installed (tools/deps.sh peers)"

cleanup() {
	"$rinxctl" testbed down "$P" >/dev/null 2>&1
}
trap cleanup EXIT

echo "1..7"
out=$("$rinxctl" testbed up --hosts 3 --prefix "$P" 2>&1)
ok $? "testbed up (3 hosts)"
[ -f "$spec" ] || { echo "$out" | sed 's/^/# /'; exit 1; }

# table: one row per candidate and size, every verify column ok
out=$(timeout 600 "$rinxctl" compare --spec "$spec" --sizes $SIZES \
	--iters 2 --no-install 2>&1)
rc=$?
ok $rc "compare (table) exits 0"
rows=$(echo "$out" | awk '$1 ~ /^(rinx-ring|ompi-tuned|ompi-ring|gloo-ring)$/ && $9 == "ok"' | wc -l)
[ "$rows" -eq 8 ]
ok $? "table: 4 candidates x 2 sizes verified ok ($rows rows)"
[ "$rc" -eq 0 ] && [ "$rows" -eq 8 ] || echo "$out" | sed 's/^/# /'
echo "$out" | grep -q 'rinx-ring vs ompi-tuned: busbw [0-9.]*x'
ok $? "table: ratio lines"

# csv: header + 8 rows, every row verified, 2 runs each
out=$(timeout 600 "$rinxctl" compare --spec "$spec" --sizes $SIZES \
	--iters 1 --warmup 0 --csv --no-install 2>/dev/null)
echo "$out" | head -1 | grep -q '^bytes,candidate,algorithm,ranks,runs,median_us' &&
	[ "$(echo "$out" | grep -c ',true')" -eq 8 ]
ok $? "--csv: header and 8 verified rows"
[ $? -eq 0 ] || echo "$out" | sed 's/^/# /'

# json: one object, peers compared with rinx
out=$(timeout 600 "$rinxctl" compare --spec "$spec" --sizes 4K --iters 1 \
	--peers gloo --json --no-install 2>/dev/null)
echo "$out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
r = {x["candidate"]: x for x in d["results"]}
assert d["ranks"] == 3 and set(r) == {"rinx-ring", "gloo-ring"}, d
assert all(x["verified"] for x in r.values()), r
assert r["gloo-ring"]["vs"]["rinx-ring"]["busbw_ratio"] > 0, r
'
ok $? "--json: parses, candidates, verified, ratios"

"$rinxctl" compare --spec "$spec" --peers bogus >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "bad --peers is a usage error"
exit $((fail > 0))
