/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsockets: repoll_create, repoll_ctl, repoll_wait (rdma-core 65,
 * RDMACM_1.5), epoll(7)'s interface over rsockets and ordinary descriptors
 * alike, as rpoll is poll(2)'s.
 *
 * An instance is an interest list kept here, named by a real epoll
 * descriptor (so that the number is the process's own, and close or
 * rclose releases it); repoll_wait polls the list through rpoll, which
 * computes an rsocket's readiness from its queues.  Readiness is reported
 * level-triggered: EPOLLET is accepted and behaves as level-triggered (a
 * ready descriptor is reported at every wait until it is drained), which
 * a program written for edge-triggered epoll tolerates, since it reads
 * until EAGAIN anyway.  EPOLLONESHOT disables an entry once reported,
 * until EPOLL_CTL_MOD re-arms it.  The list lives under the CM's lock.
 */
#include "cm/cm.h"
#include "cm/rs.h"

#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

struct repoll_ent {
	int fd;
	struct epoll_event ev;
	bool disabled; /* EPOLLONESHOT fired */
};

struct repoll {
	struct list_node node; /* repolls */
	int epfd;
	struct repoll_ent *ents;
	int n, cap;
};

static struct list_head repolls = LIST_HEAD_INIT(repolls);

static struct repoll *repoll_find(int epfd)
{
	struct list_node *it, *tmp;

	list_for_each_safe (&repolls, it, tmp) {
		struct repoll *ep = list_entry(it, struct repoll, node);

		if (ep->epfd == epfd)
			return ep;
	}
	return NULL;
}

static int ent_index(const struct repoll *ep, int fd)
{
	for (int i = 0; i < ep->n; i++)
		if (ep->ents[i].fd == fd)
			return i;
	return -1;
}

SV_EXPORT int repoll_create(int flags)
{
	struct repoll *ep;

	if (flags & ~EPOLL_CLOEXEC)
		return sv_cm_err(EINVAL);
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return sv_cm_err(ENOMEM);
	ep->epfd = epoll_create1(flags);
	if (ep->epfd < 0) {
		int err = errno;

		free(ep);
		return sv_cm_err(err);
	}
	sv_cm_lock();
	list_add_tail(&repolls, &ep->node);
	sv_cm_unlock();
	return ep->epfd;
}

/* rclose of a descriptor that is no rsocket: 0 if it named a repoll
 * instance (now gone), else -1 EBADF. */
int rs_repoll_close(int epfd)
{
	struct repoll *ep;

	sv_cm_lock();
	ep = repoll_find(epfd);
	if (ep)
		list_del(&ep->node);
	sv_cm_unlock();
	if (!ep)
		return sv_cm_err(EBADF);
	close(ep->epfd);
	free(ep->ents);
	free(ep);
	return 0;
}

SV_EXPORT int repoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	struct repoll *ep;
	int i, err = 0;

	if (fd == epfd)
		return sv_cm_err(EINVAL);
	if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && !event)
		return sv_cm_err(EFAULT);
	sv_cm_lock();
	ep = repoll_find(epfd);
	if (!ep) {
		sv_cm_unlock();
		return sv_cm_err(EBADF);
	}
	i = ent_index(ep, fd);
	switch (op) {
	case EPOLL_CTL_ADD:
		if (i >= 0) {
			err = EEXIST;
			break;
		}
		if (ep->n == ep->cap) {
			int cap = ep->cap ? 2 * ep->cap : 8;
			struct repoll_ent *e =
				realloc(ep->ents, cap * sizeof(*e));

			if (!e) {
				err = ENOMEM;
				break;
			}
			ep->ents = e;
			ep->cap = cap;
		}
		ep->ents[ep->n++] =
			(struct repoll_ent){ .fd = fd, .ev = *event };
		break;
	case EPOLL_CTL_MOD:
		if (i < 0) {
			err = ENOENT;
			break;
		}
		ep->ents[i].ev = *event;
		ep->ents[i].disabled = false;
		break;
	case EPOLL_CTL_DEL:
		if (i < 0) {
			err = ENOENT;
			break;
		}
		ep->ents[i] = ep->ents[--ep->n];
		break;
	default:
		err = EINVAL;
	}
	sv_cm_unlock();
	return err ? sv_cm_err(err) : 0;
}

/* epoll's event bits are poll's for the ones they share (EPOLLIN ==
 * POLLIN, ...); the rest (EPOLLET, EPOLLONESHOT, ...) are not polled. */
#define REPOLL_POLL_BITS \
	(EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP | EPOLLERR | EPOLLHUP)

SV_EXPORT int repoll_wait(int epfd, struct epoll_event *events, int maxevents,
			  int timeout)
{
	struct repoll *ep;
	struct pollfd *fds = NULL;
	uint64_t *data = NULL;
	int n = 0, ret, out = 0;

	if (maxevents <= 0 || !events)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	ep = repoll_find(epfd);
	if (!ep) {
		sv_cm_unlock();
		return sv_cm_err(EBADF);
	}
	if (ep->n) {
		fds = calloc(ep->n, sizeof(*fds));
		data = calloc(ep->n, sizeof(*data));
		if (!fds || !data) {
			sv_cm_unlock();
			free(fds);
			free(data);
			return sv_cm_err(ENOMEM);
		}
	}
	for (int i = 0; i < ep->n; i++) {
		if (ep->ents[i].disabled)
			continue;
		fds[n].fd = ep->ents[i].fd;
		fds[n].events = ep->ents[i].ev.events & REPOLL_POLL_BITS;
		data[n++] = ep->ents[i].ev.data.u64;
	}
	sv_cm_unlock();

	ret = rpoll(fds, n, timeout);
	if (ret > 0) {
		sv_cm_lock();
		ep = repoll_find(epfd);
		for (int i = 0; i < n && out < maxevents; i++) {
			int k;

			if (!fds[i].revents)
				continue;
			/* Removed or disabled while we waited: not reported. */
			k = ep ? ent_index(ep, fds[i].fd) : -1;
			if (k < 0 || ep->ents[k].disabled)
				continue;
			if (ep->ents[k].ev.events & EPOLLONESHOT)
				ep->ents[k].disabled = true;
			events[out].events = fds[i].revents;
			events[out++].data.u64 = data[i];
		}
		sv_cm_unlock();
		ret = out;
	}
	free(fds);
	free(data);
	return ret;
}
