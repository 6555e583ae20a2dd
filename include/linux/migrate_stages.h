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
 * in use, so the hooks cost a patched-out branch otherwise.
 */
#ifndef _LINUX_MIGRATE_STAGES_H
#define _LINUX_MIGRATE_STAGES_H

#include <linux/jump_label.h>
#include <linux/migrate_mode.h>
#include <linux/sched.h>
#include <linux/types.h>

struct folio;
struct migrate_stage_rec;

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
/* What a batch remembers of a folio between its unmap and its move. */
struct migrate_stage_slot {
	u64 t_unmap;			/* its UNMAP began, ns */
	u64 alloc_ns;			/* its ALLOC took */
	u64 unmap_ns;			/* its UNMAP took */
};

/*
 * What one migrate_pages_batch() call measured.  It lives on that
 * function's stack and is reachable from the task while the batch runs,
 * so stages timed deep in the call chain (the copy, done through
 * a_ops->migrate_folio) land in the right batch.
 */
struct migrate_stage_ctx {
	struct migrate_stage_ctx *prev;	/* the task's outer batch, if nested */
	u64 start;			/* batch start, ns; 0 = not measuring */
	int reason;			/* enum migrate_reason */
	int mode;			/* enum migrate_mode */
	unsigned int every;		/* time the stages of 1 folio in @every */
	unsigned int seq;		/* sampling sequence at batch start */
	bool folio_on;			/* the current folio is one of those */
	bool trace_folio;		/* the per-folio tracepoint is on */
	bool cur_rocm;			/* the folio moved without unmapping */
	u64 ns[NR_MIGRATE_STAGES];	/* summed duration per stage */
	u32 count[NR_MIGRATE_STAGES];	/* timed events per stage */
	u64 window_max;			/* longest WINDOW of a folio, ns */
	u64 bytes_copied;		/* bytes copied by COPY */
	u32 nr_folios;			/* folios unmapped by this batch */
	u32 nr_pages;			/* base pages in those folios */
	u32 nr_passes;			/* unmap passes it took (retries + 1) */
	u32 nr_ptes;			/* mappings the rmap walk replaced */
	u32 nr_flushes;			/* batched flushes that had work to do */
	u32 flush_cpus;			/* CPUs those flushes targeted (x86) */
	u32 nr_retried;			/* folios moved on a retry pass */
	u64 last_unmap;			/* start of the last folio's UNMAP, ns */
	u64 cur_alloc;			/* ALLOC of the folio being unmapped */
	u64 cur_unmap;			/* UNMAP of the folio being unmapped */
	u64 cur_copy;			/* COPY of the folio being moved */
	u64 cur_mapping;		/* MAPPING of the folio being moved */
	u64 cur_remap;			/* REMAP of the folio being moved */
	unsigned long cur_src_pfn;	/* folio being moved: source pfn */
	unsigned long cur_dst_pfn;	/* and destination pfn */
	int cur_order;			/* and order */
	unsigned int nr_unmapped;	/* folios unmapped so far (slot index) */
	unsigned int cap_unmapped;	/* entries allocated in slots */
	struct migrate_stage_slot *slots; /* per folio, in unmap order */
	struct migrate_stage_rec *pend;	/* records not yet in the ring */
	unsigned int nr_pend;		/* entries used in pend */
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
 * Timestamp for a stage about to begin; 0 when timing is off or when the
 * folio being migrated is not one of the sampled ones.  The checks are
 * inline so that an unsampled folio costs no call.
 */
static inline u64 migrate_stage_begin(void)
{
	struct migrate_stage_ctx *ctx;

	if (!migrate_stages_on())
		return 0;
	ctx = current->migrate_stage_ctx;
	if (ctx && !ctx->folio_on)
		return 0;
	return __migrate_stage_now();
}

/* Is the @idx-th folio of the batch one whose stages are timed? */
static inline bool migrate_stage_sampled(const struct migrate_stage_ctx *ctx,
					 unsigned int idx)
{
	return !((ctx->seq + idx) % ctx->every);
}

void __migrate_stage_end(enum migrate_stage stage, u64 t0);
void __migrate_stage_copied(u64 t0, size_t bytes);
void __migrate_stage_unmapped(u64 t0, int nr_ptes);
void __migrate_stage_run_done(struct migrate_stage_ctx *ctx,
			      enum migrate_stage stage, unsigned int idx,
			      unsigned int nr, u64 t0);
u64 __migrate_stage_flush_begin(void);
void __migrate_stage_batch_begin(struct migrate_stage_ctx *ctx, int mode,
				 int reason);
void __migrate_stage_batch_end(struct migrate_stage_ctx *ctx);
void __migrate_stage_folio_unmapped(struct migrate_stage_ctx *ctx);
void __migrate_stage_folio_move_begin(struct migrate_stage_ctx *ctx,
				      struct folio *src, struct folio *dst);
void __migrate_stage_folio_moved(struct migrate_stage_ctx *ctx,
				 unsigned int idx, int pass, int rc);
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

/* FLUSH begins: 0 when off or when the batch has nothing to flush. */
static inline u64 migrate_stage_flush_begin(void)
{
	return migrate_stages_on() ? __migrate_stage_flush_begin() : 0;
}

static inline void migrate_stage_batch_begin(struct migrate_stage_ctx *ctx,
					     int mode, int reason)
{
	ctx->start = 0;
	if (migrate_stages_on())
		__migrate_stage_batch_begin(ctx, mode, reason);
}

static inline void migrate_stage_batch_end(struct migrate_stage_ctx *ctx)
{
	if (ctx->start)
		__migrate_stage_batch_end(ctx);
}

/*
 * A folio of @nr_pages now has migration entries instead of PTEs.  Only
 * a sampled folio needs more than the counts.
 */
static inline void migrate_stage_folio_unmapped(struct migrate_stage_ctx *ctx,
						int nr_pages, int pass)
{
	if (!ctx->start)
		return;
	ctx->nr_pages += nr_pages;
	if (pass >= ctx->nr_passes)
		ctx->nr_passes = pass + 1;
	if (unlikely(ctx->folio_on))
		__migrate_stage_folio_unmapped(ctx);
	ctx->nr_unmapped++;
	ctx->nr_folios++;
}

/* The batch is about to try unmapping its next folio. */
static inline void migrate_stage_folio_unmap_begin(struct migrate_stage_ctx *ctx)
{
	if (!ctx->start)
		return;
	ctx->folio_on = migrate_stage_sampled(ctx, ctx->nr_unmapped);
	ctx->cur_rocm = false;
	ctx->last_unmap = 0;
	ctx->cur_alloc = 0;
	ctx->cur_unmap = 0;
}

/* Moving @src, the @idx-th unmapped folio, to @dst begins on @pass. */
static inline void migrate_stage_folio_move_begin(struct migrate_stage_ctx *ctx,
						  struct folio *src,
						  struct folio *dst,
						  unsigned int idx, int pass)
{
	if (!ctx->start)
		return;
	ctx->folio_on = !pass && migrate_stage_sampled(ctx, idx);
	if (unlikely(ctx->folio_on || ctx->trace_folio))
		__migrate_stage_folio_move_begin(ctx, src, dst);
}

/* ROCM copies and switches the @idx-th unmapped folio before the move. */
static inline void migrate_stage_folio_select(struct migrate_stage_ctx *ctx,
					      unsigned int idx)
{
	if (ctx->start)
		ctx->folio_on = migrate_stage_sampled(ctx, idx);
}

/* A range unmap or remap of several folios begins: 0 when off. */
static inline u64 migrate_stage_run_begin(void)
{
	return migrate_stages_on() ? __migrate_stage_now() : 0;
}

/* ... and has done @stage for the @nr folios from the @idx-th since @t0. */
static inline void migrate_stage_run_done(struct migrate_stage_ctx *ctx,
					  enum migrate_stage stage,
					  unsigned int idx, unsigned int nr,
					  u64 t0)
{
	if (t0)
		__migrate_stage_run_done(ctx, stage, idx, nr, t0);
}

/* The @idx-th unmapped folio was moved (or given up) and unlocked. */
static inline void migrate_stage_folio_moved(struct migrate_stage_ctx *ctx,
					     unsigned int idx, int pass, int rc)
{
	if (!ctx->start)
		return;
	if (unlikely(ctx->folio_on || ctx->trace_folio))
		__migrate_stage_folio_moved(ctx, idx, pass, rc);
	else if (pass)
		ctx->nr_retried++;
}

/* The folio being unmapped was moved in place (ROCM): no unmapped window. */
static inline void migrate_stage_rocm(void)
{
	struct migrate_stage_ctx *ctx;

	if (!migrate_stages_on())
		return;
	ctx = current->migrate_stage_ctx;
	if (ctx)
		ctx->cur_rocm = true;
}

/* A thread slept on a migration entry of @pfn since @t0. */
static inline void migrate_stage_fault_wait(unsigned long pfn, u64 t0)
{
	if (t0)
		__migrate_stage_fault_wait(pfn, t0);
}

#else /* !CONFIG_MIGRATE_STAGES */

struct migrate_stage_ctx { };

static inline u64 migrate_stage_begin(void) { return 0; }
static inline void migrate_stage_end(enum migrate_stage stage, u64 t0) { }
static inline void migrate_stage_copied(u64 t0, size_t bytes) { }
static inline void migrate_stage_unmapped(u64 t0, int nr_ptes) { }
static inline u64 migrate_stage_flush_begin(void) { return 0; }
static inline void migrate_stage_batch_begin(struct migrate_stage_ctx *ctx,
					     int mode, int reason) { }
static inline void migrate_stage_batch_end(struct migrate_stage_ctx *ctx) { }
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
static inline u64 migrate_stage_run_begin(void) { return 0; }
static inline void migrate_stage_run_done(struct migrate_stage_ctx *ctx,
					  enum migrate_stage stage,
					  unsigned int idx, unsigned int nr,
					  u64 t0) { }
static inline void migrate_stage_fault_wait(unsigned long pfn, u64 t0) { }
static inline void migrate_stage_rocm(void) { }

#endif /* CONFIG_MIGRATE_STAGES */

#endif /* _LINUX_MIGRATE_STAGES_H */
