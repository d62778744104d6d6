/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Process-wide odds and ends of the libibverbs ABI: the sysfs helpers
 * (ibv_devinfo and old programs call them), fork safety, and the old
 * provider-registration entry point that rdma-core keeps for binaries
 * linked against libibverbs 1.1.
 */
#include "verbs/verbs.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/env.h"
#include "util/log.h"

/* Historical prototypes: rdma-core moved them to its private driver.h,
 * which Debian does not install; the symbols stay in the ABI. */
const char *ibv_get_sysfs_path(void);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);

/* ---- sysfs ---------------------------------------------------------------- */

/* SYSFS_PATH relocates sysfs (containers, tests); util/env.c reads it. */
SV_EXPORT const char *ibv_get_sysfs_path(void)
{
	return sv_env_sysfs_path();
}

/*
 * Read the file dir/file into buf as a string: at most size bytes, the
 * trailing newline that sysfs attributes end with replaced by a NUL.
 * Returns the string length, or -1 with errno set (the open or read
 * error, or EOVERFLOW when the contents do not fit with their NUL:
 * returning a truncated value would let callers act on wrong data).
 *
 * softverbs0 has no sysfs directory (its ibdev_path names a path that
 * does not exist), so reads of its attributes fail with ENOENT and
 * callers such as ibv_devinfo simply skip the attribute.
 */
SV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
				  size_t size)
{
	size_t len = 0;
	char *path;
	int fd, err;

	if (!dir || !file || (!buf && size)) {
		errno = EINVAL;
		return -1;
	}
	if (asprintf(&path, "%s/%s", dir, file) < 0) {
		errno = ENOMEM;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	err = errno;
	free(path);
	if (fd < 0) {
		errno = err;
		return -1;
	}
	/* Regular files may return short reads: read until EOF or full. */
	while (len < size) {
		ssize_t n = read(fd, buf + len, size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			close(fd);
			errno = err;
			return -1;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);

	if (len > 0 && buf[len - 1] == '\n') {
		buf[--len] = '\0';
	} else if (len < size) {
		buf[len] = '\0';
	} else if (size) {
		errno = EOVERFLOW;
		return -1;
	}
	if (len > (size_t)INT32_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
	return (int)len;
}

/* ---- fork ------------------------------------------------------------------ */

/*
 * rdma-core needs ibv_fork_init because a device DMAs into pinned
 * physical pages: after fork, copy-on-write would leave the device writing
 * into pages the parent no longer maps.  softverbs pins nothing: the engine
 * reads and writes a registered region through the owning process's
 * virtual addresses, so after fork the parent keeps seeing its own memory
 * and the child gets an ordinary copy.  Fork is therefore always safe
 * (objects inherited by the child are unusable there, as with rdma-core:
 * the child has no progress thread).
 */
SV_EXPORT int ibv_fork_init(void)
{
	return 0;
}

SV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

/* Nothing is marked MADV_DONTFORK, so there is nothing to undo or do. */
SV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

SV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

/* ---- ibv_register_driver@IBVERBS_1.1 --------------------------------------- */

/*
 * Providers of libibverbs 1.1 called this to register themselves.  It is a
 * compat-only symbol in rdma-core 44 (the provider interface became private
 * in rdma-core 13) and softverbs loads no providers at all: a program or
 * old plugin calling it gets no device from it, which we say once.
 *
 * The implementation needs default visibility for the .symver alias to be
 * exported; its own name is made local by the map's "local: *".
 */
SV_EXPORT __attribute__((used)) void sv_compat_register_driver(const char *name,
							       void *init_func)
{
	static atomic_flag warned = ATOMIC_FLAG_INIT;

	if (!atomic_flag_test_and_set(&warned))
		sv_warn("ibv_register_driver(\"%s\") ignored: softverbs loads no provider drivers",
			name ? name : "");
}
SV_COMPAT_SYMBOL(sv_compat_register_driver, ibv_register_driver, "IBVERBS_1.1");
