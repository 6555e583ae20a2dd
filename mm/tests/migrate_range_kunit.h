/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for range-batched migration unmap (mm/migrate_range.c):
 * which folios may share a run, and which folios are left mapped for
 * one.  Included from mm/migrate_range.c.
 */
#include <kunit/test.h>
#include <linux/gfp.h>

/* Stand-ins for two anon_vmas: only their addresses are used. */
static unsigned long mr_objs[2] __aligned(8);
#define MR_ANON(i)	((unsigned long)&mr_objs[i] | PAGE_MAPPING_ANON)

/* Split @n keys into runs as migrate_range_batch() does; count them. */
static int mr_count_runs(const unsigned long *mapping, const pgoff_t *index,
			 int n)
{
	unsigned int nr = 0;
	int i, first = 0, runs = 0;

	for (i = 0; i < n; i++) {
		if (nr && migrate_range_key_joins(mapping[first], index[first],
						  index[i - 1], nr, mapping[i],
						  index[i])) {
			nr++;
			continue;
		}
		runs++;
		first = i;
		nr = 1;
	}
	return runs;
}

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

static void mr_runs(struct kunit *test)
{
	unsigned long a = MR_ANON(0), b = MR_ANON(1);
	/* off the stack: 3 KiB there is over the frame-size warning */
	unsigned long *map = kunit_kcalloc(test, 200, sizeof(*map), GFP_KERNEL);
	pgoff_t *idx = kunit_kcalloc(test, 200, sizeof(*idx), GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, map);
	KUNIT_ASSERT_NOT_NULL(test, idx);

	/* 200 consecutive pages: runs of 64, 64, 64, 8 */
	for (i = 0; i < 200; i++) {
		map[i] = a;
		idx[i] = 1000 + i;
	}
	KUNIT_EXPECT_EQ(test, mr_count_runs(map, idx, 200), 4);
	/* two VMAs' folios interleaved: every folio a run of its own */
	for (i = 0; i < 8; i++)
		map[i] = i & 1 ? b : a;
	KUNIT_EXPECT_EQ(test, mr_count_runs(map, idx, 8), 8);
	/* the same, grouped by anon_vma as a sorted batch has them */
	for (i = 0; i < 8; i++) {
		map[i] = i < 4 ? a : b;
		idx[i] = i < 4 ? 2 * i : 2 * (i - 4) + 1;
	}
	KUNIT_EXPECT_EQ(test, mr_count_runs(map, idx, 8), 2);
	/* descending offsets (a reversed move_pages() array) never join */
	for (i = 0; i < 8; i++) {
		map[i] = a;
		idx[i] = 100 - i;
	}
	KUNIT_EXPECT_EQ(test, mr_count_runs(map, idx, 8), 8);
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
				 ((unsigned long)&mr_objs[0] | PAGE_MAPPING_KSM);
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
	KUNIT_CASE(mr_runs),
	KUNIT_CASE(mr_defer),
	{}
};

static struct kunit_suite migrate_range_suite = {
	.name = "migrate_range",
	.test_cases = migrate_range_cases,
};

kunit_test_suite(migrate_range_suite);
