/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The lock order's run-time check (util/lockorder.h), compiled in here
 * whatever the build: locks taken in order pass; taken out of order, twice,
 * released without being held or waited on above another, the process
 * aborts with one line naming both locks and ranks (each checked in a
 * forked child, its stderr read back).  The documented exceptions pass: a
 * trylock out of order, an error-checking mutex relocked by its holder.
 */
#ifndef SV_LOCKCHECK
#define SV_LOCKCHECK 1
#endif

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "util/lockorder.h"
#include "util/qlock.h"
#include "util/readlock.h"

static pthread_mutex_t eng_m = PTHREAD_MUTEX_INITIALIZER; /* as ENGINE */
static pthread_mutex_t cq_m = PTHREAD_MUTEX_INITIALIZER; /* as CQ */
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct sv_readlock rl;
static sv_qlock_t q;

/* Run fn in a child; its exit signal and what it wrote to stderr. */
static int in_child(void (*fn)(void), char *out, size_t len)
{
	int p[2], status = 0;
	ssize_t n, got = 0;
	pid_t pid;

	REQUIRE(pipe(p) == 0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		fn();
		_exit(0);
	}
	close(p[1]);
	while ((size_t)got < len - 1 &&
	       (n = read(p[0], out + got, len - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = 0;
	close(p[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid);
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/* The line must name the lock taken and the one held, with ranks. */
static void expect_abort(void (*fn)(void), const char *what,
			 enum sv_lock_rank taken, enum sv_lock_rank holding)
{
	char out[2048], want[256];
	int sig = in_child(fn, out, sizeof(out));

	CHECK_EQ(sig, SIGABRT);
	CHECK(strstr(out, what) != NULL);
	snprintf(want, sizeof(want), "%s [rank %d]", sv_lock_name(taken),
		 (int)taken);
	CHECK(strstr(out, want) != NULL);
	snprintf(want, sizeof(want), "while holding %s [rank %d]",
		 sv_lock_name(holding), (int)holding);
	CHECK(strstr(out, want) != NULL);
	if (check_failed)
		fprintf(stderr, "child said: %s\n", out);
}

static void test_names(void)
{
	int r, s;

	/* Every rank has its own name (the messages are read by people). */
	for (r = SV_LOCK_NONE + 1; r < SV_LOCK_NRANKS; r++) {
		CHECK(strcmp(sv_lock_name(r), "?") != 0);
		for (s = SV_LOCK_NONE + 1; s < r; s++)
			CHECK(strcmp(sv_lock_name(r), sv_lock_name(s)) != 0);
	}
	CHECK(strcmp(sv_lock_name(SV_LOCK_NRANKS), "?") == 0);
}

static void test_in_order(void)
{
	struct timespec ts;

	CHECK_EQ(sv_lockorder_held(), 0);
	CHECK_EQ(sv_mutex_lock(&eng_m, SV_LOCK_ENGINE), 0);
	CHECK_EQ(sv_mutex_lock(&cq_m, SV_LOCK_CQ), 0);
	CHECK_EQ(sv_lockorder_held(), 2);
	/* Released out of order (paths/chan.c does): fine. */
	sv_mutex_unlock(&eng_m);
	sv_mutex_unlock(&cq_m);
	CHECK_EQ(sv_lockorder_held(), 0);

	/* A wait on the highest lock held, lower ones held too. */
	sv_mutex_lock(&eng_m, SV_LOCK_ENGINE);
	sv_mutex_lock(&cq_m, SV_LOCK_CQ);
	clock_gettime(CLOCK_REALTIME, &ts);
	CHECK_EQ(sv_cond_timedwait(&cond, &cq_m, &ts), ETIMEDOUT);
	sv_mutex_unlock(&cq_m);
	sv_mutex_unlock(&eng_m);

	/* The custom locks: key table (read, write), then a queue. */
	sv_read_lock(&rl, SV_LOCK_KEYS);
	sv_read_unlock(&rl);
	sv_write_lock(&rl, SV_LOCK_KEYS);
	sv_write_unlock(&rl);
	sv_qlock_lock(&q, SV_LOCK_SQ);
	sv_read_lock(&rl, SV_LOCK_KEYS);
	CHECK_EQ(sv_lockorder_held(), 2);
	sv_read_unlock(&rl);
	sv_qlock_unlock(&q);
	CHECK_EQ(sv_lockorder_held(), 0);
}

static void test_exceptions(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t ec;

	/* A trylock out of order cannot wait: allowed (engine/transport/error.c). */
	sv_mutex_lock(&eng_m, SV_LOCK_ENGINE);
	CHECK_EQ(sv_mutex_trylock(&cq_m, SV_LOCK_QP_STATE), 0);
	CHECK_EQ(sv_lockorder_held(), 2);
	sv_mutex_unlock(&cq_m);
	sv_mutex_unlock(&eng_m);

	/* An error-checking mutex relocked by its holder (verbs/qp_ex.c). */
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&ec, &a);
	CHECK_EQ(sv_mutex_lock_errcheck(&ec, SV_LOCK_WR_BATCH), 0);
	CHECK_EQ(sv_mutex_lock_errcheck(&ec, SV_LOCK_WR_BATCH), EDEADLK);
	CHECK_EQ(sv_lockorder_held(), 1);
	sv_mutex_unlock(&ec);
	CHECK_EQ(sv_lockorder_held(), 0);
	pthread_mutex_destroy(&ec);
	pthread_mutexattr_destroy(&a);
}

static void inverted(void)
{
	sv_mutex_lock(&cq_m, SV_LOCK_CQ);
	sv_mutex_lock(&eng_m, SV_LOCK_ENGINE);
}

static void twice(void)
{
	sv_mutex_lock(&eng_m, SV_LOCK_ENGINE);
	sv_mutex_lock(&eng_m, SV_LOCK_ENGINE);
}

static void same_rank(void)
{
	sv_mutex_lock(&eng_m, SV_LOCK_ENGINE);
	sv_mutex_lock(&cq_m, SV_LOCK_ENGINE);
}

static void queue_under_keys(void)
{
	sv_read_lock(&rl, SV_LOCK_KEYS);
	sv_qlock_lock(&q, SV_LOCK_SQ);
}

static void wait_under_higher(void)
{
	sv_mutex_lock(&eng_m, SV_LOCK_ENGINE);
	sv_mutex_lock(&cq_m, SV_LOCK_CQ);
	sv_cond_wait(&cond, &eng_m);
}

static void unlock_not_held(void)
{
	sv_mutex_unlock(&eng_m);
}

static void test_violations(void)
{
	char out[1024];

	expect_abort(inverted, "lock order: taking", SV_LOCK_ENGINE,
		     SV_LOCK_CQ);
	expect_abort(twice, "lock order: taking again", SV_LOCK_ENGINE,
		     SV_LOCK_ENGINE);
	expect_abort(same_rank, "lock order: taking", SV_LOCK_ENGINE,
		     SV_LOCK_ENGINE);
	expect_abort(queue_under_keys, "lock order: taking", SV_LOCK_SQ,
		     SV_LOCK_KEYS);
	expect_abort(wait_under_higher, "waiting on (and retaking)",
		     SV_LOCK_ENGINE, SV_LOCK_CQ);
	CHECK_EQ(in_child(unlock_not_held, out, sizeof(out)), SIGABRT);
	CHECK(strstr(out, "releasing a lock not held") != NULL);
}

int main(void)
{
	sv_readlock_init(&rl);
	sv_qlock_init(&q);
	test_names();
	test_in_order();
	test_exceptions();
	test_violations();
	return check_done();
}
