// SPDX-License-Identifier: GPL-2.0
/*
 * rocm_stress - race read-only copy migration against everything that
 * may write, map, unmap or pin the folios it moves.
 *
 * A file (tmpfs by default, or in --dir, e.g. ext4 for page_mkwrite) is
 * mapped PROT_READ and shared; a migrator thread bounces every page of
 * that mapping, and of an anon buffer shared copy-on-write with a child
 * process, between two nodes with vm.migrate_rocm = 1.  Meanwhile:
 *
 *  - writer:    write(2) a new version into a page, then read it back
 *               through the read-only mapping and with pread();
 *  - mkwrite:   store a new version through a shared writable mapping
 *               (page_mkwrite on ext4; on tmpfs it makes the pages
 *               ineligible and exercises the undo), read it back;
 *  - mprotect:  a private mapping made writable, written (copy on
 *               write), made read-only again; the file must not change;
 *  - forker:    fork children that read the mapping and exit;
 *  - remapper:  mmap, touch and munmap a second read-only mapping;
 *  - dontneed:  MADV_DONTNEED over the read-only mapping;
 *  - truncator: truncate the file's tail and extend it again;
 *  - odirect:   O_DIRECT writes from the migrating pages into a scratch
 *               file and O_DIRECT reads back into the anon buffer, each
 *               checked byte for byte.
 *
 * Every read-back must equal what was last written; at the end the file,
 * the anon buffer and the child's copy of it are checked in full.  The
 * migrator starts once every racer runs, and migrate:mm_migrate_rocm,
 * filtered on its thread, must show that ROCM moved folios meanwhile.
 * Exit status: KSFT_PASS, KSFT_FAIL on any mismatch or too few ROCM
 * moves, KSFT_SKIP without ROCM or a second node.  -t sets the duration
 * (default 10 s) for a longer soak.  kernel.numa_balancing (off while
 * this runs) and vm.migrate_rocm are restored at exit and on SIGINT or
 * SIGTERM.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "../kselftest.h"
#include "numa_util.h"

#define SYSCTL		"/proc/sys/vm/migrate_rocm"
#define BALANCING	"/proc/sys/kernel/numa_balancing"
#define ROCM_EVENT	"migrate/mm_migrate_rocm"
#define NR_PAGES	64		/* file pages */
#define TAIL		48		/* pages from here are truncated */
#define NR_ANON		16		/* anon pages shared with the child */
#define WORD(i, v)	(((uint64_t)(i) << 40) | (uint64_t)(v))

static long page_size;
static int node_a = -1, node_b = -1;
static int fd, fd_direct, scratch;
static char *ro, *anon;
static char *dir = "/tmp";
static double seconds = 10;
static int stop;
static uint64_t errors, migrations, iterations[8];
static uint64_t version[NR_PAGES];	/* last version written per page */
static pthread_mutex_t vlock = PTHREAD_MUTEX_INITIALIZER;

#define FAILF(...) do {							\
	__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);		\
	ksft_print_msg(__VA_ARGS__);					\
} while (0)

static bool running(void)
{
	return !__atomic_load_n(&stop, __ATOMIC_RELAXED);
}

static uint64_t load(const void *p)
{
	return __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
}

/* The first word of file page @i should read @want everywhere. */
static void check_page(const char *who, int i, uint64_t want)
{
	uint64_t got = load(ro + (size_t)i * page_size), via_read = 0;

	if (got != want)
		FAILF("%s: page %d maps %#llx, last written %#llx\n", who, i,
		      (unsigned long long)got, (unsigned long long)want);
	if (pread(fd, &via_read, sizeof(via_read), (off_t)i * page_size) !=
	    sizeof(via_read) || via_read != want)
		FAILF("%s: page %d reads %#llx, last written %#llx\n", who, i,
		      (unsigned long long)via_read, (unsigned long long)want);
}

/* write(2) into pages 0..15. */
static void *writer_fn(void *arg)
{
	for (unsigned int n = 0; running(); n++) {
		int i = n % 16;
		uint64_t w;

		pthread_mutex_lock(&vlock);
		w = WORD(i, ++version[i]);
		if (pwrite(fd, &w, sizeof(w), (off_t)i * page_size) != sizeof(w))
			FAILF("writer: pwrite: %s\n", strerror(errno));
		check_page("writer", i, w);
		pthread_mutex_unlock(&vlock);
		iterations[0]++;
	}
	return NULL;
}

/* Stores through a shared writable mapping into pages 16..23. */
static void *mkwriter_fn(void *arg)
{
	char *rw = mmap(NULL, NR_PAGES * page_size, PROT_READ | PROT_WRITE,
			MAP_SHARED, fd, 0);

	if (rw == MAP_FAILED) {
		FAILF("mkwrite: mmap: %s\n", strerror(errno));
		return NULL;
	}
	for (unsigned int n = 0; running(); n++) {
		int i = 16 + n % 8;
		uint64_t w;

		pthread_mutex_lock(&vlock);
		w = WORD(i, ++version[i]);
		__atomic_store_n((uint64_t *)(rw + (size_t)i * page_size), w,
				 __ATOMIC_RELAXED);
		check_page("mkwrite", i, w);
		pthread_mutex_unlock(&vlock);
		if (!(n % 64))
			msync(rw, NR_PAGES * page_size, MS_SYNC);
		iterations[1]++;
	}
	munmap(rw, NR_PAGES * page_size);
	return NULL;
}

/* Private writable mapping: writes copy, the file stays as it was. */
static void *mprotecter_fn(void *arg)
{
	char *pv = mmap(NULL, NR_PAGES * page_size, PROT_READ, MAP_PRIVATE, fd, 0);

	if (pv == MAP_FAILED) {
		FAILF("mprotect: mmap: %s\n", strerror(errno));
		return NULL;
	}
	for (unsigned int n = 0; running(); n++) {
		int i = 24 + n % 8;	/* nobody writes these pages */

		load(pv + (size_t)i * page_size);
		if (mprotect(pv, NR_PAGES * page_size, PROT_READ | PROT_WRITE))
			FAILF("mprotect: %s\n", strerror(errno));
		__atomic_store_n((uint64_t *)(pv + (size_t)i * page_size), ~0ULL,
				 __ATOMIC_RELAXED);
		mprotect(pv, NR_PAGES * page_size, PROT_READ);
		check_page("mprotect", i, WORD(i, 0));
		if (!(n % 16)) {
			/* drop the private copies: next time it reads the file */
			munmap(pv, NR_PAGES * page_size);
			pv = mmap(NULL, NR_PAGES * page_size, PROT_READ, MAP_PRIVATE,
				  fd, 0);
			if (pv == MAP_FAILED) {
				FAILF("mprotect: remap: %s\n", strerror(errno));
				return NULL;
			}
		}
		iterations[2]++;
	}
	munmap(pv, NR_PAGES * page_size);
	return NULL;
}

/* Children that inherit the mappings, read the stable pages and exit. */
static void *forker_fn(void *arg)
{
	while (running()) {
		pid_t pid = fork();
		int st;

		if (!pid) {
			for (int i = 24; i < TAIL; i++)
				if (load(ro + (size_t)i * page_size) != WORD(i, 0))
					_exit(1);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			FAILF("forker: child saw a wrong page or failed\n");
		iterations[3]++;
	}
	return NULL;
}

/* A second read-only mapping that comes and goes. */
static void *remapper_fn(void *arg)
{
	while (running()) {
		char *p = mmap(NULL, TAIL * page_size, PROT_READ, MAP_SHARED, fd, 0);

		if (p == MAP_FAILED) {
			FAILF("remapper: mmap: %s\n", strerror(errno));
			return NULL;
		}
		for (int i = 24; i < TAIL; i++)
			if (load(p + (size_t)i * page_size) != WORD(i, 0))
				FAILF("remapper: page %d wrong\n", i);
		munmap(p, TAIL * page_size);
		iterations[4]++;
	}
	return NULL;
}

/* Zap the read-only mapping's PTEs, and truncate/extend the tail. */
static void *zapper_fn(void *arg)
{
	for (unsigned int n = 0; running(); n++) {
		madvise(ro, TAIL * page_size, MADV_DONTNEED);
		if (n % 4 == 0) {
			if (ftruncate(fd, (off_t)TAIL * page_size) ||
			    ftruncate(fd, (off_t)NR_PAGES * page_size))
				FAILF("truncate: %s\n", strerror(errno));
			for (int i = TAIL; i < NR_PAGES; i++) {
				uint64_t w = WORD(i, 0);

				if (pwrite(fd, &w, sizeof(w), (off_t)i * page_size) != sizeof(w))
					FAILF("truncate: pwrite: %s\n", strerror(errno));
			}
		}
		usleep(1000);
		iterations[5]++;
	}
	return NULL;
}

/*
 * O_DIRECT out of the migrating file pages into the scratch file, and
 * from the scratch file into the anon buffer shared with the child.
 */
static void *odirect_fn(void *arg)
{
	char *bounce = NULL;

	if (posix_memalign((void **)&bounce, page_size, page_size))
		return NULL;
	for (unsigned int n = 0; running(); n++) {
		int i = 24 + n % 8, j = n % NR_ANON;
		uint64_t want = WORD(i, 0);

		/* out of a migrating page (its own pin races the switch) */
		if (pwrite(fd_direct, ro + (size_t)i * page_size, page_size, 0) !=
		    page_size) {
			FAILF("odirect: write: %s\n", strerror(errno));
			break;
		}
		if (pread(fd_direct, bounce, page_size, 0) != page_size ||
		    load(bounce) != want)
			FAILF("odirect: page %d went out as %#llx\n", i,
			      (unsigned long long)load(bounce));
		/* into a COW-shared migrating anon page */
		if (pread(fd_direct, anon + (size_t)j * page_size, page_size, 0) !=
		    page_size || load(anon + (size_t)j * page_size) != want)
			FAILF("odirect: anon page %d read back %#llx\n", j,
			      (unsigned long long)load(anon + (size_t)j * page_size));
		iterations[6]++;
	}
	free(bounce);
	return NULL;
}

static long move_all(char *base, int pages, int node)
{
	void *addrs[NR_PAGES];
	int nodes[NR_PAGES], status[NR_PAGES];

	for (int i = 0; i < pages; i++) {
		addrs[i] = base + (size_t)i * page_size;
		nodes[i] = node;
	}
	return nu_move_pages(0, pages, addrs, nodes, status, MPOL_MF_MOVE_ALL);
}

static int open_scratch(const char *d, char *path, size_t len)
{
	int f;

	snprintf(path, len, "%s/rocm_stress.XXXXXX", d);
	f = mkstemp(path);
	if (f >= 0)
		unlink(path);
	return f;
}

/* The racers, in the order of iterations[]. */
static void *(*const racers[])(void *) = {
	writer_fn, mkwriter_fn, mprotecter_fn, forker_fn, remapper_fn,
	zapper_fn, odirect_fn,
};

#define NR_RACERS	ARRAY_SIZE(racers)

static bool racer_on(size_t k)
{
	return racers[k] != odirect_fn || fd_direct >= 0;
}

/* Has every racer been round its loop once? */
static bool racers_running(void)
{
	for (size_t k = 0; k < NR_RACERS; k++)
		if (racer_on(k) && !__atomic_load_n(&iterations[k], __ATOMIC_RELAXED))
			return false;
	return true;
}

/* Bounce every page between the nodes for the test's duration. */
static long migrate_fn(void *arg)
{
	double end = nu_now() + seconds;

	for (int n = 0; nu_now() < end; n++) {
		int node = n & 1 ? node_a : node_b;

		/* errors are fine: pages come and go under the zapper */
		move_all(ro, NR_PAGES, node);
		move_all(anon, NR_ANON, node);
		migrations++;
	}
	return 0;
}

/*
 * This thread's ROCM attempts while it migrates: "ok" and all of them,
 * -1 without tracefs or the event.  Filtered on this thread, so that
 * kcompactd or another test moving folios meanwhile counts for nothing.
 */
static long rocm_ok = -1, rocm_tried = -1;

static void traced_migrate(void)
{
	struct nu_event ev[2] = {
		{ .name = ROCM_EVENT, .match = " ok" },
		{ .name = ROCM_EVENT },
	};
	long ret;

	for (int i = 0; i < 2; i++)
		snprintf(ev[i].filter, sizeof(ev[i].filter), "common_pid == %d",
			 gettid());
	if (nu_trace_has(ROCM_EVENT) &&
	    !nu_trace_count(ev, 2, migrate_fn, NULL, &ret)) {
		rocm_ok = ev[0].count;
		rocm_tried = ev[1].count;
	} else if (!migrations) {
		/* the trace did not start: the races still run, untraced */
		migrate_fn(NULL);
	}
}

/*
 * Start the racers and, once each has run, migrate in this thread: what
 * ROCM moves is then moved under the races, not before they began.
 */
static void race(void)
{
	pthread_t tids[NR_RACERS];

	for (size_t k = 0; k < NR_RACERS; k++)
		if (racer_on(k))
			pthread_create(&tids[k], NULL, racers[k], NULL);
	/* a second at most: a racer that failed has counted an error */
	for (int ms = 0; ms < 1000 && !racers_running(); ms++)
		usleep(1000);
	traced_migrate();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (size_t k = 0; k < NR_RACERS; k++)
		if (racer_on(k))
			pthread_join(tids[k], NULL);
}

/* Settings this test changes, restored at exit and on SIGINT/SIGTERM. */
static char nb_was[16], rocm_was[16];

static void restore_settings(void)
{
	if (nb_was[0])
		nu_write_str(BALANCING, nb_was);
	if (rocm_was[0])
		nu_write_str(SYSCTL, rocm_was);
}

/* nu_write_str() is open(), write() and close(): fine in a handler */
static void restore_and_die(int sig)
{
	restore_settings();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* No NUMA balancing moving pages behind the migrator's back; ROCM on. */
static void change_settings(void)
{
	atexit(restore_settings);
	signal(SIGINT, restore_and_die);
	signal(SIGTERM, restore_and_die);
	nu_read_str(BALANCING, nb_was, sizeof(nb_was));
	nu_read_str(SYSCTL, rocm_was, sizeof(rocm_was));
	nu_write_str(BALANCING, "0");
	nu_write_str(SYSCTL, "1");
}

/*
 * A stress that never took the fast path would prove nothing.  The file's
 * pages are mostly ineligible (tmpfs: mkwrite maps them writable; ext4:
 * buffer heads), so ROCM moves mostly the anon pages that each fork
 * shares again: as many moves as the anon buffer has pages, all made
 * while the racers run, is more than a stray success.
 */
#define MIN_ROCM_MOVES	NR_ANON

static void report_moved(void)
{
	if (rocm_ok < 0)
		ksft_test_result_skip("ROCM moved folios under the races: cannot trace %s\n",
				      ROCM_EVENT);
	else
		ksft_test_result(rocm_ok >= MIN_ROCM_MOVES,
				 "ROCM moved folios under the races (%ld, want %d)\n",
				 rocm_ok, MIN_ROCM_MOVES);
}

int main(int argc, char **argv)
{
	long long s0, s1, f0, f1;
	char path[512];
	int ready[2], done[2], c, child_rc = 0;
	struct nu_topo t;
	pid_t child;
	char ch;

	page_size = sysconf(_SC_PAGESIZE);
	while ((c = getopt(argc, argv, "t:d:")) != -1) {
		if (c == 't') {
			seconds = atof(optarg);
		} else if (c == 'd') {
			dir = optarg;
		} else {
			fprintf(stderr, "usage: %s [-t seconds] [-d dir]\n", argv[0]);
			return KSFT_FAIL;
		}
	}
	ksft_print_header();
	ksft_set_plan(2);
	if (geteuid())
		ksft_exit_skip("needs root\n");
	if (access(SYSCTL, W_OK))
		ksft_exit_skip("no %s: kernel without CONFIG_MIGRATE_ROCM\n", SYSCTL);
	if (nu_topo_read(&t) || !t.nr_eligible)
		ksft_exit_skip("no NUMA topology\n");
	node_a = t.node[t.eligible[0]].id;
	for (int i = 0; i < t.nr_nodes; i++)
		if (t.node[i].id != node_a && t.node[i].has_memory && t.node[i].allowed)
			node_b = t.node[i].id;
	if (node_b < 0)
		ksft_exit_skip("needs two memory nodes\n");

	fd = open_scratch(dir, path, sizeof(path));
	scratch = open_scratch(dir, path, sizeof(path));
	if (fd < 0 || scratch < 0)
		ksft_exit_skip("cannot create files in %s: %s\n", dir, strerror(errno));
	for (int i = 0; i < NR_PAGES; i++) {
		uint64_t w = WORD(i, 0);

		if (pwrite(fd, &w, sizeof(w), (off_t)i * page_size) != sizeof(w))
			ksft_exit_fail_msg("pwrite: %s\n", strerror(errno));
	}
	if (ftruncate(fd, (off_t)NR_PAGES * page_size) ||
	    ftruncate(scratch, page_size) || fsync(fd))
		ksft_exit_fail_msg("ftruncate/fsync: %s\n", strerror(errno));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", scratch);
	fd_direct = open(path, O_RDWR | O_DIRECT);
	if (fd_direct < 0)
		ksft_print_msg("no O_DIRECT in %s (%s): odirect thread off\n", dir,
			       strerror(errno));
	ro = mmap(NULL, NR_PAGES * page_size, PROT_READ, MAP_SHARED, fd, 0);
	anon = mmap(NULL, NR_ANON * page_size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED || anon == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	madvise(anon, NR_ANON * page_size, MADV_NOHUGEPAGE);
	for (int j = 0; j < NR_ANON; j++)
		*(uint64_t *)(anon + (size_t)j * page_size) = WORD(1000 + j, 0);

	/* the child shares the anon pages copy-on-write, then checks them */
	if (pipe(ready) || pipe(done))
		ksft_exit_fail_msg("pipe\n");
	child = fork();
	if (!child) {
		for (int j = 0; j < NR_ANON; j++)
			load(anon + (size_t)j * page_size);
		if (write(ready[1], "r", 1) != 1)
			_exit(2);
		close(ready[1]);
		/* wait for the parent to finish, then check our copy */
		if (read(done[0], &ch, 1) < 0)
			_exit(2);
		for (int j = 0; j < NR_ANON; j++)
			if (load(anon + (size_t)j * page_size) != WORD(1000 + j, 0))
				_exit(1);
		_exit(0);
	}
	if (read(ready[0], &ch, 1) != 1)
		ksft_exit_fail_msg("child did not start\n");

	change_settings();
	s0 = nu_vmstat("migrate_rocm_success");
	f0 = nu_vmstat("migrate_rocm_fallback");
	race();
	s1 = nu_vmstat("migrate_rocm_success");
	f1 = nu_vmstat("migrate_rocm_fallback");

	/* final state: the file has every last version, the child its copy */
	for (int i = 0; i < NR_PAGES; i++)
		check_page("final", i, WORD(i, i < 24 ? version[i] : 0));
	if (write(done[1], "d", 1) != 1 || waitpid(child, &child_rc, 0) != child ||
	    !WIFEXITED(child_rc) || WEXITSTATUS(child_rc))
		FAILF("child: its copy of the anon pages changed (status %#x)\n", child_rc);

	ksft_print_msg("%.0f s: %llu migration rounds, ROCM moved %ld of %ld tries\n",
		       seconds, (unsigned long long)migrations, rocm_ok, rocm_tried);
	ksft_print_msg("vmstat (all tasks): rocm success %lld fallback %lld\n",
		       s1 - s0, f1 - f0);
	ksft_print_msg("iterations: write %llu mkwrite %llu mprotect %llu fork %llu\n",
		       (unsigned long long)iterations[0], (unsigned long long)iterations[1],
		       (unsigned long long)iterations[2], (unsigned long long)iterations[3]);
	ksft_print_msg("iterations: remap %llu zap %llu odirect %llu\n",
		       (unsigned long long)iterations[4], (unsigned long long)iterations[5],
		       (unsigned long long)iterations[6]);
	ksft_test_result(!errors, "no corrupted or lost bytes (%llu errors)\n",
			 (unsigned long long)errors);
	report_moved();
	ksft_finished();
}
