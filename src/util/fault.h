/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Copies and atomics that survive a fault: registered memory that the
 * application unmapped or made read-only after registering it (an HCA
 * keeps using the pages it pinned; we use the addresses, which may no
 * longer be there).  A fault inside one of these functions reports the
 * faulting address instead of killing the process with SIGSEGV or
 * SIGBUS.  Everything else that faults goes to the handler the process
 * had before (util/fault.c).
 */
#ifndef SV_UTIL_FAULT_H
#define SV_UTIL_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Install the process-wide SIGSEGV/SIGBUS handler that turns a fault in
 * the functions below into their error return; once per process (later
 * calls do nothing), before the first access to memory that may fault.
 * Until then a fault kills the process as a plain memcpy would. */
void sv_fault_install(void);

/* Has sv_fault_install run (the guard is armed)? */
bool sv_fault_installed(void);

/* memcpy(dst, src, n); 0 when every byte was copied, else the address
 * that faulted (1 if that was address 0).  Bytes before the fault may have
 * been copied.  Stores go from the first byte to the last, so the last
 * byte lands last (programs poll it). */
uintptr_t sv_fault_copy(void *dst, const void *src, size_t n);

/* Sequentially consistent 64-bit compare-and-swap / fetch-and-add on *p;
 * *orig_p receives the value *p had.  0, or the faulting address. */
uintptr_t sv_fault_cas64(uint64_t *p, uint64_t compare, uint64_t swap,
			 uint64_t *orig_p);
uintptr_t sv_fault_fadd64(uint64_t *p, uint64_t add, uint64_t *orig_p);

#endif
