// SPDX-License-Identifier: GPL-2.0
/*
 * Address-ordered migration batches.
 *
 * migrate_pages() unmaps, copies and remaps its folios in list order, in
 * batches of at most NR_MAX_BATCHED_MIGRATION pages.
 * move_pages(2) builds that list in the order of the caller's address
 * array and demotion in LRU order, so consecutive folios may belong to
 * unrelated mappings and page tables: each rmap walk takes a different
 * anon_vma or i_mmap lock and a cold page-table page.  Sorting each batch
 * by (mapping, offset, PFN) keeps the folios of one anon_vma or file
 * together in offset order, which for a VMA is address order, so
 * consecutive walks reuse the same locks, interval-tree nodes and PTE
 * table.  This is also the order a later range-batched unmap needs.  Only
 * the batch is sorted, never the whole list, so the work per step stays
 * bounded however long the list is.
 *
 * Batches that already have an order worth keeping are left alone after
 * one pass: the page-table walks of mbind(2) and migrate_pages(2) (each
 * mapping's folios in offset order, mappings interleaved as VMAs come),
 * and the PFN-ordered lists of compaction, memory offline and DAMON
 * (which they build with list_add(), so PFNs descend).  list_sort() is a
 * stable merge sort that needs no memory.
 *
 * The keys are read without locks from isolated folios that migrate_pages()
 * holds references on; a folio whose mapping changes under us merely sorts
 * elsewhere.  vm.migrate_address_order (a static key) switches the sorting
 * on.  It is 0 by default: what sorting buys is cache and TLB locality,
 * which only real hardware can show, while its cost is measurable on an
 * emulator (1% of the instructions of a shuffled move_pages(2), see
 * Documentation/mm/migrate_order.rst).
 */

#include <linux/debugfs.h>
#include <linux/init.h>
#include <linux/list_sort.h>
#include <linux/migrate_order.h>
#include <linux/mm.h>
#include <linux/seq_file.h>
#include <linux/sysctl.h>

DEFINE_STATIC_KEY_FALSE(migrate_order_enabled);

static atomic_long_t migrate_order_sorted, migrate_order_kept;

/* Where a folio sorts in a batch: by mapping, then offset, then PFN. */
struct migrate_order_key {
	unsigned long mapping;	/* folio->mapping with its flag bits */
	unsigned long index;	/* offset in it; 0 for KSM (6.12: movable_ops) */
	unsigned long pfn;
};

static void order_key_set(struct migrate_order_key *key, unsigned long mapping,
			  unsigned long index, unsigned long pfn)
{
	key->mapping = mapping;
	/* ->index is an offset only in a file or an anon_vma */
	key->index = mapping & FOLIO_MAPPING_ANON_KSM ? 0 : index;
	key->pfn = pfn;
}

static void migrate_order_key_of(struct folio *folio,
				 struct migrate_order_key *key)
{
	order_key_set(key, (unsigned long)READ_ONCE(folio->mapping),
		      READ_ONCE(folio->index), folio_pfn(folio));
}

static int cmp_ulong(unsigned long a, unsigned long b)
{
	return a < b ? -1 : a > b;
}

static int migrate_order_cmp_keys(const struct migrate_order_key *a,
				  const struct migrate_order_key *b)
{
	if (a->mapping != b->mapping)
		return cmp_ulong(a->mapping, b->mapping);
	if (a->index != b->index)
		return cmp_ulong(a->index, b->index);
	return cmp_ulong(a->pfn, b->pfn);
}

static int migrate_order_cmp(void *priv, const struct list_head *a,
			     const struct list_head *b)
{
	struct migrate_order_key ka, kb;

	migrate_order_key_of(list_entry(a, struct folio, lru), &ka);
	migrate_order_key_of(list_entry(b, struct folio, lru), &kb);
	return migrate_order_cmp_keys(&ka, &kb);
}

/*
 * Is @folios in an order worth keeping?  Yes if wherever two folios of
 * one mapping are neighbours they are in key order (a page-table walk),
 * or if PFNs strictly ascend or strictly descend (a physical scan).  One
 * pass, no memory.  The check is cheap rather than exact: neighbours of
 * different mappings are never compared, so mappings interleaved folio by
 * folio pass whatever their offsets.
 */
static bool migrate_order_list_ordered(struct list_head *folios)
{
	bool grouped = true, pfn_up = true, pfn_down = true;
	struct migrate_order_key prev, cur;
	struct folio *folio;
	bool first = true;

	list_for_each_entry(folio, folios, lru) {
		migrate_order_key_of(folio, &cur);
		if (!first) {
			if (cur.mapping == prev.mapping &&
			    migrate_order_cmp_keys(&prev, &cur) > 0)
				grouped = false;
			if (cur.pfn <= prev.pfn)
				pfn_up = false;
			if (cur.pfn >= prev.pfn)
				pfn_down = false;
			if (!grouped && !pfn_up && !pfn_down)
				return false;
		}
		prev = cur;
		first = false;
	}
	return true;
}

void __migrate_order_batch(struct list_head *folios)
{
	if (list_empty(folios) || list_is_singular(folios))
		return;
	if (migrate_order_list_ordered(folios)) {
		atomic_long_inc(&migrate_order_kept);
		return;
	}
	list_sort(NULL, folios, migrate_order_cmp);
	atomic_long_inc(&migrate_order_sorted);
}

#ifdef CONFIG_SYSCTL
static const struct ctl_table migrate_order_sysctls[] = {
	{
		.procname	= "migrate_address_order",
		.data		= &migrate_order_enabled.key,
		.mode		= 0644,
		.proc_handler	= proc_do_static_key,
	},
};
#endif

/* debugfs migrate_order/stats: batches sorted and batches kept as they came */
static int migrate_order_stats_show(struct seq_file *m, void *v)
{
	seq_printf(m, "sorted %ld\nkept %ld\n",
		   atomic_long_read(&migrate_order_sorted),
		   atomic_long_read(&migrate_order_kept));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(migrate_order_stats);

static int __init migrate_order_init(void)
{
	struct dentry *dir;

#ifdef CONFIG_SYSCTL
	register_sysctl_init("vm", migrate_order_sysctls);
#endif
	dir = debugfs_create_dir("migrate_order", NULL);
	debugfs_create_file("stats", 0400, dir, NULL,
			    &migrate_order_stats_fops);
	return 0;
}
late_initcall(migrate_order_init);

#ifdef CONFIG_MIGRATE_ORDER_KUNIT_TEST
#include "tests/migrate_order_kunit.h"
#endif
