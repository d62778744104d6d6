/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * XRC domains, XRC SRQ numbers and target QP lists (see xrc.h).
 */
#include "core/xrc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>

#include "util/lockorder.h"

static pthread_mutex_t xrc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head domains = LIST_HEAD_INIT(domains);

/* ---- domains -------------------------------------------------------------- */

/*
 * A file's domain exists on the host while some process has it open, as
 * the kernel's XRCD keyed by the inode: each process that holds it keeps
 * a shared flock on its own open of the file, which the kernel drops when
 * the process closes the domain or dies, so the last close anywhere ends
 * the domain and a crash leaves nothing behind.  Whether another process
 * has it is a non-blocking exclusive flock that fails.  The kernel's
 * rules follow: no domain and no O_CREAT -> EAGAIN; one and O_EXCL ->
 * EINVAL.  *lockfd: the open that holds the shared lock.
 */
static int join_file(int fd, int oflags, int *lockfd)
{
	char path[64];
	bool exists;
	int l;

	/* Our own open of the file (not the caller's descriptor, whose
	 * locks are the application's). */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	l = open(path, O_RDONLY | O_CLOEXEC);
	if (l < 0)
		l = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (l < 0)
		return errno == EMFILE || errno == ENFILE ? errno : EBADF;
	exists = flock(l, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK;
	if ((!exists && !(oflags & O_CREAT)) || (exists && (oflags & O_EXCL))) {
		close(l);
		return exists ? EINVAL : EAGAIN;
	}
	/* (Held exclusively when new: others wait the instant it takes to
	 * make it shared.) */
	while (flock(l, LOCK_SH) && errno == EINTR)
		;
	*lockfd = l;
	return 0;
}

int sv_xrcd_open(int fd, int oflags, struct sv_xrcd **dom_out)
{
	struct sv_xrcd *dom = NULL;
	struct list_node *it;
	struct stat st;

	if (fd != -1 && fstat(fd, &st))
		return EBADF;
	sv_mutex_lock(&xrc_lock, SV_LOCK_XRC);
	if (fd != -1) {
		for (it = domains.n.next; it != &domains.n; it = it->next) {
			struct sv_xrcd *d =
				list_entry(it, struct sv_xrcd, node);

			if (d->by_inode && d->dev == st.st_dev &&
			    d->ino == st.st_ino) {
				dom = d;
				break;
			}
		}
		/* The kernel's rule for a domain that exists (here; one
		 * of other processes only: join_file). */
		if (dom && (oflags & O_EXCL)) {
			sv_mutex_unlock(&xrc_lock);
			return EINVAL;
		}
	}
	if (!dom) {
		int lockfd = -1, err;

		if (fd != -1) {
			err = join_file(fd, oflags, &lockfd);
			if (err) {
				sv_mutex_unlock(&xrc_lock);
				return err;
			}
		}
		dom = calloc(1, sizeof(*dom));
		if (!dom) {
			if (lockfd >= 0)
				close(lockfd);
			sv_mutex_unlock(&xrc_lock);
			return ENOMEM;
		}
		dom->lockfd = lockfd;
		if (fd != -1) {
			dom->by_inode = true;
			dom->dev = st.st_dev;
			dom->ino = st.st_ino;
		}
		list_head_init(&dom->tgt_qps);
		list_add_tail(&domains, &dom->node);
	}
	dom->opens++;
	sv_mutex_unlock(&xrc_lock);
	*dom_out = dom;
	return 0;
}

int sv_xrcd_close(struct sv_xrcd *dom)
{
	sv_mutex_lock(&xrc_lock, SV_LOCK_XRC);
	/* The last open goes only when nothing uses the domain (EBUSY, as
	 * ib_dealloc_xrcd with users). */
	if (dom->opens == 1 && dom->users) {
		sv_mutex_unlock(&xrc_lock);
		return EBUSY;
	}
	if (--dom->opens == 0) {
		list_del(&dom->node);
		if (dom->lockfd >= 0)
			close(dom->lockfd); /* this process leaves the domain */
		free(dom);
	}
	sv_mutex_unlock(&xrc_lock);
	return 0;
}

void sv_xrcd_use(struct sv_xrcd *dom)
{
	sv_mutex_lock(&xrc_lock, SV_LOCK_XRC);
	dom->users++;
	sv_mutex_unlock(&xrc_lock);
}

void sv_xrcd_unuse(struct sv_xrcd *dom)
{
	sv_mutex_lock(&xrc_lock, SV_LOCK_XRC);
	dom->users--;
	sv_mutex_unlock(&xrc_lock);
}

/* ---- XRC SRQ numbers -------------------------------------------------------- */

/*
 * XRC SRQ numbers are unique on the host, not only in the process: a
 * request naming another process's SRQ must find nothing here, never
 * land in an SRQ of ours that happens to have the same number, and the
 * number must say which process owns the SRQ.  As for QP numbers, the
 * kernel's UDP port allocation provides that without a daemon: a number
 * is (port << 8) | index, the port one this process holds bound for the
 * purpose, 256 numbers per port; the block's server (engine/forward/xrcfwd.c)
 * answers for the port's SRQs.
 */
struct num_block {
	int fd;
	uint16_t port;
	void *server; /* server_ops->start's handle */
	unsigned int used;
	uint8_t busy[256 / 8];
	struct num_block *next;
};

#define SRQ_BUCKETS 1024

static struct sv_srq *srq_tab[SRQ_BUCKETS];
static pthread_rwlock_t srq_tab_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct num_block *blocks; /* srq_tab_lock (write) */
static unsigned int srq_count;
static const struct sv_xrc_server_ops *_Atomic server_ops;
static pthread_mutex_t srq_drain_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t srq_drain_cond = PTHREAD_COND_INITIALIZER;

static struct sv_srq **bucket(uint32_t n)
{
	return &srq_tab[(n * 0x9E3779B1u) >> 22];
}

static struct sv_srq *find_num(uint32_t n)
{
	struct sv_srq *s;

	for (s = *bucket(n); s; s = s->xrc_next)
		if (s->srq_num == n)
			return s;
	return NULL;
}

static void link_srq(struct sv_srq *srq)
{
	struct sv_srq **b = bucket(srq->srq_num);

	srq->xrc_next = *b;
	*b = srq;
}

static void unlink_srq(struct sv_srq *srq)
{
	struct sv_srq **p;

	for (p = bucket(srq->srq_num); *p; p = &(*p)->xrc_next) {
		if (*p == srq) {
			*p = srq->xrc_next;
			srq->xrc_next = NULL;
			return;
		}
	}
}

static struct num_block *block_new(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	struct num_block *b = calloc(1, sizeof(*b));
	const struct sv_xrc_server_ops *ops;

	if (!b)
		return NULL;
	b->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (b->fd < 0 || bind(b->fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    getsockname(b->fd, (struct sockaddr *)&sin, &len)) {
		if (b->fd >= 0)
			close(b->fd);
		free(b);
		return NULL;
	}
	b->port = ntohs(sin.sin_port);
	ops = atomic_load(&server_ops);
	if (ops)
		b->server = ops->start(b->port);
	b->next = blocks;
	blocks = b;
	return b;
}

/* A free number (srq_tab_lock held for writing), 0 if none. */
static uint32_t num_alloc(void)
{
	struct num_block *b;
	unsigned int i;

	for (b = blocks; b && b->used == 256; b = b->next)
		;
	if (!b && !(b = block_new()))
		return 0;
	for (i = 0; i < 256; i++)
		if (!(b->busy[i / 8] & (1u << (i % 8))))
			break;
	/* A block with used < 256 has a clear bit; the check keeps the
	 * index in bounds where the compiler cannot see that. */
	if (i == 256)
		return 0;
	b->busy[i / 8] |= (uint8_t)(1u << (i % 8));
	b->used++;
	return ((uint32_t)b->port << 8) | i;
}

/* Free a number; the block's server handle when the block went with it
 * (to stop once srq_tab_lock is released: its thread may wait for it). */
static void *num_free(uint32_t n)
{
	struct num_block **pb, *b;
	unsigned int i = n & 0xff;
	void *server = NULL;

	for (pb = &blocks; (b = *pb); pb = &b->next) {
		if (b->port != n >> 8)
			continue;
		b->busy[i / 8] &= (uint8_t) ~(1u << (i % 8));
		if (--b->used == 0) {
			*pb = b->next;
			server = b->server;
			close(b->fd);
			free(b);
		}
		break;
	}
	return server;
}

int sv_xrc_srq_add(struct sv_srq *srq)
{
	sv_rwlock_wrlock(&srq_tab_lock, SV_LOCK_XRC_SRQ_TAB);
	/* 24-bit numbers (the XRCETH field), never 0, unique on the host. */
	if (srq_count >= SV_MAX_SRQ || !(srq->srq_num = num_alloc())) {
		sv_rwlock_unlock(&srq_tab_lock);
		return ENOMEM;
	}
	atomic_init(&srq->xrc_refs, 0);
	atomic_init(&srq->xrc_dying, false);
	link_srq(srq);
	srq_count++;
	sv_rwlock_unlock(&srq_tab_lock);
	return 0;
}

int sv_xrc_srq_remove(struct sv_srq *srq)
{
	void *server;

	sv_rwlock_wrlock(&srq_tab_lock, SV_LOCK_XRC_SRQ_TAB);
	unlink_srq(srq);
	atomic_store(&srq->xrc_dying, true);
	sv_rwlock_unlock(&srq_tab_lock);

	/* No packet can find it now; wait for those that did. */
	sv_mutex_lock(&srq_drain_lock, SV_LOCK_SRQ_DRAIN);
	while (atomic_load(&srq->xrc_refs) > 0)
		sv_cond_wait(&srq_drain_cond, &srq_drain_lock);
	sv_mutex_unlock(&srq_drain_lock);

	/* A target QP in the middle of a message from this SRQ holds it (a
	 * hold is only taken under a reference, so none can appear now). */
	if (atomic_load(&srq->users)) {
		sv_rwlock_wrlock(&srq_tab_lock, SV_LOCK_XRC_SRQ_TAB);
		atomic_store(&srq->xrc_dying, false);
		link_srq(srq);
		sv_rwlock_unlock(&srq_tab_lock);
		return EBUSY;
	}
	sv_rwlock_wrlock(&srq_tab_lock, SV_LOCK_XRC_SRQ_TAB);
	server = num_free(srq->srq_num);
	srq_count--;
	sv_rwlock_unlock(&srq_tab_lock);
	if (server)
		atomic_load(&server_ops)->stop(server);
	return 0;
}

struct sv_srq *sv_xrc_srq_get(struct sv_xrcd *dom, uint32_t srqn)
{
	struct sv_srq *srq;

	sv_rwlock_rdlock(&srq_tab_lock, SV_LOCK_XRC_SRQ_TAB);
	srq = find_num(srqn);
	/* IBA A14: the SRQ must belong to the target QP's domain. */
	if (srq && srq->xrcd != dom)
		srq = NULL;
	if (srq)
		atomic_fetch_add(&srq->xrc_refs, 1);
	sv_rwlock_unlock(&srq_tab_lock);
	return srq;
}

struct sv_srq *sv_xrc_srq_get_shared(dev_t dev, ino_t ino, uint32_t srqn)
{
	struct sv_srq *srq;

	sv_rwlock_rdlock(&srq_tab_lock, SV_LOCK_XRC_SRQ_TAB);
	srq = find_num(srqn);
	/* Only an SRQ of the same file's domain: with fd -1 a domain is
	 * this process's alone. */
	if (srq && (!srq->xrcd->by_inode || srq->xrcd->dev != dev ||
		    srq->xrcd->ino != ino))
		srq = NULL;
	if (srq)
		atomic_fetch_add(&srq->xrc_refs, 1);
	sv_rwlock_unlock(&srq_tab_lock);
	return srq;
}

bool sv_xrc_srqn_ours(uint32_t srqn)
{
	struct num_block *b;
	bool ours = false;

	sv_rwlock_rdlock(&srq_tab_lock, SV_LOCK_XRC_SRQ_TAB);
	for (b = blocks; b && !ours; b = b->next)
		ours = b->port == srqn >> 8;
	sv_rwlock_unlock(&srq_tab_lock);
	return ours;
}

void sv_xrc_set_server(const struct sv_xrc_server_ops *ops)
{
	atomic_store(&server_ops, ops);
}

void sv_xrc_srq_put(struct sv_srq *srq)
{
	if (atomic_fetch_sub(&srq->xrc_refs, 1) == 1 &&
	    atomic_load(&srq->xrc_dying)) {
		sv_mutex_lock(&srq_drain_lock, SV_LOCK_SRQ_DRAIN);
		pthread_cond_broadcast(&srq_drain_cond);
		sv_mutex_unlock(&srq_drain_lock);
	}
}

/* ---- target QPs ------------------------------------------------------------------ */

void sv_xrc_tgt_add(struct sv_qp *qp)
{
	sv_mutex_lock(&xrc_lock, SV_LOCK_XRC);
	list_add_tail(&qp->xrcd->tgt_qps, &qp->xrc_node);
	qp->xrcd->users++;
	sv_mutex_unlock(&xrc_lock);
}

void sv_xrc_tgt_del(struct sv_qp *qp)
{
	sv_mutex_lock(&xrc_lock, SV_LOCK_XRC);
	list_del(&qp->xrc_node);
	qp->xrcd->users--;
	sv_mutex_unlock(&xrc_lock);
}

struct sv_qp *sv_xrc_tgt_open(struct sv_xrcd *dom, uint32_t qpn)
{
	struct sv_qp *found = NULL;
	struct list_node *it;

	sv_mutex_lock(&xrc_lock, SV_LOCK_XRC);
	for (it = dom->tgt_qps.n.next; it != &dom->tgt_qps.n; it = it->next) {
		struct sv_qp *qp = list_entry(it, struct sv_qp, xrc_node);

		if (qp->qpx.qp_base.qp_num == qpn) {
			found = qp;
			found->xrc_opens++;
			dom->users++;
			break;
		}
	}
	sv_mutex_unlock(&xrc_lock);
	return found;
}

void sv_xrc_tgt_close(struct sv_qp *real)
{
	sv_mutex_lock(&xrc_lock, SV_LOCK_XRC);
	real->xrc_opens--;
	real->xrcd->users--;
	sv_mutex_unlock(&xrc_lock);
}

int sv_xrc_tgt_busy(struct sv_qp *qp)
{
	int busy;

	sv_mutex_lock(&xrc_lock, SV_LOCK_XRC);
	busy = qp->xrc_opens;
	sv_mutex_unlock(&xrc_lock);
	return busy ? EBUSY : 0;
}
