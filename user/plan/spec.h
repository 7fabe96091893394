/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The cluster spec (user/plan/spec.c): the door every room that reads a
 * cluster goes through. It holds no function of another room.
 */
#ifndef RINX_SPEC_H
#define RINX_SPEC_H

#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include "uapi/rinx.h"

/* ---- cluster spec ----
 * A text file, one record per line, '#' starts a comment:
 *   cluster port=47001 window=640 jobs=16 pin=/run/rinx mode=native \
 *           plan=rina
 *           [topo=FILE]                (plan=topo:NAME: the planner NAME on
 *                                       the topology FILE, whose hosts,
 *                                       switches and PS are the spec's
 *                                       hosts and racks by name)
 *   rack id=0 ina=none                 (or ina=agent: the rack's lowest
 *                                       rank aggregates in its host program)
 *   rack id=1 ina=switch name=agg1 mac=02:72:78:fe:01:01 ip=10.71.1.254 \
 *        netns=rxab12t1                (the ToR aggregates; its own node)
 *   host name=h0 rank=0 rack=0 ifname=eth0 mac=02:72:78:00:00:01 \
 *        ip=10.71.0.1 netns=rxab12-h0 link=1000
 * The same format describes the testbed (netns= set) and real hosts
 * (netns= absent: the host is the machine itself). Link rates in Mbit/s,
 * absent or 0 when not known or unlimited: a host's link= is its access
 * link (host <-> ToR), a rack's uplink= its ToR <-> spine link (the slower
 * direction of each); `rinxctl bench` relates bandwidth to the slowest.
 * An ina=switch rack's pool=N: the slots its ToR gives a ps-ina job (ATP's
 * pool, default RINX_POOL_DEFAULT, at most the window; 0: a slot per
 * block).
 * The cluster's jobs=N (1..RINX_MAX_JOBS, default RINX_DEFAULT_JOBS): the
 * job slots of every node, each of window= blocks; a host pins about
 * jobs x window x RINX_NODE_BLOCK_BYTES of kernel memory (rinx_spec_mem).
 * The cluster's mtu=N (1490..65535): the IP MTU of the job's network,
 * which sets the values per frame (RINX_BLOCK_VALUES from 3154 up, else
 * RINX_BLOCK_VALUES_MIN); absent, each rank takes its interface's MTU
 * (rinx_check_mtu), and ranks that come to different sizes fail at open.
 */
#define RINX_NAME_MAX	48
#define RINX_PATH_MAX	200

enum rinx_ina { RINX_INA_NONE, RINX_INA_SWITCH, RINX_INA_AGENT };
enum rinx_xdp_mode { RINX_XDP_NATIVE, RINX_XDP_GENERIC };

struct rinx_spec_host {
	char name[RINX_NAME_MAX];
	int rank;
	int rack;
	char ifname[16];
	__u8 mac[6];
	__be32 ip;
	char netns[RINX_NAME_MAX];
	__u32 link_mbit;	/* access link rate; 0: not known/unlimited */
};

struct rinx_spec_rack {
	int id;
	int ina;	/* enum rinx_ina */
	/* ina=switch: the aggregator on the rack's ToR, a node of its own */
	char name[RINX_NAME_MAX];	/* pins under <pin>/<name>/ */
	__u8 mac[6];
	__be32 ip;
	char netns[RINX_NAME_MAX];	/* the ToR's namespace (testbed) */
	__u32 uplink_mbit;	/* ToR <-> spine rate; 0: not known/unlimited */
	/* ina=switch, plan ps-ina: aggregator slots of a job's pool (ATP);
	 * 0: not set (RINX_POOL_DEFAULT), RINX_POOL_PER_BLOCK: a slot per
	 * block of the window (spec pool=0). At most the window is used. */
	__u32 pool;
};

#define RINX_POOL_DEFAULT	1024
#define RINX_POOL_PER_BLOCK	0xffffffffu
#define RINX_POOL_MAX		(1 << 20)

struct rinx_spec {
	__u16 port;
	__u32 window;		/* blocks per job slot on every node */
	__u32 jobs;		/* job slots of every node */
	int mode;		/* enum rinx_xdp_mode */
	char pin[RINX_PATH_MAX];/* bpffs directory; one subdirectory per node */
	int plan;		/* enum rinx_plan_kind (user/plan/plan.h) */
	int plan_nps;		/* parameter servers of the ps plans; 0: 1 */
	/* topology file of plan=topo:NAME (user/plan/topo.h format), "" none */
	char topo[RINX_PATH_MAX];
	/* Mbit/s a link runs at per Gbit/s of the topology's rate (a testbed
	 * scales them down to what it sustains); 0: not set, the topology's
	 * rates are the links' (1000) */
	double scale_mbit;
	int mtu;		/* IP MTU of the job's network; 0: the interface's */
	int nhosts;
	struct rinx_spec_host hosts[RINX_MAX_NODES];
	int nracks;
	struct rinx_spec_rack racks[RINX_MAX_NODES];
};

void rinx_spec_init(struct rinx_spec *s);
/* 0 or -errno; on error a message naming the line is put in err. */
int rinx_spec_load(const char *path, struct rinx_spec *s, char *err,
		   size_t errlen);
int rinx_spec_save(const char *path, const struct rinx_spec *s);
/* Checks ranks 0..n-1 once each, unique names/MACs/IPs, racks known. */
int rinx_spec_check(const struct rinx_spec *s, char *err, size_t errlen);
/* The slowest link of the spec (hosts' link=, racks' uplink=) in Mbit/s;
 * 0 when none is set. */
__u32 rinx_spec_min_link(const struct rinx_spec *s);
const struct rinx_spec_host *rinx_spec_host(const struct rinx_spec *s,
					    const char *name);
const struct rinx_spec_host *rinx_spec_rank(const struct rinx_spec *s,
					    int rank);
/* The index in s->racks of the rack with id rack_id, or -1. */
int rinx_spec_rack_index(const struct rinx_spec *s, int rack_id);
int rinx_parse_mac(const char *str, __u8 mac[6]);

/* Kernel memory of the block slots a host of spec s pins (share, result,
 * partial, aggregator: jobs x window x RINX_NODE_BLOCK_BYTES); the tables
 * add well under 1 MiB at the default 16 jobs. */
unsigned long long rinx_spec_mem(const struct rinx_spec *s);

#endif
