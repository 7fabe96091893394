/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The benchmark's input generator and size lists, shared by `rinxctl bench`
 * and the peers it is compared with (tools/peers/), so that every candidate
 * reduces the same numbers at the same sizes. Independent of rinx: the
 * references of --verify are computed from it, never from a result.
 */
#ifndef RINX_GEN_H
#define RINX_GEN_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEN_BLOCK_VALUES	768	/* exponents change every block */

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

/* Element i of rank r: floats of magnitude 2^-8..2^7 from block to block,
 * with both signs. */
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

/* Element i of rank r: any int32 (sums wrap). */
static inline int32_t gen_i32(uint64_t seed, int r, uint64_t i)
{
	return (int32_t)(uint32_t)gen_mix64(seed ^ (r * 0x9e3779b97f4a7c15ull) ^
					    (i << 8) ^ 0x5555);
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
