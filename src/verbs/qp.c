/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Queue pairs: ibv_create_qp, ibv_query_qp, ibv_modify_qp (the IBA state
 * machine), ibv_destroy_qp and the small QP queries.
 *
 * The transition table is the one of IBA 10.3.1 (Table 91, "QP state
 * transition properties") as the kernel's ib_modify_qp_is_ok() encodes
 * it: for each (current, next) state and service type, the attributes a
 * modify must carry and the ones it may carry.  Anything else is EINVAL,
 * before any attribute changes (IBA 11.2.5.2: a failed modify leaves the
 * QP untouched).
 *
 * modify_qp calls the engine with qp->state_lock held (util/lockorder.h
 * has the order of every lock).
 */
#include "verbs/verbs.h"
#include "engine/diag/stats.h"

#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/cq.h"
#include "core/xrc.h"
#include "engine/engine.h"
#include "engine/transport/stats.h"
#include "engine/forward/xrcfwd.h"
#include "util/lockorder.h"
#include "verbs/objcheck.h"
#include "verbs/share.h"

/* ---- the state machine -------------------------------------------------- */

/* Columns of the table: the kernel's qp_state_table has XRC_INI (our
 * XRC_SEND) and XRC_TGT (XRC_RECV) columns beside RC, UC and UD. */
enum { T_RC, T_UC, T_UD, T_XI, T_XT, T_NUM };

struct qp_transition {
	bool valid;
	int req[T_NUM];
	int opt[T_NUM];
};

#define Q(x) IBV_QP_##x

static const struct qp_transition qp_table[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.req = {
				[T_RC] = Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS),
				[T_UC] = Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS),
				[T_UD] = Q(PKEY_INDEX) | Q(PORT) | Q(QKEY),
				[T_XI] = Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS),
				[T_XT] = Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS),
			},
		},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.opt = {
				[T_RC] = Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS),
				[T_UC] = Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS),
				[T_UD] = Q(PKEY_INDEX) | Q(PORT) | Q(QKEY),
				[T_XI] = Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS),
				[T_XT] = Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS),
			},
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.req = {
				[T_RC] = Q(AV) | Q(PATH_MTU) | Q(DEST_QPN) | Q(RQ_PSN) |
					 Q(MAX_DEST_RD_ATOMIC) | Q(MIN_RNR_TIMER),
				[T_UC] = Q(AV) | Q(PATH_MTU) | Q(DEST_QPN) | Q(RQ_PSN),
				[T_XI] = Q(AV) | Q(PATH_MTU) | Q(DEST_QPN) | Q(RQ_PSN),
				[T_XT] = Q(AV) | Q(PATH_MTU) | Q(DEST_QPN) | Q(RQ_PSN) |
					 Q(MAX_DEST_RD_ATOMIC) | Q(MIN_RNR_TIMER),
			},
			.opt = {
				[T_RC] = Q(ALT_PATH) | Q(ACCESS_FLAGS) | Q(PKEY_INDEX),
				[T_UC] = Q(ALT_PATH) | Q(ACCESS_FLAGS) | Q(PKEY_INDEX),
				[T_UD] = Q(PKEY_INDEX) | Q(QKEY),
				[T_XI] = Q(ALT_PATH) | Q(ACCESS_FLAGS) | Q(PKEY_INDEX),
				[T_XT] = Q(ALT_PATH) | Q(ACCESS_FLAGS) | Q(PKEY_INDEX),
			},
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.req = {
				[T_RC] = Q(TIMEOUT) | Q(RETRY_CNT) | Q(RNR_RETRY) |
					 Q(SQ_PSN) | Q(MAX_QP_RD_ATOMIC),
				[T_UC] = Q(SQ_PSN),
				[T_UD] = Q(SQ_PSN),
				[T_XI] = Q(TIMEOUT) | Q(RETRY_CNT) | Q(RNR_RETRY) |
					 Q(SQ_PSN) | Q(MAX_QP_RD_ATOMIC),
				[T_XT] = Q(TIMEOUT) | Q(SQ_PSN),
			},
			.opt = {
				[T_RC] = Q(CUR_STATE) | Q(ALT_PATH) | Q(ACCESS_FLAGS) |
					 Q(MIN_RNR_TIMER) | Q(PATH_MIG_STATE),
				[T_UC] = Q(CUR_STATE) | Q(ALT_PATH) | Q(ACCESS_FLAGS) |
					 Q(PATH_MIG_STATE),
				[T_UD] = Q(CUR_STATE) | Q(QKEY),
				[T_XI] = Q(CUR_STATE) | Q(ALT_PATH) | Q(ACCESS_FLAGS) |
					 Q(PATH_MIG_STATE),
				[T_XT] = Q(CUR_STATE) | Q(ALT_PATH) | Q(ACCESS_FLAGS) |
					 Q(MIN_RNR_TIMER) | Q(PATH_MIG_STATE),
			},
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = Q(CUR_STATE) | Q(ACCESS_FLAGS) | Q(ALT_PATH) |
					 Q(PATH_MIG_STATE) | Q(MIN_RNR_TIMER),
				[T_UC] = Q(CUR_STATE) | Q(ACCESS_FLAGS) | Q(ALT_PATH) |
					 Q(PATH_MIG_STATE),
				[T_UD] = Q(CUR_STATE) | Q(QKEY),
				[T_XI] = Q(CUR_STATE) | Q(ACCESS_FLAGS) | Q(ALT_PATH) |
					 Q(PATH_MIG_STATE),
				[T_XT] = Q(CUR_STATE) | Q(ACCESS_FLAGS) | Q(ALT_PATH) |
					 Q(PATH_MIG_STATE) | Q(MIN_RNR_TIMER),
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = Q(EN_SQD_ASYNC_NOTIFY),
				[T_UC] = Q(EN_SQD_ASYNC_NOTIFY),
				[T_UD] = Q(EN_SQD_ASYNC_NOTIFY),
				[T_XI] = Q(EN_SQD_ASYNC_NOTIFY),
				[T_XT] = Q(EN_SQD_ASYNC_NOTIFY),
			},
		},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = Q(CUR_STATE) | Q(ALT_PATH) | Q(ACCESS_FLAGS) |
					 Q(MIN_RNR_TIMER) | Q(PATH_MIG_STATE),
				[T_UC] = Q(CUR_STATE) | Q(ALT_PATH) | Q(ACCESS_FLAGS) |
					 Q(PATH_MIG_STATE),
				[T_UD] = Q(CUR_STATE) | Q(QKEY),
				[T_XI] = Q(CUR_STATE) | Q(ALT_PATH) | Q(ACCESS_FLAGS) |
					 Q(PATH_MIG_STATE),
				[T_XT] = Q(CUR_STATE) | Q(ALT_PATH) | Q(ACCESS_FLAGS) |
					 Q(MIN_RNR_TIMER) | Q(PATH_MIG_STATE),
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = Q(PORT) | Q(AV) | Q(TIMEOUT) | Q(RETRY_CNT) |
					 Q(RNR_RETRY) | Q(MAX_QP_RD_ATOMIC) |
					 Q(MAX_DEST_RD_ATOMIC) | Q(ALT_PATH) |
					 Q(ACCESS_FLAGS) | Q(PKEY_INDEX) |
					 Q(MIN_RNR_TIMER) | Q(PATH_MIG_STATE),
				[T_UC] = Q(AV) | Q(ALT_PATH) | Q(ACCESS_FLAGS) |
					 Q(PKEY_INDEX) | Q(PATH_MIG_STATE),
				[T_UD] = Q(PKEY_INDEX) | Q(QKEY),
				[T_XI] = Q(PORT) | Q(AV) | Q(TIMEOUT) | Q(RETRY_CNT) |
					 Q(RNR_RETRY) | Q(MAX_QP_RD_ATOMIC) |
					 Q(ALT_PATH) | Q(ACCESS_FLAGS) |
					 Q(PKEY_INDEX) | Q(PATH_MIG_STATE),
				[T_XT] = Q(PORT) | Q(AV) | Q(TIMEOUT) |
					 Q(MAX_DEST_RD_ATOMIC) | Q(ALT_PATH) |
					 Q(ACCESS_FLAGS) | Q(PKEY_INDEX) |
					 Q(MIN_RNR_TIMER) | Q(PATH_MIG_STATE),
			},
		},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_UC] = Q(CUR_STATE) | Q(ACCESS_FLAGS),
				[T_UD] = Q(CUR_STATE) | Q(QKEY),
			},
		},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};

#undef Q

static int type_index(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return T_RC;
	case IBV_QPT_UC:
		return T_UC;
	case IBV_QPT_XRC_SEND:
		return T_XI;
	case IBV_QPT_XRC_RECV:
		return T_XT;
	default:
		return T_UD;
	}
}

/* The attribute mask's bits by name, for the refusals' lines. */
static void mask_names(int mask, char *buf, size_t len)
{
	static const char *const names[] = {
		"STATE",
		"CUR_STATE",
		"EN_SQD_ASYNC_NOTIFY",
		"ACCESS_FLAGS",
		"PKEY_INDEX",
		"PORT",
		"QKEY",
		"AV",
		"PATH_MTU",
		"TIMEOUT",
		"RETRY_CNT",
		"RNR_RETRY",
		"RQ_PSN",
		"MAX_QP_RD_ATOMIC",
		"ALT_PATH",
		"MIN_RNR_TIMER",
		"SQ_PSN",
		"MAX_DEST_RD_ATOMIC",
		"PATH_MIG_STATE",
		"CAP",
		"DEST_QPN",
	};
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned int b = 0; b < 32 && n < len; b++) {
		if (!(mask & (1u << b)))
			continue;
		if (b < sizeof(names) / sizeof(names[0]))
			n += (size_t)snprintf(buf + n, len - n, "%sIBV_QP_%s",
					      n ? "|" : "", names[b]);
		else
			n += (size_t)snprintf(buf + n, len - n, "%sbit %u",
					      n ? "|" : "", b);
	}
}

#define REFUSE(qp, err, fmt, ...)                          \
	sv_refuse((err), "ibv_modify_qp: QP 0x%06x: " fmt, \
		  (qp)->qpx.qp_base.qp_num, __VA_ARGS__)

/* Is (cur -> next, mask) a legal modify for this QP?  0 or EINVAL, with
 * the rule broken in the log. */
static int transition_check(struct sv_qp *qp, enum ibv_qp_state cur,
			    const struct ibv_qp_attr *attr, int mask)
{
	enum ibv_qp_state next = cur;
	const struct qp_transition *t;
	int req, opt, ti = type_index(qp->type);
	char names[256];

	if (mask & IBV_QP_STATE) {
		if ((unsigned int)attr->qp_state > IBV_QPS_ERR)
			return REFUSE(qp, EINVAL,
				      "attr.qp_state %d is not a QP state",
				      (int)attr->qp_state);
		next = attr->qp_state;
	}
	/* The consumer's view of the current state may only be given where
	 * the table allows it (RTR/RTS/SQD/SQE), and must be right. */
	if (mask & IBV_QP_CUR_STATE) {
		if (cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
		    cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
			return REFUSE(
				qp, EINVAL,
				"IBV_QP_CUR_STATE may be given in RTR, RTS, SQD or SQE only; the QP is in %s (IBA 10.3.1)",
				sv_qp_state_name(cur));
		if (attr->cur_qp_state != cur)
			return REFUSE(
				qp, EINVAL,
				"attr.cur_qp_state is %s but the QP is in %s",
				sv_qp_state_name(attr->cur_qp_state),
				sv_qp_state_name(cur));
	}
	t = &qp_table[cur][next];
	if (!t->valid)
		return REFUSE(
			qp, EINVAL,
			"%s -> %s is not a transition of the QP state machine (IBA 10.3.1)",
			sv_qp_state_name(cur), sv_qp_state_name(next));
	req = t->req[ti];
	opt = t->opt[ti];
	if ((mask & req) != req) {
		mask_names(req & ~mask, names, sizeof(names));
		return REFUSE(
			qp, EINVAL,
			"%s -> %s of %s QPs requires %s, missing from attr_mask (IBA 10.3.1)",
			sv_qp_state_name(cur), sv_qp_state_name(next),
			sv_qp_type_name(qp->type), names);
	}
	if (mask & ~(req | opt | IBV_QP_STATE)) {
		mask_names(mask & ~(req | opt | IBV_QP_STATE), names,
			   sizeof(names));
		return REFUSE(
			qp, EINVAL,
			"%s -> %s of %s QPs does not take %s (IBA 10.3.1)",
			sv_qp_state_name(cur), sv_qp_state_name(next),
			sv_qp_type_name(qp->type), names);
	}
	return 0;
}

static bool has_cap_net_raw(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_NET_RAW / 32].effective & (1u << (CAP_NET_RAW % 32));
}

/* The access flags a QP takes: LOCAL_WRITE to HUGETLB (bits 0-7) and, as
 * the kernel's uverbs ABI defines them since Linux 6.2 and rdma-core 43's
 * headers, FLUSH_GLOBAL and FLUSH_PERSISTENT (bits 8 and 9).  A QP accepts
 * them as rxe and the HCAs do (rdma-core's tests set them on every RC QP);
 * IBV_WR_FLUSH itself is not offered: a region refuses those flags. */
#define SV_QP_ACCESS_KNOWN 0x3ffu

/* Range checks of the attributes present in the mask (the kernel's and
 * rxe's, and the widths of the IBA fields). */
static int check_attrs(struct sv_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	char who[64];

	if ((mask & IBV_QP_ACCESS_FLAGS) &&
	    (a->qp_access_flags &
	     ~(SV_QP_ACCESS_KNOWN | IBV_ACCESS_OPTIONAL_RANGE)))
		return REFUSE(
			qp, EINVAL,
			"attr.qp_access_flags 0x%x has bits no access flag has (0x%x)",
			a->qp_access_flags,
			a->qp_access_flags & ~(SV_QP_ACCESS_KNOWN |
					       IBV_ACCESS_OPTIONAL_RANGE));
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= SV_MAX_PKEYS)
		return REFUSE(
			qp, EINVAL,
			"attr.pkey_index %u is beyond the P_Key table (%u entries)",
			a->pkey_index, SV_MAX_PKEYS);
	if ((mask & IBV_QP_PORT) && a->port_num != SV_PORT)
		return REFUSE(qp, EINVAL,
			      "attr.port_num %u: the device has port %u only",
			      a->port_num, SV_PORT);
	snprintf(who, sizeof(who), "ibv_modify_qp: QP 0x%06x: attr.ah_attr",
		 qp->qpx.qp_base.qp_num);
	if ((mask & IBV_QP_AV) && sv_ah_attr_check(qp->ctx, &a->ah_attr, who))
		return EINVAL;
	/* Alternate paths (APM) exist on InfiniBand only; the kernel refuses
	 * them on RoCE ports. */
	if (mask & IBV_QP_ALT_PATH)
		return REFUSE(
			qp, EINVAL,
			"IBV_QP_ALT_PATH: alternate paths (APM) exist on InfiniBand only, not on a RoCE port%s",
			"");
	if ((mask & IBV_QP_PATH_MTU) &&
	    (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return REFUSE(
			qp, EINVAL,
			"attr.path_mtu %d is not an enum ibv_mtu (IBV_MTU_256 = 1 .. IBV_MTU_4096 = 5)",
			(int)a->path_mtu);
	/* 5-bit Local ACK Timeout, 3-bit retry counts, 5-bit RNR timer. */
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return REFUSE(qp, EINVAL,
			      "attr.timeout %u is above 31 (a 5-bit field)",
			      a->timeout);
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return REFUSE(qp, EINVAL,
			      "attr.retry_cnt %u is above 7 (a 3-bit field)",
			      a->retry_cnt);
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return REFUSE(
			qp, EINVAL,
			"attr.rnr_retry %u is above 7 (a 3-bit field; 7 is infinite)",
			a->rnr_retry);
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return REFUSE(
			qp, EINVAL,
			"attr.min_rnr_timer %u is above 31 (a 5-bit field)",
			a->min_rnr_timer);
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > SV_MAX_RD_ATOMIC)
		return REFUSE(
			qp, EINVAL,
			"attr.max_rd_atomic %u is above the device's max_qp_init_rd_atom %u",
			a->max_rd_atomic, SV_MAX_RD_ATOMIC);
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > SV_MAX_RD_ATOMIC)
		return REFUSE(
			qp, EINVAL,
			"attr.max_dest_rd_atomic %u is above the device's max_qp_rd_atom %u",
			a->max_dest_rd_atomic, SV_MAX_RD_ATOMIC);
	if ((mask & IBV_QP_PATH_MIG_STATE) &&
	    (unsigned int)a->path_mig_state > IBV_MIG_ARMED)
		return REFUSE(
			qp, EINVAL,
			"attr.path_mig_state %d is not an enum ibv_mig_state",
			(int)a->path_mig_state);
	/* A Q_Key with the high bit set is privileged (IBA): a WR
	 * naming such a key sends with the QP's own key instead, so only a
	 * privileged process may give its QP one (the kernel's rule:
	 * CAP_NET_RAW, else EPERM). */
	if ((mask & IBV_QP_QKEY) && (a->qkey & 0x80000000u) &&
	    !has_cap_net_raw())
		return REFUSE(
			qp, EPERM,
			"attr.qkey 0x%x has the high bit set (a privileged Q_Key): it needs CAP_NET_RAW",
			a->qkey);
	/* QPNs are 24 bits on the wire. */
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return REFUSE(
			qp, EINVAL,
			"attr.dest_qp_num 0x%x is above 0xffffff (QPNs are 24 bits)",
			a->dest_qp_num);
	return 0;
}

static void apply_attrs(struct sv_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr *s = &qp->attr;

	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		s->en_sqd_async_notify = a->en_sqd_async_notify;
	/* Only the remote rights mean anything for a QP (IBA 10.2.4). */
	if (mask & IBV_QP_ACCESS_FLAGS)
		s->qp_access_flags =
			a->qp_access_flags &
			(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC);
	if (mask & IBV_QP_PKEY_INDEX)
		s->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		s->port_num = a->port_num;
	if (mask & IBV_QP_QKEY)
		s->qkey = a->qkey;
	if (mask & IBV_QP_AV) {
		s->ah_attr = a->ah_attr;
		sv_gid_to_sockaddr(&a->ah_attr.grh.dgid, &qp->peer);
		qp->peer_valid = true;
	}
	if (mask & IBV_QP_PATH_MTU)
		s->path_mtu = a->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		s->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		s->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		s->rnr_retry = a->rnr_retry;
	/* PSNs are 24 bits; the kernel masks larger values likewise. */
	if (mask & IBV_QP_RQ_PSN)
		s->rq_psn = a->rq_psn & 0xffffff;
	if (mask & IBV_QP_SQ_PSN)
		s->sq_psn = a->sq_psn & 0xffffff;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		s->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		s->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		s->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_PATH_MIG_STATE)
		s->path_mig_state = a->path_mig_state;
	if (mask & IBV_QP_DEST_QPN)
		s->dest_qp_num = a->dest_qp_num;
	qp->attr_mask_set |= mask;
}

/* Drop the QP's completions from the CQs it was created with (an XRC
 * target has none: its receives complete on its SRQs' CQs). */
static void clean_cqs(struct sv_qp *qp)
{
	struct ibv_qp *ibqp = &qp->qpx.qp_base;

	if (ibqp->send_cq)
		sv_cq_clean(to_sv_cq(ibqp->send_cq), ibqp->qp_num);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		sv_cq_clean(to_sv_cq(ibqp->recv_cq), ibqp->qp_num);
}

/* The kernel drops the attributes an XRC QP ignores before it checks the
 * table (uverbs' modify_qp_mask): an initiator has no responder, a target
 * no requester.  perftest -c XRC sets them on both. */
static int xrc_mask(enum ibv_qp_type type, int mask)
{
	switch (type) {
	case IBV_QPT_XRC_SEND:
		return mask &
		       ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	case IBV_QPT_XRC_RECV:
		return mask & ~(IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY);
	default:
		return mask;
	}
}

SV_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			    int attr_mask)
{
	enum ibv_qp_state cur, next;
	struct sv_qp *qp;
	int err;

	if (sv_check_qp(ibqp, "ibv_modify_qp") || !attr)
		return EINVAL;
	qp = to_sv_qp(ibqp);
	if (qp->real)
		qp = qp->real; /* a handle of ibv_open_qp: the target QP */
	attr_mask = xrc_mask(qp->type, attr_mask);
	sv_mutex_lock(&qp->state_lock, SV_LOCK_QP_STATE);
	cur = qp->attr.qp_state;
	err = transition_check(qp, cur, attr, attr_mask);
	if (!err)
		err = check_attrs(qp, attr, attr_mask);
	if (err) {
		sv_mutex_unlock(&qp->state_lock);
		return err;
	}
	apply_attrs(qp, attr, attr_mask);
	next = (attr_mask & IBV_QP_STATE) ? attr->qp_state : cur;
	qp->attr.qp_state = next;
	qp->attr.cur_qp_state = next;
	ibqp->state = next;
	qp->qpx.qp_base.state = next;
	sv_engine_qp_modified(qp, attr_mask, cur);
	/* IBA 10.3.1: entering Reset empties both work queues without
	 * completions (the engine did, under its lock); completions already
	 * in the CQs are dropped too. */
	if (next == IBV_QPS_RESET)
		clean_cqs(qp);
	sv_mutex_unlock(&qp->state_lock);
	return 0;
}

SV_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			   int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct sv_qp *qp;

	if (sv_check_qp(ibqp, "ibv_query_qp") || !attr || !init_attr)
		return EINVAL;
	qp = to_sv_qp(ibqp);
	if (qp->real)
		qp = qp->real;
	sv_mutex_lock(&qp->state_lock, SV_LOCK_QP_STATE);
	/* Everything is returned whatever the mask, as the kernel does. */
	*attr = qp->attr;
	attr->cur_qp_state = attr->qp_state;
	attr->cap = qp->cap;
	attr->sq_draining = 0;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = qp->cap;
	init_attr->qp_type = qp->type;
	init_attr->sq_sig_all = qp->sq_sig_all;
	ibqp->state = attr->qp_state;
	sv_mutex_unlock(&qp->state_lock);
	return 0;
}

/* ---- create / destroy --------------------------------------------------- */

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* A queue of max_wr WQEs; on a parent domain (pd), its buffer comes from
 * the domain's allocator (verbs/pd_parent.c). */
static int wq_alloc(struct sv_wq *wq, struct sv_pd *pd, uint32_t max_wr,
		    uint32_t stride, uint32_t max_sge)
{
	wq->stride = stride;
	wq->max_sge = max_sge;
	atomic_init(&wq->head, 0);
	atomic_init(&wq->tail, 0);
	if (!max_wr) {
		wq->size = 0;
		wq->max_wr = 0;
		wq->buf = NULL;
		return 0;
	}
	wq->size = pow2_at_least(max_wr);
	wq->max_wr = wq->size; /* all slots usable: head/tail free-run */
	wq->buf = sv_queue_alloc(pd, (size_t)wq->size * stride, SV_RES_TYPE_QP,
				 &wq->buf_owner);
	return wq->buf ? 0 : ENOMEM;
}

/* The creation rules of each type, as the kernel's.  An XRC target
 * (XRC_RECV) takes nothing but its domain: no PD, CQs, SRQ or queues; an
 * XRC initiator (XRC_SEND) has a send queue only. */
static int check_create(struct ibv_pd *pd, const struct ibv_qp_init_attr *ia,
			bool have_xrcd)
{
	const struct ibv_qp_cap *cap = &ia->cap;
	bool xrc_send = ia->qp_type == IBV_QPT_XRC_SEND;

	switch (ia->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
		break;
	case IBV_QPT_XRC_RECV:
		return have_xrcd ?
			       0 :
			       sv_refuse(
				       EINVAL,
				       "ibv_create_qp: an XRC_RECV QP is created with ibv_create_qp_ex and an XRC domain (comp_mask IBV_QP_INIT_ATTR_XRCD)");
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_DRIVER:
		return sv_refuse(
			EOPNOTSUPP,
			"ibv_create_qp: qp_type %d (raw packet, driver) is not offered by softverbs",
			(int)ia->qp_type);
	default:
		/* not a type the kernel knows either */
		return sv_refuse(EINVAL,
				 "ibv_create_qp: qp_type %d is not a QP type",
				 (int)ia->qp_type);
	}
	if (!pd)
		return sv_refuse(EINVAL, "ibv_create_qp: %s QPs need a PD",
				 sv_qp_type_name(ia->qp_type));
	if (!ia->send_cq || (!xrc_send && !ia->recv_cq))
		return sv_refuse(
			EINVAL,
			"ibv_create_qp: %s QPs need %s (send_cq %p, recv_cq %p)",
			sv_qp_type_name(ia->qp_type),
			xrc_send ? "a send CQ" : "a send and a receive CQ",
			(void *)ia->send_cq, (void *)ia->recv_cq);
	if (ia->send_cq->context != pd->context ||
	    (!xrc_send && ia->recv_cq->context != pd->context))
		return sv_refuse(
			EINVAL,
			"ibv_create_qp: the CQs and the PD belong to different device contexts");
	if (ia->srq && !xrc_send) {
		/* man ibv_create_qp: only RC and UD QPs take an SRQ. */
		if (ia->qp_type == IBV_QPT_UC)
			return sv_refuse(
				EINVAL,
				"ibv_create_qp: a UC QP takes no SRQ (RC and UD do; man ibv_create_qp)");
		if (ia->srq->context != pd->context)
			return sv_refuse(
				EINVAL,
				"ibv_create_qp: the SRQ and the PD belong to different device contexts");
	}
	if (cap->max_send_wr > SV_MAX_QP_WR || cap->max_send_sge > SV_MAX_SGE ||
	    cap->max_inline_data > SV_MAX_INLINE)
		return sv_refuse(
			EINVAL,
			"ibv_create_qp: cap.max_send_wr %u, max_send_sge %u, max_inline_data %u: the device's limits are %u, %u and %u (ibv_query_device: max_qp_wr, max_sge)",
			cap->max_send_wr, cap->max_send_sge,
			cap->max_inline_data, SV_MAX_QP_WR, SV_MAX_SGE,
			SV_MAX_INLINE);
	if (!ia->srq && !xrc_send &&
	    (cap->max_recv_wr > SV_MAX_QP_WR || cap->max_recv_sge > SV_MAX_SGE))
		return sv_refuse(
			EINVAL,
			"ibv_create_qp: cap.max_recv_wr %u, max_recv_sge %u: the device's limits are %u and %u (ibv_query_device: max_qp_wr, max_sge)",
			cap->max_recv_wr, cap->max_recv_sge, SV_MAX_QP_WR,
			SV_MAX_SGE);
	return 0;
}

static void qp_free(struct sv_qp *qp)
{
	sv_share_del(qp->qpx.qp_base.context, qp->qpx.qp_base.handle, qp);
	sv_qp_wr_free(qp);
	pthread_mutex_destroy(&qp->state_lock);
	pthread_mutex_destroy(&qp->qpx.qp_base.mutex);
	pthread_cond_destroy(&qp->qpx.qp_base.cond);
	sv_queue_free(qp->sq.buf_owner, qp->sq.buf, SV_RES_TYPE_QP);
	sv_queue_free(qp->rq.buf_owner, qp->rq.buf, SV_RES_TYPE_QP);
	free(qp);
}

struct ibv_qp *sv_qp_create(struct ibv_context *context, struct ibv_pd *pd,
			    struct ibv_qp_init_attr *ia, struct sv_xrcd *xrcd)
{
	struct ibv_qp_cap *cap;
	struct ibv_qp *ibqp;
	struct sv_qp *qp;
	uint32_t room, stride;
	bool tgt, ini;
	int err;

	if (sv_check_ctx(context, "ibv_create_qp") || !ia)
		return sv_null_errno(EINVAL);
	if ((pd && sv_check_pd(pd, "ibv_create_qp")) ||
	    (ia->send_cq && sv_check_cq(ia->send_cq, "ibv_create_qp")) ||
	    (ia->recv_cq && sv_check_cq(ia->recv_cq, "ibv_create_qp")) ||
	    (ia->srq && sv_check_srq(ia->srq, "ibv_create_qp")))
		return sv_null_errno(EINVAL);
	err = check_create(pd, ia, xrcd != NULL);
	if (err)
		return sv_null_errno(err);
	if (pd && pd->context != context)
		return sv_null_errno(EINVAL);
	tgt = ia->qp_type == IBV_QPT_XRC_RECV;
	ini = ia->qp_type == IBV_QPT_XRC_SEND;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return sv_null_errno(ENOMEM);
	qp->forks = sv_fork_count;
	ibqp = &qp->qpx.qp_base;
	ibqp->context = context;
	err = sv_share_add(context, SV_SHARE_QP, qp, &ibqp->handle);
	if (err) {
		free(qp);
		return sv_null_errno(err);
	}
	cap = &qp->cap;

	/* Send WQE: header, then either the gather list or inline data;
	 * at least 8 bytes, which an ATOMIC WRITE's data always takes
	 * (verbs/qp_ex.c). */
	room = ia->cap.max_send_sge * sizeof(struct ibv_sge);
	if (ia->cap.max_inline_data > room)
		room = ia->cap.max_inline_data;
	if (room < 8)
		room = 8;
	stride = (sizeof(struct sv_send_wqe) + room + 7) & ~7u;
	room = stride - sizeof(struct sv_send_wqe);
	cap->max_send_wr = ia->cap.max_send_wr;
	/* Whatever the stride has room for is usable (>= requested). */
	cap->max_send_sge = room / sizeof(struct ibv_sge);
	if (cap->max_send_sge > SV_MAX_SGE)
		cap->max_send_sge = SV_MAX_SGE;
	cap->max_inline_data = room > SV_MAX_INLINE ? SV_MAX_INLINE : room;
	err = wq_alloc(&qp->sq, pd ? to_sv_pd(pd) : NULL,
		       tgt ? 0 : ia->cap.max_send_wr, stride,
		       cap->max_send_sge);
	cap->max_send_wr = qp->sq.max_wr;
	if (tgt)
		memset(cap, 0, sizeof(*cap));
	else if (ini)
		wq_alloc(&qp->rq, NULL, 0, sizeof(struct sv_recv_wqe), 0);
	if (!err && !ia->srq && !tgt && !ini) {
		stride = sizeof(struct sv_recv_wqe) +
			 ia->cap.max_recv_sge * sizeof(struct ibv_sge);
		err = wq_alloc(&qp->rq, pd ? to_sv_pd(pd) : NULL,
			       ia->cap.max_recv_wr, (stride + 7) & ~7u,
			       ia->cap.max_recv_sge);
		cap->max_recv_wr = qp->rq.max_wr;
		cap->max_recv_sge = ia->cap.max_recv_sge;
	}
	if (err) {
		sv_share_del(context, ibqp->handle, qp);
		sv_queue_free(qp->sq.buf_owner, qp->sq.buf, SV_RES_TYPE_QP);
		free(qp);
		return sv_null_errno(err);
	}

	ibqp->qp_context = ia->qp_context;
	ibqp->pd = tgt ? NULL : pd;
	ibqp->send_cq = tgt ? NULL : ia->send_cq;
	ibqp->recv_cq = tgt || ini ? NULL : ia->recv_cq;
	ibqp->srq = tgt || ini ? NULL : ia->srq;
	ibqp->qp_type = ia->qp_type;
	ibqp->state = IBV_QPS_RESET;
	ibqp->events_completed = 0;
	pthread_mutex_init(&ibqp->mutex, NULL);
	pthread_cond_init(&ibqp->cond, NULL);

	qp->ctx = to_sv_ctx(context);
	/* Protected by the PD (a parent domain's); the use is counted on
	 * what was given (ibv_destroy_qp puts ibqp->pd). */
	qp->pd = ibqp->pd ? sv_pd_real(to_sv_pd(ibqp->pd)) : NULL;
	qp->scq = ibqp->send_cq ? to_sv_cq(ibqp->send_cq) : NULL;
	qp->rcq = ibqp->recv_cq ? to_sv_cq(ibqp->recv_cq) : NULL;
	qp->srq = ibqp->srq ? to_sv_srq(ibqp->srq) : NULL;
	qp->xrcd = tgt ? xrcd : NULL;
	qp->type = ia->qp_type;
	qp->sq_sig_all = ia->sq_sig_all != 0;
	sv_qlock_init(&qp->sq_lock);
	sv_qlock_init(&qp->rq_lock);
	pthread_mutex_init(&qp->state_lock, NULL);
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.port_num = SV_PORT;
	qp->attr.path_mtu = IBV_MTU_1024;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	qp->ctx_node.next = qp->ctx_node.prev = &qp->ctx_node;
	list_head_init(&qp->mcast);

	err = sv_engine_qp_create(qp);
	if (err) {
		qp_free(qp);
		return sv_null_errno(err);
	}
	if (ibqp->pd) {
		qp->pd_held = to_sv_pd(ibqp->pd);
		sv_pd_get(qp->pd_held);
	}
	if (qp->scq)
		atomic_fetch_add(&qp->scq->users, 1);
	if (qp->rcq)
		atomic_fetch_add(&qp->rcq->users, 1);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->users, 1);
	if (tgt)
		sv_xrc_tgt_add(qp);
	ia->cap = *cap;
	return ibqp;
}

SV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
				       struct ibv_qp_init_attr *ia)
{
	if (!pd || !ia)
		return sv_null_errno(EINVAL);
	return sv_qp_create(pd->context, pd, ia, NULL);
}

SV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	uint32_t reported;
	struct sv_qp *qp;

	if (sv_check_qp(ibqp, "ibv_destroy_qp"))
		return EINVAL;
	qp = to_sv_qp(ibqp);
	if (qp->real) {
		/* A handle of ibv_open_qp: closing it leaves the QP. */
		sv_xrc_tgt_close(qp->real);
		qp_free(qp);
		return 0;
	}
	/* The kernel defers destroying a target QP others have opened;
	 * here its creator's handle is the QP, so it waits for them. */
	if (qp->type == IBV_QPT_XRC_RECV && sv_xrc_tgt_busy(qp))
		return EBUSY;
	/* man ibv_destroy_qp: fails while attached to a multicast group. */
	sv_mutex_lock(&qp->state_lock, SV_LOCK_QP_STATE);
	if (!list_empty(&qp->mcast)) {
		sv_mutex_unlock(&qp->state_lock);
		return EBUSY;
	}
	sv_mutex_unlock(&qp->state_lock);

	/* Unreachable from the network first; then no event can be raised
	 * for it, and the ones handed out must be acked (rdma-core). */
	sv_engine_qp_destroy(qp);
	if (qp->type == IBV_QPT_XRC_RECV) {
		/* Not findable by ibv_open_qp any more; the engine no longer
		 * runs it, so the SRQ it may hold is released here. */
		sv_xrc_tgt_del(qp);
		if (qp->xrc_hold)
			atomic_fetch_sub(&qp->xrc_hold->users, 1);
		qp->xrc_hold = NULL;
		sv_xrcfwd_release(qp); /* another process's SRQ */
	}
	if (sv_log_suppressed(&qp->lograte))
		sv_warn("QP 0x%06x destroyed: %u more warnings about it were counted, not logged",
			ibqp->qp_num, sv_log_suppressed(&qp->lograte));
	reported = sv_async_purge(qp->ctx, &qp->async_events_reported);
	sv_mutex_lock(&ibqp->mutex, SV_LOCK_IBV_EVENTS);
	while (ibqp->events_completed != reported)
		sv_cond_wait(&ibqp->cond, &ibqp->mutex);
	sv_mutex_unlock(&ibqp->mutex);

	clean_cqs(qp);
	/* What creation counted: the public fields keep it (a target's
	 * pd/rcq/srq pointers are the engine's, request by request). */
	if (ibqp->srq)
		atomic_fetch_sub(&to_sv_srq(ibqp->srq)->users, 1);
	if (ibqp->recv_cq)
		atomic_fetch_sub(&to_sv_cq(ibqp->recv_cq)->users, 1);
	if (ibqp->send_cq)
		atomic_fetch_sub(&to_sv_cq(ibqp->send_cq)->users, 1);
	if (qp->pd_held)
		sv_pd_put(qp->pd_held);
	qp_free(qp);
	return 0;
}

/* ---- small queries ------------------------------------------------------ */

/* man ibv_query_qp_data_in_order: 0 means "no guarantee", always a
 * correct answer; placement uses memcpy, whose byte order is unspecified. */
SV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
					 enum ibv_wr_opcode op, uint32_t flags)
{
	return 0;
}

/* Enhanced Connection Establishment is a vendor option negotiation. */
SV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

SV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}
