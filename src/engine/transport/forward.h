/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the transport asks of forwarding between processes
 * (src/engine/forward): the receive WQE of an XRC SRQ that another process
 * made (forward/xrcfwd.c), and the IB CM MADs that arrive at the
 * namespace's UDP 4791 for a CM of another process (forward/gsifwd.c).
 * Declared here, at the transport's level, and implemented above it, so
 * that the transport names no forward header.
 */
#ifndef SV_ENGINE_FORWARD_H
#define SV_ENGINE_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"
#include "engine/transport/sgl.h"
#include "proto/wire.h"

enum sv_xrcfwd_take {
	SV_XRCFWD_TAKEN, /* qe->resp holds the WQE's length */
	SV_XRCFWD_EMPTY, /* no receive WQE posted: RNR */
	SV_XRCFWD_GONE, /* no such SRQ in the domain (or its process died) */
};

/* Take a receive WQE of the SRQ srqn for qe's target QP (engine lock). */
enum sv_xrcfwd_take sv_xrcfwd_take(struct sv_qp_engine *qe, uint32_t srqn);
/* Place a request's payload at qe->resp.offset of the remote WQE. */
enum sv_sgl_err sv_xrcfwd_place(struct sv_qp_engine *qe, const uint8_t *data,
				uint32_t len);
/* Complete the remote WQE with wc (its wr_id is the owner's): 0, ENOSPC
 * (the SRQ's CQ overran) or EIO (gone). */
int sv_xrcfwd_complete(struct sv_qp_engine *qe, const struct ibv_wc *wc,
		       bool solicited);

/* A packet for QP1 that the 4791 socket took (its ICRC checked): true
 * when it is dealt with (sent to the CM it names, or dropped and
 * counted), false when it is for the engine's own GSI QP, if any (not a
 * CM MAD, or no CM serves its name). */
bool sv_gsi_forward(struct sv_engine *eng, struct sv_pkt *pkt,
		    const struct sv_flow *flow);

#endif
