/*
 * libefa.so.1 stand-in: the EFA direct-verbs entry points that Debian's
 * perftest binaries import, so that those binaries load on softverbs.
 *
 * rdma-core's real libefa is a provider and needs libibverbs' private
 * provider interface (IBVERBS_PRIVATE_34), which our libibverbs does not
 * offer.  perftest calls these only for AWS EFA devices (SRD transport);
 * softverbs0 is not one, so both functions answer what the real library
 * answers for a device that is not an EFA device: efadv_query_device returns
 * EOPNOTSUPP ("0 on success, or the value of errno on failure"),
 * efadv_create_qp_ex returns NULL with errno EOPNOTSUPP.
 *
 * The symbol set and versions are in libefa.map; tests/vendor checks them
 * against every perftest binary.
 */
#include <errno.h>
#include <stddef.h>

#include <infiniband/efadv.h>

#define SV_EXPORT __attribute__((visibility("default")))

/* EFA_1.1 */
SV_EXPORT struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx,
					    struct ibv_qp_init_attr_ex *attr_ex,
					    struct efadv_qp_init_attr *efa_attr,
					    uint32_t inlen)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* Leaves *attr untouched, as the real library does for a foreign device. */
SV_EXPORT int efadv_query_device(struct ibv_context *ibvctx,
				 struct efadv_device_attr *attr, uint32_t inlen)
{
	return EOPNOTSUPP;
}
