#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The README's usage block is rinxctl's --help, word for word; the man page
# was generated from the same binary and names every command.
set -u
build=${1:-${RINX_BUILD:-build}}
here=$(cd "$(dirname "$0")/.." && pwd)
n=0 fail=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi; }
echo "1..3"
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
exit $fail
