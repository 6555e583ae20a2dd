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
 * try_to_unmap_flush() makes them one round per folio.  A folio mapped
 * once keeps its precise single-page flush: the batched one flushes whole
 * TLBs.
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
 * lock, as they do for reclaim.  PMD mappings still flush in
 * set_pmd_migration_entry().
 *
 * A file hugetlb folio mapped several times queues its flushes too and
 * unmap_and_move_huge_page() runs them right after try_to_migrate(),
 * while it still holds the i_mmap_rwsem that every hugetlb walker takes
 * for write (see migrate_hugetlb_ttu_flags()).  See
 * Documentation/mm/migrate_flush.rst.
 */

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/init.h>
#include <linux/migrate_flush.h>
#include <linux/sysctl.h>

DEFINE_STATIC_KEY_TRUE(migrate_defer_flush_key);

#ifdef CONFIG_SYSCTL
static struct ctl_table migrate_flush_sysctls[] = {
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
 * batch and its flush, so a test can act inside the window in which
 * other CPUs may still cache the unmapped entries.
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
