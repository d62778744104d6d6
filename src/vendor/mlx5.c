/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libmlx5.so.1 stand-in: every function rdma-core 65's libmlx5 exports, at
 * every version it exports it (libmlx5.map: MLX5_1.0 .. MLX5_1.27), so that any unmodified binary
 * linked against mlx5 direct verbs loads on softverbs: perftest, UCX's
 * libuct_ib, pyverbs' mlx5dv module, DPDK, ...
 *
 * rdma-core's real libmlx5 is a provider: it needs libibverbs' private
 * provider interface (IBVERBS_PRIVATE_34), which our libibverbs does not
 * offer, so it cannot be loaded next to it.  Programs call mlx5dv_* only
 * for Mellanox devices (they ask mlx5dv_is_supported() or look at the
 * device's name first); softverbs0 is not one, so every function answers
 * what the real library answers for a device, or an object, that is not
 * mlx5's.  The answers below are grouped by return convention, as read in
 * rdma-core 44's sources and man pages (mlx5dv.h for the prototypes).
 */
#include <infiniband/mlx5dv.h>

#include <string.h>

#include "stub.h"

/* The real one checks the device's provider ops: never mlx5's here. */
SV_EXPORT bool mlx5dv_is_supported(struct ibv_device *device)
{
	return false;
}

/* ---- Constructors and lookups: NULL, errno EOPNOTSUPP ---------------- */

SV_STUB_NULL(struct ibv_dm *, mlx5dv_alloc_dm, struct ibv_context *context,
	     struct ibv_alloc_dm_attr *dm_attr,
	     struct mlx5dv_alloc_dm_attr *mlx5_dm_attr)
SV_STUB_NULL(struct mlx5dv_var *, mlx5dv_alloc_var, struct ibv_context *context,
	     uint32_t flags)
SV_STUB_NULL(struct ibv_cq_ex *, mlx5dv_create_cq, struct ibv_context *context,
	     struct ibv_cq_init_attr_ex *cq_attr,
	     struct mlx5dv_cq_init_attr *mlx5_cq_attr)
/* A function up to rdma-core 62's header, a macro over __mlx5dv_create_flow
 * since 63: defined by its symbol name (stub.h). */
SV_STUB_NULL_AS(struct ibv_flow *, mlx5dv_create_flow,
		struct mlx5dv_flow_matcher *matcher,
		struct mlx5dv_flow_match_parameters *match_value,
		size_t num_actions,
		struct mlx5dv_flow_action_attr actions_attr[])
SV_STUB_NULL(struct ibv_flow_action *, mlx5dv_create_flow_action_esp,
	     struct ibv_context *ctx, struct ibv_flow_action_esp_attr *esp,
	     struct mlx5dv_flow_action_esp *mlx5_attr)
SV_STUB_NULL(struct ibv_flow_action *, mlx5dv_create_flow_action_modify_header,
	     struct ibv_context *ctx, size_t actions_sz, uint64_t actions[],
	     enum mlx5dv_flow_table_type ft_type)
SV_STUB_NULL(struct ibv_flow_action *,
	     mlx5dv_create_flow_action_packet_reformat, struct ibv_context *ctx,
	     size_t data_sz, void *data,
	     enum mlx5dv_flow_action_packet_reformat_type reformat_type,
	     enum mlx5dv_flow_table_type ft_type)
SV_STUB_NULL(struct mlx5dv_flow_matcher *, mlx5dv_create_flow_matcher,
	     struct ibv_context *context,
	     struct mlx5dv_flow_matcher_attr *matcher_attr)
SV_STUB_NULL(struct mlx5dv_mkey *, mlx5dv_create_mkey,
	     struct mlx5dv_mkey_init_attr *mkey_init_attr)
SV_STUB_NULL(struct ibv_qp *, mlx5dv_create_qp, struct ibv_context *context,
	     struct ibv_qp_init_attr_ex *qp_attr,
	     struct mlx5dv_qp_init_attr *mlx5_qp_attr)
SV_STUB_NULL(struct mlx5dv_steering_anchor *, mlx5dv_create_steering_anchor,
	     struct ibv_context *context,
	     struct mlx5dv_steering_anchor_attr *attr)
SV_STUB_NULL(struct ibv_wq *, mlx5dv_create_wq, struct ibv_context *context,
	     struct ibv_wq_init_attr *wq_init_attr,
	     struct mlx5dv_wq_init_attr *mlx5_wq_attr)
SV_STUB_NULL(struct mlx5dv_crypto_login_obj *, mlx5dv_crypto_login_create,
	     struct ibv_context *context,
	     struct mlx5dv_crypto_login_attr_ex *login_attr)
SV_STUB_NULL(struct mlx5dv_dek *, mlx5dv_dek_create,
	     struct ibv_context *context,
	     struct mlx5dv_dek_init_attr *init_attr)
SV_STUB_NULL(struct mlx5dv_devx_msi_vector *, mlx5dv_devx_alloc_msi_vector,
	     struct ibv_context *ibctx)
SV_STUB_NULL(struct mlx5dv_devx_uar *, mlx5dv_devx_alloc_uar,
	     struct ibv_context *context, uint32_t flags)
SV_STUB_NULL(struct mlx5dv_devx_cmd_comp *, mlx5dv_devx_create_cmd_comp,
	     struct ibv_context *context)
SV_STUB_NULL(struct mlx5dv_devx_eq *, mlx5dv_devx_create_eq,
	     struct ibv_context *ibctx, const void *in, size_t inlen, void *out,
	     size_t outlen)
SV_STUB_NULL(struct mlx5dv_devx_event_channel *,
	     mlx5dv_devx_create_event_channel, struct ibv_context *context,
	     enum mlx5dv_devx_create_event_channel_flags flags)
SV_STUB_NULL(struct mlx5dv_devx_obj *, mlx5dv_devx_obj_create,
	     struct ibv_context *context, const void *in, size_t inlen,
	     void *out, size_t outlen)
SV_STUB_NULL(struct mlx5dv_devx_umem *, mlx5dv_devx_umem_reg,
	     struct ibv_context *ctx, void *addr, size_t size, uint32_t access)
SV_STUB_NULL(struct mlx5dv_devx_umem *, mlx5dv_devx_umem_reg_ex,
	     struct ibv_context *ctx, struct mlx5dv_devx_umem_in *umem_in)
SV_STUB_NULL(void *, mlx5dv_dm_map_op_addr, struct ibv_dm *dm, uint8_t op)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_aso,
	     struct mlx5dv_dr_domain *domain, struct mlx5dv_devx_obj *devx_obj,
	     uint32_t offset, uint32_t flags, uint8_t return_reg_c)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_array,
	     struct mlx5dv_dr_domain *domain, size_t num_dest,
	     struct mlx5dv_dr_action_dest_attr *dests[])
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_devx_tir,
	     struct mlx5dv_devx_obj *devx_obj)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_ib_port,
	     struct mlx5dv_dr_domain *domain, uint32_t ib_port)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_ibv_qp,
	     struct ibv_qp *ibqp)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_root_table,
	     struct mlx5dv_dr_table *table, uint16_t priority)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_table,
	     struct mlx5dv_dr_table *table)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_dest_vport,
	     struct mlx5dv_dr_domain *domain, uint32_t vport)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_flow_counter,
	     struct mlx5dv_devx_obj *devx_obj, uint32_t offset)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_flow_meter,
	     struct mlx5dv_dr_flow_meter_attr *attr)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_flow_sampler,
	     struct mlx5dv_dr_flow_sampler_attr *attr)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_modify_header,
	     struct mlx5dv_dr_domain *domain, uint32_t flags, size_t actions_sz,
	     __be64 actions[])
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_packet_reformat,
	     struct mlx5dv_dr_domain *domain, uint32_t flags,
	     enum mlx5dv_flow_action_packet_reformat_type reformat_type,
	     size_t data_sz, void *data)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_push_vlan,
	     struct mlx5dv_dr_domain *domain, __be32 vlan_hdr)
SV_STUB_NULL(struct mlx5dv_dr_domain *, mlx5dv_dr_domain_create,
	     struct ibv_context *ctx, enum mlx5dv_dr_domain_type type)
SV_STUB_NULL(struct mlx5dv_dr_matcher *, mlx5dv_dr_matcher_create,
	     struct mlx5dv_dr_table *table, uint16_t priority,
	     uint8_t match_criteria_enable,
	     struct mlx5dv_flow_match_parameters *mask)
SV_STUB_NULL(struct mlx5dv_dr_rule *, mlx5dv_dr_rule_create,
	     struct mlx5dv_dr_matcher *matcher,
	     struct mlx5dv_flow_match_parameters *value, size_t num_actions,
	     struct mlx5dv_dr_action *actions[])
SV_STUB_NULL(struct mlx5dv_dr_table *, mlx5dv_dr_table_create,
	     struct mlx5dv_dr_domain *domain, uint32_t level)
SV_STUB_NULL(struct ibv_device **, mlx5dv_get_vfio_device_list,
	     struct mlx5dv_vfio_context_attr *attr)
SV_STUB_NULL(struct ibv_context *, mlx5dv_open_device,
	     struct ibv_device *device, struct mlx5dv_context_attr *attr)
SV_STUB_NULL(struct mlx5dv_pp *, mlx5dv_pp_alloc, struct ibv_context *context,
	     size_t pp_context_sz, const void *pp_context, uint32_t flags)
SV_STUB_NULL(struct mlx5dv_sched_leaf *, mlx5dv_sched_leaf_create,
	     struct ibv_context *context,
	     const struct mlx5dv_sched_attr *sched_attr)
SV_STUB_NULL(struct mlx5dv_sched_node *, mlx5dv_sched_node_create,
	     struct ibv_context *context,
	     const struct mlx5dv_sched_attr *sched_attr)

/*
 * These four DR actions need no device, and the real ones just allocate
 * one; but an action is only usable in a rule of an mlx5 DR domain, which
 * cannot be created here (mlx5dv_dr_domain_create), so refuse it up front
 * rather than hand out an object with no use and nothing to check it.
 */
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_default_miss,
	     void)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_drop, void)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_pop_vlan, void)
SV_STUB_NULL(struct mlx5dv_dr_action *, mlx5dv_dr_action_create_tag,
	     uint32_t tag_value)

/*
 * The real function is a pointer conversion that cannot fail, valid only for
 * a QP made by mlx5dv_create_qp.  No such QP can exist here, so there is no
 * mlx5dv_qp_ex to return: NULL, errno EOPNOTSUPP, rather than a pointer into
 * some other provider's QP.
 */
SV_STUB_NULL(struct mlx5dv_qp_ex *, mlx5dv_qp_ex_from_ibv_qp_ex,
	     struct ibv_qp_ex *qp)

/* ---- "0 or the value of errno": EOPNOTSUPP --------------------------- */

SV_STUB_ERRNO(_mlx5dv_mkey_check, struct mlx5dv_mkey *mkey,
	      struct mlx5dv_mkey_err *err_info, size_t err_info_size)
SV_STUB_ERRNO(_mlx5dv_query_port, struct ibv_context *context,
	      uint32_t port_num, struct mlx5dv_port *info, size_t info_len)
SV_STUB_ERRNO(mlx5dv_crypto_login, struct ibv_context *context,
	      struct mlx5dv_crypto_login_attr *login_attr)
SV_STUB_ERRNO(mlx5dv_crypto_login_destroy,
	      struct mlx5dv_crypto_login_obj *crypto_login)
SV_STUB_ERRNO(mlx5dv_crypto_login_query,
	      struct mlx5dv_crypto_login_obj *crypto_login,
	      struct mlx5dv_crypto_login_query_attr *query_attr)
SV_STUB_ERRNO(mlx5dv_crypto_login_query_state, struct ibv_context *context,
	      enum mlx5dv_crypto_login_state *state)
SV_STUB_ERRNO(mlx5dv_crypto_logout, struct ibv_context *context)
SV_STUB_ERRNO(mlx5dv_dci_stream_id_reset, struct ibv_qp *qp, uint16_t stream_id)
SV_STUB_ERRNO(mlx5dv_dek_destroy, struct mlx5dv_dek *dek)
SV_STUB_ERRNO(mlx5dv_dek_query, struct mlx5dv_dek *dek,
	      struct mlx5dv_dek_attr *attr)
SV_STUB_ERRNO(mlx5dv_destroy_flow_matcher, struct mlx5dv_flow_matcher *matcher)
SV_STUB_ERRNO(mlx5dv_destroy_mkey, struct mlx5dv_mkey *mkey)
SV_STUB_ERRNO(mlx5dv_destroy_steering_anchor, struct mlx5dv_steering_anchor *sa)
SV_STUB_ERRNO(mlx5dv_devx_cq_modify, struct ibv_cq *cq, const void *in,
	      size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_cq_query, struct ibv_cq *cq, const void *in,
	      size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_destroy_eq, struct mlx5dv_devx_eq *eq)
SV_STUB_ERRNO(mlx5dv_devx_free_msi_vector, struct mlx5dv_devx_msi_vector *msi)
SV_STUB_ERRNO(mlx5dv_devx_general_cmd, struct ibv_context *context,
	      const void *in, size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_get_async_cmd_comp,
	      struct mlx5dv_devx_cmd_comp *cmd_comp,
	      struct mlx5dv_devx_async_cmd_hdr *cmd_resp, size_t cmd_resp_len)
SV_STUB_ERRNO(mlx5dv_devx_ind_tbl_modify, struct ibv_rwq_ind_table *ind_tbl,
	      const void *in, size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_ind_tbl_query, struct ibv_rwq_ind_table *ind_tbl,
	      const void *in, size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_obj_destroy, struct mlx5dv_devx_obj *obj)
SV_STUB_ERRNO(mlx5dv_devx_obj_modify, struct mlx5dv_devx_obj *obj,
	      const void *in, size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_obj_query, struct mlx5dv_devx_obj *obj,
	      const void *in, size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_obj_query_async, struct mlx5dv_devx_obj *obj,
	      const void *in, size_t inlen, size_t outlen, uint64_t wr_id,
	      struct mlx5dv_devx_cmd_comp *cmd_comp)
SV_STUB_ERRNO(mlx5dv_devx_qp_modify, struct ibv_qp *qp, const void *in,
	      size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_qp_query, struct ibv_qp *qp, const void *in,
	      size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_query_eqn, struct ibv_context *context,
	      uint32_t vector, uint32_t *eqn)
SV_STUB_ERRNO(mlx5dv_devx_srq_modify, struct ibv_srq *srq, const void *in,
	      size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_srq_query, struct ibv_srq *srq, const void *in,
	      size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_subscribe_devx_event,
	      struct mlx5dv_devx_event_channel *event_channel,
	      struct mlx5dv_devx_obj *obj, uint16_t events_sz,
	      uint16_t events_num[], uint64_t cookie)
SV_STUB_ERRNO(mlx5dv_devx_subscribe_devx_event_fd,
	      struct mlx5dv_devx_event_channel *event_channel, int fd,
	      struct mlx5dv_devx_obj *obj, uint16_t event_num)
SV_STUB_ERRNO(mlx5dv_devx_umem_dereg, struct mlx5dv_devx_umem *umem)
SV_STUB_ERRNO(mlx5dv_devx_wq_modify, struct ibv_wq *wq, const void *in,
	      size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_devx_wq_query, struct ibv_wq *wq, const void *in,
	      size_t inlen, void *out, size_t outlen)
SV_STUB_ERRNO(mlx5dv_dr_action_destroy, struct mlx5dv_dr_action *action)
SV_STUB_ERRNO(mlx5dv_dr_domain_destroy, struct mlx5dv_dr_domain *domain)
SV_STUB_ERRNO(mlx5dv_dr_matcher_destroy, struct mlx5dv_dr_matcher *matcher)
SV_STUB_ERRNO(mlx5dv_dr_rule_destroy, struct mlx5dv_dr_rule *rule)
SV_STUB_ERRNO(mlx5dv_dr_table_destroy, struct mlx5dv_dr_table *table)
SV_STUB_ERRNO(mlx5dv_dump_dr_domain, FILE *fout,
	      struct mlx5dv_dr_domain *domain)
SV_STUB_ERRNO(mlx5dv_dump_dr_matcher, FILE *fout,
	      struct mlx5dv_dr_matcher *matcher)
SV_STUB_ERRNO(mlx5dv_dump_dr_rule, FILE *fout, struct mlx5dv_dr_rule *rule)
SV_STUB_ERRNO(mlx5dv_dump_dr_table, FILE *fout, struct mlx5dv_dr_table *table)
SV_STUB_ERRNO(mlx5dv_get_clock_info, struct ibv_context *context,
	      struct mlx5dv_clock_info *clock_info)
SV_STUB_ERRNO(mlx5dv_map_ah_to_qp, struct ibv_ah *ah, uint32_t qp_num)
SV_STUB_ERRNO(mlx5dv_modify_qp_lag_port, struct ibv_qp *qp, uint8_t port_num)
SV_STUB_ERRNO(mlx5dv_modify_qp_sched_elem, struct ibv_qp *qp,
	      const struct mlx5dv_sched_leaf *requestor,
	      const struct mlx5dv_sched_leaf *responder)
SV_STUB_ERRNO(mlx5dv_modify_qp_udp_sport, struct ibv_qp *qp, uint16_t udp_sport)
SV_STUB_ERRNO(mlx5dv_query_device, struct ibv_context *ctx_in,
	      struct mlx5dv_context *attrs_out)
SV_STUB_ERRNO(mlx5dv_query_qp_lag_port, struct ibv_qp *qp, uint8_t *port_num,
	      uint8_t *active_port_num)
SV_STUB_ERRNO(mlx5dv_reserved_qpn_alloc, struct ibv_context *ctx, uint32_t *qpn)
SV_STUB_ERRNO(mlx5dv_reserved_qpn_dealloc, struct ibv_context *ctx,
	      uint32_t qpn)
SV_STUB_ERRNO(mlx5dv_sched_leaf_destroy, struct mlx5dv_sched_leaf *leaf)
SV_STUB_ERRNO(mlx5dv_sched_leaf_modify, struct mlx5dv_sched_leaf *leaf,
	      const struct mlx5dv_sched_attr *sched_attr)
SV_STUB_ERRNO(mlx5dv_sched_node_destroy, struct mlx5dv_sched_node *node)
SV_STUB_ERRNO(mlx5dv_sched_node_modify, struct mlx5dv_sched_node *node,
	      const struct mlx5dv_sched_attr *sched_attr)
SV_STUB_ERRNO(mlx5dv_set_context_attr, struct ibv_context *context,
	      enum mlx5dv_set_ctx_attr_type type, void *attr)
SV_STUB_ERRNO(mlx5dv_vfio_process_events, struct ibv_context *context)

/*
 * mlx5dv_init_obj: EOPNOTSUPP for objects of another provider.  The
 * compat MLX5_1.0 version, still bound by the oldest binaries, differs from
 * MLX5_1.2 only in what it does after a success, so it answers the same.
 */
SV_STUB_ERRNO(mlx5dv_init_obj, struct mlx5dv_obj *obj, uint64_t obj_type)
__typeof__(mlx5dv_init_obj) sv_compat_mlx5dv_init_obj_1_0;
SV_STUB_ERRNO(sv_compat_mlx5dv_init_obj_1_0, struct mlx5dv_obj *obj,
	      uint64_t obj_type)
SV_COMPAT_SYMBOL(sv_compat_mlx5dv_init_obj_1_0, mlx5dv_init_obj, "MLX5_1.0");

/* ---- Steering (DR) calls that set errno to what they return ---------- */

SV_STUB_ERRNO_SET(mlx5dv_dr_action_modify_aso, struct mlx5dv_dr_action *action,
		  uint32_t offset, uint32_t flags, uint8_t return_reg_c)
SV_STUB_ERRNO_SET(mlx5dv_dr_action_modify_flow_meter,
		  struct mlx5dv_dr_action *action,
		  struct mlx5dv_dr_flow_meter_attr *attr,
		  __be64 modify_field_select)
SV_STUB_ERRNO_SET(mlx5dv_dr_aso_other_domain_link,
		  struct mlx5dv_devx_obj *devx_obj,
		  struct mlx5dv_dr_domain *peer_dmn,
		  struct mlx5dv_dr_domain *dmn, uint32_t flags,
		  uint8_t return_reg_c)
SV_STUB_ERRNO_SET(mlx5dv_dr_aso_other_domain_unlink,
		  struct mlx5dv_devx_obj *devx_obj,
		  struct mlx5dv_dr_domain *dmn)
SV_STUB_ERRNO_SET(mlx5dv_dr_domain_sync, struct mlx5dv_dr_domain *domain,
		  uint32_t flags)
SV_STUB_ERRNO_SET(mlx5dv_dr_matcher_set_layout,
		  struct mlx5dv_dr_matcher *matcher,
		  struct mlx5dv_dr_matcher_layout *layout)

/* ---- -1, errno EOPNOTSUPP -------------------------------------------- */

/* ssize_t: the length of the event read from the channel, or -1. */
SV_STUB_MINUS1(ssize_t, mlx5dv_devx_get_event,
	       struct mlx5dv_devx_event_channel *event_channel,
	       struct mlx5dv_devx_async_event_hdr *event_data,
	       size_t event_resp_len)

/*
 * The real one returns the VFIO context's event fd without checking that
 * the context is one (it only exists for devices opened through
 * mlx5dv_get_vfio_device_list); for any other context there is no fd.
 */
SV_STUB_MINUS1(int, mlx5dv_vfio_get_events_fd, struct ibv_context *ibctx)

/* ---- "number of WRs cancelled, or -errno": -EOPNOTSUPP --------------- */

SV_STUB_NEG_ERRNO(mlx5dv_qp_cancel_posted_send_wrs, struct mlx5dv_qp_ex *mqp,
		  uint64_t wr_id)

/* ---- void: releases of objects that cannot exist, settings of domains
 * that cannot exist: nothing to do ------------------------------------- */

SV_STUB_VOID(mlx5dv_devx_destroy_cmd_comp,
	     struct mlx5dv_devx_cmd_comp *cmd_comp)
SV_STUB_VOID(mlx5dv_devx_destroy_event_channel,
	     struct mlx5dv_devx_event_channel *event_channel)
SV_STUB_VOID(mlx5dv_devx_free_uar, struct mlx5dv_devx_uar *devx_uar)
SV_STUB_VOID(mlx5dv_dr_domain_allow_duplicate_rules,
	     struct mlx5dv_dr_domain *domain, bool allow)
SV_STUB_VOID(mlx5dv_dr_domain_set_reclaim_device_memory,
	     struct mlx5dv_dr_domain *dmn, bool enable)
SV_STUB_VOID(mlx5dv_free_var, struct mlx5dv_var *dv_var)
SV_STUB_VOID(mlx5dv_pp_free, struct mlx5dv_pp *pp)

/* ---- Added after rdma-core 44 (MLX5_1.25 .. MLX5_1.27), by symbol name:
 * the oldest headers softverbs builds against do not declare them. ---- */

SV_STUB_NULL_AS(struct ibv_mr *, mlx5dv_reg_dmabuf_mr, struct ibv_pd *pd,
		uint64_t offset, size_t length, uint64_t iova, int fd,
		int access, int mlx5_access)
SV_STUB_ERRNO_AS(mlx5dv_get_data_direct_sysfs_path, struct ibv_context *context,
		 char *buf, size_t buf_len)
SV_STUB_NULL_AS(struct ibv_flow *, __mlx5dv_create_flow,
		struct mlx5dv_flow_matcher *matcher,
		struct mlx5dv_flow_match_parameters *match_value,
		size_t num_actions,
		struct mlx5dv_flow_action_attr actions_attr[], size_t attr_len)
SV_STUB_MINUS1_AS(int, mlx5dv_devx_uar_export_dmabuf_fd,
		  struct mlx5dv_devx_uar *devx_uar)

/*
 * Export and import of DEVX objects, UMEMs and VARs between processes:
 * none of them can be created here, so there is nothing to export, and an
 * import (whose real version trusts the attributes and allocates a handle
 * without asking the device) is refused rather than handing out an object
 * no call here can use.
 */
SV_STUB_ERRNO_AS(mlx5dv_devx_obj_export, struct mlx5dv_devx_obj *obj,
		 void *data)
SV_STUB_NULL_AS(struct mlx5dv_devx_obj *, mlx5dv_devx_obj_import,
		struct ibv_context *context, void *data)
SV_STUB_VOID_AS(mlx5dv_devx_obj_unimport, struct mlx5dv_devx_obj *obj)
SV_STUB_ERRNO_AS(mlx5dv_devx_umem_export, struct mlx5dv_devx_umem *umem,
		 void *data)
SV_STUB_NULL_AS(struct mlx5dv_devx_umem *, mlx5dv_devx_umem_import,
		struct ibv_context *context, void *data)
SV_STUB_VOID_AS(mlx5dv_devx_umem_unimport, struct mlx5dv_devx_umem *umem)
SV_STUB_ERRNO_AS(mlx5dv_var_export, struct mlx5dv_var *dv_var, void *data)
SV_STUB_NULL_AS(struct mlx5dv_var *, mlx5dv_var_import,
		struct ibv_context *context, void *data)
SV_STUB_VOID_AS(mlx5dv_var_unimport, struct mlx5dv_var *dv_var)

/* The sizes of the export attributes (struct mlx5dv_export_sizes, zeroed
 * to the caller's length as the real one does first): all 0, since
 * nothing can be exported. */
SV_ASM_DECL(void, _mlx5dv_get_export_sizes, void *sizes, size_t sizes_len)
void sv__mlx5dv_get_export_sizes(void *sizes, size_t sizes_len)
{
	memset(sizes, 0, sizes_len);
}
