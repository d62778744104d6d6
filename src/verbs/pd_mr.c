/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Protection domains and memory regions: ibv_alloc_pd/dealloc_pd,
 * ibv_reg_mr (and the iova variants), ibv_rereg_mr, ibv_dereg_mr, and the
 * import/dma-buf entry points a software device cannot offer.
 *
 * Registration validates the access flags as the kernel's
 * ib_check_mr_access() does, checks that the whole range is mapped, and
 * writable when the access writes (the kernel would fail to pin it:
 * EFAULT), arms the fault guard (util/fault.h: the memory may be unmapped
 * or protected later, which must not crash the engine), and publishes
 * random keys in the key table (core/keys.c), which the data path
 * consults through sv_mr_check(); then faults the pages in as pinning
 * leaves them, within pinning's bounds (util/populate.h).
 */
#include "verbs/verbs.h"

#include "verbs/objcheck.h"
#include "verbs/share.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/mr.h"
#include "core/mw.h"
#include "engine/diag/strict.h"
#include "util/fault.h"
#include "util/log.h"
#include "util/pages.h"
#include "util/populate.h"

/* Access bits a registration may carry.  Bits of the optional range are
 * hints (relaxed ordering...) that a device may ignore, as rdma-core
 * masks them for kernels that do not know them.  ZERO_BASED is accepted
 * and, as with the kernel's drivers, changes nothing for an MR (its iova
 * is the address, or the one given to reg_mr_iova): it matters to memory
 * windows.  HUGETLB is a promise about the pages, nothing to check. */
#define SV_MR_ACCESS_KNOWN                                                   \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                 \
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | \
	 IBV_ACCESS_HUGETLB)

/* What the data path checks: the rights, not the hints. */
#define SV_MR_ACCESS_RIGHTS                                  \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |  \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
	 IBV_ACCESS_MW_BIND)

/* ---- protection domains ------------------------------------------------- */

SV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct sv_pd *pd;
	int err;

	if (sv_check_ctx(context, "ibv_alloc_pd"))
		return sv_null_errno(EINVAL);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return sv_null_errno(ENOMEM);
	pd->ibv.context = context;
	atomic_init(&pd->users, 0);
	err = sv_share_add(context, SV_SHARE_PD, pd, &pd->ibv.handle);
	if (err) {
		free(pd);
		return sv_null_errno(err);
	}
	return &pd->ibv;
}

/* The PD of a handle that ibv_import_pd made, else NULL. */
static struct sv_pd *pd_alias(struct ibv_pd *ibpd)
{
	struct sv_pd *pd = sv_container_of(ibpd, struct sv_pd, ibv);

	return pd->real ? pd : NULL;
}

SV_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct sv_pd *pd;

	if (sv_check_pd(ibpd, "ibv_dealloc_pd"))
		return EINVAL;
	pd = to_sv_pd(ibpd);
	/* IBA 10.6.3.1 (Deallocate PD): fails while any object uses it. */
	if (atomic_load(&pd->users))
		return EBUSY;
	/* Through an imported handle too (man ibv_import_pd): the PD goes,
	 * and with it this handle; other contexts' handles on it may only
	 * be unimported from here on. */
	sv_share_del(pd->ibv.context, pd->ibv.handle, pd);
	free(pd_alias(ibpd));
	if (pd->parent_of) {
		sv_parent_domain_free(pd); /* verbs/pd_parent.c */
		return 0;
	}
	free(pd);
	return 0;
}

/* ---- memory regions ----------------------------------------------------- */

/* The kernel's ib_check_mr_access(): unknown bits and remote write/atomic
 * without local write are invalid (IBA 10.6.3.1: remote write or atomic
 * access requires local write). */
static int check_access(unsigned int access)
{
	access &= ~IBV_ACCESS_OPTIONAL_RANGE;
	if (access & ~SV_MR_ACCESS_KNOWN)
		return EINVAL;
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	return 0;
}

/* man ibv_reg_mr: an implicit on-demand registration (address NULL,
 * length SIZE_MAX, IBV_ACCESS_ON_DEMAND) covers the whole address space,
 * with iova equal to the address. */
static bool implicit_odp(const void *addr, size_t length, unsigned int access)
{
	return (access & IBV_ACCESS_ON_DEMAND) && !addr && length == SIZE_MAX;
}

/* Rights that make the kernel pin a registration's pages for writing
 * (ib_access_writable: get_user_pages with FOLL_WRITE), so that a page the
 * process may not write fails the registration with EFAULT. */
#define SV_MR_ACCESS_WRITABLE                               \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

/* The pages the kernel would pin: all mapped, readable, and writable when
 * the access writes (util/pages.c: the range's mappings).  A
 * refusal says why and where: an application seldom expects EFAULT. */
static int check_pages(const char *verb, void *addr, size_t length,
		       unsigned int access)
{
	bool write = (access & SV_MR_ACCESS_WRITABLE) != 0;
	enum sv_pages_fault f;
	uintptr_t bad = 0;

	f = sv_pages_check(addr, length, write, &bad);
	if (f == SV_PAGES_OK)
		return 0;
	sv_warn("%s: EFAULT: page 0x%lx of [%p, +0x%zx) is %s%s", verb,
		(unsigned long)bad, addr, length, sv_pages_fault_str(f),
		write ? ", and the access asks for writes (LOCAL_WRITE, "
			"REMOTE_WRITE, REMOTE_ATOMIC or MW_BIND: the kernel pins "
			"the pages for writing)" :
			" (the kernel pins a registration's pages)");
	return EFAULT;
}

/* Checks shared by reg_mr and rereg_mr's translation change.  A zero
 * length is a region as the kernel makes it (ib_umem_get pins no page;
 * rxe and the HCAs accept it): only zero-length transfers fit in it. */
static int check_range(void *addr, size_t length, uint64_t iova, bool dm)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (length > SV_MAX_MR_SIZE)
		return EINVAL;
	if ((uintptr_t)addr + length < (uintptr_t)addr)
		return EINVAL;
	/* As the kernel: the iova keeps the page offset of the address
	 * (ib_umem); device memory has no pages, and a DM MR may start at
	 * any offset of it (UVERBS_METHOD_DM_MR_REG bounds it only). */
	if (!dm && ((uintptr_t)addr & (page - 1)) != (iova & (page - 1)))
		return EINVAL;
	if (iova + length < iova)
		return EINVAL;
	return 0;
}

/* The translation of a registration: the range given, or for an
 * implicit on-demand one everything, addressed by virtual address. */
static int check_translation(void *addr, size_t length, uint64_t iova,
			     unsigned int access, bool dm)
{
	if (implicit_odp(addr, length, access))
		return iova ? EINVAL : 0;
	return check_range(addr, length, iova, dm);
}

static void set_translation(struct sv_mr *mr, void *addr, size_t length,
			    uint64_t iova)
{
	mr->va = (uintptr_t)addr;
	mr->iova = iova;
	mr->length = length;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
}

static struct ibv_mr *reg_mr(const char *verb, struct ibv_pd *ibpd, void *addr,
			     size_t length, uint64_t iova, unsigned int access,
			     bool dm)
{
	struct sv_mr *mr;
	int err;

	if (sv_check_pd(ibpd, verb))
		return sv_null_errno(EINVAL);
	err = check_access(access);
	if (!err)
		err = check_translation(addr, length, iova, access, dm);
	/* On demand: nothing is pinned, pages are faulted in when used. */
	if (!err && !(access & IBV_ACCESS_ON_DEMAND))
		err = check_pages(verb, addr, length, access);
	if (err)
		return sv_null_errno(err);
	/* From now on the engine places into this memory, which the
	 * application may unmap or protect: faults become errors. */
	sv_fault_install();
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return sv_null_errno(ENOMEM);
	mr->ibv.context = ibpd->context;
	mr->ibv.pd = ibpd;
	mr->pd = sv_pd_real(to_sv_pd(ibpd)); /* a parent domain's PD */
	set_translation(mr, addr, length, iova);
	mr->access = access & SV_MR_ACCESS_RIGHTS;
	mr->odp = (access & IBV_ACCESS_ON_DEMAND) != 0;
	atomic_init(&mr->refs, 0);
	atomic_init(&mr->state, SV_MR_INVALID);
	sv_pd_get(mr->pd);
	err = sv_mr_publish(mr);
	if (!err)
		err = sv_share_add(ibpd->context, SV_SHARE_MR, mr,
				   &mr->ibv.handle);
	if (err) {
		sv_mr_unpublish(mr);
		sv_pd_put(mr->pd);
		free(mr);
		return sv_null_errno(err);
	}
	/* Pinned as the kernel's would be: its pages brought in
	 * (util/populate.c), on-demand ones left to their use. */
	if (!mr->odp) {
		mr->populated = sv_populate_charge(addr, length);
		if (mr->populated)
			sv_populate_fault(addr, length,
					  (access & SV_MR_ACCESS_WRITABLE) != 0,
					  true);
	}
	return &mr->ibv;
}

/* The MR of a handle that ibv_import_mr made, else NULL. */
static struct sv_mr *mr_alias(struct ibv_mr *ibmr)
{
	struct sv_mr *mr = sv_container_of(ibmr, struct sv_mr, ibv);

	return mr->real ? mr : NULL;
}

/* verbs.h turns ibv_reg_mr into an inline dispatcher; this is the symbol. */
#undef ibv_reg_mr
SV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
				    size_t length, int access)
{
	return reg_mr("ibv_reg_mr", pd, addr, length, (uintptr_t)addr,
		      (unsigned int)access, false);
}

#undef ibv_reg_mr_iova
SV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
					 size_t length, uint64_t iova,
					 int access)
{
	return reg_mr("ibv_reg_mr_iova", pd, addr, length, iova,
		      (unsigned int)access, false);
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					  size_t length, uint64_t iova,
					  unsigned int access)
{
	return reg_mr("ibv_reg_mr_iova2", pd, addr, length, iova, access,
		      false);
}

struct ibv_mr *sv_reg_dm_range(struct ibv_pd *pd, void *addr, size_t length,
			       unsigned int access)
{
	return reg_mr("ibv_reg_dm_mr", pd, addr, length, 0, access, true);
}

/* The kernel pins again what a rereg's new translation or new rights
 * need.  A new translation is brought in as a new registration (its pages
 * already present cost a look); new rights that write where the old did
 * not have every page made writable (a page only read so far maps the
 * shared zero page); rights that write no more than before, or a new PD,
 * leave the pages as they are. */
static void repopulate(struct sv_mr *mr, bool translation, bool was_writable)
{
	bool writable = (mr->access & SV_MR_ACCESS_WRITABLE) != 0;

	if (mr->odp || (!translation && (!writable || was_writable)))
		return;
	if (translation) {
		sv_populate_uncharge(mr->populated);
		mr->populated = 0;
	}
	if (!mr->populated)
		mr->populated = sv_populate_charge((void *)mr->va, mr->length);
	if (mr->populated)
		sv_populate_fault((void *)mr->va, mr->length, writable,
				  translation);
}

/* Conceptually dereg + reg (man ibv_rereg_mr), but like rxe and mlx5
 * the region keeps its lkey and rkey, so a peer holding the R_Key reaches
 * the region as it now is.  Input
 * errors rdma-core detects itself leave the MR intact and return
 * IBV_REREG_MR_ERR_INPUT; errors of the "command" return
 * IBV_REREG_MR_ERR_CMD.  errno says why in both cases. */
SV_EXPORT int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd,
			   void *addr, size_t length, int access)
{
	struct sv_mr *mr;
	struct sv_pd *new_pd;
	bool was_writable;
	uint64_t iova;
	int err;

	if (sv_check_mr(ibmr, "ibv_rereg_mr") ||
	    (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	mr = to_sv_mr(ibmr);
	new_pd = mr->pd;
	err = flags ? 0 : EINVAL; /* the kernel refuses an empty change */
	if (!err && (flags & IBV_REREG_MR_CHANGE_PD)) {
		if (sv_check_pd(ibpd, "ibv_rereg_mr") ||
		    ibpd->context != ibmr->context)
			err = EINVAL;
		else
			new_pd = sv_pd_real(to_sv_pd(ibpd));
	}
	if (!err && (flags & IBV_REREG_MR_CHANGE_ACCESS)) {
		err = check_access((unsigned int)access);
		/* A region is on-demand or pinned for its whole life. */
		if (!err && !(access & IBV_ACCESS_ON_DEMAND) != !mr->odp)
			err = EOPNOTSUPP;
	}
	iova = (uintptr_t)addr;
	if (!err && (flags & IBV_REREG_MR_CHANGE_TRANSLATION))
		err = check_translation(addr, length, iova,
					mr->odp ? IBV_ACCESS_ON_DEMAND : 0,
					false);
	/* The kernel pins again what a new translation or new rights
	 * need: the resulting range against the resulting rights (an
	 * on-demand region pins nothing). */
	if (!err && !mr->odp &&
	    (flags &
	     (IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS)))
		err = check_pages("ibv_rereg_mr",
				  (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ?
					  addr :
					  (void *)mr->va,
				  (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ?
					  length :
					  mr->length,
				  (flags & IBV_REREG_MR_CHANGE_ACCESS) ?
					  (unsigned int)access :
					  mr->access);
	if (err) {
		errno = err;
		return IBV_REREG_MR_ERR_CMD;
	}

	/* Windows bound to the region would keep pointing at the old
	 * translation: refused, as the kernel does while windows use it. */
	if (sv_mw_mr_retire(mr)) {
		errno = EBUSY;
		return IBV_REREG_MR_ERR_CMD;
	}
	/* No user in flight while the region changes under its keys; the
	 * keys themselves stay, as on an HCA. */
	sv_mr_suspend(mr);
	if (new_pd != mr->pd) {
		sv_pd_get(new_pd);
		sv_pd_put(mr->pd);
		mr->pd = new_pd;
		mr->ibv.pd = &new_pd->ibv;
	}
	was_writable = (mr->access & SV_MR_ACCESS_WRITABLE) != 0;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = (unsigned int)access & SV_MR_ACCESS_RIGHTS;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		set_translation(mr, addr, length, iova);
	sv_mr_resume(mr);
	repopulate(mr, (flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0,
		   was_writable);
	if (mr_alias(ibmr)) {
		/* What the caller reads from its handle: the region's view,
		 * with the handle's own PD and context. */
		ibmr->addr = mr->ibv.addr;
		ibmr->length = mr->ibv.length;
		if (flags & IBV_REREG_MR_CHANGE_PD)
			ibmr->pd = ibpd;
	}
	return 0;
}

SV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct sv_mr *mr;

	if (sv_check_mr(ibmr, "ibv_dereg_mr"))
		return EINVAL;
	mr = to_sv_mr(ibmr);
	/* man ibv_alloc_mw: deregistration fails while a window is bound
	 * to the region. */
	if (sv_mw_mr_retire(mr))
		return EBUSY;
	sv_strict_dereg(mr); /* SOFTVERBS_STRICT=1: WRs still on it */
	sv_mr_unpublish(mr);
	sv_share_del(mr->ibv.context, mr->ibv.handle, mr);
	sv_pd_put(mr->pd);
	free(mr_alias(ibmr)); /* an imported handle goes with its region */
	if (mr->dm) /* verbs/dm.c: the device memory is free-able again */
		atomic_fetch_sub(&mr->dm->users, 1);
	sv_populate_uncharge(mr->populated);
	free(mr);
	return 0;
}

/* ---- what a software device cannot offer -------------------------------- */

/* dma-buf exporters are kernel drivers (GPUs); we cannot map one. */
SV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					   size_t length, uint64_t iova, int fd,
					   int access)
{
	return sv_null_errno(EOPNOTSUPP);
}

/* man ibv_import_pd / ibv_import_mr: a handle on another context of the
 * same share (verbs/share.h) for a PD or MR, usable wherever the original
 * is; ibv_dealloc_pd / ibv_dereg_mr through it destroy the object,
 * ibv_unimport_* only the handle. */
SV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context,
				       uint32_t pd_handle)
{
	struct sv_pd *real, *pd;

	if (sv_check_ctx(context, "ibv_import_pd"))
		return sv_null_errno(EINVAL);
	real = sv_share_find(context, SV_SHARE_PD, pd_handle);
	if (!real) {
		sv_warn("ibv_import_pd: no PD has handle %u in the contexts of this cmd_fd",
			pd_handle);
		return sv_null_errno(EINVAL);
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return sv_null_errno(ENOMEM);
	pd->ibv.context = context;
	pd->ibv.handle = pd_handle;
	pd->real = real;
	return &pd->ibv;
}

SV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (pd)
		free(pd_alias(pd)); /* an original PD is left alone */
}

SV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct sv_mr *real, *mr;

	if (sv_check_pd(pd, "ibv_import_mr"))
		return sv_null_errno(EINVAL);
	real = sv_share_find(pd->context, SV_SHARE_MR, mr_handle);
	if (!real) {
		sv_warn("ibv_import_mr: no MR has handle %u in the contexts of this cmd_fd",
			mr_handle);
		return sv_null_errno(EINVAL);
	}
	if (real->pd != to_sv_pd(pd)) {
		sv_warn("ibv_import_mr: MR handle %u belongs to another PD (handle %u) than the one given (handle %u)",
			mr_handle, real->pd->ibv.handle, pd->handle);
		return sv_null_errno(EINVAL);
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return sv_null_errno(ENOMEM);
	mr->ibv = real->ibv;
	mr->ibv.context = pd->context;
	mr->ibv.pd = pd;
	mr->real = real;
	return &mr->ibv;
}

SV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	if (mr)
		free(mr_alias(mr)); /* an original MR is left alone */
}

/* ibv_import_dm: verbs/dm.c. */

/* ---- on-demand paging: ibv_advise_mr ------------------------------------ */

/* Fault in [va, va+len) as an access would (MADV_POPULATE_*: Linux 5.14);
 * 0 or EFAULT for a part that is not mapped (or not writable, to write). */
static int prefetch(uintptr_t va, uint64_t len, bool write)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = va & ~(page - 1);
	uint64_t span = ((va + len + page - 1) & ~(page - 1)) - start;

	if (!madvise((void *)start, span,
		     write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ))
		return 0;
	if (errno == EINVAL) /* an older kernel: a hint is all we can give */
		return madvise((void *)start, span, MADV_WILLNEED) ? EFAULT : 0;
	return EFAULT;
}

/* man ibv_advise_mr: every SGE names an on-demand MR of this PD (ENOENT
 * otherwise, as mlx5 and rxe answer), within its bounds (EFAULT), with
 * LOCAL_WRITE for a write prefetch (EPERM).  The prefetch is done before
 * returning; without IBV_ADVISE_MR_FLAG_FLUSH it is best effort, as the
 * kernel's asynchronous one, and a page it cannot bring in is not an
 * error (the access that needs it will be). */
int sv_advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice,
		 uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	struct sv_pd *pd;
	uint32_t i;
	int err = 0;

	if (!ibpd)
		return EINVAL;
	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) {
		sv_warn("ibv_advise_mr: advice %d is not a prefetch (PREFETCH, PREFETCH_WRITE, PREFETCH_NO_FAULT)",
			(int)advice);
		return EOPNOTSUPP;
	}
	if (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) {
		sv_warn("ibv_advise_mr: flags 0x%x: only IBV_ADVISE_MR_FLAG_FLUSH is defined",
			flags);
		return EINVAL;
	}
	if (!sg_list || !num_sge) {
		sv_warn("ibv_advise_mr: no SGE to advise about");
		return EINVAL;
	}
	pd = sv_pd_real(to_sv_pd(ibpd));
	for (i = 0; i < num_sge && !err; i++) {
		const struct ibv_sge *s = &sg_list[i];
		struct sv_mr *mr = sv_mr_get_by_lkey(s->lkey);
		void *va;

		if (!mr || !mr->odp || mr->pd != pd) {
			sv_warn("ibv_advise_mr: SGE %u: lkey 0x%x is not an on-demand MR of this PD",
				i, s->lkey);
			err = ENOENT;
		} else if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
			   !(mr->access & IBV_ACCESS_LOCAL_WRITE)) {
			sv_warn("ibv_advise_mr: SGE %u: PREFETCH_WRITE on lkey 0x%x, registered without IBV_ACCESS_LOCAL_WRITE",
				i, s->lkey);
			err = EPERM;
		} else if (!(va = sv_mr_check(mr, pd, s->addr, s->length, 0))) {
			sv_warn("ibv_advise_mr: SGE %u: [0x%llx, +%u) is outside lkey 0x%x",
				i, (unsigned long long)s->addr, s->length,
				s->lkey);
			err = EFAULT;
		} else if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT &&
			   s->length) {
			/* NO_FAULT: present pages are already the device's. */
			int e = prefetch(
				(uintptr_t)va, s->length,
				advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);

			if (e && (flags & IBV_ADVISE_MR_FLAG_FLUSH))
				err = e;
		}
		if (mr)
			sv_mr_put(mr);
	}
	return err;
}
