/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The transport's hooks filled with the diagnostics (diag.h).  Fault
 * injection's packet hooks stay NULL without a packet rule in that
 * direction, and its WR hooks without any rule: the transport then makes
 * no call for them at all.
 */
#include <pthread.h>

#include "engine/diag/diag.h"
#include "engine/diag/explain.h"
#include "engine/diag/inject.h"
#include "engine/diag/pcap.h"
#include "engine/diag/stats.h"
#include "engine/diag/statseg.h"
#include "engine/diag/strict.h"
#include "engine/transport/hooks.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void install(void)
{
	const struct sv_inject *inj = sv_inject_get();

	sv_hooks.pcap_pkt = sv_pcap_engine_pkt;
	if (inj->n) {
		sv_hooks.inject_qp = sv_inject_qp;
		sv_hooks.inject_wr = sv_inject_wr;
		sv_hooks.inject_release = sv_inject_release;
		sv_hooks.inject_qp_gone = sv_inject_qp_gone;
	}
	if (inj->pkt_dirs & SV_INJ_TX)
		sv_hooks.inject_tx = sv_inject_tx;
	if (inj->pkt_dirs & SV_INJ_RX)
		sv_hooks.inject_rx = sv_inject_rx;
	sv_hooks.statseg_qp_open = sv_statseg_qp_open;
	sv_hooks.statseg_qp_close = sv_statseg_qp_close;
	sv_hooks.statseg_qp_note = sv_statseg_qp_note;
	sv_hooks.explain_access = sv_explain_access;
	sv_hooks.explain_qp_access = sv_explain_qp_access;
	sv_hooks.explain_resp = sv_explain_resp;
	sv_hooks.explain_recv_sgl = sv_explain_recv_sgl;
	sv_hooks.explain_recv_len = sv_explain_recv_len;
	sv_hooks.explain_rd_atomic = sv_explain_rd_atomic;
	sv_hooks.explain_misaligned = sv_explain_misaligned;
	sv_hooks.explain_inv_rkey = sv_explain_inv_rkey;
	sv_hooks.explain_cq_overrun = sv_explain_cq_overrun;
	sv_hooks.explain_state_drop = sv_explain_state_drop;
	sv_hooks.explain_wrong_src = sv_explain_wrong_src;
	sv_hooks.explain_wqe = sv_explain_wqe;
	sv_hooks.strict_sum_check = sv_strict_sum_check;
	sv_hooks.trace_pkt = sv_trace_pkt;
	sv_hooks.qp_dump = sv_qp_dump;
	sv_hooks.qp_report = sv_qp_report;
	sv_hooks.stats_print = sv_stats_print;
}

void sv_diag_install(void)
{
	pthread_once(&once, install);
}
