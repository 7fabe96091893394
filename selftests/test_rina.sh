#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# End to end: Rina (ring allreduce whose INA racks join the ring as one
# member each) verified by `rinxctl bench --verify` on testbeds that mix
# racks without INA, racks whose ToR aggregates (ina=switch) and racks whose
# lowest-ranked host aggregates (ina=agent); float32 (within rinx_f32_bound)
# and int32 (bit-exact), sizes 1 element, 7 elements, one block (768
# elements), one block + 1, 1 MiB, and 16 MiB on two configurations.
#
#   case  racks x hosts  ina                 mode     ring members
#   a     2 x 4          none,none           native   8 (plain ring)
#   b     2 x 4          switch,none         native   5   (+16 MiB)
#   c     2 x 4          agent,none          native   5
#   d     3 x 2          switch,agent,none   native   4   (+16 MiB)
#   e     2 x 4          switch,switch       native   2
#   f     2 x 4          agent,agent         native   2
#   g     3 x 1          switch,agent,none   native   3
#   h     2 x 8          none,agent          native   9
#   i     2 x 8          switch,none         native   9
#   j     1 x 4          switch              native   1
#   k     1 x 4          agent               native   1
#   l     3 x 2          switch,agent,none   generic  4
#
#   example: case d (<P> = rxR<pid>, one letter per case)
#
#                              <P>dsp  spine
#                   /             |             \
#         <P>dt0 ToR         <P>dt1 ToR         <P>dt2 ToR
#         ina=switch:        ina=agent:         ina=none:
#         aggregator agg0    plain switch,      plain switch
#         on its ports       h2 aggregates
#          /      \           /      \           /      \
#       <P>dh0  <P>dh1     <P>dh2  <P>dh3     <P>dh4  <P>dh5
#       contribute to      h3 contributes     autonomous ring
#       agg0, get the      to h2; h2 sends    members (add+fwd,
#       sum by multicast   the sum into the   add+finish, store)
#                          rack (ToR group)
#
#   ring: [rack 0: agg0] -> [rack 1: h2] -> h4 -> h5 -> back to agg0
#
#   selftests/test_rina.sh [builddir]
#
# Every case checks: the plan (`rinxctl plan`) has the expected members; the
# bench's exit status, its verify column per size and its summary, for both
# payload types; no drop_* or aborted counter on any host program and no
# drop on any switch; and counters that prove the plan ran: every
# aggregator (ToR or agent) finished every block exactly once and its ToR
# sent every block into the rack once; workers of INA racks got every block
# by multicast, recycled gathers into contributions and never did a ring hop
# (reduce_fwd, reduce_finish, gather_fwd); autonomous hosts did the ring hops
# and no aggregation. drop_job is reported, not failed: it counts the open
# barrier's HELLO frames that reach a peer before it installed the job or
# after it closed it (see the note at check_hosts); drop_agg_dup,
# drop_agg_stale and drop_stale at an INA ToR only where its counters show
# resends, a repair ran, or up to the number of blocks the benches report
# the trainers sent again (a resent contribution arriving after the
# original is a duplicate, after its round a stale frame, by design). TAP output. Exit 0
# pass, 1 fail, 4 skip (reason printed).

set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=${1:-${RINX_BUILD:-$here/../build}}
rinxctl=$build/rinxctl
P=${RINX_TEST_NS:-}rxR$$			# unique: runs can overlap; + one letter per case
TIMEOUT_MS=20000	# per allreduce: a lost frame ends in bounded time
BENCH_LIMIT=120		# seconds for one bench run, whatever happens
BUDGET=600		# seconds: later cases fail rather than start
CTL_LIMIT=60		# seconds for any other rinxctl command
ITERS=2			# bench --iters (and --warmup 0): enters the counts
SMALL=4,28,3072,3076,1048576
LARGE=$SMALL,16777216
BLOCK=3072
CASES=12
PER_CASE=14
n=0
fail=0
used=()
bench_pid=
RESENDS=0	# blocks the trainers sent again in this case (bench reports)
tmp=
start=$SECONDS

ctl() { timeout -k 5 $CTL_LIMIT "$rinxctl" "$@"; }

ours() {	# namespaces of testbed $1 (a whole prefix), one per line
	timeout 20 ip netns list 2>/dev/null | awk '{print $1}' |
		grep -E "^${1}(h[0-9]+|t[0-9]+|sp)\$"
}

cleanup() {
	local p ns

	# timeout forwards the signal to the bench and its ranks (its group)
	[ -n "$bench_pid" ] && kill -TERM "$bench_pid" 2>/dev/null &&
		wait "$bench_pid" 2>/dev/null
	[ -n "$tmp" ] && rm -f "$tmp"
	for p in "${used[@]}"; do
		ctl testbed down "$p" >/dev/null 2>&1
		for ns in $(ours "$p"); do
			timeout 20 ip netns del "$ns" 2>/dev/null
		done
	done
}


# check_summary OUT DTYPE: "every element ok", the worst float32 error
# within the bound, and 0 for int32 (bit-exact).
check_summary() {
	local out=$1 dt=$2 worst

	if [ "$dt" = int32 ]; then
		echo "$out" | grep -qx '# verify: every element ok; int32 sums bit-exact' &&
			return 0
		echo "no '# verify: every element ok; int32 sums bit-exact' line"
		return 1
	fi
	worst=$(echo "$out" | sed -nE \
		's/^# verify: every element ok; float32 worst error ([0-9.]+) of the bound$/\1/p')
	if [ -z "$worst" ]; then
		echo "no '# verify: every element ok; ...' line"
		return 1
	fi
	if ! awk -v w="$worst" 'BEGIN { exit !(w <= 1) }'; then
		echo "float32 worst error $worst of the bound"
		return 1
	fi
	return 0
}

# Blocks one bench run moves through every member: per size, the blocks
# of its tensor, times the iterations.
blocks_of() {
	local s total=0

	for s in ${1//,/ }; do
		total=$((total + (s + BLOCK - 1) / BLOCK * ITERS))
	done
	echo $total
}

# --- what a case's counters must show --------------------------------------
# Filled by load_case SPEC PREFIX:
#   RK_INA[r]    ina kind of rack r; RK_AGG[r] its aggregator (agg name or
#                agent host); RK_HOSTS[r] its hosts
#   H_RACK[h]    rack of host h; HOSTS: every host, by rank
#   C["h key"]   host counters (stats --json)
#   SW["ns key"] switch counters, SW["agg key"] ToR aggregator counters
#                (testbed show prints only the non-zero ones)
declare -A RK_INA RK_AGG RK_HOSTS H_RACK C SW
HOSTS=()
RACKS=()

load_spec() {	# load_spec SPEC
	local line kw f k v id name rank rack ina best

	RK_INA=() RK_AGG=() RK_HOSTS=() H_RACK=()
	HOSTS=() RACKS=()
	declare -A minrank=()
	while read -r line; do
		kw=${line%% *}
		id= name= rank= rack= ina=
		for f in ${line#* }; do
			k=${f%%=*} v=${f#*=}
			case $k in
			id) id=$v ;; name) name=$v ;; rank) rank=$v ;;
			rack) rack=$v ;; ina) ina=$v ;;
			esac
		done
		case $kw in
		rack)
			RACKS+=("$id")
			RK_INA[$id]=$ina
			RK_HOSTS[$id]=
			[ "$ina" = switch ] && RK_AGG[$id]=$name
			;;
		host)
			HOSTS[$rank]=$name
			H_RACK[$name]=$rack
			RK_HOSTS[$rack]+="$name "
			best=${minrank[$rack]:-}
			if [ -z "$best" ] || [ "$rank" -lt "$best" ]; then
				minrank[$rack]=$rank
			fi
			;;
		esac
	done < <(grep -E '^(rack|host) ' "$1")
	for rack in "${RACKS[@]}"; do
		# an agent alone in its rack has nobody to aggregate: the plan
		# makes it a plain ring member
		set -- ${RK_HOSTS[$rack]}
		[ "${RK_INA[$rack]}" = agent ] && [ $# -lt 2 ] &&
			RK_INA[$rack]=none
		[ "${RK_INA[$rack]}" = agent ] &&
			RK_AGG[$rack]=${HOSTS[${minrank[$rack]}]}
	done
}

load_counters() {	# load_counters SPEC PREFIX: LOAD_ERR says what failed
	local spec=$1 p=$2 json show node k v

	C=() SW=() SHOW= LOAD_ERR=
	json=$(ctl stats --spec "$spec" --json 2>&1) || {
		LOAD_ERR="rinxctl stats failed: $json"
		return 1
	}
	while read -r node k v; do
		C["$node $k"]=$v
	done < <(echo "$json" | grep -oE '"[a-z_0-9]+":("[^"]*"|-?[0-9]+)' |
		tr -d '"' | awk -F: '$1 == "node" { node = $2; next }
					 { print node, $1, $2 }')
	show=$(ctl testbed show "$p" 2>&1) || {
		LOAD_ERR="rinxctl testbed show failed: $show"
		return 1
	}
	while read -r node k v; do
		SW["$node $k"]=$v
	done < <(echo "$show" | awk '
		/^  [^ ]+ counters:/ || /^  [^ ]+ +(tor|spine) / {
			for (i = 2; i <= NF; i++)
				if (split($i, kv, "=") == 2)
					print $1, kv[1], kv[2]
		}')
	SHOW=$show
	return 0
}

c() { echo "${C["$1 $2"]:-missing}"; }		# host counter
s() { echo "${SW["$1 $2"]:-0}"; }		# switch/aggregator counter

is() {	# is WHO KEY OP WANT VALUE: prints a complaint unless VALUE OP WANT
	local who=$1 k=$2 op=$3 want=$4 v=$5

	if [ "$v" = missing ]; then
		echo "$who: no counter $k"
		return 1
	fi
	if ! [ "$v" "$op" "$want" ]; then
		echo "$who: $k = $v, want $op $want"
		return 1
	fi
	return 0
}

# Note on drop_job: each rank repeats its OPEN hello (every 10 ms) until it
# heard every peer, then sends one more; a hello reaching a peer that has
# not installed the job yet, or has already closed it, is counted there as
# drop_job. That is how the open barrier works, so it cannot be asserted 0;
# every other drop_* and aborted must be.
check_hosts() {		# no drop (but drop_job) and no abort on any host
	local h k bad=0 jobs=

	for h in "${HOSTS[@]}"; do
		is "$h" aborted -eq 0 "$(c "$h" aborted)" || bad=1
		# a repair sends blocks again: late copies are dropped stale
		if repaired; then
			echo "$h: drop_stale = $(c "$h" drop_stale) tolerated:" \
			     "repairs ran"
		else
			is "$h" drop_stale -eq 0 "$(c "$h" drop_stale)" || bad=1
		fi
		[ "$(c "$h" drop_agg_dup)" != missing ] ||
			{ echo "$h: no counter drop_agg_dup"; bad=1; }
		for k in "${!C[@]}"; do
			case $k in
			"$h drop_job")
				jobs+=" $h=${C[$k]}" ;;
			"$h drop_agg_dup")
				if [ "${C[$k]}" -gt 0 ] &&
				   dup_ok "$h" "${C[$k]}"; then
					echo "$h: drop_agg_dup = ${C[$k]}" \
						"tolerated: frames were resent" \
						"($RESENDS blocks by trainers)"
				else
					is "$h" drop_agg_dup -eq 0 "${C[$k]}" ||
						bad=1
				fi ;;
			"$h drop_stale")
				;;	# checked above
			"$h drop_dup")
				# a ring hop's block passed on already this
				# round (a repair or resend that raced the
				# late original): never a loss
				[ "${C[$k]}" -gt 0 ] &&
					echo "$h: drop_dup = ${C[$k]} tolerated" >&3
				;;
			"$h drop_"*)
				is "$h" "${k#* }" -eq 0 "${C[$k]}" || bad=1 ;;
			esac
		done
	done
	echo "drop_job (open-barrier hellos, tolerated):$jobs" >&3
	return $bad
}

# resent WHO: does the aggregator WHO show that something was resent to it
# (a retransmission, resend, NACK or pull counter above 0)? Then a
# duplicate contribution is the expected outcome of the resend, not a
# fault.
resent() {
	local k

	for k in "${!SW[@]}" "${!C[@]}"; do
		[ "${k% *}" = "$1" ] || continue
		case ${k#* } in
		*resend* | *retrans* | nack* | *pull*)
			[ "${SW[$k]:-${C[$k]:-0}}" -gt 0 ] 2>/dev/null &&
				return 0 ;;
		esac
	done
	return 1
}

# dup_ok WHO N: are N duplicate contributions at aggregator WHO explained
# by resends: its own counters, a repair anywhere, or at most as many as
# the blocks the trainers sent again (RESENDS, from the benches' reports:
# a share sent again after a stall reaches a slot still waiting)?
dup_ok() {
	resent "$1" || repaired || [ "$2" -le "$RESENDS" ]
}

# repaired: did any node repair a loss (or a stall it took for one)? Then
# a block may reach a rack twice (re-sent sums are idempotent, counted):
# a NACK answered or not, a sum sent on again (for a duplicate share or a
# worker's NACK, bpf/agg.bpf.h), a pull.
repaired() {
	local k

	for k in "${!SW[@]}" "${!C[@]}"; do
		case ${k#* } in
		repair | nack_miss | agg_reemit | agg_resend | agg_pull | \
		nack_pull | nack_sum)
			[ "${SW[$k]:-${C[$k]:-0}}" -gt 0 ] 2>/dev/null &&
				return 0 ;;
		esac
	done
	return 1
}

check_switches() {	# no switch drop, no aggregator drop or abort
	local k bad=0 sws=0

	for k in "${!SW[@]}"; do
		case ${k#* } in
		drop_agg_dup | drop_agg_stale | drop_stale)
			# a contribution sent again arrives after the
			# original (dup) or after the aggregator's slot or
			# job went on to a later round (stale; rounds of 640
			# blocks end often): by design where blocks were
			# resent
			if [ "${SW[$k]}" -gt 0 ] &&
			   dup_ok "${k% *}" "${SW[$k]}"; then
				echo "${k% *}: ${k#* } = ${SW[$k]} tolerated:" \
					"frames were resent to it ($RESENDS" \
					"blocks by trainers)"
			else
				is "${k% *}" "${k#* }" -eq 0 "${SW[$k]}" || bad=1
			fi ;;
		drop_* | ina_aborted)
			is "${k% *}" "${k#* }" -eq 0 "${SW[$k]}" || bad=1 ;;
		fwd) sws=$((sws + 1)) ;;
		esac
	done
	if [ $sws -lt ${#RACKS[@]} ]; then
		echo "testbed show lists $sws switches, want at least ${#RACKS[@]}"
		echo "$SHOW"
		bad=1
	fi
	return $bad
}

# check_aggs P B M: every aggregator finished each of the B blocks exactly
# once, its ToR sent each into the rack once; nothing aggregates elsewhere.
check_aggs() {
	local p=$1 B=$2 M=$3 r a h tor bad=0 k mc op=-eq

	if repaired; then
		echo "repairs ran: a block may have reached a rack twice"
		op=-ge
	fi
	for r in "${RACKS[@]}"; do
		a=${RK_AGG[$r]:-}
		tor=${p}t$r
		case ${RK_INA[$r]} in
		switch)
			is "$a" agg_done -eq "$B" "$(s "$a" agg_done)" || bad=1
			is "$a" agg_add -gt 0 "$(s "$a" agg_add)" || bad=1
			mc=$(s "$a" agg_mcast)
			if [ "$M" -gt 1 ]; then
				is "$a" agg_mcast -gt 0 "$mc" || bad=1
			else
				is "$a" agg_mcast -eq 0 "$mc" || bad=1
			fi
			is "$tor" ina_group $op "$B" "$(s "$tor" ina_group)" ||
				bad=1
			is "$tor" group -eq 0 "$(s "$tor" group)" || bad=1
			for h in ${RK_HOSTS[$r]}; do
				for k in agg_add agg_done agg_mcast; do
					is "$h" $k -eq 0 "$(c "$h" $k)" || bad=1
				done
			done
			;;
		agent)
			# the blocks whose own share came late were finished by
			# the agent's trainer (slow_self; after a repair a
			# duplicate may hand a waiting sum up once more)
			is "$a" "agg_done + slow_self" $op "$B" \
				"$(($(c "$a" agg_done) + $(c "$a" slow_self)))" ||
				bad=1
			is "$a" agg_add -gt 0 "$(c "$a" agg_add)" || bad=1
			mc=$(c "$a" agg_mcast)
			if [ "$M" -gt 1 ]; then
				is "$a" agg_mcast -gt 0 "$mc" || bad=1
			else
				is "$a" agg_mcast -eq 0 "$mc" || bad=1
			fi
			for k in reduce_fwd reduce_finish gather_fwd; do
				is "$a (agent)" $k -eq 0 "$(c "$a" $k)" || bad=1
			done
			is "$tor" group $op "$B" "$(s "$tor" group)" || bad=1
			for k in ina_fwd ina_group ina_drop; do
				is "$tor" $k -eq 0 "$(s "$tor" $k)" || bad=1
			done
			for h in ${RK_HOSTS[$r]}; do
				[ "$h" = "$a" ] && continue
				for k in agg_add agg_done agg_mcast; do
					is "$h" $k -eq 0 "$(c "$h" $k)" || bad=1
				done
			done
			;;
		*)
			for k in ina_fwd ina_group ina_drop group; do
				is "$tor" $k -eq 0 "$(s "$tor" $k)" || bad=1
			done
			for h in ${RK_HOSTS[$r]}; do
				for k in agg_add agg_done agg_mcast; do
					is "$h" $k -eq 0 "$(c "$h" $k)" || bad=1
				done
			done
			;;
		esac
	done
	return $bad
}

# check_workers B: the non-agent hosts of INA racks got each block once by
# multicast, turned gathers into contributions, and did no ring hop (ring
# origins recycle too since 6298ed4: recycled says nothing about the kind).
check_workers() {
	local B=$1 r h k bad=0 op=-eq

	repaired && op=-ge
	for r in "${RACKS[@]}"; do
		for h in ${RK_HOSTS[$r]}; do
			[ "${RK_INA[$r]}" = none ] && continue
			[ "$h" = "${RK_AGG[$r]}" ] && continue
			is "$h" gather_end $op "$B" "$(c "$h" gather_end)" ||
				bad=1
			is "$h" recycled -gt 0 "$(c "$h" recycled)" || bad=1
			for k in reduce_fwd reduce_finish gather_fwd; do
				is "$h" $k -eq 0 "$(c "$h" $k)" || bad=1
			done
		done
	done
	return $bad
}

# check_plain M: hosts of racks without INA are ring members doing the
# hops (add+fwd only exists in a ring of more than 2 members).
check_plain() {
	local M=$1 r h k bad=0 any=0

	for r in "${RACKS[@]}"; do
		[ "${RK_INA[$r]}" = none ] || continue
		for h in ${RK_HOSTS[$r]}; do
			any=1
			for k in reduce_finish gather_end; do
				is "$h" $k -gt 0 "$(c "$h" $k)" || bad=1
			done
			if [ "$M" -gt 2 ]; then
				for k in reduce_fwd gather_fwd; do
					is "$h" $k -gt 0 "$(c "$h" $k)" ||
						bad=1
				done
			fi
		done
	done
	if [ $any -eq 0 ]; then	# every rack INA: no host does a ring hop
		for h in "${HOSTS[@]}"; do
			for k in reduce_fwd reduce_finish gather_fwd; do
				is "$h" $k -eq 0 "$(c "$h" $k)" || bad=1
			done
		done
	fi
	return $bad
}

# check_plan SPEC: plan kind, member count and member list from the spec.
check_plan() {
	local spec=$1 M=$2 plan want r h kind

	plan=$(ctl plan --spec "$spec" 2>&1) || {
		echo "rinxctl plan failed: $plan"
		return 1
	}
	want=
	kind=ring
	for r in "${RACKS[@]}"; do
		case ${RK_INA[$r]} in
		switch) want+="[rack $r: ${RK_AGG[$r]} aggregates on the ToR] "
			kind="Rina (ring with INA racks)" ;;
		agent) want+="[rack $r: ${RK_AGG[$r]} aggregates as agent] "
			kind="Rina (ring with INA racks)" ;;
		*) for h in ${RK_HOSTS[$r]}; do want+="$h "; done ;;
		esac
	done
	want="members: ${want% }"
	if ! echo "$plan" | grep -q "^plan: rina, $kind, ${#HOSTS[@]} hosts, $M ring members,"; then
		echo "want 'plan: rina, $kind, ${#HOSTS[@]} hosts, $M ring members'; got:"
		echo "$plan" | head -n 2
		return 1
	fi
	if ! echo "$plan" | grep -qxF "$want"; then
		echo "want '$want'; got:"
		echo "$plan" | grep '^members:'
		return 1
	fi
	return 0
}

# run_case LETTER MODE RACKS PER-RACK INA SIZES
run_case() {
	local p=$P$1 mode=$2 racks=$3 per=$4 ina=$5 sizes=$6
	local name="$1: $racks x $per $ina ($mode)" spec out rc dt t0 msg
	local tc=$SECONDS fail0=$fail B M r i

	spec=/run/rinx-testbed/$p.spec
	echo "# case $name, prefix $p, sizes $sizes"
	if [ $((SECONDS - start)) -gt $BUDGET ]; then
		for ((i = 0; i < PER_CASE; i++)); do
			ok 1 "$name: check $((i + 1)) (not run: over ${BUDGET} s)"
		done
		return
	fi
	used+=("$p")
	out=$(ctl testbed up --prefix "$p" --racks "$racks" --per-rack "$per" \
		--ina "$ina" --mode "$mode" 2>&1)
	rc=$?
	ok $rc "$name: testbed up"
	if [ $rc -ne 0 ]; then
		echo "$out" | diag
		# keep the plan: the results of this case fail
		for ((i = 0; i < PER_CASE - 2; i++)); do
			ok 1 "$name: check $((i + 2)) (no testbed)"
		done
		ctl testbed down "$p" >/dev/null 2>&1
		[ -z "$(ours "$p")" ]
		ok $? "$name: testbed down, no namespace left"
		return
	fi
	load_spec "$spec"
	M=0
	for r in "${RACKS[@]}"; do
		if [ "${RK_INA[$r]}" = none ]; then
			set -- ${RK_HOSTS[$r]}
			M=$((M + $#))
		else
			M=$((M + 1))
		fi
	done
	msg=$(check_plan "$spec" "$M")
	ok $? "$name: plan has $M ring members as the spec says"
	[ -n "$msg" ] && echo "$msg" | diag
	RESENDS=0

	for dt in float32 int32; do
		t0=$SECONDS
		# in the background: a signal to this script ends the bench
		# (cleanup) instead of waiting for it
		timeout -k 5 $BENCH_LIMIT "$rinxctl" bench --spec "$spec" \
			--verify --iters $ITERS --warmup 0 --dtype $dt \
			--sizes "$sizes" --timeout $TIMEOUT_MS >"$tmp" 2>&1 &
		bench_pid=$!
		wait $bench_pid
		rc=$?
		bench_pid=
		out=$(cat "$tmp")
		echo "$out" | diag
		echo "# ($dt: $((SECONDS - t0)) s)"
		ok $rc "$name: $dt: bench --verify exit status ($rc)"
		# blocks a trainer sent again after a stall it took for a loss
		r=$(echo "$out" | sed -nE \
			's/^# resends: ([0-9]+) blocks sent again.*/\1/p')
		RESENDS=$((RESENDS + ${r:-0}))
		msg=$(verified_sizes "$out" "$sizes")
		ok $? "$name: $dt: every size verified ok"
		[ -n "$msg" ] && echo "$msg" | diag
		msg=$(check_summary "$out" $dt)
		ok $? "$name: $dt: summary: every element ok, within the bound"
		[ -n "$msg" ] && echo "$msg" | diag
	done

	B=$(($(blocks_of "$sizes") * 2))	# two payload types
	load_counters "$spec" "$p"
	rc=$?
	[ -n "$LOAD_ERR" ] && echo "$LOAD_ERR" | diag
	if [ $rc -eq 0 ]; then
		msg=$(check_hosts 3>&1)
		ok $? "$name: no drop or abort counted by host programs"
		echo "$msg" | diag
		msg=$(check_switches)
		ok $? "$name: no drop or abort counted by switches and aggregators"
		[ -n "$msg" ] && echo "$msg" | diag
		msg=$(check_aggs "$p" "$B" "$M")
		ok $? "$name: every aggregator finished each of $B blocks once, multicast into its rack"
		[ -n "$msg" ] && echo "$msg" | diag
		msg=$(check_workers "$B")
		ok $? "$name: INA-rack workers got every block by multicast, recycled, did no ring hop"
		[ -n "$msg" ] && echo "$msg" | diag
		msg=$(check_plain "$M")
		ok $? "$name: autonomous hosts did the ring hops"
		[ -n "$msg" ] && echo "$msg" | diag
	else
		for i in 1 2 3 4 5; do
			ok 1 "$name: counter check $i (no counters)"
		done
	fi
	[ $fail -ne $fail0 ] && [ -n "$SHOW" ] && echo "$SHOW" | diag

	ctl testbed down "$p" 2>&1 | diag
	rc=${PIPESTATUS[0]}
	[ $rc -eq 0 ] && [ -z "$(ours "$p")" ] && [ ! -e "$spec" ]
	ok $? "$name: testbed down, no namespace or spec left"
	echo "# case $name: $((SECONDS - tc)) s"
}

needs_root ip timeout awk sed grep
trap cleanup EXIT
trap 'exit 1' INT TERM
tmp=$(mktemp) || exit 1

SHOW= LOAD_ERR=
echo "1..$((CASES * PER_CASE + 1))"
run_case a native 2 4 none,none "$SMALL"
run_case b native 2 4 switch,none "$LARGE"
run_case c native 2 4 agent,none "$SMALL"
run_case d native 3 2 switch,agent,none "$LARGE"
run_case e native 2 4 switch,switch "$SMALL"
run_case f native 2 4 agent,agent "$SMALL"
run_case g native 3 1 switch,agent,none "$SMALL"
run_case h native 2 8 none,agent "$SMALL"
run_case i native 2 8 switch,none "$SMALL"
run_case j native 1 4 switch "$SMALL"
run_case k native 1 4 agent "$SMALL"
run_case l generic 3 2 switch,agent,none "$SMALL"

left=$(timeout 20 ip netns list 2>/dev/null | awk '{print $1}' |
	grep -E "^${P}[a-l]")
[ -z "$left" ] && ! ls -d /run/rinx/"$P"[a-l] >/dev/null 2>&1
ok $? "no namespace or pin directory of prefix $P left"
[ -n "$left" ] && echo "$left" | diag
echo "# total $((SECONDS - start)) s"

if [ $fail -ne 0 ]; then
	echo "# $fail of $n failed"
	exit 1
fi
exit 0
