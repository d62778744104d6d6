/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The environment variables softverbs reads, all in one table (env.c): it
 * parses them into one struct, and it is the list `softverbs help` prints
 * and README.md shows (unit.test_env checks that README agrees).
 *
 * Each variable is read once per process, at its first use, not when the
 * library is loaded: a program (the tests do) may setenv SOFTVERBS_STATS
 * before it opens a device, while SOFTVERBS_LOG is already needed by a
 * constructor's debug line at load.  A forked child reads again at first
 * use, as a new process would: a child may change a switch for itself
 * (unit.test_pubtab turns the fast path off in one).
 */
#ifndef SV_UTIL_ENV_H
#define SV_UTIL_ENV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>

/* rdma-core's IBV_SYSFS_PATH_MAX: the longest sysfs root it accepts. */
#define SV_ENV_PATH_MAX 256
/* A file name (VERBS_LOG_FILE): PATH_MAX. */
#define SV_ENV_FILE_MAX 4096
/* An SV_ENV_INT or SV_ENV_CNUM variable that is not set (its default). */
#define SV_ENV_UNSET INT_MIN

struct sv_env {
	int log; /* SOFTVERBS_LOG: enum sv_log_lvl, any integer taken */
	int verbs_log_level; /* VERBS_LOG_LEVEL, rdma-core's numbering */
	int mtu; /* SOFTVERBS_MTU in bytes, 0: the interfaces' MTU */
	int trace; /* SOFTVERBS_TRACE */
	int stats; /* SOFTVERBS_STATS */
	int strict; /* SOFTVERBS_STRICT */
	int fastpath; /* SOFTVERBS_FASTPATH */
	int sysfs; /* SOFTVERBS_SYSFS (the softverbs command) */
	int help; /* SOFTVERBS_HELP */
	int chan_write; /* SOFTVERBS_CHAN_WRITE */
	int loss; /* SOFTVERBS_LOSS, percent */
	int gso; /* SOFTVERBS_GSO */
	int sack; /* SOFTVERBS_SACK */
	int skip_icrc; /* SOFTVERBS_SKIP_ICRC */
	char fault[SV_ENV_FILE_MAX]; /* SOFTVERBS_FAULT, "": none */
	char sysfs_path[SV_ENV_PATH_MAX]; /* SYSFS_PATH */
	char log_file[SV_ENV_FILE_MAX]; /* VERBS_LOG_FILE, "": stderr */
	char pcap[SV_ENV_FILE_MAX]; /* SOFTVERBS_PCAP, "": no capture */
	char roce[SV_ENV_FILE_MAX]; /* SOFTVERBS_ROCE, "": QPN-derived ports */
};

/* The variables, in the order `softverbs help` lists them. */
enum sv_env_id {
	SV_ENV_LOG,
	SV_ENV_VERBS_LOG_LEVEL,
	SV_ENV_VERBS_LOG_FILE,
	SV_ENV_MTU,
	SV_ENV_TRACE,
	SV_ENV_STATS,
	SV_ENV_STRICT,
	SV_ENV_PCAP,
	SV_ENV_FASTPATH,
	SV_ENV_SYSFS,
	SV_ENV_SYSFS_PATH,
	SV_ENV_HELP, /* used by tests only */
	SV_ENV_CHAN_WRITE, /* used by tests only */
	SV_ENV_FAULT,
	SV_ENV_LOSS,
	SV_ENV_GSO,
	SV_ENV_ROCE,
	SV_ENV_SACK,
	SV_ENV_SKIP_ICRC,
	SV_ENV_NVARS
};

enum sv_env_kind {
	SV_ENV_INT, /* atoi; outside min..max: the default */
	SV_ENV_ON, /* 1 when set, not empty and not "0"; else 0 */
	SV_ENV_OFF, /* 0 when exactly "0"; else 1 */
	SV_ENV_DIR, /* a directory, trailing '/' dropped; secure_getenv */
	SV_ENV_CNUM, /* strtol base 0 (rdma-core's way); outside: default */
	SV_ENV_PATH, /* a file name as given, "" when unset; secure_getenv */
	SV_ENV_TEXT, /* a string as given, "" when unset; secure_getenv */
};

struct sv_env_var {
	const char *name;
	enum sv_env_kind kind;
	size_t off; /* its field in struct sv_env */
	int min, max, def; /* SV_ENV_INT */
	const char *values; /* what to set it to, as documented */
	const char *dflt; /* the default, as documented (SV_ENV_DIR: used) */
	const char *what; /* what it does, one line */
};

extern const struct sv_env_var sv_env_vars[SV_ENV_NVARS];

/* The struct, each field valid once its variable was read. */
extern struct sv_env sv_env_data;
extern atomic_bool sv_env_got[SV_ENV_NVARS];
void sv_env_read(enum sv_env_id id);

/* The struct with variable id read (on first use; thread-safe). */
static inline const struct sv_env *sv_env(enum sv_env_id id)
{
	if (!atomic_load_explicit(&sv_env_got[id], memory_order_acquire))
		sv_env_read(id);
	return &sv_env_data;
}

/* What the layers call: one per variable. */
static inline int sv_env_log(void)
{
	return sv_env(SV_ENV_LOG)->log;
}

static inline int sv_env_verbs_log_level(void)
{
	return sv_env(SV_ENV_VERBS_LOG_LEVEL)->verbs_log_level;
}

static inline const char *sv_env_log_file(void)
{
	return sv_env(SV_ENV_VERBS_LOG_FILE)->log_file;
}

static inline int sv_env_mtu(void)
{
	return sv_env(SV_ENV_MTU)->mtu;
}

static inline int sv_env_trace(void)
{
	return sv_env(SV_ENV_TRACE)->trace;
}

static inline int sv_env_stats(void)
{
	return sv_env(SV_ENV_STATS)->stats;
}

static inline int sv_env_strict(void)
{
	return sv_env(SV_ENV_STRICT)->strict;
}

static inline const char *sv_env_pcap(void)
{
	return sv_env(SV_ENV_PCAP)->pcap;
}

static inline int sv_env_fastpath(void)
{
	return sv_env(SV_ENV_FASTPATH)->fastpath;
}

static inline int sv_env_sysfs(void)
{
	return sv_env(SV_ENV_SYSFS)->sysfs;
}

static inline const char *sv_env_sysfs_path(void)
{
	return sv_env(SV_ENV_SYSFS_PATH)->sysfs_path;
}

static inline int sv_env_help(void)
{
	return sv_env(SV_ENV_HELP)->help;
}

static inline int sv_env_chan_write(void)
{
	return sv_env(SV_ENV_CHAN_WRITE)->chan_write;
}

static inline int sv_env_loss(void)
{
	return sv_env(SV_ENV_LOSS)->loss;
}

static inline int sv_env_gso(void)
{
	return sv_env(SV_ENV_GSO)->gso;
}

static inline int sv_env_sack(void)
{
	return sv_env(SV_ENV_SACK)->sack;
}

static inline int sv_env_skip_icrc(void)
{
	return sv_env(SV_ENV_SKIP_ICRC)->skip_icrc;
}

static inline const char *sv_env_fault(void)
{
	return sv_env(SV_ENV_FAULT)->fault;
}

/* SOFTVERBS_ROCE as given ("standard", "" when unset; engine/transport/links.c
 * says what any other value means). */
static inline const char *sv_env_roce(void)
{
	return sv_env(SV_ENV_ROCE)->roce;
}

/* Parse the whole environment as it is now into e (tests). */
void sv_env_parse(struct sv_env *e);
/* The table as `softverbs help` shows it. */
void sv_env_print(FILE *f);

#endif
