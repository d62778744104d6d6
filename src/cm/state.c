/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The rdma_cm id's state machine: every state, its name, and the states it
 * may go to, in one table; every change of id->state goes through
 * sv_cm_id_set_state, which checks it against the table.
 *
 * The table is what the CM does (conn.c, id.c), which is the kernel's
 * rdma_cm and the IB CM (IBA chapter 12) narrowed to what an id here can
 * live through:
 *   - address: IDLE -> ADDR_BOUND (rdma_bind_addr, rdma_listen's implicit
 *     bind) or ADDR_RESOLVED (rdma_resolve_addr binds on the way); a
 *     resolution may be repeated, and one whose source left the device
 *     (ADDR_ERROR) leaves the id bound, so ADDR_BOUND and ADDR_RESOLVED
 *     go to each other and to themselves;
 *   - ADDR_RESOLVED -> ROUTE_RESOLVED (rdma_resolve_route, or
 *     RDMA_OPTION_IB_PATH), ADDR_BOUND -> LISTEN;
 *   - active side: ROUTE_RESOLVED -> CONNECT (REQ or SIDR_REQ sent) ->
 *     REP_RCVD (REP in) -> ESTABLISHED (RTU sent); a UD id's SIDR_REP
 *     takes CONNECT straight to ESTABLISHED;
 *   - passive side: a new id for a REQ goes IDLE -> REQ_RCVD -> REP_SENT
 *     (rdma_accept) -> ESTABLISHED (RTU, or rdma_notify COMM_EST); a UD
 *     id's accept (SIDR_REP sent) takes REQ_RCVD straight to ESTABLISHED;
 *   - every state between a REQ and ESTABLISHED may fail (REJ either way,
 *     timeout, lost peer, rdma_disconnect abandoning the attempt);
 *   - ESTABLISHED -> DREQ_SENT (rdma_disconnect) -> DISCONNECTED (DREP,
 *     timeout, lost peer), or ESTABLISHED -> DISCONNECTED (the peer's
 *     DREQ, lost peer);
 *   - LISTEN, DISCONNECTED and FAILED are final: the id only waits for
 *     rdma_destroy_id (the kernel's ids do not leave them either).
 * Transitions the kernel has and this CM never takes (address and route
 * queries in progress, alternate paths, LAP/APR) are left out: an entry
 * the code never uses would only hide a bug.
 */
#include "cm/cm.h"

#include <stdlib.h>

#include "util/log.h"

#define TO(s) (1u << (s))

static const struct {
	const char *name;
	unsigned int next; /* TO() of every state this one may go to */
} states[] = {
	[SV_CM_IDLE] = {
		.name = "IDLE",
		.next = TO(SV_CM_ADDR_BOUND) | TO(SV_CM_ADDR_RESOLVED) |
			TO(SV_CM_REQ_RCVD),
	},
	[SV_CM_ADDR_BOUND] = {
		.name = "ADDR_BOUND",
		.next = TO(SV_CM_ADDR_BOUND) | TO(SV_CM_ADDR_RESOLVED) |
			TO(SV_CM_LISTEN),
	},
	[SV_CM_ADDR_RESOLVED] = {
		.name = "ADDR_RESOLVED",
		.next = TO(SV_CM_ADDR_BOUND) | TO(SV_CM_ADDR_RESOLVED) |
			TO(SV_CM_ROUTE_RESOLVED),
	},
	[SV_CM_ROUTE_RESOLVED] = {
		.name = "ROUTE_RESOLVED",
		.next = TO(SV_CM_CONNECT),
	},
	[SV_CM_LISTEN] = {
		.name = "LISTEN",
		.next = 0, /* final */
	},
	[SV_CM_CONNECT] = {
		.name = "CONNECT",
		.next = TO(SV_CM_REP_RCVD) | TO(SV_CM_ESTABLISHED) |
			TO(SV_CM_FAILED),
	},
	[SV_CM_REP_RCVD] = {
		.name = "REP_RCVD",
		.next = TO(SV_CM_ESTABLISHED) | TO(SV_CM_FAILED),
	},
	[SV_CM_REQ_RCVD] = {
		.name = "REQ_RCVD",
		.next = TO(SV_CM_REP_SENT) | TO(SV_CM_ESTABLISHED) |
			TO(SV_CM_FAILED),
	},
	[SV_CM_REP_SENT] = {
		.name = "REP_SENT",
		.next = TO(SV_CM_ESTABLISHED) | TO(SV_CM_FAILED),
	},
	[SV_CM_ESTABLISHED] = {
		.name = "ESTABLISHED",
		.next = TO(SV_CM_DREQ_SENT) | TO(SV_CM_DISCONNECTED),
	},
	[SV_CM_DREQ_SENT] = {
		.name = "DREQ_SENT",
		.next = TO(SV_CM_DISCONNECTED),
	},
	[SV_CM_DISCONNECTED] = {
		.name = "DISCONNECTED",
		.next = 0, /* final */
	},
	[SV_CM_FAILED] = {
		.name = "FAILED",
		.next = 0, /* final */
	},
};

_Static_assert(sizeof(states) / sizeof(states[0]) == SV_CM_NSTATES,
	       "every state of enum sv_cm_state has an entry");
_Static_assert(SV_CM_NSTATES <= 32, "a state's successors fit in an int");

const char *sv_cm_state_name(enum sv_cm_state s)
{
	return (unsigned int)s < SV_CM_NSTATES && states[s].name ?
		       states[s].name :
		       "?";
}

bool sv_cm_state_may(enum sv_cm_state from, enum sv_cm_state to)
{
	return (unsigned int)from < SV_CM_NSTATES &&
	       (unsigned int)to < SV_CM_NSTATES && (states[from].next & TO(to));
}

/*
 * A transition outside the table is a bug in the CM.  A debug build stops
 * there, where the stack still shows how it came about.  A release build
 * refuses it and keeps the old state: that state was reached through the
 * table, so what every reader of id->state infers from it (the QP is in
 * RTS when ESTABLISHED, a final state never comes back to life, a socket
 * was set up for CONNECT) still holds, and the readers already cope with
 * an id whose socket or peer went away under it (id->sock NULL,
 * peer_gone).  Taking the forbidden state instead could revive a failed
 * or disconnected id - events, messages and timers for a connection that
 * is gone - which is worse than an id that lags behind a step it should
 * not have taken.  Either way the error log names both states.
 */
bool sv_cm_id_set_state(struct sv_cm_id *id, enum sv_cm_state to)
{
	if (sv_cm_state_may(id->state, to)) {
		id->state = to;
		return true;
	}
#ifdef NDEBUG
	sv_err("cm: id %p: forbidden state transition %s -> %s refused",
	       (void *)id, sv_cm_state_name(id->state), sv_cm_state_name(to));
	return false;
#else
	sv_err("cm: id %p: forbidden state transition %s -> %s, aborting",
	       (void *)id, sv_cm_state_name(id->state), sv_cm_state_name(to));
	abort();
#endif
}
