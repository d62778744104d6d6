/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The completer (comp.c): ACKs, NAKs, READ responses and atomic ACKs
 * matched to send WQEs; the retry, RNR and probe timers; congestion.
 */
#ifndef SV_ENGINE_COMP_H
#define SV_ENGINE_COMP_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/transport/qpe.h"

void sv_cc_loss(struct sv_qp_engine *qe, bool timeout, bool selective);
void sv_comp_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt);
void sv_comp_timer(struct sv_qp_engine *qe, uint64_t now);
void sv_comp_probe(struct sv_qp_engine *qe, uint64_t now);
void sv_probe_arm(struct sv_qp_engine *qe, bool reset);
void sv_comp_retire(struct sv_qp_engine *qe);
/* The WQE whose PSN range holds psn among the outstanding ones, or NULL. */
struct sv_send_wqe *sv_wqe_of_psn(struct sv_qp_engine *qe, uint32_t psn);
/* The name of a completer state, for logs ("?" if none). */
const char *sv_comp_state_name(int s);

#endif
