/* make: variants=epochs */
/* What a registry's memory is made of (WHAT A PROGRAM DOES in the manual): it follows
   what is registered now, not the most it ever held (the id array and the
   name index shrink, with hysteresis); every object the API hands out is
   at least sizeof its type; an allocator hook's pointers need only a
   pointer's alignment. Live bytes are counted through the allocator hooks,
   one thread, fixed counts: nothing depends on timing. Both modes, plain,
   under ASan+UBSan (a misaligned block or a read past a table is a
   report there). */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#ifndef PEAK_OPS
#define PEAK_OPS 100000   /* operators defined at the peak */
#endif

static void silent(dk_log_level level, dk_log_item item, const char *m, void *ud) {
    (void)level; (void)item; (void)m; (void)ud;
}

/* The hooks: every block's size in a header, and each pointer `offset`
   bytes past a 16-aligned one (8: an arena's pointers; 4: too little). */
enum { SEEN = 64 };
typedef struct counter {
    size_t live;
    long allocs, frees;
    size_t offset;
    const char *seen[SEEN];   /* the last SEEN blocks given, and their sizes */
    size_t seen_n[SEEN];
} counter;
static void *counting_alloc(size_t n, void *ud) {
    counter *c = (counter *)ud;
    char *p = (char *)malloc(n + 32);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    c->live += n;
    c->seen[c->allocs % SEEN] = p + 16 + c->offset;
    c->seen_n[c->allocs % SEEN] = n;
    c->allocs++;
    return p + 16 + c->offset;
}
/* The size of what the block given recently that holds [p, p + n) has left past p + n (-1: none holds it). */
static long room_after(const counter *c, const void *p, size_t n) {
    int i;
    for (i = 0; i < SEEN && i < c->allocs; i++)
        if ((const char *)p >= c->seen[i] && (const char *)p < c->seen[i] + c->seen_n[i])
            return (long)(c->seen[i] + c->seen_n[i] - ((const char *)p + n));
    return -1;
}
static void counting_free(void *q, void *ud) {
    counter *c = (counter *)ud;
    char *p = (char *)q - 16 - c->offset;
    size_t n;
    memcpy(&n, p, sizeof n);
    c->live -= n;
    c->frees++;
    free(p);
}
static dk_status counted_registry(counter *c, size_t offset, dk_registry **out) {
    dk_registry_desc d;
    memset(&d, 0, sizeof d);
    memset(c, 0, sizeof *c);
    c->offset = offset;
    d.alloc = counting_alloc;
    d.free = counting_free;
    d.alloc_user_data = c;
    d.logger.func = silent;
    return dk_registry_create(&d, out);
}

typedef struct tensor { dk_keyset ks; int v; } tensor;
DK_DECLARE_OP(unary, int, x.ks, (tensor, x))
static int k_value(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)ks; (void)x;
    return *(const int *)k->user_data;
}
static const int seven = 7;
static tensor cpu_tensor(void) { tensor t; t.ks = dk_ks_from_key(DK_CPU); t.v = 0; return t; }

/* ---- every object at least sizeof its type -------------------------------------- */

/* A snapshot copied as C copies a struct reads sizeof(dk_op_table) bytes:
   the table's block holds them (ASan reports a read past it otherwise),
   and the block the allocator gave is at least that large. */
static void test_table_copied_as_a_struct(void **state) {
    counter c;
    dk_registry *r;
    dk_registration *def, *impl;
    const dk_operator *op;
    const dk_op_table *live;
    dk_op_table copy;
    (void)state;
    assert_int_equal(counted_registry(&c, 0, &r), DK_OK);
    assert_int_equal(dk_def(r, "mem::copied(Tensor x) -> Tensor", &def), DK_OK);
    op = dk_op_lookup(r, "mem::copied");
    assert_int_equal(dk_impl(r, "mem::copied", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&seven), &impl), DK_OK);
    /* the block the impl's table lives in holds the whole struct */
    dk_call_enter();   /* a snapshot is read inside a call (DK_DEBUG_READS) */
    live = dk_op_table_of(op);
    assert_true(room_after(&c, live, sizeof(dk_op_table)) >= 0);
    /* and its header (before it, or after it: dk__alloc_table) is outside the struct */
    assert_true((const char *)dk__table_block(live) >= (const char *)live + sizeof(dk_op_table) ||
                (const char *)dk__table_block(live) + sizeof(dk__block) <= (const char *)live);
    copy = *live;
    dk_call_exit();
    assert_true(dk_op_table_entry(&copy, dk_key_slot(DK_CPU))->kernel != NULL);
    assert_int_equal(unary_call(op, cpu_tensor()), 7);
    dk_registry_destroy(r);
    assert_int_equal(c.live, 0);
}

/* ---- allocator alignment ---------------------------------------------------------- */

/* Pointers 8 bytes off malloc's 16-byte alignment (an arena's): every block
   works (UBSan: no misaligned header), and everything is given back. */
static void test_arena_pointers_aligned_to_8(void **state) {
    counter c;
    dk_registry *r;
    dk_registration *def, *impl;
    const dk_operator *op;
    int i;
    (void)state;
    assert_int_equal(counted_registry(&c, 8, &r), DK_OK);
    for (i = 0; i < 300; i++) {
        char schema[64];
        snprintf(schema, sizeof schema, "mem::a%d(Tensor x, int n=2) -> Tensor", i % 50);
        assert_int_equal(dk_def(r, schema, &def), DK_OK);
        snprintf(schema, sizeof schema, "mem::a%d", i % 50);
        assert_int_equal(dk_impl(r, schema, DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&seven), &impl), DK_OK);
        op = dk_op_lookup(r, schema);
        assert_int_equal(unary_call(op, cpu_tensor()), 7);
        assert_int_equal(dk_deregister(impl), DK_OK);
        assert_int_equal(dk_deregister(def), DK_OK);
        assert_int_equal(dk_registry_reclaim(r), DK_OK);
    }
    dk_registry_destroy(r);
    assert_int_equal(c.live, 0);
    assert_int_equal(c.allocs, c.frees);
}

/* Pointers aligned to 4: the registry cannot be made; a clear status, a
   message naming the hook, nothing kept. */
static void test_pointers_aligned_less_than_8_refused(void **state) {
    counter c;
    dk_registry *r = NULL;
    (void)state;
    assert_int_equal(counted_registry(&c, 4, &r), DK_ERR_BAD_ARGUMENT);
    assert_null(r);
    assert_non_null(strstr(dk_last_error(), "desc.alloc"));
    assert_int_equal(c.live, 0);
    assert_int_equal(c.allocs, c.frees);
}

/* ---- memory follows what is registered now --------------------------------------- */

static dk_registration *peak_defs[PEAK_OPS];

/* PEAK_OPS operators, removed down to the first one and reclaimed: live
   bytes within 20x of a fresh registry holding that one operator. */
static void test_memory_after_a_peak(void **state) {
    counter c, fresh;
    dk_registry *r, *f;
    dk_registration *one;
    dk_registry_stats st;
    char schema[64];
    size_t after, alone;
    int i;
    (void)state;
    assert_int_equal(counted_registry(&c, 0, &r), DK_OK);
    for (i = 0; i < PEAK_OPS; i++) {
        snprintf(schema, sizeof schema, "mem::p%d(Tensor x) -> Tensor", i);
        assert_int_equal(dk_def(r, schema, &peak_defs[i]), DK_OK);
    }
    for (i = 1; i < PEAK_OPS; i++) assert_int_equal(dk_deregister(peak_defs[i]), DK_OK);
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    dk_registry_read_stats(r, &st);
    assert_int_equal(st.retired_bytes, 0);
    assert_int_equal(st.operators, 1);
    assert_non_null(dk_op_lookup(r, "mem::p0"));
    after = c.live;
    assert_int_equal(counted_registry(&fresh, 0, &f), DK_OK);
    assert_int_equal(dk_def(f, "mem::p0(Tensor x) -> Tensor", &one), DK_OK);
    alone = fresh.live;
    printf("  after a peak of %d operators, removed down to one: %lu bytes live (a fresh registry with it: %lu)\n",
           PEAK_OPS, (unsigned long)after, (unsigned long)alone);
    assert_true(after <= 20 * alone);
    /* PEAK_OPS def/deregister pairs of fresh names beside it: still so */
    for (i = 0; i < PEAK_OPS; i++) {
        dk_registration *d;
        snprintf(schema, sizeof schema, "mem::q%d(Tensor x) -> Tensor", i);
        assert_int_equal(dk_def(r, schema, &d), DK_OK);
        assert_int_equal(dk_deregister(d), DK_OK);
        if (i % 1000 == 999) assert_int_equal(dk_registry_reclaim(r), DK_OK);
    }
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    printf("  and after %d def/deregister pairs: %lu bytes live\n", PEAK_OPS, (unsigned long)c.live);
    assert_true(c.live <= 20 * alone);
    /* and it grows again as before */
    for (i = 1; i < 1000; i++) {
        snprintf(schema, sizeof schema, "mem::p%d(Tensor x) -> Tensor", i);
        assert_int_equal(dk_def(r, schema, &peak_defs[i]), DK_OK);
    }
    for (i = 0; i < 1000; i++) {
        snprintf(schema, sizeof schema, "mem::p%d", i);
        assert_non_null(dk_op_lookup(r, schema));
    }
    dk_registry_destroy(r);
    dk_registry_destroy(f);
    assert_int_equal(c.live, 0);
}

/* Hysteresis: def/deregister pairs at the size where the index and the id
   array shrank do not rebuild them on every change. 1,000 operators are
   defined, removed down to where the index shrinks, then CYCLES pairs of
   a def and its deregistration: the index and the id array are replaced
   a few times (the index's tombstones), never once per pair. */
#define CYCLES 20000
static void test_no_thrashing_at_the_boundary(void **state) {
    counter c;
    dk_registry *r;
    dk_registration *d;
    char schema[64];
    const void *ix, *ops;
    long index_changes = 0, ops_changes = 0;
    int i, live = 1000;
    (void)state;
    assert_int_equal(counted_registry(&c, 0, &r), DK_OK);
    for (i = 0; i < live; i++) {
        snprintf(schema, sizeof schema, "mem::b%d(Tensor x) -> Tensor", i);
        assert_int_equal(dk_def(r, schema, &peak_defs[i]), DK_OK);
    }
    ix = r->index;
    while (r->index == ix) assert_int_equal(dk_deregister(peak_defs[--live]), DK_OK);   /* the index shrank */
    ix = r->index;
    ops = r->ops;
    for (i = 0; i < CYCLES; i++) {
        snprintf(schema, sizeof schema, "mem::c%d(Tensor x) -> Tensor", i);
        assert_int_equal(dk_def(r, schema, &d), DK_OK);
        index_changes += r->index != ix;
        ops_changes += r->ops != ops;
        ix = r->index;
        ops = r->ops;
        assert_int_equal(dk_deregister(d), DK_OK);
        index_changes += r->index != ix;
        ops_changes += r->ops != ops;
        ix = r->index;
        ops = r->ops;
        if (i % 1000 == 0) assert_int_equal(dk_registry_reclaim(r), DK_OK);
    }
    printf("  %d def/deregister pairs beside %d operators: %ld index rebuilds, %ld id array moves\n", CYCLES, live,
           index_changes, ops_changes);
    assert_true(index_changes <= CYCLES / 16);
    assert_true(ops_changes <= 2);
    dk_registry_destroy(r);
    assert_int_equal(c.live, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_copied_as_a_struct),
        cmocka_unit_test(test_arena_pointers_aligned_to_8),
        cmocka_unit_test(test_pointers_aligned_less_than_8_refused),
        cmocka_unit_test(test_memory_after_a_peak),
        cmocka_unit_test(test_no_thrashing_at_the_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
