/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The verbs context shared by a demo process, its completion thread and
 * the error helpers (see demo-common.h).
 */
#include "demo-common.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

void demo_die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (%s)\n", strerror(err));
	exit(EXIT_FAILURE);
}

static struct demo_ctx *the_ctx;

/* Wait on the completion channel, re-arm, drain the CQ: the completion
 * callback runs here, never in the connection event loop. */
static void *cq_thread(void *arg)
{
	struct demo_ctx *ctx = arg;

	for (;;) {
		struct ibv_cq *cq;
		struct ibv_wc wc;
		void *cq_ctx;

		demo_check(ibv_get_cq_event(ctx->channel, &cq, &cq_ctx) == 0,
			   "ibv_get_cq_event");
		ibv_ack_cq_events(cq, 1);
		demo_check(ibv_req_notify_cq(cq, 0) == 0, "ibv_req_notify_cq");
		while (ibv_poll_cq(cq, 1, &wc) == 1)
			ctx->on_completion(&wc);
	}
	return NULL;
}

struct demo_ctx *demo_ctx_get(struct ibv_context *verbs,
			      void (*on_completion)(struct ibv_wc *wc))
{
	pthread_t thread;

	if (the_ctx) {
		/* One device is all these demos handle. */
		if (the_ctx->verbs != verbs)
			demo_die("events from a second device");
		return the_ctx;
	}
	the_ctx = calloc(1, sizeof(*the_ctx));
	demo_check(the_ctx, "calloc");
	the_ctx->verbs = verbs;
	the_ctx->on_completion = on_completion;
	the_ctx->pd = ibv_alloc_pd(verbs);
	demo_check(the_ctx->pd, "ibv_alloc_pd");
	the_ctx->channel = ibv_create_comp_channel(verbs);
	demo_check(the_ctx->channel, "ibv_create_comp_channel");
	the_ctx->cq = ibv_create_cq(verbs, 16, NULL, the_ctx->channel, 0);
	demo_check(the_ctx->cq, "ibv_create_cq");
	demo_check(ibv_req_notify_cq(the_ctx->cq, 0) == 0, "ibv_req_notify_cq");
	demo_check(pthread_create(&thread, NULL, cq_thread, the_ctx) == 0,
		   "pthread_create");
	pthread_detach(thread);
	return the_ctx;
}

void demo_qp_attr(struct demo_ctx *ctx, struct ibv_qp_init_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->send_cq = ctx->cq;
	attr->recv_cq = ctx->cq;
	attr->qp_type = IBV_QPT_RC;
	attr->cap.max_send_wr = 10;
	attr->cap.max_recv_wr = 10;
	attr->cap.max_send_sge = 1;
	attr->cap.max_recv_sge = 1;
}

int demo_next_event(struct rdma_event_channel *ec, struct rdma_cm_event *out)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ec, &ev))
		return -1;
	*out = *ev;
	rdma_ack_cm_event(ev);
	return 0;
}
