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
/* Is attr an address of this port?  EINVAL with a warning naming who
 * ("ibv_create_ah", ...) and the field at fault. */
int sv_ah_attr_check(struct sv_context *ctx, const struct ibv_ah_attr *attr,
		     const char *who);

/* cq.c: the creation path of ibv_create_cq and ibv_create_cq_ex (NULL
 * with errno set on failure); `timestamps` keeps a timestamp per slot. */
struct sv_cq *sv_cq_new(struct ibv_context *context, int cqe, void *cq_context,
			struct ibv_comp_channel *channel, int comp_vector,
			bool timestamps);

/* The context's operations, defined by the files that own them and
 * gathered in one const table (device.c, sv_ctx_ops): the entries of
 * struct ibv_context_ops that the header's inline verbs jump through, and
 * the extended entries of struct verbs_context. */
int sv_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr);
int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr);
int sv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr);
int sv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
	       struct ibv_mw_bind *mw_bind);
struct ibv_mw *sv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int sv_dealloc_mw(struct ibv_mw *ibmw);
struct ibv_cq_ex *sv_create_cq_ex(struct ibv_context *context,
				  struct ibv_cq_init_attr_ex *cq_attr);
int sv_query_rt_values(struct ibv_context *context,
		       struct ibv_values_ex *values);
struct ibv_qp *sv_create_qp_ex(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *qp_init_attr_ex);
struct ibv_xrcd *sv_open_xrcd(struct ibv_context *context,
			      struct ibv_xrcd_init_attr *xrcd_init_attr);
int sv_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_srq *sv_create_srq_ex(struct ibv_context *context,
				 struct ibv_srq_init_attr_ex *srq_init_attr_ex);
int sv_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num);
struct ibv_qp *sv_open_qp(struct ibv_context *context,
			  struct ibv_qp_open_attr *attr);

/* qp_ex.c: release the ibv_wr_* state of a QP (none for plain QPs). */
void sv_qp_wr_free(struct sv_qp *qp);

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
