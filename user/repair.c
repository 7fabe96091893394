// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Loss repair: own blocks sent again on their timers (RACK), the blocks
 * of other origins asked for with NACKs when a hole or a stall shows they
 * were lost.
 */
#include <string.h>
#include <xdp/xsk.h>
#include "user/comm.h"

/* Blocks asked for or sent again per repair: enough for every block a
 * round loses at a few percent, few enough for the AF_XDP rings. */
#define REPAIR_MAX	32
#define REPAIR_AHEAD	2	/* ... per class past its last finished one */

/* Time from claiming an own block to finding it finished here, smoothed
 * as TCP smooths its RTT (RFC 6298): its timer is srtt + 4 rttvar. Only
 * blocks sent once give samples (Karn). */
static void rtt_sample(struct rinx_comm *c, __u64 m)
{
	__u64 d;

	if (!c->srtt) {
		c->srtt = m;
		c->rttvar = m / 2;
		return;
	}
	d = m > c->srtt ? m - c->srtt : c->srtt - m;
	c->rttvar = (3 * c->rttvar + d) / 4;
	c->srtt = (7 * c->srtt + m) / 8;
}

#define RTO_BLK_MIN_NS	2000000ull	/* own block timer: 2 ms .. */
#define RTO_BLK_MAX_NS	50000000ull	/* .. 50 ms, then backoff */

static __u64 rto_blk(const struct rinx_comm *c)
{
	__u64 t = c->srtt + 4 * c->rttvar;

	if (!c->srtt)
		return RTO_FIRST_NS;
	return t < RTO_BLK_MIN_NS ? RTO_BLK_MIN_NS :
	       t > RTO_BLK_MAX_NS ? RTO_BLK_MAX_NS : t;
}

/* Selective repair of own blocks, in the manner of RACK (RFC 8985): an
 * own block not finished here is taken for lost when one of its class
 * claimed after it has finished and it is older than its timer (doubled
 * for every resend); blocks of different classes take different paths
 * (a forest's trees, a ring's origins) and finish out of order when all
 * is well;
 * only that block is sent again, while the round goes on. A machine that
 * is merely slow finishes nothing out of order, so it sends nothing again;
 * a block lost at the end of a round is left to the stall repair. Every
 * hop is idempotent: a block that was only late costs a duplicate, never a
 * wrong sum. Claims are stamped here, when the trainer first sees them
 * (the host program claims in XDP). */
#define OWN_SCAN	256	/* own blocks looked at per call */

void rinx_c_own_timers(struct rinx_req *r, __u64 now)
{
	struct rinx_comm *c = r->c;
	__u32 claimed = __atomic_load_n(&c->cursors[c->slot].next,
					__ATOMIC_ACQUIRE), j, hi;
	__u64 rto = rto_blk(c);
	__u32 hik[RINX_MAX_CLASSES];	/* per class: one past its last
					 * own block finished, in the scan */
	int n = 0;

	if (claimed > r->nown)
		claimed = r->nown;
	for (; r->stamped < claimed; r->stamped++)
		r->sent_at[r->stamped] = now;
	/* the last own block finished here, within the scan, and how many
	 * finished beyond the head (they no longer count as in flight) */
	hi = r->head;
	r->fin_ahead = 0;
	memset(hik, 0, sizeof(hik));
	for (j = r->head; j < r->stamped && j < r->head + OWN_SCAN; j++)
		if (__atomic_load_n(&c->result[c->slot * c->window +
					       r->own[j]].epoch,
				    __ATOMIC_ACQUIRE) == c->epoch) {
			hi = j + 1;
			hik[class_of(c, r->own[j])] = j + 1;
			r->fin_ahead++;
		}
	/* the round trip of the newest finished block (it finished since
	 * the last call, or about): blocks waiting behind a hole would
	 * measure the hole */
	if (hi && !r->first_fin)
		r->first_fin = now;
	if (hi && hi > r->sampled) {
		/* blocks sent before the round's first one finished here
		 * also measure how late the peers started the round */
		if (!r->resent[hi - 1] && r->sent_at[hi - 1] >= r->first_fin)
			rtt_sample(c, now - r->sent_at[hi - 1]);
		r->sampled = hi;
	}
	for (j = r->head; j + 1 < hi && n < REPAIR_MAX; j++) {
		__u32 b = r->own[j];

		if (j + 1 >= hik[class_of(c, b)])
			continue;	/* none of its class finished after it */
		if (now - r->sent_at[j] < rto << (r->resent[j] < 6 ?
						   r->resent[j] : 6))
			continue;
		if (__atomic_load_n(&c->result[c->slot * c->window + b].epoch,
				    __ATOMIC_ACQUIRE) == c->epoch)
			continue;
		if (xsk_prod_nb_free(&c->x->tx, 1) < 1 || c->x->nfree <= 0 ||
		    rinx_c_send_block(r, b, 1))
			break;
		r->sent_at[j] = now;
		if (r->resent[j] < 255)
			r->resent[j]++;
		c->st.retransmits++;
		n++;
	}
}

static int send_nack(struct rinx_req *r, __u32 b, int to, int step)
{
	return rinx_c_send_ctl(r->c, to, RINX_T_NACK, step, r->c->epoch, b, r->nb,
			       block_count(r, b));
}

/* Per class, one past the last block of the class finished here (0: none
 * beyond the cursor). The blocks of a class follow one path from one
 * origin, so they finish in order unless one was lost; blocks of different
 * classes drift apart freely (every origin has its own pacer). */
static void class_ends(const struct rinx_req *r, __u32 *hi)
{
	const struct rinx_comm *c = r->c;
	__u32 ncl = c->plan.nclasses, left = ncl, b, k;

	memset(hi, 0, ncl * sizeof(*hi));
	for (b = r->nb; b > r->cursor && left; b--) {
		k = class_of(c, b - 1);
		if (!hi[k] && __atomic_load_n(&c->result[c->slot * c->window +
							 b - 1].epoch,
					      __ATOMIC_ACQUIRE) == c->epoch) {
			hi[k] = b;
			left--;
		}
	}
}

/* Is the next block in order a hole: a later block of its class finished? */
int rinx_c_cursor_hole(const struct rinx_req *r)
{
	const struct rinx_comm *c = r->c;
	__u32 b;

	/* the same position of the class pattern: the same class */
	for (b = r->cursor + c->plan.plen; b < r->nb; b += c->plan.plen)
		if (__atomic_load_n(&c->result[c->slot * c->window + b].epoch,
				    __ATOMIC_ACQUIRE) == c->epoch)
			return 1;
	return 0;
}

/* How long the next block in order may be missing while later ones
 * finish before it is taken for lost. */
__u64 rinx_c_hole_wait(const struct rinx_comm *c)
{
	__u64 t = 2 * rto_blk(c);

	return t > RTO_BLK_MIN_NS ? t : RTO_BLK_MIN_NS;
}

/* A frame was lost (or a peer is slow): ask the node this one gets the
 * finished block from for it (NACK, answered in XDP from its stored copy)
 * and send the own ones again where that cannot help (every hop is
 * idempotent: a re-driven block only repeats sums and stores). Asks for
 * the holes (missing blocks with a later block of their class finished
 * here) and, after a stall, for the next REPAIR_AHEAD missing blocks of
 * every class too: blocks past the last finished one of their class may
 * simply not be done yet. */
void rinx_c_repair(struct rinx_req *r, int first, int stall)
{
	struct rinx_comm *c = r->c;
	__u32 b, claimed = __atomic_load_n(&c->cursors[c->slot].next,
					   __ATOMIC_ACQUIRE);
	__u32 hi[RINX_MAX_CLASSES];
	int n = 0;

	class_ends(r, hi);
	for (b = r->cursor; b < r->nb && n < REPAIR_MAX; b++) {
		__u32 klass = class_of(c, b);
		__u32 last = hi[klass] > r->cursor ? hi[klass] : r->cursor;
		const struct rinx_hop *g = &c->plan.hops[klass][RINX_T_GATHER - 1];
		long oi = own_index(c, b);

		/* where the finished block arrives by a gather, its sender
		 * (a ring member, an agent, an INA ToR) keeps it until this
		 * rank has finished the round: ask it. An INA member must
		 * too: the next member may already be a round further, its
		 * slot taken, and only its stored result still holds it */
		int nackable = g->action == RINX_A_STORE_FWD ||
			       g->action == RINX_A_STORE_END ||
			       g->action == RINX_A_MCAST_FWD ||
			       g->action == RINX_A_MCAST_END;

		if (b >= last + (stall ? REPAIR_AHEAD * c->plan.plen : 0))
			continue;
		if (__atomic_load_n(&c->result[c->slot * c->window + b].epoch,
				    __ATOMIC_ACQUIRE) == c->epoch)
			continue;
		n++;
		if (nackable && !send_nack(r, b, g->from, g->step))
			c->st.nacks++;
		/* own blocks: only those already claimed (sent once). Where a
		 * NACK can bring the block, it is sent again only when the
		 * last repair brought nothing (it was lost before finishing,
		 * at the end of the round where RACK cannot see it): a
		 * rack's workers would otherwise all resend their shares of
		 * a block that one of them lost */
		if (oi >= 0 && (!nackable || !first) && oi < claimed &&
		    xsk_prod_nb_free(&c->x->tx, 1) >= 1 &&
		    c->x->nfree > 0 && !rinx_c_send_block(r, b, 1))
			c->st.retransmits++;
	}
	rinx_c_x_kick(c->x);
}
