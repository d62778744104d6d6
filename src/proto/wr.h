/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Work request opcodes as data: for each IBV_WR_* opcode, the QP types
 * that may post it, its class, and the completion opcode it reports (the
 * role of rxe's rxe_wr_opcode_info).  Posting (verbs), the requester and
 * the completer (engine) and the fast paths all ask this table, so a rule
 * is written once.
 */
#ifndef SV_PROTO_WR_H
#define SV_PROTO_WR_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* QP types, as bits of sv_wr_info.qpts.  An XRC initiator carries what RC
 * carries (IBA Annex A14); an XRC target sends nothing. */
enum sv_qpt_bit {
	SV_QPT_RC = 1u << 0,
	SV_QPT_UC = 1u << 1,
	SV_QPT_UD = 1u << 2,
};

static inline uint32_t sv_qpt_bit(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_XRC_SEND:
		return SV_QPT_RC;
	case IBV_QPT_UC:
		return SV_QPT_UC;
	case IBV_QPT_UD:
		return SV_QPT_UD;
	default:
		return 0;
	}
}

enum sv_wr_class {
	SV_WR_SEND = 1u << 0, /* consumes a receive WQE at the target */
	SV_WR_WRITE = 1u << 1,
	SV_WR_READ = 1u << 2,
	SV_WR_ATOMIC = 1u << 3,
	SV_WR_LOCAL = 1u << 4, /* runs at the requester: no packet */
	SV_WR_IMM = 1u << 5, /* carries immediate data */
	SV_WR_INV = 1u << 6, /* carries a key to invalidate */
	/* Inline data is a source of bytes: never a place for results. */
	SV_WR_INLINE_OK = 1u << 7,
	/* IBA 1.5 ATOMIC WRITE: 8 bytes of data placed by one atomic store
	 * at the responder, sent and acknowledged as an RDMA WRITE. */
	SV_WR_ATOMIC_WRITE = 1u << 8,
};

struct sv_wr_info {
	const char *name; /* NULL: an opcode softverbs does not offer */
	uint32_t qpts; /* sv_qpt_bit of the QP types that may post it */
	uint32_t mask; /* sv_wr_class */
	enum ibv_wc_opcode wc; /* the send completion's opcode */
};

#define SV_WR_OPCODES 16
extern const struct sv_wr_info sv_wr_info[SV_WR_OPCODES];

static inline const struct sv_wr_info *sv_wr(uint32_t opcode)
{
	static const struct sv_wr_info none;

	return opcode < SV_WR_OPCODES ? &sv_wr_info[opcode] : &none;
}

/* May a QP of this type post this opcode? */
static inline bool sv_wr_allowed(enum ibv_qp_type type, uint32_t opcode)
{
	return (sv_wr(opcode)->qpts & sv_qpt_bit(type)) != 0;
}

static inline bool sv_wr_is(uint32_t opcode, uint32_t class_mask)
{
	return (sv_wr(opcode)->mask & class_mask) != 0;
}

/* A READ or atomic: takes a responder resource (max_rd_atomic) and an
 * answer that writes local memory. */
static inline bool sv_wr_is_rd_atomic(uint32_t opcode)
{
	return sv_wr_is(opcode, SV_WR_READ | SV_WR_ATOMIC);
}

#endif
