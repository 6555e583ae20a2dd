/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the private-node selftests: the node_private_test provider's
 * debugfs files, the node's caps, and moving a range onto a node.
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

/* Write a formatted line to a provider file: 0 or -errno. */
__printf(2, 3) int npt_write(const char *file, const char *fmt, ...);
int npt_read(const char *file, char *buf, size_t len);
/* Carved nodes from the provider's "ranges"; @free_only skips claimed. */
int carved_nodes(int *nids, int max, bool free_only);
/* @key ("MemFree:") of nodeN/meminfo in kB; -1 if missing. */
long long meminfo_kb(int nid, const char *key);
/* move_pages every page of [p, p+len) to @nid; status of the first page. */
int move_all(char *p, size_t len, int nid);

#endif /* __SELFTESTS_NUMA_PRIVATE_UTIL_H */
