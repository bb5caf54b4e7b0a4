/* make: variants=epochs tsan=plain,epochs */
/* Quiescent points, synchronize, offline threads, and the places where a
   thread must not declare one (Note [Reclamation]). Built by `make test` in
   both modes (default: per-thread quiescent points; -DDK_CALL_EPOCHS), plain,
   under ASan+UBSan and under ThreadSanitizer. Every count is fixed and
   every assertion holds whatever the scheduling; a hang (a wait that
   should not wait) is turned into a failure by alarm(). */
#define _POSIX_C_SOURCE 200809L
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
#include <unistd.h>
#include <cmocka.h>

#ifndef CHURN_CYCLES
#define CHURN_CYCLES 200000   /* impl + deregister cycles beside two calling threads (make soak: 10^6) */
#endif
#define QS_EVERY 10000        /* calls between two quiescent points of a calling thread */
#define SYNC_EVERY 1000       /* writer cycles between two synchronizes */

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
static void wait_for(const int *flag) { while (!LOAD(flag)) sched_yield(); }

typedef struct tensor { dk_keyset ks; int v; } tensor;
DK_DECLARE_OP(unary, int, x.ks, (tensor, x))

static tensor cpu(int v) { tensor t; t.ks = dk_ks_from_key(DK_CPU); t.v = v; return t; }
static int k_value(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)ks; (void)x;
    return *(const int *)k->user_data;
}
static dk_keyset tensor_ks(const void *t, void *ud) { (void)ud; return ((const tensor *)t)->ks; }

/* The registry's memory, counted through its allocator hooks (atomics: the
   writer allocates, every quiescent point may free). */
typedef struct counter { size_t live, peak; } counter;
static void *counting_alloc(size_t n, void *ud) {
    counter *c = (counter *)ud;
    size_t *p = (size_t *)malloc(n + 16), live;
    if (!p) return NULL;
    p[0] = n;
    live = __atomic_add_fetch(&c->live, n, __ATOMIC_RELAXED);
    if (live > __atomic_load_n(&c->peak, __ATOMIC_RELAXED)) __atomic_store_n(&c->peak, live, __ATOMIC_RELAXED);
    return (char *)p + 16;
}
static void counting_free(void *q, void *ud) {
    counter *c = (counter *)ud;
    size_t *p = (size_t *)((char *)q - 16);
    __atomic_sub_fetch(&c->live, p[0], __ATOMIC_RELAXED);
    free(p);
}

static int warnings;
static char warning_text[600];
static void count_warnings(dk_log_level level, dk_log_item item, const char *m, void *ud) {
    (void)level; (void)ud;
    if (item != DK_LOG_RETIRED_MEMORY) return;
    warnings++;
    snprintf(warning_text, sizeof warning_text, "%s", m);
}
static dk_registry *new_registry(counter *c, size_t warn_bytes) {
    dk_registry_desc d;
    dk_registry *r;
    memset(&d, 0, sizeof d);
    if (c) {
        memset(c, 0, sizeof *c);
        d.alloc = counting_alloc;
        d.free = counting_free;
        d.alloc_user_data = c;
    }
    d.logger.func = count_warnings;
    d.tensor_keyset = tensor_ks;
    d.retired_warn_bytes = warn_bytes;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    return r;
}

/* ---- memory stays bounded while threads never stop calling ------------------------ */

static const dk_operator *churn_op;
static int churn_stop;
static const int value_math = 7, value_cpu = 1;
typedef struct caller_result { long calls, wrong, quiescent; } caller_result;

static void *churn_caller(void *arg) {
    caller_result *res = (caller_result *)arg;
    dk_registry *r = churn_op->registry;
    assert_int_equal(dk_thread_online(), DK_OK);
    do {
        int v = unary_call(churn_op, cpu(0));
        res->wrong += v != value_cpu && v != value_math;
        if (++res->calls % QS_EVERY == 0) {
            assert_int_equal(dk_registry_reclaim(r), DK_OK);
            res->quiescent++;
        }
    } while (!LOAD(&churn_stop) || res->quiescent == 0);
    assert_int_equal(dk_thread_offline(), DK_OK);
    return NULL;
}

/* Two threads call without pause and declare a quiescent point every
   10,000 calls; a writer replaces the CPU kernel CHURN_CYCLES times and
   synchronizes every 1,000 cycles (it waits for the callers' next
   quiescent points, never for a moment where both are idle). The
   registry's bytes after each synchronize stay within 2x of what they
   were after the first 1,000 cycles. */
static void test_memory_bounded_while_threads_call(void **state) {
    counter c;
    dk_registry *r = new_registry(&c, 0);
    dk_registration *def, *math, *h;
    caller_result res[2];
    pthread_t t[2];
    size_t after_first = 0, worst = 0;
    int i;
    (void)state;
    memset(res, 0, sizeof res);
    STORE(&churn_stop, 0);
    assert_int_equal(dk_def(r, "q::churn(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(r, "q::churn", DK_CompositeImplicitAutograd,
                             dk_unboxed(DK_FN(k_value), (void *)&value_math), &math), DK_OK);
    churn_op = dk_op_lookup(r, "q::churn");
    for (i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, churn_caller, &res[i]), 0);
    for (i = 1; i <= CHURN_CYCLES; i++) {
        assert_int_equal(dk_impl(r, "q::churn", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&value_cpu), &h), DK_OK);
        assert_int_equal(dk_deregister(h), DK_OK);
        if (i % SYNC_EVERY == 0) {
            size_t live;
            assert_int_equal(dk_registry_synchronize(r), DK_OK);
            live = LOAD(&c.live);
            if (i == SYNC_EVERY) after_first = live;
            if (live > worst) worst = live;
        }
    }
    STORE(&churn_stop, 1);
    for (i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("  %d impl/deregister cycles beside %ld + %ld calls (%ld + %ld quiescent points): %lu bytes after "
           "1,000 cycles, at most %lu after a synchronize, peak %lu; %ld wrong results\n",
           CHURN_CYCLES, res[0].calls, res[1].calls, res[0].quiescent, res[1].quiescent,
           (unsigned long)after_first, (unsigned long)worst, (unsigned long)LOAD(&c.peak), res[0].wrong + res[1].wrong);
    assert_int_equal(res[0].wrong + res[1].wrong, 0);
    assert_true(worst <= 2 * after_first);
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    assert_int_equal(dk_thread_offline(), DK_OK);   /* the reclaim made this thread take part */
    dk_registry_destroy(r);
    assert_int_equal(LOAD(&c.live), 0);
}

/* ---- who is waited for ------------------------------------------------------------ */

static int parked_offline, parked_release;
static void *park_offline(void *arg) {
    (void)arg;
    assert_int_equal(dk_thread_online(), DK_OK);
    assert_int_equal(unary_call(churn_op, cpu(0)), value_math);
    assert_int_equal(dk_thread_offline(), DK_OK);
    STORE(&parked_offline, 1);
    wait_for(&parked_release);   /* idle, offline: not waited for */
    return NULL;
}
static void *take_part_and_exit(void *arg) {
    (void)arg;
    assert_int_equal(dk_thread_online(), DK_OK);
    assert_int_equal(unary_call(churn_op, cpu(0)), value_math);
    return NULL;   /* exits without going offline */
}

/* A thread that went offline, and one that exited, are not waited for:
   synchronize returns while the first sleeps (alarm: a hang fails). */
static void test_offline_and_exited_threads_not_waited_for(void **state) {
    dk_registry *r = new_registry(NULL, 0);
    dk_registration *def, *math, *h;
    pthread_t a, b;
    (void)state;
    assert_int_equal(dk_def(r, "q::idle(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(r, "q::idle", DK_CompositeImplicitAutograd,
                             dk_unboxed(DK_FN(k_value), (void *)&value_math), &math), DK_OK);
    churn_op = dk_op_lookup(r, "q::idle");
    STORE(&parked_offline, 0);
    STORE(&parked_release, 0);
    assert_int_equal(pthread_create(&a, NULL, park_offline, NULL), 0);
    assert_int_equal(pthread_create(&b, NULL, take_part_and_exit, NULL), 0);
    pthread_join(b, NULL);
    wait_for(&parked_offline);
    assert_int_equal(dk_impl(r, "q::idle", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&value_cpu), &h), DK_OK);
    assert_int_equal(dk_deregister(h), DK_OK);
    alarm(60);
    assert_int_equal(dk_registry_synchronize(r), DK_OK);
    alarm(0);
    {
        dk_registry_stats st;
        dk_registry_read_stats(r, &st);
        assert_int_equal(st.retired_bytes, 0);
        assert_int_equal(st.threads_waited_for, 0);
    }
    STORE(&parked_release, 1);
    pthread_join(a, NULL);
    dk_registry_destroy(r);
}

#ifndef DK_CALL_EPOCHS
/* Synchronize returns only after every thread taking part passed a
   quiescent point: here a thread that called, then waits before its next
   one. What synchronize saw when it returned is recorded by its thread. */
static int parked_online, qs_go, qs_passed, sync_saw_passed, sync_started;
static void *late_quiescent(void *arg) {
    dk_registry *r = (dk_registry *)arg;
    assert_int_equal(dk_thread_online(), DK_OK);
    assert_int_equal(unary_call(churn_op, cpu(0)), value_math);
    STORE(&parked_online, 1);
    wait_for(&qs_go);
    STORE(&qs_passed, 1);
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    assert_int_equal(dk_thread_offline(), DK_OK);
    return NULL;
}
static void *synchronizer(void *arg) {
    STORE(&sync_started, 1);
    assert_int_equal(dk_registry_synchronize((dk_registry *)arg), DK_OK);
    STORE(&sync_saw_passed, LOAD(&qs_passed));
    return NULL;
}
static void test_synchronize_waits_for_quiescent_points(void **state) {
    dk_registry *r = new_registry(NULL, 0);
    dk_registration *def, *math, *h;
    pthread_t a, s;
    int i;
    (void)state;
    assert_int_equal(dk_def(r, "q::late(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(r, "q::late", DK_CompositeImplicitAutograd,
                             dk_unboxed(DK_FN(k_value), (void *)&value_math), &math), DK_OK);
    churn_op = dk_op_lookup(r, "q::late");
    assert_int_equal(pthread_create(&a, NULL, late_quiescent, r), 0);
    wait_for(&parked_online);
    assert_int_equal(dk_impl(r, "q::late", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&value_cpu), &h), DK_OK);
    assert_int_equal(dk_deregister(h), DK_OK);
    assert_int_equal(pthread_create(&s, NULL, synchronizer, r), 0);
    wait_for(&sync_started);
    for (i = 0; i < 1000; i++) sched_yield();
    STORE(&qs_go, 1);
    pthread_join(s, NULL);
    pthread_join(a, NULL);
    assert_int_equal(LOAD(&sync_saw_passed), 1);
    dk_registry_destroy(r);
}
#endif

/* ---- inside a call, a thread is not quiescent ----------------------------------------- */

static dk_registry *hook_reg;
static dk_status in_trace, in_error_hook, in_boxed, in_slow_boxed, sync_in_boxed;
static void trace_reclaims(const dk_operator *op, dk_keyset ks, dk_key k, int re, void *ud) {
    (void)op; (void)ks; (void)k; (void)re; (void)ud;
    in_trace = dk_registry_reclaim(hook_reg);
}
static void error_reclaims(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    (void)op; (void)ks; (void)s; (void)m; (void)ud;
    in_error_hook = dk_registry_reclaim(hook_reg);
}
static void boxed_reclaims(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks;
    in_boxed = dk_registry_reclaim(hook_reg);
    sync_in_boxed = dk_registry_synchronize(hook_reg);
    dk_stack_pop(s);
    dk_stack_push(s, dk_int(3));
}
static void fallback_reclaims(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks;
    in_slow_boxed = dk_registry_reclaim(hook_reg);
    dk_stack_pop(s);
    dk_stack_push(s, dk_int(4));
}

/* A trace hook, the call-error hook (reached from a typed call's slow
   path), a boxed kernel and a boxed fallback are inside the call: reclaim and synchronize
   refuse (they would free the records the call reads next, or wait for
   the thread itself), and the call goes on. */
static void test_no_quiescent_point_inside_calls(void **state) {
    dk_registration *def, *h, *fb;
    dk_value storage[4];
    dk_stack st;
    tensor x = cpu(1), xc = cpu(1);
    (void)state;
    hook_reg = new_registry(NULL, 0);
    assert_int_equal(dk_registry_set_call_error(hook_reg, error_reclaims, NULL), DK_OK);
    assert_int_equal(dk_def(hook_reg, "q::hooked(Tensor x) -> int", &def), DK_OK);
    assert_int_equal(dk_impl(hook_reg, "q::hooked", DK_CPU, dk_boxed(boxed_reclaims, NULL), &h), DK_OK);
    dk_stack_init(&st, storage, 4);
    dk_stack_push(&st, dk_tensor(&x));
    dk_call_boxed(dk_op_lookup(hook_reg, "q::hooked"), &st);
    assert_int_equal(in_boxed, DK_ERR_IN_CALL);
    assert_int_equal(sync_in_boxed, DK_ERR_IN_CALL);
    assert_int_equal(st.size, 1);
    assert_int_equal(st.values[0].as.i, 3);

    dk_trace_set(trace_reclaims, NULL);
    unary_call(dk_op_lookup(hook_reg, "q::hooked"), xc);   /* the boxed kernel, through the slow path */
    dk_trace_set(NULL, NULL);
    assert_int_equal(in_trace, DK_ERR_IN_CALL);
    xc.ks = dk_ks_from_key(DK_CUDA);
    assert_int_equal(unary_call(dk_op_lookup(hook_reg, "q::hooked"), xc), 0);   /* no kernel: the error hook */
    assert_int_equal(in_error_hook, DK_ERR_IN_CALL);

    x.ks = dk_ks_from_key(DK_CUDA);
    assert_int_equal(dk_fallback(hook_reg, DK_CUDA, dk_boxed(fallback_reclaims, NULL), &fb), DK_OK);
    dk_stack_init(&st, storage, 4);
    dk_stack_push(&st, dk_tensor(&x));
    dk_call_boxed(dk_op_lookup(hook_reg, "q::hooked"), &st);
    assert_int_equal(in_slow_boxed, DK_ERR_IN_CALL);
    assert_int_equal(st.values[0].as.i, 4);
    assert_int_equal(dk_registry_reclaim(hook_reg), DK_OK);   /* outside: fine (and this thread takes part) */
    assert_int_equal(dk_thread_offline(), DK_OK);             /* ... until now: later tests do not wait for it */
    dk_registry_destroy(hook_reg);
}

/* ---- longjmp out of a kernel ------------------------------------------------------------ */

static jmp_buf escape;
static void boxed_escapes(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks; (void)s;
    longjmp(escape, 1);
}
static void *synchronize_thread(void *arg) {
    assert_int_equal(dk_registry_synchronize((dk_registry *)arg), DK_OK);
    return NULL;
}

/* A thread that leaves a kernel by longjmp is still inside the call as far
   as the library knows (its reclaim refuses; with call epochs others would
   wait for it forever); dk_thread_offline at the landing point says it is
   outside every call again. */
static void test_longjmp_out_of_a_kernel(void **state) {
    dk_registry *r = new_registry(NULL, 0);
    dk_registration *def, *h, *h2;
    dk_value storage[4];
    dk_stack st;
    tensor x = cpu(1);
    pthread_t t;
    (void)state;
    assert_int_equal(dk_def(r, "q::escape(Tensor x) -> int", &def), DK_OK);
    assert_int_equal(dk_impl(r, "q::escape", DK_CPU, dk_boxed(boxed_escapes, NULL), &h), DK_OK);
    dk_stack_init(&st, storage, 4);
    dk_stack_push(&st, dk_tensor(&x));
    if (setjmp(escape) == 0) {
        dk_call_boxed(dk_op_lookup(r, "q::escape"), &st);
        fail_msg("the kernel returned");
    }
    assert_int_equal(dk_registry_reclaim(r), DK_ERR_IN_CALL);   /* the call never ended */
    assert_int_equal(dk_thread_offline(), DK_OK);               /* the landing point */
    assert_int_equal(dk_thread_online(), DK_OK);
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    assert_int_equal(dk_impl(r, "q::escape", DK_CUDA, dk_boxed(boxed_escapes, NULL), &h2), DK_OK);
    assert_int_equal(dk_deregister(h2), DK_OK);
    assert_int_equal(dk_thread_offline(), DK_OK);   /* it is about to block in pthread_join */
    alarm(60);   /* another thread's synchronize does not wait for the escaped call */
    assert_int_equal(pthread_create(&t, NULL, synchronize_thread, r), 0);
    pthread_join(t, NULL);
    alarm(0);
    dk_registry_destroy(r);
}

/* ---- statistics and the warning ------------------------------------------------------------ */

static int holder_ready, holder_release;
static unsigned holder_id;
static const dk_operator *holder_op;
#ifdef DK_CALL_EPOCHS
/* With call epochs a thread holds memory while it is inside a call. */
static int k_holds(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k; (void)ks; (void)x;
    STORE(&holder_id, dk_thread_id());
    STORE(&holder_ready, 1);
    wait_for(&holder_release);
    return 0;
}
static void *holder(void *arg) {
    (void)arg;
    unary_call(holder_op, cpu(0));
    return NULL;
}
#define k_holds_or_value k_holds
#else
#define k_holds_or_value k_value
/* Without, while it takes part and does not pass a quiescent point. */
static void *holder(void *arg) {
    (void)arg;
    assert_int_equal(dk_thread_online(), DK_OK);
    unary_call(holder_op, cpu(0));
    STORE(&holder_id, dk_thread_id());
    STORE(&holder_ready, 1);
    wait_for(&holder_release);
    assert_int_equal(dk_thread_offline(), DK_OK);
    return NULL;
}
#endif
/* The holder lets go and ends; then a reclaim frees everything retired. */
static void release_holder_and_reclaim(dk_registry *r, pthread_t t, dk_registry_stats *st) {
    STORE(&holder_release, 1);
    pthread_join(t, NULL);
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    dk_registry_read_stats(r, st);
    assert_int_equal(st->retired_bytes, 0);
}

/* A thread that holds memory back is named by the statistics, and the
   logger warns once (not once per change) past retired_warn_bytes. */
static void test_stats_name_the_thread_and_warn_once(void **state) {
    dk_registry *r = new_registry(NULL, 64 * 1024);
    dk_registration *def, *math, *h;
    dk_registry_stats st;
    pthread_t t;
    char id_text[32];
    int i;
    (void)state;
    warnings = 0;
    assert_int_equal(dk_def(r, "q::held(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(r, "q::held", DK_CompositeImplicitAutograd,
                             dk_unboxed(DK_FN(k_holds_or_value), (void *)&value_math), &math), DK_OK);
    holder_op = dk_op_lookup(r, "q::held");
    assert_int_equal(pthread_create(&t, NULL, holder, NULL), 0);
    wait_for(&holder_ready);
    assert_true(LOAD(&holder_id) > 0);
    for (i = 0; i < 2000; i++) {
        assert_int_equal(dk_impl(r, "q::held", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&value_cpu), &h), DK_OK);
        assert_int_equal(dk_deregister(h), DK_OK);
#ifndef DK_CALL_EPOCHS   /* (with call epochs reclaim would wait for the holder's call) */
        if (i % 100 == 0) assert_int_equal(dk_registry_reclaim(r), DK_OK);
#endif
    }
    dk_registry_read_stats(r, &st);
    printf("  retired %lu bytes in %lu blocks, %u threads, %u waited for (first: %u); warning: %s\n",
           (unsigned long)st.retired_bytes, (unsigned long)st.retired_blocks, st.threads, st.threads_waited_for,
           st.waited_for[0], warning_text);
    assert_true(st.retired_bytes > 64 * 1024);
    assert_true(st.retired_blocks > 0);
    assert_int_equal(st.threads_waited_for, 1);
    assert_int_equal(st.waited_for[0], LOAD(&holder_id));
    assert_int_equal(warnings, 1);
    snprintf(id_text, sizeof id_text, "thread %u", LOAD(&holder_id));
    assert_non_null(strstr(warning_text, id_text));
    release_holder_and_reclaim(r, t, &st);
    assert_int_equal(st.threads_waited_for, 0);
    assert_int_equal(warnings, 1);
    assert_int_equal(dk_thread_offline(), DK_OK);
    dk_registry_destroy(r);
}

#ifndef DK_CALL_EPOCHS
/* A thread registering alone that never reclaims: the warning says that no
   thread holds the memory and that a dk_registry_reclaim frees it (not
   "0 of 0 threads"), and the reclaim does. */
static void test_warning_when_no_thread_holds_it(void **state) {
    dk_registry *r = new_registry(NULL, 64 * 1024);
    dk_registration *h;
    dk_registry_stats st;
    int i;
    (void)state;
    warnings = 0;
    warning_text[0] = '\0';
    assert_int_equal(dk_thread_offline(), DK_OK);   /* no thread takes part */
    assert_int_equal(dk_def(r, "q::alone(Tensor x) -> Tensor", &h), DK_OK);
    for (i = 0; i < 200; i++) {
        assert_int_equal(dk_impl(r, "q::alone", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&value_cpu), &h), DK_OK);
        assert_int_equal(dk_deregister(h), DK_OK);
    }
    dk_registry_read_stats(r, &st);
    assert_true(st.retired_bytes > 64 * 1024);
    assert_int_equal(st.threads_waited_for, 0);
    assert_int_equal(warnings, 1);
    printf("  warning: %s\n", warning_text);
    assert_non_null(strstr(warning_text, "none of the 0 threads taking part holds it"));
    assert_non_null(strstr(warning_text, "dk_registry_reclaim"));
    assert_null(strstr(warning_text, "0 of 0"));
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    dk_registry_read_stats(r, &st);
    assert_int_equal(st.retired_bytes, 0);
    assert_int_equal(dk_thread_offline(), DK_OK);
    dk_registry_destroy(r);
}
#endif

/* ---- what stays retired, one grace period at a time (default build) -------------------------
   A thread that takes part and has not passed its quiescent point holds
   back everything retired since its last one, however often others
   reclaim; once it passes one, what was retired before that point is
   freed and what was retired after it still waits. The pacer thread is
   parked between steps (it reads nothing), so every count is fixed: the
   retired bytes (dk_registry_read_stats) and, independently, the registry's
   live bytes counted through its allocator hooks. */
#ifndef DK_CALL_EPOCHS
static int pacer_step, pacer_done;
static void *pacer(void *arg) {
    int step;
    (void)arg;
    assert_int_equal(dk_thread_online(), DK_OK);   /* takes part: a quiescent point */
    STORE(&pacer_done, 1);
    for (step = 2; step <= 3; step++) {
        while (LOAD(&pacer_step) < step) sched_yield();
        assert_int_equal(dk_thread_online(), DK_OK);   /* its next quiescent point */
        STORE(&pacer_done, step);
    }
    while (LOAD(&pacer_step) < 4) sched_yield();
    assert_int_equal(dk_thread_offline(), DK_OK);
    return NULL;
}
/* Retires one kernel record and one table (a CPU kernel registered and removed). */
static void retire_some(dk_registry *r) {
    dk_registration *h;
    assert_int_equal(dk_impl(r, "q::paced", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&value_cpu), &h), DK_OK);
    assert_int_equal(dk_deregister(h), DK_OK);
}
static void reclaim_and_expect(dk_registry *r, const counter *c, size_t retired, size_t live) {
    dk_registry_stats st;
    int i;
    for (i = 0; i < 3; i++) {   /* however often: the same */
        assert_int_equal(dk_registry_reclaim(r), DK_OK);
        dk_registry_read_stats(r, &st);
        assert_int_equal(st.retired_bytes, retired);
        assert_int_equal(LOAD(&c->live), live);
    }
}
static void test_retired_memory_waits_for_each_thread_that_takes_part(void **state) {
    counter c;
    dk_registry *r = new_registry(&c, 0);
    dk_registration *def;
    dk_registry_stats st;
    size_t base, live_a, retired_a, live_ab, retired_b;
    pthread_t t;
    (void)state;
    assert_int_equal(dk_thread_online(), DK_OK);
    assert_int_equal(dk_def(r, "q::paced(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    dk_registry_read_stats(r, &st);
    assert_int_equal(st.retired_bytes, 0);
    base = LOAD(&c.live);
    STORE(&pacer_step, 1);
    STORE(&pacer_done, 0);
    assert_int_equal(pthread_create(&t, NULL, pacer, NULL), 0);
    while (LOAD(&pacer_done) < 1) sched_yield();
    /* A: retired after the pacer's last quiescent point: held */
    retire_some(r);
    dk_registry_read_stats(r, &st);
    retired_a = st.retired_bytes;
    live_a = LOAD(&c.live);
    assert_true(retired_a > 0);
    assert_int_equal(live_a, base + retired_a);   /* what is retired is still allocated */
    reclaim_and_expect(r, &c, retired_a, live_a);
    /* the pacer passes one quiescent point; then B is retired */
    STORE(&pacer_step, 2);
    while (LOAD(&pacer_done) < 2) sched_yield();
    retire_some(r);
    dk_registry_read_stats(r, &st);
    retired_b = st.retired_bytes - retired_a;
    live_ab = LOAD(&c.live);
    assert_int_equal(live_ab, live_a + retired_b);
    /* A was retired before that point: freed; B after it: held */
    reclaim_and_expect(r, &c, retired_b, live_ab - retired_a);
    STORE(&pacer_step, 3);
    while (LOAD(&pacer_done) < 3) sched_yield();
    reclaim_and_expect(r, &c, 0, base);
    STORE(&pacer_step, 4);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(dk_thread_offline(), DK_OK);
    dk_registry_destroy(r);
    assert_int_equal(c.live, 0);
}
#endif

/* ---- an operator's slot waits as long as its memory ------------------------------------------- */

/* Operators live in slabs (dispatch.h: dk__slab); a removed operator's id
   is taken again at once, its slot only after the grace period that frees
   its memory: while a thread holds that period, the handles of removed
   operators stay distinct and readable. Once the holder has passed, the
   slots are taken again (the lowest first) and slabs left empty are freed:
   every round of 300 defs and removals ends with the registry's bytes as
   they were before it (memory bounded over many cycles). */
#define SLOT_OPS 300
static void test_removed_operator_slots_wait_for_their_grace_period(void **state) {
    counter c;
    dk_registry *r = new_registry(&c, 0);
    dk_registration *def, *math, *h;
    static const dk_operator *gone[SLOT_OPS];
    dk_registry_stats st;
    size_t base;
    char schema[64], name[32];
    pthread_t t;
    int round, i, j;
    (void)state;
    assert_int_equal(dk_def(r, "q::keep(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(r, "q::keep", DK_CompositeImplicitAutograd,
                             dk_unboxed(DK_FN(k_holds_or_value), (void *)&value_math), &math), DK_OK);
    holder_op = dk_op_lookup(r, "q::keep");
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    dk_registry_read_stats(r, &st);
    base = st.live_bytes;
    for (round = 0; round < 3; round++) {
        STORE(&holder_ready, 0);
        STORE(&holder_release, 0);
        assert_int_equal(pthread_create(&t, NULL, holder, NULL), 0);
        wait_for(&holder_ready);
        for (i = 0; i < SLOT_OPS; i++) {
            snprintf(name, sizeof name, "slot::op%d", i);
            snprintf(schema, sizeof schema, "%s(Tensor x) -> Tensor", name);
            assert_int_equal(dk_def(r, schema, &h), DK_OK);
            gone[i] = dk_op_lookup(r, name);
            assert_non_null(gone[i]);
            assert_int_equal(dk_deregister(h), DK_OK);
            assert_null(dk_op_lookup(r, name));
        }
#ifndef DK_CALL_EPOCHS   /* (with call epochs reclaim would wait for the holder's call) */
        assert_int_equal(dk_registry_reclaim(r), DK_OK);   /* frees nothing: the holder has not passed */
#endif
        for (i = 0; i < SLOT_OPS; i++) {
            snprintf(name, sizeof name, "slot::op%d", i);
            assert_string_equal(gone[i]->name, name);
            assert_ptr_equal(gone[i]->registry, r);
            assert_int_equal(gone[i]->id, holder_op->id + 1);   /* the id, free again at once */
            for (j = 0; j < i; j++) assert_true(gone[j] != gone[i]);
            assert_true(gone[i] != holder_op);
        }
        release_holder_and_reclaim(r, t, &st);
        assert_int_equal(st.operators, 1);
        assert_int_equal(st.live_bytes, base);   /* the slabs the removed operators filled are freed */
        /* the slots are free again: a new operator takes the lowest, the first removed one's */
        assert_int_equal(dk_def(r, "slot::again(Tensor x) -> Tensor", &h), DK_OK);
        assert_ptr_equal(dk_op_lookup(r, "slot::again"), gone[0]);
        assert_string_equal(gone[0]->name, "slot::again");
#ifndef DK_CALL_EPOCHS   /* (k_holds returns 0) */
        assert_int_equal(unary_call(holder_op, cpu(0)), value_math);
#endif
        assert_int_equal(dk_deregister(h), DK_OK);
        assert_int_equal(dk_registry_reclaim(r), DK_OK);
        dk_registry_read_stats(r, &st);
        assert_int_equal(st.live_bytes, base);
    }
    assert_int_equal(dk_thread_offline(), DK_OK);
    dk_registry_destroy(r);
    assert_int_equal(c.live, 0);
}

/* Under AddressSanitizer a slot is poisoned from the moment its operator's
   memory is freed until a new operator takes it: a handle kept past its
   reclaim is reported, not read as the next operator. While it waits for
   its grace period it stays readable. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#define POISONED(p, n) (__asan_region_is_poisoned((void *)(uintptr_t)(p), (n)) != NULL)
#else
#define POISONED(p, n) 0
#endif
static void test_freed_operator_slots_are_poisoned(void **state) {
    counter c;
    dk_registry *r = new_registry(&c, 0);
    dk_registration *keep, *h, *again;
    const dk_operator *stale;
    int poisoned_expected = 0;
    (void)state;
#ifdef TEST_ASAN
    poisoned_expected = 1;
#endif
    assert_int_equal(dk_def(r, "p::keep(Tensor x) -> Tensor", &keep), DK_OK);   /* the slab stays */
    assert_int_equal(dk_def(r, "p::gone(Tensor x) -> Tensor", &h), DK_OK);
    stale = dk_op_lookup(r, "p::gone");
    assert_false(POISONED(stale, sizeof *stale));
    assert_int_equal(dk_deregister(h), DK_OK);
    assert_false(POISONED(stale, sizeof *stale));   /* retired, not freed: still readable */
    assert_string_equal(stale->name, "p::gone");
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    assert_int_equal(POISONED(stale, sizeof *stale), poisoned_expected);
    assert_int_equal(dk_def(r, "p::again(Tensor x) -> Tensor", &again), DK_OK);
    assert_ptr_equal(dk_op_lookup(r, "p::again"), stale);   /* the slot, taken again */
    assert_false(POISONED(stale, sizeof *stale));
    assert_string_equal(stale->name, "p::again");
    assert_int_equal(dk_deregister(again), DK_OK);
    assert_int_equal(dk_deregister(keep), DK_OK);
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    assert_int_equal(dk_thread_offline(), DK_OK);
    dk_registry_destroy(r);
    assert_int_equal(c.live, 0);
}

/* ---- a block destructor that waits says so ------------------------------------------
   A static library block's destructor (what dlclose runs: called here
   directly) closes its library and waits for the threads that may run
   its kernels. A thread is inside the block's kernel, which returns only
   once the registry's logger has heard DK_LOG_UNLOAD_WAITING: the warning
   comes (after about a second), names that thread and the two-step
   unload, and the destructor goes on waiting until the thread is out
   (then passes its quiescent point). The alarm turns a missing warning
   (a hang) into a failure. */
static int unload_warnings, uw_inside;
static unsigned uw_thread;
static char unload_text[700];
static void unload_logger(dk_log_level level, dk_log_item item, const char *m, void *ud) {
    (void)ud;
    if (item != DK_LOG_UNLOAD_WAITING) return;
    assert_int_equal(level, DK_LOG_WARNING);
    snprintf(unload_text, sizeof unload_text, "%s", m);
    STORE(&unload_warnings, LOAD(&unload_warnings) + 1);
}
static int k_waits_for_warning(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k; (void)ks; (void)x;
    STORE(&uw_thread, dk_thread_id());
    STORE(&uw_inside, 1);
    wait_for(&unload_warnings);
    return 4;
}
static void uw_block(dk_library *m) {
    assert_int_equal(dk_library_impl(m, "uw::op", DK_Undefined, dk_unboxed(DK_FN(k_waits_for_warning), NULL)),
                     DK_OK);
}
static void *uw_caller(void *arg) {
    int *result = (int *)arg;
    assert_int_equal(dk_thread_attach(), DK_OK);
    *result = unary_call(dk_op_lookup(dk_registry_default(), "uw::op"), cpu(0));
    assert_int_equal(dk_thread_quiescent(), DK_OK);
    assert_int_equal(dk_thread_offline(), DK_OK);
    return NULL;
}
static void test_block_destructor_warns_while_it_waits(void **state) {
    dk_registry_desc d;
    dk_registration *def;
    dk_library *blk = NULL;
    pthread_t t;
    char thread_name[32];
    int result = 0;
    (void)state;
    memset(&d, 0, sizeof d);
    d.logger.func = unload_logger;
    assert_int_equal(dk_registry_default_configure(&d), DK_OK);
    assert_int_equal(dk_def(dk_registry_default(), "uw::op(Tensor x) -> Tensor", &def), DK_OK);
    assert_int_equal(dk__library_static(DK_LIBRARY_KIND_IMPL, "uw", DK_CPU, uw_block, __FILE__, __LINE__, &blk,
                                        DK_CONFIG_SIGNATURE), DK_OK);
    assert_non_null(blk);
    assert_int_equal(pthread_create(&t, NULL, uw_caller, &result), 0);
    wait_for(&uw_inside);
    alarm(30);
    dk__library_static_close(&blk);   /* dlclose's part: waits, warns, waits on */
    alarm(0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(result, 4);
    assert_int_equal(LOAD(&unload_warnings), 1);
    printf("  %s\n", unload_text);
    snprintf(thread_name, sizeof thread_name, "for thread %u ", LOAD(&uw_thread));
    assert_non_null(strstr(unload_text, thread_name));
    assert_non_null(strstr(unload_text, "dk_library_unload"));
    assert_non_null(strstr(unload_text, "dlclose"));
    dk_call_enter();   /* a snapshot is read inside a call (DK_DEBUG_READS) */
    assert_null(dk_op_table_entry(dk_op_table_of(dk_op_lookup(dk_registry_default(), "uw::op")),
                                  dk_key_slot(DK_CPU))->fn);   /* the block's kernel is gone */
    dk_call_exit();
    assert_int_equal(dk_deregister(def), DK_OK);
    dk_registry_destroy(dk_registry_default());
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_bounded_while_threads_call),
        cmocka_unit_test(test_offline_and_exited_threads_not_waited_for),
#ifndef DK_CALL_EPOCHS
        cmocka_unit_test(test_synchronize_waits_for_quiescent_points),
#endif
        cmocka_unit_test(test_no_quiescent_point_inside_calls),
        cmocka_unit_test(test_longjmp_out_of_a_kernel),
        cmocka_unit_test(test_stats_name_the_thread_and_warn_once),
#ifndef DK_CALL_EPOCHS
        cmocka_unit_test(test_warning_when_no_thread_holds_it),
        cmocka_unit_test(test_retired_memory_waits_for_each_thread_that_takes_part),
#endif
        cmocka_unit_test(test_removed_operator_slots_wait_for_their_grace_period),
        cmocka_unit_test(test_freed_operator_slots_are_poisoned),
        cmocka_unit_test(test_block_destructor_warns_while_it_waits),
    };
#ifdef DK_CALL_EPOCHS
    return cmocka_run_group_tests_name("quiescent points (call epochs)", tests, NULL, NULL);
#else
    return cmocka_run_group_tests_name("quiescent points (default)", tests, NULL, NULL);
#endif
}
