/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Completion channels and completion queues: ibv_create_comp_channel and
 * its destroy, ibv_create_cq / resize / destroy, ibv_get_cq_event and
 * ibv_ack_cq_events, and the poll_cq / req_notify_cq context ops that the
 * header's inline ibv_poll_cq and ibv_req_notify_cq call.
 *
 * The producer side (sv_cq_push, arming, the channel write) is in
 * core/cq.c.  A channel is a pipe: its read end is channel->fd, so
 * applications can poll/epoll it and make it O_NONBLOCK; each event is the
 * CQ's 8-byte token.  Events are counted when handed out and destroy waits
 * for the application to ack them all (man ibv_get_cq_event); events still
 * in the pipe when their CQ is destroyed are recognised by their token and
 * dropped, as the kernel discards a destroyed CQ's queued events.
 */
#include "verbs/verbs.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/cq.h"
#include "engine/engine.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "verbs/objcheck.h"
#include "verbs/share.h"

/* CQ tokens are never reused, so a stale event cannot name a new CQ. */
static _Atomic uint64_t next_cq_token = 1;

/* ---- completion channels ------------------------------------------------ */

SV_EXPORT struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct sv_comp_channel *ch;
	int p[2];

	if (!context)
		return sv_null_errno(EINVAL);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return sv_null_errno(ENOMEM);
	if (pipe2(p, O_CLOEXEC)) {
		int err = errno;

		free(ch);
		return sv_null_errno(err);
	}
	/* Only the engine's end is non-blocking; the application decides
	 * for its end (fcntl on the read end touches only that end). */
	if (fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK)) {
		int err = errno;

		close(p[0]);
		close(p[1]);
		free(ch);
		return sv_null_errno(err);
	}
	ch->ibv.context = context;
	ch->ibv.fd = p[0];
	ch->ibv.refcnt = 0;
	ch->wfd = p[1];
	atomic_init(&ch->refs, 0);
	ch->ctx = to_sv_ctx(context);
	list_head_init(&ch->cqs);
	return &ch->ibv;
}

SV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct sv_comp_channel *ch;
	struct sv_context *ctx;

	if (!channel)
		return EINVAL;
	ch = sv_container_of(channel, struct sv_comp_channel, ibv);
	ctx = ch->ctx;
	sv_mutex_lock(&ctx->lock, SV_LOCK_CTX);
	if (atomic_load(&ch->refs)) {
		sv_mutex_unlock(&ctx->lock);
		return EBUSY;
	}
	sv_mutex_unlock(&ctx->lock);
	close(ch->ibv.fd);
	close(ch->wfd);
	free(ch);
	return 0;
}

/* ---- CQ ring ------------------------------------------------------------ */

/* The smallest power of 2 with room for cqe completions (one slot stays
 * free, as in rxe), so cq->cqe reports ncqe - 1 >= cqe. */
static uint32_t ring_slots(int cqe)
{
	uint32_t n = 2;

	while (n < (uint32_t)cqe + 1)
		n <<= 1;
	return n;
}

static bool cqe_valid(int cqe)
{
	return cqe >= 1 && cqe <= SV_MAX_CQE - 1;
}

/* The creation path shared by ibv_create_cq and ibv_create_cq_ex: checks
 * the arguments both verbs have, builds the ring (and the timestamp array
 * when asked) and attaches the channel.  NULL with errno set on failure. */
struct sv_cq *sv_cq_new(struct ibv_context *context, int cqe, void *cq_context,
			struct ibv_comp_channel *channel, int comp_vector,
			bool timestamps, struct sv_pd *parent)
{
	struct sv_context *ctx;
	struct sv_cq *cq;
	int err;

	if (sv_check_ctx(context, "ibv_create_cq"))
		return sv_null_errno(EINVAL);
	ctx = to_sv_ctx(context);
	if (!cqe_valid(cqe))
		return sv_null_errno(EINVAL);
	if (comp_vector < 0 || comp_vector >= context->num_comp_vectors)
		return sv_null_errno(EINVAL);
	if (channel && channel->context != context)
		return sv_null_errno(EINVAL);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return sv_null_errno(ENOMEM);
	cq->ncqe = ring_slots(cqe);
	cq->ring = sv_queue_alloc(parent, cq->ncqe * sizeof(*cq->ring),
				  SV_RES_TYPE_CQ, &cq->ring_owner);
	if (timestamps)
		cq->ts = calloc(cq->ncqe, sizeof(*cq->ts));
	err = !cq->ring || (timestamps && !cq->ts) ?
		      ENOMEM :
		      sv_share_add(context, SV_SHARE_CQ, cq, &cq->ex.handle);
	if (err) {
		sv_queue_free(cq->ring_owner, cq->ring, SV_RES_TYPE_CQ);
		free(cq->ts);
		free(cq);
		return sv_null_errno(err);
	}
	cq->parent = parent;
	if (parent)
		sv_pd_get(parent); /* ibv_dealloc_pd: EBUSY while the CQ is */
	cq->ex.context = context;
	cq->ex.channel = channel;
	cq->ex.cq_context = cq_context;
	cq->ex.cqe = (int)cq->ncqe - 1;
	pthread_mutex_init(&cq->ex.mutex, NULL);
	pthread_cond_init(&cq->ex.cond, NULL);
	pthread_mutex_init(&cq->lock, NULL);
	atomic_init(&cq->users, 0);
	cq->ctx = ctx;
	cq->armed = SV_CQ_ARM_NONE;
	cq->chan_node.next = cq->chan_node.prev = &cq->chan_node;
	list_node_init(&cq->mod_node);
	cq->chan_token = atomic_fetch_add(&next_cq_token, 1);
	if (channel) {
		struct sv_comp_channel *ch =
			sv_container_of(channel, struct sv_comp_channel, ibv);

		sv_mutex_lock(&ctx->lock, SV_LOCK_CTX);
		list_add_tail(&ch->cqs, &cq->chan_node);
		atomic_fetch_add(&ch->refs, 1);
		channel->refcnt++;
		sv_mutex_unlock(&ctx->lock);
	}
	return cq;
}

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
				       void *cq_context,
				       struct ibv_comp_channel *channel,
				       int comp_vector)
{
	struct sv_cq *cq = sv_cq_new(context, cqe, cq_context, channel,
				     comp_vector, false, NULL);

	return cq ? (struct ibv_cq *)&cq->ex : NULL;
}

SV_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct sv_cq *cq;
	struct ibv_wc *ring;
	struct sv_cq_ts *ts = NULL;
	struct sv_pd *owner;
	uint32_t used, slots, i;

	if (sv_check_cq(ibcq, "ibv_resize_cq") || !cqe_valid(cqe))
		return EINVAL;
	cq = to_sv_cq(ibcq);
	slots = ring_slots(cqe);
	sv_mutex_lock(&cq->lock, SV_LOCK_CQ);
	used = cq->tail - cq->head;
	/* man ibv_resize_cq: cqe must hold the unpolled completions. */
	if ((uint32_t)cqe < used) {
		sv_mutex_unlock(&cq->lock);
		return EINVAL;
	}
	if (slots == cq->ncqe) {
		sv_mutex_unlock(&cq->lock);
		return 0;
	}
	ring = sv_queue_alloc(cq->parent, slots * sizeof(*ring), SV_RES_TYPE_CQ,
			      &owner);
	if (cq->ts)
		ts = calloc(slots, sizeof(*ts));
	if (!ring || (cq->ts && !ts)) {
		sv_mutex_unlock(&cq->lock);
		sv_queue_free(owner, ring, SV_RES_TYPE_CQ);
		free(ts);
		return ENOMEM;
	}
	/* Same free-running head and tail in the new ring: a poller that
	 * peeks at them without the lock (cq_pop) never sees them change. */
	for (i = 0; i < used; i++) {
		uint32_t from = (cq->head + i) & (cq->ncqe - 1);
		uint32_t to = (cq->head + i) & (slots - 1);

		ring[to] = cq->ring[from];
		if (ts)
			ts[to] = cq->ts[from];
	}
	sv_queue_free(cq->ring_owner, cq->ring, SV_RES_TYPE_CQ);
	cq->ring = ring;
	cq->ring_owner = owner;
	free(cq->ts);
	cq->ts = ts;
	cq->ncqe = slots;
	ibcq->cqe = (int)slots - 1;
	sv_mutex_unlock(&cq->lock);
	return 0;
}

SV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct sv_context *ctx;
	struct sv_cq *cq;
	uint32_t comp_reported = 0, async_reported;

	if (sv_check_cq(ibcq, "ibv_destroy_cq"))
		return EINVAL;
	cq = to_sv_cq(ibcq);
	ctx = cq->ctx;
	/* IBA 11.2.8.4 (Destroy CQ): fails while a QP is associated. */
	if (atomic_load(&cq->users))
		return EBUSY;
	sv_share_del(ibcq->context, ibcq->handle, cq);
	/* Off the moderation timer first: it writes to the channel. */
	sv_cq_mod_forget(cq);
	if (ibcq->channel) {
		struct sv_comp_channel *ch = sv_container_of(
			ibcq->channel, struct sv_comp_channel, ibv);

		/* Off the channel first: from now on get_cq_event drops
		 * this CQ's events instead of handing them out. */
		sv_mutex_lock(&ctx->lock, SV_LOCK_CTX);
		list_del(&cq->chan_node);
		comp_reported = cq->comp_events_reported;
		atomic_fetch_sub(&ch->refs, 1);
		ibcq->channel->refcnt--;
		sv_mutex_unlock(&ctx->lock);
	}
	async_reported = sv_async_purge(ctx, &cq->async_events_reported);

	/* Every event handed out must be acked before the CQ goes. */
	sv_mutex_lock(&ibcq->mutex, SV_LOCK_IBV_EVENTS);
	while (ibcq->comp_events_completed != comp_reported ||
	       ibcq->async_events_completed != async_reported)
		sv_cond_wait(&ibcq->cond, &ibcq->mutex);
	sv_mutex_unlock(&ibcq->mutex);

	pthread_mutex_destroy(&cq->lock);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	sv_queue_free(cq->ring_owner, cq->ring, SV_RES_TYPE_CQ);
	if (cq->parent)
		sv_pd_put(cq->parent);
	free(cq->ts);
	free(cq);
	return 0;
}

/* ---- completion events -------------------------------------------------- */

/* Read one event without blocking, whatever the fd's flags: -1/EAGAIN
 * when there is none. */
static ssize_t read_nowait(int fd, uint64_t *token)
{
	struct iovec v = { .iov_base = token, .iov_len = sizeof(*token) };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n = preadv2(fd, &v, 1, -1, RWF_NOWAIT);

	if (n >= 0 || (errno != EOPNOTSUPP && errno != EINVAL))
		return n;
	/* A kernel without RWF_NOWAIT for pipes (before 5.x). */
	if (poll(&p, 1, 0) <= 0) {
		errno = EAGAIN;
		return -1;
	}
	return read(fd, token, sizeof(*token));
}

/* One event: on a blocking fd the thread sleeps for the engine while it
 * waits (sv_engine_wait_event), so what wakes it is the peer's packet
 * itself, not the progress thread's pass and then the pipe.  The counts
 * of events written and taken spare the look into an empty pipe (a
 * wrong count costs one look).  An fd that blocked at the last look
 * goes to the engine without a new one: the waiter looks (fcntl) only
 * before it sleeps, and its pass, which makes the event of an
 * application that answers at once (an atomic's issuer), costs no
 * system call. */
static ssize_t read_event(struct sv_comp_channel *ch, uint64_t *token)
{
	int fd = ch->ibv.fd, fl, r;
	ssize_t n;

	for (;;) {
		uint64_t seen = atomic_load(&ch->written);

		if (seen !=
		    atomic_load_explicit(&ch->taken, memory_order_relaxed)) {
			n = read_nowait(fd, token);
			if (n >= 0 || errno != EAGAIN)
				break;
		}
		if (!atomic_load_explicit(&ch->blocking,
					  memory_order_relaxed)) {
			fl = fcntl(fd, F_GETFL);
			atomic_store_explicit(&ch->blocking,
					      fl >= 0 && !(fl & O_NONBLOCK),
					      memory_order_relaxed);
		}
		r = atomic_load_explicit(&ch->blocking, memory_order_relaxed) ?
			    sv_engine_wait_event(ch->ctx, ch, seen, token) :
			    -1;
		if (r > 0)
			return sizeof(*token); /* never in the pipe */
		if (r < 0) {
			/* Blocks, or -1/EAGAIN on an O_NONBLOCK fd. */
			n = read(fd, token, sizeof(*token));
			break;
		}
	}
	if (n == (ssize_t)sizeof(*token))
		atomic_fetch_add_explicit(&ch->taken, 1, memory_order_relaxed);
	return n;
}

SV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
			       struct ibv_cq **cq_out, void **cq_context)
{
	struct sv_comp_channel *ch;
	struct sv_context *ctx;

	if (!channel || !cq_out || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	ch = sv_container_of(channel, struct sv_comp_channel, ibv);
	ctx = ch->ctx;
	for (;;) {
		struct list_node *it, *tmp;
		struct sv_cq *found = NULL;
		uint64_t token;
		ssize_t n;

		n = read_event(ch, &token);
		if (n != (ssize_t)sizeof(token)) {
			if (n >= 0)
				errno = EIO; /* 8-byte writes cannot split */
			return -1;
		}
		sv_mutex_lock(&ctx->lock, SV_LOCK_CTX);
		list_for_each_safe (&ch->cqs, it, tmp) {
			struct sv_cq *cq =
				list_entry(it, struct sv_cq, chan_node);

			if (cq->chan_token == token) {
				found = cq;
				found->comp_events_reported++;
				break;
			}
		}
		sv_mutex_unlock(&ctx->lock);
		if (found) {
			*cq_out = (struct ibv_cq *)&found->ex;
			*cq_context = found->ex.cq_context;
			return 0;
		}
		/* An event of a CQ destroyed since: read on. */
	}
}

SV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	sv_mutex_lock(&cq->mutex, SV_LOCK_IBV_EVENTS);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	sv_mutex_unlock(&cq->mutex);
}

/* ---- context ops -------------------------------------------------------- */

static int cq_pop(struct sv_cq *cq, int n, struct ibv_wc *wc)
{
	uint32_t head;
	int i;

	/* Empty is the busy poller's common case: look without the lock.
	 * The producer publishes tail (release) after the entry; a push
	 * that happened before this call is seen (coherence), one racing
	 * with it is taken by the next poll. */
	if (__atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) ==
	    __atomic_load_n(&cq->head, __ATOMIC_RELAXED))
		return 0;
	sv_mutex_lock(&cq->lock, SV_LOCK_CQ);
	head = cq->head;
	for (i = 0; i < n && head != cq->tail; i++, head++)
		wc[i] = cq->ring[head & (cq->ncqe - 1)];
	__atomic_store_n(&cq->head, head, __ATOMIC_RELAXED);
	sv_mutex_unlock(&cq->lock);
	return i;
}

int sv_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct sv_cq *cq = to_sv_cq(ibcq);
	int n;

	if (num_entries <= 0)
		return 0;
	n = cq_pop(cq, num_entries, wc);
	if (n)
		return n;
	/* Empty: a busy-polling thread drives progress itself rather than
	 * wait for the progress thread (receiving straight into wc what it
	 * can), then looks once more. */
	n = sv_engine_poll_hint_cq(cq->ctx, cq, wc, num_entries);
	if (n)
		return n;
	return cq_pop(cq, num_entries, wc);
}

int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct sv_cq *cq = to_sv_cq(ibcq);

	sv_mutex_lock(&cq->lock, SV_LOCK_CQ);
	/* IBA 11.4.2.2: a request for the next completion widens a pending
	 * solicited-only request; the reverse does not narrow it. */
	/* Stored atomically: the progress hint reads it without the lock. */
	if (!solicited_only)
		__atomic_store_n(&cq->armed, SV_CQ_ARM_ANY, __ATOMIC_RELAXED);
	else if (cq->armed != SV_CQ_ARM_ANY)
		__atomic_store_n(&cq->armed, SV_CQ_ARM_SOLICITED,
				 __ATOMIC_RELAXED);
	sv_mutex_unlock(&cq->lock);
	sv_engine_armed(cq->ctx);
	return 0;
}

/* ibv_modify_cq: completion moderation, checked as rdma-core's command
 * and the kernel check it (an unknown attribute bit or an empty mask is
 * EINVAL, as is a period beyond the reported max_cq_period; cq_count is
 * 16 bits wide, so any value is in range). */
int sv_modify_cq(struct ibv_cq *ibcq, struct ibv_modify_cq_attr *attr)
{
	if (sv_check_cq(ibcq, "ibv_modify_cq") || !attr)
		return EINVAL;
	if (attr->attr_mask >= IBV_CQ_ATTR_RESERVED) {
		sv_warn("ibv_modify_cq: attr_mask 0x%x has bits beyond IBV_CQ_ATTR_MODERATE",
			attr->attr_mask);
		return EINVAL;
	}
	if (!attr->attr_mask) {
		sv_warn("ibv_modify_cq: attr_mask is 0 (nothing to modify)");
		return EINVAL;
	}
	if (attr->moderate.cq_period > SV_MAX_CQ_MOD_PERIOD) {
		sv_warn("ibv_modify_cq: cq_period %u us is above max_cq_period %u",
			attr->moderate.cq_period, SV_MAX_CQ_MOD_PERIOD);
		return EINVAL;
	}
	return sv_cq_moderate(to_sv_cq(ibcq), attr->moderate.cq_count,
			      attr->moderate.cq_period);
}
