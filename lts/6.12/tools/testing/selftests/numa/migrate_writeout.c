// SPDX-License-Identifier: GPL-2.0
/*
 * migrate_writeout: migration never copies a page-cache folio that is
 * still mapped.
 *
 * A filesystem with ->writepage but no ->migrate_folio migrates its
 * folios through fallback_migrate_folio().  On 6.12, writeout() maps a
 * dirty folio again, writes it and returns -EAGAIN, and the retry finds
 * the folio clean.  Without a mapped-source check before the copy the
 * retry copies it while the task still has its writable PTE: the copy
 * takes the folio's place in the page cache, the task goes on storing
 * into the old folio, and those stores never reach the file.
 *
 * eCryptfs, over a tmpfs of its own, is such a filesystem.  Each page of
 * a MAP_SHARED mapping is stored to (dirty), moved to another node with
 * move_pages(2) (MIGRATE_SYNC, so writeout() runs), stored to again,
 * msync()ed and read back with pread(2): the second store must be there.
 * Periodic writeback is held off meanwhile (vm.dirty_writeback_centisecs
 * an hour, restored; not 0, with which the first dirty inode of the new
 * eCryptfs bdi wakes its flusher at once, and a bdi with no share of the
 * recent writeout is over its background threshold), so the pages are
 * dirty when they move and clean after the move only if writeout()
 * wrote them: both are checked (/proc/kpageflags), or the test would
 * pass without reaching the path.  The sysctl is written before eCryptfs
 * is mounted: writing a new non-zero value wakes every flusher that
 * exists at once (dirty_writeback_centisecs_handler()), and one woken
 * while the pages are being stored writes some of them back.
 * The second store must dirty the folios again (PG_dirty): writeout()
 * that leaves the PTEs it restores writable lets the store set only the
 * PTE's dirty bit, and fsync() would not write the page.
 *
 * Needs root, two nodes with memory and CONFIG_ECRYPT_FS (with
 * CONFIG_KEYS and CONFIG_CRYPTO_AES); SKIPs otherwise.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kernel-page-flags.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "../kselftest_harness.h"
#include "numa_util.h"

#define NR		64
#define PAGE		4096UL
#define WB_SYSCTL	"/proc/sys/vm/dirty_writeback_centisecs"
#define PFN_MASK	((1ULL << 55) - 1)
#define STORE(n, i)	(0x6d77000000000000ULL | (uint64_t)(n) << 32 | (i))

/*
 * eCryptfs finds its key as a "user" key named by the mount's 16-hex-digit
 * signature, whose payload is the kernel's struct ecryptfs_auth_tok
 * (include/linux/ecryptfs.h), version 0x0004, a password token with the
 * key-encryption key set.  The layout below is that struct's: the kernel
 * packs it, and its fields fall on their natural alignment anyway.
 */
#define EC_SIG		"6d77726974656f75"
#define EC_KEY_BYTES	16

struct ec_session_key {
	uint32_t flags;
	uint32_t encrypted_key_size;
	uint32_t decrypted_key_size;
	uint8_t encrypted_key[512];
	uint8_t decrypted_key[64];
};

struct ec_password {
	uint32_t password_bytes;
	int32_t hash_algo;
	uint32_t hash_iterations;
	uint32_t kek_bytes;
	uint32_t flags;			/* 0x02: kek set */
	uint8_t kek[64];
	uint8_t signature[17];
	uint8_t salt[8];
};

struct ec_auth_tok {
	uint16_t version;
	uint16_t token_type;		/* 0: password */
	uint32_t flags;
	struct ec_session_key session_key;
	uint8_t reserved[32];
	struct ec_password password;
};

static_assert(sizeof(struct ec_password) == 112, "ecryptfs password");
static_assert(offsetof(struct ec_auth_tok, password) == 628, "auth_tok");
static_assert(sizeof(struct ec_auth_tok) == 740, "auth_tok size");

/* Mount eCryptfs over @lower at @upper; -errno, with @why set, if not. */
static int ecryptfs_mount(const char *lower, const char *upper,
			  const char **why)
{
	struct ec_auth_tok tok = {
		.version = 0x0004,
		.password = { .kek_bytes = EC_KEY_BYTES, .flags = 0x02 },
	};
	char opts[128];

	memset(tok.password.kek, 0x5a, EC_KEY_BYTES);
	memcpy(tok.password.signature, EC_SIG, 16);
	/* KEY_SPEC_PROCESS_KEYRING: gone with the test's process */
	if (syscall(__NR_add_key, "user", EC_SIG, &tok, sizeof(tok), -2) < 0) {
		*why = "add_key";
		return -errno;
	}
	snprintf(opts, sizeof(opts),
		 "ecryptfs_sig=%s,ecryptfs_cipher=aes,ecryptfs_key_bytes=%d",
		 EC_SIG, EC_KEY_BYTES);
	if (mount(lower, upper, "ecryptfs", 0, opts)) {
		*why = "mount -t ecryptfs";
		return -errno;
	}
	return 0;
}

/* How many of the NR pages from @p have PG_dirty set; -1 if unknown. */
static int nr_dirty(const char *p)
{
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kflags = open("/proc/kpageflags", O_RDONLY);
	int i, n = pagemap < 0 || kflags < 0 ? -1 : 0;
	uint64_t e, f;

	for (i = 0; i < NR && n >= 0; i++) {
		off_t off = ((uintptr_t)p / PAGE + i) * sizeof(e);

		if (pread(pagemap, &e, sizeof(e), off) != sizeof(e) ||
		    !(e & PFN_MASK) ||
		    pread(kflags, &f, sizeof(f), (e & PFN_MASK) * sizeof(f)) !=
		    sizeof(f))
			n = -1;
		else
			n += !!(f & (1ULL << KPF_DIRTY));
	}
	if (pagemap >= 0)
		close(pagemap);
	if (kflags >= 0)
		close(kflags);
	return n;
}

static void store(char *p, int n)
{
	for (int i = 0; i < NR; i++)
		*(uint64_t *)(p + i * PAGE) = STORE(n, i);
}

FIXTURE(mw) {
	int from, to, fd;
	char *p;
	char dir[64], lower[80], upper[80], wb_was[32];
	bool lower_mounted, upper_mounted;
};

FIXTURE_SETUP(mw)
{
	struct nu_topo topo;

	self->fd = -1;
	self->p = MAP_FAILED;
	self->lower_mounted = false;
	self->upper_mounted = false;
	self->wb_was[0] = '\0';
	snprintf(self->dir, sizeof(self->dir), "/tmp/migrate_writeout.XXXXXX");
	if (geteuid())
		NU_SKIP(return, "needs root (mount, /proc/kpageflags)");
	if (nu_topo_read(&topo) || topo.nr_eligible < 2)
		NU_SKIP(return, "needs two nodes with memory");
	self->from = topo.node[topo.eligible[0]].id;
	self->to = topo.node[topo.eligible[1]].id;
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->lower, sizeof(self->lower), "%s/lower", self->dir);
	snprintf(self->upper, sizeof(self->upper), "%s/upper", self->dir);
	/*
	 * Undone last first when the test dies before its teardown (a
	 * timeout), or when a setup that fails gets none.
	 */
	ASSERT_EQ(0, nu_undo_rmdir(self->dir));
	ASSERT_EQ(0, nu_undo_rmdir(self->lower));
	ASSERT_EQ(0, nu_undo_rmdir(self->upper));
	ASSERT_EQ(0, mkdir(self->lower, 0700));
	ASSERT_EQ(0, mkdir(self->upper, 0700));
}

FIXTURE_TEARDOWN(mw)
{
	if (self->p != MAP_FAILED)
		munmap(self->p, NR * PAGE);
	if (self->fd >= 0)
		close(self->fd);
	if (self->upper_mounted)
		umount(self->upper);
	if (self->lower_mounted)
		umount(self->lower);
	rmdir(self->upper);
	rmdir(self->lower);
	rmdir(self->dir);
	if (self->wb_was[0])
		nu_write_str(WB_SYSCTL, self->wb_was);
	nu_undo_done();
}

static bool has_ecryptfs(void)
{
	char buf[4096];

	return nu_read_all("/proc/filesystems", buf, sizeof(buf)) > 0 &&
	       strstr(buf, "\tecryptfs\n");
}

/* The file, NR pages written and synced, mapped shared, on self->from. */
static void setup_file(struct __test_metadata *_metadata,
		       FIXTURE_DATA(mw) *self)
{
	char path[96], zero[PAGE] = { 0 };
	void *addr[NR];
	int nodes[NR], status[NR];
	const char *why = "";
	int i, rc;

	if (!has_ecryptfs())
		NU_SKIP(return, "no ecryptfs in /proc/filesystems (CONFIG_ECRYPT_FS)");
	/* before the mount: its flusher must not be the one this wakes */
	ASSERT_LT(0, nu_read_str(WB_SYSCTL, self->wb_was,
				 sizeof(self->wb_was)));
	ASSERT_EQ(0, nu_undo_knob(WB_SYSCTL));
	ASSERT_EQ(0, nu_write_str(WB_SYSCTL, "360000"));
	ASSERT_EQ(0, nu_undo_umount(self->lower));
	ASSERT_EQ(0, mount("tmpfs", self->lower, "tmpfs", 0, "size=4m"));
	self->lower_mounted = true;
	ASSERT_EQ(0, nu_undo_umount(self->upper));
	rc = ecryptfs_mount(self->lower, self->upper, &why);
	if (rc == -ENOSYS)
		NU_SKIP(return, "%s: %s (CONFIG_KEYS)", why, strerror(-rc));
	/* EINVAL: no AES (CONFIG_CRYPTO_AES), or a key this test got wrong */
	ASSERT_EQ(0, rc) TH_LOG("%s: %s", why, strerror(-rc));
	self->upper_mounted = true;
	snprintf(path, sizeof(path), "%s/file", self->upper);
	self->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, self->fd);
	for (i = 0; i < NR; i++)
		ASSERT_EQ(PAGE, pwrite(self->fd, zero, PAGE, i * PAGE));
	ASSERT_EQ(0, fsync(self->fd));
	self->p = mmap(NULL, NR * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->p);
	/* map each page: move_pages() moves only what is mapped */
	nu_read_pages(self->p, NR * PAGE);
	for (i = 0; i < NR; i++) {
		addr[i] = self->p + i * PAGE;
		nodes[i] = self->from;
	}
	ASSERT_LE(0, nu_move_pages_where(0, NR, addr, nodes, status,
					 MPOL_MF_MOVE));
	for (i = 0; i < NR && status[i] == self->from; i++)
		;
	ASSERT_EQ(NR, i) TH_LOG("page %d: status %d", i, status[i]);
}

TEST_F_TIMEOUT(mw, second_store_reaches_the_file, 120)
{
	int nodes[NR], status[NR], i, dirty, moved = 0, bad = 0;
	void *addr[NR];
	uint64_t v;

	setup_file(_metadata, self);
	if (_metadata->exit_code == KSFT_SKIP)
		return;
	store(self->p, 1);
	dirty = nr_dirty(self->p);
	if (dirty < 0)
		NU_SKIP(return, "cannot read /proc/kpageflags");
	ASSERT_EQ(NR, dirty) TH_LOG("pages dirty before the move");
	for (i = 0; i < NR; i++) {
		addr[i] = self->p + i * PAGE;
		nodes[i] = self->to;
	}
	ASSERT_LE(0, nu_move_pages_where(0, NR, addr, nodes, status,
					 MPOL_MF_MOVE));
	for (i = 0; i < NR; i++)
		moved += status[i] == self->to;
	/* clean now only if writeout() wrote them: the path was reached */
	EXPECT_EQ(0, nr_dirty(self->p)) TH_LOG("pages dirty after the move");
	store(self->p, 2);
	dirty = nr_dirty(self->p);
	TH_LOG("pages dirty after the second store: %d of %d", dirty, NR);
	EXPECT_EQ(NR, dirty) TH_LOG("a store that fsync() would not write");
	ASSERT_EQ(0, msync(self->p, NR * PAGE, MS_SYNC));
	for (i = 0; i < NR; i++) {
		ASSERT_EQ(sizeof(v), pread(self->fd, &v, sizeof(v), i * PAGE));
		if (v != STORE(2, i) && bad++ < 4)
			TH_LOG("page %d: the file has %#llx, the mapping %#llx",
			       i, (unsigned long long)v,
			       (unsigned long long)STORE(2, i));
	}
	TH_LOG("%d of %d pages moved to node %d", moved, NR, self->to);
	EXPECT_EQ(0, bad) TH_LOG("stores after the move lost in %d pages",
				 bad);
}

TEST_HARNESS_MAIN
