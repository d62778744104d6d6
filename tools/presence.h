/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The kernel-shaped presence of softverbs0: /dev/infiniband and
 * /sys/class/infiniband{,_verbs} as middleware probes them (tools/presence.c).
 */
#ifndef SV_TOOLS_PRESENCE_H
#define SV_TOOLS_PRESENCE_H

/*
 * For `softverbs run`: give this process, and what it execs, a private
 * mount namespace in which the device files exist.  Never fatal: when the
 * kernel refuses namespaces one line on stderr says so and the caller
 * runs the command anyway.  Must be called while single-threaded.
 */
void sv_presence_enter(const char *prog);

/* `softverbs setup [--undo]`: the same files in the current mount
 * namespace (root).  Return the command's exit status. */
int sv_presence_setup(const char *prog);
int sv_presence_undo(const char *prog);

#endif
