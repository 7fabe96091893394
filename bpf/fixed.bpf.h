/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Block fixed-point arithmetic in XDP: add two blocks that may carry
 * different exponents. The operand with the smaller exponent is shifted
 * right (rounded to nearest) to the larger one; a shift of 31 or more turns
 * it into zero. Every contribution is bounded by 2^qbits with
 * qbits = 30 - ceil(log2(contributors)), so no sum can overflow. */
#ifndef RINX_FIXED_BPF_H
#define RINX_FIXED_BPF_H

#include "bpf/parse.bpf.h"

/* dst[0..nv) = src[0..nv), nv a constant and even: blocks of values in
 * frames and slots start 8-byte aligned. 8-byte moves, unrolled: a rolled
 * copy of 4-byte values costs four times as much (selftests/test_hopcost),
 * and a block is too large for an inlined __builtin_memcpy. */
static __always_inline void rinx_copy_vals(__s32 *dst, const __s32 *src,
					   const int nv)
{
	__u64 *d = (__u64 *)dst;
	const __u64 *s = (const __u64 *)src;
	int i;

#pragma clang loop unroll_count(8)
	for (i = 0; i < nv / 2; i++)
		d[i] = s[i];
}

/* dst[i] = align(dst[i]) + align(src[i]) for the nv values of a block (a
 * constant at every call: RINX_BLOCK_VALUES or RINX_BLOCK_VALUES_MIN);
 * returns the new exponent.
 *
 * One operand always has the larger exponent and is not shifted, so each
 * case is its own loop: the loop bodies stay branch-free (a branch per value
 * multiplies the states the verifier walks through 768 iterations past its
 * limit) and short. Rounding is to nearest, ties up: add half of the last
 * kept unit, then shift arithmetically (in 64 bits: x + 2^30 may leave
 * int32). A shift of 32 or more leaves nothing of the operand. */
static __always_inline __s16 rinx_block_add(__s32 *dst, __s16 dst_exp,
					    const __s32 *src, __s16 src_exp,
					    const int nv)
{
	__s32 e = dst_exp > src_exp ? dst_exp : src_exp;
	__u32 dd = e - dst_exp, ds = e - src_exp;
	__s64 h;
	int i;

	if (dd == 0 && ds == 0) {
#pragma clang loop unroll_count(8)
		for (i = 0; i < nv; i++)
			dst[i] += src[i];
	} else if (dd == 0) {
		if (ds > 31)
			return e;	/* src rounds to zero everywhere */
		h = 1LL << (ds - 1);
#pragma clang loop unroll_count(8)
		for (i = 0; i < nv; i++)
			dst[i] += (__s32)(((__s64)src[i] + h) >> ds);
	} else if (dd > 31) {
#pragma clang loop unroll_count(8)
		for (i = 0; i < nv; i++)
			dst[i] = src[i];
	} else {
		h = 1LL << (dd - 1);
#pragma clang loop unroll_count(8)
		for (i = 0; i < nv; i++)
			dst[i] = (__s32)(((__s64)dst[i] + h) >> dd) + src[i];
	}
	return e;
}

#endif
