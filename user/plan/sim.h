/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Flow-level (fluid) simulation of one allreduce, or of a training
 * iteration (compute, then the allreduce), under a plan (user/plan/pplan.h) on a
 * topology (user/plan/topo.h).
 *
 * Model: blocks stream, so every transfer of a class runs at once and at
 * the same pace (reduce and broadcast overlapped, hops pipelined); classes
 * progress in proportion to their shares, so the whole plan runs at one
 * tensor rate x (Gbps of each worker's gradient). A resource of capacity C
 * carrying a load of L bytes per tensor byte limits x to C / L: every arc
 * (link direction) with the volume of the transfers routed over it, and
 * every aggregating switch with the volume it sums (its aggregation
 * capacity). x is the smallest of these; the arc or switch reaching it is
 * the bottleneck; an allreduce of S bytes takes 8 S / x, plus hop_s for
 * every step on the plan's longest chain (the alpha of an alpha-beta
 * model: a ring of n members has 2(n - 1) steps, a tree its reduce depth
 * plus its broadcast depth).
 *
 * With `fair` set the run is also played event by event with the classes
 * as independent flows: at every moment their rates are max-min fair over
 * the same resources (progressive filling), a class that finishes frees
 * its share, and the allreduce ends with the last class (fair_time_s).
 * This is what uncoordinated classes get; the proportional time is what
 * classes paced by their shares get.
 *
 * Internal to rinxctl and the selftests: nothing here is exported.
 */
#ifndef RINX_SIM_H
#define RINX_SIM_H

#include "user/plan/pplan.h"

struct sim_opts {
	double bytes;		/* tensor size */
	double compute_s;	/* compute time of an iteration, 0 = none */
	double hop_s;		/* latency of one step, 0 = none */
	int fair;		/* also run the max-min fair event model */
};

struct sim_res {
	double rate_gbps;	/* x: every worker's gradient rate */
	double push_gbps;	/* the same with the reduce alone (the result
				 * coming back not counted): what GRID, ATP
				 * and SwitchML report as a sending rate */
	double time_s;		/* one allreduce of `bytes` */
	double iter_s;		/* compute + allreduce */
	double agg_tput_gbps;	/* workers x rate: gradient absorbed per s */
	int steps;		/* the longest chain of the plan, in steps */
	double ina_gbps;	/* input summed inside switches */
	int bott;		/* arc id, or -(node + 1) for a switch's
				 * aggregation capacity, or INT_MIN if none */
	double bott_util;	/* 1.0 at the bottleneck */
	double *arc_gbps;	/* load per arc at rate x */
	double *agg_gbps;	/* per node: input it aggregates */
	double *tx_gbps;	/* per worker (t->hosts order): bytes it sends */
	double tx_min, tx_max;
	double fair_time_s;	/* with opts.fair: the last class's end */
	int fair_events;	/* classes finishing at distinct times */
};

/* 0 or -errno with a message (e.g. a plan asking a switch without INA to
 * aggregate). */
int sim_run(const struct topo *t, const struct pp_plan *p,
	    const struct sim_opts *o, struct sim_res *r, char *err,
	    size_t errlen);
void sim_res_free(struct sim_res *r);
/* Name of the bottleneck, e.g. "S1->S3" or "S1 (aggregation)". */
const char *sim_bott_name(const struct topo *t, const struct sim_res *r,
			  char *buf, size_t len);

#endif
