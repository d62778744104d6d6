/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The librdmacm calls of rdma-core 60 to 65, as a binary built against
 * those headers binds them (by version, dlvsym): an application's own
 * events (rdma_write_cm_event), asynchronous rdma_getaddrinfo
 * (rdma_resolve_addrinfo, rdma_query_addrinfo), and epoll over rsockets
 * (repoll_create, repoll_ctl, repoll_wait).
 */
#include "cm_test.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <rdma/rsocket.h>
#include <sys/epoll.h>

/* rdma_cma.h of rdma-core 60+ */
#define EV_ADDRINFO_RESOLVED 16
#define EV_USER 18
#define AI_SA 0x10

static void *sym(const char *name, const char *ver)
{
	void *lib = dlopen("librdmacm.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *p = lib ? dlvsym(lib, name, ver) : NULL;

	if (!p)
		fprintf(stderr, "no %s@%s\n", name, ver);
	REQUIRE(p);
	return p;
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* A user event comes out of the channel in order behind the CM's own,
 * with its status and param.arg; other types are refused. */
static void user_event_a(int unused)
{
	int (*write_ev)(struct rdma_cm_id *, enum rdma_cm_event_type, int,
			uint64_t) = sym("rdma_write_cm_event", "RDMACM_1.4");
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *e;
	uint64_t arg;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	CHECK_ERRNO(write_ev(id, RDMA_CM_EVENT_ESTABLISHED, 0, 1), EINVAL);
	CHECK(!readable(ch->fd));
	CHECK_EQ(write_ev(id, EV_USER, -5, 0x1122334455667788ULL), 0);
	CHECK_EQ(write_ev(id, EV_USER, 0, 42), 0);
	CHECK(readable(ch->fd));
	REQUIRE(rdma_get_cm_event(ch, &e) == 0);
	CHECK_EQ(e->event, EV_USER);
	CHECK(e->id == id);
	CHECK_EQ(e->status, -5);
	memcpy(&arg, &e->param, sizeof(arg));
	CHECK(arg == 0x1122334455667788ULL);
	CHECK_EQ(rdma_ack_cm_event(e), 0);
	REQUIRE(rdma_get_cm_event(ch, &e) == 0);
	memcpy(&arg, &e->param, sizeof(arg));
	CHECK_EQ(arg, 42);
	CHECK_EQ(rdma_ack_cm_event(e), 0);
	CHECK(!readable(ch->fd));
	CHECK_EQ(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/* rdma_getaddrinfo's answer, announced by ADDRINFO_RESOLVED and taken
 * once by rdma_query_addrinfo; one resolution at a time; no SA. */
static void resolve_addrinfo_a(int unused)
{
	int (*resolve)(struct rdma_cm_id *, const char *, const char *,
		       const struct rdma_addrinfo *) =
		sym("rdma_resolve_addrinfo", "RDMACM_1.4");
	int (*query)(struct rdma_cm_id *, struct rdma_addrinfo **) =
		sym("rdma_query_addrinfo", "RDMACM_1.4");
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_addrinfo hints = { 0 }, *ai = NULL;
	struct rdma_cm_id *id;
	struct rdma_cm_event *e;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	CHECK_ERRNO(query(id, &ai), ENOENT);
	hints.ai_port_space = RDMA_PS_TCP;
	hints.ai_flags = AI_SA;
	CHECK_ERRNO(resolve(id, NULL, "7471", &hints), ENOTSUP);
	hints.ai_flags = 0;
	CHECK_EQ(resolve(id, "127.0.0.1", "7471", &hints), 0);
	CHECK_ERRNO(resolve(id, "127.0.0.1", "7471", &hints), EBUSY);
	REQUIRE(rdma_get_cm_event(ch, &e) == 0);
	CHECK_EQ(e->event, EV_ADDRINFO_RESOLVED);
	CHECK_EQ(e->status, 0);
	CHECK_EQ(rdma_ack_cm_event(e), 0);
	CHECK_EQ(query(id, &ai), 0);
	REQUIRE(ai && ai->ai_dst_addr);
	CHECK_EQ(ai->ai_dst_addr->sa_family, AF_INET);
	CHECK_EQ(ntohs(((struct sockaddr_in *)ai->ai_dst_addr)->sin_port),
		 7471);
	rdma_freeaddrinfo(ai);
	CHECK_ERRNO(query(id, &ai), ENOENT);
	/* A result nobody took goes with the id. */
	CHECK_EQ(resolve(id, "127.0.0.1", "7471", &hints), 0);
	CHECK_EQ(rdma_get_cm_event(ch, &e), 0);
	CHECK_EQ(rdma_ack_cm_event(e), 0);
	CHECK_EQ(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/* epoll over rsockets and plain descriptors: a listener readable when a
 * connection waits, a stream readable when data came, EPOLLONESHOT, the
 * control errors, and rclose of the instance. */
static void repoll_a(int unused)
{
	int (*create)(int) = sym("repoll_create", "RDMACM_1.5");
	int (*ctl)(int, int, int, struct epoll_event *) =
		sym("repoll_ctl", "RDMACM_1.5");
	int (*wait)(int, struct epoll_event *, int, int) =
		sym("repoll_wait", "RDMACM_1.5");
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);
	socklen_t len = sizeof(a);
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	int ep, ls, s, c, fds[2];
	char buf[8];

	CHECK_ERRNO(create(0x1234), EINVAL);
	ep = create(EPOLL_CLOEXEC);
	REQUIRE(ep >= 0);
	ls = rsocket(AF_INET, SOCK_STREAM, 0);
	REQUIRE(ls >= 0);
	REQUIRE(rbind(ls, (struct sockaddr *)&a, sizeof(a)) == 0);
	REQUIRE(rlisten(ls, 4) == 0);
	REQUIRE(rgetsockname(ls, (struct sockaddr *)&a, &len) == 0);

	ev.data.u64 = 1;
	CHECK_EQ(ctl(ep, EPOLL_CTL_ADD, ls, &ev), 0);
	CHECK_ERRNO(ctl(ep, EPOLL_CTL_ADD, ls, &ev), EEXIST);
	CHECK_ERRNO(ctl(ep, EPOLL_CTL_MOD, 12345, &ev), ENOENT);
	CHECK_ERRNO(ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
	CHECK_ERRNO(ctl(12345, EPOLL_CTL_ADD, ls, &ev), EBADF);
	CHECK_ERRNO(wait(ep, out, 0, 0), EINVAL);
	CHECK_EQ(wait(ep, out, 4, 0), 0);

	s = rsocket(AF_INET, SOCK_STREAM, 0);
	REQUIRE(s >= 0);
	/* Nonblocking: the connection completes as the listener accepts. */
	REQUIRE(rfcntl(s, F_SETFL, O_NONBLOCK) == 0);
	CHECK_ERRNO(rconnect(s, (struct sockaddr *)&a, sizeof(a)), EINPROGRESS);
	CHECK_EQ(wait(ep, out, 4, 5000), 1);
	CHECK(out[0].events & EPOLLIN);
	CHECK_EQ(out[0].data.u64, 1);
	c = raccept(ls, NULL, NULL);
	REQUIRE(c >= 0);
	{
		struct pollfd p = { .fd = s, .events = POLLOUT };

		CHECK_EQ(rpoll(&p, 1, 5000), 1);
		REQUIRE(rfcntl(s, F_SETFL, 0) == 0);
	}

	/* The accepted stream, one-shot; a pipe beside it. */
	ev.events = EPOLLIN | EPOLLONESHOT;
	ev.data.u64 = 2;
	CHECK_EQ(ctl(ep, EPOLL_CTL_ADD, c, &ev), 0);
	REQUIRE(pipe(fds) == 0);
	ev.events = EPOLLIN;
	ev.data.u64 = 3;
	CHECK_EQ(ctl(ep, EPOLL_CTL_ADD, fds[0], &ev), 0);
	CHECK_EQ(ctl(ep, EPOLL_CTL_DEL, ls, NULL), 0);
	CHECK_EQ(wait(ep, out, 4, 0), 0);
	CHECK_EQ(rsend(s, "ping", 4, 0), 4);
	CHECK(write(fds[1], "x", 1) == 1);
	{
		int n = 0, got = 0;
		uint64_t deadline = ct_now_ms() + 5000;

		/* Both, possibly in separate waits. */
		while (got != 5 && ct_now_ms() < deadline) {
			n = wait(ep, out, 4, 1000);
			for (int i = 0; i < n; i++)
				got |= out[i].data.u64 == 2 ? 1 :
				       out[i].data.u64 == 3 ? 4 :
							      0;
			if (n < 0)
				break;
		}
		CHECK_EQ(got, 5);
	}
	/* Level-triggered: the pipe again; the one-shot stream not until
	 * re-armed. */
	CHECK_EQ(wait(ep, out, 4, 0), 1);
	CHECK_EQ(out[0].data.u64, 3);
	CHECK_EQ(rrecv(c, buf, sizeof(buf), 0), 4);
	CHECK(memcmp(buf, "ping", 4) == 0);
	CHECK_EQ(read(fds[0], buf, 1), 1);
	CHECK_EQ(wait(ep, out, 4, 0), 0);
	ev.events = EPOLLOUT;
	ev.data.u64 = 2;
	CHECK_EQ(ctl(ep, EPOLL_CTL_MOD, c, &ev), 0);
	CHECK_EQ(wait(ep, out, 4, 1000), 1);
	CHECK(out[0].events & EPOLLOUT);

	CHECK_EQ(rclose(ep), 0);
	CHECK_ERRNO(wait(ep, out, 4, 0), EBADF);
	rclose(c);
	rclose(s);
	rclose(ls);
	close(fds[0]);
	close(fds[1]);
}

/* clang-format off */
static const struct ct_case cases[] = {
	CT_CASE1(user_event, 20),
	CT_CASE1(resolve_addrinfo, 20),
	CT_CASE1(repoll, 30),
	{ NULL }
};
/* clang-format on */

CT_MAIN(cases)
