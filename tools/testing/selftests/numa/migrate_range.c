// SPDX-License-Identifier: GPL-2.0
/*
 * migrate_range: range-batched unmap of a migration batch.
 *
 * With vm.migrate_range_unmap at 1, migrate_pages() unmaps each run of
 * order-0 anon folios of one anon_vma in ascending offset order in one
 * pass (one anon_vma lock, one walk and lock per PTE table) instead of
 * one rmap walk per folio, and maps the moved folios again the same way;
 * /sys/kernel/debug/migrate_range/stats counts the runs, the folios they
 * unmapped and the PTEs they remapped, and what they left to the
 * per-folio path.  Checked here,
 * each time with the data and the placement:
 *   - a move_pages(2) of a range is unmapped and remapped in runs of at
 *     most 64 folios, and at 0 (stock) neither runs;
 *   - in an mlock()ed VMA the folios stay mlocked: the remap leaves such
 *     VMAs to remove_migration_ptes();
 *   - the soft-dirty and uffd-wp bits of each PTE (/proc/self/pagemap)
 *     come through the move as they were;
 *   - a shuffled array makes runs only once the batch is sorted
 *     (vm.migrate_address_order);
 *   - pages shared with a child after fork() are unmapped from both mms,
 *     and the child sees its data on the new node;
 *   - pages pinned for DMA (gup_test) are left mapped, writable and
 *     where they were, the rest of their run moves;
 *   - a writer storing to the pages while they move loses no store: the
 *     run's flush is the batch's and precedes every copy;
 *   - with ROCM on, read-only shmem pages and anon pages COW-shared with
 *     a child are switched to their copies in runs (rocm_runs), all
 *     through ROCM (migrate_rocm_success), and at 0 one by one;
 *   - moving a child's pages after the parent wrote every other one, a
 *     ROCM run leaves the parent's PTEs that map its own copies alone;
 *   - a run over many VMAs of one anon_vma (every other page read-only)
 *     gives the anon_vma lock up when a writer (madvise splitting and
 *     merging a VMA of the same anon_vma) waits for it, range unmap,
 *     range remap and ROCM runs alike (the *_handovers counts), with
 *     migrate_range/vma_delay_us and migrate_rocm/switch_delay_us
 *     (CONFIG_MIGRATE_RANGE_DEBUG, CONFIG_MIGRATE_ROCM_DEBUG) holding
 *     the lock long enough for the writer to queue; each hand-over
 *     leaves folios to the per-folio walk (the left counts), whose
 *     flushes stay the batch's (tlb:tlb_flush on this CPU, x86);
 *   - the knobs are put back even if a timeout kills a test (numa_util's
 *     undo list, itself checked: undo_outlives_a_killed_test).
 *
 * Needs CONFIG_MIGRATE_RANGE, root, two nodes with memory (and two CPUs
 * for the writer); SKIPs otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "../../../../mm/gup_test.h"
#include "numa_util.h"

#define SYSCTL		"/proc/sys/vm/migrate_range_unmap"
#define ORDER		"/proc/sys/vm/migrate_address_order"
#define ROCM		"/proc/sys/vm/migrate_rocm"
#define STATS		"/sys/kernel/debug/migrate_range/stats"
#define RANGE_DELAY	"/sys/kernel/debug/migrate_range/vma_delay_us"
#define ROCM_DELAY	"/sys/kernel/debug/migrate_rocm/switch_delay_us"
#define MTHP_64K	"/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled"
#define DELAY_US	"2000"	/* per VMA: 16 VMAs hold the lock 32 ms */
#define NR		256	/* pages: inside one migrate_pages() batch */
#define RUN_MAX		64	/* MIGRATE_RANGE_MAX */
#define PAGE		4096UL
#define SEED		0x726e

struct mr_stats {
	long runs, unmapped, left, remap_runs, remapped, remap_left;
	long rocm_runs, rocm_moved, rocm_left;
};

static int mr_stats_read(struct mr_stats *s)
{
	char buf[384];

	if (nu_read_all(STATS, buf, sizeof(buf)) <= 0)
		return -1;
	return sscanf(buf,
		      "runs %ld unmapped %ld left %ld remap_runs %ld remapped %ld remap_left %ld rocm_runs %ld rocm_moved %ld rocm_left %ld",
		      &s->runs, &s->unmapped, &s->left, &s->remap_runs,
		      &s->remapped, &s->remap_left, &s->rocm_runs,
		      &s->rocm_moved, &s->rocm_left) == 9 ? 0 : -1;
}

/* @d = @a - @b, field by field */
static void mr_stats_sub(struct mr_stats *d, const struct mr_stats *a,
			 const struct mr_stats *b)
{
	d->runs = a->runs - b->runs;
	d->unmapped = a->unmapped - b->unmapped;
	d->left = a->left - b->left;
	d->remap_runs = a->remap_runs - b->remap_runs;
	d->remapped = a->remapped - b->remapped;
	d->remap_left = a->remap_left - b->remap_left;
	d->rocm_runs = a->rocm_runs - b->rocm_runs;
	d->rocm_moved = a->rocm_moved - b->rocm_moved;
	d->rocm_left = a->rocm_left - b->rocm_left;
}

#define PM_SOFT_DIRTY	55
#define PM_UFFD_WP	57
#define PM_PRESENT	63

/* The /proc/self/pagemap entry of @p; 0 if it cannot be read. */
static uint64_t pm_entry(const void *p)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, &e, 8, (uintptr_t)p / PAGE * 8) != 8)
		e = 0;
	close(fd);
	return e;
}

/* The frame mapped at @p; 0 if not present. */
static uint64_t pfn_of(const void *p)
{
	uint64_t e = pm_entry(p);

	return e >> PM_PRESENT ? e & ((1ULL << 55) - 1) : 0;
}

FIXTURE(mr) {
	int from, to;
	char *buf;
	void *addrs[NR];
	int nodes[NR], status[NR];
	char range[8], order[8], rocm[8], mthp[16];
	struct mr_stats before;
};

/*
 * nu_anon_bound() of order-0 folios only: a run takes no large folio,
 * and where mTHP sizes are enabled (7.3 has them everywhere) anon faults
 * may map 16 KiB..1 MiB folios; MADV_NOHUGEPAGE keeps out THP and mTHP.
 */
static char *mr_anon(size_t len, int nid)
{
	unsigned long mask = 1UL << nid;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (madvise(p, len, MADV_NOHUGEPAGE) ||
	    nu_mbind(p, len, MPOL_BIND, &mask, NU_MAX_NODES, 0)) {
		munmap(p, len);
		return NULL;
	}
	nu_fill(p, len, SEED);
	return p;
}

FIXTURE_SETUP(mr)
{
	struct nu_topo topo;
	int i;

	self->buf = NULL;
	self->order[0] = '\0';
	self->rocm[0] = '\0';
	self->mthp[0] = '\0';
	/* an earlier test's knobs back first (numa_util.h) */
	ASSERT_EQ(0, nu_undo_begin());
	if (nu_read_str(SYSCTL, self->range, sizeof(self->range)) < 0 ||
	    access(STATS, R_OK))
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_RANGE)", SYSCTL);
	if (nu_topo_read(&topo) || topo.nr_eligible < 2)
		NU_SKIP(return, "needs two nodes with memory");
	self->from = topo.node[topo.eligible[0]].id;
	self->to = topo.node[topo.eligible[1]].id;
	self->buf = mr_anon(NR * PAGE, self->from);
	ASSERT_NE(NULL, self->buf);
	for (i = 0; i < NR; i++) {
		self->addrs[i] = self->buf + i * PAGE;
		self->nodes[i] = self->to;
	}
	nu_read_str(ORDER, self->order, sizeof(self->order));
	/* put back even if a timeout kills the test; absent ones fail */
	nu_undo_knob(SYSCTL);
	nu_undo_knob(ORDER);
	nu_undo_knob(ROCM);
	nu_undo_knob(RANGE_DELAY);
	nu_undo_knob(ROCM_DELAY);
	/* ROCM would take read-only pages another way */
	if (nu_read_str(ROCM, self->rocm, sizeof(self->rocm)) >= 0)
		ASSERT_EQ(0, nu_write_str(ROCM, "0"));
}

FIXTURE_TEARDOWN(mr)
{
	/* the hand-over cases' knobs, should they have failed with them set */
	if (!access(RANGE_DELAY, W_OK))
		nu_write_str(RANGE_DELAY, "0");
	if (!access(ROCM_DELAY, W_OK))
		nu_write_str(ROCM_DELAY, "0");
	nu_write_str(SYSCTL, self->range);
	if (self->order[0])
		nu_write_str(ORDER, self->order);
	if (self->rocm[0])
		nu_write_str(ROCM, self->rocm);
	if (self->mthp[0])
		nu_write_str(MTHP_64K, self->mthp);
	if (self->buf)
		munmap(self->buf, NR * PAGE);
	nu_undo_done();
}

/* Move the array with the range unmap at @on; the stats' change in @d. */
static void mr_move(struct __test_metadata *_metadata, FIXTURE_DATA(mr) *self,
		    const char *on, int flags, struct mr_stats *d)
{
	struct mr_stats after;

	ASSERT_EQ(0, nu_write_str(SYSCTL, on));
	ASSERT_EQ(0, mr_stats_read(&self->before));
	/* a page busy now and then may stay behind */
	EXPECT_LE(0, nu_move_pages_where(0, NR, self->addrs, self->nodes,
					 self->status, flags));
	ASSERT_EQ(0, mr_stats_read(&after));
	mr_stats_sub(d, &after, &self->before);
	TH_LOG("range %s: unmap %ld runs, %ld folios, %ld left; remap %ld runs, %ld PTEs, %ld left",
	       on, d->runs, d->unmapped, d->left, d->remap_runs, d->remapped,
	       d->remap_left);
	EXPECT_LE(NR * 9 / 10, nu_pages_on(self->buf, NR * PAGE,
					   self->nodes[0]));
	EXPECT_TRUE(nu_intact(self->buf, NR * PAGE, SEED));
}

TEST_F(mr, range_is_unmapped_in_runs)
{
	struct mr_stats d;

	mr_move(_metadata, self, "1", MPOL_MF_MOVE, &d);
	/*
	 * 4 runs of 64 each way; other migrations meanwhile (compaction)
	 * may add runs of their own, hence the slack.  Stock would be 256.
	 */
	EXPECT_LE(NR * 9 / 10, d.unmapped);
	EXPECT_GE(d.runs, (NR + RUN_MAX - 1) / RUN_MAX);
	EXPECT_LE(d.runs, NR / 4);
	EXPECT_LE(NR * 9 / 10, d.remapped);
	EXPECT_GE(d.remap_runs, (NR + RUN_MAX - 1) / RUN_MAX);
	EXPECT_LE(d.remap_runs, NR / 4);
	EXPECT_EQ(0, d.remap_left);
}

TEST_F(mr, off_is_stock)
{
	struct mr_stats d;

	mr_move(_metadata, self, "0", MPOL_MF_MOVE, &d);
	EXPECT_EQ(0, d.unmapped);
	EXPECT_EQ(0, d.left);
	EXPECT_EQ(0, d.remap_runs);
}

#define KPF_THP		22
#define KPF_MLOCKED	33

/* How many pages of [p, p + NR pages) have @bit in /proc/kpageflags. */
static int kpf_pages(const char *p, int bit)
{
	int kflags = open("/proc/kpageflags", O_RDONLY);
	int i, n = 0;

	if (kflags < 0)
		return -1;
	for (i = 0; i < NR; i++) {
		uint64_t pfn = pfn_of(p + i * PAGE), f;

		if (pfn && pread(kflags, &f, 8, pfn * 8) == 8 && (f >> bit & 1))
			n++;
	}
	close(kflags);
	return n;
}

/*
 * Runs take order-0 folios only: a buffer of 64 KiB mTHP folios moves
 * whole, folio by folio, with its data, and no run unmaps or remaps any
 * of it (the order-0 pages mTHP could not fill may still make runs).
 */
TEST_F(mr, mthp_moves_per_folio)
{
	size_t len = NR * PAGE + (64 << 10);
	unsigned long mask = 1UL << self->from;
	struct mr_stats d;
	char *map, *p;
	int i, large;

	if (access(MTHP_64K, W_OK))
		NU_SKIP(return, "no %s (mTHP, Linux 6.8+)", MTHP_64K);
	ASSERT_EQ(0, nu_undo_choice(MTHP_64K, self->mthp, sizeof(self->mthp)));
	ASSERT_EQ(0, nu_write_str(MTHP_64K, "always"));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	p = (char *)(((uintptr_t)map + (64 << 10) - 1) & ~((64UL << 10) - 1));
	ASSERT_EQ(0, nu_mbind(p, NR * PAGE, MPOL_BIND, &mask, NU_MAX_NODES, 0));
	nu_fill(p, NR * PAGE, SEED);
	large = kpf_pages(p, KPF_THP);
	TH_LOG("%d of %d pages in large folios", large, NR);
	if (large < NR / 2) {
		munmap(map, len);
		NU_SKIP(return, "mTHP gave %d of %d pages (fragmented?)",
			large, NR);
	}
	for (i = 0; i < NR; i++)
		self->addrs[i] = p + i * PAGE;
	munmap(self->buf, NR * PAGE);
	self->buf = p;
	mr_move(_metadata, self, "1", MPOL_MF_MOVE, &d);
	/* slack for other migrations meanwhile, as elsewhere */
	EXPECT_LE(d.unmapped, NR - large + NR / 10);
	EXPECT_LE(d.remapped, NR - large + NR / 10);
	/* moved whole (a folio split for want of a large one is not) */
	EXPECT_LE(large - NR / 10, kpf_pages(p, KPF_THP));
	self->buf = NULL;
	munmap(map, len);
}

TEST_F(mr, mlocked_stay_mlocked)
{
	struct mr_stats d;

	ASSERT_EQ(0, mlock(self->buf, NR * PAGE));
	ASSERT_EQ(NR, kpf_pages(self->buf, KPF_MLOCKED));
	mr_move(_metadata, self, "1", MPOL_MF_MOVE, &d);
	EXPECT_EQ(NR, kpf_pages(self->buf, KPF_MLOCKED));
	EXPECT_EQ(0, d.remapped);
	munlock(self->buf, NR * PAGE);
}

TEST_F(mr, shuffled_runs_need_sorting)
{
	struct mr_stats unsorted, sorted;
	int i;

	if (!self->order[0])
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_ORDER)", ORDER);
	nu_shuffle(self->addrs, NR, SEED);
	ASSERT_EQ(0, nu_write_str(ORDER, "0"));
	mr_move(_metadata, self, "1", MPOL_MF_MOVE, &unsorted);
	for (i = 0; i < NR; i++)
		self->nodes[i] = self->from;
	/*
	 * The pages now sit at PFNs allocated in array order, and a batch
	 * whose PFNs ascend counts as ordered and is kept: shuffle again.
	 */
	nu_shuffle(self->addrs, NR, SEED + 1);
	ASSERT_EQ(0, nu_write_str(ORDER, "1"));
	mr_move(_metadata, self, "1", MPOL_MF_MOVE, &sorted);
	/* in array order about every other neighbour descends */
	EXPECT_GE(unsorted.runs, NR / 4);
	EXPECT_LE(sorted.runs, NR / 8);
	EXPECT_LE(NR * 9 / 10, sorted.unmapped);
}

static char *child_buf;

static void child_check(int sig)
{
	_exit(nu_intact(child_buf, NR * PAGE, SEED) ? 0 : 1);
}

static void child_touch(void *arg)
{
	char *p = arg;
	unsigned long i;

	for (i = 0; i < NR * PAGE; i += PAGE)
		(void)__atomic_load_n(&p[i], __ATOMIC_RELAXED);
}

TEST_F(mr, shared_with_child)
{
	struct mr_stats d;
	int status[NR], st, i, on = 0;
	pid_t kid;

	child_buf = self->buf;
	signal(SIGUSR1, child_check);
	ASSERT_EQ(1, nu_fork_sharers(&kid, 1, child_touch, self->buf));
	mr_move(_metadata, self, "1", MPOL_MF_MOVE_ALL, &d);
	EXPECT_LE(NR * 9 / 10, d.unmapped);
	/* the child's PTEs point at the new pages too */
	ASSERT_EQ(0, nu_move_pages(kid, NR, self->addrs, NULL, status, 0));
	for (i = 0; i < NR; i++)
		on += status[i] == self->to;
	EXPECT_LE(NR * 9 / 10, on);
	kill(kid, SIGUSR1);
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st))
		TH_LOG("the child's data changed");
	signal(SIGUSR1, SIG_DFL);
}

/* Write-protect page @i of @buf with userfaultfd @uffd. */
static int uffd_wp_page(int uffd, char *buf, int i)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = (uintptr_t)buf + i * PAGE, .len = PAGE },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};

	return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp);
}

/* A userfaultfd with @buf registered for write protection; -1 if none. */
static int uffd_wp_open(char *buf)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)buf, .len = NR * PAGE },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	int uffd = syscall(__NR_userfaultfd, O_CLOEXEC);

	if (uffd < 0)
		return -1;
	if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		close(uffd);
		return -1;
	}
	return uffd;
}

/* Bit @bit of each page's pagemap entry, as a string of 0s and 1s. */
static void pm_bits(const char *buf, int bit, char *out)
{
	int i;

	for (i = 0; i < NR; i++)
		out[i] = '0' + (pm_entry(buf + i * PAGE) >> bit & 1);
	out[NR] = '\0';
}

/*
 * Move the buffer with the range remap on and check that pagemap bit
 * @bit of every page is what it was (@before).
 */
static void mr_bits_carried(struct __test_metadata *_metadata,
			    FIXTURE_DATA(mr) *self, int bit, const char *before,
			    const char *what)
{
	char after[NR + 1];
	struct mr_stats d;
	int i;

	mr_move(_metadata, self, "1", MPOL_MF_MOVE, &d);
	EXPECT_LE(NR * 9 / 10, d.remapped);
	pm_bits(self->buf, bit, after);
	for (i = 0; i < NR; i++)
		EXPECT_EQ(before[i], after[i]) TH_LOG("page %d %s", i, what);
}

TEST_F(mr, soft_dirty_carried)
{
	char sd[NR + 1];
	int i;

	if (nu_write_str("/proc/self/clear_refs", "4"))
		NU_SKIP(return, "no soft-dirty tracking (CONFIG_MEM_SOFT_DIRTY)");
	/* soft-dirty: every third page written since the clear */
	for (i = 0; i < NR; i += 3)
		__atomic_fetch_or(&self->buf[i * PAGE], 0, __ATOMIC_RELAXED);
	pm_bits(self->buf, PM_SOFT_DIRTY, sd);
	ASSERT_NE(NULL, strchr(sd, '0'));
#ifndef __x86_64__
	/* clear_refs takes "4" on every arch; only some keep the bit */
	if (!strchr(sd, '1'))
		NU_SKIP(return, "no soft-dirty bit in the page tables of this arch");
#endif
	/* the setup took: the bit varies from page to page */
	ASSERT_NE(NULL, strchr(sd, '1'));
	mr_bits_carried(_metadata, self, PM_SOFT_DIRTY, sd, "soft-dirty");
}

TEST_F(mr, uffd_wp_carried)
{
	char wp[NR + 1];
	int uffd, i;

	uffd = uffd_wp_open(self->buf);
	if (uffd < 0)
		NU_SKIP(return, "no userfaultfd write protection (CONFIG_USERFAULTFD)");
	/* uffd-wp: every fourth page */
	for (i = 0; i < NR; i += 4)
		ASSERT_EQ(0, uffd_wp_page(uffd, self->buf, i));
	pm_bits(self->buf, PM_UFFD_WP, wp);
	/* the setup took: the bit varies from page to page */
	ASSERT_NE(NULL, strchr(wp, '0'));
	ASSERT_NE(NULL, strchr(wp, '1'));
	mr_bits_carried(_metadata, self, PM_UFFD_WP, wp, "uffd-wp");
	close(uffd);
}

#define PIN_FIRST	100
#define NR_PINNED	8

TEST_F(mr, pinned_pages_stay_mapped)
{
	struct pin_longterm_test pin = {
		.addr = (unsigned long)self->buf + PIN_FIRST * PAGE,
		.size = NR_PINNED * PAGE,
		.flags = PIN_LONGTERM_TEST_FLAG_USE_WRITE,
	};
	void **pinned = self->addrs + PIN_FIRST;
	uint64_t pfn[NR_PINNED];
	int gup, i, where[NR_PINNED];
	struct mr_stats d;

	gup = open("/sys/kernel/debug/gup_test", O_RDWR);
	if (gup < 0)
		NU_SKIP(return, "no /sys/kernel/debug/gup_test (CONFIG_GUP_TEST)");
	ASSERT_EQ(0, ioctl(gup, PIN_LONGTERM_TEST_START, &pin));
	ASSERT_EQ(0, nu_move_pages(0, NR_PINNED, pinned, NULL, where, 0));
	for (i = 0; i < NR_PINNED; i++) {
		if (where[i] != self->from) {
			ioctl(gup, PIN_LONGTERM_TEST_STOP);
			NU_SKIP(return, "the pin moved page %d (a movable zone?)", i);
		}
		pfn[i] = pfn_of(pinned[i]);
	}
	mr_move(_metadata, self, "1", MPOL_MF_MOVE, &d);
	/* every pinned page was left mapped, to the per-folio unmap */
	EXPECT_LE(NR_PINNED, d.left);
	/* where it was: same node, same frame, still present */
	for (i = 0; i < NR_PINNED; i++) {
		EXPECT_EQ(self->from, self->status[PIN_FIRST + i])
			TH_LOG("pinned page %d", i);
		EXPECT_EQ(pfn[i], pfn_of(pinned[i])) TH_LOG("pinned page %d", i);
	}
	ioctl(gup, PIN_LONGTERM_TEST_STOP);
	close(gup);
}

/* The writer: page k % NR gets k, one store every few microseconds. */
static int w_stop;
static unsigned long w_last;

static void *writer(void *arg)
{
	unsigned long *buf = arg, k;
	int spin;

	nu_pin_cpu(1);
	for (k = 1; !__atomic_load_n(&w_stop, __ATOMIC_RELAXED); k++) {
		buf[(k % NR) * (PAGE / sizeof(*buf))] = k;
		__atomic_store_n(&w_last, k, __ATOMIC_RELEASE);
		for (spin = 0; spin < 2000; spin++)
			asm volatile("" ::: "memory");
	}
	return NULL;
}

/* How many pages do not hold the last value the writer stored to them. */
static int lost_stores(const unsigned long *buf, unsigned long last)
{
	int p, lost = 0;

	for (p = 0; p < NR; p++) {
		unsigned long want = last - ((last - p) % NR);

		if (last >= NR && buf[p * (PAGE / sizeof(*buf))] != want)
			lost++;
	}
	return lost;
}

TEST_F(mr, no_store_lost)
{
	unsigned long *buf = (unsigned long *)self->buf;
	int round, lost = 0, moved = 0;
	pthread_t t;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		NU_SKIP(return, "needs two CPUs");
	ASSERT_EQ(0, nu_write_str(SYSCTL, "1"));
	nu_pin_cpu(0);
	for (round = 0; round < 20 && !lost; round++) {
		int node = round & 1 ? self->from : self->to, i;

		for (i = 0; i < NR; i++)
			self->nodes[i] = node;
		w_stop = 0;
		ASSERT_EQ(0, pthread_create(&t, NULL, writer, buf));
		while (__atomic_load_n(&w_last, __ATOMIC_ACQUIRE) < 2 * NR)
			;
		EXPECT_LE(0, nu_move_pages_where(0, NR, self->addrs,
						 self->nodes, self->status,
						 MPOL_MF_MOVE));
		__atomic_store_n(&w_stop, 1, __ATOMIC_RELAXED);
		pthread_join(t, NULL);
		moved += nu_pages_on(self->buf, NR * PAGE, node);
		lost = lost_stores(buf, w_last);
		w_last = 0;
	}
	TH_LOG("%d rounds, %d pages moved, %d stores lost", round, moved, lost);
	/* the writer may keep a page busy now and then */
	EXPECT_LE(round * NR / 2, moved);
	EXPECT_EQ(0, lost);
}

/*
 * A read-only shared mapping of @len bytes of shmem holding the pattern,
 * its pages on @node: written through a memfd under that node's policy,
 * then mapped through a read-only reopen, so no mapping may write.
 */
static char *ro_shmem(int node, size_t len)
{
	unsigned long mask = 1UL << node;
	char path[64], *w, *p = MAP_FAILED;
	int fd = memfd_create("migrate_range", 0), ro = -1;

	if (fd < 0)
		return NULL;
	w = malloc(len);
	if (w && !nu_set_mempolicy(MPOL_BIND, &mask, NU_MAX_NODES)) {
		nu_fill(w, len, SEED);
		if (write(fd, w, len) == (ssize_t)len) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			ro = open(path, O_RDONLY);
		}
		nu_set_mempolicy(MPOL_DEFAULT, NULL, 0);
	}
	free(w);
	close(fd);
	if (ro >= 0) {
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, ro, 0);
		close(ro);
	}
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	child_touch(p);
	return p;
}

/*
 * Move the NR pages at @p back and forth with ROCM on: with the range
 * off (one rmap walk a folio, no ROCM run) and on (runs of at most 64).
 * Every move goes through ROCM, and the data and placement are right.
 */
static void mr_rocm_runs(struct __test_metadata *_metadata,
			 FIXTURE_DATA(mr) *self, char *p)
{
	struct mr_stats before, after;
	int status[NR], nodes[NR], k, i;
	long long ok;
	void *pages[NR];

	ASSERT_EQ(0, nu_write_str(ROCM, "1"));
	for (k = 0; k < 2; k++) {
		for (i = 0; i < NR; i++) {
			pages[i] = p + i * PAGE;
			nodes[i] = k ? self->from : self->to;
		}
		ASSERT_EQ(0, nu_write_str(SYSCTL, k ? "1" : "0"));
		ASSERT_EQ(0, mr_stats_read(&before));
		ok = nu_vmstat("migrate_rocm_success");
		EXPECT_LE(0, nu_move_pages_where(0, NR, pages, nodes, status,
						 MPOL_MF_MOVE_ALL));
		ok = nu_vmstat("migrate_rocm_success") - ok;
		ASSERT_EQ(0, mr_stats_read(&after));
		TH_LOG("range %d: %lld moved by ROCM, %ld ROCM runs moving %ld, %ld left",
		       k, ok, after.rocm_runs - before.rocm_runs,
		       after.rocm_moved - before.rocm_moved,
		       after.rocm_left - before.rocm_left);
		EXPECT_LE(NR * 9 / 10, ok);
		EXPECT_LE(NR * 9 / 10, nu_pages_on(p, NR * PAGE, nodes[0]));
		EXPECT_TRUE(nu_intact(p, NR * PAGE, SEED));
		if (!k) {
			EXPECT_EQ(0, after.rocm_runs - before.rocm_runs);
			continue;
		}
		/* 4 runs of 64; other migrations meanwhile may add some */
		EXPECT_GE(after.rocm_runs - before.rocm_runs,
			  (NR + RUN_MAX - 1) / RUN_MAX);
		EXPECT_LE(after.rocm_runs - before.rocm_runs, NR / 4);
		EXPECT_LE(NR * 9 / 10, after.rocm_moved - before.rocm_moved);
	}
}

TEST_F(mr, rocm_shmem_in_runs)
{
	char *p;

	if (!self->rocm[0])
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_ROCM)", ROCM);
	p = ro_shmem(self->from, NR * PAGE);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(NR, nu_pages_on(p, NR * PAGE, self->from));
	mr_rocm_runs(_metadata, self, p);
	munmap(p, NR * PAGE);
}

TEST_F(mr, rocm_anon_in_runs)
{
	pid_t kid;
	int st;

	if (!self->rocm[0])
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_ROCM)", ROCM);
	/* COW-shared with a child: read-only, not exclusive, in both mms */
	child_buf = self->buf;
	signal(SIGUSR1, child_check);
	ASSERT_EQ(1, nu_fork_sharers(&kid, 1, child_touch, self->buf));
	child_touch(self->buf);
	mr_rocm_runs(_metadata, self, self->buf);
	kill(kid, SIGUSR1);
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st))
		TH_LOG("the child's data changed");
	signal(SIGUSR1, SIG_DFL);
}

#define SEED2	0x5eed

/* Parent's view after writing the even pages: those SEED2, the rest SEED. */
static bool diverged_intact(const char *buf)
{
	for (int k = 0; k < NR; k++) {
		const unsigned int *w = (const unsigned int *)(buf + k * PAGE);

		for (unsigned int j = 0; j < PAGE; j += sizeof(*w))
			if (w[j / sizeof(*w)] != (k % 2 ? SEED ^ (unsigned int)(k * PAGE + j) :
						  SEED2 ^ j))
				return false;
	}
	return true;
}

/*
 * The parent writes every other page after fork(), so there its PTE maps
 * its own copy while the child keeps the original.  Moving the child's
 * pages, a run's walk meets the parent's VMA (same anon_vma) at each
 * original's address: it must leave the PTEs there that map the parent's
 * copies alone, or the parent's stores are lost.  The parent's mapping is
 * made read-only, so that no per-PTE rule but the PFN match stops it.
 */
TEST_F(mr, rocm_cow_diverged)
{
	int status[NR], st, k;
	struct mr_stats b, a;
	pid_t kid;

	if (!self->rocm[0])
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_ROCM)", ROCM);
	child_buf = self->buf;
	signal(SIGUSR1, child_check);
	ASSERT_EQ(1, nu_fork_sharers(&kid, 1, child_touch, self->buf));
	for (k = 0; k < NR; k += 2)
		nu_fill(self->buf + k * PAGE, PAGE, SEED2);
	/* read-only: only the PFN tells the parent's copy from the original */
	ASSERT_EQ(0, mprotect(self->buf, NR * PAGE, PROT_READ));
	ASSERT_EQ(0, nu_write_str(ROCM, "1"));
	ASSERT_EQ(0, nu_write_str(SYSCTL, "1"));
	ASSERT_EQ(0, mr_stats_read(&b));
	EXPECT_LE(0, nu_move_pages_where(kid, NR, self->addrs, self->nodes,
					 status, MPOL_MF_MOVE_ALL));
	ASSERT_EQ(0, mr_stats_read(&a));
	TH_LOG("%ld ROCM runs moved %ld, %ld left", a.rocm_runs - b.rocm_runs,
	       a.rocm_moved - b.rocm_moved, a.rocm_left - b.rocm_left);
	EXPECT_TRUE(diverged_intact(self->buf)) TH_LOG("the parent's data changed");
	kill(kid, SIGUSR1);
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st))
		TH_LOG("the child's data changed");
	signal(SIGUSR1, SIG_DFL);
	for (k = 0, st = 0; k < NR; k++)
		st += status[k] == self->to;
	EXPECT_LE(NR * 9 / 10, st);
	/* the test proves nothing unless the originals moved in runs */
	EXPECT_LE(NR * 9 / 10, a.rocm_moved - b.rocm_moved);
}

/* A count of migrate_range/stats ("unmap_handovers", ...); -1 if none. */
static long mr_stat(const char *name)
{
	char buf[512], *p;

	if (nu_read_all(STATS, buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, name);
	return p ? atol(p + strlen(name) + 1) : -1;
}

/*
 * NR + 2 pages of one anon_vma on @node, filled, every other page of the
 * first NR read-only: NR VMAs for a run to walk, and a 2-page VMA for
 * the lock writer.
 */
static char *mr_split_buf(int node)
{
	char *p = mr_anon((NR + 2) * PAGE, node);
	int i;

	for (i = 1; p && i < NR; i += 2)
		if (mprotect(p + i * PAGE, PAGE, PROT_READ))
			return NULL;
	return p;
}

/*
 * The lock writer: splits the 2-page VMA after the NR pages and merges
 * it again (MADV_DONTFORK, MADV_DOFORK), each under the anon_vma lock
 * for write.  No page table changes: mprotect() would leave a TLB flush
 * pending on the mm meanwhile, which ROCM refuses (flush_pending).
 */
static int lw_stop;

static void *lock_writer(void *arg)
{
	char *p = (char *)arg + NR * PAGE;
	long rounds = 0;

	while (!__atomic_load_n(&lw_stop, __ATOMIC_RELAXED)) {
		madvise(p, PAGE, MADV_DONTFORK);
		madvise(p, PAGE, MADV_DOFORK);
		rounds++;
	}
	return (void *)rounds;
}

/* A move_pages(2) call of the NR split pages, as nu_trace_count()'s @fn. */
struct mr_call {
	void *pages[NR];
	int *nodes, status[NR], flags;
};

static long mr_call_move(void *arg)
{
	struct mr_call *c = arg;

	return nu_move_pages_where(0, NR, c->pages, c->nodes, c->status,
				   c->flags);
}

/*
 * The TLB flush rounds this task makes on its own CPU while @c moves
 * (tlb:tlb_flush, "local shootdown" and "local mm shootdown", x86): one
 * per flush, IPIs or none; -1 where the event is missing (arm64).
 */
static long mr_traced_move(struct __test_metadata *_metadata,
			   struct mr_call *c, long *flushes)
{
	struct nu_event ev = { .name = "tlb/tlb_flush",
			       .match = "reason:local" };
	struct utsname u;
	long ret;

	*flushes = -1;
	/* only x86 traces its flushes (arm64 has the event, never fired) */
	if (uname(&u) || strcmp(u.machine, "x86_64") || !nu_trace_has(ev.name))
		return mr_call_move(c);
	snprintf(ev.filter, sizeof(ev.filter), "common_pid == %d", gettid());
	if (nu_trace_count(&ev, 1, mr_call_move, c, &ret)) {
		TH_LOG("tracing failed: the move runs untraced");
		return mr_call_move(c);
	}
	*flushes = ev.count;
	return ret;
}

/*
 * Another CPU that runs this mm throughout: should_defer_flush() defers
 * only while mm_cpumask() has one, and x86 drops a CPU from it when the
 * CPU runs another process, which it may while the lock writer sleeps.
 */
static int spin_stop;

static void *mm_spinner(void *arg)
{
	nu_pin_cpu((int)(long)arg);
	while (!__atomic_load_n(&spin_stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/* The batch's flush rounds in a contended move: 1 or 2 (ROCM) seen */
#define MR_FLUSHES_MAX	8

/* What a contended move did: its hand-overs, the stats' change, flushes */
struct mr_contended {
	long handovers, flushes;
	struct mr_stats d;
};

/*
 * Move the NR split pages at @p to the other node with the delay knob
 * @knob set and the lock writer running; the change of @stat and the
 * rest in @r.
 */
static void mr_contended_move(struct __test_metadata *_metadata,
			      FIXTURE_DATA(mr) *self, char *p,
			      const char *knob, const char *stat, int flags,
			      struct mr_contended *r)
{
	struct mr_call c = { .nodes = self->nodes, .flags = flags };
	long before = mr_stat(stat);
	struct mr_stats s0, s1;
	pthread_t t, spin;
	cpu_set_t was;
	int cpus[2];
	void *rounds;

	for (int i = 0; i < NR; i++)
		c.pages[i] = p + i * PAGE;
	lw_stop = 0;
	spin_stop = 0;
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(was), &was));
	ASSERT_TRUE(nu_pick_cpus(cpus, 2));
	nu_pin_cpu(cpus[0]);
	ASSERT_EQ(0, nu_write_str(knob, DELAY_US));
	ASSERT_EQ(0, mr_stats_read(&s0));
	ASSERT_EQ(0, pthread_create(&spin, NULL, mm_spinner,
				    (void *)(long)cpus[1]));
	ASSERT_EQ(0, pthread_create(&t, NULL, lock_writer, p));
	EXPECT_LE(0, mr_traced_move(_metadata, &c, &r->flushes));
	ASSERT_EQ(0, mr_stats_read(&s1));
	__atomic_store_n(&lw_stop, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&spin_stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, &rounds);
	pthread_join(spin, NULL);
	sched_setaffinity(0, sizeof(was), &was);
	nu_write_str(knob, "0");
	r->handovers = mr_stat(stat) - before;
	mr_stats_sub(&r->d, &s1, &s0);
	TH_LOG("%s: %ld, the writer %ld rounds, %ld local flushes",
	       stat, r->handovers, (long)rounds, r->flushes);
	TH_LOG("unmap %ld runs, %ld folios, %ld left; remap %ld runs, %ld PTEs",
	       r->d.runs, r->d.unmapped, r->d.left, r->d.remap_runs,
	       r->d.remapped);
	TH_LOG("rocm %ld runs, %ld moved", r->d.rocm_runs, r->d.rocm_moved);
	EXPECT_LE(NR * 9 / 10, nu_pages_on(p, NR * PAGE, self->nodes[0]));
	EXPECT_TRUE(nu_intact(p, NR * PAGE, SEED));
	/*
	 * What a run hands over finishes with flushes that stay the batch's
	 * (try_to_migrate(TTU_BATCH_FLUSH), ROCM's deferred rounds): a flush
	 * per PTE would make 16 or more per hand-over.
	 */
	if (r->flushes < 0)
		TH_LOG("no tlb:tlb_flush event: the flush rounds are not checked");
	else
		EXPECT_GE(MR_FLUSHES_MAX, r->flushes)
			TH_LOG("a flush per PTE after the hand-over?");
}

TEST_F(mr, range_runs_hand_the_lock_over)
{
	struct mr_contended r;
	char *p;

	if (access(RANGE_DELAY, W_OK) || mr_stat("remap_handovers") < 0)
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_RANGE_DEBUG)",
			RANGE_DELAY);
	p = mr_split_buf(self->from);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, nu_write_str(SYSCTL, "1"));
	mr_contended_move(_metadata, self, p, RANGE_DELAY, "unmap_handovers",
			  MPOL_MF_MOVE, &r);
	EXPECT_LE(1, r.handovers)
		TH_LOG("no unmap run gave the lock up");
	/* each run that stopped left the folios of its other VMAs mapped */
	EXPECT_LE(r.handovers, r.d.left);
	for (int i = 0; i < NR; i++)
		self->nodes[i] = self->from;
	mr_contended_move(_metadata, self, p, RANGE_DELAY, "remap_handovers",
			  MPOL_MF_MOVE, &r);
	EXPECT_LE(1, r.handovers)
		TH_LOG("no remap run gave the lock up");
	/* a run that stopped left the PTEs of its other VMAs unmapped */
	EXPECT_GE(NR - r.handovers, r.d.remapped);
	EXPECT_EQ(0, r.d.remap_left);
	munmap(p, (NR + 2) * PAGE);
}

TEST_F(mr, rocm_runs_hand_the_lock_over)
{
	struct mr_contended r;
	pid_t kid;
	char *p;
	int st;

	if (!self->rocm[0])
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_ROCM)", ROCM);
	if (access(ROCM_DELAY, W_OK) || mr_stat("rocm_handovers") < 0)
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_ROCM_DEBUG)", ROCM_DELAY);
	p = mr_split_buf(self->from);
	ASSERT_NE(NULL, p);
	/* COW-shared with a child, as rocm_anon_in_runs */
	child_buf = p;
	signal(SIGUSR1, child_check);
	ASSERT_EQ(1, nu_fork_sharers(&kid, 1, child_touch, p));
	child_touch(p);
	ASSERT_EQ(0, nu_write_str(ROCM, "1"));
	ASSERT_EQ(0, nu_write_str(SYSCTL, "1"));
	mr_contended_move(_metadata, self, p, ROCM_DELAY, "rocm_handovers",
			  MPOL_MF_MOVE_ALL, &r);
	EXPECT_LE(1, r.handovers)
		TH_LOG("no ROCM run gave the lock up");
	/* the per-folio walk after a hand-over still moves by ROCM */
	EXPECT_LE(NR * 9 / 10, r.d.rocm_moved);
	kill(kid, SIGUSR1);
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st))
		TH_LOG("the child's data changed");
	signal(SIGUSR1, SIG_DFL);
	munmap(p, (NR + 2) * PAGE);
}

/*
 * numa_util's undo list, which the hand-over cases' delay knobs rely on:
 * a test killed before its teardown gets its knobs put back, and one
 * that finished with nu_undo_done() does not.
 */
#define UNDO_KNOB	"/proc/sys/vm/stat_interval"

static pid_t undo_child(const char *val, bool done)
{
	pid_t kid = fork();

	if (kid)	/* or -1 */
		return kid;
	/* a group of its own, for the harness's timeout kill of a group */
	if (setpgid(0, 0) || nu_undo_knob(UNDO_KNOB) ||
	    nu_write_str(UNDO_KNOB, val))
		_exit(1);
	if (!done)
		kill(0, SIGKILL);
	nu_undo_done();
	_exit(0);
}

TEST(undo_outlives_a_killed_test)
{
	char was[32], now[32];
	int st, ms = 0;
	pid_t kid;

	if (geteuid())
		NU_SKIP(return, "needs root (writes %s)", UNDO_KNOB);
	if (access("/bin/sh", X_OK))
		NU_SKIP(return, "no /bin/sh for the undo shell");
	ASSERT_LT(0, nu_read_str(UNDO_KNOB, was, sizeof(was)));
	kid = undo_child(strcmp(was, "7") ? "7" : "8", false);
	ASSERT_LT(0, kid);
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	ASSERT_TRUE(WIFSIGNALED(st)) TH_LOG("the child did not get that far");
	/* the undo shell sees its pipe's end of file and writes @was back */
	do {
		ASSERT_LT(0, nu_read_str(UNDO_KNOB, now, sizeof(now)));
		if (!strcmp(now, was))
			break;
		usleep(10000);
		ms += 10;
	} while (ms < 10000);
	EXPECT_STREQ(was, now)
		TH_LOG("waited %d ms for the undo shell to put %s back", ms,
		       UNDO_KNOB);
	kid = undo_child(strcmp(was, "7") ? "7" : "8", true);
	ASSERT_LT(0, kid);
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
	/* nu_undo_done() waited for the shell: no write can come later */
	ASSERT_LT(0, nu_read_str(UNDO_KNOB, now, sizeof(now)));
	EXPECT_STRNE(was, now) TH_LOG("undone after nu_undo_done()");
	ASSERT_EQ(0, nu_write_str(UNDO_KNOB, was));
}

TEST_HARNESS_MAIN
