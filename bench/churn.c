/* bench/churn.c - what registrations under churn cost the writer and every
   other running thread, in the reclamation mode it is built in (make bench
   builds and runs it twice: default and -DDK_CALL_EPOCHS, and prints both).

   writer_us    one impl + deregister of a kernel while a reader thread calls
                the operator without pause (declaring a quiescent point every
                10,000 calls in the default mode): microseconds per cycle,
                median of 5 rounds of CYCLES
   slowdown     a plain function-pointer loop on another thread: ns per
                iteration while the writer churns, over ns per iteration
                without it (the same run, alternating; the median of 5
                pairs): what the writer's barriers cost everyone else
   Targets (issue on memory and unloading): call epochs at most 3 us per
   cycle and a slowdown of at most 1.2x. */
#define _GNU_SOURCE 1
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CYCLES 20000
#define ROUNDS 5

typedef struct tensor { dk_keyset ks; int v; } tensor;
DK_DECLARE_OP(neg, int, x.ks, (tensor, x))
static int k_cpu(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return -x.v; }
static int k_math(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return x.v; }

#include "clock.h"
static double median(double *v, int n) { qsort(v, (size_t)n, sizeof *v, cmp_double); return v[n / 2]; }

static dk_registry *reg;
static const dk_operator *op;
static int stop_reader, stop_loop, churning;
static volatile long sink;

static void *reader(void *arg) {
    tensor x;
    long n = 0;
    (void)arg;
    (void)n;
    x.ks = dk_ks_from_key(DK_CPU);
    x.v = 1;
    dk_thread_online();
    while (!__atomic_load_n(&stop_reader, __ATOMIC_ACQUIRE)) {
        sink += neg_call(op, x);
#ifndef DK_CALL_EPOCHS   /* (call epochs need no quiescent points) */
        if (++n % 10000 == 0) dk_registry_reclaim(reg);
#endif
    }
    dk_thread_offline();
    return NULL;
}

static int plain(int v) { return v + 1; }
static int (*volatile plain_fn)(int) = plain;
static double loop_ns[2][ROUNDS];   /* [churning][round] */
static int loop_round = -1;
static void *fnptr_loop(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&stop_loop, __ATOMIC_ACQUIRE)) {
        int round = __atomic_load_n(&loop_round, __ATOMIC_ACQUIRE), c = __atomic_load_n(&churning, __ATOMIC_ACQUIRE);
        double a = now_ns();
        long i, s = 0;
        for (i = 0; i < 1000000; i++) s += plain_fn((int)i);
        sink += s;
        if (round >= 0 && round == __atomic_load_n(&loop_round, __ATOMIC_ACQUIRE) &&
            c == __atomic_load_n(&churning, __ATOMIC_ACQUIRE))
            loop_ns[c][round] = (now_ns() - a) / 1e6;
    }
    return NULL;
}

static double churn(int cycles) {
    dk_registration *h;
    double a = now_ns();
    int i;
    for (i = 0; i < cycles; i++) {
        dk_impl(reg, "b::churn", DK_CPU, dk_unboxed(DK_FN(k_cpu), NULL), &h);
        dk_deregister(h);
    }
    return (now_ns() - a) / cycles / 1e3;
}

int main(void) {
    dk_registration *def, *math;
    pthread_t rd, lp;
    double writer[ROUNDS], ratio[ROUNDS];
    int r;
    dk_registry_create(NULL, &reg);
    dk_def(reg, "b::churn(Tensor x) -> Tensor", &def);
    dk_impl(reg, "b::churn", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_math), NULL), &math);
    op = dk_op_lookup(reg, "b::churn");
    pthread_create(&rd, NULL, reader, NULL);
    for (r = 0; r < ROUNDS; r++) writer[r] = churn(CYCLES);
    __atomic_store_n(&stop_reader, 1, __ATOMIC_RELEASE);
    pthread_join(rd, NULL);
    dk_registry_reclaim(reg);
    pthread_create(&lp, NULL, fnptr_loop, NULL);
    for (r = 0; r < ROUNDS; r++) {
        struct timespec ms = { 0, 30 * 1000 * 1000 };
        __atomic_store_n(&churning, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&loop_round, r, __ATOMIC_RELEASE);
        nanosleep(&ms, NULL);
        __atomic_store_n(&churning, 1, __ATOMIC_RELEASE);
        churn(CYCLES);
        ratio[r] = loop_ns[0][r] > 0 && loop_ns[1][r] > 0 ? loop_ns[1][r] / loop_ns[0][r] : 1.0;
        dk_registry_reclaim(reg);
    }
    __atomic_store_n(&stop_loop, 1, __ATOMIC_RELEASE);
    pthread_join(lp, NULL);
    printf("%-12s writer %.2f us per impl+deregister beside a calling thread; a function-pointer loop on another "
           "thread ran %.2fx slower while the writer churned\n",
#ifdef DK_CALL_EPOCHS
           "call epochs:",
#else
           "default:",
#endif
           median(writer, ROUNDS), median(ratio, ROUNDS));
    dk_thread_offline();
    dk_registry_destroy(reg);
    return 0;
}
