// SPDX-License-Identifier: GPL-2.0
/*
 * tier_bench: a key-value load and a loaded-latency reader on a small DRAM
 * node whose demotion tier is a dax/kmem node, run once per way of setting
 * that node up, in one boot.  It redoes, at VM scale, a report on the
 * private node series (TaoBench and MLC on DRAM + CXL, demotion and NUMA
 * balancing on) where the write-fenced private node showed more faults,
 * allocation stalls and tail latency than the same memory as a plain node.
 *
 * Configurations (-c, default all three, in this order):
 *   plain    the tier node as ordinary memory: dax/kmem with private=0
 *   fenced   private=1 with reclaim, user_numa, hotunplug, demotion,
 *            numa_balancing and write_fence
 *   private  the same caps without write_fence
 * Before each one the previous workload is gone, the node's memory blocks
 * are offlined (a few tries; hotunplug migrates what is left), kmem is
 * unbound, the attributes are set, kmem is bound again, the blocks are
 * onlined movable, caches are dropped and the system settles for 5 s.
 * Throughout: numa_balancing=2 (memory tiering), demotion_enabled=1 and
 * -s MiB of swap (default 256) on a zram device; a kernel without zram
 * gets a loop file in /tmp, which in a guest whose /tmp is in RAM needs
 * memory to free memory and can hang reclaim (use -s 0 there).  -R runs
 * the configurations that many times, interleaved, and reports medians.
 * The workload is a process of its own per configuration, bound to the
 * first node with CPUs and memory ("node 0") by set_mempolicy(MPOL_BIND |
 * MPOL_F_NUMA_BALANCING): the bench kernel has no cpusets, and with
 * MPOL_PREFERRED allocations would spill onto node 1 (and a plain tier
 * node) instead of reclaiming node 0, so nothing would be demoted.  The
 * NUMA_BALANCING flag matters: without it NUMA balancing never scans a
 * bound task and never promotes its pages.  Demotion ignores the policy.
 *   kv    -k keys of -v bytes (default 4 KiB values, one page each, THP
 *         off: faults stay page-granular), by default 1.4x node 0's free
 *         memory at start so that part of it has to live on the tier node
 *         or in swap.  Filled once, coldest key first; then -n workers
 *         pinned to node 0's CPUs (default one per CPU: two on one CPU
 *         would make every tail latency a scheduler time slice) draw keys
 *         zipfian (theta 0.99) and do 1 set : 9 gets.  A set writes the
 *         whole value with a new version, a get reads and checks every
 *         word against the key and the version last set (a corruption).
 *         Per-op latency goes into a log2 histogram (mean, max) and a
 *         reservoir sample of 64 Ki ops per worker (percentiles, CDF).
 *   mlc   on the CPUs of the other DRAM nodes (node 0's if none): one
 *         thread chasing pointers through a random cycle over the cache
 *         lines of 64 MiB (ns per load), -r threads streaming reads over
 *         32 MiB each, 4 KiB at a time with -d ns of spinning in between
 *         (MB/s).  Their memory is bound to node 0 as well; their hint
 *         faults promote nothing (a bound task's pages only move towards
 *         a faulting CPU whose node is in the policy).
 * A warm-up of a quarter of -t (at least 2 s) follows the fill; the
 * /proc/vmstat deltas and all numbers cover the -t seconds after it.
 *
 * Output: "# " lines; between "# tier_bench summary" and "# tier_bench
 * end" a table (one row per metric, columns per configuration, each the
 * median over the rounds, the ratios fenced/plain and private/plain, and
 * plain_rng: plain's (max - min) / median over the rounds, its noise) and
 * the goals as PASS/FAIL lines (corruptions and dmesg lines: all runs):
 *   private within 10% of plain on every latency, throughput and vmstat
 *   metric (counter deltas that differ by fewer than 100 events count as
 *   equal); fenced/plain pgfault <= 1.5, pgdemote_direct and allocstall
 *   <= 2 (or under 100 events), lat_p99 <= 1.5; no corruptions.
 * It also counts the kernel log lines with WARN, BUG or "unmovable page"
 * (from /dev/kmsg, per configuration, offlining included).  -o writes
 * config,metric,value; -l writes config,latency_ns,fraction (100 points
 * per configuration).  tier_bench_plot.sh draws both.
 *
 * Exits 0 when it ran (the goals are results, not a verdict), 4 (skip)
 * without root, dax/kmem, a device-dax instance on a memory-only node or
 * the private attributes, 1 when a configuration could not be set up.
 *
 * Run in "scripts/vm --bench --nodes 2 --memonly-nodes 3 --private-nodes
 * --dax-nodes 1" (scripts/demo does):  cd numa && ./tier_bench -o x.csv
 * -l cdf.csv.  --dry-run runs the workload here, without touching dax,
 * sysctls or swap: "./tier_bench --dry-run -t 5 -w 64" is a smoke test.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "../kselftest.h"
#include "numa_util.h"

#define MB		(1024UL * 1024)
#define DAX_DEVS	"/sys/bus/dax/devices/"
#define NODE_SYS	"/sys/devices/system/node/"
#define TIERS		"/sys/devices/virtual/memory_tiering/"
#define NUMAB		"/proc/sys/kernel/numa_balancing"
#define DEMOTE		"/sys/kernel/mm/numa/demotion_enabled"
#define DROP_CACHES	"/proc/sys/vm/drop_caches"
#define NR_CFG		3
#define MAX_ROUNDS	9
#define RES		65536	/* latency samples kept per worker */
#define MERGED		65536	/* and over all workers */
#define CDF_PTS		100
#define STRIPES		1024	/* value locks */
#define MAX_WORKERS	64
#define MAX_BW		64
#define CHASE_LEN	(64 * MB)
#define BW_LEN		(32 * MB)
#define BW_CHUNK	4096
#define THETA		0.99
#define GOLD		0x9e3779b97f4a7c15ULL
#define COUNT_FLOOR	100	/* counter deltas this close are noise */
#define SETTLE_S	5
#define OFFLINE_TRIES	5

static struct opts {
	int secs;		/* -t: measured seconds per configuration */
	long ws_mb;		/* -w: working set, MiB; 0: 1.4x MemFree */
	long keys;		/* -k: keys; 0: from the working set */
	int vsize;		/* -v: value bytes */
	int bw;			/* -r: bandwidth threads */
	long delay;		/* -d: ns spun between bandwidth chunks */
	int workers;		/* -n: kv workers; 0: one per CPU of node 0 */
	int swap_mb;		/* -s: swap, MiB */
	int rounds;		/* -R: runs of every configuration */
	const char *csv;	/* -o */
	const char *cdf;	/* -l */
	bool want[NR_CFG];	/* -c */
	bool dry;		/* --dry-run */
} o = { .secs = 45, .vsize = 4096, .bw = 1, .delay = 1000, .swap_mb = 256,
	.rounds = 1, .want = { true, true, true } };

struct cfg {
	const char *name;
	bool priv;		/* private=1 with the caps */
	bool fence;		/* write_fence=1 */
};

static const struct cfg cfgs[NR_CFG] = {
	{ "plain", false, false },
	{ "fenced", true, true },
	{ "private", true, false },
};

static const char * const attrs[] = {
	"private", "reclaim", "user_numa", "hotunplug", "demotion",
	"numa_balancing", "ltpin", "write_fence",
};

#define NR_ATTR ARRAY_SIZE(attrs)

/*
 * allocstall is the sum of every allocstall_* counter.  The first
 * NR_VM_GOAL are the report's; the rest only explain (where the pages
 * came from and what kswapd did), and no goal looks at them.
 */
static const char * const vm_names[] = {
	"pgfault", "pgactivate", "pgreuse", "pgrefill", "pgdemote_kswapd",
	"pgdemote_direct", "allocstall", "pgpromote_success",
	"pgpromote_candidate", "pgmigrate_fail", "numa_hint_faults",
	"numa_pages_migrated", "pswpin", "pswpout", "pgfence_cow",
	"pgdemote_fence_skip",
	"pgscan_kswapd", "pgsteal_kswapd", "pgscan_direct", "pgalloc_dma32",
	"pgalloc_normal", "pgalloc_movable", "pgfree", "thp_fault_alloc",
};

#define NR_VM ARRAY_SIZE(vm_names)
#define NR_VM_GOAL 16

/* What one configuration's workload measured, in memory shared with it. */
struct result {
	int ok;			/* the workload got to the end */
	double fill_s, window_s, ops_s, mean_ns;
	uint64_t ops, sets, corrupt, max_ns;
	uint64_t lat[3][3];	/* all, gets, sets x p50, p95, p99 (ns) */
	double mlc_ns;		/* pointer chase, ns per load */
	double mlc_mbs;		/* bandwidth threads, MB/s together */
	long long vm[NR_VM];	/* deltas over the window; -1: no counter */
	long long tier_kb;	/* tier node MemUsed at the end; -1 */
	uint64_t cdf[CDF_PTS];	/* latency at fraction (i + 1) / CDF_PTS */
	long dmesg;		/* WARN/BUG/unmovable lines; -1: unknown */
};

/* Where the workload runs. */
struct place {
	int home;			/* its node: the first with CPUs */
	int nr_kv, kv_cpus[NU_MAX_CPUS];	/* home's CPUs */
	int nr_mlc, mlc_cpus[NU_MAX_CPUS];	/* other DRAM nodes' CPUs */
};

static struct env {
	struct place pl;
	char dev[64];		/* the device-dax instance */
	int nid;		/* its node: the tier */
	bool was_bound, was_online;
	char attr_was[NR_ATTR][8];
	char numab[16], demote[16];	/* as found; "" if not set */
	struct nu_swap sw;
	bool swap;
	int kmsg;		/* /dev/kmsg read from the start; -1 */
	unsigned long keys;
	struct result *res;	/* per round and configuration, MAP_SHARED */
} env = { .nid = -1, .kmsg = -1 };

/* ---- small helpers ---- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static double rnd_unit(uint64_t *s)
{
	return (double)(rnd(s) >> 11) / (double)(1ULL << 53);
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void spin_ns(long ns)
{
	uint64_t end;

	if (ns <= 0)
		return;
	end = nu_now_ns() + ns;
	while (nu_now_ns() < end)
		;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static unsigned long gcd(unsigned long a, unsigned long b)
{
	while (b) {
		unsigned long t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* "Node 4 MemUsed:  1234 kB" from nodeN/meminfo: kB, or -1 */
static long long node_kb(int nid, const char *key)
{
	char path[128], buf[4096], *p;

	snprintf(path, sizeof(path), NODE_SYS "node%d/meminfo", nid);
	if (nu_read_all(path, buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static bool vm_match(const char *want, const char *name)
{
	if (!strcmp(want, "allocstall"))
		return !strncmp(name, "allocstall_", 11);
	return !strcmp(want, name);
}

/* @v[i]: the vm_names[i] counter of /proc/vmstat; -1 if there is none. */
static void vm_snap(long long *v)
{
	static char buf[32768];
	unsigned long long val;
	char *line, *save, name[64];
	unsigned int i;

	for (i = 0; i < NR_VM; i++)
		v[i] = -1;
	if (nu_read_all("/proc/vmstat", buf, sizeof(buf)) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%63s %llu", name, &val) != 2)
			continue;
		for (i = 0; i < NR_VM; i++)
			if (vm_match(vm_names[i], name))
				v[i] = (v[i] < 0 ? 0 : v[i]) + (long long)val;
	}
}

/* ---- the key-value store ---- */

struct kv {
	char *vals;		/* keys x vsize bytes */
	uint32_t *ver;		/* each key's version, under its lock */
	double *cdf;		/* zipfian CDF, key 0 the hottest */
	unsigned long keys;
	unsigned long mult;	/* slot = key * mult % keys: keys scattered */
	size_t vsize;
	pthread_mutex_t lock[STRIPES];
};

static uint64_t *kv_val(struct kv *kv, unsigned long key)
{
	unsigned long slot = (unsigned long)((uint64_t)key * kv->mult %
					     kv->keys);

	return (uint64_t *)(kv->vals + slot * kv->vsize);
}

static uint64_t val_seed(uint64_t key, uint64_t ver)
{
	uint64_t x = (key << 32 | ver) * GOLD;

	return x ^ x >> 29;
}

/* Words 0 and 1: key and version; then a pattern of both. */
static void val_write(uint64_t *w, size_t nw, uint64_t key, uint64_t ver)
{
	uint64_t s = val_seed(key, ver);
	size_t i;

	for (i = 2; i < nw; i++)
		w[i] = s ^ (i * GOLD);
	w[0] = key;
	w[1] = ver;
}

/* Does @w hold @key at @ver, every word of it? */
static bool val_ok(const uint64_t *w, size_t nw, uint64_t key, uint64_t ver)
{
	uint64_t s = val_seed(key, ver), bad = (w[0] ^ key) | (w[1] ^ ver);
	size_t i;

	for (i = 2; i < nw; i++)
		bad |= w[i] ^ s ^ (i * GOLD);
	return !bad;
}

static double *zipf_cdf(unsigned long n, double theta)
{
	double *c = malloc(n * sizeof(*c)), sum = 0;
	unsigned long i;

	if (!c)
		return NULL;
	for (i = 0; i < n; i++) {
		sum += 1.0 / pow((double)(i + 1), theta);
		c[i] = sum;
	}
	for (i = 0; i < n; i++)
		c[i] /= sum;
	c[n - 1] = 1.0;
	return c;
}

static unsigned long zipf_draw(const struct kv *kv, double u)
{
	unsigned long lo = 0, hi = kv->keys - 1, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (kv->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int kv_init(struct kv *kv, unsigned long keys, size_t vsize)
{
	size_t len = keys * vsize;
	int i;

	kv->keys = keys;
	kv->vsize = vsize;
	kv->mult = (unsigned long)(keys * 0.6180339887) | 1;
	while (gcd(kv->mult, keys) != 1)
		kv->mult += 2;
	kv->vals = mmap(NULL, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (kv->vals == MAP_FAILED)
		return -1;
	madvise(kv->vals, len, MADV_NOHUGEPAGE);
	kv->ver = calloc(keys, sizeof(*kv->ver));
	kv->cdf = zipf_cdf(keys, THETA);
	for (i = 0; i < STRIPES; i++)
		pthread_mutex_init(&kv->lock[i], NULL);
	return kv->ver && kv->cdf ? 0 : -1;
}

/* Every key at version 1, the coldest first: the hot ones end up newest. */
static void kv_fill(struct kv *kv)
{
	unsigned long k;

	for (k = kv->keys; k-- > 0;) {
		kv->ver[k] = 1;
		val_write(kv_val(kv, k), kv->vsize / 8, k, 1);
	}
}

/* A set or a get of @key; false when a get found the value corrupt. */
static bool kv_op(struct kv *kv, unsigned long key, bool set)
{
	pthread_mutex_t *m = &kv->lock[key % STRIPES];
	uint64_t *w = kv_val(kv, key);
	size_t nw = kv->vsize / 8;
	bool ok = true;

	pthread_mutex_lock(m);
	if (set)
		val_write(w, nw, key, ++kv->ver[key]);
	else
		ok = val_ok(w, nw, key, kv->ver[key]);
	pthread_mutex_unlock(m);
	return ok;
}

/* ---- the workload's threads ---- */

enum { PH_WARM, PH_MEASURE, PH_STOP };
static int phase;

static int phase_now(void)
{
	return __atomic_load_n(&phase, __ATOMIC_ACQUIRE);
}

struct worker {
	struct kv *kv;
	int cpu;
	uint64_t rng;
	uint64_t seen;		/* ops measured (each offered to res) */
	uint64_t sets, bad;
	struct nu_hist hist;
	uint64_t *res;		/* reservoir: ns << 1 | set */
	pthread_t th;
};

static void res_add(struct worker *w, uint64_t v)
{
	uint64_t j;

	if (w->seen < RES) {
		w->res[w->seen++] = v;
		return;
	}
	j = rnd(&w->rng) % ++w->seen;
	if (j < RES)
		w->res[j] = v;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int ph;

	nu_pin_cpu(w->cpu);
	while ((ph = phase_now()) != PH_STOP) {
		unsigned long key = zipf_draw(w->kv, rnd_unit(&w->rng));
		bool set = rnd(&w->rng) % 10 == 0;
		uint64_t t0 = nu_now_ns(), ns;
		bool ok = kv_op(w->kv, key, set);

		ns = nu_now_ns() - t0;
		w->bad += !ok;
		if (ph != PH_MEASURE)
			continue;
		w->sets += set;
		nu_hist_add(&w->hist, ns);
		res_add(w, ns << 1 | set);
	}
	return NULL;
}

struct mlc {
	bool chase;		/* the latency thread, else bandwidth */
	int cpu;
	size_t len;
	char *buf;
	uint64_t loads, ns;	/* chase: loads and their ns */
	uint64_t bytes;		/* bandwidth: bytes read */
	int ready;		/* 1 running, -1 failed */
	pthread_t th;
};

static uint64_t mlc_sink;

/* Each cache line's first word points to the next of a random cycle. */
static int chase_build(char *buf, size_t len, uint64_t seed)
{
	size_t n = len / 64, i, j;
	uint32_t *ord = malloc(n * sizeof(*ord)), t;

	if (!ord)
		return -1;
	for (i = 0; i < n; i++)
		ord[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = rnd(&seed) % (i + 1);
		t = ord[i];
		ord[i] = ord[j];
		ord[j] = t;
	}
	for (i = 0; i < n; i++)
		*(char **)(buf + (size_t)ord[i] * 64) =
			buf + (size_t)ord[(i + 1) % n] * 64;
	free(ord);
	return 0;
}

static void chase_run(struct mlc *m)
{
	char **p = (char **)m->buf;
	uint64_t t0;
	int ph, i;

	while ((ph = phase_now()) != PH_STOP) {
		t0 = nu_now_ns();
		for (i = 0; i < 1024; i++)
			p = (char **)*p;
		if (ph == PH_MEASURE) {
			m->ns += nu_now_ns() - t0;
			m->loads += 1024;
		}
	}
	__atomic_store_n(&mlc_sink, (uintptr_t)p, __ATOMIC_RELAXED);
}

static void bw_run(struct mlc *m)
{
	const uint64_t *w;
	uint64_t sum = 0;
	size_t off = 0, i;
	int ph;

	while ((ph = phase_now()) != PH_STOP) {
		w = (const uint64_t *)(m->buf + off);
		for (i = 0; i < BW_CHUNK / 8; i++)
			sum += w[i];
		off = (off + BW_CHUNK) % m->len;
		if (ph == PH_MEASURE)
			m->bytes += BW_CHUNK;
		spin_ns(o.delay);
	}
	__atomic_store_n(&mlc_sink, sum, __ATOMIC_RELAXED);
}

static void *mlc_main(void *arg)
{
	struct mlc *m = arg;
	int ok = 1;

	nu_pin_cpu(m->cpu);
	m->buf = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->buf == MAP_FAILED) {
		__atomic_store_n(&m->ready, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	madvise(m->buf, m->len, MADV_NOHUGEPAGE);
	if (m->chase)
		ok = !chase_build(m->buf, m->len, 0x5eed + m->cpu);
	else
		memset(m->buf, 0x5a, m->len);
	__atomic_store_n(&m->ready, ok ? 1 : -1, __ATOMIC_RELEASE);
	if (!ok)
		return NULL;
	if (m->chase)
		chase_run(m);
	else
		bw_run(m);
	return NULL;
}

/* ---- one configuration's workload (a child process) ---- */

static void bind_home(int home)
{
	unsigned long mask = 1UL << home;

	if (!nu_set_mempolicy(MPOL_BIND | MPOL_F_NUMA_BALANCING, &mask,
			      NU_MAX_NODES))
		return;
	ksft_print_msg("MPOL_F_NUMA_BALANCING refused (%s): plain MPOL_BIND\n",
		       strerror(errno));
	ksft_print_msg("NUMA balancing will not scan the workload\n");
	if (nu_set_mempolicy(MPOL_BIND, &mask, NU_MAX_NODES))
		ksft_print_msg("set_mempolicy(MPOL_BIND, node %d): %s\n",
			       home, strerror(errno));
}

static int start_threads(struct kv *kv, struct worker *w, int nw,
			 struct mlc *m, int nm)
{
	const struct place *pl = &env.pl;
	int i;

	for (i = 0; i < nw; i++) {
		w[i].kv = kv;
		w[i].cpu = pl->kv_cpus[i % pl->nr_kv];
		w[i].rng = GOLD * (i + 1);
		w[i].res = malloc(RES * sizeof(*w[i].res));
		if (!w[i].res ||
		    pthread_create(&w[i].th, NULL, worker_main, &w[i]))
			return -1;
	}
	for (i = 0; i < nm; i++) {
		m[i].chase = i == 0;
		m[i].len = i ? BW_LEN : CHASE_LEN;
		m[i].cpu = pl->mlc_cpus[i % pl->nr_mlc];
		if (pthread_create(&m[i].th, NULL, mlc_main, &m[i]))
			return -1;
	}
	return 0;
}

static int wait_mlc(struct mlc *m, int nm)
{
	int i, r;

	for (i = 0; i < nm; i++) {
		while (!(r = __atomic_load_n(&m[i].ready, __ATOMIC_ACQUIRE)))
			usleep(10000);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* The measured window: vmstat around it, then everyone stops. */
static void window(struct result *r)
{
	long long a[NR_VM], b[NR_VM];
	unsigned int i;
	double t0;

	vm_snap(a);
	t0 = nu_now();
	__atomic_store_n(&phase, PH_MEASURE, __ATOMIC_RELEASE);
	sleep_s(o.secs);
	__atomic_store_n(&phase, PH_STOP, __ATOMIC_RELEASE);
	r->window_s = nu_now() - t0;
	vm_snap(b);
	for (i = 0; i < NR_VM; i++)
		r->vm[i] = a[i] < 0 || b[i] < 0 ? -1 : b[i] - a[i];
	r->tier_kb = env.nid < 0 ? -1 : node_kb(env.nid, "MemUsed:");
}

/* Up to MERGED samples of all workers, each in proportion to its ops. */
static size_t merge(const struct worker *w, int nw, uint64_t *s)
{
	uint64_t total = 0;
	size_t n = 0, take, have;
	int i;

	for (i = 0; i < nw; i++)
		total += w[i].seen;
	for (i = 0; total && i < nw; i++) {
		have = w[i].seen < RES ? w[i].seen : RES;
		take = (size_t)((double)MERGED * w[i].seen / total);
		if (take > have)
			take = have;
		memcpy(s + n, w[i].res, take * sizeof(*s));
		n += take;
	}
	qsort(s, n, sizeof(*s), cmp_u64);
	return n;
}

/* The @p quantile of the sorted samples @s with tag @tag (-1: any). */
static uint64_t quantile(const uint64_t *s, size_t n, double p, int tag)
{
	size_t cnt = 0, want, i;

	for (i = 0; i < n; i++)
		cnt += tag < 0 || (int)(s[i] & 1) == tag;
	want = (size_t)ceil(p * cnt);
	if (!want)
		want = 1;
	for (i = 0; cnt && i < n; i++)
		if ((tag < 0 || (int)(s[i] & 1) == tag) && !--want)
			return s[i] >> 1;
	return 0;
}

static void latencies(struct result *r, const struct worker *w, int nw)
{
	static const double pcts[3] = { 0.50, 0.95, 0.99 };
	uint64_t *s = malloc(MERGED * sizeof(*s));
	struct nu_hist h = { 0 };
	size_t n = 0;
	int i, t;

	for (i = 0; i < nw; i++) {
		nu_hist_merge(&h, &w[i].hist);
		r->sets += w[i].sets;
		r->corrupt += w[i].bad;
	}
	r->ops = h.n;
	r->ops_s = r->window_s > 0 ? h.n / r->window_s : 0;
	r->mean_ns = h.n ? h.sum / h.n : 0;
	r->max_ns = h.max;
	if (s)
		n = merge(w, nw, s);
	for (t = 0; t < 3; t++)
		for (i = 0; i < 3; i++)
			r->lat[t][i] = quantile(s, n, pcts[i], t - 1);
	for (i = 0; i < CDF_PTS - 1; i++)
		r->cdf[i] = quantile(s, n, (i + 1.0) / CDF_PTS, -1);
	r->cdf[CDF_PTS - 1] = h.max;
	free(s);
}

static void mlc_results(struct result *r, const struct mlc *m, int nm)
{
	uint64_t bytes = 0;
	int i;

	r->mlc_ns = m[0].loads ? (double)m[0].ns / m[0].loads : NAN;
	for (i = 1; i < nm; i++)
		bytes += m[i].bytes;
	r->mlc_mbs = nm > 1 && r->window_s > 0 ?
		     bytes / r->window_s / 1e6 : NAN;
}

/* Log what reclaim did since @before (fill and warm-up, not measured). */
static void log_setup_vm(const long long *before)
{
	static const char * const show[] = {
		"pgdemote_kswapd", "pgdemote_direct", "pgdemote_fence_skip",
		"pgfence_cow", "pswpout", "pgscan_kswapd", "pgalloc_dma32",
	};
	char line[512];
	long long now[NR_VM];
	unsigned int i, j;
	int len = 0;

	vm_snap(now);
	for (i = 0; i < ARRAY_SIZE(show); i++)
		for (j = 0; j < NR_VM; j++)
			if (!strcmp(show[i], vm_names[j]) && now[j] >= 0)
				len += snprintf(line + len, sizeof(line) - len,
						" %s=%lld", show[i],
						now[j] - before[j]);
	ksft_print_msg("fill+warm-up:%s\n", len ? line : " -");
	fflush(stdout);
}

static int workload(struct result *r)
{
	static struct kv kv;
	int nw = o.workers, nm = 1 + o.bw, i;
	struct worker *w = calloc(nw, sizeof(*w));
	struct mlc *m = calloc(nm, sizeof(*m));
	long long before[NR_VM];
	double t;

	bind_home(env.pl.home);
	nu_pin_cpu(env.pl.kv_cpus[0]);
	if (!w || !m || kv_init(&kv, env.keys, o.vsize))
		return 1;
	vm_snap(before);
	t = nu_now();
	kv_fill(&kv);
	r->fill_s = nu_now() - t;
	if (start_threads(&kv, w, nw, m, nm) || wait_mlc(m, nm))
		return 1;
	sleep_s(o.secs / 4.0 > 2 ? o.secs / 4.0 : 2);
	log_setup_vm(before);
	window(r);
	for (i = 0; i < nw; i++)
		pthread_join(w[i].th, NULL);
	for (i = 0; i < nm; i++)
		pthread_join(m[i].th, NULL);
	latencies(r, w, nw);
	mlc_results(r, m, nm);
	r->ok = 1;
	return 0;
}

/* Run the workload for configuration @ci in a child: 0 if it finished. */
/* Round @rd's result of configuration @ci. */
static struct result *res_of(int rd, int ci)
{
	return &env.res[rd * NR_CFG + ci];
}

static int run_workload(int ci, struct result *r)
{
	double deadline = nu_now() + 900 + 3.0 * o.secs;
	int st = 0;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid)
		_exit(workload(r));
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (nu_now() > deadline) {
			ksft_print_msg("%s: the workload is stuck, killing it\n",
				       cfgs[ci].name);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(200000);
	}
	if (WIFEXITED(st) && !WEXITSTATUS(st) && r->ok)
		return 0;
	ksft_print_msg("%s: the workload failed (status %#x)\n",
		       cfgs[ci].name, st);
	r->ok = 0;
	return -1;
}

/* ---- the tier node ---- */

static int set_attr(const char *attr, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), DAX_DEVS "%s/%s", env.dev, attr);
	return nu_write_str(path, val);
}

static const char *attr_val(const struct cfg *c, unsigned int i)
{
	if (!strcmp(attrs[i], "write_fence"))
		return c->fence ? "1" : "0";
	if (!strcmp(attrs[i], "ltpin"))
		return "0";
	return c->priv ? "1" : "0";
}

/* A device-dax instance whose target node has no CPUs. */
static int find_dax(void)
{
	struct dirent *de;
	char path[300];
	DIR *d = opendir(DAX_DEVS);
	int nid;

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), DAX_DEVS "%s/target_node",
			 de->d_name);
		nid = nu_read_ll(path);
		if (nid < 0 || nu_in_nodelist("has_cpu", nid))
			continue;
		snprintf(env.dev, sizeof(env.dev), "%.*s",
			 (int)sizeof(env.dev) - 1, de->d_name);
		env.nid = nid;
		break;
	}
	if (d)
		closedir(d);
	return env.nid < 0 ? -1 : 0;
}

/* Offline the tier node's blocks (a few tries) and unbind kmem. */
static int tier_down(void)
{
	int r = 0, i;

	if (!nu_dax_kmem_bound(env.dev))
		return 0;
	for (i = 0; i < OFFLINE_TRIES; i++) {
		r = nu_node_blocks_to(env.nid, "offline");
		if (!r)
			break;
		ksft_print_msg("offlining node %d: %s%s\n", env.nid,
			       strerror(-r),
			       i + 1 < OFFLINE_TRIES ? ", again" : "");
		nu_write_str(DROP_CACHES, "3");
		sleep(2);
	}
	if (!r)
		r = nu_dax_kmem("unbind", env.dev);
	if (r)
		ksft_print_msg("taking node %d down: %s\n", env.nid,
			       strerror(-r));
	return r;
}

static bool in_list(const char *list, int nid)
{
	int ids[NU_MAX_NODES], n = nu_parse_list(list, ids, NU_MAX_NODES);

	while (n-- > 0)
		if (ids[n] == nid)
			return true;
	return false;
}

/* The memory tier that lists the tier node, for the log. */
static void tier_log(const struct cfg *c)
{
	char path[320], list[256], tier[64] = "none";
	struct dirent *de;
	DIR *d = opendir(TIERS);

	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "memory_tier", 11))
			continue;
		snprintf(path, sizeof(path), TIERS "%s/nodelist", de->d_name);
		if (nu_read_str(path, list, sizeof(list)) > 0 &&
		    in_list(list, env.nid))
			snprintf(tier, sizeof(tier), "%.40s (%.16s)",
				 de->d_name, list);
	}
	if (d)
		closedir(d);
	ksft_print_msg("%s: node %d up, has_memory=%d private=%d, %lld MiB free, %s\n",
		       c->name, env.nid, nu_in_nodelist("has_memory", env.nid),
		       nu_in_nodelist("has_private_memory", env.nid),
		       nu_node_memfree_kb(env.nid) / 1024, tier);
}

static int tier_up(const struct cfg *c)
{
	unsigned int i;
	int r;

	for (i = 0; i < NR_ATTR; i++) {
		r = set_attr(attrs[i], attr_val(c, i));
		if (r) {
			ksft_print_msg("%s: %s/%s: %s\n", c->name, env.dev,
				       attrs[i], strerror(-r));
			return r;
		}
	}
	r = nu_dax_kmem("bind", env.dev);
	if (r) {
		ksft_print_msg("%s: kmem bind %s: %s (reason in dmesg)\n",
			       c->name, env.dev, strerror(-r));
		return r;
	}
	r = nu_node_blocks_to(env.nid, "online_movable");
	if (r) {
		ksft_print_msg("%s: onlining node %d: %s\n", c->name,
			       env.nid, strerror(-r));
		return r;
	}
	if (nu_in_nodelist("has_private_memory", env.nid) != c->priv)
		ksft_print_msg("%s: node %d is%s private, expected otherwise\n",
			       c->name, env.nid, c->priv ? " not" : "");
	tier_log(c);
	return 0;
}

/* ---- the kernel log ---- */

static bool has_bug(const char *s)
{
	const char *p;

	for (p = strstr(s, "BUG"); p; p = strstr(p + 1, "BUG"))
		if (p == s || !isupper((unsigned char)p[-1]))
			return true;
	return false;
}

/* Lines with WARN, BUG or "unmovable page" logged since the last call. */
static long kmsg_count(void)
{
	char rec[8192];
	ssize_t len;
	long n = 0;

	if (env.kmsg < 0)
		return -1;
	for (;;) {
		len = read(env.kmsg, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (len <= 0)
			break;
		rec[len] = '\0';
		n += strstr(rec, "WARN") || has_bug(rec) ||
		     strstr(rec, "unmovable page");
	}
	return n;
}

/* ---- setup and teardown ---- */

static int skip(const char *why)
{
	ksft_print_msg("SKIP %s\n", why);
	return KSFT_SKIP;
}

static int topology(void)
{
	static struct nu_topo t;
	struct nu_node *home;
	int i, j;

	if (nu_topo_read(&t) || !t.nr_eligible)
		return -1;
	home = &t.node[t.eligible[0]];
	env.pl.home = home->id;
	env.pl.nr_kv = home->nr_cpus;
	memcpy(env.pl.kv_cpus, home->cpus, home->nr_cpus * sizeof(int));
	for (i = 1; i < t.nr_eligible; i++) {
		struct nu_node *nd = &t.node[t.eligible[i]];

		for (j = 0; j < nd->nr_cpus; j++)
			env.pl.mlc_cpus[env.pl.nr_mlc++] = nd->cpus[j];
	}
	if (!env.pl.nr_mlc) {
		env.pl.nr_mlc = env.pl.nr_kv;
		memcpy(env.pl.mlc_cpus, env.pl.kv_cpus, sizeof(env.pl.kv_cpus));
	}
	if (!o.workers)
		o.workers = env.pl.nr_kv < MAX_WORKERS ?
			    env.pl.nr_kv : MAX_WORKERS;
	return 0;
}

static void size_store(void)
{
	long long free_kb = nu_node_memfree_kb(env.pl.home);
	long mb = o.ws_mb;

	if (!mb)
		mb = o.dry ? 64 : (long)(free_kb * 1.4 / 1024);
	env.keys = o.keys ? (unsigned long)o.keys :
		   (unsigned long)(mb * MB / o.vsize);
	if (!env.keys)
		env.keys = 1;
	ksft_print_msg("working set %lu x %d B = %lu MiB: %.2fx node %d MemFree %lld MiB\n",
		       env.keys, o.vsize, env.keys * o.vsize / MB,
		       free_kb > 0 ? env.keys * o.vsize / 1024.0 / free_kb : 0,
		       env.pl.home, free_kb / 1024);
}

static int find_tier(void)
{
	unsigned int i;
	char path[300];

	if (geteuid())
		return skip("not root");
	if (access(NU_KMEM "bind", W_OK))
		return skip("no dax/kmem driver (CONFIG_DEV_DAX_KMEM)");
	if (find_dax())
		return skip("no device-dax on a memory-only node (scripts/vm --dax-nodes 1)");
	for (i = 0; i < NR_ATTR; i++) {
		snprintf(path, sizeof(path), DAX_DEVS "%s/%s", env.dev,
			 attrs[i]);
		if (nu_read_str(path, env.attr_was[i],
				sizeof(env.attr_was[i])) < 0)
			return skip("no dax/kmem private attributes in this kernel");
	}
	env.was_bound = nu_dax_kmem_bound(env.dev);
	env.was_online = nu_in_nodelist("has_memory", env.nid) ||
			 nu_in_nodelist("has_private_memory", env.nid);
	return 0;
}

static void system_setup(void)
{
	int r;

	if (nu_read_str(NUMAB, env.numab, sizeof(env.numab)) < 0 ||
	    nu_write_str(NUMAB, "2")) {
		ksft_print_msg("cannot set %s to 2 (CONFIG_NUMA_BALANCING)\n",
			       NUMAB);
		env.numab[0] = '\0';
	}
	if (nu_read_str(DEMOTE, env.demote, sizeof(env.demote)) < 0 ||
	    nu_write_str(DEMOTE, "1")) {
		ksft_print_msg("cannot enable %s\n", DEMOTE);
		env.demote[0] = '\0';
	}
	if (o.swap_mb > 0) {
		r = nu_swap_on(&env.sw, "/tmp", o.swap_mb);
		env.swap = !r;
		if (r)
			ksft_print_msg("no swap: %s\n", strerror(-r));
	}
}

static int prepare(void)
{
	struct utsname u;
	int r;

	if (!o.dry) {
		r = find_tier();
		if (r)
			return r;
	}
	if (topology())
		return skip("no node with CPUs and memory");
	env.res = mmap(NULL, MAX_ROUNDS * NR_CFG * sizeof(*env.res),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (env.res == MAP_FAILED)
		return 1;
	uname(&u);
	ksft_print_msg("env %s home=%d cpus=%d/%d tier=%d(%s) n=%d r=%d d=%ld t=%d R=%d s=%d%s\n",
		       u.release, env.pl.home, env.pl.nr_kv, env.pl.nr_mlc,
		       env.nid, o.dry ? "none" : env.dev, o.workers, o.bw,
		       o.delay, o.secs, o.rounds, o.dry ? 0 : o.swap_mb,
		       o.dry ? " dry-run" : "");
	size_store();
	env.kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (env.kmsg >= 0)
		lseek(env.kmsg, 0, SEEK_END);
	if (!o.dry)
		system_setup();
	return 0;
}

/* The tier node as it was found, swap off, the sysctls back. */
static void restore(void)
{
	unsigned int i;

	if (!o.dry && !tier_down()) {
		for (i = 0; i < NR_ATTR; i++)
			set_attr(attrs[i], env.attr_was[i]);
		if (env.was_bound && !nu_dax_kmem("bind", env.dev) &&
		    env.was_online)
			nu_node_blocks_to(env.nid, "online_movable");
	}
	if (env.swap)
		nu_swap_off(&env.sw);
	if (env.numab[0])
		nu_write_str(NUMAB, env.numab);
	if (env.demote[0])
		nu_write_str(DEMOTE, env.demote);
}

/* ---- metrics, table, goals, CSV ---- */

enum { K_INFO, K_PERF, K_COUNT };

static const struct {
	const char *name;
	int kind;
} mets[] = {
	{ "ops_per_s", K_PERF }, { "lat_mean_ns", K_PERF },
	{ "lat_p50_ns", K_PERF }, { "lat_p95_ns", K_PERF },
	{ "lat_p99_ns", K_PERF }, { "get_p50_ns", K_PERF },
	{ "get_p99_ns", K_PERF }, { "set_p50_ns", K_PERF },
	{ "set_p99_ns", K_PERF }, { "lat_max_ns", K_INFO },
	{ "mlc_lat_ns", K_PERF }, { "mlc_bw_mbs", K_PERF },
	{ "corruptions", K_INFO }, { "fill_s", K_INFO },
	{ "tier_used_mb", K_INFO }, { "dmesg_bad", K_INFO },
};

#define NR_BASE	ARRAY_SIZE(mets)
#define NR_MET	(NR_BASE + NR_VM)

static const char *met_name(unsigned int i)
{
	return i < NR_BASE ? mets[i].name : vm_names[i - NR_BASE];
}

static int met_kind(unsigned int i)
{
	if (i < NR_BASE)
		return mets[i].kind;
	return i - NR_BASE < NR_VM_GOAL ? K_COUNT : K_INFO;
}

static int met_index(const char *name)
{
	unsigned int i;

	for (i = 0; i < NR_MET; i++)
		if (!strcmp(met_name(i), name))
			return i;
	return -1;
}

/* The metrics of result @r in mets[], vm_names[] order; NAN: none */
static void met_values(const struct result *r, double *v)
{
	double base[NR_BASE] = {
		r->ops_s, r->mean_ns, r->lat[0][0], r->lat[0][1],
		r->lat[0][2], r->lat[1][0], r->lat[1][2], r->lat[2][0],
		r->lat[2][2], r->max_ns, r->mlc_ns, r->mlc_mbs,
		r->corrupt, r->fill_s,
		r->tier_kb < 0 ? NAN : r->tier_kb / 1024.0,
		r->dmesg < 0 ? NAN : r->dmesg,
	};
	unsigned int i;

	for (i = 0; i < NR_MET; i++)
		v[i] = NAN;
	if (!r->ok)
		return;
	memcpy(v, base, sizeof(base));
	for (i = 0; i < NR_VM; i++)
		v[NR_BASE + i] = r->vm[i] < 0 ? NAN : r->vm[i];
}

static double vals[NR_CFG][NR_MET];
/* Plain's rounds: (max - min) / median, the noise any ratio carries */
static double spread[NR_MET];

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The median of the @n values in @v that are not NAN (NAN if none); they
 * are left sorted at the front of @v, NANs after them.
 */
static double median(double *v, int n)
{
	int i, m = 0;

	for (i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[m++] = v[i];
	for (i = m; i < n; i++)
		v[i] = NAN;
	if (!m)
		return NAN;
	qsort(v, m, sizeof(*v), cmp_double);
	return m & 1 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

/* vals[@ci]: each metric's median over the rounds. */
static void med_values(int ci)
{
	double v[MAX_ROUNDS][NR_MET], col[MAX_ROUNDS];
	unsigned int i;
	int rd;

	for (rd = 0; rd < o.rounds; rd++)
		met_values(res_of(rd, ci), v[rd]);
	for (i = 0; i < NR_MET; i++) {
		for (rd = 0; rd < o.rounds; rd++)
			col[rd] = v[rd][i];
		vals[ci][i] = median(col, o.rounds);
		/* median() sorted the rounds that count to the front */
		for (rd = 0; rd < o.rounds && !isnan(col[rd]); rd++)
			;
		if (!ci && rd > 1 && vals[ci][i] != 0)
			spread[i] = (col[rd - 1] - col[0]) / fabs(vals[ci][i]);
		else if (!ci)
			spread[i] = NAN;
	}
}

static void fmt_val(char *b, size_t len, double v)
{
	if (isnan(v))
		snprintf(b, len, "-");
	else if (v == floor(v) && fabs(v) < 1e15)
		snprintf(b, len, "%.0f", v);
	else
		snprintf(b, len, "%.2f", v);
}

/* @x relative to @base: 1 when both are 0, INFINITY over a 0 base. */
static double ratio(double base, double x)
{
	if (isnan(base) || isnan(x))
		return NAN;
	if (base == 0)
		return x == 0 ? 1 : INFINITY;
	return x / base;
}

static void fmt_ratio(char *b, size_t len, double base, double x)
{
	double q = ratio(base, x);

	if (isnan(q))
		snprintf(b, len, "-");
	else if (isinf(q))
		snprintf(b, len, "inf");
	else
		snprintf(b, len, "%.2f", q);
}

static void print_table(void)
{
	char c[NR_CFG][24], q[2][16], sp[16];
	unsigned int i;
	int k;

	ksft_print_msg("%-20s %12s %12s %12s %10s %10s %10s\n", "metric",
		       "plain", "fenced", "private", "fen/plain", "priv/plain",
		       "plain_rng");
	for (i = 0; i < NR_MET; i++) {
		for (k = 0; k < NR_CFG; k++)
			fmt_val(c[k], sizeof(c[k]), vals[k][i]);
		fmt_ratio(q[0], sizeof(q[0]), vals[0][i], vals[1][i]);
		fmt_ratio(q[1], sizeof(q[1]), vals[0][i], vals[2][i]);
		if (isnan(spread[i]))
			snprintf(sp, sizeof(sp), "-");
		else
			snprintf(sp, sizeof(sp), "%.0f%%", 100 * spread[i]);
		ksft_print_msg("%-20s %12s %12s %12s %10s %10s %10s\n",
			       met_name(i), c[0], c[1], c[2], q[0], q[1], sp);
	}
}

/* Goal: fenced's @name at most @k times plain's (counters: or tiny). */
static void goal_at_most(const char *name, double k)
{
	int i = met_index(name);
	double base = vals[0][i], x = vals[1][i];
	bool count = met_kind(i) == K_COUNT, ok;

	if (isnan(base) || isnan(x)) {
		ksft_print_msg("n/a  fenced %s <= %.1fx plain (not measured)\n",
			       name, k);
		return;
	}
	ok = x <= k * base || (count && x < COUNT_FLOOR);
	ksft_print_msg("%s fenced %s <= %.1fx plain: %.0f vs %.0f (%.2fx)\n",
		       ok ? "PASS" : "FAIL", name, k, x, base,
		       ratio(base, x));
}

/* Goal: private within 10% of plain on every performance metric. */
static void goal_private(void)
{
	char off[1024] = "";
	int n = 0, bad = 0, len = 0;
	unsigned int i;

	for (i = 0; i < NR_MET; i++) {
		double a = vals[0][i], b = vals[2][i], tol = 0.10 * a;

		if (met_kind(i) == K_INFO || isnan(a) || isnan(b))
			continue;
		if (met_kind(i) == K_COUNT && tol < COUNT_FLOOR)
			tol = COUNT_FLOOR;
		n++;
		if (fabs(b - a) <= tol)
			continue;
		bad++;
		if (len < (int)sizeof(off) - 64)
			len += snprintf(off + len, sizeof(off) - len, " %s=%.2f",
					met_name(i), ratio(a, b));
	}
	if (!n) {
		ksft_print_msg("n/a  private within 10%% of plain (not measured)\n");
		return;
	}
	ksft_print_msg("%s private within 10%% of plain: %d of %d metrics off%s%s\n",
		       bad ? "FAIL" : "PASS", bad, n, bad ? ":" : "", off);
}

static void goals(void)
{
	long dm = 0, corrupt = 0;
	bool known = false;
	int k;
	const struct result *r;

	goal_private();
	goal_at_most("pgfault", 1.5);
	goal_at_most("pgdemote_direct", 2);
	goal_at_most("allocstall", 2);
	goal_at_most("lat_p99_ns", 1.5);
	/* These two over every run, not the median */
	for (k = 0; k < o.rounds * NR_CFG; k++) {
		r = &env.res[k];
		if (r->ok)
			corrupt += r->corrupt;
		if (r->dmesg >= 0) {
			dm += r->dmesg;
			known = true;
		}
	}
	ksft_print_msg("%s no corruptions: %ld\n", corrupt ? "FAIL" : "PASS",
		       corrupt);
	if (known)
		ksft_print_msg("%s dmesg WARN/BUG/\"unmovable page\" lines: %ld\n",
			       dm ? "FAIL" : "PASS", dm);
	else
		ksft_print_msg("n/a  dmesg lines (no /dev/kmsg)\n");
}

static int write_csv(void)
{
	FILE *f = fopen(o.csv, "w");
	unsigned int i;
	int k;

	if (!f)
		return -errno;
	fprintf(f, "config,metric,value\n");
	for (k = 0; k < NR_CFG; k++)
		for (i = 0; i < NR_MET; i++)
			if (!isnan(vals[k][i]))
				fprintf(f, "%s,%s,%.10g\n", cfgs[k].name,
					met_name(i), vals[k][i]);
	return fclose(f) ? -errno : 0;
}

/* Configuration @ci's latency at CDF point @i: the rounds' median. */
static double cdf_at(int ci, int i)
{
	double v[MAX_ROUNDS];
	int rd;

	for (rd = 0; rd < o.rounds; rd++)
		v[rd] = res_of(rd, ci)->ok ? res_of(rd, ci)->cdf[i] : NAN;
	return median(v, o.rounds);
}

static int write_cdf(void)
{
	FILE *f = fopen(o.cdf, "w");
	double x;
	int k, i;

	if (!f)
		return -errno;
	fprintf(f, "config,latency_ns,fraction\n");
	for (k = 0; k < NR_CFG; k++)
		for (i = 0; i < CDF_PTS; i++) {
			x = cdf_at(k, i);
			if (!isnan(x))
				fprintf(f, "%s,%.0f,%.2f\n", cfgs[k].name, x,
					(i + 1.0) / CDF_PTS);
		}
	return fclose(f) ? -errno : 0;
}

static void report(void)
{
	int k, r;

	for (k = 0; k < NR_CFG; k++)
		med_values(k);
	ksft_print_msg("tier_bench summary (%d s per configuration, median of %d round%s%s)\n",
		       o.secs, o.rounds, o.rounds > 1 ? "s" : "",
		       o.dry ? ", dry-run: one setup three times" : "");
	print_table();
	goals();
	ksft_print_msg("tier_bench end\n");
	r = o.csv ? write_csv() : 0;
	if (r)
		ksft_print_msg("%s: %s\n", o.csv, strerror(-r));
	r = o.cdf ? write_cdf() : 0;
	if (r)
		ksft_print_msg("%s: %s\n", o.cdf, strerror(-r));
}

/* ---- main ---- */

static void log_cfg(int ci, const struct result *r)
{
	ksft_print_msg("%s: fill %.1fs, %.0f ops/s, p50/95/99 %llu/%llu/%llu ns, chase %.1f ns\n",
		       cfgs[ci].name, r->fill_s, r->ops_s,
		       (unsigned long long)r->lat[0][0],
		       (unsigned long long)r->lat[0][1],
		       (unsigned long long)r->lat[0][2], r->mlc_ns);
	ksft_print_msg("%s: %.1f MB/s, %llu ops in %.1f s, corruptions %llu, dmesg %ld\n",
		       cfgs[ci].name, r->mlc_mbs, (unsigned long long)r->ops,
		       r->window_s, (unsigned long long)r->corrupt, r->dmesg);
}

/* Configuration @ci: tier node set up, workload, node down. */
static int run_one(int rd, int ci)
{
	struct result *r = res_of(rd, ci);

	if (!o.dry && (tier_down() || tier_up(&cfgs[ci])))
		return 1;
	if (!o.dry) {
		sync();
		nu_write_str(DROP_CACHES, "3");
		sleep_s(SETTLE_S);
	}
	ksft_print_msg("%s: running round %d of %d (fill, warm-up, %d s measured)\n",
		       cfgs[ci].name, rd + 1, o.rounds, o.secs);
	run_workload(ci, r);
	if (!o.dry && tier_down())
		return 1;
	r->dmesg = kmsg_count();
	if (r->ok)
		log_cfg(ci, r);
	return 0;
}

/*
 * Every wanted configuration, -R rounds of them interleaved (plain,
 * fenced, private, plain, ...), so that drift in the guest over the run
 * falls on all three alike.
 */
static int run_all(void)
{
	int rd, ci;

	for (rd = 0; rd < o.rounds; rd++)
		for (ci = 0; ci < NR_CFG; ci++)
			if (o.want[ci] && run_one(rd, ci))
				return 1;
	return 0;
}

static void help(const char *prog)
{
	printf("Usage: %s [options]\n"
	       "  -t SEC     measured seconds per configuration (45)\n"
	       "  -w MIB     working set (1.4x node 0 MemFree; dry-run 64)\n"
	       "  -k KEYS    keys (default: working set / value size)\n"
	       "  -v BYTES   value size, a multiple of 8, >= 64 (4096)\n"
	       "  -n N       kv worker threads (one per CPU of node 0)\n"
	       "  -r N       MLC bandwidth threads (1)\n"
	       "  -d NS      delay injected between bandwidth chunks (1000)\n"
	       "  -s MIB     swap (zram, else a loop file in /tmp), 0: none (256)\n"
	       "  -R N       rounds of the configurations; medians (1, <= 9)\n"
	       "  -c LIST    configurations: plain,fenced,private (all)\n"
	       "  -o CSV     config,metric,value\n"
	       "  -l CSV     config,latency_ns,fraction\n"
	       "  --dry-run  run the workload here, no dax/sysctl/swap\n",
	       prog);
}

static int parse_cfgs(char *list)
{
	char *tok, *save;
	int k;

	memset(o.want, 0, sizeof(o.want));
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < NR_CFG && strcmp(tok, cfgs[k].name); k++)
			;
		if (k == NR_CFG)
			return -1;
		o.want[k] = true;
	}
	return 0;
}

/* Value of option @c, within [@min, @max]: 0 or -1 */
static int num(const char *arg, long min, long max, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(arg, &end, 0);
	return errno || *end || end == arg || *v < min || *v > max ? -1 : 0;
}

static int parse_opt(int c, char *arg)
{
	long v = 0;
	int r = 0;

	if (strchr("twkvnrdsR", c))
		r = num(arg, c == 'r' || c == 'd' || c == 's' ? 0 : 1,
			c == 'n' ? MAX_WORKERS : c == 'r' ? MAX_BW :
			c == 'R' ? MAX_ROUNDS : c == 't' ? 86400 :
			c == 'k' ? 1L << 31 : 1L << 30, &v);
	if (r)
		return r;
	switch (c) {
	case 't':
		o.secs = v;
		break;
	case 'w':
		o.ws_mb = v;
		break;
	case 'k':
		o.keys = v;
		break;
	case 'v':
		o.vsize = v;
		return v >= 64 && !(v % 8) && v <= 1 << 24 ? 0 : -1;
	case 'n':
		o.workers = v;
		break;
	case 'r':
		o.bw = v;
		break;
	case 'd':
		o.delay = v;
		break;
	case 's':
		o.swap_mb = v;
		break;
	case 'R':
		o.rounds = v;
		break;
	case 'c':
		return parse_cfgs(arg);
	case 'o':
		o.csv = arg;
		break;
	case 'l':
		o.cdf = arg;
		break;
	case 'D':
		o.dry = true;
		break;
	default:
		return -1;
	}
	return 0;
}

static int parse(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "dry-run", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "t:w:k:v:n:r:d:s:R:c:o:l:h", lopts,
				NULL)) != -1) {
		if (c == 'h' || parse_opt(c, optarg)) {
			help(argv[0]);
			return c == 'h' ? 1 : 2;
		}
	}
	if (optind < argc) {
		help(argv[0]);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	r = parse(argc, argv);
	if (r)
		return r == 1 ? 0 : r;
	r = prepare();
	if (r)
		return r;
	r = run_all();
	report();
	restore();
	return r;
}
