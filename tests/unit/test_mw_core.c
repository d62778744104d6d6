/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* White-box test of memory windows (core/mw.c and the window keys of
 * core/keys.c, compiled into this test): every bind and invalidate rule
 * of IBA 10.6.7 the code implements, the key lookups the data path makes
 * through a window (range, rights, PD and bound QP of the window, not of
 * the region), stale tags, and the region that cannot be retired while a
 * window is bound to it. */
#include "core/keys.c"
#include "core/mw.c"

#include <sched.h>

#include "check.h"

static struct sv_pd pd, pd2;
static struct sv_qp qp, qp_b, qp_other_pd;
static char buf[65536] __attribute__((aligned(4096)));

static void region(struct sv_mr *mr, struct sv_pd *p, void *va, uint64_t len,
		   unsigned int access)
{
	memset(mr, 0, sizeof(*mr));
	mr->pd = p;
	mr->va = (uintptr_t)va;
	mr->iova = (uintptr_t)va;
	mr->length = len;
	mr->access = access;
	atomic_init(&mr->refs, 0);
	atomic_init(&mr->state, SV_MR_INVALID);
	REQUIRE(sv_mr_publish(mr) == 0);
}

static enum ibv_wc_status do_bind(struct sv_qp *q, struct sv_mw *mw,
				  struct sv_mr *mr, uint64_t addr, uint64_t len,
				  unsigned int access, uint32_t rkey)
{
	struct sv_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.opcode = IBV_WR_BIND_MW;
	w.wr.bind.mw = mw;
	w.wr.bind.index = mw->index;
	w.wr.bind.rkey = rkey;
	w.wr.bind.addr = addr;
	w.wr.bind.length = len;
	w.wr.bind.mr_lkey = mr ? mr->ibv.lkey : 0;
	w.wr.bind.access = access;
	return sv_mw_bind(q, &w);
}

/* Can qp reach [iova, iova+len) under rkey with access? */
static bool reach(uint32_t rkey, struct sv_qp *q, uint64_t iova, uint64_t len,
		  unsigned int access, void **where)
{
	struct sv_mr *m = sv_mr_get_by_rkey(rkey);
	void *p = sv_mr_check_qp(m, q, q->pd, iova, len, access);

	if (m)
		sv_mr_put(m);
	if (where)
		*where = p;
	return p != NULL;
}

#define RW (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define ALL_MR                                               \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
	 IBV_ACCESS_MW_BIND)

static void test_alloc(void)
{
	struct sv_mw *a, *b;

	errno = 0;
	CHECK(sv_mw_new(&pd, 3) == NULL && errno == EINVAL);
	CHECK(sv_mw_new(&pd, 0) == NULL && errno == EINVAL);
	CHECK(sv_mw_new(NULL, IBV_MW_TYPE_1) == NULL && errno == EINVAL);
	a = sv_mw_new(&pd, IBV_MW_TYPE_1);
	b = sv_mw_new(&pd, IBV_MW_TYPE_2);
	REQUIRE(a && b);
	CHECK_EQ(atomic_load(&pd.users), 2);
	CHECK_EQ(a->ibv.type, IBV_MW_TYPE_1);
	CHECK_EQ(b->ibv.type, IBV_MW_TYPE_2);
	CHECK(a->ibv.pd == &pd.ibv);
	/* Window keys have bit 31 set, distinct indexes, and name nothing
	 * until bound. */
	CHECK(a->ibv.rkey & SV_MW_KEY_BIT);
	CHECK(b->ibv.rkey & SV_MW_KEY_BIT);
	CHECK(a->index != b->index);
	CHECK_EQ(a->index, a->ibv.rkey >> 8);
	CHECK(sv_mr_get_by_rkey(a->ibv.rkey) == NULL);
	CHECK(sv_mr_get_by_rkey(b->ibv.rkey) == NULL);
	sv_mw_free(a);
	sv_mw_free(b);
	CHECK_EQ(atomic_load(&pd.users), 0);
}

static void test_region_keys(void)
{
	struct sv_mr mrs[64];
	int i;

	/* Region R_Keys never have bit 31: they cannot meet a window's. */
	for (i = 0; i < 64; i++) {
		region(&mrs[i], &pd, buf, 4096, ALL_MR);
		CHECK(!(mrs[i].ibv.rkey & SV_MW_KEY_BIT));
	}
	for (i = 0; i < 64; i++)
		sv_mr_unpublish(&mrs[i]);
}

static void test_type1(void)
{
	struct sv_mr mr, ro, nolw;
	struct sv_mw *mw = sv_mw_new(&pd, IBV_MW_TYPE_1);
	uint64_t base = (uintptr_t)buf;
	uint32_t k1, k2;
	void *p;

	REQUIRE(mw);
	region(&mr, &pd, buf, sizeof(buf), ALL_MR);
	k1 = ibv_inc_rkey(mw->ibv.rkey);
	CHECK_EQ(do_bind(&qp, mw, &mr, base + 4096, 8192,
			 IBV_ACCESS_REMOTE_READ, k1),
		 IBV_WC_SUCCESS);
	CHECK_EQ(mr.mw_binds, 1);
	/* The window's range and rights, not the region's. */
	CHECK(reach(k1, &qp, base + 4096, 8192, IBV_ACCESS_REMOTE_READ, &p));
	CHECK(p == buf + 4096);
	CHECK(reach(k1, &qp, base + 4096 + 100, 10, IBV_ACCESS_REMOTE_READ,
		    &p));
	CHECK(p == buf + 4196);
	CHECK(!reach(k1, &qp, base + 4095, 2, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK(!reach(k1, &qp, base + 4096 + 8192 - 1, 2, IBV_ACCESS_REMOTE_READ,
		     NULL));
	CHECK(!reach(k1, &qp, base + 4096, 8193, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK(!reach(k1, &qp, base + 4096, 8, IBV_ACCESS_REMOTE_WRITE, NULL));
	CHECK(!reach(k1, &qp, base + 4096, 8, IBV_ACCESS_REMOTE_ATOMIC, NULL));
	/* Type 1: any QP of the PD, none of another PD. */
	CHECK(reach(k1, &qp_b, base + 4096, 8, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK(!reach(k1, &qp_other_pd, base + 4096, 8, IBV_ACCESS_REMOTE_READ,
		     NULL));
	/* Another tag of the same index is not the key. */
	CHECK(!reach(k1 ^ 0x01, &qp, base + 4096, 8, IBV_ACCESS_REMOTE_READ,
		     NULL));
	CHECK(!reach(mw->ibv.rkey, &qp, base + 4096, 8, IBV_ACCESS_REMOTE_READ,
		     NULL));
	/* The region itself is untouched. */
	CHECK(reach(mr.ibv.rkey, &qp, base, sizeof(buf),
		    IBV_ACCESS_REMOTE_WRITE, NULL));
	/* ibv_dereg_mr: EBUSY while bound. */
	CHECK_EQ(sv_mw_mr_retire(&mr), EBUSY);
	CHECK_EQ(atomic_load(&mr.state), SV_MR_VALID);

	/* Binding again (type 1 may) replaces the binding: the old key
	 * stops working, the new range and rights apply. */
	k2 = ibv_inc_rkey(k1);
	CHECK_EQ(do_bind(&qp, mw, &mr, base, 4096,
			 RW | IBV_ACCESS_REMOTE_ATOMIC, k2),
		 IBV_WC_SUCCESS);
	CHECK_EQ(mr.mw_binds, 1);
	CHECK(!reach(k1, &qp, base + 4096, 8, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK(reach(k2, &qp, base, 4096, IBV_ACCESS_REMOTE_WRITE, NULL));
	CHECK(reach(k2, &qp, base + 8, 8, IBV_ACCESS_REMOTE_ATOMIC, NULL));
	CHECK(!reach(k2, &qp, base + 4096, 8, IBV_ACCESS_REMOTE_READ, NULL));

	/* A zero length unbinds (man ibv_alloc_mw). */
	CHECK_EQ(do_bind(&qp, mw, NULL, 0, 0, 0, ibv_inc_rkey(k2)),
		 IBV_WC_SUCCESS);
	CHECK_EQ(mr.mw_binds, 0);
	CHECK(!reach(k2, &qp, base, 8, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK(!reach(ibv_inc_rkey(k2), &qp, base, 8, 0, NULL));

	/* Rules of a bind (each a IBV_WC_MW_BIND_ERR). */
	k1 = ibv_inc_rkey(k2);
	/* o10-36.2.2: type 1 windows are not zero based */
	CHECK_EQ(do_bind(&qp, mw, &mr, base, 64,
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED, k1),
		 IBV_WC_MW_BIND_ERR);
	/* C10-72: the QP's PD */
	CHECK_EQ(do_bind(&qp_other_pd, mw, &mr, base, 64,
			 IBV_ACCESS_REMOTE_READ, k1),
		 IBV_WC_MW_BIND_ERR);
	/* C10-73: region without MW_BIND */
	region(&ro, &pd, buf, sizeof(buf),
	       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK_EQ(do_bind(&qp, mw, &ro, base, 64, IBV_ACCESS_REMOTE_READ, k1),
		 IBV_WC_MW_BIND_ERR);
	/* C10-74: remote write needs local write on the region */
	region(&nolw, &pd, buf, sizeof(buf),
	       IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ);
	CHECK_EQ(do_bind(&qp, mw, &nolw, base, 64, IBV_ACCESS_REMOTE_WRITE, k1),
		 IBV_WC_MW_BIND_ERR);
	CHECK_EQ(do_bind(&qp, mw, &nolw, base, 64, IBV_ACCESS_REMOTE_ATOMIC,
			 k1),
		 IBV_WC_MW_BIND_ERR);
	/* ... but read-only through it is fine */
	CHECK_EQ(do_bind(&qp, mw, &nolw, base, 64, IBV_ACCESS_REMOTE_READ, k1),
		 IBV_WC_SUCCESS);
	CHECK(reach(k1, &qp, base, 64, IBV_ACCESS_REMOTE_READ, NULL));
	/* C10-75: inside the region, overflow-safe */
	k2 = ibv_inc_rkey(k1);
	CHECK_EQ(do_bind(&qp, mw, &mr, base - 1, 64, IBV_ACCESS_REMOTE_READ,
			 k2),
		 IBV_WC_MW_BIND_ERR);
	CHECK_EQ(do_bind(&qp, mw, &mr, base + sizeof(buf) - 63, 64,
			 IBV_ACCESS_REMOTE_READ, k2),
		 IBV_WC_MW_BIND_ERR);
	CHECK_EQ(do_bind(&qp, mw, &mr, base + 64, UINT64_MAX - 32,
			 IBV_ACCESS_REMOTE_READ, k2),
		 IBV_WC_MW_BIND_ERR);
	/* A failed bind leaves the window as it was. */
	CHECK(reach(k1, &qp, base, 64, IBV_ACCESS_REMOTE_READ, NULL));
	/* Unknown rights */
	CHECK_EQ(do_bind(&qp, mw, &mr, base, 64, 1u << 12, k2),
		 IBV_WC_MW_BIND_ERR);
	/* A region of another PD */
	{
		struct sv_mr other;

		region(&other, &pd2, buf, sizeof(buf), ALL_MR);
		CHECK_EQ(do_bind(&qp, mw, &other, base, 64,
				 IBV_ACCESS_REMOTE_READ, k2),
			 IBV_WC_MW_BIND_ERR);
		sv_mr_unpublish(&other);
	}
	/* A region being deregistered cannot be bound */
	{
		struct sv_mr gone;

		region(&gone, &pd, buf, sizeof(buf), ALL_MR);
		CHECK_EQ(sv_mw_mr_retire(&gone), 0);
		CHECK_EQ(do_bind(&qp, mw, &gone, base, 64,
				 IBV_ACCESS_REMOTE_READ, k2),
			 IBV_WC_MW_BIND_ERR);
		sv_mr_unpublish(&gone);
	}
	/* Type 1 windows are not invalidated by WRs (o10-37.2.26). */
	CHECK_EQ(sv_mw_local_inv(&qp, k1), IBV_WC_MW_BIND_ERR);
	CHECK_EQ(sv_mw_remote_inv(&qp, k1), EINVAL);
	CHECK(reach(k1, &qp, base, 64, IBV_ACCESS_REMOTE_READ, NULL));

	/* Deallocation takes the binding away and releases the region. */
	CHECK_EQ(nolw.mw_binds, 1);
	sv_mw_free(mw);
	CHECK_EQ(nolw.mw_binds, 0);
	CHECK(!reach(k1, &qp, base, 64, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK_EQ(sv_mw_mr_retire(&nolw), 0);
	sv_mr_unpublish(&nolw);
	sv_mr_unpublish(&ro);
	sv_mr_unpublish(&mr);
}

static void test_type2(void)
{
	struct sv_mr mr;
	struct sv_mw *mw = sv_mw_new(&pd, IBV_MW_TYPE_2);
	uint64_t base = (uintptr_t)buf;
	uint32_t k;
	void *p;

	REQUIRE(mw);
	region(&mr, &pd, buf, sizeof(buf), ALL_MR);
	k = ibv_inc_rkey(mw->ibv.rkey);
	/* o10-37.2.40: never with a zero length or no region */
	CHECK_EQ(do_bind(&qp, mw, NULL, 0, 0, 0, k), IBV_WC_MW_BIND_ERR);
	/* C10-72 */
	CHECK_EQ(do_bind(&qp_other_pd, mw, &mr, base, 64, RW, k),
		 IBV_WC_MW_BIND_ERR);
	/* zero based: remote addresses are offsets in the window */
	CHECK_EQ(do_bind(&qp, mw, &mr, base + 8192, 4096,
			 RW | IBV_ACCESS_ZERO_BASED, k),
		 IBV_WC_SUCCESS);
	CHECK(reach(k, &qp, 0, 4096, IBV_ACCESS_REMOTE_WRITE, &p));
	CHECK(p == buf + 8192);
	CHECK(reach(k, &qp, 100, 8, IBV_ACCESS_REMOTE_READ, &p));
	CHECK(p == buf + 8292);
	CHECK(!reach(k, &qp, base + 8192, 8, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK(!reach(k, &qp, 4090, 8, IBV_ACCESS_REMOTE_READ, NULL));
	/* Bound to qp: another QP of the same PD is refused. */
	CHECK(!reach(k, &qp_b, 0, 8, IBV_ACCESS_REMOTE_READ, NULL));
	/* o10-37.2.30: a bound type 2 window cannot be bound again */
	CHECK_EQ(do_bind(&qp, mw, &mr, base, 64, RW, ibv_inc_rkey(k)),
		 IBV_WC_MW_BIND_ERR);
	CHECK(reach(k, &qp, 0, 8, IBV_ACCESS_REMOTE_READ, NULL));
	/* Invalidation: the right key, a type 2 window, the PD; remotely
	 * only from the QP it is bound to. */
	CHECK_EQ(sv_mw_local_inv(&qp, k ^ 0x80), IBV_WC_MW_BIND_ERR);
	CHECK_EQ(sv_mw_local_inv(&qp, mr.ibv.rkey), IBV_WC_MW_BIND_ERR);
	CHECK_EQ(sv_mw_local_inv(&qp_other_pd, k), IBV_WC_MW_BIND_ERR);
	CHECK_EQ(sv_mw_remote_inv(&qp_b, k), EINVAL);
	CHECK_EQ(sv_mw_remote_inv(&qp, mr.ibv.rkey), EINVAL);
	CHECK(reach(k, &qp, 0, 8, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK_EQ(sv_mw_remote_inv(&qp, k), 0);
	CHECK(!reach(k, &qp, 0, 8, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK_EQ(mr.mw_binds, 0);
	/* Freed: invalidating again fails, binding again works. */
	CHECK_EQ(sv_mw_remote_inv(&qp, k), EINVAL);
	CHECK_EQ(sv_mw_local_inv(&qp, k), IBV_WC_MW_BIND_ERR);
	k = ibv_inc_rkey(k);
	CHECK_EQ(do_bind(&qp_b, mw, &mr, base, 4096, IBV_ACCESS_REMOTE_READ, k),
		 IBV_WC_SUCCESS);
	CHECK(reach(k, &qp_b, base, 8, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK(!reach(k, &qp, base, 8, IBV_ACCESS_REMOTE_READ, NULL));
	/* LOCAL_INV from any QP of the PD */
	CHECK_EQ(sv_mw_local_inv(&qp, k), IBV_WC_SUCCESS);
	CHECK(!reach(k, &qp_b, base, 8, IBV_ACCESS_REMOTE_READ, NULL));
	/* The QP it is bound to goes away: the window is free again. */
	k = ibv_inc_rkey(k);
	CHECK_EQ(do_bind(&qp, mw, &mr, base, 4096, IBV_ACCESS_REMOTE_READ, k),
		 IBV_WC_SUCCESS);
	CHECK_EQ(mr.mw_binds, 1);
	sv_mw_qp_gone(&qp_b);
	CHECK(reach(k, &qp, base, 8, IBV_ACCESS_REMOTE_READ, NULL));
	sv_mw_qp_gone(&qp);
	CHECK(!reach(k, &qp, base, 8, IBV_ACCESS_REMOTE_READ, NULL));
	CHECK_EQ(mr.mw_binds, 0);

	/* A bind WQE whose window is gone by the time it runs. */
	{
		struct sv_mw *old = mw;
		struct sv_send_wqe w;
		uint32_t index = mw->index;

		sv_mw_free(mw);
		memset(&w, 0, sizeof(w));
		w.opcode = IBV_WR_BIND_MW;
		w.wr.bind.mw = old;
		w.wr.bind.index = index;
		w.wr.bind.rkey = 1;
		w.wr.bind.addr = base;
		w.wr.bind.length = 64;
		w.wr.bind.mr_lkey = mr.ibv.lkey;
		w.wr.bind.access = IBV_ACCESS_REMOTE_READ;
		CHECK_EQ(sv_mw_bind(&qp, &w), IBV_WC_MW_BIND_ERR);
		/* ... or whose region is gone */
		mw = sv_mw_new(&pd, IBV_MW_TYPE_2);
		REQUIRE(mw);
		w.wr.bind.mw = mw;
		w.wr.bind.index = mw->index;
		w.wr.bind.mr_lkey = mr.ibv.lkey ^ 0x5a5a5a5a;
		CHECK_EQ(sv_mw_bind(&qp, &w), IBV_WC_MW_BIND_ERR);
		sv_mw_free(mw);
	}
	sv_mr_unpublish(&mr);
}

/* A window bound and invalidated while another thread keeps looking it
 * up and writing through it: every access lands in the window or is
 * refused, and invalidation waits for the accesses in flight. */
static struct sv_mw *race_mw;
static _Atomic uint32_t race_key;
static atomic_bool race_stop;
static atomic_long race_hits, race_bad;

static void *race_reader(void *arg)
{
	while (!atomic_load(&race_stop)) {
		uint32_t k = atomic_load(&race_key);
		struct sv_mr *m = sv_mr_get_by_rkey(k);

		if (m) {
			char *p = sv_mr_check_qp(m, &qp, qp.pd, 0, 64,
						 IBV_ACCESS_REMOTE_WRITE);

			/* Refused (the invalidation began after the lookup:
			 * the window is already unusable) or exactly the
			 * window's memory; never anything else. */
			if (p == buf) {
				memset(p, 0x5a, 64);
				atomic_fetch_add(&race_hits, 1);
			} else if (p) {
				atomic_fetch_add(&race_bad, 1);
			}
			sv_mr_put(m);
		}
	}
	return NULL;
}

static void test_race(void)
{
	struct sv_mr mr;
	pthread_t th;
	uint32_t k;
	int i;

	race_mw = sv_mw_new(&pd, IBV_MW_TYPE_2);
	REQUIRE(race_mw);
	region(&mr, &pd, buf, sizeof(buf), ALL_MR);
	k = race_mw->ibv.rkey;
	pthread_create(&th, NULL, race_reader, NULL);
	for (i = 0; i < 5000; i++) {
		k = ibv_inc_rkey(k);
		CHECK_EQ(do_bind(&qp, race_mw, &mr, (uintptr_t)buf, 64,
				 RW | IBV_ACCESS_ZERO_BASED, k),
			 IBV_WC_SUCCESS);
		atomic_store(&race_key, k);
		/* Give the reader a chance to use this binding. */
		for (long seen = atomic_load(&race_hits), n = 0;
		     atomic_load(&race_hits) == seen && n < 2000; n++)
			sched_yield();
		CHECK_EQ(sv_mw_local_inv(&qp, k), IBV_WC_SUCCESS);
	}
	atomic_store(&race_stop, true);
	pthread_join(th, NULL);
	CHECK_EQ(atomic_load(&race_bad), 0);
	printf("race: %ld accesses through the window\n",
	       atomic_load(&race_hits));
	sv_mw_free(race_mw);
	CHECK_EQ(sv_mw_mr_retire(&mr), 0);
	sv_mr_unpublish(&mr);
}

int main(void)
{
	atomic_init(&pd.users, 0);
	atomic_init(&pd2.users, 0);
	qp.pd = &pd;
	qp_b.pd = &pd;
	qp_other_pd.pd = &pd2;
	test_alloc();
	test_region_keys();
	test_type1();
	test_type2();
	test_race();
	CHECK_EQ(atomic_load(&pd.users), 0);
	return check_done();
}
