// SPDX-License-Identifier: GPL-2.0
/*
 * numa_hold MIB: map MIB MiB of anonymous memory in small pages, touch
 * every page, print "ready PAGES" and wait for a signal.  The memory is
 * placed by whatever policy the caller set (numactl --membind=N); it is
 * what field_tools.sh moves with migratepages and reads back through
 * numastat, numa_maps, perf and trace-cmd.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 0;
	long psz = sysconf(_SC_PAGESIZE);
	size_t len;
	char *p;

	if (mib <= 0 || mib > 4096) {
		fprintf(stderr, "usage: %s MIB (1..4096)\n", argv[0]);
		return 2;
	}
	len = (size_t)mib << 20;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	/* One folio per page, so that folios and pages count the same. */
	madvise(p, len, MADV_NOHUGEPAGE);
	memset(p, 0x5a, len);
	printf("ready %zu\n", len / psz);
	fflush(stdout);
	pause();
	return 0;
}
