/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The INA ToR's control plane over UDP (uapi/rinx_torctl.h): the request a
 * job's agent sends. The daemon that applies it to the ToR's maps is the
 * ToR's own (the testbed's: tools/testbed/testbed.h). */
#ifndef RINX_TORCTL_H
#define RINX_TORCTL_H

#include <stddef.h>
#include "uapi/rinx_torctl.h"

/* Sends the request (header + body, len bytes) to ip:port and waits for its
 * answer, resending every 100 ms, for at most timeout_ms. Returns 0, minus
 * the ToR's status (-EACCES: token refused, -EBUSY: no free job slot...),
 * -ETIMEDOUT (no answer) or -ECONNREFUSED (nobody listens). */
int rinx_torctl_call(__be32 ip, __u16 port, void *req, size_t len,
		     int timeout_ms);

#endif
