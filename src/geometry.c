/*
 * geometry.c - from a config to a layout, and back: validating a header.
 *
 * The layout is a pure function of six numbers (slots, key_max, value_max,
 * probe_limit, value_memory, reserve_memory) and the huge-page flag, which
 * rounds the segment up to whole huge pages. Create computes it; attach
 * recomputes it from the header's copy of those numbers and refuses the
 * segment unless every derived field and the file size agree. That catches
 * truncation, a foreign build and most corruption of the header without
 * trusting any of it.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define SEGMENT_SIZE_MAX ((uint64_t)1 << 42) /* 4 TiB: sanity, not policy */

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

int shmkv__name_canon(const char *name, char out[SHMKV_NAME_MAX + 1])
{
	const char *base;
	size_t len;

	if (name == NULL)
		return -EINVAL;
	/* "orders" is "/orders", as shmctl has always taken it: the slash
	 * is POSIX's spelling, not part of what the user chose. */
	base = name[0] == '/' ? name + 1 : name;
	len = strlen(base);
	if (len == 0 || len + 1 > SHMKV_NAME_MAX)
		return -EINVAL;
	if (strchr(base, '/') != NULL)
		return -EINVAL;
	if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return -EINVAL;
	out[0] = '/';
	memcpy(out + 1, base, len + 1);
	return 0;
}

_Static_assert(SHMKV_PROBE_LIMIT_MAX <= UINT16_MAX,
	       "every probe bound fits the slot's 16 bits");
/* The largest block: value_max plus the header, in whole cache lines, so
 * that its blocks start on a line like every class above the smallest. */
static uint32_t top_class_size(uint32_t value_max)
{
	uint64_t need = (uint64_t)value_max + sizeof(struct shmkv_block_shm);

	return need > SHMKV_BLOCK_MIN
		       ? (uint32_t)round_up(need, SHMKV_CACHE_LINE)
		       : SHMKV_BLOCK_MIN;
}

static uint32_t page_size_for(uint32_t value_max)
{
	uint64_t page = round_up(top_class_size(value_max), 4096);

	return page > SHMKV_PAGE_MIN ? (uint32_t)page : SHMKV_PAGE_MIN;
}

/* The smallest power of two >= @v (@v <= 2^31). */
static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* The size classes of @value_max: 32, 64, ... below the top one, and it
 * (layout_values() lays them out). */
static uint32_t class_count_for(uint32_t value_max)
{
	uint32_t top = top_class_size(value_max), classes = 1;

	for (uint64_t size = SHMKV_BLOCK_MIN; size < top; size *= 2)
		classes++;
	return classes;
}

/* 256 bytes a slot, but at least one page for every size class. */
static uint64_t default_value_memory(const struct shmkv_geometry *g)
{
	uint64_t floor = (uint64_t)class_count_for(g->value_max) *
			 page_size_for(g->value_max);

	return (uint64_t)g->slot_count * 256 > floor
		       ? (uint64_t)g->slot_count * 256
		       : floor;
}

static int resolve_defaults(const struct shmkv_config *cfg,
			    struct shmkv_geometry *g)
{
	g->slot_count = cfg->slots ? cfg->slots : SHMKV_SLOTS_DEFAULT;
	g->key_max = cfg->key_max ? cfg->key_max : SHMKV_KEY_MAX_DEFAULT;
	g->value_max = cfg->value_max ? cfg->value_max
				      : SHMKV_VALUE_MAX_DEFAULT;
	if (g->slot_count < SHMKV_SLOTS_MIN ||
	    g->slot_count > SHMKV_SLOTS_MAX ||
	    (g->slot_count & (g->slot_count - 1)) != 0)
		return -EINVAL;
	if (g->key_max > SHMKV_KEY_MAX_LIMIT ||
	    g->value_max > SHMKV_VALUE_MAX_LIMIT)
		return -EINVAL;
	g->probe_limit = cfg->probe_limit ? cfg->probe_limit
					  : SHMKV_PROBE_LIMIT_DEFAULT;
	if (g->probe_limit > SHMKV_PROBE_LIMIT_MAX)
		return -EINVAL;
	if (g->probe_limit > g->slot_count)
		g->probe_limit = g->slot_count;
	g->value_memory = cfg->value_memory ? cfg->value_memory
					    : default_value_memory(g);
	if (g->value_memory > SEGMENT_SIZE_MAX)
		return -EINVAL;
	return 0;
}

/* What the segment is allocated in: 4 KiB pages, or huge pages. */
static uint64_t alloc_unit(const struct shmkv_geometry *g)
{
	return g->flags & SHMKV_HDR_HUGE_PAGES ? SHMKV_HUGE_PAGE : 4096;
}

uint64_t shmkv__head_end(const struct shmkv_geometry *g, uint32_t ready)
{
	return round_up(g->page_table_offset + 4ull * ready, alloc_unit(g));
}

/* Bytes of table T(@e). */
static uint64_t table_bytes(const struct shmkv_geometry *g, uint32_t e)
{
	return (uint64_t)g->slot_size * ((uint64_t)g->slot_count << e);
}

uint64_t shmkv__table_offset(const struct shmkv_geometry *g, uint32_t e)
{
	uint64_t off = g->slots_offset;

	/* Whole allocation units apart: giving one table's memory back never
	 * touches the next one's. */
	for (uint32_t i = 0; i < e; i++)
		off = round_up(off + table_bytes(g, i), alloc_unit(g));
	return off;
}

uint64_t shmkv__table0_end(const struct shmkv_geometry *g)
{
	return round_up(g->slots_offset + table_bytes(g, 0), alloc_unit(g));
}

uint64_t shmkv__table_start(const struct shmkv_geometry *g, uint32_t e)
{
	/* T(0) shares its first unit with the header: only from there. */
	return e == 0 ? g->slots_offset : shmkv__table_offset(g, e);
}

uint64_t shmkv__table_end(const struct shmkv_geometry *g, uint32_t e)
{
	return round_up(shmkv__table_offset(g, e) + table_bytes(g, e),
			alloc_unit(g));
}

uint64_t shmkv__table_alloc(const struct shmkv_geometry *g, uint32_t e)
{
	return shmkv__table_end(g, e) -
	       round_up(shmkv__table_start(g, e), alloc_unit(g));
}

uint64_t shmkv__tables_extra(const struct shmkv_geometry *g, uint64_t life)
{
	uint64_t gen = SHMKV_LIFE_GEN(life), e = gen >> 1, sum;

	if (e + (gen & 1) > g->epoch_max)
		return 0; /* corrupt: reported elsewhere */
	sum = shmkv__table_alloc(g, (uint32_t)e);
	if (gen & 1)
		sum += shmkv__table_alloc(g, (uint32_t)e + 1);
	return sum - shmkv__table_alloc(g, 0);
}

uint64_t shmkv__pages_end(const struct shmkv_geometry *g, uint32_t ready)
{
	return g->pages_offset +
	       round_up((uint64_t)ready * g->page_size, alloc_unit(g));
}

uint64_t shmkv__footprint(const struct shmkv_geometry *g, uint32_t ready)
{
	return shmkv__table0_end(g) + shmkv__head_end(g, ready) -
	       g->page_table_offset + shmkv__pages_end(g, ready) -
	       g->pages_offset;
}

uint32_t shmkv__pages_within(const struct shmkv_geometry *g,
			     uint64_t max_memory)
{
	/* Each page costs page_size plus its page-table word: start from the
	 * estimate and step down past the table's rounding. */
	uint64_t fixed = shmkv__footprint(g, 0), pages;

	if (max_memory <= fixed)
		return 0;
	pages = (max_memory - fixed) / ((uint64_t)g->page_size + 4);
	if (pages > g->page_count)
		pages = g->page_count;
	while (pages > 0 && shmkv__footprint(g, (uint32_t)pages) > max_memory)
		pages--;
	return (uint32_t)pages;
}

/*
 * Size classes: 32, 64, ... doubling while below the largest block, then
 * one class that fits value_max plus the block header in whole cache
 * lines. Pages are page-aligned and every class is 32 bytes or a multiple
 * of 64, so a block of up to 64 bytes (a value of up to 40 bytes) lies in
 * one cache line and every larger one starts on a line. Value storage is a run of pages; a page is given to
 * a class when that class first needs room, so memory follows the sizes
 * actually stored.
 */
static int layout_values(struct shmkv_geometry *g, uint64_t offset)
{
	uint32_t top = top_class_size(g->value_max), n = 0;
	uint64_t pages;

	for (uint32_t size = SHMKV_BLOCK_MIN; size < top; size *= 2)
		g->class_size[n++] = size;
	g->class_size[n++] = top;
	g->class_count = n;
	g->page_size = page_size_for(g->value_max);
	/* A power of two, so that a unit number splits into (page, index)
	 * with a shift and a mask (block.c); the page itself is not one:
	 * a page of the largest values would then waste up to half its
	 * bytes, and the smallest store double. */
	g->units_per_page = pow2_at_least(g->page_size / SHMKV_BLOCK_MIN);
	g->unit_shift = (uint32_t)__builtin_ctz(g->units_per_page);
	/* Every class must be able to get a page (block.c keeps one in
	 * reserve for each class that has none), or value_max is a lie. */
	if (g->value_memory / g->page_size < n ||
	    g->value_memory / g->page_size * g->units_per_page >
		    SHMKV_UNITS_MAX)
		return -EINVAL;
	g->pages_initial = (uint32_t)(g->value_memory / g->page_size);
	g->page_table_offset = offset;
	/* The reservation: as many pages as reserve_memory holds with the
	 * store's fixed part, within what a unit number can name, and at
	 * least the initial ones. */
	g->page_count = SHMKV_UNITS_MAX / g->units_per_page;
	pages = shmkv__pages_within(g, g->reserve_memory);
	g->page_count = pages > g->pages_initial ? (uint32_t)pages
						 : g->pages_initial;
	/* Whole allocation units apart, so that the two allocated parts
	 * (grow.c) never share one. */
	g->pages_offset = round_up(offset + (uint64_t)g->page_count * 4,
				   alloc_unit(g));
	g->segment_size = g->pages_offset +
			  (uint64_t)g->page_count * g->page_size;
	return 0;
}

int shmkv__geometry_plan(const struct shmkv_config *cfg,
			 struct shmkv_plan *plan)
{
	struct shmkv_config c = *cfg;
	struct shmkv_geometry g;
	uint64_t pages_max;
	uint32_t units;
	int err;

	/* The memory is what the plan is for: judged by the caller. */
	c.value_memory = 0;
	memset(&g, 0, sizeof(g));
	err = resolve_defaults(&c, &g);
	if (err)
		return err;
	plan->page_size = page_size_for(g.value_max);
	plan->classes = class_count_for(g.value_max);
	plan->value_memory = cfg->value_memory ? cfg->value_memory
					       : g.value_memory;
	plan->value_memory_min = (uint64_t)plan->classes * plan->page_size;
	/* layout_values(): value_memory / page_size pages of
	 * units_per_page units each, at most SHMKV_UNITS_MAX units. */
	units = pow2_at_least(plan->page_size / SHMKV_BLOCK_MIN);
	pages_max = SHMKV_UNITS_MAX / units;
	plan->value_memory_max = (pages_max + 1) * plan->page_size - 1;
	if (plan->value_memory_max > SEGMENT_SIZE_MAX)
		plan->value_memory_max = SEGMENT_SIZE_MAX;
	return 0;
}

int shmkv__geometry_from_config(const struct shmkv_config *cfg,
				uint64_t reserve, struct shmkv_geometry *g)
{
	int err;

	memset(g, 0, sizeof(*g));
	err = resolve_defaults(cfg, g);
	if (err)
		return err;
	/* A limit set at creation is the reservation too (a store's file is
	 * no longer than it may grow); without one, what the system has. */
	g->reserve_memory = cfg->max_memory ? cfg->max_memory : reserve;
	if (g->reserve_memory > SEGMENT_SIZE_MAX)
		return -EINVAL;
	/* A power of two (indexing is a shift) of at least a cache line:
	 * with key_max <= 28 one slot is one line, and whatever a key leaves
	 * of it holds short values (layout.h). */
	g->slot_size = pow2_at_least(SHMKV_SLOT_FIXED + g->key_max);
	if (g->slot_size < SHMKV_SLOT_MIN)
		g->slot_size = SHMKV_SLOT_MIN;
	g->slot_shift = (uint32_t)__builtin_ctz(g->slot_size);
	if (cfg->flags & SHMKV_CONFIG_HUGE_PAGES)
		g->flags |= SHMKV_HDR_HUGE_PAGES;
	g->slots_offset = SHMKV_HEADER_SIZE;
	/* The tables the table may grow into, each twice the last, up to the
	 * largest slot count and the largest table the reservation holds
	 * (T(0) always): sparse, as value pages are. */
	while (g->epoch_max < 31 &&
	       ((uint64_t)g->slot_count << (g->epoch_max + 1)) <=
		       SHMKV_SLOTS_MAX &&
	       table_bytes(g, g->epoch_max + 1) <= g->reserve_memory)
		g->epoch_max++;
	g->tables_end = shmkv__table_offset(g, g->epoch_max) +
			table_bytes(g, g->epoch_max);
	err = layout_values(g, round_up(g->tables_end, alloc_unit(g)));
	if (err)
		return err;
	/* A limit below what the store starts with cannot be kept. */
	if (cfg->max_memory != 0 &&
	    cfg->max_memory < shmkv__footprint(g, g->pages_initial))
		return -EINVAL;
	/* Transparent huge pages of tmpfs are file-aligned, and huge=
	 * within_size gives one only below the file's end: a partial last
	 * one would be 4 KiB pages. The tail is never used. */
	if (g->flags & SHMKV_HDR_HUGE_PAGES)
		g->segment_size = round_up(g->segment_size, SHMKV_HUGE_PAGE);
	return g->segment_size > SEGMENT_SIZE_MAX ? -EINVAL : 0;
}

void shmkv__geometry_to_header(const struct shmkv_geometry *g,
			       struct shmkv_header_shm *h)
{
	h->segment_size = g->segment_size;
	h->slots_offset = g->slots_offset;
	h->value_memory = g->value_memory;
	h->reserve_memory = g->reserve_memory;
	h->slot_count = g->slot_count;
	h->slot_size = g->slot_size;
	h->key_max = g->key_max;
	h->value_max = g->value_max;
	h->probe_limit = g->probe_limit;
	h->class_count = g->class_count;
	h->page_size = g->page_size;
	h->page_count = g->page_count;
	h->units_per_page = g->units_per_page;
	h->page_table_offset = g->page_table_offset;
	h->epoch_max = g->epoch_max;
	h->pages_offset = g->pages_offset;
	h->flags = g->flags;
	memcpy(h->class_size, g->class_size, sizeof(g->class_size));
}

/* Does every geometry field of @h say what @g says? Asked by writing @g
 * over a copy of @h, so that the list of fields is the one above (memcpy,
 * not assignment: memcmp reads padding bytes too). */
static bool geometry_equal(const struct shmkv_header_shm *h,
			   const struct shmkv_geometry *g)
{
	struct shmkv_header_shm want;

	memcpy(&want, h, sizeof(want));
	shmkv__geometry_to_header(g, &want);
	return memcmp(&want, h, sizeof(want)) == 0;
}

/* @h is a private copy of the header (read with pread, not mapped), so it
 * cannot change while it is checked. */
int shmkv__header_validate(const struct shmkv_header_shm *h, uint64_t file_size,
			   struct shmkv_geometry *g)
{
	struct shmkv_config cfg;

	if (file_size < sizeof(h->magic) || h->magic != SHMKV_MAGIC)
		return -EPROTO;
	if (file_size < SHMKV_HEADER_SIZE)
		return -EBADMSG;
	if (h->layout_version != SHMKV_LAYOUT_VERSION ||
	    h->format != SHMKV_LAYOUT_FORMAT)
		return -EPROTONOSUPPORT;
	memset(&cfg, 0, sizeof(cfg));
	cfg.slots = h->slot_count;
	cfg.key_max = h->key_max;
	cfg.value_max = h->value_max;
	cfg.probe_limit = h->probe_limit;
	cfg.value_memory = h->value_memory;
	/* A choice of a later version, which this library cannot follow. */
	if (h->flags & ~SHMKV_HDR_FLAGS)
		return -EBADMSG;
	if (h->flags & SHMKV_HDR_HUGE_PAGES)
		cfg.flags |= SHMKV_CONFIG_HUGE_PAGES;
	/* Zeros would silently become defaults: a header never holds them. */
	if (h->slot_count == 0 || h->key_max == 0 || h->value_max == 0 ||
	    h->probe_limit == 0 || h->value_memory == 0)
		return -EBADMSG;
	if (shmkv__geometry_from_config(&cfg, h->reserve_memory, g) != 0)
		return -EBADMSG;
	if (!geometry_equal(h, g))
		return -EBADMSG;
	return file_size == g->segment_size ? 0 : -EBADMSG;
}
