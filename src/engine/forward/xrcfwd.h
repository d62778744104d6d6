/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Receives forwarded to an XRC SRQ of another process (xrcfwd.c).
 *
 * Processes of one user that open an XRC domain through the same file
 * share it.  A target QP keeps its transport (PSNs, ACKs, NAKs, READ and
 * atomic replies) in the process that made it; when a request names an
 * SRQ of the domain that another process made, the target QP's responder
 * runs as for its own SRQ, but the three things it does with the receive
 * WQE - take one, place bytes in it, complete it - are asked of the
 * SRQ's process, which answers for its own queue, memory and CQ.
 */
#ifndef SV_ENGINE_XRCFWD_H
#define SV_ENGINE_XRCFWD_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/transport/qpe.h"
#include "engine/transport/sgl.h"

/* Serve this process's XRC SRQs to other processes (idempotent; before
 * the first XRC SRQ gets its number). */
void sv_xrcfwd_init(void);

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

/* A target QP destroyed with a remote WQE taken (engine no longer running
 * it): that WQE completes there with IBV_WC_WR_FLUSH_ERR. */
void sv_xrcfwd_release(struct sv_qp *qp);

#endif
