/*
 * The RoCE v2 invariant CRC.
 *
 * Coverage (IBA Annex A17.3.3): the CRC-32 (util/crc32.c) of
 *   8 bytes of 0xff (the masked LRH of IB)
 *   + the IP header with its variant fields set to all ones
 *     (IPv4: TOS, TTL, header checksum; IPv6: traffic class, flow label,
 *     hop limit)
 *   + the UDP header with the checksum set to all ones
 *   + the BTH with byte 4 (FECN, BECN, reserved) set to all ones
 *   + the rest of the packet (extension headers, payload, pad),
 * transmitted least significant byte first (like the Ethernet FCS).
 * A user-space receiver cannot see the IP header, so both ends rebuild it
 * from the flow (proto/ip.c says with which values).
 */
#include "proto/icrc.h"

#include <endian.h>
#include <string.h>

#include "proto/ip.h"
#include "proto/wire.h"
#include "util/crc32.h"

uint32_t sv_icrc_raw(const uint8_t *ip, uint32_t iplen, const uint8_t *udp,
		     const uint8_t *pkt, uint32_t len)
{
	uint8_t ph[8 + 40 + 8 + SV_BTH_BYTES];
	size_t n;
	uint32_t crc;

	if (iplen != 20 && iplen != 40)
		return 0;
	memset(ph, 0xff, 8); /* masked LRH */
	n = 8;
	memcpy(ph + n, ip, iplen);
	if (iplen == 20) {
		ph[n + 1] = 0xff; /* TOS */
		ph[n + 8] = 0xff; /* TTL */
		ph[n + 10] = ph[n + 11] = 0xff; /* header checksum */
	} else {
		ph[n] |= 0x0f; /* traffic class, */
		ph[n + 1] = ph[n + 2] = ph[n + 3] = 0xff; /* flow label */
		ph[n + 7] = 0xff; /* hop limit */
	}
	n += iplen;
	memcpy(ph + n, udp, 8);
	ph[n + 6] = ph[n + 7] = 0xff; /* UDP checksum */
	n += 8;
	memcpy(ph + n, pkt, SV_BTH_BYTES);
	ph[n + 4] = 0xff; /* FECN, BECN, resv6a */
	n += SV_BTH_BYTES;

	crc = sv_crc32(0, ph, n);
	return sv_crc32(crc, pkt + SV_BTH_BYTES,
			len - SV_BTH_BYTES - SV_ICRC_BYTES);
}

uint32_t sv_icrc_compute(const struct sv_flow *flow, const uint8_t *pkt,
			 uint32_t len)
{
	uint8_t ip[40], udp[8];
	uint32_t udplen = 8 + len;
	uint32_t iplen = sv_ip_header(ip, flow, udplen, 0);

	sv_store_be16(udp, flow->sport);
	sv_store_be16(udp + 2, flow->dport);
	sv_store_be16(udp + 4, udplen);
	sv_store_be16(udp + 6, 0);
	return sv_icrc_raw(ip, iplen, udp, pkt, len);
}

void sv_icrc_set(const struct sv_flow *flow, uint8_t *pkt, uint32_t len)
{
	uint32_t crc = htole32(sv_icrc_compute(flow, pkt, len));

	memcpy(pkt + len - SV_ICRC_BYTES, &crc, 4);
}

bool sv_icrc_check(const struct sv_flow *flow, const uint8_t *pkt, uint32_t len)
{
	uint32_t got;

	if (len < SV_BTH_BYTES + SV_ICRC_BYTES)
		return false;
	memcpy(&got, pkt + len - SV_ICRC_BYTES, 4);
	return le32toh(got) == sv_icrc_compute(flow, pkt, len);
}
