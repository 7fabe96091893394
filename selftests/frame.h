/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Frames for the BPF tests: a full-size rinx frame (Ethernet, IPv4 with its
 * checksum, UDP, the header's magic and version) from one node to another;
 * the test fills in the rest of the header and the payload.
 */
#ifndef RINX_TEST_FRAME_H
#define RINX_TEST_FRAME_H

#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include "uapi/rinx.h"
#include "user/ctl.h"

#define TF_OFF_IP	14
#define TF_OFF_UDP	34
#define TF_OFF_HDR	42

static inline void put16(__u8 *p, __u16 v) { p[0] = v >> 8; p[1] = v; }

static inline __u16 csum16(const void *p, int len)
{
	const __u8 *b = p;
	__u32 sum = 0;
	int i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)b[i] << 8 | b[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static inline void ip_fix_csum(__u8 *ip)
{
	put16(ip + 10, 0);
	put16(ip + 10, csum16(ip, 20));
}

/* Zeroes the RINX_FRAME_MAX bytes of f and addresses them from src to dst
 * (Ethernet to dst_mac), IPv4 TOS tos, UDP port port both ways; returns
 * the rinx header, magic and version set. */
static inline struct rinx_hdr *tf_frame(__u8 *f, const __u8 *dst_mac,
					const struct rinx_node *src,
					const struct rinx_node *dst,
					__u8 tos, __u16 port)
{
	__u8 *ip = f + TF_OFF_IP, *udp = f + TF_OFF_UDP;
	struct rinx_hdr *h = (struct rinx_hdr *)(f + TF_OFF_HDR);

	memset(f, 0, RINX_FRAME_MAX);
	memcpy(f, dst_mac, 6);
	memcpy(f + 6, src->mac, 6);
	put16(f + 12, ETH_P_IP);
	ip[0] = 0x45;
	ip[1] = tos;
	put16(ip + 2, RINX_FRAME_MAX - TF_OFF_IP);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &src->ip, 4);
	memcpy(ip + 16, &dst->ip, 4);
	ip_fix_csum(ip);
	put16(udp, port);
	put16(udp + 2, port);
	put16(udp + 4, RINX_FRAME_MAX - TF_OFF_UDP);
	h->magic = htonl(RINX_MAGIC);
	h->version = RINX_VERSION;
	return h;
}

#endif
