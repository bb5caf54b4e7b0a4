/* make: variants=epochs args=dispatch.h */
/* The C ABI for foreign callers (dk_abi_*): each function gives what the
   inline or macro version gives, bad input gets a status and changes
   nothing, guards act on the calling thread only. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_keyset_algebra_matches_inline(void **state) {
    int k, j;
    (void)state;
    assert_int_equal(dk_abi_num_backends(), DK_NUM_BACKENDS);
    assert_int_equal(dk_abi_num_keys(), DK_NUM_KEYS);
    assert_int_equal(dk_abi_num_functionality_keys(), DK_NUM_FUNCTIONALITY_KEYS);
    assert_int_equal(dk_abi_num_slots(), DK_NUM_SLOTS);
    assert_true(dk_abi_ks_full() == DK_KS_FULL.repr);
    for (k = 0; k < DK_NUM_KEYS; k++) {
        dk_keyset ks = dk_ks_from_key((dk_key)k);
        assert_true(dk_abi_ks_from_key(k) == ks.repr);
        assert_true(dk_abi_ks_full_after(k) == dk_ks_full_after((dk_key)k).repr);
        assert_true(dk_abi_alias_runtime_set(k) == dk_alias_runtime_set((dk_key)k).repr);
        assert_int_equal(dk_abi_ks_highest_key(ks.repr), dk_ks_highest_key(ks));
        assert_int_equal(dk_abi_ks_slot(ks.repr), dk_ks_slot(ks));
        for (j = 0; j < DK_NUM_KEYS; j += 7) {
            dk_keyset b = dk_ks_from_key((dk_key)j);
            assert_true(dk_abi_ks_or(ks.repr, b.repr) == dk_ks_or(ks, b).repr);
            assert_true(dk_abi_ks_and(ks.repr, b.repr) == dk_ks_and(ks, b).repr);
            assert_true(dk_abi_ks_minus(ks.repr, b.repr) == dk_ks_minus(ks, b).repr);
            assert_true(dk_abi_ks_add(ks.repr, j) == dk_ks_add(ks, (dk_key)j).repr);
            assert_true(dk_abi_ks_remove(ks.repr, j) == dk_ks_remove(ks, (dk_key)j).repr);
            assert_int_equal(dk_abi_ks_has(ks.repr, j), dk_ks_has(ks, (dk_key)j));
        }
    }
    for (k = 0; k <= DK_NUM_BACKENDS; k++)
        assert_true(dk_abi_ks_from_backend(k) == dk_ks_from_backend((dk_backend)k).repr);
    assert_int_equal(dk_abi_key_runtime(DK_AutogradFunctionality, DK_CUDABit), DK_AutogradCUDA);
    assert_int_equal(dk_abi_key_runtime(DK_Tracer, DK_CUDABit), DK_Tracer);
    /* out of range: empty sets and Undefined, never a table read out of bounds */
    assert_true(dk_abi_ks_from_key(-1) == 0 && dk_abi_ks_from_key(DK_NUM_KEYS) == 0);
    assert_true(dk_abi_ks_from_backend(DK_NUM_BACKENDS + 1) == 0);
    assert_int_equal(dk_abi_ks_has(~(uint64_t)0, 100000), 0);
    assert_int_equal(dk_abi_key_runtime(DK_Dense, DK_InvalidBit), DK_Undefined);
    assert_int_equal(dk_abi_key_runtime(100000, 1), DK_Undefined);
    {   /* iteration and printing */
        uint64_t ks = dk_abi_ks_or(dk_abi_ks_from_key(DK_CPU), dk_abi_ks_from_key(DK_AutogradCPU));
        char buf[128];
        assert_int_equal(dk_abi_ks_first(ks), DK_CPU);
        assert_int_equal(dk_abi_ks_next(ks, DK_CPU), DK_AutogradCPU);
        assert_int_equal(dk_abi_ks_next(ks, DK_AutogradCPU), DK_Undefined);
        assert_true(dk_abi_ks_to_string(ks, buf, sizeof buf) > 0);
        assert_string_equal(buf, "DispatchKeySet(CPU, AutogradCPU)");
    }
}

static void test_stack(void **state) {
    dk_stack *s = dk_abi_stack_create(3);
    int64_t i;
    double d;
    void *t;
    (void)state;
    assert_non_null(s);
    assert_int_equal(dk_abi_stack_push_int(s, 7), 1);
    assert_int_equal(dk_abi_stack_push_double(s, 2.5), 1);
    assert_int_equal(dk_abi_stack_push_tensor(s, &i), 1);
    assert_int_equal(dk_abi_stack_push_none(s), 0); /* full: nothing pushed */
    assert_int_equal(dk_abi_stack_size(s), 3);
    assert_int_equal(dk_abi_stack_peek_tag(s, 0), DK_VALUE_TENSOR);
    assert_int_equal(dk_abi_stack_peek_tag(s, 2), DK_VALUE_INT);
    assert_int_equal(dk_abi_stack_peek_tag(s, 3), -1);
    /* the wrong tag: a status, a message, the stack as it was */
    assert_int_equal(dk_abi_stack_pop_int(s, &i), DK_ERR_BAD_STACK);
    assert_non_null(strstr(dk_last_error(), "the top of the stack is a tensor, not a int"));
    assert_int_equal(dk_abi_stack_size(s), 3);
    assert_int_equal(dk_abi_stack_pop_tensor(s, &t), DK_OK);
    assert_ptr_equal(t, &i);
    assert_int_equal(dk_abi_stack_pop_double(s, &d), DK_OK);
    assert_true(d == 2.5);
    assert_int_equal(dk_abi_stack_pop_int(s, &i), DK_OK);
    assert_int_equal(i, 7);
    assert_int_equal(dk_abi_stack_pop_none(s), DK_ERR_BAD_STACK);
    assert_non_null(strstr(dk_last_error(), "empty"));
    assert_int_equal(dk_abi_stack_pop_int(NULL, &i), DK_ERR_NULL);
    assert_int_equal(dk_abi_stack_pop_int(s, NULL), DK_ERR_NULL);
    dk_abi_stack_destroy(s);
}

static void *other_thread(void *arg) {
    *(uint64_t *)arg = dk_abi_tls_included();
    return NULL;
}

static void test_guards(void **state) {
    dk_guard g, h;
    uint64_t seen = 0;
    pthread_t th;
    (void)state;
    assert_true(dk_tls_is_default());
    dk_abi_guard_include(dk_abi_ks_from_key(DK_Tracer), &g);
    assert_true(dk_tls_is_included(DK_Tracer));
    assert_true(dk_abi_tls_included() == dk_tls_included().repr);
    assert_int_equal(pthread_create(&th, NULL, other_thread, &seen), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(seen == DK_KS_DEFAULT_INCLUDED.repr); /* another thread's state is its own */
    dk_abi_guard_below_autograd(&h);
    assert_true(dk_tls_is_excluded(DK_AutogradFunctionality));
    dk_abi_guard_pop(&h);
    dk_abi_guard_below_inplace_view(&h);
    assert_true(dk_tls_is_excluded(DK_ADInplaceOrView) && dk_tls_is_excluded(DK_AutogradFunctionality));
    dk_abi_guard_pop(&h);
    dk_abi_guard_skip_functionalize(&h);
    assert_true(dk_tls_is_excluded(DK_Functionalize));
    dk_abi_guard_pop(&h);
    assert_false(dk_abi_tls_is_default());
    dk_abi_guard_pop(&g);
    assert_true(dk_abi_tls_is_default());
    dk_abi_guard_force(0, DK_KS_FULL.repr, &g);
    assert_true(dk_abi_tls_included() == 0 && dk_abi_tls_excluded() == DK_KS_FULL.repr);
    dk_abi_guard_pop(&g);
    dk_abi_guard_exclude(dk_abi_ks_from_key(DK_CPU), &g);
    assert_true(dk_tls_is_excluded(DK_CPU));
    dk_abi_guard_pop(&g);
    assert_true(dk_tls_is_default());
}

typedef struct tensor { uint64_t ks; double v; } tensor;
static int twice_tag, hook_tag;
static void twice(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    void *t = NULL;
    (void)ks;
    assert_ptr_equal(dk_abi_kernel_user_data(k), &twice_tag);
    assert_string_equal(dk_abi_op_name(op), "t::twice");
    assert_int_equal(dk_abi_stack_pop_tensor(s, &t), DK_OK);
    dk_abi_stack_push_double(s, 2 * ((tensor *)t)->v);
}
static uint64_t keyset_of(const void *t, void *user_data) {
    assert_ptr_equal(user_data, &hook_tag);
    return ((const tensor *)t)->ks;
}

static void test_registration(void **state) {
    dk_registry *r, *r2;
    dk_registration *h;
    char kernel[256], dump[2048];
    dk_stack *s = dk_abi_stack_create(2);
    tensor x;
    double d;
    int i;
    (void)state;
    assert_true(dk_abi_kernel_desc_size() == sizeof(dk_kernel_desc) && sizeof kernel >= sizeof(dk_kernel_desc));
    for (i = 0; i < 2; i++) {   /* handles' keysets: their first 8 bytes, or a hook */
        assert_int_equal(i ? dk_abi_registry_create(keyset_of, &hook_tag, &r)
                           : dk_abi_registry_create(NULL, NULL, &r), DK_OK);
        assert_int_equal(dk_abi_def(r, "t::twice(Tensor x) -> float", &h), DK_OK);
        dk_abi_boxed(kernel, twice, &twice_tag);
        assert_int_equal(dk_abi_impl(r, "t::twice", DK_CPU, kernel, &h), DK_OK);
        /* bad input: a status, a message, the registry as it was */
        dk_op_state_to_string(dk_op_lookup(r, "t::twice"), dump, sizeof dump);
        assert_int_equal(dk_abi_impl(r, "t::twice", -3, kernel, &h), DK_ERR_BAD_KEY);
        assert_int_equal(dk_abi_impl(r, "t::twice", DK_CUDA, NULL, &h), DK_ERR_NULL);
        assert_int_equal(dk_abi_fallback(r, DK_Tracer, NULL, &h), DK_ERR_NULL);
        {
            char after[2048];
            dk_op_state_to_string(dk_op_lookup(r, "t::twice"), after, sizeof after);
            assert_string_equal(dump, after);
        }
        dk_abi_fallthrough(kernel);
        assert_int_equal(dk_abi_fallback(r, DK_Tracer, kernel, &h), DK_OK);
        x.ks = dk_abi_ks_or(dk_abi_ks_from_key(DK_CPU), dk_abi_ks_from_key(DK_Tracer));
        x.v = 1.25;
        dk_abi_stack_push_tensor(s, &x);
        assert_int_equal(dk_abi_call_boxed(dk_op_lookup(r, "t::twice"), s), DK_OK);   /* Tracer falls through */
        assert_int_equal(dk_abi_stack_pop_double(s, &d), DK_OK);
        assert_true(d == 2.5);
        dk_abi_stack_push_tensor(s, &x);   /* below Tracer, given as a uint64_t */
        assert_int_equal(dk_abi_redispatch_boxed(dk_op_lookup(r, "t::twice"), dk_abi_ks_from_key(DK_CPU), s), DK_OK);
        assert_int_equal(dk_abi_stack_pop_double(s, &d), DK_OK);
        assert_true(d == 2.5);
        x.ks = dk_abi_ks_from_key(DK_CUDA);   /* no kernel: the status, the arguments consumed */
        dk_abi_stack_push_tensor(s, &x);
        assert_int_equal(dk_abi_call_boxed(dk_op_lookup(r, "t::twice"), s), DK_ERR_NO_KERNEL);
        assert_int_equal(dk_abi_stack_size(s), 0);
        assert_int_equal(dk_abi_call_boxed(NULL, s), DK_ERR_NULL);
        {   /* the empty CUDA slot's record: a user_data of the library's own, never handed out */
            const dk_kernel *missing;
            dk_call_enter();
            missing = dk_op_slot_kernel(dk_op_lookup(r, "t::twice"), dk_key_slot(DK_CUDA));
            assert_int_equal(missing->kind, DK_KERNEL_MISSING);
            assert_non_null(missing->user_data);
            assert_null(dk_abi_kernel_user_data(missing));
            dk_call_exit();
        }
        dk_abi_registry_destroy(r);
    }
    /* a registry from dk_registry_create destroyed by dk_abi_registry_destroy */
    assert_int_equal(dk_registry_create(NULL, &r2), DK_OK);
    dk_abi_registry_destroy(r2);
    assert_int_equal(dk_abi_registry_create(NULL, NULL, NULL), DK_ERR_NULL);
    dk_abi_stack_destroy(s);
}

/* ---- no lost error: a failure below a fallback reaches the outer call ---- */
static int cpu_mode;            /* 0: fails its call, 1: one result, 2: none, 3: two */
static dk_status below_status;  /* what the fallback's redispatch returned */
static int fallback_recovers;
static void cpu_kernel(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    void *t;
    assert_int_equal(dk_abi_stack_pop_tensor(s, &t), DK_OK);
    if (cpu_mode == 0) { dk_abi_call_fail(op, k, ks.repr, DK_ERR_KERNEL_FAILED, "cpu kernel: 100% failed"); return; }
    if (cpu_mode >= 1 && cpu_mode != 2) dk_abi_stack_push_double(s, 1.0);
    if (cpu_mode == 3) dk_abi_stack_push_double(s, 2.0);
}
/* a foreign fallback at Tracer: redispatches below itself and, as a binding
   that forgets to check, ignores what the redispatch returned */
static void abi_tracer(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k;
    below_status = dk_abi_redispatch_boxed(op, dk_abi_ks_and(ks.repr, dk_abi_ks_full_after(DK_Tracer)), s);
    if (fallback_recovers && below_status != DK_OK) {
        assert_int_equal(dk_last_call_status(), below_status);   /* it takes the failure: recovered */
        dk_abi_stack_push_double(s, -1.0);
    }
}
/* the same in C, through dk_redispatch_boxed */
static void c_tracer(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k;
    dk_redispatch_boxed(op, dk_ks_and(ks, DK_KS_FULL_AFTER(DK_Tracer)), s);
}

static void test_no_lost_error(void **state) {
    dk_registry *r;
    dk_registration *h, *fb;
    char kernel[256];
    dk_stack *s = dk_abi_stack_create(4);
    const dk_operator *op;
    tensor x;
    dk_guard g;
    double d;
    int c;
    (void)state;
    assert_int_equal(dk_abi_registry_create(NULL, NULL, &r), DK_OK);
    assert_int_equal(dk_abi_def(r, "t::f(Tensor x) -> float", &h), DK_OK);
    dk_abi_boxed(kernel, cpu_kernel, NULL);
    assert_int_equal(dk_abi_impl(r, "t::f", DK_CPU, kernel, &h), DK_OK);
    op = dk_op_lookup(r, "t::f");
    x.ks = dk_abi_ks_from_key(DK_CPU);
    x.v = 0;
    dk_abi_guard_include(dk_abi_ks_from_key(DK_Tracer), &g);
    for (c = 0; c < 2; c++) {   /* a foreign fallback, then a C one */
        dk_abi_boxed(kernel, c ? c_tracer : abi_tracer, NULL);
        assert_int_equal(dk_abi_fallback(r, DK_Tracer, kernel, &fb), DK_OK);
        cpu_mode = 0;
        below_status = DK_OK;
        dk_abi_stack_push_tensor(s, &x);
        assert_int_equal(dk_abi_call_boxed(op, s), DK_ERR_KERNEL_FAILED);
        assert_string_equal(dk_last_error(), "cpu kernel: 100% failed");   /* no format: % as it is */
        assert_int_equal(dk_abi_stack_size(s), 0);
        assert_int_equal(dk_last_call_status(), DK_OK);   /* the outer call consumed it */
        if (!c) assert_int_equal(below_status, DK_ERR_KERNEL_FAILED);
        cpu_mode = 1;   /* the same path succeeding: DK_OK, nothing left over */
        dk_abi_stack_push_tensor(s, &x);
        assert_int_equal(dk_abi_call_boxed(op, s), DK_OK);
        assert_int_equal(dk_abi_stack_pop_double(s, &d), DK_OK);
        assert_true(d == 1.0);
        assert_int_equal(dk_deregister(fb), DK_OK);
    }
    /* a fallback that takes the failure and pushes a result recovers */
    dk_abi_boxed(kernel, abi_tracer, NULL);
    assert_int_equal(dk_abi_fallback(r, DK_Tracer, kernel, &fb), DK_OK);
    cpu_mode = 0;
    fallback_recovers = 1;
    dk_abi_stack_push_tensor(s, &x);
    assert_int_equal(dk_abi_call_boxed(op, s), DK_OK);
    assert_int_equal(dk_abi_stack_pop_double(s, &d), DK_OK);
    assert_true(d == -1.0);
    fallback_recovers = 0;
    /* a boxed kernel that leaves the wrong number of results fails the call
       (below the fallback too), naming the operator and the counts */
    for (cpu_mode = 2; cpu_mode <= 3; cpu_mode++) {
        char want[128];
        dk_abi_stack_push_tensor(s, &x);
        assert_int_equal(dk_abi_call_boxed(op, s), DK_ERR_KERNEL_FAILED);
        snprintf(want, sizeof want, "t::f: the boxed kernel at CPU (registered at <foreign caller>:0) left %d values "
                 "on the stack where the schema has 1 returns", cpu_mode == 2 ? 0 : 2);
        assert_non_null(strstr(dk_last_error(), want));
        assert_int_equal(dk_abi_stack_size(s), 0);   /* a failed call consumed its arguments */
    }
    dk_abi_guard_pop(&g);
    cpu_mode = 2;   /* and without the fallback: the same */
    dk_abi_stack_push_tensor(s, &x);
    assert_int_equal(dk_abi_call_boxed(op, s), DK_ERR_KERNEL_FAILED);
    assert_non_null(strstr(dk_last_error(), "left 0 values on the stack where the schema has 1 returns"));
    dk_abi_registry_destroy(r);
    dk_abi_stack_destroy(s);
}

/* ---- footguns: below an alias key, a kernel without a def ----------------- */
static int autograd_depth;
static void autograd_fallback(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k;
    assert_true(++autograd_depth == 1);   /* it never reaches itself */
    dk_abi_redispatch_boxed(op, dk_abi_ks_and(ks.repr, dk_abi_ks_full_after(DK_Autograd)), s);
    autograd_depth--;
}

static void test_footguns(void **state) {
    dk_registry *r;
    dk_registration *h;
    char kernel[256];
    dk_stack *s = dk_abi_stack_create(2);
    tensor x;
    double d;
    int a;
    (void)state;
    /* full_after of an alias key: below every key it stands for */
    assert_true(dk_abi_ks_full_after(DK_Autograd) == DK_KS_AFTER_AUTOGRAD.repr);
    for (a = DK_StartOfAliasKeys; a <= DK_EndOfAliasKeys; a++) {
        uint64_t below = dk_abi_ks_full_after(a), set = dk_abi_alias_runtime_set(a);
        int k;
        for (k = dk_abi_ks_first(set); k != DK_Undefined; k = dk_abi_ks_next(set, k)) assert_false(dk_abi_ks_has(below, k));
    }
    assert_int_equal(dk_abi_registry_create(NULL, NULL, &r), DK_OK);
    assert_int_equal(dk_abi_def(r, "t::f(Tensor x) -> float", &h), DK_OK);
    dk_abi_boxed(kernel, cpu_kernel, NULL);
    assert_int_equal(dk_abi_impl(r, "t::f", DK_CPU, kernel, &h), DK_OK);
    dk_abi_boxed(kernel, autograd_fallback, NULL);
    assert_int_equal(dk_abi_fallback(r, DK_Autograd, kernel, &h), DK_OK);
    x.ks = dk_abi_ks_or(dk_abi_ks_from_key(DK_CPU), dk_abi_ks_from_key(DK_AutogradCPU));
    x.v = 0;
    cpu_mode = 1;
    dk_abi_stack_push_tensor(s, &x);
    assert_int_equal(dk_abi_call_boxed(dk_op_lookup(r, "t::f"), s), DK_OK);
    assert_int_equal(dk_abi_stack_pop_double(s, &d), DK_OK);
    assert_true(d == 1.0);
    /* kernels under a name without a def (a typo): the message names the missing def */
    dk_abi_boxed(kernel, cpu_kernel, NULL);
    assert_int_equal(dk_abi_impl(r, "t::g", DK_CPU, kernel, &h), DK_OK);
    x.ks = dk_abi_ks_from_key(DK_CPU);
    dk_abi_stack_push_tensor(s, &x);
    assert_int_equal(dk_abi_call_boxed(dk_op_lookup(r, "t::g"), s), DK_ERR_NO_KERNEL);
    assert_non_null(strstr(dk_last_error(), "the operator has kernels but no def"));
    assert_null(strstr(dk_last_error(), "no tensor argument carried"));
    dk_abi_registry_destroy(r);
    dk_abi_stack_destroy(s);
}

/* ---- a destroyed registry is recognised; a destroy inside a call refused ---- */
static dk_registry *destroy_target;
static dk_status destroy_seen;
static void destroying_kernel(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    void *t;
    (void)k; (void)op; (void)ks;
    destroy_seen = dk_abi_registry_destroy(destroy_target);   /* a finalizer run inside a kernel */
    dk_abi_stack_pop_tensor(s, &t);
    dk_abi_stack_push_double(s, 3.0);
}

static void test_destroyed_registry(void **state) {
    dk_registry *r, *r2;
    dk_registration *h;
    const dk_operator *op;
    char kernel[256];
    dk_stack *s = dk_abi_stack_create(2);
    tensor x;
    double d;
    (void)state;
    dk_abi_boxed(kernel, destroying_kernel, NULL);
    assert_int_equal(dk_abi_registry_create(NULL, NULL, &r), DK_OK);
    assert_int_equal(dk_abi_def(r, "t::f(Tensor x) -> float", &h), DK_OK);
    assert_int_equal(dk_abi_registry_destroy(r), DK_OK);
    /* every use the ABI can check: a clear status, never a read of the dead registry (ASan) */
    assert_int_equal(dk_abi_registry_destroy(r), DK_ERR_DESTROYED);
    assert_non_null(strstr(dk_last_error(), "dk_abi_registry_destroy: the registry was destroyed"));
    assert_int_equal(dk_abi_def(r, "t::g(Tensor x) -> float", &h), DK_ERR_DESTROYED);
    assert_int_equal(dk_abi_impl(r, "t::f", DK_CPU, kernel, &h), DK_ERR_DESTROYED);
    assert_int_equal(dk_abi_fallback(r, DK_Tracer, kernel, &h), DK_ERR_DESTROYED);
    assert_int_equal(dk_abi_op_lookup(r, "t::f", &op), DK_ERR_DESTROYED);
    assert_null(op);
    /* a registry made after it does not take its address: the old handle
       stays dead (with an allocator that shrinks a block in place, as
       glibc's, or one that keeps freed addresses out of use, as ASan's:
       Note [Destroyed registries]; ThreadSanitizer's does neither) */
    assert_int_equal(dk_abi_registry_create(NULL, NULL, &r2), DK_OK);
    if (r2 != r) assert_int_equal(dk_abi_def(r, "t::f(Tensor x) -> float", &h), DK_ERR_DESTROYED);
#if !defined(__SANITIZE_THREAD__)
    assert_ptr_not_equal(r2, r);
#endif
    assert_int_equal(dk_abi_registry_destroy(NULL), DK_ERR_NULL);
    /* a destroy from inside a call is refused; the call and the registry go on */
    assert_int_equal(dk_abi_def(r2, "t::f(Tensor x) -> float", &h), DK_OK);
    assert_int_equal(dk_abi_impl(r2, "t::f", DK_CPU, kernel, &h), DK_OK);
    assert_int_equal(dk_abi_op_lookup(r2, "t::f", &op), DK_OK);
    assert_int_equal(dk_abi_op_lookup(r2, "t::nope", &op), DK_ERR_NOT_FOUND);
    assert_int_equal(dk_abi_op_lookup(r2, "t::f", &op), DK_OK);
    destroy_target = r2;
    x.ks = dk_abi_ks_from_key(DK_CPU);
    dk_abi_stack_push_tensor(s, &x);
    assert_int_equal(dk_abi_call_boxed(op, s), DK_OK);
    assert_int_equal(destroy_seen, DK_ERR_IN_CALL);
    assert_int_equal(dk_abi_stack_pop_double(s, &d), DK_OK);
    assert_true(d == 3.0);
    assert_ptr_equal(dk_op_lookup(r2, "t::f"), op);
    assert_int_equal(dk_abi_registry_destroy(r2), DK_OK);
    dk_abi_stack_destroy(s);
}

/* ---- what a binding needs: schemas, names, sizes, lists, sites, a logger ---- */
static int overrides;
static char override_message[1024];
static void count_log(dk_log_level level, dk_log_item item, const char *message, void *user_data) {
    assert_ptr_equal(user_data, &overrides);
    assert_int_equal(level, DK_LOG_WARNING);
    if (item == DK_LOG_KERNEL_OVERRIDDEN) overrides++;
    snprintf(override_message, sizeof override_message, "%s", message);
}
static void sum_kernel(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    const int64_t *dims = NULL;
    const dk_value *ts = NULL;
    size_t n = 0, nt = 0, i;
    double sum = 0;
    int keep = 0;
    double alpha = 0;
    (void)k; (void)op; (void)ks;
    assert_int_equal(dk_abi_stack_pop_bool(s, &keep), DK_OK);
    assert_int_equal(dk_abi_stack_pop_double(s, &alpha), DK_OK);
    assert_int_equal(dk_abi_stack_pop_ints(s, &dims, &n), DK_OK);
    assert_int_equal(dk_abi_stack_pop_list(s, &ts, &nt), DK_OK);
    for (i = 0; i < nt; i++)
        if (dk_abi_value_tag(ts, i) == DK_VALUE_TENSOR) sum += ((tensor *)dk_abi_value_tensor(ts, i))->v;
    for (i = 0; i < n; i++) sum += (double)dims[i];
    dk_abi_stack_push_double(s, sum + alpha + keep);
    dk_abi_stack_push_tensor(s, dk_abi_value_tensor(ts, 0));
}
static const char *header_path = "dispatch.h";

static void test_binding_surface(void **state) {
    dk_registry *r;
    dk_registration *h;
    const dk_operator *op;
    char kernel[256], buf[512], small[4];
    dk_stack *s = dk_abi_stack_create(4);
    tensor a, b;
    int64_t dims[2] = { 10, 20 };
    const int64_t *got;
    const double *gotd;
    double ds[3] = { 0.5, 1.5, 2.5 }, d;
    size_t n;
    void *values, *values_out;
    uint64_t ks;
    int i, found;
    FILE *f;
    (void)state;
    /* a logger of the caller's, sites and kernel names of the caller's */
    assert_int_equal(dk_abi_registry_create_with(NULL, NULL, count_log, &overrides, &r), DK_OK);
    assert_int_equal(dk_abi_def_at(r, "t::sum(Tensor?[] xs, int[1] dims, float alpha=1.5, *, bool keep=False) -> "
                                      "(float total, Tensor)", "ops.py", 3, &h), DK_OK);
    dk_abi_boxed(kernel, sum_kernel, NULL);
    dk_abi_kernel_named(kernel, "sum_cpu");
    assert_int_equal(dk_abi_impl_at(r, "t::sum", DK_CPU, kernel, "kernels.py", 12, &h), DK_OK);
    assert_int_equal(dk_abi_impl_at(r, "t::sum", DK_CPU, kernel, "kernels.py", 40, &h), DK_OK);
    assert_int_equal(overrides, 1);
    assert_non_null(strstr(override_message, "kernels.py:12 (sum_cpu)"));
    assert_non_null(strstr(override_message, "kernels.py:40 (sum_cpu)"));
    assert_int_equal(dk_abi_op_lookup(r, "t::sum", &op), DK_OK);
    /* the schema, copied out */
    assert_true(dk_abi_op_schema(op, buf, sizeof buf) > 0);
    assert_string_equal(buf, "t::sum(Tensor?[] xs, int[1] dims, float alpha=1.5, *, bool keep=False) -> (float total, Tensor)");
    assert_int_equal(dk_abi_op_num_arguments(op), 4);
    assert_int_equal(dk_abi_op_num_returns(op), 2);
    assert_int_equal(dk_abi_op_argument_name(op, 1, buf, sizeof buf), 4);
    assert_string_equal(buf, "dims");
    assert_int_equal(dk_abi_op_argument_type(op, 1, buf, sizeof buf), 6);
    assert_string_equal(buf, "int[1]");
    assert_int_equal(dk_abi_op_argument_default(op, 2, buf, sizeof buf), 3);
    assert_string_equal(buf, "1.5");
    assert_int_equal(dk_abi_op_argument_default(op, 0, buf, sizeof buf), -1);
    assert_string_equal(buf, "");
    assert_int_equal(dk_abi_op_argument_kwarg_only(op, 3), 1);
    assert_int_equal(dk_abi_op_argument_kwarg_only(op, 2), 0);
    assert_int_equal(dk_abi_op_argument_kwarg_only(op, 4), -1);
    assert_int_equal(dk_abi_op_return_name(op, 0, buf, sizeof buf), 5);
    assert_string_equal(buf, "total");
    assert_int_equal(dk_abi_op_return_name(op, 1, buf, sizeof buf), 0);
    assert_int_equal(dk_abi_op_return_type(op, 1, buf, sizeof buf), 6);
    assert_string_equal(buf, "Tensor");
    assert_int_equal(dk_abi_op_return_type(op, 2, buf, sizeof buf), -1);
    assert_int_equal(dk_abi_op_argument_name(op, 0, small, sizeof small), 2);   /* snprintf-like */
    assert_int_equal(dk_abi_op_argument_type(op, 0, small, sizeof small), 9);
    assert_string_equal(small, "Ten");
    /* lists in and out: Tensor[] as values, int[] as the caller's array */
    values = malloc(3 * dk_abi_value_size());
    a.ks = b.ks = dk_abi_ks_from_key(DK_CPU);
    a.v = 1;
    b.v = 2;
    dk_abi_value_set_tensor((dk_value *)values, 0, &a);
    dk_abi_value_set_none((dk_value *)values, 1);
    dk_abi_value_set_tensor((dk_value *)values, 2, &b);
    assert_int_equal(dk_abi_stack_push_list(s, (const dk_value *)values, 3), 1);
    assert_int_equal(dk_abi_stack_push_ints(s, dims, 2), 1);
    /* the dispatch key comes from the tensors in the list; the two defaults are pushed */
    assert_int_equal(dk_stack_push_default(op, s), DK_OK);
    assert_int_equal(dk_stack_push_default(op, s), DK_OK);
    assert_int_equal(dk_abi_call_boxed(op, s), DK_OK);
    assert_int_equal(dk_abi_stack_pop_tensor(s, &values_out), DK_OK);
    assert_ptr_equal(values_out, &a);
    assert_int_equal(dk_abi_stack_pop_double(s, &d), DK_OK);
    assert_true(d == 1 + 2 + 10 + 20 + 1.5);
    free(values);
    assert_int_equal(dk_abi_stack_push_doubles(s, ds, 3), 1);
    assert_int_equal(dk_abi_stack_pop_ints(s, &got, &n), DK_ERR_BAD_STACK);
    assert_non_null(strstr(dk_last_error(), "the top of the stack is a float list, not a int list"));
    assert_int_equal(dk_abi_stack_pop_doubles(s, &gotd, &n), DK_OK);
    assert_true(gotd == ds && n == 3);
    assert_int_equal(dk_abi_stack_push_ints(s, NULL, 0), 1);   /* an empty list */
    assert_int_equal(dk_abi_stack_pop_ints(s, &got, &n), DK_OK);
    assert_true(n == 0);
    assert_int_equal(dk_abi_stack_push_ints(s, NULL, 2), 0);   /* no array: nothing pushed */
    assert_int_equal(dk_abi_stack_pop_list(s, NULL, &n), DK_ERR_NULL);
    /* statuses, value tags, named keysets: names and numbers from the lists */
    assert_int_equal(dk_abi_num_statuses(), DK__STATUS_END);
    assert_string_equal(dk_abi_status_name(DK_OK), "DK_OK");
    assert_string_equal(dk_abi_status_name(DK_ERR_NO_KERNEL), "DK_ERR_NO_KERNEL");
    assert_string_equal(dk_abi_status_name(DK_ERR_DESTROYED), "DK_ERR_DESTROYED");
    assert_null(dk_abi_status_name(-1));
    assert_null(dk_abi_status_name(DK__STATUS_END));
    for (i = 0; i < dk_abi_num_value_tags(); i++) assert_memory_equal(dk_abi_value_tag_name(i), "DK_VALUE_", 9);
    assert_null(dk_abi_value_tag_name(dk_abi_num_value_tags()));
    assert_string_equal(dk_abi_value_tag_name(DK_VALUE_INT_LIST), "DK_VALUE_INT_LIST");
    assert_string_equal(dk_abi_value_tag_name(DK_VALUE_OBJECT), "DK_VALUE_OBJECT");
    assert_int_equal(dk_abi_ks_named("DK_KS_AFTER_AUTOGRAD", &ks), DK_OK);
    assert_true(ks == DK_KS_AFTER_AUTOGRAD.repr);
    assert_int_equal(dk_abi_ks_named("DK_KS_INPLACE_OR_VIEW", &ks), DK_OK);
    assert_true(ks == DK_KS_INPLACE_OR_VIEW.repr);
    assert_int_equal(dk_abi_ks_named("AFTER_AUTOGRAD", &ks), DK_ERR_NOT_FOUND);
    for (i = 0; i < dk_abi_num_named_keysets(); i++) assert_int_equal(dk_abi_ks_named(dk_abi_ks_named_name(i), &ks), DK_OK);
    assert_null(dk_abi_ks_named_name(dk_abi_num_named_keysets()));
    /* every named keyset the header defines is there (a new DK_KS_ macro must be added) */
    assert_non_null(f = fopen(header_path, "r"));
    found = 0;
    while (fgets(buf, sizeof buf, f)) {
        char name[128];
        if (sscanf(buf, "#define %127[A-Z_0-9]", name) != 1 || strncmp(name, "DK_KS_", 6) != 0) continue;
        if (buf[8 + strlen(name)] == '(') continue;   /* a function-like macro: DK_KS_FULL_AFTER(k) */
        if (dk_abi_ks_named(name, &ks) != DK_OK) fail_msg("%s is not in the ABI's named keysets", name);
        found++;
    }
    fclose(f);
    assert_int_equal(found, dk_abi_num_named_keysets());
    /* sizes, and an explanation read without its layout */
    assert_true(dk_abi_guard_size() == sizeof(dk_guard) && dk_abi_value_size() == sizeof(dk_value));
    assert_true(dk_abi_explanation_size() == sizeof(dk_explanation));
    assert_true(dk_abi_registry_stats_size() == sizeof(dk_registry_stats));
    {
        dk_explanation *e = (dk_explanation *)malloc(dk_abi_explanation_size()), c;
        assert_int_equal(dk_abi_explain(op, dk_abi_ks_from_key(DK_CPU), e), DK_OK);
        assert_int_equal(dk_explain(op, dk_ks_from_key(DK_CPU), &c), DK_OK);
        assert_int_equal(dk_abi_explanation_key(e), DK_CPU);
        assert_int_equal(dk_abi_explanation_slot(e), c.slot);
        assert_true(dk_abi_explanation_final(e) == c.final.repr);
        free(e);
    }
    dk_abi_registry_destroy(r);
    dk_abi_stack_destroy(s);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyset_algebra_matches_inline),
        cmocka_unit_test(test_stack),
        cmocka_unit_test(test_guards),
        cmocka_unit_test(test_registration),
        cmocka_unit_test(test_no_lost_error),
        cmocka_unit_test(test_footguns),
        cmocka_unit_test(test_destroyed_registry),
        cmocka_unit_test(test_binding_surface),
    };
    if (argc > 1) header_path = argv[1];
    return cmocka_run_group_tests_name("C ABI (dk_abi_*)", tests, NULL, NULL);
}
