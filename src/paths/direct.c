/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One-copy placement (docs/fastpath.md, layer 2): an RC QP whose peer is
 * a process of this host attached through the shm link executes RDMA
 * WRITE (without immediate) and RDMA READ itself, with one
 * process_vm_writev / process_vm_readv between its registered memory and
 * the peer's, instead of sending packets.  The target process does
 * nothing: the copy is checked against the target's published table
 * (core/pubtab.h) with the rules its responder applies to a request, and
 * the WQE completes locally, in send queue order, before the requester
 * returns.
 *
 * When it applies: the WQE is the next one to complete (every earlier WQE
 * of the QP has completed, so it cannot overtake a SEND, READ or atomic
 * still on its way, and nothing is outstanding), the QP is in RTS, and the
 * message is not empty.  No PSN is used: the responder's expected PSN is
 * the requester's next one either way.  Any refusal (a check of the
 * table, our own SGL, or the copy failing) leaves the WQE to the packet
 * path, which produces exactly the completion and errors a remote HCA
 * would (REM_ACCESS_ERR, both QPs to ERR...): the direct path only ever
 * executes what the packet path would have executed successfully.
 *
 * Nothing here allocates or takes a lock beyond the key table's read
 * lock the lkey lookups take on the packet path too (held across a small
 * copy instead of MR references); the only system call is the copy.
 * While it holds the peer's entries it takes no lock, so a peer waiting
 * for them to drain (deregistration, QP state change) only waits for a
 * copy.
 */
#include "paths/paths.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/mr.h"
#include "core/pubtab.h"
#include "engine/comp.h"
#include "engine/dma.h"
#include "engine/eng.h"
#include "engine/limits.h"
#include "engine/req.h"
#include "engine/path.h"
#include "engine/qpe.h"
#include "engine/stats.h"
#include "util/env.h"
#include "util/lockorder.h"

/* Our side of the transfer, checked with our lkeys (IBA 10.6.3), its MRs
 * kept from deregistration until the copy is over (read lock or
 * references). */
struct local_sgl {
	struct iovec iov[SV_MAX_SGE];
	struct sv_mr *mr[SV_MAX_SGE];
	uint32_t n, nmr;
	bool locked; /* key table read-locked instead of references */
};

/* Up to this length the copy runs under the key table's read lock, with
 * no reference per MR (two atomic operations fewer per SGE): a
 * registration or deregistration elsewhere in the process waits for at
 * most such a copy.  Longer copies take references, so that only the
 * deregistration of their own MRs waits for them. */
#define SV_DIRECT_LOCKED_MAX 65536

/* Up to this length a copy goes through the target's /proc/PID/mem
 * (sv_direct_copy). */
#define SV_DIRECT_MEMFD_MAX 4096

static void local_put(struct local_sgl *l)
{
	if (l->locked) {
		l->locked = false;
		sv_mr_read_unlock();
		return;
	}
	while (l->nmr)
		sv_mr_put(l->mr[--l->nmr]);
}

static bool local_get(struct sv_qp_engine *qe, struct sv_send_wqe *wqe,
		      unsigned int access, struct local_sgl *l)
{
	uint32_t i;

	l->n = l->nmr = 0;
	l->locked = false;
	if (wqe->send_flags & IBV_SEND_INLINE) {
		l->iov[0].iov_base = wqe->inline_data;
		l->iov[0].iov_len = wqe->length;
		l->n = 1;
		return true;
	}
	if (wqe->num_sge > SV_MAX_SGE)
		return false;
	if (wqe->length <= SV_DIRECT_LOCKED_MAX) {
		l->locked = true;
		sv_mr_read_lock();
	}
	for (i = 0; i < wqe->num_sge; i++) {
		const struct ibv_sge *s = &wqe->sge[i];
		struct sv_mr *mr;
		void *p;

		if (!s->length)
			continue;
		mr = l->locked ? sv_mr_find_lkey_locked(s->lkey) :
				 sv_mr_get_by_lkey(s->lkey);
		p = sv_mr_check(mr, qe->qp->pd, s->addr, s->length, access);
		if (!p) {
			if (mr && !l->locked)
				sv_mr_put(mr);
			local_put(l);
			return false; /* the packet path reports LOC_PROT_ERR */
		}
		if (!l->locked)
			l->mr[l->nmr++] = mr;
		l->iov[l->n].iov_base = p;
		l->iov[l->n].iov_len = s->length;
		l->n++;
	}
	if (!l->n) {
		local_put(l);
		return false;
	}
	return true;
}

/* Copy between our iovec and [rva, rva+len) of process pid, looping on
 * partial transfers (a call moves at most about 2 GiB, and stops at a
 * page the target does not have mapped).  The local iovec is consumed. */
bool sv_direct_copy(const struct sv_pubtab_view *tab, bool write,
		    struct iovec *iov, uint32_t n, uintptr_t rva, uint64_t len,
		    bool *via_mem)
{
	pid_t pid = sv_pubtab_pid(tab);
	uint32_t i = 0;
	int memfd;

	if (sv_pubtab_is_self(tab)) {
		/* Two contexts of one process: the peer's memory is ours. */
		for (i = 0; i < n; i++) {
			bool ok = write ? sv_dma_copy((void *)rva,
						      iov[i].iov_base,
						      iov[i].iov_len) :
					  sv_dma_copy(iov[i].iov_base,
						      (void *)rva,
						      iov[i].iov_len);

			/* A page faulted: as a failed process_vm_writev,
			 * the packet path redoes it and reports it. */
			if (!ok)
				return false;
			rva += iov[i].iov_len;
		}
		return true;
	}
	/* Small copies through the target's /proc/PID/mem: ~0.9 us for 8 B
	 * here against ~1.2 us for process_vm_writev, which looks the
	 * process up and checks ptrace access again at every call.  It
	 * bounces through a kernel page, so bulk copies keep
	 * process_vm_writev/readv (faster from 32 KiB on: 3.0 against 4.7
	 * us per 32 KiB here). */
	memfd = len <= SV_DIRECT_MEMFD_MAX ? sv_pubtab_memfd(tab) : -1;
	*via_mem = memfd >= 0;
	while (len) {
		struct iovec r = { .iov_base = (void *)rva, .iov_len = len };
		ssize_t got;
		uint64_t left;

		SV_DMA_BEGIN();
		if (memfd >= 0)
			got = write ? pwritev(memfd, iov + i, (int)(n - i),
					      (off_t)rva) :
				      preadv(memfd, iov + i, (int)(n - i),
					     (off_t)rva);
		else
			got = write ? process_vm_writev(pid, iov + i, n - i, &r,
							1, 0) :
				      process_vm_readv(pid, iov + i, n - i, &r,
						       1, 0);
		SV_DMA_END();
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		rva += (uint64_t)got;
		len -= (uint64_t)got;
		for (left = (uint64_t)got; left;) {
			if (left >= iov[i].iov_len) {
				left -= iov[i].iov_len;
				i++;
			} else {
				iov[i].iov_base =
					(char *)iov[i].iov_base + left;
				iov[i].iov_len -= left;
				left = 0;
			}
		}
	}
	return true;
}

/* A READ takes a responder resource: the peer must have as many as we
 * may use at once, as on the packet path, where a responder short of them
 * refuses the READs (IBA 9.4.4: max_dest_rd_atomic). */
static uint32_t rd_need(const struct sv_qp_engine *qe, bool write)
{
	if (write)
		return 0;
	return qe->max_rd_atomic ? qe->max_rd_atomic : 1;
}

/* Would the peer accept this access now?  (Checked and let go.) */
static bool peer_allows(struct sv_qp_engine *qe, struct sv_send_wqe *wqe,
			const struct sv_pubtab_view *tab, bool write)
{
	struct sv_pubtab_hold h;

	if (!sv_pubtab_acquire(tab, qe->dest_qpn, qe->qpn, wqe->wr.rdma.rkey,
			       wqe->wr.rdma.remote_addr, wqe->length,
			       write ? IBV_ACCESS_REMOTE_WRITE :
				       IBV_ACCESS_REMOTE_READ,
			       rd_need(qe, write), &h))
		return false;
	sv_pubtab_release(&h);
	return true;
}

/*
 * The copy is the whole cost of the operation, and the thread that makes
 * it pays it.  The progress thread shares the application's CPU (a
 * pinned benchmark, or any busy host): if it copied while the
 * application busy-polls, the poller would burn half the CPU for nothing.
 * So while the application polls (a poll hint within SV_HINT_HOLD_NS) the
 * thread leaves the WQE on the kick list, which the poller's next pass
 * takes up (the thread itself only after its sleep, if nobody polls any
 * more).
 */
/* Copies at least this long mark the application as busy (below). */
#define SV_DIRECT_ACTIVE_LEN (64u * 1024)

static bool eng_in_thread(const struct sv_qp_engine *qe)
{
	return qe->eng->in_thread;
}

static bool leave_to_poller(struct sv_qp_engine *qe)
{
	struct sv_engine *eng = qe->eng;
	if (!eng->in_thread || !sv_app_polls(eng, sv_eng_now(eng)))
		return false;
	sv_kick_later(eng, qe);
	return true;
}

static enum sv_path_r direct_send(struct sv_qp_engine *qe,
				  struct sv_send_wqe *wqe)
{
	const struct sv_pubtab_view *tab = qe->shm->pubtab;
	bool write = wqe->opcode == IBV_WR_RDMA_WRITE, via_mem = false;
	enum sv_help_r help;
	struct iovec cap[SV_MAX_SGE];
	struct sv_pubtab_hold h;
	struct local_sgl l;
	uintptr_t rva;
	bool ok;

	if (!tab || qe->qp->type != IBV_QPT_RC || !wqe->length ||
	    (!write && wqe->opcode != IBV_WR_RDMA_READ))
		return SV_PATH_NO;
	if (atomic_load(&qe->state) != IBV_QPS_RTS)
		return SV_PATH_NO;
	/* Ordering: the WQE is the next to complete, nothing is in flight.
	 * Otherwise, if the peer would take it, wait for the WQEs before it
	 * (their completions run the requester again) rather than start it
	 * as packets: one packet-path WQE in a stream would keep the next
	 * ones behind it on the packet path too. */
	if (qe->req.idx != qe->comp.idx || qe->req.psn != qe->req.max_psn ||
	    qe->comp.psn != qe->req.max_psn || qe->req.rd_atomic) {
		if (!peer_allows(qe, wqe, tab, write))
			return SV_PATH_NO;
		/* The WQEs before it may have asked for no ACK (unsignaled
		 * messages on shm, posted before this one): ask now, or
		 * only the probe timer would bring it. */
		sv_req_ask_ack(qe);
		return SV_PATH_WAIT;
	}

	if (leave_to_poller(qe))
		return SV_PATH_WAIT;
	if (!local_get(qe, wqe, write ? 0 : IBV_ACCESS_LOCAL_WRITE, &l))
		goto fallback;
	rva = sv_pubtab_acquire(tab, qe->dest_qpn, qe->qpn, wqe->wr.rdma.rkey,
				wqe->wr.rdma.remote_addr, wqe->length,
				write ? IBV_ACCESS_REMOTE_WRITE :
					IBV_ACCESS_REMOTE_READ,
				rd_need(qe, write), &h);
	if (!rva) {
		local_put(&l);
		goto fallback;
	}
	/* (The copy consumes l.iov; the capture needs it after.) */
	if (sv_pcap_active())
		memcpy(cap, l.iov, sizeof(cap));
	help = write ? sv_help_write(qe, tab, l.iov, l.n, rva, wqe) :
		       SV_HELP_NOT;
	if (help == SV_HELP_NOT)
		ok = sv_direct_copy(tab, write, l.iov, l.n, rva, wqe->length,
				    &via_mem);
	else
		ok = help == SV_HELP_DONE;
	sv_pubtab_release(&h);
	/* Before local_put: our MRs stay registered while it reads them. */
	if (ok && sv_pcap_active())
		sv_pcap_direct(qe, write, qe->req.psn, wqe->wr.rdma.remote_addr,
			       wqe->wr.rdma.rkey, cap, l.n, wqe->length);
	if (ok && sv_env_trace()) {
		char extra[64];

		snprintf(extra, sizeof(extra), " va 0x%" PRIx64 " rkey 0x%x%s",
			 wqe->wr.rdma.remote_addr, wqe->wr.rdma.rkey,
			 help == SV_HELP_DONE ? " helped" : "");
		sv_trace_op(qe->eng, "tx-direct",
			    write ? SV_OP_RC_RDMA_WRITE_ONLY :
				    SV_OP_RC_RDMA_READ_REQUEST,
			    qe->dest_qpn, wqe->length, extra);
	}
	local_put(&l);
	if (!ok)
		goto fallback; /* the packet path does it again, or fails */
	/* An application posting large copies is as active as one polling:
	 * between two polls it may spend tens of milliseconds in post_send
	 * copying (128 WRITEs of 4 MiB), and the thread must not take that
	 * for idleness and copy on the application's core while it spins
	 * (ib_write_bw 1-4 MiB ran at half the one-copy limit).  A clock
	 * read is nothing next to a copy of this size. */
	if (!eng_in_thread(qe) && wqe->length >= SV_DIRECT_ACTIVE_LEN)
		atomic_store_explicit(&qe->eng->last_hint, sv_now_ns(),
				      memory_order_relaxed);

	/* Done, without a PSN: an empty range at req.psn, which no ACK
	 * or go-back-N matches (as run_local_op's). */
	wqe->first_psn = qe->req.psn;
	wqe->last_psn = sv_psn_add(qe->req.psn, SV_PSN_MASK);
	wqe->sent = wqe->length;
	wqe->read_done = write ? 0 : wqe->length;
	wqe->state = SV_WQE_DONE;
	if (write)
		SV_STAT(qe->eng, direct_write);
	else
		SV_STAT(qe->eng, direct_read);
	if (via_mem)
		SV_STAT(qe->eng, direct_memfile);
	sv_comp_retire(qe);
	return SV_PATH_DONE;
fallback:
	SV_STAT(qe->eng, direct_fallback);
	return SV_PATH_NO;
}

/* The responder attributes peers check, whenever they may have changed
 * (modify_qp, the engine's own move to ERR). */
static void direct_qp_publish(struct sv_qp_engine *qe)
{
	struct sv_pubtab_qp q;

	if (qe->qp->type != IBV_QPT_RC)
		return;
	q.qpn = qe->qpn;
	q.dest_qpn = qe->dest_qpn;
	q.access = qe->access;
	q.max_dest_rd_atomic = qe->max_dest_rd_atomic;
	q.state = atomic_load(&qe->state);
	/* An RTR QP raises IBV_EVENT_COMM_EST at its first request, which
	 * only a packet can bring: peers copy directly once it has (resp.c
	 * publishes again then); the table's RTS means "takes requests". */
	if (q.state == IBV_QPS_RTR && qe->comm_est)
		q.state = IBV_QPS_RTS;
	q.pd = sv_pubtab_pd_token(qe->qp->pd);
	sv_pubtab_qp_set(&q);
}

static void direct_qp_unpublish(struct sv_qp_engine *qe)
{
	if (qe->qp->type == IBV_QPT_RC)
		sv_pubtab_qp_del(qe->qpn);
}

/* The helper (help.c) is this path's other half: peers offer us parts of
 * their large WRITEs while our thread is free to take them. */
static uint64_t direct_next_wake(struct sv_engine *eng, uint64_t now,
				 uint64_t until, bool busy, bool napped,
				 bool *nap)
{
	sv_help_available(eng, !busy);
	return until;
}

static void direct_serve(struct sv_engine *eng, bool busy)
{
	/* First the peers' large WRITEs: they are copying their part
	 * already. */
	if (!busy)
		sv_help_serve(eng);
}

/* One-copy placement needs the peer's published table, mapped along with
 * its ring by the shm link. */
static bool direct_applies(const struct sv_qp_engine *qe)
{
	return qe->shm && qe->shm->pubtab;
}

/* A new socket's segment says whether our thread takes help jobs now. */
static void direct_sock_open(struct sv_engine *eng, struct sv_sock *s)
{
	if (s->ring.hdr)
		atomic_store(&s->ring.hdr->helping, eng->help_avail);
}

const struct sv_path_ops sv_path_direct = {
	.name = "direct",
	.applies = direct_applies,
	.sock_open = direct_sock_open,
	.send = direct_send,
	.qp_state = direct_qp_publish,
	.qp_destroyed = direct_qp_unpublish,
	.next_wake = direct_next_wake,
	.serve = direct_serve,
};
