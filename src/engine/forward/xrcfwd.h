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
 * SRQ's process, which answers for its own queue, memory and CQ.  The
 * three are the transport's (transport/forward.h); here is the rest.
 */
#ifndef SV_ENGINE_XRCFWD_H
#define SV_ENGINE_XRCFWD_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/transport/forward.h"

/* Serve this process's XRC SRQs to other processes (idempotent; before
 * the first XRC SRQ gets its number). */
void sv_xrcfwd_init(void);

/* A target QP destroyed with a remote WQE taken (engine no longer running
 * it): that WQE completes there with IBV_WC_WR_FLUSH_ERR. */
void sv_xrcfwd_release(struct sv_qp *qp);

#endif
