/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdma-client read|write HOST PORT: the active side of the RDMA read/write
 * demo (see rw-common.h).  Exits once the exchange is done and the
 * connection released.
 */
#include "rw-common.h"

#include <netdb.h>

#define TIMEOUT_MS 500

int main(int argc, char **argv)
{
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
	struct rdma_cm_event ev;
	struct addrinfo *ai;
	int done = 0;

	if (argc != 4 || !rw_parse_mode(argv[1])) {
		fprintf(stderr,
			"usage: %s <mode> <server-address> <server-port>\n"
			"  mode = \"read\", \"write\"\n",
			argv[0]);
		return EXIT_FAILURE;
	}
	if (getaddrinfo(argv[2], argv[3], NULL, &ai))
		demo_die("getaddrinfo %s %s", argv[2], argv[3]);
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
			rw_conn_new(ev.id, "active/client");
			demo_check(rdma_resolve_route(ev.id, TIMEOUT_MS) == 0,
				   "rdma_resolve_route");
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			printf("route resolved.\n");
			rw_conn_param(&param);
			demo_check(rdma_connect(ev.id, &param) == 0,
				   "rdma_connect");
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			rw_conn_established(ev.id->context, true);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			printf("disconnected.\n");
			rw_conn_free(ev.id->context);
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
