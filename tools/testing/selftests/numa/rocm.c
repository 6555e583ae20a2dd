// SPDX-License-Identifier: GPL-2.0
/*
 * rocm - read-only copy migration (vm.migrate_rocm).
 *
 * For each class of memory, a buffer with a known pattern is made on
 * node A and moved A -> B -> A ... with move_pages() while reader
 * threads on other CPUs read every page and check the pattern.
 *
 * Eligible classes (ext4 file mapped PROT_READ shared and private, tmpfs
 * file opened read-only, anon memory shared copy-on-write after fork,
 * KSM pages merged from two copies of the buffer)
 * must migrate through ROCM: migrate:mm_migrate_rocm reports "ok" for
 * the pages moved, readers never sleep on a migration entry (no
 * migrate:mm_migration_entry_wait from their threads) and the content
 * is intact.  The same run with vm.migrate_rocm = 0 is the control: it
 * shows that the readers do meet migration entries on the classic path,
 * i.e. that the check can fail.
 *
 * Ineligible classes (dirty ext4 page cache, anon memory exclusive to
 * one process, tmpfs mapped shared and writable, ext4 pages written
 * through a shared writable mapping, pages referenced by a pipe through
 * vmsplice) must fall back: the tracepoint gives a reason for every
 * attempt and no "ok", and the classic path still moves them (the
 * pipe's pages in the move after the pipe is drained) with the content
 * intact.  The events are counted for this test's threads only: the
 * system-wide counts (/proc/vmstat, the stage statistics) also take in
 * kcompactd and whatever else migrates meanwhile.  Periodic writeback
 * waits an hour while the dirty ext4 classes run
 * (vm.dirty_writeback_centisecs, restored at exit): writeback would clean
 * their pages and its references fail moves.  Should their pages be
 * clean at the end anyway (/proc/kpageflags), their migrated check SKIPs
 * and their path check asks only that ROCM moved none of them.
 *
 * ext4 classes need --ext4-dir; rocm_ext4.sh sets up a loop device and
 * runs them alone (--ext4-only).
 *
 * Eligible classes also check what a moved folio looks like while it is
 * live in its mappings (and the page cache) but not yet unlocked: with
 * CONFIG_MIGRATE_ROCM_DEBUG (and migrate_rocm/check_moved, set here and
 * restored at exit) the kernel looks at each one once the
 * batch's switches are flushed and counts those with something in
 * ->private but no PG_private (migrate_rocm/moved_stray_private), which
 * a reader without the folio lock would take for buffer heads.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kernel-page-flags.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "../kselftest.h"
#include "numa_util.h"

#define SYSCTL		"/proc/sys/vm/migrate_rocm"
#define WB_SYSCTL	"/proc/sys/vm/dirty_writeback_centisecs"
#define DBG_CHECKED	"/sys/kernel/debug/migrate_rocm/moved_checked"
#define DBG_STRAY	"/sys/kernel/debug/migrate_rocm/moved_stray_private"
#define DBG_CHECK	"/sys/kernel/debug/migrate_rocm/check_moved"
#define PFN_MASK	((1ULL << 55) - 1)
#define ROCM_EVENT	"migrate/mm_migrate_rocm"
#define WAIT_EVENT	"migrate/mm_migration_entry_wait"
#define NR_READERS	2
#define NR_KIDS		2
#define PATTERN(i)	(0xc0c0000000000000ULL ^ (uint64_t)(i))

enum cls {
	C_EXT4_SHARED, C_EXT4_PRIVATE, C_TMPFS_RO, C_ANON_FORK, C_KSM,
	C_EXT4_DIRTY, C_ANON_EXCL, C_TMPFS_SHARED_RW, C_EXT4_WRITTEN, C_PIPE_REF,
	NR_CLS
};

static const struct {
	const char *name;
	bool eligible;
	bool ext4;
} cls_info[NR_CLS] = {
	[C_EXT4_SHARED]		= { "ext4_shared_ro", true, true },
	[C_EXT4_PRIVATE]	= { "ext4_private_ro", true, true },
	[C_TMPFS_RO]		= { "tmpfs_ro", true, false },
	[C_ANON_FORK]		= { "anon_fork", true, false },
	[C_KSM]			= { "ksm", true, false },
	[C_EXT4_DIRTY]		= { "ext4_dirty", false, true },
	[C_ANON_EXCL]		= { "anon_exclusive", false, false },
	[C_TMPFS_SHARED_RW]	= { "tmpfs_shared_rw", false, false },
	[C_EXT4_WRITTEN]	= { "ext4_written_pte", false, true },
	[C_PIPE_REF]		= { "pipe_ref", false, false },
};

static struct {
	unsigned long pages;
	int rounds;
	const char *ext4_dir;
	const char *only;
	bool ext4_only;
} opt = { .pages = 256, .rounds = 2 };

static long page_size;
static int node_a = -1, node_b = -1;
static int cpu_mig = -1, cpu_read[NR_READERS];

/* One test buffer and what holds it. */
struct buf {
	char *p;
	size_t pages;
	int fd;
	pid_t kids[NR_KIDS];
	int pipe[2];
	char *twin;		/* KSM: the second copy merged with p */
};

struct reader {
	pthread_t tid;
	pid_t task;		/* its kernel tid, for trace filters; 0 until set */
	int cpu;
	const struct buf *b;
	const bool *stop;
	uint64_t bad, reads;
};

static uint64_t load_word(const char *p)
{
	return __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
}

static void *reader_fn(void *arg)
{
	struct reader *r = arg;

	__atomic_store_n(&r->task, gettid(), __ATOMIC_RELEASE);
	nu_pin_cpu(r->cpu);
	while (!__atomic_load_n(r->stop, __ATOMIC_RELAXED))
		for (size_t i = 0; i < r->b->pages; i++) {
			uint64_t v = load_word(r->b->p + i * page_size);

			if (v != PATTERN(i))
				r->bad++;
			r->reads++;
		}
	return NULL;
}

static void bind_to(int node)
{
	unsigned long mask[2] = { 0, 0 };

	mask[node / 64] = 1UL << (node % 64);
	nu_set_mempolicy(MPOL_BIND, mask, 8 * sizeof(mask));
}

static void touch(const struct buf *b)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < b->pages; i++)
		sum += load_word(b->p + i * page_size);
	(void)sum;
}

static void touch_cb(void *arg)
{
	touch(arg);
}

/* Write the pattern to a new file in @dir; its fd, or -1 with @why. */
static int pattern_file(const char *dir, size_t pages, bool sync, char *why)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/rocm.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		sprintf(why, "cannot create a file in %s: %s", dir, strerror(errno));
		return -1;
	}
	unlink(path);
	for (size_t i = 0; i < pages; i++) {
		uint64_t w = PATTERN(i);

		if (pwrite(fd, &w, sizeof(w), i * page_size) != sizeof(w) ||
		    ftruncate(fd, (i + 1) * page_size)) {
			sprintf(why, "cannot write the file: %s", strerror(errno));
			close(fd);
			return -1;
		}
	}
	if (sync) {
		/* clean, and read back without buffer heads */
		if (fsync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) {
			sprintf(why, "fsync/fadvise: %s", strerror(errno));
			close(fd);
			return -1;
		}
	}
	return fd;
}

#define KSM_DIR	"/sys/kernel/mm/ksm/"

/* Make a twin of the buffer and let ksmd merge the two. */
static bool ksm_merge(struct buf *b, char *why)
{
	size_t bytes = b->pages * page_size;
	long long merged = -1;

	if (access(KSM_DIR "run", W_OK)) {
		snprintf(why, 256, "no KSM (CONFIG_KSM)");
		return false;
	}
	b->twin = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->twin == MAP_FAILED) {
		b->twin = NULL;
		snprintf(why, 256, "mmap: %s", strerror(errno));
		return false;
	}
	madvise(b->twin, bytes, MADV_NOHUGEPAGE);
	memcpy(b->twin, b->p, bytes);
	if (madvise(b->p, bytes, MADV_MERGEABLE) ||
	    madvise(b->twin, bytes, MADV_MERGEABLE)) {
		snprintf(why, 256, "MADV_MERGEABLE: %s", strerror(errno));
		return false;
	}
	nu_write_str(KSM_DIR "pages_to_scan", "4096");
	nu_write_str(KSM_DIR "sleep_millisecs", "10");
	nu_write_str(KSM_DIR "run", "1");
	for (int i = 0; i < 300; i++) {
		/* this process's merged pages (the global counts lag) */
		merged = nu_ksm_merged();
		if (merged >= (long long)b->pages) {
			/* merged pages stay merged; a scanning ksmd holds references */
			nu_write_str(KSM_DIR "run", "0");
			return true;
		}
		usleep(100000);
	}
	snprintf(why, 256, "ksmd merged only %lld of %zu pages in 30 s", merged, b->pages);
	return false;
}

/* Build the buffer of class @c on node A; false with @why if not here. */
static bool make_buf(enum cls c, struct buf *b, char *why)
{
	size_t bytes = opt.pages * page_size;
	const char *tmp = getenv("TMPDIR") ?: "/tmp";
	int prot = PROT_READ, flags = MAP_SHARED, fd = -1;

	memset(b, 0, sizeof(*b));
	b->pages = opt.pages;
	b->fd = -1;
	b->pipe[0] = -1;
	b->pipe[1] = -1;
	if (cls_info[c].ext4 && !opt.ext4_dir) {
		snprintf(why, 256, "no --ext4-dir: run by rocm_ext4.sh");
		return false;
	}
	nu_pin_cpu(cpu_read[0]);
	bind_to(node_a);
	switch (c) {
	case C_EXT4_SHARED:
	case C_EXT4_PRIVATE:
	case C_EXT4_DIRTY:
	case C_EXT4_WRITTEN:
		fd = pattern_file(opt.ext4_dir, b->pages, c != C_EXT4_DIRTY, why);
		if (c == C_EXT4_PRIVATE)
			flags = MAP_PRIVATE;
		if (c == C_EXT4_WRITTEN)
			prot |= PROT_WRITE;
		break;
	case C_TMPFS_RO:
	case C_TMPFS_SHARED_RW: {
		int wfd = pattern_file(tmp, b->pages, false, why);
		char path[64];

		if (wfd < 0)
			break;
		if (c == C_TMPFS_SHARED_RW) {
			fd = wfd;
			prot |= PROT_WRITE;
			break;
		}
		/* the same file, opened read-only */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", wfd);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			sprintf(why, "reopen: %s", strerror(errno));
		close(wfd);
		break;
	}
	default:
		break;
	}
	if (cls_info[c].ext4 || c == C_TMPFS_RO || c == C_TMPFS_SHARED_RW) {
		if (fd < 0)
			goto fail;
		b->fd = fd;
		b->p = mmap(NULL, bytes, prot, flags, fd, 0);
	} else {
		b->p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (b->p == MAP_FAILED) {
		sprintf(why, "mmap: %s", strerror(errno));
		b->p = NULL;
		goto fail;
	}
	madvise(b->p, bytes, MADV_NOHUGEPAGE);
	/*
	 * A file faults in a page at a time: readahead makes large folios
	 * of 7.3's ext4 page cache, which ROCM leaves to the classic path
	 * (ROCM_LARGE); the classes are of small folios on both bases.
	 */
	if (b->fd >= 0)
		madvise(b->p, bytes, MADV_RANDOM);
	if (c == C_ANON_FORK || c == C_ANON_EXCL || c == C_PIPE_REF || c == C_KSM) {
		for (size_t i = 0; i < b->pages; i++)
			*(uint64_t *)(b->p + i * page_size) = PATTERN(i);
	} else if (c == C_EXT4_WRITTEN) {
		/* write through the shared mapping: writable, dirty PTEs */
		for (size_t i = 0; i < b->pages; i++)
			__atomic_store_n((uint64_t *)(b->p + i * page_size), PATTERN(i),
					 __ATOMIC_RELAXED);
	} else {
		touch(b);
	}
	if (c == C_ANON_FORK || c == C_PIPE_REF) {
		int got = nu_fork_sharers(b->kids, NR_KIDS, touch_cb, b);

		if (got < NR_KIDS) {
			sprintf(why, "only %d of %d children mapped the buffer", got, NR_KIDS);
			goto fail;
		}
	}
	if (c == C_KSM && !ksm_merge(b, why))
		goto fail;
	if (c == C_PIPE_REF) {
		/* the pipe holds a reference to every page it was given */
		if (pipe(b->pipe) ||
		    fcntl(b->pipe[1], F_SETPIPE_SZ, (int)(b->pages * page_size)) < 0) {
			sprintf(why, "pipe of %zu pages: %s", b->pages, strerror(errno));
			goto fail;
		}
		for (size_t i = 0; i < b->pages; i++) {
			struct iovec iov = { b->p + i * page_size, 64 };

			if (vmsplice(b->pipe[1], &iov, 1, 0) != 64) {
				sprintf(why, "vmsplice: %s", strerror(errno));
				goto fail;
			}
		}
	}
	nu_set_mempolicy(MPOL_DEFAULT, NULL, 0);
	return true;
fail:
	nu_set_mempolicy(MPOL_DEFAULT, NULL, 0);
	return false;
}

static void drain_pipe(struct buf *b)
{
	char sink[4096];

	if (b->pipe[1] >= 0)
		close(b->pipe[1]);
	b->pipe[1] = -1;
	while (b->pipe[0] >= 0 && read(b->pipe[0], sink, sizeof(sink)) > 0)
		;
	if (b->pipe[0] >= 0)
		close(b->pipe[0]);
	b->pipe[0] = -1;
}

static void free_buf(struct buf *b)
{
	for (int k = 0; k < NR_KIDS; k++)
		if (b->kids[k] > 0) {
			kill(b->kids[k], SIGKILL);
			waitpid(b->kids[k], NULL, 0);
		}
	drain_pipe(b);
	if (b->twin) {
		/* unmerge now, so the next buffer's merges are counted afresh */
		madvise(b->p, b->pages * page_size, MADV_UNMERGEABLE);
		madvise(b->twin, b->pages * page_size, MADV_UNMERGEABLE);
		munmap(b->twin, b->pages * page_size);
		nu_write_str(KSM_DIR "run", "0");
	}
	if (b->p)
		munmap(b->p, b->pages * page_size);
	if (b->fd >= 0)
		close(b->fd);
}

/* Move every page of @b to @node if @move; pages on @node then, or -1. */
static long move_count(const struct buf *b, int node, bool move)
{
	void **addrs = calloc(b->pages, sizeof(*addrs));
	int *nodes = calloc(b->pages, sizeof(*nodes));
	int *status = calloc(b->pages, sizeof(*status));
	long on = -1;

	if (!addrs || !nodes || !status)
		goto out;
	for (size_t i = 0; i < b->pages; i++) {
		addrs[i] = b->p + i * page_size;
		nodes[i] = node;
	}
	if (move &&
	    nu_move_pages(0, b->pages, addrs, nodes, status, MPOL_MF_MOVE_ALL) < 0)
		goto out;
	/* ask again: a page that failed reports -errno, not its node */
	if (nu_move_pages(0, b->pages, addrs, NULL, status, 0) < 0)
		goto out;
	on = 0;
	for (size_t i = 0; i < b->pages; i++)
		on += status[i] == node;
out:
	free(addrs);
	free(nodes);
	free(status);
	return on;
}

static long move_all(const struct buf *b, int node)
{
	return move_count(b, node, true);
}

/* One move_pages() call of a run, as the call itself reported it. */
struct call_stat {
	long moved;		/* pages not on the target before, on it after */
	long asked;		/* pages not on the target before */
	long left;		/* returned: not migrated or not tried (see below) */
	long busy, again, nomem, acces, other;	/* the call's -errno statuses */
	long long fail;		/* pgmigrate_fail delta over the call */
};

/* Query (@node < 0) or move every page of @b; per-page status in @st. */
static long call_status(const struct buf *b, void **addrs, int *nodes,
			int node, int *st)
{
	for (size_t i = 0; i < b->pages; i++) {
		addrs[i] = b->p + i * page_size;
		nodes[i] = node;
	}
	return nu_move_pages(0, b->pages, addrs, node < 0 ? NULL : nodes, st,
			     node < 0 ? 0 : MPOL_MF_MOVE_ALL);
}

static void count_status(struct call_stat *cs, int st)
{
	if (st >= 0)
		return;
	if (st == -EBUSY)
		cs->busy++;
	else if (st == -EAGAIN)
		cs->again++;
	else if (st == -ENOMEM)
		cs->nomem++;
	else if (st == -EACCES)
		cs->acces++;
	else
		cs->other++;
}

/*
 * Move every page of @b to @node in one call and keep what that call
 * said (a page queued but not migrated keeps the status it got when it
 * was queued, the target: only the call's return counts such pages):
 * which pages it moved (on another node before, on @node after) and why
 * the others stayed.  -1 if a system call failed.
 */
static int move_call(const struct buf *b, int node, struct call_stat *cs)
{
	int *before = calloc(b->pages, sizeof(int));
	int *st = calloc(b->pages, sizeof(int));
	int *nodes = calloc(b->pages, sizeof(int));
	void **addrs = calloc(b->pages, sizeof(void *));
	long long f0 = nu_vmstat("pgmigrate_fail");
	int ret = -1;

	memset(cs, 0, sizeof(*cs));
	if (!before || !st || !nodes || !addrs ||
	    call_status(b, addrs, nodes, -1, before) < 0)
		goto out;
	cs->left = call_status(b, addrs, nodes, node, st);
	if (cs->left < 0)
		goto out;
	/*
	 * move_pages() migrates what it queued whenever it meets a page
	 * already on the target (one an earlier call left behind), and a
	 * single failure there ends the call: it returns the failures plus
	 * every page after that point, which it never tried.  Move those
	 * once more, as a caller of move_pages() must.
	 */
	if (cs->left > 0 && call_status(b, addrs, nodes, node, st) < 0)
		goto out;
	for (size_t i = 0; i < b->pages; i++)
		count_status(cs, st[i]);
	cs->fail = nu_vmstat("pgmigrate_fail") - f0;
	if (call_status(b, addrs, nodes, -1, st) < 0)
		goto out;
	for (size_t i = 0; i < b->pages; i++) {
		cs->asked += before[i] != node;
		cs->moved += before[i] != node && st[i] == node;
	}
	ret = 0;
out:
	free(before);
	free(st);
	free(nodes);
	free(addrs);
	return ret;
}

static long pages_on(const struct buf *b, int node)
{
	return move_count(b, node, false);
}

/* What one run of a class measured. */
struct run {
	bool ok;		/* it ran */
	char why[256];		/* why not */
	long long success;	/* "ok" traced for the migrating thread, -1 unknown */
	long long fallback;	/* its other ROCM attempts, -1 unknown */
	long long vm_success, vm_fallback;	/* /proc/vmstat deltas, all tasks */
	long long waits;	/* readers' sleeps on migration entries, -1 unknown */
	long moved;		/* pages each call moved to its target, summed */
	long asked;		/* pages each call had to move, summed */
	int short_calls;	/* calls that moved less than all, logged */
	long drained_on_a;	/* pipe_ref: pages on A once the pipe let go */
	long drained;		/* pipe_ref: pages on B after the next move */
	uint64_t bad;		/* pattern mismatches seen or left */
	uint64_t reads;
	char whys[256];		/* fallback reasons traced, "" if none */
	long cleaned;		/* dirty pages written back meanwhile, -1 unknown */
	long long live_checked;	/* moved folios the kernel looked at, -1 unknown */
	long long live_stray;	/* of them with a stray ->private (all tasks) */
};

/* What mm_migrate_rocm prints for an attempt: ok, or why it fell back. */
static const char * const why_names[] = {
	"ok", "off", "large", "not_lru", "hugetlb", "writeback", "dirty", "pinned",
	"refs", "swapcache", "mlocked", "private", "mapping", "anon_exclusive",
	"pte_write", "pte_dirty", "shared_writable", "pmd", "changed", "race",
	"copy_failed", "flush_pending", "written", "pin_sealed", "dst_held",
};

#define NR_WHYS	ARRAY_SIZE(why_names)
#define WHY_OK	0
/* not an attempt: a second line for an undo whose copy someone holds */
#define WHY_DST_HELD	(NR_WHYS - 1)
/* nu_event slots after the reasons': every ROCM attempt, readers' sleeps */
#define EV_ALL	NR_WHYS
#define EV_WAIT	(NR_WHYS + 1)

/* The moves of one run: 2 * rounds calls, A -> B -> A ... */
struct moves {
	const struct buf *b;
	struct run *r;
	bool ran;
};

/*
 * A call that left pages behind: what each page's status said, and how
 * many failures the kernel counted.  The first few of a run are printed
 * (in the child that runs the class: ksft_print_msg() is line-buffered).
 */
static void log_short_call(struct moves *m, int i, int node,
			   const struct call_stat *cs)
{
	if (m->r->short_calls++ >= 4)
		return;
	ksft_print_msg("call %d (-> node %d): moved %ld of %zu, %ld not migrated\n",
		       i, node, cs->moved, m->b->pages, cs->left);
	ksft_print_msg("call %d: pgmigrate_fail +%lld (all tasks)\n", i, cs->fail);
	ksft_print_msg("call %d: status -EBUSY %ld -EAGAIN %ld -ENOMEM %ld -EACCES %ld other %ld\n",
		       i, cs->busy, cs->again, cs->nomem, cs->acces, cs->other);
}

static long do_moves(void *arg)
{
	struct moves *m = arg;

	m->ran = true;
	for (int i = 0; i < 2 * opt.rounds; i++) {
		int node = i & 1 ? node_a : node_b;
		struct call_stat cs;

		if (move_call(m->b, node, &cs) < 0) {
			sprintf(m->r->why, "move_pages: %s", strerror(errno));
			return -1;
		}
		m->r->moved += cs.moved;
		m->r->asked += cs.asked;
		if (cs.moved < cs.asked)
			log_short_call(m, i, node, &cs);
	}
	return 0;
}

/*
 * A trace filter for the reader threads, "common_pid == T || ...";
 * waits until each has said its tid.
 */
static void readers_filter(const struct reader *rd, char *f, size_t len)
{
	size_t at = 0;

	for (int i = 0; i < NR_READERS; i++) {
		pid_t t;

		while (!(t = __atomic_load_n(&rd[i].task, __ATOMIC_ACQUIRE)))
			sched_yield();
		at += snprintf(f + at, len - at, "%scommon_pid == %d",
			       i ? " || " : "", t);
	}
}

/* The traced counts into @r: successes, fallbacks and their reasons. */
static void tally(const struct nu_event *ev, int n, struct run *r)
{
	size_t len = 0;

	r->success = ev[WHY_OK].count;
	/* every attempt that was not "ok", whatever its reason's name */
	r->fallback = ev[EV_ALL].count - r->success - ev[WHY_DST_HELD].count;
	for (size_t i = WHY_OK + 1; i < NR_WHYS && len < sizeof(r->whys) - 32; i++)
		if (ev[i].count)
			len += snprintf(r->whys + len, sizeof(r->whys) - len,
					" %s=%ld", why_names[i], ev[i].count);
	if (n > EV_WAIT)
		r->waits = ev[EV_WAIT].count;
}

/*
 * The moves, traced: this thread's ROCM attempts by reason and, where
 * the kernel has the event (CONFIG_MIGRATE_STAGES), the readers' sleeps
 * on migration entries.  Only these threads count: kcompactd or another
 * test migrating meanwhile must not pass or fail the checks.  The
 * counts stay -1 without tracefs or the ROCM event.
 */
static void traced_moves(const struct buf *b, const struct reader *rd,
			 struct run *r)
{
	struct moves m = { .b = b, .r = r };
	struct nu_event ev[EV_WAIT + 1];
	char match[NR_WHYS][24];
	int n = EV_ALL + 1;
	long ret;

	for (size_t i = 0; i <= EV_ALL; i++) {
		ev[i] = (struct nu_event){ .name = ROCM_EVENT };
		snprintf(ev[i].filter, sizeof(ev[i].filter), "common_pid == %d",
			 gettid());
		/* EV_ALL matches every line */
		if (i < NR_WHYS) {
			snprintf(match[i], sizeof(match[i]), " %s", why_names[i]);
			ev[i].match = match[i];
		}
	}
	if (nu_trace_has(WAIT_EVENT)) {
		ev[n] = (struct nu_event){ .name = WAIT_EVENT };
		readers_filter(rd, ev[n].filter, sizeof(ev[n].filter));
		n++;
	}
	r->success = -1;
	r->fallback = -1;
	r->waits = -1;
	if (!nu_trace_has(ROCM_EVENT) ||
	    nu_trace_count(ev, n, do_moves, &m, &ret)) {
		if (!m.ran)
			do_moves(&m);
		return;
	}
	tally(ev, n, r);
}

/* Is the page at @p dirty?  -1 when pagemap/kpageflags cannot tell. */
static int page_dirty(int pagemap, int kflags, const char *p)
{
	uint64_t e, flags;

	if (pread(pagemap, &e, sizeof(e), (uintptr_t)p / page_size * sizeof(e)) !=
	    sizeof(e) || !(e >> 63) || !(e & PFN_MASK))
		return -1;
	if (pread(kflags, &flags, sizeof(flags), (e & PFN_MASK) * sizeof(flags)) !=
	    sizeof(flags))
		return -1;
	return !!(flags & (1ULL << KPF_DIRTY));
}

/*
 * How many of @b's pages are clean, -1 if unknown.  The dirty classes'
 * pages stay dirty unless writeback cleans them, and writeback's own
 * references on the folios fail moves meanwhile.
 */
static long clean_pages(const struct buf *b)
{
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kflags = open("/proc/kpageflags", O_RDONLY);
	long clean = pagemap < 0 || kflags < 0 ? -1 : 0;

	for (size_t i = 0; i < b->pages && clean >= 0; i++) {
		int d = page_dirty(pagemap, kflags, b->p + i * page_size);

		clean = d < 0 ? -1 : clean + !d;
	}
	if (pagemap >= 0)
		close(pagemap);
	if (kflags >= 0)
		close(kflags);
	return clean;
}

static bool dirty_class(enum cls c)
{
	return c == C_EXT4_DIRTY || c == C_EXT4_WRITTEN;
}

#define BALANCING	"/proc/sys/kernel/numa_balancing"

/* Settings this test changes, restored at exit (rocm_ext4.sh: on signals) */
static char wb_was[32], nb_was[16], ck_was[8];

static void restore_settings(void)
{
	if (ck_was[0])
		nu_write_str(DBG_CHECK, ck_was);
	if (wb_was[0])
		nu_write_str(WB_SYSCTL, wb_was);
	if (nb_was[0])
		nu_write_str(BALANCING, nb_was);
}

/*
 * No periodic writeback while this runs: it would clean the dirty
 * classes' pages.  Not 0, which disables it: the first dirty inode of
 * a bdi then wakes its flusher at once (wb_wakeup_delayed()), whose
 * background pass writes back a bdi that has no share of the recent
 * writeout, like a fresh loop device's.  An hour instead; writing the
 * new value wakes the flushers once, before this test dirties a page.
 */
static void stop_writeback(void)
{
	if (nu_read_str(WB_SYSCTL, wb_was, sizeof(wb_was)) <= 0)
		return;
	nu_write_str(WB_SYSCTL, "360000");
}

/*
 * pipe_ref: once the pipe lets go, the classic path must move the pages
 * it held on node A, in this one call.
 */
static void move_drained(struct buf *b, struct run *r)
{
	drain_pipe(b);
	nu_write_str(SYSCTL, "0");
	r->drained_on_a = pages_on(b, node_a);
	r->drained = move_all(b, node_b);
}

static void run_class(enum cls c, bool rocm, struct run *r)
{
	struct reader rd[NR_READERS];
	bool stop = false;
	struct buf b;
	long long s0, f0, c0, x0;

	memset(r, 0, sizeof(*r));
	if (!make_buf(c, &b, r->why)) {
		free_buf(&b);
		return;
	}
	nu_write_str(SYSCTL, rocm ? "1" : "0");
	for (int i = 0; i < NR_READERS; i++) {
		rd[i] = (struct reader){ .cpu = cpu_read[i], .b = &b, .stop = &stop };
		pthread_create(&rd[i].tid, NULL, reader_fn, &rd[i]);
	}
	usleep(20000);
	nu_pin_cpu(cpu_mig);
	s0 = nu_vmstat("migrate_rocm_success");
	f0 = nu_vmstat("migrate_rocm_fallback");
	c0 = nu_read_ll(DBG_CHECKED);
	x0 = nu_read_ll(DBG_STRAY);
	traced_moves(&b, rd, r);
	r->vm_success = nu_vmstat("migrate_rocm_success") - s0;
	r->vm_fallback = nu_vmstat("migrate_rocm_fallback") - f0;
	r->live_checked = c0 < 0 ? -1 : nu_read_ll(DBG_CHECKED) - c0;
	r->live_stray = x0 < 0 ? -1 : nu_read_ll(DBG_STRAY) - x0;
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
	for (int i = 0; i < NR_READERS; i++) {
		pthread_join(rd[i].tid, NULL);
		r->bad += rd[i].bad;
		r->reads += rd[i].reads;
	}
	if (c == C_PIPE_REF)
		move_drained(&b, r);
	for (size_t i = 0; i < b.pages; i++)
		r->bad += *(uint64_t *)(b.p + i * page_size) != PATTERN(i);
	r->cleaned = dirty_class(c) ? clean_pages(&b) : 0;
	nu_write_str(SYSCTL, "0");
	free_buf(&b);
	r->ok = !r->why[0];
}

/*
 * KSM merges a process's second buffer only very slowly once it has
 * merged and unmerged one, so each KSM run gets a fresh process.
 */
static void run_fresh(enum cls c, bool rocm, struct run *r)
{
	struct run *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;

	if (c != C_KSM || shared == MAP_FAILED) {
		if (shared != MAP_FAILED)
			munmap(shared, sizeof(*shared));
		run_class(c, rocm, r);
		return;
	}
	memset(shared, 0, sizeof(*shared));
	pid = fork();
	if (!pid) {
		run_class(c, rocm, shared);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, NULL, 0) != pid) {
		memset(r, 0, sizeof(*r));
		snprintf(r->why, sizeof(r->why), "fork/wait: %s", strerror(errno));
	} else {
		*r = *shared;
	}
	munmap(shared, sizeof(*shared));
}

/*
 * Did the pages reach the target?  pipe_ref: in the one move after the
 * pipe let go, from node A where the pipe held them; the moves before
 * would count them as arrived on every call back to A.  Otherwise a page
 * counts only in a call that moved it, and is asked of a call only if it
 * was not on that call's target already (one a call left behind is
 * neither "reached" nor missed again by the next call back).  1 page in
 * 200 may miss a call: a reference held for a moment (the per-CPU batch
 * that holds a folio a reader on another CPU touched, a page-cache
 * lookup) makes the classic path give up after its retries; arm64 TCG
 * runs show about one such page per call ("1 not migrated"), x86 none.
 * A short call's counts are printed.
 */
static void check_migrated(enum cls c, const struct run *r)
{
	const char *n = cls_info[c].name;
	long all = opt.pages;

	if (r->cleaned > 0) {
		ksft_print_msg("%s: writeback cleaned %ld of %lu dirty pages during the run\n",
			       n, r->cleaned, opt.pages);
		ksft_test_result_skip("%s.migrated: writeback ran (its references fail moves)\n",
				      n);
	} else if (c == C_PIPE_REF) {
		ksft_test_result(r->drained_on_a == all && r->drained == all,
				 "%s.migrated (drained: %ld of %ld pages on node %d, then %ld on node %d)\n",
				 n, r->drained_on_a, all, node_a, r->drained, node_b);
	} else {
		ksft_test_result(r->moved * 200 >= r->asked * 199,
				 "%s.migrated (%ld of %ld pages reached the target)\n",
				 n, r->moved, r->asked);
	}
}

/*
 * Which path the migrating thread's attempts took, as traced; the same
 * allowance for a transient reference as above, no more.
 */
static void check_path(enum cls c, const struct run *r)
{
	const char *n = cls_info[c].name;
	long long want = (long long)opt.pages * 2 * opt.rounds;

	if (r->success < 0)
		ksft_test_result_skip("%s.path: cannot trace %s (tracefs)\n",
				      n, ROCM_EVENT);
	/* cleaned, the folios keep their buffer heads: still not ROCM's */
	else if (r->cleaned > 0)
		ksft_test_result(!r->success,
				 "%s.path: classic after writeback (success %lld, fallback %lld)\n",
				 n, r->success, r->fallback);
	else if (cls_info[c].eligible)
		ksft_test_result(r->success * 200 >= want * 199 &&
				 r->fallback * 200 <= want,
				 "%s.path: rocm (success %lld, fallback %lld, want %lld)\n",
				 n, r->success, r->fallback, want);
	else
		ksft_test_result(!r->success && r->fallback >= want,
				 "%s.path: classic (success %lld, fallback %lld, want %lld)\n",
				 n, r->success, r->fallback, want);
}

/*
 * Eligible classes: the moved folios carried nothing in ->private while
 * they were live (counted by the kernel for all tasks: a stray one of
 * any task fails this too, as it should).
 */
static void check_live_private(enum cls c, const struct run *r)
{
	const char *n = cls_info[c].name;

	if (r->live_checked < 0 || r->live_stray < 0)
		ksft_test_result_skip("%s.live_private: no %s (CONFIG_MIGRATE_ROCM_DEBUG)\n",
				      n, DBG_CHECKED);
	else
		ksft_test_result(r->live_checked > 0 && !r->live_stray,
				 "%s.live_private (%lld moved folios looked at, %lld with a stray ->private)\n",
				 n, r->live_checked, r->live_stray);
}

/* Eligible classes: the readers slept only on folios that fell back. */
static void check_no_fault_wait(enum cls c, const struct run *on)
{
	const char *n = cls_info[c].name;
	struct run off;

	if (!cls_info[c].eligible) {
		ksft_test_result_skip("%s.no_fault_wait: not an eligible class\n", n);
		return;
	}
	if (on->waits < 0) {
		ksft_test_result_skip("%s.no_fault_wait: cannot trace %s (CONFIG_MIGRATE_STAGES)\n",
				      n, WAIT_EVENT);
		return;
	}
	/* the control: the classic path must make the same readers wait */
	run_fresh(c, false, &off);
	if (!off.ok)
		ksft_print_msg("%s: control did not run: %s\n", n, off.why);
	ksft_print_msg("%s: rocm=0 moved %ld/%ld fault_wait %lld (control)\n", n,
		       off.moved, off.asked, off.waits);
	/*
	 * A folio that fell back (see .path) takes the classic path and its
	 * readers may sleep on it, each reader once; none may sleep otherwise.
	 */
	if (on->waits > NR_READERS * on->fallback)
		ksft_test_result_fail("%s.no_fault_wait: %lld sleeps, %lld fallbacks\n",
				      n, on->waits, on->fallback);
	else if (!off.ok || off.waits <= NR_READERS * on->fallback)
		ksft_test_result_skip("%s.no_fault_wait: the control slept %lld times only\n",
				      n, off.waits);
	else
		ksft_test_result_pass("%s.no_fault_wait (%lld, %lld fallbacks, control %lld)\n",
				      n, on->waits, on->fallback, off.waits);
}

static void report(enum cls c)
{
	const char *n = cls_info[c].name;
	struct run on;

	run_fresh(c, true, &on);
	if (!on.ok) {
		ksft_test_result_skip("%s.migrated: %s\n", n, on.why);
		ksft_test_result_skip("%s.intact: %s\n", n, on.why);
		ksft_test_result_skip("%s.path: %s\n", n, on.why);
		ksft_test_result_skip("%s.no_fault_wait: %s\n", n, on.why);
		if (cls_info[c].eligible)
			ksft_test_result_skip("%s.live_private: %s\n", n, on.why);
		return;
	}
	ksft_print_msg("%s: rocm=1 moved %ld/%ld, traced success %lld fallback %lld\n",
		       n, on.moved, on.asked, on.success, on.fallback);
	ksft_print_msg("%s: rocm=1 vmstat (all tasks) success %lld fallback %lld\n",
		       n, on.vm_success, on.vm_fallback);
	ksft_print_msg("%s: rocm=1 readers' fault_wait %lld reads %llu\n", n,
		       on.waits, (unsigned long long)on.reads);
	if (on.whys[0])
		ksft_print_msg("%s: rocm=1 fallback reasons:%s\n", n, on.whys);
	check_migrated(c, &on);
	ksft_test_result(!on.bad, "%s.intact (%llu mismatches)\n", n,
			 (unsigned long long)on.bad);
	check_path(c, &on);
	check_no_fault_wait(c, &on);
	if (cls_info[c].eligible)
		check_live_private(c, &on);
}

/*
 * The classes this invocation runs.  Without --ext4-dir the ext4 ones
 * are rocm_ext4.sh's to run: not listed (as SKIPs) here unless asked
 * for by name.
 */
static bool selected(int c)
{
	if (opt.ext4_only && !cls_info[c].ext4)
		return false;
	if (opt.only)
		return !strcmp(opt.only, cls_info[c].name);
	return !cls_info[c].ext4 || opt.ext4_dir;
}

static void pick_topology(void)
{
	struct nu_topo t;
	int nr = 0;

	if (nu_topo_read(&t) || !t.nr_eligible)
		ksft_exit_skip("cannot read a NUMA topology with CPUs and memory\n");
	node_a = t.node[t.eligible[0]].id;
	for (int i = 0; i < t.nr_nodes; i++)
		if (t.node[i].id != node_a && t.node[i].has_memory && t.node[i].allowed) {
			node_b = t.node[i].id;
			break;
		}
	if (node_b < 0)
		ksft_exit_skip("needs two memory nodes\n");
	/* readers and migrator on distinct CPUs where there are enough */
	for (int i = 0; i < t.nr_nodes; i++)
		for (int k = 0; k < t.node[i].nr_cpus; k++) {
			if (nr < NR_READERS)
				cpu_read[nr] = t.node[i].cpus[k];
			else if (nr == NR_READERS)
				cpu_mig = t.node[i].cpus[k];
			nr++;
		}
	for (int i = nr; i < NR_READERS; i++)
		cpu_read[i] = cpu_read[0];
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ext4-dir", required_argument, NULL, 'e' },
		{ "ext4-only", no_argument, NULL, 'E' },
		{ }
	};
	int ch, n = 0;

	page_size = sysconf(_SC_PAGESIZE);
	while ((ch = getopt_long(argc, argv, "p:r:v:e:", lo, NULL)) != -1) {
		switch (ch) {
		case 'p':
			opt.pages = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			opt.rounds = atoi(optarg);
			break;
		case 'v':
			opt.only = optarg;
			break;
		case 'e':
			opt.ext4_dir = optarg;
			break;
		case 'E':
			opt.ext4_only = true;
			break;
		default:
			fprintf(stderr, "usage: %s [-p pages] [-r rounds] [-v class]\n"
				"          [--ext4-dir DIR [--ext4-only]]\n", argv[0]);
			return KSFT_FAIL;
		}
	}
	if (!opt.pages || opt.rounds < 1)
		return KSFT_FAIL;
	ksft_print_header();
	if (geteuid())
		ksft_exit_skip("needs root (sysctl, MPOL_MF_MOVE_ALL)\n");
	if (access(SYSCTL, W_OK))
		ksft_exit_skip("no %s: kernel without CONFIG_MIGRATE_ROCM\n", SYSCTL);
	if (nu_vmstat("migrate_rocm_success") < 0)
		ksft_exit_skip("no migrate_rocm_* in /proc/vmstat\n");
	pick_topology();
	atexit(restore_settings);
	if (nu_read_str(BALANCING, nb_was, sizeof(nb_was)) > 0)
		nu_write_str(BALANCING, "0");
	/* live_private: the kernel looks at each moved folio */
	if (nu_read_str(DBG_CHECK, ck_was, sizeof(ck_was)) > 0)
		nu_write_str(DBG_CHECK, "1");
	for (int c = 0; c < NR_CLS; c++)
		n += selected(c) * (cls_info[c].eligible ? 5 : 4);
	for (int c = 0; c < NR_CLS; c++)
		if (selected(c) && dirty_class(c)) {
			stop_writeback();
			break;
		}
	if (!n)
		ksft_exit_fail_msg("no class named %s\n", opt.only);
	ksft_set_plan(n);
	if (!opt.ext4_dir && !opt.only)
		ksft_print_msg("ext4 classes: run by rocm_ext4.sh\n");
	ksft_print_msg("node_a=%d node_b=%d readers on cpus %d,%d migrator on %d, %lu pages\n",
		       node_a, node_b, cpu_read[0], cpu_read[1], cpu_mig, opt.pages);
	for (int c = 0; c < NR_CLS; c++)
		if (selected(c))
			report(c);
	ksft_finished();
}
