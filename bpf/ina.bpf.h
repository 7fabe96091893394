/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The aggregator of an INA ToR (Rina's abstracted worker on a programmable
 * switch), for the testbed switch program. Frames addressed to the
 * aggregator's MAC are checked like on a host (job, token, bounds, the plan's
 * sender and step), then as a ToR must check a round it has no table of:
 * from a member of the slot, of a round not far ahead of the job's, with
 * a size and dtype that fit the round (rinx_check_shape) and the slot's
 * (rinx_agg_add), and summed in the rack's slots, within the switch's
 * aggregation capacity (bpf/ina_cap.bpf.h); the caller forwards what
 * comes out: a unicast reduce frame to the next ring member, or a gather for
 * the rack's host ports (and the uplink).
 *
 * Include once, from the switch program: through bpf/tables.bpf.h it
 * defines the maps the control plane pins under <pin>/<rack name>/ (jobs,
 * nodes, hops, aggs, stats).
 */
#ifndef RINX_INA_BPF_H
#define RINX_INA_BPF_H

#include "bpf/tables.bpf.h"

/* Set by the loader: this ToR's aggregator identity and knobs. The rinx
 * port before the ports' queues (bpf/sw_link.bpf.h), which class rinx
 * frames by it. */
const volatile __u8 ina_mac[6] = { 0 };
const volatile __u16 ina_port_be = bpf_htons(RINX_DEFAULT_PORT);
const volatile __u32 ina_window = RINX_DEFAULT_WINDOW;

#include "bpf/ina_cap.bpf.h"

enum rinx_ina_verdict {
	RINX_INA_NOT_MINE,	/* not for the aggregator: switch it */
	RINX_INA_DROP,		/* consumed or dropped (counted) */
	RINX_INA_ABORTED,	/* internal error (counted) */
	RINX_INA_UNICAST,	/* readdressed: switch it by its new MAC */
	RINX_INA_GROUP_HOSTS,	/* to every host port of the rack */
	RINX_INA_GROUP_ALL,	/* to every host port and the uplink */
	RINX_INA_CAP_DROP,	/* beyond the aggregation capacity */
};

static __always_inline int ina_out(struct rinx_frame *f, struct rinx_job *job,
				   __u16 to)
{
	struct rinx_node *self, *next;
	__u32 k;

	if (job->self >= RINX_MAX_NODES || to >= RINX_MAX_NODES)
		return rinx_count(RINX_STAT_ABORTED, RINX_INA_ABORTED);
	k = job->slot * RINX_MAX_NODES + job->self;
	self = bpf_map_lookup_elem(&nodes, &k);
	k = job->slot * RINX_MAX_NODES + to;
	next = bpf_map_lookup_elem(&nodes, &k);
	if (!self || !next)
		return rinx_count(RINX_STAT_ABORTED, RINX_INA_ABORTED);
	rinx_readdress(f, self, next, job->self);
	return RINX_INA_UNICAST;
}

/* A raw share for a pool aggregation (RINX_HOP_POOL: ps-ina's ToR, ATP's
 * design; see rinx_pool_add). Whatever leaves goes to the server `to` as a
 * REDUCE from this aggregator carrying its coverage: the slot's sum when it
 * completes or is flushed, the share itself when its slot holds another
 * block. */
static __always_inline int ina_pool(struct rinx_frame *f, struct rinx_job *job,
				    struct rinx_hop *hop, __u32 jid,
				    __u32 round, __u32 block, __u32 sender,
				    const int nv)
{
	__u32 pool = hop->pool, idx, what;
	int ret, reset, resend;
	struct rinx_agg *a;

	if (hop->action != RINX_A_AGG_FWD || (hop->flags & RINX_HOP_SELF) ||
	    pool == 0 || pool > ina_window || f->h->type != RINX_T_CONTRIB)
		return rinx_count(RINX_STAT_DROP_NO_ROUTE, RINX_INA_DROP);
	idx = job->slot * ina_window + rinx_pool_index(jid, block, pool);
	a = bpf_map_lookup_elem(&aggs, &idx);
	if (!a)
		return rinx_count(RINX_STAT_ABORTED, RINX_INA_ABORTED);
	/* the flag is for this ToR: a share that passes on leaves without
	 * it (a flushed sum carries the slot's flags); a refused one is
	 * dropped as it came */
	resend = !!(f->h->flags & RINX_F_RESEND);
	ret = rinx_pool_add(a, f, round, block, sender, hop->mask, resend,
			    &reset, nv);
	if (reset)
		rinx_count(RINX_STAT_AGG_RESET, 0);
	if (ret == RINX_AGG_CONSUMED)
		return rinx_count(RINX_STAT_AGG_ADD, RINX_INA_DROP);
	if (ret == RINX_AGG_DUP)
		return rinx_count(RINX_STAT_DROP_AGG_DUP, RINX_INA_DROP);
	if (ret == RINX_AGG_SHAPE)
		return rinx_count(RINX_STAT_DROP_SHAPE, RINX_INA_DROP);
	if (ret == RINX_AGG_PASS) {
		f->h->flags &= ~RINX_F_RESEND;
		f->h->cover = bpf_cpu_to_be64(1ULL << (sender & 63));
		what = resend ? RINX_STAT_POOL_RESEND : RINX_STAT_POOL_PASS;
	} else {
		what = ret == RINX_AGG_FLUSH ? RINX_STAT_POOL_FLUSH :
					       RINX_STAT_AGG_DONE;
	}
	f->h->type = RINX_T_REDUCE;
	f->h->step = hop->out_step;
	ret = ina_out(f, job, hop->to);
	return ret == RINX_INA_UNICAST ? rinx_count(what, ret) : ret;
}

/* Is round `round` (of a frame that passed every other check) within the
 * bound past the job's newest round (RINX_AGG_AHEAD, set by the control
 * plane in job->ahead)? If so the newest round becomes max(newest, round)
 * with a compare-and-swap: CPUs race, and the round must never go back
 * (a regressed round would refuse a legitimate frame). A failed swap means
 * another CPU moved it; a few tries settle it. Rounds wrap: compared as
 * signed differences. */
static __always_inline int ina_round_ok(struct rinx_job *job, __u32 round)
{
	__u32 cur = job->round, old;
	int i;

	if (job->ahead && (__s32)(round - cur) > (__s32)job->ahead)
		return 0;
	for (i = 0; i < 4 && (__s32)(round - cur) > 0; i++) {
		old = __sync_val_compare_and_swap(&job->round, cur, round);
		if (old == cur)
			break;
		cur = old;
	}
	return 1;
}

/* RNACK from the node this ToR's partial sum of a block goes to, which
 * lacks it (it pulled, bpf/agg.bpf.h): sent again from the slot. */
static __always_inline int ina_rnack(struct rinx_frame *f,
				     struct rinx_job *job, __u32 round,
				     __u32 block, const int nv)
{
	__u32 who, bad;
	int ret;

	bad = rinx_check_asker(f, job, &who);
	if (bad)
		return rinx_count(bad, bad == RINX_STAT_ABORTED ?
				  RINX_INA_ABORTED : RINX_INA_DROP);
	if (!rinx_agg_rnack(f, job, ina_window, round, block, who, nv))
		return rinx_count(RINX_STAT_RNACK_MISS, RINX_INA_DROP);
	ret = ina_out(f, job, who);
	return ret == RINX_INA_UNICAST ? rinx_count(RINX_STAT_RREPAIR, ret) :
					 ret;
}

/* A NACK for a block this ToR has not finished (slot a): what its slot
 * holds decides (rinx_agg_nack). */
static __always_inline int ina_nack_agg(struct rinx_frame *f,
					struct rinx_job *job,
					struct rinx_agg *a, __u32 round,
					__u32 block, __u32 who, const int nv)
{
	__u16 to = 0;
	int ret, what;

	what = rinx_agg_nack_at(f, job, a, round, block, who, &to, nv);
	if (what == RINX_NACK_MISS)
		return rinx_count(RINX_STAT_NACK_MISS, RINX_INA_DROP);
	ret = ina_out(f, job, to);
	return ret != RINX_INA_UNICAST ? ret :
	       rinx_count(what == RINX_NACK_PULL ? RINX_STAT_NACK_PULL :
			  RINX_STAT_NACK_SUM, ret);
}

/* A contribution the slot consumed (counted as added, or as the pull it
 * became): the sender's earlier block that a slot still lacks is asked
 * for in it (bpf/agg.bpf.h, pulls). */
static __always_inline int ina_pull(struct rinx_frame *f,
				    struct rinx_job *job,
				    const struct rinx_hop *hop, __u32 round,
				    __u32 sender)
{
	int ret;

	if (!rinx_agg_pull(f, job, hop, ina_window, round, sender))
		return rinx_count(RINX_STAT_AGG_ADD, RINX_INA_DROP);
	ret = ina_out(f, job, sender);
	return ret == RINX_INA_UNICAST ? rinx_count(RINX_STAT_AGG_PULL, ret) :
					 ret;
}

/* A frame of a known job whose token matched, of nv values (a constant in
 * each of the two copies of this code, parse.bpf.h). */
static __always_inline int ina_block(struct rinx_frame *fp,
				     struct rinx_job *job, __u32 jid,
				     __u32 type, const int nv)
{
	struct rinx_frame f = *fp;
	struct rinx_hop *hop;
	struct rinx_agg *a;
	__u32 round, block, k, idx, sender, what, bad;
	int ret, reset;

	round = bpf_ntohl(f.h->round);
	block = bpf_ntohl(f.h->block);
	bad = rinx_check_bounds(&f, job, ina_window, nv);
	if (bad)
		return rinx_count(bad, RINX_INA_DROP);
	if (type == RINX_T_NACK) {
		/* answer with the finished block if the slot keeps it */
		bad = rinx_check_asker(&f, job, &sender);
		if (bad)
			return rinx_count(bad, bad == RINX_STAT_ABORTED ?
					  RINX_INA_ABORTED : RINX_INA_DROP);
		idx = job->slot * ina_window + block;
		a = bpf_map_lookup_elem(&aggs, &idx);
		if (!a)
			return rinx_count(RINX_STAT_ABORTED, RINX_INA_ABORTED);
		if (!rinx_agg_get_final(a, &f, round, nv))
			return ina_nack_agg(&f, job, a, round, block,
					    sender, nv);
		f.h->type = RINX_T_GATHER;
		ret = ina_out(&f, job, sender);
		return ret == RINX_INA_UNICAST ?
		       rinx_count(RINX_STAT_REPAIR, ret) : ret;
	}
	if (type == RINX_T_RNACK)
		return ina_rnack(&f, job, round, block, nv);
	k = RINX_HOP_INDEX(job->slot, bpf_ntohs(f.h->klass), type);
	hop = bpf_map_lookup_elem(&hops, &k);
	if (!hop)
		return rinx_count(RINX_STAT_ABORTED, RINX_INA_ABORTED);
	if (hop->action < RINX_A_AGG_FWD || hop->action >= RINX_A_MAX)
		return rinx_count(RINX_STAT_DROP_NO_ROUTE, RINX_INA_DROP);
	bad = rinx_check_sender(&f, job, hop, type, &sender);
	if (!bad)
		bad = rinx_check_shape(&f, nv);
	if (bad)
		return rinx_count(bad, bad == RINX_STAT_ABORTED ?
				  RINX_INA_ABORTED : RINX_INA_DROP);
	if (!ina_round_ok(job, round))
		return rinx_count(RINX_STAT_DROP_AHEAD, RINX_INA_DROP);
	if (hop->flags & RINX_HOP_POOL)
		return ina_pool(&f, job, hop, jid, round, block, sender, nv);
	/* a slot per block needs no flush: a share sent again is a
	 * duplicate like any other */
	if (hop->flags & RINX_HOP_COVER)
		f.h->flags &= ~RINX_F_RESEND;
	idx = job->slot * ina_window + block;
	a = bpf_map_lookup_elem(&aggs, &idx);
	if (!a)
		return rinx_count(RINX_STAT_ABORTED, RINX_INA_ABORTED);

	if (hop->action == RINX_A_MCAST_FWD || hop->action == RINX_A_MCAST_END) {
		/* The rack contributed to every block, so the slot holds the
		 * finished round of this gather: anything else is stale. */
		if (a->round != round || !a->done)
			return rinx_count(RINX_STAT_DROP_STALE, RINX_INA_DROP);
		if (!agg_same_shape(a, &f))
			return rinx_count(RINX_STAT_DROP_SHAPE, RINX_INA_DROP);
		rinx_agg_keep(a, &f, round, nv);
		f.h->step = hop->out_step;
		ret = ina_out(&f, job, hop->action == RINX_A_MCAST_FWD ?
				       hop->to : job->self);
		if (ret != RINX_INA_UNICAST)
			return ret;
		rinx_to_group(&f, hop->rack, hop->action == RINX_A_MCAST_FWD);
		return rinx_count(RINX_STAT_AGG_MCAST,
				 hop->action == RINX_A_MCAST_FWD ?
				 RINX_INA_GROUP_ALL : RINX_INA_GROUP_HOSTS);
	}

	ret = rinx_agg_add(a, &f, round, rinx_cover(&f, hop, sender), hop->mask,
			   hop->action == RINX_A_AGG_FINISH, NULL, &reset, nv);
	if (ret == RINX_AGG_OVERLAP)
		return rinx_count(RINX_STAT_AGG_OVERLAP, RINX_INA_DROP);
	if (ret == RINX_AGG_SHAPE)
		return rinx_count(RINX_STAT_DROP_SHAPE, RINX_INA_DROP);
	if (reset)
		rinx_count(RINX_STAT_AGG_RESET, 0);
	if (ret == RINX_AGG_FINAL && type == RINX_T_CONTRIB &&
	    (hop->flags & RINX_HOP_ANSWER)) {
		/* the worker missed the finished block: send it. It expects
		 * the step of this member's gather into the rack: 0 where the
		 * block finishes, else out + 1 */
		f.h->type = RINX_T_GATHER;
		f.h->step = hop->action == RINX_A_AGG_FINISH ? hop->out_step :
							       hop->out_step + 1;
		ret = ina_out(&f, job, sender);
		return ret == RINX_INA_UNICAST ?
		       rinx_count(RINX_STAT_AGG_RESEND, ret) : ret;
	}
	/* a partial sum again after the block finished: whoever misses it
	 * asks for the finished block itself (NACK) */
	if (ret == RINX_AGG_DUP ||
	    (ret == RINX_AGG_FINAL && hop->action == RINX_A_AGG_FWD))
		return rinx_count(RINX_STAT_DROP_AGG_DUP, RINX_INA_DROP);
	/* a duplicate into the finished slot: send the sum on again, which
	 * repairs a loss further on (every receiver is idempotent) */
	what = ret == RINX_AGG_RESEND || ret == RINX_AGG_FINAL ?
	       RINX_STAT_AGG_REEMIT : RINX_STAT_AGG_DONE;
	if (ret == RINX_AGG_STALE)
		return rinx_count(RINX_STAT_DROP_AGG_STALE, RINX_INA_DROP);
	if (ret == RINX_AGG_NEED_SELF)	/* a ToR has no share of its own */
		return rinx_count(RINX_STAT_ABORTED, RINX_INA_ABORTED);
	if (ret == RINX_AGG_CONSUMED)
		return ina_pull(&f, job, hop, round, sender);
	f.h->step = hop->out_step;
	if (hop->action == RINX_A_AGG_FWD) {
		/* the sum covers every contributor of the slot, for a
		 * server that sums coverages (ps-ina) */
		if (hop->flags & RINX_HOP_COVER)
			f.h->cover = bpf_cpu_to_be64(hop->mask);
		f.h->type = RINX_T_REDUCE;
		ret = ina_out(&f, job, hop->to);
		return ret == RINX_INA_UNICAST ? rinx_count(what, ret) : ret;
	}
	f.h->type = RINX_T_GATHER;
	ret = ina_out(&f, job, hop->to);
	if (ret != RINX_INA_UNICAST || hop->rack == RINX_NO_RACK)
		return ret == RINX_INA_UNICAST ? rinx_count(what, ret) : ret;
	rinx_to_group(&f, hop->rack, hop->to != job->self);
	return rinx_count(what, hop->to != job->self ?
			 RINX_INA_GROUP_ALL : RINX_INA_GROUP_HOSTS);
}

static __always_inline int rinx_ina_frame(struct xdp_md *ctx)
{
	struct rinx_frame f = {};
	struct rinx_job *job;
	__u32 jid, type;
	int ret, i;

	ret = rinx_parse(ctx, ina_port_be, &f);
	if (ret == RINX_P_OTHER)
		return RINX_INA_NOT_MINE;
	for (i = 0; i < 6; i++)
		if (f.eth->h_dest[i] != ina_mac[i])
			return RINX_INA_NOT_MINE;
	rinx_count(RINX_STAT_RX, 0);
	if (ret == RINX_P_SHORT || ret == RINX_P_HDR)
		return rinx_count(RINX_STAT_DROP_SHORT, RINX_INA_DROP);
	if (ret == RINX_P_VERSION)
		return rinx_count(RINX_STAT_DROP_VERSION, RINX_INA_DROP);
	type = f.h->type;
	if (type != RINX_T_REDUCE && type != RINX_T_GATHER &&
	    type != RINX_T_CONTRIB && type != RINX_T_NACK &&
	    type != RINX_T_RNACK)
		return rinx_count(RINX_STAT_DROP_TYPE, RINX_INA_DROP);
	jid = bpf_ntohl(f.h->job);
	job = bpf_map_lookup_elem(&jobs, &jid);
	if (!job)
		return rinx_count(RINX_STAT_DROP_JOB, RINX_INA_DROP);
	if (bpf_be64_to_cpu(f.h->token) != job->token)
		return rinx_count(RINX_STAT_DROP_TOKEN, RINX_INA_DROP);
	/* what the aggregator is to sum takes its capacity; requests for
	 * a block (NACK, RNACK) and gathers it only sends on do not */
	if ((type == RINX_T_REDUCE || type == RINX_T_CONTRIB) &&
	    !ina_cap_admit(ctx))
		return RINX_INA_CAP_DROP;
	/* aggregator slots hold one slot's values: no jumbo blocks */
	if (ret == RINX_P_OK_JUMBO)
		return rinx_count(RINX_STAT_DROP_SHAPE, RINX_INA_DROP);
	if (ret == RINX_P_OK)
		return ina_block(&f, job, jid, type, RINX_BLOCK_VALUES);
	return ina_block(&f, job, jid, type, RINX_BLOCK_VALUES_MIN);
}

/* Is the aggregator configured? Constant after load: the verifier drops
 * the aggregator from the program of a switch that is not INA. */
static __always_inline int ina_enabled(void)
{
	return ina_mac[0] | ina_mac[1] | ina_mac[2] | ina_mac[3] |
	       ina_mac[4] | ina_mac[5];
}

/* The aggregator as a subprogram of its own: the switch's paths and the
 * aggregator's are verified (and register-allocated) apart. */
static __noinline int sw_ina(struct xdp_md *ctx)
{
	return rinx_ina_frame(ctx);
}

#endif
