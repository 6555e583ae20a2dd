// SPDX-License-Identifier: GPL-2.0
/*
 * Private memory NUMA nodes.
 *
 * A private node's memory is onlined into ordinary zones (buddy free lists,
 * watermarks, LRU), but the node is never in N_MEMORY and its zones are in
 * no FALLBACK or NOFALLBACK zonelist of any node.  They appear only in the
 * PRIVATE lists, and only callers that pass ALLOC_ZONELIST_PRIVATE walk
 * those.  Every ordinary allocation path -- including ones that iterate
 * nodes and pass __GFP_THISNODE -- therefore sees the node as memoryless.
 *
 * The owning driver registers a struct node_private before it hot-adds the
 * memory; the capability bits it carries let individual mm services act on
 * the node's folios again.  See Documentation/mm/numa_private_nodes.rst.
 */

#define pr_fmt(fmt) "node_private: " fmt

#include <linux/cpuset.h>
#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/memcontrol.h>
#include <linux/memory.h>
#include <linux/memory_hotplug.h>
#include <linux/memory-tiers.h>
#include <linux/mempolicy.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/mutex.h>
#include <linux/node_private.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/swap.h>
#include <linux/topology.h>
#include <linux/vmstat.h>

#include "node_private_compat.h"

DEFINE_STATIC_KEY_FALSE(node_private_key);
EXPORT_SYMBOL_GPL(node_private_key);

/* Registered private nodes; written under node_private_lock. */
nodemask_t node_private_nodes __read_mostly;
EXPORT_SYMBOL_GPL(node_private_nodes);

/* Caps of each registered node, copied from its struct node_private. */
unsigned long node_private_caps[MAX_NUMNODES] __read_mostly;
EXPORT_SYMBOL_GPL(node_private_caps);

static DEFINE_MUTEX(node_private_lock);
static struct node_private *node_private_owner[MAX_NUMNODES];
/* A registration holds node_private_key on; under node_private_lock. */
static bool node_private_key_kept;
/* Drivers adding normal memory to each node (node_private_hold_normal()). */
static unsigned int node_private_normal_holds[MAX_NUMNODES];

/**
 * node_private_check_caps - validate a capability word
 * @nid: node the caps are for (only used in messages)
 * @caps: NODE_PRIVATE_CAP_* | NODE_PRIVATE_POLICY_* bits
 *
 * Return: 0; -EINVAL for undefined bits or a broken dependency;
 * -EOPNOTSUPP for a defined bit this kernel does not implement yet.
 */
int node_private_check_caps(int nid, unsigned long caps)
{
	if (caps & ~NODE_PRIVATE_CAPS_ALL) {
		pr_info("node %d: undefined bits %#lx\n", nid,
			caps & ~NODE_PRIVATE_CAPS_ALL);
		return -EINVAL;
	}
	/*
	 * A demotion target fills up unless reclaim can drain it, and it
	 * holds memory its owner did not place: offlining must be able to
	 * give that back.
	 */
	if ((caps & NODE_PRIVATE_CAP_DEMOTION) &&
	    (~caps & (NODE_PRIVATE_CAP_RECLAIM | NODE_PRIVATE_CAP_HOTUNPLUG))) {
		pr_info("node %d: DEMOTION needs RECLAIM and HOTUNPLUG\n", nid);
		return -EINVAL;
	}
	/*
	 * A write to a fenced folio copies it away; a long-term pin on the
	 * original would then see a page the process no longer maps.
	 */
	if ((caps & NODE_PRIVATE_POLICY_WRITE_FENCE) &&
	    (caps & NODE_PRIVATE_CAP_LTPIN)) {
		pr_info("node %d: WRITE_FENCE excludes LTPIN\n", nid);
		return -EINVAL;
	}
	if (caps & ~NODE_PRIVATE_CAPS_SUPPORTED) {
		pr_info("node %d: bits %#lx are not implemented\n", nid,
			caps & ~NODE_PRIVATE_CAPS_SUPPORTED);
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * Write-fence loop breaker.  A write to a folio on a fenced node copies it
 * to DRAM; the copy needs a DRAM page, which may reclaim, which may demote
 * more folios onto the fenced node, which are written again.  Per fenced
 * node, pages demoted onto it and pages copied off it by writes are counted
 * over a window of NODE_FENCE_WINDOW (it lasts until the first demotion
 * after its end).  When the copies exceed all but 1/NODE_FENCE_CHURN of
 * the demotions (and NODE_FENCE_FLOOR, against noise), demotion onto the
 * node is mostly churn and it stops: reclaim treats the folios swap can
 * take as if the node were not there.  Not sooner: a demoted folio that
 * is only read costs nothing on the node, a swapped-out one faults on
 * every access, so swap beats the fence only when nearly every demoted
 * folio is written back (a 1:9 set:get load lost half its throughput
 * closing at a quarter).  A
 * closure lasts one window, doubling up to NODE_FENCE_MAX_BACKOFF windows
 * while each probe window after it closes again; a window that passes
 * resets it.  Counts older than NODE_FENCE_STALE, and the copies made
 * while closed, are forgotten.
 */
#define NODE_FENCE_WINDOW	HZ
#define NODE_FENCE_CHURN	4
#define NODE_FENCE_FLOOR	32
#define NODE_FENCE_MAX_BACKOFF	8
#define NODE_FENCE_STALE	(8 * NODE_FENCE_WINDOW)

struct node_fence_clock {
	unsigned long start;	/* jiffies: the counted window began */
	unsigned long reopen;	/* jiffies: closed until then */
	unsigned int backoff;	/* windows the last closure lasts */
	bool closed;		/* no demotion onto the node */
};

struct node_fence {
	spinlock_t lock;	/* serialises node_fence_decide() */
	struct node_fence_clock clock;
	atomic_long_t demoted;	/* pages demoted onto it, this window */
	atomic_long_t cow;	/* pages copied off it by writes */
};

/* Allocated at the first fenced registration of a node, never freed. */
static struct node_fence *node_fences[MAX_NUMNODES];

static struct node_fence *node_fence_of(int nid)
{
	/* Pairs with node_fence_alloc(): sees the state initialised. */
	return smp_load_acquire(&node_fences[nid]);
}

/* Allocate @nid's fence state once; a failing registration keeps it. */
static int node_fence_alloc(int nid)
{
	struct node_fence *nf;

	if (node_fence_of(nid))
		return 0;
	nf = kzalloc_obj(*nf, GFP_KERNEL);
	if (!nf)
		return -ENOMEM;
	spin_lock_init(&nf->lock);
	nf->clock.start = jiffies;
	/* Serialised by node_private_lock against a second registrant. */
	mutex_lock(&node_private_lock);
	if (!node_fences[nid])
		/* Initialised before published: pairs with node_fence_of(). */
		smp_store_release(&node_fences[nid], nf);
	else
		kfree(nf);
	mutex_unlock(&node_private_lock);
	return 0;
}

/*
 * A registration that succeeded starts with a clean slate; one that
 * failed leaves the breaker as it was.  Under node_private_lock.
 */
static void node_fence_reset(int nid)
{
	struct node_fence *nf = node_fence_of(nid);

	if (!nf)
		return;
	spin_lock(&nf->lock);
	WRITE_ONCE(nf->clock.closed, false);
	nf->clock.backoff = 0;
	nf->clock.start = jiffies;
	atomic_long_set(&nf->demoted, 0);
	atomic_long_set(&nf->cow, 0);
	spin_unlock(&nf->lock);
}

/**
 * node_fence_verdict - close a fenced node to demotion?
 * @demoted: pages demoted onto the node over the last window
 * @cow: pages writes copied off the node over the same window
 *
 * Return: true when the writes undo nearly all that demotion did.
 */
static bool node_fence_verdict(unsigned long demoted, unsigned long cow)
{
	unsigned long d = demoted, k = NODE_FENCE_CHURN;

	/* cow > d * (k - 1) / k, exactly and without the overflow */
	return cow >= NODE_FENCE_FLOOR &&
	       cow > d / k * (k - 1) + d % k * (k - 1) / k;
}

/* Has @c a decision to take at @now (a window or a closure ended)? */
static bool node_fence_due(const struct node_fence_clock *c,
			   unsigned long now)
{
	if (c->closed)
		return !time_before(now, c->reopen);
	return !time_before(now, c->start + NODE_FENCE_WINDOW);
}

/**
 * node_fence_decide - take the decision due at @now
 * @c: the node's clock
 * @now: jiffies
 * @demoted: pages demoted onto the node since @c->start
 * @cow: pages copied off it since @c->start
 *
 * A closure that ended opens a probe window (its counts are ignored); a
 * window that ended closes the node or resets the backoff.
 *
 * Return: whether demotion onto the node is open.
 */
static bool node_fence_decide(struct node_fence_clock *c, unsigned long now,
			      unsigned long demoted, unsigned long cow)
{
	if (c->closed) {
		WRITE_ONCE(c->closed, false);
	} else if (time_before(now, c->start + NODE_FENCE_STALE) &&
		   node_fence_verdict(demoted, cow)) {
		c->backoff = c->backoff ?
			min(2 * c->backoff, NODE_FENCE_MAX_BACKOFF) : 1;
		c->reopen = now + c->backoff * NODE_FENCE_WINDOW;
		WRITE_ONCE(c->closed, true);
	} else {
		c->backoff = 0;
	}
	c->start = now;
	return !c->closed;
}

/* May demotion put folios on @nf's node now? */
static bool node_fence_open(struct node_fence *nf)
{
	unsigned long now = jiffies;
	bool open;

	/* Racy peek; the decision itself is taken under the lock. */
	if (!data_race(node_fence_due(&nf->clock, now)) ||
	    !spin_trylock(&nf->lock))
		return !READ_ONCE(nf->clock.closed);
	if (node_fence_due(&nf->clock, now))
		node_fence_decide(&nf->clock, now,
				  atomic_long_xchg(&nf->demoted, 0),
				  atomic_long_xchg(&nf->cow, 0));
	open = !nf->clock.closed;
	spin_unlock(&nf->lock);
	return open;
}

/* A write fault copied a folio off fenced node @nid. */
void node_fence_count_cow(int nid)
{
	struct node_fence *nf = node_fence_of(nid);

	count_vm_event(PGFENCE_COW);
	if (nf)
		atomic_long_inc(&nf->cow);
}

/**
 * node_fence_keeps - keep @folio back from demotion off node @src?
 * @src: the node reclaim is working on
 * @folio: a folio reclaim would demote
 * @gfp: the reclaim context's allocation flags
 *
 * Only a write-fenced target refuses: page cache always (a buffered write
 * would store to it), anon while the loop breaker has the node closed --
 * and then only if swap can take the folio instead (free swap for its
 * memcg, a context that may do I/O): anything else would turn the loop
 * into an OOM.  A kept folio is reclaimed in the same pass as if there
 * were no demotion target.
 *
 * Return: true to keep @folio off the demotion target (reclaim it from
 * @src), false to let it be demoted.
 */
bool node_fence_keeps(int src, struct folio *folio, gfp_t gfp)
{
	struct node_fence *nf;
	bool room;
	int nid;

	if (!node_private_enabled())
		return false;
	nid = node_private_demotion_target(src);
	if (nid == NUMA_NO_NODE || !node_write_fenced(nid))
		return false;
	if (!folio_test_anon(folio))
		return true;
	nf = node_fence_of(nid);
	if (!nf || node_fence_open(nf))
		return false;
	if (!(gfp & __GFP_IO) || !folio_test_swapbacked(folio))
		return false;
	/* The locked folio keeps its memcg; 7.3's folio_memcg() wants RCU. */
	rcu_read_lock();
	room = mem_cgroup_get_nr_swap_pages(folio_memcg(folio)) >=
	       folio_nr_pages(folio);
	rcu_read_unlock();
	if (!room)
		return false;
	count_vm_events(PGDEMOTE_FENCE_SKIP, folio_nr_pages(folio));
	return true;
}

/*
 * migrate_pages(2) onto fenced node @nid: put the page cache in @folios
 * back where it was.  Return: folios put back.
 */
long node_fence_putback_refused(int nid, struct list_head *folios)
{
	struct folio *folio, *next;
	LIST_HEAD(refused);
	long nr = 0;

	if (!node_write_fenced(nid))
		return 0;
	list_for_each_entry_safe(folio, next, folios, lru) {
		if (folio_test_anon(folio))
			continue;
		list_move_tail(&folio->lru, &refused);
		nr++;
	}
	putback_movable_pages(&refused);
	return nr;
}

/* Demotion moved @nr pages to fenced node @nid (or to its lower tier). */
void node_fence_count_demoted(int nid, unsigned int nr)
{
	struct node_fence *nf;

	if (nid == NUMA_NO_NODE || !nr || !node_write_fenced(nid))
		return;
	nf = node_fence_of(nid);
	if (nf)
		atomic_long_add(nr, &nf->demoted);
}

/*
 * Memory tiers.  A private node is in a tier, and so a demotion source and
 * target, only while its owner allows DEMOTION and its memory is online.
 * The tier comes from the memory type the owner set for the node
 * (init_node_memory_type()), as for dax/kmem, else from
 * mt_calc_adistance().
 */
static bool node_private_caps_memtier(unsigned long caps, bool online)
{
	return online && (caps & NODE_PRIVATE_CAP_DEMOTION);
}

bool node_private_memtier_member(int nid)
{
	return node_is_private(nid) &&
	       node_private_caps_memtier(READ_ONCE(node_private_caps[nid]),
					 node_state(nid, N_MEMORY_PRIVATE));
}

/* Add the private nodes that belong in a memory tier to @nodes. */
void node_private_memtier_nodes(nodemask_t *nodes)
{
	int nid;

	if (!node_private_enabled())
		return;
	for_each_node_mask(nid, node_private_nodes)
		if (node_private_memtier_member(nid))
			node_set(nid, *nodes);
}

static int node_private_distance(int a, int b)
{
	return node_distance(a, b);
}

static bool node_private_has_cpus(int nid)
{
	return !cpumask_empty(cpumask_of_node(nid));
}

/*
 * node_private_next_best_node() on the topology that @dist and @has_cpus
 * describe: the kernel's, or a test's.
 */
static int node_private_best_node(int node, nodemask_t *used,
				  const nodemask_t *candidates,
				  int (*dist)(int, int), bool (*has_cpus)(int))
{
	int n, best = NUMA_NO_NODE, min_val = INT_MAX;

	if (!node_isset(node, *used)) {
		node_set(node, *used);
		return node;
	}
	for_each_node_mask(n, *candidates) {
		int val;

		if (node_isset(n, *used))
			continue;
		val = dist(node, n) + (n < node);
		if (has_cpus(n))
			val += PENALTY_FOR_NODE_WITH_CPUS;
		if (val < min_val) {
			min_val = val;
			best = n;
		}
	}
	if (best != NUMA_NO_NODE)
		node_set(best, *used);
	return best;
}

/**
 * node_private_next_best_node - find_next_best_node() over @candidates
 * @node: the node a list is built for
 * @used: nodes already picked; the pick is added
 * @candidates: nodes to pick from (normal and private tier members)
 *
 * The same preference as find_next_best_node() (distance, then nodes
 * above @node, then nodes without CPUs), without its zonelist-build load
 * balancing.
 *
 * Return: the node picked, or NUMA_NO_NODE.
 */
int node_private_next_best_node(int node, nodemask_t *used,
				const nodemask_t *candidates)
{
	return node_private_best_node(node, used, candidates,
				      node_private_distance,
				      node_private_has_cpus);
}

/* A memory block of @arg's node exists, online or not. */
static int node_private_block_on(struct memory_block *mem, void *arg)
{
	return mem->nid == *(int *)arg;
}

/**
 * node_private_register - make @nid a private node owned by @np
 * @nid: a possible node without normal memory
 * @np: the owner; @np->caps is read once, here
 *
 * Call before hot-adding the node's memory: every range onlined while the
 * node is registered becomes private memory.  Registering the same @np
 * again may change the caps while no memory is online.
 *
 * Return: 0; -EINVAL for a bad @nid or caps; -EOPNOTSUPP for caps this
 * kernel lacks; -EBUSY if the node has normal memory, memory blocks
 * (even offline ones) when it is first registered, another owner, a
 * driver adding normal memory to it, or online memory whose caps would
 * change.
 */
int node_private_register(int nid, struct node_private *np)
{
	unsigned long caps;
	bool keep = false;
	int ret;

	if (!np || nid < 0 || nid >= MAX_NUMNODES || !node_possible(nid))
		return -EINVAL;
	caps = READ_ONCE(np->caps);
	ret = node_private_check_caps(nid, caps);
	if (ret)
		return ret;
	if ((caps & NODE_PRIVATE_POLICY_WRITE_FENCE) && node_fence_alloc(nid))
		return -ENOMEM;

	/*
	 * On before the node is set, so that memory onlined the moment it is
	 * counts as private; a failed registration takes its reference back.
	 * Before mem_hotplug_lock: the key takes cpu_hotplug_lock.
	 */
	static_branch_inc(&node_private_key);

	mutex_lock(&node_private_lock);
	get_online_mems();
	if (node_state(nid, N_MEMORY)) {
		pr_info("node %d has normal memory, it cannot become private\n",
			nid);
		ret = -EBUSY;
	} else if (node_private_owner[nid] && node_private_owner[nid] != np) {
		pr_info("node %d already has an owner\n", nid);
		ret = -EBUSY;
	} else if (node_private_normal_holds[nid]) {
		pr_info("node %d is getting normal memory, it cannot become private\n",
			nid);
		ret = -EBUSY;
	} else if (!node_private_owner[nid] &&
		   for_each_memory_block(&nid, node_private_block_on)) {
		/* Someone else's offline memory would turn private on online. */
		pr_info("node %d has memory blocks, it cannot become private\n",
			nid);
		ret = -EBUSY;
	} else if (node_state(nid, N_MEMORY_PRIVATE) &&
		   node_private_caps[nid] != caps) {
		pr_info("node %d has memory online, its caps are fixed\n", nid);
		ret = -EBUSY;
	} else {
		node_private_owner[nid] = np;
		WRITE_ONCE(node_private_caps[nid], caps);
		/* Caps visible before anyone sees the node as private. */
		smp_wmb();
		node_set(nid, node_private_nodes);
		node_fence_reset(nid);
		keep = !node_private_key_kept;
		node_private_key_kept = true;
	}
	put_online_mems();
	mutex_unlock(&node_private_lock);
	/* The first registration that succeeds keeps the key on for good. */
	if (!keep)
		static_branch_dec(&node_private_key);
	return ret;
}
EXPORT_SYMBOL_GPL(node_private_register);

/**
 * node_private_unregister - give up ownership of private node @nid
 * @nid: a node registered with node_private_register()
 * @np: the owner that registered it
 *
 * The node's memory must be removed first: memory blocks left behind,
 * even offline ones, would be onlined later as ordinary memory.
 *
 * Return: 0; -EINVAL if @nid is not registered; -EPERM if @np is not its
 * owner; -EBUSY, leaving the node untouched, while any of its memory is
 * online or any memory block of it is left.
 */
int node_private_unregister(int nid, struct node_private *np)
{
	int ret = 0;

	if (nid < 0 || nid >= MAX_NUMNODES)
		return -EINVAL;

	mutex_lock(&node_private_lock);
	get_online_mems();
	if (!node_private_owner[nid]) {
		ret = -EINVAL;
	} else if (node_private_owner[nid] != np) {
		pr_info("node %d: unregister by one that is not its owner\n",
			nid);
		ret = -EPERM;
	} else if (node_state(nid, N_MEMORY_PRIVATE)) {
		pr_info("node %d still has private memory online\n", nid);
		ret = -EBUSY;
	} else if (for_each_memory_block(&nid, node_private_block_on)) {
		pr_info("node %d still has memory blocks\n", nid);
		ret = -EBUSY;
	} else {
		node_clear(nid, node_private_nodes);
		WRITE_ONCE(node_private_caps[nid], 0);
		node_private_owner[nid] = NULL;
	}
	put_online_mems();
	mutex_unlock(&node_private_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(node_private_unregister);

/**
 * node_private_hold_normal - keep @nid from turning private while a driver
 * adds normal memory to it
 * @nid: the node the driver adds to
 *
 * A driver that hot-adds ordinary memory checks the node is not private
 * and adds later: a registration in between would make that memory the
 * registrant's.  Holding the node closes the window; once the memory
 * blocks exist, node_private_register() refuses on them anyway.
 *
 * Return: 0, to be paired with node_private_release_normal(); -EBUSY if
 * the node is private already.
 */
int node_private_hold_normal(int nid)
{
	int ret = 0;

	if (nid < 0 || nid >= MAX_NUMNODES)
		return -EINVAL;
	mutex_lock(&node_private_lock);
	if (node_private_owner[nid])
		ret = -EBUSY;
	else
		node_private_normal_holds[nid]++;
	mutex_unlock(&node_private_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(node_private_hold_normal);

/**
 * node_private_release_normal - end a node_private_hold_normal()
 * @nid: the node held
 */
void node_private_release_normal(int nid)
{
	if (nid < 0 || nid >= MAX_NUMNODES)
		return;
	mutex_lock(&node_private_lock);
	if (!WARN_ON_ONCE(!node_private_normal_holds[nid]))
		node_private_normal_holds[nid]--;
	mutex_unlock(&node_private_lock);
}
EXPORT_SYMBOL_GPL(node_private_release_normal);

/**
 * folio_alloc_node_private - allocate a folio on a private node
 * @gfp: GFP flags; __GFP_THISNODE is implied
 * @order: folio order
 * @nid: a private node with memory online
 *
 * For the service that owns @nid.  Never falls back to another node and
 * never OOM-kills (as any __GFP_THISNODE allocation).
 *
 * Return: the folio, or NULL when @nid is not a private node with memory
 * or is exhausted.
 */
struct folio *folio_alloc_node_private_noprof(gfp_t gfp, unsigned int order,
					      int nid)
{
	struct page *page;

	if (nid < 0 || nid >= MAX_NUMNODES ||
	    !node_state(nid, N_MEMORY_PRIVATE))
		return NULL;
	page = node_private_alloc_pages(gfp | __GFP_COMP | __GFP_THISNODE,
					order, nid, NULL, ALLOC_ZONELIST_PRIVATE);
	return page_rmappable_folio(page);
}
EXPORT_SYMBOL_GPL(folio_alloc_node_private_noprof);

/**
 * node_private_order - node order of a PRIVATE zonelist
 * @local: node whose list is built
 * @nofallback: build PRIVATE_NOFALLBACK (only @local) instead of PRIVATE
 * @memory: nodes with normal memory (N_MEMORY)
 * @private: registered private nodes
 * @dist: node distance
 * @order: output, MAX_NUMNODES entries
 *
 * PRIVATE holds @local first when it has memory of either kind, then every
 * normal node by distance (ties by id).  It never holds another private
 * node, so an allocation aimed at one private node cannot spill onto a
 * second owner's memory.  FALLBACK and NOFALLBACK hold no private node at
 * all: a private node is never in N_MEMORY, and build_thisnode_zonelists()
 * leaves a private node's own NOFALLBACK list empty.
 *
 * Return: number of nodes written to @order.
 */
int node_private_order(int local, bool nofallback, const nodemask_t *memory,
		       const nodemask_t *private, int (*dist)(int, int),
		       int *order)
{
	nodemask_t todo;
	int nr = 0;

	if (node_isset(local, *memory) || node_isset(local, *private))
		order[nr++] = local;
	if (nofallback)
		return nr;

	todo = *memory;
	node_clear(local, todo);
	while (!nodes_empty(todo)) {
		int n, best = NUMA_NO_NODE;

		for_each_node_mask(n, todo)
			if (best == NUMA_NO_NODE ||
			    dist(local, n) < dist(local, best))
				best = n;
		order[nr++] = best;
		node_clear(best, todo);
	}
	return nr;
}

/* Called by build_zonelists(), with zonelist_update_seq held. */
int node_private_zonelist_order(int local, bool nofallback, int *order)
{
	return node_private_order(local, nofallback, &node_states[N_MEMORY],
				  &node_private_nodes, node_private_distance,
				  order);
}

/*
 * Memory hotplug.  A private node's memory changes N_MEMORY_PRIVATE and
 * nothing else: the notifier sees no N_MEMORY or N_NORMAL_MEMORY change,
 * so slab, cpuset and memory tiers never learn about the node; kswapd
 * and kcompactd run only if the owner granted RECLAIM (online_pages()).
 */
void node_private_set_state(int nid)
{
	if (node_is_private(nid))
		node_set_state(nid, N_MEMORY_PRIVATE);
}

/* The last private memory of @nid just went offline. */
bool node_private_emptied(int nid)
{
	return node_is_private(nid) && !node_state(nid, N_MEMORY_PRIVATE);
}

/* Called after the offlined pages left the node's present count. */
void node_private_clear_state(int nid)
{
	if (node_is_private(nid) && !NODE_DATA(nid)->node_present_pages)
		node_clear_state(nid, N_MEMORY_PRIVATE);
}

/*
 * mempolicy.  A policy may use a private node only if it names no other
 * node, the owner granted USER_NUMA and the mode is MPOL_BIND or
 * MPOL_PREFERRED.  Such a policy carries MPOL_F_PRIVATE and allocates
 * through the private node's PRIVATE zonelist.
 *
 * cpuset: a task whose cpuset leaves out a node with normal memory is
 * confined, and users' placement never takes a confined task's memory
 * to a private node (cpuset.mems cannot name one).  @mems: the cpuset
 * of the task whose memory moves, when that is not current; or NULL.
 */
static bool node_private_unconfined(const nodemask_t *mems)
{
	if (!cpusets_enabled())
		return true;
	return nodes_subset(node_states[N_MEMORY],
			    cpuset_current_mems_allowed) &&
	       (!mems || nodes_subset(node_states[N_MEMORY], *mems));
}

/* May a @pol policy place folios on private node @nid?  Says why not. */
static bool mpol_private_usable(const struct mempolicy *pol, int nid)
{
	const char *why = NULL;

	if (!node_state(nid, N_MEMORY_PRIVATE) || !node_allows_user_numa(nid))
		why = "does not allow user NUMA placement";
	else if (!node_private_unconfined(NULL))
		why = "is out of reach of a task its cpuset confines";
	else if (node_write_fenced(nid))
		why = "is write-fenced: folios reach it only by migration";
	else if (pol->mode != MPOL_BIND && pol->mode != MPOL_PREFERRED)
		why = "takes only bind or preferred policies";
	if (why)
		pr_info_ratelimited("private node %d %s\n", nid, why);
	return !why;
}

int mpol_private_nodemask(struct mempolicy *pol, const nodemask_t *nodes,
			  nodemask_t *allowed)
{
	nodemask_t priv;
	int nid;

	pol->flags &= ~MPOL_F_PRIVATE;
	if (!node_private_enabled() || (pol->flags & MPOL_F_RELATIVE_NODES))
		return 0;
	nodes_and(priv, *nodes, node_private_nodes);
	if (nodes_empty(priv))
		return 0;

	/*
	 * Beside normal nodes the policy can use, private nodes are left out
	 * silently, as memoryless nodes are: masks built from every node
	 * with memory (numactl's "all") keep working and keep off private
	 * memory.  Only a policy that names nothing else uses the node.
	 */
	if (nodes_intersects(*nodes, *allowed))
		return 0;
	if (nodes_weight(priv) > 1) {
		pr_info_ratelimited("a policy may name one private node\n");
		return -EINVAL;
	}
	nid = first_node(priv);
	if (!mpol_private_usable(pol, nid))
		return -EINVAL;
	node_set(nid, *allowed);
	pol->flags |= MPOL_F_PRIVATE;
	return 0;
}

/* The private node of an MPOL_F_PRIVATE policy, NUMA_NO_NODE if gone. */
int mpol_private_node(const struct mempolicy *pol)
{
	/* No nodemask copy on the stack: this runs for every allocation. */
	unsigned long nid = find_first_and_bit(nodes_addr(pol->nodes),
					       nodes_addr(node_private_nodes),
					       MAX_NUMNODES);

	return nid < MAX_NUMNODES ? nid : NUMA_NO_NODE;
}

/* A zone of @nid that a non-movable allocation may use has memory. */
static bool node_private_has_kernel_zone(int nid)
{
	int z;

	for (z = 0; z < ZONE_MOVABLE; z++)
		if (populated_zone(&NODE_DATA(nid)->node_zones[z]))
			return true;
	return false;
}

/*
 * The private node an MPOL_F_PRIVATE policy may still allocate from with
 * @gfp, or NUMA_NO_NODE.  A policy outlives what it was checked against:
 * the node's memory may have gone offline (a bind on it alone would then
 * fail every allocation, and loop a page fault), and a user's policy may
 * have lost USER_NUMA to an unregister and register.  Memory a long-term
 * pin faults in (PF_MEMALLOC_PIN clears __GFP_MOVABLE) stays there, so it
 * goes to the node only with LTPIN and a zone it may use.
 */
static int mpol_private_usable_node(const struct mempolicy *pol, gfp_t gfp)
{
	int pnid = mpol_private_node(pol);

	/*
	 * A fresh folio on a fenced node would be mapped writable by its
	 * first fault; fenced nodes are reached only by migration.
	 */
	if (pnid == NUMA_NO_NODE || !node_state(pnid, N_MEMORY_PRIVATE) ||
	    node_write_fenced(pnid))
		return NUMA_NO_NODE;
	/*
	 * Reclaim allocates for other tasks' memory under this task's policy
	 * (zsmalloc pages for zram and zswap): that never goes on the node.
	 */
	if (current->flags & PF_MEMALLOC)
		return NUMA_NO_NODE;
	if (!(pol->flags & MPOL_F_PRIVATE_OWNER) &&
	    (!node_allows_user_numa(pnid) || !node_private_unconfined(NULL)))
		return NUMA_NO_NODE;
	if (!(current_gfp_context(gfp) & __GFP_MOVABLE) &&
	    (!node_allows_ltpin(pnid) || !node_private_has_kernel_zone(pnid)))
		return NUMA_NO_NODE;
	return pnid;
}

/*
 * A THP or mTHP allocation: the GFP_TRANSHUGE masks carry
 * __GFP_NOMEMALLOC, and no page cache allocation of order > 0 does.  Its
 * callers all fall back to smaller folios when it fails (anon and shmem
 * faults, swap-in), or split it (mbind's migration, whose GFP_TRANSHUGE
 * also covers a page cache folio that cannot split below its minimum
 * order: that move fails, the folio stays where it was).
 */
static bool mpol_private_thp(gfp_t gfp, unsigned int order)
{
	return order && (gfp & __GFP_NOMEMALLOC);
}

/*
 * Allocations that take the private node only while it has room, and go
 * to normal memory when it is full, instead of reaching the OOM killer:
 * - under a file's shared policy, which whoever mapped the file set and
 *   which binds everyone who touches the file: a task that only shares
 *   the file is not killed for it;
 * - ones that may not fail (__GFP_NOFAIL) or may not enter filesystem
 *   reclaim (GFP_NOFS, a journal handle): block-device page cache for
 *   filesystem metadata, say, which would otherwise retry forever with
 *   the journal held, stalling every writer of the filesystem.
 * Only what would otherwise OOM or fail for good gets that far, an
 * allocation that may sleep and retry: GFP_NOWAIT, GFP_ATOMIC,
 * __GFP_NORETRY (readahead, the larger orders of a page cache folio) and
 * __GFP_RETRY_MAYFAIL ones just fail on the node.  A THP or mTHP fails
 * there too (mpol_private_node_gfp()), and its caller falls back to
 * smaller folios on the node.  Any other large folio -- the smallest
 * page cache folio of a filesystem whose blocks are larger than a page,
 * which has nothing smaller to fall back to -- spills after a try on the
 * node: the slowpath would never OOM for it above
 * PAGE_ALLOC_COSTLY_ORDER (a fault would refault forever), and on a node
 * without RECLAIM nothing compacts.  So only base pages reach the OOM
 * rule.  The owner's allocations (MPOL_F_PRIVATE_OWNER) stay on its
 * node.  __GFP_NOFAIL ones always spill.  @gfp is current_gfp_context()'s.
 */
static bool mpol_private_spills(unsigned short flags, gfp_t gfp,
				unsigned int order)
{
	if (gfp & __GFP_NOFAIL)
		return true;
	if (!gfpflags_allow_blocking(gfp) ||
	    (gfp & (__GFP_NORETRY | __GFP_RETRY_MAYFAIL)) ||
	    (flags & MPOL_F_PRIVATE_OWNER) || mpol_private_thp(gfp, order))
		return false;
	if (order || !(gfp & __GFP_FS))
		return true;
	return flags & MPOL_F_SHARED;
}

/*
 * The flags of an allocation that stays on the private node: a THP or
 * mTHP that the slowpath would take to the OOM killer (orders up to
 * PAGE_ALLOC_COSTLY_ORDER, an mTHP fault with defrag on) fails instead,
 * so that its caller falls back to smaller folios on the node.
 */
static gfp_t mpol_private_node_gfp(gfp_t gfp, unsigned int order)
{
	if (mpol_private_thp(gfp, order) &&
	    !(gfp & (__GFP_NORETRY | __GFP_RETRY_MAYFAIL | __GFP_NOFAIL)))
		gfp |= __GFP_NORETRY;
	return gfp;
}

/*
 * The try on the private node before an allocation spills: a shared
 * policy's ordinary one, or a large folio, may reclaim and compact there
 * (no OOM); a NOFS or NOFAIL one
 * only takes free memory, rather than wait in reclaim, maybe with a
 * journal held, for a node that is not its only choice.
 */
static gfp_t mpol_private_spill_try(gfp_t gfp)
{
	gfp_t try = (gfp & ~__GFP_NOFAIL) | __GFP_NOWARN;

	if ((gfp & (__GFP_FS | __GFP_NOFAIL)) == __GFP_FS)
		return try | __GFP_RETRY_MAYFAIL;
	return try & ~__GFP_DIRECT_RECLAIM;
}

/*
 * The ordinary lists never reach a private node: a mask left with only
 * private nodes (policy_nodemask() keeps it without cpusets) would fail
 * every allocation, and loop a page fault forever.  Keep its normal
 * nodes, in @normal, or none, as for a policy whose nodes all went away;
 * a private preferred node gives way to the local one.
 */
static nodemask_t *mpol_private_strip(int *nid, nodemask_t *nodemask,
				      nodemask_t *normal)
{
	if (node_is_private(*nid))
		*nid = numa_node_id();
	if (nodemask && nodes_intersects(*nodemask, node_private_nodes)) {
		nodes_andnot(*normal, *nodemask, node_private_nodes);
		nodemask = nodes_empty(*normal) ? NULL : normal;
	}
	return nodemask;
}

/* Serve an MPOL_F_PRIVATE policy's allocation from its normal nodes. */
static struct page *mpol_private_normal(gfp_t gfp, unsigned int order,
					int nid, nodemask_t *nodemask)
{
	nodemask_t normal;

	nodemask = mpol_private_strip(&nid, nodemask, &normal);
	return node_private_alloc_mpol(gfp, order, nid, nodemask,
				       ALLOC_ZONELIST_DEFAULT);
}

/*
 * The node and mask for a bulk allocation under @pol (vmalloc's pages):
 * kernel memory, which never goes on a private node.
 */
nodemask_t *mpol_private_bulk_mask(const struct mempolicy *pol, int *nid,
				   nodemask_t *nodemask, nodemask_t *normal)
{
	if (!(pol->flags & MPOL_F_PRIVATE))
		return nodemask;
	return mpol_private_strip(nid, nodemask, normal);
}

/*
 * Allocation under an MPOL_F_PRIVATE policy.  Only movable (user) memory
 * goes through the private node's PRIVATE list; unmovable kernel memory
 * allocated under the policy, and memory a long-term pin faults in
 * (PF_MEMALLOC_PIN clears __GFP_MOVABLE) unless the node allows LTPIN, is
 * served as if the policy named only its normal nodes, so it can never
 * pin a private node.
 */
struct page *mpol_private_alloc_noprof(gfp_t gfp, unsigned int order,
				       struct mempolicy *pol, int nid,
				       nodemask_t *nodemask)
{
	int pnid = mpol_private_usable_node(pol, gfp);
	gfp_t ctx = current_gfp_context(gfp);
	struct page *page;

	if (pnid == NUMA_NO_NODE || !(gfp & __GFP_MOVABLE))
		return mpol_private_normal(gfp, order, nid, nodemask);
	/*
	 * Without RECLAIM nothing compacts the node or frees its blocks: a
	 * THP or mTHP fault falls back to base pages rather than take them
	 * (on the node, also for a preferred policy).  One that may not
	 * fail takes normal memory.  Other large folios: see
	 * mpol_private_spills().
	 */
	if (mpol_private_thp(gfp, order) && !node_allows_reclaim(pnid))
		return (gfp & __GFP_NOFAIL) ?
			mpol_private_normal(gfp, order, nid, NULL) : NULL;
	/*
	 * policy_nodemask() drops a bind mask that misses mems_allowed, and
	 * a private node never is in it: bind to the policy's nodes here, or
	 * a full private node would spill onto every normal node.
	 */
	if (pol->mode == MPOL_BIND)
		nodemask = &pol->nodes;
	if (!mpol_private_spills(pol->flags, ctx, order))
		return node_private_alloc_mpol(mpol_private_node_gfp(gfp, order),
					       order, pnid, nodemask,
					       ALLOC_ZONELIST_PRIVATE);
	page = node_private_alloc_mpol(mpol_private_spill_try(ctx), order,
				       pnid, nodemask, ALLOC_ZONELIST_PRIVATE);
	return page ?: mpol_private_normal(gfp, order, nid, NULL);
}

/*
 * An allocation under a bind of @vma, made for another mm than current's
 * (ptrace, /proc/PID/mem and cmdline, process_vm_writev,
 * process_madvise(), uprobes, UFFDIO_COPY): the accessor did not choose
 * the policy, so a full private node fails it rather than OOM-kill the
 * accessor.  A preferred policy falls back to normal nodes anyway.
 */
gfp_t mpol_private_remote_gfp(const struct mempolicy *pol,
			      const struct vm_area_struct *vma, gfp_t gfp)
{
	if (pol && unlikely(pol->flags & MPOL_F_PRIVATE) &&
	    pol->mode == MPOL_BIND && vma->vm_mm != current->mm)
		gfp |= __GFP_RETRY_MAYFAIL;
	return gfp;
}

/* Drop from @mask the private nodes not in @user; -EINVAL if none is left. */
static int node_private_prune(nodemask_t *mask, const nodemask_t *user)
{
	nodemask_t bad;

	nodes_and(bad, *mask, node_private_nodes);
	nodes_andnot(bad, bad, *user);
	if (nodes_empty(bad))
		return 0;
	if (nodes_subset(*mask, bad)) {
		pr_info_ratelimited("migrate_pages: private nodes %*pbl are not open to this request (USER_NUMA, cpuset)\n",
				    nodemask_pr_args(&bad));
		return -EINVAL;
	}
	nodes_andnot(*mask, *mask, bad);
	return 0;
}

/*
 * migrate_pages(2): @old and @new may name private nodes only with
 * USER_NUMA.  Others are dropped from a mask that names more (a mask of
 * every node with memory, say); a mask that names only such nodes fails.
 * @allowed (the cpuset of the caller, or of the task whose memory moves)
 * gains the usable ones @new names, unless either cpuset confines.
 */
int node_private_migrate_nodes(nodemask_t *old, nodemask_t *new,
			       nodemask_t *allowed)
{
	nodemask_t user;

	if (!node_private_enabled())
		return 0;
	/* Moving off a node needs its USER_NUMA only; onto it, no cpuset. */
	node_private_user_nodes(&user, NULL, false);
	if (node_private_prune(old, &user))
		return -EINVAL;
	node_private_user_nodes(&user, allowed, true);
	if (node_private_prune(new, &user))
		return -EINVAL;
	nodes_and(user, user, *new);
	nodes_or(*allowed, *allowed, user);
	return 0;
}

/*
 * Nodes of a user request (move_pages, migrate_pages(2)) that it may name:
 * private nodes with memory online and USER_NUMA; as targets (@onto),
 * none if the caller's cpuset or @task_mems (the cpuset of the task whose
 * memory moves) confines.
 */
void node_private_user_nodes(nodemask_t *mask, const nodemask_t *task_mems,
			     bool onto)
{
	int nid;

	nodes_clear(*mask);
	if (!node_private_enabled() ||
	    (onto && !node_private_unconfined(task_mems)))
		return;
	for_each_node_mask(nid, node_private_nodes)
		if (node_state(nid, N_MEMORY_PRIVATE) &&
		    node_allows_user_numa(nid))
			node_set(nid, *mask);
}

#ifdef CONFIG_DEBUG_FS
static const char * const zonelist_names[MAX_ZONELISTS] = {
	[ZONELIST_FALLBACK] = "fallback",
	[ZONELIST_NOFALLBACK] = "nofallback",
	[ZONELIST_PRIVATE] = "private",
	[ZONELIST_PRIVATE_NOFALLBACK] = "private_nofallback",
};

/* "<nid> <list>: <node of each zone, in order>" for every online node. */
static int zonelists_show(struct seq_file *m, void *v)
{
	int nid, list;

	for_each_online_node(nid) {
		for (list = 0; list < MAX_ZONELISTS; list++) {
			struct zonelist *zl = &NODE_DATA(nid)->node_zonelists[list];
			struct zoneref *z;

			seq_printf(m, "%d %s:", nid, zonelist_names[list]);
			for (z = zl->_zonerefs; zonelist_zone(z); z++)
				seq_printf(m, " %d", zonelist_node_idx(z));
			seq_putc(m, '\n');
		}
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(zonelists);

/* "<nid> <caps>" for every registered node: for tests, not an ABI. */
static int caps_show(struct seq_file *m, void *v)
{
	int nid;

	mutex_lock(&node_private_lock);
	for_each_node_mask(nid, node_private_nodes)
		seq_printf(m, "%d %#lx\n", nid, node_private_caps[nid]);
	mutex_unlock(&node_private_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(caps);

static int __init node_private_debugfs_init(void)
{
	struct dentry *dir = debugfs_create_dir("node_private", NULL);

	debugfs_create_file("zonelists", 0400, dir, NULL, &zonelists_fops);
	debugfs_create_file("caps", 0400, dir, NULL, &caps_fops);
	return 0;
}
late_initcall(node_private_debugfs_init);
#endif /* CONFIG_DEBUG_FS */

#ifdef CONFIG_NUMA_PRIVATE_NODES_KUNIT_TEST
#include "tests/node_private_kunit.h"
#endif
