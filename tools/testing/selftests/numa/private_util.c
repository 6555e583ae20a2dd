// SPDX-License-Identifier: GPL-2.0
/* Helpers of the private-node selftests: see private_util.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "numa_util.h"
#include "private_util.h"

int npt_write(const char *file, const char *fmt, ...)
{
	char path[128], val[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), NPT "%s", file);
	return nu_write_str(path, val);
}

int npt_read(const char *file, char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), NPT "%s", file);
	return nu_read_all(path, buf, len) < 0 ? -1 : 0;
}

int carved_nodes(int *nids, int max, bool free_only)
{
	char buf[1024], state[16], *line, *save;
	int n = 0, nid, i;

	if (npt_read("ranges", buf, sizeof(buf)))
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%d %*s %*s %15s", &nid, state) != 2)
			continue;
		if (free_only && strcmp(state, "free"))
			continue;
		for (i = 0; i < n && nids[i] != nid; i++)
			;
		if (i == n && n < max)
			nids[n++] = nid;
	}
	return n;
}

long long meminfo_kb(int nid, const char *key)
{
	char path[128], buf[4096], *p;

	snprintf(path, sizeof(path), NODE_SYS "node%d/meminfo", nid);
	if (nu_read_all(path, buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, key);
	return p ? atoll(p + strlen(key) + 1) : -1;
}

int move_all(char *p, size_t len, int nid)
{
	unsigned long i, n = len / PAGE;
	void **pages = calloc(n, sizeof(*pages));
	int *nodes = calloc(n, sizeof(*nodes));
	int *status = calloc(n, sizeof(*status));
	int st;

	for (i = 0; i < n; i++) {
		pages[i] = p + i * PAGE;
		nodes[i] = nid;
	}
	st = nu_move_pages_where(0, n, pages, nodes, status, MPOL_MF_MOVE_ALL) < 0 ?
		-errno : status[0];
	free(pages);
	free(nodes);
	free(status);
	return st;
}

/* This task's full NUMA balancing scans so far; -1 if not shown. */
static long numa_scan_seq(void)
{
	char buf[8192], *at;

	if (nu_read_all("/proc/self/sched", buf, sizeof(buf)) < 0)
		return -1;
	at = strstr(buf, "numa_scan_seq");
	at = at ? strchr(at, ':') : NULL;
	return at ? atol(at + 1) : -1;
}

/* The child of balance_off(): fills @run. */
static void balance_child(int nid, int cpu, int passes, int secs,
			  struct nb_run *run)
{
	char *p = mmap(NULL, NB_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double start = nu_now(), end = start + secs;
	long seq0, seq;

	nu_pin_cpu(cpu);
	if (p == MAP_FAILED)
		return;
	nu_fill(p, NB_LEN, 0xba1);
	move_all(p, NB_LEN, nid);
	run->placed = nu_pages_on(p, NB_LEN, nid);
	run->left = run->placed;
	seq0 = numa_scan_seq();
	seq = seq0;
	if (passes && seq0 < 0)
		end = start + NB_OFF_BLIND_SECS;
	while (run->left > 0 && nu_now() < end &&
	       (!passes || seq0 < 0 || seq - seq0 < passes)) {
		/* the scans done before this read */
		seq = numa_scan_seq();
		nu_read_pages(p, NB_LEN);
		run->left = nu_pages_on(p, NB_LEN, nid);
	}
	run->passes = seq0 < 0 ? -1 : seq - seq0;
	run->secs = nu_now() - start;
	run->intact = nu_intact(p, NB_LEN, 0xba1);
	/* what NB_OFF_PASSES is measured against */
	if (run->placed > 0 && !run->left)
		fprintf(stderr, "# node %d emptied after %.1f s of touching\n",
			nid, run->secs);
}

bool balance_off(int nid, int cpu, int passes, int secs, struct nb_run *run)
{
	int pipefd[2];
	bool ok;
	pid_t pid;

	memset(run, 0, sizeof(*run));
	run->left = -1;
	if (pipe(pipefd))
		return false;
	pid = fork();
	if (!pid) {
		balance_child(nid, cpu, passes, secs, run);
		if (write(pipefd[1], run, sizeof(*run)) != sizeof(*run))
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	ok = pid > 0 && read(pipefd[0], run, sizeof(*run)) == sizeof(*run);
	close(pipefd[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return ok;
}

const char *balancing_on(char was[3][16], bool *saved, const char *mode)
{
	if (nu_read_str(BALANCING, was[0], 16) <= 0 ||
	    nu_read_str(SCAN_DELAY, was[1], 16) <= 0 ||
	    nu_read_str(SCAN_MIN, was[2], 16) <= 0)
		return "no NUMA balancing or no sched debugfs";
	*saved = true;
	if (nu_write_str(BALANCING, mode) || nu_write_str(SCAN_DELAY, "0") ||
	    nu_write_str(SCAN_MIN, "10"))
		return "cannot switch NUMA balancing on";
	return NULL;
}

void balancing_restore(char was[3][16])
{
	nu_write_str(SCAN_MIN, was[2]);
	nu_write_str(SCAN_DELAY, was[1]);
	nu_write_str(BALANCING, was[0]);
}

int node0_cpu(void)
{
	struct nu_topo topo;
	struct nu_node *n;

	if (nu_topo_read(&topo))
		return -1;
	n = nu_node_by_id(&topo, 0);
	return n && n->nr_cpus ? n->cpus[0] : -1;
}
