// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * allreduce_check: a plain MPI program (no rinx header, nothing of rinx
 * linked) that exercises the allreduce calls an interposer may take, and
 * checks every element of every result against a reference each rank
 * computes on its own from the inputs of all ranks (a deterministic
 * generator of seed, rank and element). Built by `make mpi`, run under
 * mpirun by selftests/test_mpi.sh and tools/mpi-bench.sh, with and without
 * LD_PRELOAD=librinx-mpi.so: the same checks must pass both ways.
 *
 *   allreduce_check               the cases below; rank 0 prints
 *                                 "check<TAB>name<TAB>1|0" per case
 *   allreduce_check --mismatch    rank n-1 reduces 1000 more elements than
 *                                 the others, with MPI_ERRORS_RETURN;
 *                                 every rank prints its return code and time
 *   allreduce_check --bench SIZES [--iters N] [--warmup N] [--dtype float|int]
 *                                 timed MPI_Allreduce sweep; rank 0 prints
 *                                 one line per size (bytes, times, busbw,
 *                                 verified)
 *
 * float sums are accepted within amax ((2n - 1) 2^-q + (n + 1) 2^-24) +
 * 2 gamma_(n-1) sum |x| (+ the smallest normal), amax the largest |input|
 * of the element's 768-element block over all ranks, q = 30 - ceil(log2 n):
 * the bound of rinx's block fixed point (docs/rinx.md) plus twice the worst
 * case of float summation in any order (what MPI's own sums meet).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <mpi.h>

#define BLOCK	768

static int wrank, wsize;

/* ---- inputs ---- */
static uint32_t mix(uint64_t seed, int r, uint64_t i)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)r << 40 ^ i;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (uint32_t)(x >> 16);
}

/* magnitudes 2^-8..2^7, changing per block and rank, both signs */
static float in_f32(uint64_t seed, int r, uint64_t i)
{
	/* 2^(e - 23) for e = -8..7: a 24-bit integer times it is exact */
	static const float scale[16] = {
		0x1p-31f, 0x1p-30f, 0x1p-29f, 0x1p-28f, 0x1p-27f, 0x1p-26f,
		0x1p-25f, 0x1p-24f, 0x1p-23f, 0x1p-22f, 0x1p-21f, 0x1p-20f,
		0x1p-19f, 0x1p-18f, 0x1p-17f, 0x1p-16f,
	};

	return (float)((int32_t)(mix(seed, r, i) & 0xffffff) - 0x800000) *
	       scale[(i / BLOCK + r) % 16];
}

static int32_t in_i32(uint64_t seed, int r, uint64_t i)
{
	return (int32_t)mix(seed, r, i);
}

static double in_f64(uint64_t seed, int r, uint64_t i)
{
	return ((int32_t)mix(seed, r, i)) * 0x1p-20;
}

enum kind { K_F32, K_I32, K_F64, K_I32MAX };

static void fill(enum kind k, uint64_t seed, int r, void *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		switch (k) {
		case K_F32: ((float *)buf)[i] = in_f32(seed, r, i); break;
		case K_I32:
		case K_I32MAX: ((int32_t *)buf)[i] = in_i32(seed, r, i); break;
		case K_F64: ((double *)buf)[i] = in_f64(seed, r, i); break;
		}
}

/*
 * Elements of out that differ from the reduction over the world ranks
 * listed in members[0..m-1]; the first one is described in msg.
 */
static long verify(enum kind k, uint64_t seed, const int *members, int m,
		   const void *out, size_t n, char *msg, size_t len,
		   double *worst)
{
	const double u = 0x1p-24;
	int q = 30, j;
	double gam = (m - 1) * u / (1 - (m - 1) * u), wst = 0;
	double fsum[BLOCK], fabs_sum[BLOCK];
	long bad = 0;
	size_t b, i;

	for (j = 1; j < m; j *= 2)
		q--;
	for (b = 0; b < n; b += BLOCK) {
		size_t e = b + BLOCK < n ? b + BLOCK : n;
		double amax = 0;

		if (k == K_F32) {
			/* the block's inputs of every rank, once */
			for (i = b; i < e; i++) {
				double s = 0, a = 0;

				for (j = 0; j < m; j++) {
					double v = in_f32(seed, members[j], i);

					s += v;
					a += fabs(v);
					if (fabs(v) > amax)
						amax = fabs(v);
				}
				fsum[i - b] = s;
				fabs_sum[i - b] = a;
			}
		}
		for (i = b; i < e; i++) {
			uint32_t si = 0;
			int32_t mx = INT32_MIN;
			double s = 0, a = 0, bound, err, got;

			for (j = 0; j < m; j++) {
				int r = members[j];

				switch (k) {
				case K_F32:
					s = fsum[i - b];
					a = fabs_sum[i - b];
					break;
				case K_F64:
					s += in_f64(seed, r, i);
					a += fabs(in_f64(seed, r, i));
					break;
				case K_I32:
					si += (uint32_t)in_i32(seed, r, i);
					break;
				case K_I32MAX:
					if (in_i32(seed, r, i) > mx)
						mx = in_i32(seed, r, i);
					break;
				}
			}
			if (k == K_I32 || k == K_I32MAX) {
				int32_t want = k == K_I32 ? (int32_t)si : mx;
				int32_t have = ((const int32_t *)out)[i];

				if (have != want && !bad++)
					snprintf(msg, len, "element %zu: got "
						 "%d, want %d", i, have, want);
				continue;
			}
			if (k == K_F32) {
				got = ((const float *)out)[i];
				bound = amax * ((2 * m - 1) * ldexp(1, -q) +
						(m + 1) * u) + 2 * gam * a +
					0x1p-126;
			} else {
				got = ((const double *)out)[i];
				bound = 2 * m * 0x1p-53 * a + 0x1p-1022;
			}
			err = fabs(got - s);
			if (err / bound > wst)
				wst = err / bound;
			if (!(err <= bound) && !bad++)
				snprintf(msg, len, "element %zu: got %.9g, want "
					 "%.9g (bound %.3g)", i, got, s, bound);
		}
	}
	if (worst)
		*worst = wst;
	return bad;
}

/* ---- the cases ---- */
static int nfail;

/* Every rank's verdict to rank 0, which prints one line. */
static void report(const char *name, long bad, const char *msg)
{
	int mine = bad == 0, all = 0;

	if (bad)
		fprintf(stderr, "allreduce_check: rank %d: %s: %ld wrong, %s\n",
			wrank, name, bad, msg);
	MPI_Reduce(&mine, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
	if (!wrank) {
		printf("check\t%s\t%d\n", name, all);
		fflush(stdout);
	}
	if (bad || (!wrank && !all))
		nfail++;
}

static size_t esize(enum kind k)
{
	return k == K_F64 ? 8 : 4;
}

static MPI_Datatype mtype(enum kind k)
{
	return k == K_F32 ? MPI_FLOAT : k == K_F64 ? MPI_DOUBLE : MPI_INT;
}

struct buf {
	void *send, *recv;
	size_t n;
	enum kind k;
	uint64_t seed;
};

static void buf_init(struct buf *b, enum kind k, size_t n, uint64_t seed,
		     int myrank_in_gen)
{
	b->k = k;
	b->n = n;
	b->seed = seed;
	b->send = malloc(n * esize(k) + 8);
	b->recv = malloc(n * esize(k) + 8);
	if (!b->send || !b->recv) {
		fprintf(stderr, "allreduce_check: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	fill(k, seed, myrank_in_gen, b->send, n);
	memset(b->recv, 0xa5, n * esize(k));
}

static long buf_check(struct buf *b, const int *members, int m, char *msg,
		      size_t len)
{
	return verify(b->k, b->seed, members, m, b->recv, b->n, msg, len,
		      NULL);
}

static void buf_free(struct buf *b)
{
	free(b->send);
	free(b->recv);
}

static int *world_members(void)
{
	static int *m;
	int i;

	if (!m) {
		m = malloc(sizeof(int) * wsize);
		for (i = 0; i < wsize; i++)
			m[i] = i;
	}
	return m;
}

/* One blocking allreduce of n elements of kind k on comm (whose members
 * are world ranks mem[0..m-1]), out of place or in place. */
static void case_blocking(const char *name, enum kind k, size_t n,
			  MPI_Op op, MPI_Comm comm, const int *mem, int m,
			  int in_place, uint64_t seed)
{
	char msg[256] = "";
	struct buf b;
	long bad;
	int rc;

	buf_init(&b, k, n, seed, wrank);
	if (in_place)
		memcpy(b.recv, b.send, n * esize(k));
	rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : b.send, b.recv, (int)n,
			   mtype(k), op, comm);
	bad = rc != MPI_SUCCESS ? (snprintf(msg, sizeof(msg), "rc %d", rc), 1)
				: buf_check(&b, mem, m, msg, sizeof(msg));
	report(name, bad, msg);
	buf_free(&b);
}

static void cases(void)
{
	int *w = world_members(), *rev, *half, nh, i;
	char msg[256] = "";
	MPI_Request rq[6];
	struct buf a, b, c, d;
	MPI_Comm dup, similar, halves, dup2;
	long bad;
	int flag, idx, out, cnt, done[4];
	size_t big = 4u << 20;	/* elements: several rounds of a small window */
	int32_t tok_out, tok_in = -1;

	case_blocking("allreduce float world", K_F32, 3 * BLOCK + 5, MPI_SUM,
		      MPI_COMM_WORLD, w, wsize, 0, 11);
	case_blocking("allreduce int world", K_I32, 3 * BLOCK + 5, MPI_SUM,
		      MPI_COMM_WORLD, w, wsize, 0, 12);
	case_blocking("allreduce float world MPI_IN_PLACE", K_F32, 5000,
		      MPI_SUM, MPI_COMM_WORLD, w, wsize, 1, 13);
	case_blocking("allreduce int world MPI_IN_PLACE", K_I32, 1, MPI_SUM,
		      MPI_COMM_WORLD, w, wsize, 1, 14);
	case_blocking("allreduce float 16 MiB world (several rounds)", K_F32,
		      big, MPI_SUM, MPI_COMM_WORLD, w, wsize, 0, 15);
	case_blocking("allreduce int 16 MiB world (several rounds)", K_I32,
		      big, MPI_SUM, MPI_COMM_WORLD, w, wsize, 0, 16);

	/* nonblocking: Wait, Test */
	buf_init(&a, K_F32, 10000, 21, wrank);
	MPI_Iallreduce(a.send, a.recv, (int)a.n, MPI_FLOAT, MPI_SUM,
		       MPI_COMM_WORLD, &rq[0]);
	MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
	bad = buf_check(&a, w, wsize, msg, sizeof(msg));
	bad += rq[0] != MPI_REQUEST_NULL;
	report("iallreduce float + MPI_Wait", bad, msg);
	buf_free(&a);

	buf_init(&a, K_I32, 7777, 22, wrank);
	memcpy(a.recv, a.send, a.n * 4);
	MPI_Iallreduce(MPI_IN_PLACE, a.recv, (int)a.n, MPI_INT, MPI_SUM,
		       MPI_COMM_WORLD, &rq[0]);
	flag = 0;
	for (i = 0; !flag && i < 100000000; i++)
		MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
	bad = !flag ? (snprintf(msg, sizeof(msg), "never completed"), 1) :
	      buf_check(&a, w, wsize, msg, sizeof(msg));
	report("iallreduce int MPI_IN_PLACE + MPI_Test loop", bad, msg);
	buf_free(&a);

	/* two queued on one communicator, with point-to-point in the same
	 * MPI_Waitall */
	buf_init(&a, K_F32, 70000, 31, wrank);
	buf_init(&b, K_I32, 70001, 32, wrank);
	MPI_Iallreduce(a.send, a.recv, (int)a.n, MPI_FLOAT, MPI_SUM,
		       MPI_COMM_WORLD, &rq[0]);
	MPI_Iallreduce(b.send, b.recv, (int)b.n, MPI_INT, MPI_SUM,
		       MPI_COMM_WORLD, &rq[1]);
	tok_out = wrank;
	MPI_Irecv(&tok_in, 1, MPI_INT, (wrank + wsize - 1) % wsize, 7,
		  MPI_COMM_WORLD, &rq[2]);
	MPI_Isend(&tok_out, 1, MPI_INT, (wrank + 1) % wsize, 7,
		  MPI_COMM_WORLD, &rq[3]);
	MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
	bad = buf_check(&a, w, wsize, msg, sizeof(msg)) +
	      buf_check(&b, w, wsize, msg, sizeof(msg));
	if (tok_in != (wrank + wsize - 1) % wsize && !bad++)
		snprintf(msg, sizeof(msg), "point-to-point got %d", tok_in);
	report("two iallreduce queued + isend/irecv, MPI_Waitall", bad, msg);
	buf_free(&a);
	buf_free(&b);

	/* a congruent communicator next to the world, in flight together */
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	case_blocking("allreduce float on MPI_Comm_dup", K_F32, 2000, MPI_SUM,
		      dup, w, wsize, 0, 41);
	buf_init(&a, K_F32, 50000, 42, wrank);
	buf_init(&b, K_I32, 30000, 43, wrank);
	buf_init(&c, K_I32, 1000, 44, wrank);
	MPI_Iallreduce(a.send, a.recv, (int)a.n, MPI_FLOAT, MPI_SUM, dup,
		       &rq[0]);
	MPI_Iallreduce(b.send, b.recv, (int)b.n, MPI_INT, MPI_SUM,
		       MPI_COMM_WORLD, &rq[1]);
	MPI_Iallreduce(c.send, c.recv, (int)c.n, MPI_INT, MPI_SUM, dup,
		       &rq[2]);
	memset(done, 0, sizeof(done));
	for (cnt = 0; cnt < 3;) {
		MPI_Waitany(3, rq, &idx, MPI_STATUS_IGNORE);
		if (idx == MPI_UNDEFINED)
			break;
		done[idx]++;
		cnt++;
	}
	bad = buf_check(&a, w, wsize, msg, sizeof(msg)) +
	      buf_check(&b, w, wsize, msg, sizeof(msg)) +
	      buf_check(&c, w, wsize, msg, sizeof(msg));
	if ((done[0] != 1 || done[1] != 1 || done[2] != 1) && !bad++)
		snprintf(msg, sizeof(msg), "MPI_Waitany completions %d %d %d",
			 done[0], done[1], done[2]);
	report("iallreduce on dup and world in flight, MPI_Waitany", bad, msg);

	memset(a.recv, 0xa5, a.n * 4);
	memset(b.recv, 0xa5, b.n * 4);
	MPI_Iallreduce(a.send, a.recv, (int)a.n, MPI_FLOAT, MPI_SUM,
		       MPI_COMM_WORLD, &rq[0]);
	MPI_Iallreduce(b.send, b.recv, (int)b.n, MPI_INT, MPI_SUM, dup,
		       &rq[1]);
	for (cnt = 0; cnt < 2;) {
		int got[2];

		MPI_Waitsome(2, rq, &out, got, MPI_STATUSES_IGNORE);
		if (out == MPI_UNDEFINED)
			break;
		cnt += out;
	}
	bad = buf_check(&a, w, wsize, msg, sizeof(msg)) +
	      buf_check(&b, w, wsize, msg, sizeof(msg));
	if (cnt != 2 && !bad++)
		snprintf(msg, sizeof(msg), "MPI_Waitsome completed %d", cnt);
	report("iallreduce on world and dup, MPI_Waitsome", bad, msg);

	/* a blocking call behind a nonblocking one on the same communicator
	 * (MPI forbids freeing a collective's request: waited for after) */
	memset(a.recv, 0xa5, a.n * 4);
	MPI_Iallreduce(a.send, a.recv, (int)a.n, MPI_FLOAT, MPI_SUM, dup,
		       &rq[0]);
	buf_init(&d, K_I32, 3000, 45, wrank);
	MPI_Allreduce(d.send, d.recv, (int)d.n, MPI_INT, MPI_SUM, dup);
	bad = buf_check(&d, w, wsize, msg, sizeof(msg));
	MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
	bad += buf_check(&a, w, wsize, msg, sizeof(msg));
	report("iallreduce then allreduce on dup, then MPI_Wait", bad, msg);
	buf_free(&a);
	buf_free(&b);
	buf_free(&c);
	buf_free(&d);
	MPI_Comm_free(&dup);

	/* a new communicator after one was freed */
	MPI_Comm_dup(MPI_COMM_WORLD, &dup2);
	case_blocking("allreduce int on a second MPI_Comm_dup", K_I32, 4096,
		      MPI_SUM, dup2, w, wsize, 0, 46);
	MPI_Comm_free(&dup2);

	/* the same processes in reverse order */
	MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &similar);
	rev = malloc(sizeof(int) * wsize);
	for (i = 0; i < wsize; i++)
		rev[i] = wsize - 1 - i;
	case_blocking("allreduce float, ranks reversed (MPI_SIMILAR)", K_F32,
		      6000, MPI_SUM, similar, rev, wsize, 0, 51);
	MPI_Comm_free(&similar);
	free(rev);

	/* calls an interposer must leave to MPI, checked all the same */
	MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &halves);
	half = malloc(sizeof(int) * wsize);
	for (nh = 0, i = wrank % 2; i < wsize; i += 2)
		half[nh++] = i;
	case_blocking("allreduce int on half of the ranks", K_I32, 3000,
		      MPI_SUM, halves, half, nh, 0, 61);
	MPI_Comm_free(&halves);
	free(half);
	case_blocking("allreduce int MPI_MAX", K_I32MAX, 3000, MPI_MAX,
		      MPI_COMM_WORLD, w, wsize, 0, 62);
	case_blocking("allreduce double MPI_SUM", K_F64, 3000, MPI_SUM,
		      MPI_COMM_WORLD, w, wsize, 0, 63);
	buf_init(&a, K_F64, 2000, 64, wrank);
	MPI_Iallreduce(a.send, a.recv, (int)a.n, MPI_DOUBLE, MPI_SUM,
		       MPI_COMM_WORLD, &rq[0]);
	MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
	bad = buf_check(&a, w, wsize, msg, sizeof(msg));
	report("iallreduce double MPI_SUM", bad, msg);
	buf_free(&a);
	rq[0] = MPI_REQUEST_NULL;
	flag = MPI_Allreduce(&tok_out, &tok_in, 0, MPI_INT, MPI_SUM,
			     MPI_COMM_WORLD);
	report("allreduce of 0 elements", flag != MPI_SUCCESS, "rc != 0");
}

/* ---- mismatch ---- */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int mismatch(void)
{
	int n = 5000 + (wrank == wsize - 1 ? 1000 : 0), rc, rc2;
	int32_t *s = calloc(6000, 4), *r = calloc(6000, 4);
	double t;

	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	t = now_s();
	rc = MPI_Allreduce(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	t = now_s() - t;
	rc2 = MPI_Allreduce(s, r, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("mismatch\t%d\t%d\t%.3f\t%d\n", wrank, rc, t, rc2);
	fflush(stdout);
	free(s);
	free(r);
	/* MPI itself still works */
	MPI_Barrier(MPI_COMM_WORLD);
	return 0;
}

/* ---- bench ---- */
static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int bench(const char *sizes, int iters, int warmup, enum kind k)
{
	char list[256], *tok, *save = NULL, msg[256] = "";
	double *times = calloc(iters, sizeof(double));
	int *w = world_members();

	snprintf(list, sizeof(list), "%s", sizes);
	if (!wrank) {
		printf("# MPI_Allreduce %s SUM, %d ranks, median of %d runs "
		       "after %d warm-up, every element verified\n",
		       k == K_F32 ? "float" : "int", wsize, iters, warmup);
		printf("# %10s %10s %10s %10s %8s %8s %s\n", "bytes", "min_us",
		       "median_us", "max_us", "algbw", "busbw", "verify");
	}
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		double v = strtod(tok, &end), med, worst = 0, wall;
		size_t bytes, n;
		long wrong = 0, wrong_all = 0;
		struct buf b;
		int i;

		bytes = (size_t)(v * (*end == 'M' ? 1 << 20 : *end == 'K' ?
				      1 << 10 : 1));
		n = bytes / 4;
		if (!n)
			continue;
		for (i = -warmup; i < iters; i++) {
			double t, tmax, wst;

			buf_init(&b, k, n, 1000 + i * 7919 + n, wrank);
			MPI_Barrier(MPI_COMM_WORLD);
			t = now_s();
			MPI_Allreduce(b.send, b.recv, (int)n, mtype(k), MPI_SUM,
				      MPI_COMM_WORLD);
			t = now_s() - t;
			MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0,
				   MPI_COMM_WORLD);
			wrong += verify(k, b.seed, w, wsize, b.recv, n, msg,
					sizeof(msg), &wst);
			if (wst > worst)
				worst = wst;
			if (i >= 0)
				times[i] = tmax;
			buf_free(&b);
		}
		if (wrong)
			fprintf(stderr, "allreduce_check: rank %d: %zu bytes: "
				"%ld wrong, %s\n", wrank, bytes, wrong, msg);
		MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0,
			   MPI_COMM_WORLD);
		wall = worst;
		MPI_Reduce(&wall, &worst, 1, MPI_DOUBLE, MPI_MAX, 0,
			   MPI_COMM_WORLD);
		if (wrank)
			continue;
		qsort(times, iters, sizeof(double), cmp_dbl);
		med = times[iters / 2];
		printf("  %10zu %10.1f %10.1f %10.1f %8.3f %8.3f %s\n", bytes,
		       times[0] * 1e6, med * 1e6, times[iters - 1] * 1e6,
		       bytes / med / 1e9,
		       bytes / med / 1e9 * 2.0 * (wsize - 1) / wsize,
		       wrong_all ? "WRONG" : "ok");
		printf("# worst error %.3f of the bound\n", worst);
		fflush(stdout);
		if (wrong_all)
			nfail++;
	}
	free(times);
	return 0;
}

int main(int argc, char **argv)
{
	const char *sizes = NULL;
	int iters = 5, warmup = 1, i;
	enum kind k = K_F32;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mismatch")) {
			mismatch();
			MPI_Finalize();
			return 0;
		} else if (!strcmp(argv[i], "--bench") && i + 1 < argc) {
			sizes = argv[++i];
		} else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
			iters = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) {
			warmup = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
			i++;
			k = !strcmp(argv[i], "int") ? K_I32 : K_F32;
		} else {
			if (!wrank)
				fprintf(stderr, "usage: allreduce_check "
					"[--mismatch | --bench SIZES [--iters N] "
					"[--warmup N] [--dtype float|int]]\n");
			MPI_Finalize();
			return 2;
		}
	}
	if (iters < 1 || warmup < 0) {
		MPI_Finalize();
		return 2;
	}
	if (sizes)
		bench(sizes, iters, warmup, k);
	else
		cases();
	MPI_Finalize();
	return nfail ? 1 : 0;
}
