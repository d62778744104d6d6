/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The requester (req.c): walks the send queue and builds request packets.
 */
#ifndef SV_ENGINE_REQ_H
#define SV_ENGINE_REQ_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/transport/qpe.h"

void sv_req_run(struct sv_qp_engine *qe);
void sv_req_rewind(struct sv_qp_engine *qe, uint32_t psn);
void sv_req_goto(struct sv_qp_engine *qe, uint32_t psn, bool rewind);
void sv_req_probe(struct sv_qp_engine *qe);
/* A READ response was taken (w->read_done moved): the chunks it
 * completes free their responder resources. */
void sv_req_read_answered(struct sv_qp_engine *qe, const struct sv_send_wqe *w);
/* Resend the n PSNs from psn already sent, without moving the requester
 * (selective retransmission); false: a READ or ATOMIC is among them, go
 * back N instead. */
bool sv_req_resend(struct sv_qp_engine *qe, uint32_t psn, uint32_t n);
/* Everything is sent and a path waits for its ACK, which no packet asked
 * for (an unsignaled message on shm): ask now, once per such point. */
void sv_req_ask_ack(struct sv_qp_engine *qe);

#endif
