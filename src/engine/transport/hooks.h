/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The transport's diagnostics hooks: the one way the transport reaches
 * packet capture, explanations, fault injection, strict checks, traces and
 * the live counters' slots (src/engine/diag).  diag fills sv_hooks once per
 * process, before its first engine runs (diag/diag.c); a hook left NULL
 * costs the transport one predictable branch and no call.  Fault
 * injection's packet and WR hooks are filled only when rules ask for them,
 * so that without SOFTVERBS_FAULT no packet passes through them.
 *
 * The transport names no diag header: what it keeps for the diagnostics in
 * its own state (a QP's place in the capture's PSN space, the kinds of WR
 * fault the responder acts on) is declared here.
 */
#ifndef SV_ENGINE_HOOKS_H
#define SV_ENGINE_HOOKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

struct sv_engine;
struct sv_flow;
struct sv_mr;
struct sv_pd;
struct sv_qp;
struct sv_qp_engine;
struct sv_send_wqe;
struct sv_sock;
struct sv_tx;

#define sv_hook_unlikely(x) __builtin_expect(!!(x), 0)

/* Fault kinds (diag/inject.c); the responder acts on the WR faults. */
enum sv_inj_kind {
	/* packet faults */
	SV_INJ_DROP,
	SV_INJ_DUP,
	SV_INJ_DELAY,
	SV_INJ_REORDER,
	SV_INJ_CORRUPT,
	/* WR faults: at the responder, per request message */
	SV_INJ_RNR,
	SV_INJ_ACCESS,
	SV_INJ_RETRY,
	/* at a receiver of large SENDs: reading the sender's memory */
	SV_INJ_PULL,
	SV_INJ_NKINDS
};

/*
 * A QP's place in the capture's PSN space (SOFTVERBS_PCAP, diag/pcap.c),
 * under the capture's lock.  The message channel and one-copy placement
 * use no PSN (docs/fastpath.md), so the packets written for them take PSNs
 * of the capture's own: the file shows a QP's PSN plus the number of such
 * packets written before it on the same side, so that every PSN appears
 * once and in order.
 */
struct sv_hook_pcap_qp {
	uint32_t tx_shift; /* as requester: PSNs the fast path stood for */
	uint32_t rx_shift; /* as responder: messages taken from the channel */
	uint32_t chan_first; /* capture PSN of the oldest unacked message */
	uint32_t chan_unacked; /* channel messages sent, not acknowledged */
	bool rx_acked; /* the last message taken was an atomic, acknowledged */
};

struct sv_hooks {
	/* Packet capture: on while a capture file is open. */
	atomic_bool pcap_on;
	void (*pcap_pkt)(struct sv_qp_engine *qe, bool tx,
			 const struct sv_flow *flow, const uint8_t *pkt,
			 uint32_t len);

	/* Fault injection (diag/inject.h says what each decides). */
	bool (*inject_qp)(const struct sv_qp_engine *qe);
	unsigned int (*inject_tx)(struct sv_engine *eng, struct sv_tx *t,
				  uint32_t qpn);
	unsigned int (*inject_rx)(struct sv_engine *eng, struct sv_sock *s,
				  uint8_t *buf, uint32_t len,
				  const struct sv_flow *flow, bool shm,
				  uint32_t qpn);
	enum sv_inj_kind (*inject_wr)(struct sv_qp_engine *qe, uint32_t psn,
				      bool rwqe);
	void (*inject_release)(struct sv_engine *eng, bool rx);
	void (*inject_qp_gone)(struct sv_qp_engine *qe);

	/* The live counters' slot of a QP (diag/statseg.c): open gives the
	 * QP its counters (qe->ctr), close returns them, note writes its
	 * state and path after they change. */
	void (*statseg_qp_open)(struct sv_qp_engine *qe);
	void (*statseg_qp_close)(struct sv_qp_engine *qe);
	void (*statseg_qp_note)(struct sv_qp_engine *qe);

	/* Explanations of errors (diag/explain.h). */
	void (*explain_access)(struct sv_qp_engine *qe, uint32_t rkey,
			       uint64_t va, uint64_t len, unsigned int access,
			       struct sv_mr *mr, struct sv_pd *pd);
	void (*explain_qp_access)(struct sv_qp_engine *qe, unsigned int access);
	void (*explain_resp)(struct sv_qp_engine *qe, const char *err,
			     const char *opcode, uint32_t psn);
	void (*explain_recv_sgl)(struct sv_qp_engine *qe, struct sv_pd *pd,
				 const struct ibv_sge *sge, uint32_t nsge,
				 bool locked);
	void (*explain_recv_len)(struct sv_qp_engine *qe, uint64_t wr_id,
				 uint64_t room, uint64_t len, bool whole);
	void (*explain_rd_atomic)(struct sv_qp_engine *qe, unsigned int access,
				  uint32_t busy);
	void (*explain_misaligned)(struct sv_qp_engine *qe, const char *op,
				   uint32_t rkey, uint64_t va);
	void (*explain_inv_rkey)(struct sv_qp_engine *qe, uint64_t wr_id,
				 uint32_t rkey);
	void (*explain_cq_overrun)(struct sv_qp_engine *qe, uint64_t wr_id);
	void (*explain_state_drop)(struct sv_qp_engine *qe, int state);
	void (*explain_wrong_src)(struct sv_qp_engine *qe,
				  const struct sv_flow *flow);
	void (*explain_wqe)(struct sv_qp_engine *qe,
			    const struct sv_send_wqe *w, enum ibv_wc_status st);

	/* SOFTVERBS_STRICT=1: a WQE's data changed before it completed? */
	void (*strict_sum_check)(struct sv_qp *qp, const struct sv_send_wqe *w);

	/* Traces and dumps (diag/stats.c), called when the log level or
	 * SOFTVERBS_TRACE asks for them. */
	void (*trace_pkt)(struct sv_engine *eng, const char *dir,
			  const uint8_t *hdr, uint32_t len, const char *why);
	void (*qp_dump)(struct sv_qp_engine *qe, FILE *f);
	void (*qp_report)(struct sv_qp_engine *qe, const char *what, FILE *f);
	void (*stats_print)(struct sv_engine *eng, FILE *f);
};

extern struct sv_hooks sv_hooks;

/* Each hook through its wrapper: nothing when it is not set. */
#define SV_HOOK_CALL(name, ...)                              \
	do {                                                 \
		if (sv_hook_unlikely(sv_hooks.name != NULL)) \
			sv_hooks.name(__VA_ARGS__);          \
	} while (0)

static inline bool sv_hook_pcap_on(void)
{
	return sv_hook_unlikely(
		atomic_load_explicit(&sv_hooks.pcap_on, memory_order_relaxed));
}

static inline void sv_hook_pcap_pkt(struct sv_qp_engine *qe, bool tx,
				    const struct sv_flow *flow,
				    const uint8_t *pkt, uint32_t len)
{
	SV_HOOK_CALL(pcap_pkt, qe, tx, flow, pkt, len);
}

/* Some rule may touch this QP: it keeps to the packet path. */
static inline bool sv_hook_inject_qp(const struct sv_qp_engine *qe)
{
	return sv_hook_unlikely(sv_hooks.inject_qp != NULL) &&
	       sv_hooks.inject_qp(qe);
}

/* Some rule acts on sent (received) packets: the batch (the packet)
 * goes through sv_hook_inject_tx (_rx). */
static inline bool sv_hook_inject_tx_on(void)
{
	return sv_hook_unlikely(sv_hooks.inject_tx != NULL);
}

static inline bool sv_hook_inject_rx_on(void)
{
	return sv_hook_unlikely(sv_hooks.inject_rx != NULL);
}

/* Copies to send (receive) now; call only when _on said so. */
static inline unsigned int sv_hook_inject_tx(struct sv_engine *eng,
					     struct sv_tx *t, uint32_t qpn)
{
	return sv_hooks.inject_tx(eng, t, qpn);
}

static inline unsigned int sv_hook_inject_rx(struct sv_engine *eng,
					     struct sv_sock *s, uint8_t *buf,
					     uint32_t len,
					     const struct sv_flow *flow,
					     bool shm, uint32_t qpn)
{
	return sv_hooks.inject_rx(eng, s, buf, len, flow, shm, qpn);
}

static inline enum sv_inj_kind sv_hook_inject_wr(struct sv_qp_engine *qe,
						 uint32_t psn, bool rwqe)
{
	if (sv_hook_unlikely(sv_hooks.inject_wr != NULL))
		return sv_hooks.inject_wr(qe, psn, rwqe);
	return SV_INJ_NKINDS;
}

static inline void sv_hook_inject_release(struct sv_engine *eng, bool rx)
{
	SV_HOOK_CALL(inject_release, eng, rx);
}

static inline void sv_hook_inject_qp_gone(struct sv_qp_engine *qe)
{
	SV_HOOK_CALL(inject_qp_gone, qe);
}

static inline void sv_hook_statseg_qp_open(struct sv_qp_engine *qe)
{
	SV_HOOK_CALL(statseg_qp_open, qe);
}

static inline void sv_hook_statseg_qp_close(struct sv_qp_engine *qe)
{
	SV_HOOK_CALL(statseg_qp_close, qe);
}

static inline void sv_hook_statseg_qp_note(struct sv_qp_engine *qe)
{
	SV_HOOK_CALL(statseg_qp_note, qe);
}

static inline void sv_hook_explain_access(struct sv_qp_engine *qe,
					  uint32_t rkey, uint64_t va,
					  uint64_t len, unsigned int access,
					  struct sv_mr *mr, struct sv_pd *pd)
{
	SV_HOOK_CALL(explain_access, qe, rkey, va, len, access, mr, pd);
}

static inline void sv_hook_explain_qp_access(struct sv_qp_engine *qe,
					     unsigned int access)
{
	SV_HOOK_CALL(explain_qp_access, qe, access);
}

static inline void sv_hook_explain_resp(struct sv_qp_engine *qe,
					const char *err, const char *opcode,
					uint32_t psn)
{
	SV_HOOK_CALL(explain_resp, qe, err, opcode, psn);
}

static inline void sv_hook_explain_recv_sgl(struct sv_qp_engine *qe,
					    struct sv_pd *pd,
					    const struct ibv_sge *sge,
					    uint32_t nsge, bool locked)
{
	SV_HOOK_CALL(explain_recv_sgl, qe, pd, sge, nsge, locked);
}

static inline void sv_hook_explain_recv_len(struct sv_qp_engine *qe,
					    uint64_t wr_id, uint64_t room,
					    uint64_t len, bool whole)
{
	SV_HOOK_CALL(explain_recv_len, qe, wr_id, room, len, whole);
}

static inline void sv_hook_explain_rd_atomic(struct sv_qp_engine *qe,
					     unsigned int access, uint32_t busy)
{
	SV_HOOK_CALL(explain_rd_atomic, qe, access, busy);
}

static inline void sv_hook_explain_misaligned(struct sv_qp_engine *qe,
					      const char *op, uint32_t rkey,
					      uint64_t va)
{
	SV_HOOK_CALL(explain_misaligned, qe, op, rkey, va);
}

static inline void sv_hook_explain_inv_rkey(struct sv_qp_engine *qe,
					    uint64_t wr_id, uint32_t rkey)
{
	SV_HOOK_CALL(explain_inv_rkey, qe, wr_id, rkey);
}

static inline void sv_hook_explain_cq_overrun(struct sv_qp_engine *qe,
					      uint64_t wr_id)
{
	SV_HOOK_CALL(explain_cq_overrun, qe, wr_id);
}

static inline void sv_hook_explain_state_drop(struct sv_qp_engine *qe,
					      int state)
{
	SV_HOOK_CALL(explain_state_drop, qe, state);
}

static inline void sv_hook_explain_wrong_src(struct sv_qp_engine *qe,
					     const struct sv_flow *flow)
{
	SV_HOOK_CALL(explain_wrong_src, qe, flow);
}

static inline void sv_hook_explain_wqe(struct sv_qp_engine *qe,
				       const struct sv_send_wqe *w,
				       enum ibv_wc_status st)
{
	SV_HOOK_CALL(explain_wqe, qe, w, st);
}

static inline void sv_hook_strict_sum_check(struct sv_qp *qp,
					    const struct sv_send_wqe *w)
{
	SV_HOOK_CALL(strict_sum_check, qp, w);
}

static inline void sv_hook_trace_pkt(struct sv_engine *eng, const char *dir,
				     const uint8_t *hdr, uint32_t len,
				     const char *why)
{
	SV_HOOK_CALL(trace_pkt, eng, dir, hdr, len, why);
}

static inline void sv_hook_qp_dump(struct sv_qp_engine *qe, FILE *f)
{
	SV_HOOK_CALL(qp_dump, qe, f);
}

static inline void sv_hook_qp_report(struct sv_qp_engine *qe, const char *what,
				     FILE *f)
{
	SV_HOOK_CALL(qp_report, qe, what, f);
}

static inline void sv_hook_stats_print(struct sv_engine *eng, FILE *f)
{
	SV_HOOK_CALL(stats_print, eng, f);
}

#endif
