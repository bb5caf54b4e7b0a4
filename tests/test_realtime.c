/* make: variants=epochs tsan=plain,epochs */
/* make: flags=-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free */
/* make: flags=-Wl,--wrap=pthread_mutex_lock,--wrap=pthread_mutex_trylock,--wrap=sched_yield */
/* The real-time contract (REAL-TIME THREADS in the manual): once a thread
   has called dk_thread_attach, nothing it does through dispatch.h while
   calling -- typed calls, guards, a boxed fallback that redispatches, a
   boxed call, a failing call, its quiescent point dk_thread_quiescent --
   allocates, locks or makes a system call, whatever other threads
   register meanwhile. An "audio" thread runs a fixed number of blocks
   beside a writer that churns kernels and operators, opens and closes
   library blocks (what a plugin's load and unload do) and reclaims; the
   audio thread's mallocs, frees, mutex locks and yields are counted
   through functions the link wraps (-Wl,--wrap=malloc ...: every
   reference the implementation in this unit makes goes through them) and
   must be 0 after attach. A thread that does not attach shows the same
   counters moving: the count sees the implementation's allocations.
   System calls, whatever makes them (syscall(), which no link can wrap,
   inline asm, libc), are counted by a seccomp filter on the audio thread
   alone (Linux x86-64, the plain builds: the sanitizers' runtimes make
   calls of their own): every system call not made from one stub traps,
   and the SIGSYS handler counts it and makes it through the stub, so the
   thread runs as it would unfiltered, close enough for counting (a signal
   mask set through the stub is undone by the handler's return; nothing
   here sets one). A machine whose kernel refuses the filter (no seccomp,
   a sandbox) says so in the output and counts no system calls.
   Both modes, plain, under ASan+UBSan and under ThreadSanitizer. */
#define _GNU_SOURCE   /* ucontext's register names, for the SIGSYS handler */
#define _POSIX_C_SOURCE 200809L
/* One test here counts what a thread that never attaches allocates at its
   first failing call; DK_DEBUG_THREADS (on in the test builds) would stop
   that thread instead, as test_reads checks. */
#undef DK_DEBUG_THREADS
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <unistd.h>
#include <cmocka.h>

#ifndef BLOCKS
#define BLOCKS 20000          /* audio blocks; each makes every kind of call once */
#endif
#define RECLAIM_EVERY 64      /* writer cycles between two reclaims */

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

/* ---- counting what a thread asks of libc -------------------------------------- */

static __thread int counting;   /* this thread's calls are counted */
static long n_malloc, n_free, n_lock, n_yield;
#define COUNT(c) do { if (counting) __atomic_add_fetch(&(c), 1, __ATOMIC_RELAXED); } while (0)

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __real_pthread_mutex_trylock(pthread_mutex_t *m);
int __real_sched_yield(void);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
int __wrap_pthread_mutex_lock(pthread_mutex_t *m);
int __wrap_pthread_mutex_trylock(pthread_mutex_t *m);
int __wrap_sched_yield(void);
void *__wrap_malloc(size_t n) { COUNT(n_malloc); return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { COUNT(n_malloc); return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { COUNT(n_malloc); return __real_realloc(p, n); }
void __wrap_free(void *p) { if (p) COUNT(n_free); __real_free(p); }
int __wrap_pthread_mutex_lock(pthread_mutex_t *m) { COUNT(n_lock); return __real_pthread_mutex_lock(m); }
int __wrap_pthread_mutex_trylock(pthread_mutex_t *m) { COUNT(n_lock); return __real_pthread_mutex_trylock(m); }
int __wrap_sched_yield(void) { COUNT(n_yield); return __real_sched_yield(); }

/* System calls: a seccomp filter (SECCOMP_RET_TRAP) on the counted thread
   lets through only rt_sigreturn (the handler's return) and what
   raw_syscall makes; on_sigsys counts the rest while counting and makes
   each through raw_syscall, with its registers, so it still happens. */
#if defined(__linux__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && \
    !defined(DK__TSAN) && !defined(DK__ASAN)
#define COUNT_SYSCALLS 1
#include <signal.h>
#include <ucontext.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
static long n_syscall, first_syscall = -1;
long raw_syscall(long nr, long a, long b, long c, long d, long e, long f);
extern const char raw_syscall_after[];   /* the address after its syscall instruction */
__asm__(".text\n.globl raw_syscall\n.type raw_syscall, @function\nraw_syscall:\n"
        "\tmovq %rdi, %rax\n\tmovq %rsi, %rdi\n\tmovq %rdx, %rsi\n\tmovq %rcx, %rdx\n"
        "\tmovq %r8, %r10\n\tmovq %r9, %r8\n\tmovq 8(%rsp), %r9\n\tsyscall\n"
        ".globl raw_syscall_after\nraw_syscall_after:\n\tret\n.size raw_syscall, .-raw_syscall\n");
static void on_sigsys(int sig, siginfo_t *si, void *ucv) {
    greg_t *g = ((ucontext_t *)ucv)->uc_mcontext.gregs;
    long expected = -1;
    (void)sig;
    if (counting) {
        COUNT(n_syscall);
        (void)__atomic_compare_exchange_n(&first_syscall, &expected, (long)si->si_syscall, 0, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED);
    }
    g[REG_RAX] = raw_syscall(si->si_syscall, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]);
}
/* On this thread from now on (its children too): 0, or -1 (errno). */
static int filter_syscalls(void) {
    static int handler_set;
    unsigned long ip = (unsigned long)(uintptr_t)raw_syscall_after;
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigreturn, 5, 0),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)(ip & 0xffffffffu), 0, 2),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, instruction_pointer) + 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)(ip >> 32), 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog;
    prog.len = (unsigned short)(sizeof f / sizeof f[0]);
    prog.filter = f;
    if (!handler_set) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigsys;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGSYS, &sa, NULL) != 0) return -1;
        handler_set = 1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}
#define COUNTS_SYSCALLS 1
#else
#define COUNTS_SYSCALLS 0
static long n_syscall, first_syscall = -1;
static int filter_syscalls(void) { return -1; }
#endif

typedef struct counts { long malloc, free, lock, yield, syscall, first_syscall; } counts;
static counts counted(void) {
    counts c;
    c.malloc = LOAD(&n_malloc); c.free = LOAD(&n_free); c.lock = LOAD(&n_lock); c.yield = LOAD(&n_yield);
    c.syscall = LOAD(&n_syscall); c.first_syscall = LOAD(&first_syscall);
    return c;
}
static void reset_counts(void) {
    STORE(&n_malloc, 0); STORE(&n_free, 0); STORE(&n_lock, 0); STORE(&n_yield, 0);
    STORE(&n_syscall, 0); STORE(&first_syscall, -1);
}

/* ---- the operators -------------------------------------------------------------- */

typedef struct tensor { dk_keyset ks; int v; } tensor;
DK_DECLARE_OP(unary, int, x.ks, (tensor, x))

static tensor make(dk_key k, int v) { tensor t; t.ks = dk_ks_from_key(k); t.v = v; return t; }
static dk_keyset tensor_ks(const void *t, void *ud) { (void)ud; return ((const tensor *)t)->ks; }

static const int value_cpu = 1, value_math = 7, value_lib = 3;
static int k_value(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)ks; (void)x;
    return *(const int *)k->user_data;
}
/* Autograd: redispatches below itself (a call inside a call). */
static const dk_operator *op_main, *op_boxed, *op_missing;
static int k_autograd(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k;
    return 100 + unary_redispatch(op_main, dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD), x);
}
/* A boxed fallback at Tracer: the typed call's argument pack, or a boxed
   stack, redispatched below Tracer. */
static void tracer_fallback(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k;
    if (stack->unboxed_args) {
        unary_args *p = (unary_args *)stack->unboxed_args;
        p->result = 1000 + unary_redispatch(op, dk_ks_remove(ks, DK_Tracer), p->x);
        return;
    }
    dk_redispatch_boxed(op, dk_ks_remove(ks, DK_Tracer), stack);
}
/* op_boxed's CPU kernel, boxed: pops the tensor, pushes its value + 5. */
static void boxed_cpu(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    dk_value v = dk_stack_pop(stack);
    (void)k; (void)op; (void)ks;
    (void)dk_stack_push(stack, dk_int(((const tensor *)v.as.tensor)->v + 5));
}

static dk_registry *reg, *reg_c10;   /* reg_c10: c10's messages, word for word */
static const dk_operator *op_c10;
static int writer_stop;

/* The writer: replaces op_main's CPU kernel, defines and removes fresh
   operators, opens a library block (an IMPL block at CPU for op_main, as
   a plugin's load registers) and closes it (its unload), reclaiming
   every RECLAIM_EVERY cycles. It frees; the audio thread never does. */
static void *writer(void *arg) {
    long *cycles = (long *)arg;
    char name[64];
    (void)arg;
    do {
        dk_registration *h, *d;
        dk_library *lib;
        assert_int_equal(dk_impl(reg, "rt::main", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&value_cpu), &h), DK_OK);
        snprintf(name, sizeof name, "rt::fresh%ld(Tensor x) -> Tensor", *cycles % 16);
        assert_int_equal(dk_def(reg, name, &d), DK_OK);
        assert_int_equal(dk_library_open(reg, DK_LIBRARY_KIND_IMPL, "rt", DK_CPU, &lib), DK_OK);
        assert_int_equal(dk_library_impl(lib, "main", DK_Undefined, dk_unboxed(DK_FN(k_value), (void *)&value_lib)),
                         DK_OK);
        assert_int_equal(dk_library_close(lib), DK_OK);
        assert_int_equal(dk_deregister(d), DK_OK);
        assert_int_equal(dk_deregister(h), DK_OK);
        if (++*cycles % RECLAIM_EVERY == 0) assert_int_equal(dk_registry_reclaim(reg), DK_OK);
    } while (!LOAD(&writer_stop));
    return NULL;
}

typedef struct audio_result {
    long wrong, failed_ok, blocks;
    int filtered;   /* the seccomp filter is on: system calls counted */
    int filter_errno;   /* else why not (0: a build that does not count) */
    long control_syscalls, control_pid;   /* what the count saw of one syscall() after the blocks, its result */
    counts after_attach;
} audio_result;

/* One block: every kind of call once, then the quiescent point. */
static void audio_block(audio_result *res) {
    dk_value storage[8];
    dk_stack st;
    dk_guard g;
    tensor cpu = make(DK_CPU, 0), ag = cpu, cuda = make(DK_CUDA, 0);
    int v;
    ag.ks = dk_ks_or(cpu.ks, dk_ks_from_key(DK_AutogradCPU));
    v = unary_call(op_main, cpu);                       /* the CPU kernel, the library's, or the math one */
    res->wrong += v != value_cpu && v != value_math && v != value_lib;
    v = unary_call(op_main, ag);                        /* autograd, then a redispatch */
    res->wrong += v != 100 + value_cpu && v != 100 + value_math && v != 100 + value_lib;
    g = dk_guard_below_autograd();                      /* a guard: autograd skipped */
    v = unary_call(op_main, ag);
    res->wrong += v != value_cpu && v != value_math && v != value_lib;
    dk_guard_pop(g);
    g = dk_guard_include(dk_ks_from_key(DK_Tracer));    /* a boxed fallback that redispatches */
    v = unary_call(op_main, cpu);
    res->wrong += v != 1000 + value_cpu && v != 1000 + value_math && v != 1000 + value_lib;
    dk_stack_init(&st, storage, 8);                     /* a boxed call through the fallback */
    (void)dk_stack_push(&st, dk_tensor(&cpu));
    dk_call_boxed(op_boxed, &st);
    res->wrong += st.size != 1 || st.values[0].tag != DK_VALUE_INT || st.values[0].as.i != 5;
    dk_guard_pop(g);
    (void)dk_last_call_status();
    v = unary_call(op_missing, cuda);                   /* a failing call: no kernel for CUDA */
    res->failed_ok += v == 0 && dk_last_call_status() == DK_ERR_NO_KERNEL &&
                      strstr(dk_last_error(), "rt::missing") != NULL;
    v = unary_call(op_c10, cuda);                       /* c10's message: the table printed too */
    res->failed_ok += v == 0 && dk_last_call_status() == DK_ERR_NO_KERNEL &&
                      strstr(dk_last_error(), "Could not run 'rt::c10' with arguments from the 'CUDA'") != NULL;
    dk_stack_init(&st, storage, 8);                     /* a failing boxed call */
    (void)dk_stack_push(&st, dk_tensor(&cuda));
    dk_call_boxed(op_missing, &st);
    res->failed_ok += dk_last_call_status() == DK_ERR_NO_KERNEL;
    dk_stack_init(&st, storage, 8);                     /* a boxed call refused: no argument */
    dk_call_boxed(op_missing, &st);
    res->failed_ok += dk_last_call_status() == DK_ERR_BAD_STACK;
    res->wrong += dk_thread_quiescent() != DK_OK;       /* its quiescent point: one store */
    res->blocks++;
}

static void *audio(void *arg) {
    audio_result *res = (audio_result *)arg;
    int i;
    assert_int_equal(dk_thread_attach(), DK_OK);
    res->filtered = filter_syscalls() == 0;
    res->filter_errno = res->filtered || !COUNTS_SYSCALLS ? 0 : errno;
    counting = 1;                                       /* from here on: nothing */
    for (i = 0; i < BLOCKS; i++) audio_block(res);
    counting = 0;
    res->after_attach = counted();
#ifdef COUNT_SYSCALLS
    counting = 1;                                       /* the count's control: one syscall() it sees */
    res->control_pid = syscall(SYS_getpid);
    counting = 0;
    res->control_syscalls = LOAD(&n_syscall) - res->after_attach.syscall;
#endif
    assert_int_equal(dk_thread_offline(), DK_OK);
    return NULL;
}

static void quiet(dk_log_level level, dk_log_item item, const char *m, void *ud) {
    (void)level; (void)item; (void)m; (void)ud;
}
static void setup_registry(void) {
    dk_registry_desc d;
    dk_registration *h;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = tensor_ks;
    d.logger.func = quiet;   /* the writer overrides op_main's CPU kernel on every cycle */
    assert_int_equal(dk_registry_create(&d, &reg), DK_OK);
    assert_int_equal(dk_def(reg, "rt::main(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "rt::main", DK_CompositeImplicitAutograd,
                             dk_unboxed(DK_FN(k_value), (void *)&value_math), &h), DK_OK);
    assert_int_equal(dk_impl(reg, "rt::main", DK_AutogradCPU, dk_unboxed(DK_FN(k_autograd), NULL), &h), DK_OK);
    assert_int_equal(dk_def(reg, "rt::boxed(Tensor x) -> int", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "rt::boxed", DK_CPU, dk_boxed(boxed_cpu, NULL), &h), DK_OK);
    assert_int_equal(dk_def(reg, "rt::missing(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "rt::missing", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&value_cpu), &h), DK_OK);
    assert_int_equal(dk_fallback(reg, DK_Tracer, dk_boxed(tracer_fallback, NULL), &h), DK_OK);
    d.c10_messages = 1;
    assert_int_equal(dk_registry_create(&d, &reg_c10), DK_OK);
    assert_int_equal(dk_def(reg_c10, "rt::c10(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg_c10, "rt::c10", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&value_cpu), &h), DK_OK);
    op_c10 = dk_op_lookup(reg_c10, "rt::c10");
    assert_non_null(op_c10);
    op_main = dk_op_lookup(reg, "rt::main");
    op_boxed = dk_op_lookup(reg, "rt::boxed");
    op_missing = dk_op_lookup(reg, "rt::missing");
    assert_non_null(op_main);
    assert_non_null(op_boxed);
    assert_non_null(op_missing);
}

/* The audio thread beside the writer: 0 after attach, every result right. */
static void test_attached_thread_never_allocates_locks_or_yields(void **state) {
    pthread_t a, w;
    audio_result res;
    long cycles = 0;
    (void)state;
    setup_registry();
    memset(&res, 0, sizeof res);
    reset_counts();
    STORE(&writer_stop, 0);
    assert_int_equal(pthread_create(&w, NULL, writer, &cycles), 0);
    assert_int_equal(pthread_create(&a, NULL, audio, &res), 0);
    pthread_join(a, NULL);
    STORE(&writer_stop, 1);
    pthread_join(w, NULL);
    printf("  %ld blocks beside %ld writer cycles: %ld mallocs, %ld frees, %ld locks, %ld yields, %ld system calls "
           "(the first: %ld) after attach%s\n",
           res.blocks, cycles, res.after_attach.malloc, res.after_attach.free, res.after_attach.lock,
           res.after_attach.yield, res.after_attach.syscall, res.after_attach.first_syscall,
           COUNTS_SYSCALLS ? "" : " (system calls not counted in this build)");
    assert_int_equal(res.blocks, BLOCKS);
    assert_int_equal(res.wrong, 0);
    assert_int_equal(res.failed_ok, 4 * BLOCKS);
    assert_int_equal(res.after_attach.malloc, 0);
    assert_int_equal(res.after_attach.free, 0);
    assert_int_equal(res.after_attach.lock, 0);
    assert_int_equal(res.after_attach.yield, 0);
    if (COUNTS_SYSCALLS && !res.filtered) {   /* refused by the kernel, not by a bug of the test */
        printf("  system calls not counted: the kernel refused the seccomp filter (%s)\n", strerror(res.filter_errno));
        assert_true(res.filter_errno == EINVAL || res.filter_errno == ENOSYS || res.filter_errno == EACCES ||
                    res.filter_errno == EPERM);
    }
    assert_int_equal(res.after_attach.syscall, 0);
    if (COUNTS_SYSCALLS && res.filtered) {   /* seen, and made: the stub ran it */
        assert_int_equal(res.control_syscalls, 1);
        assert_int_equal(res.control_pid, (long)getpid());
    }
    assert_true(cycles > 0);
    assert_int_equal(dk_registry_synchronize(reg), DK_OK);
    dk_registry_destroy(reg);
    dk_registry_destroy(reg_c10);
}

/* The counters see what the implementation allocates: a thread that does
   not attach allocates its state (and under call epochs its record) at its
   first failing call, under a lock. */
static void *unattached(void *arg) {
    counts *c = (counts *)arg;
    counting = 1;
    (void)unary_call(op_missing, make(DK_CUDA, 0));
    counting = 0;
    *c = counted();
    return NULL;
}
static void test_an_unattached_thread_allocates_at_its_first_failing_call(void **state) {
    pthread_t t;
    counts c;
    (void)state;
    setup_registry();
    reset_counts();
    assert_int_equal(pthread_create(&t, NULL, unattached, &c), 0);
    pthread_join(t, NULL);
    assert_true(c.malloc >= 1);
    assert_true(c.lock >= 1);
    dk_registry_destroy(reg);
    dk_registry_destroy(reg_c10);
}

/* dk_thread_quiescent: the store, refused inside a call, attaching a
   thread that is not attached yet, bringing an offline thread back. */
static int quiescent_inside;
static void boxed_quiescent(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k; (void)op; (void)ks; (void)stack;
    quiescent_inside = dk_thread_quiescent();
}
static void *fresh_quiescent(void *arg) {
    int *ok = (int *)arg;
    *ok = dk_thread_id() == 0 && dk_thread_quiescent() == DK_OK && dk_thread_id() != 0;
    *ok &= dk_thread_offline() == DK_OK && dk_thread_quiescent() == DK_OK;
    dk_thread_offline();
    return NULL;
}
static void test_quiescent_point(void **state) {
    dk_registration *h;
    dk_value storage[4];
    dk_stack st;
    tensor cpu = make(DK_CPU, 0);
    pthread_t t;
    int ok = 0;
    (void)state;
    setup_registry();
    assert_int_equal(dk_def(reg, "rt::q(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "rt::q", DK_CPU, dk_boxed(boxed_quiescent, NULL), &h), DK_OK);
    dk_stack_init(&st, storage, 4);
    (void)dk_stack_push(&st, dk_tensor(&cpu));
    dk_call_boxed(dk_op_lookup(reg, "rt::q"), &st);
    assert_int_equal(quiescent_inside, DK_ERR_IN_CALL);
    assert_int_equal(pthread_create(&t, NULL, fresh_quiescent, &ok), 0);
    pthread_join(t, NULL);
    assert_true(ok);
    assert_int_equal(dk_thread_attach(), DK_OK);   /* again: a quiescent point */
    assert_int_equal(dk_thread_attach(), DK_OK);
    assert_int_equal(dk_thread_offline(), DK_OK);
    dk_registry_destroy(reg);
    dk_registry_destroy(reg_c10);
}

/* Default build: dk_registry_reclaim never waits for the registry's lock.
   A listener holds it (the registration that calls it is inside); another
   thread's reclaim returns at once, and a later one frees. */
#ifndef DK_CALL_EPOCHS
static int holding, release_holder, armed;
static void holding_listener(const dk_operator *op, void *ud) {
    (void)op; (void)ud;
    if (!LOAD(&armed)) return;   /* adding the listener replays the defs */
    STORE(&holding, 1);
    while (!LOAD(&release_holder)) sched_yield();
}
static void *registering(void *arg) {
    dk_registration *h;
    (void)arg;
    assert_int_equal(dk_def(reg, "rt::held(Tensor x) -> Tensor", &h), DK_OK);
    return NULL;
}
static void test_reclaim_behind_a_registration_returns(void **state) {
    dk_registration *l, *h;
    dk_registry_stats st;
    pthread_t t;
    (void)state;
    alarm(60);   /* a reclaim that waits for the holder would never return: a failure, not a hang */
    setup_registry();
    assert_int_equal(dk_thread_attach(), DK_OK);
    assert_int_equal(dk_impl(reg, "rt::main", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&value_cpu), &h), DK_OK);
    assert_int_equal(dk_deregister(h), DK_OK);   /* retired, waits for this thread's next quiescent point */
    assert_int_equal(dk_registry_add_listener(reg, holding_listener, NULL, NULL, &l), DK_OK);
    STORE(&holding, 0);
    STORE(&release_holder, 0);
    STORE(&armed, 1);
    assert_int_equal(pthread_create(&t, NULL, registering, NULL), 0);
    while (!LOAD(&holding)) sched_yield();
    assert_int_equal(dk_registry_reclaim(reg), DK_OK);   /* returns: nothing freed */
    STORE(&release_holder, 1);
    pthread_join(t, NULL);
    STORE(&armed, 0);
    dk_registry_read_stats(reg, &st);                      /* (it locks: after the holder) */
    assert_true(st.retired_blocks > 0);
    assert_int_equal(dk_registry_reclaim(reg), DK_OK);   /* the lock is free: it frees */
    dk_registry_read_stats(reg, &st);
    assert_int_equal(st.retired_blocks, 0);
    assert_int_equal(dk_thread_offline(), DK_OK);
    alarm(0);
    dk_registry_destroy(reg);
    dk_registry_destroy(reg_c10);
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attached_thread_never_allocates_locks_or_yields),
        cmocka_unit_test(test_an_unattached_thread_allocates_at_its_first_failing_call),
        cmocka_unit_test(test_quiescent_point),
#ifndef DK_CALL_EPOCHS
        cmocka_unit_test(test_reclaim_behind_a_registration_returns),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
