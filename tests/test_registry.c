/* make: variants=2_11 */
/* The operator registry: def / impl / fallback / fallthrough, handles,
   library blocks, static registration, listeners, dumps, and bad input:
   every failure returns its status, explains itself, and leaves the registry
   exactly as it was. */
#define _POSIX_C_SOURCE 200809L /* fileno, dup2 */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static int k_cpu(int x) { return x + 1; }
static int k_other(int x) { return x + 2; }
static void k_boxed(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k; (void)op; (void)ks; (void)stack;
}

/* ---- helpers --------------------------------------------------------------- */

/* Everything observable about a registry, as text. */
typedef struct { char *text; size_t len, cap; } snap;
typedef int (*dump_fn)(const dk_operator *op, char *buf, size_t size);
/* Appends dump(op), growing the buffer until the whole text fits. */
static void snap_dump(snap *s, dump_fn dump, const dk_operator *op) {
    size_t n;
    while ((n = (size_t)dump(op, s->text + s->len, s->cap - s->len)) >= s->cap - s->len) {
        s->cap *= 2;
        s->text = (char *)realloc(s->text, s->cap);
    }
    s->len += n;
}
/* The live table and the fallthrough masks. */
static int dump_live(const dk_operator *op, char *buf, size_t size) {
    size_t len = 0;
    int slot, b;
    for (slot = 0; slot < DK_NUM_SLOTS; slot++)
        len += (size_t)snprintf(buf + (len < size ? len : size), len < size ? size - len : 0, "%d:%s|", slot,
                                dk_op_slot_kernel(op, slot)->debug);
    for (b = 0; b < DK_NUM_BACKENDS; b++)
        len += (size_t)snprintf(buf + (len < size ? len : size), len < size ? size - len : 0, "%llx,",
                                (unsigned long long)dk_op_table_nonfallthrough(dk_op_table_of(op), b));
    return (int)len;
}
static int snap_op(dk_operator *op, void *ud) {
    snap_dump((snap *)ud, dk_op_state_to_string, op);
    snap_dump((snap *)ud, dk_op_computed_table_to_string, op);
    snap_dump((snap *)ud, dump_live, op);
    return 0;
}
static char *snapshot(dk_registry *r) {
    snap s;
    s.cap = 1 << 16;
    s.len = 0;
    s.text = (char *)malloc(s.cap);
    s.text[0] = '\0';
    dk_registry_each_op(r, snap_op, &s);
    return s.text;
}

/* Warnings and errors sent to the log hook. */
static char logged[8192];
static int n_logged;
static dk_log_item logged_item;
static void capture_log(dk_log_level level, dk_log_item item, const char *message, void *ud) {
    (void)ud;
    n_logged++;
    logged_item = item;
    snprintf(logged, sizeof logged, "%s%s", level == DK_LOG_WARNING ? "" : "error: ", message);
}

static dk_registry *new_registry(void) {
    dk_registry *r = NULL;
    dk_registry_desc d;
    memset(&d, 0, sizeof d);
    d.logger.func = capture_log;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    logged[0] = '\0';
    n_logged = 0;
    return r;
}

static const char *slot_debug(const dk_operator *op, dk_key k) { return dk_op_slot_kernel(op, dk_key_slot(k))->debug; }

/* ---- basics ------------------------------------------------------------------- */

static void test_def_impl_lookup(void **state) {
    dk_registry *r = new_registry();
    dk_registration *d, *i;
    dk_operator *op, *found;
    int line, l_impl;
    (void)state;
    line = __LINE__ + 1;
    assert_int_equal(dk_def(r, "myns::add.Tensor(Tensor a, Tensor b) -> Tensor", &d), DK_OK);
    op = dk_op_lookup(r, "myns::add.Tensor");
    assert_non_null(op);
    assert_null(dk_op_lookup(r, "myns::add"));
    assert_string_equal(op->name, "myns::add.Tensor");
    assert_string_equal(dk_op_schema(op), "myns::add.Tensor(Tensor a, Tensor b) -> Tensor");
    assert_int_equal(op->id, 0);
    assert_int_equal(dk_op_lookup_defined(r, "myns::add.Tensor", &found), DK_OK);
    assert_ptr_equal(found, op);
    /* every slot is the missing sentinel, never NULL */
    assert_int_equal(dk_op_slot_kernel(op, 0)->kind, DK_KERNEL_MISSING);
    l_impl = __LINE__ + 1;
    assert_int_equal(dk_impl(r, "myns::add.Tensor", DK_CPU, dk_unboxed(DK_FN(k_cpu), &line), &i), DK_OK);
    assert_ptr_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->fn, DK_FN(k_cpu));
    assert_ptr_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->user_data, &line);
    assert_int_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->key, DK_CPU);
    assert_true(dk_op_has_kernel_for_key(op, DK_CPU));
    assert_false(dk_op_has_kernel_for_key(op, DK_CUDA));
    assert_true(dk_op_has_computed_kernel_for_key(op, DK_CPU));
    assert_false(dk_op_has_computed_kernel_for_key(op, DK_CUDA));
    {
        char expect[256];
        snprintf(expect, sizeof expect, "registered at %s:%d", __FILE__, l_impl);
        assert_string_equal(slot_debug(op, DK_CPU), expect);
    }
    assert_int_equal(dk_deregister(i), DK_OK);
    assert_int_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->kind, DK_KERNEL_MISSING);
    assert_int_equal(dk_deregister(d), DK_OK);
    assert_null(dk_op_lookup(r, "myns::add.Tensor"));
    dk_registry_destroy(r);
}

static void test_impl_before_def(void **state) {
    dk_registry *r = new_registry();
    dk_registration *d, *i;
    dk_operator *op;
    (void)state;
    assert_int_equal(dk_impl(r, "late::op", DK_CUDA, dk_unboxed(DK_FN(k_cpu), NULL), &i), DK_OK);
    op = dk_op_lookup(r, "late::op");
    assert_non_null(op);
    assert_null(dk_op_schema(op));
    assert_int_equal(dk_op_lookup_defined(r, "late::op", &op), DK_ERR_NOT_FOUND);
    assert_string_equal(dk_last_error(),
                        "Could not find schema for late::op. but we found an implementation; did you forget to def() "
                        "the operator?");
    assert_int_equal(dk_def(r, "late::op(Tensor x) -> Tensor", &d), DK_OK);
    assert_int_equal(dk_op_lookup_defined(r, "late::op", &op), DK_OK);
    assert_ptr_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CUDA))->fn, DK_FN(k_cpu));
    dk_registry_destroy(r); /* frees live handles too */
}

/* With c10's messages, the override warning follows the preset's c10:
   2.x warns once per process for all operators, with its own first line,
   and never for Meta (2.11: nor MTIA); without them, every override warns
   (test_override_warning_and_restore). */
static void test_override_warning_c10_words(void **state) {
    dk_registry *r = NULL;
    dk_registry_desc desc;
    dk_registration *h;
    char expect[1024];
    int l_def, l_old, l_new, i;
    (void)state;
    memset(&desc, 0, sizeof desc);
    desc.logger.func = capture_log;
    desc.c10_messages = 1;
    assert_int_equal(dk_registry_create(&desc, &r), DK_OK);
    logged[0] = '\0';
    n_logged = 0;
    l_def = __LINE__ + 1;
    assert_int_equal(dk_def(r, "w1::op(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_def(r, "w2::op(Tensor a) -> Tensor", &h), DK_OK);
    /* Meta first: c10 2.x never warns for it, so it does not use the process's one warning
       (c10 2.x: OperatorEntry::registerKernel's TORCH_WARN_ONCE skips Meta, 2.11 MTIA too) */
    assert_int_equal(dk_impl(r, "w1::op", DK_Meta, dk_unboxed(DK_FN(k_cpu), NULL), &h), DK_OK);
    assert_int_equal(dk_impl(r, "w1::op", DK_Meta, dk_unboxed(DK_FN(k_other), NULL), &h), DK_OK);
#if DK_C10_VERSION >= 21100   /* nor, in 2.11, for MTIA (its CPU fallback overrides kernels) */
    assert_int_equal(dk_impl(r, "w1::op", DK_MTIA, dk_unboxed(DK_FN(k_cpu), NULL), &h), DK_OK);
    assert_int_equal(dk_impl(r, "w1::op", DK_MTIA, dk_unboxed(DK_FN(k_other), NULL), &h), DK_OK);
#endif
#if DK_C10_VERSION >= 20000
    assert_int_equal(n_logged, 0);
#endif
    n_logged = 0;
    l_old = __LINE__ + 1;
    assert_int_equal(dk_impl(r, "w1::op", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &h), DK_OK);
    l_new = __LINE__ + 1;
    assert_int_equal(dk_impl(r, "w1::op", DK_CPU, dk_unboxed(DK_FN(k_other), NULL), &h), DK_OK);
    for (i = 0; i < 3; i++) {   /* other operators, other keys, again */
        assert_int_equal(dk_impl(r, "w2::op", DK_CUDA, dk_unboxed(DK_FN(k_cpu), NULL), &h), DK_OK);
        assert_int_equal(dk_impl(r, "w1::op", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &h), DK_OK);
    }
#if DK_C10_VERSION >= 20000
    assert_int_equal(n_logged, 1);
    snprintf(expect, sizeof expect,
             "Warning only once for all operators,  other operators may also be overridden.\n"
             "  Overriding a previously registered kernel for the same operator and the same dispatch key\n"
             "  operator: w1::op(Tensor a) -> Tensor\n    registered at %s:%d\n  dispatch key: CPU\n"
             "  previous kernel: registered at %s:%d\n       new kernel: registered at %s:%d",
             __FILE__, l_def, __FILE__, l_old, __FILE__, l_new);
    assert_string_equal(logged, expect);
#else
    assert_int_equal(n_logged, 1 + 2 + 3);
#endif
    dk_registry_destroy(r);
}

static void test_override_warning_and_restore(void **state) {
    dk_registry *r = new_registry();
    dk_registration *d, *first, *second;
    dk_operator *op;
    char dump[4096], expect[1024];
    int l0, l1, l2;
    (void)state;
    l0 = __LINE__ + 1;
    assert_int_equal(dk_def(r, "w::op(Tensor a) -> Tensor", &d), DK_OK);
    l1 = __LINE__ + 1;
    assert_int_equal(dk_impl(r, "w::op", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &first), DK_OK);
    assert_int_equal(n_logged, 0);
    l2 = __LINE__ + 1;
    assert_int_equal(dk_impl(r, "w::op", DK_CPU, dk_unboxed(DK_FN(k_other), NULL), &second), DK_OK);
    snprintf(expect, sizeof expect,
             "Overriding a previously registered kernel for the same operator and the same dispatch key\n"
             "  operator: w::op(Tensor a) -> Tensor\n    registered at %s:%d\n  dispatch key: CPU\n"
             "  previous kernel: registered at %s:%d\n       new kernel: registered at %s:%d",
             __FILE__, l0, __FILE__, l1, __FILE__, l2);
    assert_string_equal(logged, expect);
    assert_int_equal(logged_item, DK_LOG_KERNEL_OVERRIDDEN);
    op = dk_op_lookup(r, "w::op");
    assert_ptr_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->fn, DK_FN(k_other));
    dk_op_state_to_string(op, dump, sizeof dump);
    snprintf(expect, sizeof expect,
             "name: w::op\nschema: w::op(Tensor a) -> Tensor\ndebug: registered at %s:%d\n"
             "alias analysis kind: FROM_SCHEMA\n"
             "CPU: registered at %s:%d :: (none) [ unboxed ]\n"
             "CPU (inactive): registered at %s:%d :: (none) [ unboxed ]\n",
             __FILE__, l0, __FILE__, l2, __FILE__, l1);
    assert_string_equal(dump, expect);
    /* removing the newest restores the older one */
    assert_int_equal(dk_deregister(second), DK_OK);
    assert_ptr_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->fn, DK_FN(k_cpu));
    /* removing the older one first keeps the newest active */
    assert_int_equal(dk_impl(r, "w::op", DK_CPU, dk_unboxed(DK_FN(k_other), NULL), &second), DK_OK);
    assert_int_equal(dk_deregister(first), DK_OK);
    assert_ptr_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->fn, DK_FN(k_other));
    dk_registry_destroy(r);
}

static void test_duplicate_def(void **state) {
    dk_registry *r = new_registry();
    dk_registration *d, *d2 = NULL;
    char *before, *after, expect[512];
    int l0, l1;
    (void)state;
    l0 = __LINE__ + 1;
    assert_int_equal(dk_def(r, "dup::op(Tensor a) -> Tensor", &d), DK_OK);
    before = snapshot(r);
    l1 = __LINE__ + 1;
    assert_int_equal(dk_def(r, "dup::op(Tensor a, int b) -> Tensor", &d2), DK_ERR_DUPLICATE_DEF);
    assert_null(d2);
    snprintf(expect, sizeof expect,
             "Tried to register an operator (dup::op(Tensor a, int b) -> Tensor) with the same name and overload "
             "name multiple times. Each overload's schema should only be registered with a single call to def(). "
             "Duplicate registration: registered at %s:%d. Original registration: registered at %s:%d",
             __FILE__, l1, __FILE__, l0);
    assert_string_equal(dk_last_error(), expect);
    after = snapshot(r);
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* another overload is another operator */
    assert_int_equal(dk_def(r, "dup::op.other(Tensor a) -> Tensor", &d2), DK_OK);
    dk_registry_destroy(r);
}

static void test_fallbacks(void **state) {
    dk_registry *r = new_registry();
    dk_registration *d, *fb, *fb2 = NULL, *ft;
    dk_operator *op;
    dk_key k;
    int n = 0;
    char *before, *after;
    (void)state;
    assert_int_equal(dk_def(r, "fb::op(Tensor a) -> Tensor", &d), DK_OK);
    op = dk_op_lookup(r, "fb::op");
    /* an alias fallback registers every runtime key of the alias */
    assert_int_equal(dk_fallback(r, DK_Autograd, dk_boxed(k_boxed, NULL), &fb), DK_OK);
    DK_KS_FOREACH(k, dk_alias_runtime_set(DK_Autograd)) {
        const dk_kernel *kern = dk_op_slot_kernel(op, dk_key_slot(k));
        assert_true(kern->is_fallback);
        assert_ptr_equal(kern->boxed, k_boxed);
        n++;
    }
    assert_int_equal(n, DK_NUM_BACKENDS + 2);
    /* a second fallback at a covered key fails and changes nothing */
    before = snapshot(r);
    assert_int_equal(dk_fallback(r, DK_AutogradCUDA, dk_fallthrough(), &fb2), DK_ERR_DUPLICATE_FALLBACK);
    assert_non_null(strstr(dk_last_error(), "Tried to register multiple backend fallbacks for the same dispatch key "
                                            "AutogradCUDA; previous registration registered at"));
    after = snapshot(r);
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* fallbacks come after kernels; operators defined later see them */
    assert_int_equal(dk_def(r, "fb::later(Tensor a) -> Tensor", &d), DK_OK);
    assert_true(dk_op_slot_kernel(dk_op_lookup(r, "fb::later"), dk_key_slot(DK_AutogradMeta))->is_fallback);
    assert_int_equal(dk_deregister(fb), DK_OK);
    assert_int_equal(dk_op_slot_kernel(op, dk_key_slot(DK_AutogradCPU))->kind, DK_KERNEL_MISSING);
    /* fallthrough fallback: masked per backend */
    assert_int_equal(dk_fallback(r, DK_AutogradCPU, dk_fallthrough(), &ft), DK_OK);
    assert_int_equal(dk_op_slot_kernel(op, dk_key_slot(DK_AutogradCPU))->kind, DK_KERNEL_FALLTHROUGH);
    assert_false(dk_op_table_nonfallthrough(dk_op_table_of(op), 0) & dk_ks_from_key(DK_AutogradFunctionality).repr);
    assert_true(dk_op_table_nonfallthrough(dk_op_table_of(op), 1) & dk_ks_from_key(DK_AutogradFunctionality).repr);
    assert_int_equal(dk_deregister(ft), DK_OK);
    assert_true(dk_op_table_nonfallthrough(dk_op_table_of(op), 0) & dk_ks_from_key(DK_AutogradFunctionality).repr);
    /* a non-per-backend fallthrough clears the bit for every backend */
    assert_int_equal(dk_fallback(r, DK_Tracer, dk_fallthrough(), &ft), DK_OK);
    for (n = 0; n < DK_NUM_BACKENDS; n++) assert_false(dk_op_table_nonfallthrough(dk_op_table_of(op), n) & dk_ks_from_key(DK_Tracer).repr);
    dk_registry_destroy(r);
}

/* c10's oracle example (pytorch-facts.md §4): CPU + CompositeImplicitAutograd + Autograd. */
static void test_resolution_example(void **state) {
    dk_registry *r = new_registry();
    dk_registration *h;
    dk_operator *op;
    const char *reason;
    (void)state;
    assert_int_equal(dk_def(r, "ex::op(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(r, "ex::op", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &h), DK_OK);
    assert_int_equal(dk_impl(r, "ex::op", DK_Undefined, dk_unboxed(DK_FN(k_other), NULL), &h), DK_OK); /* catch-all */
    assert_int_equal(dk_impl(r, "ex::op", DK_Autograd, dk_boxed(k_boxed, NULL), &h), DK_OK);
    op = dk_op_lookup(r, "ex::op");
    dk_op_compute_slot(op, dk_key_slot(DK_CPU), &reason);
    assert_string_equal(reason, "kernel");
    dk_op_compute_slot(op, dk_key_slot(DK_CUDA), &reason);
    assert_string_equal(reason, "math kernel");
    dk_op_compute_slot(op, dk_key_slot(DK_AutogradCPU), &reason);
    assert_string_equal(reason, "autograd kernel");
    dk_op_compute_slot(op, dk_key_slot(DK_AutogradCUDA), &reason);
    assert_string_equal(reason, "math kernel");
    dk_op_compute_slot(op, 0, &reason);
    assert_string_equal(reason, "math kernel");
    assert_int_equal(dk_op_slot_kernel(op, dk_key_slot(DK_AutogradCPU))->key, DK_Autograd);
    assert_int_equal(dk_op_slot_kernel(op, 0)->key, DK_CompositeImplicitAutograd); /* catch-all is stored there */
    /* SparseCPU + CompositeImplicitAutograd: the AutogradOther ambiguity */
    assert_int_equal(dk_impl(r, "ex::op", DK_SparseCPU, dk_unboxed(DK_FN(k_cpu), NULL), &h), DK_OK);
    assert_int_equal(dk_op_slot_kernel(op, dk_key_slot(DK_AutogradOther))->kind, DK_KERNEL_AMBIGUOUS);
    assert_string_equal(dk_op_slot_kernel(op, dk_key_slot(DK_AutogradOther))->debug, "ambiguous_autogradother");
    assert_null(dk_op_compute_slot(op, -1, &reason));
    assert_null(dk_op_compute_slot(op, DK_NUM_SLOTS, &reason));
    dk_registry_destroy(r);
}

/* ---- listeners ---------------------------------------------------------------- */

static char events[1024];
static void on_reg(const dk_operator *op, void *ud) {
    strcat(events, (const char *)ud);
    strcat(events, "+");
    strcat(events, op->name);
    strcat(events, dk_op_schema(op) ? "(s) " : " ");
}
static void on_dereg(const dk_operator *op, void *ud) {
    strcat(events, (const char *)ud);
    strcat(events, "-");
    strcat(events, op->name);
    strcat(events, dk_op_schema(op) ? "(s) " : " ");
}

static void test_listeners(void **state) {
    dk_registry *r = new_registry();
    dk_registration *a, *b, *i, *l;
    char tag[] = "L";
    (void)state;
    events[0] = '\0';
    assert_int_equal(dk_def(r, "l::a(Tensor x) -> Tensor", &a), DK_OK);
    assert_int_equal(dk_impl(r, "l::impl_only", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &i), DK_OK);
    assert_int_equal(dk_registry_add_listener(r, on_reg, on_dereg, tag, &l), DK_OK);
    assert_string_equal(events, "L+l::a(s) "); /* replay: defined operators only */
    assert_int_equal(dk_def(r, "l::b(Tensor x) -> Tensor", &b), DK_OK);
    assert_int_equal(dk_deregister(a), DK_OK); /* told before the schema goes */
    assert_string_equal(events, "L+l::a(s) L+l::b(s) L-l::a(s) ");
    assert_int_equal(dk_deregister(l), DK_OK);
    assert_int_equal(dk_deregister(b), DK_OK);
    assert_string_equal(events, "L+l::a(s) L+l::b(s) L-l::a(s) ");
    assert_int_equal(dk_deregister(l), DK_ERR_BAD_HANDLE);
    assert_int_equal(dk_registry_add_listener(r, NULL, NULL, NULL, &l), DK_ERR_NULL);
    dk_registry_destroy(r);
}

/* ---- library blocks ------------------------------------------------------------- */

static void test_library_blocks(void **state) {
    dk_registry *r = new_registry();
    dk_library *def, *frag, *frag2, *impl, *fb, *dup = NULL;
    dk_operator *op;
    char *empty, *after;
    int l_def;
    (void)state;
    empty = snapshot(r);
    l_def = __LINE__ + 1;
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_DEF, "lib", DK_Undefined, &def), DK_OK);
    assert_int_equal(dk_library_def(def, "add(Tensor a, Tensor b) -> Tensor"), DK_OK);
    assert_int_equal(dk_library_def(def, "lib::mul(Tensor a, Tensor b) -> Tensor"), DK_OK);
    assert_int_equal(dk_library_impl(def, "add", DK_Undefined, dk_unboxed(DK_FN(k_other), NULL)), DK_OK); /* catch-all */
    op = dk_op_lookup(r, "lib::add");
    assert_non_null(op);
    {
        char expect[256];
        snprintf(expect, sizeof expect, "registered at %s:%d", __FILE__, l_def);
        assert_string_equal(dk_op_slot_kernel(op, 0)->debug, expect); /* the block's site, as c10 */
    }
    /* a second DEF block for the namespace names both sites */
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_DEF, "lib", DK_Undefined, &dup), DK_ERR_DUPLICATE_LIBRARY);
    assert_null(dup);
    assert_non_null(strstr(dk_last_error(), "Only a single DK_LIBRARY can be used to register the namespace lib;"));
    assert_non_null(strstr(dk_last_error(), "Previous registration of DK_LIBRARY was registered at"));
    /* fragments may repeat */
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_FRAGMENT, "lib", DK_Undefined, &frag), DK_OK);
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_FRAGMENT, "lib", DK_Undefined, &frag2), DK_OK);
    assert_int_equal(dk_library_def(frag, "sub(Tensor a) -> Tensor"), DK_OK);
    assert_int_equal(dk_library_def(frag2, "add(Tensor a) -> Tensor"), DK_ERR_DUPLICATE_DEF);
    assert_int_equal(dk_library_def(frag2, "other::x(Tensor a) -> Tensor"), DK_ERR_NAMESPACE_MISMATCH);
    assert_non_null(strstr(dk_last_error(), "Explicitly provided namespace (other) "
                                            "in schema string does not match namespace of enclosing "
                                            "DK_LIBRARY_FRAGMENT block (lib)."));
    /* IMPL blocks */
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_IMPL, "lib", DK_CPU, &impl), DK_OK);
    assert_int_equal(dk_library_impl(impl, "add", DK_Undefined, dk_unboxed(DK_FN(k_cpu), NULL)), DK_OK);
    assert_ptr_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->fn, DK_FN(k_cpu));
    assert_int_equal(dk_library_impl(impl, "add", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL)), DK_OK);
    assert_int_equal(dk_library_impl(impl, "add", DK_CUDA, dk_unboxed(DK_FN(k_cpu), NULL)), DK_ERR_KEY_MISMATCH);
    assert_non_null(strstr(dk_last_error(), "impl(\"add\", ...): Explicitly provided dispatch key (CUDA) is "
                                            "inconsistent with the dispatch key of the enclosing DK_LIBRARY_IMPL "
                                            "block (CPU)."));
    assert_int_equal(dk_library_def(impl, "nope(Tensor a) -> Tensor"), DK_ERR_WRONG_BLOCK);
    assert_non_null(strstr(dk_last_error(), "def(\"nope\"): Cannot define an operator inside of a "
                                            "DK_LIBRARY_IMPL block."));
    assert_int_equal(dk_library_fallback(impl, dk_boxed(k_boxed, NULL)), DK_ERR_WRONG_BLOCK);
    assert_non_null(strstr(dk_last_error(), "Fallback functions which apply to only a single namespace (you "
                                            "specified lib) are not supported."));
    assert_int_equal(dk_library_fallback(def, dk_boxed(k_boxed, NULL)), DK_ERR_WRONG_BLOCK);
    assert_non_null(strstr(dk_last_error(), "fallback(...): Cannot define an operator inside of a DK_LIBRARY block."));
    /* fallbacks live in IMPL blocks of namespace _ */
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_IMPL, "_", DK_Tracer, &fb), DK_OK);
    assert_int_equal(dk_library_fallback(fb, dk_boxed(k_boxed, NULL)), DK_OK);
    assert_true(dk_op_slot_kernel(op, dk_key_slot(DK_Tracer))->is_fallback);
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_DEF, "_", DK_Undefined, &dup), DK_ERR_WRONG_BLOCK);
    assert_non_null(strstr(dk_last_error(), "DK_LIBRARY: cannot define DK_LIBRARY with the wildcard namespace _"));
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_DEF, "li-b", DK_Undefined, &dup), DK_ERR_BAD_NAME);
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_DEF, "x", DK_CPU, &dup), DK_ERR_BAD_KEY);
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_IMPL, "x", DK_Dense, &dup), DK_ERR_BAD_KEY);
    /* closing every block undoes everything, in any order */
    assert_int_equal(dk_library_close(fb), DK_OK);
    assert_int_equal(dk_library_close(def), DK_OK);
    assert_int_equal(dk_library_close(impl), DK_OK);
    assert_int_equal(dk_library_close(frag2), DK_OK);
    assert_int_equal(dk_library_close(frag), DK_OK);
    after = snapshot(r);
    assert_string_equal(after, empty);
    free(after);
    /* the namespace is free again */
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_DEF, "lib", DK_Undefined, &def), DK_OK);
    free(empty);
    dk_registry_destroy(r); /* closes open libraries */
}

/* ---- static registration (constructors) and its explicit equivalent -------------- */

static int static_cpu(int x) { return x * 10; }

DK_LIBRARY(stat, m) {
    dk_library_def(m, "scale(Tensor a) -> Tensor");
}
DK_LIBRARY_IMPL(stat, CPU, m) {
    dk_library_impl(m, "scale", DK_Undefined, dk_unboxed(DK_FN(static_cpu), NULL));
}
DK_LIBRARY_FRAGMENT(stat, m) {
    dk_library_def(m, "scale2(Tensor a) -> Tensor");
}

static void explicit_block(dk_library *m) {
    dk_library_def(m, "scale(Tensor a) -> Tensor");
    dk_library_impl(m, "scale", DK_CPU, dk_unboxed(DK_FN(static_cpu), NULL));
}

static void test_static_and_explicit_registration(void **state) {
    dk_operator *op = dk_op_lookup(dk_registry_default(), "stat::scale");
    dk_registry *r = new_registry();
    dk_library *lib;
    (void)state;
    assert_non_null(op); /* registered before main */
    assert_non_null(dk_op_lookup(dk_registry_default(), "stat::scale2"));
    assert_ptr_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->fn, DK_FN(static_cpu));
    assert_ptr_equal(op->registry, dk_registry_default());
    /* the same block, run explicitly (static libraries drop unreferenced objects) */
    assert_int_equal(dk_library_run(r, DK_LIBRARY_KIND_DEF, "stat", DK_Undefined, explicit_block, &lib), DK_OK);
    op = dk_op_lookup(r, "stat::scale");
    assert_non_null(op);
    assert_ptr_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->fn, DK_FN(static_cpu));
    /* failures inside a block run this way go to the log hook */
    n_logged = 0;
    assert_int_equal(dk_library_run(r, DK_LIBRARY_KIND_DEF, "stat", DK_Undefined, explicit_block, NULL),
                     DK_ERR_DUPLICATE_LIBRARY);
    assert_int_equal(n_logged, 1);
    assert_non_null(strstr(logged, "error: Only a single DK_LIBRARY"));
    assert_int_equal(logged_item, DK_LOG_LIBRARY_BLOCK_FAILED);
    assert_int_equal(dk_library_close(lib), DK_OK);
    assert_null(dk_op_lookup(r, "stat::scale"));
    dk_registry_destroy(r);
}

/* ---- independence, growth, any-order deregistration ------------------------------ */

static void test_independent_registries(void **state) {
    dk_registry *a = new_registry(), *b = new_registry();
    dk_registration *h;
    (void)state;
    assert_int_equal(dk_def(a, "ind::op(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_fallback(a, DK_Tracer, dk_fallthrough(), &h), DK_OK);
    assert_null(dk_op_lookup(b, "ind::op"));
    assert_int_equal(dk_def(b, "ind::op(Tensor x) -> Tensor", &h), DK_OK); /* no duplicate across registries */
    assert_int_equal(dk_op_slot_kernel(dk_op_lookup(b, "ind::op"), dk_key_slot(DK_Tracer))->kind, DK_KERNEL_MISSING);
    dk_registry_destroy(a);
    dk_registry_destroy(b);
}

static int count_op(dk_operator *op, void *ud) { (void)op; ++*(int *)ud; return 0; }

static void test_many_operators(void **state) {
    dk_registry *r = new_registry();
    dk_registration *h;
    char name[64];
    int i, n = 0;
    (void)state;
    for (i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "many::op%d(Tensor x) -> Tensor", i);
        assert_int_equal(dk_def(r, name, &h), DK_OK);
    }
    for (i = 0; i < 5000; i++) {
        dk_operator *op;
        snprintf(name, sizeof name, "many::op%d", i);
        op = dk_op_lookup(r, name);
        assert_non_null(op);
        assert_int_equal(op->id, (uint32_t)i);
        assert_string_equal(op->name, name);
    }
    assert_null(dk_op_lookup(r, "many::op5000"));
    assert_null(dk_op_lookup(r, "many::op"));
    assert_null(dk_op_lookup(r, ""));
    dk_registry_each_op(r, count_op, &n);
    assert_int_equal(n, 5000);
    n = 0;
    assert_int_equal(dk_impl(r, "many::op7", DK_Meta, dk_unboxed(DK_FN(k_cpu), NULL), &h), DK_OK);
    dk_registry_each_op_for_key(r, DK_Meta, count_op, &n);
    assert_int_equal(n, 1);
    dk_registry_destroy(r);
}

static void test_deregister_any_order(void **state) {
    static const dk_key keys[] = { DK_CPU, DK_AutogradCPU, DK_Autograd, DK_CompositeImplicitAutograd,
                                   DK_CompositeExplicitAutograd, DK_SparseCPU, DK_CPU };
    dk_registry *r = new_registry();
    dk_registration *h[9], *d;
    char *empty, *now;
    int order, i;
    (void)state;
    assert_int_equal(dk_def(r, "ord::op(Tensor x) -> Tensor", &d), DK_OK);
    empty = snapshot(r);
    for (order = 0; order < 24; order++) {
        int perm[9], n = 7 + 2;
        for (i = 0; i < 7; i++)
            assert_int_equal(dk_impl(r, "ord::op", keys[i], dk_unboxed(DK_FN(k_cpu), NULL), &h[i]), DK_OK);
        assert_int_equal(dk_fallback(r, DK_Tracer, dk_fallthrough(), &h[7]), DK_OK);
        assert_int_equal(dk_fallback(r, DK_AutogradMeta, dk_boxed(k_boxed, NULL), &h[8]), DK_OK);
        for (i = 0; i < n; i++) perm[i] = i;
        for (i = n - 1; i > 0; i--) { /* a fixed pseudo-random order per round */
            int j = (order * 7 + i * 13) % (i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (i = 0; i < n; i++) assert_int_equal(dk_deregister(h[perm[i]]), DK_OK);
        now = snapshot(r);
        assert_string_equal(now, empty);
        free(now);
    }
    free(empty);
    dk_registry_destroy(r);
}

/* ---- bad input: status, message, registry unchanged ------------------------------ */

static dk_registry *bad_r;
static dk_registration *bad_live, *bad_dead;
static dk_library *bad_impl_lib, *bad_def_lib;
static dk_status bad_null_registry(void) { dk_registration *h; return dk_def(NULL, "a::b(Tensor x) -> Tensor", &h); }
static dk_status bad_null_schema(void) { dk_registration *h; return dk_def(bad_r, NULL, &h); }
static dk_status bad_empty_schema(void) { dk_registration *h; return dk_def(bad_r, "", &h); }
static dk_status bad_no_namespace(void) { dk_registration *h; return dk_def(bad_r, "op(Tensor x) -> Tensor", &h); }
static dk_status bad_name_only(void) { dk_registration *h; return dk_def(bad_r, "a::b", &h); }
static dk_status bad_malformed(void) { dk_registration *h; return dk_def(bad_r, "a::9b(Tensor x) -> Tensor", &h); }
static dk_status bad_overload(void) { dk_registration *h; return dk_def(bad_r, "a::b.(Tensor x) -> Tensor", &h); }
static dk_status bad_impl_name(void) {
    dk_registration *h;
    return dk_impl(bad_r, "a::b(Tensor x)", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &h);
}
static dk_status bad_impl_overload_default(void) {
    dk_registration *h;
    return dk_impl(bad_r, "t::g.default", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &h);
}
static dk_status bad_impl_overload_dunder(void) {
    dk_registration *h;
    return dk_impl(bad_r, "bad::op.__x", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &h);
}
static dk_status bad_library_impl_overload(void) {
    return dk_library_impl(bad_impl_lib, "op.default", DK_Undefined, dk_unboxed(DK_FN(k_cpu), NULL));
}
static dk_status bad_unknown_key(void) {
    dk_registration *h;
    return dk_impl(bad_r, "a::b", (dk_key)999, dk_unboxed(DK_FN(k_cpu), NULL), &h);
}
static dk_status bad_functionality_key(void) {
    dk_registration *h;
    return dk_impl(bad_r, "a::b", DK_AutogradFunctionality, dk_unboxed(DK_FN(k_cpu), NULL), &h);
}
static dk_status bad_marker_key(void) {
    dk_registration *h;
    return dk_impl(bad_r, "a::b", DK_StartOfDenseBackends, dk_unboxed(DK_FN(k_cpu), NULL), &h);
}
static dk_status bad_no_function(void) {
    dk_registration *h;
    return dk_impl(bad_r, "a::b", DK_CPU, dk_unboxed(NULL, NULL), &h);
}
static dk_status bad_fallthrough_with_fn(void) {
    dk_registration *h;
    dk_kernel_desc d = dk_fallthrough();
    d.fn = DK_FN(k_cpu);
    return dk_impl(bad_r, "a::b", DK_CPU, d, &h);
}
static dk_status bad_fallback_undefined(void) {
    dk_registration *h;
    return dk_fallback(bad_r, DK_Undefined, dk_boxed(k_boxed, NULL), &h);
}
static dk_status bad_fallback_unboxed(void) {
    dk_registration *h;
    return dk_fallback(bad_r, DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &h);
}
static dk_status bad_fallback_taken(void) {
    dk_registration *h;
    return dk_fallback(bad_r, DK_CompositeImplicitAutograd, dk_boxed(k_boxed, NULL), &h);
}
static dk_status bad_duplicate_def(void) { dk_registration *h; return dk_def(bad_r, "bad::op(Tensor x) -> Tensor", &h); }
static dk_status bad_deregister_twice(void) { return dk_deregister(bad_dead); }
static dk_status bad_deregister_null(void) { return dk_deregister(NULL); }
static dk_status bad_key_mismatch(void) {
    return dk_library_impl(bad_impl_lib, "op", DK_CUDA, dk_unboxed(DK_FN(k_cpu), NULL));
}
static dk_status bad_def_in_impl(void) { return dk_library_def(bad_impl_lib, "op2(Tensor x) -> Tensor"); }
static dk_status bad_fallback_in_def(void) { return dk_library_fallback(bad_def_lib, dk_boxed(k_boxed, NULL)); }
static dk_status bad_fallback_namespaced(void) { return dk_library_fallback(bad_impl_lib, dk_boxed(k_boxed, NULL)); }
static dk_status bad_namespace_mismatch(void) {
    return dk_library_impl(bad_def_lib, "zzz::op", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL));
}
static dk_status bad_second_def_block(void) {
    dk_library *l;
    return dk_library_open(bad_r, DK_LIBRARY_KIND_DEF, "bad", DK_Undefined, &l);
}
static dk_status bad_library_kind(void) {
    dk_library *l;
    return dk_library_open(bad_r, (dk_library_kind)7, "bad", DK_Undefined, &l);
}
static dk_status bad_find(void) { dk_operator *op; return dk_op_lookup_defined(bad_r, "bad::nope", &op); }
static void half_free(void *p, void *ud) { (void)ud; free(p); }
static dk_status bad_allocator_half(void) {
    dk_registry *r2;
    dk_registry_desc d;
    memset(&d, 0, sizeof d);
    d.free = half_free;
    return dk_registry_create(&d, &r2);
}

static void test_bad_inputs(void **state) {
    static const struct {
        const char *what;
        dk_status (*call)(void);
        dk_status expect;
        const char *message_part;
    } cases[] = {
        { "NULL registry", bad_null_registry, DK_ERR_NULL, "NULL" },
        { "NULL schema", bad_null_schema, DK_ERR_NULL, "NULL" },
        { "empty schema", bad_empty_schema, DK_ERR_BAD_NAME, "expected a schema" },
        { "schema without namespace", bad_no_namespace, DK_ERR_BAD_NAME, "expected a schema" },
        { "name-only def", bad_name_only, DK_ERR_BAD_NAME, "Full schema string was not specified" },
        { "malformed name", bad_malformed, DK_ERR_BAD_NAME, "a::9b" },
        { "empty overload", bad_overload, DK_ERR_BAD_NAME, "position" },
        { "impl with a schema", bad_impl_name, DK_ERR_BAD_NAME, "expected an operator name" },
        { "impl overload default", bad_impl_overload_default, DK_ERR_BAD_NAME,
          "impl(\"t::g.default\", ...): default is not a legal overload name for aten operators" },
        { "impl overload __x", bad_impl_overload_dunder, DK_ERR_BAD_NAME, "__x is not a legal overload name" },
        { "library impl overload default", bad_library_impl_overload, DK_ERR_BAD_NAME,
          "default is not a legal overload name" },
        { "unknown key", bad_unknown_key, DK_ERR_BAD_KEY, "999 is not a dispatch key" },
        { "functionality key", bad_functionality_key, DK_ERR_BAD_KEY, "'AutogradFunctionality' is neither" },
        { "marker key", bad_marker_key, DK_ERR_BAD_KEY, DK_C10_VERSION >= 20000 ? "'Undefined' (StartOfDenseBackends) is neither"
                                                                               : "'Unknown' (StartOfDenseBackends) is neither" },
        { "kernel without function", bad_no_function, DK_ERR_BAD_KERNEL, "neither an unboxed nor a boxed" },
        { "fallthrough with function", bad_fallthrough_with_fn, DK_ERR_BAD_KERNEL, "fallthrough kernel has no function" },
        { "fallback at Undefined", bad_fallback_undefined, DK_ERR_BAD_KEY, "Undefined" },
        { "unboxed fallback", bad_fallback_unboxed, DK_ERR_BAD_KERNEL, "must be boxed" },
        { "alias fallback over a taken key", bad_fallback_taken, DK_ERR_DUPLICATE_FALLBACK, "dispatch key AutogradCPU" },
        { "duplicate def", bad_duplicate_def, DK_ERR_DUPLICATE_DEF, "Duplicate registration" },
        { "deregister twice", bad_deregister_twice, DK_ERR_BAD_HANDLE, "already deregistered" },
        { "deregister NULL", bad_deregister_null, DK_ERR_BAD_HANDLE, "NULL handle" },
        { "key mismatch in IMPL", bad_key_mismatch, DK_ERR_KEY_MISMATCH, "(CUDA) is inconsistent" },
        { "def in IMPL", bad_def_in_impl, DK_ERR_WRONG_BLOCK, "inside of a DK_LIBRARY_IMPL block" },
        { "fallback in DEF", bad_fallback_in_def, DK_ERR_WRONG_BLOCK, "Did you mean to call this function" },
        { "fallback outside _", bad_fallback_namespaced, DK_ERR_WRONG_BLOCK, "you specified bad" },
        { "namespace mismatch", bad_namespace_mismatch, DK_ERR_NAMESPACE_MISMATCH, "namespace (zzz)" },
        { "second DEF block", bad_second_def_block, DK_ERR_DUPLICATE_LIBRARY, "namespace bad" },
        { "library kind", bad_library_kind, DK_ERR_BAD_ARGUMENT, "bad kind 7" },
        { "find undefined", bad_find, DK_ERR_NOT_FOUND, "Could not find schema for bad::nope" },
        { "half an allocator", bad_allocator_half, DK_ERR_BAD_ARGUMENT, "both alloc and free" },
    };
    size_t i;
    dk_registration *h;
    (void)state;
    bad_r = new_registry();
    assert_int_equal(dk_def(bad_r, "bad::op(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(bad_r, "bad::op", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &bad_live), DK_OK);
    assert_int_equal(dk_fallback(bad_r, DK_AutogradCPU, dk_fallthrough(), &h), DK_OK);
    assert_int_equal(dk_impl(bad_r, "bad::op", DK_CUDA, dk_unboxed(DK_FN(k_cpu), NULL), &bad_dead), DK_OK);
    assert_int_equal(dk_deregister(bad_dead), DK_OK);
    assert_int_equal(dk_library_open(bad_r, DK_LIBRARY_KIND_IMPL, "bad", DK_CPU, &bad_impl_lib), DK_OK);
    assert_int_equal(dk_library_open(bad_r, DK_LIBRARY_KIND_DEF, "bad", DK_Undefined, &bad_def_lib), DK_OK);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *before = snapshot(bad_r), *after;
        dk_status s = cases[i].call();
        after = snapshot(bad_r);
        if (s != cases[i].expect || !strstr(dk_last_error(), cases[i].message_part) || strcmp(before, after) != 0)
            printf("case '%s': status %d (%s), message '%s'\n", cases[i].what, (int)s, dk_status_message(s),
                   dk_last_error());
        assert_int_equal(s, cases[i].expect);
        assert_non_null(strstr(dk_last_error(), cases[i].message_part));
        assert_string_equal(before, after);
        free(before);
        free(after);
    }
    dk_registry_destroy(bad_r);
}

/* ---- allocation failure at every allocation site ---------------------------------- */

static int alloc_countdown = -1, allocs;
static void *failing_alloc(size_t n, void *ud) {
    (void)ud;
    allocs++;
    if (alloc_countdown == 0) return NULL;
    if (alloc_countdown > 0) alloc_countdown--;
    return malloc(n);
}
static void plain_free(void *p, void *ud) { (void)ud; free(p); }

typedef dk_status (*op_under_test)(dk_registry *r);
static dk_status oom_def_new(dk_registry *r) { dk_registration *h; return dk_def(r, "oom::fresh(Tensor x) -> Tensor", &h); }
/* a schema past the def's scratch chunk on the stack: the parse takes
   registry blocks too (given back once the schema is in the record) */
static dk_status oom_def_long(dk_registry *r) {
    char text[2048];
    size_t n;
    int i;
    dk_registration *h;
    n = (size_t)snprintf(text, sizeof text, "oom::long(Tensor x");
    for (i = 0; i < 40; i++) n += (size_t)snprintf(text + n, sizeof text - n, ", int[] arg%d=[%d, 2]", i, i);
    snprintf(text + n, sizeof text - n, ") -> Tensor");
    return dk_def(r, text, &h);
}
static dk_status oom_impl_new(dk_registry *r) {
    dk_registration *h;
    return dk_impl(r, "oom::other", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &h);
}
static dk_status oom_impl_existing(dk_registry *r) {
    dk_registration *h;
    return dk_impl(r, "oom::op63", DK_Autograd, dk_unboxed(DK_FN(k_cpu), NULL), &h);
}
static dk_status oom_fallback(dk_registry *r) {
    dk_registration *h;
    return dk_fallback(r, DK_Autograd, dk_boxed(k_boxed, NULL), &h);
}
static dk_status oom_library(dk_registry *r) {
    dk_library *l;
    return dk_library_open(r, DK_LIBRARY_KIND_DEF, "oomlib", DK_Undefined, &l);
}
static dk_status oom_listener(dk_registry *r) {
    dk_registration *h;
    return dk_registry_add_listener(r, on_reg, NULL, (void *)"", &h);
}

static void test_out_of_memory_everywhere(void **state) {
    /* n: the operators defined first. The ops array grows at its 65th
       operator (64, then by half: 97th), the name index when it would hold
       more than 3/4 of its buckets: at its 49th (64 buckets) and 97th (128). */
    static const struct { const char *what; op_under_test call; int n, sites; } ops[] = {
        { "def of a new operator (the ops array grows)", oom_def_new, 64, 3 },
        { "def of a new operator (both grow)", oom_def_new, 96, 4 },
        { "def of a long schema (chunks past the stack's)", oom_def_long, 64, 0 },
        { "impl creating an operator", oom_impl_new, 64, 4 },
        { "impl on an existing operator", oom_impl_existing, 64, 2 },
        { "alias fallback", oom_fallback, 64, 1 },
        { "library block", oom_library, 64, 1 },
        { "listener", oom_listener, 64, 1 },
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        int fail_at, sites = 0;
        for (fail_at = 0;; fail_at++) {
            dk_registry *r;
            dk_registry_desc d;
            dk_registration *h;
            char *before, *after, name[64];
            dk_status s;
            int j;
            memset(&d, 0, sizeof d);
            d.alloc = failing_alloc;
            d.free = plain_free;
            alloc_countdown = -1;
            assert_int_equal(dk_registry_create(&d, &r), DK_OK);
            for (j = 0; j < ops[i].n; j++) {
                snprintf(name, sizeof name, "oom::op%d(Tensor x) -> Tensor", j);
                assert_int_equal(dk_def(r, name, &h), DK_OK);
            }
            events[0] = '\0';
            before = snapshot(r);
            alloc_countdown = fail_at;
            allocs = 0;
            s = ops[i].call(r);
            alloc_countdown = -1;
            after = snapshot(r);
            if (s == DK_OK) {
                free(before);
                free(after);
                dk_registry_destroy(r);
                break;
            }
            sites++;
            assert_int_equal(s, DK_ERR_NO_MEMORY);
            assert_non_null(strstr(dk_last_error(), "out of memory"));
            assert_string_equal(before, after);
            free(before);
            free(after);
            dk_registry_destroy(r);
        }
        printf("  %-48s %d allocation sites failed cleanly\n", ops[i].what, sites);
        assert_true(sites >= 1);
        /* a def: table, op (its def's record, defaults and schema in its
           block; the schema is parsed on the stack), the ops array or the
           name index; an impl creating an operator: its record too; a long
           schema: the chunks its parse takes past the one on the stack */
        if (ops[i].sites) assert_int_equal(sites, ops[i].sites);
        else assert_true(sites > 4);
    }
}

/* What an operator holds (issue: a lean operator), counted through the
   registry's own statistics after a reclaim: an impl record carries only
   the fields every record has (no def's, no listener's) and its debug
   text; a def that creates its operator keeps its record, defaults, schema
   and debug text in the operator's block, after its name (allocations:
   that block and its table, nothing else: the operator itself takes a
   slot of the registry's slabs); a deregistered def kept in that block goes
   when its operator goes, and not before. */
static size_t live_after_reclaim(dk_registry *r) {
    dk_registry_stats st;
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    dk_registry_read_stats(r, &st);
    assert_int_equal(st.retired_bytes, 0);
    return st.live_bytes;
}
static void *counting_alloc(size_t n, void *ud) { ++*(long *)ud; return malloc(n); }
static void test_operator_footprint(void **state) {
    dk_registry *r;
    dk_registry_desc d;
    dk_registration *def, *impl, *def2;
    const dk_operator *op;
    size_t before, after_def, after_impl;
    long n_allocs = 0, n_before;
    (void)state;
    memset(&d, 0, sizeof d);
    d.alloc = counting_alloc;
    d.free = plain_free;
    d.alloc_user_data = &n_allocs;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    assert_int_equal(dk_def(r, "fp::warm(Tensor x) -> Tensor", &def), DK_OK);   /* the name index and ops array */
    before = live_after_reclaim(r);
    n_before = n_allocs;
    assert_int_equal(dk_def_at(r, "fp::op(Tensor x, int n=3) -> Tensor", NULL, "f.c", 7, &def), DK_OK);
    /* the table, the operator with its def (the schema in its record) */
    assert_int_equal(n_allocs - n_before, 2);
    assert_null(DK__DEF(def)->info.parsed->dk__memory);
    assert_true((const char *)DK__DEF(def)->info.parsed > (const char *)def &&
                (const char *)DK__DEF(def)->info.parsed < (const char *)DK__DEF(def)->debug);
    assert_ptr_equal((const char *)def, def->op->pub.name + dk__op_def_offset(strlen("fp::op")));
    assert_true(dk__def_in_op(def));
    assert_string_equal(DK__DEF(def)->debug, "registered at f.c:7");
    assert_ptr_equal(&DK__DEF(def)->info, dk_op_table_of(&def->op->pub)->def);
    assert_int_equal(DK__DEF(def)->info.defaults[1].as.i, 3);
    op = dk_op_lookup(r, "fp::op");
    assert_non_null(op);
    assert_int_equal((uintptr_t)dk_op_table_of(op) % 32, 0);
    after_def = live_after_reclaim(r);
    assert_true(after_def > before);
    assert_int_equal(dk_impl_at(r, "fp::op", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), "g.c", 12, &impl), DK_OK);
    after_impl = live_after_reclaim(r);
    /* the new table replaced the old one: the record is all that grew */
    assert_int_equal(after_impl - after_def,
                     sizeof(dk__block) + offsetof(dk_registration, registry) + sizeof "registered at g.c:12");
    /* the def deregistered: its record stays in the operator's block while
       the impl keeps the operator; a new def gets a record of its own */
    assert_int_equal(dk_deregister(def), DK_OK);
    assert_int_equal(dk_deregister(def), DK_ERR_BAD_HANDLE);   /* still readable: not freed */
    assert_int_equal(dk_def_at(r, "fp::op(Tensor x) -> Tensor", NULL, "h.c", 1, &def2), DK_OK);
    assert_false(dk__def_in_op(def2));
    assert_int_equal(dk_deregister(impl), DK_OK);
    assert_int_equal(dk_deregister(def2), DK_OK);
    assert_null(dk_op_lookup(r, "fp::op"));
    assert_int_equal(live_after_reclaim(r), before);
    dk_registry_destroy(r);
}

/* Slot reasons take 4 bits each in the backend rows' spare bytes: every
   slot keeps its own (all 16 values, neighbours set in both orders), and
   the rows' masks and entries, which calls read, are left as they were. */
static void test_reasons_packed(void **state) {
    static dk_op_table t, before;
    int s, v, round;
    (void)state;
    memset(&t, 0xA5, sizeof t);
    for (s = 0; s < DK_NUM_SLOTS; s++) dk__reason_set(&t, s, DK_SOURCE_DETAIL_KERNEL);
    for (round = 0; round < 16; round++) {
        for (s = 0; s < DK_NUM_SLOTS; s++) {
            int i = round & 1 ? DK_NUM_SLOTS - 1 - s : s;
            dk__reason_set(&t, i, (dk_source_detail)((i * 7 + round) & 15));
        }
        for (s = 0; s < DK_NUM_SLOTS; s++) assert_int_equal(dk__reason_at(&t, s), (s * 7 + round) & 15);
    }
    memcpy(&before, &t, sizeof t);
    for (v = 0; v < 16; v++)
        for (s = 0; s < DK_NUM_SLOTS; s++) {
            int b;
            dk__reason_set(&t, s, (dk_source_detail)v);
            assert_int_equal(dk__reason_at(&t, s), v);
            for (b = 0; b < DK_NUM_BACKENDS; b++) {
                assert_true(t.rows[b].nonfallthrough == before.rows[b].nonfallthrough);
                assert_memory_equal(&t.rows[b].first, &before.rows[b].first, sizeof t.rows[b].first);
            }
            dk__reason_set(&t, s, (dk_source_detail)dk__reason_at(&before, s));
        }
    assert_memory_equal(&t, &before, sizeof t);
}

/* A custom allocator's memory is aligned as malloc's (16 bytes here): a
   table's header goes before it when the pointer is 16 mod 32, after it
   when the pointer is 0 mod 32 (DK__TABLE_AFTER), both without slack; a
   pointer 8 mod 16 (aligned less than malloc's) is given back and the
   table allocated again with slack (given to the tables' requests only:
   the other blocks need malloc's alignment). Each gets aligned tables, calls, new
   snapshots (a table's copy keeps its own header's place), deregistration,
   statistics that come back to where they were, and a clean free
   (AddressSanitizer checks the bounds). */
static unsigned align_mod;   /* the pointers' address mod 32: 16, 0 or 8 (tables; others 16) */
static void *align16_alloc(size_t n, void *ud) {
    char *raw = (char *)malloc(n + 48), *p;
    unsigned mod = align_mod == 8 && n < DK__TABLE_BYTES ? 16 : align_mod;
    (void)ud;
    if (!raw) return NULL;
    p = raw + 8;
    while (((uintptr_t)p & 31) != mod) p += 8;
    ((unsigned char *)p)[-1] = (unsigned char)(p - raw);
    return p;
}
static void align16_free(void *p, void *ud) {
    (void)ud;
    if (p) free((char *)p - ((unsigned char *)p)[-1]);
}
static void test_allocator_aligned_less(void **state) {
    static const unsigned mods[3] = { 16, 0, 8 };
    int m;
    (void)state;
    for (m = 0; m < 3; m++) {
        dk_registry *r;
        dk_registry_desc d;
        dk_registration *h[8];
        char name[64];
        size_t before;
        int i;
        memset(&d, 0, sizeof d);
        d.alloc = align16_alloc;
        d.free = align16_free;
        align_mod = mods[m];
        assert_int_equal(dk_registry_create(&d, &r), DK_OK);
        assert_int_equal(dk_def(r, "al::warm(Tensor x) -> Tensor", NULL), DK_OK);   /* the name index and ops array */
        before = live_after_reclaim(r);
        for (i = 0; i < 4; i++) {
            const dk_operator *op;
            const dk_op_table *t;
            size_t live;
            snprintf(name, sizeof name, "al::op%d(Tensor x) -> Tensor", i);
            assert_int_equal(dk_def(r, name, &h[2 * i]), DK_OK);
            snprintf(name, sizeof name, "al::op%d", i);
            op = dk_op_lookup(r, name);
            live = live_after_reclaim(r);
            t = dk_op_table_of(op);
            assert_int_equal(dk__block_size(dk__table_block(t)),
                             sizeof(dk__block) + DK__TABLE_BYTES +
                                 (align_mod == 8 || !DK__TABLE_TRAILER ? sizeof(dk_backend_row) - DK__MAX_ALIGN : 0));
            assert_int_equal(dk_impl(r, name, DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &h[2 * i + 1]), DK_OK);
            /* a new snapshot: the old table retired and freed, the record all that grew */
            assert_int_equal(live_after_reclaim(r) - live, dk__block_size(dk__block_of(h[2 * i + 1])));
            t = dk_op_table_of(op);
            assert_int_equal((uintptr_t)t % 32, 0);
            if (DK__TABLE_TRAILER) {
                assert_int_equal(DK__TABLE_AFTER(t), align_mod == 0);
                assert_ptr_equal((const char *)dk__table_block(t),
                                 (const char *)t + (align_mod == 0 ? (ptrdiff_t)DK__TABLE_BYTES : -(ptrdiff_t)sizeof(dk__block)));
            }
            assert_ptr_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->fn, DK_FN(k_cpu));
        }
        for (i = 7; i >= 0; i--) assert_int_equal(dk_deregister(h[i]), DK_OK);
        assert_int_equal(live_after_reclaim(r), before);
        dk_registry_destroy(r);
    }
}

/* The logger's item names come from DK_FORALL_LOG_ITEMS; the default logger
   is the one place that prints, in c10's words for a warning. */
static void test_default_logger(void **state) {
    char text[256] = "";
    FILE *f = tmpfile();
    int saved = dup(2);
    size_t n;
    (void)state;
    assert_string_equal(dk_log_item_name(DK_LOG_KERNEL_OVERRIDDEN), "KERNEL_OVERRIDDEN");
    assert_string_equal(dk_log_item_name(DK_LOG_CALL_EPOCHS_FAILED), "CALL_EPOCHS_FAILED");
    assert_null(dk_log_item_name((dk_log_item)-1));
    assert_non_null(f);
    fflush(stderr);
    dup2(fileno(f), 2);
    dk_log_stderr(DK_LOG_WARNING, DK_LOG_KERNEL_OVERRIDDEN, "one", NULL);
    dk_log_stderr(DK_LOG_ERROR, DK_LOG_LIBRARY_BLOCK_FAILED, "two", NULL);
    dk_log_stderr(DK_LOG_PANIC, DK_LOG_CALL_ABORTED, "three", NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_string_equal(text, "Warning: one\ndispatch.h error: two\ndispatch.h panic: three\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_def_impl_lookup),
        cmocka_unit_test(test_impl_before_def),
        cmocka_unit_test(test_override_warning_and_restore),
        cmocka_unit_test(test_override_warning_c10_words),
        cmocka_unit_test(test_default_logger),
        cmocka_unit_test(test_duplicate_def),
        cmocka_unit_test(test_fallbacks),
        cmocka_unit_test(test_resolution_example),
        cmocka_unit_test(test_listeners),
        cmocka_unit_test(test_library_blocks),
        cmocka_unit_test(test_static_and_explicit_registration),
        cmocka_unit_test(test_independent_registries),
        cmocka_unit_test(test_many_operators),
        cmocka_unit_test(test_deregister_any_order),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_out_of_memory_everywhere),
        cmocka_unit_test(test_operator_footprint),
        cmocka_unit_test(test_reasons_packed),
        cmocka_unit_test(test_allocator_aligned_less),
    };
    return cmocka_run_group_tests_name("operator registry", tests, NULL, NULL);
}
