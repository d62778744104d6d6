/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Unreliable Datagram (ud.c): address handles resolved to IP addresses,
 * and the UD responder.
 */
#ifndef SV_ENGINE_UD_H
#define SV_ENGINE_UD_H

#include "engine/transport/qpe.h"

void sv_ud_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
	      const struct sv_flow *flow);

#endif
