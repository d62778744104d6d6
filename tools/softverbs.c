/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * softverbs: the command-line front end.
 *
 *   softverbs run [--no-sysfs] [--] CMD [ARGS...]
 *                                      run an unmodified RDMA program on softverbs
 *   softverbs devices                  list devices, ports and GIDs
 *   softverbs rdma ARGS                `rdma link` and `rdma dev` (rdmatool.c),
 *                                      as the rdma that `run` puts on PATH
 *   softverbs setup [--undo]           the device's /dev and /sys files, for good
 *   softverbs stats [--all] [-v | --json | --watch [S] [--count N] | --clean] [PID]
 *                                      live counters of running (and killed)
 *                                      processes (tools/stats.c)
 *   softverbs help
 *   softverbs version (--version)      version, commit, the rdma-core ABI
 *
 * "run" puts our library directory first on LD_LIBRARY_PATH, sets what
 * middleware needs to select softverbs0 (tools/middleware.c) and execs the
 * program, so the change reaches that process tree only; in a private
 * mount namespace, the program also finds /dev/infiniband and
 * /sys/class/infiniband as a kernel device has them (tools/presence.c).  The library
 * directory is found from this executable's own location (bin/ next to
 * lib/, in the build tree and in an install prefix alike), never from the
 * current directory.  "devices" goes through the verbs API of our own
 * libibverbs: this binary is linked with an RPATH of $ORIGIN/../lib (old
 * DT_RPATH tags, which win over the user's LD_LIBRARY_PATH).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <libgen.h>
#include <link.h>
#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/shm.h"
#include "middleware.h"
#include "presence.h"
#include "rdmatool.h"
#include "stats.h"
#include "sv_version.h"
#include "util/env.h"

#define EXIT_USAGE 2

static const char *prog = "softverbs";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  run [--no-sysfs] [--] CMD [ARGS...]\n"
		"                          run CMD with the softverbs libraries (libibverbs.so.1,\n"
		"                          librdmacm.so.1) first on LD_LIBRARY_PATH, in a private\n"
		"                          mount namespace where /dev/infiniband/<dev> and rdma_cm,\n"
		"                          /sys/class/infiniband/softverbs0 and\n"
		"                          /sys/class/infiniband_verbs exist for CMD and its\n"
		"                          children only (as a user: in a user namespace mapping\n"
		"                          your uid and gid to themselves); where the kernel\n"
		"                          refuses namespaces, one line on stderr says so and CMD\n"
		"                          runs without them.  --no-sysfs: no namespace, no files.\n"
		"                          Where unset: UCX_TLS=rc_verbs,ud_verbs:aux,self,\n"
		"                          UCX_NET_DEVICES=softverbs0:1, OMPI_MCA_pml=ucx,\n"
		"                          OMPI_MCA_osc=ucx (UCX, Open MPI and MPICH then use\n"
		"                          softverbs0; for mpirun, mpiexec* and ucx_* one line\n"
		"                          says which were set)\n"
		"  devices                 list devices, ports (state, MTU, link layer) and GIDs\n"
		"  rdma link|dev [show] [DEV[/PORT]] [-j] [-p] [-d]\n"
		"                          iproute2's rdma link and dev for softverbs0: run puts\n"
		"                          an rdma that answers them first on PATH\n"
		"  setup                   (root) the same files in the current mount namespace,\n"
		"                          for every program: tmpfs mounts on /dev/infiniband and\n"
		"                          /sys/class; again: refresh (GIDs are a snapshot)\n"
		"  setup --undo            remove them\n"
		"  stats [--all] [-v] [PID]\n"
		"                          live counters of your running softverbs processes\n"
		"                          (--all: also those gone; -v: every counter), or one:\n"
		"                          per device and per QP (state, path, packets, bytes,\n"
		"                          retransmissions, RNR NAKs, outstanding WRs), also\n"
		"                          after a process was killed (marked gone)\n"
		"  stats --json [PID]      the same as JSON\n"
		"  stats --watch [SECONDS] [--count N] [PID]\n"
		"                          rates per QP every SECONDS (1), N times (forever)\n"
		"  stats --clean           remove the counters of processes that are gone\n"
		"  help                    this text\n"
		"  version, --version      the version, its commit and the rdma-core ABI\n"
		"\n"
		"environment (each read once per process, at its first use):\n",
		prog);
	sv_env_print(f);
	fprintf(f, "\nexample:  %s run -- ibv_devinfo -v\n", prog);
}

/* After a usage error: the forms in a few lines, not the whole help. */
static void short_usage(void)
{
	fprintf(stderr,
		"usage: %s run [--no-sysfs] [--] CMD [ARGS...]\n"
		"       %s devices | setup [--undo] | version | help\n"
		"       %s stats [--all] [-v | --json | --watch [SECONDS] "
		"[--count N] | --clean] [PID]\n"
		"'%s help' explains each command and the environment.\n",
		prog, prog, prog, prog);
}

/* The directory holding our libibverbs.so.1: <dir of this executable>/../lib.
 * /proc/self/exe is the resolved path, so a symlink to the command (e.g.
 * in /usr/local/bin) still finds the right prefix. */
static int find_libdir(char *out, size_t len)
{
	char exe[PATH_MAX], lib[PATH_MAX + 16], probe[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0) {
		fprintf(stderr, "%s: cannot find my own executable: %s\n", prog,
			strerror(errno));
		return -1;
	}
	exe[n] = '\0';
	snprintf(lib, sizeof(lib), "%s/../lib", dirname(exe));
	if (!realpath(lib, out) || strlen(out) >= len) {
		fprintf(stderr, "%s: no library directory at %s\n", prog, lib);
		return -1;
	}
	snprintf(probe, sizeof(probe), "%s/libibverbs.so.1", out);
	if (access(probe, R_OK)) {
		fprintf(stderr,
			"%s: %s is missing (build or install incomplete?)\n",
			prog, probe);
		return -1;
	}
	return 0;
}

/* The directory `run` puts first on PATH: <dir of this executable>/
 * ../libexec/softverbs, whose rdma is this command (rdmatool.c).  Absent
 * (a copy of the binary alone): 0 and an empty string. */
static void find_tooldir(char *out, size_t len)
{
	char exe[PATH_MAX], dir[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	out[0] = '\0';
	if (n < 0)
		return;
	exe[n] = '\0';
	snprintf(dir, sizeof(dir), "%s/../libexec/softverbs", dirname(exe));
	if (!realpath(dir, out) || strlen(out) >= len)
		out[0] = '\0';
}

/* PATH with DIR first (the user's entries after it). */
static int path_prepend(const char *dir)
{
	const char *old = getenv("PATH");
	char *val;
	int ret;

	if (asprintf(&val, "%s%s%s", dir, old && *old ? ":" : "",
		     old ? old : "") < 0)
		return -1;
	ret = setenv("PATH", val, 1);
	free(val);
	return ret;
}

#ifdef SV_SANITIZER_BUILD
struct san_list {
	char buf[4 * PATH_MAX];
	size_t len;
};

static int add_sanitizer(struct dl_phdr_info *info, size_t size, void *arg)
{
	static const char *const runtimes[] = { "libasan.so", "libubsan.so",
						"libtsan.so", "liblsan.so" };
	struct san_list *l = arg;
	const char *base = strrchr(info->dlpi_name, '/');

	base = base ? base + 1 : info->dlpi_name;
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++) {
		if (strncmp(base, runtimes[i], strlen(runtimes[i])))
			continue;
		l->len += snprintf(l->buf + l->len, sizeof(l->buf) - l->len,
				   "%s%s", l->len ? ":" : "", info->dlpi_name);
		if (l->len >= sizeof(l->buf))
			return 1;
	}
	return 0;
}

/*
 * A sanitizer build of libibverbs needs its sanitizer runtime loaded before
 * everything else, which an unmodified program does not do: preload the
 * runtimes this command itself was started with (it is built with the same
 * flags).  Leak reports are turned off by default in the child: they would
 * be about the unmodified program, not about us (the C tests keep them).
 * Production builds never take this path.
 */
static int preload_sanitizers(void)
{
	struct san_list l = { .len = 0 };
	const char *old = getenv("LD_PRELOAD");
	char *val;

	if (dl_iterate_phdr(add_sanitizer, &l) || !l.len)
		return 0;
	if (asprintf(&val, "%s%s%s", l.buf, old && *old ? ":" : "",
		     old ? old : "") < 0)
		return -1;
	setenv("LD_PRELOAD", val, 1);
	free(val);
	setenv("ASAN_OPTIONS", "detect_leaks=0", 0);
	return 0;
}
#else
static int preload_sanitizers(void)
{
	return 0;
}
#endif

static int cmd_run(int argc, char **argv)
{
	char libdir[PATH_MAX], tooldir[PATH_MAX];
	const char *old;
	char *val;
	bool sysfs = true;
	int i = 0;

	if (i < argc && !strcmp(argv[i], "--no-sysfs")) {
		sysfs = false;
		i++;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		fprintf(stderr, "%s run: no command given\n", prog);
		short_usage();
		return EXIT_USAGE;
	}
	if (find_libdir(libdir, sizeof(libdir)))
		return 1;
	/* Prepend, keeping the user's entries after ours.  An empty old value
	 * is dropped: an empty element would mean the current directory. */
	old = getenv("LD_LIBRARY_PATH");
	if (old && *old) {
		if (asprintf(&val, "%s:%s", libdir, old) < 0)
			return 1;
	} else {
		val = strdup(libdir);
		if (!val)
			return 1;
	}
	if (setenv("LD_LIBRARY_PATH", val, 1)) {
		fprintf(stderr, "%s: setenv: %s\n", prog, strerror(errno));
		return 1;
	}
	free(val);
	/* `rdma link` and `rdma dev` answered for softverbs0 (rdmatool.c). */
	find_tooldir(tooldir, sizeof(tooldir));
	if (tooldir[0] && path_prepend(tooldir)) {
		fprintf(stderr, "%s: setenv: %s\n", prog, strerror(errno));
		return 1;
	}
	if (preload_sanitizers())
		return 1;
	/* Last before exec: a user namespace wants a single thread, and the
	 * command should inherit no mount of ours but the view. */
	if (sysfs)
		sv_presence_enter(prog);
	/* After the view: the variables need its device files. */
	if (sv_middleware_defaults(prog, argv[i]))
		return 1;
	execvp(argv[i], &argv[i]);
	/* As the shell does: 127 when the command is not found, 126 when it
	 * exists but cannot be executed. */
	fprintf(stderr, "%s: cannot run %s: %s\n", prog, argv[i],
		strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

static const char *mtu_str(enum ibv_mtu mtu)
{
	switch (mtu) {
	case IBV_MTU_256:
		return "256";
	case IBV_MTU_512:
		return "512";
	case IBV_MTU_1024:
		return "1024";
	case IBV_MTU_2048:
		return "2048";
	case IBV_MTU_4096:
		return "4096";
	default:
		return "?";
	}
}

static const char *link_layer_str(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_UNSPECIFIED:
	case IBV_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET:
		return "Ethernet";
	default:
		return "unknown";
	}
}

static const char *gid_type_str(uint32_t type)
{
	switch (type) {
	case IBV_GID_TYPE_IB:
		return "IB";
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	default:
		return "unknown";
	}
}

static const char *transport_str(enum ibv_transport_type t)
{
	switch (t) {
	case IBV_TRANSPORT_IB:
		return "InfiniBand";
	case IBV_TRANSPORT_IWARP:
		return "iWARP";
	default:
		return "other";
	}
}

static void print_guid(__be64 guid_be)
{
	uint64_t g = be64toh(guid_be);

	printf("%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
	       (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff,
	       (unsigned)g & 0xffff);
}

static int show_port(struct ibv_context *ctx, uint8_t port)
{
	struct ibv_port_attr pa;
	int i, ret, shown = 0;

	ret = ibv_query_port(ctx, port, &pa);
	if (ret) {
		fprintf(stderr, "%s: ibv_query_port(%u): %s\n", prog, port,
			strerror(ret));
		return -1;
	}
	printf("  port %u: %s, active_mtu %s (max %s), link_layer %s, lid %u\n",
	       port, ibv_port_state_str(pa.state), mtu_str(pa.active_mtu),
	       mtu_str(pa.max_mtu), link_layer_str(pa.link_layer), pa.lid);
	for (i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		char addr[INET6_ADDRSTRLEN], ifname[IF_NAMESIZE] = "";

		ret = ibv_query_gid_ex(ctx, port, i, &e, 0);
		if (ret == ENODATA)
			continue; /* an empty slot */
		if (ret) {
			fprintf(stderr, "%s: ibv_query_gid_ex(%u, %d): %s\n",
				prog, port, i, strerror(ret));
			return -1;
		}
		if (!inet_ntop(AF_INET6, e.gid.raw, addr, sizeof(addr)))
			snprintf(addr, sizeof(addr), "?");
		if (!e.ndev_ifindex || !if_indextoname(e.ndev_ifindex, ifname))
			snprintf(ifname, sizeof(ifname), "-");
		printf("    GID[%3d]  %-40s %-8s %s\n", i, addr,
		       gid_type_str(e.gid_type), ifname);
		shown++;
	}
	if (!shown)
		printf("    (no GIDs: no network interface is up)\n");
	return 0;
}

/* The one-host fast path (shared-memory rings, one-copy RDMA): whether
 * this process could use it, by the library's own test (link/shm_avail.c
 * is compiled into this tool), and the ptrace policy peers must pass. */
static void show_fastpath(void)
{
	const char *why;
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = -1;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	if (!sv_shm_available(&why)) {
		printf("fast path: unavailable (%s): QPs use UDP\n", why);
		return;
	}
	printf("fast path: available: QPs to peers on this host and network "
	       "namespace use shared memory (registry %s",
	       sv_shm_registry_path());
	if (scope > 0)
		printf(", Yama ptrace_scope %d: %s", scope,
		       scope == 1 ? "only to descendants, else UDP" :
				    "cross-memory attach refused, UDP");
	printf(")\n");
	/* Even root, who could attach to anyone, does not: a peer of
	 * another user could stall it or feed it a hostile table. */
	printf("fast path: peers of the same user only (uid %u); QPs to "
	       "another user's use UDP\n",
	       (unsigned int)geteuid());
}

static int cmd_devices(int argc, char **argv)
{
	struct ibv_device **list;
	int i, n, ret = 0;

	if (argc) {
		fprintf(stderr, "%s devices: unexpected argument %s\n", prog,
			argv[0]);
		short_usage();
		return EXIT_USAGE;
	}
	list = ibv_get_device_list(&n);
	if (!list) {
		fprintf(stderr, "%s: ibv_get_device_list: %s\n", prog,
			strerror(errno));
		return 1;
	}
	if (!n) {
		fprintf(stderr, "%s: no RDMA devices\n", prog);
		ibv_free_device_list(list);
		return 1;
	}
	for (i = 0; i < n && !ret; i++) {
		struct ibv_device_attr da;
		struct ibv_context *ctx = ibv_open_device(list[i]);
		uint8_t p;

		if (!ctx) {
			fprintf(stderr, "%s: cannot open %s: %s\n", prog,
				ibv_get_device_name(list[i]), strerror(errno));
			ret = 1;
			break;
		}
		if (ibv_query_device(ctx, &da)) {
			fprintf(stderr, "%s: ibv_query_device(%s) failed\n",
				prog, ibv_get_device_name(list[i]));
			ibv_close_device(ctx);
			ret = 1;
			break;
		}
		printf("%s: node_guid ", ibv_get_device_name(list[i]));
		print_guid(da.node_guid);
		printf(", %s, transport %s, fw %s, %u port%s\n",
		       ibv_node_type_str(list[i]->node_type),
		       transport_str(list[i]->transport_type), da.fw_ver,
		       da.phys_port_cnt, da.phys_port_cnt == 1 ? "" : "s");
		/* The names a kernel device's files would have: what `run`
		 * and `setup` create (tools/presence.c). */
		printf("  dev_name %s: /dev/infiniband/%s, "
		       "/sys/class/infiniband/%s\n",
		       list[i]->dev_name, list[i]->dev_name,
		       ibv_get_device_name(list[i]));
		for (p = 1; p <= da.phys_port_cnt && !ret; p++)
			if (show_port(ctx, p))
				ret = 1;
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	if (!ret)
		show_fastpath();
	return ret;
}

static int cmd_version(int argc, char **argv)
{
	if (argc) {
		fprintf(stderr, "%s version: unexpected argument %s\n", prog,
			argv[0]);
		short_usage();
		return EXIT_USAGE;
	}
	/* The symbol versions reach those of rdma-core 65 (IBVERBS_1.18,
	 * RDMACM_1.5); the files keep rdma-core 44's numbers, the ABI whose
	 * structure layouts every later release keeps compatible. */
	printf("softverbs %s (commit %s)\n"
	       "implements the rdma-core ABI of releases 39 to 65, built as "
	       "rdma-core %s: libibverbs.so.1 (%s), librdmacm.so.1 (%s)\n"
	       "device: softverbs0, RoCE v2 in software\n",
	       SV_VERSION, SV_COMMIT, SV_RDMA_CORE, SV_IBVERBS_VERSION,
	       SV_RDMACM_VERSION);
	return 0;
}

static int cmd_setup(int argc, char **argv)
{
	bool undo = argc == 1 && !strcmp(argv[0], "--undo");

	if (argc > 1 || (argc == 1 && !undo)) {
		fprintf(stderr, "%s setup: unexpected argument %s\n", prog,
			argv[argc > 1 && undo ? 1 : 0]);
		short_usage();
		return EXIT_USAGE;
	}
	return undo ? sv_presence_undo(prog) : sv_presence_setup(prog);
}

int main(int argc, char **argv)
{
	const char *cmd;

	/* Called as rdma: the symlink `run` puts first on PATH. */
	if (argc >= 1 && !strcmp(basename(argv[0]), "rdma"))
		return sv_cmd_rdma("rdma", argc, argv);
	if (argc < 2) {
		short_usage();
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 2, argv + 2);
	if (!strcmp(cmd, "devices"))
		return cmd_devices(argc - 2, argv + 2);
	if (!strcmp(cmd, "setup"))
		return cmd_setup(argc - 2, argv + 2);
	if (!strcmp(cmd, "rdma"))
		return sv_cmd_rdma("softverbs rdma", argc - 1, argv + 1);
	if (!strcmp(cmd, "stats"))
		return sv_cmd_stats(prog, argc - 2, argv + 2);
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version"))
		return cmd_version(argc - 2, argv + 2);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") ||
	    !strcmp(cmd, "--help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
	short_usage();
	return EXIT_USAGE;
}
