// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The INA ToR's control plane over UDP: the agent's request with bounded
 * resends. The daemon that answers it runs on the ToR, outside librinx
 * (the testbed's is tools/testbed/torctl.c).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include "user/log.h"
#include "user/comm/torctl.h"

static __u64 ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rinx_torctl_call(__be32 ip, __u16 port, void *req, size_t len,
		     int timeout_ms)
{
	struct rinx_torctl_hdr *h = req, a;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	__u64 end = ms_now() + (timeout_ms > 0 ? timeout_ms : 1), next = 0, t;
	__u32 seq;
	int fd, err = -ETIMEDOUT, refused = 0;
	ssize_t n;

	sa.sin_addr.s_addr = ip;
	sa.sin_port = htons(port);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto out;
	}
	seq = (__u32)ms_now() ^ ((__u32)getpid() << 16);
	h->magic = htonl(RINX_TORCTL_MAGIC);
	h->version = RINX_TORCTL_VERSION;
	h->seq = htonl(seq);
	h->status = 0;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		t = ms_now();
		if (t >= end)
			break;
		if (t >= next) {
			if (send(fd, req, len, 0) < 0 && errno == ECONNREFUSED)
				refused++;
			next = t + 100;
		}
		if (poll(&p, 1, (int)(next < end ? next - t : end - t)) <= 0)
			continue;
		n = recv(fd, &a, sizeof(a), 0);
		if (n < 0) {
			/* an ICMP port unreachable: nobody listens (yet);
			 * keep trying within the time, then say so */
			if (errno == ECONNREFUSED)
				refused++;
			continue;
		}
		if (n != sizeof(a) || a.magic != htonl(RINX_TORCTL_MAGIC) ||
		    a.op != (h->op | RINX_TORCTL_ANSWER) || a.seq != h->seq)
			continue;
		err = -(int)ntohl(a.status);
		goto out;
	}
	if (refused)
		err = -ECONNREFUSED;
out:
	close(fd);
	return err;
}
