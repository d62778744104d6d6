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

/* A message longer than the receive WQE (room bytes) that takes it. */
void sv_explain_recv_len(struct sv_qp_engine *qe, uint64_t room, uint64_t len);

/* A send WQE completes with error status st (not a flush). */
void sv_explain_wqe(struct sv_qp_engine *qe, const struct sv_send_wqe *w,
		    enum ibv_wc_status st);

#endif
