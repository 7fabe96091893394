/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The library's base, which every room of user/ may include: logging (the
 * library never prints to stdout), error reports, the export attribute.
 */
#ifndef RINX_LOG_H
#define RINX_LOG_H

#include <stddef.h>

#define RINX_API __attribute__((visibility("default")))

/* ---- logging: the library never prints to stdout ---- */
enum rinx_log_level { RINX_LOG_WARN, RINX_LOG_INFO, RINX_LOG_DEBUG };
void rinx_log(enum rinx_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rinx_set_log_level(enum rinx_log_level lvl);
/* Puts the message into err (when given) and returns ret: the error
 * reports of the parsers and planners. */
int rinx_seterr(char *err, size_t len, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define pr_warn(...)  rinx_log(RINX_LOG_WARN, __VA_ARGS__)
#define pr_info(...)  rinx_log(RINX_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) rinx_log(RINX_LOG_DEBUG, __VA_ARGS__)

#endif
