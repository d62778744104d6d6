/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The connection manager's process-wide machinery: the shared device
 * context and PD, address/GID helpers, the table of CM sockets and the
 * progress thread that drives them (epoll plus timers).
 *
 * The progress thread is about the simplest thing that works: wait on
 * epoll without the lock, then handle what is ready and what timed out
 * with the lock held.  Sockets are named in epoll by a (slot, generation)
 * handle, never by pointer, so an event that was already returned by
 * epoll_wait for a socket closed meanwhile finds nothing and is dropped.
 */
#include "cm/cm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

struct sv_cm_global sv_cm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.acked = PTHREAD_COND_INITIALIZER,
	.ids = LIST_HEAD_INIT(sv_cm.ids),
	.timers = LIST_HEAD_INIT(sv_cm.timers),
	.socks = LIST_HEAD_INIT(sv_cm.socks),
	.channels = LIST_HEAD_INIT(sv_cm.channels),
	.epfd = -1,
	.wakefd = -1,
};

#define SV_WAKE_HANDLE UINT64_MAX

/* The CM's trace, at SOFTVERBS_LOG=3 (debug). */
void sv_cm_log(const char *fmt, ...)
{
	va_list ap;

	if (sv_log_level < SV_LOG_DBG)
		return;
	fprintf(stderr, "softverbs cm[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

uint32_t sv_cm_random24(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)sv_now_ms() * 2654435761u ^ (uint32_t)getpid();
	return v & 0xffffff;
}

/* ---- the device ---------------------------------------------------------- */

int sv_cm_dev_open(void)
{
	struct ibv_device **list;
	struct ibv_device_attr attr;
	int n, i;

	if (sv_cm.verbs)
		return 0;
	list = ibv_get_device_list(&n);
	if (!list)
		return errno ? errno : ENODEV;
	for (i = 0; i < n && !sv_cm.verbs; i++)
		sv_cm.verbs = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!sv_cm.verbs)
		return ENODEV;
	if (ibv_query_device(sv_cm.verbs, &attr) == 0) {
		sv_cm.max_resp_res = attr.max_qp_rd_atom > 255 ?
					     255 :
					     (uint8_t)attr.max_qp_rd_atom;
		sv_cm.max_init_depth =
			attr.max_qp_init_rd_atom > 255 ?
				255 :
				(uint8_t)attr.max_qp_init_rd_atom;
	} else {
		sv_cm.max_resp_res = sv_cm.max_init_depth = 1;
	}
	return 0;
}

int sv_cm_dev_attach(struct sv_cm_id *id)
{
	int ret;

	if (id->has_dev)
		return 0;
	ret = sv_cm_dev_open();
	if (ret)
		return ret;
	/* One PD per device for ids that bring none, as rdma-core keeps; it
	 * lives while some id is bound to the device. */
	if (!sv_cm.pd) {
		sv_cm.pd = ibv_alloc_pd(sv_cm.verbs);
		if (!sv_cm.pd)
			return errno ? errno : ENOMEM;
	}
	sv_cm.pd_refs++;
	id->has_dev = true;
	id->id.verbs = sv_cm.verbs;
	id->id.pd = sv_cm.pd;
	id->id.port_num = 1;
	id->id.route.addr.addr.ibaddr.pkey = htobe16(0xffff);
	return 0;
}

void sv_cm_dev_detach(struct sv_cm_id *id)
{
	if (!id->has_dev)
		return;
	id->has_dev = false;
	if (--sv_cm.pd_refs == 0 && sv_cm.pd) {
		/* EBUSY if the application still has objects on it: keep it. */
		if (ibv_dealloc_pd(sv_cm.pd) == 0)
			sv_cm.pd = NULL;
		else
			sv_cm.pd_refs = 0;
	}
}

/* ---- addresses and GIDs ----------------------------------------------------- */

socklen_t sv_cm_addrlen(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

uint16_t sv_cm_port_of(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

void sv_cm_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

bool sv_cm_addr_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)
				      ->sin_addr.s_addr) >>
			24) == IN_LOOPBACKNET;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

bool sv_cm_addr_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return true;
}

void sv_cm_addr_unmap(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in in;

	if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
		return;
	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_port = in6->sin6_port;
	memcpy(&in.sin_addr, &in6->sin6_addr.s6_addr[12], 4);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &in, sizeof(in));
}

/* RoCE v2 GIDs are IP addresses, IPv4 ones v4-mapped. */
void sv_cm_addr_to_gid(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12],
		       &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       16);
	}
}

/* Index of the address's GID in the port's GID table, or -1. */
int sv_cm_gid_index(const struct sockaddr *sa)
{
	struct ibv_gid_entry tab[64];
	union ibv_gid gid;
	ssize_t n, i;

	if (sv_cm_dev_open())
		return -1;
	sv_cm_addr_to_gid(sa, &gid);
	n = ibv_query_gid_table(sv_cm.verbs, tab, 64, 0);
	for (i = 0; i < n; i++)
		if (tab[i].port_num == 1 &&
		    !memcmp(tab[i].gid.raw, gid.raw, sizeof(gid.raw)))
			return (int)tab[i].gid_index;
	return -1;
}

/* ---- socket table and progress ---------------------------------------------- */

static uint64_t sock_handle(const struct sv_cm_sock *s)
{
	return (uint64_t)s->gen << 32 | s->slot;
}

static struct sv_cm_sock *sock_lookup(uint64_t h)
{
	uint32_t slot = (uint32_t)h, gen = (uint32_t)(h >> 32);
	struct sv_cm_sock *s;

	if (slot >= sv_cm.nslots)
		return NULL;
	s = sv_cm.slots[slot];
	return s && s->gen == gen ? s : NULL;
}

static uint32_t next_gen = 1;

struct sv_cm_sock *sv_sock_new(int fd, enum sv_sock_kind kind)
{
	struct sv_cm_sock *s;
	uint32_t i;

	for (i = 0; i < sv_cm.nslots; i++)
		if (!sv_cm.slots[i])
			break;
	if (i == sv_cm.nslots) {
		uint32_t n = sv_cm.nslots ? sv_cm.nslots * 2 : 64;
		struct sv_cm_sock **t = realloc(sv_cm.slots, n * sizeof(*t));

		if (!t)
			return NULL;
		memset(t + sv_cm.nslots, 0, (n - sv_cm.nslots) * sizeof(*t));
		sv_cm.slots = t;
		sv_cm.nslots = n;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fd = fd;
	s->kind = kind;
	s->slot = i;
	s->gen = next_gen++;
	sv_cm.slots[i] = s;
	list_add_tail(&sv_cm.socks, &s->node);
	return s;
}

void sv_sock_want(struct sv_cm_sock *s, uint32_t events)
{
	struct epoll_event ev = { .events = events,
				  .data.u64 = sock_handle(s) };

	if (events == s->ev_mask)
		return;
	if (sv_cm_progress_start()) {
		sv_cm_log("cannot start the progress thread");
		return;
	}
	if (!s->ev_mask)
		epoll_ctl(sv_cm.epfd, EPOLL_CTL_ADD, s->fd, &ev);
	else if (!events)
		epoll_ctl(sv_cm.epfd, EPOLL_CTL_DEL, s->fd, NULL);
	else
		epoll_ctl(sv_cm.epfd, EPOLL_CTL_MOD, s->fd, &ev);
	s->ev_mask = events;
}

void sv_sock_close(struct sv_cm_sock *s)
{
	if (s->ev_mask)
		epoll_ctl(sv_cm.epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	sv_cm.slots[s->slot] = NULL;
	list_del(&s->node);
	if (s->id && s->id->sock == s)
		s->id->sock = NULL;
	free(s);
}

static void sock_flush(struct sv_cm_sock *s)
{
	while (s->wlen && !s->connecting && !s->dead) {
		ssize_t n = send(s->fd, s->wbuf, s->wlen,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				s->dead = true;
			break;
		}
		s->wlen -= (size_t)n;
		memmove(s->wbuf, s->wbuf + n, s->wlen);
	}
	if (s->dead)
		s->wlen = 0;
}

static void sock_update_events(struct sv_cm_sock *s)
{
	uint32_t ev = EPOLLIN;

	if (s->parked) {
		sv_sock_want(s, 0);
		return;
	}
	if (s->wlen || s->connecting)
		ev |= EPOLLOUT;
	sv_sock_want(s, ev);
}

int sv_sock_kick(struct sv_cm_sock *s)
{
	sock_flush(s);
	if (s->dead)
		return ECONNRESET;
	sock_update_events(s);
	return 0;
}

int sv_sock_send(struct sv_cm_sock *s, const struct sv_cm_wire *m)
{
	if (s->dead)
		return ECONNRESET;
	if (s->wlen + sizeof(*m) > sizeof(s->wbuf))
		return ENOBUFS;
	memcpy(s->wbuf + s->wlen, m, sizeof(*m));
	s->wlen += sizeof(*m);
	sock_flush(s);
	if (s->dead)
		return ECONNRESET;
	sock_update_events(s);
	return 0;
}

/* Called by the owner when a socket has no more use: let what is queued
 * reach the peer, then shut down our side and wait (briefly) for the
 * peer's EOF, so that closing never turns into a reset that could
 * destroy our last message before the peer read it. */
void sv_sock_orphan(struct sv_cm_sock *s)
{
	if (s->id && s->id->sock == s)
		s->id->sock = NULL;
	s->id = NULL;
	s->listener = NULL;
	if (s->kind != SV_SOCK_CONN || s->dead || s->connecting) {
		sv_sock_close(s);
		return;
	}
	s->linger = true;
	s->deadline_ms = sv_now_ms() + SV_CM_LINGER_MS;
	if (!s->wlen) {
		shutdown(s->fd, SHUT_WR);
		s->wr_shut = true;
	}
	sock_update_events(s);
	sv_cm_wake();
}

/* An orphan: discard whatever arrives, close on EOF. */
static void sock_linger_event(struct sv_cm_sock *s, uint32_t events)
{
	char buf[512];

	if (events & EPOLLOUT) {
		sock_flush(s);
		if (!s->wlen && !s->wr_shut) {
			shutdown(s->fd, SHUT_WR);
			s->wr_shut = true;
		}
	}
	for (;;) {
		ssize_t n = recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			s->dead = true;
		break;
	}
	if (s->dead) {
		sv_sock_close(s);
		return;
	}
	sock_update_events(s);
}

static void sock_event(struct sv_cm_sock *s, uint32_t events)
{
	if (s->kind == SV_SOCK_MAD) {
		sv_gsi_sock_readable(s);
		return;
	}
	if (s->linger) {
		sock_linger_event(s, events);
		return;
	}
	if (s->kind == SV_SOCK_LISTEN) {
		sv_conn_accept(s);
		return;
	}
	if (s->connecting && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		sv_conn_writable(s);
		return;
	}
	if (events & EPOLLOUT) {
		sock_flush(s);
		if (!s->dead)
			sock_update_events(s);
	}
	/* Reading also reports EOF and errors (EPOLLHUP/EPOLLERR). */
	sv_conn_readable(s);
}

/* ---- timers ------------------------------------------------------------------ */

void sv_cm_timer_set(struct sv_cm_id *id, enum sv_cm_timer t, uint64_t ms)
{
	if (id->timer == SV_TIMER_NONE)
		list_add_tail(&sv_cm.timers, &id->timer_node);
	id->timer = t;
	id->deadline_ms = sv_now_ms() + ms;
	sv_cm_wake();
}

void sv_cm_timer_clear(struct sv_cm_id *id)
{
	if (id->timer == SV_TIMER_NONE)
		return;
	list_del(&id->timer_node);
	id->timer = SV_TIMER_NONE;
}

void sv_cm_wake(void)
{
	uint64_t one = 1;

	if (sv_cm.wakefd >= 0 && write(sv_cm.wakefd, &one, sizeof(one)) < 0)
		sv_cm_log("wake: %s", strerror(errno));
}

/* Milliseconds until the next deadline, -1 for none (lock held). */
static int next_timeout(uint64_t now)
{
	uint64_t next = UINT64_MAX;
	struct list_node *it, *tmp;

	list_for_each_safe (&sv_cm.timers, it, tmp) {
		struct sv_cm_id *id =
			list_entry(it, struct sv_cm_id, timer_node);

		if (id->deadline_ms < next)
			next = id->deadline_ms;
	}
	list_for_each_safe (&sv_cm.socks, it, tmp) {
		struct sv_cm_sock *s = list_entry(it, struct sv_cm_sock, node);

		if (s->deadline_ms && s->deadline_ms < next)
			next = s->deadline_ms;
	}
	if (next == UINT64_MAX)
		return -1;
	if (next <= now)
		return 0;
	return next - now > 60000 ? 60000 : (int)(next - now);
}

static void run_timers(uint64_t now)
{
	struct list_node *it, *tmp;
	enum sv_cm_timer t;

	/* Restart each walk after an expiry: a handler may change the lists
	 * (close sockets, arm or clear timers). */
again_ids:
	list_for_each_safe (&sv_cm.timers, it, tmp) {
		struct sv_cm_id *id =
			list_entry(it, struct sv_cm_id, timer_node);

		if (id->deadline_ms > now)
			continue;
		t = id->timer;
		sv_cm_timer_clear(id);
		sv_conn_timer(id, t);
		goto again_ids;
	}
again:
	list_for_each_safe (&sv_cm.socks, it, tmp) {
		struct sv_cm_sock *s = list_entry(it, struct sv_cm_sock, node);

		if (s->deadline_ms && s->deadline_ms <= now) {
			s->deadline_ms = 0;
			if (s->linger)
				sv_sock_close(s);
			else
				sv_conn_sock_timeout(s);
			goto again;
		}
	}
}

static void *progress_thread(void *arg)
{
	struct epoll_event evs[32];

	for (;;) {
		int n, i, timeout;

		sv_cm_lock();
		timeout = next_timeout(sv_now_ms());
		sv_cm_unlock();
		n = epoll_wait(sv_cm.epfd, evs, 32, timeout);
		if (n < 0 && errno != EINTR) {
			sv_cm_log("epoll_wait: %s", strerror(errno));
			sleep(1);
			continue;
		}
		sv_cm_lock();
		for (i = 0; i < n; i++) {
			struct sv_cm_sock *s;

			if (evs[i].data.u64 == SV_WAKE_HANDLE) {
				uint64_t v;

				if (read(sv_cm.wakefd, &v, sizeof(v)) < 0)
					(void)0; /* EAGAIN: already drained */
				continue;
			}
			if (evs[i].data.u64 == SV_GSI_HANDLE) {
				sv_gsi_readable();
				continue;
			}
			s = sock_lookup(evs[i].data.u64);
			if (s)
				sock_event(s, evs[i].events);
		}
		run_timers(sv_now_ms());
		sv_cm_unlock();
	}
	return arg;
}

int sv_cm_progress_start(void)
{
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.u64 = SV_WAKE_HANDLE };
	sigset_t all, old;
	int ret;

	if (sv_cm.thread_started)
		return 0;
	if (sv_cm.epfd < 0) {
		sv_cm.epfd = epoll_create1(EPOLL_CLOEXEC);
		if (sv_cm.epfd < 0)
			return errno;
	}
	if (sv_cm.wakefd < 0) {
		sv_cm.wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (sv_cm.wakefd < 0)
			return errno;
		if (epoll_ctl(sv_cm.epfd, EPOLL_CTL_ADD, sv_cm.wakefd, &ev))
			return errno;
	}
	/* The application's signals are for the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&sv_cm.thread, NULL, progress_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return ret;
	pthread_detach(sv_cm.thread);
	sv_cm.thread_started = true;
	return 0;
}
