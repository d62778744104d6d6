/*
 * Is the shm link usable in this process, and if not, why?  Kept apart
 * from shm.c so that `softverbs devices` can compile it in and say so
 * without linking the engine.
 */
#include "link/shm.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util/env.h"

static pthread_once_t avail_once = PTHREAD_ONCE_INIT;
static const char *avail_why;
static unsigned long netns_ino;

static int registry_dir(void)
{
	struct stat st;

	if (mkdir(SV_SHM_DIR, 01777) == 0)
		chmod(SV_SHM_DIR, 01777); /* the umask narrowed it */
	else if (errno != EEXIST)
		return errno;
	if (lstat(SV_SHM_DIR, &st))
		return errno;
	if (!S_ISDIR(st.st_mode))
		return ENOTDIR;
	/* Shared by every user, like /tmp: only safe with the sticky bit
	 * (nobody removes or replaces another user's entries). */
	if ((st.st_mode & 0002) && !(st.st_mode & S_ISVTX))
		return EPERM;
	return access(SV_SHM_DIR, W_OK | X_OK) ? errno : 0;
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
	if (registry_dir()) {
		avail_why = "registry " SV_SHM_DIR " not usable";
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

unsigned long sv_shm_netns(void)
{
	pthread_once(&avail_once, avail_init);
	return netns_ino;
}
