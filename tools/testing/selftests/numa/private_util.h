/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the private-node selftests: the node_private_test provider's
 * debugfs files, the node's caps, moving a range onto a node, and NUMA
 * balancing pulling it off again.
 */
#ifndef __SELFTESTS_NUMA_PRIVATE_UTIL_H
#define __SELFTESTS_NUMA_PRIVATE_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "../kselftest.h"

#define NPT		"/sys/kernel/debug/node_private_test/"
#define NODE_SYS	"/sys/devices/system/node/"
#define CAP_RECLAIM	0x1
#define CAP_USER_NUMA	0x2
#define CAP_HOTUNPLUG	0x4
#define CAP_DEMOTION	0x8
#define CAP_NUMA_BALANCING	0x10
#define CAP_LTPIN	0x20
#define POLICY_WRITE_FENCE	(1UL << 63)
#define PAGE		4096UL
#define MB		(1024UL * 1024)
#define BALANCING	"/proc/sys/kernel/numa_balancing"
#define SCAN_DELAY	"/sys/kernel/debug/sched/numa_balancing/scan_delay_ms"
#define SCAN_MIN	"/sys/kernel/debug/sched/numa_balancing/scan_period_min_ms"
#define NB_LEN		(1UL << 20)
/*
 * How long pages must stay on a node whose owner did not grant NUMA
 * balancing: until a read of every page that followed NB_OFF_PASSES full
 * scans of the task's address space (numa_scan_seq in /proc/self/sched).
 * With the cap, balancing_on()'s settings (scan delay 0, period 10 ms)
 * move them all within the first scan, 0.2-0.5 s in the TCG guest;
 * without it two scans took 0.6-9.5 s there (each scan's cost, 32 times
 * over, delays the next: task_numa_work()'s node_stamp).  NB_OFF_SECS
 * bounds the wait; a kernel that does not show the count gets a window
 * of NB_OFF_BLIND_SECS, ten times the capped case's.
 */
#define NB_OFF_PASSES	2
#define NB_OFF_SECS	60
#define NB_OFF_BLIND_SECS	10

/* Write a formatted line to a provider file: 0 or -errno. */
__printf(2, 3) int npt_write(const char *file, const char *fmt, ...);
int npt_read(const char *file, char *buf, size_t len);
/* Carved nodes from the provider's "ranges"; @free_only skips claimed. */
int carved_nodes(int *nids, int max, bool free_only);
/* @key ("MemFree:") of nodeN/meminfo in kB; -1 if missing. */
long long meminfo_kb(int nid, const char *key);
/* move_pages every page of [p, p+len) to @nid; status of the first page. */
int move_all(char *p, size_t len, int nid);

/*
 * NUMA balancing in @mode ("1": NUMA, "2": memory tiering), scanning a
 * new mm at once: NULL, or a SKIP reason.  The old settings go to @was;
 * the caller restores them with balancing_restore() once *@saved is set,
 * however the test ends.
 */
const char *balancing_on(char was[3][16], bool *saved, const char *mode);
void balancing_restore(char was[3][16]);
/* The first CPU of node 0 (where balanced pages should go); -1: none. */
int node0_cpu(void);
/* What balance_off() saw. */
struct nb_run {
	long placed;	/* pages move_pages(2) put on the node */
	long left;	/* of those, pages still there at the end */
	long passes;	/* full scans of the mm meanwhile; -1: not shown */
	double secs;	/* how long the pages were read */
	bool intact;	/* the data survived */
};

/*
 * In a new process (its mm is scanned at once), pinned to @cpu, with the
 * default policy: put NB_LEN of anon on @nid with move_pages(2), then
 * keep reading it until NUMA balancing moved every page off @nid, or
 * (@passes > 0) until a read that followed @passes full scans of the mm
 * (NB_OFF_BLIND_SECS if the kernel does not show them), for at most
 * @secs seconds.  Returns false if the process could not report.
 */
bool balance_off(int nid, int cpu, int passes, int secs, struct nb_run *run);

#endif /* __SELFTESTS_NUMA_PRIVATE_UTIL_H */
