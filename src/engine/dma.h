/*
 * Copies to and from registered memory, as a HCA's DMA.
 */
#ifndef SV_ENGINE_DMA_H
#define SV_ENGINE_DMA_H

#include <string.h>

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

static inline void sv_dma_copy(void *dst, const void *src, size_t n)
{
	SV_DMA_BEGIN();
	memcpy(dst, src, n);
	SV_DMA_END();
}

#endif
