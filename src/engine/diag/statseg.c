/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The writer's side of the live counters (engine/diag/statseg.h): the process's
 * segment, made at its first context and removed with its last one or at
 * its exit, the slots of contexts and QPs, and the snapshot of the QPs'
 * states the engine refreshes.
 */
#include "engine/diag/statseg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"
#include "engine/diag/statid.h"
#include "link/shm.h"
#include "util/clock.h"
#include "util/lockorder.h"
#include "util/log.h"

/* The process's segment while it has a context open: made and removed
 * under seg_lock, read without it by the engines whose slots it holds
 * (seg_pid tells a forked child that the mapping is its parent's). */
static pthread_mutex_t seg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_statseg *_Atomic seg;
static _Atomic int seg_pid;
static char seg_name[32];
static unsigned int seg_users; /* contexts with a slot in it (seg_lock) */

/* A file of ours, NUL-free text squeezed into out (NULs become spaces:
 * /proc/self/cmdline). */
static void read_text(const char *path, char *out, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, out, len - 1);

	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == '\0')
			out[i] = ' ';
	out[n] = '\0';
}

/* Is it time to look for stale segments?  At most once per
 * SV_STATSEG_STALE_S per user (the marker's time says when it was last
 * done), so a process's start costs one fstatat, not a look at every
 * entry of the directory (docs/security.md, "Registry"). */
static bool sweep_due(int dir, uint64_t now)
{
	struct stat st;
	int fd;

	if (fstatat(dir, SV_STATSEG_SWEEP, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (uint64_t)st.st_mtime + SV_STATSEG_STALE_S > now / 1000000000ull)
		return false;
	fd = openat(dir, SV_STATSEG_SWEEP,
		    O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	futimens(fd, NULL);
	close(fd);
	return true;
}

/* Remove the segments of dead processes not updated for
 * SV_STATSEG_STALE_S: their last counters have been there long enough.
 * Only a header is read, and only to decide on a file of our own
 * directory. */
static void sweep(int dir, int self)
{
	uint64_t now = sv_real_ns();
	struct dirent *e;
	DIR *d = NULL;
	int fd;

	if (!sweep_due(dir, now) || (fd = dup(dir)) < 0)
		return;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	rewinddir(d); /* a dup shares the directory's offset */
	while ((e = readdir(d))) {
		struct sv_statseg_hdr h;
		int pid, f;
		ssize_t n;

		if (sv_statid_pid(e->d_name, &pid) || pid == self)
			continue;
		f = openat(dir, e->d_name,
			   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		n = f < 0 ? -1 : pread(f, &h, sizeof(h), 0);
		if (f >= 0)
			close(f);
		if (n == (ssize_t)sizeof(h) && h.magic == SV_STATSEG_MAGIC &&
		    (sv_statid_alive(pid, h.start_ticks) ||
		     now - h.updated_ns <
			     (uint64_t)SV_STATSEG_STALE_S * 1000000000ull))
			continue;
		/* Dead and stale, or no segment at all: ours to remove. */
		if (!sv_statid_alive(pid, 0) ||
		    (n == (ssize_t)sizeof(h) && h.magic == SV_STATSEG_MAGIC))
			unlinkat(dir, e->d_name, 0);
	}
	closedir(d);
}

/* seg_lock held. */
static struct sv_statseg *seg_create(void)
{
	const char *why;
	int dir = sv_shm_registry_dir(&why), fd, self = (int)getpid();
	struct sv_statseg *s;
	struct sv_statseg_hdr *h;

	if (dir < 0) {
		sv_info("live counters off: %s", why);
		return NULL;
	}
	sweep(dir, self);
	snprintf(seg_name, sizeof(seg_name), SV_STATSEG_PREFIX "%d", self);
	/* A file of this name is a dead process's that had our pid. */
	unlinkat(dir, seg_name, 0);
	fd = openat(dir, seg_name,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		sv_info("live counters off: %s: %s", seg_name, strerror(errno));
		return NULL;
	}
	if (ftruncate(fd, sizeof(*s))) {
		close(fd);
		unlinkat(dir, seg_name, 0);
		return NULL;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED) {
		unlinkat(dir, seg_name, 0);
		return NULL;
	}
	h = &s->hdr;
	h->version = SV_STATSEG_VERSION;
	h->hdr_size = sizeof(s->hdr);
	h->eng_size = sizeof(s->eng[0]);
	h->qp_size = sizeof(s->qp[0]);
	h->nengines = SV_STATSEG_ENGINES;
	h->nqps = SV_STATSEG_QPS;
	h->ncounters = sizeof(struct sv_stats) / sizeof(uint64_t);
	h->nqp_counters = sizeof(struct sv_qp_stats) / sizeof(uint64_t);
	h->counters_hash = sv_statid_hash();
	h->pid = self;
	h->uid = (uint32_t)geteuid();
	h->start_ticks = sv_statid_start_ticks(self);
	h->start_ns = sv_real_ns();
	atomic_store(&h->updated_ns, h->start_ns);
	read_text("/proc/self/comm", h->comm, sizeof(h->comm));
	read_text("/proc/self/cmdline", h->cmdline, sizeof(h->cmdline));
	/* Last: a reader that sees the magic sees a whole header. */
	__atomic_store_n(&h->magic, SV_STATSEG_MAGIC, __ATOMIC_RELEASE);
	return s;
}

/* A process that exits (not one killed) takes its segment with it; a
 * forked child leaves its parent's alone. */
__attribute__((destructor)) static void seg_at_exit(void)
{
	struct sv_statseg *s = atomic_load(&seg);
	int dir = sv_shm_registry_dir(NULL);

	if (!s || atomic_load(&seg_pid) != (int)getpid() || dir < 0)
		return;
	atomic_store(&s->hdr.exited, 1);
	unlinkat(dir, seg_name, 0);
}

/* seg_lock held: the segment of this process, made if needed. */
static struct sv_statseg *seg_get(void)
{
	struct sv_statseg *s = atomic_load(&seg);
	int self = (int)getpid();

	if (!s || atomic_load(&seg_pid) != self) {
		/* A forked child leaves the parent's mapping mapped: its
		 * inherited engines may still point into it. */
		seg_users = 0;
		s = seg_create();
		atomic_store(&seg, s);
		atomic_store(&seg_pid, self);
	}
	return s;
}

void sv_statseg_engine_open(struct sv_engine *eng)
{
	struct sv_statseg *s;
	unsigned int i;

	eng->statslot = NULL;
	sv_mutex_lock(&seg_lock, SV_LOCK_STATSEG);
	s = seg_get();
	for (i = 0; s && i < SV_STATSEG_ENGINES; i++) {
		struct sv_statslot_eng *e = &s->eng[i];

		if (atomic_load(&e->used))
			continue;
		/* The last context's values go before the slot is seen
		 * as used again. */
		memset((char *)e + sizeof(e->used), 0,
		       sizeof(*e) - sizeof(e->used));
		atomic_store_explicit(&e->used, 1, memory_order_release);
		eng->statslot = e;
		eng->statidx = i;
		eng->stat_pid = (int)getpid();
		seg_users++;
		break;
	}
	sv_mutex_unlock(&seg_lock);
	if (!eng->statslot) {
		/* No segment, or no slot left: counters of our own. */
		eng->statslot = calloc(1, sizeof(*eng->statslot));
		eng->stat_private = true;
	}
	if (!eng->statslot) {
		/* Out of memory: a slot nobody reads or frees. */
		static struct sv_statslot_eng lost;

		eng->statslot = &lost;
		eng->stat_private = false;
		eng->stat_pid = 0;
	}
	eng->stats = &eng->statslot->ctr;
}

void sv_statseg_engine_close(struct sv_engine *eng)
{
	struct sv_statseg *s;
	struct list_node *it;
	int dir;

	if (!eng->stat_private && eng->stat_pid != (int)getpid()) {
		/* Inherited by a forked child: the slots are the parent's,
		 * in its segment (MAP_SHARED), and stay as they are. */
		eng->statslot = NULL;
		eng->stats = NULL;
		return;
	}
	/* QPs left to the context's close: their slots would otherwise
	 * show under the next context given this one's slot. */
	for (it = eng->qps.n.next; it != &eng->qps.n; it = it->next) {
		struct sv_qp_engine *qe =
			list_entry(it, struct sv_qp_engine, node);

		if (qe->statslot)
			atomic_store(&qe->statslot->used, 0);
		qe->statslot = NULL;
	}
	if (eng->stat_private) {
		free(eng->statslot);
	} else if (eng->statslot) {
		sv_mutex_lock(&seg_lock, SV_LOCK_STATSEG);
		s = atomic_load(&seg);
		atomic_store_explicit(&eng->statslot->used, 0,
				      memory_order_release);
		/* The last context gone: nothing to show, and a process
		 * that now execs another program must not leave its
		 * segment behind under the same pid. */
		if (s && atomic_load(&seg_pid) == (int)getpid() &&
		    !--seg_users) {
			dir = sv_shm_registry_dir(NULL);
			if (dir >= 0)
				unlinkat(dir, seg_name, 0);
			atomic_store(&seg, NULL);
			munmap(s, sizeof(*s));
		}
		sv_mutex_unlock(&seg_lock);
	}
	eng->statslot = NULL;
	eng->stats = NULL;
}

void sv_statseg_qp_open(struct sv_qp_engine *qe)
{
	struct sv_engine *eng = qe->eng;
	struct sv_statseg *s = atomic_load(&seg);
	unsigned int i;

	qe->statslot = NULL;
	qe->ctr = &eng->statslot->other.ctr;
	/* Only a context with a slot in this process's own segment. */
	if (eng->stat_private || !s || eng->stat_pid != (int)getpid())
		return;
	for (i = 0; i < SV_STATSEG_QPS; i++) {
		struct sv_statslot_qp *q = &s->qp[i];
		uint32_t free_ = 0;

		if (atomic_load_explicit(&q->used, memory_order_relaxed) ||
		    !atomic_compare_exchange_strong(&q->used, &free_,
						    UINT32_MAX))
			continue;
		memset((char *)q + sizeof(q->used), 0,
		       sizeof(*q) - sizeof(q->used));
		q->qpn = qe->qpn;
		q->type = (uint8_t)qe->qp->type;
		q->state = IBV_QPS_RESET;
		atomic_store_explicit(&q->used, 1 + eng->statidx,
				      memory_order_release);
		qe->statslot = q;
		qe->ctr = &q->ctr;
		return;
	}
}

void sv_statseg_qp_close(struct sv_qp_engine *qe)
{
	/* Not in a forked child: the slot is its parent's. */
	if (qe->statslot && qe->eng->stat_pid == (int)getpid())
		atomic_store_explicit(&qe->statslot->used, 0,
				      memory_order_release);
	qe->statslot = NULL;
	qe->ctr = NULL;
}

void sv_statseg_qp_note(struct sv_qp_engine *qe)
{
	struct sv_statslot_qp *q = qe->statslot;
	struct sv_qp *qp = qe->qp;
	int state = atomic_load_explicit(&qe->state, memory_order_relaxed);

	if (!q)
		return;
	q->state = (uint8_t)state;
	q->sq_outstanding =
		atomic_load_explicit(&qp->sq.tail, memory_order_relaxed) -
		atomic_load_explicit(&qp->sq.head, memory_order_relaxed);
	q->rq_outstanding =
		qp->srq ? 0 :
			  atomic_load_explicit(&qp->rq.tail,
					       memory_order_relaxed) -
				  atomic_load_explicit(&qp->rq.head,
						       memory_order_relaxed);
	if (state < IBV_QPS_RTR) {
		q->path = SV_STATSEG_PATH_NONE;
	} else if (qe->shm) {
		q->path = SV_STATSEG_PATH_SHM;
	} else {
		q->path = SV_STATSEG_PATH_UDP;
		snprintf(q->why, sizeof(q->why), "%s",
			 qe->type == IBV_QPT_UD ? "UD: datagrams take UDP" :
						  qe->path_why);
	}
}

void sv_statseg_refresh(struct sv_engine *eng, uint64_t now, bool force)
{
	struct sv_statseg *s = atomic_load(&seg);
	struct list_node *it;
	uint32_t n = 0, others = 0;

	if (eng->stat_private || !s ||
	    (!force && now - eng->stat_refreshed < SV_STATSEG_REFRESH_NS))
		return;
	eng->stat_refreshed = now;
	for (it = eng->qps.n.next; it != &eng->qps.n; it = it->next) {
		struct sv_qp_engine *qe =
			list_entry(it, struct sv_qp_engine, node);

		n++;
		if (qe->statslot)
			sv_statseg_qp_note(qe);
		else
			others++;
	}
	eng->statslot->qps = n;
	eng->statslot->others = others;
	atomic_store_explicit(&s->hdr.updated_ns, sv_real_ns(),
			      memory_order_relaxed);
}
