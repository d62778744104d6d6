/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Packet capture (SOFTVERBS_PCAP=FILE): the pcap writer and the packets the
 * shared-memory paths stand for.
 *
 * The file is a classic pcap with nanosecond timestamps and LINKTYPE_RAW
 * (an IPv4 or IPv6 header first).  Each record is the datagram as a RoCE
 * v2 HCA would put it on the wire: the IP header of the flow (IPv4 for
 * IPv4-mapped GIDs), a UDP header whose destination port is 4791, the
 * IANA RoCE v2 port tshark decodes with no option, whatever port the
 * datagram really used (softverbs' ports name QPs: docs/design.md), the
 * packet, and the ICRC computed over the headers as written, so that the
 * record is a valid RoCE v2 packet (on shm the ring carries no ICRC at
 * all).
 *
 * Records are appended to a buffer under one process-wide lock and the
 * buffer is written whole records at a time, when it fills, when a record
 * comes 100 ms or more after the last write, when a progress thread goes
 * to sleep for 100 ms or more (or finds the last write that old), at each
 * engine's close and at exit: a process killed leaves a file readable up
 * to its last write (a kill in the middle of a write may cut that write's
 * last record short).
 */
#include "engine/diag/pcap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/transport/dma.h"
#include "engine/transport/qpe.h"
#include "proto/icrc.h"
#include "proto/ip.h"
#include "proto/wire.h"
#include "util/env.h"
#include "util/lockorder.h"
#include "util/log.h"

#define PCAP_MAGIC_NS 0xa1b23c4du
#define PCAP_LINKTYPE_RAW 101
#define PCAP_SNAPLEN 65535
#define ROCE_V2_PORT 4791
#define REC_HDR 16
#define IP_MAX 40
#define UDP_HDR 8
#define REC_MAX (REC_HDR + IP_MAX + UDP_HDR + SV_MAX_PKT)
#define BUF_SIZE (256 * 1024)
#define FLUSH_NS 100000000ull /* 100 ms */

/* All below under `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool tried; /* this process looked at SOFTVERBS_PCAP */
static bool atfork_done, atexit_done;
static int fd = -1;
static uint8_t *buf;
static size_t used;
static uint64_t last_write;

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static uint64_t now_real(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* Whole records only: a write cut short by a full disk or a fatal signal
 * leaves the last record cut, which tshark reports and reads past. */
static void write_out(void)
{
	size_t off = 0;

	while (off < used) {
		ssize_t n = write(fd, buf + off, used - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			sv_warn("SOFTVERBS_PCAP: write failed (%s), capture "
				"stopped",
				n < 0 ? strerror(errno) : "no progress");
			atomic_store(&sv_hooks.pcap_on, false);
			close(fd);
			fd = -1;
			break;
		}
		off += (size_t)n;
	}
	used = 0;
}

static void flush_locked(void)
{
	struct timespec ts;

	if (fd >= 0 && used)
		write_out();
	last_write = now_real(&ts);
}

static void at_exit(void)
{
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	flush_locked();
	sv_mutex_unlock(&lock);
}

/* The child of a fork captures into a file of its own, if it opens a
 * device: the parent's records still in the buffer are the parent's. */
static void atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
	atomic_store(&sv_hooks.pcap_on, false);
	if (fd >= 0)
		close(fd); /* the parent keeps its lock (same description) */
	fd = -1;
	used = 0;
	tried = false;
}

/* name with %p replaced by the pid (and %% by %). */
static void expand(char *out, size_t size, const char *name)
{
	size_t o = 0;

	for (; *name && o + 1 < size; name++) {
		if (name[0] == '%' && name[1] == 'p') {
			o += (size_t)snprintf(out + o, size - o, "%d",
					      (int)getpid());
			name++;
		} else if (name[0] == '%' && name[1] == '%') {
			out[o++] = '%';
			name++;
		} else {
			out[o++] = *name;
		}
		if (o >= size)
			o = size - 1;
	}
	out[o] = '\0';
}

/* Open path for us alone: a file another live process captures into is
 * locked (flock), and is not truncated under it.  A pipe or a device
 * (SOFTVERBS_PCAP=/dev/stdout into `tshark -i -`) is written as it is. */
static int open_locked_file(const char *path, bool *busy)
{
	int f = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	struct stat st;

	*busy = false;
	if (f < 0)
		return -1;
	if (fstat(f, &st) || !S_ISREG(st.st_mode))
		return f;
	if (flock(f, LOCK_EX | LOCK_NB)) {
		*busy = errno == EWOULDBLOCK;
		close(f);
		return -1;
	}
	if (ftruncate(f, 0)) {
		close(f);
		return -1;
	}
	return f;
}

static void open_file(const char *name)
{
	char path[SV_ENV_FILE_MAX + 16];
	size_t len;
	uint8_t *h;
	bool busy;

	expand(path, SV_ENV_FILE_MAX, name);
	fd = open_locked_file(path, &busy);
	if (fd < 0 && busy) {
		/* Both sides of a test usually share one environment: the
		 * second process gets the name with its pid appended. */
		len = strlen(path);
		snprintf(path + len, sizeof(path) - len, ".%d", (int)getpid());
		sv_warn("SOFTVERBS_PCAP: %.*s is being written by another "
			"process; capturing to %s",
			(int)len, path, path);
		fd = open_locked_file(path, &busy);
	}
	if (fd < 0) {
		sv_warn("SOFTVERBS_PCAP: cannot open %s (%s): no capture", path,
			busy ? "locked" : strerror(errno));
		return;
	}
	buf = buf ? buf : malloc(BUF_SIZE);
	if (!buf) {
		close(fd);
		fd = -1;
		return;
	}
	/* The global header (pcap-savefile(5)), in our byte order as the
	 * format allows: the magic tells readers which it is. */
	h = buf;
	put32(h, PCAP_MAGIC_NS);
	put16(h + 4, 2);
	put16(h + 6, 4);
	put32(h + 8, 0); /* thiszone */
	put32(h + 12, 0); /* sigfigs */
	put32(h + 16, PCAP_SNAPLEN);
	put32(h + 20, PCAP_LINKTYPE_RAW);
	used = 24;
	write_out();
	if (fd < 0)
		return;
	if (!atexit_done && !atexit(at_exit))
		atexit_done = true;
	sv_info("SOFTVERBS_PCAP: capturing packets to %s", path);
	atomic_store(&sv_hooks.pcap_on, true);
}

void sv_pcap_engine_open(void)
{
	const char *name = sv_env_pcap();

	if (!*name)
		return;
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	if (!atfork_done && !pthread_atfork(NULL, NULL, atfork_child))
		atfork_done = true;
	if (!tried) {
		tried = true;
		open_file(name);
	}
	sv_mutex_unlock(&lock);
}

void sv_pcap_engine_close(void)
{
	if (!sv_pcap_active())
		return;
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	flush_locked();
	sv_mutex_unlock(&lock);
}

void sv_pcap_idle(bool long_sleep)
{
	struct timespec ts;
	uint64_t now = now_real(&ts);

	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	if (fd >= 0 && used && (long_sleep || now - last_write >= FLUSH_NS)) {
		write_out();
		last_write = now;
	}
	sv_mutex_unlock(&lock);
}

/* ---- records ----------------------------------------------------------------- */

/* Append the record of packet pkt[0..len) (ICRC room included) on flow,
 * sent to UDP port 4791; the ICRC is computed here.  Lock held. */
static void put(const struct sv_flow *flow, const uint8_t *pkt, uint32_t len)
{
	struct sv_flow f = *flow;
	struct timespec ts;
	uint8_t *r, *ip, *udp, *p;
	uint32_t iplen, crc, caplen;
	uint64_t now;

	if (fd < 0 || !buf || len > SV_MAX_PKT || len < SV_BTH_BYTES + 4)
		return;
	if (used + REC_MAX > BUF_SIZE)
		write_out();
	if (fd < 0)
		return;
	now = now_real(&ts);
	r = buf + used;
	ip = r + REC_HDR;
	f.dport = ROCE_V2_PORT;
	iplen = sv_ip_header(ip, &f, UDP_HDR + len, SV_IP_TTL);
	if (!iplen)
		return;
	if (iplen == 20)
		sv_store_be16(ip + 10, sv_ip_checksum(ip, 20));
	udp = ip + iplen;
	sv_store_be16(udp, f.sport);
	sv_store_be16(udp + 2, f.dport);
	sv_store_be16(udp + 4, UDP_HDR + len);
	sv_store_be16(udp + 6, 0); /* RoCE v2 senders leave it 0 */
	p = udp + UDP_HDR;
	memcpy(p, pkt, len);
	crc = htole32(sv_icrc_raw(ip, iplen, udp, p, len));
	memcpy(p + len - SV_ICRC_BYTES, &crc, 4);
	caplen = iplen + UDP_HDR + len;
	put32(r, (uint32_t)ts.tv_sec);
	put32(r + 4, (uint32_t)ts.tv_nsec);
	put32(r + 8, caplen);
	put32(r + 12, caplen);
	used += REC_HDR + caplen;
	if (now - last_write >= FLUSH_NS) {
		write_out();
		last_write = now;
	}
}

/* A packet's flow from the QP's own: ours towards the peer, or the
 * peer's towards us. */
static struct sv_flow qp_flow(const struct sv_qp_engine *qe, bool tx)
{
	struct sv_flow f = qe->flow;

	if (!tx) {
		f.src = qe->flow.dst;
		f.dst = qe->flow.src;
		f.sport = qe->flow.dport;
		f.dport = qe->flow.sport;
	}
	return f;
}

void sv_pcap_engine_pkt(struct sv_qp_engine *qe, bool tx,
			const struct sv_flow *flow, const uint8_t *pkt,
			uint32_t len)
{
	uint8_t copy[SV_MAX_PKT];
	uint32_t shift;
	bool req;

	if (len > SV_MAX_PKT || len < SV_BTH_BYTES)
		return;
	memcpy(copy, pkt, len);
	req = (sv_opinfo[sv_bth_opcode(pkt)].mask & SV_M_REQ) != 0;
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	/* As requester our requests and the responses to them, as
	 * responder the others (struct sv_hook_pcap_qp). */
	shift = req == tx ? qe->pcap.tx_shift : qe->pcap.rx_shift;
	if (shift)
		sv_bth_set_psn(copy,
			       sv_psn_add((uint32_t)sv_bth_psn(copy), shift));
	put(flow, copy, len);
	sv_mutex_unlock(&lock);
}

/* ---- packets the shm paths stand for ------------------------------------------ */

/* Headers of opcode op at b, for paylen bytes of payload; returns the
 * packet's length (ICRC room included). */
static uint32_t hdr(uint8_t *b, uint8_t op, uint32_t qpn, uint32_t psn,
		    uint32_t paylen)
{
	const struct sv_opinfo *info = &sv_opinfo[op];
	uint32_t pad = (4 - (paylen & 3)) & 3;

	memset(b, 0, info->length);
	memset(b + info->length + paylen, 0, pad + SV_ICRC_BYTES);
	sv_bth_set_opcode(b, op);
	sv_bth_set_pad(b, pad);
	sv_bth_set_pkey(b, SV_DEFAULT_PKEY);
	sv_bth_set_qpn(b, qpn);
	sv_bth_set_psn(b, psn & SV_PSN_MASK);
	return info->length + paylen + pad + SV_ICRC_BYTES;
}

static uint8_t *at(uint8_t *b, uint8_t op, enum sv_hdr_id h)
{
	return b + sv_opinfo[op].offset[h];
}

/* n bytes of the iovec from offset off, fault-guarded (the application
 * may have unmapped its buffer since): zeros where it cannot be read. */
static void gather(uint8_t *dst, const struct iovec *iov, uint32_t niov,
		   uint64_t off, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < niov && n; i++) {
		uint64_t l = iov[i].iov_len, take;

		if (off >= l) {
			off -= l;
			continue;
		}
		take = l - off < n ? l - off : n;
		if (!sv_dma_copy(dst, (uint8_t *)iov[i].iov_base + off, take))
			memset(dst, 0, take);
		dst += take;
		n -= (uint32_t)take;
		off = 0;
	}
	memset(dst, 0, n);
}

/* The AETH syndrome of a channel's acknowledgement: the NAK a responder
 * sends for the error the channel reports as a completion status
 * (paths/chan.c: REM_INV_REQ_ERR or REM_OP_ERR), else an ACK. */
static uint8_t chan_syndrome(uint32_t nak)
{
	if (!nak)
		return SV_AETH_CREDIT_INVALID;
	return nak == IBV_WC_REM_INV_REQ_ERR ? SV_AETH_NAK_INVALID :
					       SV_AETH_NAK_REM_OP;
}

static void put_ack(struct sv_qp_engine *qe, bool tx, uint32_t psn,
		    uint32_t msn, uint8_t syndrome)
{
	uint8_t b[SV_BTH_BYTES + SV_AETH_BYTES + SV_ICRC_BYTES];
	uint8_t op = SV_OP_RC_ACKNOWLEDGE;
	struct sv_flow f = qp_flow(qe, tx);
	uint32_t len = hdr(b, op, tx ? qe->dest_qpn : qe->qpn, psn, 0);

	sv_aeth_set_syndrome(at(b, op, SV_HDR_AETH), syndrome);
	sv_aeth_set_msn(at(b, op, SV_HDR_AETH), msn);
	put(&f, b, len);
}

static void put_send(struct sv_qp_engine *qe, bool tx, uint32_t psn,
		     const uint8_t *data, uint32_t len, bool imm,
		     uint32_t imm_data, bool se)
{
	uint8_t b[SV_MAX_PKT];
	uint8_t op =
		imm ? SV_OP_RC_SEND_ONLY_WITH_IMMEDIATE : SV_OP_RC_SEND_ONLY;
	struct sv_flow f = qp_flow(qe, tx);
	uint32_t n;

	if (len > SV_MAX_PMTU)
		return;
	n = hdr(b, op, tx ? qe->dest_qpn : qe->qpn, psn, len);
	sv_bth_set_se(b, se);
	sv_bth_set_ackreq(b, 1);
	if (imm)
		memcpy(at(b, op, SV_HDR_IMMDT), &imm_data,
		       4); /* network order */
	memcpy(b + sv_opinfo[op].length, data, len);
	put(&f, b, n);
}

void sv_pcap_chan_send(struct sv_qp_engine *qe, uint32_t psn,
		       const uint8_t *data, uint32_t len, bool imm,
		       uint32_t imm_data, bool se)
{
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	psn = sv_psn_add(psn, qe->pcap.tx_shift++);
	if (!qe->pcap.chan_unacked++)
		qe->pcap.chan_first = psn;
	put_send(qe, true, psn, data, len, imm, imm_data, se);
	sv_mutex_unlock(&lock);
}

void sv_pcap_chan_acked(struct sv_qp_engine *qe, uint32_t n, uint32_t nak)
{
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	/* A NAK acknowledges the messages before the one it names. */
	if (nak)
		n++;
	if (n > qe->pcap.chan_unacked)
		n = qe->pcap.chan_unacked;
	if (n) {
		/* One ACK for the last of them, as a coalescing responder
		 * sends; its MSN is the responder's, unknown here. */
		put_ack(qe, false, sv_psn_add(qe->pcap.chan_first, n - 1), 0,
			chan_syndrome(nak));
		qe->pcap.chan_first = sv_psn_add(qe->pcap.chan_first, n);
		qe->pcap.chan_unacked -= n;
	}
	sv_mutex_unlock(&lock);
}

void sv_pcap_chan_recv(struct sv_qp_engine *qe, const uint8_t *data,
		       uint32_t len, bool imm, uint32_t imm_data, bool se)
{
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	qe->pcap.rx_acked = false;
	put_send(qe, false, sv_psn_add(qe->resp.psn, qe->pcap.rx_shift++), data,
		 len, imm, imm_data, se);
	sv_mutex_unlock(&lock);
}

void sv_pcap_chan_ack(struct sv_qp_engine *qe, uint32_t nak)
{
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	/* (An atomic taken last carried its own acknowledgement.) */
	if (nak || !qe->pcap.rx_acked)
		put_ack(qe, true,
			sv_psn_add(qe->resp.psn, qe->pcap.rx_shift - 1),
			qe->resp.msn, chan_syndrome(nak));
	sv_mutex_unlock(&lock);
}

static void put_atomic(struct sv_qp_engine *qe, bool tx, uint32_t psn,
		       const struct sv_pcap_atomic *a)
{
	uint8_t b[SV_BTH_BYTES + SV_ATMETH_BYTES + SV_ICRC_BYTES];
	uint8_t op = a->cas ? SV_OP_RC_COMPARE_SWAP : SV_OP_RC_FETCH_ADD;
	struct sv_flow f = qp_flow(qe, tx);
	uint32_t len = hdr(b, op, tx ? qe->dest_qpn : qe->qpn, psn, 0);
	uint8_t *h = at(b, op, SV_HDR_ATMETH);

	sv_atmeth_set_va(h, a->va);
	sv_atmeth_set_rkey(h, a->rkey);
	/* As req.c's send_atomic: FETCH_ADD's addend in the swap field. */
	sv_atmeth_set_swap_add(h, a->cas ? a->swap : a->compare_add);
	if (a->cas)
		sv_atmeth_set_compare(h, a->compare_add);
	sv_bth_set_ackreq(b, 1);
	put(&f, b, len);
}

static void put_atomic_ack(struct sv_qp_engine *qe, bool tx, uint32_t psn,
			   uint32_t msn, uint64_t orig)
{
	uint8_t b[SV_BTH_BYTES + SV_AETH_BYTES + SV_ATMACK_BYTES +
		  SV_ICRC_BYTES];
	uint8_t op = SV_OP_RC_ATOMIC_ACKNOWLEDGE;
	struct sv_flow f = qp_flow(qe, tx);
	uint32_t len = hdr(b, op, tx ? qe->dest_qpn : qe->qpn, psn, 0);

	sv_aeth_set_syndrome(at(b, op, SV_HDR_AETH), SV_AETH_CREDIT_INVALID);
	sv_aeth_set_msn(at(b, op, SV_HDR_AETH), msn);
	sv_atmack_set_orig(at(b, op, SV_HDR_ATMACK), orig);
	put(&f, b, len);
}

void sv_pcap_chan_atomic(struct sv_qp_engine *qe, uint32_t psn,
			 const struct sv_pcap_atomic *a)
{
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	psn = sv_psn_add(psn, qe->pcap.tx_shift++);
	if (!qe->pcap.chan_unacked++)
		qe->pcap.chan_first = psn;
	put_atomic(qe, true, psn, a);
	sv_mutex_unlock(&lock);
}

void sv_pcap_chan_atomic_acked(struct sv_qp_engine *qe, uint64_t orig)
{
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	if (qe->pcap.chan_unacked) {
		/* The oldest message not acknowledged is this atomic: the
		 * SENDs before it were (sv_pcap_chan_acked first). */
		put_atomic_ack(qe, false, qe->pcap.chan_first, 0, orig);
		qe->pcap.chan_first = sv_psn_add(qe->pcap.chan_first, 1);
		qe->pcap.chan_unacked--;
	}
	sv_mutex_unlock(&lock);
}

void sv_pcap_chan_atomic_recv(struct sv_qp_engine *qe,
			      const struct sv_pcap_atomic *a)
{
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	qe->pcap.rx_acked = false;
	put_atomic(qe, false, sv_psn_add(qe->resp.psn, qe->pcap.rx_shift++), a);
	sv_mutex_unlock(&lock);
}

void sv_pcap_chan_atomic_ack(struct sv_qp_engine *qe, uint64_t orig)
{
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	put_atomic_ack(qe, true,
		       sv_psn_add(qe->resp.psn, qe->pcap.rx_shift - 1),
		       qe->resp.msn, orig);
	qe->pcap.rx_acked = true;
	sv_mutex_unlock(&lock);
}

/* opcode of packet i of n of a multi-packet WRITE or READ response */
static uint8_t seg_op(uint32_t i, uint32_t n, uint8_t only, uint8_t first,
		      uint8_t middle, uint8_t last)
{
	if (n == 1)
		return only;
	if (i == 0)
		return first;
	return i + 1 == n ? last : middle;
}

void sv_pcap_direct(struct sv_qp_engine *qe, bool write, uint32_t psn,
		    uint64_t va, uint32_t rkey, const struct iovec *iov,
		    uint32_t niov, uint64_t len)
{
	uint32_t mtu = qe->pmtu ? qe->pmtu : SV_MAX_PMTU;
	uint32_t n = (uint32_t)((len + mtu - 1) / mtu), i;
	struct sv_flow ftx = qp_flow(qe, true), frx = qp_flow(qe, false);
	uint8_t b[SV_MAX_PKT];

	if (!n)
		return;
	sv_mutex_lock(&lock, SV_LOCK_PCAP);
	psn = sv_psn_add(psn, qe->pcap.tx_shift);
	qe->pcap.tx_shift += n;
	if (!write) {
		uint8_t op = SV_OP_RC_RDMA_READ_REQUEST;
		uint32_t l = hdr(b, op, qe->dest_qpn, psn, 0);
		uint8_t *reth = at(b, op, SV_HDR_RETH);

		sv_reth_set_va(reth, va);
		sv_reth_set_rkey(reth, rkey);
		sv_reth_set_len(reth, len);
		put(&ftx, b, l);
	}
	for (i = 0; i < n; i++) {
		uint32_t pay =
			i + 1 == n ? (uint32_t)(len - (uint64_t)i * mtu) : mtu;
		uint8_t op =
			write ? seg_op(i, n, SV_OP_RC_RDMA_WRITE_ONLY,
				       SV_OP_RC_RDMA_WRITE_FIRST,
				       SV_OP_RC_RDMA_WRITE_MIDDLE,
				       SV_OP_RC_RDMA_WRITE_LAST) :
				seg_op(i, n, SV_OP_RC_RDMA_READ_RESPONSE_ONLY,
				       SV_OP_RC_RDMA_READ_RESPONSE_FIRST,
				       SV_OP_RC_RDMA_READ_RESPONSE_MIDDLE,
				       SV_OP_RC_RDMA_READ_RESPONSE_LAST);
		uint32_t mask = sv_opinfo[op].mask;
		uint32_t l = hdr(b, op, write ? qe->dest_qpn : qe->qpn,
				 sv_psn_add(psn, i), pay);

		if (mask & SV_M_RETH) {
			sv_reth_set_va(at(b, op, SV_HDR_RETH), va);
			sv_reth_set_rkey(at(b, op, SV_HDR_RETH), rkey);
			sv_reth_set_len(at(b, op, SV_HDR_RETH), len);
		}
		if (mask & SV_M_AETH)
			sv_aeth_set_syndrome(at(b, op, SV_HDR_AETH),
					     SV_AETH_CREDIT_INVALID);
		if (write && i + 1 == n)
			sv_bth_set_ackreq(b, 1);
		gather(b + sv_opinfo[op].length, iov, niov, (uint64_t)i * mtu,
		       pay);
		put(write ? &ftx : &frx, b, l);
	}
	if (write)
		put_ack(qe, false, sv_psn_add(psn, n - 1), 0,
			SV_AETH_CREDIT_INVALID);
	sv_mutex_unlock(&lock);
}
