/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sendrecv-client HOST PORT: the active side of the send/receive demo.
 *
 * Resolves the server's address (then builds the QP and posts a receive)
 * and route, connects, sends its message once established, prints what it
 * received, and disconnects when both the send and the receive completed.
 */
#include "sendrecv-common.h"

#include <netdb.h>
#include <string.h>

#define TIMEOUT_MS 500

static void both_done(struct sr_conn *c)
{
	demo_check(rdma_disconnect(c->id) == 0, "rdma_disconnect");
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ec;
	struct addrinfo *ai;
	struct rdma_cm_id *id;
	struct rdma_cm_event ev;
	int done = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: %s <server-address> <server-port>\n",
			argv[0]);
		return EXIT_FAILURE;
	}
	if (getaddrinfo(argv[1], argv[2], NULL, &ai))
		demo_die("getaddrinfo %s %s", argv[1], argv[2]);
	ec = rdma_create_event_channel();
	demo_check(ec, "rdma_create_event_channel");
	demo_check(rdma_create_id(ec, &id, NULL, RDMA_PS_TCP) == 0,
		   "rdma_create_id");
	demo_check(rdma_resolve_addr(id, NULL, ai->ai_addr, TIMEOUT_MS) == 0,
		   "rdma_resolve_addr");
	freeaddrinfo(ai);

	while (!done && demo_next_event(ec, &ev) == 0) {
		struct rdma_conn_param param;

		switch (ev.event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			printf("address resolved.\n");
			sr_conn_new(ev.id, both_done);
			demo_check(rdma_resolve_route(ev.id, TIMEOUT_MS) == 0,
				   "rdma_resolve_route");
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			printf("route resolved.\n");
			memset(&param, 0, sizeof(param));
			demo_check(rdma_connect(ev.id, &param) == 0,
				   "rdma_connect");
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			sr_send_message(ev.id->context, "active/client");
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			printf("disconnected.\n");
			sr_conn_free(ev.id->context);
			rdma_destroy_id(ev.id);
			done = 1;
			break;
		default:
			demo_die("unexpected event %s (status %d)",
				 rdma_event_str(ev.event), ev.status);
		}
		fflush(stdout);
	}
	rdma_destroy_event_channel(ec);
	return done ? 0 : EXIT_FAILURE;
}
