/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Unix datagram sockets between one user's processes (see unixdg.h). */
#include "util/unixdg.h"

#include <string.h>
#include <unistd.h>

#include "util/uid.h"

int sv_unixdg_socket(void)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd >= 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

bool sv_unixdg_recv_mine(int fd, void *buf, size_t size, ssize_t *got,
			 struct sockaddr_un *from, socklen_t *fromlen,
			 pid_t *pid)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr m = {
		.msg_name = from,
		.msg_namelen = from ? sizeof(*from) : 0,
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.b,
		.msg_controllen = sizeof(ctl.b),
	};
	struct cmsghdr *c;
	bool mine = false;

	*got = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (*got < 0)
		return false;
	if (fromlen)
		*fromlen = m.msg_namelen;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		struct ucred cr;

		if (c->cmsg_level != SOL_SOCKET ||
		    c->cmsg_type != SCM_CREDENTIALS)
			continue;
		memcpy(&cr, CMSG_DATA(c), sizeof(cr));
		/* Our own process is ours in any namespace: the kernel
		 * lets a sender name only its own pid (or one of a pid
		 * namespace it administers, never ours). */
		mine = sv_uid_mine(cr.uid) || cr.pid == getpid();
		if (pid)
			*pid = cr.pid;
	}
	return mine && !(m.msg_flags & MSG_TRUNC);
}
