/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Between the connection protocol's state machine (conn.c) and its two
 * carriers: TCP (conn_tcp.c) and the IB CM's MADs (conn_mad.c).  Called
 * with the CM lock held.
 */
#ifndef SV_CM_CONN_H
#define SV_CM_CONN_H

#include "cm/cm.h"

static inline bool sv_conn_is_ud(const struct sv_cm_id *id)
{
	return id->id.qp_type == IBV_QPT_UD;
}

/* conn.c: the state machine. */
void sv_conn_msg_init(struct sv_cm_wire *m, const struct sv_cm_id *id,
		      int type);
void sv_conn_fail(struct sv_cm_id *id, int type, int status,
		  const struct sv_cm_wire *m, int report_len, bool linger);
void sv_conn_disconnected(struct sv_cm_id *id, int status, bool linger);
void sv_conn_drop_sock(struct sv_cm_id *id, bool linger);
void sv_conn_req_deliver(struct sv_cm_id *ls, struct sv_cm_id *id,
			 const struct sv_cm_wire *m,
			 const struct sockaddr_storage *local_ss,
			 const struct sockaddr_storage *peer_ss);
int sv_conn_id_msg(struct sv_cm_id *id, const struct sv_cm_wire *m);

/* conn_tcp.c */
void sv_conn_tcp_connect(struct sv_cm_id *id, const struct sv_cm_wire *req);
void sv_conn_tcp_reconnect(struct sv_cm_id *id);
void sv_conn_tcp_unlisten(struct sv_cm_id *ls);

/* conn_mad.c */
int sv_conn_mad_connect(struct sv_cm_id *id, const struct sv_cm_wire *req);
int sv_conn_mad_send(struct sv_cm_id *id, const struct sv_cm_wire *w);
bool sv_conn_mad_resend(struct sv_cm_id *id, enum sv_cm_timer t);

#endif
