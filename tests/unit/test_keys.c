/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* White-box test of the MR key table and the access predicate
 * (core/keys.c, compiled into this test): key lookups with references,
 * unpublish waiting for references to drain, table growth and deletion,
 * and every branch of sv_mr_check including overflowing ranges. */
#include "core/keys.c"

#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static void mr_init(struct sv_mr *mr, struct sv_pd *pd, void *va, uint64_t iova,
		    uint64_t len, unsigned int access)
{
	memset(mr, 0, sizeof(*mr));
	mr->pd = pd;
	mr->va = (uintptr_t)va;
	mr->iova = iova;
	mr->length = len;
	mr->access = access;
	atomic_init(&mr->refs, 0);
	atomic_init(&mr->state, SV_MR_INVALID);
}

static void test_check(void)
{
	struct sv_pd pd, other;
	struct sv_mr mr;
	char buf[256];
	const uint64_t base = 0x10000;

	mr_init(&mr, &pd, buf, base, sizeof(buf),
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	/* Not published yet: invalid. */
	CHECK(sv_mr_check(&mr, &pd, base, 1, 0) == NULL);
	REQUIRE(sv_mr_publish(&mr) == 0);
	CHECK(sv_mr_check(&mr, &pd, base, 1, 0) == buf);
	CHECK(sv_mr_check(&mr, &pd, base + 10, 20, IBV_ACCESS_REMOTE_READ) ==
	      buf + 10);
	CHECK(sv_mr_check(&mr, &pd, base, 256, IBV_ACCESS_LOCAL_WRITE) == buf);
	CHECK(sv_mr_check(&mr, &pd, base + 256, 0, 0) == buf + 256);
	CHECK(sv_mr_check(NULL, &pd, base, 1, 0) == NULL);
	/* Wrong PD (C9-88 / o10-...) */
	CHECK(sv_mr_check(&mr, &other, base, 1, 0) == NULL);
	/* Rights not granted */
	CHECK(sv_mr_check(&mr, &pd, base, 1, IBV_ACCESS_REMOTE_WRITE) == NULL);
	CHECK(sv_mr_check(&mr, &pd, base, 1, IBV_ACCESS_REMOTE_ATOMIC) == NULL);
	CHECK(sv_mr_check(&mr, &pd, base, 1,
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE) ==
	      NULL);
	/* Out of range on either side, and lengths that overflow. */
	CHECK(sv_mr_check(&mr, &pd, base - 1, 1, 0) == NULL);
	CHECK(sv_mr_check(&mr, &pd, base + 1, 256, 0) == NULL);
	CHECK(sv_mr_check(&mr, &pd, base + 256, 1, 0) == NULL);
	CHECK(sv_mr_check(&mr, &pd, base, 257, 0) == NULL);
	CHECK(sv_mr_check(&mr, &pd, base + 8, UINT64_MAX, 0) == NULL);
	CHECK(sv_mr_check(&mr, &pd, UINT64_MAX, 2, 0) == NULL);
	CHECK(sv_mr_check(&mr, &pd, base + 128, UINT64_MAX - base, 0) == NULL);
	sv_mr_unpublish(&mr);
	CHECK(sv_mr_check(&mr, &pd, base, 1, 0) == NULL);

	/* An MR ending at the top of the iova space. */
	mr_init(&mr, &pd, buf, UINT64_MAX - 255, 256, 0);
	REQUIRE(sv_mr_publish(&mr) == 0);
	CHECK(sv_mr_check(&mr, &pd, UINT64_MAX - 255, 256, 0) == buf);
	CHECK(sv_mr_check(&mr, &pd, UINT64_MAX, 1, 0) == buf + 255);
	CHECK(sv_mr_check(&mr, &pd, UINT64_MAX, 2, 0) == NULL);
	sv_mr_unpublish(&mr);
}

static void test_lookup(void)
{
	struct sv_pd pd;
	struct sv_mr mr, *got;
	char buf[16];

	mr_init(&mr, &pd, buf, 0, sizeof(buf), 0);
	REQUIRE(sv_mr_publish(&mr) == 0);
	CHECK(mr.ibv.lkey != 0 && mr.ibv.rkey != 0);
	got = sv_mr_get_by_lkey(mr.ibv.lkey);
	CHECK(got == &mr);
	CHECK_EQ(atomic_load(&mr.refs), 1);
	got = sv_mr_get_by_rkey(mr.ibv.rkey);
	CHECK(got == &mr);
	CHECK_EQ(atomic_load(&mr.refs), 2);
	sv_mr_put(&mr);
	sv_mr_put(&mr);
	CHECK_EQ(atomic_load(&mr.refs), 0);
	/* An lkey is not an rkey (unless they happen to collide). */
	if (mr.ibv.lkey != mr.ibv.rkey)
		CHECK(sv_mr_get_by_rkey(mr.ibv.lkey) == NULL);
	CHECK(sv_mr_get_by_lkey(0) == NULL);
	sv_mr_unpublish(&mr);
	CHECK(sv_mr_get_by_lkey(mr.ibv.lkey) == NULL);
	CHECK(sv_mr_get_by_rkey(mr.ibv.rkey) == NULL);
}

struct holder {
	struct sv_mr *mr;
	atomic_int released;
};

static void *release_later(void *arg)
{
	struct holder *h = arg;
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	atomic_store(&h->released, 1);
	sv_mr_put(h->mr);
	return NULL;
}

/* Unpublish must not return while a lookup still holds the MR. */
static void test_drain(void)
{
	struct sv_pd pd;
	struct sv_mr mr;
	struct holder h = { &mr, 0 };
	pthread_t t;
	char buf[16];

	mr_init(&mr, &pd, buf, 0, sizeof(buf), 0);
	REQUIRE(sv_mr_publish(&mr) == 0);
	REQUIRE(sv_mr_get_by_rkey(mr.ibv.rkey) == &mr);
	REQUIRE(pthread_create(&t, NULL, release_later, &h) == 0);
	sv_mr_unpublish(&mr);
	CHECK_EQ(atomic_load(&h.released), 1);
	CHECK_EQ(atomic_load(&mr.refs), 0);
	pthread_join(t, NULL);
}

/* Many MRs: the table grows, every key resolves to its MR, and removal in
 * a scattered order keeps every remaining key reachable. */
static void test_many(void)
{
	enum { N = 5000 };
	static struct sv_mr mrs[N];
	struct sv_pd pd;
	char buf[8];
	int i, bad = 0;

	for (i = 0; i < N; i++) {
		mr_init(&mrs[i], &pd, buf, 0, sizeof(buf), 0);
		REQUIRE(sv_mr_publish(&mrs[i]) == 0);
	}
	for (i = 0; i < N; i++) {
		struct sv_mr *l = sv_mr_get_by_lkey(mrs[i].ibv.lkey);
		struct sv_mr *r = sv_mr_get_by_rkey(mrs[i].ibv.rkey);

		bad += l != &mrs[i] || r != &mrs[i];
		if (l)
			sv_mr_put(l);
		if (r)
			sv_mr_put(r);
	}
	CHECK_EQ(bad, 0);
	for (i = 0; i < N; i += 3)
		sv_mr_unpublish(&mrs[i]);
	for (i = 0; i < N; i++) {
		struct sv_mr *l = sv_mr_get_by_lkey(mrs[i].ibv.lkey);

		if (i % 3 == 0)
			bad += l != NULL;
		else
			bad += l != &mrs[i];
		if (l)
			sv_mr_put(l);
	}
	CHECK_EQ(bad, 0);
	for (i = 0; i < N; i++)
		if (i % 3)
			sv_mr_unpublish(&mrs[i]);
	CHECK_EQ(ltab.used, 0);
	CHECK_EQ(rtab.used, 0);
}

/* Keys come from a pool of random bits: a forked child must not draw
 * what its parent draws next (a peer who saw one's keys would know the
 * other's).  Parent and child each publish one MR after the fork. */
static void test_fork_keys(void)
{
	struct sv_mr before, mine;
	struct sv_pd pd;
	uint32_t theirs[2];
	char buf[8];
	int p[2], st;
	pid_t pid;

	mr_init(&before, &pd, buf, 0, sizeof(buf), 0);
	REQUIRE(sv_mr_publish(&before) == 0); /* the pool is filled */
	REQUIRE(pipe(p) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	mr_init(&mine, &pd, buf, 0, sizeof(buf), 0);
	REQUIRE(sv_mr_publish(&mine) == 0);
	if (pid == 0) {
		uint32_t k[2] = { mine.ibv.lkey, mine.ibv.rkey };

		_exit(write(p[1], k, sizeof(k)) == sizeof(k) ? 0 : 1);
	}
	REQUIRE(read(p[0], theirs, sizeof(theirs)) == sizeof(theirs));
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(theirs[0] != mine.ibv.lkey);
	CHECK(theirs[1] != mine.ibv.rkey);
	sv_mr_unpublish(&mine);
	sv_mr_unpublish(&before);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	test_check();
	test_lookup();
	test_drain();
	test_many();
	test_fork_keys();
	return check_done();
}
