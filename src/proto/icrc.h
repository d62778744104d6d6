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
bool sv_icrc_check(const struct sv_flow *flow, const uint8_t *pkt,
		   uint32_t len);

#endif
