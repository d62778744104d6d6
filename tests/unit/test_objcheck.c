/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Objects a verb must refuse, as the kernel refuses them by their handle:
 * for a PD, CQ (and one made by ibv_create_cq_ex), MR, MW, SRQ, AH and QP,
 * whose handle field is garbled, or holds the handle of another live
 * object of its kind, or whose context pointer is another open context,
 * every destroy, create-on, modify and query verb fails with EINVAL and
 * leaves the object alone: restored, it works and is destroyed once.
 * Random handles and random context pointers (fuzz) are refused the same
 * way by the exported destroy verbs, which never follow a context pointer
 * that is not an open context.
 * Then the device limits hold at the value ibv_query_device advertises
 * (max_cq, max_srq: one more is ENOMEM, and one freed makes room), and
 * handles freed are handed out again.
 */
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "ctx.h"

static struct ibv_context *ctx, *other;
static struct ibv_pd *pd, *pd2;
static struct ibv_cq *cq, *cq2;
static char buf[4096];

/* A field broken three ways in turn: garbled, another live object's
 * handle, another context; after each, fn() must see EINVAL. */
#define BROKEN(obj, twin, fn)                            \
	do {                                             \
		uint32_t h_ = (obj)->handle;             \
		struct ibv_context *c_ = (obj)->context; \
                                                         \
		(obj)->handle = 0xdead0000u ^ h_;        \
		fn;                                      \
		(obj)->handle = (twin)->handle;          \
		fn;                                      \
		(obj)->handle = h_;                      \
		(obj)->context = other;                  \
		fn;                                      \
		(obj)->context = c_;                     \
	} while (0)

#define FAILS_EINVAL(call)                                                  \
	do {                                                                \
		errno = 0;                                                  \
		int rc_ = (call);                                           \
		if (rc_ != EINVAL) {                                        \
			fprintf(stderr, "line %d: %s -> %d, want EINVAL\n", \
				__LINE__, #call, rc_);                      \
			check_failed++;                                     \
		} else {                                                    \
			check_passed++;                                     \
		}                                                           \
	} while (0)

#define NULL_EINVAL(call)                                                         \
	do {                                                                      \
		errno = 0;                                                        \
		void *p_ = (call);                                                \
		if (p_ || errno != EINVAL) {                                      \
			fprintf(stderr,                                           \
				"line %d: %s -> %p errno %d, want NULL EINVAL\n", \
				__LINE__, #call, p_, errno);                      \
			check_failed++;                                           \
		} else {                                                          \
			check_passed++;                                           \
		}                                                                 \
	} while (0)

static struct ibv_qp_init_attr qp_attr(struct ibv_cq *c, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = c,
		.recv_cq = c,
		.srq = srq,
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	return a;
}

static struct ibv_srq *new_srq(struct ibv_pd *p)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = 4, .max_sge = 1 } };

	return ibv_create_srq(p, &a);
}

static struct ibv_ah *new_ah(struct ibv_pd *p)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };
	int g = loopback_gid(ctx);

	REQUIRE(g >= 0);
	REQUIRE(ibv_query_gid(ctx, 1, g, &a.grh.dgid) == 0);
	a.grh.sgid_index = (uint8_t)g;
	a.grh.hop_limit = 1;
	return ibv_create_ah(p, &a);
}

static void test_pd(void)
{
	struct ibv_qp_init_attr qa = qp_attr(cq, NULL);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_pd *p = ibv_alloc_pd(ctx);

	REQUIRE(p);
	BROKEN(p, pd2, FAILS_EINVAL(ibv_dealloc_pd(p)));
	BROKEN(p, pd2, NULL_EINVAL(ibv_reg_mr(p, buf, sizeof(buf), 0)));
	BROKEN(p, pd2, NULL_EINVAL(ibv_create_qp(p, &qa)));
	BROKEN(p, pd2, NULL_EINVAL(ibv_create_srq(p, &sa)));
	BROKEN(p, pd2, NULL_EINVAL(ibv_create_ah(p, &aa)));
	BROKEN(p, pd2, NULL_EINVAL(ibv_alloc_mw(p, IBV_MW_TYPE_2)));
	CHECK_EQ(ibv_dealloc_pd(p), 0);
}

static void test_cq(struct ibv_cq *c)
{
	struct ibv_modify_cq_attr ma = { .attr_mask = IBV_CQ_ATTR_MODERATE,
					 .moderate = { 1, 0 } };
	struct ibv_qp_init_attr qa = qp_attr(c, NULL);
	struct ibv_qp *qp;

	BROKEN(c, cq2, FAILS_EINVAL(ibv_destroy_cq(c)));
	BROKEN(c, cq2, FAILS_EINVAL(ibv_resize_cq(c, 8)));
	BROKEN(c, cq2, FAILS_EINVAL(ibv_modify_cq(c, &ma)));
	BROKEN(c, cq2, NULL_EINVAL(ibv_create_qp(pd, &qa)));
	/* Restored, it is what it was. */
	CHECK_EQ(ibv_resize_cq(c, 8), 0);
	qp = ibv_create_qp(pd, &qa);
	CHECK(qp != NULL);
	if (qp)
		CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_cq(c), 0);
}

static void test_mr(void)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), 0);
	struct ibv_mr *twin = ibv_reg_mr(pd, buf, 64, 0);

	REQUIRE(mr && twin);
	BROKEN(mr, twin, FAILS_EINVAL(ibv_dereg_mr(mr)));
	BROKEN(mr, twin,
	       FAILS_EINVAL(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
					 NULL, 0, IBV_ACCESS_LOCAL_WRITE) ?
				    errno :
				    0));
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE),
		 0);
	CHECK_EQ(ibv_dereg_mr(twin), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
}

static void test_mw(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw *twin = ibv_alloc_mw(pd, IBV_MW_TYPE_2);

	REQUIRE(mw && twin);
	BROKEN(mw, twin, FAILS_EINVAL(ibv_dealloc_mw(mw)));
	CHECK_EQ(ibv_dealloc_mw(twin), 0);
	CHECK_EQ(ibv_dealloc_mw(mw), 0);
}

static void test_srq(void)
{
	struct ibv_srq *srq = new_srq(pd), *twin = new_srq(pd);
	struct ibv_srq_attr a = { .max_wr = 8 };
	struct ibv_qp_init_attr qa = qp_attr(cq, srq);

	REQUIRE(srq && twin);
	BROKEN(srq, twin, FAILS_EINVAL(ibv_destroy_srq(srq)));
	BROKEN(srq, twin,
	       FAILS_EINVAL(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR)));
	BROKEN(srq, twin, FAILS_EINVAL(ibv_query_srq(srq, &a)));
	BROKEN(srq, twin, NULL_EINVAL(ibv_create_qp(pd, &qa)));
	CHECK_EQ(ibv_query_srq(srq, &a), 0);
	CHECK_EQ(ibv_destroy_srq(twin), 0);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
}

static void test_ah(void)
{
	struct ibv_ah *ah = new_ah(pd), *twin = new_ah(pd);

	REQUIRE(ah && twin);
	BROKEN(ah, twin, FAILS_EINVAL(ibv_destroy_ah(ah)));
	CHECK_EQ(ibv_destroy_ah(twin), 0);
	CHECK_EQ(ibv_destroy_ah(ah), 0);
}

static void test_qp(void)
{
	struct ibv_qp_init_attr qa = qp_attr(cq, NULL), ia;
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);
	struct ibv_qp *twin = ibv_create_qp(pd, &qa);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qp_access_flags = 0 };
	const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			 IBV_QP_ACCESS_FLAGS;

	REQUIRE(qp && twin);
	BROKEN(qp, twin, FAILS_EINVAL(ibv_destroy_qp(qp)));
	BROKEN(qp, twin, FAILS_EINVAL(ibv_modify_qp(qp, &a, mask)));
	BROKEN(qp, twin, FAILS_EINVAL(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia)));
	CHECK_EQ(ibv_modify_qp(qp, &a, mask), 0);
	CHECK_EQ(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(a.qp_state, IBV_QPS_INIT);
	CHECK_EQ(ibv_destroy_qp(twin), 0);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
}

/* A field set to random values, FUZZ_N times: destroy refuses each. */
#define FUZZ_N 2000
#define FUZZED(obj, fn)                                                     \
	do {                                                                \
		uint32_t h_ = (obj)->handle;                                \
		struct ibv_context *c_ = (obj)->context;                    \
		int bad_ = 0;                                               \
                                                                            \
		for (int i_ = 0; i_ < FUZZ_N; i_++) {                       \
			(obj)->handle = (uint32_t)random();                 \
			if ((obj)->handle != h_ && (fn) != EINVAL)          \
				bad_++;                                     \
		}                                                           \
		(obj)->handle = h_;                                         \
		for (int i_ = 0; i_ < FUZZ_N; i_++) {                       \
			(obj)->context =                                    \
				(struct ibv_context                         \
					 *)(uintptr_t)((uint64_t)random()   \
							       << 24 ^      \
						       (uint64_t)random()); \
			if ((fn) != EINVAL)                                 \
				bad_++;                                     \
		}                                                           \
		(obj)->context = c_;                                        \
		CHECK_EQ(bad_, 0);                                          \
	} while (0)

static void test_fuzz(void)
{
	struct ibv_qp_init_attr qa = qp_attr(cq, NULL);
	struct ibv_pd *p = ibv_alloc_pd(ctx);
	struct ibv_cq *c = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), 0);
	struct ibv_srq *srq = new_srq(pd);
	struct ibv_ah *ah = new_ah(pd);
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);
	int null = open("/dev/null", O_WRONLY), saved;

	REQUIRE(p && c && mr && srq && ah && qp);
	/* 24,000 refusals, each with its warning: not into the test log. */
	fflush(stderr);
	saved = dup(2);
	REQUIRE(saved >= 0 && null >= 0 && dup2(null, 2) == 2);
	srandom(7);
	FUZZED(p, ibv_dealloc_pd(p));
	FUZZED(c, ibv_destroy_cq(c));
	FUZZED(mr, ibv_dereg_mr(mr));
	FUZZED(srq, ibv_destroy_srq(srq));
	FUZZED(ah, ibv_destroy_ah(ah));
	FUZZED(qp, ibv_destroy_qp(qp));
	dup2(saved, 2);
	close(saved);
	close(null);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_ah(ah), 0);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_destroy_cq(c), 0);
	CHECK_EQ(ibv_dealloc_pd(p), 0);
}

/* Objects outliving their context (pyverbs' garbage collector closes a
 * context before its QP when a test fails): each destroy is refused, the
 * closed context is never followed.  In a child that leaves with _exit:
 * the objects stay allocated, as a provider's do after a close, and a
 * leak checker at exit would count them. */
static void test_after_close(void)
{
	int st;
	pid_t pid = fork();

	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct ibv_context *c = open_ctx();
		struct ibv_pd *p = ibv_alloc_pd(c);
		struct ibv_cq *q = ibv_create_cq(c, 4, NULL, NULL, 0);
		struct ibv_qp_init_attr qa = qp_attr(q, NULL);
		struct ibv_qp *qp = ibv_create_qp(p, &qa);

		REQUIRE(p && q && qp);
		CHECK_EQ(ibv_close_device(c), 0);
		CHECK_EQ(ibv_destroy_qp(qp), EINVAL);
		CHECK_EQ(ibv_destroy_cq(q), EINVAL);
		CHECK_EQ(ibv_dealloc_pd(p), EINVAL);
		fflush(stderr);
		_exit(check_failed ? 1 : 0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ibv_query_device's max_cq CQs can be made, not one more; one destroyed
 * makes room again. */
static void test_limit_cq(void)
{
	struct ibv_device_attr da;
	struct ibv_cq **all;
	struct ibv_cq *c;
	int n, made = 0, i;

	REQUIRE(ibv_query_device(ctx, &da) == 0);
	n = da.max_cq;
	all = calloc((size_t)n, sizeof(*all));
	REQUIRE(all);
	/* cq and cq2 are two of them. */
	for (i = 0; i < n - 2; i++) {
		all[i] = ibv_create_cq(ctx, 1, NULL, NULL, 0);
		if (!all[i])
			break;
		made++;
	}
	CHECK_EQ(made, n - 2);
	errno = 0;
	c = ibv_create_cq(other, 1, NULL, NULL, 0);
	CHECK(c == NULL && errno == ENOMEM);
	if (c)
		ibv_destroy_cq(c);
	CHECK_EQ(ibv_destroy_cq(all[0]), 0);
	all[0] = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	CHECK(all[0] != NULL);
	for (i = 0; i < made; i++)
		if (all[i])
			CHECK_EQ(ibv_destroy_cq(all[i]), 0);
	free(all);
}

/* The same for max_srq. */
static void test_limit_srq(void)
{
	struct ibv_device_attr da;
	struct ibv_srq **all, *s;
	int n, made = 0, i;

	REQUIRE(ibv_query_device(ctx, &da) == 0);
	n = da.max_srq;
	all = calloc((size_t)n, sizeof(*all));
	REQUIRE(all);
	for (i = 0; i < n; i++) {
		all[i] = new_srq(pd);
		if (!all[i])
			break;
		made++;
	}
	CHECK_EQ(made, n);
	errno = 0;
	s = new_srq(pd);
	CHECK(s == NULL && errno == ENOMEM);
	CHECK_EQ(ibv_destroy_srq(all[n - 1]), 0);
	all[n - 1] = new_srq(pd);
	CHECK(all[n - 1] != NULL);
	for (i = 0; i < made; i++)
		if (all[i])
			CHECK_EQ(ibv_destroy_srq(all[i]), 0);
	free(all);
}

/* A freed handle is handed out again (the table does not grow with
 * churn). */
static void test_handle_reuse(void)
{
	struct ibv_pd *a = ibv_alloc_pd(ctx), *b;
	uint32_t h;

	REQUIRE(a);
	h = a->handle;
	CHECK_EQ(ibv_dealloc_pd(a), 0);
	b = ibv_alloc_pd(ctx);
	REQUIRE(b);
	CHECK_EQ(b->handle, h);
	CHECK_EQ(ibv_dealloc_pd(b), 0);
}

int main(void)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 4 };
	struct ibv_cq_ex *cqx;

	/* First, while no thread exists: it forks (a sanitizer refuses
	 * threads started after a fork of a threaded process). */
	test_after_close();
	ctx = open_ctx();
	other = open_ctx();
	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	cq2 = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	REQUIRE(pd && pd2 && cq && cq2);
	/* No channel: arming succeeds and arms nothing, as on mlx5
	 * (docs/conformance.md). */
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);

	test_pd();
	test_cq(ibv_create_cq(ctx, 4, NULL, NULL, 0));
	cqx = ibv_create_cq_ex(ctx, &ca);
	REQUIRE(cqx);
	test_cq(ibv_cq_ex_to_cq(cqx));
	test_mr();
	test_mw();
	test_srq();
	test_ah();
	test_qp();
	test_fuzz();
	test_limit_cq();
	test_limit_srq();
	test_handle_reuse();

	CHECK_EQ(ibv_destroy_cq(cq2), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(other), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
