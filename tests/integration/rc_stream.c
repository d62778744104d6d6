/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A stream of large RDMA WRITEs to a responder whose application makes
 * no verb call meanwhile (ib_write_bw's server): its progress thread
 * alone takes every packet and sends every ACK (docs/engine.md,
 * "Responder streams").
 *   write  A writes 64 messages of 1 MiB (path MTU 1024: 1,024 packets
 *          each, as across an Ethernet MTU of 1500), all signaled, at
 *          most 4 outstanding, into B's region, each message a pattern
 *          of its own; B blocks on the control socket until A's last
 *          completion, then checks the last message's bytes.  Every
 *          completion is a success.  Over UDP (SOFTVERBS_FASTPATH=0),
 *          A and B each on a CPU of its own as on two hosts, and B at
 *          real-time priority where it may be (root): B's threads went
 *          to sleep at most once per MiB (voluntary context switches of
 *          the whole process, from /proc).  A thread that sleeps between
 *          a stream's batches is woken for each, about eight times per
 *          MiB, and on a virtual CPU each wake-up stalls the requester's
 *          window; one that looks again for the next batch sleeps only
 *          when the requester pauses.  A's batches come in bursts, with
 *          a gap of 90-130 us between them as A copies the next ones,
 *          wider on a slow host: a look of a fixed 50 us slept through
 *          2 of them per MiB, 7 in the machine's slower hours, where
 *          one as long as the stream's widest recent gap sleeps 2-3
 *          times in all.  A's messages are all written before it starts:
 *          A filling one meanwhile paused the stream.  A count of sleeps,
 *          not a rate, of a process no other one takes the CPU from:
 *          the host's load moves it little.
 */
#include <dirent.h>
#include <sched.h>
#include <stdlib.h>

#include "harness.h"

#define MSG (1u << 20)
#define N_MSGS 64
#define OUTSTANDING 4

static bool on_udp(void)
{
	const char *f = getenv("SOFTVERBS_FASTPATH");

	return f && !strcmp(f, "0");
}

/* A on one CPU, B on another, as on two hosts: a responder's thread
 * spinning for the next batch would otherwise take the CPU the requester
 * needs to send it.  False: fewer than two CPUs to run on. */
static bool own_cpu(void)
{
	cpu_set_t set, one;
	int k = !strcmp(hx_role, "A") ? 0 : 1;

	REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set) || k--)
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		return sched_setaffinity(0, sizeof(one), &one) == 0;
	}
	return false;
}

/* B above every ordinary process of the host: on a loaded host a thread
 * waiting for its CPU finds more datagrams when it gets it, and sleeps
 * less often whatever it does; so only at real-time priority does the
 * count measure the thread.  False where not allowed (an ordinary user
 * without RLIMIT_RTPRIO). */
static bool own_priority(void)
{
	struct sched_param p = { .sched_priority = 1 };

	return sched_setscheduler(0, SCHED_FIFO, &p) == 0;
}

static void open_ep(struct hx_ep *ep, int fd, size_t len)
{
	struct hx_opts o = hx_opts_default();

	o.buf_len = len;
	o.path_mtu = IBV_MTU_1024;
	o.max_send_wr = 16;
	o.send_cqe = 64;
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

/* Voluntary context switches of every thread of this process: how often
 * one of them went to sleep. */
static unsigned long long voluntary_switches(void)
{
	unsigned long long sum = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	REQUIRE(d != NULL);
	while ((e = readdir(d))) {
		char path[300], line[256];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* the thread ended meanwhile */
		while (fgets(line, sizeof(line), f)) {
			unsigned long long v;

			if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) ==
			    1)
				sum += v;
		}
		fclose(f);
	}
	closedir(d);
	return sum;
}

static void write_a(int fd)
{
	struct hx_ep ep;
	int posted = 0, done = 0;
	uint64_t t0;

	(void)(own_cpu() && own_priority());
	open_ep(&ep, fd, (size_t)N_MSGS * MSG);
	/* Each message its own bytes, the last one B sees the last one
	 * sent; all written before the stream starts: filling one while
	 * the others go out would pause the stream (the poller is away,
	 * the engine's thread naps for it), and B's thread sleeps for
	 * each pause. */
	for (int i = 0; i < N_MSGS; i++)
		hx_fill(ep.buf + (size_t)i * MSG, MSG, (uint64_t)i);
	hx_sync(fd); /* B counts from here */
	t0 = hx_now_ms();
	while (done < N_MSGS) {
		while (posted < N_MSGS && posted - done < OUTSTANDING) {
			uint8_t *src = ep.buf + (size_t)posted * MSG;

			if (hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 IBV_SEND_SIGNALED, (uint64_t)posted,
					 src, MSG, ep.mr->lkey, ep.peer.addr,
					 ep.peer.rkey, 0)) {
				CHECK(!"ibv_post_send failed");
				goto out;
			}
			posted++;
		}
		if (!HX_EXPECT(ep.scq, NULL, (uint64_t)done, IBV_WC_SUCCESS,
			       IBV_WC_RDMA_WRITE, MSG))
			break;
		done++;
	}
out:
	hx_log("%d WRITEs of 1 MiB in %llu ms", done,
	       (unsigned long long)(hx_now_ms() - t0));
	hx_send_u64(fd, (uint64_t)done);
	hx_sync(fd); /* B checked */
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void write_b(int fd)
{
	unsigned long long before, after;
	struct hx_ep ep;
	bool alone;
	int n;

	/* Before the engine's thread: it inherits both. */
	alone = own_cpu() && own_priority();
	open_ep(&ep, fd, MSG);
	hx_sync(fd);
	before = voluntary_switches();
	n = (int)hx_recv_u64(fd); /* no verb call until A is done */
	after = voluntary_switches();
	CHECK_EQ(n, N_MSGS);
	HX_CHECK_PATTERN(ep.buf, MSG, (uint64_t)(N_MSGS - 1));
	hx_log("%d MiB written into us: %llu voluntary context switches", n,
	       after - before);
	if (on_udp() && alone)
		CHECK(after - before <= N_MSGS);
	else if (on_udp())
		hx_log("not counted: no CPU of our own at real-time priority");
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(write, 60),
	{ 0 },
};

HX_MAIN(cases)
