# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Prints the step timeline of an emulated run (train.py --compute-ms X
--timeline DIR): per backend, step and rank, when each phase began and
ended, in ms from the first rank's first step (every rank's clock is the
host's monotonic one), and per backend the mean time of each phase.

    /usr/bin/python3 tools/train/timeline.py DIR [--steps A:B]

Phases: compute (the emulated forward and backward pass), sum (BSP's
allreduce), for OSP wait2 (the wait for the previous stage 2 in step()),
s1 (the stage-1 sum), s2 (the stage-2 sum, from its start on the wire to
its end), step (the whole OSP step()). A stage-2 sum of step k that ends
after step k+1's compute began overlapped it.
"""
import argparse
import glob
import json
import os
import statistics
import sys

PHASES = ("compute", "sum", "step", "wait2", "s1", "s2")


def load(d):
    runs = {}
    for path in sorted(glob.glob(os.path.join(d, "*-r*.json"))):
        with open(path) as f:
            r = json.load(f)
        runs.setdefault(r["backend"], {})[r["rank"]] = r
    return runs


def spans(events):
    """{(phase, step): (begin, end)} of one rank."""
    out = {}
    for name, step, t in events:
        phase, _, edge = name.rpartition("_")
        if phase not in PHASES:
            continue
        b, e = out.get((phase, step), (None, None))
        if edge == "begin":
            b = t
        elif edge == "end":
            e = t
        out[(phase, step)] = (b, e)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--steps", default="",
                    help="A:B: only steps A..B-1 in the per-step lines")
    a = ap.parse_args()
    runs = load(a.dir)
    if not runs:
        sys.exit("timeline: no BACKEND-rRANK.json in %s" % a.dir)
    lo, hi = 0, 1 << 30
    if a.steps:
        x, _, y = a.steps.partition(":")
        lo, hi = int(x or 0), int(y or hi)
    for backend, ranks in runs.items():
        t0 = min(r["events"][0][2] for r in ranks.values() if r["events"])
        per = {k: spans(r["events"]) for k, r in ranks.items()}
        print("## %s (%d ranks; ms from the first event)" % (backend,
                                                            len(ranks)))
        steps = sorted({s for sp in per.values() for _, s in sp})
        for s in steps:
            if not lo <= s < hi:
                continue
            for k in sorted(per):
                cells = []
                for ph in PHASES:
                    b, e = per[k].get((ph, s), (None, None))
                    if b is None or e is None:
                        continue
                    cells.append("%s %.0f-%.0f" % (ph, (b - t0) * 1e3,
                                                   (e - t0) * 1e3))
                print("step %d rank %d: %s" % (s, k, ", ".join(cells)))
        # how much of stage 2 overlapped the next compute, and the means
        means = {}
        over = []
        for k, sp in per.items():
            for (ph, s), (b, e) in sp.items():
                if b is not None and e is not None and s >= 0:
                    means.setdefault(ph, []).append((e - b) * 1e3)
                if ph == "s2" and b is not None and e is not None:
                    cb, ce = sp.get(("compute", s + 1), (None, None))
                    if cb is not None:
                        over.append((max(0.0, min(e, ce) - max(b, cb)) *
                                     1e3, (e - b) * 1e3))
        print("mean ms (the timed steps): " + ", ".join(
            "%s %.0f" % (ph, statistics.mean(means[ph])) for ph in PHASES
            if ph in means))
        if over:
            print("stage 2 overlapping the next compute: %.0f of %.0f ms "
                  "(mean over ranks and steps)" % (
                      statistics.mean(o for o, _ in over),
                      statistics.mean(t for _, t in over)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
