/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Block fixed-point arithmetic in XDP: add two blocks that may carry
 * different exponents. The operand with the smaller exponent is shifted
 * right (rounded to nearest) to the larger one; a shift of 31 or more turns
 * it into zero. Every contribution is bounded by 2^qbits with
 * qbits = 30 - ceil(log2(contributors)), so no sum can overflow. */
#ifndef RINX_FIXED_BPF_H
#define RINX_FIXED_BPF_H

#include "bpf/parse.bpf.h"

/* dst[i] = align(dst[i]) + align(src[i]); returns the new exponent.
 * The plain loop covers the common case of equal exponents. The shifting
 * loop is branch-free on purpose: a branch per value multiplies the states
 * the verifier walks through 768 iterations past its limit. */
static __always_inline __s16 rinx_block_add(__s32 *dst, __s16 dst_exp,
					    const __s32 *src, __s16 src_exp)
{
	__s32 e = dst_exp > src_exp ? dst_exp : src_exp;
	__u32 dd = e - dst_exp, ds = e - src_exp;
	__s64 hd, hs;
	__s32 md, ms;
	int i;

	if (dd == 0 && ds == 0) {
		for (i = 0; i < RINX_BLOCK_VALUES; i++)
			dst[i] += src[i];
		return e;
	}
	/* a shift of 32 or more leaves nothing: mask the operand out */
	md = dd > 31 ? 0 : -1;
	ms = ds > 31 ? 0 : -1;
	dd = dd > 31 ? 31 : dd;
	ds = ds > 31 ? 31 : ds;
	/* round to nearest: add half of the last kept unit before shifting
	 * (64-bit: x + 2^30 may leave int32) */
	hd = dd ? 1LL << (dd - 1) : 0;
	hs = ds ? 1LL << (ds - 1) : 0;
	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		dst[i] = ((__s32)(((__s64)dst[i] + hd) >> dd) & md) +
			 ((__s32)(((__s64)src[i] + hs) >> ds) & ms);
	return e;
}

#endif
