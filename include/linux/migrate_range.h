/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Range-batched unmap for migration.  See mm/migrate_range.c.
 */
#ifndef _LINUX_MIGRATE_RANGE_H
#define _LINUX_MIGRATE_RANGE_H

#include <linux/bits.h>
#include <linux/jump_label.h>
#include <linux/rmap.h>
#include <linux/rwsem.h>

struct folio;

/* The most folios one run unmaps under one anon_vma lock. */
#define MIGRATE_RANGE_MAX	64

/*
 * A run holds its rmap lock over up to 64 folios' worth of VMAs, where a
 * per-folio walk held it for one folio's.  Before each further
 * MIGRATE_RANGE_VMAS VMAs, if a writer waits for the lock (for an
 * anon_vma: fork, munmap, a VMA split or merge anywhere in the process
 * tree; for a file: mmap, munmap), the run gives it up and finishes the
 * per-folio way.
 */
#define MIGRATE_RANGE_VMAS	16

/* Before the next VMA, @n walked, of a run that holds @sem: stop? */
static inline bool migrate_range_writer_waits(struct rw_semaphore *sem,
					      unsigned int n)
{
	return n && !(n % MIGRATE_RANGE_VMAS) && rwsem_is_contended(sem);
}

/*
 * The bits of a migration entry that the remap gives back to the PTE,
 * as each base's mm/migrate_range_compat.h reads them.
 */
enum {
	MIGRATE_RANGE_ENTRY_YOUNG	= BIT(0),
	MIGRATE_RANGE_ENTRY_DIRTY	= BIT(1),
	MIGRATE_RANGE_ENTRY_WRITE	= BIT(2),
	MIGRATE_RANGE_ENTRY_READ	= BIT(3),	/* not exclusive */
};

/* Which run gave its rmap lock up to a waiting writer (debugfs stats). */
enum migrate_range_handover {
	MIGRATE_RANGE_HANDOVER_UNMAP,
	MIGRATE_RANGE_HANDOVER_REMAP,
	MIGRATE_RANGE_HANDOVER_ROCM,
	NR_MIGRATE_RANGE_HANDOVERS
};

/*
 * A run that a batch gathers: folios next to each other in the batch
 * that one rmap pass may take (migrate_range_joins()).
 */
struct migrate_range_run {
	struct folio *first;	/* the run's first source folio */
	struct folio *last;	/* its last source folio so far */
	struct folio *dst;	/* @first's destination folio */
	unsigned int idx;	/* @first's place in the batch */
	unsigned int nr;	/* folios in the run; 0: none is open */
};

/*
 * Moved folios that wait, locked, for one range remap of their run, in
 * a move loop: done() finishes a folio's move after the run's remap
 * (@mapped: the remap mapped all of it; else remove_migration_ptes()
 * must), as the loop would have finished it.
 */
struct migrate_range_remap {
	struct migrate_range_run run;
	void (*done)(struct folio *src, struct folio *dst, bool mapped,
		     int reason);
	int reason;		/* enum migrate_reason */
};

#define MIGRATE_RANGE_REMAP_INIT(fn, why)	{ .done = (fn), .reason = (why) }

#ifdef CONFIG_MIGRATE_RANGE
DECLARE_STATIC_KEY_FALSE(migrate_range_enabled);

bool __migrate_range_defer(struct folio *src);
bool migrate_range_joins(struct folio *first, struct folio *last,
			 unsigned int nr, struct folio *folio);
void migrate_range_unmap_run(struct folio *first, unsigned int nr);
bool migrate_range_remap_run(struct folio *src, struct folio *dst,
			     unsigned int nr);
/* ROCM switched a run of @nr folios, @moved of them to their copies */
void migrate_range_count_rocm(unsigned int nr, unsigned int moved);
/* Does a migration entry for the locked, moved @src map it still? */
bool migrate_range_entries_left(struct folio *src);
void migrate_range_count_handover(enum migrate_range_handover which);
void __migrate_range_unmap_batch(struct list_head *folios,
				 struct list_head *dst_folios);
/* mm/rmap.c: try_to_migrate_one()'s clear of one PTE */
pte_t migrate_ptep_clear(struct vm_area_struct *vma, unsigned long addr,
			 pte_t *ptep, enum ttu_flags flags);
bool __migrate_range_unmap_late(struct folio *src);
bool __migrate_range_remap_later(struct migrate_range_remap *rr,
				 struct folio *src, struct folio *dst);
void __migrate_range_remap_finish(struct migrate_range_remap *rr);

/*
 * Should migrate_folio_unmap() leave the mapped, locked @src for its
 * batch's range unmap (migrate_range_unmap_run()) rather than unmap it
 * now?  Only a folio whose unmap would queue its flush (@ttu has
 * TTU_BATCH_FLUSH), so the batch flush still precedes every copy.
 */
static inline bool migrate_range_defer(struct folio *src, enum ttu_flags ttu)
{
	return static_branch_unlikely(&migrate_range_enabled) &&
	       (ttu & TTU_BATCH_FLUSH) && __migrate_range_defer(src);
}

/* Does migrate_pages_batch() remap its moved folios in runs? */
static inline bool migrate_range_remap_wanted(void)
{
	return static_branch_unlikely(&migrate_range_enabled);
}

/*
 * May @src, moved to @dst, be remapped with its run?  Not a swap cache
 * folio: migrate_folio_move() keeps its state in @dst's private field
 * until then.
 */
static inline bool migrate_range_remap_ok(struct folio *src,
					  struct folio *dst)
{
	return __migrate_range_defer(src) && !folio_test_swapcache(dst);
}

/* Before the batch's flush: unmap, in runs, what migrate_range_defer() left. */
static inline void migrate_range_unmap_batch(struct list_head *folios,
					     struct list_head *dst_folios)
{
	if (static_branch_unlikely(&migrate_range_enabled))
		__migrate_range_unmap_batch(folios, dst_folios);
}

/* See __migrate_range_unmap_late(). */
static inline bool migrate_range_unmap_late(struct folio *src)
{
	return folio_mapped(src) && __migrate_range_unmap_late(src);
}

/*
 * In the move loop, before @src's move to @dst: end the open run if
 * @src cannot join it, so that it is not ended while @dst is off its
 * list, and (unless what rules @src out shows only after its copy: an
 * mlocked folio, a swap cache one) does not wait through that move.
 */
static inline void migrate_range_remap_prepare(struct migrate_range_remap *rr,
					       struct folio *src,
					       struct folio *dst)
{
	struct migrate_range_run *run = &rr->run;

	if (run->nr && !(migrate_range_remap_ok(src, dst) &&
			 migrate_range_joins(run->first, run->last, run->nr,
					     src)))
		__migrate_range_remap_finish(rr);
}

/*
 * In the move loop, after @src's move: end the open run unless @src
 * joined it (a run is of neighbours on both lists), or when it is full.
 */
static inline void migrate_range_remap_next(struct migrate_range_remap *rr,
					    struct folio *src)
{
	if (rr->run.nr && (rr->run.last != src ||
			   rr->run.nr == MIGRATE_RANGE_MAX))
		__migrate_range_remap_finish(rr);
}

/* At the end of the move loop's pass: map the run left open. */
static inline void migrate_range_remap_end(struct migrate_range_remap *rr)
{
	if (rr->run.nr)
		__migrate_range_remap_finish(rr);
}

/* See __migrate_range_remap_later(); @rr may be NULL. */
static inline bool migrate_range_remap_later(struct migrate_range_remap *rr,
					     struct folio *src,
					     struct folio *dst)
{
	return rr && static_branch_unlikely(&migrate_range_enabled) &&
	       __migrate_range_remap_later(rr, src, dst);
}
#else
static inline bool migrate_range_defer(struct folio *src, enum ttu_flags ttu)
{
	return false;
}

static inline bool migrate_range_remap_wanted(void)
{
	return false;
}

static inline bool migrate_range_remap_ok(struct folio *src,
					  struct folio *dst)
{
	return false;
}

static inline bool migrate_range_remap_run(struct folio *src,
					   struct folio *dst, unsigned int nr)
{
	return false;
}

static inline bool migrate_range_joins(struct folio *first,
				       struct folio *last, unsigned int nr,
				       struct folio *folio)
{
	return false;
}

static inline void migrate_range_unmap_run(struct folio *first,
					   unsigned int nr)
{
}

static inline void migrate_range_count_rocm(unsigned int nr,
					    unsigned int moved)
{
}

static inline bool migrate_range_entries_left(struct folio *src)
{
	return false;
}

static inline void
migrate_range_count_handover(enum migrate_range_handover which)
{
}

static inline void migrate_range_unmap_batch(struct list_head *folios,
					     struct list_head *dst_folios)
{
}

static inline bool migrate_range_unmap_late(struct folio *src)
{
	return false;
}

static inline bool migrate_range_remap_later(struct migrate_range_remap *rr,
					     struct folio *src,
					     struct folio *dst)
{
	return false;
}

static inline void migrate_range_remap_prepare(struct migrate_range_remap *rr,
					       struct folio *src,
					       struct folio *dst)
{
}

static inline void migrate_range_remap_next(struct migrate_range_remap *rr,
					    struct folio *src)
{
}

static inline void migrate_range_remap_end(struct migrate_range_remap *rr)
{
}
#endif

/*
 * Take @src, the batch's @idx-th folio (moving to @dst), into @run if it
 * is a @member.  A folio that is not, or that cannot join the open run,
 * ends that run first: it is copied to @done and true is returned, for
 * the caller to finish.  The batch's runs are what is left open at the
 * end and every @done.
 */
static inline bool migrate_range_run_step(struct migrate_range_run *run,
					  struct migrate_range_run *done,
					  struct folio *src, struct folio *dst,
					  unsigned int idx, bool member)
{
	bool ended = run->nr && (!member ||
				 !migrate_range_joins(run->first, run->last,
						      run->nr, src));

	if (ended) {
		*done = *run;
		run->nr = 0;
	}
	if (member) {
		if (!run->nr) {
			run->first = src;
			run->dst = dst;
			run->idx = idx;
		}
		run->last = src;
		run->nr++;
	}
	return ended;
}

#endif /* _LINUX_MIGRATE_RANGE_H */
