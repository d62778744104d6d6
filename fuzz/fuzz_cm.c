/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libFuzzer harness: the connection manager's wire messages (cm/wire.h)
 * as a peer sends them to a listening rdma_cm id, through the real entry:
 * a TCP connection to the listener's port, read by librdmacm's own
 * thread (cm/conn_tcp.c and cm/conn.c parse and dispatch) (docs/security.md, "Fuzzing").
 *
 * Input: a control byte, then up to 6 messages of sizeof(struct
 * sv_cm_wire) bytes (the last one padded with zeros).  Unless ctl & 1 the
 * harness makes each header well-formed (version, header length), so the
 * state machine behind the check is reached; the type, lengths, private
 * data and every other field are the input's; ctl & 4 sends them to the
 * datagram (UDP port space, SIDR) listener.  The first message is sent
 * alone; if it makes a connection request, the harness accepts it (ctl &
 * 2, as an id without a QP: qp_num given) or rejects it, then sends the
 * rest (RTU, DREQ, REJ... in whatever state that left), closes its side
 * and drains the events until the CM is done with the connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "cm/wire.h"

#define MAXMSG 6
#define WAIT_MS 20

static struct rdma_event_channel *ch;
/* A connected (TCP port space: REQ/REP/RTU/DREQ...) and a datagram
 * (UDP port space: SIDR) listener; ctl & 4 picks the second. */
static struct rdma_cm_id *listener[2];
static struct sockaddr_in where[2];

static void die(const char *what)
{
	perror(what);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	setenv("SOFTVERBS_LOG", "0", 0);
	static const enum rdma_port_space ps[2] = { RDMA_PS_TCP, RDMA_PS_UDP };
	int i;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	for (i = 0; i < 2; i++) {
		if (rdma_create_id(ch, &listener[i], NULL, ps[i]) ||
		    rdma_bind_addr(listener[i], (struct sockaddr *)&a) ||
		    rdma_listen(listener[i], 16))
			die("listener");
		where[i] = a;
		where[i].sin_port = rdma_get_src_port(listener[i]);
	}
	return 0;
}

/* Handle what the CM has reported; the id of a request accepted or
 * rejected, if one came. */
static void events(bool accept, struct rdma_cm_id **req)
{
	struct pollfd p = { ch->fd, POLLIN, 0 };
	struct rdma_cm_event *ev;

	while (poll(&p, 1, 0) == 1) {
		struct rdma_cm_id *id;
		enum rdma_cm_event_type type;

		if (rdma_get_cm_event(ch, &ev))
			return;
		id = ev->id;
		type = ev->event;
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST && req && !*req) {
			struct rdma_conn_param cp = { .responder_resources = 1,
						      .initiator_depth = 1,
						      .qp_num = 0x1234 };

			*req = id;
			if (!accept || rdma_accept(id, &cp))
				rdma_reject(id, NULL, 0);
		} else if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
		} else if (type == RDMA_CM_EVENT_DISCONNECTED) {
			rdma_disconnect(id);
		}
	}
}

/* Wait up to ms for an event or for the connection to say something
 * (a reply, or its end); false when the connection has ended. */
static bool wait_any(int fd, int ms)
{
	struct pollfd p[2] = { { ch->fd, POLLIN, 0 }, { fd, POLLIN, 0 } };
	char junk[512];

	if (poll(p, 2, ms) <= 0)
		return true;
	if (p[1].revents && read(fd, junk, sizeof(junk)) <= 0)
		return false;
	return true;
}

/* connect(), through the interruptions of libFuzzer's own SIGALRM (its
 * slow-unit check): an interrupted connect goes on in the background;
 * wait for it and take its result. 0 or -1 with errno. */
static int connect_to(int fd, const struct sockaddr_in *to)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int err = 0;

	if (!connect(fd, (const struct sockaddr *)to, sizeof(*to)))
		return 0;
	if (errno != EINTR && errno != EINPROGRESS)
		return -1;
	while (poll(&p, 1, 5000) < 0)
		if (errno != EINTR)
			return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		errno = err ? err : errno;
		return -1;
	}
	return 0;
}

static void send_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue; /* libFuzzer's SIGALRM */
		if (k <= 0)
			return; /* the CM closed: it refused */
		p = (const char *)p + k;
		n -= (size_t)k;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sv_cm_wire msg[MAXMSG];
	struct rdma_cm_id *req = NULL;
	size_t nmsg, i;
	int fd, one = 1;
	bool alive;
	uint8_t ctl;

	if (size < 1)
		return 0;
	ctl = data[0];
	data++;
	size--;
	nmsg = (size + sizeof(msg[0]) - 1) / sizeof(msg[0]);
	if (!nmsg)
		return 0;
	if (nmsg > MAXMSG)
		nmsg = MAXMSG;
	memset(msg, 0, sizeof(msg));
	memcpy(msg, data, size < sizeof(msg) ? size : sizeof(msg));
	for (i = 0; i < nmsg && !(ctl & 1); i++) {
		msg[i].version = SV_CM_WIRE_VERSION;
		msg[i].hdr_len = htons(sizeof(msg[i]));
	}

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect_to(fd, &where[(ctl >> 2) & 1]))
		die("connect");
	send_all(fd, &msg[0], sizeof(msg[0]));
	/* The request (an event) or its refusal (a reply or the end). */
	alive = wait_any(fd, WAIT_MS);
	events(ctl & 2, &req);
	send_all(fd, &msg[1], (nmsg - 1) * sizeof(msg[0]));
	shutdown(fd, SHUT_WR);
	/* Until the CM has closed its side (it sees our end), handling what
	 * it reports meanwhile. */
	for (i = 0; alive && i < 20; i++) {
		alive = wait_any(fd, WAIT_MS);
		events(false, NULL);
	}
	close(fd);
	events(false, NULL);
	if (req)
		rdma_destroy_id(req);
	return 0;
}
