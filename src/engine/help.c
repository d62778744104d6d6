/*
 * Two cores for one large WRITE (docs/fastpath.md, "Two cores for one
 * WRITE"; the shared layout is link/help.h).
 *
 * A one-copy WRITE costs its sender one process_vm_writev, about half of
 * which is the kernel pinning the target's pages; the target's core does
 * nothing meanwhile.  So a WRITE of SV_HELP_MIN or more is posted as a job
 * in the target socket's segment, and the target's progress thread, when
 * it is awake and its application is not busy, pulls chunks from the back
 * with process_vm_readv while the sender pushes from the front.
 *
 * The rules that keep the verbs semantics:
 * - The sender completes the WQE only after every chunk the helper claimed
 *   is done, and copies the last SV_HELP_TAIL bytes itself after that, so
 *   the last byte still lands last (programs poll it).
 * - The helper writes only while it holds its own table's entries for the
 *   QP and the region, checked as the sender checked them (so
 *   ibv_dereg_mr waits for it as for a peer), and reads only from the
 *   process its own QP is connected to.
 * - A helper that does not come leaves every chunk to the sender: the
 *   WRITE still completes while the target does nothing.  The sender only
 *   ever waits for chunks the helper has claimed; if the target dies with
 *   some, the copy fails and the packet path reports it.
 */
#include "engine/internal.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/pubtab.h"
#include "link/shm.h"
#include "util/log.h"
#include "util/spin.h"

/* The sender spins this long for the helper's last chunks (they take
 * tens of microseconds), then yields, then sleeps between checks that the
 * target still lives. */
#define SV_HELP_SPIN_NS 20000ull
#define SV_HELP_YIELD_NS 1000000ull
#define SV_HELP_NAP_NS 50000L
/* A target stopped (SIGSTOP, a debugger) with a claimed chunk for this
 * long: the sender gives up and the packet path takes the WRITE. */
#define SV_HELP_WAIT_NS 10000000000ull
/* After a job the helper looks for the next one this long before going
 * back to its loop: the next WRITE of a stream follows within
 * microseconds, and a sleeping helper costs the sender a doorbell. */
#define SV_HELP_LINGER_NS 200000ull
#define SV_HELP_RINGS 8u

/* iov[0..n) from byte off on, len bytes, into out (at most SV_MAX_SGE
 * entries); the number of entries. */
static uint32_t slice(const struct iovec *iov, uint32_t n, uint64_t off,
		      uint64_t len, struct iovec *out)
{
	uint32_t i, m = 0;

	for (i = 0; i < n && len; i++) {
		uint64_t l = iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		out[m].iov_base = (char *)iov[i].iov_base + off;
		out[m].iov_len = l - off < len ? l - off : len;
		len -= out[m].iov_len;
		off = 0;
		m++;
	}
	return m;
}

/* ---- the sender ---------------------------------------------------------- */

/* Bytes [off, off+len) of the message to rva+off in the target. */
static bool push(const void *tab, const struct iovec *iov, uint32_t n,
		 uintptr_t rva, uint64_t off, uint64_t len)
{
	struct iovec part[SV_MAX_SGE];
	uint32_t m = slice(iov, n, off, len, part);
	bool via_mem;

	return sv_direct_copy(tab, true, part, m, rva + off, len, &via_mem);
}

/* Is the target still there?  Its mem file is bound to its memory: once
 * it has exited, reading fails (a reused pid cannot answer for it). */
static bool target_alive(const void *tab, uintptr_t rva)
{
	int fd = sv_pubtab_memfd(tab);
	char c;

	if (fd >= 0)
		return pread(fd, &c, 1, (off_t)rva) == 1;
	return !kill(sv_pubtab_pid(tab), 0) || errno != ESRCH;
}

/* Wait until the helper has done `need` chunks; false if the target died
 * or stayed stopped for SV_HELP_WAIT_NS. */
static bool wait_helper(struct sv_help_job *job, uint32_t need,
			const void *tab, uintptr_t rva)
{
	uint64_t start = 0, now;
	unsigned int spins = 0;

	while (atomic_load_explicit(&job->done, memory_order_acquire) < need) {
		if (++spins & 63) {
			sv_spin_relax();
			continue;
		}
		now = sv_now_ns();
		if (!start)
			start = now;
		if (now - start < SV_HELP_SPIN_NS)
			continue;
		if (now - start < SV_HELP_YIELD_NS) {
			sched_yield(); /* a helper on our core gets to finish */
			continue;
		}
		if (now - start > SV_HELP_WAIT_NS || !target_alive(tab, rva))
			return false;
		nanosleep(&(struct timespec){ .tv_nsec = SV_HELP_NAP_NS },
			  NULL);
	}
	return true;
}

/* The target's thread sleeps: ring its doorbell (as chanpath.c does). */
static void wake_target(struct sv_qp_engine *qe)
{
	_Atomic uint32_t *sl = &qe->shm->hdr->sleeping;

	if (atomic_load(sl) && atomic_exchange(sl, 0)) {
		SV_STAT(qe->eng, shm_wakeups);
		if (sendto(qe->sock->udp.fd, NULL, 0, MSG_DONTWAIT,
			   (const struct sockaddr *)&qe->peer,
			   sizeof(qe->peer)) < 0)
			sv_dbg("help: doorbell: %s", strerror(errno));
	}
}

static struct sv_help_job *job_take(struct sv_shm_hdr *hdr)
{
	uint32_t j;

	for (j = 0; j < SV_HELP_JOBS; j++) {
		uint32_t free = 0;

		if (atomic_compare_exchange_strong(&hdr->job[j].busy, &free,
						   1))
			return &hdr->job[j];
	}
	return NULL;
}

enum sv_help_r sv_help_write(struct sv_qp_engine *qe, const void *tab,
			     const struct iovec *iov, uint32_t n,
			     uintptr_t rva, const struct sv_send_wqe *wqe)
{
	uint64_t len = wqe->length, body = len - SV_HELP_TAIL, chunk, w;
	uint32_t i, nch, gen, front = 0, back, take, redo;
	struct sv_help_job *job;
	bool ok = true, first = true;

	if (!sv_help_on || len < SV_HELP_MIN || n > SV_HELP_IOV ||
	    sv_pubtab_is_self(tab) ||
	    !atomic_load_explicit(&qe->shm->hdr->helping,
				  memory_order_relaxed))
		return SV_HELP_NOT;
	job = job_take(qe->shm->hdr);
	if (!job)
		return SV_HELP_NOT;

	chunk = SV_HELP_CHUNK;
	nch = (uint32_t)((body + chunk - 1) / chunk);
	if ((body + chunk - 1) / chunk > SV_HELP_MAX_CHUNKS) {
		chunk = (body / SV_HELP_MAX_CHUNKS + 4096) & ~4095ull;
		nch = (uint32_t)((body + chunk - 1) / chunk);
	}
	job->qpn = qe->dest_qpn;
	job->src_qpn = qe->qpn;
	job->rkey = wqe->wr.rdma.rkey;
	job->iova = wqe->wr.rdma.remote_addr;
	job->len = body;
	job->chunk = chunk;
	job->niov = n;
	for (i = 0; i < n; i++) {
		job->iov[i].base = (uint64_t)(uintptr_t)iov[i].iov_base;
		job->iov[i].len = iov[i].iov_len;
	}
	atomic_store_explicit(&job->done, 0, memory_order_relaxed);
	atomic_store_explicit(&job->redo, 0, memory_order_relaxed);
	gen = sv_help_gen(atomic_load_explicit(&job->claim,
					       memory_order_relaxed)) + 1;
	if (!gen)
		gen = 1;
	atomic_store_explicit(&job->claim, sv_help_word(gen, 0, nch),
			      memory_order_release);
	wake_target(qe);
	SV_STAT(qe->eng, help_posted);

	/* Take half of what is left from the front; once we find the
	 * helper has not come while we copied our first half, the rest. */
	for (;;) {
		w = atomic_load_explicit(&job->claim, memory_order_acquire);
		back = sv_help_back(w);
		if (sv_help_gen(w) != gen || sv_help_front(w) != front ||
		    back > nch || back <= front)
			break; /* all claimed (or a broken target) */
		take = first || back < nch ? (back - front + 1) / 2 :
					     back - front;
		if (!atomic_compare_exchange_weak(
			    &job->claim, &w,
			    sv_help_word(gen, front + take, back)))
			continue;
		if (ok)
			ok = push(tab, iov, n, rva, front * chunk,
				  ((front + take) * chunk < body ?
					   (front + take) * chunk :
					   body) -
					  front * chunk);
		front += take;
		first = false;
	}
	/* Every chunk is claimed: the helper took [back, nch).  Close the
	 * job to late claims whatever the word says, then wait for them. */
	if (back < front || back > nch)
		back = front;
	atomic_store_explicit(&job->claim, sv_help_word(gen, 0, 0),
			      memory_order_relaxed);
	if (back < nch) {
		SV_STAT(qe->eng, help_taken);
		if (!wait_helper(job, nch - back, tab, rva))
			ok = false;
		redo = atomic_load_explicit(&job->redo, memory_order_acquire);
		if (ok && redo) {
			uint32_t c0 = (redo >> 16) - 1, cn = redo & 0xffff;

			if (c0 >= back && cn && c0 + cn <= nch)
				ok = push(tab, iov, n, rva, c0 * chunk,
					  ((c0 + cn) * chunk < body ?
						   (c0 + cn) * chunk :
						   body) -
						  c0 * chunk);
			else
				ok = false;
		}
	}
	/* The last bytes last: the whole message is in place before them. */
	if (ok)
		ok = push(tab, iov, n, rva, body, len - body);
	atomic_store_explicit(&job->busy, 0, memory_order_release);
	return ok ? SV_HELP_DONE : SV_HELP_FAILED;
}

/* ---- the helper (the target's progress thread) --------------------------- */

/* The job as read once (the sender may rewrite the slot: only this copy
 * is used, and only once a claim on its generation has succeeded). */
struct job_view {
	uint32_t qpn, src_qpn, rkey, niov, nch;
	uint64_t iova, len, chunk;
	struct iovec iov[SV_HELP_IOV];
};

static bool job_read(const struct sv_help_job *job, struct job_view *v)
{
	const volatile struct sv_help_job *j = job;
	uint64_t total = 0;
	uint32_t i;

	v->qpn = j->qpn;
	v->src_qpn = j->src_qpn;
	v->rkey = j->rkey;
	v->niov = j->niov;
	v->iova = j->iova;
	v->len = j->len;
	v->chunk = j->chunk;
	if (!v->niov || v->niov > SV_HELP_IOV || v->chunk < 4096 ||
	    !v->len || v->len > (uint64_t)SV_HELP_MAX_CHUNKS * v->chunk)
		return false;
	for (i = 0; i < v->niov; i++) {
		v->iov[i].iov_base = (void *)(uintptr_t)j->iov[i].base;
		v->iov[i].iov_len = j->iov[i].len;
		if (v->iov[i].iov_len > UINT64_MAX - total)
			return false;
		total += v->iov[i].iov_len;
	}
	v->nch = (uint32_t)((v->len + v->chunk - 1) / v->chunk);
	return total >= v->len;
}

/* The process our QP qpn is connected to, if it is connected to src_qpn
 * through the shm link; 0 otherwise. */
static pid_t job_peer(struct sv_engine *eng, struct sv_sock *s,
		      const struct job_view *v)
{
	struct sv_qp_engine *qe;
	pid_t pid = 0;

	pthread_mutex_lock(&eng->lock);
	qe = s->slot[v->qpn & (SV_SLOTS_PER_SOCK - 1)];
	if (qe && qe->qpn == v->qpn && qe->qp->type == IBV_QPT_RC &&
	    qe->dest_qpn == v->src_qpn && qe->shm && qe->shm->pid != qe->shm->self)
		pid = qe->shm->pid;
	pthread_mutex_unlock(&eng->lock);
	return pid;
}

/* Chunks [c, c+k) of the job, pulled from the sender into va. */
static bool pull(pid_t pid, const struct job_view *v, uintptr_t va,
		 uint32_t c, uint32_t k)
{
	uint64_t off = (uint64_t)c * v->chunk, end = (uint64_t)(c + k) * v->chunk;
	struct iovec part[SV_HELP_IOV], local;
	uint32_t m;

	if (end > v->len)
		end = v->len;
	while (off < end) {
		ssize_t got;

		m = slice(v->iov, v->niov, off, end - off, part);
		local.iov_base = (void *)(va + off);
		local.iov_len = end - off;
		SV_DMA_BEGIN();
		got = process_vm_readv(pid, &local, 1, part, m, 0);
		SV_DMA_END();
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		off += (uint64_t)got;
	}
	return true;
}

/* Take chunks of the job posted as w while there are any; the chunks
 * copied.  *decline: leave this job alone from now on (refused, or a copy
 * failed). */
static uint32_t job_help(struct sv_engine *eng, struct sv_sock *s,
			 struct sv_help_job *job, uint64_t w, bool *decline)
{
	uint32_t gen = sv_help_gen(w), front, back, k, copied = 0;
	struct sv_pubtab_hold h;
	struct job_view v;
	const void *own;
	uintptr_t va;
	pid_t pid;

	*decline = true;
	if (!job_read(job, &v) || !(pid = job_peer(eng, s, &v)) ||
	    !(own = sv_pubtab_own()))
		return 0;
	/* Our responder's checks, on our own table: the QP is connected to
	 * the sender and takes WRITEs, the region is of its PD, grants
	 * REMOTE_WRITE and holds the range.  Held until we are done. */
	va = sv_pubtab_acquire(own, v.qpn, v.src_qpn, v.rkey, v.iova, v.len,
			       IBV_ACCESS_REMOTE_WRITE, 0, &h);
	if (!va)
		return 0;
	*decline = false;
	for (;;) {
		front = sv_help_front(w);
		back = sv_help_back(w);
		if (sv_help_gen(w) != gen || back <= front || back > v.nch)
			break;
		k = (back - front + 1) / 2;
		if (!atomic_compare_exchange_weak(
			    &job->claim, &w, sv_help_word(gen, front, back - k)))
			continue; /* w reloaded */
		if (!pull(pid, &v, va, back - k, k)) {
			/* The sender copies them; we stop here. */
			atomic_store_explicit(&job->redo,
					      (back - k + 1) << 16 | k,
					      memory_order_relaxed);
			atomic_fetch_add_explicit(&job->done, k,
						  memory_order_release);
			*decline = true;
			break;
		}
		copied += k;
		atomic_fetch_add_explicit(&job->done, k, memory_order_release);
		w = atomic_load_explicit(&job->claim, memory_order_acquire);
	}
	sv_pubtab_release(&h);
	return copied;
}

/* Look at every job of our segments once; true if one was taken.
 * declined[i][j]: the generation of job j of socket i we refused. */
static bool scan(struct sv_engine *eng, struct sv_sock *const *s,
		 unsigned int n, uint32_t (*declined)[SV_HELP_JOBS],
		 uint64_t *chunks)
{
	bool took = false;
	unsigned int i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < SV_HELP_JOBS; j++) {
			struct sv_help_job *job = &s[i]->ring.hdr->job[j];
			uint64_t w = atomic_load_explicit(
				&job->claim, memory_order_acquire);
			bool decline;

			if (sv_help_front(w) >= sv_help_back(w) ||
			    declined[i][j] == sv_help_gen(w))
				continue;
			*chunks += job_help(eng, s[i], job, w, &decline);
			if (decline)
				declined[i][j] = sv_help_gen(w);
			else
				took = true;
		}
	return took;
}

void sv_help_serve(struct sv_engine *eng)
{
	uint32_t declined[SV_HELP_RINGS][SV_HELP_JOBS] = { { 0 } };
	struct sv_sock *s[SV_HELP_RINGS];
	uint64_t chunks = 0, until = 0, now, hint;
	struct list_node *it;
	unsigned int n = 0, spins = 0;

	if (!sv_help_on)
		return;
	/* Our application polls: its core is not idle, and the copy would
	 * be taken from it (as direct.c's leave_to_poller). */
	hint = atomic_load_explicit(&eng->last_hint, memory_order_relaxed);
	if (hint && sv_now_ns() - hint < SV_HINT_HOLD_NS)
		return;
	/* Sockets are freed only after this thread is joined. */
	pthread_mutex_lock(&eng->lock);
	for (it = eng->socks.n.next; it != &eng->socks.n && n < SV_HELP_RINGS;
	     it = it->next) {
		struct sv_sock *k = list_entry(it, struct sv_sock, node);

		if (k->ring.hdr)
			s[n++] = k;
	}
	pthread_mutex_unlock(&eng->lock);

	while (!atomic_load_explicit(&eng->stop, memory_order_relaxed)) {
		if (scan(eng, s, n, declined, &chunks)) {
			until = 0;
			continue;
		}
		/* Nothing now: after a job, linger a little for the next
		 * WRITE of a stream, unless other work waits for the loop. */
		if (!chunks)
			break;
		if (++spins & 63) {
			sv_spin_relax();
			continue;
		}
		now = sv_now_ns();
		if (atomic_load(&eng->kick_any))
			break;
		if (!until)
			until = now + SV_HELP_LINGER_NS;
		if (now > until)
			break;
	}
	if (chunks) {
		pthread_mutex_lock(&eng->lock);
		eng->stats.help_chunks += chunks;
		pthread_mutex_unlock(&eng->lock);
	}
}
