/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Progress without the target's help: one-sided WRITE, READ and atomics
 * complete while the target process does not call the library at all,
 * either blocked in sigsuspend() (pause) or spinning in its own code on a
 * byte of its buffer that the requester finally sets with an RDMA WRITE.
 */
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

#include "harness.h"

#define LEN (1u << 20)

static volatile sig_atomic_t woken;

static void on_usr1(int sig)
{
	(void)sig;
	woken = 1;
}

/* A's side of both cases: WRITE 1 MiB, READ 1 MiB, FETCH_ADD, all
 * completing while B is away. */
static void one_sided_ops(struct hx_ep *ep)
{
	uint64_t t0 = hx_now_ms();

	hx_fill(ep->buf, LEN, 11);
	HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 1,
				 ep->buf, LEN, ep->mr->lkey, ep->peer.addr,
				 ep->peer.rkey, 0),
		    0);
	HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 2,
				 ep->buf + LEN, LEN, ep->mr->lkey,
				 ep->peer.addr + LEN, ep->peer.rkey, 0),
		    0);
	HX_CHECK_RC(hx_post_atomic(ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   IBV_SEND_SIGNALED, 3, ep->buf + 2 * LEN,
				   ep->mr->lkey, ep->peer.addr + 2 * LEN,
				   ep->peer.rkey, 7, 0),
		    0);
	HX_EXPECT(ep->scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
	HX_EXPECT(ep->scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, LEN);
	HX_EXPECT(ep->scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8);
	HX_CHECK_PATTERN(ep->buf + LEN, LEN, 12);
	CHECK_EQ(*(uint64_t *)(ep->buf + 2 * LEN), 1000);
	hx_log("one-sided operations done in %llu ms while the target was away",
	       (unsigned long long)(hx_now_ms() - t0));
}

static void target_prepare(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	o.buf_len = 4 * LEN;
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
	hx_fill(ep->buf + LEN, LEN, 12);
	*(uint64_t *)(ep->buf + 2 * LEN) = 1000;
}

static void target_check(struct hx_ep *ep)
{
	HX_CHECK_PATTERN(ep->buf, LEN, 11);
	CHECK_EQ(*(uint64_t *)(ep->buf + 2 * LEN), 1007);
}

/* ---- target paused in sigsuspend() ---------------------------------------- */

static void paused_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	pid_t target;

	o.buf_len = 4 * LEN;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	target = (pid_t)hx_recv_u64(fd);
	hx_msleep(50); /* B is now suspended */
	one_sided_ops(&ep);
	kill(target, SIGUSR1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void paused_b(int fd)
{
	struct sigaction sa;
	sigset_t block, old;
	struct hx_ep ep;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	target_prepare(&ep, fd);
	hx_send_u64(fd, (uint64_t)getpid());
	/* No library call until A is done: the progress thread works. */
	while (!woken)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	target_check(&ep);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- target spinning in its own code ------------------------------------ */

/* The doorbell: one byte at 3 MiB, which A's RDMA WRITE (wr_id) sets in
 * B's buffer while B spins on it without calling the library. */
static void bell_ring(struct hx_ep *ep, uint64_t wr_id)
{
	ep->buf[3 * LEN] = 1;
	HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
				 wr_id, ep->buf + 3 * LEN, 1, ep->mr->lkey,
				 ep->peer.addr + 3 * LEN, ep->peer.rkey, 0),
		    0);
	HX_EXPECT(ep->scq, NULL, wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1);
}

/* B's side: spins (no library call: the progress thread must take the
 * WRITE) for up to 15 s. */
static void bell_wait(struct hx_ep *ep)
{
	volatile uint8_t *bell = ep->buf + 3 * LEN;
	uint64_t end = hx_now_ms() + 15000;

	while (!*bell && hx_now_ms() < end)
		;
	CHECK_EQ(*bell, 1);
}

static void spinning_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.buf_len = 4 * LEN;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	one_sided_ops(&ep);
	bell_ring(&ep, 4); /* tells B to look */
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void spinning_b(int fd)
{
	struct hx_ep ep;

	target_prepare(&ep, fd);
	hx_sync(fd);
	bell_wait(&ep);
	target_check(&ep);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- ib_write_lat's loop: poll, then spin on memory --------------------- */

/* Each side WRITEs one byte to the other's slot, polls its send CQ for the
 * completion (so the engine sees an application that polls), then spins
 * on its own slot for the peer's byte without calling the library: the
 * peer's WRITE must be received by the progress thread, woken by the
 * socket.  Over UDP it used to wait in a socket the thread did not watch
 * because the application had polled within 2 ms (about 1 ms per trip);
 * the counter thread_late_rx counts the datagrams a thread pass found
 * after a wait that timed out without the sockets (78-213 in 300 trips
 * before, 0 now; a few are allowed).  Over UDP the ACK of a WRITE waits
 * for the answer (engine.c, hold_acks), and the poll for it receives the
 * answer first: in odd trips each side lets 1 ms pass before it answers,
 * so its ACK leaves alone and the answer comes while the peer spins, for
 * its thread to take.  Nor may the
 * thread take these polls for a ping-pong they carry (engine.c
 * app_loops: a WRITE without immediate that comes without the ACK polled
 * for is what a spinning target waits for): thread_naps_loop stays near 0
 * (0-1: the fast trips between two paused ones may carry a nap; 7-75 in
 * 3 runs of 4 when app_loops ignores such WRITEs, whose naps end before
 * the paused answers come, so thread_late_rx cannot tell). */
#define TRIPS 300
#define SLOT 64

/* Polls without a pause, as ib_write_lat does (hx_poll naps after a
 * thousand empty polls, which the engine sees as an application that has
 * stopped polling). */
static void pingpong_write(struct hx_ep *ep, uint8_t v)
{
	uint64_t end = hx_now_ms() + 10000;
	struct ibv_wc wc;
	unsigned int n = 0;
	int r;

	ep->buf[0] = v;
	HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, v,
				 ep->buf, 1, ep->mr->lkey, ep->peer.addr + SLOT,
				 ep->peer.rkey, 0),
		    0);
	while (!(r = ibv_poll_cq(ep->scq, 1, &wc)))
		if (!(++n & 1023) && hx_now_ms() >= end)
			break;
	CHECK_EQ(r, 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
	CHECK_EQ(wc.wr_id, v);
}

static bool pingpong_wait(struct hx_ep *ep, uint8_t v)
{
	volatile uint8_t *slot = ep->buf + SLOT;
	uint64_t end = hx_now_ms() + 10000;

	while (*slot != v)
		if (hx_now_ms() >= end) {
			hx_log("no WRITE of %u within 10 s", v);
			return false;
		}
	return true;
}

/* TRIPS WRITEs each way, A first, each side spinning for the peer's
 * before it answers; pause: every other answer 1 ms late.  Then the
 * counters of names into c. */
static void pingpong_trips(int fd, bool first, bool pause,
			   const char *const *names, unsigned long long *c)
{
	struct hx_ep ep;
	int i;

	setenv("SOFTVERBS_STATS", "1", 1);
	target_prepare(&ep, fd);
	ep.buf[SLOT] = 0;
	hx_sync(fd);
	for (i = 1; i <= TRIPS; i++) {
		uint8_t v = (uint8_t)(i % 251 + 1);

		if (!first && !pingpong_wait(&ep, v))
			break;
		if (pause && i % 2)
			usleep(1000);
		pingpong_write(&ep, v);
		if (first && !pingpong_wait(&ep, v))
			break;
	}
	CHECK_EQ(i, TRIPS + 1);
	hx_sync(fd);
	hx_ep_close_counters(&ep, names, c);
}

static void write_pingpong(int fd, bool first)
{
	static const char *const names[] = { "thread_late_rx",
					     "thread_naps_loop", NULL };
	unsigned long long c[2], late;

	pingpong_trips(fd, first, true, names, c);
	late = c[0];
	hx_log("%d trips: thread_late_rx %llu, thread_naps_loop %llu", TRIPS,
	       late, c[1]);
	CHECK(c[1] <= TRIPS / 60);
	if (late > TRIPS / 20)
		fprintf(stderr,
			"[%s] WRITEs waited in an unwatched socket: thread_late_rx %llu in %d trips (at most %d)\n",
			hx_role, late, TRIPS, TRIPS / 20);
	CHECK(late <= TRIPS / 20);
}

static void write_pingpong_a(int fd)
{
	write_pingpong(fd, true);
}

static void write_pingpong_b(int fd)
{
	write_pingpong(fd, false);
}

/* ib_write_lat's loop itself, no pause: over UDP each side's ACK waits
 * for its answer (engine.c, hold_acks), so each side's poll for its
 * WRITE's completion receives the peer's answer with the ACK, and the
 * thread may leave the sockets to those polls (app_loops: the WRITE came
 * with the ACK polled for, recv.c); watching, it was woken for every
 * answer on the core its application spins on.  Over UDP some ACKs are
 * held (none were before: 0; 4-299 of 300 here, fewest when the host's
 * load makes the answers late).  A WRITE that comes alone while the
 * thread naps waits for the nap's end (thread_late_rx): a tenth of the
 * trips at most, where a nap taken for WRITEs that come alone would
 * leave nearly every one. */
static void held_pingpong(int fd, bool first)
{
	static const char *const names[] = { "ack_held", "thread_naps_loop",
					     "thread_late_rx", NULL };
	unsigned long long c[3];

	pingpong_trips(fd, first, false, names, c);
	hx_log("%d trips: ack_held %llu, thread_naps_loop %llu, thread_late_rx %llu",
	       TRIPS, c[0], c[1], c[2]);
	if (!hx_fastpath_expected())
		CHECK(c[0] > 0);
	CHECK(c[2] <= TRIPS / 10);
}

static void write_pingpong_held_a(int fd)
{
	held_pingpong(fd, true);
}

static void write_pingpong_held_b(int fd)
{
	held_pingpong(fd, false);
}

/*
 * atomic_stream: A sends back-to-back fetch-and-adds to a passive B (one
 * host: through the rings, served by B's thread).  B's thread keeps
 * looking for a moment after serving one (SV_SERVE_SPIN_NS), so A rarely
 * has to wake it: its doorbells to a sleeping B (shm_wakeups) stay
 * under one per atomic, where each used to need one.  Every result is
 * checked.  How many stay under depends on B's thread getting a core
 * during the spin.  The scheduler may put it on the core where A's
 * thread busy-polls (2 runs in 10 here, on the code of a week ago too,
 * all rounds then ringing every atomic), so A and B (with the threads
 * they start) are pinned to cores 0 and 1, as the benchmarks pin their
 * pairs.  On a host whose cores are both busy (a build beside the test) a
 * round can still need a doorbell for every atomic, so such a round is
 * tried again, up to STREAM_ROUNDS; the old code rings every one in every
 * round.  With one core the spin cannot help: nothing to assert.
 */
#define ATOMICS 1000
#define STREAM_ROUNDS 3

/* This thread, and the threads it starts after, on core `cpu`: false
 * when the host has no such core. */
static bool pin_to(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return false;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0;
}

static void atomic_stream_a(int fd)
{
	unsigned long long bells = ATOMICS;
	bool pinned = pin_to(0);
	int round;

	setenv("SOFTVERBS_STATS", "1", 1);
	for (round = 0; round < STREAM_ROUNDS && bells >= ATOMICS; round++) {
		struct hx_ep ep;
		struct hx_opts o = hx_opts_default();
		uint64_t *res;
		int i;

		hx_ep_open(&ep, &o, fd);
		hx_ep_connect(&ep);
		res = (uint64_t *)(void *)ep.buf;
		for (i = 0; i < ATOMICS; i++) {
			if (hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
					   IBV_SEND_SIGNALED, (uint64_t)i, res,
					   ep.mr->lkey, ep.peer.addr + 4096,
					   ep.peer.rkey, 1, 0) ||
			    !HX_EXPECT(ep.scq, NULL, (uint64_t)i,
				       IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8))
				break;
			if (*res != (uint64_t)i) {
				CHECK_EQ(*res, i);
				break;
			}
		}
		CHECK_EQ(i, ATOMICS);
		hx_sync(fd);
		bells = hx_ep_close_counter(&ep, "shm_wakeups");
		hx_log("round %d: %d atomics: shm_wakeups %llu", round + 1,
		       ATOMICS, bells);
		/* Another round (1) or done (0): B follows. */
		hx_send_u64(fd, round + 1 < STREAM_ROUNDS && bells >= ATOMICS);
	}
	/* Fewer than one a message: on a quiet host a handful, on a loaded
	 * one (the requester descheduled past the spin) more, but never
	 * every one, as before. */
	if (pinned)
		CHECK(bells < ATOMICS);
	else
		hx_log("one core (or no affinity): doorbells not checked");
}

static void atomic_stream_b(int fd)
{
	uint64_t again = 1;

	(void)pin_to(1);
	while (again) {
		struct hx_ep ep;
		struct hx_opts o = hx_opts_default();

		hx_ep_open(&ep, &o, fd);
		hx_ep_connect(&ep);
		hx_sync(fd); /* passive until A is done */
		CHECK_EQ(*(uint64_t *)(void *)(ep.buf + 4096), ATOMICS);
		CHECK_EQ(hx_ep_close(&ep), 0);
		again = hx_recv_u64(fd);
	}
}

/*
 * stream_then_spin: A streams SENDs to B, whose busy polls receive them;
 * then B stops calling the library and spins on a byte of its buffer that
 * A's RDMA WRITE sets.  Over UDP the stream lets B's thread nap without
 * the sockets (engine.c app_does_it, counter thread_naps): it must come
 * back for the WRITE all the same.  Every SEND's bytes are checked.
 */
#define STREAM_MSGS 3000
#define STREAM_MSG 4096
#define STREAM_RECVS 32 /* receives posted at a time (64-deep queue) */

/* Signaled every 16th and the last: a completion retires its WQE and
 * those before it; returns how many are retired. */
static int stream_reap(struct hx_ep *ep)
{
	struct ibv_wc wc;

	if (hx_poll(ep->scq, &wc, 1, 10000) != 1 ||
	    wc.status != IBV_WC_SUCCESS) {
		CHECK(!"a SEND of the stream did not complete");
		return -1;
	}
	return (int)wc.wr_id + 1;
}

static void stream_then_spin_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, done = 0;

	o.buf_len = 4 * LEN;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	for (i = 0; i < 8; i++)
		hx_fill(ep.buf + (size_t)i * STREAM_MSG, STREAM_MSG,
			(uint64_t)i + 100);
	hx_sync(fd); /* B's receives are posted */
	for (i = 0; i < STREAM_MSGS && done >= 0; i++) {
		while (done >= 0 && i - done >= 48)
			done = stream_reap(&ep);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND,
					 i % 16 == 15 || i == STREAM_MSGS - 1 ?
						 IBV_SEND_SIGNALED :
						 0,
					 (uint64_t)i,
					 ep.buf + (size_t)(i % 8) * STREAM_MSG,
					 STREAM_MSG, ep.mr->lkey, 0, 0, 0),
			    0);
	}
	while (done >= 0 && done < STREAM_MSGS)
		done = stream_reap(&ep);
	bell_ring(&ep, STREAM_MSGS);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void stream_then_spin_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	unsigned long long naps;
	uint64_t end;
	int got = 0, posted = 0;

	setenv("SOFTVERBS_STATS", "1", 1);
	o.buf_len = 4 * LEN;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	for (; posted < STREAM_RECVS; posted++)
		HX_CHECK_RC(hx_post_recv(&ep, (uint64_t)posted,
					 ep.buf + (size_t)posted * STREAM_MSG,
					 STREAM_MSG, ep.mr->lkey),
			    0);
	hx_sync(fd);
	/* Busy polls, as ib_send_bw's server: they receive the stream. */
	end = hx_now_ms() + 30000;
	while (got < STREAM_MSGS && hx_now_ms() < end) {
		struct ibv_wc wc;
		uint8_t *slot;

		if (ibv_poll_cq(ep.rcq, 1, &wc) != 1)
			continue;
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.byte_len, STREAM_MSG);
		slot = ep.buf + (size_t)wc.wr_id * STREAM_MSG;
		if (hx_verify(slot, STREAM_MSG, (uint64_t)(got % 8) + 100) >=
		    0) {
			CHECK(!"SEND payload differs");
			break;
		}
		got++;
		if (posted < STREAM_MSGS) {
			HX_CHECK_RC(hx_post_recv(&ep, wc.wr_id, slot,
						 STREAM_MSG, ep.mr->lkey),
				    0);
			posted++;
		}
	}
	CHECK_EQ(got, STREAM_MSGS);
	bell_wait(&ep);
	hx_sync(fd);
	naps = hx_ep_close_counter(&ep, "thread_naps");
	hx_log("%d SENDs of %d bytes received by polls: thread_naps %llu",
	       STREAM_MSGS, STREAM_MSG, naps);
	/* Over UDP the stream must have let the thread nap (else this
	 * tests nothing new); the rings bring no datagrams. */
	if (!hx_fastpath_expected())
		CHECK(naps > 0);
}

/*
 * send_pingpong_then_spin: A and B exchange SENDs as ib_send_lat does
 * (every send signaled and its completion polled on a CQ of its own, each
 * receive answered at once), then B stops calling the library and spins
 * on a byte of its buffer that A's RDMA WRITE sets.  Over UDP the ping-pong, which B's
 * polls carry, lets B's thread nap without the sockets (engine.c
 * app_loops, counter thread_naps_loop), and begin naps again without a
 * look of its own when it wakes inside one of B's polls (counter
 * thread_renaps); it must come back for the WRITE all the same.  Every
 * message's bytes are checked.
 */
#define PP_TRIPS 4000
#define PP_MSG 8

static bool pp_send(struct hx_ep *ep, uint64_t i)
{
	uint8_t *msg = ep->buf + 2 * LEN;

	hx_fill(msg, PP_MSG, i);
	if (hx_post_send(ep, IBV_WR_SEND, IBV_SEND_SIGNALED, i, msg, PP_MSG,
			 ep->mr->lkey, 0, 0, 0))
		return false;
	return HX_EXPECT(ep->scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
}

static bool pp_recv(struct hx_ep *ep, uint64_t i)
{
	uint8_t *slot = ep->buf + LEN + (i % 2) * 64;

	/* The next receive is posted before this one is awaited. */
	if (hx_post_recv(ep, i + 1, ep->buf + LEN + ((i + 1) % 2) * 64, PP_MSG,
			 ep->mr->lkey))
		return false;
	if (!HX_EXPECT(ep->rcq, NULL, i, IBV_WC_SUCCESS, IBV_WC_RECV, PP_MSG))
		return false;
	if (hx_verify(slot, PP_MSG, i) >= 0) {
		CHECK(!"SEND payload differs");
		return false;
	}
	return true;
}

static void send_pingpong(struct hx_ep *ep, int fd, bool first)
{
	uint64_t i;

	HX_CHECK_RC(hx_post_recv(ep, 0, ep->buf + LEN, PP_MSG, ep->mr->lkey),
		    0);
	hx_sync(fd);
	for (i = 0; i < PP_TRIPS; i++)
		if ((first && !pp_send(ep, i)) || !pp_recv(ep, i) ||
		    (!first && !pp_send(ep, i)))
			break;
	CHECK_EQ(i, PP_TRIPS);
}

static void send_pingpong_then_spin_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	o.buf_len = 4 * LEN;
	o.recv_cqe = o.send_cqe; /* two CQs, as perftest's */
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	send_pingpong(&ep, fd, true);
	hx_sync(fd); /* B is spinning now */
	bell_ring(&ep, PP_TRIPS);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void send_pingpong_then_spin_b(int fd)
{
	static const char *const names[] = { "thread_naps_loop",
					     "thread_renaps", NULL };
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	unsigned long long c[2];

	setenv("SOFTVERBS_STATS", "1", 1);
	o.buf_len = 4 * LEN;
	o.recv_cqe = o.send_cqe;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	send_pingpong(&ep, fd, false);
	hx_sync(fd);
	bell_wait(&ep);
	hx_sync(fd);
	hx_ep_close_counters(&ep, names, c);
	hx_log("%d SEND round trips carried by polls: thread_naps_loop %llu, thread_renaps %llu",
	       PP_TRIPS, c[0], c[1]);
	/* Over UDP the ping-pong must have let the thread nap, and nap
	 * again beside a poll (else this tests nothing new); the rings
	 * bring no datagrams. */
	if (!hx_fastpath_expected()) {
		CHECK(c[0] > 0);
		CHECK(c[1] > 0);
	}
}

static const struct hx_case cases[] = { HX_CASE(paused, 20),
					HX_CASE(spinning, 25),
					HX_CASE(write_pingpong, 60),
					HX_CASE(write_pingpong_held, 60),
					HX_CASE(atomic_stream, 60),
					HX_CASE(stream_then_spin, 60),
					HX_CASE(send_pingpong_then_spin, 60),
					{ 0 } };

HX_MAIN(cases)
