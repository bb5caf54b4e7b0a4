/* Item 4.4 of the memory issue: a call made from a thread-local destructor
   that runs after dispatch.h's own thread-exit destructor must not write
   into the record the exiting thread gave back (Note [Reclamation]).

   Each round runs in a child process of its own (fork), so that the record
   list holds exactly the records the round makes:
     1. the main thread fails a registration: its thread state makes
        dispatch.h's pthread key; then the test's key is made, after it,
        so glibc runs the test's destructor later;
     2. thread E calls (call epochs) or goes online and calls (default),
        sets the test's key and returns: dispatch.h's destructor gives its
        record R back, then the test's destructor runs on E and
     3. starts thread U, which claims R (checked: the same record) and
        enters a long kernel (default mode: online, then the kernel);
     4. makes the late call (default: online, call, offline, as a thread
        that takes part would), which must attach a fresh record (default)
        or count as a late call without attaching (call epochs);
     5. starts thread S, which deregisters U's kernel and synchronizes, and
        records whether U's kernel had finished when synchronize returned.
        U's kernel finishes only once S has been left time to return; a
        late call that cleared R (its call exit, its offline) or moved it
        forward (its online) would let synchronize return at once.
   Counted over ROUNDS rounds: U claimed R, the late call answered right,
   synchronize waited. Both modes, plain, ASan+UBSan and ThreadSanitizer
   (exit.mk). Uses dk__rd (the calling thread's record) to prove step 3. */
#define _POSIX_C_SOURCE 200809L
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#ifndef ROUNDS
#define ROUNDS 20
#endif

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
static void wait_for(const int *flag) { while (!LOAD(flag)) sched_yield(); }
static void nap(void) { struct timespec ts = { 0, 1000000 }; nanosleep(&ts, NULL); }

typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(ldop, int, x.ks, (tensor, x))

static dk_registry *reg;
static const dk_operator *quick_op, *long_op;
static dk_registration *long_impl;
static pthread_key_t late_key;
static const int one = 1;
static dk__reader *e_rec, *u_rec;
static int u_in_kernel, u_release, u_finished, s_started, s_done, sync_saw_finished, late_value;
static dk_status s_dereg, s_sync;

static tensor cpu(void) { tensor t; t.ks = dk_ks_from_key(DK_CPU); return t; }
static int k_quick(const dk_kernel *k, dk_keyset ks, tensor x) { (void)ks; (void)x; return *(const int *)k->user_data; }
static int k_long(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k; (void)ks; (void)x;
#ifdef DK_CALL_EPOCHS
    STORE(&u_rec, dk__rd.rec);
#endif
    STORE(&u_in_kernel, 1);
    wait_for(&u_release);
    STORE(&u_finished, 1);
    return 2;
}
static void silent(dk_log_level l, dk_log_item i, const char *m, void *ud) { (void)l; (void)i; (void)m; (void)ud; }

static void *thread_u(void *arg) {
    (void)arg;
#ifndef DK_CALL_EPOCHS
    if (dk_thread_online() != DK_OK) abort();
    STORE(&u_rec, dk__rd.rec);
#endif
    if (ldop_call(long_op, cpu()) != 2) abort();
#ifndef DK_CALL_EPOCHS
    if (dk_registry_reclaim(reg) != DK_OK) abort();   /* its quiescent point: synchronize may return */
    if (dk_thread_offline() != DK_OK) abort();
#endif
    return NULL;
}

static void *thread_s(void *arg) {
    (void)arg;
    STORE(&s_started, 1);
    s_dereg = dk_deregister(long_impl);
    s_sync = dk_registry_synchronize(reg);
    STORE(&sync_saw_finished, LOAD(&u_finished));
    STORE(&s_done, 1);
    return NULL;
}

/* Runs on E after dispatch.h's thread-exit destructor. */
static void late_destructor(void *p) {
    pthread_t u, s;
    int i;
    (void)p;
    if (pthread_create(&u, NULL, thread_u, NULL) != 0) abort();
    wait_for(&u_in_kernel);
    /* the late call */
#ifndef DK_CALL_EPOCHS
    if (dk_thread_online() != DK_OK) abort();
#endif
    STORE(&late_value, ldop_call(quick_op, cpu()));
#ifndef DK_CALL_EPOCHS
    if (dk_thread_offline() != DK_OK) abort();
#endif
    if (pthread_create(&s, NULL, thread_s, NULL) != 0) abort();
    wait_for(&s_started);
    for (i = 0; i < 200 && !LOAD(&s_done); i++) nap();   /* time for a synchronize that does not wait to return */
    STORE(&u_release, 1);
    pthread_join(s, NULL);
    pthread_join(u, NULL);
}

static void *thread_e(void *arg) {
    (void)arg;
#ifndef DK_CALL_EPOCHS
    if (dk_thread_online() != DK_OK) abort();
#endif
    if (ldop_call(quick_op, cpu()) != 1) abort();
    e_rec = dk__rd.rec;
    if (!e_rec) abort();
    pthread_setspecific(late_key, (void *)&one);
    return NULL;
}

/* One round; its exit status: bit 0 U did not claim R, bit 1 late call
   wrong, bit 2 synchronize did not wait, bit 3 a status not DK_OK. */
static int round_in_child(void) {
    dk_registry_desc d;
    dk_registration *h;
    pthread_t e;
    int bad = 0;
    memset(&d, 0, sizeof d);
    d.logger.func = silent;
    if (dk_registry_create(&d, &reg) != DK_OK) return 16;
    if (dk_def(reg, "ld::quick(Tensor x) -> Tensor", &h) != DK_OK ||
        dk_impl(reg, "ld::quick", DK_CPU, dk_unboxed(DK_FN(k_quick), (void *)&one), &h) != DK_OK ||
        dk_def(reg, "ld::long(Tensor x) -> Tensor", &h) != DK_OK ||
        dk_impl(reg, "ld::long", DK_CPU, dk_unboxed(DK_FN(k_long), NULL), &long_impl) != DK_OK)
        return 16;
    quick_op = dk_op_lookup(reg, "ld::quick");
    long_op = dk_op_lookup(reg, "ld::long");
    /* dispatch.h's key first (made with the first thread state), then ours */
    if (dk_def(reg, "ld::bad(", &h) == DK_OK || !dk_last_error()[0]) return 16;
    if (pthread_key_create(&late_key, late_destructor) != 0) return 16;
    if (pthread_create(&e, NULL, thread_e, NULL) != 0) return 16;
    pthread_join(e, NULL);   /* returns after E's destructors ran */
    if (LOAD(&u_rec) != e_rec) bad |= 1;
    if (LOAD(&late_value) != 1) bad |= 2;
    if (LOAD(&sync_saw_finished) != 1) bad |= 4;
    if (s_dereg != DK_OK || s_sync != DK_OK) bad |= 8;
    dk_registry_destroy(reg);
    return bad;
}

int main(void) {
    int i, claimed = 0, late_ok = 0, waited = 0, other = 0;
    for (i = 0; i < ROUNDS; i++) {
        int status, code;
        pid_t pid;
        fflush(stdout);
        if ((pid = fork()) < 0) return 2;
        if (pid == 0) _exit(round_in_child());
        if (waitpid(pid, &status, 0) != pid) return 2;
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 32;
        if (code >= 16) other++;
        else {
            claimed += !(code & 1);
            late_ok += !(code & 2);
            waited += !(code & 4);
            other += (code & 8) != 0;
        }
    }
    printf("%d rounds (%s): U claimed the exiting thread's record %d, late call answered %d, synchronize waited "
           "for U's kernel %d, other failures %d\n", ROUNDS,
#ifdef DK_CALL_EPOCHS
           "call epochs",
#else
           "default",
#endif
           claimed, late_ok, waited, other);
    return claimed == ROUNDS && late_ok == ROUNDS && waited == ROUNDS && other == 0 ? 0 : 1;
}
