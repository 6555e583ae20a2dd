/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private memory NUMA nodes: nodes whose memory the page allocator manages
 * but that no ordinary allocation can reach.  The driver that owns such a
 * node registers a struct node_private and opts mm services back in with
 * capability bits.  See Documentation/mm/numa_private_nodes.rst.
 */
#ifndef _LINUX_NODE_PRIVATE_H
#define _LINUX_NODE_PRIVATE_H

#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/gfp_types.h>
#include <linux/jump_label.h>
#include <linux/nodemask.h>
#include <linux/numa.h>

struct folio;

/*
 * A CAP lets an mm service act on the node's folios.  A POLICY changes how
 * the mm treats folios that live there.  Caps grow from the low bits,
 * policies from the high bits of the same word.
 */
#define NODE_PRIVATE_CAP_RECLAIM	BIT(0)
#define NODE_PRIVATE_CAP_USER_NUMA	BIT(1)
#define NODE_PRIVATE_CAP_HOTUNPLUG	BIT(2)
#define NODE_PRIVATE_CAP_DEMOTION	BIT(3)
#define NODE_PRIVATE_CAP_NUMA_BALANCING	BIT(4)
#define NODE_PRIVATE_CAP_LTPIN		BIT(5)
#define NODE_PRIVATE_POLICY_WRITE_FENCE	BIT(BITS_PER_LONG - 1)

#define NODE_PRIVATE_CAPS_ALL	(NODE_PRIVATE_CAP_RECLAIM |		\
				 NODE_PRIVATE_CAP_USER_NUMA |		\
				 NODE_PRIVATE_CAP_HOTUNPLUG |		\
				 NODE_PRIVATE_CAP_DEMOTION |		\
				 NODE_PRIVATE_CAP_NUMA_BALANCING |	\
				 NODE_PRIVATE_CAP_LTPIN |		\
				 NODE_PRIVATE_POLICY_WRITE_FENCE)

/*
 * The bits this kernel implements.  Registering any other defined bit
 * fails with -EOPNOTSUPP rather than pretending the service is there:
 * demotion needs page migration.
 */
#define NODE_PRIVATE_CAPS_SUPPORTED					\
	(NODE_PRIVATE_CAPS_ALL &					\
	 ~(IS_ENABLED(CONFIG_MIGRATION) ? 0 : NODE_PRIVATE_CAP_DEMOTION))

/**
 * struct node_private - a driver's claim on a private node
 * @owner: the driver's cookie; only compared, never dereferenced
 * @caps: NODE_PRIVATE_CAP_* and NODE_PRIVATE_POLICY_* bits.  Read once, at
 *	node_private_register(); later writes change nothing.
 *
 * Owned by the driver; must stay valid until node_private_unregister()
 * returns.
 */
struct node_private {
	void *owner;
	unsigned long caps;
};

#ifdef CONFIG_NUMA_PRIVATE_NODES

DECLARE_STATIC_KEY_FALSE(node_private_key);
extern nodemask_t node_private_nodes;
extern unsigned long node_private_caps[MAX_NUMNODES];

/* True once any node has ever been registered private. */
static inline bool node_private_enabled(void)
{
	return static_branch_unlikely(&node_private_key);
}

/**
 * node_is_private - is @nid registered as a private node?
 * @nid: a valid node id
 *
 * Return: false on every kernel without private nodes, including !NUMA,
 * where node_state() would claim node 0 has every state.
 */
static inline bool node_is_private(int nid)
{
	return node_private_enabled() && node_isset(nid, node_private_nodes);
}

static inline bool node_private_allows(int nid, unsigned long cap)
{
	if (!node_is_private(nid))
		return true;
	return READ_ONCE(node_private_caps[nid]) & cap;
}

static inline bool node_private_has_policy(int nid, unsigned long policy)
{
	return node_is_private(nid) &&
	       (READ_ONCE(node_private_caps[nid]) & policy);
}

/**
 * node_private_oom_only - can only private nodes serve an allocation?
 * @mask: the nodemask an allocation was bound to (NULL: any node)
 *
 * Return: true when @mask names private nodes and no normal node: an OOM
 * kill of an ordinary task frees nothing the allocation could use.
 */
static inline bool node_private_oom_only(const nodemask_t *mask)
{
	return node_private_enabled() && mask &&
	       nodes_intersects(*mask, node_private_nodes) &&
	       !nodes_intersects(*mask, node_states[N_MEMORY]);
}

int node_private_register(int nid, struct node_private *np);
int node_private_unregister(int nid, struct node_private *np);
int node_private_hold_normal(int nid);
void node_private_release_normal(int nid);
struct folio *folio_alloc_node_private_noprof(gfp_t gfp, unsigned int order,
					      int nid);
#define folio_alloc_node_private(...)					\
	alloc_hooks(folio_alloc_node_private_noprof(__VA_ARGS__))

#else /* !CONFIG_NUMA_PRIVATE_NODES */

static inline bool node_private_enabled(void)
{
	return false;
}

static inline bool node_is_private(int nid)
{
	return false;
}

static inline bool node_private_allows(int nid, unsigned long cap)
{
	return true;
}

static inline bool node_private_has_policy(int nid, unsigned long policy)
{
	return false;
}

static inline bool node_private_oom_only(const nodemask_t *mask)
{
	return false;
}

static inline int node_private_register(int nid, struct node_private *np)
{
	return -EOPNOTSUPP;
}

static inline int node_private_unregister(int nid, struct node_private *np)
{
	return -EOPNOTSUPP;
}

static inline int node_private_hold_normal(int nid)
{
	return 0;
}

static inline void node_private_release_normal(int nid)
{
}

static inline struct folio *folio_alloc_node_private(gfp_t gfp,
						     unsigned int order,
						     int nid)
{
	return NULL;
}

#endif /* CONFIG_NUMA_PRIVATE_NODES */

/*
 * Nodes with memory of either kind, for per-node accounting and reporting
 * loops (numa_maps, memcg per-node stats) that must not skip private
 * memory.  Allocation paths keep iterating N_MEMORY.
 */
#ifdef CONFIG_NUMA_PRIVATE_NODES
static inline int next_node_with_memory(int nid)
{
	do {
		nid = next_online_node(nid);
	} while (nid < MAX_NUMNODES && !node_state(nid, N_MEMORY) &&
		 !node_state(nid, N_MEMORY_PRIVATE));
	return nid;
}

#define for_each_node_with_memory(nid)					\
	for ((nid) = next_node_with_memory(-1); (nid) < MAX_NUMNODES;	\
	     (nid) = next_node_with_memory(nid))

/* Does @nid have memory of either kind (what numa_maps counts)? */
static inline bool node_has_memory(int nid)
{
	return node_state(nid, N_MEMORY) || node_state(nid, N_MEMORY_PRIVATE);
}
#else
#define for_each_node_with_memory(nid)	for_each_node_state(nid, N_MEMORY)
#define node_has_memory(nid)		node_state(nid, N_MEMORY)
#endif

/* Each predicate is true for every node that is not private. */
static inline bool node_allows_reclaim(int nid)
{
	return node_private_allows(nid, NODE_PRIVATE_CAP_RECLAIM);
}

static inline bool node_allows_user_numa(int nid)
{
	return node_private_allows(nid, NODE_PRIVATE_CAP_USER_NUMA);
}

static inline bool node_allows_hotunplug(int nid)
{
	return node_private_allows(nid, NODE_PRIVATE_CAP_HOTUNPLUG);
}

static inline bool node_allows_demotion(int nid)
{
	return node_private_allows(nid, NODE_PRIVATE_CAP_DEMOTION);
}

static inline bool node_allows_numa_balancing(int nid)
{
	return node_private_allows(nid, NODE_PRIVATE_CAP_NUMA_BALANCING);
}

static inline bool node_allows_ltpin(int nid)
{
	return node_private_allows(nid, NODE_PRIVATE_CAP_LTPIN);
}

/* False for every node that is not private. */
static inline bool node_write_fenced(int nid)
{
	return node_private_has_policy(nid, NODE_PRIVATE_POLICY_WRITE_FENCE);
}

/* Macros so that this header needs nothing from mm.h. */
#define folio_is_private_node(folio)	node_is_private(folio_nid(folio))
#define page_is_private_node(page)	node_is_private(page_to_nid(page))
#define zone_is_private(zone)		node_is_private(zone_to_nid(zone))
/* A CPU store must never reach this folio: map it read-only, COW it away. */
#define folio_write_fenced(folio)	node_write_fenced(folio_nid(folio))
#define page_write_fenced(page)		node_write_fenced(page_to_nid(page))

#endif /* _LINUX_NODE_PRIVATE_H */
