/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Completion channels and CQs: argument rules, ring capacity, poll order,
 * resize, overrun, arming (next / solicited / errors), the channel fd,
 * event accounting on destroy, and stale events of destroyed CQs.
 *
 * The engine's producer side (core/cq.c) is compiled into this test so
 * completions can be pushed without a transport; everything else goes
 * through the real libibverbs.so. */
#include "core/cq.c"
#include "util/log.c"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "ctx.h"

/* core/cq.c raises IBV_EVENT_CQ_ERR through sv_async_post, which lives
 * (hidden) in the library: queue the event the way async.c does, so the
 * library's ibv_get_async_event hands it out. */
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

static int push(struct ibv_cq *cq, uint64_t wr_id, uint32_t qpn,
		enum ibv_wc_status st, bool solicited)
{
	struct ibv_wc wc = { .wr_id = wr_id,
			     .status = st,
			     .qp_num = qpn,
			     .opcode = IBV_WC_RECV };

	return sv_cq_push(to_sv_cq(cq), &wc, solicited);
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void set_nonblock(int fd)
{
	REQUIRE(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void test_create_rules(struct ibv_context *ctx, struct ibv_context *ctx2)
{
	struct ibv_device_attr da;
	struct ibv_comp_channel *ch, *ch2;
	struct ibv_cq *cq;
	int dummy;

	REQUIRE(ibv_query_device(ctx, &da) == 0);
	ch = ibv_create_comp_channel(ctx);
	REQUIRE(ch);
	CHECK(ch->context == ctx);
	CHECK(fcntl(ch->fd, F_GETFD) & FD_CLOEXEC);
	CHECK(!readable(ch->fd));
	ch2 = ibv_create_comp_channel(ctx2);
	REQUIRE(ch2);

	static const int bad_cqe[] = { 0, -1, -100 };
	for (size_t i = 0; i < 3; i++) {
		errno = 0;
		CHECK(ibv_create_cq(ctx, bad_cqe[i], NULL, NULL, 0) == NULL);
		CHECK_EQ(errno, EINVAL);
	}
	errno = 0;
	CHECK(ibv_create_cq(ctx, da.max_cqe + 1, NULL, NULL, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(ibv_create_cq(ctx, 8, NULL, NULL, ctx->num_comp_vectors) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(ibv_create_cq(ctx, 8, NULL, NULL, -1) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(ibv_create_cq(ctx, 8, NULL, ch2, 0) == NULL); /* other context */
	CHECK_EQ(errno, EINVAL);

	/* The reported size is at least the requested one. */
	static const int sizes[] = { 1, 2, 3, 100, 127, 128, 4096 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cq = ibv_create_cq(ctx, sizes[i], &dummy, ch, 0);
		CHECK(cq != NULL);
		if (!cq)
			continue;
		CHECK(cq->cqe >= sizes[i]);
		CHECK(cq->context == ctx);
		CHECK(cq->channel == ch);
		CHECK(cq->cq_context == &dummy);
		/* The channel is in use while the CQ exists. */
		CHECK_EQ(ibv_destroy_comp_channel(ch), EBUSY);
		CHECK_EQ(ibv_destroy_cq(cq), 0);
	}
	cq = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
	CHECK(cq != NULL);
	if (cq) {
		CHECK(cq->cqe >= da.max_cqe);
		CHECK_EQ(ibv_destroy_cq(cq), 0);
	}
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch2), 0);
}

static void test_poll_and_capacity(struct ibv_context *ctx)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_async_event ev;
	struct ibv_wc wc[16];
	int i, cap;

	REQUIRE(cq);
	cap = cq->cqe;
	CHECK_EQ(ibv_poll_cq(cq, 4, wc), 0);
	for (i = 0; i < 3; i++)
		CHECK_EQ(push(cq, 100 + i, 7, IBV_WC_SUCCESS, false), 0);
	CHECK_EQ(ibv_poll_cq(cq, 2, wc), 2);
	CHECK_EQ(wc[0].wr_id, 100);
	CHECK_EQ(wc[1].wr_id, 101);
	CHECK_EQ(ibv_poll_cq(cq, 16, wc), 1);
	CHECK_EQ(wc[0].wr_id, 102);
	CHECK_EQ(wc[0].qp_num, 7);
	CHECK_EQ(ibv_poll_cq(cq, 16, wc), 0);

	/* Exactly cq->cqe completions fit, in order across the wrap. */
	for (i = 0; i < cap; i++)
		CHECK_EQ(push(cq, i, 7, IBV_WC_SUCCESS, false), 0);
	CHECK_EQ(ibv_poll_cq(cq, 16, wc), cap);
	for (i = 0; i < cap; i++)
		CHECK_EQ(wc[i].wr_id, i);
	for (i = 0; i < cap; i++)
		CHECK_EQ(push(cq, i, 7, IBV_WC_SUCCESS, false), 0);

	/* One more is an overrun: ENOSPC, IBV_EVENT_CQ_ERR, CQ in error. */
	CHECK_EQ(push(cq, 999, 7, IBV_WC_SUCCESS, false), ENOSPC);
	REQUIRE(readable(ctx->async_fd));
	CHECK_EQ(ibv_get_async_event(ctx, &ev), 0);
	CHECK_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
	CHECK(ev.element.cq == cq);
	/* The completions already queued can still be polled ... */
	CHECK_EQ(ibv_poll_cq(cq, 16, wc), cap);
	/* ... but the CQ takes no more, and raises no second event. */
	CHECK_EQ(push(cq, 1000, 7, IBV_WC_SUCCESS, false), ENOSPC);
	CHECK(!readable(ctx->async_fd));
	/* Destroy waits for that event to be acked. */
	ibv_ack_async_event(&ev);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
}

static void test_resize(struct ibv_context *ctx)
{
	struct ibv_device_attr da;
	struct ibv_cq *cq = ibv_create_cq(ctx, 10, NULL, NULL, 0);
	struct ibv_wc wc[64];
	int i;

	REQUIRE(cq && ibv_query_device(ctx, &da) == 0);
	for (i = 0; i < 6; i++)
		CHECK_EQ(push(cq, i, 1, IBV_WC_SUCCESS, false), 0);
	CHECK_EQ(ibv_poll_cq(cq, 1, wc), 1); /* head moves off slot 0 */
	CHECK_EQ(push(cq, 6, 1, IBV_WC_SUCCESS, false), 0);
	/* 6 completions queued now (1..6). */
	CHECK_EQ(ibv_resize_cq(cq, 5), EINVAL);
	CHECK_EQ(ibv_resize_cq(cq, 0), EINVAL);
	CHECK_EQ(ibv_resize_cq(cq, -3), EINVAL);
	CHECK_EQ(ibv_resize_cq(cq, da.max_cqe + 1), EINVAL);
	CHECK_EQ(ibv_resize_cq(cq, 40), 0);
	CHECK(cq->cqe >= 40);
	for (i = 7; i < 40; i++)
		CHECK_EQ(push(cq, i, 1, IBV_WC_SUCCESS, false), 0);
	CHECK_EQ(ibv_poll_cq(cq, 64, wc), 39);
	for (i = 0; i < 39; i++)
		CHECK_EQ(wc[i].wr_id, i + 1);
	/* Shrink with entries inside. */
	for (i = 0; i < 6; i++)
		CHECK_EQ(push(cq, 50 + i, 1, IBV_WC_SUCCESS, false), 0);
	CHECK_EQ(ibv_resize_cq(cq, 6), 0);
	CHECK(cq->cqe >= 6 && cq->cqe < 40);
	CHECK_EQ(ibv_poll_cq(cq, 64, wc), 6);
	for (i = 0; i < 6; i++)
		CHECK_EQ(wc[i].wr_id, 50 + i);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
}

static void test_clean(struct ibv_context *ctx)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	static const uint32_t qpn[] = { 1, 2, 1, 3, 1, 2 };
	struct ibv_wc wc[8];
	int i;

	REQUIRE(cq);
	for (i = 0; i < 6; i++)
		CHECK_EQ(push(cq, i, qpn[i], IBV_WC_SUCCESS, false), 0);
	sv_cq_clean(to_sv_cq(cq), 1);
	CHECK_EQ(ibv_poll_cq(cq, 8, wc), 3);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_EQ(wc[1].wr_id, 3);
	CHECK_EQ(wc[2].wr_id, 5);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
}

/* Nonblocking read of one event; returns the CQ or NULL (errno set). */
static struct ibv_cq *get_event(struct ibv_comp_channel *ch, void **ctxp)
{
	struct ibv_cq *cq = NULL;

	if (ibv_get_cq_event(ch, &cq, ctxp))
		return NULL;
	return cq;
}

static void test_arming(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq, *got;
	struct ibv_wc wc[32];
	void *cqctx = NULL;
	int tag, acks = 0;

	REQUIRE(ch);
	set_nonblock(ch->fd);
	cq = ibv_create_cq(ctx, 16, &tag, ch, 0);
	REQUIRE(cq);

	/* Not armed: no event, and get_cq_event says EAGAIN. */
	CHECK_EQ(push(cq, 1, 1, IBV_WC_SUCCESS, true), 0);
	CHECK(!readable(ch->fd));
	errno = 0;
	CHECK(get_event(ch, &cqctx) == NULL);
	CHECK_EQ(errno, EAGAIN);

	/* Armed for the next completion: one event, then disarmed. */
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	CHECK(!readable(ch->fd)); /* queued completions do not fire it */
	CHECK_EQ(push(cq, 2, 1, IBV_WC_SUCCESS, false), 0);
	CHECK(readable(ch->fd));
	got = get_event(ch, &cqctx);
	CHECK(got == cq);
	CHECK(cqctx == &tag);
	acks++;
	CHECK_EQ(push(cq, 3, 1, IBV_WC_SUCCESS, false), 0);
	CHECK(!readable(ch->fd));
	errno = 0;
	CHECK(get_event(ch, &cqctx) == NULL);
	CHECK_EQ(errno, EAGAIN);

	/* Solicited only: plain completions do not fire, solicited ones do. */
	CHECK_EQ(ibv_req_notify_cq(cq, 1), 0);
	CHECK_EQ(push(cq, 4, 1, IBV_WC_SUCCESS, false), 0);
	CHECK(!readable(ch->fd));
	CHECK_EQ(push(cq, 5, 1, IBV_WC_SUCCESS, true), 0);
	CHECK(get_event(ch, &cqctx) == cq);
	acks++;
	/* ... and so does an error completion. */
	CHECK_EQ(ibv_req_notify_cq(cq, 1), 0);
	CHECK_EQ(push(cq, 6, 1, IBV_WC_REM_ACCESS_ERR, false), 0);
	CHECK(get_event(ch, &cqctx) == cq);
	acks++;
	/* Next widens a pending solicited request ... */
	CHECK_EQ(ibv_req_notify_cq(cq, 1), 0);
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	CHECK_EQ(push(cq, 7, 1, IBV_WC_SUCCESS, false), 0);
	CHECK(get_event(ch, &cqctx) == cq);
	acks++;
	/* ... and solicited does not narrow a pending next request. */
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	CHECK_EQ(ibv_req_notify_cq(cq, 1), 0);
	CHECK_EQ(push(cq, 8, 1, IBV_WC_SUCCESS, false), 0);
	CHECK(get_event(ch, &cqctx) == cq);
	acks++;
	/* Arming twice before a completion yields one event. */
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	CHECK_EQ(push(cq, 9, 1, IBV_WC_SUCCESS, false), 0);
	CHECK_EQ(push(cq, 10, 1, IBV_WC_SUCCESS, false), 0);
	CHECK(get_event(ch, &cqctx) == cq);
	acks++;
	CHECK(!readable(ch->fd));
	CHECK_EQ(ibv_poll_cq(cq, 32, wc), 10);
	ibv_ack_cq_events(cq, acks);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
}

struct destroyer {
	struct ibv_cq *cq;
	atomic_int done;
	int ret;
};

static void *destroy_thread(void *arg)
{
	struct destroyer *d = arg;

	d->ret = ibv_destroy_cq(d->cq);
	atomic_store(&d->done, 1);
	return NULL;
}

/* destroy_cq returns only once every handed-out event is acked. */
static void test_ack_accounting(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct destroyer d = { 0 };
	struct ibv_cq *cq;
	void *cqctx;
	pthread_t t;
	int i;

	REQUIRE(ch);
	cq = ibv_create_cq(ctx, 8, NULL, ch, 0);
	REQUIRE(cq);
	for (i = 0; i < 2; i++) {
		CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
		CHECK_EQ(push(cq, i, 1, IBV_WC_SUCCESS, false), 0);
		/* blocking read: the event is already there */
		CHECK(get_event(ch, &cqctx) == cq);
	}
	/* ibv_get_cq_event itself acknowledges nothing. */
	CHECK_EQ(cq->comp_events_completed, 0);
	d.cq = cq;
	REQUIRE(pthread_create(&t, NULL, destroy_thread, &d) == 0);
	sleep_ms(100);
	CHECK_EQ(atomic_load(&d.done), 0);
	ibv_ack_cq_events(cq, 1);
	sleep_ms(100);
	CHECK_EQ(atomic_load(&d.done), 0);
	ibv_ack_cq_events(cq, 1);
	pthread_join(t, NULL);
	CHECK_EQ(d.ret, 0);

	/* Same for the CQ_ERR async event of an overrun. */
	struct ibv_async_event ev;

	cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	REQUIRE(cq);
	for (i = 0; i <= cq->cqe; i++)
		push(cq, i, 1, IBV_WC_SUCCESS, false);
	CHECK_EQ(ibv_get_async_event(ctx, &ev), 0);
	CHECK_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
	d.cq = cq;
	atomic_store(&d.done, 0);
	REQUIRE(pthread_create(&t, NULL, destroy_thread, &d) == 0);
	sleep_ms(100);
	CHECK_EQ(atomic_load(&d.done), 0);
	ibv_ack_async_event(&ev);
	pthread_join(t, NULL);
	CHECK_EQ(d.ret, 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
}

/* Events nobody read do not hold destroy, and never surface afterwards. */
static void test_stale_events(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_async_event ev;
	struct ibv_cq *a, *b;
	void *cqctx;
	int tag_b, i;

	REQUIRE(ch);
	set_nonblock(ch->fd);
	a = ibv_create_cq(ctx, 1, NULL, ch, 0);
	b = ibv_create_cq(ctx, 4, &tag_b, ch, 0);
	REQUIRE(a && b);
	CHECK_EQ(ibv_req_notify_cq(a, 0), 0);
	CHECK_EQ(push(a, 1, 1, IBV_WC_SUCCESS, false), 0);
	CHECK_EQ(ibv_req_notify_cq(b, 0), 0);
	CHECK_EQ(push(b, 2, 1, IBV_WC_SUCCESS, false), 0);
	/* Overrun a too, leaving its CQ_ERR event unread. */
	for (i = 0; i < 4; i++)
		push(a, 10 + i, 1, IBV_WC_SUCCESS, false);
	CHECK(readable(ctx->async_fd));
	CHECK_EQ(ibv_destroy_cq(a), 0); /* returns: nothing handed out */
	/* a's channel event is skipped, b's is delivered. */
	CHECK(get_event(ch, &cqctx) == b);
	CHECK(cqctx == &tag_b);
	errno = 0;
	CHECK(get_event(ch, &cqctx) == NULL);
	CHECK_EQ(errno, EAGAIN);
	/* a's async event was dropped with it. */
	set_nonblock(ctx->async_fd);
	errno = 0;
	CHECK_EQ(ibv_get_async_event(ctx, &ev), -1);
	CHECK_EQ(errno, EAGAIN);
	ibv_ack_cq_events(b, 1);
	CHECK_EQ(ibv_destroy_cq(b), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
}

int main(void)
{
	struct ibv_context *ctx = open_ctx(), *ctx2 = open_ctx();

	test_create_rules(ctx, ctx2);
	test_poll_and_capacity(ctx);
	test_resize(ctx);
	test_clean(ctx);
	test_arming(ctx);
	test_ack_accounting(ctx);
	test_stale_events(ctx);
	CHECK_EQ(ibv_close_device(ctx2), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
