// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mpi_bench: MPI_Allreduce(SUM) size sweep, the peer of `rinxctl bench`.
 * Built with mpicc by `make peers` (not part of `make`), run by
 * `rinxctl peer mpi` under mpirun, one rank per testbed host.
 *
 * For every size (bytes per rank): warm-up runs, then timed runs, each one
 * preceded by MPI_Barrier. The time of a run is the largest elapsed time of
 * any rank (MPI_Reduce MAX); the median, min and max of the timed runs are
 * reported. Inputs come from the same generator as rinxctl bench
 * (tools/gen.h, deterministic in data, seed, run, rank and element; --data
 * as rinxctl bench's); after every run each rank
 * checks every element of its result against a reference it computes on its
 * own: int32 exact (wrapping sum), float32 within gamma_(n-1) * sum |x_r|,
 * the worst case of any summation order, doubled.
 *
 * Rank 0 prints one JSON object per line on stdout: a header
 *   {"ranks":N,"dtype":"float32","data":"grad","runs":R,"warmup":W,
 *    "verify":true}
 * then one line per size with the fields of `rinxctl bench --json`, plus
 * "wrong" (elements outside the bound, summed over ranks and runs) and
 * "worst" (largest |error| / bound seen).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <mpi.h>
#include "tools/gen.h"

#define MAX_SIZES	32
#define MAX_ITERS	1000

enum { DT_F32, DT_I32 };

struct opts {
	uint64_t sizes[MAX_SIZES];
	int nsizes;
	int iters, warmup, dtype, verify;
	int data;		/* enum gen_data; -1: by dtype */
	uint64_t seed;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t run_seed(const struct opts *o, int iter, uint64_t count)
{
	return gen_run_seed(o->seed, iter, count);
}

static void fill(const struct opts *o, uint64_t seed, int rank, void *buf,
		 uint64_t count)
{
	gen_fill(o->data, seed, rank, 0, count, buf);
}

/* Elements of out that are wrong; *worst gets max |error| / bound. */
static long check(const struct opts *o, uint64_t seed, int n, int rank,
		  const void *out, uint64_t count, double *worst)
{
	/* unit roundoff of float32 */
	const double u = 0x1.0p-24;
	double gamma = (n - 1) * u / (1 - (n - 1) * u);
	long wrong = 0;
	uint64_t i;
	int r;

	*worst = 0;
	if (o->dtype == DT_I32) {
		const int32_t *res = out;

		for (i = 0; i < count; i++) {
			uint32_t s = 0;

			for (r = 0; r < n; r++)
				s += (uint32_t)gen_i32(seed, r, i);
			if ((uint32_t)res[i] != s) {
				if (!wrong++)
					fprintf(stderr, "mpi_bench: rank %d: "
						"element %llu: got %d, want %d\n",
						rank, (unsigned long long)i,
						res[i], (int32_t)s);
			}
		}
		return wrong;
	}
	for (i = 0; i < count; i++) {
		double s = 0, a = 0, bound, err;
		float got = ((const float *)out)[i];

		for (r = 0; r < n; r++) {
			double v = gen_f32_of(o->data, seed, r, i);

			s += v;
			a += fabs(v);
		}
		/* doubled, plus the smallest normal for subnormal sums */
		bound = 2 * gamma * a + 0x1.0p-126;
		err = fabs((double)got - s);
		if (err / bound > *worst)
			*worst = err / bound;
		if (!(err <= bound)) {
			if (!wrong++)
				fprintf(stderr, "mpi_bench: rank %d: element "
					"%llu: got %.9g, want %.9g (bound "
					"%.3g)\n", rank, (unsigned long long)i,
					got, s, bound);
		}
	}
	return wrong;
}

static int parse_sizes(const char *list, struct opts *o)
{
	int n = gen_parse_sizes(list, o->sizes, MAX_SIZES), i;

	/* MPI counts are int; a size of 0 has nothing to reduce */
	for (i = 0; i < n; i++)
		if (!o->sizes[i] || o->sizes[i] / 4 > 0x7fffffff)
			return -EINVAL;
	if (n < 0)
		return n;
	o->nsizes = n;
	return 0;
}

static const char usage[] =
"usage: mpi_bench [--sizes LIST] [--iters N] [--warmup N]\n"
"                 [--dtype float32|int32] [--data grad|worst|ints]\n"
"                 [--seed S] [--no-verify]\n";

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "sizes", required_argument, NULL, 'S' },
		{ "iters", required_argument, NULL, 'i' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "data", required_argument, NULL, 'D' },
		{ "seed", required_argument, NULL, 's' },
		{ "no-verify", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->iters = 5;
	o->warmup = 1;
	o->verify = 1;
	o->seed = 12345;
	o->data = -1;
	parse_sizes("1M,16M,64M", o);
	while ((c = getopt_long(argc, argv, "S:i:w:d:D:s:n", lopts, NULL)) != -1) {
		switch (c) {
		case 'S':
			if (parse_sizes(optarg, o))
				return -1;
			break;
		case 'i': o->iters = atoi(optarg); break;
		case 'w': o->warmup = atoi(optarg); break;
		case 'd':
			if (!strcmp(optarg, "float32"))
				o->dtype = DT_F32;
			else if (!strcmp(optarg, "int32"))
				o->dtype = DT_I32;
			else
				return -1;
			break;
		case 'D':
			o->data = gen_data_parse(optarg);
			if (o->data < 0)
				return -1;
			break;
		case 's': o->seed = strtoull(optarg, NULL, 0); break;
		case 'n': o->verify = 0; break;
		default:
			return -1;
		}
	}
	if (o->data < 0)
		o->data = o->dtype == DT_I32 ? GEN_INTS : GEN_GRAD;
	if (optind != argc || o->iters < 1 || o->iters > MAX_ITERS ||
	    o->warmup < 0 || (o->data == GEN_INTS) != (o->dtype == DT_I32))
		return -1;
	return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static double times[MAX_ITERS];
	struct opts o;
	uint64_t maxcount = 0;
	void *send, *recv;
	int rank, n, k, i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (parse_args(argc, argv, &o)) {
		if (!rank)
			fputs(usage, stderr);
		MPI_Finalize();
		return 2;
	}
	for (k = 0; k < o.nsizes; k++)
		if (o.sizes[k] / 4 > maxcount)
			maxcount = o.sizes[k] / 4;
	send = malloc(maxcount * 4);
	recv = malloc(maxcount * 4);
	if (!send || !recv) {
		fprintf(stderr, "mpi_bench: rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (!rank) {
		printf("{\"ranks\":%d,\"dtype\":\"%s\",\"data\":\"%s\","
		       "\"runs\":%d,\"warmup\":%d,\"verify\":%s}\n", n,
		       o.dtype == DT_I32 ? "int32" : "float32",
		       gen_data_name(o.data), o.iters,
		       o.warmup, o.verify ? "true" : "false");
		fflush(stdout);
	}
	for (k = 0; k < o.nsizes; k++) {
		uint64_t count = o.sizes[k] / 4;
		MPI_Datatype dt = o.dtype == DT_I32 ? MPI_INT32_T : MPI_FLOAT;
		long wrong = 0, wrong_all = 0;
		double worst = 0, worst_all = 0, med;

		for (i = -o.warmup; i < o.iters; i++) {
			uint64_t seed = run_seed(&o, i, count);
			double t, tmax, w;
			long bad;

			fill(&o, seed, rank, send, count);
			memset(recv, 0xa5, count * 4);
			MPI_Barrier(MPI_COMM_WORLD);
			t = now_s();
			MPI_Allreduce(send, recv, (int)count, dt, MPI_SUM,
				      MPI_COMM_WORLD);
			t = now_s() - t;
			MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0,
				   MPI_COMM_WORLD);
			if (o.verify) {
				bad = check(&o, seed, n, rank, recv, count, &w);
				wrong += bad;
				if (w > worst)
					worst = w;
			}
			if (i >= 0)
				times[i] = tmax;
		}
		MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0,
			   MPI_COMM_WORLD);
		MPI_Reduce(&worst, &worst_all, 1, MPI_DOUBLE, MPI_MAX, 0,
			   MPI_COMM_WORLD);
		if (rank)
			continue;
		qsort(times, o.iters, sizeof(times[0]), cmp_dbl);
		med = times[o.iters / 2];
		printf("{\"bytes\":%llu,\"elements\":%llu,\"min_us\":%.1f,"
		       "\"median_us\":%.1f,\"max_us\":%.1f,\"algbw_gbs\":%.4f,"
		       "\"busbw_gbs\":%.4f,\"elements_per_s\":%.0f,"
		       "\"verified\":%s,\"wrong\":%ld,\"worst\":%.4f}\n",
		       (unsigned long long)o.sizes[k],
		       (unsigned long long)count, times[0] * 1e6, med * 1e6,
		       times[o.iters - 1] * 1e6, o.sizes[k] / med / 1e9,
		       o.sizes[k] / med / 1e9 * 2.0 * (n - 1) / n,
		       count / med, !o.verify ? "null" :
		       wrong_all ? "false" : "true", wrong_all, worst_all);
		fflush(stdout);
	}
	free(send);
	free(recv);
	MPI_Finalize();
	return 0;
}
