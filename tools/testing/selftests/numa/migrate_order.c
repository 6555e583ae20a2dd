// SPDX-License-Identifier: GPL-2.0
/*
 * migrate_order: migrate_pages() moves a batch in address order.
 *
 * move_pages(2) hands migrate_pages() its folios in the order of the
 * caller's address array.  With vm.migrate_address_order at 1 the batch
 * is sorted by (mapping, offset, PFN) first, so the folios of one VMA
 * move in address order; at 0 they move in array order (stock).  The
 * order is read back from the migration stage log
 * (/sys/kernel/debug/mm/migrate_stages_log, one row per folio in the
 * order they were moved), matching each row's source PFN to the page it
 * backed (/proc/self/pagemap).  A list that is already in page-table
 * order (mbind(2)) must be kept as it is: the pages of a range laid out
 * to alternate between two anon_vmas, which a sort would move one
 * anon_vma after the other, must move alternating
 * (/sys/kernel/debug/migrate_order/stats, which counts every task's
 * kept batches, must count one too).
 *
 * Needs CONFIG_MIGRATE_ORDER, CONFIG_MIGRATE_STAGES, root and two nodes
 * with memory; SKIPs otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>

#include "../kselftest_harness.h"
#include "numa_util.h"

#define SYSCTL		"/proc/sys/vm/migrate_address_order"
#define ROCM		"/proc/sys/vm/migrate_rocm"
#define STATS		"/sys/kernel/debug/migrate_order/stats"
#define STAGES		"/sys/kernel/debug/mm/migrate_stages"
#define STAGES_LOG	"/sys/kernel/debug/mm/migrate_stages_log"
#define NR		256	/* pages: inside one migrate_pages() batch */
#define HALF		(NR / 2 * PAGE)	/* of a walk range, in bytes */
#define PAGE		4096UL
#define SEED		0x6f72

/* PFN backing @p, 0 if none can be read. */
static uint64_t pfn_of(int fd, const void *p)
{
	uint64_t e;

	if (pread(fd, &e, sizeof(e), (uintptr_t)p / PAGE * sizeof(e)) !=
	    sizeof(e) || !(e >> 63))
		return 0;
	return e & ((1ULL << 55) - 1);
}

static long stat_of(const char *name)
{
	char buf[128], *p;

	if (nu_read_all(STATS, buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, name);
	return p ? atol(p + strlen(name) + 1) : -1;
}

FIXTURE(mo) {
	int from, to, pagemap;
	char *buf;
	void *addrs[NR];	/* the move_pages() array, shuffled */
	uint64_t pfn[NR];	/* page i's PFN before the move */
	char sysctl[8], rocm[8];
};

FIXTURE_SETUP(mo)
{
	struct nu_topo topo;
	int i;

	self->buf = NULL;
	self->rocm[0] = '\0';
	if (nu_read_str(SYSCTL, self->sysctl, sizeof(self->sysctl)) < 0 ||
	    access(STATS, R_OK))
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_ORDER)", SYSCTL);
	if (access(STAGES_LOG, R_OK))
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_STAGES)", STAGES_LOG);
	if (nu_topo_read(&topo) || topo.nr_eligible < 2)
		NU_SKIP(return, "needs two nodes with memory");
	self->from = topo.node[topo.eligible[0]].id;
	self->to = topo.node[topo.eligible[1]].id;
	self->pagemap = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, self->pagemap);
	self->buf = nu_anon_bound(NR * PAGE, MPOL_BIND, self->from, SEED);
	ASSERT_NE(NULL, self->buf);
	for (i = 0; i < NR; i++)
		self->addrs[i] = self->buf + i * PAGE;
	nu_shuffle(self->addrs, NR, SEED);
	/*
	 * ROCM may take these pages another way; keep to the classic path.
	 * Last: a failed setup runs no teardown to put it back.
	 */
	if (nu_read_str(ROCM, self->rocm, sizeof(self->rocm)) >= 0)
		ASSERT_EQ(0, nu_write_str(ROCM, "0"));
}

FIXTURE_TEARDOWN(mo)
{
	nu_write_str(SYSCTL, self->sysctl);
	if (self->rocm[0])
		nu_write_str(ROCM, self->rocm);
	nu_write_str(STAGES, "0");
	nu_write_str(STAGES, "sample 64");	/* the default */
	if (self->buf)
		munmap(self->buf, NR * PAGE);
	if (self->pagemap >= 0)
		close(self->pagemap);
}

/* Index of @pfn in @pfns (the NR pages' PFNs before a move), or -1. */
static int page_of(const uint64_t *pfns, uint64_t pfn)
{
	int i;

	for (i = 0; i < NR; i++)
		if (pfns[i] == pfn)
			return i;
	return -1;
}

/* The PFN of each of the NR pages of @buf in @pfns; false if one has none. */
static bool read_pfns(int pagemap, const char *buf, uint64_t *pfns)
{
	for (int i = 0; i < NR; i++) {
		pfns[i] = pfn_of(pagemap, buf + i * PAGE);
		if (!pfns[i])
			return false;
	}
	return true;
}

/* Log every folio that migrates from now on, in an empty log. */
static int log_start(void)
{
	if (nu_write_str(STAGES, "sample 1") || nu_write_str(STAGES, "reset"))
		return -1;
	return nu_write_str(STAGES, "1");
}

/*
 * The pages (indices into @pfns) the log saw move for @reason, in the
 * order they moved, in @idx: how many, or -1.
 */
static int moved_order(const uint64_t *pfns, const char *reason, int *idx)
{
	static char log[1 << 20];
	char *line, why[32];
	int n = 0;

	if (nu_read_all(STAGES_LOG, log, sizeof(log)) <= 0)
		return -1;
	for (line = strtok(log, "\n"); line && n < NR;
	     line = strtok(NULL, "\n")) {
		unsigned long long src;

		/* ts_ns,reason,mode,pass,rc,src_pfn,... */
		if (sscanf(line, "%*[^,],%31[^,],%*[^,],%*[^,],%*[^,],%llx",
			   why, &src) != 2 || strcmp(why, reason))
			continue;
		idx[n] = page_of(pfns, src);
		if (idx[n] >= 0)
			n++;
	}
	return n;
}

/*
 * Move the shuffled array to @node with the sysctl at @on; return how
 * many of the logged neighbours moved in ascending address order, and
 * the number of logged pages in *@logged.
 */
static int ascending_moves(struct __test_metadata *_metadata,
			   FIXTURE_DATA(mo) *self, int node, const char *on,
			   int *logged)
{
	int nodes[NR], status[NR], order[NR], i, asc = 0;

	ASSERT_TRUE(read_pfns(self->pagemap, self->buf, self->pfn))
		TH_LOG("no PFN (needs root)");
	for (i = 0; i < NR; i++)
		nodes[i] = node;
	ASSERT_EQ(0, nu_write_str(SYSCTL, on));
	ASSERT_EQ(0, log_start());
	/* a page busy now and then may stay behind; the order is the point */
	EXPECT_LE(0, nu_move_pages_where(0, NR, self->addrs, nodes, status,
					 MPOL_MF_MOVE));
	nu_write_str(STAGES, "0");
	EXPECT_LE(NR * 9 / 10, nu_pages_on(self->buf, NR * PAGE, node));
	EXPECT_TRUE(nu_intact(self->buf, NR * PAGE, SEED));
	*logged = moved_order(self->pfn, "syscall_or_cpuset", order);
	ASSERT_LT(0, *logged);
	for (i = 1; i < *logged; i++)
		asc += order[i] > order[i - 1];
	return asc;
}

TEST_F(mo, shuffled_array_moves_in_address_order)
{
	int off, on, n_off, n_on;

	off = ascending_moves(_metadata, self, self->to, "0", &n_off);
	/*
	 * The pages now sit at PFNs allocated in array order, and a batch
	 * whose PFNs ascend counts as ordered and is kept: shuffle again.
	 */
	nu_shuffle(self->addrs, NR, SEED + 1);
	on = ascending_moves(_metadata, self, self->from, "1", &n_on);
	TH_LOG("%d pages, shuffled: %d/%d neighbours ascending stock, %d/%d sorted",
	       NR, off, n_off - 1, on, n_on - 1);
	ASSERT_GE(n_off, NR * 9 / 10);
	ASSERT_GE(n_on, NR * 9 / 10);
	/* stock follows the array: about half the neighbours ascend */
	EXPECT_LE(off, n_off * 3 / 4);
	/* sorted: every neighbour ascends (a retried folio may come late) */
	EXPECT_GE(on, (n_on - 1) * 95 / 100);
}

/*
 * NR pages on @node, one per VMA, that alternate between two anon_vmas
 * X and Y: X0 Y0 X1 Y1 ...  Each half is faulted in a VMA of its own
 * between PROT_NONE guards (neighbours without an anon_vma to share),
 * then moved page by page into place with mremap(), which keeps a
 * page's anon_vma and offset.  Filled with SEED.
 */
static char *interleaved(int node)
{
	unsigned long mask = 1UL << node;
	size_t len = 2 * HALF + 3 * PAGE;
	char *src, *dst, *x, *y;

	src = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, NR * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (src == MAP_FAILED || dst == MAP_FAILED)
		return NULL;
	x = src + PAGE;
	y = x + HALF + PAGE;
	madvise(src, len, MADV_NOHUGEPAGE);
	if (nu_mbind(src, len, MPOL_BIND, &mask, NU_MAX_NODES, 0) ||
	    mprotect(x, HALF, PROT_READ | PROT_WRITE) ||
	    mprotect(y, HALF, PROT_READ | PROT_WRITE))
		return NULL;
	memset(x, 1, HALF);
	memset(y, 1, HALF);
	for (int i = 0; i < NR; i++)
		if (mremap((i % 2 ? y : x) + i / 2 * PAGE, PAGE, PAGE,
			   MREMAP_MAYMOVE | MREMAP_FIXED,
			   dst + i * PAGE) == MAP_FAILED)
			return NULL;
	munmap(src, len);
	nu_fill(dst, NR * PAGE, SEED);
	return dst;
}

/*
 * mbind(2) lists the range's folios as its page-table walk meets them,
 * X0 Y0 X1 Y1 ...: no two neighbours of one mapping, so the batch is in
 * an order worth keeping, while a sort would move all of one anon_vma's
 * pages before the other's.  How this task's own pages moved tells
 * which; the stats count other tasks' kept batches (compaction's) too.
 */
TEST_F(mo, walk_order_is_kept)
{
	unsigned long mask = 1UL << self->to;
	int order[NR], n, i, mixed = 0;
	char *walk;
	long kept;

	walk = interleaved(self->from);
	ASSERT_NE(NULL, walk) TH_LOG("cannot lay out the range: %s",
				     strerror(errno));
	ASSERT_TRUE(read_pfns(self->pagemap, walk, self->pfn))
		TH_LOG("no PFN (needs root)");
	ASSERT_EQ(0, nu_write_str(SYSCTL, "1"));
	kept = stat_of("kept");
	ASSERT_LE(0, kept);
	ASSERT_EQ(0, log_start());
	ASSERT_EQ(0, nu_mbind(walk, NR * PAGE, MPOL_BIND, &mask,
			      NU_MAX_NODES, MPOL_MF_MOVE));
	nu_write_str(STAGES, "0");
	EXPECT_LE(NR * 9 / 10, nu_pages_on(walk, NR * PAGE, self->to));
	EXPECT_TRUE(nu_intact(walk, NR * PAGE, SEED));
	n = moved_order(self->pfn, "mempolicy_mbind", order);
	for (i = 1; i < n; i++)
		mixed += order[i] % 2 != order[i - 1] % 2;
	TH_LOG("%d pages of two anon_vmas: %d of %d logged neighbours moved alternating",
	       NR, mixed, n - 1);
	ASSERT_GE(n, NR * 9 / 10);
	/* kept: all of them (a retried folio may come late); sorted: one */
	EXPECT_GE(mixed, (n - 1) * 9 / 10);
	EXPECT_LT(kept, stat_of("kept"));
	munmap(walk, NR * PAGE);
}

TEST_HARNESS_MAIN
