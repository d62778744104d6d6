/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Extended CQs (ibv_create_cq_ex): argument rules and their errno values,
 * the iterator (start/next/end_poll, ENOENT when empty), every accessor of
 * the wc_flags requested (and none of the others), real completion
 * timestamps against the clocks, ibv_query_rt_values_ex, IGNORE_OVERRUN,
 * mixing with ibv_poll_cq, resize/clean keeping timestamps, channels,
 * ibv_modify_cq (its refusals, moderation by count) and the extended device
 * attributes.
 *
 * As in test_cq.c, the producer side (core/cq.c) is compiled in so that
 * completions can be pushed without a transport. */
#include "core/cq.c"
#include "util/log.c"

#include <poll.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "ctx.h"

static int async_posted;

/* core/cq.c raises IBV_EVENT_CQ_ERR through sv_async_post (hidden in the
 * library): count what would have been raised. */
void sv_async_post(struct sv_context *ctx, const struct ibv_async_event *ev)
{
	async_posted++;
}

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static struct ibv_cq_ex *mk(struct ibv_context *ctx, uint32_t cqe,
			    uint64_t wc_flags)
{
	struct ibv_cq_init_attr_ex a = { .cqe = cqe, .wc_flags = wc_flags };

	return ibv_create_cq_ex(ctx, &a);
}

/* A completion whose every field is distinct, derived from n. */
static struct ibv_wc wc_of(uint32_t n)
{
	struct ibv_wc wc = {
		.wr_id = 0x1000000000ULL + n,
		.status = n % 3 ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR,
		.opcode = n % 2 ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RDMA_READ,
		.vendor_err = 0x50 + n,
		.byte_len = 1000 + n,
		.imm_data = htobe32(0xabc00000 + n),
		.qp_num = 0x100 + n,
		.src_qp = 0x200 + n,
		.wc_flags = IBV_WC_WITH_IMM | (n % 2 ? IBV_WC_GRH : 0),
		.pkey_index = 0,
		.slid = 0x300 + n,
		.sl = n & 0xf,
		.dlid_path_bits = n & 0x7f,
	};

	return wc;
}

static int push(struct ibv_cq_ex *cq, uint32_t n)
{
	struct ibv_wc wc = wc_of(n);

	return sv_cq_push(to_sv_cq(ibv_cq_ex_to_cq(cq)), &wc, false);
}

static void test_create_rules(struct ibv_context *ctx, struct ibv_context *ctx2)
{
	struct ibv_device_attr da;
	struct ibv_comp_channel *ch2 = ibv_create_comp_channel(ctx2);
	struct ibv_cq_init_attr_ex a;
	struct ibv_cq_ex *cq;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	REQUIRE(ch2 && pd);
	REQUIRE(ibv_query_device(ctx, &da) == 0);

#define EXPECT_FAIL(err)                                     \
	do {                                                 \
		errno = 0;                                   \
		cq = ibv_create_cq_ex(ctx, &a);              \
		CHECK(cq == NULL);                           \
		CHECK_EQ(errno, err);                        \
		if (cq)                                      \
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq)); \
	} while (0)

	/* the size, vector and channel rules of ibv_create_cq */
	a = (struct ibv_cq_init_attr_ex){ .cqe = 0 };
	EXPECT_FAIL(EINVAL);
	a = (struct ibv_cq_init_attr_ex){ .cqe = da.max_cqe + 1 };
	EXPECT_FAIL(EINVAL);
	a = (struct ibv_cq_init_attr_ex){ .cqe = 0x80000001u };
	EXPECT_FAIL(EINVAL);
	a = (struct ibv_cq_init_attr_ex){ .cqe = 8, .comp_vector = 1 };
	EXPECT_FAIL(EINVAL);
	a = (struct ibv_cq_init_attr_ex){ .cqe = 8, .channel = ch2 };
	EXPECT_FAIL(EINVAL);

	/* comp_mask: unknown bits; MASK_PD with a plain PD (not a parent
	 * domain) */
	a = (struct ibv_cq_init_attr_ex){ .cqe = 8, .comp_mask = 1 << 2 };
	EXPECT_FAIL(EINVAL);
	a = (struct ibv_cq_init_attr_ex){ .cqe = 8,
					  .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
					  .parent_domain = pd };
	EXPECT_FAIL(EINVAL);

	/* flags: unknown bits only count when the mask says flags are set */
	a = (struct ibv_cq_init_attr_ex){ .cqe = 8,
					  .comp_mask =
						  IBV_CQ_INIT_ATTR_MASK_FLAGS,
					  .flags = 1 << 2 };
	EXPECT_FAIL(EINVAL);
	a = (struct ibv_cq_init_attr_ex){ .cqe = 8, .flags = 1 << 2 };
	cq = ibv_create_cq_ex(ctx, &a);
	CHECK(cq != NULL);
	if (cq)
		CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);

	/* wc_flags we cannot fill */
	static const uint64_t unsup[] = { IBV_WC_EX_WITH_CVLAN,
					  IBV_WC_EX_WITH_FLOW_TAG,
					  IBV_WC_EX_WITH_TM_INFO, 1ULL << 12,
					  1ULL << 40 };
	for (size_t i = 0; i < sizeof(unsup) / sizeof(unsup[0]); i++) {
		a = (struct ibv_cq_init_attr_ex){
			.cqe = 8, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | unsup[i]
		};
		EXPECT_FAIL(EOPNOTSUPP);
	}

	/* NULL attr */
	errno = 0;
	CHECK(verbs_get_ctx(ctx)->create_cq_ex(ctx, NULL) == NULL);
	CHECK_EQ(errno, EINVAL);

	/* good ones: both supported flags, every supported wc_flag */
	a = (struct ibv_cq_init_attr_ex){
		.cqe = 100,
		.cq_context = &a,
		.wc_flags = IBV_WC_STANDARD_FLAGS |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
		.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
			 IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
	};
	cq = ibv_create_cq_ex(ctx, &a);
	REQUIRE(cq);
	CHECK(cq->cqe >= 100);
	CHECK(cq->context == ctx);
	CHECK(cq->cq_context == &a);
	CHECK(cq->channel == NULL);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
#undef EXPECT_FAIL

	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch2), 0);
}

/* Each flag installs its accessor, and only its own. */
static void test_accessor_sets(struct ibv_context *ctx)
{
	static const struct {
		uint64_t flag;
		size_t off;
	} acc[] = {
#define A(f, m) { IBV_WC_EX_WITH_##f, offsetof(struct ibv_cq_ex, m) }
		A(BYTE_LEN, read_byte_len),
		A(IMM, read_imm_data),
		A(QP_NUM, read_qp_num),
		A(SRC_QP, read_src_qp),
		A(SLID, read_slid),
		A(SL, read_sl),
		A(DLID_PATH_BITS, read_dlid_path_bits),
		A(COMPLETION_TIMESTAMP, read_completion_ts),
		A(COMPLETION_TIMESTAMP_WALLCLOCK, read_completion_wallclock_ns),
#undef A
	};
	const size_t n = sizeof(acc) / sizeof(acc[0]);

	for (size_t i = 0; i <= n; i++) {
		uint64_t flags = i < n ? acc[i].flag : 0;
		struct ibv_cq_ex *cq = mk(ctx, 4, flags);

		REQUIRE(cq);
		CHECK(cq->start_poll && cq->next_poll && cq->end_poll);
		CHECK(cq->read_opcode && cq->read_vendor_err &&
		      cq->read_wc_flags);
		CHECK(cq->read_cvlan == NULL && cq->read_flow_tag == NULL &&
		      cq->read_tm_info == NULL);
		for (size_t j = 0; j < n; j++) {
			void *fn = *(void **)((char *)cq + acc[j].off);

			CHECK((fn != NULL) == (j == i));
		}
		CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	}
}

static void check_fields(struct ibv_cq_ex *cq, uint32_t n)
{
	struct ibv_wc w = wc_of(n);

	CHECK_EQ(cq->wr_id, w.wr_id);
	CHECK_EQ(cq->status, w.status);
	CHECK_EQ(ibv_wc_read_opcode(cq), w.opcode);
	CHECK_EQ(ibv_wc_read_vendor_err(cq), w.vendor_err);
	CHECK_EQ(ibv_wc_read_byte_len(cq), w.byte_len);
	CHECK_EQ(ibv_wc_read_imm_data(cq), w.imm_data);
	CHECK_EQ(ibv_wc_read_invalidated_rkey(cq), w.invalidated_rkey);
	CHECK_EQ(ibv_wc_read_qp_num(cq), w.qp_num);
	CHECK_EQ(ibv_wc_read_src_qp(cq), w.src_qp);
	CHECK_EQ(ibv_wc_read_wc_flags(cq), w.wc_flags);
	CHECK_EQ(ibv_wc_read_slid(cq), w.slid);
	CHECK_EQ(ibv_wc_read_sl(cq), w.sl);
	CHECK_EQ(ibv_wc_read_dlid_path_bits(cq), w.dlid_path_bits);
}

static void test_iterate(struct ibv_context *ctx)
{
	struct ibv_cq_ex *cq = mk(ctx, 16, IBV_WC_STANDARD_FLAGS);
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_wc wc[4];
	uint32_t n;

	REQUIRE(cq);
	/* empty: ENOENT, and end_poll is not to be called */
	CHECK_EQ(ibv_start_poll(cq, &pa), ENOENT);
	CHECK_EQ(ibv_start_poll(cq, &pa), ENOENT);

	for (n = 1; n <= 5; n++)
		REQUIRE(push(cq, n) == 0);
	/* an attribute bit we do not know */
	pa.comp_mask = 1;
	CHECK_EQ(ibv_start_poll(cq, &pa), EINVAL);
	pa.comp_mask = 0;

	/* a batch walks the completions in order, field by field */
	REQUIRE(ibv_start_poll(cq, &pa) == 0);
	check_fields(cq, 1);
	for (n = 2; n <= 5; n++) {
		REQUIRE(ibv_next_poll(cq) == 0);
		check_fields(cq, n);
	}
	CHECK_EQ(ibv_next_poll(cq), ENOENT);
	ibv_end_poll(cq);
	CHECK_EQ(ibv_start_poll(cq, &pa), ENOENT);
	CHECK_EQ(ibv_poll_cq(ibv_cq_ex_to_cq(cq), 4, wc), 0);

	/* a batch ended early leaves the rest for the next one */
	for (n = 10; n < 14; n++)
		REQUIRE(push(cq, n) == 0);
	REQUIRE(ibv_start_poll(cq, &pa) == 0);
	check_fields(cq, 10);
	REQUIRE(ibv_next_poll(cq) == 0);
	check_fields(cq, 11);
	ibv_end_poll(cq);
	REQUIRE(ibv_start_poll(cq, NULL) == 0);
	check_fields(cq, 12);
	ibv_end_poll(cq);

	/* mixing with ibv_poll_cq: each completion is returned once */
	REQUIRE(push(cq, 20) == 0);
	REQUIRE(push(cq, 21) == 0);
	CHECK_EQ(ibv_poll_cq(ibv_cq_ex_to_cq(cq), 1, wc), 1);
	CHECK_EQ(wc[0].wr_id, wc_of(13).wr_id);
	REQUIRE(ibv_start_poll(cq, &pa) == 0);
	check_fields(cq, 20);
	ibv_end_poll(cq);
	CHECK_EQ(ibv_poll_cq(ibv_cq_ex_to_cq(cq), 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, wc_of(21).wr_id);
	CHECK_EQ(wc[0].byte_len, wc_of(21).byte_len);
	CHECK_EQ(wc[0].qp_num, wc_of(21).qp_num);
	CHECK_EQ(ibv_start_poll(cq, &pa), ENOENT);

	/* a CQ from ibv_create_cq_ex holds QPs like any other */
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_qp_init_attr qa = {
		.send_cq = ibv_cq_ex_to_cq(cq),
		.recv_cq = ibv_cq_ex_to_cq(cq),
		.cap = { .max_send_wr = 4,
			 .max_recv_wr = 4,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp;

	REQUIRE(pd);
	qp = ibv_create_qp(pd, &qa);
	REQUIRE(qp);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), EBUSY);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
}

static void test_timestamps(struct ibv_context *ctx)
{
	struct ibv_cq_ex *cq =
		mk(ctx, 8,
		   IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			   IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK);
	uint64_t m0, m1, r0, r1, m2, m3, r2, r3, ts1, ts2, wc1, wc2;
	struct ibv_values_ex v;

	REQUIRE(cq);
	m0 = now_ns(CLOCK_MONOTONIC);
	r0 = now_ns(CLOCK_REALTIME);
	REQUIRE(push(cq, 1) == 0);
	m1 = now_ns(CLOCK_MONOTONIC);
	r1 = now_ns(CLOCK_REALTIME);
	sleep_ms(20);
	m2 = now_ns(CLOCK_MONOTONIC);
	r2 = now_ns(CLOCK_REALTIME);
	REQUIRE(push(cq, 2) == 0);
	m3 = now_ns(CLOCK_MONOTONIC);
	r3 = now_ns(CLOCK_REALTIME);
	/* polled later: the stamp is when the completion was generated */
	sleep_ms(20);

	REQUIRE(ibv_start_poll(cq, NULL) == 0);
	ts1 = ibv_wc_read_completion_ts(cq);
	wc1 = ibv_wc_read_completion_wallclock_ns(cq);
	REQUIRE(ibv_next_poll(cq) == 0);
	ts2 = ibv_wc_read_completion_ts(cq);
	wc2 = ibv_wc_read_completion_wallclock_ns(cq);
	ibv_end_poll(cq);
	CHECK(ts1 >= m0 && ts1 <= m1);
	CHECK(ts2 >= m2 && ts2 <= m3);
	CHECK(ts2 - ts1 >= 20000000ULL);
	CHECK(wc1 >= r0 && wc1 <= r1);
	CHECK(wc2 >= r2 && wc2 <= r3);

	/* timestamps survive resize and clean, with their completions */
	REQUIRE(push(cq, 3) == 0); /* qp 0x103 */
	m0 = now_ns(CLOCK_MONOTONIC);
	REQUIRE(push(cq, 4) == 0); /* qp 0x104 */
	m1 = now_ns(CLOCK_MONOTONIC);
	REQUIRE(push(cq, 5) == 0); /* qp 0x105 */
	CHECK_EQ(ibv_resize_cq(ibv_cq_ex_to_cq(cq), 100), 0);
	sv_cq_clean(to_sv_cq(ibv_cq_ex_to_cq(cq)), wc_of(3).qp_num);
	REQUIRE(ibv_start_poll(cq, NULL) == 0);
	CHECK_EQ(cq->wr_id, wc_of(4).wr_id);
	ts1 = ibv_wc_read_completion_ts(cq);
	CHECK(ts1 >= m0 && ts1 <= m1);
	REQUIRE(ibv_next_poll(cq) == 0);
	CHECK_EQ(cq->wr_id, wc_of(5).wr_id);
	CHECK(ibv_wc_read_completion_ts(cq) >= m1);
	CHECK_EQ(ibv_next_poll(cq), ENOENT);
	ibv_end_poll(cq);

	/* the raw clock the stamps are read against */
	v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	m0 = now_ns(CLOCK_MONOTONIC);
	CHECK_EQ(ibv_query_rt_values_ex(ctx, &v), 0);
	m1 = now_ns(CLOCK_MONOTONIC);
	CHECK_EQ(v.comp_mask, IBV_VALUES_MASK_RAW_CLOCK);
	ts1 = (uint64_t)v.raw_clock.tv_sec * 1000000000ULL +
	      v.raw_clock.tv_nsec;
	CHECK(ts1 >= m0 && ts1 <= m1);
	v.comp_mask = 0;
	CHECK_EQ(ibv_query_rt_values_ex(ctx, &v), 0);
	CHECK_EQ(v.comp_mask, 0);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
}

static void test_ignore_overrun(struct ibv_context *ctx)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = 4,
		.wc_flags = IBV_WC_EX_WITH_QP_NUM,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
		.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &a), *plain;
	uint32_t n, cap;

	REQUIRE(cq);
	cap = cq->cqe;
	async_posted = 0;
	/* more than fit: never an error, no CQ_ERR, newest kept */
	for (n = 0; n < cap + 3; n++)
		CHECK_EQ(push(cq, n), 0);
	CHECK_EQ(async_posted, 0);
	REQUIRE(ibv_start_poll(cq, NULL) == 0);
	CHECK_EQ(cq->wr_id, wc_of(3).wr_id);
	for (n = 4; n < cap + 3; n++) {
		REQUIRE(ibv_next_poll(cq) == 0);
		CHECK_EQ(ibv_wc_read_qp_num(cq), wc_of(n).qp_num);
	}
	CHECK_EQ(ibv_next_poll(cq), ENOENT);
	ibv_end_poll(cq);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);

	/* without the flag an extended CQ overruns like any other */
	plain = mk(ctx, 4, 0);
	REQUIRE(plain);
	for (n = 0; n < (uint32_t)plain->cqe; n++)
		CHECK_EQ(push(plain, n), 0);
	CHECK_EQ(push(plain, n), ENOSPC);
	CHECK_EQ(async_posted, 1);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(plain)), 0);
}

static void test_channel_and_modify(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq_init_attr_ex a = { .cqe = 4,
					 .channel = ch,
					 .cq_context = ctx,
					 .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_modify_cq_attr ma = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = 4, .cq_period = 10 },
	};
	struct ibv_cq_ex *cq;
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	REQUIRE(ch);
	cq = ibv_create_cq_ex(ctx, &a);
	REQUIRE(cq);
	CHECK(cq->channel == ch);
	CHECK_EQ(ibv_destroy_comp_channel(ch), EBUSY);
	CHECK_EQ(ibv_req_notify_cq(ibv_cq_ex_to_cq(cq), 0), 0);
	REQUIRE(push(cq, 1) == 0);
	CHECK_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	CHECK(ev_cq == ibv_cq_ex_to_cq(cq));
	CHECK(ev_ctx == ctx);
	ibv_ack_cq_events(ev_cq, 1);
	REQUIRE(ibv_start_poll(cq, NULL) == 0);
	check_fields(cq, 1);
	ibv_end_poll(cq);

	CHECK_EQ(ibv_modify_cq(ibv_cq_ex_to_cq(cq), &ma), 0);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
}

/* The channel's fd has an event waiting (without blocking). */
static bool event_ready(struct ibv_comp_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/* Run one ibv_modify_cq with stderr in a file; return its result and
 * whether the line it logged contains `why`. */
static int modify_logged(struct ibv_cq *cq, struct ibv_modify_cq_attr *ma,
			 const char *why, bool *said)
{
	char path[] = "/tmp/test_cq_ex.XXXXXX", line[512];
	int tmp = mkstemp(path), saved, rc;
	FILE *f;

	REQUIRE(tmp >= 0);
	unlink(path);
	fflush(stderr);
	saved = dup(2);
	dup2(tmp, 2);
	rc = ibv_modify_cq(cq, ma);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	*said = false;
	f = fdopen(tmp, "r");
	REQUIRE(f);
	rewind(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "ibv_modify_cq") && strstr(line, why))
			*said = true;
	fclose(f);
	return rc;
}

/* ibv_modify_cq: the kernel's argument rules, and moderation by count
 * holding an armed CQ's event back until cq_count completions (the
 * period's timer is proven between processes, integration.rc_cqmod). */
static void test_moderation(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq_init_attr_ex a = { .cqe = 16, .channel = ch };
	struct ibv_modify_cq_attr ma = { .attr_mask = IBV_CQ_ATTR_MODERATE };
	struct ibv_cq_ex *cq;
	struct ibv_cq *ev_cq, *c;
	struct ibv_wc wc[16];
	void *ev_ctx;
	bool said;
	uint32_t n;

	REQUIRE(ch);
	cq = ibv_create_cq_ex(ctx, &a);
	REQUIRE(cq);
	c = ibv_cq_ex_to_cq(cq);

	/* refusals, each with its reason on stderr */
	ma.attr_mask = 0;
	CHECK_EQ(modify_logged(c, &ma, "attr_mask is 0", &said), EINVAL);
	CHECK(said);
	ma.attr_mask = IBV_CQ_ATTR_MODERATE | IBV_CQ_ATTR_RESERVED;
	CHECK_EQ(modify_logged(c, &ma, "bits beyond", &said), EINVAL);
	CHECK(said);
	ma.attr_mask = IBV_CQ_ATTR_MODERATE;
	ma.moderate.cq_count = 1;
	ma.moderate.cq_period = SV_MAX_CQ_MOD_PERIOD + 1;
	CHECK_EQ(modify_logged(c, &ma, "above max_cq_period", &said), EINVAL);
	CHECK(said);
	ma.moderate.cq_period = SV_MAX_CQ_MOD_PERIOD;
	ma.moderate.cq_count = UINT16_MAX;
	CHECK_EQ(ibv_modify_cq(c, &ma), 0); /* the limits themselves */

	/* cq_count 4, no period: three completions leave the armed CQ
	 * silent (sv_cq_push decides in the caller's thread, so "no event
	 * yet" is not a matter of time), the fourth signals it */
	ma.moderate.cq_count = 4;
	ma.moderate.cq_period = 0;
	CHECK_EQ(ibv_modify_cq(c, &ma), 0);
	for (int round = 0; round < 2; round++) {
		CHECK_EQ(ibv_req_notify_cq(c, 0), 0);
		for (n = 0; n < 3; n++)
			REQUIRE(push(cq, n) == 0);
		CHECK(!event_ready(ch));
		REQUIRE(push(cq, 3) == 0);
		CHECK(event_ready(ch));
		CHECK_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
		CHECK(ev_cq == c);
		ibv_ack_cq_events(ev_cq, 1);
		CHECK_EQ(ibv_poll_cq(c, 16, wc), 4);
		/* disarmed by the event: more completions say nothing */
		REQUIRE(push(cq, 4) == 0);
		CHECK(!event_ready(ch));
		CHECK_EQ(ibv_poll_cq(c, 16, wc), 1);
	}

	/* count and period 0 again: every completion signals */
	ma.moderate.cq_count = 0;
	CHECK_EQ(ibv_modify_cq(c, &ma), 0);
	CHECK_EQ(ibv_req_notify_cq(c, 0), 0);
	REQUIRE(push(cq, 5) == 0);
	CHECK(event_ready(ch));
	CHECK_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	ibv_ack_cq_events(ev_cq, 1);
	CHECK_EQ(ibv_poll_cq(c, 16, wc), 1);

	CHECK_EQ(ibv_destroy_cq(c), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
}

/* The extended attributes say what softverbs offers and nothing more. */
static void test_device_ex(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex ex;
	struct ibv_device_attr da;
	struct ibv_query_device_ex_input in = { .comp_mask = 1 };

	REQUIRE(ibv_query_device(ctx, &da) == 0);
	memset(&ex, 0xa5, sizeof(ex));
	REQUIRE(ibv_query_device_ex(ctx, NULL, &ex) == 0);
	CHECK(!memcmp(&ex.orig_attr, &da, sizeof(da)));
	/* the base flags, on-demand paging (the kernel's bit 31) and IBA 1.5
	 * ATOMIC WRITE (bit 40) */
	CHECK_EQ(ex.device_cap_flags_ex,
		 (uint64_t)da.device_cap_flags | (1ULL << 31) | (1ULL << 40));
	CHECK_EQ(ex.odp_caps.general_caps,
		 IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT);
	CHECK_EQ(ex.odp_caps.per_transport_caps.rc_odp_caps,
		 IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
			 IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV);
	CHECK_EQ(ex.odp_caps.per_transport_caps.uc_odp_caps,
		 IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV);
	CHECK_EQ(ex.odp_caps.per_transport_caps.ud_odp_caps,
		 IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			 IBV_ODP_SUPPORT_SRQ_RECV);
	CHECK_EQ(ex.xrc_odp_caps, IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE |
					  IBV_ODP_SUPPORT_READ |
					  IBV_ODP_SUPPORT_ATOMIC |
					  IBV_ODP_SUPPORT_SRQ_RECV);
	CHECK_EQ(ex.completion_timestamp_mask, (long long)UINT64_MAX);
	CHECK_EQ(ex.hca_core_clock, 1000000); /* kHz: 1 ns ticks */
	CHECK_EQ(ex.tso_caps.max_tso, 0);
	CHECK_EQ(ex.rss_caps.supported_qpts, 0);
	CHECK_EQ(ex.max_wq_type_rq, 0);
	CHECK_EQ(ex.packet_pacing_caps.qp_rate_limit_max, 0);
	CHECK_EQ(ex.raw_packet_caps, 0);
	CHECK_EQ(ex.tm_caps.max_num_tags, 0);
	CHECK_EQ(ex.cq_mod_caps.max_cq_count, UINT16_MAX);
	CHECK_EQ(ex.cq_mod_caps.max_cq_period, SV_MAX_CQ_MOD_PERIOD);
	CHECK_EQ(ex.max_dm_size, SV_MAX_DM_SIZE);
	CHECK_EQ(ex.pci_atomic_caps.fetch_add, 0);
	CHECK_EQ(ex.pci_atomic_caps.swap, 0);
	CHECK_EQ(ex.pci_atomic_caps.compare_swap, 0);
	CHECK_EQ(ex.phys_port_cnt_ex, 1);
	CHECK_EQ(ibv_query_device_ex(ctx, &in, &ex), EINVAL);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx, *ctx2;

	/* Warnings on: the refusals' reasons are checked.  The library
	 * reads its environment once, possibly before main: run again with
	 * it set. */
	if (!getenv("SOFTVERBS_LOG") || strcmp(getenv("SOFTVERBS_LOG"), "1")) {
		setenv("SOFTVERBS_LOG", "1", 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		return 1;
	}
	ctx = open_ctx();
	ctx2 = open_ctx();

	test_create_rules(ctx, ctx2);
	test_accessor_sets(ctx);
	test_iterate(ctx);
	test_timestamps(ctx);
	test_ignore_overrun(ctx);
	test_channel_and_modify(ctx);
	test_moderation(ctx);
	test_device_ex(ctx);
	CHECK_EQ(ibv_close_device(ctx2), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
