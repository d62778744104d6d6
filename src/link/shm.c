/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The shared-memory link (see shm.h). */
#include "link/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/pubtab.h"
#include "util/clock.h"
#include "util/lockorder.h"
#include "util/log.h"

#define SV_SHM_MAGIC 0x736f667476736d31ull /* "softvsm1" */
/* 2: message channels after the slots, 3: help jobs, 4: atomics through
 * channels, 5: the channels' ready word, their lines apart from their
 * slots, 6: the slot's flow carries the traffic class, 7: 64 result
 * words a channel */
#define SV_SHM_VERSION 7
#define SV_SHM_MASK (SV_SHM_SLOTS - 1)
/* A slot claimed by a producer that never filled it: skipped once the
 * producer is known dead, or after this long whoever it was. */
#define SV_SHM_STALL_CHECK_NS (10ull * 1000 * 1000)
#define SV_SHM_STALL_GIVEUP_NS (5ull * 1000 * 1000 * 1000)
/* How long a peer's registry entry, once checked, is taken as current
 * while its process lives and its ring is not closed (a process that
 * exec()s leaves neither sign): one RTR in many reads the registry. */
#define SV_SHM_RECHECK_NS (100ull * 1000 * 1000)

static size_t seg_size(void)
{
	return sizeof(struct sv_shm_hdr) +
	       (size_t)SV_SHM_SLOTS * sizeof(struct sv_shm_slot) +
	       (size_t)SV_SHM_CHANS *
		       (sizeof(struct sv_chan) + sizeof(struct sv_chan_ring));
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* The header and the packet slots of a segment mapped at h, faulted in
 * now: once the ring carries packets, not when it is mapped (a ring of
 * idle QPs, and the channels after it, cost no memory).  Without it the
 * first trip round the ring takes a page fault per slot on each side, and
 * a latency test's first thousand messages are many times slower.
 * Kernels before 5.14 fault each page in by reading it. */
static void populate_ring(struct sv_shm_hdr *h)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE),
	       len = ((size_t)((char *)&h->slot[SV_SHM_SLOTS] - (char *)h) +
		      pg - 1) &
		     ~(pg - 1),
	       off;

	if (!madvise(h, len, MADV_POPULATE_WRITE))
		return;
	for (off = 0; off < len; off += pg)
		(void)*(volatile const char *)((const char *)h + off);
}

/* ---- our ring ------------------------------------------------------------ */

const char sv_shm_why_other_user[] =
	"peer is another user: no fast path between users";
static atomic_ulong reg_examined; /* sv_shm_registry_examined() */

/* The pid an entry of our registry names, or -1 when it is none. */
static int entry_pid(const char *name)
{
	char buf[128];
	int fd, n, ver, pid = -1;

	atomic_fetch_add(&reg_examined, 1);
	fd = openat(sv_shm_registry_fd(), name,
		    O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "softverbs-shm %d %d", &ver, &pid) != 2)
		return -1;
	return pid;
}

/* Our registered rings, whose entries a process that exits without
 * closing its device (many tools do) removes in its destructor.  Entries
 * of killed processes stay until their port is registered again (the
 * rename replaces them; ports bound their number): registering never
 * reads other entries, so its cost does not grow with their number. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct list_head reg_rings = { { &reg_rings.n, &reg_rings.n } };

unsigned long sv_shm_registry_examined(void)
{
	return atomic_load(&reg_examined);
}

/* Remove entry `name` if it still names process pid (a later process may
 * own the port's name by now, and a fork shares our rings). */
static void entry_remove(const char *name, int pid)
{
	if (entry_pid(name) == pid)
		unlinkat(sv_shm_registry_fd(), name, 0);
}

__attribute__((destructor)) static void registry_at_exit(void)
{
	struct list_node *it;
	int self = (int)getpid();

	sv_mutex_lock(&reg_lock, SV_LOCK_SHM_REG);
	for (it = reg_rings.n.next; it != &reg_rings.n; it = it->next)
		entry_remove(list_entry(it, struct sv_shm_ring, reg)->path,
			     self);
	sv_mutex_unlock(&reg_lock);
}

static int registry_write(struct sv_shm_ring *r, int sockfd)
{
	int dir = sv_shm_registry_fd();
	char tmp[64], buf[128];
	int fd, n, tabfd = -1, err = 0;

	if (dir < 0)
		return EOPNOTSUPP;
	tabfd = sv_pubtab_fd();
	snprintf(r->path, sizeof(r->path), "%lu.%u", sv_shm_netns(),
		 (unsigned int)r->port);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", r->path, (int)getpid());
	n = snprintf(buf, sizeof(buf), "softverbs-shm 1 %d %u %d %d %d\n",
		     (int)getpid(), (unsigned int)geteuid(), r->fd, sockfd,
		     tabfd);
	fd = openat(dir, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	if (write(fd, buf, (size_t)n) != n) {
		err = errno ? errno : EIO;
		close(fd);
		unlinkat(dir, tmp, 0);
		goto out;
	}
	close(fd);
	/* Atomic replace: a stale entry of a dead process on the same port
	 * goes (the directory is ours alone: every entry in it is). */
	if (renameat(dir, tmp, dir, r->path)) {
		err = errno;
		unlinkat(dir, tmp, 0);
		goto out;
	}
	sv_mutex_lock(&reg_lock, SV_LOCK_SHM_REG);
	list_add_tail(&reg_rings, &r->reg);
	sv_mutex_unlock(&reg_lock);
	return 0;
fail:
	err = errno;
out:
	r->path[0] = 0;
	return err;
}

int sv_shm_ring_open(struct sv_shm_ring *r, uint16_t port, int sockfd)
{
	size_t size = seg_size();
	struct sv_shm_hdr *h;
	const char *why;
	int err;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (!sv_shm_available(&why))
		return EOPNOTSUPP;
	r->fd = memfd_create("softverbs-ring", MFD_CLOEXEC);
	if (r->fd < 0)
		return errno;
	if (ftruncate(r->fd, (off_t)size))
		goto fail;
	/* Not populated: populate_ring once packets come. */
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (h == MAP_FAILED)
		goto fail;
	h->version = SV_SHM_VERSION;
	h->nslots = SV_SHM_SLOTS;
	h->slot_size = sizeof(struct sv_shm_slot);
	h->port = port;
	h->pid = getpid();
	h->uid = geteuid();
	h->owner_addr = (uint64_t)(uintptr_t)h;
	atomic_store(&h->tail, 0);
	atomic_store(&h->sleeping, 0);
	/* The magic last: a peer checks it first. */
	atomic_thread_fence(memory_order_release);
	h->magic = SV_SHM_MAGIC;
	r->hdr = h;
	r->size = size;
	r->port = port;
	r->sockfd = sockfd;
	err = registry_write(r, sockfd);
	if (err) {
		sv_dbg("shm: cannot register port %u: %s", port, strerror(err));
		sv_shm_ring_close(r);
		return err;
	}
	return 0;
fail:
	err = errno;
	close(r->fd);
	r->fd = -1;
	return err;
}

void sv_shm_ring_close(struct sv_shm_ring *r)
{
	/* Peers that mapped it see it is no longer current. */
	if (r->hdr)
		atomic_store(&r->hdr->closed, 1);
	if (r->path[0]) {
		sv_mutex_lock(&reg_lock, SV_LOCK_SHM_REG);
		list_del(&r->reg);
		entry_remove(r->path, (int)getpid());
		sv_mutex_unlock(&reg_lock);
		r->path[0] = 0;
	}
	if (r->hdr)
		munmap(r->hdr, r->size);
	r->hdr = NULL;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

static inline struct sv_shm_slot *slot_of(struct sv_shm_hdr *h, uint64_t pos,
					  uint64_t *base)
{
	uint64_t i = pos & SV_SHM_MASK;

	*base = pos - i; /* the stored word is the sequence minus i */
	return &h->slot[i];
}

/* A process's state letter from /proc/PID/stat ('R', 'S', 'T', 'Z'...),
 * 0 if it is gone, '?' if it cannot be read. */
static char pid_state(int pid)
{
	char path[64], buf[256], *p;
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : '?';
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Dead, or a zombie (its memory is gone all the same). */
static bool pid_dead(int pid)
{
	char st;

	if (pid <= 0)
		return false;
	st = pid_state(pid);
	return !st || st == 'Z' || st == 'X';
}

bool sv_shm_peer_running(const struct sv_shm_peer *p)
{
	char st = pid_state(p->pid);

	return st && st != 'Z' && st != 'X' && st != 'T' && st != 't';
}

bool sv_shm_peer_stopped(const struct sv_shm_peer *p)
{
	char st = pid_state(p->pid);

	return st == 'T' || st == 't';
}

/* now: the caller's clock, or 0 if it has not read one: a stalled slot
 * is then left for a pass that has (the progress thread's, or every
 * SV_HINT_EVERY-th busy poll). */
const struct sv_shm_slot *sv_shm_ring_peek(struct sv_shm_ring *r, uint64_t now)
{
	struct sv_shm_hdr *h = r->hdr;
	uint64_t base, w;
	struct sv_shm_slot *s = slot_of(h, r->head, &base);

	w = atomic_load_explicit(&s->seq, memory_order_acquire);
	if (w == base + 1) {
		if (!r->populated) {
			populate_ring(h);
			r->populated = true;
		}
		r->stall_since = 0;
		return s;
	}
	/* Empty, unless a producer claimed the slot and has not filled it
	 * yet.  That is only worth the look at tail (a line every producer
	 * writes) on passes that read the clock for the stall check, not
	 * on every busy poll. */
	if (w != base || !now ||
	    atomic_load_explicit(&h->tail, memory_order_relaxed) == r->head)
		return NULL; /* empty (or a peer scribbled: stays empty) */
	/* Claimed but not filled yet: normally a producer in the middle of
	 * its copy.  A producer killed there would stall the ring forever;
	 * skip its slot once it is dead (or after a long time).  Its
	 * publish is a compare-and-swap, so a late one cannot clobber. */
	if (!r->stall_since) {
		r->stall_since = now;
		return NULL;
	}
	if (now - r->stall_since < SV_SHM_STALL_CHECK_NS)
		return NULL;
	if (!pid_dead(s->pid) && now - r->stall_since < SV_SHM_STALL_GIVEUP_NS)
		return NULL;
	if (atomic_compare_exchange_strong(&s->seq, &w, base + SV_SHM_SLOTS)) {
		sv_warn("shm: port %u: skipped a slot its producer (pid %d) never filled",
			r->port, (int)s->pid);
		/* Busy pollers read head without the lock (links.c). */
		__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELAXED);
	}
	r->stall_since = 0;
	return NULL;
}

void sv_shm_ring_next(struct sv_shm_ring *r)
{
	uint64_t base;
	struct sv_shm_slot *s = slot_of(r->hdr, r->head, &base);

	s->pid = 0;
	atomic_store_explicit(&s->seq, base + SV_SHM_SLOTS,
			      memory_order_release);
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELAXED);
}

/* Dekker with the producers: we store "sleeping" then look at the head
 * slot, they publish a slot then look at "sleeping" (all sequentially
 * consistent): one of the two sees the other. */
bool sv_shm_ring_sleep(struct sv_shm_ring *r)
{
	struct sv_shm_hdr *h = r->hdr;
	uint64_t base, w;
	struct sv_shm_slot *s = slot_of(h, r->head, &base);

	atomic_store(&h->sleeping, 1);
	w = atomic_load(&s->seq);
	if (w == base + 1) {
		atomic_store(&h->sleeping, 0);
		return false;
	}
	return true;
}

bool sv_shm_ring_pending(const struct sv_shm_ring *r)
{
	uint64_t base;
	struct sv_shm_slot *s = slot_of(r->hdr, r->head, &base);

	return atomic_load_explicit(&s->seq, memory_order_acquire) == base + 1;
}

bool sv_shm_peer_room(const struct sv_shm_peer *p, unsigned int n)
{
	struct sv_shm_hdr *h = p->hdr;
	struct sv_shm_slot *s;
	uint64_t base, pos;

	if (!h || !n)
		return true;
	if (n > SV_SHM_SLOTS)
		n = SV_SHM_SLOTS;
	pos = atomic_load_explicit(&h->tail, memory_order_relaxed);
	s = slot_of(h, pos + n - 1, &base);
	/* As claim() looks: free for this round (or claimed since). */
	return (int64_t)(atomic_load_explicit(&s->seq, memory_order_acquire) -
			 base) >= 0;
}

void sv_shm_ring_wake(struct sv_shm_ring *r)
{
	if (atomic_load_explicit(&r->hdr->sleeping, memory_order_relaxed))
		atomic_store_explicit(&r->hdr->sleeping, 0,
				      memory_order_relaxed);
}

/* ---- producers ---------------------------------------------------------- */

/* Claim n consecutive slots: 0 when the ring has no room for them. */
static bool claim(struct sv_shm_hdr *h, unsigned int n, uint64_t *out)
{
	uint64_t pos = atomic_load_explicit(&h->tail, memory_order_relaxed);
	int tries;

	for (tries = 0; tries < 256; tries++) {
		uint64_t base, w;
		struct sv_shm_slot *s = slot_of(h, pos + n - 1, &base);
		int64_t diff;

		/* The consumer frees slots in order: when the last one is
		 * free for this round, so are those before it. */
		w = atomic_load_explicit(&s->seq, memory_order_acquire);
		diff = (int64_t)(w - base);
		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &h->tail, &pos, pos + n,
				    memory_order_relaxed,
				    memory_order_relaxed)) {
				*out = pos;
				return true;
			}
		} else if (diff < 0 || diff > SV_SHM_SLOTS) {
			return false; /* not consumed yet (or a broken owner) */
		} else {
			pos = atomic_load_explicit(&h->tail,
						   memory_order_relaxed);
		}
	}
	return false;
}

static void fill(struct sv_shm_hdr *h, uint64_t pos, const struct sv_shm_pkt *p,
		 int32_t pid)
{
	uint64_t base;
	struct sv_shm_slot *s = slot_of(h, pos, &base);

	s->pid = pid;
	s->len = p->len;
	s->flow = *p->flow;
	memcpy(s->data, p->buf, p->len);
}

/* Publish with a compare-and-swap: a slot the consumer skipped as
 * stalled (shm.h) stays skipped, the packet is lost. */
static void publish(struct sv_shm_hdr *h, uint64_t pos)
{
	uint64_t base, w;
	struct sv_shm_slot *s = slot_of(h, pos, &base);

	w = base;
	atomic_compare_exchange_strong(&s->seq, &w, base + 1);
}

bool sv_shm_peer_backlog(const struct sv_shm_peer *p)
{
	struct sv_shm_hdr *h = p->hdr;
	uint64_t tail = atomic_load_explicit(&h->tail, memory_order_acquire);
	uint64_t base, w;
	struct sv_shm_slot *s;

	if (!tail)
		return false;
	s = slot_of(h, tail - 1, &base);
	w = atomic_load_explicit(&s->seq, memory_order_acquire);
	/* base: claimed, being filled; base + 1: published, waiting;
	 * base + SV_SHM_SLOTS: taken (or a later round: taken too). */
	return w - base <= 1;
}

unsigned int sv_shm_push(struct sv_shm_peer *p, const struct sv_shm_pkt *pkt,
			 unsigned int n, bool *wake)
{
	struct sv_shm_hdr *h = p->hdr;
	int32_t pid = p->self;
	unsigned int i, done = 0;
	uint64_t pos;

	*wake = false;
	for (i = 0; i < n; i++)
		if (pkt[i].len > SV_MAX_PKT)
			return 0;
	if (!p->populated) {
		populate_ring(h);
		p->populated = true;
	}
	while (done < n) {
		unsigned int k = n - done;

		/* All at once if they fit, else one by one until full. */
		if (!claim(h, k, &pos)) {
			if (k == 1 || !claim(h, 1, &pos))
				break;
			k = 1;
		}
		for (i = 0; i < k; i++)
			fill(h, pos + i, &pkt[done + i], pid);
		/* Last to first: the consumer waits at the first. */
		for (i = k; i-- > 0;)
			publish(h, pos + i);
		done += k;
	}
	/* Dekker with sv_shm_ring_sleep: our publish (a sequentially
	 * consistent RMW) then this load. */
	if (done && atomic_load(&h->sleeping) &&
	    atomic_exchange(&h->sleeping, 0))
		*wake = true;
	return done;
}

/* ---- attaching peers ------------------------------------------------------ */

/* The socket inode bound to UDP port `port` in our namespace (our
 * sockets are dual-stack AF_INET6 ones: /proc/net/udp6) and the uid that
 * owns it; 0 if none. */
static unsigned long udp6_inode(uint16_t port, unsigned int *uid)
{
	FILE *f = fopen("/proc/self/net/udp6", "re");
	char line[512];
	unsigned long ino = 0;

	if (!f)
		return 0;
	while (!ino && fgets(line, sizeof(line), f)) {
		unsigned int lport, u;
		unsigned long i;

		if (sscanf(line,
			   " %*d: %*[0-9A-Fa-f]:%x %*s %*s %*s %*s %*s %u %*d %lu",
			   &lport, &u, &i) == 3 &&
		    lport == port) {
			ino = i;
			*uid = u;
		}
	}
	fclose(f);
	return ino;
}

/* Is pid a process of our effective user?  /proc/PID belongs to its
 * effective uid (root for a process that is not dumpable: refused). */
static bool pid_ours(int pid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	return !stat(path, &st) && st.st_uid == geteuid();
}

static int peer_open(uint16_t port, struct sv_shm_peer *p, const char **why)
{
	char path[128], buf[128], name[48];
	int fd, n, pid, ringfd, sockfd, tabfd, ver;
	unsigned int uid, port_uid = 0;
	unsigned long ino;
	struct stat st;
	struct sv_shm_hdr *h;
	size_t size = seg_size();
	uint64_t magic = 0;
	struct iovec l = { &magic, sizeof(magic) }, r;
	uid_t me = geteuid();

	/* Who owns the port decides first: another user's process is never
	 * attached to (nor is its table read, nor our work offered to it),
	 * whatever permissions we have (root: ptrace over anyone).  Between
	 * users, packets go through UDP (docs/security.md). */
	ino = udp6_inode(port, &port_uid);
	if (ino && port_uid != me) {
		*why = sv_shm_why_other_user;
		return EPERM;
	}
	snprintf(name, sizeof(name), "%lu.%u", sv_shm_netns(),
		 (unsigned int)port);
	fd = openat(sv_shm_registry_fd(), name,
		    O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = "peer not registered (UDP only)";
		return ENOENT;
	}
	n = fstat(fd, &st) ? -1 : (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || !S_ISREG(st.st_mode)) {
		*why = "peer registry entry unreadable";
		return EINVAL;
	}
	buf[n] = 0;
	if (sscanf(buf, "softverbs-shm %d %d %u %d %d %d", &ver, &pid, &uid,
		   &ringfd, &sockfd, &tabfd) != 6 ||
	    ver != 1 || pid <= 0 || ringfd < 0 || sockfd < 0 ||
	    st.st_uid != uid || uid != me) {
		*why = "peer registry entry invalid";
		return EINVAL;
	}
	if (pid_dead(pid)) {
		/* A killed process's entry.  Left in place: removing it here
		 * could race with a new owner of the port renaming its own
		 * entry in; that owner's rename replaces it. */
		*why = "peer registry entry stale";
		return ENOENT;
	}
	if (!pid_ours(pid)) {
		*why = sv_shm_why_other_user;
		return EPERM;
	}
	/* Opening another process's fd needs ptrace-read access to it (its
	 * user, or privilege): the same rule cross-memory attach obeys. */
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, ringfd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		*why = err == ENOENT ? "peer registry entry stale" :
		       err == EACCES || err == EPERM ?
				       "no ptrace access to peer process" :
				       "cannot open peer ring";
		return err;
	}
	/* The segment must be our user's: a memfd belongs to its creator. */
	if (fstat(fd, &st) || st.st_uid != me) {
		close(fd);
		*why = sv_shm_why_other_user;
		return EPERM;
	}
	if ((size_t)st.st_size != size) {
		close(fd);
		*why = "peer ring has the wrong size";
		return EINVAL;
	}
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (h == MAP_FAILED) {
		*why = "cannot map peer ring";
		return errno;
	}
	if (h->magic != SV_SHM_MAGIC || h->version != SV_SHM_VERSION ||
	    h->nslots != SV_SHM_SLOTS ||
	    h->slot_size != sizeof(struct sv_shm_slot) || h->port != port ||
	    h->pid != pid || h->uid != me) {
		*why = "peer ring invalid";
		goto fail;
	}
	/* The entry must name the process that owns the port: a stale or
	 * planted entry would otherwise receive packets meant for it. */
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, sockfd);
	n = (int)readlink(path, buf, sizeof(buf) - 1);
	if (n > 0)
		buf[n] = 0;
	snprintf(path, sizeof(path), "socket:[%lu]", ino);
	if (!ino || n <= 0 || strcmp(buf, path)) {
		*why = "peer does not own its UDP port";
		goto fail;
	}
	/* Cross-memory attach (layer 2) needs ptrace-attach permission,
	 * which the policy (Yama, capabilities) may refuse. */
	r.iov_base = (void *)(uintptr_t)h->owner_addr;
	r.iov_len = sizeof(magic);
	if (process_vm_readv(pid, &l, 1, &r, 1, 0) != sizeof(magic) ||
	    magic != SV_SHM_MAGIC) {
		*why = "process_vm_readv refused by ptrace policy";
		goto fail;
	}
	p->pid = pid;
	p->self = (int32_t)getpid();
	p->uid = uid;
	p->port = port;
	p->hdr = h;
	p->size = size;
	p->pubtab = NULL;
	if (tabfd >= 0)
		p->pubtab = sv_pubtab_map(pid, tabfd);
	return 0;
fail:
	munmap(h, size);
	return EINVAL;
}

int sv_shm_peer_attach(uint16_t port, struct sv_shm_peer **out,
		       const char **why)
{
	struct sv_shm_peer *p;
	int err;

	if (!sv_shm_available(why))
		return EOPNOTSUPP;
	p = calloc(1, sizeof(*p));
	if (!p) {
		*why = "out of memory";
		return ENOMEM;
	}
	err = peer_open(port, p, why);
	if (err) {
		free(p);
		return err;
	}
	p->refs = 1;
	/* Readable once the process has exited: one syscall tells, where
	 * pid_dead reads /proc (Linux 5.3; without it every check is the
	 * registry's). */
	p->pidfd = -1;
#ifdef SYS_pidfd_open
	p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (p->pidfd >= 0)
		(void)fcntl(p->pidfd, F_SETFD, FD_CLOEXEC);
	else
		p->pidfd = -1;
#endif
	p->checked_ns = sv_now_ns();
	*out = p;
	return 0;
}

void sv_shm_peer_detach(struct sv_shm_peer *p)
{
	if (p->pubtab)
		sv_pubtab_unmap((struct sv_pubtab_view *)p->pubtab);
	munmap(p->hdr, p->size);
	if (p->pidfd >= 0)
		close(p->pidfd);
	free(p);
}

bool sv_shm_peer_current(struct sv_shm_peer *p)
{
	uint64_t now = sv_now_ns();
	char name[48];

	/* (A peer may set closed in its own header: we only look again.) */
	if (atomic_load(&p->hdr->closed))
		return false;
	if (p->pidfd >= 0) {
		struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };

		if (poll(&pf, 1, 0) != 0)
			return false; /* exited (or cannot tell) */
		if (now - p->checked_ns < SV_SHM_RECHECK_NS)
			return true;
	}
	snprintf(name, sizeof(name), "%lu.%u", sv_shm_netns(),
		 (unsigned int)p->port);
	if (entry_pid(name) != p->pid || pid_dead(p->pid))
		return false;
	p->checked_ns = now;
	return true;
}

/* ---- the link (link/link.h) ---------------------------------------------- */

static int shm_link_open(void *ep, uint16_t *port, int *sockfd)
{
	return sv_shm_ring_open(ep, *port, *sockfd);
}

static void shm_close(void *ep)
{
	struct sv_shm_ring *r = ep;

	if (r->hdr)
		sv_shm_ring_close(r);
}

/* Packets pkt[0..n) all go to the one peer.  Each slot carries the flow a
 * datagram would have had: from our address and port, to the peer's. */
static unsigned int shm_transmit(void *ep, void *peer,
				 const struct sv_link_pkt *pkt, unsigned int n,
				 unsigned int *bells)
{
	struct sv_shm_ring *r = ep;
	struct sv_shm_pkt sp[SV_LINK_BATCH];
	struct sv_flow f[SV_LINK_BATCH];
	unsigned int i, lost = 0;
	bool wake;

	while (n) {
		unsigned int k = n < SV_LINK_BATCH ? n : SV_LINK_BATCH, done;

		for (i = 0; i < k; i++) {
			memset(&f[i], 0, sizeof(f[i]));
			f[i].src = *pkt[i].src;
			f[i].tclass = pkt[i].tclass;
			sv_sockaddr_to_ipaddr(
				(const struct sockaddr *)pkt[i].dst, &f[i].dst,
				&f[i].dport);
			f[i].sport = r->port;
			sp[i].flow = &f[i];
			sp[i].buf = pkt[i].buf;
			sp[i].len = pkt[i].len;
		}
		done = sv_shm_push(peer, sp, k, &wake);
		/* The peer's thread sleeps in epoll on that port: a
		 * zero-length datagram wakes it (and is dropped there). */
		if (wake) {
			++*bells;
			if (sendto(r->sockfd, NULL, 0, MSG_DONTWAIT,
				   (const struct sockaddr *)pkt[0].dst,
				   sizeof(*pkt[0].dst)) < 0)
				sv_dbg("shm: doorbell: %s", strerror(errno));
		}
		lost += k - done;
		if (done < k)
			return lost + (n - k); /* full: the rest too */
		pkt += k;
		n -= k;
	}
	return lost;
}

static unsigned int shm_receive(void *ep, sv_link_deliver_fn *fn, void *arg,
				unsigned int budget, uint64_t now, bool app)
{
	struct sv_shm_ring *r = ep;
	const struct sv_shm_slot *sl;
	unsigned int got = 0;

	if (!r->hdr)
		return 0;
	while (got < budget && (sl = sv_shm_ring_peek(r, now))) {
		/* The slot stays ours until sv_shm_ring_next: the packet is
		 * processed in place.  Its length is read once. */
		uint32_t len = *(volatile const uint32_t *)&sl->len;
		struct sv_flow flow = sl->flow;

		flow.dport = r->port;
		flow.unused = 0;
		fn(arg, (uint8_t *)sl->data, len > SV_MAX_PKT ? 0 : len,
		   len > SV_MAX_PKT, &flow);
		sv_shm_ring_next(r);
		got++;
	}
	return got;
}

static bool shm_sleep(void *ep)
{
	struct sv_shm_ring *r = ep;

	return !r->hdr || sv_shm_ring_sleep(r);
}

static bool shm_pending(void *ep)
{
	struct sv_shm_ring *r = ep;

	return r->hdr && sv_shm_ring_pending(r);
}

static void shm_wake(void *ep)
{
	struct sv_shm_ring *r = ep;

	if (r->hdr)
		sv_shm_ring_wake(r);
}

static int shm_attach(uint16_t port, void **peer, const char **why)
{
	return sv_shm_peer_attach(port, (struct sv_shm_peer **)peer, why);
}

static void shm_detach(void *peer)
{
	sv_shm_peer_detach(peer);
}

const struct sv_link_ops sv_link_shm = {
	.name = "shm",
	.cheap = true,
	.open = shm_link_open,
	.close = shm_close,
	.transmit = shm_transmit,
	.receive = shm_receive,
	.sleep = shm_sleep,
	.pending = shm_pending,
	.wake = shm_wake,
	.attach = shm_attach,
	.detach = shm_detach,
};
