// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Process helpers of the peer launchers (rinxctl peer, rinxctl compare):
 * clocks, lookups, output split into lines, process-group kill, JSON
 * fields of the peers' result lines. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tools/proc.h"

double proc_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int proc_is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

int proc_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	const char *p, *e;

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, ':');
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)(e - p), p, prog);
		if (e > p && !access(buf, X_OK))
			return 1;
	}
	return 0;
}

void proc_kill_group(pid_t pid)
{
	int i, status;

	kill(-pid, SIGTERM);
	for (i = 0; i < 50; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	kill(-pid, SIGKILL);
}

void proc_drain(int fd, char *buf, size_t cap, size_t *len, int *open,
		  proc_line_fn fn, void *ctx)
{
	ssize_t n = read(fd, buf + *len, cap - 1 - *len);
	char *nl, *start;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		*open = 0;
		if (*len) {
			buf[*len] = 0;
			fn(buf, ctx);
			*len = 0;
		}
		return;
	}
	*len += n;
	buf[*len] = 0;
	start = buf;
	while ((nl = strchr(start, '\n'))) {
		*nl = 0;
		fn(start, ctx);
		start = nl + 1;
	}
	*len -= start - buf;
	memmove(buf, start, *len);
	if (*len == cap - 1) {	/* overlong line: pass it on in pieces */
		buf[*len] = 0;
		fn(buf, ctx);
		*len = 0;
	}
}

int proc_json_num(const char *line, const char *key, double *v)
{
	char pat[64];
	const char *p;
	char *end;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	*v = strtod(p, &end);
	return end == p ? -1 : 0;
}
