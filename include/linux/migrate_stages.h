/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-stage timing of page migration.
 *
 * migrate_pages_batch() and the functions it calls mark where each stage
 * of moving a folio begins and ends; the fault path marks how long a
 * thread sleeps on a migration entry.  The durations go to tracepoints
 * (include/trace/events/migrate.h) and to per-CPU log2 histograms shown
 * in debugfs (mm/migrate_stages.c).  Everything here is behind one static
 * key, raised while the debugfs switch is on or one of the tracepoints is
 * in use, so the hooks cost a patched-out branch otherwise; only a batch
 * still pushes its context on the task (three stores) and pops it.
 */
#ifndef _LINUX_MIGRATE_STAGES_H
#define _LINUX_MIGRATE_STAGES_H

#include <linux/jump_label.h>
#include <linux/migrate_mode.h>
#include <linux/mmdebug.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/types.h>

struct folio;

enum migrate_stage {
	MIGRATE_STAGE_ALLOC,		/* allocating the destination folio */
	MIGRATE_STAGE_LOCK,		/* sleeping for the source folio lock */
	MIGRATE_STAGE_WB_WAIT,		/* waiting for writeback of the source */
	MIGRATE_STAGE_UNMAP,		/* rmap walk installing migration entries */
	MIGRATE_STAGE_FLUSH,		/* the batched TLB flush */
	MIGRATE_STAGE_COPY,		/* copying the contents */
	MIGRATE_STAGE_MAPPING,		/* ref freeze and mapping replacement */
	MIGRATE_STAGE_REMAP,		/* migration entries back to PTEs */
	MIGRATE_STAGE_WINDOW,		/* per folio: first PTE gone .. src unlocked */
	MIGRATE_STAGE_FAULT_WAIT,	/* a thread asleep on a migration entry */
	MIGRATE_STAGE_BATCH,		/* one migrate_pages_batch() call */
	NR_MIGRATE_STAGES
};

#ifdef CONFIG_MIGRATE_STAGES
struct migrate_stage_rec;

/* What a batch remembers of one sampled folio, from its unmap on. */
struct migrate_stage_slot {
	u64 t_unmap;			/* its UNMAP began, ns; 0: no WINDOW */
	u32 alloc_ns;			/* its ALLOC took (saturating) */
	u32 unmap_ns;			/* its UNMAP */
	u32 copy_ns;			/* its COPY */
	u32 mapping_ns;			/* its MAPPING */
	u32 remap_ns;			/* its REMAP */
};

/*
 * What one timed migrate_pages_batch() call measured: allocated by the
 * batch when something consumes it (the debugfs switch, mm_migrate_batch
 * or mm_migrate_folio), with one slot per folio it samples.
 */
struct migrate_stage_batch {
	u64 start;			/* batch start, ns */
	int mode;			/* enum migrate_mode */
	unsigned int every;		/* this batch samples 1 folio in @every */
	unsigned int seq;		/* sampling phase, < @every */
	unsigned int nr_slots;		/* entries in @slots */
	bool trace_folio;		/* the per-folio tracepoint is on */
	bool cur_rocm;			/* the folio moved without unmapping */
	bool rocm_phase;		/* ROCM copies and switches: hold them */
	struct migrate_stage_slot *cur;	/* the sampled folio at work, or NULL */
	u64 ns[NR_MIGRATE_STAGES];	/* summed duration per stage */
	u32 count[NR_MIGRATE_STAGES];	/* timed events per stage */
	u64 window_max;			/* longest WINDOW of a folio, ns */
	u64 bytes_copied;		/* bytes copied by COPY */
	u32 nr_folios;			/* folios unmapped (index of the next) */
	u32 nr_pages;			/* base pages in those folios */
	u32 nr_passes;			/* unmap passes it took (retries + 1) */
	u32 nr_ptes;			/* mappings the rmap walk replaced */
	u32 nr_flushes;			/* batched flushes that had work to do */
	u32 flush_cpus;			/* CPUs those flushes targeted (x86) */
	u32 nr_retried;			/* folios moved on a retry pass */
	u64 last_unmap;			/* start of the last folio's UNMAP, ns */
	unsigned long cur_src_pfn;	/* folio being moved: source pfn */
	unsigned long cur_dst_pfn;	/* and destination pfn */
	int cur_order;			/* and order */
	unsigned int nr_pend;		/* records used in @pend */
	unsigned int cap_pend;		/* records @pend holds; 0: none */
	struct migrate_stage_rec *pend;	/* records not yet in the ring */
	struct migrate_stage_slot slots[];
};

/*
 * On the stack of each migrate_pages_batch() call (and of the hugetlb
 * pass of migrate_pages()), pushed on the task while it runs, whether
 * timing is on or not, so that a hook always finds the innermost one and
 * times nothing when that one started untimed.
 */
struct migrate_stage_ctx {
	struct migrate_stage_ctx *prev;	/* the task's outer context */
	struct migrate_stage_batch *b;	/* the batch's record, or NULL */
	int reason;			/* enum migrate_reason */
	bool on;			/* time what runs under this context */
	int move_pass;			/* pass of migrate_stage_move_next() */
	unsigned int move_idx;		/* and the folio it is at in the pass */
};

DECLARE_STATIC_KEY_FALSE(migrate_stages_key);

/* The stage tracepoints hold the key up while they are in use. */
int migrate_stages_trace_reg(void);
void migrate_stages_trace_unreg(void);

static inline bool migrate_stages_on(void)
{
	return static_branch_unlikely(&migrate_stages_key);
}

u64 __migrate_stage_now(void);

/*
 * The slot of the @idx-th folio the batch unmaps, NULL when that folio
 * is not one of the sampled ones: those at phase @seq of every @every.
 */
static inline struct migrate_stage_slot *
migrate_stage_slot(struct migrate_stage_batch *b, unsigned int idx)
{
	unsigned int pos = b->seq + idx, k = pos / b->every;

	if (pos != k * b->every)
		return NULL;
	k -= b->seq != 0;
	return k < b->nr_slots ? &b->slots[k] : NULL;
}

/*
 * Timestamp for a stage about to begin; 0 when timing is off, when the
 * innermost migration context started untimed, or when the folio being
 * migrated is not one of the sampled ones.  Inline, so that an unsampled
 * folio costs no call.
 */
static inline u64 migrate_stage_begin(void)
{
	struct migrate_stage_ctx *ctx;

	if (!migrate_stages_on())
		return 0;
	ctx = current->migrate_stage_ctx;
	if (!ctx || !ctx->on || (ctx->b && !ctx->b->cur))
		return 0;
	return __migrate_stage_now();
}

/* A thread is about to wait on a migration entry: 0 when off. */
static inline u64 migrate_stage_fault_begin(void)
{
	return migrate_stages_on() ? __migrate_stage_now() : 0;
}

void __migrate_stage_end(enum migrate_stage stage, u64 t0);
void __migrate_stage_copied(u64 t0, size_t bytes);
void __migrate_stage_unmapped(u64 t0, int nr_ptes);
void __migrate_stage_late_unmapped(u64 t0);
void __migrate_stage_run_done(struct migrate_stage_ctx *ctx,
			      enum migrate_stage stage, unsigned int idx,
			      unsigned int nr, u64 t0);
u64 __migrate_stage_flush_begin(void);
void __migrate_stage_batch_begin(struct migrate_stage_ctx *ctx,
				 struct list_head *from, int mode);
void __migrate_stage_batch_end(struct migrate_stage_ctx *ctx);
void __migrate_stage_scope_begin(struct migrate_stage_ctx *ctx);
void __migrate_stage_folio_unmapped(struct migrate_stage_batch *b);
void __migrate_stage_folio_move_begin(struct migrate_stage_batch *b,
				      struct folio *src, struct folio *dst);
void __migrate_stage_folio_moved(struct migrate_stage_ctx *ctx,
				 unsigned int idx, int pass, int rc);
void __migrate_stage_rocm_done(struct migrate_stage_ctx *ctx,
			       unsigned int idx, unsigned int nr, u64 moved);
void __migrate_stage_fault_wait(unsigned long pfn, u64 t0);

static inline void migrate_stage_end(enum migrate_stage stage, u64 t0)
{
	if (t0)
		__migrate_stage_end(stage, t0);
}

/* COPY, also counting the bytes for the bandwidth figure. */
static inline void migrate_stage_copied(u64 t0, size_t bytes)
{
	if (t0)
		__migrate_stage_copied(t0, bytes);
}

/* UNMAP, also counting the mappings the rmap walk replaced. */
static inline void migrate_stage_unmapped(u64 t0, int nr_ptes)
{
	if (t0)
		__migrate_stage_unmapped(t0, nr_ptes);
}

/*
 * A folio left mapped by the unmap phase (ROCM gave it up, or a range
 * unmap did not take it) was unmapped by the move: UNMAP, and its WINDOW
 * starts at @t0.
 */
static inline void migrate_stage_late_unmapped(u64 t0)
{
	if (t0)
		__migrate_stage_late_unmapped(t0);
}

/* FLUSH begins: 0 when off or when the batch has nothing to flush. */
static inline u64 migrate_stage_flush_begin(void)
{
	return migrate_stages_on() ? __migrate_stage_flush_begin() : 0;
}

static inline void migrate_stage_push(struct migrate_stage_ctx *ctx,
				      int reason)
{
	ctx->b = NULL;
	ctx->on = false;
	ctx->reason = reason;
	ctx->prev = current->migrate_stage_ctx;
	current->migrate_stage_ctx = ctx;
}

/* A migrate_pages_batch() call of the folios on @from begins. */
static inline void migrate_stage_batch_begin(struct migrate_stage_ctx *ctx,
					     struct list_head *from,
					     int mode, int reason)
{
	migrate_stage_push(ctx, reason);
	if (migrate_stages_on())
		__migrate_stage_batch_begin(ctx, from, mode);
}

static inline void migrate_stage_pop(struct migrate_stage_ctx *ctx)
{
	VM_WARN_ON_ONCE(current->migrate_stage_ctx != ctx);
	current->migrate_stage_ctx = ctx->prev;
}

static inline void migrate_stage_batch_end(struct migrate_stage_ctx *ctx)
{
	if (ctx->b)
		__migrate_stage_batch_end(ctx);
	migrate_stage_pop(ctx);
}

/*
 * Migration outside any batch (hugetlb folios): its stages are counted
 * under @reason in the debugfs summary, no folio sampled, no record.
 */
static inline void migrate_stage_scope_begin(struct migrate_stage_ctx *ctx,
					     int reason)
{
	migrate_stage_push(ctx, reason);
	if (migrate_stages_on())
		__migrate_stage_scope_begin(ctx);
}

static inline void migrate_stage_scope_end(struct migrate_stage_ctx *ctx)
{
	migrate_stage_pop(ctx);
}

/*
 * A folio of @nr_pages now has migration entries instead of PTEs.  Only
 * a sampled folio needs more than the counts.
 */
static inline void migrate_stage_folio_unmapped(struct migrate_stage_ctx *ctx,
						int nr_pages, int pass)
{
	struct migrate_stage_batch *b = ctx->b;

	if (!b)
		return;
	b->nr_pages += nr_pages;
	if (pass >= b->nr_passes)
		b->nr_passes = pass + 1;
	if (unlikely(b->cur))
		__migrate_stage_folio_unmapped(b);
	b->nr_folios++;
}

/* The batch is about to try unmapping its next folio. */
static inline void migrate_stage_folio_unmap_begin(struct migrate_stage_ctx *ctx)
{
	struct migrate_stage_batch *b = ctx->b;

	if (!b)
		return;
	b->cur = migrate_stage_slot(b, b->nr_folios);
	if (unlikely(b->cur))
		memset(b->cur, 0, sizeof(*b->cur));
	b->cur_rocm = false;
	b->last_unmap = 0;
}

/* Moving @src, the @idx-th unmapped folio, to @dst begins on @pass. */
static inline void migrate_stage_folio_move_begin(struct migrate_stage_ctx *ctx,
						  struct folio *src,
						  struct folio *dst,
						  unsigned int idx, int pass)
{
	struct migrate_stage_batch *b = ctx->b;

	if (!b)
		return;
	b->cur = pass ? NULL : migrate_stage_slot(b, idx);
	if (unlikely(b->cur || b->trace_folio))
		__migrate_stage_folio_move_begin(b, src, dst);
}

/* ROCM copies and switches the @idx-th unmapped folio before the move. */
static inline void migrate_stage_folio_select(struct migrate_stage_ctx *ctx,
					      unsigned int idx)
{
	if (ctx->b)
		ctx->b->cur = migrate_stage_slot(ctx->b, idx);
}

/*
 * ROCM's copies and switches are held in the folios' slots until it is
 * known which folios it moved: migrate_stage_rocm_done() counts those,
 * and drops the others' (the classic path copies and remaps them again).
 */
static inline void migrate_stage_rocm_begin(struct migrate_stage_ctx *ctx)
{
	if (ctx->b)
		ctx->b->rocm_phase = true;
}

/* ROCM moved the folios of the run of @nr from @idx set in @moved. */
static inline void migrate_stage_rocm_done(struct migrate_stage_ctx *ctx,
					   unsigned int idx, unsigned int nr,
					   u64 moved)
{
	if (ctx->b)
		__migrate_stage_rocm_done(ctx, idx, nr, moved);
}

/* A range unmap or remap of several folios begins: 0 when untimed. */
static inline u64 migrate_stage_run_begin(struct migrate_stage_ctx *ctx)
{
	return migrate_stages_on() && ctx->b ? __migrate_stage_now() : 0;
}

/* ... and has done @stage for the @nr folios from the @idx-th since @t0. */
static inline void migrate_stage_run_done(struct migrate_stage_ctx *ctx,
					  enum migrate_stage stage,
					  unsigned int idx, unsigned int nr,
					  u64 t0)
{
	if (t0 && ctx->b)
		__migrate_stage_run_done(ctx, stage, idx, nr, t0);
}

/* The @idx-th unmapped folio was moved (or given up) and unlocked. */
static inline void migrate_stage_folio_moved(struct migrate_stage_ctx *ctx,
					     unsigned int idx, int pass, int rc)
{
	struct migrate_stage_batch *b = ctx->b;

	if (!b)
		return;
	if (unlikely(b->cur || b->trace_folio))
		__migrate_stage_folio_moved(ctx, idx, pass, rc);
	else if (pass)
		b->nr_retried++;
}

/*
 * For a move loop that does not know its batch (migrate_folios_move()):
 * the batch says which pass over its unmapped folios begins, and the loop
 * marks each folio it moves; the context is the task's innermost one.
 */
static inline void migrate_stage_move_pass(struct migrate_stage_ctx *ctx,
					   int pass)
{
	ctx->move_pass = pass;
	ctx->move_idx = 0;
}

static inline void migrate_stage_move_next(struct folio *src,
					   struct folio *dst)
{
	struct migrate_stage_ctx *ctx = current->migrate_stage_ctx;

	if (ctx->b)
		migrate_stage_folio_move_begin(ctx, src, dst, ctx->move_idx,
					       ctx->move_pass);
}

static inline void migrate_stage_move_done(int rc)
{
	struct migrate_stage_ctx *ctx = current->migrate_stage_ctx;

	if (ctx->b)
		migrate_stage_folio_moved(ctx, ctx->move_idx++,
					  ctx->move_pass, rc);
}

/* The task's innermost context, for code that does not know its batch. */
static inline struct migrate_stage_ctx *migrate_stage_task_ctx(void)
{
	return current->migrate_stage_ctx;
}

/*
 * For a range unmap or remap run that does not know its batch: the same
 * as migrate_stage_run_begin() and migrate_stage_run_done() on the
 * task's innermost context; a run at place UINT_MAX is not sampled.
 */
static inline u64 migrate_stage_task_run_begin(void)
{
	struct migrate_stage_ctx *ctx = current->migrate_stage_ctx;

	return ctx ? migrate_stage_run_begin(ctx) : 0;
}

static inline void migrate_stage_task_run_done(enum migrate_stage stage,
					       unsigned int idx,
					       unsigned int nr, u64 t0)
{
	if (idx != UINT_MAX)
		migrate_stage_run_done(current->migrate_stage_ctx, stage, idx,
				       nr, t0);
}

/*
 * The place of the folio the move loop is at (migrate_stage_move_next()),
 * for a run that starts there; UINT_MAX on a retry pass, whose folios are
 * not sampled by place.
 */
static inline unsigned int migrate_stage_move_pos(void)
{
	struct migrate_stage_ctx *ctx = current->migrate_stage_ctx;

	return !ctx || ctx->move_pass ? UINT_MAX : ctx->move_idx;
}

/* The folio being unmapped was moved in place (ROCM): no unmapped window. */
static inline void migrate_stage_rocm(void)
{
	struct migrate_stage_ctx *ctx;

	if (!migrate_stages_on())
		return;
	ctx = current->migrate_stage_ctx;
	if (ctx && ctx->b)
		ctx->b->cur_rocm = true;
}

/*
 * A thread waited on a migration entry of @pfn since @t0: 0 when it was
 * not timed or never slept.
 */
static inline void migrate_stage_fault_wait(unsigned long pfn, u64 t0)
{
	if (t0)
		__migrate_stage_fault_wait(pfn, t0);
}

#else /* !CONFIG_MIGRATE_STAGES */

struct migrate_stage_ctx { };

static inline u64 migrate_stage_begin(void) { return 0; }
static inline u64 migrate_stage_fault_begin(void) { return 0; }
static inline void migrate_stage_end(enum migrate_stage stage, u64 t0) { }
static inline void migrate_stage_copied(u64 t0, size_t bytes) { }
static inline void migrate_stage_unmapped(u64 t0, int nr_ptes) { }
static inline void migrate_stage_late_unmapped(u64 t0) { }
static inline u64 migrate_stage_flush_begin(void) { return 0; }
static inline void migrate_stage_batch_begin(struct migrate_stage_ctx *ctx,
					     struct list_head *from,
					     int mode, int reason) { }
static inline void migrate_stage_batch_end(struct migrate_stage_ctx *ctx) { }
static inline void migrate_stage_scope_begin(struct migrate_stage_ctx *ctx,
					     int reason) { }
static inline void migrate_stage_scope_end(struct migrate_stage_ctx *ctx) { }
static inline void migrate_stage_folio_unmapped(struct migrate_stage_ctx *ctx,
						int nr_pages, int pass) { }
static inline void migrate_stage_folio_unmap_begin(struct migrate_stage_ctx *ctx) { }
static inline void migrate_stage_folio_move_begin(struct migrate_stage_ctx *ctx,
						  struct folio *src,
						  struct folio *dst,
						  unsigned int idx, int pass) { }
static inline void migrate_stage_folio_moved(struct migrate_stage_ctx *ctx,
					     unsigned int idx, int pass, int rc) { }
static inline void migrate_stage_folio_select(struct migrate_stage_ctx *ctx,
					      unsigned int idx) { }
static inline void migrate_stage_move_pass(struct migrate_stage_ctx *ctx,
					   int pass) { }
static inline void migrate_stage_move_next(struct folio *src,
					   struct folio *dst) { }
static inline void migrate_stage_move_done(int rc) { }
static inline void migrate_stage_rocm_begin(struct migrate_stage_ctx *ctx) { }
static inline void migrate_stage_rocm_done(struct migrate_stage_ctx *ctx,
					   unsigned int idx, unsigned int nr,
					   u64 moved) { }
static inline u64 migrate_stage_run_begin(struct migrate_stage_ctx *ctx)
{
	return 0;
}

static inline void migrate_stage_run_done(struct migrate_stage_ctx *ctx,
					  enum migrate_stage stage,
					  unsigned int idx, unsigned int nr,
					  u64 t0) { }
static inline u64 migrate_stage_task_run_begin(void) { return 0; }
static inline struct migrate_stage_ctx *migrate_stage_task_ctx(void) { return NULL; }
static inline void migrate_stage_task_run_done(enum migrate_stage stage,
					       unsigned int idx,
					       unsigned int nr, u64 t0) { }
static inline unsigned int migrate_stage_move_pos(void) { return 0; }
static inline void migrate_stage_fault_wait(unsigned long pfn, u64 t0) { }
static inline void migrate_stage_rocm(void) { }

#endif /* CONFIG_MIGRATE_STAGES */

#endif /* _LINUX_MIGRATE_STAGES_H */
