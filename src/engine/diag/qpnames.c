/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The names of QP states and types, for dumps, logs and `softverbs stats`
 * (which compiles this file in).
 */
#include "engine/diag/stats.h"
#include "engine/transport/stats.h"

static const char *const qp_state_names[] = {
	[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT",
	[IBV_QPS_RTR] = "RTR",	   [IBV_QPS_RTS] = "RTS",
	[IBV_QPS_SQD] = "SQD",	   [IBV_QPS_SQE] = "SQE",
	[IBV_QPS_ERR] = "ERR",
};

const char *sv_qp_state_name(int state)
{
	if (state < 0 || state > IBV_QPS_ERR)
		return "?";
	return qp_state_names[state];
}

const char *sv_qp_type_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
		return "RC";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_UD:
		return "UD";
	case IBV_QPT_XRC_SEND:
		return "XRC_SEND";
	case IBV_QPT_XRC_RECV:
		return "XRC_RECV";
	default:
		return "other";
	}
}
