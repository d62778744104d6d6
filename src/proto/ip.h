/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The IP header a RoCE v2 packet would travel under, rebuilt from its flow,
 * and the 40-byte GRH area a UD receive places before the payload.
 *
 * A user-space endpoint never sees the IP header of a datagram it sends or
 * receives.  Both the ICRC and the GRH need one, so it is rebuilt here, the
 * one place that knows what our sockets put on the wire: IPv4 with IHL 5,
 * ID 0, DF (unconnected sockets with IP_PMTUDISC_DO), protocol UDP; IPv6
 * with next header UDP and no extension headers.
 */
#ifndef SV_PROTO_IP_H
#define SV_PROTO_IP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/addr.h"

#define SV_GRH_BYTES 40
/* The network header type of a RoCE v2 UD completion, as mlx5 reports it
 * in wc.sl (its CQE's l3_hdr_type). */
#define SV_WC_SL_IPV6 1
#define SV_WC_SL_IPV4 2
#define SV_IP_TTL 64 /* what the GRH reports: the received one is unseen */

/* Write the IPv4 (20 bytes) or IPv6 (40 bytes) header of a datagram of
 * `udplen` UDP bytes on `flow` into ip[], with TTL/hop limit `ttl`, the
 * flow's traffic class (TOS) and a zero IPv4 checksum (20 or 40 bytes of
 * room).  Returns its length. */
uint32_t sv_ip_header(uint8_t *ip, const struct sv_flow *flow, uint32_t udplen,
		      uint8_t ttl);

/* The Internet checksum (RFC 1071) of n bytes: what goes in the field, or
 * 0 over a header whose field is already right. */
uint16_t sv_ip_checksum(const uint8_t *p, size_t n);

/* The GRH area of a UD datagram received on `flow` (RoCE v2): the IPv6
 * header, or for IPv4 the IPv4 header (checksum valid) in bytes 20..39,
 * with the traffic class (TOS) the datagram arrived with, as rxe copies
 * the received header. */
void sv_grh_build(uint8_t grh[SV_GRH_BYTES], const struct sv_flow *flow,
		  uint32_t udplen);

/* What a GRH area says, parsed as rdma-core decides its IP version: an IPv4
 * header in its second half with IHL 5 and a valid checksum wins, else a
 * version-6 header is IPv6, else a version-4 one is IPv4. */
struct sv_grh_info {
	struct sv_ipaddr src, dst;
	uint8_t hop_limit; /* TTL for IPv4 */
	uint8_t tclass; /* TOS for IPv4 */
	uint32_t flow_label; /* from the first word, whatever the version */
	uint8_t next_hdr; /* the IP protocol */
};
/* 0, or -1 when it is neither IPv4 nor IPv6. */
int sv_grh_parse(const uint8_t grh[SV_GRH_BYTES], struct sv_grh_info *info);

#endif
