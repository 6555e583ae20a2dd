// SPDX-License-Identifier: GPL-2.0
/*
 * ROCM: read-only copy migration.
 *
 * The classic path replaces every PTE of a folio by a migration entry,
 * copies the folio and puts PTEs back; a thread touching the folio in
 * between sleeps in migration_entry_wait().  When every mapping of the
 * folio is a present read-only PTE and nobody can write the folio in
 * place without first taking its lock (which we hold) or copying it
 * away, the copy can be made while the folio stays mapped.
 *
 * A read-only PTE is not proof that no CPU can write the page: fork()
 * and mprotect() write-protect PTEs and flush the TLB later.  So, in
 * the migration batch's unmap phase, a check walk applies every rule to
 * every mapping before anything changes and queues a flush of each; the
 * batch flushes once.  From then on no CPU can write the folio: a write
 * faults and needs the folio lock or copies.  After that flush the folio
 * is copied and each PTE is switched to the copy under its page-table
 * lock; the switched PTEs' old translations are flushed once more for
 * the batch before the copy is unlocked or the source freed.
 *
 * Anything unexpected -- a mapping that changed or appeared since the
 * check, a reference nobody explains -- undoes the switch (every PTE back
 * to the source, whose contents equal the copy's) and leaves the folio to
 * the classic path.  See Documentation/mm/migrate_rocm.rst.
 */

#include <linux/backing-dev.h>
#include <linux/buffer_head.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fcntl.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/jump_label.h>
#include <linux/memcontrol.h>
#include <linux/migrate.h>
#include <linux/migrate_range.h>
#include <linux/migrate_rocm.h>
#include <linux/migrate_stages.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/pagemap.h>
#include <linux/rmap.h>
#include <linux/shmem_fs.h>
#include <linux/swap.h>
#include <linux/swapops.h>
#include <linux/sysctl.h>
#include <linux/vmstat.h>
#include <trace/events/migrate.h>

#include "internal.h"
#include "migrate_range_walk.h"

static const char * const rocm_reason_names[NR_ROCM_REASONS] = {
	[ROCM_OK]		= "ok",
	[ROCM_OFF]		= "off",
	[ROCM_LARGE]		= "large",
	[ROCM_NOT_LRU]		= "not_lru",
	[ROCM_HUGETLB]		= "hugetlb",
	[ROCM_WRITEBACK]	= "writeback",
	[ROCM_DIRTY]		= "dirty",
	[ROCM_PINNED]		= "pinned",
	[ROCM_REFS]		= "refs",
	[ROCM_SWAPCACHE]	= "swapcache",
	[ROCM_MLOCKED]		= "mlocked",
	[ROCM_PRIVATE]		= "private",
	[ROCM_MAPPING]		= "mapping",
	[ROCM_EXCLUSIVE]	= "anon_exclusive",
	[ROCM_PTE_WRITE]	= "pte_write",
	[ROCM_PTE_DIRTY]	= "pte_dirty",
	[ROCM_SHARED_WRITE]	= "shared_writable",
	[ROCM_PMD]		= "pmd",
	[ROCM_CHANGED]		= "changed",
	[ROCM_RACE]		= "race",
	[ROCM_COPY]		= "copy_failed",
	[ROCM_FLUSH_PENDING]	= "flush_pending",
	[ROCM_WRITTEN]		= "written",
	[ROCM_PIN_SEALED]	= "pin_sealed",
	[ROCM_DST_HELD]		= "dst_held",
};

const char *rocm_reason_name(enum rocm_reason reason)
{
	if ((unsigned int)reason >= NR_ROCM_REASONS)
		return "?";
	return rocm_reason_names[reason];
}

/*
 * The folio-level rules.  Each closes a way in which the folio could
 * change, or stay referenced, behind the copy's back.
 */
enum rocm_reason rocm_check_folio(const struct rocm_folio_facts *f)
{
	if (f->order)
		return ROCM_LARGE;
	if (f->hugetlb)
		return ROCM_HUGETLB;
	if (!f->lru)
		return ROCM_NOT_LRU;
	if (f->swapcache)
		return ROCM_SWAPCACHE;
	if (f->writeback)
		return ROCM_WRITEBACK;
	/* dirty page cache of a filesystem that will write it back */
	if (f->dirty && !f->anon)
		return ROCM_DIRTY;
	if (f->mlocked)
		return ROCM_MLOCKED;
	if (f->private)
		return ROCM_PRIVATE;
	if (!f->anon && !f->plain_aops)
		return ROCM_MAPPING;
	/* shmem has no page_mkwrite: a writable mapping writes in place */
	if (!f->anon && f->shmem_writable)
		return ROCM_SHARED_WRITE;
	/* a memfd pin may write it with neither PTE nor folio lock */
	if (!f->anon && f->pin_sealed)
		return ROCM_PIN_SEALED;
	/* an exclusive anon folio may be reused in place on a write fault */
	if (f->anon && f->anon_exclusive)
		return ROCM_EXCLUSIVE;
	if (f->maybe_pinned)
		return ROCM_PINNED;
	if (f->ref_count != f->expected_refs)
		return ROCM_REFS;
	return ROCM_OK;
}

/* The per-mapping rules, checked again under each PTE lock. */
enum rocm_reason rocm_check_pte(const struct rocm_pte_facts *p)
{
	if (p->vm_locked)
		return ROCM_MLOCKED;
	/* a write-protect whose flush is still to come: stale TLB entries */
	if (p->flush_pending)
		return ROCM_FLUSH_PENDING;
	if (p->pte_write)
		return ROCM_PTE_WRITE;
	/*
	 * For page cache a dirty PTE is data not yet in the folio's dirty
	 * state; leave it to the unmap, which moves it there.  A read-only
	 * anon PTE may stay dirty after fork; the bit is carried over.
	 */
	if (p->pte_dirty && !p->anon)
		return ROCM_PTE_DIRTY;
	if (p->anon && p->anon_exclusive)
		return ROCM_EXCLUSIVE;
	/* shmem's write fault reuses the page without taking its lock */
	if (!p->anon && p->vm_shared && p->vm_maywrite && !p->page_mkwrite)
		return ROCM_SHARED_WRITE;
	return ROCM_OK;
}

DEFINE_STATIC_KEY_FALSE(migrate_rocm_key);
static int sysctl_migrate_rocm;

static int rocm_sysctl_handler(const struct ctl_table *table, int write,
			       void *buffer, size_t *lenp, loff_t *ppos)
{
	static DEFINE_MUTEX(lock);
	int ret;

	mutex_lock(&lock);
	ret = proc_dointvec_minmax(table, write, buffer, lenp, ppos);
	if (!ret && write) {
		if (sysctl_migrate_rocm)
			static_branch_enable(&migrate_rocm_key);
		else
			static_branch_disable(&migrate_rocm_key);
	}
	mutex_unlock(&lock);
	return ret;
}

static const struct ctl_table rocm_sysctls[] = {
	{
		.procname	= "migrate_rocm",
		.data		= &sysctl_migrate_rocm,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= rocm_sysctl_handler,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
};

static int __init rocm_sysctl_init(void)
{
	register_sysctl_init("vm", rocm_sysctls);
	return 0;
}
late_initcall(rocm_sysctl_init);

/* Where a test may widen a race window (CONFIG_MIGRATE_ROCM_DEBUG). */
enum rocm_delay {
	ROCM_DELAY_COPY,	/* after the copy, before the switch */
	ROCM_DELAY_SWITCH,	/* after each mapping switched */
	NR_ROCM_DELAYS
};

#ifdef CONFIG_MIGRATE_ROCM_DEBUG
static u32 rocm_delay_us[NR_ROCM_DELAYS];
/* arm64: a run's breaks in batches (rocm_run_break()); off for benchmarks */
static bool rocm_batch_break = true;

static bool rocm_batching(void)
{
	return READ_ONCE(rocm_batch_break);
}

/*
 * Moved folios migrate_rocm_debug_moved() saw, and those it faulted;
 * only while check_moved is set (a test sets it: benchmarks of ROCM
 * would pay for the walk and the shared counters).
 */
static atomic_t rocm_moved_checked, rocm_moved_stray;
static bool rocm_check_moved;
/* migrate_rocm_unchanged() says yes without looking: a test's broken kernel */
static bool rocm_skip_compare;

bool migrate_rocm_debug_checking(void)
{
	return READ_ONCE(rocm_check_moved);
}

/*
 * @dst has been live since its switch (mapped, in the page cache if it
 * is a file folio) and nothing may be recorded in it: a reader that
 * does not take the folio lock, such as __find_get_block_slow() on a
 * block device folio, takes a non-NULL ->private for buffer heads.
 */
void migrate_rocm_debug_moved(struct folio *dst)
{
	atomic_inc(&rocm_moved_checked);
	if (!folio_test_private(dst) && READ_ONCE(dst->private))
		atomic_inc(&rocm_moved_stray);
}

static int __init rocm_debugfs_init(void)
{
	struct dentry *dir = debugfs_create_dir("migrate_rocm", NULL);

	debugfs_create_u32("copy_delay_us", 0600, dir,
			   &rocm_delay_us[ROCM_DELAY_COPY]);
	debugfs_create_u32("switch_delay_us", 0600, dir,
			   &rocm_delay_us[ROCM_DELAY_SWITCH]);
	debugfs_create_bool("check_moved", 0600, dir, &rocm_check_moved);
	debugfs_create_bool("skip_compare", 0600, dir, &rocm_skip_compare);
	debugfs_create_atomic_t("moved_checked", 0400, dir,
				&rocm_moved_checked);
	debugfs_create_atomic_t("moved_stray_private", 0400, dir,
				&rocm_moved_stray);
	if (IS_ENABLED(CONFIG_ARM64))	/* ROCM_BATCH_BREAK */
		debugfs_create_bool("batch_break", 0600, dir,
				    &rocm_batch_break);
	return 0;
}
late_initcall(rocm_debugfs_init);

/* Sleeps, so no spinlock may be held. */
static void rocm_debug_delay(enum rocm_delay where)
{
	u32 us = READ_ONCE(rocm_delay_us[where]);

	if (us)
		fsleep(us);
}

static bool rocm_compare_skipped(void)
{
	return READ_ONCE(rocm_skip_compare);
}
#else
static inline void rocm_debug_delay(enum rocm_delay where) { }
static inline bool rocm_batching(void)
{
	return true;
}

static inline bool rocm_compare_skipped(void)
{
	return false;
}
#endif

/* Does this page cache migrate by copying data and nothing else? */
static bool rocm_plain_aops(struct address_space *mapping)
{
	int (*mf)(struct address_space *, struct folio *, struct folio *,
		  enum migrate_mode) = mapping->a_ops->migrate_folio;

	if (!mf)
		return false;
	if (mf == migrate_folio || mf == filemap_migrate_folio)
		return true;
#ifdef CONFIG_BUFFER_HEAD
	/* without buffer heads (checked as PG_private) these just copy */
	if (mf == buffer_migrate_folio || mf == buffer_migrate_folio_norefs)
		return true;
#endif
	return false;
}

/*
 * May a memfd with @seals have been pinned by udmabuf (memfd_pin_folios())?
 * udmabuf pins only a file that cannot shrink and whose writes are not
 * sealed.  F_SEAL_FUTURE_WRITE does not count: a udmabuf made before it
 * was added goes on writing.  F_SEAL_WRITE does, and cannot be added
 * while ROCM moves a folio of the file: memfd_wait_for_pins() takes the
 * isolation reference for a pin and fails.  So once true during a move,
 * this stays true until its end.
 */
bool rocm_seals_pinnable(unsigned int seals)
{
	return (seals & F_SEAL_SHRINK) && !(seals & F_SEAL_WRITE);
}

/*
 * May a pin that needs no PTE write @mapping's folios: one was taken
 * (memfd_pin_folios() sets AS_MEMFD_PINNED before its first pin, for any
 * caller), or shmem whose seals allow udmabuf's?  A snapshot; each stays
 * true once true.
 */
static bool rocm_pin_sealed(struct address_space *mapping)
{
	return mapping_memfd_pinned(mapping) ||
	       (shmem_mapping(mapping) &&
		rocm_seals_pinnable(READ_ONCE(SHMEM_I(mapping->host)->seals)));
}

static void rocm_folio_facts(struct folio *src, struct rocm_folio_facts *f)
{
	*f = (struct rocm_folio_facts) {
		.order = folio_order(src),
		.lru = !migrate_folio_movable_ops(src),
		.hugetlb = folio_test_hugetlb(src),
		.writeback = folio_test_writeback(src),
		.dirty = folio_test_dirty(src),
		.anon = folio_test_anon(src),
		.swapcache = folio_test_swapcache(src),
		.mlocked = folio_test_mlocked(src),
		.private = folio_test_private(src),
		.maybe_pinned = folio_maybe_dma_pinned(src),
		.ref_count = folio_ref_count(src),
		.expected_refs = folio_expected_ref_count(src) + 1,
	};
	if (f->anon) {
		f->anon_exclusive = PageAnonExclusive(&src->page);
	} else if (src->mapping) {
		f->plain_aops = rocm_plain_aops(src->mapping);
		/* shmem's PG_dirty asks for swap space, not for writeback */
		f->dirty = f->dirty && mapping_can_writeback(src->mapping);
		f->shmem_writable = shmem_mapping(src->mapping) &&
				    mapping_writably_mapped(src->mapping);
		f->pin_sealed = rocm_pin_sealed(src->mapping);
	}
}

/*
 * One rmap walk over the PTEs that map @from.  The check walk applies
 * the rules and queues a flush of each PTE; the switch walk points each
 * PTE at @to; the undo walk (@check false) points them back.
 *
 * Each walk looks at PTEs under their lock only (PVMW_SYNC): without it
 * page_vma_mapped_walk() skips a PTE that is none when it peeks, and a
 * copy-on-write fault clears the PTE before it drops the old folio's
 * rmap, so a walk could miss a mapping that is still counted.
 */
struct rocm_walk {
	struct folio *from;
	struct folio *to;
	bool check;		/* apply the rules */
	bool inplace;		/* replace a PTE in one store (x86) */
	bool defer;		/* flush with the batch, not at once */
	enum rocm_reason why;	/* first rule that failed */
	unsigned int nr;	/* PTEs checked or switched */
};

/*
 * Whether a PTE may be switched in one store, its stale translation to
 * the source flushed with the batch.  x86 allows overwriting a present
 * PTE's PFN; arm64 requires break-before-make with the TLBI completed
 * before the new PTE is written, and other architectures get the same
 * conservative path.
 */
#define ROCM_INPLACE	(IS_ENABLED(CONFIG_X86) && IS_ENABLED(CONFIG_64BIT))
/*
 * Break through a migration entry (rocm_break_pte()) where a store over
 * a present PTE followed by flush_tlb_page() is a valid invalidation:
 * arm64.  Not on s390 (flush_tlb_page() is empty, the IPTE is in
 * ptep_clear_flush()) or powerpc hash (set_ptes() expects no valid PTE),
 * which keep ptep_clear_flush().
 */
#define ROCM_BREAK_ENTRY	IS_ENABLED(CONFIG_ARM64)

/* Under the PTL: the present PTE the walk stands on, or why not. */
static enum rocm_reason rocm_pte_get(struct page_vma_mapped_walk *pvmw,
				     pte_t *pte)
{
	if (!pvmw->pte)
		return ROCM_PMD;
	*pte = ptep_get(pvmw->pte);
	/* a device-exclusive entry: leave it to the classic path */
	return pte_present(*pte) ? ROCM_OK : ROCM_CHANGED;
}

/*
 * Under the PTL: the per-mapping rules for @pte, present in @vma and
 * mapping @folio.  A pending flush only matters before the check walk's
 * own flush.
 */
static enum rocm_reason rocm_pte_rules(struct folio *folio,
				       struct vm_area_struct *vma, pte_t pte,
				       bool before_flush)
{
	const struct vm_operations_struct *ops = vma->vm_ops;
	bool anon = folio_test_anon(folio);
	struct rocm_pte_facts p;

	p = (struct rocm_pte_facts) {
		.anon = anon,
		.pte_write = pte_write(pte),
		.pte_dirty = pte_dirty(pte),
		.anon_exclusive = anon && PageAnonExclusive(&folio->page),
		.vm_locked = vma->vm_flags & VM_LOCKED,
		.vm_shared = vma->vm_flags & VM_SHARED,
		.vm_maywrite = vma->vm_flags & VM_MAYWRITE,
		.page_mkwrite = ops && ops->page_mkwrite,
		.flush_pending = before_flush &&
				 mm_tlb_flush_pending(vma->vm_mm),
	};
	return rocm_check_pte(&p);
}

/* The same for the PTE a page_vma_mapped_walk() stands on. */
static enum rocm_reason rocm_pte_why(struct folio *folio,
				     struct page_vma_mapped_walk *pvmw,
				     pte_t *pte, bool before_flush)
{
	enum rocm_reason why = rocm_pte_get(pvmw, pte);

	return why ?: rocm_pte_rules(folio, pvmw->vma, *pte, before_flush);
}

static bool rocm_check_one(struct folio *folio, struct vm_area_struct *vma,
			   unsigned long address, void *arg)
{
	DEFINE_FOLIO_VMA_WALK(pvmw, folio, vma, address, PVMW_SYNC);
	struct rocm_walk *w = arg;
	pte_t pte;

	while (page_vma_mapped_walk(&pvmw)) {
		w->why = rocm_pte_why(folio, &pvmw, &pte, true);
		if (w->why) {
			page_vma_mapped_walk_done(&pvmw);
			return false;
		}
		/*
		 * A CPU may still hold a writable translation from before
		 * the PTE was write-protected (fork, mprotect): retire it
		 * before the copy.  The batch flushes them all at once.
		 */
		if (!rocm_defer_flush(vma->vm_mm, pte, pvmw.address))
			flush_tlb_page(vma, pvmw.address);
		w->nr++;
	}
	return true;
}

/*
 * The PTE for @pfn that replaces @old: built from the VMA's protection
 * as remove_migration_pte() does (a NUMA hint's PROT_NONE is not carried
 * over), read-only, keeping @old's young, dirty, soft-dirty and uffd
 * bits (with UFFD RWP on 7.3, its PAGE_NONE).
 */
static pte_t rocm_make_pte(struct vm_area_struct *vma, unsigned long pfn,
			   pte_t old)
{
	pte_t pte = pte_wrprotect(pfn_pte(pfn, READ_ONCE(vma->vm_page_prot)));

	if (!pte_young(old))
		pte = pte_mkold(pte);
	if (pte_dirty(old))
		pte = pte_mkdirty(pte);
	/* pte_mkdirty() sets soft-dirty on x86: keep @old's, as migration does */
	if (pte_soft_dirty(old))
		pte = pte_mksoft_dirty(pte);
	else
		pte = pte_clear_soft_dirty(pte);
	return migrate_rocm_uffd_bits(vma, pte, old);
}

/*
 * Under the PTL: the "break" of break-before-make for the present
 * read-only PTE at @addr, which maps @old.  The PTE goes straight from
 * present to a migration entry for the same page, never through empty;
 * the caller completes its TLBI (rocm_break_pte(), or a batch's
 * rocm_run_flush()) before it writes the new PTE.  A reader
 * that faults meanwhile finds the migration entry (on 64-bit,
 * pte_unmap_same() takes no lock) and waits in migration_entry_wait() for
 * the PTL we hold, then sees the new PTE: it takes no reference and does
 * not sleep.  An empty PTE instead would send a file fault to the page
 * cache, which still holds the source: the reader would take a reference
 * on it, failing the migration's refcount freeze, and sleep on its lock.
 * The PTE cannot become dirty meanwhile (read-only, checked after the
 * check walk's flush); an access flag the hardware sets between the read
 * and the store is lost, which only ages the page.
 */
static void rocm_break_entry(struct vm_area_struct *vma, unsigned long addr,
			     pte_t *ptep, pte_t old)
{
	swp_entry_t entry = make_readable_migration_entry(pte_pfn(old));

	/* set_pte_at() accounts the present PTE it replaces (page_table_check) */
	set_pte_at(vma->vm_mm, addr, ptep, swp_entry_to_pte(entry));
}

static void rocm_break_pte(struct vm_area_struct *vma, unsigned long addr,
			   pte_t *ptep, pte_t old)
{
	rocm_break_entry(vma, addr, ptep, old);
	flush_tlb_page(vma, addr);
}

/* May the PTE @old, which maps w->from, be switched?  If not, w->why. */
static bool rocm_switch_ok(struct rocm_walk *w, pte_t old)
{
	if (w->check && (pte_write(old) ||
			 (pte_dirty(old) && !folio_test_anon(w->from)))) {
		/* cannot happen after the check walk's flush */
		w->why = pte_write(old) ? ROCM_PTE_WRITE : ROCM_PTE_DIRTY;
		return false;
	}
	return true;
}

/*
 * Under the PTL: map @to at @addr of @vma in place of @from, which @old
 * mapped there (its translation flushed, or left to the batch's flush
 * when in place).
 */
static void rocm_switch_map(struct rocm_walk *w, struct vm_area_struct *vma,
			    unsigned long addr, pte_t *ptep, pte_t old,
			    struct folio *from, struct folio *to)
{
	struct mm_struct *mm = vma->vm_mm;

	folio_get(to);
	if (folio_test_anon(to))
		folio_add_anon_rmap_pte(to, &to->page, vma, addr, RMAP_NONE);
	else
		folio_add_file_rmap_pte(to, &to->page, vma);
	set_pte_at(mm, addr, ptep,
		   rocm_make_pte(vma, folio_pfn(to), old));
	if (w->inplace && (!w->defer || !rocm_defer_flush(mm, old, addr)))
		flush_tlb_page(vma, addr);
	update_mmu_cache(vma, addr, ptep);
	folio_remove_rmap_pte(from, &from->page, vma);
	/* the isolation reference keeps @from alive */
	folio_put(from);
	w->nr++;
}

/* Under the PTL: point the PTE at @addr of @vma from w->from to w->to. */
static bool rocm_switch_pte(struct rocm_walk *w, struct vm_area_struct *vma,
			    unsigned long addr, pte_t *ptep)
{
	pte_t old;

	/*
	 * x86: overwrite the present PTE in one store, so a reader that
	 * walks the table meanwhile finds one folio or the other and never
	 * an empty PTE (which would send a file fault to sleep on @from's
	 * lock).  The hardware cannot set Dirty on a read-only PTE; an
	 * Accessed bit set in between is lost, which only ages the page.  A
	 * stale entry can only read @from, whose contents equal @to's until
	 * both are unlocked, after the flush.  (A 32-bit PAE PTE is written
	 * in two halves: not there.)
	 * Elsewhere break-before-make: through a migration entry on arm64
	 * (rocm_break_pte()), else clear and flush; then write.  The PTE is
	 * checked first: nothing is changed for a PTE that must not move.
	 */
	old = ptep_get(ptep);
	if (!rocm_switch_ok(w, old))
		return false;
	if (!w->inplace) {
		if (ROCM_BREAK_ENTRY)
			rocm_break_pte(vma, addr, ptep, old);
		else
			old = ptep_clear_flush(vma, addr, ptep);
	}
	rocm_switch_map(w, vma, addr, ptep, old, w->from, w->to);
	return true;
}

static bool rocm_switch_one(struct folio *from, struct vm_area_struct *vma,
			    unsigned long address, void *arg)
{
	DEFINE_FOLIO_VMA_WALK(pvmw, from, vma, address, PVMW_SYNC);
	struct mmu_notifier_range range;
	struct rocm_walk *w = arg;
	bool ok = true;
	pte_t pte;

	mmu_notifier_range_init(&range, MMU_NOTIFY_CLEAR, 0, vma->vm_mm,
				address, address + PAGE_SIZE);
	mmu_notifier_invalidate_range_start(&range);
	while (page_vma_mapped_walk(&pvmw)) {
		if (w->check)
			w->why = rocm_pte_why(from, &pvmw, &pte, false);
		else
			w->why = rocm_pte_get(&pvmw, &pte);
		/* the undo goes on: every other PTE must go back */
		if (!w->check && w->why)
			continue;
		if (w->why || !rocm_switch_pte(w, vma, pvmw.address, pvmw.pte)) {
			ok = false;
			page_vma_mapped_walk_done(&pvmw);
			break;
		}
	}
	mmu_notifier_invalidate_range_end(&range);
	if (w->check)
		rocm_debug_delay(ROCM_DELAY_SWITCH);
	return ok;
}

static bool rocm_invalid_vma(struct vm_area_struct *vma, void *arg)
{
	return vma_is_temporary_stack(vma);
}

static int rocm_walk_done(struct folio *folio)
{
	return !folio_mapped(folio);
}

static void rocm_walk(struct rocm_walk *w,
		      bool (*one)(struct folio *, struct vm_area_struct *,
				  unsigned long, void *))
{
	struct rmap_walk_control rwc = {
		.rmap_one = one,
		.arg = w,
		.done = rocm_walk_done,
		.anon_lock = folio_lock_anon_vma_read,
		.invalid_vma = rocm_invalid_vma,
	};

	rmap_walk(w->from, &rwc);
}

static void rocm_fallback(struct folio *src, enum rocm_reason why)
{
	count_vm_event(MIGRATE_ROCM_FALLBACK);
	trace_mm_migrate_rocm(folio_pfn(src), why);
}

/*
 * Unmap phase; @src is locked, isolated and mapped.  Nothing changes
 * here except the queued flushes.
 */
bool __migrate_rocm_check(struct folio *src)
{
	struct rocm_walk w = { .from = src, .check = true };
	struct rocm_folio_facts f;
	enum rocm_reason why;
	u64 t = 0;

	rocm_folio_facts(src, &f);
	why = rocm_check_folio(&f);
	if (!why) {
		t = migrate_stage_begin();
		rocm_walk(&w, rocm_check_one);
		why = w.why;
		/* a mapping the walk skipped (exec's temporary stack) */
		if (!why && w.nr != folio_mapcount(src))
			why = ROCM_CHANGED;
	}
	if (why) {
		/* the classic unmap that follows is the folio's UNMAP */
		rocm_fallback(src, why);
		return false;
	}
	/* timed as UNMAP: the walk ROCM does instead; it replaced no PTE */
	migrate_stage_unmapped(t, 0);
	migrate_stage_rocm();
	return true;
}

/*
 * Make @dst look like @src to the rmap and memcg before any PTE points
 * at it: same anon_vma or mapping and index, uptodate, and charged to
 * the same memcg (@src keeps its own charge until it is freed).  Nobody
 * else has seen @dst yet, so the non-atomic flag update is safe.
 */
static void rocm_prepare(struct folio *src, struct folio *dst)
{
	dst->index = src->index;
	dst->mapping = src->mapping;
	if (folio_test_swapbacked(src))
		__folio_set_swapbacked(dst);
	if (folio_test_uptodate(src))
		folio_mark_uptodate(dst);
	mem_cgroup_replace_folio(src, dst);
	flush_dcache_folio(dst);
}

/*
 * Put every PTE back on @src, flushing each (@dst may be freed before
 * the batch flushes), and take back what rocm_prepare() gave @dst, which
 * the classic path reuses or frees.  Both hold the same data, unless a
 * writer with no PTE changed @src (ROCM_WRITTEN); nobody wrote @dst.
 * Others may have seen @dst (a thread waiting for its lock sets
 * PG_waiters), so its flags change atomically; PG_swapbacked stays, as
 * the classic path would set it again, non-atomically.
 *
 * False when @dst must go to neither the classic path nor put_new_folio:
 * still mapped, or held by a reader that took it through a switched PTE
 * (GUP, a long-term read pin included).  The classic path would copy
 * into a folio others use and charge it again; the reader would be left
 * with an uncharged folio that no index reaches.  Such a @dst keeps its
 * memcg charge, which its last put drops, and the reader keeps a copy
 * of what @src held at the copy, which later writes to the file or the
 * anon page no longer reach (as for a pinned page-cache folio that is
 * truncated).  @src does not move this time (-EBUSY).
 */
static bool rocm_undo(struct folio *src, struct folio *dst)
{
	struct rocm_walk undo = {
		.from = dst, .to = src, .inplace = ROCM_INPLACE,
	};

	if (folio_mapped(dst))
		rocm_walk(&undo, rocm_switch_one);
	/*
	 * Nothing can be left (every PTE is looked at under its lock, and a
	 * fork's child comes after its parent in rmap order) unless a
	 * mapping rmap cannot reach took @dst meanwhile.  The classic path
	 * must not get a mapped @dst; there is no safe way on from here.
	 */
	if (WARN_ON_ONCE(folio_mapped(dst)))
		return false;
	/*
	 * The PTEs put back before the count: GUP-fast took its reference
	 * before it read the PTE again (as for @src in rocm_finish()).  The
	 * allocation's reference is the only one expected.
	 */
	smp_mb();
	dst->mapping = NULL;
	if (folio_ref_count(dst) != 1)
		return false;
	mem_cgroup_uncharge(dst);
	folio_clear_uptodate(dst);
	return true;
}

/*
 * Under @src's frozen count (folio_migrate_mapping_copied()): was @src
 * written since the copy?  memfd_pin_folios() (udmabuf) pins a memfd's
 * folios straight from the page cache, and the pin's owner writes them
 * through its own mappings or DMA, with neither a PTE nor the folio
 * lock.  A pin taken after the check and dropped before the freeze
 * leaves no reference to find, but its writes after the copy would be
 * lost with @src; one after the freeze cannot come (no new reference).
 *
 * The check refused a mapping pinned so before, and a memfd sealed as
 * udmabuf wants (rocm_pin_sealed()): the compare runs only for a first
 * pin or seals since, a rare case.  Both stay true through the move once
 * true.  memfd_pin_folios() sets its mapping flag, and udmabuf reads the
 * seals under the inode lock, before the pin's references are taken;
 * the pin's put is fully ordered, as is the freeze that reads the count
 * after it, so what its pinner set or saw is seen here.  Other page
 * cache is written under
 * the folio lock, which ROCM holds.  Interrupts are off: order 0 only.
 */
bool migrate_rocm_unchanged(struct folio *dst, struct folio *src)
{
	size_t off;
	bool same = true;

	if (!rocm_pin_sealed(src->mapping) || rocm_compare_skipped())
		return true;
	VM_WARN_ON_ONCE_FOLIO(folio_test_large(src), src);
	for (off = 0; same && off < folio_size(src); off += PAGE_SIZE) {
		void *a = kmap_local_folio(src, off);
		void *b = kmap_local_folio(dst, off);

		same = !memcmp(a, b, PAGE_SIZE);
		kunmap_local(b);
		kunmap_local(a);
	}
	return same;
}

/*
 * @src is unmapped: may it go, with no reference nobody explains and,
 * for page cache, nothing written since the copy?  Page cache moves its
 * entry to @dst under a frozen count.  Anon needs only the count: @dst
 * already has what folio_migrate_mapping() would give it, and that would
 * set PG_swapbacked non-atomically on a folio that is already mapped.
 * Nothing writes anon memory without a PTE: a write pin needs a writable
 * PTE, and ROCM's anon folios are shared copy-on-write.
 */
static enum rocm_reason rocm_migrate_mapping(struct address_space *mapping,
					     struct folio *dst,
					     struct folio *src)
{
	if (!mapping)
		return folio_ref_count(src) == folio_expected_ref_count(src) + 1 ?
		       ROCM_OK : ROCM_RACE;
	switch (folio_migrate_mapping_copied(mapping, dst, src)) {
	case 0:
		return ROCM_OK;
	case -ESTALE:
		return ROCM_WRITTEN;
	default:
		return ROCM_RACE;
	}
}

/* Copy @src to @dst, timed as COPY; false if the copy failed. */
static bool rocm_copy(struct folio *src, struct folio *dst)
{
	u64 t = migrate_stage_begin();

	if (folio_mc_copy(dst, src))
		return false;
	migrate_stage_copied(t, folio_size(src));
	return true;
}

/*
 * After the switch walk (and a full barrier): did every mapping of @src
 * move to @dst, with nothing unexplained holding @src?  Then finish the
 * move; else put everything back and leave @src to the classic path, or
 * set *@dst_lost when rocm_undo() found @dst unusable.  @why is what the
 * walk found.
 */
static bool rocm_finish(struct folio *src, struct folio *dst,
			enum rocm_reason why, bool *dst_lost)
{
	struct address_space *mapping = folio_mapping(src);

	if (why == ROCM_OK && folio_mapped(src))
		why = ROCM_CHANGED;
	if (why == ROCM_OK)
		why = rocm_migrate_mapping(mapping, dst, src);
	if (why != ROCM_OK) {
		*dst_lost = !rocm_undo(src, dst);
		rocm_fallback(src, why);
		if (*dst_lost)
			trace_mm_migrate_rocm(folio_pfn(src), ROCM_DST_HELD);
		return false;
	}

	rocm_migrate_flags(dst, src);
	/* as after move_to_new_folio(): page cache must not free a mapping */
	if (!folio_test_anon(src))
		src->mapping = NULL;
	/*
	 * @dst carries the charge now; dropping @src's at once, rather than
	 * when the batch frees it, keeps a double charge to one folio.
	 */
	mem_cgroup_uncharge(src);

	/*
	 * What the compare says, for every folio (DEBUG_VM), but where a pin
	 * may write (read after the freeze, it stays true once true): there
	 * migrate_rocm_unchanged() compared under the freeze (unless told
	 * not to), and a pin may write @dst by now.
	 */
	if (IS_ENABLED(CONFIG_DEBUG_VM) &&
	    !(mapping && rocm_pin_sealed(mapping))) {
		void *a = kmap_local_folio(src, 0);
		void *b = kmap_local_folio(dst, 0);

		VM_WARN_ON_ONCE_FOLIO(memcmp(a, b, PAGE_SIZE), dst);
		kunmap_local(b);
		kunmap_local(a);
	}
	count_vm_event(MIGRATE_ROCM_SUCCESS);
	trace_mm_migrate_rocm(folio_pfn(src), ROCM_OK);
	return true;
}

/*
 * After the batch flushed what __migrate_rocm_check() queued: copy @src
 * to @dst and switch every mapping.  True when every mapping points at
 * @dst and @src only waits to be freed; the switched PTEs' old
 * translations are then queued on the batch, which must flush before
 * either folio is unlocked.  False when nothing changed and the classic
 * path must unmap @src, or, with *@dst_lost set, must leave @src and
 * drop @dst (rocm_undo()).  Both folios are locked.
 */
bool migrate_rocm_move(struct folio *src, struct folio *dst, bool *dst_lost)
{
	struct rocm_walk w = {
		.from = src, .to = dst, .check = true,
		.inplace = ROCM_INPLACE, .defer = ROCM_INPLACE,
	};
	u64 t;

	if (!rocm_copy(src, dst)) {
		rocm_fallback(src, ROCM_COPY);
		return false;
	}
	rocm_debug_delay(ROCM_DELAY_COPY);

	rocm_prepare(src, dst);
	t = migrate_stage_begin();
	rocm_walk(&w, rocm_switch_one);
	/* the switched PTEs before the reference count (GUP-fast rechecks) */
	smp_mb();
	if (!rocm_finish(src, dst, w.why, dst_lost))
		return false;
	migrate_stage_end(MIGRATE_STAGE_REMAP, t);
	return true;
}

/*
 * arm64 breaks a run's PTEs in batches (rocm_run_break()): under one PTE
 * lock every PTE of a batch goes to a migration entry and its TLBI is
 * issued (DSB ISHST, TLBI: arch_tlbbatch_add_pending()), one DSB ISH
 * completes them all (arch_tlbbatch_flush()), then the new PTEs are
 * written.  Per PTE that saves the DSB ISH, the barrier that waits for
 * every CPU to complete the broadcast TLBI, which flush_tlb_page() in
 * rocm_break_pte() issues each time.  It is safe only while that lock is
 * held from the first break to the last write: a reader faulting on a
 * broken PTE waits for the lock in migration_entry_wait() and then finds
 * the new PTE, as with one PTE at a time; with the lock dropped in
 * between it would find the migration entry and sleep on the folio lock.
 * The batch is small so that it fits on the stack.  (A range TLBI over
 * the batch's span would not do: a run's PTEs may lie anywhere in a page
 * table; without FEAT_TLBIRANGE a 512-page span makes flush_tlb_range()
 * flush the whole mm, with it unrelated entries go too.)  The saving is
 * expected on hardware, not measured: TCG models neither barrier.
 */
#define ROCM_BATCH_BREAK	ROCM_BREAK_ENTRY
#define ROCM_BATCH		(ROCM_BATCH_BREAK ? 8 : 1)

/* A broken PTE waiting for the batch's flush: it mapped @old, of the source. */
struct rocm_pending {
	pte_t *ptep;
	pte_t old;
	struct folio *to;
};

/*
 * ROCM's switch of a run: the folios that passed the check walk, of one
 * anon_vma or file mapping in ascending index order within one PTE
 * table's span (migrate_range_joins()).  Each PTE is switched as
 * migrate_rocm_move() switches it, but the whole run is one rmap walk:
 * the rmap lock once, the interval tree once over the run's offsets, per
 * VMA one notifier range, and per PTE table one walk and one lock.
 */
struct rocm_run {
	struct migrate_range_walk walk;	/* run, VMA, per-PTE callback */
	struct rocm_walk w;		/* for rocm_switch_pte(), rocm_switch_map() */
	u8 why[MIGRATE_RANGE_MAX];	/* enum rocm_reason, per folio */
	bool batch;			/* break in batches (arm64) */
	unsigned int npend;
	struct rocm_pending pend[ROCM_BATCH];
};

/* The source folio a pending PTE mapped, and its address in @vma. */
static struct folio *rocm_pending_from(const struct rocm_pending *p)
{
	return page_folio(pte_page(p->old));
}

static unsigned long rocm_pending_addr(struct vm_area_struct *vma,
				       const struct rocm_pending *p)
{
	return migrate_range_address(vma, rocm_pending_from(p));
}

/* Retire the old translations of the batch's broken PTEs, then wait once. */
static void rocm_run_flush_tlb(struct vm_area_struct *vma, struct rocm_run *r)
{
	unsigned int k;
#ifdef CONFIG_ARM64
	/* arm64's is empty: the TLBIs are issued at once, the DSB at the end */
	struct arch_tlbflush_unmap_batch batch = {};

	for (k = 0; k < r->npend; k++)
		migrate_rocm_tlbbatch_add(&batch, vma->vm_mm,
					  rocm_pending_addr(vma, &r->pend[k]));
	arch_tlbbatch_flush(&batch);
#else
	/* not reached: only arm64 breaks in batches (ROCM_BATCH_BREAK) */
	for (k = 0; k < r->npend; k++)
		flush_tlb_page(vma, rocm_pending_addr(vma, &r->pend[k]));
#endif
}

/*
 * Under the PTL: flush the batch's broken PTEs and write their new PTEs.
 * Called when the batch is full and before the walk drops the PTL
 * (migrate_range_walk's table_done).
 */
static void rocm_run_flush(struct migrate_range_walk *mw)
{
	struct rocm_run *r = container_of(mw, struct rocm_run, walk);
	unsigned int k;

	if (!r->npend)
		return;
	rocm_run_flush_tlb(mw->vma, r);
	for (k = 0; k < r->npend; k++) {
		struct rocm_pending *p = &r->pend[k];

		rocm_switch_map(&r->w, mw->vma, rocm_pending_addr(mw->vma, p),
				p->ptep, p->old, rocm_pending_from(p), p->to);
	}
	r->npend = 0;
}

/* Under the PTL: break the PTE at @addr, mapping r->w.from, in a batch. */
static bool rocm_run_break(struct rocm_run *r, struct vm_area_struct *vma,
			   unsigned long addr, pte_t *ptep)
{
	pte_t old = ptep_get(ptep);

	if (!rocm_switch_ok(&r->w, old))
		return false;
	/* rocm_run_flush() finds the source and the address from @old */
	VM_WARN_ON_ONCE(pte_pfn(old) != folio_pfn(r->w.from) ||
			migrate_range_address(vma, r->w.from) != addr);
	rocm_break_entry(vma, addr, ptep, old);
	r->pend[r->npend++] = (struct rocm_pending) {
		.ptep = ptep, .old = old, .to = r->w.to,
	};
	if (r->npend == ROCM_BATCH)
		rocm_run_flush(&r->walk);
	return true;
}

/* Is non-present @pte a device-private or device-exclusive entry of @src? */
static bool rocm_run_device_entry(pte_t pte, struct folio *src)
{
	return migrate_rocm_device_entry(pte, folio_pfn(src));
}

/* Under the PTL: switch the PTE at @addr if it maps @src, the @i-th. */
static bool rocm_run_pte(struct migrate_range_walk *mw, struct folio *src,
			 struct folio *dst, unsigned int i, unsigned long addr,
			 pte_t *ptep)
{
	struct rocm_run *r = container_of(mw, struct rocm_run, walk);
	pte_t pte = ptep_get(ptep);

	if (r->why[i])
		return false;
	if (!pte_present(pte)) {
		/*
		 * A device entry for @src is no mapping the switch can take
		 * (6.12's folio_mapped() does not count it, 7.3's does):
		 * give up on @src, as the per-folio walk does.
		 */
		if (rocm_run_device_entry(pte, src))
			r->why[i] = ROCM_CHANGED;
		return false;
	}
	if (pte_pfn(pte) != folio_pfn(src))
		return false;
	r->why[i] = rocm_pte_rules(src, mw->vma, pte, false);
	if (r->why[i])
		return false;
	r->w.from = src;
	r->w.to = dst;
	if (r->batch ? rocm_run_break(r, mw->vma, addr, ptep) :
		       rocm_switch_pte(&r->w, mw->vma, addr, ptep))
		return true;
	r->why[i] = r->w.why;
	return false;
}

/* Is a folio of the run still mapped that may yet be switched? */
static bool rocm_run_left(struct rocm_run *r)
{
	struct folio *src = r->walk.src;
	unsigned int i;

	for (i = 0; i < r->walk.nr; i++, src = list_next_entry(src, lru))
		if (!r->why[i] && folio_mapped(src))
			return true;
	return false;
}

/* Switch what @vma maps of the run; false when nothing is left to do. */
static bool rocm_run_vma(struct rocm_run *r, struct vm_area_struct *vma)
{
	struct mmu_notifier_range range;
	unsigned long start, end;

	if (!rocm_invalid_vma(vma, NULL) &&
	    migrate_range_span(vma, r->walk.src, r->walk.nr, &start, &end)) {
		mmu_notifier_range_init(&range, MMU_NOTIFY_CLEAR, 0,
					vma->vm_mm, start, end);
		mmu_notifier_invalidate_range_start(&range);
		r->walk.vma = vma;
		migrate_range_walk_ptes(&r->walk);
		mmu_notifier_invalidate_range_end(&range);
		rocm_debug_delay(ROCM_DELAY_SWITCH);
	}
	cond_resched();
	/* as rmap_walk() with rocm_walk_done() */
	return rocm_run_left(r);
}

/*
 * Switch the run in the VMAs that the held rmap lock @sem shows; true if
 * a writer waits for @sem (migrate_range_writer_waits()): then the run
 * gives it up, and its folios that may still move finish with the
 * per-folio walk, one lock hold each as before runs (PTEs already
 * switched map the copy and do not match the source).
 */
static bool rocm_run_vmas(struct rocm_run *r, struct folio *last,
			  struct rw_semaphore *sem)
{
	struct folio *first = r->walk.src;
	struct anon_vma_chain *avc;
	struct vm_area_struct *vma;
	unsigned int n = 0;

	if (folio_test_anon(first)) {
		migrate_range_anon_foreach(avc, folio_anon_vma(first),
					   first->index, last->index) {
			if (migrate_range_writer_waits(sem, n++))
				return true;
			if (!rocm_run_vma(r, avc->vma))
				return false;
		}
		return false;
	}
	migrate_range_file_foreach(vma, first->mapping, first->index,
				   last->index) {
		if (migrate_range_writer_waits(sem, n++))
			return true;
		if (!rocm_run_vma(r, vma))
			return false;
	}
	return false;
}

/* migrate_rocm_move()'s walk for each folio of the run still to move. */
static void rocm_run_per_folio(struct rocm_run *r)
{
	struct folio *src = r->walk.src, *dst = r->walk.dst;
	unsigned int i;

	for (i = 0; i < r->walk.nr; i++) {
		if (!r->why[i] && folio_mapped(src)) {
			struct rocm_walk w = {
				.from = src, .to = dst, .check = true,
				.inplace = ROCM_INPLACE, .defer = ROCM_INPLACE,
			};

			rocm_walk(&w, rocm_switch_one);
			r->why[i] = w.why;
		}
		src = list_next_entry(src, lru);
		dst = list_next_entry(dst, lru);
	}
}

/*
 * Every VMA that may map a folio of the run, as rmap_walk() finds them
 * for each folio.  The folios are locked; for anon, migrate_folio_unmap()
 * holds a reference on their anon_vma, which cannot change or go away.
 */
static void rocm_run_switch(struct rocm_run *r, struct folio *last)
{
	struct folio *first = r->walk.src;
	struct anon_vma *anon_vma;
	bool handed_over;

	if (folio_test_anon(first)) {
		anon_vma = folio_anon_vma(first);
		anon_vma_lock_read(anon_vma);
		handed_over = rocm_run_vmas(r, last, &anon_vma->root->rwsem);
		anon_vma_unlock_read(anon_vma);
	} else {
		i_mmap_lock_read(first->mapping);
		handed_over = rocm_run_vmas(r, last,
					    &first->mapping->i_mmap_rwsem);
		i_mmap_unlock_read(first->mapping);
	}
	if (handed_over) {
		migrate_range_count_handover(MIGRATE_RANGE_HANDOVER_ROCM);
		rocm_run_per_folio(r);
	}
}

u64 migrate_rocm_move_run(struct folio *src, struct folio *dst,
			  unsigned int nr, struct migrate_stage_ctx *ctx,
			  unsigned int idx, u64 *lost)
{
	struct rocm_run r = {
		.walk = { .src = src, .dst = dst, .nr = nr,
			  .pte = rocm_run_pte },
		.w = { .check = true, .inplace = ROCM_INPLACE,
		       .defer = ROCM_INPLACE },
		.batch = ROCM_BATCH_BREAK && rocm_batching(),
	};
	struct folio *s, *d, *last = src;
	unsigned int i;
	u64 moved = 0, t;

	if (r.batch)
		r.walk.table_done = rocm_run_flush;
	/* No CPU can write the folios now: copy while readers use them. */
	for (i = 0, s = src, d = dst; i < nr; i++) {
		migrate_stage_folio_select(ctx, idx + i);
		if (rocm_copy(s, d))
			rocm_prepare(s, d);
		else
			r.why[i] = ROCM_COPY;
		last = s;
		s = list_next_entry(s, lru);
		d = list_next_entry(d, lru);
	}
	rocm_debug_delay(ROCM_DELAY_COPY);

	t = migrate_stage_run_begin(ctx);
	rocm_run_switch(&r, last);
	/* the walk's time, in equal shares, as the range remap does */
	migrate_stage_run_done(ctx, MIGRATE_STAGE_REMAP, idx, nr, t);
	/* the switched PTEs before the reference count (GUP-fast rechecks) */
	smp_mb();
	for (i = 0, s = src, d = dst; i < nr; i++) {
		bool dst_lost = false;

		if (r.why[i] == ROCM_COPY)
			rocm_fallback(s, ROCM_COPY);
		else if (rocm_finish(s, d, r.why[i], &dst_lost))
			moved |= BIT_ULL(i);
		if (dst_lost)
			*lost |= BIT_ULL(i);
		s = list_next_entry(s, lru);
		d = list_next_entry(d, lru);
	}
	migrate_range_count_rocm(nr, hweight64(moved));
	return moved;
}

/*
 * The batch's side: migrate_pages_batch() calls it on both bases.
 */

/*
 * Move the @nr ROCM folios from @src on, the batch's @idx-th first, all
 * recorded with @state and @anon_vma: one alone, a run of them
 * (vm.migrate_range_unmap) with one rmap walk.  A folio ROCM gives up is
 * recorded as unmapped (FOLIO_WAS_MAPPED) for migrate_folio_move() to
 * unmap late (migrate_range_unmap_late()) and remap.  A moved folio's
 * @dst is live (mapped, and in the page cache if it is a file folio), so
 * nothing is recorded in it: others read that word without the folio
 * lock (__find_get_block_slow() reads a block device folio's buffers
 * under i_private_lock only).  Its bit in rb->moved is set instead, and
 * the anon_vma reference taken for the unmap, no longer needed, dropped.
 */
static void migrate_rocm_batch_run(struct migrate_rocm_batch *rb,
				   struct migrate_range_run *run, int state,
				   struct anon_vma *anon_vma)
{
	struct migrate_stage_ctx *ctx = migrate_stage_task_ctx();
	struct folio *dst = run->dst;
	u64 moved, lost = 0;
	unsigned int i;

	migrate_stage_rocm_begin(ctx);
	if (run->nr == 1) {
		bool dst_lost = false;

		migrate_stage_folio_select(ctx, run->idx);
		moved = migrate_rocm_move(run->first, dst, &dst_lost);
		lost = dst_lost;
	} else {
		moved = migrate_rocm_move_run(run->first, dst, run->nr, ctx,
					      run->idx, &lost);
	}
	migrate_stage_rocm_done(ctx, run->idx, run->nr, moved);
	for (i = 0; i < run->nr; i++, dst = list_next_entry(dst, lru)) {
		/* an undone @dst is off every index: its record is ours */
		if (lost & BIT_ULL(i)) {
			rb->rec->record(dst, state | MIGRATE_FOLIO_WAS_MAPPED,
					anon_vma);
			continue;
		}
		if (!(moved & BIT_ULL(i))) {
			rb->rec->record(dst, (state & ~MIGRATE_FOLIO_WAS_ROCM) |
					MIGRATE_FOLIO_WAS_MAPPED, anon_vma);
			continue;
		}
		__set_bit(run->idx + i, rb->moved);
		rb->nr_moved++;
		if (anon_vma)
			put_anon_vma(anon_vma);
	}
	run->nr = 0;
}

/*
 * May @src, recorded with @state and @anon_vma, join the open ROCM @run,
 * recorded with @rstate and @ranon?  Its own rules: the page-table side
 * is migrate_range_run_step()'s.
 */
static bool migrate_rocm_fits(struct migrate_range_run *run, int rstate,
			      struct anon_vma *ranon, struct folio *src,
			      int state, struct anon_vma *anon_vma)
{
	return migrate_range_remap_wanted() && state == rstate &&
	       anon_vma == ranon && !folio_test_ksm(run->first) &&
	       !folio_test_ksm(src);
}

/*
 * The batch's flush retired every stale TLB entry of the folios that
 * migrate_rocm_check() took: copy each and switch its mappings, then
 * flush the switched PTEs once for all before any folio is unlocked or
 * freed.  Folios of one rmap in index order are switched in runs when
 * vm.migrate_range_unmap is on.  Each folio's record in its destination
 * is taken out while ROCM works on it, and put back unless it moved.
 */
void __migrate_rocm_batch(struct migrate_rocm_batch *rb,
			  struct list_head *src_folios,
			  struct list_head *dst_folios)
{
	struct folio *src, *dst = list_first_entry(dst_folios, struct folio, lru);
	struct migrate_range_run run = {}, done;
	struct anon_vma *ranon = NULL;
	unsigned int idx = 0;
	int rstate = 0;
	u64 t;

	bitmap_zero(rb->moved, MIGRATE_ROCM_MAX_BATCH);
	rb->nr_moved = 0;
	rb->pos = 0;
	list_for_each_entry(src, src_folios, lru) {
		struct anon_vma *anon_vma;
		int state;
		bool rocm;

		rb->rec->extract(dst, &state, &anon_vma);
		if (idx >= MIGRATE_ROCM_MAX_BATCH &&
		    (state & MIGRATE_FOLIO_WAS_ROCM))
			state ^= MIGRATE_FOLIO_WAS_ROCM | MIGRATE_FOLIO_WAS_MAPPED;
		rocm = state & MIGRATE_FOLIO_WAS_ROCM;
		if (rocm && run.nr &&
		    !migrate_rocm_fits(&run, rstate, ranon, src, state,
				       anon_vma))
			migrate_rocm_batch_run(rb, &run, rstate, ranon);
		if (migrate_range_run_step(&run, &done, src, dst, idx++, rocm))
			migrate_rocm_batch_run(rb, &done, rstate, ranon);
		if (run.nr == 1) {	/* @src opened it */
			rstate = state;
			ranon = anon_vma;
		}
		if (!rocm)
			rb->rec->record(dst, state, anon_vma);
		dst = list_next_entry(dst, lru);
	}
	if (run.nr)
		migrate_rocm_batch_run(rb, &run, rstate, ranon);
	t = migrate_stage_flush_begin();
	try_to_unmap_flush();
	migrate_stage_end(MIGRATE_STAGE_FLUSH, t);
	if (migrate_rocm_debug_checking()) {
		idx = 0;
		list_for_each_entry(dst, dst_folios, lru) {
			if (idx >= MIGRATE_ROCM_MAX_BATCH)
				break;
			if (test_bit(idx++, rb->moved))
				migrate_rocm_debug_moved(dst);
		}
	}
}

#ifdef CONFIG_MIGRATE_ROCM_KUNIT_TEST
#include "tests/migrate_rocm_kunit.h"
#endif
