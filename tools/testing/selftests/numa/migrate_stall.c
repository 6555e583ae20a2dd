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
 * bounded_stall (a worker waits about one batch, not a whole call),
 * bystander_stall, and migration_throughput (report).  When the kernel
 * has /sys/kernel/debug/mm/migrate_stages the stage breakdown of each
 * variant is printed too.
 *
 * --bench runs the chosen variants with the stage timing off and on,
 * interleaved, in the same boot, and reports the on/off throughput
 * ratio, the disruption factor and stall percentiles.
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
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "../kselftest.h"
#include "numa_util.h"

#define STAGES_FILE	"/sys/kernel/debug/mm/migrate_stages"
#define CHUNK		64		/* pages between progress stamps */
#define MAX_WORKERS	16
#define MAX_CALLS	4096
#define MAX_REPS	16
#define NR_FORKED	4		/* sharers in the shared_fork variant */
#define PATTERN(i)	(0x5a5a000000000000ULL ^ (uint64_t)(i))

enum kind { V_MOVE_PAGES, V_MBIND, V_MIGRATE_PAGES };

/* One way of making the buffer and moving it. */
struct variant {
	const char *name;	/* prefix of the result names */
	enum kind kind;		/* the system call that moves it */
	bool thp;		/* MADV_HUGEPAGE instead of NOHUGEPAGE */
	bool file;		/* read-only shared file mapping */
	bool shared_fork;	/* MAP_SHARED anon, also mapped by children */
};

static const struct variant variants[] = {
	{ .name = "move_pages_4k",	.kind = V_MOVE_PAGES },
	{ .name = "move_pages_thp",	.kind = V_MOVE_PAGES, .thp = true },
	{ .name = "mbind_4k",		.kind = V_MBIND },
	{ .name = "migrate_pages_4k",	.kind = V_MIGRATE_PAGES },
	{ .name = "file_ro_tmpfs",	.kind = V_MOVE_PAGES, .file = true },
	{ .name = "file_ro_ext4",	.kind = V_MOVE_PAGES, .file = true },
	{ .name = "shared_fork",	.kind = V_MOVE_PAGES, .shared_fork = true },
};

#define NR_VARIANTS	((int)ARRAY_SIZE(variants))

/* Diagnostic and CSV line formats, each kept on one line for grep. */
#define FMT_ENV \
	"env node_a=%d node_b=%d workers=%d worker_cpus=%d migrator_cpu=%d bystander_cpu=%d buffer=%luMiB stages=%s virt=%s\n"
#define FMT_STALL1 \
	"stall variant=%s calls=%d call_ms_p50=%.1f pages_call=%.0f g0_p999_us=%.0f g1_p99_us=%.0f g1_p999_us=%.0f g1_max_us=%.0f\n"
#define FMT_STALL2 \
	"stall variant=%s bystander_p999_us=%.0f/%.0f mbps=%.1f disruption=%.2f tlb_ipis=%lld ipis_per_call=%.1f silence_ms=%.0f\n"
#define FMT_BENCH \
	"bench %s rep=%d stages=%s mbps=%.2f disruption=%.2f p50_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f window_mean_ns=%lld\n"
#define FMT_BENCH_SUM \
	"bench %s: throughput on/off = %.3f (off %.2f MB/s, on %.2f MB/s, median of %d); disruption off %.2f on %.2f\n"
#define FMT_BENCH_PAIRS \
	"bench %s: paired on/off ratios: median %.3f, min %.3f, max %.3f over %d pairs\n"
#define CSV_BENCH_HEADER \
	"variant,rep,stages,calls,mbps,disruption,g1_p50_us,g1_p99_us,g1_p999_us,g1_max_us,window_mean_ns\n"
#define FMT_BENCH_CSV \
	"%s,%d,%s,%d,%.3f,%.3f,%.0f,%.0f,%.0f,%.0f,%lld\n"
#define WHY_VM \
	"%s.%s: p99.9 %.1f ms vs bound %.1f ms, in a VM (--force)\n"

static struct {
	unsigned long mib;	/* buffer size */
	double baseline;	/* seconds without migration */
	double seconds;		/* seconds with migration */
	int workers;		/* worker threads on node A */
	bool force;		/* apply timing bounds in VMs */
	bool bench;		/* off/on comparison instead of checks */
	int reps;		/* bench repetitions */
	const char *only;	/* run only this variant */
	const char *ext4_dir;	/* where the file_ro_ext4 file goes */
	const char *csv;	/* bench CSV */
} opt = {
	.mib = 16,
	.baseline = 1,
	.seconds = 3,
	.workers = 2,
	.reps = 3,
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
	struct nu_hist gaps[2];	/* [0] baseline, [1] migration phase */
};

static int phase;		/* 0 baseline, 1 migrating, 2 stop */
static long page_size;
static int node_a = -1, node_b = -1;
static int cpu_workers[MAX_WORKERS], nr_cpu_workers;
static int cpu_migrator = -1, cpu_bystander = -1;
static bool in_vm, have_stages;

static int get_phase(void)
{
	return __atomic_load_n(&phase, __ATOMIC_ACQUIRE);
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *stamp_thread(void *arg)
{
	struct stamper *s = arg;
	uint64_t last, now;
	int ph;

	pin(s->cpu);
	last = nu_now_ns();
	while ((ph = get_phase()) < 2) {
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
			if (ph == 2)
				break;
		}
		if (ph < 2)
			s->sweeps++;
	}
	return NULL;
}

static void nodemask_of(int node, unsigned long *mask)
{
	memset(mask, 0, 2 * sizeof(*mask));
	mask[node / (8 * sizeof(long))] |= 1UL << (node % (8 * sizeof(long)));
}

/* Move the buffer to @to; return pages reported on @to, -1 on error. */
static long move_buffer(const struct variant *v, char *buf, size_t pages,
			int from, int to, void **addrs, int *nodes, int *status)
{
	unsigned long fm[2], tm[2];
	int flags = v->shared_fork ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE;
	long on = 0;

	switch (v->kind) {
	case V_MOVE_PAGES:
		for (size_t i = 0; i < pages; i++)
			nodes[i] = to;
		if (nu_move_pages(0, pages, addrs, nodes, status, flags) < 0)
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

static long long tlb_ipis(void)
{
	char line[4096];
	long long total = 0;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		while (*p == ' ')
			p++;
		if (strncmp(p, "TLB:", 4))
			continue;
		for (p += 4; *p;) {
			char *end;
			long long v = strtoll(p, &end, 10);

			if (end == p)
				break;
			total += v;
			p = end;
		}
	}
	fclose(f);
	return total;
}

/* What one run of a variant measured. */
struct outcome {
	bool skipped;			/* variant could not run here */
	char why[160];			/* and why */
	int calls;			/* migration calls completed */
	double call_ns[MAX_CALLS];	/* duration of each */
	double pages_per_call;		/* pages asked to move per call */
	long min_on_target;		/* fewest pages on target after a call */
	long moved_pages;		/* pages reported on target, summed */
	double seconds;			/* length of the migration phase */
	uint64_t bad;			/* pattern mismatches */
	uint64_t bad_final;		/* mismatches in the final check */
	double max_silence;		/* longest window with no progress, s */
	struct nu_hist g0, g1;		/* worker gaps baseline / migrating */
	struct nu_hist b0, b1;		/* bystander gaps */
	double work0, work1;		/* worker chunks per second */
	long long ipis;			/* TLB shootdown IPIs in the phase */
	char stages[8192];		/* debugfs breakdown, if any */
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
		int fd;

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
		/* a read-only file is clean: no writeback races the migration */
		if (fsync(fd)) {
			snprintf(why, why_len, "fsync: %s", strerror(errno));
			close(fd);
			return NULL;
		}
		buf = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
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
		int ready[2], got = 0;
		char c;

		if (pipe(ready)) {
			snprintf(why, why_len, "pipe: %s", strerror(errno));
			return NULL;
		}
		for (int k = 0; k < NR_FORKED; k++) {
			kids[k] = fork();
			if (!kids[k]) {
				/* map every page in this mm too, say so, wait */
				touch_all(buf, bytes);
				if (write(ready[1], "r", 1) != 1)
					_exit(1);
				pause();
				_exit(0);
			}
		}
		/* migrate only once every sharer has mapped every page */
		close(ready[1]);
		while (got < NR_FORKED && read(ready[0], &c, 1) == 1)
			got++;
		close(ready[0]);
		if (got < NR_FORKED) {
			snprintf(why, why_len, "only %d of %d sharers mapped the buffer",
				 got, NR_FORKED);
			return NULL;
		}
	}
	return buf;
}

static void stages_cmd(const char *cmd)
{
	if (have_stages)
		nu_write_str(STAGES_FILE, cmd);
}

/* Run @v once; @stages_on switches the stage timing for the phase. */
static void run_variant(const struct variant *v, bool stages_on,
			struct outcome *o)
{
	size_t bytes = opt.mib << 20, pages = bytes / page_size;
	struct stamper st[MAX_WORKERS + 1], *by = NULL;
	pid_t kids[NR_FORKED] = { 0 };
	unsigned long amask[2];
	void **addrs;
	int *nodes, *status, nw = 0;
	uint64_t last_chunks = 0;
	double t_start, t_end, last_progress;
	long long ipi0;
	char *buf, *bybuf = NULL;
	int dir = 0;

	memset(o, 0, sizeof(*o));
	o->min_on_target = -1;
	nodemask_of(node_a, amask);
	pin(cpu_workers[0]);
	nu_set_mempolicy(MPOL_BIND, amask, 8 * sizeof(amask));
	buf = make_buffer(v, bytes, o->why, sizeof(o->why), kids);
	nu_set_mempolicy(MPOL_DEFAULT, NULL, 0);
	if (!buf) {
		for (int k = 0; k < NR_FORKED; k++)
			if (kids[k] > 0) {
				kill(kids[k], SIGKILL);
				waitpid(kids[k], NULL, 0);
			}
		o->skipped = true;
		return;
	}
	addrs = calloc(pages, sizeof(*addrs));
	nodes = calloc(pages, sizeof(*nodes));
	status = calloc(pages, sizeof(*status));
	for (size_t i = 0; i < pages; i++)
		addrs[i] = buf + i * page_size;

	memset(st, 0, sizeof(st));
	__atomic_store_n(&phase, 0, __ATOMIC_RELEASE);
	for (int w = 0; w < opt.workers; w++) {
		size_t slice = pages / opt.workers;

		st[w].cpu = cpu_workers[w % nr_cpu_workers];
		st[w].buf = buf + w * slice * page_size;
		st[w].first = w * slice;
		st[w].pages = w == opt.workers - 1 ? pages - w * slice : slice;
		st[w].write = !v->file;
		pthread_create(&st[w].tid, NULL, stamp_thread, &st[w]);
		nw++;
	}
	if (cpu_bystander >= 0) {
		by = &st[nw];
		bybuf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		/* first touch from the bystander's CPU: its memory is local there */
		pin(cpu_bystander);
		for (size_t i = 0; i < (size_t)(1 << 20) / page_size; i++)
			*(uint64_t *)(bybuf + i * page_size) = PATTERN(i);
		by->cpu = cpu_bystander;
		by->buf = bybuf;
		by->pages = (1 << 20) / page_size;
		by->write = true;
		pthread_create(&by->tid, NULL, stamp_thread, by);
	}
	pin(cpu_migrator);

	/* Baseline. */
	usleep(opt.baseline * 1e6);
	for (int w = 0; w < nw; w++)
		o->work0 += st[w].chunks;
	o->work0 /= opt.baseline;

	/* Migration phase. */
	if (stages_on) {
		stages_cmd("reset");
		stages_cmd("1");
	}
	ipi0 = tlb_ipis();
	last_chunks = 0;
	for (int w = 0; w < nw; w++)
		last_chunks += st[w].chunks;
	o->work1 = -(double)last_chunks;
	__atomic_store_n(&phase, 1, __ATOMIC_RELEASE);
	t_start = nu_now();
	last_progress = t_start;
	while (nu_now() - t_start < opt.seconds && o->calls < MAX_CALLS) {
		double c0 = nu_now(), c1;
		long on = move_buffer(v, buf, pages, dir ? node_b : node_a,
				      dir ? node_a : node_b, addrs, nodes, status);
		uint64_t chunks = 0;

		c1 = nu_now();
		if (on < 0) {
			snprintf(o->why, sizeof(o->why), "migration call failed: %s",
				 strerror(errno));
			break;
		}
		o->call_ns[o->calls++] = (c1 - c0) * 1e9;
		o->moved_pages += on;
		if (o->min_on_target < 0 || on < o->min_on_target)
			o->min_on_target = on;
		dir = !dir;
		/* progress: any worker chunk since the last look */
		for (int w = 0; w < nw; w++)
			chunks += __atomic_load_n(&st[w].chunks, __ATOMIC_RELAXED);
		if (chunks != last_chunks) {
			last_chunks = chunks;
			last_progress = c1;
		} else if (c1 - last_progress > o->max_silence) {
			o->max_silence = c1 - last_progress;
		}
	}
	t_end = nu_now();
	o->seconds = t_end - t_start;
	o->pages_per_call = pages;
	__atomic_store_n(&phase, 2, __ATOMIC_RELEASE);
	for (int w = 0; w < nw; w++) {
		pthread_join(st[w].tid, NULL);
		o->work1 += st[w].chunks;
		o->bad += st[w].bad;
		nu_hist_merge(&o->g0, &st[w].gaps[0]);
		nu_hist_merge(&o->g1, &st[w].gaps[1]);
		/* the longest gap also bounds silence */
		if (st[w].gaps[1].max / 1e9 > o->max_silence)
			o->max_silence = st[w].gaps[1].max / 1e9;
	}
	o->work1 /= o->seconds;
	if (by) {
		pthread_join(by->tid, NULL);
		o->b0 = by->gaps[0];
		o->b1 = by->gaps[1];
		munmap(bybuf, 1 << 20);
	}
	o->ipis = ipi0 >= 0 ? tlb_ipis() - ipi0 : -1;
	if (stages_on && have_stages) {
		nu_read_all(STAGES_FILE, o->stages, sizeof(o->stages));
		stages_cmd("0");
	}

	/* Final integrity check of the whole buffer. */
	for (size_t i = 0; i < pages; i++) {
		uint64_t *w = (uint64_t *)(buf + i * page_size);

		if (w[0] != PATTERN(i))
			o->bad_final++;
	}
	for (int k = 0; k < NR_FORKED; k++)
		if (kids[k] > 0) {
			kill(kids[k], SIGKILL);
			waitpid(kids[k], NULL, 0);
		}
	munmap(buf, bytes);
	free(addrs);
	free(nodes);
	free(status);
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
		       o->calls ? (double)o->ipis / o->calls : 0, o->max_silence * 1e3);
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

static void check_variant(const struct variant *v)
{
	static struct outcome o;
	bool timing_ok = !in_vm || opt.force;
	double med = 0, bound;
	uint64_t p0, p1;

	run_variant(v, true, &o);
	if (o.skipped) {
		ksft_test_result_skip("%s.placement_and_integrity: %s\n", v->name, o.why);
		ksft_test_result_skip("%s.progress: %s\n", v->name, o.why);
		ksft_test_result_skip("%s.bounded_stall: %s\n", v->name, o.why);
		ksft_test_result_skip("%s.bystander_stall: %s\n", v->name, o.why);
		ksft_test_result_skip("%s.migration_throughput: %s\n", v->name, o.why);
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
				 "%s.placement_and_integrity (worst call left %ld of %.0f on target)\n",
				 v->name, o.min_on_target, o.pages_per_call);

	/* progress: nobody stopped for a whole window */
	bound = 1.0 > 2 * med / 1e9 ? 1.0 : 2 * med / 1e9;
	ksft_test_result(o.max_silence < bound,
			 "%s.progress (longest stop %.0f ms, bound %.0f ms)\n",
			 v->name, o.max_silence * 1e3, bound * 1e3);

	/* bounded stall: about one batch, not a whole call */
	p0 = nu_hist_pct(&o.g0, 99.9);
	p1 = nu_hist_pct(&o.g1, 99.9);
	bound = 0.5 * med;
	if (bound < 20.0 * p0)
		bound = 20.0 * p0;
	if (bound < 1e6)
		bound = 1e6;
	if (o.calls < 5)
		ksft_test_result_skip("%s.bounded_stall: only %d calls\n", v->name, o.calls);
	else if (o.pages_per_call < 8 * 512)
		ksft_test_result_skip("%s.bounded_stall: fewer than 8 batches per call\n",
				      v->name);
	else if (p0 > 5e6)
		ksft_test_result_skip("%s.bounded_stall: noisy baseline (p99.9 %.1f ms)\n",
				      v->name, p0 / 1e6);
	else if (!timing_ok)
		ksft_test_result_skip(WHY_VM, v->name, "bounded_stall", p1 / 1e6,
				      bound / 1e6);
	else
		ksft_test_result(p1 <= bound, "%s.bounded_stall (p99.9 %.1f ms, bound %.1f ms)\n",
				 v->name, p1 / 1e6, bound / 1e6);

	/* bystander */
	p0 = nu_hist_pct(&o.b0, 99.9);
	p1 = nu_hist_pct(&o.b1, 99.9);
	bound = 10.0 * p0 > 2e6 ? 10.0 * p0 : 2e6;
	if (cpu_bystander < 0)
		ksft_test_result_skip("%s.bystander_stall: no CPU on another node\n", v->name);
	else if (!timing_ok)
		ksft_test_result_skip(WHY_VM, v->name, "bystander_stall", p1 / 1e6,
				      bound / 1e6);
	else
		ksft_test_result(p1 <= bound, "%s.bystander_stall (p99.9 %.1f ms, bound %.1f ms)\n",
				 v->name, p1 / 1e6, bound / 1e6);

	/* throughput: reported; moving nothing at all is a failure */
	ksft_test_result(o.moved_pages > 0, "%s.migration_throughput (%.1f MB/s)\n",
			 v->name, o.seconds ?
			 o.moved_pages * (double)page_size / (1 << 20) / o.seconds : 0);
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

/* One bench run of @v with the stage timing @on; returns MB/s. */
static double bench_one(const struct variant *v, int rep, bool on, FILE *csv,
			double *disruption)
{
	static struct outcome o;
	long long win;
	double mbps;

	run_variant(v, on, &o);
	if (o.skipped)
		ksft_exit_skip("%s: %s\n", v->name, o.why);
	mbps = o.moved_pages * (double)page_size / (1 << 20) / o.seconds;
	*disruption = o.work0 > 0 ? o.work1 / o.work0 : 0;
	win = window_mean(o.stages);
	ksft_print_msg(FMT_BENCH, v->name, rep, on ? "on" : "off", mbps, *disruption,
		       nu_hist_pct(&o.g1, 50) / 1e3, nu_hist_pct(&o.g1, 99) / 1e3,
		       nu_hist_pct(&o.g1, 99.9) / 1e3, o.g1.max / 1e3, win);
	if (csv)
		fprintf(csv, FMT_BENCH_CSV, v->name, rep, on ? "on" : "off", o.calls,
			mbps, *disruption, nu_hist_pct(&o.g1, 50) / 1e3,
			nu_hist_pct(&o.g1, 99) / 1e3, nu_hist_pct(&o.g1, 99.9) / 1e3,
			o.g1.max / 1e3, win);
	return mbps;
}

/*
 * Off/on comparison of the stage timing in one boot: the runs alternate
 * off, on, off, on... so drift hits both alike; medians are compared.
 */
static void bench(void)
{
	FILE *csv = opt.csv ? fopen(opt.csv, "w") : NULL;

	if (csv)
		fputs(CSV_BENCH_HEADER, csv);
	for (int vi = 0; vi < NR_VARIANTS; vi++) {
		const struct variant *v = &variants[vi];
		double rate[2][MAX_REPS], dis[2][MAX_REPS], pair[MAX_REPS], off, on;
		int n = 0;

		if (strcmp(v->name, opt.only ? opt.only : "move_pages_4k"))
			continue;
		for (int r = 0; r < opt.reps && r < MAX_REPS; r++, n++)
			for (int i = 0; i < 2; i++)
				rate[i][n] = bench_one(v, r, i, csv, &dis[i][n]);
		/* each on run against the off run just before it */
		for (int r = 0; r < n; r++)
			pair[r] = rate[0][r] > 0 ? rate[1][r] / rate[0][r] : 0;
		/* nu_median() sorts: pairs first */
		off = nu_median(rate[0], n);
		on = nu_median(rate[1], n);
		ksft_print_msg(FMT_BENCH_SUM, v->name, off > 0 ? on / off : 0, off,
			       on, n, nu_median(dis[0], n), nu_median(dis[1], n));
		ksft_print_msg(FMT_BENCH_PAIRS, v->name, nu_median(pair, n),
			       nu_min(pair, n), nu_max(pair, n), n);
	}
	if (csv)
		fclose(csv);
}

static void usage(const char *prog)
{
	printf("Usage: %s [-b MiB] [-B sec] [-s sec] [-w workers] [-v variant]\n"
	       "          [-o hist.csv] [--force]\n"
	       "       %s --bench [-r reps] [-v variant] [-o csv]\n"
	       "  variants: move_pages_4k move_pages_thp mbind_4k migrate_pages_4k\n"
	       "            file_ro_tmpfs file_ro_ext4 (needs --ext4-dir) shared_fork\n",
	       prog, prog);
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "force", no_argument, NULL, 1 },
		{ "bench", no_argument, NULL, 2 },
		{ "ext4-dir", required_argument, NULL, 3 },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	int c;

	while ((c = getopt_long(argc, argv, "b:B:s:w:v:r:o:h", lo, NULL)) != -1) {
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
		case 'h':
			usage(argv[0]);
			exit(0);
		default:
			usage(argv[0]);
			exit(KSFT_FAIL);
		}
	}
	if (!opt.mib || opt.baseline <= 0 || opt.seconds <= 0 || opt.workers < 1 ||
	    opt.workers > MAX_WORKERS || opt.reps < 1) {
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
		}
	}
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
		       cpu_bystander, opt.mib, have_stages ? "yes" : "no",
		       in_vm ? "yes" : "no");

	if (opt.bench) {
		bench();
	} else {
		int nv = 0;

		for (int i = 0; i < NR_VARIANTS; i++)
			nv += !opt.only || !strcmp(opt.only, variants[i].name);
		ksft_set_plan(5 * nv);
		for (int i = 0; i < NR_VARIANTS; i++)
			if (!opt.only || !strcmp(opt.only, variants[i].name))
				check_variant(&variants[i]);
	}
	if (nb[0])
		nu_write_str("/proc/sys/kernel/numa_balancing", nb);
	if (opt.bench)
		exit(KSFT_PASS);
	ksft_finished();
}
