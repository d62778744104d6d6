/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The counters' and QPs' output: the packet trace, QP dumps and the
 * report at destroy or close (stats.c), state and type names (qpnames.c,
 * also compiled into `softverbs stats`).
 */
#ifndef SV_ENGINE_DIAG_STATS_H
#define SV_ENGINE_DIAG_STATS_H

#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

struct sv_engine;
struct sv_qp_engine;

void sv_trace_pkt(struct sv_engine *eng, const char *dir, const uint8_t *hdr,
		  uint32_t len, const char *why);
/* The trace's line for an operation that travels without a packet (a
 * message channel's message, a one-copy WRITE or READ, a chunk copied
 * for a peer's WRITE): dir, the opcode a packet would have had, the QPN
 * it is for, its length, and extra (" va 0x... rkey 0x...", or ""). */
void sv_trace_op(struct sv_engine *eng, const char *dir, uint8_t opcode,
		 uint32_t qpn, uint64_t len, const char *extra);
const char *sv_qp_state_name(int state);
const char *sv_qp_type_name(enum ibv_qp_type type);
void sv_qp_dump(struct sv_qp_engine *qe, FILE *f);
void sv_qp_report(struct sv_qp_engine *qe, const char *what, FILE *f);
void sv_stats_print(struct sv_engine *eng, FILE *f);

#endif
