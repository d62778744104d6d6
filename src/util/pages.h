/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Is a range of this process's address space mapped with the rights a
 * registration needs?  From /proc/self/maps (util/pages.c).
 */
#ifndef SV_UTIL_PAGES_H
#define SV_UTIL_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sv_pages_fault {
	SV_PAGES_OK = 0,
	SV_PAGES_UNMAPPED, /* a page of the range is not mapped */
	SV_PAGES_NO_READ, /* mapped without read permission */
	SV_PAGES_NO_WRITE, /* mapped without write permission */
};

/* Check [addr, addr + len) (len > 0, no wrap): every page mapped, and
 * writable when `write`, else readable - what the kernel's
 * get_user_pages asks of the pages a registration pins (FOLL_WRITE for a
 * writable registration).  *bad_p: the first page that fails.  When
 * /proc/self/maps cannot be read, only "mapped" is checked (mincore). */
enum sv_pages_fault sv_pages_check(const void *addr, size_t len, bool write,
				   uintptr_t *bad_p);

/* The same through the text of /proc/self/maps, never the ioctl: what a
 * kernel before 6.11 gets (the unit test compares both). */
enum sv_pages_fault sv_pages_check_text(const void *addr, size_t len,
					bool write, uintptr_t *bad_p);

/* "not mapped", "not readable", "not writable". */
const char *sv_pages_fault_str(enum sv_pages_fault f);

#endif
