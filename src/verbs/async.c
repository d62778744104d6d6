/*
 * Asynchronous events: a queue per context behind a real file descriptor
 * (a pipe: one byte per queued event), so applications can poll/epoll the
 * fd, set O_NONBLOCK on it, or block in ibv_get_async_event.
 */
#include "verbs/verbs.h"

#include <stdlib.h>
#include <unistd.h>

#include "util/log.h"

void sv_async_post(struct sv_context *ctx, const struct ibv_async_event *ev)
{
	struct sv_async_event *e = calloc(1, sizeof(*e));
	char b = 1;

	if (!e) {
		sv_err("async event %d lost: out of memory", ev->event_type);
		return;
	}
	e->ev = *ev;
	pthread_mutex_lock(&ctx->lock);
	list_add_tail(&ctx->async_events, &e->node);
	pthread_mutex_unlock(&ctx->lock);
	if (write(ctx->async_pipe[1], &b, 1) != 1)
		sv_err("async event %d: cannot signal the fd", ev->event_type);
}

/* The counter of events handed out for the object an event is about
 * (NULL for port and device events); destroy waits until the application
 * has acked that many, as rdma-core's destroy_{cq,qp,srq} do. */
static uint32_t *reported_counter(const struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		return &to_sv_cq(ev->element.cq)->async_events_reported;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return &to_sv_qp(ev->element.qp)->async_events_reported;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return &to_sv_srq(ev->element.srq)->async_events_reported;
	default:
		return NULL;
	}
}

uint32_t sv_async_purge(struct sv_context *ctx, uint32_t *reported)
{
	struct list_node *it, *tmp;
	uint32_t n;

	pthread_mutex_lock(&ctx->lock);
	list_for_each_safe(&ctx->async_events, it, tmp) {
		struct sv_async_event *e = list_entry(it, struct sv_async_event, node);

		if (reported_counter(&e->ev) == reported) {
			list_del(it);
			free(e);
		}
	}
	n = *reported;
	pthread_mutex_unlock(&ctx->lock);
	return n;
}

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
		pthread_mutex_lock(&ctx->lock);
		n = list_first(&ctx->async_events);
		if (n) {
			list_del(n);
			e = list_entry(n, struct sv_async_event, node);
			cnt = reported_counter(&e->ev);
			if (cnt)
				++*cnt;
		}
		pthread_mutex_unlock(&ctx->lock);
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

	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct ibv_cq *cq = event->element.cq;

		mtx = &cq->mutex; cond = &cq->cond; done = &cq->async_events_completed;
		break;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct ibv_qp *qp = event->element.qp;

		mtx = &qp->mutex; cond = &qp->cond; done = &qp->events_completed;
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct ibv_srq *srq = event->element.srq;

		mtx = &srq->mutex; cond = &srq->cond; done = &srq->events_completed;
		break;
	}
	default:
		return; /* port/device events have no object to release */
	}
	pthread_mutex_lock(mtx);
	++*done;
	pthread_cond_signal(cond);
	pthread_mutex_unlock(mtx);
}
