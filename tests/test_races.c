/* make: tsan=plain */
/* The race suite: calls and name lookups racing registration in seven
   scenarios, (a) to (g): lookups beside defs, impl swaps at one key and at
   alias keys, library blocks opened and closed, two registering threads,
   guards on three threads, a fallthrough toggled. (Single properties of
   threads beside a registry, and fork: test_threads.c.)

   Deterministic: every thread does a fixed amount of work (writers a fixed
   number of rounds of registrations, readers a fixed number of calls); no
   time limits, no timing thresholds. Readers are paced by the writers'
   progress (see run()), so their calls are spread over the writers' whole
   run. Every call's outcome is classified and the test asserts the counts:
   the calls that ran each expected kernel add up to the number of calls,
   and nothing else happened (no other kernel, no error). Which expected
   kernel ran how often depends on the scheduler and is only printed.

   Only the public API: the operators under test stay defined throughout,
   and no dk_kernel pointer is kept across a deregistration.

   RACES_SCALE multiplies every count (-DRACES_SCALE=4 runs four times
   longer); the default is 1, 1/4 under AddressSanitizer and 1/8 under
   ThreadSanitizer. */
#define _POSIX_C_SOURCE 200809L
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <cmocka.h>

#if defined(__SANITIZE_THREAD__)
#define RACES_TSAN 1
#elif defined(__SANITIZE_ADDRESS__)
#define RACES_ASAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RACES_TSAN 1
#elif __has_feature(address_sanitizer)
#define RACES_ASAN 1
#endif
#endif

/* Every count is multiplied by RACES_SCALE_NUM / RACES_SCALE_DEN. */
#ifdef RACES_SCALE
#define RACES_SCALE_NUM (RACES_SCALE)
#define RACES_SCALE_DEN 1
#elif defined(RACES_TSAN)
#define RACES_SCALE_NUM 1
#define RACES_SCALE_DEN 8
#elif defined(RACES_ASAN)
#define RACES_SCALE_NUM 1
#define RACES_SCALE_DEN 4
#else
#define RACES_SCALE_NUM 1
#define RACES_SCALE_DEN 1
#endif
#define SCALED(n) ((long)(n) * RACES_SCALE_NUM / RACES_SCALE_DEN > 0 ? (long)(n) * RACES_SCALE_NUM / RACES_SCALE_DEN : 1)

typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(probe, int, t.ks, (tensor, t))

static tensor make(dk_key k1, dk_key k2) {
    tensor t;
    t.ks = dk_ks_or(dk_ks_from_key(k1), dk_ks_from_key(k2));
    return t;
}

/* Kernel ids: every kernel returns the int its user_data points at. */
static int ids[2048];
static void *id(int n) { return &ids[n]; }
static int k_id(const dk_kernel *k, dk_keyset ks, tensor t) {
    (void)ks; (void)t;
    return *(const int *)k->user_data;
}
/* An autograd-style kernel: its id plus what runs below autograd, on
   below_op (the operator under test, defined throughout the test). */
static const dk_operator *below_op;
static int k_autograd(const dk_kernel *k, dk_keyset ks, tensor t) {
    return *(const int *)k->user_data + probe_redispatch(below_op, dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD), t);
}
/* A tracer-style kernel: its id plus what runs below the Tracer key. */
static int k_tracer(const dk_kernel *k, dk_keyset ks, tensor t) {
    return *(const int *)k->user_data + probe_redispatch(below_op, dk_ks_remove(ks, DK_Tracer), t);
}
static void silent(dk_log_level level, dk_log_item item, const char *m, void *ud) { (void)level; (void)item; (void)m; (void)ud; }

/* Each test's registry; the teardown destroys it, also after a failure. */
static dk_registry *current;
static dk_registry *new_registry(void) {
    dk_registry_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.logger.func = silent; /* every swap "overrides" a kernel: no warnings on stderr */
    assert_int_equal(dk_registry_create(&desc, &current), DK_OK);
    dk_registry_set_call_error(current, dk_call_error_report, NULL);
    return current;
}
static int destroy_registry(void **state) {
    (void)state;
    if (current) dk_registry_destroy(current);
    current = NULL;
    return 0;
}

/* ---- threads, pacing, outcome counts --------------------------------------

   A writer runs a fixed number of rounds and never waits; after each round
   it publishes how many it has done. A reader runs a fixed number of batches
   (of a fixed number of calls) and is paced by the writers: it starts batch
   i only when every writer has done its share of rounds for that point
   (i * rounds / batches), waiting (sched_yield) while it is ahead. So the
   readers' calls are spread over the writers' whole run, and every count
   is fixed. All threads start together. A reader may run up to LEAD
   batches ahead of that point, so that while a writer is descheduled (on a
   busy machine, at any point of a round) the reader keeps calling, for up
   to about a scheduler time slice. Before each batch a reader spins for a
   pseudo-random while (up to `spread` loop iterations, about a writer's
   round), so that its batches do not all start at the same point of a
   writer's round. */
#define LEAD 256

#define MAX_THREADS 4
typedef void (*work_fn)(int me, long i);
/* A thread: what it does, whether it is a writer, how many rounds / batches. */
typedef struct role { work_fn fn; int writer; long count; unsigned spread; } role;
static role writer(work_fn fn, long rounds) {
    role r; r.fn = fn; r.writer = 1; r.count = rounds; r.spread = 0; return r;
}
static role reader(work_fn fn, long batches, unsigned spread) {
    role r; r.fn = fn; r.writer = 0; r.count = batches; r.spread = spread; return r;
}

static struct {
    int n;
    role roles[MAX_THREADS];
    long progress[MAX_THREADS];
    int arrived;
} race;

static void *thread_main(void *arg) {
    int me = (int)(size_t)arg, w;
    const role *r = &race.roles[me];
    uint64_t x = 0x2545F4914F6CDD1DULL + (uint64_t)me;
    long i;
    __atomic_add_fetch(&race.arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&race.arrived, __ATOMIC_ACQUIRE) < race.n) sched_yield();
    for (i = 0; i < r->count; i++) {
        if (!r->writer) {
            volatile unsigned spin;
            for (w = 0; w < race.n; w++)
                while (race.roles[w].writer &&
                       __atomic_load_n(&race.progress[w], __ATOMIC_ACQUIRE) <
                           (i - LEAD) * race.roles[w].count / r->count)
                    sched_yield();
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            for (spin = r->spread ? (unsigned)(x % r->spread) : 0; spin; spin--) {}
        }
        r->fn(me, i);
        if (r->writer) __atomic_store_n(&race.progress[me], i + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void run(int n, const role *roles) {
    pthread_t t[MAX_THREADS];
    int i;
    assert_true(n <= MAX_THREADS);
    race.n = n;
    race.arrived = 0;
    for (i = 0; i < n; i++) {
        race.roles[i] = roles[i];
        race.progress[i] = 0;
    }
    for (i = 0; i < n; i++) assert_int_equal(pthread_create(&t[i], NULL, thread_main, (void *)(size_t)i), 0);
    for (i = 0; i < n; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
}

/* Outcome counters: count[i] for the expected result expect[i]; `other`
   for any other result, `errors` for a call that reported an error. */
#define MAX_OUTCOMES 8
typedef struct outcomes {
    int expect[MAX_OUTCOMES], n;
    long count[MAX_OUTCOMES], other, errors, calls;
    long by_status[DK__STATUS_END];
    int first_bad_result;
    dk_status first_bad_status;
} outcomes;

static void outcomes_init(outcomes *o, int n, const int *expect) {
    memset(o, 0, sizeof *o);
    o->n = n;
    memcpy(o->expect, expect, sizeof(int) * (size_t)n);
}
/* Called by the one thread that owns o. */
static void classify(outcomes *o, int result) {
    dk_status s = dk_last_call_status();
    int i;
    o->calls++;
    if (s != DK_OK) {
        if (!o->errors++) { o->first_bad_status = s; o->first_bad_result = result; }
        o->by_status[s]++;
        return;
    }
    for (i = 0; i < o->n; i++)
        if (result == o->expect[i]) { o->count[i]++; return; }
    if (!o->other++) o->first_bad_result = result;
}
static void report(const char *what, const outcomes *o) {
    int i, s;
    printf("  %-46s %9ld calls:", what, o->calls);
    for (i = 0; i < o->n; i++) printf(" %ld x %d", o->count[i], o->expect[i]);
    if (o->other) printf(", %ld other results (first: %d)", o->other, o->first_bad_result);
    if (o->errors) {
        printf(", %ld errors:", o->errors);
        for (s = 0; s < DK__STATUS_END; s++)
            if (o->by_status[s]) printf(" %ld %s", o->by_status[s], dk_status_message((dk_status)s));
    }
    printf("\n");
}
/* Every call ran an expected kernel: the counts add up, nothing else happened. */
static void assert_outcomes(const outcomes *o, long calls) {
    long sum = 0;
    int i;
    for (i = 0; i < o->n; i++) sum += o->count[i];
    assert_int_equal(o->calls, calls);
    assert_int_equal(o->errors, 0);
    assert_int_equal(o->other, 0);
    assert_int_equal(sum, calls);
}

/* Writer-side failures (a registration that did not return DK_OK). */
static long writer_failures;
static void check(dk_status s) {
    if (s != DK_OK) __atomic_add_fetch(&writer_failures, 1, __ATOMIC_SEQ_CST);
}

static uint64_t rng_next(uint64_t *x) {
    *x ^= *x << 13; *x ^= *x >> 7; *x ^= *x << 17;
    return *x;
}

/* ---- (a) name lookups racing a thread that defines operators -------------- */

/* The writer defines ra::op1, ra::op2, ... one per round; ra::op0 exists
   before the threads start. Each reader lookup of a name defined before the
   lookup started must find that operator; a name being defined may or may
   not be found yet, but never as another operator; a name never defined is
   never found. The name index grows (and rehashes) under the readers. */
#define A_ROUNDS 4000
#define A_BATCHES 4000
#define A_LOOKUPS_PER_BATCH 20
#define A_SPREAD 4096
static dk_registry *a_reg;
static long a_defined;             /* ra::op0 .. ra::op<a_defined-1> are defined */
static long a_hits[MAX_THREADS], a_misses[MAX_THREADS], a_early[MAX_THREADS], a_wrong[MAX_THREADS];

static void a_writer(int me, long round) {
    char schema[64];
    dk_registration *h;
    (void)me;
    snprintf(schema, sizeof schema, "ra::op%ld(Tensor a) -> Tensor", round + 1);
    check(dk_def(a_reg, schema, &h));
    __atomic_store_n(&a_defined, round + 2, __ATOMIC_RELEASE);
}

static void a_reader(int me, long batch) {
    uint64_t x = 0x9E3779B97F4A7C15ULL * (uint64_t)(batch + 1) + (uint64_t)me;
    int i;
    for (i = 0; i < A_LOOKUPS_PER_BATCH; i++) {
        char name[48];
        long n = __atomic_load_n(&a_defined, __ATOMIC_ACQUIRE), j = (long)(rng_next(&x) % (uint64_t)n);
        const dk_operator *op;
        snprintf(name, sizeof name, "ra::op%ld", j);        /* defined before this lookup */
        op = dk_op_lookup(a_reg, name);
        if (op && strcmp(op->name, name) == 0) a_hits[me]++;
        else a_misses[me]++;
        snprintf(name, sizeof name, "ra::op%ld", n + (long)(rng_next(&x) % 4)); /* perhaps being defined */
        op = dk_op_lookup(a_reg, name);
        if (op && strcmp(op->name, name) != 0) a_wrong[me]++;
        if (op) a_early[me]++;
        snprintf(name, sizeof name, "ra::never%ld", j);     /* never defined */
        if (dk_op_lookup(a_reg, name)) a_wrong[me]++;
    }
}

static void test_a_lookups_racing_defs(void **state) {
    long rounds = SCALED(A_ROUNDS), batches = SCALED(A_BATCHES), hits = 0, misses = 0, wrong = 0, early = 0;
    role roles[3];
    dk_registration *h;
    int i;
    (void)state;
    roles[0] = writer(a_writer, rounds);
    roles[1] = roles[2] = reader(a_reader, batches, A_SPREAD);
    a_reg = new_registry();
    writer_failures = 0;
    memset(a_hits, 0, sizeof a_hits); memset(a_misses, 0, sizeof a_misses);
    memset(a_early, 0, sizeof a_early); memset(a_wrong, 0, sizeof a_wrong);
    assert_int_equal(dk_def(a_reg, "ra::op0(Tensor a) -> Tensor", &h), DK_OK);
    a_defined = 1;
    run(3, roles);
    for (i = 1; i < 3; i++) { hits += a_hits[i]; misses += a_misses[i]; wrong += a_wrong[i]; early += a_early[i]; }
    printf("  (a) %ld operators defined while 2 threads looked up %ld defined names (%ld found), "
           "%ld perhaps being defined (%ld found), %ld never defined (%ld found)\n",
           a_defined, hits + misses, hits, hits + misses, early, hits + misses, wrong);
    assert_int_equal(writer_failures, 0);
    assert_int_equal(a_defined, 1 + rounds);
    assert_int_equal(misses, 0);
    assert_int_equal(wrong, 0);
    assert_int_equal(hits, 2 * batches * A_LOOKUPS_PER_BATCH);
    for (i = 0; i < a_defined; i++) { /* afterwards every one is there */
        char name[48];
        snprintf(name, sizeof name, "ra::op%d", i);
        assert_non_null(dk_op_lookup(a_reg, name));
    }
}

/* ---- (b) calls racing impl swaps at one key ------------------------------- */

/* rb::op has CPU kernel 1 throughout. Each writer round puts kernel 2 over
   it, kernel 3 over both, and deregisters them in alternating orders
   (3, then 1; or 2, then 1). One reader calls, one redispatches at CPU:
   every call runs kernel 1, 2 or 3. */
#define B_ROUNDS 5000
#define B_BATCHES 5000
#define B_CALLS_PER_BATCH 1500
#define B_SPREAD 8192
static dk_registry *b_reg;
static const dk_operator *b_op;
static outcomes b_out[MAX_THREADS];

static void b_writer(int me, long round) {
    dk_registration *h2, *h3;
    (void)me;
    check(dk_impl(b_reg, "rb::op", DK_CPU, dk_unboxed(DK_FN(k_id), id(2)), &h2));
    check(dk_impl(b_reg, "rb::op", DK_CPU, dk_unboxed(DK_FN(k_id), id(3)), &h3));
    if (round % 2) { check(dk_deregister(h2)); check(dk_deregister(h3)); }
    else { check(dk_deregister(h3)); check(dk_deregister(h2)); }
}
static void b_caller(int me, long batch) {
    tensor t = make(DK_CPU, DK_CPU);
    int i;
    (void)batch;
    for (i = 0; i < B_CALLS_PER_BATCH; i++) classify(&b_out[me], probe_call(b_op, t));
}
static void b_redispatcher(int me, long batch) {
    tensor t = make(DK_CPU, DK_AutogradCPU);
    int i;
    (void)batch;
    for (i = 0; i < B_CALLS_PER_BATCH; i++) classify(&b_out[me], probe_redispatch(b_op, dk_ks_from_key(DK_CPU), t));
}

static void test_b_calls_racing_impl_swaps(void **state) {
    static const int expect[] = { 1, 2, 3 };
    long batches = SCALED(B_BATCHES);
    role roles[3];
    dk_registration *h;
    (void)state;
    roles[0] = writer(b_writer, SCALED(B_ROUNDS));
    roles[1] = reader(b_caller, batches, B_SPREAD);
    roles[2] = reader(b_redispatcher, batches, B_SPREAD);
    b_reg = new_registry();
    writer_failures = 0;
    assert_int_equal(dk_def(b_reg, "rb::op(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(b_reg, "rb::op", DK_CPU, dk_unboxed(DK_FN(k_id), id(1)), &h), DK_OK);
    b_op = dk_op_lookup(b_reg, "rb::op");
    outcomes_init(&b_out[1], 3, expect);
    outcomes_init(&b_out[2], 3, expect);
    run(3, roles);
    report("(b) CPU kernel swapped, typed call", &b_out[1]);
    report("(b) CPU kernel swapped, redispatch", &b_out[2]);
    assert_int_equal(writer_failures, 0);
    assert_outcomes(&b_out[1], batches * B_CALLS_PER_BATCH);
    assert_outcomes(&b_out[2], batches * B_CALLS_PER_BATCH);
    assert_int_equal(probe_call(b_op, make(DK_CPU, DK_CPU)), 1); /* afterwards: kernel 1 again */
}

/* ---- (c) the same at alias keys ------------------------------------------- */

/* rc::op: CPU kernel 1, Autograd kernel 10 (+ what runs below autograd),
   CompositeImplicitAutograd kernel 100, throughout. Each writer round puts
   an Autograd kernel 20 and a CompositeImplicitAutograd kernel 200 over
   them and deregisters both, in alternating orders.
     {CPU, AutogradCPU}:   the Autograd kernel (10 or 20), then CPU (1): 11 or 21
     {CUDA, AutogradCUDA}: no CUDA kernel, so the math kernel serves AutogradCUDA: 100 or 200
     redispatch at {XLA}:  the math kernel: 100 or 200 */
#define C_ROUNDS 5000
#define C_BATCHES 5000
#define C_CALLS_PER_BATCH 1000
#define C_SPREAD 8192
static dk_registry *c_reg;
static const dk_operator *c_op;
static outcomes c_out[MAX_THREADS], c_out_xla;

static void c_writer(int me, long round) {
    dk_registration *ag, *math;
    (void)me;
    if (round % 2) {
        check(dk_impl(c_reg, "rc::op", DK_Autograd, dk_unboxed(DK_FN(k_autograd), id(20)), &ag));
        check(dk_impl(c_reg, "rc::op", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_id), id(200)), &math));
        check(dk_deregister(ag));
        check(dk_deregister(math));
    } else {
        check(dk_impl(c_reg, "rc::op", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_id), id(200)), &math));
        check(dk_impl(c_reg, "rc::op", DK_Autograd, dk_unboxed(DK_FN(k_autograd), id(20)), &ag));
        check(dk_deregister(math));
        check(dk_deregister(ag));
    }
}
static void c_cpu_caller(int me, long batch) {
    tensor t = make(DK_CPU, DK_AutogradCPU);
    int i;
    (void)batch;
    for (i = 0; i < C_CALLS_PER_BATCH; i++) classify(&c_out[me], probe_call(c_op, t));
}
static void c_cuda_caller(int me, long batch) {
    tensor t = make(DK_CUDA, DK_AutogradCUDA), x = make(DK_XLA, DK_XLA);
    int i;
    (void)batch;
    for (i = 0; i < C_CALLS_PER_BATCH; i++) {
        classify(&c_out[me], probe_call(c_op, t));
        if (i % 4 == 0) classify(&c_out_xla, probe_redispatch(c_op, x.ks, x));
    }
}

static void test_c_calls_racing_alias_swaps(void **state) {
    static const int cpu_expect[] = { 11, 21 }, math_expect[] = { 100, 200 };
    long batches = SCALED(C_BATCHES);
    role roles[3];
    dk_registration *h, *ag, *math;
    (void)state;
    roles[0] = writer(c_writer, SCALED(C_ROUNDS));
    roles[1] = reader(c_cpu_caller, batches, C_SPREAD);
    roles[2] = reader(c_cuda_caller, batches, C_SPREAD);
    c_reg = new_registry();
    writer_failures = 0;
    assert_int_equal(dk_def(c_reg, "rc::op(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(c_reg, "rc::op", DK_CPU, dk_unboxed(DK_FN(k_id), id(1)), &h), DK_OK);
    assert_int_equal(dk_impl(c_reg, "rc::op", DK_Autograd, dk_unboxed(DK_FN(k_autograd), id(10)), &h), DK_OK);
    assert_int_equal(dk_impl(c_reg, "rc::op", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_id), id(100)), &h),
                     DK_OK);
    c_op = below_op = dk_op_lookup(c_reg, "rc::op");
    /* the expected outcomes, on one thread */
    assert_int_equal(probe_call(c_op, make(DK_CPU, DK_AutogradCPU)), 11);
    assert_int_equal(probe_call(c_op, make(DK_CUDA, DK_AutogradCUDA)), 100);
    assert_int_equal(dk_impl(c_reg, "rc::op", DK_Autograd, dk_unboxed(DK_FN(k_autograd), id(20)), &ag), DK_OK);
    assert_int_equal(dk_impl(c_reg, "rc::op", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_id), id(200)), &math),
                     DK_OK);
    assert_int_equal(probe_call(c_op, make(DK_CPU, DK_AutogradCPU)), 21);
    assert_int_equal(probe_call(c_op, make(DK_CUDA, DK_AutogradCUDA)), 200);
    assert_int_equal(probe_call(c_op, make(DK_XLA, DK_XLA)), 200);
    assert_int_equal(dk_deregister(ag), DK_OK);
    assert_int_equal(dk_deregister(math), DK_OK);
    assert_int_equal(dk_last_call_status(), DK_OK);

    outcomes_init(&c_out[1], 2, cpu_expect);
    outcomes_init(&c_out[2], 2, math_expect);
    outcomes_init(&c_out_xla, 2, math_expect);
    run(3, roles);
    report("(c) Autograd alias swapped, {CPU, AutogradCPU}", &c_out[1]);
    report("(c) CIA swapped, {CUDA, AutogradCUDA}", &c_out[2]);
    report("(c) CIA swapped, redispatch {XLA}", &c_out_xla);
    assert_int_equal(writer_failures, 0);
    assert_outcomes(&c_out[1], batches * C_CALLS_PER_BATCH);
    assert_outcomes(&c_out[2], batches * C_CALLS_PER_BATCH);
    assert_outcomes(&c_out_xla, batches * ((C_CALLS_PER_BATCH + 3) / 4));
    assert_int_equal(probe_call(c_op, make(DK_CPU, DK_AutogradCPU)), 11);
}

/* ---- (d) calls racing library open / close -------------------------------- */

/* rd::op is defined by a DEF library that stays open, with CPU kernel 1 and
   Autograd kernel 30. Each writer round opens IMPL(rd, CPU) (kernel 2 at
   CPU), FRAGMENT(rd) (defines rd::tmp) and IMPL(rd, AutogradCPU) (kernel 40
   at AutogradCPU), and closes them in alternating orders. Two readers call
   with {CPU, AutogradCPU}: (30 or 40) + (1 or 2) = 31, 32, 41 or 42; every
   8th call looks the operator up first, and finds the same operator. */
#define D_ROUNDS 3000
#define D_BATCHES 3000
#define D_CALLS_PER_BATCH 2000
#define D_SPREAD 16384
static dk_registry *d_reg;
static const dk_operator *d_op;
static outcomes d_out[MAX_THREADS];
static long d_lookup_failures[MAX_THREADS];

static void d_writer(int me, long round) {
    dk_library *cpu, *ag, *frag;
    (void)me;
    check(dk_library_open(d_reg, DK_LIBRARY_KIND_IMPL, "rd", DK_CPU, &cpu));
    check(dk_library_impl(cpu, "op", DK_Undefined, dk_unboxed(DK_FN(k_id), id(2))));
    check(dk_library_open(d_reg, DK_LIBRARY_KIND_FRAGMENT, "rd", DK_Undefined, &frag));
    check(dk_library_def(frag, "tmp(Tensor a) -> Tensor"));
    check(dk_library_open(d_reg, DK_LIBRARY_KIND_IMPL, "rd", DK_AutogradCPU, &ag));
    check(dk_library_impl(ag, "rd::op", DK_Undefined, dk_unboxed(DK_FN(k_autograd), id(40))));
    if (round % 2) { check(dk_library_close(cpu)); check(dk_library_close(frag)); check(dk_library_close(ag)); }
    else { check(dk_library_close(ag)); check(dk_library_close(cpu)); check(dk_library_close(frag)); }
}
static void d_caller(int me, long batch) {
    tensor t = make(DK_CPU, DK_AutogradCPU);
    int i;
    (void)batch;
    for (i = 0; i < D_CALLS_PER_BATCH; i++) {
        const dk_operator *op = d_op;
        if (i % 8 == 0 && (op = dk_op_lookup(d_reg, "rd::op")) != d_op) {
            d_lookup_failures[me]++;
            op = d_op;
        }
        classify(&d_out[me], probe_call(op, t));
    }
}

static void d_block(dk_library *lib) {
    dk_library_def(lib, "op(Tensor a) -> Tensor");
    dk_library_impl(lib, "op", DK_CPU, dk_unboxed(DK_FN(k_id), id(1)));
    dk_library_impl(lib, "op", DK_Autograd, dk_unboxed(DK_FN(k_autograd), id(30)));
}

static void test_d_calls_racing_library_open_close(void **state) {
    static const int expect[] = { 31, 32, 41, 42 };
    long batches = SCALED(D_BATCHES);
    role roles[3];
    dk_library *def;
    (void)state;
    roles[0] = writer(d_writer, SCALED(D_ROUNDS));
    roles[1] = roles[2] = reader(d_caller, batches, D_SPREAD);
    d_reg = new_registry();
    writer_failures = 0;
    memset(d_lookup_failures, 0, sizeof d_lookup_failures);
    assert_int_equal(dk_library_run(d_reg, DK_LIBRARY_KIND_DEF, "rd", DK_Undefined, d_block, &def), DK_OK);
    d_op = below_op = dk_op_lookup(d_reg, "rd::op");
    assert_non_null(d_op);
    assert_int_equal(probe_call(d_op, make(DK_CPU, DK_AutogradCPU)), 31);
    outcomes_init(&d_out[1], 4, expect);
    outcomes_init(&d_out[2], 4, expect);
    run(3, roles);
    report("(d) libraries opened / closed, reader 1", &d_out[1]);
    report("(d) libraries opened / closed, reader 2", &d_out[2]);
    assert_int_equal(writer_failures, 0);
    assert_int_equal(d_lookup_failures[1] + d_lookup_failures[2], 0);
    assert_outcomes(&d_out[1], batches * D_CALLS_PER_BATCH);
    assert_outcomes(&d_out[2], batches * D_CALLS_PER_BATCH);
    assert_int_equal(probe_call(d_op, make(DK_CPU, DK_AutogradCPU)), 31);
    assert_int_equal(dk_library_close(def), DK_OK);
}

/* ---- (e) two registering threads on different operators ------------------- */

/* re::a has CPU kernel 1, re::b CPU kernel 101. Writer A's rounds put kernel
   2 over re::a's CPU kernel and an Autograd kernel 10 on it, define and
   deregister an operator of its own, and take both kernels away again;
   writer B does the same on re::b (102, 110). The reader calls both with
   {CPU, AutogradCPU} below autograd (the CPU kernel: 1 or 2, 101 or 102)
   and redispatches both at CPU. */
#define E_ROUNDS 5000
#define E_BATCHES 5000
#define E_CALLS_PER_BATCH 500
#define E_SPREAD 8192
static dk_registry *e_reg;
static const dk_operator *e_a, *e_b;
static outcomes e_out_a, e_out_b;

static void e_writer(int me, long round) {
    const char *name = me == 0 ? "re::a" : "re::b";
    int base = me == 0 ? 0 : 100;
    dk_registration *k, *ag, *d;
    (void)round;
    check(dk_impl(e_reg, name, DK_CPU, dk_unboxed(DK_FN(k_id), id(base + 2)), &k));
    check(dk_impl(e_reg, name, DK_Autograd, dk_unboxed(DK_FN(k_id), id(base + 10)), &ag));
    check(dk_def(e_reg, me == 0 ? "re::scratch_a(Tensor a) -> Tensor" : "re::scratch_b(Tensor a) -> Tensor", &d));
    check(dk_deregister(k));
    check(dk_deregister(d));
    check(dk_deregister(ag));
}
static void e_caller(int me, long batch) {
    tensor t = make(DK_CPU, DK_AutogradCPU);
    int i;
    (void)me; (void)batch;
    for (i = 0; i < E_CALLS_PER_BATCH; i++) {
        dk_guard g = dk_guard_below_autograd();
        classify(&e_out_a, probe_call(e_a, t));
        classify(&e_out_b, probe_call(e_b, t));
        dk_guard_pop(g);
        classify(&e_out_a, probe_redispatch(e_a, dk_ks_from_key(DK_CPU), t));
        classify(&e_out_b, probe_redispatch(e_b, dk_ks_from_key(DK_CPU), t));
    }
}

static void test_e_two_registering_threads(void **state) {
    static const int expect_a[] = { 1, 2 }, expect_b[] = { 101, 102 };
    long batches = SCALED(E_BATCHES);
    role roles[3];
    dk_registration *h;
    (void)state;
    roles[0] = roles[1] = writer(e_writer, SCALED(E_ROUNDS));
    roles[2] = reader(e_caller, batches, E_SPREAD);
    e_reg = new_registry();
    writer_failures = 0;
    assert_int_equal(dk_def(e_reg, "re::a(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_def(e_reg, "re::b(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(e_reg, "re::a", DK_CPU, dk_unboxed(DK_FN(k_id), id(1)), &h), DK_OK);
    assert_int_equal(dk_impl(e_reg, "re::b", DK_CPU, dk_unboxed(DK_FN(k_id), id(101)), &h), DK_OK);
    e_a = dk_op_lookup(e_reg, "re::a");
    e_b = dk_op_lookup(e_reg, "re::b");
    outcomes_init(&e_out_a, 2, expect_a);
    outcomes_init(&e_out_b, 2, expect_b);
    run(3, roles);
    report("(e) re::a, swapped by writer A", &e_out_a);
    report("(e) re::b, swapped by writer B", &e_out_b);
    assert_int_equal(writer_failures, 0);
    assert_outcomes(&e_out_a, 2 * batches * E_CALLS_PER_BATCH);
    assert_outcomes(&e_out_b, 2 * batches * E_CALLS_PER_BATCH);
    /* afterwards: each back to exactly its own kernels */
    assert_int_equal(probe_redispatch(e_a, dk_ks_from_key(DK_CPU), make(DK_CPU, DK_CPU)), 1);
    assert_int_equal(probe_redispatch(e_b, dk_ks_from_key(DK_CPU), make(DK_CPU, DK_CPU)), 101);
    assert_true(dk_op_has_kernel_for_key(e_a, DK_CPU) && dk_op_has_kernel_for_key(e_b, DK_CPU));
    assert_false(dk_op_has_kernel_for_key(e_a, DK_Autograd));
    assert_false(dk_op_has_kernel_for_key(e_b, DK_Autograd));
}

/* ---- (f) guards on three threads ------------------------------------------ */

/* rf::op: CPU kernel 1, Autograd kernel 10 (+ below autograd), Tracer kernel
   1000 (+ below Tracer). Three threads push and pop guards, in and out of
   order, and check after every step that their state is exactly what their
   own guards make it and that their calls see it: another thread's guards
   never show. */
#define F_BATCHES 400
#define F_ROUNDS_PER_BATCH 250
static dk_registry *f_reg;
static const dk_operator *f_op;
static long f_bad_state[MAX_THREADS], f_bad_call[MAX_THREADS], f_steps[MAX_THREADS];

/* The state must be exactly (included, excluded), and a call must give call_result. */
static void f_check(int me, dk_keyset included, dk_keyset excluded, int call_result) {
    int r = probe_call(f_op, make(DK_CPU, DK_AutogradCPU));
    if (!dk_ks_equal(dk_tls_included(), included) || !dk_ks_equal(dk_tls_excluded(), excluded)) f_bad_state[me]++;
    if (r != call_result || dk_last_call_status() != DK_OK) f_bad_call[me]++;
    f_steps[me]++;
}
/* The same, relative to the defaults. */
static void f_expect(int me, dk_keyset inc, dk_keyset exc, int call_result) {
    f_check(me, dk_ks_or(DK_KS_DEFAULT_INCLUDED, inc), dk_ks_or(DK_KS_DEFAULT_EXCLUDED, exc), call_result);
}

static void f_thread(int me, long batch) {
    dk_keyset tracer = dk_ks_from_key(DK_Tracer), none = DK_KS_EMPTY;
    int i;
    (void)batch;
    for (i = 0; i < F_ROUNDS_PER_BATCH; i++) {
        dk_guard g1, g2;
        switch (me) {
        case 0: /* include Tracer, below_autograd inside it, popped in order */
            g1 = dk_guard_include(tracer);
            f_expect(me, tracer, none, 1011);
            g2 = dk_guard_below_autograd();
            f_expect(me, tracer, DK_KS_AUTOGRAD, 1001);
            dk_guard_pop(g2);
            f_expect(me, tracer, none, 1011);
            dk_guard_pop(g1);
            f_expect(me, none, none, 11);
            break;
        case 1: /* below_autograd, include Tracer, popped out of order */
            g1 = dk_guard_below_autograd();
            f_expect(me, none, DK_KS_AUTOGRAD, 1);
            g2 = dk_guard_include(tracer);
            f_expect(me, tracer, DK_KS_AUTOGRAD, 1001);
            dk_guard_pop(g1);
            f_expect(me, tracer, none, 1011);
            dk_guard_pop(g2);
            f_expect(me, none, none, 11);
            break;
        default: /* force, an include under it, popped out of order */
            g1 = dk_guard_force(tracer, dk_ks_or(DK_KS_AUTOGRAD, DK_KS_DEFAULT_EXCLUDED));
            f_check(me, tracer, dk_ks_or(DK_KS_AUTOGRAD, DK_KS_DEFAULT_EXCLUDED), 1001);
            g2 = dk_guard_include(DK_KS_DEFAULT_INCLUDED); /* adds BackendSelect, ADInplaceOrView back */
            f_expect(me, tracer, DK_KS_AUTOGRAD, 1001);
            dk_guard_pop(g1); /* the force's flips undone; g2's still applied: those two keys flipped off */
            f_check(me, DK_KS_EMPTY, DK_KS_DEFAULT_EXCLUDED, 11);
            dk_guard_pop(g2);
            f_expect(me, none, none, 11);
            break;
        }
        if (!dk_tls_is_default()) f_bad_state[me]++;
    }
}

static void test_f_guards_on_three_threads(void **state) {
    long batches = SCALED(F_BATCHES);
    role roles[3];
    dk_registration *h;
    int i;
    (void)state;
    roles[0] = roles[1] = roles[2] = reader(f_thread, batches, 0);
    f_reg = new_registry();
    assert_int_equal(dk_def(f_reg, "rf::op(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(f_reg, "rf::op", DK_CPU, dk_unboxed(DK_FN(k_id), id(1)), &h), DK_OK);
    assert_int_equal(dk_impl(f_reg, "rf::op", DK_Autograd, dk_unboxed(DK_FN(k_autograd), id(10)), &h), DK_OK);
    assert_int_equal(dk_impl(f_reg, "rf::op", DK_Tracer, dk_unboxed(DK_FN(k_tracer), id(1000)), &h), DK_OK);
    f_op = below_op = dk_op_lookup(f_reg, "rf::op");
    memset(f_bad_state, 0, sizeof f_bad_state);
    memset(f_bad_call, 0, sizeof f_bad_call);
    memset(f_steps, 0, sizeof f_steps);
    run(3, roles);
    for (i = 0; i < 3; i++) {
        printf("  (f) guard thread %d: %ld steps checked, %ld wrong states, %ld wrong calls\n", i, f_steps[i],
               f_bad_state[i], f_bad_call[i]);
        assert_int_equal(f_bad_state[i], 0);
        assert_int_equal(f_bad_call[i], 0);
        assert_int_equal(f_steps[i], batches * F_ROUNDS_PER_BATCH * 4);
    }
    assert_true(dk_tls_is_default()); /* this thread: untouched */
}

/* ---- (g) a fallthrough toggled under calls (the known bug) ---------------- */

/* rg::op has kernels at CPU (1) and AutogradCPU (2). Each writer round
   registers a fallthrough at AutogradCPU and deregisters it. A call with
   {CPU, AutogradCPU} must run the AutogradCPU kernel (no fallthrough) or the
   CPU kernel (AutogradCPU masked out as a fallthrough), never the
   fallthrough itself (DK_ERR_FALLTHROUGH_CALLED): for a call, a slot and
   the fallthrough mask must change together. The variant: a fallthrough
   backend fallback at AutogradCPU, and the writer registers and deregisters
   a real AutogradCPU kernel, so every deregistration uncovers the
   fallthrough. A table published slot first, mask second, fails about once
   per thousand calls made while the writer runs on another core -- but only
   then: on a machine whose other core is busy, the writer and the caller
   rarely run at the same moment. Hence many calls: 250 million per
   variant, in batches of 500 placed in each of 500,000 writer rounds (four
   segments of a fresh registry each, about 2 s in all). */
#define G_SEGMENTS 4
#define G_ROUNDS 125000          /* per segment */
#define G_BATCHES 125000
#define G_CALLS_PER_BATCH 500
#define G_SPREAD 2048
static dk_registry *g_reg;
static const dk_operator *g_op;
static outcomes g_out;

static void g_writer_fallthrough_kernel(int me, long round) {
    dk_registration *h;
    (void)me; (void)round;
    check(dk_impl(g_reg, "rg::op", DK_AutogradCPU, dk_fallthrough(), &h));
    check(dk_deregister(h));
}
static void g_writer_real_kernel(int me, long round) {
    dk_registration *h;
    (void)me; (void)round;
    check(dk_impl(g_reg, "rg::op", DK_AutogradCPU, dk_unboxed(DK_FN(k_id), id(2)), &h));
    check(dk_deregister(h));
}
static void g_caller(int me, long batch) {
    tensor t = make(DK_CPU, DK_AutogradCPU);
    int i;
    (void)me; (void)batch;
    for (i = 0; i < G_CALLS_PER_BATCH; i++) classify(&g_out, probe_call(g_op, t));
}

/* One segment: a fresh registry (so the records retired by the toggles are
   freed after each segment), the expected outcomes checked on one thread,
   then the race. */
static void run_g_segment(int variant) {
    role roles[2];
    dk_registration *h, *k;
    roles[0] = writer(variant == 0 ? g_writer_fallthrough_kernel : g_writer_real_kernel, SCALED(G_ROUNDS));
    roles[1] = reader(g_caller, SCALED(G_BATCHES), G_SPREAD);
    destroy_registry(NULL);
    g_reg = new_registry();
    assert_int_equal(dk_def(g_reg, "rg::op(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(g_reg, "rg::op", DK_CPU, dk_unboxed(DK_FN(k_id), id(1)), &h), DK_OK);
    if (variant == 0)
        assert_int_equal(dk_impl(g_reg, "rg::op", DK_AutogradCPU, dk_unboxed(DK_FN(k_id), id(2)), &h), DK_OK);
    else
        assert_int_equal(dk_fallback(g_reg, DK_AutogradCPU, dk_fallthrough(), &h), DK_OK);
    g_op = dk_op_lookup(g_reg, "rg::op");
    assert_int_equal(probe_call(g_op, make(DK_CPU, DK_AutogradCPU)), variant == 0 ? 2 : 1);
    if (variant == 0) assert_int_equal(dk_impl(g_reg, "rg::op", DK_AutogradCPU, dk_fallthrough(), &k), DK_OK);
    else assert_int_equal(dk_impl(g_reg, "rg::op", DK_AutogradCPU, dk_unboxed(DK_FN(k_id), id(2)), &k), DK_OK);
    assert_int_equal(probe_call(g_op, make(DK_CPU, DK_AutogradCPU)), variant == 0 ? 1 : 2);
    assert_int_equal(dk_deregister(k), DK_OK);
    assert_int_equal(dk_last_call_status(), DK_OK);
    run(2, roles);
}

static void run_g(int variant) {
    static const int expect[] = { 1, 2 };
    int seg;
    writer_failures = 0;
    outcomes_init(&g_out, 2, expect);
    for (seg = 0; seg < G_SEGMENTS; seg++) run_g_segment(variant);
    report(variant == 0 ? "(g) fallthrough kernel toggled at AutogradCPU" : "(g) real kernel over fallthrough fallback",
           &g_out);
    assert_int_equal(writer_failures, 0);
    assert_outcomes(&g_out, G_SEGMENTS * SCALED(G_BATCHES) * G_CALLS_PER_BATCH);
}

static void test_g_fallthrough_toggled_under_calls(void **state) {
    (void)state;
    run_g(0);
}
static void test_g_deregistration_uncovers_fallthrough_fallback(void **state) {
    (void)state;
    run_g(1);
}

/* An argument selects tests by name (cmocka's filter, e.g. "test_g*"). */
int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_a_lookups_racing_defs, destroy_registry),
        cmocka_unit_test_teardown(test_b_calls_racing_impl_swaps, destroy_registry),
        cmocka_unit_test_teardown(test_c_calls_racing_alias_swaps, destroy_registry),
        cmocka_unit_test_teardown(test_d_calls_racing_library_open_close, destroy_registry),
        cmocka_unit_test_teardown(test_e_two_registering_threads, destroy_registry),
        cmocka_unit_test_teardown(test_f_guards_on_three_threads, destroy_registry),
        cmocka_unit_test_teardown(test_g_fallthrough_toggled_under_calls, destroy_registry),
        cmocka_unit_test_teardown(test_g_deregistration_uncovers_fallthrough_fallback, destroy_registry),
    };
    int i;
    for (i = 0; i < 2048; i++) ids[i] = i;
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests_name("races", tests, NULL, NULL);
}
