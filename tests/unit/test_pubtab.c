/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* White-box test of the published table (core/pubtab.c): this process's
 * table mapped as a peer maps it (sv_pubtab_map(getpid(), sv_pubtab_fd())),
 * every check of sv_pubtab_acquire (QP connected to us, state, QP access
 * flags, R_Key, PD, MR rights, bounds and overflow), removal and QP
 * changes waiting for users to drain, tombstone reuse, refusals of
 * foreign or unsealed files, a forked child writing into this process's
 * registered memory with process_vm_writev through the table, and
 * SOFTVERBS_FASTPATH=0. */
#include "core/pubtab.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define WR IBV_ACCESS_REMOTE_WRITE
#define RD IBV_ACCESS_REMOTE_READ
#define LW IBV_ACCESS_LOCAL_WRITE

static struct sv_pd pd1, pd2;
static uint8_t buf[8192];

static void mr_init(struct sv_mr *mr, struct sv_pd *pd, uint32_t rkey, void *va,
		    uint64_t iova, uint64_t len, unsigned int access)
{
	memset(mr, 0, sizeof(*mr));
	mr->pd = pd;
	mr->ibv.rkey = rkey;
	mr->va = (uintptr_t)va;
	mr->iova = iova;
	mr->length = len;
	mr->access = access;
}

static void qp_set(uint32_t qpn, uint32_t dest, unsigned int access, int state,
		   struct sv_pd *pd)
{
	struct sv_pubtab_qp q = { .qpn = qpn,
				  .dest_qpn = dest,
				  .access = access,
				  .state = state,
				  .max_dest_rd_atomic = 4,
				  .pd = sv_pubtab_pd_token(pd) };

	sv_pubtab_qp_set(&q);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Every check, one refusal at a time. */
static void test_checks(struct sv_pubtab_view *tab)
{
	const uint32_t me = 0x123401, qpn = 0x567802, rkey = 0x1234567;
	const uint64_t iova = 0x100000;
	struct sv_pubtab_hold h;
	struct sv_mr mr;
	uintptr_t va;

	mr_init(&mr, &pd1, rkey, buf, iova, 4096, LW | WR);
	sv_pubtab_mr_add(&mr);
	qp_set(qpn, me, WR | RD, IBV_QPS_RTS, &pd1);

	va = sv_pubtab_acquire(tab, qpn, me, rkey, iova + 100, 200, WR, 0, &h);
	CHECK(va == (uintptr_t)buf + 100);
	if (va)
		sv_pubtab_release(&h);
	/* The whole region, and its last byte. */
	va = sv_pubtab_acquire(tab, qpn, me, rkey, iova, 4096, WR, 0, &h);
	CHECK(va == (uintptr_t)buf);
	if (va)
		sv_pubtab_release(&h);
	va = sv_pubtab_acquire(tab, qpn, me, rkey, iova + 4095, 1, WR, 0, &h);
	CHECK(va == (uintptr_t)buf + 4095);
	if (va)
		sv_pubtab_release(&h);

	/* Not connected to us, unknown QP, unknown or window R_Key. */
	CHECK(!sv_pubtab_acquire(tab, qpn, me + 1, rkey, iova, 8, WR, 0, &h));
	CHECK(!sv_pubtab_acquire(tab, qpn + 1, me, rkey, iova, 8, WR, 0, &h));
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey ^ 0x100, iova, 8, WR, 0,
				 &h));
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey | 0x80000000u, iova, 8, WR,
				 0, &h));
	CHECK(!sv_pubtab_acquire(tab, qpn, me, 0, iova, 8, WR, 0, &h));
	/* Bounds: before, after, too long, wrapping. */
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova - 1, 8, WR, 0, &h));
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova + 4089, 8, WR, 0,
				 &h));
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 4097, WR, 0, &h));
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova + 8, UINT64_MAX - 4,
				 WR, 0, &h));
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, UINT64_MAX - 3, 8, WR, 0,
				 &h));
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 0, WR, 0, &h));
	/* A READ needing more responder resources than the QP has (4). */
	mr.access |= RD;
	sv_pubtab_mr_del(&mr);
	sv_pubtab_mr_add(&mr);
	va = sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, RD, 4, &h);
	CHECK(va == (uintptr_t)buf);
	if (va)
		sv_pubtab_release(&h);
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, RD, 5, &h));
	mr.access &= ~RD;
	sv_pubtab_mr_del(&mr);
	sv_pubtab_mr_add(&mr);
	/* The MR does not grant REMOTE_READ. */
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, RD, 0, &h));
	/* The QP is not enabled for REMOTE_WRITE. */
	qp_set(qpn, me, RD, IBV_QPS_RTS, &pd1);
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, WR, 0, &h));
	/* Another PD. */
	qp_set(qpn, me, WR | RD, IBV_QPS_RTS, &pd2);
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, WR, 0, &h));
	/* States: RTR is left to packets, SQD accepts, ERR and RESET don't. */
	qp_set(qpn, me, WR | RD, IBV_QPS_RTR, &pd1);
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, WR, 0, &h));
	qp_set(qpn, me, WR | RD, IBV_QPS_ERR, &pd1);
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, WR, 0, &h));
	qp_set(qpn, me, WR | RD, IBV_QPS_RESET, &pd1);
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, WR, 0, &h));
	qp_set(qpn, me, WR | RD, IBV_QPS_SQD, &pd1);
	va = sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, WR, 0, &h);
	CHECK(va == (uintptr_t)buf);
	if (va)
		sv_pubtab_release(&h);
	/* Removed entries are gone. */
	sv_pubtab_mr_del(&mr);
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, WR, 0, &h));
	sv_pubtab_mr_add(&mr);
	va = sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, WR, 0, &h);
	CHECK(va == (uintptr_t)buf);
	if (va)
		sv_pubtab_release(&h);
	sv_pubtab_qp_del(qpn);
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, iova, 8, WR, 0, &h));
	sv_pubtab_mr_del(&mr);
}

struct del_arg {
	struct sv_mr *mr;
	uint32_t qpn;
	atomic_int done;
};

static void *del_mr(void *p)
{
	struct del_arg *a = p;

	sv_pubtab_mr_del(a->mr);
	atomic_store(&a->done, 1);
	return NULL;
}

static void *del_qp(void *p)
{
	struct del_arg *a = p;

	qp_set(a->qpn, 1, 0, IBV_QPS_ERR, &pd1);
	atomic_store(&a->done, 1);
	return NULL;
}

/* Removal waits while a peer holds the entry, and no more. */
static void test_drain(struct sv_pubtab_view *tab)
{
	const uint32_t me = 0x99901, qpn = 0x99902, rkey = 0x7654321;
	struct del_arg a = { 0 };
	struct sv_pubtab_hold h;
	struct sv_mr mr;
	pthread_t t;
	uint64_t t0;

	mr_init(&mr, &pd1, rkey, buf, 0x2000, 4096, LW | WR | RD);
	sv_pubtab_mr_add(&mr);
	qp_set(qpn, me, WR | RD, IBV_QPS_RTS, &pd1);
	REQUIRE(sv_pubtab_acquire(tab, qpn, me, rkey, 0x2000, 16, RD, 0, &h));
	a.mr = &mr;
	a.qpn = qpn;
	REQUIRE(!pthread_create(&t, NULL, del_mr, &a));
	usleep(100000);
	CHECK(!atomic_load(&a.done)); /* still waiting for us */
	/* New users are refused while it waits. */
	{
		struct sv_pubtab_hold h2;

		CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, 0x2000, 16, RD, 0,
					 &h2));
	}
	t0 = now_ms();
	sv_pubtab_release(&h);
	pthread_join(t, NULL);
	CHECK(atomic_load(&a.done));
	CHECK(now_ms() - t0 < 500);

	/* Same for a QP state change. */
	sv_pubtab_mr_add(&mr);
	REQUIRE(sv_pubtab_acquire(tab, qpn, me, rkey, 0x2000, 16, RD, 0, &h));
	atomic_store(&a.done, 0);
	REQUIRE(!pthread_create(&t, NULL, del_qp, &a));
	usleep(100000);
	CHECK(!atomic_load(&a.done));
	sv_pubtab_release(&h);
	pthread_join(t, NULL);
	CHECK(atomic_load(&a.done));
	CHECK(!sv_pubtab_acquire(tab, qpn, me, rkey, 0x2000, 16, RD, 0, &h));

	/* A holder that never releases (a dead peer): bounded wait. */
	qp_set(qpn, me, WR | RD, IBV_QPS_RTS, &pd1);
	REQUIRE(sv_pubtab_acquire(tab, qpn, me, rkey, 0x2000, 16, RD, 0, &h));
	t0 = now_ms();
	sv_pubtab_mr_del(&mr);
	CHECK(now_ms() - t0 >= 900 && now_ms() - t0 < 3000);
	sv_pubtab_qp_del(qpn); /* waits for the QP entry's stray user too */
}

/* Many entries, removed and added again: tombstones are reused. */
static void test_churn(struct sv_pubtab_view *tab)
{
	static struct sv_mr mrs[2000];
	const uint32_t me = 0x4401, qpn = 0x4402;
	struct sv_pubtab_hold h;
	int i, round, found = 0;

	qp_set(qpn, me, WR, IBV_QPS_RTS, &pd1);
	for (round = 0; round < 20; round++) {
		for (i = 0; i < 2000; i++) {
			mr_init(&mrs[i], &pd1,
				(uint32_t)(round * 2000 + i + 1) * 2654435761u &
					0x7fffffff,
				buf, 0x1000, 64, LW | WR);
			if (!mrs[i].ibv.rkey)
				mrs[i].ibv.rkey = 1;
			sv_pubtab_mr_add(&mrs[i]);
		}
		found = 0;
		for (i = 0; i < 2000; i++) {
			if (sv_pubtab_acquire(tab, qpn, me, mrs[i].ibv.rkey,
					      0x1000, 64, WR, 0, &h)) {
				found++;
				sv_pubtab_release(&h);
			}
		}
		CHECK_EQ(found, 2000);
		for (i = 0; i < 2000; i++)
			sv_pubtab_mr_del(&mrs[i]);
		for (i = 0; i < 2000; i += 97)
			CHECK(!sv_pubtab_acquire(tab, qpn, me, mrs[i].ibv.rkey,
						 0x1000, 64, WR, 0, &h));
	}
	sv_pubtab_qp_del(qpn);
}

/* A child maps our table by pid and fd and writes into our memory the way
 * paths/direct.c does. */
static void test_child_write(int fd)
{
	const uint32_t me = 0x7701, qpn = 0x7702, rkey = 0x2468ace;
	static uint8_t target[65536];
	struct sv_mr mr;
	pid_t parent = getpid(), pid;
	int st, i, ok = 1;

	memset(target, 0, sizeof(target));
	mr_init(&mr, &pd1, rkey, target, 0x40000000, sizeof(target), LW | WR);
	sv_pubtab_mr_add(&mr);
	qp_set(qpn, me, WR, IBV_QPS_RTS, &pd1);
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		struct sv_pubtab_hold h;
		uint8_t src[4096];
		struct iovec l = { src, sizeof(src) }, r;
		struct sv_pubtab_view *tab = sv_pubtab_map(parent, fd);
		uintptr_t va;

		if (!tab)
			_exit(2);
		if (sv_pubtab_pid(tab) != parent)
			_exit(3);
		for (i = 0; i < 4096; i++)
			src[i] = (uint8_t)(i * 7 + 3);
		va = sv_pubtab_acquire(tab, qpn, me, rkey, 0x40000000 + 1000,
				       4096, WR, 0, &h);
		if (!va)
			_exit(4);
		r.iov_base = (void *)va;
		r.iov_len = 4096;
		if (process_vm_writev(parent, &l, 1, &r, 1, 0) != 4096)
			_exit(errno == EPERM ? 77 : 5);
		sv_pubtab_release(&h);
		/* Out of bounds is refused before any copy. */
		if (sv_pubtab_acquire(tab, qpn, me, rkey, 0x40000000 + 65000,
				      4096, WR, 0, &h))
			_exit(6);
		sv_pubtab_unmap(tab);
		_exit(0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("process_vm_writev not permitted here: child part skipped\n");
	} else {
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			fprintf(stderr, "child status 0x%x\n", st);
		for (i = 0; i < 4096; i++)
			if (target[1000 + i] != (uint8_t)(i * 7 + 3))
				ok = 0;
		CHECK(ok);
		CHECK(target[999] == 0 && target[1000 + 4096] == 0);
	}
	sv_pubtab_mr_del(&mr);
	sv_pubtab_qp_del(qpn);
}

/* Files that are not a table of that process are refused. */
static void test_refusals(int fd)
{
	char path[] = "/tmp/pubtabXXXXXX";
	int f = mkstemp(path), nul = open("/dev/null", O_RDONLY);
	pid_t child;
	int st;

	REQUIRE(f >= 0 && nul >= 0);
	CHECK(ftruncate(f, 1 << 20) == 0);
	CHECK(sv_pubtab_map(getpid(), f) == NULL); /* not sealed */
	CHECK(sv_pubtab_map(getpid(), nul) == NULL); /* not a file */
	CHECK(sv_pubtab_map(getpid(), 9999) == NULL);
	CHECK(sv_pubtab_map(getpid(), -1) == NULL);
	close(f);
	unlink(path);
	close(nul);
	/* Our table named under another pid (the child inherits the fd
	 * number but not the table: its header says our pid). */
	child = fork();
	REQUIRE(child >= 0);
	if (!child) {
		pause();
		_exit(0);
	}
	CHECK(sv_pubtab_map(child, fd) == NULL);
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	/* SOFTVERBS_FASTPATH=0: no table at all (a fresh child). */
	child = fork();
	REQUIRE(child >= 0);
	if (!child) {
		setenv("SOFTVERBS_FASTPATH", "0", 1);
		_exit(sv_pubtab_fd() == -1 ? 0 : 1);
	}
	REQUIRE(waitpid(child, &st, 0) == child);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	const char *fp = getenv("SOFTVERBS_FASTPATH");
	int fd;
	struct sv_pubtab_view *tab;

	if (fp && !strcmp(fp, "0")) {
		CHECK(sv_pubtab_fd() == -1);
		return check_done();
	}
	fd = sv_pubtab_fd();
	REQUIRE(fd >= 0);
	CHECK(sv_pubtab_fd() == fd);
	tab = sv_pubtab_map(getpid(), fd);
	REQUIRE(tab != NULL);
	CHECK(sv_pubtab_pid(tab) == getpid());
	test_checks(tab);
	test_drain(tab);
	test_churn(tab);
	test_child_write(fd);
	test_refusals(fd);
	sv_pubtab_unmap(tab);
	return check_done();
}
