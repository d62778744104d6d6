/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Faulting a registration's pages in, as the kernel's pinning leaves them
 * present, within the bounds the kernel's pinning has (util/populate.c).
 */
#ifndef SV_UTIL_POPULATE_H
#define SV_UTIL_POPULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Registrations of fewer pages than this are left to fault on use: the
 * faults cost about what the call that avoids them would. */
#define SV_POPULATE_MIN_PAGES 16

/* Whether [addr, addr + len) may be faulted in, and if so its pages
 * counted against the process's bound: the bytes counted (its page
 * span), to give back with sv_populate_uncharge; 0 when it is too small,
 * or beyond RLIMIT_MEMLOCK (without CAP_IPC_LOCK) with what is counted
 * already, or more than a quarter of the memory available. */
uint64_t sv_populate_charge(const void *addr, size_t len);

void sv_populate_uncharge(uint64_t bytes);

/* Fault in [addr, addr + len), for writing when `write`: every page, or
 * with `missing_only` only those mincore(2) reports absent.  Best effort:
 * a page that cannot be brought in faults when used. */
void sv_populate_fault(const void *addr, size_t len, bool write,
		       bool missing_only);

#endif
