/*
 * The responder (resp.c): an explicit state machine over each request,
 * data placement, READ and ATOMIC replies, coalesced ACKs.
 */
#ifndef SV_ENGINE_RESP_H
#define SV_ENGINE_RESP_H

#include "engine/qpe.h"

void sv_resp_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
		const struct sv_flow *flow);
void sv_resp_reply_run(struct sv_qp_engine *qe);
void sv_resp_ack_flush(struct sv_qp_engine *qe);
void sv_resp_reset(struct sv_qp_engine *qe);
const char *sv_resp_state_name(int s);

#endif
