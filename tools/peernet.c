// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The peers' bridge network (`rinxctl compare --peer-net bridge`).
 *
 * Why: the testbed's switches and hosts are XDP programs on veth, and when
 * an XDP program is attached to a veth the kernel takes software GSO (TSO)
 * away from its peer, so TCP through the testbed sends MTU-sized segments
 * one by one. TCP peers (Open MPI, Gloo) deserve the network they would
 * get on a plain Linux box: veth pairs into kernel bridges, no XDP, GSO on.
 *
 * Layout, mirroring testbed <P> (tools/testbed/testbed.h) under base B = <P>-b<pid>
 * ('-' cannot occur in a testbed prefix, so no testbed owns these names):
 *
 *   B sp  br0 { t0, t1, ... }            spine, only when racks > 1
 *   B t<r> br0 { p<i> ..., uplink }       one per rack (the ToR)
 *   B h<i> <ifname>                      hosts: the spec's MAC, IP/16, MTU
 *
 * Ports with a rate get `tbf rate R burst 64K+MTU limit <buffer>` as root
 * qdisc: the frames the bridge sends out of the port (towards the host, or
 * along the uplink) queue at R and are tail-dropped beyond the buffer, as
 * the testbed switch's virtual queue drops them. Ports with a mark threshold
 * also get a tc egress program (tools/peers/ecn_mark.bpf.c) that marks CE
 * by the testbed's rule, as this kernel has no marking qdisc.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "tools/peernet.h"

#define PN_TAG	"-b"	/* between the testbed prefix and the pid */

/* Runs the batch (ip or tc) and empties the buffer; force: go on past
 * failing lines (teardown). */
static int run_buf(const char *prog, const char *ns, struct rinx_tb_buf *b,
		   int force)
{
	int err = rinx_tb_batch(prog, ns, b, force ? RINX_TB_FORCE : 0);

	rinx_tb_free(b);
	return err;
}

static void fmt_mac(char *buf, const __u8 *m)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
		 m[3], m[4], m[5]);
}

/* Writes a sysctl of the namespace we are in (/proc/sys/net follows the
 * calling thread's namespace). */
static int put_sysctl(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		err = -errno;
	close(fd);
	return err;
}

static int get_sysctl(const char *ns, const char *path, char *val,
		      size_t len)
{
	int old, fd, err;
	ssize_t n;

	err = rinx_netns_enter(ns, &old);
	if (err)
		return err;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, val, len - 1);
	err = n < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	rinx_netns_leave(old);
	if (err)
		return err;
	val[n] = 0;
	val[strcspn(val, "\n")] = 0;
	return 0;
}

/* The MTU of ifname in ns, or -errno. */
static int get_mtu(const char *ns, const char *ifname)
{
	struct ifreq ifr = {};
	int old, sock, err;

	err = rinx_netns_enter(ns, &old);
	if (err)
		return err;
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (sock < 0 || ioctl(sock, SIOCGIFMTU, &ifr))
		err = -errno;
	if (sock >= 0)
		close(sock);
	rinx_netns_leave(old);
	return err ? err : ifr.ifr_mtu;
}

int peernet_tso(const char *ns, const char *ifname)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_GTSO };
	struct ifreq ifr = {};
	int old, sock, err;

	err = rinx_netns_enter(ns, &old);
	if (err)
		return err;
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ev;
	if (sock < 0 || ioctl(sock, SIOCETHTOOL, &ifr))
		err = -errno;
	if (sock >= 0)
		close(sock);
	rinx_netns_leave(old);
	return err ? err : !!ev.data;
}

int peernet_tx(const char *ns, const char *ifname, __u64 *bytes,
	       __u64 *packets)
{
	unsigned long long v[10];
	char line[512], name[IFNAMSIZ + 2];
	int old, err, found = 0;
	FILE *f;

	err = rinx_netns_enter(ns, &old);
	if (err)
		return err;
	/* /proc/net is /proc/self/net: the namespace of the caller */
	f = fopen("/proc/net/dev", "re");
	err = f ? 0 : -errno;
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *p = line;

		if (!colon)
			continue;
		*colon = 0;
		while (*p == ' ')
			p++;
		snprintf(name, sizeof(name), "%s", p);
		if (strcmp(name, ifname))
			continue;
		/* rx: bytes packets errs drop fifo frame compressed multicast;
		 * tx: bytes packets ... */
		if (sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu "
			   "%llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
			   &v[5], &v[6], &v[7], &v[8], &v[9]) == 10) {
			*bytes = v[8];
			*packets = v[9];
			found = 1;
		}
		break;
	}
	if (f)
		fclose(f);
	rinx_netns_leave(old);
	if (err)
		return err;
	return found ? 0 : -ENODEV;
}

int peernet_ce(const char *ns, __u64 *ce)
{
	char names[4096], vals[4096];
	int old, err, found = 0;
	FILE *f;

	err = rinx_netns_enter(ns, &old);
	if (err)
		return err;
	f = fopen("/proc/net/netstat", "re");
	err = f ? 0 : -errno;
	/* pairs of lines: "IpExt: name name ...", "IpExt: value value ..." */
	while (f && fgets(names, sizeof(names), f) &&
	       fgets(vals, sizeof(vals), f)) {
		char *sn = NULL, *sv = NULL, *n, *v;

		if (strncmp(names, "IpExt:", 6))
			continue;
		n = strtok_r(names, " \n", &sn);
		v = strtok_r(vals, " \n", &sv);
		while ((n = strtok_r(NULL, " \n", &sn)) &&
		       (v = strtok_r(NULL, " \n", &sv)))
			if (!strcmp(n, "InCEPkts")) {
				*ce = strtoull(v, NULL, 10);
				found = 1;
			}
		break;
	}
	if (f)
		fclose(f);
	rinx_netns_leave(old);
	if (err)
		return err;
	return found ? 0 : -ENOENT;
}

static int ns_exists(const char *name)
{
	char path[RINX_PATH_MAX];

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	return !access(path, F_OK);
}

static void host_ns(const struct peernet *pn, int i, char *buf)
{
	snprintf(buf, RINX_NAME_MAX, "%sh%d", pn->base, i);
}

/* The index of switch `name` ("t<r>", "sp") in pn, or -1. */
static int sw_index(const struct peernet *pn, const char *name)
{
	int i;

	for (i = 0; i < pn->nsw; i++)
		if (!strcmp(pn->sw_name[i], name))
			return i;
	return -1;
}

int peernet_down(struct peernet *pn)
{
	struct rinx_tb_buf b = {};
	char ns[RINX_NAME_MAX];
	int i, err;

	if (!pn->made)
		return 0;
	for (i = 0; i < pn->spec.nhosts; i++) {
		host_ns(pn, i, ns);
		if (ns_exists(ns))
			rinx_tb_put(&b, "netns del %s\n", ns);
	}
	for (i = 0; i < pn->nsw; i++)
		if (ns_exists(pn->sw_ns[i]))
			rinx_tb_put(&b, "netns del %s\n", pn->sw_ns[i]);
	err = b.len || b.err ? run_buf("ip", NULL, &b, 1) : 0;
	pn->made = 0;
	return err;
}

/* Is name B h<n> / B t<n> / B sp with B = <prefix>-b<pid>? Returns pid. */
static long pn_owner(const char *name)
{
	const char *t = strstr(name, PN_TAG), *p;
	char *end;
	long pid;

	if (!t || t == name)
		return -1;
	pid = strtol(t + strlen(PN_TAG), &end, 10);
	if (end == t + strlen(PN_TAG) || pid <= 0)
		return -1;
	if (!strcmp(end, "sp"))
		return pid;
	if ((*end != 'h' && *end != 't') || !isdigit((unsigned char)end[1]))
		return -1;
	for (p = end + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	return pid;
}

int peernet_reap(void)
{
	struct rinx_tb_buf b = {};
	struct dirent *e;
	DIR *d = opendir("/run/netns");
	int n = 0;
	long pid;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		pid = pn_owner(e->d_name);
		if (pid <= 0 || !(kill(pid, 0) && errno == ESRCH))
			continue;
		rinx_tb_put(&b, "netns del %s\n", e->d_name);
		n++;
	}
	closedir(d);
	if (n)
		run_buf("ip", NULL, &b, 1);
	else
		free(b.p);
	return n;
}

static int bad(char *err, size_t len, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return code;
}

/* Bridge ports of switch k: the name of ToR rack r's port towards host i
 * is p<i> (global host index), its uplink "uplink"; the spine's port
 * towards rack r is t<r> (as in the testbed). */
static int make_switches(struct peernet *pn, char *err, size_t errlen)
{
	const struct rinx_spec *s = &pn->spec;
	struct rinx_tb_buf b = {};
	int k, i, ret;

	for (k = 0; k < pn->nsw; k++) {
		/* a plain L2 switch: no netfilter on bridged frames, no STP */
		rinx_tb_put(&b, "link set lo up\n"
		     "link add br0 type bridge stp_state 0 nf_call_iptables 0 "
		     "nf_call_ip6tables 0 nf_call_arptables 0\n");
		if (!strcmp(pn->sw_name[k], "sp")) {
			for (i = 0; i < s->nracks; i++)
				rinx_tb_put(&b, "link set t%d master br0\n"
				     "link set t%d up\n", s->racks[i].id,
				     s->racks[i].id);
		} else {
			int r = atoi(pn->sw_name[k] + 1);

			for (i = 0; i < s->nhosts; i++)
				if (s->hosts[i].rack == r)
					rinx_tb_put(&b, "link set p%d master br0\n"
					     "link set p%d up\n", i, i);
			if (sw_index(pn, "sp") >= 0)
				rinx_tb_put(&b, "link set uplink master br0\n"
				     "link set uplink up\n");
		}
		rinx_tb_put(&b, "link set br0 up\n");
		ret = run_buf("ip", pn->sw_ns[k], &b, 0);
		if (ret)
			return bad(err, errlen, ret, "bridge in %s failed",
				   pn->sw_ns[k]);
	}
	return 0;
}

static int make_hosts(struct peernet *pn, const struct rinx_spec *tb,
		      char *err, size_t errlen)
{
	const struct rinx_spec *s = &pn->spec;
	char ip[INET_ADDRSTRLEN], mac[18], ecn[16] = "";
	struct rinx_tb_buf b = {};
	int i, j, ret, old;

	/* the hosts' TCP as in the testbed (it may ask for ECN) */
	if (get_sysctl(tb->hosts[0].netns, "/proc/sys/net/ipv4/tcp_ecn", ecn,
		       sizeof(ecn)))
		ecn[0] = 0;
	for (i = 0; i < s->nhosts; i++) {
		const struct rinx_spec_host *h = &s->hosts[i];

		inet_ntop(AF_INET, &h->ip, ip, sizeof(ip));
		rinx_tb_put(&b, "link set lo up\nlink set dev %s up\n"
		     "addr add %s/16 dev %s\n", h->ifname, ip, h->ifname);
		for (j = 0; j < s->nhosts; j++) {
			if (j == i)
				continue;
			inet_ntop(AF_INET, &s->hosts[j].ip, ip, sizeof(ip));
			fmt_mac(mac, s->hosts[j].mac);
			rinx_tb_put(&b, "neigh replace %s lladdr %s nud permanent "
			     "dev %s\n", ip, mac, h->ifname);
		}
		ret = run_buf("ip", h->netns, &b, 0);
		if (ret)
			return bad(err, errlen, ret, "host %s failed",
				   h->netns);
		/* nothing but the job on the wire, as in the testbed */
		ret = rinx_netns_enter(h->netns, &old);
		if (ret)
			return bad(err, errlen, ret, "cannot enter %s",
				   h->netns);
		put_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
		put_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
		if (ecn[0])
			put_sysctl("/proc/sys/net/ipv4/tcp_ecn", ecn);
		rinx_netns_leave(old);
	}
	return 0;
}

/*
 * tbf: the token bucket holds one GSO superpacket (64 KiB) and a frame, so
 * that tbf never has to split a GSO packet (it would, were the packet
 * larger than the bucket) and GSO survives the shaping; the queue behind it
 * holds the port's buffer in bytes.
 */
static int shape(struct peernet *pn, const struct pn_port *ports, int n,
		 char *err, size_t errlen)
{
	unsigned int burst = 65536 + pn->mtu + 14;
	struct rinx_tb_buf b = {};
	int k, i, ret, any;

	for (k = 0; k < pn->nsw; k++) {
		any = 0;
		for (i = 0; i < n; i++) {
			const struct pn_port *p = &ports[i];

			if (strcmp(p->sw, pn->sw_name[k]) || !p->rate_mbit)
				continue;
			rinx_tb_put(&b, "qdisc replace dev %s root handle 1: tbf rate "
			     "%umbit burst %u limit %u\n", p->ifname,
			     p->rate_mbit, burst, p->buffer ? p->buffer : burst);
			if (p->mark_obj[0]) {
				rinx_tb_put(&b, "qdisc add dev %s clsact\n"
				     "filter add dev %s egress bpf "
				     "direct-action obj %s sec tc\n",
				     p->ifname, p->ifname, p->mark_obj);
				pn->nmarking++;
			}
			any++;
		}
		if (!any)
			continue;
		ret = run_buf("tc", pn->sw_ns[k], &b, 0);
		if (ret)
			return bad(err, errlen, ret, "tc in %s failed",
				   pn->sw_ns[k]);
		pn->nshaped += any;
	}
	return 0;
}

int peernet_up(struct peernet *pn, const struct rinx_spec *s,
	       const struct pn_port *ports, int nports, char *err,
	       size_t errlen)
{
	char prefix[RINX_NAME_MAX], ns[RINX_NAME_MAX], mac[18];
	struct rinx_tb_buf b = {};
	int i, k, ret;

	memset(pn, 0, sizeof(*pn));
	if (s->nhosts < 1 || s->nracks < 1)
		return bad(err, errlen, -EINVAL, "no hosts");
	if (rinx_testbed_spec_prefix(s, prefix, sizeof(prefix)))
		snprintf(prefix, sizeof(prefix), "rinx");
	snprintf(pn->base, sizeof(pn->base), "%s" PN_TAG "%d", prefix,
		 (int)getpid());
	pn->spec = *s;
	ret = get_mtu(s->hosts[0].netns, s->hosts[0].ifname);
	pn->mtu = ret > 0 ? ret : RINX_TB_MTU;
	for (i = 0; i < s->nracks; i++) {
		if (s->racks[i].id < 0 || pn->nsw >= PN_MAX_SW - 1)
			return bad(err, errlen, -EINVAL, "too many racks");
		snprintf(pn->sw_name[pn->nsw], sizeof(pn->sw_name[0]), "t%d",
			 s->racks[i].id);
		pn->nsw++;
	}
	if (s->nracks > 1)
		snprintf(pn->sw_name[pn->nsw++], sizeof(pn->sw_name[0]), "sp");
	for (k = 0; k < pn->nsw; k++)
		snprintf(pn->sw_ns[k], sizeof(pn->sw_ns[0]), "%s%s", pn->base,
			 pn->sw_name[k]);
	for (i = 0; i < s->nhosts; i++) {
		host_ns(pn, i, ns);
		snprintf(pn->spec.hosts[i].netns,
			 sizeof(pn->spec.hosts[i].netns), "%s", ns);
	}
	for (i = 0; i < s->nhosts + pn->nsw; i++) {
		const char *name = i < s->nhosts ? pn->spec.hosts[i].netns :
						   pn->sw_ns[i - s->nhosts];

		if (ns_exists(name))
			return bad(err, errlen, -EEXIST, "namespace %s exists",
				   name);
		rinx_tb_put(&b, "netns add %s\n", name);
	}
	pn->made = 1;
	ret = run_buf("ip", NULL, &b, 0);
	if (ret) {
		bad(err, errlen, ret, "cannot add the namespaces");
		goto fail;
	}
	for (i = 0; i < s->nhosts; i++) {
		const struct rinx_spec_host *h = &pn->spec.hosts[i];
		char tor[8];

		snprintf(tor, sizeof(tor), "t%d", h->rack);
		k = sw_index(pn, tor);
		if (k < 0) {
			ret = bad(err, errlen, -EINVAL, "host %s: rack %d not "
				  "declared", h->name, h->rack);
			goto fail;
		}
		fmt_mac(mac, h->mac);
		rinx_tb_put(&b, "link add %s netns %s address %s mtu %d type veth "
		     "peer name p%d netns %s mtu %d\n", h->ifname, h->netns,
		     mac, pn->mtu, i, pn->sw_ns[k], pn->mtu);
	}
	k = sw_index(pn, "sp");
	for (i = 0; k >= 0 && i < s->nracks; i++)
		rinx_tb_put(&b, "link add uplink netns %s%s%d mtu %d type veth peer "
		     "name t%d netns %s mtu %d\n", pn->base, "t",
		     s->racks[i].id, pn->mtu, s->racks[i].id, pn->sw_ns[k],
		     pn->mtu);
	ret = run_buf("ip", NULL, &b, 0);
	if (ret) {
		bad(err, errlen, ret, "cannot add the veth pairs");
		goto fail;
	}
	ret = make_switches(pn, err, errlen);
	if (!ret)
		ret = make_hosts(pn, s, err, errlen);
	if (!ret)
		ret = shape(pn, ports, nports, err, errlen);
	if (!ret)
		return 0;
fail:
	peernet_down(pn);
	return ret;
}
