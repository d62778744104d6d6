/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * idle_cpu: what an idle softverbs process costs (issue #7: "a process with
 * open softverbs resources and no traffic uses well under 1% of a core").
 *
 *   idle_cpu SECONDS [GID_INDEX]
 *
 * Forks two processes joined by a socketpair (the fork happens before either
 * touches the verbs library).  Each opens the first device, creates a PD, an
 * MR, a CQ and an RC QP, connects it to the other's (RTS both ways) and
 * exchanges one SEND each way, so every layer (progress thread, sockets,
 * shared-memory rings if the fast path attached) is set up and has been
 * used.  With a receive still posted on each side, both then sleep for
 * SECONDS and measure their own CPU time over that window: the process CPU
 * clock (CLOCK_PROCESS_CPUTIME_ID, every thread, nanoseconds) and, as a
 * cross-check, utime+stime of /proc/self/stat (every thread, clock ticks).
 * After the window one more SEND round trip shows the pair still works and
 * how long the first message after idleness takes (progress threads must
 * wake promptly), next to a round trip made just before the window.  Prints one key=value line:
 *
 *   idle_s=5.001 cpu_pct=0.012 cpu_pct_a=0.012 cpu_pct_b=0.010
 *   ticks_a=0 ticks_b=0 threads_a=2 threads_b=2 warm_rtt_us=9.1
 *   wake_rtt_us=35.2
 *
 * cpu_pct is the larger of the two processes' figures, in % of one core.
 * Run it through `softverbs run`; every failure exits 1 with a message.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG 64

struct peer_info {
	uint32_t qpn, psn;
	union ibv_gid gid;
};

struct result {
	double idle_s, cpu_s;
	long ticks;
	int threads;
};

static const char *role = "A";

static __attribute__((noreturn)) void die(const char *what)
{
	fprintf(stderr, "idle_cpu [%s]: %s: %s\n", role, what,
		errno ? strerror(errno) : "failed");
	exit(1);
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* utime + stime of the whole process (fields 14 and 15 of /proc/self/stat,
 * counted after the parenthesised command name, which may hold spaces). */
static long proc_ticks(void)
{
	char buf[1024], *p;
	unsigned long ut, st;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;

	if (!f)
		die("/proc/self/stat");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &ut, &st) != 2)
		die("parse /proc/self/stat");
	return (long)(ut + st);
}

static int thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void xsend(int fd, const void *p, size_t len)
{
	if (send(fd, p, len, MSG_NOSIGNAL) != (ssize_t)len)
		die("control socket send");
}

static void xrecv(int fd, void *p, size_t len)
{
	if (recv(fd, p, len, MSG_WAITALL) != (ssize_t)len)
		die("control socket recv (peer gone?)");
}

static void barrier(int fd)
{
	char c = 0;

	xsend(fd, &c, 1);
	xrecv(fd, &c, 1);
}

struct ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf; /* [0, MSG): receive, [MSG, 2*MSG): send */
};

static int find_gid(struct ibv_context *ctx)
{
	union ibv_gid gid;
	static const uint8_t lo[16] = { 0, 0, 0, 0, 0, 0, 0, 0,
					0, 0, 0xff, 0xff, 127, 0, 0, 1 };

	for (int i = 0; i < 16; i++)
		if (!ibv_query_gid(ctx, 1, i, &gid) && !memcmp(gid.raw, lo, 16))
			return i;
	errno = 0;
	die("no GID for ::ffff:127.0.0.1 (pass GID_INDEX)");
}

static void post_recv(struct ep *e)
{
	struct ibv_sge sge = { (uintptr_t)e->buf, MSG, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	errno = ibv_post_recv(e->qp, &wr, &bad);
	if (errno)
		die("ibv_post_recv");
}

static void post_send(struct ep *e)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + MSG, MSG, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	errno = ibv_post_send(e->qp, &wr, &bad);
	if (errno)
		die("ibv_post_send");
}

/* Busy-poll until the completions of the wr_ids in mask (1: receive, 2:
 * send) have all arrived, in any order (the watchdog ends a hang). */
static void wait_wc(struct ep *e, unsigned mask)
{
	struct ibv_wc wc;
	int n;

	while (mask) {
		n = ibv_poll_cq(e->cq, 1, &wc);
		if (n < 0) {
			errno = 0;
			die("ibv_poll_cq");
		}
		if (n == 0)
			continue;
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "idle_cpu [%s]: completion %s\n", role,
				ibv_wc_status_str(wc.status));
			exit(1);
		}
		mask &= ~(unsigned)wc.wr_id;
	}
}

static void ep_open(struct ep *e, int fd, int gid_index)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr a;
	struct peer_info me, them;

	if (!list || !list[0])
		die("no RDMA device");
	e->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!e->ctx)
		die("ibv_open_device");
	if (gid_index < 0)
		gid_index = find_gid(e->ctx);
	e->pd = ibv_alloc_pd(e->ctx);
	if (!e->pd)
		die("ibv_alloc_pd");
	e->buf = calloc(1, 2 * MSG);
	if (!e->buf)
		die("calloc");
	e->mr = ibv_reg_mr(e->pd, e->buf, 2 * MSG,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	if (!e->mr)
		die("ibv_reg_mr");
	e->cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	if (!e->cq)
		die("ibv_create_cq");
	ia.send_cq = ia.recv_cq = e->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	e->qp = ibv_create_qp(e->pd, &ia);
	if (!e->qp)
		die("ibv_create_qp");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if ((errno = ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
		die("modify_qp INIT");

	me.qpn = e->qp->qp_num;
	me.psn = (uint32_t)getpid() & 0xffffff;
	if ((errno = ibv_query_gid(e->ctx, 1, gid_index, &me.gid)))
		die("ibv_query_gid");
	xsend(fd, &me, sizeof(me));
	xrecv(fd, &them, sizeof(them));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = them.qpn;
	a.rq_psn = them.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = them.gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if ((errno = ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_AV |
				   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER)))
		die("modify_qp RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = me.psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if ((errno = ibv_modify_qp(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)))
		die("modify_qp RTS");
}

static void ep_close(struct ep *e)
{
	if (ibv_destroy_qp(e->qp) || ibv_destroy_cq(e->cq) ||
	    ibv_dereg_mr(e->mr) || ibv_dealloc_pd(e->pd) ||
	    ibv_close_device(e->ctx))
		die("teardown");
	free(e->buf);
}

/* One SEND from A to B and one back; A returns the round trip in s. */
static double ping(struct ep *e, int is_a)
{
	double t0 = mono();

	if (is_a) {
		post_send(e);
		wait_wc(e, 1 | 2);
	} else {
		wait_wc(e, 1);
		post_send(e);
		wait_wc(e, 2);
	}
	post_recv(e);
	return mono() - t0;
}

static struct result idle(double seconds)
{
	struct result r;
	double w0, c0, end;
	long t0;
	struct timespec ts;

	w0 = mono();
	c0 = cpu_now();
	t0 = proc_ticks();
	end = w0 + seconds;
	while (mono() < end) {
		double left = end - mono();

		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
		nanosleep(&ts, NULL);
	}
	r.cpu_s = cpu_now() - c0;
	r.ticks = proc_ticks() - t0;
	r.idle_s = mono() - w0;
	r.threads = thread_count();
	return r;
}

static int run(int fd, int is_a, double seconds, int gid_index)
{
	struct ep e;
	struct result mine, theirs;
	double rtt, warm;

	alarm((unsigned)seconds + 60);
	ep_open(&e, fd, gid_index);
	post_recv(&e);
	barrier(fd);
	ping(&e, is_a); /* everything set up and used once */
	barrier(fd);
	warm = ping(&e, is_a); /* a round trip while busy, to compare */
	barrier(fd);
	mine = idle(seconds);
	barrier(fd);
	rtt = ping(&e, is_a);
	if (!is_a) {
		xsend(fd, &mine, sizeof(mine));
		barrier(fd);
		ep_close(&e);
		return 0;
	}
	xrecv(fd, &theirs, sizeof(theirs));
	barrier(fd);
	ep_close(&e);
	double pa = 100.0 * mine.cpu_s / mine.idle_s;
	double pb = 100.0 * theirs.cpu_s / theirs.idle_s;
	printf("idle_s=%.3f cpu_pct=%.4f cpu_pct_a=%.4f cpu_pct_b=%.4f "
	       "ticks_a=%ld ticks_b=%ld threads_a=%d threads_b=%d "
	       "warm_rtt_us=%.1f wake_rtt_us=%.1f\n",
	       mine.idle_s < theirs.idle_s ? mine.idle_s : theirs.idle_s,
	       pa > pb ? pa : pb, pa, pb, mine.ticks, theirs.ticks,
	       mine.threads, theirs.threads, warm * 1e6, rtt * 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	int sv[2], status;
	double seconds;
	int gid_index = -1;
	pid_t pid;

	if (argc < 2 || argc > 3 || (seconds = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: idle_cpu SECONDS [GID_INDEX]\n");
		return 2;
	}
	if (argc == 3)
		gid_index = atoi(argv[2]);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		role = "B";
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(sv[0]);
		exit(run(sv[1], 0, seconds, gid_index));
	}
	close(sv[1]);
	if (run(sv[0], 1, seconds, gid_index))
		return 1;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "idle_cpu: peer process failed\n");
		return 1;
	}
	return 0;
}
