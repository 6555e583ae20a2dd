// SPDX-License-Identifier: GPL-2.0
/*
 * private_dax: the private mode of dax/kmem (CONFIG_NUMA_PRIVATE_NODES,
 * CONFIG_DEV_DAX_KMEM).
 *
 * Needs a device-dax instance on a memory-only node, as dax_hmem makes
 * from soft-reserved memory in a guest booted with
 * "scripts/vm --private-nodes --dax-nodes 1".  Only kernel sysfs is used:
 * the instance's private and cap attributes, the kmem driver's bind and
 * unbind, and the memory blocks' state files.
 *
 *   bad_input          bad values get -EINVAL; every attribute refuses
 *                      writes (-EBUSY) while kmem holds the instance
 *   user_numa_hotunplug  the onlined memory is private; mbind places
 *                      pages on it; offlining migrates them off; unbind
 *                      gives the node up
 *   hotunplug_off      offlining a block in use fails, data stays
 *   demotion_needs_reclaim  the kmem bind fails and the node stays as
 *                      it was
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/mman.h>

#include "../kselftest_harness.h"
#include "numa_util.h"

#define DAX_DEVS	"/sys/bus/dax/devices/"
#define NODE_SYS	"/sys/devices/system/node/"
#define PAGE		4096UL
#define MB		(1024UL * 1024)

static const char * const attrs[] = {
	"private", "reclaim", "user_numa", "hotunplug", "demotion",
	"numa_balancing", "ltpin", "write_fence",
};

/* The debugfs list of registered private nodes names @nid. */
static bool registered(int nid)
{
	char buf[1024], *line, *save;

	if (nu_read_all("/sys/kernel/debug/node_private/caps", buf,
			sizeof(buf)) < 0)
		return false;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (atoi(line) == nid)
			return true;
	return false;
}

static int set_attr(const char *dev, const char *attr, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), DAX_DEVS "%s/%s", dev, attr);
	return nu_write_str(path, val);
}

/* First device-dax instance with the private attributes on a node
 * that has no memory online (of either kind).
 */
static int find_dax(char *name, size_t len, int *nid)
{
	char path[300];
	struct dirent *de;
	DIR *d = opendir(DAX_DEVS);
	int ret = -1;

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), DAX_DEVS "%s/private",
			 de->d_name);
		if (access(path, W_OK))
			continue;
		snprintf(path, sizeof(path), DAX_DEVS "%s/target_node",
			 de->d_name);
		*nid = nu_read_ll(path);
		if (*nid < 0 || nu_in_nodelist("has_memory", *nid))
			continue;
		snprintf(name, len, "%.*s", (int)len - 1, de->d_name);
		ret = 0;
		break;
	}
	if (d)
		closedir(d);
	return ret;
}

FIXTURE(pd) {
	char dev[64];
	int nid;
};

/* Back to "unplugged": blocks offline, kmem unbound, every attribute 0. */
static int reset(const char *dev, int nid)
{
	unsigned int i;
	int ret = 0;

	if (nu_dax_kmem_bound(dev)) {
		ret = nu_node_blocks_to(nid, "offline");
		if (!ret)
			ret = nu_dax_kmem("unbind", dev);
	}
	for (i = 0; !ret && i < ARRAY_SIZE(attrs); i++)
		ret = set_attr(dev, attrs[i], "0");
	return ret;
}

/*
 * scripts/test sets NUMA_PRIVATE_DAX_REQUIRED in the guest it boots with
 * a dax node: there a missing device is a failure, not a skip.
 */
FIXTURE_SETUP(pd)
{
	bool required = getenv("NUMA_PRIVATE_DAX_REQUIRED");
	int found = access(NU_KMEM "bind", W_OK) ? -1 :
		    find_dax(self->dev, sizeof(self->dev), &self->nid);

	if (required)
		ASSERT_EQ(0, found) TH_LOG("no private-capable device-dax");
	if (access(NU_KMEM "bind", W_OK))
		NU_SKIP(return, "no dax/kmem driver (CONFIG_DEV_DAX_KMEM)");
	if (found)
		NU_SKIP(return,
			"no device-dax with a private attribute on a memoryless node (CONFIG_NUMA_PRIVATE_NODES; scripts/vm --private-nodes --dax-nodes 1)");
	ASSERT_EQ(0, reset(self->dev, self->nid));
	ASSERT_FALSE(registered(self->nid));
}

FIXTURE_TEARDOWN(pd)
{
	EXPECT_EQ(0, reset(self->dev, self->nid));
	EXPECT_FALSE(registered(self->nid));
}

TEST_F(pd, bad_input)
{
	unsigned int i;

	EXPECT_EQ(-EINVAL, set_attr(self->dev, "private", "maybe"));
	EXPECT_EQ(-EINVAL, set_attr(self->dev, "ltpin", "2"));
	ASSERT_EQ(0, set_attr(self->dev, "private", "1"));
	ASSERT_EQ(0, nu_dax_kmem("bind", self->dev));
	ASSERT_TRUE(nu_dax_kmem_bound(self->dev));
	EXPECT_TRUE(registered(self->nid));
	for (i = 0; i < ARRAY_SIZE(attrs); i++)
		EXPECT_EQ(-EBUSY, set_attr(self->dev, attrs[i], "0"))
			TH_LOG("attribute %u writable while bound", i);
}

TEST_F(pd, user_numa_hotunplug)
{
	size_t len = 16 * MB;
	char *p;

	ASSERT_EQ(0, set_attr(self->dev, "private", "1"));
	ASSERT_EQ(0, set_attr(self->dev, "user_numa", "1"));
	ASSERT_EQ(0, set_attr(self->dev, "hotunplug", "1"));
	ASSERT_EQ(0, nu_dax_kmem("bind", self->dev));
	ASSERT_EQ(0, nu_node_blocks_to(self->nid, "online_movable"));
	EXPECT_TRUE(nu_in_nodelist("has_private_memory", self->nid));
	EXPECT_FALSE(nu_in_nodelist("has_memory", self->nid));

	p = nu_anon_bound(len, MPOL_BIND, self->nid, 0xda);
	ASSERT_NE(NULL, p);
	EXPECT_EQ((long)(len / PAGE), nu_pages_on(p, len, self->nid));
	EXPECT_EQ(0, nu_node_blocks_to(self->nid, "offline"));
	EXPECT_EQ(0, nu_pages_on(p, len, self->nid));
	EXPECT_TRUE(nu_intact(p, len, 0xda));
	EXPECT_FALSE(nu_in_nodelist("has_private_memory", self->nid));
	munmap(p, len);

	EXPECT_EQ(0, nu_dax_kmem("unbind", self->dev));
	EXPECT_FALSE(registered(self->nid));
}

TEST_F(pd, hotunplug_off)
{
	size_t len = 16 * MB;
	char *p;

	ASSERT_EQ(0, set_attr(self->dev, "private", "1"));
	ASSERT_EQ(0, set_attr(self->dev, "user_numa", "1"));
	ASSERT_EQ(0, nu_dax_kmem("bind", self->dev));
	ASSERT_EQ(0, nu_node_blocks_to(self->nid, "online_movable"));
	p = nu_anon_bound(len, MPOL_BIND, self->nid, 0xdb);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EBUSY, nu_node_blocks_to(self->nid, "offline"));
	EXPECT_TRUE(nu_in_nodelist("has_private_memory", self->nid));
	EXPECT_EQ((long)(len / PAGE), nu_pages_on(p, len, self->nid));
	EXPECT_TRUE(nu_intact(p, len, 0xdb));
	munmap(p, len);
	/* Empty blocks offline without HOTUNPLUG (the teardown does it). */
}

TEST_F(pd, demotion_needs_reclaim)
{
	ASSERT_EQ(0, set_attr(self->dev, "private", "1"));
	ASSERT_EQ(0, set_attr(self->dev, "demotion", "1"));
	EXPECT_NE(0, nu_dax_kmem("bind", self->dev));
	EXPECT_FALSE(nu_dax_kmem_bound(self->dev));
	EXPECT_FALSE(registered(self->nid));
	EXPECT_FALSE(nu_in_nodelist("has_private_memory", self->nid));
}

TEST_HARNESS_MAIN
