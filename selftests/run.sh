#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Run the rinx selftests and report one TAP line per test program.
#
#   selftests/run.sh <builddir> [filter] [-t PROG[/SUB][,...]] [-j N]
#
# Runs <builddir>/selftests/test_* (executables) and selftests/test_*.sh, each
# with the build directory as $1 and in RINX_BUILD. A program passes when it
# exits 0, its output has one TAP plan "1..N" with N > 0, exactly N check
# lines and none of them "not ok" (but for TODOs): a program that exits 0
# having run fewer checks than it planned fails. Exit code 4 skips (reason:
# its last "# SKIP" line), anything else fails; a program running longer
# than RINX_TEST_TIMEOUT seconds (default 900) is killed and fails. Only
# names containing [filter] run.
#
# -t selects by name: PROG is a program's name without "test_" and ".sh"
# (host, switch, docs; a glob), SUB one of its named subtests (a glob or a
# prefix: -t host/ring_repair, -t 'fuzz/sw*'); the programs get the
# selection in RINX_TEST_SELECT, plan the checks of the selected subtests
# and fail when a subtest runs another number of checks than it declares.
# A selection that runs no check at all fails, saying so.
#
# RINX_TEST_NS, when set, heads every testbed prefix and namespace name
# the tests make (a run's own mark: RINX_TEST_NS=ab selftests/run.sh ...).
#
# -j N runs up to N programs at once (default 1); a program whose source
# has a line "selftests: serial" (it measures, or takes the machine) runs
# alone. Output is kept per program and shown in the programs' order.
#
# Run without root, every program runs too: those that need no root pass
# or fail as with it, the others skip saying "needs root", and the last
# line counts them. The programs' own output is shown as TAP diagnostics;
# the end repeats, for every failed program, its failed checks with the
# diagnostic lines that follow each (the whole output of a long run is
# often seen only by its tail). The last line is
# "N passed, N failed, N skipped; subtests: N passed, N failed"
# (without root: "(M need root)" after it). Exits 1 if any test failed.

set -u

usage() {
	echo "usage: $0 <builddir> [filter] [-t PROG[/SUB][,...]] [-j N]" >&2
	exit 2
}

build="" filter="" select="" jobs=1
while [ $# -gt 0 ]; do
	case $1 in
	-t) [ $# -ge 2 ] || usage; select=$2; shift ;;
	-t*) select=${1#-t} ;;
	-j) [ $# -ge 2 ] || usage; jobs=$2; shift ;;
	-j*) jobs=${1#-j} ;;
	-h | --help) usage ;;
	-*) usage ;;
	*)
		if [ -z "$build" ]; then
			build=$1
		elif [ -z "$filter" ]; then
			filter=$1
		else
			usage
		fi
		;;
	esac
	shift
done
build=${build:-build}
timeout_s=${RINX_TEST_TIMEOUT:-900}
here=$(cd "$(dirname "$0")" && pwd)

if [ ! -d "$build" ] || ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
	usage
fi
build=$(cd "$build" && pwd)
export RINX_BUILD=$build
export RINX_TEST_SELECT=$select

# short NAME: a program's name in selections (test_host -> host)
short() {
	local s=${1%.sh}

	echo "${s#test_}"
}

# selected NAME: whether -t names program NAME (all are without -t)
selected() {
	local pat pats s

	[ -z "$select" ] && return 0
	s=$(short "$1")
	IFS=, read -ra pats <<<"$select"	# no pathname expansion
	for pat in "${pats[@]}"; do
		# shellcheck disable=SC2053	# a glob on purpose
		[[ $s == ${pat%%/*} ]] && return 0
	done
	return 1
}

# source_of PATH: the source of a test program
source_of() {
	case $1 in
	*.sh) echo "$1" ;;
	*) echo "$here/$(basename "$1").c" ;;
	esac
}

tests=()
for t in "$build"/selftests/test_* "$here"/test_*.sh; do
	[ -f "$t" ] || continue
	case $t in
	"$build"/selftests/*) [ -x "$t" ] || continue ;;
	esac
	name=$(basename "$t")
	[ -n "$filter" ] && [[ $name != *"$filter"* ]] && continue
	selected "$name" || continue
	tests+=("$t")
done

echo "TAP version 13"
if [ ${#tests[@]} -eq 0 ]; then
	what="${filter:+'$filter'}${filter:+${select:+ }}${select:+-t $select}"
	echo "1..0 # no test matches $what"
	echo "0 passed, 1 failed, 0 skipped: no test matches $what"
	exit 1
fi
echo "1..${#tests[@]}"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
n=0 pass=0 fail=0 skip=0 skip_root=0 sub_pass=0 sub_fail=0
failed=""

# plan_problem: what is wrong with the TAP of a program that exited 0 (its
# output in $out), nothing when its plan was met and no check failed. Only
# lines at the start of a line count: a program's children are shown
# indented or as diagnostics.
plan_problem() {
	awk '
		/^1\.\.[0-9]+/ {
			plans++
			planned = substr($1, 4) + 0
		}
		/^(not )?ok( |$)/ { ran++ }
		/^not ok/ && !/# *TODO/ { bad++ }
		END {
			if (plans == 0)
				print "no TAP plan (" ran + 0 " checks ran)"
			else if (plans > 1)
				print plans " TAP plans"
			else if (planned == 0)
				print "a plan of no check"
			else if (ran != planned)
				print "planned " planned " checks, ran " ran + 0
			else if (bad)
				print bad " checks not ok"
		}
	' "$out"
}

# failed_checks NAME: NAME's "not ok" lines, each with up to 6 diagnostic
# lines after it, prefixed by NAME (no output when the program failed
# without a failed check: its exit status says it).
failed_checks() {
	awk -v name="$1" '
		/^(# )?not ok/ { left = 7 }
		left > 0 { print "#   " name ": " $0; left-- }
	' "$out" | head -n 60
}
# run_one I T: runs program T, its output in $dir/I.out, then its exit
# status and seconds in $dir/I.rc (written last: the sign it is done). A
# shell program asked for a subtest when it has none skips, saying so.
run_one() {
	local i=$1 t=$2 start=$SECONDS rc sub

	sub=$(sub_without_table "$t")
	if [ -n "$sub" ]; then
		echo "1..0 # SKIP no subtest '$sub':" \
		     "$(short "$(basename "$t")") has none (select it whole)" \
		     >"$dir/$i.out"
		rc=4
	else
		case $t in
		*.sh) timeout -k 10 "$timeout_s" bash "$t" "$build" ;;
		*) timeout -k 10 "$timeout_s" "$t" "$build" ;;
		esac >"$dir/$i.out" 2>&1 </dev/null
		rc=$?
	fi
	echo "$rc $((SECONDS - start))" >"$dir/$i.rc.tmp"
	mv "$dir/$i.rc.tmp" "$dir/$i.rc"
}

# sub_without_table T: the SUB of a -t PROG/SUB naming shell program T when
# T declares no subtests (C programs say it themselves)
sub_without_table() {
	local pat pats s

	case $1 in *.sh) ;; *) return ;; esac
	grep -q '^[[:space:]]*subtests ' "$1" && return
	s=$(short "$(basename "$1")")
	IFS=, read -ra pats <<<"$select"	# no pathname expansion
	for pat in "${pats[@]}"; do
		[[ $pat == */* ]] || continue
		# shellcheck disable=SC2053	# a glob on purpose
		[[ $s == ${pat%%/*} ]] && { echo "${pat#*/}"; return; }
	done
}

# report I T: the TAP line of program I (T), its output as diagnostics
report() {
	local i=$1 t=$2 name rc secs why="" reason fc

	name=$(basename "$t")
	read -r rc secs <"$dir/$i.rc"
	out=$dir/$i.out
	sed 's/^/# /' "$out"
	sub_pass=$((sub_pass + $(grep -cE '^# subtest [^ ]+: ok' "$out")))
	sub_fail=$((sub_fail + $(grep -cE '^# subtest [^ ]+: FAIL' "$out")))
	[ "$rc" -eq 0 ] && why=$(plan_problem)
	case $rc in
	0)
		if [ -z "$why" ]; then
			echo "ok $i - $name"
			pass=$((pass + 1))
		else
			echo "not ok $i - $name # exit 0 but $why"
			fail=$((fail + 1))
		fi
		;;
	4)
		reason=$(grep -E '# SKIP' "$out" | tail -n 1 |
			 sed -E 's/.*# SKIP:? ?//')
		echo "ok $i - $name # SKIP ${reason:-skipped}"
		skip=$((skip + 1))
		case $reason in
		"needs root"*) skip_root=$((skip_root + 1)) ;;
		esac
		;;
	124 | 137)
		if [ "$rc" -eq 137 ] && [ "$secs" -lt "$timeout_s" ]; then
			echo "not ok $i - $name # killed (exit $rc)"
		else
			echo "not ok $i - $name # timed out after ${timeout_s}s"
		fi
		fail=$((fail + 1))
		;;
	*)
		echo "not ok $i - $name # exit $rc after ${secs}s"
		fail=$((fail + 1))
		;;
	esac
	if [ -n "$why" ] || { [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ]; }; then
		failed+="# $name (exit $rc):${why:+ $why}"$'\n'
		fc=$(failed_checks "$name")
		[ -n "$fc" ] && failed+="$fc"$'\n'
	fi
}

# serial T: whether program T must run alone
serial() {
	grep -q 'selftests: serial' "$(source_of "$1")" 2>/dev/null
}

# Programs start in order, up to $jobs at once (a serial one alone), and
# are reported in order as soon as each and those before it are done.
running=0 next_report=1
report_ready() {
	while [ "$next_report" -le "$n" ] && [ -f "$dir/$next_report.rc" ]; do
		report "$next_report" "${tests[next_report - 1]}"
		next_report=$((next_report + 1))
		running=$((running - 1))
	done
}
# wait_below K: until fewer than K programs run
wait_below() {
	while [ "$running" -ge "$1" ]; do
		report_ready
		[ "$running" -ge "$1" ] && sleep 0.2
	done
}
for t in "${tests[@]}"; do
	n=$((n + 1))
	if [ "$jobs" -eq 1 ]; then
		run_one "$n" "$t"
		running=1
	elif serial "$t"; then
		wait_below 1
		run_one "$n" "$t"
		running=1
	else
		wait_below "$jobs"
		run_one "$n" "$t" &
		running=$((running + 1))
		# a serial program next waits for this one too
	fi
	report_ready
done
wait
report_ready

[ -n "$failed" ] && printf '# failed checks:\n%s' "$failed"

if [ -n "$select" ] && [ $((pass + fail + sub_pass + sub_fail)) -eq 0 ]; then
	echo "# -t $select ran no check"
	fail=$((fail + 1))
fi
sum="$pass passed, $fail failed, $skip skipped"
sum+="; subtests: $sub_pass passed, $sub_fail failed"
if [ "$(id -u)" -eq 0 ]; then
	echo "$sum"
else
	echo "$sum ($skip_root need root)"
fi
[ "$fail" -eq 0 ]
