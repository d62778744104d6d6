/*
 * The opcode table, the packet parser and the RoCE v2 invariant CRC.
 *
 * ICRC coverage (RoCE v2, IBA Annex A17): the CRC-32 of
 *   8 bytes of 0xff (the masked LRH of IB)
 *   + the IP header with its variant fields set to all ones
 *     (IPv4: TOS, TTL, header checksum; IPv6: traffic class, flow label,
 *     hop limit)
 *   + the UDP header with the checksum set to all ones
 *   + the BTH with byte 4 (FECN, BECN, reserved) set to all ones
 *   + the rest of the packet (extension headers, payload, pad),
 * transmitted least significant byte first (like the Ethernet FCS).
 * We send from unconnected UDP sockets with DF set, so the kernel puts
 * IPv4 ID 0 and flags DF in the header; a user-space receiver cannot see
 * the IP header, so both ends rebuild it from the flow (addresses, ports,
 * lengths) with exactly those values: IPv4 version/IHL 0x45, ID 0, flags DF,
 * no options, protocol UDP; IPv6 next header UDP, no extension headers.
 */
#include "engine/wire.h"

#include <zlib.h>

/* ---- the opcode table ---------------------------------------------------- */

/* Whether a header is present, and its size if so. */
#define SV_HAS(m, k) (((m) >> SV_HDR_##k) & 1u)
#define SV_SZ(m, k) (SV_HAS(m, k) * SV_##k##_BYTES)
/* Offset where header k sits (headers come in enum order). */
#define SV_OFF_DETH(m) SV_BTH_BYTES
#define SV_OFF_XRCETH(m) (SV_OFF_DETH(m) + SV_SZ(m, DETH))
#define SV_OFF_RETH(m) (SV_OFF_XRCETH(m) + SV_SZ(m, XRCETH))
#define SV_OFF_ATMETH(m) (SV_OFF_RETH(m) + SV_SZ(m, RETH))
#define SV_OFF_AETH(m) (SV_OFF_ATMETH(m) + SV_SZ(m, ATMETH))
#define SV_OFF_ATMACK(m) (SV_OFF_AETH(m) + SV_SZ(m, AETH))
#define SV_OFF_IMMDT(m) (SV_OFF_ATMACK(m) + SV_SZ(m, ATMACK))
#define SV_OFF_IETH(m) (SV_OFF_IMMDT(m) + SV_SZ(m, IMMDT))
#define SV_LEN(m) (SV_OFF_IETH(m) + SV_SZ(m, IETH))
#define SV_OFFSET(m, k) (SV_HAS(m, k) ? SV_OFF_##k(m) : 0)

const struct sv_opinfo sv_opinfo[256] = {
#define X(val, nm, m) \
	[val] = {                                                     \
		.name = #nm,                                          \
		.mask = (m) | SV_M_BTH,                               \
		.length = SV_LEN(m),                                  \
		.offset = {                                           \
			[SV_HDR_BTH] = 0,                             \
			[SV_HDR_DETH] = SV_OFFSET(m, DETH),           \
			[SV_HDR_XRCETH] = SV_OFFSET(m, XRCETH),       \
			[SV_HDR_RETH] = SV_OFFSET(m, RETH),           \
			[SV_HDR_ATMETH] = SV_OFFSET(m, ATMETH),       \
			[SV_HDR_AETH] = SV_OFFSET(m, AETH),           \
			[SV_HDR_ATMACK] = SV_OFFSET(m, ATMACK),       \
			[SV_HDR_IMMDT] = SV_OFFSET(m, IMMDT),         \
			[SV_HDR_IETH] = SV_OFFSET(m, IETH),           \
		},                                                    \
	},
	SV_OPCODES(X)
#undef X
};

const char *const sv_hdr_names[SV_NUM_HDRS] = {
#define X(name, size) [SV_HDR_##name] = #name,
	SV_HEADERS(X)
#undef X
};

const uint8_t sv_hdr_sizes[SV_NUM_HDRS] = {
#define X(name, size) [SV_HDR_##name] = size,
	SV_HEADERS(X)
#undef X
};

/* ---- parser -------------------------------------------------------------- */

enum sv_pkt_err sv_pkt_parse(struct sv_pkt *pkt, uint8_t *buf, uint32_t len)
{
	const struct sv_opinfo *info;
	uint32_t body;

	if (len < SV_BTH_BYTES + SV_ICRC_BYTES)
		return SV_PKT_SHORT;
	/* IBA: every packet is a whole number of 4-byte words. */
	if (len & 3)
		return SV_PKT_ALIGN;
	info = &sv_opinfo[sv_bth_opcode(buf)];
	if (!info->name)
		return SV_PKT_OPCODE;
	/* IBA: a transport header version we do not know is dropped. */
	if (sv_bth_tver(buf) != 0)
		return SV_PKT_TVER;
	if (len < (uint32_t)info->length + SV_ICRC_BYTES)
		return SV_PKT_SHORT;

	pkt->hdr = buf;
	pkt->len = len;
	pkt->info = info;
	pkt->mask = info->mask;
	pkt->opcode = sv_bth_opcode(buf);
	pkt->pad = sv_bth_pad(buf);
	pkt->qpn = sv_bth_qpn(buf);
	pkt->psn = sv_bth_psn(buf);

	body = len - info->length - SV_ICRC_BYTES; /* payload + pad */
	if (!(info->mask & SV_M_PAYLOAD)) {
		if (pkt->pad)
			return SV_PKT_PAD;
		if (body)
			return SV_PKT_PAYLOAD;
	}
	if (body < pkt->pad)
		return SV_PKT_SHORT;
	if (body - pkt->pad > SV_MAX_PMTU)
		return SV_PKT_LONG;
	pkt->payload = buf + info->length;
	pkt->paylen = body - pkt->pad;
	return SV_PKT_OK;
}

/* ---- ICRC ------------------------------------------------------------------ */

uint32_t sv_icrc_raw(const uint8_t *ip, uint32_t iplen, const uint8_t *udp,
		     const uint8_t *pkt, uint32_t len)
{
	uint8_t ph[8 + 40 + 8 + SV_BTH_BYTES];
	size_t n;
	uLong crc;

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

	crc = crc32(0, ph, (uInt)n);
	crc = crc32(crc, pkt + SV_BTH_BYTES,
		    len - SV_BTH_BYTES - SV_ICRC_BYTES);
	return (uint32_t)crc;
}

uint32_t sv_icrc_compute(const struct sv_flow *flow, const uint8_t *pkt,
			 uint32_t len)
{
	uint8_t ip[40], udp[8];
	uint32_t udplen = 8 + len;
	uint32_t iplen;

	if (flow->src.family == AF_INET) {
		iplen = 20;
		ip[0] = 0x45;
		ip[1] = 0;
		sv_store_be16(ip + 2, 20 + udplen); /* total length */
		sv_store_be16(ip + 4, 0); /* ID */
		sv_store_be16(ip + 6, 0x4000); /* DF, offset 0 */
		ip[8] = 0;
		ip[9] = 17; /* UDP */
		ip[10] = ip[11] = 0;
		memcpy(ip + 12, flow->src.addr, 4);
		memcpy(ip + 16, flow->dst.addr, 4);
	} else {
		iplen = 40;
		ip[0] = 0x60;
		ip[1] = ip[2] = ip[3] = 0;
		sv_store_be16(ip + 4, udplen); /* payload length */
		ip[6] = 17; /* next header: UDP */
		ip[7] = 0;
		memcpy(ip + 8, flow->src.addr, 16);
		memcpy(ip + 24, flow->dst.addr, 16);
	}
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
