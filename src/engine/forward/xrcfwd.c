/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Receives forwarded to an XRC SRQ of another process (see xrcfwd.h).
 *
 * Each block of 256 XRC SRQ numbers (core/xrc.c: the number's port is a
 * UDP port the owner holds) has a server here: a Unix datagram socket in
 * the abstract namespace named after the port, so a number says where
 * its SRQ is served, and a thread answering three requests:
 *   TAKE  (domain, SRQ number): pop a receive WQE, keep it under a cookie
 *         (the SRQ cannot be destroyed meanwhile: EBUSY, as for a local
 *         target QP in the middle of a message); EMPTY when none;
 *   PLACE (cookie, offset, bytes): scatter into the WQE's SGEs, checked
 *         against the owner's keys and the SRQ's PD as a local receive;
 *   DONE  (cookie, completion): push it on the SRQ's CQ with the WQE's
 *         wr_id, give the WQE back.
 * The target QP's process asks them synchronously under its engine lock,
 * on one socket per process, and waits for the answer; an SRQ whose
 * process has gone answers GONE at once (the name is unbound, the send
 * is refused), one that does not answer within FWD_WAIT_MS is GONE too.
 *
 * Trust stops at the user (docs/security.md): every datagram carries the
 * sender's credentials as the kernel attests them (SO_PASSCRED), and
 * both sides drop any whose uid is not their own effective uid.  The
 * domain is named by the file's (device, inode), checked by the server
 * against the SRQ's domain.
 */
#include "engine/forward/xrcfwd.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/cq.h"
#include "core/xrc.h"
#include "util/clock.h"
#include "util/lockorder.h"
#include "util/unixdg.h"
#include "util/log.h"

#define FWD_MAGIC 0x53565846u /* "SVXF" */
#define FWD_WAIT_MS 3000 /* an owner this slow is taken for dead */

enum fwd_op { FWD_TAKE = 1, FWD_PLACE, FWD_DONE };
enum fwd_status {
	FWD_OK,
	FWD_EMPTY,
	FWD_GONE,
	FWD_PROT,
	FWD_FAULT,
	FWD_CQ_FULL,
};

struct fwd_req {
	uint32_t magic;
	uint32_t op;
	uint64_t seq;
	uint64_t dev, ino; /* the domain's file */
	uint32_t srqn;
	uint32_t cookie; /* PLACE, DONE */
	uint64_t offset; /* PLACE */
	uint32_t len; /* PLACE: payload bytes after the header */
	uint32_t solicited; /* DONE */
	struct ibv_wc wc; /* DONE, wr_id aside */
};

struct fwd_ans {
	uint32_t magic;
	uint32_t status;
	uint64_t seq;
	uint32_t cookie;
	uint32_t pad;
	uint64_t wqe_len;
};

/* The server's name for a block's port. */
static socklen_t fwd_name(struct sockaddr_un *sa, uint16_t port)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* Abstract: sun_path[0] is NUL, the name is the bytes after it. */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		     "softverbs-xrc.%u", port);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* One datagram into buf, true when it is well formed (at least min
 * bytes) and its sender is of our user. */
static bool fwd_recv(int fd, void *buf, size_t size, size_t min, ssize_t *got,
		     struct sockaddr_un *from, socklen_t *fromlen, pid_t *pid)
{
	return sv_unixdg_recv_mine(fd, buf, size, got, from, fromlen, pid) &&
	       (size_t)*got >= min && *(const uint32_t *)buf == FWD_MAGIC;
}

/* The asking side's socket (one per process, under its lock). */
static struct {
	pthread_mutex_t lock;
	int fd;
	uint64_t seq;
} cl = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

/* ---- the owner's side: WQEs taken for other processes ------------------ */

struct taken {
	uint32_t cookie;
	pid_t pid; /* the target QP's process */
	struct sv_srq *srq; /* held by srq->users */
	uint64_t wqe_len;
	struct taken *next;
	struct sv_recv_wqe wqe; /* last: SV_MAX_SGE sges follow */
};

static struct {
	pthread_mutex_t lock;
	struct taken *list;
	uint32_t next_cookie;
} tk = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct taken *taken_find(uint32_t cookie, bool unlink)
{
	struct taken **p, *t;

	sv_mutex_lock(&tk.lock, SV_LOCK_XRC_FWD);
	for (p = &tk.list; (t = *p); p = &t->next) {
		if (t->cookie == cookie) {
			if (unlink)
				*p = t->next;
			break;
		}
	}
	sv_mutex_unlock(&tk.lock);
	return t;
}

static void serve_take(const struct fwd_req *rq, pid_t pid, struct fwd_ans *an)
{
	struct sv_srq *srq =
		sv_xrc_srq_get_shared((dev_t)rq->dev, (ino_t)rq->ino, rq->srqn);
	struct taken *t;

	if (!srq) {
		an->status = FWD_GONE;
		return;
	}
	t = calloc(1, sizeof(*t) + SV_MAX_SGE * sizeof(struct ibv_sge));
	if (!t || !sv_srq_pop(srq, &t->wqe, &t->wqe_len)) {
		/* (No memory here: the requester retries, as after RNR.) */
		free(t);
		sv_xrc_srq_put(srq);
		an->status = FWD_EMPTY;
		return;
	}
	/* Held as a local target QP holds it mid-message: not destroyed
	 * while the WQE is out. */
	atomic_fetch_add(&srq->users, 1);
	sv_xrc_srq_put(srq);
	t->srq = srq;
	t->pid = pid;
	sv_mutex_lock(&tk.lock, SV_LOCK_XRC_FWD);
	t->cookie = ++tk.next_cookie;
	t->next = tk.list;
	tk.list = t;
	sv_mutex_unlock(&tk.lock);
	an->cookie = t->cookie;
	an->wqe_len = t->wqe_len;
}

static void serve_place(const struct fwd_req *rq, uint8_t *payload,
			struct fwd_ans *an)
{
	/* Only the requester's engine (under its lock) uses a cookie at a
	 * time, so the entry stays while it is used. */
	struct taken *t = taken_find(rq->cookie, false);
	enum sv_sgl_err e;

	if (!t) {
		an->status = FWD_GONE;
		return;
	}
	if (rq->offset > t->wqe_len || rq->len > t->wqe_len - rq->offset) {
		an->status = FWD_PROT;
		return;
	}
	e = sv_sgl_copy(t->srq->pd, t->wqe.sge, t->wqe.num_sge, rq->offset,
			payload, rq->len, true);
	an->status = e == SV_SGL_OK    ? FWD_OK :
		     e == SV_SGL_FAULT ? FWD_FAULT :
					 FWD_PROT;
}

static void serve_done(const struct fwd_req *rq, struct fwd_ans *an)
{
	struct taken *t = taken_find(rq->cookie, true);
	struct ibv_wc wc = rq->wc;

	if (!t) {
		an->status = FWD_GONE;
		return;
	}
	wc.wr_id = t->wqe.wr_id;
	if (sv_cq_push(t->srq->cq, &wc, rq->solicited != 0))
		an->status = FWD_CQ_FULL;
	atomic_fetch_sub(&t->srq->users, 1);
	free(t);
}

/* The WQEs taken by processes that have died (a target QP's process
 * that ends in the middle of a message, without destroying the QP)
 * complete with IBV_WC_WR_FLUSH_ERR, as the kernel flushes a destroyed
 * QP's, and their SRQs may be destroyed again. */
static void reap(void)
{
	struct taken **p, *t, *dead = NULL;

	sv_mutex_lock(&tk.lock, SV_LOCK_XRC_FWD);
	for (p = &tk.list; (t = *p);) {
		if (kill(t->pid, 0) && errno == ESRCH) {
			*p = t->next;
			t->next = dead;
			dead = t;
		} else {
			p = &t->next;
		}
	}
	sv_mutex_unlock(&tk.lock);
	while ((t = dead)) {
		struct ibv_wc wc = {
			.wr_id = t->wqe.wr_id,
			.status = IBV_WC_WR_FLUSH_ERR,
			.opcode = IBV_WC_RECV,
			.vendor_err = IBV_WC_WR_FLUSH_ERR,
		};

		dead = t->next;
		sv_cq_push(t->srq->cq, &wc, false);
		atomic_fetch_sub(&t->srq->users, 1);
		free(t);
	}
}

struct server {
	int fd;
	pid_t pid; /* the process whose thread serves it */
	uint16_t port;
	atomic_bool stop;
	pthread_t thread;
};

static void *server_main(void *arg)
{
	struct server *sv = arg;
	size_t size = sizeof(struct fwd_req) + SV_MAX_PMTU;
	uint8_t *buf = malloc(size);

	while (buf && !atomic_load(&sv->stop)) {
		struct pollfd p = { .fd = sv->fd, .events = POLLIN };
		struct fwd_req *rq = (struct fwd_req *)(void *)buf;
		struct fwd_ans an;
		struct sockaddr_un from;
		socklen_t fromlen = 0;
		pid_t pid = 0;
		ssize_t got;

		/* The timeout bounds how late a stop is seen, and how long
		 * the WQEs of a target QP's process that died stay out. */
		if (poll(&p, 1, 200) <= 0) {
			reap();
			continue;
		}
		if (!fwd_recv(sv->fd, buf, size, sizeof(*rq), &got, &from,
			      &fromlen, &pid))
			continue;
		if ((size_t)got != sizeof(*rq) + rq->len ||
		    (rq->op != FWD_PLACE && rq->len))
			continue;
		memset(&an, 0, sizeof(an));
		an.magic = FWD_MAGIC;
		an.seq = rq->seq;
		an.status = FWD_OK;
		switch (rq->op) {
		case FWD_TAKE:
			serve_take(rq, pid, &an);
			break;
		case FWD_PLACE:
			serve_place(rq, buf + sizeof(*rq), &an);
			break;
		case FWD_DONE:
			serve_done(rq, &an);
			break;
		default:
			continue;
		}
		/* A requester that has gone takes no answer. */
		(void)sendto(sv->fd, &an, sizeof(an),
			     MSG_DONTWAIT | MSG_NOSIGNAL,
			     (struct sockaddr *)&from, fromlen);
	}
	free(buf);
	return NULL;
}

static void *server_start(uint16_t port)
{
	struct server *sv = calloc(1, sizeof(*sv));
	struct sockaddr_un sa;
	socklen_t len = fwd_name(&sa, port);

	if (!sv)
		return NULL;
	sv->port = port;
	sv->pid = getpid();
	sv->fd = sv_unixdg_socket();
	/* The name taken already (by another user: our port is ours, so
	 * the name should be free): these SRQs are served to no one, and
	 * requests for them find nothing. */
	if (sv->fd < 0 || bind(sv->fd, (struct sockaddr *)&sa, len) ||
	    pthread_create(&sv->thread, NULL, server_main, sv)) {
		sv_warn("XRC SRQs of port %u are not shared with other processes: %s",
			port, strerror(errno));
		if (sv->fd >= 0)
			close(sv->fd);
		free(sv);
		return NULL;
	}
	return sv;
}

static void server_stop(void *arg)
{
	struct server *sv = arg;

	/* A forked child inherits the handle, not the thread (its SRQs are
	 * unusable there, as with rdma-core). */
	if (sv->pid == getpid()) {
		atomic_store(&sv->stop, true);
		pthread_join(sv->thread, NULL);
	}
	close(sv->fd);
	free(sv);
}

static const struct sv_xrc_server_ops server_ops = {
	.start = server_start,
	.stop = server_stop,
};

/* A forked child asks on a socket of its own: answers to the parent's
 * requests must not reach it, nor its to the parent.  The lock may have
 * been held by a thread that does not exist in the child. */
static void atfork_child(void)
{
	pthread_mutex_init(&cl.lock, NULL);
	pthread_mutex_init(&tk.lock, NULL);
	if (cl.fd >= 0)
		close(cl.fd);
	cl.fd = -1;
}

static void fwd_init_once(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
	sv_xrc_set_server(&server_ops);
}

void sv_xrcfwd_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, fwd_init_once);
}

/* ---- the target QP's side ------------------------------------------------ */

/* Ask the owner of rq->srqn; its answer in an (FWD_GONE when it has none). */
static void ask(struct sv_qp *qp, struct fwd_req *rq, const uint8_t *payload,
		struct fwd_ans *an)
{
	struct iovec iov[2] = {
		{ .iov_base = rq, .iov_len = sizeof(*rq) },
		{ .iov_base = (void *)payload, .iov_len = rq->len },
	};
	struct sockaddr_un sa;
	struct msghdr m = {
		.msg_name = &sa,
		.msg_namelen = fwd_name(&sa, (uint16_t)(rq->srqn >> 8)),
		.msg_iov = iov,
		.msg_iovlen = rq->len ? 2 : 1,
	};
	uint64_t deadline = sv_now_ms() + FWD_WAIT_MS, t;

	memset(an, 0, sizeof(*an));
	an->status = FWD_GONE;
	rq->magic = FWD_MAGIC;
	rq->dev = (uint64_t)qp->xrcd->dev;
	rq->ino = (uint64_t)qp->xrcd->ino;
	sv_mutex_lock(&cl.lock, SV_LOCK_XRC_FWD);
	if (cl.fd < 0) {
		struct sockaddr_un any = { .sun_family = AF_UNIX };

		cl.fd = sv_unixdg_socket();
		/* An address of our own (autobind) for the answers. */
		if (cl.fd >= 0 &&
		    bind(cl.fd, (struct sockaddr *)&any, sizeof(sa_family_t))) {
			close(cl.fd);
			cl.fd = -1;
		}
	}
	rq->seq = ++cl.seq;
	if (cl.fd < 0 || sendmsg(cl.fd, &m, MSG_NOSIGNAL) < 0)
		goto out; /* ECONNREFUSED: no one serves that number now */
	while ((t = sv_now_ms()) < deadline) {
		struct pollfd p = { .fd = cl.fd, .events = POLLIN };
		struct fwd_ans got;
		ssize_t n;

		if (poll(&p, 1, (int)(deadline - t)) <= 0)
			continue;
		/* Answers to requests given up on are stale: skipped. */
		if (fwd_recv(cl.fd, &got, sizeof(got), sizeof(got), &n, NULL,
			     NULL, NULL) &&
		    got.seq == rq->seq) {
			*an = got;
			break;
		}
	}
out:
	sv_mutex_unlock(&cl.lock);
	if (an->status == FWD_GONE)
		sv_dbg("qp 0x%06x: XRC SRQ 0x%06x of another process: gone",
		       qp->qpx.qp_base.qp_num, rq->srqn);
}

enum sv_xrcfwd_take sv_xrcfwd_take(struct sv_qp_engine *qe, uint32_t srqn)
{
	struct fwd_req rq = { .op = FWD_TAKE, .srqn = srqn };
	struct fwd_ans an;

	ask(qe->qp, &rq, NULL, &an);
	if (an.status == FWD_EMPTY)
		return SV_XRCFWD_EMPTY;
	if (an.status != FWD_OK)
		return SV_XRCFWD_GONE;
	qe->resp.wqe->wr_id = 0;
	qe->resp.wqe->num_sge = 0;
	qe->resp.wqe_len = an.wqe_len;
	qe->resp.offset = 0;
	qe->resp.have_wqe = true;
	qe->resp.wqe_srq = false;
	qe->qp->xrc_rcookie = an.cookie;
	qe->qp->xrc_rwqe = true;
	return SV_XRCFWD_TAKEN;
}

enum sv_sgl_err sv_xrcfwd_place(struct sv_qp_engine *qe, const uint8_t *data,
				uint32_t len)
{
	struct fwd_req rq = {
		.op = FWD_PLACE,
		.srqn = qe->qp->xrc_rsrqn,
		.cookie = qe->qp->xrc_rcookie,
		.offset = qe->resp.offset,
		.len = len,
	};
	struct fwd_ans an;

	ask(qe->qp, &rq, data, &an);
	/* A bad SGE there, a page that faulted there, or the owner gone
	 * mid-message: the receive fails as for a bad local SGE (the fault's
	 * address is the owner's to report). */
	return an.status == FWD_OK ? SV_SGL_OK : SV_SGL_PROT;
}

int sv_xrcfwd_complete(struct sv_qp_engine *qe, const struct ibv_wc *wc,
		       bool solicited)
{
	struct fwd_req rq = {
		.op = FWD_DONE,
		.srqn = qe->qp->xrc_rsrqn,
		.cookie = qe->qp->xrc_rcookie,
		.solicited = solicited,
		.wc = *wc,
	};
	struct fwd_ans an;

	qe->qp->xrc_rwqe = false;
	ask(qe->qp, &rq, NULL, &an);
	if (an.status == FWD_CQ_FULL)
		return ENOSPC;
	return an.status == FWD_OK ? 0 : EIO;
}

void sv_xrcfwd_release(struct sv_qp *qp)
{
	struct fwd_req rq = {
		.op = FWD_DONE,
		.srqn = qp->xrc_rsrqn,
		.cookie = qp->xrc_rcookie,
		.wc = {
			.status = IBV_WC_WR_FLUSH_ERR,
			.opcode = IBV_WC_RECV,
			.qp_num = qp->qpx.qp_base.qp_num,
			.vendor_err = IBV_WC_WR_FLUSH_ERR,
		},
	};
	struct fwd_ans an;

	if (!qp->xrc_rwqe)
		return;
	qp->xrc_rwqe = false;
	ask(qp, &rq, NULL, &an);
}
