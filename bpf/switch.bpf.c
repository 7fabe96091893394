// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * rinx testbed switch: a static L2 switch in XDP for the ToR and spine
 * namespaces of the emulated cluster. One instance per switch namespace is
 * attached to all of its ports and shares the maps below.
 *
 * Known unicast destinations are redirected through the devmap; group
 * addresses (broadcast, multicast) and unknown destinations are flooded to
 * every port but the ingress one. The MAC table is filled by the control
 * plane (tools/testbed/); there is no learning. The rack testbed is a
 * tree, so flooding cannot loop; a topology testbed (sw_topo) may have
 * cycles, and floods there stay on a spanning tree (`flood`), while
 * unicast follows the MAC table's shortest paths or, for the pairs a plan
 * routes otherwise, `flows`. A plan's classes (trees of a forest, shards
 * of several servers) route one pair in several ways and broadcast on
 * trees of their own, so on a topology switch a rinx frame's plan class
 * (rinx_hdr.klass) selects its route: `flows` holds (destination, source,
 * class) entries beside the (destination, source) ones, and `bcast` sends
 * a class's frames to the fabric's group along the class's broadcast
 * route (per ingress port, class and root, a devmap of the ports they
 * leave by), the spanning tree taking the classes without one.
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
 *    group_all, without itself. Other group MACs are plain multicast
 *    (flooded), the fabric's group 03:72:78:ff:ff:00 among them: the star
 *    and tree plans send a finished block to every host that way;
 *  - a self-addressed frame (destination MAC = source MAC) goes back out
 *    the port it came in: the agent sends its own contribution to itself;
 *  - the aggregator sums at most its capacity (`ina_cap`, a topology's
 *    cap=): what it is to sum passes a virtual queue of that rate first,
 *    marked above its threshold, dropped beyond its buffer
 *    (bpf/ina_cap.bpf.h says why not passed on unaggregated).
 *
 * Links (tc netem and qdiscs never see XDP frames, so the switch plays
 * the port; the mechanics are in bpf/sw_link.bpf.h), per egress port
 * from `links` (bpf/switch_kern_user.h), after the egress port is known, in
 * this order: drop (probability), queue, reorder, duplicate:
 *  - the queue is virtual: XDP cannot hold a frame, so frames are never
 *    delayed; the port keeps the backlog a real port would have (bytes,
 *    drained at rate_mbit since the last frame, wire overhead included).
 *    A frame that does not fit in the buffer is tail-dropped; one admitted
 *    above the ecn threshold gets CE if it is IPv4 with ECT(0) or ECT(1)
 *    (the header checksum fixed), else it leaves unmarked and is counted.
 *    Drop comes first, so injected loss does not use the port's capacity
 *    (a frame lost on the wire would have; the difference is small at the
 *    loss rates tested). Reorder and duplicate come after the queue: they
 *    are faults of the wire behind it, and a marked frame stays marked
 *    when it is held or copied. A duplicate is not charged to the queue.
 *    Two CPUs may send to one port at once: the queue is updated under the
 *    bpf_spin_lock of the port's `links` value (one queue per port, not
 *    per CPU: a per-CPU queue would split the rate). With set.share the
 *    port has two classes, rinx frames and the rest, each with its own
 *    backlog, drained together as weighted classes (rinx_sw_drain2);
 *  - frames sent to one port (unicast, INA output, self-addressed) get all
 *    of it here in rinx_switch;
 *  - copies of a flood or group broadcast get drop and queue in the devmap
 *    program of their port (rinx_port_egress, rinx_group_egress), which
 *    leaves alone frames to a known unicast MAC (already decided here);
 *    copies are not duplicated or reordered;
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
 *    (by the coarse clock, a tick of 1-10 ms) is dropped (counted lost)
 *    when the next frame for the port comes.
 * Counters: RINX_SW_* in sw_stats, and per port in the `links` value.
 */
#include "bpf/ina.bpf.h"
#include "bpf/sw_link.bpf.h"
#include "bpf/switch_kern_user.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#ifndef RINX_SW_MAX_MACS
#define RINX_SW_MAX_MACS	256
#endif
#ifndef RINX_SW_MAX_FLOWS
#define RINX_SW_MAX_FLOWS	4096	/* a class's and a pair's per route */
#endif
#ifndef RINX_SW_MAX_BCAST
#define RINX_SW_MAX_BCAST	1024
#endif

/* Rack of this ToR (the one its groups belong to); 0xff: the spine. */
const volatile __u8 sw_rack = 0xff;
/* A switch of a topology testbed (tools/testbed/, --topo): its links may
 * form cycles, so floods go to `flood` (the ports of a spanning tree)
 * instead of every port, `flows` may route a (source, destination) pair,
 * of one plan class or of any, off the shortest path the MAC table holds
 * (a planner's route), and `bcast` sends a class's result along its
 * broadcast route. Constant after load: the rack testbed's switch has
 * none of these lookups. */
const volatile __u8 sw_topo = 0;
/* A plain switch (`testbed up --tor plain`), as a real switch without
 * anything of rinx's: no aggregator, group MACs flooded like any multicast
 * (every port but the ingress), no frame sent back out of the port it
 * came in by (a self-addressed frame is dropped, as the bridge of a real
 * switch drops it), no group MAC rewritten at the uplink. Ports keep their
 * queues, rates and faults. Constant after load. */
const volatile __u8 sw_plain = 0;

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

/* ifindex -> port: the ports on the topology's spanning tree (sw_topo),
 * where floods and the fabric's group without a `bcast` entry go. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} flood SEC(".maps");

/* (destination, source MAC, class or any) -> port it leaves by
 * (sw_topo): the routes of the plan's transfers. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RINX_SW_MAX_FLOWS);
	__type(key, struct rinx_sw_flow_key);
	__type(value, struct rinx_sw_port);
} flows SEC(".maps");

/* The ports of one class's broadcast route at this switch (ifindex ->
 * port, every entry with the port's devmap program, see `ports`). */
struct sw_bcast_map {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
};

/* (ingress port, class, source MAC) -> the ports a class's frame to the
 * fabric's group leaves by (sw_topo), written by the control plane with
 * the plan's broadcast routes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, RINX_SW_MAX_BCAST);
	__type(key, struct rinx_sw_bcast_key);
	__array(values, struct sw_bcast_map);
} bcast SEC(".maps");

/* IPv4 address (network order) -> MAC, as the key of `macs`: every host
 * and aggregator of the cluster. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RINX_SW_MAX_MACS);
	__type(key, __be32);
	__type(value, __u64);
} neigh SEC(".maps");

/* The testbed's queue process (set.real): its AF_XDP sockets, one per
 * port of this switch it serves, at the slots `xsk_slot` gives for the
 * ports' ifindexes (both written by the process). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RINX_SW_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} xsk_slot SEC(".maps");

/*
 * A frame admitted to port's real queue (set.real) to the queue process,
 * to leave port at dep: XDP_REDIRECT, or -1 when no process serves the
 * ingress port's queue (the frame unchanged, to be sent at once).
 */
static __always_inline int real_hold(struct xdp_md *ctx,
				     struct rinx_sw_link *f, __u32 port,
				     __u64 dep)
{
	__u32 in = ctx->ingress_ifindex, *slot;
	struct rinx_sw_real_hdr *h;
	void *data, *data_end;

	slot = bpf_map_lookup_elem(&xsk_slot, &in);
	/* the process binds queue 0 of every port, frames of its size */
	if (!slot || ctx->rx_queue_index ||
	    bpf_xdp_get_buff_len(ctx) > RINX_SW_REAL_MAX ||
	    !bpf_map_lookup_elem(&xsks, slot))
		goto none;
	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(*h)))
		goto none;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	h = data;
	if ((void *)(h + 1) > data_end) {
		bpf_xdp_adjust_head(ctx, sizeof(*h));
		goto none;
	}
	h->dep_ns = dep;
	h->egress = port;
	h->magic = RINX_SW_REAL_MAGIC;
	if (bpf_redirect_map(&xsks, *slot, 0) == XDP_REDIRECT) {
		__sync_fetch_and_add(&f->n_real, 1);
		return count(RINX_SW_REAL_HELD, XDP_REDIRECT);
	}
	bpf_xdp_adjust_head(ctx, sizeof(*h));
none:
	count(RINX_SW_REAL_NONE, 0);
	return -1;
}

/*
 * Sends the frame to port through `ports` and the port's link; stat is the
 * counter of a frame that leaves.
 */
static __noinline int sw_send(struct xdp_md *ctx, __u32 port, __u32 stat)
{
	struct rinx_sw_link *f;
	__u64 dep;
	void *dup;

	/* Flags 0: a port missing from the devmap gives XDP_ABORTED. */
	if (bpf_redirect_map(&ports, port, 0) != XDP_REDIRECT)
		return count(RINX_SW_DROP_NO_PORT, XDP_DROP);
	f = bpf_map_lookup_elem(&links, &port);
	if (!f)
		return count(stat, XDP_REDIRECT);
	if (link_admit(ctx, f, &dep) == XDP_DROP)
		return XDP_DROP;
	/* held: the process sends it, past the wire's faults; else the
	 * redirect above stands */
	if (dep) {
		if (real_hold(ctx, f, port, dep) == XDP_REDIRECT) {
			count(stat, 0);
			return XDP_REDIRECT;
		}
		/* a failed redirect into xsks forgets the one to ports */
		bpf_redirect_map(&ports, port, 0);
	}
	if (f->set.reorder_ppm && fault_reorder(ctx, f, port) == XDP_DROP)
		return XDP_DROP;
	if (drawn(f->set.dup_ppm)) {
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
 * Drop and queue of a broadcast copy in the devmap program of its port: a
 * frame to a known unicast MAC was sent to this port alone and went
 * through its link in sw_send (a duplicate or a reordered frame too).
 */
static __always_inline int egress_link(struct xdp_md *ctx,
				       const struct ethhdr *eth)
{
	__u32 port = ctx->egress_ifindex;
	struct rinx_sw_link *f;
	__u64 key = 0;

	f = bpf_map_lookup_elem(&links, &port);
	if (!f)
		return XDP_PASS;
	if (!(eth->h_dest[0] & 1)) {
		__builtin_memcpy(&key, eth->h_dest, ETH_ALEN);
		if (bpf_map_lookup_elem(&macs, &key))
			return XDP_PASS;
	}
	return link_admit(ctx, f, NULL);
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

/* The plan class of a rinx frame (rinx_hdr.klass), or -1 if it is not
 * one: IPv4 without options, UDP to the rinx port, magic and version. */
static __always_inline int frame_class(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct udphdr *udp = rinx_udp(ctx);
	struct rinx_hdr *h;

	if (!udp)
		return -1;
	h = (void *)(udp + 1);
	if ((void *)(h + 1) > data_end ||
	    h->magic != bpf_htonl(RINX_MAGIC) || h->version != RINX_VERSION)
		return -1;
	return bpf_ntohs(h->klass);
}

/*
 * A rinx frame to the fabric's group (RINX_GROUP_EVERY) whose class has a
 * broadcast route here for frames that came in by ingress (0: from this
 * switch's aggregator) goes to that route's ports: the verdict, counted;
 * -1 for any other frame (it takes the spanning tree).
 */
static __noinline int class_group(struct xdp_md *ctx, __u32 ingress,
				  __u64 flags)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct rinx_sw_bcast_key k = { .ingress = ingress };
	struct ethhdr *eth = data;
	void *ports_of;
	int klass;

	if ((void *)(eth + 1) > data_end ||
	    eth->h_dest[0] != RINX_GROUP_MAC0 ||
	    eth->h_dest[1] != RINX_GROUP_MAC1 ||
	    eth->h_dest[2] != RINX_GROUP_MAC2 || eth->h_dest[3] != 0xff ||
	    eth->h_dest[4] != 0xff || eth->h_dest[5] != 0)
		return -1;
	klass = frame_class(ctx);
	if (klass < 0)
		return -1;
	k.klass = klass;
	__builtin_memcpy(k.src, eth->h_source, ETH_ALEN);
	ports_of = bpf_map_lookup_elem(&bcast, &k);
	if (!ports_of)
		return -1;
	return count(RINX_SW_CLASS_GROUP,
		     bpf_redirect_map(ports_of, 0, flags));
}

SEC("xdp.frags")
int rinx_switch(struct xdp_md *ctx)
{
	__u32 ingress = ctx->ingress_ifindex;
	struct rinx_sw_port *p;
	struct ethhdr *eth;
	void *data, *data_end;
	int from_ina = 0, g, ret;
	__u64 key = 0;

	if (ina_enabled() && !sw_plain) {
		ret = sw_ina(ctx);
		/* a class's root: its result takes the class's route */
		if (sw_topo && (ret == RINX_INA_GROUP_HOSTS ||
				ret == RINX_INA_GROUP_ALL)) {
			g = class_group(ctx, 0, BPF_F_BROADCAST);
			if (g >= 0)
				return g;
		}
		switch (ret) {
		case RINX_INA_NOT_MINE:
			break;
		case RINX_INA_DROP:
			return count(RINX_SW_INA_DROP, XDP_DROP);
		case RINX_INA_CAP_DROP:
			return count(RINX_SW_CAP_DROP, XDP_DROP);
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
		if (sw_plain)
			goto flood;
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
	p = NULL;
	if (sw_topo) {
		struct rinx_sw_flow_key fk = {};
		int klass = frame_class(ctx);

		__builtin_memcpy(fk.dst, eth->h_dest, ETH_ALEN);
		__builtin_memcpy(fk.src, eth->h_source, ETH_ALEN);
		if (klass >= 0) {
			fk.klass = klass;
			p = bpf_map_lookup_elem(&flows, &fk);
		}
		if (!p) {
			fk.klass = RINX_SW_CLASS_ANY;
			p = bpf_map_lookup_elem(&flows, &fk);
		}
	}
	if (!p)
		p = bpf_map_lookup_elem(&macs, &key);
	if (!p) {
		if (from_ina)
			return count(RINX_SW_DROP_NO_PORT, XDP_DROP);
		goto flood;
	}
	if (p->port == ingress && !from_ina) {
		__u64 src = 0;

		if (sw_plain)
			return count(RINX_SW_DROP_HAIRPIN, XDP_DROP);
		__builtin_memcpy(&src, eth->h_source, ETH_ALEN);
		if (src != key)
			return count(RINX_SW_DROP_HAIRPIN, XDP_DROP);
		return sw_send(ctx, ingress, RINX_SW_HAIRPIN_SELF);
	}
	return sw_send(ctx, p->port, from_ina ? RINX_SW_INA_FWD : RINX_SW_FWD);
flood:
	if (sw_topo) {
		ret = class_group(ctx, ingress, BPF_F_BROADCAST |
				  BPF_F_EXCLUDE_INGRESS);
		if (ret >= 0)
			return ret;
		return count(RINX_SW_FLOOD,
			     bpf_redirect_map(&flood, 0, BPF_F_BROADCAST |
					      BPF_F_EXCLUDE_INGRESS));
	}
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
SEC("xdp.frags/devmap")
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
	if (egress_link(ctx, eth) == XDP_DROP)
		return XDP_DROP;
	if (sw_plain)
		return XDP_PASS;
	/* unicast frames share the uplink's queue: leave them alone, and
	 * the fabric's group (RINX_GROUP_EVERY: 03:72:78:ff:ff:00), which
	 * every switch floods on */
	if (eth->h_dest[0] != RINX_GROUP_MAC0 ||
	    eth->h_dest[1] != RINX_GROUP_MAC1 ||
	    eth->h_dest[2] != RINX_GROUP_MAC2 || eth->h_dest[4] == 0xff)
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
 * Devmap program of every other port (host ports, spine ports): drop and
 * queue of broadcast copies. Set on the port's entry in every devmap that
 * reaches it, for the reason given at `ports`.
 */
SEC("xdp.frags/devmap")
int rinx_port_egress(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	return egress_link(ctx, eth);
}
