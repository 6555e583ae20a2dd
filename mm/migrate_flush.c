// SPDX-License-Identifier: GPL-2.0
/*
 * Deferred TLB shootdown for the migration paths that flush per PTE.
 *
 * migrate_pages() unmaps a MIGRATE_ASYNC batch with TTU_BATCH_FLUSH: each
 * PTE that try_to_migrate() clears only queues its TLB flush, and
 * migrate_pages_batch() runs one round (try_to_unmap_flush()) for the
 * whole batch before it copies any folio.  The per-folio fallback of
 * MIGRATE_SYNC and MIGRATE_SYNC_LIGHT (migrate_pages_sync(): the folios
 * the async pass could not move, one batch each) unmapped with flags 0,
 * so every present PTE was flushed on its own: on x86 a folio mapped by K
 * processes running on other CPUs cost K rounds of IPIs.  With
 * vm.migrate_defer_flush (on by default) the fallback queues the flushes
 * of a folio with several mappings or pages, and the same
 * try_to_unmap_flush() makes them one round per folio.  Folios the
 * fallback groups (migrate_fallback_group()) all queue theirs, so a group
 * costs one round.  A folio alone in its batch and mapped once keeps its
 * precise single-page flush: the batched one flushes whole TLBs.
 *
 * A folio that is fully unmapped stays locked, with migration entries,
 * until migrate_folio_move() copies it after the flush, as in an async
 * batch.  A folio that stays partly mapped (a racing fault, a pin) has
 * its entries restored to the same page with its flush still queued; the
 * stale entries point at the folio that is mapped there again, and the
 * batch's end (migrate_pages_batch()'s out: label) flushes whatever is
 * left, so nothing queued outlives the batch.  Page-table walkers that
 * could return to user space with a stale entry (mprotect, munmap,
 * mremap, madvise) call flush_tlb_batched_pending() under the page-table
 * lock, as they do for reclaim.
 *
 * That restore is the one place where a folio is unlocked (by the undo of
 * migrate_folio_unmap()) while its flush is still queued.  It is safe
 * because the restored PTEs map the same PFN with the same bits as the
 * stale TLB entries and the folio stays isolated until the batch ends:
 * nothing may build on "no folio is unlocked before the batch's flush".
 *
 * On x86, PMD mappings defer too: set_pmd_migration_entry() invalidates
 * without flushing and queues the flush (migrate_defer_huge()), and the
 * PMD walkers that can act on the entry (change_huge_pmd(),
 * move_huge_pmd(), the PMD split) call flush_tlb_batched_pending();
 * zap_huge_pmd() has the mmu_gather flush the entry's range.  Elsewhere
 * set_pmd_migration_entry() flushes at once.
 *
 * A hugetlb folio mapped several times queues its flushes on x86 and
 * migrate_hugetlb_unmap() runs them right after try_to_migrate()
 * (see migrate_hugetlb_ttu_flags()).  A file folio's walkers also wait
 * for the i_mmap_rwsem its migration holds until after that flush; the
 * migration of an anon folio holds no lock its walkers take, so there
 * the deferral rests only on the flush_tlb_batched_pending() calls this
 * series adds to hugetlb's zap
 * (__unmap_hugepage_range()) and change_protection
 * (hugetlb_change_protection()).  See Documentation/mm/migrate_flush.rst.
 */

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/init.h>
#include <linux/migrate_flush.h>
#include <linux/sysctl.h>

#include "internal.h"

DEFINE_STATIC_KEY_TRUE(migrate_defer_flush_key);

/* At most this many pages in a fallback group, as in an async batch. */
#define MIGRATE_GROUP_PAGES	512
/* Stop looking for followers after this many that may not join. */
#define MIGRATE_GROUP_REJECTS	64

/* What decides whether a folio may be in a fallback group. */
struct migrate_group_facts {
	bool movable_ops;	/* non-LRU movable: its own migrate_page() */
	bool anon;
	bool large;
	bool locked;		/* somebody holds its lock now */
	bool writeback;
};

/*
 * The rule: a group holds order-0 anon folios only.  Their move never
 * waits (migrate_folio(): no buffer heads, no writeout), which matters
 * because each moves while the others are locked; they are never split
 * (a split locks the folio, sleeping in a synchronous batch); and the
 * rule never has to look at a page-cache mapping, which an unlocked
 * folio does not pin.  The leader may then sleep for its lock and its
 * writeback, as the per-folio fallback does (it holds nothing else yet);
 * a follower must be unlocked and not under writeback now, because the
 * batch will only trylock it (and one that meets writeback after all is
 * given back for a batch of its own).
 */
static bool migrate_group_allows(const struct migrate_group_facts *f,
				 bool leader)
{
	if (f->movable_ops || !f->anon || f->large)
		return false;
	return leader || (!f->locked && !f->writeback);
}

/* The facts of @folio, read without its lock: a heuristic, rechecked. */
static void migrate_group_facts_of(struct folio *folio,
				   struct migrate_group_facts *f)
{
	/* as migrate_folio_unmap() reads it: racy, the folio is isolated */
	f->movable_ops = data_race(page_has_movable_ops(&folio->page));
	f->anon = folio_test_anon(folio);
	f->large = folio_test_large(folio);
	f->locked = folio_test_locked(folio);
	f->writeback = folio_test_writeback(folio);
}

static bool migrate_group_ok(struct folio *folio, bool leader)
{
	struct migrate_group_facts f;

	migrate_group_facts_of(folio, &f);
	return migrate_group_allows(&f, leader);
}

/**
 * migrate_fallback_group - followers for a synchronous fallback batch
 * @from: the folios the asynchronous pass left, after the leader
 * @batch: holds the leader
 *
 * migrate_pages_sync() retried each folio the asynchronous pass left in
 * a batch of its own, one TLB flush round each.  With the static key on,
 * folios that may share the leader's batch (migrate_group_allows()) move
 * from @from to @batch, up to MIGRATE_GROUP_PAGES pages, so their flushes
 * make one round.
 *
 * Return: how many folios joined the batch.
 */
int migrate_fallback_group(struct list_head *from, struct list_head *batch)
{
	struct folio *leader = list_first_entry(batch, struct folio, lru);
	int joined = 0, rejects = 0;
	struct folio *folio, *next;

	if (!migrate_defer_flush_enabled() || !migrate_group_ok(leader, true))
		return 0;
	list_for_each_entry_safe(folio, next, from, lru) {
		if (joined + 1 >= MIGRATE_GROUP_PAGES)
			break;
		if (!migrate_group_ok(folio, false)) {
			if (++rejects >= MIGRATE_GROUP_REJECTS)
				break;
			continue;
		}
		list_move_tail(&folio->lru, batch);
		joined++;
	}
	return joined;
}

/**
 * migrate_fallback_next - the next batch of the synchronous fallback
 * @fb: the fallback's state
 * @from: the folios still to try; the first leads the batch
 * @batch: an empty list, for the batch
 *
 * Moves the first folio of @from to @batch, and the folios that may share
 * its batch while @fb->grouping (migrate_fallback_group()).
 */
void migrate_fallback_next(struct migrate_fallback *fb, struct list_head *from,
			   struct list_head *batch)
{
	list_move(from->next, batch);
	fb->grouped = fb->grouping ? migrate_fallback_group(from, batch) : 0;
}

/**
 * migrate_fallback_done - a batch of the synchronous fallback is done
 * @fb: the fallback's state
 * @from: the folios still to try
 * @batch: what migrate_pages_batch() left of the batch
 * @rc: what migrate_pages_batch() returned for it
 * @nr_failed_pages: migrate_pages_batch()'s count of failed pages
 *
 * Folios of a group still on @batch stayed busy through every pass (a
 * follower is only trylocked, and so is the leader once a follower is
 * locked).  They move to @fb->solo, to get a batch each once the groups
 * are done, as the per-folio fallback would have given them, and what
 * migrate_pages_batch() counted as their failure is taken back: a group
 * holds order-0 folios only, one page each.  On an error (@rc < 0) the
 * folios of @fb->solo go back to @from, untried as the rest of it.
 *
 * Return: @rc, less the folios moved to @fb->solo.
 */
int migrate_fallback_done(struct migrate_fallback *fb, struct list_head *from,
			  struct list_head *batch, int rc, int *nr_failed_pages)
{
	struct folio *folio;
	int n = 0;

	if (fb->grouped && rc > 0) {
		list_for_each_entry(folio, batch, lru) {
			/* what migrate_fallback_group() let in */
			VM_WARN_ON_ONCE_FOLIO(folio_test_large(folio) ||
					      !folio_test_anon(folio), folio);
			*nr_failed_pages -= folio_nr_pages(folio);
			n++;
		}
		list_splice_tail_init(batch, &fb->solo);
		rc -= n;
	}
	if (rc < 0 || list_empty(from)) {
		list_splice_tail_init(&fb->solo, from);
		if (rc >= 0)
			fb->grouping = false;
	}
	return rc;
}

/*
 * Unmap the hugetlb folio @src for the hugetlb migration, which chose
 * @ttu: a folio mapped more than once queues its flushes (x86, see
 * migrate_hugetlb_ttu_flags()), and they are run here as one round.
 */
void migrate_hugetlb_unmap(struct folio *src, enum ttu_flags ttu)
{
	try_to_migrate(src, migrate_hugetlb_ttu_flags(src, ttu));
	migrate_flush_debug_delay();
	try_to_unmap_flush();
}

#ifdef CONFIG_SYSCTL
static const struct ctl_table migrate_flush_sysctls[] = {
	{
		.procname	= "migrate_defer_flush",
		.data		= &migrate_defer_flush_key.key,
		.mode		= 0644,
		.proc_handler	= proc_do_static_key,
	},
};
#endif

#ifdef CONFIG_MIGRATE_DEFER_FLUSH_DEBUG
static bool skip_async_pass;
static u32 flush_delay_ms;

/*
 * Test knob: migrate_pages_sync() skips its async batch pass, so every
 * folio takes the per-folio fallback (the path a test cannot otherwise
 * reach on demand).
 */
bool migrate_flush_skip_async_pass(void)
{
	return READ_ONCE(skip_async_pass);
}

/*
 * Test knob: migrate_pages_batch() sleeps this long between unmapping a
 * batch and its flush, and migrate_hugetlb_unmap() between unmapping a
 * hugetlb folio and its flush, so a test can act inside the window in
 * which other CPUs may still cache the unmapped entries.
 */
void migrate_flush_debug_delay(void)
{
	u32 ms = READ_ONCE(flush_delay_ms);

	if (ms)
		msleep(min(ms, 10000U));
}

static void __init migrate_flush_debugfs_init(void)
{
	struct dentry *dir = debugfs_create_dir("migrate_flush", NULL);

	debugfs_create_bool("skip_async_pass", 0600, dir, &skip_async_pass);
	debugfs_create_u32("flush_delay_ms", 0600, dir, &flush_delay_ms);
}
#else
static inline void migrate_flush_debugfs_init(void)
{
}
#endif

static int __init migrate_flush_init(void)
{
#ifdef CONFIG_SYSCTL
	register_sysctl_init("vm", migrate_flush_sysctls);
#endif
	migrate_flush_debugfs_init();
	return 0;
}
late_initcall(migrate_flush_init);

#ifdef CONFIG_MIGRATE_DEFER_FLUSH_KUNIT_TEST
#include "tests/migrate_flush_kunit.h"
#endif
