/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA read/write demo's shared verbs code (rw-common.h): regions,
 * the MR/DONE messages and the completion-driven exchange.
 */
#include "rw-common.h"

#include <endian.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum rw_mode rw_mode;

bool rw_parse_mode(const char *s)
{
	if (!strcmp(s, "read"))
		rw_mode = RW_READ;
	else if (!strcmp(s, "write"))
		rw_mode = RW_WRITE;
	else
		return false;
	return true;
}

void rw_conn_param(struct rdma_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->initiator_depth = 1;
	p->responder_resources = 1;
	p->rnr_retry_count = 7; /* 7: retry forever */
}

static void outstanding_add(struct rw_conn *c, int n)
{
	pthread_mutex_lock(&c->lock);
	c->outstanding += n;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void post_receive(struct rw_conn *c)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)c;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	sge.addr = (uintptr_t)c->recv_msg;
	sge.length = sizeof(*c->recv_msg);
	sge.lkey = c->recv_mr->lkey;
	outstanding_add(c, 1);
	demo_check(ibv_post_recv(c->id->qp, &wr, &bad) == 0, "ibv_post_recv");
}

/* Sends wait until the connection is established (the passive side may
 * get the peer's first message before its own ESTABLISHED event). */
static void send_msg(struct rw_conn *c, uint32_t type)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	pthread_mutex_lock(&c->lock);
	while (!c->connected)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);

	memset(c->send_msg, 0, sizeof(*c->send_msg));
	c->send_msg->type = htobe32(type);
	if (type == RW_MSG_MR) {
		pthread_mutex_lock(&c->lock);
		c->mr_posted = true;
		pthread_mutex_unlock(&c->lock);
		c->send_msg->addr = htobe64((uintptr_t)c->exposed);
		c->send_msg->rkey = htobe32(c->exposed_mr->rkey);
		c->send_msg->length = htobe32(RW_BUFFER_SIZE);
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)c;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	sge.addr = (uintptr_t)c->send_msg;
	sge.length = sizeof(*c->send_msg);
	sge.lkey = c->send_mr->lkey;
	outstanding_add(c, 1);
	demo_check(ibv_post_send(c->id->qp, &wr, &bad) == 0, "ibv_post_send");
}

static void post_rdma(struct rw_conn *c)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	if (rw_mode == RW_WRITE)
		printf("received MSG_MR. writing message to remote memory...\n");
	else
		printf("received MSG_MR. reading message from remote memory...\n");
	fflush(stdout);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)c;
	wr.opcode = rw_mode == RW_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = c->peer_addr;
	wr.wr.rdma.rkey = c->peer_rkey;
	sge.addr = (uintptr_t)c->local;
	sge.length =
		c->peer_len < RW_BUFFER_SIZE ? c->peer_len : RW_BUFFER_SIZE;
	sge.lkey = c->local_mr->lkey;
	outstanding_add(c, 1);
	demo_check(ibv_post_send(c->id->qp, &wr, &bad) == 0, "ibv_post_send");
	c->rdma_posted = true;
	/* A send queue executes in order: the peer gets DONE only
	 * after our RDMA operation on its memory. */
	send_msg(c, RW_MSG_DONE);
}

static void handle(struct rw_conn *c, struct ibv_wc *wc);

static void on_completion(struct ibv_wc *wc)
{
	struct rw_conn *c = (struct rw_conn *)(uintptr_t)wc->wr_id;
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
	handle(c, wc);
	outstanding_add(c, -1);
}

static void handle(struct rw_conn *c, struct ibv_wc *wc)
{
	bool answer;

	if (wc->opcode & IBV_WC_RECV) {
		if (be32toh(c->recv_msg->type) == RW_MSG_MR) {
			c->peer_addr = be64toh(c->recv_msg->addr);
			c->peer_rkey = be32toh(c->recv_msg->rkey);
			c->peer_len = be32toh(c->recv_msg->length);
			c->mr_received = true;
			post_receive(c); /* for the DONE to come */
			pthread_mutex_lock(&c->lock);
			answer = !c->mr_posted;
			pthread_mutex_unlock(&c->lock);
			if (answer)
				send_msg(c, RW_MSG_MR); /* answer with ours */
		} else if (be32toh(c->recv_msg->type) == RW_MSG_DONE) {
			c->done_received = true;
		} else {
			demo_die("bogus message type %u",
				 be32toh(c->recv_msg->type));
		}
	} else {
		printf("send completed successfully.\n");
		fflush(stdout);
		if (wc->opcode == IBV_WC_SEND) {
			if (!c->mr_sent)
				c->mr_sent = true;
			else if (c->rdma_posted)
				c->done_sent = true;
		}
	}
	if (c->mr_sent && c->mr_received && !c->rdma_posted)
		post_rdma(c);
	if (c->done_sent && c->done_received && !c->finished) {
		c->finished = true;
		printf("remote buffer: %s\n",
		       rw_mode == RW_WRITE ? c->exposed : c->local);
		fflush(stdout);
		demo_check(rdma_disconnect(c->id) == 0, "rdma_disconnect");
	}
}

struct rw_conn *rw_conn_new(struct rdma_cm_id *id, const char *side)
{
	struct demo_ctx *ctx = demo_ctx_get(id->verbs, on_completion);
	struct ibv_qp_init_attr attr;
	struct rw_conn *c;
	char *mine;

	demo_qp_attr(ctx, &attr);
	demo_check(rdma_create_qp(id, ctx->pd, &attr) == 0, "rdma_create_qp");

	c = calloc(1, sizeof(*c));
	demo_check(c, "calloc");
	c->id = id;
	id->context = c;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->recv_msg = calloc(1, sizeof(*c->recv_msg));
	c->send_msg = calloc(1, sizeof(*c->send_msg));
	c->local = calloc(1, RW_BUFFER_SIZE);
	c->exposed = calloc(1, RW_BUFFER_SIZE);
	demo_check(c->recv_msg && c->send_msg && c->local && c->exposed,
		   "calloc");
	c->recv_mr = ibv_reg_mr(ctx->pd, c->recv_msg, sizeof(*c->recv_msg),
				IBV_ACCESS_LOCAL_WRITE);
	c->send_mr = ibv_reg_mr(ctx->pd, c->send_msg, sizeof(*c->send_msg), 0);
	/* Writing: our region is only read locally, the exposed one is
	 * written by the peer.  Reading: the peer's message lands in ours,
	 * and the exposed one is read by the peer. */
	c->local_mr =
		ibv_reg_mr(ctx->pd, c->local, RW_BUFFER_SIZE,
			   rw_mode == RW_WRITE ? 0 : IBV_ACCESS_LOCAL_WRITE);
	c->exposed_mr = ibv_reg_mr(ctx->pd, c->exposed, RW_BUFFER_SIZE,
				   rw_mode == RW_WRITE ?
					   IBV_ACCESS_LOCAL_WRITE |
						   IBV_ACCESS_REMOTE_WRITE :
					   IBV_ACCESS_REMOTE_READ);
	demo_check(c->recv_mr && c->send_mr && c->local_mr && c->exposed_mr,
		   "ibv_reg_mr");
	mine = rw_mode == RW_WRITE ? c->local : c->exposed;
	snprintf(mine, RW_BUFFER_SIZE, "message from %s side with pid %d", side,
		 (int)getpid());
	post_receive(c);
	return c;
}

void rw_conn_established(struct rw_conn *c, bool send_mr)
{
	pthread_mutex_lock(&c->lock);
	c->connected = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (send_mr)
		send_msg(c, RW_MSG_MR);
}

void rw_conn_free(struct rw_conn *c)
{
	struct timespec until;

	pthread_mutex_lock(&c->lock);
	c->closing = true;
	pthread_mutex_unlock(&c->lock);
	/* ERROR flushes whatever is still posted. */
	rdma_disconnect(c->id);
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
	ibv_dereg_mr(c->local_mr);
	ibv_dereg_mr(c->exposed_mr);
	free(c->recv_msg);
	free(c->send_msg);
	free(c->local);
	free(c->exposed);
	free(c);
}
