/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RoCE v2 invariant CRC (IBA Annex A17.3.3).  icrc.c says exactly what
 * it covers and how a user-space endpoint rebuilds the IP header it cannot
 * see.
 */
#ifndef SV_PROTO_ICRC_H
#define SV_PROTO_ICRC_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/addr.h"

/* ICRC of a packet of `len` bytes (ICRC included; the last 4 bytes are
 * not read), over the IP and UDP headers the flow implies. */
uint32_t sv_icrc_compute(const struct sv_flow *flow, const uint8_t *pkt,
			 uint32_t len);
/* The same over a real IPv4 (20 bytes) or IPv6 (40 bytes) header and UDP
 * header, masking the variant fields itself. */
uint32_t sv_icrc_raw(const uint8_t *ip, uint32_t iplen, const uint8_t *udp,
		     const uint8_t *pkt, uint32_t len);
void sv_icrc_set(const struct sv_flow *flow, uint8_t *pkt, uint32_t len);
/* An IPv4 packet whose ICRC holds for IPv4 ID `from` (sv_icrc_set: 0) gets
 * the ICRC for ID `to`: a UDP_SEGMENT send's segments leave with IDs 0, 1,
 * 2... (link/udp.c), and a NIC checks each one's ICRC with its own. */
void sv_icrc_move_ip_id(uint8_t *pkt, uint32_t len, uint16_t from, uint16_t to);
/* A packet whose sender left its check to the UDP checksum (wire.h,
 * SV_BTH_ICRC_BY_UDP): the bit in its BTH and a zero ICRC.  Whether to
 * accept one is the receiver's choice (engine/transport/recv.c). */
bool sv_icrc_left_to_udp(const uint8_t *pkt, uint32_t len);
/* How a received packet's ICRC matched (SV_ICRC_BAD is 0: false). */
enum sv_icrc_match {
	SV_ICRC_BAD = 0,
	SV_ICRC_EXACT, /* over the header rebuilt from the flow (ID 0) */
	SV_ICRC_SOLVED, /* IPv4, over the same header with another ID */
};
/* A socket does not show the IPv4 Identification, which the ICRC covers
 * and which a peer other than softverbs (rxe, a NIC) varies per packet.
 * When the ICRC does not match with ID 0, the ID that makes it match is
 * solved for (icrc.c): *ip_id, if not NULL, receives it.  That accepts a
 * corrupted packet with probability 2^-16 instead of 2^-32. */
enum sv_icrc_match sv_icrc_check(const struct sv_flow *flow, const uint8_t *pkt,
				 uint32_t len, uint16_t *ip_id);

#endif
