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

#include <stdbool.h>
#include <stdint.h>

#include "core/objects.h"

/* Every object a verb names gets a handle (ibv_pd.handle, ibv_qp.handle...,
 * the kernel's lookup key): the verbs that go to the kernel in rdma-core
 * (create on, modify, query, destroy) look the object up by it, as the
 * kernel does, and refuse one whose handle or context does not name it
 * (objcheck.h).  Only PDs, MRs and DMs are found by handle for import. */
enum sv_share_kind {
	SV_SHARE_PD = 1,
	SV_SHARE_MR,
	SV_SHARE_DM,
	SV_SHARE_CQ,
	SV_SHARE_QP,
	SV_SHARE_SRQ,
	SV_SHARE_AH,
	SV_SHARE_MW,
	SV_SHARE_KINDS
};

/* A new share for ctx with its cmd_fd (0 or errno). */
int sv_share_new(struct sv_context *ctx);
/* Join ctx to the share behind fd, which ctx then owns as its cmd_fd
 * (0, or errno with a log line: EBADF not open, EOPNOTSUPP a softverbs
 * context of another process, EINVAL anything else). */
int sv_share_join(struct sv_context *ctx, int fd);
/* Leave ctx's share (at close), closing its cmd_fd. */
void sv_share_leave(struct sv_context *ctx);

/* A handle for obj in ctx's share, in O(1) (0, or ENOMEM: no memory, or
 * the device's limit of that kind is reached, said in a log line). */
int sv_share_add(struct ibv_context *ctx, enum sv_share_kind kind, void *obj,
		 uint32_t *handle);
/* Drop obj's handle (nothing if handle names another object: objects
 * made without one, such as parent domains, keep handle 0). */
void sv_share_del(struct ibv_context *ctx, uint32_t handle, const void *obj);
/* The object of that kind behind handle in ctx's share, or NULL. */
void *sv_share_find(struct ibv_context *ctx, enum sv_share_kind kind,
		    uint32_t handle);
/* Is ctx an open context whose share has obj, of that kind, at handle?
 * (ctx is compared with the open contexts before it is followed.) */
bool sv_share_holds(const struct ibv_context *ctx, enum sv_share_kind kind,
		    uint32_t handle, const void *obj);
/* Is ctx an open context of this process? */
bool sv_share_context_live(const struct ibv_context *ctx);

#endif
