/* make: variants=epochs tsan=plain,epochs */
/* Reads of published state (Note [One read primitive]) and the debug checks
   of the test builds (DK_DEBUG_READS, DK_DEBUG_THREADS): a boxed call reads its
   operator's snapshot once, so schema, adapters and kernel come from one
   state even when a def and its kernel are replaced during the call, and
   so does a typed call's slow path (DK_DECLARE_OP and gen/'s bindings,
   boxed kernel or fallback); every
   public reader runs inside a read section (the checks stop the program
   otherwise, and this file calls each of them); a read outside one, and in
   the default build a call from a thread that never declared itself, stop
   the program with a message that names the function or the thread (death
   tests: a forked child). Built in both modes (test_reads, test_reads_epochs). */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#if !defined(DK_DEBUG_READS) || !defined(DK_DEBUG_THREADS)
#error "the test builds define DK_DEBUG_READS and DK_DEBUG_THREADS (the Makefile's CFLAGS_T)"
#endif

typedef struct tensor { dk_keyset ks; } tensor;
#define DKGEN_TENSOR tensor *
#define DKGEN_TENSOR_KEYSET(t) ((t)->ks)
#include "../gen/sample_ops.h"

static void quiet_log(dk_log_level l, dk_log_item i, const char *m, void *ud) { (void)l; (void)i; (void)m; (void)ud; }

/* ---- one snapshot per call ----------------------------------------------------
   Version 1 of rd::f takes (Tensor) and its CPU kernel carries tag 1;
   version 2 takes (Tensor, int), kernel tag 2, each def with its own
   adapters. A hook that runs during the call (the tensor_keyset hook for
   dk_call_boxed, the trace hook for dk_redispatch_boxed) replaces version
   1 by version 2 the first time it runs, the way a plugin reload does. The
   adapter that runs records which def it belongs to and the tag of the
   kernel it was handed: one state gives (1, 1) or (2, 2); (1, 2) is an
   old def's unboxing run on the new kernel. */
enum { TAG1 = 1, TAG2 = 2 };
static dk_registry *reg;
static dk_registration *h_def, *h_kernel;
static int replace_armed, replaced, pairs[3][3];

static int kernel_tag(const dk_kernel *k) { return (int)(intptr_t)k->user_data; }
static void unboxed_1(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)op; (void)ks;
    pairs[1][kernel_tag(k)]++;
    s->size -= 1;
    dk_stack_push(s, dk_int(1));
}
static void unboxed_2(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)op; (void)ks;
    pairs[2][kernel_tag(k)]++;
    s->size -= 2;
    dk_stack_push(s, dk_int(2));
}
static int64_t never_called(const dk_kernel *k, dk_keyset ks, void *t) { (void)k; (void)ks; (void)t; return -1; }
static const dk_op_adapters adapters_1 = { "(int) (Tensor)", 1, 1, NULL, NULL, unboxed_1 };
static const dk_op_adapters adapters_2 = { "(int) (Tensor, int)", 2, 1, NULL, NULL, unboxed_2 };

static void define_version(int v) {
    dk_def_options o;
    memset(&o, 0, sizeof o);
    o.adapters = v == 1 ? &adapters_1 : &adapters_2;
    assert_int_equal(dk_def_with(reg, v == 1 ? "rd::f(Tensor a) -> int" : "rd::f(Tensor a, int b) -> int", &o, &h_def),
                     DK_OK);
}
/* version 1 -> 2 on one operator: its kernel keeps it alive while the def changes */
static void replace_version(void) {
    dk_registration *old_kernel = h_kernel;
    assert_int_equal(dk_deregister(h_def), DK_OK);
    define_version(2);
    assert_int_equal(dk_impl(reg, "rd::f", DK_CPU, dk_unboxed(DK_FN(never_called), (void *)(intptr_t)TAG2), &h_kernel),
                     DK_OK);
    assert_int_equal(dk_deregister(old_kernel), DK_OK);
    replaced++;
}
static dk_keyset keyset_and_replace(const void *t, void *ud) {
    (void)ud;
    if (replace_armed) { replace_armed = 0; replace_version(); }
    return ((const tensor *)t)->ks;
}
static void trace_and_replace(const dk_operator *op, dk_keyset ks, dk_key key, int is_redispatch, void *ud) {
    (void)op; (void)ks; (void)key; (void)is_redispatch; (void)ud;
    if (replace_armed) { replace_armed = 0; replace_version(); }
}

static dk_operator *make_version_1(void) {
    dk_registry_desc d;
    dk_operator *op;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = keyset_and_replace;
    d.logger.func = quiet_log;   /* version 2's kernel overrides version 1's for a moment */
    assert_int_equal(dk_registry_create(&d, &reg), DK_OK);
    define_version(1);
    assert_int_equal(dk_impl(reg, "rd::f", DK_CPU, dk_unboxed(DK_FN(never_called), (void *)(intptr_t)TAG1), &h_kernel),
                     DK_OK);
    op = dk_op_lookup(reg, "rd::f");
    assert_non_null(op);
    memset(pairs, 0, sizeof pairs);
    replaced = 0;
    return op;
}

static void test_boxed_call_reads_one_snapshot(void **state) {
    dk_operator *op = make_version_1();
    tensor x;
    dk_value storage[4];
    dk_stack st;
    int round;
    (void)state;
    x.ks = dk_ks_from_key(DK_CPU);
    for (round = 0; round < 2; round++) {   /* round 0 replaces during the call; round 1 calls version 2 */
        dk_stack_init(&st, storage, 4);
        dk_stack_push(&st, dk_tensor(&x));
        if (round == 1) dk_stack_push(&st, dk_int(5));
        replace_armed = round == 0;
        dk_call_boxed(op, &st);
        assert_int_equal(st.size, 1);
        assert_int_equal(st.values[0].as.i, round == 0 ? 1 : 2);
    }
    assert_int_equal(replaced, 1);
    assert_int_equal(dk_op_lookup(reg, "rd::f"), op);   /* the same operator all along */
    assert_int_equal(pairs[1][TAG1], 1);   /* the call that raced: version 1 whole */
    assert_int_equal(pairs[2][TAG2], 1);   /* the next call: version 2 whole */
    assert_int_equal(pairs[1][TAG2] + pairs[2][TAG1], 0);
    dk_registry_destroy(reg);
}

static void test_boxed_redispatch_reads_one_snapshot(void **state) {
    dk_operator *op = make_version_1();
    tensor x;
    dk_value storage[4];
    dk_stack st;
    (void)state;
    x.ks = dk_ks_from_key(DK_CPU);
    dk_stack_init(&st, storage, 4);
    dk_stack_push(&st, dk_tensor(&x));
    replace_armed = 1;
    dk_trace_set(trace_and_replace, NULL);   /* runs between the snapshot's read and the kernel's */
    dk_redispatch_boxed(op, dk_ks_from_key(DK_CPU), &st);
    dk_trace_set(NULL, NULL);
    assert_int_equal(replaced, 1);
    assert_int_equal(st.size, 1);
    assert_int_equal(pairs[1][TAG1], 1);
    assert_int_equal(pairs[1][TAG2] + pairs[2][TAG1] + pairs[2][TAG2], 0);
    dk_registry_destroy(reg);
}

/* ---- a typed call's slow path: the snapshot its inline path read -------------
   rd_f1 is version 1's typed signature. Each version's CPU kernel is boxed
   here, so a typed call of version 1 takes the slow path, which boxes the
   caller's argument pack through a def's adapters: the one whose pack it
   is (version 1's, from the snapshot the inline path read) or, if it read
   the operator again after the trace hook replaced the version, version
   2's box adapter on version 1's pack. box_1 and box_2 record which def
   boxed, the boxed kernel records (def, its tag): one state gives (1, 1);
   (2, 1) is the new def's adapters boxing the old call. The trace hook
   runs between the inline read and the slow path (dk__trace_call, in the
   out-of-line _traced). With a backend fallback in the slot instead (no
   kernel of the operator at CPU), the same. gen/'s bindings the same way:
   version 1 is sample::numel with gen's adapters (whose box records
   nothing: the boxed kernel counts the values on the stack instead, one
   from version 1's box, two from version 2's), the trace hook told
   between the dispatch primitive's read and dk_call_packed. */
static dk_keyset plain_keyset(const void *t, void *ud) { (void)ud; return ((const tensor *)t)->ks; }
DK_DECLARE_OP(rd_f1, int64_t, ((const tensor *)a)->ks, (const void *, a))
static int boxed_by;
static void box_1(const void *args, dk_stack *s) {
    boxed_by = 1;
    dk_stack_push(s, dk_tensor((void *)(uintptr_t)((const rd_f1_args *)args)->a));
}
static void box_2(const void *args, dk_stack *s) {   /* reads no field version 1's pack lacks */
    boxed_by = 2;
    dk_stack_push(s, dk_tensor((void *)(uintptr_t)((const rd_f1_args *)args)->a));
    dk_stack_push(s, dk_int(5));
}
static void box_gen_2(const void *args, dk_stack *s) {   /* version 2 of sample::numel */
    boxed_by = 2;
    dk_stack_push(s, dk_tensor(((const sample_numel_args *)args)->self));
    dk_stack_push(s, dk_int(5));
}
static void unbox_int(dk_stack *s, void *result) { *(int64_t *)result = s->values[s->size - 1].as.i; s->size--; }
static void boxed_versioned(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    int tag = kernel_tag(k), by = boxed_by ? boxed_by : (int)s->size;   /* gen's box records nothing */
    (void)op; (void)ks;
    pairs[by][tag]++;
    s->size = 0;
    dk_stack_push(s, dk_int(10 * by + tag));
}
static const dk_op_adapters typed_adapters_1 = { "(int) (Tensor)", 1, 1, box_1, unbox_int, NULL };
static const dk_op_adapters typed_adapters_2 = { "(int) (Tensor, int)", 2, 1, box_2, unbox_int, NULL };
static const dk_op_adapters gen_adapters_2 = { "(int) (Tensor, int)", 2, 1, box_gen_2, unbox_int, NULL };
static int use_fallback, use_gen;
static dk_registration *h_keep;

static const char *typed_name(void) { return use_gen ? "sample::numel" : "rd::f"; }
static void define_typed_version(int v) {
    dk_def_options o;
    memset(&o, 0, sizeof o);
    if (use_gen && v == 1) {
        assert_int_equal(sample_numel_def(reg, &h_def), DK_OK);
        return;
    }
    o.adapters = use_gen ? &gen_adapters_2 : v == 1 ? &typed_adapters_1 : &typed_adapters_2;
    assert_int_equal(dk_def_with(reg, use_gen ? "sample::numel(Tensor self, int b) -> int"
                                      : v == 1 ? "rd::f(Tensor a) -> int" : "rd::f(Tensor a, int b) -> int", &o, &h_def),
                     DK_OK);
}
static void replace_typed_version(void) {
    dk_registration *old_kernel = h_kernel;
    assert_int_equal(dk_deregister(h_def), DK_OK);
    define_typed_version(2);
    if (!use_fallback) {
        assert_int_equal(dk_impl(reg, typed_name(), DK_CPU, dk_boxed(boxed_versioned, (void *)(intptr_t)TAG2), &h_kernel),
                         DK_OK);
        assert_int_equal(dk_deregister(old_kernel), DK_OK);
    }
    replaced++;
}
static void trace_and_replace_typed(const dk_operator *op, dk_keyset ks, dk_key key, int is_redispatch, void *ud) {
    (void)op; (void)ks; (void)key; (void)is_redispatch; (void)ud;
    if (replace_armed) { replace_armed = 0; replace_typed_version(); }
}

static void typed_race(int gen, int fallback, int redispatch) {
    dk_registry_desc d;
    dk_registration *h_fb = NULL;
    dk_operator *op;
    tensor x;
    int64_t r;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = plain_keyset;
    d.logger.func = quiet_log;
    assert_int_equal(dk_registry_create(&d, &reg), DK_OK);
    use_fallback = fallback;
    use_gen = gen;
    define_typed_version(1);
    if (fallback) {   /* the operator lives on through a kernel elsewhere */
        assert_int_equal(dk_fallback(reg, DK_CPU, dk_boxed(boxed_versioned, (void *)(intptr_t)TAG1), &h_fb), DK_OK);
        assert_int_equal(dk_impl(reg, typed_name(), DK_CUDA, dk_boxed(boxed_versioned, (void *)(intptr_t)TAG2), &h_keep),
                         DK_OK);
    } else {
        assert_int_equal(dk_impl(reg, typed_name(), DK_CPU, dk_boxed(boxed_versioned, (void *)(intptr_t)TAG1), &h_kernel),
                         DK_OK);
    }
    op = dk_op_lookup(reg, typed_name());
    assert_non_null(op);
    memset(pairs, 0, sizeof pairs);
    replaced = 0;
    boxed_by = 0;
    x.ks = dk_ks_from_key(DK_CPU);
    replace_armed = 1;
    dk_trace_set(trace_and_replace_typed, NULL);
    if (gen) r = redispatch ? sample_numel_redispatch(op, dk_ks_from_key(DK_CPU), &x) : sample_numel_call(op, &x);
    else r = redispatch ? rd_f1_redispatch(op, dk_ks_from_key(DK_CPU), &x) : rd_f1_call(op, &x);
    dk_trace_set(NULL, NULL);
    assert_int_equal(replaced, 1);
    assert_int_equal(pairs[1][TAG1], 1);   /* version 1 whole: its def's adapters, its kernel */
    assert_int_equal(pairs[2][TAG1] + pairs[2][TAG2] + pairs[1][TAG2], 0);
    assert_int_equal(r, 11);
    dk_registry_destroy(reg);
}
static void test_typed_call_slow_path_reads_one_snapshot(void **state) { (void)state; typed_race(0, 0, 0); }
static void test_typed_redispatch_slow_path_reads_one_snapshot(void **state) { (void)state; typed_race(0, 0, 1); }
static void test_typed_call_to_a_fallback_reads_one_snapshot(void **state) { (void)state; typed_race(0, 1, 0); }
static void test_gen_call_slow_path_reads_one_snapshot(void **state) { (void)state; typed_race(1, 0, 0); }
static void test_gen_redispatch_slow_path_reads_one_snapshot(void **state) { (void)state; typed_race(1, 0, 1); }
static void test_gen_call_to_a_fallback_reads_one_snapshot(void **state) { (void)state; typed_race(1, 1, 0); }

/* ---- every public reader, with the checks on ----------------------------------
   Each public function that reads an operator's snapshot, a kernel
   record, a def's record or the name index, called once outside any call:
   one that forgot its read section stops this test (DK_DEBUG_READS) in
   either mode. The inline accessors are for use inside a call (under call
   epochs, between dk_call_enter and dk_call_exit), and are called so.
   tests/structure.sh checks that each public function taking an operator
   is named here. */
DK_DECLARE_OP(rd_neg, int64_t, ((const tensor *)self)->ks, (const void *, self))
static int64_t neg_cpu(const dk_kernel *k, dk_keyset ks, const void *self) { (void)k; (void)ks; (void)self; return 7; }
static void boxed_neg(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks;
    if (s->unboxed_args) { ((rd_neg_args *)s->unboxed_args)->result = 7; return; }   /* a typed call */
    s->size -= 2;
    dk_stack_push(s, dk_int(7));
}
static int count_op(dk_operator *op, void *ud) { (void)op; (*(int *)ud)++; return 0; }

static void trace_nothing(const dk_operator *op, dk_keyset ks, dk_key key, int is_redispatch, void *user_data) {
    (void)op, (void)ks, (void)key, (void)is_redispatch, (void)user_data;
}

static void test_every_public_reader_in_a_read_section(void **state) {
    dk_registry_desc d;
    dk_registration *h;
    dk_operator *op, *found;
    const dk_kernel *k;
    dk_keyset ks;
    dk_explanation e;
    dk_value storage[4], v;
    dk_stack st;
    tensor x;
    char buf[512];
    const char *reason;
    int n = 0;
    (void)state;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = plain_keyset;
    assert_int_equal(dk_registry_create(&d, &reg), DK_OK);
    assert_int_equal(dk_def(reg, "rd::neg(Tensor self, int n=3) -> int", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "rd::neg", DK_CPU, rd_neg_kernel(neg_cpu, NULL, "neg_cpu"), &h), DK_OK);
    assert_int_equal(dk_impl(reg, "rd::neg", DK_CUDA, dk_boxed(boxed_neg, NULL), &h), DK_OK);
    x.ks = dk_ks_from_key(DK_CPU);

    op = dk_op_lookup(reg, "rd::neg");
    assert_non_null(op);
    assert_int_equal(dk_op_lookup_defined(reg, "rd::neg", &found), DK_OK);
    assert_int_equal(dk_op_has_kernel_for_key(op, DK_CPU), 1);
    assert_int_equal(dk_op_has_computed_kernel_for_key(op, DK_CPU), 1);
    assert_int_equal(dk_op_has_computed_kernel_for_key(op, DK_XLA), 0);
    assert_non_null(dk_op_compute_slot(op, dk_key_slot(DK_CPU), &reason));
    assert_true(dk_op_state_to_string(op, buf, sizeof buf) > 0);
    assert_true(dk_op_computed_table_to_string(op, buf, sizeof buf) > 0);
    assert_true(dk_registry_html_to_string(reg, NULL, 0) > 0);
    dk_registry_each_op(reg, count_op, &n);
    dk_registry_each_op_for_key(reg, DK_CPU, count_op, &n);
    assert_int_equal(n, 2);
    assert_int_equal(dk_op_tags(op), 0);
    assert_int_equal(dk_op_has_tag(op, (dk_tag)0), 0);
    assert_int_equal(dk_op_alias_analysis(op), DK_ALIAS_ANALYSIS_FROM_SCHEMA);
    assert_int_equal(dk_op_argument_index(op, "n"), 1);
    assert_int_equal(dk_op_default(op, 1, &v), DK_OK);
    assert_int_equal(v.as.i, 3);
    assert_int_equal(dk_op_check_signature(op, "(int) (Tensor, int)"), DK_ERR_NO_ADAPTER);
    assert_int_equal(dk_explain(op, x.ks, &e), DK_OK);
    assert_int_equal(dk_explain_args(op, &x.ks, 1, &e), DK_OK);
    assert_true(dk_explain_to_string(op, &e, buf, sizeof buf) > 0);

    dk_stack_init(&st, storage, 4);
    dk_stack_push(&st, dk_tensor(&x));
    assert_int_equal(dk_explain_stack(op, &st, &e), DK_ERR_BAD_STACK);   /* one argument short */
    assert_int_equal(dk_stack_push_default(op, &st), DK_OK);
    assert_int_equal(dk_stack_dispatch_keyset(op, &st).repr, x.ks.repr);
    assert_int_equal(dk_stack_check(op, &st), DK_OK);
    st.size = 1;
    assert_int_equal(dk_stack_fill_defaults(op, &st), DK_OK);
    assert_int_equal(dk_explain_stack(op, &st, &e), DK_OK);
    x.ks = dk_ks_from_key(DK_CUDA);
    dk_call_boxed(op, &st);   /* the CUDA kernel is boxed */
    assert_int_equal(st.size, 1);
    assert_int_equal(st.values[0].as.i, 7);
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&x));
    dk_stack_push(&st, dk_int(1));
    dk_redispatch_boxed(op, dk_ks_from_key(DK_CUDA), &st);
    assert_int_equal(st.values[0].as.i, 7);
    x.ks = dk_ks_from_key(DK_CPU);
    assert_int_equal(rd_neg_call(op, &x), 7);
    assert_int_equal(rd_neg_redispatch(op, x.ks, &x), 7);
    x.ks = dk_ks_from_key(DK_CUDA);
    assert_int_equal(rd_neg_call(op, &x), 7);   /* a boxed kernel gets the argument pack */
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&x));
    dk_stack_push(&st, dk_int(1));
    assert_int_equal(dk_abi_call_boxed(op, &st), DK_OK);
    assert_int_equal(st.values[0].as.i, 7);
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&x));
    dk_stack_push(&st, dk_int(1));
    assert_int_equal(dk_abi_redispatch_boxed(op, dk_ks_from_key(DK_CUDA).repr, &st), DK_OK);
    assert_string_equal(dk_abi_op_name(op), "rd::neg");
    {   /* the ABI's readers of a def and of the name index */
        const dk_operator *abi_op = NULL;
        assert_int_equal(dk_abi_op_lookup(reg, "rd::neg", &abi_op), DK_OK);
        assert_ptr_equal(abi_op, op);
        assert_int_equal(dk_abi_op_schema(op, buf, sizeof buf), (int)strlen("rd::neg(Tensor self, int n=3) -> int"));
        assert_int_equal(dk_abi_op_num_arguments(op), 2);
        assert_int_equal(dk_abi_op_num_returns(op), 1);
        assert_int_equal(dk_abi_op_argument_kwarg_only(op, 1), 0);
        assert_true(dk_abi_op_argument_name(op, 1, buf, sizeof buf) > 0);
        assert_string_equal(buf, "n");
        assert_true(dk_abi_op_argument_type(op, 1, buf, sizeof buf) > 0);
        assert_string_equal(buf, "int");
        assert_true(dk_abi_op_argument_default(op, 1, buf, sizeof buf) > 0);
        assert_string_equal(buf, "3");
        assert_true(dk_abi_op_return_type(op, 0, buf, sizeof buf) > 0);
        assert_string_equal(buf, "int");
        assert_int_equal(dk_abi_op_return_name(op, 0, buf, sizeof buf), 0);   /* unnamed: "" */
        assert_int_equal(dk_abi_op_return_name(op, 1, buf, sizeof buf), -1);  /* no such return */
        assert_int_equal(dk_abi_explain(op, dk_ks_from_key(DK_CPU).repr, &e), DK_OK);
        assert_int_equal(dk_abi_explanation_slot(&e), dk_key_slot(DK_CPU));
        dk_abi_call_fail(op, NULL, x.ks.repr, DK_ERR_KERNEL_FAILED, "failed through the ABI");
        assert_int_equal(dk_last_call_status(), DK_ERR_KERNEL_FAILED);
    }
    dk_call_error_report(op, x.ks, DK_ERR_NO_KERNEL, "reported", NULL);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);

    dk_call_enter();   /* the inline accessors: inside a call (a kernel's place) */
    assert_non_null(dk_op_table_of(op));
    assert_non_null(dk_op_slot_kernel(op, dk_key_slot(DK_CPU)));
    assert_string_equal(dk_op_schema(op), "rd::neg(Tensor self, int n=3) -> int");
    assert_int_equal(dk_op_function_schema(op)->num_arguments, 2);
    k = dk_dispatch_kernel(op, dk_ks_from_key(DK_CPU), &ks);
    assert_ptr_equal(k, dk_redispatch_kernel(op, ks));
    dk_trace_end(dk_trace_begin(op, ks, k, 0));   /* no hook set: a test, and nothing */
    {
        rd_neg_args args;
        const dk_op_table *t = NULL;
        dk_keyset ks2;
        dk_fn fn = NULL;
        args.self = &x;
        args.result = 0;
        dk_trace_end(dk_trace_report_begin(op, ks, k, 0));
        {   /* gen/'s call sites: the record, its snapshot and the fn its entry holds */
            const dk_op_table *t2 = NULL;
            assert_ptr_equal(dk_dispatch_kernel_with_fn(op, dk_ks_from_key(DK_CPU), &ks2, &t2, &fn), k);
            assert_ptr_equal(t2, dk_op_table_of(op));
            assert_true(dk_ks_equal(ks2, ks));
            assert_true(fn == dk_kernel_direct_fn(k));
            assert_non_null(fn);
            fn = NULL;
            assert_ptr_equal(dk_redispatch_kernel_with_fn(op, ks, &t2, &fn), k);
            assert_true(fn == dk_kernel_direct_fn(k));
            t2 = NULL;
            assert_ptr_equal(dk_redispatch_kernel_with_fn(op, dk_ks_from_key(DK_CUDA), &t2, &fn),
                             dk_redispatch_kernel(op, dk_ks_from_key(DK_CUDA)));
            assert_ptr_equal(t2, dk_op_table_of(op));
            assert_true(fn == NULL);   /* CUDA's record: a boxed kernel, no fn */
            dk_trace_set(trace_nothing, NULL);
            fn = DK_FN(trace_nothing);
            assert_ptr_equal(dk_dispatch_kernel_with_fn(op, dk_ks_from_key(DK_CPU), &ks2, &t2, &fn), k);
            assert_true(fn == NULL);   /* while a hook is set: the slow path, which reports the call */
            dk_trace_set(NULL, NULL);
        }
        k = dk_redispatch_kernel_with_fn(op, dk_ks_from_key(DK_CUDA), &t, &fn);   /* as gen/'s slow paths get it */
        assert_ptr_equal(k, dk_redispatch_kernel(op, dk_ks_from_key(DK_CUDA)));
        dk_call_packed(op, t, dk_ks_from_key(DK_CUDA), k, &args, &args.result, sizeof args.result);
        assert_int_equal(args.result, 7);
        dk_call_fail(op, k, ks, DK_ERR_BAD_ARGUMENT, "a kernel's own failure");   /* a kernel's report */
        assert_int_equal(dk_last_call_status(), DK_ERR_BAD_ARGUMENT);
    }
#ifdef DK_CALL_EPOCHS
    assert_int_equal(dk_call_enter_outermost(), 0);   /* nested: dk_call_enter's way, which it left alone */
#else
    assert_int_equal(dk_call_enter_outermost(), 1);   /* no brackets: always the inline way */
    dk_call_exit_outermost();
#endif
    dk_call_exit();
    {   /* gen/'s inline bracket: reads inside it */
        int in = dk_call_enter_outermost();
#ifdef DK_CALL_EPOCHS
        assert_int_equal(in, DK__LOAD_RLX(&dk__asymmetric));   /* attached: the inline way, unless membarrier is missing */
#else
        assert_int_equal(in, 1);
#endif
        if (!in) dk_call_enter();
        assert_ptr_equal(dk_dispatch_kernel(op, dk_ks_from_key(DK_CPU), &ks), dk_op_slot_kernel(op, dk_key_slot(DK_CPU)));
        if (in) dk_call_exit_outermost();
        else dk_call_exit();
    }
    dk_registry_destroy(reg);
}

/* ---- death tests: a forked child runs the misuse --------------------------------
   The child's stderr goes to a pipe; the parent counts how it ended (a
   SIGABRT with the message, or a normal exit) and checks the message. */
static int child_died(void (*fn)(void), const char *needle, int *exited_cleanly) {
    int fds[2], status;
    char out[4096];
    ssize_t got, len = 0;
    pid_t pid;
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        fn();
        _exit(0);
    }
    close(fds[1]);
    while ((got = read(fds[0], out + len, sizeof out - 1 - (size_t)len)) > 0) len += got;
    out[len] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    *exited_cleanly = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)) return 0;
    if (!strstr(out, needle)) { fprintf(stderr, "child's message: %s\n", out); return 0; }
    return 1;
}

static dk_operator *plain_op(void) {
    dk_registration *h;
    assert_int_equal(dk_registry_create(NULL, &reg), DK_OK);
    assert_int_equal(dk_def(reg, "rd::neg(Tensor self) -> int", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "rd::neg", DK_CPU, rd_neg_kernel(neg_cpu, NULL, "neg_cpu"), &h), DK_OK);
    return dk_op_lookup(reg, "rd::neg");
}

#ifdef DK_CALL_EPOCHS
/* Under call epochs an accessor used outside a bracket reads a table that
   may be freed at any time: the check names it. */
static void read_outside_a_bracket(void) {
    dk_operator *op = plain_op();
    (void)dk_op_slot_kernel(op, dk_key_slot(DK_CPU));
}
#endif
/* The library's own readers check in both modes: one reached outside a read
   section (as a forgotten bracket would) is stopped with its name. */
static void library_read_outside(void) {
    dk_operator *op = plain_op();
    (void)dk__snapshot(op);
}

static void test_a_read_outside_a_read_section_stops(void **state) {
    int clean = 0;
    (void)state;
    assert_true(child_died(library_read_outside, "library_read_outside read an operator's snapshot", &clean));
#ifdef DK_CALL_EPOCHS
    assert_true(child_died(read_outside_a_bracket, "dk_op_slot_kernel read an operator's snapshot", &clean));
#endif
}

/* ---- a thread that never declared itself (default build) ---------------------- */
#ifndef DK_CALL_EPOCHS
static void *declare_and_leave(void *arg) {
    (void)arg;
    assert_int_equal(dk_thread_online(), DK_OK);
    return NULL;
}
static void *declare_and_call(void *arg) {
    tensor x;
    if (dk_thread_online() != DK_OK) return NULL;
    x.ks = dk_ks_from_key(DK_CPU);
    *(int64_t *)arg = rd_neg_call(dk_op_lookup(reg, "rd::neg"), &x);
    return NULL;
}
/* single-threaded, never declaring: calls run */
static void undeclared_alone(void) {
    dk_operator *op = plain_op();
    tensor x;
    x.ks = dk_ks_from_key(DK_CPU);
    if (rd_neg_call(op, &x) != 7) abort();
}
/* another thread declared itself: this thread's next call is stopped */
static void undeclared_after_another_declared(void) {
    pthread_t th;
    dk_operator *op = plain_op();
    tensor x;
    x.ks = dk_ks_from_key(DK_CPU);
    if (rd_neg_call(op, &x) != 7) _exit(3);   /* nobody declared yet: runs */
    if (pthread_create(&th, NULL, declare_and_leave, NULL) || pthread_join(th, NULL)) _exit(4);
    (void)rd_neg_call(op, &x);
}
/* the same, through a boxed call and a generated binding's dk_dispatch_kernel */
static void undeclared_boxed(void) {
    pthread_t th;
    dk_operator *op = plain_op();
    dk_value storage[2];
    dk_stack st;
    if (pthread_create(&th, NULL, declare_and_leave, NULL) || pthread_join(th, NULL)) _exit(4);
    dk_stack_init(&st, storage, 2);
    dk_call_boxed(op, &st);
}
static void undeclared_dispatch_kernel(void) {
    pthread_t th;
    dk_operator *op = plain_op();
    dk_keyset ks;
    if (pthread_create(&th, NULL, declare_and_leave, NULL) || pthread_join(th, NULL)) _exit(4);
    (void)dk_dispatch_kernel(op, dk_ks_from_key(DK_CPU), &ks);
}
static void test_a_thread_that_never_declared_itself_is_stopped(void **state) {
    int clean = 0, stopped = 0, i;
    int64_t r = 0;
    pthread_t th;
    (void)state;
    assert_false(child_died(undeclared_alone, "", &clean));
    assert_true(clean);   /* a single-threaded program that never declares runs */
    for (i = 0; i < 3; i++)   /* the same outcome every time */
        stopped += child_died(undeclared_after_another_declared, "calls without having declared itself", &clean);
    assert_int_equal(stopped, 3);
    assert_true(child_died(undeclared_after_another_declared, "Call dk_thread_attach() on it", &clean));
    assert_true(child_died(undeclared_boxed, "calls without having declared itself", &clean));
    assert_true(child_died(undeclared_dispatch_kernel, "calls without having declared itself", &clean));
    /* here (this process): the main thread declares; a thread that declares runs */
    (void)plain_op();
    assert_int_equal(dk_thread_online(), DK_OK);
    assert_int_equal(pthread_create(&th, NULL, declare_and_call, &r), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(r, 7);
    dk_registry_destroy(reg);
}
#endif

#ifdef DK_CALL_EPOCHS
/* gen/'s call sites outside the inline bracket (dkgen_<op>_call_any and
   _redispatch_any: a nested call, a thread's first call, no membarrier)
   leave the thread's bracket as they found it: no nesting left, and the
   next outermost enter the inline way again (where membarrier works). */
static void assert_outside_calls(void) {
    assert_int_equal(dk__rd.ctr & DK__CTR_NEST, 0);
    if (DK__LOAD_RLX(&dk__asymmetric)) {
        assert_int_equal(dk_call_enter_outermost(), 1);
        dk_call_exit_outermost();
    } else {
        assert_int_equal(dk_call_enter_outermost(), 0);   /* without membarrier: always dk_call_enter's way */
    }
}
typedef struct first_call { const dk_operator *op; int redispatch; int64_t r; uint64_t nest_after, nest_before; } first_call;
static void *gen_first_call(void *arg) {
    first_call *f = (first_call *)arg;
    tensor x;
    x.ks = dk_ks_from_key(DK_CPU);
    f->nest_before = dk__rd.ctr;   /* not attached yet: the first call takes the way out of line */
    f->r = f->redispatch ? sample_numel_redispatch(f->op, x.ks, &x) : sample_numel_call(f->op, &x);
    f->nest_after = dk__rd.ctr & DK__CTR_NEST;
    if (DK__LOAD_RLX(&dk__asymmetric) && dk_call_enter_outermost()) {
        f->nest_after += 100;   /* attached by that call: the inline way from now on */
        dk_call_exit_outermost();
    }
    return NULL;
}
static void test_gen_calls_out_of_line_leave_the_bracket_balanced(void **state) {
    dk_registry_desc d;
    dk_operator *op;
    tensor x;
    int i;
    (void)state;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = plain_keyset;
    d.logger.func = quiet_log;
    assert_int_equal(dk_registry_create(&d, &reg), DK_OK);
    assert_int_equal(sample_numel_def(reg, &h_def), DK_OK);
    assert_int_equal(dk_impl(reg, "sample::numel", DK_CPU, dk_boxed(boxed_versioned, (void *)(intptr_t)TAG1), &h_kernel),
                     DK_OK);
    op = dk_op_lookup(reg, "sample::numel");
    assert_non_null(op);
    boxed_by = 0;
    x.ks = dk_ks_from_key(DK_CPU);
    assert_int_equal(sample_numel_call(op, &x), 11);   /* this thread attached */
    assert_outside_calls();
    dk_call_enter();   /* nested: inside a caller's bracket */
    assert_int_equal(sample_numel_call(op, &x), 11);
    assert_int_equal(sample_numel_redispatch(op, x.ks, &x), 11);
    assert_int_equal(dk__rd.ctr & DK__CTR_NEST, 1);   /* the caller's own bracket, still open */
    dk_call_exit();
    assert_outside_calls();
    for (i = 0; i < 2; i++) {   /* a new thread's first call, then its first redispatch */
        pthread_t th;
        first_call f;
        f.op = op;
        f.redispatch = i;
        assert_int_equal(pthread_create(&th, NULL, gen_first_call, &f), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_true((f.nest_before & DK__CTR_LOW) != 0);
        assert_int_equal(f.r, 11);
        assert_int_equal(f.nest_after, DK__LOAD_RLX(&dk__asymmetric) ? 100 : 0);
    }
    assert_outside_calls();
    dk_registry_destroy(reg);
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boxed_call_reads_one_snapshot),
        cmocka_unit_test(test_boxed_redispatch_reads_one_snapshot),
        cmocka_unit_test(test_typed_call_slow_path_reads_one_snapshot),
        cmocka_unit_test(test_typed_redispatch_slow_path_reads_one_snapshot),
        cmocka_unit_test(test_typed_call_to_a_fallback_reads_one_snapshot),
        cmocka_unit_test(test_gen_call_slow_path_reads_one_snapshot),
        cmocka_unit_test(test_gen_redispatch_slow_path_reads_one_snapshot),
        cmocka_unit_test(test_gen_call_to_a_fallback_reads_one_snapshot),
        cmocka_unit_test(test_every_public_reader_in_a_read_section),
        cmocka_unit_test(test_a_read_outside_a_read_section_stops),
#ifndef DK_CALL_EPOCHS
        cmocka_unit_test(test_a_thread_that_never_declared_itself_is_stopped),
#else
        cmocka_unit_test(test_gen_calls_out_of_line_leave_the_bracket_balanced),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
