/* make bench: lookup throughput, call overhead and registration cost of
   dispatch.h, each row beside its baseline from the same run; then
   bench/targets.sh marks the targets met or not met.

   Timing: median (min-max) ns/op over REPS repetitions of a loop over
   rotating inputs; instructions/op from perf_event_open where the machine
   has hardware counters (`make bench-icount` counts them under callgrind
   where it has not). Every row of BENCH_FORALL_ROWS is a noinline function
   row_<name>(iters) so callgrind can count exactly its instructions.

   Usage: bench                 all rows, as a table
          bench --row NAME N    prepare, then run one row N times (for callgrind)
          bench --list          row names and their callgrind iteration counts
          bench --instr-atstart the valgrind --instr-atstart value for --row
          bench --calls         the call and thread rows alone (run on the -DDK_CALL_EPOCHS build)
          bench --threads       the thread rows alone
          bench --memory        the memory rows alone
          bench --scale N       define N operators in one thread: wall time and peak RSS per operator */
#define _GNU_SOURCE
#define DISPATCH_IMPLEMENTATION
#include "../dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/wait.h>
#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#endif
/* --row: callgrind's instrumentation starts only once the row's set-up is
   done (bench/icount.sh passes --instr-atstart=no when this is available). */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define START_INSTRUMENTATION() CALLGRIND_START_INSTRUMENTATION
#define HAVE_START_INSTRUMENTATION 1
#endif
#endif
#ifndef START_INSTRUMENTATION
#define START_INSTRUMENTATION() ((void)0)
#define HAVE_START_INSTRUMENTATION 0
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
/* -DBENCH_NO_REDISPATCH (make bench-shape): bop1 is only called in this
   unit, never redispatched (the autograd kernel and the redispatch row use
   bop1r, the same operator declared again), so the compiler sees every call
   of bop1's slow path pass "not a redispatch": the call rows must keep
   their instruction counts in such a unit too. */
#ifdef BENCH_NO_REDISPATCH
DK_DECLARE_OP(bop1r, tensor *, a->ks, (tensor *, a))
#define bop1_redispatch bop1r_redispatch
#endif
DK_DECLARE_OP(bop2, tensor *, dk_ks_or(a->ks, b->ks), (tensor *, a), (tensor *, b))

static dk_registry *reg;
static const dk_operator *op1, *op2, *op_hops, *op_boxed, *op_neg, *op_k2k;
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
/* the boxed fallback: leaves the argument on the stack as the result (as
   bench_c10.cpp's does) */
static void k_boxed_fallback(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k; (void)op; (void)ks; (void)stack;
}
/* the same-shape function pointer baseline */
typedef tensor *(*kernel1_fn)(const dk_kernel *, dk_keyset, tensor *);
static kernel1_fn volatile fnptr = k_cpu1;

/* bop1's boxing adapters for "(Tensor a) -> Tensor": a typed call that
   lands on a boxed kernel pushes its argument on a stack and takes the
   result off it, as c10's boxing wrapper does (box and unbox_result as
   gen/ writes them; this call_unboxed pops and pushes, where gen/'s reads
   its argument in place and writes the return over it). */
static void bop1_box(const void *args, dk_stack *st) { dk_stack_push(st, dk_tensor(((const bop1_args *)args)->a)); }
static void bop1_unbox_result(dk_stack *st, void *result) { *(tensor **)result = (tensor *)dk_stack_pop(st).as.tensor; }
static void bop1_call_unboxed(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *st) {
    tensor *a = (tensor *)dk_stack_pop(st).as.tensor;
    (void)op;
    dk_stack_push(st, dk_tensor(((kernel1_fn)k->fn)(k, ks, a)));
}
static const dk_op_adapters bop1_adapters = { "(Tensor) (Tensor)", 1, 1, bop1_box, bop1_unbox_result,
                                              bop1_call_unboxed };

#define NT 256
static tensor cpu_plain[NT], cpu_full[NT], mixed[NT];
static dk_keyset realistic[NT];

static void must(dk_status s, const char *what) {
    if (s != DK_OK) { fprintf(stderr, "bench: %s: %s\n", what, dk_last_error()); exit(1); }
}
static void quiet(dk_log_level l, dk_log_item i, const char *m, void *u) { (void)l; (void)i; (void)m; (void)u; }

static dk_registry *new_registry_with(void *(*alloc)(size_t, void *), void (*release)(void *, void *)) {
    dk_registry *r;
    dk_registry_desc d;
    memset(&d, 0, sizeof d);
    d.alloc = alloc;
    d.free = release;
    d.logger.func = quiet;
    d.tensor_keyset = tensor_keys;
    must(dk_registry_create(&d, &r), "registry");
    return r;
}
static dk_registry *new_registry(void) { return new_registry_with(NULL, NULL); }

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
    dk_def_options bop1_options;
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
    memset(&bop1_options, 0, sizeof bop1_options);
    bop1_options.adapters = &bop1_adapters;
    must(dk_def_with(reg, "b::boxed(Tensor a) -> Tensor", &bop1_options, &h), "def");
    /* keyset_to_kernel looks up CPU, CUDA, Meta and XLA keysets: a kernel
       for every backend (CompositeImplicitAutograd, as bench_c10.cpp's), so
       no lookup goes out of line to a missing kernel */
    must(dk_def(reg, "b::k2k(Tensor a) -> Tensor", &h), "def");
    must(dk_impl(reg, "b::k2k", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
    must(dk_fallback(reg, DK_Tracer, dk_boxed(k_boxed_fallback, NULL), &h), "fallback");
    op1 = dk_op_lookup(reg, "b::one");
    op2 = dk_op_lookup(reg, "b::two");
    op_hops = dk_op_lookup(reg, "b::hops");
    op_boxed = dk_op_lookup(reg, "b::boxed");
    op_k2k = dk_op_lookup(reg, "b::k2k");
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

/* ---- registries of N operators (lookup, rotation and fallback rows) ----------- */

/* N operators "rK::opI(Tensor a) -> Tensor", each with a CPU kernel, in a
   registry of their own with the default fallthroughs: every def first,
   then every kernel, as libraries register (aten's defs, then each
   backend's kernels), so an operator's table is not allocated beside it.
   bench_c10.cpp builds the same names, in the same order, in c10's
   process-wide dispatcher. */
typedef struct pool {
    long n;
    dk_registry *r;
    const dk_operator **ops;          /* in allocation (definition) order */
    const dk_operator **shuffled;     /* the same, in a fixed random order */
    char (*names)[16];
    dk_registration *fallbacks[16];   /* the fallback rows' registrations */
    int n_fallbacks;
} pool;
static const long pool_sizes[] = { 10, 1000, 10000, 100000 };
static pool pools[4];

/* The operators in a fixed random order (Fisher-Yates, xorshift64 with a
   fixed seed: the same order every run and in bench_c10.cpp): a model's
   graph does not call its operators in allocation order, which the
   hardware prefetchers would follow. */
static void shuffle(const void **v, long n) {
    uint64_t x = 0x9E3779B97F4A7C15u;
    long i;
    for (i = n - 1; i > 0; i--) {
        long j;
        const void *t;
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        j = (long)(x % (uint64_t)(i + 1));
        t = v[i]; v[i] = v[j]; v[j] = t;
    }
}
static const dk_operator **shuffled_copy(const dk_operator *const *ops, long n) {
    const dk_operator **v = (const dk_operator **)malloc((size_t)n * sizeof *v);
    memcpy(v, ops, (size_t)n * sizeof *v);
    shuffle((const void **)(void *)v, n);
    return v;
}

static pool *get_pool(long n) {
    int k;
    for (k = 0; pool_sizes[k] != n; k++) {}
    if (!pools[k].r) {
        pool *p = &pools[k];
        char schema[48];
        dk_registration *h;
        long i;
        p->n = n;
        p->r = new_registry();
        default_fallbacks(p->r);
        p->ops = (const dk_operator **)malloc((size_t)n * sizeof *p->ops);
        p->names = (char (*)[16])malloc((size_t)n * sizeof *p->names);
        for (i = 0; i < n; i++) {
            snprintf(p->names[i], sizeof p->names[i], "r%d::op%ld", k, i);
            snprintf(schema, sizeof schema, "%s(Tensor a) -> Tensor", p->names[i]);
            must(dk_def(p->r, schema, &h), "def");
            p->ops[i] = dk_op_lookup(p->r, p->names[i]);
        }
        for (i = 0; i < n; i++) must(dk_impl(p->r, p->names[i], DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
        must(dk_registry_reclaim(p->r), "reclaim");   /* the defs' tables, retired by the impls */
        p->shuffled = shuffled_copy(p->ops, n);
    }
    return &pools[k];
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
/* keyset -> slot as the call path finds it: the backend's row, then the
   entry's offset from dk__entry_by_backend_bit (dk__entry_at), not the
   public dk_ks_slot (a slot number, from another table) */
static NOINLINE long row_table_index(long n) {
    long i, s = 0;
    const dk_op_table *tab = op1->table;
    for (i = 0; i < n; i++) {
        uint64_t ks = realistic[i & (NT - 1)].repr;
        ptrdiff_t off = dk__entry_at(tab, ks, dk__row(dk__backend_index(ks))).off;
        SINK(off);
        s += (long)off;
    }
    return s;
}
static NOINLINE long row_keyset_to_kernel(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) {
        dk_keyset ks;
        const dk_kernel *k = dk_dispatch_kernel(op_k2k, mixed[i & (NT - 1)].ks, &ks);
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
/* gen/'s typed call site: the same function shape through dkgen's bindings
   (gen/sample_ops.h's sample::neg, one Tensor as bop1), which dispatch with
   dk_dispatch_kernel_with_fn / dk_redispatch_kernel_with_fn and call the
   fn it gives themselves, not through DK_DECLARE_OP's macros.
   bench/shape.sh holds both rows to a limit over site_fnptr. The
   -DBENCH_NO_REDISPATCH unit has no redispatch row: there every call of
   neg's slow path passes "not a redispatch", as for bop1. */
static NOINLINE tensor *site_gen(tensor *t) { return sample_neg_call(op_neg, t); }
static NOINLINE long row_site_gen_call(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)site_gen(&cpu_plain[i & (NT - 1)]);
    return s;
}
#ifndef BENCH_NO_REDISPATCH
static NOINLINE tensor *site_gen_re(tensor *t) { return sample_neg_redispatch(op_neg, t->ks, t); }
static NOINLINE long row_site_gen_redispatch(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)site_gen_re(&cpu_plain[i & (NT - 1)]);
    return s;
}
#define BENCH_GEN_ROWS(X) X(site_gen_call) X(site_gen_redispatch)
#else
#define BENCH_GEN_ROWS(X) X(site_gen_call)
#endif
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
/* Tracer is included: the typed call lands on the boxed fallback, boxing its
   argument through the operator's adapters and unboxing the result. */
static NOINLINE long row_boxed_fallback(long n) {
    long i, s = 0;
    dk_guard g = dk_guard_include(dk_ks_from_key(DK_Tracer));
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
        dk_stack_push(&st, dk_tensor(&cpu_full[i & (NT - 1)]));
        dk_call_boxed(op_neg, &st);
        s += (long)(size_t)dk_stack_pop(&st).as.tensor;
    }
    return s;
}

/* name lookup, rotating over every name of a registry of 10k / 100k operators */
static pool *lookup_pool, *rotate_pool;
static long lookup_rotating(const pool *p, long n) {
    long i, j = 0, s = 0;
    for (i = 0; i < n; i++) {
        s += (long)(size_t)dk_op_lookup(p->r, p->names[j]);
        if (++j == p->n) j = 0;
    }
    return s;
}
static void prepare_lookup_1k(long n) { (void)n; lookup_pool = get_pool(1000); }
static void prepare_lookup_10k(long n) { (void)n; lookup_pool = get_pool(10000); }
static void prepare_lookup_100k(long n) { (void)n; lookup_pool = get_pool(100000); }
static NOINLINE long row_lookup_1k(long n) { return lookup_rotating(lookup_pool, n); }
static NOINLINE long row_lookup_10k(long n) { return lookup_rotating(lookup_pool, n); }
static NOINLINE long row_lookup_100k(long n) { return lookup_rotating(lookup_pool, n); }

/* lookup_100k's control, outside the rows both benches share: the same
   lookup written in plain C. The same 100,000 names, hashed with the same
   XXH3 (DK_HASH64), in an open-addressed table of 32-byte buckets (hash,
   pointer, the name's first 16 bytes) with as many buckets as the
   registry's index, so the same load, filled in the same order and probed
   linearly, the name compared in the bucket; looked up in lookup_100k's
   order. What it leaves out is what the library adds: the NULL checks, the
   call bracket, the tombstone test and the index's acquire load. */
typedef struct plain_bucket { uint64_t hash; const void *op; char name[16]; } plain_bucket;
static plain_bucket *plain_index;
static size_t plain_mask;
static void prepare_plain_lookup(void) {
    const pool *p = get_pool(100000);
    long i;
    if (plain_index) return;
    plain_mask = p->r->index->mask;   /* the registry's bucket count: the same load */
    plain_index = (plain_bucket *)calloc(plain_mask + 1, sizeof *plain_index);
    for (i = 0; i < p->n; i++) {
        size_t len = strlen(p->names[i]);
        uint64_t h = DK_HASH64(p->names[i], len);
        size_t b = (size_t)h & plain_mask;
        while (plain_index[b].op) b = (b + 1) & plain_mask;
        plain_index[b].hash = h;
        plain_index[b].op = p->ops[i];
        memcpy(plain_index[b].name, p->names[i], len < 16 ? len : 16);
    }
}
static const void *plain_find(const char *name) {
    size_t len = strlen(name);
    uint64_t h = DK_HASH64(name, len);
    size_t b;
    for (b = (size_t)h & plain_mask;; b = (b + 1) & plain_mask) {
        const plain_bucket *k = &plain_index[b];
        if (!k->op) return NULL;
        if (k->hash == h && len < 16 && k->name[len] == '\0' && memcmp(k->name, name, len) == 0) return k->op;
    }
}
static NOINLINE long row_plain_lookup(long n) {
    const pool *p = get_pool(100000);
    long i, j = 0, s = 0;
    for (i = 0; i < n; i++) {
        s += (long)(size_t)plain_find(p->names[j]);
        if (++j == p->n) j = 0;
    }
    return s;
}

/* a call per operator in turn, rotating over every operator of a registry:
   in a fixed random order (rotate_*), or in allocation order (*_seq) */
static long call_rotating(const dk_operator *const *ops, long count, long n) {
    long i, j = 0, s = 0;
    for (i = 0; i < n; i++) {
        s += (long)(size_t)bop1_call(ops[j], &cpu_full[i & (NT - 1)]);
        if (++j == count) j = 0;
    }
    return s;
}
static void prepare_rotate_10(long n) { (void)n; rotate_pool = get_pool(10); }
static void prepare_rotate_1k(long n) { (void)n; rotate_pool = get_pool(1000); }
static void prepare_rotate_100k(long n) { (void)n; rotate_pool = get_pool(100000); }
static void prepare_rotate_100k_seq(long n) { (void)n; rotate_pool = get_pool(100000); }
static NOINLINE long row_rotate_10(long n) { return call_rotating(rotate_pool->shuffled, rotate_pool->n, n); }
static NOINLINE long row_rotate_1k(long n) { return call_rotating(rotate_pool->shuffled, rotate_pool->n, n); }
static NOINLINE long row_rotate_100k(long n) { return call_rotating(rotate_pool->shuffled, rotate_pool->n, n); }
static NOINLINE long row_rotate_100k_seq(long n) { return call_rotating(rotate_pool->ops, rotate_pool->n, n); }

/* rotate_100k's control, outside the rows both benches share: the memory a
   rotating call reads, walked by plain C. 100,000 records of 48 B side by
   side (as a registry's operator slabs are), each pointing at a block of
   its own of a table's bytes, allocated one after another, with the kernel's
   function pointer where the table keeps the CPU entry; called in
   rotate_100k's shuffled order. No keyset, no TLS: what is left is what the
   memory costs on this machine. */
typedef struct plain_op { const char *table; const void *pad[5]; } plain_op;
enum { PLAIN_OPS = 100000 };   /* rotate_100k's operators */
static plain_op *plain_ops;
static const plain_op **plain_shuffled;
static size_t plain_at;   /* the CPU entry's offset in a table */
static void prepare_plain_rotate(void) {
    long i, n = PLAIN_OPS;
    kernel1_fn f = k_cpu1;
    if (plain_ops) return;
    plain_at = (size_t)((const char *)dk_op_table_entry(op1->table, dk_ks_slot(dk_ks_from_key(DK_CPU))) -
                        (const char *)op1->table);
    plain_ops = (plain_op *)calloc((size_t)n, sizeof *plain_ops);
    plain_shuffled = (const plain_op **)malloc((size_t)n * sizeof *plain_shuffled);
    for (i = 0; i < n; i++) {
        char *t = (char *)calloc(1, DK__TABLE_BYTES);
        memcpy(t + plain_at, &f, sizeof f);
        plain_ops[i].table = t;
        plain_shuffled[i] = &plain_ops[i];
    }
    shuffle((const void **)(void *)plain_shuffled, n);
}
static NOINLINE long row_plain_rotate(long n) {
    long i, j = 0, s = 0;
    for (i = 0; i < n; i++) {
        kernel1_fn f;
        memcpy(&f, plain_shuffled[j]->table + plain_at, sizeof f);
        s += (long)(size_t)f(NULL, cpu_full[i & (NT - 1)].ks, &cpu_full[i & (NT - 1)]);
        if (++j == PLAIN_OPS) j = 0;
    }
    return s;
}

/* registration rows: a fresh registry (default fallthroughs) per run */
static dk_registry *reg_rate;
static char (*rate_schemas)[48], (*rate_names)[32];
static dk_registration **rate_handles;
static long rate_cap;
static void prepare_rate(long n, int defs, int impls) {
    long i;
    dk_registration *h;
    if (reg_rate) dk_registry_destroy(reg_rate);
    if (n > rate_cap) {
        free(rate_schemas);
        free(rate_names);
        free(rate_handles);
        rate_schemas = malloc((size_t)n * sizeof *rate_schemas);
        rate_names = malloc((size_t)n * sizeof *rate_names);
        rate_handles = malloc((size_t)n * sizeof *rate_handles);
        rate_cap = n;
    }
    reg_rate = new_registry();
    default_fallbacks(reg_rate);
    for (i = 0; i < n; i++) {
        snprintf(rate_names[i], sizeof rate_names[i], "d::op%ld", i);
        snprintf(rate_schemas[i], sizeof rate_schemas[i], "d::op%ld(Tensor a) -> Tensor", i);
        if (defs) must(dk_def(reg_rate, rate_schemas[i], &h), "def");
        if (impls) must(dk_impl(reg_rate, rate_names[i], DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &rate_handles[i]), "impl");
    }
}
static void prepare_def(long n) { prepare_rate(n, 0, 0); }
static void prepare_impl(long n) { prepare_rate(n, 1, 0); }
static void prepare_deregister(long n) { prepare_rate(n, 1, 1); }
static NOINLINE long row_def(long n) {
    long i;
    dk_registration *h;
    for (i = 0; i < n; i++) must(dk_def(reg_rate, rate_schemas[i], &h), "def");
    return n;
}
static NOINLINE long row_impl(long n) {
    long i;
    dk_registration *h;
    for (i = 0; i < n; i++) must(dk_impl(reg_rate, rate_names[i], DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
    return n;
}
/* one impl handle after another, the newest first */
static NOINLINE long row_deregister(long n) {
    long i;
    for (i = n - 1; i >= 0; i--) must(dk_deregister(rate_handles[i]), "deregister");
    return n;
}

/* fallback registration with 1k / 10k operators registered: boxed fallbacks
   at keys no operator has a kernel for (Sparse and Quantized backends) */
static pool *fallback_pool;
static dk_key fallback_keys[16];
static void prepare_fallback(long n, long ops) {
    int b, k = 0;
    if (n > 16) { fprintf(stderr, "bench: at most 16 fallback registrations per run\n"); exit(2); }
    fallback_pool = get_pool(ops);
    while (fallback_pool->n_fallbacks) must(dk_deregister(fallback_pool->fallbacks[--fallback_pool->n_fallbacks]), "deregister");
    for (b = DK_CPUBit; b <= DK_NUM_BACKENDS && k < 16; b++) fallback_keys[k++] = dk_key_runtime(DK_Sparse, (dk_backend)b);
    for (b = DK_CPUBit; b <= DK_NUM_BACKENDS && k < 16; b++) fallback_keys[k++] = dk_key_runtime(DK_Quantized, (dk_backend)b);
}
static void prepare_fallback_1k(long n) { prepare_fallback(n, 1000); }
static void prepare_fallback_10k(long n) { prepare_fallback(n, 10000); }
static long register_fallbacks(pool *p, long n) {
    long i;
    for (i = 0; i < n; i++)
        must(dk_fallback(p->r, fallback_keys[i], dk_boxed(k_boxed_fallback, NULL), &p->fallbacks[p->n_fallbacks++]),
             "fallback");
    return n;
}
static NOINLINE long row_fallback_1k(long n) { return register_fallbacks(fallback_pool, n); }
static NOINLINE long row_fallback_10k(long n) { return register_fallbacks(fallback_pool, n); }

/* ---- measurement ------------------------------------------------------------------- */

#include "measure.h"

/* BENCH_FORALL_ROWS (shared with bench_c10.cpp), then this side's own rows */
static const bench_row all_rows[] = { BENCH_FORALL_ROWS(BENCH_CALL_ENTRY, BENCH_PREPARED_ENTRY)
                                      BENCH_GEN_ROWS(BENCH_CALL_ENTRY) };
static const size_t n_rows = sizeof all_rows / sizeof all_rows[0];
static result prepared(const char *name, long n, int reps) {
    return measure_prepared(bench_find(all_rows, n_rows, name), n, reps);
}
/* A row and its control (rotate_100k and lookup_100k beside plain C) timed
   in turns, REPS rounds of one run of each: a round's two runs are
   milliseconds apart, so load that comes and goes on a shared machine
   weighs on both, and the ratio row is the median of the rounds' ratios
   (the row's and control's own rows: the medians of their runs). */
typedef struct paired { result row, control, ratio; } paired;
static paired measure_paired(const char *name, long (*control)(long), long n) {
    const bench_row *row = bench_find(all_rows, n_rows, name);
    double a[REPS], c[REPS], q[REPS];
    paired p;
    int rep;
    row->prepare(n);
    row->fn(n / 10); /* warm up */
    control(n / 10);
    for (rep = 0; rep < REPS; rep++) {
        double t0, t1, t2;
        long s;
        t0 = now_ns();
        s = row->fn(n);
        t1 = now_ns();
        SINK(s);
        s = control(n);
        t2 = now_ns();
        SINK(s);
        a[rep] = (t1 - t0) / (double)n;
        c[rep] = (t2 - t1) / (double)n;
        q[rep] = a[rep] / c[rep];
    }
    p.row = of_samples(a, REPS);
    p.control = of_samples(c, REPS);
    p.ratio = of_samples(q, REPS);
    return p;
}

/* ---- rows with their own shape -------------------------------------------------- */

/* teardown: 1,000 operators x (def + 4 kernels) = 5,000 handles, either
   deregistered one by one (newest first) or destroyed with the registry;
   ns per handle */
#define TEARDOWN_OPS 1000
static dk_registry *teardown_build(dk_registration **handles) {
    dk_registry *r = new_registry();
    char name[48];
    long i, k = 0;
    default_fallbacks(r);
    for (i = 0; i < TEARDOWN_OPS; i++) {
        snprintf(name, sizeof name, "t::op%ld(Tensor a) -> Tensor", i);
        must(dk_def(r, name, &handles[k++]), "def");
        *strchr(name, '(') = '\0';
        must(dk_impl(r, name, DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &handles[k++]), "impl");
        must(dk_impl(r, name, DK_CUDA, dk_unboxed(DK_FN(k_cpu1), NULL), &handles[k++]), "impl");
        must(dk_impl(r, name, DK_AutogradCPU, dk_unboxed(DK_FN(k_autograd), NULL), &handles[k++]), "impl");
        must(dk_impl(r, name, DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_cpu1), NULL), &handles[k++]), "impl");
    }
    return r;
}
static double sample_teardown(void) {
    static dk_registration *handles[TEARDOWN_OPS * 5];
    dk_registry *r = teardown_build(handles);
    long k;
    double a = now_ns(), t;
    for (k = TEARDOWN_OPS * 5 - 1; k >= 0; k--) must(dk_deregister(handles[k]), "deregister");
    t = (now_ns() - a) / (TEARDOWN_OPS * 5);
    dk_registry_destroy(r);
    return t;
}
static double sample_destroy(void) {
    static dk_registration *handles[TEARDOWN_OPS * 5];
    dk_registry *r = teardown_build(handles);
    double a = now_ns();
    dk_registry_destroy(r);
    return (now_ns() - a) / (TEARDOWN_OPS * 5);
}

/* memory: glibc heap bytes (chunk sizes: usable size + the 8-byte header,
   the unit of mallinfo2, which bench_c10.cpp reads) held through the
   registry's alloc/free hooks, per operator (def + one CPU kernel) */
static size_t heap_live;
static void *count_alloc(size_t n, void *ud) {
    void *p = malloc(n);
    (void)ud;
    if (p) heap_live += malloc_usable_size(p) + sizeof(size_t);
    return p;
}
static void count_free(void *p, void *ud) {
    (void)ud;
    if (p) heap_live -= malloc_usable_size(p) + sizeof(size_t);
    free(p);
}
/* n operators from schemas[i] (NULL: "m::opI(Tensor a) -> Tensor"), each
   defined and given a CPU kernel, in a registry of their own */
static double memory_per_op(long n, char **schemas) {
    dk_registry *r = new_registry_with(count_alloc, count_free);
    dk_registration *h;
    char name[48], *op_name;
    size_t before;
    double per_op;
    long i;
    default_fallbacks(r);
    must(dk_registry_reclaim(r), "reclaim");
    before = heap_live;
    for (i = 0; i < n; i++) {
        const char *schema = name;
        if (schemas) schema = schemas[i];
        else snprintf(name, sizeof name, "m::op%ld(Tensor a) -> Tensor", i);
        must(dk_def(r, schema, &h), "def");
        op_name = (char *)malloc(strlen(schema) + 1);
        strcpy(op_name, schema);
        *strchr(op_name, '(') = '\0';
        must(dk_impl(r, op_name, DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
        free(op_name);
    }
    must(dk_registry_reclaim(r), "reclaim");
    per_op = (double)(heap_live - before) / (double)n;
    dk_registry_destroy(r);
    return per_op;
}
/* the same for aten's 3,199 schemas (libtorch 1.13.1's, from the schema
   conformance vectors); -1 when the file is not there */
#define ATEN_SCHEMAS "tests/conformance/schemas-1.13.1.txt"
static double memory_per_aten_op(void) {
    FILE *f = fopen(ATEN_SCHEMAS, "r");
    static char line[1 << 16];
    char **schemas = NULL;
    long n = 0, cap = 0, i;
    double per_op;
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || !tab) continue;
        *tab = '\0';
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            schemas = (char **)realloc(schemas, (size_t)cap * sizeof *schemas);
        }
        schemas[n] = (char *)malloc(strlen(line) + 1);
        strcpy(schemas[n++], line);
    }
    fclose(f);
    per_op = n ? memory_per_op(n, schemas) : -1;
    for (i = 0; i < n; i++) free(schemas[i]);
    free(schemas);
    return per_op;
}

/* scale: n operators defined in one thread (def + CPU impl each), the
   registering thread its own quiescent point: dk_registry_reclaim every
   1,000 operators. Run as a process of its own (bench --scale N), so that
   its peak RSS (getrusage's ru_maxrss, which counts the process's start,
   a few MB) is this row's alone. Rows per operator, so one target serves
   10^5 (make bench) and 10^6 (make bench-scale, make bench-full): for 10^6
   user time at most 2.5 s (2,500 ns an operator), system time at most
   1.25x the page-fault control's of the same run, peak RSS at most 3.5 GB
   (3,500 B an operator). Wall time is printed, not judged: on a VM most of
   it is page faults, whose cost moves with what the host already backs.
   That cost lands in system time too: memory the guest touches for the
   first time costs the host a fault of its own, charged to the guest's
   page clearing (measured here: 10^6 operators 5.45 s of system time on
   fresh memory against 1.62 s for the control, which runs after them on
   memory the registry gave back; with the warm-up below, 1.47 s and 1.80 s). So
   both run on memory the host already backs: a warm-up faults in and
   gives back as many pages as the target's peak, untimed, first, in a child
   process (the guest's allocator hands the pages it gave back to the next
   taker; this process's peak RSS stays the registry's). */
#define SCALE_RECLAIM_EVERY 1000
static double seconds(const struct timeval *t) { return (double)t->tv_sec + (double)t->tv_usec * 1e-6; }
static double system_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return seconds(&ru.ru_stime);
}
/* The control beside the scale rows: fault in `pages` fresh anonymous
   pages with one write each, then unmap them, what the kernel charges for
   the memory itself. Returns the system seconds it took (*wall: its wall
   ns). */
static double fault_pages(long pages, double *wall) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = (size_t)pages * page, i;
    double s0 = system_seconds(), t0 = now_ns();
    char *p = (char *)mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    for (i = 0; i < bytes; i += page) p[i] = 1;
    munmap(p, bytes);
    *wall = now_ns() - t0;
    return system_seconds() - s0;
}
static void warm_up_pages(long pages) {
    double wall;
    pid_t child = fork();
    if (child == 0) _exit(fault_pages(pages, &wall) < 0);
    if (child > 0) waitpid(child, NULL, 0);
}
static void scale_row(long n) {
    dk_registry *r = new_registry();
    dk_registration *h;
    char schema[64], name[64], id[32], what[96], row[48];
    struct rusage ru;
    double t0, wall, user0, sys0, user, sys, control, control_wall = 0;
    long i, faults0, faults;
    default_fallbacks(r);   /* as the memory rows' registries */
    warm_up_pages(n * 3500 / (long)sysconf(_SC_PAGESIZE));   /* (above) */
    getrusage(RUSAGE_SELF, &ru);
    user0 = seconds(&ru.ru_utime);
    sys0 = seconds(&ru.ru_stime);
    faults0 = ru.ru_minflt;
    t0 = now_ns();
    for (i = 0; i < n; i++) {
        snprintf(schema, sizeof schema, "m::op%ld(Tensor a) -> Tensor", i);
        snprintf(name, sizeof name, "m::op%ld", i);
        must(dk_def(r, schema, &h), "def");
        must(dk_impl(r, name, DK_CPU, dk_unboxed(DK_FN(k_cpu1), NULL), &h), "impl");
        if ((i + 1) % SCALE_RECLAIM_EVERY == 0) must(dk_registry_reclaim(r), "reclaim");
    }
    must(dk_registry_reclaim(r), "reclaim");
    wall = now_ns() - t0;
    getrusage(RUSAGE_SELF, &ru);
    user = seconds(&ru.ru_utime) - user0;
    sys = seconds(&ru.ru_stime) - sys0;
    faults = ru.ru_minflt - faults0;
    dk_registry_destroy(r);
    control = fault_pages(faults, &control_wall);   /* once the registry's memory is given back */
    if (n >= 1000000 && n % 1000000 == 0) snprintf(id, sizeof id, "%ldm", n / 1000000);
    else snprintf(id, sizeof id, "%ldk", n / 1000);
    bench_print_heading();
    snprintf(row, sizeof row, "scale_time_%s", id);
    snprintf(what, sizeof what, "%.2f s wall for %ld ops (%.2f s user, %.2f s system), ns/op", wall / 1e9, n, user, sys);
    print_row(row, what, once(wall / (double)n), "not judged: mostly page faults");
    snprintf(row, sizeof row, "scale_user_%s", id);
    snprintf(what, sizeof what, "user time defining them: %.2f s, ns/op", user);
    print_row(row, what, once(user * 1e9 / (double)n), "target 2,500 ns (2.5 s for 10^6)");
    snprintf(row, sizeof row, "scale_sys_%s", id);
    snprintf(what, sizeof what, "system time defining them: %.2f s, ns/op", sys);
    print_row(row, what, once(sys * 1e9 / (double)n), "1.25 x scale_faults");
    snprintf(row, sizeof row, "scale_faults_%s", id);
    snprintf(what, sizeof what, "the same %ld page faults in a plain loop: %.2f s system (%.2f s wall), ns/op", faults,
             control, control_wall / 1e9);
    print_row(row, what, once(control * 1e9 / (double)n), "control");
    snprintf(row, sizeof row, "scale_rss_%s", id);
    snprintf(what, sizeof what, "peak RSS %.0f MB for %ld ops, B/op", ru.ru_maxrss / 1024.0, n);
    print_row(row, what, once(ru.ru_maxrss * 1024.0 / (double)n), "target 3,500 B (3.5 GB for 10^6)");
}

/* threads calling at once (measure.h's print_thread_rows): the dispatched
   call of call_fallthrough and its function-pointer control; the tensors
   are only read, so both threads share them */
static long thread_dispatched(int t, long n) { (void)t; return row_call_fallthrough(n); }
static long thread_control(int t, long n) { (void)t; return row_fnptr_call(n); }

/* the memory rows (bench --memory: these alone) */
static void print_memory_rows(void) {
    result r;
    r = once(memory_per_op(5000, NULL));
    print_row("memory_per_op", "heap bytes per operator, def + CPU impl (alloc hooks)", r, "target 3.0 KB");
    r = once(memory_per_aten_op());
    if (r.med >= 0)
        print_row("memory_aten", "the same, aten's 3,199 schemas (average)", r, "target 3.5 KB");
    r = once((double)(sizeof(((dk_op_table *)0)->rows) + sizeof(((dk_op_table *)0)->entries)) / DK_NUM_SLOTS);
    print_row("memory_per_slot", "table bytes per runtime slot: entry + masks (struct size)", r, "");
}

int main(int argc, char **argv) {
    const long N = 5000000;
    result fp;
    paired pair;
    if (argc >= 2 && strcmp(argv[1], "--instr-atstart") == 0) {
        bench_instr_atstart();
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--memory") == 0) {
        bench_print_heading();
        print_memory_rows();
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "--scale") == 0) { /* before setup: the row's own registry alone */
        scale_row(atol(argv[2]));
        return 0;
    }
    setup();
    if (argc >= 2 && strcmp(argv[1], "--list") == 0) {
        bench_list(all_rows, n_rows);
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "--row") == 0) {
        long s = bench_run_row(all_rows, n_rows, argv[2], atol(argv[3]));
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
        print_row("call_fallthrough", "call skipping fallthrough layers (autograd, view)",
                  measure(row_call_fallthrough, N), "fnptr_call");
        print_row("call_two_hops", "autograd kernel redispatching to CPU", measure(row_call_two_hops, N),
                  "2 x call_fallthrough");
        print_row("redispatch", "redispatch alone (no TLS, no extraction)", measure(row_redispatch, N), "fnptr_call");
        print_thread_rows(thread_dispatched, thread_control, "call_fallthrough's call");
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--threads") == 0) { /* the thread rows alone */
        bench_print_heading();
        print_thread_rows(thread_dispatched, thread_control, "call_fallthrough's call");
        return 0;
    }
    printf("dispatch.h bench (%s preset, %d runtime slots); ns/op: median (min-max) of %d runs (%d for "
           "registration rows); instructions/op from hardware counters (%s)\n\n",
           DK_C10_VERSION == 11301 ? "PyTorch 1.13.1" : "PyTorch 2.7.1", DK_NUM_SLOTS, REPS, 5,
           perf_fd >= 0 ? "available" : "not available here: see make bench-icount");
    bench_print_heading();
    print_row("loop_baseline", "loop over rotating keysets, no work", measure(row_loop_baseline, N), "");
    print_row("highest_key", "keyset -> highest key", measure(row_highest_key, N), "loop_baseline");
    print_row("table_index", "keyset -> slot's entry, as the call path finds it", measure(row_table_index, N),
              "loop_baseline");
    print_row("keyset_to_kernel", "argument keyset -> kernel (TLS, mask, slot, load; 4 backends)",
              measure(row_keyset_to_kernel, N), "loop_baseline");
    print_row("direct_call", "direct call of the kernel (baseline)", measure(row_direct_call, N), "");
    fp = measure(row_fnptr_call, N);
    print_row("fnptr_call", "call through a function pointer, same shape", fp, "");
    print_row("call_one_hop", "dispatched call, keyset {CPU}", measure(row_call_one_hop, N), "fnptr_call");
    print_row("site_fnptr", "a function holding one call through a pointer", measure(row_site_fnptr, N), "");
    print_row("site_one_hop", "a function holding one dispatched call", measure(row_site_one_hop, N), "site_fnptr");
    print_row("site_gen_call", "a function holding one call of a gen/ binding", measure(row_site_gen_call, N),
              "site_fnptr");
#ifndef BENCH_NO_REDISPATCH
    print_row("site_gen_redispatch", "a function holding one redispatch of a gen/ binding",
              measure(row_site_gen_redispatch, N), "site_fnptr");
#endif
    print_row("call_fallthrough", "call skipping fallthrough layers (autograd, view)", measure(row_call_fallthrough, N),
              "fnptr_call");
    print_row("call_two_args", "two tensor arguments", measure(row_call_two_args, N), "fnptr_call");
    print_row("call_two_hops", "autograd kernel redispatching to CPU", measure(row_call_two_hops, N),
              "2 x call_fallthrough");
    print_row("redispatch", "redispatch alone (no TLS, no extraction)", measure(row_redispatch, N), "fnptr_call");
    print_row("boxed_fallback", "typed call on a boxed fallback, boxed via adapters", measure(row_boxed_fallback, N / 5),
              "fnptr_call");
    print_row("boxed_call", "boxed call (stack) into an unboxed kernel, via adapters", measure(row_boxed_call, N / 5),
              "fnptr_call");
    print_row("lookup_1k", "name lookup rotating over 1,000 operators' names", prepared("lookup_1k", N / 5, REPS), "");
    print_row("lookup_10k", "name lookup rotating over 10,000 operators' names", prepared("lookup_10k", N / 5, REPS),
              "");
    prepare_plain_lookup();
    pair = measure_paired("lookup_100k", row_plain_lookup, N / 5);
    print_row("lookup_100k", "name lookup rotating over 100,000 operators' names", pair.row, "lookup_100k_plain");
    print_row("lookup_100k_plain", "lookup_100k in plain C: XXH3, same load and order (control)", pair.control,
              "lookup_100k");
    print_row("lookup_100k_ratio", "lookup_100k / lookup_100k_plain, timed in turns (x)", pair.ratio, "target 1.3");
    print_row("rotate_10", "call rotating over 10 operators, shuffled", prepared("rotate_10", N / 2, REPS),
              "call_fallthrough");
    print_row("rotate_1k", "call rotating over 1,000 operators, shuffled", prepared("rotate_1k", N / 2, REPS),
              "call_fallthrough");
    prepare_plain_rotate();
    pair = measure_paired("rotate_100k", row_plain_rotate, N / 2);
    print_row("rotate_100k", "call rotating over 100,000 operators, shuffled", pair.row, "rotate_100k_plain");
    print_row("rotate_100k_seq", "call rotating over 100,000 operators, in order",
              prepared("rotate_100k_seq", N / 2, REPS), "rotate_100k");
    print_row("rotate_100k_plain", "rotate_100k's memory walked by plain C (control)", pair.control, "rotate_100k");
    print_row("rotate_100k_ratio", "rotate_100k / rotate_100k_plain, timed in turns (x)", pair.ratio, "target 3.0");
    print_row("def", "def (new operator, schema parsed)", prepared("def", 5000, 5), "target 6k instr");
    print_row("impl", "impl (one CPU kernel)", prepared("impl", 5000, 5), "target 3k instr");
    print_row("deregister", "deregister one impl handle", prepared("deregister", 5000, 5), "target 1.5k instr");
    print_row("fallback_1k", "register a boxed fallback, 1,000 operators", prepared("fallback_1k", 8, 5), "");
    print_row("fallback_10k", "register a boxed fallback, 10,000 operators", prepared("fallback_10k", 8, 5),
              "fallback_1k (O(1))");
    print_row("teardown_1000x4", "deregister 1,000 defs + 4,000 impls one by one (ns/handle)",
              median_of(sample_teardown, 5), "");
    print_row("destroy_1000x4", "destroy the registry of those 5,000 handles (ns/handle)", median_of(sample_destroy, 5),
              "teardown_1000x4");
    print_memory_rows();
    print_thread_rows(thread_dispatched, thread_control, "call_fallthrough's call");
    return 0;
}
