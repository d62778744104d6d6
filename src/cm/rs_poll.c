/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsockets: rpoll and rselect.  rsocket(7): they work on rsockets and on
 * ordinary descriptors alike (rdmacm-utils poll their event channels with
 * rpoll).  An rsocket's readiness is computed from its queues, not from
 * its descriptor: rpoll reaps completions and CM events, and when nothing
 * is ready it arms each rsocket's CQ, looks once more, and sleeps in
 * poll(2) on what can change that -- the completion channel, the CM event
 * channel (stream) or UDP socket (datagram) -- next to the ordinary
 * descriptors, as rdma-core's rpoll does.
 */
#include "cm/cm.h"
#include "cm/rs.h"

#include <stdlib.h>
#include <string.h>

/* Readiness of one rsocket (its lock held). */
static short rs_revents(struct rsocket *rs, short events)
{
	short rev = 0;

	if (rs->type == SOCK_DGRAM) {
		rs_dgram_poll_cq(rs);
		if (rs_dgram_readable(rs))
			rev |= POLLIN;
		if (!rs->qp || rs->sq_outstanding < rs->sq_size)
			rev |= POLLOUT;
		return rev & (events | POLLERR | POLLHUP);
	}
	switch (rs->state) {
	case RS_LISTENING: {
		struct pollfd p = { .fd = rs->ch->fd, .events = POLLIN };

		if (poll(&p, 1, 0) == 1)
			rev |= POLLIN;
		break;
	}
	case RS_INIT:
	case RS_BOUND:
		/* rdma-core: nothing happens on an idle socket. */
		break;
	case RS_RESOLVING_ADDR:
	case RS_RESOLVING_ROUTE:
	case RS_CONNECTING:
		if (!rs_do_connect(rs, true))
			rev |= POLLOUT;
		else if (rs->state == RS_ERROR)
			rev |= POLLOUT | POLLERR;
		break;
	default:
		rs_cm_events(rs);
		rs_stream_poll_cq(rs);
		if (rs_stream_readable(rs))
			rev |= POLLIN;
		if (rs_stream_writable(rs))
			rev |= POLLOUT;
		if (rs->peer_gone || (rs->peer_eof && rs->wr_shut))
			rev |= POLLHUP;
		if (rs->err)
			rev |= POLLERR;
		break;
	}
	return rev & (events | POLLERR | POLLHUP);
}

/* Arm and add what may wake this rsocket; false if it turned ready. */
static bool rs_arm(struct rsocket *rs, short events, struct pollfd *k, int *nk)
{
	if (rs->cq && !rs->cq_armed) {
		ibv_req_notify_cq(rs->cq, 0);
		rs->cq_armed = true;
		if (rs_revents(rs, events))
			return false;
	}
	if (rs->cc) {
		k[*nk].fd = rs->cc->fd;
		k[(*nk)++].events = POLLIN;
	}
	if (rs->type == SOCK_STREAM) {
		k[*nk].fd = rs->ch->fd;
		k[(*nk)++].events = POLLIN;
	} else {
		k[*nk].fd = rs->udp;
		k[(*nk)++].events = POLLIN;
	}
	return true;
}

static int rs_poll_once(struct pollfd *fds, nfds_t nfds, struct rsocket **rss,
			struct pollfd *plain, nfds_t nplain)
{
	nfds_t i, j = 0;
	int n = 0;

	if (nplain && poll(plain, nplain, 0) < 0)
		return -1;
	for (i = 0; i < nfds; i++) {
		fds[i].revents = 0;
		if (rss[i]) {
			sv_mutex_lock(&rss[i]->lock, SV_LOCK_RSOCKET);
			fds[i].revents = rs_revents(rss[i], fds[i].events);
			sv_mutex_unlock(&rss[i]->lock);
		} else if (fds[i].fd >= 0) {
			fds[i].revents = plain[j++].revents;
		}
		if (fds[i].revents)
			n++;
	}
	return n;
}

SV_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct rsocket **rss = NULL;
	struct pollfd *plain = NULL, *k = NULL;
	uint64_t end = timeout > 0 ? sv_now_ms() + timeout : 0;
	nfds_t i, nplain = 0, nrs = 0;
	int ret;

	if (nfds && !fds)
		return sv_cm_err(EFAULT);
	for (i = 0; i < nfds; i++)
		if (rs_lookup(fds[i].fd))
			nrs++;
	if (!nrs)
		return poll(fds, nfds, timeout);

	rss = calloc(nfds, sizeof(*rss));
	plain = calloc(nfds, sizeof(*plain));
	k = calloc(nfds * 2 + 1, sizeof(*k));
	if (!rss || !plain || !k) {
		ret = sv_cm_err(ENOMEM);
		goto out;
	}
	for (i = 0; i < nfds; i++) {
		rss[i] = rs_lookup(fds[i].fd);
		if (!rss[i] && fds[i].fd >= 0)
			plain[nplain++] = fds[i];
	}
	for (;;) {
		int nk = 0, left = -1;
		bool ready = false;

		ret = rs_poll_once(fds, nfds, rss, plain, nplain);
		if (ret || !timeout)
			break;
		for (i = 0; i < nfds && !ready; i++) {
			if (rss[i]) {
				sv_mutex_lock(&rss[i]->lock, SV_LOCK_RSOCKET);
				ready = !rs_arm(rss[i], fds[i].events, k, &nk);
				sv_mutex_unlock(&rss[i]->lock);
			}
		}
		if (ready)
			continue;
		for (i = 0; i < nplain; i++)
			k[nk++] = plain[i];
		if (timeout > 0) {
			uint64_t now = sv_now_ms();

			if (now >= end) {
				ret = 0;
				break;
			}
			left = (int)(end - now);
		}
		if (poll(k, nk, left) < 0) {
			ret = -1;
			break;
		}
		/* Completion events are consumed here; a thread blocked in
		 * a call on the same socket must look too. */
		for (i = 0; i < nfds; i++) {
			if (!rss[i])
				continue;
			sv_mutex_lock(&rss[i]->lock, SV_LOCK_RSOCKET);
			rs_drain_cc(rss[i]);
			rs_kick(rss[i]);
			sv_mutex_unlock(&rss[i]->lock);
		}
		if (timeout > 0 && sv_now_ms() >= end) {
			ret = rs_poll_once(fds, nfds, rss, plain, nplain);
			break;
		}
	}
out:
	free(rss);
	free(plain);
	free(k);
	return ret;
}

SV_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
		      fd_set *exceptfds, struct timeval *timeout)
{
	struct pollfd *fds;
	int fd, n = 0, ret, to;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return sv_cm_err(EINVAL);
	if (timeout && (timeout->tv_sec < 0 || timeout->tv_usec < 0))
		return sv_cm_err(EINVAL);
	fds = calloc(nfds ? nfds : 1, sizeof(*fds));
	if (!fds)
		return sv_cm_err(ENOMEM);
	for (fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (readfds && FD_ISSET(fd, readfds))
			ev |= POLLIN;
		if (writefds && FD_ISSET(fd, writefds))
			ev |= POLLOUT;
		if (ev || (exceptfds && FD_ISSET(fd, exceptfds))) {
			fds[n].fd = fd;
			fds[n++].events = ev;
		}
	}
	to = timeout ? (int)(timeout->tv_sec * 1000 +
			     (timeout->tv_usec + 999) / 1000) :
		       -1;
	ret = rpoll(fds, n, to);
	if (ret < 0) {
		free(fds);
		return ret;
	}
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	ret = 0;
	for (fd = 0; fd < n; fd++) {
		if (fds[fd].revents & POLLNVAL) {
			free(fds);
			return sv_cm_err(EBADF);
		}
		if (readfds && (fds[fd].events & POLLIN) &&
		    (fds[fd].revents & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(fds[fd].fd, readfds);
			ret++;
		}
		if (writefds && (fds[fd].events & POLLOUT) &&
		    (fds[fd].revents & (POLLOUT | POLLERR))) {
			FD_SET(fds[fd].fd, writefds);
			ret++;
		}
		if (exceptfds && (fds[fd].revents & POLLPRI)) {
			FD_SET(fds[fd].fd, exceptfds);
			ret++;
		}
	}
	free(fds);
	return ret;
}
