// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * `rinxctl bench --convert`: float32 <-> block fixed point conversion alone,
 * on one thread, against memcpy of the same bytes (the memory's speed, taken
 * in the same run). Every path this CPU runs (portable, AVX2, AVX-512) is
 * timed in thread CPU time over a whole tensor of each size; its slots must
 * equal the portable path's bit for bit, and the floats it gives back must
 * lie within one rank's rounding bound of the input (rinx_f32_bound(1,
 * amax of the block)).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tools/bench.h"
#include "tools/gen.h"
#include "user/librinx.h"
#include "user/quant/quant.h"

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Elements of x whose round trip y is off by more than the bound. */
static size_t off_bound(const float *x, const float *y, size_t n)
{
	size_t b, i, bad = 0;

	for (b = 0; b < n; b += RINX_BLOCK_VALUES) {
		size_t end = b + RINX_BLOCK_VALUES < n ? b + RINX_BLOCK_VALUES : n;
		double amax = 0, lim;

		for (i = b; i < end; i++)
			amax = fabs(x[i]) > amax ? fabs(x[i]) : amax;
		lim = rinx_f32_bound(1, amax);
		for (i = b; i < end; i++)
			bad += !(fabs((double)y[i] - x[i]) <= lim);
	}
	return bad;
}

struct conv_row {
	const char *path;
	double q, d, m;		/* ns per element: quant, dequant, memcpy */
	int ok;
};

static int one_size(const struct bench_opts *o, uint64_t bytes, FILE *out,
		    int first)
{
	size_t n = bytes / 4, nb = (n + RINX_BLOCK_VALUES - 1) /
				   RINX_BLOCK_VALUES, i;
	int qbits = rinx_qbits(1), p, k, nrows = 0, ret = 0;
	enum rinx_quant_path keep = rinx_quant_get_path();
	struct rinx_slot *s = NULL, *ref = NULL;
	struct conv_row rows[RINX_QUANT_NPATHS];
	double *tq = NULL, *td = NULL, *tm = NULL;
	float *x = NULL, *y = NULL, *z = NULL;
	uint64_t seed = gen_run_seed(o->seed, 0, n);

	x = malloc(n * 4);
	y = malloc(n * 4);
	z = malloc(n * 4);
	s = calloc(nb, sizeof(*s));
	ref = calloc(nb, sizeof(*ref));
	tq = calloc(o->iters, sizeof(double));
	td = calloc(o->iters, sizeof(double));
	tm = calloc(o->iters, sizeof(double));
	if (!x || !y || !z || !s || !ref || !tq || !td || !tm) {
		ret = -ENOMEM;
		goto out;
	}
	gen_fill(o->data, seed, 0, 0, n, x);	/* rank 0's input */
	memset(y, 0, n * 4);
	memset(z, 0, n * 4);
	/* the portable path's slots: what every other path must write */
	rinx_quant_set_path(RINX_QUANT_PORTABLE);
	rinx_quant_blocks_n(ref, x, n, qbits, RINX_BLOCK_VALUES);
	for (p = 0; p < RINX_QUANT_NPATHS; p++) {
		struct conv_row *r = &rows[nrows];

		if (!rinx_quant_path_supported(p))
			continue;
		rinx_quant_set_path(p);
		for (k = -o->warmup; k < o->iters; k++) {
			double t0, t1, t2, t3;

			t0 = cpu_ns();
			rinx_quant_blocks_n(s, x, n, qbits, RINX_BLOCK_VALUES);
			t1 = cpu_ns();
			rinx_dequant_blocks_n(s, y, n, qbits, RINX_BLOCK_VALUES);
			t2 = cpu_ns();
			memcpy(z, x, n * 4);
			t3 = cpu_ns();
			if (k < 0)
				continue;
			tq[k] = (t1 - t0) / n;
			td[k] = (t2 - t1) / n;
			tm[k] = (t3 - t2) / n;
		}
		r->path = rinx_quant_path_name(p);
		r->q = median(tq, o->iters);
		r->d = median(td, o->iters);
		r->m = median(tm, o->iters);
		/* the slots' values, exponents and counts (not the round and
		 * stamps, which conversion leaves alone) */
		r->ok = !off_bound(x, y, n);
		for (i = 0; i < nb && r->ok; i++)
			r->ok = s[i].exp == ref[i].exp &&
				s[i].count == ref[i].count &&
				!memcmp(s[i].v, ref[i].v, sizeof(s[i].v));
		if (!r->ok)
			ret = -EDOM;
		nrows++;
	}
	if (o->json) {
		for (k = 0; k < nrows; k++)
			fprintf(out, "%s{\"bytes\":%llu,\"path\":\"%s\","
				"\"quant_ns_per_elem\":%.4f,"
				"\"dequant_ns_per_elem\":%.4f,"
				"\"memcpy_ns_per_elem\":%.4f,"
				"\"verified\":%s}", first && !k ? "" : ",",
				(unsigned long long)bytes, rows[k].path,
				rows[k].q, rows[k].d, rows[k].m,
				rows[k].ok ? "true" : "false");
	} else {
		for (k = 0; k < nrows; k++)
			fprintf(out, "%13llu %12zu %-9s %9.3f %9.3f %9.3f %9.3f "
				"%8.2fx %s\n", (unsigned long long)bytes, n,
				rows[k].path, rows[k].q, rows[k].d,
				rows[k].q + rows[k].d, rows[k].m,
				rows[k].m > 0 ? (rows[k].q + rows[k].d) /
						 (2 * rows[k].m) : 0,
				rows[k].ok ? "ok" : "WRONG");
	}
out:
	rinx_quant_set_path(keep);
	free(x);
	free(y);
	free(z);
	free(s);
	free(ref);
	free(tq);
	free(td);
	free(tm);
	return ret;
}

int bench_convert(const struct bench_opts *o, FILE *out)
{
	int k, ret = 0, err;

	if (o->json)
		fprintf(out, "{\"data\":\"%s\",\"convert\":[",
			gen_data_name(o->data));
	else
		fprintf(out, "# rinx conversion alone: float32 <-> block fixed "
			"point, data %s (rank 0's input; %s), one thread, "
			"median of %d after %d warm-up, ns per "
			"element of thread CPU time; memcpy = the same floats "
			"copied (4 B read + 4 B written per element, as each "
			"direction of the conversion); x memcpy = (quant + "
			"dequant) / (2 memcpy)\n"
			"#        bytes     elements path          quant   dequant"
			"     total    memcpy  x memcpy verify\n",
			gen_data_name(o->data), gen_data_about[o->data],
			o->iters, o->warmup);
	for (k = 0; k < o->nsizes; k++) {
		if (o->sizes[k] < 4) {
			fprintf(stderr, "rinxctl bench: --convert needs sizes "
				"of at least 4 bytes\n");
			return -EINVAL;
		}
		err = one_size(o, o->sizes[k], out, k == 0);
		if (err && (!ret || err != -EDOM))
			ret = err;
		if (err && err != -EDOM)
			break;
	}
	if (o->json)
		fprintf(out, "]}\n");
	return ret;
}
