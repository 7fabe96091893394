// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The emulated cluster (topology in tools/testbed/testbed.h).
 *
 * Namespaces, veths, addresses and neighbours are made by ip(8) in batch
 * mode: one process for the root namespace and one per testbed namespace,
 * each fed its commands on stdin (a memfd), never through a shell. The
 * switches are loaded and attached with libbpf from inside their namespace,
 * because a devmap resolves ifindexes in the namespace of the caller. They
 * are attached through netlink (no bpf_link): they stay when rinxctl exits
 * and go away with their namespace.
 */
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "tools/testbed/tb.h"

/* Removes <pin>/<node>/<files> left under the testbed's own pin
 * directory, then the directory (and its bpffs mount, if it has one). */
static void pin_dir_remove(const char *pin)
{
	char path[RINX_PATH_MAX + 2 * 256 + 2];
	struct dirent *e, *f;
	struct stat st, pst;
	char parent[RINX_PATH_MAX];
	char *slash;
	DIR *d, *sub;

	d = opendir(pin);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", pin, e->d_name);
		sub = opendir(path);
		if (!sub) {
			unlink(path);
			continue;
		}
		while ((f = readdir(sub))) {
			if (f->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s", pin,
				 e->d_name, f->d_name);
			unlink(path);
		}
		closedir(sub);
		snprintf(path, sizeof(path), "%s/%s", pin, e->d_name);
		rmdir(path);
	}
	closedir(d);
	snprintf(parent, sizeof(parent), "%s", pin);
	slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = 0;
	if (!stat(pin, &st) && !stat(parent, &pst) && st.st_dev != pst.st_dev)
		umount2(pin, MNT_DETACH);
	rmdir(pin);
}

static int pin_is_ours(const struct rinx_spec *s, const char *prefix)
{
	const char *base = strrchr(s->pin, '/');

	return base && !strcmp(base + 1, prefix);
}

int mkdir_parent(const char *path)
{
	char dir[RINX_PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Removes everything of testbed prefix that s (may be NULL) describes. */
int teardown(const struct rinx_spec *s, const char *prefix,
	     const char *spec_path, int *removed)
{
	char pin[RINX_PATH_MAX];
	struct rinx_tb_buf b = {};
	int i, n, err = 0;

	/* its sockets first: they hold the switches' ports */
	rinx_testbed_queue_stop(prefix);
	if (s) {
		/* Unpinning the link detaches the host program. */
		for (i = 0; i < s->nhosts; i++)
			rinx_node_down(s, &s->hosts[i]);
		for (i = 0; i < s->nracks; i++)
			agg_unpin(s, &s->racks[i]);
		if (pin_is_ours(s, prefix))
			pin_dir_remove(s->pin);
	} else {
		snprintf(pin, sizeof(pin), "%s/%s", RINX_TB_PIN_ROOT, prefix);
		pin_dir_remove(pin);
	}
	n = ours_to_batch(prefix, &b);
	if (n)
		err = run_ip_batch(NULL, &b);
	rinx_tb_free(&b);
	if (removed)
		*removed = err ? 0 : n;
	if (spec_path)
		unlink(spec_path);
	return err;
}

/* The namespaces of every host and switch, quiet (no IPv6 chatter). */
static int make_namespaces(const struct rinx_spec *s, const char *prefix,
			   struct tb_switch *sw)
{
	char ns[NS_NAME_MAX];
	struct rinx_tb_buf cmd = {};
	int i, err;

	for (i = 0; i < s->nhosts; i++)
		rinx_tb_put(&cmd, "netns add %s\n", s->hosts[i].netns);
	for (i = 0; i < s->nracks; i++) {
		tor_ns(ns, prefix, i);
		rinx_tb_put(&cmd, "netns add %s\n", ns);
	}
	if (s->nracks > 1) {
		spine_ns(ns, prefix);
		rinx_tb_put(&cmd, "netns add %s\n", ns);
	}
	err = run_ip_batch(NULL, &cmd);
	rinx_tb_free(&cmd);
	for (i = 0; i < s->nhosts && !err; i++)
		err = ns_quiet(s->hosts[i].netns, 1);
	for (i = 0; i <= s->nracks && !err; i++) {
		if (i == s->nracks && s->nracks == 1)
			break;
		switch_layout(s, prefix, i, sw);
		err = ns_quiet(sw->ns, 0);
	}
	return err;
}

/* In the namespaces: the links, the hosts' addresses and pacing, the
 * switches, the host programs and the ToR daemons. */
static int make_nodes(const struct rinx_testbed_opts *o,
		      const struct rinx_spec *s, struct tb_switch *sw)
{
	int i, err;

	err = make_links(s, o->prefix, o->queues ? o->queues : 1,
			 o->mtu ? o->mtu : RINX_TB_MTU);
	for (i = 0; i < s->nhosts && !err; i++) {
		err = config_host(s, i);
		if (!err && s->hosts[i].link_mbit)
			err = host_pace(&s->hosts[i], s->hosts[i].link_mbit);
	}
	for (i = 0; i <= s->nracks && !err; i++) {
		if (i == s->nracks && s->nracks == 1)
			break;
		switch_layout(s, o->prefix, i, sw);
		sw->plain = o->plain;
		err = config_switch(sw);
		if (!err)
			err = switch_attach(s, sw, o->link);
	}
	if (!err)
		err = hosts_up(s, o->no_nodes);
	/* once the programs are on (a veth polls by NAPI only then): the
	 * hosts' and switches' frames processed at once on both cores,
	 * instead of one after another on the core that scheduled them */
	for (i = 0; o->threaded_napi && i < s->nhosts && !err; i++)
		err = rinx_tb_napi(s->hosts[i].netns, 1);
	for (i = 0; o->threaded_napi && i <= s->nracks && !err; i++) {
		if (i == s->nracks && s->nracks == 1)
			break;
		switch_layout(s, o->prefix, i, sw);
		err = rinx_tb_napi(sw->ns, 1);
	}
	if (!err)
		err = torctl_up(s);
	return err;
}

static int write_spec(const struct rinx_testbed_opts *o,
		      const struct rinx_spec *s, const char *spec_path)
{
	int err;

	if (!o->spec_out) {
		err = mkdir_parent(spec_path);
		if (err) {
			pr_warn("cannot create the directory of %s: %s\n",
				spec_path, strerror(-err));
			return err;
		}
	}
	err = rinx_spec_save(spec_path, s);
	if (err) {
		pr_warn("cannot write %s: %s\n", spec_path, strerror(-err));
		unlink(spec_path);
	}
	return err;
}

int rinx_testbed_up(const struct rinx_testbed_opts *o,
		    struct rinx_spec *spec_out)
{
	char spec_path[RINX_PATH_MAX], msg[160];
	struct rinx_spec *s;
	struct tb_switch *sw;
	int n, err;

	err = check_opts(o);
	if (err)
		return err;
	n = ours_to_batch(o->prefix, NULL);
	if (n) {
		pr_warn("testbed %s exists (%d namespaces); run "
			"'rinxctl testbed down %s' first\n", o->prefix, n,
			o->prefix);
		return -EEXIST;
	}
	if (o->topo || o->gen)
		return topo_up(o, spec_out);
	if (o->spec_out)
		snprintf(spec_path, sizeof(spec_path), "%s", o->spec_out);
	else
		rinx_testbed_spec_path(o->prefix, spec_path,
				       sizeof(spec_path));
	s = calloc(1, sizeof(*s));
	sw = calloc(1, sizeof(*sw));
	if (!s || !sw) {
		free(s);
		free(sw);
		return -ENOMEM;
	}
	build_spec(o, s);
	err = rinx_spec_check(s, msg, sizeof(msg));
	if (err) {
		pr_warn("testbed spec: %s\n", msg);
		goto out;
	}
	/* From here on a failure removes what was made, newest first:
	 * host programs and pins, then the namespaces (which takes the
	 * veths and the switches with them). */
	err = make_namespaces(s, o->prefix, sw);
	if (!err)
		err = make_nodes(o, s, sw);
	if (!err)
		err = write_spec(o, s, spec_path);
	if (err)
		teardown(s, o->prefix, NULL, NULL);
	else if (spec_out)
		*spec_out = *s;
out:
	free(sw);
	free(s);
	return err;
}

int rinx_testbed_down(const char *what, int *removed)
{
	char prefix[RINX_TB_PREFIX_MAX + 1], path[RINX_PATH_MAX], msg[160];
	struct rinx_spec *s = NULL;
	size_t n = what ? strlen(what) : 0;
	int by_path, err;

	if (removed)
		*removed = 0;
	if (!n)
		return -EINVAL;
	by_path = strchr(what, '/') || (n > 5 && !strcmp(what + n - 5,
							   ".spec"));
	if (by_path) {
		if (n >= sizeof(path))
			return -ENAMETOOLONG;
		snprintf(path, sizeof(path), "%s", what);
	} else {
		if (rinx_testbed_prefix_check(what, msg, sizeof(msg))) {
			pr_warn("%s\n", msg);
			return -EINVAL;
		}
		snprintf(prefix, sizeof(prefix), "%s", what);
		rinx_testbed_spec_path(prefix, path, sizeof(path));
	}
	if (access(path, F_OK) == 0) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -ENOMEM;
		err = rinx_spec_load(path, s, msg, sizeof(msg));
		if (err) {
			pr_warn("%s: %s\n", path, msg);
			goto out;
		}
		if (rinx_testbed_spec_prefix(s, msg, sizeof(msg)) ||
		    strlen(msg) > RINX_TB_PREFIX_MAX ||
		    (!by_path && strcmp(msg, prefix))) {
			pr_warn("%s does not describe testbed %s\n", path,
				by_path ? "namespaces" : prefix);
			err = -EINVAL;
			goto out;
		}
		snprintf(prefix, sizeof(prefix), "%s", msg);
	} else if (by_path) {
		err = -errno;
		pr_warn("%s: %s\n", path, strerror(-err));
		return err;
	}
	/* a topology testbed's topology file, written beside its spec */
	if (s && s->topo[0]) {
		char tp[RINX_PATH_MAX + 8];

		topo_path_of(path, tp, sizeof(tp));
		if (!strcmp(tp, s->topo))
			unlink(tp);
	}
	err = teardown(s, prefix, s ? path : NULL, removed);
out:
	free(s);
	return err;
}

/* The spec of testbed `what` (PREFIX or SPEC), its prefix and (path, may be
 * NULL; RINX_PATH_MAX bytes) the spec's file. */
int tb_load(const char *what, struct rinx_spec *s, char *prefix,
	    size_t plen, char *spec_path)
{
	char path[RINX_PATH_MAX], msg[160];
	size_t n = what ? strlen(what) : 0;
	int err;

	if (!n)
		return -EINVAL;
	if (strchr(what, '/') || (n > 5 && !strcmp(what + n - 5, ".spec"))) {
		if (n >= sizeof(path))
			return -ENAMETOOLONG;
		snprintf(path, sizeof(path), "%s", what);
	} else {
		if (rinx_testbed_prefix_check(what, msg, sizeof(msg))) {
			pr_warn("%s\n", msg);
			return -EINVAL;
		}
		rinx_testbed_spec_path(what, path, sizeof(path));
	}
	err = rinx_spec_load(path, s, msg, sizeof(msg));
	if (err) {
		pr_warn("%s: %s\n", path, err == -ENOENT ?
			"no such testbed spec" : msg);
		return err;
	}
	if (rinx_testbed_spec_prefix(s, prefix, plen)) {
		pr_warn("%s is not a testbed spec\n", path);
		return -EINVAL;
	}
	if (spec_path)
		memcpy(spec_path, path, RINX_PATH_MAX);
	return 0;
}
