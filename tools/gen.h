/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The benchmark's input generator and size lists, shared by `rinxctl bench`
 * and the peers it is compared with (tools/peers/; gloo_bench.py carries a
 * numpy copy, checked bit for bit by selftests/test_gen), so that every
 * candidate reduces the same numbers at the same sizes. Independent of rinx:
 * the references of --verify are computed from it, never from a result.
 *
 * Three kinds of data (--data):
 *   grad   like gradients: the scale changes between blocks of
 *          GEN_SCALE_VALUES values, never between ranks; every rank draws its
 *          own values around 0 with that scale (the default for float32);
 *   worst  the scale changes every 768 values and differs between the ranks
 *          of a block by up to 2^15: the worst case of the block fixed point,
 *          whose hops align the smaller exponent by a shift;
 *   ints   any int32 (sums wrap): the only data of int32 runs.
 */
#ifndef RINX_GEN_H
#define RINX_GEN_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEN_BLOCK_VALUES	768	/* worst: exponents change every block */

enum gen_data { GEN_GRAD, GEN_WORST, GEN_INTS, GEN_NDATA };

static const char *const gen_data_names[GEN_NDATA] = { "grad", "worst", "ints" };

/* What each kind is, for the header lines of every table that prints
 * figures measured on it. */
static const char *const gen_data_about[GEN_NDATA] = {
	"gradient-like: scale 2^-20..2^-4 log-uniform per block of 6144 values, "
	"the same on every rank; values ~normal(0, scale), drawn per rank",
	"per-rank exponent spread: values uniform in +-2^e, e = (block of 768 + "
	"rank) mod 16 - 8, so the ranks' exponents in a block differ by up to 15",
	"int32 uniform over all 32-bit values, sums wrap",
};

/* "grad", "worst", "ints": the enum, or -EINVAL. */
static inline int gen_data_parse(const char *name)
{
	int d;

	for (d = 0; d < GEN_NDATA; d++)
		if (!strcmp(name, gen_data_names[d]))
			return d;
	return -EINVAL;
}

static inline const char *gen_data_name(int data)
{
	return data >= 0 && data < GEN_NDATA ? gen_data_names[data] : "?";
}

static inline uint64_t gen_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* The seed of run `iter` of a sweep at `count` elements. */
static inline uint64_t gen_run_seed(uint64_t seed, int iter, uint64_t count)
{
	return gen_mix64(seed + iter * 7919 + count);
}

/* --data worst: element i of rank r: floats of magnitude 2^-8..2^7 from
 * block to block, with both signs; in a block, rank r's exponent is r above
 * rank 0's (mod 16). The generator of every benchmark before --data, kept
 * unchanged (so old figures stay comparable) under its old name. */
static inline float gen_f32(uint64_t seed, int r, uint64_t i)
{
	uint64_t h = gen_mix64(seed ^ (r * 0x9e3779b97f4a7c15ull) ^ (i << 8));
	int e = (int)((i / GEN_BLOCK_VALUES + r) % 16) - 8;
	double u = (double)(h >> 11) * 0x1.0p-53 * 2.0 - 1.0;
	/* 2^e from its bits: u * 2^e is exact, as ldexp(u, e) would be, at a
	 * fraction of its cost (the benchmark fills 16 ranks' buffers with
	 * these between runs) */
	uint64_t eb = (uint64_t)(1023 + e) << 52;
	double p2;

	memcpy(&p2, &eb, sizeof(p2));
	return (float)(u * p2);
}

/* --data grad. A block's scale is 2^-20 * 2^(k/16), k uniform in 0..255 from
 * the run seed and the block alone: log-uniform over 16 octaves (about 1e-6
 * to 0.06, the range of gradients of different layers), in steps of 1/16
 * octave taken from a table so that every language computes the same bits
 * (a library's exp2 may differ in the last bit). */
#define GEN_SCALE_VALUES	6144	/* a whole number of 768- and
					 * 2048-value blocks of rinx */
#define GEN_SCALE_MIN_LOG2	(-20)
#define GEN_SCALE_OCTAVES	16

static const double gen_pow2_16th[16] = {
	1.0, 1.0442737824274138, 1.0905077326652577, 1.1387886347566916,
	1.189207115002721, 1.241857812073484, 1.2968395546510096,
	1.3542555469368927, 1.4142135623730951, 1.4768261459394993,
	1.5422108254079407, 1.6104903319492543, 1.681792830507429,
	1.7562521603732995, 1.8340080864093424, 1.9152065613971474,
};

/* 2^e for -1022 <= e <= 1023, from its bits. */
static inline double gen_p2(int e)
{
	uint64_t eb = (uint64_t)(1023 + e) << 52;
	double p2;

	memcpy(&p2, &eb, sizeof(p2));
	return p2;
}

/* The scale of element i's block: a function of the run seed and the block,
 * not of the rank. */
static inline double gen_scale(uint64_t seed, uint64_t i)
{
	uint64_t k = gen_mix64(seed ^ gen_mix64(i / GEN_SCALE_VALUES ^
						 0x5ca1ab1e0ddba11ull)) >> 56;

	return gen_p2(GEN_SCALE_MIN_LOG2 + (int)(k >> 4)) *
	       gen_pow2_16th[k & 15];
}

/* A value ~normal(0, 1) of rank r's own element i: the sum of four uniforms
 * (16 bits each, centred in their cells) less its mean, scaled to unit
 * variance; |z| < 2 * sqrt(3). Exact in double up to the last product. */
static inline double gen_unit(uint64_t seed, int r, uint64_t i)
{
	uint64_t h = gen_mix64(seed ^ (r * 0x9e3779b97f4a7c15ull) ^ (i << 8) ^
			       0x6a09e667f3bcc908ull);
	double s = (double)((h & 0xffff) + (h >> 16 & 0xffff) +
			    (h >> 32 & 0xffff) + (h >> 48) + 2);

	return (s * 0x1.0p-16 - 2.0) * 1.7320508075688772;
}

static inline float gen_f32_grad(uint64_t seed, int r, uint64_t i)
{
	return (float)(gen_unit(seed, r, i) * gen_scale(seed, i));
}

/* Element i of rank r: any int32 (sums wrap). */
static inline int32_t gen_i32(uint64_t seed, int r, uint64_t i)
{
	return (int32_t)(uint32_t)gen_mix64(seed ^ (r * 0x9e3779b97f4a7c15ull) ^
					    (i << 8) ^ 0x5555);
}

/* Element i of rank r of float32 data (grad or worst). */
static inline float gen_f32_of(int data, uint64_t seed, int r, uint64_t i)
{
	return data == GEN_WORST ? gen_f32(seed, r, i) :
				   gen_f32_grad(seed, r, i);
}

/* Elements start..start+count-1 of rank r into out (int32 for ints, else
 * float32); grad's scale is computed once per block. */
static inline void gen_fill(int data, uint64_t seed, int r, uint64_t start,
			    uint64_t count, void *out)
{
	uint64_t i, end = start + count, next;
	double sc;

	if (data == GEN_INTS) {
		for (i = start; i < end; i++)
			((int32_t *)out)[i - start] = gen_i32(seed, r, i);
		return;
	}
	if (data == GEN_WORST) {
		for (i = start; i < end; i++)
			((float *)out)[i - start] = gen_f32(seed, r, i);
		return;
	}
	i = start;
	while (i < end) {
		next = (i / GEN_SCALE_VALUES + 1) * GEN_SCALE_VALUES;
		if (next > end)
			next = end;
		sc = gen_scale(seed, i);
		for (; i < next; i++)
			((float *)out)[i - start] =
				(float)(gen_unit(seed, r, i) * sc);
	}
}

/* "4K,1M,64M" (suffixes K, M, G, an optional B; multiples of 4 bytes) into
 * sizes[]: how many, or -EINVAL. */
static inline int gen_parse_sizes(const char *list, uint64_t *sizes, int max)
{
	char buf[512], *save = NULL, *tok, *end;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		double v = strtod(tok, &end);
		uint64_t m = 1;

		if (end == tok || v < 0 || n >= max)
			return -EINVAL;
		if (*end == 'K' || *end == 'k')
			m = 1024, end++;
		else if (*end == 'M' || *end == 'm')
			m = 1024 * 1024, end++;
		else if (*end == 'G' || *end == 'g')
			m = 1024ull * 1024 * 1024, end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return -EINVAL;
		sizes[n] = (uint64_t)(v * m);
		if (sizes[n] % 4)
			return -EINVAL;
		n++;
	}
	return n ? n : -EINVAL;
}

#endif
