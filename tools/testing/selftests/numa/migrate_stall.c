// SPDX-License-Identifier: GPL-2.0
/*
 * migrate_stall - how long do threads stall while their pages migrate?
 *
 * Workers pinned on node A sweep a patterned buffer, reading and writing
 * one word per page, and stamp the time every CHUNK pages; the gaps
 * between stamps go to lock-free per-thread log2 histograms.  A migrator
 * bounces the buffer A -> B -> A with the variant's system call while a
 * bystander on another node touches only its own memory.  A baseline
 * phase without migration comes first.
 *
 * Per variant: placement_and_integrity (pages reach the target, the
 * pattern survives), progress (no worker stops for a whole window),
 * and, on bare metal or with --force, bounded_stall (a worker waits about
 * one batch, not a whole call) and bystander_stall; in a VM those two
 * latency bounds are printed, not applied.  The throughput is printed.
 * When the kernel has /sys/kernel/debug/mm/migrate_stages the stage
 * breakdown of each variant is printed too.
 *
 * --bench measures, in one boot and under several concurrent loads
 * (none, readers, readers+writers, readers+writers with a memory hog on
 * node B), what switching the stage timing on costs.  Within one run the
 * migration calls alternate off/on in ABBA blocks, so each on call has an
 * off call in the same direction next to it; the median of those paired
 * ratios, with a distribution-free 95% interval, is the cost.  An A/A run
 * (both halves off) under the same load shows the resolution.  Each load
 * also reports migration rate, stall percentiles and disruption factor
 * for the off and on calls.  --knob rocm compares vm.migrate_rocm off
 * and on the same way (read-only file variant by default), with the
 * stage breakdown of the off and on calls side by side; --knob order
 * compares vm.migrate_address_order (move_pages(2) of a shuffled address
 * array by default), --knob range vm.migrate_range_unmap (move_pages(2)
 * of a range by default), --knob rocm_batch ROCM's batched break of a
 * run's PTEs on arm64 (debugfs migrate_rocm/batch_break; the caller turns
 * vm.migrate_rocm and vm.migrate_range_unmap on), --knob rocm_compare
 * ROCM's compare of page cache under the freeze (off: debugfs
 * migrate_rocm/skip_compare set, restored to 0 at the end; the caller
 * turns vm.migrate_rocm on).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "../kselftest.h"
#include "numa_util.h"

#define STAGES_FILE	"/sys/kernel/debug/mm/migrate_stages"
#define ROCM_SYSCTL	"/proc/sys/vm/migrate_rocm"
#define ORDER_SYSCTL	"/proc/sys/vm/migrate_address_order"
#define RANGE_SYSCTL	"/proc/sys/vm/migrate_range_unmap"
#define BATCH_KNOB	"/sys/kernel/debug/migrate_rocm/batch_break"
#define COMPARE_KNOB	"/sys/kernel/debug/migrate_rocm/skip_compare"
#define CHUNK		64		/* pages between progress stamps */
#define MAX_WORKERS	16
#define MAX_CALLS	4096
#define MAX_REPS	16
#define NR_FORKED	4		/* sharers in the shared_fork variant */
#define PATTERN(i)	(0x5a5a000000000000ULL ^ (uint64_t)(i))
#define HOG_MIB		16		/* memory the hog streams over */

/* What the stamping threads are in: their gaps are kept apart per phase. */
enum { PH_BASE, PH_OFF, PH_ON, PH_STOP };

enum kind { V_MOVE_PAGES, V_MBIND, V_MIGRATE_PAGES };

/* One way of making the buffer and moving it. */
struct variant {
	const char *name;	/* prefix of the result names */
	enum kind kind;		/* the system call that moves it */
	bool thp;		/* MADV_HUGEPAGE instead of NOHUGEPAGE */
	bool file;		/* read-only shared file mapping */
	bool shared_fork;	/* MAP_SHARED anon, also mapped by children */
	bool shuffle;		/* move_pages() array in random order */
};

/* Concurrent load while the buffer migrates. */
struct load {
	const char *name;
	bool workers;		/* the -w workers sweep the buffer */
	bool write;		/* and write a word per page */
	bool bystander;		/* a bystander on another node */
	bool hog;		/* a thread streams over memory on node B */
};

static const struct load loads[] = {
	{ .name = "idle" },
	{ .name = "read",	.workers = true, .bystander = true },
	{ .name = "rw",		.workers = true, .write = true, .bystander = true },
	{ .name = "rw_hog",	.workers = true, .write = true, .bystander = true,
	  .hog = true },
};

/* The default (check) load: workers write unless the buffer is read-only. */
static const struct load load_check = {
	.name = "check", .workers = true, .write = true, .bystander = true,
};

/* How the instrumentation is switched during the migration phase. */
enum knob_mode {
	KNOB_OFF,		/* off throughout */
	KNOB_ON,		/* on throughout */
	KNOB_AB,		/* ABBA blocks of off and on calls */
	KNOB_AA,		/* the same blocks, both halves off (control) */
};

static const struct variant variants[] = {
	{ .name = "move_pages_4k",	.kind = V_MOVE_PAGES },
	{ .name = "move_pages_thp",	.kind = V_MOVE_PAGES, .thp = true },
	{ .name = "mbind_4k",		.kind = V_MBIND },
	{ .name = "migrate_pages_4k",	.kind = V_MIGRATE_PAGES },
	{ .name = "file_ro_tmpfs",	.kind = V_MOVE_PAGES, .file = true },
	{ .name = "file_ro_ext4",	.kind = V_MOVE_PAGES, .file = true },
	{ .name = "shared_fork",	.kind = V_MOVE_PAGES, .shared_fork = true },
	{ .name = "move_pages_shuf",	.kind = V_MOVE_PAGES, .shuffle = true },
};

#define NR_VARIANTS	((int)ARRAY_SIZE(variants))

/* Diagnostic and CSV line formats, each kept on one line for grep. */
#define FMT_ENV \
	"env node_a=%d node_b=%d workers=%d worker_cpus=%d migrator_cpu=%d bystander_cpu=%d hog_cpu=%d buffer=%luMiB stages=%s virt=%s\n"
#define FMT_STALL1 \
	"stall variant=%s calls=%d call_ms_p50=%.1f pages_call=%.0f g0_p999_us=%.0f g1_p99_us=%.0f g1_p999_us=%.0f g1_max_us=%.0f\n"
#define FMT_STALL2 \
	"stall variant=%s bystander_p999_us=%.0f/%.0f mbps=%.1f disruption=%.2f tlb_ipis=%lld ipis_per_call=%.1f silence_ms=%.0f\n"
#define FMT_BENCH \
	"bench %s load=%s knob=%s calls=%d mbps=%.2f pages_s=%.0f disruption=%.2f p50_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f window_mean_ns=%lld\n"
#define FMT_BENCH_COST \
	"bench %s load=%s: throughput on/off %.3f (95%% CI %.3f..%.3f, %d pairs); A/A control %.3f (95%% CI %.3f..%.3f, %d pairs): %s\n"
#define FMT_BENCH_STAGES \
	"stages %s load=%s knob=%s: ns/page unmap=%.0f flush=%.0f copy=%.0f mapping=%.0f remap=%.0f; window mean %.0f ns over %.0f folios; fault_wait %.0f\n"
#define FMT_BENCH_ROCM \
	"bench %s load=%s: migration rate %s on/off %.3f (95%% CI %.3f..%.3f, %d pairs); A/A control %.3f (95%% CI %.3f..%.3f, %d pairs)\n"
#define FMT_BENCH_NONE \
	"bench %s load=%s: no knob, A/A %.3f (95%% CI %.3f..%.3f, %d pairs)\n"
#define CSV_BENCH_HEADER \
	"variant,load,run,call,dir,knob,ns,pages\n"
#define FMT_BENCH_CSV \
	"%s,%s,%s,%d,%d,%s,%.0f,%ld\n"
#define CSV_BENCH_SUM_HEADER \
	"variant,load,knob,calls,mbps,pages_s,disruption,p50_us,p99_us,p999_us,max_us,window_mean_ns\n"
#define WHY_VM \
	"%s.%s not applied in a VM (--force): p99.9 %.1f ms vs bound %.1f ms\n"

static struct {
	unsigned long mib;	/* buffer size */
	double baseline;	/* seconds without migration */
	double seconds;		/* seconds with migration */
	int workers;		/* worker threads on node A */
	bool force;		/* apply timing bounds in VMs */
	bool bench;		/* off/on comparison instead of checks */
	int reps;		/* bench rounds over all loads */
	double bench_seconds;	/* migration phase of a bench run */
	unsigned long bench_mib; /* buffer size of a bench run */
	const char *only;	/* run only this variant */
	const char *ext4_dir;	/* where the file_ro_ext4 file goes */
	const char *csv;	/* bench CSV */
	const char *loads;	/* bench loads, comma-separated (all) */
} opt = {
	.mib = 16,
	.baseline = 1,
	.seconds = 3,
	.workers = 2,
	.reps = 1,
	.bench_seconds = 10,
	.bench_mib = 4,
};

/* A stamping thread's private record; merged after the phase. */
struct stamper {
	pthread_t tid;
	int cpu;		/* pinned here */
	char *buf;		/* region it sweeps */
	size_t pages;		/* pages in it */
	size_t first;		/* index of its first page in the pattern */
	bool write;		/* write a word per page too */
	uint64_t sweeps;	/* complete passes */
	uint64_t chunks;	/* progress stamps so far (read by main) */
	uint64_t bad;		/* pattern mismatches seen */
	struct nu_hist gaps[3];	/* per phase: PH_BASE, PH_OFF, PH_ON */
};

static int phase;		/* 0 baseline, 1 migrating, 2 stop */
static long page_size;
static int node_a = -1, node_b = -1;
static int cpu_workers[MAX_WORKERS], nr_cpu_workers;
static int cpu_migrator = -1, cpu_bystander = -1, cpu_hog = -1;
static bool in_vm, have_stages;
/* The latency bounds are results on bare metal or with --force only. */
static bool timing_ok;
static int short_calls;		/* move_pages() calls that gave up on pages */
static int retried_short;	/* ... and gave up on some again when retried */

static int get_phase(void)
{
	return __atomic_load_n(&phase, __ATOMIC_ACQUIRE);
}

static void *stamp_thread(void *arg)
{
	struct stamper *s = arg;
	uint64_t last, now;
	int ph;

	nu_pin_cpu(s->cpu);
	last = nu_now_ns();
	while ((ph = get_phase()) < PH_STOP) {
		for (size_t i = 0; i < s->pages; i++) {
			uint64_t *w = (uint64_t *)(s->buf + i * page_size);

			if (w[0] != PATTERN(s->first + i))
				s->bad++;
			if (s->write)
				w[1] = s->sweeps;
			if ((i + 1) % CHUNK)
				continue;
			now = nu_now_ns();
			nu_hist_add(&s->gaps[ph], now - last);
			last = now;
			__atomic_store_n(&s->chunks, s->chunks + 1, __ATOMIC_RELAXED);
			ph = get_phase();
			if (ph == PH_STOP)
				break;
		}
		if (ph < PH_STOP)
			s->sweeps++;
	}
	return NULL;
}

static void nodemask_of(int node, unsigned long *mask)
{
	memset(mask, 0, 2 * sizeof(*mask));
	mask[node / (8 * sizeof(long))] |= 1UL << (node % (8 * sizeof(long)));
}

/* The hog: stream over memory on node B until the phase ends. */
static void *hog_thread(void *arg)
{
	size_t bytes = (size_t)HOG_MIB << 20;
	unsigned long bmask[2];
	uint64_t *passes = arg;
	char *mem;

	nu_pin_cpu(cpu_hog);
	nodemask_of(node_b, bmask);
	nu_set_mempolicy(MPOL_BIND, bmask, 8 * sizeof(bmask));
	mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	while (get_phase() < PH_STOP) {
		memset(mem, (int)*passes, bytes);
		__atomic_store_n(passes, *passes + 1, __ATOMIC_RELAXED);
	}
	munmap(mem, bytes);
	return NULL;
}

/*
 * move_pages(2) to @to; a call that gives up on busy pages tries them
 * once more, as a caller would: with large folios (7.3 maps the ext4
 * file with folios of up to 512 pages) one folio still busy after the
 * kernel's own retries leaves hundreds of pages behind.  Returns the
 * pages left after the retry.
 */
static long move_pages_retry(size_t pages, void **addrs, int *nodes,
			     int *status, int flags)
{
	long left = nu_move_pages(0, pages, addrs, nodes, status, flags);

	if (left <= 0)
		return left;
	short_calls++;
	left = nu_move_pages(0, pages, addrs, nodes, status, flags);
	if (left < 0)
		return left;
	retried_short += left > 0;
	return left;
}

/* Move the buffer to @to; return pages reported on @to, -1 on error. */
static long move_buffer(const struct variant *v, char *buf, size_t pages,
			int from, int to, void **addrs, int *nodes, int *status)
{
	unsigned long fm[2], tm[2];
	int flags = v->shared_fork ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE;
	long on = 0, left;

	switch (v->kind) {
	case V_MOVE_PAGES:
		for (size_t i = 0; i < pages; i++)
			nodes[i] = to;
		/* busy pages may stay behind (counted): see where they are */
		left = move_pages_retry(pages, addrs, nodes, status, flags);
		if (left < 0 ||
		    (left > 0 && nu_move_pages(0, pages, addrs, NULL, status, 0) < 0))
			return -1;
		break;
	case V_MBIND:
		nodemask_of(to, tm);
		if (nu_mbind(buf, pages * page_size, MPOL_BIND, tm,
			     8 * sizeof(tm), MPOL_MF_MOVE | MPOL_MF_STRICT) &&
		    errno != EIO)
			return -1;
		if (nu_move_pages(0, pages, addrs, NULL, status, 0) < 0)
			return -1;
		break;
	case V_MIGRATE_PAGES:
		nodemask_of(from, fm);
		nodemask_of(to, tm);
		if (nu_migrate_pages(0, 8 * sizeof(fm), fm, tm) < 0)
			return -1;
		if (nu_move_pages(0, pages, addrs, NULL, status, 0) < 0)
			return -1;
		break;
	}
	for (size_t i = 0; i < pages; i++)
		on += status[i] == to;
	return on;
}

/* The debugfs stage rows the bench splits by off/on call. */
static const char * const stage_cols[] = {
	"alloc", "unmap", "flush", "copy", "mapping", "remap", "window", "fault_wait",
};

#define NR_STAGE_COLS	((int)ARRAY_SIZE(stage_cols))

/*
 * What the bench switches: the stage timing itself, ROCM, or nothing
 * (both halves identical: plain rates, for comparing kernels).
 */
static enum {
	KNOB_STAGES, KNOB_ROCM, KNOB_ORDER, KNOB_RANGE, KNOB_BATCH, KNOB_COMPARE,
	KNOB_NONE
} knob_kind;

/* A sysctl feature switch, compared with the stage breakdown on. */
static const char *knob_sysctl(void)
{
	if (knob_kind == KNOB_ROCM)
		return ROCM_SYSCTL;
	if (knob_kind == KNOB_RANGE)
		return RANGE_SYSCTL;
	if (knob_kind == KNOB_BATCH)
		return BATCH_KNOB;
	if (knob_kind == KNOB_COMPARE)
		return COMPARE_KNOB;
	return knob_kind == KNOB_ORDER ? ORDER_SYSCTL : NULL;
}

static const char *knob_name(void)
{
	return knob_kind == KNOB_ROCM ? "rocm" :
	       knob_kind == KNOB_RANGE ? "range" :
	       knob_kind == KNOB_BATCH ? "rocm_batch" :
	       knob_kind == KNOB_COMPARE ? "rocm_compare" : "order";
}

/* Cumulative count and ns of each stage_cols row; false if unreadable. */
static bool stage_sums(double *cnt, double *ns)
{
	static char text[8192];

	if (nu_read_all(STAGES_FILE, text, sizeof(text)) <= 0)
		return false;
	for (int k = 0; k < NR_STAGE_COLS; k++) {
		char key[32];
		const char *p;
		long long c = 0, mean = 0;

		snprintf(key, sizeof(key), "\n%s ", stage_cols[k]);
		p = strstr(text, key);
		if (p)
			sscanf(p + strlen(key), "%lld %lld", &c, &mean);
		cnt[k] = c;
		ns[k] = (double)c * mean;
	}
	return true;
}

/* What one run of a variant measured. */
struct outcome {
	bool skipped;			/* variant could not run here */
	char why[160];			/* and why */
	int calls;			/* migration calls completed */
	double call_ns[MAX_CALLS];	/* duration of each */
	bool call_on[MAX_CALLS];	/* instrumentation on during it */
	long call_pages[MAX_CALLS];	/* pages it left on the target */
	double pages_per_call;		/* pages asked to move per call */
	long min_on_target;		/* fewest pages on target after a call */
	int short_calls;		/* calls that left busy pages behind */
	int retried_short;		/* ... and again when retried */
	long moved_pages;		/* pages reported on target, summed */
	double seconds;			/* length of the migration phase */
	uint64_t bad;			/* pattern mismatches */
	uint64_t bad_final;		/* mismatches in the final check */
	double max_silence;		/* longest window with no progress, s */
	struct nu_hist g0, g1;		/* worker gaps baseline / migrating */
	struct nu_hist gs[2];		/* worker gaps in off / on calls */
	struct nu_hist b0, b1;		/* bystander gaps */
	double work0, work1;		/* worker chunks per second */
	double work_in[2];		/* worker chunks during off / on calls */
	double ns_in[2];		/* time in off / on calls */
	uint64_t hog_passes;		/* sweeps the hog made */
	long long ipis;			/* TLB shootdown IPIs in the phase */
	char stages[8192];		/* debugfs breakdown, if any */
	double st_cnt[2][NR_STAGE_COLS];	/* stage events in off / on calls */
	double st_ns[2][NR_STAGE_COLS];		/* and their summed ns */
	double pages_in[2];		/* pages moved in off / on calls */
};

static uint64_t touch_sink;

/* Read one word of every page so that each is mapped. */
static void touch_all(const char *buf, size_t bytes)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < bytes; i += page_size)
		sum += __atomic_load_n((const uint64_t *)(buf + i), __ATOMIC_RELAXED);
	touch_sink += sum;
}

struct touch_arg {
	const char *buf;
	size_t bytes;
};

static void touch_cb(void *arg)
{
	const struct touch_arg *ta = arg;

	touch_all(ta->buf, ta->bytes);
}

static bool thp_available(void)
{
	char buf[128];

	return nu_read_str("/sys/kernel/mm/transparent_hugepage/enabled",
			   buf, sizeof(buf)) > 0 && !strstr(buf, "[never]");
}

/* Make the buffer for @v; NULL with @why filled when it cannot be made. */
static char *make_buffer(const struct variant *v, size_t bytes, char *why,
			 size_t why_len, pid_t *kids)
{
	char *buf;

	if (v->file) {
		const char *dir = strcmp(v->name, "file_ro_ext4") ? getenv("TMPDIR") :
				  opt.ext4_dir;
		char path[512];
		int fd, rfd;

		if (!dir && strcmp(v->name, "file_ro_ext4"))
			dir = "/tmp";
		if (!dir) {
			snprintf(why, why_len, "no --ext4-dir: see migrate_stall_ext4.sh");
			return NULL;
		}
		snprintf(path, sizeof(path), "%s/migrate_stall.XXXXXX", dir);
		fd = mkstemp(path);
		if (fd < 0) {
			snprintf(why, why_len, "cannot create a file in %s: %s", dir,
				 strerror(errno));
			return NULL;
		}
		unlink(path);
		if (ftruncate(fd, bytes)) {
			snprintf(why, why_len, "cannot size the file: %s", strerror(errno));
			close(fd);
			return NULL;
		}
		for (size_t i = 0; i < bytes / page_size; i++) {
			uint64_t w[2] = { PATTERN(i), 0 };

			if (pwrite(fd, w, sizeof(w), i * page_size) != sizeof(w)) {
				snprintf(why, why_len, "cannot write the file: %s",
					 strerror(errno));
				close(fd);
				return NULL;
			}
		}
		/*
		 * A read-only file is clean: no writeback races the migration.
		 * Dropping the written pages lets them come back by readahead,
		 * without buffer heads, and the mapping comes from a read-only
		 * open, as a reader of a shared file would have it.
		 */
		if (fsync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) {
			snprintf(why, why_len, "fsync: %s", strerror(errno));
			close(fd);
			return NULL;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		rfd = open(path, O_RDONLY);
		close(fd);
		if (rfd < 0) {
			snprintf(why, why_len, "reopen: %s", strerror(errno));
			return NULL;
		}
		buf = mmap(NULL, bytes, PROT_READ, MAP_SHARED, rfd, 0);
		close(rfd);
		if (buf == MAP_FAILED) {
			snprintf(why, why_len, "mmap: %s", strerror(errno));
			return NULL;
		}
		/* populate the page cache on node A (the caller is bound there) */
		touch_all(buf, bytes);
		return buf;
	}

	if (v->thp && !thp_available()) {
		snprintf(why, why_len, "THP not available");
		return NULL;
	}
	if (v->shared_fork && geteuid()) {
		snprintf(why, why_len, "MPOL_MF_MOVE_ALL needs CAP_SYS_NICE");
		return NULL;
	}
	buf = mmap(NULL, bytes + (2UL << 20), PROT_READ | PROT_WRITE,
		   (v->shared_fork ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		snprintf(why, why_len, "mmap: %s", strerror(errno));
		return NULL;
	}
	buf = (char *)(((unsigned long)buf + (2UL << 20) - 1) & ~((2UL << 20) - 1));
	madvise(buf, bytes, v->thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	for (size_t i = 0; i < bytes / page_size; i++) {
		uint64_t *w = (uint64_t *)(buf + i * page_size);

		w[0] = PATTERN(i);
		w[1] = 0;
	}
	if (v->shared_fork) {
		struct touch_arg ta = { buf, bytes };
		int got;

		/* migrate only once every sharer has mapped every page */
		got = nu_fork_sharers(kids, NR_FORKED, touch_cb, &ta);
		if (got < NR_FORKED) {
			snprintf(why, why_len, "only %d of %d sharers mapped the buffer",
				 got, NR_FORKED);
			return NULL;
		}
	}
	return buf;
}

/* Switch what the bench compares (skip_compare says "off" with 1). */
static void knob_set(bool on)
{
	if (knob_sysctl())
		nu_write_str(knob_sysctl(),
			     on != (knob_kind == KNOB_COMPARE) ? "1" : "0");
	else if (knob_kind == KNOB_STAGES && have_stages)
		nu_write_str(STAGES_FILE, on ? "1" : "0");
}

static void stages_cmd(const char *cmd)
{
	if (have_stages)
		nu_write_str(STAGES_FILE, cmd);
}

/*
 * Is call @i on in @mode?  ABBA blocks over call pairs (one each way):
 * a block of four calls is two off then two on, the next two on then
 * two off, and so on, so each on call has an off call in the same
 * direction in its block.
 */
static bool knob_wanted(enum knob_mode mode, int i)
{
	switch (mode) {
	case KNOB_ON:
		return true;
	case KNOB_AB:
		return ((i / 2) & 1) ^ ((i / 4) & 1);
	default:
		return false;
	}
}

/* One run of a variant: its buffer, its load, and what it found. */
struct run {
	const struct variant *v;
	const struct load *ld;
	enum knob_mode mode;
	struct outcome *o;
	size_t bytes, pages;
	char *buf;
	void **addrs;
	int *nodes, *status;
	pid_t kids[NR_FORKED];
	struct stamper st[MAX_WORKERS + 1], *by;
	char *bybuf;
	int nw;
	pthread_t hog;
	bool hog_on;
};

static void kill_kids(struct run *r)
{
	for (int k = 0; k < NR_FORKED; k++)
		if (r->kids[k] > 0) {
			kill(r->kids[k], SIGKILL);
			waitpid(r->kids[k], NULL, 0);
		}
}

/* The buffer on node A and the address array (shuffled if asked). */
static bool run_buffer(struct run *r)
{
	unsigned long amask[2];

	nodemask_of(node_a, amask);
	nu_pin_cpu(cpu_workers[0]);
	nu_set_mempolicy(MPOL_BIND, amask, 8 * sizeof(amask));
	r->buf = make_buffer(r->v, r->bytes, r->o->why, sizeof(r->o->why),
			     r->kids);
	nu_set_mempolicy(MPOL_DEFAULT, NULL, 0);
	if (!r->buf) {
		kill_kids(r);
		return false;
	}
	r->addrs = calloc(r->pages, sizeof(*r->addrs));
	r->nodes = calloc(r->pages, sizeof(*r->nodes));
	r->status = calloc(r->pages, sizeof(*r->status));
	for (size_t i = 0; i < r->pages; i++)
		r->addrs[i] = r->buf + i * page_size;
	for (size_t i = r->pages - 1; r->v->shuffle && i > 0; i--) {
		size_t j = (size_t)rand() % (i + 1);
		void *t = r->addrs[i];

		r->addrs[i] = r->addrs[j];
		r->addrs[j] = t;
	}
	return true;
}

/* A bystander stamping 1 MiB of its own, local to its CPU. */
static void start_bystander(struct run *r)
{
	struct stamper *by = &r->st[r->nw];

	r->bybuf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* first touch from the bystander's CPU: its memory is local there */
	nu_pin_cpu(cpu_bystander);
	for (size_t i = 0; i < (size_t)(1 << 20) / page_size; i++)
		*(uint64_t *)(r->bybuf + i * page_size) = PATTERN(i);
	by->cpu = cpu_bystander;
	by->buf = r->bybuf;
	by->pages = (1 << 20) / page_size;
	by->write = true;
	pthread_create(&by->tid, NULL, stamp_thread, by);
	r->by = by;
}

/* The load: stamping workers on slices of the buffer, a hog, a bystander. */
static void start_load(struct run *r)
{
	const struct load *ld = r->ld;

	__atomic_store_n(&phase, PH_BASE, __ATOMIC_RELEASE);
	for (int w = 0; ld->workers && w < opt.workers; w++) {
		size_t slice = r->pages / opt.workers;
		struct stamper *st = &r->st[w];

		st->cpu = cpu_workers[w % nr_cpu_workers];
		st->buf = r->buf + w * slice * page_size;
		st->first = w * slice;
		st->pages = w == opt.workers - 1 ? r->pages - w * slice : slice;
		st->write = ld->write && !r->v->file;
		pthread_create(&st->tid, NULL, stamp_thread, st);
		r->nw++;
	}
	if (ld->hog && cpu_hog >= 0)
		r->hog_on = !pthread_create(&r->hog, NULL, hog_thread,
					    &r->o->hog_passes);
	if (ld->bystander && cpu_bystander >= 0)
		start_bystander(r);
	nu_pin_cpu(cpu_migrator);
}

/* Chunks the workers stamped so far. */
static uint64_t run_chunks(struct run *r)
{
	uint64_t chunks = 0;

	for (int w = 0; w < r->nw; w++)
		chunks += __atomic_load_n(&r->st[w].chunks, __ATOMIC_RELAXED);
	return chunks;
}

/*
 * One migration call, the @dir way, with the knob @want; its time, pages
 * and stage sums go to the outcome.  False if the call failed.
 */
static bool run_call(struct run *r, bool want, int dir)
{
	struct outcome *o = r->o;
	double c0, c1, cnt0[NR_STAGE_COLS], ns0[NR_STAGE_COLS];
	double cnt1[NR_STAGE_COLS], ns1[NR_STAGE_COLS];
	bool split;
	long on;

	split = knob_sysctl() && have_stages && r->mode != KNOB_OFF &&
		stage_sums(cnt0, ns0);
	__atomic_store_n(&phase, want ? PH_ON : PH_OFF, __ATOMIC_RELEASE);
	c0 = nu_now();
	on = move_buffer(r->v, r->buf, r->pages, dir ? node_b : node_a,
			 dir ? node_a : node_b, r->addrs, r->nodes, r->status);
	c1 = nu_now();
	if (on < 0) {
		snprintf(o->why, sizeof(o->why), "migration call failed: %s",
			 strerror(errno));
		return false;
	}
	if (split && stage_sums(cnt1, ns1))
		for (int k = 0; k < NR_STAGE_COLS; k++) {
			o->st_cnt[want][k] += cnt1[k] - cnt0[k];
			o->st_ns[want][k] += ns1[k] - ns0[k];
		}
	o->pages_in[want] += on;
	o->call_on[o->calls] = want;
	o->call_pages[o->calls] = on;
	o->call_ns[o->calls++] = (c1 - c0) * 1e9;
	o->ns_in[want] += (c1 - c0) * 1e9;
	o->moved_pages += on;
	if (o->min_on_target < 0 || on < o->min_on_target)
		o->min_on_target = on;
	return true;
}

/* Stage timing for the migration phase; with ROCM as the knob, throughout. */
static void stages_begin(struct run *r)
{
	if (r->mode != KNOB_OFF && knob_kind != KNOB_NONE)
		stages_cmd("reset");
	if (knob_sysctl() && r->mode != KNOB_OFF) {
		stages_cmd("sample 1");
		stages_cmd("1");
	}
	/* the first calls are off: the compare's knob is not, at boot */
	if (knob_kind == KNOB_COMPARE)
		knob_set(false);
}

/* Leave the feature off, as the other variants expect: the compare on. */
static void stages_end(struct run *r)
{
	if (knob_sysctl())
		knob_set(knob_kind == KNOB_COMPARE);
	if (r->mode != KNOB_OFF && have_stages && knob_kind != KNOB_NONE) {
		nu_read_all(STAGES_FILE, r->o->stages, sizeof(r->o->stages));
		stages_cmd("0");
		if (knob_sysctl())
			stages_cmd("sample 64");
	}
}

/* Move the buffer back and forth for @seconds, watching the workers. */
static void migrate_phase(struct run *r, double seconds)
{
	struct outcome *o = r->o;
	uint64_t last_chunks = run_chunks(r);
	double t_start = nu_now(), last_progress = t_start;
	bool knob = false;
	int dir = 0;

	o->work1 = -(double)last_chunks;
	while (nu_now() - t_start < seconds && o->calls < MAX_CALLS) {
		bool want = knob_wanted(r->mode, o->calls);
		uint64_t chunks, before = last_chunks;
		double c1;

		/* switching is not timed; A/A writes the same way, both off */
		if (want != knob || (r->mode == KNOB_AA && o->calls % 2 == 0))
			knob_set(want);
		knob = want;
		if (!run_call(r, want, dir))
			break;
		c1 = nu_now();
		dir = !dir;
		/* progress: any worker chunk since the last look */
		chunks = run_chunks(r);
		o->work_in[want] += chunks - before;
		if (chunks != last_chunks) {
			last_chunks = chunks;
			last_progress = c1;
		} else if (c1 - last_progress > o->max_silence) {
			o->max_silence = c1 - last_progress;
		}
	}
	o->seconds = nu_now() - t_start;
}

/* Stop the load and fold what each thread saw into the outcome. */
static void stop_load(struct run *r)
{
	struct outcome *o = r->o;

	__atomic_store_n(&phase, PH_STOP, __ATOMIC_RELEASE);
	if (r->hog_on)
		pthread_join(r->hog, NULL);
	for (int w = 0; w < r->nw; w++) {
		struct stamper *st = &r->st[w];

		pthread_join(st->tid, NULL);
		o->work1 += st->chunks;
		o->bad += st->bad;
		nu_hist_merge(&o->g0, &st->gaps[PH_BASE]);
		nu_hist_merge(&o->g1, &st->gaps[PH_OFF]);
		nu_hist_merge(&o->g1, &st->gaps[PH_ON]);
		nu_hist_merge(&o->gs[0], &st->gaps[PH_OFF]);
		nu_hist_merge(&o->gs[1], &st->gaps[PH_ON]);
		/* the longest gap also bounds silence */
		if (o->g1.max / 1e9 > o->max_silence)
			o->max_silence = o->g1.max / 1e9;
	}
	o->work1 /= o->seconds;
	if (r->by) {
		pthread_join(r->by->tid, NULL);
		o->b0 = r->by->gaps[PH_BASE];
		o->b1 = r->by->gaps[PH_OFF];
		nu_hist_merge(&o->b1, &r->by->gaps[PH_ON]);
		munmap(r->bybuf, 1 << 20);
	}
}

/*
 * Run @v once with @ld as the concurrent load; @mode says how the stage
 * timing is switched for the migration phase.
 */
static void run_variant(const struct variant *v, const struct load *ld,
			enum knob_mode mode, unsigned long mib, double seconds,
			struct outcome *o)
{
	static struct run r;
	long long ipi0;

	memset(&r, 0, sizeof(r));
	memset(o, 0, sizeof(*o));
	r.v = v;
	r.ld = ld;
	r.mode = mode;
	r.o = o;
	r.bytes = mib << 20;
	r.pages = r.bytes / page_size;
	o->min_on_target = -1;
	short_calls = 0;
	retried_short = 0;
	if (!run_buffer(&r)) {
		o->skipped = true;
		return;
	}
	start_load(&r);

	/* Baseline. */
	usleep(opt.baseline * 1e6);
	for (int w = 0; w < r.nw; w++)
		o->work0 += r.st[w].chunks;
	o->work0 /= opt.baseline;

	stages_begin(&r);
	ipi0 = nu_tlb_shootdowns();
	migrate_phase(&r, seconds);
	o->pages_per_call = r.pages;
	o->short_calls = short_calls;
	o->retried_short = retried_short;
	stop_load(&r);
	o->ipis = ipi0 >= 0 ? nu_tlb_shootdowns() - ipi0 : -1;
	stages_end(&r);

	/* Final integrity check of the whole buffer. */
	for (size_t i = 0; i < r.pages; i++) {
		uint64_t *w = (uint64_t *)(r.buf + i * page_size);

		if (w[0] != PATTERN(i))
			o->bad_final++;
	}
	kill_kids(&r);
	munmap(r.buf, r.bytes);
	free(r.addrs);
	free(r.nodes);
	free(r.status);
}

static double median_call(struct outcome *o)
{
	return o->calls ? nu_median(o->call_ns, o->calls) : 0;
}

static void print_outcome(const char *name, struct outcome *o)
{
	double mb = o->moved_pages * (double)page_size / (1 << 20);

	ksft_print_msg(FMT_STALL1, name, o->calls, median_call(o) / 1e6, o->pages_per_call,
		       nu_hist_pct(&o->g0, 99.9) / 1e3, nu_hist_pct(&o->g1, 99) / 1e3,
		       nu_hist_pct(&o->g1, 99.9) / 1e3, o->g1.max / 1e3);
	ksft_print_msg(FMT_STALL2, name, nu_hist_pct(&o->b0, 99.9) / 1e3,
		       nu_hist_pct(&o->b1, 99.9) / 1e3, o->seconds ? mb / o->seconds : 0,
		       o->work0 > 0 ? o->work1 / o->work0 : 0, o->ipis,
		       o->calls && o->ipis > 0 ? (double)o->ipis / o->calls : 0,
		       o->max_silence * 1e3);
	if (o->stages[0]) {
		for (char *l = strtok(o->stages, "\n"); l; l = strtok(NULL, "\n"))
			ksft_print_msg("stages %s: %s\n", name, l);
	}
}

/* Append the worker gap histograms of a variant to the -o CSV. */
static void write_hist(const char *name, const struct outcome *o)
{
	static bool header;
	FILE *f = fopen(opt.csv, header ? "a" : "w");

	if (!f)
		return;
	if (!header)
		fputs("variant,phase,bucket_le_ns,count\n", f);
	header = true;
	for (int ph = 0; ph < 2; ph++) {
		const struct nu_hist *h = ph ? &o->g1 : &o->g0;

		for (int b = 0; b < NU_HIST_BUCKETS; b++)
			if (h->count[b])
				fprintf(f, "%s,%s,%llu,%llu\n", name,
					ph ? "migrating" : "baseline",
					b ? (1ULL << b) - 1 : 0ULL,
					(unsigned long long)h->count[b]);
	}
	fclose(f);
}

/* A worker waits about one batch, not a whole call (@med: a call's ns). */
static void check_bounded_stall(const struct variant *v, const struct outcome *o,
				double med)
{
	uint64_t p0 = nu_hist_pct(&o->g0, 99.9);
	uint64_t p1 = nu_hist_pct(&o->g1, 99.9);
	double bound = 0.5 * med;

	if (bound < 20.0 * p0)
		bound = 20.0 * p0;
	if (bound < 1e6)
		bound = 1e6;
	if (!timing_ok)
		ksft_print_msg(WHY_VM, v->name, "bounded_stall", p1 / 1e6,
			       bound / 1e6);
	else if (o->calls < 5)
		ksft_test_result_skip("%s.bounded_stall: only %d calls\n", v->name, o->calls);
	else if (o->pages_per_call < 8 * 512)
		ksft_test_result_skip("%s.bounded_stall: fewer than 8 batches per call\n",
				      v->name);
	else if (p0 > 5e6)
		ksft_test_result_skip("%s.bounded_stall: noisy baseline (p99.9 %.1f ms)\n",
				      v->name, p0 / 1e6);
	else
		ksft_test_result(p1 <= bound, "%s.bounded_stall (p99.9 %.1f ms, bound %.1f ms)\n",
				 v->name, p1 / 1e6, bound / 1e6);
}

/* A thread on another node, touching only its own memory, barely notices. */
static void check_bystander_stall(const struct variant *v, const struct outcome *o)
{
	uint64_t p0 = nu_hist_pct(&o->b0, 99.9);
	uint64_t p1 = nu_hist_pct(&o->b1, 99.9);
	double bound = 10.0 * p0 > 2e6 ? 10.0 * p0 : 2e6;

	if (!timing_ok)
		ksft_print_msg(WHY_VM, v->name, "bystander_stall", p1 / 1e6,
			       bound / 1e6);
	else if (cpu_bystander < 0)
		ksft_test_result_skip("%s.bystander_stall: no CPU on another node\n", v->name);
	else
		ksft_test_result(p1 <= bound, "%s.bystander_stall (p99.9 %.1f ms, bound %.1f ms)\n",
				 v->name, p1 / 1e6, bound / 1e6);
}

static void check_variant(const struct variant *v)
{
	static struct outcome o;
	double med = 0, bound;

	run_variant(v, &load_check, have_stages ? KNOB_ON : KNOB_OFF, opt.mib,
		    opt.seconds, &o);
	if (o.skipped) {
		ksft_test_result_skip("%s.placement_and_integrity: %s\n", v->name, o.why);
		ksft_test_result_skip("%s.progress: %s\n", v->name, o.why);
		if (!timing_ok)
			return;
		ksft_test_result_skip("%s.bounded_stall: %s\n", v->name, o.why);
		ksft_test_result_skip("%s.bystander_stall: %s\n", v->name, o.why);
		return;
	}
	print_outcome(v->name, &o);
	if (opt.csv)
		write_hist(v->name, &o);
	med = median_call(&o);

	/* placement and integrity */
	if (!o.calls)
		ksft_test_result_fail("%s.placement_and_integrity: no call completed (%s)\n",
				      v->name, o.why);
	else if (o.bad || o.bad_final)
		ksft_test_result_fail("%s.placement_and_integrity: %llu + %llu corrupted reads\n",
				      v->name, (unsigned long long)o.bad,
				      (unsigned long long)o.bad_final);
	else
		ksft_test_result(o.min_on_target >= 0.9 * o.pages_per_call,
				 "%s.placement_and_integrity (worst call left %ld of %.0f on target, %d of %d calls gave up on busy pages, %d again on their retry)\n",
				 v->name, o.min_on_target, o.pages_per_call,
				 o.short_calls, o.calls, o.retried_short);

	/*
	 * progress: nobody stopped for a whole window.  A TCG vCPU is a host
	 * thread that shares the host's cores with the other vCPUs and
	 * qemu's own threads: it can lose a second to them, not five.
	 */
	bound = in_vm ? 5.0 : 1.0;
	if (bound < 2 * med / 1e9)
		bound = 2 * med / 1e9;
	ksft_test_result(o.max_silence < bound,
			 "%s.progress (longest stop %.0f ms, bound %.0f ms)\n",
			 v->name, o.max_silence * 1e3, bound * 1e3);

	check_bounded_stall(v, &o, med);
	check_bystander_stall(v, &o);
	ksft_print_msg("%s: migration throughput %.1f MB/s\n", v->name,
		       o.seconds ? o.moved_pages * (double)page_size /
		       (1 << 20) / o.seconds : 0);
}

/* Mean WINDOW from a debugfs dump, 0 if absent. */
static long long window_mean(const char *stages)
{
	const char *p = strstr(stages, "\nwindow ");
	long long cnt, mean;

	if (!p || sscanf(p + 8, "%lld %lld", &cnt, &mean) != 2)
		return 0;
	return mean;
}

/*
 * Paired on/off throughput ratios of a KNOB_AB or KNOB_AA run: in every
 * ABBA block each call is matched with the call in the same direction of
 * the other half.  Returns the number of pairs put in @ratio.
 */
static int paired_ratios(const struct outcome *o, double *ratio)
{
	int n = 0;

	for (int b = 0; b + 4 <= o->calls; b += 4)
		for (int d = 0; d < 2; d++) {
			int x = b + d, y = b + 2 + d;
			/* the "off" one of the pair: in A/A, the first half */
			int off = o->call_on[x] ? y : x, on = off == x ? y : x;

			if (o->call_ns[on] > 0 && o->call_pages[on] == o->call_pages[off])
				ratio[n++] = o->call_ns[off] / o->call_ns[on];
		}
	return n;
}

/*
 * Median of @v with a distribution-free 95% confidence interval from the
 * order statistics (the binomial sign-test interval).
 */
static double median_ci(double *v, int n, double *lo, double *hi)
{
	double med = nu_median(v, n);	/* sorts @v */
	double h = 0.98 * sqrt(n);
	int l = (int)floor(n / 2.0 - h), u = (int)ceil(n / 2.0 + h);

	*lo = n ? v[l < 0 ? 0 : l] : 0;
	*hi = n ? v[u >= n ? n - 1 : u] : 0;
	return med;
}

static void bench_csv(FILE *csv, const struct variant *v, const struct load *ld,
		      const char *run, const struct outcome *o)
{
	if (!csv)
		return;
	for (int i = 0; i < o->calls; i++)
		fprintf(csv, FMT_BENCH_CSV, v->name, ld->name, run, i, i & 1,
			o->call_on[i] ? "on" : "off", o->call_ns[i], o->call_pages[i]);
}

/* Rate, stalls and disruption of the off (@on false) or on calls of @o. */
static void bench_report(const struct variant *v, const struct load *ld,
			 const struct outcome *o, bool on, FILE *sum)
{
	const struct nu_hist *g = &o->gs[on];
	double pages = 0, secs = o->ns_in[on] / 1e9, mbps, pps, dis;
	/* the stage timing's own window; ROCM's per-state one is printed below */
	long long win = on && knob_kind == KNOB_STAGES ? window_mean(o->stages) : 0;
	int calls = 0;

	for (int i = 0; i < o->calls; i++)
		if (o->call_on[i] == on) {
			pages += o->call_pages[i];
			calls++;
		}
	pps = secs > 0 ? pages / secs : 0;
	mbps = pps * page_size / (1 << 20);
	dis = o->work0 > 0 && secs > 0 ? o->work_in[on] / secs / o->work0 : 0;
	ksft_print_msg(FMT_BENCH, v->name, ld->name, on ? "on" : "off", calls, mbps,
		       pps, dis, nu_hist_pct(g, 50) / 1e3, nu_hist_pct(g, 99) / 1e3,
		       nu_hist_pct(g, 99.9) / 1e3, g->max / 1e3, win);
	if (knob_sysctl() && o->pages_in[on] > 0) {
		const double *c = o->st_cnt[on], *t = o->st_ns[on];
		double pg = o->pages_in[on];

		/* per page moved; window is per folio that had one */
		ksft_print_msg(FMT_BENCH_STAGES, v->name, ld->name, on ? "on" : "off",
			       t[1] / pg, t[2] / pg, t[3] / pg, t[4] / pg, t[5] / pg,
			       c[6] ? t[6] / c[6] : 0, c[6], c[7]);
	}
	if (sum)
		fprintf(sum, "%s,%s,%s,%d,%.3f,%.0f,%.3f,%.0f,%.0f,%.0f,%.0f,%lld\n",
			v->name, ld->name, on ? "on" : "off", calls, mbps, pps, dis,
			nu_hist_pct(g, 50) / 1e3, nu_hist_pct(g, 99) / 1e3,
			nu_hist_pct(g, 99.9) / 1e3, g->max / 1e3, win);
}

/* Is @name one of the words of comma-separated @list? */
static bool list_has(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

/*
 * The cost of the stage timing under each load, in one boot: an A/B run
 * (calls alternate off/on in ABBA blocks) and an A/A control run.  The
 * order of the two runs alternates from load to load and round to round.
 */
static void run_bench(void)
{
	static struct outcome ab, aa;
	static double rab[MAX_REPS * MAX_CALLS / 2], raa[MAX_REPS * MAX_CALLS / 2];
	FILE *csv = opt.csv ? fopen(opt.csv, "w") : NULL;
	FILE *sum = NULL;
	const struct variant *v = NULL;
	const char *def = knob_kind == KNOB_ROCM || knob_kind == KNOB_BATCH ||
			  knob_kind == KNOB_COMPARE ?
			  "file_ro_tmpfs" :
			  knob_kind == KNOB_ORDER ? "move_pages_shuf" : "move_pages_4k";
	char path[512];

	if (knob_kind == KNOB_STAGES && !have_stages)
		ksft_exit_skip("no %s (CONFIG_MIGRATE_STAGES, debugfs, root)\n",
			       STAGES_FILE);
	if (knob_sysctl() && (geteuid() || access(knob_sysctl(), W_OK)))
		ksft_exit_skip("no %s (its CONFIG option, root)\n", knob_sysctl());
	for (int i = 0; i < NR_VARIANTS; i++)
		if (!strcmp(variants[i].name, opt.only ? opt.only : def))
			v = &variants[i];
	if (csv) {
		fputs(CSV_BENCH_HEADER, csv);
		snprintf(path, sizeof(path), "%s.summary", opt.csv);
		sum = fopen(path, "w");
		if (sum)
			fputs(CSV_BENCH_SUM_HEADER, sum);
	}
	for (int l = 0; l < (int)ARRAY_SIZE(loads); l++) {
		const struct load *ld = &loads[l];
		int nab = 0, naa = 0;
		double m, lo, hi, maa, loaa, hiaa;

		if (opt.loads && !list_has(opt.loads, ld->name))
			continue;
		if (ld->hog && cpu_hog < 0) {
			ksft_print_msg("%s load=%s: no spare CPU for the hog, skipped\n",
				       v->name, ld->name);
			continue;
		}
		for (int r = 0; r < opt.reps && r < MAX_REPS; r++) {
			bool aa_first = (l + r) & 1;

			for (int k = 0; k < 2; k++) {
				bool is_aa = aa_first ^ k;
				struct outcome *o = is_aa ? &aa : &ab;

				if (knob_kind == KNOB_NONE && !is_aa)
					continue;
				run_variant(v, ld, is_aa ? KNOB_AA : KNOB_AB, opt.bench_mib,
					    opt.bench_seconds, o);
				if (o->skipped)
					ksft_exit_skip("%s: %s\n", v->name, o->why);
				if (o->bad || o->bad_final)
					ksft_exit_fail_msg("%s load=%s: %llu corrupted reads\n",
							   v->name, ld->name,
							   (unsigned long long)(o->bad +
										o->bad_final));
				if (is_aa)
					naa += paired_ratios(o, raa + naa);
				else
					nab += paired_ratios(o, rab + nab);
				bench_csv(csv, v, ld, is_aa ? "aa" : "ab", o);
			}
			if (knob_kind == KNOB_NONE) {
				bench_report(v, ld, &aa, false, sum);
				continue;
			}
			bench_report(v, ld, &ab, false, sum);
			bench_report(v, ld, &ab, true, sum);
		}
		m = median_ci(rab, nab, &lo, &hi);
		maa = median_ci(raa, naa, &loaa, &hiaa);
		if (knob_kind == KNOB_NONE)
			ksft_print_msg(FMT_BENCH_NONE, v->name, ld->name, maa, loaa, hiaa,
				       naa);
		else if (knob_sysctl())
			ksft_print_msg(FMT_BENCH_ROCM, v->name, ld->name,
				       knob_name(), m, lo, hi, nab,
				       maa, loaa, hiaa, naa);
		else
			ksft_print_msg(FMT_BENCH_COST, v->name, ld->name, m, lo, hi, nab,
				       maa, loaa, hiaa, naa,
				       lo >= 0.98 ? "on costs at most 2%" :
				       hi < 0.98 ? "on costs more than 2%" :
				       "not resolved at 2%");
	}
	if (sum)
		fclose(sum);
	if (csv)
		fclose(csv);
}

static void usage(const char *prog)
{
	printf("Usage: %s [-b MiB] [-B sec] [-s sec] [-w workers] [-v variant]\n"
	       "          [-o hist.csv] [--force]\n"
	       "       %s --bench [-r rounds] [-S sec] [-M MiB] [-v variant] [-o csv]\n"
	       "          [--loads idle,read,rw,rw_hog] [--knob stages|rocm|order|range|rocm_batch|rocm_compare|none]\n"
	       "  variants: move_pages_4k move_pages_thp mbind_4k migrate_pages_4k\n"
	       "            file_ro_tmpfs file_ro_ext4 (needs --ext4-dir) shared_fork move_pages_shuf\n",
	       prog, prog);
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "force", no_argument, NULL, 1 },
		{ "bench", no_argument, NULL, 2 },
		{ "ext4-dir", required_argument, NULL, 3 },
		{ "loads", required_argument, NULL, 4 },
		{ "knob", required_argument, NULL, 5 },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	int c;

	while ((c = getopt_long(argc, argv, "b:B:s:S:M:w:v:r:o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'b':
			opt.mib = strtoul(optarg, NULL, 0);
			break;
		case 'B':
			opt.baseline = atof(optarg);
			break;
		case 's':
			opt.seconds = atof(optarg);
			break;
		case 'S':
			opt.bench_seconds = atof(optarg);
			break;
		case 'M':
			opt.bench_mib = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			opt.workers = atoi(optarg);
			break;
		case 'v':
			opt.only = optarg;
			break;
		case 'r':
			opt.reps = atoi(optarg);
			break;
		case 'o':
			opt.csv = optarg;
			break;
		case 1:
			opt.force = true;
			break;
		case 2:
			opt.bench = true;
			break;
		case 3:
			opt.ext4_dir = optarg;
			break;
		case 4:
			opt.loads = optarg;
			break;
		case 5:
			if (!strcmp(optarg, "rocm")) {
				knob_kind = KNOB_ROCM;
			} else if (!strcmp(optarg, "order")) {
				knob_kind = KNOB_ORDER;
			} else if (!strcmp(optarg, "range")) {
				knob_kind = KNOB_RANGE;
			} else if (!strcmp(optarg, "rocm_batch")) {
				knob_kind = KNOB_BATCH;
			} else if (!strcmp(optarg, "rocm_compare")) {
				knob_kind = KNOB_COMPARE;
			} else if (!strcmp(optarg, "none")) {
				knob_kind = KNOB_NONE;
			} else if (strcmp(optarg, "stages")) {
				usage(argv[0]);
				exit(KSFT_FAIL);
			}
			break;
		case 'h':
			usage(argv[0]);
			exit(0);
		default:
			usage(argv[0]);
			exit(KSFT_FAIL);
		}
	}
	if (!opt.mib || opt.baseline <= 0 || opt.seconds <= 0 || opt.workers < 1 ||
	    opt.workers > MAX_WORKERS || opt.reps < 1 || opt.reps > MAX_REPS ||
	    !opt.bench_mib || opt.bench_seconds <= 0) {
		usage(argv[0]);
		exit(KSFT_FAIL);
	}
	if (opt.only) {
		for (int i = 0; i < NR_VARIANTS; i++)
			if (!strcmp(opt.only, variants[i].name))
				return;
		usage(argv[0]);
		exit(KSFT_FAIL);
	}
}

/* Pick nodes A and B and the CPUs for workers, migrator and bystander. */
static void pick_topology(void)
{
	struct nu_topo t;
	struct nu_node *a;

	if (nu_topo_read(&t))
		ksft_exit_skip("cannot read the NUMA topology\n");
	if (!t.nr_eligible)
		ksft_exit_skip("no node with CPUs and memory\n");
	a = &t.node[t.eligible[0]];
	node_a = a->id;
	for (int i = 0; i < t.nr_nodes; i++)
		if (t.node[i].id != node_a && t.node[i].has_memory && t.node[i].allowed) {
			node_b = t.node[i].id;
			break;
		}
	if (node_b < 0)
		ksft_exit_skip("needs two memory nodes\n");
	for (int i = 0; i < a->nr_cpus && nr_cpu_workers < MAX_WORKERS; i++)
		cpu_workers[nr_cpu_workers++] = a->cpus[i];
	/* migrator: another CPU of A, else any CPU elsewhere */
	if (a->nr_cpus > 1) {
		cpu_migrator = a->cpus[a->nr_cpus - 1];
		if (nr_cpu_workers > 1)
			nr_cpu_workers--;
	}
	for (int i = 0; i < t.nr_nodes; i++) {
		struct nu_node *nd = &t.node[i];

		for (int c = 0; c < nd->nr_cpus; c++) {
			if (nd->id == node_a)
				continue;
			if (cpu_migrator < 0)
				cpu_migrator = nd->cpus[c];
			else if (cpu_bystander < 0 && nd->cpus[c] != cpu_migrator)
				cpu_bystander = nd->cpus[c];
			else if (cpu_hog < 0 && nd->cpus[c] != cpu_migrator &&
				 nd->cpus[c] != cpu_bystander)
				cpu_hog = nd->cpus[c];
		}
	}
}

/*
 * The variants this invocation checks: -v's, else all but file_ro_ext4
 * without --ext4-dir (migrate_stall_ext4.sh runs that one).
 */
static bool wanted(const struct variant *v)
{
	if (opt.only)
		return !strcmp(opt.only, v->name);
	return opt.ext4_dir || strcmp(v->name, "file_ro_ext4");
}

int main(int argc, char **argv)
{
	char nb[16] = "";

	page_size = sysconf(_SC_PAGESIZE);
	parse_args(argc, argv);
	ksft_print_header();
	pick_topology();
	in_vm = nu_in_vm();
	have_stages = !geteuid() && !access(STAGES_FILE, W_OK);
	/* NUMA balancing would move pages back behind our back. */
	if (!geteuid() && nu_read_str("/proc/sys/kernel/numa_balancing", nb, sizeof(nb)) > 0)
		nu_write_str("/proc/sys/kernel/numa_balancing", "0");
	ksft_print_msg(FMT_ENV, node_a, node_b, opt.workers, nr_cpu_workers, cpu_migrator,
		       cpu_bystander, cpu_hog, opt.bench ? opt.bench_mib : opt.mib,
		       have_stages ? "yes" : "no",
		       in_vm ? "yes" : "no");

	if (opt.bench) {
		run_bench();
	} else {
		int nv = 0;

		for (int i = 0; i < NR_VARIANTS; i++)
			nv += wanted(&variants[i]);
		timing_ok = !in_vm || opt.force;
		ksft_set_plan((timing_ok ? 4 : 2) * nv);
		if (!opt.ext4_dir && !opt.only)
			ksft_print_msg("file_ro_ext4: run by migrate_stall_ext4.sh\n");
		for (int i = 0; i < NR_VARIANTS; i++)
			if (wanted(&variants[i]))
				check_variant(&variants[i]);
	}
	if (nb[0])
		nu_write_str("/proc/sys/kernel/numa_balancing", nb);
	if (opt.bench)
		exit(KSFT_PASS);
	ksft_finished();
}
