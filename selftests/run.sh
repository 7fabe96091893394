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
# output is shown as TAP diagnostics. Exits 1 if any test failed.

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
		[ $rc -eq 137 ] && [ $secs -lt "$timeout_s" ] && {
			echo "not ok $n - $name # killed (exit $rc)"
			fail=$((fail + 1))
			continue
		}
		echo "not ok $n - $name # timed out after ${timeout_s}s"
		fail=$((fail + 1))
		;;
	*)
		echo "not ok $n - $name # exit $rc after ${secs}s"
		fail=$((fail + 1))
		;;
	esac
done

echo "# pass $pass fail $fail skip $skip of $n"
[ "$fail" -eq 0 ]
