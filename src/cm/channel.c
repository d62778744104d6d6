/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Event channels and events: rdma_create/destroy_event_channel,
 * rdma_get_cm_event, rdma_ack_cm_event, rdma_migrate_id, rdma_event_str,
 * and the synchronous-mode helper.
 *
 * A channel's fd is an eventfd kept readable exactly while the channel's
 * queue is non-empty (written when the first event is queued, drained when
 * the last is taken, both under sv_cm.lock), so poll/epoll on it is
 * accurate, a blocking rdma_get_cm_event waits in poll() and an O_NONBLOCK
 * one answers EAGAIN.
 *
 * Some events need work in the application's context, as rdma-core does
 * it in rdma_get_cm_event: a CONNECT_RESPONSE on an id with a QP moves the
 * QP to RTR and RTS, sends the RTU and becomes ESTABLISHED; a REJECTED
 * moves the QP to ERROR; a MULTICAST_JOIN attaches the QP to the group.
 */
#include "cm/cm.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct sv_cm_channel *sv_channel_new(bool priv)
{
	struct sv_cm_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (ch->ch.fd < 0) {
		int err = errno;

		free(ch);
		errno = err;
		return NULL;
	}
	list_head_init(&ch->events);
	ch->priv = priv;
	list_add_tail(&sv_cm.channels, &ch->node);
	return ch;
}

static void channel_signal(struct sv_cm_channel *ch)
{
	uint64_t one = 1;

	if (write(ch->ch.fd, &one, sizeof(one)) < 0)
		sv_cm_log("channel write: %s", strerror(errno));
}

/* The counter is known to be non-zero here: read() cannot block. */
static void channel_unsignal(struct sv_cm_channel *ch)
{
	uint64_t v;

	if (read(ch->ch.fd, &v, sizeof(v)) < 0)
		sv_cm_log("channel read: %s", strerror(errno));
}

/*
 * Lock held.  Applications do destroy a channel while one of their threads
 * still blocks in rdma_get_cm_event on it (Debian's rping does, at exit).
 * With the kernel's ucma that read just never returns; here such readers
 * must not wake into freed memory either, so the channel stays allocated,
 * its eventfd quiet, until the last of them leaves (channel_leave).
 */
void sv_channel_free(struct sv_cm_channel *ch)
{
	struct list_node *it, *tmp;

	if (ch->waiters && !list_empty(&ch->events))
		channel_unsignal(ch);
	list_for_each_safe (&ch->events, it, tmp) {
		list_del(it);
		free(list_entry(it, struct sv_cm_event, node));
	}
	list_del(&ch->node);
	if (ch->waiters) {
		ch->closed = true;
		return;
	}
	close(ch->ch.fd);
	free(ch);
}

/*
 * Lock held.  Whether ch is a channel not yet destroyed, found without
 * reading *ch: the same rping's CM thread also comes back into
 * rdma_get_cm_event after its channel is gone, where the kernel's ucma
 * answers EBADF (its fd is closed).
 */
static bool channel_live(const struct sv_cm_channel *ch)
{
	const struct list_node *it;

	for (it = sv_cm.channels.n.next; it != &sv_cm.channels.n; it = it->next)
		if (it == &ch->node)
			return true;
	return false;
}

/* Lock held: a reader leaves rdma_get_cm_event. */
static void channel_leave(struct sv_cm_channel *ch)
{
	if (--ch->waiters == 0 && ch->closed) {
		close(ch->ch.fd);
		free(ch);
	}
}

SV_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct ibv_device **list;
	struct sv_cm_channel *ch;
	int n = 0;

	/* rdma-core fails here when there is no RDMA device at all. */
	list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	if (!list || n == 0) {
		errno = ENODEV;
		return NULL;
	}
	sv_cm_lock();
	ch = sv_channel_new(false);
	sv_cm_unlock();
	return ch ? &ch->ch : NULL;
}

SV_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (!channel)
		return;
	sv_cm_lock();
	sv_channel_free(to_sv_ch(channel));
	sv_cm_unlock();
}

/* ---- queueing ----------------------------------------------------------------- */

struct sv_cm_event *sv_event_new(struct sv_cm_id *id,
				 enum rdma_cm_event_type type, int status)
{
	struct sv_cm_event *e = calloc(1, sizeof(*e));

	if (!e) {
		sv_cm_log("out of memory: event %s dropped",
			  rdma_event_str(type));
		return NULL;
	}
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = id;
	return e;
}

void sv_event_queue(struct sv_cm_id *id, struct sv_cm_event *e)
{
	struct sv_cm_channel *ch = to_sv_ch(id->id.channel);
	bool was_empty = list_empty(&ch->events);

	sv_cm_log("id %p %s: %s status %d", (void *)id,
		  sv_cm_state_name(id->state), rdma_event_str(e->ev.event),
		  e->ev.status);
	list_add_tail(&ch->events, &e->node);
	if (was_empty)
		channel_signal(ch);
}

void sv_event_post(struct sv_cm_id *id, enum rdma_cm_event_type type,
		   int status)
{
	struct sv_cm_event *e = sv_event_new(id, type, status);

	if (e)
		sv_event_queue(id, e);
}

/* Undelivered events of an id disappear with it, as the kernel drops
 * them; CONNECT_REQUESTs of a listener take their unborn child along. */
void sv_event_purge(struct sv_cm_id *id)
{
	struct sv_cm_channel *ch = to_sv_ch(id->id.channel);
	struct list_node *it, *tmp;
	bool had = !list_empty(&ch->events);

	list_for_each_safe (&ch->events, it, tmp) {
		struct sv_cm_event *e =
			list_entry(it, struct sv_cm_event, node);
		struct sv_cm_id *evid = to_sv_id(e->ev.id);

		if (e->owner != id && evid != id)
			continue;
		list_del(&e->node);
		if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    evid != id) {
			e->owner->pending_reqs--;
			sv_id_destroy_unborn(evid);
		}
		free(e);
	}
	if (had && list_empty(&ch->events))
		channel_unsignal(ch);
}

void sv_event_purge_mc(struct sv_cm_id *id, struct sv_cm_mc *mc)
{
	struct sv_cm_channel *ch = to_sv_ch(id->id.channel);
	struct list_node *it, *tmp;
	bool had = !list_empty(&ch->events);

	list_for_each_safe (&ch->events, it, tmp) {
		struct sv_cm_event *e =
			list_entry(it, struct sv_cm_event, node);

		if (e->mc != mc)
			continue;
		list_del(&e->node);
		free(e);
	}
	if (had && list_empty(&ch->events))
		channel_unsignal(ch);
}

/* ---- delivery ----------------------------------------------------------------- */

/* rdma-core's CONNECT_RESPONSE processing: with a QP, the library moves
 * it to RTR/RTS, sends the RTU and reports ESTABLISHED; without one the
 * application does that and calls rdma_establish. */
static void process_conn_resp(struct sv_cm_event *e)
{
	struct sv_cm_id *id = to_sv_id(e->ev.id);
	int ret;

	if (!id->id.qp || id->state != SV_CM_REP_RCVD)
		return;
	ret = sv_qp_to_rtr_rts(id, RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH);
	if (!ret)
		ret = sv_conn_establish(id);
	if (ret) {
		sv_qp_to_err(id);
		e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
		e->ev.status = -ret;
		return;
	}
	e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
}

static void process_event(struct sv_cm_event *e)
{
	struct sv_cm_id *id = to_sv_id(e->ev.id);

	switch (e->ev.event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		id->unborn = false;
		e->owner->pending_reqs--;
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		process_conn_resp(e);
		break;
	case RDMA_CM_EVENT_REJECTED:
		sv_qp_to_err(id);
		break;
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		sv_mc_process_join(e);
		break;
	default:
		break;
	}
}

SV_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				struct rdma_cm_event **event)
{
	struct sv_cm_channel *ch;
	int err;

	if (!channel || !event)
		return sv_cm_err(EINVAL);
	ch = to_sv_ch(channel);
	sv_cm_lock();
	if (!channel_live(ch)) {
		sv_cm_unlock();
		return sv_cm_err(EBADF);
	}
	ch->waiters++;
	for (;;) {
		struct list_node *n;
		struct pollfd pfd;
		bool closed = ch->closed;
		int flags;

		n = closed ? NULL : list_first(&ch->events);
		if (n) {
			struct sv_cm_event *e =
				list_entry(n, struct sv_cm_event, node);

			list_del(n);
			if (list_empty(&ch->events))
				channel_unsignal(ch);
			e->owner->events_reported++;
			if (e->mc)
				e->mc->events_reported++;
			process_event(e);
			channel_leave(ch);
			sv_cm_unlock();
			*event = &e->ev;
			return 0;
		}
		sv_cm_unlock();

		flags = fcntl(channel->fd, F_GETFL);
		if (flags >= 0 && (flags & O_NONBLOCK)) {
			err = EAGAIN;
			break;
		}
		/* Destroyed under us: wait for good, as a read of a closed
		 * ucma file whose ids are gone would (a signal ends it). */
		pfd.fd = closed ? -1 : channel->fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, -1) < 0 && errno == EINTR) {
			err = EINTR;
			break;
		}
		sv_cm_lock();
	}
	sv_cm_lock();
	channel_leave(ch);
	sv_cm_unlock();
	return sv_cm_err(err);
}

SV_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct sv_cm_event *e = (struct sv_cm_event *)event;

	if (!event)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	e->owner->events_acked++;
	if (e->mc)
		e->mc->events_acked++;
	pthread_cond_broadcast(&sv_cm.acked);
	sv_cm_unlock();
	free(e);
	return 0;
}

/* ---- synchronous mode ------------------------------------------------------- */

int sv_cm_sync_complete(struct sv_cm_id *id)
{
	struct rdma_cm_event *ev;

	if (!id->sync)
		return 0;
	if (id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	if (rdma_get_cm_event(id->id.channel, &id->id.event))
		return -1;
	ev = id->id.event;
	if (!ev->status)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return sv_cm_err(ECONNREFUSED);
	return sv_cm_err(ev->status < 0 ? -ev->status : ev->status);
}

bool sv_cm_sync_pending(struct sv_cm_id *id)
{
	bool ret;

	sv_cm_lock();
	ret = !list_empty(&to_sv_ch(id->id.channel)->events);
	sv_cm_unlock();
	return ret;
}

/* ---- migration ---------------------------------------------------------------- */

SV_EXPORT int rdma_migrate_id(struct rdma_cm_id *cmid,
			      struct rdma_event_channel *channel)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	struct sv_cm_channel *old, *nch;
	struct list_node *it, *tmp;
	bool sync = channel == NULL;
	bool old_had;

	if (!cmid)
		return sv_cm_err(EINVAL);
	if (id->sync && !channel)
		return sv_cm_err(EINVAL);
	if (sync) {
		sv_cm_lock();
		nch = sv_channel_new(true);
		sv_cm_unlock();
		if (!nch)
			return -1;
	} else {
		nch = to_sv_ch(channel);
	}
	if (id->sync && id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}

	sv_cm_lock();
	old = to_sv_ch(cmid->channel);
	old_had = !list_empty(&old->events);
	/* Undelivered events follow the id, in order. */
	list_for_each_safe (&old->events, it, tmp) {
		struct sv_cm_event *e =
			list_entry(it, struct sv_cm_event, node);

		if (e->owner != id && e->ev.id != cmid)
			continue;
		list_del(&e->node);
		if (list_empty(&nch->events))
			channel_signal(nch);
		list_add_tail(&nch->events, &e->node);
	}
	if (old_had && list_empty(&old->events))
		channel_unsignal(old);
	cmid->channel = &nch->ch;
	if (id->sync)
		sv_channel_free(old);
	id->sync = sync;
	/* Events already handed out on the old channel must be acked before
	 * the id is used on the new one (rdma-core waits likewise). */
	while (id->events_acked < id->events_reported)
		sv_cond_wait(&sv_cm.acked, &sv_cm.lock);
	sv_cm_unlock();
	return 0;
}

/* rdma-core 60 (RDMACM_1.4): an application's own event on the id's
 * channel, delivered in order with the CM's; status and arg (param.arg,
 * the first 8 bytes of param) as given.  Only RDMA_CM_EVENT_USER. */
SV_EXPORT int rdma_write_cm_event(struct rdma_cm_id *cmid,
				  enum rdma_cm_event_type event, int status,
				  uint64_t arg)
{
	struct sv_cm_event *e;

	if (!cmid || (int)event != SV_CM_EVENT_USER)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	e = sv_event_new(to_sv_id(cmid), event, status);
	if (!e) {
		sv_cm_unlock();
		return sv_cm_err(ENOMEM);
	}
	memcpy(&e->ev.param, &arg, sizeof(arg));
	sv_event_queue(to_sv_id(cmid), e);
	sv_cm_unlock();
	return 0;
}

SV_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] =
			"RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] =
			"RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] =
			"RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
		[SV_CM_EVENT_ADDRINFO_RESOLVED] =
			"RDMA_CM_EVENT_ADDRINFO_RESOLVED",
		[SV_CM_EVENT_ADDRINFO_ERROR] = "RDMA_CM_EVENT_ADDRINFO_ERROR",
		/* rdma-core 65 has no name for RDMA_CM_EVENT_USER either. */
		[SV_CM_EVENT_USER] = "UNKNOWN EVENT",
	};

	if ((unsigned)event < sizeof(names) / sizeof(names[0]))
		return names[event];
	return "UNKNOWN EVENT";
}
