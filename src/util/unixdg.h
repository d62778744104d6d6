/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Unix datagram sockets between one user's processes, in the abstract
 * namespace (per network namespace, freed when the last descriptor
 * closes, however the process ends).  The abstract namespace has no
 * permissions, so trust comes from the kernel: a socket made here asks
 * for the sender's credentials (SO_PASSCRED), and a datagram is taken
 * only when its sender's uid is our effective uid in a way no other user
 * can match in any user namespace (util/uid.h, docs/security.md).
 */
#ifndef SV_UTIL_UNIXDG_H
#define SV_UTIL_UNIXDG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

/* A datagram socket with SO_PASSCRED: its fd, or -1 (errno set). */
int sv_unixdg_socket(void);

/* One datagram into buf (nonblocking).  *got: its length, or -1 with
 * errno.  True when it came whole from a process of our effective uid,
 * by sv_uid_mine, or from this process (*pid: its pid, if pid). */
bool sv_unixdg_recv_mine(int fd, void *buf, size_t size, ssize_t *got,
			 struct sockaddr_un *from, socklen_t *fromlen,
			 pid_t *pid);

#endif
