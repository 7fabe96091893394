# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Helpers of the shell selftests (sourced, not run): TAP lines, the
# namespaces of a testbed prefix and their cleanup. The sourcing test sets
# n=0 fail=0 and, for ours and cleanup, P (its testbed prefix) and rinxctl.

ok() {	# ok COND-EXIT-STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fail=$((fail + 1))
	fi
}

diag() { sed 's/^/# /'; }

# the namespaces of testbed $P that exist
ours() {
	ip netns list 2>/dev/null | awk '{print $1}' |
		grep -E "^${P}(h[0-9]+|t[0-9]+|sp)\$"
}

# the namespaces of testbed prefix $1 (tests with several testbeds)
ours_of() {
	ip netns list 2>/dev/null | awk '{print $1}' |
		grep -E "^${1}(h[0-9]+|t[0-9]+|sp)\$"
}

# every testbed whose prefix is in the array `used` down, and what is left
# of their namespaces removed
cleanup_used() {
	local p ns

	for p in "${used[@]}"; do
		"$rinxctl" testbed down "$p" >/dev/null 2>&1
		for ns in $(ours_of "$p"); do
			ip netns del "$ns" 2>/dev/null
		done
	done
}

# testbed $P down, and any namespace of it left over removed (a test with
# more to undo defines its own after sourcing this file)
cleanup() {
	"$rinxctl" testbed down "$P" >/dev/null 2>&1
	for ns in $(ours); do
		ip netns del "$ns" 2>/dev/null
	done
}

# cleanup_groups: what cleanup does, after killing the process groups led
# by the pids in $pids (ranks started with set -m) and removing $tmp
cleanup_groups() {
	local p

	for p in "${pids[@]}"; do
		kill -9 -- "-$p" 2>/dev/null
	done
	rm -rf "$tmp"
	cleanup
}

# needs_root TOOL...: ends the test with a TAP skip (exit 4) unless it runs
# as root, every TOOL is installed and $rinxctl is built
needs_root() {
	local tool

	if [ "$(id -u)" != 0 ]; then
		echo "1..0 # SKIP needs root (namespaces, XDP)"
		exit 4
	fi
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null; then
			echo "1..0 # SKIP $tool not installed"
			exit 4
		fi
	done
	if [ ! -x "$rinxctl" ]; then
		echo "1..0 # SKIP $rinxctl not built (make)"
		exit 4
	fi
}

# needs_python FILE: needs_root, Debian's python3 ($python) with numpy
# and torch, and the package's FILE built under $build/python/rinx
needs_python() {
	needs_root ip timeout awk
	if [ ! -x "$python" ]; then
		echo "1..0 # SKIP $python missing (tools/deps.sh python)"
		exit 4
	fi
	if ! "$python" -c 'import numpy, torch' 2>/dev/null; then
		echo "1..0 # SKIP python3-torch or python3-numpy missing" \
		     "(tools/deps.sh python)"
		exit 4
	fi
	if [ ! -f "$build/python/rinx/$1" ]; then
		echo "1..0 # SKIP $build/python/rinx not built (make)"
		exit 4
	fi
}

# testbed $P down once it was brought up ($up = 1) and the test's scratch
# directory $logs removed (the Python tests' cleanup)
cleanup_logs() {
	[ "$up" -eq 1 ] && cleanup
	[ -n "$logs" ] && rm -rf "$logs"
}

# tap_checks PREFIX TEXT: every "0|1<TAB>name<TAB>why" line of TEXT (0:
# passed) becomes the TAP line "PREFIXname", why a diagnostic when it
# failed; other lines are diagnostics. Sets nchecks to the TAP lines made.
tap_checks() {
	local st name why

	nchecks=0
	while IFS=$'\t' read -r st name why; do
		case $st in
		0|1)
			[ -n "$name" ] || continue
			nchecks=$((nchecks + 1))
			ok "$st" "$1$name"
			[ "$st" = 0 ] || [ -z "$why" ] || echo "$why" | diag
			;;
		*)
			[ -n "$st$name" ] && echo "$st $name $why" | diag
			;;
		esac
	done <<<"$2"
}

# plan N: the TAP plan, before the first check (the runner fails a test
# that ran another number of checks)
plan() {
	planned=$1
	echo "1..$1"
}

# testbed_up WHAT ARGS...: testbed $P up with ARGS (its output as
# diagnostics) and the check "testbed up (WHAT, prefix $P)"; without a
# testbed the test bails out. Sets up=1 (the cleanup's cue) and spec.
testbed_up() {
	local what=$1 out rc

	shift
	up=1
	out=$("$rinxctl" testbed up --prefix "$P" "$@" 2>&1)
	rc=$?
	echo "$out" | diag
	ok $rc "testbed up ($what, prefix $P)"
	spec=/run/rinx-testbed/$P.spec
	if [ $rc -ne 0 ]; then
		echo "Bail out! no testbed"
		exit 1
	fi
}

# testbed $P down (its status) and checked gone (with its spec $spec), then
# the TAP plan unless the test declared it (plan) and the test's exit status
testbed_down_end() {
	local rc

	subtests_done
	"$rinxctl" testbed down "$P" 2>&1 | diag
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] && [ -z "$(ours)" ] && [ ! -e "$spec" ]
	ok $? "testbed down (exit $rc), no namespace or spec left"
	up=0
	[ -n "${planned:-}" ] || echo "1..$n"
	if [ $fail -ne 0 ]; then
		echo "# $fail of $n failed"
		exit 1
	fi
	exit 0
}

# verified_sizes OUT SIZES: `rinxctl bench --verify` output OUT has a line
# for every size of the comma-separated SIZES (bytes) whose verify column
# is "ok"; prints what is wrong, returns 1 then
verified_sizes() {
	local out=$1 sizes=$2 s v bad=0

	for s in ${sizes//,/ }; do
		v=$(echo "$out" | awk -v s="$s" \
			'$1 == s && $2 == s / 4 { print $NF }')
		if [ "$v" != ok ]; then
			echo "size $s: verify column '${v:-missing}'"
			bad=1
		fi
	done
	return $bad
}

# bench_verified NAME FRAMELEN SIZES ARGS...: one check, a `rinxctl bench
# --verify` run over SIZES on $spec (bounded by $LIMIT s, collectives by
# $TIMEOUT_MS) whose every element of every size is verified and whose
# frames line says FRAMELEN bytes
bench_verified() {
	local name=$1 flen=$2 sizes=$3 out rc vs

	shift 3
	out=$(timeout -k 5 $LIMIT "$rinxctl" bench --spec "$spec" --verify \
		--iters 2 --warmup 1 --sizes "$sizes" --timeout $TIMEOUT_MS \
		"$@" 2>&1)
	rc=$?
	echo "$out" | diag
	verified_sizes "$out" "$sizes" | diag
	vs=${PIPESTATUS[0]}
	[ $rc -eq 0 ] && [ "$vs" -eq 0 ] &&
		echo "$out" | grep -q '^# verify: every element ok;' &&
		echo "$out" | grep -q "^# frames: $flen bytes,"
	ok $? "$name: every element of every size verified, $flen-byte frames"
}

# ---- named subtests (selftests/run.sh -t PROG/SUB) ----
#
#	subtests 1 "setup:2" "ring:$nring"	the plan: 1 check outside any
#						subtest, 2 in setup, ...
#	ok ...					(the check outside)
#	if subtest setup; then ...; fi		runs when selected
#	subtests_done				closes the last one
#
# A subtest declares its checks up front (counted from its cases); one that
# runs another number fails. PROG is the script's name without test_ and
# .sh; SUB a glob or a prefix; RINX_TEST_SELECT holds the selection.

# sub_selected NAME: whether subtest NAME of this script is selected
sub_selected() {
	local pat pats p s prog

	[ -z "${RINX_TEST_SELECT:-}" ] && return 0
	prog=$(basename "$0" .sh)
	prog=${prog#test_}
	IFS=, read -ra pats <<<"$RINX_TEST_SELECT"	# no pathname expansion
	for pat in "${pats[@]}"; do
		p=${pat%%/*}
		# shellcheck disable=SC2053	# globs on purpose
		[[ $prog == $p ]] || continue
		[[ $pat == */* ]] || return 0
		s=${pat#*/}
		[[ $1 == $s || $1 == "$s"* ]] && return 0
	done
	return 1
}

# subtests FIXED NAME:CHECKS...: declares the subtests, prints the plan of
# the selected ones (exit 4 when none is)
subtests() {
	local fixed=$1 d total nsel=0

	shift
	sub_decl=("$@")
	total=$fixed
	for d in "$@"; do
		sub_selected "${d%%:*}" || continue
		total=$((total + ${d#*:}))
		nsel=$((nsel + 1))
	done
	if [ $nsel -eq 0 ]; then
		echo "1..0 # SKIP no subtest of $(basename "$0") matches" \
		     "'${RINX_TEST_SELECT:-}'"
		exit 4
	fi
	sub_cur=""
	plan "$total"
}

# subtests_done: closes the running subtest (its checks against its count)
subtests_done() {
	local d want=-1 ran

	[ -n "${sub_cur:-}" ] || return 0
	for d in "${sub_decl[@]}"; do
		[ "${d%%:*}" = "$sub_cur" ] && want=${d#*:}
	done
	ran=$((n - sub_n0))
	if [ "$ran" -ne "$want" ]; then
		echo "# subtest $sub_cur: FAIL (planned $want checks, ran $ran)"
		fail=$((fail + 1))
	elif [ "$fail" -ne "$sub_f0" ]; then
		echo "# subtest $sub_cur: FAIL ($((fail - sub_f0)) of $ran" \
		     "checks failed)"
	else
		echo "# subtest $sub_cur: ok ($ran checks)"
	fi
	sub_cur=""
}

# subtest NAME: closes the previous subtest; true when NAME is selected
subtest() {
	subtests_done
	sub_selected "$1" || return 1
	sub_cur=$1 sub_n0=$n sub_f0=$fail
	echo "# subtest $(basename "$0" .sh | sed 's/^test_//')/$1"
	return 0
}
