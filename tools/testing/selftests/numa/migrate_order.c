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
 * order (mbind(2)) must be kept as it is
 * (/sys/kernel/debug/migrate_order/stats counts it as kept).
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
		SKIP(return, "no %s (CONFIG_MIGRATE_ORDER)", SYSCTL);
	if (access(STAGES_LOG, R_OK))
		SKIP(return, "no %s (CONFIG_MIGRATE_STAGES)", STAGES_LOG);
	if (nu_topo_read(&topo) || topo.nr_eligible < 2)
		SKIP(return, "needs two nodes with memory");
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

/* Page index of the page whose old PFN is @pfn, -1 if none. */
static int page_of(FIXTURE_DATA(mo) *self, uint64_t pfn)
{
	int i;

	for (i = 0; i < NR; i++)
		if (self->pfn[i] == pfn)
			return i;
	return -1;
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
	static char log[1 << 20];
	int nodes[NR], status[NR], i, prev = -1, asc = 0;
	char *line;

	for (i = 0; i < NR; i++) {
		self->pfn[i] = pfn_of(self->pagemap, self->buf + i * PAGE);
		ASSERT_NE(0, self->pfn[i]) TH_LOG("no PFN (needs root)");
		nodes[i] = node;
	}
	ASSERT_EQ(0, nu_write_str(SYSCTL, on));
	ASSERT_EQ(0, nu_write_str(STAGES, "sample 1"));
	ASSERT_EQ(0, nu_write_str(STAGES, "reset"));
	ASSERT_EQ(0, nu_write_str(STAGES, "1"));
	/* a page busy now and then may stay behind; the order is the point */
	EXPECT_LE(0, nu_move_pages_where(0, NR, self->addrs, nodes, status,
					 MPOL_MF_MOVE));
	nu_write_str(STAGES, "0");
	EXPECT_LE(NR * 9 / 10, nu_pages_on(self->buf, NR * PAGE, node));
	EXPECT_TRUE(nu_intact(self->buf, NR * PAGE, SEED));
	ASSERT_LT(0, nu_read_all(STAGES_LOG, log, sizeof(log)));

	*logged = 0;
	for (line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long src;
		int idx;

		/* ts_ns,reason,mode,pass,rc,src_pfn,... */
		if (sscanf(line, "%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%llx", &src) != 1)
			continue;
		idx = page_of(self, src);
		if (idx < 0)
			continue;
		asc += prev >= 0 && idx > prev;
		prev = idx;
		(*logged)++;
	}
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

TEST_F(mo, walk_order_is_kept)
{
	unsigned long mask = 1UL << self->to;
	long kept;

	ASSERT_EQ(0, nu_write_str(SYSCTL, "1"));
	kept = stat_of("kept");
	ASSERT_LE(0, kept);
	/* mbind walks the page table: the list comes in address order */
	ASSERT_EQ(0, nu_mbind(self->buf, NR * PAGE, MPOL_BIND, &mask,
			      NU_MAX_NODES, MPOL_MF_MOVE));
	EXPECT_LE(NR * 9 / 10, nu_pages_on(self->buf, NR * PAGE, self->to));
	EXPECT_TRUE(nu_intact(self->buf, NR * PAGE, SEED));
	/* only "kept" is checked: compaction may sort or keep meanwhile */
	EXPECT_LT(kept, stat_of("kept"));
}

TEST_HARNESS_MAIN
