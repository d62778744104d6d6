/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Completion queue internals shared by the verbs layer and the engine. */
#ifndef SV_CORE_CQ_H
#define SV_CORE_CQ_H

#include "core/objects.h"

/* Append a completion.  `solicited` is true for receive completions of a
 * message with the Solicited Event bit.  Wakes the completion channel
 * when the CQ is armed for this completion.  Returns 0, or ENOSPC when the
 * CQ is full (overrun: the CQ is marked in error, IBV_EVENT_CQ_ERR is
 * raised and the caller moves the QP to ERR). */
int sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc, bool solicited);

/* Would sv_cq_push take one more completion now?  Read without the lock:
 * a poller only makes room, so for a caller that is the CQ's only
 * producer (the engine, under its lock) a yes stays a yes. */
bool sv_cq_has_room(const struct sv_cq *cq);

/* Drop the completions of one QP still in the CQ (the QP is being reset
 * or destroyed: its completions must not surface afterwards). */
void sv_cq_clean(struct sv_cq *cq, uint32_t qp_num);

/* A thread about to run a pass while it waits for an event of ch
 * (sv_engine_wait_event) takes the first event the pass makes for ch
 * instead of its pipe: between begin and end (same thread), end returns
 * it in *token (true) or false. */
void sv_cq_grab_begin(struct sv_comp_channel *ch);
bool sv_cq_grab_end(uint64_t *token);

/* Completion moderation (core/cq_mod.c).  Set a CQ's cq_count and
 * cq_period (microseconds; 0 and 0: every completion signals an armed
 * CQ); starts the timer thread for the process's first CQ with a period.
 * Returns 0 or an errno.  Called by ibv_modify_cq with no lock held. */
int sv_cq_moderate(struct sv_cq *cq, uint16_t count, uint16_t period_us);

/* The CQ's first moderated completion came: signal it in period_us
 * unless cq_count completions do first.  Called without cq->lock. */
void sv_cq_mod_timer(struct sv_cq *cq, uint16_t period_us);

/* The CQ is being destroyed: off the timer list, no longer counted. */
void sv_cq_mod_forget(struct sv_cq *cq);

/* The timer's deadline passed (core/cq.c): an armed CQ with moderated
 * completions waiting is signalled and disarmed.  Called under the
 * moderation lock, takes cq->lock. */
void sv_cq_mod_expired(struct sv_cq *cq);

#endif
