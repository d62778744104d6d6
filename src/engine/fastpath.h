/*
 * What the same-host paths (path.h) share: the one-copy engine (direct.c),
 * the helper (help.c), and lean mode's way back to the engine (chanpath.c).
 */
#ifndef SV_ENGINE_FASTPATH_H
#define SV_ENGINE_FASTPATH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/pubtab.h"
#include "engine/qpe.h"

/* direct.c: one-copy RDMA WRITE/READ with a same-host peer, and the QP's
 * entry in the published table; its ops are sv_path_direct. */
/* Copy between our iov[0..n) (consumed) and [rva, rva+len) of the table's
 * process; *via_mem: through its mem file. */
struct iovec;
bool sv_direct_copy(const struct sv_pubtab_view *tab, bool write, struct iovec *iov,
		    uint32_t n, uintptr_t rva, uint64_t len, bool *via_mem);

/* help.c: a large direct WRITE shared with the target's progress thread
 * (link/help.h). */
enum sv_help_r {
	SV_HELP_NOT, /* not offered: copy it alone */
	SV_HELP_DONE, /* every byte is in place */
	SV_HELP_FAILED, /* a copy failed: the packet path runs it */
};
enum sv_help_r sv_help_write(struct sv_qp_engine *qe, const struct sv_pubtab_view *tab,
			     const struct iovec *iov, uint32_t n,
			     uintptr_t rva, const struct sv_send_wqe *wqe);
/* The progress thread, without the engine lock: take the jobs peers
 * posted in our segments, then linger a little for the next ones. */
void sv_help_serve(struct sv_engine *eng);
/* Tell peers whether our thread takes jobs now (not while our
 * application polls: its core is busy); changes only are written. */
void sv_help_available(struct sv_engine *eng, bool yes);

/* chanpath.c: small SENDs of an RC QP through a message channel in the
 * same-host peer's segment (link/chan.h, docs/fastpath.md layer 3); its
 * ops are sv_path_chan.  Lean mode's way back to the engine: */
void sv_chan_lean_leave(struct sv_qp_engine *qe);

#endif
