/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Minimal TAP 13 output for the C selftests. Exit 0 if all passed, 1 if a
 * test failed, 4 if the whole program is skipped (reason printed). */
#ifndef RINX_TAP_H
#define RINX_TAP_H

#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>

static int tap_n, tap_fail;

static inline void tap_plan(int n) { printf("1..%d\n", n); fflush(stdout); }

static inline __attribute__((format(printf, 2, 3)))
int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_fail++;
	return cond;
}

static inline __attribute__((format(printf, 1, 2)))
void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline __attribute__((noreturn, format(printf, 1, 2)))
void tap_skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(4);
}

static inline int tap_done(void)
{
	if (tap_fail)
		printf("# %d of %d failed\n", tap_fail, tap_n);
	return tap_fail ? 1 : 0;
}

#endif
