/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA read/write demo ("RDMA Read and Write with IB Verbs"), the part
 * rdma-server and rdma-client share.
 *
 * Each side registers a region holding its own message and exposes one
 * region to the peer.  After connecting, the client sends an MR message
 * (address, rkey, length of its exposed region); the server answers with
 * its own.  Once a side has both sent its MR and received the peer's, it
 * writes its message into the peer's region (write mode) or reads the
 * peer's message into its own region (read mode), then sends DONE.  When
 * a side has sent DONE and received the peer's DONE, the peer's RDMA
 * operation on it is complete too: it prints the peer's message and
 * disconnects.
 */
#ifndef RW_COMMON_H
#define RW_COMMON_H

#include "demo-common.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum rw_mode { RW_READ, RW_WRITE };

#define RW_BUFFER_SIZE 1024

/* What travels in a SEND (all fields big-endian). */
enum { RW_MSG_MR = 1, RW_MSG_DONE = 2 };
struct rw_msg {
	uint32_t type;
	uint32_t rkey;
	uint64_t addr;
	uint32_t length;
	uint32_t pad;
};

struct rw_conn {
	struct rdma_cm_id *id;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool connected;
	bool mr_posted; /* our MR message is on its way (under lock) */
	struct ibv_mr *recv_mr, *send_mr, *local_mr, *exposed_mr;
	struct rw_msg *recv_msg, *send_msg;
	char *local; /* write: our message; read: the peer's lands here */
	char *exposed; /* write: the peer's lands here; read: our message */
	uint64_t peer_addr;
	uint32_t peer_rkey, peer_len;
	/* progress, changed by the completion thread only */
	bool mr_sent, mr_received, rdma_posted, done_sent, done_received;
	bool finished;
	/* work requests posted and not completed yet, and whether we are
	 * tearing down (flushed completions are then expected); under lock */
	int outstanding;
	bool closing;
};

extern enum rw_mode rw_mode;

/* Parse "read" or "write"; false otherwise. */
bool rw_parse_mode(const char *s);
/* Connection parameters: one outstanding RDMA read each way, and the
 * adapter retries forever when the peer has no receive posted yet. */
void rw_conn_param(struct rdma_conn_param *p);
/* QP, regions (with our message "message from SIDE side with pid N") and
 * the first posted receive. */
struct rw_conn *rw_conn_new(struct rdma_cm_id *id, const char *side);
/* The connection is up: sends may go (the client then sends its MR). */
void rw_conn_established(struct rw_conn *c, bool send_mr);
/* The peer disconnected: move the QP to ERROR, wait until every posted
 * work request has completed (the completion thread is then done with
 * this connection), and free it. */
void rw_conn_free(struct rw_conn *c);

#endif
