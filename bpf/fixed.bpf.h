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

/* dst[i] += a[i] + b[i] for the nv values of three blocks at one
 * exponent. */
static __always_inline void rinx_add2_vals(__s32 *dst, const __s32 *a,
					   const __s32 *b, const int nv)
{
	int i;

#pragma clang loop unroll_count(8)
	for (i = 0; i < nv; i++)
		dst[i] += a[i] + b[i];
}

/* dst[i] = align(dst[i]) + align(src[i]) for the nv values of a block (a
 * constant at every call: RINX_BLOCK_VALUES or RINX_BLOCK_VALUES_MIN);
 * returns the new exponent.
 *
 * One operand always has the larger exponent and is not shifted, so each
 * case is its own loop: the loop bodies stay branch-free (a branch per value
 * multiplies the states the verifier walks through 768 iterations past its
 * limit) and short. Rounding is to nearest, ties up: x / 2^d rounded so is
 * floor((x + 2^(d-1)) / 2^d) = ceil(a / 2) with a = floor(x / 2^(d-1)), and
 * ceil(a / 2) = a - floor(a / 2): two arithmetic shifts and a subtraction
 * in 32 bits, exact for every int32 (nothing can overflow), where adding
 * half a unit first needs 64 bits and a sign extension per value (9
 * instructions per value instead of 8; test_hopcost). A shift of 32 or
 * more leaves nothing of the operand. */
static __always_inline __s16 rinx_block_add(__s32 *dst, __s16 dst_exp,
					    const __s32 *src, __s16 src_exp,
					    const int nv)
{
	__s32 e = dst_exp > src_exp ? dst_exp : src_exp, a;
	__u32 dd = e - dst_exp, ds = e - src_exp;
	int i;

	if (dd == 0 && ds == 0) {
#pragma clang loop unroll_count(8)
		for (i = 0; i < nv; i++)
			dst[i] += src[i];
	} else if (dd == 0) {
		if (ds > 31)
			return e;	/* src rounds to zero everywhere */
		ds--;
#pragma clang loop unroll_count(8)
		for (i = 0; i < nv; i++) {
			a = src[i] >> ds;
			dst[i] += a - (a >> 1);
		}
	} else if (dd > 31) {
		rinx_copy_vals(dst, src, nv);
	} else {
		dd--;
#pragma clang loop unroll_count(8)
		for (i = 0; i < nv; i++) {
			a = dst[i] >> dd;
			dst[i] = a - (a >> 1) + src[i];
		}
	}
	return e;
}

#endif
