/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* `softverbs stats` (stats.c): argv after the command's name. */
#ifndef SV_TOOLS_STATS_H
#define SV_TOOLS_STATS_H

int sv_cmd_stats(const char *prog, int argc, char **argv);

#endif
