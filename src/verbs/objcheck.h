/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Is this a live object of its context?  The kernel looks every object a
 * verb names up by its handle in the tables of the context's fd, and
 * refuses one it does not find; these checks do the same against the
 * context's share (share.h), for the verbs rdma-core sends to the kernel:
 * create on an object, modify, query, destroy.  A destroyed object, or one
 * whose handle or context field was overwritten, is refused with EINVAL
 * and a log line, never followed; the data path (post, poll) is not
 * checked, as rdma-core's providers do not check it.
 *
 * Each returns 0 or EINVAL; who names the verb in the log line.
 */
#ifndef SV_VERBS_OBJCHECK_H
#define SV_VERBS_OBJCHECK_H

#include <infiniband/verbs.h>

int sv_check_ctx(struct ibv_context *ctx, const char *who);
int sv_check_pd(struct ibv_pd *pd, const char *who);
int sv_check_mr(struct ibv_mr *mr, const char *who);
int sv_check_mw(struct ibv_mw *mw, const char *who);
int sv_check_cq(struct ibv_cq *cq, const char *who);
int sv_check_qp(struct ibv_qp *qp, const char *who);
int sv_check_srq(struct ibv_srq *srq, const char *who);
int sv_check_ah(struct ibv_ah *ah, const char *who);

#endif
