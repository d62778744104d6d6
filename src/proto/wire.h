/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The wire: InfiniBand transport headers as carried by RoCE v2 in a UDP
 * payload (BTH, then the extension headers, the payload padded to 4 bytes,
 * then the 4-byte invariant CRC).
 *
 * Everything here is data: one table describes each opcode (its name, the
 * headers it carries, its length and the offset of each header, and its
 * class bits), and the header field accessors are generated from one list
 * of fields.  All multi-byte fields are big-endian on the wire (IBA).
 */
#ifndef SV_PROTO_WIRE_H
#define SV_PROTO_WIRE_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/addr.h"

/* ---- headers ------------------------------------------------------------ */

/* Headers in the order they appear on the wire (IBA; RoCE v2 has no
 * LRH/GRH inside the UDP payload; RDETH is RD only and not supported;
 * XRCETH follows the BTH of XRC requests, IBA Annex A14). */
#define SV_HEADERS(X) \
	X(BTH, 12)    \
	X(DETH, 8)    \
	X(XRCETH, 4)  \
	X(RETH, 16)   \
	X(ATMETH, 28) \
	X(AETH, 4)    \
	X(ATMACK, 8)  \
	X(IMMDT, 4)   \
	X(IETH, 4)

enum sv_hdr_id {
#define X(name, size) SV_HDR_##name,
	SV_HEADERS(X)
#undef X
		SV_NUM_HDRS
};

enum sv_hdr_size {
#define X(name, size) SV_##name##_BYTES = size,
	SV_HEADERS(X)
#undef X
};

#define SV_ICRC_BYTES 4
#define SV_MAX_PMTU 4096
/* The largest packet we ever build or accept: BTH, the largest header set,
 * a full MTU of payload, pad and ICRC. */
#define SV_MAX_PKT                                                       \
	(SV_BTH_BYTES + SV_RETH_BYTES + SV_IMMDT_BYTES + SV_DETH_BYTES + \
	 SV_MAX_PMTU + SV_ICRC_BYTES)

/* ---- opcode classes ----------------------------------------------------- */

enum sv_op_mask {
	/* which headers follow the BTH: bit SV_HDR_x */
	SV_M_BTH = 1u << SV_HDR_BTH,
	SV_M_DETH = 1u << SV_HDR_DETH,
	SV_M_RETH = 1u << SV_HDR_RETH,
	SV_M_ATMETH = 1u << SV_HDR_ATMETH,
	SV_M_AETH = 1u << SV_HDR_AETH,
	SV_M_ATMACK = 1u << SV_HDR_ATMACK,
	SV_M_IMMDT = 1u << SV_HDR_IMMDT,
	SV_M_IETH = 1u << SV_HDR_IETH,
	SV_M_XRCETH = 1u << SV_HDR_XRCETH,
	/* classes */
	SV_M_REQ = 1u << 9, /* a request: handled by the responder */
	SV_M_RESP = 1u << 10, /* a response: handled by the completer */
	SV_M_SEND = 1u << 11,
	SV_M_WRITE = 1u << 12,
	SV_M_READ = 1u << 13, /* RDMA READ request */
	SV_M_READ_RESP = 1u << 14,
	SV_M_ATOMIC = 1u << 15, /* compare-swap / fetch-add request */
	SV_M_ACK = 1u << 16, /* ACKNOWLEDGE / ATOMIC ACKNOWLEDGE */
	SV_M_START = 1u << 17, /* first packet of a message (or only) */
	SV_M_MIDDLE = 1u << 18,
	SV_M_END = 1u << 19, /* last packet of a message (or only) */
	SV_M_COMP = 1u << 20, /* the packet completes a request message */
	SV_M_PAYLOAD = 1u << 21, /* may carry payload */
	SV_M_IMM = 1u << 22,
	SV_M_INV = 1u << 23,
	SV_M_RWR = 1u << 24, /* consumes a receive WQE at the responder */
	SV_M_RC = 1u << 25,
	SV_M_UC = 1u << 26,
	SV_M_UD = 1u << 27,
	SV_M_XRC = 1u << 28,
	/* IBA 1.5 ATOMIC WRITE: a one-packet WRITE of 8 bytes placed as
	 * one atomic store (also SV_M_WRITE: same rights, ACK, replay). */
	SV_M_ATOMIC_WRITE = 1u << 29,
	SV_M_HDRS = 0x1ff,
};

/* Shorthands for the table below. */
#define SV_ONLY (SV_M_START | SV_M_END)

/* The IBA opcodes of the RC, UC and UD transports (and RC's ATOMIC WRITE
 * of IBA 1.5, Annex A19): X(value, NAME, headers and classes). */
/* clang-format off */
#define SV_OPCODES(X)                                                          \
	X(0x00, RC_SEND_FIRST, SV_M_RC | SV_M_REQ | SV_M_SEND | SV_M_START |   \
	  SV_M_PAYLOAD | SV_M_RWR)                                             \
	X(0x01, RC_SEND_MIDDLE, SV_M_RC | SV_M_REQ | SV_M_SEND | SV_M_MIDDLE | \
	  SV_M_PAYLOAD | SV_M_RWR)                                             \
	X(0x02, RC_SEND_LAST, SV_M_RC | SV_M_REQ | SV_M_SEND | SV_M_END |      \
	  SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR)                                 \
	X(0x03, RC_SEND_LAST_WITH_IMMEDIATE, SV_M_RC | SV_M_REQ | SV_M_SEND |  \
	  SV_M_END | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_IMM |          \
	  SV_M_IMMDT)                                                          \
	X(0x04, RC_SEND_ONLY, SV_M_RC | SV_M_REQ | SV_M_SEND | SV_ONLY |       \
	  SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR)                                 \
	X(0x05, RC_SEND_ONLY_WITH_IMMEDIATE, SV_M_RC | SV_M_REQ | SV_M_SEND |  \
	  SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_IMM |           \
	  SV_M_IMMDT)                                                          \
	X(0x06, RC_RDMA_WRITE_FIRST, SV_M_RC | SV_M_REQ | SV_M_WRITE |         \
	  SV_M_START | SV_M_PAYLOAD | SV_M_RETH)                               \
	X(0x07, RC_RDMA_WRITE_MIDDLE, SV_M_RC | SV_M_REQ | SV_M_WRITE |        \
	  SV_M_MIDDLE | SV_M_PAYLOAD)                                          \
	X(0x08, RC_RDMA_WRITE_LAST, SV_M_RC | SV_M_REQ | SV_M_WRITE |          \
	  SV_M_END | SV_M_COMP | SV_M_PAYLOAD)                                 \
	X(0x09, RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, SV_M_RC | SV_M_REQ |        \
	  SV_M_WRITE | SV_M_END | SV_M_COMP | SV_M_PAYLOAD | SV_M_IMM |        \
	  SV_M_IMMDT | SV_M_RWR)                                               \
	X(0x0a, RC_RDMA_WRITE_ONLY, SV_M_RC | SV_M_REQ | SV_M_WRITE |          \
	  SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RETH)                      \
	X(0x0b, RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, SV_M_RC | SV_M_REQ |        \
	  SV_M_WRITE | SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RETH |        \
	  SV_M_IMM | SV_M_IMMDT | SV_M_RWR)                                    \
	X(0x0c, RC_RDMA_READ_REQUEST, SV_M_RC | SV_M_REQ | SV_M_READ |         \
	  SV_ONLY | SV_M_COMP | SV_M_RETH)                                     \
	X(0x0d, RC_RDMA_READ_RESPONSE_FIRST, SV_M_RC | SV_M_RESP |             \
	  SV_M_READ_RESP | SV_M_START | SV_M_PAYLOAD | SV_M_AETH)              \
	X(0x0e, RC_RDMA_READ_RESPONSE_MIDDLE, SV_M_RC | SV_M_RESP |            \
	  SV_M_READ_RESP | SV_M_MIDDLE | SV_M_PAYLOAD)                         \
	X(0x0f, RC_RDMA_READ_RESPONSE_LAST, SV_M_RC | SV_M_RESP |              \
	  SV_M_READ_RESP | SV_M_END | SV_M_PAYLOAD | SV_M_AETH)                \
	X(0x10, RC_RDMA_READ_RESPONSE_ONLY, SV_M_RC | SV_M_RESP |              \
	  SV_M_READ_RESP | SV_ONLY | SV_M_PAYLOAD | SV_M_AETH)                 \
	X(0x11, RC_ACKNOWLEDGE, SV_M_RC | SV_M_RESP | SV_M_ACK | SV_ONLY |     \
	  SV_M_AETH)                                                           \
	X(0x12, RC_ATOMIC_ACKNOWLEDGE, SV_M_RC | SV_M_RESP | SV_M_ACK |        \
	  SV_ONLY | SV_M_AETH | SV_M_ATMACK)                                   \
	X(0x13, RC_COMPARE_SWAP, SV_M_RC | SV_M_REQ | SV_M_ATOMIC | SV_ONLY |  \
	  SV_M_COMP | SV_M_ATMETH)                                             \
	X(0x14, RC_FETCH_ADD, SV_M_RC | SV_M_REQ | SV_M_ATOMIC | SV_ONLY |     \
	  SV_M_COMP | SV_M_ATMETH)                                             \
	X(0x16, RC_SEND_LAST_WITH_INVALIDATE, SV_M_RC | SV_M_REQ | SV_M_SEND | \
	  SV_M_END | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_INV |          \
	  SV_M_IETH)                                                           \
	X(0x17, RC_SEND_ONLY_WITH_INVALIDATE, SV_M_RC | SV_M_REQ | SV_M_SEND | \
	  SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_INV |           \
	  SV_M_IETH)                                                           \
	X(0x1d, RC_ATOMIC_WRITE, SV_M_RC | SV_M_REQ | SV_M_WRITE |             \
	  SV_M_ATOMIC_WRITE | SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RETH)  \
	X(0x20, UC_SEND_FIRST, SV_M_UC | SV_M_REQ | SV_M_SEND | SV_M_START |   \
	  SV_M_PAYLOAD | SV_M_RWR)                                             \
	X(0x21, UC_SEND_MIDDLE, SV_M_UC | SV_M_REQ | SV_M_SEND | SV_M_MIDDLE | \
	  SV_M_PAYLOAD | SV_M_RWR)                                             \
	X(0x22, UC_SEND_LAST, SV_M_UC | SV_M_REQ | SV_M_SEND | SV_M_END |      \
	  SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR)                                 \
	X(0x23, UC_SEND_LAST_WITH_IMMEDIATE, SV_M_UC | SV_M_REQ | SV_M_SEND |  \
	  SV_M_END | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_IMM |          \
	  SV_M_IMMDT)                                                          \
	X(0x24, UC_SEND_ONLY, SV_M_UC | SV_M_REQ | SV_M_SEND | SV_ONLY |       \
	  SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR)                                 \
	X(0x25, UC_SEND_ONLY_WITH_IMMEDIATE, SV_M_UC | SV_M_REQ | SV_M_SEND |  \
	  SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_IMM |           \
	  SV_M_IMMDT)                                                          \
	X(0x26, UC_RDMA_WRITE_FIRST, SV_M_UC | SV_M_REQ | SV_M_WRITE |         \
	  SV_M_START | SV_M_PAYLOAD | SV_M_RETH)                               \
	X(0x27, UC_RDMA_WRITE_MIDDLE, SV_M_UC | SV_M_REQ | SV_M_WRITE |        \
	  SV_M_MIDDLE | SV_M_PAYLOAD)                                          \
	X(0x28, UC_RDMA_WRITE_LAST, SV_M_UC | SV_M_REQ | SV_M_WRITE |          \
	  SV_M_END | SV_M_COMP | SV_M_PAYLOAD)                                 \
	X(0x29, UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, SV_M_UC | SV_M_REQ |        \
	  SV_M_WRITE | SV_M_END | SV_M_COMP | SV_M_PAYLOAD | SV_M_IMM |        \
	  SV_M_IMMDT | SV_M_RWR)                                               \
	X(0x2a, UC_RDMA_WRITE_ONLY, SV_M_UC | SV_M_REQ | SV_M_WRITE |          \
	  SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RETH)                      \
	X(0x2b, UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, SV_M_UC | SV_M_REQ |        \
	  SV_M_WRITE | SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RETH |        \
	  SV_M_IMM | SV_M_IMMDT | SV_M_RWR)                                    \
	X(0x64, UD_SEND_ONLY, SV_M_UD | SV_M_REQ | SV_M_SEND | SV_ONLY |       \
	  SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_DETH)                     \
	X(0x65, UD_SEND_ONLY_WITH_IMMEDIATE, SV_M_UD | SV_M_REQ | SV_M_SEND |  \
	  SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_IMM |           \
	  SV_M_DETH | SV_M_IMMDT)                                              \
	SV_XRC_OPCODES(X)

/* The XRC transport (IBA Annex A14): each opcode is its RC twin plus
 * 0xa0 with the same headers, and requests carry the XRCETH (the target
 * XRC SRQ) right after the BTH. */
#define SV_XRC_REQ (SV_M_XRC | SV_M_REQ | SV_M_XRCETH)
#define SV_XRC_RESP (SV_M_XRC | SV_M_RESP)
#define SV_XRC_OPCODES(X)                                                      \
	X(0xa0, XRC_SEND_FIRST, SV_XRC_REQ | SV_M_SEND | SV_M_START |          \
	  SV_M_PAYLOAD | SV_M_RWR)                                             \
	X(0xa1, XRC_SEND_MIDDLE, SV_XRC_REQ | SV_M_SEND | SV_M_MIDDLE |        \
	  SV_M_PAYLOAD | SV_M_RWR)                                             \
	X(0xa2, XRC_SEND_LAST, SV_XRC_REQ | SV_M_SEND | SV_M_END | SV_M_COMP | \
	  SV_M_PAYLOAD | SV_M_RWR)                                             \
	X(0xa3, XRC_SEND_LAST_WITH_IMMEDIATE, SV_XRC_REQ | SV_M_SEND |         \
	  SV_M_END | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_IMM |          \
	  SV_M_IMMDT)                                                          \
	X(0xa4, XRC_SEND_ONLY, SV_XRC_REQ | SV_M_SEND | SV_ONLY | SV_M_COMP |  \
	  SV_M_PAYLOAD | SV_M_RWR)                                             \
	X(0xa5, XRC_SEND_ONLY_WITH_IMMEDIATE, SV_XRC_REQ | SV_M_SEND |         \
	  SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_IMM |           \
	  SV_M_IMMDT)                                                          \
	X(0xa6, XRC_RDMA_WRITE_FIRST, SV_XRC_REQ | SV_M_WRITE | SV_M_START |   \
	  SV_M_PAYLOAD | SV_M_RETH)                                            \
	X(0xa7, XRC_RDMA_WRITE_MIDDLE, SV_XRC_REQ | SV_M_WRITE | SV_M_MIDDLE | \
	  SV_M_PAYLOAD)                                                        \
	X(0xa8, XRC_RDMA_WRITE_LAST, SV_XRC_REQ | SV_M_WRITE | SV_M_END |      \
	  SV_M_COMP | SV_M_PAYLOAD)                                            \
	X(0xa9, XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE, SV_XRC_REQ | SV_M_WRITE |  \
	  SV_M_END | SV_M_COMP | SV_M_PAYLOAD | SV_M_IMM | SV_M_IMMDT |        \
	  SV_M_RWR)                                                            \
	X(0xaa, XRC_RDMA_WRITE_ONLY, SV_XRC_REQ | SV_M_WRITE | SV_ONLY |       \
	  SV_M_COMP | SV_M_PAYLOAD | SV_M_RETH)                                \
	X(0xab, XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, SV_XRC_REQ | SV_M_WRITE |  \
	  SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RETH | SV_M_IMM |          \
	  SV_M_IMMDT | SV_M_RWR)                                               \
	X(0xac, XRC_RDMA_READ_REQUEST, SV_XRC_REQ | SV_M_READ | SV_ONLY |      \
	  SV_M_COMP | SV_M_RETH)                                               \
	X(0xad, XRC_RDMA_READ_RESPONSE_FIRST, SV_XRC_RESP | SV_M_READ_RESP |   \
	  SV_M_START | SV_M_PAYLOAD | SV_M_AETH)                               \
	X(0xae, XRC_RDMA_READ_RESPONSE_MIDDLE, SV_XRC_RESP | SV_M_READ_RESP |  \
	  SV_M_MIDDLE | SV_M_PAYLOAD)                                          \
	X(0xaf, XRC_RDMA_READ_RESPONSE_LAST, SV_XRC_RESP | SV_M_READ_RESP |    \
	  SV_M_END | SV_M_PAYLOAD | SV_M_AETH)                                 \
	X(0xb0, XRC_RDMA_READ_RESPONSE_ONLY, SV_XRC_RESP | SV_M_READ_RESP |    \
	  SV_ONLY | SV_M_PAYLOAD | SV_M_AETH)                                  \
	X(0xb1, XRC_ACKNOWLEDGE, SV_XRC_RESP | SV_M_ACK | SV_ONLY | SV_M_AETH) \
	X(0xb2, XRC_ATOMIC_ACKNOWLEDGE, SV_XRC_RESP | SV_M_ACK | SV_ONLY |     \
	  SV_M_AETH | SV_M_ATMACK)                                             \
	X(0xb3, XRC_COMPARE_SWAP, SV_XRC_REQ | SV_M_ATOMIC | SV_ONLY |         \
	  SV_M_COMP | SV_M_ATMETH)                                             \
	X(0xb4, XRC_FETCH_ADD, SV_XRC_REQ | SV_M_ATOMIC | SV_ONLY |            \
	  SV_M_COMP | SV_M_ATMETH)                                             \
	X(0xb6, XRC_SEND_LAST_WITH_INVALIDATE, SV_XRC_REQ | SV_M_SEND |        \
	  SV_M_END | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_INV |          \
	  SV_M_IETH)                                                           \
	X(0xb7, XRC_SEND_ONLY_WITH_INVALIDATE, SV_XRC_REQ | SV_M_SEND |        \
	  SV_ONLY | SV_M_COMP | SV_M_PAYLOAD | SV_M_RWR | SV_M_INV |           \
	  SV_M_IETH)

/* An XRC opcode is its RC twin plus this. */
#define SV_XRC_OP_BASE 0xa0
/* clang-format on */

enum sv_opcode {
#define X(val, name, mask) SV_OP_##name = val,
	SV_OPCODES(X)
#undef X
};

struct sv_opinfo {
	const char *name; /* NULL: not an opcode we know */
	uint32_t mask; /* SV_M_* (always includes SV_M_BTH) */
	uint8_t length; /* bytes of all headers, BTH included */
	uint8_t offset[SV_NUM_HDRS]; /* from the start of the BTH */
};

extern const struct sv_opinfo sv_opinfo[256];
extern const char *const sv_hdr_names[SV_NUM_HDRS];
extern const uint8_t sv_hdr_sizes[SV_NUM_HDRS];

static inline const char *sv_opcode_name(uint8_t op)
{
	return sv_opinfo[op].name ? sv_opinfo[op].name : "UNKNOWN";
}

/* ---- field accessors ---------------------------------------------------- */

static inline uint64_t sv_load_be8(const uint8_t *p)
{
	return p[0];
}
static inline uint64_t sv_load_be16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return be16toh(v);
}
static inline uint64_t sv_load_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}
static inline uint64_t sv_load_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}
static inline void sv_store_be8(uint8_t *p, uint64_t v)
{
	p[0] = (uint8_t)v;
}
static inline void sv_store_be16(uint8_t *p, uint64_t v)
{
	uint16_t x = htobe16((uint16_t)v);

	memcpy(p, &x, 2);
}
static inline void sv_store_be32(uint8_t *p, uint64_t v)
{
	uint32_t x = htobe32((uint32_t)v);

	memcpy(p, &x, 4);
}
static inline void sv_store_be64(uint8_t *p, uint64_t v)
{
	uint64_t x = htobe64(v);

	memcpy(p, &x, 8);
}

/* X(header, field, byte offset, load width in bits, shift, mask)
 * value = (load_be<width>(hdr + offset) >> shift) & mask
 * (IBA transport headers; RoCE v2, Annex A17, for BTH byte 4). */
/* clang-format off */
#define SV_FIELDS(X)                                          \
	X(bth, opcode, 0, 8, 0, 0xffu)                        \
	X(bth, se, 1, 8, 7, 0x1u)                             \
	X(bth, mig, 1, 8, 6, 0x1u)                            \
	X(bth, pad, 1, 8, 4, 0x3u)                            \
	X(bth, tver, 1, 8, 0, 0xfu)                           \
	X(bth, pkey, 2, 16, 0, 0xffffu)                       \
	X(bth, fecn, 4, 8, 7, 0x1u)                           \
	X(bth, becn, 4, 8, 6, 0x1u)                           \
	X(bth, resv6a, 4, 8, 0, 0x3fu)                        \
	X(bth, qpn, 4, 32, 0, 0xffffffu)                      \
	X(bth, ackreq, 8, 8, 7, 0x1u)                         \
	X(bth, resv7, 8, 8, 0, 0x7fu)                         \
	X(bth, psn, 8, 32, 0, 0xffffffu)                      \
	X(deth, qkey, 0, 32, 0, 0xffffffffu)                  \
	X(deth, sqp, 4, 32, 0, 0xffffffu)                     \
	X(xrceth, srqn, 0, 32, 0, 0xffffffu)                  \
	X(reth, va, 0, 64, 0, ~0ull)                          \
	X(reth, rkey, 8, 32, 0, 0xffffffffu)                  \
	X(reth, len, 12, 32, 0, 0xffffffffu)                  \
	X(atmeth, va, 0, 64, 0, ~0ull)                        \
	X(atmeth, rkey, 8, 32, 0, 0xffffffffu)                \
	X(atmeth, swap_add, 12, 64, 0, ~0ull)                 \
	X(atmeth, compare, 20, 64, 0, ~0ull)                  \
	X(aeth, syndrome, 0, 8, 0, 0xffu)                     \
	X(aeth, msn, 0, 32, 0, 0xffffffu)                     \
	X(atmack, orig, 0, 64, 0, ~0ull)                      \
	X(immdt, imm, 0, 32, 0, 0xffffffffu)                  \
	X(ieth, rkey, 0, 32, 0, 0xffffffffu)
/* clang-format on */

#define X(hdr, field, off, width, shift, mask)                             \
	static inline uint64_t sv_##hdr##_##field(const uint8_t *h)        \
	{                                                                  \
		return (sv_load_be##width(h + (off)) >> (shift)) & (mask); \
	}                                                                  \
	static inline void sv_##hdr##_set_##field(uint8_t *h, uint64_t v)  \
	{                                                                  \
		uint64_t old = sv_load_be##width(h + (off));               \
		uint64_t m = (uint64_t)(mask) << (shift);                  \
		sv_store_be##width(h + (off),                              \
				   (old & ~m) | ((v << (shift)) & m));     \
	}
SV_FIELDS(X)
#undef X

/* ---- AETH syndromes (IBA) ------------------------------------- */

#define SV_AETH_TYPE_MASK 0xe0
#define SV_AETH_ACK 0x00 /* low 5 bits: credit count */
#define SV_AETH_RNR_NAK 0x20 /* low 5 bits: RNR timer code */
#define SV_AETH_NAK 0x60 /* low 5 bits: NAK code */
#define SV_AETH_NAK_PSN_SEQ 0x60
#define SV_AETH_NAK_INVALID 0x61
#define SV_AETH_NAK_REM_ACCESS 0x62
#define SV_AETH_NAK_REM_OP 0x63
#define SV_AETH_NAK_INV_RD 0x64
#define SV_AETH_CREDIT_INVALID 0x1f /* "no end-to-end credits" */

/* ---- selective retransmission (a softverbs extension) -------------
 * In the 7 reserved bits of the BTH (resv7: zero when sent, ignored when
 * received, IBA; covered by the ICRC) of the ACKs and NAKs a softverbs
 * responder sends.  On an ACK: nonzero says that this responder keeps
 * out-of-order packets, and on a PSN sequence NAK, or an ACK restating
 * where a responder waiting for a PSN is, it counts the PSNs missing from
 * that PSN on (1..127).  A requester that knows it resends those only;
 * any other peer ignores the bits and goes back N (docs/engine.md). */
#define SV_SACK_MAX 0x7f

/* ---- an ICRC left to the UDP checksum (a softverbs extension) -----
 * In resv6a (BTH byte 4 with FECN and BECN: zero when sent, ignored when
 * received, IBA; masked out of the ICRC) of every packet a softverbs
 * endpoint sends outside standard mode: this bit says that it accepts a
 * packet carrying the bit and a zero ICRC, whose sender left the check
 * to the UDP checksum (which the kernel computes on every send and
 * verifies on every receive).  A sender leaves it so only to a peer
 * whose packets carried the bit (proto/icrc.h, engine/transport/recv.c); to any
 * other it computes the ICRC. */
#define SV_BTH_ICRC_BY_UDP 0x01u

/* ---- PSN arithmetic (24 bits, wrapping; IBA) ---------------------- */

#define SV_PSN_MASK 0xffffffu

static inline uint32_t sv_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & SV_PSN_MASK;
}

/* Signed distance a - b in the 24-bit PSN space: < 0 when a is before b. */
static inline int32_t sv_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* ---- parsed packets ------------------------------------------------------ */

struct sv_pkt {
	uint8_t *hdr; /* start of the BTH (UDP payload) */
	uint32_t len; /* UDP payload length, ICRC included */
	const struct sv_opinfo *info;
	uint32_t mask;
	uint8_t opcode;
	uint8_t pad;
	uint32_t qpn;
	uint32_t psn;
	uint8_t *payload;
	uint32_t paylen; /* payload bytes, pad excluded */
};

/* Why a packet was refused by the parser or the ICRC check. */
enum sv_pkt_err {
	SV_PKT_OK = 0,
	SV_PKT_SHORT, /* shorter than its headers + ICRC */
	SV_PKT_LONG, /* payload longer than the largest MTU */
	SV_PKT_OPCODE, /* opcode not in the table */
	SV_PKT_TVER, /* transport header version not 0 */
	SV_PKT_ALIGN, /* length not a multiple of 4 */
	SV_PKT_PAD, /* pad count on a packet without payload */
	SV_PKT_PAYLOAD, /* payload on an opcode that has none */
	SV_PKT_ICRC,
};

static inline uint8_t *sv_pkt_h(const struct sv_pkt *p, enum sv_hdr_id h)
{
	return p->hdr + p->info->offset[h];
}

/* Parse and bounds-check buf[0..len): fills *pkt (pointing into buf). */
enum sv_pkt_err sv_pkt_parse(struct sv_pkt *pkt, uint8_t *buf, uint32_t len);

/* IB MTU enum -> bytes. */
static inline uint32_t sv_mtu_bytes(int mtu)
{
	return (mtu >= 1 && mtu <= 5) ? 128u << mtu : 1024u;
}

#endif
