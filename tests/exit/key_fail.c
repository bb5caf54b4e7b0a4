/* A thread whose exit destructor cannot be registered (pthread_setspecific
   fails: ENOMEM) must not be attached to call epochs: nothing would unlink
   its TLS word from the record list when it exits (Note [Reclamation]).
   The test makes pthread_setspecific fail by defining it here (the
   executable's definition comes first; the real one is found with
   RTLD_NEXT), each case in a child process of its own (fork):
     1. it always fails on the thread: under call epochs the thread's first
        call stops the process with the attach message (SIGABRT), never
        attaching; in the default mode the thread's calls and its error
        message still work;
     2. it fails once, on the thread's first error (its state is made
        then), and works afterwards: the attach tries again and succeeds,
        and once the thread is joined no record links its word.
   Both modes, plain, ASan+UBSan, ThreadSanitizer (exit.mk). */
#define _GNU_SOURCE
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"
#include "linked.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static int fail_setspecific;   /* > 0: that many more calls fail; < 0: all fail */
/* ThreadSanitizer's runtime calls it too, before the thread is set up for
   instrumented code */
#if defined(__SANITIZE_THREAD__)
__attribute__((no_sanitize_thread))
#endif
int pthread_setspecific(pthread_key_t key, const void *value) {
    static int (*real)(pthread_key_t, const void *);
    if (fail_setspecific) {
        if (fail_setspecific > 0) fail_setspecific--;
        return ENOMEM;
    }
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "pthread_setspecific");
    return real(key, value);
}

typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(kfop, int, x.ks, (tensor, x))
static dk_registry *reg;
static const dk_operator *op;
static const int one = 1;
static int answered, message_kept;
static tensor cpu(void) { tensor t; t.ks = dk_ks_from_key(DK_CPU); return t; }
static int k_one(const dk_kernel *k, dk_keyset ks, tensor x) { (void)ks; (void)x; return *(const int *)k->user_data; }

static void *thread_main(void *arg) {
    dk_registration *h;
    fail_setspecific = *(const int *)arg;   /* only this thread runs meanwhile */
    /* its first error makes its state (and sets the key) */
    message_kept = dk_def(reg, "kf::bad(", &h) != DK_OK && strstr(dk_last_error(), "kf::bad") != NULL;
    if (fail_setspecific > 0) fail_setspecific = 0;
    answered = kfop_call(op, cpu()) == 1;   /* call epochs: attaches here */
    fail_setspecific = 0;
    return NULL;
}


/* One case in a child; its exit status: 0 ok, else which check failed. */
static int run_case(int fails) {
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, &fails) != 0) return 10;
    pthread_join(t, NULL);
    if (!message_kept) return 11;
    if (!answered) return 12;
    if (linked_elsewhere()) return 13;   /* its word outlived it in the list */
    return 0;
}

static void silent(dk_log_level l, dk_log_item i, const char *m, void *ud) { (void)l; (void)i; (void)m; (void)ud; }

int main(void) {
    dk_registration *h;
    dk_registry_desc d;
    int status, bad = 0;
    pid_t pid;
    memset(&d, 0, sizeof d);
    d.logger.func = silent;
    if (dk_registry_create(&d, &reg) != DK_OK || dk_def(reg, "kf::op(Tensor x) -> Tensor", &h) != DK_OK ||
        dk_impl(reg, "kf::op", DK_CPU, dk_unboxed(DK_FN(k_one), (void *)&one), &h) != DK_OK)
        return 2;
    op = dk_op_lookup(reg, "kf::op");
    if (kfop_call(op, cpu()) != 1) return 2;   /* dispatch.h's key made (call epochs: attached) */
    if (dk_def(reg, "kf::bad(", &h) == DK_OK) return 2;

    /* 1: never registered */
    fflush(stdout);
    if ((pid = fork()) < 0) return 2;
    if (pid == 0) _exit(run_case(-1));
    if (waitpid(pid, &status, 0) != pid) return 2;
#ifdef DK_CALL_EPOCHS
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT) {
        bad++;
        printf("case 1: the thread was attached without an exit destructor (status %d)\n", status);
    } else {
        printf("case 1: pthread_setspecific fails on the thread: its first call stops the process (SIGABRT), "
               "never attaching\n");
    }
#else
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        bad++;
        printf("case 1: status %d\n", status);
    } else {
        printf("case 1: pthread_setspecific fails on the thread: its calls and its error message work\n");
    }
#endif

    /* 2: registered at the second try */
    fflush(stdout);
    if ((pid = fork()) < 0) return 2;
    if (pid == 0) _exit(run_case(1));
    if (waitpid(pid, &status, 0) != pid) return 2;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        bad++;
        printf("case 2: status %d (13: a record still links the gone thread's word)\n", status);
    } else {
        printf("case 2: pthread_setspecific fails once: the attach registers again, the joined thread's word "
               "is unlinked\n");
    }
    dk_registry_destroy(reg);
    return bad ? 1 : 0;
}
