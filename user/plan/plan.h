/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Plans: the per-node tables that tell the one data plane what to do with
 * each class of blocks (DESIGN "one engine, many plans").
 *
 * Node ids of a job: hosts are their ranks 0..n-1; the aggregator of the
 * i-th ina=switch rack of the spec is node n + i. Ring plans (ring, rina,
 * har): the ring's members are, in rack order, one member per INA rack (its
 * ToR aggregator, or its agent = lowest rank host) and every host of a rack
 * without INA (rank order). Star and tree plans (ps, ps-ina, tree, dbtree)
 * aggregate in slots at the servers, INA racks and inner tree nodes and
 * spread the result by a chain of racks, each rack's ToR replicating it
 * into the rack (user/plan/plan.c).
 */
#ifndef RINX_PLAN_H
#define RINX_PLAN_H

#include <stdio.h>
#include "uapi/rinx.h"
#include "user/plan/spec.h"

/* The plans the data plane runs (rinx_plan_parse names them). */
enum rinx_plan_kind {
	RINX_PLAN_RINA,		/* default: ring; an INA rack is one member */
	RINX_PLAN_RING,		/* ring of every host, INA unused */
	RINX_PLAN_PS,		/* parameter servers, no INA */
	RINX_PLAN_PSINA,	/* parameter servers, INA racks aggregate on
				 * the way (ATP) */
	RINX_PLAN_HAR,		/* hierarchical: rack leaders in a ring */
	RINX_PLAN_TREE,		/* binary tree */
	RINX_PLAN_DBTREE,	/* double binary tree */
	RINX_PLAN_TOPO,		/* "topo:NAME": the planner NAME (user/plan/pplan.h)
				 * on the spec's topology (topo=), compiled
				 * by user/plan/plan_ir.c; plan_nps holds the
				 * planner's index + 1 */
	RINX_PLAN_MAX,
};

struct rinx_plan {
	int kind;		/* enum rinx_plan_kind */
	int nclasses;
	int nnodes;
	int nmembers;		/* ring kinds: the ring's members */
	int member[RINX_MAX_NODES];
	struct rinx_node nodes[RINX_MAX_NODES];	/* addresses, rack */
	/* hops[class][type-1] of the node the plan was built for */
	struct rinx_hop hops[RINX_MAX_CLASSES][RINX_HOP_TYPES];
	/* block b is in class cmap[b % plen] */
	int plen;
	__u8 cmap[RINX_CMAP_MAX];
	/* where the node's own share of each class starts (node id, or -1:
	 * the node adds it on the way) and as what (RINX_T_*) */
	int start_to[RINX_MAX_CLASSES];
	int start_type[RINX_MAX_CLASSES];
	/* node that finishes each class (holds the sum first) */
	int root[RINX_MAX_CLASSES];
};

/* Plan name ("ring", "rina", "ps", "ps:2", "ps-ina", "ps-ina:2", "har",
 * "tree", "dbtree", "topo:grid" and the other topology planners) -> kind
 * and server count (ps kinds; the planner's index + 1 for topo; 0
 * otherwise).
 * 0, or -EINVAL with a message in err. */
int rinx_plan_parse(const char *name, int *kind, int *nps, char *err,
		    size_t errlen);
/* A number that names kind and server count (never 0), for the open
 * barrier's check that every rank runs the same plan: kind + 1 in the low
 * byte, the server count above it. */
static inline __u32 rinx_plan_id(int kind, int nps)
{
	return 1 + (__u32)kind + ((__u32)(nps > 1 ? nps : 0) << 8);
}

/* "ps:2" for kind and server count. */
const char *rinx_plan_name(int kind, int nps, char *buf, size_t len);
/* The spec as the plan sees it (s->plan): INA the plan does not use is
 * taken away (ring, ps, tree), H-AR makes every rack's lowest rank its
 * leader (an agent), a rack of one host has nothing to aggregate. Every
 * rank applies it before building, so node ids agree. */
void rinx_plan_spec(struct rinx_spec *s);
/* Builds the plan of node `self` for the cluster of spec s (any mix of INA
 * and plain racks; no racks at all is a plain ring in rank order). */
int rinx_plan_build(struct rinx_plan *p, const struct rinx_spec *s, int self);
/* The hosts (below 64, as bits) that node `self` passes blocks of each
 * class on to: reduce[k], those whose add and forward (or add and
 * finish) hop of class k takes the reduce from self; gather[k], those
 * whose gather hop of class k takes the finished block from self (a
 * multicast's rack too). For tail notices (user/comm/repair.c). */
int rinx_plan_next_hosts(const struct rinx_spec *s, int self,
			 __u64 reduce[RINX_MAX_CLASSES],
			 __u64 gather[RINX_MAX_CLASSES]);
/* Node id of the i-th switch rack's aggregator, -1 if rack i is not one. */
int rinx_plan_agg_node(const struct rinx_spec *s, int rack_index);
/* The agent (lowest rank) of the i-th rack of the spec, -1 if empty. */
int rinx_plan_agent_of_rack(const struct rinx_spec *s, int rack_index);
/* Index of the rack whose agent (lowest rank) this host is, else -1. */
int rinx_plan_agent_of(const struct rinx_spec *s, int rank);
/* The ring plans' tables for the members p->member[0..p->nmembers) in
 * ring order (a host adds its share in XDP, an INA rack's aggregator or
 * agent sums its rack): class k of nmembers starts at member k and
 * finishes at member k - 1, then goes round once more (plan.c's header).
 * Sets p's classes, pattern and roots; writes hop[node][class][type-1]
 * and start_to/start_type[node][class] (start_to preset to -1). The rack
 * plans' members (ring, rina, har) and a topology planner's ring
 * (user/plan/plan_ir.c) both come here. 0 or -E2BIG. */
int rinx_plan_ring(const struct rinx_spec *s, struct rinx_plan *p,
		   struct rinx_hop (*hop)[RINX_MAX_CLASSES][RINX_HOP_TYPES],
		   int (*start_to)[RINX_MAX_CLASSES],
		   int (*start_type)[RINX_MAX_CLASSES]);
/* Class k's gather: every host but `root` stores the finished block that
 * root sends (STORE_END from root), into hop[node][class][type-1]. */
void rinx_plan_store_from(struct rinx_hop
			  (*hop)[RINX_MAX_CLASSES][RINX_HOP_TYPES],
			  int nhosts, int k, int root);
/* Two lines: the kind of plan and its ring members. */
void rinx_plan_summary(FILE *f, const struct rinx_spec *s);
/* The rate of own blocks (per second) of node `self` at which the plan's
 * busiest link of the spec runs full, for frames of frame_bytes on the
 * wire (a topology plan: at the simulator's rate of the plan, with the
 * spec's scale); 0 when the spec gives no link rates the plan crosses.
 * The pacer's ceiling (user/comm/cc.c). */
double rinx_plan_ceiling(const struct rinx_spec *s, int self,
			 double frame_bytes);
/* Human-readable plan of every node, for rinxctl plan. 0 or -errno. */
int rinx_plan_print(FILE *f, const struct rinx_spec *s);

#endif
