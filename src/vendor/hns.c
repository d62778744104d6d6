/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libhns.so.1 stand-in: every function rdma-core 65's libhns exports
 * (HNS_1.0, since rdma-core 52), so that unmodified binaries linked against
 * HiSilicon direct verbs load on softverbs: perftest 25 links it.
 *
 * Programs call hnsdv_* only for HiSilicon devices (they ask
 * hnsdv_is_supported first); softverbs0 is not one, so each function
 * answers what the real library answers for a device that is not hns's
 * (rdma-core 65's hns_roce_u.c and hns_roce_u_verbs.c).  hnsdv.h is not
 * installed by rdma-core 44, so the functions are defined by symbol name
 * (stub.h), their structs as void *.
 */
#include <stdbool.h>

#include <infiniband/verbs.h>

#include "stub.h"

/* The real one looks at the device's provider: never hns's here. */
SV_ASM_DECL(bool, hnsdv_is_supported, struct ibv_device *device)
bool sv_hnsdv_is_supported(struct ibv_device *device)
{
	return false;
}

/* NULL context or attributes: EINVAL before the device is looked at. */
SV_ASM_DECL(struct ibv_qp *, hnsdv_create_qp, struct ibv_context *context,
	    struct ibv_qp_init_attr_ex *qp_attr, void *hns_attr)
struct ibv_qp *sv_hnsdv_create_qp(struct ibv_context *context,
				  struct ibv_qp_init_attr_ex *qp_attr,
				  void *hns_attr)
{
	errno = (!context || !qp_attr) ? EINVAL : EOPNOTSUPP;
	return NULL;
}

/* "0 or the value of errno"; the caller's attributes are left alone. */
SV_ASM_DECL(int, hnsdv_query_device, struct ibv_context *context,
	    void *attrs_out)
int sv_hnsdv_query_device(struct ibv_context *context, void *attrs_out)
{
	if (!context || !context->device || !attrs_out)
		return EINVAL;
	return EOPNOTSUPP;
}
