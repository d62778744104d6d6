/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* SRQ, AH and multicast rules: SRQ create/modify/query/destroy limits and
 * EBUSY, post_srq_recv (bad SGE count, full queue, bad_wr), resize keeping
 * queued WQEs, destroy waiting for acked events; AH creation on a RoCE
 * port (GRH, port, source GID index) and the address it records;
 * ibv_init_ah_from_wc for IPv4 and IPv6 GRHs; multicast attach/detach. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/ip.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/objects.h"
#include "check.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;

/* Queue an async event as the library's sv_async_post does (the library
 * keeps that function hidden). */
static void post_event(const struct ibv_async_event *ev)
{
	struct sv_context *sctx =
		sv_container_of(ctx, struct sv_context, vctx.context);
	struct sv_async_event *e = calloc(1, sizeof(*e));
	char b = 1;

	REQUIRE(e);
	e->ev = *ev;
	pthread_mutex_lock(&sctx->lock);
	list_add_tail(&sctx->async_events, &e->node);
	pthread_mutex_unlock(&sctx->lock);
	REQUIRE(write(sctx->async_pipe[1], &b, 1) == 1);
}

static struct ibv_srq *new_srq(uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = max_wr,
						  .max_sge = max_sge } };

	return ibv_create_srq(pd, &ia);
}

static void test_srq_create(void)
{
	struct ibv_device_attr da;
	struct ibv_srq_init_attr ia;
	struct ibv_srq_attr qa;
	struct ibv_srq *srq;
	int tag;

	REQUIRE(ibv_query_device(ctx, &da) == 0);
	CHECK(da.max_srq > 0 && da.max_srq_wr > 0 && da.max_srq_sge > 0);
	errno = 0;
	CHECK(new_srq(0, 1) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(new_srq(da.max_srq_wr + 1, 1) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(new_srq(8, da.max_srq_sge + 1) == NULL);
	CHECK_EQ(errno, EINVAL);
	ia = (struct ibv_srq_init_attr){ .attr = { .max_wr = 4 } };
	errno = 0;
	CHECK(ibv_create_srq(NULL, &ia) == NULL);
	CHECK_EQ(errno, EINVAL);

	/* The limit is not an input of create; the sizes come back. */
	ia = (struct ibv_srq_init_attr){
		.srq_context = &tag,
		.attr = { .max_wr = 100, .max_sge = 3, .srq_limit = 7 }
	};
	srq = ibv_create_srq(pd, &ia);
	REQUIRE(srq);
	CHECK(ia.attr.max_wr >= 100);
	CHECK(ia.attr.max_sge >= 3);
	CHECK_EQ(ia.attr.srq_limit, 0);
	CHECK(srq->context == ctx && srq->pd == pd && srq->srq_context == &tag);
	CHECK_EQ(ibv_query_srq(srq, &qa), 0);
	CHECK_EQ(qa.max_wr, ia.attr.max_wr);
	CHECK_EQ(qa.max_sge, ia.attr.max_sge);
	CHECK_EQ(qa.srq_limit, 0);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_destroy_srq(srq), 0);

	srq = new_srq(da.max_srq_wr, da.max_srq_sge);
	CHECK(srq != NULL);
	if (srq)
		CHECK_EQ(ibv_destroy_srq(srq), 0);
}

static void test_srq_modify(void)
{
	struct ibv_srq *srq = new_srq(16, 2);
	struct ibv_srq_attr a, q;
	uint32_t max_wr;

	REQUIRE(srq);
	REQUIRE(ibv_query_srq(srq, &q) == 0);
	max_wr = q.max_wr;
	a = (struct ibv_srq_attr){ .max_wr = 32, .srq_limit = 3 };
	CHECK_EQ(ibv_modify_srq(srq, &a, 1 << 2), EINVAL); /* unknown bit */
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT | (1 << 5)), EINVAL);
	a.srq_limit = max_wr + 1;
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT),
		 EINVAL); /* above the size */
	a.srq_limit = 5;
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT), 0);
	CHECK_EQ(ibv_query_srq(srq, &q), 0);
	CHECK_EQ(q.srq_limit, 5);
	a.max_wr = 4; /* below the limit */
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	a.max_wr = 0;
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	a.max_wr = SV_MAX_SRQ_WR + 1;
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	/* Both at once, the limit above the new size: nothing changes. */
	a.max_wr = 64;
	a.srq_limit = 1000;
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT),
		 EINVAL);
	CHECK_EQ(ibv_query_srq(srq, &q), 0);
	CHECK_EQ(q.max_wr, max_wr);
	CHECK_EQ(q.srq_limit, 5);
	a.srq_limit = 40;
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), 0);
	CHECK_EQ(ibv_query_srq(srq, &q), 0);
	CHECK(q.max_wr >= 64);
	CHECK_EQ(q.srq_limit, 40);
	CHECK_EQ(q.max_sge, 2);
	/* Limit 0 disarms. */
	a.srq_limit = 0;
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT), 0);
	a.max_wr = 8;
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), 0);
	CHECK_EQ(ibv_query_srq(srq, &q), 0);
	CHECK(q.max_wr >= 8 && q.max_wr < 64);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
}

static uint64_t wqe_id(struct ibv_srq *srq, uint32_t i, uint32_t *nsge,
		       uint32_t *lkey)
{
	struct sv_srq *s = sv_container_of(srq, struct sv_srq, ibv);
	uint32_t head = atomic_load(&s->rq.head);
	struct sv_recv_wqe *w = sv_wq_at(&s->rq, head + i);

	*nsge = w->num_sge;
	*lkey = w->num_sge ? w->sge[0].lkey : 0;
	return w->wr_id;
}

static void test_post_srq_recv(void)
{
	struct ibv_srq *srq = new_srq(4, 2);
	struct ibv_sge sge[3] = { { 0x1000, 64, 0x11 },
				  { 0x2000, 64, 0x22 },
				  { 0x3000, 64, 0x33 } };
	struct ibv_recv_wr wr[8], *bad;
	struct ibv_srq_attr q, a;
	uint32_t cap, i, nsge, lkey;

	REQUIRE(srq);
	REQUIRE(ibv_query_srq(srq, &q) == 0);
	cap = q.max_wr;
	REQUIRE(cap >= 4 && cap < 8);
	for (i = 0; i < 8; i++)
		wr[i] = (struct ibv_recv_wr){ .wr_id = 100 + i,
					      .sg_list = sge,
					      .num_sge = 2,
					      .next = &wr[i + 1] };
	wr[7].next = NULL;

	/* Too many SGEs in the second WR: the first is posted. */
	wr[1].num_sge = 3;
	bad = NULL;
	CHECK_EQ(ibv_post_srq_recv(srq, &wr[0], &bad), EINVAL);
	CHECK(bad == &wr[1]);
	wr[1].num_sge = -1;
	bad = NULL;
	CHECK_EQ(ibv_post_srq_recv(srq, &wr[1], &bad), EINVAL);
	CHECK(bad == &wr[1]);
	wr[1].num_sge = 0;
	/* Fill up: the WR that does not fit is bad_wr, ENOMEM. */
	bad = NULL;
	CHECK_EQ(ibv_post_srq_recv(srq, &wr[1], &bad), ENOMEM);
	CHECK(bad == &wr[cap]);
	{
		struct sv_srq *s = sv_container_of(srq, struct sv_srq, ibv);

		CHECK_EQ(sv_wq_used(&s->rq), cap);
	}
	/* Resizing below what is queued fails; above keeps them in order. */
	a.max_wr = cap - 1;
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	a.max_wr = 64;
	CHECK_EQ(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), 0);
	for (i = 0; i < cap; i++) {
		CHECK_EQ(wqe_id(srq, i, &nsge, &lkey), 100 + i);
		CHECK_EQ(nsge, i == 1 ? 0 : 2);
		if (i != 1)
			CHECK_EQ(lkey, 0x11);
	}
	bad = NULL;
	CHECK_EQ(ibv_post_srq_recv(srq, &wr[7], &bad), 0);
	CHECK(bad == NULL);
	CHECK_EQ(wqe_id(srq, cap, &nsge, &lkey), 107);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
}

struct destroyer {
	struct ibv_srq *srq;
	atomic_int done;
	int ret;
};

static void *destroy_thread(void *arg)
{
	struct destroyer *d = arg;

	d->ret = ibv_destroy_srq(d->srq);
	atomic_store(&d->done, 1);
	return NULL;
}

static void test_srq_destroy(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_srq *srq = new_srq(4, 1);
	struct ibv_qp_init_attr ia;
	struct ibv_async_event ev, got;
	struct destroyer d = { 0 };
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	struct ibv_qp *qp;
	pthread_t t;

	REQUIRE(cq && srq);
	ia = (struct ibv_qp_init_attr){ .send_cq = cq,
					.recv_cq = cq,
					.srq = srq,
					.qp_type = IBV_QPT_RC,
					.cap = { .max_send_wr = 1,
						 .max_send_sge = 1 } };
	qp = ibv_create_qp(pd, &ia);
	REQUIRE(qp);
	CHECK_EQ(ibv_destroy_srq(srq), EBUSY);
	CHECK_EQ(ibv_destroy_qp(qp), 0);

	ev = (struct ibv_async_event){ .element.srq = srq,
				       .event_type =
					       IBV_EVENT_SRQ_LIMIT_REACHED };
	post_event(&ev);
	CHECK_EQ(ibv_get_async_event(ctx, &got), 0);
	CHECK(got.element.srq == srq);
	d.srq = srq;
	REQUIRE(pthread_create(&t, NULL, destroy_thread, &d) == 0);
	nanosleep(&ts, NULL);
	CHECK_EQ(atomic_load(&d.done), 0);
	ibv_ack_async_event(&got);
	pthread_join(t, NULL);
	CHECK_EQ(d.ret, 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
}

/* ---- AH ----------------------------------------------------------------- */

static int gid_index_of(const union ibv_gid *g)
{
	union ibv_gid x;

	for (int i = 0; i < 64; i++)
		if (ibv_query_gid(ctx, 1, i, &x) == 0 &&
		    !memcmp(&x, g, sizeof(x)))
			return i;
	return -1;
}

static int gid_count(void)
{
	union ibv_gid x;
	int n = 0;

	while (n < 64 && ibv_query_gid(ctx, 1, n, &x) == 0 &&
	       (x.global.subnet_prefix || x.global.interface_id))
		n++;
	return n;
}

static void v4gid(const char *ip, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	REQUIRE(inet_pton(AF_INET, ip, &g->raw[12]) == 1);
}

static void test_ah(void)
{
	struct ibv_ah_attr at;
	struct ibv_ah *ah;
	struct sv_ah *sah;
	union ibv_gid dst;
	int n = gid_count();

	REQUIRE(n > 0);
	v4gid("127.0.0.1", &dst);
	memset(&at, 0, sizeof(at));
	at.is_global = 1;
	at.port_num = 1;
	at.grh.dgid = dst;
	at.grh.sgid_index = 0;
	at.grh.hop_limit = 1;

#define AH_FAILS(change)                              \
	do {                                          \
		struct ibv_ah_attr b = at;            \
		change;                               \
		errno = 0;                            \
		CHECK(ibv_create_ah(pd, &b) == NULL); \
		CHECK_EQ(errno, EINVAL);              \
	} while (0)
	AH_FAILS(b.is_global = 0); /* RoCE needs a GRH */
	AH_FAILS(b.port_num = 0);
	AH_FAILS(b.port_num = 2);
	AH_FAILS(b.grh.sgid_index = (uint8_t)n);
	AH_FAILS(b.grh.sgid_index = 255);
#undef AH_FAILS
	errno = 0;
	CHECK(ibv_create_ah(NULL, &at) == NULL);
	CHECK_EQ(errno, EINVAL);

	ah = ibv_create_ah(pd, &at);
	REQUIRE(ah);
	CHECK(ah->pd == pd && ah->context == ctx);
	sah = sv_container_of(ah, struct sv_ah, ibv);
	CHECK_EQ(sah->dest.ss_family, AF_INET);
	CHECK_EQ(((struct sockaddr_in *)&sah->dest)->sin_addr.s_addr,
		 htonl(INADDR_LOOPBACK));
	CHECK(!memcmp(&sah->attr.grh.dgid, &dst, sizeof(dst)));
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_destroy_ah(ah), 0);

	/* An IPv6 GID stands for an IPv6 address. */
	memset(&at.grh.dgid, 0, sizeof(at.grh.dgid));
	at.grh.dgid.raw[0] = 0x20;
	at.grh.dgid.raw[1] = 0x01;
	at.grh.dgid.raw[15] = 0x05;
	at.grh.sgid_index = (uint8_t)(n - 1);
	ah = ibv_create_ah(pd, &at);
	REQUIRE(ah);
	sah = sv_container_of(ah, struct sv_ah, ibv);
	CHECK_EQ(sah->dest.ss_family, AF_INET6);
	CHECK(!memcmp(&((struct sockaddr_in6 *)&sah->dest)->sin6_addr,
		      at.grh.dgid.raw, 16));
	CHECK_EQ(ibv_destroy_ah(ah), 0);
}

/* A RoCE v2 IPv4 receive: the IPv4 header in bytes 20..39 of the GRH. */
static void ipv4_grh(struct ibv_grh *grh, const char *src, const char *dst,
		     uint8_t ttl, uint8_t tos)
{
	uint8_t *p = (uint8_t *)grh;
	struct iphdr *ip = (struct iphdr *)(p + 20);
	uint32_t sum = 0;

	memset(grh, 0, sizeof(*grh));
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = tos;
	ip->tot_len = htons(100);
	ip->ttl = ttl;
	ip->protocol = IPPROTO_UDP;
	REQUIRE(inet_pton(AF_INET, src, &ip->saddr) == 1);
	REQUIRE(inet_pton(AF_INET, dst, &ip->daddr) == 1);
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(p[20 + i] << 8 | p[20 + i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip->check = htons((uint16_t)~sum);
}

static void test_ah_from_wc(void)
{
	struct ibv_wc wc = { .wc_flags = IBV_WC_GRH, .slid = 7, .sl = 2 };
	struct ibv_ah_attr at;
	struct ibv_grh grh;
	union ibv_gid lo, peer, g0;
	struct ibv_ah *ah;

	v4gid("127.0.0.1", &lo);
	v4gid("10.1.2.3", &peer);
	REQUIRE(gid_index_of(&lo) >= 0);

	/* No GRH: a local-route address, which RoCE cannot use. */
	wc.wc_flags = 0;
	CHECK_EQ(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &at), 0);
	CHECK_EQ(at.is_global, 0);
	CHECK_EQ(at.dlid, 7);
	CHECK_EQ(at.sl, 2);
	CHECK_EQ(at.port_num, 1);
	errno = 0;
	CHECK(ibv_create_ah_from_wc(pd, &wc, &grh, 1) == NULL);
	CHECK_EQ(errno, EINVAL);
	wc.wc_flags = IBV_WC_GRH;

	/* IPv4: reply to the source, from the address it was sent to. */
	ipv4_grh(&grh, "10.1.2.3", "127.0.0.1", 33, 0x10);
	memset(&at, 0xa5, sizeof(at));
	CHECK_EQ(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &at), 0);
	CHECK_EQ(at.is_global, 1);
	CHECK(!memcmp(&at.grh.dgid, &peer, sizeof(peer)));
	CHECK_EQ(at.grh.sgid_index, gid_index_of(&lo));
	CHECK_EQ(at.grh.hop_limit, 33);
	CHECK_EQ(at.grh.traffic_class, 0x10);
	CHECK_EQ(at.port_num, 1);
	ah = ibv_create_ah_from_wc(pd, &wc, &grh, 1);
	CHECK(ah != NULL);
	if (ah) {
		struct sv_ah *sah = sv_container_of(ah, struct sv_ah, ibv);

		CHECK_EQ(((struct sockaddr_in *)&sah->dest)->sin_addr.s_addr,
			 inet_addr("10.1.2.3"));
		CHECK_EQ(ibv_destroy_ah(ah), 0);
	}
	/* Sent to an address that is not ours: no source GID to use. */
	ipv4_grh(&grh, "10.1.2.3", "192.0.2.77", 33, 0);
	errno = 0;
	CHECK_EQ(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &at), -1);
	CHECK_EQ(errno, ENOENT);
	/* Sent to a multicast group: cannot be a source. */
	ipv4_grh(&grh, "10.1.2.3", "239.1.2.3", 33, 0);
	errno = 0;
	CHECK_EQ(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &at), -1);
	CHECK_EQ(errno, EINVAL);
	/* A port that does not exist. */
	ipv4_grh(&grh, "10.1.2.3", "127.0.0.1", 33, 0);
	errno = 0;
	CHECK_EQ(ibv_init_ah_from_wc(ctx, 2, &wc, &grh, &at), -1);
	CHECK_EQ(errno, EINVAL);

	/* IPv6 header (the IPv4 test fails on it): swap the GIDs. */
	REQUIRE(ibv_query_gid(ctx, 1, 0, &g0) == 0);
	memset(&grh, 0, sizeof(grh));
	grh.version_tclass_flow = htonl(6u << 28 | 0x2au << 20 | 0x12345);
	grh.next_hdr = IPPROTO_UDP;
	grh.hop_limit = 9;
	memset(&grh.sgid, 0, sizeof(grh.sgid));
	grh.sgid.raw[0] = 0xfe;
	grh.sgid.raw[1] = 0x80;
	grh.sgid.raw[12] = 0x12;
	grh.sgid.raw[15] = 0x34;
	grh.dgid = g0;
	CHECK_EQ(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &at), 0);
	CHECK_EQ(at.is_global, 1);
	CHECK(!memcmp(&at.grh.dgid, &grh.sgid, sizeof(grh.sgid)));
	CHECK_EQ(at.grh.sgid_index, 0);
	CHECK_EQ(at.grh.hop_limit, 9);
	CHECK_EQ(at.grh.traffic_class, 0x2a);
	CHECK_EQ(at.grh.flow_label, 0x12345);
	/* Not RoCE v2 (not UDP): unsupported protocol. */
	grh.next_hdr = IPPROTO_TCP;
	errno = 0;
	CHECK_EQ(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &at), -1);
	CHECK_EQ(errno, EPROTONOSUPPORT);
	grh.next_hdr = IPPROTO_UDP;
	grh.dgid.raw[0] = 0xff; /* multicast destination */
	errno = 0;
	CHECK_EQ(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &at), -1);
	CHECK_EQ(errno, EINVAL);
	/* Neither an IPv4 nor an IPv6 header. */
	memset(&grh, 0, sizeof(grh));
	errno = 0;
	CHECK_EQ(ibv_init_ah_from_wc(ctx, 1, &wc, &grh, &at), -1);
	CHECK_EQ(errno, EPROTONOSUPPORT);

	/* No Ethernet resolution in user space. */
	uint8_t mac[6];
	uint16_t vid;

	CHECK_EQ(ibv_resolve_eth_l2_from_gid(ctx, &at, mac, &vid), -EOPNOTSUPP);
}

/* ---- multicast ---------------------------------------------------------- */

static int mcast_count(struct ibv_qp *qp)
{
	struct sv_qp *s = sv_container_of(qp, struct sv_qp, qpx.qp_base);
	struct list_node *it, *tmp;
	int n = 0;

	list_for_each_safe (&s->mcast, it, tmp)
		n++;
	return n;
}

static void test_mcast(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = { .send_cq = cq,
				       .recv_cq = cq,
				       .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 1,
						.max_recv_wr = 1,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };
	union ibv_gid m6 = { .raw = { 0xff, 0x0e, [15] = 1 } }, m6b = m6, m4,
		      uni;
	struct ibv_qp *ud, *rc;

	REQUIRE(cq);
	ud = ibv_create_qp(pd, &ia);
	ia.qp_type = IBV_QPT_RC;
	rc = ibv_create_qp(pd, &ia);
	REQUIRE(ud && rc);
	m6b.raw[15] = 2;
	v4gid("239.1.1.1", &m4);
	v4gid("10.0.0.1", &uni);

	CHECK_EQ(ibv_attach_mcast(rc, &m6, 0), EINVAL); /* UD only */
	CHECK_EQ(ibv_attach_mcast(ud, &uni, 0), EINVAL); /* not a group */
	CHECK_EQ(ibv_attach_mcast(ud, &m6, 0), 0);
	CHECK_EQ(ibv_attach_mcast(ud, &m6, 0), 0); /* once is enough */
	CHECK_EQ(mcast_count(ud), 1);
	CHECK_EQ(ibv_attach_mcast(ud, &m4, 0), 0);
	CHECK_EQ(mcast_count(ud), 2);
	CHECK_EQ(ibv_destroy_qp(ud), EBUSY); /* still attached */
	CHECK_EQ(ibv_detach_mcast(ud, &m6b, 0), EINVAL); /* never attached */
	CHECK_EQ(ibv_detach_mcast(ud, &uni, 0), EINVAL);
	CHECK_EQ(ibv_detach_mcast(rc, &m6, 0), EINVAL);
	CHECK_EQ(ibv_detach_mcast(ud, &m6, 0), 0);
	CHECK_EQ(ibv_detach_mcast(ud, &m6, 0), EINVAL); /* already gone */
	CHECK_EQ(ibv_detach_mcast(ud, &m4, 0), 0);
	CHECK_EQ(mcast_count(ud), 0);
	CHECK_EQ(ibv_destroy_qp(ud), 0);
	CHECK_EQ(ibv_destroy_qp(rc), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	REQUIRE(list && list[0]);
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	REQUIRE(ctx);
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);

	test_srq_create();
	test_srq_modify();
	test_post_srq_recv();
	test_srq_destroy();
	test_ah();
	test_ah_from_wc();
	test_mcast();

	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	return check_done();
}
