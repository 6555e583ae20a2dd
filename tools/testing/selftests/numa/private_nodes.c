// SPDX-License-Identifier: GPL-2.0
/*
 * private_nodes: private memory NUMA nodes (CONFIG_NUMA_PRIVATE_NODES).
 *
 * Needs the test provider (CONFIG_NUMA_PRIVATE_NODES_TEST) and a guest
 * with memory-only nodes carved out by memmap=SIZE!START, as booted by
 * "scripts/vm --private-nodes".  Each test claims a carved node through
 * /sys/kernel/debug/node_private_test/ with the caps it needs, checks one
 * behaviour both ways where it has two, and releases the node again.
 *
 *   containment        anon, tmpfs, slab, hugetlb and in-kernel
 *                      __GFP_THISNODE pressure never allocate one page
 *                      on the private node (numastat and MemFree)
 *   containment_detects_leak  the same check fails when the provider
 *                      deliberately puts the node in N_MEMORY
 *   user_numa_on/off, hotunplug_on/off, ltpin_on/off: the cap matrix
 *   ltpin_off_fault_in  pages a long-term pin faults in under a policy on
 *                      a node without LTPIN go to normal memory
 *   user_numa_revoked  a policy made while the node had USER_NUMA stops
 *                      placing pages there once the cap is gone
 *   migrate_pages_unprivileged  migrate_pages(2) onto the node needs no
 *                      CAP_SYS_NICE
 *   directed_oom_*     exhausting the node never spills into DRAM
 *   reclaim_on/off     MADV_PAGEOUT swaps the node's folios out (and they
 *                      fault back onto the node intact), kswapd runs and
 *                      nodeN/compact and nodeN/reclaim work only with
 *                      RECLAIM
 *   numa_balancing     hint faults of a task on node 0 pull its pages
 *                      off the node only with NUMA_BALANCING
 *   registration_rules, bad_input, state_files, zonelists
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/mempolicy.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "../../../../mm/gup_test.h"
#include "numa_util.h"
#include "private_util.h"

/*
 * Allocations the allocator served from @nid so far (hit + miss): one
 * per call, whatever its order.
 */
static unsigned long long node_allocs(int nid)
{
	struct nu_numastat ns;

	if (nu_read_numastat(nid, &ns))
		return ~0ULL;
	return ns.numa_hit + ns.numa_miss;
}

/* Anonymous memory on @nid from the provider, whatever the node's caps. */
static char *anon_on(int nid, size_t len)
{
	char path[128];
	char *p;
	int fd;

	snprintf(path, sizeof(path), NPT "anon%d", nid);
	fd = open(path, O_RDWR);
	if (fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	nu_fill(p, len, 0x5eed);
	return p;
}

/* numa_maps' count of @p's pages on @nid ("N<nid>="); -1 if none. */
static long numa_maps_pages(const char *p, int nid)
{
	char buf[1 << 16], key[32], *at, *end, *n;

	if (nu_read_all("/proc/self/numa_maps", buf, sizeof(buf)) < 0)
		return -1;
	snprintf(key, sizeof(key), "%lx ", (unsigned long)p);
	at = strstr(buf, key);
	if (!at)
		return -1;
	end = strchr(at, '\n');
	if (end)
		*end = '\0';
	snprintf(key, sizeof(key), " N%d=", nid);
	n = strstr(at, key);
	return n ? atol(n + strlen(key)) : -1;
}

static long mbind_err(int mode, unsigned long mask)
{
	char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long r = nu_mbind(p, PAGE, mode, &mask, NU_MAX_NODES, 0) ? -errno : 0;

	munmap(p, PAGE);
	return r;
}

FIXTURE(pn) {
	int nid;
	int other;	/* second carved node claimed by a test, or -1 */
	bool claimed;
	struct nu_swap sw;	/* swap a test set up, if swapped */
	bool swapped;
	char was_nb[3][16];	/* NUMA balancing settings, if balancing */
	bool balancing;
};

FIXTURE_SETUP(pn)
{
	int nids[NU_MAX_NODES];

	self->claimed = false;
	self->swapped = false;
	self->balancing = false;
	self->other = -1;
	if (access(NPT "claim", W_OK))
		NU_SKIP(return, "no node_private_test provider (CONFIG_NUMA_PRIVATE_NODES_TEST)");
	if (carved_nodes(nids, NU_MAX_NODES, true) < 1)
		NU_SKIP(return, "no carved memory-only node: boot with scripts/vm --private-nodes");
	self->nid = nids[0];
}

FIXTURE_TEARDOWN(pn)
{
	if (self->balancing)
		balancing_restore(self->was_nb);
	if (self->swapped)
		EXPECT_EQ(0, nu_swap_off(&self->sw));
	if (self->other >= 0)
		EXPECT_EQ(0, npt_write("release", "%d", self->other));
	if (self->claimed)
		EXPECT_EQ(0, npt_write("release", "%d", self->nid));
}

#define CLAIM(caps, type) do {						\
	ASSERT_EQ(0, npt_write("claim", "%d %#x %s", self->nid, caps, type)); \
	self->claimed = true;						\
} while (0)

#define RELEASE() do {							\
	ASSERT_EQ(0, npt_write("release", "%d", self->nid));		\
	self->claimed = false;						\
} while (0)

TEST_F(pn, state_files)
{
	CLAIM(0, "movable");
	EXPECT_TRUE(nu_in_nodelist("has_private_memory", self->nid));
	EXPECT_FALSE(nu_in_nodelist("has_memory", self->nid));
	EXPECT_FALSE(nu_in_nodelist("has_normal_memory", self->nid));
	EXPECT_GT(meminfo_kb(self->nid, "MemTotal:"), 0);
	RELEASE();
	EXPECT_FALSE(nu_in_nodelist("has_private_memory", self->nid));
	EXPECT_FALSE(nu_in_nodelist("has_memory", self->nid));
}

/* Check one "<nid> <list>: nodes..." line of node_private/zonelists. */
static void check_zonelist_line(struct __test_metadata *_metadata, char *line)
{
	char list[32], *p = strchr(line, ':');
	bool seen[NU_MAX_NODES] = { false }, private_list;
	int nid, n, off, i;

	ASSERT_NE(NULL, p);
	n = sscanf(line, "%d %31[^:]", &nid, list);
	ASSERT_EQ(2, n);
	private_list = !strncmp(list, "private", 7);
	for (p++; sscanf(p, "%d%n", &n, &off) == 1; p += off) {
		ASSERT_LT(n, NU_MAX_NODES);
		seen[n] = true;
		if (nu_in_nodelist("has_private_memory", n)) {
			EXPECT_TRUE(private_list) TH_LOG("%s", line);
			EXPECT_EQ(nid, n) TH_LOG("%s", line);
		}
	}
	if (strcmp(list, "private"))
		return;
	for (i = 0; i < NU_MAX_NODES; i++)
		if (nu_in_nodelist("has_memory", i))
			EXPECT_TRUE(seen[i]) TH_LOG("%s lacks %d", line, i);
}

TEST_F(pn, zonelists)
{
	int nids[NU_MAX_NODES];
	char buf[16384], *line, *save;

	CLAIM(0, "movable");
	if (carved_nodes(nids, NU_MAX_NODES, true) >= 1) {
		ASSERT_EQ(0, npt_write("claim", "%d 0 movable", nids[0]));
		self->other = nids[0];
	}
	ASSERT_EQ(0, nu_read_all("/sys/kernel/debug/node_private/zonelists",
				 buf, sizeof(buf)) < 0);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		check_zonelist_line(_metadata, line);
}

TEST_F(pn, user_numa_on)
{
	size_t len = 16 * MB;
	unsigned long old = 1UL, new = 1UL << self->nid;
	long npages = len / PAGE;
	char *p;

	CLAIM(CAP_USER_NUMA | CAP_HOTUNPLUG, "movable");
	p = nu_anon_bound(len, MPOL_BIND, self->nid, 0xb1d);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(npages, nu_pages_on(p, len, self->nid));
	/* numa_maps counts them on the node, as the rst says */
	EXPECT_EQ(npages, numa_maps_pages(p, self->nid));
	EXPECT_EQ(0, move_all(p, len, 0));
	EXPECT_EQ(npages, nu_pages_on(p, len, 0));
	EXPECT_EQ(self->nid, move_all(p, len, self->nid));
	EXPECT_EQ(npages, nu_pages_on(p, len, self->nid));
	EXPECT_TRUE(nu_intact(p, len, 0xb1d));
	munmap(p, len);

	p = nu_anon_bound(len, MPOL_PREFERRED, self->nid, 0xb1d);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(npages, nu_pages_on(p, len, self->nid));
	munmap(p, len);

	/* migrate_pages(2) of this task from node 0 onto the private node. */
	p = nu_anon_bound(len, MPOL_BIND, 0, 0xb1d);
	ASSERT_NE(NULL, p);
	EXPECT_LE(0, nu_migrate_pages(0, NU_MAX_NODES, &old, &new));
	EXPECT_EQ(npages, nu_pages_on(p, len, self->nid));
	EXPECT_TRUE(nu_intact(p, len, 0xb1d));
	munmap(p, len);
}

static void set_mempolicy_child(int nid, bool allowed)
{
	unsigned long mask = 1UL << nid;
	size_t len = 4 * MB;
	char *p;

	if (nu_set_mempolicy(MPOL_BIND, &mask, NU_MAX_NODES))
		_exit(allowed ? 10 : (errno == EINVAL ? 0 : 11));
	if (!allowed)
		_exit(12);
	p = malloc(len);
	nu_fill(p, len, 1);
	_exit(nu_pages_on((char *)((unsigned long)(p + PAGE) & ~(PAGE - 1)),
			  len - 2 * PAGE, nid) == (long)(len / PAGE - 2) ?
	      0 : 13);
}

static int run_child(void (*fn)(int, bool), int nid, bool allowed)
{
	int status;
	pid_t pid = fork();

	if (!pid)
		fn(nid, allowed);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

TEST_F(pn, set_mempolicy)
{
	CLAIM(CAP_USER_NUMA, "movable");
	EXPECT_EQ(0, run_child(set_mempolicy_child, self->nid, true));
	RELEASE();
	CLAIM(0, "movable");
	EXPECT_EQ(0, run_child(set_mempolicy_child, self->nid, false));
}

/* A policy outlives the caps it was checked against. */
TEST_F(pn, user_numa_revoked)
{
	size_t len = 16 * MB, half = len / 2;
	unsigned long mask = 1UL << self->nid;
	char *p;

	CLAIM(CAP_USER_NUMA | CAP_HOTUNPLUG, "movable");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, nu_mbind(p, len, MPOL_BIND, &mask, NU_MAX_NODES, 0));
	nu_fill(p, half, 7);
	EXPECT_EQ((long)(half / PAGE), nu_pages_on(p, half, self->nid));
	RELEASE();
	CLAIM(CAP_HOTUNPLUG, "movable");
	nu_fill(p + half, half, 8);
	EXPECT_EQ(0, nu_pages_on(p + half, half, self->nid))
		TH_LOG("a stale policy still places pages on the node");
	EXPECT_TRUE(nu_intact(p, half, 7));
	EXPECT_TRUE(nu_intact(p + half, half, 8));
	munmap(p, len);
}

static void migrate_unprivileged_child(int nid, bool allowed)
{
	unsigned long old = 1UL, new = 1UL << nid;
	size_t len = 4 * MB;
	char *p = nu_anon_bound(len, MPOL_BIND, 0, 0xb1d);

	if (!p)
		_exit(10);
	if (setgid(65534) || setuid(65534))
		_exit(11);
	if (nu_migrate_pages(0, NU_MAX_NODES, &old, &new) < 0)
		_exit(errno == EPERM ? 12 : errno == EINVAL ? 15 : 13);
	_exit(nu_pages_on(p, len, nid) == (long)(len / PAGE) &&
	      nu_intact(p, len, 0xb1d) ? 0 : 14);
}

/* A private node is in no cpuset: moving onto it needs no CAP_SYS_NICE. */
TEST_F(pn, migrate_pages_unprivileged)
{
	CLAIM(CAP_USER_NUMA | CAP_HOTUNPLUG, "movable");
	EXPECT_EQ(0, run_child(migrate_unprivileged_child, self->nid, true))
		TH_LOG("exit 12: EPERM without CAP_SYS_NICE");
	RELEASE();
	/* Without USER_NUMA the node stays out of reach: EINVAL. */
	CLAIM(CAP_HOTUNPLUG, "movable");
	EXPECT_EQ(15, run_child(migrate_unprivileged_child, self->nid, false));
}

TEST_F(pn, user_numa_off)
{
	unsigned long old = 1UL << self->nid, new = 1UL;
	size_t len = 8 * MB;
	long npages = len / PAGE;
	char *p;

	CLAIM(0, "movable");
	EXPECT_EQ(-EINVAL, mbind_err(MPOL_BIND, 1UL << self->nid));
	/* Beside node 0 it is left out, as a memoryless node would be. */
	EXPECT_EQ(0, mbind_err(MPOL_BIND, 1UL | 1UL << self->nid));
	EXPECT_EQ(-EINVAL, mbind_err(MPOL_PREFERRED, 1UL << self->nid));

	p = nu_anon_bound(len, MPOL_BIND, 0, 0xb1d);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(-ENODEV, move_all(p, len, self->nid));
	EXPECT_EQ(npages, nu_pages_on(p, len, 0));
	munmap(p, len);

	/* Placed by the owner: users can neither move it nor migrate it. */
	p = anon_on(self->nid, len);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(npages, nu_pages_on(p, len, self->nid));
	EXPECT_EQ(-EACCES, move_all(p, len, 0));
	EXPECT_EQ(-1, nu_migrate_pages(0, NU_MAX_NODES, &old, &new));
	EXPECT_EQ(EINVAL, errno);
	nu_mbind(p, len, MPOL_BIND, &new, NU_MAX_NODES, MPOL_MF_MOVE);
	EXPECT_EQ(npages, nu_pages_on(p, len, self->nid));
	EXPECT_TRUE(nu_intact(p, len, 0x5eed));
	munmap(p, len);
}

TEST_F(pn, hotunplug_on)
{
	size_t len = 32 * MB;
	char *p;

	CLAIM(CAP_HOTUNPLUG, "movable");
	p = anon_on(self->nid, len);
	ASSERT_NE(NULL, p);
	EXPECT_EQ((long)(len / PAGE), nu_pages_on(p, len, self->nid));
	RELEASE();
	EXPECT_EQ(0, nu_pages_on(p, len, self->nid));
	EXPECT_FALSE(nu_in_nodelist("has_private_memory", self->nid));
	EXPECT_TRUE(nu_intact(p, len, 0x5eed));
	munmap(p, len);
}

TEST_F(pn, hotunplug_off)
{
	size_t len = 32 * MB;
	char *p;

	CLAIM(0, "movable");
	p = anon_on(self->nid, len);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EBUSY, npt_write("release", "%d", self->nid));
	EXPECT_TRUE(nu_in_nodelist("has_private_memory", self->nid));
	EXPECT_EQ((long)(len / PAGE), nu_pages_on(p, len, self->nid));
	EXPECT_TRUE(nu_intact(p, len, 0x5eed));
	munmap(p, len);
}

/* PIN_LONGTERM_TEST_START on [p, p+len): 0 or -errno; @fd stays open. */
static int pin_longterm(int fd, char *p, size_t len, bool fast)
{
	struct pin_longterm_test args = {
		.addr = (unsigned long)p,
		.size = len,
		.flags = PIN_LONGTERM_TEST_FLAG_USE_WRITE |
			 (fast ? PIN_LONGTERM_TEST_FLAG_USE_FAST : 0),
	};

	return ioctl(fd, PIN_LONGTERM_TEST_START, &args) ? -errno : 0;
}

TEST_F(pn, ltpin_on)
{
	size_t len = 2 * MB;
	int fd = open("/sys/kernel/debug/gup_test", O_RDWR);
	char *p;

	if (fd < 0)
		NU_SKIP(return, "no /sys/kernel/debug/gup_test (CONFIG_GUP_TEST)");
	CLAIM(CAP_LTPIN | CAP_HOTUNPLUG, "kernel");
	p = anon_on(self->nid, len);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, pin_longterm(fd, p, len, false));
	EXPECT_EQ((long)(len / PAGE), nu_pages_on(p, len, self->nid));
	/* A held long-term pin blocks unplug; the node stays. */
	EXPECT_EQ(-EBUSY, npt_write("release", "%d", self->nid));
	EXPECT_TRUE(nu_in_nodelist("has_private_memory", self->nid));
	ioctl(fd, PIN_LONGTERM_TEST_STOP);
	close(fd);
	EXPECT_TRUE(nu_intact(p, len, 0x5eed));
	RELEASE();
	EXPECT_TRUE(nu_intact(p, len, 0x5eed));
	munmap(p, len);
}

TEST_F(pn, ltpin_off)
{
	size_t len = 2 * MB;
	int fd = open("/sys/kernel/debug/gup_test", O_RDWR);
	char *p;

	if (fd < 0)
		NU_SKIP(return, "no /sys/kernel/debug/gup_test (CONFIG_GUP_TEST)");
	CLAIM(CAP_HOTUNPLUG, "kernel");
	p = anon_on(self->nid, len);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EPERM, pin_longterm(fd, p, len, false));
	EXPECT_EQ(-EPERM, pin_longterm(fd, p, len, true));
	/* Refused, and not migrated off the node to make the pin work. */
	EXPECT_EQ((long)(len / PAGE), nu_pages_on(p, len, self->nid));
	EXPECT_TRUE(nu_intact(p, len, 0x5eed));
	close(fd);
	munmap(p, len);
}

/* A long-term pin that faults pages in under a policy on the node. */
TEST_F(pn, ltpin_off_fault_in)
{
	size_t len = 2 * MB;
	int fd = open("/sys/kernel/debug/gup_test", O_RDWR);
	unsigned long mask;
	char *p;

	if (fd < 0)
		NU_SKIP(return, "no /sys/kernel/debug/gup_test (CONFIG_GUP_TEST)");
	CLAIM(CAP_USER_NUMA | CAP_HOTUNPLUG, "kernel");
	mask = 1UL << self->nid;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, nu_mbind(p, len, MPOL_BIND, &mask, NU_MAX_NODES, 0));
	/* Nothing touched yet: the pin itself allocates, off the node. */
	EXPECT_EQ(0, pin_longterm(fd, p, len, false))
		TH_LOG("pinned fault-in landed on a node without LTPIN");
	EXPECT_EQ(0, nu_pages_on(p, len, self->nid));
	ioctl(fd, PIN_LONGTERM_TEST_STOP);
	close(fd);
	munmap(p, len);
}

TEST_F(pn, directed_oom_private_alloc)
{
	long long total_kb, free_kb;
	unsigned long got, spilled;
	char buf[64];
	int n;

	CLAIM(0, "movable");
	total_kb = meminfo_kb(self->nid, "MemTotal:");
	free_kb = meminfo_kb(self->nid, "MemFree:");
	ASSERT_EQ(0, npt_write("private_alloc", "%d %lld", self->nid,
			       total_kb / 2));	/* twice the node, in pages */
	ASSERT_EQ(0, npt_read("private_alloc", buf, sizeof(buf)));
	n = sscanf(buf, "allocated %lu spilled %lu", &got, &spilled);
	ASSERT_EQ(2, n);
	EXPECT_EQ(0, spilled);
	EXPECT_GE(got, free_kb / 4 * 9 / 10) TH_LOG("%s", buf);
	EXPECT_LE(got, total_kb / 4);
}

/* The console must not see the intended OOM report (scripts/vm greps it). */
static void console_quiet(bool quiet)
{
	static char saved[64];

	if (quiet) {
		nu_read_str("/proc/sys/kernel/printk", saved, sizeof(saved));
		nu_write_str("/proc/sys/kernel/printk", "1");
	} else if (saved[0]) {
		nu_write_str("/proc/sys/kernel/printk", saved);
	}
}

/* Allocations served by all normal nodes so far. */
static unsigned long long normal_allocs(void)
{
	unsigned long long sum = 0;
	int nid;

	for (nid = 0; nid < NU_MAX_NODES; nid++)
		if (nu_in_nodelist("has_memory", nid))
			sum += node_allocs(nid);
	return sum;
}

/* Fills the node and OOMs: over 30 s in a TCG guest with KASAN. */
TEST_F_TIMEOUT(pn, directed_oom_bind, 300)
{
	unsigned long long normal;
	long long total_kb;
	int status;
	pid_t pid;

	CLAIM(CAP_USER_NUMA, "movable");
	total_kb = meminfo_kb(self->nid, "MemTotal:");
	normal = normal_allocs();
	console_quiet(true);
	pid = fork();
	if (!pid) {
		size_t len = total_kb * 1024 + 128 * MB;

		/* Only an OOM kill stops this child; a spill lets it exit. */
		_exit(nu_anon_bound(len, MPOL_BIND, self->nid, 0xb1d) ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	console_quiet(false);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("child status %#x: expected an OOM kill", status);
	/* The 128 MiB that did not fit must not have gone to DRAM either. */
	EXPECT_LT(normal_allocs() - normal, 64 * MB / PAGE / 4)
		TH_LOG("%llu pages spilled to normal nodes",
		       normal_allocs() - normal);
}

/*
 * Anonymous churn of @total_mb in 64 MiB steps, holding up to @hold_mb.
 * A write to each page allocates it: filling the pages too would only
 * double the time (TCG) for the same allocations.  With @leak_nid >= 0,
 * it stops once that node counts more than @leak_allocs allocations.
 */
static void churn_anon(size_t total_mb, size_t hold_mb, int leak_nid,
		       unsigned long long leak_allocs)
{
	size_t step = 64, slots = hold_mb / step, done, nr, i, off;
	char *chunk[256] = { NULL };

	slots = slots < 1 ? 1 : slots > 256 ? 256 : slots;
	for (done = 0, nr = 0; done < total_mb; done += step, nr++) {
		char **slot = &chunk[nr % slots];

		if (leak_nid >= 0 && node_allocs(leak_nid) != ~0ULL &&
		    node_allocs(leak_nid) > leak_allocs)
			break;

		if (*slot)
			munmap(*slot, step * MB);
		*slot = mmap(NULL, step * MB, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (*slot == MAP_FAILED) {
			*slot = NULL;
			break;
		}
		for (off = 0; off < step * MB; off += PAGE)
			(*slot)[off] = 0x5a;
	}
	for (i = 0; i < slots; i++)
		if (chunk[i])
			munmap(chunk[i], step * MB);
}

/*
 * Page cache on tmpfs, @total_mb in 64 MiB files, up to 512 MiB of it
 * resident.  On tmpfs, fallocate() allocates the folios as a write()
 * would (shmem_get_folio(), the mapping's gfp and policy) without the
 * copy; elsewhere only write() makes page cache.  A MiB at a time, up to
 * the first failure (ENOSPC), as write() filled a file.
 */
static void churn_tmpfs(size_t total_mb)
{
	static char block[MB];	/* its bytes do not matter */
	struct statfs sfs;
	bool tmpfs = !statfs("/tmp", &sfs) && sfs.f_type == TMPFS_MAGIC;
	char name[64];
	size_t done, i;
	int fd;

	for (done = 0; done < total_mb; done += 64) {
		snprintf(name, sizeof(name), "/tmp/pn_cache.%zu", done / 64 % 8);
		fd = open(name, O_CREAT | O_TRUNC | O_WRONLY, 0600);
		for (i = 0; fd >= 0 && i < 64; i++)
			if (tmpfs ? fallocate(fd, 0, i * MB, MB) :
			    write(fd, block, MB) != MB)
				break;
		if (fd >= 0)
			close(fd);
	}
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "/tmp/pn_cache.%zu", i);
		unlink(name);
	}
}

/* Slab: inodes and dentries, positive and negative. */
static void churn_slab(int nr)
{
	char name[64];
	struct stat st;
	int i, fd;

	mkdir("/tmp/pn_slab", 0700);
	for (i = 0; i < nr; i++) {
		snprintf(name, sizeof(name), "/tmp/pn_slab/f%d", i);
		fd = open(name, O_CREAT | O_WRONLY, 0600);
		if (fd >= 0)
			close(fd);
		snprintf(name, sizeof(name), "/tmp/pn_slab/missing%d", i);
		stat(name, &st);
	}
	for (i = 0; i < nr; i++) {
		snprintf(name, sizeof(name), "/tmp/pn_slab/f%d", i);
		unlink(name);
	}
	rmdir("/tmp/pn_slab");
}

static long long normal_mem_mb(void)
{
	long long kb = 0;
	int nid;

	for (nid = 0; nid < NU_MAX_NODES; nid++)
		if (nu_in_nodelist("has_memory", nid))
			kb += meminfo_kb(nid, "MemTotal:");
	return kb / 1024;
}

#define NR_HUGE "/proc/sys/vm/nr_hugepages"

/* Spread as many huge pages as fit, then ask the private node directly. */
static void churn_hugetlb(struct __test_metadata *_metadata, int nid)
{
	char path[160], buf[32], want[32];

	/* Half of normal memory: pressure without starving the guest. */
	snprintf(want, sizeof(want), "%lld", normal_mem_mb() / 4);
	EXPECT_EQ(0, nu_write_str(NR_HUGE, want));
	EXPECT_GT(nu_read_ll(NR_HUGE), 0);
	snprintf(path, sizeof(path), NODE_SYS
		 "node%d/hugepages/hugepages-2048kB/nr_hugepages", nid);
	if (!access(path, F_OK)) {
		nu_write_str(path, "16");
		EXPECT_EQ(0, nu_read_ll(path));
	}
	EXPECT_EQ(0, nu_write_str(NR_HUGE, "0"));
	nu_read_str(NR_HUGE, buf, sizeof(buf));
}

/* Churns more than all normal memory several ways: minutes under TCG. */
TEST_F_TIMEOUT(pn, containment, 480)
{
	unsigned long long allocs, normal_before;
	long long free_kb, normal = normal_mem_mb();
	char buf[64];
	pid_t pid;

	CLAIM(0, "movable");
	normal_before = normal_allocs();
	allocs = node_allocs(self->nid);
	free_kb = meminfo_kb(self->nid, "MemFree:");
	ASSERT_NE(~0ULL, allocs);

	pid = fork();
	if (!pid) {
		churn_anon(normal * 5 / 4, normal / 2, -1, 0);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	churn_tmpfs(normal * 5 / 4);
	churn_slab(20000);
	churn_hugetlb(_metadata, self->nid);
	ASSERT_EQ(0, npt_write("probe", "%lld", normal * 256));
	ASSERT_EQ(0, npt_read("probe", buf, sizeof(buf)));
	EXPECT_EQ(0, strncmp(buf, "leaks 0 ", 8)) TH_LOG("probe: %s", buf);

	EXPECT_EQ(allocs, node_allocs(self->nid))
		TH_LOG("%llu allocations landed on private node %d",
		       node_allocs(self->nid) - allocs, self->nid);
	EXPECT_GE(meminfo_kb(self->nid, "MemFree:"), free_kb);
	/*
	 * The counters do count this churn on the ordinary nodes, or the
	 * private node's standing still would prove nothing: at least one
	 * allocation per 2 MiB of the anonymous churn (THPs count one each).
	 */
	EXPECT_LE(normal_before + normal * 5 / 4 / 2, normal_allocs())
		TH_LOG("%llu allocations counted on the normal nodes",
		       normal_allocs() - normal_before);
}

/* The containment check must catch a node that leaked into N_MEMORY. */
TEST_F_TIMEOUT(pn, containment_detects_leak, 240)
{
	unsigned long long allocs;
	pid_t pid;

	CLAIM(CAP_HOTUNPLUG, "movable");
	allocs = node_allocs(self->nid);
	ASSERT_NE(~0ULL, allocs);
	ASSERT_EQ(0, npt_write("leak", "%d 1", self->nid));
	pid = fork();
	if (!pid) {
		/* until the first allocation lands on the leaking node */
		churn_anon(normal_mem_mb() * 5 / 4, normal_mem_mb() / 2,
			   self->nid, allocs);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	ASSERT_EQ(0, npt_write("leak", "%d 0", self->nid));
	ASSERT_NE(~0ULL, node_allocs(self->nid));
	EXPECT_LT(allocs, node_allocs(self->nid))
		TH_LOG("broken isolation went unnoticed");
}

#define RECLAIM_LEN	(4UL << 20)

static int compact_node(int nid)
{
	char path[128];

	snprintf(path, sizeof(path), NODE_SYS "node%d/compact", nid);
	return nu_write_str(path, "1");
}

/*
 * Write @amount to nodeN/reclaim (proactive reclaim of one node, new in
 * Linux 7.3): 0 or -errno; -ENOENT where the kernel has no such file.
 */
static int reclaim_node(int nid, const char *amount)
{
	char path[128];

	snprintf(path, sizeof(path), NODE_SYS "node%d/reclaim", nid);
	if (access(path, W_OK))
		return -ENOENT;
	return nu_write_str(path, amount);
}

/* nodeN/reclaim did what it could: it is refused only by -EINVAL. */
static bool reclaim_node_ok(int r)
{
	return r == 0 || r == -EAGAIN || r == -ENOENT;
}

/*
 * MADV_PAGEOUT [p, +len): its pages now swapped out, from pagemap (not
 * pswpout: system-wide, and blind to zswap).
 */
static long pageout(char *p, size_t len)
{
	if (madvise(p, len, MADV_PAGEOUT))
		return -errno;
	return nu_pages_swapped(p, len);
}

/* AnonHugePages of this task's mapping at @p, in kB; -1 if not found. */
static long anon_huge_kb(const char *p)
{
	char buf[1 << 16], *at, *ahp;
	char start[32];

	if (nu_read_all("/proc/self/smaps", buf, sizeof(buf)) < 0)
		return -1;
	snprintf(start, sizeof(start), "%lx-", (unsigned long)p);
	at = strstr(buf, start);
	ahp = at ? strstr(at, "AnonHugePages:") : NULL;
	return ahp ? atol(ahp + strlen("AnonHugePages:")) : -1;
}

TEST_F(pn, reclaim_on)
{
	long pages = RECLAIM_LEN / PAGE;
	int err = nu_swap_on(&self->sw, "/tmp", 64);
	char *p;

	if (err)
		NU_SKIP(return, "no swap on a loop device: %s", strerror(-err));
	self->swapped = true;	/* the fixture tears it down */
	CLAIM(CAP_RECLAIM | CAP_USER_NUMA | CAP_HOTUNPLUG, "movable");
	EXPECT_TRUE(nu_kthread_runs("kswapd", self->nid));
	EXPECT_TRUE(nu_kthread_runs("kcompactd", self->nid));
	p = nu_anon_bound(RECLAIM_LEN, MPOL_BIND, self->nid, 0x7ec1);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(pages, nu_pages_on(p, RECLAIM_LEN, self->nid));
	EXPECT_LE(pages / 2, pageout(p, RECLAIM_LEN));
	EXPECT_GT(pages, nu_pages_on(p, RECLAIM_LEN, self->nid))
		TH_LOG("the pages stayed on node %d", self->nid);
	/* they fault back in under the policy: onto the node, intact */
	EXPECT_TRUE(nu_intact(p, RECLAIM_LEN, 0x7ec1));
	EXPECT_EQ(pages, nu_pages_on(p, RECLAIM_LEN, self->nid));
	EXPECT_EQ(0, compact_node(self->nid));
	EXPECT_TRUE(reclaim_node_ok(reclaim_node(self->nid, "1M")));
	munmap(p, RECLAIM_LEN);
}

TEST_F(pn, reclaim_off)
{
	long pages = RECLAIM_LEN / PAGE;
	int err = nu_swap_on(&self->sw, "/tmp", 64);
	char *p, *dram;

	if (err)
		NU_SKIP(return, "no swap on a loop device: %s", strerror(-err));
	self->swapped = true;
	CLAIM(CAP_USER_NUMA | CAP_HOTUNPLUG, "movable");
	EXPECT_FALSE(nu_kthread_runs("kswapd", self->nid));
	EXPECT_FALSE(nu_kthread_runs("kcompactd", self->nid));
	p = nu_anon_bound(RECLAIM_LEN, MPOL_BIND, self->nid, 0x7ec1);
	ASSERT_NE(NULL, p);
	/* nothing would compact the node: its faults take no THP */
	EXPECT_EQ(0, anon_huge_kb(p));
	ASSERT_EQ(pages, nu_pages_on(p, RECLAIM_LEN, self->nid));
	EXPECT_EQ(0, pageout(p, RECLAIM_LEN));
	EXPECT_EQ(pages, nu_pages_on(p, RECLAIM_LEN, self->nid));
	EXPECT_TRUE(nu_intact(p, RECLAIM_LEN, 0x7ec1));
	EXPECT_EQ(-EINVAL, compact_node(self->nid));
	err = reclaim_node(self->nid, "1M");
	if (err == -ENOENT)
		TH_LOG("no nodeN/reclaim on this kernel (before 7.3): not checked");
	else
		EXPECT_EQ(-EINVAL, err);
	EXPECT_EQ(pages, nu_pages_on(p, RECLAIM_LEN, self->nid));
	/* control: the same on node 0 does swap, so the 0 above means it */
	dram = nu_anon_bound(RECLAIM_LEN, MPOL_BIND, 0, 0x7ec2);
	ASSERT_NE(NULL, dram);
	EXPECT_LE(pages / 2, pageout(dram, RECLAIM_LEN));
	EXPECT_TRUE(nu_intact(dram, RECLAIM_LEN, 0x7ec2));
	munmap(dram, RECLAIM_LEN);
	munmap(p, RECLAIM_LEN);
}

/*
 * Without the cap every page stays on the node through NB_OFF_PASSES
 * scans; then, claimed again with it, every page leaves within 90 s.
 */
TEST_F_TIMEOUT(pn, numa_balancing, 300)
{
	const char *why = balancing_on(self->was_nb, &self->balancing, "1");
	int cpu = node0_cpu();
	struct nb_run run;

	if (why || cpu < 0)
		NU_SKIP(return, "%s", why ?: "node 0 has no CPU");
	CLAIM(CAP_USER_NUMA | CAP_HOTUNPLUG, "movable");
	ASSERT_TRUE(balance_off(self->nid, cpu, NB_OFF_PASSES, NB_OFF_SECS,
				&run));
	ASSERT_LT(0, run.placed) TH_LOG("move_pages placed nothing on the node");
	EXPECT_EQ(run.placed, run.left) TH_LOG("moved off a node without the cap");
	EXPECT_TRUE(run.passes < 0 || run.passes >= NB_OFF_PASSES)
		TH_LOG("balancing scanned %ld times in %.1f s", run.passes,
		       run.secs);
	TH_LOG("%ld pages stayed through %ld scans (%.1f s)", run.left,
	       run.passes, run.secs);
	EXPECT_TRUE(run.intact);
	RELEASE();

	CLAIM(CAP_NUMA_BALANCING | CAP_USER_NUMA | CAP_HOTUNPLUG, "movable");
	ASSERT_TRUE(balance_off(self->nid, cpu, 0, 90, &run));
	ASSERT_LT(0, run.placed) TH_LOG("move_pages placed nothing on the node");
	EXPECT_EQ(0, run.left) TH_LOG("%ld of %ld pages still on node %d",
				      run.left, run.placed, self->nid);
	EXPECT_TRUE(run.intact);
}

TEST_F(pn, registration_rules)
{
	int n = self->nid;

	EXPECT_EQ(-EBUSY, npt_write("register", "0 0 0"));	/* has DRAM */
	EXPECT_EQ(-EINVAL, npt_write("register", "%d 0x8 0", n));
	/* DEMOTION needs RECLAIM and HOTUNPLUG */
	EXPECT_EQ(-EINVAL, npt_write("register", "%d 0x9 0", n));
	EXPECT_EQ(0, npt_write("register", "%d 0xd 0", n));
	EXPECT_EQ(0, npt_write("unregister", "%d", n));
	/* The fence excludes LTPIN: a COW would leave the pin behind */
	EXPECT_EQ(-EINVAL, npt_write("register", "%d %#lx 0", n,
				     POLICY_WRITE_FENCE | CAP_LTPIN));
	EXPECT_EQ(0, npt_write("register", "%d %#lx 0", n,
			       POLICY_WRITE_FENCE | CAP_USER_NUMA));
	EXPECT_EQ(0, npt_write("unregister", "%d", n));
	EXPECT_EQ(-EINVAL, npt_write("register", "%d 0x100 0", n));
	EXPECT_FALSE(nu_in_nodelist("has_private_memory", n));

	CLAIM(CAP_USER_NUMA, "movable");
	EXPECT_EQ(-EBUSY, npt_write("register", "%d 0x2 1", n));
	EXPECT_EQ(-EBUSY, npt_write("register", "%d 0x4 0", n));
	EXPECT_EQ(0, npt_write("register", "%d 0x2 0", n));
	EXPECT_EQ(-EBUSY, npt_write("unregister", "%d", n));
	EXPECT_TRUE(nu_in_nodelist("has_private_memory", n));
	RELEASE();
	EXPECT_EQ(-EINVAL, npt_write("unregister", "%d", n));
}

TEST_F(pn, bad_input)
{
	static const char * const files[] = {
		"claim", "release", "register", "unregister", "leak", "probe",
		"private_alloc",
	};
	static const char * const junk[] = {
		"\n", "x", "-1 0 movable", "99999 0 movable", "0x 0x 0x",
		"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23",
	};
	char before[1024], after[1024], longline[200];
	unsigned int f, j;
	int r;

	memset(longline, ' ', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	memcpy(longline, "1 0x2 movable", 13);

	ASSERT_EQ(0, npt_read("ranges", before, sizeof(before)));
	for (f = 0; f < ARRAY_SIZE(files); f++) {
		for (j = 0; j < ARRAY_SIZE(junk); j++) {
			r = npt_write(files[f], "%s", junk[j]);
			EXPECT_EQ(-EINVAL, r) TH_LOG("%s <- '%s'", files[f], junk[j]);
		}
		/* Longer than any provider buffer. */
		r = npt_write(files[f], "%s", longline);
		EXPECT_EQ(-EINVAL, r) TH_LOG("%s <- long line", files[f]);
	}
	EXPECT_EQ(-EINVAL, npt_write("claim", "%d 0 bogus", self->nid));
	EXPECT_EQ(-EINVAL, npt_write("leak", "0 1"));	/* not private */
	EXPECT_EQ(-EACCES, nu_write_str(NODE_SYS "has_private_memory", "0"));
	ASSERT_EQ(0, npt_read("ranges", after, sizeof(after)));
	EXPECT_STREQ(before, after);
	EXPECT_FALSE(nu_in_nodelist("has_private_memory", self->nid));
}

TEST_HARNESS_MAIN
