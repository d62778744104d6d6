/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The producer side of a completion queue: the engine appends work
 * completions here, and this is where arming is resolved into a
 * completion event on the CQ's channel.
 *
 * The ring holds ncqe slots (a power of 2) of which ncqe - 1 are usable,
 * the capacity reported to the application in cq->cqe.  The channel is a
 * pipe; one event is one 8-byte token written in a single write(2), atomic
 * because it is below PIPE_BUF.
 */
#include "core/cq.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "core/async.h"

/* A thread sleeping for the engine in ibv_get_cq_event (engine.c) takes
 * the first event its own pass makes for its channel from here: the
 * pipe's write and read would only hand it to itself (two system calls
 * on the way from a peer's message to the application).  Later events of
 * the same pass go through the pipe, after it in order. */
static __thread struct sv_comp_channel *grab_ch;
static __thread uint64_t grab_token;
static __thread bool grabbed;

void sv_cq_grab_begin(struct sv_comp_channel *ch)
{
	grab_ch = ch;
	grabbed = false;
}

bool sv_cq_grab_end(uint64_t *token)
{
	grab_ch = NULL;
	if (grabbed)
		*token = grab_token;
	return grabbed;
}

/* Called without cq->lock: the token and the channel never change while
 * the CQ exists.  The write end is non-blocking, so a full pipe (8192
 * events nobody read) cannot stall the engine; the fd is readable then
 * anyway, so the application still wakes. */
static void cq_notify(struct sv_cq *cq)
{
	struct ibv_comp_channel *ch = cq->ex.channel;
	struct sv_comp_channel *sch;
	uint64_t token = cq->chan_token;

	if (!ch)
		return; /* armed without a channel: nobody to tell */
	sch = sv_container_of(ch, struct sv_comp_channel, ibv);
	/* Only while the pipe holds nothing: its events came first. */
	if (sch == grab_ch && !grabbed &&
	    atomic_load(&sch->written) == atomic_load(&sch->taken)) {
		grab_token = token;
		grabbed = true;
		return;
	}
	/* Counted before it is there: a waiter that sees the count looks
	 * into the pipe (and waits for it there if it is not yet). */
	atomic_fetch_add(&sch->written, 1);
	if (write(sch->wfd, &token, sizeof(token)) != sizeof(token))
		sv_warn("CQ %p: completion event lost (%s)", (void *)cq,
			strerror(errno));
}

static void cq_overrun(struct sv_cq *cq)
{
	struct ibv_async_event ev = {
		.element.cq = (struct ibv_cq *)&cq->ex,
		.event_type = IBV_EVENT_CQ_ERR,
	};

	sv_async_post(cq->ctx, &ev);
}

/* Under cq->lock: the armed CQ took a completion it is armed for.  True
 * when its event is due now; else it waits for cq_count completions or,
 * from the first of them, cq_period (*timer_us: start that wait). */
static bool mod_due(struct sv_cq *cq, uint16_t *timer_us)
{
	if (!cq->mod_count && !cq->mod_period_us)
		return true; /* not moderated */
	cq->mod_pending++;
	if (cq->mod_count && cq->mod_pending >= cq->mod_count)
		return true;
	if (cq->mod_period_us && cq->mod_pending == 1)
		*timer_us = cq->mod_period_us;
	return false;
}

/* armed is read without the lock by the progress hint
 * (engine/progress/engine.c): stored atomically. */
static void disarm(struct sv_cq *cq)
{
	__atomic_store_n(&cq->armed, SV_CQ_ARM_NONE, __ATOMIC_RELAXED);
	cq->mod_pending = 0;
}

void sv_cq_mod_expired(struct sv_cq *cq)
{
	bool notify;

	sv_mutex_lock(&cq->lock, SV_LOCK_CQ);
	notify = cq->armed != SV_CQ_ARM_NONE && cq->mod_pending;
	if (notify)
		disarm(cq);
	sv_mutex_unlock(&cq->lock);
	if (notify)
		cq_notify(cq);
}

int sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	bool notify = false, first_overrun = false;
	uint16_t timer_us = 0;
	uint32_t slot;

	sv_mutex_lock(&cq->lock, SV_LOCK_CQ);
	if (cq->tail - cq->head >= cq->ncqe - 1 &&
	    (cq->create_flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)) {
		/* man ibv_create_cq_ex: such a CQ never enters the error
		 * state; the new completion takes the next slot, so the
		 * oldest unpolled one is lost. */
		__atomic_store_n(&cq->head, cq->head + 1, __ATOMIC_RELAXED);
	}
	/* IBA 11.4.2.1 / o11-...: an overrun puts the CQ in error; it
	 * accepts no further completions. */
	if (cq->overrun || cq->tail - cq->head >= cq->ncqe - 1) {
		first_overrun = !cq->overrun;
		cq->overrun = true;
		sv_mutex_unlock(&cq->lock);
		if (first_overrun)
			cq_overrun(cq);
		return ENOSPC;
	}
	slot = cq->tail & (cq->ncqe - 1);
	cq->ring[slot] = *wc;
	/* The timestamp is taken as the completion is generated, so it is
	 * what ibv_wc_read_completion_ts promises. */
	if (cq->ts) {
		cq->ts[slot].dev_ns = sv_clock_ns(CLOCK_MONOTONIC);
		cq->ts[slot].wall_ns = sv_clock_ns(CLOCK_REALTIME);
	}
	/* Pollers peek at tail without the lock (verbs/cq.c cq_pop): the
	 * entry is written before tail says it is there. */
	__atomic_store_n(&cq->tail, cq->tail + 1, __ATOMIC_RELEASE);
	/* IBA 11.4.2.2: an armed CQ signals once, then disarms.  "Solicited"
	 * arming fires for a completion of a solicited message and for any
	 * unsuccessful completion.  Moderation may hold the event back. */
	if ((cq->armed == SV_CQ_ARM_ANY ||
	     (cq->armed == SV_CQ_ARM_SOLICITED &&
	      (solicited || wc->status != IBV_WC_SUCCESS))) &&
	    mod_due(cq, &timer_us)) {
		disarm(cq);
		notify = true;
	}
	sv_mutex_unlock(&cq->lock);
	if (notify)
		cq_notify(cq);
	if (timer_us)
		sv_cq_mod_timer(cq, timer_us);
	return 0;
}

bool sv_cq_has_room(const struct sv_cq *cq)
{
	if (cq->create_flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)
		return true;
	return !__atomic_load_n(&cq->overrun, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&cq->tail, __ATOMIC_RELAXED) -
			       __atomic_load_n(&cq->head, __ATOMIC_RELAXED) <
		       cq->ncqe - 1;
}

void sv_cq_clean(struct sv_cq *cq, uint32_t qp_num)
{
	uint32_t mask = cq->ncqe - 1;
	uint32_t i, keep;

	/* Compact towards the tail, preserving order, so the free-running
	 * head/tail stay valid: keep counts survivors from the newest. */
	sv_mutex_lock(&cq->lock, SV_LOCK_CQ);
	keep = cq->tail;
	for (i = cq->tail; i != cq->head; i--) {
		struct ibv_wc *wc = &cq->ring[(i - 1) & mask];

		if (wc->qp_num == qp_num)
			continue;
		keep--;
		if (keep != i - 1) {
			cq->ring[keep & mask] = *wc;
			if (cq->ts)
				cq->ts[keep & mask] = cq->ts[(i - 1) & mask];
		}
	}
	__atomic_store_n(&cq->head, keep, __ATOMIC_RELAXED);
	sv_mutex_unlock(&cq->lock);
}
