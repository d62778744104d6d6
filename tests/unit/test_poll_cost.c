/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * An empty ibv_poll_cq does not visit every socket of a context with many
 * QPs (issue #20: "an empty CQ poll that does not walk every QP").
 *
 * 2100 UD QPs (UDP sockets of 256 QPs each: 9) and one CQ: 1000 empty
 * polls must not cost a recvmmsg per socket each (9000 with the previous
 * engine); one epoll look says no socket holds anything.  recvmmsg is
 * counted by a wrapper here that the library's calls reach.  Then a UD
 * SEND from the first QP to the last (another socket) still arrives through
 * those polls, bytes compared.
 */
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "check.h"

#define NQP 2100
#define POLLS 1000

static _Atomic unsigned long calls;

int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags,
	     struct timespec *t)
{
	static int (*real)(int, struct mmsghdr *, unsigned int, int,
			   struct timespec *);

	if (!real)
		real = (int (*)(int, struct mmsghdr *, unsigned int, int,
				struct timespec *))dlsym(RTLD_NEXT, "recvmmsg");
	atomic_fetch_add(&calls, 1);
	return real(fd, v, n, flags, t);
}

static void ud_up(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qkey = 0x11111111 };

	REQUIRE(ibv_modify_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_QKEY) == 0);
	a.qp_state = IBV_QPS_RTR;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0);
}

/* One UD SEND of 64 bytes from a to b, received and compared. */
static void ud_send(struct ibv_context *ctx, struct ibv_pd *pd,
		    struct ibv_cq *cq, struct ibv_qp *a, struct ibv_qp *b)
{
	static uint8_t buf[4096];
	struct ibv_mr *mr =
		ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_sge rs = { (uintptr_t)buf, 40 + 64, 0 },
		       ss = { (uintptr_t)buf + 1024, 64, 0 };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 },
			   *rbad;
	struct ibv_send_wr swr = { .wr_id = 2,
				   .sg_list = &ss,
				   .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED },
			   *sbad;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	time_t end = time(NULL) + 10; /* a hang guard, not a measure */
	int i, seen = 0;

	REQUIRE(mr);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &aa.grh.dgid) == 0);
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &aa);
	REQUIRE(ah);
	rs.lkey = ss.lkey = mr->lkey;
	for (i = 0; i < 64; i++)
		buf[1024 + i] = (uint8_t)(i * 7 + 3);
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = b->qp_num;
	swr.wr.ud.remote_qkey = 0x11111111;
	REQUIRE(ibv_post_recv(b, &rwr, &rbad) == 0);
	REQUIRE(ibv_post_send(a, &swr, &sbad) == 0);
	while (seen != 3 && time(NULL) < end) {
		if (ibv_poll_cq(cq, 1, &wc) != 1)
			continue;
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		seen |= (int)wc.wr_id;
	}
	CHECK_EQ(seen, 3);
	CHECK(!memcmp(buf + 40, buf + 1024, 64));
	CHECK_EQ(ibv_destroy_ah(ah), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr ia = { 0 };
	static struct ibv_qp *qp[NQP];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	unsigned long before;
	int i, got = 0;

	REQUIRE(list && list[0]);
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	REQUIRE(pd && cq);
	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	for (i = 0; i < NQP; i++) {
		qp[i] = ibv_create_qp(pd, &ia);
		REQUIRE(qp[i]);
	}
	for (i = 0; i < 100; i++) /* warm up */
		CHECK_EQ(ibv_poll_cq(cq, 1, &wc), 0);
	before = atomic_load(&calls);
	for (i = 0; i < POLLS; i++)
		got += ibv_poll_cq(cq, 1, &wc);
	CHECK_EQ(got, 0);
	printf("%d empty polls, %d QPs: %lu recvmmsg calls\n", POLLS, NQP,
	       atomic_load(&calls) - before);
	CHECK(atomic_load(&calls) - before <= POLLS / 10);
	ud_up(qp[0]);
	ud_up(qp[NQP - 1]);
	ud_send(ctx, pd, cq, qp[0], qp[NQP - 1]);
	for (i = 0; i < NQP; i++)
		CHECK_EQ(ibv_destroy_qp(qp[i]), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	ibv_free_device_list(list);
	return check_done();
}
