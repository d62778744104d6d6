/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * `rdma link` and `rdma dev` (iproute2's tool) for softverbs devices.
 *
 * iproute2's rdma asks the kernel over a NETLINK_RDMA socket, which knows
 * nothing of a device in user space: it fails ("Failed to open
 * NETLINK_RDMA socket" where no RDMA module is loaded).  Programs read it
 * to find a port's network interface: rdma-core's own tests since v50 run
 * `rdma link show -j` in every traffic test's setup.  So `run` puts a
 * directory first on PATH whose `rdma` is this command (a symlink to the
 * softverbs executable, dispatched on its name), and it answers the
 * read-only forms from the library's queries, in the tool's text and JSON
 * formats:
 *
 *   rdma [-j] [-p] [-d] link [show|list] [DEV[/PORT]]
 *   rdma [-j] [-p] [-d] dev [show|list] [DEV]
 *
 * A port's netdev is the interface of its first GID that has one, as the
 * one netdev a kernel RoCE port has (the first the /sys view lists under
 * device/net).  Anything else (statistics, resources, `rdma link add`,
 * system settings) is passed to the real rdma found on PATH after this
 * directory, which then answers as it would without softverbs.
 */
#include "rdmatool.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

struct opts {
	bool json, pretty, details;
	const char *dev;
	unsigned int port; /* 0: every port */
	bool first;        /* no object printed yet (JSON's commas) */
};

static const char *port_state_str(enum ibv_port_state s)
{
	static const char *const names[] = { "NOP",   "DOWN",   "INIT",
					     "ARMED", "ACTIVE", "ACTIVE_DEFER" };

	return (unsigned int)s < sizeof(names) / sizeof(names[0]) ? names[s] :
								    "UNKNOWN";
}

/* iproute2's names of the IBA PortPhysicalState values. */
static const char *phys_state_str(uint8_t s)
{
	static const char *const names[] = { "NOP",
					     "SLEEP",
					     "POLLING",
					     "DISABLED",
					     "ARMED",
					     "LINK_UP",
					     "LINK_ERROR_RECOVER",
					     "PHY_TEST" };

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

static void guid_str(__be64 be, char *out, size_t len)
{
	uint64_t g = be64toh(be);

	snprintf(out, len, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48),
		 (unsigned int)(g >> 32) & 0xffff,
		 (unsigned int)(g >> 16) & 0xffff, (unsigned int)g & 0xffff);
}

/* The port's network interface: that of its first GID with one. */
static unsigned int port_netdev(struct ibv_context *ctx, uint8_t port,
				int gid_tbl_len, char *name)
{
	for (int i = 0; i < gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0))
			continue;
		if (e.ndev_ifindex && if_indextoname(e.ndev_ifindex, name))
			return e.ndev_ifindex;
	}
	return 0;
}

/* Opens an object: "{" (JSON, with the comma and the pretty layout). */
static void obj_open(struct opts *o)
{
	if (o->json)
		printf("%s%s{", o->first ? "" : ",", o->pretty ? "\n    " : "");
	o->first = false;
}

static void field_str(const struct opts *o, bool *lead, const char *key,
		      const char *text_fmt, const char *val)
{
	if (o->json) {
		printf("%s%s\"%s\":\"%s\"", *lead ? "" : ",",
		       o->pretty ? "\n        " : "", key, val);
	} else {
		printf(text_fmt, val);
	}
	*lead = false;
}

static void field_uint(const struct opts *o, bool *lead, const char *key,
		       const char *text_fmt, unsigned long v)
{
	if (o->json) {
		printf("%s%s\"%s\":%lu", *lead ? "" : ",",
		       o->pretty ? "\n        " : "", key, v);
	} else {
		printf(text_fmt, v);
	}
	*lead = false;
}

static void obj_close(const struct opts *o)
{
	if (o->json)
		printf("%s}", o->pretty ? "\n    " : "");
	else
		printf("\n");
}

static void show_link(struct opts *o, int idx, struct ibv_context *ctx,
		      const char *name, uint8_t port)
{
	struct ibv_port_attr pa;
	char ndev[IF_NAMESIZE] = "";
	unsigned int ndev_idx;
	bool lead = true;

	if (ibv_query_port(ctx, port, &pa))
		return;
	ndev_idx = port_netdev(ctx, port, pa.gid_tbl_len, ndev);
	obj_open(o);
	field_uint(o, &lead, "ifindex", "", (unsigned long)idx);
	field_str(o, &lead, "ifname", "link %s/", name);
	field_uint(o, &lead, "port", "%lu ", port);
	field_str(o, &lead, "state", "state %s ", port_state_str(pa.state));
	field_str(o, &lead, "physical_state", "physical_state %s ",
		  phys_state_str(pa.phys_state));
	if (ndev_idx) {
		field_str(o, &lead, "netdev", "netdev %s ", ndev);
		if (o->details)
			field_uint(o, &lead, "netdev_index", "netdev_index %lu ",
				   ndev_idx);
	}
	obj_close(o);
}

static void show_dev(struct opts *o, int idx, struct ibv_context *ctx,
		     const char *name)
{
	struct ibv_device_attr da;
	char guid[24];
	bool lead = true;

	if (ibv_query_device(ctx, &da))
		return;
	obj_open(o);
	field_uint(o, &lead, "ifindex", "%lu: ", (unsigned long)idx);
	field_str(o, &lead, "ifname", "%s: ", name);
	field_str(o, &lead, "node_type", "node_type %s ", "ca");
	field_str(o, &lead, "fw", "fw %s ", da.fw_ver);
	guid_str(da.node_guid, guid, sizeof(guid));
	field_str(o, &lead, "node_guid", "node_guid %s ", guid);
	guid_str(da.sys_image_guid, guid, sizeof(guid));
	field_str(o, &lead, "sys_image_guid", "sys_image_guid %s ", guid);
	obj_close(o);
}

/* The real rdma: the first on PATH that is not in our own directory. */
static int pass_on(const char *prog, char **argv)
{
	char self[PATH_MAX], dir[PATH_MAX], cand[PATH_MAX + 8];
	const char *path = getenv("PATH");
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		n = 0;
	self[n] = '\0';
	while (path && *path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		char real[PATH_MAX];

		if (len && len < sizeof(dir)) {
			memcpy(dir, path, len);
			dir[len] = '\0';
			snprintf(cand, sizeof(cand), "%s/rdma", dir);
			/* Skip every name of ourselves (the symlink). */
			if (!access(cand, X_OK) &&
			    (!realpath(cand, real) || strcmp(real, self))) {
				argv[0] = cand;
				execv(cand, argv);
			}
		}
		path = end ? end + 1 : NULL;
	}
	fprintf(stderr,
		"%s: softverbs answers `rdma link` and `rdma dev` only, and no "
		"other rdma (iproute2) is on PATH for the rest\n",
		prog);
	return 1;
}

static int usage_error(const char *prog, const char *what)
{
	fprintf(stderr, "%s: %s\n", prog, what);
	return 1;
}

int sv_cmd_rdma(const char *prog, int argc, char **argv)
{
	struct opts o = { .first = true };
	struct ibv_device **list;
	char *pos[4];
	int npos = 0, i, n, ret = 0;
	bool link;

	/* Options anywhere, as the tool's getopt_long takes them. */
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-') {
			if (npos == 4)
				return pass_on(prog, argv);
			pos[npos++] = argv[i];
			continue;
		}
		a += a[1] == '-' ? 2 : 1;
		if (!strcmp(a, "j") || !strcmp(a, "json"))
			o.json = true;
		else if (!strcmp(a, "p") || !strcmp(a, "pretty"))
			o.pretty = true;
		else if (!strcmp(a, "d") || !strcmp(a, "details"))
			o.details = true;
		else
			return pass_on(prog, argv);
	}
	if (!npos)
		return pass_on(prog, argv);
	if (!strcmp(pos[0], "link"))
		link = true;
	else if (!strcmp(pos[0], "dev"))
		link = false;
	else
		return pass_on(prog, argv);
	i = 1;
	if (i < npos && (!strcmp(pos[i], "show") || !strcmp(pos[i], "list")))
		i++;
	else if (i < npos)
		return pass_on(prog, argv); /* add, delete, set, help */
	if (i < npos) {
		char *slash = strchr(pos[i], '/');

		o.dev = pos[i];
		if (slash) {
			char *end;
			unsigned long p = strtoul(slash + 1, &end, 10);

			if (!link || *end || !p || p > 255)
				return usage_error(prog, "a port is DEV/PORT, "
							 "PORT from 1");
			*slash = '\0';
			o.port = (unsigned int)p;
		}
		if (++i < npos)
			return pass_on(prog, argv);
	}
	list = ibv_get_device_list(&n);
	if (!list)
		return usage_error(prog, strerror(errno));
	if (o.json)
		printf("[");
	for (int d = 0; d < n; d++) {
		const char *name = ibv_get_device_name(list[d]);
		struct ibv_context *ctx;
		struct ibv_device_attr da;

		if (o.dev && strcmp(o.dev, name))
			continue;
		ctx = ibv_open_device(list[d]);
		if (!ctx || ibv_query_device(ctx, &da)) {
			fprintf(stderr, "%s: cannot open %s: %s\n", prog, name,
				strerror(errno));
			if (ctx)
				ibv_close_device(ctx);
			ret = 1;
			continue;
		}
		if (!link)
			show_dev(&o, d, ctx, name);
		for (uint8_t p = 1; link && p <= da.phys_port_cnt; p++)
			if (!o.port || o.port == p)
				show_link(&o, d, ctx, name, p);
		ibv_close_device(ctx);
	}
	if (o.json)
		printf("%s]\n", o.pretty && !o.first ? "\n" : "");
	ibv_free_device_list(list);
	if (o.dev && o.first) {
		fprintf(stderr, "Wrong device name\n"); /* the tool's words */
		ret = 1;
	}
	return ret;
}
