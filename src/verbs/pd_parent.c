/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Thread domains and parent domains: ibv_alloc_td / ibv_dealloc_td,
 * ibv_alloc_parent_domain (dealloc is ibv_dealloc_pd), and the queue
 * buffers of QPs, CQs and SRQs created on a parent domain, which come
 * from its allocator (man ibv_alloc_parent_domain).
 *
 * A parent domain is an sv_pd that stands for its PD: objects created on
 * it are protected by that PD (sv_pd_real), so an MR of the PD serves a
 * QP of the parent domain.  It holds a use of its PD and of its thread
 * domain, and every object created on it holds a use of it, so each
 * deallocation is EBUSY while something depends on it (the kernel's
 * rule for PDs).
 *
 * Thread domains are accepted, validated and counted; they change
 * nothing: softverbs' queue locks are cheap when uncontended (biased
 * locks, util/qlock.h), and keeping them leaves a misbehaving
 * application's queues intact.
 *
 * The allocator: alloc(pd, pd_context, size, alignment, resource_type)
 * returns the buffer, NULL (creation fails with ENOMEM) or
 * IBV_ALLOCATOR_USE_DEFAULT (we allocate it ourselves); free is called
 * with the same pd and type for each buffer alloc gave.  resource_type
 * is one of SV_RES_TYPE_* (rdma-core leaves the values to the provider;
 * mlx5's are mlx5dv.h's MLX5DV_RES_TYPE_*).
 */
#include "verbs/verbs.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* Queue buffers are arrays of WQEs or completions; a cache line is what
 * their users index by. */
#define SV_QUEUE_ALIGN 64

/* ---- thread domains ---------------------------------------------------- */

struct ibv_td *sv_alloc_td(struct ibv_context *context,
			   struct ibv_td_init_attr *attr)
{
	struct sv_td *td;

	/* No comp_mask bit is defined (rdma-core's providers: EINVAL). */
	if (!context || !attr || attr->comp_mask)
		return sv_null_errno(EINVAL);
	td = calloc(1, sizeof(*td));
	if (!td)
		return sv_null_errno(ENOMEM);
	td->ibv.context = context;
	atomic_init(&td->users, 0);
	return &td->ibv;
}

int sv_dealloc_td(struct ibv_td *ibtd)
{
	struct sv_td *td = sv_container_of(ibtd, struct sv_td, ibv);

	if (atomic_load(&td->users))
		return EBUSY;
	free(td);
	return 0;
}

/* ---- parent domains ---------------------------------------------------- */

/* IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC (rdma-core 65's
 * verbs.h; older headers lack the name): the application allows shared
 * memory for buffers on a device that reports IBV_DEVICE_CC_DMA_BOUNCE.
 * softverbs0 never reports it, and as mlx5 does on such a device the
 * parent domain is made and the buffers stay plain memory. */
#define SV_PD_INIT_ALLOW_CC_UNPROTECTED_ALLOC (1u << 2)

#define SV_PD_INIT_KNOWN                          \
	(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | \
	 IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT | \
	 SV_PD_INIT_ALLOW_CC_UNPROTECTED_ALLOC)

struct ibv_pd *sv_alloc_parent_domain(struct ibv_context *context,
				      struct ibv_parent_domain_init_attr *a)
{
	struct sv_pd *pd, *real;

	if (!context || !a)
		return sv_null_errno(EINVAL);
	if (a->comp_mask & ~(uint32_t)SV_PD_INIT_KNOWN) {
		sv_warn("ibv_alloc_parent_domain: unknown comp_mask bits 0x%x",
			a->comp_mask & ~(uint32_t)SV_PD_INIT_KNOWN);
		return sv_null_errno(EINVAL);
	}
	/* man ibv_alloc_parent_domain: pd "can't be NULL"; it must be a
	 * PD of this context, not a parent domain itself. */
	if (!a->pd || a->pd->context != context || to_sv_pd(a->pd)->parent_of) {
		sv_warn("ibv_alloc_parent_domain: pd must be a protection domain of this context");
		return sv_null_errno(EINVAL);
	}
	if (a->td && a->td->context != context) {
		sv_warn("ibv_alloc_parent_domain: td belongs to another context");
		return sv_null_errno(EINVAL);
	}
	if ((a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!a->alloc || !a->free)) {
		sv_warn("ibv_alloc_parent_domain: ALLOCATORS without alloc and free");
		return sv_null_errno(EINVAL);
	}
	real = to_sv_pd(a->pd);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return sv_null_errno(ENOMEM);
	pd->ibv.context = context;
	pd->ibv.handle = a->pd->handle;
	atomic_init(&pd->users, 0);
	pd->parent_of = real;
	if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = a->alloc;
		pd->free = a->free;
	}
	if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = a->pd_context;
	if (a->td) {
		pd->td = sv_container_of(a->td, struct sv_td, ibv);
		atomic_fetch_add(&pd->td->users, 1);
	}
	sv_pd_get(real);
	return &pd->ibv;
}

void sv_parent_domain_free(struct sv_pd *pd)
{
	if (pd->td)
		atomic_fetch_sub(&pd->td->users, 1);
	sv_pd_put(pd->parent_of);
	free(pd);
}

/* ---- queue buffers ----------------------------------------------------- */

void *sv_queue_alloc(struct sv_pd *pd, size_t size, uint64_t type,
		     struct sv_pd **owner)
{
	void *p;

	*owner = NULL;
	if (pd && pd->alloc) {
		p = pd->alloc(&pd->ibv, pd->pd_context, size, SV_QUEUE_ALIGN,
			      type);
		if (!p)
			return NULL;
		if (p != IBV_ALLOCATOR_USE_DEFAULT) {
			/* Ours to initialise: the queues start empty. */
			memset(p, 0, size);
			*owner = pd;
			return p;
		}
	}
	return calloc(1, size);
}

void sv_queue_free(struct sv_pd *owner, void *p, uint64_t type)
{
	if (!p)
		return;
	if (owner)
		owner->free(&owner->ibv, owner->pd_context, p, type);
	else
		free(p);
}
