// SPDX-License-Identifier: GPL-2.0
/*
 * Range-batched unmap for migration.
 *
 * migrate_pages_batch() installs migration entries folio by folio: each
 * try_to_migrate() takes the anon_vma lock, searches its interval tree,
 * walks the page tables from the PGD down, takes the PTE table's lock and
 * starts and ends an mmu_notifier range, all for one PTE.  For a run of
 * order-0 anon folios of one anon_vma in ascending index order (what
 * move_pages(2) of a range, mbind(2) and a sorted batch give) that work
 * is the same for every folio of the run.
 *
 * Here the unmap loop leaves such folios mapped (migrate_range_defer()),
 * and before the batch's TLB flush each run is unmapped in one pass: the
 * anon_vma lock once, the interval tree once over the run's offsets, per
 * VMA one notifier range, and per PTE table one walk and one lock.  What
 * happens to each PTE is what try_to_migrate_one() does for an order-0
 * anon folio, and the flush is queued with the batch's (TTU_BATCH_FLUSH),
 * so nothing is copied before it.  A PTE that try_to_migrate_one() would
 * treat specially (a poisoned page, an unused PTE, arch_unmap_one()
 * refusing) is put back as it was, and so is one whose folio may be
 * pinned; a folio the pass leaves mapped (for these reasons, or mapped
 * where it did not look) is unmapped by migrate_folio_move() as it
 * unmaps a folio ROCM gives up: try_to_migrate() and a flush at once.
 *
 * After the copy, migrate_pages_batch() maps the moved folios of such a
 * run again the same way (migrate_range_remap_run(), what
 * remove_migration_pte() does for each PTE), before it unlocks them;
 * VMAs with VM_LOCKED are left to remove_migration_ptes(), which runs
 * after the folio is on its LRU list as mlock needs.
 *
 * vm.migrate_range_unmap (a static key) switches this on; 0 by default.
 */

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/init.h>
#include <linux/migrate_range.h>
#include <linux/migrate_rocm.h>
#include <linux/migrate_stages.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/rmap.h>
#include <linux/seq_file.h>
#include <linux/swap.h>
#include <linux/swapops.h>
#include <linux/sysctl.h>
#include <trace/events/migrate.h>

#include "internal.h"
#include "migrate_range_walk.h"

DEFINE_STATIC_KEY_FALSE(migrate_range_enabled);

static atomic_long_t migrate_range_runs, migrate_range_unmapped,
		     migrate_range_left, migrate_range_remap_runs,
		     migrate_range_remapped, migrate_range_remap_left,
		     migrate_range_rocm_runs, migrate_range_rocm_moved,
		     migrate_range_rocm_left;
static atomic_long_t migrate_range_handovers[NR_MIGRATE_RANGE_HANDOVERS];

#ifdef CONFIG_MIGRATE_RANGE_DEBUG
/* debugfs migrate_range/vma_delay_us: slept after each VMA of a run */
static u32 migrate_range_vma_delay_us;

static void migrate_range_debug_delay(void)
{
	u32 us = READ_ONCE(migrate_range_vma_delay_us);

	if (us)
		fsleep(us);
}
#else
static inline void migrate_range_debug_delay(void)
{
}
#endif

void migrate_range_count_handover(enum migrate_range_handover which)
{
	atomic_long_inc(&migrate_range_handovers[which]);
}

bool __migrate_range_defer(struct folio *src)
{
	return folio_test_anon(src) && !folio_test_ksm(src) &&
	       !folio_test_large(src) && !folio_is_zone_device(src) &&
	       !folio_test_hwpoison(src);
}

/*
 * May a folio at (@mapping, @index) join a run of @nr folios that starts
 * at (@first_mapping, @first_index) and ends at @last_index?  Same
 * anon_vma, offsets ascending, at most MIGRATE_RANGE_MAX folios within
 * one PTE table's span, so a VMA's part of the run needs at most two.
 */
static bool migrate_range_key_joins(unsigned long first_mapping,
				    pgoff_t first_index, pgoff_t last_index,
				    unsigned int nr, unsigned long mapping,
				    pgoff_t index)
{
	return mapping == first_mapping && nr < MIGRATE_RANGE_MAX &&
	       index > last_index && index - first_index < PTRS_PER_PTE;
}

bool migrate_range_joins(struct folio *first, struct folio *last,
			 unsigned int nr, struct folio *folio)
{
	return migrate_range_key_joins((unsigned long)first->mapping,
				       first->index, last->index, nr,
				       (unsigned long)folio->mapping,
				       folio->index);
}

/*
 * try_to_migrate_one() for one PTE of an order-0 anon folio, under the
 * PTE table's lock.  False, with the PTE as it was, if it does not map
 * @folio or the folio cannot leave it now.
 */
static bool migrate_range_unmap_pte(struct migrate_range_walk *w,
				    struct folio *folio, struct folio *unused,
				    unsigned int i, unsigned long addr,
				    pte_t *ptep)
{
	struct vm_area_struct *vma = w->vma;
	struct mm_struct *mm = vma->vm_mm;
	struct page *page = &folio->page;
	pte_t pte = ptep_get(ptep), swp_pte;
	bool anon_exclusive;
	swp_entry_t entry;

	if (!pte_present(pte) || pte_pfn(pte) != folio_pfn(folio))
		return false;
	anon_exclusive = PageAnonExclusive(page);
	pte = migrate_ptep_clear(vma, addr, ptep, TTU_BATCH_FLUSH);
	if (pte_dirty(pte))
		folio_mark_dirty(folio);

	/* What try_to_migrate_one() treats specially, it gets back. */
	if (PageHWPoison(page) ||
	    (pte_unused(pte) && !userfaultfd_armed(vma)) ||
	    arch_unmap_one(mm, vma, addr, pte) < 0)
		goto restore;
	VM_WARN_ON_FOLIO(pte_write(pte) && !anon_exclusive, folio);
	/* See folio_try_share_anon_rmap_pte(): clear PTE first. */
	if (anon_exclusive && folio_try_share_anon_rmap_pte(folio, page))
		goto restore;

	if (pte_write(pte))
		entry = make_writable_migration_entry(page_to_pfn(page));
	else if (anon_exclusive)
		entry = make_readable_exclusive_migration_entry(page_to_pfn(page));
	else
		entry = make_readable_migration_entry(page_to_pfn(page));
	if (pte_young(pte))
		entry = make_migration_entry_young(entry);
	if (pte_dirty(pte))
		entry = make_migration_entry_dirty(entry);
	swp_pte = swp_entry_to_pte(entry);
	swp_pte = migrate_range_swp_bits(swp_pte, pte);
	set_pte_at(mm, addr, ptep, swp_pte);
	trace_set_migration_pte(addr, pte_val(swp_pte), 0);

	folio_remove_rmap_pte(folio, page, vma);
	if (vma->vm_flags & VM_LOCKED)
		mlock_drain_local();
	folio_put(folio);
	return true;

restore:
	set_pte_at(mm, addr, ptep, pte);
	return false;
}

/* Unmap the folios of the run that @vma maps, a PTE table at a time. */
static void migrate_range_unmap_vma(struct vm_area_struct *vma,
				    struct folio *first, unsigned int nr)
{
	struct migrate_range_walk w = {
		.vma = vma, .src = first, .nr = nr,
		.pte = migrate_range_unmap_pte,
	};
	struct mmu_notifier_range range;
	unsigned long start, end;

	if (!migrate_range_span(vma, first, nr, &start, &end))
		return;
	mmu_notifier_range_init(&range, MMU_NOTIFY_CLEAR, 0, vma->vm_mm,
				start, end);
	mmu_notifier_invalidate_range_start(&range);
	update_hiwater_rss(vma->vm_mm);
	migrate_range_walk_ptes(&w);
	mmu_notifier_invalidate_range_end(&range);
}

/* How many of the @nr folios from @folio on are still mapped. */
static unsigned int migrate_range_mapped(struct folio *folio, unsigned int nr)
{
	unsigned int i, mapped = 0;

	for (i = 0; i < nr; i++, folio = list_next_entry(folio, lru))
		mapped += folio_mapped(folio);
	return mapped;
}

void migrate_range_unmap_run(struct folio *first, unsigned int nr)
{
	struct anon_vma *anon_vma = folio_anon_vma(first);
	struct folio *last = first, *folio;
	struct anon_vma_chain *avc;
	unsigned int i, left, n = 0;
	bool handed_over = false;

	for (i = 1; i < nr; i++)
		last = list_next_entry(last, lru);

	/*
	 * The folios are locked and migrate_folio_unmap() holds a reference
	 * on their anon_vma, which therefore cannot change or go away.
	 */
	anon_vma_lock_read(anon_vma);
	migrate_range_anon_foreach(avc, anon_vma, first->index, last->index) {
		/* as in try_to_migrate(): see invalid_migration_vma() */
		if (vma_is_temporary_stack(avc->vma))
			continue;
		if (migrate_range_writer_waits(&anon_vma->root->rwsem, n++)) {
			handed_over = true;
			break;
		}
		migrate_range_unmap_vma(avc->vma, first, nr);
		migrate_range_debug_delay();
		/* as rmap_walk_anon() with folio_not_mapped() */
		if (!migrate_range_mapped(first, nr))
			break;
		cond_resched();
	}
	anon_vma_unlock_read(anon_vma);
	/* the run's own count; the hand-over's unmaps are not the run's */
	left = migrate_range_mapped(first, nr);
	/*
	 * Handed over (migrate_range_writer_waits()): finish per folio, each
	 * flush still the batch's; the remap's finish is the caller's
	 * remove_migration_ptes() for each folio.
	 */
	if (handed_over) {
		migrate_range_count_handover(MIGRATE_RANGE_HANDOVER_UNMAP);
		for (i = 0, folio = first; i < nr;
		     i++, folio = list_next_entry(folio, lru))
			if (folio_mapped(folio))
				try_to_migrate(folio, TTU_BATCH_FLUSH);
	}

	atomic_long_inc(&migrate_range_runs);
	atomic_long_add(nr - left, &migrate_range_unmapped);
	atomic_long_add(left, &migrate_range_left);
}

/*
 * remove_migration_pte() for one PTE of an order-0 anon folio moved from
 * @src to @dst, under the PTE table's lock: map @dst where the PTE holds
 * a migration entry for @src.  True if it did.  Mapping a folio into a
 * VM_LOCKED VMA mlocks it, which needs it on an LRU list first
 * (migrate_folio_move()'s order): such an entry is only counted in
 * w->locked, for remove_migration_ptes() after the LRU add.  VM_LOCKED is
 * read under the PTE lock: mlock() sets it before its own PTE walk.
 */
static bool migrate_range_remap_pte(struct migrate_range_walk *w,
				    struct folio *src, struct folio *dst,
				    unsigned int i, unsigned long addr,
				    pte_t *ptep)
{
	struct vm_area_struct *vma = w->vma;
	pte_t old = ptep_get(ptep), pte;
	rmap_t rmap_flags = RMAP_NONE;
	int entry = migrate_range_entry(old, folio_pfn(src));
	bool write;

	if (entry < 0)
		return false;
	if (READ_ONCE(vma->vm_flags) & VM_LOCKED) {
		w->locked++;
		return false;
	}

	folio_get(dst);
	pte = mk_pte(&dst->page, READ_ONCE(vma->vm_page_prot));
	if (!(entry & MIGRATE_RANGE_ENTRY_YOUNG))
		pte = pte_mkold(pte);
	if (folio_test_dirty(dst) && (entry & MIGRATE_RANGE_ENTRY_DIRTY))
		pte = pte_mkdirty(pte);
	if (pte_swp_soft_dirty(old))
		pte = pte_mksoft_dirty(pte);
	else
		pte = pte_clear_soft_dirty(pte);
	/* As remove_migration_pte(): a write-fenced folio lands read-only. */
	write = (entry & MIGRATE_RANGE_ENTRY_WRITE) &&
		!migrate_range_write_fenced(dst);
	if (write)
		pte = pte_mkwrite(pte, vma);
	pte = migrate_range_uffd_bits(vma, pte, old, write);
	if (!(entry & MIGRATE_RANGE_ENTRY_READ))
		rmap_flags |= RMAP_EXCLUSIVE;

	folio_add_anon_rmap_pte(dst, &dst->page, vma, addr, rmap_flags);
	set_pte_at(vma->vm_mm, addr, ptep, pte);
	trace_remove_migration_pte(addr, pte_val(pte), 0);
	/* No need to invalidate: it was not present */
	update_mmu_cache(vma, addr, ptep);
	return true;
}

bool migrate_range_remap_run(struct folio *src, struct folio *dst,
			     unsigned int nr)
{
	struct anon_vma *anon_vma = folio_anon_vma(src);
	unsigned int i, mapped = 0, locked = 0, n = 0;
	struct folio *last = src;
	struct anon_vma_chain *avc;
	bool handed_over = false;

	for (i = 1; i < nr; i++)
		last = list_next_entry(last, lru);

	/* as migrate_range_unmap_run(); every VMA, as rmap_walk_anon() */
	anon_vma_lock_read(anon_vma);
	migrate_range_anon_foreach(avc, anon_vma, src->index, last->index) {
		struct migrate_range_walk w = {
			.vma = avc->vma, .src = src, .dst = dst, .nr = nr,
			.pte = migrate_range_remap_pte,
		};

		if (migrate_range_writer_waits(&anon_vma->root->rwsem, n++)) {
			handed_over = true;
			break;
		}
		mapped += migrate_range_walk_ptes(&w);
		locked += w.locked;
		migrate_range_debug_delay();
		cond_resched();
	}
	anon_vma_unlock_read(anon_vma);
	if (handed_over)
		migrate_range_count_handover(MIGRATE_RANGE_HANDOVER_REMAP);

	atomic_long_inc(&migrate_range_remap_runs);
	atomic_long_add(mapped, &migrate_range_remapped);
	atomic_long_add(locked, &migrate_range_remap_left);
	return !locked && !handed_over;
}

/*
 * The move loop's side of a batch (Linux 7.3's migrate_folios_move() and
 * its callers; 6.12 open-codes the same in its migrate_pages_batch()).
 */

/* Unmap one gathered run, timed as the batch's UNMAP of its folios. */
static void migrate_range_unmap_timed(struct migrate_range_run *run)
{
	u64 t = migrate_stage_task_run_begin();

	migrate_range_unmap_run(run->first, run->nr);
	migrate_stage_task_run_done(MIGRATE_STAGE_UNMAP, run->idx, run->nr, t);
}

/*
 * Before the batch's flush: unmap the folios of @folios (the batch's
 * unmapped list, @dst_folios their destinations) that
 * migrate_folio_unmap() left mapped for a range unmap
 * (migrate_range_defer()), in runs.  Only those, and those ROCM took
 * (their records say so: it moves them mapped), are still mapped there:
 * a folio it unmapped is not, and one it could not unmap is not on the
 * list.
 */
void __migrate_range_unmap_batch(struct list_head *folios,
				 struct list_head *dst_folios)
{
	struct folio *src, *dst = list_first_entry(dst_folios, struct folio,
						   lru);
	struct migrate_range_run run = {}, done;
	unsigned int idx = 0;

	list_for_each_entry(src, folios, lru) {
		bool deferred = folio_mapped(src) &&
			!(migrate_folio_info(dst) & MIGRATE_FOLIO_WAS_ROCM) &&
			__migrate_range_defer(src);

		if (migrate_range_run_step(&run, &done, src, NULL, idx++,
					   deferred))
			migrate_range_unmap_timed(&done);
		dst = list_next_entry(dst, lru);
	}
	if (run.nr)
		migrate_range_unmap_timed(&run);
}

/*
 * In the move loop, before @src is copied: if it is still mapped (the
 * range unmap, or its hand-over, left it so), unmap it now with a flush
 * at once, as no batch flush comes before the copy.  True if it is still
 * mapped then: it must not be copied (a CPU could store to it after),
 * and it gets back the mappings already replaced, as migrate_folio_unmap()
 * gives a folio it could not unmap whole back at once, rather than keep
 * them through every retry pass.
 */
bool __migrate_range_unmap_late(struct folio *src)
{
	u64 t = migrate_stage_begin();

	try_to_migrate(src, 0);
	migrate_stage_late_unmapped(t);
	if (!folio_mapped(src))
		return false;
	remove_migration_ptes(src, src, 0);
	return true;
}

/* Map the run of moved folios @rr holds, and finish each one's move. */
void __migrate_range_remap_finish(struct migrate_range_remap *rr)
{
	struct folio *src = rr->run.first, *dst = rr->run.dst;
	u64 t = migrate_stage_task_run_begin();
	bool all = migrate_range_remap_run(src, dst, rr->run.nr);
	unsigned int i;

	migrate_stage_task_run_done(MIGRATE_STAGE_REMAP, rr->run.idx,
				    rr->run.nr, t);
	for (i = 0; i < rr->run.nr; i++) {
		struct folio *next_src = list_next_entry(src, lru);
		struct folio *next_dst = list_next_entry(dst, lru);
		/*
		 * "all" counts only the entries left in VM_LOCKED VMAs: one
		 * the pass missed for another reason would outlive @src,
		 * freed next.  DEBUG_VM looks, says so and maps it.
		 */
		bool mapped = all &&
			!(IS_ENABLED(CONFIG_DEBUG_VM) &&
			  WARN_ON_ONCE(migrate_range_entries_left(src)));

		rr->done(src, dst, mapped, rr->reason);
		src = next_src;
		dst = next_dst;
	}
	rr->run.nr = 0;
}

/*
 * In the move loop, @src was copied to @dst and is to be mapped again:
 * may that wait for a range remap with its neighbours?  If so, it joins
 * @rr's run, or opens one: the caller keeps both folios locked and on
 * their lists, with @dst's record, for rr->done() to finish after the
 * run's remap.  A run it cannot join was ended before its move
 * (migrate_range_remap_prepare()): ending one here, with @dst off its
 * list, would unlink the entry the caller puts @dst back after.
 */
bool __migrate_range_remap_later(struct migrate_range_remap *rr,
				 struct folio *src, struct folio *dst)
{
	struct migrate_range_run *run = &rr->run;

	if (!migrate_range_remap_ok(src, dst) ||
	    (run->nr && !migrate_range_joins(run->first, run->last, run->nr,
					     src)))
		return false;
	if (!run->nr) {
		run->first = src;
		run->dst = dst;
		run->idx = migrate_stage_move_pos();
	}
	run->last = src;
	run->nr++;
	return true;
}

static bool migrate_range_entry_one(struct folio *folio,
				    struct vm_area_struct *vma,
				    unsigned long addr, void *arg)
{
	DEFINE_FOLIO_VMA_WALK(pvmw, folio, vma, addr,
			      PVMW_SYNC | PVMW_MIGRATION);

	if (!page_vma_mapped_walk(&pvmw))
		return true;
	page_vma_mapped_walk_done(&pvmw);
	*(bool *)arg = true;
	return false;
}

/*
 * Only migrate_pages_batch() installs migration entries for @src, which
 * it holds locked, so one found here was left by it; none can appear
 * while this looks.
 */
bool migrate_range_entries_left(struct folio *src)
{
	bool left = false;
	struct rmap_walk_control rwc = {
		.rmap_one = migrate_range_entry_one,
		.arg = &left,
	};

	rmap_walk(src, &rwc);
	return left;
}

void migrate_range_count_rocm(unsigned int nr, unsigned int moved)
{
	atomic_long_inc(&migrate_range_rocm_runs);
	atomic_long_add(moved, &migrate_range_rocm_moved);
	atomic_long_add(nr - moved, &migrate_range_rocm_left);
}

#ifdef CONFIG_SYSCTL
static const struct ctl_table migrate_range_sysctls[] = {
	{
		.procname	= "migrate_range_unmap",
		.data		= &migrate_range_enabled.key,
		.mode		= 0644,
		.proc_handler	= proc_do_static_key,
	},
};
#endif

/*
 * debugfs migrate_range/stats: runs unmapped, folios they unmapped,
 * folios they left mapped (to try_to_migrate() after a hand-over, else
 * for migrate_folio_move() to unmap); runs
 * remapped, PTEs they mapped, PTEs they left to remove_migration_ptes()
 * (in VM_LOCKED VMAs); ROCM runs switched, folios they moved, folios
 * they left to the classic path; runs of each kind that gave their rmap
 * lock up to a waiting writer.  The unmap and remap counts are what a
 * run's own walk did: after a hand-over, the folios still mapped count as
 * left, and the PTEs remove_migration_ptes() then maps are not counted.
 * ROCM counts a folio its per-folio walk moved after a hand-over as moved.
 */
static int migrate_range_stats_show(struct seq_file *m, void *v)
{
	seq_printf(m, "runs %ld\nunmapped %ld\nleft %ld\n",
		   atomic_long_read(&migrate_range_runs),
		   atomic_long_read(&migrate_range_unmapped),
		   atomic_long_read(&migrate_range_left));
	seq_printf(m, "remap_runs %ld\nremapped %ld\nremap_left %ld\n",
		   atomic_long_read(&migrate_range_remap_runs),
		   atomic_long_read(&migrate_range_remapped),
		   atomic_long_read(&migrate_range_remap_left));
	seq_printf(m, "rocm_runs %ld\nrocm_moved %ld\nrocm_left %ld\n",
		   atomic_long_read(&migrate_range_rocm_runs),
		   atomic_long_read(&migrate_range_rocm_moved),
		   atomic_long_read(&migrate_range_rocm_left));
	seq_printf(m, "unmap_handovers %ld\nremap_handovers %ld\nrocm_handovers %ld\n",
		   atomic_long_read(&migrate_range_handovers[MIGRATE_RANGE_HANDOVER_UNMAP]),
		   atomic_long_read(&migrate_range_handovers[MIGRATE_RANGE_HANDOVER_REMAP]),
		   atomic_long_read(&migrate_range_handovers[MIGRATE_RANGE_HANDOVER_ROCM]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(migrate_range_stats);

static int __init migrate_range_init(void)
{
	struct dentry *dir;

#ifdef CONFIG_SYSCTL
	register_sysctl_init("vm", migrate_range_sysctls);
#endif
	dir = debugfs_create_dir("migrate_range", NULL);
	debugfs_create_file("stats", 0400, dir, NULL,
			    &migrate_range_stats_fops);
#ifdef CONFIG_MIGRATE_RANGE_DEBUG
	debugfs_create_u32("vma_delay_us", 0600, dir,
			   &migrate_range_vma_delay_us);
#endif
	return 0;
}
late_initcall(migrate_range_init);

#ifdef CONFIG_MIGRATE_RANGE_KUNIT_TEST
#include "tests/migrate_range_kunit.h"
#endif
