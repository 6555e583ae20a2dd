// SPDX-License-Identifier: GPL-2.0
/*
 * migrate_flush: TLB shootdown rounds of the synchronous migration
 * fallback, with vm.migrate_defer_flush off (stock: one round per
 * present PTE of a process live on another CPU) and on (one round per
 * group of folios that may share a fallback batch).
 *
 * The pages are COW-shared with NR_READERS child processes that keep
 * reading them on other CPUs, so each page is mapped by NR_READERS + 1
 * mms whose TLBs may hold it.  The debugfs knob
 * migrate_flush/skip_async_pass sends every folio of move_pages(2)
 * through migrate_pages_sync()'s per-folio fallback, and the
 * tlb:tlb_flush tracepoint with reason TLB_REMOTE_SEND_IPI, filtered on
 * the migrating task, counts each round of shootdown IPIs exactly (x86).
 *
 * The hugetlb variants map NR_HUGE 2 MiB pages of a hugetlb memfd
 * MAP_SHARED, or of a private mapping COW-shared by fork, in the same
 * processes: hugetlb folios migrate one at a time, and stock kernels flush
 * once per mapping; deferred, once per folio.  The
 * thp variant COW-shares NR_HUGE PMD-mapped THPs: stock kernels flush each
 * PMD as it installs the migration entry, even in an asynchronous batch;
 * deferred, once per batch (a THP fills a batch of 512 pages).
 *
 * anon_threads reads the pages from threads instead, so each is mapped
 * once: stock flushes each on its own, and a fallback group of them,
 * its leader included, must still cost one round.  With the
 * mm_migrate_batch event counting the batches, every variant but
 * hugetlb (which has none) also checks at most one round per batch.
 *
 * pinned_followers pins a run of the pages (gup_test) so that they stay
 * busy in a fallback group: they must be given back and fail on their
 * own exactly as the per-folio fallback fails them -- the same
 * move_pages() result, the same pages left, the same failed pages
 * counted (the nr_failed of this task's mm_migrate_pages events, what
 * its calls add to the system-wide pgmigrate_fail).
 *
 * Needs CONFIG_MIGRATE_DEFER_FLUSH_DEBUG, CONFIG_MIGRATE_STAGES (its
 * mm_migrate_batch event counts the batches), tracefs, three CPUs and two
 * nodes with memory (and free 2 MiB pages there for hugetlb); SKIPs
 * otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "numa_util.h"
#include "../../../../mm/gup_test.h"

#define SYSCTL		"/proc/sys/vm/migrate_defer_flush"
#define ROCM		"/proc/sys/vm/migrate_rocm"
#define BALANCING	"/proc/sys/kernel/numa_balancing"
#define SKIP_ASYNC	"/sys/kernel/debug/migrate_flush/skip_async_pass"
#define NR_READERS	2
#define NR_PAGES	64
#define NR_HUGE		4
#define PAGE		4096UL
#define HPAGE		(2UL << 20)
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB	(21U << 26)	/* log2(2 MiB) << MFD_HUGE_SHIFT */
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB	(21 << 26)	/* log2(2 MiB) << MAP_HUGE_SHIFT */
#endif

struct move {
	char *buf;
	int node, nr;
	unsigned long size;	/* of a folio */
	int status[NR_PAGES];
};

static long move_all(void *arg)
{
	struct move *m = arg;
	void *pages[NR_PAGES];
	int nodes[NR_PAGES], i;

	for (i = 0; i < m->nr; i++) {
		pages[i] = m->buf + i * m->size;
		nodes[i] = m->node;
	}
	return nu_move_pages_where(0, m->nr, pages, nodes, m->status,
				   MPOL_MF_MOVE_ALL);
}

struct reader {
	const char *buf;
	unsigned long len;
	int cpu, ready;
	pthread_t thread;
};

static bool readers_stop;

/* A reader thread: the same loop, in the migrating task's own mm. */
static void *reader_thread(void *arg)
{
	struct reader *r = arg;

	nu_pin_cpu(r->cpu);
	nu_read_pages(r->buf, r->len);
	if (write(r->ready, "r", 1) != 1)
		return NULL;
	while (!__atomic_load_n(&readers_stop, __ATOMIC_RELAXED))
		nu_read_pages(r->buf, r->len);
	return NULL;
}

FIXTURE(mf) {
	int from, to;
	char *buf;
	unsigned long len;
	pid_t readers[NR_READERS];
	struct reader threads[NR_READERS];
	char rocm[8];		/* vm.migrate_rocm to restore, "" if none */
	char nb[8];		/* kernel.numa_balancing to restore, "" if none */
	char pool[2][32];	/* hugetlb pool sizes to restore, "" if none */
};

FIXTURE_VARIANT(mf) {
	bool hugetlb;
	bool hugetlb_private;	/* MAP_PRIVATE: anon folios, COW-shared */
	bool thp;
	bool skip_async;	/* through migrate_pages_sync()'s fallback */
	bool spin;		/* readers touch the pages once, then spin */
	bool threads;		/* readers are threads: each folio mapped once */
	int nr;			/* folios */
	int min_off;		/* rounds expected stock, at least */
	int min_on, max_on;	/* rounds expected deferred */
	unsigned long size;	/* bytes per folio */
};

/* Base pages, COW-shared: through migrate_pages_sync()'s fallback. */
FIXTURE_VARIANT_ADD(mf, anon) {
	.skip_async = true,
	.nr = NR_PAGES,
	/*
	 * The fallback groups them: one round per group of 512 pages (a
	 * folio somebody else holds locked goes alone, one round more).
	 */
	.min_off = NR_PAGES * 3 / 2,
	.min_on = 1,
	.max_on = 4,
	.size = PAGE,
};

/*
 * Base pages mapped once, by a task whose threads read them on other
 * CPUs: stock, a precise flush per page; grouped, one round per group.
 */
FIXTURE_VARIANT_ADD(mf, anon_threads) {
	.skip_async = true,
	.threads = true,
	.nr = NR_PAGES,
	.min_off = NR_PAGES * 3 / 4,
	.min_on = 1,
	.max_on = 4,
	.size = PAGE,
};

/* 2 MiB hugetlb pages of a MAP_SHARED memfd. */
FIXTURE_VARIANT_ADD(mf, hugetlb_shared) {
	.hugetlb = true,
	/*
	 * Readers faulting on the migration entries hold their VMA lock,
	 * which the hugetlb unmap only trylocks: under an emulator's vCPU
	 * scheduling every retry can fail.  A spinning reader still keeps
	 * its mm live on its CPU, so each flush still IPIs it.
	 */
	.spin = true,
	.nr = NR_HUGE,
	.min_off = NR_HUGE * 3 / 2,
	.min_on = NR_HUGE / 2,
	.max_on = NR_HUGE,
	.size = HPAGE,
};

/* 2 MiB hugetlb pages of a private mapping: anon, COW-shared after fork. */
FIXTURE_VARIANT_ADD(mf, hugetlb_private) {
	.hugetlb = true,
	.hugetlb_private = true,
	.spin = true,
	.nr = NR_HUGE,
	.min_off = NR_HUGE * 3 / 2,
	.min_on = NR_HUGE / 2,
	.max_on = NR_HUGE,
	.size = HPAGE,
};

/* PMD-mapped THPs of anonymous memory, COW-shared with the readers. */
FIXTURE_VARIANT_ADD(mf, thp) {
	.thp = true,
	.nr = NR_HUGE,
	.min_off = NR_HUGE * 3 / 2,
	.min_on = NR_HUGE / 2,
	.max_on = NR_HUGE,
	.size = HPAGE,
};

/* Anonymous memory, 2 MiB aligned for THPs. */
static char *map_anon(unsigned long len, bool thp)
{
	char *p = mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	p = (char *)(((unsigned long)p + HPAGE - 1) & ~(HPAGE - 1));
	/* Base pages for the anon variant: the count is per folio. */
	madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	return p;
}

/* Map the buffer on @from; NULL (and errno) if hugetlb has no pages. */
static char *map_buf(const FIXTURE_VARIANT(mf) *v, unsigned long len)
{
	char *p;
	int fd;

	if (!v->hugetlb)
		return map_anon(len, v->thp);
	if (v->hugetlb_private) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			 MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	fd = memfd_create("migrate_flush", MFD_HUGETLB | MFD_HUGE_2MB);
	if (fd < 0)
		return NULL;
	p = ftruncate(fd, len) ? MAP_FAILED :
		mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

FIXTURE_SETUP(mf)
{
	int cpus[NR_READERS + 1], ready[2], i;
	struct nu_topo topo;
	unsigned long mask;
	char c;

	self->buf = NULL;
	self->rocm[0] = '\0';
	self->nb[0] = '\0';
	self->pool[0][0] = '\0';
	self->pool[1][0] = '\0';
	self->len = variant->nr * variant->size;
	if (access(SKIP_ASYNC, W_OK) || access(SYSCTL, W_OK))
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_DEFER_FLUSH_DEBUG)", SKIP_ASYNC);
	if (!nu_trace_has("tlb/tlb_flush"))
		NU_SKIP(return, "no tlb:tlb_flush tracepoint (x86 with tracefs only)");
	if (nu_cpu_invlpgb())
		NU_SKIP(return, "the CPU flushes by INVLPGB broadcast: no shootdown IPIs to count");
	if (!nu_trace_has("migrate/mm_migrate_batch"))
		NU_SKIP(return, "no mm_migrate_batch tracepoint (CONFIG_MIGRATE_STAGES)");
	if (!nu_pick_cpus(cpus, NR_READERS + 1))
		NU_SKIP(return, "needs %d CPUs", NR_READERS + 1);
	if (nu_topo_read(&topo) || topo.nr_eligible < 2)
		NU_SKIP(return, "needs two nodes with memory");
	self->from = topo.node[topo.eligible[0]].id;
	self->to = topo.node[topo.eligible[1]].id;

	nu_pin_cpu(cpus[0]);
	/* a SKIP here runs no teardown: put the pools back first */
	if (variant->hugetlb &&
	    (!nu_huge_pool(self->from, variant->nr, self->pool[0], sizeof(self->pool[0])) ||
	     !nu_huge_pool(self->to, variant->nr, self->pool[1], sizeof(self->pool[1])))) {
		nu_huge_pool_restore(self->from, self->pool[0]);
		NU_SKIP(return, "cannot get %d free 2 MiB pages on nodes %d and %d",
			variant->nr, self->from, self->to);
	}
	self->buf = map_buf(variant, self->len);
	if (!self->buf && variant->hugetlb) {
		nu_huge_pool_restore(self->from, self->pool[0]);
		nu_huge_pool_restore(self->to, self->pool[1]);
		NU_SKIP(return, "no 2 MiB hugetlb memfd: %s", strerror(errno));
	}
	ASSERT_NE(NULL, self->buf);
	mask = 1UL << self->from;
	ASSERT_EQ(0, nu_mbind(self->buf, self->len, MPOL_BIND, &mask,
			      NU_MAX_NODES, 0));
	for (i = 0; i < (int)self->len; i++)
		self->buf[i] = (char)(i * 7 + i / PAGE);
	if (variant->thp && nu_anon_huge_kb() < (long)(self->len >> 10))
		NU_SKIP(return, "no PMD-mapped THPs (%ld kB; THP disabled?)",
			nu_anon_huge_kb());
	/* ROCM would move these read-only COW pages without an unmap. */
	if (nu_read_str(ROCM, self->rocm, sizeof(self->rocm)) >= 0)
		ASSERT_EQ(0, nu_write_str(ROCM, "0"));
	ASSERT_EQ(0, pipe(ready));
	__atomic_store_n(&readers_stop, false, __ATOMIC_RELAXED);
	for (i = 0; i < NR_READERS; i++) {
		struct reader *r = &self->threads[i];

		*r = (struct reader){
			.buf = self->buf, .len = self->len,
			.cpu = cpus[i + 1], .ready = ready[1],
		};
		if (!variant->threads) {
			self->readers[i] = nu_fork_reader(self->buf, self->len,
							  cpus[i + 1], ready[1],
							  !variant->spin);
			continue;
		}
		ASSERT_EQ(0, pthread_create(&r->thread, NULL, reader_thread, r));
	}
	for (i = 0; i < NR_READERS; i++)
		ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	close(ready[1]);
	usleep(100 * 1000);
	ASSERT_EQ(0, nu_write_str(SKIP_ASYNC, variant->skip_async ? "1" : "0"));
	/*
	 * Last (a failure in setup runs no teardown): NUMA balancing's scan
	 * (task_numa_work on the way back from move_pages(), hint faults)
	 * flushes from this thread too, and its rounds are not migration's.
	 */
	if (nu_read_str(BALANCING, self->nb, sizeof(self->nb)) >= 0)
		ASSERT_EQ(0, nu_write_str(BALANCING, "0"));
}

FIXTURE_TEARDOWN(mf)
{
	int i;

	nu_write_str(SKIP_ASYNC, "0");
	nu_write_str(SYSCTL, "1");
	if (self->rocm[0])
		nu_write_str(ROCM, self->rocm);
	if (self->nb[0])
		nu_write_str(BALANCING, self->nb);
	__atomic_store_n(&readers_stop, true, __ATOMIC_RELAXED);
	if (self->buf) {
		for (i = 0; i < NR_READERS; i++) {
			if (variant->threads) {
				pthread_join(self->threads[i].thread, NULL);
				continue;
			}
			kill(self->readers[i], SIGKILL);
			waitpid(self->readers[i], NULL, 0);
		}
		munmap(self->buf, self->len);
	}
	nu_huge_pool_restore(self->from, self->pool[0]);
	nu_huge_pool_restore(self->to, self->pool[1]);
}

static bool intact(const char *buf, unsigned long len)
{
	int i;

	for (i = 0; i < (int)len; i++)
		if (buf[i] != (char)(i * 7 + i / PAGE))
			return false;
	return true;
}

/* Move every page to @node with the sysctl at @defer; what it cost. */
static struct nu_flush_count moving(struct __test_metadata *_metadata,
				    FIXTURE_DATA(mf) *self,
				    const FIXTURE_VARIANT(mf) *v, int node,
				    const char *defer)
{
	struct move m = {
		.buf = self->buf, .node = node, .nr = v->nr, .size = v->size,
	};
	struct nu_flush_count c = { .rounds = -1, .ret = -1 };
	int i, tries;

	EXPECT_EQ(0, nu_write_str(SYSCTL, defer));
	/*
	 * A folio may stay busy through the kernel's retries (a hugetlb
	 * unmap only trylocks the VMA lock that faulting readers take):
	 * then move all back and count again.
	 */
	for (tries = 0; tries < 3; tries++) {
		if (nu_count_flushes("syscall_or_cpuset", move_all, &m, &c))
			c.rounds = -1;
		if (c.ret <= 0)
			break;
		TH_LOG("%ld folios stayed busy; counting again", c.ret);
		m.node = node == self->from ? self->to : self->from;
		move_all(&m);
		m.node = node;
	}
	EXPECT_EQ(0, c.ret);
	for (i = 0; i < v->nr; i++)
		EXPECT_EQ(node, m.status[i]) TH_LOG("folio %d", i);
	EXPECT_TRUE(intact(self->buf, self->len));
	return c;
}

/* Deferred within its bounds: see the checks at the end of rounds. */
static bool deferred_ok(const struct nu_flush_count *on, long max_on,
			bool batched)
{
	return on->rounds <= max_on && (!batched || on->rounds <= on->batches);
}

TEST_F(mf, rounds)
{
	struct nu_flush_count off, on;
	int tries;

	off = moving(_metadata, self, variant, self->to, "0");
	/* a THP split for want of a 2 MiB page on the target counts apart */
	if (variant->thp && nu_anon_huge_kb() < (long)(self->len >> 10))
		NU_SKIP(return, "THPs were split on migration");
	/*
	 * A round from outside the move (reclaim for a target page, a batch
	 * whose record went unallocated) counts too: a deferred count over
	 * the bounds is taken again, twice at most, and logged.  A deferral
	 * that broke is over them every time.
	 */
	for (tries = 0; ; tries++) {
		on = moving(_metadata, self, variant, self->from, "1");
		if (variant->thp && nu_anon_huge_kb() < (long)(self->len >> 10))
			NU_SKIP(return, "THPs were split on migration");
		if (deferred_ok(&on, variant->max_on, !variant->hugetlb) ||
		    tries == 2)
			break;
		TH_LOG("deferred=%ld/%ld (rounds/batches): counting again",
		       on.rounds, on.batches);
		moving(_metadata, self, variant, self->to, "1");
	}
	TH_LOG("%d folios mapped by %d readers on other CPUs: stock=%ld/%ld deferred=%ld/%ld (rounds/batches)",
	       variant->nr, NR_READERS, off.rounds, off.batches, on.rounds,
	       on.batches);
	ASSERT_LE(0, off.rounds);
	ASSERT_LE(0, on.rounds);
	if (!off.rounds)
		NU_SKIP(return, "no IPI flush traced: broadcast TLBI (arm64) or a paravirt flush");
	/*
	 * Stock: a round per entry of a reader live on another CPU (2 per
	 * folio when both readers run, as they do here; a reader that
	 * sleeps on a migration entry may drop out of one); reader threads
	 * share one mm, so a round per folio.
	 */
	EXPECT_GE(off.rounds, variant->min_off);
	/*
	 * Deferred: one round per fallback group, per hugetlb folio, per
	 * THP batch; some, so the readers' CPUs were reached.
	 */
	EXPECT_LE(on.rounds, variant->max_on);
	EXPECT_LE(variant->min_on, on.rounds);
	/* and never more than one a batch (hugetlb has no batches) */
	if (!variant->hugetlb)
		EXPECT_LE(on.rounds, on.batches);
}

#define PIN_FIRST	8
#define NR_PINNED	8

#define FAILS_EVENT	"migrate/mm_migrate_pages"

/*
 * The pages this task's migrate_pages() calls failed while @fn(@arg)
 * ran: the sum of the nr_failed of its mm_migrate_pages events, which is
 * what each call adds to pgmigrate_fail (a system-wide count that other
 * tasks' migrations, NUMA balancing's and compaction's, move too).  The
 * trace counts lines, so one entry counts the events of each value a
 * call of at most NR_PAGES pages can report, and one all of them: -1
 * unless they agree and there was an event, so that a change of the
 * event's format cannot read as no failure.
 */
static long failed_pages(long (*fn)(void *arg), void *arg, long *ret)
{
	static char match[NR_PAGES + 1][24];
	struct nu_event ev[NR_PAGES + 2];
	long sum = 0, seen = 0;
	int n;

	for (n = 0; n < NR_PAGES + 2; n++) {
		ev[n] = (struct nu_event){ .name = FAILS_EVENT };
		snprintf(ev[n].filter, sizeof(ev[n].filter),
			 "common_pid == %d", getpid());
		if (n > NR_PAGES)
			continue;	/* the last one counts them all */
		snprintf(match[n], sizeof(match[n]), " nr_failed=%d ", n);
		ev[n].match = match[n];
	}
	if (nu_trace_count(ev, NR_PAGES + 2, fn, arg, ret))
		return -1;
	for (n = 0; n <= NR_PAGES; n++) {
		sum += n * ev[n].count;
		seen += ev[n].count;
	}
	return seen && seen == ev[NR_PAGES + 1].count ? sum : -1;
}

/*
 * Move every page to @to: the move_pages() result, where each page is
 * in @status, the pages this task's migration failed in *@fails.  (The
 * pages are mapped once: MPOL_MF_MOVE_ALL moves what MPOL_MF_MOVE does.)
 */
static long move_round(char *buf, int to, int *status, long *fails)
{
	struct move m = { .buf = buf, .node = to, .nr = NR_PAGES,
			  .size = PAGE };
	long ret = -1;

	*fails = failed_pages(move_all, &m, &ret);
	memcpy(status, m.status, sizeof(m.status));
	return ret;
}

TEST(pinned_followers)
{
	struct pin_longterm_test pin = {
		.flags = PIN_LONGTERM_TEST_FLAG_USE_WRITE,
	};
	int status[2][NR_PAGES], where[NR_PAGES], i, k, gup;
	long ret[2], fails[2];
	struct nu_topo topo;
	unsigned long mask;
	char rocm[8] = "";
	char *buf;

	if (access(SKIP_ASYNC, W_OK) || access(SYSCTL, W_OK))
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_DEFER_FLUSH_DEBUG)", SKIP_ASYNC);
	if (!nu_trace_has(FAILS_EVENT))
		NU_SKIP(return, "no %s tracepoint (tracefs)", FAILS_EVENT);
	gup = open("/sys/kernel/debug/gup_test", O_RDWR);
	if (gup < 0)
		NU_SKIP(return, "no /sys/kernel/debug/gup_test (CONFIG_GUP_TEST)");
	if (nu_topo_read(&topo) || topo.nr_eligible < 2)
		NU_SKIP(return, "needs two nodes with memory");
	buf = mmap(NULL, NR_PAGES * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	madvise(buf, NR_PAGES * PAGE, MADV_NOHUGEPAGE);
	mask = 1UL << topo.node[topo.eligible[0]].id;
	ASSERT_EQ(0, nu_mbind(buf, NR_PAGES * PAGE, MPOL_BIND, &mask,
			      NU_MAX_NODES, 0));
	for (i = 0; i < (int)(NR_PAGES * PAGE); i++)
		buf[i] = (char)(i * 7 + i / PAGE);
	pin.addr = (unsigned long)buf + PIN_FIRST * PAGE;
	pin.size = NR_PINNED * PAGE;
	ASSERT_EQ(0, ioctl(gup, PIN_LONGTERM_TEST_START, &pin));
	if (nu_read_str(ROCM, rocm, sizeof(rocm)) >= 0)
		nu_write_str(ROCM, "0");
	nu_write_str(SKIP_ASYNC, "1");

	for (k = 0; k < 2; k++) {
		long dummy;

		nu_write_str(SYSCTL, k ? "1" : "0");
		ret[k] = move_round(buf, topo.node[topo.eligible[1]].id,
				    status[k], &fails[k]);
		/* back for the next round; the pinned pages stay anyway */
		move_round(buf, topo.node[topo.eligible[0]].id, where, &dummy);
	}
	nu_write_str(SKIP_ASYNC, "0");
	nu_write_str(SYSCTL, "1");
	if (rocm[0])
		nu_write_str(ROCM, rocm);
	ioctl(gup, PIN_LONGTERM_TEST_STOP);
	close(gup);

	TH_LOG("%d pinned of %d: move_pages() %ld / %ld left, %ld / %ld pages failed (stock / grouped)",
	       NR_PINNED, NR_PAGES, ret[0], ret[1], fails[0], fails[1]);
	if (!ret[0])
		NU_SKIP(return, "the pin moved the pinned pages to the target");
	EXPECT_EQ(NR_PINNED, ret[0]);
	EXPECT_EQ(ret[0], ret[1]);
	EXPECT_LE(0, fails[0]) TH_LOG("could not count the %s events", FAILS_EVENT);
	EXPECT_EQ(fails[0], fails[1]);
	for (i = 0; i < NR_PAGES; i++)
		EXPECT_EQ(status[0][i], status[1][i]) TH_LOG("page %d", i);
	EXPECT_TRUE(intact(buf, NR_PAGES * PAGE));
	munmap(buf, NR_PAGES * PAGE);
}

TEST_HARNESS_MAIN
