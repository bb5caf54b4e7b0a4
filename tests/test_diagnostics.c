/* make: flags=-Igen */
/* Diagnostics, what a user is told when a kernel or a call is wrong:
   typed registration that rejects wrong kernels and records where, which
   function and which C type; per-argument keysets in explain and trace;
   the autograd-not-implemented fallback; the HTML picture of the dispatch
   table. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* A tiny tensor: keys, one value, and what a toy autograd needs. */
typedef struct tensor { dk_keyset ks; float v; int requires_grad; const char *grad_fn; } tensor;
#define DKGEN_TENSOR tensor *
#define DKGEN_TENSOR_KEYSET(t) ((t)->ks)
#include "sample_ops.h"
DK_DECLARE_OP(neg, float, x.ks, (tensor, x))
DK_DECLARE_OP(mix, float, dk_ks_or(a.ks, b.ks), (tensor, a), (tensor, b), (const char *, tag))

static float neg_cpu(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return -x.v; }
static float mix_cpu(const dk_kernel *k, dk_keyset ks, tensor a, tensor b, const char *tag) {
    (void)k; (void)ks; (void)tag;
    return a.v + b.v;
}

static tensor cpu(float v) {
    tensor t;
    t.ks = dk_ks_from_key(DK_CPU);
    t.v = v;
    t.requires_grad = 0;
    t.grad_fn = NULL;
    return t;
}

static char text[8192];
static int site_line;   /* the line of the registration under test */

static dk_registry *new_registry(void) {
    dk_registry *r = NULL;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    return r;
}

/* DK_IMPL_TYPED: the call works; dump_state names this file's line, the
   kernel's function and its C type where c10 prints the inferred schema. */
static void test_typed_impl_dump_state(void **state) {
    dk_registry *r = new_registry();
    dk_registration *h;
    char want[512];
    (void)state;
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    site_line = __LINE__ + 1;
    assert_int_equal(DK_IMPL_TYPED(neg, r, "my::neg", DK_CPU, neg_cpu, NULL, &h), DK_OK);
    assert_true(neg_call(dk_op_lookup(r, "my::neg"), cpu(2)) == -2.0f);
    dk_op_state_to_string(dk_op_lookup(r, "my::neg"), text, sizeof text);
    snprintf(want, sizeof want, "CPU: registered at %s:%d (neg_cpu) :: float(const dk_kernel *, dk_keyset, tensor) "
             "[ unboxed ]\n", __FILE__, site_line);
    assert_non_null(strstr(text, want));
    assert_string_equal(h->kernel.signature, "float(const dk_kernel *, dk_keyset, tensor)");
    /* an untyped registration still says (none) */
    assert_int_equal(dk_impl(r, "my::neg", DK_CUDA, dk_unboxed(DK_FN(neg_cpu), NULL), &h), DK_OK);
    dk_op_state_to_string(dk_op_lookup(r, "my::neg"), text, sizeof text);
    assert_non_null(strstr(text, "CUDA: registered at "));
    assert_non_null(strstr(strstr(text, "CUDA: registered at "), " :: (none) [ unboxed ]"));
    dk_registry_destroy(r);
}

/* Several arguments, a pointer type among them. */
static void test_typed_signature_text(void **state) {
    dk_kernel_desc d = DK_KERNEL(mix, mix_cpu, NULL);
    (void)state;
    assert_string_equal(d.signature, "float(const dk_kernel *, dk_keyset, tensor, tensor, const char *)");
    assert_string_equal(d.name, "mix_cpu");
    assert_true(d.fn == DK_FN(mix_cpu));
}

static void typed_block(dk_library *lib) {
    site_line = __LINE__ + 1;
    assert_int_equal(DK_LIBRARY_IMPL_TYPED(neg, lib, "neg", DK_Undefined, neg_cpu, NULL), DK_OK);
}

/* In a library block the record names the line of the impl, not the block's. */
static void test_typed_library_impl(void **state) {
    dk_registry *r = new_registry();
    dk_library *lib;
    dk_registration *h;
    char want[512];
    (void)state;
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_library_run(r, DK_LIBRARY_KIND_IMPL, "my", DK_CPU, typed_block, &lib), DK_OK);
    assert_true(neg_call(dk_op_lookup(r, "my::neg"), cpu(3)) == -3.0f);
    dk_op_state_to_string(dk_op_lookup(r, "my::neg"), text, sizeof text);
    snprintf(want, sizeof want, "CPU: registered at %s:%d (neg_cpu) :: float(", __FILE__, site_line);
    assert_non_null(strstr(text, want));
    assert_int_equal(dk_library_close(lib), DK_OK);
    assert_false(dk_op_has_kernel_for_key(dk_op_lookup(r, "my::neg"), DK_CPU));
    dk_registry_destroy(r);
}

/* Bad inputs: a clear status and message, nothing registered. */
static void test_typed_lib_impl_errors(void **state) {
    dk_registry *r = new_registry();
    dk_library *lib;
    dk_registration *h;
    (void)state;
    assert_int_equal(DK_LIBRARY_IMPL_TYPED(neg, NULL, "neg", DK_CPU, neg_cpu, NULL), DK_ERR_NULL);
    assert_non_null(strstr(dk_last_error(), "NULL library"));
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_IMPL, "my", DK_CPU, &lib), DK_OK);
    assert_int_equal(DK_LIBRARY_IMPL_TYPED(neg, lib, "neg", DK_CUDA, neg_cpu, NULL), DK_ERR_KEY_MISMATCH);
    assert_non_null(strstr(dk_last_error(), "inconsistent with the dispatch key"));
    assert_int_equal(DK_IMPL_TYPED(neg, r, "bad name", DK_CPU, neg_cpu, NULL, &h), DK_ERR_BAD_NAME);
    dk_op_state_to_string(dk_op_lookup(r, "my::neg"), text, sizeof text);
    assert_null(strstr(text, "neg_cpu"));
    assert_int_equal(dk_library_close(lib), DK_OK);
    dk_registry_destroy(r);
}

/* ---- gen/'s helpers: the caller's line, the kernel's name and signature ---- */

static tensor *gneg_cpu(const dk_kernel *k, dk_keyset ks, tensor *self) {
    (void)k; (void)ks;
    self->v = -self->v;
    return self;
}

static void test_gen_impl_records_caller(void **state) {
    dk_registry *r = new_registry();
    dk_registration *h;
    const dk_operator *op = NULL;
    tensor x = cpu(4);
    char want[512];
    (void)state;
    assert_int_equal(sample_neg_def(r, &h), DK_OK);
    site_line = __LINE__ + 1;
    assert_int_equal(sample_neg_impl(r, DK_CPU, gneg_cpu, NULL, &h), DK_OK);
    assert_int_equal(sample_neg_bind(r, &op), DK_OK);
    assert_true(sample_neg_call(op, &x)->v == -4.0f);
    dk_op_state_to_string(op, text, sizeof text);
    snprintf(want, sizeof want, "CPU: registered at %s:%d (gneg_cpu) :: (Tensor) (Tensor) [ unboxed ]\n", __FILE__,
             site_line);
    assert_non_null(strstr(text, want));
    assert_null(strstr(text, "sample_ops.h"));
    dk_registry_destroy(r);
}

static void gen_block(dk_library *lib) {
    site_line = __LINE__ + 1;
    assert_int_equal(sample_neg_library_impl(lib, DK_Undefined, gneg_cpu, NULL), DK_OK);
}

static void test_gen_library_impl(void **state) {
    dk_registry *r = new_registry();
    dk_registration *h;
    dk_library *lib;
    char want[512];
    (void)state;
    assert_int_equal(sample_neg_def(r, &h), DK_OK);
    assert_int_equal(dk_library_run(r, DK_LIBRARY_KIND_IMPL, "sample", DK_CUDA, gen_block, &lib), DK_OK);
    dk_op_state_to_string(dk_op_lookup(r, "sample::neg"), text, sizeof text);
    snprintf(want, sizeof want, "CUDA: registered at %s:%d (gneg_cpu) :: (Tensor) (Tensor) [ unboxed ]\n", __FILE__,
             site_line);
    assert_non_null(strstr(text, want));
    /* the block's namespace must match the operator's: a clear error, nothing registered */
    assert_int_equal(dk_library_close(lib), DK_OK);
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_IMPL, "other", DK_CPU, &lib), DK_OK);
    assert_int_equal(sample_neg_library_impl(lib, DK_Undefined, gneg_cpu, NULL), DK_ERR_NAMESPACE_MISMATCH);
    assert_false(dk_op_has_kernel_for_key(dk_op_lookup(r, "sample::neg"), DK_CPU));
    assert_int_equal(dk_library_close(lib), DK_OK);
    dk_registry_destroy(r);
}

/* ---- explain and trace: each dispatch argument's keyset ---------------------- */

static tensor cuda_autograd(float v) {
    tensor t;
    t = cpu(v);
    t.ks = dk_ks_or(dk_ks_from_key(DK_CUDA), dk_ks_from_key(DK_AutogradCUDA));
    return t;
}

static dk_keyset boxed_keyset(const void *t, void *ud) { (void)ud; return ((const tensor *)t)->ks; }

static dk_registry *boxed_registry(void) {
    dk_registry_desc d;
    dk_registry *r = NULL;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = boxed_keyset;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    return r;
}

/* Typed: the keysets of the call's arguments, named by the schema. */
static void test_explain_args(void **state) {
    dk_registry *r = new_registry();
    dk_registration *h;
    dk_explanation e;
    dk_keyset ks[3];
    (void)state;
    assert_int_equal(dk_def(r, "my::mix(Tensor a, Tensor b, str tag) -> Tensor", &h), DK_OK);
    assert_int_equal(DK_IMPL_TYPED(mix, r, "my::mix", DK_CPU, mix_cpu, NULL, &h), DK_OK);
    ks[0] = cpu(1).ks;
    ks[1] = cuda_autograd(2).ks;
    ks[2] = DK_KS_EMPTY;
    assert_int_equal(dk_explain_args(dk_op_lookup(r, "my::mix"), ks, 3, &e), DK_OK);
    assert_int_equal(e.num_args, 3);
    assert_string_equal(e.arg[1].name, "b");
    assert_true(dk_ks_equal(e.args, dk_ks_or(ks[0], ks[1])));
    assert_int_equal(e.key, DK_AutogradCUDA);
    dk_explain_to_string(dk_op_lookup(r, "my::mix"), &e, text, sizeof text);
    assert_non_null(strstr(text, "\n    a (argument 0): DispatchKeySet(CPU)\n"
                                 "    b (argument 1): DispatchKeySet(CUDA, AutogradCUDA)\n"
                                 "    tag (argument 2): DispatchKeySet()\n"));
    /* bad input: a clear status, *out untouched */
    e.num_args = 42;
    assert_int_equal(dk_explain_args(dk_op_lookup(r, "my::mix"), ks, DK_EXPLAIN_MAX_ARGS + 1, &e),
                     DK_ERR_BAD_ARGUMENT);
    assert_non_null(strstr(dk_last_error(), "DK_EXPLAIN_MAX_ARGS"));
    assert_int_equal(e.num_args, 42);
    assert_int_equal(dk_explain_args(dk_op_lookup(r, "my::mix"), NULL, 2, &e), DK_ERR_NULL);
    /* plain dk_explain: no per-argument lines */
    assert_int_equal(dk_explain(dk_op_lookup(r, "my::mix"), ks[0], &e), DK_OK);
    assert_int_equal(e.num_args, 0);
    dk_explain_to_string(dk_op_lookup(r, "my::mix"), &e, text, sizeof text);
    assert_null(strstr(text, "(argument"));
    dk_registry_destroy(r);
}

/* Boxed: the stack's dispatch arguments, found by the schema. */
static void test_explain_stack(void **state) {
    dk_registry *r = boxed_registry();
    dk_registration *h;
    dk_explanation e;
    dk_value storage[8];
    dk_stack st;
    tensor a = cpu(1), b = cuda_autograd(2);
    const dk_operator *op;
    (void)state;
    assert_int_equal(dk_def(r, "my::mix(Tensor a, int n, Tensor b) -> Tensor", &h), DK_OK);
    op = dk_op_lookup(r, "my::mix");
    dk_stack_init(&st, storage, 8);
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_int(3));
    dk_stack_push(&st, dk_tensor(&b));
    assert_int_equal(dk_explain_stack(op, &st, &e), DK_OK);
    assert_int_equal(e.num_args, 2);
    assert_int_equal(e.arg[0].index, 0);
    assert_int_equal(e.arg[1].index, 2);
    assert_string_equal(e.arg[1].name, "b");
    assert_true(dk_ks_equal(e.arg[1].ks, b.ks));
    dk_explain_to_string(op, &e, text, sizeof text);
    assert_non_null(strstr(text, "\n    a (argument 0): DispatchKeySet(CPU)\n"
                                 "    b (argument 2): DispatchKeySet(CUDA, AutogradCUDA)\n"));
    assert_int_equal(st.size, 3);   /* the stack is only read */
    /* a stack that does not fit the schema, an operator without a def */
    dk_stack_pop(&st);
    dk_stack_push(&st, dk_int(4));
    assert_int_equal(dk_explain_stack(op, &st, &e), DK_ERR_BAD_STACK);
    assert_non_null(strstr(dk_last_error(), "argument 2 'b'"));
    assert_int_equal(dk_impl(r, "my::nodef", DK_CPU, dk_unboxed(DK_FN(neg_cpu), NULL), &h), DK_OK);
    assert_int_equal(dk_explain_stack(dk_op_lookup(r, "my::nodef"), &st, &e), DK_ERR_NOT_FOUND);
    assert_non_null(strstr(dk_last_error(), "has no def"));
    dk_registry_destroy(r);
}

/* The trace hook of a boxed call reads the stack, and with it each argument's keyset. */
static char traced[1024];
static void trace_args(const dk_operator *op, dk_keyset ks, dk_key key, int is_redispatch, void *ud) {
    dk_explanation e;
    const dk_stack *st = dk_trace_stack();
    size_t len = strlen(traced);
    (void)ks; (void)ud;
    if (!st) {
        snprintf(traced + len, sizeof traced - len, "%s typed at %s; ", op->name, dk_key_name(key));
        return;
    }
    assert_int_equal(dk_explain_stack(op, st, &e), DK_OK);
    snprintf(traced + len, sizeof traced - len, "%s%s at %s, %d args, b: %s; ", is_redispatch ? "re " : "",
             op->name, dk_key_name(key), e.num_args, dk_key_name(dk_ks_highest_key(e.arg[1].ks)));
}
static void boxed_pass(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k;
    dk_redispatch_boxed(op, dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD), stack);
}
static void boxed_cuda(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k; (void)op; (void)ks;
    stack->size -= 3;
    dk_stack_push(stack, dk_int(7));
}

static void test_trace_stack(void **state) {
    dk_registry *r = boxed_registry();
    dk_registration *h;
    dk_value storage[8];
    dk_stack st;
    tensor a = cpu(1), b = cuda_autograd(2);
    (void)state;
    assert_int_equal(dk_def(r, "my::mix(Tensor a, int n, Tensor b) -> int", &h), DK_OK);
    assert_int_equal(dk_impl(r, "my::mix", DK_AutogradCUDA, dk_boxed(boxed_pass, NULL), &h), DK_OK);
    assert_int_equal(dk_impl(r, "my::mix", DK_CUDA, dk_boxed(boxed_cuda, NULL), &h), DK_OK);
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(DK_IMPL_TYPED(neg, r, "my::neg", DK_CPU, neg_cpu, NULL, &h), DK_OK);
    dk_stack_init(&st, storage, 8);
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_int(3));
    dk_stack_push(&st, dk_tensor(&b));
    traced[0] = '\0';
    dk_trace_set(trace_args, NULL);
    dk_call_boxed(dk_op_lookup(r, "my::mix"), &st);
    neg_call(dk_op_lookup(r, "my::neg"), a);
    dk_trace_set(NULL, NULL);
    assert_null(dk_trace_stack());
    assert_int_equal(st.size, 1);
    assert_int_equal(st.values[0].as.i, 7);
    assert_string_equal(traced, "my::mix at AutogradCUDA, 2 args, b: AutogradCUDA; "
                                "re my::mix at CUDA, 2 args, b: AutogradCUDA; my::neg typed at CPU; ");
    dk_registry_destroy(r);
}

/* ---- the autograd-not-implemented fallback ------------------------------------ */

static int marks;
/* The toy autograd: a marked result gets a node whose backward fails. */
static void mark_not_implemented(dk_value *result, const char *op_name, void *ud) {
    tensor *t = (tensor *)result->as.tensor;
    (void)ud;
    marks++;
    t->requires_grad = 1;
    t->grad_fn = op_name;
}
static int arg_requires_grad(const dk_value *arg, void *ud) {
    (void)ud;
    return arg->tag == DK_VALUE_TENSOR && ((const tensor *)arg->as.tensor)->requires_grad;
}
/* What the program's backward does on such a node. */
static int backward(const tensor *t, char *msg, size_t size) {
    if (!t->grad_fn) return 0;
    snprintf(msg, size, "derivative for %s is not implemented", t->grad_fn);
    return -1;
}
static const dk_autograd_ni_desc ni_desc = { mark_not_implemented, arg_requires_grad, NULL };

static tensor cpu_autograd(float v, int requires_grad) {
    tensor t = cpu(v);
    t.ks = dk_ks_or(t.ks, dk_ks_from_key(DK_AutogradCPU));
    t.requires_grad = requires_grad;
    return t;
}

/* gen/'s def gives boxing adapters: a typed call reaches the boxed fallback,
   runs the CPU kernel below autograd, and the result is marked. */
static void test_autograd_not_implemented(void **state) {
    dk_registry *r = boxed_registry();
    dk_registration *h;
    const dk_operator *op = NULL;
    tensor x = cpu_autograd(4, 1), y = cpu_autograd(5, 0), *out;
    char msg[128];
    (void)state;
    assert_int_equal(sample_neg_def(r, &h), DK_OK);
    assert_int_equal(sample_neg_impl(r, DK_CPU, gneg_cpu, NULL, &h), DK_OK);
    assert_int_equal(sample_neg_bind(r, &op), DK_OK);
    /* no autograd kernel and no fallback: the AutogradCPU slot is empty */
    assert_null(sample_neg_call(op, &x));
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    assert_non_null(strstr(dk_last_error(), "AutogradCPU"));
    assert_int_equal(dk_fallback(r, DK_Autograd, dk_autograd_not_implemented(&ni_desc), &h), DK_OK);
    marks = 0;
    out = sample_neg_call(op, &x);
    assert_int_equal(dk_last_call_status(), DK_OK);
    assert_ptr_equal(out, &x);
    assert_true(out->v == -4.0f);
    assert_int_equal(marks, 1);
    assert_int_equal(backward(out, msg, sizeof msg), -1);
    assert_string_equal(msg, "derivative for sample::neg is not implemented");
    /* no input requires grad: the result is left alone */
    out = sample_neg_call(op, &y);
    assert_int_equal(marks, 1);
    assert_null(out->grad_fn);
    assert_int_equal(backward(out, msg, sizeof msg), 0);
    /* dump_state and the computed table show where the fallback came from */
    dk_op_computed_table_to_string(op, text, sizeof text);
    assert_non_null(strstr(text, "AutogradCPU: registered at "));
    assert_non_null(strstr(text, "(autograd_not_implemented) [backend fallback]"));
    dk_registry_destroy(r);
}

/* A DK_DECLARE_OP operator defined without adapters: the boxed fallback
   cannot see the arguments; the call fails with DK_ERR_NO_ADAPTER. */
static void test_autograd_not_implemented_needs_adapters(void **state) {
    dk_registry *r = boxed_registry();
    dk_registration *h;
    tensor x = cpu_autograd(4, 1);
    (void)state;
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(DK_IMPL_TYPED(neg, r, "my::neg", DK_CPU, neg_cpu, NULL, &h), DK_OK);
    assert_int_equal(dk_fallback(r, DK_Autograd, dk_autograd_not_implemented(&ni_desc), &h), DK_OK);
    marks = 0;
    assert_true(neg_call(dk_op_lookup(r, "my::neg"), x) == 0.0f);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_ADAPTER);
    assert_non_null(strstr(dk_last_error(), "no boxing adapters"));
    assert_int_equal(marks, 0);
    /* the other choice: autograd falls through to the CPU kernel, unmarked */
    assert_int_equal(dk_deregister(h), DK_OK);
    assert_int_equal(dk_fallback(r, DK_Autograd, dk_fallthrough(), &h), DK_OK);
    assert_true(neg_call(dk_op_lookup(r, "my::neg"), x) == -4.0f);
    assert_int_equal(dk_last_call_status(), DK_OK);
    assert_int_equal(marks, 0);
    dk_registry_destroy(r);
}

/* Bad input: NULL description, refused with a message; nothing registered. */
static void test_autograd_not_implemented_null(void **state) {
    dk_registry *r = boxed_registry();
    dk_registration *h;
    (void)state;
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_fallback(r, DK_Autograd, dk_autograd_not_implemented(NULL), &h), DK_ERR_BAD_KERNEL);
    assert_non_null(strstr(dk_last_error(), "neither an unboxed nor a boxed function"));
    assert_false(dk_op_has_computed_kernel_for_key(dk_op_lookup(r, "my::neg"), DK_AutogradCPU));
    dk_registry_destroy(r);
}

/* ---- the dispatch table as HTML --------------------------------------------------- */

static void boxed_noop(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k; (void)op; (void)ks; (void)stack;
}

/* The class a cell must have, from the public snapshot (independent of the writer). */
static const char *expected_class(const dk_operator *op, int slot) {
    const dk_kernel *k = dk_op_slot_kernel(op, slot);
    if (k->kind == DK_KERNEL_FALLTHROUGH) return "fallthrough";
    if (k->kind == DK_KERNEL_AMBIGUOUS) return "ambiguous";
    if (k->kind == DK_KERNEL_MISSING) return "missing";
    if (k->is_fallback) return "fallback";
    return dk_key_is_alias(k->key) ? "alias" : "kernel";
}

/* Every row's cells, in slot order: class and data-key checked against the
   snapshot; returns how many cells of each class were seen. */
static int check_rows(dk_registry *r, const char *html, int counts[6]) {
    static const char *const names[6] = { "kernel", "alias", "fallback", "fallthrough", "ambiguous", "missing" };
    const char *row = html;
    int rows = 0;
    while ((row = strstr(row, "<tr data-op=\"")) != NULL) {
        char name[64], cls[32], key[64];
        const char *end = strstr(row, "</tr>"), *cell = row;
        const dk_operator *op;
        int slot = 0, i;
        assert_int_equal(sscanf(row, "<tr data-op=\"%63[^\"]\"", name), 1);
        assert_non_null(op = dk_op_lookup(r, name));
        while ((cell = strstr(cell, "<td class=\"dk-")) != NULL && cell < end) {
            assert_int_equal(sscanf(cell, "<td class=\"dk-%31[a-z]", cls), 1);
            assert_int_equal(sscanf(strstr(cell, "data-key=\""), "data-key=\"%63[^\"]\"", key), 1);
            assert_true(slot < DK_NUM_SLOTS);
            assert_string_equal(key, dk_key_name(dk_slot_key(slot)));
            assert_string_equal(cls, expected_class(op, slot));
            for (i = 0; i < 6; i++) counts[i] += strcmp(cls, names[i]) == 0;
            slot++;
            cell++;
        }
        assert_int_equal(slot, DK_NUM_SLOTS);
        rows++;
        row = end;
    }
    return rows;
}

static void test_html_cells(void **state) {
    dk_registry *r = new_registry();
    dk_registration *h;
    char *html;
    int n, counts[6] = { 0, 0, 0, 0, 0, 0 }, i;
    (void)state;
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(DK_IMPL_TYPED(neg, r, "my::neg", DK_CPU, neg_cpu, NULL, &h), DK_OK);
    assert_int_equal(DK_IMPL_TYPED(neg, r, "my::neg", DK_CompositeImplicitAutograd, neg_cpu, NULL, &h), DK_OK);
    assert_int_equal(DK_IMPL_TYPED(neg, r, "my::neg", DK_SparseCPU, neg_cpu, NULL, &h), DK_OK); /* ambiguity */
    assert_int_equal(dk_def(r, "my::mix(Tensor a, Tensor b, str tag) -> Tensor", &h), DK_OK);
    assert_int_equal(DK_IMPL_TYPED(mix, r, "my::mix", DK_Autograd, mix_cpu, NULL, &h), DK_OK);
    assert_int_equal(dk_impl(r, "my::mix", DK_Tracer, dk_fallthrough(), &h), DK_OK);
    assert_int_equal(dk_fallback(r, DK_PrivateUse1, dk_boxed(boxed_noop, NULL), &h), DK_OK);
    n = dk_registry_html_to_string(r, NULL, 0);
    assert_true(n > 1000);
    html = (char *)malloc((size_t)n + 1);
    assert_int_equal(dk_registry_html_to_string(r, html, (size_t)n + 1), n);
    assert_int_equal((int)strlen(html), n);
    assert_int_equal(check_rows(r, html, counts), 2);
    for (i = 0; i < 6; i++) assert_true(counts[i] > 0);   /* every class occurs */
    /* tooltips carry the registration site; the legend lists every class */
    assert_non_null(strstr(html, "title=\"my::neg @ CPU: kernel, registered at "));
    assert_non_null(strstr(html, "(neg_cpu)\">K</td>"));
    assert_non_null(strstr(html, "data-key=\"AutogradCPU\" title=\"my::mix @ AutogradCPU: autograd kernel"));
    assert_non_null(strstr(html, "<i><span class=\"dk-ambiguous\"></span>ambiguous"));
    /* a column no operator uses is quiet (hidden unless toggled) */
    assert_non_null(strstr(html, "<td class=\"dk-missing dk-quiet\" data-key=\"Named\""));
    assert_non_null(strstr(html, "<th class=\"dk-quiet\">Named</th>"));
    /* per-backend keys matter only for backends with a kernel or fallback of their own */
    assert_non_null(strstr(html, "<th>AutogradCPU</th>"));
    assert_non_null(strstr(html, "<th>AutogradPrivateUse1</th>"));
    assert_non_null(strstr(html, "<th class=\"dk-quiet\">AutogradCUDA</th>"));
    /* truncation keeps the snprintf convention */
    assert_int_equal(dk_registry_html_to_string(r, html, 10), n);
    assert_int_equal((int)strlen(html), 9);
    free(html);
    assert_int_equal(dk_registry_html_to_string(NULL, text, sizeof text), 0);
    assert_string_equal(text, "");
    dk_registry_destroy(r);
}

/* What a user registered reaches the page as text: a kernel's name and its
   registration site, which may hold any character, come out escaped (the
   operator names the schema parser accepts hold none of < > & "). */
static void test_html_escapes_names(void **state) {
    static const char raw[] = "k<a>&\"b\"";
    static const char escaped[] = "k&lt;a&gt;&amp;&quot;b&quot;";
    dk_registry *r = new_registry();
    dk_registration *h;
    char *html;
    int n;
    (void)state;
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl_at(r, "my::neg", DK_CPU, dk_kernel_named(dk_unboxed(DK_FN(neg_cpu), NULL), raw, NULL),
                                "dir<&>\"/f.c", 7, &h),
                     DK_OK);
    n = dk_registry_html_to_string(r, NULL, 0);
    html = (char *)malloc((size_t)n + 1);
    assert_non_null(html);
    assert_int_equal(dk_registry_html_to_string(r, html, (size_t)n + 1), n);
    assert_non_null(strstr(html, "registered at dir&lt;&amp;&gt;&quot;/f.c:7"));
    assert_non_null(strstr(html, escaped));
    assert_null(strstr(html, raw));
    assert_null(strstr(html, "dir<"));
    /* every < and > of the page is markup: none comes from a name */
    assert_null(strstr(html, "<a>"));
    assert_non_null(strstr(html, "<tr data-op=\"my::neg\"><th>my::neg</th>"));
    free(html);
    dk_registry_destroy(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typed_impl_dump_state),
        cmocka_unit_test(test_typed_signature_text),
        cmocka_unit_test(test_typed_library_impl),
        cmocka_unit_test(test_typed_lib_impl_errors),
        cmocka_unit_test(test_gen_impl_records_caller),
        cmocka_unit_test(test_gen_library_impl),
        cmocka_unit_test(test_explain_args),
        cmocka_unit_test(test_explain_stack),
        cmocka_unit_test(test_trace_stack),
        cmocka_unit_test(test_autograd_not_implemented),
        cmocka_unit_test(test_autograd_not_implemented_needs_adapters),
        cmocka_unit_test(test_autograd_not_implemented_null),
        cmocka_unit_test(test_html_cells),
        cmocka_unit_test(test_html_escapes_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
