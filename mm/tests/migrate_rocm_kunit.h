/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KUnit tests for the ROCM eligibility rules (mm/migrate_rocm.c): each
 * rule is tested on its own, negated, against an otherwise eligible
 * folio or mapping; then the facts the rules get are gathered from real
 * folios (anon, tmpfs, KSM) and real PTEs of the test's own mm.
 * Included from mm/migrate_rocm.c.
 */
#include <kunit/test.h>
#include <linux/file.h>
#include <linux/mman.h>

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

/* tmpfs with a shared writable mapping somewhere (no page_mkwrite) */
static void rf_shmem_writable(struct rocm_folio_facts *f)
{
	f->shmem_writable = true;
}

/* a memfd sealed as udmabuf wants it */
static void rf_pin_sealed(struct rocm_folio_facts *f)
{
	f->pin_sealed = true;
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
	/*
	 * No KSM row: the facts have no KSM bit, and the gatherer gives a
	 * KSM folio an anon folio's (rocm_test_facts_ksm()).
	 */
	{ "swapcache",		rf_swapcache,	ROCM_SWAPCACHE,	ROCM_SWAPCACHE },
	{ "mlocked",		rf_mlocked,	ROCM_MLOCKED,	ROCM_MLOCKED },
	{ "PG_private",		rf_private,	ROCM_PRIVATE,	ROCM_PRIVATE },
	/* a_ops only matter for page cache */
	{ "special a_ops",	rf_odd_aops,	ROCM_MAPPING,	ROCM_OK },
	/* exclusivity only matters for anon */
	{ "anon exclusive",	rf_exclusive,	ROCM_OK,	ROCM_EXCLUSIVE },
	{ "shmem writably mapped", rf_shmem_writable, ROCM_SHARED_WRITE, ROCM_OK },
	{ "shmem sealed for udmabuf", rf_pin_sealed, ROCM_PIN_SEALED, ROCM_OK },
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
static pte_t rocm_test_make_pte_in(pgprot_t prot, unsigned long pfn,
				   pte_t old)
{
	struct vm_area_struct vma = { .vm_page_prot = prot };

	return rocm_make_pte(&vma, pfn, old);
}

static void rocm_test_make_pte(struct kunit *test)
{
	const unsigned long pfn = 0x1234;
	const pgprot_t shared =
		vm_get_page_prot(VM_READ | VM_WRITE | VM_SHARED);
	const pgprot_t ro = vm_get_page_prot(VM_READ);
	pte_t old = pfn_pte(pfn + 1, ro), pte;

	pte = rocm_test_make_pte_in(shared, pfn, old);
	KUNIT_EXPECT_EQ(test, pfn, pte_pfn(pte));
	KUNIT_EXPECT_TRUE(test, pte_present(pte));
	KUNIT_EXPECT_FALSE(test, pte_write(pte));

	pte = rocm_test_make_pte_in(ro, pfn, pte_mkold(old));
	KUNIT_EXPECT_FALSE(test, pte_young(pte));
	KUNIT_EXPECT_FALSE(test, pte_dirty(pte));
	pte = rocm_test_make_pte_in(ro, pfn, pte_mkyoung(pte_mkdirty(old)));
	KUNIT_EXPECT_TRUE(test, pte_young(pte));
	KUNIT_EXPECT_TRUE(test, pte_dirty(pte));
	KUNIT_EXPECT_FALSE(test, pte_write(pte));
	pte = rocm_test_make_pte_in(ro, pfn, pte_mksoft_dirty(old));
	if (IS_ENABLED(CONFIG_MEM_SOFT_DIRTY))
		KUNIT_EXPECT_TRUE(test, pte_soft_dirty(pte));
	/*
	 * Dirty but not soft-dirty (clear_refs 4 after the write): x86's
	 * pte_mkdirty() also sets soft-dirty, which must not come back.
	 */
	pte = rocm_test_make_pte_in(ro, pfn, pte_clear_soft_dirty(pte_mkdirty(old)));
	KUNIT_EXPECT_TRUE(test, pte_dirty(pte));
	KUNIT_EXPECT_FALSE(test, pte_soft_dirty(pte));
#ifdef CONFIG_NUMA_BALANCING
	/* a NUMA-hinting PTE, made as change_prot_numa() does */
	old = pte_modify(pfn_pte(pfn + 1, ro), PAGE_NONE);
	KUNIT_EXPECT_TRUE(test, pte_protnone(old));
	pte = rocm_test_make_pte_in(ro, pfn, old);
	KUNIT_EXPECT_FALSE(test, pte_protnone(pte));
	KUNIT_EXPECT_EQ(test, pfn, pte_pfn(pte));
#endif
}

/*
 * The switched PTE keeps the old one's uffd bit; in a VMA with UFFD
 * read-write protection (7.3) it also keeps PAGE_NONE, as
 * remove_migration_pte() gives it back: a readable copy would let the
 * protected range be read without the fault its monitor waits for.
 */
static void rocm_test_uffd_bits(struct kunit *test)
{
	const unsigned long pfn = 0x1234;
	struct vm_area_struct vma = {
		.vm_page_prot = vm_get_page_prot(VM_READ),
	};
	pte_t old = migrate_rocm_test_mkuffd(pfn_pte(pfn + 1, vma.vm_page_prot));
	pte_t pte;

	if (!migrate_rocm_test_uffd(old))
		kunit_skip(test, "no userfaultfd bit in this arch's PTEs");
	pte = rocm_make_pte(&vma, pfn, old);
	KUNIT_EXPECT_TRUE(test, migrate_rocm_test_uffd(pte));
	KUNIT_EXPECT_TRUE(test, pte_present(pte));
	if (!migrate_rocm_test_set_rwp(&vma))
		kunit_skip(test, "no UFFD read-write protection on this base");
#ifdef CONFIG_NUMA_BALANCING
	pte = rocm_make_pte(&vma, pfn, old);
	KUNIT_EXPECT_TRUE(test, migrate_rocm_test_uffd(pte));
	KUNIT_EXPECT_TRUE(test, pte_protnone(pte));
	KUNIT_EXPECT_EQ(test, pfn, pte_pfn(pte));
	/* without the uffd bit, the VMA's protection as before */
	pte = rocm_make_pte(&vma, pfn, pfn_pte(pfn + 1, vma.vm_page_prot));
	KUNIT_EXPECT_FALSE(test, pte_protnone(pte));
#endif
}

/*
 * Where the walk stands: on a PMD (no PTE), on a PTE that is no longer
 * present (a migration or device-exclusive entry), on a present PTE.
 */
static void rocm_test_pte_get(struct kunit *test)
{
	const unsigned long pfn = 0x1234;
	pte_t present = pfn_pte(pfn, vm_get_page_prot(VM_READ));
	pte_t entry = swp_entry_to_pte(make_readable_migration_entry(pfn));
	struct page_vma_mapped_walk pvmw = {};
	pte_t pte = __pte(0);

	KUNIT_EXPECT_EQ(test, ROCM_PMD, rocm_pte_get(&pvmw, &pte));
	pvmw.pte = &entry;
	KUNIT_EXPECT_EQ(test, ROCM_CHANGED, rocm_pte_get(&pvmw, &pte));
	pvmw.pte = &present;
	KUNIT_EXPECT_EQ(test, ROCM_OK, rocm_pte_get(&pvmw, &pte));
	KUNIT_EXPECT_EQ(test, pfn, pte_pfn(pte));
}

KUNIT_DEFINE_ACTION_WRAPPER(rocm_test_fput, fput, struct file *);
KUNIT_DEFINE_ACTION_WRAPPER(rocm_test_folio_put, folio_put, struct folio *);

/* Free a folio the test gave a stand-in ->mapping and flags. */
static void rocm_test_put_fake(void *data)
{
	struct folio *folio = data;

	folio_test_clear_writeback(folio);
	folio->mapping = NULL;
	folio_put(folio);
}

/* rocm_folio_facts() under the folio lock, as __migrate_rocm_check() has it. */
static void rocm_test_facts(struct folio *folio, struct rocm_folio_facts *f)
{
	folio_lock(folio);
	rocm_folio_facts(folio, f);
	folio_unlock(folio);
}

/*
 * The PTE that maps @folio at @addr of the test's mm, found as the check
 * walk finds it: rocm_pte_get() must return it, and the per-mapping
 * facts gathered from it and its VMA must come to @want.  No assertion
 * while a lock is held: a test that ends there leaves it held.
 */
static void rocm_test_pte(struct kunit *test, struct folio *folio,
			  unsigned long addr, enum rocm_reason want)
{
	enum rocm_reason got = NR_ROCM_REASONS, why = NR_ROCM_REASONS;
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	pte_t pte = __pte(0);

	mmap_read_lock(mm);
	vma = vma_lookup(mm, addr);
	if (vma) {
		DEFINE_FOLIO_VMA_WALK(pvmw, folio, vma, addr, PVMW_SYNC);

		if (page_vma_mapped_walk(&pvmw)) {
			got = rocm_pte_get(&pvmw, &pte);
			why = rocm_pte_why(folio, &pvmw, &pte, true);
			page_vma_mapped_walk_done(&pvmw);
		}
	}
	mmap_read_unlock(mm);
	KUNIT_EXPECT_EQ(test, ROCM_OK, got);
	KUNIT_EXPECT_EQ(test, folio_pfn(folio), pte_pfn(pte));
	KUNIT_EXPECT_EQ(test, want, why);
}

/* A page's worth of the test's own mm (kunit_vm_mmap() makes one). */
static unsigned long rocm_test_mmap(struct kunit *test, struct file *file,
				    unsigned long prot, unsigned long flags)
{
	unsigned long addr = kunit_vm_mmap(test, file, 0, PAGE_SIZE, prot,
					   flags, 0);

	if (!addr || IS_ERR_VALUE(addr))
		kunit_skip(test, "no user mapping for the test (%ld)",
			   (long)addr);
	return addr;
}

/*
 * A KSM folio as the gatherer sees it: ->mapping points at a stable
 * node tagged as KSM's (PAGE_MAPPING_KSM, 7.3: FOLIO_MAPPING_KSM), which
 * makes it anon and not movable_ops.
 * So the anon rules apply: PG_dirty does not stop it, no a_ops are
 * looked at (a stable node is no address_space), and it is not
 * exclusive (KSM never makes a page so).  Not mapped: merging needs
 * ksmd; the test's reference stands for the isolation's.
 */
static void rocm_test_facts_ksm(struct kunit *test)
{
	static unsigned long stable_node __aligned(8);
	struct rocm_folio_facts f;
	struct folio *folio;

	if (!IS_ENABLED(CONFIG_KSM))
		kunit_skip(test, "no KSM folio without CONFIG_KSM");
	folio = folio_alloc(GFP_KERNEL, 0);
	if (!folio)
		kunit_skip(test, "no folio");
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, rocm_test_put_fake,
						  folio));
	folio->mapping = (struct address_space *)
			 ((unsigned long)&stable_node | MIGRATE_MAPPING_KSM);
	KUNIT_ASSERT_TRUE(test, folio_test_ksm(folio));
	folio_set_dirty(folio);

	rocm_test_facts(folio, &f);
	KUNIT_EXPECT_TRUE(test, f.anon);
	KUNIT_EXPECT_TRUE(test, f.lru);
	KUNIT_EXPECT_TRUE(test, f.dirty);
	KUNIT_EXPECT_FALSE(test, f.anon_exclusive);
	KUNIT_EXPECT_FALSE(test, f.plain_aops);
	KUNIT_EXPECT_FALSE(test, f.writeback);
	KUNIT_EXPECT_EQ(test, 1, f.ref_count);
	KUNIT_EXPECT_EQ(test, 1, f.expected_refs);
	KUNIT_EXPECT_EQ(test, ROCM_OK, rocm_check_folio(&f));

	/* swapped out, as KSM folios may be */
	folio_test_set_writeback(folio);
	rocm_test_facts(folio, &f);
	folio_test_clear_writeback(folio);
	KUNIT_EXPECT_TRUE(test, f.writeback);
	KUNIT_EXPECT_EQ(test, ROCM_WRITEBACK, rocm_check_folio(&f));
}

/*
 * A private anon page the test wrote (a write fault through GUP): an
 * anon folio mapped once, exclusive to its mapping, by a writable PTE;
 * GUP's reference stands for the isolation's.  A pin shows.
 */
static void rocm_test_facts_anon(struct kunit *test)
{
	unsigned long addr = rocm_test_mmap(test, NULL, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS);
	struct rocm_folio_facts f;
	struct page *page;
	struct folio *folio;
	long pinned;

	KUNIT_ASSERT_EQ(test, 1,
			get_user_pages_unlocked(addr, 1, &page, FOLL_WRITE));
	folio = page_folio(page);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, rocm_test_folio_put,
						  folio));
	/* the fault's LRU batch holds a reference until drained */
	lru_add_drain_all();

	rocm_test_facts(folio, &f);
	KUNIT_EXPECT_EQ(test, 0, f.order);
	KUNIT_EXPECT_TRUE(test, f.anon);
	KUNIT_EXPECT_TRUE(test, f.lru);
	KUNIT_EXPECT_TRUE(test, f.anon_exclusive);
	KUNIT_EXPECT_FALSE(test, f.swapcache);
	KUNIT_EXPECT_FALSE(test, f.writeback);
	KUNIT_EXPECT_FALSE(test, f.maybe_pinned);
	KUNIT_EXPECT_EQ(test, 2, f.ref_count);
	KUNIT_EXPECT_EQ(test, 2, f.expected_refs);
	KUNIT_EXPECT_EQ(test, ROCM_EXCLUSIVE, rocm_check_folio(&f));
	rocm_test_pte(test, folio, addr, ROCM_PTE_WRITE);

	pinned = pin_user_pages_unlocked(addr, 1, &page, FOLL_WRITE);
	if (pinned == 1) {
		rocm_test_facts(folio, &f);
		unpin_user_page(page);
	}
	KUNIT_ASSERT_EQ(test, 1, pinned);
	KUNIT_EXPECT_TRUE(test, f.maybe_pinned);
}

/*
 * A tmpfs folio: page cache whose migrate_folio only copies, and whose
 * PG_dirty asks for swap space rather than writeback.  Once the file
 * may be written through a shared mapping (MAP_SHARED of a file opened
 * for writing, even PROT_READ), neither the folio nor its read-only PTE
 * may move in place.  A mapping shows in the expected references.
 */
/* A one-page tmpfs file, put when the test ends; skips without tmpfs. */
static struct file *rocm_test_shmem_file(struct kunit *test)
{
	struct file *file;

	if (!IS_ENABLED(CONFIG_SHMEM))
		kunit_skip(test, "no tmpfs without CONFIG_SHMEM");
	file = shmem_file_setup("rocm_kunit", PAGE_SIZE, MIGRATE_SHMEM_NORESERVE);
	if (IS_ERR(file))
		kunit_skip(test, "no tmpfs file (%ld)", PTR_ERR(file));
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, rocm_test_fput, file));
	return file;
}

static void rocm_test_facts_shmem(struct kunit *test)
{
	struct rocm_folio_facts f;
	struct folio *folio;
	struct file *file;
	struct page *page;
	unsigned long addr;
	bool same = false;
	long got;

	file = rocm_test_shmem_file(test);
	folio = shmem_read_folio(file->f_mapping, 0);
	if (IS_ERR(folio))
		kunit_skip(test, "no tmpfs folio (%ld)", PTR_ERR(folio));
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, rocm_test_folio_put,
						  folio));
	if (folio_test_large(folio))
		kunit_skip(test, "tmpfs gave a large folio (shmem_enabled)");
	lru_add_drain_all();

	/* the page cache's reference and the test's */
	rocm_test_facts(folio, &f);
	KUNIT_EXPECT_FALSE(test, f.anon);
	KUNIT_EXPECT_TRUE(test, f.lru);
	KUNIT_EXPECT_TRUE(test, f.plain_aops);
	KUNIT_EXPECT_FALSE(test, f.shmem_writable);
	KUNIT_EXPECT_EQ(test, 2, f.ref_count);
	KUNIT_EXPECT_EQ(test, 2, f.expected_refs);
	KUNIT_EXPECT_EQ(test, ROCM_OK, rocm_check_folio(&f));

	folio_lock(folio);
	folio_mark_dirty(folio);
	folio_unlock(folio);
	KUNIT_ASSERT_TRUE(test, folio_test_dirty(folio));
	rocm_test_facts(folio, &f);
	KUNIT_EXPECT_FALSE(test, f.dirty);
	KUNIT_EXPECT_EQ(test, ROCM_OK, rocm_check_folio(&f));

	addr = rocm_test_mmap(test, file, PROT_READ, MAP_SHARED);
	rocm_test_facts(folio, &f);
	KUNIT_EXPECT_TRUE(test, f.shmem_writable);
	KUNIT_EXPECT_EQ(test, ROCM_SHARED_WRITE, rocm_check_folio(&f));

	/* a read fault maps it; GUP's own reference goes at once */
	got = get_user_pages_unlocked(addr, 1, &page, 0);
	if (got == 1) {
		same = page_folio(page) == folio;
		put_page(page);
	}
	KUNIT_ASSERT_EQ(test, 1, got);
	KUNIT_ASSERT_TRUE(test, same);
	/* GUP marked it accessed: an LRU batch may hold it */
	lru_add_drain_all();
	rocm_test_facts(folio, &f);
	KUNIT_EXPECT_EQ(test, 3, f.ref_count);
	KUNIT_EXPECT_EQ(test, 3, f.expected_refs);
	rocm_test_pte(test, folio, addr, ROCM_SHARED_WRITE);
}

/* The seals udmabuf pins under, and those that stop it. */
static void rocm_test_seals(struct kunit *test)
{
	static const struct {
		unsigned int seals;
		bool pinnable;
	} c[] = {
		{ 0, false },
		{ F_SEAL_SEAL, false },		/* a plain tmpfs file */
		{ F_SEAL_SHRINK, true },
		{ F_SEAL_SHRINK | F_SEAL_GROW, true },
		{ F_SEAL_SHRINK | F_SEAL_SEAL, true },
		/* a udmabuf made before the seal goes on writing */
		{ F_SEAL_SHRINK | F_SEAL_FUTURE_WRITE, true },
		{ F_SEAL_SHRINK | F_SEAL_WRITE, false },
		{ F_SEAL_WRITE | F_SEAL_GROW, false },
	};

	for (int i = 0; i < ARRAY_SIZE(c); i++)
		KUNIT_EXPECT_EQ_MSG(test, c[i].pinnable,
				    rocm_seals_pinnable(c[i].seals),
				    "seals %#x", c[i].seals);
}

KUNIT_DEFINE_ACTION_WRAPPER(rocm_test_unpin, unpin_folio, struct folio *);

/*
 * memfd_pin_folios() marks a mapping before its first pin, whatever the
 * seals, and ROCM's rule and compare gate (rocm_pin_sealed()) see it.
 */
static void rocm_test_memfd_pin_flag(struct kunit *test)
{
	struct folio *folio;
	struct file *file;
	pgoff_t off;

	if (!IS_ENABLED(CONFIG_MEMFD_CREATE))
		kunit_skip(test, "no memfd_pin_folios() on tmpfs without CONFIG_MEMFD_CREATE");
	file = rocm_test_shmem_file(test);
	/* a plain tmpfs file: F_SEAL_SEAL only, never pinned */
	KUNIT_EXPECT_FALSE(test, mapping_memfd_pinned(file->f_mapping));
	KUNIT_EXPECT_FALSE(test, rocm_pin_sealed(file->f_mapping));
	KUNIT_ASSERT_EQ(test, 1, memfd_pin_folios(file, 0, PAGE_SIZE - 1,
						  &folio, 1, &off));
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, rocm_test_unpin,
						  folio));
	KUNIT_EXPECT_TRUE(test, mapping_memfd_pinned(file->f_mapping));
	KUNIT_EXPECT_TRUE(test, rocm_pin_sealed(file->f_mapping));
}

/*
 * The move loop finds the folios ROCM moved by their place in the batch
 * (migrate_rocm_moved()): each set bit once and in order, nothing once
 * the last moved one is found (the places after it are never counted),
 * and nothing on the passes after the first (NULL).
 */
static void rocm_test_moved_places(struct kunit *test)
{
	static const unsigned int set[] = {
		0, 2, 63, 64, MIGRATE_ROCM_MAX_BATCH - 1,
	};
	struct migrate_rocm_batch *rb;
	unsigned int i, k = 0;

	rb = kunit_kzalloc(test, sizeof(*rb), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rb);
	for (i = 0; i < ARRAY_SIZE(set); i++)
		__set_bit(set[i], rb->moved);
	rb->nr_moved = ARRAY_SIZE(set);
	for (i = 0; i < MIGRATE_ROCM_MAX_BATCH + 8; i++) {
		bool want = k < ARRAY_SIZE(set) && set[k] == i;

		KUNIT_EXPECT_EQ_MSG(test, want, migrate_rocm_moved(rb),
				    "place %u", i);
		k += want;
	}
	KUNIT_EXPECT_EQ(test, 0u, rb->nr_moved);
	KUNIT_EXPECT_EQ(test, (unsigned int)MIGRATE_ROCM_MAX_BATCH, rb->pos);

	/* a later pass sees nothing, whatever the bitmap holds */
	rb->nr_moved = 1;
	rb->pos = 0;
	KUNIT_EXPECT_FALSE(test, migrate_rocm_moved(NULL));
	KUNIT_EXPECT_TRUE(test, migrate_rocm_moved(rb));
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
	KUNIT_CASE(rocm_test_seals),
	KUNIT_CASE(rocm_test_folio_rules),
	KUNIT_CASE(rocm_test_pte_rules),
	KUNIT_CASE(rocm_test_make_pte),
	KUNIT_CASE(rocm_test_uffd_bits),
	KUNIT_CASE(rocm_test_pte_get),
	KUNIT_CASE(rocm_test_facts_ksm),
	KUNIT_CASE(rocm_test_facts_anon),
	KUNIT_CASE(rocm_test_facts_shmem),
	KUNIT_CASE(rocm_test_memfd_pin_flag),
	KUNIT_CASE(rocm_test_moved_places),
	KUNIT_CASE(rocm_test_reason_names),
	{}
};

static struct kunit_suite rocm_test_suite = {
	.name = "migrate_rocm",
	.test_cases = rocm_test_cases,
};

kunit_test_suite(rocm_test_suite);
