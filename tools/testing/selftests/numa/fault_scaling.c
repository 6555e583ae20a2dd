// SPDX-License-Identifier: GPL-2.0
/*
 * fault_scaling - anonymous page-fault throughput across NUMA nodes.
 *
 * Each worker maps a private anonymous region, writes one byte to every
 * page and unmaps it again, forever; one operation is one page touched,
 * as in will-it-scale's page_fault1.  The sweep first fills one node with
 * workers (1, 8, W where W is the node's width in cores) and then adds
 * whole nodes (2W .. kW).  Workers are pinned one per core and released
 * together; each point is warmed up, measured in intervals, and the
 * whole sweep is repeated with the points interleaved so that drift hits
 * all of them alike.
 *
 * Bounds are only ever placed on ratios measured in the same run:
 * intra-node speedup S(N) = T(N)/T(1), node additivity
 * A(k) = T(kW)/(k*T(W)), per-worker fairness, and the share of local
 * allocations.  Performance bounds are reported but skipped in virtual
 * machines, on busy systems and when repetitions disagree, unless
 * --force is given.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "../kselftest.h"
#include "numa_util.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif
#ifndef RUSAGE_THREAD
#define RUSAGE_THREAD		1
#endif

#define MAX_WORKERS	NU_MAX_CPUS
#define MAX_POINTS	64
#define MAX_REPS	16
#define SLOT_BYTES	256		/* counters this far apart: no false sharing */
#define PMD_SIZE_GUESS	(2UL << 20)
#define REGION_BASE	(1UL << 44)	/* 16 TiB, PMD aligned */
#define REGION_STRIDE	(1UL << 34)	/* per thread in thread mode */
#define CHECK_EVERY	64		/* pages between looks at the phase */

/* Diagnostic and CSV line formats, each kept on one line for grep. */
#define FMT_ENV \
	"env kernel=%s nodes=%d eligible=%d used=%d W=%d mode=%s thp=%s system_thp=\"%s\" numa_balancing=%s virt=%s busy=%.0f%% region=%luMiB reps=%d membind=%d\n"
#define FMT_REP \
	"rep=%d tasks=%d nodes=%d ops_s=%.0f per_task=%.0f min_task=%.0f stime_ns_op=%.0f faults_op=%.3f%s local=%.3f idle=%.1f%% control_ops_s=%.0f\n"
#define FMT_POINT \
	"point tasks=%d nodes=%d mode=%s thp=%s ops_s=%.0f per_task=%.0f S=%.2f E=%.3f A=%s stime_ns_op=%.0f faults_op=%.3f local=%.3f spread=%.2f\n"
#define FMT_COST \
	"cost tasks=%d stime_ns_op=%.0f C=%.2f faults_s_per_node=%.0f\n"
#define FMT_CSV \
	"%d,%.0f,%.1f,%.0f,%.1f,%.0f,%d,%d,%.3f,%.3f,%.0f,%.3f,%.4f,%.0f,%.0f,%.3f,%.0f\n"

enum phase { PH_WAIT, PH_WARM, PH_MEASURE, PH_STOP };
enum thp_mode { THP_NOHUGE, THP_HUGE, THP_SYSTEM };
enum work { WORK_FAULT, WORK_CONTROL };

/* A worker's counters; the parent reads them while the worker runs. */
struct slot {
	uint64_t ops;		/* operations so far, written by the worker */
	uint64_t snap_ops[2];	/* ops at measurement start [0] and end [1] */
	uint64_t stime_ns[2];	/* system time at the same two moments */
	uint64_t minflt[2];	/* minor faults (getrusage) at the same moments */
	uint64_t perf_flt[2];	/* user page faults (perf) at the same moments */
	int snapped[2];		/* set once the snapshot is taken */
	int perf_ok;		/* perf_flt is valid */
	int ready;		/* pinned and waiting at the barrier */
	int error;		/* errno of a failure, 0 if none */
};

/* The area shared with all workers (MAP_SHARED so fork sees it). */
struct shared {
	int phase;		/* enum phase, written by the parent only */
	char pad[SLOT_BYTES - sizeof(int)];
	char slots[];		/* nr_workers * SLOT_BYTES */
};

/* Command-line settings. */
static struct {
	bool threads;		/* pthreads instead of processes */
	enum thp_mode thp;	/* THP policy of the region */
	unsigned long region;	/* bytes per worker region */
	unsigned long user_region;	/* -S as given, 0 = default */
	double warmup;		/* seconds per point before measuring */
	double seconds;		/* seconds measured per point */
	double interval;	/* seconds per sample */
	bool timed;		/* -W or -s given */
	int reps;		/* interleaved repetitions */
	bool smt;		/* use SMT siblings too */
	bool control;		/* run the control loop at every point */
	bool use_perf;		/* try perf_event_open */
	int membind;		/* bind worker memory to this node, -1 = no */
	double additivity;	/* bound for A(k) */
	double min_speedup;	/* bound for S(W) */
	double max_spread;	/* noise guard */
	bool force;		/* apply performance bounds anyway */
	const char *csv;	/* -o file */
	int nr_user_points;	/* -t list */
	int user_points[MAX_POINTS];
	int nr_user_nodes;	/* -n list */
	int user_nodes[NU_MAX_NODES];
} opt = {
	.thp = THP_NOHUGE,
	.warmup = 1,
	.seconds = 3,
	.interval = 0.5,
	.reps = 3,
	.control = true,
	.use_perf = true,
	.membind = -1,
	.additivity = 0.6,
	.min_speedup = 1.5,
	.max_spread = 0.15,
};

/* What one run of one point produced. */
struct result {
	double ops_s;		/* median over intervals of total ops/s */
	double worker_min;	/* slowest worker, ops/s */
	double worker_med;	/* median worker, ops/s */
	double stime_ns_op;	/* system time per op */
	double faults_op;	/* faults per op (perf if it worked, else rusage) */
	double local;		/* local / all allocations over all nodes, -1 n/a */
	double idle;		/* idle share of all CPUs while measuring */
	double ctl_ops_s;	/* control loop ops/s at the same point, 0 n/a */
	bool perf;		/* faults_op came from perf */
};

static struct nu_topo topo;
static int cpu_order[MAX_WORKERS];	/* CPUs in fill order */
static int cpu_node[MAX_WORKERS];	/* node id of each */
static int nr_order;
static int width;			/* W: workers that fill one node */
static int nr_nodes_used;		/* k: nodes in the sweep */
static int points[MAX_POINTS], nr_points;
static struct result res[MAX_REPS][MAX_POINTS];
static long page_size;

static struct slot *slot_of(struct shared *sh, int i)
{
	return (struct slot *)(sh->slots + (size_t)i * SLOT_BYTES);
}

static int read_phase(struct shared *sh)
{
	return __atomic_load_n(&sh->phase, __ATOMIC_ACQUIRE);
}

static void set_phase(struct shared *sh, int ph)
{
	__atomic_store_n(&sh->phase, ph, __ATOMIC_RELEASE);
}

static int perf_open_faults(void)
{
	struct perf_event_attr pa;

	memset(&pa, 0, sizeof(pa));
	pa.type = PERF_TYPE_SOFTWARE;
	pa.size = sizeof(pa);
	pa.config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
	pa.exclude_kernel = 1;	/* allowed at perf_event_paranoid=2 */
	pa.exclude_hv = 1;
	return syscall(__NR_perf_event_open, &pa, 0, -1, -1, 0);
}

static void snapshot(struct slot *s, int idx, uint64_t ops, int perf_fd,
		     bool thread)
{
	struct rusage ru;
	uint64_t v;

	getrusage(thread ? RUSAGE_THREAD : RUSAGE_SELF, &ru);
	s->snap_ops[idx] = ops;
	s->stime_ns[idx] = ru.ru_stime.tv_sec * 1000000000ULL +
			   ru.ru_stime.tv_usec * 1000ULL;
	s->minflt[idx] = ru.ru_minflt;
	if (perf_fd >= 0 && read(perf_fd, &v, sizeof(v)) == sizeof(v))
		s->perf_flt[idx] = v;
	else
		s->perf_ok = 0;
	__atomic_store_n(&s->snapped[idx], 1, __ATOMIC_RELEASE);
}

/* Look at the phase; take snapshots on transitions.  True = stop now. */
static bool phase_check(struct shared *sh, struct slot *s, int *cur,
			uint64_t ops, int perf_fd, bool thread)
{
	int ph = read_phase(sh);

	if (ph == *cur)
		return false;
	if (ph >= PH_MEASURE && *cur < PH_MEASURE)
		snapshot(s, 0, ops, perf_fd, thread);
	if (ph == PH_STOP) {
		if (!s->snapped[0])
			snapshot(s, 0, ops, perf_fd, thread);
		snapshot(s, 1, ops, perf_fd, thread);
		return true;
	}
	*cur = ph;
	return false;
}

struct worker_arg {
	struct shared *sh;
	int idx;		/* worker number */
	int cpu;		/* CPU to pin to */
	enum work work;
};

static void *worker(void *p)
{
	struct worker_arg *a = p;
	struct slot *s = slot_of(a->sh, a->idx);
	unsigned long hint = REGION_BASE;
	int cur = PH_WAIT, perf_fd = -1;
	uint64_t ops = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		s->error = errno;
		__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	if (opt.threads)
		hint += (unsigned long)a->idx * REGION_STRIDE;
	if (opt.membind >= 0) {
		unsigned long mask[NU_MAX_NODES / (8 * sizeof(long)) + 1] = { 0 };
		int bits = 8 * sizeof(long);

		mask[opt.membind / bits] |= 1UL << (opt.membind % bits);
		if (nu_set_mempolicy(MPOL_BIND, mask, NU_MAX_NODES + 1)) {
			s->error = errno;
			__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
			return NULL;
		}
	}
	if (opt.use_perf) {
		perf_fd = perf_open_faults();
		s->perf_ok = perf_fd >= 0;
	}
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	while (read_phase(a->sh) == PH_WAIT)
		usleep(200);

	for (;;) {
		if (a->work == WORK_CONTROL) {
			/* Kernel-light control: a trivial system call. */
			for (int i = 0; i < CHECK_EVERY; i++) {
				syscall(__NR_getppid);
				__atomic_store_n(&s->ops, ++ops, __ATOMIC_RELAXED);
			}
			if (phase_check(a->sh, s, &cur, ops, perf_fd, opt.threads))
				break;
			continue;
		}

		char *c = mmap((void *)hint, opt.region, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0);
		if (c == MAP_FAILED)
			c = mmap(NULL, opt.region, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED) {
			s->error = errno;
			break;
		}
		if (opt.thp == THP_NOHUGE)
			madvise(c, opt.region, MADV_NOHUGEPAGE);
		else if (opt.thp == THP_HUGE)
			madvise(c, opt.region, MADV_HUGEPAGE);

		bool stop = false;

		for (unsigned long off = 0; off < opt.region; off += page_size) {
			c[off] = 0;
			__atomic_store_n(&s->ops, ++ops, __ATOMIC_RELAXED);
			if (!(ops % CHECK_EVERY) &&
			    phase_check(a->sh, s, &cur, ops, perf_fd, opt.threads)) {
				stop = true;
				break;
			}
		}
		munmap(c, opt.region);
		if (stop)
			break;
	}
	if (perf_fd >= 0)
		close(perf_fd);
	return NULL;
}

static uint64_t total_ops(struct shared *sh, int n)
{
	uint64_t t = 0;

	for (int i = 0; i < n; i++)
		t += __atomic_load_n(&slot_of(sh, i)->ops, __ATOMIC_RELAXED);
	return t;
}

static void numastat_sum(uint64_t *local, uint64_t *all)
{
	struct nu_numastat ns;

	*local = *all = 0;
	for (int i = 0; i < topo.nr_nodes; i++) {
		if (nu_read_numastat(topo.node[i].id, &ns))
			continue;
		*local += ns.local_node;
		*all += ns.local_node + ns.other_node;
	}
}

/*
 * Run @n workers doing @work for one point and fill @r (only ops_s for
 * the control loop).  Returns 0, or -1 if the workers could not start.
 */
static int run_point(int n, enum work work, struct result *r)
{
	size_t bytes = sizeof(struct shared) + (size_t)n * SLOT_BYTES;
	double warm = work == WORK_CONTROL ? 0.2 : opt.warmup;
	double secs = work == WORK_CONTROL ? 1.0 : opt.seconds;
	double rates[1024], wr[MAX_WORKERS];
	uint64_t l0, a0, l1, a1, prev, now_ops;
	unsigned long long i0 = 0, t0 = 0, i1 = 0, t1 = 0;
	struct worker_arg *args;
	pthread_t *tids = NULL;
	pid_t *pids = NULL;
	struct shared *sh;
	int nr_rates = 0, ret = 0;
	double start, last, end;

	sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		ksft_exit_fail_msg("mmap shared area: %s\n", strerror(errno));
	args = calloc(n, sizeof(*args));
	if (opt.threads)
		tids = calloc(n, sizeof(*tids));
	else
		pids = calloc(n, sizeof(*pids));
	if (!args || (!tids && !pids))
		ksft_exit_fail_msg("out of memory\n");

	for (int i = 0; i < n; i++) {
		args[i] = (struct worker_arg){ sh, i, cpu_order[i], work };
		if (opt.threads) {
			if (pthread_create(&tids[i], NULL, worker, &args[i]))
				ksft_exit_fail_msg("pthread_create failed\n");
			continue;
		}
		pids[i] = fork();
		if (pids[i] < 0)
			ksft_exit_fail_msg("fork: %s\n", strerror(errno));
		if (!pids[i]) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(1);
			worker(&args[i]);
			_exit(0);
		}
	}
	for (int i = 0; i < n; i++)
		while (!__atomic_load_n(&slot_of(sh, i)->ready, __ATOMIC_ACQUIRE))
			usleep(1000);
	for (int i = 0; i < n; i++)
		if (slot_of(sh, i)->error) {
			ksft_print_msg("worker %d on CPU %d failed to start: %s\n", i,
				       cpu_order[i], strerror(slot_of(sh, i)->error));
			ret = -1;
		}

	if (!ret) {
		set_phase(sh, PH_WARM);
		usleep(warm * 1e6);
		set_phase(sh, PH_MEASURE);
		numastat_sum(&l0, &a0);
		nu_read_cpu_times(&i0, &t0);	/* busy jiffies */
		start = nu_now();
		last = start;
		prev = total_ops(sh, n);
		for (int i = 0; i < n; i++)
			wr[i] = __atomic_load_n(&slot_of(sh, i)->ops, __ATOMIC_RELAXED);
		do {
			double t;

			usleep(opt.interval * 1e6);
			t = nu_now();
			now_ops = total_ops(sh, n);
			if (nr_rates < 1024)
				rates[nr_rates++] = (now_ops - prev) / (t - last);
			prev = now_ops;
			last = t;
		} while (last - start < secs - 0.001);
		end = last;
		for (int i = 0; i < n; i++)
			wr[i] = (__atomic_load_n(&slot_of(sh, i)->ops,
						 __ATOMIC_RELAXED) - wr[i]) / (end - start);
		numastat_sum(&l1, &a1);
		nu_read_cpu_times(&i1, &t1);
	}
	set_phase(sh, PH_STOP);
	for (int i = 0; i < n; i++) {
		if (opt.threads)
			pthread_join(tids[i], NULL);
		else
			waitpid(pids[i], NULL, 0);
	}

	if (!ret) {
		uint64_t ops = 0, st = 0, mf = 0, pf = 0;
		bool perf = opt.use_perf;

		for (int i = 0; i < n; i++) {
			struct slot *s = slot_of(sh, i);

			if (s->error) {
				ksft_print_msg("worker %d failed: %s\n", i,
					       strerror(s->error));
				ret = -1;
			}
			ops += s->snap_ops[1] - s->snap_ops[0];
			st += s->stime_ns[1] - s->stime_ns[0];
			mf += s->minflt[1] - s->minflt[0];
			pf += s->perf_flt[1] - s->perf_flt[0];
			perf &= !!s->perf_ok;
		}
		memset(r, 0, sizeof(*r));
		r->ops_s = nu_median(rates, nr_rates);
		r->stime_ns_op = ops ? (double)st / ops : 0;
		r->perf = perf;
		r->faults_op = ops ? (double)(perf ? pf : mf) / ops : 0;
		r->local = a1 > a0 ? (double)(l1 - l0) / (a1 - a0) : -1;
		/* idle = total - busy over the window */
		r->idle = t1 > t0 ? 1.0 - (double)(i1 - i0) / (t1 - t0) : -1;
		r->worker_min = nu_min(wr, n);
		r->worker_med = nu_median(wr, n);
	}
	munmap(sh, bytes);
	free(args);
	free(tids);
	free(pids);
	return ret;
}

static void usage(const char *prog)
{
	printf("Usage: %s [options]\n"
	       "  -m process|thread   worker kind (default process)\n"
	       "  -H nohuge|huge|system  THP policy of the region (default nohuge)\n"
	       "  -S MiB              region per worker (default 128, shrunk to fit)\n"
	       "  -t N,N,...          explicit worker counts instead of the sweep\n"
	       "  -n NODE,...         nodes to use, in fill order (default: all eligible)\n"
	       "  -W sec  -s sec  -i ms   warmup, measurement, sample interval (1, 3, 500;\n"
	       "                      in a VM without --force: 0.3, 1)\n"
	       "  -r N                interleaved repetitions (default 3)\n"
	       "  -o FILE             write CSV (will-it-scale/LKP columns first)\n"
	       "  --smt               use SMT siblings after the cores\n"
	       "  --no-control        skip the getppid control loop\n"
	       "  --no-perf           do not use perf_event_open\n"
	       "  --additivity=F      bound for control-normalised A(k) (0.6)\n"
	       "  --min-speedup=F     bound for S(W) (1.5)\n"
	       "  --max-spread=F      repetitions spread above which a bound is SKIPped (0.15)\n"
	       "  --force             apply performance bounds in VMs and on busy or noisy systems\n"
	       "  --membind=NODE      allocate all worker memory on NODE (MPOL_BIND); with a\n"
	       "                      remote NODE local_allocation must fail: a negative control\n",
	       prog);
}

static int parse_ints(const char *s, int *out, int max)
{
	int n = nu_parse_list(s, out, max);

	if (n <= 0) {
		fprintf(stderr, "bad list: %s\n", s);
		exit(KSFT_FAIL);
	}
	return n;
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "smt", no_argument, NULL, 1 },
		{ "no-control", no_argument, NULL, 2 },
		{ "no-perf", no_argument, NULL, 3 },
		{ "additivity", required_argument, NULL, 4 },
		{ "min-speedup", required_argument, NULL, 5 },
		{ "max-spread", required_argument, NULL, 6 },
		{ "force", no_argument, NULL, 7 },
		{ "membind", required_argument, NULL, 8 },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	int c;

	while ((c = getopt_long(argc, argv, "m:H:S:t:n:W:s:i:r:o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (strcmp(optarg, "process") && strcmp(optarg, "thread"))
				goto bad;
			opt.threads = !strcmp(optarg, "thread");
			break;
		case 'H':
			if (!strcmp(optarg, "nohuge"))
				opt.thp = THP_NOHUGE;
			else if (!strcmp(optarg, "huge"))
				opt.thp = THP_HUGE;
			else if (!strcmp(optarg, "system"))
				opt.thp = THP_SYSTEM;
			else
				goto bad;
			break;
		case 'S':
			opt.user_region = strtoul(optarg, NULL, 0) << 20;
			if (!opt.user_region)
				goto bad;
			break;
		case 't':
			opt.nr_user_points = parse_ints(optarg, opt.user_points, MAX_POINTS);
			break;
		case 'n':
			opt.nr_user_nodes = parse_ints(optarg, opt.user_nodes, NU_MAX_NODES);
			break;
		case 'W':
			opt.warmup = atof(optarg);
			opt.timed = true;
			break;
		case 's':
			opt.seconds = atof(optarg);
			opt.timed = true;
			break;
		case 'i':
			opt.interval = atof(optarg) / 1000;
			break;
		case 'r':
			opt.reps = atoi(optarg);
			break;
		case 'o':
			opt.csv = optarg;
			break;
		case 1:
			opt.smt = true;
			break;
		case 2:
			opt.control = false;
			break;
		case 3:
			opt.use_perf = false;
			break;
		case 4:
			opt.additivity = atof(optarg);
			break;
		case 5:
			opt.min_speedup = atof(optarg);
			break;
		case 6:
			opt.max_spread = atof(optarg);
			break;
		case 7:
			opt.force = true;
			break;
		case 8:
			opt.membind = atoi(optarg);
			if (opt.membind < 0 || opt.membind >= NU_MAX_NODES)
				goto bad;
			break;
		case 'h':
			usage(argv[0]);
			exit(0);
		default:
			goto bad;
		}
	}
	if (opt.reps < 1 || opt.reps > MAX_REPS || opt.seconds <= 0 ||
	    opt.interval <= 0 || opt.interval > opt.seconds || opt.warmup < 0)
		goto bad;
	return;
bad:
	usage(argv[0]);
	exit(KSFT_FAIL);
}

/* Choose the nodes, the fill order of CPUs, W, and the sweep points. */
static void plan_sweep(void)
{
	int nodes[NU_MAX_NODES], nr = 0;

	if (opt.nr_user_nodes) {
		for (int i = 0; i < opt.nr_user_nodes; i++) {
			struct nu_node *nd = nu_node_by_id(&topo, opt.user_nodes[i]);

			if (!nd || !nd->has_cpu || !nd->has_memory || !nd->allowed ||
			    !nd->nr_cpus)
				ksft_exit_skip("node %d unusable: needs CPUs and allowed memory\n",
					       opt.user_nodes[i]);
			nodes[nr++] = nd - topo.node;
		}
	} else {
		for (int i = 0; i < topo.nr_eligible; i++)
			nodes[nr++] = topo.eligible[i];
	}
	if (!nr)
		ksft_exit_skip("no node has both CPUs and memory this task may use\n");
	if (opt.membind >= 0) {
		struct nu_node *nd = nu_node_by_id(&topo, opt.membind);

		if (!nd || !nd->has_memory || !nd->allowed)
			ksft_exit_fail_msg("--membind=%d: no memory on that node that we may use\n",
					   opt.membind);
	}

	width = MAX_WORKERS;
	for (int i = 0; i < nr; i++) {
		struct nu_node *nd = &topo.node[nodes[i]];
		int w = opt.smt ? nd->nr_cpus : nd->nr_cores;

		if (w < width)
			width = w;
	}
	/* Whole nodes of W CPUs each, in node order. */
	nr_nodes_used = nr;
	for (int i = 0; i < nr; i++)
		for (int j = 0; j < width && nr_order < MAX_WORKERS; j++) {
			cpu_node[nr_order] = topo.node[nodes[i]].id;
			cpu_order[nr_order++] = topo.node[nodes[i]].cpus[j];
		}

	if (opt.nr_user_points) {
		for (int i = 0; i < opt.nr_user_points; i++) {
			if (opt.user_points[i] < 1 || opt.user_points[i] > nr_order)
				ksft_exit_fail_msg("-t %d: between 1 and %d workers possible\n",
						   opt.user_points[i], nr_order);
			points[nr_points++] = opt.user_points[i];
		}
		return;
	}
	points[nr_points++] = 1;
	if (width > 8)
		points[nr_points++] = 8;
	if (width > 1)
		points[nr_points++] = width;
	for (int k = 2; k <= nr && nr_points < MAX_POINTS; k++)
		points[nr_points++] = k * width;
}

/* Region size: Σ regions ≤ half of each node's free memory and of memory.max. */
static void size_region(void)
{
	unsigned long want = opt.user_region ? opt.user_region : 128UL << 20;
	unsigned long cap = ~0UL;
	int max_workers = 0;
	char buf[512], path[600];

	for (int i = 0; i < nr_points; i++)
		if (points[i] > max_workers)
			max_workers = points[i];
	for (int i = 0; i < nr_order && i < max_workers; i++) {
		int node = opt.membind >= 0 ? opt.membind : cpu_node[i];
		long long kb = nu_node_memfree_kb(node);
		int per_node = 0;

		for (int j = 0; j < max_workers; j++)
			per_node += opt.membind >= 0 || cpu_node[j] == cpu_node[i];
		if (kb > 0 && (unsigned long)kb * 512 / per_node < cap)
			cap = (unsigned long)kb * 512 / per_node;
	}
	/* cgroup v2 limit of our own cgroup, if any */
	if (nu_read_str("/proc/self/cgroup", buf, sizeof(buf)) > 0 &&
	    !strncmp(buf, "0::", 3)) {
		long long max;

		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max", buf + 3);
		max = nu_read_ll(path);
		if (max > 0 && (unsigned long)max / 2 / max_workers < cap)
			cap = (unsigned long)max / 2 / max_workers;
	}
	if (want > cap)
		want = cap;
	want &= ~(PMD_SIZE_GUESS - 1);
	if (want < PMD_SIZE_GUESS)
		ksft_exit_skip("not enough free memory for a 2 MiB region per worker\n");
	if (opt.user_region && want != opt.user_region)
		ksft_print_msg("region shrunk from %lu to %lu MiB to fit free memory\n",
			       opt.user_region >> 20, want >> 20);
	opt.region = want;
}

static const char *thp_name(void)
{
	return opt.thp == THP_NOHUGE ? "nohuge" : opt.thp == THP_HUGE ? "huge" : "system";
}

static int point_nodes(int n)
{
	int seen[NU_MAX_NODES], k = 0;

	for (int i = 0; i < n; i++) {
		bool dup = false;

		for (int j = 0; j < k; j++)
			dup |= seen[j] == cpu_node[i];
		if (!dup)
			seen[k++] = cpu_node[i];
	}
	return k;
}

static int point_index(int n)
{
	for (int i = 0; i < nr_points; i++)
		if (points[i] == n)
			return i;
	return -1;
}

/* Median over repetitions of one field of a point. */
static double rep_median(int p, size_t off)
{
	double v[MAX_REPS];

	for (int r = 0; r < opt.reps; r++)
		v[r] = *(double *)((char *)&res[r][p] + off);
	return nu_median(v, opt.reps);
}

#define MED(p, field) rep_median(p, offsetof(struct result, field))

static double spread(int p)
{
	double v[MAX_REPS], med;

	for (int r = 0; r < opt.reps; r++)
		v[r] = res[r][p].ops_s;
	med = nu_median(v, opt.reps);
	return med > 0 ? (nu_max(v, opt.reps) - nu_min(v, opt.reps)) / med : 1;
}

/* Why performance bounds cannot be trusted here, or NULL. */
static const char *perf_gate;
static char gate_buf[160];

static const char *noisy(const int *idx, int n)
{
	for (int i = 0; i < n; i++) {
		double sp = spread(idx[i]);

		if (!opt.force && sp > opt.max_spread) {
			snprintf(gate_buf, sizeof(gate_buf),
				 "repetitions disagree at %d workers (spread %.2f > %.2f; --force to apply)",
				 points[idx[i]], sp, opt.max_spread);
			return gate_buf;
		}
	}
	return NULL;
}

static void report_env(double busy)
{
	struct utsname u;
	char thp[128] = "n/a", nb[16] = "n/a";

	uname(&u);
	nu_read_str("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp));
	nu_read_str("/proc/sys/kernel/numa_balancing", nb, sizeof(nb));
	ksft_print_msg(FMT_ENV, u.release, topo.nr_nodes, topo.nr_eligible, nr_nodes_used,
		       width, opt.threads ? "thread" : "process", thp_name(), thp,
		       nb, nu_in_vm() ? "yes" : "no", busy * 100, opt.region >> 20,
		       opt.reps, opt.membind);
}

/* will-it-scale runtest.py / LKP columns first, then ours. */
#define CSV_HEADER \
	"tasks,processes,processes_idle,threads,threads_idle,linear,nodes,node_width,speedup,efficiency,stime_ns_per_op,faults_per_op,local_frac,min_worker,median_worker,spread,control"

static void write_csv(void)
{
	FILE *f = fopen(opt.csv, "w");

	if (!f) {
		ksft_print_msg("cannot write %s: %s\n", opt.csv, strerror(errno));
		return;
	}
	fputs(CSV_HEADER "\n", f);
	for (int p = 0; p < nr_points; p++) {
		double t = MED(p, ops_s), t1 = MED(0, ops_s);
		double idle = MED(p, idle) * 100;
		int n = points[p];

		fprintf(f, FMT_CSV, n, opt.threads ? 0 : t, opt.threads ? 0 : idle,
			opt.threads ? t : 0, opt.threads ? idle : 0,
			points[0] == 1 ? t1 * n : 0, point_nodes(n), width,
			t1 > 0 ? t / t1 : 0, t1 > 0 ? t / t1 / n : 0,
			MED(p, stime_ns_op), MED(p, faults_op), MED(p, local),
			MED(p, worker_min), MED(p, worker_med), spread(p),
			MED(p, ctl_ops_s));
	}
	fclose(f);
	ksft_print_msg("wrote %s\n", opt.csv);
}

/*
 * Which bounds hold here: none that need long, quiet measurements in a
 * VM or on a busy machine, unless --force.
 */
static void set_perf_gate(double busy)
{
	if (nu_in_vm())
		perf_gate = "running in a virtual machine (--force to apply)";
	else if (busy > 0.10)
		perf_gate = "system not idle before the run (--force to apply)";
	if (opt.force)
		perf_gate = NULL;
	/*
	 * In a VM the bounds that need long measurements are not applied.
	 * Faults per touch and local allocation are ratios that a second
	 * measures as well; a worker starved in every repetition and a
	 * point without one operation in a whole second still fail.  The
	 * control loop only normalises A(k), which is not bounded here.
	 */
	if (nu_in_vm() && !opt.force && !opt.timed) {
		opt.warmup = 0.3;
		opt.seconds = opt.interval > 1 ? opt.interval : 1;
		opt.control = false;
	}
}

/* Interleaved repetitions: every point once per repetition. */
static void run_reps(void)
{
	for (int r = 0; r < opt.reps; r++) {
		for (int p = 0; p < nr_points; p++) {
			struct result *x = &res[r][p], ctl;
			int n = points[p];

			if (run_point(n, WORK_FAULT, x))
				ksft_exit_fail_msg("workers failed at %d workers\n", n);
			if (opt.control && !run_point(n, WORK_CONTROL, &ctl))
				x->ctl_ops_s = ctl.ops_s;
			ksft_print_msg(FMT_REP, r, n, point_nodes(n), x->ops_s, x->ops_s / n,
				       x->worker_min, x->stime_ns_op, x->faults_op,
				       x->perf ? "(perf)" : "(rusage)", x->local,
				       x->idle * 100, x->ctl_ops_s);
		}
	}
}

/* The medians of each point. */
static void print_points(int one, int wi)
{
	for (int p = 0; p < nr_points; p++) {
		double t = MED(p, ops_s);
		double t1 = one >= 0 ? MED(one, ops_s) : 0;
		double tw = wi >= 0 ? MED(wi, ops_s) : 0;
		int n = points[p], k = point_nodes(n);
		char a[32] = "-";

		if (n > width && n % width == 0 && tw > 0)
			snprintf(a, sizeof(a), "%.2f", t / (tw * (n / width)));
		ksft_print_msg(FMT_POINT, n, k, opt.threads ? "thread" : "process", thp_name(), t,
			       t / n, t1 > 0 ? t / t1 : 0, t1 > 0 ? t / t1 / n : 0, a,
			       MED(p, stime_ns_op), MED(p, faults_op), MED(p, local),
			       spread(p));
	}
}

/*
 * 1. faults_per_touch: the benchmark measures what it claims.  True if
 * each touch took one fault (the bounds that follow need that).
 */
static bool check_faults_per_touch(int one)
{
	double f;

	if (one < 0) {
		ksft_test_result_skip("faults_per_touch: no 1-worker point in -t\n");
		return false;
	}
	f = MED(one, faults_op);
	ksft_print_msg("faults per touch at 1 worker: %.3f\n", f);
	if (opt.thp != THP_NOHUGE) {
		ksft_test_result_skip("faults_per_touch: THP %s: %.3f, unchecked\n",
				      thp_name(), f);
		return false;
	}
	if (f > 1.5) {
		ksft_test_result_fail("faults_per_touch: %.3f per page, not 1\n", f);
		return false;
	}
	if (f < 0.9 || f > 1.1) {
		ksft_test_result_skip("faults_per_touch: %.3f: large folios\n", f);
		return false;
	}
	ksft_test_result_pass("faults_per_touch\n");
	return true;
}

/* 2. local_allocation: first touch allocates on the toucher's node. */
static void check_local_allocation(void)
{
	double worst = 2, worst_best = 2;
	int at = 0;
	char nb[16] = "0";

	nu_read_str("/proc/sys/kernel/numa_balancing", nb, sizeof(nb));
	for (int p = 0; p < nr_points; p++) {
		double v[MAX_REPS], m;

		for (int r = 0; r < opt.reps; r++)
			v[r] = res[r][p].local;
		m = nu_median(v, opt.reps);
		if (m < worst) {
			worst = m;
			worst_best = nu_max(v, opt.reps);
			at = points[p];
		}
	}
	if (worst < 0)
		ksft_test_result_skip("local_allocation: no per-node numastat\n");
	else if (worst >= 0.90)
		ksft_test_result_pass("local_allocation\n");
	else if (worst_best < 0.75)
		ksft_test_result_fail("local_allocation: %.3f local at %d workers\n",
				      worst, at);
	else
		ksft_test_result_skip("local_allocation: %.3f at %d, numa_balancing=%s\n",
				      worst, at, nb);
}

/* 3. intra_node_speedup: S(W) and no collapse past the knee. */
static void check_intra_node_speedup(int one, int wi)
{
	if (one < 0 || wi < 0 || width < 4) {
		ksft_test_result_skip("intra_node_speedup: node width %d < 4 or points missing\n",
				      width);
	} else {
		int idx[MAX_POINTS], ni = 0;
		bool bad_med, bad_best = true;
		double s = MED(wi, ops_s) / MED(one, ops_s), peak = 0;
		const char *why;

		for (int p = 0; p < nr_points; p++)
			if (points[p] <= width) {
				idx[ni++] = p;
				if (MED(p, ops_s) > peak)
					peak = MED(p, ops_s);
			}
		bad_med = s < opt.min_speedup || MED(wi, ops_s) < 0.8 * peak;
		for (int r = 0; r < opt.reps; r++) {
			double sr = res[r][wi].ops_s / res[r][one].ops_s;

			if (sr >= opt.min_speedup && res[r][wi].ops_s >= 0.8 * peak)
				bad_best = false;
		}
		ksft_print_msg("intra-node speedup S(%d)=%.2f (bound %.2f), T(W)/peak=%.2f\n",
			       width, s, opt.min_speedup, MED(wi, ops_s) / peak);
		why = perf_gate ? perf_gate : noisy(idx, ni);
		if (why)
			ksft_test_result_skip("intra_node_speedup: %s\n", why);
		else
			ksft_test_result(!(bad_med && bad_best), "intra_node_speedup\n");
	}
}

/* 4. node_additivity_k: adding a node adds a node's worth. */
static void check_node_additivity(int kmax, int wi)
{
	if (kmax < 2) {
		ksft_test_result_skip("node_additivity_2: fewer than two eligible nodes\n");
	} else {
		for (int k = 2; k <= kmax; k++) {
			int pk = point_index(k * width), idx[2] = { wi, pk };
			double a[MAX_REPS], am, best = 0;
			const char *why;

			if (pk < 0 || wi < 0) {
				ksft_test_result_skip("node_additivity_%d: no point %d\n",
						      k, k * width);
				continue;
			}
			for (int r = 0; r < opt.reps; r++) {
				double raw = res[r][pk].ops_s / (k * res[r][wi].ops_s);
				double ctl = res[r][wi].ctl_ops_s > 0 ?
					res[r][pk].ctl_ops_s / (k * res[r][wi].ctl_ops_s) : 0;

				a[r] = opt.control && ctl > 0 ? raw / ctl : raw;
				if (a[r] > best)
					best = a[r];
			}
			am = nu_median(a, opt.reps);
			ksft_print_msg("node additivity A(%d)=%.2f%s (bound %.2f)\n", k,
				       am, opt.control ? " control-normalised" : "",
				       opt.additivity);
			why = perf_gate ? perf_gate : noisy(idx, 2);
			if (why)
				ksft_test_result_skip("node_additivity_%d: %s\n", k, why);
			else
				ksft_test_result(!(am < opt.additivity && best < opt.additivity),
						 "node_additivity_%d\n", k);
		}
	}
}

/* 5. worker_fairness: no worker starves. */
static void check_worker_fairness(void)
{
	double worst = 2;
	bool starved = false;
	int at = 0, idx[MAX_POINTS], ni = 0;
	const char *why;

	for (int p = 0; p < nr_points; p++) {
		double v[MAX_REPS], m;
		bool all_low = true;

		if (points[p] < 2)
			continue;
		idx[ni++] = p;
		for (int r = 0; r < opt.reps; r++) {
			v[r] = res[r][p].worker_med > 0 ?
				res[r][p].worker_min / res[r][p].worker_med : 0;
			all_low &= v[r] < 0.1;
		}
		m = nu_median(v, opt.reps);
		starved |= all_low;
		if (m < worst) {
			worst = m;
			at = points[p];
		}
	}
	why = perf_gate ? perf_gate : noisy(idx, ni);
	if (!ni)
		ksft_test_result_skip("worker_fairness: no point with two workers\n");
	else if (why && !starved)
		ksft_test_result_skip("worker_fairness: min/med %.2f at %d; %s\n",
				      worst, at, why);
	else if (starved || worst < 0.25)
		ksft_test_result_fail("worker_fairness: slowest %.2f of median at %d\n",
				      worst, at);
	else
		ksft_test_result_pass("worker_fairness\n");
}

/*
 * 6. Kernel time per op is reported (no bound holds across machines);
 * the check is that every point made progress.
 */
static void check_progress(int one)
{
	int stalled = -1;
	double c1 = one >= 0 ? MED(one, stime_ns_op) : 0;

	for (int r = 0; r < opt.reps; r++)
		for (int p = 0; p < nr_points; p++)
			if (res[r][p].ops_s <= 0)
				stalled = points[p];
	for (int p = 0; p < nr_points; p++)
		ksft_print_msg(FMT_COST, points[p], MED(p, stime_ns_op),
			       c1 > 0 ? MED(p, stime_ns_op) / c1 : 0,
			       MED(p, ops_s) * MED(p, faults_op) /
			       point_nodes(points[p]));
	if (c1 <= 0)
		ksft_print_msg("cost: no system time was accounted\n");
	if (stalled >= 0)
		ksft_test_result_fail("every_point_progressed: none at %d workers\n",
				      stalled);
	else
		ksft_test_result_pass("every_point_progressed\n");
}

int main(int argc, char **argv)
{
	int one, wi, kmax;
	double busy;

	page_size = sysconf(_SC_PAGESIZE);
	parse_args(argc, argv);
	ksft_print_header();

	if (nu_topo_read(&topo))
		ksft_exit_skip("cannot read the NUMA topology from sysfs\n");
	plan_sweep();
	size_region();
	busy = nu_busy_fraction(500);
	set_perf_gate(busy);

	kmax = nr_nodes_used;
	ksft_set_plan(5 + (kmax >= 2 ? kmax - 1 : 1));
	report_env(busy);
	run_reps();

	one = point_index(1);
	wi = point_index(width);
	print_points(one, wi);
	if (!check_faults_per_touch(one) && !perf_gate && !opt.force)
		perf_gate = "faults per touch is not 1 (--force to apply)";
	check_local_allocation();
	check_intra_node_speedup(one, wi);
	check_node_additivity(kmax, wi);
	check_worker_fairness();
	check_progress(one);

	if (opt.csv)
		write_csv();
	ksft_finished();
}
