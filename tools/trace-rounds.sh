#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The rounds of a job from its repair trace (RINX_TRACE, docs/rinx.md,
# "Tracing repairs"): per round, from the first rank's open to the last
# rank's close, how far apart the ranks opened it, and the repair events
# of every rank in it.
#
#   RINX_TRACE=DIR build/rinxctl bench ...      (the trainers write it)
#   tools/trace-rounds.sh DIR [JOB]
set -u
dir=${1:?usage: tools/trace-rounds.sh DIR [JOB]}
job=${2:-}
shopt -s nullglob
pat="rinx-trace.${job:-*}.*"
files=("$dir"/$pat)
if [ ${#files[@]} -eq 0 ]; then
	echo "trace-rounds: no rinx-trace.${job:-*}.* in $dir" >&2
	exit 1
fi
# a line: time_ns rank event round [key=value ...]
cat "${files[@]}" | sort -n -k1,1 | awk '
function ms(t) { return sprintf("%.1f", t / 1e6) }
{
	ev = $3; rd = $4
	if (ev == "open") {
		if (!(rd in first) || $1 < first[rd]) first[rd] = $1
		if (!(rd in lastopen) || $1 > lastopen[rd]) lastopen[rd] = $1
		nb[rd] = substr($5, 4); keep[rd] = substr($6, 6)
		ranks[rd]++
		if (!(rd in seen)) { seen[rd] = 1; order[n++] = rd }
	} else if (ev == "close") {
		if (!(rd in last) || $1 > last[rd]) last[rd] = $1
	} else {
		cnt[rd, ev]++
	}
}
END {
	printf "%-6s %5s %4s %5s %9s %8s %6s %5s %6s %6s %7s %5s %5s\n",
	       "round", "nb", "keep", "ranks", "open..ms", "spread", "stall",
	       "hole", "nack", "rnack", "resend", "tail", "done"
	for (i = 0; i < n; i++) {
		rd = order[i]
		span = (rd in last) ? ms(last[rd] - first[rd]) : "-"
		printf "%-6s %5s %4s %5d %9s %8s %6d %5d %6d %6d %7d %5d %5d\n",
		       rd, nb[rd], keep[rd], ranks[rd], span,
		       ms(lastopen[rd] - first[rd]), cnt[rd, "stall"],
		       cnt[rd, "hole"], cnt[rd, "nack"], cnt[rd, "rnack"],
		       cnt[rd, "resend"], cnt[rd, "tail"], cnt[rd, "done"]
	}
}'
