/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address-ordered migration batches.  See mm/migrate_order.c.
 */
#ifndef _LINUX_MIGRATE_ORDER_H
#define _LINUX_MIGRATE_ORDER_H

#include <linux/jump_label.h>
#include <linux/list.h>
#include <linux/types.h>

struct folio;

/* Where a folio sorts in a batch: by mapping, then offset, then PFN. */
struct migrate_order_key {
	unsigned long mapping;	/* folio->mapping with its flag bits */
	unsigned long index;	/* offset in it; 0 for KSM and movable_ops */
	unsigned long pfn;
};

#ifdef CONFIG_MIGRATE_ORDER
DECLARE_STATIC_KEY_TRUE(migrate_order_key);

void migrate_order_key_of(struct folio *folio,
			  struct migrate_order_key *key);
int migrate_order_cmp_keys(const struct migrate_order_key *a,
			   const struct migrate_order_key *b);
bool migrate_order_list_ordered(struct list_head *folios);
void __migrate_order_batch(struct list_head *folios);

/*
 * Put the folios that migrate_pages() was given in address order before
 * it cuts them into batches, unless they already are.
 */
static inline void migrate_order_batch(struct list_head *folios)
{
	if (static_branch_likely(&migrate_order_key))
		__migrate_order_batch(folios);
}
#else
static inline void migrate_order_batch(struct list_head *folios)
{
}
#endif

#endif /* _LINUX_MIGRATE_ORDER_H */
