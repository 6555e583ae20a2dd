// SPDX-License-Identifier: GPL-2.0
/*
 * migrate_flush_race: no write through a stale TLB entry after mprotect()
 * or munmap() returns while a THP's migration has its flush deferred.
 *
 * With vm.migrate_defer_flush a PMD-mapped THP is unmapped (its PMD
 * replaced by a migration entry) and the TLB flush is queued until the
 * batch is copied, so a writer on another CPU may keep storing through
 * its cached entry meanwhile.  That is fine until someone changes the
 * mapping: mprotect(PROT_READ) or munmap() of the range must not return
 * while such an entry can still be used, or the writer goes on storing
 * after the call (change_huge_pmd() and zap_huge_pmd() call
 * flush_tlb_batched_pending() for this).
 *
 * The debugfs knob migrate_flush/flush_delay_ms holds the batch in that
 * window; the test waits until pagemap shows the migration entry, checks
 * that the writer still stores (the flush is deferred), calls mprotect()
 * or munmap(), and then counts the writer's stores: none may follow.
 *
 * mremap(MREMAP_DONTUNMAP) of the whole 2 MiB to another aligned address
 * moves the entry (move_huge_pmd(), which flushes only present PMDs) and
 * keeps the old range mapped, so nothing else flushes it: unless
 * move_huge_pmd() calls flush_tlb_batched_pending(), the writer stores on
 * into the old page through its cached translation after the call
 * returned, and the copy carries those stores to the new address.  The
 * writer stores a counter; the moved page may hold at most the value it
 * stored when the call returned (and one in flight).  That content check
 * needs the stale entry to survive until the batch flushes, which the
 * guest does not always keep, so on x86 the call must also have flushed
 * the writer's TLB itself: TLB shootdowns (/proc/interrupts) must rise
 * during the call while the batch's flush is still held back (a kernel
 * without the flush_tlb_batched_pending() sends none).  (A PMD split, as
 * mprotect() of 4 KiB does, also flushes first, but every caller goes on
 * to a PTE-level walk that flushes anyway: no test here can tell.)
 *
 * The hugetlb variants do the same for a 2 MiB page of a private hugetlb
 * mapping, COW-shared with a child so that its flush is deferred: the
 * page is read-only then, so a reader (not a writer) must stop seeing the
 * old contents once madvise(MADV_DONTNEED), or an mmap(MAP_FIXED) of
 * plain anonymous memory over it, returns (zapping a hugetlb migration
 * entry records no range to flush, so __unmap_hugepage_range() calls
 * flush_tlb_batched_pending()); a fresh page reads as zeroes.
 *
 * Needs CONFIG_MIGRATE_DEFER_FLUSH_DEBUG, THP (2 MiB hugetlb pages for
 * the hugetlb variant), three CPUs and two nodes with memory; SKIPs
 * otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "numa_util.h"

#define SYSCTL		"/proc/sys/vm/migrate_defer_flush"
#define DELAY		"/sys/kernel/debug/migrate_flush/flush_delay_ms"
#define NUMAB		"/proc/sys/kernel/numa_balancing"
#define HPAGE		(2UL << 20)
#define PAGE		4096UL
#define DELAY_MS	"300"
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB	(21 << 26)	/* log2(2 MiB) << MAP_HUGE_SHIFT */
#endif

static char *w_buf;
static unsigned long w_stores;
static int w_stop, w_faulted, w_read;
static unsigned long w_sink;
static sigjmp_buf w_jmp;

static void w_segv(int sig)
{
	siglongjmp(w_jmp, 1);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Store into the THP until told to stop or the store faults. */
static void *writer(void *arg)
{
	unsigned long i = 0;

	pin(*(int *)arg);
	if (sigsetjmp(w_jmp, 1)) {
		__atomic_store_n(&w_faulted, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	while (!__atomic_load_n(&w_stop, __ATOMIC_ACQUIRE)) {
		/* a reader counts the loads that still see the old page */
		if (w_read) {
			if (!__atomic_load_n(&w_buf[64], __ATOMIC_RELAXED))
				continue;
			i++;
		} else {
			/* the counter: how many stores came before this one */
			__atomic_store_n((unsigned long *)&w_buf[64], ++i,
					 __ATOMIC_RELAXED);
		}
		__atomic_fetch_add(&w_stores, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&w_sink, i, __ATOMIC_RELAXED);
	return NULL;
}

struct mover {
	char *buf;
	int node, cpu;
	long ret;
};

static void *mover(void *arg)
{
	struct mover *m = arg;
	void *page = m->buf;
	int status;

	pin(m->cpu);
	/* MOVE_ALL: the hugetlb page is mapped by a child too */
	m->ret = nu_move_pages(0, 1, &page, &m->node, &status,
			       MPOL_MF_MOVE_ALL);
	return NULL;
}

/*
 * Is @p under migration?  A THP's PMD shows as a swap entry (pagemap bit
 * 62); pagemap shows a hugetlb migration entry only as not present.
 */
static bool migrating(int pagemap, const void *p)
{
	uint64_t e;

	if (pread(pagemap, &e, sizeof(e), (uintptr_t)p / PAGE * sizeof(e)) !=
	    sizeof(e))
		return false;
	return w_read ? !((e >> 63) & 1) : (e >> 62) & 1;
}

FIXTURE(race) {
	int cpus[3], from, to, pagemap;
	char defer[8], numab[8];
	char pool[2][32];	/* hugetlb pool sizes to restore, "" if none */
};

/* What changes the mapping inside the window. */
enum call {
	C_MPROTECT,		/* mprotect(PROT_READ) of the THP */
	C_MUNMAP,		/* munmap() of the THP */
	C_MREMAP,		/* mremap(MREMAP_DONTUNMAP) of the THP */
	C_DONTNEED,		/* hugetlb: madvise(MADV_DONTNEED) */
	C_MAP_FIXED,		/* hugetlb: mmap(MAP_FIXED) of anon over it */
};

static const char * const call_names[] = {
	"mprotect", "munmap", "mremap(MREMAP_DONTUNMAP)", "MADV_DONTNEED",
	"mmap(MAP_FIXED)",
};

FIXTURE_VARIANT(race) {
	enum call call;
	bool hugetlb;		/* private hugetlb page, read */
};

FIXTURE_VARIANT_ADD(race, mprotect) {
	.call = C_MPROTECT,
};

FIXTURE_VARIANT_ADD(race, munmap) {
	.call = C_MUNMAP,
};

FIXTURE_VARIANT_ADD(race, mremap_dontunmap) {
	.call = C_MREMAP,
};

FIXTURE_VARIANT_ADD(race, hugetlb_dontneed) {
	.call = C_DONTNEED,
	.hugetlb = true,
};

FIXTURE_VARIANT_ADD(race, hugetlb_map_fixed) {
	.call = C_MAP_FIXED,
	.hugetlb = true,
};

FIXTURE_SETUP(race)
{
	struct nu_topo topo;
	cpu_set_t set;
	int cpu, n = 0;

	self->numab[0] = '\0';
	self->pool[0][0] = '\0';
	self->pool[1][0] = '\0';
	self->pagemap = -1;
	/* an earlier test's knobs back first (numa_util.h) */
	ASSERT_EQ(0, nu_undo_begin());
	if (access(DELAY, W_OK) ||
	    nu_read_str(SYSCTL, self->defer, sizeof(self->defer)) < 0)
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_DEFER_FLUSH_DEBUG)", DELAY);
	if (nu_topo_read(&topo) || topo.nr_eligible < 2)
		NU_SKIP(return, "needs two nodes with memory");
	self->from = topo.node[topo.eligible[0]].id;
	self->to = topo.node[topo.eligible[1]].id;
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	for (cpu = 0; cpu < CPU_SETSIZE && n < 3; cpu++)
		if (CPU_ISSET(cpu, &set))
			self->cpus[n++] = cpu;
	if (n < 3)
		NU_SKIP(return, "needs three CPUs");
	self->pagemap = open("/proc/self/pagemap", O_RDONLY);
	ASSERT_LE(0, self->pagemap);
	/* put back even if a timeout kills the test */
	if (variant->hugetlb) {
		ASSERT_EQ(0, nu_undo_huge_pool(self->from));
		ASSERT_EQ(0, nu_undo_huge_pool(self->to));
	}
	/* the old page, its copy, and a fresh page after MADV_DONTNEED */
	if (variant->hugetlb &&
	    (!nu_huge_pool(self->from, 2, self->pool[0], sizeof(self->pool[0])) ||
	     !nu_huge_pool(self->to, 1, self->pool[1], sizeof(self->pool[1])))) {
		nu_huge_pool_restore(self->from, self->pool[0]);
		NU_SKIP(return, "cannot get free 2 MiB pages on nodes %d and %d",
			self->from, self->to);
	}
	/* NUMA scanning's mprotect would flush the window away early */
	if (nu_read_str(NUMAB, self->numab, sizeof(self->numab)) >= 0) {
		ASSERT_EQ(0, nu_undo_knob(NUMAB));
		nu_write_str(NUMAB, "0");
	}
	ASSERT_EQ(0, nu_undo_knob(SYSCTL));
	ASSERT_EQ(0, nu_undo_knob(DELAY));
	ASSERT_EQ(0, nu_write_str(SYSCTL, "1"));
	ASSERT_EQ(0, nu_write_str(DELAY, DELAY_MS));
}

FIXTURE_TEARDOWN(race)
{
	nu_write_str(DELAY, "0");
	if (self->numab[0])
		nu_write_str(NUMAB, self->numab);
	if (self->defer[0])
		nu_write_str(SYSCTL, self->defer);
	nu_huge_pool_restore(self->from, self->pool[0]);
	nu_huge_pool_restore(self->to, self->pool[1]);
	if (self->pagemap >= 0)
		close(self->pagemap);
	nu_undo_done();
}

/* A 2 MiB aligned THP on @node, filled; NULL if none could be had. */
static char *thp_on(int node, char **map)
{
	unsigned long mask = 1UL << node;
	char *buf;

	*map = mmap(NULL, 2 * HPAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*map == MAP_FAILED)
		return NULL;
	buf = (char *)(((uintptr_t)*map + HPAGE - 1) & ~(HPAGE - 1));
	if (madvise(buf, HPAGE, MADV_HUGEPAGE) ||
	    nu_mbind(buf, HPAGE, MPOL_BIND, &mask, NU_MAX_NODES, 0))
		return NULL;
	memset(buf, 1, HPAGE);
	return nu_anon_huge_kb() >= (long)(HPAGE >> 10) ? buf : NULL;
}

/*
 * A 2 MiB page of a private hugetlb mapping on @node, COW-shared with a
 * child (in *@kid) so that its migration defers the flush; NULL if none.
 */
static char *hugetlb_on(int node, char **map, pid_t *kid)
{
	unsigned long mask = 1UL << node;
	int pipefd[2];
	char c;

	*map = mmap(NULL, HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		    MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
	if (*map == MAP_FAILED ||
	    nu_mbind(*map, HPAGE, MPOL_BIND, &mask, NU_MAX_NODES, 0) ||
	    pipe(pipefd))
		return NULL;
	memset(*map, 1, HPAGE);
	*kid = fork();
	if (!*kid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		c = (*map)[0];		/* maps it, read-only */
		if (write(pipefd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	c = *kid > 0 && read(pipefd[0], &c, 1) == 1;
	close(pipefd[0]);
	close(pipefd[1]);
	return c ? *map : NULL;
}

enum outcome { IN_WINDOW, NO_WINDOW, NO_THP };

struct result {
	unsigned long after;	/* stores counted after the call returned */
	int faulted;		/* the writer's store faulted afterwards */
	long moved;		/* move_pages() result */
	int call;		/* what the mprotect/munmap/madvise returned */
	long long ipis;		/* TLB shootdowns during the call; -1: unknown */
};

/* Wait for the migration entry with the writer still storing. */
static bool window_open(int pagemap, char *buf)
{
	unsigned long before;
	int i;

	for (i = 0; i < 2000 && !migrating(pagemap, buf); i++)
		usleep(500);
	before = __atomic_load_n(&w_stores, __ATOMIC_ACQUIRE);
	usleep(20 * 1000);
	/*
	 * A context switch on the writer's CPU can drop its TLB entry
	 * early; then there is no stale entry to test, try again.
	 */
	return migrating(pagemap, buf) &&
	       before < __atomic_load_n(&w_stores, __ATOMIC_ACQUIRE);
}

/*
 * Change the mapping at @buf as @call says; mremap() moves it into
 * *@moved (2 MiB aligned, unmapped by the caller).  The call's result.
 */
static int change(enum call call, char *buf, char **moved)
{
	char *to;

	switch (call) {
	case C_MPROTECT:
		return mprotect(buf, HPAGE, PROT_READ);
	case C_MUNMAP:
		return munmap(buf, HPAGE);
	case C_MREMAP:
		to = *moved;
		*moved = mremap(buf, HPAGE, HPAGE, MREMAP_MAYMOVE | MREMAP_FIXED |
				MREMAP_DONTUNMAP, to);
		return *moved == to ? 0 : -1;
	case C_DONTNEED:
		return madvise(buf, HPAGE, MADV_DONTNEED);
	case C_MAP_FIXED:
		return mmap(buf, HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			    MAP_ANONYMOUS | MAP_FIXED, -1, 0) == buf ? 0 : -1;
	}
	return -1;
}

/* A 2 MiB aligned address with nothing mapped, for mremap(); or NULL. */
static char *aligned_hole(char **map)
{
	*map = mmap(NULL, 2 * HPAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (*map == MAP_FAILED)
		return NULL;
	return (char *)(((uintptr_t)*map + HPAGE - 1) & ~(HPAGE - 1));
}

/* One try: writer, mover, the call inside the window. */
static enum outcome attempt(FIXTURE_DATA(race) *self, enum call call,
			    bool hugetlb, struct result *r)
{
	struct mover m = { .node = self->to, .cpu = self->cpus[2] };
	enum outcome out = IN_WINDOW;
	unsigned long at_return = 0;
	pthread_t wt, mt;
	pid_t kid = -1;
	char *map = MAP_FAILED, *hole_map = MAP_FAILED, *moved = NULL;

	if (call == C_MREMAP) {
		moved = aligned_hole(&hole_map);
		if (!moved)
			return NO_THP;
	}
	w_read = hugetlb;
	w_buf = hugetlb ? hugetlb_on(self->from, &map, &kid) :
			  thp_on(self->from, &map);
	if (!w_buf) {
		if (kid > 0) {
			kill(kid, SIGKILL);
			waitpid(kid, NULL, 0);
		}
		if (map != MAP_FAILED)
			munmap(map, hugetlb ? HPAGE : 2 * HPAGE);
		if (hole_map != MAP_FAILED)
			munmap(hole_map, 2 * HPAGE);
		return NO_THP;
	}
	m.buf = w_buf;
	w_stores = 0;
	w_stop = 0;
	w_faulted = 0;
	pthread_create(&wt, NULL, writer, &self->cpus[1]);
	while (__atomic_load_n(&w_stores, __ATOMIC_ACQUIRE) < 1000)
		;
	pthread_create(&mt, NULL, mover, &m);
	if (window_open(self->pagemap, w_buf)) {
		long long ipis = nu_tlb_shootdowns();

		r->call = change(call, w_buf, &moved);
		at_return = __atomic_load_n(&w_stores, __ATOMIC_ACQUIRE);
		r->ipis = ipis < 0 ? -1 : nu_tlb_shootdowns() - ipis;
		usleep(50 * 1000);
		r->after = __atomic_load_n(&w_stores, __ATOMIC_ACQUIRE) -
			   at_return;
	} else {
		out = NO_WINDOW;
	}
	__atomic_store_n(&w_stop, 1, __ATOMIC_RELEASE);
	pthread_join(wt, NULL);
	pthread_join(mt, NULL);
	/* the moved page: stores after the return reached it? */
	if (call == C_MREMAP && out == IN_WINDOW && !r->call) {
		unsigned long v = *(unsigned long *)(moved + 64);

		r->after = v > at_return + 1 ? v - at_return : 0;
	}
	r->faulted = __atomic_load_n(&w_faulted, __ATOMIC_ACQUIRE);
	r->moved = m.ret;
	if (kid > 0) {
		kill(kid, SIGKILL);
		waitpid(kid, NULL, 0);
	}
	munmap(map, hugetlb ? HPAGE : 2 * HPAGE);
	if (hole_map != MAP_FAILED)
		munmap(hole_map, 2 * HPAGE);
	return out;
}

TEST_F(race, no_store_after_return)
{
	struct sigaction sa = { .sa_handler = w_segv };
	struct result r = { };
	enum outcome out = NO_WINDOW;
	int tries;

	ASSERT_EQ(0, sigaction(SIGSEGV, &sa, NULL));
	pin(self->cpus[0]);
	for (tries = 0; tries < 5 && out == NO_WINDOW; tries++)
		out = attempt(self, variant->call, variant->hugetlb, &r);
	if (out == NO_THP)
		NU_SKIP(return, "no %s", variant->hugetlb ?
			"free 2 MiB hugetlb page on the source node" :
			"PMD-mapped THP (THP disabled?)");
	if (out == NO_WINDOW)
		NU_SKIP(return, "never caught the writer storing through a deferred flush");
	TH_LOG("%s: %lu %s after it returned (try %d, faulted: %d, TLB shootdowns during it: %lld)",
	       call_names[variant->call], r.after,
	       variant->hugetlb ? "loads of the old page" : "stores", tries,
	       r.faulted, r.ipis);
	ASSERT_EQ(0, r.call);
	/* the 300 ms hold: the batch had not flushed when the call ran */
	if (variant->call == C_MREMAP && r.ipis >= 0)
		EXPECT_LE(1, r.ipis) TH_LOG("mremap() left the pending flush to the batch");
	/* one access may have been counted just after it landed */
	EXPECT_LE(r.after, 1);
	/* after the call the writer's next store faulted */
	if (!variant->hugetlb && variant->call != C_MREMAP)
		EXPECT_TRUE(r.faulted);
	EXPECT_LE(0, r.moved);
}

TEST_HARNESS_MAIN
