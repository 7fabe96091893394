#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Run every rinx selftest and report one TAP line per test program.
#
#   selftests/run.sh <builddir> [filter]
#
# Runs <builddir>/selftests/test_* (executables) and selftests/test_*.sh, each
# with the build directory as $1 and in RINX_BUILD. A program's exit code 0
# passes, 4 skips (reason: its last "# SKIP" line), anything else fails; a
# program running longer than RINX_TEST_TIMEOUT seconds (default 900) is
# killed and fails. Only names containing [filter] run. The programs' own
# output is shown as TAP diagnostics; the end repeats, for every failed
# program, its failed checks with the diagnostic lines that follow each (the
# whole output of a long run is often seen only by its tail). Exits 1 if any
# test failed.

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

if [ "$(id -u)" -ne 0 ]; then
	n=0
	for t in "${tests[@]}"; do
		n=$((n + 1))
		echo "ok $n - $(basename "$t") # SKIP needs root"
	done
	echo "# pass 0 fail 0 skip $n"
	exit 0
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
n=0 pass=0 fail=0 skip=0
failed=""

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
	case $rc in
	0)
		echo "ok $n - $name"
		pass=$((pass + 1))
		;;
	4)
		reason=$(grep -E '# SKIP' "$out" | tail -n 1 |
			 sed -E 's/.*# SKIP:? ?//')
		echo "ok $n - $name # SKIP ${reason:-skipped}"
		skip=$((skip + 1))
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
	[ $rc -ne 0 ] && [ $rc -ne 4 ] &&
		failed+="# $name (exit $rc):"$'\n'"$(failed_checks "$name")"$'\n'
done

[ -n "$failed" ] && printf '# failed checks:\n%s' "$failed"

echo "# pass $pass fail $fail skip $skip of $n"
[ "$fail" -eq 0 ]
