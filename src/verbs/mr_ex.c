/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The registration verbs of rdma-core 60 to 65 (IBVERBS_1.15, 1.17):
 * ibv_reg_mr_ex, DMA handles (ibv_alloc_dmah), and host buffers
 * (ibv_alloc_buf, ibv_reg_buf_mr, ibv_export_buf_dmabuf_fd).
 *
 * The types are rdma-core's (verbs.h 60+, driver.h for struct ibv_buf),
 * declared here by layout because softverbs also builds against older
 * headers that lack them; the functions are bound to their exported names
 * with asm labels so that newer headers' declarations of the same names
 * do not clash with these.  They behave as rdma-core's libibverbs does
 * for a provider without the corresponding ops (rxe's case): buffers are
 * page-aligned host memory, reg_mr_ex becomes an ordinary or dma-buf
 * registration, and what needs device support (DMA handles, a buffer's
 * dma-buf) is refused.
 */
#include "verbs/verbs.h"

#include <stdlib.h>
#include <unistd.h>

/* enum ibv_reg_mr_mask (verbs.h 60+) */
#define SV_REG_MR_MASK_IOVA (1u << 0)
#define SV_REG_MR_MASK_ADDR (1u << 1)
#define SV_REG_MR_MASK_FD (1u << 2)
#define SV_REG_MR_MASK_FD_OFFSET (1u << 3)
#define SV_REG_MR_MASK_DMAH (1u << 4)
#define SV_REG_MR_MASK_BUF (1u << 5)

struct sv_buf;

/* struct ibv_mr_init_attr */
struct sv_mr_init_attr {
	size_t length;
	int access;
	uint64_t comp_mask;
	uint64_t iova;
	void *addr;
	int fd;
	uint64_t fd_offset;
	void *dmah; /* struct ibv_dmah * */
	struct sv_buf *buf;
};

/* struct ibv_buf (driver.h: the library's own; callers hold pointers) */
struct sv_buf {
	void *addr;
	size_t size;
	struct ibv_pd *pd;
	int dmabuf_fd; /* -1: host memory */
};

#define SV_ASM_NAME(name) __asm__(#name)

SV_EXPORT void *sv_alloc_dmah(struct ibv_context *context, void *attr)
	SV_ASM_NAME(ibv_alloc_dmah);
SV_EXPORT int sv_dealloc_dmah(void *dmah) SV_ASM_NAME(ibv_dealloc_dmah);
SV_EXPORT struct ibv_mr *sv_reg_mr_ex(struct ibv_pd *pd,
				      struct sv_mr_init_attr *mr_init_attr)
	SV_ASM_NAME(ibv_reg_mr_ex);
SV_EXPORT void *sv_alloc_buf(struct ibv_pd *pd, size_t size,
			     struct sv_buf **buf) SV_ASM_NAME(ibv_alloc_buf);
SV_EXPORT void sv_free_buf(struct sv_buf *buf) SV_ASM_NAME(ibv_free_buf);
SV_EXPORT int sv_export_buf_dmabuf_fd(struct sv_buf *buf)
	SV_ASM_NAME(ibv_export_buf_dmabuf_fd);
SV_EXPORT struct ibv_mr *sv_reg_buf_mr(struct ibv_pd *pd, struct sv_buf *buf,
				       void *addr, size_t length, int access)
	SV_ASM_NAME(ibv_reg_buf_mr);

/* A DMA handle steers a device's writes to a CPU's cache (TPH); there is
 * no PCIe device here to steer, and no handle can exist. */
void *sv_alloc_dmah(struct ibv_context *context, void *attr)
{
	return sv_null_errno(EOPNOTSUPP);
}

int sv_dealloc_dmah(void *dmah)
{
	return EOPNOTSUPP;
}

/* rdma-core: the registered range must lie in the buffer, given by its
 * address; a host buffer is then an ordinary registration. */
static int mr_attr_from_buf(struct ibv_pd *pd, struct sv_mr_init_attr *a)
{
	struct sv_buf *buf = a->buf;
	uintptr_t base, addr;

	if (!buf || pd != buf->pd || !(a->comp_mask & SV_REG_MR_MASK_ADDR) ||
	    (a->comp_mask & (SV_REG_MR_MASK_FD | SV_REG_MR_MASK_FD_OFFSET)))
		return EINVAL;
	base = (uintptr_t)buf->addr;
	addr = (uintptr_t)a->addr;
	if (addr < base || addr - base > buf->size ||
	    a->length > buf->size - (addr - base))
		return EINVAL;
	a->comp_mask &= ~(uint64_t)SV_REG_MR_MASK_BUF;
	return 0;
}

struct ibv_mr *sv_reg_mr_ex(struct ibv_pd *pd, struct sv_mr_init_attr *in)
{
	const uint64_t supported = SV_REG_MR_MASK_IOVA | SV_REG_MR_MASK_ADDR |
				   SV_REG_MR_MASK_FD | SV_REG_MR_MASK_FD_OFFSET;
	struct sv_mr_init_attr a = {
		.length = in->length,
		.access = in->access,
		.comp_mask = in->comp_mask,
		.fd = -1,
	};
	int err;

	if (a.comp_mask & SV_REG_MR_MASK_IOVA)
		a.iova = in->iova;
	if (a.comp_mask & SV_REG_MR_MASK_ADDR)
		a.addr = in->addr;
	if (a.comp_mask & SV_REG_MR_MASK_FD)
		a.fd = in->fd;
	if (a.comp_mask & SV_REG_MR_MASK_FD_OFFSET)
		a.fd_offset = in->fd_offset;
	if (a.comp_mask & SV_REG_MR_MASK_BUF) {
		a.buf = in->buf;
		err = mr_attr_from_buf(pd, &a);
		if (err)
			return sv_null_errno(err);
	}
	/* A DMA handle, or any bit this version does not know: refused as
	 * rdma-core refuses them for a provider without reg_mr_ex. */
	if (a.comp_mask & ~supported)
		return sv_null_errno(EOPNOTSUPP);
	if (a.comp_mask & SV_REG_MR_MASK_FD) {
		if ((a.comp_mask & SV_REG_MR_MASK_ADDR) ||
		    !(a.comp_mask & SV_REG_MR_MASK_FD_OFFSET) ||
		    !(a.comp_mask & SV_REG_MR_MASK_IOVA))
			return sv_null_errno(EINVAL);
		return ibv_reg_dmabuf_mr(pd, a.fd_offset, a.length, a.iova,
					 a.fd, a.access);
	}
	if (!(a.comp_mask & SV_REG_MR_MASK_ADDR) ||
	    (a.comp_mask & SV_REG_MR_MASK_FD_OFFSET))
		return sv_null_errno(EINVAL);
	return ibv_reg_mr_iova2(pd, a.addr, a.length,
				(a.comp_mask & SV_REG_MR_MASK_IOVA) ?
					a.iova :
					(uintptr_t)a.addr,
				a.access);
}

void *sv_alloc_buf(struct ibv_pd *pd, size_t size, struct sv_buf **buf)
{
	struct sv_buf *b;
	void *p;
	int err;

	if (!pd || !buf)
		return sv_null_errno(EINVAL);
	b = calloc(1, sizeof(*b));
	if (!b)
		return sv_null_errno(ENOMEM);
	err = posix_memalign(&p, sysconf(_SC_PAGESIZE), size);
	if (err) {
		free(b);
		return sv_null_errno(err);
	}
	b->addr = p;
	b->size = size;
	b->pd = pd;
	b->dmabuf_fd = -1;
	*buf = b;
	return p;
}

void sv_free_buf(struct sv_buf *buf)
{
	if (!buf)
		return;
	free(buf->addr);
	free(buf);
}

/* Host memory is no dma-buf: ENODATA, as rdma-core answers. */
int sv_export_buf_dmabuf_fd(struct sv_buf *buf)
{
	errno = ENODATA;
	return -1;
}

struct ibv_mr *sv_reg_buf_mr(struct ibv_pd *pd, struct sv_buf *buf, void *addr,
			     size_t length, int access)
{
	struct sv_mr_init_attr a = {
		.length = length,
		.access = access,
		.comp_mask = SV_REG_MR_MASK_BUF | SV_REG_MR_MASK_ADDR,
		.addr = addr,
		.buf = buf,
	};

	return sv_reg_mr_ex(pd, &a);
}
