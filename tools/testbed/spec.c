// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The testbed's spec: the names it gives its namespaces, the spec it
 * writes for `testbed up` and the checks of its options.
 */
#include <ctype.h>
#include <arpa/inet.h>
#include "tools/testbed/tb.h"

int rinx_testbed_prefix_check(const char *prefix, char *err, size_t errlen)
{
	size_t i, n = prefix ? strlen(prefix) : 0;

	if (n < 1 || n > RINX_TB_PREFIX_MAX) {
		snprintf(err, errlen, "prefix must have 1..%d characters",
			 RINX_TB_PREFIX_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)prefix[i]) && prefix[i] != '_') {
			snprintf(err, errlen, "prefix '%s': only letters, "
				 "digits and '_' are allowed", prefix);
			return -EINVAL;
		}
	}
	return 0;
}

void rinx_testbed_spec_path(const char *prefix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.spec", RINX_TB_SPEC_DIR, prefix);
}

void host_ns(char *buf, const char *prefix, int i)
{
	snprintf(buf, NS_NAME_MAX, "%sh%d", prefix, i);
}

void tor_ns(char *buf, const char *prefix, int r)
{
	snprintf(buf, NS_NAME_MAX, "%st%d", prefix, r);
}

void spine_ns(char *buf, const char *prefix)
{
	snprintf(buf, NS_NAME_MAX, "%ssp", prefix);
}

int rinx_testbed_spec_prefix(const struct rinx_spec *s, char *buf,
			     size_t len)
{
	const char *ns;
	size_t n;

	if (s->nhosts < 1 || !s->hosts[0].netns[0])
		return -EINVAL;
	/* Host 0's namespace is <prefix>h<digits>. */
	ns = s->hosts[0].netns;
	n = strlen(ns);
	while (n && isdigit((unsigned char)ns[n - 1]))
		n--;
	if (n < 2 || n == strlen(ns) || ns[n - 1] != 'h' || n - 1 >= len)
		return -EINVAL;
	memcpy(buf, ns, n - 1);
	buf[n - 1] = 0;
	return is_ours(buf, ns) ? 0 : -EINVAL;
}

void build_spec(const struct rinx_testbed_opts *o,
		struct rinx_spec *s)
{
	int r, h, i = 0;

	rinx_spec_init(s);
	s->port = o->port ? o->port : RINX_DEFAULT_PORT;
	/* The spec's defaults (window, jobs): the memory a host pins stays
	 * within RINX_NODE_MEM_BUDGET whatever the tensors. */
	s->window = o->window ? o->window : RINX_DEFAULT_WINDOW;
	if (o->jobs)
		s->jobs = o->jobs;
	s->mode = o->mode;
	snprintf(s->pin, sizeof(s->pin), "%s/%s",
		 o->pin ? o->pin : RINX_TB_PIN_ROOT, o->prefix);
	s->nracks = o->racks;
	for (r = 0; r < o->racks; r++) {
		struct rinx_spec_rack *k = &s->racks[r];

		k->id = r;
		k->ina = o->ina ? o->ina[r] : RINX_INA_NONE;
		if (k->ina == RINX_INA_SWITCH) {
			/* The aggregator lives in the ToR: 10.71.<r>.254,
			 * 02:72:78:fe:<r>:01 (hosts use .1-.32, 00:<r>). */
			__u8 mac[6] = { 0x02, 0x72, 0x78, 0xfe, r, 0x01 };

			snprintf(k->name, sizeof(k->name), "agg%d", r);
			memcpy(k->mac, mac, 6);
			k->ip = htonl(TB_NET_A << 24 | TB_NET_B << 16 | r << 8 |
				      TB_AGG_HOST);
			tor_ns(k->netns, o->prefix, r);
		}
		for (h = 0; h < o->hosts_per_rack; h++, i++) {
			struct rinx_spec_host *x = &s->hosts[i];
			__u8 mac[6] = { 0x02, 0x72, 0x78, 0, r, h + 1 };

			snprintf(x->name, sizeof(x->name), "h%d", i);
			x->rank = i;
			x->rack = r;
			snprintf(x->ifname, sizeof(x->ifname), "eth0");
			memcpy(x->mac, mac, 6);
			x->ip = htonl(TB_NET_A << 24 | TB_NET_B << 16 | r << 8 |
				      (h + 1));
			host_ns(x->netns, o->prefix, i);
			x->link_mbit = o->link ? o->link->rate_mbit : 0;
		}
		if (o->racks > 1)
			k->uplink_mbit = o->link ? o->link->rate_mbit : 0;
	}
	s->nhosts = i;
}

int check_opts(const struct rinx_testbed_opts *o)
{
	char err[128];
	int r;

	if (rinx_testbed_prefix_check(o->prefix, err, sizeof(err))) {
		pr_warn("%s\n", err);
		return -EINVAL;
	}
	if (o->racks < 1 || o->racks > RINX_TB_MAX_RACKS) {
		pr_warn("racks must be 1..%d\n", RINX_TB_MAX_RACKS);
		return -EINVAL;
	}
	if (o->hosts_per_rack < 1 ||
	    o->hosts_per_rack > RINX_TB_MAX_PER_RACK) {
		pr_warn("hosts per rack must be 1..%d\n",
			RINX_TB_MAX_PER_RACK);
		return -EINVAL;
	}
	if (o->racks * o->hosts_per_rack > RINX_MAX_NODES) {
		pr_warn("at most %d hosts (asked for %d x %d)\n",
			RINX_MAX_NODES, o->racks, o->hosts_per_rack);
		return -EINVAL;
	}
	if (o->mode != RINX_XDP_NATIVE && o->mode != RINX_XDP_GENERIC) {
		pr_warn("mode must be native or generic\n");
		return -EINVAL;
	}
	if (o->mtu && (o->mtu < RINX_TB_MTU_MIN || o->mtu > RINX_TB_MTU_MAX)) {
		pr_warn("mtu must be %d..%d (rinx frames need at least %d)\n",
			RINX_TB_MTU_MIN, RINX_TB_MTU_MAX, RINX_TB_MTU_MIN);
		return -EINVAL;
	}
	if (o->queues < 0 || o->queues > RINX_TB_MAX_QUEUES) {
		pr_warn("queues must be 1..%d\n", RINX_TB_MAX_QUEUES);
		return -EINVAL;
	}
	if (o->pin && (o->pin[0] != '/' ||
		       strlen(o->pin) + RINX_TB_PREFIX_MAX + 2 >
		       RINX_PATH_MAX - RINX_NAME_MAX)) {
		pr_warn("pin root must be a short absolute path\n");
		return -EINVAL;
	}
	if (o->spec_out && strlen(o->spec_out) >= RINX_PATH_MAX) {
		pr_warn("spec path too long\n");
		return -EINVAL;
	}
	for (r = 0; o->ina && r < o->racks; r++) {
		if (o->ina[r] < RINX_INA_NONE || o->ina[r] > RINX_INA_AGENT) {
			pr_warn("rack %d: bad INA kind\n", r);
			return -EINVAL;
		}
		if (o->plain && o->ina[r] == RINX_INA_SWITCH) {
			pr_warn("rack %d: a plain ToR cannot aggregate (ina "
				"switch); use agent or none\n", r);
			return -EINVAL;
		}
	}
	return 0;
}
