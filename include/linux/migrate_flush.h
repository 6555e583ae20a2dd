/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Deferred TLB shootdown for the migration paths that flush per PTE.
 * See mm/migrate_flush.c.
 */
#ifndef _LINUX_MIGRATE_FLUSH_H
#define _LINUX_MIGRATE_FLUSH_H

#include <linux/hugetlb.h>
#include <linux/jump_label.h>
#include <linux/migrate_mode.h>
#include <linux/mm.h>
#include <linux/rmap.h>
#include <asm/tlbflush.h>

/*
 * migrate_pages_sync()'s per-folio fallback, as batches: a leader and
 * the followers migrate_fallback_next() finds for it, or one folio.
 */
struct migrate_fallback {
	struct list_head solo;	/* left busy by a group: a batch each, later */
	bool grouping;		/* groups are still formed */
	int grouped;		/* followers in the batch in flight */
};

#define MIGRATE_FALLBACK_INIT(name)					\
	{ .solo = LIST_HEAD_INIT((name).solo), .grouping = true }

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
 * folio has several mappings, or several pages, or shares a fallback
 * group with other folios: @grouped), and migrate_pages_batch() runs them
 * as one round before any folio is copied.  A folio alone in its batch and
 * mapped once keeps its single precise flush.
 */
static inline enum ttu_flags migrate_unmap_ttu_flags(enum migrate_mode mode,
						     struct folio *src,
						     bool grouped)
{
	if (mode == MIGRATE_ASYNC || grouped)
		return TTU_BATCH_FLUSH;
	if (migrate_defer_flush_enabled() &&
	    (folio_test_large(src) || folio_mapcount(src) > 1))
		return TTU_BATCH_FLUSH;
	return 0;
}

int migrate_fallback_group(struct list_head *from, struct list_head *batch);
void migrate_fallback_next(struct migrate_fallback *fb, struct list_head *from,
			   struct list_head *batch);
int migrate_fallback_done(struct migrate_fallback *fb, struct list_head *from,
			  struct list_head *batch, int rc, int *nr_failed_pages);

/*
 * The mode migrate_pages_batch() unmaps the next folio of a batch in.  In
 * a fallback group (@grouped) only a folio locked while no other folio is
 * (@unmapped empty) may sleep on its lock or its writeback; after that
 * the batch only trylocks, so it never waits on one folio while holding
 * another (a follower under writeback is then given back, see
 * migrate_folio_unmap()).
 */
static inline enum migrate_mode migrate_group_unmap_mode(enum migrate_mode mode,
							 bool grouped,
							 struct list_head *unmapped)
{
	return grouped && !list_empty(unmapped) ? MIGRATE_ASYNC : mode;
}

/*
 * try_to_migrate() flags for a hugetlb folio, given the @ttu that
 * the hugetlb migration chose: queue the flushes of a folio mapped more
 * than once, which migrate_hugetlb_unmap() runs as one round right after
 * try_to_migrate().  The hugetlb walkers that can modify or
 * remove a migration entry and return to user space without flushing it,
 * __unmap_hugepage_range() (munmap, MADV_DONTNEED, truncation) and
 * hugetlb_change_protection() (mprotect, uffd-wp), call
 * flush_tlb_batched_pending() under the entry's lock;
 * move_hugetlb_page_tables() flushes every entry it moves.  For a file
 * folio all of them also wait for the i_mmap_rwsem that its migration
 * holds until after the flush.  x86
 * only (see migrate_defer_huge()).
 */
static inline enum ttu_flags migrate_hugetlb_ttu_flags(struct folio *src,
						       enum ttu_flags ttu)
{
	if (IS_ENABLED(CONFIG_X86) && migrate_defer_flush_enabled() &&
	    folio_mapcount(src) > 1)
		return ttu | TTU_BATCH_FLUSH;
	return ttu;
}

/*
 * Defer the flush of a PMD or hugetlb entry that try_to_migrate() clears
 * with @flags?  x86 only: its queued flush invalidates whole TLBs, while
 * arm64 queues invalidations of the range with a page stride and a
 * last-level hint, which need not hit a block entry.  With
 * TTU_BATCH_FLUSH, as every asynchronous batch passes, a PMD mapped once
 * joins the batch's full flush too, as the batch's small folios do.
 */
static inline bool migrate_defer_huge(struct mm_struct *mm,
				      enum ttu_flags flags)
{
#if defined(CONFIG_X86) && defined(CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH)
	return migrate_defer_flush_enabled() && (flags & TTU_BATCH_FLUSH) &&
	       arch_tlbbatch_should_defer(mm);
#else
	return false;
#endif
}
#else
static inline bool migrate_defer_flush_enabled(void)
{
	return false;
}

static inline enum ttu_flags migrate_unmap_ttu_flags(enum migrate_mode mode,
						     struct folio *src,
						     bool grouped)
{
	return mode == MIGRATE_ASYNC ? TTU_BATCH_FLUSH : 0;
}

static inline enum ttu_flags migrate_hugetlb_ttu_flags(struct folio *src,
						       enum ttu_flags ttu)
{
	return ttu;
}

static inline int migrate_fallback_group(struct list_head *from,
					 struct list_head *batch)
{
	return 0;
}

static inline void migrate_fallback_next(struct migrate_fallback *fb,
					 struct list_head *from,
					 struct list_head *batch)
{
	list_move(from->next, batch);
}

static inline int migrate_fallback_done(struct migrate_fallback *fb,
					struct list_head *from,
					struct list_head *batch, int rc,
					int *nr_failed_pages)
{
	return rc;
}

static inline bool migrate_defer_huge(struct mm_struct *mm,
				      enum ttu_flags flags)
{
	return false;
}

static inline enum migrate_mode migrate_group_unmap_mode(enum migrate_mode mode,
							 bool grouped,
							 struct list_head *unmapped)
{
	return mode;
}
#endif

/*
 * Is migrate_pages_batch() given a fallback group?  An asynchronous batch
 * may hold many folios; a synchronous one holds one, unless it is a group.
 */
static inline bool migrate_batch_grouped(enum migrate_mode mode,
					 struct list_head *from)
{
	bool grouped = mode != MIGRATE_ASYNC && !list_empty(from) &&
		       !list_is_singular(from);

	VM_WARN_ON_ONCE(grouped && !IS_ENABLED(CONFIG_MIGRATE_DEFER_FLUSH));
	return grouped;
}

/*
 * How many passes migrate_pages_batch() unmaps in: a fallback group gets
 * one, and what it leaves (busy, or locked by someone else) goes back for
 * a batch of its own (migrate_fallback_done()), with all the passes the
 * per-folio fallback gives, rather than being tried in the group first.
 */
static inline int migrate_unmap_passes(int nr_pass, bool grouped)
{
	return grouped ? 1 : nr_pass;
}

/*
 * What migrate_folio_unmap() returns for a folio under writeback that it
 * may not wait for: a group's follower (unmapped asynchronously, see
 * migrate_group_unmap_mode()) is tried again, in a batch of its own once
 * the groups are done; any other folio has failed.
 */
static inline int migrate_writeback_busy(enum migrate_mode mode, bool grouped)
{
	return grouped && mode == MIGRATE_ASYNC ? -EAGAIN : -EBUSY;
}

#ifdef CONFIG_MIGRATE_DEFER_FLUSH
void migrate_defer_flush_pmd(struct mm_struct *mm, pmd_t pmdval,
			     unsigned long uaddr);
void migrate_defer_flush_huge(struct mm_struct *mm, pte_t pteval,
			      unsigned long addr, unsigned long size);
#else
static inline void migrate_defer_flush_pmd(struct mm_struct *mm, pmd_t pmdval,
					   unsigned long uaddr)
{
}

static inline void migrate_defer_flush_huge(struct mm_struct *mm, pte_t pteval,
					    unsigned long addr,
					    unsigned long size)
{
}
#endif

/*
 * Clear the hugetlb entry at @addr of @vma, which maps a folio of @sz
 * bytes being migrated, and return it: its flush queued when
 * migrate_defer_huge() allows, else done now.  Without
 * CONFIG_HUGETLB_PAGE there are no hugetlb folios.
 */
static inline pte_t migrate_hugetlb_clear(struct vm_area_struct *vma,
					  unsigned long addr, pte_t *ptep,
					  unsigned long sz,
					  enum ttu_flags flags)
{
#ifdef CONFIG_HUGETLB_PAGE
	if (migrate_defer_huge(vma->vm_mm, flags)) {
		pte_t pteval = huge_ptep_get_and_clear(vma->vm_mm, addr, ptep,
						       sz);

		migrate_defer_flush_huge(vma->vm_mm, pteval, addr, sz);
		return pteval;
	}
#endif
	return huge_ptep_clear_flush(vma, addr, ptep);
}

#ifdef CONFIG_MIGRATE_DEFER_FLUSH
void migrate_hugetlb_unmap(struct folio *src, enum ttu_flags ttu);
#else
static inline void migrate_hugetlb_unmap(struct folio *src, enum ttu_flags ttu)
{
	try_to_migrate(src, ttu);
}
#endif

#ifdef CONFIG_MIGRATE_DEFER_FLUSH_DEBUG
bool migrate_flush_skip_async_pass(void);
void migrate_flush_debug_delay(void);
#else
static inline bool migrate_flush_skip_async_pass(void)
{
	return false;
}

static inline void migrate_flush_debug_delay(void)
{
}
#endif

#endif /* _LINUX_MIGRATE_FLUSH_H */
