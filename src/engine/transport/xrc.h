/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * XRC on the wire (xrc.c).
 */
#ifndef SV_ENGINE_XRC_H
#define SV_ENGINE_XRC_H

#include <stdbool.h>

#include "engine/transport/xmit.h"

/* xrc.c: XRC QPs run the RC machines; packets are translated at the
 * edges (XRC opcode and XRCETH on the wire, their RC twins inside), and a
 * target QP is pointed at the XRC SRQ each request names. */
static inline bool sv_xrc_qp(const struct sv_qp *qp)
{
	return qp->type == IBV_QPT_XRC_SEND || qp->type == IBV_QPT_XRC_RECV;
}
void sv_xrc_tx(struct sv_qp_engine *qe, struct sv_tx *t);
void sv_xrc_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
	       const struct sv_flow *flow);

#endif
