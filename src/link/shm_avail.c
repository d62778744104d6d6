/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Is the shm link usable in this process, and if not, why?  Kept apart
 * from shm.c so that `softverbs devices` can compile it in and say so
 * without linking the engine.
 */
#include "link/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util/env.h"
#include "util/uid.h"

static pthread_once_t avail_once = PTHREAD_ONCE_INIT;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static int reg_err = -1; /* registry_dir's answer, -1 before it ran */
static const char *avail_why;
static bool avail_warn;
static unsigned long netns_ino;
static int reg_fd = -1;
static char reg_path[96];
static char reg_why[160];
static char reg_note[256]; /* what registry_dir did about a squatter */

/* A directory only we can write: mode without group or other access,
 * ours, opened (created with mode 0700 when missing) as a descriptor.
 * -1 when path is not that. */
static int private_dir(int at, const char *path)
{
	struct stat st;
	int fd;

	if (mkdirat(at, path, 0700) && errno != EEXIST)
		return -1;
	fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Where our user keeps the registry's secret: $XDG_RUNTIME_DIR (the
 * user's own run-time directory), else ~/.cache/softverbs.  -1: none. */
static int secret_dir(void)
{
	const char *run = secure_getenv("XDG_RUNTIME_DIR");
	const char *home = secure_getenv("HOME");
	int fd, cache;

	if (run && run[0] == '/') {
		fd = private_dir(AT_FDCWD, run);
		if (fd >= 0)
			return fd;
	}
	if (!home || home[0] != '/')
		return -1;
	fd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	cache = openat(fd, ".cache", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cache < 0 && mkdirat(fd, ".cache", 0700) == 0)
		cache = openat(fd, ".cache",
			       O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd);
	if (cache < 0)
		return -1;
	fd = private_dir(cache, "softverbs");
	close(cache);
	return fd;
}

/* The registry's secret: 32 hex digits made once per user and kept in
 * secret_dir(), the same for every process of the user and readable by
 * no other user.  false: no such place. */
static bool registry_secret(char hex[33])
{
	int dir = secret_dir(), fd;
	unsigned char r[16];
	struct stat st;
	bool ok = false;
	int i;

	if (dir < 0)
		return false;
	fd = openat(dir, "registry-secret",
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (getrandom(r, sizeof(r), 0) == (ssize_t)sizeof(r)) {
			for (i = 0; i < 16; i++)
				snprintf(hex + 2 * i, 3, "%02x", r[i]);
			ok = write(fd, hex, 32) == 32;
		}
		close(fd);
		if (!ok)
			unlinkat(dir, "registry-secret", 0);
	}
	if (!ok) { /* made by another process of ours, maybe just now */
		fd = openat(dir, "registry-secret",
			    O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && !fstat(fd, &st) && st.st_uid == geteuid() &&
		    !(st.st_mode & 077))
			ok = read(fd, hex, 32) == 32;
		if (fd >= 0)
			close(fd);
		for (i = 0; ok && i < 32; i++)
			ok = (hex[i] >= '0' && hex[i] <= '9') ||
			     (hex[i] >= 'a' && hex[i] <= 'f');
	}
	hex[32] = '\0';
	close(dir);
	return ok;
}

/* Our registry directory, SV_SHM_DIR.<euid>, mode 0700 and ours, open as
 * reg_fd; 0, or an errno with reg_why saying why not.
 *
 * Per user, directly in /dev/shm: no other user can create, replace or
 * read an entry in it, so nobody can push our processes off the fast path
 * by taking the names of our ports first (issue #17; a world-writable
 * directory shared by all users allowed that), and no process ever looks
 * at another user's entries (the fast path stays within one user).
 * What another user can still do is create the directory itself before
 * we ever do: it is then not ours and we refuse it, saying so; root (who
 * may move anything in the sticky /dev/shm) moves it aside instead. */
static int registry_dir(void)
{
	unsigned int uid = (unsigned int)geteuid();
	char aside[96];
	struct stat st;
	int fd, tries;

	snprintf(reg_path, sizeof(reg_path), SV_SHM_DIR ".%u", uid);
	/* Every other user's directory would look like ours. */
	if (sv_uid_ambiguous()) {
		snprintf(reg_why, sizeof(reg_why),
			 "uid %u is this process's uid as its user namespace "
			 "shows it, the overflow uid of users it does not map: "
			 "other users cannot be told from us",
			 uid);
		return EPERM;
	}
	for (tries = 0; tries < 3; tries++) {
		if (mkdir(reg_path, 0700) && errno != EEXIST) {
			snprintf(reg_why, sizeof(reg_why),
				 "registry %s: mkdir: %s", reg_path,
				 strerror(errno));
			return errno;
		}
		/* Whatever is there now, not what a name resolves to. */
		fd = open(reg_path,
			  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == uid) {
			/* Ours: only we may add or read entries. */
			if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700)) {
				close(fd);
				snprintf(reg_why, sizeof(reg_why),
					 "registry %s: chmod: %s", reg_path,
					 strerror(errno));
				return EPERM;
			}
			reg_fd = fd;
			return 0;
		}
		if (fd >= 0 && fstat(fd, &st) == 0)
			snprintf(
				reg_why, sizeof(reg_why),
				"registry %s belongs to uid %u, not to us (uid %u): remove it",
				reg_path, (unsigned int)st.st_uid, uid);
		else
			snprintf(
				reg_why, sizeof(reg_why),
				"registry %s is not a directory of ours: remove it",
				reg_path);
		if (fd >= 0)
			close(fd);
		if (uid != 0) {
			/* Another user took our name first: a name of ours
			 * that nobody else can know, from a secret only our
			 * user can read (once: that one cannot be taken). */
			char hex[33], taken[160];

			if (strchr(reg_path + sizeof(SV_SHM_DIR), '.') ||
			    !registry_secret(hex))
				return EPERM;
			snprintf(taken, sizeof(taken), "%s", reg_why);
			snprintf(reg_path, sizeof(reg_path),
				 SV_SHM_DIR ".%u.%s", uid, hex);
			snprintf(reg_note, sizeof(reg_note),
				 "%.140s; using %.80s instead", taken,
				 reg_path);
			continue;
		}
		/* Root: move the squatter's thing aside, then make ours (a
		 * process of ours that did it first leaves ENOENT here). */
		snprintf(aside, sizeof(aside),
			 "/dev/shm/.softverbs.%u.squatted.%d", uid,
			 (int)getpid());
		if (rename(reg_path, aside) == 0)
			snprintf(reg_note, sizeof(reg_note),
				 "registry %s was not ours: moved aside to %s",
				 reg_path, aside);
		else if (errno != ENOENT)
			return EPERM;
	}
	return EPERM;
}

static void reg_init(void)
{
	reg_err = registry_dir();
}

static void avail_init(void)
{
	struct stat st;
	uint64_t probe = 0x5eed, got = 0;
	struct iovec l = { &got, sizeof(got) }, r = { &probe, sizeof(probe) };
	int fd;

	if (!sv_env_fastpath()) {
		avail_why = "disabled by SOFTVERBS_FASTPATH=0";
		return;
	}
	if (stat("/proc/self/ns/net", &st)) {
		avail_why = "no /proc/self/ns/net (is /proc mounted?)";
		return;
	}
	netns_ino = (unsigned long)st.st_ino;
	fd = memfd_create("softverbs-probe", MFD_CLOEXEC);
	if (fd < 0) {
		avail_why = "memfd_create refused";
		return;
	}
	close(fd);
	pthread_once(&reg_once, reg_init);
	if (reg_err) {
		avail_why = reg_why;
		avail_warn = true;
		return;
	}
	/* A seccomp policy (containers) may forbid cross-memory attach. */
	if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != sizeof(got) ||
	    got != probe) {
		avail_why = "process_vm_readv refused (seccomp?)";
		return;
	}
	avail_why = NULL;
}

bool sv_shm_available(const char **why)
{
	pthread_once(&avail_once, avail_init);
	if (why)
		*why = avail_why;
	return !avail_why;
}

bool sv_shm_unavailable_warn(void)
{
	pthread_once(&avail_once, avail_init);
	return avail_warn;
}

const char *sv_shm_registry_note(void)
{
	pthread_once(&avail_once, avail_init);
	return reg_note[0] ? reg_note : NULL;
}

int sv_shm_registry_fd(void)
{
	pthread_once(&avail_once, avail_init);
	return reg_fd;
}

const char *sv_shm_registry_path(void)
{
	pthread_once(&avail_once, avail_init);
	return reg_path;
}

/* The live counters (engine/diag/statseg.c) use the directory whether or not
 * the fast path is on. */
int sv_shm_registry_dir(const char **why)
{
	pthread_once(&reg_once, reg_init);
	if (why)
		*why = reg_err ? reg_why : NULL;
	return reg_err ? -1 : reg_fd;
}

unsigned long sv_shm_netns(void)
{
	pthread_once(&avail_once, avail_init);
	return netns_ino;
}
