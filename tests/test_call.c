/* make: variants=epochs,2_11 tsan=plain,epochs */
/* The call path: typed calls and redispatch, thread-local include/exclude
   and guards, fallthrough masks, boxed fallbacks reached from unboxed calls,
   missing-kernel errors with c10's messages, explain and trace. */
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
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

/* A toy tensor: its keyset and a value. */
typedef struct tensor { dk_keyset ks; int value; } tensor;

static tensor make_tensor(dk_backend b, int value) {
    tensor t;
    /* what c10's TensorImpl gives a dense tensor: backend key + its autograd keys */
    t.ks = dk_ks_or(dk_ks_from_key(dk_key_runtime(DK_Dense, b)), dk_backend_autograd_related_set(b));
    t.value = value;
    return t;
}

DK_DECLARE_OP(add, int, dk_ks_or(a.ks, b.ks), (tensor, a), (tensor, b))
DK_DECLARE_OP_VOID(touch, x->ks, (tensor *, x))

static const dk_operator *add_op;
static char trail[256]; /* which kernels ran, in order */

static int add_cpu(const dk_kernel *k, dk_keyset ks, tensor a, tensor b) {
    (void)ks;
    strcat(trail, (const char *)k->user_data);
    return a.value + b.value;
}
/* An autograd kernel: excludes autograd and redispatches below itself. */
static int add_autograd(const dk_kernel *k, dk_keyset ks, tensor a, tensor b) {
    strcat(trail, (const char *)k->user_data);
    return 10 * add_redispatch(add_op, dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD), a, b);
}
/* A boxed fallback: it sees the operator, the keyset and the argument pack. */
static void boxed_tracer(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    add_args *p = (add_args *)stack->unboxed_args; /* no boxing adapters: the typed argument pack */
    strcat(trail, (const char *)k->user_data);
    p->result = add_redispatch(op, dk_ks_remove(ks, DK_Tracer), p->a, p->b) + 1000;
}
static void touch_cpu(const dk_kernel *k, dk_keyset ks, tensor *x) {
    (void)k; (void)ks;
    x->value++;
}

static dk_registry *reg;
static dk_registration *h_cpu, *h_ag;

static int setup(void **state) {
    dk_registration *h;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &reg), DK_OK);
    assert_int_equal(dk_def(reg, "t::add(Tensor a, Tensor b) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "t::add", DK_CPU, dk_unboxed(DK_FN(add_cpu), (void *)"cpu "), &h_cpu), DK_OK);
    assert_int_equal(dk_impl(reg, "t::add", DK_Autograd, dk_unboxed(DK_FN(add_autograd), (void *)"ag "), &h_ag), DK_OK);
    /* a new registry already has c10's fallthroughs for BackendSelect and ADInplaceOrView */
    assert_int_equal(dk_fallback(reg, DK_BackendSelect, dk_fallthrough(), &h), DK_ERR_DUPLICATE_FALLBACK);
    add_op = dk_op_lookup(reg, "t::add");
    return 0;
}
static int teardown(void **state) {
    (void)state;
    dk_registry_destroy(reg);
    return 0;
}

static void test_two_hops(void **state) {
    tensor a = make_tensor(DK_CPUBit, 2), b = make_tensor(DK_CPUBit, 3);
    (void)state;
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, a, b), 50);
    assert_string_equal(trail, "ag cpu ");
    /* redispatch alone: no TLS, no extraction */
    trail[0] = '\0';
    assert_int_equal(add_redispatch(add_op, dk_ks_from_key(DK_CPU), a, b), 5);
    assert_string_equal(trail, "cpu ");
}

static void test_tls_defaults_and_guards(void **state) {
    tensor a = make_tensor(DK_CPUBit, 2), b = make_tensor(DK_CPUBit, 3);
    dk_guard g1, g2, g3;
    (void)state;
    assert_true(dk_ks_equal(dk_tls_included(), DK_KS_DEFAULT_INCLUDED));
    assert_true(dk_ks_equal(dk_tls_excluded(), DK_KS_DEFAULT_EXCLUDED));
    assert_true(dk_tls_is_default()); /* c10's XOR trick */
    g1 = dk_guard_below_autograd();
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, a, b), 5);
    assert_string_equal(trail, "cpu ");
    assert_true(dk_tls_is_excluded(DK_AutogradOther));
    /* nested: excluding what is already excluded changes nothing, so its pop removes nothing */
    g2 = dk_guard_exclude(dk_ks_or(DK_KS_AUTOGRAD, dk_ks_from_key(DK_Tracer)));
    assert_int_equal(g2.excluded_delta, dk_ks_from_key(DK_Tracer).repr);
    g3 = dk_guard_include(dk_ks_from_key(DK_Tracer));
    /* out of order: the outer guard first */
    dk_guard_pop(g1);
    assert_false(dk_tls_is_excluded(DK_AutogradOther));
    assert_true(dk_tls_is_excluded(DK_Tracer));
    dk_guard_pop(g3);
    dk_guard_pop(g2);
    assert_true(dk_tls_is_default());
    /* force: replaces everything, restores everything */
    g1 = dk_guard_force(DK_KS_EMPTY, DK_KS_FULL);
    assert_true(dk_ks_equal(dk_tls_excluded(), DK_KS_FULL));
    g2 = dk_guard_below_inplace_view(); /* changes nothing: all excluded already */
    dk_guard_pop(g2);
    dk_guard_pop(g1);
    assert_true(dk_tls_is_default());
    g1 = dk_guard_below_inplace_view();
    assert_true(dk_tls_is_excluded(DK_ADInplaceOrView));
    g2 = dk_guard_skip_functionalize();
    assert_true(dk_tls_is_excluded(DK_Functionalize));
    dk_guard_pop(g2);
    dk_guard_pop(g1);
    assert_true(dk_tls_is_default());
}

/* A key both included and excluded by the thread: c10 computes
   (args | included) - excluded, so the exclusion wins (the Tracer kernel
   does not run), whether the key comes from the included set or from the
   arguments. Expected trails and keysets are written out by hand. */
static int add_tracer(const dk_kernel *k, dk_keyset ks, tensor a, tensor b) {
    (void)k;
    strcat(trail, "tr ");
    return 100 + add_redispatch(add_op, dk_ks_remove(ks, DK_Tracer), a, b);
}
static void test_key_both_included_and_excluded(void **state) {
    tensor a = make_tensor(DK_CPUBit, 2), b = make_tensor(DK_CPUBit, 3), traced = a;
    dk_keyset inc = dk_tls_included(), exc = dk_tls_excluded(), tracer = dk_ks_from_key(DK_Tracer);
    dk_registration *h;
    dk_explanation e;
    (void)state;
    assert_int_equal(dk_impl(reg, "t::add", DK_Tracer, dk_unboxed(DK_FN(add_tracer), NULL), &h), DK_OK);
    traced.ks = dk_ks_or(a.ks, tracer);
    /* included only: the Tracer kernel runs first */
    dk_tls_set_included(dk_ks_or(inc, tracer));
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, a, b), 150);
    assert_string_equal(trail, "tr ag cpu ");
    /* included and excluded: excluded wins */
    dk_tls_set_excluded(dk_ks_or(exc, tracer));
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, a, b), 50);
    assert_string_equal(trail, "ag cpu ");
    assert_int_equal(dk_explain(add_op, a.ks, &e), DK_OK);
    assert_false(dk_ks_has(e.final, DK_Tracer));
    assert_int_equal(e.key, DK_AutogradCPU);
    /* the key in the arguments as well: still excluded */
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, traced, b), 50);
    assert_string_equal(trail, "ag cpu ");
    /* excluded only, the key in the arguments: excluded */
    dk_tls_set_included(inc);
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, traced, b), 50);
    assert_string_equal(trail, "ag cpu ");
    dk_tls_set_excluded(exc);
    assert_true(dk_tls_is_default());
    /* neither: the arguments' key runs */
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, traced, b), 150);
    assert_string_equal(trail, "tr ag cpu ");
    assert_int_equal(dk_deregister(h), DK_OK);
}

static void *thread_defaults(void *arg) {
    (void)arg;
    return (void *)(size_t)(dk_ks_equal(dk_tls_excluded(), DK_KS_DEFAULT_EXCLUDED) &&
                            dk_ks_equal(dk_tls_included(), DK_KS_DEFAULT_INCLUDED));
}

static void test_tls_is_per_thread(void **state) {
    pthread_t t;
    void *ok = NULL;
    dk_guard g = dk_guard_exclude(DK_KS_FULL);
    (void)state;
    assert_int_equal(pthread_create(&t, NULL, thread_defaults, NULL), 0);
    pthread_join(t, &ok);
    assert_true(ok != NULL);
    dk_guard_pop(g);
}

static void test_boxed_fallback_from_unboxed_call(void **state) {
    tensor a = make_tensor(DK_CPUBit, 2), b = make_tensor(DK_CPUBit, 3);
    dk_registration *fb;
    dk_guard g;
    (void)state;
    assert_int_equal(dk_fallback(reg, DK_Tracer, dk_boxed(boxed_tracer, (void *)"trace "), &fb), DK_OK);
    g = dk_guard_include(dk_ks_from_key(DK_Tracer));
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, a, b), 1050);
    assert_string_equal(trail, "trace ag cpu ");
    dk_guard_pop(g);
    assert_int_equal(dk_deregister(fb), DK_OK);
}

static void test_fallthrough_masks(void **state) {
    tensor a = make_tensor(DK_CUDABit, 2), b = make_tensor(DK_CUDABit, 3), m = make_tensor(DK_MetaBit, 1);
    dk_registration *ft, *cuda;
    (void)state;
    /* a fallthrough at AutogradCUDA skips the autograd layer for CUDA only */
    assert_int_equal(dk_impl(reg, "t::add", DK_CUDA, dk_unboxed(DK_FN(add_cpu), (void *)"cuda "), &cuda), DK_OK);
    assert_int_equal(dk_impl(reg, "t::add", DK_AutogradCUDA, dk_fallthrough(), &ft), DK_OK);
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, a, b), 5);
    assert_string_equal(trail, "cuda ");
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, make_tensor(DK_CPUBit, 1), make_tensor(DK_CPUBit, 1)), 20);
    assert_string_equal(trail, "ag cpu ");
    assert_int_equal(dk_deregister(ft), DK_OK);
    assert_int_equal(dk_deregister(cuda), DK_OK);
    /* Meta: the Autograd kernel runs, then no Meta kernel exists */
    trail[0] = '\0';
    assert_int_equal(add_call(add_op, m, m), 0);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    assert_int_equal(dk_last_call_status(), DK_OK); /* read once */
    assert_string_equal(trail, "ag ");
}

static void test_missing_kernel_messages(void **state) {
    tensor x = make_tensor(DK_XLABit, 1);
    const char *msg;
    dk_registry_desc c10_words;
    dk_guard g;
    (void)state;
    /* by default: what was asked, what is there, the likely cause */
    assert_int_equal(add_call(add_op, x, x), 0);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    msg = dk_last_error();
    assert_non_null(strstr(msg, "Could not run 't::add' for dispatch key XLA: it has no kernel there.\n"
                                "  argument keyset: DispatchKeySet(XLA, ADInplaceOrView, AutogradXLA)\n"
                                "  dispatch keyset: DispatchKeySet(XLA)\n"));
    assert_non_null(strstr(msg, "\n  kernels: CPU, Autograd\n"));
    assert_non_null(strstr(msg, "\n  likely cause: no kernel for this backend, and no CompositeImplicitAutograd"));
    assert_null(strstr(msg, "fburl"));
    /* c10's words, for those who compare them */
    memset(&c10_words, 0, sizeof c10_words);
    c10_words.c10_messages = 1;
    assert_int_equal(dk_registry_set_hooks(reg, &c10_words), DK_OK);
    assert_int_equal(add_call(add_op, x, x), 0);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    msg = dk_last_error();
    assert_non_null(strstr(msg, "Could not run 't::add' with arguments from the 'XLA' backend. This could be because "
                                "the operator doesn't exist for this backend, or was omitted during the "
                                "selective/custom build process (if using custom build). If you are a Facebook "
                                "employee using PyTorch on mobile, please visit https://fburl.com/ptmfixes for possible "
                                "resolutions. 't::add' is only available for these backends: [CPU, BackendSelect, "
                                "ADInplaceOrView, AutogradOther, AutogradCPU, AutogradCUDA"));
    assert_non_null(strstr(msg, "AutogradMeta, AutogradNestedTensor].\n\nCPU: registered at "));
    assert_non_null(strstr(msg, "ADInplaceOrView: fallthrough registered by dk_registry_create (default fallthrough) [backend fallback]"));
    /* no tensor arguments: everything masked or excluded */
    x.ks = DK_KS_EMPTY;
    g = dk_guard_force(DK_KS_EMPTY, DK_KS_EMPTY);
    assert_int_equal(add_call(add_op, x, x), 0);
    dk_guard_pop(g);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    assert_non_null(strstr(dk_last_error(), "There were no tensor arguments to this function (e.g., you passed an "
                                            "empty list of Tensors), but no fallback function is registered for "
                                            "schema t::add.  This usually means that this function requires a "
                                            "non-empty list of Tensors, or that you (the operator writer) forgot to "
                                            "register a fallback function.  Available functions are [CPU, "));
    c10_words.c10_messages = 0;
    assert_int_equal(dk_registry_set_hooks(reg, &c10_words), DK_OK);
    g = dk_guard_force(DK_KS_EMPTY, DK_KS_EMPTY);
    assert_int_equal(add_call(add_op, x, x), 0);
    dk_guard_pop(g);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    assert_non_null(strstr(dk_last_error(), "likely cause: no tensor argument carried a dispatch key"));
}

/* Messages are never cut without saying so. A registry the size of
   libtorch 2.11's (its fallbacks, their sites as long as libtorch's) gives
   c10's missing-kernel message whole (a 2.11 process writes 5,098-5,164
   characters for it); one that cannot fit ends in a marker. */
static const char *const torch_fallback_keys[] = {   /* the 2.11 keys; other presets lack a few */
    "AutogradOther", "AutogradCPU", "AutogradCUDA", "AutogradXLA", "AutogradMPS", "AutogradIPU", "AutogradXPU",
    "AutogradHPU", "AutogradLazy", "AutogradMTIA", "AutogradMAIA", "AutogradMeta", "Meta", "AutocastCPU",
    "AutocastMTIA", "AutocastMAIA", "AutocastXPU", "AutocastIPU", "AutocastHPU", "AutocastXLA", "AutocastMPS",
    "AutocastCUDA", "AutocastPrivateUse1", "Python", "FuncTorchDynamicLayerBackMode", "Functionalize", "Named",
    "Conjugate", "Negative", "ZeroTensor", "Tracer", "FuncTorchBatched", "FuncTorchVmapMode", "Batched",
    "VmapMode", "FuncTorchGradWrapper", "PythonTLSSnapshot", "FuncTorchDynamicLayerFrontMode", "PythonDispatcher",
};
static void fb_noop(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks; (void)s;
}
static dk_keyset keyset_of(const void *t, void *ud) { (void)ud; return *(const dk_keyset *)t; }
/* A registry with c10's messages and a fallback at each of the keys above
   (sites of `file_len` characters, plus the two default fallthroughs);
   returns how many it registered, and the message of a call on XLA alone. */
static int torch_sized_message(size_t file_len, char *msg, size_t size, char *dump, size_t dump_size) {
    dk_registry *r;
    dk_registry_desc d;
    dk_registration *h;
    dk_value storage[2];
    dk_stack st;
    dk_keyset xla = dk_ks_from_key(DK_XLA);
    char file[1024];
    size_t i;
    int n = 0;
    assert_true(file_len < sizeof file);
    memset(file, 'x', file_len);
    memcpy(file, "aten/src/ATen/", 14);
    file[file_len] = '\0';
    memset(&d, 0, sizeof d);
    d.c10_messages = 1;
    d.tensor_keyset = keyset_of;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    for (i = 0; i < sizeof torch_fallback_keys / sizeof torch_fallback_keys[0]; i++) {
        dk_key k;
        if (dk_key_parse(torch_fallback_keys[i], &k) != DK_OK) continue;
        assert_int_equal(dk__fallback(r, k, dk_boxed(fb_noop, NULL), file, 100 + (int)i, &h, DK_CONFIG_SIGNATURE),
                         DK_OK);
        n++;
    }
    assert_int_equal(dk_def(r, "t::big(Tensor x) -> ()", &h), DK_OK);
    assert_int_equal(dk_impl(r, "t::big", DK_CPU, dk_boxed(fb_noop, NULL), &h), DK_OK);
    dk_stack_init(&st, storage, 2);
    dk_stack_push(&st, dk_tensor(&xla));
    (void)dk_last_call_status();
    dk_call_boxed(dk_op_lookup(r, "t::big"), &st);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    snprintf(msg, size, "%s", dk_last_error());
    dk_op_computed_table_to_string(dk_op_lookup(r, "t::big"), dump, dump_size);
    dk_registry_destroy(r);
    return n;
}
static void test_messages_never_cut_silently(void **state) {
    static char msg[65536], dump[65536];
    const char *cut;
    size_t len;
    int n;
    (void)state;
    /* libtorch's sites: "registered at /pytorch/aten/src/ATen/.../VariableFallbackKernel.cpp:NN" */
    n = torch_sized_message(60, msg, sizeof msg, dump, sizeof dump);
    len = strlen(msg);
#ifdef DK_PRESET_TORCH_2_11
    assert_int_equal(n + 2, 41);   /* with BackendSelect's and ADInplaceOrView's */
    assert_true(len > 5164);
#else
    assert_true(n > 20);
#endif
    assert_non_null(strstr(msg, "Could not run 't::big' with arguments from the 'XLA' backend."));
    assert_null(strstr(msg, "[message cut"));
    /* whole: it ends with the computed table, all of it */
    assert_true(len > strlen(dump));
    assert_string_equal(msg + len - strlen(dump), dump);
    /* sites ten times as long: cut, and it says so, with the whole length */
    n = torch_sized_message(600, msg, sizeof msg, dump, sizeof dump);
    len = strlen(msg);
    cut = strstr(msg, " ... [message cut: ");
    assert_non_null(cut);
    assert_string_equal(cut + strlen(cut) - strlen(" bytes in all]"), " bytes in all]");
    assert_non_null(strstr(msg, "].\n\n"));   /* the list is whole, the table is cut */
    assert_int_equal(strtoul(cut + strlen(" ... [message cut: "), NULL, 10),
                     (size_t)(strstr(msg, "].\n\n") - msg) + 4 + strlen(dump));
    assert_true(len < strlen(dump));
}

/* The executed-fallthrough and ambiguous-AutogradOther errors: c10's
   internal-assert first line with c10's messages (the 2.x site), the
   sentence alone without. */
DK_DECLARE_OP(one, int, x.ks, (tensor, x))
static int one_k(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k; (void)ks; (void)x;
    return 1;
}
static void test_internal_assert_words(void **state) {
    int c10;
    (void)state;
    for (c10 = 0; c10 < 2; c10++) {
        dk_registry *r;
        dk_registry_desc d;
        dk_registration *h;
        tensor x;
        const char *at = c10 ? "0 INTERNAL ASSERT FAILED at \"/pytorch/aten/src/ATen/core/boxing/KernelFunction.cpp\":"
                             : "";
        char expect[512];
        memset(&d, 0, sizeof d);
        d.c10_messages = c10;
        assert_int_equal(dk_registry_create(&d, &r), DK_OK);
        x.ks = dk_ks_from_key(DK_CPU);
        x.value = 0;
        assert_int_equal(dk_def(r, "t::amb(Tensor a) -> Tensor", &h), DK_OK);
        assert_int_equal(dk_def(r, "t::ft(Tensor a) -> Tensor", &h), DK_OK);
        assert_int_equal(DK_IMPL_TYPED(one, r, "t::amb", DK_SparseCPU, one_k, NULL, &h), DK_OK);
        assert_int_equal(DK_IMPL_TYPED(one, r, "t::amb", DK_CompositeImplicitAutograd, one_k, NULL, &h), DK_OK);
        assert_int_equal(dk_impl(r, "t::ft", DK_CPU, dk_fallthrough(), &h), DK_OK);
        (void)dk_last_call_status();
        assert_int_equal(one_redispatch(dk_op_lookup(r, "t::amb"), dk_ks_from_key(DK_AutogradOther), x), 0);
        assert_int_equal(dk_last_call_status(), DK_ERR_AMBIGUOUS_AUTOGRAD_OTHER);
        snprintf(expect, sizeof expect, "%s%st::amb has kernels registered to both CompositeImplicitAutograd and a "
                 "backend mapped to AutogradOther.", at, c10 ? "23, please report a bug to PyTorch. " : "");
        assert_memory_equal(dk_last_error(), expect, strlen(expect));
        assert_int_equal(one_redispatch(dk_op_lookup(r, "t::ft"), dk_ks_from_key(DK_CPU), x), 0);
        assert_int_equal(dk_last_call_status(), DK_ERR_FALLTHROUGH_CALLED);
        snprintf(expect, sizeof expect, "%s%sfallthrough_kernel was executed but it should have been "
                 "short-circuited by the dispatcher.", at, c10 ? "14, please report a bug to PyTorch. " : "");
        assert_memory_equal(dk_last_error(), expect, strlen(expect));
        dk_registry_destroy(r);
    }
}

static int hook_calls;
static dk_status hook_status;
static void my_hook(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    (void)op; (void)ks; (void)m;
    hook_calls += *(int *)ud;
    hook_status = s;
}

/* A logger for the child process of the abort test: one line into a pipe. */
static void log_to_pipe(dk_log_level level, dk_log_item item, const char *message, void *ud) {
    char line[512];
    int n = snprintf(line, sizeof line, "level %d item %s: %s", (int)level, dk_log_item_name(item), message);
    if (write(*(int *)ud, line, n < (int)sizeof line ? (size_t)n : sizeof line - 1) < 0) _exit(3);
}

static void test_error_hooks(void **state) {
    tensor t = make_tensor(DK_CPUBit, 1);
    int one = 1;
    dk_registration *amb, *cia, *ft;
    pid_t pid;
    int status, log_pipe[2];
    char logged[512];
    ssize_t n;
    (void)state;
    dk_registry_set_call_error(reg, my_hook, &one);
    hook_calls = 0;
    /* the ambiguity sentinel, reached by redispatch */
    assert_int_equal(dk_impl(reg, "t::add", DK_SparseCPU, dk_unboxed(DK_FN(add_cpu), (void *)""), &amb), DK_OK);
    assert_int_equal(dk_impl(reg, "t::add", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(add_cpu), (void *)""), &cia),
                     DK_OK);
    assert_int_equal(add_redispatch(add_op, dk_ks_from_key(DK_AutogradOther), t, t), 0);
    assert_int_equal(hook_status, DK_ERR_AMBIGUOUS_AUTOGRAD_OTHER);
    /* a fallthrough executed by a redispatch straight at it */
    assert_int_equal(dk_impl(reg, "t::add", DK_Tracer, dk_fallthrough(), &ft), DK_OK);
    assert_int_equal(add_redispatch(add_op, dk_ks_from_key(DK_Tracer), t, t), 0);
    assert_int_equal(hook_status, DK_ERR_FALLTHROUGH_CALLED);
    assert_int_equal(hook_calls, 2);
    dk_deregister(ft);
    dk_deregister(cia);
    dk_deregister(amb);
    /* the default report puts c10's text in dk_last_error */
    dk_registry_set_call_error(reg, NULL, NULL);
    assert_int_equal(dk_impl(reg, "t::add", DK_Tracer, dk_fallthrough(), &ft), DK_OK);
    add_redispatch(add_op, dk_ks_from_key(DK_Tracer), t, t);
    assert_int_equal(dk_last_call_status(), DK_ERR_FALLTHROUGH_CALLED);
    assert_non_null(strstr(dk_last_error(), "fallthrough_kernel was executed but it should have been short-circuited"));
    dk_deregister(ft);
    /* abort: in a child process, telling the registry's logger first */
    fflush(NULL);
    assert_int_equal(pipe(log_pipe), 0);
    pid = fork();
    if (pid == 0) {
        dk_registry_desc d;
        memset(&d, 0, sizeof d);
        d.logger.func = log_to_pipe;
        d.logger.user_data = &log_pipe[1];
        dk_registry_set_hooks(reg, &d);
        dk_registry_set_call_error(reg, dk_call_error_abort, NULL);
        add_call(add_op, make_tensor(DK_XLABit, 1), make_tensor(DK_XLABit, 1));
        _exit(0);
    }
    assert_true(pid > 0);
    close(log_pipe[1]);
    n = read(log_pipe[0], logged, sizeof logged - 1);
    close(log_pipe[0]);
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    assert_true(n > 0);
    logged[n] = '\0';
    assert_non_null(strstr(logged, "level 0 item CALL_ABORTED: Could not run 't::add' for dispatch key XLA"));
}

static void test_boxed_kernel_and_void_op(void **state) {
    dk_registration *d, *k;
    tensor t = make_tensor(DK_CPUBit, 7);
    const dk_operator *op;
    (void)state;
    assert_int_equal(dk_def(reg, "t::touch(Tensor(a!) x) -> ()", &d), DK_OK);
    assert_int_equal(dk_impl(reg, "t::touch", DK_CPU, dk_unboxed(DK_FN(touch_cpu), NULL), &k), DK_OK);
    op = dk_op_lookup(reg, "t::touch");
    {
        dk_guard g = dk_guard_below_autograd();
        touch_call(op, &t);
        dk_guard_pop(g);
    }
    assert_int_equal(t.value, 8);
}

static void test_explain(void **state) {
    tensor a = make_tensor(DK_CPUBit, 1);
    dk_explanation e;
    char text[2048];
    (void)state;
    assert_int_equal(dk_explain(add_op, a.ks, &e), DK_OK);
    assert_int_equal(e.key, DK_AutogradCPU);
    assert_int_equal(e.slot, dk_key_slot(DK_AutogradCPU));
    assert_int_equal(e.source, DK_SOURCE_AUTOGRAD);
    assert_string_equal(e.reason, "autograd kernel");
    assert_string_equal((const char *)e.kernel->user_data, "ag ");
    /* ADInplaceOrView (a fallthrough) is masked out of what the kernel receives */
    assert_true(dk_ks_has(e.after_tls, DK_ADInplaceOrView));
    assert_false(dk_ks_has(e.final, DK_ADInplaceOrView));
    dk_explain_to_string(add_op, &e, text, sizeof text);
    {
        char line[64];   /* slot 93 in 2.7.1 */
        snprintf(line, sizeof line, "slot %d (AutogradCPU) -> autograd kernel: registered at ",
                 dk_key_slot(DK_AutogradCPU));
        assert_non_null(strstr(text, line));
    }
    assert_int_equal(dk_explain(NULL, a.ks, &e), DK_ERR_NULL);
    assert_int_equal(dk_explain(add_op, make_tensor(DK_XLABit, 0).ks, &e), DK_OK);
    assert_int_equal(e.source, DK_SOURCE_AUTOGRAD);
}

static char traced[512];
static void tracer(const dk_operator *op, dk_keyset ks, dk_key key, int is_redispatch, void *ud) {
    (void)ks; (void)ud;
    snprintf(traced + strlen(traced), sizeof traced - strlen(traced), "[%s] op=[%s], key=[%s]\n",
             is_redispatch ? "redispatch" : "call", op->name, dk_key_name(key));
}

static void test_trace(void **state) {
    tensor a = make_tensor(DK_CPUBit, 1);
    (void)state;
    traced[0] = '\0';
    dk_trace_set(tracer, NULL);
    add_call(add_op, a, a);
    dk_trace_set(NULL, NULL);
    add_call(add_op, a, a);
    assert_string_equal(traced, "[call] op=[t::add], key=[AutogradCPU]\n[redispatch] op=[t::add], key=[CPU]\n");
}


/* ---- a deregistration out of memory: the live table is rewritten in place ----
   Entries pair a kernel's fn with its record; rewritten in place, an entry
   loses its fn before it gets its new record, so a call never runs one
   kernel's fn with another's record: it runs the old kernel, or the new one
   through the slow path. A caller races 2,000 such rewrites. */
static int oom_fail;
static void *oom_alloc(size_t n, void *ud) { (void)ud; return __atomic_load_n(&oom_fail, __ATOMIC_RELAXED) ? NULL : malloc(n); }
static void oom_free(void *p, void *ud) { (void)ud; free(p); }
static void quiet_log(dk_log_level level, dk_log_item item, const char *message, void *ud) {
    (void)level; (void)item; (void)message; (void)ud;
}
static const char tag_under[] = "under", tag_over[] = "over";
static long wrong_record; /* a kernel that ran with another kernel's record */
static int k_under(const dk_kernel *k, dk_keyset ks, tensor a, tensor b) {
    (void)ks; (void)a; (void)b;
    if (k->user_data != (const void *)tag_under) __atomic_fetch_add(&wrong_record, 1, __ATOMIC_RELAXED);
    return 1;
}
static int k_over(const dk_kernel *k, dk_keyset ks, tensor a, tensor b) {
    (void)ks; (void)a; (void)b;
    if (k->user_data != (const void *)tag_over) __atomic_fetch_add(&wrong_record, 1, __ATOMIC_RELAXED);
    return 2;
}
typedef struct rewrite_caller { const dk_operator *op; int stop; long ran[3]; } rewrite_caller;
static void *rewrite_call_loop(void *arg) {
    rewrite_caller *c = (rewrite_caller *)arg;
    tensor a = { { 0 }, 0 };
    a.ks = dk_ks_from_key(DK_CPU); /* no autograd keys: this registry has no autograd fallthrough */
    do { /* at least one call, however late this thread is scheduled */
        int r = add_call(c->op, a, a);
        c->ran[r == 1 || r == 2 ? r : 0]++;
    } while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE));
    return NULL;
}
/* every entry: its fn is its record's, or none (the slow path) */
static int entries_consistent(const dk_operator *op) {
    int s;
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        const dk_table_entry *e = dk_op_table_entry(dk_op_table_of(op), s);
        if (e->fn && e->fn != e->kernel->fn) return 0;
    }
    return 1;
}
static void test_rewrite_in_place_out_of_memory(void **state) {
    dk_registry *r;
    dk_registry_desc d;
    dk_registration *h, *h_over;
    const dk_operator *op;
    const dk_table_entry *cpu;
    rewrite_caller c;
    pthread_t th;
    tensor a = { { 0 }, 0 };
    int i, slot = dk_key_slot(DK_CPU);
    (void)state;
    a.ks = dk_ks_from_key(DK_CPU);
    memset(&d, 0, sizeof d);
    d.alloc = oom_alloc;
    d.free = oom_free;
    d.logger.func = quiet_log;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    assert_int_equal(dk_def(r, "oom::add(Tensor a, Tensor b) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(r, "oom::add", DK_CPU, add_kernel(k_under, (void *)tag_under, "k_under"), &h), DK_OK);
    op = dk_op_lookup(r, "oom::add");
    memset(&c, 0, sizeof c);
    c.op = op;
    wrong_record = 0;
    assert_int_equal(pthread_create(&th, NULL, rewrite_call_loop, &c), 0);
    for (i = 0; i < 2000; i++) {
        assert_int_equal(dk_impl(r, "oom::add", DK_CPU, add_kernel(k_over, (void *)tag_over, "k_over"), &h_over), DK_OK);
        dk_call_enter();   /* the snapshot is read inside a read section (call epochs) */
        cpu = dk_op_table_entry(dk_op_table_of(op), slot);
        assert_ptr_equal(cpu->kernel->user_data, tag_over);
        assert_true(cpu->fn == cpu->kernel->fn); /* a new table: the fast path */
        dk_call_exit();
        assert_int_equal(add_call(op, a, a), 2);
        __atomic_store_n(&oom_fail, 1, __ATOMIC_RELAXED);
        assert_int_equal(dk_deregister(h_over), DK_OK); /* no memory for a new table: in place */
        __atomic_store_n(&oom_fail, 0, __ATOMIC_RELAXED);
        dk_call_enter();
        cpu = dk_op_table_entry(dk_op_table_of(op), slot);
        assert_ptr_equal(cpu->kernel->user_data, tag_under);
        assert_null(cpu->fn); /* rewritten: the slow path, which runs the record's fn */
        assert_true(entries_consistent(op));
        assert_ptr_equal(dk_op_slot_kernel(op, slot)->user_data, tag_under);
        dk_call_exit();
        assert_int_equal(add_call(op, a, a), 1);
    }
    __atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(th, NULL), 0);
    printf("  racing caller: %ld calls ran the shadowing kernel, %ld the one under it, %ld neither\n", c.ran[2],
           c.ran[1], c.ran[0]);
    assert_int_equal(wrong_record, 0);
    assert_int_equal(c.ran[0], 0);
    assert_true(c.ran[1] + c.ran[2] > 0);
    dk_registry_destroy(r);
}

/* ---- a failing call copies a table rewritten in place ----------------------------
   A call without a kernel builds its message from a copy of the operator's
   table. The copy races what a writer rewrites in place: an operator's live
   table (a deregistration out of memory: its entries, masks, reasons and
   def fields) and the registry's template (every fallthrough fallback
   change). Under ThreadSanitizer (make tsan) a plain store or a plain copy
   there is a data race; the test also counts that every failing call
   reported, with the operator's name, and no other outcome. */
typedef struct failing_caller { const dk_operator *op; int stop; long calls, failed, other; } failing_caller;
static void *failing_call_loop(void *arg) {
    failing_caller *c = (failing_caller *)arg;
    tensor cuda = { { 0 }, 0 };
    cuda.ks = dk_ks_from_key(DK_CUDA); /* no kernel there: the slow path copies the table */
    do {
        int r = add_call(c->op, cuda, cuda);
        dk_status s = dk_last_call_status();
        __atomic_store_n(&c->calls, c->calls + 1, __ATOMIC_RELEASE);
        if (r == 0 && s == DK_ERR_NO_KERNEL && strstr(dk_last_error(), "oom::add")) c->failed++;
        else c->other++;
    } while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE));
    return NULL;
}
static void test_failing_call_races_rewrite_in_place(void **state) {
    dk_registry *r;
    dk_registry_desc d;
    dk_registration *h, *h_over, *h_ft;
    failing_caller c;
    pthread_t th;
    int i;
    (void)state;
    memset(&d, 0, sizeof d);
    d.alloc = oom_alloc;
    d.free = oom_free;
    d.logger.func = quiet_log;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    assert_int_equal(dk_def(r, "oom::add(Tensor a, Tensor b) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(r, "oom::add", DK_CPU, add_kernel(k_under, (void *)tag_under, "k_under"), &h), DK_OK);
    memset(&c, 0, sizeof c);
    c.op = dk_op_lookup(r, "oom::add");
    assert_int_equal(pthread_create(&th, NULL, failing_call_loop, &c), 0);
    for (i = 0; i < 500; i++) {
        while (__atomic_load_n(&c.calls, __ATOMIC_ACQUIRE) < i) sched_yield();   /* calls spread over the run */
        /* an impl, deregistered out of memory: the operator's table rewritten in place */
        assert_int_equal(dk_impl(r, "oom::add", DK_CPU, add_kernel(k_over, (void *)tag_over, "k_over"), &h_over),
                         DK_OK);
        __atomic_store_n(&oom_fail, 1, __ATOMIC_RELAXED);
        assert_int_equal(dk_deregister(h_over), DK_OK);
        __atomic_store_n(&oom_fail, 0, __ATOMIC_RELAXED);
        /* a fallthrough fallback: the template rewritten in place, both ways;
           its deregistration out of memory rewrites the operator's table too */
        assert_int_equal(dk_fallback(r, DK_AutogradCUDA, dk_fallthrough(), &h_ft), DK_OK);
        if (i % 2) __atomic_store_n(&oom_fail, 1, __ATOMIC_RELAXED);
        assert_int_equal(dk_deregister(h_ft), DK_OK);
        __atomic_store_n(&oom_fail, 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(th, NULL), 0);
    printf("  %ld failing calls racing 1,500 in-place rewrites: %ld reported, %ld other outcomes\n", c.calls, c.failed,
           c.other);
    assert_true(c.calls >= 499);
    assert_int_equal(c.failed, c.calls);
    assert_int_equal(c.other, 0);
    dk_registry_destroy(r);
}

/* ---- boxed calls racing a def removed in place -----------------------------------
   A def deregistered out of memory clears the def's fields of the live
   table in place (schema, parsed schema, defaults, adapters...). A boxed
   call racing it reads them: each once, atomically (ThreadSanitizer), and
   a view with the parsed schema but not its defaults is no def (never a
   NULL defaults array indexed). Outcomes counted: the kernel ran with the
   default pushed, or the call failed for want of a kernel (no def: no
   dispatch argument), nothing else. */
typedef struct boxed_racer { const dk_operator *op; int stop; long calls, ran, no_kernel, other; } boxed_racer;
static dk_keyset cpu_keyset(const void *t, void *ud) { (void)t; (void)ud; return dk_ks_from_key(DK_CPU); }
static void boxed_echo(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *st) {
    (void)k; (void)op; (void)ks;
    /* (Tensor a, int b=7): the default was pushed */
    if (st->size == 2 && st->values[1].tag == DK_VALUE_INT && st->values[1].as.i == 7) {
        st->size = 0;
        dk_stack_push(st, dk_int(1));
    } else {
        st->size = 0;
        dk_stack_push(st, dk_int(2));
    }
}
static void *boxed_race_loop(void *arg) {
    boxed_racer *c = (boxed_racer *)arg;
    int tensor_value = 0;
    do {
        dk_value storage[4];
        dk_stack st;
        dk_status s;
        dk_stack_init(&st, storage, 4);
        dk_stack_push(&st, dk_tensor(&tensor_value));
        dk_call_boxed(c->op, &st);
        s = dk_last_call_status();
        __atomic_store_n(&c->calls, c->calls + 1, __ATOMIC_RELEASE);
        if (s == DK_OK && st.size == 1 && st.values[0].as.i == 1) c->ran++;
        else if (s == DK_ERR_NO_KERNEL) c->no_kernel++;
        else c->other++;
    } while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE));
    return NULL;
}
static void test_boxed_calls_race_def_removed_in_place(void **state) {
    dk_registry *r;
    dk_registry_desc d;
    dk_registration *def, *h;
    boxed_racer c;
    pthread_t th;
    int i;
    (void)state;
    memset(&d, 0, sizeof d);
    d.alloc = oom_alloc;
    d.free = oom_free;
    d.logger.func = quiet_log;
    d.tensor_keyset = cpu_keyset;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    assert_int_equal(dk_impl(r, "oom::f", DK_CPU, dk_boxed(boxed_echo, NULL), &h), DK_OK);   /* keeps the operator */
    assert_int_equal(dk_def(r, "oom::f(Tensor a, int b=7) -> int", &def), DK_OK);
    memset(&c, 0, sizeof c);
    c.op = dk_op_lookup(r, "oom::f");
    assert_int_equal(pthread_create(&th, NULL, boxed_race_loop, &c), 0);
    for (i = 0; i < 1000; i++) {
        while (__atomic_load_n(&c.calls, __ATOMIC_ACQUIRE) < i) sched_yield();   /* calls spread over the run */
        __atomic_store_n(&oom_fail, 1, __ATOMIC_RELAXED);
        assert_int_equal(dk_deregister(def), DK_OK);   /* no memory for a new table: the def's fields cleared in place */
        __atomic_store_n(&oom_fail, 0, __ATOMIC_RELAXED);
        dk_call_enter();   /* read inside a read section (call epochs) */
        assert_null(dk_op_schema(c.op));
        dk_call_exit();
        assert_int_equal(dk_def(r, "oom::f(Tensor a, int b=7) -> int", &def), DK_OK);
    }
    __atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(th, NULL), 0);
    printf("  %ld boxed calls racing 1,000 defs removed in place: %ld ran with the default, %ld found no kernel, "
           "%ld other\n", c.calls, c.ran, c.no_kernel, c.other);
    assert_true(c.calls >= 999);
    assert_int_equal(c.ran + c.no_kernel, c.calls);
    assert_int_equal(c.other, 0);
    dk_registry_destroy(r);
}

/* dk_last_call_status returns the status of the last FAILED call on this
   thread and resets it: a successful call leaves it as it is. So a caller
   that checks a void call reads (and so clears) it before the call, then
   after. Both halves of the rule: */
static void test_last_call_status_checks_a_void_call(void **state) {
    dk_registry *r;
    dk_registration *d, *k;
    const dk_operator *op;
    tensor cpu, xla;
    (void)state;
    cpu.ks = dk_ks_from_key(DK_CPU); /* plain tensors, no autograd keys */
    xla.ks = dk_ks_from_key(DK_XLA);
    cpu.value = xla.value = 1;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_def(r, "v::touch(Tensor(a!) x) -> ()", &d), DK_OK);
    assert_int_equal(dk_impl(r, "v::touch", DK_CPU, dk_unboxed(DK_FN(touch_cpu), NULL), &k), DK_OK);
    op = dk_op_lookup(r, "v::touch");
    /* a failed call (no XLA kernel), not read; then a successful one: the
       status is still the failed call's (it is sticky until read) */
    touch_call(op, &xla);
    touch_call(op, &cpu);
    assert_int_equal(cpu.value, 2);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL); /* not the last call's */
    /* the pattern: clear, call, read */
    (void)dk_last_call_status();
    touch_call(op, &cpu);
    assert_int_equal(dk_last_call_status(), DK_OK);
    assert_int_equal(cpu.value, 3);
    (void)dk_last_call_status();
    touch_call(op, &xla);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    assert_int_equal(xla.value, 1);
    dk_registry_destroy(r);
}

/* ---- a typed call on a boxed kernel or fallback (dk__call_slow_at) ------------------------ */

/* Each way dk__call_slow_at takes: a missing record's boxed fallback boxed
   through the def's adapters (its result count checked: too few, too many,
   a fallback that failed the call itself), the same from a redispatch and
   a traced call, an operator's own boxed kernel, a fallback of an
   operator without adapters or without a def (the argument pack), a void
   call, and a missing record with no fallback. */
DK_DECLARE_OP(bx1, tensor *, a->ks, (tensor *, a))
DK_DECLARE_OP_VOID(bxv, a->ks, (tensor *, a))
static dk_status bx_status;
static char bx_message[4096];
static dk_keyset bx_tensor_ks(const void *t, void *ud) { (void)ud; return ((const tensor *)t)->ks; }
static void bx_record_error(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    (void)op; (void)ks; (void)ud;
    bx_status = s;
    snprintf(bx_message, sizeof bx_message, "%s", m);
}
static int bx_mode;   /* what bx_fallback leaves: 0 nothing, 1 its argument, 2 two values, 3 fails the call */
static int bx_runs, bx_boxed_runs, bx_traced, bxv_unboxed;
static tensor bx_other;
static void bx_box(const void *args, dk_stack *st) { dk_stack_push(st, dk_tensor(((const bx1_args *)args)->a)); }
static void bx_unbox(dk_stack *st, void *result) { *(tensor **)result = (tensor *)dk_stack_pop(st).as.tensor; }
static void bxv_box(const void *args, dk_stack *st) { dk_stack_push(st, dk_tensor(((const bxv_args *)args)->a)); }
static void bxv_unbox(dk_stack *st, void *result) { (void)st; (void)result; bxv_unboxed++; }
static const dk_op_adapters bx1_adapters = { "(Tensor) (Tensor)", 1, 1, bx_box, bx_unbox, NULL };
static const dk_op_adapters bxv_adapters = { "() (Tensor)", 1, 0, bxv_box, bxv_unbox, NULL };
static void bx_fallback(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    dk_value v;
    bx_runs++;
    if (s->unboxed_args) {   /* no adapters: the pack */
        ((bx1_args *)s->unboxed_args)->result = &bx_other;
        return;
    }
    v = dk_stack_pop(s);
    if (bx_mode == 1) dk_stack_push(s, v);
    if (bx_mode == 2) { dk_stack_push(s, v); dk_stack_push(s, v); }
    if (bx_mode == 3) dk_call_fail(op, k, ks, DK_ERR_BAD_ARGUMENT, "%s: bx refuses", op->name);
}
static void bx_boxed_kernel(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks;
    bx_boxed_runs++;
    dk_stack_push(s, dk_tensor(dk_stack_pop(s).as.tensor));
}
/* A typed call written out in full (gen/dkgen's way) of bx1, its result
   set to a value beforehand: what the call leaves in it. */
static tensor *bx1_packed(const dk_operator *op, int redispatch, dk_keyset ks, tensor *a) {
    bx1_args p;
    const dk_op_table *t;
    const dk_kernel *k;
    dk_keyset ks2;
    dk_fn fn;
    p.a = a;
    p.result = &bx_other;
    dk_call_enter();
    k = redispatch ? dk_redispatch_kernel_with_fn(op, ks, &t, &fn) : dk_dispatch_kernel_with_fn(op, ks, &ks2, &t, &fn);
    assert_null(fn);   /* a boxed fallback: no fn to call directly */
    dk_call_packed(op, t, ks, k, &p, &p.result, sizeof p.result);
    dk_call_exit();
    return p.result;
}
static void bx_trace(const dk_operator *op, dk_keyset ks, dk_key key, int re, void *ud) {
    (void)op; (void)ks; (void)key; (void)re; (void)ud;
    bx_traced++;
}

static void test_typed_call_boxed(void **state) {
    dk_registry *r;
    dk_registry_desc d;
    dk_def_options o;
    dk_registration *h, *fb;
    const dk_operator *op, *opv, *opn, *opk;
    tensor a, *res;
    dk_keyset tracer = dk_ks_from_key(DK_Tracer);
    dk_guard g;
    (void)state;
    a.ks = dk_ks_from_key(DK_CPU);   /* no autograd keys: the slot is CPU's, or Tracer's with the guard */
    a.value = 1;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = bx_tensor_ks;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    assert_int_equal(dk_registry_set_call_error(r, bx_record_error, NULL), DK_OK);
    memset(&o, 0, sizeof o);
    o.adapters = &bx1_adapters;
    assert_int_equal(dk_def_with(r, "bx::one(Tensor a) -> Tensor", &o, &h), DK_OK);
    o.adapters = &bxv_adapters;
    assert_int_equal(dk_def_with(r, "bx::void(Tensor a) -> ()", &o, &h), DK_OK);
    assert_int_equal(dk_def(r, "bx::bare(Tensor a) -> Tensor", &h), DK_OK);
    o.adapters = &bx1_adapters;
    assert_int_equal(dk_def_with(r, "bx::kernel(Tensor a) -> Tensor", &o, &h), DK_OK);
    assert_int_equal(dk_impl(r, "bx::kernel", DK_CPU, dk_boxed(bx_boxed_kernel, NULL), &h), DK_OK);
    op = dk_op_lookup(r, "bx::one");
    opv = dk_op_lookup(r, "bx::void");
    opn = dk_op_lookup(r, "bx::bare");
    opk = dk_op_lookup(r, "bx::kernel");
    /* a missing record with no fallback: the call fails, the result is zero */
    bx_status = DK_OK;
    assert_null(bx1_call(op, &a));
    assert_int_equal(bx_status, DK_ERR_NO_KERNEL);
    assert_non_null(strstr(bx_message, "Could not run 'bx::one'"));
    /* the operator's own boxed kernel, boxed through the adapters */
    bx_status = DK_OK;
    assert_ptr_equal(bx1_call(opk, &a), &a);
    assert_int_equal(bx_boxed_runs, 1);
    assert_int_equal(bx_status, DK_OK);
    assert_int_equal(dk_fallback(r, DK_Tracer, dk_boxed(bx_fallback, NULL), &fb), DK_OK);
    g = dk_guard_include(tracer);
    /* the fallback leaves the one result: unboxed */
    bx_mode = 1;
    assert_ptr_equal(bx1_call(op, &a), &a);
    assert_ptr_equal(bx1_redispatch(op, tracer, &a), &a);
    assert_int_equal(bx_runs, 2);
    assert_int_equal(bx_status, DK_OK);
    /* too few, too many: the call fails, the result is zero */
    bx_mode = 0;
    assert_null(bx1_call(op, &a));
    assert_int_equal(bx_status, DK_ERR_KERNEL_FAILED);
    assert_non_null(strstr(bx_message, "left 0 values on the stack where the schema has 1 returns"));
    bx_status = DK_OK;
    bx_mode = 2;
    assert_null(bx1_redispatch(op, tracer, &a));
    assert_int_equal(bx_status, DK_ERR_KERNEL_FAILED);
    assert_non_null(strstr(bx_message, "left 2 values on the stack where the schema has 1 returns"));
    /* the same through the pack, whose result held a pointer before: zero-filled */
    for (bx_mode = 0; bx_mode < 4; bx_mode += 2) {
        bx_status = DK_OK;
        assert_null(bx1_packed(op, 0, a.ks, &a));
        assert_int_equal(bx_status, DK_ERR_KERNEL_FAILED);
        bx_status = DK_OK;
        assert_null(bx1_packed(op, 1, tracer, &a));
        assert_int_equal(bx_status, DK_ERR_KERNEL_FAILED);
    }
    /* a fallback that failed the call itself: its report only */
    bx_mode = 3;
    assert_null(bx1_call(op, &a));
    assert_int_equal(bx_status, DK_ERR_BAD_ARGUMENT);
    assert_string_equal(bx_message, "bx::one: bx refuses");
    assert_null(bx1_packed(op, 0, a.ks, &a));
    assert_int_equal(bx_status, DK_ERR_BAD_ARGUMENT);
    /* traced: the hook told, the same boxing */
    bx_mode = 1;
    bx_status = DK_OK;
    dk_trace_set(bx_trace, NULL);
    res = bx1_call(op, &a);
    dk_trace_set(NULL, NULL);
    assert_ptr_equal(res, &a);
    assert_int_equal(bx_traced, 1);
    assert_int_equal(bx_status, DK_OK);
    /* a void call boxes too; an operator without adapters gets the pack */
    bx_runs = 0;
    bx_mode = 0;
    bxv_call(opv, &a);
    assert_int_equal(bx_status, DK_OK);
    assert_int_equal(bxv_unboxed, 0);   /* no result to unbox into */
    assert_ptr_equal(bx1_call(opn, &a), &bx_other);
    assert_int_equal(bx_runs, 2);
    assert_int_equal(bx_status, DK_OK);
    /* an operator with a kernel and no def: no adapters either, the pack */
    assert_int_equal(dk_impl(r, "bx::nodef", DK_CPU, dk_boxed(bx_boxed_kernel, NULL), &h), DK_OK);
    assert_ptr_equal(bx1_call(dk_op_lookup(r, "bx::nodef"), &a), &bx_other);
    assert_int_equal(bx_runs, 3);
    assert_int_equal(bx_status, DK_OK);
    dk_guard_pop(g);
    dk_registry_destroy(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_hops),
        cmocka_unit_test(test_tls_defaults_and_guards),
        cmocka_unit_test(test_key_both_included_and_excluded),
        cmocka_unit_test(test_tls_is_per_thread),
        cmocka_unit_test(test_boxed_fallback_from_unboxed_call),
        cmocka_unit_test(test_fallthrough_masks),
        cmocka_unit_test(test_missing_kernel_messages),
        cmocka_unit_test(test_messages_never_cut_silently),
        cmocka_unit_test(test_internal_assert_words),
        cmocka_unit_test(test_error_hooks),
        cmocka_unit_test(test_boxed_kernel_and_void_op),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_rewrite_in_place_out_of_memory),
        cmocka_unit_test(test_failing_call_races_rewrite_in_place),
        cmocka_unit_test(test_boxed_calls_race_def_removed_in_place),
        cmocka_unit_test(test_last_call_status_checks_a_void_call),
        cmocka_unit_test(test_typed_call_boxed),
    };
    return cmocka_run_group_tests_name("call path", tests, setup, teardown);
}
