/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * setup_cost: what setting up many connections costs (issue #20: "RTR <= 20
 * us per QP", "an empty CQ poll that does not walk every QP", "10,000 CQs
 * reaped in < 100 ms").
 *
 *   setup_cost [NQP [NCQ]]       (defaults 2000 and 10000)
 *
 * One process, one device context.  It creates NQP RC QPs (NQP/2 pairs,
 * each QP with a CQ of its own, as a server with a CQ per connection
 * has), moves them to INIT, then connects each pair in this process over
 * the loopback GID (::ffff:127.0.0.1, with a GRH as RoCE v2 requires),
 * timing every INIT->RTR and RTR->RTS.  One SEND over the last pair shows
 * the connections work.  Then, with every QP connected and idle, it times
 * empty ibv_poll_cq calls on the first CQ.  Last it creates NCQ more CQs
 * one after another and destroys them all, timing both, and destroys the
 * QPs.  Memory: the resident set grown from before the QPs were created to
 * after they were connected, per QP.  Prints one key=value line:
 *
 *   nqp=2000 rtr_us=3.1 rts_us=0.8 rtr_max_us=40.1 poll_empty_ns=35
 *   rss_per_qp_kib=22.6 ncq=10000 cq_create_us=4.2 cq_reap_ms=12.0
 *   qp_destroy_ms=31.0
 *
 * Run it through `softverbs run` (SOFTVERBS_FASTPATH=0 for the UDP path);
 * every failure exits 1 with a message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define POLLS 200000

static __attribute__((noreturn)) void die(const char *what)
{
	fprintf(stderr, "setup_cost: %s: %s\n", what,
		errno ? strerror(errno) : "failed");
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long rss_kib(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &pages, &res) != 2)
		die("/proc/self/statm");
	fclose(f);
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static int find_gid(struct ibv_context *ctx)
{
	union ibv_gid gid;
	static const uint8_t lo[16] = { 0, 0, 0, 0, 0, 0, 0, 0,
					0, 0, 0xff, 0xff, 127, 0, 0, 1 };

	for (int i = 0; i < 64; i++)
		if (!ibv_query_gid(ctx, 1, i, &gid) && !memcmp(gid.raw, lo, 16))
			return i;
	errno = 0;
	die("no GID for ::ffff:127.0.0.1");
}

static void to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { 0 };

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if ((errno = ibv_modify_qp(qp, &a,
				   IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
		die("modify_qp INIT");
}

/* INIT->RTR towards dest, then RTS; adds each call's time to *rtr, *rts. */
static void connect_qp(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid,
		       int gid_index, uint64_t *rtr, uint64_t *rts,
		       uint64_t *rtr_max)
{
	struct ibv_qp_attr a = { 0 };
	uint64_t t;

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	t = now_ns();
	if ((errno = ibv_modify_qp(qp, &a,
				   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					   IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER)))
		die("modify_qp RTR");
	t = now_ns() - t;
	*rtr += t;
	if (t > *rtr_max)
		*rtr_max = t;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	t = now_ns();
	if ((errno = ibv_modify_qp(qp, &a,
				   IBV_QP_STATE | IBV_QP_SQ_PSN |
					   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY |
					   IBV_QP_MAX_QP_RD_ATOMIC)))
		die("modify_qp RTS");
	*rts += now_ns() - t;
}

static void wait_wc(struct ibv_cq *cq, uint64_t wr_id)
{
	uint64_t end = now_ns() + 10ull * 1000000000;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		if (now_ns() > end) {
			errno = 0;
			die("no completion within 10 s");
		}
	if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id != wr_id) {
		errno = 0;
		die("SEND over the last pair");
	}
}

/* One SEND from qp a to qp b: the connections carry traffic. */
static void ping(struct ibv_pd *pd, struct ibv_qp *a, struct ibv_cq *acq,
		 struct ibv_qp *b, struct ibv_cq *bcq)
{
	static char buf[128];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf),
				       IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge rs = { (uintptr_t)buf, 64, 0 },
		       ss = { (uintptr_t)buf + 64, 64, 0 };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 },
			   *rbad;
	struct ibv_send_wr swr = { .wr_id = 2,
				   .sg_list = &ss,
				   .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED },
			   *sbad;

	if (!mr)
		die("ibv_reg_mr");
	rs.lkey = ss.lkey = mr->lkey;
	if ((errno = ibv_post_recv(b, &rwr, &rbad)))
		die("ibv_post_recv");
	if ((errno = ibv_post_send(a, &swr, &sbad)))
		die("ibv_post_send");
	wait_wc(acq, 2);
	wait_wc(bcq, 1);
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr");
}

int main(int argc, char **argv)
{
	int nqp = argc > 1 ? atoi(argv[1]) : 2000;
	int ncq = argc > 2 ? atoi(argv[2]) : 10000;
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_context *ctx;
	struct ibv_qp **qp;
	struct ibv_cq **cq, **more;
	struct ibv_pd *pd;
	union ibv_gid gid;
	uint64_t rtr = 0, rts = 0, rtr_max = 0, t, poll_ns, create_ns, reap_ns,
		 qp_destroy_ns;
	struct ibv_wc wc;
	long rss0, rss1;
	int gid_index, i;

	nqp &= ~1;
	if (nqp < 2 || ncq < 1) {
		fprintf(stderr, "usage: setup_cost [NQP>=2 [NCQ>=1]]\n");
		return 2;
	}
	if (!list || !list[0])
		die("no RDMA device");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx)
		die("ibv_open_device");
	gid_index = find_gid(ctx);
	if ((errno = ibv_query_gid(ctx, 1, gid_index, &gid)))
		die("ibv_query_gid");
	pd = ibv_alloc_pd(ctx);
	qp = calloc((size_t)nqp, sizeof(*qp));
	cq = calloc((size_t)nqp, sizeof(*cq));
	more = calloc((size_t)ncq, sizeof(*more));
	if (!pd || !qp || !cq || !more)
		die("setup");

	rss0 = rss_kib();
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	for (i = 0; i < nqp; i++) {
		cq[i] = ibv_create_cq(ctx, 32, NULL, NULL, 0);
		if (!cq[i])
			die("ibv_create_cq");
		ia.send_cq = ia.recv_cq = cq[i];
		qp[i] = ibv_create_qp(pd, &ia);
		if (!qp[i])
			die("ibv_create_qp");
		to_init(qp[i]);
	}
	for (i = 0; i < nqp; i++)
		connect_qp(qp[i], qp[i ^ 1]->qp_num, &gid, gid_index, &rtr,
			   &rts, &rtr_max);
	ping(pd, qp[nqp - 2], cq[nqp - 2], qp[nqp - 1], cq[nqp - 1]);
	rss1 = rss_kib();

	for (i = 0; i < 1000; i++) /* warm up */
		if (ibv_poll_cq(cq[0], 1, &wc))
			die("a completion on an idle CQ");
	t = now_ns();
	for (i = 0; i < POLLS; i++)
		if (ibv_poll_cq(cq[0], 1, &wc))
			die("a completion on an idle CQ");
	poll_ns = now_ns() - t;

	t = now_ns();
	for (i = 0; i < ncq; i++)
		if (!(more[i] = ibv_create_cq(ctx, 32, NULL, NULL, 0)))
			die("ibv_create_cq (NCQ)");
	create_ns = now_ns() - t;
	t = now_ns();
	for (i = 0; i < ncq; i++)
		if ((errno = ibv_destroy_cq(more[i])))
			die("ibv_destroy_cq");
	reap_ns = now_ns() - t;

	t = now_ns();
	for (i = 0; i < nqp; i++)
		if ((errno = ibv_destroy_qp(qp[i])))
			die("ibv_destroy_qp");
	qp_destroy_ns = now_ns() - t;
	for (i = 0; i < nqp; i++)
		if ((errno = ibv_destroy_cq(cq[i])))
			die("ibv_destroy_cq");
	if (ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		die("teardown");

	printf("nqp=%d rtr_us=%.2f rts_us=%.2f rtr_max_us=%.1f poll_empty_ns=%.0f rss_per_qp_kib=%.1f ncq=%d cq_create_us=%.2f cq_reap_ms=%.1f qp_destroy_ms=%.1f\n",
	       nqp, rtr / 1e3 / nqp, rts / 1e3 / nqp, rtr_max / 1e3,
	       (double)poll_ns / POLLS, (double)(rss1 - rss0) / nqp, ncq,
	       create_ns / 1e3 / ncq, reap_ns / 1e6, qp_destroy_ns / 1e6);
	free(qp);
	free(cq);
	free(more);
	return 0;
}
