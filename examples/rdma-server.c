/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdma-server read|write [PORT]: the passive side of the RDMA read/write
 * demo (see rw-common.h).  Listens on an ephemeral port unless one is
 * given, prints it, and serves connections until interrupted.
 */
#include "rw-common.h"

#include <arpa/inet.h>

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s <mode> [port]\n  mode = \"read\", \"write\"\n",
		argv0);
	exit(EXIT_FAILURE);
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listener;
	struct rdma_cm_event ev;

	if (argc < 2 || argc > 3 || !rw_parse_mode(argv[1]))
		usage(argv[0]);
	if (argc == 3)
		addr.sin_port = htons((uint16_t)atoi(argv[2]));
	ec = rdma_create_event_channel();
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

		switch (ev.event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			printf("received connection request.\n");
			fflush(stdout);
			rw_conn_new(ev.id, "passive/server");
			rw_conn_param(&param);
			demo_check(rdma_accept(ev.id, &param) == 0,
				   "rdma_accept");
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			/* The client speaks first. */
			rw_conn_established(ev.id->context, false);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			printf("peer disconnected.\n");
			fflush(stdout);
			rw_conn_free(ev.id->context);
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
