// SPDX-License-Identifier: GPL-2.0
/*
 * private_guard: what a private memory node must not do to the rest of
 * the machine (CONFIG_NUMA_PRIVATE_NODES).  Same guest and test provider
 * as private_nodes ("scripts/vm --private-nodes").
 *
 *   oom_stays_bound     an unprivileged task bound to a node without
 *                       RECLAIM fills it with tmpfs and faults on: the OOM
 *                       killer kills only that task, never another uid's
 *   dram_watermarks     claiming a node (kernel or movable memory) leaves
 *                       every normal zone's min/low/high as they were
 *   reclaim_not_private zsmalloc pages that a bound task's memcg reclaim
 *                       allocates (zram) never land on the private node
 *   readahead_not_private  swap cluster readahead around a fault under a
 *                       bind on the node never reads other entries onto it
 *   memcg_limit_swaps   a cgroup over memory.max swaps what it demoted onto
 *                       the node (and what a bind put there), no OOM kill
 *   cpuset_confines     a task whose cpuset leaves out a normal node can
 *                       neither bind to nor move pages onto the node; with
 *                       every normal node in cpuset.mems it can
 *   ltpin_user_placed   a long-term pin of a page a user placed on a node
 *                       with USER_NUMA but not LTPIN migrates it off first
 *   unregister_blocks   the owner cannot unregister a node whose memory
 *                       blocks are offline but still there
 *   shared_policy_spills  a file whose shared policy one user bound to a
 *                       full node: another user writing it is not killed,
 *                       its pages go to normal memory
 *   remote_not_killed   reading another process's swapped page bound to a
 *                       full node fails the read; the reader is not killed
 *   fs_metadata_moves   a task bound to a full node creates directories on
 *                       ext4: the metadata (GFP_NOFS|__GFP_NOFAIL block
 *                       cache) goes to normal memory, nothing hangs
 *   migrate_pages_masks migrate_pages(2) leaves out a node without
 *                       USER_NUMA from a mask that names others too
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <linux/loop.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "../../../../mm/gup_test.h"
#include "numa_util.h"
#include "private_util.h"

#define ADIST_SLOW	2880	/* MEMTIER_DEFAULT_DAX_ADISTANCE */
#define DEMOTE_ON	"/sys/kernel/mm/numa/demotion_enabled"
#define VMA_RA		"/sys/kernel/mm/swap/vma_ra_enabled"
#define MIN_FREE	"/proc/sys/vm/min_free_kbytes"
/* An ext4 image at /tmp/pg_ext4.img: the harness's, or a new one. */
#define MAKE_EXT4	"cp /images/ext4.img /tmp/pg_ext4.img 2>/dev/null || { dd if=/dev/zero of=/tmp/pg_ext4.img bs=1M count=48 && mkfs.ext4 -q -F /tmp/pg_ext4.img; } >/dev/null 2>&1"
#define SEED		0x9a4d
#define NOBODY		65534
#define VICTIM_UID	65533

FIXTURE(pg) {
	int nid;
	bool claimed;
	char tmpfs[64];		/* a tmpfs mount of ours, "" if none */
	struct nu_swap sw;
	bool swapped;
	char cg[128];		/* a cgroup of ours, "" if none */
	char was_demote[16];	/* demotion_enabled before, "" if kept */
	char was_printk[64];	/* console level before, "" if kept */
	char was_vma_ra[16];	/* vma_ra_enabled before, "" if kept */
	char cs[96];		/* a cpuset cgroup of ours, "" if none */
	char was_min_free[32];	/* vm.min_free_kbytes before, "" if kept */
	char ext4[64];		/* an ext4 mount of ours, "" if none */
	int loop_fd;		/* its loop device, -1 if none */
	bool cs_enabled;	/* we turned on the root's +cpuset */
};

FIXTURE_SETUP(pg)
{
	int nids[NU_MAX_NODES];

	memset(self, 0, sizeof(*self));
	self->loop_fd = -1;
	if (access(NPT "claim", W_OK))
		NU_SKIP(return, "no node_private_test provider (CONFIG_NUMA_PRIVATE_NODES_TEST)");
	if (carved_nodes(nids, NU_MAX_NODES, true) < 1)
		NU_SKIP(return, "no carved memory-only node: boot with scripts/vm --private-nodes");
	self->nid = nids[0];
}

FIXTURE_TEARDOWN(pg)
{
	if (self->was_printk[0])
		nu_write_str("/proc/sys/kernel/printk", self->was_printk);
	if (self->cg[0])
		nu_cg_remove(self->cg);
	if (self->cs[0])
		EXPECT_EQ(0, nu_cg_rmdir(self->cs));
	if (self->cs_enabled)
		nu_write_str(NU_CGROOT "/cgroup.subtree_control", "-cpuset");
	if (self->ext4[0]) {
		EXPECT_EQ(0, umount(self->ext4));
		rmdir(self->ext4);
	}
	if (self->loop_fd >= 0) {
		ioctl(self->loop_fd, LOOP_CLR_FD);
		close(self->loop_fd);
	}
	if (self->tmpfs[0]) {
		EXPECT_EQ(0, umount(self->tmpfs));
		rmdir(self->tmpfs);
	}
	if (self->swapped)
		EXPECT_EQ(0, nu_swap_off(&self->sw));
	if (self->was_demote[0])
		nu_write_str(DEMOTE_ON, self->was_demote);
	if (self->was_vma_ra[0])
		nu_write_str(VMA_RA, self->was_vma_ra);
	if (self->was_min_free[0])
		nu_write_str(MIN_FREE, self->was_min_free);
	if (self->claimed)
		EXPECT_EQ(0, npt_write("release", "%d", self->nid));
}

#define CLAIM(caps, type, adist) do {					\
	ASSERT_EQ(0, npt_write("claim", "%d %#x %s %d", self->nid, caps,	\
			       type, adist));				\
	self->claimed = true;						\
} while (0)

/* Write @val to @cg/@file: 0 or -errno. */
static int cg_write_str(const char *cg, const char *file, const char *val)
{
	char path[192];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return nu_write_str(path, val);
}

/* The console must not see the OOM reports we cause (scripts/vm greps). */
#define CONSOLE_QUIET() do {						\
	ASSERT_GT(nu_read_str("/proc/sys/kernel/printk", self->was_printk, \
			      sizeof(self->was_printk)), 0);		\
	ASSERT_EQ(0, nu_write_str("/proc/sys/kernel/printk", "1"));	\
} while (0)

static void oom_adj(const char *v)
{
	nu_write_str("/proc/self/oom_score_adj", v);
}

static void drop_to(uid_t uid)
{
	if (setgid(uid) || setuid(uid))
		_exit(90);
}

/*
 * Another user's bystander: @mb MiB of anon on node 0 (a VMA policy: the
 * task's stays default, so every OOM domain holds it).  Writes a byte to
 * @fd once it holds the memory, then waits to be killed.
 */
static pid_t bystander(size_t mb, int fd)
{
	pid_t pid = fork();
	char *p;

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	oom_adj("0");
	drop_to(VICTIM_UID);
	p = nu_anon_bound(mb * MB, MPOL_BIND, 0, SEED);
	if (!p)
		_exit(91);
	if (write(fd, "r", 1) != 1)
		_exit(92);
	for (;;)
		pause();
}

/* As nobody, bound to @nid: fill @dir's tmpfs until it fails, then fault. */
static pid_t filler(int nid, const char *dir)
{
	unsigned long mask = 1UL << nid;
	static char buf[MB];
	char path[96];
	pid_t pid = fork();
	char *p;
	int fd;

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	oom_adj("0");
	drop_to(NOBODY);
	snprintf(path, sizeof(path), "%s/fill", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	if (fd < 0)
		_exit(94);
	/* Its own pages before the bind: its death frees none on the node. */
	memset(buf, 0x6b, sizeof(buf));
	if (nu_set_mempolicy(MPOL_BIND, &mask, NU_MAX_NODES))
		_exit(93);
	while (write(fd, buf, sizeof(buf)) == sizeof(buf))
		;
	p = mmap(NULL, 64 * MB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		memset(p, 1, 64 * MB);
	_exit(0);
}

/* Wait for @pid: its wait status. */
static int reap(pid_t pid)
{
	int status = -1;

	waitpid(pid, &status, 0);
	return status;
}

/* A tmpfs at @out (its path), with room for twice node @nid. */
static void mount_tmpfs(struct __test_metadata *_metadata, int nid,
			char *out, size_t len)
{
	char dir[] = "/tmp/pg_tmpfs.XXXXXX", opts[64];
	long long total_kb = meminfo_kb(nid, "MemTotal:");

	ASSERT_GT(total_kb, 0);
	ASSERT_NE(NULL, mkdtemp(dir));
	snprintf(opts, sizeof(opts), "size=%lldk,mode=1777",
		 2 * total_kb + 65536);
	ASSERT_EQ(0, mount("tmpfs", dir, "tmpfs", 0, opts));
	snprintf(out, len, "%s", dir);
}

#define MOUNT_TMPFS()							\
	mount_tmpfs(_metadata, self->nid, self->tmpfs, sizeof(self->tmpfs))

/* Fill node @nid with filler() in tmpfs @dir; it must end OOM-killed. */
static void fill_node(struct __test_metadata *_metadata, int nid,
		      const char *dir)
{
	int status = reap(filler(nid, dir));

	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("filler status %#x: expected an OOM kill", status);
}

#define FILL_NODE() fill_node(_metadata, self->nid, self->tmpfs)

/* Mark the kernel log, so that what follows can be told from before. */
static void kmsg_mark(const char *mark)
{
	nu_write_str("/dev/kmsg", mark);
}

/* Since @mark, did the kernel log a line matching the ERE @re? */
static bool kmsg_since(const char *mark, const char *re)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "dmesg | sed -n '/%s/,$p' | grep -qE '%s'",
		 mark, re);
	return system(cmd) == 0;
}

TEST_F_TIMEOUT(pg, oom_stays_bound, 300)
{
	char mark[64], re[96], c;
	int fds[2], status;
	pid_t by, fill;

	CLAIM(CAP_USER_NUMA, "movable", 0);
	/* Room for twice the node: only the node's end stops the filler. */
	MOUNT_TMPFS();
	ASSERT_EQ(0, pipe(fds));
	CONSOLE_QUIET();
	oom_adj("-1000");	/* the harness is not what is tested */

	by = bystander(200, fds[1]);
	ASSERT_EQ(1, read(fds[0], &c, 1));
	snprintf(mark, sizeof(mark), "private_guard oom_stays_bound %d", by);
	kmsg_mark(mark);
	fill = filler(self->nid, self->tmpfs);
	ASSERT_EQ(fill, waitpid(fill, &status, 0));
	/* The node filled up and the OOM killer took the filler. */
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("filler status %#x: expected an OOM kill", status);
	snprintf(re, sizeof(re), "Out of memory \\(private node\\): Killed process %d ",
		 fill);
	EXPECT_TRUE(kmsg_since(mark, re));
	EXPECT_EQ(0, waitpid(by, &status, WNOHANG))
		TH_LOG("the bystander (uid %d) died: %#x", VICTIM_UID, status);
	snprintf(re, sizeof(re), "Killed process %d |oom-kill:.*,pid=%d,",
		 by, by);
	EXPECT_FALSE(kmsg_since(mark, re));
	kill(by, SIGKILL);
	waitpid(by, &status, 0);
	oom_adj("0");
}

/*
 * "N:zone min low high;" of every zone of the nodes with normal memory,
 * without the boost (zoneinfo adds it to each).
 */
static void normal_wmarks(char *out, size_t len)
{
	char line[256], zone[32];
	bool normal = false;
	long boost = 0, min = 0, low = 0, high;
	size_t used = 0;
	FILE *f = fopen("/proc/zoneinfo", "r");
	int nid;

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone %31s", &nid, zone) == 2)
			normal = nu_in_nodelist("has_memory", nid);
		else if (normal && sscanf(line, " boost %ld", &boost) == 1)
			continue;
		else if (normal && sscanf(line, " min %ld", &min) == 1)
			continue;
		else if (normal && sscanf(line, " low %ld", &low) == 1)
			continue;
		else if (normal && sscanf(line, " high %ld", &high) == 1 &&
			 used < len)
			used += snprintf(out + used, len - used,
					 "%d:%s %ld %ld %ld; ", nid, zone,
					 min - boost, low - boost,
					 high - boost);
	}
	fclose(f);
}

TEST_F(pg, dram_watermarks)
{
	static const char * const types[] = { "kernel", "movable" };
	char before[2048], during[2048], pin[32];
	int i;

	/*
	 * Each hot-add recomputes min_free_kbytes from the normal zones'
	 * free pages over their high watermarks, which a boost can move:
	 * pin it above what it would compute (restored in the teardown).
	 */
	ASSERT_GT(nu_read_str(MIN_FREE, self->was_min_free,
			      sizeof(self->was_min_free)), 0);
	snprintf(pin, sizeof(pin), "%lld", 2 * atoll(self->was_min_free));
	ASSERT_EQ(0, nu_write_str(MIN_FREE, pin));
	normal_wmarks(before, sizeof(before));
	ASSERT_NE(0, before[0]);
	for (i = 0; i < 2; i++) {
		CLAIM(0, types[i], 0);
		normal_wmarks(during, sizeof(during));
		EXPECT_STREQ(before, during) TH_LOG("claimed as %s", types[i]);
		ASSERT_EQ(0, npt_write("release", "%d", self->nid));
		self->claimed = false;
	}
}

/* nr_zspages of @nid's zones in /proc/zoneinfo; -1 if unreadable. */
static long node_zspages(int nid)
{
	char line[256];
	long sum = -1, v;
	bool mine = false;
	FILE *f = fopen("/proc/zoneinfo", "r");
	int n;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d,", &n) == 1)
			mine = n == nid;
		else if (mine && sscanf(line, " nr_zspages %ld", &v) == 1)
			sum = (sum < 0 ? 0 : sum) + v;
	}
	fclose(f);
	return sum;
}

/* "@key N" of @cg's memory.events; -1 if unreadable. */
static long long cg_event(const char *cg, const char *key)
{
	char path[192], line[128], name[64];
	long long v, ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.events", cg);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", name, &v) == 2 &&
		    !strcmp(name, key))
			ret = v;
	fclose(f);
	return ret;
}

/* @mb MiB of anon filled from @seed; exits the child on failure. */
static char *child_fill(size_t mb, unsigned int seed)
{
	char *p = mmap(NULL, mb * MB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		_exit(96);
	nu_fill(p, mb * MB, seed);
	return p;
}

/*
 * A child in @cg: @free_mb of anon under the default policy, then a bind
 * on @nid and @bound_mb more.  Once filled it writes a byte to @fd and
 * waits for one back; it exits 0 if its data is intact.
 */
static pid_t over_limit(const char *cg, int nid, size_t free_mb,
			size_t bound_mb, int fd[2])
{
	unsigned long mask = 1UL << nid;
	char *a = NULL, *b = NULL, c = 0;
	pid_t pid = fork();

	if (pid)
		return pid;
	if (nu_cg_write(cg, "cgroup.procs", getpid()))
		_exit(95);
	if (free_mb)
		a = child_fill(free_mb, SEED);
	if (bound_mb) {
		if (nu_set_mempolicy(MPOL_BIND, &mask, NU_MAX_NODES))
			_exit(97);
		b = child_fill(bound_mb, SEED + 1);
	}
	if (write(fd[1], &c, 1) != 1 || read(fd[0], &c, 1) != 1)
		_exit(98);
	if (b && !nu_intact(b, bound_mb * MB, SEED + 1))
		_exit(99);
	/* Room to read @a back: what sits on a node without RECLAIM stays. */
	if (b)
		munmap(b, bound_mb * MB);
	if (a && !nu_intact(a, free_mb * MB, SEED))
		_exit(99);
	_exit(0);
}

/*
 * Run over_limit() to the point where it is filled, call @at_full (if
 * any) then, and let it finish: its wait status, -1 on error.
 */
static int run_over_limit(const char *cg, int nid, size_t free_mb,
			  size_t bound_mb, void (*at_full)(void *), void *arg)
{
	int up[2], down[2], fd[2], status = -1;
	pid_t pid;
	char c = 0;

	if (pipe(up) || pipe(down))
		return -1;
	fd[0] = down[0];
	fd[1] = up[1];
	pid = over_limit(cg, nid, free_mb, bound_mb, fd);
	close(up[1]);
	if (read(up[0], &c, 1) == 1 && at_full)
		at_full(arg);
	if (write(down[1], &c, 1) != 1)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(up[0]);
	close(down[0]);
	close(down[1]);
	return status;
}

/* zsmalloc pages on a node and on every node, read while the child waits. */
struct zs_count {
	int nid;
	long node;
	long all;
};

static void count_zspages(void *arg)
{
	struct zs_count *z = arg;
	int nid;

	z->node = node_zspages(z->nid);
	z->all = 0;
	for (nid = 0; nid < NU_MAX_NODES; nid++) {
		long n = node_zspages(nid);

		z->all += n > 0 ? n : 0;
	}
}

TEST_F_TIMEOUT(pg, reclaim_not_private, 300)
{
	struct zs_count before = { .nid = self->nid }, full = before;
	const char *why;
	int status;

	CLAIM(CAP_USER_NUMA, "movable", 0);
	ASSERT_EQ(0, nu_swap_on(&self->sw, "/tmp", 64));
	self->swapped = true;
	if (self->sw.file[0])
		NU_SKIP(return, "no zram: nothing allocates zsmalloc pages");
	why = nu_cg_enter("private_guard", self->cg, sizeof(self->cg));
	if (why)
		NU_SKIP(return, "%s", why);
	ASSERT_EQ(0, nu_cg_write(NU_CGROOT, "cgroup.procs", getpid()));
	ASSERT_EQ(0, nu_cg_write(self->cg, "memory.max", 32 * MB));
	count_zspages(&before);
	ASSERT_GE(before.node, 0);
	/* 24 MiB on DRAM, then 16 bound to the node: DRAM goes to zram. */
	status = run_over_limit(self->cg, self->nid, 24, 16, count_zspages,
				&full);
	EXPECT_EQ(0, status) TH_LOG("child status %#x", status);
	EXPECT_GT(full.all, before.all) TH_LOG("nothing was swapped to zram");
	EXPECT_EQ(before.node, full.node)
		TH_LOG("%ld zsmalloc pages landed on node %d",
		       full.node - before.node, self->nid);
}

TEST_F_TIMEOUT(pg, memcg_limit_swaps, 400)
{
	const char *why;
	int status;

	CLAIM(CAP_RECLAIM | CAP_HOTUNPLUG | CAP_DEMOTION | CAP_USER_NUMA,
	      "movable", ADIST_SLOW);
	ASSERT_GT(nu_read_str(DEMOTE_ON, self->was_demote,
			      sizeof(self->was_demote)), 0);
	ASSERT_EQ(0, nu_write_str(DEMOTE_ON, "1"));
	ASSERT_EQ(0, nu_swap_on(&self->sw, "/tmp", 128));
	self->swapped = true;
	why = nu_cg_enter("private_guard", self->cg, sizeof(self->cg));
	if (why)
		NU_SKIP(return, "%s", why);
	ASSERT_EQ(0, nu_cg_write(NU_CGROOT, "cgroup.procs", getpid()));
	ASSERT_EQ(0, nu_cg_write(self->cg, "memory.max", 32 * MB));
	CONSOLE_QUIET();

	/*
	 * 64 MiB intact under a 32 MiB limit: at least half went to swap.
	 * First on DRAM (limit reclaim demotes it onto the node), then
	 * bound to the node itself.
	 */
	status = run_over_limit(self->cg, 0, 64, 0, NULL, NULL);
	EXPECT_EQ(0, status) TH_LOG("DRAM child status %#x", status);
	status = run_over_limit(self->cg, self->nid, 0, 64, NULL, NULL);
	EXPECT_EQ(0, status) TH_LOG("bound child status %#x", status);
	EXPECT_EQ(0, cg_event(self->cg, "oom_kill"));
	EXPECT_GT(cg_event(self->cg, "max"), 0);
}

/*
 * A child in @cg: mbind to @nid and fault a page there, then move_pages() one
 * from node 0 onto it.  Bit 0 of the exit code: the bind worked and
 * placed the page; bit 1: the move did.
 */
static int try_private(const char *cg, int nid)
{
	int status, where = nid, got = -1, ret = 0;
	pid_t pid = fork();
	void *page;
	char *p;

	if (pid) {
		waitpid(pid, &status, 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	if (nu_cg_write(cg, "cgroup.procs", getpid()))
		_exit(100);
	p = nu_anon_bound(PAGE, MPOL_BIND, nid, SEED);
	if (p && nu_pages_on(p, PAGE, nid) == 1)
		ret |= 1;
	page = nu_anon_bound(PAGE, MPOL_BIND, 0, SEED);
	if (page && !nu_move_pages(0, 1, &page, &where, &got, 0) && got == nid)
		ret |= 2;
	_exit(ret);
}

TEST_F(pg, cpuset_confines)
{
	char ctl[256], mems[64];
	int nids[NU_MAX_NODES];

	if (nu_read_str(NU_CGROOT "/cgroup.controllers", ctl, sizeof(ctl)) <= 0 ||
	    !strstr(ctl, "cpuset"))
		NU_SKIP(return, "no cpuset controller (CONFIG_CPUSETS)");
	ASSERT_GT(nu_read_str(NODE_SYS "has_memory", mems, sizeof(mems)), 0);
	mems[strcspn(mems, "\n")] = '\0';
	if (nu_parse_list(mems, nids, NU_MAX_NODES) < 2)
		NU_SKIP(return, "one normal node: a cpuset cannot confine");
	CLAIM(CAP_USER_NUMA, "movable", 0);
	ASSERT_GT(nu_read_str(NU_CGROOT "/cgroup.subtree_control", ctl,
			      sizeof(ctl)), -1);
	if (!strstr(ctl, "cpuset")) {
		ASSERT_EQ(0, nu_write_str(NU_CGROOT "/cgroup.subtree_control",
					  "+cpuset"));
		self->cs_enabled = true;
	}
	snprintf(self->cs, sizeof(self->cs), NU_CGROOT "/private_guard_cs.%d",
		 getpid());
	ASSERT_EQ(0, mkdir(self->cs, 0755));

	/* Confined to node 0: neither a bind nor a move reaches the node. */
	EXPECT_EQ(0, cg_write_str(self->cs, "cpuset.mems", "0"));
	EXPECT_EQ(0, try_private(self->cs, self->nid));
	/* Every normal node: both do. */
	EXPECT_EQ(0, cg_write_str(self->cs, "cpuset.mems", mems));
	EXPECT_EQ(3, try_private(self->cs, self->nid))
		TH_LOG("cpuset.mems %s", mems);
}

TEST_F(pg, ltpin_user_placed)
{
	struct pin_longterm_test args = { .size = 2 * MB };
	unsigned long mask = 1UL << self->nid;
	size_t len = 2 * MB;
	int fd = open("/sys/kernel/debug/gup_test", O_RDWR);
	char *p;

	if (fd < 0)
		NU_SKIP(return, "no /sys/kernel/debug/gup_test (CONFIG_GUP_TEST)");
	CLAIM(CAP_USER_NUMA | CAP_HOTUNPLUG, "kernel", 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, nu_mbind(p, len, MPOL_BIND, &mask, NU_MAX_NODES, 0));
	nu_fill(p, len, SEED);
	ASSERT_EQ((long)(len / PAGE), nu_pages_on(p, len, self->nid));
	args.addr = (unsigned long)p;
	/* Read-only: another user's pin of memory it only reads. */
	EXPECT_EQ(0, ioctl(fd, PIN_LONGTERM_TEST_START, &args))
		TH_LOG("pin: %s", strerror(errno));
	EXPECT_EQ(0, nu_pages_on(p, len, self->nid));
	ioctl(fd, PIN_LONGTERM_TEST_STOP);
	close(fd);
	EXPECT_TRUE(nu_intact(p, len, SEED));
	munmap(p, len);
}

TEST_F(pg, unregister_blocks)
{
	char caps[256], want[16];

	CLAIM(CAP_HOTUNPLUG, "movable", 0);
	ASSERT_EQ(0, nu_node_blocks_to(self->nid, "offline"));
	EXPECT_FALSE(nu_in_nodelist("has_private_memory", self->nid));
	/* Offline blocks left: they would online as ordinary memory. */
	EXPECT_EQ(-EBUSY, npt_write("unregister", "%d", self->nid));
	ASSERT_GT(nu_read_str("/sys/kernel/debug/node_private/caps", caps,
			      sizeof(caps)), 0);
	snprintf(want, sizeof(want), "%d ", self->nid);
	EXPECT_NE(NULL, strstr(caps, want)) TH_LOG("caps: %s", caps);
}

/* Pages of [@p, +@len) in memory, swap cache included (mincore). */
static long resident(char *p, size_t len)
{
	unsigned char vec[32];
	long n = 0, i;

	if (len / PAGE > sizeof(vec) || mincore(p, len, vec))
		return -1;
	for (i = 0; i < (long)(len / PAGE); i++)
		n += vec[i] & 1;
	return n;
}

/*
 * @len of anon, filled from @seed on DRAM, then swapped out and gone from
 * the swap cache too (memory.reclaim of @cg once the writeback is done),
 * so that a fault reads it back; NULL if that did not happen in 10 s.
 */
static char *swapped_out(const char *cg, size_t len, unsigned int seed)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int i;

	if (p == MAP_FAILED)
		return NULL;
	nu_fill(p, len, seed);
	if (madvise(p, len, MADV_PAGEOUT) ||
	    nu_pages_swapped(p, len) != (long)(len / PAGE))
		return NULL;
	for (i = 0; i < 200 && resident(p, len); i++) {
		nu_cg_write(cg, "memory.reclaim", 16 * MB);
		usleep(50000);
	}
	return resident(p, len) ? NULL : p;
}

TEST_F_TIMEOUT(pg, readahead_not_private, 120)
{
	unsigned long mask = 1UL << self->nid;
	const size_t len = 24 * PAGE;
	char *q, *r1, *r2;
	const char *why;
	cpu_set_t cpus;

	CLAIM(CAP_USER_NUMA, "movable", 0);
	/* A loop file: zram swaps in synchronously, without readahead. */
	ASSERT_EQ(0, nu_swap_on_file(&self->sw, "/tmp", 16));
	self->swapped = true;
	if (nu_read_ll("/proc/sys/vm/page-cluster") < 1)
		NU_SKIP(return, "vm.page-cluster is 0: no swap readahead");
	ASSERT_GT(nu_read_str(VMA_RA, self->was_vma_ra,
			      sizeof(self->was_vma_ra)), 0);
	ASSERT_EQ(0, nu_write_str(VMA_RA, "false"));
	why = nu_cg_enter("private_guard", self->cg, sizeof(self->cg));
	if (why)
		NU_SKIP(return, "%s", why);
	/* One CPU: its swap cluster gives the three ranges adjacent slots. */
	CPU_ZERO(&cpus);
	CPU_SET(node0_cpu() < 0 ? 0 : node0_cpu(), &cpus);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpus), &cpus));

	/*
	 * A page whose mapping is bound to the node, swapped out between two
	 * ranges of another mapping (default policy).  Faulting in the first
	 * range in order grows the readahead window; the fault on the bound
	 * page then reads its neighbours ahead under its policy.
	 */
	r1 = swapped_out(self->cg, len, SEED + 1);
	q = swapped_out(self->cg, PAGE, SEED);
	r2 = swapped_out(self->cg, len, SEED + 2);
	ASSERT_TRUE(q && r1 && r2)
		TH_LOG("not out of memory and swap cache in 10 s");
	ASSERT_EQ(0, nu_mbind(q, PAGE, MPOL_BIND, &mask, NU_MAX_NODES, 0));
	/* Read in order: each fault next to the last grows the window. */
	EXPECT_TRUE(nu_intact(r1, 8 * PAGE, SEED + 1));
	EXPECT_TRUE(nu_intact(q, PAGE, SEED));
	EXPECT_EQ(1, nu_pages_on(q, PAGE, self->nid));
	EXPECT_TRUE(nu_intact(r1, len, SEED + 1));
	EXPECT_TRUE(nu_intact(r2, len, SEED + 2));
	EXPECT_EQ(0, nu_pages_on(r1, len, self->nid) +
		     nu_pages_on(r2, len, self->nid))
		TH_LOG("read-ahead pages of another mapping on node %d",
		       self->nid);
	munmap(q, PAGE);
	munmap(r1, len);
	munmap(r2, len);
}

/*
 * As @uid, map @path shared and, if @nid >= 0, mbind it there (its shared
 * policy); else write @mb MiB through the mapping and check them back.
 * The exit status: 0, or where it failed.
 */
static pid_t shared_user(uid_t uid, const char *path, int nid, size_t mb)
{
	unsigned long mask = 1UL << (nid < 0 ? 0 : nid);
	pid_t pid = fork();
	char *p;
	int fd;

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	oom_adj("0");
	drop_to(uid);
	/*
	 * The binder creates it and lets everyone write it, umask or not;
	 * the other user only opens it (fs.protected_regular refuses an
	 * O_CREAT open of another user's file in a sticky directory).
	 */
	fd = open(path, nid >= 0 ? O_CREAT | O_RDWR : O_RDWR, 0666);
	if (fd < 0 || (nid >= 0 && fchmod(fd, 0666)) || ftruncate(fd, mb * MB))
		_exit(100);
	p = mmap(NULL, mb * MB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		_exit(101);
	if (nid >= 0)
		_exit(nu_mbind(p, mb * MB, MPOL_BIND, &mask, NU_MAX_NODES, 0) ?
		      102 : 0);
	nu_fill(p, mb * MB, SEED);
	_exit(nu_intact(p, mb * MB, SEED) ? 0 : 103);
}

TEST_F_TIMEOUT(pg, shared_policy_spills, 300)
{
	char path[96];
	int status;

	CLAIM(CAP_USER_NUMA, "movable", 0);
	MOUNT_TMPFS();
	snprintf(path, sizeof(path), "%s/shared", self->tmpfs);
	CONSOLE_QUIET();
	oom_adj("-1000");

	/* nobody binds a file it shares to the node, then fills the node. */
	EXPECT_EQ(0, reap(shared_user(NOBODY, path, self->nid, 16)));
	FILL_NODE();
	/* Another user writing the file spills to normal memory. */
	status = reap(shared_user(VICTIM_UID, path, -1, 16));
	EXPECT_EQ(0, status) TH_LOG("the other user (uid %d): status %#x",
				    VICTIM_UID, status);
	oom_adj("0");
}

/*
 * Another process: a page bound to @nid (a VMA policy) but still on DRAM,
 * swapped out.  Writes its address to @fd, then waits to be killed.
 */
static pid_t swapped_target(int nid, int fd)
{
	unsigned long mask = 1UL << nid;
	pid_t pid = fork();
	char *p;
	int i;

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	oom_adj("0");
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(100);
	nu_fill(p, PAGE, SEED);
	if (nu_mbind(p, PAGE, MPOL_BIND, &mask, NU_MAX_NODES, 0))
		_exit(101);
	/* A fresh page may wait in another CPU's LRU batch: try again. */
	for (i = 0; i < 50 && nu_pages_swapped(p, PAGE) != 1; i++) {
		if (madvise(p, PAGE, MADV_PAGEOUT))
			_exit(103);
		usleep(20000);
	}
	if (nu_pages_swapped(p, PAGE) != 1)
		_exit(104);
	if (write(fd, &p, sizeof(p)) != sizeof(p))
		_exit(102);
	for (;;)
		pause();
}

TEST_F_TIMEOUT(pg, remote_not_killed, 300)
{
	char buf[64];
	struct iovec local = { buf, sizeof(buf) }, remote;
	int fds[2], status;
	pid_t target;
	ssize_t got;
	char *addr;

	CLAIM(CAP_USER_NUMA, "movable", 0);
	ASSERT_EQ(0, nu_swap_on(&self->sw, "/tmp", 16));
	self->swapped = true;
	/* zram frees a page from the swap cache once it is out. */
	if (self->sw.file[0])
		NU_SKIP(return, "no zram: the page would stay in the swap cache");
	MOUNT_TMPFS();
	ASSERT_EQ(0, pipe(fds));
	CONSOLE_QUIET();

	target = swapped_target(self->nid, fds[1]);
	close(fds[1]);
	if (read(fds[0], &addr, sizeof(addr)) != sizeof(addr)) {
		waitpid(target, &status, 0);
		ASSERT_TRUE(false) TH_LOG("target failed: %#x", status);
	}
	FILL_NODE();
	/* Root, killable, reads the page: it would come back onto the node. */
	oom_adj("0");
	remote.iov_base = addr;
	remote.iov_len = sizeof(buf);
	got = process_vm_readv(target, &local, 1, &remote, 1, 0);
	/* Refused, and this process is still here to say so. */
	EXPECT_GT(0, got) TH_LOG("process_vm_readv read %zd bytes", got);
	EXPECT_EQ(0, waitpid(target, &status, WNOHANG));
	kill(target, SIGKILL);
	reap(target);
}

/* Write 64 KiB of stack: its pages are this task's own copies now. */
static void prefault_stack(void)
{
	char buf[64 * 1024];

	explicit_bzero(buf, sizeof(buf));
}

/* A child bound to @nid: @n directories under @dir; exits 0 when done. */
static pid_t mkdirs_bound(int nid, const char *dir, int n)
{
	unsigned long mask = 1UL << nid;
	pid_t pid = fork();
	char path[128];
	int i;

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/*
	 * Copy the stack and data it writes before the bind: a COW under it
	 * is this task's own allocation, and OOM-kills it on the full node.
	 */
	prefault_stack();
	snprintf(path, sizeof(path), "%s/d%d", dir, n);
	if (nu_set_mempolicy(MPOL_BIND, &mask, NU_MAX_NODES))
		_exit(100);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/d%d", dir, i);
		if (mkdir(path, 0755))
			_exit(101);
	}
	sync();
	_exit(0);
}

TEST_F_TIMEOUT(pg, fs_metadata_moves, 300)
{
	char mnt[] = "/tmp/pg_ext4.XXXXXX", img[] = "/tmp/pg_ext4.img", dev[32];
	int status, fd, i;
	pid_t pid;

	CLAIM(CAP_USER_NUMA, "movable", 0);
	if (system(MAKE_EXT4))
		NU_SKIP(return, "no /images/ext4.img and no mkfs.ext4");
	fd = open(img, O_RDWR);
	ASSERT_GE(fd, 0);
	self->loop_fd = nu_loop_attach(fd, dev, sizeof(dev));
	close(fd);
	unlink(img);
	ASSERT_GE(self->loop_fd, 0);
	ASSERT_NE(NULL, mkdtemp(mnt));
	ASSERT_EQ(0, mount(dev, mnt, "ext4", 0, NULL));
	snprintf(self->ext4, sizeof(self->ext4), "%s", mnt);

	MOUNT_TMPFS();
	CONSOLE_QUIET();
	FILL_NODE();

	/* Each new directory block is block-device page cache, NOFAIL. */
	pid = mkdirs_bound(self->nid, mnt, 200);
	for (i = 0; i < 600 && !waitpid(pid, &status, WNOHANG); i++)
		usleep(100000);
	EXPECT_LT(i, 600) TH_LOG("200 mkdirs under the bind still not done after 60 s");
	if (i == 600) {
		kill(pid, SIGKILL);
		reap(pid);
	} else {
		EXPECT_EQ(0, status) TH_LOG("mkdirs: status %#x", status);
	}
}

TEST_F(pg, migrate_pages_masks)
{
	unsigned long old, new = 1UL << 1;
	size_t len = 4 * MB;
	char *p;

	if (!nu_in_nodelist("has_memory", 1))
		NU_SKIP(return, "needs normal nodes 0 and 1");
	CLAIM(0, "movable", 0);
	p = nu_anon_bound(len, MPOL_BIND, 0, SEED);
	ASSERT_NE(NULL, p);
	nu_mbind(p, len, MPOL_DEFAULT, NULL, 0, 0);
	/* "All nodes with memory" to node 1: the private one is left out. */
	old = 1UL | 1UL << self->nid;
	EXPECT_LE(0, nu_migrate_pages(0, NU_MAX_NODES, &old, &new))
		TH_LOG("migrate_pages: %s", strerror(errno));
	EXPECT_EQ((long)(len / PAGE), nu_pages_on(p, len, 1));
	/* Naming only the node still fails. */
	old = 1UL << self->nid;
	EXPECT_EQ(-1, nu_migrate_pages(0, NU_MAX_NODES, &old, &new));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_TRUE(nu_intact(p, len, SEED));
	munmap(p, len);
}

TEST_HARNESS_MAIN
