/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Minimal TAP 13 output for the C selftests. Exit 0 if all passed, 1 if a
 * test failed, 4 if the whole program is skipped (reason printed).
 *
 * A program declares its plan with tap_plan() before its first check, with
 * a count computed from its cases, never from the checks it ran: a check
 * that is skipped by mistake (a loop that ends early, a case left out) then
 * shows as a plan not met, and tap_done() fails the program. */
#ifndef RINX_TAP_H
#define RINX_TAP_H

#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>

static int tap_n, tap_fail, tap_planned = -1;

static inline void tap_plan(int n)
{
	printf("1..%d\n", n);
	fflush(stdout);
	/* a plan after checks is one counted from them: it proves nothing */
	if (tap_n || tap_planned >= 0) {
		printf("# plan declared after %d checks (or twice)\n", tap_n);
		tap_fail++;
	}
	tap_planned = n;
}

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
	int bad = tap_fail;

	if (tap_planned < 0) {
		printf("# no plan declared (%d checks ran)\n", tap_n);
		bad++;
	} else if (tap_n != tap_planned) {
		printf("# planned %d checks, ran %d\n", tap_planned, tap_n);
		bad++;
	}
	if (tap_fail)
		printf("# %d of %d failed\n", tap_fail, tap_n);
	fflush(stdout);
	return bad ? 1 : 0;
}

#endif
