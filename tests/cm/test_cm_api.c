/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * librdmacm API behaviour within one process: event channels (pollable,
 * O_NONBLOCK), ids, binding and ports, address/route resolution and their
 * errors, rdma_getaddrinfo, options, rdma_init_qp_attr, rdma_migrate_id,
 * devices, ECE and the rsocket stubs.
 */
#include "cm_test.h"

#include <netdb.h>
#include <pthread.h>
#include <rdma/rsocket.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/syscall.h>

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void channel_fd_a(int unused)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev = NULL;
	struct rdma_cm_id *id;
	struct sockaddr_in d = ct_addr4("127.0.0.1", 4791);
	int fl;

	REQUIRE(ch);
	CHECK(ch->fd >= 0);
	CHECK(!readable(ch->fd));
	CHECK_ERRNO(rdma_get_cm_event(NULL, &ev), EINVAL);
	CHECK_ERRNO(rdma_get_cm_event(ch, NULL), EINVAL);
	CHECK_ERRNO(rdma_ack_cm_event(NULL), EINVAL);

	/* O_NONBLOCK: no event -> EAGAIN at once. */
	fl = fcntl(ch->fd, F_GETFL);
	REQUIRE(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) == 0);
	CHECK_ERRNO(rdma_get_cm_event(ch, &ev), EAGAIN);

	REQUIRE(rdma_create_id(ch, &id, (void *)0x1234, RDMA_PS_TCP) == 0);
	CHECK(id->channel == ch);
	CHECK(id->context == (void *)0x1234);
	CHECK_EQ(id->ps, RDMA_PS_TCP);
	CHECK_EQ(id->qp_type, IBV_QPT_RC);
	CHECK(id->verbs == NULL);
	REQUIRE(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 1000) == 0);
	/* The event makes the fd readable, taking it makes it quiet. */
	CHECK(readable(ch->fd));
	REQUIRE(rdma_get_cm_event(ch, &ev) == 0);
	CHECK_EQ(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK_EQ(ev->status, 0);
	CHECK(ev->id == id);
	CHECK(!readable(ch->fd));
	CHECK_ERRNO(rdma_get_cm_event(ch, &ev), EAGAIN);
	/* ev was overwritten only on success */
	rdma_ack_cm_event(ev);

	/* Blocking mode: an event already queued is returned at once. */
	REQUIRE(fcntl(ch->fd, F_SETFL, fl) == 0);
	REQUIRE(rdma_resolve_route(id, 1000) == 0);
	REQUIRE(rdma_get_cm_event(ch, &ev) == 0);
	CHECK_EQ(ev->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_ack_cm_event(ev);
	CHECK(id->verbs != NULL);
	CHECK(id->pd != NULL);
	CHECK_EQ(id->port_num, 1);
	CHECK(id->route.num_paths == 1 && id->route.path_rec);

	CHECK(rdma_destroy_id(id) == 0);
	rdma_destroy_event_channel(ch);
}

/* A blocked rdma_get_cm_event wakes when another thread queues an event. */
static struct rdma_event_channel *blk_ch;
static struct rdma_cm_event *blk_ev;
static int blk_ret;

static void *blk_reader(void *arg)
{
	blk_ret = rdma_get_cm_event(blk_ch, &blk_ev);
	return arg;
}

static void channel_blocking_a(int unused)
{
	struct sockaddr_in d = ct_addr4("127.0.0.1", 4791);
	struct rdma_cm_id *id;
	pthread_t t;

	blk_ch = rdma_create_event_channel();
	REQUIRE(blk_ch);
	REQUIRE(rdma_create_id(blk_ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(pthread_create(&t, NULL, blk_reader, NULL) == 0);
	usleep(200000);
	REQUIRE(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 1000) == 0);
	pthread_join(t, NULL);
	CHECK_EQ(blk_ret, 0);
	CHECK(blk_ev && blk_ev->event == RDMA_CM_EVENT_ADDR_RESOLVED);
	if (blk_ev)
		rdma_ack_cm_event(blk_ev);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(blk_ch);
}

/*
 * Debian's rping (rdma-core 44) destroys its id and event channel while its
 * own CM thread is still blocked in rdma_get_cm_event.  With the kernel's
 * ucma that reader simply stays blocked until the process exits; here it
 * must not wake into the freed channel either (rping -q crashed at exit,
 * about once in 20 runs).  Each round: a reader blocked in poll() on a
 * fresh channel, an event queued to wake it (rdma_resolve_addr queues it
 * at once), then the id and the channel destroyed at once, racing the
 * reader.  A reader gets the event (and acks it) or stays blocked, never
 * an error, and never touches freed memory (the ASan build sees that).
 * A call made after the destroy gets EBADF.
 */
#define ORPHAN_ROUNDS 150

static atomic_int orphan_errors, orphan_events, orphan_tid;

static void *orphan_reader(void *arg)
{
	struct rdma_event_channel *ch = arg;
	struct rdma_cm_event *ev;

	atomic_store(&orphan_tid, (int)syscall(SYS_gettid));
	if (rdma_get_cm_event(ch, &ev)) {
		ct_log("reader of a destroyed channel: %s", strerror(errno));
		atomic_fetch_add(&orphan_errors, 1);
		return NULL;
	}
	atomic_fetch_add(&orphan_events, 1);
	rdma_ack_cm_event(ev);
	return NULL; /* and never touches the channel again */
}

/* Whether thread tid of this process sleeps in poll() (or ppoll). */
static bool in_poll(int tid)
{
	char path[64];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
#ifdef SYS_poll
	if (nr == SYS_poll)
		return true;
#endif
	return nr == SYS_ppoll;
}

static void channel_destroy_blocked_a(int unused)
{
	struct sockaddr_in d = ct_addr4("127.0.0.1", 4791);
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	pthread_attr_t at;
	pthread_t t;
	uint64_t end;
	int i, tid;

	REQUIRE(pthread_attr_init(&at) == 0);
	REQUIRE(pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0);
	REQUIRE(pthread_attr_setstacksize(&at, 256 * 1024) == 0);
	for (i = 0; i < ORPHAN_ROUNDS; i++) {
		ch = rdma_create_event_channel();
		REQUIRE(ch);
		REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
		atomic_store(&orphan_tid, 0);
		REQUIRE(pthread_create(&t, &at, orphan_reader, ch) == 0);
		end = ct_now_ms() + 5000;
		while (!(tid = atomic_load(&orphan_tid)) || !in_poll(tid)) {
			REQUIRE(ct_now_ms() < end);
			usleep(100);
		}
		REQUIRE(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d,
					  1000) == 0);
		CHECK_EQ(rdma_destroy_id(id), 0);
		rdma_destroy_event_channel(ch);
	}
	usleep(200000); /* time for a wrongly woken reader to return */
	ct_log("%d rounds: %d readers got their event before the destroy",
	       ORPHAN_ROUNDS, atomic_load(&orphan_events));
	CHECK_EQ(atomic_load(&orphan_errors), 0);
	pthread_attr_destroy(&at);

	/* rping's CM thread also calls again after the channel is gone:
	 * EBADF, as the kernel's closed fd answers, and no access to it. */
	ch = rdma_create_event_channel();
	REQUIRE(ch);
	rdma_destroy_event_channel(ch);
	CHECK_ERRNO(rdma_get_cm_event(ch, &ev), EBADF);
}

static void event_str_a(int unused)
{
	CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_ADDR_RESOLVED),
		      "RDMA_CM_EVENT_ADDR_RESOLVED"));
	CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_REJECTED),
		      "RDMA_CM_EVENT_REJECTED"));
	CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT),
		      "RDMA_CM_EVENT_TIMEWAIT_EXIT"));
	CHECK(!strcmp(rdma_event_str((enum rdma_cm_event_type)99),
		      "UNKNOWN EVENT"));
}

static void bind_ports_a(int unused)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);
	struct sockaddr_in any = ct_addr4("0.0.0.0", 0);
	struct sockaddr_in foreign = ct_addr4("198.51.100.77", 0);
	struct rdma_cm_id *id1, *id2, *id3;
	struct ibv_context **devs;
	uint16_t port;
	int n = -1;

	REQUIRE(ch);
	CHECK_ERRNO(rdma_create_id(ch, &id1, NULL, (enum rdma_port_space)0x77),
		    EINVAL);
	REQUIRE(rdma_create_id(ch, &id1, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_create_id(ch, &id2, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_create_id(ch, &id3, NULL, RDMA_PS_UDP) == 0);
	CHECK_EQ(id3->qp_type, IBV_QPT_UD);

	CHECK_ERRNO(rdma_bind_addr(id1, NULL), EINVAL);
	CHECK_ERRNO(rdma_bind_addr(id1, (struct sockaddr *)&foreign),
		    EADDRNOTAVAIL);
	REQUIRE(rdma_bind_addr(id1, (struct sockaddr *)&a) == 0);
	port = ntohs(rdma_get_src_port(id1));
	CHECK(port != 0);
	CHECK_EQ(rdma_get_local_addr(id1)->sa_family, AF_INET);
	CHECK(((struct sockaddr_in *)rdma_get_local_addr(id1))
		      ->sin_addr.s_addr == a.sin_addr.s_addr);
	/* A loopback address is bound as the wildcard is (the kernel's
	 * cma_any_addr): no device until the id resolves or connects. */
	CHECK(id1->verbs == NULL);
	/* bound once only */
	CHECK_ERRNO(rdma_bind_addr(id1, (struct sockaddr *)&a), EINVAL);

	/* A wildcard bind has no device yet (as the kernel's). */
	REQUIRE(rdma_bind_addr(id3, (struct sockaddr *)&any) == 0);
	CHECK(id3->verbs == NULL);

	/* Resolving attaches one; the device list holds the context the
	 * ids use. */
	{
		struct sockaddr_in d = ct_addr4("127.0.0.1", 7000);
		struct rdma_cm_event *ev;

		REQUIRE(rdma_resolve_addr(id3, NULL, (struct sockaddr *)&d,
					  1000) == 0);
		REQUIRE(rdma_get_cm_event(ch, &ev) == 0);
		CHECK_EQ(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
		rdma_ack_cm_event(ev);
		CHECK(id3->verbs != NULL);
		CHECK(id3->pd != NULL);
	}
	devs = rdma_get_devices(&n);
	REQUIRE(devs);
	CHECK_EQ(n, 1);
	CHECK(devs[0] == id3->verbs);
	CHECK(devs[1] == NULL);
	CHECK(!strcmp(ibv_get_device_name(devs[0]->device), "softverbs0"));
	rdma_free_devices(devs);

	/* Two listeners on one port: the second fails. */
	REQUIRE(rdma_listen(id1, 4) == 0);
	a.sin_port = htons(port);
	if (rdma_bind_addr(id2, (struct sockaddr *)&a) == 0)
		CHECK_ERRNO(rdma_listen(id2, 4), EADDRINUSE);
	else
		CHECK_EQ(errno, EADDRINUSE);
	/* listen again just takes the backlog */
	CHECK(rdma_listen(id1, 16) == 0);

	/* Wrong states. */
	CHECK_ERRNO(rdma_resolve_route(id1, 100), EINVAL);
	CHECK_ERRNO(rdma_connect(id1, NULL), EINVAL);
	CHECK_ERRNO(rdma_accept(id1, NULL), EINVAL);
	CHECK_ERRNO(rdma_reject(id1, NULL, 0), EINVAL);

	CHECK(rdma_destroy_id(id1) == 0);
	CHECK(rdma_destroy_id(id2) == 0);
	CHECK(rdma_destroy_id(id3) == 0);

	/* The port is free again for a new listener. */
	REQUIRE(rdma_create_id(ch, &id1, NULL, RDMA_PS_TCP) == 0);
	CHECK(rdma_bind_addr(id1, (struct sockaddr *)&a) == 0);
	CHECK(rdma_listen(id1, 4) == 0);
	CHECK_EQ(ntohs(rdma_get_src_port(id1)), port);
	rdma_destroy_id(id1);

	/* rdma_listen on an unbound id binds the wildcard. */
	REQUIRE(rdma_create_id(ch, &id1, NULL, RDMA_PS_TCP) == 0);
	CHECK(rdma_listen(id1, 0) == 0);
	CHECK(rdma_get_src_port(id1) != 0);
	rdma_destroy_id(id1);
	rdma_destroy_event_channel(ch);
}

static void resolve_errors_a(int unused)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in d = ct_addr4("127.0.0.1", 7000);
	struct sockaddr_in s4 = ct_addr4("127.0.0.1", 0);
	struct sockaddr_in6 d6;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint16_t port;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	CHECK_ERRNO(rdma_resolve_addr(id, NULL, NULL, 100), EINVAL);
	memset(&d6, 0, sizeof(d6));
	d6.sin6_family = AF_INET6;
	d6.sin6_addr = in6addr_loopback;
	CHECK_ERRNO(rdma_resolve_addr(id, (struct sockaddr *)&s4,
				      (struct sockaddr *)&d6, 100),
		    EINVAL);
	CHECK_ERRNO(rdma_resolve_route(id, 100), EINVAL);
	CHECK_ERRNO(rdma_disconnect(id), EINVAL);

	/* An explicit source address and port are used. */
	REQUIRE(rdma_resolve_addr(id, (struct sockaddr *)&s4,
				  (struct sockaddr *)&d, 100) == 0);
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	port = ntohs(rdma_get_src_port(id));
	CHECK(port != 0);
	CHECK_EQ(ntohs(rdma_get_dst_port(id)), 7000);
	CHECK_EQ(rdma_get_peer_addr(id)->sa_family, AF_INET);
	/* IPv4 GIDs are v4-mapped: ::ffff:127.0.0.1 both ways. */
	CHECK_EQ(id->route.addr.addr.ibaddr.sgid.raw[10], 0xff);
	CHECK_EQ(id->route.addr.addr.ibaddr.sgid.raw[12], 127);
	CHECK(!memcmp(&id->route.addr.addr.ibaddr.sgid,
		      &id->route.addr.addr.ibaddr.dgid, 16));
	/* Connecting needs the route first. */
	CHECK_ERRNO(rdma_connect(id, NULL), EINVAL);
	rdma_destroy_id(id);

	/* IPv6 loopback. */
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	d6.sin6_port = htons(7000);
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&d6, 100) == 0) {
		ev = CT_EXPECT(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
		if (ev)
			rdma_ack_cm_event(ev);
		CHECK_EQ(rdma_get_local_addr(id)->sa_family, AF_INET6);
		CHECK_EQ(id->route.addr.addr.ibaddr.sgid.raw[15], 1);
	} else {
		ct_log("no IPv6 loopback here (%s)", strerror(errno));
	}
	rdma_destroy_id(id);

	/* Unroutable: the route lookup fails at once, as the kernel's. */
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	d6.sin6_port = htons(7000);
	inet_pton(AF_INET6, "2001:db8:dead::1", &d6.sin6_addr);
	errno = 0;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&d6, 100) == 0) {
		ct_log("2001:db8:dead::1 is routable here: skipping that check");
		ev = ct_get_event(ch, 1000);
		if (ev)
			rdma_ack_cm_event(ev);
	} else {
		CHECK(errno == ENETUNREACH || errno == EHOSTUNREACH);
	}
	CHECK(!readable(ch->fd));
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

static void rai_a(int unused)
{
	struct rdma_addrinfo hints, *res;
	struct sockaddr_in *sin;
	int ret;

	CHECK_ERRNO(rdma_getaddrinfo(NULL, NULL, NULL, &res), EINVAL);

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	REQUIRE(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res) == 0);
	CHECK_EQ(res->ai_family, AF_INET);
	CHECK_EQ(res->ai_qp_type, IBV_QPT_RC);
	CHECK_EQ(res->ai_port_space, RDMA_PS_TCP);
	CHECK(!(res->ai_flags & RAI_PASSIVE));
	CHECK_EQ(res->ai_dst_len, sizeof(struct sockaddr_in));
	CHECK_EQ(res->ai_src_len, 0);
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	CHECK_EQ(ntohs(sin->sin_port), 7471);
	CHECK_EQ(ntohl(sin->sin_addr.s_addr), INADDR_LOOPBACK);
	rdma_freeaddrinfo(res);

	/* Passive: the address is the source, wildcard without a node. */
	hints.ai_flags = RAI_PASSIVE;
	REQUIRE(rdma_getaddrinfo(NULL, "7471", &hints, &res) == 0);
	CHECK(res->ai_flags & RAI_PASSIVE);
	CHECK_EQ(res->ai_dst_len, 0);
	REQUIRE(res->ai_src_len > 0);
	CHECK_EQ(ntohs(((struct sockaddr_in *)res->ai_src_addr)->sin_port),
		 7471);
	rdma_freeaddrinfo(res);

	/* UD / UDP port space. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_qp_type = IBV_QPT_UD;
	REQUIRE(rdma_getaddrinfo("127.0.0.1", "7174", &hints, &res) == 0);
	CHECK_EQ(res->ai_qp_type, IBV_QPT_UD);
	CHECK_EQ(res->ai_port_space, RDMA_PS_UDP);
	rdma_freeaddrinfo(res);

	/* Numeric only: a name is refused by getaddrinfo. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	ret = rdma_getaddrinfo("localhost", "7471", &hints, &res);
	CHECK_EQ(ret, EAI_NONAME);

	/* Family hint: IPv6 loopback. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET6;
	hints.ai_flags = RAI_NUMERICHOST | RAI_FAMILY;
	if (rdma_getaddrinfo("::1", "7471", &hints, &res) == 0) {
		CHECK_EQ(res->ai_family, AF_INET6);
		CHECK_EQ(res->ai_dst_len, sizeof(struct sockaddr_in6));
		rdma_freeaddrinfo(res);
	}

	/* No node and no service: the hints' addresses. */
	{
		struct sockaddr_in d = ct_addr4("127.0.0.1", 99);

		memset(&hints, 0, sizeof(hints));
		hints.ai_dst_addr = (struct sockaddr *)&d;
		hints.ai_dst_len = sizeof(d);
		hints.ai_port_space = RDMA_PS_TCP;
		REQUIRE(rdma_getaddrinfo(NULL, NULL, &hints, &res) == 0);
		CHECK_EQ(res->ai_dst_len, sizeof(d));
		CHECK(!memcmp(res->ai_dst_addr, &d, sizeof(d)));
		rdma_freeaddrinfo(res);
	}
}

static void options_a(int unused)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);
	struct rdma_cm_id *id, *ud;
	uint8_t tos = 0x20, to = 14;
	int one = 1;
	uint16_t s16 = 1;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_create_id(ch, &ud, NULL, RDMA_PS_UDP) == 0);
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			      sizeof(tos)) == 0);
	CHECK_ERRNO(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
				    &s16, sizeof(s16)),
		    EINVAL);
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
			      &one, sizeof(one)) == 0);
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one,
			      sizeof(one)) == 0);
	CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			      &to, sizeof(to)) == 0);
	CHECK_ERRNO(rdma_set_option(ud, RDMA_OPTION_ID,
				    RDMA_OPTION_ID_ACK_TIMEOUT, &to,
				    sizeof(to)),
		    EINVAL);
	CHECK_ERRNO(rdma_set_option(id, RDMA_OPTION_ID, 77, &one, sizeof(one)),
		    ENOSYS);
	CHECK_ERRNO(rdma_set_option(id, 5, 1, &one, sizeof(one)), ENOSYS);
	/* IB path data is a route: only after address resolution. */
	{
		struct ibv_path_data pd;

		memset(&pd, 0, sizeof(pd));
		CHECK_ERRNO(rdma_set_option(id, RDMA_OPTION_IB,
					    RDMA_OPTION_IB_PATH, &pd,
					    sizeof(pd)),
			    EINVAL);
	}
	REQUIRE(rdma_bind_addr(id, (struct sockaddr *)&a) == 0);
	CHECK_ERRNO(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
				    &one, sizeof(one)),
		    EINVAL);
	ct_attach(ch, id, &a);
	/* The TOS is the traffic class of the path. */
	{
		struct ibv_qp_attr qa;
		int mask = 0;

		memset(&qa, 0, sizeof(qa));
		qa.qp_state = IBV_QPS_INIT;
		CHECK(rdma_init_qp_attr(id, &qa, &mask) == 0);
		CHECK_EQ(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS);
		CHECK_EQ(qa.qp_state, IBV_QPS_INIT);
		CHECK_EQ(qa.port_num, 1);
		CHECK_EQ(qa.pkey_index, 0);
		CHECK_EQ(qa.qp_access_flags, 0);
		qa.qp_state = IBV_QPS_RTR;
		CHECK_ERRNO(rdma_init_qp_attr(id, &qa, &mask), EINVAL);
		qa.qp_state = IBV_QPS_RTS;
		CHECK_ERRNO(rdma_init_qp_attr(id, &qa, &mask), EINVAL);
		qa.qp_state = IBV_QPS_SQD;
		CHECK_ERRNO(rdma_init_qp_attr(id, &qa, &mask), EINVAL);
	}
	/* UD ids: Q_Key in INIT. */
	{
		struct ibv_qp_attr qa;
		int mask = 0;

		memset(&qa, 0, sizeof(qa));
		qa.qp_state = IBV_QPS_INIT;
		CHECK_ERRNO(rdma_init_qp_attr(ud, &qa, &mask), EINVAL);
		REQUIRE(rdma_bind_addr(ud, (struct sockaddr *)&a) == 0);
		ct_attach(ch, ud, &a);
		CHECK(rdma_init_qp_attr(ud, &qa, &mask) == 0);
		CHECK(mask & IBV_QP_QKEY);
		CHECK_EQ(qa.qkey, RDMA_UDP_QKEY);
	}
	/* ECE: the local value needs a vendor, no QP. */
	{
		struct ibv_ece ece = { 0 };

		CHECK_ERRNO(rdma_set_local_ece(id, &ece), EINVAL);
		ece.vendor_id = 0x15b3;
		ece.options = 7;
		CHECK(rdma_set_local_ece(id, &ece) == 0);
		memset(&ece, 0xff, sizeof(ece));
		CHECK(rdma_get_remote_ece(id, &ece) == 0);
		CHECK_EQ(ece.vendor_id, 0);
		CHECK_EQ(ece.options, 0);
	}
	rdma_destroy_id(id);
	rdma_destroy_id(ud);
	rdma_destroy_event_channel(ch);
}

static void migrate_a(int unused)
{
	struct rdma_event_channel *c1 = rdma_create_event_channel();
	struct rdma_event_channel *c2 = rdma_create_event_channel();
	struct sockaddr_in d = ct_addr4("127.0.0.1", 7000);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	REQUIRE(c1 && c2);
	REQUIRE(rdma_create_id(c1, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 100) == 0);
	CHECK(readable(c1->fd));
	/* The queued event follows the id. */
	CHECK(rdma_migrate_id(id, c2) == 0);
	CHECK(id->channel == c2);
	CHECK(!readable(c1->fd));
	CHECK(readable(c2->fd));
	ev = CT_EXPECT(c2, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	/* To a private (synchronous) channel and back. */
	CHECK(rdma_migrate_id(id, NULL) == 0);
	CHECK(id->channel != c1 && id->channel != c2);
	CHECK(rdma_resolve_route(id, 100) == 0); /* sync: returns done */
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_ROUTE_RESOLVED);
	CHECK_ERRNO(rdma_migrate_id(id, NULL), EINVAL);
	CHECK(rdma_migrate_id(id, c1) == 0);
	CHECK(id->event == NULL);
	CHECK(!readable(c1->fd));

	/* Destroying an id drops its undelivered events. */
	REQUIRE(rdma_create_id(c2, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 100) == 0);
	CHECK(readable(c2->fd));
	CHECK(rdma_destroy_id(id) == 0);
	CHECK(!readable(c2->fd));
	rdma_destroy_event_channel(c1);
	rdma_destroy_event_channel(c2);
}

static void rsocket_fds_a(int unused)
{
	struct pollfd p;
	int fds[2], s;

	/* rsockets are descriptors of their own (test_cm_rsocket tests
	 * them); other numbers are not rsockets. */
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	CHECK(s >= 0);
	CHECK(rclose(s) == 0);
	CHECK_ERRNO(rclose(s), EBADF);
	CHECK_ERRNO(rclose(12345), EBADF);
	CHECK_ERRNO((int)rsend(12345, "x", 1, 0), EBADF);
	/* rpoll/rselect work on ordinary descriptors (event channels). */
	REQUIRE(pipe(fds) == 0);
	p.fd = fds[0];
	p.events = POLLIN;
	CHECK_EQ(rpoll(&p, 1, 0), 0);
	CHECK(write(fds[1], "x", 1) == 1);
	CHECK_EQ(rpoll(&p, 1, 100), 1);
	close(fds[0]);
	close(fds[1]);
}

/* clang-format off */
static const struct ct_case cases[] = {
	CT_CASE1(channel_fd, 20),
	CT_CASE1(channel_blocking, 20),
	CT_CASE1(channel_destroy_blocked, 30),
	CT_CASE1(event_str, 10),
	CT_CASE1(bind_ports, 20),
	CT_CASE1(resolve_errors, 20),
	CT_CASE1(rai, 20),
	CT_CASE1(options, 20),
	CT_CASE1(migrate, 20),
	CT_CASE1(rsocket_fds, 10),
	{ NULL }
};
/* clang-format on */

CT_MAIN(cases)
