/* make: variants=2_11 */
/* Boxed calls checked against the schema, kernels that fail a call, the
   parsed schema of an operator, and the text-output convention. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

typedef struct tensor { dk_keyset ks; int v; } tensor;
static dk_keyset tensor_ks(const void *t, void *ud) { (void)ud; return ((const tensor *)t)->ks; }

static dk_registry *reg;
static dk_status last_status;
static char last_message[4096];
static int kernel_runs;
static dk_value seen[16];
static size_t seen_n;

static void record_error(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    (void)op; (void)ks; (void)ud;
    last_status = s;
    snprintf(last_message, sizeof last_message, "%s", m);
}

/* A boxed kernel that records its arguments and returns the first one. */
static void record_args(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    const dk_schema *sch = dk_op_function_schema(op);
    size_t n = (size_t)sch->num_arguments, i;
    (void)k; (void)ks;
    kernel_runs++;
    seen_n = n;
    for (i = 0; i < n; i++) seen[i] = s->values[s->size - n + i];
    s->size -= n;
    dk_stack_push(s, seen[0]);
}

static int setup(void **state) {
    dk_registry_desc d;
    dk_registration *h;
    (void)state;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = tensor_ks;
    assert_int_equal(dk_registry_create(&d, &reg), DK_OK);
    assert_int_equal(dk_registry_set_call_error(reg, record_error, NULL), DK_OK);
    assert_int_equal(dk_def(reg, "sample::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", &h),
                     DK_OK);
    assert_int_equal(dk_impl(reg, "sample::add.Tensor", DK_CPU, dk_boxed(record_args, NULL), &h), DK_OK);
    assert_int_equal(dk_def(reg, "sample::many(Tensor? a, Tensor[] b, int[] c, float[] d, int[2] stride=1, "
                                 "float[] f=[1.5, 2], str mode=\"mean\", ScalarType? dtype=None, bool flag=True, "
                                 "int[1]? dim=None, float x=2) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "sample::many", DK_CPU, dk_boxed(record_args, NULL), &h), DK_OK);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    dk_registry_destroy(reg);
    return 0;
}

static tensor cpu(int v) { tensor t; t.ks = dk_ks_from_key(DK_CPU); t.v = v; return t; }

/* The case: alias left off, as a torch user would. */
static void test_trailing_defaults_filled(void **state) {
    const dk_operator *op = dk_op_lookup(reg, "sample::add.Tensor");
    tensor a = cpu(1), b = cpu(2);
    dk_value storage[8];
    dk_stack st;
    (void)state;
    dk_stack_init(&st, storage, 8);
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_tensor(&b));
    kernel_runs = 0;
    last_status = DK_OK;
    dk_call_boxed(op, &st);
    assert_int_equal(last_status, DK_OK);
    assert_int_equal(kernel_runs, 1);
    assert_int_equal(seen_n, 3);
    assert_ptr_equal(seen[0].as.tensor, &a);
    assert_ptr_equal(seen[1].as.tensor, &b);
    assert_int_equal(seen[2].tag, DK_VALUE_INT);
    assert_int_equal(seen[2].as.i, 1);
    assert_int_equal(st.size, 1);
}

static void expect_refused(const dk_operator *op, dk_stack *st, const char *words) {
    size_t size = st->size;
    kernel_runs = 0;
    last_status = DK_OK;
    dk_call_boxed(op, st);
    assert_int_equal(last_status, DK_ERR_BAD_STACK);
    assert_int_equal(kernel_runs, 0);
    assert_int_equal(st->size, size);   /* the stack as it was given */
    if (!strstr(last_message, words)) fail_msg("message %s\nlacks %s", last_message, words);
}

static void test_bad_stacks_refused(void **state) {
    const dk_operator *op = dk_op_lookup(reg, "sample::add.Tensor");
    tensor a = cpu(1);
    dk_value storage[8];
    dk_stack st;
    (void)state;
    /* too few: other has no default */
    dk_stack_init(&st, storage, 8);
    dk_stack_push(&st, dk_tensor(&a));
    expect_refused(op, &st, "argument 1 'other' (Tensor) has no default");
    /* a string where a tensor goes */
    dk_stack_push(&st, dk_string("b"));
    expect_refused(op, &st, "argument 1 'other' is Tensor, the stack has a string there");
    /* a string as Scalar */
    st.size = 1;
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_string("1"));
    expect_refused(op, &st, "argument 2 'alpha' is Scalar, the stack has a string there");
    /* too many */
    st.size = 2;
    dk_stack_push(&st, dk_int(1));
    dk_stack_push(&st, dk_int(2));
    expect_refused(op, &st, "the schema has 3 arguments, the stack holds 4 values");
    /* no room for the defaults */
    dk_stack_init(&st, storage, 2);
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_tensor(&a));
    expect_refused(op, &st, "capacity (2)");
    /* every argument given (no default to fill: Note [Boxed fast way]),
       a wrong kind at a Tensor argument, then at the Scalar */
    dk_stack_init(&st, storage, 8);
    dk_stack_push(&st, dk_int(7));
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_int(1));
    expect_refused(op, &st, "argument 0 'self' is Tensor, the stack has an int there");
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_string("1"));
    expect_refused(op, &st, "argument 2 'alpha' is Scalar, the stack has a string there");
    /* NULL operator, NULL stack: a status, no crash */
    (void)dk_last_call_status();
    dk_call_boxed(NULL, &st);
    assert_int_equal(dk_last_call_status(), DK_ERR_NULL);
    dk_call_boxed(op, NULL);
    assert_int_equal(dk_last_call_status(), DK_ERR_NULL);
    dk_redispatch_boxed(NULL, dk_ks_from_key(DK_CPU), NULL);
    assert_int_equal(dk_last_call_status(), DK_ERR_NULL);
}

/* A boxed kernel per backend: which one ran, and what it was given. */
static int ran_cpu, ran_cuda;
static void on_cpu(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    ran_cpu++;
    record_args(k, op, ks, s);
}
static void on_cuda(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    ran_cuda++;
    record_args(k, op, ks, s);
}

/* Defines schema's operator with boxed kernels at CPU and CUDA (on_cpu,
   on_cuda) and looks it up. */
static const dk_operator *def_cpu_cuda(const char *schema, const char *name) {
    dk_registration *h;
    assert_int_equal(dk_def(reg, schema, &h), DK_OK);
    assert_int_equal(dk_impl(reg, name, DK_CPU, dk_boxed(on_cpu, NULL), &h), DK_OK);
    assert_int_equal(dk_impl(reg, name, DK_CUDA, dk_boxed(on_cuda, NULL), &h), DK_OK);
    return dk_op_lookup(reg, name);
}
/* returns two values where the schema has one */
static void two_results(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks;
    s->size = 0;
    dk_stack_push(s, dk_int(1));
    dk_stack_push(s, dk_int(2));
}

/* Every argument on the stack: the dispatch keyset is the union of the
   dispatch arguments' (a Tensor[]'s tensors, a Tensor?'s None adding
   nothing), values elsewhere do not count, and a kernel leaving other than
   the schema's one result fails the call with an empty stack. */
static void test_all_arguments_given(void **state) {
    const dk_operator *op;
    dk_registration *h;
    tensor c1 = cpu(1), c2 = cpu(2), g = cpu(3);
    dk_value storage[8], list[2];
    dk_stack st;
    (void)state;
    g.ks = dk_ks_from_key(DK_CUDA);
    op = def_cpu_cuda("sample::pick(Tensor[] ts, Tensor? w, int dim) -> Tensor", "sample::pick");
    dk_stack_init(&st, storage, 8);
    list[0] = dk_tensor(&c1);
    list[1] = dk_tensor(&g);
    dk_stack_push(&st, dk_list(list, 2));
    dk_stack_push(&st, dk_none());
    dk_stack_push(&st, dk_int(0));
    ran_cpu = ran_cuda = 0;
    last_status = DK_OK;
    dk_call_boxed(op, &st);
    assert_int_equal(last_status, DK_OK);
    assert_int_equal(ran_cuda, 1);   /* the list's CUDA tensor */
    assert_int_equal(ran_cpu, 0);
    assert_int_equal(st.size, 1);
    st.size = 0;
    list[1] = dk_tensor(&c2);
    dk_stack_push(&st, dk_list(list, 2));
    dk_stack_push(&st, dk_tensor(&g));   /* w, a dispatch argument too */
    dk_stack_push(&st, dk_int(0));
    dk_call_boxed(op, &st);
    assert_int_equal(ran_cuda, 2);
    st.size = 0;
    dk_stack_push(&st, dk_list(list, 2));
    dk_stack_push(&st, dk_none());
    dk_stack_push(&st, dk_int(0));
    dk_call_boxed(op, &st);
    assert_int_equal(ran_cpu, 1);
    assert_int_equal(last_status, DK_OK);
    /* a kernel that leaves two results */
    assert_int_equal(dk_def(reg, "sample::one(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "sample::one", DK_CPU, dk_boxed(two_results, NULL), &h), DK_OK);
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&c1));
    dk_call_boxed(dk_op_lookup(reg, "sample::one"), &st);
    assert_int_equal(last_status, DK_ERR_KERNEL_FAILED);
    if (!strstr(last_message, "left 2 values")) fail_msg("message %s", last_message);
    assert_int_equal(st.size, 0);
}

static int unboxed_runs;
static tensor *unboxed_one(const dk_kernel *k, dk_keyset ks, tensor *a) {
    (void)k; (void)ks;
    unboxed_runs++;
    return a;
}

/* A schema of plain Tensors only takes the fast way's one loop over the
   values (dk__def_part.boxed_tensors, Note [Boxed fast way]): each value
   checked, every argument's keyset in the union, a wrong kind anywhere
   refused by the general way's message with the stack as it was given,
   a value missing or one too many refused; a Tensor[] is not counted
   (a bare tensor there refused). */
static void test_tensor_only_schema(void **state) {
    const dk_operator *op;
    dk_registration *h;
    tensor c = cpu(1), g = cpu(2);
    dk_value storage[8];
    dk_stack st;
    (void)state;
    g.ks = dk_ks_from_key(DK_CUDA);
    op = def_cpu_cuda("sample::pair(Tensor a, Tensor(a) b) -> Tensor", "sample::pair");
    dk_stack_init(&st, storage, 8);
    ran_cpu = ran_cuda = 0;
    last_status = DK_OK;
    dk_stack_push(&st, dk_tensor(&c));
    dk_stack_push(&st, dk_tensor(&g));
    dk_call_boxed(op, &st);   /* the second argument's CUDA */
    assert_int_equal(last_status, DK_OK);
    assert_int_equal(ran_cuda, 1);
    assert_int_equal(st.size, 1);
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&g));
    dk_stack_push(&st, dk_tensor(&c));
    dk_call_boxed(op, &st);   /* the first argument's CUDA */
    assert_int_equal(ran_cuda, 2);
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&c));
    dk_stack_push(&st, dk_tensor(&c));
    dk_call_boxed(op, &st);
    assert_int_equal(ran_cpu, 1);
    assert_ptr_equal(seen[1].as.tensor, &c);
    assert_int_equal(last_status, DK_OK);
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&c));
    dk_stack_push(&st, dk_int(3));
    expect_refused(op, &st, "argument 1 'b' is Tensor(a), the stack has an int there");
    st.size = 0;
    dk_stack_push(&st, dk_none());
    dk_stack_push(&st, dk_tensor(&g));
    expect_refused(op, &st, "argument 0 'a' is Tensor, the stack has a none there");
    st.size = 1;
    expect_refused(op, &st, "argument 1 'b' (Tensor(a)) has no default");
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&c));
    dk_stack_push(&st, dk_tensor(&c));
    dk_stack_push(&st, dk_tensor(&c));
    expect_refused(op, &st, "the schema has 2 arguments, the stack holds 3 values");
    assert_int_equal(ran_cpu + ran_cuda, 3);
    /* the fast way's failing slots: no kernel for the keyset, and an
       unboxed kernel of an operator without adapters, each reported, the
       arguments consumed */
    assert_int_equal(dk_def(reg, "sample::bare(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "sample::bare", DK_CPU, dk_unboxed(DK_FN(unboxed_one), NULL), &h), DK_OK);
    op = dk_op_lookup(reg, "sample::bare");
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&g));
    last_status = DK_OK;
    dk_call_boxed(op, &st);
    assert_int_equal(last_status, DK_ERR_NO_KERNEL);
    assert_int_equal(st.size, 0);
    dk_stack_push(&st, dk_tensor(&c));
    last_status = DK_OK;
    dk_call_boxed(op, &st);
    assert_int_equal(last_status, DK_ERR_NO_ADAPTER);
    if (!strstr(last_message, "is unboxed and the operator has no boxing adapters")) fail_msg("message %s", last_message);
    assert_int_equal(st.size, 0);
    assert_int_equal(unboxed_runs, 0);
    /* a list of Tensors is no plain Tensor: a bare tensor there refused */
    assert_int_equal(dk_def(reg, "sample::cat(Tensor[] ts) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "sample::cat", DK_CPU, dk_boxed(on_cpu, NULL), &h), DK_OK);
    op = dk_op_lookup(reg, "sample::cat");
    st.size = 0;
    dk_stack_push(&st, dk_tensor(&c));
    expect_refused(op, &st, "argument 0 'ts' is Tensor[], the stack has a tensor there");
}

static void test_kinds_and_list_defaults(void **state) {
    const dk_operator *op = dk_op_lookup(reg, "sample::many");
    tensor a = cpu(1), b = cpu(2);
    dk_value storage[16], tensors[2];
    int64_t ints[2] = { 3, 4 };
    double dbl[1] = { 0.5 };
    dk_int_list il;
    dk_double_list dl;
    dk_value listed_ints[2];
    dk_stack st;
    (void)state;
    tensors[0] = dk_tensor(&a);
    tensors[1] = dk_tensor(&b);
    il.items = ints; il.n = 2;
    dl.items = dbl; dl.n = 1;
    dk_stack_init(&st, storage, 16);
    dk_stack_push(&st, dk_none());                  /* Tensor? a */
    dk_stack_push(&st, dk_list(tensors, 2));        /* Tensor[] b */
    dk_stack_push(&st, dk_ints(il));      /* int[] c */
    dk_stack_push(&st, dk_doubles(dl));   /* float[] d */
    kernel_runs = 0;
    last_status = DK_OK;
    dk_call_boxed(op, &st);
    assert_int_equal(last_status, DK_OK);
    assert_int_equal(kernel_runs, 1);
    assert_int_equal(seen_n, 11);
    assert_int_equal(seen[4].tag, DK_VALUE_INT_LIST);   /* int[2] stride=1 is [1, 1] */
    assert_int_equal(seen[4].as.ints.n, 2);
    assert_true(seen[4].as.ints.items[0] == 1 && seen[4].as.ints.items[1] == 1);
    assert_int_equal(seen[5].tag, DK_VALUE_DOUBLE_LIST);
    assert_true(seen[5].as.doubles.n == 2 && seen[5].as.doubles.items[0] == 1.5 && seen[5].as.doubles.items[1] == 2.0);
    assert_int_equal(seen[6].tag, DK_VALUE_STRING);
    assert_string_equal(seen[6].as.s, "mean");
    assert_int_equal(seen[7].tag, DK_VALUE_NONE);
    assert_int_equal(seen[8].tag, DK_VALUE_BOOL);
    assert_int_equal(seen[8].as.b, 1);
    assert_int_equal(seen[9].tag, DK_VALUE_NONE);
    assert_int_equal(seen[10].tag, DK_VALUE_DOUBLE);  /* float x=2 is 2.0 */
    assert_true(seen[10].as.d == 2.0);
    /* int[] as a list of ints works too; a list holding a string does not */
    listed_ints[0] = dk_int(1);
    listed_ints[1] = dk_string("x");
    dk_stack_init(&st, storage, 16);
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_list(tensors, 2));
    dk_stack_push(&st, dk_list(listed_ints, 1));
    dk_stack_push(&st, dk_doubles(dl));
    dk_call_boxed(op, &st);
    assert_int_equal(last_status, DK_OK);
    dk_stack_init(&st, storage, 16);
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_list(tensors, 2));
    dk_stack_push(&st, dk_list(listed_ints, 2));
    dk_stack_push(&st, dk_doubles(dl));
    expect_refused(op, &st, "argument 2 'c' is int[]");
    /* float takes a float, not an int */
    dk_stack_init(&st, storage, 16);
    dk_stack_push(&st, dk_none());
    dk_stack_push(&st, dk_list(tensors, 0));
    dk_stack_push(&st, dk_ints(il));
    dk_stack_push(&st, dk_ints(il));
    expect_refused(op, &st, "argument 3 'd' is float[], the stack has an int list there");
}

/* Every type against every kind of default literal: def refuses the
   defaults its type cannot hold (DK_ERR_BAD_SCHEMA naming the argument,
   nothing registered), and every default def accepts is one the boxed
   call's own stack check accepts: no def that can only fail later. */
static void test_default_kinds_agree(void **state) {
    static const char *const types[] = { "int", "float", "bool", "str", "Scalar", "complex", "ScalarType", "Layout",
                                         "int?", "float?", "bool?", "str?", "Scalar?", "Tensor?", "int[]?", "Device?" };
    static const char *const literals[] = { "1", "-2", "1.5", "1e3", "True", "\"x\"", "None", "1j", "long" };
    tensor a = cpu(1);
    size_t t, l;
    int accepted = 0, refused = 0;
    (void)state;
    for (t = 0; t < sizeof types / sizeof *types; t++)
        for (l = 0; l < sizeof literals / sizeof *literals; l++) {
            char schema[128], name[32];
            dk_registration *h = NULL, *k = NULL;
            const dk_operator *op;
            dk_value storage[4];
            dk_stack st;
            dk_status s;
            snprintf(name, sizeof name, "kinds::op%lu_%lu", (unsigned long)t, (unsigned long)l);
            snprintf(schema, sizeof schema, "%s(Tensor self, %s n=%s) -> Tensor", name, types[t], literals[l]);
            s = dk_def(reg, schema, &h);
            if (s != DK_OK) {
                if (s != DK_ERR_BAD_SCHEMA) print_message("%s: %s\n", schema, dk_last_error());
                assert_int_equal(s, DK_ERR_BAD_SCHEMA);
                assert_null(dk_op_lookup(reg, name));
                refused++;
                continue;
            }
            accepted++;
            assert_int_equal(dk_impl(reg, name, DK_CPU, dk_boxed(record_args, NULL), &k), DK_OK);
            op = dk_op_lookup(reg, name);
            dk_stack_init(&st, storage, 4);
            dk_stack_push(&st, dk_tensor(&a));
            kernel_runs = 0;
            last_status = DK_OK;
            dk_call_boxed(op, &st);
            if (last_status != DK_OK) print_message("%s: %s\n", schema, last_message);
            assert_int_equal(last_status, DK_OK);
            assert_int_equal(kernel_runs, 1);
            assert_int_equal(seen_n, 2);
            assert_int_equal(dk_deregister(k), DK_OK);
            assert_int_equal(dk_deregister(h), DK_OK);
        }
    /* the seven of the issue are among the refused, c10's conversions among the accepted */
    assert_int_equal(accepted + refused, (int)(sizeof types / sizeof *types * sizeof literals / sizeof *literals));
    print_message("%d defaults accepted, %d refused\n", accepted, refused);
    assert_int_equal(accepted, 53);
    assert_int_equal(refused, 91);
}

/* Complex values: a default reaches a kernel whole ("1j" is 0+1j,
   "1.+2.j" 1+2j; c10's quirk kept: "complex q=2.5" reads as 0.+2.j, the
   last character dropped as a 'j', as libtorch 1.13.1's parser does), from
   dk_op_default, dk_stack_fill_defaults and dk_call_boxed alike; a float
   where a complex belongs is refused. */
static void expect_complex(dk_value v, double re, double im) {
    assert_int_equal(v.tag, DK_VALUE_COMPLEX);
    assert_true(v.as.c.re == re);
    assert_true(v.as.c.im == im);
}
static void test_complex_values(void **state) {
    dk_registration *h = NULL, *k = NULL;
    const dk_operator *op;
    dk_value storage[8], v;
    dk_stack st;
    tensor a = cpu(1);
    char text[256];
    (void)state;
    assert_int_equal(dk_def(reg, "cx::f(Tensor self, complex z=1j, complex w=1.+2.j, complex q=2.5, "
                                 "complex[] l=[1j, -2.5], Scalar s=1j, complex n=long) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "cx::f", DK_CPU, dk_boxed(record_args, NULL), &k), DK_OK);
    op = dk_op_lookup(reg, "cx::f");
    dk_schema_to_string(dk_op_function_schema(op), text, sizeof text);
    assert_string_equal(text, "cx::f(Tensor self, complex z=0.+1.j, complex w=1.+2.j, complex q=0.+2.j, "
                              "complex[] l=[0.+1.j, 0.-2.j], Scalar s=0.+1.j, complex n=long) -> Tensor");
    assert_int_equal(dk_op_default(op, 1, &v), DK_OK);
    expect_complex(v, 0.0, 1.0);
    assert_int_equal(dk_op_default(op, 2, &v), DK_OK);
    expect_complex(v, 1.0, 2.0);
    assert_int_equal(dk_op_default(op, 3, &v), DK_OK);
    expect_complex(v, 0.0, 2.0);
    assert_int_equal(dk_op_default(op, 4, &v), DK_OK);
    assert_int_equal(v.tag, DK_VALUE_LIST);
    assert_int_equal(v.as.list.n, 2);
    expect_complex(v.as.list.items[0], 0.0, 1.0);
    expect_complex(v.as.list.items[1], 0.0, -2.0);
    assert_int_equal(dk_op_default(op, 5, &v), DK_OK);
    expect_complex(v, 0.0, 1.0);
    assert_int_equal(dk_op_default(op, 6, &v), DK_OK);   /* a dtype name: its int, as a complex */
    expect_complex(v, 4.0, 0.0);
    /* filled in */
    dk_stack_init(&st, storage, 8);
    dk_stack_push(&st, dk_tensor(&a));
    assert_int_equal(dk_stack_fill_defaults(op, &st), DK_OK);
    assert_int_equal(st.size, 7);
    expect_complex(st.values[1], 0.0, 1.0);
    expect_complex(st.values[2], 1.0, 2.0);
    expect_complex(st.values[3], 0.0, 2.0);
    /* called: the kernel sees them whole, a value given wins */
    dk_stack_init(&st, storage, 8);
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_complex_double(-1.5, 0.25));
    kernel_runs = 0;
    last_status = DK_OK;
    dk_call_boxed(op, &st);
    assert_int_equal(last_status, DK_OK);
    assert_int_equal(kernel_runs, 1);
    assert_int_equal(seen_n, 7);
    expect_complex(seen[1], -1.5, 0.25);
    expect_complex(seen[2], 1.0, 2.0);
    expect_complex(seen[3], 0.0, 2.0);
    expect_complex(seen[5], 0.0, 1.0);
    /* a float is no complex: refused, the stack as given */
    dk_stack_init(&st, storage, 8);
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_double(1.0));
    expect_refused(op, &st, "argument 1 'z' is complex, the stack has a float there");
    /* pop gives the value back whole */
    dk_stack_init(&st, storage, 8);
    dk_stack_push(&st, dk_complex_double(3.0, -4.0));
    expect_complex(dk_stack_pop(&st), 3.0, -4.0);
    assert_int_equal(dk_deregister(k), DK_OK);
    assert_int_equal(dk_deregister(h), DK_OK);
}

/* A stack-check message that quotes a schema longer than its buffer ends
   in the cut marker (messages are never cut silently). */
static void test_long_message_marked(void **state) {
    char schema[3000], name[64];
    dk_registration *h = NULL;
    const dk_operator *op;
    dk_value storage[48];
    dk_stack st;
    size_t len;
    int i;
    (void)state;
    len = (size_t)snprintf(schema, sizeof schema, "cut::f(Tensor self");
    for (i = 0; i < 40; i++) {
        snprintf(name, sizeof name, ", int argument_with_a_long_name_%02d=1", i);
        len += (size_t)snprintf(schema + len, sizeof schema - len, "%s", name);
    }
    snprintf(schema + len, sizeof schema - len, ") -> Tensor");
    assert_int_equal(dk_def(reg, schema, &h), DK_OK);
    op = dk_op_lookup(reg, "cut::f");
    dk_stack_init(&st, storage, 48);
    dk_stack_push(&st, dk_double(1.0));   /* not a tensor */
    expect_refused(op, &st, "argument 0 'self' is Tensor, the stack has a float there");
    assert_non_null(strstr(last_message, " ... [message cut: "));
    assert_string_equal(last_message + strlen(last_message) - strlen(" bytes in all]"), " bytes in all]");
    assert_int_equal(dk_deregister(h), DK_OK);
}

static void test_helpers(void **state) {
    const dk_operator *op = dk_op_lookup(reg, "sample::add.Tensor");
    tensor a = cpu(1);
    dk_value storage[4];
    dk_stack st;
    (void)state;
    dk_stack_init(&st, storage, 4);
    dk_stack_push(&st, dk_tensor(&a));
    dk_stack_push(&st, dk_tensor(&a));
    assert_int_equal(dk_stack_check(op, &st), DK_ERR_BAD_STACK);   /* alpha missing */
    assert_non_null(strstr(dk_last_error(), "the schema has 3 arguments, the stack holds 2 values"));
    assert_int_equal(dk_stack_fill_defaults(op, &st), DK_OK);
    assert_int_equal(st.size, 3);
    assert_int_equal(dk_stack_check(op, &st), DK_OK);
    assert_int_equal(dk_stack_fill_defaults(op, NULL), DK_ERR_NULL);
}

/* ---- kernels fail a call ------------------------------------------------------------ */

DK_DECLARE_OP(mm, tensor *, dk_ks_or(a->ks, b->ks), (tensor *, a), (tensor *, b))
static tensor *mm_cpu(const dk_kernel *k, dk_keyset ks, tensor *a, tensor *b) {
    if (a->v != b->v) {
        dk_call_fail(NULL, k, ks, DK_ERR_KERNEL_FAILED, "mm: shapes %dx? and %dx? do not fit", a->v, b->v);
        return NULL;
    }
    return a;
}
static void failing_fallback(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)s;
    dk_call_fail(op, k, ks, DK_ERR_BAD_ARGUMENT, "%s: the tracer refuses", op->name);
}

static void test_kernel_fails_call(void **state) {
    dk_registry *r;
    dk_registration *h, *fb;
    const dk_operator *op;
    tensor a = cpu(2), b = cpu(3);
    dk_guard g;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_def(r, "k::mm(Tensor a, Tensor b) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(r, "k::mm", DK_CPU, dk_unboxed(DK_FN(mm_cpu), NULL), &h), DK_OK);
    op = dk_op_lookup(r, "k::mm");
    assert_ptr_equal(mm_call(op, &a, &a), &a);
    assert_int_equal(dk_last_call_status(), DK_OK);
    assert_null(mm_call(op, &a, &b));
    assert_int_equal(dk_last_call_status(), DK_ERR_KERNEL_FAILED);
    assert_string_equal(dk_last_error(), "mm: shapes 2x? and 3x? do not fit");
    /* through the registry's own hook */
    assert_int_equal(dk_registry_set_call_error(r, record_error, NULL), DK_OK);
    last_status = DK_OK;
    assert_null(mm_call(op, &a, &b));
    assert_int_equal(last_status, DK_ERR_KERNEL_FAILED);
    /* a fallback fails the call it received */
    assert_int_equal(dk_fallback(r, DK_Tracer, dk_boxed(failing_fallback, NULL), &fb), DK_OK);
    g = dk_guard_include(dk_ks_from_key(DK_Tracer));
    last_status = DK_OK;
    assert_null(mm_call(op, &a, &a));
    dk_guard_pop(g);
    assert_int_equal(last_status, DK_ERR_BAD_ARGUMENT);
    assert_string_equal(last_message, "k::mm: the tracer refuses");
    dk_registry_destroy(r);
}

/* ---- the parsed schema of an operator ---------------------------------------------------- */

static void test_parsed_schema_view(void **state) {
    dk_registry *r;
    dk_registration *h;
    const dk_operator *op;
    const dk_schema *s;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_def(r, "v::topk(Tensor(a!) self, int k, *, bool largest=True) -> (Tensor values, Tensor "
                               "indices)", &h), DK_OK);
    op = dk_op_lookup(r, "v::topk");
    s = dk_op_function_schema(op);
    assert_non_null(s);
    assert_int_equal(s->num_arguments, 3);
    assert_string_equal(s->arguments[0].name, "self");
    assert_non_null(s->arguments[0].alias);
    assert_true(s->arguments[0].alias->is_write);
    assert_int_equal(s->arguments[2].kwarg_only, 1);
    assert_string_equal(s->arguments[2].default_text, "True");
    assert_int_equal(s->num_returns, 2);
    assert_string_equal(s->returns[0].name, "values");
    assert_string_equal(s->returns[1].name, "indices");
    assert_string_equal(s->text, dk_op_schema(op));
    assert_int_equal(dk_deregister(h), DK_OK);
    assert_null(dk_op_lookup(r, "v::topk"));
    dk_registry_destroy(r);
}

/* ---- misuse: libraries after close, NULL signatures ------------------------------------------ */

static void lib_block(dk_library *m) { (void)m; }
static void test_library_misuse(void **state) {
    dk_registry *r;
    dk_library *lib;
    dk_registration *h = NULL;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_library_run(r, DK_LIBRARY_KIND_DEF, "m", DK_Undefined, lib_block, &lib), DK_OK);
    assert_int_equal(dk_library_close(lib), DK_OK);
    assert_int_equal(dk_library_close(lib), DK_ERR_BAD_HANDLE);
    assert_int_equal(dk_library_def(lib, "op(Tensor x) -> Tensor"), DK_ERR_BAD_HANDLE);
    assert_int_equal(dk_library_impl(lib, "op", DK_CPU, dk_fallthrough()), DK_ERR_BAD_HANDLE);
    assert_int_equal(dk_library_fallback(lib, dk_fallthrough()), DK_ERR_BAD_HANDLE);
    assert_null(dk_op_lookup(r, "m::op"));
    /* a NULL configuration signature is refused, not skipped */
    assert_int_equal(dk__def(r, "m::op(Tensor x) -> Tensor", NULL, __FILE__, __LINE__, &h, NULL), DK_ERR_NULL);
    assert_int_equal(dk__impl(r, "m::op", DK_CPU, dk_fallthrough(), __FILE__, __LINE__, &h, NULL), DK_ERR_NULL);
    assert_null(h);
    assert_null(dk_op_lookup(r, "m::op"));
    dk_registry_destroy(r);
}

/* ---- one convention for every function that writes text, at every size ------------------------ */

typedef int (*text_fn)(const void *subject, char *buf, size_t size);
static const dk_operator *text_op;
static dk_explanation text_expl;
static int ks_text(const void *x, char *b, size_t n) { (void)x; return dk_ks_to_string(dk_ks_raw(~(uint64_t)0), b, n); }
static int state_text(const void *x, char *b, size_t n) { (void)x; return dk_op_state_to_string(text_op, b, n); }
static int table_text(const void *x, char *b, size_t n) { (void)x; return dk_op_computed_table_to_string(text_op, b, n); }
static int explain_text(const void *x, char *b, size_t n) { (void)x; return dk_explain_to_string(text_op, &text_expl, b, n); }
static int schema_text(const void *x, char *b, size_t n) { (void)x; return dk_schema_to_string(dk_op_function_schema(text_op), b, n); }

static void check_convention(const char *what, text_fn f) {
    int full = f(NULL, NULL, 0), size;
    char *whole = (char *)malloc((size_t)full + 1), *buf = (char *)malloc((size_t)full + 8);
    assert_true(full > 0);
    assert_int_equal(f(NULL, whole, (size_t)full + 1), full);
    assert_int_equal((int)strlen(whole), full);
    assert_int_equal(f(NULL, NULL, 100), full);      /* NULL with a size: nothing written */
    for (size = 0; size <= full + 2; size++) {
        memset(buf, 'X', (size_t)full + 8);
        if (f(NULL, buf, (size_t)size) != full) fail_msg("%s: size %d: wrong length", what, size);
        if (size == 0) { assert_true(buf[0] == 'X'); continue; }
        {
            int k = size - 1 < full ? size - 1 : full;
            if (memcmp(buf, whole, (size_t)k) != 0 || buf[k] != '\0' || buf[k + 1] != 'X')
                fail_msg("%s: size %d: not the cut text", what, size);
        }
    }
    free(whole);
    free(buf);
}

static void test_text_convention(void **state) {
    (void)state;
    text_op = dk_op_lookup(reg, "sample::many");
    assert_int_equal(dk_explain(text_op, dk_ks_raw(~(uint64_t)0), &text_expl), DK_OK);
    check_convention("dk_ks_to_string", ks_text);
    check_convention("dk_op_state_to_string", state_text);
    check_convention("dk_op_computed_table_to_string", table_text);
    check_convention("dk_explain_to_string", explain_text);  /* keysets longer than 1 KB, whole */
    check_convention("dk_schema_to_string", schema_text);
    assert_true(explain_text(NULL, NULL, 0) > 1024);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trailing_defaults_filled),
        cmocka_unit_test(test_bad_stacks_refused),
        cmocka_unit_test(test_all_arguments_given),
        cmocka_unit_test(test_tensor_only_schema),
        cmocka_unit_test(test_kinds_and_list_defaults),
        cmocka_unit_test(test_default_kinds_agree),
        cmocka_unit_test(test_complex_values),
        cmocka_unit_test(test_long_message_marked),
        cmocka_unit_test(test_helpers),
        cmocka_unit_test(test_kernel_fails_call),
        cmocka_unit_test(test_parsed_schema_view),
        cmocka_unit_test(test_library_misuse),
        cmocka_unit_test(test_text_convention),
    };
    return cmocka_run_group_tests_name("boxed calls, failing kernels, schema view, text", tests, setup, teardown);
}
