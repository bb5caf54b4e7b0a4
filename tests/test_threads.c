/* make: variants=epochs tsan=plain,epochs */
/* Threads beside a registry, one property per test (the race suite, with
   its outcome counts, is test_races.c): each call runs a kernel that was
   registered at some moment during that call (a logical clock, checked
   call by call; readers take no lock); an explanation outlives its
   operator; explain and a boxed call's keyset stay whole while other
   threads churn; fork while another thread holds a registry's lock or the
   thread states' lock or is inside a late call; the default registry out
   of memory. Both modes, and under ThreadSanitizer (make tsan). */
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
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(probe, int, t.ks, (tensor, t))

#define MAX_KERNELS 4096
#define READERS 3

/* Logical clock: ticked by the writer around every change. */
static uint64_t clock_now;
static uint64_t registered_at[MAX_KERNELS], deregistered_at[MAX_KERNELS];
static int ids[MAX_KERNELS];
static int writer_done;
static long calls_checked[READERS], violations, lookups_failed;
static dk_registry *reg;
static const dk_operator *op;

static uint64_t tick(void) { return __atomic_add_fetch(&clock_now, 1, __ATOMIC_SEQ_CST); }
static uint64_t now(void) { return __atomic_load_n(&clock_now, __ATOMIC_SEQ_CST); }

static int probe_impl(const dk_kernel *k, dk_keyset ks, tensor t) {
    (void)ks; (void)t;
    return *(const int *)k->user_data;
}
static void probe_fallback(const dk_kernel *k, const dk_operator *o, dk_keyset ks, dk_stack *stack) {
    (void)o; (void)ks;
    ((probe_args *)stack->unboxed_args)->result = *(const int *)k->user_data;
}
static void silent(dk_log_level level, dk_log_item item, const char *m, void *ud) { (void)level; (void)item; (void)m; (void)ud; }

static void *writer(void *arg) {
    dk_registration *live[8] = { 0 };
    int live_id[8] = { 0 };
    int next = 1, step;
    uint64_t x = 0x2545F4914F6CDD1DULL;
    (void)arg;
    for (step = 0; step < 3000 && next < MAX_KERNELS; step++) {
        int slot;
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        slot = (int)(x % 8);
        if (live[slot]) {
            int id = live_id[slot];
            assert_int_equal(dk_deregister(live[slot]), DK_OK);
            __atomic_store_n(&deregistered_at[id], tick(), __ATOMIC_SEQ_CST);
            live[slot] = NULL;
        } else {
            int id = next++;
            dk_status s;
            __atomic_store_n(&registered_at[id], tick(), __ATOMIC_SEQ_CST);
            if (slot < 5) /* kernels at CPU / Autograd / CompositeImplicitAutograd / AutogradCPU */
                s = dk_impl(reg, "mt::probe", slot < 2 ? DK_CPU : slot == 2 ? DK_Autograd : slot == 3 ?
                            DK_CompositeImplicitAutograd : DK_AutogradCPU, dk_unboxed(DK_FN(probe_impl), &ids[id]),
                            &live[slot]);
            else if (slot < 7) /* fallbacks */
                s = dk_fallback(reg, slot == 5 ? DK_Tracer : DK_AutogradCPU, dk_boxed(probe_fallback, &ids[id]),
                                &live[slot]);
            else { /* more operators: the name index grows under the readers */
                char name[64];
                snprintf(name, sizeof name, "mt::extra%d(Tensor a) -> Tensor", id);
                s = dk_def(reg, name, &live[slot]);
                live[slot] = NULL;
            }
            if (s != DK_OK) live[slot] = NULL; /* the AutogradCPU fallback slot may be taken */
            live_id[slot] = id;
        }
    }
    __atomic_store_n(&writer_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *reader(void *arg) {
    int me = (int)(size_t)arg;
    tensor t;
    t.ks = dk_ks_or(dk_ks_from_key(DK_CPU), dk_ks_from_key(DK_AutogradCPU));
    while (!__atomic_load_n(&writer_done, __ATOMIC_SEQ_CST)) {
        uint64_t t0, t1;
        int id;
        dk_guard g = dk_guard_include(me == 0 ? dk_ks_from_key(DK_Tracer) : DK_KS_EMPTY);
        t0 = now();
        id = probe_call(op, t);
        t1 = now();
        dk_guard_pop(g);
        (void)dk_last_call_status(); /* no kernel at all is a valid outcome */
        if (id) {
            uint64_t reg_at = __atomic_load_n(&registered_at[id], __ATOMIC_SEQ_CST);
            uint64_t dereg_at = __atomic_load_n(&deregistered_at[id], __ATOMIC_SEQ_CST);
            if (reg_at == 0 || reg_at > t1 || (dereg_at != 0 && dereg_at <= t0))
                __atomic_add_fetch(&violations, 1, __ATOMIC_SEQ_CST);
            calls_checked[me]++;
        }
        if (dk_op_lookup(reg, "mt::probe") != op) __atomic_add_fetch(&lookups_failed, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static void test_calls_during_registration(void **state) {
    pthread_t w, r[READERS];
    dk_registration *d;
    dk_registry_desc desc;
    int i;
    long total = 0;
    (void)state;
    memset(&desc, 0, sizeof desc);
    desc.logger.func = silent;
    for (i = 0; i < MAX_KERNELS; i++) ids[i] = i;
    assert_int_equal(dk_registry_create(&desc, &reg), DK_OK);
    assert_int_equal(dk_def(reg, "mt::probe(Tensor a) -> Tensor", &d), DK_OK);
    op = dk_op_lookup(reg, "mt::probe");
    dk_registry_set_call_error(reg, dk_call_error_report, NULL);
    for (i = 0; i < READERS; i++) assert_int_equal(pthread_create(&r[i], NULL, reader, (void *)(size_t)i), 0);
    assert_int_equal(pthread_create(&w, NULL, writer, NULL), 0);
    pthread_join(w, NULL);
    for (i = 0; i < READERS; i++) {
        pthread_join(r[i], NULL);
        total += calls_checked[i];
    }
    printf("  %ld calls that ran a kernel checked against registration times, %ld violations\n", total, violations);
    assert_int_equal(violations, 0);
    assert_int_equal(lookups_failed, 0);
    assert_true(total > 0);
    dk_registry_destroy(reg);
}

/* ---- an explanation owns what it prints ---------------------------------------
   dk_explain_to_string after everything the explanation came from is gone:
   the kernel deregistered, the def too (the operator removed), and the
   memory reclaimed. The text is the one printed before, and (under
   AddressSanitizer, make sanitize) nothing freed is read. Both modes. */
static int ex_kernel(const dk_kernel *k, dk_keyset ks, tensor t) { (void)k; (void)ks; (void)t; return 1; }

static void test_explanation_outlives_its_operator(void **state) {
    dk_registry *r;
    dk_registration *def, *impl;
    const dk_operator *o;
    dk_explanation e;
    dk_keyset args[2];
    char before[2048], after[2048];
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_def(r, "mt::explained(Tensor self, Tensor other) -> Tensor", &def), DK_OK);
    assert_int_equal(dk_impl(r, "mt::explained", DK_CPU,
                             dk_kernel_named(dk_unboxed(DK_FN(ex_kernel), NULL), "explained_cpu_kernel", NULL), &impl),
                     DK_OK);
    o = dk_op_lookup(r, "mt::explained");
    args[0] = dk_ks_from_key(DK_CPU);
    args[1] = dk_ks_from_key(DK_CPU);
    assert_int_equal(dk_explain_args(o, args, 2, &e), DK_OK);
    assert_true(dk_explain_to_string(o, &e, before, sizeof before) > 0);
    assert_non_null(strstr(before, "mt::explained"));
    assert_non_null(strstr(before, "explained_cpu_kernel"));
    assert_non_null(strstr(before, "other (argument 1)"));
    assert_int_equal(dk_deregister(impl), DK_OK);
    assert_int_equal(dk_deregister(def), DK_OK);   /* neither def nor kernel: the operator goes */
    assert_null(dk_op_lookup(r, "mt::explained"));
    assert_int_equal(dk_registry_reclaim(r), DK_OK);
    assert_int_equal(dk_explain_to_string(o, &e, after, sizeof after), (int)strlen(before));
    assert_string_equal(after, before);
    dk_registry_destroy(r);
    assert_int_equal(dk_explain_to_string(o, &e, after, sizeof after), (int)strlen(before));
    assert_string_equal(after, before);
}

/* ---- explain and boxed keysets under churn ------------------------------------
   Readers explain (typed and boxed) and compute boxed dispatch keysets,
   then print the explanations; a writer meanwhile swaps kernels, removes
   and restores the def and replaces the tensor_keyset hook (CPU for every
   tensor, or CUDA for every tensor). With call epochs every deregistration
   frees what no call holds: dk_explain_stack and dk_explain_args must read
   the table and the schema inside their bracket, dk_stack_dispatch_keyset
   the hooks record inside one, and the printed text must read nothing of
   the registry (AddressSanitizer: no use after free). In both modes a
   stack's tensors all go through one hooks record: an explanation or a
   keyset that mixes CPU and CUDA is counted. In the default mode nothing
   is freed until the end (no quiescent point while readers run). */
#ifndef CHURN_STEPS
#ifdef DK_CALL_EPOCHS /* every deregistration waits for the readers' calls */
#define CHURN_STEPS 400
#else
#define CHURN_STEPS 1500
#endif
#endif
#define CHURN_READERS 2
#define CHURN_LIST 16
static dk_registry *churn_reg;
static const dk_operator *churn_op;
static int churn_done;
static long churn_iterations[CHURN_READERS], churn_mixed, churn_bad_text, churn_explained;
static dk_keyset ks_cpu_only, ks_cuda_only;
static dk_keyset hook_ks(const void *t, void *ud) { (void)t; return *(const dk_keyset *)ud; }

static void *churn_writer(void *arg) {
    dk_registration *def = NULL, *impl = NULL, *next;
    dk_registry_desc d;
    int step;
    (void)arg;
    memset(&d, 0, sizeof d);
    d.logger.func = silent;
    d.tensor_keyset = hook_ks;
    for (step = 0; step < CHURN_STEPS; step++) {
        d.tensor_keyset_user_data = step % 2 ? &ks_cuda_only : &ks_cpu_only;
        assert_int_equal(dk_registry_set_hooks(churn_reg, &d), DK_OK);
        assert_int_equal(dk_impl(churn_reg, "mt::churn", step % 3 ? DK_CPU : DK_CUDA,
                                 dk_kernel_named(dk_unboxed(DK_FN(ex_kernel), NULL), "churn_kernel", NULL), &next),
                         DK_OK);
        if (impl) assert_int_equal(dk_deregister(impl), DK_OK);
        impl = next;
        if (step % 8 == 0) {   /* the def (its schema, the argument names) goes and comes back */
            if (def) assert_int_equal(dk_deregister(def), DK_OK);
            assert_int_equal(dk_def(churn_reg, "mt::churn(Tensor self, Tensor other, Tensor[] rest) -> Tensor", &def),
                             DK_OK);
        }
        if (step % 64 == 0) assert_int_equal(dk_registry_reclaim(churn_reg), DK_OK);
    }
    __atomic_store_n(&churn_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* every argument's keyset the same backend (one hooks record) */
static int one_backend(const dk_explanation *e) {
    int i;
    for (i = 1; i < e->num_args; i++)
        if (!dk_ks_is_empty(e->arg[i].ks) && !dk_ks_is_empty(e->arg[0].ks) && e->arg[i].ks.repr != e->arg[0].ks.repr)
            return 0;
    return 1;
}

static void *churn_reader(void *arg) {
    int me = (int)(size_t)arg, i;
    dk_value storage[8], items[CHURN_LIST];
    dk_stack st;
    dk_keyset args[2];
    char text[4096];
    args[0] = ks_cpu_only;
    args[1] = ks_cpu_only;
    for (i = 0; i < CHURN_LIST; i++) items[i] = dk_tensor(&items[i]);
    /* readers take part in quiescent points: the writer's reclaims free
       what they no longer hold, under them, in both modes */
    assert_int_equal(dk_thread_online(), DK_OK);
    while (!__atomic_load_n(&churn_done, __ATOMIC_SEQ_CST) || churn_iterations[me] < 200) {
        dk_explanation typed, boxed;
        dk_status s;
        dk_keyset ks;
        dk_stack_init(&st, storage, 8);
        dk_stack_push(&st, dk_tensor(&storage[0]));
        dk_stack_push(&st, dk_tensor(&storage[1]));
        dk_stack_push(&st, dk_list(items, CHURN_LIST));
        assert_int_equal(dk_explain_args(churn_op, args, 2, &typed), DK_OK);
        s = dk_explain_stack(churn_op, &st, &boxed);   /* DK_ERR_NOT_FOUND while the def is away */
        ks = dk_stack_dispatch_keyset(churn_op, &st);
        if (ks.repr != ks_cpu_only.repr && ks.repr != ks_cuda_only.repr && !dk_ks_is_empty(ks))
            __atomic_add_fetch(&churn_mixed, 1, __ATOMIC_SEQ_CST);
        /* printed after the calls above: the writer has changed things since */
        dk_explain_to_string(churn_op, &typed, text, sizeof text);
        if (!strstr(text, "mt::churn") || (!strstr(text, "other (argument 1)") && !strstr(text, "arg (argument 1)")))
            __atomic_add_fetch(&churn_bad_text, 1, __ATOMIC_SEQ_CST);
        if (s == DK_OK) {
            __atomic_add_fetch(&churn_explained, 1, __ATOMIC_SEQ_CST);
            if (boxed.num_args != 3 || !one_backend(&boxed))
                __atomic_add_fetch(&churn_mixed, 1, __ATOMIC_SEQ_CST);
            dk_explain_to_string(churn_op, &boxed, text, sizeof text);
            if (!strstr(text, "mt::churn") || !strstr(text, "rest (argument 2)"))
                __atomic_add_fetch(&churn_bad_text, 1, __ATOMIC_SEQ_CST);
        } else if (s != DK_ERR_NOT_FOUND) {
            __atomic_add_fetch(&churn_bad_text, 1, __ATOMIC_SEQ_CST);
        }
        if (++churn_iterations[me] % 16 == 0) assert_int_equal(dk_registry_reclaim(churn_reg), DK_OK);
    }
    assert_int_equal(dk_thread_offline(), DK_OK);
    return NULL;
}

static void test_explain_under_churn(void **state) {
    pthread_t w, rd[CHURN_READERS];
    dk_registration *keep;
    dk_registry_desc d;
    long total = 0;
    int i;
    (void)state;
    ks_cpu_only = dk_ks_from_key(DK_CPU);
    ks_cuda_only = dk_ks_from_key(DK_CUDA);
    memset(&d, 0, sizeof d);
    d.logger.func = silent;
    d.tensor_keyset = hook_ks;
    d.tensor_keyset_user_data = &ks_cpu_only;
    assert_int_equal(dk_registry_create(&d, &churn_reg), DK_OK);
    /* a kernel that stays: the operator lives while its def comes and goes */
    assert_int_equal(dk_impl(churn_reg, "mt::churn", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(ex_kernel), NULL),
                             &keep), DK_OK);
    churn_op = dk_op_lookup(churn_reg, "mt::churn");
    for (i = 0; i < CHURN_READERS; i++)
        assert_int_equal(pthread_create(&rd[i], NULL, churn_reader, (void *)(size_t)i), 0);
    assert_int_equal(pthread_create(&w, NULL, churn_writer, NULL), 0);
    pthread_join(w, NULL);
    for (i = 0; i < CHURN_READERS; i++) {
        pthread_join(rd[i], NULL);
        total += churn_iterations[i];
    }
    printf("  %ld reader rounds (%ld boxed explanations) beside %d writer steps: %ld mixed keysets, %ld wrong texts\n",
           total, churn_explained, CHURN_STEPS, churn_mixed, churn_bad_text);
    assert_int_equal(churn_mixed, 0);
    assert_int_equal(churn_bad_text, 0);
    assert_true(total >= 200 * CHURN_READERS);
    dk_registry_destroy(churn_reg);
}

/* ---- dk_stack_dispatch_keyset while the hooks change ---------------------------
   One reader computes a boxed stack's keyset (34 tensors: 34 hook calls
   through one hooks record) while a writer replaces the hooks record
   again and again. With call epochs the replaced record is freed as soon
   as no call holds it: the keyset must be computed inside a bracket
   (AddressSanitizer: no use after free). Both modes: every keyset is all
   CPU or all CUDA, never a mix of two records. */
#ifndef HOOK_STEPS
#define HOOK_STEPS 5000
#endif
static int hooks_done;
static void *hooks_writer(void *arg) {
    dk_registry_desc d;
    int step;
    (void)arg;
    memset(&d, 0, sizeof d);
    d.logger.func = silent;
    d.tensor_keyset = hook_ks;
    for (step = 0; step < HOOK_STEPS; step++) {
        d.tensor_keyset_user_data = step % 2 ? &ks_cuda_only : &ks_cpu_only;
        assert_int_equal(dk_registry_set_hooks(churn_reg, &d), DK_OK);
    }
    __atomic_store_n(&hooks_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_stack_keyset_while_hooks_change(void **state) {
    pthread_t w;
    dk_registration *def;
    dk_registry_desc d;
    dk_value storage[4], items[32];
    dk_stack st;
    long n = 0, cpu = 0, cuda = 0, other = 0;
    int i;
    (void)state;
    ks_cpu_only = dk_ks_from_key(DK_CPU);
    ks_cuda_only = dk_ks_from_key(DK_CUDA);
    memset(&d, 0, sizeof d);
    d.logger.func = silent;
    d.tensor_keyset = hook_ks;
    d.tensor_keyset_user_data = &ks_cpu_only;
    assert_int_equal(dk_registry_create(&d, &churn_reg), DK_OK);
    assert_int_equal(dk_def(churn_reg, "mt::hooked(Tensor self, Tensor other, Tensor[] rest) -> Tensor", &def), DK_OK);
    churn_op = dk_op_lookup(churn_reg, "mt::hooked");
    for (i = 0; i < 32; i++) items[i] = dk_tensor(&items[i]);
    dk_stack_init(&st, storage, 4);
    dk_stack_push(&st, dk_tensor(&storage[0]));
    dk_stack_push(&st, dk_tensor(&storage[1]));
    dk_stack_push(&st, dk_list(items, 32));
    hooks_done = 0;
    assert_int_equal(pthread_create(&w, NULL, hooks_writer, NULL), 0);
    while (!__atomic_load_n(&hooks_done, __ATOMIC_SEQ_CST) || n < 1000) {
        dk_keyset ks = dk_stack_dispatch_keyset(churn_op, &st);
        if (ks.repr == ks_cpu_only.repr) cpu++;
        else if (ks.repr == ks_cuda_only.repr) cuda++;
        else other++;
        n++;
    }
    pthread_join(w, NULL);
    printf("  %ld keysets while the hooks changed %d times: %ld CPU, %ld CUDA, %ld mixed\n", n, HOOK_STEPS, cpu, cuda,
           other);
    assert_int_equal(other, 0);
    assert_int_equal(cpu + cuda, n);
    dk_registry_destroy(churn_reg);
}

/* ---- fork while another thread holds a registry's lock -------------------------
   A thread is inside a registration (its listener runs under the
   registry's lock) when the main thread forks. The child must be able to
   register: dispatch.h's fork handlers wait until the registration is
   done and hand the child unlocked registries. The registering thread
   keeps the lock 20 ms after the fork begins (this test's own fork
   handler tells it), so without the handlers the child would inherit a
   locked mutex; a child that blocks is killed by its alarm and fails the
   test. The registering thread takes part in quiescent points: the
   child's synchronize must not wait for a thread that is not there. Both
   modes. */
static dk_registry *fork_reg;
static int fork_holding, fork_started, fork_done;
static void fork_begins(void) { __atomic_store_n(&fork_started, 1, __ATOMIC_SEQ_CST); }
static void holding_listener(const dk_operator *o, void *ud) {
    struct timespec ms20 = { 0, 20 * 1000 * 1000 };
    (void)o; (void)ud;
    if (__atomic_load_n(&fork_started, __ATOMIC_SEQ_CST)) return;   /* the child's own registrations */
    __atomic_store_n(&fork_holding, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&fork_started, __ATOMIC_SEQ_CST)) sched_yield();
    nanosleep(&ms20, NULL);   /* still holding the lock while fork proceeds */
}
static void *holding_registrar(void *arg) {
    dk_registration *h;
    (void)arg;
    assert_int_equal(dk_thread_online(), DK_OK);   /* takes part: a child's synchronize must not wait for it */
    assert_int_equal(dk_def(fork_reg, "fk::held(Tensor a) -> Tensor", &h), DK_OK);
    /* alive until the fork is over (ThreadSanitizer's child would report a finished, unjoined thread) */
    while (!__atomic_load_n(&fork_done, __ATOMIC_SEQ_CST)) sched_yield();
    assert_int_equal(dk_thread_offline(), DK_OK);
    return NULL;
}

static void test_fork_while_a_registration_holds_the_lock(void **state) {
    pthread_t t;
    dk_registration *l, *h;
    pid_t pid;
    int status = -1;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &fork_reg), DK_OK);
    assert_int_equal(dk_registry_add_listener(fork_reg, holding_listener, NULL, NULL, &l), DK_OK);
    assert_int_equal(pthread_atfork(fork_begins, NULL, NULL), 0);   /* runs before dispatch.h's (registered later) */
    assert_int_equal(pthread_create(&t, NULL, holding_registrar, NULL), 0);
    while (!__atomic_load_n(&fork_holding, __ATOMIC_SEQ_CST)) sched_yield();
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {   /* the child: one thread, every registry unlocked and whole */
        dk_registration *d, *i;
        int ok;
        alarm(10);
        ok = dk_def(fork_reg, "fk::child(Tensor a) -> Tensor", &d) == DK_OK &&
             dk_impl(fork_reg, "fk::child", DK_CPU, dk_unboxed(DK_FN(ex_kernel), NULL), &i) == DK_OK &&
             dk_deregister(i) == DK_OK && dk_registry_synchronize(fork_reg) == DK_OK &&
             dk_op_lookup(fork_reg, "fk::held") != NULL &&
             dk_op_lookup(fork_reg, "fk::child") != NULL;
        _exit(ok ? 0 : 1);
    }
    __atomic_store_n(&fork_done, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(pthread_join(t, NULL), 0);
    printf("  child forked while a registration held the lock: %s\n",
           WIFEXITED(status) ? (WEXITSTATUS(status) == 0 ? "registered, exit 0" : "a registration failed")
                             : "killed (blocked on the registry's lock)");
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* the parent goes on: its locks were released after the fork */
    assert_int_equal(dk_def(fork_reg, "fk::parent(Tensor a) -> Tensor", &h), DK_OK);
    assert_non_null(dk_op_lookup(fork_reg, "fk::held"));
    dk_registry_destroy(fork_reg);
}

/* ---- fork while another thread holds the thread states' lock ---------------------
   dk__threads_lock guards the thread states and (call epochs) each
   record's link to its thread's call word: a thread takes it when it
   attaches or exits, and a writer while it scans the words. A thread
   holds it (as an attach or an exit in progress would) when the main
   thread forks; dispatch.h's fork handlers wait for it, so the child gets
   it unlocked: its synchronize (call epochs: a scan under it) and a new
   thread's first error and call (a state and a record: under it) return.
   The holder keeps it 20 ms after the fork begins; a child that blocks is
   killed by its alarm. (No thread is started in the child under
   ThreadSanitizer, which does not start threads after a multi-threaded
   fork.) Both modes. */
static int tl_holding, tl_started, tl_done;
static void tl_fork_begins(void) { __atomic_store_n(&tl_started, 1, __ATOMIC_SEQ_CST); }
static void *threads_lock_holder(void *arg) {
    struct timespec ms20 = { 0, 20 * 1000 * 1000 };
    (void)arg;
    dk__mutex_lock(&dk__threads_lock);
    __atomic_store_n(&tl_holding, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&tl_started, __ATOMIC_SEQ_CST)) sched_yield();
    nanosleep(&ms20, NULL);   /* still holding it while fork proceeds */
    dk__mutex_unlock(&dk__threads_lock);
    while (!__atomic_load_n(&tl_done, __ATOMIC_SEQ_CST)) sched_yield();
    return NULL;
}
static dk_registry *tl_reg;
static const dk_operator *tl_op;
static int tl_call(void) {
    tensor x;
    x.ks = dk_ks_from_key(DK_CPU);
    return probe_call(tl_op, x);
}
#ifndef DK__TSAN
static void *child_thread(void *arg) {
    dk_registration *h;
    int *ok = (int *)arg;
    *ok = dk_thread_online() == DK_OK &&   /* it takes part (default build; DK_DEBUG_THREADS checks it) */
          dk_def(tl_reg, "tl::bad(", &h) != DK_OK && dk_last_error()[0] &&   /* its state */
          tl_call() == 1;                                 /* its record (call epochs) */
    return NULL;
}
#endif
#ifdef DK__TSAN
#define TL_CHILD_OK "synchronized, exit 0"
#else
#define TL_CHILD_OK "synchronized, a new thread attached, exit 0"
#endif
static void test_fork_while_a_thread_holds_the_thread_states(void **state) {
    pthread_t t;
    dk_registration *d, *i;
    pid_t pid;
    int status = -1;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &tl_reg), DK_OK);
    assert_int_equal(dk_def(tl_reg, "tl::op(Tensor a) -> Tensor", &d), DK_OK);
    assert_int_equal(dk_impl(tl_reg, "tl::op", DK_CPU, dk_unboxed(DK_FN(ex_kernel), NULL), &i), DK_OK);
    tl_op = dk_op_lookup(tl_reg, "tl::op");
    assert_int_equal(tl_call(), 1);
    assert_int_equal(pthread_atfork(tl_fork_begins, NULL, NULL), 0);   /* runs before dispatch.h's (registered later) */
    assert_int_equal(pthread_create(&t, NULL, threads_lock_holder, NULL), 0);
    while (!__atomic_load_n(&tl_holding, __ATOMIC_SEQ_CST)) sched_yield();
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {   /* the child: one thread, the thread states' lock free */
        dk_registration *j;
        int ok;
        alarm(10);
        ok = dk_impl(tl_reg, "tl::op", DK_CPU, dk_unboxed(DK_FN(ex_kernel), NULL), &j) == DK_OK &&
             dk_deregister(j) == DK_OK && dk_registry_synchronize(tl_reg) == DK_OK &&
             tl_call() == 1;
#ifndef DK__TSAN
        if (ok) {
            pthread_t c;
            ok = pthread_create(&c, NULL, child_thread, &ok) == 0 && pthread_join(c, NULL) == 0 && ok;
        }
#endif
        _exit(ok ? 0 : 1);
    }
    __atomic_store_n(&tl_done, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(pthread_join(t, NULL), 0);
    printf("  child forked while a thread held the thread states' lock: %s\n",
           WIFEXITED(status) ? (WEXITSTATUS(status) == 0 ? TL_CHILD_OK
                                                          : "a registration or a call failed")
                             : "killed (blocked on the thread states' lock)");
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(dk_registry_synchronize(tl_reg), DK_OK);   /* the parent's lock was released */
    dk_registry_destroy(tl_reg);
}

/* ---- fork while another thread is inside a late call ------------------------------
   A late call: made from a TLS destructor that runs after the library's
   own (call epochs count it in one shared word, dk__late_calls). The
   thread below attaches, so the library's exit destructor is registered
   first; the test's key, created after the library's, runs its destructor
   later in the same round: it calls, and the kernel waits until the main
   thread has forked. In the child only the forking thread exists: its
   synchronize and reclaim must return (the parent's late call never ends
   there; the alarm turns a hang into a failure). Both modes (without call
   epochs the call is an ordinary one). */
static dk_registry *late_reg;
static const dk_operator *late_op;
static pthread_key_t late_key;
static int late_inside, late_forked, late_counted;
static int late_kernel(const dk_kernel *k, dk_keyset ks, tensor t) {
    (void)k; (void)ks; (void)t;
#ifdef DK_CALL_EPOCHS
    __atomic_store_n(&late_counted, (int)__atomic_load_n(&dk__late_calls, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
#endif
    __atomic_store_n(&late_inside, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&late_forked, __ATOMIC_SEQ_CST)) sched_yield();
    return 5;
}
static void late_destructor(void *p) {
    tensor t;
    (void)p;
    t.ks = dk_ks_from_key(DK_CPU);
    (void)probe_call(late_op, t);   /* after the library's exit destructor: a late call */
}
static void *late_thread(void *arg) {
    (void)arg;
    assert_int_equal(dk_thread_attach(), DK_OK);
    assert_int_equal(pthread_setspecific(late_key, (void *)1), 0);
    return NULL;
}
static void test_fork_while_another_thread_is_in_a_late_call(void **state) {
    dk_registration *d, *i;
    pthread_t t;
    pid_t pid;
    int status = -1;
    (void)state;
    assert_int_equal(dk_thread_attach(), DK_OK);   /* the library's thread key exists before the test's */
    assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
    assert_int_equal(dk_registry_create(NULL, &late_reg), DK_OK);
    assert_int_equal(dk_def(late_reg, "late::op(Tensor a) -> Tensor", &d), DK_OK);
    assert_int_equal(dk_impl(late_reg, "late::op", DK_CPU, dk_unboxed(DK_FN(late_kernel), NULL), &i), DK_OK);
    late_op = dk_op_lookup(late_reg, "late::op");
    assert_int_equal(pthread_create(&t, NULL, late_thread, NULL), 0);
    while (!__atomic_load_n(&late_inside, __ATOMIC_SEQ_CST)) sched_yield();
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dk_registration *j;
        int ok;
        alarm(10);
        ok = dk_impl(late_reg, "late::op", DK_CUDA, dk_unboxed(DK_FN(late_kernel), NULL), &j) == DK_OK &&
             dk_deregister(j) == DK_OK && dk_registry_synchronize(late_reg) == DK_OK &&
             dk_registry_reclaim(late_reg) == DK_OK;
        _exit(ok ? 0 : 1);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    __atomic_store_n(&late_forked, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_join(t, NULL), 0);
    printf("  child forked while another thread was in a late call: %s\n",
           WIFEXITED(status) ? (WEXITSTATUS(status) == 0 ? "synchronized and reclaimed, exit 0" : "a step failed")
                             : "killed (waited for the parent's late call)");
#ifdef DK_CALL_EPOCHS
    assert_int_equal(late_counted, 1);   /* it was a late call */
#else
    assert_int_equal(late_counted, 0);
#endif
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(dk_registry_synchronize(late_reg), DK_OK);   /* the parent's late call is over */
    assert_int_equal(pthread_key_delete(late_key), 0);
    dk_registry_destroy(late_reg);
}

/* ---- the default registry out of memory ------------------------------------------
   dk_registry_default creates the registry under the global lock; when
   that runs out of memory after the registry itself was allocated, the
   half-made registry is freed without taking the global lock again (it
   deadlocked). The alarm turns a hang into a failure. */
static int allocs_left;
static void *counted_alloc(size_t n, void *ud) {
    (void)ud;
    return __atomic_sub_fetch(&allocs_left, 1, __ATOMIC_SEQ_CST) >= 0 ? malloc(n) : NULL;
}
static void counted_free(void *p, void *ud) { (void)ud; free(p); }

static void test_default_registry_out_of_memory(void **state) {
    dk_registry_desc d;
    (void)state;
    memset(&d, 0, sizeof d);
    d.alloc = counted_alloc;
    d.free = counted_free;
    d.logger.func = silent;
    assert_int_equal(dk_registry_default_configure(&d), DK_OK);
    alarm(30);
    allocs_left = 1;   /* the registry, then nothing */
    assert_null(dk_registry_default());
    allocs_left = 1 << 20;
    assert_non_null(dk_registry_default());
    alarm(0);
    dk_registry_destroy(dk_registry_default());
    memset(&d, 0, sizeof d);
    assert_int_equal(dk_registry_default_configure(&d), DK_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_during_registration),
        cmocka_unit_test(test_explanation_outlives_its_operator),
        cmocka_unit_test(test_explain_under_churn),
        cmocka_unit_test(test_stack_keyset_while_hooks_change),
        cmocka_unit_test(test_fork_while_a_registration_holds_the_lock),
        cmocka_unit_test(test_fork_while_a_thread_holds_the_thread_states),
        cmocka_unit_test(test_fork_while_another_thread_is_in_a_late_call),
        cmocka_unit_test(test_default_registry_out_of_memory),
    };
    return cmocka_run_group_tests_name("threads", tests, NULL, NULL);
}
