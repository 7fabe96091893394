/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internals of a communicator, shared by the files of librinx that make it
 * up: the communicator and request, the AF_XDP context, a frame's layout,
 * and the functions one of these files calls in another. Not installed;
 * the public interface is librinx.h. The files, one concern each:
 *   comm.c       open (pinned maps, tables, job entry, INA ToR), close
 *   xsk.c        AF_XDP sockets and umem, shared per (process, interface)
 *   slow.c       frames, and the slow path: what XDP handed up
 *   ctlmsg.c     control frames: open barrier, INA health, liveness probe
 *   allreduce.c  rounds of an allreduce and the public allreduce calls
 *   cc.c         congestion control of the blocks a rank starts
 *   repair.c     loss repair
 *   ps.c         the parameter server's pushes and pulls
 */
#ifndef RINX_COMM_H
#define RINX_COMM_H

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <linux/types.h>
#include <xdp/xsk.h>
#include "user/log.h"
#include "user/node/node.h"
#include "user/librinx.h"
#include "user/plan/plan.h"

#define FRAME_SIZE	4096
#define NUM_FRAMES	4096
#define UMEM_BYTES	((__u64)NUM_FRAMES * FRAME_SIZE)
/* Whole jumbo frames (RINX_BLOCK_VALUES_JUMBO) in the area past the umem:
 * one received in several buffers is copied into one of these for the slow
 * path, and one built here is copied into umem frames when sent. */
#define BIG_SIZE	((RINX_FRAME_LEN(RINX_BLOCK_VALUES_JUMBO) + 63) & ~63)
#define NUM_BIG		MAX_PENDING
#define AREA_BYTES	(UMEM_BYTES + (__u64)NUM_BIG * BIG_SIZE)
#define RING_SIZE	2048
#define RINX_NO_BLOCK	0xffffffffu	/* no block (struct rinx_req's lask) */
#define MAX_PENDING	NUM_FRAMES
#define XQ_MAX		RINX_RX_QUEUES_MAX	/* receive queues served (the
					 * xsks map's size) */

/* ---- AF_XDP sockets per (process, interface), shared by comms ----
 * One socket per receive queue, all on one umem: the host program hands a
 * frame up on the queue it arrived on, and a NIC with RSS spreads frames
 * over its queues. Queue 0's socket also transmits. */
struct xctx {
	struct xctx *next;
	int refs;
	int ifindex;
	char pin[RINX_PATH_MAX];
	pthread_mutex_t lock;
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	int nq;			/* receive queues, a socket on each */
	struct xq {
		struct xsk_socket *xsk;		/* [0]: xsk */
		struct xsk_ring_prod *fq;	/* [0]: &fq, else &own_fq */
		struct xsk_ring_cons *rx;	/* [0]: &rx, else &own_rx */
		/* rings of queues 1..: receive only, but the kernel wants
		 * a completion ring for every queue sharing the umem */
		struct xsk_ring_prod own_fq;
		struct xsk_ring_cons own_cq, own_rx;
	} q[XQ_MAX];
	__u64 free[NUM_FRAMES];
	int nfree;
	int sg;			/* bound for frames of several buffers
				 * (XDP_USE_SG): jumbo frames pass */
	__u64 big_free[NUM_BIG];	/* free whole-frame buffers */
	int nbig;
	/* slow-path frames waiting for their round or their share */
	__u64 pend_addr[MAX_PENDING];
	__u32 pend_len[MAX_PENDING];
	int npend;
	int tx_unkicked;
	/* jobs of the communicators using this socket */
	__u32 jobs[RINX_MAX_JOBS];
	int njobs;
	/* Without sockets (another process owns the interface's queues):
	 * frames arrive through each communicator's slot ring (rx_ring,
	 * struct rinx_comm) and leave by a packet socket; a frame sent is
	 * free again at the next reclaim, as a completion would make it. */
	int ringed;
	int pkt_fd;
	__u64 sent[NUM_FRAMES];
	int nsent;
};

struct ring_buffer;

struct rinx_req {
	struct rinx_comm *c;
	const void *send;
	void *recv;
	size_t count;
	int dtype;
	size_t done_vals;	/* values finished in earlier rounds */
	/* the round in progress */
	__u32 nb, last_count;
	__u32 *own;		/* blocks this rank starts, in claim order */
	__u32 nown, head;	/* own[0..head) finished */
	/* loss repair of own blocks: when own[j] was claimed (sent) last,
	 * and how often it was sent again; own[0..stamped) are stamped */
	__u64 *sent_at;
	__u8 *resent;
	__u32 stamped, sampled;
	__u32 fin_ahead;	/* own blocks finished beyond head */
	__u64 cursor_t;		/* when the cursor last moved */
	__u64 first_fin;	/* when an own block first finished */
	__u64 opened_at;	/* when the round opened here */
	int lag_sampled;	/* open_lag took this round's sample */
	int holes;		/* hole repairs since */
	__u32 cursor;		/* blocks < cursor are copied out */
	int round_open;
	__u64 last_progress;	/* when a block last finished */
	__u64 moved_at;		/* ... not reset by a repair */
	__u32 last_claimed;
	__u32 conv;		/* blocks whose share is written this round */
	__u32 pre;		/* ... and of the next round, written while
				   this one runs (allreduce.c, preconvert) */
	int pre_ok;		/* this round may write them */
	__u32 reuse;		/* the round runs again (an INA ToR gone):
				   blocks whose share is kept from its
				   first run, not converted again */
	int fetch;		/* the round's missing blocks are fetched
				   from ranks that completed it
				   (rinx_c_fetch_round): the round's other
				   frames are dropped meanwhile */
	int fetch_some;		/* some blocks were asked of peers after a
				   repair that brought nothing (repair.c,
				   fetch_block): their answers are taken,
				   the round's frames still flow */
	__u32 fetches;		/* repairs that fetched: the peer asked */
	__u64 rto;		/* repair after this long without one */
	__u64 rto_base;		/* ... its first value since the last one */
	/* per-hop repair of the reduce (repair.c): the classes whose
	 * reduce adds here and those that finish here; per block, when its
	 * hole was seen or last asked for and how often; per class, its
	 * first block not passed yet (rlo), one past its last block passed
	 * (rhi) and when that moved; when the blocks were last looked at */
	__u64 rmine, rfin;
	__u32 rlo[RINX_MAX_CLASSES];
	__u32 rfirst;		/* the class the next look starts with */
	__u64 rscan_t;
	__u64 *rhole_at;
	__u8 *rasked;
	__u32 rhi[RINX_MAX_CLASSES];
	__u64 rpass_t[RINX_MAX_CLASSES];
	/* holes of finished blocks (rinx_c_gather_holes): per block, when
	 * it was first seen missing or last asked for, and how often;
	 * when the blocks were last looked at */
	__u64 *ghole_at;
	__u8 *gasked;
	__u64 gscan_t;
	/* tail notices (rinx_c_tail_notices): per class, its last block in
	 * the round (nb: none), and one past the last block a peer said it
	 * passed on to here finished (0: none); the hosts still to tell,
	 * [0] of the reduce, [1] of the finished block */
	__u32 lastb[RINX_MAX_CLASSES];
	__u32 gtail[RINX_MAX_CLASSES];
	/* per class, the last block past the first window asked for (NACK,
	 * resend) in the round, RINX_NO_BLOCK: none (rinx_c_count_ask) */
	__u32 lask[RINX_MAX_CLASSES];
	__u64 tleft[2][RINX_MAX_CLASSES];
	__u64 ahead;		/* nodes (below 64) seen in the next round:
				 * they finished this one (slow.c) */
	__u64 ahead_fresh;	/* ... since the last look at the holes */
	__u64 t0;
	int err;
};

struct rinx_comm {
	struct rinx_spec spec;
	const struct rinx_spec_host *self;
	int rank, n;
	__u32 job, slot, window;
	__u32 njobs;		/* job slots of this node (spec jobs=) */
	int slot_held;		/* slot claimed (released at close) */
	int xjob;		/* the job registered in x (released at close) */
	__u64 token;		/* 64 bits on the wire (rinx_hdr.token) */
	int qbits;
	int bval;		/* values per block (frame): the MTU's, or
				 * RINX_BLOCK_VALUES_JUMBO (opts.block_values) */
	int bslots;		/* map slots a block takes (RINX_BLOCK_SLOTS) */
	__u32 wblocks;		/* blocks of a round: window / bslots */
	int timeout_ms, inflight;
	int fd_jobs, fd_nodes, fd_hops, fd_xsks;
	int fd_aggs;		/* agent host: its aggregator slots */
	int fd_claims;		/* this node's job slots: who holds which */
	int fd_rings;		/* the host program's slot rings */
	int fd_ring;		/* this slot's ring, when x is ringed */
	struct ring_buffer *rx_ring;	/* ... read from here */
	int tor_jobs_fd;	/* a hostless ToR rank 0 installs: its job table */
	int tor_rack;		/* agent: the rack whose ToR took the job by message, or -1 */
	/* rank 0: job tables of the aggregators without hosts (a topology's
	 * PS, an aggregating spine) it installed, -1 where none */
	int hostless_fd[RINX_MAX_NODES];
	int hostless_claims[RINX_MAX_NODES];	/* their claims maps */
	__u32 hostless_slot[RINX_MAX_NODES];	/* the slot taken there */
	int tor_claims_fd;	/* install_tor's claims map, handed on */
	__u32 tor_slot;		/* and the slot it took */
	struct rinx_slot *share, *result;
	struct rinx_slot *partial;	/* what this rank's add and forward
					 * hops sent (RNACK answers) */
	size_t map_bytes, cursor_bytes;
	struct rinx_cursor *cursors;	/* mmapped, njobs entries */
	struct xctx *x;
	struct rinx_plan plan;
	/* classes whose reduce reaches this rank's add hop from a host that
	 * can send it again (an add and forward hop, or the class's origin):
	 * the ones it asks with RNACKs (repair.c) */
	__u64 rnack_ok;
	__u64 own_ring;		/* own classes whose first hop asks so */
	/* per class, the hosts this rank passes the reduce (an add hop's)
	 * and the finished block on to: its tail notices' receivers */
	__u64 tail_rto[RINX_MAX_CLASSES];
	__u64 tail_gto[RINX_MAX_CLASSES];
	/* tail_asks when the round before and this one opened: notices go
	 * out only while this rank repairs */
	__u64 asks_before, asks_open;
	int keep;		/* this round's ring hops keep partial sums
				 * (RINX_JOB_KEEP): always on links of known
				 * rate (rated), else after a lossy round */
	int rated;		/* the spec gives link rates */
	int adapt_keep;		/* a plain ring: keeps sums after losses */
	int keep_next;		/* a result of the round had RINX_F_LOSSY */
	__u32 lossy_left;	/* rounds this rank still marks its shares
				 * RINX_F_LOSSY after it saw a loss */
	__u64 loss_seen;	/* loss_runs when the round before opened */
	/* of st.nacks and st.retransmits (rinx_c_count_ask): the runs of
	 * a class's blocks asked for past their round's first window, the
	 * evidence of loss; and the asks that open the tail notices' gate */
	__u64 loss_runs, tail_asks;
	struct rinx_job jobent;
	int ownidx[RINX_CMAP_MAX];	/* pattern position -> index among
					 * the own positions, -1: not own */
	__u32 round;
	__u64 heard;		/* ranks whose OPEN hello arrived */
	int clash;		/* 1 + a rank that runs another plan */
	__u32 clash_id;		/* ... its plan id */
	int clash_bval;		/* 1 + a rank whose blocks have another size */
	int clash_bval_n;	/* ... their values */
	__u64 alive;		/* ranks that answered a PROBE */
	__u64 bye;		/* ranks whose BYE arrived: they close */
	__u64 bye_heard;	/* ranks that said they heard our BYE */
	int closing;		/* in rinx_comm_close: answer BYEs */
	__u64 stay_at;		/* closing: when a peer in its collective
				 * last asked this rank to stay */
	int clean;		/* the last collective completed here */
	/* INA health, agreed when an agent finds its ToR gone (Rina racks
	 * whose aggregator is gone run as plain ring members) */
	__u32 down;		/* racks (bit = index) that fell back */
	__u64 ina_query_at;	/* when this agent last asked its ToR */
	__u32 ina_queries;	/* ... how often */
	__u32 ina_agreed;	/* agreements joined (ina_agree) */
	__u64 slow_adds;	/* reduce hops (own share added) done here in
				   user space, not in XDP */
	__u64 ina_fetched;	/* blocks fetched from ranks that completed
				   a round (rinx_c_fetch_round) */
	int broken;		/* < 0: every collective fails (ina_agree) */
	struct ctlbar {
		__u32 coll;	/* number of the agreement */
		__u64 from;	/* ranks heard */
		__u32 or;	/* OR of their words */
		__u32 lo, hi;	/* least and most of their positions */
	} bar[2][2];		/* [STATUS/READY][this one, the next one] */
	__u32 done_coll[2], done_word[2], done_pos[2];	/* last completed,
							   to answer */
	__u32 ina_seq;		/* INA agreements joined: the next is + 1 */
	struct rinx_req *active;
	struct rinx_ps *ps;	/* the parameter server's store (ps.c) */
	struct rinx_req *spare;	/* a finished one, its arrays kept */
	__u64 srtt, rttvar;	/* own blocks: claim to finished here */
	/* a round's start: from its opening here to the first block of it
	 * finished here (the peers' conversion and scheduling), smoothed
	 * over rounds; the first repair of a round waits longer than that */
	__u64 open_lag;
	__u64 blk_ns;		/* smoothed time per block of the rounds before:
				 * how long an idle trainer may sleep (rinx_wait) */
	struct cc {
		__u64 t;		/* last update */
		__u64 stored, marked;	/* cursor counts at t */
		__u64 shared;		/* cursor shared at t */
		__u32 claimed;		/* cursor next at t */
		double rate;		/* own blocks per second; 0: unpaced */
		double alpha;		/* smoothed fraction of marked blocks */
		double target;		/* rate before the last cut */
		/* the target before a run of cuts without a clean interval
		 * between them lowered it: where a calm spell returns to */
		double top;
		double ai;		/* additive increase per update */
		__u64 cut;		/* time of the last cut */
		int calm;		/* updates in a row without a mark */
		int held;		/* looks in the interval that found an
					 * own block ready and the pacer
					 * holding it back */
		__u32 round;		/* the round of stored0 */
		__u64 stored0;		/* cursor stored when it opened */
		/* the highest rate: CC_CEIL_UTIL of the one at which the
		 * plan fills the spec's busiest link; 0: none known */
		double ceiling;
		/* the ceiling of a job alone, and the jobs it is divided
		 * among (RINX_F_JOBS of the sums stored, 1 to 4) */
		double full;
		int jobs;
	} cc;
	struct rinx_comm_stats st;
	FILE *trace;		/* repair events (RINX_TRACE), or NULL */
	char err[320];
};

/* Rank `bit`'s word and position, heard for barrier b. */
static inline void ctlbar_add(struct ctlbar *b, __u64 bit, __u32 word,
			      __u32 pos)
{
	if (!b->from || pos < b->lo)
		b->lo = pos;
	if (!b->from || pos > b->hi)
		b->hi = pos;
	b->from |= bit;
	b->or |= word;
}

#define RTO_FIRST_NS	10000000ull	/* no progress for 10 ms: repair */
/* no progress for 30 ms on a plan with INA ToRs: their agents ask them
 * whether they still hold the job, each at most every 100 ms */
#define INA_STALL_NS	30000000ull
#define INA_QUERY_NS	100000000ull
/* the word of an INA agreement: racks found gone (bit = index, the first
 * RINX_INA_RACKS racks) */
#define RINX_INA_RACKS		30
static inline __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Sleeps `ns` (under a second) between the polls of a wait loop. */
static inline void nap_ns(long ns)
{
	struct timespec ts = { 0, ns };

	nanosleep(&ts, NULL);
}

/* CPU time of the calling thread: what a conversion costs, whatever else
 * the cores run meanwhile. */
static inline __u64 thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct frame {
	__u8 *eth;
	__u8 *ip;
	__u8 *udp;
	struct rinx_hdr *h;
	__s32 *v;
};

/* The length of the frame a received frame of len bytes is taken as (the
 * host program's reading, parse.bpf.h): jumbo from the jumbo frame's length
 * up, full size from RINX_FRAME_MAX up, else small (hellos, and every frame
 * of a small-MTU job). */
#define RINX_FRAME_JUMBO	RINX_FRAME_LEN(RINX_BLOCK_VALUES_JUMBO)
static inline int rinx_c_frame_len(__u32 len)
{
	return len >= RINX_FRAME_JUMBO ? RINX_FRAME_JUMBO :
	       len >= RINX_FRAME_MAX ? RINX_FRAME_MAX : RINX_FRAME_MIN;
}

/* The values a frame of len bytes carries as the host program reads it. */
static inline int rinx_c_frame_values(__u32 len)
{
	int flen = rinx_c_frame_len(len);

	return flen == RINX_FRAME_JUMBO ? RINX_BLOCK_VALUES_JUMBO :
	       flen == RINX_FRAME_MAX ? RINX_BLOCK_VALUES :
				       RINX_BLOCK_VALUES_MIN;
}

/* The first map slot of block b of the communicator's round (a jumbo
 * block's values continue in the bslots - 1 slots after it). */
static inline __u32 blk_idx(const struct rinx_comm *c, __u32 b)
{
	return c->slot * c->window + b * c->bslots;
}

/* The blocks of one window of the round: c->inflight of every position
 * of the class pattern (a round's first window leaves its origins at
 * once, before every peer has opened the round). */
static inline __u64 rinx_c_window_blocks(const struct rinx_comm *c)
{
	return (__u64)c->inflight * (__u64)c->plan.plen;
}

/* Class of block b in the plan. */
static inline int class_of(const struct rinx_comm *c, __u32 b)
{
	return c->plan.cmap[b % c->plan.plen];
}

/* Index of own block b among this rank's own blocks (the cursor counts
 * them), -1 if b is not one. */
static inline long own_index(const struct rinx_comm *c, __u32 b)
{
	int i = c->ownidx[b % c->plan.plen];

	return i < 0 ? -1 : (long)(b / c->plan.plen) * c->jobent.nown + i;
}

/* The nv values of a block whose first slot is s (a jumbo block's go on
 * in the slots after it, RINX_BLOCK_VALUES each) into v, and back. */
static inline void rinx_c_slots_get(const struct rinx_slot *s, __s32 *v,
				    int nv)
{
	int k, n;

	for (k = 0; k < nv; k += n, s++) {
		n = nv - k < RINX_BLOCK_VALUES ? nv - k : RINX_BLOCK_VALUES;
		memcpy(v + k, s->v, (size_t)n * 4);
	}
}

static inline void rinx_c_slots_put(struct rinx_slot *s, const __s32 *v,
				    int nv)
{
	int k, n;

	for (k = 0; k < nv; k += n, s++) {
		n = nv - k < RINX_BLOCK_VALUES ? nv - k : RINX_BLOCK_VALUES;
		memcpy(s->v, v + k, (size_t)n * 4);
	}
}

static inline int block_count(const struct rinx_req *r, __u32 b)
{
	return b == r->nb - 1 ? (int)r->last_count : r->c->bval;
}

/* comm.c */
int rinx_c_cerr(struct rinx_comm *c, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* One line of c's repair trace: the monotonic time in ns, the rank, then
 * the event (docs/rinx.md, "Tracing repairs"). Call through RINX_TRACE,
 * which costs one test when the trace is off. */
void rinx_c_trace(struct rinx_comm *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define RINX_TRACE(c, ...)						\
	do {								\
		if ((c)->trace)						\
			rinx_c_trace((c), __VA_ARGS__);			\
	} while (0)
int rinx_c_ina_replan(struct rinx_comm *c, __u32 down);
/* Does rack ri's ToR still hold the job (0)? By a message to its daemon. */
int rinx_c_tor_query(struct rinx_comm *c, int ri);

/* xsk.c */
int rinx_c_xctx_get(struct rinx_comm *c, const char *ifname, const char *pin,
		    struct xctx **out);
void rinx_c_xctx_put(struct xctx *x);
/* Gives a ringed communicator its slot's receive ring in the host program,
 * or takes away what a dead process left there; rinx_c_ring_put undoes. */
int rinx_c_ring_set(struct rinx_comm *c);
void rinx_c_ring_put(struct rinx_comm *c);
/* Moves the frames of c's ring into its context's pending frames. */
void rinx_c_ring_rx(struct rinx_comm *c);
/* Adds (add) or removes job among the context's jobs; adding one that is
 * there already (a communicator of it is open in this process): -EALREADY,
 * nothing changed (the open is then refused by the node's claim). */
int rinx_c_xctx_job(struct xctx *x, __u32 job, int add);
int rinx_c_xctx_has_job(const struct xctx *x, __u32 job);
void rinx_c_x_reclaim(struct xctx *x);
void rinx_c_x_refill(struct xctx *x);
void rinx_c_x_kick(struct xctx *x);
void rinx_c_x_sleep(struct rinx_comm *c, long ns);
void rinx_c_x_sleep_many(struct rinx_comm *const *cs, int k, long ns);
int rinx_c_x_send(struct xctx *x, __u64 addr, __u32 len);
/* Where to build a frame of len bytes (a free umem frame, or a whole-frame
 * buffer for a jumbo frame), X_NONE if none is free; rinx_c_x_taken once
 * rinx_c_x_send took it. */
#define X_NONE	(~0ull)
__u64 rinx_c_x_buf(struct xctx *x, __u32 len);
void rinx_c_x_taken(struct xctx *x, __u64 addr);
/* A frame that was pending (received, or a buffer of it) is free again. */
void rinx_c_x_free(struct xctx *x, __u64 addr);
/* Transmit descriptors a frame of len bytes takes. */
static inline __u32 x_descs(__u32 len)
{
	return (len + FRAME_SIZE - 1) / FRAME_SIZE;
}
/* Can a frame of len bytes be built and queued now? */
int rinx_c_x_room(struct xctx *x, __u32 len);
/* Moves the frames the sockets received into the pending frames (a frame
 * of several buffers copied whole into one buffer). */
void rinx_c_x_rx(struct rinx_comm *c);

/* slow.c */
/* What became of a slow-path frame (rinx_c_slow_frame). */
enum rinx_slow_verdict {
	RINX_SP_SEND,	/* finished here, rewritten: transmit it */
	RINX_SP_FREE,	/* finished here, nothing to send: the frame is free */
	RINX_SP_KEEP,	/* not yet: its round or its share is missing */
	RINX_SP_DROP,	/* rejected: the frame is free */
};
void rinx_c_frame_at(__u8 *p, struct frame *f);
/* Addresses of a frame of flen bytes (RINX_FRAME_LEN of the job's block
 * size; RINX_FRAME_MIN for hellos). */
void rinx_c_frame_addr(struct rinx_comm *c, struct frame *f, int to,
		       int flen);
int rinx_c_slow_frame(struct rinx_comm *c, __u8 *p, __u32 len);
int rinx_c_slow_path(struct rinx_comm *c);

/* ctlmsg.c */
int rinx_c_send_ctl(struct rinx_comm *c, int to, int type, int step,
		    __u32 round, __u32 block, __u32 nblocks, __u16 count);
__u64 rinx_c_peers_mask(const struct rinx_comm *c);
void rinx_c_list_ranks(const struct rinx_comm *c, __u64 mask, char *buf,
		       size_t len);
int rinx_c_open_barrier(struct rinx_comm *c);
void rinx_c_close_linger(struct rinx_comm *c);
int rinx_c_linger_over(const struct rinx_comm *c, __u64 t, __u64 end,
		       __u64 cap);
int rinx_c_ina_watch(struct rinx_req *r, __u64 t);
__u64 rinx_c_probe_peers(struct rinx_comm *c, int ms);

/* allreduce.c */
/* Sends own block b; `again`: it was sent before (a retransmission). */
int rinx_c_send_block(struct rinx_req *r, __u32 b, int again);
/* Frees a request and its arrays. */
void rinx_c_req_release(struct rinx_req *r);
/* Completes open round `e` with the blocks it lacks, fetched from ranks
 * that completed it (an INA ToR found gone, ina_agree); the next round
 * opened is e + 2. 1: go on, 2: the collective is complete, < 0: error. */
int rinx_c_fetch_round(struct rinx_req *r, __u32 e);

/* ps.c */
/* An answer of the parameter server, for the store's call in progress. */
int rinx_c_ps_frame(struct rinx_comm *c, __u8 *p, __u32 len);
void rinx_c_ps_detach(struct rinx_comm *c);

/* cc.c */
int rinx_c_pace_ok(struct rinx_cursor *cur, __u64 now);
void rinx_c_pace_charge(struct rinx_cursor *cur, __u64 now);
/* The pacer of a job just opened: its ceiling, and the rate it starts at. */
void rinx_c_cc_init(struct rinx_comm *c);
void rinx_c_cc_update(struct rinx_req *r, __u64 now);

/* repair.c */
void rinx_c_own_timers(struct rinx_req *r, __u64 now);
void rinx_c_keep_round(struct rinx_comm *c);
__u64 rinx_c_rto_stall(const struct rinx_comm *c);
/* an ask for block b of the open round, counted (repair.c); PROBE ORed
 * in: not seen missing, no evidence of a loss */
enum { RINX_ASK_NACK, RINX_ASK_RESEND, RINX_ASK_RNACK, RINX_ASK_PROBE = 8 };
void rinx_c_count_ask(struct rinx_req *r, __u32 b, int what);
__u64 rinx_c_stall_wait(const struct rinx_req *r, __u64 now);
int rinx_c_cursor_hole(const struct rinx_req *r);
__u64 rinx_c_hole_wait(const struct rinx_req *r);
int rinx_c_gather_holes(struct rinx_req *r, __u64 now);
void rinx_c_repair(struct rinx_req *r, int first, int stall);
void rinx_c_reduce_peers(struct rinx_comm *c);
void rinx_c_reduce_init(struct rinx_req *r);
void rinx_c_reduce_holes(struct rinx_req *r, __u64 now);
void rinx_c_tail_notices(struct rinx_req *r);
void rinx_c_tail_heard(struct rinx_req *r, __u32 b, int stage, int from);
void rinx_c_round_done(struct rinx_req *r);

/* Nodes (bits below 64) found done with the round r runs: they hold
 * every block of it (rinx_c_gather_holes asks them); those not known
 * before are fresh until the next look at the holes. */
static inline void rinx_c_ahead(struct rinx_req *r, __u64 nodes)
{
	r->ahead_fresh |= nodes & ~r->ahead;
	r->ahead |= nodes;
}

#endif
