// SPDX-License-Identifier: GPL-2.0
/*
 * Private mode of dax/kmem.  Each device-dax instance gets, in
 * /sys/bus/dax/devices/daxX.Y/:
 *
 *   private          0|1: kmem registers the target node as a private node
 *                    (node_private_register()) before hot-adding the memory
 *   reclaim, user_numa, hotunplug, demotion, numa_balancing, ltpin
 *                    0|1 each: the node's NODE_PRIVATE_CAP_* bits
 *   write_fence      0|1: NODE_PRIVATE_POLICY_WRITE_FENCE
 *
 * They are writable only while the instance is not bound to kmem and
 * holds no registration (-EBUSY): a private node's caps are fixed while
 * its memory is online, and a remove that left memory keeps the node.
 * The write accepts any combination; one the kernel rejects (DEMOTION
 * without RECLAIM, WRITE_FENCE with LTPIN, a cap it does not implement, a
 * node that already has normal memory or another owner) fails the kmem bind instead, with the
 * reason in dmesg.  See Documentation/ABI/testing/sysfs-bus-dax-private.
 */
#include <linux/device.h>
#include <linux/kstrtox.h>
#include <linux/mm.h>
#include <linux/node_private.h>
#include <linux/sysfs.h>

#include "dax-private.h"
#include "bus.h"

static bool dev_dax_kmem_bound(struct device *dev)
{
	return dev->driver &&
	       container_of_const(dev->driver, struct dax_device_driver,
				  drv)->type == DAXDRV_KMEM_TYPE;
}

/* @cap 0 is the "private" switch itself. */
static ssize_t dev_dax_private_show(struct device *dev, char *buf,
				    unsigned long cap)
{
	struct dev_dax_private *p = &to_dev_dax(dev)->private_node;
	bool val;

	down_read(&dax_dev_rwsem);
	val = cap ? p->caps & cap : p->enabled;
	up_read(&dax_dev_rwsem);
	return sysfs_emit(buf, "%d\n", val);
}

static ssize_t dev_dax_private_store(struct device *dev, const char *buf,
				     size_t len, unsigned long cap)
{
	struct dev_dax_private *p = &to_dev_dax(dev)->private_node;
	bool val;
	int rc;

	rc = kstrtobool(buf, &val);
	if (rc)
		return rc;
	rc = down_write_killable(&dax_dev_rwsem);
	if (rc)
		return rc;
	if (dev_dax_kmem_bound(dev) || p->registered)
		rc = -EBUSY;
	else if (!cap)
		p->enabled = val;
	else if (val)
		p->caps |= cap;
	else
		p->caps &= ~cap;
	up_write(&dax_dev_rwsem);
	return rc ? rc : len;
}

#define DEV_DAX_PRIVATE_ATTR(name, cap)					\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	return dev_dax_private_show(dev, buf, cap);			\
}									\
static ssize_t name##_store(struct device *dev,				\
			    struct device_attribute *attr,		\
			    const char *buf, size_t len)		\
{									\
	return dev_dax_private_store(dev, buf, len, cap);		\
}									\
static DEVICE_ATTR_RW(name)

DEV_DAX_PRIVATE_ATTR(private, 0);
DEV_DAX_PRIVATE_ATTR(reclaim, NODE_PRIVATE_CAP_RECLAIM);
DEV_DAX_PRIVATE_ATTR(user_numa, NODE_PRIVATE_CAP_USER_NUMA);
DEV_DAX_PRIVATE_ATTR(hotunplug, NODE_PRIVATE_CAP_HOTUNPLUG);
DEV_DAX_PRIVATE_ATTR(demotion, NODE_PRIVATE_CAP_DEMOTION);
DEV_DAX_PRIVATE_ATTR(numa_balancing, NODE_PRIVATE_CAP_NUMA_BALANCING);
DEV_DAX_PRIVATE_ATTR(ltpin, NODE_PRIVATE_CAP_LTPIN);
DEV_DAX_PRIVATE_ATTR(write_fence, NODE_PRIVATE_POLICY_WRITE_FENCE);

static struct attribute *dev_dax_private_attributes[] = {
	&dev_attr_private.attr,
	&dev_attr_reclaim.attr,
	&dev_attr_user_numa.attr,
	&dev_attr_hotunplug.attr,
	&dev_attr_demotion.attr,
	&dev_attr_numa_balancing.attr,
	&dev_attr_ltpin.attr,
	&dev_attr_write_fence.attr,
	NULL,
};

/* Only kmem acts on them. */
static umode_t dev_dax_private_visible(struct kobject *kobj,
				       struct attribute *a, int n)
{
	return IS_ENABLED(CONFIG_DEV_DAX_KMEM) ? a->mode : 0;
}

const struct attribute_group dev_dax_private_attribute_group = {
	.attrs = dev_dax_private_attributes,
	.is_visible = dev_dax_private_visible,
};

/**
 * dev_dax_private_register - kmem probe: make @nid private if asked to
 * @dev_dax: the instance kmem is binding
 * @nid: its target node
 *
 * Call before the first range is hot-added.  The settings are read under
 * dax_dev_rwsem: a sysfs write either lands before (and is used) or sees
 * kmem bound and fails.  An instance that is not private may not add
 * memory to a private node: it would become the other owner's memory.
 * It holds the node normal until dev_dax_private_probed(), so that no
 * registration slips in between this check and its memory blocks.
 * While registered, the instance holds a reference on its device, so the
 * struct node_private the node points to outlives any failed remove.
 * One private instance per node: a second one fails with -EBUSY (the
 * node has another owner).
 *
 * Return: 0; -EBUSY for an ordinary instance on a private node; -EINVAL
 * for a write-fenced instance with memmap_on_memory; or the error of
 * node_private_register().
 */
int dev_dax_private_register(struct dev_dax *dev_dax, int nid)
{
	struct dev_dax_private *p = &dev_dax->private_node;
	bool enabled, memmap;
	int rc;

	down_read(&dax_dev_rwsem);
	enabled = p->enabled;
	memmap = dev_dax->memmap_on_memory;
	p->np.owner = dev_dax;
	p->np.caps = p->caps;
	up_read(&dax_dev_rwsem);
	if (!enabled) {
		rc = node_private_hold_normal(nid);
		if (rc) {
			dev_warn(&dev_dax->dev,
				 "node %d is private: set 'private' to add memory to it\n",
				 nid);
			return rc;
		}
		p->holds_normal = true;
		return 0;
	}
	/* The kernel writes struct pages all the time: never on the media. */
	if (memmap && (p->np.caps & NODE_PRIVATE_POLICY_WRITE_FENCE)) {
		dev_warn(&dev_dax->dev,
			 "node %d: write_fence needs memmap_on_memory off\n",
			 nid);
		return -EINVAL;
	}
	if (p->registered)	/* kept by a remove that left memory */
		return 0;
	rc = node_private_register(nid, &p->np);
	if (rc) {
		dev_warn(&dev_dax->dev,
			 "node %d cannot become private (caps %#lx): %d\n",
			 nid, p->np.caps, rc);
		return rc;
	}
	p->registered = true;
	get_device(&dev_dax->dev);
	return 0;
}
EXPORT_SYMBOL_GPL(dev_dax_private_register);

/* An ordinary instance's release of the node it held while adding. */
static void dev_dax_private_unhold(struct dev_dax *dev_dax, int nid)
{
	struct dev_dax_private *p = &dev_dax->private_node;

	if (p->holds_normal) {
		node_private_release_normal(nid);
		p->holds_normal = false;
	}
}

/**
 * dev_dax_private_probed - kmem probe added its memory
 * @dev_dax: the instance kmem bound
 * @nid: its target node
 */
void dev_dax_private_probed(struct dev_dax *dev_dax, int nid)
{
	dev_dax_private_unhold(dev_dax, nid);
}
EXPORT_SYMBOL_GPL(dev_dax_private_probed);

/**
 * dev_dax_private_unregister - kmem remove: give the node up
 * @dev_dax: the instance kmem is unbinding
 * @nid: its target node
 *
 * Call when kmem lets go of the instance, or its probe fails.  If some of
 * its memory could not be removed (memory blocks are left, even offline
 * ones), the node stays private and @dev_dax registered: its settings
 * then refuse writes, and a new bind keeps the registration.
 */
void dev_dax_private_unregister(struct dev_dax *dev_dax, int nid)
{
	struct dev_dax_private *p = &dev_dax->private_node;
	int rc;

	dev_dax_private_unhold(dev_dax, nid);
	if (!p->registered)
		return;
	rc = node_private_unregister(nid, &p->np);
	if (rc) {
		dev_warn(&dev_dax->dev, "node %d stays private: %d\n", nid, rc);
		return;
	}
	p->registered = false;
	put_device(&dev_dax->dev);
}
EXPORT_SYMBOL_GPL(dev_dax_private_unregister);
