/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Asynchronous events, the application's side: ibv_get_async_event and
 * ibv_ack_async_event on the queue core/async.c fills.
 */
#include "verbs/verbs.h"

#include "core/async.h"

#include <stdlib.h>
#include <unistd.h>

#include "util/lockorder.h"

SV_EXPORT int ibv_get_async_event(struct ibv_context *context,
				  struct ibv_async_event *event)
{
	struct sv_context *ctx = to_sv_ctx(context);
	struct sv_async_event *e;
	struct list_node *n;
	uint32_t *cnt;
	char b;

	do {
		/* Blocks, or fails with EAGAIN when the user made the fd
		 * O_NONBLOCK.  A byte without an event belonged to an event
		 * purged by the destroy of its object: read on. */
		if (read(context->async_fd, &b, 1) != 1)
			return -1;
		sv_mutex_lock(&ctx->lock, SV_LOCK_CTX);
		n = list_first(&ctx->async_events);
		if (n) {
			list_del(n);
			e = list_entry(n, struct sv_async_event, node);
			cnt = sv_async_reported(&e->ev);
			if (cnt)
				++*cnt;
		}
		sv_mutex_unlock(&ctx->lock);
	} while (!n);
	e = list_entry(n, struct sv_async_event, node);
	*event = e->ev;
	free(e);
	return 0;
}

/* Acked events let a destroy that waits on events_completed proceed, as
 * rdma-core documents for ibv_destroy_{qp,cq,srq}. */
SV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *mtx;
	pthread_cond_t *cond;
	uint32_t *done;

	switch (sv_async_object(event->event_type)) {
	case SV_ASYNC_CQ: {
		struct ibv_cq *cq = event->element.cq;

		mtx = &cq->mutex;
		cond = &cq->cond;
		done = &cq->async_events_completed;
		break;
	}
	case SV_ASYNC_QP: {
		struct ibv_qp *qp = event->element.qp;

		mtx = &qp->mutex;
		cond = &qp->cond;
		done = &qp->events_completed;
		break;
	}
	case SV_ASYNC_SRQ: {
		struct ibv_srq *srq = event->element.srq;

		mtx = &srq->mutex;
		cond = &srq->cond;
		done = &srq->events_completed;
		break;
	}
	default:
		return; /* port/device events have no object to release */
	}
	sv_mutex_lock(mtx, SV_LOCK_IBV_EVENTS);
	++*done;
	pthread_cond_signal(cond);
	sv_mutex_unlock(mtx);
}
