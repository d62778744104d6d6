/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Datagrams posted before ibv_destroy_qp leave, as from an HCA, which
 * fetches a WQE within microseconds of its doorbell: Debian's mckey
 * sender posts its sends unsignaled and destroys its QP at once (a busy
 * CI host once lost all 25 of them: engine/transport/qp.c runs the requester at
 * destroy).  Rounds of 16 unsignaled SENDs to a second QP, the sender
 * destroyed right after posting; every datagram must arrive, bytes
 * compared (the argument "standard" sets SOFTVERBS_ROCE).  In odd
 * rounds another thread holds the engine's lock while the sends are
 * posted, so they wait on the kick list, and lets it go once the destroy
 * waits for it: the race of the busy host, where the destroy can take
 * the lock before the progress thread's next pass (without the runs at
 * destroy, those rounds lost all 16).
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/objects.h"
#include "ctx.h"
#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"

#define QKEY 0x11111111u
#define N 16
#define ROUNDS 40
#define LEN 64

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = { .send_cq = cq,
				       .recv_cq = cq,
				       .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = N,
						.max_recv_wr = N,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qkey = QKEY };

	REQUIRE(qp);
	REQUIRE(!ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_QKEY));
	a.qp_state = IBV_QPS_RTR;
	REQUIRE(!ibv_modify_qp(qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RTS;
	REQUIRE(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	return qp;
}

static struct {
	struct sv_engine *eng;
	atomic_int phase; /* 1: lock held; 2: posted, destroying */
} hold;

static void *lock_holder(void *arg)
{
	sv_mutex_lock(&hold.eng->lock, SV_LOCK_ENGINE);
	atomic_store(&hold.phase, 1);
	while (atomic_load(&hold.phase) != 2)
		usleep(100);
	usleep(20000); /* the destroy is waiting for the lock by now */
	sv_mutex_unlock(&hold.eng->lock);
	return arg;
}

int main(int argc, char **argv)
{
	static uint8_t sbuf[N][LEN], rbuf[N][40 + LEN];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *rcq, *scq;
	struct ibv_mr *smr, *rmr;
	struct ibv_qp *r;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;
	int gidx, lost = 0;

	if (argc > 1)
		setenv("SOFTVERBS_ROCE", argv[1], 1);
	ctx = open_ctx();
	pd = ibv_alloc_pd(ctx);
	rcq = ibv_create_cq(ctx, 2 * N, NULL, NULL, 0);
	scq = ibv_create_cq(ctx, 2 * N, NULL, NULL, 0);
	REQUIRE(pd && rcq && scq);
	smr = ibv_reg_mr(pd, sbuf, sizeof(sbuf), 0);
	rmr = ibv_reg_mr(pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(smr && rmr);
	r = ud_qp(pd, rcq);
	gidx = loopback_gid(ctx);
	REQUIRE(gidx >= 0);
	aa.grh.sgid_index = (uint8_t)gidx;
	aa.grh.hop_limit = 64;
	REQUIRE(!ibv_query_gid(ctx, 1, gidx, &aa.grh.dgid));
	ah = ibv_create_ah(pd, &aa);
	REQUIRE(ah);
	for (int round = 0; round < ROUNDS; round++) {
		struct ibv_qp *s = ud_qp(pd, scq);
		struct ibv_wc wc[N];
		pthread_t th;
		int got = 0;

		for (int i = 0; i < N; i++) {
			struct ibv_sge sge = { (uintptr_t)rbuf[i],
					       sizeof(rbuf[i]), rmr->lkey };
			struct ibv_recv_wr wr = { .wr_id = (uint64_t)i,
						  .sg_list = &sge,
						  .num_sge = 1 },
					   *bad;

			REQUIRE(!ibv_post_recv(r, &wr, &bad));
		}
		if (round & 1) {
			hold.eng = to_sv_qp(s)->eng->eng;
			atomic_store(&hold.phase, 0);
			REQUIRE(!pthread_create(&th, NULL, lock_holder, NULL));
			while (atomic_load(&hold.phase) != 1)
				usleep(100);
		}
		for (int i = 0; i < N; i++) {
			struct ibv_sge sge = { (uintptr_t)sbuf[i], LEN,
					       smr->lkey };
			struct ibv_send_wr wr = { .sg_list = &sge,
						  .num_sge = 1,
						  .opcode = IBV_WR_SEND },
					   *bad;

			memset(sbuf[i], round * N + i, LEN);
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = r->qp_num;
			wr.wr.ud.remote_qkey = QKEY;
			REQUIRE(!ibv_post_send(s, &wr, &bad));
		}
		if (round & 1)
			atomic_store(&hold.phase, 2);
		CHECK_EQ(ibv_destroy_qp(s), 0);
		if (round & 1)
			pthread_join(th, NULL);
		/* What left arrives within a second over loopback. */
		for (int t = 0; t < 1000 && got < N; t++) {
			int n = ibv_poll_cq(rcq, N, wc);

			for (int k = 0; k < n; k++) {
				CHECK_EQ(wc[k].status, IBV_WC_SUCCESS);
				CHECK_EQ(rbuf[wc[k].wr_id][40],
					 (uint8_t)(round * N + wc[k].wr_id));
			}
			got += n;
			if (got < N)
				usleep(1000);
		}
		lost += N - got;
		if (got < N) {
			/* Take back the receives left, for the next round. */
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

			fprintf(stderr, "round %d: %d of %d datagrams\n", round,
				got, N);
			REQUIRE(!ibv_modify_qp(r, &a, IBV_QP_STATE));
			REQUIRE(!ibv_destroy_qp(r));
			while (ibv_poll_cq(rcq, N, wc) > 0)
				;
			r = ud_qp(pd, rcq);
		}
	}
	CHECK_EQ(lost, 0);
	CHECK_EQ(ibv_destroy_ah(ah), 0);
	CHECK_EQ(ibv_destroy_qp(r), 0);
	CHECK_EQ(ibv_dereg_mr(smr), 0);
	CHECK_EQ(ibv_dereg_mr(rmr), 0);
	CHECK_EQ(ibv_destroy_cq(scq), 0);
	CHECK_EQ(ibv_destroy_cq(rcq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
