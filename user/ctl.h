/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * librinx internals for rinxctl and the selftests: logging, the cluster
 * spec, nodes and namespaces, through the doors of their rooms. Not
 * installed (the public interface is librinx.h), and never included by
 * the library itself: a room of user/ includes only the doors it needs.
 */
#ifndef RINX_CTL_H
#define RINX_CTL_H

#include "user/log.h"
#include "user/plan/spec.h"
#include "user/node/node.h"

#endif
