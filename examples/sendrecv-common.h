/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The send/receive demo ("Building an RDMA-capable application with IB
 * verbs"): each side posts a receive, sends one message from its own
 * buffer once the connection is up, and prints what it received.
 */
#ifndef SENDRECV_COMMON_H
#define SENDRECV_COMMON_H

#include "demo-common.h"

#include <pthread.h>
#include <stdbool.h>

#define SR_BUFFER_SIZE 1024

struct sr_conn {
	struct rdma_cm_id *id;
	struct ibv_mr *recv_mr, *send_mr;
	char *recv_region, *send_region;
	int completions; /* the send and the receive */
	void (*on_both)(struct sr_conn *c); /* both completed */
	/* posted and not completed, and whether we are tearing down */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int outstanding;
	bool closing;
};

/* QP, buffers and the posted receive for a new connection. */
struct sr_conn *sr_conn_new(struct rdma_cm_id *id,
			    void (*on_both)(struct sr_conn *c));
/* Send "message from <side> side with pid N". */
void sr_send_message(struct sr_conn *c, const char *side);
/* Move the QP to ERROR, wait for every posted request to complete (the
 * completion thread is then done with c) and free it. */
void sr_conn_free(struct sr_conn *c);

#endif
