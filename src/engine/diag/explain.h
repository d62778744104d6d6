/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Why a remote access or a send WQE failed, told where it is decided
 * (util/log.h: one warning line naming the rule and the value, limited
 * per QP), with a counter per reason that SOFTVERBS_STATS=1 prints.  Only
 * failure paths call these.
 */
#ifndef SV_ENGINE_EXPLAIN_H
#define SV_ENGINE_EXPLAIN_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

struct sv_qp_engine;
struct sv_mr;
struct sv_pd;
struct sv_send_wqe;

/* The responder refused [va, va+len) of rkey for access (one
 * IBV_ACCESS_REMOTE_* right): mr is what the key found (NULL: nothing;
 * the caller's reference is still held), pd the PD the access is for. */
void sv_explain_access(struct sv_qp_engine *qe, uint32_t rkey, uint64_t va,
		       uint64_t len, unsigned int access, struct sv_mr *mr,
		       struct sv_pd *pd);

/* The responder refused a request because the QP itself is not enabled
 * for the remote operation (its qp_access_flags). */
void sv_explain_qp_access(struct sv_qp_engine *qe, unsigned int access);

/* A responder error other than an access check (the error state's name,
 * the request's opcode and PSN). */
void sv_explain_resp(struct sv_qp_engine *qe, const char *err,
		     const char *opcode, uint32_t psn);

/* A receive WQE's scatter list cannot take a message (pd: the PD the
 * receive is for); locked: the caller holds the key table's read lock
 * (core/mr.h: sv_mr_read_lock), which must not be taken again. */
void sv_explain_recv_sgl(struct sv_qp_engine *qe, struct sv_pd *pd,
			 const struct ibv_sge *sge, uint32_t nsge, bool locked);

/* A SEND of len bytes is longer than receive wr_id (room bytes in its
 * scatter list); whole: len is the message's length, else only what
 * arrived of it so far (the packet path learns it at the last packet). */
void sv_explain_recv_len(struct sv_qp_engine *qe, uint64_t wr_id, uint64_t room,
			 uint64_t len, bool whole);

/* A READ or atomic (access: its IBV_ACCESS_REMOTE_* right) beyond the
 * QP's max_dest_rd_atomic, busy being answered already. */
void sv_explain_rd_atomic(struct sv_qp_engine *qe, unsigned int access,
			  uint32_t busy);

/* An atomic (op: "ATOMIC", "ATOMIC WRITE") at an address not 8-byte
 * aligned. */
void sv_explain_misaligned(struct sv_qp_engine *qe, const char *op,
			   uint32_t rkey, uint64_t va);

/* A SEND with Invalidate into receive wr_id named rkey, which is no
 * window it may invalidate. */
void sv_explain_inv_rkey(struct sv_qp_engine *qe, uint64_t wr_id,
			 uint32_t rkey);

/* The receive CQ had no room for receive wr_id's completion. */
void sv_explain_cq_overrun(struct sv_qp_engine *qe, uint64_t wr_id);

/* A request arrived at an RC QP in RESET, INIT or ERR (state) and was
 * dropped: said once until the QP takes a request again. */
void sv_explain_state_drop(struct sv_qp_engine *qe, int state);

/* A packet for the QP came from flow->src, not from the peer's address:
 * said once per QP. */
struct sv_flow;
void sv_explain_wrong_src(struct sv_qp_engine *qe, const struct sv_flow *flow);

/* A send WQE completes with error status st (not a flush). */
void sv_explain_wqe(struct sv_qp_engine *qe, const struct sv_send_wqe *w,
		    enum ibv_wc_status st);

#endif
