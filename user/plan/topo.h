/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Topologies for the planners and the simulator: worker hosts, switches
 * (optionally able to aggregate in the network, with a capacity) and
 * parameter servers, joined by links with a bandwidth per direction.
 *
 * File format, one record per line, '#' starts a comment:
 *   switch name=S1 ina=yes cap=9      (cap: aggregation capacity, Gbps)
 *   host name=W1                      (a worker)
 *   ps name=PS                        (a parameter server)
 *   link a=W1 b=S1 gbps=10 [back=5]   (back: the b->a bandwidth, default
 *                                      the same as a->b)
 * Several links between the same pair, and several paths between switches,
 * are allowed. Workers are numbered in the order of their host records.
 *
 * Internal to rinxctl and the selftests: nothing here is exported.
 */
#ifndef RINX_TOPO_H
#define RINX_TOPO_H

#include <stddef.h>
#include <stdio.h>

#define TOPO_NAME_MAX	32
#define TOPO_MAX_NODES	200000	/* a k=74 fat-tree (108,000 nodes) fits;
				 * routes cache distance rows over the core
				 * nodes only (below), not over all nodes */

enum topo_kind { TOPO_HOST, TOPO_SWITCH, TOPO_PS };

struct topo_node {
	char name[TOPO_NAME_MAX];
	int kind;	/* enum topo_kind */
	int ina;	/* a switch that aggregates in the network */
	double cap;	/* its aggregation capacity, Gbps of input it can sum */
	int tor;	/* hosts and PS: the first switch they hang off, or -1 */
};

/* Arc 2*l is link l's a->b direction, arc 2*l+1 its b->a direction. */
struct topo_link {
	int a, b;
	double gbps[2];
};

struct topo {
	int nnodes, nlinks, maxnodes, maxlinks;
	struct topo_node *node;
	struct topo_link *link;
	/* built by topo_finish */
	int *off, *adj;		/* out-arcs of u: adj[off[u] .. off[u+1]) */
	int nhosts, nps;
	int *hosts, *ps;	/* node ids of workers and of servers */
	/* Routes: a leaf (a node with one link: most hosts, a PS) is never
	 * passed through, so shortest routes are planned over the core
	 * (every other node) and a leaf's one link is added at either end.
	 * Distance rows are cached per core destination over core nodes:
	 * ncore^2 at most (6,846 switches of a k=74 fat-tree: 187 MB), where
	 * rows over every node would be nnodes^2 (47 GB). */
	int ncore;
	int *cix;		/* per node: core index, or -1 for a leaf */
	int *core;		/* core index -> node */
	int **dist;		/* per core destination: hops from each core
				 * node, on demand */
};

static inline int topo_arc_from(const struct topo *t, int arc)
{
	const struct topo_link *l = &t->link[arc >> 1];

	return arc & 1 ? l->b : l->a;
}

static inline int topo_arc_to(const struct topo *t, int arc)
{
	const struct topo_link *l = &t->link[arc >> 1];

	return arc & 1 ? l->a : l->b;
}

static inline double topo_arc_gbps(const struct topo *t, int arc)
{
	return t->link[arc >> 1].gbps[arc & 1];
}

void topo_init(struct topo *t);
void topo_free(struct topo *t);
/* Node id, or -errno (-EEXIST for a duplicate name). */
int topo_add_node(struct topo *t, const char *name, int kind, int ina,
		  double cap);
int topo_add_link(struct topo *t, int a, int b, double ab, double ba);
int topo_find(const struct topo *t, const char *name);
/* Builds adjacency and the worker list; checks every worker and server can
 * reach every other. 0 or -errno with a message in err. */
int topo_finish(struct topo *t, char *err, size_t errlen);

/* Parses the file format above; a bad record fails with "NAME:LINE: ...". */
int topo_parse(FILE *f, const char *fname, struct topo *t, char *err,
	       size_t errlen);
int topo_load(const char *path, struct topo *t, char *err, size_t errlen);
void topo_write(FILE *f, const struct topo *t);

/*
 * Built-in generators, "NAME[:key=value,...]":
 *   grid-toy                        the GRID paper's 8-worker example
 *   fattree:k=8,gbps=10,workers=N,ina=all|edge|none,cap=100,ps=1
 *   leafspine:leaves=8,spines=4,hosts=8,gbps=10,oversub=1,ina=2,cap=100,ps=1
 *   random:hosts=16,switches=0,deg=3,min=1,max=40,seed=1,ina=0,cap=100,ps=0
 * (random with switches=0 links hosts directly: a heterogeneous mesh.)
 */
int topo_generate(const char *spec, struct topo *t, char *err,
		  size_t errlen);

/* A shortest (fewest hops) route from src to dst as arcs; among equal
 * routes one is picked by a hash of (src, dst) so that many pairs spread
 * over parallel paths. Number of arcs or -errno. */
int topo_route(struct topo *t, int src, int dst, int *arcs, int max);
/* "A->B" for an arc. */
const char *topo_arc_name(const struct topo *t, int arc, char *buf,
			  size_t len);

#endif
