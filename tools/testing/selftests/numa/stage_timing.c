// SPDX-License-Identifier: GPL-2.0
/*
 * stage_timing - the migration stage interface counts what really moved.
 *
 * Switches on /sys/kernel/debug/mm/migrate_stages (CONFIG_MIGRATE_STAGES),
 * moves a private anonymous buffer of base pages to another node with
 * move_pages(2) and checks that the per-stage counts for the syscall
 * reason agree with the pages that moved: one alloc, unmap, copy, remap
 * and window per folio (give or take a few transient retries), and at
 * least one batched flush.  Also checks that bad
 * writes are refused and that reset clears the counters.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>

#include "../kselftest.h"
#include "numa_util.h"

#define STAGES_FILE	"/sys/kernel/debug/mm/migrate_stages"
#define LOG_FILE	"/sys/kernel/debug/mm/migrate_stages_log"
/* ts, reason, rc, copy_ns and window_ns of a migrate_stages_log row */
#define LOG_ROW		"%llu,%31[^,],%*d,%*u,%d,%*x,%*x,%*u,%*u,%*u,%llu,%*u,%*u,%llu"
#define NR_PAGES	1024
#define SLACK		16	/* transient retries tolerated */

/* Count of @stage in the "reason @reason" line, -1 if absent. */
static long long reason_count(const char *text, const char *reason,
			      const char *stage)
{
	char key[64], want[64];
	const char *line;

	snprintf(key, sizeof(key), "reason %s ", reason);
	line = strstr(text, key);
	if (!line)
		return -1;
	snprintf(want, sizeof(want), " %s=", stage);
	for (const char *p = line; *p && *p != '\n'; p++)
		if (!strncmp(p, want, strlen(want)))
			return strtoll(p + strlen(want), NULL, 10);
	return -1;
}

/* Value of a "name value" line, -1 if absent. */
static long long total(const char *text, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(text, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static int read_stages(char *buf, size_t len)
{
	return nu_read_all(STAGES_FILE, buf, len);
}

static int spin_stop;

/*
 * Keep the mm live on a second CPU: only then does the rmap walk defer
 * the TLB flush to the batch (on one CPU it flushes locally at once).
 */
static void *spinner(void *arg)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(*(int *)arg, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!__atomic_load_n(&spin_stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/* Pin the caller to one allowed CPU and return another one, or -1. */
static int pick_cpus(void)
{
	cpu_set_t set, one;
	int first = -1;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (first < 0) {
			first = c;
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			sched_setaffinity(0, sizeof(one), &one);
			continue;
		}
		return c;
	}
	return -1;
}

int main(void)
{
	static char text[16384];
	int src = -1, dst = -1, moved = 0, status[NR_PAGES], nodes[NR_PAGES];
	void *pages[NR_PAGES];
	struct nu_topo topo;
	pthread_t spin_tid;
	int spin_cpu, every = 64;
	char cmd[32];
	long page = sysconf(_SC_PAGESIZE);
	long long v;
	char *buf;
	int ret;

	ksft_print_header();
	if (access(STAGES_FILE, F_OK))
		ksft_exit_skip("%s missing (no CONFIG_MIGRATE_STAGES or no debugfs)\n",
			       STAGES_FILE);
	if (geteuid())
		ksft_exit_skip("needs root for debugfs\n");
	if (nu_topo_read(&topo))
		ksft_exit_skip("cannot read the NUMA topology\n");
	for (int i = 0; i < topo.nr_nodes; i++) {
		struct nu_node *nd = &topo.node[i];

		if (!nd->has_memory || !nd->allowed)
			continue;
		if (src < 0 && nd->has_cpu && nd->nr_cpus)
			src = nd->id;
		else if (dst < 0 && nd->id != src)
			dst = nd->id;
	}
	if (src < 0 || dst < 0)
		ksft_exit_skip("needs two memory nodes, one with CPUs\n");
	ksft_set_plan(5);

	/* 1. bad input is refused with EINVAL */
	ret = nu_write_str(STAGES_FILE, "bogus");
	{
		int ret0 = nu_write_str(STAGES_FILE, "sample 0");

		ksft_test_result(ret == -EINVAL && ret0 == -EINVAL,
				 "rejects_bad_input (got %d, %d)\n", ret, ret0);
	}
	/* time every folio so the counts can be compared with what moved */
	if (read_stages(text, sizeof(text)) > 0 && strstr(text, "sample_every "))
		every = strtol(strstr(text, "sample_every ") + 13, NULL, 10);
	if (nu_write_str(STAGES_FILE, "sample 1"))
		ksft_exit_fail_msg("cannot set sampling to every folio\n");

	/* 2. counts agree with what moved */
	if (nu_write_str(STAGES_FILE, "reset") || nu_write_str(STAGES_FILE, "1"))
		ksft_exit_fail_msg("cannot switch %s on\n", STAGES_FILE);
	{
		unsigned long mask = 1UL << src;

		if (nu_set_mempolicy(MPOL_BIND, &mask, 8 * sizeof(mask)))
			ksft_exit_fail_msg("set_mempolicy: %s\n", strerror(errno));
	}
	buf = mmap(NULL, NR_PAGES * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	madvise(buf, NR_PAGES * page, MADV_NOHUGEPAGE);
	for (int i = 0; i < NR_PAGES; i++) {
		buf[i * page] = i;
		pages[i] = buf + i * page;
		nodes[i] = dst;
	}
	nu_set_mempolicy(MPOL_DEFAULT, NULL, 0);
	spin_cpu = pick_cpus();
	if (spin_cpu >= 0 && pthread_create(&spin_tid, NULL, spinner, &spin_cpu))
		spin_cpu = -1;
	if (spin_cpu >= 0)
		usleep(100000);	/* let the spinner reach its CPU */
	ret = nu_move_pages_where(0, NR_PAGES, pages, nodes, status, MPOL_MF_MOVE);
	if (spin_cpu >= 0) {
		__atomic_store_n(&spin_stop, 1, __ATOMIC_RELAXED);
		pthread_join(spin_tid, NULL);
	}
	if (ret < 0)
		ksft_exit_fail_msg("move_pages: %s\n", strerror(errno));
	for (int i = 0; i < NR_PAGES; i++)
		moved += status[i] == dst;
	if (read_stages(text, sizeof(text)) <= 0)
		ksft_exit_fail_msg("cannot read %s\n", STAGES_FILE);
	ksft_print_msg("moved %d of %d pages from node %d to node %d\n", moved,
		       NR_PAGES, src, dst);
	for (char *l = strtok(strdup(text), "\n"); l; l = strtok(NULL, "\n"))
		ksft_print_msg("%s\n", l);
	{
		static const char * const per_folio[] = {
			"alloc", "unmap", "copy", "remap", "window",
		};
		bool ok = moved > 0;

		/*
		 * One event per moved folio; a folio retried after a
		 * transient failure may add one more, never fewer.  The
		 * window is timed only on a batch's first pass.
		 */
		for (int i = 0; i < 5; i++) {
			long long lo = moved, hi = moved + SLACK;

			if (!strcmp(per_folio[i], "window")) {
				lo = moved - SLACK;
				hi = moved;
			}
			v = reason_count(text, "syscall_or_cpuset", per_folio[i]);
			if (v < lo || v > hi) {
				ksft_print_msg("%s count %lld, expected %lld..%lld\n",
					       per_folio[i], v, lo, hi);
				ok = false;
			}
		}
		v = reason_count(text, "syscall_or_cpuset", "flush");
		if (spin_cpu < 0) {
			ksft_print_msg("one CPU only: flush count %lld not checked\n", v);
		} else if (v < 1 || v > moved) {
			ksft_print_msg("flush count %lld, expected 1..%d\n", v, moved);
			ok = false;
		}
		v = total(text, "bytes_copied");
		if (v < (long long)moved * page) {
			ksft_print_msg("bytes_copied %lld < %lld\n", v,
				       (long long)moved * page);
			ok = false;
		}
		ksft_test_result(ok, "counts_match_migrated\n");
	}

	/* 3. the per-folio log has a row for each moved page */
	{
		static char log[1 << 20];
		long long rows = 0, bad = 0;
		char *line, *save;

		if (nu_read_all(LOG_FILE, log, sizeof(log)) <= 0)
			log[0] = '\0';
		for (line = strtok_r(log, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			unsigned long long ts, copy, window;
			char reason[32];
			int rc;

			if (sscanf(line, LOG_ROW, &ts, reason, &rc, &copy, &window) != 5 ||
			    strcmp(reason, "syscall_or_cpuset") || rc)
				continue;
			rows++;
			/* a folio stays unmapped at least while it is copied */
			bad += window && window < copy;
		}
		ksft_test_result(rows >= moved && rows <= moved + SLACK && !bad,
				 "log_records_folios (%lld rows, %lld inconsistent)\n",
				 rows, bad);
	}

	/* 4. every data byte survived the move */
	{
		int bad = 0;

		for (int i = 0; i < NR_PAGES; i++)
			bad += buf[i * page] != (char)i;
		ksft_test_result(!bad, "data_intact (%d pages differ)\n", bad);
	}

	/* 5. reset clears the counters; switching off is accepted */
	nu_write_str(STAGES_FILE, "0");
	snprintf(cmd, sizeof(cmd), "sample %d", every);
	nu_write_str(STAGES_FILE, cmd);
	ret = nu_write_str(STAGES_FILE, "reset");
	read_stages(text, sizeof(text));
	v = total(text, "batches");
	ksft_test_result(!ret && v == 0 && !strstr(text, "reason syscall_or_cpuset"),
			 "reset_clears (batches %lld)\n", v);
	munmap(buf, NR_PAGES * page);
	ksft_finished();
}
