/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Devices and contexts: ibv_get_device_list and friends, open/close, and
 * the device, port, GID and P_Key queries of softverbs0.
 */
#include "verbs/verbs.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "paths/paths.h"
#include "util/forks.h"
#include "util/log.h"
#include "verbs/share.h"

/* ---- device list -------------------------------------------------------- */

SV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = &sv_device_get()->ibdev;
	if (num_devices)
		*num_devices = 1;
	return list;
}

SV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

SV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

SV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return sv_container_of(device, struct sv_device, ibdev)->node_guid;
}

SV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return 0;
}

/* ---- contexts ----------------------------------------------------------- */

static int sv_query_port_ex(struct ibv_context *context, uint8_t port_num,
			    struct ibv_port_attr *port_attr,
			    size_t port_attr_len);
static int sv_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr,
			      size_t attr_size);
static int sv_compat_query_port(struct ibv_context *context, uint8_t port_num,
				struct _compat_ibv_port_attr *port_attr);

/* Every operation of a context, in one table: a provider's ops as rdma-core
 * lays them out, the public ibv_context_ops the header's inline verbs jump
 * through and the extended entries of verbs_context.  What is left out
 * (NULL) the header answers with EOPNOTSUPP: the flow steering, WQ,
 * RWQ table and counters entries. */
static const struct verbs_context sv_ctx_ops = {
	.query_port = sv_query_port_ex,
	.query_device_ex = sv_query_device_ex,
	.create_cq_ex = sv_create_cq_ex,
	.query_rt_values = sv_query_rt_values,
	.create_qp_ex = sv_create_qp_ex,
	.open_xrcd = sv_open_xrcd,
	.close_xrcd = sv_close_xrcd,
	.create_srq_ex = sv_create_srq_ex,
	.get_srq_num = sv_get_srq_num,
	.open_qp = sv_open_qp,
	.advise_mr = sv_advise_mr,
	.modify_cq = sv_modify_cq,
	.alloc_td = sv_alloc_td,
	.dealloc_td = sv_dealloc_td,
	.alloc_parent_domain = sv_alloc_parent_domain,
	.alloc_dm = sv_alloc_dm,
	.free_dm = sv_free_dm,
	.reg_dm_mr = sv_reg_dm_mr,
	.context.ops = {
		._compat_query_port = sv_compat_query_port,
		.poll_cq = sv_poll_cq,
		.req_notify_cq = sv_req_notify_cq,
		.post_send = sv_post_send,
		.post_recv = sv_post_recv,
		.post_srq_recv = sv_post_srq_recv,
		.alloc_mw = sv_alloc_mw,
		.dealloc_mw = sv_dealloc_mw,
		.bind_mw = sv_bind_mw,
	},
};

/* Copy the table's operations into a context being opened: the extended
 * entries are every field before sz (verbs.h: new entries are added at the
 * front), the rest of the context is its own. */
static void sv_ctx_ops_install(struct verbs_context *v)
{
	memcpy(v, &sv_ctx_ops, offsetof(struct verbs_context, sz));
	v->context.ops = sv_ctx_ops.context.ops;
}

/* A context of softverbs0: a new share (import_fd < 0) or one joining the
 * share behind import_fd (ibv_import_device). */
static struct ibv_context *open_context(int import_fd)
{
	struct sv_context *ctx;
	int err;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return sv_null_errno(ENOMEM);
	ctx->dev = sv_device_get();
	sv_forks_watch();
	pthread_mutex_init(&ctx->lock, NULL);
	list_head_init(&ctx->async_events);
	err = import_fd < 0 ? sv_share_new(ctx) : sv_share_join(ctx, import_fd);
	if (err) {
		free(ctx);
		return sv_null_errno(err);
	}
	if (pipe2(ctx->async_pipe, O_CLOEXEC)) {
		err = errno;
		goto fail_share;
	}

	struct verbs_context *v = &ctx->vctx;

	v->sz = sizeof(*v);
	v->context.device = &sv_device_get()->ibdev;
	v->context.async_fd = ctx->async_pipe[0];
	v->context.num_comp_vectors = 1;
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&v->context.mutex, NULL);
	sv_ctx_ops_install(v);

	if (sv_engine_open(ctx, &sv_paths)) {
		err = errno ? errno : ENOMEM;
		close(ctx->async_pipe[0]);
		close(ctx->async_pipe[1]);
		goto fail_share;
	}
	sv_engine_netmon_add(ctx);
	ctx->settle = sv_engine_settle;
	return &v->context;

fail_share:
	/* An imported fd stays the caller's when the import fails. */
	if (import_fd >= 0)
		ctx->vctx.context.cmd_fd = dup(import_fd);
	sv_share_leave(ctx);
	free(ctx);
	return sv_null_errno(err);
}

SV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	if (!device || device != &sv_device_get()->ibdev)
		return sv_null_errno(ENODEV);
	return open_context(-1);
}

SV_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct sv_context *ctx = to_sv_ctx(context);
	struct list_node *it, *tmp;

	sv_engine_netmon_del(ctx);
	sv_engine_close(ctx);
	list_for_each_safe (&ctx->async_events, it, tmp)
		free(list_entry(it, struct sv_async_event, node));
	close(ctx->async_pipe[0]);
	close(ctx->async_pipe[1]);
	sv_share_leave(ctx); /* closes cmd_fd */
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	return 0;
}

/* man ibv_import_device: cmd_fd is a dup of a context's cmd_fd, owned by
 * the new context from here on.  Contexts are shared within the process
 * (verbs/share.h). */
SV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	if (cmd_fd < 0) {
		sv_warn("ibv_import_device: cmd_fd %d is not a file descriptor",
			cmd_fd);
		return sv_null_errno(EBADF);
	}
	return open_context(cmd_fd);
}

/* ---- device and port queries -------------------------------------------- */

SV_EXPORT int ibv_query_device(struct ibv_context *context,
			       struct ibv_device_attr *device_attr)
{
	if (!device_attr)
		return EINVAL;
	sv_device_attr(device_attr);
	return 0;
}

static int sv_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	/* Every extended capability is stated, zero meaning "not offered":
	 * no
	 * TSO, RSS, WQs, packet pacing, raw packet QPs, tag matching, and
	 * no PCIe atomics (there is no PCIe device to perform them).  CQ
	 * moderation (ibv_modify_cq: rdma-core has no device_cap_flags_ex
	 * bit for it, cq_mod_caps says it), device memory (max_dm_size,
	 * verbs/dm.c), on-demand paging and IBA 1.5 ATOMIC WRITE are offered. */
	memset(&ex, 0, sizeof(ex));
	sv_device_attr(&ex.orig_attr);
	ex.device_cap_flags_ex =
		ex.orig_attr.device_cap_flags | SV_DEVICE_ATOMIC_WRITE;
	/* On-demand paging: softverbs pins nothing, and every access goes
	 * through the process's mapping as it is at that moment (a missing
	 * page is faulted in, an unmapped one is an error completion), so
	 * any MR can be on-demand: explicit and implicit registrations,
	 * every operation of every transport, SRQ receives included.  Bit 31
	 * is the kernel's IB_DEVICE_ON_DEMAND_PAGING. */
	ex.device_cap_flags_ex |= 1ULL << 31;
	ex.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	ex.odp_caps.per_transport_caps.rc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	ex.odp_caps.per_transport_caps.uc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
	ex.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND |
						     IBV_ODP_SUPPORT_RECV |
						     IBV_ODP_SUPPORT_SRQ_RECV;
	ex.xrc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE |
			  IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
			  IBV_ODP_SUPPORT_SRQ_RECV;
	/* Completion timestamps are real (verbs/cq_ex.c): a 64-bit
	 * CLOCK_MONOTONIC count of nanoseconds, i.e. a 1 GHz device clock
	 * (hca_core_clock is in kHz). */
	ex.completion_timestamp_mask = UINT64_MAX;
	ex.hca_core_clock = 1000000;
	ex.phys_port_cnt_ex = 1;
	ex.cq_mod_caps.max_cq_count = SV_MAX_CQ_MOD_COUNT;
	ex.cq_mod_caps.max_cq_period = SV_MAX_CQ_MOD_PERIOD;
	ex.max_dm_size = SV_MAX_DM_SIZE;
	/* Zeroed whole first (rdma-core does): newer headers' fields that
	 * we do not know read as "not offered". */
	memset(attr, 0, attr_size);
	memcpy(attr, &ex, attr_size < sizeof(ex) ? attr_size : sizeof(ex));
	return 0;
}

static int sv_query_port_ex(struct ibv_context *context, uint8_t port_num,
			    struct ibv_port_attr *port_attr,
			    size_t port_attr_len)
{
	struct ibv_port_attr pa;

	if (port_num != SV_PORT || !port_attr)
		return EINVAL;
	sv_port_attr(&pa);
	/* The caller's struct may be longer than ours (newer headers append
	 * fields, e.g. active_speed_ex since rdma-core 49): zeroed whole, as
	 * rdma-core does, so that what we do not know reads as "none". */
	memset(port_attr, 0, port_attr_len);
	memcpy(port_attr, &pa,
	       port_attr_len < sizeof(pa) ? port_attr_len : sizeof(pa));
	return 0;
}

/* rdma-core 64 (IBVERBS_1.16): the port's effective bandwidth.  As on
 * rxe, whose provider has no such query: EOPNOTSUPP, and callers
 * (ibv_devinfo) fall back to the port attributes. */
SV_EXPORT int ibv_query_port_speed(struct ibv_context *context,
				   uint32_t port_num, uint64_t *port_speed)
{
	return EOPNOTSUPP;
}

/* The compat struct is the prefix of ibv_port_attr up to link_layer. */
static int sv_compat_query_port(struct ibv_context *context, uint8_t port_num,
				struct _compat_ibv_port_attr *port_attr)
{
	return sv_query_port_ex(context, port_num,
				(struct ibv_port_attr *)port_attr,
				offsetof(struct ibv_port_attr, flags));
}

/* Exported for binaries whose inline ___ibv_query_port found no
 * query_port in the verbs_context (old headers). */
#undef ibv_query_port
SV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			     struct _compat_ibv_port_attr *port_attr)
{
	return sv_compat_query_port(context, port_num, port_attr);
}

/* ---- GIDs --------------------------------------------------------------- */

SV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
				uint32_t gid_index, struct ibv_gid_entry *entry,
				uint32_t flags, size_t entry_size)
{
	struct sv_gid_entry tab[SV_MAX_GIDS];
	struct ibv_gid_entry e;
	int n;

	if (port_num != SV_PORT || flags || !entry ||
	    gid_index >= SV_MAX_GIDS || entry_size < sizeof(e))
		return EINVAL;
	n = sv_gid_table(tab, SV_MAX_GIDS);
	if ((int)gid_index >= n)
		return ENODATA;
	memset(&e, 0, sizeof(e));
	e.gid = tab[gid_index].gid;
	e.gid_index = gid_index;
	e.port_num = SV_PORT;
	e.gid_type = IBV_GID_TYPE_ROCE_V2;
	e.ndev_ifindex = tab[gid_index].ifindex;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

SV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
				       struct ibv_gid_entry *entries,
				       size_t max_entries, uint32_t flags,
				       size_t entry_size)
{
	struct sv_gid_entry tab[SV_MAX_GIDS];
	int i, n;

	if (flags || !entries || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	n = sv_gid_table(tab, SV_MAX_GIDS);
	if ((size_t)n > max_entries)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct ibv_gid_entry *e =
			(void *)((char *)entries + i * entry_size);

		memset(e, 0, entry_size);
		e->gid = tab[i].gid;
		e->gid_index = i;
		e->port_num = SV_PORT;
		e->gid_type = IBV_GID_TYPE_ROCE_V2;
		e->ndev_ifindex = tab[i].ifindex;
	}
	return n;
}

/* Returns 0 or -1 (errno set), as rdma-core; an empty slot reads as zero. */
SV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
			    int index, union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int ret;

	if (index < 0) {
		errno = EINVAL;
		return -1;
	}
	ret = _ibv_query_gid_ex(context, port_num, index, &e, 0, sizeof(e));
	if (ret == ENODATA) {
		memset(gid, 0, sizeof(*gid));
		return 0;
	}
	if (ret) {
		errno = ret;
		return -1;
	}
	*gid = e.gid;
	return 0;
}

/* rdma-core's provider-private enum (driver.h), kept by value. */
enum sv_gid_type_sysfs {
	SV_GID_TYPE_SYSFS_IB_ROCE_V1,
	SV_GID_TYPE_SYSFS_ROCE_V2
};

SV_EXPORT int sv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				unsigned int index,
				enum sv_gid_type_sysfs *type)
{
	struct ibv_gid_entry e;
	int ret = _ibv_query_gid_ex(context, port_num, index, &e, 0, sizeof(e));

	if (ret == ENODATA) {
		*type = SV_GID_TYPE_SYSFS_IB_ROCE_V1;
		return 0;
	}
	if (ret) {
		errno = ret;
		return -1;
	}
	*type = SV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

/* ibv_query_gid_type is in rdma-core's private node, which is renamed
 * whenever the provider interface changes (IBVERBS_PRIVATE_34 up to
 * rdma-core 56, _57, _59, _64, _65); ibv_devinfo and pyverbs import it
 * under the name of the release they were built against, so it is bound
 * under every name, the newest as the default. */
SV_COMPAT_SYMBOL(sv_query_gid_type, ibv_query_gid_type, "IBVERBS_PRIVATE_34");
SV_COMPAT_SYMBOL(sv_query_gid_type, ibv_query_gid_type, "IBVERBS_PRIVATE_57");
SV_COMPAT_SYMBOL(sv_query_gid_type, ibv_query_gid_type, "IBVERBS_PRIVATE_59");
SV_COMPAT_SYMBOL(sv_query_gid_type, ibv_query_gid_type, "IBVERBS_PRIVATE_64");
SV_COMPAT_SYMBOL(sv_query_gid_type, ibv_query_gid_type, "@IBVERBS_PRIVATE_65");

/* ---- P_Keys ------------------------------------------------------------- */

SV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
			     int index, __be16 *pkey)
{
	if (port_num != SV_PORT || index < 0 || index >= SV_MAX_PKEYS ||
	    !pkey) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(SV_DEFAULT_PKEY);
	return 0;
}

SV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
				 __be16 pkey)
{
	/* An exact match in the table, as rdma-core's table walk does. */
	if (port_num == SV_PORT && pkey == htobe16(SV_DEFAULT_PKEY))
		return 0;
	errno = EINVAL;
	return -1;
}
