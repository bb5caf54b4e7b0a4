/* Calls from a thread's destructors after dispatch.h's thread-exit
   destructor, in every round glibc runs, the last one included
   (Note [Reclamation], late calls).

   The test's pthread key is made after dispatch.h's, so glibc runs its
   destructor later in each round; the destructor calls an op and sets its
   key again, so glibc runs it in every round up to
   PTHREAD_DESTRUCTOR_ITERATIONS: nothing runs after the last round's call,
   which therefore must leave nothing behind (ThreadSanitizer: one round
   fewer, see LAST_ROUND). The thread runs on a stack the
   test owns (its TLS lives there: glibc puts a user stack's thread block in
   it) and the test unmaps it after the join, so a writer that still reads
   the thread's call word faults instead of reading stale memory.

   Under call epochs the last round's call runs a kernel that waits while
   thread S deregisters it and synchronizes: synchronize must wait for
   that late call (it counts in dk__late_calls), and no record may link
   the gone thread's word afterwards. Then, with the stack unmapped, an
   impl, a deregistration and a synchronize must return DK_OK.

   Both modes (the default one has no call word: the same program checks
   the calls answer and nothing breaks), plain, ASan+UBSan, ThreadSanitizer
   (exit.mk). Exit status 0 when every check held. */
#define _GNU_SOURCE
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"
#include "linked.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* ThreadSanitizer finishes a thread in a destructor of its own that runs
   in glibc's last round: instrumented code must stop one round before. */
#if defined(__SANITIZE_THREAD__)
#define LAST_ROUND (PTHREAD_DESTRUCTOR_ITERATIONS - 1)
#else
#define LAST_ROUND PTHREAD_DESTRUCTOR_ITERATIONS
#endif

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
static void wait_for(const int *flag) { while (!LOAD(flag)) sched_yield(); }

typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(lrop, int, x.ks, (tensor, x))

static dk_registry *reg;
static const dk_operator *quick_op, *long_op;
static dk_registration *long_impl;
static pthread_key_t late_key;
static const int one = 1;
static int rounds_seen, answered, in_kernel, release, finished;
static dk_status s_dereg;
#ifdef DK_CALL_EPOCHS
static int s_started, s_done, sync_saw_finished;
static dk_status s_sync;
static void nap(void) { struct timespec ts = { 0, 1000000 }; nanosleep(&ts, NULL); }
#endif
static long failures;

#define CHECK(c)                                                                          \
    do {                                                                                  \
        if (!(c)) { failures++; fprintf(stderr, "late_rounds.c:%d: check failed: %s\n", __LINE__, #c); } \
    } while (0)

static tensor cpu(void) { tensor t; t.ks = dk_ks_from_key(DK_CPU); return t; }
static int k_quick(const dk_kernel *k, dk_keyset ks, tensor x) { (void)ks; (void)x; return *(const int *)k->user_data; }
static int k_long(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k; (void)ks; (void)x;
    STORE(&in_kernel, 1);
    wait_for(&release);
    STORE(&finished, 1);
    return 2;
}
static void silent(dk_log_level l, dk_log_item i, const char *m, void *ud) { (void)l; (void)i; (void)m; (void)ud; }

#ifdef DK_CALL_EPOCHS
static void *thread_s(void *arg) {
    (void)arg;
    STORE(&s_started, 1);
    s_dereg = dk_deregister(long_impl);
    s_sync = dk_registry_synchronize(reg);
    STORE(&sync_saw_finished, LOAD(&finished));
    STORE(&s_done, 1);
    return NULL;
}
/* Starts S once the late call is in its kernel, lets S run, then lets the kernel return. */
static void *thread_release(void *arg) {
    pthread_t s;
    int i;
    (void)arg;
    wait_for(&in_kernel);
    if (pthread_create(&s, NULL, thread_s, NULL) != 0) abort();
    wait_for(&s_started);
    for (i = 0; i < 200 && !LOAD(&s_done); i++) nap();   /* time for a synchronize that does not wait to return */
    STORE(&release, 1);
    pthread_join(s, NULL);
    return NULL;
}
#endif

/* Runs on the thread after dispatch.h's destructor, in every round. */
static void late_destructor(void *p) {
    (void)p;
    rounds_seen++;
    if (lrop_call(quick_op, cpu()) == 1) answered++;
    if (rounds_seen == LAST_ROUND) {   /* glibc's last round: a late call that waits */
#ifdef DK_CALL_EPOCHS
        pthread_t rel;
        if (pthread_create(&rel, NULL, thread_release, NULL) != 0) abort();
        if (lrop_call(long_op, cpu()) == 2) answered++;
        pthread_join(rel, NULL);
#else
        /* a thread taking no part is not waited for: no synchronize during its call */
        if (lrop_call(quick_op, cpu()) == 1) answered++;
        s_dereg = dk_deregister(long_impl);
#endif
    }
    if (rounds_seen < LAST_ROUND) pthread_setspecific(late_key, (void *)&one);   /* again next round */
}

static void *thread_main(void *arg) {
    (void)arg;
    if (lrop_call(quick_op, cpu()) == 1) answered++;
    pthread_setspecific(late_key, (void *)&one);
    return NULL;
}


int main(void) {
    dk_registry_desc d;
    dk_registration *h, *again;
    pthread_attr_t attr;
    pthread_t t;
    size_t size = (size_t)1 << 20;
    void *stack;
    int linked;
    memset(&d, 0, sizeof d);
    d.logger.func = silent;
    if (dk_registry_create(&d, &reg) != DK_OK ||
        dk_def(reg, "lr::quick(Tensor x) -> Tensor", &h) != DK_OK ||
        dk_impl(reg, "lr::quick", DK_CPU, dk_unboxed(DK_FN(k_quick), (void *)&one), &h) != DK_OK ||
        dk_def(reg, "lr::long(Tensor x) -> Tensor", &h) != DK_OK ||
        dk_impl(reg, "lr::long", DK_CPU, dk_unboxed(DK_FN(k_long), NULL), &long_impl) != DK_OK)
        return 2;
    quick_op = dk_op_lookup(reg, "lr::quick");
    long_op = dk_op_lookup(reg, "lr::long");
    /* dispatch.h's key first (made with the main thread's state), then ours */
    if (dk_def(reg, "lr::bad(", &h) == DK_OK || !dk_last_error()[0]) return 2;
    if (lrop_call(quick_op, cpu()) != 1) return 2;
    if (pthread_key_create(&late_key, late_destructor) != 0) return 2;

    stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED) return 2;
    pthread_attr_init(&attr);
    if (pthread_attr_setstack(&attr, stack, size) != 0) return 2;
    if (pthread_create(&t, &attr, thread_main, NULL) != 0) return 2;
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);

    linked = linked_elsewhere();
    CHECK(rounds_seen == LAST_ROUND);
    CHECK(answered == 2 + LAST_ROUND);
    CHECK(s_dereg == DK_OK);
#ifdef DK_CALL_EPOCHS
    CHECK(s_sync == DK_OK);
    CHECK(sync_saw_finished == 1);   /* synchronize waited for the last round's late call */
    CHECK(dk__late_calls == 0);
#endif
    CHECK(linked == 0);
    if (linked) {
        printf("a record still links the gone thread's word: not unmapping its stack\n");
    } else {
        munmap(stack, size);   /* the gone thread's TLS with it */
        CHECK(dk_impl(reg, "lr::long", DK_CPU, dk_unboxed(DK_FN(k_long), NULL), &again) == DK_OK);
        CHECK(dk_deregister(again) == DK_OK);
        CHECK(dk_registry_synchronize(reg) == DK_OK);
    }
    printf("%d destructor rounds (%s), each with a late call: %d calls answered, records linked to the gone "
           "thread's word %d, synchronize %s the last round's call\n", rounds_seen,
#ifdef DK_CALL_EPOCHS
           "call epochs",
#else
           "default",
#endif
           answered, linked,
#ifdef DK_CALL_EPOCHS
           sync_saw_finished ? "waited for" : "did not wait for"
#else
           "not run beside"
#endif
           );
    dk_registry_destroy(reg);
    return failures ? 1 : 0;
}
