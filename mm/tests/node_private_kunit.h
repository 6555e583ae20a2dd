/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for private memory NUMA nodes: zonelist construction on
 * synthetic topologies and on the running kernel, the zonelist selector,
 * the capability predicates and the registration rules.
 *
 * Included at the end of mm/node_private.c.
 */
#include <kunit/test.h>

/* Synthetic 6-node topology: 0,1 normal; 2,3 private; 4 memoryless, 5 far. */
static const int npk_dist[6][6] = {
	{ 10, 20, 15, 30, 20, 40 },
	{ 20, 10, 30, 15, 20, 40 },
	{ 15, 30, 10, 30, 20, 40 },
	{ 30, 15, 30, 10, 20, 40 },
	{ 20, 20, 20, 20, 10, 40 },
	{ 40, 40, 40, 40, 40, 10 },
};

static int npk_distance(int a, int b)
{
	return npk_dist[a][b];
}

static void npk_masks(nodemask_t *memory, nodemask_t *private)
{
	nodes_clear(*memory);
	nodes_clear(*private);
	node_set(0, *memory);
	node_set(1, *memory);
	node_set(5, *memory);
	node_set(2, *private);
	node_set(3, *private);
}

static void npk_expect_order(struct kunit *test, int local, bool nofallback,
			     const int *want, int nr_want)
{
	nodemask_t memory, private;
	int order[MAX_NUMNODES];
	int nr, i;

	npk_masks(&memory, &private);
	nr = node_private_order(local, nofallback, &memory, &private,
				npk_distance, order);
	KUNIT_ASSERT_EQ_MSG(test, nr, nr_want, "node %d nofallback %d",
			    local, nofallback);
	for (i = 0; i < nr; i++)
		KUNIT_EXPECT_EQ_MSG(test, order[i], want[i],
				    "node %d slot %d", local, i);
}

static void npk_order_private_node(struct kunit *test)
{
	/* Itself, then normal nodes by distance; never the other private node. */
	npk_expect_order(test, 2, false, (const int[]){ 2, 0, 1, 5 }, 4);
	npk_expect_order(test, 3, false, (const int[]){ 3, 1, 0, 5 }, 4);
	npk_expect_order(test, 2, true, (const int[]){ 2 }, 1);
	npk_expect_order(test, 3, true, (const int[]){ 3 }, 1);
}

static void npk_order_normal_node(struct kunit *test)
{
	npk_expect_order(test, 0, false, (const int[]){ 0, 1, 5 }, 3);
	npk_expect_order(test, 1, false, (const int[]){ 1, 0, 5 }, 3);
	npk_expect_order(test, 0, true, (const int[]){ 0 }, 1);
}

static void npk_order_memoryless_node(struct kunit *test)
{
	/* Ties (0 and 1 at 20) go to the lower id. */
	npk_expect_order(test, 4, false, (const int[]){ 0, 1, 5 }, 3);
	npk_expect_order(test, 4, true, NULL, 0);
}

/* Property check over every node of the synthetic topology. */
static void npk_order_properties(struct kunit *test)
{
	nodemask_t memory, private, seen;
	int order[MAX_NUMNODES];
	int local, nr, i;

	npk_masks(&memory, &private);
	for (local = 0; local < 6; local++) {
		nr = node_private_order(local, false, &memory, &private,
					npk_distance, order);
		nodes_clear(seen);
		for (i = 0; i < nr; i++) {
			KUNIT_EXPECT_FALSE(test, node_isset(order[i], seen));
			node_set(order[i], seen);
			if (node_isset(order[i], private))
				KUNIT_EXPECT_EQ(test, order[i], local);
			if (i > 1)
				KUNIT_EXPECT_LE(test, npk_distance(local, order[i - 1]),
						npk_distance(local, order[i]));
		}
		/* The private list also holds every normal node. */
		KUNIT_EXPECT_TRUE(test, nodes_subset(memory, seen));
	}
}

static void npk_selector(struct kunit *test)
{
	struct zonelist *base = NODE_DATA(0)->node_zonelists;
	gfp_t thisnode = GFP_KERNEL | __GFP_THISNODE;
	struct zonelist *zl;

	zl = node_zonelist_sel(0, GFP_KERNEL, ALLOC_ZONELIST_DEFAULT);
	KUNIT_EXPECT_PTR_EQ(test, zl, base + ZONELIST_FALLBACK);
	zl = node_zonelist_sel(0, thisnode, ALLOC_ZONELIST_DEFAULT);
	KUNIT_EXPECT_PTR_EQ(test, zl, base + ZONELIST_NOFALLBACK);
	zl = node_zonelist_sel(0, GFP_KERNEL, ALLOC_ZONELIST_PRIVATE);
	KUNIT_EXPECT_PTR_EQ(test, zl, base + ZONELIST_PRIVATE);
	zl = node_zonelist_sel(0, thisnode, ALLOC_ZONELIST_PRIVATE);
	KUNIT_EXPECT_PTR_EQ(test, zl, base + ZONELIST_PRIVATE_NOFALLBACK);
}

/* The live zonelists of this kernel, every online node and list type. */
static void npk_live_zonelists(struct kunit *test)
{
	int nid, list;

	for_each_online_node(nid) {
		for (list = 0; list < MAX_ZONELISTS; list++) {
			struct zonelist *zl = &NODE_DATA(nid)->node_zonelists[list];
			bool private_list = list == ZONELIST_PRIVATE ||
					    list == ZONELIST_PRIVATE_NOFALLBACK;
			nodemask_t seen = NODE_MASK_NONE;
			struct zoneref *z;

			for (z = zl->_zonerefs; zonelist_zone(z); z++) {
				int n = zonelist_node_idx(z);

				node_set(n, seen);
				if (!node_is_private(n))
					continue;
				KUNIT_EXPECT_TRUE_MSG(test, private_list,
					"node %d list %d holds private node %d",
					nid, list, n);
				KUNIT_EXPECT_EQ(test, n, nid);
			}
			if (list == ZONELIST_PRIVATE)
				KUNIT_EXPECT_TRUE_MSG(test,
					nodes_subset(node_states[N_MEMORY], seen),
					"node %d private list lacks a normal node",
					nid);
		}
	}
}

static void npk_check_caps(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0, 0), 0);
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_CAP_USER_NUMA | NODE_PRIVATE_CAP_HOTUNPLUG |
			NODE_PRIVATE_CAP_LTPIN), 0);
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_CAP_RECLAIM), 0);
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_CAP_NUMA_BALANCING), 0);
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_CAPS_SUPPORTED & ~NODE_PRIVATE_CAP_LTPIN), 0);
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0, BIT(20)), -EINVAL);
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_CAP_DEMOTION), -EINVAL);
	/* Demotion needs RECLAIM to drain and HOTUNPLUG to give back. */
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_CAP_DEMOTION | NODE_PRIVATE_CAP_RECLAIM),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_CAP_DEMOTION | NODE_PRIVATE_CAP_HOTUNPLUG),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_CAP_DEMOTION | NODE_PRIVATE_CAP_RECLAIM |
			NODE_PRIVATE_CAP_HOTUNPLUG),
			IS_ENABLED(CONFIG_MIGRATION) ? 0 : -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_POLICY_WRITE_FENCE), 0);
	/* The seed's set: everything but LTPIN, and the fence. */
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_CAPS_SUPPORTED & ~NODE_PRIVATE_CAP_LTPIN), 0);
	/* A COW-promote would split a pinned page from its mapping. */
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_POLICY_WRITE_FENCE |
			NODE_PRIVATE_CAP_LTPIN), -EINVAL);
	KUNIT_EXPECT_EQ(test, node_private_check_caps(0,
			NODE_PRIVATE_CAPS_ALL), -EINVAL);
}

static void npk_memtier_caps(struct kunit *test)
{
	const unsigned long dr = NODE_PRIVATE_CAP_DEMOTION |
				 NODE_PRIVATE_CAP_RECLAIM;

	KUNIT_EXPECT_TRUE(test, node_private_caps_memtier(dr, true));
	KUNIT_EXPECT_TRUE(test, node_private_caps_memtier(dr |
			NODE_PRIVATE_POLICY_WRITE_FENCE, true));
	KUNIT_EXPECT_FALSE(test, node_private_caps_memtier(dr, false));
	KUNIT_EXPECT_FALSE(test, node_private_caps_memtier(
			NODE_PRIVATE_CAPS_ALL & ~NODE_PRIVATE_CAP_DEMOTION, true));
	KUNIT_EXPECT_FALSE(test, node_private_caps_memtier(0, true));
}

static void npk_fence_verdict(struct kunit *test)
{
	/* Quiet windows, and noise below the floor, leave the node open. */
	KUNIT_EXPECT_FALSE(test, node_fence_verdict(0, 0));
	KUNIT_EXPECT_FALSE(test, node_fence_verdict(0, 31));
	KUNIT_EXPECT_FALSE(test, node_fence_verdict(100, 31));
	/* Up to three quarters of the demoted pages may be written back. */
	KUNIT_EXPECT_FALSE(test, node_fence_verdict(1000, 250));
	KUNIT_EXPECT_FALSE(test, node_fence_verdict(1000, 750));
	KUNIT_EXPECT_TRUE(test, node_fence_verdict(1000, 751));
	KUNIT_EXPECT_FALSE(test, node_fence_verdict(1001, 750));
	KUNIT_EXPECT_TRUE(test, node_fence_verdict(1001, 751));
	KUNIT_EXPECT_FALSE(test, node_fence_verdict(1003, 752));
	KUNIT_EXPECT_TRUE(test, node_fence_verdict(1003, 753));
	KUNIT_EXPECT_TRUE(test, node_fence_verdict(1000, 2000));
	KUNIT_EXPECT_FALSE(test, node_fence_verdict(100000, 32));
	/* Writes back with nothing demoted: the loop is running. */
	KUNIT_EXPECT_TRUE(test, node_fence_verdict(0, 32));
	KUNIT_EXPECT_TRUE(test, node_fence_verdict(ULONG_MAX, ULONG_MAX));
	KUNIT_EXPECT_FALSE(test, node_fence_verdict(ULONG_MAX, ULONG_MAX / 2));
}

/* Decide at the end of the window (or closure) @c is in. */
static bool npk_decide_at_end(struct node_fence_clock *c, unsigned long d,
			      unsigned long cow, unsigned long *now)
{
	*now = c->closed ? c->reopen : c->start + NODE_FENCE_WINDOW;
	return node_fence_decide(c, *now, d, cow);
}

/*
 * The loop breaker's clock: a bad window closes the node for one window,
 * a probe window follows, repeated closures double up to the cap, a good
 * window resets the backoff, stale counts never close it.
 */
static void npk_fence_clock(struct kunit *test)
{
	struct node_fence_clock c = { .start = -5UL * HZ };	/* wraps */
	unsigned long now, first;
	unsigned int i;

	KUNIT_EXPECT_FALSE(test, node_fence_due(&c, c.start + 1));
	KUNIT_EXPECT_TRUE(test, npk_decide_at_end(&c, 1000, 10, &now));
	KUNIT_EXPECT_FALSE(test, npk_decide_at_end(&c, 1000, 800, &now));
	KUNIT_EXPECT_EQ(test, c.backoff, 1);
	first = now;
	KUNIT_EXPECT_FALSE(test, node_fence_due(&c, first + NODE_FENCE_WINDOW - 1));
	KUNIT_EXPECT_TRUE(test, node_fence_due(&c, first + NODE_FENCE_WINDOW));
	/* The probe opens whatever was counted while closed. */
	KUNIT_EXPECT_TRUE(test, npk_decide_at_end(&c, 0, 100000, &now));
	KUNIT_EXPECT_EQ(test, now, first + NODE_FENCE_WINDOW);
	for (i = 0; i < 6; i++) {
		KUNIT_EXPECT_FALSE(test, npk_decide_at_end(&c, 0, 64, &now));
		KUNIT_EXPECT_LE(test, c.backoff, NODE_FENCE_MAX_BACKOFF);
		KUNIT_EXPECT_EQ(test, c.reopen, now + c.backoff * NODE_FENCE_WINDOW);
		KUNIT_EXPECT_TRUE(test, npk_decide_at_end(&c, 0, 0, &now));
	}
	KUNIT_EXPECT_EQ(test, c.backoff, NODE_FENCE_MAX_BACKOFF);
	/* A good window forgives. */
	KUNIT_EXPECT_TRUE(test, npk_decide_at_end(&c, 1000, 0, &now));
	KUNIT_EXPECT_EQ(test, c.backoff, 0);
	/* Counts that piled up over a long quiet time close nothing. */
	now = c.start + NODE_FENCE_STALE;
	KUNIT_EXPECT_TRUE(test, node_fence_decide(&c, now, 0, 100000));
	KUNIT_EXPECT_FALSE(test, c.closed);
}

/* Nodes of the synthetic topology with CPUs, set by each case. */
static nodemask_t npk_cpus;

static bool npk_has_cpus(int n)
{
	return node_isset(n, npk_cpus);
}

/*
 * The picks for @node over the synthetic topology's candidates (normal
 * nodes and private tier members: every node but 4) are @want, then
 * none.
 */
static void npk_expect_best(struct kunit *test, int node, const int *want,
			    int nr_want)
{
	nodemask_t memory, cand, used = NODE_MASK_NONE;
	int i;

	npk_masks(&memory, &cand);
	nodes_or(cand, cand, memory);
	for (i = 0; i < nr_want; i++)
		KUNIT_EXPECT_EQ_MSG(test, want[i],
				    node_private_best_node(node, &used, &cand,
							   npk_distance,
							   npk_has_cpus),
				    "node %d pick %d", node, i);
	KUNIT_EXPECT_EQ_MSG(test, NUMA_NO_NODE,
			    node_private_best_node(node, &used, &cand,
						   npk_distance, npk_has_cpus),
			    "node %d: more than %d picks", node, nr_want);
}

/*
 * Worked out by hand: @node first, then the lowest of distance, +1 for
 * a node below @node, +1 for a node with CPUs; equal costs by id.  CPUs
 * on 0, 1 and the memoryless 4.
 */
static void npk_best_node(struct kunit *test)
{
	nodes_clear(npk_cpus);
	node_set(0, npk_cpus);
	node_set(1, npk_cpus);
	node_set(4, npk_cpus);
	/* 2 (15) before 1 (20, +1 CPUs); 3 (30), 5 (40) */
	npk_expect_best(test, 0, (const int[]){ 0, 2, 1, 3, 5 }, 5);
	/* 3 (15), 0 (20, +1 below, +1 CPUs), 2 (30), 5 */
	npk_expect_best(test, 1, (const int[]){ 1, 3, 0, 2, 5 }, 5);
	/* at 30: 3 (above, no CPUs: 30) before 1 (below, CPUs: 32) */
	npk_expect_best(test, 2, (const int[]){ 2, 0, 3, 1, 5 }, 5);
	/* at 30, both below: 2 (31) before 0 (CPUs: 32) */
	npk_expect_best(test, 3, (const int[]){ 3, 1, 2, 0, 5 }, 5);
	/* itself, no candidate though; at 20, all below: 2, 3 (21), 0, 1 (22) */
	npk_expect_best(test, 4, (const int[]){ 4, 2, 3, 0, 1, 5 }, 6);
}

/* Each tie-break on its own: no CPUs anywhere, then on node 0 only. */
static void npk_best_node_ties(struct kunit *test)
{
	nodes_clear(npk_cpus);
	/* at 30 from 2: 3 above (30) before 1 below (31) */
	npk_expect_best(test, 2, (const int[]){ 2, 0, 3, 1, 5 }, 5);
	/* at 30 from 3, both below (31): by id */
	npk_expect_best(test, 3, (const int[]){ 3, 1, 0, 2, 5 }, 5);
	/* at 20 from 4, all below (21): by id */
	npk_expect_best(test, 4, (const int[]){ 4, 0, 1, 2, 3, 5 }, 6);
	/* CPUs on 0 alone turn the first tie round: 2 (31), 0 (32) */
	node_set(0, npk_cpus);
	npk_expect_best(test, 3, (const int[]){ 3, 1, 2, 0, 5 }, 5);
}

/* On this kernel's topology: each candidate once, the local node first. */
static void npk_next_best_node(struct kunit *test)
{
	int node = first_node(node_states[N_MEMORY]);
	nodemask_t used = NODE_MASK_NONE, seen = NODE_MASK_NONE;
	nodemask_t cand = node_states[N_MEMORY];
	int n, picks = 0;

	KUNIT_EXPECT_EQ(test, node_private_next_best_node(node, &used, &cand),
			node);
	node_set(node, seen);
	while ((n = node_private_next_best_node(node, &used, &cand)) !=
	       NUMA_NO_NODE) {
		KUNIT_ASSERT_TRUE(test, node_isset(n, cand));
		KUNIT_EXPECT_FALSE_MSG(test, node_isset(n, seen),
				       "node %d picked twice", n);
		node_set(n, seen);
		KUNIT_ASSERT_LE(test, ++picks, MAX_NUMNODES);
	}
	KUNIT_EXPECT_TRUE(test, nodes_equal(seen, cand));
	/* Nothing outside the candidates, even when all are used. */
	nodes_clear(cand);
	nodes_clear(used);
	node_set(node, used);
	KUNIT_EXPECT_EQ(test, node_private_next_best_node(node, &used, &cand),
			NUMA_NO_NODE);
}

/* A node id no firmware gave us, used as a scratch private node. */
static int npk_scratch_node(void)
{
	int nid;

	for (nid = MAX_NUMNODES - 1; nid > 0; nid--)
		if (!node_possible(nid) && !node_isset(nid, node_private_nodes))
			return nid;
	return NUMA_NO_NODE;
}

/*
 * With @nid fenced: only anon migrates onto it through its list; nothing
 * but a fenced node refuses.  Fake folios: only ->mapping is looked at.
 */
static void npk_fence_folios(struct kunit *test, int nid)
{
	struct folio *anon, *file;

	anon = kunit_kzalloc(test, sizeof(*anon), GFP_KERNEL);
	file = kunit_kzalloc(test, sizeof(*file), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, anon);
	KUNIT_ASSERT_NOT_NULL(test, file);
	anon->mapping = (void *)NODE_PRIVATE_MAPPING_ANON;

	KUNIT_EXPECT_FALSE(test, node_fence_refuses(nid, anon,
						     ALLOC_ZONELIST_PRIVATE));
	KUNIT_EXPECT_TRUE(test, node_fence_refuses(nid, file,
						   ALLOC_ZONELIST_PRIVATE));
	/* The ordinary lists never reach the node anyway. */
	KUNIT_EXPECT_FALSE(test, node_fence_refuses(nid, file,
						    ALLOC_ZONELIST_DEFAULT));
	KUNIT_EXPECT_EQ(test, node_private_zonelist(nid),
			ALLOC_ZONELIST_PRIVATE);
	KUNIT_EXPECT_EQ(test, node_private_zonelist(NUMA_NO_NODE),
			ALLOC_ZONELIST_DEFAULT);
	/* The fence never makes a node a tier member by itself. */
	KUNIT_EXPECT_FALSE(test, node_private_memtier_member(nid));
}

static void npk_predicates(struct kunit *test)
{
	static const unsigned long caps[] = {
		NODE_PRIVATE_CAP_RECLAIM, NODE_PRIVATE_CAP_USER_NUMA,
		NODE_PRIVATE_CAP_HOTUNPLUG, NODE_PRIVATE_CAP_DEMOTION,
		NODE_PRIVATE_CAP_NUMA_BALANCING, NODE_PRIVATE_CAP_LTPIN,
	};
	bool (* const pred[])(int) = {
		node_allows_reclaim, node_allows_user_numa,
		node_allows_hotunplug, node_allows_demotion,
		node_allows_numa_balancing, node_allows_ltpin,
	};
	int nid = npk_scratch_node();
	int i, j;

	if (nid == NUMA_NO_NODE)
		kunit_skip(test, "every node id is possible: no scratch node");
	/* A reference of its own: static_branch_enable() warns above one. */
	static_branch_inc(&node_private_key);

	/* Ordinary node (and memoryless ones): everything allowed. */
	for (i = 0; i < ARRAY_SIZE(pred); i++)
		KUNIT_EXPECT_TRUE(test, pred[i](nid));
	KUNIT_EXPECT_FALSE(test, node_is_private(nid));
	KUNIT_EXPECT_FALSE(test, node_write_fenced(nid));

	node_set(nid, node_private_nodes);
	for (i = 0; i < ARRAY_SIZE(caps); i++) {
		WRITE_ONCE(node_private_caps[nid], caps[i]);
		for (j = 0; j < ARRAY_SIZE(pred); j++)
			KUNIT_EXPECT_EQ_MSG(test, pred[j](nid), i == j,
					    "cap %d predicate %d", i, j);
		KUNIT_EXPECT_FALSE(test, node_write_fenced(nid));
	}
	WRITE_ONCE(node_private_caps[nid], 0);
	for (j = 0; j < ARRAY_SIZE(pred); j++)
		KUNIT_EXPECT_FALSE(test, pred[j](nid));
	WRITE_ONCE(node_private_caps[nid], NODE_PRIVATE_POLICY_WRITE_FENCE);
	KUNIT_EXPECT_TRUE(test, node_write_fenced(nid));
	KUNIT_EXPECT_TRUE(test, node_is_private(nid));
	npk_fence_folios(test, nid);

	node_clear(nid, node_private_nodes);
	WRITE_ONCE(node_private_caps[nid], 0);
	KUNIT_EXPECT_FALSE(test, node_is_private(nid));
}

/* A possible node without memory that is not private; MAX_NUMNODES: none. */
static int npk_memoryless_node(void)
{
	int nid;

	for_each_node_state(nid, N_POSSIBLE)
		if (!node_state(nid, N_MEMORY) && !node_is_private(nid))
			return nid;
	return MAX_NUMNODES;
}

static void npk_register_rules(struct kunit *test)
{
	struct node_private a = { .owner = &a }, b = { .owner = &b };
	int nid, memnode = first_node(node_states[N_MEMORY]);

	KUNIT_EXPECT_EQ(test, node_private_register(-1, &a), -EINVAL);
	KUNIT_EXPECT_EQ(test, node_private_register(MAX_NUMNODES, &a), -EINVAL);
	KUNIT_EXPECT_EQ(test, node_private_register(memnode, NULL), -EINVAL);
	/* A node with normal memory never becomes private. */
	KUNIT_EXPECT_EQ(test, node_private_register(memnode, &a), -EBUSY);
	KUNIT_EXPECT_FALSE(test, node_is_private(memnode));
	a.caps = NODE_PRIVATE_CAP_DEMOTION;
	KUNIT_EXPECT_EQ(test, node_private_register(memnode, &a), -EINVAL);
	a.caps = 0;
	KUNIT_EXPECT_EQ(test, node_private_unregister(memnode, &a), -EINVAL);

	/* The rest needs a possible node without memory. */
	nid = npk_memoryless_node();
	if (nid >= MAX_NUMNODES)
		kunit_skip(test, "no memoryless possible node on this machine");

	KUNIT_ASSERT_EQ(test, node_private_register(nid, &a), 0);
	KUNIT_EXPECT_TRUE(test, node_is_private(nid));
	KUNIT_EXPECT_EQ(test, node_private_register(nid, &a), 0);
	KUNIT_EXPECT_EQ(test, node_private_register(nid, &b), -EBUSY);
	/* No memory online yet: the owner may still change the caps. */
	a.caps = NODE_PRIVATE_CAP_USER_NUMA;
	KUNIT_EXPECT_EQ(test, node_private_register(nid, &a), 0);
	KUNIT_EXPECT_TRUE(test, node_allows_user_numa(nid));
	KUNIT_EXPECT_FALSE(test, node_allows_ltpin(nid));
	/* Only the owner gives the node up. */
	KUNIT_EXPECT_EQ(test, node_private_unregister(nid, &b), -EPERM);
	KUNIT_EXPECT_TRUE(test, node_is_private(nid));
	KUNIT_EXPECT_EQ(test, node_private_unregister(nid, &a), 0);
	KUNIT_EXPECT_FALSE(test, node_is_private(nid));
	KUNIT_EXPECT_EQ(test, node_private_unregister(nid, &a), -EINVAL);

	/* A driver adding normal memory keeps the node from turning private. */
	KUNIT_ASSERT_EQ(test, node_private_hold_normal(nid), 0);
	KUNIT_EXPECT_EQ(test, node_private_register(nid, &a), -EBUSY);
	node_private_release_normal(nid);
	KUNIT_ASSERT_EQ(test, node_private_register(nid, &a), 0);
	if (node_private_hold_normal(nid) != -EBUSY) {
		node_private_release_normal(nid);
		KUNIT_FAIL(test, "a private node was held normal");
	}
	KUNIT_EXPECT_EQ(test, node_private_unregister(nid, &a), 0);
}

/* A registration that fails leaves the key and the fence's breaker be. */
static void npk_register_fails_cleanly(struct kunit *test)
{
	unsigned long fence = NODE_PRIVATE_POLICY_WRITE_FENCE;
	struct node_private a = { .owner = &a, .caps = fence };
	struct node_private b = { .owner = &b, .caps = fence };
	struct node_private c = { .owner = &c };
	int nid = npk_memoryless_node(), count;
	struct node_fence *nf;

	count = static_key_count(&node_private_key.key);
	KUNIT_EXPECT_EQ(test, node_private_register(first_node(node_states[N_MEMORY]),
						    &c), -EBUSY);
	KUNIT_EXPECT_EQ(test, static_key_count(&node_private_key.key), count);
	if (nid >= MAX_NUMNODES)
		kunit_skip(test, "no memoryless possible node on this machine");

	KUNIT_ASSERT_EQ(test, node_private_register(nid, &a), 0);
	nf = node_fence_of(nid);
	if (!nf) {
		/* @a lives on this stack: never leave it registered. */
		node_private_unregister(nid, &a);
		KUNIT_FAIL(test, "a fenced registration made no fence state");
		return;
	}
	spin_lock(&nf->lock);
	WRITE_ONCE(nf->clock.closed, true);
	nf->clock.backoff = 4;
	spin_unlock(&nf->lock);
	count = static_key_count(&node_private_key.key);
	/* Another owner: -EBUSY, and the closed node stays closed. */
	KUNIT_EXPECT_EQ(test, node_private_register(nid, &b), -EBUSY);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(nf->clock.closed));
	KUNIT_EXPECT_EQ(test, nf->clock.backoff, 4);
	KUNIT_EXPECT_EQ(test, static_key_count(&node_private_key.key), count);
	/* The owner registering again starts a clean slate. */
	KUNIT_EXPECT_EQ(test, node_private_register(nid, &a), 0);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(nf->clock.closed));
	/* Whichever of the two stack owners holds it, never leave it so. */
	KUNIT_EXPECT_EQ(test, node_private_unregister(nid, &a), 0);
	node_private_unregister(nid, &b);
}

/* Which full-node allocations go to normal memory, and how they try first. */
static void npk_spill_rules(struct kunit *test)
{
	const unsigned short shared = MPOL_F_PRIVATE | MPOL_F_SHARED;
	const unsigned short owner = MPOL_F_PRIVATE | MPOL_F_PRIVATE_OWNER;
	const gfp_t user = GFP_HIGHUSER_MOVABLE;
	const gfp_t nofs = GFP_NOFS | __GFP_MOVABLE;
	/* an mTHP fault with defrag on: direct reclaim, no __GFP_NORETRY */
	const gfp_t thp = GFP_TRANSHUGE_LIGHT | __GFP_DIRECT_RECLAIM;
	gfp_t try;

	/* The task's own choice: the OOM rule applies, nothing spills. */
	KUNIT_EXPECT_FALSE(test, mpol_private_spills(MPOL_F_PRIVATE, user, 0));
	KUNIT_EXPECT_TRUE(test, mpol_private_spills(shared, user, 0));
	KUNIT_EXPECT_TRUE(test, mpol_private_spills(MPOL_F_PRIVATE, nofs, 0));
	KUNIT_EXPECT_TRUE(test, mpol_private_spills(MPOL_F_PRIVATE,
						    user | __GFP_NOFAIL, 0));
	/* One that cannot sleep never OOMs: it fails on the node. */
	KUNIT_EXPECT_FALSE(test, mpol_private_spills(shared,
						     GFP_NOWAIT | __GFP_MOVABLE, 0));
	KUNIT_EXPECT_FALSE(test, mpol_private_spills(MPOL_F_PRIVATE,
						     GFP_ATOMIC | __GFP_MOVABLE, 0));
	/*
	 * A THP or mTHP stays and fails there (smaller folios follow), NOFS
	 * or not; any other large folio (a minimum page cache folio, with
	 * no smaller order) spills, even under the task's own policy.
	 */
	KUNIT_EXPECT_FALSE(test, mpol_private_spills(shared, thp, 9));
	KUNIT_EXPECT_FALSE(test, mpol_private_spills(shared, thp, 2));
	KUNIT_EXPECT_FALSE(test, mpol_private_spills(shared, thp & ~__GFP_FS, 2));
	KUNIT_EXPECT_TRUE(test, mpol_private_spills(shared, user, 2));
	KUNIT_EXPECT_TRUE(test, mpol_private_spills(MPOL_F_PRIVATE, user, 2));
	KUNIT_EXPECT_TRUE(test, mpol_private_spills(MPOL_F_PRIVATE, user, 4));
	KUNIT_EXPECT_TRUE(test, mpol_private_spills(MPOL_F_PRIVATE, nofs, 2));
	KUNIT_EXPECT_TRUE(test, mpol_private_node_gfp(thp, 2) & __GFP_NORETRY);
	KUNIT_EXPECT_TRUE(test, mpol_private_node_gfp(thp, 9) & __GFP_NORETRY);
	KUNIT_EXPECT_FALSE(test, mpol_private_node_gfp(user, 2) & __GFP_NORETRY);
	KUNIT_EXPECT_FALSE(test, mpol_private_node_gfp(thp, 0) & __GFP_NORETRY);
	KUNIT_EXPECT_FALSE(test, mpol_private_node_gfp(thp | __GFP_NOFAIL, 2) &
				 __GFP_NORETRY);
	KUNIT_EXPECT_FALSE(test, mpol_private_node_gfp(thp | __GFP_RETRY_MAYFAIL,
						       2) & __GFP_NORETRY);
	KUNIT_EXPECT_FALSE(test, mpol_private_spills(MPOL_F_PRIVATE,
						     nofs | __GFP_NORETRY, 0));
	KUNIT_EXPECT_FALSE(test, mpol_private_spills(shared,
						     user | __GFP_RETRY_MAYFAIL,
						     0));
	KUNIT_EXPECT_TRUE(test, mpol_private_spills(MPOL_F_PRIVATE,
						    user | __GFP_NOFAIL, 9));
	/* The owner's memory stays on its node unless it may not fail. */
	KUNIT_EXPECT_FALSE(test, mpol_private_spills(owner, nofs, 0));
	KUNIT_EXPECT_FALSE(test, mpol_private_spills(owner, user, 2));
	KUNIT_EXPECT_TRUE(test, mpol_private_spills(owner, nofs | __GFP_NOFAIL, 0));

	/* A shared policy's user may reclaim the node, without OOM. */
	try = mpol_private_spill_try(user);
	KUNIT_EXPECT_TRUE(test, try & __GFP_DIRECT_RECLAIM);
	KUNIT_EXPECT_TRUE(test, try & __GFP_RETRY_MAYFAIL);
	/* NOFS and NOFAIL take free memory only, and may fail there. */
	try = mpol_private_spill_try(nofs);
	KUNIT_EXPECT_FALSE(test, try & __GFP_DIRECT_RECLAIM);
	try = mpol_private_spill_try(user | __GFP_NOFAIL);
	KUNIT_EXPECT_FALSE(test, try & (__GFP_DIRECT_RECLAIM | __GFP_NOFAIL));
	KUNIT_EXPECT_TRUE(test, try & __GFP_NOWARN);
	KUNIT_EXPECT_TRUE(test, try & __GFP_MOVABLE);
}

static struct kunit_case node_private_cases[] = {
	KUNIT_CASE(npk_order_private_node),
	KUNIT_CASE(npk_order_normal_node),
	KUNIT_CASE(npk_order_memoryless_node),
	KUNIT_CASE(npk_order_properties),
	KUNIT_CASE(npk_selector),
	KUNIT_CASE(npk_live_zonelists),
	KUNIT_CASE(npk_check_caps),
	KUNIT_CASE(npk_memtier_caps),
	KUNIT_CASE(npk_fence_verdict),
	KUNIT_CASE(npk_fence_clock),
	KUNIT_CASE(npk_best_node),
	KUNIT_CASE(npk_best_node_ties),
	KUNIT_CASE(npk_next_best_node),
	KUNIT_CASE(npk_predicates),
	KUNIT_CASE(npk_register_rules),
	KUNIT_CASE(npk_register_fails_cleanly),
	KUNIT_CASE(npk_spill_rules),
	{}
};

static struct kunit_suite node_private_suite = {
	.name = "node_private",
	.test_cases = node_private_cases,
};
kunit_test_suite(node_private_suite);
