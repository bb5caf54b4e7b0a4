/* make bench: lookup throughput and call overhead of dispatch.h, each row
   beside its baseline from the same run.

   Timing: median (min-max) ns/op over REPS repetitions of a loop over
   rotating inputs; instructions/op from perf_event_open where the machine
   has hardware counters (`make bench-icount` counts them under callgrind
   where it has not). Every row is a noinline function row_<name>(iters) so
   callgrind can count exactly its instructions.

   Usage: bench                 all rows, as a table
          bench --row NAME N    run one row N times (for callgrind)
          bench --list          row names
          bench --calls         the call rows alone (run on the -DDK_CALL_EPOCHS build) */
#define _GNU_SOURCE
#define DISPATCH_IMPLEMENTATION
#include "../dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#endif

#define NOINLINE __attribute__((noinline))
#define SINK(x) __asm__ volatile("" : "+r"(x))
#define BARRIER() __asm__ volatile("" ::: "memory")

/* ---- the benchmark's tensor type and operators -------------------------- */

typedef struct tensor { dk_keyset ks; long value; } tensor;
#define DKGEN_TENSOR tensor *
#define DKGEN_TENSOR_KEYSET(t) ((t)->ks)
#include "../gen/sample_ops.h"

DK_DECLARE_OP(bop1, tensor *, a->ks, (tensor *, a))
DK_DECLARE_OP(bop2, tensor *, dk_ks_or(a->ks, b->ks), (tensor *, a), (tensor *, b))

static dk_registry *reg;
static const dk_operator *op1, *op2, *op_hops, *op_boxed, *op_neg;
static tensor *k_neg(const dk_kernel *k, dk_keyset ks, tensor *a) { (void)k; (void)ks; return a; }
static dk_keyset tensor_keys(const void *t, void *ud) { (void)ud; return ((const tensor *)t)->ks; }

static NOINLINE tensor *k_cpu1(const dk_kernel *k, dk_keyset ks, tensor *a) {
    (void)k; (void)ks;
    return a;
}
static NOINLINE tensor *k_cpu2(const dk_kernel *k, dk_keyset ks, tensor *a, tensor *b) {
    (void)k; (void)ks; (void)b;
    return a;
}
/* autograd-style kernel: exclude autograd, redispatch to the CPU kernel */
static NOINLINE tensor *k_autograd(const dk_kernel *k, dk_keyset ks, tensor *a) {
    (void)k;
    return bop1_redispatch(op_hops, dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD), a);
}
static void k_boxed_fallback(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k; (void)op; (void)ks;
    ((bop1_args *)stack->unboxed_args)->result = ((bop1_args *)stack->unboxed_args)->a;
}
/* the same-shape function pointer baseline */
typedef tensor *(*kernel1_fn)(const dk_kernel *, dk_keyset, tensor *);
static kernel1_fn volatile fnptr = k_cpu1;

#define NT 256
static tensor cpu_plain[NT], cpu_full[NT], mixed[NT];
static dk_keyset realistic[NT];

static void must(dk_status s, const char *what) {
    if (s != DK_OK) { fprintf(stderr, "bench: %s: %s\n", what, dk_last_error()); exit(1); }
}
static void quiet(int e, const char *m, void *u) { (void)e; (void)m; (void)u; }

static dk_registry *new_registry(void) {
    dk_registry *r;
    dk_registry_desc d;
    memset(&d, 0, sizeof d);
    d.log = quiet;
    d.tensor_keyset = tensor_keys;
    must(dk_registry_create(&d, &r), "registry");
    return r;
}

/* c10 1.13.1's autograd fallthrough fallbacks (the registry brings BackendSelect and
   ADInplaceOrView), so calls skip the same layers as in libtorch. */
static void default_fallbacks(dk_registry *r) {
    static const dk_key keys[] = { DK_AutogradOther, DK_AutogradCPU,
                                   DK_AutogradCUDA, DK_AutogradXLA, DK_AutogradLazy, DK_AutogradMPS,
                                   DK_AutogradXPU, DK_AutogradHPU };
    size_t i;
    dk_registration *h;
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++) must(dk_fallback(r, keys[i], dk_fallthrough(), &h), "fallback");
}

static void setup(void) {
    static const dk_backend backends[] = { DK_CPUBit, DK_CUDABit, DK_MetaBit, DK_XLABit };
    dk_registration *h;
    int i;
    reg = new_registry();
    default_fallbacks(reg);
    must(dk_def(reg, "b::one(Tensor a) -> Tensor", &h), "def");
    must(dk_impl(reg, "b::one", DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
    must(dk_def(reg, "b::two(Tensor a, Tensor b) -> Tensor", &h), "def");
    must(dk_impl(reg, "b::two", DK_CPU, dk_unboxed(DK_FN(k_cpu2), NULL), &h), "impl");
    must(dk_def(reg, "b::hops(Tensor a) -> Tensor", &h), "def");
    must(dk_impl(reg, "b::hops", DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
    must(dk_impl(reg, "b::hops", DK_AutogradCPU, dk_unboxed(DK_FN(k_autograd), NULL), &h), "impl");
    must(dk_def(reg, "b::boxed(Tensor a) -> Tensor", &h), "def");
    must(dk_fallback(reg, DK_Tracer, dk_boxed(k_boxed_fallback, NULL), &h), "fallback");
    op1 = dk_op_lookup(reg, "b::one");
    op2 = dk_op_lookup(reg, "b::two");
    op_hops = dk_op_lookup(reg, "b::hops");
    op_boxed = dk_op_lookup(reg, "b::boxed");
    must(sample_neg_def(reg, &h), "def");
    must(sample_neg_impl(reg, DK_CPU, k_neg, NULL, &h), "impl");
    must(sample_neg_bind(reg, &op_neg), "bind");
    for (i = 0; i < NT; i++) {
        dk_backend b = backends[(i * 7) % 4];
        cpu_plain[i].ks = dk_ks_from_key(DK_CPU);
        cpu_full[i].ks = dk_ks_or(cpu_plain[i].ks, dk_backend_autograd_related_set(DK_CPUBit));
        mixed[i].ks = dk_ks_or(dk_ks_from_key(dk_key_runtime(DK_Dense, b)), dk_backend_autograd_related_set(b));
        realistic[i] = dk_ks_or(mixed[i].ks, (i % 3) ? DK_KS_DEFAULT_INCLUDED : dk_ks_from_key(DK_Tracer));
    }
}

/* ---- rows ----------------------------------------------------------------------- */

static NOINLINE long row_loop_baseline(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) { uint64_t r = realistic[i & (NT - 1)].repr; SINK(r); s += (long)r; }
    return s;
}
static NOINLINE long row_highest_key(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) { int k = (int)dk_ks_highest_key(realistic[i & (NT - 1)]); SINK(k); s += k; }
    return s;
}
static NOINLINE long row_table_index(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) { int k = dk_ks_table_index(realistic[i & (NT - 1)]); SINK(k); s += k; }
    return s;
}
static NOINLINE long row_keyset_to_kernel(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) {
        dk_keyset ks;
        const dk_kernel *k = dk_dispatch(op1, mixed[i & (NT - 1)].ks, &ks);
        SINK(k);
        s += (long)(size_t)k;
    }
    return s;
}
static NOINLINE long row_direct_call(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)k_cpu1(NULL, cpu_plain[i & (NT - 1)].ks, &cpu_plain[i & (NT - 1)]);
    return s;
}
static NOINLINE long row_fnptr_call(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)fnptr(NULL, cpu_plain[i & (NT - 1)].ks, &cpu_plain[i & (NT - 1)]);
    return s;
}
static NOINLINE long row_call_one_hop(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)bop1_call(op1, &cpu_plain[i & (NT - 1)]);
    return s;
}
/* A real call site: a function of its own holding one call (its prologue,
   argument moves and return count), through a pointer and dispatched. */
static NOINLINE tensor *site_fnptr(tensor *t) { return fnptr(NULL, t->ks, t); }
static NOINLINE tensor *site_dispatched(tensor *t) { return bop1_call(op1, t); }
static NOINLINE long row_site_fnptr(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)site_fnptr(&cpu_plain[i & (NT - 1)]);
    return s;
}
static NOINLINE long row_site_one_hop(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)site_dispatched(&cpu_plain[i & (NT - 1)]);
    return s;
}
static NOINLINE long row_call_fallthrough(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)bop1_call(op1, &cpu_full[i & (NT - 1)]);
    return s;
}
static NOINLINE long row_call_two_args(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)bop2_call(op2, &cpu_full[i & (NT - 1)], &cpu_full[(i + 1) & (NT - 1)]);
    return s;
}
static NOINLINE long row_call_two_hops(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)bop1_call(op_hops, &cpu_full[i & (NT - 1)]);
    return s;
}
static NOINLINE long row_redispatch(long n) {
    long i, s = 0;
    dk_keyset cpu = dk_ks_from_key(DK_CPU);
    for (i = 0; i < n; i++) { SINK(cpu); s += (long)(size_t)bop1_redispatch(op1, cpu, &cpu_plain[i & (NT - 1)]); }
    return s;
}
static NOINLINE long row_boxed_fallback(long n) {
    long i, s = 0;
    dk_guard g = dk_include_push(dk_ks_from_key(DK_Tracer));
    for (i = 0; i < n; i++) s += (long)(size_t)bop1_call(op_boxed, &cpu_full[i & (NT - 1)]);
    dk_guard_pop(g);
    return s;
}
static NOINLINE long row_boxed_call(long n) {
    long i, s = 0;
    dk_value slots[4];
    dk_stack st;
    for (i = 0; i < n; i++) {
        dk_stack_init(&st, slots, 4);
        dk_push(&st, dk_tensor(&cpu_full[i & (NT - 1)]));
        dk_call_boxed(op_neg, &st);
        s += (long)(size_t)dk_pop(&st).as.tensor;
    }
    return s;
}
static char names[NT][32];
static NOINLINE long row_lookup_by_name(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)dk_op_lookup(reg, names[i & 3]);
    return s;
}

/* registration rows: each iteration is a fresh operator */
static dk_registry *reg_rate;
static char (*rate_names)[40];
static NOINLINE long row_def(long n) {
    long i;
    dk_registration *h;
    for (i = 0; i < n; i++) must(dk_def(reg_rate, rate_names[i], &h), "def");
    return n;
}
static NOINLINE long row_impl(long n) {
    long i;
    dk_registration *h;
    for (i = 0; i < n; i++) {
        char name[40];
        memcpy(name, rate_names[i], sizeof name);
        *strchr(name, '(') = '\0';
        must(dk_impl(reg_rate, name, DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
    }
    return n;
}
/* a registry with n operators x 4 kernels, destroyed */
static NOINLINE long row_teardown(long n) {
    dk_registry *r = new_registry();
    dk_registration *h;
    char name[48];
    long i;
    default_fallbacks(r);
    for (i = 0; i < n; i++) {
        snprintf(name, sizeof name, "t::op%ld(Tensor a) -> Tensor", i);
        must(dk_def(r, name, &h), "def");
        *strchr(name, '(') = '\0';
        must(dk_impl(r, name, DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
        must(dk_impl(r, name, DK_CUDA, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
        must(dk_impl(r, name, DK_AutogradCPU, dk_unboxed(DK_FN(k_autograd), NULL), &h), "impl");
        must(dk_impl(r, name, DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
    }
    {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        dk_registry_destroy(r);
        clock_gettime(CLOCK_MONOTONIC, &b);
        return (long)((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec));
    }
}

/* ---- measurement ------------------------------------------------------------------- */

#include "measure.h"

/* ---- rows with their own shape -------------------------------------------------- */


typedef struct { long n; double ns; } thread_job;
static void *thread_calls(void *arg) {
    thread_job *j = (thread_job *)arg;
    double a = now_ns();
    long s = row_call_fallthrough(j->n);
    SINK(s);
    j->ns = now_ns() - a;
    return NULL;
}

/* calls with N operators registered: cost of calling one, and of rotating over up to 1024 */
static void scaling_rows(void) {
    static const long counts[] = { 10, 1000, 100000 };
    size_t c;
    for (c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        dk_registry *r = new_registry();
        dk_registration *h;
        const dk_operator **ops;
        char name[48], what[80], id[32];
        long i, nops = counts[c], rot = nops < 1024 ? nops : 1024;
        double a, reg_ns;
        result res;
        ops = (const dk_operator **)malloc((size_t)rot * sizeof *ops);
        default_fallbacks(r);
        a = now_ns();
        for (i = 0; i < nops; i++) {
            snprintf(name, sizeof name, "s::op%ld(Tensor a) -> Tensor", i);
            must(dk_def(r, name, &h), "def");
            *strchr(name, '(') = '\0';
            must(dk_impl(r, name, DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
            if (i < rot) ops[i] = dk_op_lookup(r, name);
        }
        reg_ns = (now_ns() - a) / (double)nops;
        {
            const dk_operator *saved = op1;
            op1 = ops[0];
            res = measure(row_call_fallthrough, 2000000);
            op1 = saved;
        }
        snprintf(id, sizeof id, "scale_call_%ld", nops);
        snprintf(what, sizeof what, "call, %ld operators registered", nops);
        print_row(id, what, res, "flat is the target");
        {
            double t0 = now_ns();
            long s = 0, n = 2000000;
            for (i = 0; i < n; i++) s += (long)(size_t)bop1_call(ops[i % rot], &cpu_full[i & (NT - 1)]);
            SINK(s);
            res = once((now_ns() - t0) / (double)n);
        }
        snprintf(id, sizeof id, "scale_rotate_%ld", nops);
        snprintf(what, sizeof what, "call rotating over %ld operators", rot);
        print_row(id, what, res, "tables out of L1");
        res = once(reg_ns);
        snprintf(id, sizeof id, "scale_register_%ld", nops);
        snprintf(what, sizeof what, "def + impl, average over %ld operators", nops);
        print_row(id, what, res, "");
        free(ops);
        dk_registry_destroy(r);
    }
}

static const bench_row all_rows[] = { BENCH_FORALL_ROWS(BENCH_ROW_ENTRY) };
static const size_t n_rows = sizeof all_rows / sizeof all_rows[0];

int main(int argc, char **argv) {
    const long N = 5000000;
    result base, r, fp;
    size_t i;
    setup();
    for (i = 0; i < 4; i++) snprintf(names[i], sizeof names[i], i == 0 ? "b::one" : i == 1 ? "b::two" : i == 2 ? "b::hops" : "b::boxed");
    if (argc >= 2 && strcmp(argv[1], "--list") == 0) {
        bench_list(all_rows, n_rows);
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "--row") == 0) {
        long n = atol(argv[3]), s = 0;
        s = bench_run_row(all_rows, n_rows, argv[2], n);
        SINK(s);
        return 0;
    }
    perf_open();
    if (argc >= 2 && strcmp(argv[1], "--calls") == 0) { /* the call rows alone (make bench: the other mode) */
        printf("\nthe same calls built with -DDK_CALL_EPOCHS (calls bracket their kernels):\n\n");
        bench_print_heading();
        fp = measure(row_fnptr_call, N);
        print_row("fnptr_call", "call through a function pointer, same shape", fp, "");
        print_row("call_one_hop", "dispatched call, keyset {CPU}", measure(row_call_one_hop, N), "fnptr_call");
        print_row("call_two_hops", "autograd kernel redispatching to CPU", measure(row_call_two_hops, N),
                  "2 x fnptr_call");
        print_row("redispatch", "redispatch alone (no TLS, no extraction)", measure(row_redispatch, N), "fnptr_call");
        return 0;
    }
    printf("dispatch.h bench (%s preset, %d runtime slots); ns/op: median (min-max) of %d runs; instructions/op "
           "from hardware counters (%s)\n\n", DK_C10_VERSION == 11301 ? "PyTorch 1.13.1" : "PyTorch 2.7.1",
           DK_NUM_RUNTIME_ENTRIES, REPS, perf_fd >= 0 ? "available" : "not available here: see make bench-icount");
    bench_print_heading();
    base = measure(row_loop_baseline, N);
    print_row("loop_baseline", "loop over rotating keysets, no work", base, "");
    print_row("highest_key", "keyset -> highest key", measure(row_highest_key, N), "loop_baseline");
    print_row("table_index", "keyset -> table slot", measure(row_table_index, N), "loop_baseline");
    print_row("keyset_to_kernel", "argument keyset -> kernel (TLS, mask, slot, load)", measure(row_keyset_to_kernel, N),
              "loop_baseline");
    print_row("direct_call", "direct call of the kernel (baseline)", measure(row_direct_call, N), "");
    fp = measure(row_fnptr_call, N);
    print_row("fnptr_call", "call through a function pointer, same shape", fp, "");
    r = measure(row_call_one_hop, N);
    print_row("call_one_hop", "dispatched call, keyset {CPU}", r, "fnptr_call");
    print_row("site_fnptr", "a function holding one call through a pointer", measure(row_site_fnptr, N), "");
    print_row("site_one_hop", "a function holding one dispatched call", measure(row_site_one_hop, N), "site_fnptr");
    print_row("call_fallthrough", "call skipping fallthrough layers (autograd, view)", measure(row_call_fallthrough, N),
              "fnptr_call");
    print_row("call_two_args", "two tensor arguments", measure(row_call_two_args, N), "fnptr_call");
    print_row("call_two_hops", "autograd kernel redispatching to CPU", measure(row_call_two_hops, N), "2 x fnptr_call");
    print_row("redispatch", "redispatch alone (no TLS, no extraction)", measure(row_redispatch, N), "fnptr_call");
    print_row("boxed_fallback", "unboxed call landing on a boxed fallback", measure(row_boxed_fallback, N / 5),
              "fnptr_call");
    print_row("boxed_call", "boxed call (stack) into an unboxed kernel, via adapters", measure(row_boxed_call, N / 5),
              "fnptr_call");
    print_row("lookup_by_name", "operator lookup by name string (xxhash)", measure(row_lookup_by_name, N / 5), "");
    {   /* registration rates */
        long n = 20000, k;
        double a;
        rate_names = malloc((size_t)n * sizeof *rate_names);
        for (k = 0; k < n; k++) snprintf(rate_names[k], sizeof rate_names[k], "rate::op%ld(Tensor a) -> Tensor", k);
        reg_rate = new_registry();
        default_fallbacks(reg_rate);
        a = now_ns();
        row_def(n);
        r = once((now_ns() - a) / (double)n);
        print_row("def", "def (new operator)", r, "");
        a = now_ns();
        row_impl(n);
        r = once((now_ns() - a) / (double)n);
        print_row("impl", "impl (one CPU kernel)", r, "");
        dk_registry_destroy(reg_rate);
        free(rate_names);
    }
    {
        double t[5];
        int k;
        for (k = 0; k < 5; k++) t[k] = (double)row_teardown(1000);
        qsort(t, 5, sizeof t[0], cmp_double);
        r.med = t[2];
        r.min = t[0];
        r.max = t[4];
        r.instr = -1;
        print_row("teardown_1000x4", "destroy a registry of 1,000 ops x 4 kernels (ns)", r, "");
    }
    r = once((double)(sizeof(dk_operator) + sizeof(dk_op_table)));
    print_row("memory_per_op", "bytes per operator (handle + table snapshot)", r, "");
    r = once((double)sizeof(((dk_op_table *)0)->kernels) / DK_NUM_RUNTIME_ENTRIES);
    print_row("memory_per_slot", "bytes per runtime slot", r, "");
    scaling_rows();
    {   /* two threads at once: throughput relative to one */
        pthread_t th[2];
        thread_job j[2];
        double one, both = 0;
        long n = 20000000;
        int k;
        j[0].n = n;
        thread_calls(&j[0]);
        one = j[0].ns;
        for (k = 0; k < 2; k++) { j[k].n = n; pthread_create(&th[k], NULL, thread_calls, &j[k]); }
        for (k = 0; k < 2; k++) { pthread_join(th[k], NULL); if (j[k].ns > both) both = j[k].ns; }
        r = once((2.0 * n / both) / (n / one));
        print_row("two_threads", "throughput of 2 threads / 1 thread (x)", r, "2.0 is the target");
    }
    return 0;
}
