/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
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
#include "util/forks.h"

#define SV_EXPORT __attribute__((visibility("default")))

/* Bind an implementation to a non-default (compat) symbol version. */
#define SV_COMPAT_SYMBOL(impl, name, ver) \
	__asm__(".symver " #impl "," #name "@" ver)

/* A forked child posting on a QP or SRQ its parent made (util/forks.h):
 * the data path refuses it with EINVAL and this reason.  Objects the
 * child makes itself, even on an inherited context, are its own. */
#define SV_FORKED_WHY                                                        \
	"it was made by the process this one is a forked child of: the "     \
	"parent's queues are not usable here (their memory is copied, not "  \
	"what they stand for: the connection, the peer's rings); make them " \
	"in the child, or fork before making them"

static inline bool sv_forked(unsigned int forks)
{
	return __builtin_expect(forks != sv_fork_count, 0);
}

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
 * with errno set on failure); `timestamps` keeps a timestamp per slot;
 * `parent`: the parent domain whose allocator gives the ring, or NULL. */
struct sv_cq *sv_cq_new(struct ibv_context *context, int cqe, void *cq_context,
			struct ibv_comp_channel *channel, int comp_vector,
			bool timestamps, struct sv_pd *parent);

/* The context's operations, defined by the files that own them and
 * gathered in one const table (device.c, sv_ctx_ops): the entries of
 * struct ibv_context_ops that the header's inline verbs jump through, and
 * the extended entries of struct verbs_context. */
int sv_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
int sv_modify_cq(struct ibv_cq *ibcq, struct ibv_modify_cq_attr *attr);
int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr);
int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr);
int sv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr);
int sv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		 uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);
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

/* pd_parent.c: thread and parent domains, and queue buffers through a
 * parent domain's allocator. */
struct ibv_td *sv_alloc_td(struct ibv_context *context,
			   struct ibv_td_init_attr *attr);
int sv_dealloc_td(struct ibv_td *td);
struct ibv_pd *sv_alloc_parent_domain(struct ibv_context *context,
				      struct ibv_parent_domain_init_attr *a);
/* ibv_dealloc_pd of a parent domain nothing uses any more. */
void sv_parent_domain_free(struct sv_pd *pd);
/* resource_type given to a parent domain's allocator. */
#define SV_RES_TYPE_QP 1 /* a QP's send or receive queue */
#define SV_RES_TYPE_CQ 2 /* a CQ's ring */
#define SV_RES_TYPE_SRQ 3 /* an SRQ's ring */
/* A zeroed queue buffer of size bytes: from pd's allocator when pd is a
 * parent domain with one (unless it answers IBV_ALLOCATOR_USE_DEFAULT),
 * else calloc.  *owner is what sv_queue_free needs.  NULL: ENOMEM. */
void *sv_queue_alloc(struct sv_pd *pd, size_t size, uint64_t type,
		     struct sv_pd **owner);
void sv_queue_free(struct sv_pd *owner, void *p, uint64_t type);

/* dm.c: device memory. */
struct ibv_dm *sv_alloc_dm(struct ibv_context *context,
			   struct ibv_alloc_dm_attr *attr);
int sv_free_dm(struct ibv_dm *dm);
struct ibv_mr *sv_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
			    uint64_t dm_offset, size_t length,
			    unsigned int access);
/* pd_mr.c: the region of a DM MR, [addr, addr + length) of the device
 * memory's mapping, zero-based, at any offset (no page rule). */
struct ibv_mr *sv_reg_dm_range(struct ibv_pd *pd, void *addr, size_t length,
			       unsigned int access);

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
