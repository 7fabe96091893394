#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The README's usage block is rinxctl's --help, word for word; the man page
# was generated from the same binary and names every command. The README's
# first two commands are `make demo` and `make check`, and every command of
# its five-minute paths exists: make targets in the Makefile, rinxctl
# commands whose --help runs and lists every option the line gives, scripts
# that exist and know those options; `rinxctl doctor` of the host runs.
set -u
build=${1:-${RINX_BUILD:-build}}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/selftests/lib.sh"
n=0 fail=0

paths=$(awk '/^<!-- paths:/ { on = 1; next } on && /^## / { exit } on && /^    [a-z]/' "$here/README.md" |
	sed -e 's/^    //' -e 's/ \+#.*//')
# the README's path lines count the checks, not the checks that ran
docs_subs=("help:3" "first:1" "paths:$((1 + $(echo "$paths" | grep -c .)))")
[ "$(id -u)" = 0 ] && docs_subs+=("doctor:1")
subtests 0 "${docs_subs[@]}"

if subtest help; then
readme=$(awk '/^<!-- usage:/ { getline; on = 1; next } on && /^```/ { exit } on' "$here/README.md")
help=$("$build/rinxctl" --help)
[ "$readme" = "$help" ]; ok $? "README usage block equals rinxctl --help"
[ "$readme" = "$help" ] || diff <(echo "$readme") <(echo "$help") | sed 's/^/# /'
man=$(cat "$build/rinxctl.8" 2>/dev/null)
missing=0
for cmd in $(echo "$help" | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
	grep -q "^\.SS $cmd\$" <<<"$man" || { echo "# man page lacks $cmd"; missing=1; }
done
ok $missing "man page has a section for every command"
"$here/tools/mkman.sh" "$build/rinxctl" | cmp -s - "$build/rinxctl.8"; ok $? "man page is current"
fi

if subtest first; then

# the README's indented command lines, in order
first=$(awk '/^    [a-z]/ { sub(/^    /, ""); sub(/ +#.*/, ""); print; if (++k == 2) exit }' "$here/README.md")
[ "$first" = "$(printf 'make demo\nmake check')" ]
ok $? "README's first two commands are make demo and make check"
fi

# check_cmd WORDS...: one simple command of the README exists as written
check_cmd() {
	local cmd=$1 sub help w
	shift
	case $cmd in
	make)
		for w in "${@:-all}"; do
			grep -qE "^$w:" "$here/Makefile" || { echo "make target $w missing"; return 1; }
		done ;;
	build/rinxctl)
		sub=$1
		help=$("$build/rinxctl" "$sub" --help 2>&1) ||
			{ echo "rinxctl $sub --help failed"; return 1; }
		for w in "$@"; do
			case $w in --help) ;; --*) grep -q -- "$w" <<<"$help" ||
				{ echo "rinxctl $sub --help lacks $w"; return 1; } ;; esac
		done ;;
	tools/*)
		[ -x "$here/$cmd" ] || { echo "$cmd missing"; return 1; }
		for w in "$@"; do
			[ "$w" = -- ] && break	# the rest is the program's
			case $w in --*) grep -q -- "$w" "$here/$cmd" ||
				{ echo "$cmd lacks $w"; return 1; } ;; esac
		done
		# deps.sh GROUP: a group the script installs
		[ "${cmd##*/}" = deps.sh ] && { grep -q "^$1)" "$here/$cmd" ||
			{ echo "$cmd has no group $1"; return 1; }; }
		# train.py's options after --
		if [ "${cmd##*/}" = run.sh ]; then
			local after=0
			for w in "$@"; do
				[ "$w" = -- ] && { after=1; continue; }
				[ $after = 1 ] && case $w in --*) grep -q -- "\"$w\"" "$here/tools/train/train.py" ||
					{ echo "train.py lacks $w"; return 1; } ;; esac
			done
		fi ;;
	*)
		echo "unknown command $cmd"; return 1 ;;
	esac
	return 0
}

if subtest paths; then
[ "$(echo "$paths" | grep -c .)" -ge 8 ]
ok $? "README's five-minute paths: $(echo "$paths" | grep -c .) command lines"
while IFS= read -r line; do
	bad=0
	# simple commands joined by && and ;
	while IFS= read -r one; do
		# shellcheck disable=SC2086
		why=$(check_cmd $one) || { bad=1; echo "# $one: $why"; }
	done < <(echo "$line" | sed 's/ *&& */\n/g; s/ *; */\n/g')
	ok $bad "README path command exists: $line"
done <<<"$paths"
fi
if [ "$(id -u)" = 0 ] && subtest doctor; then
	out=$("$build/rinxctl" doctor 2>&1)
	rc=$?
	[ $rc = 0 ] && grep -q "can run rinx" <<<"$out"
	ok $? "rinxctl doctor runs on this host (exit $rc)"
	[ $rc = 0 ] || echo "$out" | sed 's/^/# /'
fi
subtests_done
[ "$fail" -eq 0 ]
