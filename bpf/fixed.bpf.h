/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Block fixed-point arithmetic in XDP: add two blocks that may carry
 * different exponents. The operand with the smaller exponent is shifted
 * right (rounded to nearest) to the larger one; a shift of 31 or more turns
 * it into zero. Every contribution is bounded by 2^qbits with
 * qbits = 30 - ceil(log2(contributors)), so no sum can overflow. */
#ifndef RINX_FIXED_BPF_H
#define RINX_FIXED_BPF_H

#include "bpf/parse.bpf.h"

static __always_inline __s32 rinx_rshift(__s32 x, __u32 d)
{
	if (d == 0)
		return x;
	return (x + (1 << (d - 1))) >> d;
}

/* dst[i] = align(dst[i]) + align(src[i]); returns the new exponent.
 * The plain loop covers the common case of equal exponents. */
static __always_inline __s16 rinx_block_add(__s32 *dst, __s16 dst_exp,
					    const __s32 *src, __s16 src_exp)
{
	__s32 e = dst_exp > src_exp ? dst_exp : src_exp;
	__u32 dd = e - dst_exp, ds = e - src_exp;
	int i;

	if (dd == 0 && ds == 0) {
		for (i = 0; i < RINX_BLOCK_VALUES; i++)
			dst[i] += src[i];
		return e;
	}
	if (dd > 31)
		dd = 32;
	if (ds > 31)
		ds = 32;
	for (i = 0; i < RINX_BLOCK_VALUES; i++) {
		__s32 a = dd > 31 ? 0 : rinx_rshift(dst[i], dd);
		__s32 b = ds > 31 ? 0 : rinx_rshift(src[i], ds);

		dst[i] = a + b;
	}
	return e;
}

#endif
