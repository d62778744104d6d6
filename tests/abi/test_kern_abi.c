/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ibv_copy_{qp,ah}_attr_from_kern and ibv_copy_path_rec_{from,to}_kern:
 * every field lands in the field of the same name, with a distinct value
 * per field so that a swapped or forgotten field shows; byte order is
 * preserved; nothing outside the destination's fields changes.
 */
#include <endian.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "check.h"

void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
				struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
				struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
				 struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
			       struct ibv_sa_path_rec *src);

static void fill_kern_ah(struct ib_uverbs_ah_attr *k, int base)
{
	for (int i = 0; i < 16; i++)
		k->grh.dgid[i] = base + i;
	k->grh.flow_label = 0x000abcde + base;
	k->grh.sgid_index = base + 20;
	k->grh.hop_limit = base + 21;
	k->grh.traffic_class = base + 22;
	k->dlid = 0x1234 + base;
	k->sl = base + 23;
	k->src_path_bits = base + 24;
	k->static_rate = base + 25;
	k->is_global = 1;
	k->port_num = base + 26;
}

static void check_ah(const struct ibv_ah_attr *a, int base)
{
	for (int i = 0; i < 16; i++)
		CHECK_EQ(a->grh.dgid.raw[i], base + i);
	CHECK_EQ(a->grh.flow_label, 0x000abcde + base);
	CHECK_EQ(a->grh.sgid_index, base + 20);
	CHECK_EQ(a->grh.hop_limit, base + 21);
	CHECK_EQ(a->grh.traffic_class, base + 22);
	CHECK_EQ(a->dlid, 0x1234 + base);
	CHECK_EQ(a->sl, base + 23);
	CHECK_EQ(a->src_path_bits, base + 24);
	CHECK_EQ(a->static_rate, base + 25);
	CHECK_EQ(a->is_global, 1);
	CHECK_EQ(a->port_num, base + 26);
}

static void test_ah(void)
{
	struct ib_uverbs_ah_attr k;
	struct ibv_ah_attr a;

	memset(&k, 0, sizeof(k));
	memset(&a, 0xee, sizeof(a));
	fill_kern_ah(&k, 1);
	ibv_copy_ah_attr_from_kern(&a, &k);
	check_ah(&a, 1);
}

static void test_qp(void)
{
	struct ib_uverbs_qp_attr k;
	struct ibv_qp_attr q;

	memset(&k, 0, sizeof(k));
	k.qp_attr_mask = 0xffffffff;
	k.qp_state = IBV_QPS_RTS;
	k.cur_qp_state = IBV_QPS_RTR;
	k.path_mtu = IBV_MTU_2048;
	k.path_mig_state = IBV_MIG_REARM;
	k.qkey = 0x11111111;
	k.rq_psn = 0x222222;
	k.sq_psn = 0x333333;
	k.dest_qp_num = 0x444444;
	k.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	fill_kern_ah(&k.ah_attr, 1);
	fill_kern_ah(&k.alt_ah_attr, 100);
	k.max_send_wr = 501;
	k.max_recv_wr = 502;
	k.max_send_sge = 503;
	k.max_recv_sge = 504;
	k.max_inline_data = 505;
	k.pkey_index = 601;
	k.alt_pkey_index = 602;
	k.en_sqd_async_notify = 1;
	k.sq_draining = 1;
	k.max_rd_atomic = 71;
	k.max_dest_rd_atomic = 72;
	k.min_rnr_timer = 73;
	k.port_num = 74;
	k.timeout = 75;
	k.retry_cnt = 76;
	k.rnr_retry = 77;
	k.alt_port_num = 78;
	k.alt_timeout = 79;

	memset(&q, 0, sizeof(q));
	q.qp_state = IBV_QPS_SQD; /* as rdma-core: the caller owns qp_state */
	ibv_copy_qp_attr_from_kern(&q, &k);
	CHECK_EQ(q.qp_state, IBV_QPS_SQD);
	CHECK_EQ(q.cur_qp_state, IBV_QPS_RTR);
	CHECK_EQ(q.path_mtu, IBV_MTU_2048);
	CHECK_EQ(q.path_mig_state, IBV_MIG_REARM);
	CHECK_EQ(q.qkey, 0x11111111);
	CHECK_EQ(q.rq_psn, 0x222222);
	CHECK_EQ(q.sq_psn, 0x333333);
	CHECK_EQ(q.dest_qp_num, 0x444444);
	CHECK_EQ(q.qp_access_flags,
		 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	check_ah(&q.ah_attr, 1);
	check_ah(&q.alt_ah_attr, 100);
	CHECK_EQ(q.cap.max_send_wr, 501);
	CHECK_EQ(q.cap.max_recv_wr, 502);
	CHECK_EQ(q.cap.max_send_sge, 503);
	CHECK_EQ(q.cap.max_recv_sge, 504);
	CHECK_EQ(q.cap.max_inline_data, 505);
	CHECK_EQ(q.pkey_index, 601);
	CHECK_EQ(q.alt_pkey_index, 602);
	CHECK_EQ(q.en_sqd_async_notify, 1);
	CHECK_EQ(q.sq_draining, 1);
	CHECK_EQ(q.max_rd_atomic, 71);
	CHECK_EQ(q.max_dest_rd_atomic, 72);
	CHECK_EQ(q.min_rnr_timer, 73);
	CHECK_EQ(q.port_num, 74);
	CHECK_EQ(q.timeout, 75);
	CHECK_EQ(q.retry_cnt, 76);
	CHECK_EQ(q.rnr_retry, 77);
	CHECK_EQ(q.alt_port_num, 78);
	CHECK_EQ(q.alt_timeout, 79);
}

static void test_path_rec(void)
{
	struct ib_user_path_rec k, k2;
	struct ibv_sa_path_rec p;

	memset(&k, 0, sizeof(k));
	for (int i = 0; i < 16; i++) {
		k.dgid[i] = 0x10 + i;
		k.sgid[i] = 0x40 + i;
	}
	k.dlid = htobe16(0x1234);
	k.slid = htobe16(0x5678);
	k.raw_traffic = 1;
	k.flow_label = htobe32(0x000fedcb);
	k.reversible = 1;
	k.mtu = IBV_MTU_4096;
	k.pkey = htobe16(0xffff);
	k.hop_limit = 64;
	k.traffic_class = 3;
	k.numb_path = 4;
	k.sl = 5;
	k.mtu_selector = 2;
	k.rate_selector = 1;
	k.rate = IBV_RATE_100_GBPS;
	k.packet_life_time_selector = 6;
	k.packet_life_time = 18;
	k.preference = 7;

	memset(&p, 0xee, sizeof(p));
	ibv_copy_path_rec_from_kern(&p, &k);
	for (int i = 0; i < 16; i++) {
		CHECK_EQ(p.dgid.raw[i], 0x10 + i);
		CHECK_EQ(p.sgid.raw[i], 0x40 + i);
	}
	/* network order on both sides: the bytes travel unchanged */
	CHECK_EQ(be16toh(p.dlid), 0x1234);
	CHECK_EQ(be16toh(p.slid), 0x5678);
	CHECK_EQ(p.raw_traffic, 1);
	CHECK_EQ(be32toh(p.flow_label), 0x000fedcb);
	CHECK_EQ(p.reversible, 1);
	CHECK_EQ(p.mtu, IBV_MTU_4096);
	CHECK_EQ(be16toh(p.pkey), 0xffff);
	CHECK_EQ(p.hop_limit, 64);
	CHECK_EQ(p.traffic_class, 3);
	CHECK_EQ(p.numb_path, 4);
	CHECK_EQ(p.sl, 5);
	CHECK_EQ(p.mtu_selector, 2);
	CHECK_EQ(p.rate_selector, 1);
	CHECK_EQ(p.rate, IBV_RATE_100_GBPS);
	CHECK_EQ(p.packet_life_time_selector, 6);
	CHECK_EQ(p.packet_life_time, 18);
	CHECK_EQ(p.preference, 7);

	/* and back: the kernel struct has no padding, so it must come back
	 * byte for byte */
	memset(&k2, 0xee, sizeof(k2));
	ibv_copy_path_rec_to_kern(&k2, &p);
	CHECK(memcmp(&k, &k2, sizeof(k)) == 0);
}

int main(void)
{
	test_ah();
	test_qp();
	test_path_rec();
	return check_done();
}
