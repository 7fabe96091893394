// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Job slots of a node (user/node/claim.c), table-driven, on a claims map and a
 * job table of NJOBS slots created here (no network):
 * - any 32-bit job id takes the lowest free slot (ids equal mod 4, the old
 *   rule's collisions, included);
 * - a job opened again while a live process holds its slot is refused
 *   (-EALREADY, the holder's pid named): two communicators of one job
 *   on a node would share the slot; installed again from elsewhere (an
 *   INA ToR's job, pid 0) it keeps its slot;
 * - a full node refuses with -EBUSY and names every job holding it;
 * - a job whose process died holding a slot loses it to the next job,
 *   together with its job entry; a live holder's slot is never taken;
 * - a released slot is the next one taken; a remote holder (pid 0, an INA
 *   ToR's job) is never taken over.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include "user/ctl.h"
#include "selftests/lib/testlib.h"

#define NJOBS	4

enum who { ME, DEAD, REMOTE };
enum op { CLAIM, RELEASE, KILL };

struct step {
	const char *what;
	enum op op;
	__u32 job;
	enum who who;		/* the claiming process */
	int want;		/* slot (RELEASE: the one released), or -errno */
	const char *holders;	/* -EBUSY: the jobs named, in slot order */
};

static const struct step steps[] = {
	{ "job 1 on an empty node", CLAIM, 1, ME, 0, NULL },
	{ "job 5 (1 mod 4, the old rule's collision)", CLAIM, 5, ME, 1, NULL },
	{ "job 1 opened again while its process holds it: refused, the "
	  "holder named", CLAIM, 1, ME, -EALREADY, "=pid" },
	{ "job 0xfffffff0 (a large id)", CLAIM, 0xfffffff0u, DEAD, 2, NULL },
	{ "job 9 held remotely (an INA ToR's)", CLAIM, 9, REMOTE, 3, NULL },
	{ "job 9 installed again from elsewhere keeps its slot", CLAIM, 9,
	  REMOTE, 3, NULL },
	{ "job 0xfffffff0's process is killed", KILL, 0, ME, 0, NULL },
	{ "job 13 takes the dead job's slot", CLAIM, 13, ME, 2, NULL },
	{ "job 17 on a full node: refused, holders named", CLAIM, 17, ME,
	  -EBUSY, "1 5 13 9" },
	{ "job 5 releases its slot", RELEASE, 5, ME, 1, NULL },
	{ "job 17 takes the released slot", CLAIM, 17, ME, 1, NULL },
	{ "job 21: full again, the remote holder kept", CLAIM, 21, ME, -EBUSY,
	  "1 17 13 9" },
};

/* A process that is gone: its pid and start time no longer name one. */
static __u32 dead_pid(void)
{
	pid_t p = fork();

	if (p == 0) {
		pause();
		_exit(0);
	}
	return p > 0 ? (__u32)p : 0;
}

int main(void)
{
	int fc, fj, i, got, ok;
	struct rinx_job j;
	char why[256], me[256];
	__u32 k, dpid = 0;

	tl_needs_root("BPF maps");
	tap_plan((int)(sizeof(steps) / sizeof(steps[0])) + 2);
	fc = bpf_map_create(BPF_MAP_TYPE_HASH, "claims", 4,
			    sizeof(struct rinx_claim), NJOBS, NULL);
	fj = bpf_map_create(BPF_MAP_TYPE_HASH, "jobs", 4, sizeof(struct rinx_job),
			    NJOBS, NULL);
	if (fc < 0 || fj < 0)
		tap_skip_all("cannot create maps: %s", strerror(errno));
	for (i = 0; i < (int)(sizeof(steps) / sizeof(steps[0])); i++) {
		const struct step *s = &steps[i];
		__u32 pid = s->who == REMOTE ? 0 : getpid();

		if (s->op == RELEASE) {
			struct rinx_claim c;

			rinx_claim_release(fc, s->want, s->job);
			k = s->want;
			tap_ok(bpf_map_lookup_elem(fc, &k, &c) && errno == ENOENT,
			       "%s: slot %d free", s->what, s->want);
			continue;
		}
		if (s->op == KILL) {
			kill(dpid, SIGKILL);
			waitpid(dpid, NULL, 0);
			tap_ok(dpid && rinx_proc_start(dpid) == 0, "%s (pid %u)",
			       s->what, dpid);
			continue;
		}
		if (s->who == DEAD) {
			/* claimed by a live child, killed by a later step */
			dpid = dead_pid();
			pid = dpid;
		}
		why[0] = 0;
		got = rinx_claim_slot(fc, fj, NJOBS, s->job, pid, why,
				      sizeof(why));
		if (got >= 0) {
			/* the job entry the communicator writes next */
			memset(&j, 0, sizeof(j));
			j.slot = got;
			k = s->job;
			bpf_map_update_elem(fj, &k, &j, 0);
		}
		/* "=pid": the claiming process is the holder named */
		if (s->holders && !strcmp(s->holders, "=pid"))
			snprintf(me, sizeof(me), "%u", pid);
		else if (s->holders)
			snprintf(me, sizeof(me), "%s", s->holders);
		ok = got == s->want && (!s->holders || !strcmp(why, me));
		tap_ok(ok, "%s: %d (want %d)%s%s", s->what, got, s->want,
		       s->holders ? ", holders " : "", s->holders ? why : "");
	}
	k = 0xfffffff0u;
	tap_ok(bpf_map_lookup_elem(fj, &k, &j) && errno == ENOENT,
	       "the dead job's entry went with its slot");
	got = 0;
	for (k = 0; k < NJOBS; k++) {
		struct rinx_claim c;

		got += !bpf_map_lookup_elem(fc, &k, &c);
	}
	tap_ok(got == NJOBS, "every slot held at the end (%d of %d)", got, NJOBS);
	close(fc);
	close(fj);
	return tap_done();
}
