// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinx testbed switch: a static L2 switch in XDP for the ToR and spine
 * namespaces of the emulated cluster. One instance per switch namespace is
 * attached to all of its ports and shares the maps below.
 *
 * Known unicast destinations are redirected through the devmap; group
 * addresses (broadcast, multicast) and unknown destinations are flooded to
 * every port but the ingress one. The MAC table is filled by the control
 * plane (user/testbed.c); there is no learning. The topology is a tree, so
 * flooding cannot loop.
 *
 * Rina (the ToR of a rack):
 *  - an INA ToR runs the rack's aggregator (bpf/ina.bpf.h) first: frames to
 *    its MAC (rodata ina_mac, all-zero on other switches: the aggregator is
 *    then compiled out) are summed there, and what comes out is switched by
 *    its new destination: a unicast to the next ring member may leave by
 *    the port it came in; a gather goes to the rack's group;
 *  - the rack's groups are two devmaps filled by the control plane:
 *    group_hosts (the host ports) and group_all (the host ports and the
 *    uplink, whose copy gets the MAC of its IP destination from `neigh` in
 *    the devmap program rinx_group_egress). A host (the rack's agent) that
 *    sends to 03:72:78:<sw_rack>:00:00 or :01 reaches group_hosts or
 *    group_all, without itself. Other group MACs are plain multicast;
 *  - a self-addressed frame (destination MAC = source MAC) goes back out
 *    the port it came in: the agent sends its own contribution to itself.
 */
#include "bpf/ina.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#ifndef RINX_SW_MAX_MACS
#define RINX_SW_MAX_MACS	256
#endif
#ifndef RINX_SW_MAX_PORTS
#define RINX_SW_MAX_PORTS	64
#endif

/* Rack of this ToR (the one its groups belong to); 0xff: the spine. */
const volatile __u8 sw_rack = 0xff;

/* Destination MAC -> port it leaves by. Key: the 6 MAC bytes in wire order
 * followed by 2 zero bytes, read as a __u64 in memory order. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RINX_SW_MAX_MACS);
	__type(key, __u64);
	__type(value, struct rinx_sw_port);
} macs SEC(".maps");

/* ifindex -> port: the switch's ports, targets of redirect and flood. The
 * uplink entry carries rinx_group_egress as in group_all: the kernel's
 * per-CPU bulk queue of a target device keeps the egress program of the
 * first frame queued in a NAPI cycle for all of them, so every map that
 * reaches the uplink must name the same program, or a group frame queued
 * behind a unicast one would leave without its rewrite. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} ports SEC(".maps");

/* ifindex -> port: the rack's host ports (group ..:00). */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} group_hosts SEC(".maps");

/* ifindex -> port: the host ports and the uplink (group ..:01); the uplink
 * entry runs rinx_group_egress. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} group_all SEC(".maps");

/* IPv4 address (network order) -> MAC, as the key of `macs`: every host
 * and aggregator of the cluster. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RINX_SW_MAX_MACS);
	__type(key, __be32);
	__type(value, __u64);
} neigh SEC(".maps");

/* enum rinx_sw_stat -> count, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RINX_SW_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sw_stats SEC(".maps");

static __always_inline int count(__u32 what, int action)
{
	__u64 *c = bpf_map_lookup_elem(&sw_stats, &what);

	if (c)
		*c += 1;
	return action;
}

/* Is the aggregator configured? Constant after load: the verifier drops
 * the aggregator from the program of a switch that is not INA. */
static __always_inline int ina_enabled(void)
{
	return ina_mac[0] | ina_mac[1] | ina_mac[2] | ina_mac[3] |
	       ina_mac[4] | ina_mac[5];
}

/* 03:72:78:<sw_rack>:00:0x with x = 0 or 1: 0 hosts, 1 all; else -1. */
static __always_inline int own_group(const struct ethhdr *eth)
{
	if (eth->h_dest[0] != RINX_GROUP_MAC0 ||
	    eth->h_dest[1] != RINX_GROUP_MAC1 ||
	    eth->h_dest[2] != RINX_GROUP_MAC2 ||
	    eth->h_dest[3] != sw_rack || sw_rack == 0xff ||
	    eth->h_dest[4] != 0 || eth->h_dest[5] > 1)
		return -1;
	return eth->h_dest[5];
}

/* The aggregator as a subprogram of its own: the switch's paths and the
 * aggregator's are verified (and register-allocated) apart. */
static __noinline int sw_ina(struct xdp_md *ctx)
{
	return rinx_ina_frame(ctx);
}

SEC("xdp")
int rinx_switch(struct xdp_md *ctx)
{
	__u32 ingress = ctx->ingress_ifindex;
	struct rinx_sw_port *p;
	struct ethhdr *eth;
	void *data, *data_end;
	int from_ina = 0, g;
	__u64 key = 0;

	if (ina_enabled()) {
		switch (sw_ina(ctx)) {
		case RINX_INA_NOT_MINE:
			break;
		case RINX_INA_DROP:
			return count(RINX_SW_INA_DROP, XDP_DROP);
		case RINX_INA_UNICAST:
			from_ina = 1;
			break;
		case RINX_INA_GROUP_HOSTS:
			return count(RINX_SW_INA_GROUP,
				     bpf_redirect_map(&group_hosts, 0,
						      BPF_F_BROADCAST));
		case RINX_INA_GROUP_ALL:
			/* The port it came by may be a recipient. */
			return count(RINX_SW_INA_GROUP,
				     bpf_redirect_map(&group_all, 0,
						      BPF_F_BROADCAST));
		default:
			return count(RINX_SW_INA_ABORTED, XDP_ABORTED);
		}
	}

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > data_end)
		return count(RINX_SW_DROP_SHORT, XDP_DROP);
	/* The I/G bit marks broadcast and multicast. */
	if (eth->h_dest[0] & 1) {
		g = own_group(eth);
		/* The rack's agent multicasts its gather into the rack. */
		if (g < 0 || !bpf_map_lookup_elem(&group_hosts, &ingress))
			goto flood;
		if (g)
			return count(RINX_SW_GROUP,
				     bpf_redirect_map(&group_all, 0,
						      BPF_F_BROADCAST |
						      BPF_F_EXCLUDE_INGRESS));
		return count(RINX_SW_GROUP,
			     bpf_redirect_map(&group_hosts, 0,
					      BPF_F_BROADCAST |
					      BPF_F_EXCLUDE_INGRESS));
	}
	__builtin_memcpy(&key, eth->h_dest, ETH_ALEN);
	p = bpf_map_lookup_elem(&macs, &key);
	if (!p) {
		if (from_ina)
			return count(RINX_SW_DROP_NO_PORT, XDP_DROP);
		goto flood;
	}
	if (p->port == ingress && !from_ina) {
		__u64 src = 0;

		__builtin_memcpy(&src, eth->h_source, ETH_ALEN);
		if (src != key)
			return count(RINX_SW_DROP_HAIRPIN, XDP_DROP);
		if (bpf_redirect_map(&ports, ingress, 0) != XDP_REDIRECT)
			return count(RINX_SW_DROP_NO_PORT, XDP_DROP);
		return count(RINX_SW_HAIRPIN_SELF, XDP_REDIRECT);
	}
	/* Flags 0: a port missing from the devmap gives XDP_ABORTED. */
	if (bpf_redirect_map(&ports, p->port, 0) != XDP_REDIRECT)
		return count(RINX_SW_DROP_NO_PORT, XDP_DROP);
	return count(from_ina ? RINX_SW_INA_FWD : RINX_SW_FWD, XDP_REDIRECT);
flood:
	return count(RINX_SW_FLOOD,
		     bpf_redirect_map(&ports, 0,
				      BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS));
}

/*
 * Devmap program of the uplink entry of group_all: the copy of a rack's
 * gather that leaves the rack is addressed to the next ring member, whose
 * IP the frame carries; give it that member's MAC so the next switches
 * forward it as unicast.
 */
SEC("xdp/devmap")
int rinx_group_egress(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__be32 daddr;
	__u64 *mac;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	/* unicast frames share the uplink's queue: leave them alone */
	if (eth->h_dest[0] != RINX_GROUP_MAC0 ||
	    eth->h_dest[1] != RINX_GROUP_MAC1 ||
	    eth->h_dest[2] != RINX_GROUP_MAC2)
		return XDP_PASS;
	if ((void *)(ip + 1) > data_end ||
	    eth->h_proto != bpf_htons(ETH_P_IP))
		return count(RINX_SW_DROP_NO_NEIGH, XDP_DROP);
	daddr = ip->daddr;
	mac = bpf_map_lookup_elem(&neigh, &daddr);
	if (!mac)
		return count(RINX_SW_DROP_NO_NEIGH, XDP_DROP);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
	return XDP_PASS;
}
