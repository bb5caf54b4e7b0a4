/* make: variants=epochs tsan=plain,epochs */
/* Memory, hooks and re-entrancy (issue: safe under concurrency and churn).
   Built twice by `make test`: the default mode (memory freed at the
   quiescent points the program declares with dk_registry_reclaim) and
   -DDK_CALL_EPOCHS (calls bracket their kernels; memory is freed by
   itself, and dk_registry_synchronize waits for the calls in flight). Counts are fixed; nothing here
   depends on timing. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <cmocka.h>

#ifndef CYCLES_IMPL
#define CYCLES_IMPL 1000000  /* impl + deregister cycles */
#endif
#ifndef CYCLES_DEF
#define CYCLES_DEF 100000    /* def of a fresh name + deregister cycles */
#endif
#ifndef RACE_ROUNDS
#define RACE_ROUNDS 200000
#endif
#ifndef EXIT_ROUNDS
#define EXIT_ROUNDS 400      /* rounds of two short threads beside a synchronizing writer */
#endif
#ifndef EXIT_WRITER_CYCLES
#define EXIT_WRITER_CYCLES 2000
#endif

typedef struct tensor { dk_keyset ks; int v; } tensor;
DK_DECLARE_OP(unary, int, x.ks, (tensor, x))

static int k_value(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)ks; (void)x;
    return k->user_data ? *(const int *)k->user_data : 0;
}
static void silent(dk_log_level level, dk_log_item item, const char *m, void *ud) { (void)level; (void)item; (void)m; (void)ud; }
static dk_status last_failure;
static void quiet_call_error(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    (void)op; (void)ks; (void)m; (void)ud;
    last_failure = s;
}
static tensor cpu_tensor(void) { tensor t; t.ks = dk_ks_from_key(DK_CPU); t.v = 1; return t; }

/* The memory the registry holds, counted through its allocator hooks. */
typedef struct counter { size_t live, peak; long allocs; } counter;
static void *counting_alloc(size_t n, void *ud) {
    counter *c = (counter *)ud;
    size_t *p = (size_t *)malloc(n + 16);
    if (!p) return NULL;
    p[0] = n;
    c->live += n;
    c->allocs++;
    if (c->live > c->peak) c->peak = c->live;
    return (char *)p + 16;
}
static void counting_free(void *q, void *ud) {
    counter *c = (counter *)ud;
    size_t *p = (size_t *)((char *)q - 16);
    c->live -= p[0];
    free(p);
}
static dk_registry *counted_registry(counter *c) {
    dk_registry_desc d;
    dk_registry *r;
    memset(&d, 0, sizeof d);
    memset(c, 0, sizeof *c);
    d.alloc = counting_alloc;
    d.free = counting_free;
    d.alloc_user_data = c;
    d.logger.func = silent;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    return r;
}

/* A quiescent point: in the default mode the program declares it; with call
   epochs the registry has already freed what it could, and reclaim only
   confirms it. */
static void quiesce(dk_registry *r) { assert_int_equal(dk_registry_reclaim(r), DK_OK); }

/* The registry's statistics count what it holds through its allocator:
   everything but the registry object itself. */
static size_t unaccounted(dk_registry *r, const counter *c) {
    dk_registry_stats st;
    dk_registry_read_stats(r, &st);
    return c->live - st.live_bytes;
}

static void test_impl_cycles_bounded(void **state) {
    counter c;
    dk_registry *r = counted_registry(&c);
    dk_registration *def, *h;
    const dk_operator *op;
    size_t after_warmup = 0, fixed;
    dk_registry_stats st;
    int i, one = 1;
    (void)state;
    assert_int_equal(dk_def(r, "mem::op(Tensor x) -> Tensor", &def), DK_OK);
    op = dk_op_lookup(r, "mem::op");
    fixed = unaccounted(r, &c);
    for (i = 1; i <= CYCLES_IMPL; i++) {
        assert_int_equal(dk_impl(r, "mem::op", DK_CPU, dk_unboxed(DK_FN(k_value), &one), &h), DK_OK);
        if (i % 997 == 0) assert_int_equal(unary_call(op, cpu_tensor()), 1);
        assert_int_equal(dk_deregister(h), DK_OK);
        if (i % 1000 == 0) {
            quiesce(r);
            if (i == 1000) after_warmup = c.live;
        }
    }
    quiesce(r);
    dk_registry_read_stats(r, &st);
    printf("  %d impl/deregister cycles: %lu bytes after 1,000, %lu at the end, peak %lu; %ld allocations\n",
           CYCLES_IMPL, (unsigned long)after_warmup, (unsigned long)c.live, (unsigned long)c.peak, c.allocs);
    assert_true(c.live <= 2 * after_warmup);
    assert_int_equal(st.retired_bytes, 0);
    assert_int_equal(st.operators, 1);
    assert_int_equal(unaccounted(r, &c), fixed);
    dk_registry_destroy(r);
    assert_int_equal(c.live, 0);
}

static void test_fresh_name_cycles_bounded(void **state) {
    counter c;
    dk_registry *r = counted_registry(&c);
    dk_registration *h;
    size_t after_warmup = 0;
    dk_registry_stats st;
    char schema[64];
    int i;
    (void)state;
    for (i = 1; i <= CYCLES_DEF; i++) {
        snprintf(schema, sizeof schema, "fresh::op%d(Tensor x) -> Tensor", i);
        assert_int_equal(dk_def(r, schema, &h), DK_OK);
        assert_int_equal(dk_deregister(h), DK_OK);
        if (i % 1000 == 0) {
            quiesce(r);
            if (i == 1000) after_warmup = c.live;
        }
    }
    quiesce(r);
    dk_registry_read_stats(r, &st);
    printf("  %d fresh-name def/deregister cycles: %lu bytes after 1,000, %lu at the end, peak %lu\n", CYCLES_DEF,
           (unsigned long)after_warmup, (unsigned long)c.live, (unsigned long)c.peak);
    assert_true(c.live <= 2 * after_warmup);
    assert_int_equal(st.operators, 0);
    assert_null(dk_op_lookup(r, "fresh::op1"));
    /* the ids of operators that went away are used again */
    assert_int_equal(dk_def(r, "fresh::again(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_op_lookup(r, "fresh::again")->id, 0);
    dk_registry_destroy(r);
    assert_int_equal(c.live, 0);
}

/* Library open/close with one def and one impl, and fallback churn. */
static void lib_block(dk_library *m) {
    assert_int_equal(dk_library_def(m, "op(Tensor x) -> Tensor"), DK_OK);
    assert_int_equal(dk_library_impl(m, "op", DK_CPU, dk_unboxed(DK_FN(k_value), NULL)), DK_OK);
}
static void test_library_and_fallback_cycles_bounded(void **state) {
    counter c;
    dk_registry *r = counted_registry(&c);
    dk_registration *h, *fb;
    size_t after_warmup = 0;
    int i;
    (void)state;
    assert_int_equal(dk_def(r, "keep::op(Tensor x) -> Tensor", &h), DK_OK);
    for (i = 1; i <= 20000; i++) {
        dk_library *lib;
        assert_int_equal(dk_library_run(r, DK_LIBRARY_KIND_DEF, "churn", DK_Undefined, lib_block, &lib), DK_OK);
        assert_int_equal(dk_library_close(lib), DK_OK);
        assert_int_equal(dk_fallback(r, DK_Tracer, dk_fallthrough(), &fb), DK_OK);
        assert_int_equal(dk_deregister(fb), DK_OK);
        if (i % 1000 == 0) {
            quiesce(r);
            if (i == 1000) after_warmup = c.live;
        }
    }
    quiesce(r);
    printf("  20000 library open/close + fallback cycles: %lu bytes after 1,000, %lu at the end\n",
           (unsigned long)after_warmup, (unsigned long)c.live);
    assert_true(c.live <= 2 * after_warmup);
    assert_null(dk_op_lookup(r, "churn::op"));
    dk_registry_destroy(r);
}

/* Everything deregistered and reclaimed: the registry holds what a new one does. */
static void test_reclaim_returns_to_empty(void **state) {
    counter fresh, used;
    dk_registry *a = counted_registry(&fresh), *b = counted_registry(&used);
    dk_registration *h[6];
    int one = 1;
    (void)state;
    assert_int_equal(dk_def(b, "e::a(Tensor x) -> Tensor", &h[0]), DK_OK);
    assert_int_equal(dk_impl(b, "e::a", DK_CPU, dk_unboxed(DK_FN(k_value), &one), &h[1]), DK_OK);
    assert_int_equal(dk_impl(b, "e::b", DK_Autograd, dk_unboxed(DK_FN(k_value), &one), &h[2]), DK_OK);
    assert_int_equal(dk_fallback(b, DK_Tracer, dk_fallthrough(), &h[3]), DK_OK);
    assert_int_equal(dk_def(b, "e::c(Tensor x) -> Tensor", &h[4]), DK_OK);
    assert_int_equal(dk_impl(b, "e::c", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_value), &one), &h[5]),
                     DK_OK);
    assert_int_equal(dk_deregister(h[5]), DK_OK);
    assert_int_equal(dk_deregister(h[1]), DK_OK);
    assert_int_equal(dk_deregister(h[0]), DK_OK);
    assert_int_equal(dk_deregister(h[3]), DK_OK);
    assert_int_equal(dk_deregister(h[2]), DK_OK);
    assert_int_equal(dk_deregister(h[4]), DK_OK);
    quiesce(b);
    /* the ops array and the index (64 buckets of 32 bytes, cache-line
       aligned) keep their grown size: compare the rest */
    assert_true(used.live >= fresh.live);
    assert_true(used.live - fresh.live <= 64 * sizeof(void *) + 64 * 32 + 64 + 256);
    dk_registry_destroy(a);
    dk_registry_destroy(b);
    assert_int_equal(used.live, 0);
}

/* ---- introspection and failed calls from listener and log hooks ------------ */

static dk_registry *hook_reg;
static int hook_checks;
static void introspect(const dk_operator *op) {
    dk_operator *found = NULL;
    dk_explanation e;
    char buf[256];
    dk_registration *h = (dk_registration *)1;
    assert_int_equal(dk_op_lookup_defined(hook_reg, op->name, &found), DK_OK);
    assert_ptr_equal(found, op);
    (void)dk_op_has_kernel_for_key(op, DK_CPU);
    assert_true(dk_op_state_to_string(op, buf, sizeof buf) > 0);
    (void)dk_op_computed_table_to_string(op, buf, sizeof buf);
    assert_non_null(dk_op_compute_slot(op, 0, NULL));
    assert_int_equal(dk_explain(op, dk_ks_from_key(DK_CUDA), &e), DK_OK);
    assert_true(dk_explain_to_string(op, &e, buf, sizeof buf) > 0);
    dk_registry_each_op(hook_reg, NULL, NULL);
    /* a failed call (no kernel for CUDA) reports and returns */
    {
        tensor t;
        t.ks = dk_ks_from_key(DK_CUDA);
        t.v = 0;
        assert_int_equal(unary_call(op, t), 0);
        assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    }
    /* registering from inside the hook is refused, not a deadlock */
    assert_int_equal(dk_def(hook_reg, "hook::other(Tensor x) -> Tensor", &h), DK_ERR_REENTRANT);
    assert_ptr_equal(h, (dk_registration *)1);
    assert_int_equal(dk_registry_reclaim(hook_reg), DK_ERR_REENTRANT);
    hook_checks++;
}
static void on_def(const dk_operator *op, void *ud) { (void)ud; introspect(op); }
static void on_log(dk_log_level level, dk_log_item item, const char *m, void *ud) {
    (void)level; (void)item; (void)m; (void)ud;
    introspect(dk_op_lookup(hook_reg, "hook::op"));
}

static void test_hooks_may_introspect(void **state) {
    dk_registry_desc d;
    dk_registration *h, *l, *k1, *k2;
    int one = 1;
    (void)state;
    alarm(60); /* a deadlock fails the test instead of hanging make test */
    memset(&d, 0, sizeof d);
    d.logger.func = on_log;
    assert_int_equal(dk_registry_create(&d, &hook_reg), DK_OK);
    assert_int_equal(dk_registry_add_listener(hook_reg, on_def, on_def, NULL, &l), DK_OK);
    assert_int_equal(dk_def(hook_reg, "hook::op(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(hook_checks, 1);
    assert_int_equal(dk_impl(hook_reg, "hook::op", DK_CPU, dk_unboxed(DK_FN(k_value), &one), &k1), DK_OK);
    assert_int_equal(dk_impl(hook_reg, "hook::op", DK_CPU, dk_unboxed(DK_FN(k_value), &one), &k2), DK_OK);
    assert_int_equal(hook_checks, 2); /* the override warning went to the log hook */
    assert_null(dk_op_lookup(hook_reg, "hook::other"));
    assert_int_equal(dk_deregister(h), DK_OK); /* on_deregistered */
    assert_int_equal(hook_checks, 3);
    dk_registry_destroy(hook_reg);
    alarm(0);
}

/* ---- the default registry ---------------------------------------------------- */

static dk_keyset tensor_ks(const void *t, void *ud) { (void)ud; return ((const tensor *)t)->ks; }
static void boxed_one(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks;
    dk_stack_pop(s);
    dk_stack_push(s, dk_int(41));
}

static void test_default_registry(void **state) {
    dk_registry *first = dk_registry_default(), *second;
    dk_registry_desc d;
    dk_registration *h;
    dk_value storage[4];
    dk_stack st;
    tensor t;
    (void)state;
    assert_non_null(first);
    assert_int_equal(dk_def(first, "dflt::op(Tensor x) -> Tensor", &h), DK_OK);
    dk_registry_destroy(first);
    /* configured before it exists: the next one is created with the hooks */
    memset(&d, 0, sizeof d);
    d.tensor_keyset = tensor_ks;
    d.logger.func = silent;
    assert_int_equal(dk_registry_default_configure(&d), DK_OK);
    second = dk_registry_default();
    assert_non_null(second);
    assert_null(dk_op_lookup(second, "dflt::op"));  /* a fresh registry */
    assert_int_equal(dk_def(second, "dflt::op(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(second, "dflt::op", DK_CPU, dk_boxed(boxed_one, NULL), &h), DK_OK);
    t = cpu_tensor();
    dk_stack_init(&st, storage, 4);
    dk_stack_push(&st, dk_tensor(&t));
    dk_call_boxed(dk_op_lookup(second, "dflt::op"), &st);
    assert_int_equal(dk_last_call_status(), DK_OK);
    assert_int_equal(st.size, 1);
    assert_int_equal(st.values[0].as.i, 41);
    /* configured after: the hooks change in place */
    d.tensor_keyset = NULL;
    assert_int_equal(dk_registry_default_configure(&d), DK_OK);
    assert_ptr_equal(dk_registry_default(), second);
    dk_stack_init(&st, storage, 4);
    dk_stack_push(&st, dk_tensor(&t));
    dk_call_boxed(dk_op_lookup(second, "dflt::op"), &st);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL); /* no tensor keyset: "no tensor arguments" */
    dk_registry_destroy(second);
    memset(&d, 0, sizeof d);
    assert_int_equal(dk_registry_default_configure(&d), DK_OK);
}

/* ---- adapters belong to the def --------------------------------------------------- */

static void box_one(const void *args, dk_stack *s) { (void)args; dk_stack_push(s, dk_none()); }
static void unbox_one(dk_stack *s, void *result) { (void)s; (void)result; }
static void call_one(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks;
    dk_stack_pop(s);
    dk_stack_push(s, dk_int(7));
}
static const dk_op_adapters adapters_a = { "(Tensor) (Tensor)", 1, 1, box_one, unbox_one, call_one };
static const dk_op_adapters adapters_b = { "(Tensor) (Tensor, int)", 2, 1, box_one, unbox_one, call_one };


/* An accessor's read inside a read section (under call epochs the tables it
   reads may otherwise be freed; DK_DEBUG_READS checks it). */
#define IN_READ_SECTION(stmt) do { dk_call_enter(); stmt; dk_call_exit(); } while (0)

static void test_adapters_belong_to_def(void **state) {
    dk_registry *r;
    dk_registration *def, *impl, *dup = NULL;
    dk_def_options adapters_a_opts, adapters_b_opts;
    const dk_operator *op;
    dk_value storage[4];
    dk_stack st;
    char before[2048], after[2048];
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_registry_set_call_error(r, quiet_call_error, NULL), DK_OK);
    memset(&adapters_a_opts, 0, sizeof adapters_a_opts);
    memset(&adapters_b_opts, 0, sizeof adapters_b_opts);
    adapters_a_opts.adapters = &adapters_a;
    adapters_b_opts.adapters = &adapters_b;
    assert_int_equal(dk_def_with(r, "ad::op(Tensor x) -> Tensor", &adapters_a_opts, &def), DK_OK);
    assert_int_equal(dk_impl(r, "ad::op", DK_CPU, dk_unboxed(DK_FN(k_value), NULL), &impl), DK_OK);
    op = dk_op_lookup(r, "ad::op");
    IN_READ_SECTION(assert_ptr_equal(dk_op_table_of(op)->def->adapters, &adapters_a));
    assert_int_equal(dk_op_check_signature(op, adapters_a.signature), DK_OK);
    /* a second def fails and leaves everything as it was */
    dk_op_state_to_string(op, before, sizeof before);
    assert_int_equal(dk_def_with(r, "ad::op(Tensor x, int n) -> Tensor", &adapters_b_opts, &dup),
                     DK_ERR_DUPLICATE_DEF);
    assert_null(dup);
    dk_op_state_to_string(op, after, sizeof after);
    assert_string_equal(before, after);
    IN_READ_SECTION(assert_ptr_equal(dk_op_table_of(op)->def->adapters, &adapters_a));
    /* with adapters of a schema not its own (refused below alone), a second
       def is reported as a duplicate too: that check comes first */
    assert_int_equal(dk_def_with(r, "ad::op(Tensor x, int n) -> Tensor", &adapters_a_opts, &dup),
                     DK_ERR_DUPLICATE_DEF);
    assert_null(dup);
    dk_op_state_to_string(op, after, sizeof after);
    assert_string_equal(before, after);
    /* the def goes: the operator lives on (its kernel), without adapters */
    assert_int_equal(dk_deregister(def), DK_OK);
    assert_ptr_equal(dk_op_lookup(r, "ad::op"), op);
    IN_READ_SECTION(assert_null(dk_op_table_of(op)->def));
    IN_READ_SECTION(assert_null(dk_op_schema(op)));
    assert_int_equal(dk_op_check_signature(op, adapters_a.signature), DK_ERR_NO_ADAPTER);
    dk_stack_init(&st, storage, 4);
    dk_stack_push(&st, dk_none());
    last_failure = DK_OK;
    dk_redispatch_boxed(op, dk_ks_from_key(DK_CPU), &st);   /* no dangling adapters: a clear error */
    assert_int_equal(last_failure, DK_ERR_NO_ADAPTER);
    /* another signature can be defined now, with its own adapters only */
    dk_op_state_to_string(op, before, sizeof before);
    assert_int_equal(dk_def_with(r, "ad::op(Tensor x, int n) -> Tensor", &adapters_a_opts, &dup),
                     DK_ERR_WRONG_SIGNATURE);
    assert_null(dup);
    dk_op_state_to_string(op, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(dk_def_with(r, "ad::op(Tensor x, int n) -> Tensor", &adapters_b_opts, &def), DK_OK);
    IN_READ_SECTION(assert_ptr_equal(dk_op_table_of(op)->def->adapters, &adapters_b));
    assert_int_equal(dk_op_set_adapters((dk_operator *)op, &adapters_a), DK_ERR_WRONG_SIGNATURE);
    dk_registry_destroy(r);
}

/* ---- a hook and its user data are published together ---------------------------- */

static int tag_a = 1, tag_b = 2;
static long torn, seen_hooks;
static volatile int race_done;
static void trace_a(const dk_operator *op, dk_keyset ks, dk_key k, int re, void *ud) {
    (void)op; (void)ks; (void)k; (void)re;
    if (ud != &tag_a) __atomic_add_fetch(&torn, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&seen_hooks, 1, __ATOMIC_RELAXED);
}
static void trace_b(const dk_operator *op, dk_keyset ks, dk_key k, int re, void *ud) {
    (void)op; (void)ks; (void)k; (void)re;
    if (ud != &tag_b) __atomic_add_fetch(&torn, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&seen_hooks, 1, __ATOMIC_RELAXED);
}
static void error_a(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    (void)op; (void)ks; (void)s; (void)m;
    if (ud != &tag_a) __atomic_add_fetch(&torn, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&seen_hooks, 1, __ATOMIC_RELAXED);
}
static void error_b(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    (void)op; (void)ks; (void)s; (void)m;
    if (ud != &tag_b) __atomic_add_fetch(&torn, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&seen_hooks, 1, __ATOMIC_RELAXED);
}
static dk_registry *race_reg;
static void *hook_flipper(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < RACE_ROUNDS / 20; i++) {
        dk_trace_set(i & 1 ? trace_a : trace_b, i & 1 ? &tag_a : &tag_b);
        assert_int_equal(dk_registry_set_call_error(race_reg, i & 1 ? error_a : error_b, i & 1 ? &tag_a : &tag_b),
                         DK_OK);
        if (i % 64 == 0) sched_yield();
    }
    __atomic_store_n(&race_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_hooks_never_torn(void **state) {
    pthread_t t;
    dk_registration *h;
    const dk_operator *op;
    tensor x;
    long calls = 0;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &race_reg), DK_OK);
    assert_int_equal(dk_def(race_reg, "race::op(Tensor x) -> Tensor", &h), DK_OK);
    op = dk_op_lookup(race_reg, "race::op");
    x.ks = dk_ks_from_key(DK_CUDA); /* no kernel: every call reports an error */
    x.v = 0;
    torn = seen_hooks = 0;
    race_done = 0;
    dk_trace_set(trace_a, &tag_a);
    assert_int_equal(pthread_create(&t, NULL, hook_flipper, NULL), 0);
    while (!__atomic_load_n(&race_done, __ATOMIC_SEQ_CST) || calls < RACE_ROUNDS / 10) {
        (void)unary_call(op, x);
        calls++;
    }
    pthread_join(t, NULL);
    dk_trace_set(NULL, NULL);
    printf("  %ld calls, %ld hook runs while hooks were replaced, %ld with another hook's user data\n", calls,
           seen_hooks, torn);
    assert_int_equal(torn, 0);
    assert_true(seen_hooks >= calls); /* a trace per call, and an error once the flipper set one */
    dk_registry_destroy(race_reg);
}

/* ---- an explanation describes one state ----------------------------------------- */

static dk_registry *ex_reg;
static int ex_kernel_value = 5;
static void *ex_flipper(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < RACE_ROUNDS / 20; i++) {
        dk_registration *h;
        assert_int_equal(dk_impl(ex_reg, "ex::op", DK_CPU, dk_unboxed(DK_FN(k_value), &ex_kernel_value), &h),
                         DK_OK);
        assert_int_equal(dk_deregister(h), DK_OK);
    }
    __atomic_store_n(&race_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_explain_is_one_state(void **state) {
    pthread_t t;
    dk_registration *def, *math;
    const dk_operator *op;
    long n = 0, bad = 0;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &ex_reg), DK_OK);
    assert_int_equal(dk_registry_set_hooks(ex_reg, &(dk_registry_desc){ .logger.func = silent }), DK_OK);
    assert_int_equal(dk_def(ex_reg, "ex::op(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(ex_reg, "ex::op", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_value), NULL), &math),
                     DK_OK);
    op = dk_op_lookup(ex_reg, "ex::op");
    race_done = 0;
    assert_int_equal(pthread_create(&t, NULL, ex_flipper, NULL), 0);
    while (!__atomic_load_n(&race_done, __ATOMIC_SEQ_CST) || n < RACE_ROUNDS / 10) {
        dk_explanation e;
        dk_call_enter(); /* the explanation's kernel pointer is read inside the call bracket */
        assert_int_equal(dk_explain(op, dk_ks_from_key(DK_CPU), &e), DK_OK);
        if (e.kernel->user_data == &ex_kernel_value) bad += strcmp(e.reason, "kernel") != 0;
        else bad += strcmp(e.reason, "math kernel") != 0;
        dk_call_exit();
        n++;
    }
    pthread_join(t, NULL);
    printf("  %ld explanations while the CPU kernel came and went: %ld mixed\n", n, bad);
    assert_int_equal(bad, 0);
    dk_registry_destroy(ex_reg);
}

/* ---- value readers outside calls, beside a def that comes and goes ------------------ */

/* dk_op_check_signature and dk_op_lookup_defined read the snapshot and the
   def's record (its schema text, formatted into their messages) outside any
   call: with call epochs a change frees what no call holds, so they bracket
   themselves (ASan found both reading a freed record before they did). */
static dk_registry *sig_reg;
static void *sig_churner(void *arg) {
    dk_registration *def = (dk_registration *)arg, *h;
    int i;
    for (i = 0; i < RACE_ROUNDS / 20; i++) {
        assert_int_equal(dk_impl(sig_reg, "sig::op", DK_CPU, dk_unboxed(DK_FN(k_value), NULL), &h), DK_OK);
        assert_int_equal(dk_deregister(h), DK_OK);
        if (i % 50 == 0) {   /* the def's record goes too, and comes back with another schema */
            assert_int_equal(dk_deregister(def), DK_OK);
            assert_int_equal(dk_def(sig_reg, i % 100 ? "sig::op(Tensor x) -> Tensor" : "sig::op(Tensor x, int y=1) -> Tensor",
                                    &def),
                             DK_OK);
        }
    }
    __atomic_store_n(&race_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}
static void test_value_readers_beside_def_churn(void **state) {
    pthread_t t;
    dk_registration *def, *keep;
    dk_operator *op, *found;
    long n = 0, no_adapter = 0, not_found = 0, other = 0;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &sig_reg), DK_OK);
    assert_int_equal(dk_def(sig_reg, "sig::op(Tensor x) -> Tensor", &def), DK_OK);
    /* a CUDA kernel keeps the operator while its def comes and goes */
    assert_int_equal(dk_impl(sig_reg, "sig::op", DK_CUDA, dk_unboxed(DK_FN(k_value), NULL), &keep), DK_OK);
    op = dk_op_lookup(sig_reg, "sig::op");
    race_done = 0;
    assert_int_equal(pthread_create(&t, NULL, sig_churner, def), 0);
    while (!__atomic_load_n(&race_done, __ATOMIC_SEQ_CST) || n < RACE_ROUNDS / 10) {
        dk_status s = dk_op_check_signature(op, "int(const dk_kernel *, dk_keyset, int)");
        if (s == DK_ERR_NO_ADAPTER) no_adapter++;   /* defined without adapters, or no def at that moment */
        else other++;
        s = dk_op_lookup_defined(sig_reg, "sig::op", &found);
        if (s == DK_ERR_NOT_FOUND) not_found++;
        else if (s != DK_OK || found != op) other++;
        n++;
    }
    pthread_join(t, NULL);
    printf("  %ld signature checks and lookups beside %d def cycles: %ld without adapters, %ld between defs, "
           "%ld other\n", n, RACE_ROUNDS / 20 / 50, no_adapter, not_found, other);
    assert_int_equal(no_adapter, n);
    assert_int_equal(other, 0);
    assert_int_equal(dk_deregister(keep), DK_OK);
    dk_registry_destroy(sig_reg);
}

/* ---- with call epochs, synchronize waits for the calls in flight ---------------------- */

#ifdef DK_CALL_EPOCHS
static volatile int in_kernel, dereg_started, kernel_done;
static int slow_kernel(const dk_kernel *k, dk_keyset ks, tensor x) {
    int i;
    (void)k; (void)ks; (void)x;
    __atomic_store_n(&in_kernel, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&dereg_started, __ATOMIC_SEQ_CST)) sched_yield();
    for (i = 0; i < 2000; i++) sched_yield(); /* the deregistration runs meanwhile */
    __atomic_store_n(&kernel_done, 1, __ATOMIC_SEQ_CST);
    return 3;
}
static const dk_operator *wait_op;
static void *slow_caller(void *arg) {
    (void)arg;
    assert_int_equal(unary_call(wait_op, cpu_tensor()), 3);
    return NULL;
}

static void test_synchronize_waits_for_calls(void **state) {
    dk_registry *r;
    dk_registration *def, *h;
    dk_registry_stats st;
    pthread_t t;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_def(r, "wait::op(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(r, "wait::op", DK_CPU, dk_unboxed(DK_FN(slow_kernel), NULL), &h), DK_OK);
    wait_op = dk_op_lookup(r, "wait::op");
    assert_int_equal(pthread_create(&t, NULL, slow_caller, NULL), 0);
    while (!__atomic_load_n(&in_kernel, __ATOMIC_SEQ_CST)) sched_yield();
    __atomic_store_n(&dereg_started, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(dk_deregister(h), DK_OK);    /* returns at once */
    assert_int_equal(dk_registry_synchronize(r), DK_OK);
    assert_int_equal(__atomic_load_n(&kernel_done, __ATOMIC_SEQ_CST), 1); /* returned only after the kernel */
    dk_registry_read_stats(r, &st);
    assert_int_equal(st.retired_bytes, 0);  /* and freed what it retired */
    pthread_join(t, NULL);
    dk_registry_destroy(r);
}

/* Inside a call, reclaim refuses and deregistration does not wait for itself. */
static dk_registry *self_reg;
static dk_registration *self_handle;
static int self_kernel(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k; (void)ks; (void)x;
    assert_int_equal(dk_registry_reclaim(self_reg), DK_ERR_IN_CALL);
    assert_int_equal(dk_deregister(self_handle), DK_OK);
    return 4;
}
static void test_deregister_from_inside_a_call(void **state) {
    dk_registration *def;
    dk_registry_stats st;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &self_reg), DK_OK);
    assert_int_equal(dk_def(self_reg, "self::op(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(self_reg, "self::op", DK_CPU, dk_unboxed(DK_FN(self_kernel), NULL), &self_handle),
                     DK_OK);
    assert_int_equal(unary_call(dk_op_lookup(self_reg, "self::op"), cpu_tensor()), 4);
    dk_registry_read_stats(self_reg, &st);
    assert_true(st.retired_bytes > 0);  /* still held: the call was running */
    assert_int_equal(dk_registry_reclaim(self_reg), DK_OK);
    dk_registry_read_stats(self_reg, &st);
    assert_int_equal(st.retired_bytes, 0);
    dk_registry_destroy(self_reg);
}

/* Writers read each attached thread's call word in that thread's TLS: a
   thread's exit unlinks it first. Short threads (EXIT_CALLS calls each, two
   at a time) come and go beside a writer that, EXIT_WRITER_CYCLES times,
   registers a new kernel over the operator's CPU kernel, deregisters the
   previous one, synchronizes, then poisons and frees the previous one's
   data. Counted: every call answered the value (never the poison, never
   "no kernel"), the writer's cycles all DK_OK, every joined thread's
   record unlinked from its word, the record list grown by at most the
   threads alive at once. ThreadSanitizer sees a writer that reads a gone
   thread's TLS as a race with the next thread that gets that memory. */
enum { EXIT_CALLS = 50, EXIT_VALUE = 7, EXIT_POISON = -1 };
static dk_registry *exit_reg;
static const dk_operator *exit_op;
static int exit_writer_done, exit_writer_bad;
static long exit_answered, exit_missing, exit_poisoned, exit_other, exit_reported;
static void exit_call_error(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    (void)op; (void)ks; (void)m; (void)ud;
    if (s == DK_ERR_NO_KERNEL) __atomic_fetch_add(&exit_reported, 1, __ATOMIC_RELAXED);
}
static int k_exit(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)ks; (void)x;
    return __atomic_load_n((const int *)k->user_data, __ATOMIC_RELAXED);
}
static void *exit_short_thread(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < EXIT_CALLS; i++) {
        int v = unary_call(exit_op, cpu_tensor());
        if (v == EXIT_VALUE) __atomic_fetch_add(&exit_answered, 1, __ATOMIC_RELAXED);
        else if (v == EXIT_POISON) __atomic_fetch_add(&exit_poisoned, 1, __ATOMIC_RELAXED);
        else if (v == 0) __atomic_fetch_add(&exit_missing, 1, __ATOMIC_RELAXED);   /* reported: exit_call_error */
        else __atomic_fetch_add(&exit_other, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}
static dk_registration *exit_h;
static int *exit_data;
/* a new CPU kernel over the current one (under which calls keep answering) */
static int exit_impl(void) {
    int *data = (int *)malloc(sizeof *data);
    dk_registration *h;
    if (!data) abort();
    __atomic_store_n(data, EXIT_VALUE, __ATOMIC_RELAXED);
    if (dk_impl(exit_reg, "exit::op", DK_CPU, dk_unboxed(DK_FN(k_exit), data), &h) != DK_OK) return 0;
    if (exit_h) {
        if (dk_deregister(exit_h) != DK_OK || dk_registry_synchronize(exit_reg) != DK_OK) return 0;
        __atomic_store_n(exit_data, EXIT_POISON, __ATOMIC_RELAXED);   /* no call is inside k_exit with it now */
        free(exit_data);
    }
    exit_h = h;
    exit_data = data;
    return 1;
}
static void *exit_writer(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < EXIT_WRITER_CYCLES; i++)
        if (!exit_impl()) exit_writer_bad++;
    __atomic_store_n(&exit_writer_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}
static int records(int linked_only) {
    int n = 0;
    const dk__reader *rec;
    dk__mutex_lock(&dk__threads_lock);
    for (rec = dk__readers; rec; rec = rec->next) n += !linked_only || rec->ctr != NULL;
    dk__mutex_unlock(&dk__threads_lock);
    return n;
}
static void test_thread_exits_beside_synchronize(void **state) {
    dk_registration *def;
    pthread_t w, a, b;
    long rounds = 0, threads;
    int before;
    dk_registry_desc d;
    (void)state;
    memset(&d, 0, sizeof d);
    d.logger.func = silent;   /* each new kernel overrides the last: a warning each */
    assert_int_equal(dk_registry_create(&d, &exit_reg), DK_OK);
    assert_int_equal(dk_registry_set_call_error(exit_reg, exit_call_error, NULL), DK_OK);
    assert_int_equal(dk_def(exit_reg, "exit::op(Tensor x) -> Tensor", &def), DK_OK);
    exit_op = dk_op_lookup(exit_reg, "exit::op");
    assert_true(exit_impl());
    before = records(0);
    assert_int_equal(pthread_create(&w, NULL, exit_writer, NULL), 0);
    while (rounds < EXIT_ROUNDS || !__atomic_load_n(&exit_writer_done, __ATOMIC_SEQ_CST)) {
        assert_int_equal(pthread_create(&a, NULL, exit_short_thread, NULL), 0);
        assert_int_equal(pthread_create(&b, NULL, exit_short_thread, NULL), 0);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        rounds++;
    }
    pthread_join(w, NULL);
    threads = 2 * rounds;
    printf("  %ld short threads, %d writer cycles: %ld calls answered, %ld found no kernel, %ld poisoned, "
           "%ld other; records %d -> %d, linked %d\n", threads, EXIT_WRITER_CYCLES, exit_answered, exit_missing,
           exit_poisoned, exit_other, before, records(0), records(1));
    assert_int_equal(exit_writer_bad, 0);
    assert_int_equal(exit_poisoned, 0);
    assert_int_equal(exit_other, 0);
    assert_int_equal(exit_missing, 0);
    assert_int_equal(exit_reported, 0);
    assert_int_equal(exit_answered, threads * EXIT_CALLS);
    /* only this thread's record (if it ever called) still points to a word */
    assert_int_equal(records(1), dk__rd.rec != NULL);
    /* two short threads and the writer at a time: records reused */
    assert_true(records(0) <= before + 3);
    assert_int_equal(dk_deregister(exit_h), DK_OK);
    assert_int_equal(dk_registry_synchronize(exit_reg), DK_OK);
    free(exit_data);
    dk_registry_destroy(exit_reg);
}

/* The call word keeps 40 bits of the epoch: writers rebuild the rest around
   dk__epoch, across 2^40 too. The counters are moved forward to just below
   2^40 (no other thread is in a call here); a call held by this thread
   then keeps its exact epoch as the oldest one through grace periods that
   cross the wrap, nested calls change nothing, and a call entered after
   the wrap holds the new epoch. */
static void test_epoch_bits_rebuilt_across_wrap(void **state) {
    const uint64_t base = ((uint64_t)1 << 40) - 3;
    int i;
    (void)state;
    assert_true(dk__epoch < base);
    dk__epoch = base;
    dk__gp_ctr = (base << DK__CTR_SHIFT) | 1;
    dk_call_enter();
    for (i = 0; i < 6; i++) {
        assert_true(dk__grace_start() == base + 1 + (uint64_t)i);
        assert_true(dk__oldest_reader() == base);
        dk_call_enter();   /* nested */
        assert_true(dk__oldest_reader() == base);
        dk_call_exit();
    }
    assert_true((dk__gp_ctr >> DK__CTR_SHIFT) == ((base + 6) & (((uint64_t)1 << 40) - 1)));
    dk_call_exit();
    assert_true(dk__oldest_reader() == UINT64_MAX);
    dk_call_enter();
    assert_true(dk__oldest_reader() == base + 6);
    dk_call_exit();
    assert_int_equal(dk__in_call(), 0);
}

/* What a record holds back when its word's epoch looks ahead of dk__epoch
   (32-bit x86 with MSVC's atomics could tear a 64-bit load so, by a carry
   into the high half): everything (1: older than every tag), never a
   later epoch that would let a writer free what the call reads. */
static void test_held_epoch_ahead_holds_everything(void **state) {
    uint64_t word, now = dk__epoch;
    dk__reader fake;
    (void)state;
    memset(&fake, 0, sizeof fake);
    fake.ctr = &word;
    word = (now << DK__CTR_SHIFT) | 1;             /* entered at the current epoch */
    assert_true(dk__held(&fake) == now);
    word = ((now - 5) << DK__CTR_SHIFT) | 3;       /* 5 behind, 3 calls deep */
    assert_true(dk__held(&fake) == now - 5);
    word = ((now + 256) << DK__CTR_SHIFT) | 1;     /* ahead: the torn load's carry */
    assert_true(dk__held(&fake) == 1);
    word = ((now + 1) << DK__CTR_SHIFT) | 1;
    assert_true(dk__held(&fake) == 1);
    word = ((now + 256) << DK__CTR_SHIFT);         /* outside calls: nothing */
    assert_true(dk__held(&fake) == 0);
}

/* Late calls (Note [Reclamation]): once a thread's exit destructor has run,
   its calls never link its word again (nothing would unlink it before the
   TLS goes); each outermost one counts in dk__late_calls while it runs,
   and while it does writers hold back everything. The thread runs
   dispatch.h's destructor itself (its key's value cleared first, so that
   glibc does not run it again), then calls as a later destructor would:
   typed calls, nested manual brackets, a bracket left by dk_thread_offline. */
typedef struct late_result { int attached, exited, answered, counted, held_all, nested_counted, after, linked; } late_result;
static const int late_value = 7;
static void *late_thread(void *arg) {
    late_result *r = (late_result *)arg;
    tensor t = cpu_tensor();
    r->answered += unary_call(exit_op, t) == late_value;
    r->attached = dk__rd.rec != NULL && dk__thread != NULL;
    pthread_setspecific(dk__thread_key, NULL);
    dk__thread_exit(dk__thread);
    r->exited = dk__rd.exited && dk__rd.rec == NULL;
    r->answered += unary_call(exit_op, t) == late_value;   /* the out-of-line copy, late */
    r->after += dk__late_calls == 0;
    dk_call_enter();
    r->counted = dk__late_calls == 1;
    r->held_all = dk__oldest_reader() == 1;
    dk_call_enter();   /* nested */
    r->answered += unary_call(exit_op, t) == late_value;
    dk_call_exit();
    r->nested_counted = dk__late_calls == 1 && dk__in_call();
    dk_call_exit();
    r->after += dk__late_calls == 0 && !dk__in_call();
    dk_call_enter();
    dk_thread_offline();   /* the way back after a longjmp out of kernels */
    r->after += dk__late_calls == 0 && !dk__in_call();
    r->linked = records(1);
    return NULL;
}
static void test_late_calls_after_thread_exit(void **state) {
    dk_registration *def, *h;
    pthread_t t;
    late_result r;
    int linked_before;
    (void)state;
    memset(&r, 0, sizeof r);
    assert_int_equal(dk_registry_create(NULL, &exit_reg), DK_OK);
    assert_int_equal(dk_def(exit_reg, "late::op(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(exit_reg, "late::op", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&late_value), &h), DK_OK);
    exit_op = dk_op_lookup(exit_reg, "late::op");
    assert_int_equal(unary_call(exit_op, cpu_tensor()), late_value);   /* this thread attached: dispatch.h's key made */
    linked_before = records(1);
    assert_int_equal(pthread_create(&t, NULL, late_thread, &r), 0);
    pthread_join(t, NULL);
    assert_int_equal(r.attached, 1);
    assert_int_equal(r.exited, 1);
    assert_int_equal(r.answered, 3);
    assert_int_equal(r.counted, 1);
    assert_int_equal(r.held_all, 1);
    assert_int_equal(r.nested_counted, 1);
    assert_int_equal(r.after, 3);
    assert_int_equal(r.linked, linked_before);   /* the late calls linked nothing */
    assert_true(dk__late_calls == 0);
    assert_true(dk__oldest_reader() == UINT64_MAX);
    assert_int_equal(dk_deregister(h), DK_OK);
    assert_int_equal(dk_registry_synchronize(exit_reg), DK_OK);   /* nothing left to wait for */
    dk_registry_destroy(exit_reg);
}

/* At exit (dk__exiting: exit() has begun) a thread's exit destructor still
   unlinks its word and keeps its record; a call from a later destructor is
   a late one too, counted where writers see it (before: it took the inline
   way on a word no writer reads). exit() is stood in for by setting
   dk__exiting for the test's span. */
static pthread_key_t at_exit_key;
static int at_exit_go, at_exit_counted, at_exit_marked;
static int k_at_exit(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k; (void)ks; (void)x;
    at_exit_counted = dk__late_calls == 1;
    return 1;
}
static void at_exit_destructor(void *p) {
    (void)p;
    at_exit_marked = dk__rd.exited;
    (void)unary_call(exit_op, cpu_tensor());
}
static void *at_exit_thread(void *arg) {
    (void)arg;
    (void)unary_call(exit_op, cpu_tensor());   /* attached */
    pthread_setspecific(at_exit_key, (void *)&late_value);
    while (!__atomic_load_n(&at_exit_go, __ATOMIC_SEQ_CST)) sched_yield();
    return NULL;
}
static void test_late_call_at_exit(void **state) {
    dk_registration *def, *h;
    pthread_t t;
    int linked_before;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &exit_reg), DK_OK);
    assert_int_equal(dk_def(exit_reg, "late::at_exit(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(exit_reg, "late::at_exit", DK_CPU, dk_unboxed(DK_FN(k_at_exit), NULL), &h), DK_OK);
    exit_op = dk_op_lookup(exit_reg, "late::at_exit");
    assert_int_equal(pthread_key_create(&at_exit_key, at_exit_destructor), 0);   /* after dispatch.h's */
    linked_before = records(1);
    assert_int_equal(pthread_create(&t, NULL, at_exit_thread, NULL), 0);
    while (records(1) == linked_before) sched_yield();   /* the thread attached */
    DK__STORE_REL(&dk__exiting, 1);
    __atomic_store_n(&at_exit_go, 1, __ATOMIC_SEQ_CST);
    pthread_join(t, NULL);
    DK__STORE_REL(&dk__exiting, 0);
    assert_int_equal(at_exit_marked, 1);
    assert_int_equal(at_exit_counted, 1);
    assert_int_equal(records(1), linked_before);   /* its word unlinked, never linked again */
    assert_true(dk__late_calls == 0);
    pthread_key_delete(at_exit_key);
    dk_registry_destroy(exit_reg);
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_impl_cycles_bounded),
        cmocka_unit_test(test_fresh_name_cycles_bounded),
        cmocka_unit_test(test_library_and_fallback_cycles_bounded),
        cmocka_unit_test(test_reclaim_returns_to_empty),
        cmocka_unit_test(test_hooks_may_introspect),
        cmocka_unit_test(test_default_registry),
        cmocka_unit_test(test_adapters_belong_to_def),
        cmocka_unit_test(test_hooks_never_torn),
        cmocka_unit_test(test_explain_is_one_state),
        cmocka_unit_test(test_value_readers_beside_def_churn),
#ifdef DK_CALL_EPOCHS
        cmocka_unit_test(test_synchronize_waits_for_calls),
        cmocka_unit_test(test_deregister_from_inside_a_call),
        cmocka_unit_test(test_thread_exits_beside_synchronize),
        cmocka_unit_test(test_epoch_bits_rebuilt_across_wrap),
        cmocka_unit_test(test_held_epoch_ahead_holds_everything),
        cmocka_unit_test(test_late_calls_after_thread_exit),
        cmocka_unit_test(test_late_call_at_exit),
#endif
    };
#ifdef DK_CALL_EPOCHS
    return cmocka_run_group_tests_name("memory, hooks, re-entrancy (call epochs)", tests, NULL, NULL);
#else
    return cmocka_run_group_tests_name("memory, hooks, re-entrancy (quiescent reclaim)", tests, NULL, NULL);
#endif
}
