/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Process helpers shared by the peer launchers (tools/proc.c). */
#ifndef RINX_PROC_H
#define RINX_PROC_H

#include <stddef.h>
#include <signal.h>
#include <sys/types.h>

typedef void (*proc_line_fn)(const char *line, void *ctx);

double proc_now_s(void);
int proc_is_file(const char *path);
/* Is prog an executable somewhere on PATH? */
int proc_in_path(const char *prog);
/* TERM, then KILL after a grace period, to pid's process group; reaps. */
void proc_kill_group(pid_t pid);
/* Reads what fd has into buf and hands every complete line to fn; *open
 * becomes 0 at end of file. */
void proc_drain(int fd, char *buf, size_t cap, size_t *len, int *open,
		proc_line_fn fn, void *ctx);
/* The number after "key": in a JSON line; 0 or -1. */
int proc_json_num(const char *line, const char *key, double *v);

/* Forwards a child's stderr line, less mpirun's harmless namespace noise. */
void proc_stderr(const char *line, void *ctx);
/* Runs argv in its own process group, lines of its stdout to out_fn and of
 * its stderr to err_fn, for at most timeout_s (or until *stop): -ETIMEDOUT
 * or -EINTR (the group killed), else its exit status (128 + signal). */
int proc_run_lines(const char *who, char *const argv[], int timeout_s,
		   volatile sig_atomic_t *stop, proc_line_fn out_fn,
		   proc_line_fn err_fn, void *ctx);

/* How `rinxctl peer mpi` and `compare` start Open MPI on the testbed. */
struct proc_mpirun {
	const char *ns0;	/* namespace of host 0, where mpirun runs */
	const char *np;		/* ranks */
	const char *hostfile;
	const char *agent;	/* tools/peers/mpi-agent.sh (not for shm) */
	const char *ifname;	/* the hosts' interface (not for shm) */
	const char *env;	/* "NAME=value" passed to the ranks, or NULL */
	int shm;		/* every rank on host 0, shared memory */
	int ring;		/* the ring allreduce algorithm */
};

/* Appends to av, from index a, the command that runs mpirun in host 0's
 * namespace (its hostname that of the namespace) with its transport and
 * algorithm settings; the program and its arguments follow. Returns the
 * index after the last one written (av needs up to 47 more slots). */
int proc_mpirun_argv(char **av, int a, const struct proc_mpirun *m);

#endif
