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
 *
 * Link faults (tc netem never sees XDP frames, so the switch injects them),
 * per egress port from `faults`, after the egress port is known:
 *  - frames sent to one port (unicast, INA output, self-addressed) get them
 *    here in rinx_switch, in this order: drop (probability), rate limit
 *    (token bucket), reorder, duplicate;
 *  - copies of a flood or group broadcast get drop and rate limit in the
 *    devmap program of their port (rinx_port_egress, rinx_group_egress),
 *    which leaves alone frames to a known unicast MAC (already decided
 *    here); copies are not duplicated or reordered;
 *  - duplicate: XDP clones only through a devmap broadcast, and a broadcast
 *    sends one copy per map entry, whatever its ifindex: `dups` maps the
 *    port to a DEVMAP_HASH of its own holding that port under two keys, so
 *    a broadcast into it puts the frame on the wire twice;
 *  - reorder: `held` keeps at most one frame per port and CPU. A frame drawn
 *    for reordering is copied there and dropped when the slot is free;
 *    when it holds a frame, the held bytes are sent in the current frame's
 *    buffer and the current frame is held instead (two buffers per slot,
 *    so no copy between them). A held frame thus leaves behind every frame
 *    sent meanwhile, at the next draw; one older than the port's hold limit
 *    is dropped (counted lost) when the next frame for the port comes.
 * Counters: RINX_SW_FAULT_* in sw_stats, and per port in the faults value.
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

/*
 * Faults of one egress port; the same layout as struct rinx_tb_fault_val in
 * user/testbed.h (the control plane checks the map's value size). The
 * control plane sets the first six fields; the token bucket and the
 * counters belong to the program (updated without a lock: approximate when
 * both CPUs send to one port at once).
 */
struct rinx_sw_fault {
	__u32 drop_ppm;		/* probability, parts per million */
	__u32 dup_ppm;
	__u32 reorder_ppm;
	__u32 rate_mbit;	/* 0: no limit */
	__u32 burst;		/* bucket size, bytes */
	__u32 hold_ms;		/* a held frame older than this is lost */
	__u64 tokens;		/* bytes x 8000 (1 Mbit/s = 1/8000 B/ns) */
	__u64 last_ns;		/* last refill */
	__u64 n_drop, n_rate, n_dup, n_hold, n_reorder, n_lost, n_skip;
};

#define SW_PPM		1000000U
/* RINX_TB_MTU + Ethernet header, rounded */
#define SW_HOLD_MAX	3456

/* egress ifindex -> faults; no entry: no faults. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct rinx_sw_fault);
} faults SEC(".maps");

/* egress ifindex -> a devmap holding that port twice (see above). */
struct sw_dup_map {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__array(values, struct sw_dup_map);
} dups SEC(".maps");

/* A held frame: buf[cur] holds it (len bytes) when len != 0. */
struct sw_held {
	__u64 ts;
	__u32 len;
	__u32 cur;
	__u8 buf[2][SW_HOLD_MAX];
};

/* egress ifindex -> held frame, per CPU; entries made by the control
 * plane with the faults entry. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct sw_held);
} held SEC(".maps");

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

static __always_inline int drawn(__u32 ppm)
{
	return ppm && (ppm >= SW_PPM || bpf_get_prandom_u32() % SW_PPM < ppm);
}

/* Token bucket: may len bytes leave now? */
static __always_inline int rate_ok(struct rinx_sw_fault *f, __u32 len)
{
	__u64 now = bpf_ktime_get_ns(), dt = now - f->last_ns;
	__u64 cap = (__u64)(f->burst > len ? f->burst : len) * 8000;
	__u64 t = f->tokens, cost = (__u64)len * 8000;

	if (dt > 10000000000ULL)	/* caps the product below */
		dt = 10000000000ULL;
	t += dt * f->rate_mbit;
	if (t > cap)
		t = cap;
	f->last_ns = now;
	if (t < cost) {
		f->tokens = t;
		return 0;
	}
	f->tokens = t - cost;
	return 1;
}

/* Drop and rate limit: XDP_DROP (counted) or XDP_PASS. */
static __always_inline int fault_loss(struct xdp_md *ctx,
				      struct rinx_sw_fault *f)
{
	if (drawn(f->drop_ppm)) {
		__sync_fetch_and_add(&f->n_drop, 1);
		return count(RINX_SW_FAULT_DROP, XDP_DROP);
	}
	if (f->rate_mbit && !rate_ok(f, bpf_xdp_get_buff_len(ctx))) {
		__sync_fetch_and_add(&f->n_rate, 1);
		return count(RINX_SW_FAULT_RATE, XDP_DROP);
	}
	return XDP_PASS;
}

/*
 * Reorder at port: XDP_DROP when the frame was taken into the free slot,
 * XDP_PASS to send what the buffer now holds (the frame itself, or the
 * frame held before it).
 */
static __noinline int fault_reorder(struct xdp_md *ctx,
				    struct rinx_sw_fault *f, __u32 port)
{
	struct sw_held *h = bpf_map_lookup_elem(&held, &port);
	__u64 now = bpf_ktime_get_ns(), len, hl;
	__u32 cur, nxt;
	int draw;

	if (!h)
		return XDP_PASS;
	if (h->len && now - h->ts > (__u64)f->hold_ms * 1000000) {
		h->len = 0;
		__sync_fetch_and_add(&f->n_lost, 1);
		count(RINX_SW_FAULT_HOLD_LOST, 0);
	}
	draw = drawn(f->reorder_ppm);
	if (!draw)
		return XDP_PASS;
	len = bpf_xdp_get_buff_len(ctx);
	cur = h->cur & 1;
	nxt = cur ^ 1;
	if (len < ETH_HLEN || len > SW_HOLD_MAX)
		goto skip;
	if (!h->len) {
		if (bpf_xdp_load_bytes(ctx, 0, h->buf[cur], len))
			goto skip;
		h->len = len;
		h->ts = now;
		__sync_fetch_and_add(&f->n_hold, 1);
		return count(RINX_SW_FAULT_HOLD, XDP_DROP);
	}
	hl = h->len;
	if (hl < ETH_HLEN || hl > SW_HOLD_MAX)
		goto skip;
	/* The current frame into the other buffer before the tail moves. */
	if (bpf_xdp_load_bytes(ctx, 0, h->buf[nxt], len))
		goto skip;
	if (hl != len && bpf_xdp_adjust_tail(ctx, (int)hl - (int)len))
		goto skip;
	if (bpf_xdp_store_bytes(ctx, 0, h->buf[cur], hl)) {
		/* cannot happen once the size fits; the frame is garbage */
		h->len = 0;
		return count(RINX_SW_FAULT_HOLD_LOST, XDP_DROP);
	}
	h->cur = nxt;
	h->len = len;
	h->ts = now;
	__sync_fetch_and_add(&f->n_reorder, 1);
	count(RINX_SW_FAULT_REORDER, 0);
	return XDP_PASS;
skip:
	__sync_fetch_and_add(&f->n_skip, 1);
	return count(RINX_SW_FAULT_SKIP, XDP_PASS);
}

/*
 * Sends the frame to port through `ports` with the port's faults; stat is
 * the counter of a frame that leaves.
 */
static __noinline int sw_send(struct xdp_md *ctx, __u32 port, __u32 stat)
{
	struct rinx_sw_fault *f;
	void *dup;

	/* Flags 0: a port missing from the devmap gives XDP_ABORTED. */
	if (bpf_redirect_map(&ports, port, 0) != XDP_REDIRECT)
		return count(RINX_SW_DROP_NO_PORT, XDP_DROP);
	f = bpf_map_lookup_elem(&faults, &port);
	if (!f)
		return count(stat, XDP_REDIRECT);
	if (fault_loss(ctx, f) == XDP_DROP)
		return XDP_DROP;
	if (f->reorder_ppm && fault_reorder(ctx, f, port) == XDP_DROP)
		return XDP_DROP;
	if (drawn(f->dup_ppm)) {
		dup = bpf_map_lookup_elem(&dups, &port);
		if (dup && bpf_redirect_map(dup, 0, BPF_F_BROADCAST) ==
			   XDP_REDIRECT) {
			__sync_fetch_and_add(&f->n_dup, 1);
			count(RINX_SW_FAULT_DUP, 0);
		} else {
			/* the plain redirect above may have been replaced */
			bpf_redirect_map(&ports, port, 0);
			__sync_fetch_and_add(&f->n_skip, 1);
			count(RINX_SW_FAULT_SKIP, 0);
		}
	}
	return count(stat, XDP_REDIRECT);
}

/*
 * Faults of a broadcast copy in the devmap program of its port: a frame to
 * a known unicast MAC was sent to this port alone and had its faults in
 * sw_send (a duplicate or a reordered frame too).
 */
static __always_inline int egress_faults(struct xdp_md *ctx,
					 const struct ethhdr *eth)
{
	__u32 port = ctx->egress_ifindex;
	struct rinx_sw_fault *f;
	__u64 key = 0;

	f = bpf_map_lookup_elem(&faults, &port);
	if (!f)
		return XDP_PASS;
	if (!(eth->h_dest[0] & 1)) {
		__builtin_memcpy(&key, eth->h_dest, ETH_ALEN);
		if (bpf_map_lookup_elem(&macs, &key))
			return XDP_PASS;
	}
	return fault_loss(ctx, f);
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
		return sw_send(ctx, ingress, RINX_SW_HAIRPIN_SELF);
	}
	return sw_send(ctx, p->port, from_ina ? RINX_SW_INA_FWD : RINX_SW_FWD);
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
	if (egress_faults(ctx, eth) == XDP_DROP)
		return XDP_DROP;
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

/*
 * Devmap program of every other port (host ports, spine ports): faults of
 * broadcast copies. Set on the port's entry in every devmap that reaches
 * it, for the reason given at `ports`.
 */
SEC("xdp/devmap")
int rinx_port_egress(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	return egress_faults(ctx, eth);
}
