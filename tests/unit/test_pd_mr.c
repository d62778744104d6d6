/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* PD and MR rules: access flags, ranges, unmapped memory, pages the
 * access may not use (EFAULT as the kernel's pinning: writable rights on a
 * read-only mapping, anything on PROT_NONE), keys, rereg, EBUSY on a PD in
 * use, import within the process, and the entry points that answer
 * EOPNOTSUPP; a registration's pages present when it returns, as the
 * kernel's pinning leaves them, within the bounds of the kernel's
 * pinning. */
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "ctx.h"

/* Expect registration to fail with err (access passed at run time so the
 * header's dispatcher cannot pick a variant at compile time). */
static void reg_fails(struct ibv_pd *pd, void *addr, size_t len, int access,
		      int err, int line)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr(pd, addr, len, access);
	if (mr || errno != err) {
		fprintf(stderr,
			"line %d: reg_mr(len %zu, access %#x) -> %p errno %d, want errno %d\n",
			line, len, access, (void *)mr, errno, err);
		check_failed++;
		if (mr)
			ibv_dereg_mr(mr);
		return;
	}
	check_passed++;
}

static void test_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	REQUIRE(pd);
	CHECK(pd->context == ctx);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

static void test_access_rules(struct ibv_pd *pd, char *buf, size_t len)
{
	volatile int acc;
	struct ibv_mr *mr;

	reg_fails(pd, buf, len, 1 << 8, EINVAL, __LINE__); /* unknown bit */
	reg_fails(pd, buf, len, 1 << 15, EINVAL, __LINE__);
	reg_fails(pd, buf, len, IBV_ACCESS_REMOTE_WRITE, EINVAL, __LINE__);
	reg_fails(pd, buf, len, IBV_ACCESS_REMOTE_ATOMIC, EINVAL, __LINE__);
	reg_fails(pd, buf, len,
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, EINVAL,
		  __LINE__);
	/* A zero length is a region, as the kernel and rxe make it. */
	mr = ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	CHECK_EQ(mr->length, 0);
	CHECK(mr->addr == buf && mr->lkey != 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	reg_fails(pd, (void *)(UINTPTR_MAX - 4095), 8192, 0, EINVAL, __LINE__);
	reg_fails(NULL, buf, len, 0, EINVAL, __LINE__);

	/* Legal combinations, including read-only and remote read alone. */
	static const int ok[] = {
		0,
		IBV_ACCESS_LOCAL_WRITE,
		IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_MW_BIND,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING,
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		acc = ok[i];
		mr = ibv_reg_mr(pd, buf, len, acc);
		CHECK(mr != NULL);
		if (!mr)
			continue;
		CHECK(mr->addr == buf);
		CHECK_EQ(mr->length, len);
		CHECK(mr->pd == pd);
		CHECK(mr->context == pd->context);
		CHECK(mr->lkey != 0 && mr->rkey != 0);
		CHECK_EQ(ibv_dereg_mr(mr), 0);
	}
	/* Any bit of the optional range is a hint: accepted, ignored. */
	mr = ibv_reg_mr_iova2(pd, buf, len, (uintptr_t)buf,
			      IBV_ACCESS_LOCAL_WRITE | (1u << 25));
	CHECK(mr != NULL);
	if (mr)
		CHECK_EQ(ibv_dereg_mr(mr), 0);
}

static void test_unmapped(struct ibv_pd *pd)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	REQUIRE(p != MAP_FAILED);
	REQUIRE(munmap(p + page, page) == 0); /* hole in the middle */
	mr = ibv_reg_mr(pd, p, page, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL);
	if (mr)
		CHECK_EQ(ibv_dereg_mr(mr), 0);
	reg_fails(pd, p, 3 * page, IBV_ACCESS_LOCAL_WRITE, EFAULT, __LINE__);
	reg_fails(pd, p + page, 1, 0, EFAULT, __LINE__);
	/* One byte past the mapping end already reaches the hole. */
	reg_fails(pd, p, page + 1, 0, EFAULT, __LINE__);
	reg_fails(pd, NULL, 64, 0, EFAULT, __LINE__);
	munmap(p, page);
	munmap(p + 2 * page, page);
}

/* Expect registration to succeed (and deregister). */
static void reg_ok(struct ibv_pd *pd, void *addr, size_t len, int access,
		   int line)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr) {
		fprintf(stderr,
			"line %d: reg_mr(access %#x) failed: errno %d\n", line,
			access, errno);
		check_failed++;
		return;
	}
	check_passed++;
	CHECK_EQ(ibv_dereg_mr(mr), 0);
}

/* The kernel pins a registration's pages with get_user_pages, for
 * writing when the access has LOCAL_WRITE, REMOTE_WRITE, REMOTE_ATOMIC
 * or MW_BIND (ib_access_writable): a page it may not access that way
 * fails the registration with EFAULT. */
static void test_protection(struct ibv_pd *pd)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const int writes[] = {
		IBV_ACCESS_LOCAL_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_MW_BIND,
	};
	struct ibv_mr *mr;
	unsigned int i;
	int rc;

	REQUIRE(p != MAP_FAILED);
	/* page 0 read-write, page 1 read-only, page 2 PROT_NONE */
	REQUIRE(mprotect(p + page, page, PROT_READ) == 0);
	REQUIRE(mprotect(p + 2 * page, page, PROT_NONE) == 0);
	for (i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		reg_ok(pd, p, page, writes[i], __LINE__);
		reg_fails(pd, p + page, page, writes[i], EFAULT, __LINE__);
		/* One byte of the read-only page is enough. */
		reg_fails(pd, p + page - 1, 2, writes[i], EFAULT, __LINE__);
		reg_fails(pd, p, 2 * page, writes[i], EFAULT, __LINE__);
	}
	/* Read-only rights on a read-only page: fine. */
	reg_ok(pd, p + page, page, 0, __LINE__);
	reg_ok(pd, p + page, page, IBV_ACCESS_REMOTE_READ, __LINE__);
	reg_ok(pd, p, 2 * page, IBV_ACCESS_REMOTE_READ, __LINE__);
	/* PROT_NONE: nothing may be pinned there. */
	reg_fails(pd, p + 2 * page, page, 0, EFAULT, __LINE__);
	reg_fails(pd, p + 2 * page, 8, IBV_ACCESS_REMOTE_READ, EFAULT,
		  __LINE__);
	reg_fails(pd, p, 3 * page, IBV_ACCESS_REMOTE_READ, EFAULT, __LINE__);
	reg_fails(pd, p + 2 * page, page, IBV_ACCESS_LOCAL_WRITE, EFAULT,
		  __LINE__);
	/* The iova variants check the same pages. */
	errno = 0;
	CHECK(ibv_reg_mr_iova2(pd, p + page, page, 0x10000,
			       IBV_ACCESS_LOCAL_WRITE) == NULL);
	CHECK_EQ(errno, EFAULT);
	errno = 0;
	CHECK(ibv_reg_mr_iova(pd, p + page, page, 0x10000,
			      IBV_ACCESS_LOCAL_WRITE) == NULL);
	CHECK_EQ(errno, EFAULT);

	/* rereg: new rights are checked against the pages, and a new
	 * translation against the rights; a refusal leaves the MR as it
	 * was. */
	mr = ibv_reg_mr(pd, p + page, page, IBV_ACCESS_REMOTE_READ);
	REQUIRE(mr);
	errno = 0;
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE);
	CHECK_EQ(rc, IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EFAULT);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, p,
			      page, 0),
		 0);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE),
		 0);
	errno = 0;
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, p + page,
			  page, 0);
	CHECK_EQ(rc, IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EFAULT);
	errno = 0;
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			  p + 2 * page, page, 0);
	CHECK_EQ(rc, IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EFAULT);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	munmap(p, 3 * page);
}

static void test_iova(struct ibv_pd *pd, char *buf, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t off = (uintptr_t)buf & (page - 1);
	struct ibv_mr *mr;

	mr = ibv_reg_mr_iova(pd, buf, len, 0x100000000ULL + off,
			     IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL);
	if (mr) {
		CHECK(mr->addr == buf);
		CHECK_EQ(ibv_dereg_mr(mr), 0);
	}
	/* The kernel requires the iova to keep the address's page offset. */
	errno = 0;
	mr = ibv_reg_mr_iova(pd, buf, len,
			     0x100000000ULL + ((off + 8) & (page - 1)),
			     IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr == NULL);
	CHECK_EQ(errno, EINVAL);
	/* iova + length wrapping around 2^64 */
	errno = 0;
	mr = ibv_reg_mr_iova(pd, buf, len,
			     (UINT64_MAX & ~(uint64_t)(page - 1)) + off,
			     IBV_ACCESS_LOCAL_WRITE);
	if (off + len > (uint64_t)page) {
		CHECK(mr == NULL);
		CHECK_EQ(errno, EINVAL);
	} else if (mr) {
		ibv_dereg_mr(mr);
	}
}

static void test_keys_and_busy(struct ibv_context *ctx, char *buf, size_t len)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr[8];
	int i, j;

	REQUIRE(pd);
	for (i = 0; i < 8; i++) {
		mr[i] = ibv_reg_mr(pd, buf, len,
				   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_READ);
		REQUIRE(mr[i]);
	}
	/* Keys are random: lkey and rkey differ, and no key repeats. */
	for (i = 0; i < 8; i++) {
		CHECK(mr[i]->lkey != mr[i]->rkey);
		for (j = 0; j < i; j++) {
			CHECK(mr[i]->lkey != mr[j]->lkey);
			CHECK(mr[i]->rkey != mr[j]->rkey);
		}
	}
	/* Not a counter: consecutive keys are not adjacent. */
	CHECK(mr[1]->lkey - mr[0]->lkey > 256 ||
	      mr[0]->lkey - mr[1]->lkey > 256);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	for (i = 0; i < 7; i++)
		CHECK_EQ(ibv_dereg_mr(mr[i]), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_dereg_mr(mr[7]), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

static void test_rereg(struct ibv_context *ctx, char *buf, size_t len)
{
	struct ibv_pd *pd1 = ibv_alloc_pd(ctx), *pd2 = ibv_alloc_pd(ctx);
	long page = sysconf(_SC_PAGESIZE);
	char *other = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;
	uint32_t lkey, rkey;

	REQUIRE(pd1 && pd2 && other != MAP_FAILED);
	mr = ibv_reg_mr(pd1, buf, len, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	lkey = mr->lkey;
	rkey = mr->rkey;

	/* Input errors detected before any change: IBV_REREG_MR_ERR_INPUT. */
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, 1 << 3, NULL, NULL, 0, 0),
		 IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL,
			      0, 0),
		 IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE),
		 IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(errno, EINVAL);
	/* Errors of the change itself: IBV_REREG_MR_ERR_CMD. */
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_REMOTE_WRITE),
		 IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_ON_DEMAND),
		 IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0),
		 IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EINVAL);
	REQUIRE(munmap(other + page, page) == 0);
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, other,
			      2 * page, 0),
		 IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EFAULT);
	/* None of the failures touched the MR. */
	CHECK_EQ(mr->lkey, lkey);
	CHECK_EQ(mr->rkey, rkey);
	CHECK(mr->addr == buf);

	/* Successful changes keep the keys, as rxe and mlx5 do: a peer
	 * holding the R_Key reaches the region as it now is. */
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
		 0);
	CHECK_EQ(mr->lkey, lkey);
	CHECK_EQ(mr->rkey, rkey);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, other,
			      page, 0),
		 0);
	CHECK(mr->addr == other);
	CHECK_EQ(mr->length, page);
	CHECK_EQ(mr->lkey, lkey);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0), 0);
	CHECK(mr->pd == pd2);
	CHECK_EQ(mr->rkey, rkey);
	/* The MR's use moved from pd1 to pd2. */
	CHECK_EQ(ibv_dealloc_pd(pd2), EBUSY);
	CHECK_EQ(ibv_dealloc_pd(pd1), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	munmap(other, page);
}

static void test_unsupported(struct ibv_context *ctx, struct ibv_pd *pd)
{
	errno = 0;
	CHECK(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, 0, IBV_ACCESS_LOCAL_WRITE) ==
	      NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
}

/* ibv_import_device/pd/mr within the process: handles on the same
 * objects, refusals with the errno of each case. */
static void test_import(struct ibv_context *ctx, char *buf, size_t len)
{
	struct ibv_context *ctx2;
	struct ibv_pd *pd, *pd2, *other;
	struct ibv_mr *mr, *mr2, *mr3;
	uint32_t handle;
	int devnull;

	CHECK(ctx->cmd_fd >= 0);
	errno = 0;
	CHECK(ibv_import_device(-1) == NULL);
	CHECK_EQ(errno, EBADF);
	devnull = open("/dev/null", O_RDWR);
	REQUIRE(devnull >= 0);
	errno = 0;
	CHECK(ibv_import_device(devnull) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(close(devnull), 0); /* still ours after a failed import */

	ctx2 = ibv_import_device(dup(ctx->cmd_fd));
	REQUIRE(ctx2);
	CHECK(ctx2 != ctx);
	CHECK(ctx2->device == ctx->device);
	pd = ibv_alloc_pd(ctx);
	other = ibv_alloc_pd(ctx);
	REQUIRE(pd && other);
	CHECK(pd->handle != other->handle);
	errno = 0;
	CHECK(ibv_import_pd(ctx2, 4242) == NULL);
	CHECK_EQ(errno, EINVAL);
	pd2 = ibv_import_pd(ctx2, pd->handle);
	REQUIRE(pd2);
	CHECK(pd2->context == ctx2);
	CHECK_EQ(pd2->handle, pd->handle);

	mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	mr3 = ibv_reg_mr(other, buf, len, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr && mr3);
	/* an MR handle names an MR, not a PD, and only with its own PD */
	errno = 0;
	CHECK(ibv_import_mr(pd2, pd->handle) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(ibv_import_mr(pd2, mr3->handle) == NULL);
	CHECK_EQ(errno, EINVAL);
	mr2 = ibv_import_mr(pd2, mr->handle);
	REQUIRE(mr2);
	CHECK_EQ(mr2->lkey, mr->lkey);
	CHECK_EQ(mr2->rkey, mr->rkey);
	CHECK(mr2->addr == mr->addr);
	CHECK_EQ(mr2->length, mr->length);
	CHECK(mr2->pd == pd2);
	CHECK(mr2->context == ctx2);
	/* the PD is one object: in use through either handle */
	CHECK_EQ(ibv_dealloc_pd(pd2), EBUSY);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	ibv_unimport_mr(mr2);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dereg_mr(mr3), 0);
	/* destroying through the imported handle destroys the PD */
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	handle = other->handle;
	pd2 = ibv_import_pd(ctx2, handle);
	REQUIRE(pd2);
	{
		/* A QP and an SRQ on the imported handle outlive it: their
		 * destroy must not read the unimported handle (ASan, as
		 * pyverbs' shared-PD test did). */
		struct ibv_cq *cq = ibv_create_cq(ctx2, 4, NULL, NULL, 0);
		struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 1,
							.max_recv_wr = 1,
							.max_send_sge = 1,
							.max_recv_sge = 1 } };
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1,
							  .max_sge = 1 } };
		struct ibv_qp *qp;
		struct ibv_srq *srq;

		REQUIRE(cq);
		qa.send_cq = qa.recv_cq = cq;
		qp = ibv_create_qp(pd2, &qa);
		srq = ibv_create_srq(pd2, &sa);
		REQUIRE(qp && srq);
		ibv_unimport_pd(pd2);
		CHECK_EQ(ibv_dealloc_pd(other), EBUSY);
		CHECK_EQ(ibv_destroy_qp(qp), 0);
		CHECK_EQ(ibv_destroy_srq(srq), 0);
		CHECK_EQ(ibv_destroy_cq(cq), 0);
	}
	CHECK_EQ(ibv_dealloc_pd(other), 0);
	errno = 0;
	CHECK(ibv_import_pd(ctx2, handle) == NULL); /* gone */
	CHECK_EQ(errno, EINVAL);

	/* device memory: one allocation seen through both handles */
	struct ibv_alloc_dm_attr da = { .length = 4096 };
	struct ibv_dm *dm = ibv_alloc_dm(ctx, &da), *dm2;
	uint32_t word = 0x5a5aa5a5, back = 0;

	REQUIRE(dm);
	errno = 0;
	CHECK(ibv_import_dm(ctx2, 4242) == NULL);
	CHECK_EQ(errno, EINVAL);
	dm2 = ibv_import_dm(ctx2, dm->handle);
	REQUIRE(dm2);
	CHECK(dm2->context == ctx2);
	CHECK_EQ(ibv_memcpy_to_dm(dm2, 64, &word, 4), 0);
	CHECK_EQ(ibv_memcpy_from_dm(&back, dm, 64, 4), 0);
	CHECK_EQ(back, word);
	ibv_unimport_dm(dm2);
	CHECK_EQ(ibv_free_dm(dm), 0);

	CHECK_EQ(ibv_close_device(ctx2), 0);
	/* the first context goes on */
	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

/* How many of the n pages at p are resident (mincore). */
static size_t resident(void *p, size_t n)
{
	unsigned char v[64];
	size_t i, r = 0;

	REQUIRE(n <= sizeof(v) && mincore(p, n * 4096, v) == 0);
	for (i = 0; i < n; i++)
		r += v[i] & 1;
	return r;
}

/* On-demand paging: explicit registrations of memory not mapped yet,
 * implicit ones, ibv_advise_mr's rules and its prefetch (pages resident
 * after it), and a region that stays on-demand for life. */
static void test_odp(struct ibv_context *ctx)
{
	const unsigned int odp = IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE;
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *other = ibv_alloc_pd(ctx);
	uint8_t *mem = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr, *ro, *pinned, *imp, *gone;
	struct ibv_sge sge;
	uint8_t *hole;

	REQUIRE(pd && other && mem != MAP_FAILED);
	mr = ibv_reg_mr(pd, mem, 16 * 4096, odp);
	REQUIRE(mr);
	CHECK_EQ(resident(mem, 16), 0); /* registration touched nothing */
	ro = ibv_reg_mr(pd, mem, 4096, IBV_ACCESS_ON_DEMAND);
	pinned = ibv_reg_mr(pd, mem, 4096, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(ro && pinned);

	/* an on-demand range need not be mapped when registered */
	hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(hole != MAP_FAILED && munmap(hole, 4096) == 0);
	gone = ibv_reg_mr(pd, hole, 4096, odp);
	CHECK(gone != NULL);
	reg_fails(pd, hole, 4096, IBV_ACCESS_LOCAL_WRITE, EFAULT, __LINE__);

	/* implicit: address NULL, length SIZE_MAX, iova 0 */
	imp = ibv_reg_mr(pd, NULL, SIZE_MAX, odp | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(imp);
	CHECK(imp->addr == NULL);
	CHECK_EQ(imp->length, SIZE_MAX);
	errno = 0;
	CHECK(ibv_reg_mr_iova(pd, NULL, SIZE_MAX, 4096, odp) == NULL);
	CHECK_EQ(errno, EINVAL);
	reg_fails(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE, EINVAL, __LINE__);

	/* ibv_advise_mr's refusals */
	sge = (struct ibv_sge){ (uintptr_t)mem, 8192, mr->lkey };
	CHECK_EQ(ibv_advise_mr(pd, 7, 0, &sge, 1), EOPNOTSUPP);
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 2, &sge, 1),
		 EINVAL);
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 0),
		 EINVAL);
	CHECK_EQ(ibv_advise_mr(other, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge,
			       1),
		 ENOENT);
	sge.lkey = pinned->lkey;
	sge.length = 4096;
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1),
		 ENOENT);
	sge.lkey = ro->lkey;
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &sge,
			       1),
		 EPERM);
	sge = (struct ibv_sge){ (uintptr_t)mem + 15 * 4096, 8192, mr->lkey };
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1),
		 EFAULT);
	/* an unmapped page: an error when flushed, best effort otherwise */
	sge = (struct ibv_sge){ (uintptr_t)hole, 4096, gone->lkey };
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
			       IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1),
		 EFAULT);
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1),
		 0);

	/* prefetches bring the pages in, through either registration */
	sge = (struct ibv_sge){ (uintptr_t)mem + 4096, 3 * 4096, mr->lkey };
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0,
			       &sge, 1),
		 0);
	CHECK_EQ(resident(mem, 16), 0);
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			       IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1),
		 0);
	CHECK_EQ(resident(mem, 16), 3);
	sge = (struct ibv_sge){ (uintptr_t)mem + 8 * 4096, 2 * 4096,
				imp->lkey };
	CHECK_EQ(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			       IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1),
		 0);
	CHECK_EQ(resident(mem, 16), 5);

	/* on-demand or pinned for life */
	errno = 0;
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE),
		 IBV_REREG_MR_ERR_CMD);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      odp | IBV_ACCESS_REMOTE_READ),
		 0);

	CHECK_EQ(ibv_dereg_mr(imp), 0);
	CHECK_EQ(ibv_dereg_mr(gone), 0);
	CHECK_EQ(ibv_dereg_mr(pinned), 0);
	CHECK_EQ(ibv_dereg_mr(ro), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dealloc_pd(other), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	munmap(mem, 16 * 4096);
}

/* How many of the n pages at p are present and this process's alone
 * (/proc/self/pagemap: bit 63 present, bit 56 mapped exclusively), so a
 * write to them does not fault; the shared zero page that a read of
 * fresh memory maps is not. */
static size_t writable(void *p, size_t n)
{
	uint64_t e[64];
	size_t i, r = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	REQUIRE(fd >= 0 && n <= 64);
	REQUIRE(pread(fd, e, n * sizeof(e[0]),
		      (off_t)((uintptr_t)p / 4096 * sizeof(e[0]))) ==
		(ssize_t)(n * sizeof(e[0])));
	close(fd);
	for (i = 0; i < n; i++)
		r += (e[i] >> 63 & 1) && (e[i] >> 56 & 1);
	return r;
}

/* The resident set of this process, in bytes (/proc/self/statm). */
static long rss_bytes(void)
{
	long pages = -1, rss = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	REQUIRE(f && fscanf(f, "%ld %ld", &pages, &rss) == 2);
	fclose(f);
	return rss * sysconf(_SC_PAGESIZE);
}

static char *fresh(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	REQUIRE(p != MAP_FAILED);
	return p;
}

/* The kernel pins a registration's pages (ib_umem_get): once reg_mr or a
 * rereg of the translation returns they are present, and a writable
 * region's writable, so the transfers into it (a pulled large SEND, a
 * one-copy WRITE) do not fault at each of its pages: a fresh writable
 * region's pages are its own once registered (no zero page, nothing a
 * write would fault on), and so are those of one partly present before;
 * a read-only one has its pages present (the zero page), made its own
 * when a rereg gives it the right to write.  A region of a few pages is
 * left to fault on use. */
static void test_populated(struct ibv_context *ctx)
{
	size_t page = 4096, n = 64, len = n * page, i;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	char *a = fresh(len), *b = fresh(len), *c = fresh(len), *d = fresh(len);
	struct ibv_mr *mr, *ro, *part, *small;

	REQUIRE(pd);
	/* Before Linux 5.14 (no MADV_POPULATE_WRITE) pages come on use. */
	if (madvise(c, page, MADV_POPULATE_WRITE) && errno == EINVAL) {
		fprintf(stderr, "skip populated: no MADV_POPULATE_WRITE\n");
		goto out;
	}
	CHECK_EQ(resident(a, n), 0);
	mr = ibv_reg_mr(pd, a, len, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mr);
	CHECK_EQ(resident(a, n), n);
	CHECK_EQ(writable(a, n), n);

	/* Read-only: present, on the shared zero page; writable once a
	 * rereg lets the region be written. */
	CHECK_EQ(resident(b, n), 0);
	ro = ibv_reg_mr(pd, b, len, IBV_ACCESS_REMOTE_READ);
	REQUIRE(ro);
	CHECK_EQ(resident(b, n), n);
	CHECK_EQ(writable(b, n), 0);
	CHECK_EQ(ibv_rereg_mr(ro, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE),
		 0);
	CHECK_EQ(writable(b, n), n);

	/* A new translation is pinned as a new registration. */
	CHECK_EQ(resident(c + page, n - 1), 0);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			      c + page, len - page, 0),
		 0);
	CHECK_EQ(resident(c + page, n - 1), n - 1);
	CHECK_EQ(writable(c + page, n - 1), n - 1);

	/* Partly present: the pages missing between and after those in
	 * use are brought in (a long present stretch between two calls, a
	 * short one within one). */
	for (i = 0; i < n; i++)
		if (i < 3 || (i >= 20 && i < 40) || i == 50)
			d[i * page] = 1;
	CHECK_EQ(resident(d, n), 24);
	part = ibv_reg_mr(pd, d, len, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(part);
	CHECK_EQ(resident(d, n), n);
	CHECK_EQ(writable(d, n), n);
	CHECK_EQ(ibv_dereg_mr(part), 0);

	/* Fewer pages than SV_POPULATE_MIN_PAGES (util/populate.h). */
	CHECK_EQ(madvise(a, len, MADV_DONTNEED), 0);
	small = ibv_reg_mr(pd, a, 15 * page, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(small);
	CHECK_EQ(resident(a, n), 0);
	CHECK_EQ(ibv_dereg_mr(small), 0);

	CHECK_EQ(ibv_dereg_mr(ro), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
out:
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	munmap(a, len);
	munmap(b, len);
	munmap(c, len);
	munmap(d, len);
}

/* Does this process have CAP_IPC_LOCK (pins beyond RLIMIT_MEMLOCK)? */
static bool ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct cd[_LINUX_CAPABILITY_U32S_3];

	REQUIRE(syscall(SYS_capget, &h, cd) == 0);
	return (cd[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &
		CAP_TO_MASK(CAP_IPC_LOCK)) != 0;
}

/* Faulting in is bounded as pinning is.  Without CAP_IPC_LOCK the kernel
 * pins no more than RLIMIT_MEMLOCK, counting what the process's live
 * registrations pin: beyond it a registration stays lazy (an HCA would
 * refuse it; softverbs takes it and leaves its pages to fault on use),
 * and a deregistration gives its share back.  With CAP_IPC_LOCK the limit
 * does not apply.  Whoever registers it, a reservation of a terabyte
 * (MAP_NORESERVE) registers without becoming resident. */
static void test_populate_bounds(struct ibv_context *ctx)
{
	size_t page = 4096, mib = 1 << 20, tib = (size_t)1 << 40;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	bool cap = ipc_lock();
	char *a, *b, *c, *d, *huge;
	struct ibv_mr *ma, *mb, *mc, *md, *mh;
	struct rlimit old, rl;
	long rss;

	REQUIRE(pd);
	a = fresh(2 * mib);
	if (madvise(a, page, MADV_POPULATE_WRITE) && errno == EINVAL) {
		fprintf(stderr,
			"skip populate bounds: no MADV_POPULATE_WRITE\n");
		munmap(a, 2 * mib);
		goto out;
	}
	CHECK_EQ(madvise(a, page, MADV_DONTNEED), 0);
	REQUIRE(getrlimit(RLIMIT_MEMLOCK, &old) == 0);
	REQUIRE(old.rlim_max == RLIM_INFINITY || old.rlim_max >= mib);
	rl = old;
	rl.rlim_cur = mib;
	REQUIRE(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	b = fresh(mib / 2);
	c = fresh(3 * mib / 4);
	d = fresh(3 * mib / 4);
	ma = ibv_reg_mr(pd, a, 2 * mib, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(ma);
	CHECK_EQ(resident(a, 64), cap ? 64 : 0); /* more than the limit */
	mb = ibv_reg_mr(pd, b, mib / 2, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mb);
	CHECK_EQ(resident(b, 64), 64); /* within it */
	mc = ibv_reg_mr(pd, c, 3 * mib / 4, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mc);
	CHECK_EQ(resident(c, 64), cap ? 64 : 0); /* within it, not with b's */
	CHECK_EQ(ibv_dereg_mr(mb), 0);
	md = ibv_reg_mr(pd, d, 3 * mib / 4, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(md);
	CHECK_EQ(resident(d, 64), 64); /* b's share given back */
	CHECK_EQ(ibv_dereg_mr(ma), 0);
	CHECK_EQ(ibv_dereg_mr(mc), 0);
	CHECK_EQ(ibv_dereg_mr(md), 0);
	REQUIRE(setrlimit(RLIMIT_MEMLOCK, &old) == 0);
	munmap(a, 2 * mib);
	munmap(b, mib / 2);
	munmap(c, 3 * mib / 4);
	munmap(d, 3 * mib / 4);

	huge = mmap(NULL, tib, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (huge == MAP_FAILED) { /* vm.overcommit_memory=2 */
		fprintf(stderr, "skip 1 TiB registration: mmap: %s\n",
			strerror(errno));
		goto out;
	}
	rss = rss_bytes();
	mh = ibv_reg_mr(pd, huge, tib, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(mh);
	CHECK(rss_bytes() - rss < 64 * (long)mib);
	CHECK_EQ(resident(huge, 64), 0);
	CHECK_EQ(resident(huge + tib / 2, 64), 0);
	CHECK_EQ(resident(huge + tib - 64 * page, 64), 0);
	/* Made writable (from read-only) or moved: lazy still. */
	CHECK_EQ(ibv_rereg_mr(mh, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_REMOTE_READ),
		 0);
	CHECK_EQ(ibv_rereg_mr(mh, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE),
		 0);
	CHECK_EQ(ibv_rereg_mr(mh, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			      huge + page, tib - page, 0),
		 0);
	CHECK(rss_bytes() - rss < 64 * (long)mib);
	CHECK_EQ(resident(huge, 64), 0);
	CHECK_EQ(ibv_dereg_mr(mh), 0);
	munmap(huge, tib);
out:
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

int main(void)
{
	struct ibv_context *ctx = open_ctx();
	size_t len = 3 * 4096 + 100;
	char *buf = malloc(len);
	struct ibv_pd *pd;

	REQUIRE(buf);
	test_pd(ctx);
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd);
	test_access_rules(pd, buf, len);
	test_unmapped(pd);
	test_protection(pd);
	test_iova(pd, buf, len);
	test_unsupported(ctx, pd);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	test_keys_and_busy(ctx, buf, len);
	test_rereg(ctx, buf, len);
	test_import(ctx, buf, len);
	test_odp(ctx);
	test_populated(ctx);
	test_populate_bounds(ctx);
	CHECK_EQ(ibv_close_device(ctx), 0);
	free(buf);
	return check_done();
}
