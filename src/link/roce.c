/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The standard RoCE v2 endpoint (see roce.h). */
#include "link/roce.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The inode of a socket bound to local port `port` and the wildcard
 * address (the holder; multicast receivers bind their group's address)
 * in one of the kernel's /proc/net/udp tables of this namespace: 1 found
 * (*inode, 0 for a kernel socket such as rxe's), 0 not there. */
static int port_inode(const char *table, uint16_t port, unsigned long *inode)
{
	char line[512];
	int found = 0;
	FILE *f = fopen(table, "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned int lport;
		unsigned long ino;
		char *addr = strchr(line, ':'), *colon;

		/* "sl: local_addr:port rem_addr:port st tx:rx tr:when
		 * retrnsmt uid timeout inode" */
		if (!addr || !(colon = strchr(addr + 1, ':')))
			continue;
		addr += strspn(addr + 1, " ") + 1;
		if (addr == colon ||
		    strspn(addr, "0") != (size_t)(colon - addr))
			continue; /* not the wildcard address */
		if (sscanf(colon + 1, "%x %*s %*x %*s %*s %*x %*u %*u %lu",
			   &lport, &ino) == 2 &&
		    lport == port) {
			*inode = ino;
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* The pid of a process with the socket open (0: none we may look at). */
static int inode_pid(unsigned long inode, char *comm, size_t commlen)
{
	char want[64], path[600], link[64];
	struct dirent *p, *fd;
	DIR *procs, *fds;
	int pid = 0;

	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	procs = opendir("/proc");
	if (!procs)
		return 0;
	while (!pid && (p = readdir(procs))) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		fds = opendir(path);
		if (!fds)
			continue; /* another user's process */
		while (!pid && (fd = readdir(fds))) {
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%s/fd/%s",
				 p->d_name, fd->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n > 0 && (link[n] = 0, !strcmp(link, want)))
				pid = atoi(p->d_name);
		}
		closedir(fds);
	}
	closedir(procs);
	if (pid) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		comm[0] = 0;
		f = fopen(path, "r");
		if (f) {
			if (fgets(comm, (int)commlen, f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
	}
	return pid;
}

static void holder(char *why, size_t whylen)
{
	unsigned long inode = 0;
	char comm[64];
	int pid;

	if (!port_inode("/proc/net/udp", SV_ROCE_PORT, &inode) &&
	    !port_inode("/proc/net/udp6", SV_ROCE_PORT, &inode)) {
		snprintf(why, whylen,
			 "held by a socket /proc/net/udp does "
			 "not show");
		return;
	}
	if (!inode) {
		snprintf(why, whylen,
			 "held by the kernel (rxe or another "
			 "RoCE device in this namespace?)");
		return;
	}
	pid = inode_pid(inode, comm, sizeof(comm));
	if (pid)
		snprintf(why, whylen, "held by pid %d (%s)", pid, comm);
	else
		snprintf(why, whylen,
			 "held by another user's process "
			 "(socket inode %lu)",
			 inode);
}

/* The namespace's lock (roce.h): an abstract AF_UNIX name, which the
 * kernel keeps per network namespace and frees when its last descriptor
 * closes, however the process ends.  The fd, or -errno. */
static int roce_lock(void)
{
	static const char name[] = "\0softverbs-roce-4791";
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	memcpy(a.sun_path, name, sizeof(name) - 1);
	if (!bind(fd, (struct sockaddr *)&a,
		  (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			      sizeof(name) - 1)))
		return fd;
	err = errno;
	close(fd);
	return -err;
}

int sv_roce_open(struct sv_udp_sock *s, int *lock, char *why, size_t whylen)
{
	int fd = roce_lock(), err;

	if (fd < 0) {
		err = -fd;
	} else {
		err = sv_udp_open_shared(s, SV_ROCE_PORT);
		if (err)
			close(fd);
		else
			*lock = fd;
	}
	if (err == EADDRINUSE)
		holder(why, whylen);
	else if (err)
		snprintf(why, whylen, "%s", strerror(err));
	return err;
}
