// SPDX-License-Identifier: GPL-2.0
/*
 * rocm_race - reproducers for races of read-only copy migration
 * (vm.migrate_rocm) that lose or expose data.  Each test bounces memory
 * between two nodes with move_pages(MPOL_MF_MOVE_ALL) while other threads
 * and processes provoke one race, and fails on the damage that race does.
 *
 * fork_race: fork() write-protects the parent's PTEs, but the TLBs of
 *   the parent's other CPUs keep writable entries until dup_mmap() ends
 *   with a flush.  ROCM takes such a page for read-only; if it copies and
 *   switches it without caring about those entries, a store through them
 *   lands in the old page after the copy and is lost.  Two writer threads
 *   on other CPUs count in their own word of every page of a 4 MiB
 *   buffer while the main thread forks in a loop; a 256 MiB ballast,
 *   mapped above the buffer, makes each dup_mmap() long (the buffer's
 *   PTEs are copied first, the ballast's after).  Fails when a page's
 *   count differs from what its writer did, when a child's copy holds a
 *   count its writer cannot have written, or when ROCM never moved a page
 *   (then the test proved nothing).
 *
 * writable_sharer: a file mapped read-only by this process and shared
 *   writable by a child that stores ever larger versions into every page.
 *   Were ROCM to copy such a page and switch the read-only mappings to the
 *   copy while the child keeps writing the source, readers would see data
 *   older than what they had already seen.  ROCM must refuse the page
 *   at its check walk (tmpfs: a writable shared mapping; ext4: a writable
 *   or dirty PTE, a dirty folio), or take it only while every PTE is
 *   clean and read-only: the writer's PTE then becomes writable only
 *   through a write fault, which waits for the folio lock ROCM holds from
 *   the check to the switch, so the "switch some, then undo" case cannot
 *   arise here (memcg_undo drives the undo).  Checkers: plain loads
 *   through two read-only mappings, process_vm_readv() (GUP), a private
 *   mapping copied on write, and O_DIRECT writes out of the read-only
 *   mapping; none may see a page's version go backwards.  With tracefs,
 *   ROCM must have refused pages for the writer (or the test proved
 *   nothing).  copy_delay_us and switch_delay_us widen the window
 *   (default 300).
 *
 * memcg_undo: when ROCM undoes, the copy it charged to the memcg must be
 *   uncharged; otherwise compaction, which keeps the destinations it did
 *   not use on its own free list, frees a page still charged ("BUG: Bad
 *   page state ... page still charged to cgroup") and the cgroup keeps
 *   the charge.  A file charged to a test cgroup is mapped by three
 *   processes; threads take transient references (pread(), GUP) so that
 *   they land between the copy and the switch (copy_delay_us, default
 *   200), which makes ROCM undo; move_pages() and compact_memory run in
 *   a loop.  Fails on a new bad page report in the kernel log, on
 *   memory.current left above its start after draining, when the
 *   cgroup cannot be removed, or when (window widened, tracefs there)
 *   the mm_migrate_rocm tracepoint saw no undo ("race"): then the test
 *   proved nothing.
 *
 * The delay knobs are in /sys/kernel/debug/migrate_rocm/
 * (CONFIG_MIGRATE_ROCM_DEBUG); without them the tests run with the
 * windows the kernel has.  Environment: ROCM_RACE_SECONDS (default 8)
 * per test, ROCM_RACE_DIR for the files (default /tmp), and
 * ROCM_RACE_DELAY_US to replace every delay a test sets.  Harness
 * options select tests, e.g. -t writable_sharer (rocm_race_ext4.sh).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "numa_util.h"

#define SYSCTL		"/proc/sys/vm/migrate_rocm"
#define KNOBS		"/sys/kernel/debug/migrate_rocm/"
#define COMPACT		"/proc/sys/vm/compact_memory"
#define TRACEFS		"/sys/kernel/tracing/instances/"
#define MAX_KIDS	4
#define REPORT_MAX	5	/* mismatches printed per check */

#define SYSLOG_ACTION_READ_ALL		3
#define SYSLOG_ACTION_SIZE_BUFFER	10

static long page_size;
static int stop;

/* Children to kill at the end. */
struct kids {
	pid_t pid[MAX_KIDS];
	int nr;
};

/* ROCM's counters in /proc/vmstat. */
struct rocm_count {
	long long succ, fall;
};

FIXTURE(rocm_race) {
	int node[2];		/* the nodes pages bounce between */
	long long old_rocm;	/* vm.migrate_rocm before the test */
	struct rocm_count c0;	/* counters when the race started */
	double seconds;		/* how long each race runs */
	const char *dir;	/* where the files go */
	struct kids kids;
	char cg[PATH_MAX];	/* test cgroup to remove, "" if none */
};

static double run_seconds(void)
{
	const char *s = getenv("ROCM_RACE_SECONDS");
	double v = s ? atof(s) : 0;

	return v > 0 ? v : 8;
}

static long delay_us(long dflt)
{
	const char *s = getenv("ROCM_RACE_DELAY_US");

	return s ? atol(s) : dflt;
}

static bool running(void)
{
	return !__atomic_load_n(&stop, __ATOMIC_RELAXED);
}

static void nap(double seconds)
{
	double until = nu_now() + seconds;

	while (nu_now() < until)
		usleep(10000);
}

static void stop_all(void)
{
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
}

/*
 * Ordinary loads and stores, which the races are about: relaxed atomics
 * compile to plain moves (and a load then a store is no atomic update).
 */
static unsigned long long load(const void *p)
{
	return __atomic_load_n((const unsigned long long *)p, __ATOMIC_RELAXED);
}

static void store(void *p, unsigned long long v)
{
	__atomic_store_n((unsigned long long *)p, v, __ATOMIC_RELAXED);
}

static char *page_at(char *base, int i)
{
	return base + (size_t)i * page_size;
}

/* The first two nodes with memory this task may use. */
static bool pick_nodes(int *node)
{
	static struct nu_topo t;
	int n = 0;

	if (nu_topo_read(&t))
		return false;
	for (int i = 0; i < t.nr_nodes && n < 2; i++)
		if (t.node[i].has_memory && t.node[i].allowed)
			node[n++] = t.node[i].id;
	return n == 2;
}

static int allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

static bool knob_set(const char *name, long us)
{
	char path[128], val[32];

	snprintf(path, sizeof(path), KNOBS "%s", name);
	snprintf(val, sizeof(val), "%ld", us);
	return !nu_write_str(path, val);
}

/* Make ROCM sleep after its copy and after each switched mapping. */
static bool widen(struct __test_metadata *_metadata, long copy_us,
		  long switch_us)
{
	if (copy_us)
		copy_us = delay_us(copy_us);
	if (switch_us)
		switch_us = delay_us(switch_us);
	if (!knob_set("copy_delay_us", copy_us) ||
	    !knob_set("switch_delay_us", switch_us)) {
		TH_LOG("no " KNOBS " (CONFIG_MIGRATE_ROCM_DEBUG): window not widened");
		return false;
	}
	TH_LOG("window widened: copy_delay_us=%ld switch_delay_us=%ld",
	       copy_us, switch_us);
	return true;
}

static void counters_start(struct rocm_count *c0)
{
	c0->succ = nu_vmstat("migrate_rocm_success");
	c0->fall = nu_vmstat("migrate_rocm_fallback");
}

/* Print what ROCM did since counters_start(); the successes. */
static long long counters_report(struct __test_metadata *_metadata,
				 const struct rocm_count *c0)
{
	long long succ = nu_vmstat("migrate_rocm_success") - c0->succ;
	long long fall = nu_vmstat("migrate_rocm_fallback") - c0->fall;

	TH_LOG("migrate_rocm_success +%lld, migrate_rocm_fallback +%lld",
	       succ, fall);
	return succ;
}

static void add_kid(struct kids *k, pid_t pid)
{
	if (pid > 0 && k->nr < MAX_KIDS)
		k->pid[k->nr++] = pid;
}

static void kill_kids(struct kids *k)
{
	for (int i = 0; i < k->nr; i++) {
		kill(k->pid[i], SIGKILL);
		waitpid(k->pid[i], NULL, 0);
	}
	k->nr = 0;
}

/* Private anon memory without THP, every page written once. */
static char *anon_touched(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	for (size_t off = 0; off < len; off += page_size)
		store(p + off, 0);
	return p;
}

static void touch(char *p, int pages)
{
	for (int i = 0; i < pages; i++)
		load(page_at(p, i));
}

static bool gup_read(const void *addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
	       (ssize_t)len;
}

/*
 * A new file of @pages pages in @dir, word 0 of each page 1, written back
 * and unlinked: *@rw opened read-write, *@ro read-only (a read-only
 * shared mapping of tmpfs must come from a read-only open to be eligible).
 */
static int new_file(const char *dir, int pages, int *rw, int *ro)
{
	char path[PATH_MAX], *buf;
	int err = 0;

	snprintf(path, sizeof(path), "%s/rocm_race.XXXXXX", dir);
	*rw = mkstemp(path);
	if (*rw < 0)
		return -errno;
	*ro = open(path, O_RDONLY);
	if (*ro < 0)
		err = -errno;
	unlink(path);
	buf = calloc(1, page_size);
	if (!buf)
		err = -ENOMEM;
	else
		store(buf, 1);
	for (int i = 0; i < pages && !err; i++)
		if (pwrite(*rw, buf, page_size, (off_t)i * page_size) != page_size)
			err = -EIO;
	free(buf);
	if (!err && fsync(*rw))
		err = -errno;
	return err;
}

/* The thread that moves pages: all of them, by turns to each node. */
struct bouncer {
	pthread_t tid;
	char *base;
	int pages;
	int node[2];
	int cpu;
	void **addrs;
	int *dst, *status;
	unsigned long long rounds;
};

static bool bouncer_init(struct bouncer *b, char *base, int pages,
			 const int *node, int cpu)
{
	*b = (struct bouncer) {
		.base = base, .pages = pages, .cpu = cpu,
		.node = { node[0], node[1] },
		.addrs = calloc(pages, sizeof(*b->addrs)),
		.dst = calloc(pages, sizeof(*b->dst)),
		.status = calloc(pages, sizeof(*b->status)),
	};
	return b->addrs && b->dst && b->status;
}

static void bouncer_free(struct bouncer *b)
{
	free(b->addrs);
	free(b->dst);
	free(b->status);
}

static void bounce_once(struct bouncer *b)
{
	int node = b->node[++b->rounds & 1];

	for (int i = 0; i < b->pages; i++) {
		b->addrs[i] = page_at(b->base, i);
		b->dst[i] = node;
	}
	/* a page busy now stays where it is until the next round */
	nu_move_pages(0, b->pages, b->addrs, b->dst, b->status,
		      MPOL_MF_MOVE_ALL);
}

static void *bounce_fn(void *arg)
{
	struct bouncer *b = arg;

	nu_pin_cpu(b->cpu);
	while (running())
		bounce_once(b);
	return NULL;
}

FIXTURE_SETUP(rocm_race)
{
	page_size = sysconf(_SC_PAGESIZE);
	self->seconds = run_seconds();
	self->dir = getenv("ROCM_RACE_DIR") ?: "/tmp";
	self->old_rocm = -1;
	if (geteuid())
		NU_SKIP(return, "needs root");
	if (access(SYSCTL, W_OK))
		NU_SKIP(return, "no %s: kernel without CONFIG_MIGRATE_ROCM", SYSCTL);
	if (!pick_nodes(self->node))
		NU_SKIP(return, "needs two NUMA nodes with memory");
	self->old_rocm = nu_read_ll(SYSCTL);
	ASSERT_EQ(0, nu_write_str(SYSCTL, "1"));
	knob_set("copy_delay_us", 0);
	knob_set("switch_delay_us", 0);
	TH_LOG("nodes %d and %d, %g s, files in %s", self->node[0],
	       self->node[1], self->seconds, self->dir);
}

FIXTURE_TEARDOWN(rocm_race)
{
	char val[32];

	kill_kids(&self->kids);
	if (self->cg[0])
		nu_cg_remove(self->cg);
	knob_set("copy_delay_us", 0);
	knob_set("switch_delay_us", 0);
	if (self->old_rocm >= 0) {
		snprintf(val, sizeof(val), "%lld", self->old_rocm);
		nu_write_str(SYSCTL, val);
	}
}

/* fork_race */

#define FR_PAGES	1024
#define FR_BALLAST	(256UL << 20)
#define FR_WRITERS	2

/* Shared with the children. */
struct fr_shared {
	unsigned long long round[FR_WRITERS];	/* full passes published */
	unsigned long long bad;			/* impossible counts seen */
	unsigned long long page, word, val, lo, hi;	/* the first one */
};

struct fr_writer {
	pthread_t tid;
	int word;			/* the word of each page it owns */
	int cpu;
	char *buf;
	struct fr_shared *sh;
	unsigned long long *done;	/* increments made, per page */
};

static unsigned long long *fr_word(char *buf, int page, int word)
{
	return (unsigned long long *)page_at(buf, page) + word;
}

static void *fr_writer_fn(void *arg)
{
	struct fr_writer *w = arg;

	nu_pin_cpu(w->cpu);
	for (unsigned long long r = 1; running(); r++) {
		for (int p = 0; p < FR_PAGES; p++) {
			unsigned long long *x = fr_word(w->buf, p, w->word);

			store(x, load(x) + 1);
			w->done[p]++;
		}
		__atomic_store_n(&w->sh->round[w->word], r, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void fr_note(struct fr_shared *sh, int p, int t,
		    unsigned long long v, unsigned long long lo,
		    unsigned long long hi)
{
	if (__atomic_fetch_add(&sh->bad, 1, __ATOMIC_RELAXED))
		return;
	sh->page = p;
	sh->word = t;
	sh->val = v;
	sh->lo = lo;
	sh->hi = hi;
}

/*
 * In the child: each count must be one its writer went through, between
 * the passes done before the fork (@lo) and one more than done by now.
 */
static void fr_child(char *buf, struct fr_shared *sh,
		     const unsigned long long *lo)
{
	for (int t = 0; t < FR_WRITERS; t++) {
		unsigned long long hi = __atomic_load_n(&sh->round[t],
							__ATOMIC_ACQUIRE) + 1;

		for (int p = 0; p < FR_PAGES; p++) {
			unsigned long long v = load(fr_word(buf, p, t));

			if (v < lo[t] || v > hi)
				fr_note(sh, p, t, v, lo[t], hi);
		}
	}
	_exit(0);
}

static unsigned long long fr_fork_loop(char *buf, struct fr_shared *sh,
				       double until)
{
	unsigned long long forks = 0;

	while (nu_now() < until) {
		unsigned long long lo[FR_WRITERS];
		pid_t pid;

		for (int t = 0; t < FR_WRITERS; t++)
			lo[t] = __atomic_load_n(&sh->round[t], __ATOMIC_ACQUIRE);
		pid = fork();
		if (!pid)
			fr_child(buf, sh, lo);
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			break;
		forks++;
	}
	return forks;
}

/* Pages where a word is not what its writer made it; prints a few. */
static int fr_lost(struct __test_metadata *_metadata, char *buf,
		   const struct fr_writer *w)
{
	int lost = 0;

	for (int p = 0; p < FR_PAGES; p++) {
		bool bad = false;

		for (int t = 0; t < FR_WRITERS; t++) {
			unsigned long long v = load(fr_word(buf, p, t));

			if (v == w[t].done[p])
				continue;
			if (lost < REPORT_MAX)
				TH_LOG("page %d word %d is %llu, its writer counted %llu",
				       p, t, v, w[t].done[p]);
			bad = true;
		}
		lost += bad;
	}
	return lost;
}

static void fr_start(struct __test_metadata *_metadata, struct fr_writer *w,
		     char *buf, struct fr_shared *sh, const int *cpus, int nr)
{
	for (int t = 0; t < FR_WRITERS; t++) {
		w[t] = (struct fr_writer) {
			.word = t, .buf = buf, .sh = sh,
			.cpu = nr >= 3 ? cpus[1 + t] : -1,
			.done = calloc(FR_PAGES, sizeof(*w[t].done)),
		};
		ASSERT_NE(NULL, w[t].done);
		ASSERT_EQ(0, pthread_create(&w[t].tid, NULL, fr_writer_fn, &w[t]));
	}
}

TEST_F(rocm_race, fork_race)
{
	struct fr_writer w[FR_WRITERS];
	unsigned long long forks;
	struct fr_shared *sh;
	char *ballast, *buf;
	struct bouncer mig;
	int cpus[4], nr, lost;

	/* mmap() goes down: the buffer lies below, dup_mmap() copies it first */
	ballast = anon_touched(FR_BALLAST);
	buf = anon_touched((size_t)FR_PAGES * page_size);
	sh = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(NULL, ballast);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(MAP_FAILED, sh);
	if (buf > ballast)
		TH_LOG("the buffer maps above the ballast: fork's window is short");
	nr = allowed_cpus(cpus, 4);
	if (nr < 3)
		TH_LOG("%d CPUs: threads run unpinned", nr);
	ASSERT_TRUE(bouncer_init(&mig, buf, FR_PAGES, self->node,
				 nr >= 4 ? cpus[3] : -1));

	counters_start(&self->c0);
	fr_start(_metadata, w, buf, sh, cpus, nr);
	ASSERT_EQ(0, pthread_create(&mig.tid, NULL, bounce_fn, &mig));
	nu_pin_cpu(nr >= 3 ? cpus[0] : -1);
	forks = fr_fork_loop(buf, sh, nu_now() + self->seconds);
	stop_all();
	for (int t = 0; t < FR_WRITERS; t++)
		pthread_join(w[t].tid, NULL);
	pthread_join(mig.tid, NULL);

	lost = fr_lost(_metadata, buf, w);
	TH_LOG("%llu forks, %llu migration rounds, %llu passes per writer",
	       forks, mig.rounds, sh->round[0]);
	EXPECT_LT(0, counters_report(_metadata, &self->c0)) {
		TH_LOG("ROCM never took the fast path: this test proved nothing");
	}
	EXPECT_EQ(0ULL, sh->bad) {
		TH_LOG("a child saw page %llu word %llu = %llu, not in [%llu, %llu]",
		       sh->page, sh->word, sh->val, sh->lo, sh->hi);
	}
	EXPECT_EQ(0, lost) {
		TH_LOG("%d of %d pages lost writes", lost, FR_PAGES);
	}
	for (int t = 0; t < FR_WRITERS; t++)
		free(w[t].done);
	bouncer_free(&mig);
}

/*
 * A tracing instance that records ROCM's fallbacks (mm_migrate_rocm
 * with a reason other than "ok"); @inst is "" when tracefs is missing.
 */
#define ROCM_EVENT	"/events/migrate/mm_migrate_rocm/"

static bool inst_write(const char *inst, const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%.128s" ROCM_EVENT "%s", inst, file);
	return !nu_write_str(path, val);
}

static void fallback_trace_start(char *inst, size_t len)
{
	snprintf(inst, len, TRACEFS "rocm_race.%d", getpid());
	if (mkdir(inst, 0755)) {
		inst[0] = '\0';
		return;
	}
	if (!inst_write(inst, "filter", "reason != 0") ||
	    !inst_write(inst, "enable", "1")) {
		rmdir(inst);
		inst[0] = '\0';
	}
}

/* Does trace @line end with reason @why? */
static bool trace_reason_is(const char *line, const char *why)
{
	size_t l = strlen(line), w = strlen(why);

	return l >= w + 2 && line[l - w - 2] == ' ' && line[l - 1] == '\n' &&
	       !strncmp(line + l - w - 1, why, w);
}

/*
 * Fallbacks the instance saw for any of the NULL-terminated @reasons;
 * removes it; -1 without one.
 */
static long fallback_trace_count(char *inst, const char *const *reasons)
{
	char path[256], line[512];
	long n = 0;
	FILE *f;

	if (!inst[0])
		return -1;
	snprintf(path, sizeof(path), "%.128s/trace", inst);
	f = fopen(path, "r");
	if (!f)
		n = -1;
	while (f && fgets(line, sizeof(line), f))
		for (const char *const *r = reasons; *r; r++)
			n += trace_reason_is(line, *r);
	if (f)
		fclose(f);
	rmdir(inst);
	inst[0] = '\0';
	return n;
}

/* writable_sharer */

#define MM_PAGES	64

enum { CK_LOAD, CK_LOAD2, CK_GUP, CK_COW, CK_ODIRECT, NR_CK };

static const char * const ck_name[NR_CK] = {
	[CK_LOAD]	= "load",
	[CK_LOAD2]	= "load (second mapping)",
	[CK_GUP]	= "process_vm_readv",
	[CK_COW]	= "copy on write",
	[CK_ODIRECT]	= "O_DIRECT",
};

struct mm_ctx {
	struct __test_metadata *md;
	char *ro;		/* read-only, mapped before the writer's */
	char *ro2;		/* read-only, mapped after the writer's */
	char *pv;		/* private, copied on write */
	int fd_direct;		/* O_DIRECT scratch file, or -1 */
	unsigned long long back[NR_CK];	/* versions seen going backwards */
	unsigned long long passes[NR_CK];
	unsigned long long io_errors;
};

/* A version older than one @ck already saw: count it, print a few. */
static void mm_back(struct mm_ctx *c, int ck, int page,
		    unsigned long long seen, unsigned long long got)
{
	struct __test_metadata *_metadata = c->md;

	if (__atomic_fetch_add(&c->back[ck], 1, __ATOMIC_RELAXED) < REPORT_MAX)
		TH_LOG("%s: page %d went back from version %llu to %llu",
		       ck_name[ck], page, seen, got);
}

static void mm_see(struct mm_ctx *c, int ck, unsigned long long *last,
		   int page, unsigned long long v)
{
	if (v < last[page])
		mm_back(c, ck, page, last[page], v);
	else
		last[page] = v;
}

/* Child A: store versions 2, 3, ... into every page through its mapping. */
static void mm_writer(int fd, int go, int ready)
{
	char *rw, c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (read(go, &c, 1) != 1)
		_exit(1);
	rw = mmap(NULL, MM_PAGES * page_size, PROT_READ | PROT_WRITE,
		  MAP_SHARED, fd, 0);
	if (rw == MAP_FAILED)
		_exit(1);
	for (unsigned long long v = 2;; v++) {
		for (int p = 0; p < MM_PAGES; p++)
			store(page_at(rw, p), v);
		if (v == 2 && write(ready, "r", 1) != 1)
			_exit(1);
	}
}

static void *mm_reader_fn(void *arg)
{
	unsigned long long last[3][MM_PAGES] = { { 0 } };
	struct mm_ctx *c = arg;

	while (running()) {
		for (int p = 0; p < MM_PAGES; p++) {
			unsigned long long v;

			mm_see(c, CK_LOAD, last[0], p, load(page_at(c->ro, p)));
			mm_see(c, CK_LOAD2, last[1], p, load(page_at(c->ro2, p)));
			if (gup_read(page_at(c->ro, p), &v, sizeof(v)))
				mm_see(c, CK_GUP, last[2], p, v);
		}
		c->passes[CK_LOAD]++;
	}
	return NULL;
}

/* Read, copy on write, read the copy: never older than read before. */
static void mm_cow_page(struct mm_ctx *c, int p)
{
	char *priv = page_at(c->pv, p);
	unsigned long long seen, v;

	seen = load(page_at(c->ro, p));
	v = load(priv);
	if (v < seen)
		mm_back(c, CK_COW, p, seen, v);
	else
		seen = v;
	store(priv + sizeof(v), 1);	/* word 1 of the private page */
	v = load(priv);
	if (v < seen)
		mm_back(c, CK_COW, p, seen, v);
	madvise(priv, page_size, MADV_DONTNEED);
}

static void *mm_cow_fn(void *arg)
{
	struct mm_ctx *c = arg;

	while (running()) {
		for (int p = 0; p < MM_PAGES; p++)
			mm_cow_page(c, p);
		c->passes[CK_COW]++;
	}
	return NULL;
}

/* O_DIRECT out of the read-only mapping, read back. */
static bool mm_odirect_page(struct mm_ctx *c, int p, void *bounce)
{
	unsigned long long seen = load(page_at(c->ro, p)), v;

	if (pwrite(c->fd_direct, page_at(c->ro, p), page_size, 0) != page_size ||
	    pread(c->fd_direct, bounce, page_size, 0) != page_size) {
		struct __test_metadata *_metadata = c->md;

		TH_LOG("O_DIRECT: %s", strerror(errno));
		c->io_errors++;
		return false;
	}
	v = load(bounce);
	if (v < seen)
		mm_back(c, CK_ODIRECT, p, seen, v);
	return true;
}

static void *mm_odirect_fn(void *arg)
{
	struct mm_ctx *c = arg;
	void *bounce;

	if (c->fd_direct < 0 || posix_memalign(&bounce, page_size, page_size))
		return NULL;
	while (running()) {
		for (int p = 0; p < MM_PAGES; p++)
			if (!mm_odirect_page(c, p, bounce))
				goto out;
		c->passes[CK_ODIRECT]++;
	}
out:
	free(bounce);
	return NULL;
}

static int mm_open_direct(struct __test_metadata *_metadata, const char *dir)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/rocm_race.direct.%d", dir, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT, 0600);
	if (fd < 0) {
		TH_LOG("no O_DIRECT in %s (%s): that check is off", dir,
		       strerror(errno));
		return -1;
	}
	unlink(path);
	return fd;
}

/*
 * Fork the writer, which inherits @rw and maps it once told to: after
 * ctx->ro and ctx->pv, so that the rmap walk meets them first.  Then map
 * ctx->ro2, which comes after the writer's mapping.
 */
static void mm_spawn(struct __test_metadata *_metadata, struct kids *kids,
		     struct mm_ctx *c, int rw, int ro)
{
	int go[2], ready[2];
	pid_t pid;
	char ch;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	if (!pid)
		mm_writer(rw, go[0], ready[1]);
	ASSERT_LT(0, pid);
	add_kid(kids, pid);
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, read(ready[0], &ch, 1));
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
	c->ro2 = mmap(NULL, MM_PAGES * page_size, PROT_READ, MAP_SHARED, ro, 0);
	ASSERT_NE(MAP_FAILED, c->ro2);
	touch(c->ro2, MM_PAGES);
}

static void mm_map(struct __test_metadata *_metadata, struct mm_ctx *c,
		   int ro)
{
	c->ro = mmap(NULL, MM_PAGES * page_size, PROT_READ, MAP_SHARED, ro, 0);
	ASSERT_NE(MAP_FAILED, c->ro);
	c->pv = mmap(NULL, MM_PAGES * page_size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE, ro, 0);
	ASSERT_NE(MAP_FAILED, c->pv);
	touch(c->ro, MM_PAGES);
}

static void mm_report(struct __test_metadata *_metadata, struct mm_ctx *c,
		      unsigned long long rounds)
{
	unsigned long long total = 0;

	TH_LOG("%llu migration rounds; passes: read %llu, cow %llu, odirect %llu",
	       rounds, c->passes[CK_LOAD], c->passes[CK_COW],
	       c->passes[CK_ODIRECT]);
	for (int ck = 0; ck < NR_CK; ck++) {
		TH_LOG("%s: %llu versions went backwards", ck_name[ck], c->back[ck]);
		total += c->back[ck];
	}
	EXPECT_EQ(0ULL, total) {
		TH_LOG("readers saw stale data while the page moved");
	}
	EXPECT_EQ(0ULL, c->io_errors);
}

TEST_F(rocm_race, writable_sharer)
{
	static void *(*const fns[])(void *) = {
		mm_reader_fn, mm_cow_fn, mm_odirect_fn,
	};
	/* what the check walk says of a page a writer shares */
	static const char *const writer_reasons[] = {
		"shared_writable", "pte_write", "pte_dirty", "dirty", NULL,
	};
	struct mm_ctx c = { .md = _metadata };
	pthread_t tids[ARRAY_SIZE(fns)];
	struct bouncer mig;
	char inst[128];
	long refused;
	int rw, ro;

	ASSERT_EQ(0, new_file(self->dir, MM_PAGES, &rw, &ro)) {
		TH_LOG("cannot make a file in %s", self->dir);
	}
	mm_map(_metadata, &c, ro);
	mm_spawn(_metadata, &self->kids, &c, rw, ro);
	close(rw);
	c.fd_direct = mm_open_direct(_metadata, self->dir);
	ASSERT_TRUE(bouncer_init(&mig, c.ro, MM_PAGES, self->node, -1));

	widen(_metadata, 300, 300);
	fallback_trace_start(inst, sizeof(inst));
	counters_start(&self->c0);
	ASSERT_EQ(0, pthread_create(&mig.tid, NULL, bounce_fn, &mig));
	for (size_t i = 0; i < ARRAY_SIZE(fns); i++)
		ASSERT_EQ(0, pthread_create(&tids[i], NULL, fns[i], &c));
	nap(self->seconds);
	stop_all();
	for (size_t i = 0; i < ARRAY_SIZE(fns); i++)
		pthread_join(tids[i], NULL);
	pthread_join(mig.tid, NULL);
	kill_kids(&self->kids);

	counters_report(_metadata, &self->c0);
	refused = fallback_trace_count(inst, writer_reasons);
	mm_report(_metadata, &c, mig.rounds);
	if (refused < 0)
		TH_LOG("no tracefs: ROCM's refusals go unchecked");
	else
		TH_LOG("ROCM refused %ld times for the writer", refused);
	if (refused >= 0)
		EXPECT_GT(refused, 0) {
			TH_LOG("ROCM refused no page for its writer: the check walk went untested");
		}
	bouncer_free(&mig);
	if (c.fd_direct >= 0)
		close(c.fd_direct);
	close(ro);
}

/* memcg_undo */

#define MC_PAGES	512
#define MC_SHARERS	2
#define MC_SLACK	32	/* pages memory.current may keep (slab) */

struct mc_ctx {
	char *map;
	int fd;
	unsigned long long reads;
};

/* Leave, drain and reclaim the test cgroup; it must hold no more than at @start. */
static void cg_finish(struct __test_metadata *_metadata, char *cg,
		      long long start)
{
	long long end;
	int err;

	EXPECT_EQ(0, nu_cg_write(NU_CGROOT, "cgroup.procs", getpid()));
	/*
	 * Drains the per-CPU charge stocks, then reclaims what it can; unlike
	 * memory.max it does not end in an OOM report when slab remains.
	 */
	nu_cg_write(cg, "memory.high", 0);
	usleep(200000);
	end = nu_cg_read(cg, "memory.current");
	TH_LOG("memory.current: %lld bytes at the start, %lld after draining",
	       start, end);
	EXPECT_LE(end, start + MC_SLACK * page_size) {
		TH_LOG("the cgroup kept %lld bytes: a charge leaked", end - start);
	}
	err = nu_cg_rmdir(cg);
	EXPECT_EQ(0, err) {
		TH_LOG("rmdir %s: %s", cg, strerror(-err));
	}
	cg[0] = '\0';
}

static bool bad_page_line(const char *line)
{
	return strstr(line, "Bad page state") || strstr(line, "still charged");
}

/* Bad page reports in the kernel log, printing those after the first @skip. */
static int kmsg_bad_pages(struct __test_metadata *_metadata, int skip)
{
	int len = klogctl(SYSLOG_ACTION_SIZE_BUFFER, NULL, 0), n = 0;
	char *buf, *line, *save;

	buf = len > 0 ? malloc(len + 1) : NULL;
	if (!buf)
		return -1;
	len = klogctl(SYSLOG_ACTION_READ_ALL, buf, len);
	if (len < 0) {
		free(buf);
		return -1;
	}
	buf[len] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!bad_page_line(line))
			continue;
		if (n++ >= skip && n - skip <= 2 * REPORT_MAX)
			TH_LOG("kernel: %s", line);
	}
	free(buf);
	return n;
}

static void *mc_pread_fn(void *arg)
{
	unsigned int seed = (unsigned long)pthread_self();
	struct mc_ctx *c = arg;
	char b[64];

	while (running()) {
		off_t off = (off_t)(rand_r(&seed) % MC_PAGES) * page_size;

		if (pread(c->fd, b, sizeof(b), off) > 0)
			__atomic_add_fetch(&c->reads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *mc_gup_fn(void *arg)
{
	unsigned int seed = (unsigned long)pthread_self();
	struct mc_ctx *c = arg;
	char b[64];

	while (running()) {
		if (gup_read(page_at(c->map, rand_r(&seed) % MC_PAGES), b,
			     sizeof(b)))
			__atomic_add_fetch(&c->reads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void mc_sharer(void *arg)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	touch(arg, MC_PAGES);
}

/* The charged file, mapped here and by the sharers. */
static void mc_setup(struct __test_metadata *_metadata, const char *dir,
		     struct kids *kids, struct mc_ctx *c)
{
	pid_t pid[MC_SHARERS];
	int rw, got;

	ASSERT_EQ(0, new_file(dir, MC_PAGES, &rw, &c->fd)) {
		TH_LOG("cannot make a file in %s", dir);
	}
	close(rw);
	c->map = mmap(NULL, MC_PAGES * page_size, PROT_READ, MAP_SHARED,
		      c->fd, 0);
	ASSERT_NE(MAP_FAILED, c->map);
	touch(c->map, MC_PAGES);
	got = nu_fork_sharers(pid, MC_SHARERS, mc_sharer, c->map);
	for (int k = 0; k < MC_SHARERS; k++)
		add_kid(kids, pid[k]);
	ASSERT_EQ(MC_SHARERS, got);
}

/* Bounce the pages and compact until @until; how many compactions. */
static unsigned long long mc_churn(struct bouncer *b, double until)
{
	unsigned long long compactions = 0;

	while (nu_now() < until) {
		bounce_once(b);
		if (!nu_write_str(COMPACT, "1"))
			compactions++;
	}
	return compactions;
}

TEST_F(rocm_race, memcg_undo)
{
	static void *(*const fns[])(void *) = {
		mc_pread_fn, mc_pread_fn, mc_gup_fn,
	};
	pthread_t tids[ARRAY_SIZE(fns)];
	struct mc_ctx c = { .fd = -1 };
	unsigned long long compactions;
	char inst[128];
	long long start;
	struct bouncer mig;
	const char *why;
	bool widened;
	long races;
	int bad0, bad1;

	bad0 = kmsg_bad_pages(_metadata, INT_MAX);
	if (bad0 < 0)
		TH_LOG("cannot read the kernel log: bad pages go unchecked");
	ASSERT_TRUE(bouncer_init(&mig, NULL, MC_PAGES, self->node, -1));
	why = nu_cg_enter("rocm_race", self->cg, sizeof(self->cg));
	if (why)
		NU_SKIP(return, "%s", why);
	start = nu_cg_read(self->cg, "memory.current");
	mc_setup(_metadata, self->dir, &self->kids, &c);
	mig.base = c.map;

	widened = widen(_metadata, 200, 0);
	fallback_trace_start(inst, sizeof(inst));
	counters_start(&self->c0);
	for (size_t i = 0; i < ARRAY_SIZE(fns); i++)
		ASSERT_EQ(0, pthread_create(&tids[i], NULL, fns[i], &c));
	compactions = mc_churn(&mig, nu_now() + self->seconds);
	stop_all();
	for (size_t i = 0; i < ARRAY_SIZE(fns); i++)
		pthread_join(tids[i], NULL);
	counters_report(_metadata, &self->c0);
	races = fallback_trace_count(inst, (const char *const []){ "race", NULL });
	TH_LOG("%llu migration rounds, %llu compactions, %llu transient reads, %ld undone (race)",
	       mig.rounds, compactions, c.reads, races);
	/* the undo path must have run, or this test proved nothing */
	if (widened && races >= 0) {
		EXPECT_GT(races, 0) {
			TH_LOG("ROCM never undid a switch: the undo went untested");
		}
	}

	kill_kids(&self->kids);
	munmap(c.map, MC_PAGES * page_size);
	close(c.fd);
	cg_finish(_metadata, self->cg, start);
	bad1 = kmsg_bad_pages(_metadata, bad0);
	if (bad0 >= 0 && bad1 >= 0) {
		EXPECT_LE(bad1, bad0) {
			TH_LOG("%d new bad page lines in the kernel log", bad1 - bad0);
		}
	}
	bouncer_free(&mig);
}

int main(int argc, char **argv)
{
	int timeout = (int)(run_seconds() * 2) + 120;

	/* the harness's 30 s would cut a longer ROCM_RACE_SECONDS short */
	for (struct __fixture_metadata *f = __fixture_list; f; f = f->next)
		for (struct __test_metadata *t = f->tests; t; t = t->next)
			t->timeout = timeout;
	return test_harness_run(argc, argv);
}
