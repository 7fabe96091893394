/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Planners on a topology and the plan they produce ("plan IR"), written so
 * that a data-plane compiler can turn it into per-node tables and the
 * simulator (user/plan/sim.h) can run it.
 *
 * A plan is a set of classes. A class carries `share` of the tensor
 * (shares sum to 1; planners make them proportional to the rate a class
 * can sustain, so that all classes finish together) and says:
 *  - reduce: transfers contributor -> aggregator, each with its route (a
 *    list of arcs of the topology). The aggregators and their contributor
 *    sets are listed in `agg` (built by pp_finish); the class's reduce
 *    completes at `root`, which holds the sum.
 *  - broadcast: transfers parent -> child spreading the result (a fan-out
 *    tree; a node with several children multicasts).
 *  - kind PP_RING: `mem` lists ring members in order and `ring[i]` is the
 *    hop mem[i] -> mem[i+1]. The class stands for nmem blocks of share/nmem
 *    each; block j is reduced along the ring ending at mem[j] and then
 *    carried once more around it (reduce-scatter + all-gather). Members may
 *    be aggregators of a rack (Rina's INA ToR, H-AR's leader): their rack's
 *    workers reach them through reduce transfers and get the result back
 *    through broadcast transfers of the same class.
 * `vol` of a transfer is the bytes it carries per byte of the class's share
 * (1 for tree transfers, 2(n-1)/n for ring hops).
 *
 * Internal to rinxctl and the selftests: nothing here is exported.
 */
#ifndef RINX_PPLAN_H
#define RINX_PPLAN_H

#include <stddef.h>
#include "user/plan/topo.h"
#include "uapi/rinx.h"

enum pp_kind { PP_TREE, PP_RING };

struct pp_xfer {
	int src, dst;		/* topology nodes */
	double vol;
	int nhop;
	int *hop;		/* arcs, src -> dst */
};

struct pp_agg {
	int node;
	int parent;		/* where its partial sum goes; -1 at the root */
	int self;		/* a worker adding its own gradient */
	int ncontrib;
	int *contrib;		/* nodes whose transfers it sums */
};

struct pp_class {
	int kind;		/* enum pp_kind */
	double share;
	int root;		/* PP_TREE */
	int nmem, *mem;		/* PP_RING */
	int nred, nbc, nring;
	struct pp_xfer *red, *bc, *ring;
	int nagg;
	struct pp_agg *agg;
};

struct pp_plan {
	char scheme[24];
	int ncls;
	struct pp_class *cls;
	double rate_gbps;	/* the planner's own per-worker rate, 0 = none */
	double bound_gbps;	/* an upper bound the planner proved, 0 = none */
	char note[256];		/* how it was planned, one line */
};

struct pp_opts {
	double eps;		/* forest: precision of the packing (0.1) */
	int max_trees;		/* forest: at most this many trees (4096) */
};

struct pp_planner {
	const char *name;
	const char *desc;
	int (*plan)(struct topo *t, const struct pp_opts *o, struct pp_plan *p,
		    char *err, size_t errlen);
};

/* Every planner, NULL-terminated; and lookup by name. */
extern const struct pp_planner pp_planners[];
const struct pp_planner *pp_planner_find(const char *name);

/* ---- building plans (user/plan/plan_lib.c) ---- */
void pp_init(struct pp_plan *p, const char *scheme);
void pp_free(struct pp_plan *p);
/* New class, or NULL (ENOMEM). */
struct pp_class *pp_class_new(struct pp_plan *p, int kind, double share);
/* Adds a transfer routed by topo_route (hops may be NULL to route). */
int pp_red(struct topo *t, struct pp_class *c, int src, int dst, double vol);
int pp_bc(struct topo *t, struct pp_class *c, int src, int dst, double vol);
/* Adds a transfer along the given arcs. which: 0 reduce, 1 broadcast. */
int pp_xfer_arcs(struct pp_class *c, int which, int src, int dst, double vol,
		 const int *arcs, int n);
/* PP_RING: members in order; routes every hop. */
int pp_ring(struct topo *t, struct pp_class *c, const int *mem, int n);
/* Broadcast = the reduce transfers reversed (an aggregator multicasts the
 * result back to its contributors along their own routes). */
int pp_mirror_bc(struct pp_class *c);
/* Broadcast = a multicast tree from root: a shortest-path tree of the
 * topology pruned to the workers, one single-hop transfer per tree arc
 * (switches replicate). If arcs is set, the tree's arcs are also flagged
 * there (arcs[a] = 1). */
int pp_bc_tree(struct topo *t, struct pp_class *c, int root, char *arcs);
/* Builds agg[] of every class and checks the plan: every worker
 * contributes to every class exactly once, shares sum to 1, routes are
 * connected. 0 or -EINVAL with a message. */
int pp_finish(const struct topo *t, struct pp_plan *p, char *err,
	      size_t errlen);

/* ---- shared helpers ---- */
#define PP_MAX_HOPS	64
/* Racks: for every worker, its ToR (-1 if none); racks in order. */
int pp_racks(const struct topo *t, int *rack_of, int *racks, int *nracks);
/* Worker node ids sorted by rack (racks in order of first worker). */
int pp_rack_order(const struct topo *t, int *order);
/* Rates at which a unit model changes (c/k for every distinct capacity c
 * given and k = 1..kmax), ascending, deduplicated; count or -ENOMEM. */
int pp_breakpoints(const double *caps, int ncaps, int kmax, double **out);
/* The rate the simulator gives the plan of spec s (a topo:NAME plan on its
 * topo=), in Gbps per worker of the topology's rates; 0 when none. */
struct rinx_spec;
double pp_spec_rate_gbps(const struct rinx_spec *s);
/* The rate the simulator gives a plan (Gbps per worker), 0 on error. */
double pp_sim_rate(const struct topo *t, const struct pp_plan *p);

/* A ring of rack representatives (H-AR's leaders; with ina set, Rina: a
 * rack whose ToR aggregates is represented by the ToR, other racks'
 * workers are members themselves). */
int pp_rack_ring(struct topo *t, struct pp_plan *p, int ina, char *err,
		 size_t errlen);

/* Dinic max-flow on integer capacities, used by the planners that route
 * units of flow (PS, GRID) and by the cut bound. */
struct pp_mf;
struct pp_mf *pp_mf_new(int n);
void pp_mf_free(struct pp_mf *m);
/* Edge id (even; id^1 is its reverse). */
int pp_mf_edge(struct pp_mf *m, int u, int v, long long cap);
long long pp_mf_run(struct pp_mf *m, int s, int t, long long limit);
long long pp_mf_flow(const struct pp_mf *m, int e);
/* Walks one unit from u along edges with flow to t, removing it; fills
 * the edge ids, returns their count or -1. */
int pp_mf_take_path(struct pp_mf *m, int u, int t, int *edges, int max);
void pp_mf_reset(struct pp_mf *m);
long long pp_mf_cap(const struct pp_mf *m, int e);
void pp_mf_set_cap(struct pp_mf *m, int e, long long cap);

/* The allreduce cut bound (Gbps): every cut separating two workers must
 * carry the whole tensor each way, so no scheme beats the smallest such
 * cut. Exact (n-1 max-flows); -1 if the topology is too large (> maxw
 * workers). */
double pp_cut_bound(struct topo *t, int maxw);

/* ---- a plan on the data plane (user/plan/plan_ir.c) ---- */
struct rinx_spec;
struct rinx_plan;
/* Planners in pp_planners. */
int pp_nplanners(void);
/* The topology (a file, or a generator spec such as "grid-toy") and the
 * named planner's finished plan on it; 0 or -errno with a message. t and p
 * are initialised either way (free them). */
int pp_load(const char *topo, const char *planner, struct topo *t,
	    struct pp_plan *p, char *err, size_t errlen);
/* Node id of topology node tn in spec s: a host's rank, an ina=switch
 * rack's aggregator (switch or PS, by name); -1 if it has none. */
int pp_node_id(const struct rinx_spec *s, const struct topo *t, int tn);
/* Every node's tables for plan pp on t (tree classes, or one ring of
 * workers), the shared part (classes, pattern, roots, ring members) into
 * p, whose nodes are already built: hop[node][class][type-1],
 * start_to/start_type[node][class] (start_to preset to -1). 0 or -errno
 * with a message. */
int pp_compile(const struct topo *t, const struct pp_plan *pp,
	       const struct rinx_spec *s, struct rinx_plan *p,
	       struct rinx_hop (*hop)[RINX_MAX_CLASSES][RINX_HOP_TYPES],
	       int (*start_to)[RINX_MAX_CLASSES],
	       int (*start_type)[RINX_MAX_CLASSES], char *err, size_t errlen);
/* The same for the spec's own topology and planner (plan=topo:NAME,
 * topo=FILE): what user/plan/plan.c builds for RINX_PLAN_TOPO. */
int pp_tables(const struct rinx_spec *s, struct rinx_plan *p,
	      struct rinx_hop (*hop)[RINX_MAX_CLASSES][RINX_HOP_TYPES],
	       int (*start_to)[RINX_MAX_CLASSES],
	      int (*start_type)[RINX_MAX_CLASSES]);

/* planners, one file each */
#define PP_PLANNER(name)						\
	int name(struct topo *t, const struct pp_opts *o,		\
		 struct pp_plan *p, char *err, size_t errlen)
PP_PLANNER(plan_ring);
PP_PLANNER(plan_tree);
PP_PLANNER(plan_dbtree);
PP_PLANNER(plan_har);
PP_PLANNER(plan_ps);
PP_PLANNER(plan_psina);
PP_PLANNER(plan_switchml);
PP_PLANNER(plan_rina);
PP_PLANNER(plan_grid);
PP_PLANNER(plan_forest);
PP_PLANNER(plan_atp);
PP_PLANNER(plan_switchml_rack);
#undef PP_PLANNER

#endif
