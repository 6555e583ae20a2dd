/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the range unmap and remap (mm/migrate_range.c) and ROCM
 * (mm/migrate_rocm.c) need of 6.12's rmap and page-table helpers: anon
 * folios are found in the anon_vma's interval tree by their index,
 * migration and device entries are swp_entry_t, and a PTE's userfaultfd
 * bit is pte_uffd_wp().
 */
#ifndef _MM_MIGRATE_RANGE_COMPAT_H
#define _MM_MIGRATE_RANGE_COMPAT_H

#include <linux/migrate_range.h>
#include <linux/mm.h>
#include <linux/node_private.h>
#include <linux/swapops.h>

#include "internal.h"

#define migrate_range_anon_foreach(avc, anon_vma, first, last) \
	anon_vma_interval_tree_foreach(avc, &(anon_vma)->rb_root, first, last)
#define migrate_range_file_foreach(vma, mapping, first, last) \
	vma_interval_tree_foreach(vma, &(mapping)->i_mmap, first, last)

/* Where @vma maps @folio (order 0), or -EFAULT. */
static inline unsigned long migrate_range_address(struct vm_area_struct *vma,
						  struct folio *folio)
{
	return vma_address(vma, folio->index, 1);
}

/*
 * If @pte holds a migration entry for @pfn, its MIGRATE_RANGE_ENTRY_*
 * bits (include/linux/migrate_range.h); else -1.
 */
static inline int migrate_range_entry(pte_t pte, unsigned long pfn)
{
	swp_entry_t entry;

	if (!is_swap_pte(pte))
		return -1;
	entry = pte_to_swp_entry(pte);
	if (!is_migration_entry(entry) || swp_offset_pfn(entry) != pfn)
		return -1;
	return (is_migration_entry_young(entry) ?
			MIGRATE_RANGE_ENTRY_YOUNG : 0) |
	       (is_migration_entry_dirty(entry) ?
			MIGRATE_RANGE_ENTRY_DIRTY : 0) |
	       (is_writable_migration_entry(entry) ?
			MIGRATE_RANGE_ENTRY_WRITE : 0) |
	       (is_readable_migration_entry(entry) ?
			MIGRATE_RANGE_ENTRY_READ : 0);
}

/* The soft-dirty and uffd-wp bits of the present @pte onto @swp_pte. */
static inline pte_t migrate_range_swp_bits(pte_t swp_pte, pte_t pte)
{
	if (pte_soft_dirty(pte))
		swp_pte = pte_swp_mksoft_dirty(swp_pte);
	if (pte_uffd_wp(pte))
		swp_pte = pte_swp_mkuffd_wp(swp_pte);
	return swp_pte;
}

/*
 * The uffd-wp bit of the migration entry @old onto @pte, unless it comes
 * back writable (as remove_migration_pte()).
 */
static inline pte_t migrate_range_uffd_bits(struct vm_area_struct *vma,
					    pte_t pte, pte_t old, bool write)
{
	if (!write && pte_swp_uffd_wp(old))
		pte = pte_mkuffd_wp(pte);
	return pte;
}

/* A write-fenced folio lands read-only (mm/node_private.c). */
static inline bool migrate_range_write_fenced(struct folio *folio)
{
	return folio_write_fenced(folio);
}

#ifdef CONFIG_ARM64
/* Queue the TLBI of the page at @addr (ROCM's batched breaks). */
static inline void
migrate_rocm_tlbbatch_add(struct arch_tlbflush_unmap_batch *batch,
			  struct mm_struct *mm, unsigned long addr)
{
	arch_tlbbatch_add_pending(batch, mm, addr);
}
#endif

/* KUnit: give @pte the uffd bit; test it; 6.12 has no UFFD RWP */
static inline pte_t migrate_rocm_test_mkuffd(pte_t pte)
{
	return pte_mkuffd_wp(pte);
}

static inline bool migrate_rocm_test_uffd(pte_t pte)
{
	return pte_uffd_wp(pte);
}

static inline bool migrate_rocm_test_set_rwp(struct vm_area_struct *vma)
{
	return false;
}

/* The tag of a KSM folio's ->mapping */
#define MIGRATE_MAPPING_KSM	PAGE_MAPPING_KSM
/* shmem_file_setup()'s flags for a file that reserves nothing (KUnit) */
#define MIGRATE_SHMEM_NORESERVE	VM_NORESERVE

/* Does @folio, isolated, belong to a movable_ops driver (not the LRU)? */
static inline bool migrate_folio_movable_ops(struct folio *folio)
{
	return __folio_test_movable(folio);
}

/* ROCM: the uffd-wp bit of the present PTE @old onto its replacement @pte. */
static inline pte_t migrate_rocm_uffd_bits(struct vm_area_struct *vma,
					   pte_t pte, pte_t old)
{
	return pte_uffd_wp(old) ? pte_mkuffd_wp(pte) : pte;
}

/* Is the non-present @pte a device-private or device-exclusive entry of @pfn? */
static inline bool migrate_rocm_device_entry(pte_t pte, unsigned long pfn)
{
	swp_entry_t entry;

	if (!is_swap_pte(pte))
		return false;
	entry = pte_to_swp_entry(pte);
	return (is_device_private_entry(entry) ||
		is_device_exclusive_entry(entry)) &&
	       swp_offset_pfn(entry) == pfn;
}

/* What mm/migrate.c recorded of a batch's folio in its destination @dst. */
static inline unsigned long migrate_folio_info(struct folio *dst)
{
	return (unsigned long)dst->private;
}

#endif /* _MM_MIGRATE_RANGE_COMPAT_H */
