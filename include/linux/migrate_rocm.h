/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ROCM: read-only copy migration.
 *
 * A folio whose every mapping is a present, read-only PTE, and that no
 * one can write in place without first taking the folio lock or copying
 * it away (COW), can be copied while it stays mapped.  Before the copy,
 * a check walk applies the rules to every mapping and queues a TLB
 * flush of each, so that no CPU keeps a stale writable translation; the
 * migration batch flushes once for all its folios.  After that flush the
 * folio is copied and each PTE is switched to the copy under its
 * page-table lock, so no migration entry is installed and no reader ever
 * sleeps on one.  See Documentation/mm/migrate_rocm.rst.
 */
#ifndef _LINUX_MIGRATE_ROCM_H
#define _LINUX_MIGRATE_ROCM_H

#include <linux/bitmap.h>
#include <linux/migrate_mode.h>
#include <linux/pgtable.h>
#include <linux/types.h>

struct anon_vma;
struct folio;
struct list_head;

/*
 * ROCM moves only the first this many folios of a batch (a bitmap of
 * them tells migrate_folio_move() which it moved); it gives up those it
 * checked after them, to the classic path.  Batches are longer only when
 * NR_MAX_BATCHED_MIGRATION is (arm64 with 16K or 64K pages) or a split
 * large folio's pages make one.
 */
#define MIGRATE_ROCM_MAX_BATCH	512

/*
 * What mm/migrate.c records of a batch's folio in its destination
 * (__migrate_folio_record(); in migrate_info on 7.3, ->private on 6.12):
 * the bits ROCM's batch reads and changes, and the calls that read and
 * write the record.
 */
#define MIGRATE_FOLIO_WAS_MAPPED	BIT(0)
#ifdef CONFIG_MIGRATE_ROCM
#define MIGRATE_FOLIO_WAS_ROCM		BIT(2)	/* migrate_rocm_check() took it */
#else
#define MIGRATE_FOLIO_WAS_ROCM		0
#endif

struct migrate_rocm_record {
	void (*record)(struct folio *dst, int state, struct anon_vma *anon_vma);
	void (*extract)(struct folio *dst, int *state,
			struct anon_vma **anon_vma);
};

/* ROCM's part of one migrate_pages_batch() call. */
struct migrate_rocm_batch {
	const struct migrate_rocm_record *rec;
	unsigned int nr;	/* folios migrate_rocm_check() took */
#ifdef CONFIG_MIGRATE_ROCM
	unsigned int nr_moved;	/* of them, moved and not yet seen by the loop */
	unsigned int pos;	/* the move loop's place in its first pass */
	DECLARE_BITMAP(moved, MIGRATE_ROCM_MAX_BATCH);
#endif
};

#define MIGRATE_ROCM_BATCH_INIT(r)	{ .rec = (r) }

/* Why a folio is not eligible; ROCM_OK when it is. */
enum rocm_reason {
	ROCM_OK,
	ROCM_OFF,		/* vm.migrate_rocm is 0 */
	ROCM_LARGE,		/* not order-0 */
	ROCM_NOT_LRU,		/* movable_ops or off the LRU */
	ROCM_HUGETLB,
	ROCM_WRITEBACK,		/* under writeback */
	ROCM_DIRTY,		/* a dirty page-cache folio */
	ROCM_PINNED,		/* may be DMA-pinned */
	ROCM_REFS,		/* references its mappings and caches do not explain */
	ROCM_SWAPCACHE,
	ROCM_MLOCKED,		/* mlocked folio or VM_LOCKED mapping */
	ROCM_PRIVATE,		/* fs-private data (buffer heads) */
	ROCM_MAPPING,		/* a_ops whose migrate_folio may touch more than data */
	ROCM_EXCLUSIVE,		/* anon folio exclusive to one mapping */
	ROCM_PTE_WRITE,		/* a writable PTE */
	ROCM_PTE_DIRTY,		/* a dirty PTE of a page-cache folio */
	ROCM_SHARED_WRITE,	/* shared writable mapping without page_mkwrite */
	ROCM_PMD,		/* mapped by a PMD */
	ROCM_CHANGED,		/* the mappings changed under the switch */
	ROCM_RACE,		/* a reference appeared during the switch */
	ROCM_COPY,		/* the copy hit a memory error */
	ROCM_FLUSH_PENDING,	/* the mm has a TLB flush pending */
	ROCM_WRITTEN,		/* written after the copy, through no PTE */
	ROCM_PIN_SEALED,	/* memfd pinned, or sealed for udmabuf's pins */
	ROCM_DST_HELD,		/* after an undo: the copy is held, not reused */
	NR_ROCM_REASONS
};

/* What the folio-level rules look at, gathered under the folio lock. */
struct rocm_folio_facts {
	unsigned int order;
	bool lru;		/* an LRU folio (not movable_ops) */
	bool hugetlb;
	bool writeback;
	bool dirty;		/* PG_dirty (page cache: and can be written back) */
	bool anon;
	bool swapcache;
	bool mlocked;
	bool private;		/* PG_private */
	bool maybe_pinned;	/* folio_maybe_dma_pinned() */
	bool plain_aops;	/* page cache whose migrate_folio copies data only */
	bool anon_exclusive;	/* PageAnonExclusive() */
	bool shmem_writable;	/* shmem that some mapping may write */
	bool pin_sealed;	/* memfd pinned, or udmabuf may (its seals) */
	int ref_count;		/* folio_ref_count() */
	int expected_refs;	/* folio_expected_ref_count() + the isolation ref */
};

/* What the per-mapping rules look at, gathered under the PTE lock. */
struct rocm_pte_facts {
	bool anon;		/* the folio is anonymous */
	bool pte_write;
	bool pte_dirty;
	bool anon_exclusive;
	bool vm_locked;		/* VM_LOCKED */
	bool vm_shared;		/* VM_SHARED */
	bool vm_maywrite;	/* VM_MAYWRITE */
	bool page_mkwrite;	/* vm_ops->page_mkwrite */
	bool flush_pending;	/* mm_tlb_flush_pending() */
};

enum rocm_reason rocm_check_folio(const struct rocm_folio_facts *f);
/* Could memfd seals @seals let udmabuf pin the file's folios? */
bool rocm_seals_pinnable(unsigned int seals);
enum rocm_reason rocm_check_pte(const struct rocm_pte_facts *p);
const char *rocm_reason_name(enum rocm_reason reason);

#ifdef CONFIG_MIGRATE_ROCM
#include <linux/jump_label.h>

DECLARE_STATIC_KEY_FALSE(migrate_rocm_key);

bool __migrate_rocm_check(struct folio *src);
/* *@dst_lost: ROCM undid the move, and @dst must be dropped, not reused */
bool migrate_rocm_move(struct folio *src, struct folio *dst, bool *dst_lost);
struct migrate_stage_ctx;
/*
 * migrate_rocm_move() for a run of @nr folios from @src on (the batch's
 * @idx-th first), with their destinations from @dst on: one rmap walk
 * for the run.  Returns a mask of the folios that moved; sets in *@lost
 * the bits of those whose @dst must be dropped.
 */
u64 migrate_rocm_move_run(struct folio *src, struct folio *dst,
			  unsigned int nr, struct migrate_stage_ctx *ctx,
			  unsigned int idx, u64 *lost);

struct mm_struct;
/* mm/rmap.c: add a PTE's old translation to the batched flush */
bool rocm_defer_flush(struct mm_struct *mm, pte_t pteval, unsigned long uaddr);
/* mm/migrate.c: folio_migrate_flags() without the memcg transfer */
void rocm_migrate_flags(struct folio *newfolio, struct folio *folio);
struct address_space;
/*
 * mm/migrate.c: folio_migrate_mapping() for a @newfolio copied from
 * @folio before the freeze; -ESTALE when, under the freeze, @folio no
 * longer holds what @newfolio does.
 */
int folio_migrate_mapping_copied(struct address_space *mapping,
				 struct folio *newfolio, struct folio *folio);
/* Does @dst still hold what @src does?  Called with @src frozen. */
bool migrate_rocm_unchanged(struct folio *dst, struct folio *src);

void __migrate_rocm_batch(struct migrate_rocm_batch *rb,
			  struct list_head *src_folios,
			  struct list_head *dst_folios);

/*
 * After the batch's flush: move the folios that migrate_rocm_check()
 * took (rb->nr of them) in place; see __migrate_rocm_batch().
 */
static inline void migrate_rocm_batch(struct migrate_rocm_batch *rb,
				      struct list_head *src_folios,
				      struct list_head *dst_folios)
{
	if (rb->nr)
		__migrate_rocm_batch(rb, src_folios, dst_folios);
}

/*
 * The move loop's next folio, in the batch's order: did ROCM move it?
 * Every folio ROCM moved is finished on the loop's first pass; the loop
 * passes NULL on the others.
 */
static inline bool migrate_rocm_moved(struct migrate_rocm_batch *rb)
{
	unsigned int pos;

	if (!rb || !rb->nr_moved)
		return false;
	pos = rb->pos++;
	if (pos >= MIGRATE_ROCM_MAX_BATCH || !test_bit(pos, rb->moved))
		return false;
	rb->nr_moved--;
	return true;
}

#ifdef CONFIG_MIGRATE_ROCM_DEBUG
/* Look at moved folios (debugfs migrate_rocm/check_moved, 0 at boot)? */
bool migrate_rocm_debug_checking(void);
/* a moved, still locked @dst, looked at as a lockless reader would */
void migrate_rocm_debug_moved(struct folio *dst);
#else
static inline bool migrate_rocm_debug_checking(void)
{
	return false;
}

static inline void migrate_rocm_debug_moved(struct folio *dst)
{
}
#endif

/*
 * Unmap phase: may locked, isolated, mapped @src move in place?  True
 * when every mapping passed the rules and its TLB flush is queued on the
 * batch; then migrate_rocm_move() must be called after that flush.
 * Off (vm.migrate_rocm = 0) it costs a patched-out branch.
 */
static inline bool migrate_rocm_check(struct folio *src)
{
	if (!static_branch_unlikely(&migrate_rocm_key))
		return false;
	return __migrate_rocm_check(src);
}
#else
static inline bool migrate_rocm_check(struct folio *src)
{
	return false;
}

static inline bool migrate_rocm_move(struct folio *src, struct folio *dst,
				     bool *dst_lost)
{
	return false;
}

static inline bool migrate_rocm_unchanged(struct folio *dst, struct folio *src)
{
	return true;
}

static inline void migrate_rocm_batch(struct migrate_rocm_batch *rb,
				      struct list_head *src_folios,
				      struct list_head *dst_folios)
{
}

static inline bool migrate_rocm_moved(struct migrate_rocm_batch *rb)
{
	return false;
}
#endif

#endif /* _LINUX_MIGRATE_ROCM_H */
