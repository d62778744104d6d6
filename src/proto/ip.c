/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * IP headers rebuilt from a flow, and the GRH area of UD receives
 * (proto/ip.h says why both exist and which values they carry).
 */
#include "proto/ip.h"

#include <netinet/in.h>
#include <string.h>

#include "proto/wire.h"

static void ip4_header(uint8_t ip[20], const struct sv_flow *flow,
		       uint32_t udplen, uint8_t ttl)
{
	memset(ip, 0, 20);
	ip[0] = 0x45; /* version 4, IHL 5: no options */
	ip[1] = flow->tclass; /* TOS */
	sv_store_be16(ip + 2, 20 + udplen); /* total length */
	sv_store_be16(ip + 6, 0x4000); /* ID 0; DF, offset 0 */
	ip[8] = ttl;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, flow->src.addr, 4);
	memcpy(ip + 16, flow->dst.addr, 4);
}

static void ip6_header(uint8_t ip[40], const struct sv_flow *flow,
		       uint32_t udplen, uint8_t ttl)
{
	memset(ip, 0, 40);
	/* version 6, the traffic class, flow label 0 */
	ip[0] = (uint8_t)(0x60 | flow->tclass >> 4);
	ip[1] = (uint8_t)(flow->tclass << 4);
	sv_store_be16(ip + 4, udplen); /* payload length */
	ip[6] = IPPROTO_UDP; /* next header */
	ip[7] = ttl; /* hop limit */
	memcpy(ip + 8, flow->src.addr, 16);
	memcpy(ip + 24, flow->dst.addr, 16);
}

uint32_t sv_ip_header(uint8_t *ip, const struct sv_flow *flow, uint32_t udplen,
		      uint8_t ttl)
{
	if (flow->src.family == AF_INET) {
		ip4_header(ip, flow, udplen, ttl);
		return 20;
	}
	ip6_header(ip, flow, udplen, ttl);
	return 40;
}

uint16_t sv_ip_checksum(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

void sv_grh_build(uint8_t grh[SV_GRH_BYTES], const struct sv_flow *flow,
		  uint32_t udplen)
{
	if (flow->src.family == AF_INET) {
		uint8_t *ip = grh + 20;

		/* The IPv4 header alone (gcc -O3 would see the IPv6 one
		 * written past the GRH through sv_ip_header). */
		memset(grh, 0, 20);
		ip4_header(ip, flow, udplen, SV_IP_TTL);
		sv_store_be16(ip + 10, sv_ip_checksum(ip, 20));
	} else {
		ip6_header(grh, flow, udplen, SV_IP_TTL);
	}
}

int sv_grh_parse(const uint8_t grh[SV_GRH_BYTES], struct sv_grh_info *info)
{
	const uint8_t *ip4 = grh + 20;
	uint32_t first = (uint32_t)sv_load_be32(grh);
	bool v4 = (ip4[0] >> 4) == 4;

	memset(info, 0, sizeof(*info));
	info->flow_label = first & 0xfffff;
	if ((v4 && (ip4[0] & 0xf) == 5 && sv_ip_checksum(ip4, 20) == 0) ||
	    (v4 && (first >> 28) != 6)) {
		info->src.family = info->dst.family = AF_INET;
		memcpy(info->src.addr, ip4 + 12, 4);
		memcpy(info->dst.addr, ip4 + 16, 4);
		info->hop_limit = ip4[8];
		info->tclass = ip4[1];
		info->next_hdr = ip4[9];
		return 0;
	}
	if ((first >> 28) != 6)
		return -1;
	info->src.family = info->dst.family = AF_INET6;
	memcpy(info->src.addr, grh + 8, 16);
	memcpy(info->dst.addr, grh + 24, 16);
	info->hop_limit = grh[7];
	info->tclass = (uint8_t)(first >> 20);
	info->next_hdr = grh[6];
	return 0;
}
