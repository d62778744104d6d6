/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Completion counters (rdma-core 65, IBVERBS_1.18): a device counting a
 * QP's completed work requests in memory instead of writing CQEs.
 * softverbs0 has none: every call answers as rdma-core's libibverbs does
 * for a provider without them (rxe's case), with no counter ever created.
 * The types are rdma-core 65's, known here only by pointer (older headers
 * lack them); asm labels give the functions their exported names without
 * clashing with newer headers' declarations.
 */
#include "verbs/verbs.h"

#include <string.h>

#define SV_ASM_NAME(name) __asm__(#name)

SV_EXPORT int sv_query_comp_cntr_caps(struct ibv_context *context, void *caps,
				      size_t caps_size)
	SV_ASM_NAME(_ibv_query_comp_cntr_caps);
SV_EXPORT void *sv_create_comp_cntr(struct ibv_context *context, void *attr)
	SV_ASM_NAME(ibv_create_comp_cntr);
SV_EXPORT int sv_destroy_comp_cntr(void *cc) SV_ASM_NAME(ibv_destroy_comp_cntr);
SV_EXPORT int sv_set_comp_cntr(void *cc, uint64_t value)
	SV_ASM_NAME(ibv_set_comp_cntr);
SV_EXPORT int sv_set_err_comp_cntr(void *cc, uint64_t value)
	SV_ASM_NAME(ibv_set_err_comp_cntr);
SV_EXPORT int sv_inc_comp_cntr(void *cc, uint64_t amount)
	SV_ASM_NAME(ibv_inc_comp_cntr);
SV_EXPORT int sv_inc_err_comp_cntr(void *cc, uint64_t amount)
	SV_ASM_NAME(ibv_inc_err_comp_cntr);
SV_EXPORT int sv_read_comp_cntr(void *cc, uint64_t *value)
	SV_ASM_NAME(ibv_read_comp_cntr);
SV_EXPORT int sv_read_err_comp_cntr(void *cc, uint64_t *value)
	SV_ASM_NAME(ibv_read_err_comp_cntr);
SV_EXPORT int sv_qp_attach_comp_cntr(struct ibv_qp *qp, void *cc, void *attr)
	SV_ASM_NAME(ibv_qp_attach_comp_cntr);

/* The caller's caps are zeroed whole (max_counters 0: none), then the
 * verb is refused, as rdma-core does. */
int sv_query_comp_cntr_caps(struct ibv_context *context, void *caps,
			    size_t caps_size)
{
	if (caps)
		memset(caps, 0, caps_size);
	return EOPNOTSUPP;
}

void *sv_create_comp_cntr(struct ibv_context *context, void *attr)
{
	return sv_null_errno(EOPNOTSUPP);
}

/* No counter can exist: the rest are "0 or the value of errno". */
int sv_destroy_comp_cntr(void *cc)
{
	return EOPNOTSUPP;
}

int sv_set_comp_cntr(void *cc, uint64_t value)
{
	return EOPNOTSUPP;
}

int sv_set_err_comp_cntr(void *cc, uint64_t value)
{
	return EOPNOTSUPP;
}

int sv_inc_comp_cntr(void *cc, uint64_t amount)
{
	return EOPNOTSUPP;
}

int sv_inc_err_comp_cntr(void *cc, uint64_t amount)
{
	return EOPNOTSUPP;
}

int sv_read_comp_cntr(void *cc, uint64_t *value)
{
	return EOPNOTSUPP;
}

int sv_read_err_comp_cntr(void *cc, uint64_t *value)
{
	return EOPNOTSUPP;
}

int sv_qp_attach_comp_cntr(struct ibv_qp *qp, void *cc, void *attr)
{
	return EOPNOTSUPP;
}
