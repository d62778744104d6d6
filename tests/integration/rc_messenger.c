/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A storage messenger's traffic (issue #35): each side has NQP RC QPs
 * whose receives all come from one shared receive queue, one completion
 * channel behind its send CQ and its receive CQ, and one thread that
 * polls both CQs while there is work, keeps polling for POLL_MS after the
 * last completion, then arms both CQs, polls once more and sleeps on the
 * channel.  Both sides stream SENDs of 64 KiB to 4 MiB (with immediate
 * data naming the QP and the message) to each other at once, at most
 * WINDOW outstanding per QP.  Checked: every message arrives once, in
 * order per QP, whole, every byte; every SEND completes successfully.
 * Each side logs the longest a SEND took from its post to its completion
 * (with 16 SENDs of up to 4 MiB in flight each way, mostly its turn on
 * the link) and the number of sleeps; a wait of STALL_MS fails the case
 * (a stall: a peer's packets left in a ring or a socket for a thread
 * that does not come, as the issue saw for seconds).  On this 2-core
 * machine the longest SEND took 0.1-0.8 s, before and after the fixes
 * of issue #35: this shape did not reproduce the stalls.
 *   stream     as above
 *   moderated  the receive CQ moderated (ibv_modify_cq: 4 completions or
 *              200 us), so the events come later and fewer
 *   tcp        the same messages over NQP TCP connections on loopback,
 *              the same loop (poll the sockets while there is work and
 *              POLL_MS after, then sleep in poll), the same fill and
 *              check of every byte, its buffers faulted in before the
 *              clock starts as registration faults the verbs cases' in:
 *              the kernel's figure for the same work, which
 *              bench/events.py sets beside the others
 * Each side logs the bytes it sent and received and the time from the
 * connection to the last message, as MiB/s each way.
 *   handoff    the moment the loop above lies down: in odd rounds B
 *              busy-polls its empty receive CQ for BUSY_MS, arms it,
 *              polls once more and sleeps on its channel, and only then
 *              does A send a 1 MiB SEND; in even rounds B has not polled
 *              for IDLE_MS when it arms and sleeps (the same transfer,
 *              no busy poll before it).  The median time from B's sleep
 *              to its event may exceed the idle rounds' by HANDOFF_US at
 *              most.  Unless the arm ends the busy-poll hold (engine.c
 *              sv_engine_armed), B's progress thread leaves the work to
 *              the polls for 2 ms after the last one and looks again
 *              only then, and a large SEND (whose copy the receiver
 *              makes) waits 2-4 ms for nobody each time the loop lies
 *              down
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define NQP 8
#define SRQ_DEPTH 16
#define WINDOW 2
#define PER_QP 12
#define MAX_MSG (4u << 20)
#define POLL_MS 1
#define STALL_MS 5000

struct side {
	struct hx_ep ep;
	struct ibv_srq *srq;
	struct ibv_qp *q[NQP];
	uint8_t *rbuf, *sbuf; /* SRQ_DEPTH and NQP * WINDOW slots of MAX_MSG */
	int posted[NQP], done[NQP], recvd[NQP];
	uint64_t post_ms[NQP][WINDOW];
	uint64_t max_ms;
	unsigned long sleeps;
	bool failed;
};

/* Message k of a QP: its size cycles through 64 KiB .. 4 MiB. */
static uint32_t msg_len(int k)
{
	static const uint32_t sz[] = { 64u << 10, 4u << 20,   256u << 10,
				       1u << 20,  128u << 10, 2u << 20,
				       512u << 10 };

	return sz[k % (int)(sizeof(sz) / sizeof(sz[0]))];
}

/* The bytes of message k of QP i from side `from` ('A' or 'B'). */
static uint64_t msg_seed(char from, int i, int k)
{
	return ((uint64_t)from << 32) | ((uint64_t)i << 16) | (uint64_t)k;
}

static void post_recv(struct side *s, uint64_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(s->rbuf + slot * MAX_MSG),
		.length = MAX_MSG,
		.lkey = s->ep.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot,
				  .sg_list = &sge,
				  .num_sge = 1 },
			   *bad;

	if (ibv_post_srq_recv(s->srq, &wr, &bad))
		hx_die("ibv_post_srq_recv: %s", strerror(errno));
}

static void open_side(struct side *s, int fd, bool moderated)
{
	struct hx_opts o = hx_opts_default();
	int i;

	memset(s, 0, sizeof(*s));
	o.channel = true;
	o.send_cqe = NQP * WINDOW + 1;
	o.recv_cqe = SRQ_DEPTH + 1;
	o.buf_len = (size_t)(SRQ_DEPTH + NQP * WINDOW) * MAX_MSG;
	hx_ep_open(&s->ep, &o, fd);
	s->rbuf = s->ep.buf;
	s->sbuf = s->ep.buf + (size_t)SRQ_DEPTH * MAX_MSG;
	{
		struct ibv_srq_init_attr sa = {
			.attr = { .max_wr = SRQ_DEPTH, .max_sge = 1 },
		};

		s->srq = ibv_create_srq(s->ep.pd, &sa);
		if (!s->srq)
			hx_die("ibv_create_srq: %s", strerror(errno));
	}
	for (i = 0; i < SRQ_DEPTH; i++)
		post_recv(s, (uint64_t)i);
	for (i = 0; i < NQP; i++)
		s->q[i] = hx_ep_srq_qp(&s->ep, s->srq, WINDOW);
	if (moderated) {
		struct ibv_modify_cq_attr ma = {
			.attr_mask = IBV_CQ_ATTR_MODERATE,
			.moderate = { .cq_count = 4, .cq_period = 200 },
		};

		HX_CHECK_RC(ibv_modify_cq(s->ep.rcq, &ma), 0);
	}
	/* The endpoint's own QP is only the vehicle of the exchange. */
	hx_ep_connect(&s->ep);
	hx_ep_connect_more(&s->ep, s->q, NQP);
}

/* Post what the windows allow. */
static void post_sends(struct side *s)
{
	for (int i = 0; i < NQP; i++) {
		while (s->posted[i] < PER_QP &&
		       s->posted[i] - s->done[i] < WINDOW) {
			int k = s->posted[i], w = k % WINDOW;
			uint8_t *src =
				s->sbuf + (size_t)(i * WINDOW + w) * MAX_MSG;
			struct ibv_sge sge = { .addr = (uintptr_t)src,
					       .length = msg_len(k),
					       .lkey = s->ep.mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = (uint64_t)i << 32 | (uint64_t)k,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = IBV_WR_SEND_WITH_IMM,
				.send_flags = IBV_SEND_SIGNALED,
				.imm_data = htonl((uint32_t)(i << 16 | k)),
			},
					   *bad;

			hx_fill(src, msg_len(k), msg_seed(*hx_role, i, k));
			s->post_ms[i][w] = hx_now_ms();
			if (ibv_post_send(s->q[i], &wr, &bad))
				hx_die("post_send QP %d message %d: %s", i, k,
				       strerror(errno));
			s->posted[i]++;
		}
	}
}

static void on_send(struct side *s, const struct ibv_wc *wc)
{
	int i = (int)(wc->wr_id >> 32), k = (int)(uint32_t)wc->wr_id;
	uint64_t took;

	if (wc->status != IBV_WC_SUCCESS || i >= NQP || k != s->done[i]) {
		hx_log("send QP %d message %d: %s (expected message %d)", i, k,
		       ibv_wc_status_str(wc->status),
		       i < NQP ? s->done[i] : -1);
		s->failed = true;
		return;
	}
	took = hx_now_ms() - s->post_ms[i][k % WINDOW];
	if (took > s->max_ms)
		s->max_ms = took;
	s->done[i]++;
}

static void on_recv(struct side *s, const struct ibv_wc *wc)
{
	char peer = *hx_role == 'A' ? 'B' : 'A';
	uint32_t imm = ntohl(wc->imm_data);
	int i = (int)(imm >> 16), k = (int)(imm & 0xffff);

	if (wc->status != IBV_WC_SUCCESS || !(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    wc->wr_id >= SRQ_DEPTH || i >= NQP || k != s->recvd[i] ||
	    wc->qp_num != s->q[i]->qp_num || wc->byte_len != msg_len(k) ||
	    hx_verify(s->rbuf + wc->wr_id * MAX_MSG, wc->byte_len,
		      msg_seed(peer, i, k)) != -1) {
		hx_log("receive %s, imm QP %d message %d (%u bytes, on QP 0x%x): not the message expected (%d)",
		       ibv_wc_status_str(wc->status), i, k, wc->byte_len,
		       wc->qp_num, i < NQP ? s->recvd[i] : -1);
		s->failed = true;
		return;
	}
	s->recvd[i]++;
	post_recv(s, wc->wr_id);
}

/* Take every completion there is; how many. */
static int drain(struct side *s)
{
	struct ibv_wc wc[16];
	int n, got = 0;

	while ((n = ibv_poll_cq(s->ep.scq, 16, wc)) > 0) {
		for (int j = 0; j < n; j++)
			on_send(s, &wc[j]);
		got += n;
	}
	while ((n = ibv_poll_cq(s->ep.rcq, 16, wc)) > 0) {
		for (int j = 0; j < n; j++)
			on_recv(s, &wc[j]);
		got += n;
	}
	return got;
}

static bool all_done(const struct side *s)
{
	for (int i = 0; i < NQP; i++)
		if (s->done[i] < PER_QP || s->recvd[i] < PER_QP)
			return false;
	return true;
}

/* The bytes one side moves each way, and its rate over ms. */
static uint64_t each_way(void)
{
	uint64_t b = 0;

	for (int k = 0; k < PER_QP; k++)
		b += msg_len(k);
	return b * NQP;
}

static void log_rate(uint64_t ms)
{
	hx_log("moved %llu MiB each way in %llu ms: %.0f MiB/s each way",
	       (unsigned long long)(each_way() >> 20), (unsigned long long)ms,
	       ms ? (double)each_way() / (1 << 20) * 1000.0 / (double)ms : 0.0);
}

static void run(int fd, bool moderated)
{
	static struct side s;
	uint64_t last, start;

	open_side(&s, fd, moderated);
	start = last = hx_now_ms();
	while (!s.failed && !all_done(&s)) {
		struct ibv_cq *cq;
		void *ctx;

		post_sends(&s);
		if (drain(&s)) {
			last = hx_now_ms();
			continue;
		}
		if (hx_now_ms() - last < POLL_MS)
			continue;
		/* Asleep until the channel says a CQ has something. */
		HX_CHECK_RC(ibv_req_notify_cq(s.ep.scq, 0), 0);
		HX_CHECK_RC(ibv_req_notify_cq(s.ep.rcq, 0), 0);
		if (drain(&s)) {
			last = hx_now_ms();
			continue;
		}
		s.sleeps++;
		if (!hx_wait_fd(s.ep.ch->fd, STALL_MS)) {
			hx_log("no completion event for %d ms (sent %d, received %d on QP 0)",
			       STALL_MS, s.done[0], s.recvd[0]);
			s.failed = true;
			break;
		}
		HX_CHECK_RC(ibv_get_cq_event(s.ep.ch, &cq, &ctx), 0);
		ibv_ack_cq_events(cq, 1);
		last = hx_now_ms();
	}
	hx_log("%s: longest SEND %llu ms, %lu sleeps",
	       s.failed ? "failed" : "all messages whole",
	       (unsigned long long)s.max_ms, s.sleeps);
	if (!s.failed)
		log_rate(hx_now_ms() - start);
	CHECK(!s.failed);
	CHECK(all_done(&s));
	CHECK(s.max_ms < STALL_MS);
	hx_sync(fd);
	/* Both ways done: one event may still wait unread (an armed CQ that
	 * took the last completions); the channel goes with the CQs. */
	for (int i = 0; i < NQP; i++)
		CHECK_EQ(ibv_destroy_qp(s.q[i]), 0);
	CHECK_EQ(ibv_destroy_srq(s.srq), 0);
	CHECK_EQ(hx_ep_close(&s.ep), 0);
}

static void stream_a(int fd)
{
	run(fd, false);
}

static void stream_b(int fd)
{
	run(fd, false);
}

static void moderated_a(int fd)
{
	run(fd, true);
}

static void moderated_b(int fd)
{
	run(fd, true);
}

/* ---- the same over TCP --------------------------------------------------- */

/* A message on a connection: its length and its number, then its bytes. */
struct tcp_hdr {
	uint32_t len, k;
};

struct tcp_conn {
	int fd;
	int sent, recvd; /* messages done each way */
	size_t out, in; /* bytes of the current message each way */
	struct tcp_hdr oh, ih;
	uint8_t *sbuf, *rbuf;
};

/* Move what the socket takes or gives without blocking; false on a
 * failure (logged). */
static bool tcp_step(struct tcp_conn *c, int i, bool *moved)
{
	char peer = *hx_role == 'A' ? 'B' : 'A';
	ssize_t n;

	while (c->sent < PER_QP) {
		size_t hl = sizeof(c->oh), tot;

		if (!c->out) {
			c->oh.len = msg_len(c->sent);
			c->oh.k = (uint32_t)c->sent;
			hx_fill(c->sbuf, c->oh.len,
				msg_seed(*hx_role, i, c->sent));
		}
		tot = hl + c->oh.len;
		if (c->out < hl)
			n = send(c->fd, (uint8_t *)&c->oh + c->out, hl - c->out,
				 MSG_NOSIGNAL | MSG_MORE);
		else
			n = send(c->fd, c->sbuf + (c->out - hl), tot - c->out,
				 MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			hx_log("send on connection %d: %s", i, strerror(errno));
			return false;
		}
		*moved = true;
		c->out += (size_t)n;
		if (c->out == tot) {
			c->out = 0;
			c->sent++;
		}
	}
	while (c->recvd < PER_QP) {
		size_t hl = sizeof(c->ih);

		if (c->in < hl)
			n = recv(c->fd, (uint8_t *)&c->ih + c->in, hl - c->in,
				 0);
		else
			n = recv(c->fd, c->rbuf + (c->in - hl),
				 hl + c->ih.len - c->in, 0);
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			hx_log("receive on connection %d: %s", i,
			       n ? strerror(errno) : "closed");
			return false;
		}
		*moved = true;
		c->in += (size_t)n;
		if (c->in == hl && (c->ih.len != msg_len(c->recvd) ||
				    c->ih.k != (uint32_t)c->recvd)) {
			hx_log("connection %d: message %u of %u bytes, expected %d",
			       i, c->ih.k, c->ih.len, c->recvd);
			return false;
		}
		if (c->in > hl && c->in == hl + c->ih.len) {
			if (hx_verify(c->rbuf, c->ih.len,
				      msg_seed(peer, i, c->recvd)) != -1) {
				hx_log("connection %d message %d: not the bytes sent",
				       i, c->recvd);
				return false;
			}
			c->in = 0;
			c->recvd++;
		}
	}
	return true;
}

static int tcp_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		hx_die("socket: %s", strerror(errno));
	return fd;
}

static void run_tcp(int fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	static struct tcp_conn c[NQP];
	struct pollfd p[NQP];
	uint64_t start, last;
	unsigned long sleeps = 0;
	bool ok = true;
	int i, one = 1;

	if (*hx_role == 'A') {
		int l = tcp_socket();

		if (bind(l, (struct sockaddr *)&a, sizeof(a)) ||
		    listen(l, NQP) ||
		    getsockname(l, (struct sockaddr *)&a, &al))
			hx_die("listen: %s", strerror(errno));
		hx_send(fd, &a.sin_port, sizeof(a.sin_port));
		for (i = 0; i < NQP; i++)
			if ((c[i].fd = accept(l, NULL, NULL)) < 0)
				hx_die("accept: %s", strerror(errno));
		close(l);
	} else {
		hx_recv(fd, &a.sin_port, sizeof(a.sin_port));
		for (i = 0; i < NQP; i++) {
			c[i].fd = tcp_socket();
			if (connect(c[i].fd, (struct sockaddr *)&a, sizeof(a)))
				hx_die("connect: %s", strerror(errno));
		}
	}
	for (i = 0; i < NQP; i++) {
		c[i].sbuf = hx_alloc(MAX_MSG);
		c[i].rbuf = hx_alloc(MAX_MSG);
		/* Present before the clock starts, as the verbs cases'
		 * buffers are once registered (ibv_reg_mr faults them in,
		 * as the kernel's pinning does): both time the messages,
		 * not the first touch of fresh memory. */
		memset(c[i].sbuf, 0, MAX_MSG);
		memset(c[i].rbuf, 0, MAX_MSG);
		setsockopt(c[i].fd, IPPROTO_TCP, TCP_NODELAY, &one,
			   sizeof(one));
		fcntl(c[i].fd, F_SETFL, O_NONBLOCK);
	}
	hx_sync(fd);
	start = last = hx_now_ms();
	for (;;) {
		bool moved = false, done = true;

		for (i = 0; i < NQP && ok; i++) {
			ok = tcp_step(&c[i], i, &moved);
			done = done && c[i].sent == PER_QP &&
			       c[i].recvd == PER_QP;
		}
		if (!ok || done)
			break;
		if (moved) {
			last = hx_now_ms();
			continue;
		}
		if (hx_now_ms() - last < POLL_MS)
			continue;
		for (i = 0; i < NQP; i++) {
			p[i].fd = c[i].fd;
			p[i].events =
				(short)((c[i].recvd < PER_QP ? POLLIN : 0) |
					(c[i].sent < PER_QP ? POLLOUT : 0));
		}
		sleeps++;
		if (poll(p, NQP, STALL_MS) <= 0) {
			hx_log("nothing to move for %d ms", STALL_MS);
			ok = false;
			break;
		}
		last = hx_now_ms();
	}
	hx_log("%s: %lu sleeps", ok ? "all messages whole" : "failed", sleeps);
	CHECK(ok);
	if (ok)
		log_rate(hx_now_ms() - start);
	hx_sync(fd);
	for (i = 0; i < NQP; i++) {
		close(c[i].fd);
		hx_free(c[i].sbuf, MAX_MSG);
		hx_free(c[i].rbuf, MAX_MSG);
	}
}

static void tcp_a(int fd)
{
	run_tcp(fd);
}

static void tcp_b(int fd)
{
	run_tcp(fd);
}

/* ---- handing over to the progress thread ------------------------------ */

#define HANDOFF_ROUNDS 30 /* half of them idle before the sleep */
#define HANDOFF_LEN (1u << 20)
#define BUSY_MS 3
#define IDLE_MS 4 /* past the busy-poll hold */
#define HANDOFF_US 1000

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void handoff_open(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	o.channel = true;
	o.buf_len = HANDOFF_LEN;
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

/* A: each round, when B says it sleeps, one 1 MiB SEND. */
static void handoff_a(int fd)
{
	struct hx_ep ep;
	struct ibv_wc wc;

	handoff_open(&ep, fd);
	for (int r = 0; r < HANDOFF_ROUNDS; r++) {
		hx_fill(ep.buf, HANDOFF_LEN, msg_seed('A', 0, r));
		(void)hx_recv_u64(fd); /* B is asleep on its channel */
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED,
					 (uint64_t)r, ep.buf, HANDOFF_LEN,
					 ep.mr->lkey, 0, 0, 0),
			    0);
		CHECK_EQ(hx_poll(ep.scq, &wc, 1, STALL_MS), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		hx_sync(fd);
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* B: busy-poll (odd rounds) or idle (even rounds), arm, poll once more,
 * sleep; how long until the event. */
static void handoff_b(int fd)
{
	uint64_t took[2][HANDOFF_ROUNDS / 2], med[2];
	struct hx_ep ep;
	struct ibv_wc wc;

	handoff_open(&ep, fd);
	for (int r = 0; r < HANDOFF_ROUNDS; r++) {
		struct ibv_cq *cq;
		uint64_t end, t0;
		void *ctx;

		HX_CHECK_RC(hx_post_recv(&ep, (uint64_t)r, ep.buf, HANDOFF_LEN,
					 ep.mr->lkey),
			    0);
		if (r % 2) {
			/* A busy poller, as the messenger's loop is between
			 * two sleeps. */
			end = hx_now_ms() + BUSY_MS;
			while (hx_now_ms() < end)
				if (ibv_poll_cq(ep.rcq, 1, &wc))
					hx_die("round %d: a completion before the SEND",
					       r);
		} else {
			hx_msleep(IDLE_MS);
		}
		HX_CHECK_RC(ibv_req_notify_cq(ep.rcq, 0), 0);
		CHECK_EQ(ibv_poll_cq(ep.rcq, 1, &wc), 0);
		t0 = now_us();
		hx_send_u64(fd, (uint64_t)r);
		if (!hx_wait_fd(ep.ch->fd, STALL_MS))
			hx_die("round %d: no completion event for %d ms", r,
			       STALL_MS);
		took[r % 2][r / 2] = now_us() - t0;
		HX_CHECK_RC(ibv_get_cq_event(ep.ch, &cq, &ctx), 0);
		CHECK(cq == ep.rcq);
		ibv_ack_cq_events(cq, 1);
		CHECK_EQ(hx_poll(ep.rcq, &wc, 1, STALL_MS), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.byte_len, HANDOFF_LEN);
		CHECK_EQ(hx_verify(ep.buf, HANDOFF_LEN, msg_seed('A', 0, r)),
			 -1);
		hx_sync(fd);
	}
	for (int i = 0; i < 2; i++) {
		qsort(took[i], HANDOFF_ROUNDS / 2, sizeof(took[i][0]), cmp_u64);
		med[i] = took[i][HANDOFF_ROUNDS / 4];
		hx_log("from sleep to the 1 MiB SEND's event %s: median %llu us, longest %llu us",
		       i ? "after a busy poll" : "after a pause",
		       (unsigned long long)med[i],
		       (unsigned long long)took[i][HANDOFF_ROUNDS / 2 - 1]);
	}
	CHECK(med[1] < med[0] + HANDOFF_US);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(stream, 120),
	HX_CASE(moderated, 120),
	HX_CASE(tcp, 120),
	HX_CASE(handoff, 60),
	{ 0 },
};

HX_MAIN(cases)
