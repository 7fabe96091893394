// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of the benchmark's input generator (tools/gen.h), the data of
 * `rinxctl bench --data`, `compare` and the peers. Needs no root.
 *
 *   grad   the same distribution on every rank: in every block of
 *          GEN_SCALE_VALUES values each rank's RMS is within 10% of rank 0's
 *          and its largest magnitude at most one octave from rank 0's; scales
 *          spread between blocks: over 1,024 blocks the RMS spans more than
 *          2^14 and every one of the 16 octaves holds blocks (log-uniform);
 *          normal-ish: mean ~0, about 68% within one RMS, nothing beyond
 *          2*sqrt(3) RMS; every rank draws its own values (rank 0 and 1 nearly
 *          uncorrelated, almost never equal); another run seed, other scales;
 *   worst  bit for bit the generator of every benchmark before --data,
 *          computed here on its own (ldexp), and its per-rank spread: in
 *          every block rank r's largest exponent is ((block + r) mod 16) - 8,
 *          so 4 ranks span at least 3 octaves;
 *   ints   bit for bit the old int32 generator;
 *   all    gen_fill over ranges that cross blocks equals element by element;
 *          names parse both ways, a bad name is refused;
 *   numpy  tools/peers/gloo_bench.py's gen() gives the same bits for all
 *          three kinds (skipped when Debian's python3 cannot import numpy
 *          and torch).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tools/gen.h"
#include "selftests/lib/testlib.h"

#define SEED		0x1234abcdull
#define NRANKS		8
#define NBLOCKS		1024	/* grad blocks for the spread checks */

/* The generator of every benchmark before --data, written out again:
 * uniform in (-2^e, 2^e), e = ((i / 768 + r) mod 16) - 8. */
static float old_f32(uint64_t seed, int r, uint64_t i)
{
	uint64_t h = gen_mix64(seed ^ (r * 0x9e3779b97f4a7c15ull) ^ (i << 8));
	int e = (int)((i / 768 + r) % 16) - 8;

	return (float)ldexp((double)(h >> 11) * 0x1.0p-53 * 2.0 - 1.0, e);
}

static int32_t old_i32(uint64_t seed, int r, uint64_t i)
{
	return (int32_t)(uint32_t)gen_mix64(seed ^ (r * 0x9e3779b97f4a7c15ull) ^
					    (i << 8) ^ 0x5555);
}

static int frexp_of(double v)
{
	int e;

	frexp(v, &e);
	return e;
}

static void test_names(void)
{
	int d, ok = 1;

	for (d = 0; d < GEN_NDATA; d++)
		ok &= gen_data_parse(gen_data_name(d)) == d &&
		      strlen(gen_data_about[d]) > 10;
	tap_ok(ok, "every data name parses back to its kind and has a text");
	tap_ok(gen_data_parse("gradient") == -EINVAL &&
	       gen_data_parse("") == -EINVAL && !strcmp(gen_data_name(7), "?"),
	       "a bad name is refused");
}

static void test_worst_ints(void)
{
	uint64_t i, nbad = 0, nibad = 0, blocks = 64, b;
	int r, minspread = 99;

	for (r = 0; r < NRANKS; r++)
		for (i = 0; i < blocks * GEN_BLOCK_VALUES; i++) {
			float a = gen_f32_of(GEN_WORST, SEED, r, i);
			float o = old_f32(SEED, r, i);

			nbad += memcmp(&a, &o, sizeof(a)) != 0;
			nibad += gen_i32(SEED, r, i) != old_i32(SEED, r, i);
		}
	tap_ok(!nbad, "worst: bit for bit the old float32 generator "
	       "(%llu of %llu differ)", (unsigned long long)nbad,
	       (unsigned long long)(NRANKS * blocks * GEN_BLOCK_VALUES));
	tap_ok(!nibad, "ints: bit for bit the old int32 generator (%llu differ)",
	       (unsigned long long)nibad);

	/* the spread: every rank's largest exponent in every block */
	nbad = 0;
	for (b = 0; b < blocks; b++) {
		int emin = INT_MAX, emax = INT_MIN;

		for (r = 0; r < 4; r++) {
			double m = 0;
			int e;

			for (i = b * GEN_BLOCK_VALUES;
			     i < (b + 1) * GEN_BLOCK_VALUES; i++)
				m = fmax(m, fabs(gen_f32_of(GEN_WORST, SEED,
							     r, i)));
			e = frexp_of(m);
			nbad += e != (int)((b + r) % 16) - 8;
			emin = e < emin ? e : emin;
			emax = e > emax ? e : emax;
		}
		minspread = emax - emin < minspread ? emax - emin : minspread;
	}
	tap_ok(!nbad && minspread >= 3, "worst: rank r's exponent in block b "
	       "is (b + r) mod 16 - 8 (%llu blocks off), 4 ranks span >= 3 "
	       "octaves in every block (least %d)", (unsigned long long)nbad,
	       minspread);
}

struct blk {
	double rms, mean, amax;
};

static void block_stats(uint64_t seed, int r, uint64_t b, struct blk *s,
			int *in1)
{
	double sum = 0, sq = 0;
	uint64_t i;

	s->amax = 0;
	for (i = b * GEN_SCALE_VALUES; i < (b + 1) * GEN_SCALE_VALUES; i++) {
		double v = gen_f32_of(GEN_GRAD, seed, r, i);

		sum += v;
		sq += v * v;
		s->amax = fmax(s->amax, fabs(v));
	}
	s->mean = sum / GEN_SCALE_VALUES;
	s->rms = sqrt(sq / GEN_SCALE_VALUES);
	if (in1)
		for (i = b * GEN_SCALE_VALUES; i < (b + 1) * GEN_SCALE_VALUES;
		     i++)
			*in1 += fabs(gen_f32_of(GEN_GRAD, seed, r, i)) <= s->rms;
}

static void test_grad(void)
{
	static struct blk st[NRANKS];
	double rmin = INFINITY, rmax = 0, worst_ratio = 0, worst_mean = 0;
	double worst_tail = 0;
	int oct[GEN_SCALE_OCTAVES] = { 0 }, badrank = 0, badexp = 0, r, k;
	int in1 = 0, minoct = INT_MAX, same_scale = 0;
	uint64_t b, i, eq = 0;
	double c01 = 0, q0 = 0, q1 = 0;

	for (b = 0; b < NBLOCKS; b++) {
		int e0;

		for (r = 0; r < NRANKS; r++)
			block_stats(SEED, r, b, &st[r], r == 0 ? &in1 : NULL);
		e0 = frexp_of(st[0].amax);
		for (r = 0; r < NRANKS; r++) {
			double q = st[r].rms / st[0].rms;

			worst_ratio = fmax(worst_ratio, fabs(q - 1));
			badrank += fabs(q - 1) > 0.1;
			badexp += abs(frexp_of(st[r].amax) - e0) > 1;
			worst_mean = fmax(worst_mean,
					  fabs(st[r].mean) / st[r].rms);
			worst_tail = fmax(worst_tail, st[r].amax / st[r].rms);
		}
		rmin = fmin(rmin, st[0].rms);
		rmax = fmax(rmax, st[0].rms);
		k = (int)floor(log2(st[0].rms)) - GEN_SCALE_MIN_LOG2;
		k = k < 0 ? 0 : k >= GEN_SCALE_OCTAVES ? GEN_SCALE_OCTAVES - 1 :
		    k;
		oct[k]++;
		/* another run seed draws other scales */
		same_scale += gen_scale(SEED, b * GEN_SCALE_VALUES) ==
			      gen_scale(SEED + 1, b * GEN_SCALE_VALUES);
	}
	for (k = 0; k < GEN_SCALE_OCTAVES; k++)
		minoct = oct[k] < minoct ? oct[k] : minoct;
	tap_ok(!badrank, "grad: every rank's RMS within 10%% of rank 0's in "
	       "every block (%d of %d off, worst %.3f)", badrank,
	       NBLOCKS * NRANKS, worst_ratio);
	tap_ok(!badexp, "grad: every rank's largest exponent within one "
	       "octave of rank 0's in every block (%d off)", badexp);
	tap_ok(rmax / rmin > 0x1.0p14 && minoct >= 16,
	       "grad: scales spread between blocks: RMS max/min 2^%.1f, every "
	       "octave of 2^-20..2^-4 holds >= 16 of %d blocks (least %d)",
	       log2(rmax / rmin), NBLOCKS, minoct);
	tap_ok(same_scale < NBLOCKS / 16, "grad: another run seed, other "
	       "scales (%d of %d blocks alike)", same_scale, NBLOCKS);
	tap_ok(worst_mean < 0.1 && worst_tail <= 2 * sqrt(3) * 1.1 &&
	       worst_tail > 2.5 &&
	       in1 > 0.62 * NBLOCKS * GEN_SCALE_VALUES &&
	       in1 < 0.74 * NBLOCKS * GEN_SCALE_VALUES,
	       "grad: normal-ish around 0: |mean| <= %.3f RMS, largest %.2f "
	       "RMS, %.1f%% within one RMS", worst_mean, worst_tail,
	       100.0 * in1 / (NBLOCKS * GEN_SCALE_VALUES));

	/* ranks draw their own values: correlation of rank 0 and 1 over
	 * 64 blocks, each value divided by its block's scale */
	for (i = 0; i < 64 * GEN_SCALE_VALUES; i++) {
		double sc = gen_scale(SEED, i);
		double x = gen_f32_of(GEN_GRAD, SEED, 0, i) / sc;
		double y = gen_f32_of(GEN_GRAD, SEED, 1, i) / sc;

		c01 += x * y;
		q0 += x * x;
		q1 += y * y;
		eq += x == y;
	}
	c01 /= sqrt(q0 * q1);
	tap_ok(fabs(c01) < 0.02 && eq < 64 * GEN_SCALE_VALUES / 1000,
	       "grad: ranks draw their own values (correlation %.4f, %llu "
	       "equal)", c01, (unsigned long long)eq);
}

static void test_fill(void)
{
	static float buf[3 * GEN_SCALE_VALUES];
	const uint64_t start = GEN_SCALE_VALUES - 5, cnt = 2 * GEN_SCALE_VALUES + 13;
	int d, r, bad = 0;
	uint64_t i;

	for (d = 0; d < GEN_NDATA; d++)
		for (r = 0; r < 3; r++) {
			gen_fill(d, SEED, r, start, cnt, buf);
			for (i = 0; i < cnt; i++) {
				uint32_t a, w;

				memcpy(&a, &buf[i], 4);
				if (d == GEN_INTS) {
					w = (uint32_t)gen_i32(SEED, r,
							      start + i);
				} else {
					float f = gen_f32_of(d, SEED, r,
							     start + i);

					memcpy(&w, &f, 4);
				}
				bad += a != w;
			}
		}
	tap_ok(!bad, "gen_fill over blocks equals element by element, every "
	       "kind (%d differ)", bad);
}

/* The source tree: $RINX_SRC, else two levels above this program
 * (<tree>/build/selftests/test_gen), else the current directory. */
static int find_gloo(char *path, size_t len)
{
	char exe[PATH_MAX];
	const char *env = getenv("RINX_SRC");
	ssize_t n;
	char *p;
	int up;

	if (env) {
		snprintf(path, len, "%s/tools/peers/gloo_bench.py", env);
		return access(path, R_OK);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		for (up = 0; up < 3 && (p = strrchr(exe, '/')); up++)
			*p = 0;
		snprintf(path, len, "%s/tools/peers/gloo_bench.py", exe);
		if (!access(path, R_OK))
			return 0;
	}
	snprintf(path, len, "tools/peers/gloo_bench.py");
	return access(path, R_OK);
}

static void test_numpy(void)
{
	static const uint64_t seeds[] = { SEED, 0xfedcba9876543210ull };
	static float buf[20000], want[20000];
	const uint64_t start = 5000, cnt = 20000;
	char path[PATH_MAX], cmd[PATH_MAX + 600], *dir;
	int d, r, s, bad = 0, runs = 0;
	FILE *f;

	if (find_gloo(path, sizeof(path)) ||
	    system("/usr/bin/python3 -c 'import numpy, torch' >/dev/null 2>&1")) {
		tap_skip("no gloo_bench.py or Debian's python3 cannot import "
			 "numpy and torch", "numpy copy");
		return;
	}
	dir = strdup(path);
	*strrchr(dir, '/') = 0;
	/* one interpreter (importing torch takes seconds), the cases in the
	 * order of the loops below */
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c '"
		 "import sys; sys.path.insert(0, \"%s\")\n"
		 "import gloo_bench as g\n"
		 "for s in (%llu, %llu):\n"
		 " for d in (\"%s\", \"%s\", \"%s\"):\n"
		 "  for r in (0, 2):\n"
		 "   sys.stdout.buffer.write(g.gen(d, s, r, %llu, %llu).tobytes())'",
		 dir, (unsigned long long)seeds[0], (unsigned long long)seeds[1],
		 gen_data_name(0), gen_data_name(1), gen_data_name(2),
		 (unsigned long long)start, (unsigned long long)cnt);
	free(dir);
	f = popen(cmd, "r");
	for (s = 0; s < 2 && f; s++)
		for (d = 0; d < GEN_NDATA; d++)
			for (r = 0; r < 3; r += 2) {
				if (fread(buf, 4, cnt, f) != cnt) {
					bad++;
					continue;
				}
				runs++;
				gen_fill(d, seeds[s], r, start, cnt, want);
				bad += memcmp(buf, want, cnt * 4) != 0;
			}
	if (f)
		pclose(f);
	tap_ok(!bad && runs == 2 * GEN_NDATA * 2, "gloo_bench.py's numpy "
	       "generator: the same bits for every kind, 2 seeds, 2 ranks (%d "
	       "of %d cases differ or missing)", bad, 2 * GEN_NDATA * 2);
}

int main(void)
{
	tap_plan(13);
	test_names();
	test_worst_ints();
	test_grad();
	test_fill();
	test_numpy();
	return tap_done();
}
