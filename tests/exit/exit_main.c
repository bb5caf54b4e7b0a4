/* Item 4.6 of the memory issue: main returns while other threads are still
   in the library. A DK_LIBRARY block registered the operators before main;
   at exit its destructor runs. One thread is parked inside a kernel for
   ever; another calls without pause (and, in the default mode, declares
   quiescent points; its failing registrations write its thread state); a
   third keeps starting short threads that call and exit. The process must
   exit at once with status 0: exit neither waits for the parked call
   (call epochs spun there for ever) nor frees what the running threads
   read (the exit-time close freed the operator under the calling thread:
   ThreadSanitizer's heap-use-after-free), nor tears down the thread-key
   state under threads that exit meanwhile. exit.mk runs it several times
   per build, plain, under ASan+UBSan and under ThreadSanitizer, each under
   `timeout`: a hang is a failure, and so is any sanitizer report (exit
   status 66 under ThreadSanitizer with halt_on_error=1) or wrong answer
   (abort). Prints one line, as main returns. */
#define _POSIX_C_SOURCE 200809L
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(exop, int, x.ks, (tensor, x))

static int parked, calls_started, never;
static const int one = 1;

static int k_parks(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k; (void)ks; (void)x;
    STORE(&parked, 1);
    while (!LOAD(&never)) sched_yield();   /* for ever: exit ends it */
    return 0;
}
static int k_one(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)ks; (void)x;
    return *(const int *)k->user_data;
}

DK_LIBRARY(exitt, m) {
    dk_library_def(m, "parked(Tensor x) -> Tensor");
    dk_library_def(m, "busy(Tensor x) -> Tensor");
}
DK_LIBRARY_IMPL(exitt, CPU, m) {
    dk_library_impl(m, "parked", DK_Undefined, dk_unboxed(DK_FN(k_parks), NULL));
    dk_library_impl(m, "busy", DK_Undefined, dk_unboxed(DK_FN(k_one), (void *)&one));
}

static tensor cpu(void) { tensor t; t.ks = dk_ks_from_key(DK_CPU); return t; }

static void *parker(void *arg) {
    (void)arg;
    exop_call(dk_op_lookup(dk_registry_default(), "exitt::parked"), cpu());
    return NULL;
}

/* Calls (looking the operator up again each time: the exit-time close
   would remove it), fails a registration now and then, and in the default
   mode passes a quiescent point every 256 calls. Any wrong answer aborts. */
static void *caller(void *arg) {
    dk_registry *r = dk_registry_default();
    dk_registration *h;
    unsigned long n = 0;
    (void)arg;
#ifndef DK_CALL_EPOCHS
    if (dk_thread_online() != DK_OK) abort();
#endif
    for (;;) {
        const dk_operator *op = dk_op_lookup(r, "exitt::busy");
        if (!op || exop_call(op, cpu()) != 1) abort();
        if (++n == 1000) STORE(&calls_started, 1);
        if (n % 64 == 0 && (dk_def(r, "exitt::bad(", &h) == DK_OK || !dk_last_error()[0])) abort();
#ifndef DK_CALL_EPOCHS   /* (with call epochs it would wait for the parked call) */
        if (n % 256 == 0 && dk_registry_reclaim(r) != DK_OK) abort();
#endif
    }
    return NULL;
}

/* Detached (ThreadSanitizer reports a finished thread nobody joined at
   exit); the next one starts when this one's body is done, while its
   thread-exit destructors may still run. */
static int short_done;
static void *short_lived(void *arg) {
    dk_registration *h;
    (void)arg;
    if (exop_call(dk_op_lookup(dk_registry_default(), "exitt::busy"), cpu()) != 1) abort();
    if (dk_def(dk_registry_default(), "exitt::bad(", &h) == DK_OK) abort();   /* a thread state to free at exit */
    STORE(&short_done, 1);
    return NULL;
}
static void *spawner(void *arg) {
    pthread_attr_t a;
    (void)arg;
    if (pthread_attr_init(&a) || pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED)) abort();
    for (;;) {
        pthread_t t;
        STORE(&short_done, 0);
        if (pthread_create(&t, &a, short_lived, NULL) != 0) abort();
        while (!LOAD(&short_done)) sched_yield();
    }
    return NULL;
}

int main(void) {
    pthread_t p, c, s;
    if (!dk_op_lookup(dk_registry_default(), "exitt::busy")) return 3;
    if (pthread_create(&p, NULL, parker, NULL) || pthread_create(&c, NULL, caller, NULL) ||
        pthread_create(&s, NULL, spawner, NULL))
        return 4;
    while (!LOAD(&parked) || !LOAD(&calls_started)) sched_yield();
    printf("main returns: one thread parked in a kernel, one calling, one starting threads\n");
    fflush(stdout);
    return 0;   /* exit: the library block's destructor runs beside the threads */
}
