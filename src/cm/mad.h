/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * IB CM MADs (IBA chapter 12.6, 13.4): what the CM of a RoCE peer (the
 * kernel's ib_cm under rdma_cm) sends and takes on the GSI QP.  A MAD is
 * 256 bytes: the 24-byte common header (base version 1, class 0x07 for the
 * CM, class version 2, method Send, a transaction ID, an attribute ID naming
 * the message) and the message, whose fields are big-endian and packed
 * most significant bit first.
 *
 * struct sv_mad holds the fields of every message type that softverbs
 * reads or writes; sv_mad_encode/sv_mad_decode convert, checking lengths
 * and limits (mad.c).  Nothing here knows rdma_cm's ids.
 */
#ifndef SV_CM_MAD_H
#define SV_CM_MAD_H

#include <stddef.h>
#include <stdint.h>

#include "proto/mad.h"

#define SV_MAD_BASE_VERSION 1
#define SV_MAD_CM_CLASS_VERSION 2
#define SV_MAD_METHOD_SEND 0x03

/* REJ's and MRA's "message rejected/MRAed" field. */
#define SV_MAD_MSG_REQ 0
#define SV_MAD_MSG_REP 1
#define SV_MAD_MSG_OTHER 2

/* RoCE: no LIDs; the permissive LID stands in the path's LID fields. */
#define SV_MAD_LID_PERMISSIVE 0xffff

/* rdma_cm's service IDs: 0x0000000001000000 | port space << 16 | port. */
#define SV_CMA_SERVICE_ID(ps, port) \
	(((uint64_t)(ps) << 16) | (uint64_t)(uint16_t)(port))
#define SV_CMA_SERVICE_MASK 0xffffffffffff0000ull

struct sv_mad {
	uint16_t attr; /* enum sv_mad_attr */
	uint64_t tid;
	uint32_t local_comm,
		remote_comm; /* SIDR: local_comm is the request ID */
	uint64_t service_id; /* REQ, SIDR_REQ, SIDR_REP */
	uint64_t ca_guid; /* REQ, REP */
	uint32_t qkey; /* REQ, REP, SIDR_REP */
	uint32_t qpn; /* REQ, REP: sender's; DREQ: receiver's; SIDR_REP */
	uint32_t psn; /* REQ, REP: sender's starting PSN */
	uint8_t resp_res, init_depth; /* REQ, REP */
	uint8_t remote_cm_timeout, local_cm_timeout; /* REQ (4.096us * 2^x) */
	uint8_t transport; /* REQ: 0 RC, 1 UC */
	uint8_t flow_control; /* REQ, REP */
	uint8_t retry_count, rnr_retry; /* REQ (both), REP (rnr) */
	uint8_t max_cm_retries; /* REQ */
	uint8_t srq; /* REQ, REP */
	uint8_t mtu; /* REQ: enum ibv_mtu */
	uint8_t target_ack_delay, failover; /* REP */
	uint16_t pkey; /* REQ, SIDR_REQ */
	/* REQ primary path */
	uint16_t slid, dlid;
	uint8_t sgid[16], dgid[16];
	uint32_t flow_label;
	uint8_t rate, tclass, hop_limit, sl, subnet_local, ack_timeout;
	/* REJ */
	uint8_t msg; /* REJ, MRA: SV_MAD_MSG_* */
	uint16_t reason;
	uint8_t ari_len;
	uint8_t ari[72];
	/* MRA */
	uint8_t service_timeout;
	/* SIDR_REP */
	uint8_t status;
	/* private data: the message's whole field is carried (IBA fixes its
	 * size); pdata_len is that size on decode, and on encode the bytes
	 * given (the rest zero). */
	uint8_t pdata_len;
	uint8_t pdata[224];
};

/* Private data field size of a message type (0: unknown type). */
int sv_mad_pdata_size(uint16_t attr);
/* Encode m into out (SV_MAD_SIZE bytes): 0, or EINVAL (unknown type,
 * private data longer than the type's field). */
int sv_mad_encode(const struct sv_mad *m, uint8_t *out);
/* Decode a received MAD: 0, EMSGSIZE (short), EPROTO (not a CM Send of
 * class version 2), EOPNOTSUPP (an attribute softverbs does not take). */
int sv_mad_decode(struct sv_mad *m, const uint8_t *in, size_t len);

/* rdma_cm's private data header in REQ and SIDR_REQ (IP port spaces):
 * version 0, IP version in the high nibble, the source port, then source
 * and destination addresses (IPv4 in the last 4 of 16 bytes). */
#define SV_CMA_HDR_BYTES 36
struct sockaddr;
void sv_cma_hdr_encode(uint8_t *out, const struct sockaddr *src,
		       const struct sockaddr *dst);
/* 0, or EPROTO (a version or address family rdma_cm does not send);
 * src/dst as sockaddr_storage (port: src's from the header, dst's 0). */
struct sockaddr_storage;
int sv_cma_hdr_decode(const uint8_t *in, struct sockaddr_storage *src,
		      struct sockaddr_storage *dst);

#endif
