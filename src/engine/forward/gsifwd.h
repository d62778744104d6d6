/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * IB CM MADs at the namespace's UDP 4791, sent on to the process whose
 * CM they are for (gsifwd.c; the routing is proto/mad.h's).
 */
#ifndef SV_ENGINE_GSIFWD_H
#define SV_ENGINE_GSIFWD_H

#include <stdbool.h>

#include "engine/transport/eng.h"
#include "proto/wire.h"

/* A packet for QP1 that the 4791 socket took (its ICRC checked): true
 * when it is dealt with (sent to the CM it names, or dropped and
 * counted), false when it is for the engine's own GSI QP, if any (not a
 * CM MAD, or no CM serves its name). */
bool sv_gsi_forward(struct sv_engine *eng, struct sv_pkt *pkt,
		    const struct sv_flow *flow);

/* The engine's forwarding socket, if it made one. */
void sv_gsi_forward_close(struct sv_engine *eng);

#endif
