/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Header parsing with a cursor, shared by the rinx XDP programs. */
#ifndef RINX_PARSE_BPF_H
#define RINX_PARSE_BPF_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "uapi/rinx.h"

enum rinx_parse {
	RINX_P_OK,	/* a rinx frame, RINX_BLOCK_VALUES of payload */
	RINX_P_OK_MIN,	/* a rinx frame, RINX_BLOCK_VALUES_MIN of it */
	RINX_P_OK_JUMBO,/* a rinx frame, RINX_BLOCK_VALUES_JUMBO of it: the
			 * payload is reached through bpf/frags.bpf.h */
	RINX_P_OTHER,	/* not ours: pass to the stack */
	RINX_P_SHORT,	/* ours but truncated */
	RINX_P_HDR,	/* ours, the whole header but less payload than a
			 * small block: only a parameter server's frames
			 * that carry no values are (bpf/ps.bpf.h) */
	RINX_P_VERSION,	/* ours but bad magic/version */
};

struct rinx_frame {
	struct ethhdr *eth;
	struct iphdr *ip;
	struct udphdr *udp;
	struct rinx_hdr *h;
	__s32 *v;	/* the payload's values (RINX_P_OK: RINX_BLOCK_VALUES,
			 * RINX_P_OK_MIN: RINX_BLOCK_VALUES_MIN), bounds
			 * already checked; RINX_P_OK_JUMBO: not to be
			 * read (the payload may leave the linear part) */
};

/* Every frame carries a whole block of one of the three sizes: the tail of
 * a short last block is zero. A frame whose whole length (fragments
 * included) holds RINX_BLOCK_BYTES_JUMBO of payload is a jumbo frame; else a
 * linear payload of at least RINX_BLOCK_BYTES is a full-size frame, one of
 * at least RINX_BLOCK_BYTES_MIN a small one; the caller goes on with code
 * built for that size (a constant), so every payload access stays
 * constant-bounded for the verifier after one range check. The headers are
 * read in the linear part, which holds them in any frame a driver builds. */
static __always_inline int rinx_parse(struct xdp_md *ctx, __u16 port_be,
				      struct rinx_frame *f)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	void *cur = data;

	f->eth = cur;
	if ((void *)(f->eth + 1) > data_end)
		return RINX_P_OTHER;
	if (f->eth->h_proto != bpf_htons(ETH_P_IP))
		return RINX_P_OTHER;
	cur = f->eth + 1;
	f->ip = cur;
	if ((void *)(f->ip + 1) > data_end)
		return RINX_P_OTHER;
	/* Options or fragments are never produced by rinx senders. */
	if (f->ip->protocol != IPPROTO_UDP)
		return RINX_P_OTHER;
	cur = f->ip + 1;
	f->udp = cur;
	if ((void *)(f->udp + 1) > data_end)
		return RINX_P_OTHER;
	if (f->udp->dest != port_be)
		return RINX_P_OTHER;
	if (f->ip->ihl != 5 || (f->ip->frag_off & bpf_htons(0x3fff)))
		return RINX_P_SHORT;
	cur = f->udp + 1;
	f->h = cur;
	if ((void *)(f->h + 1) > data_end)
		return RINX_P_SHORT;
	if (f->h->magic != bpf_htonl(RINX_MAGIC) ||
	    f->h->version != RINX_VERSION)
		return RINX_P_VERSION;
	cur = f->h + 1;
	f->v = cur;
	if (bpf_xdp_get_buff_len(ctx) >= RINX_FRAME_LEN(RINX_BLOCK_VALUES_JUMBO))
		return RINX_P_OK_JUMBO;
	if (cur + RINX_BLOCK_BYTES <= data_end)
		return RINX_P_OK;
	if (cur + RINX_BLOCK_BYTES_MIN <= data_end)
		return RINX_P_OK_MIN;
	return RINX_P_HDR;
}

static __always_inline void rinx_csum_ip(struct iphdr *ip)
{
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;
	int i;

	ip->check = 0;
#pragma unroll
	for (i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip->check = ~sum & 0xffff;
}

#endif
