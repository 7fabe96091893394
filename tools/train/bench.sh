#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The synchronization modes on the training example, with and without a
# straggler: time per step and accuracy against time for Gloo DDP, the rinx
# hook (BSP), ASP, SSP, OSP and InHAD. A benchmark, not a test: it asserts
# nothing but that every run finished.
#
#   tools/train/bench.sh [--hosts N] [--epochs E] [--repeat K] [--out DIR]
#                        [--straggler R] [--slow-ms X] [--prefix P]
#                        [--racks R] [--ina KIND] [--rate MBIT]
#                        [--window N] [--jobs N]
#                        [--backends LIST] [--no-straggler]
#                        [--only-straggler] [--time S]
#                        [-- train.py options]
#
#   --hosts N       ranks, one per host of a fresh testbed (default 4)
#   --racks R       racks of the testbed (default 1)
#   --ina KIND      INA kind of every rack: none, switch or agent
#   --rate MBIT     every link's rate in Mbit/s (default: unlimited)
#   --window N      blocks per job slot (testbed default 640; a PS store
#                   on rinx's data plane does not need it: its blocks
#                   are entries of their own, on the server's host)
#   --jobs N        job slots per node (testbed default 16)
#   --backends L    train.py --backend (default gloo,rinx,osp,asp,ssp,inhad;
#                   also asp-xdp, ssp-xdp, inhad-xdp: the PS on rinx's
#                   data plane)
#   --no-straggler  only the case without a straggler
#   --only-straggler  only the case with the straggler
#   --time S        bound on one sitting's run of every backend, seconds
#                   (default 600)
#   --epochs E      epochs of every run (default 10)
#   --repeat K      sittings per case; the table takes the median (default 1)
#   --straggler R   the slow rank of the straggler case (default: the last)
#   --slow-ms X     the straggler sleeps X ms every step instead of its
#                   compute time (train.py --slow-rank R --slow-ms X)
#   --replot        no runs: the table and PNG again from DIR/results.jsonl
#   --prefix P      the testbed's namespace prefix (default rxbs + 4 hex)
#   --out DIR       results.jsonl, table.md and accuracy.png (default
#                   ./bench-sync)
#
# Each sitting runs every backend one after the other in the same processes
# (train.py --backend gloo,rinx,osp,asp,ssp,inhad --check epoch), once with
# no straggler and once with rank R taking twice its compute time. ms/step
# is the wall time of the run over its synchronous steps' worth of samples
# (for ASP, SSP, InHAD: the PS's rank-iterations / ranks). The PNG (gnuplot,
# tools/deps.sh plot) plots rank 0's accuracy against seconds of training.
# With train.py --compute-ms X (an emulated accelerator: timing only) the
# table has samples/s and no accuracy, says that the compute is emulated,
# and there is no plot.

set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
hosts=4
epochs=10
repeat=1
out=bench-sync
slow=
replot=0
slowms=
prefix=rxbs$(printf '%04x' $((RANDOM)))
backends=gloo,rinx,osp,asp,ssp,inhad
tb=()
cases=both
tmax=600

usage() { sed -n '/^#   tools/,/^# tools\/deps/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--hosts) hosts=${2:?}; shift 2 ;;
	--epochs) epochs=${2:?}; shift 2 ;;
	--repeat) repeat=${2:?}; shift 2 ;;
	--straggler) slow=${2:?}; shift 2 ;;
	--out) out=${2:?}; shift 2 ;;
	--prefix) prefix=${2:?}; shift 2 ;;
	--replot) replot=1; shift ;;
	--slow-ms) slowms=${2:?}; shift 2 ;;
	--racks) tb+=(--racks "${2:?}"); shift 2 ;;
	--ina) tb+=(--ina "${2:?}"); shift 2 ;;
	--rate) tb+=(--rate "${2:?}"); shift 2 ;;
	--window) tb+=(--window "${2:?}"); shift 2 ;;
	--jobs) tb+=(--jobs "${2:?}"); shift 2 ;;
	--backends) backends=${2:?}; shift 2 ;;
	--no-straggler) cases=none; shift ;;
	--only-straggler) cases=slow; shift ;;
	--time) tmax=${2:?}; shift 2 ;;
	--) shift; break ;;
	-h|--help) usage ;;
	*) echo "bench.sh: unknown option $1" >&2; usage ;;
	esac
done
slow=${slow:-$((hosts - 1))}
mkdir -p "$out" || exit 1
res=$out/results.jsonl
if [ $replot -eq 0 ]; then	# the runs
: >"$res"

cleanup() { "$build/rinxctl" testbed down "$prefix" >/dev/null 2>&1; }
trap cleanup EXIT
trap 'exit 1' INT TERM
"$build/rinxctl" testbed up --hosts "$hosts" "${tb[@]}" --prefix "$prefix" >&2 ||
	{ echo "bench.sh: testbed up failed" >&2; exit 1; }
spec=/run/rinx-testbed/$prefix.spec

for ((k = 1; k <= repeat; k++)); do
	ss=(-1 "$slow")
	[ $cases = none ] && ss=(-1)
	[ $cases = slow ] && ss=("$slow")
	for s in "${ss[@]}"; do
		echo "# sitting $k, straggler $s" >&2
		log=$(mktemp)
		if [ -n "$slowms" ]; then
			how=(--slow-rank "$s" --slow-ms "$slowms")
		else
			how=(--straggler "$s")
		fi
		"$here/run.sh" --spec "$spec" --build "$build" --time "$tmax" -- \
			--backend "$backends" --epochs "$epochs" --check epoch \
			"${how[@]}" "$@" >"$log" 2>&1
		rc=$?
		# an emulated run says so on every output
		grep -m1 '^\[rank 0\] # compute emulated' "$log" |
			sed 's/^\[rank 0\] //' >&2
		grep -E '^\[rank 0\] result ' "$log" | sed 's/^\[rank 0\] result //' |
			SITTING=$k /usr/bin/python3 -c '
import json, os, sys
for line in sys.stdin:
    d = json.loads(line)
    d["sitting"] = int(os.environ["SITTING"])
    print(json.dumps(d))' >>"$res"
		if [ $rc -ne 0 ]; then
			grep -vE '^\[rank [0-9]\] result' "$log" | tail -n 20 >&2
			echo "bench.sh: sitting $k (straggler $s) failed" >&2
			rm -f "$log"
			exit 1
		fi
		rm -f "$log"
	done
done
fi

# the table (medians over the sittings) and the plot's data (sitting 1)
OUT=$out /usr/bin/python3 - "$res" <<'EOF'
import json, os, statistics, sys
out = os.environ["OUT"]
rows = [json.loads(l) for l in open(sys.argv[1])]
order = ["gloo", "rinx", "rinx-backend", "osp", "asp", "ssp", "inhad",
         "asp-xdp", "ssp-xdp", "inhad-xdp"]
name = {"gloo": "Gloo DDP", "rinx": "rinx hook (BSP)", "osp": "rinx OSP",
        "rinx-backend": "rinx backend (BSP)",
        "asp": "ASP", "ssp": "SSP", "inhad": "InHAD",
        "asp-xdp": "ASP (xdp PS)", "ssp-xdp": "SSP (xdp PS)",
        "inhad-xdp": "InHAD (xdp PS)"}
emu = [r for r in rows if r.get("emulated")]
if emu:
    name.update({"gloo": "Gloo (BSP)", "rinx": "rinx (BSP)"})
def slowed(r):
    return r["straggler"] >= 0 or r.get("slow_rank", -1) >= 0
def how(r):
    if r["straggler"] >= 0:
        return "rank %d +%.1f ms (x2 compute)" % (r["straggler"],
                                                  r["straggle_s"] * 1000)
    return "rank %d +%g ms" % (r["slow_rank"], r["slow_ms"])
def med(xs):
    return statistics.median(xs) if xs else float("nan")
lines = ["| backend | straggler | ms/step | vs BSP | accuracy | s to 85% | sittings |",
         "| --- | --- | --- | --- | --- | --- | --- |"]
if emu:
    lines = ["%s; %d ranks, %.1f MB gradient" % (
                 emu[0]["compute"], emu[0]["ranks"], emu[0]["grad_mb"]), "",
             "| backend | straggler | ms/step | samples/s | vs BSP | "
             "sittings | ms/step of each sitting |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
for strag in (False, True):
    sel = [r for r in rows if slowed(r) == strag]
    bsp = med([r["wall_per_step"] * 1000 for r in sel if r["backend"] == "rinx"])
    for b in order:
        rs = [r for r in sel if r["backend"] == b]
        if not rs:
            continue
        ms = med([r["wall_per_step"] * 1000 for r in rs])
        if emu:
            lines.append("| %s | %s | %.0f | %.1f | %.2fx | %d | %s |" % (
                name[b], how(rs[0]) if strag else "none", ms,
                med([r["samples_per_s"] for r in rs]), bsp / ms, len(rs),
                ", ".join("%.0f" % (r["wall_per_step"] * 1000)
                          for r in rs)))
            continue
        acc = med([r["accuracy"] * 100 for r in rs])
        reach = []
        for r in rs:
            t = [t for a, t in zip(r["accuracy_by_epoch"],
                                   r["time_by_epoch"]) if a >= 0.85]
            reach.append(t[0] if t else float("inf"))
        rt = med(reach)
        lines.append("| %s | %s | %.1f | %.2fx | %.2f%% | %s | %d |" % (
            name[b], how(rs[0]) if strag else "none",
            ms, bsp / ms, acc, "%.2f" % rt if rt != float("inf") else "-",
            len(rs)))
open(os.path.join(out, "table.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
if emu:
    sys.exit(0)     # nothing learned: no accuracy to plot
short = dict(name, gloo="Gloo DDP", rinx="rinx BSP")
plots = []
for strag in (False, True):
    dat = os.path.join(out, "curve-%d.dat" % strag)
    cmds = []
    with open(dat, "w") as f:
        i = 0
        for b in order:
            for r in rows:
                if r["backend"] == b and r["sitting"] == 1 and \
                        slowed(r) == strag:
                    for a, t in zip(r["accuracy_by_epoch"], r["time_by_epoch"]):
                        f.write("%.3f %.4f\n" % (t, a * 100))
                    f.write("\n\n")
                    cmds.append("'%s' index %d with linespoints title '%s'"
                                % (dat, i, short[b]))
                    i += 1
    sl = [r for r in rows if slowed(r)]
    title = ("%d ranks, straggler %s" % (rows[0]["ranks"], how(sl[0]))
             if strag and sl else "%d ranks, no straggler" % rows[0]["ranks"])
    plots.append("set title '%s'\nplot %s" % (title, ", ".join(cmds)))
with open(os.path.join(out, "plot.gp"), "w") as f:
    f.write("""set terminal pngcairo size 1100,450 font ",10"
set output '%s'
set multiplot layout 1,2
set xlabel "seconds of training (rank 0)"
set ylabel "held-out accuracy after each epoch (%%)"
set yrange [40:100]
set key bottom right
set grid
%s
unset multiplot
""" % (os.path.join(out, "accuracy.png"), "\n".join(plots)))
EOF

if [ ! -f "$out/plot.gp" ] || grep -q '"emulated": true' "$res"; then
	:	# an emulated run has no accuracy curve
elif command -v gnuplot >/dev/null; then
	gnuplot "$out/plot.gp" || exit 1
	echo "# plot: $out/accuracy.png" >&2
else
	echo "bench.sh: gnuplot missing (tools/deps.sh plot): no PNG" >&2
fi
