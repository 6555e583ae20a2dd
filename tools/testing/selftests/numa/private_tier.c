// SPDX-License-Identifier: GPL-2.0
/*
 * private_tier: private nodes as a memory tier -- the DEMOTION cap and the
 * WRITE_FENCE policy (CONFIG_NUMA_PRIVATE_NODES).
 *
 * Same guest as private_nodes ("scripts/vm --private-nodes").  Every test
 * runs twice: on a node claimed with the fence ("fenced") and on one
 * claimed without it ("plain"), which is the control: whatever the fence
 * changes shows as a difference between the two.
 *
 * A fenced node's folios are only ever mapped read-only.  Userspace sees
 * that as a page fault (getrusage() minflt) on the first write to each
 * page, after which the page is on another node with the data written;
 * on a plain node the same write takes no fault and stays in place.
 *
 *   anon_write      move_pages() onto the node, read (no fault), write
 *   migrate_knobs   the same through range unmap, ROCM, deferred flush
 *   mprotect        PROT_READ then PROT_READ|PROT_WRITE gives no write back
 *   mlock           mlock() populates for write: fenced pages are copied
 *   thp             a write to a fenced THP copies one page, not the THP
 *   collapse        MADV_COLLAPSE leaves the node's pages alone
 *   uffd_wp         resolving userfaultfd write protection gives no write
 *   hint_restore    NUMA-hint faults that do not migrate give no write
 *   ksm             ksmd never merges the node's pages
 *   proc_mem        FOLL_FORCE write through /proc/self/mem, PROT_READ
 *   vm_writev       process_vm_writev(), and read() into the page
 *   odirect         an O_DIRECT read into the range (GUP, FOLL_WRITE)
 *   fork            after the child's COW, the parent's reuse is refused
 *   swapcache       a folio faulted back from the swap cache stays fenced
 *   file_refused    page cache never moves onto a fenced node
 *   mbind_refused   no policy may place pages on a fenced node
 *   demotion        node-0 cold anon demotes onto the node (memory.reclaim
 *                   in a cgroup); written back, it leaves a fenced node,
 *                   and the loop breaker stops the next demotion
 *   demotion_off    without DEMOTION the node is in no tier, gets nothing
 *   promotion       numa_balancing=2 promotes the node's pages to node 0
 *   promotion_off   not without NUMA_BALANCING
 *   race            writers, mprotect, fork, move_pages(), MADV_PAGEOUT
 *                   and NUMA balancing together: no lost write, and the
 *                   fence still holds after
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <linux/loop.h>
#include <linux/mempolicy.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "numa_util.h"
#include "private_util.h"

#define NPAGES		64
#define LEN		(NPAGES * PAGE)
#define SEED		0xfe11ceu
#define ADIST_SLOW	2880	/* MEMTIER_DEFAULT_DAX_ADISTANCE */
#define DEMOTE_ON	"/sys/kernel/mm/numa/demotion_enabled"
#define TIERS		"/sys/devices/virtual/memory_tiering/"
#define KSM_DIR		"/sys/kernel/mm/ksm/"
#define PROMOTE_RL	"/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps"

FIXTURE(pf) {
	int nid;
	bool claimed;
	struct nu_swap sw;
	bool swapped;
	char cg[128];
	char was_demote[16];
	char was_knob[4][16];	/* migration knobs a test switched on */
	char was_nb[3][16];	/* NUMA balancing settings, if balancing */
	bool balancing;
	char was_ksm[3][16];	/* KSM's knobs, if a test started ksmd */
	char was_rl[16];	/* the promotion rate limit, if set */
};

FIXTURE_VARIANT(pf) {
	bool fence;
};

FIXTURE_VARIANT_ADD(pf, fenced) {
	.fence = true,
};

FIXTURE_VARIANT_ADD(pf, plain) {
	.fence = false,
};

FIXTURE_SETUP(pf)
{
	int nids[NU_MAX_NODES];

	self->claimed = false;
	self->swapped = false;
	self->cg[0] = '\0';
	self->was_demote[0] = '\0';
	self->balancing = false;
	memset(self->was_ksm, 0, sizeof(self->was_ksm));
	self->was_rl[0] = '\0';
	memset(self->was_knob, 0, sizeof(self->was_knob));
	if (access(NPT "claim", W_OK))
		NU_SKIP(return, "no node_private_test provider (CONFIG_NUMA_PRIVATE_NODES_TEST)");
	if (carved_nodes(nids, NU_MAX_NODES, true) < 1)
		NU_SKIP(return, "no carved memory-only node: boot with scripts/vm --private-nodes");
	self->nid = nids[0];
}

static const char * const knobs[] = {
	"/proc/sys/vm/migrate_range_unmap", "/proc/sys/vm/migrate_rocm",
	"/proc/sys/vm/migrate_defer_flush", "/proc/sys/vm/migrate_address_order",
};

static const char * const ksm_knobs[] = {
	KSM_DIR "run", KSM_DIR "pages_to_scan", KSM_DIR "sleep_millisecs",
};

/*
 * In the parent, after the test's process is gone: the node can be
 * released with nothing of the test's mapped on it.
 */
FIXTURE_TEARDOWN_PARENT(pf)
{
	int i;

	for (i = 0; i < 4; i++)
		if (self->was_knob[i][0])
			nu_write_str(knobs[i], self->was_knob[i]);
	if (self->balancing)
		balancing_restore(self->was_nb);
	if (self->was_rl[0])
		nu_write_str(PROMOTE_RL, self->was_rl);
	for (i = 0; i < 3; i++)
		if (self->was_ksm[i][0])
			nu_write_str(ksm_knobs[i], self->was_ksm[i]);
	if (self->cg[0])
		nu_cg_remove(self->cg);
	if (self->was_demote[0])
		nu_write_str(DEMOTE_ON, self->was_demote);
	if (self->swapped)
		EXPECT_EQ(0, nu_swap_off(&self->sw));
	if (self->claimed)
		EXPECT_EQ(0, npt_write("release", "%d", self->nid));
}

/*
 * Claim @nid with @caps, USER_NUMA, HOTUNPLUG (so that release can move
 * what demotion put there) and, if @fence, the write fence, at abstract
 * distance @adist (0: none).  False: skipped, nothing claimed.
 */
static bool claim(struct __test_metadata *_metadata, int nid, bool fence,
		  unsigned long caps, int adist)
{
	int ret;

	caps |= CAP_USER_NUMA | CAP_HOTUNPLUG |
		(fence ? POLICY_WRITE_FENCE : 0);
	ret = npt_write("claim", "%d %#lx movable %d", nid, caps, adist);
	if (ret == -EOPNOTSUPP)
		NU_SKIP(return false, "kernel without DEMOTION or WRITE_FENCE");
	ASSERT_EQ(0, ret);
	return true;
}

#define CLAIM(caps, adist)						\
	(self->claimed = claim(_metadata, self->nid, variant->fence,	\
			       caps, adist))

static char *anon_moved(int nid, size_t len, int flags);

/* Claim the node with no extra caps and move LEN of anon onto it. */
static char *claim_moved(struct __test_metadata *_metadata, int nid,
			 bool fence, bool *claimed)
{
	char *p;

	*claimed = claim(_metadata, nid, fence, 0, 0);
	if (!*claimed)
		return NULL;
	p = anon_moved(nid, LEN, 0);
	ASSERT_NE(NULL, p);
	return p;
}

#define CLAIM_MOVED()							\
	claim_moved(_metadata, self->nid, variant->fence, &self->claimed)

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static long write_pages(char *p, size_t len);
static long read_pages(const char *p, size_t len);

/*
 * Fault in the code and stack the measured loops use, so that minflt
 * counts only the pages under test.
 */
static void warm_up(void)
{
	char buf[2 * PAGE];

	memset(buf, 0, sizeof(buf));
	read_pages(buf, sizeof(buf));
	write_pages(buf, sizeof(buf));
}

/* @len of anon memory, filled, moved onto @nid: NULL if it did not go. */
static char *anon_moved(int nid, size_t len, int flags)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	warm_up();
	if (p == MAP_FAILED)
		return NULL;
	nu_fill(p, len, SEED);
	if (move_all(p, len, nid) != nid ||
	    nu_pages_on(p, len, nid) != (long)(len / PAGE)) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

/* Store one byte in each page, the bitwise NOT of what is there. */
static long write_pages(char *p, size_t len)
{
	long before = minflt();
	size_t i;

	for (i = 0; i < len; i += PAGE)
		__atomic_store_n(&p[i + 8], (char)~p[i + 8], __ATOMIC_RELAXED);
	return minflt() - before;
}

/* The fill pattern with write_pages() applied @times times. */
static bool intact_after(const char *p, size_t len, int times)
{
	char *want = malloc(len);
	bool ok;
	size_t i;

	nu_fill(want, len, SEED);
	for (i = 0; times & 1 && i < len; i += PAGE)
		want[i + 8] = ~want[i + 8];
	ok = !memcmp(p, want, len);
	free(want);
	return ok;
}

static long read_pages(const char *p, size_t len)
{
	long before = minflt();

	nu_read_pages(p, len);
	return minflt() - before;
}

/*
 * The fenced half of most tests: the write faulted on every page, which
 * left the node; the plain half: no fault, still there.
 */
static void expect_written(struct __test_metadata *_metadata, bool fence,
			   char *p, size_t len, int nid, long faults)
{
	long n = len / PAGE;

	if (fence) {
		EXPECT_GE(faults, n);
		EXPECT_EQ(0, nu_pages_on(p, len, nid));
	} else {
		EXPECT_EQ(0, faults);
		EXPECT_EQ(n, nu_pages_on(p, len, nid));
	}
}

TEST_F(pf, anon_write)
{
	long cow = nu_vmstat("pgfence_cow");
	char *p;

	p = CLAIM_MOVED();
	if (!p)
		return;
	/* Reads are served in place, fenced or not. */
	EXPECT_EQ(0, read_pages(p, LEN));
	EXPECT_EQ(NPAGES, nu_pages_on(p, LEN, self->nid));
	expect_written(_metadata, variant->fence, p, LEN, self->nid,
		       write_pages(p, LEN));
	EXPECT_TRUE(intact_after(p, LEN, 1));
	/* Only the fenced copies count. */
	cow = nu_vmstat("pgfence_cow") - cow;
	EXPECT_TRUE(variant->fence ? cow >= NPAGES : cow == 0);
	munmap(p, LEN);
}

/*
 * The same with every migration path of this branch switched on: range
 * unmap (its own remap), ROCM, deferred flushes and address order.
 */
TEST_F(pf, migrate_knobs)
{
	char *p;
	int i;

	if (!CLAIM(0, 0))
		return;
	for (i = 0; i < 4; i++) {
		if (nu_read_str(knobs[i], self->was_knob[i], 16) <= 0) {
			self->was_knob[i][0] = '\0';
			continue;
		}
		ASSERT_EQ(0, nu_write_str(knobs[i], "1"));
	}
	p = anon_moved(self->nid, LEN, 0);
	ASSERT_NE(NULL, p);
	expect_written(_metadata, variant->fence, p, LEN, self->nid,
		       write_pages(p, LEN));
	EXPECT_TRUE(intact_after(p, LEN, 1));
	munmap(p, LEN);
}

TEST_F(pf, mprotect)
{
	char *p;

	p = CLAIM_MOVED();
	if (!p)
		return;
	ASSERT_EQ(0, mprotect(p, LEN, PROT_READ));
	ASSERT_EQ(0, mprotect(p, LEN, PROT_READ | PROT_WRITE));
	expect_written(_metadata, variant->fence, p, LEN, self->nid,
		       write_pages(p, LEN));
	EXPECT_TRUE(intact_after(p, LEN, 1));
	munmap(p, LEN);
}

/*
 * mlock() of a private writable range faults it in for write: a fenced
 * node's pages are copied off (into an mlocked VMA), a plain one's stay.
 */
TEST_F(pf, mlock)
{
	char *p;

	p = CLAIM_MOVED();
	if (!p)
		return;
	if (mlock(p, LEN))
		NU_SKIP(return, "mlock: %s", strerror(errno));
	EXPECT_EQ(variant->fence ? 0 : NPAGES,
		  nu_pages_on(p, LEN, self->nid));
	EXPECT_TRUE(intact_after(p, LEN, 0));
	EXPECT_EQ(0, write_pages(p, LEN));
	EXPECT_TRUE(intact_after(p, LEN, 1));
	munlock(p, LEN);
	munmap(p, LEN);
}

/*
 * A @len-aligned anon range of @len with @advice (MADV_HUGEPAGE or
 * MADV_NOHUGEPAGE), filled: NULL on failure.
 */
static char *aligned_range(size_t len, int advice)
{
	char *raw = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p;

	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((unsigned long)raw + len - 1) & ~(len - 1));
	if (madvise(p, len, advice)) {
		munmap(raw, 2 * len);
		return NULL;
	}
	nu_fill(p, len, SEED);
	return p;
}

TEST_F(pf, thp)
{
	const size_t len = 2 * MB;
	long faults;
	char *p;

	if (!CLAIM(CAP_RECLAIM, 0))
		return;
	p = aligned_range(len, MADV_HUGEPAGE);
	ASSERT_NE(NULL, p);
	if (nu_anon_huge_kb() < 2048)
		NU_SKIP(return, "no THP for the range");
	ASSERT_EQ(self->nid, move_all(p, len, self->nid));
	ASSERT_EQ((long)(len / PAGE), nu_pages_on(p, len, self->nid));
	TH_LOG("AnonHugePages after the move: %ld kB", nu_anon_huge_kb());
	faults = minflt();
	__atomic_store_n(&p[8], (char)~p[8], __ATOMIC_RELAXED);
	faults = minflt() - faults;
	if (variant->fence) {
		/* One page copied to DRAM; the rest stays, read-only. */
		EXPECT_GE(faults, 1);
		EXPECT_EQ((long)(len / PAGE) - 1, nu_pages_on(p, len, self->nid));
	} else {
		EXPECT_EQ(0, faults);
		EXPECT_EQ((long)(len / PAGE), nu_pages_on(p, len, self->nid));
	}
	expect_written(_metadata, variant->fence, p + PAGE, len - PAGE,
		       self->nid, write_pages(p + PAGE, len - PAGE));
	EXPECT_TRUE(intact_after(p, len, 1));
	munmap(p, len);
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

/* MADV_COLLAPSE: did AnonHugePages grow by a THP? */
static bool collapsed(char *p, size_t len)
{
	long before = nu_anon_huge_kb();

	madvise(p, len, MADV_HUGEPAGE);
	madvise(p, len, MADV_COLLAPSE);
	return nu_anon_huge_kb() - before >= (long)(len >> 10);
}

/*
 * khugepaged and MADV_COLLAPSE never copy a private node's pages into a
 * new THP (which would be mapped writable), fence or not.  LEN of the
 * 2 MiB is on the node, the rest on node 0, which a collapse would pick.
 */
TEST_F(pf, collapse)
{
	const size_t len = 2 * MB;
	char *p, *q;

	if (!CLAIM(CAP_RECLAIM, 0))
		return;
	q = aligned_range(len, MADV_NOHUGEPAGE);
	ASSERT_NE(NULL, q);
	if (!collapsed(q, len))
		NU_SKIP(return, "MADV_COLLAPSE does not collapse on node 0 here");
	p = aligned_range(len, MADV_NOHUGEPAGE);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(self->nid, move_all(p, LEN, self->nid));
	ASSERT_EQ(NPAGES, nu_pages_on(p, len, self->nid));
	EXPECT_FALSE(collapsed(p, len));
	EXPECT_EQ(NPAGES, nu_pages_on(p, LEN, self->nid));
	expect_written(_metadata, variant->fence, p, LEN, self->nid,
		       write_pages(p, LEN));
	EXPECT_TRUE(intact_after(p, LEN, 1));
	munmap(q, len);
	munmap(p, len);
}

/* A userfaultfd: its fd, or -EOPNOTSUPP (none in this kernel) */
static int uffd_open(void)
{
	int fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	return fd < 0 ? -EOPNOTSUPP : fd;
}

/*
 * Write-protect [p, +len) with userfaultfd, resolve it and unregister:
 * both ask change_protection() to make the PTEs writable where it may.
 * 0, or -errno.
 */
static int uffd_wp_cycle(char *p, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { (unsigned long)p, len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp = {
		.range = { (unsigned long)p, len },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	int fd = uffd_open();
	int ret = 0;

	if (fd < 0)
		return fd;
	if (ioctl(fd, UFFDIO_API, &api) || ioctl(fd, UFFDIO_REGISTER, &reg) ||
	    ioctl(fd, UFFDIO_WRITEPROTECT, &wp))
		ret = -errno;
	wp.mode = 0;
	if (!ret && ioctl(fd, UFFDIO_WRITEPROTECT, &wp))
		ret = -errno;
	if (!ret && ioctl(fd, UFFDIO_UNREGISTER, &reg.range))
		ret = -errno;
	close(fd);
	return ret;
}

TEST_F(pf, uffd_wp)
{
	int ret;
	char *p;

	p = CLAIM_MOVED();
	if (!p)
		return;
	ret = uffd_wp_cycle(p, LEN);
	if (ret == -EOPNOTSUPP || ret == -EINVAL)
		NU_SKIP(return, "no userfaultfd write protection (%s)",
			strerror(-ret));
	ASSERT_EQ(0, ret);
	expect_written(_metadata, variant->fence, p, LEN, self->nid,
		       write_pages(p, LEN));
	EXPECT_TRUE(intact_after(p, LEN, 1));
	munmap(p, LEN);
}

/*
 * NUMA-hint faults that decide not to migrate (memory tiering with a
 * promotion rate limit of 0) restore the PTEs: writable again on a plain
 * node, read-only on a fenced one, so that the write copies the pages.
 */
TEST_F_TIMEOUT(pf, hint_restore, 120)
{
	long long prom;
	long faults = 0;
	const char *why;
	double end;
	char *p;

	if (!CLAIM(CAP_RECLAIM | CAP_DEMOTION | CAP_NUMA_BALANCING,
		   ADIST_SLOW))
		return;
	if (nu_read_str(PROMOTE_RL, self->was_rl, sizeof(self->was_rl)) <= 0)
		NU_SKIP(return, "no %s", PROMOTE_RL);
	ASSERT_EQ(0, nu_write_str(PROMOTE_RL, "0"));
	why = balancing_on(self->was_nb, &self->balancing, "2");
	if (why)
		NU_SKIP(return, "%s", why);
	p = anon_moved(self->nid, LEN, 0);
	ASSERT_NE(NULL, p);
	prom = nu_vmstat("pgpromote_success");
	/*
	 * Reads of present pages fault only on NUMA hints.  Keep reading:
	 * the scanner runs on this task's CPU time, not on the clock.
	 */
	for (end = nu_now() + 30; faults < NPAGES && nu_now() < end;)
		faults += read_pages(p, LEN);
	TH_LOG("%ld hint faults on the range", faults);
	if (nu_pages_on(p, LEN, self->nid) != NPAGES ||
	    nu_vmstat("pgpromote_success") != prom)
		NU_SKIP(return,
			"promoted regardless of the rate limit (node 0 has over 1 GiB free)");
	ASSERT_GE(faults, NPAGES);
	/* A write to a PTE still PROT_NONE faults either way: placement. */
	write_pages(p, LEN);
	EXPECT_EQ(variant->fence ? 0 : NPAGES,
		  nu_pages_on(p, LEN, self->nid));
	EXPECT_TRUE(intact_after(p, LEN, 1));
	munmap(p, LEN);
}

/*
 * ksmd on, fast, until this process has @want merged pages and then two
 * more full scans have passed (or 30 s): the merged pages.
 */
static long long ksm_wait(long long want)
{
	long long scans = -1;
	int i;

	nu_write_str(KSM_DIR "pages_to_scan", "4096");
	nu_write_str(KSM_DIR "sleep_millisecs", "10");
	nu_write_str(KSM_DIR "run", "1");
	for (i = 0; i < 300; i++) {
		if (scans < 0 && nu_ksm_merged() >= want)
			scans = nu_read_ll(KSM_DIR "full_scans");
		if (scans >= 0 && nu_read_ll(KSM_DIR "full_scans") >= scans + 2)
			break;
		usleep(100000);
	}
	return nu_ksm_merged();
}

/*
 * Two copies on node 0 and one on the node, all the same data: ksmd
 * merges the node-0 pages and never the node's (which would replace
 * them by the KSM page, so that they leave the node).  The fence still
 * holds on them after.
 */
TEST_F_TIMEOUT(pf, ksm, 120)
{
	char *p, *q[2];
	int i;

	p = CLAIM_MOVED();
	if (!p)
		return;
	if (nu_read_ll(KSM_DIR "merge_across_nodes") != 1)
		NU_SKIP(return, "no KSM, or it does not merge across nodes");
	for (i = 0; i < 3; i++)
		ASSERT_LT(0, nu_read_str(ksm_knobs[i], self->was_ksm[i], 16));
	for (i = 0; i < 2; i++) {
		q[i] = nu_anon_bound(LEN, MPOL_BIND, 0, SEED);
		ASSERT_NE(NULL, q[i]);
		ASSERT_EQ(0, madvise(q[i], LEN, MADV_MERGEABLE));
	}
	ASSERT_EQ(0, madvise(p, LEN, MADV_MERGEABLE));
	if (ksm_wait(2 * NPAGES) < 2 * NPAGES)
		NU_SKIP(return, "ksmd did not merge the node-0 copies in 30 s");
	EXPECT_EQ(2 * NPAGES, nu_ksm_merged());
	EXPECT_EQ(NPAGES, nu_pages_on(p, LEN, self->nid));
	EXPECT_TRUE(nu_intact(p, LEN, SEED));
	expect_written(_metadata, variant->fence, p, LEN, self->nid,
		       write_pages(p, LEN));
	EXPECT_TRUE(intact_after(p, LEN, 1));
	for (i = 0; i < 2; i++)
		munmap(q[i], LEN);
	munmap(p, LEN);
}

/* pwrite() to /proc/self/mem: a FOLL_FORCE write, even to PROT_READ. */
static long proc_mem_write(char *p, size_t len)
{
	long before = minflt();
	int fd = open("/proc/self/mem", O_RDWR);
	size_t i;

	if (fd < 0)
		return -1;
	for (i = 0; i < len; i += PAGE) {
		char c = ~p[i + 8];

		if (pwrite(fd, &c, 1, (off_t)(unsigned long)(p + i + 8)) != 1) {
			close(fd);
			return -1;
		}
	}
	close(fd);
	return minflt() - before;
}

TEST_F(pf, proc_mem)
{
	long faults;
	char *p;

	p = CLAIM_MOVED();
	if (!p)
		return;
	ASSERT_EQ(0, mprotect(p, LEN, PROT_READ));
	faults = proc_mem_write(p, LEN);
	ASSERT_GE(faults, 0);
	EXPECT_TRUE(intact_after(p, LEN, 1));
	/* The fault is the kernel's (GUP), not counted as ours: placement. */
	EXPECT_EQ(variant->fence ? 0 : NPAGES,
		  nu_pages_on(p, LEN, self->nid));
	munmap(p, LEN);
}

TEST_F(pf, vm_writev)
{
	struct iovec local, remote;
	int pipefd[2];
	char buf[16];
	char *p;
	size_t i;

	p = CLAIM_MOVED();
	if (!p)
		return;
	/* First half by process_vm_writev(), second by read() from a pipe. */
	for (i = 0; i < LEN / 2; i += PAGE) {
		buf[0] = ~p[i + 8];
		local.iov_base = buf;
		local.iov_len = 1;
		remote.iov_base = p + i + 8;
		remote.iov_len = 1;
		ASSERT_EQ(1, process_vm_writev(getpid(), &local, 1, &remote,
					       1, 0));
	}
	ASSERT_EQ(0, pipe(pipefd));
	for (; i < LEN; i += PAGE) {
		buf[0] = ~p[i + 8];
		ASSERT_EQ(1, write(pipefd[1], buf, 1));
		ASSERT_EQ(1, read(pipefd[0], p + i + 8, 1));
	}
	close(pipefd[0]);
	close(pipefd[1]);
	EXPECT_TRUE(intact_after(p, LEN, 1));
	EXPECT_EQ(variant->fence ? 0 : NPAGES,
		  nu_pages_on(p, LEN, self->nid));
	munmap(p, LEN);
}

/*
 * An O_DIRECT read of @len bytes from a loop device over a file filled
 * with @seed into @p: the block layer pins @p with FOLL_WRITE and the
 * loop worker stores into the pinned pages.  0, or -errno.
 */
static int odirect_read(char *p, size_t len, unsigned int seed)
{
	char file[] = "/tmp/private_tier.XXXXXX", dev[32];
	char *buf = malloc(len);
	int fd = mkstemp(file), lfd = -1, dfd = -1, ret = 0;

	if (fd < 0 || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	nu_fill(buf, len, seed);
	if (write(fd, buf, len) != (ssize_t)len) {
		ret = -EIO;
		goto out;
	}
	lfd = nu_loop_attach(fd, dev, sizeof(dev));
	if (lfd < 0) {
		ret = lfd;
		goto out;
	}
	dfd = open(dev, O_RDONLY | O_DIRECT);
	if (dfd < 0 || pread(dfd, p, len, 0) != (ssize_t)len)
		ret = -errno ?: -EIO;
	if (dfd >= 0)
		close(dfd);
	ioctl(lfd, LOOP_CLR_FD);
	close(lfd);
out:
	if (fd >= 0) {
		close(fd);
		unlink(file);
	}
	free(buf);
	return ret;
}

TEST_F(pf, odirect)
{
	int ret;
	char *p;

	p = CLAIM_MOVED();
	if (!p)
		return;
	ret = odirect_read(p, LEN, SEED + 1);
	if (ret == -ENOENT || ret == -ENODEV)
		NU_SKIP(return, "no loop device (%s)", strerror(-ret));
	ASSERT_EQ(0, ret);
	EXPECT_TRUE(nu_intact(p, LEN, SEED + 1));
	/* GUP faulted the pages, not us: placement says it. */
	EXPECT_EQ(variant->fence ? 0 : NPAGES,
		  nu_pages_on(p, LEN, self->nid));
	munmap(p, LEN);
}

TEST_F(pf, fork)
{
	int status;
	pid_t pid;
	char *p;

	p = CLAIM_MOVED();
	if (!p)
		return;
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		/* The child's writes are COWs either way. */
		write_pages(p, LEN);
		_exit(intact_after(p, LEN, 1) ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_TRUE(intact_after(p, LEN, 0));
	EXPECT_EQ(NPAGES, nu_pages_on(p, LEN, self->nid));
	/*
	 * Sole owner again, behind the PTEs fork write-protected: the
	 * write faults either way; a plain node reuses the page in place,
	 * a fenced one copies it off.
	 */
	EXPECT_GE(write_pages(p, LEN), NPAGES);
	EXPECT_EQ(variant->fence ? 0 : NPAGES,
		  nu_pages_on(p, LEN, self->nid));
	EXPECT_TRUE(intact_after(p, LEN, 1));
	munmap(p, LEN);
}

TEST_F(pf, swapcache)
{
	long stayed, faults;
	char *p;

	if (!CLAIM(CAP_RECLAIM, 0))
		return;
	if (nu_swap_on_file(&self->sw, "/tmp", 64))
		NU_SKIP(return, "cannot set up swap on a loop file");
	self->swapped = true;
	p = anon_moved(self->nid, LEN, 0);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, madvise(p, LEN, MADV_PAGEOUT));
	ASSERT_GT(nu_pages_swapped(p, LEN), NPAGES / 2);
	/* Read back: pages found in the swap cache are mapped on the node. */
	read_pages(p, LEN);
	stayed = nu_pages_on(p, LEN, self->nid);
	TH_LOG("%ld of %d pages came back from the swap cache on the node",
	       stayed, NPAGES);
	if (stayed <= 0)
		NU_SKIP(return, "swap cache already dropped every page");
	faults = write_pages(p, LEN);
	if (variant->fence) {
		EXPECT_GE(faults, stayed);
		EXPECT_EQ(0, nu_pages_on(p, LEN, self->nid));
	} else {
		EXPECT_EQ(stayed, nu_pages_on(p, LEN, self->nid));
	}
	EXPECT_TRUE(intact_after(p, LEN, 1));
	munmap(p, LEN);
}

TEST_F(pf, file_refused)
{
	int fd = memfd_create("pf", 0);
	char *p;
	int st;

	if (!CLAIM(0, 0))
		return;
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, ftruncate(fd, LEN));
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	nu_fill(p, LEN, SEED);
	st = move_all(p, LEN, self->nid);
	if (variant->fence) {
		EXPECT_NE(self->nid, st);
		EXPECT_EQ(0, nu_pages_on(p, LEN, self->nid));
	} else {
		EXPECT_EQ(self->nid, st);
		EXPECT_EQ(NPAGES, nu_pages_on(p, LEN, self->nid));
	}
	EXPECT_TRUE(nu_intact(p, LEN, SEED));
	munmap(p, LEN);
	close(fd);
}

TEST_F(pf, mbind_refused)
{
	unsigned long mask;
	char *p;
	long r;

	if (!CLAIM(0, 0))
		return;
	mask = 1UL << self->nid;
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	r = nu_mbind(p, LEN, MPOL_BIND, &mask, NU_MAX_NODES, 0) ? errno : 0;
	if (variant->fence) {
		EXPECT_EQ(EINVAL, r);
		r = nu_set_mempolicy(MPOL_PREFERRED, &mask, NU_MAX_NODES) ?
			errno : 0;
		EXPECT_EQ(EINVAL, r);
	} else {
		EXPECT_EQ(0, r);
		nu_fill(p, LEN, SEED);
		EXPECT_EQ(NPAGES, nu_pages_on(p, LEN, self->nid));
	}
	munmap(p, LEN);
}

/* The memory tier whose nodelist holds @nid; -1 if none. */
static int tier_of(int nid)
{
	char path[320], buf[128];
	struct dirent *d;
	int ids[NU_MAX_NODES], n, i, tier = -1;
	DIR *dir = opendir(TIERS);

	if (!dir)
		return -1;
	while ((d = readdir(dir)) && tier < 0) {
		if (strncmp(d->d_name, "memory_tier", 11))
			continue;
		snprintf(path, sizeof(path), TIERS "%s/nodelist", d->d_name);
		if (nu_read_str(path, buf, sizeof(buf)) < 0)
			continue;
		n = nu_parse_list(buf, ids, NU_MAX_NODES);
		for (i = 0; i < n; i++)
			if (ids[i] == nid)
				tier = atoi(d->d_name + 11);
	}
	closedir(dir);
	return tier;
}

/*
 * Cold anon on node 0 in a cgroup of our own, then memory.reclaim until
 * half of it left node 0.  The cgroup may not swap (memory.swap.max 0):
 * demotion is the only way out.  *@t0: when the first reclaim began.
 */
static char *demote_setup(struct __test_metadata *_metadata, char *cg,
			  size_t cglen, char *was, size_t waslen, size_t len,
			  double *t0)
{
	char path[PATH_MAX];
	const char *why;
	char *p;
	int i;

	ASSERT_GT(nu_read_str(DEMOTE_ON, was, waslen), 0);
	ASSERT_EQ(0, nu_write_str(DEMOTE_ON, "1"));
	why = nu_cg_enter("private_tier", cg, cglen);
	if (why)
		NU_SKIP(return NULL, "%s", why);
	snprintf(path, sizeof(path), "%s/memory.swap.max", cg);
	if (access(path, W_OK))
		NU_SKIP(return NULL, "no memory.swap.max (swap accounting off)");
	ASSERT_EQ(0, nu_cg_write(cg, "memory.swap.max", 0));
	p = nu_anon_bound(len, MPOL_BIND, 0, SEED);
	ASSERT_NE(NULL, p);
	ASSERT_EQ((long)(len / PAGE), nu_pages_on(p, len, 0));
	*t0 = nu_now();
	for (i = 0; i < 20 && nu_pages_on(p, len, 0) > (long)(len / PAGE / 2);
	     i++)
		nu_cg_write(cg, "memory.reclaim", len);
	return p;
}

#define DEMOTE_SETUP(len, t0)						\
	demote_setup(_metadata, self->cg, sizeof(self->cg),		\
		     self->was_demote, sizeof(self->was_demote), len, t0)

/* Pages demoted by every kind of reclaim (6.12 counts no proactive). */
static long long demoted_total(void)
{
	static const char * const kinds[] = {
		"pgdemote_kswapd", "pgdemote_direct", "pgdemote_khugepaged",
		"pgdemote_proactive",
	};
	long long sum = 0, v;
	int i;

	for (i = 0; i < 4; i++) {
		v = nu_vmstat(kinds[i]);
		if (v > 0)
			sum += v;
	}
	return sum;
}

/*
 * The loop breaker judges a window (1 s, NODE_FENCE_WINDOW) at the first
 * demotion after its end, and only within 8 s (NODE_FENCE_STALE) of its
 * start.  A demotion with swap barred, then a write of every page, is
 * churn: the copies match the demotion.  Reclaim with swap open is not
 * (it swaps most of what it demotes out of the node again before the
 * write can copy it: 2100 demoted, 100 copied), so the verdict that
 * closes the node must be the one on the barred demotion, which ran from
 * @t0 to @t1.  Its window began 1 s before @t0 at the earliest (a
 * decision is due at the first demotion 1 s into a window) and at @t1 at
 * the latest.  Open swap, and return once the next reclaim is due (1.5 s
 * after @t1) if that is under FENCE_DUE_SECS after @t0; else wait until
 * the window is surely stale (a verdict on it now would close the node
 * with swap barred, and the closure would end unseen) and demote and
 * write again, at most twice.  Return: writes done.
 */
#define FENCE_DUE_SECS	5

static int fence_due(struct __test_metadata *_metadata, const char *cg,
		     char *p, size_t len, double t0, double t1)
{
	int writes = 0;
	double late;

	for (;;) {
		ASSERT_EQ(0, nu_cg_write(cg, "memory.swap.max", 1LL << 40));
		while (nu_now() < t1 + 1.5)
			usleep(100000);
		late = nu_now() - t0;
		if (late < FENCE_DUE_SECS)
			return writes;
		ASSERT_LT(writes, 2) TH_LOG("a slow guest: %.1f s from demotion to reclaim",
					    late);
		TH_LOG("%.1f s from demotion to reclaim: demoting again", late);
		while (nu_now() < t1 + 8.5)
			usleep(100000);
		ASSERT_EQ(0, nu_cg_write(cg, "memory.swap.max", 0));
		t0 = nu_now();
		nu_cg_write(cg, "memory.reclaim", len);
		t1 = nu_now();
		write_pages(p, len);
		writes++;
	}
}

TEST_F_TIMEOUT(pf, demotion, 300)
{
	const size_t len = 16 * MB;
	long npages = len / PAGE, on, faults;
	long long cow, skip, d, c, o;
	int i, writes = 1;
	double t0, t1;
	char *p;

	if (!CLAIM(CAP_RECLAIM | CAP_DEMOTION, ADIST_SLOW))
		return;
	ASSERT_GE(tier_of(self->nid), 0);
	ASSERT_GT(tier_of(self->nid), tier_of(0));
	/* On now, barred to the cgroup until fence_due(). */
	ASSERT_EQ(0, nu_swap_on(&self->sw, "/tmp", 64));
	self->swapped = true;
	p = DEMOTE_SETUP(len, &t0);
	if (!p)
		return;
	t1 = nu_now();
	on = nu_pages_on(p, len, self->nid);
	TH_LOG("%ld of %ld pages demoted onto node %d", on, npages,
	       self->nid);
	ASSERT_GT(on, npages / 2);
	EXPECT_TRUE(nu_intact(p, len, SEED));
	warm_up();
	EXPECT_EQ(0, read_pages(p, len));

	cow = nu_vmstat("pgfence_cow");
	faults = write_pages(p, len);
	if (variant->fence) {
		EXPECT_GE(faults, on);
		EXPECT_GE(nu_vmstat("pgfence_cow") - cow, on);
		EXPECT_EQ(0, nu_pages_on(p, len, self->nid));
	} else {
		EXPECT_EQ(on, nu_pages_on(p, len, self->nid));
	}
	EXPECT_TRUE(intact_after(p, len, 1));

	/*
	 * A fenced node closes at the next reclaim, which then keeps the
	 * anon back and swaps it instead (with no swap the node would stay
	 * open); a plain one shows no skip in 4 rounds.
	 */
	if (variant->fence)
		writes += fence_due(_metadata, self->cg, p, len, t0, t1);
	else
		ASSERT_EQ(0, nu_cg_write(self->cg, "memory.swap.max", 1LL << 40));
	skip = nu_vmstat("pgdemote_fence_skip");
	for (i = 0; nu_vmstat("pgdemote_fence_skip") == skip && i < 4; i++) {
		d = demoted_total();
		c = nu_vmstat("pgfence_cow");
		o = nu_vmstat("pswpout");
		nu_cg_write(self->cg, "memory.reclaim", len);
		write_pages(p, len);
		writes++;
		TH_LOG("round %d: %lld demoted, %lld copied off, %lld swapped out",
		       i, demoted_total() - d, nu_vmstat("pgfence_cow") - c,
		       nu_vmstat("pswpout") - o);
	}
	EXPECT_EQ(variant->fence, nu_vmstat("pgdemote_fence_skip") > skip);
	EXPECT_TRUE(intact_after(p, len, writes));
	munmap(p, len);
}

TEST_F_TIMEOUT(pf, demotion_off, 300)
{
	const size_t len = 16 * MB;
	double t0;
	char *p;

	if (!CLAIM(CAP_RECLAIM, ADIST_SLOW))
		return;
	EXPECT_EQ(-1, tier_of(self->nid));
	p = DEMOTE_SETUP(len, &t0);
	if (!p)
		return;
	EXPECT_EQ(0, nu_pages_on(p, len, self->nid));
	EXPECT_TRUE(nu_intact(p, len, SEED));
	munmap(p, len);
}

/*
 * Memory tiering mode: a task on node 0 reading pages that sit on the
 * node (a tier below node 0) gets them promoted there, with the cap; for
 * NB_OFF_PASSES scans without it they stay.  @nb_cap: claim with
 * NUMA_BALANCING.
 */
static void promote(struct __test_metadata *_metadata,
		    FIXTURE_DATA(pf) *self, bool fence, bool nb_cap)
{
	long long prom = nu_vmstat("pgpromote_success");
	const char *why;
	int cpu = node0_cpu();
	struct nb_run run;

	self->claimed = claim(_metadata, self->nid, fence, CAP_RECLAIM |
			      CAP_DEMOTION | (nb_cap ? CAP_NUMA_BALANCING : 0),
			      ADIST_SLOW);
	if (!self->claimed)
		return;
	ASSERT_GT(tier_of(self->nid), tier_of(0));
	why = balancing_on(self->was_nb, &self->balancing, "2");
	if (why || cpu < 0)
		NU_SKIP(return, "%s", why ?: "node 0 has no CPU");
	ASSERT_TRUE(balance_off(self->nid, cpu, nb_cap ? 0 : NB_OFF_PASSES,
				nb_cap ? 90 : NB_OFF_SECS, &run));
	ASSERT_LT(0, run.placed) TH_LOG("move_pages placed nothing on the node");
	EXPECT_TRUE(run.intact);
	prom = nu_vmstat("pgpromote_success") - prom;
	TH_LOG("%ld of %ld pages left on node %d, %lld promoted, %ld scans, %.1f s",
	       run.left, run.placed, self->nid, prom, run.passes, run.secs);
	if (nb_cap) {
		/* Hint faults' promotions, give or take a page */
		EXPECT_EQ(0, run.left);
		EXPECT_GE(prom, run.placed - run.placed / 16);
	} else {
		EXPECT_EQ(run.placed, run.left);
		EXPECT_TRUE(run.passes < 0 || run.passes >= NB_OFF_PASSES)
			TH_LOG("balancing scanned %ld times", run.passes);
	}
}

TEST_F_TIMEOUT(pf, promotion, 300)
{
	promote(_metadata, self, variant->fence, true);
}

TEST_F_TIMEOUT(pf, promotion_off, 300)
{
	promote(_metadata, self, variant->fence, false);
}

/* The race: what each thread needs. */
struct pf_race {
	char *p;
	int nid;
	int stop;		/* read with __atomic_load_n() */
	long lost;		/* writes a writer did not read back */
};

#define RACE_WRITERS	2
#define RACE_LEN	(256 * PAGE)

struct pf_writer {
	struct pf_race *r;
	int idx;
};

/* Each writer owns every RACE_WRITERS-th page: a counter, read back. */
static void *race_writer(void *arg)
{
	struct pf_writer *w = arg;
	struct pf_race *r = w->r;
	unsigned int gen = 0;
	size_t i;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		gen++;
		for (i = w->idx * PAGE; i < RACE_LEN; i += RACE_WRITERS * PAGE) {
			unsigned int *c = (void *)(r->p + i + 64);

			if (gen > 1 &&
			    __atomic_load_n(c, __ATOMIC_RELAXED) != gen - 1)
				__atomic_add_fetch(&r->lost, 1, __ATOMIC_RELAXED);
			__atomic_store_n(c, gen, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void *race_mover(void *arg)
{
	struct pf_race *r = arg;
	unsigned int seed = 1;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		int rnd = rand_r(&seed);
		size_t off = (rnd % (RACE_LEN / PAGE / 16)) * 16 * PAGE;

		move_all(r->p + off, 16 * PAGE, (rnd >> 16) & 1 ? r->nid : 0);
	}
	return NULL;
}

static void *race_mprotect(void *arg)
{
	struct pf_race *r = arg;
	int n = 0;

	/* Both writable: each flip asks change_protection() to upgrade. */
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED))
		mprotect(r->p, RACE_LEN, PROT_READ | PROT_WRITE |
			 (n++ & 1 ? PROT_EXEC : 0));
	return NULL;
}

/* Reclaim: page out a random 16-page chunk, then a pause. */
static void *race_pager(void *arg)
{
	struct pf_race *r = arg;
	unsigned int seed = 2;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		size_t off = (rand_r(&seed) % (RACE_LEN / PAGE / 16)) * 16 * PAGE;

		madvise(r->p + off, 16 * PAGE, MADV_PAGEOUT);
		usleep(500);
	}
	return NULL;
}

static void *race_forker(void *arg)
{
	struct pf_race *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		pid_t pid = fork();

		if (!pid)
			_exit(0);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		usleep(1000);
	}
	return NULL;
}

#define RACE_THREADS	4

TEST_F_TIMEOUT(pf, race, 120)
{
	void *(*fns[RACE_THREADS])(void *) = {
		race_mover, race_mprotect, race_forker, race_pager,
	};
	pthread_t th[RACE_WRITERS + RACE_THREADS];
	struct pf_writer w[RACE_WRITERS];
	struct pf_race r = { 0 };
	const char *why;
	long on, faults;
	int i;

	if (!CLAIM(CAP_RECLAIM | CAP_NUMA_BALANCING, 0))
		return;
	ASSERT_EQ(0, nu_swap_on(&self->sw, "/tmp", 64));
	self->swapped = true;
	why = balancing_on(self->was_nb, &self->balancing, "1");
	if (why)
		TH_LOG("racing without NUMA balancing: %s", why);
	r.nid = self->nid;
	r.p = anon_moved(self->nid, RACE_LEN, 0);
	ASSERT_NE(NULL, r.p);
	memset(r.p, 0, RACE_LEN);
	ASSERT_EQ(self->nid, move_all(r.p, RACE_LEN, self->nid));
	for (i = 0; i < RACE_WRITERS; i++) {
		w[i].r = &r;
		w[i].idx = i;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, race_writer, &w[i]));
	}
	for (i = 0; i < RACE_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[RACE_WRITERS + i], NULL,
					    fns[i], &r));
	sleep(10);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < RACE_WRITERS + RACE_THREADS; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(0, r.lost);
	if (self->balancing) {
		balancing_restore(self->was_nb);
		self->balancing = false;
	}
	/* Swap back in what the pager left out, so that it can move */
	nu_read_pages(r.p, RACE_LEN);

	/*
	 * The state the race left (anon-exclusive bits, swap entries, split
	 * folios) moved back onto the node must still fault on every write.
	 */
	ASSERT_EQ(0, mprotect(r.p, RACE_LEN, PROT_READ | PROT_WRITE));
	move_all(r.p, RACE_LEN, self->nid);
	on = nu_pages_on(r.p, RACE_LEN, self->nid);
	TH_LOG("%ld of %lu pages on the node, moved back after the race", on,
	       RACE_LEN / PAGE);
	faults = 0;
	for (i = 0; i < (int)(RACE_LEN / PAGE); i++) {
		char *pg = r.p + i * PAGE;
		bool there = nu_pages_on(pg, PAGE, self->nid) == 1;
		long f = minflt();

		__atomic_store_n(&pg[0], 1, __ATOMIC_RELAXED);
		if (there && minflt() > f)
			faults++;
	}
	EXPECT_GT(on, 0);
	if (variant->fence)
		EXPECT_EQ(on, faults);
	munmap(r.p, RACE_LEN);
}

TEST_HARNESS_MAIN
