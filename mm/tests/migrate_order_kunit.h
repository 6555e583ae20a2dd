/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for address-ordered migration batches (mm/migrate_order.c):
 * the key, the comparator, the already-ordered check and the sort, on
 * lists of order-0 test folios whose ->mapping and ->index the test sets
 * (and clears before freeing them).  Included from mm/migrate_order.c.
 */
#include <kunit/test.h>
#include <linux/gfp.h>
#include <linux/sort.h>

#define MO_NR	16

/* Stand-ins for two anon_vmas and a file: only their addresses are used. */
static unsigned long mo_objs[3] __aligned(8);
#define MO_ANON(i)	((unsigned long)&mo_objs[i] | FOLIO_MAPPING_ANON)
#define MO_FILE		((unsigned long)&mo_objs[2])

struct mo_ctx {
	struct folio *f[MO_NR];	/* ascending PFN after mo_init() */
	struct list_head list;
};

static int mo_pfn_cmp(const void *a, const void *b)
{
	unsigned long pa = folio_pfn(*(struct folio * const *)a);
	unsigned long pb = folio_pfn(*(struct folio * const *)b);

	return pa < pb ? -1 : pa > pb;
}

static void mo_exit(void *data)
{
	struct mo_ctx *c = data;
	int i;

	for (i = 0; i < MO_NR; i++) {
		if (!c->f[i])
			continue;
		c->f[i]->mapping = NULL;
		c->f[i]->index = 0;
		folio_put(c->f[i]);
	}
}

static struct mo_ctx *mo_init(struct kunit *test)
{
	struct mo_ctx *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, c);
	for (i = 0; i < MO_NR; i++) {
		c->f[i] = folio_alloc(GFP_KERNEL, 0);
		if (!c->f[i])
			break;
	}
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, mo_exit, c));
	KUNIT_ASSERT_EQ(test, i, MO_NR);
	sort(c->f, MO_NR, sizeof(c->f[0]), mo_pfn_cmp, NULL);
	INIT_LIST_HEAD(&c->list);
	return c;
}

static void mo_set(struct folio *f, unsigned long mapping, unsigned long index)
{
	f->mapping = (struct address_space *)mapping;
	f->index = index;
}

/* Put test folio @idx[k] k-th on the list. */
static void mo_list(struct mo_ctx *c, const int *idx, int n)
{
	int k;

	INIT_LIST_HEAD(&c->list);
	for (k = 0; k < n; k++)
		list_add_tail(&c->f[idx[k]]->lru, &c->list);
}

static void mo_key(struct kunit *test)
{
	struct mo_ctx *c = mo_init(test);
	struct migrate_order_key k;

	mo_set(c->f[0], MO_ANON(0), 42);
	migrate_order_key_of(c->f[0], &k);
	KUNIT_EXPECT_EQ(test, k.mapping, MO_ANON(0));
	KUNIT_EXPECT_EQ(test, k.index, 42UL);
	KUNIT_EXPECT_EQ(test, k.pfn, folio_pfn(c->f[0]));

	mo_set(c->f[1], MO_FILE, 7);
	migrate_order_key_of(c->f[1], &k);
	KUNIT_EXPECT_EQ(test, k.mapping, MO_FILE);
	KUNIT_EXPECT_EQ(test, k.index, 7UL);

	/* KSM and movable_ops: ->index is no offset, PFN decides */
	mo_set(c->f[2], (unsigned long)&mo_objs[0] | FOLIO_MAPPING_KSM, 9);
	migrate_order_key_of(c->f[2], &k);
	KUNIT_EXPECT_EQ(test, k.index, 0UL);
	/*
	 * The KSM bit alone (movable_ops pages' mark on 6.12).  Not on
	 * a live page: compaction on 6.12 would take a page marked
	 * so for a movable_ops one and call its isolate_page().
	 */
	order_key_set(&k, (unsigned long)&mo_objs[0] | FOLIO_MAPPING_ANON_KSM,
		      9, 5);
	KUNIT_EXPECT_EQ(test, k.index, 0UL);
	KUNIT_EXPECT_EQ(test, k.pfn, 5UL);
}

static void mo_cmp(struct kunit *test)
{
	struct migrate_order_key a = { .mapping = 0x1000, .index = 5, .pfn = 9 };
	struct migrate_order_key b = a;

	KUNIT_EXPECT_EQ(test, migrate_order_cmp_keys(&a, &b), 0);
	b.pfn = 10;		/* PFN breaks a tie */
	KUNIT_EXPECT_LT(test, migrate_order_cmp_keys(&a, &b), 0);
	KUNIT_EXPECT_GT(test, migrate_order_cmp_keys(&b, &a), 0);
	b.index = 4;		/* offset before PFN */
	KUNIT_EXPECT_GT(test, migrate_order_cmp_keys(&a, &b), 0);
	b.mapping = 0x2000;	/* mapping before offset */
	KUNIT_EXPECT_LT(test, migrate_order_cmp_keys(&a, &b), 0);
	KUNIT_EXPECT_GT(test, migrate_order_cmp_keys(&b, &a), 0);
	/* no overflow from subtraction */
	a.mapping = ULONG_MAX;
	b.mapping = 1;
	KUNIT_EXPECT_GT(test, migrate_order_cmp_keys(&a, &b), 0);
}

static void mo_ordered(struct kunit *test)
{
	static const int walk[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const int mixed[] = { 3, 0, 2, 1 };
	struct mo_ctx *c = mo_init(test);
	int i;

	KUNIT_EXPECT_TRUE(test, migrate_order_list_ordered(&c->list));
	mo_list(c, walk, 1);
	KUNIT_EXPECT_TRUE(test, migrate_order_list_ordered(&c->list));

	/* a page-table walk: offsets ascend, PFNs descend */
	for (i = 0; i < 8; i++)
		mo_set(c->f[7 - i], MO_ANON(0), 10 + i);
	mo_list(c, (const int[]){ 7, 6, 5, 4, 3, 2, 1, 0 }, 8);
	KUNIT_EXPECT_TRUE(test, migrate_order_list_ordered(&c->list));

	/* two VMAs with their own anon_vma, in walk order */
	mo_set(c->f[7], MO_ANON(1), 0);
	mo_set(c->f[6], MO_ANON(1), 1);
	KUNIT_EXPECT_TRUE(test, migrate_order_list_ordered(&c->list));

	/* a shuffled move_pages() array: offsets and PFNs both out of order */
	for (i = 0; i < 4; i++)
		mo_set(c->f[i], MO_ANON(0), i);
	mo_list(c, mixed, 4);
	KUNIT_EXPECT_FALSE(test, migrate_order_list_ordered(&c->list));

	/* a PFN scan: offsets out of order, PFNs ascend */
	mo_list(c, walk, 4);
	for (i = 0; i < 4; i++)
		mo_set(c->f[i], MO_ANON(0), mixed[i]);
	KUNIT_EXPECT_TRUE(test, migrate_order_list_ordered(&c->list));
	/* compaction and offline list_add() theirs: PFNs descend */
	mo_list(c, (const int[]){ 3, 2, 1, 0 }, 4);
	KUNIT_EXPECT_TRUE(test, migrate_order_list_ordered(&c->list));
	/* but not PFNs that turn back */
	mo_list(c, (const int[]){ 3, 2, 0, 1 }, 4);
	KUNIT_EXPECT_FALSE(test, migrate_order_list_ordered(&c->list));
}

/* After the sort: a permutation of the input, in key order. */
static void mo_check_sorted(struct kunit *test, struct mo_ctx *c, int n)
{
	struct migrate_order_key prev, cur;
	bool seen[MO_NR] = { };
	struct folio *folio;
	int i, count = 0;

	list_for_each_entry(folio, &c->list, lru) {
		migrate_order_key_of(folio, &cur);
		if (count++)
			KUNIT_EXPECT_LE(test, migrate_order_cmp_keys(&prev, &cur), 0);
		prev = cur;
		for (i = 0; i < n; i++)
			if (c->f[i] == folio)
				seen[i] = true;
	}
	KUNIT_EXPECT_EQ(test, count, n);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_TRUE_MSG(test, seen[i], "folio %d lost", i);
}

static void mo_sort(struct kunit *test)
{
	static const int shuffled[MO_NR] = {
		9, 2, 14, 0, 7, 11, 4, 15, 1, 12, 6, 3, 10, 13, 5, 8,
	};
	struct mo_ctx *c = mo_init(test);
	struct folio *folio;
	int i, prev = -1;

	/* one anon_vma: offsets are the reverse of PFN order */
	for (i = 0; i < MO_NR; i++)
		mo_set(c->f[i], MO_ANON(0), MO_NR - i);
	mo_list(c, shuffled, MO_NR);
	KUNIT_ASSERT_FALSE(test, migrate_order_list_ordered(&c->list));
	__migrate_order_batch(&c->list);
	mo_check_sorted(test, c, MO_NR);
	list_for_each_entry(folio, &c->list, lru) {
		KUNIT_EXPECT_GT(test, (int)folio->index, prev);
		prev = folio->index;
	}

	/* three mappings and KSM-like PFN keys mixed */
	for (i = 0; i < MO_NR; i++)
		mo_set(c->f[i], i % 3 == 2 ? MO_FILE : MO_ANON(i % 3),
		       (i * 7) % MO_NR);
	mo_set(c->f[5], (unsigned long)&mo_objs[1] | FOLIO_MAPPING_KSM, 3);
	mo_list(c, shuffled, MO_NR);
	__migrate_order_batch(&c->list);
	mo_check_sorted(test, c, MO_NR);
	KUNIT_EXPECT_TRUE(test, migrate_order_list_ordered(&c->list));
}

/* A list that passes the check is left exactly as it was. */
static void mo_keep(struct kunit *test)
{
	static const int walk[] = { 4, 5, 6, 7, 0, 1, 2, 3 };
	struct mo_ctx *c = mo_init(test);
	struct folio *folio;
	int i, k = 0;

	for (i = 0; i < 8; i++)
		mo_set(c->f[i], MO_ANON(i / 4), i);
	mo_list(c, walk, 8);
	__migrate_order_batch(&c->list);
	list_for_each_entry(folio, &c->list, lru)
		KUNIT_EXPECT_PTR_EQ(test, folio, c->f[walk[k++]]);
}

static struct kunit_case migrate_order_cases[] = {
	KUNIT_CASE(mo_key),
	KUNIT_CASE(mo_cmp),
	KUNIT_CASE(mo_ordered),
	KUNIT_CASE(mo_sort),
	KUNIT_CASE(mo_keep),
	{}
};

static struct kunit_suite migrate_order_suite = {
	.name = "migrate_order",
	.test_cases = migrate_order_cases,
};

kunit_test_suite(migrate_order_suite);
