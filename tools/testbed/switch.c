// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The switches: loading bpf/switch.bpf.c in a switch's namespace, its
 * tables and ports, pins, and its counters.
 */
#include <sys/wait.h>
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include "tools/testbed/tb.h"

static const char *const sw_stat_names[RINX_SW_STAT_MAX] = {
	[RINX_SW_FWD] = "fwd",
	[RINX_SW_FLOOD] = "flood",
	[RINX_SW_DROP_SHORT] = "drop_short",
	[RINX_SW_DROP_NO_PORT] = "drop_no_port",
	[RINX_SW_DROP_HAIRPIN] = "drop_hairpin",
	[RINX_SW_INA_FWD] = "ina_fwd",
	[RINX_SW_INA_GROUP] = "ina_group",
	[RINX_SW_INA_DROP] = "ina_drop",
	[RINX_SW_INA_ABORTED] = "ina_aborted",
	[RINX_SW_GROUP] = "group",
	[RINX_SW_HAIRPIN_SELF] = "hairpin_self",
	[RINX_SW_DROP_NO_NEIGH] = "drop_no_neigh",
	[RINX_SW_FAULT_DROP] = "fault_drop",
	[RINX_SW_QUEUE_DROP] = "queue_drop",
	[RINX_SW_FAULT_DUP] = "fault_dup",
	[RINX_SW_FAULT_HOLD] = "fault_hold",
	[RINX_SW_FAULT_REORDER] = "fault_reorder",
	[RINX_SW_FAULT_HOLD_LOST] = "fault_hold_lost",
	[RINX_SW_FAULT_SKIP] = "fault_skip",
	[RINX_SW_ECN_MARK] = "ecn_mark",
	[RINX_SW_ECN_NOT_ECT] = "ecn_not_ect",
	[RINX_SW_CLASS_GROUP] = "class_group",
	[RINX_SW_CAP_DROP] = "cap_drop",
	[RINX_SW_CAP_MARK] = "cap_mark",
	[RINX_SW_REAL_HELD] = "real_held",
	[RINX_SW_REAL_NONE] = "real_none",
};

const char *rinx_sw_stat_name(int stat)
{
	if (stat < 0 || stat >= RINX_SW_STAT_MAX || !sw_stat_names[stat])
		return "?";
	return sw_stat_names[stat];
}

__u64 mac_key(const __u8 mac[6])
{
	__u64 k = 0;

	memcpy(&k, mac, 6);
	return k;
}

int map_set(int fd, const void *k, const void *v, const char *ns,
	    const char *what)
{
	if (bpf_map_update_elem(fd, k, v, BPF_ANY)) {
		int err = -errno;

		pr_warn("switch %s: %s: %s\n", ns, what, strerror(errno));
		return err;
	}
	return 0;
}

/* Pins a loaded switch's maps: the aggregator's of rack ina (NULL: it
 * does not aggregate) and the links'. *pinned says what was pinned (1:
 * the aggregator's, 2: both) for switch_unpin. 0 or -errno. */
int switch_pin(const struct rinx_spec *s,
	       const struct rinx_spec_rack *ina, const char *ns,
	       struct switch_bpf *skel, int *pinned)
{
	int err;

	*pinned = 0;
	if (ina) {
		err = agg_pin(s, ina, skel);
		if (err)
			return err;
		*pinned = 1;
	}
	err = link_pin(s, ns, skel);
	if (!err)
		*pinned = 2;
	return err;
}

/* Undoes what switch_pin pinned (a switch that failed to come up). */
void switch_unpin(const struct rinx_spec *s,
		  const struct rinx_spec_rack *ina, const char *ns,
		  int pinned)
{
	if (pinned && ina)
		agg_unpin(s, ina);
	if (pinned == 2)
		link_unpin(s, ns);
}

/* Opens and loads the switch program for switch namespace ns (the caller
 * is in it): rack id (0xff: the spine), a topology switch or not, the
 * aggregator's MAC if it aggregates (NULL: not). 0 or -errno, with a
 * message; *skel is set whenever it was opened (the caller destroys it). */
int switch_load(const struct rinx_spec *s, const char *ns, __u8 rack,
		int topo, int plain, const __u8 *ina_mac,
		struct switch_bpf **skel)
{
	struct switch_bpf *k;
	int err;

	*skel = k = switch_bpf__open();
	if (!k) {
		err = -errno;
		pr_warn("switch %s: cannot open the switch program: %s\n", ns,
			strerror(errno));
		return err;
	}
	k->rodata->sw_rack = rack;
	k->rodata->sw_topo = topo;
	k->rodata->sw_plain = plain;
	k->rodata->ina_port_be = htons(s->port);
	k->rodata->ina_window = s->window;
	if (ina_mac) {
		memcpy((void *)k->rodata->ina_mac, ina_mac, 6);
		err = bpf_map__set_max_entries(k->maps.aggs,
					       s->jobs * s->window);
		if (err)
			return err;
	}
	rinx_size_tables(k->maps.jobs, k->maps.claims, k->maps.nodes,
			 k->maps.hops, s->jobs);
	err = switch_bpf__load(k);
	if (err)
		pr_warn("switch %s: switch program rejected by the kernel: %s "
			"(rerun with -v for the verifier log)\n", ns,
			strerror(-err));
	return err;
}

/* Attaches the switch program prog to the n ports of switch namespace ns
 * (the caller is in it). 0 or -errno, with a message. */
int attach_ports(const struct rinx_spec *s, const char *ns,
		 const char (*ifname)[IFNAMSIZ], const int *ifindex,
		 int n, int prog, __u32 flags)
{
	int i, err;

	for (i = 0; i < n; i++) {
		err = bpf_xdp_attach(ifindex[i], prog, flags, NULL);
		if (err) {
			pr_warn("switch %s: cannot attach XDP (%s mode) to %s: "
				"%s\n", ns, s->mode == RINX_XDP_GENERIC ?
				"generic" : "native", ifname[i], strerror(-err));
			return err;
		}
	}
	return 0;
}

/* The switch's ports (devmap, egress program, link state), their
 * ifindexes into ifindex. */
static int switch_ports(struct switch_bpf *skel, const struct tb_switch *sw,
			const struct rinx_sw_link_set *link, int *ifindex)
{
	int port_egress = bpf_program__fd(skel->progs.rinx_port_egress);
	int group_egress = bpf_program__fd(skel->progs.rinx_group_egress);
	int i, err;

	for (i = 0; i < sw->nports; i++) {
		__u32 idx = if_nametoindex(sw->ifname[i]);
		struct bpf_devmap_val v = { .ifindex = idx };

		if (!idx) {
			pr_warn("switch %s: no port %s\n", sw->ns,
				sw->ifname[i]);
			return -ENODEV;
		}
		ifindex[i] = idx;
		/* see `ports` in switch.bpf.c: a port's egress program must
		 * be the same in every map (ports, groups, dups) */
		v.bpf_prog.fd = i == sw->uplink && sw->rack >= 0 ?
				group_egress : port_egress;
		err = map_set(bpf_map__fd(skel->maps.ports), &idx, &v, sw->ns,
			      "devmap");
		if (!err)
			err = link_port_init(skel, sw->ns, idx,
					     v.bpf_prog.fd, link);
		if (err)
			return err;
	}
	return 0;
}

/* The MAC table and the neighbours (IP -> MAC) of every node. */
static int switch_macs(struct switch_bpf *skel, const struct rinx_spec *s,
		       const struct tb_switch *sw, const int *ifindex)
{
	int i, fd, err;

	/* MAC table: every host, and the aggregators of the other racks
	 * (a ToR's own aggregator takes its frames before the table). */
	fd = bpf_map__fd(skel->maps.macs);
	for (i = 0; i < s->nhosts; i++) {
		struct rinx_sw_port p = {
			.port = ifindex[sw->host_port[i]],
		};
		__u64 k = mac_key(s->hosts[i].mac);

		err = map_set(fd, &k, &p, sw->ns, "mac table");
		if (err)
			return err;
	}
	for (i = 0; i < s->nracks; i++) {
		const struct rinx_spec_rack *r = &s->racks[i];
		struct rinx_sw_port p = {};
		__u64 k = mac_key(r->mac);

		if (r->ina != RINX_INA_SWITCH || i == sw->rack ||
		    sw->agg_port[i] < 0)
			continue;
		p.port = ifindex[sw->agg_port[i]];
		err = map_set(fd, &k, &p, sw->ns, "mac table");
		if (err)
			return err;
	}
	/* IP -> MAC of every node, for the uplink copy of a group frame. */
	fd = bpf_map__fd(skel->maps.neigh);
	for (i = 0; i < s->nhosts; i++) {
		__u64 m = mac_key(s->hosts[i].mac);

		err = map_set(fd, &s->hosts[i].ip, &m, sw->ns, "neigh");
		if (err)
			return err;
	}
	for (i = 0; i < s->nracks; i++) {
		__u64 m = mac_key(s->racks[i].mac);

		if (s->racks[i].ina != RINX_INA_SWITCH)
			continue;
		err = map_set(fd, &s->racks[i].ip, &m, sw->ns, "neigh");
		if (err)
			return err;
	}
	return 0;
}

/* The rack's groups: host ports, and host ports + uplink. */
static int switch_groups(struct switch_bpf *skel, const struct tb_switch *sw,
			 const int *ifindex)
{
	int i, err;

	for (i = 0; sw->rack >= 0 && i < sw->nports; i++) {
		struct bpf_devmap_val v = {
			.ifindex = ifindex[i],
			.bpf_prog.fd = bpf_program__fd(skel->progs.rinx_port_egress),
		};

		if (i == sw->uplink) {
			v.bpf_prog.fd =
				bpf_program__fd(skel->progs.rinx_group_egress);
		} else {
			err = map_set(bpf_map__fd(skel->maps.group_hosts),
				      &ifindex[i], &v, sw->ns, "group_hosts");
			if (err)
				return err;
		}
		err = map_set(bpf_map__fd(skel->maps.group_all), &ifindex[i],
			      &v, sw->ns, "group_all");
		if (err)
			return err;
	}
	return 0;
}

int switch_attach(const struct rinx_spec *s, const struct tb_switch *sw,
		  const struct rinx_sw_link_set *link)
{
	__u32 flags = XDP_FLAGS_UPDATE_IF_NOEXIST |
		      (s->mode == RINX_XDP_GENERIC ? XDP_FLAGS_SKB_MODE :
						     XDP_FLAGS_DRV_MODE);
	const struct rinx_spec_rack *ina = NULL;
	int ifindex[RINX_TB_MAX_PER_RACK + 1];
	struct switch_bpf *skel = NULL;
	int old, err, pinned = 0;

	if (sw->rack >= 0 && s->racks[sw->rack].ina == RINX_INA_SWITCH)
		ina = &s->racks[sw->rack];
	err = rinx_netns_enter(sw->ns, &old);
	if (err)
		return err;
	err = switch_load(s, sw->ns,
			  sw->rack >= 0 ? s->racks[sw->rack].id : 0xff, 0,
			  sw->plain, ina ? ina->mac : NULL, &skel);
	if (!err)
		err = switch_ports(skel, sw, link, ifindex);
	if (!err)
		err = switch_macs(skel, s, sw, ifindex);
	if (!err)
		err = switch_groups(skel, sw, ifindex);
	if (!err)
		err = switch_pin(s, ina, sw->ns, skel, &pinned);
	if (!err)
		err = attach_ports(s, sw->ns, sw->ifname, ifindex, sw->nports,
				   bpf_program__fd(skel->progs.rinx_switch),
				   flags);
	if (err)
		switch_unpin(s, ina, sw->ns, pinned);
	/* The attached program holds itself and its maps. */
	switch_bpf__destroy(skel);
	rinx_netns_leave(old);
	return err;
}

int rinx_testbed_switch_stats(const char *netns, const char *ifname,
			      __u64 out[RINX_SW_STAT_MAX])
{
	struct bpf_prog_info pinfo = {};
	__u32 map_ids[64], plen = sizeof(pinfo), prog_id = 0, i;
	int old, err, ifindex, fd = -1, mfd = -1, ncpu;

	memset(out, 0, sizeof(__u64) * RINX_SW_STAT_MAX);
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	err = rinx_netns_enter(netns, &old);
	if (err)
		return err;
	ifindex = if_nametoindex(ifname);
	if (!ifindex) {
		err = -ENODEV;
		goto out;
	}
	err = bpf_xdp_query_id(ifindex, 0, &prog_id);
	if (!err && !prog_id)
		err = -ENOENT;
	if (err)
		goto out;
	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	pinfo.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
	pinfo.map_ids = (__u64)(unsigned long)map_ids;
	if (bpf_obj_get_info_by_fd(fd, &pinfo, &plen)) {
		err = -errno;
		goto out;
	}
	err = -ENOENT;
	for (i = 0; i < pinfo.nr_map_ids && i < 64; i++) {
		struct bpf_map_info minfo = {};
		__u32 mlen = sizeof(minfo);

		mfd = bpf_map_get_fd_by_id(map_ids[i]);
		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &minfo, &mlen) &&
		    !strcmp(minfo.name, "sw_stats"))
			break;
		close(mfd);
		mfd = -1;
	}
	if (mfd >= 0) {
		__u64 v[ncpu];
		__u32 k;
		int c;

		err = 0;
		for (k = 0; k < RINX_SW_STAT_MAX; k++) {
			if (bpf_map_lookup_elem(mfd, &k, v)) {
				err = -errno;
				break;
			}
			for (c = 0; c < ncpu; c++)
				out[k] += v[c];
		}
		close(mfd);
	}
out:
	if (fd >= 0)
		close(fd);
	rinx_netns_leave(old);
	return err;
}

/* Switch r of the racks (r == nracks: the spine). */
void switch_layout(const struct rinx_spec *s, const char *prefix,
		   int r, struct tb_switch *sw)
{
	int i, up = -1;

	memset(sw, 0, sizeof(*sw));
	sw->uplink = -1;
	if (r == s->nracks) {
		sw->rack = -1;
		spine_ns(sw->ns, prefix);
		for (i = 0; i < s->nracks; i++) {
			snprintf(sw->ifname[sw->nports++], IFNAMSIZ, "t%d", i);
			sw->agg_port[i] = i;
		}
		for (i = 0; i < s->nhosts; i++)
			sw->host_port[i] = s->hosts[i].rack;
		return;
	}
	sw->rack = r;
	tor_ns(sw->ns, prefix, r);
	for (i = 0; i < s->nhosts; i++) {
		if (s->hosts[i].rack != r)
			continue;
		sw->host_port[i] = sw->nports;
		snprintf(sw->ifname[sw->nports++], IFNAMSIZ, "p%d", i);
	}
	if (s->nracks > 1) {
		up = sw->nports;
		sw->uplink = up;
		snprintf(sw->ifname[sw->nports++], IFNAMSIZ, "uplink");
	}
	for (i = 0; i < s->nhosts; i++)
		if (s->hosts[i].rack != r)
			sw->host_port[i] = up;
	/* Another rack's aggregator is behind the uplink; this rack's own
	 * is the switch itself (no table entry). */
	for (i = 0; i < s->nracks; i++)
		sw->agg_port[i] = i == r ? -1 : up;
}

/* Namespace of switch i (racks, then the spine); 0 when there is none. */
int switch_ns(const struct rinx_spec *s, const char *prefix, int i,
	      char *buf)
{
	if (i < s->nracks) {
		tor_ns(buf, prefix, i);
		return 1;
	}
	/* a topology testbed's switches and servers are all racks */
	if (i == s->nracks && s->nracks > 1 && !s->topo[0]) {
		spine_ns(buf, prefix);
		return 1;
	}
	return 0;
}
