// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Library logging: stderr only, filtered by level; libbpf's output goes
 * through the same filter (shown at debug level, i.e. rinxctl -v). */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "user/log.h"

static enum rinx_log_level log_level = RINX_LOG_WARN;

static int libbpf_print(enum libbpf_print_level lvl, const char *fmt,
			va_list ap)
{
	if (log_level < RINX_LOG_DEBUG && lvl != LIBBPF_WARN)
		return 0;
	if (log_level < RINX_LOG_INFO)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void rinx_set_log_level(enum rinx_log_level lvl)
{
	log_level = lvl;
	libbpf_set_print(libbpf_print);
}

__attribute__((constructor)) static void rinx_log_init(void)
{
	libbpf_set_print(libbpf_print);
}

void rinx_log(enum rinx_log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if (lvl > log_level)
		return;
	va_start(ap, fmt);
	fputs("rinx: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

int rinx_seterr(char *err, size_t len, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return ret;
}
