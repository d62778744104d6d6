/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared pieces of the demo programs (the seeds' walkthroughs, written
 * anew for softverbs): the verbs context one process uses for all its
 * connections (PD, CQ with its completion channel, a thread that waits on
 * the channel and hands each work completion to a callback), and error
 * helpers.  Only the public verbs and rdma_cm APIs are used.
 */
#ifndef DEMO_COMMON_H
#define DEMO_COMMON_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>

/* Print what failed (with errno) and leave: these are demos. */
#define demo_check(cond, what)                                           \
	do {                                                             \
		if (!(cond))                                             \
			demo_die("%s:%d: %s", __FILE__, __LINE__, what); \
	} while (0)

void demo_die(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));

struct demo_ctx {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	void (*on_completion)(struct ibv_wc *wc);
};

/* Set up (once) the context for this device and start the CQ thread;
 * every completion is passed to on_completion in that thread. */
struct demo_ctx *demo_ctx_get(struct ibv_context *verbs,
			      void (*on_completion)(struct ibv_wc *wc));

/* QP attributes the demos use: RC, one CQ for both queues. */
void demo_qp_attr(struct demo_ctx *ctx, struct ibv_qp_init_attr *attr);

/* An event from the channel, copied and acked (so the id may be destroyed
 * while handling it); 0 on success. */
int demo_next_event(struct rdma_event_channel *ec, struct rdma_cm_event *out);

#endif
