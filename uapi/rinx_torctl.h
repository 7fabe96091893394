/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The INA ToR's control plane on the wire: the messages a job's agent sends
 * to the ToR's control daemon (rinxctl tor) in UDP datagrams to the ToR's
 * control port, and the daemon's answers. All integers in network byte
 * order except the table entries (struct rinx_job, rinx_node, rinx_hop),
 * which travel as the aggregator stores them (the daemon and the ranks run
 * the same rinx build: RINX_TORCTL_VERSION changes with their layout).
 *
 * A request is a header, then for INSTALL the body: the job entry, nnodes
 * node entries and RINX_MAX_CLASSES * RINX_HOP_TYPES hop entries (class
 * major, type 1..3). The answer is a header with the request's op and seq,
 * the RINX_TORCTL_ANSWER flag and status (0 or a positive errno).
 *
 * Authentication: the job token (64 bits) in the header. INSTALL of a job
 * the ToR holds, REMOVE and QUERY need the token it holds (else EACCES,
 * counted by the daemon); INSTALL of a new job takes a free job slot.
 */
#ifndef RINX_TORCTL_UAPI_H
#define RINX_TORCTL_UAPI_H

#include "uapi/rinx.h"

#define RINX_TORCTL_PORT	7471		/* UDP, at the ToR's address */
#define RINX_TORCTL_MAGIC	0x52585443u	/* "RXTC" */
#define RINX_TORCTL_VERSION	1

enum rinx_torctl_op {
	RINX_TORCTL_INSTALL = 1,	/* job entry + tables; clears the
					 * job slot's aggregator slots */
	RINX_TORCTL_REMOVE = 2,		/* forget the job */
	RINX_TORCTL_QUERY = 3,		/* does the ToR hold the job (0) or
					 * not (ENOENT)? */
};

#define RINX_TORCTL_ANSWER	0x80	/* in op: an answer */

struct rinx_torctl_hdr {
	__be32 magic;
	__u8 version;
	__u8 op;
	__u16 nnodes;		/* INSTALL: node entries that follow */
	__be32 job;
	__be32 seq;		/* echoed in the answer */
	__be64 token;
	__be32 status;		/* answer: 0 or a positive errno */
	__be32 resv;
};

#define RINX_TORCTL_HOPS	(RINX_MAX_CLASSES * RINX_HOP_TYPES)
#define RINX_TORCTL_MAX		(sizeof(struct rinx_torctl_hdr) + \
				 sizeof(struct rinx_job) + \
				 RINX_MAX_NODES * sizeof(struct rinx_node) + \
				 RINX_TORCTL_HOPS * sizeof(struct rinx_hop))

#endif
