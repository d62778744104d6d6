/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A kernel-shaped presence for programs that look for one.
 *
 * Middleware probes the kernel's files before it uses verbs: UCX skips a
 * device whose /dev/infiniband/<dev_name> is not an accessible character
 * device, Open MPI's openib gives up without /sys/class/infiniband, others
 * read node_guid, ports/N/state or ports/N/gid_attrs/ from sysfs.  This
 * file makes those paths exist, with contents taken from our library's own
 * queries (this tool is linked against our libibverbs):
 *
 *   /dev/infiniband/<dev_name>, /dev/infiniband/rdma_cm
 *       bind mounts of /dev/null: a world-read-write character device,
 *       which is all the probes ask for (our library never opens them)
 *   /sys/class/infiniband/<name>/...         node and port attributes, GIDs
 *   /sys/class/infiniband_verbs/<dev_name>/  ibdev, abi_version, dev
 *
 * sysfs cannot hold new directories, and /dev is shared by the whole
 * machine, so both are covered by a tmpfs on which every original entry is
 * put back: symlinks with their original targets, directories and files as
 * bind mounts of the originals (so /sys/class/net stays live and /dev/shm
 * is the very same filesystem: the shared-memory fast path is unaffected).
 *
 * `run` does this in a private mount namespace, so only the command and
 * its descendants see it.  root unshares the mount namespace alone; other
 * users need a user namespace to own it, mapping their own uid and gid to
 * themselves so that the command keeps both and has no capabilities after
 * exec.  All `run`s of one user share one user namespace: the kernel lets
 * a process read another's memory (process_vm_readv, /proc/PID/fd: the fast
 * path) only within one user namespace or from an ancestor's owner.
 *
 * `setup` builds the same view in the current mount namespace, for a
 * container or CI machine set up once as root; `setup --undo` removes it.
 */
#include "presence.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/env.h"

/* The source name of our tmpfs mounts: how `setup --undo` (and a reader of
 * /proc/self/mountinfo) tells them from anyone else's. */
#define MNT_SOURCE "softverbs"
#define DEV_IB "/dev/infiniband"
#define SYS_CLASS "/sys/class"
/* Where the runs of one user find their shared user namespace. */
#define USERNS_REG "/dev/shm/softverbs-userns"

/* The kernel's uverbs ABI (class attribute abi_version, IB_USER_VERBS_ABI_VERSION). */
#define UVERBS_CLASS_ABI 6

/* What failed, for the one-line report: the first failure that stopped
 * us, after the ones of ways tried before (root's unshare, then a user
 * namespace), separated by "; ". */
static char why[512];

static int failed(const char *fmt, ...)
{
	size_t len = strlen(why);
	va_list ap;
	int err = errno;

	if (len && len < sizeof(why) - 2) {
		strcpy(why + len, "; ");
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(why + len, sizeof(why) - len, fmt, ap);
	va_end(ap);
	errno = err;
	return -1;
}

/* ---- files ---------------------------------------------------------------- */

static int mkdirs(const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	char *p;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	for (p = path + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return failed("mkdir %s: %s", path, strerror(errno));
		*p = c;
		if (!c)
			return 0;
	}
}

/* put(VALUE, PATH-FORMAT, ...): a read-only file holding VALUE and a
 * newline, as sysfs attributes read. */
static int put(const char *value, const char *fmt, ...)
{
	char path[PATH_MAX];
	size_t len = strlen(value);
	va_list ap;
	int fd;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0)
		return failed("create %s: %s", path, strerror(errno));
	if (write(fd, value, len) != (ssize_t)len || write(fd, "\n", 1) != 1) {
		failed("write %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* A bind mount of SRC on a new file (or directory) DST. */
static int bind_on(const char *src, const char *dst, bool dir, bool rec)
{
	int fd;

	if (dir) {
		if (mkdir(dst, 0755) && errno != EEXIST)
			return failed("mkdir %s: %s", dst, strerror(errno));
	} else {
		fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0);
		if (fd < 0)
			return failed("create %s: %s", dst, strerror(errno));
		close(fd);
	}
	if (mount(src, dst, NULL, MS_BIND | (rec ? MS_REC : 0), NULL))
		return failed("bind mount %s on %s: %s", src, dst,
			      strerror(errno));
	return 0;
}

static int mount_tmpfs(const char *dst)
{
	if (mount(MNT_SOURCE, dst, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=755"))
		return failed("mount tmpfs on %s: %s", dst, strerror(errno));
	return 0;
}

/* Once filled: nobody adds to sysfs or to our /dev, and neither should the
 * command (the bind mounts under it keep their own flags). */
static int make_readonly(const char *dst)
{
	if (mount(NULL, dst, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
			  MS_NOEXEC,
		  NULL))
		return failed("remount %s read-only: %s", dst, strerror(errno));
	return 0;
}

static bool in_list(const char *name, const char *const *list)
{
	for (; list && *list; list++)
		if (!strcmp(name, *list))
			return true;
	return false;
}

/*
 * Put every entry of the directory SRCFD (opened before DST was covered)
 * back under DST: symlinks with the same (relative) targets, everything
 * else as a bind mount of the original, so it stays the original and live.
 * Entries named in MERGE become directories of their own whose entries
 * are mirrored one level down, so that ours can be added beside them (a
 * host with a kernel RDMA stack keeps its devices).
 */
static int mirror(int srcfd, const char *dst, const char *const *merge)
{
	int dfd = dup(srcfd);
	struct dirent *e;
	DIR *d;
	int ret = 0;

	if (dfd < 0)
		return failed("dup: %s", strerror(errno));
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return failed("read directory %s: %s", dst, strerror(errno));
	}
	rewinddir(d);
	while (!ret && (errno = 0, e = readdir(d))) {
		char src[PATH_MAX], to[PATH_MAX], target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", srcfd,
			 e->d_name);
		snprintf(to, sizeof(to), "%s/%s", dst, e->d_name);
		if (fstatat(srcfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
			if (errno == ENOENT)
				continue; /* gone meanwhile */
			ret = failed("stat %s: %s", to, strerror(errno));
		} else if (S_ISLNK(st.st_mode)) {
			n = readlinkat(srcfd, e->d_name, target,
				       sizeof(target) - 1);
			if (n < 0) {
				ret = failed("readlink %s: %s", to,
					     strerror(errno));
				break;
			}
			target[n] = '\0';
			if (symlink(target, to))
				ret = failed("symlink %s: %s", to,
					     strerror(errno));
		} else if (S_ISDIR(st.st_mode) && in_list(e->d_name, merge)) {
			int sub = openat(srcfd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (sub < 0) {
				ret = failed("open %s: %s", to,
					     strerror(errno));
				break;
			}
			if (mkdir(to, 0755))
				ret = failed("mkdir %s: %s", to,
					     strerror(errno));
			else
				ret = mirror(sub, to, NULL);
			close(sub);
		} else {
			ret = bind_on(src, to, S_ISDIR(st.st_mode), true);
		}
	}
	if (!ret && errno)
		ret = failed("read directory %s: %s", dst, strerror(errno));
	closedir(d);
	return ret;
}

/* Cover DIR with a tmpfs holding its original entries, MERGE as above. */
static int cover(const char *dir, const char *const *merge)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return failed("open %s: %s", dir, strerror(errno));
	ret = mount_tmpfs(dir);
	if (!ret)
		ret = mirror(fd, dir, merge);
	close(fd);
	return ret;
}

/* ---- the device's files, from the library's queries ------------------------ */

static void guid_str(__be64 be, char *buf, size_t len)
{
	uint64_t g = be64toh(be);

	snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
		 (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff,
		 (unsigned)g & 0xffff);
}

/* The kernel's spelling of each attribute (drivers/infiniband/core/sysfs.c). */
static const char *port_state_name(enum ibv_port_state s)
{
	static const char *const names[] = {
		"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] :
								"UNKNOWN";
}

static const char *phys_state_name(uint8_t s)
{
	static const char *const names[] = { "<unknown>",
					     "Sleep",
					     "Polling",
					     "Disabled",
					     "PortConfigurationTraining",
					     "LinkUp",
					     "LinkErrorRecovery",
					     "Phy Test" };

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "<unknown>";
}

static int width_lanes(uint8_t w)
{
	switch (w) {
	case 1:
		return 1;
	case 2:
		return 4;
	case 4:
		return 8;
	case 8:
		return 12;
	case 16:
		return 2;
	default:
		return -1;
	}
}

/* ports/N/rate: "%d%s Gb/sec (%dX%s)", tenths of Gb/s per lane by speed. */
static void rate_str(const struct ibv_port_attr *pa, char *buf, size_t len)
{
	static const struct {
		uint8_t speed;
		int tenths;
		const char *name;
	} speeds[] = { { 2, 50, " DDR" },    { 4, 100, " QDR" },
		       { 8, 100, " FDR10" }, { 16, 140, " FDR" },
		       { 32, 250, " EDR" },  { 64, 500, " HDR" },
		       { 128, 1000, " NDR" } };
	int lanes = width_lanes(pa->active_width), rate = 25;
	const char *name = " SDR";

	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (pa->active_speed == speeds[i].speed) {
			rate = speeds[i].tenths;
			name = speeds[i].name;
		}
	if (lanes < 0) {
		buf[0] = '\0';
		return;
	}
	rate *= lanes;
	snprintf(buf, len, "%d%s Gb/sec (%dX%s)", rate / 10,
		 rate % 10 ? ".5" : "", lanes, name);
}

static const char *gid_type_name(uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_IB:
		return "IB/RoCE v1";
	case IBV_GID_TYPE_ROCE_V1:
		return "IB/RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	default:
		return "unknown";
	}
}

static int write_port(struct ibv_context *ctx, const char *base, uint8_t port)
{
	struct ibv_port_attr pa;
	char buf[128], link[PATH_MAX + 32], target[64], ifname[IF_NAMESIZE];
	int i, ret;

	ret = ibv_query_port(ctx, port, &pa);
	if (ret) {
		errno = ret;
		return failed("ibv_query_port(%u): %s", port, strerror(ret));
	}
	if (mkdirs("%s/ports/%u/gids", base, port) ||
	    mkdirs("%s/ports/%u/gid_attrs/types", base, port) ||
	    mkdirs("%s/ports/%u/gid_attrs/ndevs", base, port) ||
	    mkdirs("%s/ports/%u/pkeys", base, port) ||
	    mkdirs("%s/device/net", base))
		return -1;
	snprintf(buf, sizeof(buf), "%d: %s", pa.state,
		 port_state_name(pa.state));
	if (put(buf, "%s/ports/%u/state", base, port))
		return -1;
	snprintf(buf, sizeof(buf), "%u: %s", pa.phys_state,
		 phys_state_name(pa.phys_state));
	if (put(buf, "%s/ports/%u/phys_state", base, port))
		return -1;
	if (put(pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" :
							   "InfiniBand",
		"%s/ports/%u/link_layer", base, port))
		return -1;
	snprintf(buf, sizeof(buf), "0x%x", pa.lid);
	if (put(buf, "%s/ports/%u/lid", base, port))
		return -1;
	snprintf(buf, sizeof(buf), "0x%x", pa.sm_lid);
	if (put(buf, "%s/ports/%u/sm_lid", base, port))
		return -1;
	snprintf(buf, sizeof(buf), "%u", pa.lmc);
	if (put(buf, "%s/ports/%u/lid_mask_count", base, port))
		return -1;
	snprintf(buf, sizeof(buf), "%u", pa.sm_sl);
	if (put(buf, "%s/ports/%u/sm_sl", base, port))
		return -1;
	snprintf(buf, sizeof(buf), "0x%08x", pa.port_cap_flags);
	if (put(buf, "%s/ports/%u/cap_mask", base, port))
		return -1;
	rate_str(&pa, buf, sizeof(buf));
	if (buf[0] && put(buf, "%s/ports/%u/rate", base, port))
		return -1;
	for (i = 0; i < pa.pkey_tbl_len; i++) {
		__be16 pkey;

		if (ibv_query_pkey(ctx, port, i, &pkey))
			break;
		snprintf(buf, sizeof(buf), "0x%04x", be16toh(pkey));
		if (put(buf, "%s/ports/%u/pkeys/%d", base, port, i))
			return -1;
	}
	/* Every slot of the table has a gids/N (zeros when empty), as in the
	 * kernel; types/N and ndevs/N exist for the valid ones only (the
	 * kernel's fail to read for the others). */
	for (i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		const uint8_t *g = e.gid.raw;

		ret = ibv_query_gid_ex(ctx, port, i, &e, 0);
		if (ret && ret != ENODATA) {
			errno = ret;
			return failed("ibv_query_gid_ex(%u, %d): %s", port, i,
				      strerror(ret));
		}
		if (ret)
			memset(&e, 0, sizeof(e));
		snprintf(buf, sizeof(buf),
			 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
			 "%02x%02x:%02x%02x:%02x%02x:%02x%02x",
			 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8],
			 g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
		if (put(buf, "%s/ports/%u/gids/%d", base, port, i))
			return -1;
		if (ret)
			continue;
		if (put(gid_type_name(e.gid_type),
			"%s/ports/%u/gid_attrs/types/%d", base, port, i))
			return -1;
		if (!e.ndev_ifindex || !if_indextoname(e.ndev_ifindex, ifname))
			continue;
		if (put(ifname, "%s/ports/%u/gid_attrs/ndevs/%d", base, port,
			i))
			return -1;
		/* device/net/<netdev>, as under a PCI function: each
		 * netdev that carries our GIDs, a link to /sys/class/net's
		 * (from infiniband/<dev>/device/net/ up to /sys/class). */
		snprintf(link, sizeof(link), "%s/device/net/%s", base, ifname);
		snprintf(target, sizeof(target), "../../../../net/%s", ifname);
		if (symlink(target, link) && errno != EEXIST)
			return failed("symlink %s: %s", link, strerror(errno));
	}
	return 0;
}

static void node_desc(const char *name, char *buf, size_t len)
{
	char host[256] = "";

	/* rdma-ndd's default node description: "%h %d", host and device. */
	if (gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "localhost");
	snprintf(buf, len, "%s %s", host, name);
}

/* The tool's own context is none of the command's diagnostics: with
 * SOFTVERBS_STATS or SOFTVERBS_TRACE set for the command, our query would
 * print a block of its own.  They are unset around it and set again. */
static const char *const quiet_vars[] = { "SOFTVERBS_STATS",
					  "SOFTVERBS_TRACE" };
static char *quiet_vals[2];

static void quiet(bool on)
{
	for (int i = 0; i < 2; i++) {
		const char *v = getenv(quiet_vars[i]);

		if (on && v) {
			quiet_vals[i] = strdup(v);
			unsetenv(quiet_vars[i]);
		} else if (!on && quiet_vals[i]) {
			setenv(quiet_vars[i], quiet_vals[i], 1);
			free(quiet_vals[i]);
			quiet_vals[i] = NULL;
		}
	}
}

/* Everything under SYS_CLASS/infiniband/<name> and infiniband_verbs/. */
static int write_sysfs(struct ibv_device *dev, dev_t node)
{
	const char *name = ibv_get_device_name(dev);
	char base[PATH_MAX], buf[256];
	struct ibv_device_attr da;
	struct ibv_context *ctx;
	uint8_t p;
	int ret = -1;

	quiet(true);
	ctx = ibv_open_device(dev);
	if (!ctx) {
		quiet(false);
		return failed("ibv_open_device(%s): %s", name, strerror(errno));
	}
	if (ibv_query_device(ctx, &da)) {
		failed("ibv_query_device(%s) failed", name);
		goto out;
	}
	snprintf(base, sizeof(base), SYS_CLASS "/infiniband/%s", name);
	if (mkdirs("%s", base))
		goto out;
	snprintf(buf, sizeof(buf), "%d: %s", dev->node_type,
		 dev->node_type == IBV_NODE_CA	   ? "CA" :
		 dev->node_type == IBV_NODE_SWITCH ? "switch" :
		 dev->node_type == IBV_NODE_ROUTER ? "router" :
		 dev->node_type == IBV_NODE_RNIC   ? "RNIC" :
						     "<unknown>");
	if (put(buf, "%s/node_type", base))
		goto out;
	guid_str(da.node_guid, buf, sizeof(buf));
	if (put(buf, "%s/node_guid", base))
		goto out;
	guid_str(da.sys_image_guid, buf, sizeof(buf));
	if (put(buf, "%s/sys_image_guid", base))
		goto out;
	if (put(da.fw_ver, "%s/fw_ver", base))
		goto out;
	snprintf(buf, sizeof(buf), "%x", da.hw_ver);
	if (put(buf, "%s/hw_rev", base))
		goto out;
	/* What ibstat prints as "CA type" (a driver's own attribute: mlx5
	 * names its chip, rxe has none and leaves the line empty). */
	if (put("softverbs", "%s/hca_type", base))
		goto out;
	node_desc(name, buf, sizeof(buf));
	if (put(buf, "%s/node_desc", base))
		goto out;
	for (p = 1; p <= da.phys_port_cnt; p++)
		if (write_port(ctx, base, p))
			goto out;

	/* The uverbs class: the char device's attributes. */
	if (mkdirs(SYS_CLASS "/infiniband_verbs/%s", dev->dev_name))
		goto out;
	snprintf(buf, sizeof(buf), "%d", UVERBS_CLASS_ABI);
	if (access(SYS_CLASS "/infiniband_verbs/abi_version", F_OK) &&
	    put(buf, SYS_CLASS "/infiniband_verbs/abi_version"))
		goto out;
	if (put(name, SYS_CLASS "/infiniband_verbs/%s/ibdev", dev->dev_name))
		goto out;
	/* The driver's ABI: there is no kernel driver; 1 is a value every
	 * rdma-core provider range starts from. */
	if (put("1", SYS_CLASS "/infiniband_verbs/%s/abi_version",
		dev->dev_name))
		goto out;
	/* dev: the number of the node we put in /dev/infiniband, so that
	 * stat() and sysfs agree. */
	snprintf(buf, sizeof(buf), "%u:%u", major(node), minor(node));
	if (put(buf, SYS_CLASS "/infiniband_verbs/%s/dev", dev->dev_name))
		goto out;
	ret = 0;
out:
	ibv_close_device(ctx);
	quiet(false);
	return ret;
}

/* /dev/infiniband/<dev_name> and rdma_cm: /dev/null, a character device
 * everybody may read and write.  NULLDEV: where /dev/null is now. */
static int write_nodes(struct ibv_device *dev, const char *nulldev)
{
	char path[PATH_MAX];

	if (mkdirs(DEV_IB))
		return -1;
	snprintf(path, sizeof(path), DEV_IB "/%s", dev->dev_name);
	if (bind_on(nulldev, path, false, false))
		return -1;
	if (access(DEV_IB "/rdma_cm", F_OK) &&
	    bind_on(nulldev, DEV_IB "/rdma_cm", false, false))
		return -1;
	return 0;
}

/* ---- the device ------------------------------------------------------------ */

static struct ibv_device **dev_list;

static struct ibv_device *our_device(void)
{
	int n;

	/* No context yet: listing starts no thread (unshare(CLONE_NEWUSER)
	 * wants a single-threaded caller). */
	if (!dev_list)
		dev_list = ibv_get_device_list(&n);
	if (!dev_list || !dev_list[0]) {
		failed("ibv_get_device_list: %s",
		       dev_list ? "no device" : strerror(errno));
		return NULL;
	}
	return dev_list[0];
}

/* The files are there already: `softverbs setup`, or an enclosing run. */
static bool present(struct ibv_device *dev)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), DEV_IB "/%s", dev->dev_name);
	if (stat(path, &st) || !S_ISCHR(st.st_mode))
		return false;
	snprintf(path, sizeof(path), SYS_CLASS "/infiniband/%s",
		 ibv_get_device_name(dev));
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- namespaces ------------------------------------------------------------ */

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return failed("open %s: %s", path, strerror(errno));
	n = write(fd, text, strlen(text));
	if (n != (ssize_t)strlen(text)) {
		failed("write '%s' to %s: %s", text, path,
		       n < 0 ? strerror(errno) : "short write");
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * A new user namespace in which our uid and gid are themselves.
 *
 * A child makes it and the parent, still outside, writes the child's maps
 * and then joins: the ids written are the parent's real ones (inside an
 * unmapped namespace geteuid() is already the overflow id), and when the
 * kernel refuses any step the caller is still where it was, so the
 * command runs under its own uid without the files, never as another one.
 */
static int new_userns(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int go[2], made[2], nsfd = -1, ret = -1;
	char path[64], map[64], c = 0;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC))
		return failed("pipe: %s", strerror(errno));
	if (pipe2(made, O_CLOEXEC)) {
		failed("pipe: %s", strerror(errno));
		goto close_go;
	}
	pid = fork();
	if (pid < 0) {
		failed("fork: %s", strerror(errno));
		goto close_made;
	}
	if (pid == 0) {
		/* The child only holds the namespace until the parent is in. */
		close(go[1]);
		close(made[0]);
		c = unshare(CLONE_NEWUSER) ? (char)errno : 0;
		(void)!write(made[1], &c, 1);
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	close(made[1]);
	made[1] = -1;
	if (read(made[0], &c, 1) != 1) {
		failed("the namespace's maker died");
		goto reap;
	}
	if (c) {
		errno = c;
		failed("unshare(CLONE_NEWUSER): %s", strerror(errno));
		goto reap;
	}
	/* An unprivileged gid_map needs setgroups denied first. */
	snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
	if (write_file(path, "deny"))
		goto reap;
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	if (write_file(path, map))
		goto reap;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	if (write_file(path, map))
		goto reap;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0) {
		failed("open %s: %s", path, strerror(errno));
		goto reap;
	}
	/* The owner has every capability in the namespace, setns included. */
	if (setns(nsfd, CLONE_NEWUSER))
		failed("setns into the new user namespace: %s",
		       strerror(errno));
	else
		ret = 0;
	close(nsfd);
reap:
	close(go[1]); /* lets the child go */
	go[1] = -1;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
close_made:
	if (made[1] >= 0)
		close(made[1]);
	close(made[0]);
close_go:
	if (go[1] >= 0)
		close(go[1]);
	close(go[0]);
	return ret;
}

/* NSFD is a user namespace this user made for softverbs and owns, a child
 * of ours (so that we may enter it). */
static bool ours_to_join(int nsfd, ino_t ino)
{
	struct stat st, self;
	uid_t owner;
	int parent;
	bool ok;

	if (fstat(nsfd, &st) || st.st_ino != ino)
		return false; /* the recorded process is gone, pid reused */
	if (ioctl(nsfd, NS_GET_OWNER_UID, &owner) || owner != geteuid())
		return false;
	parent = ioctl(nsfd, NS_GET_PARENT);
	if (parent < 0)
		return false;
	ok = !fstat(parent, &st) && !stat("/proc/self/ns/user", &self) &&
	     st.st_ino == self.st_ino && st.st_dev == self.st_dev;
	close(parent);
	return ok;
}

/*
 * Enter the user namespace of this user's other runs, or make one.  The
 * registry USERNS_REG.<uid> lists "pid inode" of the runs that made or
 * joined it; the first whose process is still in that namespace is the
 * way in.  It is locked across lookup and creation, so that two runs
 * started together end up in one namespace.
 */
static int enter_userns(void)
{
	char path[64], line[64], keep[4096] = "";
	size_t kept = 0;
	bool joined = false;
	struct stat st;
	FILE *f;
	int fd, ret = 0;

	snprintf(path, sizeof(path), USERNS_REG ".%u", geteuid());
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && (fstat(fd, &st) || st.st_uid != geteuid() ||
			!S_ISREG(st.st_mode))) {
		/* Someone else's file in the sticky /dev/shm: no sharing. */
		close(fd);
		fd = -1;
	}
	if (fd < 0 || flock(fd, LOCK_EX)) {
		if (fd >= 0)
			close(fd);
		return new_userns();
	}
	f = fdopen(dup(fd), "r");
	while (f && fgets(line, sizeof(line), f)) {
		char ns[64];
		unsigned long ino;
		int pid, nsfd;

		if (sscanf(line, "%d %lu", &pid, &ino) != 2)
			continue;
		snprintf(ns, sizeof(ns), "/proc/%d/ns/user", pid);
		nsfd = open(ns, O_RDONLY | O_CLOEXEC);
		if (nsfd < 0)
			continue;
		if (ours_to_join(nsfd, ino)) {
			kept += snprintf(keep + kept, sizeof(keep) - kept,
					 "%d %lu\n", pid, ino);
			if (!joined && !setns(nsfd, CLONE_NEWUSER))
				joined = true;
		}
		close(nsfd);
		if (kept >= sizeof(keep) - 64)
			break;
	}
	if (f)
		fclose(f);
	if (!joined)
		ret = new_userns();
	if (!ret && !stat("/proc/self/ns/user", &st)) {
		snprintf(keep + kept, sizeof(keep) - kept, "%d %lu\n", getpid(),
			 (unsigned long)st.st_ino);
		if (ftruncate(fd, 0) == 0)
			(void)!pwrite(fd, keep, strlen(keep), 0);
	}
	close(fd);
	return ret;
}

/* The mount point of the mount that holds PATH (the longest mount point
 * of /proc/self/mountinfo that is PATH or a parent of it) into OUT. */
static bool holder_of(const char *path, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mnt[PATH_MAX];
	size_t best = 0;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		size_t n;

		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		n = strlen(mnt);
		if (n < best || strncmp(path, mnt, n) ||
		    (path[n] != '/' && path[n] != '\0' && strcmp(mnt, "/")))
			continue;
		best = n;
		snprintf(out, len, "%s", mnt);
	}
	fclose(f);
	return best > 0;
}

/* Make the mount holding PATH a slave; refused when that is the root of
 * a chroot, which no mount here names (a mount on PATH would reach the
 * namespace we came from). */
static int slave_holder(const char *path)
{
	char mnt[PATH_MAX];

	if (!holder_of(path, mnt, sizeof(mnt)) || !strcmp(mnt, "/"))
		return failed("%s is on no mount of its own under a / that is "
			      "not a mount point (a chroot): nothing to keep "
			      "our mounts from reaching outside",
			      path);
	if (mount(NULL, mnt, NULL, MS_REC | MS_SLAVE, NULL))
		return failed("make %s a slave mount: %s", mnt,
			      strerror(errno));
	return 0;
}

/*
 * A mount namespace of our own: root unshares it directly; everybody else
 * (and a root without CAP_SYS_ADMIN, as in many containers) through the
 * shared user namespace.  Mounts then propagate into it from the host
 * (slave) but never out of it.
 */
static int enter_mountns(void)
{
	if (geteuid() != 0 || unshare(CLONE_NEWNS)) {
		if (geteuid() == 0)
			failed("unshare(CLONE_NEWNS): %s", strerror(errno));
		if (enter_userns())
			return -1;
		if (unshare(CLONE_NEWNS))
			return failed(
				"unshare(CLONE_NEWNS) in a user namespace: %s",
				strerror(errno));
		why[0] = '\0'; /* the first way's failure does not matter */
	}
	if (!mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		return 0;
	if (errno != EINVAL)
		return failed("make / a slave mount: %s", strerror(errno));
	/* In a chroot, / is no mount of its own: then the mounts that hold
	 * what we cover, /dev and /sys/class, must be (our tmpfs propagates
	 * by its parent's type), each made a slave. */
	if (slave_holder("/dev") || slave_holder(SYS_CLASS))
		return -1;
	return 0;
}

/* ---- the view ---------------------------------------------------------- */

static const char *const dev_merge[] = { "infiniband", NULL };
static const char *const class_merge[] = { "infiniband", "infiniband_verbs",
					   NULL };

static int null_rdev(dev_t *rdev)
{
	struct stat st;

	if (stat("/dev/null", &st) || !S_ISCHR(st.st_mode))
		return failed("/dev/null is not a character device");
	*rdev = st.st_rdev;
	return 0;
}

/* /sys/class covered, with our entries added; read-only when done. */
static int build_sysfs(struct ibv_device *dev, dev_t node)
{
	if (cover(SYS_CLASS, class_merge) || write_sysfs(dev, node) ||
	    make_readonly(SYS_CLASS))
		return -1;
	return 0;
}

static bool our_mount(const char *dir);

/* A half-built view comes down whole; only our own tmpfs, so that a
 * failure before one was mounted never detaches the original /dev. */
static void teardown(void)
{
	if (our_mount(SYS_CLASS))
		umount2(SYS_CLASS, MNT_DETACH);
	if (our_mount("/dev"))
		umount2("/dev", MNT_DETACH);
}

void sv_presence_enter(const char *prog)
{
	struct ibv_device *dev;
	dev_t node;

	if (!sv_env_sysfs())
		return;
	dev = our_device();
	if (!dev)
		goto refused;
	if (present(dev))
		return;
	if (null_rdev(&node) || enter_mountns())
		goto refused;
	/* /dev: the whole of it covered (a new directory in the shared
	 * devtmpfs would be seen by everyone), ours added, then
	 * /dev/null taken from its new place (a bind of the original). */
	if (cover("/dev", dev_merge) || write_nodes(dev, "/dev/null") ||
	    make_readonly("/dev") || build_sysfs(dev, node)) {
		teardown();
		goto refused;
	}
	return;
refused:
	fprintf(stderr,
		"%s: no /dev/infiniband or /sys/class/infiniband for the command "
		"(%s); running it without them\n",
		prog, why);
}

/* ---- setup ----------------------------------------------------------------- */

/* Whether the topmost mount on DIR is one of our tmpfs. */
static bool our_mount(const char *dir)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mnt[PATH_MAX], type[64], src[PATH_MAX];
	bool ours = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    strcmp(mnt, dir))
			continue;
		/* The last line for a mount point is the topmost mount. */
		ours = sscanf(sep, " - %63s %4095s", type, src) == 2 &&
		       !strcmp(type, "tmpfs") && !strcmp(src, MNT_SOURCE);
	}
	fclose(f);
	return ours;
}

static int undo(const char *prog, bool quiet)
{
	int done = 0, ret = 0;

	if (our_mount(SYS_CLASS)) {
		if (umount2(SYS_CLASS, MNT_DETACH)) {
			fprintf(stderr, "%s: umount %s: %s\n", prog, SYS_CLASS,
				strerror(errno));
			ret = 1;
		}
		done++;
	}
	if (our_mount(DEV_IB)) {
		if (umount2(DEV_IB, MNT_DETACH)) {
			fprintf(stderr, "%s: umount %s: %s\n", prog, DEV_IB,
				strerror(errno));
			ret = 1;
		}
		done++;
		/* The directory was ours unless a kernel stack had one
		 * (then it is not empty and stays). */
		if (rmdir(DEV_IB) && errno != ENOTEMPTY && errno != ENOENT) {
			fprintf(stderr, "%s: rmdir %s: %s\n", prog, DEV_IB,
				strerror(errno));
			ret = 1;
		}
	}
	if (!quiet && !ret)
		printf(done ? "softverbs: removed %s and %s/infiniband\n" :
			      "softverbs: nothing to undo (%s and "
			      "%s/infiniband are not ours)\n",
		       DEV_IB, SYS_CLASS);
	return ret;
}

int sv_presence_undo(const char *prog)
{
	return undo(prog, false);
}

int sv_presence_setup(const char *prog)
{
	struct ibv_device *dev = our_device();
	dev_t node;
	int fd;

	if (!dev) {
		fprintf(stderr, "%s setup: %s\n", prog, why);
		return 1;
	}
	/* Again: a fresh snapshot (GIDs, the class list) replaces the old. */
	if (undo(prog, true))
		return 1;
	if (null_rdev(&node))
		goto fail;
	/* Here /dev/infiniband may be created: this view is meant for the
	 * whole machine.  A tmpfs on it holds the nodes, so that --undo
	 * leaves nothing behind in /dev but an empty directory it removes. */
	if (mkdirs(DEV_IB))
		goto fail;
	fd = open(DEV_IB, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		failed("open %s: %s", DEV_IB, strerror(errno));
		goto fail;
	}
	if (mount_tmpfs(DEV_IB) || mirror(fd, DEV_IB, NULL)) {
		close(fd);
		goto fail_undo;
	}
	close(fd);
	if (write_nodes(dev, "/dev/null") || make_readonly(DEV_IB) ||
	    build_sysfs(dev, node))
		goto fail_undo;
	printf("softverbs: %s/%s and %s/infiniband/%s are in place in this "
	       "mount namespace; `%s setup --undo` removes them\n",
	       DEV_IB, dev->dev_name, SYS_CLASS, ibv_get_device_name(dev),
	       prog);
	return 0;
fail_undo:
	fprintf(stderr, "%s setup: %s\n", prog, why);
	/* A half-built view is taken down (our tmpfs on /sys/class may be
	 * up, so the mountinfo test applies). */
	undo(prog, true);
	return 1;
fail:
	fprintf(stderr, "%s setup: %s\n", prog, why);
	return 1;
}
