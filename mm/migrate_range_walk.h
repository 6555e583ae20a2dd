/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The page-table side of a run of order-0 folios that share an rmap
 * (one anon_vma or one file mapping) in ascending index order: visit,
 * in one VMA, the PTE that maps each folio of the run, a PTE table at a
 * time.  Used by the range unmap and remap (mm/migrate_range.c) and by
 * ROCM's switch of a run (mm/migrate_rocm.c).
 */
#ifndef _MM_MIGRATE_RANGE_WALK_H
#define _MM_MIGRATE_RANGE_WALK_H

#include <linux/mm.h>
#include <linux/rmap.h>

#include "internal.h"
#include "migrate_range_compat.h"

/* A pass over the part of a run that one VMA maps. */
struct migrate_range_walk {
	struct vm_area_struct *vma;
	struct folio *src;	/* the run's first folio */
	struct folio *dst;	/* its destination: remap and ROCM only */
	unsigned int nr;
	unsigned int locked;	/* remap: entries left in VM_LOCKED VMAs */
	/*
	 * What to do to the PTE that may map @src, the run's @i-th folio,
	 * under its table's lock; true if it did.
	 */
	bool (*pte)(struct migrate_range_walk *w, struct folio *src,
		    struct folio *dst, unsigned int i, unsigned long addr,
		    pte_t *ptep);
	/* if set, called before each table's lock is dropped */
	void (*table_done)(struct migrate_range_walk *w);
};

/*
 * Call w->pte() for each folio of the run at its address in w->vma, a
 * PTE table at a time (one walk down and one lock per table).  Without a
 * @dst (the unmap) folios no longer mapped are skipped.  Returns how many
 * calls returned true.
 * Inlined into its callers (the callbacks stay indirect calls).
 */
static __always_inline unsigned int
migrate_range_walk_ptes(struct migrate_range_walk *w)
{
	struct mm_struct *mm = w->vma->vm_mm;
	struct folio *src = w->src, *dst = w->dst;
	unsigned long table = -1UL;
	unsigned int i, done = 0;
	spinlock_t *ptl = NULL;
	pte_t *ptes = NULL;

	for (i = 0; i < w->nr; i++) {
		unsigned long addr = migrate_range_address(w->vma, src);
		pmd_t *pmd;

		if (!IS_ERR_VALUE(addr) && (dst || folio_mapped(src))) {
			if ((addr & PMD_MASK) != table) {
				if (ptes) {
					if (w->table_done)
						w->table_done(w);
					pte_unmap_unlock(ptes, ptl);
				}
				table = addr & PMD_MASK;
				pmd = mm_find_pmd(mm, table);
				ptes = pmd ? pte_offset_map_lock(mm, pmd, table,
								 &ptl) : NULL;
			}
			/* no PTE table here (none, or a huge PMD): nothing */
			if (ptes)
				done += w->pte(w, src, dst, i, addr,
					       ptes + pte_index(addr));
		}
		src = list_next_entry(src, lru);
		if (dst)
			dst = list_next_entry(dst, lru);
	}
	if (ptes) {
		if (w->table_done)
			w->table_done(w);
		pte_unmap_unlock(ptes, ptl);
	}
	return done;
}

/*
 * The notifier range of the run's part in @vma: from the first to the
 * last page of a folio still mapped.  False if there is none.
 */
static inline bool migrate_range_span(struct vm_area_struct *vma,
				      struct folio *folio, unsigned int nr,
				      unsigned long *start, unsigned long *end)
{
	unsigned int i;

	*start = -EFAULT;
	for (i = 0; i < nr; i++, folio = list_next_entry(folio, lru)) {
		unsigned long addr = migrate_range_address(vma, folio);

		if (IS_ERR_VALUE(addr) || !folio_mapped(folio))
			continue;
		if (IS_ERR_VALUE(*start))
			*start = addr;
		*end = addr + PAGE_SIZE;
	}
	return !IS_ERR_VALUE(*start);
}

#endif /* _MM_MIGRATE_RANGE_WALK_H */
