// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Job slots: which job holds which slot of a node's tables.
 *
 * A node (host program or INA ToR) has the spec's jobs= slots; a job takes
 * the lowest free one, whatever its id. The claims map (slot -> holder) is
 * the one place that says who holds a slot: a slot is taken by inserting
 * its key with BPF_NOEXIST, which the kernel does atomically, so two jobs
 * opening at the same moment on one node never share a slot. A holder whose
 * process has gone (killed before it closed) is found by its pid and start
 * time and its slot taken over, together with its job entry.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "user/log.h"
#include "user/node/node.h"

/* The start time of process pid (clock ticks after boot, field 22 of its
 * stat), 0 if there is no such process or it has exited (a zombie keeps
 * its stat until its parent reaps it, and a killed job's ranks may not be
 * reaped yet). */
__u64 rinx_proc_start(__u32 pid)
{
	char path[64], buf[512], *p;
	unsigned long long start = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return 0;
	}
	fclose(f);
	/* the command name may hold spaces: count fields after its ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	for (i = 2; p && i < 22; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	return start;
}

static int holder_gone(const struct rinx_claim *h)
{
	return h->pid && rinx_proc_start(h->pid) != h->start;
}

int rinx_claim_slot(int fd_claims, int fd_jobs, __u32 njobs, __u32 job,
		    __u32 pid, char *why, size_t len)
{
	struct rinx_claim me = { .job = job, .pid = pid }, h;
	size_t off = 0;
	__u32 slot;

	if (pid) {
		me.start = rinx_proc_start(pid);
		if (!me.start)
			return -ESRCH;
	}
	/* this job's own slot first. A job installed again from elsewhere
	 * (pid 0: an INA ToR's control plane) keeps it, as does a job whose
	 * holder died; one that a live process holds is open on this node
	 * already: a second communicator of it would share the slot's
	 * tables, cursor and rounds with the first, and both would hang */
	for (slot = 0; slot < njobs; slot++)
		if (!bpf_map_lookup_elem(fd_claims, &slot, &h) && h.job == job) {
			if (pid && h.pid && !holder_gone(&h)) {
				if (why && len)
					snprintf(why, len, "%u", h.pid);
				return -EALREADY;
			}
			if (bpf_map_update_elem(fd_claims, &slot, &me, BPF_EXIST))
				break;	/* released meanwhile: claim afresh */
			return slot;
		}
	for (slot = 0; slot < njobs; slot++) {
		if (!bpf_map_lookup_elem(fd_claims, &slot, &h)) {
			if (!holder_gone(&h))
				continue;
			/* The holder died without closing: its job entry goes
			 * first (frames of that job must not reach the slot's
			 * next tables), then its claim. Two takers may race
			 * here; the NOEXIST insert below lets one win. */
			rinx_claim_drop_job(fd_jobs, h.job, slot);
			bpf_map_delete_elem(fd_claims, &slot);
		}
		if (!bpf_map_update_elem(fd_claims, &slot, &me, BPF_NOEXIST))
			return slot;
		if (errno != EEXIST)
			return -errno;
	}
	/* full: say who holds it */
	if (why && len) {
		why[0] = 0;
		for (slot = 0; slot < njobs && off + 16 < len; slot++) {
			if (bpf_map_lookup_elem(fd_claims, &slot, &h))
				continue;
			off += snprintf(why + off, len - off, "%s%u", off ? " " : "",
					h.job);
		}
	}
	return -EBUSY;
}

void rinx_claim_drop_job(int fd_jobs, __u32 job, __u32 slot)
{
	struct rinx_job cur;

	if (fd_jobs >= 0 && !bpf_map_lookup_elem(fd_jobs, &job, &cur) &&
	    cur.slot == slot)
		bpf_map_delete_elem(fd_jobs, &job);
}

void rinx_claim_release(int fd_claims, __u32 slot, __u32 job)
{
	struct rinx_claim h;

	if (fd_claims >= 0 && !bpf_map_lookup_elem(fd_claims, &slot, &h) &&
	    h.job == job)
		bpf_map_delete_elem(fd_claims, &slot);
}
