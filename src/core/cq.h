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

/* Drop the completions of one QP still in the CQ (the QP is being reset
 * or destroyed: its completions must not surface afterwards). */
void sv_cq_clean(struct sv_cq *cq, uint32_t qp_num);

#endif
