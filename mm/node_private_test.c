// SPDX-License-Identifier: GPL-2.0
/*
 * Test provider for private memory NUMA nodes.
 *
 * Boot with a memory-only node whose whole range is carved out with
 * memmap=SIZE!START: the node comes up memoryless and the range shows in
 * /proc/iomem as an unclaimed "Persistent Memory (legacy)" resource.  This
 * driver claims such ranges and hot-adds them with
 * add_memory_driver_managed(), the path a CXL or dax/kmem driver takes,
 * after registering the node as private.  Everything is driven from
 * /sys/kernel/debug/node_private_test/:
 *
 *   ranges      r  "<nid> <start> <size> <free|claimed> <caps>" per range
 *   claim       w  "<nid> <caps> <movable|kernel> [<adistance>]": register,
 *               add, online; an adistance gives the node a memory type
 *               (its memory tier, with the DEMOTION cap), as dax/kmem does
 *   release     w  "<nid>": offline and remove every range, unregister
 *   register    w  "<nid> <caps> <owner 0|1>": node_private_register() only
 *   unregister  w  "<nid>": node_private_unregister() only
 *   anon<nid>   mmap(MAP_PRIVATE): anonymous memory bound to <nid>,
 *               whatever its USER_NUMA cap
 *   probe       w "<pages>", then r: ordinary allocations aimed at every
 *               online node; "leaks <n> pages <n>"
 *   private_alloc w "<nid> <pages>", then r: folio_alloc_node_private()
 *               until it fails; "allocated <n> spilled <n>"
 *   leak        w "<nid> <0|1>": DELIBERATELY BREAKS ISOLATION by putting
 *               the node in N_MEMORY, so tests can show they detect it
 */

#define pr_fmt(fmt) "node_private_test: " fmt

#include <linux/debugfs.h>
#include <linux/gfp.h>
#include <linux/ioport.h>
#include <linux/memory.h>
#include <linux/memory_hotplug.h>
#include <linux/memory-tiers.h>
#include <linux/mempolicy.h>
#include <linux/mm.h>
#include <linux/node_private.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#define NPT_MAX_RANGES	8
#define NPT_RES_NAME	"System RAM (node_private_test)"

struct npt_range {
	u64 start;
	u64 size;
	int nid;
	bool claimed;
};

static struct npt_range npt_ranges[NPT_MAX_RANGES];
static int npt_nr_ranges;
/* Two owners per node, so tests can try a second registrant. */
static struct node_private npt_owner[2][MAX_NUMNODES];
static DEFINE_MUTEX(npt_lock);
/* The memory type a claim gave each node, until its release. */
static struct memory_dev_type *npt_mtype[MAX_NUMNODES];
static char npt_result[64];

static int npt_find_range(struct resource *res, void *arg)
{
	u64 block = memory_block_size_bytes();
	struct npt_range *r;

	if (npt_nr_ranges == NPT_MAX_RANGES)
		return 0;
	if (!IS_ALIGNED(res->start, block) ||
	    !IS_ALIGNED(resource_size(res), block)) {
		pr_info("%pR is not aligned to memory blocks, skipped\n", res);
		return 0;
	}
	r = &npt_ranges[npt_nr_ranges++];
	r->start = res->start;
	r->size = resource_size(res);
	r->nid = phys_to_target_node(res->start);
	return 0;
}

static int npt_online_block(struct memory_block *mem, void *arg)
{
	int ret;

	mem->online_type = *(enum mmop *)arg;
	ret = device_online(&mem->dev);
	return ret > 0 ? 0 : ret;
}

static bool npt_node_claimed(int nid)
{
	int i;

	for (i = 0; i < npt_nr_ranges; i++)
		if (npt_ranges[i].nid == nid && npt_ranges[i].claimed)
			return true;
	return false;
}

/* Register owner @owner of @nid; its caps stay as they were on failure. */
static int npt_register(int nid, int owner, unsigned long caps)
{
	struct node_private *np = &npt_owner[owner][nid];
	unsigned long old = np->caps;
	int ret;

	np->owner = np;
	np->caps = caps;
	ret = node_private_register(nid, np);
	if (ret)
		np->caps = old;
	return ret;
}

static int npt_release(int nid);

/* Called with npt_lock held; all ranges of @nid or none. */
static int npt_claim(int nid, unsigned long caps, enum mmop type, int adist)
{
	int i, ret, added = 0;

	if (npt_node_claimed(nid))
		return -EBUSY;
	ret = npt_register(nid, 0, caps);
	if (ret)
		return ret;
	if (adist > 0 && !npt_mtype[nid]) {
		struct memory_dev_type *mtype = alloc_memory_type(adist);

		if (IS_ERR(mtype)) {
			node_private_unregister(nid, &npt_owner[0][nid]);
			return PTR_ERR(mtype);
		}
		init_node_memory_type(nid, mtype);
		npt_mtype[nid] = mtype;
	}
	for (i = 0; i < npt_nr_ranges; i++) {
		struct npt_range *r = &npt_ranges[i];

		if (r->nid != nid)
			continue;
		ret = add_memory_driver_managed(nid, r->start, r->size,
						NPT_RES_NAME, MHP_NONE);
		if (ret)
			break;
		r->claimed = true;
		added++;
		lock_device_hotplug();
		ret = walk_memory_blocks(r->start, r->size, &type,
					 npt_online_block);
		unlock_device_hotplug();
		if (ret)
			break;
	}
	if (!ret && !added)
		ret = -ENODEV;
	/* Undo: offline and remove what was added, unregister. */
	if (ret && npt_release(nid))
		pr_warn("node %d: failed claim not undone\n", nid);
	return ret;
}

/* A long-term pin would make offlining retry until a signal. */
static bool npt_range_pinned(struct npt_range *r)
{
	unsigned long pfn;

	for (pfn = PHYS_PFN(r->start); pfn < PHYS_PFN(r->start + r->size);
	     pfn++) {
		struct page *page = pfn_to_online_page(pfn);

		if (page && folio_maybe_dma_pinned(page_folio(page)))
			return true;
		cond_resched();
	}
	return false;
}

static int npt_release(int nid)
{
	int i, ret;

	for (i = 0; i < npt_nr_ranges; i++) {
		struct npt_range *r = &npt_ranges[i];

		if (r->nid != nid || !r->claimed)
			continue;
		if (npt_range_pinned(r)) {
			pr_info("node %d has pinned pages, not released\n",
				nid);
			return -EBUSY;
		}
		ret = offline_and_remove_memory(r->start, r->size);
		if (ret)
			return ret;
		r->claimed = false;
	}
	ret = node_private_unregister(nid, &npt_owner[0][nid]);
	if (!ret && npt_mtype[nid]) {
		clear_node_memory_type(nid, npt_mtype[nid]);
		put_memory_type(npt_mtype[nid]);
		npt_mtype[nid] = NULL;
	}
	return ret;
}

static int npt_parse(const char __user *ubuf, size_t len, char *buf,
		     size_t size)
{
	if (!len || len >= size)
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	return 0;
}

static bool npt_valid_nid(int nid)
{
	return nid >= 0 && nid < MAX_NUMNODES && node_possible(nid);
}

static ssize_t claim_write(struct file *file, const char __user *ubuf,
			   size_t len, loff_t *ppos)
{
	char buf[64], type[16];
	unsigned long caps;
	enum mmop mmop;
	int nid, ret, adist = 0;

	ret = npt_parse(ubuf, len, buf, sizeof(buf));
	if (ret)
		return ret;
	if (sscanf(buf, "%d %li %15s %d", &nid, &caps, type, &adist) < 3 ||
	    !npt_valid_nid(nid) || adist < 0)
		return -EINVAL;
	if (!strcmp(type, "movable"))
		mmop = MMOP_ONLINE_MOVABLE;
	else if (!strcmp(type, "kernel"))
		mmop = MMOP_ONLINE_KERNEL;
	else
		return -EINVAL;
	mutex_lock(&npt_lock);
	ret = npt_claim(nid, caps, mmop, adist);
	mutex_unlock(&npt_lock);
	return ret ? ret : len;
}

static ssize_t nid_write(struct file *file, const char __user *ubuf,
			 size_t len, int (*fn)(int nid))
{
	char buf[32];
	int nid, ret;

	ret = npt_parse(ubuf, len, buf, sizeof(buf));
	if (ret)
		return ret;
	if (kstrtoint(strim(buf), 0, &nid) || !npt_valid_nid(nid))
		return -EINVAL;
	mutex_lock(&npt_lock);
	ret = fn(nid);
	mutex_unlock(&npt_lock);
	return ret ? ret : len;
}

static ssize_t release_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	return nid_write(file, ubuf, len, npt_release);
}

/* Unregister @nid for whichever of the provider's owners holds it. */
static int npt_unregister(int nid)
{
	int ret = node_private_unregister(nid, &npt_owner[0][nid]);

	if (ret == -EPERM)
		ret = node_private_unregister(nid, &npt_owner[1][nid]);
	return ret;
}

static ssize_t unregister_write(struct file *file, const char __user *ubuf,
				size_t len, loff_t *ppos)
{
	return nid_write(file, ubuf, len, npt_unregister);
}

static ssize_t register_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *ppos)
{
	unsigned long caps;
	int nid, owner, ret;
	char buf[64];

	ret = npt_parse(ubuf, len, buf, sizeof(buf));
	if (ret)
		return ret;
	if (sscanf(buf, "%d %li %d", &nid, &caps, &owner) != 3 ||
	    !npt_valid_nid(nid) || owner < 0 || owner > 1)
		return -EINVAL;
	mutex_lock(&npt_lock);
	ret = npt_register(nid, owner, caps);
	mutex_unlock(&npt_lock);
	return ret ? ret : len;
}

static int ranges_show(struct seq_file *m, void *v)
{
	int i;

	mutex_lock(&npt_lock);
	for (i = 0; i < npt_nr_ranges; i++) {
		struct npt_range *r = &npt_ranges[i];

		seq_printf(m, "%d %#llx %#llx %s %#lx\n", r->nid, r->start,
			   r->size, r->claimed ? "claimed" : "free",
			   r->claimed ? npt_owner[0][r->nid].caps : 0UL);
	}
	mutex_unlock(&npt_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ranges);

/* Hold up to @max pages from @nid with @gfp; count those on private nodes. */
static unsigned long npt_probe_node(int nid, gfp_t gfp, unsigned long max,
				    unsigned long *got)
{
	unsigned long leaks = 0, n;
	struct page *page, *next;
	LIST_HEAD(held);

	for (n = 0; n < max; n++) {
		page = alloc_pages_node(nid, gfp | __GFP_NOWARN, 0);
		if (!page)
			break;
		if (node_is_private(page_to_nid(page)))
			leaks++;
		list_add(&page->lru, &held);
		if (!(n % 1024))
			cond_resched();
	}
	*got += n;
	list_for_each_entry_safe(page, next, &held, lru) {
		__free_page(page);
		if (!(--n % 1024))
			cond_resched();
	}
	return leaks;
}

static unsigned long npt_probe_slab(int nid, unsigned long *got)
{
	unsigned long leaks = 0;
	void *obj[64];
	int i;

	for (i = 0; i < ARRAY_SIZE(obj); i++) {
		obj[i] = kmalloc_node(512, GFP_KERNEL | __GFP_NOWARN, nid);
		if (obj[i] && node_is_private(page_to_nid(virt_to_page(obj[i]))))
			leaks++;
	}
	for (i = 0; i < ARRAY_SIZE(obj); i++)
		kfree(obj[i]);
	*got += ARRAY_SIZE(obj);
	return leaks;
}

/*
 * Ordinary allocations aimed at every online node, private ones included:
 * __GFP_THISNODE up to @max pages per node (memory pressure), plain and
 * movable preferred-node allocations, and slab.
 */
static ssize_t probe_write(struct file *file, const char __user *ubuf,
			   size_t len, loff_t *ppos)
{
	unsigned long max, leaks = 0, got = 0;
	char buf[32];
	int nid, ret;

	ret = npt_parse(ubuf, len, buf, sizeof(buf));
	if (ret)
		return ret;
	if (kstrtoul(strim(buf), 0, &max) || !max)
		return -EINVAL;
	for_each_online_node(nid) {
		leaks += npt_probe_node(nid, GFP_KERNEL | __GFP_THISNODE |
					__GFP_NORETRY, max, &got);
		leaks += npt_probe_node(nid, GFP_HIGHUSER_MOVABLE |
					__GFP_THISNODE | __GFP_NORETRY, max,
					&got);
		leaks += npt_probe_node(nid, GFP_KERNEL, 256, &got);
		leaks += npt_probe_node(nid, GFP_HIGHUSER_MOVABLE, 256, &got);
		leaks += npt_probe_slab(nid, &got);
	}
	mutex_lock(&npt_lock);
	snprintf(npt_result, sizeof(npt_result), "leaks %lu pages %lu\n",
		 leaks, got);
	mutex_unlock(&npt_lock);
	return len;
}

static ssize_t result_read(struct file *file, char __user *ubuf, size_t len,
			   loff_t *ppos)
{
	char buf[sizeof(npt_result)];

	mutex_lock(&npt_lock);
	strscpy(buf, npt_result, sizeof(buf));
	mutex_unlock(&npt_lock);
	return simple_read_from_buffer(ubuf, len, ppos, buf, strlen(buf));
}

/* Exhaust @nid through the owner's entry point; nothing may spill. */
static ssize_t private_alloc_write(struct file *file, const char __user *ubuf,
				   size_t len, loff_t *ppos)
{
	unsigned long max, n, spilled = 0;
	struct folio *folio, *next;
	LIST_HEAD(held);
	char buf[64];
	int nid, ret;

	ret = npt_parse(ubuf, len, buf, sizeof(buf));
	if (ret)
		return ret;
	if (sscanf(buf, "%d %lu", &nid, &max) != 2 || !npt_valid_nid(nid) ||
	    !node_is_private(nid))
		return -EINVAL;
	for (n = 0; n < max; n++) {
		folio = folio_alloc_node_private(GFP_HIGHUSER_MOVABLE |
						 __GFP_NOWARN, 0, nid);
		if (!folio)
			break;
		if (folio_nid(folio) != nid)
			spilled++;
		list_add(&folio->lru, &held);
		if (!(n % 1024))
			cond_resched();
	}
	max = n;
	list_for_each_entry_safe(folio, next, &held, lru) {
		folio_put(folio);
		if (!(--max % 1024))
			cond_resched();
	}
	mutex_lock(&npt_lock);
	snprintf(npt_result, sizeof(npt_result), "allocated %lu spilled %lu\n",
		 n, spilled);
	mutex_unlock(&npt_lock);
	return len;
}

static ssize_t leak_write(struct file *file, const char __user *ubuf,
			  size_t len, loff_t *ppos)
{
	int nid, on, ret;
	char buf[32];

	ret = npt_parse(ubuf, len, buf, sizeof(buf));
	if (ret)
		return ret;
	if (sscanf(buf, "%d %d", &nid, &on) != 2 || !npt_valid_nid(nid) ||
	    (on != 0 && on != 1) || !node_is_private(nid))
		return -EINVAL;
	mutex_lock(&npt_lock);
	mem_hotplug_begin();
	/*
	 * SLUB never set up this node, so a slab page from it would crash:
	 * only a node whose memory is all ZONE_MOVABLE may leak.
	 */
	if (on && (!NODE_DATA(nid)->node_present_pages ||
		   NODE_DATA(nid)->node_zones[ZONE_MOVABLE].present_pages !=
		   NODE_DATA(nid)->node_present_pages)) {
		mem_hotplug_done();
		mutex_unlock(&npt_lock);
		pr_info("node %d: leak needs memory, all online movable\n", nid);
		return -EINVAL;
	}
	pr_warn("node %d: isolation %s on request\n", nid,
		on ? "BROKEN" : "restored");
	if (on)
		node_set_state(nid, N_MEMORY);
	else
		node_clear_state(nid, N_MEMORY);
	build_all_zonelists(NULL);
	mem_hotplug_done();
	mutex_unlock(&npt_lock);
	return len;
}

static int anon_mmap(struct file *file, struct vm_area_struct *vma)
{
	int nid = (long)file->private_data;
	struct mempolicy *pol;

	if (vma->vm_flags & VM_SHARED)
		return -EINVAL;
	pol = mpol_new_private(nid);
	if (IS_ERR(pol))
		return PTR_ERR(pol);
	vma_set_anonymous(vma);
	vma->vm_policy = pol;
	return 0;
}

#define NPT_WO_FOPS(name)						\
static const struct file_operations name##_fops = {			\
	.write = name##_write,						\
	.llseek = noop_llseek,						\
}

NPT_WO_FOPS(claim);
NPT_WO_FOPS(release);
NPT_WO_FOPS(register);
NPT_WO_FOPS(unregister);
NPT_WO_FOPS(leak);

static const struct file_operations probe_fops = {
	.write = probe_write,
	.read = result_read,
	.llseek = noop_llseek,
};

static const struct file_operations private_alloc_fops = {
	.write = private_alloc_write,
	.read = result_read,
	.llseek = noop_llseek,
};

static const struct file_operations anon_fops = {
	.open = simple_open,
	.mmap = anon_mmap,
	.llseek = noop_llseek,
};

static int __init node_private_test_init(void)
{
	struct dentry *dir;
	int i, j;

	walk_iomem_res_desc(IORES_DESC_PERSISTENT_MEMORY_LEGACY,
			    IORESOURCE_MEM, 0, -1, NULL, npt_find_range);
	dir = debugfs_create_dir("node_private_test", NULL);
	debugfs_create_file("ranges", 0400, dir, NULL, &ranges_fops);
	debugfs_create_file("claim", 0200, dir, NULL, &claim_fops);
	debugfs_create_file("release", 0200, dir, NULL, &release_fops);
	debugfs_create_file("register", 0200, dir, NULL, &register_fops);
	debugfs_create_file("unregister", 0200, dir, NULL, &unregister_fops);
	debugfs_create_file("leak", 0200, dir, NULL, &leak_fops);
	debugfs_create_file("probe", 0600, dir, NULL, &probe_fops);
	debugfs_create_file("private_alloc", 0600, dir, NULL,
			    &private_alloc_fops);
	for (i = 0; i < npt_nr_ranges; i++) {
		char name[16];

		for (j = 0; j < i; j++)
			if (npt_ranges[j].nid == npt_ranges[i].nid)
				break;
		if (j < i || npt_ranges[i].nid == NUMA_NO_NODE)
			continue;
		snprintf(name, sizeof(name), "anon%d", npt_ranges[i].nid);
		/* No proxy: the proxy fops have no mmap. */
		debugfs_create_file_unsafe(name, 0600, dir,
					   (void *)(long)npt_ranges[i].nid,
					   &anon_fops);
	}
	pr_info("%d carved range(s)\n", npt_nr_ranges);
	return 0;
}
late_initcall(node_private_test_init);
