/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Is a uid the kernel reports ours?  The kernel shows every uid in the
 * reader's user namespace (SCM_CREDENTIALS, SO_PEERCRED, stat, /proc), and
 * shows a uid the namespace does not map as the overflow uid (65534 by
 * default).  A process whose own uid is unmapped there (`unshare --user`
 * without a map, some sandboxes) sees itself as that overflow uid too, so
 * an equality with geteuid() would take every other user's process for
 * ours.  The answer here holds in any user namespace and fails closed:
 * equal ids are ours only when our own uid is not the overflow uid, or
 * when the namespace maps every uid (the initial one), where the overflow
 * uid is a real user (docs/security.md).
 */
#ifndef SV_UTIL_UID_H
#define SV_UTIL_UID_H

#include <stdbool.h>
#include <sys/types.h>

/* True when `seen`, a uid as the kernel reports it to this process, is
 * our effective uid and could not be another user's. */
bool sv_uid_mine(uid_t seen);

/* True when this process cannot tell other users' processes from its own
 * by uid (its uid shows as the overflow uid of a partial namespace). */
bool sv_uid_ambiguous(void);

/* True when `seen` is the overflow uid standing for a uid our user
 * namespace does not map (it could be anyone). */
bool sv_uid_unmapped(uid_t seen);

#endif
