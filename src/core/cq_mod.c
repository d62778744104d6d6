/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The time half of completion moderation (ibv_modify_cq's cq_period): one
 * thread per process that signals an armed CQ whose first moderated
 * completion has waited cq_period microseconds without cq_count others
 * joining it.  The count half needs no thread and is decided where the
 * completion is pushed (core/cq.c).
 *
 * The thread runs while at least one CQ of the process has a period set
 * (mod.ntimed), so a program that never moderates never has it.  A CQ is
 * on the timer list from its first moderated completion until its
 * deadline passes or it is destroyed; the list is short (CQs waiting for
 * an event), so the thread walks it.
 *
 * Locks: mod.life serialises starting and stopping the thread (and the
 * join); mod.lock guards the list, the deadlines and the thread's stop
 * flag, and the thread takes a CQ's lock under it (util/lockorder.h).  A
 * CQ on the list is alive while mod.lock is held: destroy unlinks it under
 * that lock first.
 */
#include "core/cq.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/lockorder.h"
#include "util/log.h"

static struct {
	pthread_mutex_t life;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled on a new deadline */
	struct list_head timers;
	unsigned int ntimed; /* CQs with a period: the thread runs while > 0 */
	pthread_t thread;
	bool running, stop;
} mod = {
	.life = PTHREAD_MUTEX_INITIALIZER,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.timers = LIST_HEAD_INIT(mod.timers),
};

static pthread_once_t mod_once = PTHREAD_ONCE_INIT;

static void cond_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&mod.cond, &a);
	pthread_condattr_destroy(&a);
}

/* A forked child has no timer thread and its inherited CQs are unusable
 * (as with rdma-core): it starts from nothing. */
static void atfork_child(void)
{
	pthread_mutex_init(&mod.life, NULL);
	pthread_mutex_init(&mod.lock, NULL);
	cond_init();
	list_head_init(&mod.timers);
	mod.ntimed = 0;
	mod.running = false;
	mod.stop = false;
}

static void mod_init(void)
{
	cond_init();
	pthread_atfork(NULL, NULL, atfork_child);
}

static void *timer_thread(void *arg)
{
	(void)arg;
	sv_mutex_lock(&mod.lock, SV_LOCK_CQ_MOD);
	while (!mod.stop) {
		uint64_t now = sv_now_ns(), next = UINT64_MAX;
		struct list_node *it, *tmp;

		list_for_each_safe (&mod.timers, it, tmp) {
			struct sv_cq *cq =
				list_entry(it, struct sv_cq, mod_node);

			if (cq->mod_deadline_ns <= now) {
				list_del(&cq->mod_node);
				sv_cq_mod_expired(cq);
			} else if (cq->mod_deadline_ns < next) {
				next = cq->mod_deadline_ns;
			}
		}
		if (next == UINT64_MAX) {
			sv_cond_wait(&mod.cond, &mod.lock);
		} else {
			struct timespec ts = {
				.tv_sec = (time_t)(next / 1000000000ULL),
				.tv_nsec = (long)(next % 1000000000ULL),
			};

			sv_cond_timedwait(&mod.cond, &mod.lock, &ts);
		}
	}
	sv_mutex_unlock(&mod.lock);
	return NULL;
}

/* Under mod.life: start the thread for the first timed CQ, stop it after
 * the last.  Returns 0 or the errno of pthread_create. */
static int thread_follow(void)
{
	pthread_t t;
	int err;

	sv_mutex_lock(&mod.lock, SV_LOCK_CQ_MOD);
	if (mod.ntimed && !mod.running) {
		mod.stop = false;
		err = pthread_create(&mod.thread, NULL, timer_thread, NULL);
		if (err) {
			sv_mutex_unlock(&mod.lock);
			return err;
		}
		mod.running = true;
	} else if (!mod.ntimed && mod.running) {
		mod.stop = true;
		mod.running = false;
		t = mod.thread;
		pthread_cond_signal(&mod.cond);
		sv_mutex_unlock(&mod.lock);
		pthread_join(t, NULL);
		return 0;
	}
	sv_mutex_unlock(&mod.lock);
	return 0;
}

int sv_cq_moderate(struct sv_cq *cq, uint16_t count, uint16_t period_us)
{
	bool timed = period_us != 0;
	int err = 0;

	pthread_once(&mod_once, mod_init);
	sv_mutex_lock(&mod.life, SV_LOCK_CQ_MOD_LIFE);
	if (timed != cq->mod_timed) {
		sv_mutex_lock(&mod.lock, SV_LOCK_CQ_MOD);
		if (timed)
			mod.ntimed++;
		else
			mod.ntimed--;
		sv_mutex_unlock(&mod.lock);
		err = thread_follow();
		if (err) {
			/* No thread: the CQ keeps what it had. */
			sv_mutex_lock(&mod.lock, SV_LOCK_CQ_MOD);
			mod.ntimed--;
			sv_mutex_unlock(&mod.lock);
			sv_mutex_unlock(&mod.life);
			sv_warn("ibv_modify_cq: no moderation timer thread (%s)",
				strerror(err));
			return err;
		}
		cq->mod_timed = timed;
	}
	sv_mutex_lock(&cq->lock, SV_LOCK_CQ);
	cq->mod_count = count;
	cq->mod_period_us = period_us;
	sv_mutex_unlock(&cq->lock);
	sv_mutex_unlock(&mod.life);
	return 0;
}

void sv_cq_mod_timer(struct sv_cq *cq, uint16_t period_us)
{
	uint64_t deadline = sv_now_ns() + (uint64_t)period_us * 1000;

	pthread_once(&mod_once, mod_init);
	sv_mutex_lock(&mod.lock, SV_LOCK_CQ_MOD);
	/* A later first completion (a new burst after an event) restarts
	 * the wait: the period runs from the first of its burst. */
	cq->mod_deadline_ns = deadline;
	if (cq->mod_node.next == &cq->mod_node)
		list_add_tail(&mod.timers, &cq->mod_node);
	pthread_cond_signal(&mod.cond);
	sv_mutex_unlock(&mod.lock);
}

void sv_cq_mod_forget(struct sv_cq *cq)
{
	pthread_once(&mod_once, mod_init);
	sv_mutex_lock(&mod.life, SV_LOCK_CQ_MOD_LIFE);
	sv_mutex_lock(&mod.lock, SV_LOCK_CQ_MOD);
	if (cq->mod_node.next != &cq->mod_node)
		list_del(&cq->mod_node);
	if (cq->mod_timed && mod.ntimed)
		mod.ntimed--;
	cq->mod_timed = false;
	sv_mutex_unlock(&mod.lock);
	thread_follow();
	sv_mutex_unlock(&mod.life);
}
