/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The environment: every variable softverbs reads, how it is parsed, its
 * default and what it does, in the one table below.  Each library that
 * reads the environment (libibverbs, librdmacm) and the softverbs command
 * compiles this file in and keeps its own copy of the values; they all
 * parse the same way.
 */
#include "util/env.h"
#include "util/lockorder.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define VAR(field) offsetof(struct sv_env, field)

const struct sv_env_var sv_env_vars[SV_ENV_NVARS] = {
	[SV_ENV_LOG] = {
		.name = "SOFTVERBS_LOG",
		.kind = SV_ENV_INT,
		.off = VAR(log),
		.min = INT_MIN,
		.max = INT_MAX,
		.def = SV_ENV_UNSET,
		.values = "0..3",
		.dflt = "1",
		.what = "diagnostics: 0 errors, 1 warnings (refusals explained), 2 "
			"info, 3 debug",
	},
	[SV_ENV_VERBS_LOG_LEVEL] = {
		.name = "VERBS_LOG_LEVEL",
		.kind = SV_ENV_CNUM,
		.off = VAR(verbs_log_level),
		.min = INT_MIN,
		.max = INT_MAX,
		.def = SV_ENV_UNSET,
		.values = "0..4",
		.dflt = "unset",
		.what = "rdma-core's levels (0 none, 1 errors ... 4 debug); "
			"SOFTVERBS_LOG wins",
	},
	[SV_ENV_VERBS_LOG_FILE] = {
		.name = "VERBS_LOG_FILE",
		.kind = SV_ENV_PATH,
		.off = VAR(log_file),
		.values = "FILE",
		.dflt = "stderr",
		.what = "append diagnostics here, not stderr (ignored if set-user-ID)",
	},
	[SV_ENV_MTU] = {
		.name = "SOFTVERBS_MTU",
		.kind = SV_ENV_INT,
		.off = VAR(mtu),
		.min = 256,
		.max = 4096,
		.def = 0,
		.values = "256..4096",
		.dflt = "from the interfaces",
		.what = "override the port's active MTU (other values: ignored)",
	},
	[SV_ENV_TRACE] = {
		.name = "SOFTVERBS_TRACE",
		.kind = SV_ENV_ON,
		.off = VAR(trace),
		.values = "1",
		.dflt = "off",
		.what = "one stderr line per packet, channel message or "
			"one-copy operation",
	},
	[SV_ENV_STATS] = {
		.name = "SOFTVERBS_STATS",
		.kind = SV_ENV_ON,
		.off = VAR(stats),
		.values = "1",
		.dflt = "off",
		.what = "a line per QP at its destroy (path, WRs, bytes), "
			"counters at close",
	},
	[SV_ENV_STRICT] = {
		.name = "SOFTVERBS_STRICT",
		.kind = SV_ENV_ON,
		.off = VAR(strict),
		.values = "1",
		.dflt = "off",
		.what = "report verbs misuse, GID table as on hardware "
			"(docs/strict.md)",
	},
	[SV_ENV_PCAP] = {
		.name = "SOFTVERBS_PCAP",
		.kind = SV_ENV_PATH,
		.off = VAR(pcap),
		.values = "FILE",
		.dflt = "off",
		.what = "pcap of every packet sent and received (shm: as RoCE v2); %p: the pid",
	},
	[SV_ENV_FASTPATH] = {
		.name = "SOFTVERBS_FASTPATH",
		.kind = SV_ENV_OFF,
		.off = VAR(fastpath),
		.values = "0",
		.dflt = "on",
		.what = "no shared-memory fast path between processes: UDP only",
	},
	[SV_ENV_SYSFS] = {
		.name = "SOFTVERBS_SYSFS",
		.kind = SV_ENV_OFF,
		.off = VAR(sysfs),
		.values = "0",
		.dflt = "on",
		.what = "softverbs run: no /dev/infiniband, /sys view (--no-sysfs)",
	},
	[SV_ENV_SYSFS_PATH] = {
		.name = "SYSFS_PATH",
		.kind = SV_ENV_DIR,
		.off = VAR(sysfs_path),
		.values = "DIR",
		.dflt = "/sys",
		.what = "ibv_get_sysfs_path's answer (ignored in set-user-ID "
			"programs)",
	},
	[SV_ENV_HELP] = {
		.name = "SOFTVERBS_HELP",
		.kind = SV_ENV_OFF,
		.off = VAR(help),
		.values = "0",
		.dflt = "on",
		.what = "tests: the target's idle thread does not help copy big "
			"one-copy WRITEs",
	},
	[SV_ENV_CHAN_WRITE] = {
		.name = "SOFTVERBS_CHAN_WRITE",
		.kind = SV_ENV_OFF,
		.off = VAR(chan_write),
		.values = "0",
		.dflt = "on",
		.what = "tests: small WRITEs and READs take the one-copy path, "
			"not channels",
	},
	[SV_ENV_FAULT] = {
		.name = "SOFTVERBS_FAULT",
		.kind = SV_ENV_TEXT,
		.off = VAR(fault),
		.values = "RULE[;RULE...]",
		.dflt = "none",
		.what = "packet drop/dup/delay/reorder/corrupt, forced "
			"RNR/access/retry (faults.md)",
	},
	[SV_ENV_LOSS] = {
		.name = "SOFTVERBS_LOSS",
		.kind = SV_ENV_INT,
		.off = VAR(loss),
		.min = 0,
		.max = 100,
		.def = 0,
		.values = "0..100",
		.dflt = "0",
		.what = "shorthand for SOFTVERBS_FAULT='drop=N%' (packets "
			"sent)",
	},
	[SV_ENV_GSO] = {
		.name = "SOFTVERBS_GSO",
		.kind = SV_ENV_OFF,
		.off = VAR(gso),
		.values = "0",
		.dflt = "on",
		.what = "UDP: no segmentation offloads (UDP_SEGMENT sends, "
			"UDP_GRO receives)",
	},
	[SV_ENV_ROCE] = {
		.name = "SOFTVERBS_ROCE",
		.kind = SV_ENV_TEXT,
		.off = VAR(roce),
		.values = "standard",
		.dflt = "QPN ports",
		.what = "standard RoCE v2 (rxe, NICs): UDP 4791, any source "
			"port (docs/interop.md)",
	},
	[SV_ENV_SACK] = {
		.name = "SOFTVERBS_SACK",
		.kind = SV_ENV_OFF,
		.off = VAR(sack),
		.values = "0",
		.dflt = "on (off in standard mode)",
		.what = "0: no selective retransmission (keep no out-of-order "
			"packets, go back N)",
	},
	[SV_ENV_SKIP_ICRC] = {
		.name = "SOFTVERBS_SKIP_ICRC",
		.kind = SV_ENV_OFF,
		.off = VAR(skip_icrc),
		.values = "0",
		.dflt = "on (off in standard mode)",
		.what = "0: every UDP packet carries its ICRC (none left to the "
			"UDP checksum)",
	},
};

static void parse_dir(char *out, const char *s, const char *dflt)
{
	size_t len;

	/* Cut at rdma-core's limit (IBV_SYSFS_PATH_MAX), as before. */
	snprintf(out, SV_ENV_PATH_MAX, "%s", s ? s : dflt);
	/* "/sys/" and "/sys" are the same root: callers append "/class/..." */
	len = strlen(out);
	while (len > 0 && out[len - 1] == '/')
		out[--len] = '\0';
}

static void parse(struct sv_env *e, const struct sv_env_var *v)
{
	void *field = (char *)e + v->off;
	int *val = field;
	const char *s;

	/* secure_getenv ignores a path (or a fault spec) in
	 * set-user-ID/set-group-ID programs: a caller's environment must
	 * not redirect a privileged program's reads nor break its traffic.  The switches keep getenv, as before. */
	s = v->kind == SV_ENV_DIR || v->kind == SV_ENV_PATH ||
			    v->kind == SV_ENV_TEXT ?
		    secure_getenv(v->name) :
		    getenv(v->name);
	switch (v->kind) {
	case SV_ENV_INT:
		*val = s ? atoi(s) : v->def;
		if (*val < v->min || *val > v->max)
			*val = v->def;
		break;
	case SV_ENV_CNUM: {
		long l = s ? strtol(s, NULL, 0) : v->def;

		*val = l < v->min || l > v->max ? v->def : (int)l;
		break;
	}
	case SV_ENV_PATH:
	case SV_ENV_TEXT:
		snprintf(field, SV_ENV_FILE_MAX, "%s", s ? s : "");
		break;
	case SV_ENV_ON:
		*val = s && *s && strcmp(s, "0");
		break;
	case SV_ENV_OFF:
		*val = !s || strcmp(s, "0");
		break;
	case SV_ENV_DIR:
		parse_dir(field, s, v->dflt);
		break;
	}
}

void sv_env_parse(struct sv_env *e)
{
	for (int i = 0; i < SV_ENV_NVARS; i++)
		parse(e, &sv_env_vars[i]);
}

struct sv_env sv_env_data;
atomic_bool sv_env_got[SV_ENV_NVARS];
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;

/* Not pthread_once: a forked child must be able to read again. */
static void atfork_child(void)
{
	for (int i = 0; i < SV_ENV_NVARS; i++)
		atomic_store_explicit(&sv_env_got[i], false,
				      memory_order_relaxed);
	pthread_mutex_init(&env_lock, NULL);
}

void sv_env_read(enum sv_env_id id)
{
	static bool atfork_done; /* inherited by children, as handlers are */

	sv_mutex_lock(&env_lock, SV_LOCK_ENV);
	if (!atomic_load_explicit(&sv_env_got[id], memory_order_relaxed)) {
		parse(&sv_env_data, &sv_env_vars[id]);
		if (!atfork_done && !pthread_atfork(NULL, NULL, atfork_child))
			atfork_done = true;
		atomic_store_explicit(&sv_env_got[id], true,
				      memory_order_release);
	}
	sv_mutex_unlock(&env_lock);
}

void sv_env_print(FILE *f)
{
	for (int i = 0; i < SV_ENV_NVARS; i++) {
		const struct sv_env_var *v = &sv_env_vars[i];

		fprintf(f, "  %s=%s (default: %s)\n      %s\n", v->name,
			v->values, v->dflt, v->what);
	}
}
