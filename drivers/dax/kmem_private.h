/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private mode of dax/kmem: hot-add a device-dax instance as the memory of
 * a private NUMA node (Documentation/mm/numa_private_nodes.rst).
 */
#ifndef __DAX_KMEM_PRIVATE_H__
#define __DAX_KMEM_PRIVATE_H__

#include <linux/device.h>
#include <linux/node_private.h>
#include <linux/rwsem.h>

/**
 * struct dev_dax_private - private-node settings of a device-dax instance
 * @enabled: kmem registers the target node as private before hot-adding
 * @caps: NODE_PRIVATE_CAP_* bits, checked when kmem binds
 * @np: the registration, while @registered
 * @registered: kmem holds the node through @np
 * @holds_normal: an ordinary instance's probe keeps the node from
 *	turning private (node_private_hold_normal())
 *
 * @enabled and @caps change only while kmem is not bound and nothing is
 * registered (sysfs returns -EBUSY otherwise), so kmem reads them once at
 * probe.
 */
struct dev_dax_private {
	bool enabled;
	unsigned long caps;
	struct node_private np;
	bool registered;
	bool holds_normal;
};

struct dev_dax;

#ifdef CONFIG_NUMA_PRIVATE_NODES
extern const struct attribute_group dev_dax_private_attribute_group;
extern struct rw_semaphore dax_dev_rwsem;	/* drivers/dax/bus.c */

int dev_dax_private_register(struct dev_dax *dev_dax, int nid);
void dev_dax_private_probed(struct dev_dax *dev_dax, int nid);
void dev_dax_private_unregister(struct dev_dax *dev_dax, int nid);
#else
static inline int dev_dax_private_register(struct dev_dax *dev_dax, int nid)
{
	return 0;
}

static inline void dev_dax_private_probed(struct dev_dax *dev_dax, int nid)
{
}

static inline void dev_dax_private_unregister(struct dev_dax *dev_dax,
					      int nid)
{
}
#endif /* CONFIG_NUMA_PRIVATE_NODES */

#endif /* __DAX_KMEM_PRIVATE_H__ */
