/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The standard RoCE v2 endpoint (see roce.h). */
#include "link/roce.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "link/shm.h"
#include "util/uid.h"

#define NO_INODE (~0ul)

/* A socket bound to local port `port` and the wildcard address (a
 * holder; multicast receivers bind their group's address) in one of the
 * kernel's /proc/net/udp tables of this namespace, other than the one of
 * inode `not` (NO_INODE: none excluded): its inode (0 for a kernel
 * socket such as rxe's; the lowest when there are several) and its
 * owner's uid as we see it.  1 when there is one, 0 not. */
static int port_inode(const char *table, uint16_t port, unsigned long not,
		      unsigned long *inode, unsigned int *uid)
{
	char line[512];
	int found = 0;
	FILE *f = fopen(table, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned int lport, u;
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
		if (sscanf(colon + 1, "%x %*s %*x %*s %*s %*x %u %*u %lu",
			   &lport, &u, &ino) == 3 &&
		    lport == port && ino != not &&(!found || ino < *inode)) {
			*inode = ino;
			*uid = u;
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* The same over both tables. */
static int wildcard_socket(unsigned long not, unsigned long *inode,
			   unsigned int *uid)
{
	unsigned long i6;
	unsigned int u6;
	int found = port_inode("/proc/net/udp", SV_ROCE_PORT, not, inode, uid);

	if (port_inode("/proc/net/udp6", SV_ROCE_PORT, not, &i6, &u6) &&
	    (!found || i6 < *inode)) {
		*inode = i6;
		*uid = u6;
		found = 1;
	}
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

/* Who holds the port, into why; true when it is a process of our user
 * (one that may forward to us). */
static bool holder(char *why, size_t whylen)
{
	static const char kernel[] =
		"the kernel (rxe, or a tunnel such as VXLAN, in this "
		"namespace?)";
	unsigned long inode = 0;
	unsigned int uid = 0;
	char comm[64];
	int pid;

	if (!wildcard_socket(NO_INODE, &inode, &uid)) {
		snprintf(why, whylen,
			 "held by a socket /proc/net/udp does "
			 "not show");
		return false;
	}
	if (!inode) {
		snprintf(why, whylen, "held by %s", kernel);
		return false;
	}
	pid = inode_pid(inode, comm, sizeof(comm));
	if (pid && sv_uid_mine((uid_t)uid)) {
		snprintf(why, whylen, "held by pid %d (%s)", pid, comm);
		return true;
	}
	if (pid)
		snprintf(why, whylen,
			 "held by another user's process (uid %u, pid %d, %s)",
			 uid, pid, comm);
	else if (sv_uid_mine((uid_t)uid) || uid == 0)
		/* No process of ours has it (root sees every process's): a
		 * socket the kernel made, root's or one we cannot see. */
		snprintf(why, whylen,
			 "held by %s%s: uid %u, socket inode %lu, in no "
			 "process we may look at",
			 uid == 0 && geteuid() != 0 ? "root's process or " : "",
			 kernel, uid, inode);
	else if (sv_uid_unmapped((uid_t)uid))
		snprintf(why, whylen,
			 "held by another user's process, root's or %s: a "
			 "uid this user namespace does not map, socket inode "
			 "%lu",
			 kernel, inode);
	else
		snprintf(why, whylen,
			 "held by another user's process (uid %u, socket "
			 "inode %lu)",
			 uid, inode);
	return false;
}

/* The election among our user's processes of this network namespace:
 * a lock on a file in our registry directory, which only our user can
 * enter (link/shm_avail.c), named after the namespace and released
 * however the process ends.  The fd; -1 and *err 0 when there is no such
 * directory or file (the port's own checks in sv_roce_open then decide
 * alone), or -1 and *err EADDRINUSE (a process of ours holds it) or the
 * errno of flock. */
static int roce_lock(int *err)
{
	int dir = sv_shm_registry_dir(NULL), fd;
	char name[48];
	struct stat st;

	*err = 0;
	if (dir < 0 || stat("/proc/self/ns/net", &st))
		return -1;
	snprintf(name, sizeof(name), "roce.%lu", (unsigned long)st.st_ino);
	fd = openat(dir, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1; /* no lock: as without the directory */
	if (!flock(fd, LOCK_EX | LOCK_NB))
		return fd;
	*err = errno == EWOULDBLOCK ? EADDRINUSE : errno;
	close(fd);
	return -1;
}

int sv_roce_open(struct sv_udp_sock *s, int *lock, char *why, size_t whylen,
		 bool *ours)
{
	unsigned long inode, mine;
	unsigned int uid;
	struct stat st;
	int fd, err;

	*ours = false;
	fd = roce_lock(&err);
	/* Our user's sockets may share the port (SO_REUSEPORT), and the
	 * kernel would spread unicast among them: bind only when no holder
	 * is there, and keep the port only if ours is still alone (a process
	 * that sees another /dev/shm, and so takes another lock, in the same
	 * network namespace; two that bound at once both let go and try
	 * again at their next retries). */
	if (!err && wildcard_socket(NO_INODE, &inode, &uid))
		err = EADDRINUSE;
	if (!err)
		err = sv_udp_open_shared(s, SV_ROCE_PORT);
	if (!err) {
		mine = fstat(s->fd, &st) ? NO_INODE : (unsigned long)st.st_ino;
		if (wildcard_socket(mine, &inode, &uid)) {
			sv_udp_close(s);
			err = EADDRINUSE;
		}
	}
	if (err && fd >= 0)
		close(fd);
	if (!err)
		*lock = fd;
	else if (err == EADDRINUSE)
		*ours = holder(why, whylen);
	else
		snprintf(why, whylen, "%s", strerror(err));
	return err;
}
