// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of the float32 <-> block fixed point conversion (user/quant/quant.c).
 *
 * Every conversion path the CPU runs (portable, AVX2, AVX-512) must give the
 * same bits as the portable path and as a reference computed here in double:
 *   quantize:   exp = frexp exponent of the block's largest finite |x|,
 *               v = nearest-even(x * 2^(qbits - exp)) (0 for NaN/Inf), flags
 *               for NaN/+Inf/-Inf, count, the tail of v zeroed, round kept;
 *               RINX_EXP_ZERO and all zero when no finite value is nonzero;
 *   dequantize: the float nearest (ties to even) to v * 2^(exp - qbits), or
 *               the whole block NaN/+Inf/-Inf when flags say so.
 * The products are exact in double, so the reference is one rounding per
 * value, done by the C library's nearbyint and the double->float cast.
 *
 * Cases: random blocks of every count 1..768 at unaligned addresses, exact
 * rounding ties, subnormal, tiny (1e-38), near-FLT_MAX, mixed signs, zeros,
 * NaN/+Inf/-Inf blocks, random wire slots for dequantize (any exponent, any
 * value), a range call against block calls, a caller's non-default rounding
 * mode and flush/denormals-are-zero (x86), RINX_QUANT, and the error bound
 * rinx_f32_bound for sums over n = 2, 3, 8, 64 ranks added with
 * rinx_block_add_user (the hop's arithmetic). A path the CPU lacks is a TAP
 * skip that says so.
 *
 * Then, diagnostics only (never asserted): ns per element of quantize and
 * dequantize for each path and for the scalar code the paths replaced, in
 * thread CPU time, over RINX_QUANT_MIB MiB of floats (default 16) and over
 * an L1-sized window. RINX_QUANT_SEED: the seed (printed).
 *
 * selftests: serial (the speed table is worth reading only on a machine
 * this program has to itself: run.sh -j runs it alone)
 */
#include <errno.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "uapi/rinx.h"
#include "user/quant/quant.h"
#include "user/librinx.h"
#include "selftests/lib/testlib.h"

#define BV		RINX_BLOCK_VALUES
#define ROUND_MARK	0xdeadbeefu

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t rnd_below(uint32_t n) { return (uint32_t)(rnd() >> 32) % n; }
static double rnd_unit(void) { return (rnd() >> 11) * 0x1.0p-53; }

static float from_bits(uint32_t b)
{
	float f;

	memcpy(&f, &b, 4);
	return f;
}

static uint32_t to_bits(float f)
{
	uint32_t b;

	memcpy(&b, &f, 4);
	return b;
}

/* A float with a random sign and significand and a biased exponent in
 * [lo, hi] (0: subnormal, never zero). */
static float rnd_float(int lo, int hi)
{
	uint32_t e = lo + rnd_below(hi - lo + 1);
	uint32_t m = (uint32_t)rnd() & 0x7fffff;

	if (e == 0 && m == 0)
		m = 1;
	return from_bits((uint32_t)(rnd() & 1) << 31 | e << 23 | m);
}

/* ---- the reference, in double ---- */

static void ref_quant(struct rinx_slot *s, const float *x, int count,
		      int qbits)
{
	double amax = 0;
	int i, e;

	memset(s->v, 0, sizeof(s->v));
	s->flags = 0;
	s->count = count;
	s->resv = 0;
	s->step = 0;
	s->sent_us = 0;
	for (i = 0; i < count; i++) {
		if (isnan(x[i]))
			s->flags |= RINX_F_NAN;
		else if (isinf(x[i]))
			s->flags |= x[i] > 0 ? RINX_F_PINF : RINX_F_NINF;
		else if (fabs((double)x[i]) > amax)
			amax = fabs((double)x[i]);
	}
	if (amax == 0) {
		s->exp = RINX_EXP_ZERO;
		return;
	}
	frexp(amax, &e);
	s->exp = e;
	for (i = 0; i < count; i++) {
		double p;

		if (!isfinite(x[i]))
			continue;
		p = ldexp((double)x[i], qbits - e);	/* exact */
		s->v[i] = (int32_t)nearbyint(p);
	}
}

static void ref_dequant(const struct rinx_slot *s, float *x, int count,
			int qbits)
{
	uint8_t f = s->flags;
	int i;

	for (i = 0; i < count; i++) {
		if (f & RINX_F_NAN ||
		    (f & RINX_F_PINF && f & RINX_F_NINF))
			x[i] = NAN;
		else if (f & RINX_F_PINF)
			x[i] = INFINITY;
		else if (f & RINX_F_NINF)
			x[i] = -INFINITY;
		else if (s->exp == RINX_EXP_ZERO)
			x[i] = 0;
		else	/* exact in double, one rounding to float */
			x[i] = (float)ldexp((double)s->v[i], s->exp - qbits);
	}
}

/* ---- the scalar code the vector paths replaced: only a speed baseline ---- */

#define OLD_HOT __attribute__((target_clones("avx2", "default")))

OLD_HOT static uint32_t old_absmax_bits(const float *x, int count)
{
	uint32_t maxbits = 0, b;
	int i;

	for (i = 0; i < count; i++) {
		memcpy(&b, &x[i], 4);
		b &= 0x7fffffff;
		maxbits = b > maxbits ? b : maxbits;
	}
	return maxbits;
}

OLD_HOT static void old_quant_f(int32_t *q, const float *x, int count,
				float scale)
{
	int i;

	for (i = 0; i < count; i++)
		q[i] = (int32_t)lrintf(x[i] * scale);
}

OLD_HOT static void old_dequant_f(float *x, const int32_t *q, int count,
				  float scale)
{
	int i;

	for (i = 0; i < count; i++)
		x[i] = (float)q[i] * scale;
}

static void old_quant_block(struct rinx_slot *s, const float *x, int count,
			    int qbits)
{
	uint32_t maxbits = old_absmax_bits(x, count);
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
	s->step = 0;
	s->sent_us = 0;
	if (maxbits == 0) {
		s->exp = RINX_EXP_ZERO;
		memset(s->v, 0, sizeof(s->v));
		return;
	}
	{
		float m;

		memcpy(&m, &maxbits, 4);
		frexpf(m, &e);
	}
	s->exp = e;
	scale = ldexp(1.0, qbits - e);
	if (!flags && qbits - e <= 127) {
		old_quant_f(s->v, x, count, (float)scale);
	} else if (!flags) {
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

static void old_dequant_block(const struct rinx_slot *s, float *x, int count,
			      int qbits)
{
	double scale;
	int i;

	if (s->flags & RINX_F_NONFINITE) {
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
		old_dequant_f(x, s->v, count, (float)scale);
		return;
	}
	for (i = 0; i < count; i++)
		x[i] = (float)((double)s->v[i] * scale);
}

/* ---- block generators ---- */

typedef void (*gen_fn)(float *x, int count, int qbits);

static void gen_wide(float *x, int count, int qbits)
{
	/* one exponent window per block, random width, anywhere */
	int hi = 1 + rnd_below(254), lo = hi - (int)rnd_below(40);
	int i;

	if (lo < 0)
		lo = 0;
	for (i = 0; i < count; i++)
		x[i] = rnd_float(lo, hi);
	if (rnd_below(8) == 0)
		x[rnd_below(count)] = 0;
}

static void gen_gradient(float *x, int count, int qbits)
{
	int i;

	for (i = 0; i < count; i++)
		x[i] = (float)((rnd_unit() - 0.5) * 1e-3 *
			       (1 + 30 * rnd_unit() * rnd_unit()));
}

static void gen_ties(float *x, int count, int qbits)
{
	/* the block's max is 0.75 (exp 0, scale 2^qbits); the others are
	 * (j + 1/2) * 2^-qbits, exact ties after scaling, both parities */
	int i;

	for (i = 0; i < count; i++) {
		int32_t j = (int32_t)rnd_below(1u << 20) - (1 << 19);

		x[i] = (float)ldexp(j + 0.5, -qbits);
	}
	x[rnd_below(count)] = rnd_below(2) ? 0.75f : -0.75f;
}

static void gen_subnormal(float *x, int count, int qbits)
{
	int i;

	for (i = 0; i < count; i++)
		x[i] = rnd_float(0, 0);
}

static void gen_subnormal_normal(float *x, int count, int qbits)
{
	/* subnormals under the smallest normals */
	int i;

	for (i = 0; i < count; i++)
		x[i] = rnd_float(0, rnd_below(4));
}

static void gen_tiny(float *x, int count, int qbits)
{
	int i;

	for (i = 0; i < count; i++)
		x[i] = (float)(1e-38 * (2 * rnd_unit() - 1));
}

static void gen_near_max(float *x, int count, int qbits)
{
	int i;

	for (i = 0; i < count; i++)
		x[i] = (float)(FLT_MAX * (0.5 + 0.5 * rnd_unit())) *
		       (rnd_below(2) ? 1 : -1);
	x[rnd_below(count)] = rnd_below(2) ? FLT_MAX : -FLT_MAX;
}

static void gen_huge_small(float *x, int count, int qbits)
{
	/* one value far above the rest: the others round to 0 or a few units */
	int i;

	for (i = 0; i < count; i++)
		x[i] = rnd_float(100, 130);
	x[rnd_below(count)] = rnd_float(150 + rnd_below(100), 254);
}

static void gen_pow2(float *x, int count, int qbits)
{
	/* the max is an exact power of two: the exponent steps up by one */
	int i, e = 1 + rnd_below(253);

	for (i = 0; i < count; i++)
		x[i] = rnd_float(e > 10 ? e - 10 : 1, e);
	x[rnd_below(count)] = from_bits((uint32_t)(e + 1 > 254 ? 254 : e + 1)
					<< 23);
}

static void gen_zero(float *x, int count, int qbits)
{
	int i;

	for (i = 0; i < count; i++)
		x[i] = rnd_below(2) ? 0.0f : -0.0f;
}

static void put_nonfinite(float *x, int count, const float *which, int nw)
{
	int i, k = 1 + rnd_below(4);

	for (i = 0; i < k; i++)
		x[rnd_below(count)] = which[rnd_below(nw)];
}

static void gen_nan(float *x, int count, int qbits)
{
	/* quiet, signalling and negative NaNs */
	static const float nans[] = { NAN, -NAN, 0, 0 };
	float w[4];

	memcpy(w, nans, sizeof(w));
	w[2] = from_bits(0x7f800001);
	w[3] = from_bits(0xffc12345);
	gen_gradient(x, count, qbits);
	put_nonfinite(x, count, w, 4);
}

static void gen_pinf(float *x, int count, int qbits)
{
	static const float w[] = { INFINITY };

	gen_wide(x, count, qbits);
	put_nonfinite(x, count, w, 1);
}

static void gen_ninf(float *x, int count, int qbits)
{
	static const float w[] = { -INFINITY };

	gen_near_max(x, count, qbits);
	put_nonfinite(x, count, w, 1);
}

static void gen_mixed_nonfinite(float *x, int count, int qbits)
{
	static const float w[] = { INFINITY, -INFINITY, NAN };

	gen_subnormal_normal(x, count, qbits);
	put_nonfinite(x, count, w, 3);
}

static void gen_all_nonfinite(float *x, int count, int qbits)
{
	/* no finite value at all: exponent ZERO with the flags */
	static const float w[] = { INFINITY, -INFINITY, NAN };
	int i;

	for (i = 0; i < count; i++)
		x[i] = rnd_below(3) ? w[rnd_below(3)] : 0.0f;
	x[0] = w[rnd_below(3)];
}

static const struct gcase {
	const char *name;
	gen_fn gen;
	bool all_counts;	/* every count 1..768, else a short list */
} gcases[] = {
	{ "random blocks, wide exponents", gen_wide, true },
	{ "gradient-like blocks", gen_gradient, true },
	{ "exact rounding ties (nearest even)", gen_ties, false },
	{ "subnormal blocks", gen_subnormal, false },
	{ "subnormal and smallest-normal blocks", gen_subnormal_normal, false },
	{ "tiny blocks (1e-38)", gen_tiny, false },
	{ "near-FLT_MAX blocks, mixed signs", gen_near_max, false },
	{ "one huge value over small ones", gen_huge_small, false },
	{ "power-of-two block maxima", gen_pow2, false },
	{ "all-zero blocks (+0 and -0)", gen_zero, false },
	{ "blocks with NaN", gen_nan, false },
	{ "blocks with +Inf", gen_pinf, false },
	{ "blocks with -Inf", gen_ninf, false },
	{ "blocks with +Inf, -Inf and NaN", gen_mixed_nonfinite, false },
	{ "blocks with no finite nonzero value", gen_all_nonfinite, false },
};

static const int short_counts[] = { 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33,
				    100, 255, 256, 257, 511, 767, 768 };
static const int qbits_set[] = { 30, 29, 28, 27, 24, 20 };
#define NQ (int)(sizeof(qbits_set) / sizeof(qbits_set[0]))

/* x at an offset of 0..15 floats, so every alignment is seen */
static float xbuf[BV + 16], obuf[BV + 32], rbuf[BV + 32];

static bool slot_eq(const struct rinx_slot *a, const struct rinx_slot *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static void slot_poison(struct rinx_slot *s)
{
	memset(s, 0xa5, sizeof(*s));
	s->round = ROUND_MARK;
}

static const char *first_diff(const struct rinx_slot *got,
			      const struct rinx_slot *want, char *buf,
			      size_t len)
{
	int i;

	if (got->round != want->round)
		snprintf(buf, len, "round %#x, want %#x", got->round,
			 want->round);
	else if (got->exp != want->exp || got->flags != want->flags ||
		 got->count != want->count)
		snprintf(buf, len, "exp/flags/count %d/%#x/%u, want %d/%#x/%u",
			 got->exp, got->flags, got->count, want->exp,
			 want->flags, want->count);
	else
		for (i = 0; i < BV; i++)
			if (got->v[i] != want->v[i]) {
				snprintf(buf, len, "v[%d] = %d, want %d", i,
					 got->v[i], want->v[i]);
				break;
			}
	return buf;
}

/* Quantize cases on path p: against the reference and the portable path. */
static void test_quant_case(const struct gcase *c, enum rinx_quant_path p)
{
	struct rinx_slot got, port, want;
	int n_counts = c->all_counts ? BV : (int)(sizeof(short_counts) /
						  sizeof(short_counts[0]));
	int ci, rep, blocks = 0, bad = 0;
	char msg[240] = "", d[160];

	for (ci = 0; ci < n_counts; ci++) {
		int count = c->all_counts ? ci + 1 : short_counts[ci];

		for (rep = 0; rep < (c->all_counts ? 1 : 6); rep++) {
			int qbits = qbits_set[(ci + rep) % NQ];
			float *x = xbuf + rnd_below(16);

			c->gen(x, count, qbits);
			slot_poison(&want);
			ref_quant(&want, x, count, qbits);
			slot_poison(&port);
			rinx_quant_set_path(RINX_QUANT_PORTABLE);
			rinx_quant_block(&port, x, count, qbits);
			slot_poison(&got);
			rinx_quant_set_path(p);
			rinx_quant_block(&got, x, count, qbits);
			blocks++;
			if (!slot_eq(&got, &want) && !bad++)
				snprintf(msg, sizeof(msg),
					 "count %d qbits %d: %s", count, qbits,
					 first_diff(&got, &want, d,
						    sizeof(d)));
			else if (!slot_eq(&got, &port) && !bad++)
				snprintf(msg, sizeof(msg),
					 "count %d qbits %d: differs from portable",
					 count, qbits);
		}
	}
	tap_ok(!bad, "quantize %s: %s, %d blocks == reference == portable%s%s",
	       rinx_quant_path_name(p), c->name, blocks, bad ? ": " : "", msg);
}

static bool floats_eq(const float *a, const float *b, int n)
{
	return !memcmp(a, b, n * sizeof(*a));
}

/* Dequantize random wire slots: any exponent, any value, any flags. */
static void test_dequant(enum rinx_quant_path p)
{
	static const uint8_t flagset[] = { RINX_F_NAN, RINX_F_PINF, RINX_F_NINF,
					   RINX_F_PINF | RINX_F_NINF,
					   RINX_F_NAN | RINX_F_NINF };
	struct rinx_slot s;
	int t, bad = 0, i;
	char msg[200] = "";

	for (t = 0; t < 6000; t++) {
		int count = 1 + rnd_below(BV), qbits = qbits_set[rnd_below(NQ)];
		int kind = rnd_below(10);

		memset(&s, 0, sizeof(s));
		for (i = 0; i < BV; i++)
			s.v[i] = (int32_t)(rnd() >> (rnd_below(4) * 8));
		if (kind == 0)
			s.v[rnd_below(count)] = INT32_MIN;
		if (kind < 5)		/* everyday exponents */
			s.exp = (int)rnd_below(120) - 60;
		else if (kind < 7)	/* results in and under the subnormals */
			s.exp = (int)rnd_below(60) - 160 + qbits;
		else if (kind == 7)	/* overflow to infinity and beyond */
			s.exp = 100 + (int)rnd_below(200);
		else if (kind == 8) {	/* anything the wire can carry */
			s.exp = rnd_below(2) ? RINX_EXP_ZERO :
					       (int)rnd_below(65536) - 32768;
			for (i = 0; i < count; i += 1 + rnd_below(8))
				s.v[i] = 0;
		}
		else
			s.flags = flagset[rnd_below(5)];
		ref_dequant(&s, rbuf, count, qbits);
		memset(obuf, 0x5a, sizeof(obuf));
		rinx_quant_set_path(p);
		rinx_dequant_block(&s, obuf, count, qbits);
		if (!floats_eq(obuf, rbuf, count) && !bad++) {
			for (i = 0; i < count && to_bits(obuf[i]) ==
						 to_bits(rbuf[i]); i++)
				;
			snprintf(msg, sizeof(msg),
				 ": exp %d qbits %d flags %#x v[%d] %d: %a, want %a",
				 s.exp, qbits, s.flags, i, s.v[i], obuf[i],
				 rbuf[i]);
		} else if (to_bits(obuf[count]) != 0x5a5a5a5a && !bad++) {
			snprintf(msg, sizeof(msg), ": wrote past count %d",
				 count);
		}
		memset(rbuf, 0x3c, sizeof(rbuf));
		rinx_quant_set_path(RINX_QUANT_PORTABLE);
		rinx_dequant_block(&s, rbuf, count, qbits);
		if (!floats_eq(obuf, rbuf, count) && !bad++)
			snprintf(msg, sizeof(msg), ": differs from portable");
	}
	tap_ok(!bad, "dequantize %s: 6000 random wire slots == reference == portable%s",
	       rinx_quant_path_name(p), msg);
}

/* Range calls (the whole window in one call) equal block calls. */
static void test_range(enum rinx_quant_path p)
{
	enum { NB = 6, NV = 5 * BV + 321 };
	static struct rinx_slot a[NB], b[NB];
	static float x[NV], ya[NV + 1], yb[NV + 1];
	int i, bad = 0;

	for (i = 0; i < NV; i++)
		x[i] = rnd_float(100, 140);
	x[2 * BV + 5] = INFINITY;
	for (i = 0; i < NB; i++) {
		slot_poison(&a[i]);
		slot_poison(&b[i]);
	}
	rinx_quant_set_path(p);
	rinx_quant_blocks(a, x, NV, 29);
	for (i = 0; i < NB; i++)
		rinx_quant_block(&b[i], x + i * BV,
				 i < NB - 1 ? BV : NV - (NB - 1) * BV, 29);
	for (i = 0; i < NB; i++)
		if (!slot_eq(&a[i], &b[i]))
			bad++;
	memset(ya, 0x77, sizeof(ya));
	memset(yb, 0x77, sizeof(yb));
	rinx_dequant_blocks(a, ya, NV, 29);
	for (i = 0; i < NB; i++)
		rinx_dequant_block(&a[i], yb + i * BV,
				   i < NB - 1 ? BV : NV - (NB - 1) * BV, 29);
	if (memcmp(ya, yb, sizeof(ya)))
		bad++;
	/* an empty block is a zero slot; an empty range writes nothing */
	slot_poison(&a[0]);
	rinx_quant_block(&a[0], x, 0, 29);
	memset(&b[0], 0, sizeof(b[0]));
	b[0].round = ROUND_MARK;
	b[0].exp = RINX_EXP_ZERO;
	if (!slot_eq(&a[0], &b[0]))
		bad++;
	slot_poison(&a[1]);
	b[1] = a[1];
	rinx_quant_blocks(&a[1], x, 0, 29);
	rinx_dequant_blocks(&a[0], ya, 0, 29);
	if (!slot_eq(&a[1], &b[1]) || memcmp(ya, yb, sizeof(ya)))
		bad++;
	tap_ok(!bad, "range calls %s: %d values in %d slots == block calls, nothing written past the range; empty block and range",
	       rinx_quant_path_name(p), NV, NB);
}

#if defined(__x86_64__) || defined(__i386__)
/* A trainer may run with another rounding mode or flush-to-zero and
 * denormals-are-zero on (some frameworks offer it): the conversion must not
 * change, and the caller's setting must come back. */
static void test_fpenv(enum rinx_quant_path p)
{
	static const unsigned int modes[] = {
		0x2000 /* down */, 0x4000 /* up */, 0x6000 /* to zero */,
		0x8040 /* FTZ | DAZ */, 0xe040 /* all of it */ };
	struct rinx_slot got, want;
	unsigned int saved = _mm_getcsr();
	int m, t, bad = 0;
	char msg[160] = "";

	for (m = 0; m < 5; m++) {
		for (t = 0; t < 200; t++) {
			int count = 1 + rnd_below(BV), qbits = 24 + rnd_below(7);
			const struct gcase *c = &gcases[t % 6];
			float *x = xbuf + rnd_below(16);
			unsigned int csr;

			c->gen(x, count, qbits);
			slot_poison(&want);
			ref_quant(&want, x, count, qbits);
			ref_dequant(&want, rbuf, count, qbits);
			rinx_quant_set_path(p);
			_mm_setcsr((saved & ~0xe040u) | modes[m]);
			slot_poison(&got);
			rinx_quant_block(&got, x, count, qbits);
			rinx_dequant_block(&got, obuf, count, qbits);
			csr = _mm_getcsr();
			_mm_setcsr(saved);
			if ((csr & 0xe040) != modes[m] && !bad++)
				snprintf(msg, sizeof(msg),
					 ": MXCSR %#x after the call, want %#x",
					 csr & 0xe040, modes[m]);
			else if ((!slot_eq(&got, &want) ||
				  !floats_eq(obuf, rbuf, count)) && !bad++)
				snprintf(msg, sizeof(msg),
					 ": MXCSR mode %#x, %s: differs",
					 modes[m], c->name);
		}
	}
	tap_ok(!bad, "%s: directed rounding and FTZ/DAZ in the caller change no bit and are restored%s",
	       rinx_quant_path_name(p), msg);
}
#else
static void test_fpenv(enum rinx_quant_path p)
{
	tap_skip("MXCSR is x86 only", "%s: caller's floating-point environment",
		 rinx_quant_path_name(p));
}
#endif

/* The error bound of sums over n ranks, added with the hop's arithmetic. */
static void test_bound(enum rinx_quant_path p, int n)
{
	enum { ROUNDS = 300 };
	static float x[64][BV];
	static struct rinx_slot q[64];
	struct rinx_slot acc;
	static const gen_fn fam[] = { gen_gradient, gen_wide, gen_tiny,
				      gen_subnormal_normal, gen_subnormal,
				      gen_near_max, gen_ties };
	static const char *const famname[] = { "gradient", "wide", "tiny",
					       "subnormal+normal", "subnormal",
					       "near-max", "ties" };
	int qbits = rinx_qbits(n), r, k, i, bad = 0;
	double worst = 0;
	char msg[240] = "";

	rinx_quant_set_path(p);
	for (r = 0; r < ROUNDS; r++) {
		int count = 1 + rnd_below(BV), f = r % 7;
		double amax = 0;

		for (k = 0; k < n; k++) {
			/* ranks differ in scale, so exponents get aligned */
			int shift = rnd_below(4) ? -(int)rnd_below(12) : 0;

			fam[f](x[k], count, qbits);
			for (i = 0; i < count; i++) {
				if (f == 5 || f == 1)	/* keep the n-sum finite */
					x[k][i] = (float)ldexp(x[k][i] / (2.0 * n),
							       shift);
				else if (f != 4 && f != 3)
					x[k][i] = (float)ldexp(x[k][i], shift);
				if (fabs(x[k][i]) > amax)
					amax = fabs(x[k][i]);
			}
			rinx_quant_block(&q[k], x[k], count, qbits);
		}
		acc = q[0];
		for (k = 1; k < n; k++)
			rinx_block_add_user(&acc, &q[k]);
		rinx_dequant_block(&acc, obuf, count, qbits);
		for (i = 0; i < count; i++) {
			double exact = 0, err, bound = rinx_f32_bound(n, amax);

			for (k = 0; k < n; k++)
				exact += x[k][i];
			err = fabs((double)obuf[i] - exact);
			if (amax > 0 && err / amax > worst)
				worst = err / amax;
			if (!(err <= bound) && !bad++)
				snprintf(msg, sizeof(msg),
					 ": %s block, element %d: %a, exact %a, error %.3g > bound %.3g (amax %a)",
					 famname[f], i, obuf[i], exact, err,
					 bound, amax);
		}
	}
	tap_ok(!bad, "%s: sums over n = %d ranks within rinx_f32_bound (worst error/amax %.3g, bound/amax %.3g)%s",
	       rinx_quant_path_name(p), n, worst, rinx_f32_bound(n, 1.0), msg);
}

/* ---- speed, diagnostics only ---- */

static double thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

enum bench_kind { B_RANGE, B_BLOCK, B_OLD };

static void quant_once(enum bench_kind k, struct rinx_slot *s, const float *x,
		       size_t nv)
{
	size_t off, b;

	if (k == B_RANGE) {
		rinx_quant_blocks(s, x, nv, 28);
		return;
	}
	for (off = 0, b = 0; off < nv; off += BV, b++) {
		int cnt = nv - off < BV ? nv - off : BV;

		if (k == B_BLOCK)
			rinx_quant_block(&s[b], x + off, cnt, 28);
		else
			old_quant_block(&s[b], x + off, cnt, 28);
	}
}

static void dequant_once(enum bench_kind k, const struct rinx_slot *s,
			 float *x, size_t nv)
{
	size_t off, b;

	if (k == B_RANGE) {
		rinx_dequant_blocks(s, x, nv, 28);
		return;
	}
	for (off = 0, b = 0; off < nv; off += BV, b++) {
		int cnt = nv - off < BV ? nv - off : BV;

		if (k == B_BLOCK)
			rinx_dequant_block(&s[b], x + off, cnt, 28);
		else
			old_dequant_block(&s[b], x + off, cnt, 28);
	}
}

/* ns per element: the best of `reps` timings of `inner` conversions of
 * x[0..nv) (reading the thread clock is a system call: a timing should last
 * well over 10 us). */
static double bench_quant(enum bench_kind k, struct rinx_slot *s,
			  const float *x, size_t nv, int reps, int inner)
{
	double best = 1e30;
	int r, it;

	for (r = 0; r < reps; r++) {
		double t = thread_ns();

		for (it = 0; it < inner; it++)
			quant_once(k, s, x, nv);
		t = thread_ns() - t;
		best = t < best ? t : best;
	}
	return best / ((double)nv * inner);
}

static double bench_dequant(enum bench_kind k, const struct rinx_slot *s,
			    float *x, size_t nv, int reps, int inner)
{
	double best = 1e30;
	int r, it;

	for (r = 0; r < reps; r++) {
		double t = thread_ns();

		for (it = 0; it < inner; it++)
			dequant_once(k, s, x, nv);
		t = thread_ns() - t;
		best = t < best ? t : best;
	}
	return best / ((double)nv * inner);
}

static void bench(void)
{
	const char *e = getenv("RINX_QUANT_MIB");
	size_t mib = e ? strtoul(e, NULL, 10) : 16;
	size_t nv = mib * (1u << 20) / 4, nb, i;
	size_t small = 4 * BV;	/* 12 KiB in, 12 KiB out: stays in L1 */
	struct rinx_slot *s;
	float *x, *y;
	int p;

	if (!nv)
		return;
	nb = (nv + BV - 1) / BV;
	x = aligned_alloc(64, nb * BV * 4);
	y = aligned_alloc(64, nb * BV * 4);
	s = aligned_alloc(64, nb * sizeof(*s));
	if (!x || !y || !s) {
		tap_diag("speed: cannot allocate %zu MiB", mib);
		goto out;
	}
	for (i = 0; i < nv; i++)	/* gradient-like; pages touched */
		x[i] = (float)((rnd_unit() - 0.5) * 1e-3);
	memset(y, 0, nb * BV * 4);
	memset(s, 0, nb * sizeof(*s));
	tap_diag("speed (diagnostics only): ns per element, thread CPU time, best of 5, qbits 28");
	tap_diag("%-30s %9s %9s   %9s %9s", "", "quant", "dequant",
		 "quant", "dequant");
	tap_diag("%-30s %19s   %19s", "", "(4 blocks, in L1)", "(whole buffer)");
	for (p = RINX_QUANT_NPATHS; p >= 0; p--) {
		char name[40];
		double q1, d1, q2, d2;

		if (p < RINX_QUANT_NPATHS) {
			if (!rinx_quant_path_supported(p))
				continue;
			rinx_quant_set_path(p);
			snprintf(name, sizeof(name), "%s, range call",
				 rinx_quant_path_name(p));
			q1 = bench_quant(B_RANGE, s, x, small, 20, 50);
			d1 = bench_dequant(B_RANGE, s, y, small, 20, 50);
			q2 = bench_quant(B_RANGE, s, x, nv, 5, 1);
			d2 = bench_dequant(B_RANGE, s, y, nv, 5, 1);
			tap_diag("%-30s %9.3f %9.3f   %9.3f %9.3f", name,
				 q1, d1, q2, d2);
			snprintf(name, sizeof(name), "%s, one call a block",
				 rinx_quant_path_name(p));
			q1 = bench_quant(B_BLOCK, s, x, small, 20, 50);
			d1 = bench_dequant(B_BLOCK, s, y, small, 20, 50);
			q2 = bench_quant(B_BLOCK, s, x, nv, 5, 1);
			d2 = bench_dequant(B_BLOCK, s, y, nv, 5, 1);
		} else {
			snprintf(name, sizeof(name), "old scalar code (baseline)");
			q1 = bench_quant(B_OLD, s, x, small, 20, 50);
			d1 = bench_dequant(B_OLD, s, y, small, 20, 50);
			q2 = bench_quant(B_OLD, s, x, nv, 5, 1);
			d2 = bench_dequant(B_OLD, s, y, nv, 5, 1);
		}
		tap_diag("%-30s %9.3f %9.3f   %9.3f %9.3f", name, q1, d1, q2, d2);
	}
	tap_diag("whole buffer: %zu MiB of floats (RINX_QUANT_MIB), %zu blocks",
		 mib, nb);
out:
	free(x);
	free(y);
	free(s);
}

int main(void)
{
	const char *env = getenv("RINX_QUANT"), *seed_env = getenv("RINX_QUANT_SEED");
	enum rinx_quant_path first;
	unsigned int gi;
	int p, n;

	rng_state = seed_env ? strtoull(seed_env, NULL, 0) :
			       (uint64_t)time(NULL) * 2654435761u + 1;
	if (!rng_state)
		rng_state = 1;
	printf("TAP version 13\n");
	tap_diag("seed %#llx (RINX_QUANT_SEED)", (unsigned long long)rng_state);
	fesetround(FE_TONEAREST);

	/* RINX_QUANT is read at the first conversion: check it picks the
	 * path (portable unless the caller asked for another one). */
	if (!env)
		setenv("RINX_QUANT", "portable", 1);
	env = getenv("RINX_QUANT");
	first = rinx_quant_get_path();
	/* the path chosen and the portable one (2); per path, its gradient
	 * cases, dequantize, range, floating-point environment and four
	 * bounds, run or skipped, and for a path this CPU lacks the check
	 * that it cannot be forced */
	n = 2;
	for (p = 0; p < RINX_QUANT_NPATHS; p++)
		n += (int)(sizeof(gcases) / sizeof(gcases[0])) + 7 +
		     !rinx_quant_path_supported(p);
	tap_plan(n);
	if (!strcmp(env, "auto") || !strcmp(env, "")) {
		for (p = RINX_QUANT_NPATHS - 1; p > 0; p--)
			if (rinx_quant_path_supported(p))
				break;
		tap_ok((int)first == p, "RINX_QUANT=%s selects the fastest path this CPU runs (%s)",
		       env, rinx_quant_path_name(first));
	} else {
		tap_ok(!strcmp(rinx_quant_path_name(first), env),
		       "RINX_QUANT=%s selects path %s", env,
		       rinx_quant_path_name(first));
	}
	tap_ok(rinx_quant_path_supported(RINX_QUANT_PORTABLE) &&
	       rinx_quant_set_path(RINX_QUANT_NPATHS) == -EOPNOTSUPP,
	       "the portable path is always there; an unknown path is refused");

	for (p = 0; p < RINX_QUANT_NPATHS; p++) {
		const char *name = rinx_quant_path_name(p);
		char why[80];

		if (!rinx_quant_path_supported(p)) {
			snprintf(why, sizeof(why), "this CPU (or build) has no %s", name);
			tap_ok(rinx_quant_set_path(p) == -EOPNOTSUPP,
			       "%s: cannot be forced on this CPU", name);
			for (gi = 0; gi < sizeof(gcases) / sizeof(gcases[0]); gi++)
				tap_skip(why, "quantize %s: %s", name,
					 gcases[gi].name);
			tap_skip(why, "dequantize %s", name);
			tap_skip(why, "range calls %s", name);
			tap_skip(why, "%s: caller's floating-point environment", name);
			for (n = 0; n < 4; n++)
				tap_skip(why, "%s: error bound", name);
			continue;
		}
		for (gi = 0; gi < sizeof(gcases) / sizeof(gcases[0]); gi++)
			test_quant_case(&gcases[gi], p);
		test_dequant(p);
		test_range(p);
		test_fpenv(p);
		test_bound(p, 2);
		test_bound(p, 3);
		test_bound(p, 8);
		test_bound(p, 64);
	}
	bench();
	return tap_done();
}
