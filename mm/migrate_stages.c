// SPDX-License-Identifier: GPL-2.0
/*
 * Per-stage timing of page migration.
 *
 * The hooks in mm/migrate.c and mm/filemap.c call in here only while
 * migrate_stages_key is raised: by "echo 1 > /sys/kernel/debug/mm/
 * migrate_stages", or by enabling one of the mm_migrate_batch,
 * mm_migrate_folio and mm_migration_entry_wait tracepoints.  Durations
 * are summed into the migrate_stage_ctx of the running batch (for the
 * per-batch tracepoint) and, while the debugfs switch is on, into per-CPU
 * counters and log2 histograms per stage and migration reason, which the
 * debugfs file folds and prints.  See Documentation/mm/migrate_stages.rst.
 */
#include <linux/debugfs.h>
#include <linux/kcsan-checks.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/migrate.h>
#include <linux/migrate_stages.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <trace/events/migrate.h>

#define MS_BUCKETS	32		/* log2(ns): 0, [1,2), .. [2^30, inf) */
#define MS_NO_REASON	MR_TYPES	/* fault side, or no batch to name one */
#define MS_REASONS	(MR_TYPES + 1)
#define MS_MAX_SAMPLES	512		/* folios a batch samples, at most */
#define MS_RING_SIZE	4096		/* per-folio records kept; a power of 2 */
#define MS_PEND		32		/* records a batch gathers per ring lock */
#define MS_SAMPLE_DEFAULT 64		/* time 1 folio in 64 by default */
#define MS_SAMPLE_MAX	65536

DEFINE_STATIC_KEY_FALSE(migrate_stages_key);

/*
 * One CPU's share of the statistics; updated by that CPU only, with
 * preemption off.  A block whose @gen is not ms_gen predates the last
 * reset: it counts as empty, and its CPU clears it before its next use.
 */
struct migrate_stage_cpu {
	unsigned long gen;	/* ms_gen when this block was last cleared */
	u64 count[MS_REASONS][NR_MIGRATE_STAGES];	/* timed events */
	u64 sum_ns[MS_REASONS][NR_MIGRATE_STAGES];	/* their total ns */
	u64 max_ns[NR_MIGRATE_STAGES];			/* longest event */
	u32 hist[MS_REASONS][NR_MIGRATE_STAGES][MS_BUCKETS]; /* log2(ns) */
	u64 bytes_copied;	/* bytes moved by COPY */
	u64 batches;		/* batches timed */
	u64 folios;		/* folios unmapped by those batches */
	u64 flushes;		/* batched TLB flushes that had work */
	u64 flush_cpus;		/* CPUs those flushes targeted (x86) */
};

/* All CPUs folded together, built for each read of the debugfs file. */
struct migrate_stage_sum {
	u64 count[MS_REASONS][NR_MIGRATE_STAGES];	/* timed events */
	u64 sum_ns[MS_REASONS][NR_MIGRATE_STAGES];	/* their total ns */
	u64 max_ns[NR_MIGRATE_STAGES];			/* longest event */
	u64 hist[NR_MIGRATE_STAGES][MS_BUCKETS];	/* all reasons */
	u64 bytes_copied;	/* as in migrate_stage_cpu */
	u64 batches;
	u64 folios;
	u64 flushes;
	u64 flush_cpus;
};

/* One folio moved by a batch: a row of the migrate_stages_log CSV. */
struct migrate_stage_rec {
	u64 ts;			/* when its source was unlocked, ns */
	unsigned long src_pfn;	/* source folio */
	unsigned long dst_pfn;	/* destination folio */
	u64 alloc_ns;		/* its ALLOC */
	u64 unmap_ns;		/* its UNMAP */
	u64 copy_ns;		/* its COPY */
	u64 mapping_ns;		/* its MAPPING */
	u64 remap_ns;		/* its REMAP */
	u64 window_ns;		/* its WINDOW, 0 when not timed */
	int rc;			/* result of moving it */
	u8 order;		/* folio order */
	u8 reason;		/* enum migrate_reason */
	u8 mode;		/* enum migrate_mode */
	u8 pass;		/* move pass it finished on */
};

/* The last @cap records, oldest overwritten first. */
struct migrate_stage_ring {
	spinlock_t lock;		/* guards everything below */
	struct migrate_stage_rec *recs;	/* @cap entries, NULL until enabled */
	unsigned long cap;		/* a power of two */
	unsigned long head;		/* records ever pushed */
};

static const char * const ms_stage_names[NR_MIGRATE_STAGES] = {
	[MIGRATE_STAGE_ALLOC]		= "alloc",
	[MIGRATE_STAGE_LOCK]		= "lock",
	[MIGRATE_STAGE_WB_WAIT]		= "wb_wait",
	[MIGRATE_STAGE_UNMAP]		= "unmap",
	[MIGRATE_STAGE_FLUSH]		= "flush",
	[MIGRATE_STAGE_COPY]		= "copy",
	[MIGRATE_STAGE_MAPPING]		= "mapping",
	[MIGRATE_STAGE_REMAP]		= "remap",
	[MIGRATE_STAGE_WINDOW]		= "window",
	[MIGRATE_STAGE_FAULT_WAIT]	= "fault_wait",
	[MIGRATE_STAGE_BATCH]		= "batch",
};

static const char * const ms_reason_names[MS_REASONS] = {
	[MR_COMPACTION]		= "compaction",
	[MR_MEMORY_FAILURE]	= "memory_failure",
	[MR_MEMORY_HOTPLUG]	= "memory_hotplug",
	[MR_SYSCALL]		= "syscall_or_cpuset",
	[MR_MEMPOLICY_MBIND]	= "mempolicy_mbind",
	[MR_NUMA_MISPLACED]	= "numa_misplaced",
	[MR_CONTIG_RANGE]	= "contig_range",
	[MR_LONGTERM_PIN]	= "longterm_pin",
	[MR_DEMOTION]		= "demotion",
	[MR_DAMON]		= "damon",
	[MS_NO_REASON]		= "none",
};

/* A reason newer than this table (7.3's MR_NEVER names no migration). */
static const char *ms_reason_name(unsigned int r)
{
	return r < MS_REASONS && ms_reason_names[r] ? ms_reason_names[r] : "?";
}

/* Guards ms_debugfs_on, ms_gen and the allocation of ms_stats. */
static DEFINE_MUTEX(ms_lock);
static bool ms_debugfs_on;
/* Bumped by each reset: see struct migrate_stage_cpu. */
static unsigned long ms_gen;
/* Batches that ran untimed for want of their record, since the reset. */
static atomic_long_t ms_untimed;
/* Per-folio stages are timed for 1 folio in this many (1 = all). */
static unsigned int ms_sample_every = MS_SAMPLE_DEFAULT;
/* Folios seen per CPU, so that one-folio batches are sampled too. */
static DEFINE_PER_CPU(unsigned int, ms_sample_seq);
/* Allocated on first enable, never freed; NULL until then. */
static struct migrate_stage_cpu __percpu *ms_stats;
static struct migrate_stage_ring ms_ring = {
	.lock = __SPIN_LOCK_UNLOCKED(ms_ring.lock),
};

static void ms_ring_push(struct migrate_stage_ring *r,
			 const struct migrate_stage_rec *rec, unsigned int n)
{
	unsigned int i;

	spin_lock(&r->lock);
	for (i = 0; r->recs && i < n; i++) {
		r->recs[r->head & (r->cap - 1)] = rec[i];
		r->head++;
	}
	spin_unlock(&r->lock);
}

/* Copy out up to @max of the newest records, oldest first. */
static unsigned long ms_ring_snapshot(struct migrate_stage_ring *r,
				      struct migrate_stage_rec *out,
				      unsigned long max)
{
	unsigned long n, start, i;

	spin_lock(&r->lock);
	n = r->recs ? min3(r->head, r->cap, max) : 0;
	start = r->head - n;
	for (i = 0; i < n; i++)
		out[i] = r->recs[(start + i) & (r->cap - 1)];
	spin_unlock(&r->lock);
	return n;
}

/*
 * CLOCK_MONOTONIC: a stage may sleep or be rescheduled and end on
 * another CPU than it began on, which local_clock() does not allow for.
 */
static inline u64 ms_now(void)
{
	return ktime_get_ns();
}

static inline u64 ms_since(u64 t0)
{
	u64 now = ms_now();

	return now > t0 ? now - t0 : 0;
}

/* Histogram bucket of a duration: 0 for 0 ns, else ilog2(ns) + 1, capped. */
static unsigned int ms_bucket(u64 ns)
{
	if (!ns)
		return 0;
	return min_t(unsigned int, ilog2(ns) + 1, MS_BUCKETS - 1);
}

/* Largest duration a bucket holds; the last bucket is open-ended. */
static u64 ms_bucket_limit(unsigned int b)
{
	if (!b)
		return 0;
	if (b >= MS_BUCKETS - 1)
		return U64_MAX;
	return (1ULL << b) - 1;
}

/*
 * The @pct-th percentile of a histogram, as the upper limit of the bucket
 * it falls in, never above @max (the largest value seen).
 */
static u64 ms_percentile(const u64 *hist, unsigned int pct, u64 max)
{
	u64 total = 0, target, seen = 0;
	unsigned int b;

	for (b = 0; b < MS_BUCKETS; b++)
		total += hist[b];
	if (!total)
		return 0;
	target = max_t(u64, 1, div_u64(total * pct + 99, 100));
	for (b = 0; b < MS_BUCKETS; b++) {
		seen += hist[b];
		if (seen >= target)
			break;
	}
	return min(ms_bucket_limit(b), max);
}

static void ms_account(struct migrate_stage_cpu *s, unsigned int reason,
		       enum migrate_stage stage, u64 ns)
{
	if (reason >= MS_REASONS)
		reason = MS_NO_REASON;
	s->count[reason][stage]++;
	s->sum_ns[reason][stage] += ns;
	s->hist[reason][stage][ms_bucket(ns)]++;
	if (ns > s->max_ns[stage])
		s->max_ns[stage] = ns;
}

static void ms_merge(struct migrate_stage_sum *sum,
		     const struct migrate_stage_cpu *s)
{
	int r, st, b;

	for (r = 0; r < MS_REASONS; r++) {
		for (st = 0; st < NR_MIGRATE_STAGES; st++) {
			sum->count[r][st] += s->count[r][st];
			sum->sum_ns[r][st] += s->sum_ns[r][st];
			for (b = 0; b < MS_BUCKETS; b++)
				sum->hist[st][b] += s->hist[r][st][b];
		}
	}
	for (st = 0; st < NR_MIGRATE_STAGES; st++)
		sum->max_ns[st] = max(sum->max_ns[st], s->max_ns[st]);
	sum->bytes_copied += s->bytes_copied;
	sum->batches += s->batches;
	sum->folios += s->folios;
	sum->flushes += s->flushes;
	sum->flush_cpus += s->flush_cpus;
}

/*
 * Fold the blocks of every CPU that have been cleared since the last
 * reset.  The others update theirs meanwhile: a snapshot, not a sum
 * taken at one instant.
 */
static void ms_fold(struct migrate_stage_sum *sum,
		    struct migrate_stage_cpu __percpu *st, unsigned long gen)
{
	int cpu;

	if (!st)
		return;
	kcsan_disable_current();
	for_each_possible_cpu(cpu) {
		struct migrate_stage_cpu *s = per_cpu_ptr(st, cpu);

		/* pairs with ms_get_cpu(): a block is cleared before its gen */
		if (smp_load_acquire(&s->gen) == gen)
			ms_merge(sum, s);
	}
	kcsan_enable_current();
}

/* This CPU's counters while the debugfs switch is on, else NULL. */
static struct migrate_stage_cpu *ms_get_cpu(void)
{
	/* pairs with ms_set(): the blocks are zeroed before published */
	struct migrate_stage_cpu __percpu *st = smp_load_acquire(&ms_stats);
	struct migrate_stage_cpu *s;
	unsigned long gen;

	if (!st || !READ_ONCE(ms_debugfs_on))
		return NULL;
	preempt_disable();
	s = this_cpu_ptr(st);
	gen = READ_ONCE(ms_gen);
	BUILD_BUG_ON(offsetof(struct migrate_stage_cpu, gen));
	if (unlikely(s->gen != gen)) {
		/* a reset since this CPU last counted: start afresh */
		memset((char *)s + sizeof(s->gen), 0, sizeof(*s) - sizeof(s->gen));
		/* pairs with ms_fold(): no half-cleared block is summed */
		smp_store_release(&s->gen, gen);
	}
	return s;
}

static void ms_put_cpu(struct migrate_stage_cpu *s)
{
	if (s)
		preempt_enable();
}

static void ms_record(unsigned int reason, enum migrate_stage stage, u64 ns)
{
	struct migrate_stage_cpu *s = ms_get_cpu();

	if (s)
		ms_account(s, reason, stage, ns);
	ms_put_cpu(s);
}

static void ms_batch_add(struct migrate_stage_batch *b,
			 enum migrate_stage stage, u64 ns)
{
	b->ns[stage] += ns;
	b->count[stage]++;
}

static void ms_add_u32(u32 *acc, u64 ns)
{
	*acc = min_t(u64, (u64)*acc + ns, U32_MAX);
}

/* Note in its slot what a sampled folio spent in @stage. */
static void ms_slot_add(struct migrate_stage_slot *slot,
			enum migrate_stage stage, u64 ns)
{
	switch (stage) {
	case MIGRATE_STAGE_ALLOC:
		ms_add_u32(&slot->alloc_ns, ns);
		break;
	case MIGRATE_STAGE_UNMAP:
		ms_add_u32(&slot->unmap_ns, ns);
		break;
	case MIGRATE_STAGE_COPY:
		ms_add_u32(&slot->copy_ns, ns);
		break;
	case MIGRATE_STAGE_MAPPING:
		ms_add_u32(&slot->mapping_ns, ns);
		break;
	case MIGRATE_STAGE_REMAP:
		ms_add_u32(&slot->remap_ns, ns);
		break;
	default:
		break;
	}
}

/* Count @ns of @stage for the batch (if any) and the summary. */
static void ms_count(struct migrate_stage_ctx *ctx, enum migrate_stage stage,
		     u64 ns)
{
	if (ctx->b)
		ms_batch_add(ctx->b, stage, ns);
	ms_record(ctx->reason, stage, ns);
}

/*
 * The folio at work spent @ns in @stage.  Returns false when ROCM's
 * copy or switch is held in the folio's slot, to be counted only if ROCM
 * moves the folio (migrate_stage_rocm_done()).
 */
static bool ms_stage_done(enum migrate_stage stage, u64 ns)
{
	struct migrate_stage_ctx *ctx = current->migrate_stage_ctx;
	struct migrate_stage_batch *b = ctx->b;

	if (b && b->cur)
		ms_slot_add(b->cur, stage, ns);
	if (b && b->rocm_phase &&
	    (stage == MIGRATE_STAGE_COPY || stage == MIGRATE_STAGE_REMAP))
		return false;
	ms_count(ctx, stage, ns);
	return true;
}

static void ms_count_bytes(struct migrate_stage_ctx *ctx, u64 bytes)
{
	struct migrate_stage_cpu *s;

	if (ctx->b)
		ctx->b->bytes_copied += bytes;
	s = ms_get_cpu();
	if (s)
		s->bytes_copied += bytes;
	ms_put_cpu(s);
}

u64 __migrate_stage_now(void)
{
	return ms_now() ?: 1;
}

/*
 * The __migrate_stage_*() calls below run only with a timestamp from
 * migrate_stage_begin(): under a context that is on.
 */
void __migrate_stage_end(enum migrate_stage stage, u64 t0)
{
	ms_stage_done(stage, ms_since(t0));
}

void __migrate_stage_copied(u64 t0, size_t bytes)
{
	if (ms_stage_done(MIGRATE_STAGE_COPY, ms_since(t0)))
		ms_count_bytes(current->migrate_stage_ctx, bytes);
}

void __migrate_stage_unmapped(u64 t0, int nr_ptes)
{
	struct migrate_stage_batch *b = current->migrate_stage_ctx->b;

	ms_stage_done(MIGRATE_STAGE_UNMAP, ms_since(t0));
	if (b) {
		b->nr_ptes += max(nr_ptes, 0);
		b->last_unmap = t0;
	}
}

void __migrate_stage_late_unmapped(u64 t0)
{
	struct migrate_stage_batch *b = current->migrate_stage_ctx->b;

	ms_stage_done(MIGRATE_STAGE_UNMAP, ms_since(t0));
	if (b && b->cur)
		b->cur->t_unmap = t0;
}

/*
 * A range unmap or remap (@stage) took the @nr folios from the @idx-th
 * of the batch from @t0 to now in one pass: each sampled one gets an
 * equal share (and, for UNMAP, one PTE, and its share as its own UNMAP
 * in its record, whose WINDOW starts then).
 */
void __migrate_stage_run_done(struct migrate_stage_ctx *ctx,
			      enum migrate_stage stage, unsigned int idx,
			      unsigned int nr, u64 t0)
{
	struct migrate_stage_batch *b = ctx->b;
	unsigned int i;
	u64 share;

	if (WARN_ON_ONCE(ctx != current->migrate_stage_ctx))
		return;
	share = div_u64(ms_since(t0), nr);
	for (i = 0; i < nr; i++) {
		migrate_stage_folio_select(ctx, idx + i);
		if (!b->cur)
			continue;
		if (stage != MIGRATE_STAGE_UNMAP) {
			ms_stage_done(stage, share);
			continue;
		}
		/*
		 * Its slot was filled when it was left mapped: the run's
		 * share replaces that, and its WINDOW starts with the share.
		 */
		b->cur->unmap_ns = 0;
		ms_stage_done(MIGRATE_STAGE_UNMAP, share);
		b->cur->t_unmap = t0 + share * i ?: 1;
		b->nr_ptes++;
	}
}

#ifdef CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH
/*
 * How many CPUs the pending batched flush will interrupt: none when x86
 * broadcasts it with INVLPGB (7.3, AMD), which it does once the batch
 * unmapped a page.
 */
static unsigned int ms_flush_breadth(void)
{
#ifdef CONFIG_X86
	struct arch_tlbflush_unmap_batch *batch = &current->tlb_ubc.arch;

#ifdef X86_FEATURE_INVLPGB
	if (cpu_feature_enabled(X86_FEATURE_INVLPGB) && batch->unmapped_pages)
		return 0;
#endif
	return cpumask_weight(&batch->cpumask);
#else
	return 0;
#endif
}
#endif

u64 __migrate_stage_flush_begin(void)
{
#ifdef CONFIG_ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH
	struct migrate_stage_ctx *ctx = current->migrate_stage_ctx;
	unsigned int cpus;
	struct migrate_stage_cpu *s;

	if (!ctx || !ctx->on || !current->tlb_ubc.flush_required)
		return 0;
	cpus = ms_flush_breadth();
	if (ctx->b) {
		ctx->b->nr_flushes++;
		ctx->b->flush_cpus += cpus;
	}
	s = ms_get_cpu();
	if (s) {
		s->flushes++;
		s->flush_cpus += cpus;
	}
	ms_put_cpu(s);
	return ms_now() ?: 1;
#else
	return 0;
#endif
}

/* How a batch samples its folios. */
struct ms_shape {
	unsigned int every;	/* 1 folio in @every */
	unsigned int seq;	/* from the one at this phase, < @every */
	unsigned int nr_slots;	/* folios sampled, at most */
};

/*
 * A batch of @nr folios samples 1 in @every, or fewer when that would
 * take more than MS_MAX_SAMPLES slots (large batches of 64K-page arm64),
 * continuing the sampling sequence at @seq.
 */
static struct ms_shape ms_batch_shape(unsigned int nr, unsigned int every,
				      unsigned int seq)
{
	struct ms_shape sh;

	sh.every = max(every, DIV_ROUND_UP(nr, MS_MAX_SAMPLES));
	sh.seq = seq % sh.every;
	/* sampled: idx with (seq + idx) % every == 0, slot k in order */
	sh.nr_slots = nr ? (sh.seq + nr - 1) / sh.every - (sh.seq != 0) + 1 : 0;
	return sh;
}

/* Anything that reads a batch's record: else the batch is not timed. */
static bool ms_batch_wanted(void)
{
	return READ_ONCE(ms_debugfs_on) || trace_mm_migrate_batch_enabled() ||
	       trace_mm_migrate_folio_enabled();
}

void __migrate_stage_batch_begin(struct migrate_stage_ctx *ctx,
				 struct list_head *from, int mode)
{
	struct migrate_stage_batch *b;
	struct ms_shape shape;
	unsigned int pend;
	size_t size;

	if (!ms_batch_wanted())
		return;
	shape = ms_batch_shape(list_count_nodes(from),
			       READ_ONCE(ms_sample_every) ?: 1,
			       raw_cpu_read(ms_sample_seq));
	pend = READ_ONCE(ms_debugfs_on) ? min(shape.nr_slots, MS_PEND) : 0;
	size = struct_size(b, slots, shape.nr_slots) + pend * sizeof(*b->pend);
	/*
	 * Batches run in direct compaction and reclaim (PF_MEMALLOC): no
	 * reserves, no reclaim, no warning; the batch goes untimed instead.
	 */
	b = kzalloc(size, GFP_NOWAIT | __GFP_NOWARN | __GFP_NOMEMALLOC);
	if (!b) {
		atomic_long_inc(&ms_untimed);
		return;
	}
	b->every = shape.every;
	b->seq = shape.seq;
	b->nr_slots = shape.nr_slots;
	b->mode = mode;
	b->trace_folio = trace_mm_migrate_folio_enabled();
	b->cap_pend = pend;
	b->pend = pend ? (void *)&b->slots[b->nr_slots] : NULL;
	ctx->b = b;
	ctx->on = true;
	b->start = ms_now() ?: 1;
}

void __migrate_stage_batch_end(struct migrate_stage_ctx *ctx)
{
	struct migrate_stage_batch *b = ctx->b;
	u64 total = ms_since(b->start);
	struct migrate_stage_cpu *s;

	this_cpu_add(ms_sample_seq, max(b->nr_folios, 1U));
	ms_batch_add(b, MIGRATE_STAGE_BATCH, total);
	s = ms_get_cpu();
	if (s) {
		/* in one section: one generation */
		ms_account(s, ctx->reason, MIGRATE_STAGE_BATCH, total);
		s->batches++;
		s->folios += b->nr_folios;
	}
	ms_put_cpu(s);
	trace_mm_migrate_batch(ctx, total);
	if (b->nr_pend)
		ms_ring_push(&ms_ring, b->pend, b->nr_pend);
	ctx->b = NULL;
	ctx->on = false;
	kfree(b);
}

void __migrate_stage_scope_begin(struct migrate_stage_ctx *ctx)
{
	ctx->on = READ_ONCE(ms_debugfs_on);
}

/*
 * A sampled folio lost its PTEs: remember when (the start of its UNMAP),
 * for its WINDOW.  The counts are kept inline by
 * migrate_stage_folio_unmapped().
 */
void __migrate_stage_folio_unmapped(struct migrate_stage_batch *b)
{
	/* a folio moved in place by ROCM was never unmapped: no WINDOW */
	if (b->cur_rocm)
		b->cur->t_unmap = 0;
	else
		b->cur->t_unmap = b->last_unmap ?: __migrate_stage_now();
}

/* A sampled (or traced) folio is about to be moved. */
void __migrate_stage_folio_move_begin(struct migrate_stage_batch *b,
				      struct folio *src, struct folio *dst)
{
	b->cur_src_pfn = folio_pfn(src);
	b->cur_dst_pfn = folio_pfn(dst);
	b->cur_order = folio_order(src);
}

/*
 * The folio at work, the @idx-th unmapped by the batch, has been moved
 * (or given up) and its source unlocked at @now.  Only the first pass
 * keeps the unmap order, so WINDOW is timed for folios that succeed
 * there; later passes are counted as retried.  Returns the window, 0 if
 * not timed.
 */
static u64 ms_folio_moved(struct migrate_stage_batch *b, int pass, int rc,
			  u64 now)
{
	u64 window;

	if (pass) {
		b->nr_retried++;
		return 0;
	}
	/* only a sampled folio has a slot */
	if (rc || !b->cur || !b->cur->t_unmap)
		return 0;
	window = now > b->cur->t_unmap ? now - b->cur->t_unmap : 0;
	ms_batch_add(b, MIGRATE_STAGE_WINDOW, window);
	b->window_max = max(b->window_max, window);
	return window;
}

/* Fill a ring record for the sampled folio just moved on the first pass. */
static void ms_fill_rec(struct migrate_stage_rec *rec,
			const struct migrate_stage_batch *b, int reason,
			int rc, u64 now, u64 window)
{
	const struct migrate_stage_slot *slot = b->cur;

	*rec = (struct migrate_stage_rec) {
		.ts = now,
		.src_pfn = b->cur_src_pfn,
		.dst_pfn = b->cur_dst_pfn,
		.alloc_ns = slot->alloc_ns,
		.unmap_ns = slot->unmap_ns,
		.copy_ns = slot->copy_ns,
		.mapping_ns = slot->mapping_ns,
		.remap_ns = slot->remap_ns,
		.window_ns = window,
		.rc = rc,
		.order = b->cur_order,
		.reason = reason,
		.mode = b->mode,
		.pass = 0,
	};
}

void __migrate_stage_folio_moved(struct migrate_stage_ctx *ctx,
				 unsigned int idx, int pass, int rc)
{
	struct migrate_stage_batch *b = ctx->b;
	u64 now, window;

	/* called for sampled folios, and for all while the tracepoint is on */
	now = ms_now();
	window = ms_folio_moved(b, pass, rc, now);

	if (window)
		ms_record(ctx->reason, MIGRATE_STAGE_WINDOW, window);
	if (b->cur && b->nr_pend < b->cap_pend) {
		ms_fill_rec(&b->pend[b->nr_pend++], b, ctx->reason, rc, now,
			    window);
		if (b->nr_pend == b->cap_pend) {
			ms_ring_push(&ms_ring, b->pend, b->nr_pend);
			b->nr_pend = 0;
		}
	}
	trace_mm_migrate_folio(b->cur_src_pfn, b->cur_dst_pfn, b->cur_order,
			       pass, rc, window);
}

/*
 * ROCM is done with the @nr folios from the @idx-th: count the copy and
 * switch of those it moved (bit i of @moved), which stay in their slots
 * for their records; drop the others', which the classic path will copy
 * and remap again.  ROCM moves order-0 folios only.
 */
void __migrate_stage_rocm_done(struct migrate_stage_ctx *ctx,
			       unsigned int idx, unsigned int nr, u64 moved)
{
	struct migrate_stage_batch *b = ctx->b;
	unsigned int i;

	b->rocm_phase = false;
	for (i = 0; i < nr; i++) {
		struct migrate_stage_slot *slot = migrate_stage_slot(b, idx + i);

		if (!slot)
			continue;
		if (!(moved & BIT_ULL(i))) {
			slot->copy_ns = 0;
			slot->remap_ns = 0;
			continue;
		}
		/* untimed (timing went off meanwhile): nothing to count */
		if (slot->copy_ns) {
			ms_count(ctx, MIGRATE_STAGE_COPY, slot->copy_ns);
			ms_count_bytes(ctx, PAGE_SIZE);
		}
		if (slot->remap_ns)
			ms_count(ctx, MIGRATE_STAGE_REMAP, slot->remap_ns);
	}
}

void __migrate_stage_fault_wait(unsigned long pfn, u64 t0)
{
	u64 ns = ms_since(t0);

	ms_record(MS_NO_REASON, MIGRATE_STAGE_FAULT_WAIT, ns);
	trace_mm_migration_entry_wait(pfn, ns);
}

int migrate_stages_trace_reg(void)
{
	static_branch_inc(&migrate_stages_key);
	return 0;
}

void migrate_stages_trace_unreg(void)
{
	static_branch_dec(&migrate_stages_key);
}

/*
 * Called with ms_lock held.  Each CPU clears its own block when it next
 * counts (ms_get_cpu()), and ms_fold() skips those it has not yet: a CPU
 * in the middle of an update never stores an old sum into a cleared one.
 */
static void ms_reset(void)
{
	spin_lock(&ms_ring.lock);
	ms_ring.head = 0;
	spin_unlock(&ms_ring.lock);
	WRITE_ONCE(ms_gen, ms_gen + 1);
	atomic_long_set(&ms_untimed, 0);
}

/* Called with ms_lock held. */
static int ms_set(bool on)
{
	if (on == ms_debugfs_on)
		return 0;
	if (on) {
		if (!ms_ring.recs) {
			struct migrate_stage_rec *recs;

			recs = kvcalloc(MS_RING_SIZE, sizeof(*recs), GFP_KERNEL);
			if (!recs)
				return -ENOMEM;
			spin_lock(&ms_ring.lock);
			ms_ring.cap = MS_RING_SIZE;
			ms_ring.recs = recs;
			spin_unlock(&ms_ring.lock);
		}
		if (!ms_stats) {
			struct migrate_stage_cpu __percpu *st;

			st = alloc_percpu(struct migrate_stage_cpu);
			if (!st)
				return -ENOMEM;
			/* pairs with ms_get_cpu(): zeroed before seen */
			smp_store_release(&ms_stats, st);
		}
		WRITE_ONCE(ms_debugfs_on, true);
		static_branch_inc(&migrate_stages_key);
	} else {
		static_branch_dec(&migrate_stages_key);
		WRITE_ONCE(ms_debugfs_on, false);
	}
	return 0;
}

/* "sample N": time the per-folio stages of 1 folio in N (1..65536). */
static int ms_set_sample(const char *arg)
{
	unsigned int n;

	/* kstrtouint() takes a trailing newline */
	if (kstrtouint(skip_spaces(arg), 10, &n) || !n || n > MS_SAMPLE_MAX)
		return -EINVAL;
	WRITE_ONCE(ms_sample_every, n);
	return 0;
}

/* Print a/b with two decimals (no u64 '%': 32-bit has no __umoddi3). */
static void ms_print_ratio(struct seq_file *m, const char *name, u64 a, u64 b)
{
	u64 x = b ? div64_u64(a * 100, b) : 0;
	u32 frac;

	x = div_u64_rem(x, 100, &frac);
	seq_printf(m, "%s %llu.%02u\n", name, x, frac);
}

static int ms_show(struct seq_file *m, void *v)
{
	struct migrate_stage_sum *sum;
	u64 copy_ns = 0;
	int st, r;

	sum = kzalloc_obj(*sum, GFP_KERNEL);
	if (!sum)
		return -ENOMEM;
	mutex_lock(&ms_lock);
	ms_fold(sum, ms_stats, ms_gen);
	seq_printf(m, "enabled %d\nsample_every %u\n", ms_debugfs_on,
		   ms_sample_every);
	mutex_unlock(&ms_lock);

	seq_printf(m, "%-10s %10s %12s %12s %12s %12s %12s\n", "stage", "count",
		   "mean_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns");
	for (st = 0; st < NR_MIGRATE_STAGES; st++) {
		u64 cnt = 0, tot = 0;

		for (r = 0; r < MS_REASONS; r++) {
			cnt += sum->count[r][st];
			tot += sum->sum_ns[r][st];
		}
		if (st == MIGRATE_STAGE_COPY)
			copy_ns = tot;
		seq_printf(m, "%-10s %10llu %12llu %12llu %12llu %12llu %12llu\n",
			   ms_stage_names[st], cnt, cnt ? div64_u64(tot, cnt) : 0,
			   ms_percentile(sum->hist[st], 50, sum->max_ns[st]),
			   ms_percentile(sum->hist[st], 90, sum->max_ns[st]),
			   ms_percentile(sum->hist[st], 99, sum->max_ns[st]),
			   sum->max_ns[st]);
	}
	for (r = 0; r < MS_REASONS; r++) {
		bool any = false;

		for (st = 0; st < NR_MIGRATE_STAGES; st++) {
			u64 cnt = sum->count[r][st];

			if (!cnt)
				continue;
			if (!any)
				seq_printf(m, "reason %s", ms_reason_name(r));
			any = true;
			seq_printf(m, " %s=%llu/%llu", ms_stage_names[st], cnt,
				   div64_u64(sum->sum_ns[r][st], cnt));
		}
		if (any)
			seq_puts(m, "\n");
	}
	seq_printf(m, "batches %llu\nfolios %llu\nbytes_copied %llu\n",
		   sum->batches, sum->folios, sum->bytes_copied);
	seq_printf(m, "untimed_batches %ld\n", atomic_long_read(&ms_untimed));
	/* bytes per ns is GB/s; report MB/s */
	seq_printf(m, "copy_mbps %llu\n",
		   copy_ns ? div64_u64(sum->bytes_copied * 1000, copy_ns) : 0);
	ms_print_ratio(m, "flushes_per_batch", sum->flushes, sum->batches);
	ms_print_ratio(m, "cpus_per_flush", sum->flush_cpus, sum->flushes);
	kfree(sum);
	return 0;
}

static int ms_open(struct inode *inode, struct file *file)
{
	return single_open(file, ms_show, NULL);
}

static ssize_t ms_write(struct file *file, const char __user *ubuf,
			size_t len, loff_t *ppos)
{
	char buf[16];
	int ret = 0;

	if (!len || len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';

	mutex_lock(&ms_lock);
	if (sysfs_streq(buf, "1") || sysfs_streq(buf, "on"))
		ret = ms_set(true);
	else if (sysfs_streq(buf, "0") || sysfs_streq(buf, "off"))
		ret = ms_set(false);
	else if (sysfs_streq(buf, "reset"))
		ms_reset();
	else if (!strncmp(buf, "sample ", 7))
		ret = ms_set_sample(buf + 7);
	else
		ret = -EINVAL;
	mutex_unlock(&ms_lock);
	return ret ? ret : len;
}

static const struct file_operations ms_fops = {
	.owner		= THIS_MODULE,
	.open		= ms_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.release	= single_release,
	.write		= ms_write,
};

/* migrate_stages_log: a snapshot of the ring taken at open, as CSV. */
struct ms_log {
	unsigned long n;			/* records in @recs */
	struct migrate_stage_rec recs[];	/* oldest first */
};

static void *ms_log_start(struct seq_file *m, loff_t *pos)
{
	struct ms_log *log = m->private;

	if (!*pos)
		return SEQ_START_TOKEN;
	return *pos <= log->n ? &log->recs[*pos - 1] : NULL;
}

static void *ms_log_next(struct seq_file *m, void *v, loff_t *pos)
{
	++*pos;
	return ms_log_start(m, pos);
}

static void ms_log_stop(struct seq_file *m, void *v)
{
}

static int ms_log_show(struct seq_file *m, void *v)
{
	const struct migrate_stage_rec *r = v;

	if (v == SEQ_START_TOKEN) {
		seq_puts(m, "ts_ns,reason,mode,pass,rc,src_pfn,dst_pfn,order,alloc_ns,unmap_ns,copy_ns,mapping_ns,remap_ns,window_ns\n");
		return 0;
	}
	seq_printf(m, "%llu,%s,%d,%u,%d,%#lx,%#lx,%u,%llu,%llu,%llu,%llu,%llu,%llu\n",
		   r->ts, ms_reason_name(r->reason),
		   r->mode, r->pass, r->rc, r->src_pfn, r->dst_pfn, r->order,
		   r->alloc_ns, r->unmap_ns, r->copy_ns, r->mapping_ns,
		   r->remap_ns, r->window_ns);
	return 0;
}

static const struct seq_operations ms_log_ops = {
	.start	= ms_log_start,
	.next	= ms_log_next,
	.stop	= ms_log_stop,
	.show	= ms_log_show,
};

static int ms_log_open(struct inode *inode, struct file *file)
{
	struct ms_log *log;
	int ret;

	log = kvmalloc(struct_size(log, recs, MS_RING_SIZE), GFP_KERNEL);
	if (!log)
		return -ENOMEM;
	log->n = ms_ring_snapshot(&ms_ring, log->recs, MS_RING_SIZE);
	ret = seq_open(file, &ms_log_ops);
	if (ret) {
		kvfree(log);
		return ret;
	}
	((struct seq_file *)file->private_data)->private = log;
	return 0;
}

static int ms_log_release(struct inode *inode, struct file *file)
{
	kvfree(((struct seq_file *)file->private_data)->private);
	return seq_release(inode, file);
}

static const struct file_operations ms_log_fops = {
	.owner		= THIS_MODULE,
	.open		= ms_log_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.release	= ms_log_release,
};

static int __init migrate_stages_init(void)
{
	struct dentry *dir = debugfs_lookup("mm", NULL);
	bool found = dir;

	if (!found)
		dir = debugfs_create_dir("mm", NULL);
	debugfs_create_file("migrate_stages", 0600, dir, NULL, &ms_fops);
	debugfs_create_file("migrate_stages_log", 0400, dir, NULL, &ms_log_fops);
	if (found)
		dput(dir);
	return 0;
}
late_initcall(migrate_stages_init);

#ifdef CONFIG_MIGRATE_STAGES_KUNIT_TEST
#include "tests/migrate_stages_kunit.h"
#endif
