/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Asynchronous events: the per-context queue the engine, the CQs and the
 * address monitor post to (core/async.c), and which object an event is
 * about.
 */
#ifndef SV_CORE_ASYNC_H
#define SV_CORE_ASYNC_H

#include <infiniband/verbs.h>

#include "core/objects.h"

/* Queue an async event on a context and make its fd readable. */
void sv_async_post(struct sv_context *ctx, const struct ibv_async_event *ev);

/* Drop the queued, unread events of the object whose counter of
 * handed-out events is `reported` (its async_events_reported), and return
 * that count: what destroy waits to see acked.  Call once the object can
 * raise no more events. */
uint32_t sv_async_purge(struct sv_context *ctx, uint32_t *reported);

/* What kind of object an event is about (port and device events: none). */
enum sv_async_obj { SV_ASYNC_NONE, SV_ASYNC_CQ, SV_ASYNC_QP, SV_ASYNC_SRQ };
enum sv_async_obj sv_async_object(enum ibv_event_type type);

/* The counter of events handed out for the object an event is about (NULL
 * for port and device events); destroy waits until the application has
 * acked that many, as rdma-core's destroy_{cq,qp,srq} do. */
uint32_t *sv_async_reported(const struct ibv_async_event *ev);

#endif
