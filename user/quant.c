// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * float32 <-> block fixed point.
 *
 * A block's values are scaled by 2^(qbits - e), where 2^e bounds the block's
 * largest magnitude on this rank, and rounded to nearest: every contribution
 * lies in [-2^qbits, 2^qbits]. With qbits = 30 - ceil(log2 n) the sum of n
 * contributions cannot leave int32, whatever the inputs (SwitchML's rule,
 * applied per rank and per block). Hops align exponents by a rounded right
 * shift of the operand with the smaller exponent, which keeps the bound.
 *
 * Error (docs/rinx.md): with E the largest block exponent over the ranks and amax
 * the largest |input| of the block over the ranks (2^(E-1) <= amax < 2^E):
 * n roundings of the contributions and at most n-1 alignment roundings,
 * each <= 2^(E-qbits)/2, then one float rounding of the result:
 *   |result - exact| <= (2n-1) * 2^(E-qbits) / 2 + ulp(result) / 2
 *                   <= amax * ((2n-1) * 2^-qbits + (n+1) * 2^-24)
 */
#include <math.h>
#include <string.h>
#include "user/quant.h"
#include "user/librinx.h"
#include "user/ctl.h"

int rinx_qbits(int n)
{
	int l = 0;

	while ((1 << l) < n)
		l++;
	return 30 - l;
}

RINX_API double rinx_f32_bound(int n, double amax)
{
	if (n < 1)
		n = 1;
	return amax * ((2.0 * n - 1) * ldexp(1.0, -rinx_qbits(n)) +
		       (n + 1) * ldexp(1.0, -24));
}

/* The hot loops, built for AVX2 where the CPU has it. */
#define HOT __attribute__((target_clones("avx2", "default")))

HOT static uint32_t absmax_bits(const float *x, int count)
{
	uint32_t maxbits = 0, b;
	int i;

	/* The magnitude order of finite floats is the order of their bits
	 * without the sign; an integer max vectorizes, fabsf max does not. */
	for (i = 0; i < count; i++) {
		memcpy(&b, &x[i], 4);
		b &= 0x7fffffff;
		maxbits = b > maxbits ? b : maxbits;
	}
	return maxbits;
}

HOT static void quant_f(int32_t *q, const float *x, int count, float scale)
{
	int i;

	for (i = 0; i < count; i++)
		q[i] = (int32_t)lrintf(x[i] * scale);
}

HOT static void dequant_f(float *x, const int32_t *q, int count, float scale)
{
	int i;

	for (i = 0; i < count; i++)
		x[i] = (float)q[i] * scale;
}

void rinx_quant_block(struct rinx_slot *s, const float *x, int count,
		      int qbits)
{
	uint32_t maxbits = absmax_bits(x, count);
	double scale;
	int i, e;
	uint8_t flags = 0;

	if (maxbits >= 0x7f800000) {
		float m = 0;

		for (i = 0; i < count; i++) {
			if (isnan(x[i]))
				flags |= RINX_F_NAN;
			else if (isinf(x[i]))
				flags |= x[i] > 0 ? RINX_F_PINF : RINX_F_NINF;
			else if (fabsf(x[i]) > m)
				m = fabsf(x[i]);
		}
		memcpy(&maxbits, &m, 4);
	}
	s->flags = flags;
	s->count = count;
	s->resv = 0;
	s->resv2 = 0;
	s->resv3 = 0;
	if (maxbits == 0) {
		s->exp = RINX_EXP_ZERO;
		memset(s->v, 0, sizeof(s->v));
		return;
	}
	{
		float m;

		memcpy(&m, &maxbits, 4);
		frexpf(m, &e);	/* m < 2^e */
	}
	s->exp = e;
	scale = ldexp(1.0, qbits - e);
	if (!flags && qbits - e <= 127) {
		/* x * 2^k is exact in float while 2^k is a normal float */
		quant_f(s->v, x, count, (float)scale);
	} else if (!flags) {
		/* tiny blocks: 2^k only fits a double */
		for (i = 0; i < count; i++)
			s->v[i] = (int32_t)lrint((double)x[i] * scale);
	} else {
		for (i = 0; i < count; i++)
			s->v[i] = isfinite(x[i]) ?
				  (int32_t)lrint((double)x[i] * scale) : 0;
	}
	if (count < RINX_BLOCK_VALUES)
		memset(&s->v[count], 0, (RINX_BLOCK_VALUES - count) * 4);
}

void rinx_dequant_block(const struct rinx_slot *s, float *x, int count,
			int qbits)
{
	double scale;
	int i;

	if (s->flags & RINX_F_NONFINITE) {
		/* A block with a non-finite input on any rank: NaN if any
		 * NaN or both infinities, else the infinity, for the whole
		 * block (the wire carries one flag set per block). */
		float v;

		if ((s->flags & RINX_F_NAN) ||
		    (s->flags & (RINX_F_PINF | RINX_F_NINF)) ==
			    (RINX_F_PINF | RINX_F_NINF))
			v = NAN;
		else
			v = (s->flags & RINX_F_PINF) ? INFINITY : -INFINITY;
		for (i = 0; i < count; i++)
			x[i] = v;
		return;
	}
	if (s->exp == RINX_EXP_ZERO) {
		memset(x, 0, count * sizeof(*x));
		return;
	}
	scale = ldexp(1.0, s->exp - qbits);
	if (s->exp - qbits >= -126) {
		/* one rounding (int -> float); the power of two is exact */
		dequant_f(x, s->v, count, (float)scale);
		return;
	}
	for (i = 0; i < count; i++)
		x[i] = (float)((double)s->v[i] * scale);
}

static inline int32_t rshift_round(int32_t x, uint32_t d)
{
	if (d == 0)
		return x;
	if (d > 31)
		return 0;
	return (int32_t)(((int64_t)x + (1ll << (d - 1))) >> d);
}

int16_t rinx_payload_add(int32_t *dst, int16_t dst_exp, const int32_t *src,
			 int16_t src_exp)
{
	int32_t e = dst_exp > src_exp ? dst_exp : src_exp;
	uint32_t dd = e - dst_exp, ds = e - src_exp;
	int i;

	for (i = 0; i < RINX_BLOCK_VALUES; i++)
		dst[i] = (int32_t)((uint32_t)rshift_round(dst[i], dd) +
				   (uint32_t)rshift_round(src[i], ds));
	return e;
}

void rinx_block_add_user(struct rinx_slot *dst, const struct rinx_slot *src)
{
	dst->exp = rinx_payload_add(dst->v, dst->exp, src->v, src->exp);
	dst->flags |= src->flags;
}
