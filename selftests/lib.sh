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

# testbed $P down, and any namespace of it left over removed (a test with
# more to undo defines its own after sourcing this file)
cleanup() {
	"$rinxctl" testbed down "$P" >/dev/null 2>&1
	for ns in $(ours); do
		ip netns del "$ns" 2>/dev/null
	done
}
