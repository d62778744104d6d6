/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The opcode table and the packet parser.
 */
#include "proto/wire.h"

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
