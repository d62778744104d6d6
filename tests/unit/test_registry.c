/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* White-box test of the shm link's registry (link/shm.c, shm_avail.c;
 * issue #17): the directory is our user's own (mode 0700, ours), and
 * registering a ring costs the same however many stale entries the
 * directory holds: with 20000 entries of a dead process present, eight
 * registrations read no entry at all (sv_shm_registry_examined), each
 * replaces a stale entry of its own port, and a peer lookup that meets a
 * stale entry refuses it. */
#include "link/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define STALE 20000u
#define RINGS 8u

static int dead_pid(void)
{
	pid_t pid = fork();

	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(0);
	REQUIRE(waitpid(pid, NULL, 0) == pid);
	return (int)pid; /* reaped: no process has it (for a while) */
}

static void entry_put(int dir, const char *name, int pid)
{
	char buf[96];
	int fd, n;

	n = snprintf(buf, sizeof(buf), "softverbs-shm 1 %d %u 3 4 -1\n", pid,
		     (unsigned int)geteuid());
	fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, buf, (size_t)n) == n);
	close(fd);
}

static int entry_pid(int dir, const char *name)
{
	char buf[96];
	int fd = openat(dir, name, O_RDONLY), n, ver, pid = -1;

	if (fd < 0)
		return -1;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (sscanf(buf, "softverbs-shm %d %d", &ver, &pid) != 2)
		return -1;
	return pid;
}

/* A UDP socket on an ephemeral port, as the engine's. */
static int udp_socket(uint16_t *port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	REQUIRE(fd >= 0);
	REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	REQUIRE(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	*port = ntohs(a.sin6_port);
	return fd;
}

int main(void)
{
	struct sv_shm_ring ring[RINGS];
	struct sv_shm_peer *peer, *stale;
	int sock[RINGS], dir, dead = dead_pid();
	unsigned long ns, before;
	const char *why;
	char name[48];
	struct stat st;
	uint16_t port;
	unsigned int i;

	if (!sv_shm_available(&why)) {
		printf("fast path unavailable (%s): nothing to test\n", why);
		return check_done();
	}
	dir = sv_shm_registry_fd();
	REQUIRE(dir >= 0);
	REQUIRE(fstat(dir, &st) == 0);
	CHECK(S_ISDIR(st.st_mode));
	CHECK_EQ(st.st_uid, geteuid());
	CHECK_EQ(st.st_mode & 07777, 0700);
	CHECK(strstr(sv_shm_registry_path(), SV_SHM_DIR ".") != NULL);
	ns = sv_shm_netns();

	/* Stale entries of a dead process on ports nobody uses here (below
	 * the ephemeral range our sockets get). */
	for (i = 1; i <= STALE; i++) {
		snprintf(name, sizeof(name), "%lu.%u", ns, i);
		entry_put(dir, name, dead);
	}
	before = sv_shm_registry_examined();
	for (i = 0; i < RINGS; i++) {
		sock[i] = udp_socket(&port);
		/* A stale entry of our own port too: replaced. */
		snprintf(name, sizeof(name), "%lu.%u", ns, port);
		entry_put(dir, name, dead);
		CHECK_EQ(sv_shm_ring_open(&ring[i], port, sock[i]), 0);
		CHECK_EQ(entry_pid(dir, name), (int)getpid());
	}
	/* No entry was read to register (the old registry read all). */
	CHECK_EQ(sv_shm_registry_examined() - before, 0);

	/* A peer of ours is found; a stale entry is refused. */
	CHECK_EQ(sv_shm_peer_attach(ring[0].port, &peer, &why), 0);
	if (!check_failed)
		CHECK(sv_shm_peer_current(peer));
	else
		peer = NULL;
	CHECK_EQ(sv_shm_peer_attach(7, &stale, &why), ENOENT);
	CHECK(!strcmp(why, "peer registry entry stale"));

	for (i = 0; i < RINGS; i++) {
		snprintf(name, sizeof(name), "%lu.%u", ns, ring[i].port);
		sv_shm_ring_close(&ring[i]);
		close(sock[i]);
		CHECK_EQ(entry_pid(dir, name), -1); /* ours went with it */
	}
	/* A peer mapping of a closed ring is no longer current, however
	 * recently its entry was checked. */
	if (peer) {
		CHECK(!sv_shm_peer_current(peer));
		sv_shm_peer_detach(peer);
	}
	for (i = 1; i <= STALE; i++) {
		snprintf(name, sizeof(name), "%lu.%u", ns, i);
		unlinkat(dir, name, 0);
	}
	return check_done();
}
