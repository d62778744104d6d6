/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Send/receive demo: what client and server share (sendrecv-common.h).
 */
#include "sendrecv-common.h"

#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void outstanding_add(struct sr_conn *c, int n)
{
	pthread_mutex_lock(&c->lock);
	c->outstanding += n;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void on_completion(struct ibv_wc *wc)
{
	struct sr_conn *c = (struct sr_conn *)(uintptr_t)wc->wr_id;
	bool closing;

	pthread_mutex_lock(&c->lock);
	closing = c->closing;
	pthread_mutex_unlock(&c->lock);
	if (wc->status != IBV_WC_SUCCESS) {
		if (!closing)
			demo_die("completion failed: %s",
				 ibv_wc_status_str(wc->status));
		outstanding_add(c, -1); /* flushed by the teardown */
		return;
	}
	if (wc->opcode & IBV_WC_RECV)
		printf("received message: %s\n", c->recv_region);
	else if (wc->opcode == IBV_WC_SEND)
		printf("send completed successfully.\n");
	fflush(stdout);
	if (++c->completions == 2 && c->on_both)
		c->on_both(c);
	outstanding_add(c, -1);
}

struct sr_conn *sr_conn_new(struct rdma_cm_id *id,
			    void (*on_both)(struct sr_conn *c))
{
	struct demo_ctx *ctx = demo_ctx_get(id->verbs, on_completion);
	struct ibv_qp_init_attr attr;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	struct sr_conn *c;

	demo_qp_attr(ctx, &attr);
	demo_check(rdma_create_qp(id, ctx->pd, &attr) == 0, "rdma_create_qp");

	c = calloc(1, sizeof(*c));
	demo_check(c, "calloc");
	c->id = id;
	c->on_both = on_both;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	id->context = c;
	c->recv_region = calloc(1, SR_BUFFER_SIZE);
	c->send_region = calloc(1, SR_BUFFER_SIZE);
	demo_check(c->recv_region && c->send_region, "calloc");
	c->recv_mr = ibv_reg_mr(ctx->pd, c->recv_region, SR_BUFFER_SIZE,
				IBV_ACCESS_LOCAL_WRITE);
	c->send_mr = ibv_reg_mr(ctx->pd, c->send_region, SR_BUFFER_SIZE, 0);
	demo_check(c->recv_mr && c->send_mr, "ibv_reg_mr");

	/* The receive is posted before the connection can carry anything. */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)c;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	sge.addr = (uintptr_t)c->recv_region;
	sge.length = SR_BUFFER_SIZE;
	sge.lkey = c->recv_mr->lkey;
	outstanding_add(c, 1);
	demo_check(ibv_post_recv(id->qp, &wr, &bad) == 0, "ibv_post_recv");
	return c;
}

void sr_send_message(struct sr_conn *c, const char *side)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	snprintf(c->send_region, SR_BUFFER_SIZE,
		 "message from %s side with pid %d", side, (int)getpid());
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)c;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	sge.addr = (uintptr_t)c->send_region;
	sge.length = SR_BUFFER_SIZE;
	sge.lkey = c->send_mr->lkey;
	outstanding_add(c, 1);
	demo_check(ibv_post_send(c->id->qp, &wr, &bad) == 0, "ibv_post_send");
}

void sr_conn_free(struct sr_conn *c)
{
	struct timespec until;

	pthread_mutex_lock(&c->lock);
	c->closing = true;
	pthread_mutex_unlock(&c->lock);
	rdma_disconnect(c->id); /* ERROR flushes what is still posted */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&c->lock);
	while (c->outstanding > 0 &&
	       pthread_cond_timedwait(&c->cond, &c->lock, &until) == 0)
		;
	if (c->outstanding > 0)
		demo_die("%d work requests never completed", c->outstanding);
	pthread_mutex_unlock(&c->lock);
	rdma_destroy_qp(c->id);
	ibv_dereg_mr(c->recv_mr);
	ibv_dereg_mr(c->send_mr);
	free(c->recv_region);
	free(c->send_region);
	free(c);
}
