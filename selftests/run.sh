#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Run every rinx selftest and report one TAP line per test program.
#
#   selftests/run.sh <builddir> [filter]
#
# Runs <builddir>/selftests/test_* (executables) and selftests/test_*.sh, each
# with the build directory as $1 and in RINX_BUILD. A program passes when it
# exits 0, its output has one TAP plan "1..N" with N > 0, exactly N check
# lines and none of them "not ok" (but for TODOs): a program that exits 0
# having run fewer checks than it planned fails. Exit code 4 skips (reason:
# its last "# SKIP" line), anything else fails; a program running longer
# than RINX_TEST_TIMEOUT seconds (default 900) is killed and fails. Only
# names containing [filter] run. Run without root, every program runs too:
# those that need no root pass or fail as with it, the others skip saying
# "needs root", and the last line counts them. The programs' own output is
# shown as TAP diagnostics; the end repeats, for every failed program, its
# failed checks with the diagnostic lines that follow each (the whole output
# of a long run is often seen only by its tail). The last line is
# "N passed, N failed, N skipped" (without root: "(M need root)" after it).
# Exits 1 if any test failed.

set -u

build=${1:-build}
filter=${2:-}
timeout_s=${RINX_TEST_TIMEOUT:-900}
here=$(cd "$(dirname "$0")" && pwd)

if [ ! -d "$build" ]; then
	echo "usage: $0 <builddir> [filter]" >&2
	exit 2
fi
build=$(cd "$build" && pwd)
export RINX_BUILD=$build

tests=()
for t in "$build"/selftests/test_* "$here"/test_*.sh; do
	[ -f "$t" ] || continue
	case $t in
	"$build"/selftests/*) [ -x "$t" ] || continue ;;
	esac
	name=$(basename "$t")
	[ -n "$filter" ] && [[ $name != *"$filter"* ]] && continue
	tests+=("$t")
done

echo "TAP version 13"
if [ ${#tests[@]} -eq 0 ]; then
	echo "1..0 # SKIP no test matches '${filter}'"
	exit 0
fi
echo "1..${#tests[@]}"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
n=0 pass=0 fail=0 skip=0 skip_root=0
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
for t in "${tests[@]}"; do
	n=$((n + 1))
	name=$(basename "$t")
	start=$SECONDS
	case $t in
	*.sh) timeout -k 10 "$timeout_s" bash "$t" "$build" >"$out" 2>&1 ;;
	*) timeout -k 10 "$timeout_s" "$t" "$build" >"$out" 2>&1 ;;
	esac
	rc=$?
	secs=$((SECONDS - start))
	sed 's/^/# /' "$out"
	why=""
	[ $rc -eq 0 ] && why=$(plan_problem)
	case $rc in
	0)
		if [ -z "$why" ]; then
			echo "ok $n - $name"
			pass=$((pass + 1))
		else
			echo "not ok $n - $name # exit 0 but $why"
			fail=$((fail + 1))
		fi
		;;
	4)
		reason=$(grep -E '# SKIP' "$out" | tail -n 1 |
			 sed -E 's/.*# SKIP:? ?//')
		echo "ok $n - $name # SKIP ${reason:-skipped}"
		skip=$((skip + 1))
		case $reason in
		"needs root"*) skip_root=$((skip_root + 1)) ;;
		esac
		;;
	124 | 137)
		if [ $rc -eq 137 ] && [ $secs -lt "$timeout_s" ]; then
			echo "not ok $n - $name # killed (exit $rc)"
		else
			echo "not ok $n - $name # timed out after ${timeout_s}s"
		fi
		fail=$((fail + 1))
		;;
	*)
		echo "not ok $n - $name # exit $rc after ${secs}s"
		fail=$((fail + 1))
		;;
	esac
	if [ -n "$why" ] || { [ $rc -ne 0 ] && [ $rc -ne 4 ]; }; then
		failed+="# $name (exit $rc):${why:+ $why}"$'\n'
		fc=$(failed_checks "$name")
		[ -n "$fc" ] && failed+="$fc"$'\n'
	fi
done

[ -n "$failed" ] && printf '# failed checks:\n%s' "$failed"

if [ "$(id -u)" -eq 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed, $skip skipped ($skip_root need root)"
fi
[ "$fail" -eq 0 ]
