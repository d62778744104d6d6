/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The environment table (util/env.c): every variable parses as the code
 * that read it before the table did (ranges, defaults, what bad input
 * does), the values are read once per process and again in a forked
 * child, and README.md's list between its env:begin/env:end markers is
 * the table, row for row (it prints the rows it expects when not).
 */
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "util/env.h"

/* Parse with name set to val (NULL: unset); the variable is unset after. */
static struct sv_env with(const char *name, const char *val)
{
	struct sv_env e;

	if (val)
		setenv(name, val, 1);
	else
		unsetenv(name);
	memset(&e, 0x5a, sizeof(e));
	sv_env_parse(&e);
	unsetenv(name);
	return e;
}

static void test_parse(void)
{
	char longp[400];

	CHECK_EQ(with("SOFTVERBS_LOG", NULL).log, SV_ENV_UNSET);
	CHECK_EQ(with("SOFTVERBS_LOG", "2").log, 2);
	CHECK_EQ(with("SOFTVERBS_LOG", "7").log, 7); /* atoi, no range */
	CHECK_EQ(with("SOFTVERBS_LOG", "-1").log, -1);
	CHECK_EQ(with("SOFTVERBS_LOG", "abc").log, 0);

	/* rdma-core's strtol(s, NULL, 0), no range. */
	CHECK_EQ(with("VERBS_LOG_LEVEL", NULL).verbs_log_level, SV_ENV_UNSET);
	CHECK_EQ(with("VERBS_LOG_LEVEL", "4").verbs_log_level, 4);
	CHECK_EQ(with("VERBS_LOG_LEVEL", "0x2").verbs_log_level, 2);
	CHECK_EQ(with("VERBS_LOG_LEVEL", "0").verbs_log_level, 0);
	CHECK(!strcmp(with("VERBS_LOG_FILE", NULL).log_file, ""));
	CHECK(!strcmp(with("VERBS_LOG_FILE", "/tmp/x.log").log_file,
		      "/tmp/x.log"));

	/* 256..4096, anything else: the interfaces' MTU (0). */
	CHECK_EQ(with("SOFTVERBS_MTU", NULL).mtu, 0);
	CHECK_EQ(with("SOFTVERBS_MTU", "1024").mtu, 1024);
	CHECK_EQ(with("SOFTVERBS_MTU", "1500").mtu, 1500);
	CHECK_EQ(with("SOFTVERBS_MTU", "256").mtu, 256);
	CHECK_EQ(with("SOFTVERBS_MTU", "4096").mtu, 4096);
	CHECK_EQ(with("SOFTVERBS_MTU", "255").mtu, 0);
	CHECK_EQ(with("SOFTVERBS_MTU", "4097").mtu, 0);
	CHECK_EQ(with("SOFTVERBS_MTU", "big").mtu, 0);

	/* On when set, not empty and not "0". */
	CHECK_EQ(with("SOFTVERBS_TRACE", NULL).trace, 0);
	CHECK_EQ(with("SOFTVERBS_TRACE", "").trace, 0);
	CHECK_EQ(with("SOFTVERBS_TRACE", "0").trace, 0);
	CHECK_EQ(with("SOFTVERBS_TRACE", "1").trace, 1);
	CHECK_EQ(with("SOFTVERBS_TRACE", "00").trace, 1);
	CHECK_EQ(with("SOFTVERBS_STATS", NULL).stats, 0);
	CHECK_EQ(with("SOFTVERBS_STATS", "").stats, 0);
	CHECK_EQ(with("SOFTVERBS_STATS", "0").stats, 0);
	CHECK_EQ(with("SOFTVERBS_STATS", "yes").stats, 1);

	/* Off only when exactly "0". */
	CHECK_EQ(with("SOFTVERBS_FASTPATH", NULL).fastpath, 1);
	CHECK_EQ(with("SOFTVERBS_FASTPATH", "").fastpath, 1);
	CHECK_EQ(with("SOFTVERBS_FASTPATH", "0").fastpath, 0);
	CHECK_EQ(with("SOFTVERBS_FASTPATH", "00").fastpath, 1);
	CHECK_EQ(with("SOFTVERBS_FASTPATH", "off").fastpath, 1);
	CHECK_EQ(with("SOFTVERBS_HELP", NULL).help, 1);
	CHECK_EQ(with("SOFTVERBS_HELP", "").help, 1);
	CHECK_EQ(with("SOFTVERBS_HELP", "0").help, 0);
	CHECK_EQ(with("SOFTVERBS_HELP", "1").help, 1);
	CHECK_EQ(with("SOFTVERBS_CHAN_WRITE", NULL).chan_write, 1);
	CHECK_EQ(with("SOFTVERBS_CHAN_WRITE", "0").chan_write, 0);

	/* 0..100 percent, anything else: none. */
	CHECK_EQ(with("SOFTVERBS_LOSS", NULL).loss, 0);
	CHECK_EQ(with("SOFTVERBS_LOSS", "10").loss, 10);
	CHECK_EQ(with("SOFTVERBS_LOSS", "100").loss, 100);
	CHECK_EQ(with("SOFTVERBS_LOSS", "101").loss, 0);
	CHECK_EQ(with("SOFTVERBS_LOSS", "-5").loss, 0);
	CHECK_EQ(with("SOFTVERBS_LOSS", "x").loss, 0);

	/* The fault spec as given (engine/diag/inject.c parses it). */
	CHECK(!strcmp(with("SOFTVERBS_FAULT", NULL).fault, ""));
	CHECK(!strcmp(with("SOFTVERBS_FAULT", "drop=1%;seed=3").fault,
		      "drop=1%;seed=3"));

	/* The RoCE mode as given (engine/transport/links.c parses it). */
	CHECK(!strcmp(with("SOFTVERBS_ROCE", NULL).roce, ""));
	CHECK(!strcmp(with("SOFTVERBS_ROCE", "standard").roce, "standard"));

	/* The sysfs root: trailing slashes dropped, cut at 255 bytes. */
	CHECK(!strcmp(with("SYSFS_PATH", NULL).sysfs_path, "/sys"));
	CHECK(!strcmp(with("SYSFS_PATH", "/tmp/fake-sys///").sysfs_path,
		      "/tmp/fake-sys"));
	CHECK(!strcmp(with("SYSFS_PATH", "/").sysfs_path, ""));
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	CHECK_EQ(strlen(with("SYSFS_PATH", longp).sysfs_path),
		 SV_ENV_PATH_MAX - 1);
}

/* Each variable read once, at its own first use; a forked child reads
 * again. */
static void test_once(void)
{
	pid_t pid;
	int st;

	setenv("SOFTVERBS_LOSS", "7", 1);
	CHECK_EQ(sv_env_loss(), 7);
	setenv("SOFTVERBS_LOSS", "9", 1);
	CHECK_EQ(sv_env_loss(), 7);
	/* Another variable set after that one was read still counts. */
	setenv("SOFTVERBS_STATS", "1", 1);
	CHECK_EQ(sv_env_stats(), 1);
	unsetenv("SOFTVERBS_STATS");
	CHECK_EQ(sv_env_stats(), 1);
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid)
		_exit(sv_env_loss() == 9 && !sv_env_stats() ? 0 : 1);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(sv_env_loss(), 7);
	unsetenv("SOFTVERBS_LOSS");
}

static void test_table(void)
{
	for (size_t i = 0; i < SV_ENV_NVARS; i++) {
		const struct sv_env_var *v = &sv_env_vars[i];

		CHECK(v->name && v->values && v->dflt && v->what);
		/* `softverbs help` indents it by 6 in 80 columns. */
		CHECK(strlen(v->what) <= 74);
		CHECK(v->off < sizeof(struct sv_env));
		for (size_t j = 0; j < i; j++) {
			CHECK(strcmp(v->name, sv_env_vars[j].name) != 0);
			CHECK(v->off != sv_env_vars[j].off);
		}
	}
}

static void readme_row(const struct sv_env_var *v, char *buf, size_t len)
{
	snprintf(buf, len, "| `%s` | %s | %s | %s |", v->name, v->values,
		 v->dflt, v->what);
}

static bool in_table(const char *name)
{
	for (size_t i = 0; i < SV_ENV_NVARS; i++)
		if (!strcmp(name, sv_env_vars[i].name))
			return true;
	return false;
}

static void test_readme(void)
{
	FILE *f = fopen(SV_SOURCE_DIR "/README.md", "r");
	char line[1024], want[1024];
	size_t row = 0;
	bool in = false, ok = true, seen_end = false;
	int header = 0;
	regex_t re;
	regmatch_t m;

	REQUIRE(f != NULL);
	REQUIRE(!regcomp(&re, "SOFTVERBS_[A-Z_]+", REG_EXTENDED));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		/* Every SOFTVERBS_ variable README names anywhere exists. */
		for (const char *p = line; !regexec(&re, p, 1, &m, 0);
		     p += m.rm_eo) {
			char name[64];

			snprintf(name, sizeof(name), "%.*s",
				 (int)(m.rm_eo - m.rm_so), p + m.rm_so);
			if (!in_table(name)) {
				fprintf(stderr,
					"README.md names %s, which "
					"util/env.c does not have\n",
					name);
				ok = false;
			}
		}
		if (!strncmp(line, "<!-- env:begin", 14)) {
			in = true;
			continue;
		}
		if (!in)
			continue;
		if (!strncmp(line, "<!-- env:end", 12)) {
			in = false;
			seen_end = true;
			continue;
		}
		if (header < 2) { /* column names, alignment */
			header++;
			continue;
		}
		if (row < SV_ENV_NVARS)
			readme_row(&sv_env_vars[row], want, sizeof(want));
		if (row >= SV_ENV_NVARS || strcmp(line, want)) {
			fprintf(stderr, "README.md env row %zu: %s\n", row + 1,
				line);
			ok = false;
		}
		row++;
	}
	fclose(f);
	regfree(&re);
	CHECK(seen_end);
	CHECK_EQ(row, SV_ENV_NVARS);
	CHECK(ok);
	if (!ok || row != SV_ENV_NVARS) {
		fprintf(stderr, "README.md's env table should read:\n");
		for (size_t i = 0; i < SV_ENV_NVARS; i++) {
			readme_row(&sv_env_vars[i], want, sizeof(want));
			fprintf(stderr, "%s\n", want);
		}
	}
}

int main(void)
{
	test_parse();
	test_table();
	test_once();
	test_readme();
	return check_done();
}
