/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Helpers for the UD, UC, SRQ, multicast and async-event integration tests,
 * on top of the harness (harness.h): an hx_ep's RC QP replaced by a QP of
 * another type (or on an SRQ), UD addressing, and async event waits.  Only
 * the public verbs API is used.
 */
#ifndef SV_TESTS_XQP_H
#define SV_TESTS_XQP_H

#include "harness.h"

#define XQ_QKEY 0x11111111u /* ibv_ud_pingpong's */
#define XQ_MCAST_QPN 0xffffffu
#define XQ_GRH 40

/* Destroy ep->qp and create a QP of `type` on ep's PD and CQs (on `srq`
 * if not NULL), moved to INIT: RC/UC with ep->o.qp_access, UD with
 * XQ_QKEY.  Fatal on error. */
void xq_new_qp(struct hx_ep *ep, enum ibv_qp_type type, struct ibv_srq *srq);
/* A second QP like xq_new_qp's, not stored in ep (the caller destroys it). */
struct ibv_qp *xq_create(struct hx_ep *ep, enum ibv_qp_type type,
			 struct ibv_srq *srq);

/* UD: INIT -> RTR (-> RTS when rts).  Returns the modify_qp rc. */
int xq_ud_rtr(struct ibv_qp *qp);
int xq_ud_rts(struct ibv_qp *qp);
/* An AH towards dgid from ep's GID index. Fatal on error. */
struct ibv_ah *xq_ah(struct hx_ep *ep, const union ibv_gid *dgid);
/* One UD send (single SGE).  Returns the post rc. */
int xq_ud_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn,
	       uint32_t qkey, enum ibv_wr_opcode op, unsigned flags,
	       uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey,
	       uint32_t imm_host);
/* One receive on any QP / SRQ (single SGE).  Returns the post rc. */
int xq_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len,
		 uint32_t lkey);
int xq_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, void *addr,
		     uint32_t len, uint32_t lkey);

/* UC or RC towards ep->peer without RC-only attributes for UC:
 * INIT -> RTR -> RTS of qp (usually ep->qp).  Returns the first modify rc. */
int xq_connect_qp(struct hx_ep *ep, struct ibv_qp *qp, uint32_t peer_qpn,
		  uint32_t peer_psn);

/* Wait up to timeout_ms for an async event of type `want` (events of
 * other types are logged and acked).  1 and *out filled (already acked
 * unless keep) when seen, else 0. */
int xq_wait_event(struct ibv_context *ctx, enum ibv_event_type want,
		  int timeout_ms, struct ibv_async_event *out, bool keep);
/* Assert that an event wait succeeded; evaluates to its result. */
#define CHECK_EV(expr)                                                      \
	({                                                                  \
		int _e = (expr);                                            \
		if (_e) {                                                   \
			check_passed++;                                     \
		} else {                                                    \
			check_failed++;                                     \
			fprintf(stderr, "%s:%d: [%s] event not seen: %s\n", \
				__FILE__, __LINE__, hx_role, #expr);        \
		}                                                           \
		_e;                                                         \
	})

/* Count the events of type `want` arriving within ms (all acked). */
int xq_count_events(struct ibv_context *ctx, enum ibv_event_type want, int ms);

/* Is this 40-byte GRH area the IPv4 header of a datagram from src to dst
 * (IPv4 strings), with a valid checksum?  Prints why not. */
bool xq_grh_ipv4_ok(const uint8_t *grh, const char *src, const char *dst,
		    uint32_t udp_payload);
/* The same for an IPv6 header (GIDs as the addresses). */
bool xq_grh_ipv6_ok(const uint8_t *grh, const union ibv_gid *src,
		    const union ibv_gid *dst, uint32_t udp_payload);

/* The GID of an IPv4 or IPv6 address string (IPv4-mapped for IPv4). */
union ibv_gid xq_gid_of(const char *ip);

/* XRC: RESET -> RTS of an XRC_SEND or XRC_RECV QP towards the peer's QP
 * dest (ep->peer's GID, ep->mtu; rnr_retry for an initiator).  Fatal. */
void xq_xrc_connect(struct hx_ep *ep, struct ibv_qp *qp, uint32_t dest,
		    uint32_t rq_psn, uint32_t sq_psn, uint8_t rnr_retry);
/* ibv_open_xrcd with a file (fd) or none (-1).  Fatal on error. */
struct ibv_xrcd *xq_xrcd_open(struct ibv_context *ctx, int fd, int oflags);
/* An XRC SRQ (64 WRs, 1 SGE) on ep's PD completing on cq, and its number.
 * Fatal on error. */
struct ibv_srq *xq_xrc_srq(struct hx_ep *ep, struct ibv_xrcd *x,
			   struct ibv_cq *cq, uint32_t *num);

#endif
