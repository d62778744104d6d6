/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The engine's interface to the verbs layer.  The verbs layer validates
 * and enqueues; the engine owns everything that moves data: QP numbers and
 * addressing, the requester/responder/completer state machines, the links
 * and the progress thread.
 */
#ifndef SV_ENGINE_ENGINE_H
#define SV_ENGINE_ENGINE_H

#include <stdio.h>

#include "core/objects.h"

/* Per context: start/stop progress (thread, sockets, timers).
 * sv_engine_open returns 0, or -1 with errno set. */
struct sv_path_table;
int sv_engine_open(struct sv_context *ctx, const struct sv_path_table *paths);
void sv_engine_close(struct sv_context *ctx);

/* Per QP: allocate the QP number and transport state (0 or errno),
 * release them (after the QP is unreachable from the network). */
int sv_engine_qp_create(struct sv_qp *qp);
void sv_engine_qp_destroy(struct sv_qp *qp);
/* Make a new UD QP this engine's GSI QP (IBV_QP_CREATE_SOURCE_QPN 1,
 * librdmacm's IB CM in standard mode): it sends with source QPN 1 and,
 * while the engine holds UDP 4791, takes what arrives there for QPN 1
 * and no CM's name claims (engine/forward/gsifwd.h).  0, EOPNOTSUPP (not
 * standard mode) or EBUSY (one already). */
int sv_engine_qp_gsi(struct sv_qp *qp);

/* Called by ibv_modify_qp after a successful change, with the state lock
 * held and qp->attr already updated: the engine reacts to RTR (peer
 * address, PSNs), RTS, SQD (drain), ERR (flush) and RESET (empty queues). */
void sv_engine_qp_modified(struct sv_qp *qp, int attr_mask,
			   enum ibv_qp_state old_state);

/* The data path's view of the QP state (enum ibv_qp_state): lock-free,
 * for the post verbs. */
int sv_engine_qp_state(struct sv_qp *qp);

/* Called by the post verbs after enqueueing: the QP has new work.  Runs
 * the engine inline when its lock is free, else rings the doorbell. */
void sv_engine_kick(struct sv_qp *qp);

/* Called by post_send for each valid WR, with sq_lock held and room in
 * the queue: true when one of the QP's paths carried the WR at once (the
 * message channel's lean mode, paths/chan.c); false: post it as usual.
 * A path may let go of sq_lock for a moment (to take the engine lock in
 * order): the caller reads the queue's tail again afterwards. */
bool sv_engine_post_path(struct sv_qp *qp, const struct ibv_send_wr *wr,
			 uint64_t len);

/* Counters of a context's engine, printable (SOFTVERBS_STATS=1 prints
 * them at ibv_close_device), and a one-line dump per QP. */
void sv_engine_stats_dump(struct sv_context *ctx, FILE *f);

/* Take in, now, what the context's sockets and rings hold: waits for the
 * engine lock (a pass under way finishes first), then runs a pass that
 * reads every link.  For a caller that must not act before the packets
 * already arrived are handled, as an HCA handles them on arrival: the CM,
 * before it reports a peer's DREQ (through sv_context.settle). */
void sv_engine_settle(struct sv_context *ctx);

/* Called by poll_cq when the CQ looks empty: lets a busy-polling thread
 * make progress itself instead of waiting for the progress thread. */
void sv_engine_poll_hint(struct sv_context *ctx);
/* The same from ibv_poll_cq on cq, whose ring the caller found empty:
 * receive completions this pass produces for cq may be written straight
 * into wc[0..max) instead of going through the ring.  Returns how many
 * were. */
int sv_engine_poll_hint_cq(struct sv_context *ctx, struct sv_cq *cq,
			   struct ibv_wc *wc, int max);

/* ibv_req_notify_cq: the application armed a CQ, and may sleep on its
 * channel next (an armed CQ's polls are not busy polls): the progress
 * thread stops leaving the engine's work to its polls at once. */
void sv_engine_armed(struct sv_context *ctx);

/* The application blocks for a completion event (ibv_get_cq_event on a
 * blocking channel fd): the calling thread sleeps for the engine, waiting
 * on the channel's fd and the engine's sockets together and running the
 * passes what comes calls for.  1: its own pass made an event for ch,
 * handed in *token (not through the pipe); 0: the fd is readable or the
 * channel's count of events written is no longer seen (the caller reads
 * the fd); -1 when the engine cannot be waited for this way (no engine
 * thread yet) or a signal came: the caller blocks in its read as
 * before, the progress thread making progress. */
int sv_engine_wait_event(struct sv_context *ctx, struct sv_comp_channel *ch,
			 uint64_t seen, uint64_t *token);

/* UD (ud.c): the largest UD message the port carries (its active MTU,
 * in bytes), for the post-time check. */
uint32_t sv_engine_port_mtu(struct sv_context *ctx);
/* ibv_create_ah: the AH's route (ah->route), fixed for its life; each UD
 * send WQE takes a copy at post time, as an HCA's WQE holds the address
 * vector, so that the AH may be destroyed while sends through it are
 * still queued. */
void sv_engine_ah_resolve(struct sv_context *ctx, struct sv_ah *ah);

/* The address monitor (netmon.c): while registered, a context receives
 * IBV_EVENT_PORT_ACTIVE / PORT_ERR / GID_CHANGE when the host's addresses
 * change.  Called by ibv_open_device / ibv_close_device. */
void sv_engine_netmon_add(struct sv_context *ctx);
void sv_engine_netmon_del(struct sv_context *ctx);

/* Multicast (mcast.c): a UD QP joins or leaves a group; the verbs layer
 * keeps the QP's list and its rules and calls these with the QP's state
 * lock held.  attach: 0 or errno. */
int sv_engine_mcast_attach(struct sv_qp *qp, const union ibv_gid *gid);
void sv_engine_mcast_detach(struct sv_qp *qp, const union ibv_gid *gid);

#endif
