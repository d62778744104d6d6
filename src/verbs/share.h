/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A context's command fd and the objects shared through it: what
 * ibv_import_device, ibv_import_pd and ibv_import_mr find (rdma-core
 * shares the kernel's context of a cmd_fd; ours lives in this process).
 *
 * Every context opened by ibv_open_device gets a share with a fd of its
 * own (a memfd, so that it can be dup'd and passed like rdma-core's);
 * ibv_import_device on a dup of it joins that share.  PDs and MRs get a
 * handle in their context's share (ibv_pd.handle, ibv_mr.handle), by
 * which another context of the share imports them.
 */
#ifndef SV_VERBS_SHARE_H
#define SV_VERBS_SHARE_H

#include <stdint.h>

#include "core/objects.h"

enum sv_share_kind { SV_SHARE_PD = 1, SV_SHARE_MR, SV_SHARE_DM };

/* A new share for ctx with its cmd_fd (0 or errno). */
int sv_share_new(struct sv_context *ctx);
/* Join ctx to the share behind fd, which ctx then owns as its cmd_fd
 * (0, or errno with a log line: EBADF not open, EOPNOTSUPP a softverbs
 * context of another process, EINVAL anything else). */
int sv_share_join(struct sv_context *ctx, int fd);
/* Leave ctx's share (at close), closing its cmd_fd. */
void sv_share_leave(struct sv_context *ctx);

/* A handle for obj in ctx's share (0 or ENOMEM). */
int sv_share_add(struct ibv_context *ctx, enum sv_share_kind kind, void *obj,
		 uint32_t *handle);
/* Drop obj's handle (nothing if handle names another object: objects
 * made without one, such as parent domains, keep handle 0). */
void sv_share_del(struct ibv_context *ctx, uint32_t handle, const void *obj);
/* The object of that kind behind handle in ctx's share, or NULL. */
void *sv_share_find(struct ibv_context *ctx, enum sv_share_kind kind,
		    uint32_t handle);

#endif
