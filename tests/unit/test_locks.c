/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The locks whose fast sides use no locked instruction (util/qlock.h,
 * util/readlock.h): mutual exclusion and read/write exclusion under real
 * contention, through every mode they have.
 *
 * qlock: the owner's biased path, other threads revoking and giving the
 * bias back, and, past SV_QLOCK_REVOKES revocations, the spin lock alone;
 * a counter updated non-atomically inside must come out exact, and no two
 * threads may ever be inside at once.
 * readlock: readers check an invariant a writer breaks only inside its
 * write section; no reader may see it broken, writers must get through
 * while readers stream.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "check.h"
#include "util/membarrier.h"
#include "util/qlock.h"
#include "util/readlock.h"

#define ROUNDS 200000

static sv_qlock_t q;
static volatile uint64_t counter; /* only under q */
static _Atomic int inside;
static _Atomic int overlaps;

static void qlock_round(void)
{
	sv_qlock_lock(&q, SV_LOCK_SQ);
	if (atomic_fetch_add(&inside, 1))
		atomic_fetch_add(&overlaps, 1);
	counter = counter + 1;
	atomic_fetch_sub(&inside, 1);
	sv_qlock_unlock(&q);
}

static void *qlock_other(void *arg)
{
	int i, n = *(int *)arg;

	for (i = 0; i < n; i++) {
		qlock_round();
		if (!(i % 64))
			sched_yield();
	}
	return NULL;
}

static void test_qlock(void)
{
	pthread_t t[2];
	int i, few = 8, many = ROUNDS;

	sv_qlock_init(&q);
	counter = 0;
	/* The owner alone: the bias is claimed by the first lock. */
	for (i = 0; i < 1000; i++)
		qlock_round();
	CHECK_EQ(counter, 1000);
	if (sv_membarrier_ok()) {
		CHECK(atomic_load(&q.owner) == &sv_qlock_self);
		CHECK(!atomic_load(&q.revoked));
	}
	/* A few posts from another thread while the owner posts: each
	 * revokes, and the bias comes back. */
	REQUIRE(pthread_create(&t[0], NULL, qlock_other, &few) == 0);
	for (i = 0; i < 20000; i++)
		qlock_round();
	pthread_join(t[0], NULL);
	CHECK_EQ(counter, 1000 + 20000 + few);
	if (sv_membarrier_ok()) {
		CHECK_EQ(q.revokes, few);
		CHECK(!atomic_load(&q.revoked));
	}
	/* Two other threads for good: past SV_QLOCK_REVOKES revocations
	 * the lock stays a spin lock. */
	for (i = 0; i < 2; i++)
		REQUIRE(pthread_create(&t[i], NULL, qlock_other, &many) == 0);
	for (i = 0; i < ROUNDS; i++)
		qlock_round();
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(counter, 1000 + 20000 + few + 3 * (uint64_t)ROUNDS);
	CHECK_EQ(atomic_load(&overlaps), 0);
	if (sv_membarrier_ok())
		CHECK(atomic_load(&q.revoked));
}

static struct sv_readlock rl;
static volatile uint64_t pair_a, pair_b; /* equal outside a write */
static _Atomic bool stop;
static _Atomic uint64_t torn, reads;

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t a, b;

		sv_read_lock(&rl, SV_LOCK_KEYS);
		a = pair_a;
		sched_yield(); /* let a writer try to slip in */
		b = pair_b;
		sv_read_unlock(&rl);
		if (a != b)
			atomic_fetch_add(&torn, 1);
		atomic_fetch_add(&reads, 1);
	}
	return NULL;
}

static void test_readlock(void)
{
	pthread_t t[3];
	int i;

	sv_readlock_init(&rl);
	for (i = 0; i < 3; i++)
		REQUIRE(pthread_create(&t[i], NULL, reader, NULL) == 0);
	for (i = 0; i < 2000; i++) {
		sv_write_lock(&rl, SV_LOCK_KEYS);
		pair_a = pair_a + 1;
		sched_yield(); /* a reader inside now would see a != b */
		pair_b = pair_b + 1;
		sv_write_unlock(&rl);
		sched_yield(); /* and readers in between */
	}
	atomic_store(&stop, true);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(pair_a, 2000);
	CHECK_EQ(pair_b, 2000);
	CHECK_EQ(atomic_load(&torn), 0);
	CHECK(atomic_load(&reads) > 0);
	printf("readlock: %s mode, %llu reads beside 2000 writes\n",
	       rl.asym ? "membarrier" : "counter",
	       (unsigned long long)atomic_load(&reads));
}

int main(void)
{
	test_qlock();
	test_readlock();
	return check_done();
}
