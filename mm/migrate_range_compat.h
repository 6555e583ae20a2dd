/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the range unmap and remap (mm/migrate_range.c) and ROCM
 * (mm/migrate_rocm.c) need of the base's rmap and page-table helpers, for
 * Linux 7.3: anon folios are found by their anon pgoff in the anon_vma's
 * rmap tree, migration and device entries are read as softleaf entries,
 * and a PTE's userfaultfd bit is pte_uffd() (which with UFFD RWP also
 * asks for PAGE_NONE on the way back in).  lts/6.12/ holds the same
 * header for 6.12.
 */
#ifndef _MM_MIGRATE_RANGE_COMPAT_H
#define _MM_MIGRATE_RANGE_COMPAT_H

#include <linux/leafops.h>
#include <linux/migrate_range.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/swapops.h>
#include <linux/userfaultfd_k.h>

#include "internal.h"

#define migrate_range_anon_foreach(avc, anon_vma, first, last) \
	anon_rmap_tree_foreach(avc, anon_vma, first, last)
#define migrate_range_file_foreach(vma, mapping, first, last) \
	mapping_rmap_tree_foreach(vma, mapping, first, last)

/* Where @vma maps @folio (order 0), or -EFAULT. */
static inline unsigned long migrate_range_address(struct vm_area_struct *vma,
						  struct folio *folio)
{
	pgoff_t start = folio_test_anon(folio) ? vma_start_anon_pgoff(vma) :
						 vma_start_pgoff(vma);

	return __vma_address(vma, folio_pgoff(folio), start, 1);
}

/*
 * If @pte holds a migration entry for @pfn, its MIGRATE_RANGE_ENTRY_*
 * bits (include/linux/migrate_range.h); else -1.
 */
static inline int migrate_range_entry(pte_t pte, unsigned long pfn)
{
	softleaf_t entry = softleaf_from_pte(pte);

	if (!softleaf_is_migration(entry) || softleaf_to_pfn(entry) != pfn)
		return -1;
	return (softleaf_is_migration_young(entry) ?
			MIGRATE_RANGE_ENTRY_YOUNG : 0) |
	       (softleaf_is_migration_dirty(entry) ?
			MIGRATE_RANGE_ENTRY_DIRTY : 0) |
	       (softleaf_is_migration_write(entry) ?
			MIGRATE_RANGE_ENTRY_WRITE : 0) |
	       (softleaf_is_migration_read(entry) ?
			MIGRATE_RANGE_ENTRY_READ : 0);
}

/* The soft-dirty and uffd bits of the present @pte onto @swp_pte. */
static inline pte_t migrate_range_swp_bits(pte_t swp_pte, pte_t pte)
{
	if (pte_soft_dirty(pte))
		swp_pte = pte_swp_mksoft_dirty(swp_pte);
	if (pte_uffd(pte))
		swp_pte = pte_swp_mkuffd(swp_pte);
	return swp_pte;
}

/*
 * The uffd bit of the migration entry @old onto @pte, unless it comes
 * back writable (as remove_migration_pte()); and with UFFD RWP the
 * PAGE_NONE protection do_swap_page() would restore.
 */
static inline pte_t migrate_range_uffd_bits(struct vm_area_struct *vma,
					    pte_t pte, pte_t old, bool write)
{
	if (!write && pte_swp_uffd(old))
		pte = pte_mkuffd(pte);
	if (pte_swp_uffd(old) && userfaultfd_rwp(vma))
		pte = pte_modify(pte, PAGE_NONE);
	return pte;
}

/* What mm/migrate.c recorded of a batch's folio in its destination @dst. */
static inline unsigned long migrate_folio_info(struct folio *dst)
{
	return dst->migrate_info;
}

#ifdef CONFIG_ARM64
/* Queue the TLBI of the page at @addr (ROCM's batched breaks). */
static inline void
migrate_rocm_tlbbatch_add(struct arch_tlbflush_unmap_batch *batch,
			  struct mm_struct *mm, unsigned long addr)
{
	arch_tlbbatch_add_pending(batch, mm, addr, addr + PAGE_SIZE);
}
#endif

/* KUnit: give @pte the uffd bit; test it; give @vma UFFD RWP if it can */
static inline pte_t migrate_rocm_test_mkuffd(pte_t pte)
{
	return pte_mkuffd(pte);
}

static inline bool migrate_rocm_test_uffd(pte_t pte)
{
	return pte_uffd(pte);
}

static inline bool migrate_rocm_test_set_rwp(struct vm_area_struct *vma)
{
	vma_set_flags_mask(vma, VMA_UFFD_RWP);
	return userfaultfd_rwp(vma);
}

/* The tag of a KSM folio's ->mapping */
#define MIGRATE_MAPPING_KSM	FOLIO_MAPPING_KSM
/* shmem_file_setup()'s flags for a file that reserves nothing (KUnit) */
#define MIGRATE_SHMEM_NORESERVE	mk_vma_flags(VMA_NORESERVE_BIT)

/* Does @folio, isolated, belong to a movable_ops driver (not the LRU)? */
static inline bool migrate_folio_movable_ops(struct folio *folio)
{
	return page_has_movable_ops(&folio->page);
}

/*
 * ROCM: the uffd bit of the present PTE @old onto its replacement @pte,
 * with UFFD RWP's PAGE_NONE protection, as remove_migration_pte() gives
 * it back.
 */
static inline pte_t migrate_rocm_uffd_bits(struct vm_area_struct *vma,
					   pte_t pte, pte_t old)
{
	if (!pte_uffd(old))
		return pte;
	pte = pte_mkuffd(pte);
	if (userfaultfd_rwp(vma))
		pte = pte_modify(pte, PAGE_NONE);
	return pte;
}

/* Is the non-present @pte a device-private or device-exclusive entry of @pfn? */
static inline bool migrate_rocm_device_entry(pte_t pte, unsigned long pfn)
{
	softleaf_t entry = softleaf_from_pte(pte);

	return (softleaf_is_device_private(entry) ||
		softleaf_is_device_exclusive(entry)) &&
	       softleaf_to_pfn(entry) == pfn;
}

/* A write-fenced folio lands read-only (mm/node_private.c). */
static inline bool migrate_range_write_fenced(struct folio *folio)
{
	return folio_write_fenced(folio);
}

#endif /* _MM_MIGRATE_RANGE_COMPAT_H */
