# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Helpers of the shell selftests (sourced, not run): TAP lines and the
# namespaces of a testbed prefix. The sourcing test sets n=0 fail=0 and,
# for ours, P (its testbed prefix).

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
