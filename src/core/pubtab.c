/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The published table (core/pubtab.h): layout, the owner's updates and
 * the peers' checked lookups.
 *
 * Layout of the memfd segment: a header, then two open-addressing tables
 * of fixed capacity (the segment never grows: peers map it once), MRs by
 * R_Key and QPs by QPN.  Slots are found by a multiplicative hash and
 * linear probing, at most SV_PUB_PROBE slots: a table too full to take an
 * entry leaves it out, and the peers then use the packet path for it.
 * Removal leaves a tombstone (deletion cannot move entries under readers
 * that do not lock); insertion reuses tombstones.
 *
 * Each slot is a small seqlock: the owner makes the sequence odd, changes
 * the fields, makes it even again.  A reader reads the sequence (even),
 * the fields, raises `users`, then reads the sequence again: unchanged
 * means the fields it checked are the entry's and the entry cannot change
 * until it lowers `users`, because the owner, after making the sequence
 * odd, waits for `users` to reach 0 before it touches the fields (both
 * sides use sequentially consistent operations, so either the reader
 * sees the odd sequence or the owner sees the raised count).  The wait is
 * bounded (SV_PUB_DRAIN_NS) in case a peer died in the middle of a copy.
 *
 * The segment is sealed against shrinking, so a peer holding it read-write
 * cannot make our accesses fault; peers' segments are checked for the same
 * seal before they are used.  Capacities are read from a peer's header
 * once, validated against the segment's size, and kept in our own handle:
 * a peer rewriting its header cannot send our lookups out of bounds.
 */
#include "core/pubtab.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/env.h"
#include "util/lockorder.h"
#include "util/log.h"

#define SV_PUB_MAGIC 0x5356505542544231ull /* "SVPUBTB1" */
#define SV_PUB_VERSION 1
#define SV_PUB_MR_CAP (1u << 16)
#define SV_PUB_QP_CAP (1u << 15)
#define SV_PUB_PROBE 32
#define SV_PUB_TOMB 0xffffffffu /* neither a region R_Key nor a QPN */
/* A slot whose users never drained (a peer died in a copy): never reused,
 * since its count cannot be trusted any more. */
#define SV_PUB_POISON 0xfffffffeu
#define SV_PUB_DRAIN_NS (1000ull * 1000 * 1000)

struct pub_hdr {
	uint64_t magic;
	uint32_t version;
	int32_t pid;
	uint64_t size;
	uint32_t mr_cap, qp_cap;
	uint64_t mr_off, qp_off;
};

/* Fields other than seq/key/users are read relaxed and validated by the
 * sequence, as described above. */
struct pub_mr {
	_Atomic uint32_t seq;
	_Atomic uint32_t key; /* R_Key; 0 never used; SV_PUB_TOMB removed */
	_Atomic uint32_t users;
	_Atomic uint32_t access;
	_Atomic uint64_t pd;
	_Atomic uint64_t iova;
	_Atomic uint64_t length;
	_Atomic uint64_t va;
};

struct pub_qp {
	_Atomic uint32_t seq;
	_Atomic uint32_t key; /* QPN */
	_Atomic uint32_t users;
	_Atomic uint32_t state;
	_Atomic uint32_t access;
	_Atomic uint32_t dest_qpn;
	_Atomic uint32_t max_rd; /* max_dest_rd_atomic */
	uint32_t pad;
	_Atomic uint64_t pd;
};

/* A mapped table, ours or a peer's. */
struct sv_pubtab_view {
	struct pub_hdr *hdr;
	size_t size;
	pid_t pid;
	struct pub_mr *mr;
	uint32_t mr_cap, mr_shift;
	struct pub_qp *qp;
	uint32_t qp_cap, qp_shift;
	int memfd; /* the target's /proc/PID/mem (peers' views), or -1 */
};

static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_pubtab_view own;
static int own_fd = -1;
static bool own_tried;

static size_t layout(uint64_t *mr_off, uint64_t *qp_off)
{
	*mr_off = 4096;
	*qp_off = *mr_off + (uint64_t)SV_PUB_MR_CAP * sizeof(struct pub_mr);
	return (size_t)(*qp_off +
			(uint64_t)SV_PUB_QP_CAP * sizeof(struct pub_qp));
}

static uint32_t log2u(uint32_t v)
{
	uint32_t n = 0;

	while ((1u << n) < v)
		n++;
	return n;
}

static uint32_t hash(uint32_t key, uint32_t shift)
{
	/* Multiplicative: QPNs differ mostly in their high bits (the port),
	 * which the top bits of the product mix in. */
	return (key * 0x9E3779B1u) >> (32 - shift);
}

static bool view_init(struct sv_pubtab_view *v, void *base, size_t size)
{
	struct pub_hdr *h = base;
	uint64_t mr_end, qp_end;

	v->memfd = -1;
	if (size < sizeof(*h) || h->magic != SV_PUB_MAGIC ||
	    h->version != SV_PUB_VERSION || h->size != size)
		return false;
	/* Power-of-two capacities, tables inside the segment. */
	if (h->mr_cap < 64 || (h->mr_cap & (h->mr_cap - 1)) ||
	    h->mr_cap > 1u << 24 || h->qp_cap < 64 ||
	    (h->qp_cap & (h->qp_cap - 1)) || h->qp_cap > 1u << 24)
		return false;
	if (h->mr_off % 64 || h->qp_off % 64 || h->mr_off < sizeof(*h) ||
	    h->qp_off < sizeof(*h))
		return false;
	mr_end = h->mr_off + (uint64_t)h->mr_cap * sizeof(struct pub_mr);
	qp_end = h->qp_off + (uint64_t)h->qp_cap * sizeof(struct pub_qp);
	if (mr_end > size || qp_end > size || h->mr_off > size ||
	    h->qp_off > size)
		return false;
	v->hdr = h;
	v->size = size;
	v->pid = h->pid;
	v->mr = (struct pub_mr *)((char *)base + h->mr_off);
	v->mr_cap = h->mr_cap;
	v->mr_shift = log2u(h->mr_cap);
	v->qp = (struct pub_qp *)((char *)base + h->qp_off);
	v->qp_cap = h->qp_cap;
	v->qp_shift = log2u(h->qp_cap);
	return true;
}

/* A forked child must not write into its parent's table (the mapping is
 * not inherited: MADV_DONTFORK); it creates its own when it needs one. */
static void atfork_child(void)
{
	if (own_fd >= 0)
		close(own_fd);
	own_fd = -1;
	memset(&own, 0, sizeof(own));
	own_tried = false;
	pthread_mutex_init(&own_lock, NULL);
}

/* Create the table once (own_lock held); false if it does not exist. */
static bool own_ready(void)
{
	static bool atfork_done;
	uint64_t mr_off, qp_off;
	size_t size;
	struct pub_hdr *h;
	void *p;
	int fd;

	if (own.hdr)
		return true;
	if (own_tried)
		return false;
	own_tried = true;
	if (!sv_env_fastpath())
		return false;
	size = layout(&mr_off, &qp_off);
	fd = memfd_create("softverbs-pubtab", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		sv_dbg("pubtab: memfd_create: %s", strerror(errno));
		return false;
	}
	if (ftruncate(fd, (off_t)size) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		sv_dbg("pubtab: sizing: %s", strerror(errno));
		close(fd);
		return false;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return false;
	}
	madvise(p, size, MADV_DONTFORK);
	h = p;
	h->version = SV_PUB_VERSION;
	h->pid = (int32_t)getpid();
	h->size = size;
	h->mr_cap = SV_PUB_MR_CAP;
	h->qp_cap = SV_PUB_QP_CAP;
	h->mr_off = mr_off;
	h->qp_off = qp_off;
	atomic_thread_fence(memory_order_release);
	h->magic = SV_PUB_MAGIC;
	if (!view_init(&own, p, size)) {
		munmap(p, size);
		close(fd);
		return false;
	}
	own_fd = fd;
	if (!atfork_done) {
		pthread_atfork(NULL, NULL, atfork_child);
		atfork_done = true;
	}
	return true;
}

int sv_pubtab_fd(void)
{
	int fd;

	sv_mutex_lock(&own_lock, SV_LOCK_PUBTAB);
	fd = own_ready() ? own_fd : -1;
	sv_mutex_unlock(&own_lock);
	return fd;
}

const struct sv_pubtab_view *sv_pubtab_own(void)
{
	const struct sv_pubtab_view *tab;

	sv_mutex_lock(&own_lock, SV_LOCK_PUBTAB);
	tab = own.hdr ? &own : NULL;
	sv_mutex_unlock(&own_lock);
	return tab;
}

struct sv_pubtab_view *sv_pubtab_map(pid_t pid, int fd)
{
	char path[64];
	struct sv_pubtab_view *v;
	struct stat st;
	void *p;
	int f, seals, memfd;

	if (pid <= 0 || fd < 0)
		return NULL;
	/* The target's memory as a file, opened before its table so that
	 * both name the process the table says it is; it stays bound to
	 * that process's memory (a reused pid cannot redirect it). */
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	memfd = open(path, O_RDWR | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	f = open(path, O_RDWR | O_CLOEXEC);
	if (f < 0) {
		if (memfd >= 0)
			close(memfd);
		return NULL;
	}
	/* A segment that could shrink under us would fault our lookups;
	 * one another user made is not read at all (no trust across users,
	 * docs/security.md). */
	seals = fcntl(f, F_GET_SEALS);
	if (fstat(f, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_uid != geteuid() || seals < 0 || !(seals & F_SEAL_SHRINK)) {
		close(f);
		goto fail;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 f, 0);
	close(f);
	if (p == MAP_FAILED)
		goto fail;
	madvise(p, (size_t)st.st_size, MADV_DONTFORK);
	v = calloc(1, sizeof(*v));
	if (!v || !view_init(v, p, (size_t)st.st_size) || v->pid != pid) {
		free(v);
		munmap(p, (size_t)st.st_size);
		goto fail;
	}
	v->memfd = memfd;
	return v;
fail:
	if (memfd >= 0)
		close(memfd);
	return NULL;
}

void sv_pubtab_unmap(struct sv_pubtab_view *tab)
{
	struct sv_pubtab_view *v = tab;

	if (!v)
		return;
	munmap(v->hdr, v->size);
	if (v->memfd >= 0)
		close(v->memfd);
	free(v);
}

int sv_pubtab_memfd(const struct sv_pubtab_view *tab)
{
	return ((const struct sv_pubtab_view *)tab)->memfd;
}

pid_t sv_pubtab_pid(const struct sv_pubtab_view *tab)
{
	return ((const struct sv_pubtab_view *)tab)->pid;
}

bool sv_pubtab_is_self(const struct sv_pubtab_view *tab)
{
	/* Our own table exists once anything of ours was published; without
	 * it, ask the kernel (glibc does not cache getpid). */
	pid_t self = own.hdr ? own.pid : getpid();

	return ((const struct sv_pubtab_view *)tab)->pid == self;
}

/* ---- owner side ----------------------------------------------------------- */

/* Wait until no peer uses the entry; false after SV_PUB_DRAIN_NS. */
static bool drain(_Atomic uint32_t *users, const char *what, uint32_t key)
{
	struct timespec ts = { 0, 20000 };
	uint64_t t0;

	if (!atomic_load(users))
		return true;
	t0 = sv_now_ns();
	while (atomic_load(users)) {
		if (sv_now_ns() - t0 >= SV_PUB_DRAIN_NS) {
			sv_warn("pubtab: %s 0x%x still used by a peer after 1 s; going on",
				what, key);
			return false;
		}
		nanosleep(&ts, NULL);
	}
	return true;
}

static struct pub_mr *mr_find(const struct sv_pubtab_view *v, uint32_t key)
{
	uint32_t i = hash(key, v->mr_shift), n;

	for (n = 0; n < SV_PUB_PROBE; n++, i = (i + 1) & (v->mr_cap - 1)) {
		uint32_t k = atomic_load(&v->mr[i].key);

		if (k == key)
			return &v->mr[i];
		if (!k)
			return NULL;
	}
	return NULL;
}

static struct pub_qp *qp_find(const struct sv_pubtab_view *v, uint32_t key)
{
	uint32_t i = hash(key, v->qp_shift), n;

	for (n = 0; n < SV_PUB_PROBE; n++, i = (i + 1) & (v->qp_cap - 1)) {
		uint32_t k = atomic_load(&v->qp[i].key);

		if (k == key)
			return &v->qp[i];
		if (!k)
			return NULL;
	}
	return NULL;
}

void sv_pubtab_mr_add(const struct sv_mr *mr)
{
	uint32_t key = mr->ibv.rkey, i, n, s;
	struct pub_mr *e = NULL;

	if (!key || key >= SV_PUB_POISON)
		return;
	sv_mutex_lock(&own_lock, SV_LOCK_PUBTAB);
	if (!own_ready())
		goto out;
	e = mr_find(&own, key);
	for (i = hash(key, own.mr_shift), n = 0; !e && n < SV_PUB_PROBE;
	     n++, i = (i + 1) & (own.mr_cap - 1)) {
		uint32_t k = atomic_load(&own.mr[i].key);

		if (!k || k == SV_PUB_TOMB)
			e = &own.mr[i];
	}
	if (!e)
		goto out; /* full around this key: peers use packets */
	s = atomic_load(&e->seq);
	atomic_store(&e->seq, s | 1);
	atomic_store_explicit(&e->pd, sv_pubtab_pd_token(mr->pd),
			      memory_order_relaxed);
	atomic_store_explicit(&e->iova, mr->iova, memory_order_relaxed);
	atomic_store_explicit(&e->length, mr->length, memory_order_relaxed);
	atomic_store_explicit(&e->va, (uint64_t)mr->va, memory_order_relaxed);
	atomic_store_explicit(&e->access, mr->access, memory_order_relaxed);
	atomic_store(&e->key, key);
	atomic_store(&e->seq, (s | 1) + 1);
out:
	sv_mutex_unlock(&own_lock);
}

void sv_pubtab_mr_del(const struct sv_mr *mr)
{
	uint32_t key = mr->ibv.rkey, s;
	struct pub_mr *e;
	bool ok;

	sv_mutex_lock(&own_lock, SV_LOCK_PUBTAB);
	e = own.hdr && key && key < SV_PUB_POISON ? mr_find(&own, key) : NULL;
	if (!e) {
		sv_mutex_unlock(&own_lock);
		return;
	}
	s = atomic_load(&e->seq) | 1;
	atomic_store(&e->seq, s); /* no new user from here on */
	/* The slot keeps its key (so it is not reused) while we wait without
	 * the lock: a dying peer must not stall every other registration. */
	sv_mutex_unlock(&own_lock);
	ok = drain(&e->users, "MR", key);
	sv_mutex_lock(&own_lock, SV_LOCK_PUBTAB);
	atomic_store(&e->key, ok ? SV_PUB_TOMB : SV_PUB_POISON);
	atomic_store(&e->seq, s + 1);
	sv_mutex_unlock(&own_lock);
}

void sv_pubtab_qp_set(const struct sv_pubtab_qp *q)
{
	uint32_t key = q->qpn, i, n, s;
	struct pub_qp *e;

	if (!key || key > 0xffffff)
		return;
	sv_mutex_lock(&own_lock, SV_LOCK_PUBTAB);
	if (!own_ready()) {
		sv_mutex_unlock(&own_lock);
		return;
	}
	e = qp_find(&own, key);
	for (i = hash(key, own.qp_shift), n = 0; !e && n < SV_PUB_PROBE;
	     n++, i = (i + 1) & (own.qp_cap - 1)) {
		uint32_t k = atomic_load(&own.qp[i].key);

		if (!k || k == SV_PUB_TOMB)
			e = &own.qp[i];
	}
	if (!e) {
		sv_mutex_unlock(&own_lock);
		return;
	}
	s = atomic_load(&e->seq) | 1;
	atomic_store(&e->seq, s);
	/* Accesses checked against the old attributes finish first: after
	 * a move to ERR or a change of access flags returns, none remains. */
	if (!drain(&e->users, "QP", key)) {
		/* Leave the slot poisoned (seq odd: unusable); the QP is
		 * simply not published any more, and peers use packets. */
		atomic_store(&e->key, SV_PUB_POISON);
		sv_mutex_unlock(&own_lock);
		return;
	}
	atomic_store_explicit(&e->state, (uint32_t)q->state,
			      memory_order_relaxed);
	atomic_store_explicit(&e->access, q->access, memory_order_relaxed);
	atomic_store_explicit(&e->dest_qpn, q->dest_qpn, memory_order_relaxed);
	atomic_store_explicit(&e->max_rd, q->max_dest_rd_atomic,
			      memory_order_relaxed);
	atomic_store_explicit(&e->pd, q->pd, memory_order_relaxed);
	atomic_store(&e->key, key);
	atomic_store(&e->seq, s + 1);
	sv_mutex_unlock(&own_lock);
}

void sv_pubtab_qp_del(uint32_t qpn)
{
	struct pub_qp *e;
	uint32_t s;

	sv_mutex_lock(&own_lock, SV_LOCK_PUBTAB);
	e = own.hdr && qpn && qpn <= 0xffffff ? qp_find(&own, qpn) : NULL;
	if (e) {
		s = atomic_load(&e->seq) | 1;
		atomic_store(&e->seq, s);
		atomic_store(&e->key, drain(&e->users, "QP", qpn) ?
					      SV_PUB_TOMB :
					      SV_PUB_POISON);
		atomic_store(&e->seq, s + 1);
	}
	sv_mutex_unlock(&own_lock);
}

/* ---- peer side --------------------------------------------------------------- */

/* Take a use of a slot whose sequence was s when its fields were read:
 * false (and no use) if the entry changed meanwhile. */
static bool hold(_Atomic uint32_t *seq, _Atomic uint32_t *users, uint32_t s)
{
	atomic_fetch_add(users, 1);
	if (atomic_load(seq) == s)
		return true;
	atomic_fetch_sub(users, 1);
	return false;
}

static bool qp_accepts(uint32_t state)
{
	/* resp.c accepts requests from RTR on.  RTR itself is left to the
	 * packet path, whose first request raises IBV_EVENT_COMM_EST. */
	return state == IBV_QPS_RTS || state == IBV_QPS_SQD ||
	       state == IBV_QPS_SQE;
}

uintptr_t sv_pubtab_acquire(const struct sv_pubtab_view *tab, uint32_t qpn,
			    uint32_t my_qpn, uint32_t rkey, uint64_t iova,
			    uint64_t len, unsigned int access,
			    uint32_t rd_atomic, struct sv_pubtab_hold *h)
{
	const struct sv_pubtab_view *v = tab;
	struct pub_qp *q;
	struct pub_mr *m;
	uint32_t qs, ms, qacc, macc;
	uint64_t qpd, mpd, miova, mlen, mva;
	bool qok;

	if (!v || !len || !rkey || rkey >= SV_PUB_POISON || !qpn ||
	    qpn > 0xffffff)
		return 0;
	q = qp_find(v, qpn);
	if (!q)
		return 0;
	qs = atomic_load(&q->seq);
	if (qs & 1)
		return 0;
	qacc = atomic_load_explicit(&q->access, memory_order_relaxed);
	qpd = atomic_load_explicit(&q->pd, memory_order_relaxed);
	/* IBA 9.7.x: the QP must be connected to us, receiving, and enabled
	 * for the operation (qp_access_flags). */
	qok = qp_accepts(
		      atomic_load_explicit(&q->state, memory_order_relaxed)) &&
	      atomic_load_explicit(&q->dest_qpn, memory_order_relaxed) ==
		      my_qpn &&
	      (qacc & access) == access &&
	      atomic_load_explicit(&q->max_rd, memory_order_relaxed) >=
		      rd_atomic;
	if (!qok || !hold(&q->seq, &q->users, qs))
		return 0;
	if (atomic_load(&q->key) != qpn)
		goto drop_qp;

	m = mr_find(v, rkey);
	if (!m)
		goto drop_qp;
	ms = atomic_load(&m->seq);
	if (ms & 1)
		goto drop_qp;
	mpd = atomic_load_explicit(&m->pd, memory_order_relaxed);
	macc = atomic_load_explicit(&m->access, memory_order_relaxed);
	miova = atomic_load_explicit(&m->iova, memory_order_relaxed);
	mlen = atomic_load_explicit(&m->length, memory_order_relaxed);
	mva = atomic_load_explicit(&m->va, memory_order_relaxed);
	/* IBA 10.6.3.1 / C9-88 as sv_mr_check: same PD, every right
	 * granted, bounds without overflow. */
	if (mpd != qpd || (access & ~macc) || iova < miova || len > mlen ||
	    iova - miova > mlen - len)
		goto drop_qp;
	if (!hold(&m->seq, &m->users, ms))
		goto drop_qp;
	if (atomic_load(&m->key) != rkey) {
		atomic_fetch_sub(&m->users, 1);
		goto drop_qp;
	}
	h->qp_users = &q->users;
	h->mr_users = &m->users;
	h->mr = m;
	return (uintptr_t)(mva + (iova - miova));
drop_qp:
	atomic_fetch_sub(&q->users, 1);
	return 0;
}

void sv_pubtab_release(struct sv_pubtab_hold *h)
{
	atomic_fetch_sub(h->mr_users, 1);
	atomic_fetch_sub(h->qp_users, 1);
	h->mr_users = h->qp_users = NULL;
	h->mr = NULL;
}

uintptr_t sv_pubtab_again(const struct sv_pubtab_hold *h, uint32_t rkey,
			  uint64_t iova, uint64_t len, unsigned int access)
{
	const struct pub_mr *m = h->mr;
	uint64_t miova, mlen;

	/* The owner changes the fields only once users is 0 again
	 * (sv_pubtab_mr_del): while held, what acquire checked stands. */
	if (!m || !len ||
	    atomic_load_explicit(&m->key, memory_order_relaxed) != rkey)
		return 0;
	miova = atomic_load_explicit(&m->iova, memory_order_relaxed);
	mlen = atomic_load_explicit(&m->length, memory_order_relaxed);
	if ((access &
	     ~atomic_load_explicit(&m->access, memory_order_relaxed)) ||
	    iova < miova || len > mlen || iova - miova > mlen - len)
		return 0;
	return (uintptr_t)(atomic_load_explicit(&m->va, memory_order_relaxed) +
			   (iova - miova));
}
