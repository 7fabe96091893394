/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The payload of a jumbo frame (RINX_BLOCK_VALUES_JUMBO values): a
 * multi-buffer XDP frame whose bytes lie in the linear part and in page
 * fragments, wherever the driver cut them (veth: a page less head and
 * tail room, then whole pages). No direct pointer reaches past the linear
 * part, so the payload is taken in slices of RINX_SLICE_VALUES through an
 * XDP dynptr: a slice within one fragment comes back as a pointer into the
 * frame; one that straddles two comes back copied into the CPU's scratch
 * buffer and is written back after the loop changed it. The loops on
 * values stay the linear frames' (fixed.bpf.h), one slice at a time.
 *
 * The block's values live in RINX_JUMBO_SLOTS map slots (uapi/rinx.h):
 * slot k holds slices 3k .. 3k + 2 (the last one two).
 */
#ifndef RINX_FRAGS_BPF_H
#define RINX_FRAGS_BPF_H

#include "bpf/fixed.bpf.h"

extern int bpf_dynptr_from_xdp(struct xdp_md *xdp, __u64 flags,
			       struct bpf_dynptr *ptr__uninit) __ksym;
extern void *bpf_dynptr_slice_rdwr(const struct bpf_dynptr *ptr, __u32 offset,
				   void *buffer__opt,
				   __u32 buffer__szk) __ksym;

#define RINX_SLICE_VALUES	256
#define RINX_SLICE_BYTES	(RINX_SLICE_VALUES * 4)
#define RINX_JUMBO_SLICES	(RINX_BLOCK_VALUES_JUMBO / RINX_SLICE_VALUES)
#define RINX_SLOT_SLICES	(RINX_BLOCK_VALUES / RINX_SLICE_VALUES)

_Static_assert(RINX_BLOCK_VALUES % RINX_SLICE_VALUES == 0 &&
	       RINX_BLOCK_VALUES_JUMBO % RINX_SLICE_VALUES == 0 &&
	       RINX_JUMBO_SLICES <= RINX_JUMBO_SLOTS * RINX_SLOT_SLICES,
	       "slices tile a jumbo block and its slots");

struct rinx_slice {
	__s32 v[RINX_SLICE_VALUES];
};

/* A slice that straddles two fragments, copied out (one per CPU: XDP
 * does not nest on a CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rinx_slice);
} slice_buf SEC(".maps");

/* What a jumbo loop does with each slice p of the frame and its part q of
 * the block's slots. The add modes are rinx_block_add's cases, chosen
 * once per block (the exponents are the block's): a choice per slice
 * would fork the verifier's walk at every slice. */
enum rinx_jop {
	RINX_J_TO_SLOTS,	/* q = p */
	RINX_J_TO_FRAME,	/* p = q */
	RINX_J_ADD,		/* p += q, one exponent */
	RINX_J_ADD_SHIFT_SRC,	/* p += round(q >> d) */
	RINX_J_ADD_SHIFT_DST,	/* p = round(p >> d) + q */
};

static __always_inline void rinx_slice_op(__s32 *p, __s32 *q,
					  const int op, __u32 d)
{
	__s32 a;
	int i;

	if (op == RINX_J_TO_SLOTS) {
		rinx_copy_vals(q, p, RINX_SLICE_VALUES);
	} else if (op == RINX_J_TO_FRAME) {
		rinx_copy_vals(p, q, RINX_SLICE_VALUES);
	} else if (op == RINX_J_ADD) {
#pragma clang loop unroll_count(8)
		for (i = 0; i < RINX_SLICE_VALUES; i++)
			p[i] += q[i];
	} else if (op == RINX_J_ADD_SHIFT_SRC) {
#pragma clang loop unroll_count(8)
		for (i = 0; i < RINX_SLICE_VALUES; i++) {
			a = q[i] >> d;
			p[i] += a - (a >> 1);
		}
	} else {
#pragma clang loop unroll_count(8)
		for (i = 0; i < RINX_SLICE_VALUES; i++) {
			a = p[i] >> d;
			p[i] = a - (a >> 1) + q[i];
		}
	}
}

/* op (a constant) over the whole block: the frame's payload and slots
 * s[0..RINX_JUMBO_SLOTS), all looked up. 0, or -1 if the frame is shorter
 * than a jumbo frame after all (the caller checked its length). */
static __always_inline int rinx_jumbo_run(struct xdp_md *ctx,
					  struct rinx_slot **s, const int op,
					  __u32 d)
{
	struct bpf_dynptr dp;
	struct rinx_slice *buf;
	__u32 k = 0, off;
	__s32 *p;
	int i;

	buf = bpf_map_lookup_elem(&slice_buf, &k);
	if (!buf || bpf_dynptr_from_xdp(ctx, 0, &dp))
		return -1;
#pragma unroll
	for (i = 0; i < RINX_JUMBO_SLICES; i++) {
		off = RINX_FRAME_HDR_LEN + i * RINX_SLICE_BYTES;
		p = bpf_dynptr_slice_rdwr(&dp, off, buf, RINX_SLICE_BYTES);
		if (!p)
			return -1;
		rinx_slice_op(p, s[i / RINX_SLOT_SLICES]->v +
			      (i % RINX_SLOT_SLICES) * RINX_SLICE_VALUES,
			      op, d);
		if (op != RINX_J_TO_SLOTS && p == buf->v &&
		    bpf_dynptr_write(&dp, off, buf, RINX_SLICE_BYTES, 0))
			return -1;
	}
	return 0;
}

/* The block's slots in map m from index idx: s[0] is given (the caller
 * looked it up for its header), the others follow it. */
static __always_inline int rinx_jumbo_slots(void *m, __u32 idx,
					    struct rinx_slot *s0,
					    struct rinx_slot **s)
{
	int k;

	s[0] = s0;
#pragma unroll
	for (k = 1; k < RINX_JUMBO_SLOTS; k++) {
		__u32 i = idx + k;

		s[k] = bpf_map_lookup_elem(m, &i);
		if (!s[k])
			return -1;
	}
	return s0 ? 0 : -1;
}

/* frame += the block in slots s at exponents dexp (frame) and sexp
 * (slots), as rinx_block_add; returns the sum's exponent in *e. */
static __always_inline int rinx_jumbo_add(struct xdp_md *ctx,
					  struct rinx_slot **s, __s16 dexp,
					  __s16 sexp, __s16 *e)
{
	__s32 m = dexp > sexp ? dexp : sexp;
	__u32 dd = m - dexp, ds = m - sexp;

	*e = m;
	if (dd == 0 && ds == 0)
		return rinx_jumbo_run(ctx, s, RINX_J_ADD, 0);
	if (dd == 0)
		return ds > 31 ? 0 :
		       rinx_jumbo_run(ctx, s, RINX_J_ADD_SHIFT_SRC, ds - 1);
	if (dd > 31)
		return rinx_jumbo_run(ctx, s, RINX_J_TO_FRAME, 0);
	return rinx_jumbo_run(ctx, s, RINX_J_ADD_SHIFT_DST, dd - 1);
}

#endif
