/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Every refusal explains itself (util/log.h): each check of ibv_modify_qp,
 * ibv_post_send, ibv_post_recv and ibv_post_srq_recv returns its errno and
 * writes one warning line naming the rule and the value that broke it.
 * The lines go to VERBS_LOG_FILE (rdma-core's variable), which this test
 * reads; warnings are on by default; data-path lines stop after
 * SV_LOG_BURST per QP; VERBS_LOG_LEVEL and SOFTVERBS_LOG turn them off.
 */
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char log_path[] = "/tmp/sv_explain_XXXXXX";
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static union ibv_gid gid0;
static uint8_t buf[4096];
static struct ibv_mr *mr;
static struct ibv_qp_cap cap; /* of the last QP created */

/* The log so far, and empty it for the next check. */
static char *take_log(void)
{
	static char text[65536];
	FILE *f = fopen(log_path, "r");
	size_t n;

	REQUIRE(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	/* The library appends (O_APPEND): it writes at the new end. */
	REQUIRE(truncate(log_path, 0) == 0);
	return text;
}

/* The last refusal's line holds each of the pieces (rule and value). */
#define EXPECT_LOG(...)                                                    \
	do {                                                               \
		const char *_want[] = { __VA_ARGS__ };                     \
		const char *_t = take_log();                               \
		bool _ok = strstr(_t, "softverbs warning: ") != NULL;      \
		for (size_t _i = 0; _i < sizeof(_want) / sizeof(_want[0]); \
		     _i++)                                                 \
			_ok = _ok && strstr(_t, _want[_i]);                \
		CHECK(_ok);                                                \
		if (!_ok)                                                  \
			fprintf(stderr, "  log was: %s", _t);              \
	} while (0)

static int count_lines(const char *t, const char *needle)
{
	int n = 0;

	for (const char *p = t; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static struct ibv_qp *new_qp(enum ibv_qp_type type, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.qp_type = type,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 2,
			 .max_recv_sge = 2,
			 .max_inline_data = 64 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	REQUIRE(qp);
	cap = ia.cap; /* what the QP has: at least what was asked */
	return qp;
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qkey = 0x11111111,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp, &a, mask);
}

static void rtr_attr(struct ibv_qp_attr *a, struct ibv_qp *peer)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = peer->qp_num;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = gid0;
	a->ah_attr.grh.hop_limit = 1;
	a->ah_attr.port_num = 1;
}

#define RTR_MASK                                                        \
	(IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
	 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RTS_MASK                                                               \
	(IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
	 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)

static void to_rts(struct ibv_qp *qp, struct ibv_qp *peer)
{
	struct ibv_qp_attr a;

	REQUIRE(to_init(qp) == 0);
	rtr_attr(&a, peer);
	REQUIRE(ibv_modify_qp(qp, &a, RTR_MASK) == 0);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	REQUIRE(ibv_modify_qp(qp, &a, RTS_MASK) == 0);
}

static void test_modify_qp(void)
{
	struct ibv_qp *qp = new_qp(IBV_QPT_RC, NULL);
	struct ibv_qp_attr a;
	char qpn[32];

	snprintf(qpn, sizeof(qpn), "ibv_modify_qp: QP 0x%06x: ", qp->qp_num);
	take_log();

	/* The state machine (IBA 10.3.1). */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	EXPECT_LOG(qpn, "RESET -> RTS is not a transition");
	a.qp_state = IBV_QPS_INIT;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT), EINVAL);
	EXPECT_LOG(qpn, "RESET -> INIT of RC QPs requires",
		   "IBV_QP_ACCESS_FLAGS", "IBV_QP_PKEY_INDEX",
		   "missing from attr_mask");
	a.qp_state = 9;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	EXPECT_LOG(qpn, "attr.qp_state 9 is not a QP state");
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS | IBV_QP_SQ_PSN),
		 EINVAL);
	EXPECT_LOG(qpn, "RESET -> INIT of RC QPs does not take IBV_QP_SQ_PSN");
	a.cur_qp_state = IBV_QPS_RESET;
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS | IBV_QP_CUR_STATE),
		 EINVAL);
	EXPECT_LOG(
		qpn,
		"IBV_QP_CUR_STATE may be given in RTR, RTS, SQD or SQE only; the QP is in RESET");

	/* The attributes' ranges. */
	a.port_num = 2;
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS),
		 EINVAL);
	EXPECT_LOG(qpn, "attr.port_num 2");
	a.port_num = 1;
	a.pkey_index = 5;
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS),
		 EINVAL);
	EXPECT_LOG(qpn, "attr.pkey_index 5 is beyond the P_Key table");
	a.pkey_index = 0;
	a.qp_access_flags = 1u << 12;
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS),
		 EINVAL);
	EXPECT_LOG(qpn, "attr.qp_access_flags 0x1000");
	REQUIRE(to_init(qp) == 0);

	/* INIT -> RTR: the address. */
	rtr_attr(&a, qp);
	a.ah_attr.is_global = 0;
	a.ah_attr.dlid = 7;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTR_MASK), EINVAL);
	EXPECT_LOG(qpn, "attr.ah_attr: is_global is 0 (dlid 0x7)",
		   "needs a GRH");
	rtr_attr(&a, qp);
	a.ah_attr.grh.sgid_index = 200;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTR_MASK), EINVAL);
	EXPECT_LOG(qpn, "grh.sgid_index 200 is beyond the port's GID table");
	rtr_attr(&a, qp);
	a.path_mtu = 9;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTR_MASK), EINVAL);
	EXPECT_LOG(qpn, "attr.path_mtu 9");
	rtr_attr(&a, qp);
	a.min_rnr_timer = 32;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTR_MASK), EINVAL);
	EXPECT_LOG(qpn, "attr.min_rnr_timer 32 is above 31");
	rtr_attr(&a, qp);
	a.max_dest_rd_atomic = 255;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTR_MASK), EINVAL);
	EXPECT_LOG(qpn, "attr.max_dest_rd_atomic 255");
	rtr_attr(&a, qp);
	a.dest_qp_num = 0x1000000;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTR_MASK), EINVAL);
	EXPECT_LOG(qpn, "attr.dest_qp_num 0x1000000 is above 0xffffff");
	rtr_attr(&a, qp);
	CHECK_EQ(ibv_modify_qp(qp, &a, RTR_MASK | IBV_QP_ALT_PATH), EINVAL);
	EXPECT_LOG(qpn, "IBV_QP_ALT_PATH", "InfiniBand only");
	rtr_attr(&a, qp);
	REQUIRE(ibv_modify_qp(qp, &a, RTR_MASK) == 0);

	/* RTR -> RTS: the timers and counts. */
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 32;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTS_MASK), EINVAL);
	EXPECT_LOG(qpn, "attr.timeout 32 is above 31");
	a.timeout = 14;
	a.retry_cnt = 8;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTS_MASK), EINVAL);
	EXPECT_LOG(qpn, "attr.retry_cnt 8 is above 7");
	a.retry_cnt = 7;
	a.rnr_retry = 9;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTS_MASK), EINVAL);
	EXPECT_LOG(qpn, "attr.rnr_retry 9 is above 7");
	a.rnr_retry = 7;
	a.max_rd_atomic = 255;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTS_MASK), EINVAL);
	EXPECT_LOG(qpn, "attr.max_rd_atomic 255");
	a.max_rd_atomic = 1;
	a.cur_qp_state = IBV_QPS_RTS;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTS_MASK | IBV_QP_CUR_STATE), EINVAL);
	EXPECT_LOG(qpn, "attr.cur_qp_state is RTS but the QP is in RTR");
	a.path_mig_state = 7;
	CHECK_EQ(ibv_modify_qp(qp, &a, RTS_MASK | IBV_QP_PATH_MIG_STATE),
		 EINVAL);
	EXPECT_LOG(qpn, "attr.path_mig_state 7");
	CHECK_EQ(ibv_destroy_qp(qp), 0);

	/* A privileged Q_Key: EPERM without CAP_NET_RAW (root has it). */
	if (geteuid() != 0) {
		qp = new_qp(IBV_QPT_UD, NULL);
		snprintf(qpn, sizeof(qpn),
			 "ibv_modify_qp: QP 0x%06x: ", qp->qp_num);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qkey = 0x80000001;
		CHECK_EQ(ibv_modify_qp(qp, &a,
				       IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT | IBV_QP_QKEY),
			 EPERM);
		EXPECT_LOG(qpn, "attr.qkey 0x80000001", "CAP_NET_RAW");
		CHECK_EQ(ibv_destroy_qp(qp), 0);
	}

	/* ibv_create_ah: the same address rules. */
	{
		struct ibv_ah_attr ah = { .port_num = 1 };

		CHECK(ibv_create_ah(pd, &ah) == NULL && errno == EINVAL);
		EXPECT_LOG("ibv_create_ah: is_global is 0");
	}
}

static void test_create_qp(void)
{
	struct ibv_qp_init_attr ia = { .send_cq = cq,
				       .recv_cq = cq,
				       .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1u << 30,
						.max_recv_wr = 1,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct ibv_device_attr da;

	REQUIRE(ibv_query_device(ctx, &da) == 0);
	take_log();
	CHECK(!ibv_create_qp(pd, &ia) && errno == EINVAL);
	EXPECT_LOG("ibv_create_qp: cap.max_send_wr 1073741824",
		   "the device's limits are");
	ia.cap.max_send_wr = 1;
	ia.cap.max_recv_sge = (uint32_t)da.max_sge + 1;
	CHECK(!ibv_create_qp(pd, &ia) && errno == EINVAL);
	EXPECT_LOG("ibv_create_qp: cap.max_recv_wr 1, max_recv_sge");
	ia.cap.max_recv_sge = 1;
	ia.recv_cq = NULL;
	CHECK(!ibv_create_qp(pd, &ia) && errno == EINVAL);
	EXPECT_LOG("ibv_create_qp: RC QPs need a send and a receive CQ");
	ia.recv_cq = cq;
	ia.qp_type = 77;
	CHECK(!ibv_create_qp(pd, &ia) && errno == EINVAL);
	EXPECT_LOG("ibv_create_qp: qp_type 77 is not a QP type");
}

static void test_post_send(void)
{
	struct ibv_qp *qp = new_qp(IBV_QPT_RC, NULL);
	struct ibv_qp_cap rc_cap = cap;
	struct ibv_qp *ud = new_qp(IBV_QPT_UD, NULL);
	char want[128];
	struct ibv_sge sge[3] = {
		{ (uintptr_t)buf, 8, mr->lkey },
		{ (uintptr_t)buf, 8, mr->lkey },
		{ (uintptr_t)buf, 8, mr->lkey },
	};
	struct ibv_send_wr wr = { .wr_id = 0x42,
				  .sg_list = sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND },
			   *bad;
	char qpn[48];

	snprintf(qpn, sizeof(qpn), "ibv_post_send: QP 0x%06x: ", qp->qp_num);
	take_log();

	/* State (IBA 10.3.1). */
	REQUIRE(to_init(qp) == 0);
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	EXPECT_LOG(qpn, "the QP is in INIT; sends are allowed from RTS on");
	to_rts(qp, qp);

	/* The opcode for the QP type, unknown opcodes. */
	wr.opcode = 77;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	EXPECT_LOG(qpn, "wr_id 0x42: opcode 77 is not one softverbs offers");
	wr.opcode = IBV_WR_SEND;

	/* Gather list, inline data, atomics. */
	wr.num_sge = 100;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	snprintf(want, sizeof(want),
		 "num_sge 100 is above the QP's max_send_sge %u",
		 rc_cap.max_send_sge);
	EXPECT_LOG(qpn, want);
	wr.num_sge = 1;
	wr.sg_list = NULL;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	EXPECT_LOG(qpn, "num_sge 1 with sg_list NULL");
	wr.sg_list = sge;
	sge[0].length = 100000;
	wr.send_flags = IBV_SEND_INLINE;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	snprintf(
		want, sizeof(want),
		"100000 bytes of inline data are above the QP's max_inline_data %u",
		rc_cap.max_inline_data);
	EXPECT_LOG(qpn, want);
	sge[0].length = 8;
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	EXPECT_LOG(qpn, "IBV_SEND_INLINE on IBV_WR_RDMA_READ");
	wr.send_flags = 0;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	sge[0].length = 4;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	EXPECT_LOG(
		qpn,
		"IBV_WR_ATOMIC_FETCH_AND_ADD needs one SGE of at least 8 bytes",
		"length 4");
	sge[0].length = 0x80000000u;
	sge[1].length = 0x80000000u;
	wr.opcode = IBV_WR_SEND;
	wr.num_sge = 2;
	CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	EXPECT_LOG(qpn, "message of 4294967296 bytes is above the 2^31");
	sge[0].length = sge[1].length = 8;
	wr.num_sge = 1;

	/* UD: the address handle, one packet. */
	REQUIRE(to_init(ud) == 0);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };

		REQUIRE(ibv_modify_qp(ud, &a, IBV_QP_STATE) == 0);
		a.qp_state = IBV_QPS_RTS;
		REQUIRE(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) ==
			0);
	}
	snprintf(qpn, sizeof(qpn), "ibv_post_send: QP 0x%06x: ", ud->qp_num);
	CHECK_EQ(ibv_post_send(ud, &wr, &bad), EINVAL);
	EXPECT_LOG(qpn, "a UD send needs an address handle");
	wr.opcode = IBV_WR_RDMA_WRITE;
	CHECK_EQ(ibv_post_send(ud, &wr, &bad), EINVAL);
	EXPECT_LOG(qpn, "opcode IBV_WR_RDMA_WRITE is not valid on UD QPs");
	wr.opcode = IBV_WR_SEND;

	/* The queue full: ENOMEM (4 WRs to a QP whose peer never answers:
	 * the QP talks to itself without receive WQEs, RNR forever). */
	snprintf(qpn, sizeof(qpn), "ibv_post_send: QP 0x%06x: ", qp->qp_num);
	{
		uint32_t n = rc_cap.max_send_wr + 1;
		struct ibv_send_wr w[n];
		int err;

		for (uint32_t i = 0; i < n; i++) {
			w[i] = wr;
			w[i].wr_id = i;
			w[i].opcode = IBV_WR_SEND;
			w[i].next = i + 1 < n ? &w[i + 1] : NULL;
		}
		err = ibv_post_send(qp, w, &bad);
		CHECK_EQ(err, ENOMEM);
		CHECK(bad == &w[n - 1]);
		snprintf(
			want, sizeof(want),
			"wr_id %#x: the send queue is full (%u WRs outstanding, max_send_wr %u)",
			n - 1, n - 1, n - 1);
		EXPECT_LOG(qpn, want);
	}
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_qp(ud), 0);
}

static void test_post_recv(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 2, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_qp *qp = new_qp(IBV_QPT_RC, NULL);
	struct ibv_qp_cap rc_cap = cap;
	struct ibv_qp *sq = new_qp(IBV_QPT_RC, srq);
	char want[128];
	struct ibv_sge sge[3] = {
		{ (uintptr_t)buf, 8, mr->lkey },
		{ (uintptr_t)buf, 8, mr->lkey },
		{ (uintptr_t)buf, 8, mr->lkey },
	};
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = sge, .num_sge = 1 },
			   w[64], *bad;
	char qpn[48];

	REQUIRE(srq);
	snprintf(qpn, sizeof(qpn), "ibv_post_recv: QP 0x%06x: ", qp->qp_num);
	take_log();
	CHECK_EQ(ibv_post_recv(qp, &wr, &bad), EINVAL);
	EXPECT_LOG(qpn,
		   "the QP is in RESET; receives may be posted from INIT on");
	REQUIRE(to_init(qp) == 0);
	wr.num_sge = 100;
	CHECK_EQ(ibv_post_recv(qp, &wr, &bad), EINVAL);
	snprintf(want, sizeof(want),
		 "wr_id 0x7: num_sge 100 is above the QP's max_recv_sge %u",
		 rc_cap.max_recv_sge);
	EXPECT_LOG(qpn, want);
	wr.num_sge = 1;
	REQUIRE(rc_cap.max_recv_wr < 64 && sa.attr.max_wr < 64);
	for (uint32_t i = 0; i < 64; i++) {
		w[i] = wr;
		w[i].wr_id = i;
		w[i].next = i < rc_cap.max_recv_wr ? &w[i + 1] : NULL;
	}
	CHECK_EQ(ibv_post_recv(qp, w, &bad), ENOMEM);
	CHECK(bad == &w[rc_cap.max_recv_wr]);
	snprintf(
		want, sizeof(want),
		"the receive queue is full (%u WRs outstanding, max_recv_wr %u)",
		rc_cap.max_recv_wr, rc_cap.max_recv_wr);
	EXPECT_LOG(qpn, want);

	REQUIRE(to_init(sq) == 0);
	snprintf(qpn, sizeof(qpn), "ibv_post_recv: QP 0x%06x: ", sq->qp_num);
	CHECK_EQ(ibv_post_recv(sq, &wr, &bad), EINVAL);
	EXPECT_LOG(qpn, "SRQ-attached QP has no receive queue of its own");

	wr.num_sge = 100;
	CHECK_EQ(ibv_post_srq_recv(srq, &wr, &bad), EINVAL);
	snprintf(want, sizeof(want),
		 "num_sge 100 is above the SRQ's max_sge %u", sa.attr.max_sge);
	EXPECT_LOG("ibv_post_srq_recv: SRQ", want);
	wr.num_sge = 1;
	for (uint32_t i = 0; i < 64; i++)
		w[i].next = i < sa.attr.max_wr ? &w[i + 1] : NULL;
	CHECK_EQ(ibv_post_srq_recv(srq, w, &bad), ENOMEM);
	EXPECT_LOG("ibv_post_srq_recv: SRQ", "the SRQ is full");

	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_qp(sq), 0);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
}

/* A flood of refusals: SV_LOG_BURST (10) lines, one saying the rest are
 * counted, and the count when the QP goes. */
static void test_rate_limit(void)
{
	struct ibv_qp *qp = new_qp(IBV_QPT_RC, NULL);
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND }, *bad;
	const char *t;
	char qpn[48];

	snprintf(qpn, sizeof(qpn), "ibv_post_send: QP 0x%06x: ", qp->qp_num);
	take_log();
	for (int i = 0; i < 1000; i++)
		CHECK_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	t = take_log();
	CHECK_EQ(count_lines(t, qpn), 10);
	CHECK_EQ(count_lines(t, "further ones are counted, not logged"), 1);
	CHECK(strstr(t, "990 more warnings about it were counted") != NULL);
	CHECK_EQ(count_lines(t, "\n"), 12);
}

/* The level: warnings by default (the checks above); off with rdma-core's
 * VERBS_LOG_LEVEL=1 (errors) or SOFTVERBS_LOG=0, which wins over it.  Each
 * setting in a new process (this program again, with "levels-child"): the
 * library reads the environment once per process, and a forked copy of
 * this one, whose progress thread may hold a lock at the fork, must not
 * use the library. */
static const char *self_path;

static int refusal_logged_with(const char *var, const char *val,
			       const char *var2, const char *val2)
{
	pid_t pid = fork();
	int st;

	REQUIRE(pid >= 0);
	if (!pid) {
		setenv(var, val, 1);
		if (var2)
			setenv(var2, val2, 1);
		execl(self_path, self_path, "levels-child", (char *)NULL);
		_exit(3);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return strstr(take_log(), "is not a transition") != NULL;
}

/* The child's part: one refused transition, logged or not. */
static int levels_child(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };
	struct ibv_qp *qp = new_qp(IBV_QPT_RC, NULL);

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE) != EINVAL)
		return 2;
	ibv_destroy_qp(qp);
	return 0;
}

static void test_levels(void)
{
	take_log();
	CHECK(!refusal_logged_with("VERBS_LOG_LEVEL", "1", NULL, NULL));
	CHECK(!refusal_logged_with("VERBS_LOG_LEVEL", "0", NULL, NULL));
	CHECK(refusal_logged_with("VERBS_LOG_LEVEL", "2", NULL, NULL));
	CHECK(refusal_logged_with("VERBS_LOG_LEVEL", "0x4", NULL, NULL));
	CHECK(!refusal_logged_with("SOFTVERBS_LOG", "0", NULL, NULL));
	CHECK(refusal_logged_with("SOFTVERBS_LOG", "1", "VERBS_LOG_LEVEL",
				  "0"));
	CHECK(!refusal_logged_with("SOFTVERBS_LOG", "0", "VERBS_LOG_LEVEL",
				   "4"));
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	bool child = argc > 1 && !strcmp(argv[1], "levels-child");
	int fd;

	self_path = "/proc/self/exe";
	if (!child) {
		fd = mkstemp(log_path);
		REQUIRE(fd >= 0);
		close(fd);
		/* Before the library's first line: the file is opened then. */
		setenv("VERBS_LOG_FILE", log_path, 1);
		unsetenv("SOFTVERBS_LOG");
		unsetenv("VERBS_LOG_LEVEL");
	}
	list = ibv_get_device_list(NULL);
	REQUIRE(list && list[0]);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	REQUIRE(ctx);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid0) == 0);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(pd && cq && mr);
	if (child) {
		int rc = levels_child();

		ibv_dereg_mr(mr);
		ibv_destroy_cq(cq);
		ibv_dealloc_pd(pd);
		ibv_close_device(ctx);
		return rc;
	}

	test_create_qp();
	test_modify_qp();
	test_post_send();
	test_post_recv();
	test_rate_limit();
	test_levels();

	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	unlink(log_path);
	return check_done();
}
