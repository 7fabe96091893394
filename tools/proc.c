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
#include <poll.h>
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

void proc_stderr(const char *line, void *ctx)
{
	/* mpirun in a namespace prints this on every launch: harmless */
	if (!*line || (strstr(line, "plm:rsh:") && strstr(line, "setpgid")))
		return;
	fprintf(stderr, "%s\n", line);
}

int proc_run_lines(const char *who, char *const argv[], int timeout_s,
		   volatile sig_atomic_t *stop, proc_line_fn out_fn,
		   proc_line_fn err_fn, void *ctx)
{
	double deadline = proc_now_s() + timeout_s;
	char obuf[8192], ebuf[4096];
	size_t olen = 0, elen = 0;
	int po[2], pe[2], oopen = 1, eopen = 1, status, ret = 0, i;
	pid_t pid;

	if (pipe(po))
		return -errno;
	if (pipe(pe)) {
		close(po[0]);
		close(po[1]);
		return -errno;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		setpgid(0, 0);
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", who, argv[0],
			strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(po[1]);
	close(pe[1]);
	while (oopen || eopen) {
		struct pollfd pfd[2];
		int np = 0, left = (int)((deadline - proc_now_s()) * 1000);

		if ((stop && *stop) || left <= 0) {
			ret = stop && *stop ? -EINTR : -ETIMEDOUT;
			break;
		}
		if (oopen)
			pfd[np++] = (struct pollfd){ .fd = po[0], .events = POLLIN };
		if (eopen)
			pfd[np++] = (struct pollfd){ .fd = pe[0], .events = POLLIN };
		if (poll(pfd, np, left > 1000 ? 1000 : left) <= 0)
			continue;
		for (i = 0; i < np; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (pfd[i].fd == po[0])
				proc_drain(po[0], obuf, sizeof(obuf), &olen,
					   &oopen, out_fn, ctx);
			else
				proc_drain(pe[0], ebuf, sizeof(ebuf), &elen,
					   &eopen, err_fn, ctx);
		}
	}
	if (ret) {
		fprintf(stderr, "%s: %s, stopping %s\n", who,
			ret == -EINTR ? "interrupted" : "timed out", argv[0]);
		proc_kill_group(pid);
	}
	close(po[0]);
	close(pe[0]);
	waitpid(pid, &status, 0);
	kill(-pid, SIGKILL);	/* leftovers of the group (orted, ranks) */
	if (ret)
		return ret;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int proc_mpirun_argv(char **av, int a, const struct proc_mpirun *m)
{
#define ARG(v) (av[a++] = (char *)(v))
#define MCA(k, v) do { ARG("--mca"); ARG(k); ARG(v); } while (0)
	ARG("ip"); ARG("netns"); ARG("exec"); ARG(m->ns0);
	ARG("unshare"); ARG("--uts");
	ARG("sh"); ARG("-c"); ARG("hostname \"$0\" && exec \"$@\"");
	ARG(m->ns0);
	ARG("mpirun"); ARG("--allow-run-as-root");
	ARG("-np"); ARG(m->np);
	ARG("--hostfile"); ARG(m->hostfile);
	ARG("--bind-to"); ARG("none");
	if (m->env) {
		ARG("-x");
		ARG(m->env);
	}
	MCA("pml", "ob1");
	if (m->shm) {
		MCA("btl", "vader,self");
	} else {
		MCA("plm_rsh_agent", m->agent);
		MCA("plm_rsh_no_tree_spawn", "1");
		MCA("btl", "tcp,self");
		MCA("btl_tcp_if_include", m->ifname);
		MCA("oob_tcp_if_include", m->ifname);
	}
	MCA("mpi_yield_when_idle", "1");
	if (m->ring) {
		MCA("coll_tuned_use_dynamic_rules", "1");
		MCA("coll_tuned_allreduce_algorithm", "4");
	}
#undef MCA
#undef ARG
	return a;
}
