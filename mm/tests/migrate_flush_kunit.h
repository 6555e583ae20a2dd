/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for the fallback grouping rule of mm/migrate_flush.c: which
 * folios may share a synchronous fallback batch, and in which mode each
 * folio of such a batch is unmapped, and what becomes of a group's busy
 * folios.  Included from mm/migrate_flush.c.
 */
#include <kunit/test.h>

/* An order-0 anon folio nobody holds: may lead and may follow. */
static const struct migrate_group_facts mg_plain = { .anon = true };

struct mg_case {
	const char *name;
	void (*change)(struct migrate_group_facts *f);
	bool leader;		/* may it lead a group? */
	bool follower;		/* may it join one? */
};

static void mg_none(struct migrate_group_facts *f) { }

static void mg_movable_ops(struct migrate_group_facts *f)
{
	f->movable_ops = true;
}

static void mg_page_cache(struct migrate_group_facts *f)
{
	f->anon = false;	/* its move may wait; its mapping is unpinned */
}

static void mg_large(struct migrate_group_facts *f)
{
	f->large = true;	/* a split would sleep on its lock */
}

static void mg_locked(struct migrate_group_facts *f)
{
	f->locked = true;
}

static void mg_writeback(struct migrate_group_facts *f)
{
	f->writeback = true;
}

static void mg_locked_writeback(struct migrate_group_facts *f)
{
	f->locked = true;
	f->writeback = true;
}

static const struct mg_case mg_cases[] = {
	{ "plain",		mg_none,		true,	true },
	{ "movable_ops",	mg_movable_ops,		false,	false },
	{ "page_cache",		mg_page_cache,		false,	false },
	{ "large",		mg_large,		false,	false },
	/* the leader may sleep for these, a follower may not */
	{ "locked",		mg_locked,		true,	false },
	{ "writeback",		mg_writeback,		true,	false },
	{ "locked_writeback",	mg_locked_writeback,	true,	false },
};

static void mg_test_rule(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(mg_cases); i++) {
		struct migrate_group_facts f = mg_plain;

		mg_cases[i].change(&f);
		KUNIT_EXPECT_EQ_MSG(test, migrate_group_allows(&f, true),
				    mg_cases[i].leader, "%s as leader",
				    mg_cases[i].name);
		KUNIT_EXPECT_EQ_MSG(test, migrate_group_allows(&f, false),
				    mg_cases[i].follower, "%s as follower",
				    mg_cases[i].name);
	}
}

/* Only the first folio locked in a group may wait; a lone folio always. */
static void mg_test_unmap_mode(struct kunit *test)
{
	LIST_HEAD(unmapped);
	struct list_head one;

	KUNIT_EXPECT_EQ(test, migrate_group_unmap_mode(MIGRATE_SYNC, true,
						       &unmapped), MIGRATE_SYNC);
	KUNIT_EXPECT_EQ(test, migrate_group_unmap_mode(MIGRATE_SYNC_LIGHT, true,
						       &unmapped),
			MIGRATE_SYNC_LIGHT);
	list_add(&one, &unmapped);
	KUNIT_EXPECT_EQ(test, migrate_group_unmap_mode(MIGRATE_SYNC, true,
						       &unmapped), MIGRATE_ASYNC);
	KUNIT_EXPECT_EQ(test, migrate_group_unmap_mode(MIGRATE_SYNC, false,
						       &unmapped), MIGRATE_SYNC);
	KUNIT_EXPECT_EQ(test, migrate_group_unmap_mode(MIGRATE_ASYNC, false,
						       &unmapped), MIGRATE_ASYNC);
}

/*
 * Which unmaps queue their flush: an async batch's and a fallback
 * group's, the leader's too; a synchronous folio alone, mapped once
 * (here not at all) and of one page, keeps its precise flush.
 */
static void mg_test_ttu_flags(struct kunit *test)
{
	struct folio *f = folio_alloc(GFP_KERNEL, 0);

	if (!f)
		kunit_skip(test, "no memory for a test folio");
	KUNIT_EXPECT_EQ(test, migrate_unmap_ttu_flags(MIGRATE_ASYNC, f, false),
			TTU_BATCH_FLUSH);
	KUNIT_EXPECT_EQ(test, migrate_unmap_ttu_flags(MIGRATE_SYNC, f, true),
			TTU_BATCH_FLUSH);
	KUNIT_EXPECT_EQ(test, migrate_unmap_ttu_flags(MIGRATE_SYNC_LIGHT, f,
						      true), TTU_BATCH_FLUSH);
	KUNIT_EXPECT_EQ(test, migrate_unmap_ttu_flags(MIGRATE_SYNC, f, false),
			0);
	folio_put(f);
}

/* Stands in for an anon_vma: only its address is used. */
static unsigned long mg_anon_vma __aligned(8);

/* Free test folios @f[0..@n), off any list they are on. */
static void mg_folios_put(struct folio **f, int n)
{
	while (n--) {
		list_del_init(&f[n]->lru);
		f[n]->mapping = NULL;
		folio_put(f[n]);
	}
}

/*
 * @n test folios, on no list, the first @nr_anon marked anon; not on the
 * LRU, so compaction passes them by.  False, with none left, if memory
 * ran out.
 */
static bool mg_folios_get(struct folio **f, int n, int nr_anon)
{
	int i;

	for (i = 0; i < n; i++) {
		f[i] = folio_alloc(GFP_KERNEL, 0);
		if (!f[i]) {
			mg_folios_put(f, i);
			return false;
		}
		INIT_LIST_HEAD(&f[i]->lru);
		if (i < nr_anon)
			f[i]->mapping = (struct address_space *)
				((unsigned long)&mg_anon_vma | FOLIO_MAPPING_ANON);
	}
	return true;
}

/*
 * Real folios marked anon: unlocked ones join, a locked one and a page
 * without the anon mark stay behind.
 */
static void mg_test_group(struct kunit *test)
{
	struct folio *f[5];
	LIST_HEAD(from);
	LIST_HEAD(batch);
	int i, joined;
	bool on;

	if (!mg_folios_get(f, 5, 4))
		kunit_skip(test, "no memory for test folios");
	list_add_tail(&f[0]->lru, &batch);
	for (i = 1; i < 5; i++)
		list_add_tail(&f[i]->lru, &from);
	folio_lock(f[2]);
	on = migrate_defer_flush_enabled();
	joined = migrate_fallback_group(&from, &batch);
	folio_unlock(f[2]);
	if (on) {
		/* f[1] and f[3] joined; locked f[2], page-cache f[4] did not */
		KUNIT_EXPECT_EQ(test, joined, 2);
		KUNIT_EXPECT_PTR_EQ(test, list_first_entry(&from, struct folio, lru),
				    f[2]);
		KUNIT_EXPECT_PTR_EQ(test, list_last_entry(&from, struct folio, lru),
				    f[4]);
		KUNIT_EXPECT_PTR_EQ(test, list_last_entry(&batch, struct folio, lru),
				    f[3]);
	} else {
		KUNIT_EXPECT_EQ(test, joined, 0);
	}
	mg_folios_put(f, 5);
}

static int mg_count(struct list_head *list)
{
	struct list_head *pos;
	int n = 0;

	list_for_each(pos, list)
		n++;
	return n;
}

/*
 * A group's folios left busy wait on the side until @from is empty, their
 * failure taken back; then they come back to @from, and no more groups
 * are formed.  An error returns them to @from at once.  Folios marked
 * anon, as a group's are (migrate_fallback_done() warns on others), stand
 * in: only that mark and their lru links are used.
 */
static void mg_test_done(struct kunit *test)
{
	struct migrate_fallback fb = MIGRATE_FALLBACK_INIT(fb);
	struct folio *f[4];
	LIST_HEAD(from);
	LIST_HEAD(batch);
	int failed = 5;

	if (!mg_folios_get(f, 4, 4))
		kunit_skip(test, "no memory for test folios");
	/* a group of three: two stayed busy, one more failed for good */
	list_add_tail(&f[0]->lru, &batch);
	list_add_tail(&f[1]->lru, &batch);
	list_add_tail(&f[2]->lru, &from);
	fb.grouped = 2;
	KUNIT_EXPECT_EQ(test, migrate_fallback_done(&fb, &from, &batch, 3,
						    &failed), 1);
	KUNIT_EXPECT_EQ(test, failed, 3);
	KUNIT_EXPECT_TRUE(test, list_empty(&batch));
	KUNIT_EXPECT_EQ(test, mg_count(&fb.solo), 2);
	KUNIT_EXPECT_EQ(test, mg_count(&from), 1);
	KUNIT_EXPECT_TRUE(test, fb.grouping);

	/* the last batch, alone, moved: the busy two come back to @from */
	list_move(from.next, &batch);
	list_del_init(&f[2]->lru);
	fb.grouped = 0;
	KUNIT_EXPECT_EQ(test, migrate_fallback_done(&fb, &from, &batch, 0,
						    &failed), 0);
	KUNIT_EXPECT_EQ(test, failed, 3);
	KUNIT_EXPECT_EQ(test, mg_count(&from), 2);
	KUNIT_EXPECT_PTR_EQ(test, list_first_entry(&from, struct folio, lru),
			    f[0]);
	KUNIT_EXPECT_TRUE(test, list_empty(&fb.solo));
	KUNIT_EXPECT_FALSE(test, fb.grouping);

	/* an error: the side list goes back to @from, untried */
	fb = (struct migrate_fallback)MIGRATE_FALLBACK_INIT(fb);
	list_move_tail(&f[0]->lru, &fb.solo);
	list_move_tail(&f[1]->lru, &batch);
	list_add_tail(&f[3]->lru, &from);
	fb.grouped = 1;
	KUNIT_EXPECT_EQ(test, migrate_fallback_done(&fb, &from, &batch,
						    -ENOMEM, &failed), -ENOMEM);
	KUNIT_EXPECT_EQ(test, failed, 3);
	KUNIT_EXPECT_EQ(test, mg_count(&from), 2);
	KUNIT_EXPECT_EQ(test, mg_count(&batch), 1);
	KUNIT_EXPECT_TRUE(test, fb.grouping);

	mg_folios_put(f, 4);
}

static struct kunit_case migrate_flush_cases[] = {
	KUNIT_CASE(mg_test_rule),
	KUNIT_CASE(mg_test_unmap_mode),
	KUNIT_CASE(mg_test_ttu_flags),
	KUNIT_CASE(mg_test_group),
	KUNIT_CASE(mg_test_done),
	{}
};

static struct kunit_suite migrate_flush_suite = {
	.name = "migrate_flush",
	.test_cases = migrate_flush_cases,
};

kunit_test_suite(migrate_flush_suite);
