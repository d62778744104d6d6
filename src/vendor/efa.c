/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libefa.so.1 stand-in: every function rdma-core 65's libefa exports, at
 * the version it exports it (libefa.map: EFA_1.0 .. EFA_1.7), so that any unmodified binary
 * linked against EFA direct verbs loads on softverbs: perftest, libfabric
 * (linked with -z now, so one missing symbol stops every program using it),
 * pyverbs' efadv module, ...
 *
 * rdma-core's real libefa is a provider and needs libibverbs' private
 * provider interface (IBVERBS_PRIVATE_34), which our libibverbs does not
 * offer.  Programs call efadv_* only for AWS EFA devices (SRD transport);
 * softverbs0 is not one, so every function answers what the real library
 * answers for a device, or an object, that is not EFA's (efadv.h for the
 * prototypes, rdma-core 44's efadv.c for the answers).
 */
#include <infiniband/efadv.h>

#include "stub.h"

/* ---- Constructors: NULL, errno EOPNOTSUPP ---------------------------- */

SV_STUB_NULL(struct ibv_qp *, efadv_create_driver_qp, struct ibv_pd *ibvpd,
	     struct ibv_qp_init_attr *attr, uint32_t driver_qp_type)
SV_STUB_NULL(struct ibv_qp *, efadv_create_qp_ex, struct ibv_context *ibvctx,
	     struct ibv_qp_init_attr_ex *attr_ex,
	     struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
SV_STUB_NULL(struct ibv_cq_ex *, efadv_create_cq, struct ibv_context *ibvctx,
	     struct ibv_cq_init_attr_ex *attr_ex,
	     struct efadv_cq_init_attr *efa_attr, uint32_t inlen)

/*
 * The real function is a pointer conversion that cannot fail, valid only for
 * a CQ made by efadv_create_cq.  No such CQ can exist here: NULL, errno
 * EOPNOTSUPP, rather than a pointer into some other provider's CQ.
 */
SV_STUB_NULL(struct efadv_cq *, efadv_cq_from_ibv_cq_ex,
	     struct ibv_cq_ex *ibvcqx)

/*
 * ---- "0 on success, or the value of errno on failure": EOPNOTSUPP -----
 * The caller's attr is left untouched, as the real library leaves it for a
 * foreign device.
 */

SV_STUB_ERRNO(efadv_query_device, struct ibv_context *ibvctx,
	      struct efadv_device_attr *attr, uint32_t inlen)
SV_STUB_ERRNO(efadv_query_ah, struct ibv_ah *ibvah, struct efadv_ah_attr *attr,
	      uint32_t inlen)

/*
 * ---- Added after rdma-core 44 (EFA_1.3 .. EFA_1.7), by symbol name: the
 * oldest headers softverbs builds against do not declare them, nor the
 * structs they take (void * here).  Answers as the real ones give for an
 * object or device that is not EFA's.
 */

SV_STUB_ERRNO_AS(efadv_query_mr, struct ibv_mr *ibvmr, void *attr,
		 uint32_t inlen)
SV_STUB_ERRNO_AS(efadv_query_qp_wqs, struct ibv_qp *ibvqp, void *sq_attr,
		 void *rq_attr, uint32_t inlen)
SV_STUB_ERRNO_AS(efadv_query_cq, struct ibv_cq *ibvcq, void *attr,
		 uint32_t inlen)
/* "-errno on error" for these two. */
SV_STUB_NEG_ERRNO_AS(efadv_get_max_sq_depth, struct ibv_context *ibvctx,
		     void *attr, uint32_t inlen)
SV_STUB_NEG_ERRNO_AS(efadv_get_max_rq_depth, struct ibv_context *ibvctx,
		     void *attr, uint32_t inlen)
/* A pointer conversion valid only for a QP of efadv_create_qp_ex, of
 * which there are none (as efadv_cq_from_ibv_cq_ex). */
SV_STUB_NULL_AS(void *, efadv_qp_from_ibv_qp_ex, struct ibv_qp_ex *ibvqpx)
SV_STUB_NULL_AS(void *, efadv_create_comp_cntr, struct ibv_context *ibvctx,
		void *attr, void *efa_attr, uint32_t inlen)
