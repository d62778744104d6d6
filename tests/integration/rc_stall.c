/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RC patterns of UCX's rendezvous that stalled on the shm link (issue
 * #15 item 3): unsignaled SENDs, then a signaled RDMA READ on the same QP,
 * the peer idle (it polls nothing while the READ runs).
 *   unsig_read        2 unsignaled 4 KiB SENDs (packets), then a 64 KiB
 *                     READ, 100 rounds
 *   unsig_small_read  the same with 64-byte SENDs (message channels)
 * Every READ's bytes and every SEND's bytes are checked.  The one-copy
 * READ (docs/fastpath.md) waits for every earlier WQE to be acknowledged;
 * on shm the last packet of an unsignaled message asks for no ACK
 * (docs/engine.md, "The shm link", ACKs), so without more the READ waits
 * for the probe timer, which resends that packet to get its ACK: one
 * probe_retransmit (SOFTVERBS_STATS) per round, and a stall of at least
 * 500 us each time.  Nothing is lost on that link, so a READ must not
 * depend on a retransmission: on shm the requester's probe_retransmit is
 * 0 (a probe there resends nothing while the peer has not taken its
 * ring, comp.c).  Over UDP (SOFTVERBS_FASTPATH=0) every message asks for
 * its ACK, but the probe cannot tell a late ACK from a lost packet: it
 * resends whenever the peer's progress thread answers later than the
 * probe's floor (1 ms, 2 ms while a READ is awaited), which a loaded
 * host's scheduler decides, round by round, so their number has no
 * bound of its own below ROUNDS.  A READ that depends on the probe waits
 * for it in every round (the rounds are all alike): ROUNDS probes or
 * more.  So over UDP fewer than half the rounds may probe: the
 * dependence fails that every time, and a peer merely late would have to
 * be late in half the rounds.
 */
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "harness.h"

#define ROUNDS 100
#define NSEND 2
#define READ_LEN 65536u
#define RECV_OFF (128u * 1024) /* B: the receive slots */

struct stall_params {
	uint32_t send_len;
};

/* Close everything with SOFTVERBS_STATS=1 (set before the device was
 * opened): the sum of the engine's retransmission counters. */
static unsigned long long close_resends(struct hx_ep *ep)
{
	static const char *const names[] = { "probe_retransmit",
					     "fast_retransmit", NULL };
	unsigned long long v[2];

	hx_ep_close_counters(ep, names, v);
	return v[0] + v[1];
}

/* On shm nothing is lost: no probe, no duplicate ACK, no resend, however
 * late the peer's ACKs come (a loaded host). */
static bool on_shm(void)
{
	const char *f = getenv("SOFTVERBS_FASTPATH");

	return !f || strcmp(f, "0");
}

static void open_ep(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	o.max_send_wr = 64;
	o.max_recv_wr = NSEND * ROUNDS;
	o.send_cqe = 256;
	o.recv_cqe = 512;
	setenv("SOFTVERBS_STATS", "1", 1);
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

static void stall_a(int fd, uint32_t send_len)
{
	struct hx_ep ep;
	unsigned long long probes;
	uint64_t slow = 0, t0, worst = 0;
	int r, k;

	open_ep(&ep, fd);
	hx_sync(fd); /* B's receives are posted, its READ source filled */
	for (r = 0; r < ROUNDS; r++) {
		uint8_t *dst = ep.buf + 64 * 1024;

		for (k = 0; k < NSEND; k++) {
			uint8_t *src = ep.buf + k * 8192;

			hx_fill(src, send_len, 1000 + r * NSEND + k);
			HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, 0, 1, src,
						 send_len, ep.mr->lkey, 0, 0,
						 0),
				    0);
		}
		memset(dst, 0, READ_LEN);
		t0 = hx_now_ms();
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ,
					 IBV_SEND_SIGNALED, 100 + r, dst,
					 READ_LEN, ep.mr->lkey, ep.peer.addr,
					 ep.peer.rkey, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 100 + r, IBV_WC_SUCCESS,
			  IBV_WC_RDMA_READ, READ_LEN);
		t0 = hx_now_ms() - t0;
		if (t0 > worst)
			worst = t0;
		if (t0 >= 20)
			slow++;
		HX_CHECK_PATTERN(dst, READ_LEN, 7);
	}
	hx_sync(fd); /* B checks the SENDs */
	hx_sync(fd);
	probes = close_resends(&ep);
	hx_log("%d rounds of %d unsignaled %u-byte SENDs + a signaled READ: probe_retransmit+fast_retransmit %llu, slowest READ %llu ms, %llu of 20 ms or more",
	       ROUNDS, NSEND, send_len, probes, (unsigned long long)worst,
	       (unsigned long long)slow);
	if (on_shm() ? probes > 0 : probes >= ROUNDS / 2)
		fprintf(stderr,
			"[A] the READs waited for the probe timer: %llu probe_retransmit in %d rounds (%s)\n",
			probes, ROUNDS,
			on_shm() ? "none on shm" : "under half over UDP");
	if (on_shm())
		CHECK_EQ(probes, 0);
	else
		CHECK(probes < ROUNDS / 2);
}

static void stall_b(int fd, uint32_t send_len)
{
	unsigned long long dups;
	struct hx_ep ep;
	int i;

	open_ep(&ep, fd);
	hx_fill(ep.buf, READ_LEN, 7);
	for (i = 0; i < NSEND * ROUNDS; i++)
		REQUIRE(hx_post_recv(&ep, i, ep.buf + RECV_OFF + i * 4096, 4096,
				     ep.mr->lkey) == 0);
	hx_sync(fd);
	hx_sync(fd); /* idle until A is done */
	for (i = 0; i < NSEND * ROUNDS; i++) {
		if (!HX_EXPECT(ep.rcq, NULL, i, IBV_WC_SUCCESS, IBV_WC_RECV,
			       send_len))
			continue;
		HX_CHECK_PATTERN(ep.buf + RECV_OFF + i * 4096, send_len,
				 1000 + i);
	}
	hx_sync(fd);
	dups = hx_ep_close_counter(&ep, "duplicate_request");
	hx_log("duplicate_request %llu", dups);
	/* The READs' one-copy path used to ask for the SENDs' ACK by
	 * resending their last packet, which B then got twice. */
	if (on_shm())
		CHECK_EQ(dups, 0);
}

static void unsig_read_a(int fd)
{
	stall_a(fd, 4096);
}
static void unsig_read_b(int fd)
{
	stall_b(fd, 4096);
}
static void unsig_small_read_a(int fd)
{
	stall_a(fd, 64);
}
static void unsig_small_read_b(int fd)
{
	stall_b(fd, 64);
}

/* Nanoseconds the threads of this process (but the caller, if others)
 * spent runnable but waiting for a CPU (/proc/PID/task/TID/schedstat, its
 * second field): how late the scheduler ran them.  False where the
 * kernel does not say. */
static bool run_delay(bool others, unsigned long long *sum)
{
	char path[300];
	struct dirent *e;
	bool any = false;
	DIR *d;

	*sum = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)getpid());
	d = opendir(path);
	if (!d)
		return false;
	while ((e = readdir(d))) {
		unsigned long long run, wait;
		FILE *f;

		if (e->d_name[0] == '.' ||
		    (others && atoi(e->d_name) == (int)gettid()))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat",
			 (int)getpid(), e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* the thread ended meanwhile */
		if (fscanf(f, "%llu %llu", &run, &wait) == 2) {
			*sum += wait;
			any = true;
		}
		fclose(f);
	}
	closedir(d);
	return any;
}

/* Above every ordinary process of the host where allowed (root,
 * RLIMIT_RTPRIO): a busy loop then keeps none of our threads waiting.
 * Before the engine's thread, which inherits it. */
static bool real_time(void)
{
	struct sched_param sp = { .sched_priority = 1 };

	return sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
}

/* ---- unsig_pingpong: unsignaled SENDs both ways, each side then idle --
 * UCX's tag_lat over rc_verbs (and its eager protocol): every message an
 * unsignaled SEND, answered by the peer's.  Before, the last packet of an
 * unsignaled message asked for no ACK on shm, so each one waited for the
 * probe timer (a resend after at least 500 us) whenever its sender then
 * paused that long - here A pauses 2 ms after each answer: one
 * probe_retransmit a round.  The end of the last WQE posted now asks for
 * its ACK (req.c, ack_at_end).  On shm both sides make themselves
 * non-dumpable once connected (pp_open), so that their SENDs go as
 * packets, not as descriptors the receiver pulls; and each side writes
 * its next message into the buffer of its last one, which SOFTVERBS_STRICT
 * reports (buffer-reused) if that SEND is still outstanding: without the
 * rule 3 runs of 3 failed so (and with no probe).  Over UDP every message asks for its ACK,
 * which B's pass holds back for B's answer (hold_acks): A's SEND is
 * acknowledged as soon as B answers, or by B's thread if B's application
 * is kept from its CPU meanwhile, and A probes only when B's threads are
 * late.  So B runs at real-time priority where it may (then, at load
 * 12-16, no probe in 15 runs) and counts the rounds in which its threads
 * waited for a CPU PP_LATE_NS or more (run_delay), each of which may cost
 * A a probe; past those, PP_ROUNDS / 25.  Without the ACK asked for at the
 * end of an unsignaled message (the shm rule over UDP too) A probed 5-14
 * times. */
#define PP_ROUNDS 50
#define PP_LEN 4096u /* packets, not the message channel */
#define PP_LATE_NS 500000ull /* half the probe's floor (SV_PROBE_MIN_NS) */

/* Connected, and on shm made non-dumpable: SENDs longer than a channel
 * message then go as packets through the ring, the path whose ACK rule
 * this guards, not as descriptors the receiver pulls (paths/chan_rdv.c),
 * whose completion waits for no ACK. */
static void pp_open(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	o.max_send_wr = 64;
	o.max_recv_wr = PP_ROUNDS;
	setenv("SOFTVERBS_STATS", "1", 1);
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
	if (on_shm())
		REQUIRE(prctl(PR_SET_DUMPABLE, 0) == 0);
}

/* Counters names[] (NULL-ended) at close; and on shm, that no SEND went
 * as a descriptor (pp_open). */
static void pp_close(struct hx_ep *ep, const char *const *names,
		     unsigned long long *v)
{
	const char *all[4] = { "rdv_sends" };
	unsigned long long got[4];
	int i;

	for (i = 0; names[i]; i++)
		all[i + 1] = names[i];
	all[i + 1] = NULL;
	hx_ep_close_counters(ep, all, got);
	CHECK_EQ(got[0], 0);
	memcpy(v, got + 1, (size_t)i * sizeof(*v));
}

static void unsig_pingpong_a(int fd)
{
	static const char *const names[] = { "probe_retransmit",
					     "fast_retransmit", NULL };
	unsigned long long probes, v[2];
	uint64_t late;
	struct hx_ep ep;
	int r;

	pp_open(&ep, fd);
	for (r = 0; r < PP_ROUNDS; r++)
		REQUIRE(hx_post_recv(&ep, r, ep.buf + RECV_OFF + r * 8192, 8192,
				     ep.mr->lkey) == 0);
	hx_sync(fd);
	for (r = 0; r < PP_ROUNDS; r++) {
		hx_fill(ep.buf, PP_LEN, 3000 + r);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, 0, r, ep.buf, PP_LEN,
					 ep.mr->lkey, 0, 0, 0),
			    0);
		if (!HX_EXPECT(ep.rcq, NULL, r, IBV_WC_SUCCESS, IBV_WC_RECV,
			       PP_LEN))
			break;
		HX_CHECK_PATTERN(ep.buf + RECV_OFF + r * 8192, PP_LEN,
				 5000 + r);
		usleep(2000); /* the application does something else */
	}
	late = hx_recv_u64(fd);
	hx_sync(fd);
	pp_close(&ep, names, v);
	probes = v[0] + v[1];
	hx_log("%d ping-pongs of unsignaled %u-byte SENDs, 2 ms apart: probe_retransmit %llu, rounds the peer waited for a CPU %llu",
	       PP_ROUNDS, PP_LEN, probes, (unsigned long long)late);
	if (on_shm())
		CHECK(probes <= PP_ROUNDS / 10);
	else
		CHECK(probes <= PP_ROUNDS / 25 + late);
}

static void unsig_pingpong_b(int fd)
{
	static const char *const names[] = { "duplicate_request", NULL };
	unsigned long long dups, d0, d1;
	struct hx_ep ep;
	bool rt = real_time(), ok;
	uint64_t late = 0;
	int r;

	pp_open(&ep, fd);
	for (r = 0; r < PP_ROUNDS; r++)
		REQUIRE(hx_post_recv(&ep, r, ep.buf + RECV_OFF + r * 8192, 8192,
				     ep.mr->lkey) == 0);
	hx_sync(fd);
	for (r = 0; r < PP_ROUNDS; r++) {
		ok = run_delay(false, &d0);
		if (!HX_EXPECT(ep.rcq, NULL, r, IBV_WC_SUCCESS, IBV_WC_RECV,
			       PP_LEN))
			break;
		HX_CHECK_PATTERN(ep.buf + RECV_OFF + r * 8192, PP_LEN,
				 3000 + r);
		hx_fill(ep.buf, PP_LEN, 5000 + r);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, 0, r, ep.buf, PP_LEN,
					 ep.mr->lkey, 0, 0, 0),
			    0);
		/* Not measured: it may have been. */
		ok = run_delay(false, &d1) && ok;
		if (!ok || d1 - d0 >= PP_LATE_NS)
			late++;
	}
	hx_log("rounds our threads waited %llu us or more for a CPU: %llu (%s)",
	       PP_LATE_NS / 1000, (unsigned long long)late,
	       rt ? "real-time priority" : "ordinary priority");
	hx_send_u64(fd, late);
	hx_sync(fd);
	pp_close(&ep, names, &dups);
	hx_log("duplicate_request %llu", dups);
	/* The READs' one-copy path used to ask for the SENDs' ACK by
	 * resending their last packet, which B then got twice. */
	if (on_shm())
		CHECK_EQ(dups, 0);
}

/* ---- held_ack: the receiver pauses after each receive ----------------
 * Over UDP a pass that completes a receive while the application
 * busy-polls holds its ACK back for the application's answer (engine.c,
 * hold_acks).  Here A busy-polls for B's signaled SEND, then makes no verb
 * call until B's SEND has completed: the thread must send the held ACK
 * within SV_ACK_HOLD_NS.  Left for another pass, the ACK leaves only when
 * B's probe (at least 1 ms later, a resend) brings a duplicate: every
 * held ACK then leaves late (A's ack_held_late, sent more than twice
 * SV_ACK_HOLD_NS after it was held) and costs B a probe_retransmit.  B
 * waits 3 ms before each SEND so that A polls (and the thread naps short)
 * when it comes; A's ack_held shows the holds.
 * A held ACK also leaves late when the scheduler runs the thread late (a
 * loaded host), which no count of the engine's tells apart: so A counts
 * the rounds in which its other threads waited for a CPU (run_delay,
 * schedstat) SV_ACK_HOLD_NS or more between its receive and B's
 * completion; beyond those rounds, fewer than half the held ACKs may be
 * late (a virtual CPU's timers and the host's own scheduling delay some
 * without the thread waiting: up to 15 of 26 at load 15), where the fault
 * makes every one late.  A thread that sleeps instead waits for no CPU:
 * quiet, the rounds it leaves its ACK in are not counted.  Loaded, its
 * wake-up for the duplicate waits for a CPU too and hides the fault, so A
 * runs at real-time priority where it may (root, RLIMIT_RTPRIO): no
 * ordinary process then keeps its threads waiting, and the count measures
 * the engine at any load (at load 12-16, 0-1 late of 16-29 held; with the
 * thread leaving held ACKs, all 22 of 22). */
#define HA_ROUNDS 40
#define HA_HOLD_NS 200000ull /* SV_ACK_HOLD_NS */

static void held_ack_a(int fd)
{
	static const char *const names[] = { "ack_held", "ack_held_late",
					     NULL };
	unsigned long long v[2], d0, d1, worst = 0;
	bool measured = true, ok, rt;
	struct hx_ep ep;
	int r, late = 0;

	rt = real_time();
	pp_open(&ep, fd);
	for (r = 0; r < HA_ROUNDS; r++)
		REQUIRE(hx_post_recv(&ep, r, ep.buf + RECV_OFF + r * 8192, 8192,
				     ep.mr->lkey) == 0);
	hx_sync(fd);
	for (r = 0; r < HA_ROUNDS; r++) {
		if (!HX_EXPECT(ep.rcq, NULL, r, IBV_WC_SUCCESS, IBV_WC_RECV,
			       PP_LEN))
			break;
		ok = run_delay(true, &d0);
		HX_CHECK_PATTERN(ep.buf + RECV_OFF + r * 8192, PP_LEN,
				 7000 + r);
		hx_sync(fd); /* B's SEND completed, no verb of ours meanwhile */
		ok = run_delay(true, &d1) && ok;
		measured = measured && ok;
		if (!ok)
			continue;
		if (d1 - d0 > worst)
			worst = d1 - d0;
		if (d1 - d0 >= HA_HOLD_NS)
			late++;
	}
	hx_ep_close_counters(&ep, names, v);
	hx_log("%d SENDs received, no verb until each completed: ACKs held back %llu, sent late %llu; rounds the thread waited %llu us or more for a CPU %d (longest %llu us, %s)",
	       HA_ROUNDS, v[0], v[1], HA_HOLD_NS / 1000, late, worst / 1000,
	       rt ? "real-time priority" : "ordinary priority");
	if (!measured && !rt) {
		hx_log("not checked: no schedstat to tell a late thread");
		return;
	}
	CHECK(v[1] <= (unsigned long long)late + v[0] / 2 + 2);
}

static void held_ack_b(int fd)
{
	unsigned long long probes;
	struct hx_ep ep;
	int r;

	pp_open(&ep, fd);
	hx_sync(fd);
	for (r = 0; r < HA_ROUNDS; r++) {
		usleep(3000);
		hx_fill(ep.buf, PP_LEN, 7000 + r);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, r,
					 ep.buf, PP_LEN, ep.mr->lkey, 0, 0, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, r, IBV_WC_SUCCESS, IBV_WC_SEND, PP_LEN);
		hx_sync(fd);
	}
	/* Each of A's late held ACKs cost one (see above); not bounded here:
	 * A's lateness also makes them when nothing was held. */
	probes = close_resends(&ep);
	hx_log("%d signaled SENDs: probe_retransmit+fast_retransmit %llu",
	       HA_ROUNDS, probes);
}

/* ---- held_write_ack: WRITEs answered by WRITEs, as ib_write_lat ------
 * A WRITE's target that watches its memory answers the WRITE as one woken
 * by a receive answers a SEND, so over UDP a pass that places a WRITE
 * while the application polls holds its ACK back for the answer (engine.c,
 * hold_acks; resp.c counts the WRITE in pass_answerable).  B writes an
 * 8-byte sequence number into A's buffer and polls for its completion,
 * then spins on its own buffer; A spins on its buffer, answers with a
 * WRITE of the same number and polls for that completion, as
 * ib_write_lat's two sides do.  Every fourth round A pauses 20 ms without
 * a verb before answering: the thread must send the held ACK within
 * SV_ACK_HOLD_NS, or B's WRITE completes only through its probe (at least
 * 1 ms later, a resend).  A late thread on a loaded host may let a probe
 * fire in some rounds; an ACK left for the answer makes every pause round
 * probe, so fewer than half of them may.  A's ack_held shows the holds:
 * without them every ACK leaves alone, before A sees the bytes. */
#define HW_ROUNDS 60
#define HW_PAUSE_EVERY 4
#define HW_SPIN_MS 5000

/* Spin on an 8-byte word of the buffer (as ib_write_lat on its byte)
 * until it holds v; false after HW_SPIN_MS. */
static bool spin_for(volatile uint64_t *w, uint64_t v)
{
	uint64_t end = hx_now_ms() + HW_SPIN_MS;
	unsigned int n = 0;

	while (*w != v)
		if (!(++n & 1023) && hx_now_ms() > end)
			return false;
	return true;
}

static void write_seq(struct hx_ep *ep, uint64_t seq)
{
	memcpy(ep->buf, &seq, sizeof(seq));
	HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, seq,
				 ep->buf, sizeof(seq), ep->mr->lkey,
				 ep->peer.addr + 64, ep->peer.rkey, 0),
		    0);
	HX_EXPECT(ep->scq, NULL, seq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		  sizeof(seq));
}

/* Connected, the peer ready: the word its WRITEs land in, 0. */
static volatile uint64_t *hw_open(struct hx_ep *ep, int fd)
{
	volatile uint64_t *in;

	pp_open(ep, fd);
	in = (volatile uint64_t *)(ep->buf + 64);
	*in = 0;
	hx_sync(fd);
	return in;
}

static void held_write_ack_a(int fd)
{
	volatile uint64_t *in;
	unsigned long long held;
	struct hx_ep ep;
	uint64_t r;

	in = hw_open(&ep, fd);
	for (r = 1; r <= HW_ROUNDS; r++) {
		if (!spin_for(in, r))
			hx_die("round %llu: B's WRITE not seen in %d ms",
			       (unsigned long long)r, HW_SPIN_MS);
		if (!(r % HW_PAUSE_EVERY))
			usleep(20000); /* the application does something else */
		write_seq(&ep, r);
	}
	hx_sync(fd);
	held = hx_ep_close_counter(&ep, "ack_held");
	hx_log("%d WRITEs answered by WRITEs, every fourth after 20 ms: ACKs held back %llu",
	       HW_ROUNDS, held);
	if (!on_shm())
		CHECK(held > 0);
}

static void held_write_ack_b(int fd)
{
	unsigned long long probes;
	volatile uint64_t *in;
	struct hx_ep ep;
	uint64_t r;

	in = hw_open(&ep, fd);
	for (r = 1; r <= HW_ROUNDS; r++) {
		write_seq(&ep, r);
		if (!spin_for(in, r))
			hx_die("round %llu: A's answer not seen in %d ms",
			       (unsigned long long)r, HW_SPIN_MS);
	}
	hx_sync(fd);
	probes = close_resends(&ep);
	hx_log("%d signaled WRITEs, a fourth answered after 20 ms: probe_retransmit+fast_retransmit %llu",
	       HW_ROUNDS, probes);
	CHECK(probes < HW_ROUNDS / HW_PAUSE_EVERY / 2);
}

/* ---- stopped_peer: the probe waits while the peer's ring holds ours ---
 * A SEND to a peer stopped (SIGSTOP) for 20 ms sits in the peer's ring,
 * unread.  Over UDP the probe resends it every time its timer fires (at
 * least 500 us, backing off: about five resends in 20 ms).  On shm nothing
 * is lost while the ring still holds it, so the probe looks again later
 * instead of resending (probe_deferred, comp.c): no probe_retransmit.  The
 * SEND completes once the peer runs again, its bytes checked there.  The
 * check needs the shm link: root, not SOFTVERBS_FASTPATH=0. */
static void stopped_peer_a(int fd)
{
	const char *fp = getenv("SOFTVERBS_FASTPATH");
	bool shm = !(fp && !strcmp(fp, "0")) && geteuid() == 0;
	unsigned long long probes;
	struct hx_ep ep;
	pid_t pid;

	pp_open(&ep, fd);
	pid = (pid_t)hx_recv_u64(fd);
	hx_sync(fd); /* B's receive is posted */
	REQUIRE(kill(pid, SIGSTOP) == 0);
	hx_fill(ep.buf, PP_LEN, 77);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1, ep.buf,
				 PP_LEN, ep.mr->lkey, 0, 0, 0),
		    0);
	usleep(20000);
	REQUIRE(kill(pid, SIGCONT) == 0);
	HX_EXPECT(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, PP_LEN);
	hx_sync(fd); /* B checked the bytes */
	probes = close_resends(&ep);
	hx_log("a SEND to a peer stopped for 20 ms: probe_retransmit %llu%s",
	       probes, shm ? "" : " (not checked: not on shm)");
	if (shm)
		CHECK(probes <= 1);
}

static void stopped_peer_b(int fd)
{
	unsigned long long dups;
	struct hx_ep ep;

	pp_open(&ep, fd);
	REQUIRE(hx_post_recv(&ep, 1, ep.buf + RECV_OFF, 8192, ep.mr->lkey) ==
		0);
	hx_send_u64(fd, (uint64_t)getpid());
	hx_sync(fd);
	if (HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, PP_LEN))
		HX_CHECK_PATTERN(ep.buf + RECV_OFF, PP_LEN, 77);
	hx_sync(fd);
	dups = hx_ep_close_counter(&ep, "duplicate_request");
	hx_log("duplicate_request %llu", dups);
	/* The READs' one-copy path used to ask for the SENDs' ACK by
	 * resending their last packet, which B then got twice. */
	if (on_shm())
		CHECK_EQ(dups, 0);
}

static const struct hx_case cases[] = {
	HX_CASE(unsig_read, 60),
	HX_CASE(unsig_small_read, 60),
	HX_CASE(unsig_pingpong, 60),
	HX_CASE(stopped_peer, 60),
	HX_CASE(held_ack, 60),
	HX_CASE(held_write_ack, 60),
	{ 0 },
};

HX_MAIN(cases)
