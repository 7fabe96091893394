/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Plans: the per-node tables that tell the one data plane what to do with
 * each class of blocks (DESIGN "one engine, many plans").
 *
 * Node ids of a job: hosts are their ranks 0..n-1; the aggregator of the
 * i-th ina=switch rack of the spec is node n + i. The ring's members are, in
 * rack order: one member per INA rack (its ToR aggregator, or its agent =
 * lowest rank host), and every host of a rack without INA (rank order).
 */
#ifndef RINX_PLAN_H
#define RINX_PLAN_H

#include <stdio.h>
#include "uapi/rinx.h"
#include "user/ctl.h"

struct rinx_plan {
	int nclasses;
	int nnodes;
	int nmembers;
	int member[RINX_MAX_NODES];	/* node id of each ring member */
	struct rinx_node nodes[RINX_MAX_NODES];	/* addresses, rack, bit */
	/* hops[class][type-1] of the node the plan was built for */
	struct rinx_hop hops[RINX_MAX_CLASSES][RINX_HOP_TYPES];
	/* node that starts each class: a host (sends its share as a reduce
	 * frame to first_to) or an aggregator (started by contributions) */
	int origin[RINX_MAX_CLASSES];
	int first_to[RINX_MAX_CLASSES];
	/* a worker of an INA rack sends every block to this aggregator node
	 * (itself for an agent); -1 for autonomous hosts */
	int contrib_to;
};

/* Builds the plan of node `self` for the cluster of spec s (any mix of INA
 * and plain racks; no racks at all is a plain ring in rank order). */
int rinx_plan_build(struct rinx_plan *p, const struct rinx_spec *s, int self);
/* Node id of the i-th switch rack's aggregator, -1 if rack i is not one. */
int rinx_plan_agg_node(const struct rinx_spec *s, int rack_index);
/* The agent (lowest rank) of the i-th rack of the spec, -1 if empty. */
int rinx_plan_agent_of_rack(const struct rinx_spec *s, int rack_index);
/* Index of the rack whose agent (lowest rank) this host is, else -1. */
int rinx_plan_agent_of(const struct rinx_spec *s, int rank);
/* Two lines: the kind of plan and its ring members. */
void rinx_plan_summary(FILE *f, const struct rinx_spec *s);
/* Human-readable plan of every node, for rinxctl plan. */
void rinx_plan_print(FILE *f, const struct rinx_spec *s);

#endif
