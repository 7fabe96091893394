// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Entering the network namespaces made by `ip netns add`. Only the network
 * namespace changes: pins stay reachable (bpffs outside /sys). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include "user/log.h"
#include "user/node/node.h"

int rinx_netns_enter(const char *name, int *oldfd)
{
	char path[RINX_PATH_MAX];
	int fd, err;

	*oldfd = -1;
	if (!name || !*name)
		return 0;
	*oldfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*oldfd < 0)
		return -errno;
	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		pr_warn("network namespace %s: %s\n", name,
			err == -ENOENT ? "does not exist" : "cannot open");
		close(*oldfd);
		*oldfd = -1;
		return err;
	}
	if (setns(fd, CLONE_NEWNET)) {
		err = -errno;
		pr_warn("cannot enter network namespace %s\n", name);
		close(fd);
		close(*oldfd);
		*oldfd = -1;
		return err;
	}
	close(fd);
	return 0;
}

int rinx_netns_leave(int oldfd)
{
	int err = 0;

	if (oldfd < 0)
		return 0;
	if (setns(oldfd, CLONE_NEWNET))
		err = -errno;
	close(oldfd);
	return err;
}
