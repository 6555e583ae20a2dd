// SPDX-License-Identifier: GPL-2.0
/*
 * DAMON and private nodes: a DAMOS_MIGRATE_COLD scheme (DAMOS_MIGRATE_HOT
 * takes the same path) never moves a private node's folios off the node,
 * whatever the caps its owner granted, and never moves folios onto a
 * private node.  Each check runs the scheme until DAMON reports that it
 * tried it many times; the control runs the same scheme between two normal
 * nodes and must move every page, so a page that stays put means the
 * check held, not that DAMON did nothing.
 *
 *   paddr_off_private    physical-address operations, folios on the node
 *   paddr_onto_private   physical-address operations, the node the target
 *   vaddr_off_private    virtual-address operations (Linux 7.3 gave them
 *                        the migrate actions; skipped where they have none)
 *
 * Needs CONFIG_DAMON_SYSFS with DAMON_PADDR and DAMON_VADDR, the test
 * provider (CONFIG_NUMA_PRIVATE_NODES_TEST), a carved memory-only node
 * ("scripts/vm --private-nodes") and two normal nodes, 0 and 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/mempolicy.h>

#include "../kselftest_harness.h"
#include "numa_util.h"
#include "private_util.h"

#define KD		"/sys/kernel/mm/damon/admin/kdamonds/"
#define CTX		KD "0/contexts/0/"
#define SCHEME		CTX "schemes/0/"
#define LEN		(4 * MB)
#define TRIES		20	/* scheme tries that make a check count */
#define WAIT_SECS	60	/* bound on every wait, whatever it waits for */

static int dw(const char *path, const char *fmt, ...)
{
	char val[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	return nu_write_str(path, val);
}

/* One kdamond, one context of @ops, one target, one scheme: set up, off. */
static int damon_layout(const char *ops)
{
	if (dw(KD "nr_kdamonds", "1") ||
	    dw(KD "0/contexts/nr_contexts", "1") ||
	    dw(CTX "operations", "%s", ops) ||
	    dw(CTX "targets/nr_targets", "1") ||
	    dw(CTX "schemes/nr_schemes", "1"))
		return -1;
	return 0;
}

/* Migrate every region to @nid, whatever its size, accesses and age. */
static int damon_scheme(int nid)
{
	static const char * const keys[] = { "sz", "nr_accesses", "age" };
	char path[160];
	int i;

	if (dw(SCHEME "action", "migrate_cold") ||
	    dw(SCHEME "target_nid", "%d", nid))
		return -1;
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), SCHEME "access_pattern/%s/max",
			 keys[i]);
		if (dw(path, "%s", i ? "4294967295" : "18446744073709551615"))
			return -1;
		snprintf(path, sizeof(path), SCHEME "access_pattern/%s/min",
			 keys[i]);
		if (dw(path, "0"))
			return -1;
	}
	return 0;
}

/* The physical-address region [start, end) is the target. */
static int damon_region(unsigned long start, unsigned long end)
{
	if (dw(CTX "targets/0/regions/nr_regions", "1") ||
	    dw(CTX "targets/0/regions/0/end", "%lu", end) ||
	    dw(CTX "targets/0/regions/0/start", "%lu", start))
		return -1;
	return 0;
}

static void damon_off(void)
{
	dw(KD "0/state", "off");
	dw(KD "nr_kdamonds", "0");
}

/*
 * A statistic of the running scheme: "nr_tried", the tries on a region,
 * or "nr_applied", those that moved something (0 where the ops cannot).
 */
static long long damon_stat(const char *name)
{
	char path[160];

	if (dw(KD "0/state", "update_schemes_stats"))
		return -1;
	snprintf(path, sizeof(path), SCHEME "stats/%s", name);
	return nu_read_ll(path);
}

/* Wait, at most WAIT_SECS, until the scheme was tried TRIES times. */
static bool damon_wait_tried(void)
{
	int i;

	for (i = 0; i < WAIT_SECS * 4; i++) {
		if (damon_stat("nr_tried") >= TRIES)
			return true;
		usleep(250 * 1000);
	}
	return false;
}

/*
 * Wait, at most WAIT_SECS, until all @len bytes at @p of task @pid sit
 * on @nid; how many pages do in the end (-1 on error).
 */
static long wait_on(pid_t pid, char *p, size_t len, int nid)
{
	long n = len / PAGE, on = -1, i;
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status));
	int t;

	for (i = 0; pages && status && i < n; i++)
		pages[i] = p + i * PAGE;
	for (t = 0; pages && status && t < WAIT_SECS * 4; t++) {
		if (nu_move_pages(pid, n, pages, NULL, status, 0))
			break;
		for (on = 0, i = 0; i < n; i++)
			on += status[i] == nid;
		if (on == n)
			break;
		usleep(250 * 1000);
	}
	free(pages);
	free(status);
	return on;
}

/* The physical span [*start, *end) of this task's [p, p+len). */
static int phys_span(char *p, size_t len, unsigned long *start,
		     unsigned long *end)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	unsigned long lo = ~0UL, hi = 0, pfn;
	uint64_t e;
	size_t off;

	if (fd < 0)
		return -1;
	for (off = 0; off < len; off += PAGE) {
		if (pread(fd, &e, sizeof(e),
			  ((unsigned long)p + off) / PAGE * sizeof(e)) != sizeof(e) ||
		    !(e >> 63))
			break;
		pfn = e & ((1ULL << 55) - 1);
		lo = pfn < lo ? pfn : lo;
		hi = pfn > hi ? pfn : hi;
	}
	close(fd);
	if (off < len || !hi)
		return -1;
	*start = lo * PAGE;
	*end = (hi + 1) * PAGE;
	return 0;
}

FIXTURE(pd) {
	int nid;
	bool claimed;
	bool damon;
	pid_t child;
};

FIXTURE_SETUP(pd)
{
	int nids[NU_MAX_NODES];

	self->claimed = false;
	self->damon = false;
	self->child = 0;
	if (access(KD "nr_kdamonds", W_OK))
		NU_SKIP(return, "no DAMON sysfs interface (CONFIG_DAMON_SYSFS)");
	if (access(NPT "claim", W_OK))
		NU_SKIP(return, "no node_private_test provider (CONFIG_NUMA_PRIVATE_NODES_TEST)");
	if (carved_nodes(nids, NU_MAX_NODES, true) < 1)
		NU_SKIP(return, "no carved memory-only node: boot with scripts/vm --private-nodes");
	if (nu_node_memfree_kb(1) < 64 * 1024)
		NU_SKIP(return, "needs a second normal node (node 1) with memory");
	self->nid = nids[0];
	/* every cap but the fence: DAMON leaves the folios alone anyway */
	ASSERT_EQ(0, npt_write("claim", "%d %#x movable", self->nid,
			       CAP_RECLAIM | CAP_USER_NUMA | CAP_HOTUNPLUG |
			       CAP_NUMA_BALANCING));
	self->claimed = true;
}

FIXTURE_TEARDOWN(pd)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	if (self->damon)
		damon_off();
	if (self->claimed)
		EXPECT_EQ(0, npt_write("release", "%d", self->nid));
}

/* Run a paddr scheme over @p's physical span, moving it to @to. */
static int paddr_run(char *p, int to)
{
	unsigned long start, end;

	if (phys_span(p, LEN, &start, &end) || damon_layout("paddr") ||
	    damon_region(start, end) || damon_scheme(to))
		return -1;
	return dw(KD "0/state", "on");
}

static void damon_stop(void)
{
	dw(KD "0/state", "off");
}

TEST_F_TIMEOUT(pd, paddr_off_private, 300)
{
	char *p = nu_anon_bound(LEN, MPOL_BIND, self->nid, 0xda01);
	char *dram = nu_anon_bound(LEN, MPOL_BIND, 1, 0xda02);

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, dram);
	ASSERT_EQ(LEN / PAGE, nu_pages_on(p, LEN, self->nid));
	self->damon = true;
	ASSERT_EQ(0, paddr_run(p, 0));
	ASSERT_TRUE(damon_wait_tried())
		TH_LOG("DAMON did not try the scheme %d times in %d s",
		       TRIES, WAIT_SECS);
	EXPECT_EQ(LEN / PAGE, nu_pages_on(p, LEN, self->nid))
		TH_LOG("migrate_cold moved folios off private node %d",
		       self->nid);
	damon_stop();
	/* control: the same scheme over a node 1 buffer moves all of it */
	ASSERT_EQ(0, paddr_run(dram, 0));
	EXPECT_EQ(LEN / PAGE, wait_on(0, dram, LEN, 0))
		TH_LOG("the control did not move within %d s", WAIT_SECS);
	EXPECT_TRUE(nu_intact(p, LEN, 0xda01));
	EXPECT_TRUE(nu_intact(dram, LEN, 0xda02));
	munmap(p, LEN);
	munmap(dram, LEN);
}

TEST_F_TIMEOUT(pd, paddr_onto_private, 300)
{
	char *dram = nu_anon_bound(LEN, MPOL_BIND, 1, 0xda03);

	ASSERT_NE(NULL, dram);
	self->damon = true;
	ASSERT_EQ(0, paddr_run(dram, self->nid));
	ASSERT_TRUE(damon_wait_tried())
		TH_LOG("DAMON did not try the scheme %d times in %d s",
		       TRIES, WAIT_SECS);
	EXPECT_EQ(0, nu_pages_on(dram, LEN, self->nid))
		TH_LOG("migrate_cold put folios on private node %d",
		       self->nid);
	damon_stop();
	/* control: aimed at node 0 instead, the scheme moves all of it */
	ASSERT_EQ(0, paddr_run(dram, 0));
	EXPECT_EQ(LEN / PAGE, wait_on(0, dram, LEN, 0))
		TH_LOG("the control did not move within %d s", WAIT_SECS);
	EXPECT_TRUE(nu_intact(dram, LEN, 0xda03));
	munmap(dram, LEN);
}

/* A child that holds @len bytes on @nid (a bind) and waits to be killed. */
static pid_t hold_child(int nid, char **at)
{
	int fds[2];
	char *p;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		p = nu_anon_bound(LEN, MPOL_BIND, nid, 0xda04);
		if (!p || write(fds[1], &p, sizeof(p)) != sizeof(p))
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], at, sizeof(*at)) != sizeof(*at))
		pid = pid < 0 ? pid : -2;
	close(fds[0]);
	return pid;
}

/* Run a vaddr scheme over task @pid, moving it to @to. */
static int vaddr_run(pid_t pid, int to)
{
	if (damon_layout("vaddr") ||
	    dw(CTX "targets/0/pid_target", "%d", pid) || damon_scheme(to))
		return -1;
	return dw(KD "0/state", "on");
}

/* Kill the child of a previous step, if any, and start one on @nid. */
static char *next_child(pid_t *child, int nid)
{
	char *p = NULL;

	if (*child > 0) {
		kill(*child, SIGKILL);
		waitpid(*child, NULL, 0);
	}
	*child = hold_child(nid, &p);
	return *child > 0 ? p : NULL;
}

TEST_F_TIMEOUT(pd, vaddr_off_private, 300)
{
	char *p;

	/*
	 * Control first: where vaddr cannot migrate, the check means nothing.
	 * Such operations still count each try, with nothing applied (6.12).
	 */
	p = next_child(&self->child, 1);
	ASSERT_NE(NULL, p);
	self->damon = true;
	ASSERT_EQ(0, vaddr_run(self->child, 0));
	ASSERT_TRUE(damon_wait_tried())
		TH_LOG("DAMON did not try the control %d times in %d s",
		       TRIES, WAIT_SECS);
	if (damon_stat("nr_applied") == 0)
		NU_SKIP(return, "vaddr migrate_cold applied nothing in %d tries: %s",
			TRIES,
			"no migrate action in the virtual-address operations");
	EXPECT_EQ(LEN / PAGE, wait_on(self->child, p, LEN, 0))
		TH_LOG("the control did not move within %d s", WAIT_SECS);
	damon_stop();
	p = next_child(&self->child, self->nid);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, vaddr_run(self->child, 0));
	ASSERT_TRUE(damon_wait_tried())
		TH_LOG("DAMON did not try the scheme %d times in %d s",
		       TRIES, WAIT_SECS);
	EXPECT_EQ(LEN / PAGE, wait_on(self->child, p, LEN, self->nid))
		TH_LOG("migrate_cold moved folios off private node %d",
		       self->nid);
}

TEST_HARNESS_MAIN
