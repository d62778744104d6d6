/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * IB CM MADs at the namespace's UDP 4791, sent on to the process whose
 * CM they are for (gsifwd.c; the routing is proto/mad.h's).
 */
#ifndef SV_ENGINE_GSIFWD_H
#define SV_ENGINE_GSIFWD_H

#include <stdbool.h>

#include "engine/transport/forward.h"

/* The engine's forwarding socket, if it made one. */
void sv_gsi_forward_close(struct sv_engine *eng);

#endif
