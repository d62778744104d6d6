/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Asynchronous events, the device's side: a queue per context behind a real
 * file descriptor (a pipe: one byte per queued event), so applications can
 * poll/epoll the fd, set O_NONBLOCK on it, or block in ibv_get_async_event
 * (verbs/async.c).  The engine and the CQs post here, below the verbs
 * layer.
 */
#include "core/async.h"

#include <stdlib.h>
#include <unistd.h>

#include "util/lockorder.h"
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
	sv_mutex_lock(&ctx->lock, SV_LOCK_CTX);
	list_add_tail(&ctx->async_events, &e->node);
	sv_mutex_unlock(&ctx->lock);
	if (write(ctx->async_pipe[1], &b, 1) != 1)
		sv_err("async event %d: cannot signal the fd", ev->event_type);
}

enum sv_async_obj sv_async_object(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return SV_ASYNC_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return SV_ASYNC_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return SV_ASYNC_SRQ;
	default:
		return SV_ASYNC_NONE;
	}
}

uint32_t *sv_async_reported(const struct ibv_async_event *ev)
{
	switch (sv_async_object(ev->event_type)) {
	case SV_ASYNC_CQ:
		return &to_sv_cq(ev->element.cq)->async_events_reported;
	case SV_ASYNC_QP:
		return &to_sv_qp(ev->element.qp)->async_events_reported;
	case SV_ASYNC_SRQ:
		return &to_sv_srq(ev->element.srq)->async_events_reported;
	default:
		return NULL;
	}
}

uint32_t sv_async_purge(struct sv_context *ctx, uint32_t *reported)
{
	struct list_node *it, *tmp;
	uint32_t n;

	sv_mutex_lock(&ctx->lock, SV_LOCK_CTX);
	list_for_each_safe (&ctx->async_events, it, tmp) {
		struct sv_async_event *e =
			list_entry(it, struct sv_async_event, node);

		if (sv_async_reported(&e->ev) == reported) {
			list_del(it);
			free(e);
		}
	}
	n = *reported;
	sv_mutex_unlock(&ctx->lock);
	return n;
}
