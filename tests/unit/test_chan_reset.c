/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * An RC pair moved to RESET and connected again carries traffic at once,
 * on the same-host fast path (paths/chan.c) as on the packet path: a
 * reopened channel acknowledges its first message.  rdma-core's
 * test_mr_rereg_atomic does this (an atomic refused with REM_ACCESS_ERR,
 * both QPs reset and brought back to RTS with their first PSNs, the
 * region given REMOTE_ATOMIC again, a FETCH_AND_ADD): the channel's
 * consumer once kept the position it had acknowledged before the reset,
 * so its new messages up to that position were never acknowledged and
 * the requester's WQE waited for its timeout.
 *
 *   atomic: the first FETCH_AND_ADD refused (the region lacks the right:
 *           REM_ACCESS_ERR, both QPs in ERR), reset, RTS, rights back:
 *           the next one completes with the old value, the target adds;
 *   send:   5 SENDs complete, reset, RTS, 3 more complete (the consumer
 *           had acknowledged 5 before: the first 3 after were the lost).
 *
 * Each case with the fast path (the default) and without
 * (SOFTVERBS_FASTPATH=0 in a child: the packet path).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"

#define SPSN 0x123u
#define RPSN 0x4567u

struct side {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint64_t *buf;
};

static struct ibv_context *ctx;
static union ibv_gid gid;
static int gidx;

static void side_open(struct side *s)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { 8, 8, 1, 1, 0 } };

	s->pd = ibv_alloc_pd(ctx);
	REQUIRE(s->pd);
	s->cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	REQUIRE(s->cq);
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &ia);
	REQUIRE(s->qp);
	s->buf = aligned_alloc(4096, 4096);
	REQUIRE(s->buf);
	memset(s->buf, 0, 4096);
	s->mr = ibv_reg_mr(s->pd, s->buf, 4096,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	REQUIRE(s->mr);
}

static void side_close(struct side *s)
{
	CHECK_EQ(ibv_destroy_qp(s->qp), 0);
	CHECK_EQ(ibv_dereg_mr(s->mr), 0);
	CHECK_EQ(ibv_destroy_cq(s->cq), 0);
	CHECK_EQ(ibv_dealloc_pd(s->pd), 0);
	free(s->buf);
}

/* RESET (when asked), INIT, RTR, RTS, always with the same PSNs. */
static void connect_qp(struct side *s, const struct side *peer, bool reset,
		       uint32_t sq_psn, uint32_t rq_psn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (reset)
		CHECK_EQ(ibv_modify_qp(s->qp, &a, IBV_QP_STATE), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC;
	CHECK_EQ(ibv_modify_qp(s->qp, &a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS),
		 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gidx;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	CHECK_EQ(ibv_modify_qp(s->qp, &a,
			       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER),
		 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7; /* as rdma-core's tests: the channel's condition */
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 4;
	CHECK_EQ(ibv_modify_qp(s->qp, &a,
			       IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
		 0);
}

static void connect_pair(struct side *c, struct side *s, bool reset)
{
	connect_qp(s, c, reset, RPSN, SPSN);
	connect_qp(c, s, reset, SPSN, RPSN);
}

/* One completion of cq within 5 s (a stall is what this test finds). */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 5);
	return 0;
}

/* The status of its completion, -1 for none within 5 s. */
static int fetch_add(struct side *c, struct side *s)
{
	struct ibv_sge sg = { (uintptr_t)c->buf, 8, c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7,
				  .sg_list = &sg,
				  .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;

	wr.wr.atomic.remote_addr = (uintptr_t)s->buf;
	wr.wr.atomic.rkey = s->mr->rkey;
	wr.wr.atomic.compare_add = 2;
	REQUIRE(ibv_post_send(c->qp, &wr, &bad) == 0);
	if (!poll_one(c->cq, &wc))
		return -1;
	return (int)wc.status;
}

static void rereg(struct side *x, unsigned int access)
{
	CHECK_EQ(ibv_rereg_mr(x->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      (int)access),
		 0);
}

static void case_atomic(void)
{
	struct side c, s;

	side_open(&c);
	side_open(&s);
	connect_pair(&c, &s, false);
	rereg(&s, IBV_ACCESS_LOCAL_WRITE);
	CHECK_EQ(fetch_add(&c, &s), IBV_WC_REM_ACCESS_ERR);
	connect_pair(&c, &s, true);
	rereg(&s, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	s.buf[0] = 40;
	c.buf[0] = 0;
	CHECK_EQ(fetch_add(&c, &s), IBV_WC_SUCCESS);
	CHECK_EQ(c.buf[0], 40); /* the original value */
	CHECK_EQ(s.buf[0], 42);
	side_close(&c);
	side_close(&s);
}

static int sends(struct side *c, struct side *s, int n)
{
	int ok = 0;

	for (int i = 0; i < n; i++) {
		struct ibv_sge rs = { (uintptr_t)s->buf, 64, s->mr->lkey };
		struct ibv_sge ss = { (uintptr_t)(c->buf + 64), 64,
				      c->mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = (uint64_t)i,
					   .sg_list = &rs,
					   .num_sge = 1 },
				   *rbad;
		struct ibv_send_wr wr = { .wr_id = 100 + (uint64_t)i,
					  .sg_list = &ss,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		struct ibv_wc wc;

		memset(c->buf + 64, 'a' + i, 64);
		REQUIRE(ibv_post_recv(s->qp, &rwr, &rbad) == 0);
		REQUIRE(ibv_post_send(c->qp, &wr, &bad) == 0);
		if (!poll_one(c->cq, &wc) || wc.status != IBV_WC_SUCCESS ||
		    wc.wr_id != 100 + (uint64_t)i)
			break;
		if (!poll_one(s->cq, &wc) || wc.status != IBV_WC_SUCCESS ||
		    wc.byte_len != 64 || ((char *)s->buf)[63] != 'a' + i)
			break;
		ok++;
	}
	return ok;
}

static void case_send(void)
{
	struct side c, s;

	side_open(&c);
	side_open(&s);
	connect_pair(&c, &s, false);
	CHECK_EQ(sends(&c, &s, 5), 5);
	connect_pair(&c, &s, true);
	CHECK_EQ(sends(&c, &s, 3), 3);
	side_close(&c);
	side_close(&s);
}

static int run(void)
{
	ctx = open_ctx();
	gidx = loopback_gid(ctx);
	REQUIRE(gidx >= 0);
	REQUIRE(ibv_query_gid(ctx, 1, gidx, &gid) == 0);
	case_atomic();
	case_send();
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}

int main(void)
{
	int status, rc;
	pid_t pid = fork();

	REQUIRE(pid >= 0);
	if (!pid) {
		setenv("SOFTVERBS_FASTPATH", "0", 1);
		_exit(run());
	}
	rc = run();
	REQUIRE(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "the packet path's run failed (status 0x%x)\n",
			status);
		return 1;
	}
	return rc;
}
