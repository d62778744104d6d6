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
 * Consecutive small WRITEs or READs that would each run so go in one
 * call ("Batches" below).
 *
 * Nothing here allocates or takes a lock beyond the key table's read
 * lock the lkey lookups take on the packet path too (held across a small
 * copy instead of MR references); the only system call is the copy.
 * While it holds the peer's entries it takes no lock, so a peer waiting
 * for them to drain (deregistration, QP state change) only waits for a
 * copy.
 */
#include "paths/paths.h"
#include "engine/diag/stats.h"
#include "engine/diag/pcap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/mr.h"
#include "core/pubtab.h"
#include "engine/transport/comp.h"
#include "engine/transport/dma.h"
#include "engine/transport/eng.h"
#include "engine/transport/limits.h"
#include "engine/transport/req.h"
#include "engine/transport/path.h"
#include "engine/transport/qpe.h"
#include "engine/transport/stats.h"
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
	/* Small copies through the target's /proc/PID/mem: cheaper than
	 * process_vm_writev, which looks the process up and checks ptrace
	 * access again at every call.  It bounces through a kernel page,
	 * so bulk copies keep process_vm_writev/readv (docs/fastpath.md,
	 * "Why two copy calls"). */
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
 * Batches.  An application streaming small WRITEs (or READs) posts many
 * before it polls (perftest's bw tools: tx_depth of them, one signaled in
 * cq_mod), and a copy call per WQE costs far more than its bytes: most of
 * a small process_vm_writev is finding the target and checking ptrace
 * access.  So the next WQEs of the send queue that would each run
 * directly on their own (the same opcode, small, checked one by one
 * exactly as below) go in one process_vm_writev/readv, whose local and
 * remote iovecs take many regions at once; a remote range that continues
 * the previous one extends its iovec, and a batch that is one remote
 * range goes through the mem file.  Then they complete together, in
 * order, through the completer.
 *
 * The first refusal ends the batch before that WQE, which then takes the
 * one-WQE path (and its fallback to packets) as it would have alone.  A
 * copy that stops short (a page of the target not mapped) completes the
 * WQEs it copied whole; the next one also starts again alone.  So every
 * WQE ends with the status it would have had on its own.
 */

/* WQEs in one call: past a few dozen the kernel's cost per remote iovec
 * (it pins each range's page) dominates anyway. */
#define SV_DIRECT_BATCH 64
/* Local iovecs of a batch (WQEs of several SGEs take several). */
#define SV_DIRECT_BATCH_IOV 256
/* A WQE joins a batch up to this length (the mem file's bound: larger
 * ones are worth their own call). */
#define SV_DIRECT_BATCH_LEN SV_DIRECT_MEMFD_MAX

struct batch {
	struct iovec liov[SV_DIRECT_BATCH_IOV];
	struct iovec riov[SV_DIRECT_BATCH];
	struct sv_pubtab_hold h[SV_DIRECT_BATCH]; /* one per region */
	uint64_t end[SV_DIRECT_BATCH]; /* each WQE's end in the bytes */
	uint32_t nl, nr, nh, n;
};

static bool batch_candidate(const struct sv_send_wqe *w, uint32_t opcode)
{
	return w->state == SV_WQE_PENDING && w->opcode == opcode && w->length &&
	       w->length <= SV_DIRECT_BATCH_LEN &&
	       !(w->send_flags & IBV_SEND_FENCE) &&
	       ((w->send_flags & IBV_SEND_INLINE) || w->num_sge <= SV_MAX_SGE);
}

/* Our SGL of w into the batch's local iovecs (key table read-locked);
 * false if a check fails or they are full. */
static bool batch_local(struct sv_qp_engine *qe, const struct sv_send_wqe *w,
			unsigned int access, struct batch *b)
{
	uint32_t nl = b->nl, i;

	if (w->send_flags & IBV_SEND_INLINE) {
		if (nl == SV_DIRECT_BATCH_IOV)
			return false;
		b->liov[nl].iov_base = (void *)w->inline_data;
		b->liov[nl].iov_len = w->length;
		b->nl = nl + 1;
		return true;
	}
	for (i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];
		void *p;

		if (!s->length)
			continue;
		p = sv_mr_check(sv_mr_find_lkey_locked(s->lkey), qe->qp->pd,
				s->addr, s->length, access);
		if (!p || nl == SV_DIRECT_BATCH_IOV)
			return false;
		b->liov[nl].iov_base = p;
		b->liov[nl].iov_len = s->length;
		nl++;
	}
	b->nl = nl;
	return true;
}

/* Take the WQEs from req.idx on that may go together (the first one
 * included, which passed direct_send's checks of the QP); false when
 * fewer than two do (nothing held then). */
static bool batch_gather(struct sv_qp_engine *qe,
			 const struct sv_pubtab_view *tab, bool write,
			 struct batch *b)
{
	unsigned int access =
		write ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
	uint32_t idx = qe->req.idx, tail = sv_sq_tail(qe);
	uint32_t opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	uint64_t bytes = 0;

	b->nl = b->nr = b->nh = b->n = 0;
	sv_mr_read_lock();
	for (; idx != tail && b->n < SV_DIRECT_BATCH; idx++) {
		const struct sv_send_wqe *w = sv_wq_at(&qe->qp->sq, idx);
		uint64_t raddr = w->wr.rdma.remote_addr;
		uint32_t rkey = w->wr.rdma.rkey, nl = b->nl;
		struct iovec *last = b->nr ? &b->riov[b->nr - 1] : NULL;
		uintptr_t rva = 0;

		if (!batch_candidate(w, opcode) ||
		    !batch_local(qe, w, write ? 0 : IBV_ACCESS_LOCAL_WRITE, b))
			break;
		if (b->nh)
			rva = sv_pubtab_again(&b->h[b->nh - 1], rkey, raddr,
					      w->length, access);
		if (!rva && b->nh < SV_DIRECT_BATCH) {
			rva = sv_pubtab_acquire(tab, qe->dest_qpn, qe->qpn,
						rkey, raddr, w->length, access,
						rd_need(qe, write),
						&b->h[b->nh]);
			if (rva)
				b->nh++;
		}
		if (!rva) {
			b->nl = nl;
			break;
		}
		if (last && (uintptr_t)last->iov_base + last->iov_len == rva) {
			last->iov_len += w->length;
		} else {
			b->riov[b->nr].iov_base = (void *)rva;
			b->riov[b->nr].iov_len = w->length;
			b->nr++;
		}
		bytes += w->length;
		b->end[b->n++] = bytes;
	}
	if (b->n < 2) {
		while (b->nh)
			sv_pubtab_release(&b->h[--b->nh]);
		sv_mr_read_unlock();
		return false;
	}
	return true;
}

/* The batch's copy: how many bytes arrived in order. */
static uint64_t batch_copy(const struct sv_pubtab_view *tab, bool write,
			   struct batch *b, bool *via_mem)
{
	uint64_t total = b->end[b->n - 1];
	int memfd = b->nr == 1 ? sv_pubtab_memfd(tab) : -1;
	uint64_t done = 0;
	ssize_t got;
	uint32_t i, j;

	*via_mem = false;
	if (sv_pubtab_is_self(tab)) {
		/* Two contexts of one process: both sides are ours. */
		for (i = 0, j = 0; i < b->nr; i++) {
			char *r = b->riov[i].iov_base;
			uint64_t left = b->riov[i].iov_len;

			for (; left; j++) {
				size_t n = b->liov[j].iov_len;

				if (!(write ? sv_dma_copy(r,
							  b->liov[j].iov_base,
							  n) :
					      sv_dma_copy(b->liov[j].iov_base,
							  r, n)))
					return done;
				r += n;
				left -= n;
				done += n;
			}
		}
		return done;
	}
	*via_mem = memfd >= 0;
	do {
		SV_DMA_BEGIN();
		if (memfd >= 0)
			got = write ? pwritev(memfd, b->liov, (int)b->nl,
					      (off_t)(uintptr_t)b->riov[0]
						      .iov_base) :
				      preadv(memfd, b->liov, (int)b->nl,
					     (off_t)(uintptr_t)b->riov[0]
						     .iov_base);
		else
			got = write ? process_vm_writev(sv_pubtab_pid(tab),
							b->liov, b->nl, b->riov,
							b->nr, 0) :
				      process_vm_readv(sv_pubtab_pid(tab),
						       b->liov, b->nl, b->riov,
						       b->nr, 0);
		SV_DMA_END();
	} while (got < 0 && errno == EINTR);
	/* Short (a page of the target not there): what came whole counts,
	 * the rest is done again WQE by WQE. */
	if (got > 0)
		done = (uint64_t)got;
	return done < total ? done : total;
}

/* The WQEs from req.idx that may go together, in one copy; 0 when fewer
 * than two may (then the WQE goes on its own). */
static uint32_t direct_batch(struct sv_qp_engine *qe,
			     const struct sv_pubtab_view *tab, bool write)
{
	struct batch b;
	uint64_t done;
	uint32_t i, n;
	bool via_mem;

	if (!batch_gather(qe, tab, write, &b))
		return 0;
	done = batch_copy(tab, write, &b, &via_mem);
	while (b.nh)
		sv_pubtab_release(&b.h[--b.nh]);
	sv_mr_read_unlock();
	for (n = 0; n < b.n && b.end[n] <= done; n++)
		;
	for (i = 0; i < n; i++) {
		struct sv_send_wqe *w = sv_wq_at(&qe->qp->sq, qe->req.idx + i);

		/* Done without a PSN, as one alone (below). */
		w->first_psn = qe->req.psn;
		w->last_psn = sv_psn_add(qe->req.psn, SV_PSN_MASK);
		w->sent = w->length;
		w->read_done = write ? 0 : w->length;
		w->state = SV_WQE_DONE;
	}
	if (!n)
		return 0;
	if (write)
		SV_STAT_ADD(qe->eng, direct_write, n);
	else
		SV_STAT_ADD(qe->eng, direct_read, n);
	if (via_mem)
		SV_STAT_ADD(qe->eng, direct_memfile, n);
	if (n > 1) {
		SV_STAT(qe->eng, direct_batches);
		SV_STAT_ADD(qe->eng, direct_batched, n);
	}
	sv_comp_retire(qe);
	return n;
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

static bool leave_to_poller(struct sv_qp_engine *qe)
{
	struct sv_engine *eng = qe->eng;
	if (!eng->in_thread || !sv_app_polls(eng, sv_eng_now(eng)))
		return false;
	sv_kick_later(eng, qe);
	return true;
}

/*
 * A batch needs WQEs to wait for each other: an application posting one
 * WR per ibv_post_send (perftest) would otherwise see each copied before
 * the next is posted.  So post_send's own run leaves the send queue as
 * it is while its last WR is a small unsignaled WRITE or READ that could
 * join a batch and the batch is not full: the application's next post or
 * poll runs them all (the QP is on the kick list for the poll).  A
 * signaled WR, a WR of another kind or a full batch runs the queue at
 * once.  An unsignaled WR has no completion anyone waits for, but its
 * bytes may be (a peer watching its memory): the thread runs what waits
 * at the latest SV_DIRECT_DEFER_NS after the first one (a timer: on a
 * busy core its wake-up comes later still, but it comes).
 */
#define SV_DIRECT_DEFER_NS (50ull * 1000)

static bool defer_for_batch(struct sv_qp_engine *qe)
{
	struct sv_engine *eng = qe->eng;
	uint32_t tail = sv_sq_tail(qe), waiting = tail - qe->req.idx;
	const struct sv_send_wqe *last;

	if (!eng->posting || qe->qp->sq_sig_all || waiting >= SV_DIRECT_BATCH)
		return false;
	last = sv_wq_at(&qe->qp->sq, tail - 1);
	if ((last->send_flags & IBV_SEND_SIGNALED) ||
	    (last->opcode != IBV_WR_RDMA_WRITE &&
	     last->opcode != IBV_WR_RDMA_READ) ||
	    !batch_candidate(last, last->opcode))
		return false;
	SV_STAT(eng, direct_deferred);
	if (waiting == 1)
		sv_timer_note(eng, sv_eng_now(eng) + SV_DIRECT_DEFER_NS);
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
	/* Several WQEs in one call (not with a capture or a trace, which
	 * show each WQE's own copy). */
	if (wqe->length <= SV_DIRECT_BATCH_LEN && !sv_pcap_active() &&
	    !sv_env_trace()) {
		if (defer_for_batch(qe))
			return SV_PATH_WAIT;
		if (qe->req.idx + 1 != sv_sq_tail(qe) &&
		    direct_batch(qe, tab, write))
			return SV_PATH_DONE;
	}
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
	if (wqe->length >= SV_DIRECT_ACTIVE_LEN)
		sv_app_copied(qe->eng);

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
		atomic_store(&s->ring.hdr->helping, sv_pe(eng)->help_avail);
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
