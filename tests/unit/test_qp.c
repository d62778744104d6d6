/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* QP rules: create arguments and caps, the full modify state machine for
 * RC, UC and UD (every legal transition with exactly its required
 * attributes, each required attribute missing, each foreign attribute
 * added, the optional ones accepted, illegal transitions), attribute range
 * checks, query_qp, users of PD/CQ/SRQ, destroy accounting, and the small
 * QP queries.
 *
 * core/cq.c is compiled in to place completions in a CQ, so that reset and
 * destroy can be seen to drop a QP's completions. */
#include "core/cq.c"
#include "util/log.c"

#include <fcntl.h>
#include <pthread.h>
#include <time.h>

#include "check.h"

void sv_async_post(struct sv_context *ctx, const struct ibv_async_event *ev)
{
	struct sv_async_event *e = calloc(1, sizeof(*e));
	char b = 1;

	REQUIRE(e);
	e->ev = *ev;
	pthread_mutex_lock(&ctx->lock);
	list_add_tail(&ctx->async_events, &e->node);
	pthread_mutex_unlock(&ctx->lock);
	REQUIRE(write(ctx->async_pipe[1], &b, 1) == 1);
}

static struct ibv_context *ctx, *ctx2;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static union ibv_gid gid0;

/* ---- the transition table, as IBA 10.3.1 / the kernel state it -------- */

enum { RC, UC, UD, NTYPES };
static const enum ibv_qp_type qpt[NTYPES] = { IBV_QPT_RC, IBV_QPT_UC,
					      IBV_QPT_UD };
static const char *const qpt_name[NTYPES] = { "RC", "UC", "UD" };

#define M(x) IBV_QP_##x

struct transition {
	enum ibv_qp_state cur, next;
	int req[NTYPES], opt[NTYPES];
};

/* clang-format off */
static const struct transition legal[] = {
	{ IBV_QPS_RESET, IBV_QPS_RESET, { 0 }, { 0 } },
	{ IBV_QPS_RESET, IBV_QPS_INIT,
	  { M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
	    M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
	    M(PKEY_INDEX) | M(PORT) | M(QKEY) },
	  { 0 } },
	{ IBV_QPS_INIT, IBV_QPS_RESET, { 0 }, { 0 } },
	{ IBV_QPS_INIT, IBV_QPS_ERR, { 0 }, { 0 } },
	{ IBV_QPS_INIT, IBV_QPS_INIT, { 0 },
	  { M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
	    M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS),
	    M(PKEY_INDEX) | M(PORT) | M(QKEY) } },
	{ IBV_QPS_INIT, IBV_QPS_RTR,
	  { M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
		    M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
	    M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN), 0 },
	  { M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
	    M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX),
	    M(PKEY_INDEX) | M(QKEY) } },
	{ IBV_QPS_RTR, IBV_QPS_RESET, { 0 }, { 0 } },
	{ IBV_QPS_RTR, IBV_QPS_ERR, { 0 }, { 0 } },
	{ IBV_QPS_RTR, IBV_QPS_RTS,
	  { M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) | M(MAX_QP_RD_ATOMIC),
	    M(SQ_PSN), M(SQ_PSN) },
	  { M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
		    M(PATH_MIG_STATE),
	    M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PATH_MIG_STATE),
	    M(CUR_STATE) | M(QKEY) } },
	{ IBV_QPS_RTS, IBV_QPS_RESET, { 0 }, { 0 } },
	{ IBV_QPS_RTS, IBV_QPS_ERR, { 0 }, { 0 } },
	{ IBV_QPS_RTS, IBV_QPS_RTS, { 0 },
	  { M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) | M(PATH_MIG_STATE) |
		    M(MIN_RNR_TIMER),
	    M(CUR_STATE) | M(ACCESS_FLAGS) | M(ALT_PATH) | M(PATH_MIG_STATE),
	    M(CUR_STATE) | M(QKEY) } },
	{ IBV_QPS_RTS, IBV_QPS_SQD, { 0 },
	  { M(EN_SQD_ASYNC_NOTIFY), M(EN_SQD_ASYNC_NOTIFY), M(EN_SQD_ASYNC_NOTIFY) } },
	{ IBV_QPS_SQD, IBV_QPS_RESET, { 0 }, { 0 } },
	{ IBV_QPS_SQD, IBV_QPS_ERR, { 0 }, { 0 } },
	{ IBV_QPS_SQD, IBV_QPS_RTS, { 0 },
	  { M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
		    M(PATH_MIG_STATE),
	    M(CUR_STATE) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PATH_MIG_STATE),
	    M(CUR_STATE) | M(QKEY) } },
	{ IBV_QPS_SQD, IBV_QPS_SQD, { 0 },
	  { M(PORT) | M(AV) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
		    M(MAX_QP_RD_ATOMIC) | M(MAX_DEST_RD_ATOMIC) | M(ALT_PATH) |
		    M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(MIN_RNR_TIMER) |
		    M(PATH_MIG_STATE),
	    M(AV) | M(ALT_PATH) | M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(PATH_MIG_STATE),
	    M(PKEY_INDEX) | M(QKEY) } },
	{ IBV_QPS_ERR, IBV_QPS_RESET, { 0 }, { 0 } },
	{ IBV_QPS_ERR, IBV_QPS_ERR, { 0 }, { 0 } },
};
/* clang-format on */
#define NLEGAL (sizeof(legal) / sizeof(legal[0]))

/* Every attribute bit of ibv_qp_attr_mask besides IBV_QP_STATE. */
static const int all_bits[] = {
	M(CUR_STATE),
	M(EN_SQD_ASYNC_NOTIFY),
	M(ACCESS_FLAGS),
	M(PKEY_INDEX),
	M(PORT),
	M(QKEY),
	M(AV),
	M(PATH_MTU),
	M(TIMEOUT),
	M(RETRY_CNT),
	M(RNR_RETRY),
	M(RQ_PSN),
	M(MAX_QP_RD_ATOMIC),
	M(ALT_PATH),
	M(MIN_RNR_TIMER),
	M(SQ_PSN),
	M(MAX_DEST_RD_ATOMIC),
	M(PATH_MIG_STATE),
	M(CAP),
	M(DEST_QPN),
	M(RATE_LIMIT),
};
#define NBITS (sizeof(all_bits) / sizeof(all_bits[0]))

static const struct transition *find_legal(enum ibv_qp_state cur,
					   enum ibv_qp_state next)
{
	for (size_t i = 0; i < NLEGAL; i++)
		if (legal[i].cur == cur && legal[i].next == next)
			return &legal[i];
	return NULL;
}

/* Valid values for every attribute. */
static void full_attr(struct ibv_qp_attr *a, enum ibv_qp_state cur,
		      enum ibv_qp_state next)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = next;
	a->cur_qp_state = cur;
	a->en_sqd_async_notify = 1;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	a->pkey_index = 0;
	a->port_num = 1;
	a->qkey = 0x11111111;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.dgid = gid0;
	a->ah_attr.grh.sgid_index = 0;
	a->ah_attr.grh.hop_limit = 64;
	a->alt_ah_attr = a->ah_attr;
	a->alt_port_num = 1;
	a->path_mtu = IBV_MTU_1024;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->rq_psn = 0x123;
	a->sq_psn = 0x456;
	a->max_rd_atomic = 4;
	a->max_dest_rd_atomic = 4;
	a->min_rnr_timer = 12;
	a->path_mig_state = IBV_MIG_MIGRATED;
	a->dest_qp_num = 0x1234;
}

static struct ibv_qp *new_qp(int t)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = qpt[t],
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	REQUIRE(qp);
	return qp;
}

static enum ibv_qp_state state_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	REQUIRE(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0);
	return a.qp_state;
}

static int step(struct ibv_qp *qp, int t, enum ibv_qp_state next)
{
	enum ibv_qp_state cur = state_of(qp);
	const struct transition *tr = find_legal(cur, next);
	struct ibv_qp_attr a;

	REQUIRE(tr);
	full_attr(&a, cur, next);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | tr->req[t]);
}

/* Walk a fresh QP to `target` through required-only modifies. */
static void drive(struct ibv_qp *qp, int t, enum ibv_qp_state target)
{
	static const enum ibv_qp_state path[] = { IBV_QPS_INIT, IBV_QPS_RTR,
						  IBV_QPS_RTS, IBV_QPS_SQD };

	if (target == IBV_QPS_RESET)
		return;
	if (target == IBV_QPS_ERR) {
		REQUIRE(step(qp, t, IBV_QPS_INIT) == 0);
		REQUIRE(step(qp, t, IBV_QPS_ERR) == 0);
		return;
	}
	for (size_t i = 0; i < 4; i++) {
		REQUIRE(step(qp, t, path[i]) == 0);
		if (path[i] == target)
			return;
	}
	REQUIRE(!"unreachable target state");
}

static void expect(int got, int want, int t, const struct transition *tr,
		   int mask, const char *what)
{
	if (got == want) {
		check_passed++;
		return;
	}
	check_failed++;
	fprintf(stderr, "%s %d->%d mask %#x (%s): got %d, want %d\n",
		qpt_name[t], tr->cur, tr->next, mask, what, got, want);
}

static void test_legal_transitions(void)
{
	for (int t = 0; t < NTYPES; t++) {
		for (size_t i = 0; i < NLEGAL; i++) {
			const struct transition *tr = &legal[i];
			int req = tr->req[t], opt = tr->opt[t];
			struct ibv_qp_attr a;
			struct ibv_qp *qp = new_qp(t);

			drive(qp, t, tr->cur);
			full_attr(&a, tr->cur, tr->next);
			/* One required attribute missing. */
			for (size_t b = 0; b < NBITS; b++) {
				if (!(req & all_bits[b]))
					continue;
				int mask = (IBV_QP_STATE | req) & ~all_bits[b];

				expect(ibv_modify_qp(qp, &a, mask), EINVAL, t,
				       tr, mask, "required missing");
			}
			/* One attribute this transition does not take. */
			for (size_t b = 0; b < NBITS; b++) {
				if ((req | opt) & all_bits[b])
					continue;
				int mask = IBV_QP_STATE | req | all_bits[b];

				expect(ibv_modify_qp(qp, &a, mask), EINVAL, t,
				       tr, mask, "foreign attribute");
			}
			CHECK_EQ(state_of(qp),
				 tr->cur); /* failures changed nothing */
			/* Exactly the required ones. */
			expect(ibv_modify_qp(qp, &a, IBV_QP_STATE | req), 0, t,
			       tr, IBV_QP_STATE | req, "exactly required");
			CHECK_EQ(state_of(qp), tr->next);
			CHECK_EQ(qp->state, tr->next);
			CHECK_EQ(ibv_destroy_qp(qp), 0);

			/* Required plus every optional one (alternate paths
			 * excepted: RoCE has none, see test_ranges). */
			opt &= ~IBV_QP_ALT_PATH;
			if (!opt)
				continue;
			qp = new_qp(t);
			drive(qp, t, tr->cur);
			expect(ibv_modify_qp(qp, &a, IBV_QP_STATE | req | opt),
			       0, t, tr, IBV_QP_STATE | req | opt,
			       "with optional");
			CHECK_EQ(state_of(qp), tr->next);
			CHECK_EQ(ibv_destroy_qp(qp), 0);
		}
	}
}

/* Every pair missing from the table fails, however complete the mask. */
static void test_illegal_transitions(void)
{
	static const enum ibv_qp_state reachable[] = {
		IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR,
		IBV_QPS_RTS,   IBV_QPS_SQD,  IBV_QPS_ERR,
	};

	for (int t = 0; t < NTYPES; t++) {
		for (size_t c = 0; c < 6; c++) {
			struct ibv_qp *qp = new_qp(t);

			drive(qp, t, reachable[c]);
			for (int next = IBV_QPS_RESET; next <= IBV_QPS_UNKNOWN;
			     next++) {
				struct transition tr = { reachable[c], next };
				struct ibv_qp_attr a;
				int any = 0;

				if (find_legal(reachable[c], next))
					continue;
				/* the union of what any transition requires */
				for (size_t i = 0; i < NLEGAL; i++)
					any |= legal[i].req[t];
				full_attr(&a, reachable[c], next);
				expect(ibv_modify_qp(qp, &a, IBV_QP_STATE),
				       EINVAL, t, &tr, IBV_QP_STATE,
				       "illegal transition");
				expect(ibv_modify_qp(qp, &a,
						     IBV_QP_STATE | any),
				       EINVAL, t, &tr, IBV_QP_STATE | any,
				       "illegal transition");
			}
			CHECK_EQ(state_of(qp), reachable[c]);
			CHECK_EQ(ibv_destroy_qp(qp), 0);
		}
	}
	/* Named ones from the brief and the spec. */
	struct ibv_qp *qp = new_qp(RC);
	struct ibv_qp_attr a;

	full_attr(&a, IBV_QPS_RESET, IBV_QPS_RTS);
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
		 EINVAL);
	a.qp_state = IBV_QPS_ERR; /* IBA: Reset is left only for Init */
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	CHECK_EQ(step(qp, RC, IBV_QPS_INIT), 0);
	full_attr(&a, IBV_QPS_INIT, IBV_QPS_RTS);
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
		 EINVAL);
	a.qp_state = IBV_QPS_SQE; /* only the device moves a QP to SQE */
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	a.qp_state = IBV_QPS_UNKNOWN;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	a.qp_state = (enum ibv_qp_state)42;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	/* No state change: INIT->INIT with nothing is fine, RESET attrs not. */
	CHECK_EQ(ibv_modify_qp(qp, &a, 0), 0);
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_QKEY),
		 EINVAL); /* RC has no Q_Key */
	CHECK_EQ(state_of(qp), IBV_QPS_INIT);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
}

static void test_cur_state(void)
{
	struct ibv_qp *qp = new_qp(RC);
	struct ibv_qp_attr a;

	drive(qp, RC, IBV_QPS_RTS);
	full_attr(&a, IBV_QPS_RTR, IBV_QPS_RTS); /* wrong view of the state */
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE),
		 EINVAL);
	a.cur_qp_state = IBV_QPS_RTS;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
	/* Without IBV_QP_STATE the QP stays where it is. */
	a.min_rnr_timer = 20;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_MIN_RNR_TIMER), 0);
	CHECK_EQ(state_of(qp), IBV_QPS_RTS);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	/* CUR_STATE is not accepted before RTR even when right. */
	qp = new_qp(UD);
	full_attr(&a, IBV_QPS_RESET, IBV_QPS_INIT);
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PORT |
				       IBV_QP_PKEY_INDEX | IBV_QP_QKEY),
		 EINVAL);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
}

/* One attribute out of range in an otherwise good modify: EINVAL, and the
 * QP keeps its state and attributes. */
static void bad_value(struct ibv_qp *qp, int t, enum ibv_qp_state next,
		      int extra, void (*spoil)(struct ibv_qp_attr *), int line)
{
	enum ibv_qp_state cur = state_of(qp);
	const struct transition *tr = find_legal(cur, next);
	struct ibv_qp_attr a, before, after;
	struct ibv_qp_init_attr ia;
	int ret;

	REQUIRE(tr);
	memset(&before, 0, sizeof(before));
	memset(&after, 0, sizeof(after));
	REQUIRE(ibv_query_qp(qp, &before, 0, &ia) == 0);
	full_attr(&a, cur, next);
	spoil(&a);
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | tr->req[t] | extra);
	REQUIRE(ibv_query_qp(qp, &after, 0, &ia) == 0);
	if (ret != EINVAL || memcmp(&before, &after, sizeof(before))) {
		fprintf(stderr,
			"line %d: bad value accepted (%d) or QP changed\n",
			line, ret);
		check_failed++;
	} else {
		check_passed++;
	}
}

/* clang-format off */
static void sp_port2(struct ibv_qp_attr *a) { a->port_num = 2; }
static void sp_port0(struct ibv_qp_attr *a) { a->port_num = 0; }
static void sp_pkey(struct ibv_qp_attr *a) { a->pkey_index = 1; }
static void sp_access(struct ibv_qp_attr *a) { a->qp_access_flags |= 1 << 12; }
static void sp_access10(struct ibv_qp_attr *a) { a->qp_access_flags |= 1 << 10; }
static void sp_mtu0(struct ibv_qp_attr *a) { a->path_mtu = 0; }
static void sp_mtu6(struct ibv_qp_attr *a) { a->path_mtu = 6; }
static void sp_noglobal(struct ibv_qp_attr *a) { a->ah_attr.is_global = 0; }
static void sp_ahport(struct ibv_qp_attr *a) { a->ah_attr.port_num = 2; }
static void sp_ahport0(struct ibv_qp_attr *a) { a->ah_attr.port_num = 0; }
static void sp_sgid(struct ibv_qp_attr *a) { a->ah_attr.grh.sgid_index = 250; }
static void sp_dest_rd(struct ibv_qp_attr *a) { a->max_dest_rd_atomic = 129; }
static void sp_rnr_timer(struct ibv_qp_attr *a) { a->min_rnr_timer = 32; }
static void sp_dqpn(struct ibv_qp_attr *a) { a->dest_qp_num = 1 << 24; }
static void sp_timeout(struct ibv_qp_attr *a) { a->timeout = 32; }
static void sp_retry(struct ibv_qp_attr *a) { a->retry_cnt = 8; }
static void sp_rnr_retry(struct ibv_qp_attr *a) { a->rnr_retry = 8; }
static void sp_rd(struct ibv_qp_attr *a) { a->max_rd_atomic = 200; }
static void sp_mig(struct ibv_qp_attr *a) { a->path_mig_state = 3; }
static void sp_none(struct ibv_qp_attr *a) { (void)a; }
/* clang-format on */

static void test_ranges(void)
{
	struct ibv_device_attr da;
	struct ibv_qp *qp = new_qp(RC);
	int sgid_count = 0;
	union ibv_gid g;

	REQUIRE(ibv_query_device(ctx, &da) == 0);
	CHECK_EQ(da.max_qp_rd_atom, 128); /* the 129/200 below exceed it */
	bad_value(qp, RC, IBV_QPS_INIT, 0, sp_port2, __LINE__);
	bad_value(qp, RC, IBV_QPS_INIT, 0, sp_port0, __LINE__);
	bad_value(qp, RC, IBV_QPS_INIT, 0, sp_pkey, __LINE__);
	bad_value(qp, RC, IBV_QPS_INIT, 0, sp_access, __LINE__);
	bad_value(qp, RC, IBV_QPS_INIT, 0, sp_access10, __LINE__);
	CHECK_EQ(step(qp, RC, IBV_QPS_INIT), 0);
	bad_value(qp, RC, IBV_QPS_RTR, 0, sp_mtu0, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTR, 0, sp_mtu6, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTR, 0, sp_noglobal, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTR, 0, sp_ahport, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTR, 0, sp_ahport0, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTR, 0, sp_sgid, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTR, 0, sp_dest_rd, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTR, 0, sp_rnr_timer, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTR, 0, sp_dqpn, __LINE__);
	/* Alternate paths: in the table, but RoCE has no APM (kernel). */
	bad_value(qp, RC, IBV_QPS_RTR, IBV_QP_ALT_PATH, sp_none, __LINE__);
	/* The first GID index past the table is invalid too. */
	while (sgid_count < 255 && ibv_query_gid(ctx, 1, sgid_count, &g) == 0 &&
	       (g.global.subnet_prefix || g.global.interface_id))
		sgid_count++;
	{
		struct ibv_qp_attr a;

		full_attr(&a, IBV_QPS_INIT, IBV_QPS_RTR);
		a.ah_attr.grh.sgid_index = (uint8_t)sgid_count;
		CHECK_EQ(ibv_modify_qp(qp, &a,
				       IBV_QP_STATE | find_legal(IBV_QPS_INIT,
								 IBV_QPS_RTR)
							      ->req[RC]),
			 EINVAL);
		a.ah_attr.grh.sgid_index = (uint8_t)(sgid_count - 1);
		a.rq_psn =
			0x7abcdef; /* PSNs are 24 bits: masked as the kernel does */
		CHECK_EQ(ibv_modify_qp(qp, &a,
				       IBV_QP_STATE | find_legal(IBV_QPS_INIT,
								 IBV_QPS_RTR)
							      ->req[RC]),
			 0);
	}
	bad_value(qp, RC, IBV_QPS_RTS, 0, sp_timeout, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTS, 0, sp_retry, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTS, 0, sp_rnr_retry, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTS, 0, sp_rd, __LINE__);
	bad_value(qp, RC, IBV_QPS_RTS, IBV_QP_PATH_MIG_STATE, sp_mig, __LINE__);
	CHECK_EQ(state_of(qp), IBV_QPS_RTR);
	CHECK_EQ(ibv_destroy_qp(qp), 0);

	/* Local write in a QP's access flags is harmless (the kernel takes
	 * it, and many programs pass it); only remote rights are kept. */
	qp = new_qp(UC);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	full_attr(&a, IBV_QPS_RESET, IBV_QPS_INIT);
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS),
		 0);
	CHECK_EQ(ibv_query_qp(qp, &a, IBV_QP_ACCESS_FLAGS, &ia), 0);
	CHECK_EQ(a.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	/* FLUSH_GLOBAL and FLUSH_PERSISTENT (1 << 8, 1 << 9 since rdma-core
	 * 43's headers) are access flags a QP takes, as rxe does: rdma-core's
	 * test_qpex sets them on every RC QP. */
	qp = new_qp(RC);
	full_attr(&a, IBV_QPS_RESET, IBV_QPS_INIT);
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | (1 << 8) | (1 << 9);
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS),
		 0);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
}

static void test_query(void)
{
	struct ibv_qp_init_attr ia = {
		.qp_context = &ia,
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = 10,
			 .max_recv_wr = 20,
			 .max_send_sge = 3,
			 .max_recv_sge = 2,
			 .max_inline_data = 100 },
	};
	struct ibv_qp_init_attr qia;
	struct ibv_qp_attr a, q;
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	REQUIRE(qp);
	CHECK_EQ(ibv_query_qp(qp, &q, IBV_QP_STATE, &qia), 0);
	CHECK_EQ(q.qp_state, IBV_QPS_RESET);
	CHECK_EQ(q.cur_qp_state, IBV_QPS_RESET);
	drive(qp, RC, IBV_QPS_RTR);
	full_attr(&a, IBV_QPS_RTR, IBV_QPS_RTS);
	a.sq_psn = 0x1fedcba;
	a.timeout = 18;
	a.retry_cnt = 5;
	a.rnr_retry = 6;
	a.max_rd_atomic = 16;
	CHECK_EQ(ibv_modify_qp(
			 qp, &a,
			 IBV_QP_STATE |
				 find_legal(IBV_QPS_RTR, IBV_QPS_RTS)->req[RC]),
		 0);
	memset(&q, 0xa5, sizeof(q));
	memset(&qia, 0xa5, sizeof(qia));
	CHECK_EQ(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_CAP | IBV_QP_AV,
			      &qia),
		 0);
	CHECK_EQ(q.qp_state, IBV_QPS_RTS);
	CHECK_EQ(q.cur_qp_state, IBV_QPS_RTS);
	CHECK_EQ(q.port_num, 1);
	CHECK_EQ(q.pkey_index, 0);
	CHECK_EQ(q.qp_access_flags,
		 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK_EQ(q.path_mtu, IBV_MTU_1024);
	CHECK_EQ(q.dest_qp_num, 0x1234);
	CHECK_EQ(q.rq_psn, 0x123);
	CHECK_EQ(q.sq_psn, 0xfedcba);
	CHECK_EQ(q.max_dest_rd_atomic, 4);
	CHECK_EQ(q.min_rnr_timer, 12);
	CHECK_EQ(q.timeout, 18);
	CHECK_EQ(q.retry_cnt, 5);
	CHECK_EQ(q.rnr_retry, 6);
	CHECK_EQ(q.max_rd_atomic, 16);
	CHECK_EQ(q.ah_attr.is_global, 1);
	CHECK_EQ(q.ah_attr.port_num, 1);
	CHECK(!memcmp(&q.ah_attr.grh.dgid, &gid0, sizeof(gid0)));
	CHECK_EQ(q.ah_attr.grh.hop_limit, 64);
	CHECK_EQ(q.sq_draining, 0);
	CHECK(q.cap.max_send_wr >= 10 && q.cap.max_recv_wr >= 20);
	CHECK(q.cap.max_send_sge >= 3 && q.cap.max_recv_sge >= 2);
	CHECK(q.cap.max_inline_data >= 100);
	CHECK(qia.qp_context == &ia);
	CHECK(qia.send_cq == cq && qia.recv_cq == cq && qia.srq == NULL);
	CHECK_EQ(qia.qp_type, IBV_QPT_RC);
	CHECK_EQ(qia.sq_sig_all, 1);
	CHECK(!memcmp(&qia.cap, &q.cap, sizeof(q.cap)));
	CHECK(!memcmp(&qia.cap, &ia.cap,
		      sizeof(ia.cap))); /* what create reported */
	/* RTS->SQD->RTS and to ERR, each visible in query and qp->state. */
	a.qp_state = IBV_QPS_SQD;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	CHECK_EQ(state_of(qp), IBV_QPS_SQD);
	a.timeout = 20;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_TIMEOUT), 0); /* SQD->SQD */
	CHECK_EQ(ibv_query_qp(qp, &q, IBV_QP_TIMEOUT, &qia), 0);
	CHECK_EQ(q.timeout, 20);
	a.qp_state = IBV_QPS_ERR;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	CHECK_EQ(qp->state, IBV_QPS_ERR);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
}

static void test_create_rules(void)
{
	struct ibv_device_attr da;
	struct ibv_cq *cq2;
	struct ibv_srq *srq;
	struct ibv_srq_init_attr sia = { .attr = { .max_wr = 8,
						   .max_sge = 1 } };
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp, *qp2;

	REQUIRE(ibv_query_device(ctx, &da) == 0);
	cq2 = ibv_create_cq(ctx2, 4, NULL, NULL, 0);
	srq = ibv_create_srq(pd, &sia);
	REQUIRE(cq2 && srq);

#define BASE_IA                                                      \
	(struct ibv_qp_init_attr)                                    \
	{                                                            \
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, \
		.cap = {.max_send_wr = 1,                            \
			.max_recv_wr = 1,                            \
			.max_send_sge = 1,                           \
			.max_recv_sge = 1 }                          \
	}
#define CREATE_FAILS(field_set, err)         \
	do {                                 \
		ia = BASE_IA;                \
		field_set;                   \
		errno = 0;                   \
		qp = ibv_create_qp(pd, &ia); \
		CHECK(qp == NULL);           \
		CHECK_EQ(errno, err);        \
		if (qp)                      \
			ibv_destroy_qp(qp);  \
	} while (0)

	/* An XRC target needs a domain: ibv_create_qp_ex only (XRC QPs
	 * are tested in test_xrc.c). */
	CREATE_FAILS(ia.qp_type = IBV_QPT_XRC_RECV, EINVAL);
	CREATE_FAILS(ia.qp_type = IBV_QPT_RAW_PACKET, EOPNOTSUPP);
	CREATE_FAILS(ia.qp_type = IBV_QPT_DRIVER, EOPNOTSUPP);
	CREATE_FAILS(ia.qp_type = 0, EINVAL);
	CREATE_FAILS(ia.qp_type = 5, EINVAL);
	CREATE_FAILS(ia.send_cq = NULL, EINVAL);
	CREATE_FAILS(ia.recv_cq = NULL, EINVAL);
	CREATE_FAILS(ia.send_cq = cq2, EINVAL); /* other context */
	CREATE_FAILS(ia.recv_cq = cq2, EINVAL);
	CREATE_FAILS(ia.cap.max_send_wr = da.max_qp_wr + 1, EINVAL);
	CREATE_FAILS(ia.cap.max_recv_wr = da.max_qp_wr + 1, EINVAL);
	CREATE_FAILS(ia.cap.max_send_sge = da.max_sge + 1, EINVAL);
	CREATE_FAILS(ia.cap.max_recv_sge = da.max_sge + 1, EINVAL);
	CREATE_FAILS(ia.cap.max_inline_data = 1025, EINVAL);
	CREATE_FAILS((ia.qp_type = IBV_QPT_UC, ia.srq = srq), EINVAL);
	errno = 0;
	CHECK(ibv_create_qp(NULL, &ia) == NULL);
	CHECK_EQ(errno, EINVAL);

	/* The largest legal caps, and recv caps ignored with an SRQ. */
	ia = BASE_IA;
	ia.cap.max_send_wr = da.max_qp_wr;
	ia.cap.max_recv_wr = da.max_qp_wr;
	ia.cap.max_send_sge = da.max_sge;
	ia.cap.max_recv_sge = da.max_sge;
	ia.cap.max_inline_data = 1024;
	qp = ibv_create_qp(pd, &ia);
	CHECK(qp != NULL);
	if (qp) {
		CHECK_EQ(ia.cap.max_send_wr, da.max_qp_wr);
		CHECK_EQ(ia.cap.max_send_sge, da.max_sge);
		CHECK_EQ(ia.cap.max_inline_data, 1024);
		CHECK_EQ(ibv_destroy_qp(qp), 0);
	}
	ia = BASE_IA;
	ia.srq = srq;
	ia.cap.max_recv_wr = 1u << 30;
	ia.cap.max_recv_sge = 1000;
	qp = ibv_create_qp(pd, &ia);
	CHECK(qp != NULL);
	ia.qp_type = IBV_QPT_UD;
	qp2 = ibv_create_qp(pd, &ia);
	CHECK(qp2 != NULL);
	REQUIRE(qp && qp2);
	CHECK(qp->srq == srq);
	CHECK(qp->qp_num != 0 && qp2->qp_num != 0 && qp->qp_num != qp2->qp_num);
	CHECK(qp->qp_num <= 0xffffff);
	CHECK_EQ(qp->state, IBV_QPS_RESET);
	CHECK_EQ(qp2->qp_type, IBV_QPT_UD);
	CHECK(qp->pd == pd && qp->context == ctx);
	CHECK(qp->send_cq == cq && qp->recv_cq == cq);

	/* Objects in use by QPs cannot go. */
	CHECK_EQ(ibv_destroy_srq(srq), EBUSY);
	CHECK_EQ(ibv_destroy_cq(cq), EBUSY);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_srq(srq), EBUSY);
	CHECK_EQ(ibv_destroy_qp(qp2), 0);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK_EQ(ibv_destroy_cq(cq2), 0);

	/* Requested caps are met or exceeded; zero-sized queues are legal. */
	ia = BASE_IA;
	ia.cap = (struct ibv_qp_cap){ 5, 0, 3, 0, 17 };
	qp = ibv_create_qp(pd, &ia);
	REQUIRE(qp);
	CHECK(ia.cap.max_send_wr >= 5 && ia.cap.max_send_sge >= 3);
	CHECK(ia.cap.max_inline_data >= 17);
	CHECK_EQ(ia.cap.max_recv_wr, 0);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
#undef CREATE_FAILS
#undef BASE_IA
}

static int push_for(struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_wc wc = { .wr_id = wr_id, .qp_num = qp->qp_num };

	return sv_cq_push(to_sv_cq(qp->recv_cq), &wc, false);
}

/* Reset empties the QP's completions from its CQ; so does destroy. */
static void test_reset_and_destroy_clean(void)
{
	struct ibv_qp *a = new_qp(RC), *b = new_qp(RC);
	struct ibv_qp_attr at;
	struct ibv_wc wc[8];

	CHECK_EQ(push_for(a, 1), 0);
	CHECK_EQ(push_for(b, 2), 0);
	CHECK_EQ(push_for(a, 3), 0);
	drive(a, RC, IBV_QPS_RTS);
	full_attr(&at, IBV_QPS_RTS, IBV_QPS_RESET);
	CHECK_EQ(ibv_modify_qp(a, &at, IBV_QP_STATE), 0);
	CHECK_EQ(state_of(a), IBV_QPS_RESET);
	CHECK_EQ(push_for(b, 4), 0);
	CHECK_EQ(push_for(a, 5), 0);
	CHECK_EQ(ibv_poll_cq(cq, 1, wc), 1);
	CHECK_EQ(wc[0].wr_id, 2);
	CHECK_EQ(ibv_destroy_qp(b), 0);
	CHECK_EQ(ibv_poll_cq(cq, 8, wc), 1);
	CHECK_EQ(wc[0].wr_id, 5);
	/* A reset QP starts over. */
	drive(a, RC, IBV_QPS_RTS);
	CHECK_EQ(ibv_destroy_qp(a), 0);
}

struct destroyer {
	struct ibv_qp *qp;
	atomic_int done;
	int ret;
};

static void *destroy_thread(void *arg)
{
	struct destroyer *d = arg;

	d->ret = ibv_destroy_qp(d->qp);
	atomic_store(&d->done, 1);
	return NULL;
}

/* destroy_qp waits for the QP's async events handed out to be acked, and
 * drops the ones nobody read. */
static void test_destroy_events(void)
{
	struct ibv_qp *qp = new_qp(RC);
	struct destroyer d = { qp, 0, -1 };
	struct ibv_async_event ev = { .element.qp = qp,
				      .event_type = IBV_EVENT_QP_FATAL },
			       got;
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	pthread_t t;

	sv_async_post(to_sv_ctx(ctx), &ev);
	CHECK_EQ(ibv_get_async_event(ctx, &got), 0);
	CHECK(got.element.qp == qp);
	CHECK_EQ(got.event_type, IBV_EVENT_QP_FATAL);
	REQUIRE(pthread_create(&t, NULL, destroy_thread, &d) == 0);
	nanosleep(&ts, NULL);
	CHECK_EQ(atomic_load(&d.done), 0);
	ibv_ack_async_event(&got);
	pthread_join(t, NULL);
	CHECK_EQ(d.ret, 0);

	qp = new_qp(UD);
	ev.element.qp = qp;
	ev.event_type = IBV_EVENT_COMM_EST;
	sv_async_post(to_sv_ctx(ctx), &ev);
	CHECK_EQ(ibv_destroy_qp(qp), 0); /* unread: dropped, no wait */
	REQUIRE(fcntl(ctx->async_fd, F_SETFL,
		      fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK) == 0);
	errno = 0;
	CHECK_EQ(ibv_get_async_event(ctx, &got), -1);
	CHECK_EQ(errno, EAGAIN);
}

static void test_small_queries(void)
{
	struct ibv_qp *qp = new_qp(RC);
	struct ibv_ece ece = { 0 };

	errno = 0;
	CHECK(ibv_qp_to_qp_ex(qp) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(ibv_query_qp_data_in_order(qp, IBV_WR_RDMA_WRITE, 0), 0);
	CHECK_EQ(ibv_query_ece(qp, &ece), EOPNOTSUPP);
	CHECK_EQ(ibv_set_ece(qp, &ece), EOPNOTSUPP);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	REQUIRE(list && list[0]);
	ctx = ibv_open_device(list[0]);
	ctx2 = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	REQUIRE(ctx && ctx2);
	REQUIRE(ibv_query_gid(ctx, 1, 0, &gid0) == 0);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	REQUIRE(pd && cq);

	test_create_rules();
	test_legal_transitions();
	test_illegal_transitions();
	test_cur_state();
	test_ranges();
	test_query();
	test_reset_and_destroy_clean();
	test_small_queries();
	test_destroy_events();

	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx2), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
