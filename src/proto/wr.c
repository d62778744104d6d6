/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The work request opcode table (proto/wr.h).  Rules: IBA chapter 9 and
 * man ibv_post_send, with these decisions of ours:
 * - SEND_WITH_INV on RC only: IBA has no UC opcode with an IETH, so
 *   although the man page's table lists UC it is refused, not sent as
 *   something else;
 * - ATOMIC_WRITE on RC only (IBA 1.5 defines its XRC twin, which we do
 *   not send: post_send refuses it on XRC); its 8 bytes are the WR's
 *   data (inline, or a gather list of 8 bytes in all);
 * - TSO, FLUSH and DRIVER1 are not offered (no QP type).
 */
#include "proto/wr.h"

#define RC SV_QPT_RC
#define UC SV_QPT_UC
#define UD SV_QPT_UD

const struct sv_wr_info sv_wr_info[SV_WR_OPCODES] = {
	[IBV_WR_RDMA_WRITE] = { "RDMA_WRITE", RC | UC,
				SV_WR_WRITE | SV_WR_INLINE_OK,
				IBV_WC_RDMA_WRITE },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { "RDMA_WRITE_WITH_IMM", RC | UC,
					 SV_WR_WRITE | SV_WR_IMM |
						 SV_WR_INLINE_OK,
					 IBV_WC_RDMA_WRITE },
	[IBV_WR_SEND] = { "SEND", RC | UC | UD, SV_WR_SEND | SV_WR_INLINE_OK,
			  IBV_WC_SEND },
	[IBV_WR_SEND_WITH_IMM] = { "SEND_WITH_IMM", RC | UC | UD,
				   SV_WR_SEND | SV_WR_IMM | SV_WR_INLINE_OK,
				   IBV_WC_SEND },
	[IBV_WR_RDMA_READ] = { "RDMA_READ", RC, SV_WR_READ, IBV_WC_RDMA_READ },
	[IBV_WR_ATOMIC_CMP_AND_SWP] = { "ATOMIC_CMP_AND_SWP", RC, SV_WR_ATOMIC,
					IBV_WC_COMP_SWAP },
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = { "ATOMIC_FETCH_AND_ADD", RC,
					  SV_WR_ATOMIC, IBV_WC_FETCH_ADD },
	[IBV_WR_LOCAL_INV] = { "LOCAL_INV", RC | UC, SV_WR_LOCAL,
			       IBV_WC_LOCAL_INV },
	[IBV_WR_BIND_MW] = { "BIND_MW", RC | UC, SV_WR_LOCAL, IBV_WC_BIND_MW },
	[IBV_WR_SEND_WITH_INV] = { "SEND_WITH_INV", RC,
				   SV_WR_SEND | SV_WR_INV | SV_WR_INLINE_OK,
				   IBV_WC_SEND },
	[IBV_WR_ATOMIC_WRITE] = { "ATOMIC_WRITE", RC,
				  SV_WR_ATOMIC_WRITE | SV_WR_INLINE_OK,
				  IBV_WC_ATOMIC_WRITE },
};
