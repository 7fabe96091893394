#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Fails when the shared library exports a symbol the version script does not
# list, or lists one it does not export.
set -e
so=$1 map=$2
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBR]$/ { print $3 }' | sed 's/@.*//' | sort -u)
listed=$(sed -n 's/^[[:space:]]*\([a-z_0-9]*\);$/\1/p' "$map" | sort -u)
if [ "$exported" != "$listed" ]; then
	echo "abi-check: exported symbols differ from $map:" >&2
	printf '%s\n' "$exported" > /tmp/abi.$$.e
	printf '%s\n' "$listed" > /tmp/abi.$$.l
	diff /tmp/abi.$$.l /tmp/abi.$$.e >&2 || true
	rm -f /tmp/abi.$$.e /tmp/abi.$$.l
	exit 1
fi
echo "abi-check: $(echo "$exported" | wc -l) exported symbols, all listed"
