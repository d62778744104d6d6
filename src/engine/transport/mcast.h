/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * UD multicast (mcast.c).
 */
#ifndef SV_ENGINE_MCAST_H
#define SV_ENGINE_MCAST_H

#include "engine/transport/eng.h"

/* mcast.c: receive on the multicast socket (each pass), join groups on
 * interfaces that came up (address monitor), release at close. */
void sv_mcast_rx(struct sv_engine *eng);
void sv_mcast_refresh(struct sv_engine *eng);
void sv_mcast_close(struct sv_engine *eng);

#endif
