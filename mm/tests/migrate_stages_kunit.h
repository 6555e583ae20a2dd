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

/* Switching on, recording, reset and switching off, on the real state. */
static void ms_test_enable_reset(struct kunit *test)
{
	struct migrate_stage_sum *sum;
	bool was_on;
	int cpu, ret;

	sum = kunit_kzalloc(test, sizeof(*sum), GFP_KERNEL);
	if (!sum)
		kunit_skip(test, "cannot allocate the test structures");
	mutex_lock(&ms_lock);
	was_on = ms_debugfs_on;
	ret = ms_set(true);
	mutex_unlock(&ms_lock);
	if (ret)
		kunit_skip(test, "cannot allocate the per-CPU statistics");
	KUNIT_EXPECT_TRUE(test, migrate_stages_on());

	ms_record(MR_DEMOTION, MIGRATE_STAGE_REMAP, 42);
	for_each_possible_cpu(cpu)
		ms_merge(sum, per_cpu_ptr(ms_stats, cpu));
	KUNIT_EXPECT_LE(test, 1ULL, sum->count[MR_DEMOTION][MIGRATE_STAGE_REMAP]);

	mutex_lock(&ms_lock);
	ms_reset();
	mutex_unlock(&ms_lock);
	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu)
		ms_merge(sum, per_cpu_ptr(ms_stats, cpu));
	/* Real migrations may run meanwhile, but not tagged as demotion here. */
	KUNIT_EXPECT_EQ(test, 0ULL, sum->count[MR_DEMOTION][MIGRATE_STAGE_REMAP]);

	mutex_lock(&ms_lock);
	ms_set(was_on);
	mutex_unlock(&ms_lock);
	if (!was_on)
		KUNIT_EXPECT_FALSE(test, READ_ONCE(ms_debugfs_on));
}

/*
 * One folio through the inline unmap hooks of a timed batch; its UNMAP
 * began at @t, or, for 0, the hook reads the clock.
 */
static void ms_test_unmap(struct migrate_stage_ctx *ctx, u64 t)
{
	migrate_stage_folio_unmap_begin(ctx);
	ctx->last_unmap = t;	/* as __migrate_stage_unmapped() notes it */
	migrate_stage_folio_unmapped(ctx, 1, 0);
}

/* Batch bookkeeping from synthetic unmap and unlock timestamps. */
static void ms_test_ctx_window(struct kunit *test)
{
	struct migrate_stage_ctx ctx = { .start = 1, .every = 1 };
	struct migrate_stage_slot slots[3] = { };
	struct page *page;
	u64 t0, t1;

	ctx.slots = slots;
	ctx.cap_unmapped = ARRAY_SIZE(slots);

	/* Four folios whose UNMAP began at 100, 200, 300 and 400. */
	ms_test_unmap(&ctx, 100);
	ms_test_unmap(&ctx, 200);
	ms_test_unmap(&ctx, 300);
	ms_test_unmap(&ctx, 400);	/* beyond the scratch: untimed */
	KUNIT_EXPECT_EQ(test, 4U, ctx.nr_folios);
	KUNIT_EXPECT_EQ(test, 4U, ctx.nr_unmapped);
	KUNIT_EXPECT_EQ(test, 4U, ctx.nr_pages);
	KUNIT_EXPECT_EQ(test, 1U, ctx.nr_passes);
	KUNIT_EXPECT_EQ(test, 100ULL, slots[0].t_unmap);
	KUNIT_EXPECT_EQ(test, 200ULL, slots[1].t_unmap);
	KUNIT_EXPECT_EQ(test, 300ULL, slots[2].t_unmap);

	/* Pass 0: folio 0 moved at 1000, folio 1 failed, folio 2 at 1300. */
	KUNIT_EXPECT_EQ(test, 900ULL, ms_folio_moved(&ctx, 0, 0, MIGRATEPAGE_SUCCESS, 1000));
	KUNIT_EXPECT_EQ(test, 0ULL, ms_folio_moved(&ctx, 1, 0, -EAGAIN, 1100));
	KUNIT_EXPECT_EQ(test, 1000ULL, ms_folio_moved(&ctx, 2, 0, MIGRATEPAGE_SUCCESS, 1300));
	KUNIT_EXPECT_EQ(test, 0ULL, ms_folio_moved(&ctx, 3, 0, MIGRATEPAGE_SUCCESS, 1400));
	/* Pass 1: folio 1 retried; no window, counted as retried. */
	KUNIT_EXPECT_EQ(test, 0ULL, ms_folio_moved(&ctx, 0, 1, MIGRATEPAGE_SUCCESS, 1500));

	KUNIT_EXPECT_EQ(test, 2U, ctx.count[MIGRATE_STAGE_WINDOW]);
	KUNIT_EXPECT_EQ(test, 1900ULL, ctx.ns[MIGRATE_STAGE_WINDOW]);
	KUNIT_EXPECT_EQ(test, 1000ULL, ctx.window_max);
	KUNIT_EXPECT_EQ(test, 1U, ctx.nr_retried);

	/* A clock that went backwards never yields a huge window. */
	slots[0].t_unmap = 5000;
	KUNIT_EXPECT_EQ(test, 0ULL, ms_folio_moved(&ctx, 0, 0, MIGRATEPAGE_SUCCESS, 4000));

	/* An unsampled folio is counted but leaves its slot alone. */
	ctx = (struct migrate_stage_ctx) { .start = 1, .every = 2, .seq = 1 };
	ctx.slots = slots;
	ctx.cap_unmapped = ARRAY_SIZE(slots);
	slots[0].t_unmap = 0;
	ms_test_unmap(&ctx, 700);
	KUNIT_EXPECT_FALSE(test, ctx.folio_on);
	KUNIT_EXPECT_EQ(test, 0ULL, slots[0].t_unmap);
	KUNIT_EXPECT_EQ(test, 1U, ctx.nr_unmapped);
	/* the next one is sampled; with no UNMAP start noted, the clock */
	t0 = local_clock();
	ms_test_unmap(&ctx, 0);
	t1 = local_clock();
	KUNIT_EXPECT_TRUE(test, ctx.folio_on);
	KUNIT_EXPECT_GE(test, slots[1].t_unmap, t0);
	KUNIT_EXPECT_LE(test, slots[1].t_unmap, t1);
	/* and only the sampled one gets a WINDOW when moved */
	page = alloc_page(GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, page);
	migrate_stage_folio_move_begin(&ctx, page_folio(page), page_folio(page), 0, 0);
	KUNIT_EXPECT_FALSE(test, ctx.folio_on);
	migrate_stage_folio_move_begin(&ctx, page_folio(page), page_folio(page), 1, 0);
	KUNIT_EXPECT_TRUE(test, ctx.folio_on);
	KUNIT_EXPECT_EQ(test, page_to_pfn(page), ctx.cur_src_pfn);
	__free_page(page);
	KUNIT_EXPECT_EQ(test, t1 + 10 - slots[1].t_unmap,
			ms_folio_moved(&ctx, 1, 0, MIGRATEPAGE_SUCCESS, t1 + 10));
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
	struct migrate_stage_ctx ctx = {
		.reason = MR_DEMOTION, .mode = MIGRATE_ASYNC,
		.every = 1, .folio_on = true,
	};
	struct migrate_stage_slot slots[2] = { };
	struct migrate_stage_rec rec;
	u64 window;

	ctx.slots = slots;
	ctx.cap_unmapped = ARRAY_SIZE(slots);
	ms_ctx_folio(&ctx, MIGRATE_STAGE_ALLOC, 11);
	ms_ctx_folio(&ctx, MIGRATE_STAGE_UNMAP, 22);
	ctx.last_unmap = 1000;
	ms_slot_fill(&ctx, 1010);
	ctx.nr_unmapped++;
	ms_ctx_folio(&ctx, MIGRATE_STAGE_ALLOC, 5);	/* a folio that failed */
	KUNIT_EXPECT_EQ(test, 11ULL, slots[0].alloc_ns);
	KUNIT_EXPECT_EQ(test, 22ULL, slots[0].unmap_ns);

	ctx.cur_src_pfn = 0x100;
	ctx.cur_dst_pfn = 0x200;
	ctx.cur_copy = 0;
	ms_ctx_folio(&ctx, MIGRATE_STAGE_COPY, 30);
	ms_ctx_folio(&ctx, MIGRATE_STAGE_COPY, 3);	/* a retried copy adds */
	ms_ctx_folio(&ctx, MIGRATE_STAGE_MAPPING, 4);
	ms_ctx_folio(&ctx, MIGRATE_STAGE_REMAP, 50);
	window = ms_folio_moved(&ctx, 0, 0, MIGRATEPAGE_SUCCESS, 5000);
	ms_fill_rec(&rec, &ctx, 0, 0, MIGRATEPAGE_SUCCESS, 5000, window);
	KUNIT_EXPECT_EQ(test, 4000ULL, rec.window_ns);
	KUNIT_EXPECT_EQ(test, 11ULL, rec.alloc_ns);
	KUNIT_EXPECT_EQ(test, 22ULL, rec.unmap_ns);
	KUNIT_EXPECT_EQ(test, 33ULL, rec.copy_ns);
	KUNIT_EXPECT_EQ(test, 4ULL, rec.mapping_ns);
	KUNIT_EXPECT_EQ(test, 50ULL, rec.remap_ns);
	KUNIT_EXPECT_EQ(test, 0x100UL, rec.src_pfn);
	KUNIT_EXPECT_EQ(test, (u8)MR_DEMOTION, rec.reason);

	/* a later pass has no unmap slot to draw on */
	ms_fill_rec(&rec, &ctx, 0, 1, MIGRATEPAGE_SUCCESS, 6000, 0);
	KUNIT_EXPECT_EQ(test, 0ULL, rec.alloc_ns);
	KUNIT_EXPECT_EQ(test, 1U, (unsigned int)rec.pass);
}

#define MS_TEST_PAGES	64

/*
 * Migrate real, mapped anonymous folios between two nodes with one
 * MIGRATE_ASYNC batch and check that the stage counters agree with what
 * moved: one unmap, copy, remap and window per folio, at most one flush.
 */
static void ms_test_real_migration(struct kunit *test)
{
	struct migration_target_control mtc = {
		.gfp_mask = GFP_HIGHUSER_MOVABLE | __GFP_THISNODE,
		.reason = MR_SYSCALL,
	};
	struct page *pages[MS_TEST_PAGES];
	struct migrate_stage_sum *sum;
	unsigned int nr_succeeded = 0, every;
	int i, cpu, ret, src, dst, got, isolated = 0;
	unsigned long addr;
	bool was_on;
	LIST_HEAD(list);

	if (num_node_state(N_MEMORY) < 2)
		kunit_skip(test, "needs two memory nodes, have %d",
			   num_node_state(N_MEMORY));
	sum = kunit_kzalloc(test, sizeof(*sum), GFP_KERNEL);
	if (!sum)
		kunit_skip(test, "cannot allocate the test structures");
	addr = kunit_vm_mmap(test, NULL, 0, MS_TEST_PAGES * PAGE_SIZE,
			     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, 0);
	if (IS_ERR_VALUE(addr) || !addr)
		kunit_skip(test, "cannot map user memory");
	for (i = 0; i < MS_TEST_PAGES; i++) {
		u8 v = i;

		if (copy_to_user((void __user *)(addr + i * PAGE_SIZE), &v, 1))
			kunit_skip(test, "cannot fault in user memory");
	}
	got = get_user_pages_fast(addr, MS_TEST_PAGES, 0, pages);
	if (got != MS_TEST_PAGES) {
		for (i = 0; i < got; i++)
			put_page(pages[i]);
		kunit_skip(test, "get_user_pages_fast: %d", got);
	}
	src = page_to_nid(pages[0]);
	dst = next_memory_node(src);
	if (dst >= MAX_NUMNODES)
		dst = first_memory_node;
	mtc.nid = dst;

	lru_add_drain_all();
	for (i = 0; i < MS_TEST_PAGES; i++) {
		struct folio *folio = page_folio(pages[i]);

		if (folio_nid(folio) == src && !folio_test_large(folio) &&
		    isolate_folio_to_list(folio, &list))
			isolated++;
		put_page(pages[i]);
	}
	if (!isolated)
		kunit_skip(test, "no folio could be isolated");

	mutex_lock(&ms_lock);
	was_on = ms_debugfs_on;
	every = ms_sample_every;
	WRITE_ONCE(ms_sample_every, 1);		/* every folio, to count them */
	ret = ms_set(true);
	if (!ret)
		ms_reset();
	mutex_unlock(&ms_lock);
	if (ret) {
		putback_movable_pages(&list);
		kunit_skip(test, "cannot allocate the per-CPU statistics");
	}

	ret = migrate_pages(&list, alloc_migration_target, NULL,
			    (unsigned long)&mtc, MIGRATE_ASYNC, MR_SYSCALL,
			    &nr_succeeded);
	if (!list_empty(&list))
		putback_movable_pages(&list);

	for_each_possible_cpu(cpu)
		ms_merge(sum, per_cpu_ptr(ms_stats, cpu));
	mutex_lock(&ms_lock);
	ms_set(was_on);
	WRITE_ONCE(ms_sample_every, every);
	mutex_unlock(&ms_lock);

	kunit_info(test, "node %d -> %d: isolated %d, migrated %u (ret %d)",
		   src, dst, isolated, nr_succeeded, ret);
	if (!nr_succeeded)
		kunit_skip(test, "nothing migrated (ret %d)", ret);
	KUNIT_EXPECT_EQ(test, (u64)nr_succeeded,
			sum->count[MR_SYSCALL][MIGRATE_STAGE_UNMAP]);
	KUNIT_EXPECT_EQ(test, (u64)nr_succeeded,
			sum->count[MR_SYSCALL][MIGRATE_STAGE_COPY]);
	KUNIT_EXPECT_EQ(test, (u64)nr_succeeded,
			sum->count[MR_SYSCALL][MIGRATE_STAGE_REMAP]);
	KUNIT_EXPECT_EQ(test, (u64)nr_succeeded,
			sum->count[MR_SYSCALL][MIGRATE_STAGE_WINDOW]);
	KUNIT_EXPECT_EQ(test, 1ULL, sum->count[MR_SYSCALL][MIGRATE_STAGE_BATCH]);
	/*
	 * At most one batched flush per batch.  It is deferred (and timed)
	 * only when another CPU may cache the mm's translations; otherwise
	 * try_to_migrate() flushed locally and the batch had none to do.
	 */
	KUNIT_EXPECT_LE(test, sum->count[MR_SYSCALL][MIGRATE_STAGE_FLUSH], 1ULL);
	KUNIT_EXPECT_EQ(test, sum->flushes,
			sum->count[MR_SYSCALL][MIGRATE_STAGE_FLUSH]);
	KUNIT_EXPECT_EQ(test, (u64)nr_succeeded * PAGE_SIZE, sum->bytes_copied);
	KUNIT_EXPECT_EQ(test, (u64)isolated, sum->folios);

	/* The contents moved with the folios. */
	for (i = 0; i < MS_TEST_PAGES; i++) {
		u8 v;

		KUNIT_ASSERT_EQ(test, 0UL,
				copy_from_user(&v, (void __user *)(addr + i * PAGE_SIZE), 1));
		KUNIT_EXPECT_EQ(test, (u8)i, v);
	}
}

/* Sampling picks 1 folio in N by a sequence that spans batches. */
static void ms_test_sampling(struct kunit *test)
{
	struct migrate_stage_ctx ctx = { .every = 4, .seq = 2 };
	int i, n = 0;

	for (i = 0; i < 16; i++)
		n += migrate_stage_sampled(&ctx, i);
	KUNIT_EXPECT_EQ(test, 4, n);
	KUNIT_EXPECT_FALSE(test, migrate_stage_sampled(&ctx, 0));
	KUNIT_EXPECT_TRUE(test, migrate_stage_sampled(&ctx, 2));

	KUNIT_EXPECT_EQ(test, -EINVAL, ms_set_sample("0"));
	KUNIT_EXPECT_EQ(test, -EINVAL, ms_set_sample("65537"));
	KUNIT_EXPECT_EQ(test, -EINVAL, ms_set_sample("x"));
}

static struct kunit_case migrate_stages_test_cases[] = {
	KUNIT_CASE(ms_test_bucket),
	KUNIT_CASE(ms_test_percentile),
	KUNIT_CASE(ms_test_account_merge),
	KUNIT_CASE(ms_test_enable_reset),
	KUNIT_CASE(ms_test_ctx_window),
	KUNIT_CASE(ms_test_ring),
	KUNIT_CASE(ms_test_folio_record),
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
