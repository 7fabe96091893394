/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * librinx: allreduce for data-parallel training with the per-hop work in
 * XDP. The one public header.
 *
 * Conventions: functions return 0 or a negative errno; they never print to
 * stdout and never exit. rinx_comm_error() gives a one-line explanation of
 * the last failure of a communicator.
 */
#ifndef LIBRINX_H
#define LIBRINX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rinx_comm;
struct rinx_req;

enum rinx_dtype {
	RINX_INT32 = 1,		/* exact, wraps on overflow like int32_t */
	RINX_FLOAT32 = 2,	/* fixed point per block, see docs/rinx.md */
};

struct rinx_comm_opts {
	size_t sz;		/* sizeof(struct rinx_comm_opts); an older
				   caller's smaller size (from `plan` on
				   absent) is taken */
	const char *spec;	/* cluster spec file */
	const char *node;	/* this host's name in the spec, or NULL: */
	int rank;		/*   this rank (used when node is NULL) */
	uint32_t job;		/* job id, the same on every rank, != 0 */
	uint64_t token;		/* job secret, 64 bits, the same on every
				   rank: keeps stray and misconfigured
				   jobs out (docs/security.md) */
	int timeout_ms;		/* an allreduce fails after this long
				   without progress (no block finished,
				   none started); 0 = 10000 */
	int inflight;		/* blocks in flight per origin; 0 = 128/n
				   (8..64) */
	const char *plan;	/* "ring", "rina", "ps", "ps:N", "ps-ina",
				   "ps-ina:N", "har", "tree", "dbtree", the
				   same on every rank; NULL = the spec's
				   plan= (default rina) */
	int block_values;	/* values per block (frame), the same on
				   every rank: 0 = the MTU's (768, or 352
				   below an IP MTU of 3,154);
				   RINX_BLOCK_JUMBO (2048, frames of 8,288
				   bytes): jumbo blocks, refused at open
				   where an MTU is below 8,274 or the plan
				   aggregates (INA ToRs, agents, trees, PS);
				   RINX_BLOCK_LARGEST: jumbo where those
				   allow it, else the MTU's */
};

/* rinx_comm_opts.block_values */
#define RINX_BLOCK_JUMBO	2048
#define RINX_BLOCK_LARGEST	(-1)

struct rinx_comm_stats {
	uint64_t ops;		/* allreduce calls completed */
	uint64_t rounds;	/* rounds completed */
	uint64_t bytes;		/* payload bytes reduced (count * 4) */
	uint64_t blocks_sent;	/* blocks this rank originated */
	uint64_t slow_path;	/* frames finished in user space */
	uint64_t slow_dropped;	/* slow-path frames rejected */
	uint64_t nonfinite;	/* result blocks with NaN/Inf */
	uint64_t timeouts;	/* calls that ended in -ETIMEDOUT */
	uint64_t repairs;	/* stalls longer than the repair timeout */
	uint64_t nacks;		/* finished blocks asked for again */
	uint64_t retransmits;	/* own blocks sent again */
	uint64_t ina_fallbacks;	/* plan changes: INA racks gone */
	uint64_t ns_quant;	/* CPU time (thread) in float->fixed conversion */
	uint64_t ns_dequant;	/* CPU time (thread) in fixed->float conversion */
	uint64_t ns_total;	/* time inside allreduce calls */
	/* the AF_XDP socket (shared by a process's communicators) */
	uint64_t xsk_rx_dropped;	/* frames the kernel could not queue */
	uint64_t xsk_rx_ring_full;
	uint64_t xsk_fill_empty;
	uint64_t xsk_tx_invalid;
	/* congestion control (docs/rinx.md) */
	uint64_t ecn_marked;	/* finished blocks that arrived marked CE */
	uint64_t cc_cuts;	/* rate decreases */
	uint64_t pace_rate;	/* own blocks per second now; 0: unpaced */
	uint64_t pace_ceiling;	/* the most it may be: the plan's share of
				 * the spec's busiest link, over the jobs
				 * sharing its aggregator host now; 0: none
				 * known */
};

int rinx_comm_open(const struct rinx_comm_opts *opts, struct rinx_comm **out);
/* Collective in spirit: after a completed collective, close stays until
 * every peer closes too (each needs nothing more from this rank), at most
 * 2 s or the communicator's timeout, answering their loss repair
 * meanwhile; longer while a peer still in that collective asks it to
 * stay (at most twice the timeout more); it never fails. */
void rinx_comm_close(struct rinx_comm *c);
int rinx_comm_rank(const struct rinx_comm *c);
int rinx_comm_size(const struct rinx_comm *c);
const char *rinx_comm_error(const struct rinx_comm *c);
int rinx_comm_stats(const struct rinx_comm *c, struct rinx_comm_stats *st);
/* Values per block (one frame): 768, or 352 on a network whose MTU is
 * below 3,154 (spec mtu=, else the interface's), or 2,048 where the
 * communicator was opened for jumbo blocks (block_values). The unit of
 * float32 scaling: rinx_f32_bound's amax is taken over such a block. (1.1) */
int rinx_comm_block_values(const struct rinx_comm *c);

/* SUM of `count` elements over all ranks; send == recv is allowed.
 * An INA ToR that loses the job costs a stall, not an error; if it
 * cannot be recovered from (-ECONNRESET, or -ETIMEDOUT when a round's
 * blocks cannot be fetched) the communicator fails for good: close and
 * reopen it, see docs/rinx.md ("An INA ToR that goes away"). */
int rinx_allreduce(struct rinx_comm *c, const void *send, void *recv,
		   size_t count, enum rinx_dtype dtype);
/* Asynchronous form: one request in flight per communicator. Progress is
 * made inside rinx_test/rinx_wait. The buffers must stay valid until the
 * request ends. */
int rinx_allreduce_start(struct rinx_comm *c, const void *send, void *recv,
			 size_t count, enum rinx_dtype dtype,
			 struct rinx_req **req);
/* 1 when done (req freed, result valid), 0 when still running, or -errno
 * (req freed). */
int rinx_test(struct rinx_req *req);
/* Waits up to timeout_ms (< 0: until the communicator's timeout passes
 * without progress). Returns 0
 * (req freed), -ETIMEDOUT (req still valid: wait again or cancel), or
 * another -errno (req freed). */
int rinx_wait(struct rinx_req *req, int timeout_ms);
/* Drives the non-NULL requests of reqs[0..n) (of one or more
 * communicators) until one ends, napping between polls as rinx_wait does
 * (the shortest nap any of them wants). Returns that request's result: 0
 * (done, freed, reqs[*index] set to NULL) or -errno (freed, NULL too),
 * or -ETIMEDOUT with *index >= 0 when that request went without progress
 * for its communicator's timeout (timeout_ms < 0; the request is still
 * valid: wait again or cancel), or -ETIMEDOUT with *index -1 when
 * timeout_ms (>= 0) passed. -EINVAL if no request is given. (1.3) */
int rinx_wait_any(struct rinx_req **reqs, int n, int timeout_ms, int *index);
void rinx_cancel(struct rinx_req *req);

/* Error bound of RINX_FLOAT32 results, see docs/rinx.md: for every element,
 * |result - exact| <= rinx_f32_bound(n, amax) where amax is the largest
 * |input| of that element's block on any rank. */
double rinx_f32_bound(int nranks, double amax);

/* Parameter server on the data plane (docs/rinx.md, "Parameter server";
 * 1.2). The communicator's job serves a store of `count` float32 values
 * from rank `server`'s host program: a push adds into it, a pull reads
 * it, both in XDP there. A communicator with a store runs no allreduce.
 * Every rank opens it (the server first writes `init`); each rank's
 * pushes are numbered, its i-th push is its iteration i - 1. */
struct rinx_ps;

struct rinx_ps_opts {
	size_t sz;		/* sizeof(struct rinx_ps_opts) */
	int server;		/* rank whose host holds the store */
	size_t count;		/* values, at most window x block values */
	const float *init;	/* server: the first values (NULL: zeros) */
	int staleness;		/* SSP: a pull waits until no rank that has
				   not finished is more than this many
				   iterations behind; < 0: none (ASP) */
	int headroom;		/* log2 of the range above the largest
				   initial magnitude; 0: 6 */
};

struct rinx_ps_stats {
	size_t sz;		/* sizeof(struct rinx_ps_stats) */
	uint64_t pushes, pulls;	/* completed */
	uint64_t frames;	/* requests sent (or run, at the server) */
	uint64_t resent;	/* requests sent again (answer missing) */
	uint64_t held;		/* pulls held for the staleness bound */
	uint64_t clipped;	/* values beyond the store's range, clipped */
	uint64_t clock;		/* this rank's pushes */
	uint64_t min_clock;	/* the slowest rank's, last heard (all
				   ones: every rank finished) */
};

int rinx_ps_open(struct rinx_comm *c, const struct rinx_ps_opts *o,
		 struct rinx_ps **out);
/* Adds delta (count values) into the store; -ESTALE past the staleness
 * bound, -ERANGE when a value would leave the store's range. */
int rinx_ps_push(struct rinx_ps *ps, const float *delta);
/* The store's values into out (count), after waiting for the bound. */
int rinx_ps_pull(struct rinx_ps *ps, float *out);
/* rinx_ps_push and then rinx_ps_pull; on a store without a staleness
 * bound one frame per block does both (the server answers each block of
 * the push with the block right after it). Since 1.4. */
int rinx_ps_pushpull(struct rinx_ps *ps, const float *delta, float *out);
/* The parts of one store split over k servers (k stores, each on its own
 * communicator), rinx_ps_pushpull on every part at once: ps[i] takes
 * delta[i] and answers into out[i]. Every part's frames go out before
 * any answer is waited for. Stores with a staleness bound are taken one
 * after the other. -EINVAL unless 1 <= k <= RINX_PS_PARTS_MAX. On an
 * error, other parts may have completed (their pushes counted, as
 * rinx_ps_stats says). Since 1.5. */
#define RINX_PS_PARTS_MAX	16
int rinx_ps_pushpull_many(struct rinx_ps *const *ps, int k,
			  const float *const *delta, float *const *out);
/* Done: waits for every rank to finish and pulls the final values;
 * the server waits until every rank has taken them. */
int rinx_ps_finish(struct rinx_ps *ps, float *out);
int rinx_ps_stats(const struct rinx_ps *ps, struct rinx_ps_stats *st);
void rinx_ps_close(struct rinx_ps *ps);

#ifdef __cplusplus
}
#endif
#endif
