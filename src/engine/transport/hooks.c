/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The diagnostics hooks (hooks.h): all NULL until diag fills them.
 */
#include "engine/transport/hooks.h"

struct sv_hooks sv_hooks;
