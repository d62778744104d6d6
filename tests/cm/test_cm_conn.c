/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * librdmacm connections between two processes, control path only (ids
 * without QPs, as applications that manage their own QPs use them): connect
 * / accept / reject with private data compared byte for byte, negotiated
 * parameters, disconnect by either side, a killed peer, refused and
 * abandoned connections, TIMEWAIT_EXIT, the synchronous endpoint calls, UD
 * (SIDR) exchanges, several connections on one listener, and multicast
 * join/leave events.
 *
 * A is the parent, B the forked child; they exchange ports over the
 * control socket.
 */
#include "cm_test.h"

#include <netdb.h>

static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* The first n bytes are the pattern, the rest of len zero (the IB CM
 * reports its whole private data field). */
static int pdata_ok(const void *pd, size_t len, size_t n, uint8_t seed)
{
	uint8_t want[256];
	const uint8_t *p = pd;
	size_t i;

	if (!pd || len < n)
		return 0;
	pattern(want, n, seed);
	if (memcmp(p, want, n))
		return 0;
	for (i = n; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

/* ---- connect / accept with private data -------------------------------------- */

static void accept_pdata_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls, *child;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	uint8_t rep[196];
	uint16_t cport;

	REQUIRE(ch);
	ct_send_u32(fd, ct_listen(ch, &ls, RDMA_PS_TCP));
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	child = ev->id;
	CHECK(ev->listen_id == ls);
	CHECK(child != ls);
	CHECK(child->context == ls->context);
	CHECK(child->channel == ch);
	CHECK(child->verbs != NULL && child->pd != NULL);
	/* 92 bytes of REQ private data less rdma_cm's 36-byte header. */
	CHECK_EQ(ev->param.conn.private_data_len, 56);
	CHECK(pdata_ok(ev->param.conn.private_data,
		       ev->param.conn.private_data_len, 56, 11));
	/* From the receiver's side: swapped. */
	CHECK_EQ(ev->param.conn.responder_resources, 2);
	CHECK_EQ(ev->param.conn.initiator_depth, 3);
	CHECK_EQ(ev->param.conn.retry_count, 5);
	CHECK_EQ(ev->param.conn.rnr_retry_count, 6);
	CHECK_EQ(ev->param.conn.flow_control, 1);
	CHECK_EQ(ev->param.conn.srq, 0);
	CHECK_EQ(ev->param.conn.qp_num, 0x123456);
	cport = ct_recv_u32(fd);
	CHECK_EQ(ntohs(rdma_get_dst_port(child)), cport);
	CHECK_EQ(ntohs(rdma_get_src_port(child)), ntohs(rdma_get_src_port(ls)));
	CHECK_EQ(rdma_get_peer_addr(child)->sa_family, AF_INET);
	CHECK(child->route.path_rec != NULL);
	rdma_ack_cm_event(ev);

	/* init_qp_attr now knows the connection. */
	{
		struct ibv_qp_attr qa;
		int mask;

		memset(&qa, 0, sizeof(qa));
		qa.qp_state = IBV_QPS_RTR;
		CHECK(rdma_init_qp_attr(child, &qa, &mask) == 0);
		CHECK_EQ(qa.dest_qp_num, 0x123456);
		CHECK(qa.ah_attr.is_global);
		CHECK_EQ(qa.ah_attr.grh.dgid.raw[12], 127);
		CHECK(mask & IBV_QP_AV);
		CHECK(mask & IBV_QP_MAX_DEST_RD_ATOMIC);
		CHECK_EQ(qa.max_dest_rd_atomic, 2);
		/* The kernel CM's RNR NAK timer: encoding 0, 655.36 ms. */
		CHECK(mask & IBV_QP_MIN_RNR_TIMER);
		qa.min_rnr_timer = 99;
		qa.qp_state = IBV_QPS_RTR;
		CHECK(rdma_init_qp_attr(child, &qa, &mask) == 0);
		CHECK_EQ(qa.min_rnr_timer, 0);
		qa.qp_state = IBV_QPS_INIT;
		CHECK(rdma_init_qp_attr(child, &qa, &mask) == 0);
		CHECK_EQ(qa.qp_access_flags, IBV_ACCESS_REMOTE_WRITE |
						     IBV_ACCESS_REMOTE_READ |
						     IBV_ACCESS_REMOTE_ATOMIC);
	}

	memset(&cp, 0, sizeof(cp));
	pattern(rep, sizeof(rep), 77);
	cp.private_data = rep;
	cp.private_data_len = 197 - 1;
	cp.responder_resources = 2;
	cp.initiator_depth = 3;
	cp.rnr_retry_count = 4;
	cp.qp_num = 0x654321;
	/* Too much private data for a REP. */
	{
		uint8_t big[197] = { 0 };
		struct rdma_conn_param bp = cp;

		bp.private_data = big;
		bp.private_data_len = 197;
		CHECK_ERRNO(rdma_accept(child, &bp), EINVAL);
	}
	CHECK(rdma_accept(child, &cp) == 0);
	CHECK_ERRNO(rdma_accept(child, &cp), EINVAL);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	/* COMM_EST only matters before the RTU; no alternate paths. */
	CHECK_ERRNO(rdma_notify(child, IBV_EVENT_COMM_EST), EISCONN);
	CHECK_ERRNO(rdma_notify(child, IBV_EVENT_PATH_MIG), EINVAL);
	CHECK_ERRNO(rdma_notify(ls, IBV_EVENT_COMM_EST), EINVAL);

	/* B disconnects: both sides see DISCONNECTED, then TIMEWAIT_EXIT. */
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CHECK(rdma_disconnect(child) == 0); /* answering: no new event */
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	CT_EXPECT_NONE(ch, 300);
	ct_sync(fd);
	CHECK(rdma_destroy_id(child) == 0);
	CHECK(rdma_destroy_id(ls) == 0);
	rdma_destroy_event_channel(ch);
}

static void accept_pdata_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint8_t req[57];
	uint16_t port = ct_recv_u32(fd);

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(ch, id, port) == 0);
	ct_send_u32(fd, ntohs(rdma_get_src_port(id)));

	memset(&cp, 0, sizeof(cp));
	pattern(req, sizeof(req), 11);
	cp.private_data = req;
	cp.private_data_len = 57; /* one too many for PS_TCP */
	cp.responder_resources = 3;
	cp.initiator_depth = 2;
	cp.retry_count = 5;
	cp.rnr_retry_count = 6;
	cp.flow_control = 1;
	cp.qp_num = 0x123456;
	CHECK_ERRNO(rdma_connect(id, &cp), EINVAL);
	/* No QP and no parameters: nothing to connect. */
	CHECK_ERRNO(rdma_connect(id, NULL), EINVAL);
	cp.private_data_len = 56;
	CHECK(rdma_connect(id, &cp) == 0);
	CHECK_ERRNO(rdma_connect(id, &cp), EINVAL);

	/* No QP on the id: the response is the application's to finish. */
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	REQUIRE(ev);
	CHECK_EQ(ev->param.conn.private_data_len, 196);
	CHECK(pdata_ok(ev->param.conn.private_data, 196, 196, 77));
	CHECK_EQ(ev->param.conn.qp_num, 0x654321);
	CHECK_EQ(ev->param.conn.responder_resources, 3);
	CHECK_EQ(ev->param.conn.initiator_depth, 2);
	CHECK_EQ(ev->param.conn.rnr_retry_count, 4);
	rdma_ack_cm_event(ev);
	{
		struct ibv_qp_attr qa;
		int mask;

		memset(&qa, 0, sizeof(qa));
		qa.qp_state = IBV_QPS_RTS;
		CHECK(rdma_init_qp_attr(id, &qa, &mask) == 0);
		CHECK_EQ(qa.max_rd_atomic, 2);
		CHECK_EQ(qa.retry_cnt, 5);
		CHECK_EQ(qa.rnr_retry, 4); /* the REP's */
		CHECK(mask & IBV_QP_SQ_PSN);
		qa.qp_state = IBV_QPS_RTR;
		CHECK(rdma_init_qp_attr(id, &qa, &mask) == 0);
		CHECK_EQ(qa.dest_qp_num, 0x654321);
	}
	CHECK(rdma_establish(id) == 0);
	CHECK_ERRNO(rdma_establish(id), EINVAL);
	/* rdma_establish reports nothing more on the active side. */
	CT_EXPECT_NONE(ch, 200);

	CHECK(rdma_disconnect(id) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CHECK(rdma_disconnect(id) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	ct_sync(fd);
	CHECK(rdma_destroy_id(id) == 0);
	rdma_destroy_event_channel(ch);
}

/* ---- reject --------------------------------------------------------------------- */

static void reject_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls;
	struct rdma_cm_event *ev;
	uint8_t rej[149];

	REQUIRE(ch);
	ct_send_u32(fd, ct_listen(ch, &ls, RDMA_PS_TCP));
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	pattern(rej, sizeof(rej), 33);
	CHECK_ERRNO(rdma_reject(ev->id, rej, 149), EINVAL);
	CHECK(rdma_reject(ev->id, rej, 148) == 0);
	CHECK_ERRNO(rdma_reject(ev->id, rej, 10), EINVAL);
	CHECK_ERRNO(rdma_accept(ev->id, NULL), EINVAL);
	CT_EXPECT_NONE(ch, 200);
	CHECK(rdma_destroy_id(ev->id) == 0);
	rdma_ack_cm_event(ev);
	ct_sync(fd);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
}

static void reject_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .qp_num = 1 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(ch, id, ct_recv_u32(fd)) == 0);
	CHECK(rdma_connect(id, &cp) == 0);
	/* A consumer reject: IB CM reason 28, 148 bytes of private data. */
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_REJECTED, 28);
	if (ev) {
		CHECK_EQ(ev->param.conn.private_data_len, 148);
		CHECK(pdata_ok(ev->param.conn.private_data, 148, 148, 33));
		rdma_ack_cm_event(ev);
	}
	CT_EXPECT_NONE(ch, 200);
	ct_sync(fd);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- nobody listening --------------------------------------------------------------- */

static uint16_t free_port(void)
{
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(s, (struct sockaddr *)&a, &len))
		ct_die("free port: %s", strerror(errno));
	close(s);
	return ntohs(a.sin_port);
}

static void refused_a(int unused)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .qp_num = 1 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint64_t t0;

	REQUIRE(ch);
	/* RC: the peer's CM would reject the unknown service ID (8). */
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(ch, id, free_port()) == 0);
	t0 = ct_now_ms();
	CHECK(rdma_connect(id, &cp) == 0);
	ev = CT_EXPECT_T(ch, RDMA_CM_EVENT_REJECTED, 8, 1000);
	CHECK(ct_now_ms() - t0 < 1000);
	if (ev)
		rdma_ack_cm_event(ev);
	rdma_destroy_id(id);

	/* UD: SIDR_REP status "unsupported" (1), as UNREACHABLE. */
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0);
	REQUIRE(ct_resolve(ch, id, free_port()) == 0);
	CHECK(rdma_connect(id, &cp) == 0);
	ev = CT_EXPECT_T(ch, RDMA_CM_EVENT_UNREACHABLE, 1, 1000);
	if (ev)
		rdma_ack_cm_event(ev);
	rdma_destroy_id(id);

	/* Synchronous mode: the call fails with ECONNREFUSED. */
	{
		struct rdma_addrinfo hints, *res;
		char port[16];

		memset(&hints, 0, sizeof(hints));
		hints.ai_port_space = RDMA_PS_TCP;
		snprintf(port, sizeof(port), "%u", free_port());
		REQUIRE(rdma_getaddrinfo("127.0.0.1", port, &hints, &res) == 0);
		REQUIRE(rdma_create_ep(&id, res, NULL, NULL) == 0);
		CHECK_ERRNO(rdma_connect(id, &cp), ECONNREFUSED);
		rdma_destroy_ep(id);
		rdma_freeaddrinfo(res);
	}
	rdma_destroy_event_channel(ch);
}

/* ---- a listener that comes late ------------------------------------------------------------ */

/* The server sends its port before rdma_listen (qperf 0.4.11): B's connect
 * is made while A's id is bound but not listening, so the kernel refuses
 * it; A listens only once B's rdma_connect has returned.  The connection
 * must still be made (the refused connect is tried again), as a HCA's
 * slower address resolution lets it be. */
static void listen_late_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);
	struct rdma_conn_param cp = { .qp_num = 0x42 };
	struct rdma_cm_id *ls, *child;
	struct rdma_cm_event *ev;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &ls, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_bind_addr(ls, (struct sockaddr *)&a) == 0);
	ct_send_u32(fd, ntohs(rdma_get_src_port(ls)));
	ct_sync(fd); /* B's rdma_connect returned */
	REQUIRE(rdma_listen(ls, 8) == 0);
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	child = ev->id;
	rdma_ack_cm_event(ev);
	CHECK(rdma_accept(child, &cp) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	ct_sync(fd);
	rdma_destroy_id(child);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
}

static void listen_late_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .qp_num = 0x43 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(ch, id, ct_recv_u32(fd)) == 0);
	CHECK(rdma_connect(id, &cp) == 0);
	ct_sync(fd);
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	if (ev) {
		rdma_ack_cm_event(ev);
		CHECK(rdma_establish(id) == 0);
	}
	ct_sync(fd);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- disconnect by the passive side ------------------------------------------------------ */

static struct rdma_cm_id *accept_one(struct rdma_event_channel *ch,
				     struct rdma_cm_id **ls, int fd)
{
	struct rdma_conn_param cp = { .qp_num = 0x42 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *child;

	ct_send_u32(fd, ct_listen(ch, ls, RDMA_PS_TCP));
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	child = ev->id;
	rdma_ack_cm_event(ev);
	REQUIRE(rdma_accept(child, &cp) == 0);
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	REQUIRE(ev);
	rdma_ack_cm_event(ev);
	return child;
}

static struct rdma_cm_id *connect_one(struct rdma_event_channel *ch, int fd)
{
	struct rdma_conn_param cp = { .qp_num = 0x43 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(ch, id, ct_recv_u32(fd)) == 0);
	REQUIRE(rdma_connect(id, &cp) == 0);
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	REQUIRE(ev);
	rdma_ack_cm_event(ev);
	REQUIRE(rdma_establish(id) == 0);
	return id;
}

static void server_disconnects_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls, *child;

	REQUIRE(ch);
	child = accept_one(ch, &ls, fd);
	ct_sync(fd); /* B is established too */
	CHECK(rdma_disconnect(child) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CHECK(rdma_disconnect(child) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	ct_sync(fd);
	rdma_destroy_id(child);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
}

static void server_disconnects_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	REQUIRE(ch);
	id = connect_one(ch, fd);
	ct_sync(fd);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	CT_EXPECT_NONE(ch, 200);
	ct_sync(fd);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* Both sides disconnect at the same moment: one DISCONNECTED each. */
static void both_disconnect_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls, *child;

	REQUIRE(ch);
	child = accept_one(ch, &ls, fd);
	ct_sync(fd);
	CHECK(rdma_disconnect(child) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	CT_EXPECT_NONE(ch, 200);
	ct_sync(fd);
	rdma_destroy_id(child);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
}

static void both_disconnect_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	REQUIRE(ch);
	id = connect_one(ch, fd);
	ct_sync(fd);
	CHECK(rdma_disconnect(id) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	CT_EXPECT_NONE(ch, 200);
	ct_sync(fd);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- a peer dies ------------------------------------------------------------------------ */

/* The helper is a grandchild the test may kill: it connects to (or
 * accepts from) this process and then waits to be killed. */
static pid_t helper(void (*fn)(int), int *fd)
{
	int sv[2];
	pid_t pid;

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		ct_role = "helper";
		alarm(30);
		fn(sv[1]);
		pause();
		exit(0);
	}
	close(sv[1]);
	*fd = sv[0];
	return pid;
}

static void helper_client(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	connect_one(ch, fd);
	ct_send_u32(fd, 1);
}

static void helper_server(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls;

	accept_one(ch, &ls, fd);
	ct_send_u32(fd, 1);
}

/* The client dies: the server's child sees DISCONNECTED. */
static void client_death_a(int unused)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *ls, *id;
	uint64_t t0;
	pid_t pid;
	int fd, st;

	/* Fork before this process touches librdmacm. */
	pid = helper(helper_client, &fd);
	ch = rdma_create_event_channel();
	REQUIRE(ch);
	id = accept_one(ch, &ls, fd);
	CHECK_EQ(ct_recv_u32(fd), 1);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	t0 = ct_now_ms();
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CHECK(ct_now_ms() - t0 < 1000);
	CHECK(rdma_disconnect(id) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
	rdma_destroy_id(id);
	rdma_destroy_id(ls);
	close(fd);
	rdma_destroy_event_channel(ch);
}

/* The server dies: the client sees DISCONNECTED. */
static void server_death_a(int unused)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	uint64_t t0;
	pid_t pid;
	int fd, st;

	pid = helper(helper_server, &fd);
	ch = rdma_create_event_channel();
	REQUIRE(ch);
	id = connect_one(ch, fd);
	CHECK_EQ(ct_recv_u32(fd), 1);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	t0 = ct_now_ms();
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	CHECK(ct_now_ms() - t0 < 1000);
	rdma_destroy_id(id);
	close(fd);
	rdma_destroy_event_channel(ch);
}

/* A server that dies before answering: the client is not left hanging. */
static void helper_server_mute(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls;
	struct rdma_cm_event *ev;

	ct_send_u32(fd, ct_listen(ch, &ls, RDMA_PS_TCP));
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	(void)ev;
	ct_send_u32(fd, 1);
}

static void death_while_connecting_a(int unused)
{
	struct rdma_conn_param cp = { .qp_num = 7 };
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	pid_t pid;
	int fd, st;

	pid = helper(helper_server_mute, &fd);
	ch = rdma_create_event_channel();
	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(ch, id, ct_recv_u32(fd)) == 0);
	REQUIRE(rdma_connect(id, &cp) == 0);
	CHECK_EQ(ct_recv_u32(fd), 1);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	ev = ct_get_event(ch, 2000);
	CHECK(ev && (ev->event == RDMA_CM_EVENT_UNREACHABLE ||
		     ev->event == RDMA_CM_EVENT_REJECTED));
	if (ev)
		rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	close(fd);
	rdma_destroy_event_channel(ch);
}

/* ---- the active side gives up --------------------------------------------------------- */

static void abandon_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls;
	struct rdma_cm_event *ev;

	REQUIRE(ch);
	ct_send_u32(fd, ct_listen(ch, &ls, RDMA_PS_TCP));
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	ct_sync(fd); /* B destroys its connecting id now */
	/* The active side's CM gives up with a REJ (timeout, 4). */
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_REJECTED, 4);
	CHECK_ERRNO(rdma_accept(ev->id, NULL), EINVAL);
	rdma_destroy_id(ev->id);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
}

static void abandon_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .qp_num = 9 };
	struct rdma_cm_id *id;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(ch, id, ct_recv_u32(fd)) == 0);
	REQUIRE(rdma_connect(id, &cp) == 0);
	ct_sync(fd);
	CHECK(rdma_destroy_id(id) == 0);
	rdma_destroy_event_channel(ch);
}

/* The listener goes away with a request not yet delivered. */
static void listener_gone_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls;

	REQUIRE(ch);
	ct_send_u32(fd, ct_listen(ch, &ls, RDMA_PS_TCP));
	/* Wait until the request is queued, then destroy without reading. */
	{
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };

		CHECK_EQ(poll(&p, 1, 5000), 1);
	}
	CHECK(rdma_destroy_id(ls) == 0);
	ct_sync(fd);
	rdma_destroy_event_channel(ch);
}

static void listener_gone_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .qp_num = 9 };
	struct rdma_cm_id *id;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(ch, id, ct_recv_u32(fd)) == 0);
	REQUIRE(rdma_connect(id, &cp) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_REJECTED, 28);
	ct_sync(fd);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- the backlog bounds requests not yet taken --------------------------------------- */

static void backlog_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *ls;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &ls, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_bind_addr(ls, (struct sockaddr *)&a) == 0);
	REQUIRE(rdma_listen(ls, 1) == 0);
	ct_send_u32(fd, ntohs(rdma_get_src_port(ls)));
	ct_sync(fd); /* B's second request was refused */
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	CHECK(rdma_reject(ev->id, NULL, 0) == 0);
	rdma_destroy_id(ev->id);
	rdma_ack_cm_event(ev);
	CT_EXPECT_NONE(ch, 200);
	ct_sync(fd);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
}

static void backlog_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .qp_num = 5 };
	struct rdma_cm_id *id1, *id2;
	uint16_t port = ct_recv_u32(fd);

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id1, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_create_id(ch, &id2, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(ct_resolve(ch, id1, port) == 0);
	REQUIRE(ct_resolve(ch, id2, port) == 0);
	REQUIRE(rdma_connect(id1, &cp) == 0);
	usleep(200000); /* the first is queued at the listener */
	REQUIRE(rdma_connect(id2, &cp) == 0);
	/* IB CM reason 3: no resources. */
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_REJECTED, 3);
	ct_sync(fd);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_REJECTED, 28);
	ct_sync(fd);
	rdma_destroy_id(id1);
	rdma_destroy_id(id2);
	rdma_destroy_event_channel(ch);
}

/* ---- several connections on one listener ---------------------------------------------- */

#define NCONN 6

static void many_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls, *child[NCONN];
	int i, j, req = 0, est = 0, disc = 0;

	REQUIRE(ch);
	ct_send_u32(fd, ct_listen(ch, &ls, RDMA_PS_TCP));
	/* Requests, establishments and disconnects interleave. */
	while (req < NCONN || est < NCONN || disc < NCONN) {
		struct rdma_cm_event *ev = ct_get_event(ch, 5000);

		REQUIRE(ev);
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_conn_param cp = { .qp_num = 0x100 + req };

			REQUIRE(req < NCONN);
			child[req] = ev->id;
			for (j = 0; j < req; j++)
				CHECK(child[j] != child[req]);
			/* The client numbered its requests. */
			CHECK(((uint8_t *)ev->param.conn.private_data)[0] <
			      NCONN);
			cp.private_data = ev->param.conn.private_data;
			cp.private_data_len = 1;
			CHECK(rdma_accept(child[req], &cp) == 0);
			req++;
		} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			est++;
		} else if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
			disc++;
		} else if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			CHECK(!"unexpected event");
		}
		rdma_ack_cm_event(ev);
	}
	CHECK_EQ(est, NCONN);
	CHECK_EQ(disc, NCONN);
	ct_sync(fd);
	for (i = 0; i < NCONN; i++)
		rdma_destroy_id(child[i]);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
}

static void many_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id[NCONN];
	uint16_t port = ct_recv_u32(fd);
	int i, n;

	REQUIRE(ch);
	/* Resolve all first: responses would interleave with resolutions. */
	for (i = 0; i < NCONN; i++) {
		REQUIRE(rdma_create_id(ch, &id[i], (void *)(uintptr_t)i,
				       RDMA_PS_TCP) == 0);
		REQUIRE(ct_resolve(ch, id[i], port) == 0);
	}
	for (i = 0; i < NCONN; i++) {
		struct rdma_conn_param cp = { .qp_num = 0x200 + i };
		uint8_t tag = (uint8_t)i;

		cp.private_data = &tag;
		cp.private_data_len = 1;
		REQUIRE(rdma_connect(id[i], &cp) == 0);
	}
	for (n = 0; n < NCONN; n++) {
		struct rdma_cm_event *ev =
			CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);

		REQUIRE(ev);
		/* Each response echoes its own request's tag. */
		CHECK_EQ(((uint8_t *)ev->param.conn.private_data)[0],
			 (uintptr_t)ev->id->context);
		CHECK(rdma_establish(ev->id) == 0);
		rdma_ack_cm_event(ev);
	}
	for (i = 0; i < NCONN; i++)
		CHECK(rdma_disconnect(id[i]) == 0);
	for (n = 0; n < 2 * NCONN;) {
		struct rdma_cm_event *ev = ct_get_event(ch, 5000);

		REQUIRE(ev);
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			n++;
		else
			CHECK(!"unexpected event");
		rdma_ack_cm_event(ev);
	}
	ct_sync(fd);
	for (i = 0; i < NCONN; i++)
		rdma_destroy_id(id[i]);
	rdma_destroy_event_channel(ch);
}

/* ---- synchronous endpoints -------------------------------------------------------------- */

static void sync_ep_a(int fd)
{
	struct rdma_addrinfo hints, *res;
	struct rdma_cm_id *ls, *id;
	struct rdma_conn_param cp;
	uint8_t rep[100];

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	REQUIRE(rdma_getaddrinfo("127.0.0.1", "0", &hints, &res) == 0);
	REQUIRE(rdma_create_ep(&ls, res, NULL, NULL) == 0);
	rdma_freeaddrinfo(res);
	REQUIRE(rdma_listen(ls, 4) == 0);
	ct_send_u32(fd, ntohs(rdma_get_src_port(ls)));

	REQUIRE(rdma_get_request(ls, &id) == 0);
	REQUIRE(id->event);
	CHECK_EQ(id->event->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(pdata_ok(id->event->param.conn.private_data, 56, 20, 5));
	CHECK(id->channel != ls->channel); /* its own private channel */
	memset(&cp, 0, sizeof(cp));
	pattern(rep, sizeof(rep), 9);
	cp.private_data = rep;
	cp.private_data_len = sizeof(rep);
	cp.qp_num = 0xabc;
	/* Returns once ESTABLISHED. */
	CHECK(rdma_accept(id, &cp) == 0);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED);
	ct_sync(fd);
	ct_sync(fd); /* B disconnected */
	/* The DISCONNECTED is already there: consumed by rdma_disconnect. */
	CHECK(rdma_disconnect(id) == 0);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_ep(id);
	rdma_destroy_ep(ls);
}

static void sync_ep_b(int fd)
{
	struct rdma_addrinfo hints, *res;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id;
	uint8_t req[20];
	char port[16];

	snprintf(port, sizeof(port), "%u", ct_recv_u32(fd));
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	REQUIRE(rdma_getaddrinfo("127.0.0.1", port, &hints, &res) == 0);
	REQUIRE(rdma_create_ep(&id, res, NULL, NULL) == 0);
	rdma_freeaddrinfo(res);
	CHECK(id->verbs != NULL);
	memset(&cp, 0, sizeof(cp));
	pattern(req, sizeof(req), 5);
	cp.private_data = req;
	cp.private_data_len = sizeof(req);
	cp.qp_num = 0xdef;
	/* No QP: returns with the CONNECT_RESPONSE for us to finish. */
	CHECK(rdma_connect(id, &cp) == 0);
	REQUIRE(id->event);
	CHECK_EQ(id->event->event, RDMA_CM_EVENT_CONNECT_RESPONSE);
	CHECK(pdata_ok(id->event->param.conn.private_data, 196, 100, 9));
	CHECK_EQ(id->event->param.conn.qp_num, 0xabc);
	CHECK(rdma_establish(id) == 0);
	ct_sync(fd);
	/* Returns once DISCONNECTED. */
	CHECK(rdma_disconnect(id) == 0);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_DISCONNECTED);
	ct_sync(fd);
	rdma_destroy_ep(id);
}

/* ---- UD: SIDR ------------------------------------------------------------------------ */

static void ud_sidr_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *ls;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	uint8_t rep[136];

	REQUIRE(ch);
	ct_send_u32(fd, ct_listen(ch, &ls, RDMA_PS_UDP));
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	CHECK_EQ(ev->id->qp_type, IBV_QPT_UD);
	/* SIDR_REQ: 216 bytes less the 36-byte rdma_cm header. */
	CHECK_EQ(ev->param.ud.private_data_len, 180);
	CHECK(pdata_ok(ev->param.ud.private_data, 180, 180, 3));
	memset(&cp, 0, sizeof(cp));
	pattern(rep, sizeof(rep), 4);
	cp.private_data = rep;
	cp.private_data_len = 136;
	cp.qp_num = 0x777;
	CHECK(rdma_accept(ev->id, &cp) == 0);
	rdma_ack_cm_event(ev);
	/* No ESTABLISHED on the passive side of a SIDR exchange. */
	CT_EXPECT_NONE(ch, 300);
	ct_sync(fd);

	/* The second request is rejected. */
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	REQUIRE(ev);
	CHECK(rdma_reject(ev->id, rep, 20) == 0);
	rdma_destroy_id(ev->id);
	rdma_ack_cm_event(ev);
	ct_sync(fd);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
}

static void ud_sidr_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint8_t req[181];
	uint16_t port = ct_recv_u32(fd);

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0);
	REQUIRE(ct_resolve(ch, id, port) == 0);
	memset(&cp, 0, sizeof(cp));
	pattern(req, sizeof(req), 3);
	cp.private_data = req;
	cp.private_data_len = 181;
	cp.qp_num = 0x888;
	CHECK_ERRNO(rdma_connect(id, &cp), EINVAL);
	cp.private_data_len = 180;
	CHECK(rdma_connect(id, &cp) == 0);
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev) {
		CHECK_EQ(ev->param.ud.qp_num, 0x777);
		CHECK_EQ(ev->param.ud.qkey, RDMA_UDP_QKEY);
		CHECK(ev->param.ud.ah_attr.is_global);
		CHECK_EQ(ev->param.ud.ah_attr.port_num, 1);
		CHECK_EQ(ev->param.ud.ah_attr.grh.dgid.raw[10], 0xff);
		CHECK_EQ(ev->param.ud.ah_attr.grh.dgid.raw[12], 127);
		CHECK_EQ(ev->param.ud.private_data_len, 136);
		CHECK(pdata_ok(ev->param.ud.private_data, 136, 136, 4));
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(id);
	ct_sync(fd);

	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0);
	REQUIRE(ct_resolve(ch, id, port) == 0);
	cp.private_data_len = 0;
	CHECK(rdma_connect(id, &cp) == 0);
	/* SIDR_REP status "rejected" (2). */
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_UNREACHABLE, 2);
	if (ev) {
		CHECK(pdata_ok(ev->param.ud.private_data, 136, 20, 4));
		rdma_ack_cm_event(ev);
	}
	ct_sync(fd);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- multicast join / leave ------------------------------------------------------------- */

static void mcast_events_a(int unused)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a = ct_addr4("127.0.0.1", 0);
	struct sockaddr_in g1 = ct_addr4("239.1.2.3", 0);
	struct sockaddr_in g2 = ct_addr4("239.1.2.4", 0);
	struct rdma_cm_join_mc_attr_ex ex;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id, *rc;

	REQUIRE(ch);
	REQUIRE(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0);
	/* Not on a device yet. */
	CHECK_ERRNO(rdma_join_multicast(id, (struct sockaddr *)&g1, NULL),
		    EINVAL);
	REQUIRE(rdma_bind_addr(id, (struct sockaddr *)&a) == 0);
	ct_attach(ch, id, &g1);
	CHECK(rdma_join_multicast(id, (struct sockaddr *)&g1, (void *)0x51) ==
	      0);
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (ev) {
		CHECK(ev->id == id);
		CHECK(ev->param.ud.private_data == (void *)0x51);
		CHECK_EQ(ev->param.ud.qp_num, 0xffffff);
		CHECK_EQ(ev->param.ud.qkey, RDMA_UDP_QKEY);
		CHECK(ev->param.ud.ah_attr.is_global);
		/* RoCE v2: the group's MGID is its address, v4-mapped. */
		CHECK_EQ(ev->param.ud.ah_attr.grh.dgid.raw[10], 0xff);
		CHECK_EQ(ev->param.ud.ah_attr.grh.dgid.raw[12], 239);
		CHECK_EQ(ev->param.ud.ah_attr.grh.dgid.raw[15], 3);
		rdma_ack_cm_event(ev);
	}
	memset(&ex, 0, sizeof(ex));
	ex.comp_mask =
		RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ex.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	ex.addr = (struct sockaddr *)&g2;
	CHECK(rdma_join_multicast_ex(id, &ex, (void *)0x52) == 0);
	ev = CT_EXPECT(ch, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (ev) {
		CHECK(ev->param.ud.private_data == (void *)0x52);
		CHECK_EQ(ev->param.ud.ah_attr.grh.dgid.raw[15], 4);
		rdma_ack_cm_event(ev);
	}
	ex.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
	CHECK_ERRNO(rdma_join_multicast_ex(id, &ex, NULL), EINVAL);
	ex.comp_mask = RDMA_CM_JOIN_MC_ATTR_RESERVED;
	CHECK_ERRNO(rdma_join_multicast_ex(id, &ex, NULL), ENOTSUP);

	CHECK(rdma_leave_multicast(id, (struct sockaddr *)&g1) == 0);
	CHECK_ERRNO(rdma_leave_multicast(id, (struct sockaddr *)&g1),
		    EADDRNOTAVAIL);
	/* A join whose event is still queued: leave drops it. */
	CHECK(rdma_join_multicast(id, (struct sockaddr *)&g1, NULL) == 0);
	CHECK(rdma_leave_multicast(id, (struct sockaddr *)&g1) == 0);
	CT_EXPECT_NONE(ch, 100);
	/* Destroying the id leaves the remaining group. */
	CHECK(rdma_destroy_id(id) == 0);

	/* RC ids do not join groups. */
	REQUIRE(rdma_create_id(ch, &rc, NULL, RDMA_PS_TCP) == 0);
	REQUIRE(rdma_bind_addr(rc, (struct sockaddr *)&a) == 0);
	CHECK_ERRNO(rdma_join_multicast(rc, (struct sockaddr *)&g1, NULL),
		    EINVAL);
	rdma_destroy_id(rc);

	/* Synchronous ids: the call returns with the join done. */
	REQUIRE(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP) == 0);
	REQUIRE(rdma_bind_addr(id, (struct sockaddr *)&a) == 0);
	ct_attach(NULL, id, &g1);
	CHECK(rdma_join_multicast(id, (struct sockaddr *)&g1, NULL) == 0);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_MULTICAST_JOIN);
	/* The join event the id holds is released by the leave. */
	CHECK(rdma_leave_multicast(id, (struct sockaddr *)&g1) == 0);
	CHECK(id->event == NULL);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* ---- migration of a connected id --------------------------------------------------------- */

static void migrate_conn_a(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_event_channel *ch2 = rdma_create_event_channel();
	struct rdma_cm_id *ls, *child;

	REQUIRE(ch && ch2);
	child = accept_one(ch, &ls, fd);
	CHECK(rdma_migrate_id(child, ch2) == 0);
	ct_sync(fd);
	/* The disconnect now arrives on the new channel. */
	CT_EXPECT_ACK(ch2, RDMA_CM_EVENT_DISCONNECTED, 0);
	CT_EXPECT_NONE(ch, 100);
	rdma_destroy_id(child);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch2);
}

static void migrate_conn_b(int fd)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	REQUIRE(ch);
	id = connect_one(ch, fd);
	ct_sync(fd);
	CHECK(rdma_disconnect(id) == 0);
	CT_EXPECT_ACK(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

/* clang-format off */
static const struct ct_case cases[] = {
	CT_CASE(accept_pdata, 30),
	CT_CASE(reject, 30),
	CT_CASE1(refused, 30),
	CT_CASE(listen_late, 30),
	CT_CASE(server_disconnects, 30),
	CT_CASE(both_disconnect, 30),
	CT_CASE1(client_death, 30),
	CT_CASE1(server_death, 30),
	CT_CASE1(death_while_connecting, 30),
	CT_CASE(abandon, 30),
	CT_CASE(listener_gone, 30),
	CT_CASE(backlog, 30),
	CT_CASE(many, 40),
	CT_CASE(sync_ep, 30),
	CT_CASE(ud_sidr, 30),
	CT_CASE1(mcast_events, 30),
	CT_CASE(migrate_conn, 30),
	{ NULL }
};
/* clang-format on */

CT_MAIN(cases)
