/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
#ifndef RINX_BENCH_H
#define RINX_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/random.h>
#include "user/ctl.h"
#include "tools/opts.h"

#define BENCH_MAX_SIZES 32
#define BENCH_MAX_ITERS 1000

#define BENCH_MAX_JOBS	32	/* bench --jobs: communicators at once */

/* A fresh 64-bit job token for a benchmark's jobs (the kernel's random
 * numbers; a clock-seeded mix if they are not available). */
static inline uint64_t bench_token(void)
{
	uint64_t t;

	if (getrandom(&t, sizeof(t), 0) == sizeof(t))
		return t;
	t = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL;
	return t ^ ((uint64_t)rand() << 32) ^ (uint64_t)rand();
}

/* One size's figures, for a caller that prints its own table (demo). */
struct bench_result {
	uint64_t bytes, median_ns;
	double busbw;		/* GB/s */
	double util;		/* busbw / slowest link; 0: no link rates */
	int verified;		/* 1 every element ok, 0 wrong, -1 unchecked */
};

struct bench_opts {
	uint64_t sizes[BENCH_MAX_SIZES];	/* bytes per rank */
	int nsizes;
	int iters, warmup;
	int dtype;		/* enum rinx_dtype */
	int data;		/* enum gen_data (tools/gen.h); -1: by dtype */
	int verify, json, profile;
	int convert;		/* --convert: the conversion alone */
	int timeout_ms, inflight;
	int block;		/* rinx_comm_opts.block_values */
	int jobs;		/* jobs at once over the same links (1..) */
	uint32_t job;
	uint64_t token;
	uint64_t seed;
	uint64_t max_count;	/* filled by bench_run */
	const char *plan;	/* --plan: the plan every rank runs */
	const char *spec;	/* --spec */
	struct bench_result *res;	/* NULL, or nsizes entries that
					 * bench_run fills */
};

/* bench's options (demo includes them), the dtypes they name, and the
 * parsers compare shares. */
extern const struct opt bench_opt_table[];
extern const struct opt_choice bench_dtypes[];
#define BENCH_SIZES_RANGE "bytes per rank, comma-separated (suffix K, M, G; " \
	"multiple of 4)"
int bench_opt_sizes(const char *v, void *field, char *why, size_t len);
int bench_opt_data(const char *v, void *field, char *why, size_t len);

/* The table's defaults, a random job and token. */
void bench_defaults(struct bench_opts *o);
int bench_parse_sizes(const char *list, struct bench_opts *o);
/* --data NAME into o->data; 0 or -1 after a message naming cmd. */
int bench_parse_data(const char *name, struct bench_opts *o, const char *cmd);
/* o->data from the dtype when not given, or -1 after a message naming cmd
 * when it does not fit the dtype. */
int bench_data_resolve(struct bench_opts *o, const char *cmd);
/* --convert: conversion alone against memcpy (tools/bench_convert.c);
 * 0, -EDOM when a path's result was wrong, or another -errno. */
int bench_convert(const struct bench_opts *o, FILE *out);
/* 0, -EDOM when a result was wrong, or another -errno. */
int bench_run(const struct bench_opts *o, const char *spec_path,
	      const struct rinx_spec *s, FILE *out);

#endif
