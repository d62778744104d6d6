/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * softverbs0: the device's identity (a node GUID per host and network
 * namespace), its real limits, its single Ethernet (RoCE v2) port and the
 * GID table derived from the host's IP addresses.
 */
#include "core/device.h"
#include "core/mw.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/env.h"

static struct sv_device the_device;
static pthread_once_t device_once = PTHREAD_ONCE_INIT;

/* FNV-1a: a stable 64-bit digest of the machine identity. */
static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The machine and the network namespace: two namespaces of one host are
 * two hosts to their peers (their own addresses, their own CM, which
 * keys connections by CA GUID), so each gets its own GUID.  The
 * namespace's inode is fixed for its life, and the initial namespace's
 * is a constant of the kernel: stable across runs on the host. */
static uint64_t machine_digest(void)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	char buf[256] = "";
	FILE *f = fopen("/etc/machine-id", "r");
	struct stat st;

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	if (!buf[0])
		gethostname(buf, sizeof(buf) - 1);
	h = fnv1a(buf, strlen(buf), h);
	if (!stat("/proc/self/ns/net", &st)) {
		uint64_t ino = (uint64_t)st.st_ino;

		h = fnv1a(&ino, sizeof(ino), h);
	}
	return h;
}

static void device_init(void)
{
	struct ibv_device *d = &the_device.ibdev;
	uint64_t h = machine_digest();

	d->node_type = IBV_NODE_CA;
	d->transport_type = IBV_TRANSPORT_IB;
	snprintf(d->name, sizeof(d->name), "%s", SV_DEVICE_NAME);
	snprintf(d->dev_name, sizeof(d->dev_name), "uverbs_sv0");
	/* No sysfs behind us: these paths exist nowhere, so sysfs readers
	 * (ibv_read_sysfs_file) fail cleanly instead of reading another
	 * device's files. */
	snprintf(d->dev_path, sizeof(d->dev_path),
		 "/nonexistent/softverbs/uverbs_sv0");
	snprintf(d->ibdev_path, sizeof(d->ibdev_path),
		 "/nonexistent/softverbs/%s", SV_DEVICE_NAME);
	/* An EUI-64 with the locally administered bit set: never collides
	 * with a vendor's GUID. */
	h = (h & ~(0xffULL << 56)) | (0x02ULL << 56);
	the_device.node_guid = htobe64(h);
	the_device.sys_image_guid = htobe64(h);
}

struct sv_device *sv_device_get(void)
{
	pthread_once(&device_once, device_init);
	return &the_device;
}

void sv_sockaddr_to_gid(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &in->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		memcpy(gid->raw, &in6->sin6_addr, 16);
	}
}

static bool gid_is_v4mapped(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0,    0,
					    0, 0, 0, 0, 0xff, 0xff };

	return memcmp(gid->raw, prefix, sizeof(prefix)) == 0;
}

void sv_gid_to_sockaddr(const union ibv_gid *gid, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (gid_is_v4mapped(gid)) {
		struct sockaddr_in *in = (void *)ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, &gid->raw[12], 4);
	} else {
		struct sockaddr_in6 *in6 = (void *)ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, gid->raw, 16);
	}
}

/* The loopback interface's addresses: 127.0.0.0/8 and ::1. */
static bool gid_is_loopback(const union ibv_gid *gid)
{
	static const uint8_t v6lo[16] = { [15] = 1 };

	return (gid_is_v4mapped(gid) && gid->raw[12] == 127) ||
	       !memcmp(gid->raw, v6lo, sizeof(v6lo));
}

static bool gid_is_link_local(const union ibv_gid *gid)
{
	return gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80;
}

/*
 * The table's order decides what code hard-wired to an index gets: UCX
 * and NCCL take the first RoCE v2 IPv4 GID, scripts pass -x 0 or -g 0.
 * No HCA's table holds loopback (a netdev's GIDs come from its own
 * addresses), so the loopback GIDs go last, where they serve processes
 * of this host only; index 0 is then the first interface's IPv4
 * address, one a peer elsewhere can reach.  Within a rank: by
 * interface, IPv4 before IPv6, by address (a global IPv6 address sorts
 * before fe80::).  A host with only lo keeps 127.0.0.1 at index 0.
 *
 * Strict mode (SOFTVERBS_STRICT=1) orders the table as hardware does:
 * mlx5 and rxe put the port's default GID, the IPv6 link-local address
 * fe80::/64 made from the MAC, at index 0 (mlx5: RoCE v1 at 0, v2 at 1),
 * and the IP addresses after it.  Code hard-wired to index 0 then sends
 * from fe80:: as on hardware, and meets a peer that uses an IPv4 GID
 * with a family mismatch (verbs/srq_ah.c).
 */
static int gid_rank(const struct sv_gid_entry *e)
{
	if (gid_is_loopback(&e->gid))
		return 2;
	if (sv_env_strict())
		return gid_is_link_local(&e->gid) ? 0 : 1;
	return 0;
}

static int gid_entry_cmp(const void *a, const void *b)
{
	const struct sv_gid_entry *x = a, *y = b;

	if (gid_rank(x) != gid_rank(y))
		return gid_rank(x) < gid_rank(y) ? -1 : 1;
	if (x->ifindex != y->ifindex)
		return x->ifindex < y->ifindex ? -1 : 1;
	if (x->addr.ss_family != y->addr.ss_family)
		return x->addr.ss_family == AF_INET ? -1 : 1;
	return memcmp(x->gid.raw, y->gid.raw, 16);
}

int sv_gid_scan(struct sv_gid_entry *tab, int max)
{
	struct ifaddrs *ifa, *it;
	int n = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (it = ifa; it && n < max; it = it->ifa_next) {
		struct sv_gid_entry *e = &tab[n];

		if (!it->ifa_addr || !(it->ifa_flags & IFF_UP))
			continue;
		if (it->ifa_addr->sa_family != AF_INET &&
		    it->ifa_addr->sa_family != AF_INET6)
			continue;
		memset(e, 0, sizeof(*e));
		sv_sockaddr_to_gid(it->ifa_addr, &e->gid);
		memcpy(&e->addr, it->ifa_addr,
		       it->ifa_addr->sa_family == AF_INET ?
			       sizeof(struct sockaddr_in) :
			       sizeof(struct sockaddr_in6));
		e->ifindex = if_nametoindex(it->ifa_name);
		e->gid_type = IBV_GID_TYPE_ROCE_V2;
		n++;
	}
	freeifaddrs(ifa);
	qsort(tab, n, sizeof(*tab), gid_entry_cmp);
	return n;
}

/* RoCE: the IB MTU is the largest one that fits in the interface MTU after
 * the Ethernet/IP/UDP/BTH overhead, capped at 4096. */
static enum ibv_mtu mtu_from_netdev(int mtu)
{
	const int overhead =
		14 + 40 + 8 + 12 + 16 + 4; /* eth+ipv6+udp+bth+ext+icrc */
	int room = mtu - overhead;

	if (room >= 4096)
		return IBV_MTU_4096;
	if (room >= 2048)
		return IBV_MTU_2048;
	if (room >= 1024)
		return IBV_MTU_1024;
	if (room >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

/* One port covers every interface: its MTU is the smallest of the non-loopback
 * interfaces that are up, or loopback's when nothing else is (a namespace
 * with only lo).  SOFTVERBS_MTU=256..4096 overrides. */
enum ibv_mtu sv_port_scan_mtu(void)
{
	struct ifaddrs *ifa, *it;
	int fd, min_mtu = 0, lo_mtu = 0;

	if (sv_env_mtu())
		return mtu_from_netdev(sv_env_mtu() + 200);
	if (getifaddrs(&ifa))
		return IBV_MTU_1024;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	for (it = ifa; it && fd >= 0; it = it->ifa_next) {
		struct ifreq ifr;

		if (!it->ifa_addr || it->ifa_addr->sa_family != AF_INET ||
		    !(it->ifa_flags & IFF_UP))
			continue;
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s",
			 it->ifa_name);
		if (ioctl(fd, SIOCGIFMTU, &ifr))
			continue;
		if (it->ifa_flags & IFF_LOOPBACK)
			lo_mtu = ifr.ifr_mtu;
		else if (!min_mtu || ifr.ifr_mtu < min_mtu)
			min_mtu = ifr.ifr_mtu;
	}
	if (fd >= 0)
		close(fd);
	freeifaddrs(ifa);
	if (!min_mtu)
		min_mtu = lo_mtu ? lo_mtu : 1500;
	return mtu_from_netdev(min_mtu);
}

void sv_device_attr(struct ibv_device_attr *a)
{
	struct sv_device *d = sv_device_get();

	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", SV_FW_VER);
	a->node_guid = d->node_guid;
	a->sys_image_guid = d->sys_image_guid;
	a->max_mr_size = SV_MAX_MR_SIZE;
	a->page_size_cap = 0xfffff000; /* any page size from 4 KiB */
	a->vendor_id = SV_VENDOR_ID;
	a->vendor_part_id = SV_VENDOR_PART_ID;
	a->hw_ver = SV_HW_VER;
	a->max_qp = SV_MAX_QP;
	a->max_qp_wr = SV_MAX_QP_WR;
	/* MEM_WINDOW, TYPE_2B, MEM_MGT_EXTENSIONS: core/mw.c's windows of
	 * type 1 and 2B (bound to a QP, checked against its PD and number)
	 * and local and remote invalidation, the memory management
	 * extensions a user can reach (fast registration has no user verb).
	 * XRC: core/xrc.c and engine/transport/xrc.c (domains shared within a
	 * process). */
	a->device_cap_flags =
		IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SHUTDOWN_PORT |
		IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_PORT_ACTIVE_EVENT |
		IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_N_NOTIFY_CQ |
		IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_MEM_WINDOW |
		IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_MEM_MGT_EXTENSIONS |
		IBV_DEVICE_XRC;
	a->max_sge = SV_MAX_SGE;
	a->max_sge_rd = SV_MAX_SGE;
	a->max_cq = SV_MAX_CQ;
	a->max_cqe = SV_MAX_CQE - 1;
	a->max_mr = SV_MAX_MR;
	a->max_pd = SV_MAX_PD;
	a->max_qp_rd_atom = SV_MAX_RD_ATOMIC;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = SV_MAX_RD_ATOMIC * SV_MAX_QP;
	a->max_qp_init_rd_atom = SV_MAX_RD_ATOMIC;
	a->max_ee_init_rd_atom = 0;
	/* Atomics are performed by the responder's process under one lock per
	 * device, so they are atomic with respect to each other (HCA) only. */
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ee = 0;
	a->max_rdd = 0;
	a->max_mw = SV_MAX_MW;
	a->max_raw_ipv6_qp = 0;
	a->max_raw_ethy_qp = 0;
	a->max_mcast_grp = SV_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = SV_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach =
		SV_MAX_MCAST_GRP * SV_MAX_MCAST_QP_ATTACH;
	a->max_ah = SV_MAX_AH;
	a->max_fmr = 0;
	a->max_map_per_fmr = 0;
	a->max_srq = SV_MAX_SRQ;
	a->max_srq_wr = SV_MAX_SRQ_WR;
	a->max_srq_sge = SV_MAX_SGE;
	a->max_pkeys = SV_MAX_PKEYS;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

void sv_port_attr(struct ibv_port_attr *a)
{
	struct sv_gid_entry tab[SV_MAX_GIDS];
	/* The port is up while the host has an address to carry RoCE: no
	 * interface up with an address means no GID and no traffic (the
	 * address monitor raises PORT_ERR / PORT_ACTIVE on the change). */
	bool up = sv_gid_table(tab, SV_MAX_GIDS) > 0;

	memset(a, 0, sizeof(*a));
	a->state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = sv_port_active_mtu();
	a->gid_tbl_len = SV_MAX_GIDS;
	a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	a->max_msg_sz = SV_MAX_MSG_SIZE;
	a->bad_pkey_cntr = 0;
	a->qkey_viol_cntr = 0;
	a->pkey_tbl_len = SV_MAX_PKEYS;
	a->lid = 0;
	a->sm_lid = 0;
	a->lmc = 0;
	a->max_vl_num = 1;
	a->sm_sl = 0;
	a->subnet_timeout = 0;
	a->init_type_reply = 0;
	a->active_width = 2; /* 4X */
	a->active_speed =
		32; /* EDR (25 Gb/s per lane): a software link has no fixed rate */
	a->phys_state = up ? 5 : 3; /* LinkUp, Disabled */
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	a->flags = 0;
	a->port_cap_flags2 = 0;
}
