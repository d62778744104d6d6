/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Multi-process harness for the integration tests (see harness.h): process
 * structure with watchdogs, the control socket, endpoint setup through the
 * public verbs API, polling with deadlines and data patterns.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *hx_role = "A";
static const char *hx_case_name = "";

/* ---- logging and time ---------------------------------------------------- */

/* One line "[role case] <what><message>\n" in a single write(2): both
 * processes of a case share one stderr (a file or ctest's pipe), and a
 * line written in pieces could be cut by the other's lines (the counters
 * udp_gso.sh sums from the log came glued behind another line's head). */
static void __attribute__((format(printf, 2, 0)))
hx_vline(const char *what, const char *fmt, va_list ap)
{
	char line[1024];
	size_t len, off = 0;
	int n;

	n = snprintf(line, sizeof(line), "[%s %s] %s", hx_role, hx_case_name,
		     what);
	len = n < 0 ? 0 : (size_t)n;
	if (len < sizeof(line) - 1) {
		n = vsnprintf(line + len, sizeof(line) - 1 - len, fmt, ap);
		len += n < 0 ? 0 : (size_t)n;
	}
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2; /* cut, still one line */
	line[len++] = '\n';
	while (off < len) {
		ssize_t w = write(2, line + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
}

void hx_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hx_vline("", fmt, ap);
	va_end(ap);
}

void hx_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hx_vline("FATAL: ", fmt, ap);
	va_end(ap);
	exit(1);
}

uint64_t hx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void hx_msleep(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

uint32_t hx_mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

/* ---- control socket ------------------------------------------------------ */

void hx_send(int fd, const void *p, size_t len)
{
	const char *c = p;

	while (len) {
		ssize_t n = write(fd, c, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			hx_die("control socket write: %s (peer gone?)",
			       strerror(errno));
		c += n;
		len -= n;
	}
}

void hx_recv(int fd, void *p, size_t len)
{
	char *c = p;

	while (len) {
		ssize_t n = read(fd, c, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			hx_die("peer exited before the exchange finished");
		if (n < 0)
			hx_die("control socket read: %s", strerror(errno));
		c += n;
		len -= n;
	}
}

void hx_send_u64(int fd, uint64_t v)
{
	hx_send(fd, &v, sizeof(v));
}

uint64_t hx_recv_u64(int fd)
{
	uint64_t v;

	hx_recv(fd, &v, sizeof(v));
	return v;
}

void hx_sync(int fd)
{
	char c = 's';

	hx_send(fd, &c, 1);
	hx_recv(fd, &c, 1);
	if (c != 's')
		hx_die("control protocol out of step");
}

/* ---- patterns ---------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Word i of pattern seed; bytes are taken little-endian from it. */
static uint64_t pat_word(uint64_t seed, uint64_t i)
{
	return mix64(seed * 0x100000001b3ULL + i);
}

uint8_t hx_pattern_byte(uint64_t seed, size_t off)
{
	return (uint8_t)(pat_word(seed, off >> 3) >> ((off & 7) * 8));
}

void hx_fill(void *p, size_t len, uint64_t seed)
{
	uint8_t *b = p;
	size_t i, words = len / 8;

	for (i = 0; i < words; i++) {
		uint64_t w = pat_word(seed, i);

		memcpy(b + i * 8, &w, 8);
	}
	for (i = words * 8; i < len; i++)
		b[i] = hx_pattern_byte(seed, i);
}

int64_t hx_verify(const void *p, size_t len, uint64_t seed)
{
	const uint8_t *b = p;
	size_t i, words = len / 8;

	for (i = 0; i < words; i++) {
		uint64_t w = pat_word(seed, i), got;

		memcpy(&got, b + i * 8, 8);
		if (got != w)
			break;
	}
	for (i *= 8; i < len; i++)
		if (b[i] != hx_pattern_byte(seed, i))
			return (int64_t)i;
	return -1;
}

void *hx_alloc(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		hx_die("mmap %zu: %s", len, strerror(errno));
	return p;
}

void hx_free(void *p, size_t len)
{
	if (p)
		munmap(p, len ? len : 1);
}

/* ---- endpoint ---------------------------------------------------------- */

struct hx_opts hx_opts_default(void)
{
	struct hx_opts o = {
		.buf_len = 1 << 20,
		.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		.qp_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_ATOMIC,
		.max_send_wr = 64,
		.max_recv_wr = 64,
		.max_send_sge = 4,
		.max_recv_sge = 4,
		.max_inline = 0,
		.send_cqe = 256,
		.recv_cqe = 0,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 12,
		.max_rd_atomic = 16,
		.max_dest_rd_atomic = 16,
		.gid_index = -1,
		.psn = -1,
	};
	return o;
}

int hx_gid_index_of(struct ibv_context *ctx, const char *ip)
{
	struct ibv_gid_entry tab[64];
	union ibv_gid want;
	struct in_addr a4;
	ssize_t n, i;

	memset(&want, 0, sizeof(want));
	if (inet_pton(AF_INET, ip, &a4) == 1) {
		want.raw[10] = want.raw[11] = 0xff;
		memcpy(&want.raw[12], &a4, 4);
	} else if (inet_pton(AF_INET6, ip, want.raw) != 1) {
		return -1;
	}
	n = ibv_query_gid_table(ctx, tab, 64, 0);
	for (i = 0; i < n; i++)
		if (tab[i].port_num == 1 &&
		    !memcmp(tab[i].gid.raw, want.raw, 16))
			return (int)tab[i].gid_index;
	return -1;
}

static int pick_gid_index(struct hx_ep *ep)
{
	const char *addr = getenv("HX_GID_ADDR"), *idx = getenv("HX_GID_INDEX");
	int i;

	if (ep->o.gid_index >= 0)
		return ep->o.gid_index;
	if (ep->o.gid_addr)
		addr = ep->o.gid_addr;
	if (addr && *addr) {
		i = hx_gid_index_of(ep->ctx, addr);
		if (i < 0)
			hx_die("no GID for address %s in softverbs0's table",
			       addr);
		return i;
	}
	if (idx && *idx)
		return atoi(idx);
	i = hx_gid_index_of(ep->ctx, "127.0.0.1");
	if (i < 0)
		hx_die("no loopback (127.0.0.1) GID in softverbs0's table");
	return i;
}

static void create_qp(struct hx_ep *ep)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int rc;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ep->scq;
	ia.recv_cq = ep->rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = ep->o.sq_sig_all;
	ia.cap.max_send_wr = ep->o.max_send_wr;
	ia.cap.max_recv_wr = ep->o.max_recv_wr;
	ia.cap.max_send_sge = ep->o.max_send_sge;
	ia.cap.max_recv_sge = ep->o.max_recv_sge;
	ia.cap.max_inline_data = ep->o.max_inline;
	ep->qp = ibv_create_qp(ep->pd, &ia);
	if (!ep->qp)
		hx_die("ibv_create_qp: %s", strerror(errno));
	ep->cap = ia.cap;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = ep->o.qp_access;
	rc = ibv_modify_qp(ep->qp, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS);
	if (rc)
		hx_die("modify_qp RESET->INIT: %s", strerror(rc));
	ep->psn = ep->o.psn >= 0 ? (uint32_t)ep->o.psn & 0xffffff :
				   (uint32_t)lrand48() & 0xffffff;
}

void hx_ep_open(struct hx_ep *ep, const struct hx_opts *o, int fd)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int n, i;

	memset(ep, 0, sizeof(*ep));
	ep->o = *o;
	ep->fd = fd;
	srand48(getpid() ^ (long)hx_now_ms());
	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		hx_die("no RDMA device (ibv_get_device_list: %s)",
		       strerror(errno));
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "softverbs0"))
			break;
	if (i == n)
		hx_die("softverbs0 not in the device list");
	ep->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ep->ctx)
		hx_die("ibv_open_device: %s", strerror(errno));
	if (ibv_query_port(ep->ctx, 1, &pa))
		hx_die("ibv_query_port failed");
	ep->mtu = pa.active_mtu;
	ep->mtu_bytes = hx_mtu_bytes(pa.active_mtu);
	ep->gid_index = pick_gid_index(ep);
	if (ibv_query_gid(ep->ctx, 1, ep->gid_index, &ep->gid))
		hx_die("ibv_query_gid %d failed", ep->gid_index);

	ep->pd = ibv_alloc_pd(ep->ctx);
	if (!ep->pd)
		hx_die("ibv_alloc_pd: %s", strerror(errno));
	if (o->channel) {
		ep->ch = ibv_create_comp_channel(ep->ctx);
		if (!ep->ch)
			hx_die("ibv_create_comp_channel: %s", strerror(errno));
	}
	ep->scq = ibv_create_cq(ep->ctx, o->send_cqe, NULL, ep->ch, 0);
	if (!ep->scq)
		hx_die("ibv_create_cq(%d): %s", o->send_cqe, strerror(errno));
	ep->rcq = ep->scq;
	if (o->recv_cqe) {
		ep->rcq = ibv_create_cq(ep->ctx, o->recv_cqe, NULL, ep->ch, 0);
		if (!ep->rcq)
			hx_die("ibv_create_cq(%d): %s", o->recv_cqe,
			       strerror(errno));
	}
	create_qp(ep);
	if (!o->no_mr) {
		ep->buf = hx_alloc(o->buf_len);
		ep->mr = ibv_reg_mr(ep->pd, ep->buf, o->buf_len, o->mr_access);
		if (!ep->mr)
			hx_die("ibv_reg_mr(%zu): %s", o->buf_len,
			       strerror(errno));
	}
}

void hx_ep_new_qp(struct hx_ep *ep)
{
	int rc = ibv_destroy_qp(ep->qp);

	if (rc)
		hx_die("ibv_destroy_qp: %s", strerror(rc));
	create_qp(ep);
}

void hx_ep_exchange(struct hx_ep *ep)
{
	struct hx_remote me;

	memset(&me, 0, sizeof(me));
	me.qpn = ep->qp->qp_num;
	me.psn = ep->psn;
	me.gid = ep->gid;
	me.addr = (uintptr_t)ep->buf;
	me.len = ep->o.buf_len;
	me.rkey = ep->mr ? ep->mr->rkey : 0;
	me.mtu = ep->mtu;
	hx_send(ep->fd, &me, sizeof(me));
	hx_recv(ep->fd, &ep->peer, sizeof(ep->peer));
}

int hx_ep_rtr(struct hx_ep *ep)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ep->mtu < (enum ibv_mtu)ep->peer.mtu ?
			     ep->mtu :
			     (enum ibv_mtu)ep->peer.mtu;
	if (ep->o.path_mtu)
		a.path_mtu = ep->o.path_mtu;
	ep->mtu_bytes = hx_mtu_bytes(a.path_mtu);
	a.dest_qp_num = ep->peer.qpn;
	a.rq_psn = ep->peer.psn;
	a.max_dest_rd_atomic = ep->o.max_dest_rd_atomic;
	a.min_rnr_timer = ep->o.min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = ep->peer.gid;
	a.ah_attr.grh.sgid_index = ep->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = ep->o.tclass;
	a.ah_attr.port_num = 1;
	return ibv_modify_qp(ep->qp, &a,
			     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER);
}

int hx_ep_rts(struct hx_ep *ep)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = ep->o.timeout;
	a.retry_cnt = ep->o.retry_cnt;
	a.rnr_retry = ep->o.rnr_retry;
	a.sq_psn = ep->psn;
	a.max_rd_atomic = ep->o.max_rd_atomic;
	return ibv_modify_qp(ep->qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

void hx_ep_connect(struct hx_ep *ep)
{
	int rc;

	hx_ep_exchange(ep);
	rc = hx_ep_rtr(ep);
	if (rc)
		hx_die("modify_qp INIT->RTR: %s", strerror(rc));
	rc = hx_ep_rts(ep);
	if (rc)
		hx_die("modify_qp RTR->RTS: %s", strerror(rc));
	hx_sync(ep->fd);
}

struct ibv_qp *hx_ep_srq_qp(struct hx_ep *ep, struct ibv_srq *srq,
			    uint32_t max_send_wr)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = ep->scq,
		.recv_cq = ep->rcq,
		.srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = max_send_wr, .max_send_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *q = ibv_create_qp(ep->pd, &ia);

	if (!q)
		hx_die("ibv_create_qp on an SRQ: %s", strerror(errno));
	if (ibv_modify_qp(q, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		hx_die("modify_qp INIT: %s", strerror(errno));
	return q;
}

void hx_ep_connect_more(struct hx_ep *ep, struct ibv_qp **q, int n)
{
	struct ibv_qp *mine = ep->qp;
	uint32_t qpn, peer;
	int i;

	/* One number each way per QP: n is small and the order is the
	 * pairing. */
	for (i = 0; i < n; i++) {
		qpn = q[i]->qp_num;
		hx_send(ep->fd, &qpn, sizeof(qpn));
		hx_recv(ep->fd, &peer, sizeof(peer));
		ep->qp = q[i];
		ep->peer.qpn = peer;
		if (hx_ep_rtr(ep) || hx_ep_rts(ep))
			hx_die("connecting QP %d", i);
	}
	ep->qp = mine;
	hx_sync(ep->fd);
}

int hx_ep_close(struct hx_ep *ep)
{
	int bad = 0, rc;

#define HX_TRY(call)                                           \
	do {                                                   \
		rc = (call);                                   \
		if (rc) {                                      \
			hx_log("%s: %s", #call, strerror(rc)); \
			bad++;                                 \
		}                                              \
	} while (0)
	if (ep->qp)
		HX_TRY(ibv_destroy_qp(ep->qp));
	if (ep->mr)
		HX_TRY(ibv_dereg_mr(ep->mr));
	if (ep->rcq && ep->rcq != ep->scq)
		HX_TRY(ibv_destroy_cq(ep->rcq));
	if (ep->scq)
		HX_TRY(ibv_destroy_cq(ep->scq));
	if (ep->ch)
		HX_TRY(ibv_destroy_comp_channel(ep->ch));
	if (ep->pd)
		HX_TRY(ibv_dealloc_pd(ep->pd));
	if (ep->ctx)
		HX_TRY(ibv_close_device(ep->ctx));
#undef HX_TRY
	hx_free(ep->buf, ep->o.buf_len);
	memset(ep, 0, sizeof(*ep));
	return bad;
}

void hx_ep_close_counters(struct hx_ep *ep, const char *const *names,
			  unsigned long long *sums)
{
	char path[] = "/tmp/hx_stats.XXXXXX", line[256], got[64];
	int tmp = mkstemp(path), saved, bad;
	unsigned long long v;
	size_t i;
	FILE *f;

	if (tmp < 0)
		hx_die("mkstemp: %s", strerror(errno));
	for (i = 0; names[i]; i++)
		sums[i] = 0;
	fflush(stderr);
	saved = dup(2);
	dup2(tmp, 2);
	bad = hx_ep_close(ep);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fdopen(tmp, "r");
	if (!f)
		hx_die("fdopen: %s", strerror(errno));
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " %63s %llu", got, &v) == 2)
			for (i = 0; names[i]; i++)
				if (!strcmp(got, names[i]))
					sums[i] += v;
		fputs(line, stderr); /* the log keeps what was printed */
	}
	fclose(f);
	unlink(path);
	if (bad)
		hx_die("hx_ep_close: %d verbs failed", bad);
	for (i = 0; names[i]; i++)
		hx_log("%s %llu", names[i], sums[i]);
}

unsigned long long hx_ep_close_counter(struct hx_ep *ep, const char *name)
{
	const char *const names[] = { name, NULL };
	unsigned long long sum;

	hx_ep_close_counters(ep, names, &sum);
	return sum;
}

bool hx_fastpath_expected(void)
{
	const char *s = getenv("SOFTVERBS_FASTPATH");
	char c = '0';
	int f;

	if (s && !strcmp(s, "0"))
		return false;
	if (geteuid() == 0)
		return true;
	f = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY);
	if (f < 0)
		return true;
	if (read(f, &c, 1) != 1)
		c = '0';
	close(f);
	return c == '0';
}

bool hx_wait_stopped(pid_t pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 500; i++) {
		int f = open(path, O_RDONLY);
		ssize_t n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;

		if (f >= 0)
			close(f);
		if (n > 0) {
			buf[n] = 0;
			p = strrchr(buf, ')');
			if (p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't'))
				return true;
		}
		hx_msleep(2);
	}
	return false;
}

enum ibv_qp_state hx_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state) - 1;
	return a.qp_state;
}

enum ibv_qp_state hx_qp_state_wait(struct ibv_qp *qp, enum ibv_qp_state want,
				   int timeout_ms)
{
	uint64_t end = hx_now_ms() + timeout_ms;
	enum ibv_qp_state s;

	while ((s = hx_qp_state(qp)) != want && hx_now_ms() < end)
		hx_msleep(5);
	return s;
}

/* ---- posting and polling ------------------------------------------------- */

int hx_post_send(struct hx_ep *ep, enum ibv_wr_opcode op, unsigned flags,
		 uint64_t wr_id, void *laddr, uint32_t len, uint32_t lkey,
		 uint64_t raddr, uint32_t rkey, uint32_t imm_host)
{
	struct ibv_sge sge = { (uintptr_t)laddr, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.imm_data = htonl(imm_host);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(ep->qp, &wr, &bad);
}

int hx_post_atomic(struct hx_ep *ep, enum ibv_wr_opcode op, unsigned flags,
		   uint64_t wr_id, void *laddr, uint32_t lkey, uint64_t raddr,
		   uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)laddr, 8, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(ep->qp, &wr, &bad);
}

int hx_post_recv(struct hx_ep *ep, uint64_t wr_id, void *addr, uint32_t len,
		 uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(ep->qp, &wr, &bad);
}

int hx_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms)
{
	uint64_t end = hx_now_ms() + timeout_ms;
	int got = 0, spins = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0) {
			hx_log("ibv_poll_cq returned %d", r);
			return got;
		}
		got += r;
		if (got >= n)
			break;
		/* Busy-poll briefly (the fast path), then yield the CPU:
		 * two cores are shared by both processes and the engine. */
		if (r == 0 && ++spins > 1000) {
			if (hx_now_ms() >= end)
				break;
			usleep(200);
		}
	}
	return got;
}

int hx_wait_fd(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;

	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	return r > 0;
}

void hx_enter_netns(const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		hx_die("open %s: %s", path, strerror(errno));
	if (setns(fd, CLONE_NEWNET))
		hx_die("setns %s: %s", path, strerror(errno));
	close(fd);
}

/* ---- ordinary test users -------------------------------------------------- */

static void skip(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(NULL);
	exit(77);
}

static bool user_lookup(const char *name, struct hx_user *u)
{
	struct passwd *pw = getpwnam(name);

	if (!pw)
		return false;
	snprintf(u->name, sizeof(u->name), "%s", pw->pw_name);
	snprintf(u->home, sizeof(u->home), "%s", pw->pw_dir);
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	return true;
}

/* useradd as tests/users.sh runs it: tests run in parallel, and useradd
 * fails rather than waits while another holds /etc/passwd. */
static int user_add(const char *name)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execlp("flock", "flock", "/tmp/softverbs-useradd.lock", "sh",
		       "-c",
		       "id -u \"$1\" >/dev/null 2>&1 || "
		       "useradd -m -s /bin/sh \"$1\"",
		       "-", name, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static unsigned int overflow_uid(void)
{
	unsigned int id = 65534;
	FILE *f = fopen("/proc/sys/kernel/overflowuid", "r");

	if (f) {
		if (fscanf(f, "%u", &id) != 1)
			id = 65534;
		fclose(f);
	}
	return id;
}

struct hx_user hx_test_user(int n)
{
	char var[32], dflt[32];
	const char *name;
	struct hx_user u;
	int rc;

	snprintf(var, sizeof(var), "SV_TEST_USER%d", n);
	snprintf(dflt, sizeof(dflt), "svtest%d", n);
	name = getenv(var);
	if (!name || !name[0])
		name = dflt;
	if (strlen(name) >= sizeof(u.name))
		hx_die("%s: user name too long", var);
	memset(&u, 0, sizeof(u));
	if (!user_lookup(name, &u)) {
		if (geteuid() != 0)
			skip("no test user %s (made with useradd when run as root)",
			     name);
		rc = user_add(name);
		if (!user_lookup(name, &u))
			skip("could not make test user %s with useradd (flock/useradd status %d)",
			     name, rc);
	}
	if (u.uid == 0 || u.uid == overflow_uid())
		hx_die("test user %s has uid %u: it must be an ordinary account, neither root nor the overflow id (nobody)",
		       u.name, (unsigned int)u.uid);
	return u;
}

void hx_become(const struct hx_user *u)
{
	if (initgroups(u->name, u->gid) || setresgid(u->gid, u->gid, u->gid) ||
	    setresuid(u->uid, u->uid, u->uid))
		hx_die("becoming %s (uid %u gid %u): %s", u->name,
		       (unsigned int)u->uid, (unsigned int)u->gid,
		       strerror(errno));
	/* A process that changed its ids is not dumpable, and then even its
	 * own user's processes may not attach to it: one started as u is. */
	if (prctl(PR_SET_DUMPABLE, 1))
		hx_die("PR_SET_DUMPABLE: %s", strerror(errno));
	setenv("HOME", u->home, 1);
	setenv("USER", u->name, 1);
	setenv("LOGNAME", u->name, 1);
	unsetenv("XDG_RUNTIME_DIR");
}

static void put_file(const char *path, const char *text)
{
	int f = open(path, O_WRONLY | O_CLOEXEC);

	if (f < 0 || write(f, text, strlen(text)) != (ssize_t)strlen(text))
		hx_die("write %s: %s", path, strerror(errno));
	close(f);
}

void hx_enter_userns(bool map)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char m[64];

	if (unshare(CLONE_NEWUSER))
		hx_die("unshare(CLONE_NEWUSER): %s", strerror(errno));
	if (!map) {
		if (geteuid() != overflow_uid())
			hx_die("uid %u in a namespace that maps nothing",
			       (unsigned int)geteuid());
		return;
	}
	put_file("/proc/self/setgroups", "deny");
	snprintf(m, sizeof(m), "%u %u 1", (unsigned int)uid, (unsigned int)uid);
	put_file("/proc/self/uid_map", m);
	snprintf(m, sizeof(m), "%u %u 1", (unsigned int)gid, (unsigned int)gid);
	put_file("/proc/self/gid_map", m);
	if (geteuid() != uid)
		hx_die("uid %u, not %u, in a namespace that maps it",
		       (unsigned int)geteuid(), (unsigned int)uid);
}

/* ---- processes ------------------------------------------------------------ */

static void on_alarm(int sig)
{
	static const char msg[] = "harness: watchdog expired, case hung\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static void arm_watchdog(unsigned s)
{
	signal(SIGALRM, on_alarm);
	alarm(s ? s : 30);
}

pid_t hx_spawn(const char *r, void (*fn)(int fd), int (*done)(void),
	       unsigned timeout_s, int *fd)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		hx_die("socketpair: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		hx_die("fork: %s", strerror(errno));
	if (pid == 0) {
		close(sv[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		hx_role = r;
		arm_watchdog(timeout_s);
		fn(sv[1]);
		fflush(NULL);
		exit(done());
	}
	close(sv[1]);
	*fd = sv[0];
	return pid;
}

int hx_wait(pid_t pid, unsigned timeout_s)
{
	uint64_t end =
		hx_now_ms() + (uint64_t)(timeout_s ? timeout_s : 30) * 1000;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return 1;
		if (hx_now_ms() > end) {
			hx_log("child %d did not exit: killing it", (int)pid);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return 1;
		}
		hx_msleep(10);
	}
	if (WIFSIGNALED(st)) {
		hx_log("child %d killed by signal %d", (int)pid, WTERMSIG(st));
		return 1;
	}
	return WEXITSTATUS(st);
}

int hx_run_case(const struct hx_case *c, int (*done)(void))
{
	unsigned t = c->timeout_s ? c->timeout_s : 30;
	int fd, rc_a, rc_b;
	pid_t pid;

	hx_case_name = c->name;
	pid = hx_spawn("B", c->b, done, t, &fd);
	hx_role = "A";
	arm_watchdog(t + 5);
	c->a(fd);
	fflush(NULL);
	rc_a = done();
	rc_b = hx_wait(pid, t + 2);
	close(fd);
	alarm(0);
	if (rc_b)
		fprintf(stderr, "[B %s] exited with status %d\n", c->name,
			rc_b);
	return rc_a || rc_b;
}

int hx_main(int argc, char **argv, const struct hx_case *cases,
	    int (*done)(void))
{
	const struct hx_case *c;
	int failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--list")) {
		for (c = cases; c->name; c++)
			printf("%s\n", c->name);
		return 0;
	}
	if (argc > 1) {
		for (c = cases; c->name; c++)
			if (!strcmp(c->name, argv[1]))
				return hx_run_case(c, done);
		fprintf(stderr, "unknown case %s (try --list)\n", argv[1]);
		return 2;
	}
	/* Every case in its own process pair, so counters start at zero. */
	for (c = cases; c->name; c++) {
		pid_t pid;
		int st;

		fflush(NULL);
		pid = fork();
		if (pid == 0)
			exit(hx_run_case(c, done));
		waitpid(pid, &st, 0);
		st = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
		printf("%s %s\n", st ? "FAIL" : "ok  ", c->name);
		failed += st != 0;
	}
	printf("%d case(s) failed\n", failed);
	return failed ? 1 : 0;
}
