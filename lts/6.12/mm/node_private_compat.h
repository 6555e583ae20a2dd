/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What mm/node_private.c needs from the page allocator, spelled for
 * Linux 6.12: the private zonelists are chosen through
 * __alloc_pages_zonelist(), and mempolicy's allocations carry their
 * reference.  The 7.3 copy of this header spells the same for 7.3.
 */
#ifndef _MM_NODE_PRIVATE_COMPAT_H
#define _MM_NODE_PRIVATE_COMPAT_H

#include <linux/memory.h>
#include <linux/memory-tiers.h>

#include "internal.h"

/* What the KUnit suite marks a test folio anonymous with. */
#define NODE_PRIVATE_MAPPING_ANON	PAGE_MAPPING_ANON

/* A page with its reference, from list @zlsel of node @nid. */
static inline struct page *node_private_alloc_pages(gfp_t gfp,
						    unsigned int order,
						    int nid,
						    nodemask_t *nodemask,
						    enum alloc_zonelist zlsel)
{
	return __alloc_pages_zonelist_noprof(gfp, order, nid, nodemask, zlsel);
}

/* What alloc_pages_mpol() hands back: a page with its reference on 6.12. */
static inline struct page *node_private_alloc_mpol(gfp_t gfp,
						   unsigned int order,
						   int nid,
						   nodemask_t *nodemask,
						   enum alloc_zonelist zlsel)
{
	return __alloc_pages_zonelist_noprof(gfp, order, nid, nodemask, zlsel);
}

/* Where reclaim on @src demotes to, as demote_folio_list() picks it. */
static inline int node_private_demotion_target(int src)
{
	return next_demotion_node(src);
}

/*
 * Memory hotplug on 6.12 reports a node's first or last memory through
 * the memory notifier's status_change_nid fields: a private node never
 * changes N_MEMORY or N_NORMAL_MEMORY, so clear them for it.  Only
 * mm/node_private.c includes this header.
 */
void node_private_check_changes(int nid, struct memory_notify *arg)
{
	if (!node_is_private(nid))
		return;
	arg->status_change_nid = NUMA_NO_NODE;
	arg->status_change_nid_normal = NUMA_NO_NODE;
}

#endif /* _MM_NODE_PRIVATE_COMPAT_H */
