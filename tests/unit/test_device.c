/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Device list, open/close, device/port/GID/P_Key queries of softverbs0. */
#include <infiniband/verbs.h>
#include <poll.h>
#include <fcntl.h>
#include <unistd.h>

#include "check.h"

int main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dax;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ents[64], e;
	union ibv_gid gid;
	__be16 pkey;
	int n = -1;
	ssize_t ng;

	list = ibv_get_device_list(&n);
	REQUIRE(list);
	CHECK_EQ(n, 1);
	CHECK(list[1] == NULL);
	CHECK(!strcmp(ibv_get_device_name(list[0]), "softverbs0"));
	CHECK(ibv_get_device_guid(list[0]) != 0);
	CHECK_EQ(list[0]->node_type, IBV_NODE_CA);
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx);

	CHECK_EQ(ibv_query_device(ctx, &da), 0);
	CHECK_EQ(da.phys_port_cnt, 1);
	CHECK(da.max_qp > 0 && da.max_qp_wr > 0 && da.max_sge > 0 &&
	      da.max_cqe > 0);
	CHECK(da.max_mr > 0 && da.max_pd > 0 && da.max_qp_rd_atom > 0);
	CHECK(da.atomic_cap != IBV_ATOMIC_NONE);
	CHECK(da.node_guid == ibv_get_device_guid(list[0]));
	CHECK_EQ(ibv_query_device_ex(ctx, NULL, &dax), 0);
	CHECK_EQ(dax.orig_attr.max_qp, da.max_qp);
	CHECK_EQ(dax.phys_port_cnt_ex, 1);

	CHECK_EQ(ibv_query_port(ctx, 1, &pa), 0);
	CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
	CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	CHECK_EQ(pa.lid, 0);
	CHECK(pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= IBV_MTU_4096);
	CHECK(pa.gid_tbl_len > 0);
	CHECK_EQ(pa.pkey_tbl_len, 1);
	CHECK(ibv_query_port(ctx, 2, &pa) != 0);
	CHECK(ibv_query_port(ctx, 0, &pa) != 0);

	/* GID table: loopback 127.0.0.1 as an IPv4-mapped RoCE v2 GID. */
	ng = ibv_query_gid_table(ctx, ents, 64, 0);
	CHECK(ng >= 1);
	int found_lo = 0;
	for (ssize_t i = 0; i < ng; i++) {
		static const uint8_t lo[16] = {
			0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1
		};
		CHECK_EQ(ents[i].gid_type, IBV_GID_TYPE_ROCE_V2);
		CHECK_EQ(ents[i].gid_index, i);
		CHECK_EQ(ents[i].port_num, 1);
		if (!memcmp(ents[i].gid.raw, lo, 16))
			found_lo = 1;
		CHECK_EQ(ibv_query_gid(ctx, 1, i, &gid), 0);
		CHECK(!memcmp(gid.raw, ents[i].gid.raw, 16));
		CHECK_EQ(ibv_query_gid_ex(ctx, 1, i, &e, 0), 0);
		CHECK(!memcmp(e.gid.raw, ents[i].gid.raw, 16));
	}
	CHECK(found_lo);
	/* Loopback's GIDs come last (127.0.0.0/8, ::1): what code that takes
	 * index 0 or the first IPv4 GID gets is one of the host's own
	 * addresses whenever it has one. */
	for (ssize_t i = 1; i < ng; i++) {
		static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
		static const uint8_t v6lo[16] = { [15] = 1 };
		const uint8_t *a = ents[i - 1].gid.raw, *b = ents[i].gid.raw;
		int lo_a = (!memcmp(a, v4, 12) && a[12] == 127) ||
			   !memcmp(a, v6lo, 16);
		int lo_b = (!memcmp(b, v4, 12) && b[12] == 127) ||
			   !memcmp(b, v6lo, 16);

		CHECK(!lo_a || lo_b);
	}
	/* An empty slot reads as a zero GID (ibv_query_gid) or ENODATA (_ex). */
	CHECK_EQ(ibv_query_gid(ctx, 1, pa.gid_tbl_len - 1, &gid), 0);
	CHECK_EQ(ibv_query_gid_ex(ctx, 1, pa.gid_tbl_len - 1, &e, 0), ENODATA);
	CHECK_EQ(ibv_query_gid_ex(ctx, 1, pa.gid_tbl_len, &e, 0), EINVAL);
	CHECK_EQ(ibv_query_gid_ex(ctx, 2, 0, &e, 0), EINVAL);
	errno = 0;
	CHECK_EQ(ibv_query_gid(ctx, 1, -1, &gid), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(ibv_query_gid_table(ctx, ents, 0, 0), -EINVAL);

	CHECK_EQ(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
	CHECK_EQ(pkey, htobe16(0xffff));
	CHECK_EQ(ibv_query_pkey(ctx, 1, 1, &pkey), -1);
	CHECK_EQ(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)), 0);
	CHECK(ibv_get_pkey_index(ctx, 1, htobe16(0x1234)) < 0);

	/* The async fd is a real, pollable fd: nothing pending now. */
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	CHECK(fcntl(ctx->async_fd, F_GETFD) >= 0);
	CHECK_EQ(poll(&p, 1, 0), 0);
	int fl = fcntl(ctx->async_fd, F_GETFL);
	CHECK_EQ(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	struct ibv_async_event ev;
	errno = 0;
	CHECK_EQ(ibv_get_async_event(ctx, &ev), -1);
	CHECK_EQ(errno, EAGAIN);

	CHECK(!strcmp(ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE"));
	CHECK(!strcmp(ibv_wc_status_str(IBV_WC_SUCCESS), "success"));
	CHECK(!strcmp(ibv_node_type_str(IBV_NODE_CA),
		      "InfiniBand channel adapter"));
	CHECK(!strcmp(ibv_event_type_str(IBV_EVENT_COMM_EST),
		      "communication established"));
	CHECK_EQ(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
	CHECK_EQ(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
	CHECK_EQ(ibv_rate_to_mbps(IBV_RATE_25_GBPS), 25781);
	CHECK_EQ(mbps_to_ibv_rate(25781), IBV_RATE_25_GBPS);

	CHECK_EQ(ibv_close_device(ctx), 0);
	ibv_free_device_list(list);
	return check_done();
}
