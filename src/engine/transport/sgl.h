/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Scatter/gather through the MR key table (sgl.c).
 */
#ifndef SV_ENGINE_SGL_H
#define SV_ENGINE_SGL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/objects.h"

/* PROT: a key, PD, right or bound refused the access; FAULT: it was
 * allowed but a page of the memory faulted (unmapped or write-protected
 * since registration, util/fault.h); LEN: the SGL is too short. */
enum sv_sgl_err { SV_SGL_OK = 0, SV_SGL_PROT, SV_SGL_LEN, SV_SGL_FAULT };
enum sv_sgl_err sv_sgl_copy(struct sv_pd *pd, const struct ibv_sge *sge,
			    uint32_t nsge, uint64_t offset, uint8_t *data,
			    uint32_t len, bool to_sgl);
/* The same, with the key table's read lock already held (sv_mr_read_lock:
 * a batch of small copies takes it once). */
enum sv_sgl_err sv_sgl_copy_locked(struct sv_pd *pd, const struct ibv_sge *sge,
				   uint32_t nsge, uint8_t *data, uint32_t len,
				   bool to_sgl);
enum sv_sgl_err sv_sgl_validate(struct sv_pd *pd, const struct ibv_sge *sge,
				uint32_t nsge, unsigned int access);

struct sv_qp_engine;
/* A DMA copy or atomic of this thread faulted on registered memory
 * (sv_dma_copy false, SV_SGL_FAULT): counted (mem_fault) and logged with
 * the address, once where the engine decides what it becomes. */
void sv_dma_fault_report(struct sv_qp_engine *qe, const char *what);

#endif
