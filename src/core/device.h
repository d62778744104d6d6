/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The one software device, softverbs0: identity, limits, port and GID table. */
#ifndef SV_CORE_DEVICE_H
#define SV_CORE_DEVICE_H

#include "core/objects.h"

#define SV_DEVICE_NAME "softverbs0"

struct sv_device *sv_device_get(void);

/* A fresh snapshot of the host's addresses as RoCE v2 GIDs, in a stable
 * order (interface index, then IPv4 before IPv6, then address): a
 * getifaddrs, some 100 us.  sv_gid_table is the same, cached (gids.c). */
int sv_gid_scan(struct sv_gid_entry *tab, int max);
int sv_gid_table(struct sv_gid_entry *tab, int max);

/* GID -> IP socket address (IPv4-mapped GIDs become AF_INET). */
void sv_gid_to_sockaddr(const union ibv_gid *gid, struct sockaddr_storage *ss);
/* IP socket address -> GID. */
void sv_sockaddr_to_gid(const struct sockaddr *sa, union ibv_gid *gid);

/* Is this GID one of ours right now? */
bool sv_gid_is_local(const union ibv_gid *gid);

void sv_device_attr(struct ibv_device_attr *attr);
/* Fills the first len bytes of an ibv_port_attr (compat callers pass less). */
void sv_port_attr(struct ibv_port_attr *attr);
/* The port's active MTU from the interfaces' (fresh: sv_port_scan_mtu;
 * cached with the GID table: sv_port_active_mtu). */
enum ibv_mtu sv_port_scan_mtu(void);
enum ibv_mtu sv_port_active_mtu(void);

/* The address monitor (engine/forward/netmon.c) keeps the cache honest: its
 * subscribed netlink socket `fd` tells of the host's address and link
 * changes (-1: nobody watches, every read scans afresh), and it brackets
 * each read of a message from that socket with sv_gid_cache_recv_begin
 * and sv_gid_cache_recv_end. */
void sv_gid_cache_watch(int fd);
void sv_gid_cache_recv_begin(void);
void sv_gid_cache_recv_end(void);
/* For caches of what the kernel decides from the host's addresses and
 * routes (link/udp.c: the source address it picks): a generation that
 * moves with every message the monitor reads (its socket also hears of
 * routes), or 0 when nobody watches or a message is being read (then
 * cache nothing).  One atomic load: unlike the GID table's check it does
 * not ask whether a message waits, so a change is seen once the monitor
 * reads it, microseconds to milliseconds later. */
uint64_t sv_net_gen(void);

#endif
