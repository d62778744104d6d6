/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Large SENDs through message channels with one copy (docs/fastpath.md,
 * "Large SENDs: one copy by the receiver").
 *
 * A SEND longer than a channel message would otherwise go as packets
 * through the shm ring: the sender copies into the ring, the receiver
 * copies out.  Instead the sender puts a descriptor into the channel, in
 * order with its other messages (struct sv_chan_rdv: the length and where
 * its gather list lies in the sender's memory), and the receiving engine,
 * taking it with the receive WQE at the head of its queue as any channel
 * SEND, pulls the bytes with process_vm_readv from the process its QP is
 * attached to straight into the receive buffers, then acknowledges: the
 * sender's WQE completes when the ack passes it, as a small channel SEND.
 *
 * What may be read and written: the receiver writes only into its own
 * receive SGL, checked against its key table (LOCAL_WRITE, PD, bounds)
 * under the table's read lock, held across the copy (deregistration
 * waits for it).  It reads only from its QP's shm peer, the pid the shm
 * link attached to, never a pid from the message; a hostile descriptor
 * can only make it copy the hostile process's own memory.  The peer's
 * pidfd is asked after the copy whether the process still lives: a dead
 * peer's reused pid never completes a receive.  The descriptor is copied
 * out of the shared slot before it is checked (counts, lengths, overflow).
 *
 * Proved before use: the kernel may refuse a process reading another's
 * memory although both run as one user (Yama's ptrace_scope=1 between
 * processes that are not ancestor and descendant, as on Ubuntu; a
 * missing CAP_SYS_PTRACE across user namespaces; a seccomp filter; a
 * non-dumpable sender).  The shm link attaches only after such a read
 * succeeded (link/shm.c), but a filter or a credential change may come
 * later.  So the receiving engine, when it opens its channel, reads a
 * word of the sender's segment header through the sender's address
 * space and says in the channel's can_pull whether it could; a sender
 * sends descriptors only into a channel that says so, else packets, as
 * without channels.  A pull refused after that (not a dead sender)
 * completes nothing, clears can_pull, and the receiver closes its channel
 * and asks the sender (chan.c, SV_CHAN_NAK_RESEND) to send that SEND and
 * everything after it again as packets; a warning names the cause
 * (docs/fastpath.md).
 *
 * The sender's gather list is checked against its own key table when it
 * posts the descriptor (a bad lkey: the packet path's LOC_PROT_ERR), and
 * the memory must stay as it is until the completion, as the verbs say of
 * any send buffer.
 */
#include "paths/paths.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/mr.h"
#include "engine/transport/dma.h"
#include "engine/transport/eng.h"
#include "engine/diag/inject.h"
#include "engine/diag/pcap.h"
#include "engine/transport/qpe.h"
#include "link/chan.h"
#include "link/shm.h"
#include "util/log.h"

/* The descriptor: its head, then n of these. */
struct sv_chan_rdv_iov {
	uint64_t addr; /* in the sender's address space */
	uint64_t len;
};

struct sv_chan_rdv {
	uint64_t len; /* the message's bytes: the sum of the iov lengths */
	uint32_t n;
	/* The generation of the sender's own channel: it changes when the
	 * sending QP leaves RTS/SQD/RTR (ERR, RESET, destroyed), after
	 * which its WQEs are flushed and its buffers the application's. */
	uint32_t gen;
	struct sv_chan_rdv_iov iov[SV_MAX_SGE];
};

_Static_assert(sizeof(struct sv_chan_rdv) <= SV_CHAN_MAX_MSG,
	       "a descriptor fits a channel message");

bool sv_chan_rdv_wanted(const struct sv_qp_engine *qe,
			const struct sv_send_wqe *w)
{
	/* Our own channel must be open: its generation tells the
	 * receiver that this QP still stands behind the descriptor. */
	if (!sv_pq(qe)->chan.rx.ch)
		return false;
	if ((w->opcode != IBV_WR_SEND && w->opcode != IBV_WR_SEND_WITH_IMM) ||
	    w->length <= SV_CHAN_MAX_MSG || (w->send_flags & IBV_SEND_INLINE) ||
	    w->num_sge > SV_MAX_SGE)
		return false;
	/* A capture shows the message's bytes: the packet path has them. */
	if (sv_pcap_active())
		return false;
	/* A process that made itself non-dumpable refuses its own user's
	 * process_vm_readv: the receiver could not pull. */
	return prctl(PR_GET_DUMPABLE) == 1;
}

bool sv_chan_rdv_proven(const struct sv_qp_engine *qe)
{
	return atomic_load_explicit(&sv_pq(qe)->chan.tx.ch->can_pull,
				    memory_order_relaxed) == 1;
}

/* process_vm_readv from the QP's peer process, or the refusal a
 * SOFTVERBS_FAULT pull rule asks for. */
static ssize_t peer_read(struct sv_qp_engine *qe, const struct iovec *local,
			 unsigned long nl, const struct iovec *remote,
			 unsigned long nr)
{
	if (sv_inject_get()->n && sv_inject_pull(qe)) {
		errno = EPERM;
		return -1;
	}
	return process_vm_readv(qe->shm->pid, local, nl, remote, nr, 0);
}

/* A refusal by the kernel (ESRCH: a pid we may not see, for a sender
 * whose pidfd says it lives), not a sender's memory gone. */
static bool refused(int err)
{
	return err == EPERM || err == EACCES || err == ENOSYS || err == ESRCH;
}

static void say_refused(struct sv_qp_engine *qe, int err, bool after)
{
	SV_STAT(qe->eng, rdv_refused);
	if (after)
		sv_warn("qp 0x%06x: reading the memory of process %d (the "
			"sender of a large SEND) was refused after it was "
			"allowed: %s; that SEND and the QP's next ones come "
			"again as packets (docs/fastpath.md, \"Large "
			"SENDs\")",
			qe->qpn, (int)qe->shm->pid, strerror(err));
	else
		sv_info("qp 0x%06x: reading the memory of process %d (the sender "
			"of large SENDs) was refused: %s; its large SENDs go "
			"as packets (docs/fastpath.md, \"Large SENDs\")",
			qe->qpn, (int)qe->shm->pid, strerror(err));
}

bool sv_chan_rdv_probe(struct sv_qp_engine *qe)
{
	const struct sv_shm_hdr *h = qe->shm->hdr;
	uint64_t seen = 0;
	struct iovec l = { &seen, sizeof(seen) }, r;
	ssize_t got;

	/* The header's own address as its owner wrote it, read where the
	 * owner has it: what only the owner's memory shows. */
	r.iov_base =
		(void *)(uintptr_t)(h->owner_addr +
				    offsetof(struct sv_shm_hdr, owner_addr));
	r.iov_len = sizeof(seen);
	got = peer_read(qe, &l, 1, &r, 1);
	if (got < 0 && refused(errno)) {
		say_refused(qe, errno, false);
		return false;
	}
	if (got != (ssize_t)sizeof(seen) || seen != h->owner_addr) {
		sv_dbg("chan: qp 0x%06x: the peer's memory does not show its "
		       "segment: its large SENDs go as packets",
		       qe->qpn);
		return false;
	}
	return true;
}

uint32_t sv_chan_rdv_fill(const struct sv_qp_engine *qe,
			  const struct sv_send_wqe *w, uint8_t *buf)
{
	struct sv_chan_rdv d = { .len = w->length,
				 .gen = sv_pq(qe)->chan.rx.gen };
	uint64_t sum = 0;
	uint32_t i, sz;

	for (i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];
		struct sv_mr *mr;
		void *p;

		if (!s->length)
			continue;
		mr = sv_mr_get_by_lkey(s->lkey);
		p = sv_mr_check(mr, qe->qp->pd, s->addr, s->length, 0);
		if (mr)
			sv_mr_put(mr);
		if (!p)
			return 0; /* the packet path reports LOC_PROT_ERR */
		d.iov[d.n].addr = (uint64_t)(uintptr_t)p;
		d.iov[d.n].len = s->length;
		d.n++;
		sum += s->length;
	}
	if (sum != w->length || !d.n)
		return 0;
	sz = (uint32_t)offsetof(struct sv_chan_rdv, iov) +
	     d.n * (uint32_t)sizeof(d.iov[0]);
	memcpy(buf, &d, sz);
	return sz;
}

bool sv_chan_rdv_read(const struct sv_chan_msg *m, struct sv_chan_rdv_desc *out)
{
	struct sv_chan_rdv d;
	uint64_t sum = 0;
	uint32_t i, head = (uint32_t)offsetof(struct sv_chan_rdv, iov);

	if (m->len < head || m->len > sizeof(d))
		return false;
	/* Once out of the shared slot: the producer may rewrite it. */
	memcpy(&d, m->data, m->len);
	if (!d.n || d.n > SV_MAX_SGE ||
	    m->len != head + d.n * (uint32_t)sizeof(d.iov[0]))
		return false;
	for (i = 0; i < d.n; i++) {
		if (!d.iov[i].len || d.iov[i].len > (1ull << 31) ||
		    d.iov[i].addr + d.iov[i].len < d.iov[i].addr)
			return false;
		sum += d.iov[i].len;
		out->iov[i].iov_base = (void *)(uintptr_t)d.iov[i].addr;
		out->iov[i].iov_len = (size_t)d.iov[i].len;
	}
	/* A message's length is at most 2^31 bytes (max_msg_sz). */
	if (sum != d.len || sum > (1ull << 31))
		return false;
	out->n = d.n;
	out->len = (uint32_t)sum;
	out->gen = d.gen;
	return true;
}

/* Advance an iovec array past got bytes. */
static void iov_skip(struct iovec *iov, uint32_t n, uint32_t *at, uint64_t got)
{
	while (got && *at < n) {
		if (got >= iov[*at].iov_len) {
			got -= iov[*at].iov_len;
			(*at)++;
		} else {
			iov[*at].iov_base = (char *)iov[*at].iov_base + got;
			iov[*at].iov_len -= got;
			got = 0;
		}
	}
}

/* Does the sending QP still stand behind the descriptor?  Its channel
 * (pc, in its segment) open with the generation it was sent with. */
static bool sender_current(const struct sv_qp_engine *qe,
			   const struct sv_chan *pc, uint32_t gen)
{
	return atomic_load(&pc->open) && atomic_load(&pc->gen) == gen &&
	       atomic_load(&pc->qpn) == qe->dest_qpn;
}

bool sv_chan_rdv_current(const struct sv_qp_engine *qe,
			 const struct sv_chan *pc,
			 const struct sv_chan_rdv_desc *d)
{
	return sender_current(qe, pc, d->gen);
}

/* Is the process the pidfd names still alive (not a reused pid)?  Its
 * pidfd turns readable when it has exited (a zombie too, whose memory is
 * gone already): a poll is the cheapest question, and it is asked on the
 * way to every pulled SEND's completion. */
static bool peer_alive(const struct sv_shm_peer *p)
{
	if (p->pidfd >= 0) {
		struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };
		int r;

		do
			r = poll(&pf, 1, 0);
		while (r < 0 && errno == EINTR);
		return r == 0;
	}
	return kill(p->pid, 0) == 0 || errno == EPERM;
}

enum sv_sgl_err sv_chan_rdv_pull(struct sv_qp_engine *qe,
				 const struct sv_chan *pc, struct sv_pd *pd,
				 const struct ibv_sge *sge, uint32_t nsge,
				 struct sv_chan_rdv_desc *d, bool *failed,
				 bool *refused_after)
{
	struct iovec local[SV_MAX_SGE];
	uint32_t i, n = 0, li = 0, ri = 0;
	uint64_t left = d->len;

	*failed = false;
	*refused_after = false;
	/* Our receive SGL, for exactly the message's bytes (the caller
	 * checked that it is long enough). */
	for (i = 0; i < nsge && left; i++) {
		uint64_t k = sge[i].length < left ? sge[i].length : left;
		struct sv_mr *mr;
		void *p;

		if (!k)
			continue;
		mr = sv_mr_find_lkey_locked(sge[i].lkey);
		p = sv_mr_check(mr, pd, sge[i].addr, k, IBV_ACCESS_LOCAL_WRITE);
		if (!p)
			return SV_SGL_PROT;
		local[n].iov_base = p;
		local[n].iov_len = (size_t)k;
		n++;
		left -= k;
	}
	if (left)
		return SV_SGL_LEN;
	/* A sending QP gone to ERR (its WQEs flushed), reset or destroyed
	 * no longer vouches for its buffers: the packets it would have
	 * sent stop there too. */
	if (!sender_current(qe, pc, d->gen)) {
		*failed = true;
		return SV_SGL_FAULT;
	}
	left = d->len;
	while (left) {
		ssize_t got;
		int err;

		got = peer_read(qe, local + li, n - li, d->iov + ri, d->n - ri);
		err = errno; /* (the liveness check's poll may change it) */
		if (got < 0 && err == EINTR)
			continue;
		if (got < 0 && refused(err) && peer_alive(qe->shm)) {
			/* Proved, then refused: no more descriptors. */
			say_refused(qe, err, true);
			if (sv_pq(qe)->chan.rx.ch)
				atomic_store(&sv_pq(qe)->chan.rx.ch->can_pull,
					     0);
			*refused_after = true;
		}
		if (got <= 0) {
			*failed = true;
			return SV_SGL_FAULT;
		}
		iov_skip(local, n, &li, (uint64_t)got);
		iov_skip(d->iov, d->n, &ri, (uint64_t)got);
		left -= (uint64_t)got;
	}
	/* (Its flush completions come after its generation changed: a
	 * generation still the same means the copy came before.) */
	if (!peer_alive(qe->shm) || !sender_current(qe, pc, d->gen)) {
		*failed = true;
		return SV_SGL_FAULT;
	}
	return SV_SGL_OK;
}
