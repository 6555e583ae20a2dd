// SPDX-License-Identifier: GPL-2.0
/*
 * migrate_flush_paths: TLB shootdown rounds per migration batch on the
 * paths that reach migrate_pages() without move_pages(2), with
 * vm.migrate_defer_flush off (stock) and on.
 *
 * The rounds are the tlb:tlb_flush events with reason TLB_REMOTE_SEND_IPI
 * that the migrating task issues (x86), the batches its mm_migrate_batch
 * events of the path's migrate reason; one tracing instance counts both.
 *
 * offline and compaction move NR_PAGES base pages that are COW-shared
 * with NR_READERS processes reading them on other CPUs.  The pages sit in
 * a memory block of the last node that the fixture offlines and onlines
 * as ZONE_MOVABLE, so that the block holds little else: offlining it
 * (MIGRATE_SYNC, MR_MEMORY_HOTPLUG) migrates every page, and compacting
 * the node through its "compact" file (MIGRATE_SYNC, MR_COMPACTION; the
 * MIGRATE_SYNC_LIGHT of kcompactd and direct compaction takes the same
 * migrate_pages_sync() fallback) moves them from the bottom of the zone
 * to its top.  With migrate_flush/skip_async_pass every folio takes that
 * fallback: stock flushes once per reader and page, deferred at most once
 * per batch.
 *
 * numa_balancing: a new process (NUMA scan delay 0) keeps touching shmem
 * pages it shares with readers, which sit on a remote node, until its
 * hint faults have moved them all to its own node.  Each fault migrates one
 * folio in a MIGRATE_ASYNC batch of its own, which upstream already flushes
 * once: at most one round per batch both ways, and some rounds, since
 * the readers' entries must be flushed.
 *
 * demotion: proactive reclaim of a cgroup (memory.reclaim) demotes the
 * pages, shared with a reader, to a node of a lower memory tier (a
 * dax/kmem node, onlined by the test if it finds a device-dax instance);
 * MIGRATE_ASYNC batches, one round a batch at most both ways, and at
 * least one round for the reader's entries.
 *
 * Needs CONFIG_MIGRATE_DEFER_FLUSH_DEBUG, CONFIG_MIGRATE_STAGES, tracefs,
 * three CPUs and two nodes with memory; offline and compaction also need
 * memory hot-remove and a block of the last node that can be offlined,
 * numa_balancing CONFIG_NUMA_BALANCING and the sched debugfs files,
 * demotion a lower memory tier and cgroup2 with the memory controller.
 * Each SKIPs with the reason otherwise.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "numa_util.h"

#define SYSCTL		"/proc/sys/vm/migrate_defer_flush"
#define ROCM		"/proc/sys/vm/migrate_rocm"
#define SKIP_ASYNC	"/sys/kernel/debug/migrate_flush/skip_async_pass"
#define MEMORY		"/sys/devices/system/memory"
#define BALANCING	"/proc/sys/kernel/numa_balancing"
#define SCAN_DELAY	"/sys/kernel/debug/sched/numa_balancing/scan_delay_ms"
#define SCAN_MIN	"/sys/kernel/debug/sched/numa_balancing/scan_period_min_ms"
#define NR_READERS	2
#define NR_PAGES	64
#define PAGE		4096UL
#define LEN		(NR_PAGES * PAGE)
#define MAX_TRIES	6		/* blocks tried for offlining */
#define MOVE_TRIES	3		/* move_pages() calls, see move_all_to() */
#define FILLER		(16UL << 20)	/* see fragment() */

static const char *missing(void)
{
	if (access(SKIP_ASYNC, W_OK) || access(SYSCTL, W_OK))
		return "no " SKIP_ASYNC " (CONFIG_MIGRATE_DEFER_FLUSH_DEBUG)";
	if (!nu_trace_has("tlb/tlb_flush"))
		return "no tlb:tlb_flush tracepoint (x86 with tracefs only)";
	if (nu_cpu_invlpgb())
		return "the CPU flushes by INVLPGB broadcast: no shootdown IPIs to count";
	if (!nu_trace_has("migrate/mm_migrate_batch"))
		return "no mm_migrate_batch tracepoint (CONFIG_MIGRATE_STAGES)";
	return NULL;
}

static void fill(char *buf)
{
	for (unsigned long i = 0; i < LEN; i++)
		buf[i] = (char)(i * 7 + i / PAGE);
}

static bool intact(const char *buf)
{
	for (unsigned long i = 0; i < LEN; i++)
		if (buf[i] != (char)(i * 7 + i / PAGE))
			return false;
	return true;
}

/* Base pages, first-touched on @node; @shared: MAP_SHARED (shmem). */
static char *map_on(int node, bool shared)
{
	unsigned long mask = 1UL << node;
	char *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_ANONYMOUS |
		       (shared ? MAP_SHARED : MAP_PRIVATE), -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, LEN, MADV_NOHUGEPAGE);
	if (nu_mbind(p, LEN, MPOL_BIND, &mask, NU_MAX_NODES, 0))
		return NULL;
	fill(p);
	return p;
}

/*
 * Fork @n readers on @cpus that read the pages over and over (@again) or
 * once and then spin; 0 once all of them have read the pages.
 */
static int start_n_readers(const char *buf, const int *cpus, pid_t *pids,
			   int n, bool again)
{
	int ready[2], got = 0;
	char c;

	if (pipe(ready))
		return -1;
	for (int i = 0; i < n; i++)
		pids[i] = nu_fork_reader(buf, LEN, cpus[i], ready[1], again);
	close(ready[1]);
	while (got < n && read(ready[0], &c, 1) == 1)
		got++;
	close(ready[0]);
	/* let every reader run its loop on its CPU */
	usleep(100 * 1000);
	return got == n ? 0 : -1;
}

static int start_readers(const char *buf, const int *cpus, pid_t *pids)
{
	return start_n_readers(buf, cpus, pids, NR_READERS, true);
}

static void stop_n_readers(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
		pids[i] = 0;
	}
}

static void stop_readers(pid_t *pids)
{
	stop_n_readers(pids, NR_READERS);
}

/*
 * Move the pages of @buf (and the readers' mappings) to @node: how many
 * are not there after, or -1.  move_pages() leaves a page it could not
 * isolate or that stayed busy through its retries, and says so in the
 * page's status.
 */
static int move_to(char *buf, int node)
{
	int nodes[NR_PAGES], status[NR_PAGES], left = 0;
	void *pages[NR_PAGES];

	for (int i = 0; i < NR_PAGES; i++) {
		pages[i] = buf + i * PAGE;
		nodes[i] = node;
	}
	if (nu_move_pages_where(0, NR_PAGES, pages, nodes, status,
				MPOL_MF_MOVE_ALL) < 0)
		return -1;
	for (int i = 0; i < NR_PAGES; i++)
		left += status[i] != node;
	return left;
}

/*
 * move_to() until every page is on @node, at most MOVE_TRIES calls: a
 * reader's fault or another task's isolation can hold a page busy for
 * a moment, longer than the kernel's own retries.  Each retry is
 * logged; how many pages are left, or -1.
 */
static int move_all_to(struct __test_metadata *_metadata, char *buf,
		       int node)
{
	int left = move_to(buf, node);

	for (int tries = 1; left > 0 && tries < MOVE_TRIES; tries++) {
		TH_LOG("%d of %d pages not on node %d yet: moving them again",
		       left, NR_PAGES, node);
		usleep(10 * 1000);
		left = move_to(buf, node);
	}
	return left;
}

/* ---- a ZONE_MOVABLE memory block of one node ---- */

static int block_set(int block, const char *state)
{
	char path[96];

	snprintf(path, sizeof(path), MEMORY "/memory%d/state", block);
	return nu_write_str(path, state);
}

static int cmp_desc(const void *a, const void *b)
{
	return *(const int *)b - *(const int *)a;
}

/* The blocks of @node, highest first; how many. */
static int node_blocks(int node, int *blocks, int max)
{
	char path[64];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", node);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)) && n < max)
		if (sscanf(d->d_name, "memory%d", &blocks[n]) == 1)
			n++;
	closedir(dir);
	qsort(blocks, n, sizeof(*blocks), cmp_desc);
	return n;
}

/* Offline one of the top blocks of @node and online it movable; -1 if none. */
static int movable_block(int node)
{
	int blocks[4096], n = node_blocks(node, blocks, 4096);

	for (int i = 0; i < n && i < MAX_TRIES; i++) {
		if (block_set(blocks[i], "offline"))
			continue;
		if (!block_set(blocks[i], "online_movable"))
			return blocks[i];
		block_set(blocks[i], "online");
	}
	return -1;
}

/* Give the block back to the kernel zone it came from. */
static void restore_block(int block)
{
	if (block < 0 || block_set(block, "offline"))
		return;
	if (block_set(block, "online_kernel"))
		block_set(block, "online");
}

static long pfn_of(int pagemap, const char *p)
{
	uint64_t e;

	if (pread(pagemap, &e, sizeof(e), (uintptr_t)p / PAGE * sizeof(e)) !=
	    sizeof(e) || !(e >> 63))
		return -1;
	return e & ((1ULL << 55) - 1);
}

FIXTURE(fp) {
	int from, to, block, pagemap;
	int cpus[NR_READERS + 1];
	unsigned long block_pages;
	char *buf;
	pid_t readers[NR_READERS];
	long pfn[NR_PAGES];
	char rocm[8];		/* vm.migrate_rocm to restore, "" if none */
	char nb[8];		/* kernel.numa_balancing to restore, or "" */
};

/* How many of the pages are in the block; their PFNs go to self->pfn. */
static int in_block(FIXTURE_DATA(fp) *self)
{
	int n = 0;

	for (int i = 0; i < NR_PAGES; i++) {
		self->pfn[i] = pfn_of(self->pagemap, self->buf + i * PAGE);
		if (self->pfn[i] >= 0 &&
		    self->pfn[i] / self->block_pages == (unsigned long)self->block)
			n++;
	}
	return n;
}

/* Move every page (the readers' mappings too) to the block's node. */
static int move_in(struct __test_metadata *_metadata, FIXTURE_DATA(fp) *self)
{
	return move_all_to(_metadata, self->buf, self->to) ? -1 : in_block(self);
}

FIXTURE_SETUP(fp)
{
	const char *why = missing();
	struct nu_topo topo;
	char size[32];

	self->block = -1;
	self->buf = NULL;
	self->rocm[0] = '\0';
	self->nb[0] = '\0';
	if (why)
		NU_SKIP(return, "%s", why);
	if (nu_read_str(MEMORY "/block_size_bytes", size, sizeof(size)) <= 0)
		NU_SKIP(return, "no %s (CONFIG_MEMORY_HOTPLUG)", MEMORY);
	self->block_pages = strtoul(size, NULL, 16) / PAGE;
	if (!nu_pick_cpus(self->cpus, NR_READERS + 1))
		NU_SKIP(return, "needs %d CPUs", NR_READERS + 1);
	if (nu_topo_read(&topo) || topo.nr_eligible < 2)
		NU_SKIP(return, "needs two nodes with memory");
	self->from = topo.node[topo.eligible[0]].id;
	self->to = topo.node[topo.eligible[topo.nr_eligible - 1]].id;
	nu_pin_cpu(self->cpus[0]);
	self->block = movable_block(self->to);
	if (self->block < 0)
		NU_SKIP(return, "no block of node %d could go offline and online movable",
			self->to);
	self->buf = map_on(self->from, false);
	ASSERT_NE(NULL, self->buf);
	self->pagemap = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, self->pagemap);
	/* ROCM would move these read-only COW pages without an unmap. */
	if (nu_read_str(ROCM, self->rocm, sizeof(self->rocm)) >= 0)
		ASSERT_EQ(0, nu_write_str(ROCM, "0"));
	ASSERT_EQ(0, start_readers(self->buf, self->cpus + 1, self->readers));
	ASSERT_EQ(0, nu_write_str(SKIP_ASYNC, "1"));
	/*
	 * Last (a failure in setup runs no teardown): NUMA balancing's scan
	 * flushes from this task too, and that is not migration.
	 */
	if (nu_read_str(BALANCING, self->nb, sizeof(self->nb)) >= 0)
		ASSERT_EQ(0, nu_write_str(BALANCING, "0"));
}

FIXTURE_TEARDOWN(fp)
{
	nu_write_str(SKIP_ASYNC, "0");
	nu_write_str(SYSCTL, "1");
	if (self->rocm[0])
		nu_write_str(ROCM, self->rocm);
	if (self->nb[0])
		nu_write_str(BALANCING, self->nb);
	stop_readers(self->readers);
	if (self->buf)
		munmap(self->buf, LEN);
	restore_block(self->block);
}

static long offline_fn(void *arg)
{
	return block_set(*(int *)arg, "offline");
}

static long compact_fn(void *arg)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/compact",
		 *(int *)arg);
	return nu_write_str(path, "1");
}

/*
 * Both ways: stock, about a round per reader and page, at least one per
 * page moved (compaction once flushed 95 rounds for 64 pages with two
 * readers: a reader's mapping may be gone or not yet made); deferred,
 * one a batch, and the batches are groups: far fewer rounds than pages
 * (compaction also moves pages that cost no round, so the first bound
 * alone could not tell).
 */
static void check(struct __test_metadata *_metadata, const struct nu_flush_count *c,
		  int moved)
{
	TH_LOG("%d pages mapped by %d readers on other CPUs moved: stock=%ld/%ld deferred=%ld/%ld (rounds/batches)",
	       moved, NR_READERS, c[0].rounds, c[0].batches, c[1].rounds,
	       c[1].batches);
	if (!c[0].rounds)
		NU_SKIP(return, "no IPI flush traced: broadcast TLBI (arm64) or a paravirt flush");
	EXPECT_GE(c[0].rounds, moved);
	EXPECT_LE(1, c[1].rounds);
	EXPECT_LE(c[1].rounds, c[1].batches);
	EXPECT_LE(c[1].rounds, moved / 8);
}

TEST_F(fp, offline)
{
	struct nu_flush_count c[2];

	for (int k = 0; k < 2; k++) {
		ASSERT_EQ(0, nu_write_str(SYSCTL, k ? "1" : "0"));
		ASSERT_EQ(NR_PAGES, move_in(_metadata, self));
		ASSERT_EQ(0, nu_count_flushes("memory_hotplug", offline_fn,
					      &self->block, &c[k]));
		ASSERT_EQ(0, c[k].ret) TH_LOG("offline: %s", strerror(-c[k].ret));
		EXPECT_EQ(0, in_block(self));
		EXPECT_TRUE(intact(self->buf));
		ASSERT_EQ(0, block_set(self->block, "online_movable"));
	}
	check(_metadata, c, NR_PAGES);
}

/*
 * Compaction only moves pages into pageblocks that are partly in use: a
 * whole free one is left for a high-order allocation.  So fill the block
 * above the pages with FILLER bytes of this task's and free every other
 * page of it; compaction then moves the pages at the bottom (and some of
 * the filler) into those holes.
 */
static char *fragment(int node)
{
	unsigned long mask = 1UL << node;
	char *p = mmap(NULL, FILLER, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, FILLER, MADV_NOHUGEPAGE);
	if (nu_mbind(p, FILLER, MPOL_BIND, &mask, NU_MAX_NODES, 0))
		return NULL;
	memset(p, 1, FILLER);
	for (unsigned long off = PAGE; off < FILLER; off += 2 * PAGE)
		madvise(p + off, PAGE, MADV_DONTNEED);
	return p;
}

TEST_F(fp, compaction)
{
	long before[NR_PAGES];
	struct nu_flush_count c[2];
	int moved[2];
	char *filler;

	for (int k = 0; k < 2; k++) {
		ASSERT_EQ(0, nu_write_str(SYSCTL, k ? "1" : "0"));
		/* an empty block again, the pages at its bottom */
		ASSERT_EQ(0, block_set(self->block, "offline"));
		ASSERT_EQ(0, block_set(self->block, "online_movable"));
		ASSERT_EQ(NR_PAGES, move_in(_metadata, self));
		memcpy(before, self->pfn, sizeof(before));
		filler = fragment(self->to);
		ASSERT_NE(NULL, filler);
		ASSERT_EQ(0, nu_count_flushes("compaction", compact_fn,
					      &self->to, &c[k]));
		munmap(filler, FILLER);
		ASSERT_EQ(0, c[k].ret);
		in_block(self);
		moved[k] = 0;
		for (int i = 0; i < NR_PAGES; i++)
			moved[k] += self->pfn[i] != before[i];
		EXPECT_EQ(NR_PAGES, nu_pages_on(self->buf, LEN, self->to));
		EXPECT_TRUE(intact(self->buf));
	}
	if (moved[0] < NR_PAGES / 2 || moved[1] < NR_PAGES / 2)
		NU_SKIP(return, "compaction moved only %d and %d of the %d pages",
			moved[0], moved[1], NR_PAGES);
	check(_metadata, c, moved[0]);
}

/* ---- does a remote flush show as a round here? ---- */

struct spinner {
	int cpu;		/* where the thread spins */
	bool running;		/* set by the thread once it runs there */
	bool stop;		/* set by its starter */
};

/* Keep this mm live on another CPU: a flush of it must reach there. */
static void *spin(void *arg)
{
	struct spinner *s = arg;

	nu_pin_cpu(s->cpu);
	__atomic_store_n(&s->running, true, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		;
	return NULL;
}

static long protect_fn(void *arg)
{
	return mprotect(arg, PAGE, PROT_READ);
}

/*
 * mprotect() of a page while a thread of this mm runs on @other flushes
 * that CPU, one round from @cpu on x86.  None traced means this machine
 * cannot count rounds (broadcast TLBI, the paravirt flushes of Hyper-V
 * or Xen), not that migration sent none: the one case a test of paths
 * whose rounds are the same both ways may skip.
 */
static bool rounds_traced(int cpu, int other)
{
	struct spinner s = { .cpu = other };
	struct nu_flush_count c = { .rounds = 0 };
	pthread_t thread;
	char *page;

	page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return false;
	page[0] = 1;	/* a writable entry: mprotect() must flush it */
	nu_pin_cpu(cpu);
	if (!pthread_create(&thread, NULL, spin, &s)) {
		while (!__atomic_load_n(&s.running, __ATOMIC_ACQUIRE))
			usleep(1000);
		if (nu_count_flushes("none", protect_fn, page, &c))
			c.rounds = 0;
		__atomic_store_n(&s.stop, true, __ATOMIC_RELEASE);
		pthread_join(thread, NULL);
	}
	munmap(page, PAGE);
	return c.rounds > 0;
}

/* ---- NUMA balancing ---- */

struct balance {
	int home, away, cpu;
	const int *reader_cpus;
	char *buf;
	double deadline;
};

/* Keep touching the pages until the hint faults brought them all home. */
static long touch_until_home(void *arg)
{
	struct balance *b = arg;
	long home = 0;
	int i;

	/* busy: the scanner runs after so much CPU time of this task */
	while (nu_now() < b->deadline) {
		for (i = 0; i < 100; i++)
			nu_read_pages(b->buf, LEN);
		home = nu_pages_on(b->buf, LEN, b->home);
		if (home == NR_PAGES)
			break;
	}
	return home;
}

/*
 * In a new process, so that its mm starts scanning at once.  NUMA
 * balancing leaves COW-shared anon pages alone, so the pages are shmem,
 * shared with the readers, first placed on the away node.  Their policy
 * then binds them home with MPOL_F_NUMA_BALANCING: only a task running
 * at home (this one) migrates them on a hint fault, the readers' faults
 * leave them.  Reports the counts and whether the data stayed intact
 * through @out.
 */
static void balance_child(struct balance *b, int out)
{
	pid_t readers[NR_READERS] = { 0 };
	struct nu_flush_count c = { .ret = -1 };
	unsigned long home = 1UL << b->home;
	int ok = 0;

	nu_pin_cpu(b->cpu);
	b->buf = map_on(b->away, true);
	if (b->buf && !start_readers(b->buf, b->reader_cpus, readers) &&
	    !nu_mbind(b->buf, LEN, MPOL_BIND | MPOL_F_NUMA_BALANCING, &home,
		      NU_MAX_NODES, 0)) {
		b->deadline = nu_now() + 60;
		if (!nu_count_flushes("numa_misplaced", touch_until_home, b, &c))
			ok = intact(b->buf);
	}
	stop_readers(readers);
	if (write(out, &c, sizeof(c)) != sizeof(c) ||
	    write(out, &ok, sizeof(ok)) != sizeof(ok))
		_exit(1);
	_exit(0);
}

/* Run balance_child() with vm.migrate_defer_flush at @defer. */
static int balance_once(struct balance *b, const char *defer,
			struct nu_flush_count *c, int *ok)
{
	int pipefd[2], rc = -1;
	pid_t pid;

	if (nu_write_str(SYSCTL, defer) || pipe(pipefd))
		return -1;
	pid = fork();
	if (!pid)
		balance_child(b, pipefd[1]);
	close(pipefd[1]);
	if (read(pipefd[0], c, sizeof(*c)) == sizeof(*c) &&
	    read(pipefd[0], ok, sizeof(*ok)) == sizeof(*ok))
		rc = 0;
	close(pipefd[0]);
	waitpid(pid, NULL, 0);
	return rc;
}

FIXTURE(nb) {
	char was_on[8], was_delay[16], was_min[16];
	struct balance b;
	int rcpus[NR_READERS];
};

FIXTURE_SETUP(nb)
{
	const char *why = missing();
	int cpus[NR_READERS + 1];
	struct nu_topo topo;

	if (why)
		NU_SKIP(return, "%s", why);
	if (nu_read_str(BALANCING, self->was_on, sizeof(self->was_on)) <= 0 ||
	    nu_read_str(SCAN_DELAY, self->was_delay, sizeof(self->was_delay)) <= 0 ||
	    nu_read_str(SCAN_MIN, self->was_min, sizeof(self->was_min)) <= 0)
		NU_SKIP(return, "no %s or %s (CONFIG_NUMA_BALANCING, DEBUG_FS, SCHED_DEBUG where it exists)",
			BALANCING, SCAN_DELAY);
	if (nu_topo_read(&topo) || topo.nr_eligible < 2 ||
	    !nu_pick_cpus(cpus, NR_READERS + 1))
		NU_SKIP(return, "needs two nodes with CPUs and memory, %d CPUs",
			NR_READERS + 1);
	self->b.home = topo.node[topo.eligible[0]].id;
	self->b.away = topo.node[topo.eligible[topo.nr_eligible - 1]].id;
	self->b.cpu = topo.node[topo.eligible[0]].cpus[0];
	/* the readers on two of the CPUs picked, not on the child's */
	for (int i = 0, n = 0; i <= NR_READERS; i++)
		if (cpus[i] != self->b.cpu && n < NR_READERS)
			self->rcpus[n++] = cpus[i];
	self->b.reader_cpus = self->rcpus;
	/* scan a new mm at once, and again after 100 ms of its CPU time */
	ASSERT_EQ(0, nu_write_str(BALANCING, "1"));
	ASSERT_EQ(0, nu_write_str(SCAN_DELAY, "0"));
	ASSERT_EQ(0, nu_write_str(SCAN_MIN, "10"));
}

FIXTURE_TEARDOWN(nb)
{
	nu_write_str(SCAN_MIN, self->was_min);
	nu_write_str(SCAN_DELAY, self->was_delay);
	nu_write_str(BALANCING, self->was_on);
	nu_write_str(SYSCTL, "1");
}

TEST_F_TIMEOUT(nb, numa_balancing, 180)
{
	struct nu_flush_count c[2];
	int ok[2];

	ASSERT_EQ(0, balance_once(&self->b, "0", &c[0], &ok[0]));
	ASSERT_EQ(0, balance_once(&self->b, "1", &c[1], &ok[1]));
	TH_LOG("hint faults brought home %ld and %ld of %d pages: stock=%ld/%ld deferred=%ld/%ld (rounds/batches)",
	       c[0].ret, c[1].ret, NR_PAGES, c[0].rounds, c[0].batches,
	       c[1].rounds, c[1].batches);
	for (int k = 0; k < 2; k++) {
		ASSERT_EQ(NR_PAGES, c[k].ret);
		ASSERT_TRUE(ok[k]);
	}
	for (int k = 0; k < 2; k++) {
		/* one folio a batch, its flushes one round at most */
		EXPECT_GE(c[k].batches, NR_PAGES / 2);
		EXPECT_LE(c[k].rounds, c[k].batches);
	}
	if (!c[0].rounds && !c[1].rounds &&
	    !rounds_traced(self->b.cpu, self->rcpus[0]))
		NU_SKIP(return, "no IPI flush traced: broadcast TLBI (arm64) or a paravirt flush");
	/*
	 * and some: the readers' entries of a page queue a flush of their
	 * CPUs (one their own NUMA scan made PROT_NONE needs none, but only
	 * until they read the page again).
	 */
	EXPECT_LE(1, c[0].rounds);
	EXPECT_LE(1, c[1].rounds);
}

/* ---- demotion ---- */

#define DEMOTION	"/sys/kernel/mm/numa/demotion_enabled"
#define TIERS		"/sys/devices/virtual/memory_tiering"

/* A node with memory in the lowest of two or more memory tiers; or -1. */
static int lower_tier_node(void)
{
	int low = -1, node = -1, tier, nodes[NU_MAX_NODES], n;
	char path[128], list[256];
	struct dirent *d;
	DIR *dir = opendir(TIERS);

	while (dir && (d = readdir(dir)))
		if (sscanf(d->d_name, "memory_tier%d", &tier) == 1 && tier > low)
			low = tier;
	if (dir)
		closedir(dir);
	snprintf(path, sizeof(path), TIERS "/memory_tier%d/nodelist", low);
	if (low < 0 || nu_read_str(path, list, sizeof(list)) <= 0)
		return -1;
	n = nu_parse_list(list, nodes, NU_MAX_NODES);
	for (int i = 0; i < n && node < 0; i++)
		if (nu_in_nodelist("has_memory", nodes[i]) &&
		    !nu_in_nodelist("has_cpu", nodes[i]))
			node = nodes[i];
	return node;
}

/*
 * Online a device-dax instance as ordinary memory through dax/kmem,
 * which places it in a memory tier below DRAM: bind it to kmem unless it
 * is (then *@bound), and online its blocks movable, so that they can go
 * offline again.  Its node, or -1.
 */
static int online_dax(char *dev, size_t len, bool *bound)
{
	struct dirent *d;
	char path[300];
	int nid = -1;
	DIR *dir = opendir("/sys/bus/dax/devices");

	while (dir && nid < 0 && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path),
			 "/sys/bus/dax/devices/%s/target_node", d->d_name);
		nid = nu_read_ll(path);
		if (nid < 0 || nu_in_nodelist("has_memory", nid)) {
			nid = -1;
			continue;
		}
		snprintf(dev, len, "%.*s", (int)len - 1, d->d_name);
		*bound = !nu_dax_kmem_bound(dev);
		if (*bound && nu_dax_kmem("bind", dev)) {
			*bound = false;
			nid = -1;
		} else if (nu_node_blocks_to(nid, "online_movable")) {
			nid = -1;
		}
	}
	if (dir)
		closedir(dir);
	return nid;
}

FIXTURE(dm) {
	int home, low, cpus[2];
	char dev[64];		/* a dax instance this test onlined, or "" */
	bool bound;		/* and bound to kmem */
	char cg[PATH_MAX];
	char was[8];
	char nb[8];		/* kernel.numa_balancing to restore, or "" */
	char *buf;
	pid_t reader;
};

FIXTURE_SETUP(dm)
{
	const char *why = missing();
	struct nu_topo topo;

	self->dev[0] = '\0';
	self->bound = false;
	self->cg[0] = '\0';
	self->nb[0] = '\0';
	self->buf = NULL;
	self->reader = 0;
	if (why)
		NU_SKIP(return, "%s", why);
	if (nu_read_str(DEMOTION, self->was, sizeof(self->was)) <= 0)
		NU_SKIP(return, "no %s (CONFIG_MIGRATION, NUMA)", DEMOTION);
	if (nu_topo_read(&topo) || !topo.nr_eligible || !nu_pick_cpus(self->cpus, 2))
		NU_SKIP(return, "needs a node with CPUs and memory, and two CPUs");
	self->home = topo.node[topo.eligible[0]].id;
	self->low = lower_tier_node();
	if (self->low < 0 &&
	    online_dax(self->dev, sizeof(self->dev), &self->bound) >= 0)
		self->low = lower_tier_node();
	if (self->low < 0)
		NU_SKIP(return, "no memory tier below DRAM (a dax/kmem node: scripts/vm --private-nodes --dax-nodes 1)");
	ASSERT_EQ(0, nu_write_str(DEMOTION, "1"));
	nu_pin_cpu(self->cpus[0]);
	why = nu_cg_enter("migrate_flush_paths", self->cg, sizeof(self->cg));
	if (why)
		NU_SKIP(return, "%s", why);
	self->buf = map_on(self->home, false);
	ASSERT_NE(NULL, self->buf);
	/*
	 * One reader (in the cgroup too): a remote TLB to flush.  It reads
	 * once and spins, so that reclaim finds the pages cold.
	 */
	ASSERT_EQ(0, start_n_readers(self->buf, self->cpus + 1, &self->reader,
				     1, false));
	ASSERT_EQ(0, nu_write_str(SKIP_ASYNC, "0"));
	/*
	 * Last, after every SKIP (which runs no teardown): NUMA balancing's
	 * scan flushes from this thread too, and that is not demotion.
	 */
	if (nu_read_str(BALANCING, self->nb, sizeof(self->nb)) >= 0)
		ASSERT_EQ(0, nu_write_str(BALANCING, "0"));
}

FIXTURE_TEARDOWN(dm)
{
	stop_n_readers(&self->reader, 1);
	if (self->buf)
		munmap(self->buf, LEN);
	if (self->cg[0])
		nu_cg_remove(self->cg);
	nu_write_str(DEMOTION, self->was);
	if (self->nb[0])
		nu_write_str(BALANCING, self->nb);
	nu_write_str(SYSCTL, "1");
	/* as it was found */
	if (self->dev[0] && !nu_node_blocks_to(self->low, "offline") &&
	    self->bound)
		nu_dax_kmem("unbind", self->dev);
}

/* Clear the accessed bits of both mms: reclaim must not keep the pages. */
static void cool(pid_t reader)
{
	char path[64];

	nu_write_str("/proc/self/clear_refs", "1");
	snprintf(path, sizeof(path), "/proc/%d/clear_refs", reader);
	nu_write_str(path, "1");
}

static long reclaim_fn(void *arg)
{
	/* all of the cgroup's pages; memory.reclaim fails if it falls short */
	nu_cg_write(arg, "memory.reclaim", 16 << 20);
	return 0;
}

#define STAGES		"/sys/kernel/debug/mm/migrate_stages"

/*
 * Batches that went untimed, system-wide: their record could not be
 * allocated (GFP_NOWAIT, in reclaim), so no mm_migrate_batch event tells
 * of them, though they flushed as any batch does.
 */
static long untimed_batches(void)
{
	static char buf[1 << 16];
	const char *key = "\nuntimed_batches ";
	char *at;

	if (nu_read_all(STAGES, buf, sizeof(buf)) < 0)
		return 0;
	at = strstr(buf, key);
	return at ? atol(at + strlen(key)) : 0;
}

/*
 * Proactive reclaim of the cgroup (memory.reclaim) demotes its cold anon
 * pages to the lower tier, in MIGRATE_ASYNC batches of the reclaiming
 * task (MR_DEMOTION), which upstream already flushes once: at most one round
 * a batch both ways, the pages on the low node, intact.
 */
TEST_F(dm, demotion)
{
	struct nu_flush_count c[2];
	long low[2], untimed[2];

	for (int k = 0; k < 2; k++) {
		ASSERT_EQ(0, nu_write_str(SYSCTL, k ? "1" : "0"));
		/*
		 * A round from outside the batches (seen once in a few dozen
		 * runs on a loaded host, stock=8/7 with no untimed batch)
		 * counts too: a count over the bound is taken again, twice
		 * at most, and logged.  A path that flushes per folio is
		 * over it every time.
		 */
		for (int tries = 0; ; tries++) {
			if (k || tries)
				ASSERT_EQ(0, move_all_to(_metadata, self->buf,
							 self->home));
			cool(self->reader);
			untimed[k] = untimed_batches();
			ASSERT_EQ(0, nu_count_flushes("demotion", reclaim_fn,
						      self->cg, &c[k]));
			untimed[k] = untimed_batches() - untimed[k];
			low[k] = nu_pages_on(self->buf, LEN, self->low);
			EXPECT_TRUE(intact(self->buf));
			if (c[k].rounds <= c[k].batches + untimed[k] || tries == 2)
				break;
			TH_LOG("%s: %ld rounds for %ld batches (%ld untimed); counting again",
			       k ? "deferred" : "stock", c[k].rounds,
			       c[k].batches, untimed[k]);
		}
	}
	TH_LOG("demoted %ld and %ld of %d pages: stock=%ld/%ld deferred=%ld/%ld (rounds/batches)",
	       low[0], low[1], NR_PAGES, c[0].rounds, c[0].batches,
	       c[1].rounds, c[1].batches);
	TH_LOG("untimed batches meanwhile: %ld and %ld", untimed[0], untimed[1]);
	for (int k = 0; k < 2; k++) {
		EXPECT_LE(NR_PAGES * 3 / 4, low[k]);
		EXPECT_LE(1, c[k].batches);
		EXPECT_LE(c[k].rounds, c[k].batches + untimed[k]);
	}
	if (!c[0].rounds && !c[1].rounds &&
	    !rounds_traced(self->cpus[0], self->cpus[1]))
		NU_SKIP(return, "no IPI flush traced: broadcast TLBI (arm64) or a paravirt flush");
	/* and some: the reader's entries of the demoted pages flush its CPU */
	EXPECT_LE(1, c[0].rounds);
	EXPECT_LE(1, c[1].rounds);
}

TEST_HARNESS_MAIN
