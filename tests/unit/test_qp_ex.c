/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Extended QPs: ibv_create_qp_ex's rules and errno values, ibv_qp_to_qp_ex,
 * and the ibv_wr_* API down to the exact ibv_send_wr chain it hands to the
 * QP's post path.
 *
 * The chain is observed by replacing ibv_context.ops.post_send (a public,
 * application-writable table the wr_* API posts through) with a recorder,
 * so every field, every copy of gather lists and inline bytes, the
 * all-or-nothing rule on errors, the wr_id/wr_flags sampling and the
 * critical region are checked without a transport.  Bytes moved end to
 * end through the engine are checked by tests/integration/ext_*.c. */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "ctx.h"

/* ---- the recorder ------------------------------------------------------- */

#define REC_MAX 256
#define REC_SGE 8
#define REC_DATA 512

static struct {
	int calls;
	int n; /* WRs in the last chain */
	struct ibv_send_wr wr[REC_MAX];
	struct ibv_sge sge[REC_MAX][REC_SGE];
	uint8_t data[REC_MAX][REC_DATA]; /* inline payload, concatenated */
	int fail_at, fail_err; /* make the post path fail at WR fail_at */
	struct ibv_send_wr *bad;
} rec;

static int recorder(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	int i;

	rec.calls++;
	rec.n = 0;
	for (i = 0; wr; wr = wr->next, i++) {
		if (i == rec.fail_at) {
			*bad_wr = wr;
			rec.bad = wr;
			return rec.fail_err;
		}
		REQUIRE(i < REC_MAX && wr->num_sge <= REC_SGE);
		rec.wr[i] = *wr;
		if (wr->num_sge)
			memcpy(rec.sge[i], wr->sg_list,
			       wr->num_sge * sizeof(struct ibv_sge));
		if (wr->send_flags & IBV_SEND_INLINE) {
			size_t off = 0;

			for (int k = 0; k < wr->num_sge; k++) {
				REQUIRE(off + wr->sg_list[k].length <=
					REC_DATA);
				memcpy(rec.data[i] + off,
				       (void *)(uintptr_t)wr->sg_list[k].addr,
				       wr->sg_list[k].length);
				off += wr->sg_list[k].length;
			}
		}
		rec.n++;
	}
	return 0;
}

static void rec_reset(void)
{
	memset(&rec, 0, sizeof(rec));
	rec.fail_at = -1;
}

/* ---- fixtures ----------------------------------------------------------- */

static struct ibv_context *ctx, *ctx2;
static struct ibv_pd *pd, *pd2;
static struct ibv_cq *cq;
static union ibv_gid gid0;

static struct ibv_qp_init_attr_ex attr_ex(enum ibv_qp_type type, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 16,
			 .max_recv_wr = 4,
			 .max_send_sge = 4,
			 .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.qp_type = type,
		.comp_mask =
			IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = ops,
	};

	return a;
}

#define RC_OPS                                                            \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |             \
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |   \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
#define UC_OPS                                                \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
#define UD_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

static struct ibv_qp *mkqp(enum ibv_qp_type type, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = attr_ex(type, ops);
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &a);

	REQUIRE(qp);
	return qp;
}

static int to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int rc;

	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		rc = ibv_modify_qp(qp, &a,
				   IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					   IBV_QP_PORT | IBV_QP_QKEY);
		if (rc)
			return rc;
		a.qp_state = IBV_QPS_RTR;
		rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
		if (rc)
			return rc;
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 1;
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	rc = ibv_modify_qp(qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid0;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	rc = ibv_modify_qp(qp, &a, mask);
	if (rc)
		return rc;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	return ibv_modify_qp(qp, &a, mask);
}

/* ---- creation ----------------------------------------------------------- */

static void test_create_rules(void)
{
	struct ibv_device_attr da;
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	REQUIRE(ibv_query_device(ctx, &da) == 0);

#define EXPECT_FAIL(err)                        \
	do {                                    \
		errno = 0;                      \
		qp = ibv_create_qp_ex(ctx, &a); \
		CHECK(qp == NULL);              \
		CHECK_EQ(errno, err);           \
		if (qp)                         \
			ibv_destroy_qp(qp);     \
	} while (0)

	errno = 0;
	CHECK(verbs_get_ctx(ctx)->create_qp_ex(ctx, NULL) == NULL);
	CHECK_EQ(errno, EINVAL);

	/* comp_mask: unknown bits; the PD is required */
	a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.comp_mask |= 1 << 7;
	EXPECT_FAIL(EINVAL);
	a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.comp_mask = 0;
	EXPECT_FAIL(EINVAL);
	a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.comp_mask &= ~IBV_QP_INIT_ATTR_PD;
	EXPECT_FAIL(EINVAL);
	a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.pd = NULL;
	EXPECT_FAIL(EINVAL);
	a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.pd = pd2; /* of another context */
	EXPECT_FAIL(EINVAL);

	/* An XRC target needs its domain (XRC QPs: test_xrc.c); other
	 * types ignore one given (rdma-core); raw-packet features are not
	 * offered */
	a = attr_ex(IBV_QPT_XRC_RECV, 0);
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	EXPECT_FAIL(EINVAL);
	a = attr_ex(IBV_QPT_XRC_RECV, 0);
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	EXPECT_FAIL(EINVAL);
	a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.comp_mask |= IBV_QP_INIT_ATTR_XRCD;
	qp = ibv_create_qp_ex(ctx, &a);
	CHECK(qp != NULL);
	if (qp)
		CHECK_EQ(ibv_destroy_qp(qp), 0);
	static const uint32_t raw_masks[] = { IBV_QP_INIT_ATTR_IND_TABLE,
					      IBV_QP_INIT_ATTR_RX_HASH,
					      IBV_QP_INIT_ATTR_MAX_TSO_HEADER };
	for (size_t i = 0; i < 3; i++) {
		a = attr_ex(IBV_QPT_UD, IBV_QP_EX_WITH_SEND);
		a.comp_mask |= raw_masks[i];
		EXPECT_FAIL(EOPNOTSUPP);
	}

	/* create flags: unknown ones invalid, known ones not honoured */
	static const uint32_t bad_flags[] = { 1 << 0, 1 << 3, 1 << 20 };
	for (size_t i = 0; i < 3; i++) {
		a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
		a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		a.create_flags = bad_flags[i];
		EXPECT_FAIL(EINVAL);
	}
	static const uint32_t known_flags[] = {
		IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, IBV_QP_CREATE_SCATTER_FCS,
		IBV_QP_CREATE_CVLAN_STRIPPING, IBV_QP_CREATE_SOURCE_QPN,
		IBV_QP_CREATE_PCI_WRITE_END_PADDING
	};
	for (size_t i = 0; i < 5; i++) {
		a = attr_ex(IBV_QPT_UD, IBV_QP_EX_WITH_SEND);
		a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		a.create_flags = known_flags[i];
		EXPECT_FAIL(EOPNOTSUPP);
	}
	/* ... and no flag at all is fine */
	a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	a.create_flags = 0;
	qp = ibv_create_qp_ex(ctx, &a);
	CHECK(qp != NULL);
	if (qp)
		CHECK_EQ(ibv_destroy_qp(qp), 0);

	/* send_ops_flags the QP type (or the device) cannot carry */
	static const struct {
		enum ibv_qp_type t;
		uint64_t ops;
	} bad_ops[] = {
		{ IBV_QPT_RC, IBV_QP_EX_WITH_TSO },
		{ IBV_QPT_RC, 1ULL << 11 },
		{ IBV_QPT_RC, 1ULL << 40 },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_SEND_WITH_INV },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_WRITE },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_ATOMIC_WRITE },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_READ },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_LOCAL_INV },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_SEND_WITH_INV },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_TSO },
		{ IBV_QPT_RAW_PACKET, IBV_QP_EX_WITH_SEND },
	};
	for (size_t i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
		a = attr_ex(bad_ops[i].t, IBV_QP_EX_WITH_SEND | bad_ops[i].ops);
		EXPECT_FAIL(EOPNOTSUPP);
	}
	/* memory-window operations follow the device's capabilities */
	bool mgt = da.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS;
	bool mw2 = da.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
					  IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	static const uint64_t mw_ops[] = { IBV_QP_EX_WITH_LOCAL_INV,
					   IBV_QP_EX_WITH_SEND_WITH_INV,
					   IBV_QP_EX_WITH_BIND_MW };
	for (size_t i = 0; i < 3; i++) {
		bool ok = i < 2 ? mgt : mw2;

		a = attr_ex(IBV_QPT_RC, mw_ops[i]);
		errno = 0;
		qp = ibv_create_qp_ex(ctx, &a);
		CHECK((qp != NULL) == ok);
		if (qp)
			CHECK_EQ(ibv_destroy_qp(qp), 0);
		else
			CHECK_EQ(errno, EOPNOTSUPP);
	}

	/* ibv_create_qp's own rules hold on this path too */
	a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.send_cq = NULL;
	EXPECT_FAIL(EINVAL);
	a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.cap.max_send_wr = da.max_qp_wr + 1;
	EXPECT_FAIL(EINVAL);
	a = attr_ex(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	a.cap.max_send_sge = da.max_sge + 1;
	EXPECT_FAIL(EINVAL);
#undef EXPECT_FAIL
}

static void test_create_ok(void)
{
	static const struct {
		enum ibv_qp_type t;
		uint64_t ops;
	} good[] = {
		{ IBV_QPT_RC, RC_OPS },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_RDMA_READ },
		{ IBV_QPT_RC, 0 },
		{ IBV_QPT_UC, UC_OPS },
		{ IBV_QPT_UD, UD_OPS },
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct ibv_qp_init_attr_ex a = attr_ex(good[i].t, good[i].ops);
		struct ibv_qp_init_attr qia;
		struct ibv_qp_attr qa;
		struct ibv_qp_ex *x;
		struct ibv_qp *qp;

		a.qp_context = &a;
		a.sq_sig_all = 1;
		qp = ibv_create_qp_ex(ctx, &a);
		REQUIRE(qp);
		CHECK_EQ(qp->qp_type, good[i].t);
		CHECK_EQ(qp->state, IBV_QPS_RESET);
		CHECK(qp->pd == pd && qp->send_cq == cq && qp->recv_cq == cq);
		CHECK(qp->qp_context == &a);
		CHECK(qp->context == ctx);
		/* the granted caps are written back, at least those asked */
		CHECK(a.cap.max_send_wr >= 16 && a.cap.max_send_sge >= 4 &&
		      a.cap.max_inline_data >= 64 && a.cap.max_recv_wr >= 4);
		CHECK_EQ(ibv_query_qp(qp, &qa, 0, &qia), 0);
		CHECK(!memcmp(&qia.cap, &a.cap, sizeof(a.cap)));
		CHECK_EQ(qia.sq_sig_all, 1);

		x = ibv_qp_to_qp_ex(qp);
		REQUIRE(x);
		CHECK(&x->qp_base == qp);
		CHECK(x->wr_start && x->wr_complete && x->wr_abort);
		CHECK(x->wr_send && x->wr_send_imm && x->wr_send_inv &&
		      x->wr_send_tso);
		CHECK(x->wr_rdma_write && x->wr_rdma_write_imm &&
		      x->wr_rdma_read);
		CHECK(x->wr_atomic_cmp_swp && x->wr_atomic_fetch_add &&
		      x->wr_atomic_write);
		CHECK(x->wr_bind_mw && x->wr_local_inv);
		CHECK(x->wr_set_sge && x->wr_set_sge_list &&
		      x->wr_set_inline_data && x->wr_set_inline_data_list &&
		      x->wr_set_ud_addr && x->wr_set_xrc_srqn);
		CHECK_EQ(ibv_destroy_qp(qp), 0);
	}

	/* no ibv_qp_ex view without send_ops_flags */
	struct ibv_qp_init_attr_ex a = attr_ex(IBV_QPT_RC, 0);
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1,
			 .max_recv_wr = 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp;

	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = ibv_create_qp_ex(ctx, &a);
	REQUIRE(qp);
	errno = 0;
	CHECK(ibv_qp_to_qp_ex(qp) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	/* comp_mask == PD only: the header sends it to ibv_create_qp */
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	qp = ibv_create_qp_ex(ctx, &a);
	REQUIRE(qp);
	CHECK(ibv_qp_to_qp_ex(qp) == NULL);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	qp = ibv_create_qp(pd, &ia);
	REQUIRE(qp);
	CHECK(ibv_qp_to_qp_ex(qp) == NULL);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
}

/* ---- the chain handed to post_send -------------------------------------- */

static int expect_chain(struct ibv_qp_ex *x, int n)
{
	int rc;

	rec.calls = 0;
	rc = ibv_wr_complete(x);
	CHECK_EQ(rc, 0);
	CHECK_EQ(rec.calls, n ? 1 : 0);
	CHECK_EQ(rec.n, n);
	return rc;
}

/* IBA 1.5 ATOMIC WRITE through ibv_wr_atomic_write: the 8 bytes are
 * copied at the call (inline, whatever max_inline_data was asked for),
 * the destination is the WR's rdma fields, and no data setter follows. */
static void test_atomic_write_batch(void)
{
	struct ibv_qp *qp = mkqp(
		IBV_QPT_RC, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	uint64_t v = 0x1122334455667788ULL, v2 = 7;

	REQUIRE(x);
	REQUIRE(to_rts(qp) == 0);
	rec_reset();
	ibv_wr_start(x);
	x->wr_id = 40;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, 0x4321, 0x10008, &v);
	v = 0; /* copied already */
	x->wr_id = 41;
	ibv_wr_atomic_write(x, 0x4322, 0x10010, &v2);
	expect_chain(x, 2);
	CHECK_EQ(rec.wr[0].opcode, IBV_WR_ATOMIC_WRITE);
	CHECK_EQ(rec.wr[0].wr_id, 40);
	CHECK_EQ(rec.wr[0].send_flags, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	CHECK(rec.wr[0].wr.rdma.rkey == 0x4321 &&
	      rec.wr[0].wr.rdma.remote_addr == 0x10008);
	CHECK(rec.wr[0].num_sge == 1 && rec.sge[0][0].length == 8);
	v = 0x1122334455667788ULL;
	CHECK(!memcmp(rec.data[0], &v, 8));
	CHECK(rec.wr[1].wr.rdma.rkey == 0x4322 && !memcmp(rec.data[1], &v2, 8));

	/* no data setter after it, and the data pointer is required */
	rec_reset();
	ibv_wr_start(x);
	ibv_wr_atomic_write(x, 1, 8, &v);
	ibv_wr_set_sge(x, 1, 2, 8);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_atomic_write(x, 1, 8, NULL);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	CHECK_EQ(rec.calls, 0);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
}

static void test_builders_rc(void)
{
	struct ibv_qp *qp = mkqp(IBV_QPT_RC, RC_OPS);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	struct ibv_sge list[3] = { { 0x1000, 10, 0x11 },
				   { 0x2000, 20, 0x22 },
				   { 0x3000, 30, 0x33 } };
	uint64_t res;

	REQUIRE(x);
	REQUIRE(to_rts(qp) == 0);
	rec_reset();

	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 0x44, 0x4000, 40);
	x->wr_id = 2;
	x->wr_flags = IBV_SEND_FENCE;
	ibv_wr_send_imm(x, htonl(0xfeed));
	ibv_wr_set_sge_list(x, 3, list);
	list[0].length = 999; /* the list was copied by the setter */
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_rdma_write(x, 0xabcd, 0x123456789aULL);
	ibv_wr_set_sge(x, 0x55, 0x5000, 50); /* not inline: INLINE dropped */
	x->wr_id = 4;
	x->wr_flags = 0;
	ibv_wr_rdma_write_imm(x, 0xbcde, 0x2000, htonl(7));
	/* no data setter: a zero-length message */
	x->wr_id = 5;
	ibv_wr_rdma_read(x, 0xcdef, 0x3000);
	ibv_wr_set_sge(x, 0x66, 0x6000, 4096);
	x->wr_id = 6;
	ibv_wr_atomic_cmp_swp(x, 0xdef0, 0x4008, 111, 222);
	ibv_wr_set_sge(x, 0x77, (uintptr_t)&res, 8);
	x->wr_id = 7;
	ibv_wr_atomic_fetch_add(x, 0xef01, 0x5010, 333);
	ibv_wr_set_sge(x, 0x88, (uintptr_t)&res, 16);
	x->wr_id = 999; /* after the last builder: used by nothing */
	x->wr_flags = IBV_SEND_SOLICITED;
	expect_chain(x, 7);

	struct ibv_send_wr *w = rec.wr;

	for (int i = 0; i < 7; i++) {
		CHECK_EQ(w[i].wr_id, i + 1);
		CHECK((w[i].next == NULL) == (i == 6));
		CHECK(!(w[i].send_flags & IBV_SEND_INLINE));
	}
	CHECK_EQ(w[0].opcode, IBV_WR_SEND);
	CHECK_EQ(w[0].send_flags, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	CHECK_EQ(w[0].num_sge, 1);
	CHECK(rec.sge[0][0].addr == 0x4000 && rec.sge[0][0].length == 40 &&
	      rec.sge[0][0].lkey == 0x44);
	CHECK_EQ(w[1].opcode, IBV_WR_SEND_WITH_IMM);
	CHECK_EQ(w[1].send_flags, IBV_SEND_FENCE);
	CHECK_EQ(w[1].imm_data, htonl(0xfeed));
	CHECK_EQ(w[1].num_sge, 3);
	CHECK(rec.sge[1][0].length == 10 && rec.sge[1][1].addr == 0x2000 &&
	      rec.sge[1][2].lkey == 0x33 && rec.sge[1][2].length == 30);
	CHECK_EQ(w[2].opcode, IBV_WR_RDMA_WRITE);
	CHECK_EQ(w[2].send_flags, IBV_SEND_SIGNALED);
	CHECK(w[2].wr.rdma.rkey == 0xabcd &&
	      w[2].wr.rdma.remote_addr == 0x123456789aULL);
	CHECK(w[2].num_sge == 1 && rec.sge[2][0].lkey == 0x55);
	CHECK_EQ(w[3].opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
	CHECK_EQ(w[3].imm_data, htonl(7));
	CHECK(w[3].wr.rdma.rkey == 0xbcde &&
	      w[3].wr.rdma.remote_addr == 0x2000);
	CHECK(w[3].num_sge == 0 && w[3].sg_list == NULL);
	CHECK_EQ(w[4].opcode, IBV_WR_RDMA_READ);
	CHECK(w[4].wr.rdma.rkey == 0xcdef &&
	      w[4].wr.rdma.remote_addr == 0x3000);
	CHECK(w[4].num_sge == 1 && rec.sge[4][0].length == 4096);
	CHECK_EQ(w[5].opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
	CHECK(w[5].wr.atomic.rkey == 0xdef0 &&
	      w[5].wr.atomic.remote_addr == 0x4008 &&
	      w[5].wr.atomic.compare_add == 111 && w[5].wr.atomic.swap == 222);
	CHECK(w[5].num_sge == 1 && rec.sge[5][0].addr == (uintptr_t)&res);
	CHECK_EQ(w[6].opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
	CHECK(w[6].wr.atomic.rkey == 0xef01 &&
	      w[6].wr.atomic.remote_addr == 0x5010 &&
	      w[6].wr.atomic.compare_add == 333);

	/* inline: copied when the setter runs, lists concatenated */
	char a1[] = "hello, ", a2[] = "inline ", a3[] = "world", full[64];
	struct ibv_data_buf bufs[3] = { { a1, 7 }, { a2, 7 }, { a3, 5 } };

	for (int i = 0; i < 64; i++)
		full[i] = (char)(i * 7 + 1);
	rec_reset();
	ibv_wr_start(x);
	x->wr_id = 10;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, a1, 7);
	a1[0] = 'X';
	x->wr_id = 11;
	ibv_wr_rdma_write(x, 1, 2);
	ibv_wr_set_inline_data_list(x, 3, bufs);
	a2[0] = 'Y';
	x->wr_id = 12;
	ibv_wr_send_imm(x, 5);
	ibv_wr_set_inline_data(x, a3, 0); /* empty inline message */
	x->wr_id = 13;
	ibv_wr_rdma_write_imm(x, 3, 4, 6);
	ibv_wr_set_inline_data(x, full, 64); /* exactly max_inline_data */
	expect_chain(x, 4);
	CHECK_EQ(rec.wr[0].send_flags, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	CHECK(rec.wr[0].num_sge == 1 && rec.sge[0][0].length == 7);
	CHECK(!memcmp(rec.data[0], "hello, ", 7));
	CHECK(rec.wr[1].num_sge == 1 && rec.sge[1][0].length == 19);
	CHECK(!memcmp(rec.data[1], "Xello, inline world", 19));
	CHECK(rec.wr[1].send_flags & IBV_SEND_INLINE);
	CHECK(rec.wr[2].num_sge == 0 &&
	      (rec.wr[2].send_flags & IBV_SEND_INLINE));
	CHECK(rec.wr[3].num_sge == 1 && rec.sge[3][0].length == 64);
	CHECK(!memcmp(rec.data[3], full, 64));

	/* an empty batch posts nothing and succeeds */
	rec_reset();
	ibv_wr_start(x);
	expect_chain(x, 0);

	/* abort discards; the next batch starts clean */
	ibv_wr_start(x);
	x->wr_id = 20;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, 1, 2, 3);
	ibv_wr_set_sge(x, 1, 2, 3); /* an error, discarded with the rest */
	ibv_wr_abort(x);
	CHECK_EQ(rec.calls, 0);
	ibv_wr_start(x);
	x->wr_id = 21;
	ibv_wr_send(x);
	expect_chain(x, 1);
	CHECK_EQ(rec.wr[0].wr_id, 21);

	/* a full send queue's worth in one batch */
	uint32_t max = 16;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;

	REQUIRE(ibv_query_qp(qp, &qa, 0, &qia) == 0);
	max = qia.cap.max_send_wr;
	REQUIRE(max <= REC_MAX);
	rec_reset();
	ibv_wr_start(x);
	for (uint32_t i = 0; i < max; i++) {
		x->wr_id = 100 + i;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, i, i * 0x100, i);
	}
	expect_chain(x, (int)max);
	for (uint32_t i = 0; i < max; i++)
		CHECK(rec.wr[i].wr_id == 100 + i && rec.sge[i][0].lkey == i &&
		      rec.sge[i][0].length == i);
	/* ... and one more can never fit */
	rec_reset();
	ibv_wr_start(x);
	for (uint32_t i = 0; i <= max; i++) {
		ibv_wr_send(x);
		ibv_wr_set_sge(x, i, i * 0x100, i);
	}
	CHECK_EQ(ibv_wr_complete(x), ENOMEM);
	CHECK_EQ(rec.calls, 0);

	/* the post path's own error comes back (WRs before it are posted
	 * by it, as with ibv_post_send) */
	rec_reset();
	rec.fail_at = 1;
	rec.fail_err = ENOMEM;
	ibv_wr_start(x);
	x->wr_id = 30;
	ibv_wr_send(x);
	x->wr_id = 31;
	ibv_wr_send(x);
	CHECK_EQ(ibv_wr_complete(x), ENOMEM);
	CHECK(rec.bad && rec.bad->wr_id == 31);
	rec.fail_at = -1;

	CHECK_EQ(ibv_destroy_qp(qp), 0);
	test_atomic_write_batch();
}

/* Each misuse fails the whole batch: wr_complete returns the error and
 * nothing reaches the post path; the next batch is unaffected. */
static void test_batch_errors(void)
{
	/* (ATOMIC WRITE's own errors: test_atomic_write_batch) */
	struct ibv_qp *qp = mkqp(IBV_QPT_RC, RC_OPS);
	struct ibv_qp *only_send = mkqp(IBV_QPT_RC, IBV_QP_EX_WITH_SEND);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	struct ibv_qp_ex *xs = ibv_qp_to_qp_ex(only_send);
	struct ibv_sge five[5] = { { 0 } };
	struct ibv_sge two8[2] = { { 1, 8, 1 }, { 2, 8, 1 } };
	char big[65] = { 0 };
	struct ibv_data_buf over[2] = { { big, 40 }, { big, 25 } };
	struct ibv_mw_bind_info bi = { 0 };
	int line;

	REQUIRE(x && xs);
	REQUIRE(to_rts(qp) == 0 && to_rts(only_send) == 0);

#define BATCH(qx, err, ...)                                                   \
	do {                                                                  \
		line = __LINE__;                                              \
		rec_reset();                                                  \
		ibv_wr_start(qx);                                             \
		/* a good WR first: it must not be posted either */           \
		qx->wr_id = 1;                                                \
		ibv_wr_send(qx);                                              \
		__VA_ARGS__;                                                  \
		int _rc = ibv_wr_complete(qx);                                \
		if (_rc != (err) || rec.calls)                                \
			fprintf(stderr, "batch at line %d: rc %d calls %d\n", \
				line, _rc, rec.calls);                        \
		CHECK_EQ(_rc, err);                                           \
		CHECK_EQ(rec.calls, 0);                                       \
		/* the next batch is clean */                                 \
		rec_reset();                                                  \
		ibv_wr_start(qx);                                             \
		ibv_wr_send(qx);                                              \
		CHECK_EQ(ibv_wr_complete(qx), 0);                             \
		CHECK_EQ(rec.n, 1);                                           \
	} while (0)

	/* an operation the QP was not created for */
	BATCH(xs, EINVAL, ibv_wr_rdma_write(xs, 1, 2));
	BATCH(xs, EINVAL, ibv_wr_send_imm(xs, 1));
	BATCH(xs, EINVAL, ibv_wr_rdma_read(xs, 1, 2));
	BATCH(xs, EINVAL, ibv_wr_atomic_fetch_add(xs, 1, 2, 3));
	/* memory windows and invalidation: not asked for at creation */
	BATCH(x, EINVAL, ibv_wr_send_inv(x, 5));
	BATCH(x, EINVAL, ibv_wr_local_inv(x, 5));
	BATCH(x, EINVAL, ibv_wr_bind_mw(x, NULL, 5, &bi));
	/* not offered at all */
	BATCH(x, EOPNOTSUPP, ibv_wr_send_tso(x, big, 10, 100));
	/* an XRC SRQ number on an RC QP */
	BATCH(x, EINVAL, ibv_wr_set_xrc_srqn(x, 5));
	/* ATOMIC WRITE: not asked for at creation */
	BATCH(x, EINVAL, ibv_wr_atomic_write(x, 1, 0, big));
	/* setters: twice, too many SGEs, too much inline, wrong operation */
	BATCH(x, EINVAL, ibv_wr_set_sge(x, 1, 2, 3);
	      ibv_wr_set_sge(x, 1, 2, 3));
	BATCH(x, EINVAL, ibv_wr_set_sge(x, 1, 2, 3);
	      ibv_wr_set_inline_data(x, big, 1));
	BATCH(x, EINVAL, ibv_wr_set_sge_list(x, 5, five));
	BATCH(x, EINVAL, ibv_wr_set_inline_data(x, big, 65));
	BATCH(x, EINVAL, ibv_wr_set_inline_data_list(x, 2, over));
	BATCH(x, EINVAL, ibv_wr_rdma_read(x, 1, 2);
	      ibv_wr_set_inline_data(x, big, 8));
	BATCH(x, EINVAL, ibv_wr_atomic_cmp_swp(x, 1, 8, 1, 2);
	      ibv_wr_set_inline_data(x, big, 8));
	BATCH(x, EINVAL, ibv_wr_set_ud_addr(x, NULL, 1, 1));
	/* an atomic's result buffer: one SGE of at least 8 bytes */
	BATCH(x, EINVAL, ibv_wr_atomic_cmp_swp(x, 1, 8, 1, 2));
	BATCH(x, EINVAL, ibv_wr_atomic_cmp_swp(x, 1, 8, 1, 2);
	      ibv_wr_set_sge(x, 1, 2, 7));
	BATCH(x, EINVAL, ibv_wr_atomic_fetch_add(x, 1, 8, 1);
	      ibv_wr_set_sge_list(x, 2, two8));
	/* a message above the port's max_msg_sz (2 GiB) */
	struct ibv_sge huge[2] = { { 1, 0x80000000u, 1 }, { 2, 1, 1 } };
	BATCH(x, EINVAL, ibv_wr_set_sge_list(x, 2, huge));
#undef BATCH

	/* a setter before any builder */
	rec_reset();
	ibv_wr_start(x);
	ibv_wr_set_sge(x, 1, 2, 3);
	ibv_wr_send(x);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	CHECK_EQ(rec.calls, 0);

	/* wr_complete without wr_start; wr_abort without one is harmless */
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	ibv_wr_abort(x);
	/* builders outside a batch are ignored */
	x->wr_id = 77;
	ibv_wr_send(x);
	rec_reset();
	ibv_wr_start(x);
	x->wr_id = 78;
	ibv_wr_send(x);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK(rec.n == 1 && rec.wr[0].wr_id == 78);
	/* a nested wr_start fails the open batch instead of deadlocking */
	rec_reset();
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_start(x);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	CHECK_EQ(rec.calls, 0);

	/* sends are refused before RTS: nothing reaches the post path */
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
	rec_reset();
	ibv_wr_start(x);
	ibv_wr_send(x);
	CHECK_EQ(ibv_wr_complete(x), EINVAL);
	CHECK_EQ(rec.calls, 0);
	/* in ERR they are accepted (and flushed by the engine) */
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	REQUIRE(ibv_modify_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS) == 0);
	a.qp_state = IBV_QPS_ERR;
	REQUIRE(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
	rec_reset();
	ibv_wr_start(x);
	ibv_wr_send(x);
	CHECK_EQ(ibv_wr_complete(x), 0);
	CHECK_EQ(rec.n, 1);

	CHECK_EQ(ibv_destroy_qp(only_send), 0);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
}

static void test_uc_ud(void)
{
	struct ibv_qp *uc = mkqp(IBV_QPT_UC, UC_OPS);
	struct ibv_qp *ud = mkqp(IBV_QPT_UD, UD_OPS);
	struct ibv_qp_ex *xc = ibv_qp_to_qp_ex(uc), *xd = ibv_qp_to_qp_ex(ud);
	struct ibv_ah_attr aa = { .is_global = 1,
				  .grh = { .dgid = gid0, .hop_limit = 64 },
				  .port_num = 1 };
	struct ibv_ah *ah = ibv_create_ah(pd, &aa),
		      *ah2 = ibv_create_ah(pd2, &aa);

	REQUIRE(xc && xd && ah && ah2);
	REQUIRE(to_rts(uc) == 0 && to_rts(ud) == 0);

	/* UC: sends and writes; a READ is not an operation of UC */
	rec_reset();
	ibv_wr_start(xc);
	xc->wr_id = 1;
	ibv_wr_rdma_write(xc, 9, 0x100);
	ibv_wr_set_sge(xc, 1, 2, 3);
	xc->wr_id = 2;
	ibv_wr_send_imm(xc, 4);
	expect_chain(xc, 2);
	CHECK(rec.wr[0].opcode == IBV_WR_RDMA_WRITE &&
	      rec.wr[0].wr.rdma.rkey == 9);
	CHECK(rec.wr[1].opcode == IBV_WR_SEND_WITH_IMM);
	rec_reset();
	ibv_wr_start(xc);
	ibv_wr_rdma_read(xc, 9, 0x100);
	CHECK_EQ(ibv_wr_complete(xc), EINVAL);
	CHECK_EQ(rec.calls, 0);

	/* UD: every WR carries its address */
	rec_reset();
	ibv_wr_start(xd);
	xd->wr_id = 5;
	ibv_wr_send(xd);
	ibv_wr_set_ud_addr(xd, ah, 0x123456, 0x11111111);
	ibv_wr_set_sge(xd, 7, 8, 9);
	xd->wr_id = 6;
	ibv_wr_send_imm(xd, htonl(3));
	ibv_wr_set_inline_data(xd, "ud!", 3);
	ibv_wr_set_ud_addr(xd, ah, 0x42, 0x22);
	expect_chain(xd, 2);
	CHECK(rec.wr[0].wr.ud.ah == ah &&
	      rec.wr[0].wr.ud.remote_qpn == 0x123456 &&
	      rec.wr[0].wr.ud.remote_qkey == 0x11111111);
	CHECK(rec.wr[0].num_sge == 1 && rec.sge[0][0].lkey == 7);
	CHECK(rec.wr[1].wr.ud.remote_qpn == 0x42 &&
	      rec.wr[1].imm_data == htonl(3));
	CHECK(!memcmp(rec.data[1], "ud!", 3));

	static const struct {
		struct ibv_ah *ah;
		uint32_t qpn;
		bool call;
	} bad[] = { { NULL, 1, true },
		    { NULL, 1, false },
		    { NULL, 1, true },
		    { NULL, 0x1000000, true } };
	for (int i = 0; i < 4; i++) {
		struct ibv_ah *use = i == 2 ? ah2 : i == 3 ? ah : bad[i].ah;

		rec_reset();
		ibv_wr_start(xd);
		ibv_wr_send(xd);
		if (bad[i].call)
			ibv_wr_set_ud_addr(xd, use, bad[i].qpn, 1);
		CHECK_EQ(ibv_wr_complete(xd), EINVAL);
		CHECK_EQ(rec.calls, 0);
	}
	/* and a UD QP does no RDMA */
	rec_reset();
	ibv_wr_start(xd);
	ibv_wr_rdma_write(xd, 1, 2);
	ibv_wr_set_ud_addr(xd, ah, 1, 1);
	CHECK_EQ(ibv_wr_complete(xd), EINVAL);

	CHECK_EQ(ibv_destroy_ah(ah), 0);
	CHECK_EQ(ibv_destroy_ah(ah2), 0);
	CHECK_EQ(ibv_destroy_qp(uc), 0);
	CHECK_EQ(ibv_destroy_qp(ud), 0);
}

/* ---- the critical region ------------------------------------------------ */

#define THREADS 4
#define ROUNDS 300
#define PER 5

static struct ibv_qp_ex *shared_x;
static int chain_mixed;

static void *poster(void *arg)
{
	uint64_t t = (uintptr_t)arg;

	for (int r = 0; r < ROUNDS; r++) {
		ibv_wr_start(shared_x);
		for (int k = 0; k < PER; k++) {
			shared_x->wr_id = t << 32 | (uint64_t)(r * PER + k);
			ibv_wr_send(shared_x);
			ibv_wr_set_sge(shared_x, (uint32_t)t, 0, 0);
		}
		if (ibv_wr_complete(shared_x))
			chain_mixed++;
		/* inside the region the recorder saw only this batch */
	}
	return NULL;
}

static int seen_per_thread[THREADS];

static int checking_recorder(struct ibv_qp *qp, struct ibv_send_wr *wr,
			     struct ibv_send_wr **bad_wr)
{
	uint64_t t = wr->wr_id >> 32;
	int n = 0;

	for (; wr; wr = wr->next, n++)
		if (wr->wr_id >> 32 != t || wr->sg_list[0].lkey != t)
			chain_mixed++;
	if (n != PER || t >= THREADS)
		chain_mixed++;
	else
		seen_per_thread[t] += n;
	return 0;
}

static void test_concurrency(void)
{
	struct ibv_qp *qp = mkqp(IBV_QPT_RC, RC_OPS);
	pthread_t th[THREADS];

	shared_x = ibv_qp_to_qp_ex(qp);
	REQUIRE(shared_x && to_rts(qp) == 0);
	ctx->ops.post_send = checking_recorder;
	for (uintptr_t t = 0; t < THREADS; t++)
		REQUIRE(pthread_create(&th[t], NULL, poster, (void *)t) == 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	CHECK_EQ(chain_mixed, 0);
	for (int t = 0; t < THREADS; t++)
		CHECK_EQ(seen_per_thread[t], ROUNDS * PER);
	ctx->ops.post_send = recorder;
	CHECK_EQ(ibv_destroy_qp(qp), 0);
}

int main(void)
{
	int (*real_post_send)(struct ibv_qp *, struct ibv_send_wr *,
			      struct ibv_send_wr **);

	ctx = open_ctx();
	ctx2 = open_ctx();
	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx2);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	REQUIRE(pd && pd2 && cq);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid0) == 0);

	test_create_rules();
	test_create_ok();
	real_post_send = ctx->ops.post_send;
	ctx->ops.post_send = recorder;
	test_builders_rc();
	test_batch_errors();
	test_uc_ud();
	test_concurrency();
	ctx->ops.post_send = real_post_send;

	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	CHECK_EQ(ibv_close_device(ctx2), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
