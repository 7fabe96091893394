// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Loss repair: own blocks sent again on their timers (RACK), the blocks
 * of other origins asked for with NACKs when a hole or a stall shows they
 * were lost, and a ring's reduce asked for again, hop by hop (RNACK), when
 * it missed this rank's add and forward hop.
 */
#include <stdlib.h>
#include <string.h>
#include <xdp/xsk.h>
#include "user/comm/comm.h"

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

/* The stall timer of a round that is moving (a block finished or was
 * claimed lately): a loss at the tail of a round (every class's last
 * blocks) is found by it alone, so it follows the measured round trip as
 * TCP's tail loss probe does (2 srtt + 4 rttvar), within 2..10 ms; 10 ms
 * before the first sample. A stall repaired too early costs NACKs that
 * the peers answer from stored copies. */
__u64 rinx_c_rto_stall(const struct rinx_comm *c)
{
	__u64 t = 2 * c->srtt + 4 * c->rttvar;

	if (!c->srtt)
		return RTO_FIRST_NS;
	return t < RTO_BLK_MIN_NS ? RTO_BLK_MIN_NS :
	       t > RTO_FIRST_NS ? RTO_FIRST_NS : t;
}

/* The stall timer of a moving round, at least STALL_BLOCKS times the
 * time a block of it took to finish here so far (of the rounds before, at
 * its start): a job paced slowly (a few hundred blocks/s, the testbed's
 * scaled links) finishes a block every few milliseconds, longer than
 * rinx_c_rto_stall's 2 ms, and every pause between its blocks looked like
 * a stall. Its repair asked the roots for blocks not done yet, in full
 * frames that its links could not carry beside the blocks (a forest on
 * hetero4: 718 stall repairs and 2,769 NACKs per 4 MiB collective of
 * 1,366 blocks; the tree at the pacer's floor: 2,096 and 4,127), and the
 * losses they caused took resends. A fast job (37,000 blocks/s) keeps the
 * 2 ms. */
#define STALL_BLOCKS	8

__u64 rinx_c_stall_wait(const struct rinx_req *r, __u64 now)
{
	const struct rinx_comm *c = r->c;
	__u64 t = rinx_c_rto_stall(c), per = c->blk_ns;

	if (r->cursor && now > r->opened_at)
		per = (now - r->opened_at) / r->cursor;
	if (per > RTO_FIRST_NS)
		per = RTO_FIRST_NS;
	return STALL_BLOCKS * per > t ? STALL_BLOCKS * per : t;
}

/* Selective repair of own blocks, in the manner of RACK (RFC 8985): an
 * own block not finished here is taken for lost when one of its class
 * claimed after it has finished and it is older than its timer (doubled
 * for every resend); blocks of different classes take different paths
 * (a forest's trees, a ring's origins) and finish out of order when all
 * is well;
 * only that block is sent again, while the round goes on. A machine that
 * is merely slow finishes nothing out of order, so it sends nothing again.
 * At the round's tail, once every own block is claimed and one of the
 * round has finished here, nothing later of a class can come to show a
 * loss: there an own block is taken for lost on its timer alone (as
 * RACK's tail loss probe, RFC 8985). The stall timer found those before,
 * counted from the round's last progress: under 1% drop + dup + reorder
 * on unlimited links a Rina member's tail block was 7.6-11 ms old at the
 * first stall (its round trip 1.2-2.3 ms), and the repair that followed
 * asked the agent, which lacked it too, so a second stall 10-20 ms later
 * sent it again. Every hop is idempotent: a block that was only late
 * costs a duplicate, never a wrong sum. Claims are stamped here, when the
 * trainer first sees them (the host program claims in XDP). */
#define OWN_SCAN	256	/* own blocks looked at per call */

static int send_nack(struct rinx_req *r, __u32 b, int to, int step);

static int hole_nackable(const struct rinx_hop *g);

/*
 * An ask for block b (a NACK, a resend of an own block, an RNACK), counted
 * in the stats, and as evidence of loss (rinx_c_keep_round, the tail
 * notices) only past the round's first window, and only once per run of
 * its class's blocks asked in a row (c->loss_runs).
 *
 * The first window leaves every origin at once, before every peer on its
 * path has opened the round. A late peer keeps those frames in its slow
 * path and passes them on from its trainer, while the first of them, once
 * around, let the origins send past the window in XDP: on a fault-free
 * ring of 8 sharing 2 cores a rank asked for up to 149 first-window
 * blocks in one round (its peers answered them as duplicates). A rank that
 * opens a round later in a collective, its slow path holding every frame
 * that came before, delays the blocks after them too: there a rank asked
 * for up to 227 blocks past the first window in one round, of five
 * classes, but in runs of a class's blocks (225, 233, ..., 457 of class 1),
 * at most 12 runs per rank and round. A loss strikes single blocks: under
 * 1% drop + dup + reorder in every round of 640 blocks but one, some rank
 * asked for 18-80 runs (docs/benchmark.md, "Measured: losses counted past
 * the first window").
 *
 * RINX_ASK_PROBE ORed into `what`: a stall's ask for a block past the
 * last of its class finished here, which may simply not be done yet:
 * counted in the stats only.
 */
void rinx_c_count_ask(struct rinx_req *r, __u32 b, int what)
{
	struct rinx_comm *c = r->c;
	__u64 first = rinx_c_window_blocks(c);
	__u32 k = (__u32)class_of(c, b) % RINX_MAX_CLASSES, plen = c->plan.plen;
	int late = b >= first, probe = what & RINX_ASK_PROBE;

	what &= ~RINX_ASK_PROBE;
	if (what == RINX_ASK_RESEND)
		c->st.retransmits++;
	else
		c->st.nacks++;
	if (probe)
		return;
	/* a round wholly in its first window (a short last round, a small
	 * tensor) has no other sign of loss for its tail notices */
	c->tail_asks += late || r->nb <= first;
	if (!late || what == RINX_ASK_RNACK)
		return;
	/* the same block again, or the next of its class: the same run */
	if (r->lask[k] != RINX_NO_BLOCK &&
	    (b == r->lask[k] || b == r->lask[k] + plen)) {
		if (b > r->lask[k])
			r->lask[k] = b;
		return;
	}
	r->lask[k] = b;
	c->loss_runs++;
}

/* Is own block b's first repair a NACK to its aggregator: a class that
 * starts with this rank's share to an aggregator that also sends it the
 * finished block? (Not a pool's: its slots hold any block, it cannot tell
 * whose share a block lacks; ps-ina's finished blocks come from the
 * server anyway.) */
static int agg_asks(const struct rinx_comm *c, __u32 b)
{
	int k = class_of(c, b);
	const struct rinx_hop *g = &c->plan.hops[k][RINX_T_GATHER - 1];

	return c->plan.start_type[k] == RINX_T_CONTRIB &&
	       c->plan.start_to[k] == g->from && hole_nackable(g);
}

void rinx_c_own_timers(struct rinx_req *r, __u64 now)
{
	struct rinx_comm *c = r->c;
	__u32 claimed = __atomic_load_n(&c->cursors[c->slot].next,
					__ATOMIC_ACQUIRE), j, hi;
	__u64 rto = rto_blk(c);
	__u32 hik[RINX_MAX_CLASSES];	/* per class: one past its last
					 * own block finished, in the scan */
	int n = 0, tail;
	__u32 end;

	if (claimed > r->nown)
		claimed = r->nown;
	for (; r->stamped < claimed; r->stamped++) {
		/* the host program stamps what it claims (the trainer sees
		 * a claim only when it looks): the round trip starts there */
		const struct rinx_slot *sh =
			&c->share[blk_idx(c, r->own[r->stamped])];
		__u32 us = __atomic_load_n(&sh->sent_us, __ATOMIC_RELAXED);
		__u32 ago = (__u32)(now / 1000) - us;

		r->sent_at[r->stamped] = us && ago < 10000000u ?
					 now - (__u64)ago * 1000 : now;
	}
	/* the last own block finished here, within the scan, and how many
	 * finished beyond the head (they no longer count as in flight) */
	hi = r->head;
	r->fin_ahead = 0;
	memset(hik, 0, sizeof(hik));
	for (j = r->head; j < r->stamped && j < r->head + OWN_SCAN; j++)
		if (__atomic_load_n(&c->result[blk_idx(c, r->own[j])].round,
				    __ATOMIC_ACQUIRE) == c->round) {
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
	/* the tail: every own block claimed, one of them finished here;
	 * before it, the blocks up to the last one finished here */
	tail = claimed >= r->nown && r->first_fin;
	end = tail ? r->stamped : hi ? hi - 1 : 0;
	for (j = r->head; j < end && n < REPAIR_MAX; j++) {
		__u32 b = r->own[j];

		/* none of its class finished after it (at the tail: none
		 * can) */
		if (j + 1 >= hik[class_of(c, b)] && !tail)
			continue;
		/* A block sent before anything of the round finished here
		 * may have waited for a peer to open the round (kept in its
		 * slow path, finished after later blocks that found the
		 * round open): its clock starts when the round got going,
		 * which took every peer on the block's path. Without this,
		 * every round start cost a few spurious resends (4% of the
		 * blocks of a 64 MiB ring on 4 hosts with 640-block rounds). */
		if (now - (r->sent_at[j] > r->first_fin ? r->sent_at[j] :
			   r->first_fin) < rto << (r->resent[j] < 6 ?
						   r->resent[j] : 6))
			continue;
		if (__atomic_load_n(&c->result[blk_idx(c, b)].round,
				    __ATOMIC_ACQUIRE) == c->round)
			continue;
		if (xsk_prod_nb_free(&c->x->tx, 1) < 1 || c->x->nfree <= 0)
			break;
		{
			const struct rinx_hop *g =
				&c->plan.hops[class_of(c, b)][RINX_T_GATHER - 1];

			/* Asked for before it is sent again:
			 * - a ring whose reduce is repaired hop by hop (its
			 *   hops drop what they passed on already): the block
			 *   finished and its gather back here was lost: the
			 *   node before is asked, twice;
			 * - the block's aggregator, where its finished block
			 *   also comes from, once. It answers with the block,
			 *   or, if its slot lacks this share, with a pull
			 *   that the host program answers (bpf/agg.bpf.h); if
			 *   the slot has it, another's loss holds the block
			 *   and this share is not sent again */
			if ((c->keep && (c->own_ring >> class_of(c, b) & 1) &&
			     (g->action == RINX_A_STORE_FWD ||
			      g->action == RINX_A_STORE_END) &&
			     r->resent[j] < 2) ||
			    (!r->resent[j] && agg_asks(c, b))) {
				if (send_nack(r, b, g->from, g->step))
					break;
				rinx_c_count_ask(r, b, RINX_ASK_NACK);
			} else {
				if (rinx_c_send_block(r, b, 1))
					break;
				RINX_TRACE(c, "resend %u b=%u", c->round, b);
				rinx_c_count_ask(r, b, RINX_ASK_RESEND);
			}
		}
		r->sent_at[j] = now;
		if (r->resent[j] < 255)
			r->resent[j]++;
		n++;
	}
}

static int send_nack(struct rinx_req *r, __u32 b, int to, int step)
{
	RINX_TRACE(r->c, "nack %u b=%u to=%d", r->c->round, b, to);
	return rinx_c_send_ctl(r->c, to, RINX_T_NACK, step, r->c->round, b, r->nb,
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
		k = (__u32)class_of(c, b - 1);
		if (!hi[k] &&
		    __atomic_load_n(&c->result[blk_idx(c, b - 1)].round,
				    __ATOMIC_ACQUIRE) == c->round) {
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
		if (__atomic_load_n(&c->result[blk_idx(c, b)].round,
				    __ATOMIC_ACQUIRE) == c->round)
			return 1;
	return 0;
}

/* How long the next block in order may be missing while later ones of
 * its class finish before it is taken for lost. The blocks of a class
 * follow one path in order, so a later one finished here is the evidence,
 * as in RACK (RFC 8985): past the round's first window the wait is a
 * reorder window, a quarter of the round trip, at least HOLE_MIN_NS (the
 * testbed reorders by a frame; a busy core delays a class's blocks
 * alike), never more than twice the own block timer, the wait before.
 * That was 7 to 100 ms on 8 ranks sharing 2 cores, longer than the stall
 * timer: nearly every hole waited for a stall (docs/benchmark.md, loss on
 * unlimited links). The blocks of the first window keep it: sent before
 * every peer on their path had opened the round, some waited in a peer's
 * slow path while later ones passed (with the short wait, a fault-free
 * ring on 8 ranks NACKed about twice and resent 3-5 times as much). A
 * block past it left its origin only after an earlier one of the
 * origin's had come around the whole path, the round open everywhere. */
#define HOLE_MIN_NS	1000000ull

/* The wait of block b, a hole; proven: a block of its class past the
 * round's first window finished here (that block left its origin with the
 * round open everywhere, so b is no longer merely kept in a peer's slow
 * path either). */
static __u64 hole_wait_at(const struct rinx_req *r, __u32 b, int proven)
{
	const struct rinx_comm *c = r->c;
	__u64 t = c->srtt / 4, most = 2 * rto_blk(c);
	__u8 step = b < r->nb ?
		    c->plan.hops[class_of(c, b)][RINX_T_GATHER - 1].step : 0;

	if (t < HOLE_MIN_NS)
		t = HOLE_MIN_NS;
	if (t > most ||
	    (!proven && (__u64)b < rinx_c_window_blocks(c)))
		t = most;
	/* a gather lost upstream leaves every rank after it a hole: the
	 * later in the gather, the longer a rank waits (the first one's
	 * repair is passed on to the others meanwhile) */
	return t + step * (t / 4);
}

__u64 rinx_c_hole_wait(const struct rinx_req *r)
{
	return hole_wait_at(r, r->cursor, 0);
}

/*
 * Holes asked for one by one. The wait of a hole used to run from the
 * cursor's last move, with one backoff for all: a NACK for a block lost
 * further up the gather goes to a node that misses it too (nack_miss),
 * so it brought nothing, and the next ask of every other hole of this
 * rank waited twice as long, the ones this rank alone could repair (the
 * first rank after a loss) among them; and a cursor held in the round's
 * first window gave every hole of the round the first window's long wait.
 * Under 1% drop + dup + reorder on unlimited links (8 ranks, 16 MiB)
 * the losses were found by the stall timer instead, round after round
 * of them (docs/benchmark.md, loss on unlimited links). Here each hole
 * has its own clock, from when it was first seen here, and its own
 * backoff; the first window's wait holds only until a block of the class
 * past that window finished here. The other ranks after a loss wait a
 * quarter more per gather step, and take the first one's repair as it is
 * passed on. A block whose gather comes from a node that runs the next
 * round already (a frame of it came here, r->ahead) is missing for sure:
 * that node finished this round and holds the block until this rank has
 * finished it too, so it is asked at once, a class's last blocks too
 * (nothing later of their class can show them lost; the stall timer found
 * them before). 1 or more = asked; scanned at most every HOLE_MIN_NS / 8.
 */
#define GSCAN	1024	/* blocks looked at per call */

static int hole_nackable(const struct rinx_hop *g)
{
	return g->action == RINX_A_STORE_FWD || g->action == RINX_A_STORE_END ||
	       g->action == RINX_A_MCAST_FWD || g->action == RINX_A_MCAST_END;
}

int rinx_c_gather_holes(struct rinx_req *r, __u64 now)
{
	struct rinx_comm *c = r->c;
	__u32 hi[RINX_MAX_CLASSES], top = 0, b, k, reads = 0;
	__u64 first = rinx_c_window_blocks(c);
	int n = 0;

	if (!r->ghole_at || !r->gasked || now - r->gscan_t < HOLE_MIN_NS / 8)
		return 0;
	r->gscan_t = now;
	/* the senders whose frames of the next round the host program took
	 * (those it hands up set r->ahead in the slow path) */
	if (c->cursors &&
	    __atomic_load_n(&c->cursors[c->slot].ahead_round,
			    __ATOMIC_ACQUIRE) == c->round + 1) {
		rinx_c_ahead(r, __atomic_load_n(&c->cursors[c->slot].ahead,
						__ATOMIC_RELAXED));
	}
	class_ends(r, hi);
	for (k = 0; k < (__u32)c->plan.nclasses && k < RINX_MAX_CLASSES; k++) {
		/* a class's last block passed on to here (a tail notice)
		 * shows its blocks before it lost as a later one would */
		if (r->gtail[k] > hi[k])
			hi[k] = r->gtail[k];
		if (hi[k] > top)
			top = hi[k];
	}
	if (r->ahead)
		top = r->nb;
	for (b = r->cursor; b < top && n < REPAIR_MAX && reads < GSCAN; b++) {
		const struct rinx_hop *g;
		__u64 wait;
		int done;

		k = (__u32)class_of(c, b) % RINX_MAX_CLASSES;
		g = &c->plan.hops[k][RINX_T_GATHER - 1];
		/* the node it comes from finished the round */
		done = g->from < c->n && g->from < 64 &&
		       (r->ahead >> g->from & 1);
		if (b >= hi[k] && !done)
			continue;	/* nothing later of its class here */
		reads++;
		if (__atomic_load_n(&c->result[blk_idx(c, b)].round,
				    __ATOMIC_ACQUIRE) == c->round)
			continue;
		if (!hole_nackable(g))
			continue;
		if (!r->ghole_at[b]) {
			r->ghole_at[b] = now;
			if (!done)
				continue;
		}
		/* a hole asked of that node before it finished the round
		 * (it lacked the block then) is asked again at once */
		wait = done && (!r->gasked[b] ||
				(r->ahead_fresh >> g->from & 1)) ? 0 :
		       hole_wait_at(r, b, hi[k] > first || done ||
				    b < r->gtail[k]);
		if (now - r->ghole_at[b] < wait << (r->gasked[b] < 6 ?
						     r->gasked[b] : 6))
			continue;
		if (send_nack(r, b, g->from, g->step))
			break;
		rinx_c_count_ask(r, b, RINX_ASK_NACK);
		r->ghole_at[b] = now;
		if (r->gasked[b] < 255)
			r->gasked[b]++;
		n++;
	}
	r->ahead_fresh = 0;
	if (n)
		rinx_c_x_kick(c->x);
	return n;
}

/* A gather from a node without a host (an INA ToR) is kept there in the
 * block's aggregator slot only until the rack's next round takes the
 * slot, and the rack's other workers start that round as soon as they
 * have finished this one: a block this rank missed at the end of a round
 * then stayed lost (Rina with INA ToRs under 1% loss on unlimited links:
 * collectives timed out). Every rank that finished the round holds the
 * block in its result map until this one has finished it too (its next
 * round needs this rank's share), so after a repair that brought nothing
 * the block is fetched from one of them, a peer in turn per block and
 * repair (answered by its trainer: the FETCH of rinx_c_fetch_round;
 * an answer is stored while r->fetch_some is set, until the round closes
 * here, and the round's other frames keep flowing meanwhile). */
static void fetch_block(struct rinx_req *r, __u32 b, int probe)
{
	struct rinx_comm *c = r->c;
	int to;

	if (c->n < 2)
		return;
	to = (int)((c->rank + 1 + (b + r->fetches) % (__u32)(c->n - 1)) %
		   (__u32)c->n);
	if (rinx_c_send_ctl(c, to, RINX_T_HELLO, RINX_HELLO_FETCH, c->round,
			    b, r->nb, block_count(r, b)))
		return;
	RINX_TRACE(c, "fetch %u b=%u to=%d", c->round, b, to);
	r->fetch_some = 1;
	rinx_c_count_ask(r, b, RINX_ASK_NACK | probe);
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
	__u32 hi[RINX_MAX_CLASSES], ahead[RINX_MAX_CLASSES] = { 0 };
	int n = 0;

	class_ends(r, hi);
	for (b = r->cursor; b < r->nb && n < REPAIR_MAX; b++) {
		__u32 klass = class_of(c, b);
		__u32 last = hi[klass] > r->cursor ? hi[klass] : r->cursor;
		const struct rinx_hop *g = &c->plan.hops[klass][RINX_T_GATHER - 1];
		long oi = own_index(c, b);
		int probe;

		/* where the finished block arrives by a gather, its sender
		 * (a ring member, an agent, an INA ToR) keeps it until this
		 * rank has finished the round: ask it. An INA member must
		 * too: the next member may already be a round further, its
		 * slot taken, and only its stored result still holds it */
		int nackable = hole_nackable(g);

		if (b >= last && !stall)
			continue;
		if (__atomic_load_n(&c->result[blk_idx(c, b)].round,
				    __ATOMIC_ACQUIRE) == c->round)
			continue;
		/* REPAIR_AHEAD blocks of the class, not of the pattern: a
		 * class that holds most of a long pattern (ATP's 12 of 13)
		 * would be asked for 24 blocks not done yet per stall, full
		 * frames that no one can answer */
		if (b >= last && ahead[klass % RINX_MAX_CLASSES]++ >= REPAIR_AHEAD)
			continue;
		n++;
		/* past the last of its class finished here: perhaps not
		 * done yet, no evidence of a loss */
		probe = b >= last ? RINX_ASK_PROBE : 0;
		/* a hole's NACK has its own clock (rinx_c_gather_holes) */
		if (nackable && (stall || !r->ghole_at) &&
		    !send_nack(r, b, g->from, g->step))
			rinx_c_count_ask(r, b, RINX_ASK_NACK | probe);
		if (stall && !first && g->from >= c->n)
			fetch_block(r, b, probe);
		/* own blocks: only those already claimed (sent once). Where a
		 * NACK can bring the block, it is sent again only when the
		 * last repair brought nothing (it was lost before finishing,
		 * at the end of the round where RACK cannot see it): a
		 * rack's workers would otherwise all resend their shares of
		 * a block that one of them lost */
		if (oi >= 0 && (!nackable || !first) && oi < claimed &&
		    xsk_prod_nb_free(&c->x->tx, 1) >= 1 &&
		    c->x->nfree > 0 && !rinx_c_send_block(r, b, 1)) {
			RINX_TRACE(c, "resend %u b=%u", c->round, b);
			rinx_c_count_ask(r, b, RINX_ASK_RESEND | probe);
		}
	}
	r->fetches++;
	rinx_c_x_kick(c->x);
}

/*
 * Per-hop repair of a ring's reduce. A partial sum lost on the link into
 * this rank's add and forward (or add and finish) hop is asked for again
 * from the hop before (RINX_T_RNACK), which sends it again from the sum it
 * kept (the partial map) or, at the block's origin, from its share: the
 * loss costs that one hop, where the origin's timer would drive the block
 * along its whole path again (14 hops on a ring of 8) and only after a
 * later block of its came back around. The blocks of a class pass a hop
 * in order, so a block missing here while a later one of its class passed
 * is a hole: asked for after RHOLE_MIN_NS or two pacing gaps (the testbed
 * reorders by a frame, a NIC's queues by a little more). The last blocks
 * of a class in a round have nothing behind them: missing for RTAIL_MIN_NS
 * or eight gaps since its class last passed here (since the round opened,
 * plus a stall's time, if it has not passed yet), they are asked for too
 * (the hop before answers only what it sent: an origin whose pacer has not
 * let the block go yet answers nothing, so a slow peer costs a few waits,
 * never a wrong sum). A class that stops passing here earlier in the
 * round is asked for after a stall's time more (reduce_stopped): a whole
 * window of its origin may have been lost. Each ask doubles the wait for
 * the next one. Every hop that misses a block asks the one before it, so
 * the repair reaches back to wherever the block is, however many hops
 * lost it.
 */
#define RHOLE_MIN_NS	300000ull
#define RTAIL_MIN_NS	2000000ull
#define RSCAN		1024	/* blocks looked at per call */
#define RLOOK		32	/* missing in a row: where a class stops */

static int reduce_passed(const struct rinx_comm *c, const struct rinx_req *r,
			 __u32 b)
{
	const struct rinx_slot *s = (r->rfin >> class_of(c, b) & 1) ?
				    &c->result[blk_idx(c, b)] :
				    &c->partial[blk_idx(c, b)];

	return __atomic_load_n(&s->round, __ATOMIC_ACQUIRE) == c->round;
}

/* Which classes' reduce predecessors can answer an RNACK (c->rnack_ok): a
 * host (an INA ToR or a server without the host program cannot) whose hop
 * for the class is an add and forward towards this rank, or which starts
 * the class's reduce towards it. Their tables are built as they build
 * them; a ring's predecessor is the same node for every class. */
void rinx_c_reduce_peers(struct rinx_comm *c)
{
	struct rinx_plan *q = malloc(sizeof(*q));
	int built = -1;
	__u32 k;

	c->rnack_ok = c->own_ring = 0;
	/* the receivers of this rank's tail notices (none if the plan
	 * cannot be built: the notices only save waits) */
	(void)rinx_plan_next_hosts(&c->spec, c->rank, c->tail_rto,
				   c->tail_gto);
	/* links of known rate: the network is the bottleneck, and a loss is
	 * worth a copy per hop in every round (rinx_job.flags, set by
	 * plan_job); elsewhere the ranks keep partial sums in the rounds
	 * after a lossy one (rinx_c_keep_round), so rnack_ok and own_ring
	 * say what holds when they do */
	c->rated = rinx_spec_min_link(&c->spec) || c->spec.scale_mbit > 0;
	c->keep = c->rated;
	/* Only a plain ring keeps sums by the round: its every reduce hop is
	 * an add, and each asks the one before (RNACK). An aggregator on the
	 * path (an INA rack's agent or ToR) asks nobody, so with the hops
	 * before it dropping an origin's resend as a duplicate, a sum lost
	 * into it would stay lost (seen: Rina with an agent rack under 1%
	 * loss, on unlimited links). */
	c->adapt_keep = c->plan.kind == RINX_PLAN_RING;
	if (c->plan.kind == RINX_PLAN_RINA) {
		int i;

		c->adapt_keep = 1;
		for (i = 0; i < c->spec.nracks; i++)
			if (c->spec.racks[i].ina != RINX_INA_NONE)
				c->adapt_keep = 0;
	}
	if (!q) {
		free(q);
		return;
	}
	for (k = 0; k < (__u32)c->plan.nclasses && k < RINX_MAX_CLASSES; k++) {
		const struct rinx_hop *h = &c->plan.hops[k][RINX_T_REDUCE - 1];
		const struct rinx_hop *ph;

		if (h->action != RINX_A_ADD_FWD &&
		    h->action != RINX_A_ADD_FINISH)
			continue;
		if (h->from >= c->n)
			continue;
		if (built != h->from) {
			built = -1;
			if (rinx_plan_build(q, &c->spec, h->from))
				continue;
			built = h->from;
		}
		ph = &q->hops[k][RINX_T_REDUCE - 1];
		if ((ph->action == RINX_A_ADD_FWD && ph->to == c->rank) ||
		    (q->start_to[k] == c->rank &&
		     q->start_type[k] == RINX_T_REDUCE))
			c->rnack_ok |= 1ull << k;
	}
	/* the own classes whose first hop asks this rank with RNACKs: their
	 * reduce is repaired hop by hop, so a lost own block is a lost
	 * gather back here (rinx_c_own_timers asks before resending) */
	c->own_ring = 0;
	built = -1;
	for (k = 0; k < (__u32)c->plan.nclasses && k < RINX_MAX_CLASSES; k++) {
		int to = c->plan.start_to[k];
		const struct rinx_hop *sh;

		if (c->plan.start_type[k] != RINX_T_REDUCE || to < 0 ||
		    to >= c->n || to == c->rank)
			continue;
		if (built != to) {
			built = -1;
			if (rinx_plan_build(q, &c->spec, to))
				continue;
			built = to;
		}
		sh = &q->hops[k][RINX_T_REDUCE - 1];
		if ((sh->action == RINX_A_ADD_FWD ||
		     sh->action == RINX_A_ADD_FINISH) && sh->from == c->rank)
			c->own_ring |= 1ull << k;
	}
	free(q);
}

#define LOSSY_ROUNDS	8	/* rounds a rank marks its shares after a loss */

/* What says frames were lost: runs of blocks asked for (finished blocks,
 * own blocks sent again) past the first window of their round
 * (rinx_c_count_ask). Not the RNACKs (asked only while the hops keep sums:
 * a hole taken for a loss would keep them on for good), nor a stall's
 * asks for blocks not seen missing, nor the first window's asks, nor more
 * than one per run: a peer that opened the round late holds frames in its
 * slow path, and the asks for them made a fault-free ring keep sums in
 * nearly every round. */
static __u64 losses(const struct rinx_comm *c)
{
	return c->loss_runs;
}

/* Whether the ring hops keep partial sums in the round being opened (r is
 * not open yet): on links of known rate always; elsewhere when a result of
 * the round before carried RINX_F_LOSSY, which every rank read from the
 * same results, so all ranks decide alike. A hop keeping partial sums
 * costs a block copy, so unlimited links pay for it only while losses
 * last: a rank that lost more than a fortieth of a window's blocks in a
 * round (losses: 16 runs of 640 blocks) marks its shares for the next
 * LOSSY_ROUNDS rounds (in convert, user/comm/allreduce.c). */
void rinx_c_keep_round(struct rinx_comm *c)
{
	__u64 l = losses(c);

	if (l - c->loss_seen > c->window / 40 && c->adapt_keep)
		c->lossy_left = LOSSY_ROUNDS;
	else if (c->lossy_left)
		c->lossy_left--;
	c->loss_seen = l;
	c->keep = c->rated || (c->adapt_keep && c->keep_next);
	c->keep_next = 0;
	if (c->keep)
		c->jobent.flags |= RINX_JOB_KEEP;
	else
		c->jobent.flags &= ~RINX_JOB_KEEP;
}

/* The classes whose reduce adds this rank's share here (r->rmine), and
 * those that finish here (r->rfin), for a round being opened. */
void rinx_c_reduce_init(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	__u32 k, b;

	r->rmine = r->rfin = 0;
	for (k = 0; k < (__u32)c->plan.nclasses && k < RINX_MAX_CLASSES; k++) {
		const struct rinx_hop *h = &c->plan.hops[k][RINX_T_REDUCE - 1];

		if ((h->action == RINX_A_ADD_FWD ||
		     h->action == RINX_A_ADD_FINISH) &&
		    (c->rnack_ok >> k & 1) && c->keep)
			r->rmine |= 1ull << k;
		if (h->action == RINX_A_ADD_FINISH)
			r->rfin |= 1ull << k;
		r->rhi[k] = 0;
		r->rlo[k] = 0;
		r->rpass_t[k] = now_ns();	/* the round opens */
	}
	/* the tail notices: each class's last block in the round (among
	 * the last plen), none heard, every receiver still to tell; and no
	 * run of asks yet (rinx_c_count_ask) */
	for (k = 0; k < RINX_MAX_CLASSES; k++) {
		int in = k < (__u32)c->plan.nclasses;

		r->lastb[k] = r->nb;
		r->lask[k] = RINX_NO_BLOCK;
		r->gtail[k] = 0;
		r->tleft[0][k] = in ? c->tail_rto[k] : 0;
		r->tleft[1][k] = in ? c->tail_gto[k] : 0;
	}
	for (b = r->nb; b > 0 && b + (__u32)c->plan.plen > r->nb; b--) {
		k = (__u32)class_of(c, b - 1) % RINX_MAX_CLASSES;
		if (r->lastb[k] == r->nb)
			r->lastb[k] = b - 1;
	}
	c->asks_before = c->asks_open;
	c->asks_open = c->tail_asks;
	r->rfirst = 0;
	r->rscan_t = 0;
	r->fetch_some = 0;	/* fetch_block's, for the round before */
	if (r->rmine)
		memset(r->rhole_at, 0, r->nb * sizeof(*r->rhole_at));
}

/* The next block of class k at or after b (r->nb if none). */
static __u32 next_of(const struct rinx_comm *c, const struct rinx_req *r,
		     __u32 b, __u32 k)
{
	while (b < r->nb && (__u32)class_of(c, b) != k)
		b++;
	return b;
}

/* Ask the hop before for block b of class k once it has waited `wait`
 * since `since` (doubled per ask); 1 = asked, -1 = no room to send. */
static int rnack_due(struct rinx_req *r, __u32 b, __u32 k, __u64 since,
		     __u64 wait, __u64 hole, __u64 now)
{
	struct rinx_comm *c = r->c;
	const struct rinx_hop *h = &c->plan.hops[k][RINX_T_REDUCE - 1];

	/* a loss upstream leaves every hop after it a hole: the later the
	 * hop, the longer it waits, so the first one's repair reaches the
	 * others before they ask the hop before them (which has nothing to
	 * answer with) */
	wait += (h->step > 1 ? h->step - 1 : 0) * hole / 2;
	if (now - since < wait << (r->rasked[b] < 6 ? r->rasked[b] : 6))
		return 0;
	if (rinx_c_send_ctl(c, h->from, RINX_T_RNACK, h->step, c->round, b,
			    r->nb, block_count(r, b)))
		return -1;
	RINX_TRACE(c, "rnack %u b=%u to=%d", c->round, b, h->from);
	rinx_c_count_ask(r, b, RINX_ASK_RNACK);
	r->rhole_at[b] = now;
	if (r->rasked[b] < 255)
		r->rasked[b]++;
	return 1;
}

/*
 * A class that stopped passing here before the round's last window: as a
 * rule it waits for its origin's window, and its next block follows. But
 * when every block of that window was lost past the origin's next hop,
 * nothing follows: the origin cannot send more until its blocks finish,
 * and its resends end at the hops that passed them already (a duplicate
 * there). Only this hop can ask, so once the class has not passed here for
 * a stall's time (rinx_c_stall_wait, after the tail's wait), its missing
 * blocks are asked for, as many as its origin may have in flight (seen: a
 * ring on a topology's 20 Mbit/s side lost a whole window of a class at
 * one switch port, and the round stalled for good). The hop before
 * answers what it passed, nothing else. 1 or more = asked, 0 = not yet,
 * -1 = no room to send.
 */
static int reduce_stopped(struct rinx_req *r, __u32 b, __u32 k, __u64 tail,
			  __u64 hole, __u64 now, int budget)
{
	struct rinx_comm *c = r->c;
	__u64 wait = tail + rinx_c_stall_wait(r, now);
	int n = 0, m, got;

	for (m = 0; b < r->nb && m < c->inflight && n < budget;
	     b = next_of(c, r, b + 1, k), m++) {
		if (reduce_passed(c, r, b))
			continue;
		got = rnack_due(r, b, k, r->rhole_at[b] > r->rpass_t[k] ?
				r->rhole_at[b] : r->rpass_t[k], wait, hole,
				now);
		if (got < 0)
			return n ? n : -1;
		n += got;
	}
	return n;
}

void rinx_c_reduce_holes(struct rinx_req *r, __u64 now)
{
	struct rinx_comm *c = r->c;
	__u64 gap = __atomic_load_n(&c->cursors[c->slot].gap_ns,
				    __ATOMIC_RELAXED);
	__u64 hole = 2 * gap > RHOLE_MIN_NS ? 2 * gap : RHOLE_MIN_NS;
	__u64 tail = 8 * gap > RTAIL_MIN_NS ? 8 * gap : RTAIL_MIN_NS;
	__u32 ncl = c->plan.nclasses < RINX_MAX_CLASSES ?
		    (__u32)c->plan.nclasses : RINX_MAX_CLASSES;
	__u32 b, k, lo, lo0, look, i;
	int n = 0, reads = 0, got;

	if (!r->rmine)
		return;
	/* The trainer calls this on every poll, and a look at a block reads
	 * its slot (a cache miss): on 2 cores, scanning a thousand blocks on
	 * every poll took a fifth of the CPU of a rate-limited ring. A hole
	 * waits at least `hole` before it is asked for, so looking every
	 * hole/8 delays no request by more than an eighth of its wait; and
	 * each class is looked at from its first block not passed, up to
	 * RLOOK blocks past its last one passed (a class passes a hop in
	 * order, but for losses). */
	if (now - r->rscan_t < hole / 8)
		return;
	r->rscan_t = now;
	/* the classes in turn, from where the last look ran out of its
	 * budget, so that one class's long run of holes starves no other */
	for (i = 0; i < ncl && n < REPAIR_MAX && reads < RSCAN; i++) {
		int holes = 0;

		k = (r->rfirst + i) % ncl;
		if (!(r->rmine >> k & 1))
			continue;
		lo = lo0 = next_of(c, r, r->rlo[k], k);
		while (lo < r->nb && reads++ < RSCAN && reduce_passed(c, r, lo))
			lo = next_of(c, r, lo + 1, k);
		/* blocks passing in order pass here too: the tail's and a
		 * stopped class's waits count from the last one */
		if (lo != lo0)
			r->rpass_t[k] = now;
		r->rlo[k] = lo;
		if (lo >= r->nb)
			continue;
		/* how far it passed: RLOOK blocks missing in a row end it */
		b = next_of(c, r, r->rhi[k] > lo ? r->rhi[k] : lo + 1, k);
		for (look = 0; b < r->nb && look < RLOOK && reads++ < RSCAN;
		     b = next_of(c, r, b + 1, k)) {
			if (reduce_passed(c, r, b)) {
				r->rhi[k] = b + 1;
				r->rpass_t[k] = now;
				look = 0;
			} else {
				look++;
			}
		}
		/* holes: a later block of its class passed */
		for (b = lo; b < r->rhi[k] && n < REPAIR_MAX && reads < RSCAN;
		     b = next_of(c, r, b + 1, k)) {
			reads++;
			if (reduce_passed(c, r, b))
				continue;
			if (!r->rhole_at[b]) {
				r->rhole_at[b] = now;
				continue;
			}
			holes++;
			got = rnack_due(r, b, k, r->rhole_at[b], hole, hole,
					now);
			if (got < 0)
				goto out;
			n += got;
		}
		/* the tail: only its class's first missing block, in the
		 * round's last window (before it, blocks that follow a lost
		 * one make it a hole); a class that has not passed here at
		 * all this round waits from the round's start, as long as a
		 * stall (the peers convert their input too) */
		if (holes || n >= REPAIR_MAX)
			continue;
		b = r->rhi[k] > lo ? next_of(c, r, r->rhi[k], k) : lo;
		if (b >= r->nb)
			continue;
		if ((__u64)b + rinx_c_window_blocks(c) < r->nb)
			got = reduce_stopped(r, b, k, tail, hole, now,
					     REPAIR_MAX - n);
		else
			got = rnack_due(r, b, k, r->rhole_at[b] > r->rpass_t[k] ?
					r->rhole_at[b] : r->rpass_t[k],
					r->rhi[k] ? tail : tail + RTO_FIRST_NS,
					hole, now);
		if (got < 0)
			break;
		n += got;
	}
out:
	/* next time from the class this look stopped at (or the next) */
	r->rfirst = i < ncl ? (r->rfirst + i) % ncl : 0;
	if (n)
		rinx_c_x_kick(c->x);
}

/*
 * Tail notices. A class's last block in a round has nothing behind it:
 * lost on a link, no later block of its class shows the loss at the next
 * hop, which found it by a timer alone (the tail's wait of a reduce hop,
 * 2 ms or more after its class last passed, doubled per ask; the stall
 * timer, 2-10 ms, for a finished block). The node before knows when it
 * passed that block on: its trainer tells the next node so in a small
 * hello (RINX_HELLO_TAIL; one per class and round, for the reduce and for
 * the finished block, to each host that takes that stage from it: an
 * agent's multicast reaches its rack's workers, rinx_plan_next_hosts),
 * and the next node takes the notice as it takes a
 * later block of the class: the block and any of its class before it
 * still missing there are holes, asked for after a hole's wait (RNACK for
 * the reduce, NACK for the finished block). And a rank that finished a
 * round says so (RINX_HELLO_DONE) to the nodes it sends finished blocks:
 * every block they still miss from it is asked for at once, as when a
 * frame of its next round comes (that frame comes only when the next
 * collective starts). Under 1% drop + dup + reorder on unlimited links, a
 * ring of 8's last round of a 4 MiB collective (86 blocks, about 11 per
 * class) took 20-33 ms against 2-3 fault-free, nearly all of it waiting
 * for such losses (docs/benchmark.md, "Measured: tail notices").
 *
 * Whether this rank has asked for a block (NACK, RNACK) or sent one again
 * in this round or the one before, past the round's first window or in
 * a round that lies wholly in it (rinx_c_count_ask): a sign of loss. A
 * fault-free round sends no notices (each costs a frame at both ends:
 * with them in every round a fault-free ring of 8 on 2 cores used 4-5%
 * more CPU); under loss nearly every rank repairs something every
 * round. */
static int tails_on(const struct rinx_comm *c)
{
	return c->tail_asks > c->asks_before;
}

/* Hello `kind` of this round (block b, count cnt) to the hosts `to`; 0,
 * or -1 (no room to send: the rest at the next call). A host told is
 * taken out of *to. */
static int hello_to(struct rinx_req *r, __u64 *to, int kind, __u32 b,
		    int cnt)
{
	struct rinx_comm *c = r->c;
	int i;

	for (i = 0; i < c->n && i < 64; i++) {
		if (!(*to >> i & 1))
			continue;
		if (rinx_c_send_ctl(c, i, RINX_T_HELLO, kind, c->round, b,
				    r->nb, (__u16)cnt))
			return -1;
		if (kind == RINX_HELLO_TAIL)
			RINX_TRACE(c, "tail %u b=%u stage=%d to=%d", c->round,
				   b, cnt, i);
		else
			RINX_TRACE(c, "done %u to=%d", c->round, i);
		*to &= ~(1ull << i);
	}
	return 0;
}

void rinx_c_tail_notices(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	__u32 k, ncl = c->plan.nclasses < RINX_MAX_CLASSES ?
		       (__u32)c->plan.nclasses : RINX_MAX_CLASSES;
	__u32 claimed = __atomic_load_n(&c->cursors[c->slot].next,
					__ATOMIC_ACQUIRE);
	int sent = 0;

	if (!tails_on(c))
		return;
	for (k = 0; k < ncl; k++) {
		const struct rinx_hop *h = &c->plan.hops[k][RINX_T_REDUCE - 1];
		__u32 b = r->lastb[k];

		if (b >= r->nb)
			continue;
		/* the reduce, passed on by an add hop or sent by its origin:
		 * the next hop asks again only while the hops keep their
		 * sums (the same on every rank, c->keep) */
		if (r->tleft[0][k] && c->keep) {
			long oi = own_index(c, b);
			int due = h->action == RINX_A_ADD_FWD ?
				  __atomic_load_n(&c->partial[blk_idx(c, b)].round,
						  __ATOMIC_ACQUIRE) == c->round :
				  c->plan.start_type[k] == RINX_T_REDUCE &&
				  oi >= 0 && (__u32)oi < claimed;

			if (due) {
				if (hello_to(r, &r->tleft[0][k],
					     RINX_HELLO_TAIL, b, 1))
					break;
				sent++;
			}
		}
		/* the finished block, where this node passes it on */
		if (r->tleft[1][k] &&
		    __atomic_load_n(&c->result[blk_idx(c, b)].round,
				    __ATOMIC_ACQUIRE) == c->round) {
			if (hello_to(r, &r->tleft[1][k], RINX_HELLO_TAIL,
				     b, 2))
				break;
			sent++;
		}
	}
	if (sent)
		rinx_c_x_kick(c->x);
}

/* A tail notice from node `from` for block b of this round (stage 1:
 * its reduce, 2: the finished block): taken from the node this rank gets
 * that stage of b's class from, and only while it asks it for that. */
void rinx_c_tail_heard(struct rinx_req *r, __u32 b, int stage, int from)
{
	struct rinx_comm *c = r->c;
	__u32 k = (__u32)class_of(c, b) % RINX_MAX_CLASSES;
	const struct rinx_hop *h = &c->plan.hops[k][RINX_T_REDUCE - 1];
	const struct rinx_hop *g = &c->plan.hops[k][RINX_T_GATHER - 1];

	RINX_TRACE(c, "heard %u b=%u stage=%d from=%d", c->round, b, stage,
		   from);
	if (stage == 1 && (r->rmine >> k & 1) && h->from == from) {
		/* as a later block passed: b is a hole of the reduce, whose
		 * clock starts when rinx_c_reduce_holes sees it */
		if (r->rhi[k] < b + 1)
			r->rhi[k] = b + 1;
	} else if (stage == 2 && g->from == from && hole_nackable(g) &&
		   r->gtail[k] < b + 1) {
		r->gtail[k] = b + 1;
	}
}

/* This rank finished the round: DONE to every host it passes finished
 * blocks on to (called before the round closes). */
void rinx_c_round_done(struct rinx_req *r)
{
	struct rinx_comm *c = r->c;
	__u64 to = 0;
	__u32 k;

	if (!tails_on(c))
		return;
	for (k = 0; k < (__u32)c->plan.nclasses && k < RINX_MAX_CLASSES; k++)
		to |= c->tail_gto[k];
	/* a DONE lost costs what it saved, no more: not sent again */
	if (to) {
		(void)hello_to(r, &to, RINX_HELLO_DONE, 0, 1);
		rinx_c_x_kick(c->x);
	}
}
