/*
 * Shared declarations of the libibverbs surface (src/verbs).  Everything
 * here is internal to libibverbs.so.1; exported symbols are chosen by
 * libibverbs.map, and SV_EXPORT marks their definitions.
 */
#ifndef SV_VERBS_VERBS_H
#define SV_VERBS_VERBS_H

#include <errno.h>
#include <infiniband/verbs.h>

#include "core/async.h"
#include "core/device.h"
#include "core/objects.h"

#define SV_EXPORT __attribute__((visibility("default")))

/* Bind an implementation to a non-default (compat) symbol version. */
#define SV_COMPAT_SYMBOL(impl, name, ver) \
	__asm__(".symver " #impl "," #name "@" ver)

/* Set errno and return NULL: the constructor error convention. */
static inline void *sv_null_errno(int err)
{
	errno = err;
	return NULL;
}

/* srq_ah.c: the address checks of a RoCE port (port 1, GRH present, an
 * existing source GID index), shared by ibv_create_ah and ibv_modify_qp.
 * Returns 0 or EINVAL. */
int sv_ah_attr_check(struct sv_context *ctx, const struct ibv_ah_attr *attr);

/* cq.c: the creation path of ibv_create_cq and ibv_create_cq_ex (NULL
 * with errno set on failure); `timestamps` keeps a timestamp per slot. */
struct sv_cq *sv_cq_new(struct ibv_context *context, int cqe,
			void *cq_context, struct ibv_comp_channel *channel,
			int comp_vector, bool timestamps);

/* context ops installed by the object files (filled in open_device) */
void sv_cq_install_ops(struct sv_context *ctx);
void sv_cq_ex_install_ops(struct sv_context *ctx);
void sv_qp_ex_install_ops(struct sv_context *ctx);

/* qp_ex.c: release the ibv_wr_* state of a QP (none for plain QPs). */
void sv_qp_wr_free(struct sv_qp *qp);
void sv_qp_install_ops(struct sv_context *ctx);
void sv_srq_install_ops(struct sv_context *ctx);
void sv_mw_install_ops(struct sv_context *ctx);
void sv_xrc_install_ops(struct sv_context *ctx);

/* qp.c: the creation path of every QP (ibv_create_qp, ibv_create_qp_ex);
 * xrcd is an XRC target's domain, NULL otherwise. */
struct sv_xrcd;
struct ibv_qp *sv_qp_create(struct ibv_context *context, struct ibv_pd *pd,
			    struct ibv_qp_init_attr *ia, struct sv_xrcd *xrcd);
/* xrc.c: an XRC SRQ leaves its domain (EBUSY while a target QP holds
 * it in the middle of a message); called by ibv_destroy_srq. */
int sv_xrc_srq_release(struct sv_srq *srq);

/* PD users: every object created on a PD holds a use (EBUSY on dealloc). */
static inline void sv_pd_get(struct sv_pd *pd)
{
	atomic_fetch_add(&pd->users, 1);
}
static inline void sv_pd_put(struct sv_pd *pd)
{
	atomic_fetch_sub(&pd->users, 1);
}

#endif
