/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Device memory: ibv_alloc_dm / ibv_free_dm, the copy verbs
 * (ibv_memcpy_to_dm / ibv_memcpy_from_dm, through the ibv_dm's function
 * pointers) and ibv_reg_dm_mr.
 *
 * An HCA's device memory is on-chip memory mapped into the process; ours
 * is a shared anonymous mapping of the process, which the peer's RDMA
 * reaches as it reaches any registered memory: by packets, and on one host
 * by one-copy placement into this process.  What makes it device memory
 * is the interface and its limits, as mlx5 has them: at most max_dm_size
 * bytes in use at once in a process (ENOMEM beyond, as the kernel answers
 * when MEMIC is used up; a single request above max_dm_size is EINVAL),
 * copies in 4-byte units (EINVAL for an unaligned offset or length,
 * EFAULT beyond the allocation), and MRs that are zero-based (the kernel
 * refuses ibv_reg_dm_mr without IBV_ACCESS_ZERO_BASED): the peer and
 * local SGEs address the region from 0.
 */
#include "verbs/verbs.h"

#include "verbs/share.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/log.h"

/* Bytes allocated in this process (softverbs0's device memory). */
static _Atomic size_t dm_in_use;

/* The rights a DM MR may have (mlx5's MLX5_DM_ALLOWED_ACCESS). */
#define SV_DM_ACCESS                                         \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
	 IBV_ACCESS_ZERO_BASED)

static bool budget_take(size_t n)
{
	size_t cur = atomic_load(&dm_in_use);

	do {
		if (cur + n > SV_MAX_DM_SIZE)
			return false;
	} while (!atomic_compare_exchange_weak(&dm_in_use, &cur, cur + n));
	return true;
}

/* The copy verbs: 4-byte units, as a HCA's device memory is written;
 * relaxed 4-byte accesses, so a peer's RDMA into the same region never
 * meets a torn word. */
static int dm_access(struct sv_dm *dm, uint64_t off, void *host, size_t len,
		     bool read)
{
	uint32_t *d, *h = host;
	size_t i;

	if (off > dm->length || len > dm->length - off)
		return EFAULT;
	if ((off & 3) || (len & 3))
		return EINVAL;
	d = (uint32_t *)(void *)(dm->base + off);
	for (i = 0; i < len / 4; i++) {
		if (read)
			h[i] = __atomic_load_n(&d[i], __ATOMIC_RELAXED);
		else
			__atomic_store_n(&d[i], h[i], __ATOMIC_RELAXED);
	}
	return 0;
}

/* The memory behind a handle: its own, or an imported handle's real one. */
static struct sv_dm *dm_of(struct ibv_dm *ibdm)
{
	struct sv_dm *dm = sv_container_of(ibdm, struct sv_dm, ibv);

	return dm->real ? dm->real : dm;
}

static int sv_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t dm_offset,
			   const void *host_addr, size_t length)
{
	return dm_access(dm_of(ibdm), dm_offset, (void *)host_addr, length,
			 false);
}

static int sv_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
			     uint64_t dm_offset, size_t length)
{
	return dm_access(dm_of(ibdm), dm_offset, host_addr, length, true);
}

struct ibv_dm *sv_alloc_dm(struct ibv_context *context,
			   struct ibv_alloc_dm_attr *attr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), mapped;
	struct sv_dm *dm;
	void *p;

	if (!context || !attr)
		return sv_null_errno(EINVAL);
	if (attr->comp_mask) {
		sv_warn("ibv_alloc_dm: comp_mask 0x%x: no bit is defined",
			attr->comp_mask);
		return sv_null_errno(EINVAL);
	}
	if (!attr->length || attr->length > SV_MAX_DM_SIZE) {
		sv_warn("ibv_alloc_dm: length %zu is not within 1..max_dm_size (%u)",
			attr->length, SV_MAX_DM_SIZE);
		return sv_null_errno(EINVAL);
	}
	/* The mapping is page aligned: any alignment up to a page holds. */
	if (attr->log_align_req > 12) {
		sv_warn("ibv_alloc_dm: log_align_req %u is above a page",
			attr->log_align_req);
		return sv_null_errno(EINVAL);
	}
	if (!budget_take(attr->length)) {
		sv_warn("ibv_alloc_dm: %zu bytes more than the %u of max_dm_size left",
			attr->length, SV_MAX_DM_SIZE);
		return sv_null_errno(ENOMEM);
	}
	mapped = (attr->length + page - 1) & ~(page - 1);
	dm = calloc(1, sizeof(*dm));
	p = dm ? mmap(NULL, mapped, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0) :
		 MAP_FAILED;
	if (p == MAP_FAILED) {
		free(dm);
		atomic_fetch_sub(&dm_in_use, attr->length);
		return sv_null_errno(ENOMEM);
	}
	dm->base = p;
	dm->mapped = mapped;
	dm->length = attr->length;
	atomic_init(&dm->users, 0);
	dm->ibv.context = context;
	dm->ibv.memcpy_to_dm = sv_memcpy_to_dm;
	dm->ibv.memcpy_from_dm = sv_memcpy_from_dm;
	if (sv_share_add(context, SV_SHARE_DM, dm, &dm->ibv.handle)) {
		munmap(p, mapped);
		free(dm);
		atomic_fetch_sub(&dm_in_use, attr->length);
		return sv_null_errno(ENOMEM);
	}
	return &dm->ibv;
}

/* man ibv_import_dm: a handle on another context of the share
 * (verbs/share.h); ibv_free_dm through it frees the memory,
 * ibv_unimport_dm only the handle. */
SV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context,
				       uint32_t dm_handle)
{
	struct sv_dm *real, *dm;

	if (!context)
		return sv_null_errno(EINVAL);
	real = sv_share_find(context, SV_SHARE_DM, dm_handle);
	if (!real) {
		sv_warn("ibv_import_dm: no device memory has handle %u in the contexts of this cmd_fd",
			dm_handle);
		return sv_null_errno(EINVAL);
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		return sv_null_errno(ENOMEM);
	dm->ibv = real->ibv;
	dm->ibv.context = context;
	dm->real = real;
	return &dm->ibv;
}

SV_EXPORT void ibv_unimport_dm(struct ibv_dm *ibdm)
{
	struct sv_dm *dm;

	if (!ibdm)
		return;
	dm = sv_container_of(ibdm, struct sv_dm, ibv);
	if (dm->real) /* an original is left alone */
		free(dm);
}

/* rdma-core 64 (IBVERBS_1.16): a dma-buf fd of the device memory, for
 * another device to reach it.  Ours is a host mapping, no dma-buf; refused
 * as rdma-core refuses it for a provider without the op: -1, EOPNOTSUPP. */
SV_EXPORT int ibv_dm_export_dmabuf_fd(struct ibv_dm *dm)
{
	errno = EOPNOTSUPP;
	return -1;
}

int sv_free_dm(struct ibv_dm *ibdm)
{
	struct sv_dm *dm = dm_of(ibdm);

	/* The kernel keeps device memory while an MR is registered on it. */
	if (atomic_load(&dm->users))
		return EBUSY;
	sv_share_del(dm->ibv.context, dm->ibv.handle, dm);
	munmap(dm->base, dm->mapped);
	atomic_fetch_sub(&dm_in_use, dm->length);
	if (dm != sv_container_of(ibdm, struct sv_dm, ibv))
		free(sv_container_of(ibdm, struct sv_dm, ibv)); /* the import */
	free(dm);
	return 0;
}

struct ibv_mr *sv_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			    uint64_t dm_offset, size_t length,
			    unsigned int access)
{
	struct sv_dm *dm;
	struct ibv_mr *mr;

	if (!pd || !ibdm || ibdm->context != pd->context)
		return sv_null_errno(EINVAL);
	dm = dm_of(ibdm);
	if (access & ~(unsigned int)SV_DM_ACCESS) {
		sv_warn("ibv_reg_dm_mr: access 0x%x has rights device memory cannot have",
			access);
		return sv_null_errno(EINVAL);
	}
	if (!(access & IBV_ACCESS_ZERO_BASED)) {
		sv_warn("ibv_reg_dm_mr: device memory MRs are zero-based (IBV_ACCESS_ZERO_BASED)");
		return sv_null_errno(EINVAL);
	}
	/* The kernel's bounds (UVERBS_METHOD_DM_MR_REG): a zero length
	 * anywhere inside the allocation is a region too. */
	if (dm_offset > dm->length || length > dm->length - dm_offset) {
		sv_warn("ibv_reg_dm_mr: offset %llu length %zu outside the %zu bytes allocated",
			(unsigned long long)dm_offset, length, dm->length);
		return sv_null_errno(EINVAL);
	}
	/* Zero-based: address 0 of the MR is dm_offset of the memory. */
	mr = sv_reg_dm_range(pd, dm->base + dm_offset, length, access);
	if (!mr)
		return NULL;
	to_sv_mr(mr)->dm = dm;
	atomic_fetch_add(&dm->users, 1);
	/* As rdma-core's ibv_cmd_reg_dm_mr reports it. */
	mr->addr = (void *)(uintptr_t)dm_offset;
	return mr;
}
