/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The responder (resp.c): an explicit state machine over each request,
 * data placement, READ and ATOMIC replies, coalesced ACKs.
 */
#ifndef SV_ENGINE_RESP_H
#define SV_ENGINE_RESP_H

#include "engine/transport/qpe.h"

void sv_resp_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
		const struct sv_flow *flow);
void sv_resp_reply_run(struct sv_qp_engine *qe);
void sv_resp_ack_flush(struct sv_qp_engine *qe);
void sv_resp_reset(struct sv_qp_engine *qe);
/* The BTH resv7 value of an ACK or NAK the responder sends (wire.h,
 * SV_SACK_MAX): 0, or what selective retransmission tells the peer. */
uint8_t sv_resp_sack(struct sv_qp_engine *qe, uint8_t syndrome, uint32_t psn);
const char *sv_resp_state_name(int s);

#endif
