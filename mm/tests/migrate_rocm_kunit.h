/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for the ROCM eligibility rules (mm/migrate_rocm.c): each
 * rule is tested on its own, negated, against an otherwise eligible
 * folio or mapping.  Included from mm/migrate_rocm.c.
 */
#include <kunit/test.h>

/* An order-0 page-cache folio that ROCM may move. */
static const struct rocm_folio_facts rocm_file_ok = {
	.lru = true, .plain_aops = true, .ref_count = 3, .expected_refs = 3,
};

/* A COW-shared anon folio that ROCM may move. */
static const struct rocm_folio_facts rocm_anon_ok = {
	.lru = true, .anon = true, .dirty = true, .ref_count = 3,
	.expected_refs = 3,
};

struct rocm_folio_case {
	const char *name;
	void (*change)(struct rocm_folio_facts *f);
	enum rocm_reason file;	/* verdict for the page-cache folio */
	enum rocm_reason anon;	/* verdict for the anon folio */
};

static void rf_none(struct rocm_folio_facts *f) { }

static void rf_large(struct rocm_folio_facts *f)
{
	f->order = 1;
}

static void rf_thp(struct rocm_folio_facts *f)
{
	f->order = 9;
}

static void rf_not_lru(struct rocm_folio_facts *f)
{
	f->lru = false;
}

static void rf_hugetlb(struct rocm_folio_facts *f)
{
	f->hugetlb = true;
}

static void rf_writeback(struct rocm_folio_facts *f)
{
	f->writeback = true;
}

static void rf_dirty(struct rocm_folio_facts *f)
{
	f->dirty = true;
}

static void rf_clean(struct rocm_folio_facts *f)
{
	f->dirty = false;
}

static void rf_pinned(struct rocm_folio_facts *f)
{
	f->maybe_pinned = true;
}

static void rf_extra_ref(struct rocm_folio_facts *f)
{
	f->ref_count++;
}

static void rf_fewer_refs(struct rocm_folio_facts *f)
{
	f->ref_count--;
}

/* KSM: anon, never exclusive, mapped read-only; the anon rules decide */
static void rf_ksm(struct rocm_folio_facts *f)
{
	f->anon_exclusive = false;
}

/* tmpfs with a shared writable mapping somewhere (no page_mkwrite) */
static void rf_shmem_writable(struct rocm_folio_facts *f)
{
	f->shmem_writable = true;
}

static void rf_swapcache(struct rocm_folio_facts *f)
{
	f->swapcache = true;
}

static void rf_mlocked(struct rocm_folio_facts *f)
{
	f->mlocked = true;
}

static void rf_private(struct rocm_folio_facts *f)
{
	f->private = true;
}

static void rf_odd_aops(struct rocm_folio_facts *f)
{
	f->plain_aops = false;
}

static void rf_exclusive(struct rocm_folio_facts *f)
{
	f->anon_exclusive = true;
}

static const struct rocm_folio_case rocm_folio_cases[] = {
	{ "eligible",		rf_none,	ROCM_OK,	ROCM_OK },
	{ "order-1",		rf_large,	ROCM_LARGE,	ROCM_LARGE },
	{ "pmd-order",		rf_thp,		ROCM_LARGE,	ROCM_LARGE },
	{ "not on the LRU",	rf_not_lru,	ROCM_NOT_LRU,	ROCM_NOT_LRU },
	{ "hugetlb",		rf_hugetlb,	ROCM_HUGETLB,	ROCM_HUGETLB },
	{ "under writeback",	rf_writeback,	ROCM_WRITEBACK,	ROCM_WRITEBACK },
	/* PG_dirty stops page cache only: anon carries it over */
	{ "PG_dirty",		rf_dirty,	ROCM_DIRTY,	ROCM_OK },
	{ "clean",		rf_clean,	ROCM_OK,	ROCM_OK },
	{ "maybe DMA-pinned",	rf_pinned,	ROCM_PINNED,	ROCM_PINNED },
	{ "unexplained ref",	rf_extra_ref,	ROCM_REFS,	ROCM_REFS },
	{ "refs below expected", rf_fewer_refs,	ROCM_REFS,	ROCM_REFS },
	/* a KSM folio is write-protected and never written in place */
	{ "KSM",		rf_ksm,		ROCM_OK,	ROCM_OK },
	{ "swapcache",		rf_swapcache,	ROCM_SWAPCACHE,	ROCM_SWAPCACHE },
	{ "mlocked",		rf_mlocked,	ROCM_MLOCKED,	ROCM_MLOCKED },
	{ "PG_private",		rf_private,	ROCM_PRIVATE,	ROCM_PRIVATE },
	/* a_ops only matter for page cache */
	{ "special a_ops",	rf_odd_aops,	ROCM_MAPPING,	ROCM_OK },
	/* exclusivity only matters for anon */
	{ "anon exclusive",	rf_exclusive,	ROCM_OK,	ROCM_EXCLUSIVE },
	{ "shmem writably mapped", rf_shmem_writable, ROCM_SHARED_WRITE, ROCM_OK },
};

static void rocm_test_folio_rules(struct kunit *test)
{
	for (int i = 0; i < ARRAY_SIZE(rocm_folio_cases); i++) {
		const struct rocm_folio_case *c = &rocm_folio_cases[i];
		struct rocm_folio_facts f;

		f = rocm_file_ok;
		c->change(&f);
		KUNIT_EXPECT_EQ_MSG(test, c->file, rocm_check_folio(&f),
				    "page cache, %s", c->name);
		f = rocm_anon_ok;
		c->change(&f);
		KUNIT_EXPECT_EQ_MSG(test, c->anon, rocm_check_folio(&f),
				    "anon, %s", c->name);
	}
}

/* A read-only PROT_READ shared file mapping and a COW-shared anon PTE. */
static const struct rocm_pte_facts rocm_pte_file_ok = {
	.vm_shared = true,
};

static const struct rocm_pte_facts rocm_pte_anon_ok = {
	.anon = true, .vm_maywrite = true,
};

struct rocm_pte_case {
	const char *name;
	void (*change)(struct rocm_pte_facts *p);
	enum rocm_reason file;
	enum rocm_reason anon;
};

static void rp_none(struct rocm_pte_facts *p) { }

static void rp_write(struct rocm_pte_facts *p)
{
	p->pte_write = true;
}

static void rp_dirty(struct rocm_pte_facts *p)
{
	p->pte_dirty = true;
}

static void rp_locked(struct rocm_pte_facts *p)
{
	p->vm_locked = true;
}

static void rp_excl(struct rocm_pte_facts *p)
{
	p->anon_exclusive = true;
}

/* shared and may become writable, no page_mkwrite: tmpfs opened O_RDWR */
static void rp_shmem_rw(struct rocm_pte_facts *p)
{
	p->vm_shared = true;
	p->vm_maywrite = true;
}

/* the same with page_mkwrite: ext4 opened O_RDWR, mapped PROT_READ */
static void rp_mkwrite_rw(struct rocm_pte_facts *p)
{
	rp_shmem_rw(p);
	p->page_mkwrite = true;
}

/* a write-protect (mprotect, NUMA hint) has not flushed yet */
static void rp_flush_pending(struct rocm_pte_facts *p)
{
	p->flush_pending = true;
}

/* private file mapping that may be written: writes copy */
static void rp_private_rw(struct rocm_pte_facts *p)
{
	p->vm_shared = false;
	p->vm_maywrite = true;
}

static const struct rocm_pte_case rocm_pte_cases[] = {
	{ "eligible",		 rp_none,	ROCM_OK,	   ROCM_OK },
	{ "writable PTE",	 rp_write,	ROCM_PTE_WRITE,	   ROCM_PTE_WRITE },
	/* a read-only anon PTE may stay dirty after fork */
	{ "dirty PTE",		 rp_dirty,	ROCM_PTE_DIRTY,	   ROCM_OK },
	{ "VM_LOCKED",		 rp_locked,	ROCM_MLOCKED,	   ROCM_MLOCKED },
	{ "anon exclusive",	 rp_excl,	ROCM_OK,	   ROCM_EXCLUSIVE },
	{ "shared maywrite, no mkwrite", rp_shmem_rw, ROCM_SHARED_WRITE, ROCM_OK },
	{ "shared maywrite, mkwrite", rp_mkwrite_rw, ROCM_OK,	   ROCM_OK },
	{ "private maywrite",	 rp_private_rw,	ROCM_OK,	   ROCM_OK },
	{ "TLB flush pending",	 rp_flush_pending, ROCM_FLUSH_PENDING, ROCM_FLUSH_PENDING },
};

static void rocm_test_pte_rules(struct kunit *test)
{
	for (int i = 0; i < ARRAY_SIZE(rocm_pte_cases); i++) {
		const struct rocm_pte_case *c = &rocm_pte_cases[i];
		struct rocm_pte_facts p;

		p = rocm_pte_file_ok;
		c->change(&p);
		KUNIT_EXPECT_EQ_MSG(test, c->file, rocm_check_pte(&p),
				    "page cache, %s", c->name);
		p = rocm_pte_anon_ok;
		c->change(&p);
		KUNIT_EXPECT_EQ_MSG(test, c->anon, rocm_check_pte(&p),
				    "anon, %s", c->name);
	}
}

/*
 * The switched PTE is built from the VMA's protection: read-only even
 * where that protection is writable, without a NUMA hint's PROT_NONE,
 * and keeping the old PTE's young, dirty and soft-dirty bits.  The
 * protections come from vm_get_page_prot(), as a VMA's do: arm64 with
 * LPA2 clears PTE_SHARED there (those bits are address bits), while the
 * raw PAGE_SHARED still has them.
 */
static void rocm_test_make_pte(struct kunit *test)
{
	const unsigned long pfn = 0x1234;
	const pgprot_t shared =
		vm_get_page_prot(VM_READ | VM_WRITE | VM_SHARED);
	const pgprot_t ro = vm_get_page_prot(VM_READ);
	pte_t old = pfn_pte(pfn + 1, ro), pte;

	pte = rocm_make_pte(shared, pfn, old);
	KUNIT_EXPECT_EQ(test, pfn, pte_pfn(pte));
	KUNIT_EXPECT_TRUE(test, pte_present(pte));
	KUNIT_EXPECT_FALSE(test, pte_write(pte));

	pte = rocm_make_pte(ro, pfn, pte_mkold(old));
	KUNIT_EXPECT_FALSE(test, pte_young(pte));
	KUNIT_EXPECT_FALSE(test, pte_dirty(pte));
	pte = rocm_make_pte(ro, pfn, pte_mkyoung(pte_mkdirty(old)));
	KUNIT_EXPECT_TRUE(test, pte_young(pte));
	KUNIT_EXPECT_TRUE(test, pte_dirty(pte));
	KUNIT_EXPECT_FALSE(test, pte_write(pte));
	pte = rocm_make_pte(ro, pfn, pte_mksoft_dirty(old));
	if (IS_ENABLED(CONFIG_MEM_SOFT_DIRTY))
		KUNIT_EXPECT_TRUE(test, pte_soft_dirty(pte));
	/*
	 * Dirty but not soft-dirty (clear_refs 4 after the write): x86's
	 * pte_mkdirty() also sets soft-dirty, which must not come back.
	 */
	pte = rocm_make_pte(ro, pfn, pte_clear_soft_dirty(pte_mkdirty(old)));
	KUNIT_EXPECT_TRUE(test, pte_dirty(pte));
	KUNIT_EXPECT_FALSE(test, pte_soft_dirty(pte));
#ifdef CONFIG_NUMA_BALANCING
	/* a NUMA-hinting PTE, made as change_prot_numa() does */
	old = pte_modify(pfn_pte(pfn + 1, ro), PAGE_NONE);
	KUNIT_EXPECT_TRUE(test, pte_protnone(old));
	pte = rocm_make_pte(ro, pfn, old);
	KUNIT_EXPECT_FALSE(test, pte_protnone(pte));
	KUNIT_EXPECT_EQ(test, pfn, pte_pfn(pte));
#endif
}

/* Every reason has a name, and out-of-range values do not crash. */
static void rocm_test_reason_names(struct kunit *test)
{
	for (int r = 0; r < NR_ROCM_REASONS; r++)
		KUNIT_EXPECT_NOT_NULL_MSG(test, rocm_reason_names[r], "reason %d", r);
	KUNIT_EXPECT_STREQ(test, "ok", rocm_reason_name(ROCM_OK));
	KUNIT_EXPECT_STREQ(test, "?", rocm_reason_name(NR_ROCM_REASONS));
	KUNIT_EXPECT_STREQ(test, "?", rocm_reason_name(-1));
}

static struct kunit_case rocm_test_cases[] = {
	KUNIT_CASE(rocm_test_folio_rules),
	KUNIT_CASE(rocm_test_pte_rules),
	KUNIT_CASE(rocm_test_make_pte),
	KUNIT_CASE(rocm_test_reason_names),
	{}
};

static struct kunit_suite rocm_test_suite = {
	.name = "migrate_rocm",
	.test_cases = rocm_test_cases,
};

kunit_test_suite(rocm_test_suite);
