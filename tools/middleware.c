/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The environment `softverbs run` gives middleware so that it selects
 * softverbs0 with no flag of the user's.
 *
 * Left alone, UCX carries traffic between processes of one host over its
 * own shared memory (sm, cma) and Open MPI's default pml (ob1) over its
 * own btls: `mpirun -np 2 ./app` then moves no byte through a QP.  The
 * variables below are the ones the middleware documents for choosing
 * transports; each is set only where the environment does not hold it,
 * so a value of the user's (or a flag on the launcher's command line,
 * which Open MPI and MPICH rank above the environment) wins.  They are set
 * for every command: a script that starts mpirun gets them too, and only
 * the middleware that reads a variable is affected by it.  One line on
 * stderr names them when the command itself is a launcher or tool of that
 * middleware.
 *
 *   UCX_TLS          rc_verbs, ud_verbs for wire-up, self (a process to
 *                    itself): verbs transports only
 *   UCX_NET_DEVICES  softverbs0's port
 *   OMPI_MCA_pml     ucx: Open MPI's point-to-point through UCX
 *   OMPI_MCA_osc     ucx: its one-sided operations too
 *
 * MPICH as Debian 12 and 13 build it (ch4:ucx) needs the UCX ones
 * only.  libfabric needs none: it lists the verbs provider first, and
 * fi_pingpong -p verbs finds softverbs0 as it is.  UCX picks its GID
 * itself: the first RoCE v2 IPv4 one, which the GID table's order makes
 * a routable address (core/device.c).  Open MPI's --allow-run-as-root
 * stays the user's choice.
 *
 * UCX skips a device without its character device in /dev/infiniband.
 * Where run could not make it (namespaces refused, --no-sysfs without
 * `softverbs setup`), these variables would leave UCX no transport and
 * MPI failing to start; they are then left unset, and the line says so.
 */
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/device.h"
#include "middleware.h"

/* What UCX opens (the device's dev_name, core/device.c). */
#define SV_MW_CHARDEV "/dev/infiniband/uverbs_sv0"

enum family { UCX = 1, OMPI = 2 };

static const struct {
	const char *name, *value;
	enum family family;
} defaults[] = {
	{ "UCX_TLS", "rc_verbs,ud_verbs:aux,self", UCX },
	{ "UCX_NET_DEVICES", SV_DEVICE_NAME ":1", UCX },
	{ "OMPI_MCA_pml", "ucx", OMPI },
	{ "OMPI_MCA_osc", "ucx", OMPI },
};

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Which middleware the command is, by its name: the families whose
 * variables its line names. */
static unsigned int families_of(const char *cmd)
{
	const char *base = strrchr(cmd, '/');

	base = base ? base + 1 : cmd;
	if (starts(base, "mpirun") || starts(base, "mpiexec") ||
	    starts(base, "orterun") || starts(base, "prterun") ||
	    starts(base, "oshrun"))
		return UCX | OMPI;
	if (starts(base, "ucx_"))
		return UCX;
	return 0;
}

/*
 * Whether the distribution's UCX was built without its verbs transports
 * (Debian sid's UCX 1.23 ships no libuct_ib): then UCX_TLS=rc_verbs leaves
 * UCX no transport, and pml=ucx stops mpirun.  A UCX module directory
 * without libuct_ib says so; with none found (a UCX of the user's own
 * elsewhere) we assume the transports are there.
 */
static bool ucx_lacks_verbs(void)
{
	static const char *const dirs[] = { "/usr/lib/*/ucx", "/usr/lib64/ucx",
					    "/usr/lib/ucx",
					    "/usr/local/lib/ucx" };
	bool seen = false, verbs = false;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !verbs; i++) {
		char pat[64];
		glob_t g;

		snprintf(pat, sizeof(pat), "%s/libuct_*.so*", dirs[i]);
		if (glob(pat, 0, NULL, &g))
			continue;
		for (size_t k = 0; k < g.gl_pathc; k++) {
			const char *base = strrchr(g.gl_pathv[k], '/') + 1;

			seen = true;
			if (!strncmp(base, "libuct_ib.so", 12))
				verbs = true;
		}
		globfree(&g);
	}
	return seen && !verbs;
}

int sv_middleware_defaults(const char *prog, const char *cmd)
{
	unsigned int shown = families_of(cmd);
	char line[512];
	size_t len = 0;

	line[0] = 0;
	if (access(SV_MW_CHARDEV, F_OK)) {
		if (shown)
			fprintf(stderr,
				"%s: no " SV_MW_CHARDEV
				": UCX will not use " SV_DEVICE_NAME
				"; UCX_TLS, UCX_NET_DEVICES, OMPI_MCA_pml and "
				"OMPI_MCA_osc left as they are\n",
				prog);
		return 0;
	}
	if (ucx_lacks_verbs()) {
		if (shown)
			fprintf(stderr,
				"%s: this system's UCX has no verbs transports "
				"(no libuct_ib): UCX_TLS, UCX_NET_DEVICES, "
				"OMPI_MCA_pml and OMPI_MCA_osc left as they are; "
				"Open MPI reaches " SV_DEVICE_NAME
				" through libfabric with OMPI_MCA_pml=cm "
				"OMPI_MCA_mtl=ofi OMPI_MCA_osc=^ucx\n",
				prog);
		return 0;
	}
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		if (getenv(defaults[i].name))
			continue;
		if (setenv(defaults[i].name, defaults[i].value, 0))
			return -1;
		if (!(shown & defaults[i].family))
			continue;
		len += (size_t)snprintf(line + len, sizeof(line) - len,
					" %s=%s", defaults[i].name,
					defaults[i].value);
		if (len >= sizeof(line))
			len = sizeof(line) - 1;
	}
	if (line[0])
		fprintf(stderr,
			"%s: set%s (middleware over " SV_DEVICE_NAME
			"; set any of them to override)\n",
			prog, line);
	return 0;
}
