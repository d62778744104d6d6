/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* `rdma link` and `rdma dev` for softverbs devices (rdmatool.c): the
 * whole argv, argv[0] being rdma. */
#ifndef SV_TOOLS_RDMATOOL_H
#define SV_TOOLS_RDMATOOL_H

int sv_cmd_rdma(const char *prog, int argc, char **argv);

#endif
