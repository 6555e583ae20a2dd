/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Deferred TLB shootdown for the migration paths that flush per PTE.
 * See mm/migrate_flush.c.
 */
#ifndef _LINUX_MIGRATE_FLUSH_H
#define _LINUX_MIGRATE_FLUSH_H

#include <linux/jump_label.h>
#include <linux/migrate_mode.h>
#include <linux/mm.h>
#include <linux/rmap.h>

#ifdef CONFIG_MIGRATE_DEFER_FLUSH
DECLARE_STATIC_KEY_TRUE(migrate_defer_flush_key);

static inline bool migrate_defer_flush_enabled(void)
{
	return static_branch_likely(&migrate_defer_flush_key);
}

/*
 * try_to_migrate() flags for migrate_folio_unmap().  MIGRATE_ASYNC batches
 * always queued their flushes; with vm.migrate_defer_flush the per-folio
 * MIGRATE_SYNC* fallback queues them too when that can save rounds (the
 * folio has several mappings, or several pages), and migrate_pages_batch()
 * runs them as one round before the folio is copied.  A folio mapped once
 * keeps its single precise flush.
 */
static inline enum ttu_flags migrate_unmap_ttu_flags(enum migrate_mode mode,
						     struct folio *src)
{
	if (mode == MIGRATE_ASYNC)
		return TTU_BATCH_FLUSH;
	if (migrate_defer_flush_enabled() &&
	    (folio_test_large(src) || folio_mapcount(src) > 1))
		return TTU_BATCH_FLUSH;
	return 0;
}
#else
static inline bool migrate_defer_flush_enabled(void)
{
	return false;
}

static inline enum ttu_flags migrate_unmap_ttu_flags(enum migrate_mode mode,
						     struct folio *src)
{
	return mode == MIGRATE_ASYNC ? TTU_BATCH_FLUSH : 0;
}
#endif

#ifdef CONFIG_MIGRATE_DEFER_FLUSH_DEBUG
bool migrate_flush_skip_async_pass(void);
#else
static inline bool migrate_flush_skip_async_pass(void)
{
	return false;
}
#endif

#endif /* _LINUX_MIGRATE_FLUSH_H */
