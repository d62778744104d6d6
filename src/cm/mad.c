/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The IB CM MAD codec (mad.h).  Offsets are of the message, after the
 * 24-byte MAD header (IBA 12.6, tables of each message's contents); a
 * field narrower than its bytes sits in their most significant bits
 * first, as IBA numbers them.
 */
#include "cm/mad.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

/* Where each type's private data starts in the message, and its size. */
static const struct {
	uint16_t attr;
	uint8_t off, size;
} pdata_at[] = {
	{ SV_MAD_REQ, 140, 92 },      { SV_MAD_MRA, 10, 222 },
	{ SV_MAD_REJ, 84, 148 },      { SV_MAD_REP, 36, 196 },
	{ SV_MAD_RTU, 8, 224 },	      { SV_MAD_DREQ, 12, 220 },
	{ SV_MAD_DREP, 8, 224 },      { SV_MAD_SIDR_REQ, 16, 216 },
	{ SV_MAD_SIDR_REP, 96, 136 },
};

static int pdata_slot(uint16_t attr)
{
	for (size_t i = 0; i < sizeof(pdata_at) / sizeof(pdata_at[0]); i++)
		if (pdata_at[i].attr == attr)
			return (int)i;
	return -1;
}

int sv_mad_pdata_size(uint16_t attr)
{
	int i = pdata_slot(attr);

	return i < 0 ? 0 : pdata_at[i].size;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* A 24-bit value in the top of a 32-bit word, with 8 more bits below. */
static void put24_8(uint8_t *p, uint32_t hi24, uint8_t lo8)
{
	put32(p, (hi24 & 0xffffff) << 8 | lo8);
}

int sv_mad_encode(const struct sv_mad *m, uint8_t *out)
{
	int i = pdata_slot(m->attr);
	uint8_t *b = out + SV_MAD_HDR;

	if (i < 0 || m->pdata_len > pdata_at[i].size)
		return EINVAL;
	memset(out, 0, SV_MAD_SIZE);
	out[0] = SV_MAD_BASE_VERSION;
	out[1] = SV_MAD_CLASS_CM;
	out[2] = SV_MAD_CM_CLASS_VERSION;
	out[3] = SV_MAD_METHOD_SEND;
	put64(out + 8, m->tid);
	put16(out + 16, m->attr);
	put32(b, m->local_comm);
	switch (m->attr) {
	case SV_MAD_REQ:
		put64(b + 8, m->service_id);
		put64(b + 16, m->ca_guid);
		put32(b + 28, m->qkey);
		put24_8(b + 32, m->qpn, m->resp_res);
		put24_8(b + 36, 0, m->init_depth);
		put24_8(b + 40, 0,
			(uint8_t)((m->remote_cm_timeout & 0x1f) << 3 |
				  (m->transport & 3) << 1 |
				  (m->flow_control & 1)));
		put24_8(b + 44, m->psn,
			(uint8_t)((m->local_cm_timeout & 0x1f) << 3 |
				  (m->retry_count & 7)));
		put16(b + 48, m->pkey);
		b[50] = (uint8_t)((m->mtu & 0xf) << 4 | (m->rnr_retry & 7));
		b[51] = (uint8_t)((m->max_cm_retries & 0xf) << 4 |
				  (m->srq & 1) << 3);
		put16(b + 52, m->slid);
		put16(b + 54, m->dlid);
		memcpy(b + 56, m->sgid, 16);
		memcpy(b + 72, m->dgid, 16);
		put32(b + 88,
		      (m->flow_label & 0xfffff) << 12 | (m->rate & 0x3f));
		b[92] = m->tclass;
		b[93] = m->hop_limit;
		b[94] = (uint8_t)((m->sl & 0xf) << 4 | (m->subnet_local & 1)
							       << 3);
		b[95] = (uint8_t)((m->ack_timeout & 0x1f) << 3);
		break;
	case SV_MAD_REP:
		put32(b + 4, m->remote_comm);
		put32(b + 8, m->qkey);
		put24_8(b + 12, m->qpn, 0);
		put24_8(b + 20, m->psn, 0);
		b[24] = m->resp_res;
		b[25] = m->init_depth;
		b[26] = (uint8_t)((m->target_ack_delay & 0x1f) << 3 |
				  (m->failover & 3) << 1 |
				  (m->flow_control & 1));
		b[27] = (uint8_t)((m->rnr_retry & 7) << 5 | (m->srq & 1) << 4);
		put64(b + 28, m->ca_guid);
		break;
	case SV_MAD_REJ:
		if (m->ari_len > sizeof(m->ari))
			return EINVAL;
		put32(b + 4, m->remote_comm);
		b[8] = (uint8_t)((m->msg & 3) << 6);
		b[9] = (uint8_t)((m->ari_len & 0x7f) << 1);
		put16(b + 10, m->reason);
		memcpy(b + 12, m->ari, m->ari_len);
		break;
	case SV_MAD_MRA:
		put32(b + 4, m->remote_comm);
		b[8] = (uint8_t)((m->msg & 3) << 6);
		b[9] = (uint8_t)((m->service_timeout & 0x1f) << 3);
		break;
	case SV_MAD_DREQ:
		put32(b + 4, m->remote_comm);
		put24_8(b + 8, m->qpn, 0);
		break;
	case SV_MAD_RTU:
	case SV_MAD_DREP:
		put32(b + 4, m->remote_comm);
		break;
	case SV_MAD_SIDR_REQ:
		put16(b + 4, m->pkey);
		put64(b + 8, m->service_id);
		break;
	case SV_MAD_SIDR_REP:
		b[4] = m->status;
		put24_8(b + 8, m->qpn, 0);
		put64(b + 12, m->service_id);
		put32(b + 20, m->qkey);
		break;
	}
	memcpy(b + pdata_at[i].off, m->pdata, m->pdata_len);
	return 0;
}

int sv_mad_decode(struct sv_mad *m, const uint8_t *in, size_t len)
{
	const uint8_t *b = in + SV_MAD_HDR;
	int i;

	memset(m, 0, sizeof(*m));
	if (len < SV_MAD_SIZE)
		return EMSGSIZE;
	if (in[0] != SV_MAD_BASE_VERSION || in[1] != SV_MAD_CLASS_CM ||
	    in[2] != SV_MAD_CM_CLASS_VERSION || in[3] != SV_MAD_METHOD_SEND)
		return EPROTO;
	m->tid = get64(in + 8);
	m->attr = get16(in + 16);
	i = pdata_slot(m->attr);
	if (i < 0)
		return EOPNOTSUPP;
	m->local_comm = get32(b);
	switch (m->attr) {
	case SV_MAD_REQ:
		m->service_id = get64(b + 8);
		m->ca_guid = get64(b + 16);
		m->qkey = get32(b + 28);
		m->qpn = get32(b + 32) >> 8;
		m->resp_res = b[35];
		m->init_depth = b[39];
		m->remote_cm_timeout = b[43] >> 3;
		m->transport = (b[43] >> 1) & 3;
		m->flow_control = b[43] & 1;
		m->psn = get32(b + 44) >> 8;
		m->local_cm_timeout = b[47] >> 3;
		m->retry_count = b[47] & 7;
		m->pkey = get16(b + 48);
		m->mtu = b[50] >> 4;
		m->rnr_retry = b[50] & 7;
		m->max_cm_retries = b[51] >> 4;
		m->srq = (b[51] >> 3) & 1;
		m->slid = get16(b + 52);
		m->dlid = get16(b + 54);
		memcpy(m->sgid, b + 56, 16);
		memcpy(m->dgid, b + 72, 16);
		m->flow_label = get32(b + 88) >> 12;
		m->rate = b[91] & 0x3f;
		m->tclass = b[92];
		m->hop_limit = b[93];
		m->sl = b[94] >> 4;
		m->subnet_local = (b[94] >> 3) & 1;
		m->ack_timeout = b[95] >> 3;
		break;
	case SV_MAD_REP:
		m->remote_comm = get32(b + 4);
		m->qkey = get32(b + 8);
		m->qpn = get32(b + 12) >> 8;
		m->psn = get32(b + 20) >> 8;
		m->resp_res = b[24];
		m->init_depth = b[25];
		m->target_ack_delay = b[26] >> 3;
		m->failover = (b[26] >> 1) & 3;
		m->flow_control = b[26] & 1;
		m->rnr_retry = b[27] >> 5;
		m->srq = (b[27] >> 4) & 1;
		m->ca_guid = get64(b + 28);
		break;
	case SV_MAD_REJ:
		m->remote_comm = get32(b + 4);
		m->msg = b[8] >> 6;
		m->ari_len = b[9] >> 1;
		m->reason = get16(b + 10);
		if (m->ari_len > sizeof(m->ari))
			m->ari_len = sizeof(m->ari);
		memcpy(m->ari, b + 12, m->ari_len);
		break;
	case SV_MAD_MRA:
		m->remote_comm = get32(b + 4);
		m->msg = b[8] >> 6;
		m->service_timeout = b[9] >> 3;
		break;
	case SV_MAD_DREQ:
		m->remote_comm = get32(b + 4);
		m->qpn = get32(b + 8) >> 8;
		break;
	case SV_MAD_RTU:
	case SV_MAD_DREP:
		m->remote_comm = get32(b + 4);
		break;
	case SV_MAD_SIDR_REQ:
		m->pkey = get16(b + 4);
		m->service_id = get64(b + 8);
		break;
	case SV_MAD_SIDR_REP:
		m->status = b[4];
		m->qpn = get32(b + 8) >> 8;
		m->service_id = get64(b + 12);
		m->qkey = get32(b + 20);
		break;
	}
	m->pdata_len = pdata_at[i].size;
	memcpy(m->pdata, b + pdata_at[i].off, m->pdata_len);
	return 0;
}

void sv_cma_hdr_encode(uint8_t *out, const struct sockaddr *src,
		       const struct sockaddr *dst)
{
	memset(out, 0, SV_CMA_HDR_BYTES);
	if (src->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)src;
		const struct sockaddr_in *d = (const void *)dst;

		out[1] = 4 << 4;
		memcpy(out + 2, &s->sin_port, 2);
		memcpy(out + 4 + 12, &s->sin_addr, 4);
		memcpy(out + 20 + 12, &d->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *s = (const void *)src;
		const struct sockaddr_in6 *d = (const void *)dst;

		out[1] = 6 << 4;
		memcpy(out + 2, &s->sin6_port, 2);
		memcpy(out + 4, &s->sin6_addr, 16);
		memcpy(out + 20, &d->sin6_addr, 16);
	}
}

int sv_cma_hdr_decode(const uint8_t *in, struct sockaddr_storage *src,
		      struct sockaddr_storage *dst)
{
	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	if (in[0] != 0)
		return EPROTO;
	if (in[1] >> 4 == 4) {
		struct sockaddr_in *s = (void *)src, *d = (void *)dst;

		s->sin_family = d->sin_family = AF_INET;
		memcpy(&s->sin_port, in + 2, 2);
		memcpy(&s->sin_addr, in + 4 + 12, 4);
		memcpy(&d->sin_addr, in + 20 + 12, 4);
		return 0;
	}
	if (in[1] >> 4 == 6) {
		struct sockaddr_in6 *s = (void *)src, *d = (void *)dst;

		s->sin6_family = d->sin6_family = AF_INET6;
		memcpy(&s->sin6_port, in + 2, 2);
		memcpy(&s->sin6_addr, in + 4, 16);
		memcpy(&d->sin6_addr, in + 20, 16);
		return 0;
	}
	return EPROTO;
}
