/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for range-batched migration unmap (mm/migrate_range.c):
 * which folios may share a run, how a batch is cut into runs
 * (migrate_range_run_step()), and which folios are left mapped for one.
 * Included from mm/migrate_range.c.
 */
#include <kunit/test.h>
#include <linux/gfp.h>

/* Stand-ins for two anon_vmas: only their addresses are used. */
static unsigned long mr_objs[2] __aligned(8);
#define MR_ANON(i)	((unsigned long)&mr_objs[i] | FOLIO_MAPPING_ANON)

static void mr_joins(struct kunit *test)
{
	unsigned long a = MR_ANON(0), b = MR_ANON(1);

	/* the next offset, or one past a hole, of the same anon_vma */
	KUNIT_EXPECT_TRUE(test, migrate_range_key_joins(a, 10, 10, 1, a, 11));
	KUNIT_EXPECT_TRUE(test, migrate_range_key_joins(a, 10, 11, 2, a, 40));
	/* another anon_vma */
	KUNIT_EXPECT_FALSE(test, migrate_range_key_joins(a, 10, 10, 1, b, 11));
	/* the same offset again, or a step back */
	KUNIT_EXPECT_FALSE(test, migrate_range_key_joins(a, 10, 12, 2, a, 12));
	KUNIT_EXPECT_FALSE(test, migrate_range_key_joins(a, 10, 12, 2, a, 11));
	/* a run spans less than one PTE table's worth of offsets */
	KUNIT_EXPECT_TRUE(test, migrate_range_key_joins(a, 0, 1, 2, a,
							PTRS_PER_PTE - 1));
	KUNIT_EXPECT_FALSE(test, migrate_range_key_joins(a, 0, 1, 2, a,
							 PTRS_PER_PTE));
	/* and has at most MIGRATE_RANGE_MAX folios */
	KUNIT_EXPECT_TRUE(test, migrate_range_key_joins(a, 0, 62,
							MIGRATE_RANGE_MAX - 1,
							a, 63));
	KUNIT_EXPECT_FALSE(test, migrate_range_key_joins(a, 0, 63,
							 MIGRATE_RANGE_MAX,
							 a, 64));
	/* offsets near the top do not wrap */
	KUNIT_EXPECT_FALSE(test, migrate_range_key_joins(a, ULONG_MAX - 1,
							 ULONG_MAX - 1, 1,
							 a, 0));
}

/* Enough fake folios for three runs: two full ones and a short one. */
#define MR_NR	(2 * MIGRATE_RANGE_MAX + 8)

/* Fake folios: migrate_range_joins() looks at ->mapping and ->index only. */
struct mr_batch {
	struct folio *src, *dst;		/* MR_NR each */
	DECLARE_BITMAP(kept, MR_NR);		/* not deferred */
	struct migrate_range_run runs[MR_NR];	/* what mr_gather() found */
};

static struct mr_batch *mr_new_batch(struct kunit *test)
{
	struct mr_batch *b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, b);
	b->src = kunit_kcalloc(test, MR_NR, sizeof(*b->src), GFP_KERNEL);
	b->dst = kunit_kcalloc(test, MR_NR, sizeof(*b->dst), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, b->src);
	KUNIT_ASSERT_NOT_NULL(test, b->dst);
	return b;
}

static void mr_set(struct mr_batch *b, int i, unsigned long mapping,
		   pgoff_t index)
{
	b->src[i].mapping = (struct address_space *)mapping;
	b->src[i].index = index;
}

/* Feed the first @n folios to migrate_range_run_step(), as a batch does. */
static int mr_gather(struct mr_batch *b, int n)
{
	struct migrate_range_run run = {};
	int i, nr = 0;

	for (i = 0; i < n; i++)
		nr += migrate_range_run_step(&run, &b->runs[nr], &b->src[i],
					     &b->dst[i], i,
					     !test_bit(i, b->kept));
	if (run.nr)
		b->runs[nr++] = run;
	return nr;
}

/*
 * The runs of the first @n folios are @want, as (first index, length)
 * pairs in batch order; a run's folios and the first's destination are
 * those at its place in the batch.
 */
static void mr_expect_runs(struct kunit *test, struct mr_batch *b, int n,
			   const unsigned int (*want)[2], int nr_want)
{
	int k, nr = mr_gather(b, n);

	KUNIT_ASSERT_EQ(test, nr_want, nr);
	for (k = 0; k < nr; k++) {
		const struct migrate_range_run *r = &b->runs[k];

		KUNIT_EXPECT_EQ_MSG(test, want[k][0], r->idx, "run %d", k);
		KUNIT_EXPECT_EQ_MSG(test, want[k][1], r->nr, "run %d", k);
		KUNIT_EXPECT_PTR_EQ(test, &b->src[want[k][0]], r->first);
		KUNIT_EXPECT_PTR_EQ(test,
				    &b->src[want[k][0] + want[k][1] - 1],
				    r->last);
		KUNIT_EXPECT_PTR_EQ(test, &b->dst[want[k][0]], r->dst);
	}
}

/* Consecutive offsets of one anon_vma: full runs, then the rest. */
static void mr_runs_full(struct kunit *test)
{
	const unsigned int want[][2] = {
		{ 0, MIGRATE_RANGE_MAX },
		{ MIGRATE_RANGE_MAX, MIGRATE_RANGE_MAX },
		{ 2 * MIGRATE_RANGE_MAX, 8 },
	};
	struct mr_batch *b = mr_new_batch(test);
	int i;

	for (i = 0; i < MR_NR; i++)
		mr_set(b, i, MR_ANON(0), 1000 + i);
	mr_expect_runs(test, b, MR_NR, want, ARRAY_SIZE(want));
}

/* Folios of two VMAs, or offsets falling: nothing joins. */
static void mr_runs_apart(struct kunit *test)
{
	const unsigned int want[][2] = {
		{ 0, 1 }, { 1, 1 }, { 2, 1 }, { 3, 1 },
		{ 4, 1 }, { 5, 1 }, { 6, 1 }, { 7, 1 },
	};
	struct mr_batch *b = mr_new_batch(test);
	int i;

	for (i = 0; i < 8; i++)
		mr_set(b, i, MR_ANON(i & 1), 1000 + i);
	mr_expect_runs(test, b, 8, want, ARRAY_SIZE(want));
	/* a reversed move_pages() array */
	for (i = 0; i < 8; i++)
		mr_set(b, i, MR_ANON(0), 100 - i);
	mr_expect_runs(test, b, 8, want, ARRAY_SIZE(want));
}

/* The same two VMAs' folios grouped by anon_vma, as a sorted batch has them. */
static void mr_runs_grouped(struct kunit *test)
{
	const unsigned int want[][2] = { { 0, 4 }, { 4, 4 } };
	struct mr_batch *b = mr_new_batch(test);
	int i;

	for (i = 0; i < 4; i++) {
		mr_set(b, i, MR_ANON(0), 2 * i);
		mr_set(b, 4 + i, MR_ANON(1), 2 * i + 1);
	}
	mr_expect_runs(test, b, 8, want, ARRAY_SIZE(want));
}

/*
 * A folio the batch does not defer (unmapped by then, or ROCM's) ends
 * the run even where its neighbours would join, and is in none.
 */
static void mr_runs_kept(struct kunit *test)
{
	const unsigned int mid[][2] = { { 0, 3 }, { 4, 4 } };
	const unsigned int ends[][2] = { { 1, 6 } };
	struct mr_batch *b = mr_new_batch(test);
	int i;

	for (i = 0; i < 8; i++)
		mr_set(b, i, MR_ANON(0), 1000 + i);
	__set_bit(3, b->kept);
	mr_expect_runs(test, b, 8, mid, ARRAY_SIZE(mid));
	bitmap_zero(b->kept, MR_NR);
	__set_bit(0, b->kept);
	__set_bit(7, b->kept);
	mr_expect_runs(test, b, 8, ends, ARRAY_SIZE(ends));
	/* none deferred: no run */
	bitmap_fill(b->kept, MR_NR);
	mr_expect_runs(test, b, 8, NULL, 0);
}

static void mr_put_folio(void *data)
{
	struct folio *folio = data;

	folio->mapping = NULL;
	folio_put(folio);
}

static struct folio *mr_folio(struct kunit *test, unsigned int order)
{
	struct folio *folio = folio_alloc(GFP_KERNEL, order);

	KUNIT_ASSERT_NOT_NULL(test, folio);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, mr_put_folio, folio));
	return folio;
}

static void mr_defer(struct kunit *test)
{
	struct folio *small = mr_folio(test, 0), *large = mr_folio(test, 2);

	small->mapping = (struct address_space *)MR_ANON(0);
	KUNIT_EXPECT_TRUE(test, __migrate_range_defer(small));
	/* KSM: a stable node, not an anon_vma (without KSM: no such folio) */
	if (IS_ENABLED(CONFIG_KSM)) {
		small->mapping = (struct address_space *)
				 ((unsigned long)&mr_objs[0] | FOLIO_MAPPING_KSM);
		KUNIT_EXPECT_FALSE(test, __migrate_range_defer(small));
	}
	/* page cache */
	small->mapping = (struct address_space *)&mr_objs[0];
	KUNIT_EXPECT_FALSE(test, __migrate_range_defer(small));
	/* large anon folios keep their own path */
	large->mapping = (struct address_space *)MR_ANON(0);
	KUNIT_EXPECT_FALSE(test, __migrate_range_defer(large));
}

static struct kunit_case migrate_range_cases[] = {
	KUNIT_CASE(mr_joins),
	KUNIT_CASE(mr_runs_full),
	KUNIT_CASE(mr_runs_apart),
	KUNIT_CASE(mr_runs_grouped),
	KUNIT_CASE(mr_runs_kept),
	KUNIT_CASE(mr_defer),
	{}
};

static struct kunit_suite migrate_range_suite = {
	.name = "migrate_range",
	.test_cases = migrate_range_cases,
};

kunit_test_suite(migrate_range_suite);
