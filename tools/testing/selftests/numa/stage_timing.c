// SPDX-License-Identifier: GPL-2.0
/*
 * stage_timing - the migration stage interface counts what really moved.
 *
 * Switches on /sys/kernel/debug/mm/migrate_stages (CONFIG_MIGRATE_STAGES),
 * moves a private anonymous buffer of base pages to another node with
 * move_pages(2) and checks that the per-stage counts for the syscall
 * reason agree with the pages that moved: one alloc, unmap, copy, remap
 * and window per folio (give or take a few transient retries), and at
 * least one batched flush.  Also checks that bad
 * writes are refused and that reset clears the counters.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>

#include "../kselftest_harness.h"
#include "numa_util.h"

#define STAGES_FILE	"/sys/kernel/debug/mm/migrate_stages"
#define LOG_FILE	"/sys/kernel/debug/mm/migrate_stages_log"
/* ts, reason, rc, copy_ns and window_ns of a migrate_stages_log row */
#define LOG_ROW		"%llu,%31[^,],%*d,%*u,%d,%*x,%*x,%*u,%*u,%*u,%llu,%*u,%*u,%llu"
#define NR_PAGES	1024
#define SLACK		16	/* transient retries tolerated */

/* Count of @stage in the "reason @reason" line, -1 if absent. */
static long long reason_count(const char *text, const char *reason,
			      const char *stage)
{
	char key[64], want[64];
	const char *line;

	snprintf(key, sizeof(key), "reason %s ", reason);
	line = strstr(text, key);
	if (!line)
		return -1;
	snprintf(want, sizeof(want), " %s=", stage);
	for (const char *p = line; *p && *p != '\n'; p++)
		if (!strncmp(p, want, strlen(want)))
			return strtoll(p + strlen(want), NULL, 10);
	return -1;
}

/* Value of a "name value" line, -1 if absent. */
static long long total(const char *text, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(text, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static int spin_stop;

/*
 * Keep the mm live on a second CPU: only then does the rmap walk defer
 * the TLB flush to the batch (on one CPU it flushes locally at once).
 */
static void *spinner(void *arg)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(*(int *)arg, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!__atomic_load_n(&spin_stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/* Pin the caller to one allowed CPU and return another one, or -1. */
static int pick_cpus(void)
{
	cpu_set_t set, one;
	int first = -1;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (first < 0) {
			first = c;
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			sched_setaffinity(0, sizeof(one), &one);
			continue;
		}
		return c;
	}
	return -1;
}

TEST(rejects_bad_input)
{
	if (access(STAGES_FILE, F_OK))
		NU_SKIP(return, "%s missing (no CONFIG_MIGRATE_STAGES or no debugfs)",
			STAGES_FILE);
	EXPECT_EQ(-EINVAL, nu_write_str(STAGES_FILE, "bogus"));
	EXPECT_EQ(-EINVAL, nu_write_str(STAGES_FILE, "sample 0"));
}

/*
 * Each case: stages on and every folio timed, a buffer of NR_PAGES base
 * pages on @src moved to @dst with a second CPU keeping the mm live, the
 * summary read back into @text.
 */
FIXTURE(st) {
	int src, dst, moved, every, spin_cpu;
	long page;
	char *buf;
	char text[16384];
};

/* The first memory node with CPUs, and another memory node. */
static int pick_nodes(int *src, int *dst)
{
	struct nu_topo topo;

	*src = *dst = -1;
	if (nu_topo_read(&topo))
		return -1;
	for (int i = 0; i < topo.nr_nodes; i++) {
		struct nu_node *nd = &topo.node[i];

		if (!nd->has_memory || !nd->allowed)
			continue;
		if (*src < 0 && nd->has_cpu && nd->nr_cpus)
			*src = nd->id;
		else if (*dst < 0 && nd->id != *src)
			*dst = nd->id;
	}
	return *src < 0 || *dst < 0 ? -1 : 0;
}

/* NR_PAGES base pages on @node, page i holding byte i; NULL on failure. */
static char *make_buf(int node, long page, void **pages)
{
	unsigned long mask = 1UL << node;
	char *buf;

	if (nu_set_mempolicy(MPOL_BIND, &mask, 8 * sizeof(mask)))
		return NULL;
	buf = mmap(NULL, NR_PAGES * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf != MAP_FAILED) {
		madvise(buf, NR_PAGES * page, MADV_NOHUGEPAGE);
		for (int i = 0; i < NR_PAGES; i++) {
			buf[i * page] = i;
			pages[i] = buf + i * page;
		}
	}
	nu_set_mempolicy(MPOL_DEFAULT, NULL, 0);
	return buf == MAP_FAILED ? NULL : buf;
}

/* Move the buffer to @dst with the spinner up; pages that got there. */
static int move_buf(FIXTURE_DATA(st) *self, void **pages)
{
	int status[NR_PAGES], nodes[NR_PAGES], moved = 0, ret;
	pthread_t spin_tid;

	for (int i = 0; i < NR_PAGES; i++)
		nodes[i] = self->dst;
	spin_stop = 0;
	self->spin_cpu = pick_cpus();
	if (self->spin_cpu >= 0 &&
	    pthread_create(&spin_tid, NULL, spinner, &self->spin_cpu))
		self->spin_cpu = -1;
	if (self->spin_cpu >= 0)
		usleep(100000);	/* let the spinner reach its CPU */
	ret = nu_move_pages_where(0, NR_PAGES, pages, nodes, status,
				  MPOL_MF_MOVE);
	if (self->spin_cpu >= 0) {
		__atomic_store_n(&spin_stop, 1, __ATOMIC_RELAXED);
		pthread_join(spin_tid, NULL);
	}
	if (ret < 0)
		return -1;
	for (int i = 0; i < NR_PAGES; i++)
		moved += status[i] == self->dst;
	return moved;
}

FIXTURE_SETUP(st)
{
	void *pages[NR_PAGES];

	self->buf = NULL;
	self->every = 0;
	self->page = sysconf(_SC_PAGESIZE);
	if (access(STAGES_FILE, F_OK))
		NU_SKIP(return, "%s missing (no CONFIG_MIGRATE_STAGES or no debugfs)",
			STAGES_FILE);
	if (pick_nodes(&self->src, &self->dst))
		NU_SKIP(return, "needs two memory nodes, one with CPUs");
	/* time every folio so the counts can be compared with what moved */
	ASSERT_LT(0, nu_read_all(STAGES_FILE, self->text, sizeof(self->text)));
	ASSERT_NE(NULL, strstr(self->text, "sample_every "));
	self->every = strtol(strstr(self->text, "sample_every ") + 13, NULL, 10);
	ASSERT_EQ(0, nu_write_str(STAGES_FILE, "sample 1"));
	ASSERT_EQ(0, nu_write_str(STAGES_FILE, "reset"));
	ASSERT_EQ(0, nu_write_str(STAGES_FILE, "1"));
	self->buf = make_buf(self->src, self->page, pages);
	ASSERT_NE(NULL, self->buf);
	self->moved = move_buf(self, pages);
	ASSERT_LT(0, self->moved);
	ASSERT_LT(0, nu_read_all(STAGES_FILE, self->text, sizeof(self->text)));
	TH_LOG("moved %d of %d pages from node %d to node %d", self->moved,
	       NR_PAGES, self->src, self->dst);
}

FIXTURE_TEARDOWN(st)
{
	char cmd[32];

	if (self->every) {
		nu_write_str(STAGES_FILE, "0");
		snprintf(cmd, sizeof(cmd), "sample %d", self->every);
		nu_write_str(STAGES_FILE, cmd);
	}
	if (self->buf)
		munmap(self->buf, NR_PAGES * self->page);
}

/*
 * One event per moved folio; a folio retried after a transient failure
 * may add one more, never fewer.  The window is timed only on a batch's
 * first pass.
 */
TEST_F(st, counts_match_migrated)
{
	static const char * const per_folio[] = {
		"alloc", "unmap", "copy", "remap", "window",
	};
	long long v, moved = self->moved;

	for (int i = 0; i < 5; i++) {
		bool window = !strcmp(per_folio[i], "window");

		v = reason_count(self->text, "syscall_or_cpuset", per_folio[i]);
		TH_LOG("%s count %lld for %lld pages moved", per_folio[i], v,
		       moved);
		EXPECT_LE(window ? moved - SLACK : moved, v);
		EXPECT_GE(window ? moved : moved + SLACK, v);
	}
	v = reason_count(self->text, "syscall_or_cpuset", "flush");
	if (self->spin_cpu < 0) {
		TH_LOG("one CPU only: flush count %lld not checked", v);
	} else {
		EXPECT_LE(1, v);
		EXPECT_GE(moved, v);
	}
	EXPECT_LE(moved * self->page, total(self->text, "bytes_copied"));
}

/* The per-folio log has a row for each moved page. */
TEST_F(st, log_records_folios)
{
	static char log[1 << 20];
	long long rows = 0, bad = 0;
	char *line, *save;

	if (nu_read_all(LOG_FILE, log, sizeof(log)) <= 0)
		log[0] = '\0';
	for (line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long ts, copy, window;
		char reason[32];
		int rc;

		if (sscanf(line, LOG_ROW, &ts, reason, &rc, &copy, &window) != 5 ||
		    strcmp(reason, "syscall_or_cpuset") || rc)
			continue;
		rows++;
		/* a folio stays unmapped at least while it is copied */
		bad += window && window < copy;
	}
	TH_LOG("%lld rows, %lld inconsistent", rows, bad);
	EXPECT_LE(self->moved, rows);
	EXPECT_GE(self->moved + SLACK, rows);
	EXPECT_EQ(0, bad);
}

/* Every data byte survived the move. */
TEST_F(st, data_intact)
{
	int bad = 0;

	for (int i = 0; i < NR_PAGES; i++)
		bad += self->buf[i * self->page] != (char)i;
	EXPECT_EQ(0, bad);
}

/* Reset clears the counters; switching off is accepted. */
TEST_F(st, reset_clears)
{
	ASSERT_EQ(0, nu_write_str(STAGES_FILE, "0"));
	ASSERT_EQ(0, nu_write_str(STAGES_FILE, "reset"));
	ASSERT_LT(0, nu_read_all(STAGES_FILE, self->text, sizeof(self->text)));
	EXPECT_EQ(0, total(self->text, "batches"));
	EXPECT_EQ(NULL, strstr(self->text, "reason syscall_or_cpuset"));
}

TEST_HARNESS_MAIN
