// SPDX-License-Identifier: GPL-2.0
/* Helpers of the private-node selftests: see private_util.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/mempolicy.h>

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
