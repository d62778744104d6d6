/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Copies to and from registered memory, as a HCA's DMA.
 */
#ifndef SV_ENGINE_DMA_H
#define SV_ENGINE_DMA_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "util/fault.h"

/* Registered memory is shared with the application the way a HCA shares
 * it: the engine reads and writes it like DMA, ordered with the
 * application only through completions and the peer's protocol, which a
 * race detector cannot see across processes.  Copies to and from it are
 * made with the detector told to look away. */
#if defined(__SANITIZE_THREAD__)
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define SV_DMA_BEGIN()                                         \
	do {                                                   \
		AnnotateIgnoreReadsBegin(__FILE__, __LINE__);  \
		AnnotateIgnoreWritesBegin(__FILE__, __LINE__); \
	} while (0)
#define SV_DMA_END()                                         \
	do {                                                 \
		AnnotateIgnoreWritesEnd(__FILE__, __LINE__); \
		AnnotateIgnoreReadsEnd(__FILE__, __LINE__);  \
	} while (0)
#else
#define SV_DMA_BEGIN() \
	do {           \
	} while (0)
#define SV_DMA_END() \
	do {         \
	} while (0)
#endif

/* The address of the last fault a DMA copy or atomic of this thread
 * met (engine/transport/sgl.c reports it). */
extern __thread uintptr_t sv_dma_fault_addr;

/* Registered memory is the application's: it may have unmapped or
 * write-protected a page since it registered it (an HCA would go on using
 * the pinned page; we use the address).  So every copy is fault-guarded
 * (util/fault.h): false, with sv_dma_fault_addr set, when a page faulted;
 * the caller turns it into the error an HCA reports for a protection
 * fault. */
__attribute__((warn_unused_result)) static inline bool
sv_dma_copy(void *dst, const void *src, size_t n)
{
	uintptr_t fault;

	SV_DMA_BEGIN();
	fault = sv_fault_copy(dst, src, n);
	SV_DMA_END();
	if (__builtin_expect(fault != 0, 0)) {
		sv_dma_fault_addr = fault;
		return false;
	}
	return true;
}

#endif
