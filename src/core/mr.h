/*
 * Memory regions as the data path sees them: key lookup and the one
 * predicate that decides whether an access is allowed.
 *
 * Keys are random 32-bit values (lkey and rkey drawn independently), so a
 * key cannot be guessed from another key or from earlier keys.  Lookups
 * take a reference; deregistration removes the keys first and then waits
 * for references to drain, so a packet in flight never meets a freed MR.
 */
#ifndef SV_CORE_MR_H
#define SV_CORE_MR_H

#include "core/objects.h"

/* Assign fresh lkey/rkey to mr->ibv and publish it (0 or errno). */
int sv_mr_publish(struct sv_mr *mr);
/* Remove the keys and wait until no lookup holds a reference. */
void sv_mr_unpublish(struct sv_mr *mr);

/* Find a valid MR by key, with a reference held (NULL if none). */
struct sv_mr *sv_mr_get_by_lkey(uint32_t lkey);
struct sv_mr *sv_mr_get_by_rkey(uint32_t rkey);
void sv_mr_put(struct sv_mr *mr);

/* May [iova, iova+len) of mr be accessed with `access` (IBV_ACCESS_* bits,
 * 0 = local read) on behalf of pd?  Overflow-safe.  Returns the local
 * pointer for iova, or NULL. */
void *sv_mr_check(struct sv_mr *mr, struct sv_pd *pd, uint64_t iova,
		  uint64_t len, unsigned int access);

#endif
