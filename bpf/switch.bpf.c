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
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include "uapi/rinx.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#ifndef RINX_SW_MAX_MACS
#define RINX_SW_MAX_MACS	256
#endif
#ifndef RINX_SW_MAX_PORTS
#define RINX_SW_MAX_PORTS	64
#endif

/* Destination MAC -> port it leaves by. Key: the 6 MAC bytes in wire order
 * followed by 2 zero bytes, read as a __u64 in memory order. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RINX_SW_MAX_MACS);
	__type(key, __u64);
	__type(value, struct rinx_sw_port);
} macs SEC(".maps");

/* ifindex -> ifindex: the switch's ports, targets of redirect and flood. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} ports SEC(".maps");

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

SEC("xdp")
int rinx_switch(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct rinx_sw_port *p;
	__u64 key = 0;

	if ((void *)(eth + 1) > data_end)
		return count(RINX_SW_DROP_SHORT, XDP_DROP);
	/* The I/G bit marks broadcast and multicast. */
	if (eth->h_dest[0] & 1)
		goto flood;
	__builtin_memcpy(&key, eth->h_dest, ETH_ALEN);
	p = bpf_map_lookup_elem(&macs, &key);
	if (!p)
		goto flood;
	if (p->port == ctx->ingress_ifindex)
		return count(RINX_SW_DROP_HAIRPIN, XDP_DROP);
	/* Flags 0: a port missing from the devmap gives XDP_ABORTED. */
	if (bpf_redirect_map(&ports, p->port, 0) != XDP_REDIRECT)
		return count(RINX_SW_DROP_NO_PORT, XDP_DROP);
	return count(RINX_SW_FWD, XDP_REDIRECT);
flood:
	return count(RINX_SW_FLOOD,
		     bpf_redirect_map(&ports, 0,
				      BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS));
}
