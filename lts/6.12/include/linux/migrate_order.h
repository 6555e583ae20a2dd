/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Address-ordered migration batches.  See mm/migrate_order.c.
 */
#ifndef _LINUX_MIGRATE_ORDER_H
#define _LINUX_MIGRATE_ORDER_H

#include <linux/jump_label.h>
#include <linux/list.h>
#include <linux/page-flags.h>

/*
 * 6.12 names the flag bits of ->mapping PAGE_MAPPING_*, with movable_ops
 * pages marked by the bit that KSM shares; mm/migrate_order.c uses the
 * names upstream gave them when movable_ops pages stopped using ->mapping.
 */
#define FOLIO_MAPPING_ANON	PAGE_MAPPING_ANON
#define FOLIO_MAPPING_ANON_KSM	PAGE_MAPPING_MOVABLE
#define FOLIO_MAPPING_KSM	PAGE_MAPPING_KSM

#ifdef CONFIG_MIGRATE_ORDER
DECLARE_STATIC_KEY_FALSE(migrate_order_enabled);

void __migrate_order_batch(struct list_head *folios);

/*
 * Put a batch that migrate_pages() cut from its list (at most
 * NR_MAX_BATCHED_MIGRATION pages) in address order, unless it already
 * has an order worth keeping.
 */
static inline void migrate_order_batch(struct list_head *folios)
{
	if (static_branch_unlikely(&migrate_order_enabled))
		__migrate_order_batch(folios);
}
#else
static inline void migrate_order_batch(struct list_head *folios)
{
}
#endif

#endif /* _LINUX_MIGRATE_ORDER_H */
