/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The connection manager's wire format: the messages two librdmacm
 * instances exchange over the TCP connection that stands in for the IB CM
 * MAD exchange (one TCP connection per rdma_cm connection, opened from the
 * active id's bound port to the listener's port).
 *
 * Every message has the same fixed size (framing is trivial on a byte
 * stream), integers are big-endian, and the first byte is a version that a
 * receiver checks before anything else.  Nothing here is trusted: the
 * receiver validates version, header length, type and the private data
 * length against the limit of that message type (sv_cm_pdata_max()).
 *
 * The message types mirror the IB CM's (IBA chapter 12): REQ/REP/RTU/REJ for
 * connection establishment, DREQ/DREP for release, and SIDR_REQ/SIDR_REP
 * for UD service ID resolution.
 */
#ifndef SV_CM_WIRE_H
#define SV_CM_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define SV_CM_WIRE_VERSION 1

enum sv_cm_msg_type {
	SV_CM_MSG_REQ = 1,
	SV_CM_MSG_REP = 2,
	SV_CM_MSG_RTU = 3,
	SV_CM_MSG_REJ = 4,
	SV_CM_MSG_DREQ = 5,
	SV_CM_MSG_DREP = 6,
	SV_CM_MSG_SIDR_REQ = 7,
	SV_CM_MSG_SIDR_REP = 8,
	SV_CM_MSG_MAX
};

/* IB CM private data sizes of each message (IBA chapter 12). */
#define SV_IB_REQ_PDATA 92
#define SV_IB_REP_PDATA 196
#define SV_IB_REJ_PDATA 148
#define SV_IB_RTU_PDATA 224
#define SV_IB_DREQ_PDATA 220
#define SV_IB_DREP_PDATA 224
#define SV_IB_SIDR_REQ_PDATA 216
#define SV_IB_SIDR_REP_PDATA 136
/* rdma_cm's own header (versions, IP addresses and port) takes the first
 * 36 bytes of REQ and SIDR_REQ private data in the IP port spaces. */
#define SV_CMA_HDR_LEN 36

/* Largest private data of any message type. */
#define SV_CM_PDATA_MAX 224

/* Flags byte. */
#define SV_CM_F_FLOW_CONTROL 0x01
#define SV_CM_F_SRQ 0x02
#define SV_CM_F_ECE 0x04 /* ece_vendor/ece_options are meaningful */

struct sv_cm_wire {
	uint8_t version; /* SV_CM_WIRE_VERSION */
	uint8_t type; /* enum sv_cm_msg_type */
	uint16_t hdr_len; /* sizeof(struct sv_cm_wire), BE */
	uint8_t pdata_len; /* bytes of pdata the sender supplied */
	uint8_t flags; /* SV_CM_F_* */
	uint8_t responder_resources; /* REQ/REP: sender's max_dest_rd_atomic */
	uint8_t initiator_depth; /* REQ/REP: sender's max_rd_atomic */
	uint8_t retry_count; /* REQ */
	uint8_t rnr_retry_count; /* REQ/REP: for the receiver's QP */
	uint16_t reason; /* REJ reason, SIDR_REP status, BE */
	uint32_t port_space; /* enum rdma_port_space of the sender, BE */
	uint32_t qpn; /* sender's QP number (24 bits), BE */
	uint32_t psn; /* sender's starting PSN (24 bits), BE */
	uint32_t qkey; /* SIDR_REP: the Q_Key to use, BE */
	uint32_t ece_vendor; /* enhanced connection establishment, BE */
	uint32_t ece_options; /* BE */
	uint8_t gid[16]; /* sender's GID of the address used */
	uint8_t pdata[SV_CM_PDATA_MAX];
};

static_assert(offsetof(struct sv_cm_wire, reason) == 10, "wire layout");
static_assert(offsetof(struct sv_cm_wire, qpn) == 16, "wire layout");
static_assert(offsetof(struct sv_cm_wire, gid) == 36, "wire layout");
static_assert(offsetof(struct sv_cm_wire, pdata) == 52, "wire layout");
static_assert(sizeof(struct sv_cm_wire) == 276, "wire layout");

#endif
