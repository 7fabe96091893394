/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Plans: the per-node tables that tell the one data plane what to do with
 * each class of blocks (DESIGN "one engine, many plans").
 */
#ifndef RINX_PLAN_H
#define RINX_PLAN_H

#include "uapi/rinx.h"

struct rinx_plan {
	int nclasses;
	int nnodes;
	/* hops[class][type-1] for this node */
	struct rinx_hop hops[RINX_MAX_CLASSES][2];
	/* origin of each class and, at the origin, the first hop */
	int origin[RINX_MAX_CLASSES];
	int first_to[RINX_MAX_CLASSES];
};

/* Ring allreduce over nodes 0..n-1 seen from node `self`: class k starts at
 * node k, is reduced along k+1, ..., k-1 (which finishes it) and gathered
 * along k, ..., k-2. */
int rinx_plan_ring(struct rinx_plan *p, int n, int self);
/* Human-readable dump of a plan (all nodes) for rinxctl plan. */
void rinx_plan_ring_print(FILE *f, int n);

#endif
