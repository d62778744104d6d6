/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The diagnostics' side of the transport's hooks (transport/hooks.h).
 */
#ifndef SV_ENGINE_DIAG_H
#define SV_ENGINE_DIAG_H

/* Fill sv_hooks, once per process (later calls return at once): the
 * explanations, strict checks, traces and live counters always; fault
 * injection's packet and WR hooks as the process's rules ask for them
 * (SOFTVERBS_FAULT, SOFTVERBS_LOSS, read and printed now).  Called by
 * each engine's open, before it runs. */
void sv_diag_install(void);

#endif
