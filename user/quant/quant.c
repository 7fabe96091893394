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
 *
 * What every path computes, exactly (the ranks of a job may run different
 * paths on different CPUs, so they must agree to the bit):
 *   quantize:   v[i] = round-half-even(x[i] * 2^k), k = qbits - e, for
 *               finite x[i]; 0 for NaN and infinities;
 *   dequantize: x[i] = the float nearest (ties to even) to v[i] * 2^j,
 *               j = exp - qbits.
 * The vector paths run the common case (finite block, 2^k and 2^j normal
 * floats): x * 2^k is then exact in float (or below 2^-126, which rounds to
 * 0 either way) and (float)v * 2^j rounds once. The rest (non-finite and
 * extreme-exponent blocks) goes through one shared scalar routine in double,
 * where both products are exact. The rounding mode and the flush/denormals-
 * are-zero controls are set to the defaults for the conversion and restored
 * after it, so a caller's floating-point environment cannot change a bit.
 */
#include <errno.h>
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "user/quant/quant.h"
#include "user/librinx.h"
#include "user/log.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define QUANT_X86 1
#else
#define QUANT_X86 0
#endif

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

/* ---- shared scalar pieces (every path uses these unchanged) ---- */

/* frexp's exponent of the positive float with these bits: m < 2^e. */
static int bits_exp(uint32_t b)
{
	if (b >= 0x00800000)
		return (int)(b >> 23) - 126;
	/* subnormal: m = b * 2^-149 */
	return 32 - __builtin_clz(b) - 149;
}

/* Flags and the largest finite magnitude (as bits) of a block that has a
 * non-finite value. Rare: scalar. */
static uint32_t scan_nonfinite(const float *x, int count, uint8_t *flags)
{
	uint32_t maxbits = 0, b;
	int i;

	for (i = 0; i < count; i++) {
		memcpy(&b, &x[i], 4);
		if ((b & 0x7fffffff) > 0x7f800000)
			*flags |= RINX_F_NAN;
		else if ((b & 0x7fffffff) == 0x7f800000)
			*flags |= (b >> 31) ? RINX_F_NINF : RINX_F_PINF;
		else if ((b & 0x7fffffff) > maxbits)
			maxbits = b & 0x7fffffff;
	}
	return maxbits;
}

/* v = rint(x * 2^k) in double, where the product is exact (24-bit
 * significand, any k a block can have); non-finite x give 0. */
static __attribute__((noinline)) void
quant_double(int32_t *v, const float *x, int count, int k)
{
	double scale = ldexp(1.0, k);
	int i;

	for (i = 0; i < count; i++)
		v[i] = isfinite(x[i]) ? (int32_t)lrint((double)x[i] * scale) : 0;
}

/* One rounding of the exact v * 2^j; ldexp per value, as 2^j alone may not
 * fit a double for an exponent off the wire (0 * inf would be NaN). */
static __attribute__((noinline)) void
dequant_double(float *x, const int32_t *v, int count, int j)
{
	int i;

	for (i = 0; i < count; i++)
		x[i] = (float)ldexp((double)v[i], j);
}

static void fill_nonfinite(float *x, int count, uint8_t flags)
{
	/* A block with a non-finite input on any rank: NaN if any NaN or
	 * both infinities, else the infinity, for the whole block (the wire
	 * carries one flag set per block). */
	float v;
	int i;

	if ((flags & RINX_F_NAN) ||
	    (flags & (RINX_F_PINF | RINX_F_NINF)) == (RINX_F_PINF | RINX_F_NINF))
		v = NAN;
	else
		v = (flags & RINX_F_PINF) ? INFINITY : -INFINITY;
	for (i = 0; i < count; i++)
		x[i] = v;
}

typedef uint32_t (*absmax_fn)(const float *x, int n);
typedef void (*quant_fn)(int32_t *restrict q, const float *restrict x, int n,
			 float scale);
typedef void (*dequant_fn)(float *restrict x, const int32_t *restrict q,
			   int n, float scale);

/*
 * One block, generic over a path's three kernels. Inlined into each path's
 * range function, so the kernels become direct (inlinable) calls compiled
 * for that path's instruction set. absmax on the bits finds the largest
 * magnitude and, in the same pass, whether any value is non-finite (its
 * bits are >= those of +Inf); the block (3 KiB) is still in L1 for the
 * conversion pass.
 */
static inline __attribute__((always_inline)) void
quant_one(struct rinx_slot *s, const float *x, int count, int qbits,
	  absmax_fn absmax, quant_fn quant, int bval)
{
	uint32_t maxbits = absmax(x, count);
	uint8_t flags = 0;
	int k;

	if (maxbits >= 0x7f800000)
		maxbits = scan_nonfinite(x, count, &flags);
	s->flags = flags;
	s->count = count;
	s->resv = 0;
	s->step = 0;
	s->sent_us = 0;
	if (maxbits == 0) {
		s->exp = RINX_EXP_ZERO;
		memset(s->v, 0, bval * sizeof(s->v[0]));
		return;
	}
	s->exp = bits_exp(maxbits);
	k = qbits - s->exp;
	if (!flags && k >= -126 && k <= 127) {
		uint32_t sb = (uint32_t)(k + 127) << 23;
		float scale;

		memcpy(&scale, &sb, 4);	/* 2^k, exact */
		quant(s->v, x, count, scale);
	} else {
		quant_double(s->v, x, count, k);
	}
	if (count < bval)
		memset(&s->v[count], 0, (bval - count) * 4);
}

static inline __attribute__((always_inline)) void
dequant_one(const struct rinx_slot *s, float *x, int count, int qbits,
	    dequant_fn dequant)
{
	int j;

	if (s->flags & RINX_F_NONFINITE) {
		fill_nonfinite(x, count, s->flags);
		return;
	}
	if (s->exp == RINX_EXP_ZERO) {
		memset(x, 0, count * sizeof(*x));
		return;
	}
	j = s->exp - qbits;
	if (j >= -126 && j <= 127) {
		uint32_t sb = (uint32_t)(j + 127) << 23;
		float scale;

		memcpy(&scale, &sb, 4);
		dequant(x, s->v, count, scale);
	} else {
		dequant_double(x, s->v, count, j);
	}
}

static inline int range_count(size_t left, int bval)
{
	return left < (size_t)bval ? (int)left : bval;
}

/* Range functions of one path: nvals values into consecutive slots of bval
 * values each. */
#define DEFINE_PATH(name, attr, absmax, quant, dequant)			\
attr static void quant_range_##name(struct rinx_slot *s, const float *x, \
				    size_t nvals, int qbits, int bval)	\
{									\
	size_t off;							\
									\
	for (off = 0; off < nvals; off += bval, s++)			\
		quant_one(s, x + off, range_count(nvals - off, bval),	\
			  qbits, absmax, quant, bval);			\
}									\
attr static void dequant_range_##name(const struct rinx_slot *s,	\
				      float *x, size_t nvals, int qbits, \
				      int bval)				\
{									\
	size_t off;							\
									\
	for (off = 0; off < nvals; off += bval, s++)			\
		dequant_one(s, x + off, range_count(nvals - off, bval),	\
			    qbits, dequant);				\
}

/* ---- portable path: plain C, vectorized by the compiler for the base ISA */

/* An int-returning round-to-nearest the vectorizer understands (lrintf
 * returns a long, which keeps the loop scalar). Both follow the current
 * rounding mode, which the entry points set to nearest-even. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_irintf)
#define IRINTF(f) __builtin_irintf(f)
#endif
#endif
#ifndef IRINTF
#define IRINTF(f) ((int32_t)lrintf(f))
#endif

static uint32_t absmax_portable(const float *x, int n)
{
	int32_t m[16] = { 0 }, maxbits = 0, b;
	int i, j;

	/* The magnitude order of finite floats is the order of their bits
	 * without the sign; an integer max vectorizes, fabsf max does not.
	 * Without the sign bit the bits are a non-negative int32: a signed
	 * max, which the base x86-64 ISA does more cheaply than an unsigned.
	 * Sixteen running maxima become several vector accumulators, so the
	 * loop is not one long dependency chain. */
	for (i = 0; i + 16 <= n; i += 16)
		for (j = 0; j < 16; j++) {
			memcpy(&b, &x[i + j], 4);
			b &= 0x7fffffff;
			m[j] = b > m[j] ? b : m[j];
		}
	for (; i < n; i++) {
		memcpy(&b, &x[i], 4);
		b &= 0x7fffffff;
		maxbits = b > maxbits ? b : maxbits;
	}
	for (j = 0; j < 16; j++)
		maxbits = m[j] > maxbits ? m[j] : maxbits;
	return (uint32_t)maxbits;
}

static void quant_portable(int32_t *restrict q, const float *restrict x,
			   int n, float scale)
{
	int i;

	for (i = 0; i < n; i++)
		q[i] = IRINTF(x[i] * scale);
}

static void dequant_portable(float *restrict x, const int32_t *restrict q,
			     int n, float scale)
{
	int i;

	for (i = 0; i < n; i++)
		x[i] = (float)q[i] * scale;
}

DEFINE_PATH(portable, , absmax_portable, quant_portable, dequant_portable)

#if QUANT_X86
/* ---- AVX2: 8 lanes; tails in scalar SSE, the same operations ---- */
#define AVX2 __attribute__((target("avx2")))

AVX2 static uint32_t absmax_avx2(const float *x, int n)
{
	const __m256i mask = _mm256_set1_epi32(0x7fffffff);
	__m256i m0 = _mm256_setzero_si256(), m1 = m0;
	__m128i h;
	uint32_t maxbits, b;
	int i = 0;

	/* two accumulators: the loads, not the max chain, set the pace */
	for (; i + 16 <= n; i += 16) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(x + i));
		__m256i c = _mm256_loadu_si256((const __m256i *)(x + i + 8));

		m0 = _mm256_max_epu32(m0, _mm256_and_si256(a, mask));
		m1 = _mm256_max_epu32(m1, _mm256_and_si256(c, mask));
	}
	for (; i + 8 <= n; i += 8) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(x + i));

		m0 = _mm256_max_epu32(m0, _mm256_and_si256(a, mask));
	}
	m0 = _mm256_max_epu32(m0, m1);
	h = _mm_max_epu32(_mm256_castsi256_si128(m0),
			  _mm256_extracti128_si256(m0, 1));
	h = _mm_max_epu32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
	h = _mm_max_epu32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1)));
	maxbits = (uint32_t)_mm_cvtsi128_si32(h);
	for (; i < n; i++) {
		memcpy(&b, &x[i], 4);
		b &= 0x7fffffff;
		maxbits = b > maxbits ? b : maxbits;
	}
	return maxbits;
}

AVX2 static void quant_avx2(int32_t *restrict q, const float *restrict x,
			    int n, float scale)
{
	const __m256 s = _mm256_set1_ps(scale);
	int i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256 a = _mm256_mul_ps(_mm256_loadu_ps(x + i), s);
		__m256 c = _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), s);

		_mm256_storeu_si256((__m256i *)(q + i), _mm256_cvtps_epi32(a));
		_mm256_storeu_si256((__m256i *)(q + i + 8),
				    _mm256_cvtps_epi32(c));
	}
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_si256((__m256i *)(q + i),
				    _mm256_cvtps_epi32(_mm256_mul_ps(
					    _mm256_loadu_ps(x + i), s)));
	for (; i < n; i++)
		q[i] = _mm_cvtss_si32(_mm_set_ss(x[i] * scale));
}

AVX2 static void dequant_avx2(float *restrict x, const int32_t *restrict q,
			      int n, float scale)
{
	const __m256 s = _mm256_set1_ps(scale);
	int i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(q + i));
		__m256i c = _mm256_loadu_si256((const __m256i *)(q + i + 8));

		_mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_cvtepi32_ps(a), s));
		_mm256_storeu_ps(x + i + 8,
				 _mm256_mul_ps(_mm256_cvtepi32_ps(c), s));
	}
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_cvtepi32_ps(
				 _mm256_loadu_si256((const __m256i *)(q + i))), s));
	for (; i < n; i++)
		x[i] = (float)q[i] * scale;
}

DEFINE_PATH(avx2, AVX2, absmax_avx2, quant_avx2, dequant_avx2)

/* ---- AVX-512F: 16 lanes; the tail is one masked operation ---- */
#define AVX512 __attribute__((target("avx512f")))

static inline __mmask16 tail_mask(int left)
{
	return (__mmask16)((1u << left) - 1);
}

AVX512 static uint32_t absmax_avx512(const float *x, int n)
{
	const __m512i mask = _mm512_set1_epi32(0x7fffffff);
	__m512i m0 = _mm512_setzero_si512(), m1 = m0;
	int i = 0;

	for (; i + 32 <= n; i += 32) {
		m0 = _mm512_max_epu32(m0, _mm512_and_si512(
				_mm512_loadu_si512(x + i), mask));
		m1 = _mm512_max_epu32(m1, _mm512_and_si512(
				_mm512_loadu_si512(x + i + 16), mask));
	}
	for (; i + 16 <= n; i += 16)
		m0 = _mm512_max_epu32(m0, _mm512_and_si512(
				_mm512_loadu_si512(x + i), mask));
	if (i < n)
		m1 = _mm512_max_epu32(m1, _mm512_and_si512(
				_mm512_maskz_loadu_epi32(tail_mask(n - i), x + i),
				mask));
	return (uint32_t)_mm512_reduce_max_epu32(_mm512_max_epu32(m0, m1));
}

AVX512 static void quant_avx512(int32_t *restrict q, const float *restrict x,
				int n, float scale)
{
	const __m512 s = _mm512_set1_ps(scale);
	int i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_si512(q + i, _mm512_cvtps_epi32(_mm512_mul_ps(
				    _mm512_loadu_ps(x + i), s)));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);

		_mm512_mask_storeu_epi32(q + i, m, _mm512_cvtps_epi32(
				_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), s)));
	}
}

AVX512 static void dequant_avx512(float *restrict x, const int32_t *restrict q,
				  int n, float scale)
{
	const __m512 s = _mm512_set1_ps(scale);
	int i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_cvtepi32_ps(
				 _mm512_loadu_si512(q + i)), s));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);

		_mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(
				_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, q + i)),
				s));
	}
}

DEFINE_PATH(avx512, AVX512, absmax_avx512, quant_avx512, dequant_avx512)
#endif /* QUANT_X86 */

/* ---- dispatch ---- */

struct quant_path {
	const char *name;
	void (*quant)(struct rinx_slot *s, const float *x, size_t nvals,
		      int qbits, int bval);
	void (*dequant)(const struct rinx_slot *s, float *x, size_t nvals,
			int qbits, int bval);
};

static const struct quant_path paths[RINX_QUANT_NPATHS] = {
	[RINX_QUANT_PORTABLE] = { "portable", quant_range_portable,
				  dequant_range_portable },
#if QUANT_X86
	[RINX_QUANT_AVX2] = { "avx2", quant_range_avx2, dequant_range_avx2 },
	[RINX_QUANT_AVX512] = { "avx512", quant_range_avx512,
				dequant_range_avx512 },
#else
	[RINX_QUANT_AVX2] = { "avx2", NULL, NULL },
	[RINX_QUANT_AVX512] = { "avx512", NULL, NULL },
#endif
};

const char *rinx_quant_path_name(enum rinx_quant_path p)
{
	return (unsigned)p < RINX_QUANT_NPATHS ? paths[p].name : "?";
}

int rinx_quant_path_supported(enum rinx_quant_path p)
{
	if ((unsigned)p >= RINX_QUANT_NPATHS || !paths[p].quant)
		return 0;
#if QUANT_X86
	/* these also check that the OS saves the vector state */
	if (p == RINX_QUANT_AVX2)
		return __builtin_cpu_supports("avx2");
	if (p == RINX_QUANT_AVX512)
		return __builtin_cpu_supports("avx512f");
#endif
	return 1;
}

static const struct quant_path *cur;
static pthread_once_t cur_once = PTHREAD_ONCE_INIT;

static void path_init(void)
{
	const char *env = getenv("RINX_QUANT");
	int p, best = RINX_QUANT_PORTABLE;

#if QUANT_X86
	/* a conversion may run from a constructor that precedes libgcc's */
	__builtin_cpu_init();
#endif

	for (p = RINX_QUANT_NPATHS - 1; p > RINX_QUANT_PORTABLE; p--)
		if (rinx_quant_path_supported(p)) {
			best = p;
			break;
		}
	if (env && *env && strcmp(env, "auto")) {
		for (p = 0; p < RINX_QUANT_NPATHS; p++)
			if (!strcmp(env, paths[p].name))
				break;
		if (p == RINX_QUANT_NPATHS)
			pr_warn("RINX_QUANT=%s is not one of auto, portable, avx2, avx512: using %s\n",
				env, paths[best].name);
		else if (!rinx_quant_path_supported(p))
			pr_warn("RINX_QUANT=%s: this CPU cannot run it: using %s\n",
				env, paths[best].name);
		else
			best = p;
	}
	__atomic_store_n(&cur, &paths[best], __ATOMIC_RELEASE);
}

static const struct quant_path *path(void)
{
	const struct quant_path *q = __atomic_load_n(&cur, __ATOMIC_ACQUIRE);

	if (q)
		return q;
	pthread_once(&cur_once, path_init);
	return __atomic_load_n(&cur, __ATOMIC_ACQUIRE);
}

enum rinx_quant_path rinx_quant_get_path(void)
{
	return path() - paths;
}

int rinx_quant_set_path(enum rinx_quant_path p)
{
	if (!rinx_quant_path_supported(p))
		return -EOPNOTSUPP;
	path();	/* the environment is read once, before any override */
	__atomic_store_n(&cur, &paths[p], __ATOMIC_RELEASE);
	return 0;
}

/*
 * The conversion runs in the default floating-point environment: round to
 * nearest even, subnormals neither flushed nor read as zero (a trainer may
 * have turned those on for its own math). Restored afterwards. The kernels
 * are reached through a function pointer, an opaque call, so no floating
 * point operation can be moved across the switch.
 */
#if QUANT_X86
#define MXCSR_KEEP_OUT	(0x6000u /* RC */ | 0x8000u /* FTZ */ | 0x0040u /* DAZ */)

static inline unsigned int fpenv_enter(void)
{
	unsigned int csr = _mm_getcsr();

	if (csr & MXCSR_KEEP_OUT)
		_mm_setcsr(csr & ~MXCSR_KEEP_OUT);
	return csr;
}

static inline void fpenv_leave(unsigned int csr)
{
	if (csr & MXCSR_KEEP_OUT)
		_mm_setcsr(csr);
}
#else
static inline unsigned int fpenv_enter(void)
{
	int r = fegetround();

	if (r != FE_TONEAREST)
		fesetround(FE_TONEAREST);
	return (unsigned int)r;
}

static inline void fpenv_leave(unsigned int r)
{
	if ((int)r != FE_TONEAREST)
		fesetround((int)r);
}
#endif

static int bval_ok(int bval)
{
	return bval == RINX_BLOCK_VALUES_MIN ? bval : RINX_BLOCK_VALUES;
}

void rinx_quant_blocks_n(struct rinx_slot *s, const float *x, size_t nvals,
			 int qbits, int bval)
{
	const struct quant_path *p = path();
	unsigned int env = fpenv_enter();

	p->quant(s, x, nvals, qbits, bval_ok(bval));
	fpenv_leave(env);
}

void rinx_dequant_blocks_n(const struct rinx_slot *s, float *x, size_t nvals,
			   int qbits, int bval)
{
	const struct quant_path *p = path();
	unsigned int env = fpenv_enter();

	p->dequant(s, x, nvals, qbits, bval_ok(bval));
	fpenv_leave(env);
}

void rinx_quant_blocks(struct rinx_slot *s, const float *x, size_t nvals,
		       int qbits)
{
	rinx_quant_blocks_n(s, x, nvals, qbits, RINX_BLOCK_VALUES);
}

void rinx_dequant_blocks(const struct rinx_slot *s, float *x, size_t nvals,
			 int qbits)
{
	rinx_dequant_blocks_n(s, x, nvals, qbits, RINX_BLOCK_VALUES);
}

void rinx_quant_block_n(struct rinx_slot *s, const float *x, int count,
			int qbits, int bval)
{
	if (count > 0) {
		rinx_quant_blocks_n(s, x, count, qbits, bval);
		return;
	}
	/* an empty block: a zero slot, as the range functions never see it */
	memset(s->v, 0, bval_ok(bval) * sizeof(s->v[0]));
	s->exp = RINX_EXP_ZERO;
	s->flags = 0;
	s->count = 0;
	s->resv = 0;
	s->step = 0;
	s->sent_us = 0;
}

/* A jumbo block as the conversion kernels take it: one header, its values
 * in one piece (the slot's and those after it). */
struct jumbo_block {
	struct rinx_slot s;
	int32_t more[RINX_BLOCK_VALUES_JUMBO - RINX_BLOCK_VALUES];
};
_Static_assert(offsetof(struct jumbo_block, more) ==
	       offsetof(struct rinx_slot, v) + RINX_BLOCK_BYTES,
	       "a jumbo block's values are contiguous");

/* The values of a jumbo block at k * RINX_BLOCK_VALUES in slot k. */
static int jumbo_part(int k)
{
	int left = RINX_BLOCK_VALUES_JUMBO - k * RINX_BLOCK_VALUES;

	return left < RINX_BLOCK_VALUES ? left : RINX_BLOCK_VALUES;
}

void rinx_quant_jumbo(struct rinx_slot *s, const float *x, int count,
		      int qbits)
{
	struct jumbo_block j;
	unsigned int env;
	int k;

	if (count > 0) {
		env = fpenv_enter();
		path()->quant(&j.s, x, count, qbits, RINX_BLOCK_VALUES_JUMBO);
		fpenv_leave(env);
	} else {
		memset(&j, 0, sizeof(j));
		j.s.exp = RINX_EXP_ZERO;
	}
	/* the header of the first slot speaks for the block; round stays */
	s->exp = j.s.exp;
	s->flags = j.s.flags;
	s->resv = 0;
	s->count = j.s.count;
	s->step = 0;
	s->sent_us = 0;
	for (k = 0; k < RINX_JUMBO_SLOTS; k++)
		memcpy(s[k].v, j.s.v + k * RINX_BLOCK_VALUES,
		       (size_t)jumbo_part(k) * 4);
}

void rinx_dequant_jumbo(const struct rinx_slot *s, float *x, int count,
			int qbits)
{
	struct jumbo_block j;
	unsigned int env;
	int k;

	if (count <= 0)
		return;
	memcpy(&j.s, s, offsetof(struct rinx_slot, v));
	for (k = 0; k < RINX_JUMBO_SLOTS; k++)
		memcpy(j.s.v + k * RINX_BLOCK_VALUES, s[k].v,
		       (size_t)jumbo_part(k) * 4);
	env = fpenv_enter();
	path()->dequant(&j.s, x, count, qbits, RINX_BLOCK_VALUES_JUMBO);
	fpenv_leave(env);
}

void rinx_quant_block(struct rinx_slot *s, const float *x, int count,
		      int qbits)
{
	rinx_quant_block_n(s, x, count, qbits, RINX_BLOCK_VALUES);
}

void rinx_dequant_block(const struct rinx_slot *s, float *x, int count,
			int qbits)
{
	if (count > 0)
		rinx_dequant_blocks(s, x, count, qbits);
}

/* x / 2^d to nearest, ties up, as the XDP programs do it (rinx_block_add,
 * bpf/fixed.bpf.h), the same steps so that the rule cannot drift:
 * floor((x + 2^(d-1)) / 2^d) = ceil(a / 2) = a - floor(a / 2) with
 * a = floor(x / 2^(d-1)), in 32 bits and exact for every int32. */
static inline int32_t rshift_round(int32_t x, uint32_t d)
{
	int32_t a;

	if (d == 0)
		return x;
	if (d > 31)
		return 0;
	a = x >> (d - 1);
	return a - (a >> 1);
}

int16_t rinx_payload_add(int32_t *dst, int16_t dst_exp, const int32_t *src,
			 int16_t src_exp)
{
	return rinx_payload_add_n(dst, dst_exp, src, src_exp,
				  RINX_BLOCK_VALUES);
}

int16_t rinx_payload_add_n(int32_t *dst, int16_t dst_exp,
			   const int32_t *src, int16_t src_exp, int n)
{
	int32_t e = dst_exp > src_exp ? dst_exp : src_exp;
	uint32_t dd = e - dst_exp, ds = e - src_exp;
	int i;

	for (i = 0; i < n; i++)
		dst[i] = (int32_t)((uint32_t)rshift_round(dst[i], dd) +
				   (uint32_t)rshift_round(src[i], ds));
	return e;
}

void rinx_block_add_user(struct rinx_slot *dst, const struct rinx_slot *src)
{
	dst->exp = rinx_payload_add(dst->v, dst->exp, src->v, src->exp);
	dst->flags |= src->flags;
}
