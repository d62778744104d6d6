/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The small historical parts of the ABI: ibv_get_sysfs_path,
 * ibv_read_sysfs_file, the fork calls, the IBVERBS_1.0 compat symbols
 * (honest refusals) and ibv_register_driver@IBVERBS_1.1.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);
/* Historical: declared by no installed header any more. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

static char dir[] = "/tmp/sv-sysfs-XXXXXX";

static void put(const char *name, const void *data, size_t len)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

static void test_sysfs_path(void)
{
	pid_t pid;
	int st;

	/* Default, in a child that has not asked yet (the answer is cached). */
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		unsetenv("SYSFS_PATH");
		_exit(strcmp(ibv_get_sysfs_path(), "/sys") != 0);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* SYSFS_PATH relocates it, trailing slashes dropped. */
	setenv("SYSFS_PATH", "/tmp/fake-sys///", 1);
	CHECK(!strcmp(ibv_get_sysfs_path(), "/tmp/fake-sys"));
	setenv("SYSFS_PATH", "/elsewhere", 1);
	CHECK(!strcmp(ibv_get_sysfs_path(), "/tmp/fake-sys")); /* read once */
	unsetenv("SYSFS_PATH");
}

static void test_read_sysfs_file(void)
{
	char buf[64], *big, *out;
	const size_t big_len = 200000;
	struct ibv_device **list;

	REQUIRE(mkdtemp(dir));
	put("nl", "hello\n", 6);
	put("nonl", "xyz", 3);
	put("eight", "12345678", 8);
	put("seven_nl", "1234567\n", 8);
	put("empty", "", 0);

	memset(buf, 'Z', sizeof(buf));
	CHECK_EQ(ibv_read_sysfs_file(dir, "nl", buf, sizeof(buf)), 5);
	CHECK(!strcmp(buf, "hello"));
	CHECK_EQ(ibv_read_sysfs_file(dir, "nonl", buf, sizeof(buf)), 3);
	CHECK(!strcmp(buf, "xyz"));
	/* Exactly full without a newline: no room for the NUL -> refuse. */
	errno = 0;
	CHECK_EQ(ibv_read_sysfs_file(dir, "eight", buf, 8), -1);
	CHECK_EQ(errno, EOVERFLOW);
	CHECK_EQ(ibv_read_sysfs_file(dir, "eight", buf, 9), 8);
	CHECK(!strcmp(buf, "12345678"));
	/* Full, but the last byte is the newline: it becomes the NUL. */
	CHECK_EQ(ibv_read_sysfs_file(dir, "seven_nl", buf, 8), 7);
	CHECK(!strcmp(buf, "1234567"));
	/* Larger than the buffer: refused, not silently truncated. */
	errno = 0;
	CHECK_EQ(ibv_read_sysfs_file(dir, "nl", buf, 3), -1);
	CHECK_EQ(errno, EOVERFLOW);
	memset(buf, 'Z', sizeof(buf));
	CHECK_EQ(ibv_read_sysfs_file(dir, "empty", buf, sizeof(buf)), 0);
	CHECK_EQ(buf[0], '\0');
	errno = 0;
	CHECK_EQ(ibv_read_sysfs_file(dir, "missing", buf, sizeof(buf)), -1);
	CHECK_EQ(errno, ENOENT);
	errno = 0;
	CHECK_EQ(ibv_read_sysfs_file(NULL, "nl", buf, sizeof(buf)), -1);
	CHECK_EQ(errno, EINVAL);

	/* A real file from the system's sysfs-like trees. */
	CHECK(ibv_read_sysfs_file("/proc/sys/kernel", "ostype", buf,
				  sizeof(buf)) > 0);
	CHECK(!strcmp(buf, "Linux"));

	/* Large contents come back whole and byte-exact. */
	big = malloc(big_len);
	out = malloc(big_len + 1);
	REQUIRE(big && out);
	for (size_t i = 0; i < big_len; i++)
		big[i] = 'a' + i % 26;
	put("big", big, big_len);
	CHECK_EQ(ibv_read_sysfs_file(dir, "big", out, big_len + 1), big_len);
	CHECK(memcmp(out, big, big_len) == 0 && out[big_len] == '\0');
	free(big);
	free(out);

	/* What ibv_devinfo does with our device: no sysfs, a clean -1. */
	list = ibv_get_device_list(NULL);
	REQUIRE(list && list[0]);
	errno = 0;
	CHECK_EQ(ibv_read_sysfs_file(list[0]->ibdev_path, "board_id", buf,
				     sizeof(buf)),
		 -1);
	CHECK_EQ(errno, ENOENT);
	ibv_free_device_list(list);

	for (const char *const *f =
		     (const char *const[]){ "nl", "nonl", "eight", "seven_nl",
					    "empty", "big", NULL };
	     *f; f++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/%s", dir, *f);
		unlink(path);
	}
	rmdir(dir);
}

static void test_fork(void)
{
	char page[4096];

	CHECK_EQ(ibv_fork_init(), 0);
	CHECK_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	CHECK_EQ(ibv_dontfork_range(page, sizeof(page)), 0);
	CHECK_EQ(ibv_dofork_range(page, sizeof(page)), 0);
}

/* The 33 functions rdma-core 44 still exports at IBVERBS_1.0. */
static const char *const compat_1_0[] = {
	"ibv_ack_async_event", "ibv_ack_cq_events",    "ibv_alloc_pd",
	"ibv_attach_mcast",    "ibv_close_device",     "ibv_create_ah",
	"ibv_create_cq",       "ibv_create_qp",	       "ibv_create_srq",
	"ibv_dealloc_pd",      "ibv_dereg_mr",	       "ibv_destroy_ah",
	"ibv_destroy_cq",      "ibv_destroy_qp",       "ibv_destroy_srq",
	"ibv_detach_mcast",    "ibv_free_device_list", "ibv_get_async_event",
	"ibv_get_cq_event",    "ibv_get_device_guid",  "ibv_get_device_list",
	"ibv_get_device_name", "ibv_modify_qp",	       "ibv_modify_srq",
	"ibv_open_device",     "ibv_query_device",     "ibv_query_gid",
	"ibv_query_pkey",      "ibv_query_port",       "ibv_query_qp",
	"ibv_query_srq",       "ibv_reg_mr",	       "ibv_resize_cq",
};

static void test_compat(void)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *(*get_list)(int *);
	void *(*open_dev)(void *);
	int (*query_dev)(void *, void *);
	int (*query_gid)(void *, uint8_t, int, void *);
	uint64_t (*get_guid)(void *);
	void (*reg_driver)(const char *, void *);
	char scratch[1024];
	int n = 7;

	REQUIRE(h);
	for (size_t i = 0; i < sizeof(compat_1_0) / sizeof(compat_1_0[0]);
	     i++) {
		void *old = dlvsym(h, compat_1_0[i], "IBVERBS_1.0");

		if (!old)
			fprintf(stderr, "missing %s@IBVERBS_1.0\n",
				compat_1_0[i]);
		CHECK(old != NULL);
		/* never the current implementation under the old name */
		CHECK(old != dlvsym(h, compat_1_0[i], "IBVERBS_1.1"));
	}
	/* the implementation names stay private */
	CHECK(dlsym(h, "sv_compat_1_0_ibv_open_device") == NULL);
	CHECK(dlsym(h, "sv_compat_register_driver") == NULL);

	get_list = (void *(*)(int *))dlvsym(h, "ibv_get_device_list",
					    "IBVERBS_1.0");
	open_dev =
		(void *(*)(void *))dlvsym(h, "ibv_open_device", "IBVERBS_1.0");
	query_dev = (int (*)(void *, void *))dlvsym(h, "ibv_query_device",
						    "IBVERBS_1.0");
	query_gid = (int (*)(void *, uint8_t, int,
			     void *))dlvsym(h, "ibv_query_gid", "IBVERBS_1.0");
	get_guid = (uint64_t(*)(void *))dlvsym(h, "ibv_get_device_guid",
					       "IBVERBS_1.0");
	REQUIRE(get_list && open_dev && query_dev && query_gid && get_guid);

	errno = 0;
	CHECK(get_list(&n) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(open_dev(scratch) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(query_dev(scratch, scratch), EOPNOTSUPP);
	errno = 0;
	CHECK_EQ(query_gid(scratch, 1, 0, scratch), -1);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK_EQ(get_guid(scratch), 0);
	CHECK_EQ(errno, EOPNOTSUPP);

	/* ibv_register_driver@IBVERBS_1.1: accepted and ignored. */
	reg_driver = (void (*)(const char *, void *))dlvsym(
		h, "ibv_register_driver", "IBVERBS_1.1");
	REQUIRE(reg_driver);
	reg_driver("legacy", NULL);
	{
		struct ibv_device **list = ibv_get_device_list(&n);

		REQUIRE(list);
		CHECK_EQ(n, 1); /* still only softverbs0 */
		ibv_free_device_list(list);
	}
	dlclose(h);
}

int main(void)
{
	test_sysfs_path();
	test_read_sysfs_file();
	test_fork();
	test_compat();
	return check_done();
}
