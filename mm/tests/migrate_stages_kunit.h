/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for the pure parts of mm/migrate_stages.c: histogram
 * buckets and percentiles, per-CPU accounting and merging, reset, and
 * the per-batch bookkeeping driven by synthetic timestamps.  Included at
 * the end of migrate_stages.c so the static helpers are reachable.
 */
#ifndef _MM_TESTS_MIGRATE_STAGES_KUNIT_H
#define _MM_TESTS_MIGRATE_STAGES_KUNIT_H

#include <kunit/test.h>
#include <linux/mman.h>
#include <linux/nodemask.h>
#include <linux/swap.h>
#include "../internal.h"

static void ms_test_bucket(struct kunit *test)
{
	static const struct {
		u64 ns;
		unsigned int bucket;
	} cases[] = {
		{ 0, 0 }, { 1, 1 }, { 2, 2 }, { 3, 2 }, { 4, 3 },
		{ 1023, 10 }, { 1024, 11 }, { 1ULL << 29, 30 },
		{ (1ULL << 30) - 1, 30 }, { 1ULL << 30, MS_BUCKETS - 1 },
		{ U64_MAX, MS_BUCKETS - 1 },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		KUNIT_EXPECT_EQ_MSG(test, cases[i].bucket, ms_bucket(cases[i].ns),
				    "ns=%llu", cases[i].ns);
	/* Every value lies within the limit of its own bucket. */
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		KUNIT_EXPECT_LE(test, cases[i].ns,
				ms_bucket_limit(ms_bucket(cases[i].ns)));
	KUNIT_EXPECT_EQ(test, 0ULL, ms_bucket_limit(0));
	KUNIT_EXPECT_EQ(test, 1ULL, ms_bucket_limit(1));
	KUNIT_EXPECT_EQ(test, 1023ULL, ms_bucket_limit(10));
	KUNIT_EXPECT_EQ(test, U64_MAX, ms_bucket_limit(MS_BUCKETS - 1));
}

static void ms_test_percentile(struct kunit *test)
{
	u64 hist[MS_BUCKETS] = { };

	KUNIT_EXPECT_EQ(test, 0ULL, ms_percentile(hist, 50, 0));

	/* 90 events of 100..127 ns (bucket 7), 10 of 1000..1023 (bucket 10) */
	hist[7] = 90;
	hist[10] = 10;
	KUNIT_EXPECT_EQ(test, 127ULL, ms_percentile(hist, 50, 1000));
	KUNIT_EXPECT_EQ(test, 127ULL, ms_percentile(hist, 90, 1000));
	/* p91 and above fall in bucket 10, clamped to the observed max */
	KUNIT_EXPECT_EQ(test, 1000ULL, ms_percentile(hist, 91, 1000));
	KUNIT_EXPECT_EQ(test, 1000ULL, ms_percentile(hist, 99, 1000));
	KUNIT_EXPECT_EQ(test, 1023ULL, ms_percentile(hist, 99, 5000));

	/* A single event: every percentile is its bucket. */
	memset(hist, 0, sizeof(hist));
	hist[MS_BUCKETS - 1] = 1;
	KUNIT_EXPECT_EQ(test, 5000000000ULL,
			ms_percentile(hist, 50, 5000000000ULL));
}

static void ms_test_account_merge(struct kunit *test)
{
	struct migrate_stage_cpu *a, *b;
	struct migrate_stage_sum *sum;

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);
	sum = kunit_kzalloc(test, sizeof(*sum), GFP_KERNEL);
	if (!a || !b || !sum)
		kunit_skip(test, "cannot allocate the test structures");

	ms_account(a, MR_SYSCALL, MIGRATE_STAGE_COPY, 100);
	ms_account(a, MR_SYSCALL, MIGRATE_STAGE_COPY, 300);
	ms_account(b, MR_COMPACTION, MIGRATE_STAGE_COPY, 2000);
	/* out-of-range reasons land in the "none" row */
	ms_account(b, 1000, MIGRATE_STAGE_FAULT_WAIT, 7);
	a->bytes_copied = 4096;
	b->bytes_copied = 8192;
	a->flushes = 1;
	b->flush_cpus = 3;

	KUNIT_EXPECT_EQ(test, 2ULL, a->count[MR_SYSCALL][MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, 400ULL, a->sum_ns[MR_SYSCALL][MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, 300ULL, a->max_ns[MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, 1U, a->hist[MR_SYSCALL][MIGRATE_STAGE_COPY][7]);
	KUNIT_EXPECT_EQ(test, 1U, a->hist[MR_SYSCALL][MIGRATE_STAGE_COPY][9]);
	KUNIT_EXPECT_EQ(test, 1ULL, b->count[MS_NO_REASON][MIGRATE_STAGE_FAULT_WAIT]);

	ms_merge(sum, a);
	ms_merge(sum, b);
	KUNIT_EXPECT_EQ(test, 2ULL, sum->count[MR_SYSCALL][MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, 1ULL, sum->count[MR_COMPACTION][MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, 2000ULL, sum->max_ns[MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, 1ULL, sum->hist[MIGRATE_STAGE_COPY][11]);
	KUNIT_EXPECT_EQ(test, 12288ULL, sum->bytes_copied);
	KUNIT_EXPECT_EQ(test, 1ULL, sum->flushes);
	KUNIT_EXPECT_EQ(test, 3ULL, sum->flush_cpus);
	KUNIT_EXPECT_EQ(test, 511ULL,
			ms_percentile(sum->hist[MIGRATE_STAGE_COPY], 50,
				      sum->max_ns[MIGRATE_STAGE_COPY]));
}

/*
 * Switching on, recording, reset and switching off, on the real state;
 * not while someone is collecting (a reset would wipe their numbers).
 * Counted under reason "none" for REMAP, which real migrations never use.
 */
static void ms_test_enable_reset(struct kunit *test)
{
	struct migrate_stage_sum *sum;
	struct migrate_stage_cpu *s;
	u64 count = U64_MAX;
	unsigned long gen = 0;
	bool was_on;
	int ret;

	sum = kunit_kzalloc(test, sizeof(*sum), GFP_KERNEL);
	if (!sum)
		kunit_skip(test, "cannot allocate the test structures");
	mutex_lock(&ms_lock);
	was_on = ms_debugfs_on;
	ret = was_on ? -EBUSY : ms_set(true);
	mutex_unlock(&ms_lock);
	if (ret == -EBUSY)
		kunit_skip(test, "the debugfs switch is on: not resetting a user's statistics");
	if (ret)
		kunit_skip(test, "cannot allocate the per-CPU statistics");
	KUNIT_EXPECT_TRUE(test, migrate_stages_on());

	ms_record(MS_NO_REASON, MIGRATE_STAGE_REMAP, 42);
	ms_fold(sum, ms_stats, ms_gen);
	KUNIT_EXPECT_EQ(test, 1ULL, sum->count[MS_NO_REASON][MIGRATE_STAGE_REMAP]);

	mutex_lock(&ms_lock);
	ms_reset();
	mutex_unlock(&ms_lock);
	/* this CPU clears its block when it next counts, before counting */
	s = ms_get_cpu();
	if (s) {
		gen = s->gen;
		count = s->count[MS_NO_REASON][MIGRATE_STAGE_REMAP];
		ms_account(s, MS_NO_REASON, MIGRATE_STAGE_REMAP, 7);
	}
	ms_put_cpu(s);
	KUNIT_EXPECT_EQ(test, READ_ONCE(ms_gen), gen);
	KUNIT_EXPECT_EQ(test, 0ULL, count);
	memset(sum, 0, sizeof(*sum));
	ms_fold(sum, ms_stats, ms_gen);
	KUNIT_EXPECT_EQ(test, 1ULL, sum->count[MS_NO_REASON][MIGRATE_STAGE_REMAP]);
	KUNIT_EXPECT_EQ(test, 7ULL, sum->sum_ns[MS_NO_REASON][MIGRATE_STAGE_REMAP]);

	mutex_lock(&ms_lock);
	ms_reset();
	ms_set(false);
	mutex_unlock(&ms_lock);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(ms_debugfs_on));
}

/*
 * A reset never meets a half-done update: a block not cleared since the
 * last reset is left out of the sum, however its CPU updated it.
 */
static void ms_test_reset_generation(struct kunit *test)
{
	struct migrate_stage_cpu __percpu *st;
	struct migrate_stage_sum *sum;
	int cpu, n = 0;

	sum = kunit_kzalloc(test, sizeof(*sum), GFP_KERNEL);
	st = alloc_percpu(struct migrate_stage_cpu);
	if (!sum || !st) {
		free_percpu(st);
		kunit_skip(test, "cannot allocate the test structures");
	}
	for_each_possible_cpu(cpu) {
		struct migrate_stage_cpu *s = per_cpu_ptr(st, cpu);

		/* CPUs alternately cleared in generation 5, or still in 4 */
		s->gen = n++ & 1 ? 4 : 5;
		ms_account(s, MR_COMPACTION, MIGRATE_STAGE_COPY, 100);
		s->batches = 1;
	}
	ms_fold(sum, st, 5);
	KUNIT_EXPECT_EQ(test, (u64)(n + 1) / 2,
			sum->count[MR_COMPACTION][MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, (u64)(n + 1) / 2, sum->batches);
	KUNIT_EXPECT_EQ(test, (u64)(n + 1) / 2 * 100,
			sum->sum_ns[MR_COMPACTION][MIGRATE_STAGE_COPY]);
	free_percpu(st);
}

/* A batch record of @nr folios sampled 1 in @every from phase @seq. */
static struct migrate_stage_batch *ms_test_batch(struct kunit *test,
						 unsigned int nr,
						 unsigned int every,
						 unsigned int seq)
{
	struct ms_shape sh = ms_batch_shape(nr, every, seq);
	struct migrate_stage_batch *b;

	b = kunit_kzalloc(test, struct_size(b, slots, sh.nr_slots), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, b);
	b->every = sh.every;
	b->seq = sh.seq;
	b->nr_slots = sh.nr_slots;
	b->mode = MIGRATE_ASYNC;
	return b;
}

/*
 * One folio through the inline unmap hooks of a timed batch; its UNMAP
 * began at @t, or, for 0, the hook reads the clock.
 */
static void ms_test_unmap(struct migrate_stage_ctx *ctx, u64 t)
{
	migrate_stage_folio_unmap_begin(ctx);
	ctx->b->last_unmap = t;	/* as __migrate_stage_unmapped() notes it */
	migrate_stage_folio_unmapped(ctx, 1, 0);
}

/* The folio the move phase is at: the @idx-th, on @pass. */
static void ms_test_at(struct migrate_stage_batch *b, unsigned int idx,
		       int pass)
{
	b->cur = pass ? NULL : migrate_stage_slot(b, idx);
}

/* Batch bookkeeping from synthetic unmap and unlock timestamps. */
static void ms_test_ctx_window(struct kunit *test)
{
	struct migrate_stage_ctx ctx = { .on = true };
	struct migrate_stage_batch *b = ms_test_batch(test, 3, 1, 0);
	struct page *page;
	u64 t0, t1;

	ctx.b = b;
	/* Three folios whose UNMAP began at 100, 200 and 300. */
	ms_test_unmap(&ctx, 100);
	ms_test_unmap(&ctx, 200);
	ms_test_unmap(&ctx, 300);
	KUNIT_EXPECT_EQ(test, 3U, b->nr_folios);
	KUNIT_EXPECT_EQ(test, 3U, b->nr_pages);
	KUNIT_EXPECT_EQ(test, 1U, b->nr_passes);
	KUNIT_EXPECT_EQ(test, 100ULL, b->slots[0].t_unmap);
	KUNIT_EXPECT_EQ(test, 200ULL, b->slots[1].t_unmap);
	KUNIT_EXPECT_EQ(test, 300ULL, b->slots[2].t_unmap);

	/* Pass 0: folio 0 moved at 1000, folio 1 failed, folio 2 at 1300. */
	ms_test_at(b, 0, 0);
	KUNIT_EXPECT_EQ(test, 900ULL, ms_folio_moved(b, 0, 0, 1000));
	ms_test_at(b, 1, 0);
	KUNIT_EXPECT_EQ(test, 0ULL, ms_folio_moved(b, 0, -EAGAIN, 1100));
	ms_test_at(b, 2, 0);
	KUNIT_EXPECT_EQ(test, 1000ULL, ms_folio_moved(b, 0, 0, 1300));
	/* Pass 1: folio 1 retried; no window, counted as retried. */
	ms_test_at(b, 0, 1);
	KUNIT_EXPECT_EQ(test, 0ULL, ms_folio_moved(b, 1, 0, 1500));

	KUNIT_EXPECT_EQ(test, 2U, b->count[MIGRATE_STAGE_WINDOW]);
	KUNIT_EXPECT_EQ(test, 1900ULL, b->ns[MIGRATE_STAGE_WINDOW]);
	KUNIT_EXPECT_EQ(test, 1000ULL, b->window_max);
	KUNIT_EXPECT_EQ(test, 1U, b->nr_retried);

	/* A clock that went backwards never yields a huge window. */
	b->slots[0].t_unmap = 5000;
	ms_test_at(b, 0, 0);
	KUNIT_EXPECT_EQ(test, 0ULL, ms_folio_moved(b, 0, 0, 4000));

	/* An unsampled folio is counted but has no slot. */
	b = ms_test_batch(test, 2, 2, 1);
	ctx.b = b;
	KUNIT_EXPECT_EQ(test, 1U, b->nr_slots);
	ms_test_unmap(&ctx, 700);
	KUNIT_EXPECT_NULL(test, b->cur);
	KUNIT_EXPECT_EQ(test, 0ULL, b->slots[0].t_unmap);
	KUNIT_EXPECT_EQ(test, 1U, b->nr_folios);
	/* the next one is sampled; with no UNMAP start noted, the clock */
	t0 = ktime_get_ns();
	ms_test_unmap(&ctx, 0);
	t1 = ktime_get_ns();
	KUNIT_EXPECT_PTR_EQ(test, &b->slots[0], b->cur);
	KUNIT_EXPECT_GE(test, b->slots[0].t_unmap, t0);
	KUNIT_EXPECT_LE(test, b->slots[0].t_unmap, t1);
	/* and only the sampled one gets a WINDOW when moved */
	page = alloc_page(GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, page);
	migrate_stage_folio_move_begin(&ctx, page_folio(page), page_folio(page), 0, 0);
	KUNIT_EXPECT_NULL(test, b->cur);
	migrate_stage_folio_move_begin(&ctx, page_folio(page), page_folio(page), 1, 0);
	KUNIT_EXPECT_PTR_EQ(test, &b->slots[0], b->cur);
	KUNIT_EXPECT_EQ(test, page_to_pfn(page), b->cur_src_pfn);
	__free_page(page);
	KUNIT_EXPECT_EQ(test, t1 + 10 - b->slots[0].t_unmap,
			ms_folio_moved(b, 0, 0, t1 + 10));
}

/*
 * A move loop that finds its batch through the task (7.3's
 * migrate_folios_move()): each pass restarts the folio index, so the
 * first pass meets the unmap order's slots, and a retry pass, at index 0
 * of a shorter list, is counted as retried without a WINDOW.
 */
static void ms_test_move_loop(struct kunit *test)
{
	struct migrate_stage_batch *b = ms_test_batch(test, 3, 1, 0);
	struct migrate_stage_ctx ctx;
	struct page *page;
	struct folio *f;
	int i;

	page = alloc_page(GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, page);
	f = page_folio(page);
	migrate_stage_push(&ctx, MR_SYSCALL);
	ctx.on = true;
	ctx.b = b;
	for (i = 0; i < 3; i++)
		ms_test_unmap(&ctx, 1);
	/* pass 0: the middle folio is busy */
	migrate_stage_move_pass(&ctx, 0);
	for (i = 0; i < 3; i++) {
		migrate_stage_move_next(f, f);
		KUNIT_EXPECT_PTR_EQ(test, &b->slots[i], b->cur);
		migrate_stage_move_done(i == 1 ? -EAGAIN : 0);
	}
	migrate_stage_move_pass(&ctx, 1);
	migrate_stage_move_next(f, f);
	KUNIT_EXPECT_NULL(test, b->cur);
	migrate_stage_move_done(0);
	migrate_stage_pop(&ctx);
	__free_page(page);

	KUNIT_EXPECT_EQ(test, 2U, b->count[MIGRATE_STAGE_WINDOW]);
	KUNIT_EXPECT_EQ(test, 1U, b->nr_retried);
	KUNIT_EXPECT_EQ(test, 1U, ctx.move_idx);
}

/* The per-folio ring keeps the newest records, oldest first on read. */
static void ms_test_ring(struct kunit *test)
{
	struct migrate_stage_rec recs[4] = { }, out[8], rec = { };
	struct migrate_stage_ring ring = { };
	unsigned long n;
	int i;

	/* on the stack: lockdep needs a runtime init to give it a class */
	spin_lock_init(&ring.lock);
	KUNIT_EXPECT_EQ(test, 0UL, ms_ring_snapshot(&ring, out, 8));
	ring.recs = recs;
	ring.cap = ARRAY_SIZE(recs);
	for (i = 1; i <= 6; i++) {
		rec.ts = i;
		ms_ring_push(&ring, &rec, 1);
	}
	n = ms_ring_snapshot(&ring, out, 8);
	KUNIT_ASSERT_EQ(test, 4UL, n);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, (u64)(3 + i), out[i].ts);
	/* asking for fewer returns the newest ones */
	n = ms_ring_snapshot(&ring, out, 2);
	KUNIT_ASSERT_EQ(test, 2UL, n);
	KUNIT_EXPECT_EQ(test, 5ULL, out[0].ts);
	KUNIT_EXPECT_EQ(test, 6ULL, out[1].ts);
}

/* Per-folio durations travel from the unmap phase to the move phase. */
static void ms_test_folio_record(struct kunit *test)
{
	struct migrate_stage_batch *b = ms_test_batch(test, 2, 1, 0);
	struct migrate_stage_slot *slot = &b->slots[0];
	struct migrate_stage_rec rec;
	u64 window;

	ms_slot_add(slot, MIGRATE_STAGE_ALLOC, 11);
	ms_slot_add(slot, MIGRATE_STAGE_UNMAP, 22);
	ms_slot_add(slot, MIGRATE_STAGE_FLUSH, 99);	/* not per folio */
	slot->t_unmap = 1000;
	ms_slot_add(&b->slots[1], MIGRATE_STAGE_ALLOC, 5);
	KUNIT_EXPECT_EQ(test, 11U, slot->alloc_ns);
	KUNIT_EXPECT_EQ(test, 22U, slot->unmap_ns);

	b->cur = slot;
	b->cur_src_pfn = 0x100;
	b->cur_dst_pfn = 0x200;
	ms_slot_add(slot, MIGRATE_STAGE_COPY, 30);
	ms_slot_add(slot, MIGRATE_STAGE_COPY, 3);	/* a retried copy adds */
	ms_slot_add(slot, MIGRATE_STAGE_MAPPING, 4);
	ms_slot_add(slot, MIGRATE_STAGE_REMAP, 50);
	window = ms_folio_moved(b, 0, 0, 5000);
	ms_fill_rec(&rec, b, MR_DEMOTION, 0, 5000, window);
	KUNIT_EXPECT_EQ(test, 4000ULL, rec.window_ns);
	KUNIT_EXPECT_EQ(test, 11ULL, rec.alloc_ns);
	KUNIT_EXPECT_EQ(test, 22ULL, rec.unmap_ns);
	KUNIT_EXPECT_EQ(test, 33ULL, rec.copy_ns);
	KUNIT_EXPECT_EQ(test, 4ULL, rec.mapping_ns);
	KUNIT_EXPECT_EQ(test, 50ULL, rec.remap_ns);
	KUNIT_EXPECT_EQ(test, 0x100UL, rec.src_pfn);
	KUNIT_EXPECT_EQ(test, (u8)MR_DEMOTION, rec.reason);

	/* a slot saturates rather than wraps */
	ms_slot_add(slot, MIGRATE_STAGE_COPY, 5ULL << 32);
	KUNIT_EXPECT_EQ(test, U32_MAX, slot->copy_ns);
}

/*
 * ROCM's copy and switch of a folio count once, only if ROCM moved it;
 * a folio it gave up is copied again by the classic path, counted there.
 */
static void ms_test_rocm_hold(struct kunit *test)
{
	struct migrate_stage_batch *b = ms_test_batch(test, 3, 1, 0);
	struct migrate_stage_ctx ctx;
	int i;

	/* its synthetic events would land in a user's summary */
	if (READ_ONCE(ms_debugfs_on))
		kunit_skip(test, "the debugfs switch is on");
	migrate_stage_push(&ctx, MR_NUMA_MISPLACED);
	ctx.b = b;
	ctx.on = true;
	migrate_stage_rocm_begin(&ctx);
	for (i = 0; i < 3; i++) {
		migrate_stage_folio_select(&ctx, i);
		__migrate_stage_copied(ktime_get_ns() - 100 * (i + 1), PAGE_SIZE);
		__migrate_stage_end(MIGRATE_STAGE_REMAP, ktime_get_ns() - 10);
	}
	/* held: nothing counted yet */
	KUNIT_EXPECT_EQ(test, 0U, b->count[MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, 0U, b->count[MIGRATE_STAGE_REMAP]);
	KUNIT_EXPECT_EQ(test, 0ULL, b->bytes_copied);
	KUNIT_EXPECT_LE(test, 200U, b->slots[1].copy_ns);

	/* folios 0 and 2 moved in place, folio 1 fell back */
	migrate_stage_rocm_done(&ctx, 0, 3, BIT_ULL(0) | BIT_ULL(2));
	KUNIT_EXPECT_FALSE(test, b->rocm_phase);
	KUNIT_EXPECT_EQ(test, 2U, b->count[MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, 2U, b->count[MIGRATE_STAGE_REMAP]);
	KUNIT_EXPECT_EQ(test, 2ULL * PAGE_SIZE, b->bytes_copied);
	KUNIT_EXPECT_EQ(test, (u64)b->slots[0].copy_ns + b->slots[2].copy_ns,
			b->ns[MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, 0U, b->slots[1].copy_ns);
	KUNIT_EXPECT_EQ(test, 0U, b->slots[1].remap_ns);

	/* the fallback's classic copy is counted as it happens */
	migrate_stage_folio_select(&ctx, 1);
	__migrate_stage_copied(ktime_get_ns() - 50, PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, 3U, b->count[MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, 3ULL * PAGE_SIZE, b->bytes_copied);
	KUNIT_EXPECT_LE(test, 50U, b->slots[1].copy_ns);
	current->migrate_stage_ctx = ctx.prev;
}

/*
 * A batch that starts while timing is off still stands in for its
 * nested calls: switching timing on mid-batch times nothing of it, and
 * nothing of it lands in an outer batch's record.
 */
static void ms_test_nested_off(struct kunit *test)
{
	struct migrate_stage_batch *outer_b = ms_test_batch(test, 1, 1, 0);
	struct migrate_stage_ctx outer, inner;
	LIST_HEAD(empty);

	if (migrate_stages_on())
		kunit_skip(test, "stage timing is on already");
	migrate_stage_push(&outer, MR_COMPACTION);
	outer.b = outer_b;
	outer.on = true;
	outer_b->cur = &outer_b->slots[0];

	migrate_stage_batch_begin(&inner, &empty, MIGRATE_SYNC, MR_SYSCALL);
	KUNIT_EXPECT_PTR_EQ(test, &inner, current->migrate_stage_ctx);
	KUNIT_EXPECT_PTR_EQ(test, &outer, inner.prev);
	KUNIT_EXPECT_NULL(test, inner.b);

	migrate_stages_trace_reg();	/* timing comes on mid-batch */
	KUNIT_EXPECT_EQ(test, 0ULL, migrate_stage_begin());
	KUNIT_EXPECT_EQ(test, 0ULL, migrate_stage_flush_begin());
	KUNIT_EXPECT_NE(test, 0ULL, migrate_stage_fault_begin());
	migrate_stage_folio_unmap_begin(&inner);
	migrate_stage_folio_unmapped(&inner, 1, 0);
	migrate_stages_trace_unreg();

	migrate_stage_batch_end(&inner);
	KUNIT_EXPECT_PTR_EQ(test, &outer, current->migrate_stage_ctx);
	KUNIT_EXPECT_EQ(test, 0U, outer_b->nr_folios);
	KUNIT_EXPECT_EQ(test, 0U, outer_b->count[MIGRATE_STAGE_COPY]);
	current->migrate_stage_ctx = outer.prev;
}

#define MS_TEST_PAGES	64

/* What the batches of one task and reason added up to (mm_migrate_batch). */
struct ms_test_sink {
	struct task_struct *task;	/* only this task's batches */
	int reason;			/* and only this reason */
	unsigned int batches;
	unsigned int max_every;
	u64 count[NR_MIGRATE_STAGES];
	u64 folios, retried, bytes, flushes;
};

static void ms_test_probe(void *data, const struct migrate_stage_ctx *ctx,
			  u64 total_ns)
{
	struct ms_test_sink *sink = data;
	const struct migrate_stage_batch *b = ctx->b;
	int st;

	if (current != sink->task || ctx->reason != sink->reason)
		return;
	sink->batches++;
	sink->max_every = max(sink->max_every, b->every);
	for (st = 0; st < NR_MIGRATE_STAGES; st++)
		sink->count[st] += b->count[st];
	sink->folios += b->nr_folios;
	sink->retried += b->nr_retried;
	sink->bytes += b->bytes_copied;
	sink->flushes += b->nr_flushes;
}

/*
 * Fault in MS_TEST_PAGES private anonymous pages at @addr and isolate
 * those that are order-0 onto @list; returns how many, their node in
 * *@nid.  Written once by this task, they are exclusive anon folios,
 * which ROCM never takes (ROCM_EXCLUSIVE) whatever vm.migrate_rocm says.
 */
static int ms_test_isolate(struct kunit *test, unsigned long addr,
			   struct list_head *list, int *nid)
{
	struct page *pages[MS_TEST_PAGES];
	int i, got, isolated = 0;

	for (i = 0; i < MS_TEST_PAGES; i++) {
		u8 v = i;

		if (copy_to_user((void __user *)(addr + i * PAGE_SIZE), &v, 1))
			return -EFAULT;
	}
	got = get_user_pages_fast(addr, MS_TEST_PAGES, 0, pages);
	if (got != MS_TEST_PAGES) {
		for (i = 0; i < got; i++)
			put_page(pages[i]);
		return -EFAULT;
	}
	*nid = page_to_nid(pages[0]);
	lru_add_drain_all();
	for (i = 0; i < MS_TEST_PAGES; i++) {
		struct folio *folio = page_folio(pages[i]);

		if (folio_nid(folio) == *nid && !folio_test_large(folio) &&
		    isolate_folio_to_list(folio, list))
			isolated++;
		put_page(pages[i]);
	}
	return isolated;
}

/*
 * Migrate real, mapped anonymous folios between two nodes with one
 * MIGRATE_ASYNC migrate_pages() call and check that the batch records
 * of this task agree with what moved.  The records come from a probe on
 * mm_migrate_batch filtered by task and reason, so other migrations
 * running meanwhile (other tasks, other reasons) do not count, and the
 * debugfs summary is left alone.
 */
static void ms_test_real_migration(struct kunit *test)
{
	struct migration_target_control mtc = {
		.gfp_mask = GFP_HIGHUSER_MOVABLE | __GFP_THISNODE,
		.reason = MR_SYSCALL,
	};
	struct ms_test_sink *sink;
	unsigned int nr_succeeded = 0, every;
	int i, ret, src, isolated;
	unsigned long addr;
	LIST_HEAD(list);

	if (num_node_state(N_MEMORY) < 2)
		kunit_skip(test, "needs two memory nodes, have %d",
			   num_node_state(N_MEMORY));
	sink = kunit_kzalloc(test, sizeof(*sink), GFP_KERNEL);
	if (!sink)
		kunit_skip(test, "cannot allocate the test structures");
	addr = kunit_vm_mmap(test, NULL, 0, MS_TEST_PAGES * PAGE_SIZE,
			     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, 0);
	if (IS_ERR_VALUE(addr) || !addr)
		kunit_skip(test, "cannot map user memory");
	isolated = ms_test_isolate(test, addr, &list, &src);
	if (isolated <= 0)
		kunit_skip(test, "no folio could be faulted in and isolated (%d)",
			   isolated);
	mtc.nid = next_memory_node(src);
	if (mtc.nid >= MAX_NUMNODES)
		mtc.nid = first_memory_node;

	sink->task = current;
	sink->reason = MR_SYSCALL;
	ret = register_trace_mm_migrate_batch(ms_test_probe, sink);
	if (ret) {
		putback_movable_pages(&list);
		kunit_skip(test, "cannot attach to mm_migrate_batch: %d", ret);
	}
	mutex_lock(&ms_lock);
	every = ms_sample_every;
	WRITE_ONCE(ms_sample_every, 1);		/* every folio, to count them */
	mutex_unlock(&ms_lock);
	ret = migrate_pages(&list, alloc_migration_target, NULL,
			    (unsigned long)&mtc, MIGRATE_ASYNC, MR_SYSCALL,
			    &nr_succeeded);
	mutex_lock(&ms_lock);
	if (ms_sample_every == 1)
		WRITE_ONCE(ms_sample_every, every);
	mutex_unlock(&ms_lock);
	unregister_trace_mm_migrate_batch(ms_test_probe, sink);
	tracepoint_synchronize_unregister();
	if (!list_empty(&list))
		putback_movable_pages(&list);

	kunit_info(test, "node %d -> %d: isolated %d, migrated %u (ret %d), %u batches, %llu folios unmapped, %llu retried",
		   src, mtc.nid, isolated, nr_succeeded, ret, sink->batches,
		   sink->folios, sink->retried);
	if (!nr_succeeded)
		kunit_skip(test, "nothing migrated (ret %d)", ret);
	/* its record is allocated with GFP_NOWAIT: it may run untimed */
	if (!sink->batches)
		kunit_skip(test, "the batch ran untimed (%ld untimed so far)",
			   atomic_long_read(&ms_untimed));
	/* another writer of the sampling rate meanwhile is not a failure */
	if (sink->max_every != 1)
		kunit_skip(test, "sampling changed under the test (1 in %u)",
			   sink->max_every);
	KUNIT_EXPECT_EQ(test, (u64)sink->batches, sink->count[MIGRATE_STAGE_BATCH]);
	KUNIT_EXPECT_LE(test, (u64)nr_succeeded, sink->folios);
	KUNIT_EXPECT_LE(test, sink->folios, (u64)isolated);
	/* an unmap may be tried again on a later pass */
	KUNIT_EXPECT_LE(test, sink->folios, sink->count[MIGRATE_STAGE_UNMAP]);
	/*
	 * Each folio moved on the first pass was copied and remapped, each
	 * copy a page; a later pass (retried) times none of its stages.
	 */
	KUNIT_EXPECT_LE(test, (u64)nr_succeeded,
			sink->count[MIGRATE_STAGE_COPY] + sink->retried);
	KUNIT_EXPECT_LE(test, (u64)nr_succeeded,
			sink->count[MIGRATE_STAGE_REMAP] + sink->retried);
	KUNIT_EXPECT_EQ(test, sink->count[MIGRATE_STAGE_COPY] * PAGE_SIZE,
			sink->bytes);
	/* WINDOW: the first pass's successes; retried ones are counted */
	KUNIT_EXPECT_LE(test, sink->count[MIGRATE_STAGE_WINDOW], (u64)nr_succeeded);
	KUNIT_EXPECT_LE(test, (u64)nr_succeeded,
			sink->count[MIGRATE_STAGE_WINDOW] + sink->retried);
	KUNIT_EXPECT_LE(test, sink->count[MIGRATE_STAGE_WINDOW],
			sink->count[MIGRATE_STAGE_REMAP]);
	/*
	 * At most one batched flush per batch.  It is deferred (and timed)
	 * only when another CPU may cache the mm's translations; otherwise
	 * try_to_migrate() flushed locally and the batch had none to do.
	 */
	KUNIT_EXPECT_LE(test, sink->count[MIGRATE_STAGE_FLUSH], (u64)sink->batches);
	KUNIT_EXPECT_EQ(test, sink->flushes, sink->count[MIGRATE_STAGE_FLUSH]);

	/* The contents moved with the folios. */
	for (i = 0; i < MS_TEST_PAGES; i++) {
		u8 v;

		KUNIT_ASSERT_EQ(test, 0UL,
				copy_from_user(&v, (void __user *)(addr + i * PAGE_SIZE), 1));
		KUNIT_EXPECT_EQ(test, (u8)i, v);
	}
}

/*
 * Sampling picks 1 folio in N by a sequence that spans batches, and a
 * batch has a slot for each folio it samples: no two share one, none is
 * left without.
 */
static void ms_test_sampling(struct kunit *test)
{
	static const unsigned int nrs[] = { 0, 1, 2, 3, 7, 63, 64, 65, 512 };
	struct migrate_stage_batch *b;
	struct ms_shape sh;
	int i, e, q, n;

	b = ms_test_batch(test, 16, 4, 2);
	for (i = 0, n = 0; i < 16; i++)
		n += !!migrate_stage_slot(b, i);
	KUNIT_EXPECT_EQ(test, 4, n);
	KUNIT_EXPECT_NULL(test, migrate_stage_slot(b, 0));
	KUNIT_EXPECT_PTR_EQ(test, &b->slots[0], migrate_stage_slot(b, 2));
	KUNIT_EXPECT_PTR_EQ(test, &b->slots[3], migrate_stage_slot(b, 14));

	for (i = 0; i < ARRAY_SIZE(nrs); i++) {
		for (e = 1; e <= 9; e++) {
			for (q = 0; q < 20; q++) {
				unsigned int idx, k = 0;

				b = ms_test_batch(test, nrs[i], e, q);
				for (idx = 0; idx < nrs[i]; idx++) {
					struct migrate_stage_slot *slot;

					slot = migrate_stage_slot(b, idx);
					/* 1 in @e, from the @q-th of the sequence */
					KUNIT_EXPECT_EQ(test, !((q + idx) % e), !!slot);
					if (!slot)
						continue;
					/* slots are handed out in order */
					KUNIT_EXPECT_PTR_EQ(test, &b->slots[k], slot);
					k++;
				}
				KUNIT_EXPECT_EQ_MSG(test, b->nr_slots, k,
						    "nr %u every %d seq %d",
						    nrs[i], e, q);
			}
		}
	}

	/* a 64K-page arm64 batch of 8192 folios samples at most 512 */
	sh = ms_batch_shape(8192, 1, 0);
	KUNIT_EXPECT_EQ(test, 16U, sh.every);
	KUNIT_EXPECT_EQ(test, (unsigned int)MS_MAX_SAMPLES, sh.nr_slots);
	for (i = 513; i <= 8192; i += 251) {
		sh = ms_batch_shape(i, 1, i);
		KUNIT_EXPECT_LE(test, sh.nr_slots, (unsigned int)MS_MAX_SAMPLES);
	}
	sh = ms_batch_shape(8192, 64, 5);
	KUNIT_EXPECT_EQ(test, 64U, sh.every);
	KUNIT_EXPECT_EQ(test, 128U, sh.nr_slots);

	KUNIT_EXPECT_EQ(test, -EINVAL, ms_set_sample("0"));
	KUNIT_EXPECT_EQ(test, -EINVAL, ms_set_sample("65537"));
	KUNIT_EXPECT_EQ(test, -EINVAL, ms_set_sample("x"));
}

static struct kunit_case migrate_stages_test_cases[] = {
	KUNIT_CASE(ms_test_bucket),
	KUNIT_CASE(ms_test_percentile),
	KUNIT_CASE(ms_test_account_merge),
	KUNIT_CASE(ms_test_enable_reset),
	KUNIT_CASE(ms_test_reset_generation),
	KUNIT_CASE(ms_test_ctx_window),
	KUNIT_CASE(ms_test_move_loop),
	KUNIT_CASE(ms_test_ring),
	KUNIT_CASE(ms_test_folio_record),
	KUNIT_CASE(ms_test_rocm_hold),
	KUNIT_CASE(ms_test_nested_off),
	KUNIT_CASE(ms_test_sampling),
	KUNIT_CASE(ms_test_real_migration),
	{}
};

static struct kunit_suite migrate_stages_test_suite = {
	.name = "migrate_stages",
	.test_cases = migrate_stages_test_cases,
};

kunit_test_suite(migrate_stages_test_suite);

#endif /* _MM_TESTS_MIGRATE_STAGES_KUNIT_H */
