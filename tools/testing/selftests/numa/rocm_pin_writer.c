// SPDX-License-Identifier: GPL-2.0
/*
 * rocm_pin_writer: ROCM and writers that need no PTE.
 *
 * memfd_pin_folios() (udmabuf) pins shmem folios straight from the page
 * cache; the buffer's owner writes them through its own mapping (here
 * an mmap() of the dma-buf) with neither the folio lock nor a PTE of
 * the file.  ROCM copies a folio while it is still mapped read-only and
 * moves the page-cache entry later, under a frozen reference count.
 *
 * sealed_memfd_refused: a memfd sealed as udmabuf wants it
 * (F_SEAL_SHRINK, writes not sealed) is left to the classic path
 * (reason "pin_sealed").
 *
 * write_through_pin_survives: the seal comes after ROCM's checks, and a
 * udmabuf pins, writes and lets go between ROCM's copy and its freeze
 * (migrate_rocm/copy_delay_us holds that window open; the pages are
 * locked for the migration, /proc/kpageflags, before the write).  The
 * kernel compares source and copy under the freeze and undoes ROCM
 * (reason "written"): pread(2) must return the new values.  A control
 * run first, with migrate_rocm/skip_compare set, must lose the write:
 * it shows that the write lands in the window.
 * future_write_seal_after_pin adds F_SEAL_FUTURE_WRITE while the pin is
 * held (udmabuf writes on); write_through_pin_survives_run moves the
 * pages as one ROCM run (vm.migrate_range_unmap), where every page is in
 * the window and every one must be undone.
 *
 * held_copy_stays_charged: a udmabuf pin held across the freeze makes
 * ROCM undo (reason "race"), while a pipe holds the copy (vmsplice(2)
 * through the switched PTE, in the switch_delay_us window).  That copy
 * must not be reused or recycled ("dst_held") and must stay charged to
 * the source's memcg while the pipe holds it (/proc/kpagecgroup).
 *
 * A timed attempt that misses its window is tried again, three times at
 * most, then the test skips saying so.  Needs root, two nodes with
 * memory, CONFIG_UDMABUF, CONFIG_MIGRATE_ROCM and
 * CONFIG_MIGRATE_ROCM_DEBUG; SKIPs otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/kernel-page-flags.h>
#include <linux/mempolicy.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "../kselftest_harness.h"
#include "numa_util.h"

#define NR		2
#define PAGE		4096UL
#define ROCM_EVENT	"migrate/mm_migrate_rocm"
#define ROCM_SYSCTL	"/proc/sys/vm/migrate_rocm"
#define KNOBS		"/sys/kernel/debug/migrate_rocm/"
#define DELAY_US	"1000000"
#define WRITE_AFTER_US	100000
#define WAIT_S		10
#define TRIES		3
#define PFN_MASK	((1ULL << 55) - 1)
#define VAL(n, i)	(0x7077000000000000ULL | (uint64_t)(n) << 32 | (i))

/* The knobs a test changes, restored by the teardown. */
enum { K_ROCM, K_COPY, K_SWITCH, K_SKIP, K_RANGE, NR_KNOBS };
static const char * const knob_path[NR_KNOBS] = {
	ROCM_SYSCTL, KNOBS "copy_delay_us", KNOBS "switch_delay_us",
	KNOBS "skip_compare", "/proc/sys/vm/migrate_range_unmap",
};

FIXTURE(pw) {
	int node[2];
	char was[NR_KNOBS][16];
};

FIXTURE_SETUP(pw)
{
	struct nu_topo topo;

	memset(self->was, 0, sizeof(self->was));
	if (geteuid())
		NU_SKIP(return, "needs root (sysctl, debugfs, /proc/kpageflags)");
	if (nu_topo_read(&topo) || topo.nr_eligible < 2)
		NU_SKIP(return, "needs two nodes with memory");
	if (access("/dev/udmabuf", R_OK | W_OK))
		NU_SKIP(return, "no /dev/udmabuf (CONFIG_UDMABUF)");
	if (access(ROCM_SYSCTL, W_OK))
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_ROCM)", ROCM_SYSCTL);
	if (access(knob_path[K_SKIP], W_OK))
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_ROCM_DEBUG)",
			knob_path[K_SKIP]);
	for (int k = 0; k < K_RANGE; k++)
		ASSERT_LT(0, nu_read_str(knob_path[k], self->was[k],
					 sizeof(self->was[k])));
	/* CONFIG_MIGRATE_RANGE: only the run variant needs it */
	if (nu_read_str(knob_path[K_RANGE], self->was[K_RANGE],
			sizeof(self->was[K_RANGE])) <= 0)
		self->was[K_RANGE][0] = '\0';
	self->node[0] = topo.node[topo.eligible[0]].id;
	self->node[1] = topo.node[topo.eligible[1]].id;
	ASSERT_EQ(0, nu_write_str(ROCM_SYSCTL, "1"));
}

FIXTURE_TEARDOWN(pw)
{
	for (int k = 0; k < NR_KNOBS; k++)
		if (self->was[k][0])
			nu_write_str(knob_path[k], self->was[k]);
}

/* A memfd of NR pages, VAL(0, i) in each, mapped read-only and private. */
struct file {
	int fd;
	char *map;
};

/* Move @nr pages from @map to node @nid: how many are there, or -errno. */
static int move_to(char *map, int nr, int nid, long *status_out)
{
	int nodes[NR] = { 0 }, status[NR] = { 0 }, n = 0;
	void *addr[NR] = { NULL };

	for (int i = 0; i < nr; i++) {
		addr[i] = map + i * PAGE;
		nodes[i] = nid;
	}
	if (nu_move_pages_where(0, nr, addr, nodes, status, MPOL_MF_MOVE) < 0)
		return -errno;
	for (int i = 0; i < nr; i++) {
		n += status[i] == nid;
		if (status_out)
			status_out[i] = status[i];
	}
	return n;
}

/* @f, its pages on node @nid, sealed for udmabuf if @sealed; -1 if not. */
static int file_open(struct file *f, int nid, bool sealed)
{
	f->map = MAP_FAILED;
	f->fd = memfd_create("rocm_pin_writer", MFD_ALLOW_SEALING);
	if (f->fd < 0 || ftruncate(f->fd, NR * PAGE))
		return -1;
	for (int i = 0; i < NR; i++) {
		uint64_t v = VAL(0, i);

		if (pwrite(f->fd, &v, sizeof(v), i * PAGE) != sizeof(v))
			return -1;
	}
	if (sealed && fcntl(f->fd, F_ADD_SEALS, F_SEAL_SHRINK))
		return -1;
	f->map = mmap(NULL, NR * PAGE, PROT_READ, MAP_PRIVATE, f->fd, 0);
	if (f->map == MAP_FAILED)
		return -1;
	nu_read_pages(f->map, NR * PAGE);
	return move_to(f->map, NR, nid, NULL) == NR ? 0 : -1;
}

static void file_close(struct file *f)
{
	if (f->map != MAP_FAILED)
		munmap(f->map, NR * PAGE);
	if (f->fd >= 0)
		close(f->fd);
}

/* The PFN mapped at @p, 0 if none (not present) or unknown. */
static uint64_t pfn_of(const char *p)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e = 0;

	if (fd < 0 || pread(fd, &e, sizeof(e),
			    (uintptr_t)p / PAGE * sizeof(e)) != sizeof(e))
		e = 0;
	if (fd >= 0)
		close(fd);
	return e >> 63 ? e & PFN_MASK : 0;	/* bit 63: present */
}

/* The 64-bit word of /proc/@file (kpageflags, kpagecgroup) for @pfn. */
static int kpage_read(const char *file, uint64_t pfn, uint64_t *v)
{
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/%s", file);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ok = pread(fd, v, sizeof(*v), pfn * sizeof(*v)) == sizeof(*v);
	close(fd);
	return ok ? 0 : -1;
}

/* "pfn == A || pfn == B ...": the mm_migrate_rocm lines of @map's pages. */
static void pfn_filter(const char *map, int nr, char *buf, size_t len)
{
	size_t at = 0;

	for (int i = 0; i < nr; i++)
		at += snprintf(buf + at, len - at, "%spfn == %llu", i ? " || " : "",
			       (unsigned long long)pfn_of(map + i * PAGE));
}

/* Wait, WAIT_S at most, until the @nr pages from @map are all locked. */
static bool wait_locked(const char *map, int nr)
{
	double until = nu_now() + WAIT_S;

	while (nu_now() < until) {
		int n = 0;

		for (int i = 0; i < nr; i++) {
			uint64_t pfn = pfn_of(map + i * PAGE), f = 0;

			if (pfn && !kpage_read("kpageflags", pfn, &f))
				n += !!(f & (1ULL << KPF_LOCKED));
		}
		if (n == nr)
			return true;
		usleep(1000);
	}
	return false;
}

/* Wait, WAIT_S at most, until @p maps a PFN other than @pfn; 0 if never. */
static uint64_t wait_switched(const char *p, uint64_t pfn)
{
	double until = nu_now() + WAIT_S;

	while (nu_now() < until) {
		uint64_t now = pfn_of(p);

		if (now && now != pfn)
			return now;
		usleep(1000);
	}
	return 0;
}

/* Seal @fd as udmabuf wants and make a udmabuf of its NR pages; -1 if not. */
static int udmabuf_open(int fd)
{
	struct udmabuf_create c = {
		.memfd = fd, .flags = UDMABUF_FLAGS_CLOEXEC,
		.offset = 0, .size = NR * PAGE,
	};
	int dev, buf;

	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK))
		return -1;
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -1;
	buf = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	return buf;
}

/*
 * Pin @fd's pages through a udmabuf, store VAL(@n, i), let go; with
 * @future, seal F_SEAL_FUTURE_WRITE before letting go (the pin writes
 * on regardless).
 */
static const char *udmabuf_write(int fd, int n, bool future)
{
	int buf = udmabuf_open(fd);
	const char *err = NULL;
	char *p;

	if (buf < 0)
		return "F_ADD_SEALS or UDMABUF_CREATE (node memory in ZONE_MOVABLE?)";
	p = mmap(NULL, NR * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	if (p == MAP_FAILED) {
		err = "mmap of the dma-buf";
	} else {
		for (int i = 0; i < NR; i++)
			*(uint64_t *)(p + i * PAGE) = VAL(n, i);
		munmap(p, NR * PAGE);
	}
	if (future && fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE))
		err = "F_ADD_SEALS(F_SEAL_FUTURE_WRITE)";
	close(buf);	/* the last reference: the pins go */
	return err;
}

/* One move of the first @nr pages of @f to @to, by a thread. */
struct attempt {
	struct file *f;
	int nr, to, n;
	bool future;		/* F_SEAL_FUTURE_WRITE before the unpin */
	long status[NR];
	const char *err;	/* what went wrong in the test, or NULL */
	int pipe[2], buf;	/* held_copy_stays_charged */
	uint64_t src_pfn, dst_pfn;
};

static void *mover(void *arg)
{
	struct attempt *a = arg;
	int rc = move_to(a->f->map, a->nr, a->to, a->status);

	if (rc < 0)
		a->status[0] = rc;
	return NULL;
}

/*
 * nu_trace_count()'s @fn: the move, and in its copy window the udmabuf
 * write of VAL(a->n, i).  1 if the write was made; 0 if the pages were
 * never seen locked for the migration (a miss).
 */
static long run_write(void *arg)
{
	struct attempt *a = arg;
	bool locked;
	pthread_t t;

	if (pthread_create(&t, NULL, mover, a)) {
		a->err = "pthread_create";
		return 0;
	}
	locked = wait_locked(a->f->map, a->nr);
	if (locked) {
		usleep(WRITE_AFTER_US);	/* the copy is made by now */
		a->err = udmabuf_write(a->f->fd, a->n, a->future);
	}
	pthread_join(t, NULL);
	return locked && !a->err;
}

/* Pages of @fd that do not hold VAL(@n, i), the first ones logged. */
static int stale_pages(struct __test_metadata *_metadata, int fd, int n)
{
	int bad = 0;

	for (int i = 0; i < NR; i++) {
		uint64_t v = 0;

		if (pread(fd, &v, sizeof(v), i * PAGE) == sizeof(v) &&
		    v == VAL(n, i))
			continue;
		if (bad++ < 2)
			TH_LOG("page %d: the file has %#llx, the udmabuf wrote %#llx",
			       i, (unsigned long long)v,
			       (unsigned long long)VAL(n, i));
	}
	return bad;
}

/* nu_trace_count()'s @fn: the move alone. */
static long run_move(void *arg)
{
	mover(arg);
	return 0;
}

TEST_F_TIMEOUT(pw, sealed_memfd_refused, 60)
{
	struct nu_event ev[2] = {
		{ .name = ROCM_EVENT, .match = " pin_sealed" },
		{ .name = ROCM_EVENT, .match = " ok" },
	};
	struct file f;
	struct attempt a = { .f = &f, .nr = NR, .to = self->node[1] };
	long ret;

	ASSERT_EQ(0, file_open(&f, self->node[0], true));
	pfn_filter(f.map, NR, ev[0].filter, sizeof(ev[0].filter));
	memcpy(ev[1].filter, ev[0].filter, sizeof(ev[1].filter));
	if (nu_trace_count(ev, 2, run_move, &a, &ret)) {
		file_close(&f);
		NU_SKIP(return, "no tracefs or no %s event", ROCM_EVENT);
	}
	TH_LOG("refused as pin_sealed %ld, moved by ROCM %ld, status %ld %ld",
	       ev[0].count, ev[1].count, a.status[0], a.status[1]);
	/* a classic retry checks again: at least one refusal per page */
	EXPECT_LE(NR, ev[0].count);
	EXPECT_EQ(0, ev[1].count);
	EXPECT_EQ(self->node[1], a.status[0]);
	EXPECT_EQ(self->node[1], a.status[1]);
	EXPECT_EQ(0, stale_pages(_metadata, f.fd, 0));
	file_close(&f);
}

/* How a write attempt runs. */
struct wmode {
	const char *name;
	bool skip;		/* migrate_rocm/skip_compare: the control */
	bool future;		/* F_SEAL_FUTURE_WRITE before the unpin */
};

/*
 * One write attempt on a fresh memfd: -1 on an error (logged), 0 on a
 * miss, else 1, with the undos of reason "written" and the pages whose
 * write was lost.
 */
static int write_attempt(struct __test_metadata *_metadata,
			 FIXTURE_DATA(pw) *self, const struct wmode *m, int n,
			 long *written, int *stale)
{
	struct nu_event ev[1] = { { .name = ROCM_EVENT, .match = " written" } };
	struct file f;
	struct attempt a = { .f = &f, .nr = NR, .to = self->node[1], .n = n,
			     .future = m->future };
	long wrote = 0;

	*written = 0;
	*stale = 0;
	if (file_open(&f, self->node[0], false) ||
	    nu_write_str(knob_path[K_SKIP], m->skip ? "1" : "0")) {
		file_close(&f);
		TH_LOG("cannot set up the memfd or skip_compare");
		return -1;
	}
	pfn_filter(f.map, NR, ev[0].filter, sizeof(ev[0].filter));
	if (nu_trace_count(ev, 1, run_write, &a, &wrote))
		a.err = "no tracefs or no " ROCM_EVENT " event";
	nu_write_str(knob_path[K_SKIP], "0");
	*written = ev[0].count;
	*stale = wrote ? stale_pages(_metadata, f.fd, n) : 0;
	TH_LOG("%s try %d: status %ld %ld; %s; undone as written %ld, stale %d",
	       m->name, n, a.status[0], a.status[1],
	       wrote ? "written through a udmabuf" : "never seen locked",
	       *written, *stale);
	if (a.err)
		TH_LOG("%s", a.err);
	file_close(&f);
	return a.err ? -1 : wrote;
}

/*
 * Up to TRIES attempts in mode @m until one reaches the window: a write
 * undone as "written" (all NR pages with @all), none lost.  1 if
 * reached, 0 if never, -1 on an error.
 */
static int write_tries(struct __test_metadata *_metadata,
		       FIXTURE_DATA(pw) *self, const struct wmode *m, bool all)
{
	long written;
	int stale;

	for (int try = 1; try <= TRIES; try++) {
		if (write_attempt(_metadata, self, m, try, &written, &stale) < 0)
			return -1;
		EXPECT_EQ(0, stale) TH_LOG("writes through the pin were lost");
		if (stale)
			return 1;
		if (written) {
			if (all)
				EXPECT_EQ(NR, written);
			return 1;
		}
	}
	return 0;
}

/* The control: with the compare skipped, the write must be lost. */
static int control_loses(struct __test_metadata *_metadata,
			 FIXTURE_DATA(pw) *self)
{
	static const struct wmode control = { .name = "control", .skip = true };
	long written;
	int stale = 0;

	for (int try = 1; try <= TRIES && !stale; try++)
		if (write_attempt(_metadata, self, &control, try, &written,
				  &stale) < 0)
			return -1;
	return stale > 0;
}

/* write_tries() in mode @m, skipping when no attempt reached the window. */
static void write_case(struct __test_metadata *_metadata,
		       FIXTURE_DATA(pw) *self, const struct wmode *m, bool all)
{
	int rc = write_tries(_metadata, self, m, all);

	if (rc < 0)
		NU_SKIP(return, "the test could not run (see above)");
	if (!rc)
		NU_SKIP(return, "the write never landed between ROCM's copy and its freeze (%d tries)",
			TRIES);
}

TEST_F_TIMEOUT(pw, write_through_pin_survives, 120)
{
	static const struct wmode test = { .name = "test" };
	int rc;

	ASSERT_EQ(0, nu_write_str(knob_path[K_COPY], DELAY_US));
	rc = control_loses(_metadata, self);
	if (rc < 0)
		NU_SKIP(return, "the control could not run (see above)");
	if (!rc)
		NU_SKIP(return, "the control never lost a write (%d tries): the writes missed the window",
			TRIES);
	write_case(_metadata, self, &test, false);
}

/*
 * F_SEAL_FUTURE_WRITE added while the pin is held: udmabuf writes on,
 * and the seals under the freeze must still ask for the compare.
 */
TEST_F_TIMEOUT(pw, future_write_seal_after_pin, 120)
{
	static const struct wmode future = { .name = "future", .future = true };

	ASSERT_EQ(0, nu_write_str(knob_path[K_COPY], DELAY_US));
	write_case(_metadata, self, &future, false);
}

/*
 * vm.migrate_range_unmap: the NR folios are copied, switched and undone
 * as one run (migrate_rocm_move_run()), the copy window after the last
 * copy: every page is written in it and every one must be undone.
 */
TEST_F_TIMEOUT(pw, write_through_pin_survives_run, 120)
{
	static const struct wmode run = { .name = "run" };

	if (!self->was[K_RANGE][0])
		NU_SKIP(return, "no %s (CONFIG_MIGRATE_RANGE)", knob_path[K_RANGE]);
	ASSERT_EQ(0, nu_write_str(knob_path[K_RANGE], "1"));
	ASSERT_EQ(0, nu_write_str(knob_path[K_COPY], DELAY_US));
	write_case(_metadata, self, &run, true);
}

/*
 * nu_trace_count()'s @fn for held_copy_stays_charged: 1 if the pipe took
 * the copy (the PTE still mapped it after vmsplice(2)).
 */
static long run_held(void *arg)
{
	struct attempt *a = arg;
	struct iovec iov = { .iov_base = a->f->map, .iov_len = PAGE };
	uint64_t pfn = 0;
	pthread_t t;

	if (pthread_create(&t, NULL, mover, a)) {
		a->err = "pthread_create";
		return 0;
	}
	if (wait_locked(a->f->map, 1)) {
		usleep(WRITE_AFTER_US);
		/* a pin the final check finds, and every retry after it */
		a->buf = udmabuf_open(a->f->fd);
		if (a->buf < 0)
			a->err = "F_ADD_SEALS or UDMABUF_CREATE";
		else
			pfn = wait_switched(a->f->map, a->src_pfn);
		if (pfn && vmsplice(a->pipe[1], &iov, 1, 0) == PAGE &&
		    pfn_of(a->f->map) == pfn)
			a->dst_pfn = pfn;
	}
	pthread_join(t, NULL);
	if (a->buf >= 0)
		close(a->buf);
	return a->dst_pfn != 0;
}

/* Is the copy the pipe holds charged as the source was?  The pipe's data. */
static void check_held(struct __test_metadata *_metadata, struct attempt *a,
		       uint64_t src_cg)
{
	uint64_t cg = 0, v = 0;
	char page[PAGE];

	ASSERT_EQ(0, kpage_read("kpagecgroup", a->dst_pfn, &cg));
	EXPECT_EQ(src_cg, cg) TH_LOG("the copy the pipe holds is charged to %llu",
				     (unsigned long long)cg);
	ASSERT_EQ(PAGE, read(a->pipe[0], page, PAGE));
	memcpy(&v, page, sizeof(v));
	EXPECT_EQ(VAL(0, 0), v);
}

TEST_F_TIMEOUT(pw, held_copy_stays_charged, 120)
{
	struct nu_event ev[2] = {
		{ .name = ROCM_EVENT, .match = " race" },
		{ .name = ROCM_EVENT, .match = " dst_held" },
	};
	struct file f;
	struct attempt a = { .f = &f, .nr = 1, .to = self->node[1], .buf = -1 };
	uint64_t src_cg = 0;
	long took = 0;

	if (access("/proc/kpagecgroup", R_OK))
		NU_SKIP(return, "no /proc/kpagecgroup (CONFIG_MEMCG)");
	ASSERT_EQ(0, file_open(&f, self->node[0], false));
	ASSERT_EQ(0, pipe(a.pipe));
	a.src_pfn = pfn_of(f.map);
	ASSERT_EQ(0, kpage_read("kpagecgroup", a.src_pfn, &src_cg));
	if (!src_cg)
		NU_SKIP(goto out, "pages carry no memcg (cgroup_disable=memory?)");
	snprintf(ev[0].filter, sizeof(ev[0].filter), "pfn == %llu",
		 (unsigned long long)a.src_pfn);
	memcpy(ev[1].filter, ev[0].filter, sizeof(ev[1].filter));
	ASSERT_EQ(0, nu_write_str(knob_path[K_COPY], DELAY_US));
	ASSERT_EQ(0, nu_write_str(knob_path[K_SWITCH], DELAY_US));
	if (nu_trace_count(ev, 2, run_held, &a, &took))
		NU_SKIP(goto out, "no tracefs or no %s event", ROCM_EVENT);
	ASSERT_EQ(NULL, a.err) TH_LOG("%s", a.err);
	TH_LOG("source pfn %#llx, the pipe took %#llx, mapped now %#llx",
	       (unsigned long long)a.src_pfn, (unsigned long long)a.dst_pfn,
	       (unsigned long long)pfn_of(f.map));
	TH_LOG("undone as race %ld, copy held %ld, status %ld", ev[0].count,
	       ev[1].count, a.status[0]);
	if (!took || !ev[0].count || pfn_of(f.map) != a.src_pfn)
		NU_SKIP(goto out, "the pipe did not take the copy of an undone move");
	EXPECT_EQ(1, ev[1].count) TH_LOG("the undo did not keep the held copy");
	check_held(_metadata, &a, src_cg);
out:
	close(a.pipe[0]);
	close(a.pipe[1]);
	file_close(&f);
}

TEST_HARNESS_MAIN
