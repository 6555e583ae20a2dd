/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What mm/node_private.c needs from the page allocator, spelled for
 * Linux 7.3: the private zonelists are chosen by an alloc flag
 * (ALLOC_PRIVATE), and mempolicy's allocations are frozen pages.
 * The 6.12 backport's copy of this header spells the same for 6.12.
 */
#ifndef _MM_NODE_PRIVATE_COMPAT_H
#define _MM_NODE_PRIVATE_COMPAT_H

#include <linux/memory-tiers.h>

#include "internal.h"
#include "page_alloc.h"

/* What the KUnit suite marks a test folio anonymous with. */
#define NODE_PRIVATE_MAPPING_ANON	FOLIO_MAPPING_ANON

/* A page with its reference, from list @zlsel of node @nid. */
static inline struct page *node_private_alloc_pages(gfp_t gfp,
						    unsigned int order,
						    int nid,
						    nodemask_t *nodemask,
						    enum alloc_zonelist zlsel)
{
	return __alloc_pages_noprof(gfp, order, nid, nodemask,
				    alloc_zonelist_flags(zlsel));
}

/* What alloc_pages_mpol() hands back: a frozen page on 7.3. */
static inline struct page *node_private_alloc_mpol(gfp_t gfp,
						   unsigned int order,
						   int nid,
						   nodemask_t *nodemask,
						   enum alloc_zonelist zlsel)
{
	return __alloc_frozen_pages_noprof(gfp, order, nid, nodemask,
					   alloc_zonelist_flags(zlsel));
}

/* Where reclaim on @src demotes to, as demote_folio_list() picks it. */
static inline int node_private_demotion_target(int src)
{
	nodemask_t allowed;

	node_get_allowed_targets(NODE_DATA(src), &allowed);
	return next_demotion_node(src, &allowed);
}

/*
 * Memory hotplug keeps a private node out of N_MEMORY itself on 7.3
 * (online_pages(), offline_pages()): nothing to adjust in a notifier.
 */

#endif /* _MM_NODE_PRIVATE_COMPAT_H */
