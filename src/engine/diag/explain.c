/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Explained failures (explain.h): the responder's access refusals, its
 * other errors and the requester's error completions, each as one line
 * that names the rule broken and the value that broke it.
 *
 * The requester cannot learn the target's reason from the wire (a NAK
 * carries a syndrome only): its line says what it asked for and points
 * at the target's line and counters, which the target's process writes.
 */
#include "engine/diag/explain.h"
#include "engine/diag/stats.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>

#include "core/device.h"
#include "core/mr.h"
#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"
#include "engine/transport/stats.h"
#include "engine/diag/strict.h"
#include "proto/addr.h"
#include "proto/wr.h"
#include "util/log.h"

/* "LOCAL_WRITE|REMOTE_READ", "none" for no right. */
static const char *access_names(unsigned int acc, char *buf, size_t len)
{
	static const struct {
		unsigned int bit;
		const char *name;
	} names[] = {
		{ IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE" },
		{ IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE" },
		{ IBV_ACCESS_REMOTE_READ, "REMOTE_READ" },
		{ IBV_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC" },
		{ IBV_ACCESS_MW_BIND, "MW_BIND" },
		{ IBV_ACCESS_ZERO_BASED, "ZERO_BASED" },
		{ IBV_ACCESS_ON_DEMAND, "ON_DEMAND" },
	};
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((acc & names[i].bit) && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s",
					      n ? "|" : "", names[i].name);
	if (!n)
		snprintf(buf, len, "none");
	return buf;
}

static const char *op_of_access(unsigned int access)
{
	if (access & IBV_ACCESS_REMOTE_WRITE)
		return "RDMA WRITE";
	if (access & IBV_ACCESS_REMOTE_READ)
		return "RDMA READ";
	return "ATOMIC";
}

static const char *right_of_access(unsigned int access)
{
	if (access & IBV_ACCESS_REMOTE_WRITE)
		return "IBV_ACCESS_REMOTE_WRITE";
	if (access & IBV_ACCESS_REMOTE_READ)
		return "IBV_ACCESS_REMOTE_READ";
	if (access & IBV_ACCESS_REMOTE_ATOMIC)
		return "IBV_ACCESS_REMOTE_ATOMIC";
	return "IBV_ACCESS_LOCAL_WRITE";
}

/* Why sv_mr_check_qp refused [va, va+len) of mr (what key found, NULL:
 * nothing) for access on behalf of qp and pd; counted when eng is given
 * (remote accesses: the responder's counters). */
static void fault_text(char *why, size_t n, struct sv_engine *eng,
		       struct sv_mr *mr, struct sv_qp *qp, struct sv_pd *pd,
		       uint32_t key, bool remote, uint64_t va, uint64_t len,
		       unsigned int access)
{
	const char *kind =
		remote && (key & SV_MW_KEY_BIT) ? "window" : "region";
	char has[96];

	switch (sv_mr_fault(mr, qp, pd, va, len, access)) {
	case SV_MR_FAULT_NONE: /* changed meanwhile: it was refused */
	case SV_MR_FAULT_INVALID:
		if (eng)
			SV_STAT(eng, access_invalid);
		snprintf(why, n, "the %s is being deregistered or invalidated",
			 kind);
		break;
	case SV_MR_FAULT_KEY:
		if (eng)
			SV_STAT(eng, access_no_key);
		snprintf(
			why, n,
			remote ?
				"no region or memory window has this rkey (never registered, deregistered, or the window was rebound: man ibv_inc_rkey)" :
				"no region has this lkey (never registered, or deregistered)");
		break;
	case SV_MR_FAULT_QP:
		if (eng)
			SV_STAT(eng, access_mw_qp);
		snprintf(
			why, n,
			"the type 2 memory window is bound to QP 0x%06x, not to this QP (IBA 10.6.7)",
			mr->bound_qp->qpx.qp_base.qp_num);
		break;
	case SV_MR_FAULT_PD:
		if (eng)
			SV_STAT(eng, access_pd);
		snprintf(
			why, n,
			"the %s's PD (handle %u) is not the QP's PD (handle %u) (IBA C9-88)",
			kind, mr->pd->ibv.handle, pd ? pd->ibv.handle : 0);
		break;
	case SV_MR_FAULT_RIGHTS:
		if (eng)
			SV_STAT(eng, access_rights);
		snprintf(why, n, "the %s lacks %s (has %s)", kind,
			 right_of_access(access),
			 access_names(mr->access, has, sizeof(has)));
		break;
	case SV_MR_FAULT_BOUNDS:
		if (eng)
			SV_STAT(eng, access_bounds);
		snprintf(why, n,
			 "outside the %s [0x%" PRIx64 ", 0x%" PRIx64
			 ") (length %" PRIu64 ")",
			 kind, mr->iova, mr->iova + mr->length, mr->length);
		break;
	}
}

void sv_explain_access(struct sv_qp_engine *qe, uint32_t rkey, uint64_t va,
		       uint64_t len, unsigned int access, struct sv_mr *mr,
		       struct sv_pd *pd)
{
	char why[256];

	fault_text(why, sizeof(why), qe->eng, mr, qe->qp, pd, rkey, true, va,
		   len, access);
	sv_warn_qp(&qe->qp->lograte, qe->qpn, "responder",
		   "%s rkey 0x%x addr 0x%" PRIx64 " len %" PRIu64
		   ": %s; the requester gets IBV_WC_REM_ACCESS_ERR",
		   op_of_access(access), rkey, va, len, why);
}

/* The first SGE of a gather/scatter list that the key table refuses;
 * locked: the caller holds the table's read lock (no references then). */
static void sgl_text(char *buf, size_t n, struct sv_qp *qp, struct sv_pd *pd,
		     const struct ibv_sge *sge, uint32_t nsge,
		     unsigned int access, bool locked)
{
	for (uint32_t i = 0; i < nsge; i++) {
		struct sv_mr *mr;
		char why[256];

		if (!sge[i].length)
			continue;
		mr = locked ? sv_mr_find_lkey_locked(sge[i].lkey) :
			      sv_mr_get_by_lkey(sge[i].lkey);
		if (sv_mr_fault(mr, qp, pd, sge[i].addr, sge[i].length,
				access) != SV_MR_FAULT_NONE) {
			fault_text(why, sizeof(why), NULL, mr, qp, pd,
				   sge[i].lkey, false, sge[i].addr,
				   sge[i].length, access);
			snprintf(buf, n,
				 "sg_list[%u] lkey 0x%x addr 0x%" PRIx64
				 " length %u: %s",
				 i, sge[i].lkey, sge[i].addr, sge[i].length,
				 why);
			if (mr && !locked)
				sv_mr_put(mr);
			return;
		}
		if (mr && !locked)
			sv_mr_put(mr);
	}
	snprintf(buf, n, "a region of its sg_list changed while it ran");
}

void sv_explain_recv_sgl(struct sv_qp_engine *qe, struct sv_pd *pd,
			 const struct ibv_sge *sge, uint32_t nsge, bool locked)
{
	char why[400];

	sgl_text(why, sizeof(why), qe->qp, pd, sge, nsge,
		 IBV_ACCESS_LOCAL_WRITE, locked);
	sv_warn_qp(
		&qe->qp->lograte, qe->qpn, "responder",
		"a receive WQE cannot take the message: %s; it completes with IBV_WC_LOC_PROT_ERR, the requester's with IBV_WC_REM_OP_ERR",
		why);
}

void sv_explain_recv_len(struct sv_qp_engine *qe, uint64_t wr_id, uint64_t room,
			 uint64_t len, bool whole)
{
	sv_warn_qp(
		&qe->qp->lograte, qe->qpn, "responder",
		"a SEND of %s%" PRIu64
		" bytes is longer than receive wr_id %#" PRIx64 "'s %" PRIu64
		" bytes; it completes with IBV_WC_LOC_LEN_ERR, the requester's with IBV_WC_REM_INV_REQ_ERR: post receives at least as long as the longest message",
		whole ? "" : "more than ", len, wr_id, room);
}

void sv_explain_rd_atomic(struct sv_qp_engine *qe, unsigned int access,
			  uint32_t busy)
{
	if (!qe->max_dest_rd_atomic)
		sv_warn_qp(
			&qe->qp->lograte, qe->qpn, "responder",
			"%s refused: the QP's max_dest_rd_atomic is 0, so it answers no READ or atomic (set it with ibv_modify_qp to RTR, at least the requester's max_rd_atomic); the requester gets IBV_WC_REM_INV_REQ_ERR",
			op_of_access(access));
	else
		sv_warn_qp(
			&qe->qp->lograte, qe->qpn, "responder",
			"%s refused: %u READ/atomic requests are being answered already, the QP's max_dest_rd_atomic (the requester's max_rd_atomic must not be above it); the requester gets IBV_WC_REM_INV_REQ_ERR",
			op_of_access(access), busy);
}

void sv_explain_misaligned(struct sv_qp_engine *qe, const char *op,
			   uint32_t rkey, uint64_t va)
{
	sv_warn_qp(
		&qe->qp->lograte, qe->qpn, "responder",
		"%s rkey 0x%x addr %#" PRIx64
		": the address is not 8-byte aligned, as an atomic's must be; the requester gets IBV_WC_REM_INV_REQ_ERR",
		op, rkey, va);
}

void sv_explain_inv_rkey(struct sv_qp_engine *qe, uint64_t wr_id, uint32_t rkey)
{
	sv_warn_qp(
		&qe->qp->lograte, qe->qpn, "responder",
		"a SEND with invalidate into receive wr_id %#" PRIx64
		" names rkey 0x%x, which is no bound type 2 memory window of the QP's PD (regions and type 1 windows cannot be invalidated: IBA 10.6.7); it completes with IBV_WC_REM_INV_REQ_ERR, as the requester's does",
		wr_id, rkey);
}

void sv_explain_cq_overrun(struct sv_qp_engine *qe, uint64_t wr_id)
{
	sv_warn_qp(
		&qe->qp->lograte, qe->qpn, "responder",
		"receive wr_id %#" PRIx64
		" completed into a full CQ (cqe %d): the CQ overran (IBV_EVENT_CQ_ERR), the QP goes to ERR (IBV_EVENT_QP_FATAL) and the requester gets IBV_WC_REM_OP_ERR; make the CQ as large as the receives and sends it may hold",
		wr_id, qe->qp->rcq ? qe->qp->rcq->ex.cqe : 0);
}

void sv_explain_state_drop(struct sv_qp_engine *qe, int state)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET",
		[IBV_QPS_INIT] = "INIT",
		[IBV_QPS_ERR] = "ERR",
	};

	/* Once, not per copy: the requester resends until it gives up,
	 * and each copy is dropped alike. */
	if (qe->said_drop_state == state + 1)
		return;
	qe->said_drop_state = (uint8_t)(state + 1);
	sv_warn_qp(
		&qe->qp->lograte, qe->qpn, "responder",
		"a request from QP 0x%06x arrives in state %s and is dropped, as IBA says (requests are taken from RTR on): its WR ends in IBV_WC_RETRY_EXC_ERR%s",
		qe->dest_qpn,
		(unsigned int)state < sizeof(names) / sizeof(names[0]) &&
				names[state] ?
			names[state] :
			"?",
		state == IBV_QPS_ERR ?
			"; this QP went to ERR before (an error completion or ibv_modify_qp says why)" :
			"; move this QP to RTR before the peer sends");
}

void sv_explain_qp_access(struct sv_qp_engine *qe, unsigned int access)
{
	char has[96];

	SV_STAT(qe->eng, access_qp_flags);
	sv_warn_qp(
		&qe->qp->lograte, qe->qpn, "responder",
		"%s refused: the QP's qp_access_flags lack %s (has %s; set it with ibv_modify_qp IBV_QP_ACCESS_FLAGS); the requester gets IBV_WC_REM_ACCESS_ERR",
		op_of_access(access), right_of_access(access),
		access_names(qe->access, has, sizeof(has)));
}

void sv_explain_resp(struct sv_qp_engine *qe, const char *err,
		     const char *opcode, uint32_t psn)
{
	sv_warn_qp(&qe->qp->lograte, qe->qpn, "responder",
		   "%s on %s psn %u (SOFTVERBS_LOG=3 dumps the QP)", err,
		   opcode, psn);
}

static void gid_str(const uint8_t raw[16], char *buf, size_t n)
{
	if (!inet_ntop(AF_INET6, raw, buf, (socklen_t)n))
		snprintf(buf, n, "?");
}

static void ip_str(const struct sv_ipaddr *ip, char *buf, size_t n)
{
	struct sockaddr_in6 sin6;

	sv_ipaddr_to_sin6(ip, 0, 0, &sin6);
	gid_str(sin6.sin6_addr.s6_addr, buf, n);
}

/* Where the QP's requests went ("dgid X"), and what about its GIDs keeps
 * them from arriving or their answers from coming back (a note starting
 * "; ", or ""): the reasons a peer that exists and runs never answers. */
static void path_text(struct sv_qp_engine *qe, char *where, size_t wn,
		      char *note, size_t nn)
{
	const struct ibv_ah_attr *ah = &qe->qp->attr.ah_attr;
	struct sv_gid_entry tab[SV_MAX_GIDS];
	char d[INET6_ADDRSTRLEN], s[INET6_ADDRSTRLEN];
	int n, i = ah->grh.sgid_index;

	note[0] = '\0';
	if (!ah->is_global) {
		snprintf(where, wn, "no GRH (this host)");
		return;
	}
	gid_str(ah->grh.dgid.raw, d, sizeof(d));
	snprintf(where, wn, "dgid %s", d);
	n = sv_gid_table(tab, SV_MAX_GIDS);
	if (i >= n)
		return;
	gid_str(tab[i].gid.raw, s, sizeof(s));
	switch (sv_gid_pair_check(tab[i].gid.raw, ah->grh.dgid.raw)) {
	case SV_GID_PAIR_FAMILY:
		snprintf(
			note, nn,
			"; sgid_index %d %s is %s but the dgid is %s: the peer sees packets of another address family than its GID and drops them (use GIDs of one family on both sides)",
			i, s, sv_gid_v4mapped(tab[i].gid.raw) ? "IPv4" : "IPv6",
			sv_gid_v4mapped(ah->grh.dgid.raw) ? "IPv4" : "IPv6");
		return;
	case SV_GID_PAIR_LOOPBACK_SRC:
		snprintf(
			note, nn,
			"; sgid_index %d is the loopback GID %s: its packets never leave this host, and a peer knowing us by another GID drops them (use the GID of the address the peer reaches us on)",
			i, s);
		return;
	case SV_GID_PAIR_LOOPBACK_DST:
		snprintf(
			note, nn,
			"; the dgid is a loopback address: it reaches this host only, and the peer sees our packets come from sgid_index %d %s (use the peer's GID of a real address)",
			i, s);
		return;
	case SV_GID_PAIR_OK:
		break;
	}
	if (sv_gid_loopback(ah->grh.dgid.raw))
		snprintf(
			note, nn,
			"; the dgid is a loopback address: a peer on this host only");
	else if (sv_gid_linklocal(ah->grh.dgid.raw))
		snprintf(
			note, nn,
			"; the dgid is link-local: it reaches only the link of sgid_index %d %s",
			i, s);
}

void sv_explain_wrong_src(struct sv_qp_engine *qe, const struct sv_flow *flow)
{
	char from[INET6_ADDRSTRLEN], want[INET6_ADDRSTRLEN];

	if (qe->said_wrong_src)
		return;
	qe->said_wrong_src = true;
	ip_str(&flow->src, from, sizeof(from));
	ip_str(&qe->flow.dst, want, sizeof(want));
	sv_warn_qp(
		&qe->qp->lograte, qe->qpn, "receiver",
		"packets for this QP come from %s, but it is connected to %s (its ah_attr.grh.dgid): they are dropped, and the peer's %s; the peer's sgid must be the GID given here as dgid, and ours its dgid",
		from, want,
		qe->type == IBV_QPT_RC ? "WRs end in IBV_WC_RETRY_EXC_ERR" :
					 "messages are lost");
}

void sv_explain_wqe(struct sv_qp_engine *qe, const struct sv_send_wqe *w,
		    enum ibv_wc_status st)
{
	static const char *const names[] = {
		[IBV_WC_LOC_LEN_ERR] = "IBV_WC_LOC_LEN_ERR",
		[IBV_WC_LOC_QP_OP_ERR] = "IBV_WC_LOC_QP_OP_ERR",
		[IBV_WC_LOC_PROT_ERR] = "IBV_WC_LOC_PROT_ERR",
		[IBV_WC_MW_BIND_ERR] = "IBV_WC_MW_BIND_ERR",
		[IBV_WC_REM_INV_REQ_ERR] = "IBV_WC_REM_INV_REQ_ERR",
		[IBV_WC_REM_ACCESS_ERR] = "IBV_WC_REM_ACCESS_ERR",
		[IBV_WC_REM_OP_ERR] = "IBV_WC_REM_OP_ERR",
		[IBV_WC_RETRY_EXC_ERR] = "IBV_WC_RETRY_EXC_ERR",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "IBV_WC_RNR_RETRY_EXC_ERR",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "IBV_WC_REM_INV_RD_REQ_ERR",
	};
	const char *op = sv_wr(w->opcode)->name;
	char what[160], why[800], stname[32], where[80], note[400];

	if ((unsigned int)st < sizeof(names) / sizeof(names[0]) && names[st])
		snprintf(stname, sizeof(stname), "%s", names[st]);
	else
		snprintf(stname, sizeof(stname), "status %d", (int)st);

	snprintf(what, sizeof(what),
		 "wr_id %#" PRIx64 " IBV_WR_%s len %" PRIu64, w->wr_id,
		 op ? op : "?", w->length);
	switch (st) {
	case IBV_WC_RETRY_EXC_ERR:
		path_text(qe, where, sizeof(where), note, sizeof(note));
		snprintf(
			why, sizeof(why),
			"no acknowledgment from QP 0x%06x at %s after retry_cnt %u retries of the Local ACK Timeout (timeout %u): the peer QP is gone, not in RTR/RTS, or unreachable at that GID%s",
			qe->dest_qpn, where, qe->retry_cnt, qe->timeout, note);
		break;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		snprintf(
			why, sizeof(why),
			"QP 0x%06x had no receive WQE posted (Receiver Not Ready) after rnr_retry %u retries: post receives before the peer sends, or set rnr_retry 7 (retry forever)",
			qe->dest_qpn, qe->rnr_retry);
		break;
	case IBV_WC_REM_ACCESS_ERR:
		snprintf(
			why, sizeof(why),
			"QP 0x%06x refused the access (rkey 0x%x addr %#" PRIx64
			"): its process logs which check failed (\"responder:\") and counts it (SOFTVERBS_STATS=1, access_*)",
			qe->dest_qpn,
			sv_wr_is(w->opcode, SV_WR_ATOMIC) ? w->wr.atomic.rkey :
							    w->wr.rdma.rkey,
			sv_wr_is(w->opcode, SV_WR_ATOMIC) ?
				w->wr.atomic.remote_addr :
				w->wr.rdma.remote_addr);
		break;
	case IBV_WC_REM_INV_REQ_ERR:
		snprintf(
			why, sizeof(why),
			"QP 0x%06x found the request invalid (a message longer than its receive WQE, a misaligned atomic, READs or atomics beyond its max_dest_rd_atomic, an rkey it cannot invalidate, an opcode it does not take): its process logs which (\"responder:\")",
			qe->dest_qpn);
		break;
	case IBV_WC_REM_OP_ERR:
		snprintf(
			why, sizeof(why),
			"QP 0x%06x could not execute it (its receive WQE's memory, its CQ): its process logs which (\"responder:\")",
			qe->dest_qpn);
		break;
	case IBV_WC_LOC_PROT_ERR:
		/* The gather list, or where a READ/atomic result goes. */
		sgl_text(why, sizeof(why), qe->qp, qe->qp->pd, w->sge,
			 w->num_sge,
			 sv_wr_is(w->opcode, SV_WR_READ | SV_WR_ATOMIC) ?
				 IBV_ACCESS_LOCAL_WRITE :
				 0,
			 false);
		break;
	case IBV_WC_LOC_LEN_ERR:
		snprintf(why, sizeof(why),
			 "a UD message is one packet: %" PRIu64
			 " bytes are above the path MTU %u",
			 w->length, qe->pmtu);
		break;
	case IBV_WC_LOC_QP_OP_ERR:
		snprintf(
			why, sizeof(why),
			"no route to the address handle's destination GID (or no AH)");
		break;
	case IBV_WC_MW_BIND_ERR:
		snprintf(
			why, sizeof(why),
			w->opcode == IBV_WR_BIND_MW ?
				"the bind's window, region, PD, rights or range do not fit (IBA 10.6.7)" :
				"the key to invalidate is not a window of this QP's PD or cannot be invalidated here");
		break;
	default:
		snprintf(why, sizeof(why), "see ibv_wc_status_str");
		break;
	}
	sv_warn_qp(&qe->qp->lograte, qe->qpn, "completer",
		   "%s fails with %s: %s", what, stname, why);
	/* rnr_retry 0 ends the QP at the first RNR NAK: a receiver that
	 * posts its receive a moment late kills it on hardware as here,
	 * however rarely that happens in tests. */
	if (st == IBV_WC_RNR_RETRY_EXC_ERR && !qe->rnr_retry)
		sv_strict_qp(
			qe->qp, "rnr-retry-0",
			"%s: QP 0x%06x answered with an RNR NAK (no receive WQE posted yet) and rnr_retry is 0, so the first one ends this QP; a receiver that posts late is a race every HCA loses: post receives before the peer can send, or set rnr_retry 7 (retry forever) or a count with min_rnr_timer",
			what, qe->dest_qpn);
}
