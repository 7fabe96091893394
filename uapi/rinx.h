/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * rinx wire format and BPF map layout.
 *
 * Included by both the XDP programs (bpf/) and user space (user/, tools/,
 * selftests/). Every structure that crosses the BPF/user boundary or the
 * wire is defined once, here or (the testbed switch's own, which librinx
 * never includes) in bpf/switch_kern_user.h.
 *
 * Frame: Ethernet | IPv4 (no options) | UDP (dst = configured port) |
 *        struct rinx_hdr | payload of the job's block size: RINX_BLOCK_VALUES,
 *        RINX_BLOCK_VALUES_MIN or RINX_BLOCK_VALUES_JUMBO x __s32 (the
 *        first `count` carry the block, the rest are zero). The payload's
 *        length says which of the sizes a frame has; a job uses one
 *        (rinx_job.bval), chosen by the MTU of its network (RINX_FRAME_LEN).
 *
 * Header fields are big-endian (the type says so). The fixed-point payload is
 * little-endian: every supported host is little-endian and the XDP hop adds
 * the values natively (see the _Static_assert at the end of this file).
 */
#ifndef RINX_UAPI_H
#define RINX_UAPI_H

#include <linux/types.h>
#include <linux/bpf.h>	/* struct bpf_spin_lock */

#define RINX_MAGIC		0x52494e58	/* "RINX" */
#define RINX_VERSION		2	/* 2: 64-bit token */
#define RINX_DEFAULT_PORT	47001

/* Values of one block: one block travels in one packet. 768 x 4 B keeps the
 * frame (3168 B) within one page, the most a linear XDP frame holds; it
 * needs an IP MTU of 3154. Networks with a smaller MTU (down to the 1,500
 * of plain Ethernet, which leaves 1,418 B of payload) carry blocks of
 * RINX_BLOCK_VALUES_MIN values (frames of 1,504 B, IP MTU 1,490). Slots in
 * the maps always have room for RINX_BLOCK_VALUES. */
#define RINX_BLOCK_VALUES	768
#define RINX_BLOCK_BYTES	(RINX_BLOCK_VALUES * 4)
#define RINX_BLOCK_VALUES_MIN	352
#define RINX_BLOCK_BYTES_MIN	(RINX_BLOCK_VALUES_MIN * 4)
/* Jumbo blocks, for networks of IP MTU RINX_IP_MTU(RINX_BLOCK_VALUES_JUMBO)
 * (8,274) or more: 8 KiB of payload in one multi-buffer XDP frame (the
 * frame spans pages; the programs reach its payload in slices,
 * bpf/frags.bpf.h). A jumbo block takes RINX_JUMBO_SLOTS consecutive
 * slots of its job's window in every map (values 0..767, 768..1535,
 * 1536..2047; the first slot's header speaks for the block), so a window
 * of W slots holds W / RINX_JUMBO_SLOTS jumbo blocks and the kernel
 * memory of a job slot does not depend on its block size. A ring job
 * asks for them at open (rinx_comm_opts.block_values; docs/rinx.md,
 * "Jumbo blocks"). */
#define RINX_BLOCK_VALUES_JUMBO	2048
#define RINX_BLOCK_BYTES_JUMBO	(RINX_BLOCK_VALUES_JUMBO * 4)
#define RINX_JUMBO_SLOTS	3
/* Map slots a block of bval values takes (bval one of the three sizes). */
#define RINX_BLOCK_SLOTS(bval)	((bval) > RINX_BLOCK_VALUES ? \
				 RINX_JUMBO_SLOTS : 1)

/* Job (communicator) slots of a node: the spec's jobs= (default
 * RINX_DEFAULT_JOBS, at most RINX_MAX_JOBS). A job takes the lowest free
 * slot of each node it runs on, whatever its id (user/comm/comm.c, claims). */
#define RINX_MAX_JOBS		256
#define RINX_DEFAULT_JOBS	16
#define RINX_MAX_NODES		64	/* ranks / nodes of one job */
#define RINX_MAX_CLASSES	64	/* block classes of one plan */
/* Blocks per job slot (a round): the spec's window=. Each block of a slot
 * holds RINX_NODE_BLOCK_BYTES of kernel memory on a host (share, result,
 * partial and aggregator slot), so a host pins about
 * jobs x window x RINX_NODE_BLOCK_BYTES: 16 x 640 x 12,416 B = 121 MiB by
 * default, under RINX_NODE_MEM_BUDGET. */
#define RINX_DEFAULT_WINDOW	640
#define RINX_NODE_MEM_BUDGET	(128u << 20)

/* Exponent of an all-zero block: shifts every other operand out. */
#define RINX_EXP_ZERO		(-32768)

enum rinx_type {
	RINX_T_REDUCE = 1,	/* partial sum on the reduce path */
	RINX_T_GATHER = 2,	/* finished block on the broadcast path */
	RINX_T_CONTRIB = 3,	/* a rack worker's share, to its aggregator */
	RINX_T_HELLO = 4,	/* control: open barrier, liveness probe (to
				 * the trainer: step = enum rinx_hello) */
	RINX_T_NACK = 5,	/* "send me the finished block": answered in
				 * XDP with a gather frame carrying the stored
				 * result (step = the step the asker expects) */
	RINX_T_RNACK = 6,	/* "send me again the partial sum you sent me"
				 * (the reduce of block `block`, lost on the
				 * link into the asker): answered in XDP by the
				 * asker's reduce predecessor, from the partial
				 * sum it keeps (or, at the class's origin, its
				 * share), as the reduce frame it sent */
	RINX_T_PS = 7,		/* parameter server: a worker's push or pull
				 * to the job's server and the server's
				 * answers (step = enum rinx_ps_op), handled
				 * in XDP by bpf/ps.bpf.h */
	RINX_T_MAX,
};

enum rinx_hello {
	RINX_HELLO_OPEN = 0,	/* do you know this job? Answered in XDP, by
				 * the host program, with OPEN_YES as soon as
				 * the job is installed there */
	RINX_HELLO_PROBE = 1,	/* are you there? (answered with ALIVE) */
	RINX_HELLO_ALIVE = 2,
	RINX_HELLO_STATUS = 3,	/* INA agreement number `round`; block: the
				 * INA racks (bit = rack index) the sender
				 * found gone; nblocks: where it stands (2e
				 * in round e, 2e + 1 done with it); count:
				 * 1 when it has every status */
	RINX_HELLO_READY = 4,	/* new plan installed after agreement
				 * `round` */
	RINX_HELLO_OPEN_YES = 5,
	RINX_HELLO_OPEN_OTHER = 6,	/* answer to OPEN: the job is known
					 * here but runs another plan (block:
					 * the plan id installed here) */
	RINX_HELLO_OPEN_SIZE = 7,	/* answer to OPEN (whose count is the
					 * asker's block size): the job runs
					 * here with blocks of `count` values,
					 * another size (another MTU) */
	RINX_HELLO_FETCH = 8,	/* after an INA ToR was found gone in round
				 * `round` that some ranks had completed: the
				 * asker lacks finished block `block` (of
				 * `count` values); a block-sized frame */
	RINX_HELLO_BLOCK = 9,	/* answer to FETCH from a rank that stores
				 * the block: its values, exp and flags */
	RINX_HELLO_BYE = 10,	/* the sender closes its communicator with
				 * its last collective complete (it needs
				 * nothing more of the receiver); block 0:
				 * it has not heard the receiver's BYE, 1: it
				 * has (answer with 2), 2: it has, the last
				 * word */
	RINX_HELLO_STAY = 11,	/* answer to BYE from a rank still in the
				 * job's last collective: it may need the
				 * closing rank's hops and stored blocks */
	RINX_HELLO_TAIL = 12,	/* the sender passed on to the receiver block
				 * `block`, the last of its class in round
				 * `round` (count 1: its reduce, 2: the
				 * finished block): the receiver asks for it
				 * and for the class's blocks before it that
				 * it lacks (a loss at a round's tail) */
	RINX_HELLO_DONE = 13,	/* the sender finished round `round`: it
				 * passed on every finished block it sends
				 * the receiver, and holds them all */
};

/* RINX_T_PS frames (docs/rinx.md, "Parameter server"). The store is the
 * server's: `nblocks` blocks of block fixed point, each at an exponent
 * fixed when the server opens it. A request names the block in `block`;
 * a push carries the worker's push number in `round` (1, 2, ...: its
 * iteration + 1), the same on every block of one push and on its resends.
 * Every answer carries in `cover` the clock of the slowest worker that
 * has not left (the pushes it completed; all ones: every worker left) and
 * in `klass` that worker's node id. A leave and the answers other than
 * VALUE are a header alone (RINX_FRAME_HDR_LEN bytes: the server's host
 * program cuts a push down to its ACK); a pull may be one too, where the
 * server's driver leaves room to grow it into its VALUE (rinx's workers
 * send whole pulls: docs/rinx.md, "Parameter server"). */
enum rinx_ps_op {
	RINX_PS_PUSH = 0,	/* worker -> server: add the payload (at the
				 * block's exponent) into the block */
	RINX_PS_PULL = 1,	/* worker -> server: send the block (the
				 * answer keeps `round`: the pull's number) */
	RINX_PS_LEAVE = 2,	/* worker -> server: done pushing, its
				 * clock bounds nobody any more (round 0),
				 * or done with the store, its last pull
				 * made (round 1) */
	RINX_PS_ACK = 3,	/* server -> worker: push `round` of block
				 * `block` is in (now or before), or the
				 * leave is noted */
	RINX_PS_VALUE = 4,	/* server -> worker: the block, its values
				 * and exponent */
	RINX_PS_STALE = 5,	/* server -> worker: refused, the push is
				 * past the staleness bound */
	RINX_PS_RANGE = 6,	/* server -> worker: refused, a value of
				 * the block would leave int32 */
	RINX_PS_PUSHPULL = 7,	/* worker -> server: a push answered by
				 * VALUE, the block right after it (a
				 * resend: the block as it is) */
};

/* rinx_ps_conf.staleness of an asynchronous (unbounded) store */
#define RINX_PS_NO_BOUND	0xffffffffu

/* A store is not a job slot's window: its blocks are entries of the host
 * program's `store` map (a hash without preallocation, key RINX_PS_KEY),
 * made by the server's trainer when it opens the store and deleted when
 * it closes it. So a store of N values pins ceil(N / block values) x
 * RINX_PS_ENTRY_BYTES of kernel memory on its server's host only, while
 * it is open (5.3 bytes per float32 parameter), and a host's stores
 * together hold at most RINX_PS_MAX_BLOCKS blocks (50 M values, 256 MiB);
 * an empty map costs its bucket array (RINX_PS_MAX_BLOCKS x 16 B). */
#define RINX_PS_MAX_BLOCKS	(1u << 16)
#define RINX_PS_KEY(slot, block) (((__u32)(slot) << 24) | (__u32)(block))

/* One block of a store: its values, the exponent fixed at open, and the
 * push number each worker last added into it (a resend is acknowledged,
 * not added again); written only under the lock. */
struct rinx_ps_block {
	struct bpf_spin_lock lock;
	__s16 exp;
	__u16 pad;
	__s32 seq[RINX_MAX_NODES];
	__s32 v[RINX_BLOCK_VALUES];
};

/* What one block of a store pins: the entry with the hash map's element
 * header and key (3,392 B) comes from the kernel's 4 KiB size class. */
#define RINX_PS_ENTRY_BYTES	4096u

/* Per job slot (the host program's psconf map): the parameter server of
 * the job in that slot. Written by the trainer before any frame of the
 * store is answered (job last); applied and left by the server's host
 * program. On a worker only job, server and nblocks are read (answers
 * from the server go to the trainer). The store itself is the store
 * map's entries RINX_PS_KEY(slot, 0 .. nblocks - 1) on the server. */
struct rinx_ps_conf {
	__u32 job;		/* job id the entry is for, 0: none */
	__u32 nblocks;		/* blocks of the store,
				 * 1..RINX_PS_MAX_BLOCKS */
	__u16 last_count;	/* values in its last block */
	__u16 server;		/* node id of the server */
	__u32 staleness;	/* SSP bound in iterations, or
				 * RINX_PS_NO_BOUND */
	__u64 left;		/* workers that left (bit = node id) */
	__u64 done;		/* workers done with the store (their last
				 * pull made): the server may close */
	__u64 applied[RINX_MAX_NODES];	/* blocks pushed by each worker:
					 * its clock is applied / nblocks */
};

/* What the payload encodes (rinx_hdr.dtype, rinx_job.dtype). */
enum rinx_wire_dtype {
	RINX_W_INT32 = 1,	/* raw int32, exp 0, wrapping sums */
	RINX_W_FIXED = 2,	/* float32 as block fixed point */
};

/* rinx_hdr.flags and rinx_slot.flags: non-finite inputs seen in the block */
#define RINX_F_NAN	0x01
#define RINX_F_PINF	0x02
#define RINX_F_NINF	0x04
#define RINX_F_NONFINITE (RINX_F_NAN | RINX_F_PINF | RINX_F_NINF)
/* rinx_slot.flags of a share: its rank saw a loss lately (user/comm/repair.c).
 * ORed into the block as the others are, so every rank finds it in the
 * round's results alike and the ranks keep partial sums for hop-by-hop
 * repair (RINX_JOB_KEEP) in the next round, without a message. */
#define RINX_F_LOSSY	0x08
/* rinx_hdr.flags and the stored block: the rack agent that completed the
 * sum had contributions of at least two jobs in its last epoch
 * (bpf/fair_kern_user.h): a mark on it is a queue the job shares with
 * other rinx jobs, which the agent's fair marks divide. The trainer cuts
 * at most a fifth for such marks (CC_SHARED_SEV, user/comm/cc.c). */
#define RINX_F_SHARED	0x10
/* rinx_hdr.flags and the stored block: the jobs that contributed to the
 * aggregator host (an agent, a server, a tree node) that completed the
 * sum, in its last epoch (bpf/fair_kern_user.h): the field holds jobs - 1,
 * 0 to 3 (3: four or more; 0 also where no aggregator host counted).
 * Where two aggregators' fields meet, the larger stays. The trainer paces
 * at most at its ceiling over that many (user/comm/cc.c). */
#define RINX_F_JOBS		0x60
#define RINX_F_JOBS_SHIFT	5
#define RINX_F_JOBS_MAX		4
/* rinx_hdr.flags only: a worker's share sent again (its timer fired) to a
 * pool aggregator (ps-ina's ToR), which flushes the block's partial sum or
 * passes the share on unaggregated, and clears the flag (docs/rinx.md) */
#define RINX_F_RESEND	0x80

/* An aggregator asks a contributor for a block of its that its slot still
 * lacks once the contributor's block this many blocks later (rounded up to
 * whole class patterns) arrived: a pull (RNACK), bpf/agg.bpf.h. */
#define RINX_PULL_BEHIND	4

struct rinx_hdr {
	__be32 magic;
	__u8 version;
	__u8 type;	/* enum rinx_type */
	__u8 flags;	/* RINX_F_* */
	__u8 step;	/* hops already done on the current path */
	__be32 job;	/* job (communicator) id */
	/* Per-job secret shared by its ranks, 64 bits, compared whole at
	 * every node: a guard against misconfigured and stray jobs, not
	 * against an attacker on the path (docs/security.md). */
	__be64 token;
	__be32 round;	/* the round's sequence number in its job */
	__be32 block;	/* block index within the round */
	__be32 nblocks;	/* blocks in the round */
	__be16 sender;	/* node id of the node that sent this frame */
	__be16 count;	/* values in this block, 1..the job's block size */
	__be16 klass;	/* plan class of the block (rinx_job.cmap) */
	__be16 exp;	/* s16 block exponent: value = q * 2^(exp - qbits) */
	__be16 dtype;	/* enum rinx_wire_dtype of the job's round */
	__be32 resv;	/* sent as zero; keeps the payload 8-byte aligned */
	/* Coverage: the worker nodes (bit i = node i) whose shares the
	 * payload sums. Read only where a hop aggregates by coverage
	 * (RINX_HOP_COVER: ps-ina's server) and only from the aggregators
	 * that hop names in rinx_hop.via, which set it on every frame they
	 * send; every other frame's coverage is its sender's bit, whatever
	 * this field holds. */
	__be64 cover;
} __attribute__((packed));

#define RINX_FRAME_HDR_LEN	(14 + 20 + 8 + (int)sizeof(struct rinx_hdr))
#define RINX_FRAME_MAX		(RINX_FRAME_HDR_LEN + RINX_BLOCK_BYTES)
/* The frame of a block of bval values, and the IP MTU it needs. Control
 * frames (RINX_T_HELLO) are always of the smallest size, so that ranks
 * whose block sizes differ still reach each other and can say so. */
#define RINX_FRAME_LEN(bval)	(RINX_FRAME_HDR_LEN + (int)(bval) * 4)
#define RINX_FRAME_MIN		RINX_FRAME_LEN(RINX_BLOCK_VALUES_MIN)
#define RINX_IP_MTU(bval)	(RINX_FRAME_LEN(bval) - 14)
/* Preamble + start delimiter (8), inter-frame gap (12), FCS (4): what a
 * frame occupies on an Ethernet link beyond the bytes XDP sees (the pacer's
 * and the testbed switch's link arithmetic). */
#define RINX_WIRE_EXTRA		24

/*
 * One block of one job in the share map (this host's contribution, written by
 * the trainer) or the result map (the finished sum, written by XDP). The
 * writer stores values first and round last; a reader that sees the round it
 * waits for sees the values.
 */
struct rinx_slot {
	__u32 round;
	__s16 exp;
	__u8 flags;	/* RINX_F_* */
	__u8 resv;
	__u16 count;
	__u16 step;	/* partial map: the step the kept sum left with */
	__u32 sent_us;	/* share: when it was claimed and sent (CLOCK_-
			 * MONOTONIC in us, low 32 bits; 0: not yet), for
			 * the round trip of own blocks. Keeps v 8-byte
			 * aligned for 64-bit copies */
	__s32 v[RINX_BLOCK_VALUES];
};

/* Node table entry: where a node of the job is reached. */
struct rinx_node {
	__u8 mac[6];
	__u8 resv;
	__u8 rack;	/* id of its rack (RINX_NO_RACK: none) */
	__be32 ip;
};

#define RINX_NO_RACK		0xff
/* Pattern of classes: block b is in class cmap[b % plen] (proportional
 * shares: a class that appears w times in the pattern gets w / plen of the
 * blocks). */
#define RINX_CMAP_MAX		256

/* Per-job state, keyed by job id (hash map). Written by the library. */
/* A node's job slot held by a job (the claims map: slot -> holder). A slot
 * is claimed by inserting its key (BPF_NOEXIST), so two jobs opening at
 * once never take the same one; a holder whose process is gone (pid and
 * start time no longer match a live process on this node) may be taken
 * over. pid 0: held for a job installed from elsewhere (an INA ToR's
 * daemon), released only by its REMOVE. */
struct rinx_claim {
	__u32 job;		/* job id */
	__u32 pid;		/* process that opened it, 0: remote */
	__u64 start;		/* that process's start time (clock ticks
				 * after boot), against pid reuse */
};

/* A frame the host program hands up through a job slot's receive ring
 * (the host program's `rings` map): the slot's trainer runs in a process
 * that does not own the interface's AF_XDP sockets, which bind a receive
 * queue each and so serve one process (docs/rinx.md, "Jobs in separate
 * processes"). The frame's length, then its bytes. */
struct rinx_ring_frame {
	__u32 len;		/* bytes of data[] that hold the frame */
	__u32 resv;
	__u8 data[RINX_FRAME_MAX];
};
/* One slot's ring: about 1,300 frames of the largest size. */
#define RINX_RING_BYTES		(4u << 20)

struct rinx_job {
	__u64 token;		/* rinx_hdr.token, all 64 bits compared */
	__u32 slot;		/* job slot: base of its share/result/hop entries */
	__u32 round;		/* round in progress on this node (an INA ToR:
				 * the newest round it has taken a frame of,
				 * advanced by the ToR itself) */
	__u32 nblocks;		/* blocks of that round */
	__u16 last_count;	/* values in its last block */
	__u16 nclasses;		/* plan classes (ring: number of ranks) */
	__u16 nnodes;
	__u16 self;		/* this node's id */
	__u16 qbits;		/* fixed-point bits of one contribution */
	__u16 dtype;		/* enum rinx_wire_dtype of the round */
	__u32 window;		/* blocks per round the slot holds */
	__u16 plen;		/* length of the class pattern, 1..256 */
	__u16 nown;		/* own positions in the pattern */
	__u8 cmap[RINX_CMAP_MAX];	/* pattern position -> class */
	/* The blocks this node starts: those at pattern positions own[0..
	 * nown) (ascending), so its j-th own block is
	 * (j / nown) * plen + own[j % nown]. */
	__u8 own[RINX_CMAP_MAX];
	/* Per class: where this node's share of a block starts (node id, or
	 * RINX_NO_SEND) and as what (RINX_T_REDUCE: a ring origin's partial
	 * sum; RINX_T_CONTRIB: a raw share for an aggregator). */
	__u16 start_to[RINX_MAX_CLASSES];
	__u8 start_type[RINX_MAX_CLASSES];
	/* The plan the job runs here (user/plan/plan.h rinx_plan_id): an OPEN
	 * hello carries the asker's in `block`; another one is answered with
	 * OPEN_OTHER, so ranks that disagree fail at open. */
	__u32 plan_id;
	/* Aggregator (INA ToR): how many rounds past `round` a frame may
	 * be (RINX_AGG_AHEAD when every round passes this node), 0: no
	 * bound (the plan routes some rounds around it). */
	__u32 ahead;
	__u32 flags;		/* RINX_JOB_* */
	/* Values per block of the job's frames: RINX_BLOCK_VALUES,
	 * RINX_BLOCK_VALUES_MIN or RINX_BLOCK_VALUES_JUMBO (frames of
	 * another size are dropped, RINX_STAT_DROP_SHAPE). */
	__u16 bval;
	__u16 resv2;
	/* The next round's blocks and last block's values, where the trainer
	 * writes that round's shares while this one runs (0: it does not).
	 * A ring hop (add, store) then takes a frame of round + 1 whose
	 * block's share is written for it (its slot is done with this
	 * round here) instead of handing it to the trainer. */
	__u32 next_nblocks;
	__u16 next_last_count;
	__u16 resv3;
};

/* rinx_job.flags: ring hops keep the partial sums they send on (the
 * partial map, answering RNACKs) and drop a reduce or gather they passed
 * on already this round (a loss is repaired hop by hop). Set where the
 * links have known rates (the network is the bottleneck); without it a
 * hop keeps nothing (the copy costs a CPU-bound ring) and a loss is
 * repaired by the block's origin driving it along its path again. */
#define RINX_JOB_KEEP	0x01

/* How many rounds past the newest round an INA ToR has taken a frame of a
 * member's frame may be (rinx_job.ahead). A rank starts round e + 1 only
 * when round e is finished at it, which needs every rank's share of e: so
 * no rank is more than one round ahead of the slowest one, s. Round s - 1
 * is finished, and if every round passes the ToR it took frames of s - 1:
 * its newest round is at least s - 1 and no legitimate frame is past
 * s + 1, two ahead. */
#define RINX_AGG_AHEAD		2

#define RINX_NO_SEND		0xffff

/* Per job slot (mmapped): how many of the blocks this rank starts in the
 * round are claimed (the j-th is block j, or j * nclasses + send_class).
 * The trainer claims with an atomic add, the host program with a
 * compare-and-swap and only a block whose share of the round is written: a
 * gather that ends at this host is turned into its next block in XDP (no
 * copy through AF_XDP); the trainer sends the first ones and fills gaps.
 * round 0: closed (a round's first shares are being written). */
struct rinx_cursor {
	__u32 round;	/* round the cursor counts; written last */
	__u32 next;	/* next own block to claim */
	/* Congestion control (docs/rinx.md), set by the trainer: own blocks
	 * leave at most one per gap_ns (0: unpaced); next_ns is the earliest
	 * departure of the next one, advanced by whoever sends it (the host
	 * program's recycle or the trainer) with a compare-and-swap. */
	__u32 gap_ns;
	__u32 burst;	/* own blocks that may leave back to back after an
			 * idle spell (0: RINX_PACE_BURST) */
	__u64 next_ns;
	/* Written by the host program: finished blocks stored here, and of
	 * those the ones whose frame arrived marked CE (congestion on some
	 * link of its path; an aggregator passes on the marks of the
	 * contributions it consumed). */
	__u64 stored;
	__u64 marked;
	/* Written by the host program: the senders (bit = node id, below 64)
	 * of frames of round ahead_round that it took before the trainer
	 * opened that round (hop_next_ready): each finished the round before
	 * it, so it holds every block of that round for this rank's NACKs. */
	__u32 ahead_round;
	/* Written by the host program: bit k set when a block stored had an
	 * aggregator host shared by k + 1 jobs (RINX_F_JOBS); the trainer
	 * takes and clears it. */
	__u32 jobs;
	__u64 ahead;
	/* Written by the host program: of the marked blocks stored, those
	 * flagged RINX_F_SHARED. */
	__u64 shared;
};

/* Own blocks that may leave at once after an idle spell of the pacer when
 * the trainer sets no burst: one, since the bursts of several senders meet
 * in an aggregator's port. */
#define RINX_PACE_BURST		1

/* IPv4 ECN field (low two bits of the TOS byte). rinx frames leave as
 * ECT(0); a congested switch port turns that into CE. */
#define RINX_ECN_MASK		0x03
#define RINX_ECN_ECT0		0x02
#define RINX_ECN_CE		0x03

enum rinx_action {
	RINX_A_NONE = 0,	/* this node does not take this class/type */
	RINX_A_ADD_FWD,		/* add local share, forward to next */
	RINX_A_ADD_FINISH,	/* add local share, store result, start gather */
	RINX_A_STORE_FWD,	/* store result, forward to next */
	RINX_A_STORE_END,	/* store result, end of the path here */
	/* aggregator (INA ToR, or an agent host for its rack) */
	RINX_A_AGG_FWD,		/* into the slot; complete: reduce to next */
	RINX_A_AGG_FINISH,	/* into the slot; complete: gather to the rack
				 * (and on to next unless to == self) */
	RINX_A_MCAST_FWD,	/* gather: into the rack and on to next */
	RINX_A_MCAST_END,	/* gather: into the rack only */
	RINX_A_MAX,
};

/* Hop table entry: what this node does with (class, type).
 * Index: (slot * RINX_MAX_CLASSES + class) * 3 + (type - 1).
 *
 * Single-sender hops (ADD_*, STORE_*, MCAST_*) take the frame from `from`
 * only, carrying `step`. Aggregations (AGG_*) take one frame per
 * contributor: `mask` has bit i for node i (any node of the job: the
 * workers of a rack, the previous ring member, the children of a tree
 * node, every worker at a parameter server); a partial sum from `from`
 * must carry `step`, a raw share (CONTRIB) step 0. With RINX_HOP_SELF the
 * node adds its own share to the completed sum (a host that aggregates:
 * agent, tree node, parameter server). Fan-out: actions that end in a
 * rack's group send into the group of rack `rack` (the ToR replicates to
 * the rack's hosts) and, with `to` another node, on to `to` too. */
struct rinx_hop {
	__u8 action;	/* enum rinx_action */
	__u8 step;	/* step the frame must carry when it arrives */
	__u16 from;	/* node id the frame must come from */
	__u16 to;	/* next node id (forwarding actions) */
	__u8 out_step;	/* aggregator: step of the frame it sends */
	__u8 rack;	/* group actions: the rack whose group gets it */
	__u8 flags;	/* RINX_HOP_* */
	__u8 resv[3];
	/* RINX_HOP_POOL: slots of the job's pool (1..window); the block's
	 * slot is rinx_pool_index(job, block, pool) */
	__u32 pool;
	__u64 mask;	/* aggregator: contributor nodes that complete a slot
			 * (RINX_HOP_COVER: the coverage that completes it) */
	__u64 via;	/* RINX_HOP_COVER: aggregators whose frames carry a
			 * coverage (any subset of mask, in rinx_hdr.cover) */
};

#define RINX_HOP_SELF	0x01	/* aggregator adds its own share */
#define RINX_HOP_ANSWER	0x02	/* aggregator: a raw share arriving into the
				 * slot of a finished block is answered with
				 * the block (its sender stores the gather
				 * that leaves here, at out_step, or
				 * out_step + 1 after AGG_FWD) */
#define RINX_HOP_POOL	0x04	/* aggregator (INA ToR): a bounded pool of
				 * `pool` slots hashed by (job, block)
				 * instead of a slot per block; a share
				 * whose slot holds another block passes on
				 * to `to` unaggregated (ATP) */
#define RINX_HOP_COVER	0x08	/* aggregator: works in coverages. It sums
				 * what frames cover (rinx_hdr.cover of the
				 * `via` nodes' frames, the sender's bit for
				 * the others), refuses a frame that overlaps
				 * the slot's coverage in part
				 * (RINX_STAT_AGG_OVERLAP), and its sums
				 * leave with their coverage */

#define RINX_HOP_TYPES	3
#define RINX_HOP_INDEX(slot, klass, type) \
	(((slot) * RINX_MAX_CLASSES + (klass)) * RINX_HOP_TYPES + ((type) - 1))

/* Aggregator slot: one block of one job at an INA ToR or agent host.
 * Index: slot * window + block, or, with RINX_HOP_POOL, slot * window +
 * rinx_pool_index(): then (round, block) is the key of the block the slot
 * holds, seen == 0 marks it free. The lock serializes contributors that
 * arrive on several CPUs at once. */
struct rinx_agg {
	struct bpf_spin_lock lock;
	__u32 round;	/* round the slot holds */
	__u64 seen;	/* contributor nodes added so far */
	__s16 exp;
	__u8 flags;
	__u8 done;	/* seen == mask: the sum has left */
	__u8 final;	/* v holds the finished block (the sum of all
			 * ranks), kept to answer NACKs */
	__u8 ce;	/* a contribution of this round arrived marked CE:
			 * the sum leaves marked */
	__u8 pend;	/* every contributor is in, the node's own share
			 * is not written yet: the sum waits for the
			 * trainer (slow path), which completes the slot */
	__u8 dtype;	/* enum rinx_wire_dtype of the round it holds */
	__u32 block;	/* pool slot: the block it holds */
	__u32 shape;	/* RINX_SHAPE() of the round it holds: set by the
			 * first contribution, every other one must match
			 * (RINX_STAT_DROP_SHAPE) */
	__s32 v[RINX_BLOCK_VALUES];
};

/* The size of a round as an aggregator slot keeps it: blocks in the round
 * and values in this block. Rounds of RINX_SHAPE_MAX_BLOCKS blocks or more
 * (12 GiB) are refused (RINX_STAT_DROP_BOUNDS). */
#define RINX_SHAPE_MAX_BLOCKS	(1u << 22)
#define RINX_SHAPE(nblocks, count)	((__u32)(nblocks) << 10 | (count))

/* The pool slot of a block (RINX_HOP_POOL): a multiplicative hash of (job,
 * block), so that the blocks of a round (and of several jobs) spread over
 * the pool as ATP's hashed aggregator index does. One definition for the
 * ToR, the control plane and the tests. */
static inline __u32 rinx_pool_index(__u32 job, __u32 block, __u32 pool)
{
	__u32 h = (block ^ (job * 0x9e3779b9u)) * 0x85ebca6bu;

	h ^= h >> 16;
	return pool ? h % pool : 0;
}

/* Group addresses of a rack's gather multicast: frames to these MACs are
 * flooded by the rack's ToR to its host ports (..:00) or to its host ports
 * and its uplink (..:01), where the uplink copy gets the MAC of its IP
 * destination. Locally administered multicast: 03:72:78:<rack>:00:0x. */
#define RINX_GROUP_MAC0		0x03
#define RINX_GROUP_MAC1		0x72
#define RINX_GROUP_MAC2		0x78
/* rinx_hop.rack of a fan-out to every host of the job: the frame goes to
 * 03:72:78:ff:ff:00, which every switch floods (every port but the one it
 * came by), so each host gets one copy: the multicast tree of an L2
 * fabric whose hosts are the job's (the testbed's are). */
#define RINX_GROUP_EVERY	0xfe

/* Per-CPU counters of the host program. */
enum rinx_stat {
	RINX_STAT_RX,		/* rinx frames seen */
	RINX_STAT_PASS,		/* non-rinx frames passed to the stack */
	RINX_STAT_REDUCE_FWD,	/* reduce hop done, forwarded */
	RINX_STAT_REDUCE_FINISH,/* last reduce hop: result stored, gather out */
	RINX_STAT_GATHER_FWD,	/* gather stored and forwarded */
	RINX_STAT_GATHER_END,	/* gather stored, path ends here */
	RINX_STAT_SLOW_NOT_READY, /* to AF_XDP: local share not written yet */
	RINX_STAT_SLOW_FUTURE,	/* to AF_XDP: frame of the next round */
	RINX_STAT_SLOW_MISMATCH,/* to AF_XDP: size differs from local round */
	RINX_STAT_DROP_SHORT,	/* truncated headers or payload */
	RINX_STAT_DROP_VERSION,	/* bad magic or version */
	RINX_STAT_DROP_TYPE,	/* unknown type */
	RINX_STAT_DROP_JOB,	/* unknown job id */
	RINX_STAT_DROP_TOKEN,	/* wrong token */
	RINX_STAT_DROP_SENDER,	/* sender/step/source not the planned one */
	RINX_STAT_DROP_BOUNDS,	/* count or block out of range */
	RINX_STAT_DROP_STALE,	/* a frame of a finished round */
	RINX_STAT_DROP_NO_ROUTE,/* no hop entry for (class, type) */
	RINX_STAT_DROP_NO_XSK,	/* slow path wanted but no socket bound */
	RINX_STAT_ABORTED,	/* internal error (map lookup failed) */
	RINX_STAT_AGG_ADD,	/* contribution added, slot not complete */
	RINX_STAT_AGG_DONE,	/* contribution completed a slot, sum sent */
	RINX_STAT_AGG_MCAST,	/* gather sent into the rack */
	RINX_STAT_DROP_AGG_DUP,	/* contributor already in the slot */
	RINX_STAT_DROP_AGG_STALE, /* contribution for an older round */
	RINX_STAT_AGG_RESET,	/* slot taken over by a newer round before
				 * it completed (a contribution was lost) */
	RINX_STAT_AGG_RESEND,	/* duplicate into a finished slot answered
				 * with the stored sum */
	RINX_STAT_SLOW_HELLO,	/* to AF_XDP: control frame of the job */
	RINX_STAT_RECYCLED,	/* gather stored, frame reused for the next
				 * block this host starts */
	RINX_STAT_REPAIR,	/* NACK answered with the stored block */
	RINX_STAT_NACK_MISS,	/* NACK for a block not finished here */
	RINX_STAT_AGG_REEMIT,	/* duplicate into a finished slot: its sum
				 * sent on again (repairs a loss downstream) */
	RINX_STAT_HELLO_EARLY,	/* hello of a job not installed here (yet):
				 * the open barrier repeats it */
	RINX_STAT_HELLO_YES,	/* open barrier: "this node knows the job"
				 * answered in XDP */
	RINX_STAT_ECN_CE,	/* finished block stored from a frame marked
				 * CE (congestion on its path) */
	RINX_STAT_PACED,	/* gather ended here but the pacer held the
				 * next own block back (the trainer sends it
				 * when its time comes) */
	RINX_STAT_SLOW_SELF,	/* to AF_XDP: an aggregated sum waits for
				 * this host's own share (not written yet) */
	RINX_STAT_POOL_PASS,	/* pool: the share's slot holds another
				 * block (a collision): passed on to the
				 * server unaggregated */
	RINX_STAT_POOL_FLUSH,	/* pool: a share sent again (RINX_F_RESEND)
				 * found its block's slot: the partial sum
				 * sent on with its coverage, slot freed */
	RINX_STAT_POOL_RESEND,	/* pool: a share sent again whose block
				 * has no slot: passed on unaggregated */
	RINX_STAT_AGG_OVERLAP,	/* coverage aggregation: a frame covers
				 * some but not all of what the slot has:
				 * refused (the sum stays exact) */
	RINX_STAT_DROP_MEMBER,	/* sender not a node of the job, source
				 * address not the sender's, or not one of
				 * the aggregation's contributors */
	RINX_STAT_DROP_AHEAD,	/* round too far ahead of this node's
				 * (RINX_AGG_AHEAD at an INA ToR, one round
				 * at a host) */
	RINX_STAT_DROP_SHAPE,	/* aggregator: dtype, block count or value
				 * count that does not fit the round (a
				 * non-last block not full, an unknown dtype,
				 * or not the slot's round's); any node: a
				 * frame of another block size than its
				 * job's, or a jumbo block where only
				 * one-slot blocks go (aggregations, stores) */
	RINX_STAT_RREPAIR,	/* RNACK answered with the kept partial sum
				 * (or the origin's share) */
	RINX_STAT_RNACK_MISS,	/* RNACK for a reduce this node did not
				 * send (yet) or does not keep */
	RINX_STAT_DROP_DUP,	/* ring hop: a reduce or gather this node
				 * passed on already this round (a network
				 * duplicate, or a repair that came late) */
	RINX_STAT_PS_PUSH,	/* parameter server: a push added */
	RINX_STAT_PS_DUP,	/* ... a push added before (a resend or a
				 * network duplicate): acknowledged again,
				 * not added */
	RINX_STAT_PS_PULL,	/* ... a pull answered from the store */
	RINX_STAT_PS_STALE,	/* ... a push past the staleness bound:
				 * refused */
	RINX_STAT_PS_RANGE,	/* ... a push that would overflow a value:
				 * refused */
	RINX_STAT_PS_LEAVE,	/* ... a worker left */
	RINX_STAT_SLOW_PS,	/* to AF_XDP: the server's answer to this
				 * host's trainer */
	RINX_STAT_AGG_PULL,	/* aggregator: a contribution added (counted
				 * here, not in AGG_ADD) whose frame went
				 * back as an RNACK for the contributor's
				 * block RINX_PULL_BEHIND (rounded up to the
				 * class pattern) earlier, which the slot
				 * lacks */
	RINX_STAT_NACK_PULL,	/* aggregator: a NACK for a block whose slot
				 * lacks the asker's share, sent back as the
				 * RNACK for it */
	RINX_STAT_NACK_SUM,	/* aggregator (agg+fwd): a NACK for a block
				 * whose partial sum left and whose finished
				 * block has not come back: the sum sent on
				 * again */
	RINX_STAT_FAIR_UNMARK,	/* aggregator: a marked sum of a job below
				 * its fair share of the aggregator's
				 * contributions left unmarked
				 * (bpf/fair_kern_user.h) */
	RINX_STAT_MAX,
};

_Static_assert(sizeof(struct rinx_hdr) == 54, "rinx_hdr size");
_Static_assert(__builtin_offsetof(struct rinx_hdr, job) == 8, "job offset");
_Static_assert(__builtin_offsetof(struct rinx_hdr, token) == 12, "token");
_Static_assert(__builtin_offsetof(struct rinx_hdr, round) == 20, "round");
_Static_assert(__builtin_offsetof(struct rinx_hdr, sender) == 32, "sender");
_Static_assert(__builtin_offsetof(struct rinx_hdr, exp) == 38, "exp");
_Static_assert(__builtin_offsetof(struct rinx_hdr, cover) == 46, "cover");
_Static_assert(RINX_FRAME_HDR_LEN == 96, "payload is 8-byte aligned");
_Static_assert(RINX_FRAME_MAX == 3168, "frame size (docs, MTU 3154)");
_Static_assert(RINX_IP_MTU(RINX_BLOCK_VALUES_MIN) <= 1500 &&
	       RINX_BLOCK_VALUES_MIN % 8 == 0, "small frames fit MTU 1500");
_Static_assert(RINX_IP_MTU(RINX_BLOCK_VALUES_JUMBO) <= 9000 &&
	       RINX_BLOCK_VALUES_JUMBO > 2 * RINX_BLOCK_VALUES &&
	       RINX_BLOCK_VALUES_JUMBO <= RINX_JUMBO_SLOTS * RINX_BLOCK_VALUES,
	       "jumbo frames fit MTU 9000 and their slots");
_Static_assert(sizeof(struct rinx_slot) == 16 + RINX_BLOCK_BYTES, "slot");
_Static_assert(__builtin_offsetof(struct rinx_slot, v) == 16, "slot.v");
_Static_assert(sizeof(struct rinx_node) == 12, "node");
_Static_assert(sizeof(struct rinx_job) == 64 + 2 * RINX_CMAP_MAX +
	       3 * RINX_MAX_CLASSES, "job (bval in what was padding)");
_Static_assert(__builtin_offsetof(struct rinx_job, slot) == 8, "job.slot");
_Static_assert(sizeof(struct rinx_cursor) == 64, "cursor");
_Static_assert(sizeof(struct rinx_claim) == 16, "claim");
_Static_assert(sizeof(struct rinx_ring_frame) == 3176, "ring frame");
_Static_assert(__builtin_offsetof(struct rinx_cursor, next_ns) == 16, "next_ns");
_Static_assert(sizeof(struct rinx_hop) == 32, "hop");
_Static_assert(__builtin_offsetof(struct rinx_hop, pool) == 12, "hop.pool");
_Static_assert(__builtin_offsetof(struct rinx_hop, mask) == 16, "hop.mask");
_Static_assert(sizeof(struct rinx_ps_conf) == 32 + 8 * RINX_MAX_NODES,
	       "ps conf");
_Static_assert(__builtin_offsetof(struct rinx_ps_conf, applied) == 32,
	       "ps_conf.applied");
_Static_assert(sizeof(struct rinx_agg) == 32 + RINX_BLOCK_BYTES, "agg");
_Static_assert(__builtin_offsetof(struct rinx_agg, seen) == 8, "agg.seen");
_Static_assert(__builtin_offsetof(struct rinx_agg, v) == 32, "agg.v");
_Static_assert(__builtin_offsetof(struct rinx_agg, shape) == 28, "agg.shape");
_Static_assert((__u64)RINX_MAX_JOBS * RINX_DEFAULT_WINDOW <
	       RINX_SHAPE_MAX_BLOCKS, "default windows fit a shape");
/* Kernel memory of one block of a job slot on a host: the share, result
 * and partial slots and the aggregator slot. */
#define RINX_NODE_BLOCK_BYTES	(3 * sizeof(struct rinx_slot) + \
				 sizeof(struct rinx_agg))
_Static_assert((__u64)RINX_DEFAULT_JOBS * RINX_DEFAULT_WINDOW *
	       RINX_NODE_BLOCK_BYTES + RINX_PS_MAX_BLOCKS * 16ull +
	       (4u << 20) <= RINX_NODE_MEM_BUDGET,
	       "the default slots and an empty store map fit the memory "
	       "budget, with room for the tables");
_Static_assert(sizeof(struct rinx_ps_block) == 264 + RINX_BLOCK_BYTES,
	       "ps block");
_Static_assert(RINX_PS_MAX_BLOCKS <= (1u << 24) && RINX_MAX_JOBS <= 256,
	       "a store key holds the slot and the block");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "payload is little-endian on the wire");

#endif /* RINX_UAPI_H */
