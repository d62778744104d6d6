/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Receive: the checks every packet passes and its demultiplexing to the
 * QP and the role that handles it (recv.c).
 */
#ifndef SV_ENGINE_RECV_H
#define SV_ENGINE_RECV_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/transport/eng.h"
#include "proto/addr.h"

void sv_rx_pkt(struct sv_engine *eng, struct sv_sock *s, uint8_t *buf,
	       uint32_t len, bool truncated, const struct sv_flow *flow,
	       bool shm);
/* A packet that fault injection held back (inject.c): every check but
 * the faults. */
void sv_rx_held(struct sv_engine *eng, struct sv_sock *s, uint8_t *buf,
		uint32_t len, const struct sv_flow *flow, bool shm);

#endif
