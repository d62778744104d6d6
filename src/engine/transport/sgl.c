/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Scatter/gather through the MR key table.  Every access looks the key up
 * and checks it with sv_mr_check (PD, access rights, overflow-safe bounds)
 * for exactly the bytes touched, and lets go of it (read lock or
 * reference) before returning: no MR is held across progress passes, so
 * deregistration never waits on a message a dead peer will not finish.
 */
#include "core/mr.h"
#include "engine/transport/dma.h"
#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"
#include "engine/transport/sgl.h"
#include "util/log.h"

__thread uintptr_t sv_dma_fault_addr;

void sv_dma_fault_report(struct sv_qp_engine *qe, const char *what)
{
	SV_STAT(qe->eng, mem_fault);
	sv_warn("qp 0x%06x: %s: registered memory at 0x%lx faulted: unmapped "
		"or not writable since it was registered",
		qe->qpn, what, (unsigned long)sv_dma_fault_addr);
}

enum sv_sgl_err sv_sgl_validate(struct sv_pd *pd, const struct ibv_sge *sge,
				uint32_t nsge, unsigned int access)
{
	uint32_t i;

	for (i = 0; i < nsge; i++) {
		struct sv_mr *mr;
		void *p;

		if (!sge[i].length)
			continue; /* touches no memory: the key is not used */
		mr = sv_mr_get_by_lkey(sge[i].lkey);
		p = sv_mr_check(mr, pd, sge[i].addr, sge[i].length, access);
		if (mr)
			sv_mr_put(mr);
		if (!p)
			return SV_SGL_PROT;
	}
	return SV_SGL_OK;
}

/* Up to this length a copy holds the key table's read lock throughout and
 * takes no reference per SGE (two atomic operations fewer each, which a
 * small message pays in full); registration elsewhere in the process
 * waits for at most such a copy.  Longer ones reference each MR. */
#define SV_SGL_LOCKED_MAX 65536

/* The copy itself; `locked`: the caller holds the key table's read lock
 * (no reference per MR), else each MR is referenced while copied. */
static enum sv_sgl_err copy_sges(struct sv_pd *pd, const struct ibv_sge *sge,
				 uint32_t nsge, uint64_t offset, uint8_t *data,
				 uint32_t len, bool to_sgl, bool locked)
{
	unsigned int access = to_sgl ? IBV_ACCESS_LOCAL_WRITE : 0;
	uint32_t i = 0;

	/* Skip whole SGEs before the offset. */
	while (i < nsge && offset >= sge[i].length) {
		offset -= sge[i].length;
		i++;
	}
	while (len) {
		struct sv_mr *mr;
		uint32_t n;
		uint8_t *p;
		bool ok;

		if (i >= nsge)
			return SV_SGL_LEN;
		n = sge[i].length - (uint32_t)offset;
		if (n > len)
			n = len;
		mr = locked ? sv_mr_find_lkey_locked(sge[i].lkey) :
			      sv_mr_get_by_lkey(sge[i].lkey);
		p = sv_mr_check(mr, pd, sge[i].addr + offset, n, access);
		if (!p) {
			if (mr && !locked)
				sv_mr_put(mr);
			return SV_SGL_PROT;
		}
		ok = to_sgl ? sv_dma_copy(p, data, n) : sv_dma_copy(data, p, n);
		if (!locked)
			sv_mr_put(mr);
		if (!ok)
			return SV_SGL_FAULT;
		data += n;
		len -= n;
		offset = 0;
		i++;
	}
	return SV_SGL_OK;
}

enum sv_sgl_err sv_sgl_copy(struct sv_pd *pd, const struct ibv_sge *sge,
			    uint32_t nsge, uint64_t offset, uint8_t *data,
			    uint32_t len, bool to_sgl)
{
	enum sv_sgl_err err;

	if (len > SV_SGL_LOCKED_MAX)
		return copy_sges(pd, sge, nsge, offset, data, len, to_sgl,
				 false);
	sv_mr_read_lock();
	err = copy_sges(pd, sge, nsge, offset, data, len, to_sgl, true);
	sv_mr_read_unlock();
	return err;
}

enum sv_sgl_err sv_sgl_copy_locked(struct sv_pd *pd, const struct ibv_sge *sge,
				   uint32_t nsge, uint8_t *data, uint32_t len,
				   bool to_sgl)
{
	return copy_sges(pd, sge, nsge, 0, data, len, to_sgl, true);
}
