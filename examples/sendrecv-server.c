/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sendrecv-server [PORT]: the passive side of the send/receive demo.
 *
 * Listens (on an ephemeral port unless one is given) and, for each
 * connection: creates the QP and posts a receive when the request comes,
 * accepts, sends its message once established, prints what it received,
 * and cleans up when the peer disconnects.  Runs until interrupted.
 */
#include "sendrecv-common.h"

#include <arpa/inet.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct rdma_event_channel *ec = rdma_create_event_channel();
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct rdma_cm_id *listener;
	struct rdma_cm_event ev;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [port]\n", argv[0]);
		return EXIT_FAILURE;
	}
	if (argc == 2)
		addr.sin_port = htons((uint16_t)atoi(argv[1]));
	demo_check(ec, "rdma_create_event_channel");
	demo_check(rdma_create_id(ec, &listener, NULL, RDMA_PS_TCP) == 0,
		   "rdma_create_id");
	demo_check(rdma_bind_addr(listener, (struct sockaddr *)&addr) == 0,
		   "rdma_bind_addr");
	demo_check(rdma_listen(listener, 10) == 0, "rdma_listen");
	printf("listening on port %d.\n", ntohs(rdma_get_src_port(listener)));
	fflush(stdout);

	while (demo_next_event(ec, &ev) == 0) {
		struct rdma_conn_param param;
		struct sr_conn *c;

		switch (ev.event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			printf("received connection request.\n");
			fflush(stdout);
			sr_conn_new(ev.id, NULL);
			memset(&param, 0, sizeof(param));
			demo_check(rdma_accept(ev.id, &param) == 0,
				   "rdma_accept");
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			sr_send_message(ev.id->context, "passive/server");
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			printf("peer disconnected.\n");
			fflush(stdout);
			c = ev.id->context;
			sr_conn_free(c);
			rdma_destroy_id(ev.id);
			break;
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			break;
		default:
			demo_die("unexpected event %s",
				 rdma_event_str(ev.event));
		}
	}
	rdma_destroy_id(listener);
	rdma_destroy_event_channel(ec);
	return 0;
}
