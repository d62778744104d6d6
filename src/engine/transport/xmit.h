/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Transmit: the batch of packets a pass builds, their headers, and the
 * flush through each QP's link (xmit.c).
 */
#ifndef SV_ENGINE_XMIT_H
#define SV_ENGINE_XMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/transport/qpe.h"

struct sv_tx *sv_tx_get(struct sv_engine *eng);
uint8_t *sv_tx_hdr(struct sv_qp_engine *qe, struct sv_tx *t, uint8_t opcode,
		   uint32_t psn, uint32_t paylen);
void sv_tx_finish(struct sv_qp_engine *qe, struct sv_tx *t);
void sv_tx_flush(struct sv_engine *eng);
bool sv_tx_acks_only(const struct sv_engine *eng);
void sv_tx_hold_acks(struct sv_engine *eng, uint64_t now);
void sv_send_ack(struct sv_qp_engine *qe, uint8_t syndrome, uint32_t psn);

#endif
