/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
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
 * - Revocation: a target stopped (SIGSTOP, a debugger) while its helper
 *   holds claimed chunks must not hold the WRITE up, nor write those
 *   chunks after the sender has completed it (the application may have
 *   changed the source by then).  The helper makes each copy inside a
 *   restartable sequence (rseq) that checks the job's `revoked` word and
 *   ends with the system call itself: a thread stopped or preempted
 *   before the call resumes at the abort label and checks again, and a
 *   thread stopped after it has already copied (the kernel stops a
 *   thread only on its way back to user space).  So the sender, finding
 *   the helper's thread stopped, sets `revoked`, sees it still stopped,
 *   and copies the claimed chunks itself.  Without rseq the helper
 *   says so (no SV_HELP_REVOCABLE) and the sender waits for it.
 */
#include "paths/paths.h"
#include "engine/diag/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* The helper copies inside a restartable sequence where the kernel and
 * glibc provide one (paths/help.c, "revocation"). */
#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define SV_HELP_RSEQ 1
#endif
#endif

#include "core/pubtab.h"
#include "engine/transport/dma.h"
#include "engine/transport/eng.h"
#include "engine/transport/limits.h"
#include "engine/transport/qpe.h"
#include "engine/transport/stats.h"
#include "link/shm.h"
#include "util/env.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "util/spin.h"

/* The sender spins this long for the helper's last chunks (they take
 * tens of microseconds), then yields, then sleeps between checks that the
 * target still lives. */
#define SV_HELP_SPIN_NS 20000ull
#define SV_HELP_YIELD_NS 1000000ull
#define SV_HELP_NAP_NS 50000L
/* How long the sender waits for the chunks a helper claimed before it
 * takes them back and copies them itself: a few times what the copy
 * takes at a conservative rate (1 GB/s, 4x), and at least a scheduler
 * time slice or so.  A helper that claims and never finishes -- stuck,
 * or a peer of ours written to stall us -- then costs a WRITE a few
 * milliseconds, not the 10 s it once could (issue #17). */
#define SV_HELP_WAIT_FLOOR_NS 5000000ull
#define SV_HELP_WAIT_NS_PER_BYTE 4ull
/* After a WRITE whose helper was too slow, this QP offers the next
 * SV_HELP_SKIP << n ones to nobody (n: such WRITEs so far, capped). */
#define SV_HELP_SLOW_MAX_SHIFT 8u
/* After a job the helper looks for the next one this long before going
 * back to its loop: the next WRITE of a stream follows within
 * microseconds, and a sleeping helper costs the sender a doorbell. */
#define SV_HELP_LINGER_NS 200000ull
#define SV_HELP_RINGS 8u
/* After this many WRITEs in a row without help, this many go unoffered. */
#define SV_HELP_MISSES 2u
#define SV_HELP_SKIP 16u

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
static bool push(const struct sv_pubtab_view *tab, const struct iovec *iov,
		 uint32_t n, uintptr_t rva, uint64_t off, uint64_t len)
{
	struct iovec part[SV_MAX_SGE];
	uint32_t m = slice(iov, n, off, len, part);
	bool via_mem;

	return sv_direct_copy(tab, true, part, m, rva + off, len, &via_mem);
}

/* Is the target still there?  Its mem file is bound to its memory: once
 * it has exited, reading fails (a reused pid cannot answer for it). */
static bool target_alive(const struct sv_pubtab_view *tab, uintptr_t rva)
{
	int fd = sv_pubtab_memfd(tab);
	char c;

	if (fd >= 0)
		return pread(fd, &c, 1, (off_t)rva) == 1;
	return !kill(sv_pubtab_pid(tab), 0) || errno != ESRCH;
}

/* Is thread tid of process pid stopped (job control or a tracer)?  It
 * then runs no user code until it is continued. */
static bool thread_stopped(pid_t pid, uint32_t tid)
{
	char path[64], buf[128], *p;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/stat", (int)pid, tid);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return false;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

enum wait_r { WAIT_DONE, WAIT_REVOKED, WAIT_SLOW, WAIT_FAILED };

/* Wait until the helper has handled `need` chunks (`bytes`) of job gen.
 * If its thread is stopped meanwhile, revoke its claims (WAIT_REVOKED:
 * the sender copies them); if it has not finished within the bound
 * above, revoke them all the same (WAIT_SLOW).  WAIT_FAILED if the
 * target died. */
static enum wait_r wait_helper(struct sv_help_job *job, uint32_t gen,
			       uint32_t need, uint64_t bytes,
			       const struct sv_pubtab_view *tab, uintptr_t rva)
{
	uint64_t bound =
		SV_HELP_WAIT_FLOOR_NS + bytes * SV_HELP_WAIT_NS_PER_BYTE;
	uint64_t start = 0, now, d;
	unsigned int spins = 0;
	bool revoked = false;

	for (;;) {
		d = atomic_load_explicit(&job->done, memory_order_acquire);
		if ((uint32_t)(d >> 32) != gen)
			return WAIT_FAILED; /* a broken target */
		if ((uint32_t)d >= need)
			return revoked ? WAIT_REVOKED : WAIT_DONE;
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
		if (!revoked) {
			uint32_t tid = atomic_load(&job->tid);
			pid_t pid = sv_pubtab_pid(tab);

			if ((tid & SV_HELP_REVOCABLE) &&
			    thread_stopped(pid, tid & ~SV_HELP_REVOCABLE)) {
				atomic_store(&job->revoked, gen);
				/* Still stopped after our store: when it
				 * runs again it sees the store first. */
				if (thread_stopped(pid,
						   tid & ~SV_HELP_REVOCABLE))
					return WAIT_REVOKED;
				revoked = true; /* it runs: let it finish */
			}
		}
		if (!target_alive(tab, rva))
			return WAIT_FAILED;
		if (now - start > bound) {
			/* A running helper sees this before its next copy
			 * (rseq); one in the middle of a copy writes the
			 * bytes we are about to write (docs/security.md). */
			atomic_store(&job->revoked, gen);
			return WAIT_SLOW;
		}
		nanosleep(&(struct timespec){ .tv_nsec = SV_HELP_NAP_NS },
			  NULL);
	}
}

/* The target's thread sleeps: ring its doorbell (as paths/chan.c does). */
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

		if (atomic_compare_exchange_strong(&hdr->job[j].busy, &free, 1))
			return &hdr->job[j];
	}
	return NULL;
}

enum sv_help_r sv_help_write(struct sv_qp_engine *qe,
			     const struct sv_pubtab_view *tab,
			     const struct iovec *iov, uint32_t n, uintptr_t rva,
			     const struct sv_send_wqe *wqe)
{
	uint64_t len = wqe->length, body = len - SV_HELP_TAIL, chunk, w;
	uint32_t i, nch, gen, front = 0, back, take;
	struct sv_help_job *job;
	bool ok = true, first = true;

	if (!sv_env_help() || len < SV_HELP_MIN || n > SV_HELP_IOV ||
	    sv_pubtab_is_self(tab) ||
	    !atomic_load_explicit(&qe->shm->hdr->helping, memory_order_relaxed))
		return SV_HELP_NOT;
	/* Cut in pieces without a helper, a WRITE costs more than one copy
	 * (docs/fastpath.md): after WRITEs that found none, the next
	 * SV_HELP_SKIP ones are not offered. */
	if (sv_pq(qe)->help_skip) {
		sv_pq(qe)->help_skip--;
		return SV_HELP_NOT;
	}
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
	gen = sv_help_gen(
		      atomic_load_explicit(&job->claim, memory_order_relaxed)) +
	      1;
	if (!gen)
		gen = 1;
	atomic_store_explicit(&job->done, (uint64_t)gen << 32,
			      memory_order_relaxed);
	atomic_store_explicit(&job->redo, (uint64_t)gen << 32,
			      memory_order_relaxed);
	atomic_store_explicit(&job->tid, 0, memory_order_relaxed);
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
	if (back == nch && ++sv_pq(qe)->help_missed >= SV_HELP_MISSES) {
		sv_pq(qe)->help_missed = 0;
		sv_pq(qe)->help_skip = SV_HELP_SKIP;
	}
	if (back < nch) {
		uint64_t claimed = body - (uint64_t)back * chunk;
		enum wait_r wr =
			wait_helper(job, gen, nch - back, claimed, tab, rva);
		uint64_t r =
			atomic_load_explicit(&job->redo, memory_order_acquire);
		uint32_t c0 = 0, cn = 0;

		SV_STAT(qe->eng, help_taken);
		sv_pq(qe)->help_missed = 0;
		if (wr == WAIT_FAILED) {
			ok = false;
		} else if (wr == WAIT_REVOKED || wr == WAIT_SLOW) {
			/* Ours now, all of them (some may be in place
			 * already: the same bytes again). */
			if (wr == WAIT_REVOKED) {
				SV_STAT(qe->eng, help_revoked);
			} else {
				SV_STAT(qe->eng, help_timeout);
				sv_pq(qe)->help_skip =
					SV_HELP_SKIP
					<< (sv_pq(qe)->help_slow <
							    SV_HELP_SLOW_MAX_SHIFT ?
						    sv_pq(qe)->help_slow++ :
						    SV_HELP_SLOW_MAX_SHIFT);
			}
			c0 = back;
			cn = nch - back;
		} else if ((uint32_t)(r >> 32) == gen && (uint32_t)r) {
			c0 = ((uint32_t)r >> 16) - 1;
			cn = (uint32_t)r & 0xffff;
			if (c0 < back || !cn || c0 + cn > nch)
				ok = false; /* a broken target */
		}
		if (ok && cn)
			ok = push(tab, iov, n, rva, c0 * chunk,
				  ((c0 + cn) * chunk < body ?
					   (c0 + cn) * chunk :
					   body) -
					  c0 * chunk);
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
	if (!v->niov || v->niov > SV_HELP_IOV || v->chunk < 4096 || !v->len ||
	    v->len > (uint64_t)SV_HELP_MAX_CHUNKS * v->chunk)
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

	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	qe = s->slot[sv_qpn_slot(v->qpn)];
	if (qe && qe->qpn == v->qpn && qe->qp->type == IBV_QPT_RC &&
	    qe->dest_qpn == v->src_qpn && qe->shm &&
	    qe->shm->pid != qe->shm->self)
		pid = qe->shm->pid;
	sv_mutex_unlock(&eng->lock);
	return pid;
}

/* Results of one copy attempt besides a byte count or -errno. */
#define PULL_ABORTED (-5000L) /* stopped or preempted before the call */
#define PULL_REVOKED (-5001L) /* the sender took the chunks back */

#ifdef SV_HELP_RSEQ
/* Can this thread copy inside a restartable sequence? */
static bool rseq_usable(void)
{
	const struct rseq *rs;

	if (!__rseq_size)
		return false;
	rs = (const struct rseq *)((char *)__builtin_thread_pointer() +
				   __rseq_offset);
	return (int32_t)rs->cpu_id >= 0;
}

/* process_vm_readv(pid, local, 1, remote, nr, 0) unless *revoked == gen,
 * decided at the system call's start: the check and the syscall
 * instruction are one restartable sequence whose last instruction is the
 * call, so a thread preempted, signalled or stopped anywhere before the
 * call resumes at the abort label (PULL_ABORTED), and once the call has
 * started the sender's revocation comes too late only for bytes that are
 * the ones it would write itself. */
static long readv_unless_revoked(const _Atomic uint32_t *revoked, uint32_t gen,
				 pid_t pid, const struct iovec *local,
				 const struct iovec *remote, unsigned long nr)
{
	struct rseq *rs = (struct rseq *)((char *)__builtin_thread_pointer() +
					  __rseq_offset);
	register long r10 __asm__("r10") = (long)remote;
	register long r8 __asm__("r8") = (long)nr;
	register long r9 __asm__("r9") = 0;
	long ret;

	__asm__ __volatile__(
		".pushsection __rseq_cs, \"aw\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t" /* version, flags */
		".quad 1f, 2f - 1f, 4f\n\t" /* start, length, abort */
		".popsection\n\t"
		"leaq 3b(%%rip), %%rax\n\t"
		"movq %%rax, %[cs]\n\t"
		"1:\n\t"
		"cmpl %[gen], %[rev]\n\t"
		"je 5f\n\t"
		"movl %[nr_readv], %%eax\n\t"
		"syscall\n\t"
		"2:\n\t"
		"jmp 6f\n\t"
		".long 0x53053053\n\t" /* RSEQ_SIG, before the abort label */
		"4:\n\t"
		"movq %[aborted], %%rax\n\t"
		"jmp 6f\n\t"
		"5:\n\t"
		"movq %[revk], %%rax\n\t"
		"6:\n\t"
		: "=&a"(ret), [cs] "=m"(rs->rseq_cs)
		: [gen] "r"(gen), [rev] "m"(*revoked),
		  [nr_readv] "i"(SYS_process_vm_readv), "D"((long)pid),
		  "S"(local), "d"(1L), "r"(r10), "r"(r8),
		  "r"(r9), [aborted] "i"(PULL_ABORTED), [revk] "i"(PULL_REVOKED)
		: "rcx", "r11", "memory", "cc");
	__atomic_store_n(&rs->rseq_cs, 0, __ATOMIC_RELAXED);
	return ret;
}
#else
static bool rseq_usable(void)
{
	return false;
}
#endif

/* One copy of the helper: revocable when the thread can, else plain (and
 * the job says so: the sender then waits for it). */
static long readv_once(bool revocable, const _Atomic uint32_t *revoked,
		       uint32_t gen, pid_t pid, const struct iovec *local,
		       const struct iovec *remote, unsigned long nr)
{
	long got;

#ifdef SV_HELP_RSEQ
	if (revocable)
		return readv_unless_revoked(revoked, gen, pid, local, remote,
					    nr);
#else
	(void)revoked;
	(void)gen;
	(void)revocable;
#endif
	got = process_vm_readv(pid, local, 1, remote, nr, 0);
	return got < 0 ? -errno : got;
}

enum pull_r { PULLED, PULL_FAILED, PULL_TAKEN_BACK };

/* Chunks [c, c+k) of the job, pulled from the sender into va. */
static enum pull_r pull(struct sv_help_job *job, uint32_t gen, bool revocable,
			pid_t pid, const struct job_view *v, uintptr_t va,
			uint32_t c, uint32_t k)
{
	uint64_t off = (uint64_t)c * v->chunk,
		 end = (uint64_t)(c + k) * v->chunk;
	struct iovec part[SV_HELP_IOV], local;
	uint32_t m;

	if (end > v->len)
		end = v->len;
	while (off < end) {
		long got;

		m = slice(v->iov, v->niov, off, end - off, part);
		local.iov_base = (void *)(va + off);
		local.iov_len = end - off;
		SV_DMA_BEGIN();
		got = readv_once(revocable, &job->revoked, gen, pid, &local,
				 part, m);
		SV_DMA_END();
		if (got == PULL_ABORTED || got == -EINTR)
			continue;
		if (got == PULL_REVOKED)
			return PULL_TAKEN_BACK;
		if (got <= 0)
			return PULL_FAILED;
		off += (uint64_t)got;
	}
	return PULLED;
}

/* A count or a report for job gen only: a late one for an older job
 * (revoked, its slot reused since) changes nothing. */
static void job_report(_Atomic uint64_t *word, uint32_t gen, uint64_t add,
		       bool set)
{
	uint64_t cur = atomic_load_explicit(word, memory_order_relaxed);

	while ((uint32_t)(cur >> 32) == gen &&
	       !atomic_compare_exchange_weak_explicit(
		       word, &cur, set ? (uint64_t)gen << 32 | add : cur + add,
		       memory_order_release, memory_order_relaxed))
		;
}

static uint32_t my_tid(void)
{
	static __thread uint32_t tid;

	if (!tid)
		tid = (uint32_t)syscall(SYS_gettid);
	return tid;
}

/* Take chunks of the job posted as w while there are any; the chunks
 * copied.  *decline: leave this job alone from now on (refused, or a copy
 * failed or was revoked). */
static uint32_t job_help(struct sv_engine *eng, struct sv_sock *s,
			 struct sv_help_job *job, uint64_t w, bool *decline)
{
	uint32_t gen = sv_help_gen(w), front, back, k, copied = 0;
	bool revocable = rseq_usable();
	struct sv_pubtab_hold h;
	struct job_view v;
	enum pull_r r;
	const struct sv_pubtab_view *own;
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
	/* Before any claim: who to look at if we seem stuck. */
	atomic_store(&job->tid, my_tid() | (revocable ? SV_HELP_REVOCABLE : 0));
	for (;;) {
		front = sv_help_front(w);
		back = sv_help_back(w);
		if (sv_help_gen(w) != gen || back <= front || back > v.nch)
			break;
		k = (back - front + 1) / 2;
		if (!atomic_compare_exchange_weak(&job->claim, &w,
						  sv_help_word(gen, front,
							       back - k)))
			continue; /* w reloaded */
		r = pull(job, gen, revocable, pid, &v, va, back - k, k);
		if (r == PULL_FAILED) /* the sender copies them */
			job_report(&job->redo, gen,
				   (uint64_t)(back - k + 1) << 16 | k, true);
		job_report(&job->done, gen, k, false);
		if (r != PULLED) {
			*decline = true;
			break;
		}
		copied += k;
		w = atomic_load_explicit(&job->claim, memory_order_acquire);
	}
	sv_pubtab_release(&h);
	if (copied && sv_env_trace()) {
		char extra[96];

		snprintf(extra, sizeof(extra),
			 " va 0x%" PRIx64
			 " rkey 0x%x: %u of %u chunks for QP 0x%06x",
			 v.iova, v.rkey, copied, v.nch, v.src_qpn);
		sv_trace_op(eng, "rx-help", SV_OP_RC_RDMA_WRITE_ONLY, v.qpn,
			    v.len, extra);
	}
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
			uint64_t w = atomic_load_explicit(&job->claim,
							  memory_order_acquire);
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

/* Our application polls (a poll hint within SV_HINT_HOLD_NS): its core is
 * not idle, and a copy here would be taken from it (as direct.c's
 * leave_to_poller).  ib_write_lat's target spins on memory and polls its
 * send CQ: a helper there competes with that spin for the core, and the
 * WRITE it helps ends later than one copied alone. */
static bool app_polls(struct sv_engine *eng)
{
	return sv_app_polls(eng, sv_now_ns());
}

void sv_help_serve(struct sv_engine *eng)
{
	uint32_t declined[SV_HELP_RINGS][SV_HELP_JOBS] = { { 0 } };
	struct sv_sock *s[SV_HELP_RINGS];
	uint64_t chunks = 0, until = 0, now;
	struct list_node *it;
	unsigned int n = 0, spins = 0;

	if (!sv_env_help() || app_polls(eng))
		return;
	/* Sockets are freed only after this thread is joined. */
	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	for (it = eng->socks.n.next; it != &eng->socks.n && n < SV_HELP_RINGS;
	     it = it->next) {
		struct sv_sock *k = list_entry(it, struct sv_sock, node);

		if (k->ring.hdr)
			s[n++] = k;
	}
	sv_mutex_unlock(&eng->lock);

	while (!atomic_load_explicit(&eng->stop, memory_order_relaxed)) {
		if (scan(eng, s, n, declined, &chunks)) {
			until = 0;
			if (app_polls(eng))
				break;
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
		if (atomic_load(&eng->kick_any) || app_polls(eng))
			break;
		if (!until)
			until = now + SV_HELP_LINGER_NS;
		if (now > until)
			break;
	}
	if (chunks) {
		sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
		eng->stats->help_chunks += chunks;
		sv_mutex_unlock(&eng->lock);
	}
}

void sv_help_available(struct sv_engine *eng, bool yes)
{
	struct list_node *it;

	if (!sv_env_help() || sv_pe(eng)->help_avail == yes)
		return;
	sv_pe(eng)->help_avail = yes;
	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *k = list_entry(it, struct sv_sock, node);

		if (k->ring.hdr)
			atomic_store_explicit(&k->ring.hdr->helping, yes,
					      memory_order_relaxed);
	}
}
