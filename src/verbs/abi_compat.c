/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The IBVERBS_1.0 compat symbols: the libibverbs ABI of 2005-2006, before
 * libibverbs 1.1 changed struct ibv_device, ibv_context and the object
 * structs (they then embedded the ops table and different fields).
 * rdma-core 44 still exports 33 functions at version IBVERBS_1.0 that
 * translate between those layouts and the current ones.
 *
 * softverbs does not implement that translation: no program built in the
 * last fifteen years binds to these versions, and a half-right emulation
 * of structs we cannot test against would be worse than a clear refusal.
 * Each symbol exists (so such a binary loads and fails cleanly instead of
 * dying in the dynamic linker) and refuses: constructors return NULL with
 * errno = EOPNOTSUPP, int verbs return EOPNOTSUPP (or -1 with errno, where
 * the verb's convention is -1/errno), void verbs do nothing.  The first
 * call says so on stderr once.
 *
 * Binding: each sv_compat_1_0_* function is bound to NAME@IBVERBS_1.0 with
 * .symver.  It needs default visibility for the alias to be exported; its
 * own name is made local by "local: *" in libibverbs.map, whose IBVERBS_1.0
 * block matches the compat names with one-name globs (an exact name there
 * would steal the default version from the IBVERBS_1.1 definition).
 */
#include "verbs/verbs.h"

#include <stdatomic.h>

#include "util/log.h"

static void refuse(const char *name)
{
	static atomic_flag said = ATOMIC_FLAG_INIT;

	if (!atomic_flag_test_and_set(&said))
		sv_err("%s@IBVERBS_1.0: this program uses the libibverbs 1.0 ABI (2006), which softverbs does not implement; rebuild it against current rdma-core headers",
		       name);
	errno = EOPNOTSUPP;
}

/* Constructors: NULL with errno = EOPNOTSUPP. */
#define SV_COMPAT_1_0_PTR(name, ...)                                  \
	SV_EXPORT                                                     \
	__attribute__((used)) void *sv_compat_1_0_##name(__VA_ARGS__) \
	{                                                             \
		refuse(#name);                                        \
		return NULL;                                          \
	}                                                             \
	SV_COMPAT_SYMBOL(sv_compat_1_0_##name, name, "IBVERBS_1.0")

/* int verbs that return an errno value. */
#define SV_COMPAT_1_0_ERR(name, ...)                                          \
	SV_EXPORT __attribute__((used)) int sv_compat_1_0_##name(__VA_ARGS__) \
	{                                                                     \
		refuse(#name);                                                \
		return EOPNOTSUPP;                                            \
	}                                                                     \
	SV_COMPAT_SYMBOL(sv_compat_1_0_##name, name, "IBVERBS_1.0")

/* int verbs whose convention is -1 with errno set. */
#define SV_COMPAT_1_0_NEG(name, ...)                                          \
	SV_EXPORT __attribute__((used)) int sv_compat_1_0_##name(__VA_ARGS__) \
	{                                                                     \
		refuse(#name);                                                \
		return -1;                                                    \
	}                                                                     \
	SV_COMPAT_SYMBOL(sv_compat_1_0_##name, name, "IBVERBS_1.0")

/* void verbs: nothing was created, so there is nothing to release. */
#define SV_COMPAT_1_0_VOID(name, ...)                                          \
	SV_EXPORT __attribute__((used)) void sv_compat_1_0_##name(__VA_ARGS__) \
	{                                                                      \
		refuse(#name);                                                 \
	}                                                                      \
	SV_COMPAT_SYMBOL(sv_compat_1_0_##name, name, "IBVERBS_1.0")

/* devices and contexts */
SV_COMPAT_1_0_PTR(ibv_get_device_list, int *num);
SV_COMPAT_1_0_VOID(ibv_free_device_list, void *list);
SV_COMPAT_1_0_PTR(ibv_get_device_name, void *device);
SV_COMPAT_1_0_PTR(ibv_open_device, void *device);
SV_COMPAT_1_0_ERR(ibv_close_device, void *context);
SV_COMPAT_1_0_NEG(ibv_get_async_event, void *context, void *event);
SV_COMPAT_1_0_VOID(ibv_ack_async_event, void *event);
SV_COMPAT_1_0_ERR(ibv_query_device, void *context, void *attr);
SV_COMPAT_1_0_ERR(ibv_query_port, void *context, uint8_t port, void *attr);
SV_COMPAT_1_0_NEG(ibv_query_gid, void *context, uint8_t port, int index,
		  void *gid);
SV_COMPAT_1_0_NEG(ibv_query_pkey, void *context, uint8_t port, int index,
		  void *pkey);

/* The GUID is returned by value: 0 (no valid GUID) with errno set. */
SV_EXPORT __attribute__((used)) __be64
sv_compat_1_0_ibv_get_device_guid(void *device)
{
	refuse("ibv_get_device_guid");
	return 0;
}
SV_COMPAT_SYMBOL(sv_compat_1_0_ibv_get_device_guid, ibv_get_device_guid,
		 "IBVERBS_1.0");

/* PD and MR */
SV_COMPAT_1_0_PTR(ibv_alloc_pd, void *context);
SV_COMPAT_1_0_ERR(ibv_dealloc_pd, void *pd);
SV_COMPAT_1_0_PTR(ibv_reg_mr, void *pd, void *addr, size_t length, int access);
SV_COMPAT_1_0_ERR(ibv_dereg_mr, void *mr);

/* CQ */
SV_COMPAT_1_0_PTR(ibv_create_cq, void *context, int cqe, void *cq_context,
		  void *channel, int comp_vector);
SV_COMPAT_1_0_ERR(ibv_resize_cq, void *cq, int cqe);
SV_COMPAT_1_0_ERR(ibv_destroy_cq, void *cq);
SV_COMPAT_1_0_NEG(ibv_get_cq_event, void *channel, void **cq,
		  void **cq_context);
SV_COMPAT_1_0_VOID(ibv_ack_cq_events, void *cq, unsigned int nevents);

/* SRQ */
SV_COMPAT_1_0_PTR(ibv_create_srq, void *pd, void *init_attr);
SV_COMPAT_1_0_ERR(ibv_modify_srq, void *srq, void *attr, int mask);
SV_COMPAT_1_0_ERR(ibv_query_srq, void *srq, void *attr);
SV_COMPAT_1_0_ERR(ibv_destroy_srq, void *srq);

/* QP */
SV_COMPAT_1_0_PTR(ibv_create_qp, void *pd, void *init_attr);
SV_COMPAT_1_0_ERR(ibv_query_qp, void *qp, void *attr, int mask,
		  void *init_attr);
SV_COMPAT_1_0_ERR(ibv_modify_qp, void *qp, void *attr, int mask);
SV_COMPAT_1_0_ERR(ibv_destroy_qp, void *qp);

/* AH and multicast */
SV_COMPAT_1_0_PTR(ibv_create_ah, void *pd, void *attr);
SV_COMPAT_1_0_ERR(ibv_destroy_ah, void *ah);
SV_COMPAT_1_0_ERR(ibv_attach_mcast, void *qp, void *gid, uint16_t lid);
SV_COMPAT_1_0_ERR(ibv_detach_mcast, void *qp, void *gid, uint16_t lid);
