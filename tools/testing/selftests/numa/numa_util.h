/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the numa selftests: NUMA and CPU topology read from
 * sysfs, raw system call wrappers for the memory policy and migration
 * calls (no libnuma), per-node counters and small statistics.
 */
#ifndef __SELFTESTS_NUMA_UTIL_H
#define __SELFTESTS_NUMA_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>
#include <sys/types.h>

/*
 * kselftest_harness.h's SKIP() sets the test's exit code to KSFT_SKIP over
 * whatever it was, so a skip after a failed EXPECT would report the
 * failure as a skip.  The numa tests skip with NU_SKIP(), which ends the
 * test as failed instead when a check already failed.
 */
#define NU_SKIP(statement, fmt, ...) do {				\
	if (_metadata->exit_code == KSFT_FAIL)				\
		TH_LOG("a check failed before this skip");		\
	else								\
		SKIP((void)0, fmt, ##__VA_ARGS__);			\
	statement;							\
} while (0)

#define NU_MAX_NODES	64
#define NU_MAX_CPUS	1024

/* One NUMA node as the tests see it. */
struct nu_node {
	int id;			/* node number */
	bool has_cpu;		/* listed in node/has_cpu */
	bool has_memory;	/* listed in node/has_memory */
	bool allowed;		/* in this task's Mems_allowed */
	int nr_cpus;		/* usable CPUs: node cpulist ∩ affinity */
	int cpus[NU_MAX_CPUS];	/* those CPUs, one per core first */
	int nr_cores;		/* leading entries of cpus[] on distinct cores */
};

/* The machine: every possible node, and which are eligible for a test. */
struct nu_topo {
	int nr_nodes;			/* entries in node[] */
	struct nu_node node[NU_MAX_NODES];
	int nr_eligible;		/* nodes with CPUs, memory, allowed */
	int eligible[NU_MAX_NODES];	/* indices into node[] */
	int nr_mem_nodes;		/* nodes with memory, allowed */
};

int nu_topo_read(struct nu_topo *t);
struct nu_node *nu_node_by_id(struct nu_topo *t, int id);
int nu_parse_list(const char *s, int *out, int max);
/* Is @nid in /sys/devices/system/node/@file (has_memory, ...)? */
bool nu_in_nodelist(const char *file, int nid);

/* Raw system calls, named so they never clash with libnuma. */
long nu_mbind(void *addr, unsigned long len, int mode,
	      const unsigned long *nodemask, unsigned long maxnode,
	      unsigned int flags);
long nu_set_mempolicy(int mode, const unsigned long *nodemask,
		      unsigned long maxnode);
long nu_get_mempolicy(int *mode, unsigned long *nodemask,
		      unsigned long maxnode, void *addr, unsigned long flags);
long nu_move_pages(int pid, unsigned long count, void **pages,
		   const int *nodes, int *status, int flags);
/*
 * move_pages() to @nodes, with @status always saying where each page is:
 * when the kernel gives up on busy pages it returns how many and leaves
 * @status unwritten, so this asks again.  Returns what move_pages() did.
 */
long nu_move_pages_where(int pid, unsigned long count, void **pages,
			 const int *nodes, int *status, int flags);
/* How many pages of [p, p+len) sit on @nid; -1 if one is not present. */
long nu_pages_on(char *p, size_t len, int nid);
/* Fill [p, p+len) with a pattern of @seed; check it is still there. */
void nu_fill(char *p, size_t len, unsigned int seed);
bool nu_intact(const char *p, size_t len, unsigned int seed);
/* Private anonymous memory under an mbind(@mode, @nid) policy, filled. */
char *nu_anon_bound(size_t len, int mode, int nid, unsigned int seed);
long nu_migrate_pages(int pid, unsigned long maxnode,
		      const unsigned long *old_nodes,
		      const unsigned long *new_nodes);

/* Per-node allocation counters from nodeN/numastat. */
struct nu_numastat {
	uint64_t numa_hit;	/* allocations satisfied on the intended node */
	uint64_t numa_miss;	/* allocated here, intended elsewhere */
	uint64_t local_node;	/* allocated here by a CPU of this node */
	uint64_t other_node;	/* allocated here by a CPU of another node */
};

int nu_read_numastat(int node, struct nu_numastat *ns);
long long nu_node_memfree_kb(int node);

/* Small file helpers. */
int nu_read_str(const char *path, char *buf, size_t len);
long nu_read_all(const char *path, char *buf, size_t len);
long long nu_read_ll(const char *path);
int nu_write_str(const char *path, const char *val);
long long nu_vmstat(const char *name);
/*
 * At least @want free 2 MiB hugetlb pages on @node, growing its pool if
 * needed; the pool size before goes to @was (len @len) for
 * nu_huge_pool_restore(), which does nothing for an empty @was.
 */
bool nu_huge_pool(int node, long want, char *was, size_t len);
void nu_huge_pool_restore(int node, const char *was);
/* kB of this process's anonymous memory mapped by PMDs; -1 if unknown. */
long nu_anon_huge_kb(void);

/*
 * Fork @n children that each run @fn(@arg) -- e.g. read a buffer so that
 * its pages are mapped in their mm too -- report to the parent and wait
 * to be killed.  Returns how many reported; their pids are in @kids.
 */
int nu_fork_sharers(pid_t *kids, int n, void (*fn)(void *arg), void *arg);

/*
 * Trace events while @fn(@arg) runs, in a tracing instance of this
 * process's own.  Each @ev names an event ("tlb/tlb_flush") and a filter
 * ("" for none); count gets the lines of that event that contain @match
 * (NULL: every line).  Several entries may name one event with
 * different matches, and then the same filter.  Returns what @fn
 * returned in @ret, and 0; -1 when tracefs or an event is missing, or
 * entries of one event disagree on its filter.
 */
struct nu_event {
	const char *name;
	char filter[96];
	const char *match;
	long count;
};

int nu_trace_count(struct nu_event *ev, int n, long (*fn)(void *arg),
		   void *arg, long *ret);
/* Is @event ("tlb/tlb_flush") there to trace? */
bool nu_trace_has(const char *event);
/*
 * Does this x86 CPU flush remote TLBs by INVLPGB broadcast?  Then the
 * kernel sends no shootdown IPIs to count (Linux 6.15 and later).
 */
bool nu_cpu_invlpgb(void);

/*
 * What this task issues while @fn runs: remote TLB flush rounds
 * (tlb:tlb_flush with reason TLB_REMOTE_SEND_IPI, x86) and
 * migrate_pages_batch() calls of migrate reason @reason as trace prints
 * it ("syscall_or_cpuset"; mm_migrate_batch, CONFIG_MIGRATE_STAGES).
 */
struct nu_flush_count {
	long rounds;
	long batches;
	long ret;	/* what @fn returned */
};

int nu_count_flushes(const char *reason, long (*fn)(void *arg), void *arg,
		     struct nu_flush_count *c);

/* cgroup v2, mounted where scripts/vm mounts it. */
#define NU_CGROOT	"/sys/fs/cgroup"
int nu_cg_write(const char *cg, const char *file, long long v);
long long nu_cg_read(const char *cg, const char *file);
/*
 * Make the cgroup NU_CGROOT/@name.PID with the memory controller, its path
 * in @cg (len @len), and move this process in.  NULL, or why not (then @cg
 * is "" unless it was made and must still be removed).
 */
const char *nu_cg_enter(const char *name, char *cg, size_t len);
/* rmdir @cg, retrying while it is busy: 0 or -errno. */
int nu_cg_rmdir(const char *cg);
/* Best effort: back to the root cgroup, @cg removed ("" then). */
void nu_cg_remove(char *cg);

/* dax/kmem and memory blocks, through sysfs. */
#define NU_KMEM		"/sys/bus/dax/drivers/kmem/"
/* Write @state to every memory block of @nid not in it: first error. */
int nu_node_blocks_to(int nid, const char *state);
/* Is device-dax instance @dev bound to kmem? */
bool nu_dax_kmem_bound(const char *dev);
/* @op "bind" or "unbind" @dev to or from kmem: 0 or -errno. */
int nu_dax_kmem(const char *op, const char *dev);

/*
 * Swap space for reclaim tests: a new zram device where the kernel has
 * zram, else a loop device over a file (which can deadlock reclaim when
 * the file is on tmpfs and memory runs short: keep it small there).
 */
struct nu_swap {
	char file[64];		/* the backing file ("" for zram) */
	char dev[32];		/* the device swapped on */
};

/*
 * A free loop device over @fd, its path in @dev: the device's open fd
 * (detach with LOOP_CLR_FD), or -errno.
 */
int nu_loop_attach(int fd, char *dev, size_t len);
/* @mb MiB of swap (zram, else a file under @dir): 0, or -errno. */
int nu_swap_on(struct nu_swap *sw, const char *dir, int mb);
/*
 * The same on a loop file only: zram swaps in synchronously and skips
 * the swap cache, which a test of the swap cache needs.
 */
int nu_swap_on_file(struct nu_swap *sw, const char *dir, int mb);
/* Undo nu_swap_on(): swapoff, remove the device; first error or 0. */
int nu_swap_off(struct nu_swap *sw);
/* Pages of [@p, +@len) swapped out (pagemap bit 62); -1 on error. */
long nu_pages_swapped(const char *p, size_t len);
/* Is the per-node kernel thread @name@nid ("kswapd", 1) running? */
bool nu_kthread_runs(const char *name, int nid);

/* This process's KSM-merged pages (/proc/self/ksm_stat); -1: unknown. */
long long nu_ksm_merged(void);

/* Put the @n entries of @v in a random order drawn from @seed. */
void nu_shuffle(void **v, int n, unsigned int seed);

/* Pin the calling thread to @cpu; a negative @cpu leaves it free. */
void nu_pin_cpu(int cpu);
/* The first @n CPUs this task may run on; false if it has fewer. */
bool nu_pick_cpus(int *cpus, int n);
/* Load one byte of every 4 KiB page of [@buf, +@len). */
void nu_read_pages(const char *buf, unsigned long len);
/*
 * Fork a reader that keeps the pages of [@buf, +@len) mapped and its mm
 * live on @cpu: it reads them once, writes a byte to @ready, then reads
 * them over and over (@again) or spins, until killed.
 */
pid_t nu_fork_reader(const char *buf, unsigned long len, int cpu, int ready,
		     bool again);

/*
 * An undo list that outlives the test: the harness SIGKILLs a test that
 * runs past its timeout, with its process group, and no teardown runs.
 * nu_undo_begin() (or the first other call) waits up to 10 s for an
 * earlier test's shell to finish its undo, so that the knobs read next
 * are back, and spawns this test's, in a session of its own.  Each
 * further call saves what to put back (@path's value now, a mount point
 * to detach, a directory to remove): make it just before the change, so
 * that a test that skips leaves nothing to undo.  The shell puts each
 * back, last first, once every process holding the test's end of its
 * pipe has died; nu_undo_done(), from a teardown that has put
 * everything back itself, ends it without touching anything and waits
 * for it.  Every program also waits for an earlier shell at its start.
 * 0 or -1.
 */
int nu_undo_begin(void);
int nu_undo_knob(const char *path);
int nu_undo_umount(const char *path);
int nu_undo_rmdir(const char *path);
/*
 * nu_undo_knob() of a sysfs choice ("always [madvise] never"): saves the
 * chosen word, also into @was (@len bytes).
 */
int nu_undo_choice(const char *path, char *was, size_t len);
/* nu_undo_knob() of @node's 2 MiB nr_hugepages (nu_huge_pool()) */
int nu_undo_huge_pool(int node);
void nu_undo_done(void);

/* Environment. */
bool nu_in_vm(void);
int nu_read_cpu_times(unsigned long long *busy, unsigned long long *total);
double nu_busy_fraction(unsigned int ms);
/* TLB shootdown IPIs all CPUs took so far (x86 /proc/interrupts); -1: none. */
long long nu_tlb_shootdowns(void);
double nu_now(void);

/* Log2 histogram of durations in ns: bucket b holds [2^(b-1), 2^b). */
#define NU_HIST_BUCKETS	40
struct nu_hist {
	uint64_t count[NU_HIST_BUCKETS];	/* events per bucket */
	uint64_t n;				/* events */
	uint64_t max;				/* longest event, ns */
	double sum;				/* total ns */
};

void nu_hist_add(struct nu_hist *h, uint64_t ns);
void nu_hist_merge(struct nu_hist *to, const struct nu_hist *from);
uint64_t nu_hist_pct(const struct nu_hist *h, double pct);
uint64_t nu_now_ns(void);

/* Statistics over doubles; the array is sorted in place. */
double nu_median(double *v, int n);
double nu_min(const double *v, int n);
double nu_max(const double *v, int n);

#endif /* __SELFTESTS_NUMA_UTIL_H */
