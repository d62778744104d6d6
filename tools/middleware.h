/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The environment `softverbs run` gives middleware (UCX, Open MPI, MPICH)
 * so that it selects softverbs0 with no flag (tools/middleware.c).
 */
#ifndef SV_TOOLS_MIDDLEWARE_H
#define SV_TOOLS_MIDDLEWARE_H

/*
 * Set each default variable the environment does not hold, where UCX can
 * open softverbs0 (its /dev/infiniband file exists: call after the view
 * is made); when CMD (the command `run` executes) is an MPI launcher or a
 * UCX tool, one line on stderr names those set, or says why none were.
 * Returns 0, or -1 when setenv fails.
 */
int sv_middleware_defaults(const char *prog, const char *cmd);

#endif
