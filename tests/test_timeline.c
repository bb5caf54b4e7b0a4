/* make: variants=epochs tsan=plain flags=-Igen */
/* The timeline of dispatches (dk_timeline_*, Note [Timeline]): what a
   recording holds, read back from the file it writes. With a path argument
   (make timeline-check) the first recording is written there, with a
   file of what it must hold beside it (PATH.expect.json), and
   tests/timeline_check.py checks the two with Python's json module: the
   nesting, the names, durations that are not negative. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>

typedef struct tensor { dk_keyset ks; float v; } tensor;
#define DKGEN_TENSOR tensor *
#define DKGEN_TENSOR_KEYSET(t) ((t)->ks)
#include "sample_ops.h"
DK_DECLARE_OP(one, tensor *, a->ks, (tensor *, a))

static const dk_operator *op_one, *op_none, *op_neg;
static const char *out_path;   /* argv[1]: where the first recording goes */
static char path[512];
static char text[1 << 20];   /* a file of a recording: 1,600 events fit */

static tensor *one_cpu(const dk_kernel *k, dk_keyset ks, tensor *a) { (void)k; (void)ks; return a; }
/* autograd-style: below autograd, the CPU kernel (a redispatch, nested) */
static tensor *one_autograd(const dk_kernel *k, dk_keyset ks, tensor *a) {
    (void)k;
    return one_redispatch(op_one, dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD), a);
}
static tensor *neg_cpu(const dk_kernel *k, dk_keyset ks, tensor *a) { (void)k; (void)ks; a->v = -a->v; return a; }
/* a boxed fallback at Tracer: redispatches below itself, boxed */
static void trace_fallback(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k;
    dk_redispatch_boxed(op, dk_ks_remove(ks, DK_Tracer), stack);
}
static dk_keyset tensor_keys(const void *t, void *ud) { (void)ud; return ((const tensor *)t)->ks; }
static void quiet(dk_log_level l, dk_log_item i, const char *m, void *u) { (void)l; (void)i; (void)m; (void)u; }

static dk_registry *setup(void) {
    dk_registry *r = NULL;
    dk_registry_desc d;
    dk_registration *h;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = tensor_keys;
    d.logger.func = quiet;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    assert_int_equal(dk_def(r, "t::one(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(r, "t::one", DK_CPU, DK_KERNEL(one, one_cpu, NULL), &h), DK_OK);
    assert_int_equal(dk_impl(r, "t::one", DK_AutogradCPU, DK_KERNEL(one, one_autograd, NULL), &h), DK_OK);
    assert_int_equal(dk_def(r, "t::none(Tensor a) -> Tensor", &h), DK_OK);   /* no kernel: its calls fail */
    assert_int_equal(sample_neg_def(r, &h), DK_OK);
    assert_int_equal(sample_neg_impl(r, DK_CPU, neg_cpu, NULL, &h), DK_OK);
    assert_int_equal(dk_fallback(r, DK_Tracer, dk_kernel_named(dk_boxed(trace_fallback, NULL), "trace_fallback", NULL),
                                 &h), DK_OK);
    op_one = dk_op_lookup(r, "t::one");
    op_none = dk_op_lookup(r, "t::none");
    assert_int_equal(sample_neg_bind(r, &op_neg), DK_OK);
    assert_non_null(op_one);
    assert_non_null(op_none);
    return r;
}

static tensor cpu(float v) { tensor t; t.ks = dk_ks_from_key(DK_CPU); t.v = v; return t; }
static tensor with_autograd(float v) {
    tensor t = cpu(v);
    t.ks = dk_ks_add(t.ks, DK_AutogradCPU);
    return t;
}

/* occurrences of s in text */
static int count(const char *s) {
    int n = 0;
    const char *p = text;
    while ((p = strstr(p, s)) != NULL) { n++; p += strlen(s); }
    return n;
}
static void load(const char *file) {
    FILE *f = fopen(file, "r");
    size_t n;
    assert_non_null(f);
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
}
static void temp_path(const char *what) {
    snprintf(path, sizeof path, "timeline-%s-%ld.json", what, (long)getpid());
}
/* each test's temporary file goes, whether the test passed or not */
static int remove_temp(void **state) {
    (void)state;
    if (strncmp(path, "timeline-", 9) == 0) remove(path);
    path[0] = '\0';
    return 0;
}

static void *thread_calls(void *arg) {
    tensor x = with_autograd(1);
    (void)arg;
    one_call(op_one, &x);
    return NULL;
}

static int hook_calls;
static void user_hook(const dk_operator *op, dk_keyset ks, dk_key key, int re, void *ud) {
    (void)op; (void)ks; (void)key; (void)re; (void)ud;
    hook_calls++;
}

/* One recording of every kind of call: a typed call that redispatches, a
   failed one, gen/'s binding, a boxed fallback that redispatches boxed, a
   boxed call, and a call on another thread. */
static void test_timeline_records_calls_nested(void **state) {
    dk_registry *r = setup();
    tensor a = with_autograd(1), b = cpu(2), c = cpu(3), d = cpu(4);
    dk_value slots[4];
    dk_stack st;
    dk_guard g;
    pthread_t th;
    const char *file = out_path ? out_path : (temp_path("calls"), path);
    FILE *f;
    (void)state;
    dk_trace_set(user_hook, NULL);
    assert_int_equal(dk_timeline_start(0), DK_OK);
    assert_true(one_call(op_one, &a) == &a);               /* t::one AutogradCPU > t::one CPU (redispatch) */
    assert_null(one_call(op_none, &b));                    /* failed: no kernel */
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    assert_true(sample_neg_call(op_neg, &b) == &b);        /* gen/'s binding: sample::neg CPU */
    g = dk_guard_include(dk_ks_from_key(DK_Tracer));
    assert_true(sample_neg_call(op_neg, &c) == &c);        /* Tracer fallback (boxed) > neg CPU (boxed redispatch) */
    dk_guard_pop(g);
    assert_true(c.v == -3.0f);
    dk_stack_init(&st, slots, 4);
    dk_stack_push(&st, dk_tensor(&d));
    dk_call_boxed(op_neg, &st);                            /* a boxed call: sample::neg CPU */
    assert_int_equal((int)st.size, 1);
    assert_true(d.v == -4.0f);
    assert_int_equal(pthread_create(&th, NULL, thread_calls, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    /* saving while it records is refused, and changes nothing */
    assert_int_equal(dk_timeline_save(file), DK_ERR_BAD_ARGUMENT);
    assert_non_null(strstr(dk_last_error(), "dk_timeline_stop first"));
    dk_timeline_stop();
    assert_int_equal(hook_calls, 0);                       /* the timeline took the hook */
    one_call(op_one, &a);                                  /* after stop: not recorded */
    assert_int_equal(hook_calls, 0);                       /* and the hook is cleared */
    assert_int_equal(dk_timeline_save(file), DK_OK);
    load(file);
    assert_int_equal(count("\"ph\": \"X\""), 9);
    assert_int_equal(count("\"name\": \"thread_name\""), 2);
    assert_int_equal(count("\"failed\": 1"), 1);
    assert_int_equal(count("\"status\": \"no kernel for this call\""), 1);
    assert_int_equal(count("\"fallback\": 1"), 1);
    assert_int_equal(count("\"boxed_call\": 1"), 2);        /* the boxed redispatch and dk_call_boxed */
    assert_int_equal(count("(trace_fallback)\""), 1);           /* the kernel: its debug text ends with its name */
    assert_int_equal(count("\"cat\": \"redispatch\""), 2);  /* t::one's, on each thread */
    assert_int_equal(count("\"dropped\": 0"), 1);
    assert_int_equal(count("\"open\""), 0);
    if (out_path) {   /* what tests/timeline_check.py must find in it */
        snprintf(path, sizeof path, "%s.expect.json", out_path);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("{\"events\": 9, \"threads\": 2, \"dropped\": 0,\n"
              " \"names\": {\"t::one\": 4, \"t::none\": 1, \"sample::neg\": 4},\n"
              " \"nested\": [[\"t::one\", \"CPU\", \"t::one\", \"AutogradCPU\"],\n"
              "            [\"sample::neg\", \"CPU\", \"sample::neg\", \"Tracer\"]],\n"
              " \"failed\": [\"t::none\"], \"fallback\": [\"sample::neg\"]}\n", f);
        fclose(f);
    } else {
        remove(file);
    }
    dk_registry_destroy(r);
}

/* The cap: at most events_per_thread events, later ones dropped and
   counted, the kept ones still nested right. */
static void test_timeline_cap_drops_and_says_so(void **state) {
    dk_registry *r = setup();
    tensor a = with_autograd(1);
    int i;
    (void)state;
    temp_path("cap");
    assert_int_equal(dk_timeline_start(3), DK_OK);
    for (i = 0; i < 3; i++) one_call(op_one, &a);          /* 6 events: 3 kept */
    dk_timeline_stop();
    assert_int_equal(dk_timeline_save(path), DK_OK);
    load(path);
    remove(path);
    assert_int_equal(count("\"ph\": \"X\""), 3);
    assert_int_equal(count("\"dropped\": 3"), 1);
    assert_int_equal(count("\"events_per_thread\": 3"), 1);
    assert_int_equal(count("\"parent\": 0, \"depth\": 1"), 1);   /* the first call's redispatch */
    assert_int_equal(count("\"parent\": -1, \"depth\": 0"), 2);
    /* a new recording forgets the last one's events */
    assert_int_equal(dk_timeline_start(0), DK_OK);
    one_call(op_one, &a);
    dk_timeline_stop();
    assert_int_equal(dk_timeline_save(path), DK_OK);
    load(path);
    remove(path);
    assert_int_equal(count("\"ph\": \"X\""), 2);
    assert_int_equal(count("\"dropped\": 0"), 1);
    dk_registry_destroy(r);
}

/* Threads recording at once, each into its own buffer: every event kept,
   on its own thread, none dropped (ThreadSanitizer: no race between them
   or with the list their first events push on). */
#define AT_ONCE_THREADS 3
#define AT_ONCE_CALLS 200
static void *calls_at_once(void *arg) {
    tensor x = with_autograd(1);
    int i;
    (void)arg;
    for (i = 0; i < AT_ONCE_CALLS; i++) one_call(op_one, &x);   /* 2 events each */
    return NULL;
}
static void test_timeline_threads_at_once(void **state) {
    dk_registry *r = setup();
    pthread_t th[AT_ONCE_THREADS];
    char want[64];
    int i;
    (void)state;
    temp_path("threads");
    assert_int_equal(dk_timeline_start(0), DK_OK);
    for (i = 0; i < AT_ONCE_THREADS; i++) assert_int_equal(pthread_create(&th[i], NULL, calls_at_once, NULL), 0);
    calls_at_once(NULL);
    for (i = 0; i < AT_ONCE_THREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    dk_timeline_stop();
    assert_int_equal(dk_timeline_save(path), DK_OK);
    load(path);
    remove(path);
    assert_int_equal(count("\"ph\": \"X\""), 2 * AT_ONCE_CALLS * (AT_ONCE_THREADS + 1));
    assert_int_equal(count("\"name\": \"thread_name\""), AT_ONCE_THREADS + 1);
    assert_int_equal(count("\"cat\": \"redispatch\""), AT_ONCE_CALLS * (AT_ONCE_THREADS + 1));
    snprintf(want, sizeof want, "\"dropped\": 0, \"events\": %d}", 2 * AT_ONCE_CALLS * (AT_ONCE_THREADS + 1));
    assert_int_equal(count(want), 1);
    dk_registry_destroy(r);
}

/* Bad arguments: a clear status and message, nothing written. */
static void test_timeline_save_bad_arguments(void **state) {
    (void)state;
    assert_int_equal(dk_timeline_save(NULL), DK_ERR_NULL);
    assert_non_null(strstr(dk_last_error(), "NULL path"));
    assert_int_equal(dk_timeline_save("no-such-directory/x/timeline.json"), DK_ERR_BAD_ARGUMENT);
    assert_non_null(strstr(dk_last_error(), "cannot write no-such-directory/x/timeline.json"));
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_timeline_records_calls_nested, remove_temp),
        cmocka_unit_test_teardown(test_timeline_cap_drops_and_says_so, remove_temp),
        cmocka_unit_test_teardown(test_timeline_threads_at_once, remove_temp),
        cmocka_unit_test(test_timeline_save_bad_arguments),
    };
    out_path = argc > 1 ? argv[1] : NULL;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
