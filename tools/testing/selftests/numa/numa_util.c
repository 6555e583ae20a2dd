// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers shared by the numa selftests.  Everything comes from sysfs and
 * procfs so the tests build and run without libnuma or hwloc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "numa_util.h"

#define NODE_SYSFS	"/sys/devices/system/node"
#define CPU_SYSFS	"/sys/devices/system/cpu"

int nu_read_str(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return n;
}

/* Read a whole (seq_file) file, which may take many reads; bytes or -errno. */
long nu_read_all(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

long long nu_read_ll(const char *path)
{
	char buf[64];

	if (nu_read_str(path, buf, sizeof(buf)) <= 0)
		return -1;
	return strtoll(buf, NULL, 0);
}

int nu_write_str(const char *path, const char *val)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

/*
 * Parse a kernel list ("0-3,8,10-11") into @out; returns the number of
 * entries, or -1 on a malformed list.  Entries beyond @max are dropped.
 */
int nu_parse_list(const char *s, int *out, int max)
{
	int n = 0;

	while (*s) {
		char *end;
		long a, b;

		if (*s == ',' || isspace((unsigned char)*s)) {
			s++;
			continue;
		}
		a = strtol(s, &end, 10);
		if (end == s || a < 0)
			return -1;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a)
				return -1;
		}
		for (; a <= b; a++)
			if (n < max)
				out[n++] = a;
		s = end;
	}
	return n;
}

static bool in_list(const int *v, int n, int x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* Read a list file; a missing file yields @dflt entries 0..dflt-1. */
static int read_list(const char *path, int *out, int max, int dflt)
{
	char buf[4096];

	if (nu_read_str(path, buf, sizeof(buf)) < 0) {
		for (int i = 0; i < dflt && i < max; i++)
			out[i] = i;
		return dflt < max ? dflt : max;
	}
	return nu_parse_list(buf, out, max);
}

static int mems_allowed(int *out, int max)
{
	char line[4096];
	int n = -1;
	FILE *f;

	f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Mems_allowed_list:", 18)) {
			n = nu_parse_list(line + 18, out, max);
			break;
		}
	}
	fclose(f);
	return n;
}

/* First CPU of @cpu's SMT sibling list: a key naming its core. */
static int core_key(int cpu)
{
	char path[128], buf[256];
	int sib[NU_MAX_CPUS];

	snprintf(path, sizeof(path), CPU_SYSFS "/cpu%d/topology/thread_siblings_list",
		 cpu);
	if (nu_read_str(path, buf, sizeof(buf)) <= 0 ||
	    nu_parse_list(buf, sib, NU_MAX_CPUS) <= 0)
		return cpu;
	return sib[0];
}

static void node_cpus(struct nu_node *nd, const cpu_set_t *aff, bool numa)
{
	static int list[NU_MAX_CPUS], keys[NU_MAX_CPUS];
	int nr, nk = 0, i;
	char path[128];

	if (numa) {
		snprintf(path, sizeof(path), NODE_SYSFS "/node%d/cpulist", nd->id);
		nr = read_list(path, list, NU_MAX_CPUS, 0);
	} else {
		nr = 0;
		for (i = 0; i < CPU_SETSIZE && nr < NU_MAX_CPUS; i++)
			if (CPU_ISSET(i, aff))
				list[nr++] = i;
	}
	nd->nr_cpus = 0;
	/* One CPU per core first, then the SMT siblings. */
	for (i = 0; i < nr; i++) {
		int key;

		if (!CPU_ISSET(list[i], aff))
			continue;
		key = core_key(list[i]);
		if (in_list(keys, nk, key))
			continue;
		keys[nk++] = key;
		nd->cpus[nd->nr_cpus++] = list[i];
	}
	nd->nr_cores = nd->nr_cpus;
	for (i = 0; i < nr; i++)
		if (CPU_ISSET(list[i], aff) &&
		    !in_list(nd->cpus, nd->nr_cpus, list[i]))
			nd->cpus[nd->nr_cpus++] = list[i];
}

int nu_topo_read(struct nu_topo *t)
{
	int ids[NU_MAX_NODES], cpu[NU_MAX_NODES], mem[NU_MAX_NODES];
	int allowed[NU_MAX_NODES];
	int nr_ids, nr_cpu, nr_mem, nr_allowed;
	bool numa = access(NODE_SYSFS, F_OK) == 0;
	cpu_set_t aff;

	memset(t, 0, sizeof(*t));
	if (sched_getaffinity(0, sizeof(aff), &aff))
		return -errno;

	nr_ids = read_list(NODE_SYSFS "/online", ids, NU_MAX_NODES, 1);
	nr_cpu = read_list(NODE_SYSFS "/has_cpu", cpu, NU_MAX_NODES, 1);
	nr_mem = read_list(NODE_SYSFS "/has_memory", mem, NU_MAX_NODES, 1);
	nr_allowed = mems_allowed(allowed, NU_MAX_NODES);
	if (nr_ids <= 0)
		return -ENOENT;

	for (int i = 0; i < nr_ids; i++) {
		struct nu_node *nd = &t->node[t->nr_nodes++];

		nd->id = ids[i];
		nd->has_cpu = in_list(cpu, nr_cpu, nd->id);
		nd->has_memory = in_list(mem, nr_mem, nd->id);
		nd->allowed = nr_allowed < 0 || in_list(allowed, nr_allowed, nd->id);
		node_cpus(nd, &aff, numa);
		if (nd->has_memory && nd->allowed)
			t->nr_mem_nodes++;
		if (nd->has_cpu && nd->has_memory && nd->allowed && nd->nr_cpus)
			t->eligible[t->nr_eligible++] = i;
	}
	return 0;
}

struct nu_node *nu_node_by_id(struct nu_topo *t, int id)
{
	for (int i = 0; i < t->nr_nodes; i++)
		if (t->node[i].id == id)
			return &t->node[i];
	return NULL;
}

long nu_mbind(void *addr, unsigned long len, int mode,
	      const unsigned long *nodemask, unsigned long maxnode,
	      unsigned int flags)
{
	return syscall(__NR_mbind, addr, len, mode, nodemask, maxnode, flags);
}

long nu_set_mempolicy(int mode, const unsigned long *nodemask,
		      unsigned long maxnode)
{
	return syscall(__NR_set_mempolicy, mode, nodemask, maxnode);
}

long nu_get_mempolicy(int *mode, unsigned long *nodemask,
		      unsigned long maxnode, void *addr, unsigned long flags)
{
	return syscall(__NR_get_mempolicy, mode, nodemask, maxnode, addr, flags);
}

long nu_move_pages(int pid, unsigned long count, void **pages,
		   const int *nodes, int *status, int flags)
{
	return syscall(__NR_move_pages, pid, count, pages, nodes, status, flags);
}

long nu_move_pages_where(int pid, unsigned long count, void **pages,
			 const int *nodes, int *status, int flags)
{
	long left = nu_move_pages(pid, count, pages, nodes, status, flags);

	if (left > 0 && nu_move_pages(pid, count, pages, NULL, status, 0) < 0)
		return -1;
	return left;
}

long nu_migrate_pages(int pid, unsigned long maxnode,
		      const unsigned long *old_nodes,
		      const unsigned long *new_nodes)
{
	return syscall(__NR_migrate_pages, pid, maxnode, old_nodes, new_nodes);
}

int nu_read_numastat(int node, struct nu_numastat *ns)
{
	char path[128], key[64];
	unsigned long long val;
	FILE *f;

	memset(ns, 0, sizeof(*ns));
	snprintf(path, sizeof(path), NODE_SYSFS "/node%d/numastat", node);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fscanf(f, "%63s %llu", key, &val) == 2) {
		if (!strcmp(key, "numa_hit"))
			ns->numa_hit = val;
		else if (!strcmp(key, "numa_miss"))
			ns->numa_miss = val;
		else if (!strcmp(key, "local_node"))
			ns->local_node = val;
		else if (!strcmp(key, "other_node"))
			ns->other_node = val;
	}
	fclose(f);
	return 0;
}

long long nu_node_memfree_kb(int node)
{
	char path[128], line[256];
	long long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), NODE_SYSFS "/node%d/meminfo", node);
	f = fopen(path, "r");
	if (!f)
		f = fopen("/proc/meminfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "MemFree:");

		if (p) {
			kb = strtoll(p + 8, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb;
}

long long nu_vmstat(const char *name)
{
	char key[128];
	unsigned long long val;
	long long ret = -1;
	FILE *f;

	f = fopen("/proc/vmstat", "r");
	if (!f)
		return -1;
	while (fscanf(f, "%127s %llu", key, &val) == 2) {
		if (!strcmp(key, name)) {
			ret = val;
			break;
		}
	}
	fclose(f);
	return ret;
}

long nu_anon_huge_kb(void)
{
	char buf[4096], *p;

	if (nu_read_all("/proc/self/smaps_rollup", buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "AnonHugePages:");
	return p ? atol(p + strlen("AnonHugePages:")) : -1;
}

/*
 * x86 guests have the hypervisor CPU flag; elsewhere (arm64) the firmware
 * names the machine: qemu's "virt" board in the device tree, or QEMU in
 * the DMI tables.
 */
bool nu_in_vm(void)
{
	char line[4096];
	bool vm = false;
	ssize_t n;
	FILE *f;

	f = fopen("/proc/cpuinfo", "r");
	if (f) {
		while (!vm && fgets(line, sizeof(line), f))
			if (!strncmp(line, "flags", 5) && strstr(line, " hypervisor"))
				vm = true;
		fclose(f);
	}
	if (vm)
		return true;
	/* the compatible list is NUL-separated: look at its first entry */
	n = nu_read_all("/sys/firmware/devicetree/base/compatible", line,
			sizeof(line));
	if (n > 0 && strstr(line, "linux,dummy-virt"))
		return true;
	n = nu_read_all("/sys/devices/virtual/dmi/id/sys_vendor", line,
			sizeof(line));
	return n > 0 && (strstr(line, "QEMU") || strstr(line, "KVM"));
}

/* All CPUs' busy (not idle, not iowait) and total jiffies from /proc/stat. */
int nu_read_cpu_times(unsigned long long *busy, unsigned long long *total)
{
	unsigned long long v[10] = { 0 };
	FILE *f;
	int n;

	f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
		   &v[8], &v[9]);
	fclose(f);
	if (n < 4)
		return -1;
	*total = 0;
	for (int i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4];	/* minus idle and iowait */
	return 0;
}

/*
 * The undo shell: records "op<TAB>path<TAB>value" on its stdin, "q" to
 * leave; at end of file it undoes them in reverse.  It holds the lock
 * file (fd 3) until it exits.
 */
static const char nu_undo_sh[] =
	"todo=''\n"
	"while IFS='\t' read -r op arg val; do\n"
	"	[ \"$op\" = q ] && exit 0\n"
	"	todo=\"$op\t$arg\t$val\n$todo\"\n"
	"done\n"
	"printf '%s' \"$todo\" | while IFS='\t' read -r op arg val; do\n"
	"	case $op in\n"
	"	k) printf '%s\\n' \"$val\" > \"$arg\" ;;\n"
	"	u) umount -l -- \"$arg\" ;;\n"
	"	d) rmdir -- \"$arg\" ;;\n"
	"	esac\n"
	"done\n";

#define NU_UNDO_LOCK	"/tmp/numa_util_undo.lock"
#define NU_HUGE_POOL	"/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/%s"
#define NU_UNDO_WAIT_S	10

static int nu_undo_fd = -1, nu_undo_lock = -1;
static pid_t nu_undo_pid = -1;
static bool nu_undo_broken;	/* no shell: fail at once from now on */

/*
 * The lock an earlier test's undo shell holds until it has undone what
 * that test left; a close-on-exec descriptor at 10 or above, or -1.
 */
static int nu_undo_wait_lock(void)
{
	int fd = open(NU_UNDO_LOCK, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	int high = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 10);

	if (fd >= 0)
		close(fd);
	if (high < 0) {
		fprintf(stderr, "# no undo list: %s: %s\n", NU_UNDO_LOCK,
			strerror(errno));
		return -1;
	}
	for (int i = 0; i < NU_UNDO_WAIT_S * 10; i++) {
		if (!flock(high, LOCK_EX | LOCK_NB))
			return high;
		usleep(100000);
	}
	fprintf(stderr, "# no undo list: %s still locked after %d s\n",
		NU_UNDO_LOCK, NU_UNDO_WAIT_S);
	close(high);
	return -1;
}

/*
 * Every program waits for the last one's shell, so that the knobs it
 * reads are back; only where one was ever used (the lock file exists).
 */
__attribute__((constructor)) static void nu_undo_wait_earlier(void)
{
	int fd;

	if (access(NU_UNDO_LOCK, F_OK))
		return;
	fd = nu_undo_wait_lock();
	if (fd >= 0)
		close(fd);
}

/* The shell, with the pipe as its stdin, the lock as fd 3 and no more. */
static int nu_undo_spawn(int in)
{
	static char *const argv[] = { "sh", "-c", (char *)nu_undo_sh, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, nu_undo_lock, 3);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
	/* not the test's pipes and files: a mount must not stay busy */
	posix_spawn_file_actions_addclosefrom_np(&fa, 4);
#endif
	posix_spawnattr_init(&attr);
	/* out of the process group that the harness's timeout kills */
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
	rc = posix_spawn(&nu_undo_pid, "/bin/sh", &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return rc;
}

static int nu_undo_start(void)
{
	int p[2];

	if (nu_undo_fd >= 0)
		return 0;
	if (nu_undo_broken)
		return -1;
	nu_undo_broken = true;
	nu_undo_lock = nu_undo_wait_lock();
	if (nu_undo_lock < 0)
		return -1;
	if (pipe2(p, O_CLOEXEC)) {
		close(nu_undo_lock);
		nu_undo_lock = -1;
		return -1;
	}
	if (nu_undo_spawn(p[0])) {
		close(p[0]);
		close(p[1]);
		close(nu_undo_lock);
		nu_undo_lock = -1;
		return -1;
	}
	close(p[0]);
	nu_undo_fd = p[1];
	nu_undo_broken = false;
	return 0;
}

/*
 * One write of at most PIPE_BUF bytes (whole or not at all); a shell
 * that died makes it fail with EPIPE, not kill the test with SIGPIPE.
 */
static int nu_undo_send(const char *rec, int n)
{
	struct timespec zero = { 0 };
	sigset_t pipe_set, old;
	ssize_t w;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	w = write(nu_undo_fd, rec, n);
	if (w < 0 && errno == EPIPE)
		sigtimedwait(&pipe_set, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return w == n ? 0 : -1;
}

static int nu_undo_add(char op, const char *path, const char *val)
{
	char rec[PIPE_BUF];
	int n;

	if (strpbrk(path, "\t\n") || strpbrk(val, "\t\n"))
		return -1;
	n = snprintf(rec, sizeof(rec), "%c\t%s\t%s\n", op, path, val);
	if (n >= (int)sizeof(rec))
		return -1;
	return nu_undo_send(rec, n);
}

int nu_undo_begin(void)
{
	return nu_undo_start();
}

int nu_undo_knob(const char *path)
{
	char val[512];
	int n;

	/* the lock first: an earlier test's shell may be writing @path */
	if (nu_undo_start())
		return -1;
	n = nu_read_str(path, val, sizeof(val));
	if (n < 0 || n >= (int)sizeof(val) - 1)
		return -1;
	return nu_undo_add('k', path, val);
}

int nu_undo_umount(const char *path)
{
	return nu_undo_start() ? -1 : nu_undo_add('u', path, "");
}

int nu_undo_rmdir(const char *path)
{
	return nu_undo_start() ? -1 : nu_undo_add('d', path, "");
}

int nu_undo_choice(const char *path, char *was, size_t len)
{
	char val[256], *l, *r;

	if (nu_undo_start())
		return -1;
	if (nu_read_str(path, val, sizeof(val)) < 0)
		return -1;
	l = strchr(val, '[');
	r = l ? strchr(l, ']') : NULL;
	if (!r || (size_t)(r - l) > len)
		return -1;
	*r = '\0';
	memcpy(was, l + 1, r - l);	/* the word and its NUL */
	return nu_undo_add('k', path, was);
}

int nu_undo_huge_pool(int node)
{
	char path[128];

	snprintf(path, sizeof(path), NU_HUGE_POOL, node, "nr_hugepages");
	return nu_undo_knob(path);
}

void nu_undo_done(void)
{
	if (nu_undo_fd >= 0) {
		if (nu_undo_send("q\n", 2))
			fprintf(stderr, "# undo shell: %s\n", strerror(errno));
		close(nu_undo_fd);
		waitpid(nu_undo_pid, NULL, 0);
	}
	if (nu_undo_lock >= 0)
		close(nu_undo_lock);
	nu_undo_fd = -1;
	nu_undo_lock = -1;
	nu_undo_pid = -1;
}

long long nu_tlb_shootdowns(void)
{
	char line[4096];
	long long total = -1;
	FILE *f = fopen("/proc/interrupts", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *p = line;

		while (*p == ' ')
			p++;
		if (strncmp(p, "TLB:", 4))
			continue;
		total = 0;
		for (p += 4; *p;) {
			char *end;
			long long v = strtoll(p, &end, 10);

			if (end == p)
				break;
			total += v;
			p = end;
		}
	}
	if (f)
		fclose(f);
	return total;
}

/* Share of all CPUs' time that was busy over the next @ms milliseconds. */
double nu_busy_fraction(unsigned int ms)
{
	unsigned long long b0, t0, b1, t1;

	if (nu_read_cpu_times(&b0, &t0))
		return -1;
	usleep(ms * 1000);
	if (nu_read_cpu_times(&b1, &t1) || t1 == t0)
		return -1;
	return (double)(b1 - b0) / (double)(t1 - t0);
}

double nu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double nu_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double nu_min(const double *v, int n)
{
	double m = n ? v[0] : 0;

	for (int i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

double nu_max(const double *v, int n)
{
	double m = n ? v[0] : 0;

	for (int i = 1; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

uint64_t nu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void nu_hist_add(struct nu_hist *h, uint64_t ns)
{
	int b = 0;

	while (b < NU_HIST_BUCKETS - 1 && ns >= (1ULL << b))
		b++;
	h->count[b]++;
	h->n++;
	h->sum += ns;
	if (ns > h->max)
		h->max = ns;
}

void nu_hist_merge(struct nu_hist *to, const struct nu_hist *from)
{
	for (int b = 0; b < NU_HIST_BUCKETS; b++)
		to->count[b] += from->count[b];
	to->n += from->n;
	to->sum += from->sum;
	if (from->max > to->max)
		to->max = from->max;
}

/* Upper limit of the bucket holding the @pct percentile, capped at max. */
uint64_t nu_hist_pct(const struct nu_hist *h, double pct)
{
	uint64_t seen = 0, target;
	int b;

	if (!h->n)
		return 0;
	target = (uint64_t)(h->n * pct / 100.0 + 0.999999);
	if (!target)
		target = 1;
	for (b = 0; b < NU_HIST_BUCKETS; b++) {
		seen += h->count[b];
		if (seen >= target)
			break;
	}
	if (b >= NU_HIST_BUCKETS - 1)
		return h->max;
	return (1ULL << b) - 1 < h->max ? (1ULL << b) - 1 : h->max;
}

void nu_pin_cpu(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

bool nu_pick_cpus(int *cpus, int n)
{
	cpu_set_t set;
	int cpu, i = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return false;
	for (cpu = 0; cpu < CPU_SETSIZE && i < n; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus[i++] = cpu;
	return i == n;
}

static unsigned long nu_read_sink;

void nu_read_pages(const char *buf, unsigned long len)
{
	unsigned long i, sum = 0;

	for (i = 0; i < len; i += 4096)
		sum += __atomic_load_n(&buf[i], __ATOMIC_RELAXED);
	/* Keep the loads: the sum goes somewhere. */
	__atomic_store_n(&nu_read_sink, sum, __ATOMIC_RELAXED);
}

pid_t nu_fork_reader(const char *buf, unsigned long len, int cpu, int ready,
		     bool again)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	nu_pin_cpu(cpu);
	nu_read_pages(buf, len);
	if (write(ready, "r", 1) != 1)
		_exit(1);
	for (;;)
		if (again)
			nu_read_pages(buf, len);
}

void nu_shuffle(void **v, int n, unsigned int seed)
{
	srand(seed);
	for (int i = n - 1; i > 0; i--) {
		int j = rand() % (i + 1);
		void *t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

int nu_fork_sharers(pid_t *kids, int n, void (*fn)(void *arg), void *arg)
{
	int ready[2], got = 0;
	char c;

	pid_t parent = getpid();

	if (pipe(ready))
		return 0;
	for (int k = 0; k < n; k++) {
		kids[k] = fork();
		if (!kids[k]) {
			/* a test that failed an ASSERT leaves no sharer behind */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			fn(arg);
			if (write(ready[1], "r", 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
	}
	close(ready[1]);
	while (got < n && read(ready[0], &c, 1) == 1)
		got++;
	close(ready[0]);
	return got;
}

long nu_pages_on(char *p, size_t len, int nid)
{
	unsigned long i, n = len / 4096;
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status));
	long on = 0;

	if (!pages || !status)
		on = -1;
	for (i = 0; on >= 0 && i < n; i++)
		pages[i] = p + i * 4096;
	if (on >= 0 && nu_move_pages(0, n, pages, NULL, status, 0))
		on = -1;
	for (i = 0; on >= 0 && i < n; i++) {
		if (status[i] < 0)
			on = -1;
		else if (status[i] == nid)
			on++;
	}
	free(pages);
	free(status);
	return on;
}

void nu_fill(char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i + sizeof(unsigned int) <= len; i += sizeof(unsigned int))
		*(unsigned int *)(p + i) = seed ^ (unsigned int)i;
}

bool nu_intact(const char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i + sizeof(unsigned int) <= len; i += sizeof(unsigned int))
		if (*(const unsigned int *)(p + i) != (seed ^ (unsigned int)i))
			return false;
	return true;
}

bool nu_in_nodelist(const char *file, int nid)
{
	int ids[NU_MAX_NODES], n, i;
	char path[128], buf[256];

	snprintf(path, sizeof(path), "/sys/devices/system/node/%s", file);
	if (nu_read_str(path, buf, sizeof(buf)) < 0)
		return false;
	n = nu_parse_list(buf, ids, NU_MAX_NODES);
	for (i = 0; i < n; i++)
		if (ids[i] == nid)
			return true;
	return false;
}

char *nu_anon_bound(size_t len, int mode, int nid, unsigned int seed)
{
	unsigned long mask = 1UL << nid;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (nu_mbind(p, len, mode, &mask, NU_MAX_NODES, 0)) {
		munmap(p, len);
		return NULL;
	}
	nu_fill(p, len, seed);
	return p;
}

bool nu_huge_pool(int node, long want, char *was, size_t len)
{
	char path[128], val[32];
	long free_now;

	snprintf(path, sizeof(path), NU_HUGE_POOL, node, "free_hugepages");
	if (nu_read_str(path, val, sizeof(val)) < 0)
		return false;
	free_now = atol(val);
	snprintf(path, sizeof(path), NU_HUGE_POOL, node, "nr_hugepages");
	if (nu_read_str(path, was, len) < 0)
		return false;
	if (free_now >= want)
		return true;
	snprintf(val, sizeof(val), "%ld", atol(was) + want - free_now);
	if (nu_write_str(path, val))
		return false;
	snprintf(path, sizeof(path), NU_HUGE_POOL, node, "free_hugepages");
	return nu_read_str(path, val, sizeof(val)) >= 0 && atol(val) >= want;
}

void nu_huge_pool_restore(int node, const char *was)
{
	char path[128];

	snprintf(path, sizeof(path), NU_HUGE_POOL, node, "nr_hugepages");
	if (*was)
		nu_write_str(path, was);
}

static const char *nu_tracefs(void)
{
	static const char * const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing", NULL,
	};
	char path[64];

	for (unsigned int i = 0; dirs[i]; i++) {
		snprintf(path, sizeof(path), "%s/instances", dirs[i]);
		if (!access(path, W_OK))
			return dirs[i];
	}
	return NULL;
}

bool nu_trace_has(const char *event)
{
	char path[192];

	if (!nu_tracefs())
		return false;
	snprintf(path, sizeof(path), "%s/events/%s/enable", nu_tracefs(), event);
	return !access(path, W_OK);
}

bool nu_cpu_invlpgb(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[4096];
	bool has = false;

	if (!f)
		return false;
	while (!has && fgets(line, sizeof(line), f))
		has = !strncmp(line, "flags", 5) && strstr(line, " invlpgb");
	fclose(f);
	return has;
}

/* Write @val to @file of instance @inst; "" truncates (clears a trace). */
static int nu_inst_write(const char *inst, const char *file, const char *val)
{
	char path[256];
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", inst, file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -1;
	if (*val)
		n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -1 : 0;
}

/* Was @ev[@i]'s event already set up by an earlier entry? */
static bool nu_event_seen(const struct nu_event *ev, int i)
{
	for (int j = 0; j < i; j++)
		if (!strcmp(ev[j].name, ev[i].name))
			return true;
	return false;
}

/*
 * Entries may share an event (counted apart by .match) and then its
 * filter: each event's filter and enable are written once, since every
 * filter that replaces another waits for RCU grace periods.
 */
static int nu_inst_events(const char *inst, struct nu_event *ev, int n,
			  bool on)
{
	char file[128];
	int rc = 0;

	/* one filter per event: entries sharing it must agree */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (!strcmp(ev[j].name, ev[i].name) &&
			    strcmp(ev[j].filter, ev[i].filter))
				return -1;
	for (int i = 0; i < n; i++) {
		if (nu_event_seen(ev, i))
			continue;
		snprintf(file, sizeof(file), "events/%s/filter", ev[i].name);
		if (on && *ev[i].filter)
			rc |= nu_inst_write(inst, file, ev[i].filter);
		snprintf(file, sizeof(file), "events/%s/enable", ev[i].name);
		rc |= nu_inst_write(inst, file, on ? "1" : "0");
	}
	return rc;
}

/* Count, line by line, what each event of @ev matched in @buf. */
static void nu_trace_tally(char *buf, struct nu_event *ev, int n)
{
	char *line, *save = NULL, tag[80];

	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		for (int i = 0; i < n; i++) {
			const char *leaf = strrchr(ev[i].name, '/');

			snprintf(tag, sizeof(tag), " %s:",
				 leaf ? leaf + 1 : ev[i].name);
			if (strstr(line, tag) &&
			    (!ev[i].match || strstr(line, ev[i].match)))
				ev[i].count++;
		}
	}
}

/*
 * Write the stack and errno that the counted stretch may touch.  The
 * harness forks every test, so until written they are shared copy on
 * write with its parent, and the first write copies the page with a
 * flush of this mm: an IPI round, where a thread of the test runs on
 * another CPU, that no migration made (stock demotion counted 8 rounds
 * for 7 batches so, seen in tlb_flush's stack traces).
 */
static void __attribute__((noinline)) nu_trace_own_pages(void)
{
	char stack[64 << 10];

	explicit_bzero(stack, sizeof(stack));
	errno = 0;
}

int nu_trace_count(struct nu_event *ev, int n, long (*fn)(void *arg),
		   void *arg, long *ret)
{
	const size_t size = 4 << 20;
	char inst[128], path[160];
	char *buf = NULL;
	long len = -1;

	if (!nu_tracefs())
		return -1;
	snprintf(inst, sizeof(inst), "%s/instances/numa_util_%d",
		 nu_tracefs(), getpid());
	rmdir(inst);
	if (mkdir(inst, 0700))
		return -1;
	for (int i = 0; i < n; i++)
		ev[i].count = 0;
	nu_trace_own_pages();
	/*
	 * Record only while @fn runs: enabling an event can patch code
	 * (static keys and calls), and text_poke() flushes TLBs.
	 */
	if (!nu_inst_write(inst, "tracing_on", "0") &&
	    !nu_inst_events(inst, ev, n, true) &&
	    !nu_inst_write(inst, "tracing_on", "1")) {
		*ret = fn(arg);
		nu_inst_write(inst, "tracing_on", "0");
		nu_inst_events(inst, ev, n, false);
		buf = malloc(size);
		snprintf(path, sizeof(path), "%s/trace", inst);
		len = buf ? nu_read_all(path, buf, size) : -1;
		if (len >= 0)
			nu_trace_tally(buf, ev, n);
	}
	free(buf);
	rmdir(inst);
	return len < 0 ? -1 : 0;
}

int nu_count_flushes(const char *reason, long (*fn)(void *arg), void *arg,
		     struct nu_flush_count *c)
{
	struct nu_event ev[2] = {
		{ .name = "tlb/tlb_flush" },
		{ .name = "migrate/mm_migrate_batch" },
	};
	char match[48];

	/* a filter on the pid: set_event_pid would patch sched tracepoints */
	snprintf(ev[0].filter, sizeof(ev[0].filter),
		 "reason == 4 && common_pid == %d", getpid());
	snprintf(ev[1].filter, sizeof(ev[1].filter), "common_pid == %d",
		 getpid());
	snprintf(match, sizeof(match), " reason=%s ", reason);
	ev[1].match = match;
	if (nu_trace_count(ev, 2, fn, arg, &c->ret))
		return -1;
	c->rounds = ev[0].count;
	c->batches = ev[1].count;
	return 0;
}

int nu_cg_write(const char *cg, const char *file, long long v)
{
	char path[PATH_MAX + 32], val[32];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	snprintf(val, sizeof(val), "%lld", v);
	return nu_write_str(path, val);
}

long long nu_cg_read(const char *cg, const char *file)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return nu_read_ll(path);
}

static bool nu_has_word(const char *list, const char *word)
{
	char pad[512], key[64];

	snprintf(pad, sizeof(pad), " %s ", list);
	snprintf(key, sizeof(key), " %s ", word);
	return strstr(pad, key);
}

/* Is the memory controller there and on for the root's children? */
static const char *nu_cg_memory_off(void)
{
	char buf[256];

	if (nu_read_str(NU_CGROOT "/cgroup.controllers", buf, sizeof(buf)) < 0)
		return "no cgroup2 at " NU_CGROOT;
	if (!nu_has_word(buf, "memory"))
		return "no memory controller in cgroup2";
	if (nu_read_str(NU_CGROOT "/cgroup.subtree_control", buf,
			sizeof(buf)) < 0)
		return "cannot read " NU_CGROOT "/cgroup.subtree_control";
	if (!nu_has_word(buf, "memory") &&
	    nu_write_str(NU_CGROOT "/cgroup.subtree_control", "+memory"))
		return "cannot enable the memory controller";
	return NULL;
}

const char *nu_cg_enter(const char *name, char *cg, size_t len)
{
	const char *why = nu_cg_memory_off();

	cg[0] = '\0';
	if (why)
		return why;
	snprintf(cg, len, NU_CGROOT "/%s.%d", name, getpid());
	if (mkdir(cg, 0755)) {
		cg[0] = '\0';
		return "cannot create a cgroup";
	}
	if (nu_cg_write(cg, "cgroup.procs", getpid()))
		return "cannot move into the cgroup";
	return NULL;
}

int nu_cg_rmdir(const char *cg)
{
	for (int i = 0; i < 10; i++) {
		if (!rmdir(cg))
			return 0;
		if (errno != EBUSY)
			break;
		usleep(100000);
	}
	return -errno;
}

void nu_cg_remove(char *cg)
{
	nu_cg_write(NU_CGROOT, "cgroup.procs", getpid());
	if (!nu_cg_rmdir(cg))
		cg[0] = '\0';
}

int nu_node_blocks_to(int nid, const char *state)
{
	char path[300], cur[32];
	struct dirent *de;
	int ret = 0, r;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", nid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "memory", 6) ||
		    !strchr("0123456789", de->d_name[6]))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/devices/system/node/node%d/%s/state", nid,
			 de->d_name);
		if (nu_read_str(path, cur, sizeof(cur)) < 0)
			continue;
		if (!strncmp(cur, state, 6))	/* online / online_movable */
			continue;
		r = nu_write_str(path, state);
		if (r && !ret)
			ret = r;
	}
	closedir(d);
	return ret;
}

bool nu_dax_kmem_bound(const char *dev)
{
	char path[256], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/bus/dax/devices/%s/driver", dev);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = '\0';
	return !strcmp(strrchr(link, '/') ?: link, "/kmem");
}

int nu_dax_kmem(const char *op, const char *dev)
{
	return nu_write_str(op[0] == 'b' ? NU_KMEM "bind" : NU_KMEM "unbind",
			    dev);
}

/* Write a swap header (version 1, no bad pages) over @pages pages of @fd. */
static int nu_mkswap(int fd, unsigned long pages)
{
	long page = sysconf(_SC_PAGESIZE);
	char *hdr = calloc(1, page);
	uint32_t *info;
	int ret = 0;

	if (!hdr)
		return -ENOMEM;
	info = (uint32_t *)(hdr + 1024);
	info[0] = 1;			/* version */
	info[1] = pages - 1;		/* last_page */
	memcpy(hdr + page - 10, "SWAPSPACE2", 10);
	if (pwrite(fd, hdr, page, 0) != page)
		ret = -errno;
	free(hdr);
	return ret;
}

/* Attach @fd to a free loop device, named in @dev: its fd, or -errno. */
int nu_loop_attach(int fd, char *dev, size_t len)
{
	int ctl = open("/dev/loop-control", O_RDWR), n, lfd;

	if (ctl < 0)
		return -errno;
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	if (n < 0)
		return -errno;
	snprintf(dev, len, "/dev/loop%d", n);
	lfd = open(dev, O_RDWR);
	if (lfd < 0)
		return -errno;
	if (ioctl(lfd, LOOP_SET_FD, fd)) {
		n = -errno;
		close(lfd);
		return n;
	}
	return lfd;
}

#define NU_ZRAM_CTL	"/sys/class/zram-control/"

/* Reset and remove the zram device in sw->dev: 0 or -errno. */
static int nu_zram_off(struct nu_swap *sw)
{
	const char *id = sw->dev + strlen("/dev/zram");
	char path[64];
	int ret;

	/* hot_remove resets the device too; reset first, to see an error */
	snprintf(path, sizeof(path), "/sys/block/zram%s/reset", id);
	ret = nu_write_str(path, "1");
	return nu_write_str(NU_ZRAM_CTL "hot_remove", id) ?: ret;
}

/*
 * A new zram device of @mb MiB with a swap header, in sw->dev: 0, or
 * -errno with nothing left behind.
 */
static int nu_zram_on(struct nu_swap *sw, int mb)
{
	unsigned long pages = ((unsigned long)mb << 20) / sysconf(_SC_PAGESIZE);
	char path[64], id[16], size[24];
	int fd, ret;

	if (nu_read_str(NU_ZRAM_CTL "hot_add", id, sizeof(id)) <= 0)
		return -ENODEV;
	snprintf(sw->dev, sizeof(sw->dev), "/dev/zram%s", id);
	snprintf(path, sizeof(path), "/sys/block/zram%s/disksize", id);
	snprintf(size, sizeof(size), "%dM", mb);
	ret = nu_write_str(path, size);
	fd = ret ? -1 : open(sw->dev, O_RDWR);
	if (!ret && fd < 0)
		ret = -errno;
	if (fd >= 0) {
		ret = nu_mkswap(fd, pages);
		close(fd);
	}
	if (ret) {
		nu_zram_off(sw);
		sw->dev[0] = '\0';
	}
	return ret;
}

/* A loop device over a file of @mb MiB under @dir, with a swap header. */
static int nu_loop_swap(struct nu_swap *sw, const char *dir, int mb)
{
	unsigned long pages = ((unsigned long)mb << 20) / sysconf(_SC_PAGESIZE);
	int fd, lfd, ret;

	snprintf(sw->file, sizeof(sw->file), "%s/nu_swap.%d", dir, getpid());
	fd = open(sw->file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	ret = ftruncate(fd, (off_t)mb << 20) ? -errno : nu_mkswap(fd, pages);
	lfd = ret ? ret : nu_loop_attach(fd, sw->dev, sizeof(sw->dev));
	close(fd);
	if (lfd < 0) {
		unlink(sw->file);
		sw->file[0] = '\0';
		return lfd;
	}
	close(lfd);
	return 0;
}

static int nu_swap_on_dev(struct nu_swap *sw, const char *dir, int mb,
			  bool zram)
{
	int ret;

	sw->file[0] = '\0';
	sw->dev[0] = '\0';
	if (!zram || nu_zram_on(sw, mb)) {
		ret = nu_loop_swap(sw, dir, mb);
		if (ret)
			return ret;
	}
	if (swapon(sw->dev, 0)) {
		ret = -errno;
		nu_swap_off(sw);
		return ret;
	}
	return 0;
}

int nu_swap_on(struct nu_swap *sw, const char *dir, int mb)
{
	return nu_swap_on_dev(sw, dir, mb, true);
}

int nu_swap_on_file(struct nu_swap *sw, const char *dir, int mb)
{
	return nu_swap_on_dev(sw, dir, mb, false);
}

int nu_swap_off(struct nu_swap *sw)
{
	int ret = 0, lfd;

	if (sw->dev[0] && swapoff(sw->dev) && errno != EINVAL)
		ret = -errno;
	if (!strncmp(sw->dev, "/dev/zram", 9)) {
		lfd = nu_zram_off(sw);
		ret = ret ?: lfd;
	} else if (sw->dev[0]) {
		lfd = open(sw->dev, O_RDWR);
		if (lfd >= 0) {
			if (ioctl(lfd, LOOP_CLR_FD) && !ret)
				ret = -errno;
			close(lfd);
		}
	}
	if (sw->file[0] && unlink(sw->file) && !ret)
		ret = -errno;
	sw->file[0] = '\0';
	sw->dev[0] = '\0';
	return ret;
}

long nu_pages_swapped(const char *p, size_t len)
{
	long page = sysconf(_SC_PAGESIZE), n = len / page, swapped = 0, i;
	uint64_t *ent = calloc(n, sizeof(*ent));
	int fd = open("/proc/self/pagemap", O_RDONLY);
	ssize_t want = n * sizeof(*ent);

	if (!ent || fd < 0 ||
	    pread(fd, ent, want, (uintptr_t)p / page * sizeof(*ent)) != want)
		swapped = -1;
	for (i = 0; swapped >= 0 && i < n; i++)
		swapped += !!(ent[i] & (1ULL << 62));
	if (fd >= 0)
		close(fd);
	free(ent);
	return swapped;
}

bool nu_kthread_runs(const char *name, int nid)
{
	char want[32], path[300], comm[32];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(want, sizeof(want), "%s%d", name, nid);
	d = opendir("/proc");
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		if (nu_read_str(path, comm, sizeof(comm)) < 0)
			continue;
		found = !strcmp(comm, want);
	}
	closedir(d);
	return found;
}

long long nu_ksm_merged(void)
{
	char text[512];
	const char *p;

	if (nu_read_all("/proc/self/ksm_stat", text, sizeof(text)) <= 0)
		return -1;
	p = strstr(text, "ksm_merging_pages ");
	return p ? atoll(p + strlen("ksm_merging_pages ")) : -1;
}
