// make bench-c10: the cases of bench/bench.c measured with
// the real c10 dispatcher of libtorch 1.13.1 (Debian libtorch-dev), same row
// ids (BENCH_FORALL_ROWS of bench/measure.h), same output format, same
// --list / --row NAME N / --instr-atstart modes and noinline row_<name>(long)
// functions (extern "C", so callgrind's --toggle-collect finds them under the
// same names and bench/icount.sh works unchanged).
//
// Build: g++ -std=c++17 -O2 -DNDEBUG bench/bench_c10.cpp -o build/bench_c10
//            -ltorch_cpu -lc10 -lpthread
//
// Differences from bench.c that cannot be avoided, each said in its row:
//  - c10 kernels take and return at::Tensor: every call, the baselines
//    included, pays one refcount increment + decrement (~13 instructions).
//  - c10's dispatcher is one process-wide singleton already holding the
//    ~2,500 aten operators and libtorch's own fallbacks; "a registry of N
//    operators" here is a namespace of N operators beside aten's, and
//    deregistration destroys RegistrationHandleRAII objects one by one (c10
//    has no registry to destroy whole).
//  - Tracer already has a fallback in libtorch 1.13.1, so the boxed fallback
//    sits on the free key TESTING_ONLY_GenericWrapper (also reached through
//    the thread-local include set, also above Autograd).
#include <torch/library.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#endif

// --row: start callgrind's instrumentation only now, so that under
// VALGRIND_OPTS=--instr-atstart=no libtorch's start-up (thousands of static
// registrations) runs uninstrumented: ~7 s per callgrind run instead of ~65 s.
// A no-op outside valgrind and when instrumentation is already on.
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define START_INSTRUMENTATION() CALLGRIND_START_INSTRUMENTATION
#endif
#endif
#ifndef START_INSTRUMENTATION
#define START_INSTRUMENTATION() ((void)0)
#define HAVE_START_INSTRUMENTATION 0
#else
#define HAVE_START_INSTRUMENTATION 1
#endif

#define NOINLINE __attribute__((noinline))
#define SINK(x) __asm__ volatile("" : "+r"(x))
#define BARRIER() __asm__ volatile("" ::: "memory")

using c10::DispatchKey;
using c10::DispatchKeySet;
typedef at::Tensor Sig1(const at::Tensor &);
typedef at::Tensor Sig2(const at::Tensor &, const at::Tensor &);
typedef c10::TypedOperatorHandle<Sig1> Op1;
typedef c10::TypedOperatorHandle<Sig2> Op2;

// ---- OperatorHandle::operatorDef_ is private; OperatorEntry::lookup and
// dispatchKeyExtractor() are public. Reach the entry with the standard
// explicit-instantiation access rule (no layout assumptions).
struct OpDefTag { friend auto opdef_member(OpDefTag); };
template <auto M> struct OpDefRob { friend auto opdef_member(OpDefTag) { return M; } };
template struct OpDefRob<&c10::OperatorHandle::operatorDef_>;
static const c10::impl::OperatorEntry &entry_of(const c10::OperatorHandle &h) {
    return (h.*opdef_member(OpDefTag{}))->op;
}

// ---- kernels ------------------------------------------------------------------
static Op1 *op1, *op_hops, *op_boxed, *op_k2k;
static Op2 *op2;

extern "C" {
NOINLINE at::Tensor k_cpu1(const at::Tensor &a) { return a; }
NOINLINE at::Tensor k_cpu2(const at::Tensor &a, const at::Tensor &b) { (void)b; return a; }
// autograd-style kernel: exclude autograd, redispatch to the CPU kernel
NOINLINE at::Tensor k_autograd(DispatchKeySet ks, const at::Tensor &a) {
    return op_hops->redispatch(ks & c10::after_autograd_keyset, a);
}
// boxed fallback: leave the argument on the stack as the result
void k_boxed_fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack) { (void)op; (void)stack; }
// c10's own unboxed kernel shape, for the function-pointer baseline
NOINLINE at::Tensor k_cpu1_shaped(c10::OperatorKernel *k, DispatchKeySet ks, const at::Tensor &a) {
    (void)k; (void)ks;
    return a;
}
}
typedef at::Tensor (*kernel1_fn)(c10::OperatorKernel *, DispatchKeySet, const at::Tensor &);
static kernel1_fn volatile fnptr = k_cpu1_shaped;

#define NT 256
static at::Tensor *cpu_plain, *cpu_full, *cpu_full2, *mixed; // leaked on purpose: no exit-order issues
static DispatchKeySet realistic[NT];

static torch::Library *new_lib(torch::Library::Kind kind, const char *ns, c10::optional<DispatchKey> k) {
    return new torch::Library(kind, ns, k, __FILE__, __LINE__);
}
template <class F> static Op1 *typed1(const char *name) {
    return new Op1(c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<F>());
}

// A storage-less TensorImpl with exactly the given key set: c10 1.13.1's
// constructor also adds the backend's Autocast key (and the autograd keys),
// which bench.c's tensors do not have; key_set_ is protected, so set it.
struct ExactKeysImpl : c10::TensorImpl {
    ExactKeysImpl(DispatchKeySet ks, c10::Device d) : c10::TensorImpl(ks, caffe2::TypeMeta::Make<float>(), d) { key_set_ = ks; }
};
static at::Tensor exact_tensor(DispatchKeySet ks, c10::Device d) {
    return at::Tensor(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(c10::make_intrusive<ExactKeysImpl>(ks, d)));
}

static void setup(void) {
    static const c10::BackendComponent backends[] = { c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit,
                                                      c10::BackendComponent::MetaBit, c10::BackendComponent::XLABit };
    static const DispatchKey dense[] = { DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta, DispatchKey::XLA };
    static const c10::DeviceType devs[] = { c10::DeviceType::CPU, c10::DeviceType::CUDA, c10::DeviceType::Meta,
                                            c10::DeviceType::XLA };
    // kept alive for the whole run, like TORCH_LIBRARY's static objects
    torch::Library *def = new_lib(torch::Library::DEF, "b", c10::nullopt);
    torch::Library *cpu = new_lib(torch::Library::IMPL, "b", DispatchKey::CPU);
    torch::Library *ag = new_lib(torch::Library::IMPL, "b", DispatchKey::AutogradCPU);
    torch::Library *cia = new_lib(torch::Library::IMPL, "b", DispatchKey::CompositeImplicitAutograd);
    torch::Library *fb = new_lib(torch::Library::IMPL, "_", DispatchKey::TESTING_ONLY_GenericWrapper);
    def->def("b::one(Tensor a) -> Tensor");
    cpu->impl("one", TORCH_FN(k_cpu1));
    def->def("b::two(Tensor a, Tensor b) -> Tensor");
    cpu->impl("two", TORCH_FN(k_cpu2));
    def->def("b::hops(Tensor a) -> Tensor");
    cpu->impl("hops", TORCH_FN(k_cpu1));
    ag->impl("hops", TORCH_FN(k_autograd));
    def->def("b::boxed(Tensor a) -> Tensor");
    fb->fallback(torch::CppFunction::makeFromBoxedFunction<&k_boxed_fallback>());
    // keyset_to_kernel looks up CPU, CUDA, Meta, XLA keysets (AutogradMeta has no
    // libtorch fallthrough): c10 throws on
    // an empty slot, so this op has a kernel for every backend.
    def->def("b::k2k(Tensor a) -> Tensor");
    cia->impl("k2k", TORCH_FN(k_cpu1));
    op1 = typed1<Sig1>("b::one");
    op2 = new Op2(c10::Dispatcher::singleton().findSchemaOrThrow("b::two", "").typed<Sig2>());
    op_hops = typed1<Sig1>("b::hops");
    op_boxed = typed1<Sig1>("b::boxed");
    op_k2k = typed1<Sig1>("b::k2k");

    cpu_plain = new at::Tensor[NT];
    cpu_full = new at::Tensor[NT];
    cpu_full2 = new at::Tensor[NT];
    mixed = new at::Tensor[NT];
    for (int i = 0; i < NT; i++) {
        int b = (i * 7) % 4;
        cpu_plain[i] = exact_tensor(DispatchKeySet(DispatchKey::CPU), c10::Device(c10::DeviceType::CPU));
        // a normal at::empty CPU tensor: {CPU, ADInplaceOrView, AutogradCPU, AutocastCPU};
        // AutocastCPU is in c10's default thread-local excluded set
        cpu_full[i] = at::empty({1});
        DispatchKeySet m = DispatchKeySet(dense[b]) | c10::getAutogradRelatedKeySetFromBackend(backends[b]);
        mixed[i] = exact_tensor(m, c10::Device(devs[b], devs[b] == c10::DeviceType::CPU ? -1 : 0));
        realistic[i] = m | ((i % 3) ? c10::default_included_set : DispatchKeySet(DispatchKey::Tracer));
    }
    for (int i = 0; i < NT; i++) cpu_full2[i] = at::empty({1}); // the second thread's own tensors
    if (cpu_plain[0].key_set() != DispatchKeySet(DispatchKey::CPU) ||
        cpu_full[0].key_set() != (DispatchKeySet(DispatchKey::CPU) | c10::getAutogradRelatedKeySetFromBackend(c10::BackendComponent::CPUBit) |
                                  DispatchKeySet(DispatchKey::AutocastCPU))) {
        fprintf(stderr, "bench_c10: unexpected tensor key sets %s / %s\n", c10::toString(cpu_plain[0].key_set()).c_str(),
                c10::toString(cpu_full[0].key_set()).c_str());
        exit(1);
    }
}

// ---- rows ------------------------------------------------------------------------
extern "C" {
NOINLINE long row_loop_baseline(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) { uint64_t r = realistic[i & (NT - 1)].raw_repr(); SINK(r); s += (long)r; }
    return s;
}
NOINLINE long row_highest_key(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) { int k = (int)realistic[i & (NT - 1)].highestPriorityTypeId(); SINK(k); s += k; }
    return s;
}
NOINLINE long row_table_index(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) { int k = realistic[i & (NT - 1)].getDispatchTableIndexForDispatchKeySet(); SINK(k); s += k; }
    return s;
}
NOINLINE long row_keyset_to_kernel(long n) {
    const c10::impl::OperatorEntry &e = entry_of(*op_k2k);
    long i, s = 0;
    for (i = 0; i < n; i++) {
        DispatchKeySet ks = e.dispatchKeyExtractor().getDispatchKeySetUnboxed(mixed[i & (NT - 1)]);
        const c10::KernelFunction *k = &e.lookup(ks);
        SINK(k);
        s += (long)(size_t)k;
    }
    return s;
}
NOINLINE long row_direct_call(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)k_cpu1(cpu_plain[i & (NT - 1)]).unsafeGetTensorImpl();
    return s;
}
NOINLINE long row_fnptr_call(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) {
        const at::Tensor &a = cpu_plain[i & (NT - 1)];
        s += (long)(size_t)fnptr(nullptr, a.key_set(), a).unsafeGetTensorImpl();
    }
    return s;
}
NOINLINE at::Tensor site_fnptr(const at::Tensor &a) { return fnptr(nullptr, a.key_set(), a); }
NOINLINE at::Tensor site_dispatched(const at::Tensor &a) { return op1->call(a); }
NOINLINE long row_site_fnptr(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)site_fnptr(cpu_plain[i & (NT - 1)]).unsafeGetTensorImpl();
    return s;
}
NOINLINE long row_site_one_hop(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)site_dispatched(cpu_plain[i & (NT - 1)]).unsafeGetTensorImpl();
    return s;
}
NOINLINE long row_call_one_hop(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)op1->call(cpu_plain[i & (NT - 1)]).unsafeGetTensorImpl();
    return s;
}
static inline long call_fallthrough_on(const at::Tensor *t, long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)op1->call(t[i & (NT - 1)]).unsafeGetTensorImpl();
    return s;
}
NOINLINE long row_call_fallthrough(long n) { return call_fallthrough_on(cpu_full, n); }
NOINLINE long row_call_two_args(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++)
        s += (long)(size_t)op2->call(cpu_full[i & (NT - 1)], cpu_full[(i + 1) & (NT - 1)]).unsafeGetTensorImpl();
    return s;
}
NOINLINE long row_call_two_hops(long n) {
    long i, s = 0;
    for (i = 0; i < n; i++) s += (long)(size_t)op_hops->call(cpu_full[i & (NT - 1)]).unsafeGetTensorImpl();
    return s;
}
NOINLINE long row_redispatch(long n) {
    long i, s = 0;
    uint64_t cpu = DispatchKeySet(DispatchKey::CPU).raw_repr();
    for (i = 0; i < n; i++) {
        SINK(cpu);
        s += (long)(size_t)op1->redispatch(DispatchKeySet(DispatchKeySet::RAW, cpu), cpu_plain[i & (NT - 1)]).unsafeGetTensorImpl();
    }
    return s;
}
/* c10's boxed call: the argument on a torch::jit::Stack, OperatorHandle::callBoxed,
   the CPU kernel (registered unboxed) reached through its boxing wrapper */
NOINLINE long row_boxed_call(long n) {
    long i, s = 0;
    torch::jit::Stack stack;
    stack.reserve(4);
    for (i = 0; i < n; i++) {
        stack.emplace_back(cpu_full[i & (NT - 1)]);
        op1->callBoxed(&stack);
        s += (long)(size_t)stack.back().toTensor().unsafeGetTensorImpl();
        stack.clear();
    }
    return s;
}
NOINLINE long row_boxed_fallback(long n) {
    long i, s = 0;
    c10::impl::IncludeDispatchKeyGuard g(DispatchKey::TESTING_ONLY_GenericWrapper);
    for (i = 0; i < n; i++) s += (long)(size_t)op_boxed->call(cpu_full[i & (NT - 1)]).unsafeGetTensorImpl();
    return s;
}
}

// ---- N operators in the dispatcher (lookup, rotation and fallback rows) ------------
// N operators "rK::opI(Tensor a) -> Tensor" with a CPU kernel (bench.c builds the
// same names in a registry of their own). c10 has one process-wide dispatcher
// (aten's ~2,500 operators always in it), so a pool is a namespace, and the
// fallback rows first drop every other pool: a fallback registration visits
// every operator in the process.
struct Pool {
    long n = 0;
    torch::Library *def = nullptr, *impl = nullptr;
    std::vector<Op1> ops;      // in definition order
    std::vector<Op1> shuffled; // the same, in bench.c's fixed random order
    std::vector<std::array<char, 16>> names;
    std::vector<std::optional<c10::RegistrationHandleRAII>> fallbacks; // the fallback rows' registrations
};
static const long pool_sizes[] = { 10, 1000, 10000, 100000 };
static Pool pools[4];
static int pool_generation; // a fresh namespace for every pool built
static void drop_rate_state();

static void drop_pool(Pool &p) {
    p.fallbacks.clear();
    p.ops.clear();
    p.shuffled.clear();
    delete p.impl;
    delete p.def;
    p.impl = p.def = nullptr;
}
static void keep_only(long n) {
    drop_rate_state();
    for (int k = 0; k < 4; k++)
        if (pool_sizes[k] != n && pools[k].def) drop_pool(pools[k]);
}
static Pool *get_pool(long n) {
    int k = 0;
    while (pool_sizes[k] != n) k++;
    Pool &p = pools[k];
    if (!p.def) {
        char ns[16], schema[48];
        snprintf(ns, sizeof ns, "r%d", pool_generation++);
        p.n = n;
        p.def = new_lib(torch::Library::DEF, ns, c10::nullopt);
        p.impl = new_lib(torch::Library::IMPL, ns, DispatchKey::CPU);
        p.names.resize((size_t)n);
        p.ops.reserve((size_t)n);
        for (long i = 0; i < n; i++) { // every def first, then every kernel, as bench.c
            snprintf(p.names[i].data(), 16, "%s::op%ld", ns, i);
            snprintf(schema, sizeof schema, "%s(Tensor a) -> Tensor", p.names[i].data());
            p.def->def(schema);
        }
        for (long i = 0; i < n; i++) {
            p.impl->impl(p.names[i].data(), TORCH_FN(k_cpu1));
            p.ops.push_back(c10::Dispatcher::singleton().findSchemaOrThrow(p.names[i].data(), "").typed<Sig1>());
        }
        // bench.c's shuffled_copy: Fisher-Yates, xorshift64, the same seed
        p.shuffled = p.ops;
        uint64_t x = 0x9E3779B97F4A7C15u;
        for (long i = n - 1; i > 0; i--) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            long j = (long)(x % (uint64_t)(i + 1));
            std::swap(p.shuffled[(size_t)i], p.shuffled[(size_t)j]);
        }
    }
    return &p;
}

// name lookup, rotating over every name of a pool (c10 findSchema: OperatorName from the string)
static Pool *lookup_pool, *rotate_pool;
static long lookup_rotating(const Pool *p, long n) {
    c10::Dispatcher &d = c10::Dispatcher::singleton();
    long i, j = 0, s = 0;
    for (i = 0; i < n; i++) {
        s += (long)d.findSchema(c10::OperatorName(p->names[j].data(), "")).has_value();
        if (++j == p->n) j = 0;
    }
    return s;
}
// shuffled (rotate_*) or in definition order (rotate_100k_seq), as bench.c
static long call_rotating(const std::vector<Op1> &ops, long n) {
    long i, j = 0, s = 0, count = (long)ops.size();
    for (i = 0; i < n; i++) {
        s += (long)(size_t)ops[(size_t)j].call(cpu_full[i & (NT - 1)]).unsafeGetTensorImpl();
        if (++j == count) j = 0;
    }
    return s;
}
static void prepare_lookup_1k(long) { lookup_pool = get_pool(1000); }
static void prepare_lookup_10k(long) { lookup_pool = get_pool(10000); }
static void prepare_lookup_100k(long) { lookup_pool = get_pool(100000); }
static void prepare_rotate_10(long) { rotate_pool = get_pool(10); }
static void prepare_rotate_1k(long) { rotate_pool = get_pool(1000); }
static void prepare_rotate_100k(long) { rotate_pool = get_pool(100000); }
static void prepare_rotate_100k_seq(long) { rotate_pool = get_pool(100000); }
extern "C" {
NOINLINE long row_lookup_1k(long n) { return lookup_rotating(lookup_pool, n); }
NOINLINE long row_lookup_10k(long n) { return lookup_rotating(lookup_pool, n); }
NOINLINE long row_lookup_100k(long n) { return lookup_rotating(lookup_pool, n); }
NOINLINE long row_rotate_10(long n) { return call_rotating(rotate_pool->shuffled, n); }
NOINLINE long row_rotate_1k(long n) { return call_rotating(rotate_pool->shuffled, n); }
NOINLINE long row_rotate_100k(long n) { return call_rotating(rotate_pool->shuffled, n); }
NOINLINE long row_rotate_100k_seq(long n) { return call_rotating(rotate_pool->ops, n); }
}

// registration rows: a fresh namespace per run, as bench.c's fresh registry
static torch::Library *lib_rate_def, *lib_rate_impl;
static std::vector<std::array<char, 48>> rate_schemas;
static std::vector<std::array<char, 32>> rate_names;
static std::vector<std::optional<c10::RegistrationHandleRAII>> rate_handles;
static int rate_generation;
static void drop_rate_state() {
    for (auto &h : rate_handles) h.reset();
    rate_handles.clear();
    delete lib_rate_impl;
    delete lib_rate_def;
    lib_rate_impl = lib_rate_def = nullptr;
}
static void prepare_rate(long n, bool defs, bool impls) {
    char ns[16];
    drop_rate_state();
    snprintf(ns, sizeof ns, "d%d", rate_generation++);
    lib_rate_def = new_lib(torch::Library::DEF, ns, c10::nullopt);
    lib_rate_impl = new_lib(torch::Library::IMPL, ns, DispatchKey::CPU);
    rate_schemas.resize((size_t)n);
    rate_names.resize((size_t)n);
    rate_handles.resize((size_t)n);
    c10::Dispatcher &d = c10::Dispatcher::singleton();
    for (long i = 0; i < n; i++) {
        snprintf(rate_names[i].data(), 32, "%s::op%ld", ns, i);
        snprintf(rate_schemas[i].data(), 48, "%s::op%ld(Tensor a) -> Tensor", ns, i);
        if (defs) lib_rate_def->def(rate_schemas[i].data());
        // a handle of its own per kernel (a Library's handles go only all at once)
        if (impls)
            rate_handles[i].emplace(d.registerImpl(c10::OperatorName(rate_names[i].data(), ""), DispatchKey::CPU,
                                                   c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(k_cpu1)),
                                                   c10::impl::CppSignature::make<Sig1>(), nullptr,
                                                   "registered by bench_c10 (deregister row)"));
    }
}
static void prepare_def(long n) { prepare_rate(n, false, false); }
static void prepare_impl(long n) { prepare_rate(n, true, false); }
static void prepare_deregister(long n) { prepare_rate(n, true, true); }
extern "C" {
NOINLINE long row_def(long n) {
    for (long i = 0; i < n; i++) lib_rate_def->def(rate_schemas[i].data());
    return n;
}
NOINLINE long row_impl(long n) {
    for (long i = 0; i < n; i++) lib_rate_impl->impl(rate_names[i].data(), TORCH_FN(k_cpu1));
    return n;
}
// one impl handle after another, the newest first
NOINLINE long row_deregister(long n) {
    for (long i = n - 1; i >= 0; i--) rate_handles[i].reset();
    return n;
}
}

// fallback registration with 1k / 10k operators of ours (+ aten's): boxed
// fallbacks at Sparse and Quantized backend keys that have none in libtorch
static Pool *fallback_pool;
static std::vector<DispatchKey> fallback_keys;
static void prepare_fallback(long n, long ops) {
    if (n > 16) { fprintf(stderr, "bench_c10: at most 16 fallback registrations per run\n"); exit(2); }
    keep_only(ops);
    fallback_pool = get_pool(ops);
    fallback_pool->fallbacks.clear();
    fallback_pool->fallbacks.reserve(16);
    if (fallback_keys.empty()) {
        c10::Dispatcher &d = c10::Dispatcher::singleton();
        for (DispatchKey f : { DispatchKey::Sparse, DispatchKey::Quantized })
            for (int b = (int)c10::BackendComponent::CPUBit; b <= (int)c10::BackendComponent::EndOfBackendKeys; b++) {
                DispatchKey k = c10::toRuntimePerBackendFunctionalityKey(f, (c10::BackendComponent)b);
                try {
                    c10::RegistrationHandleRAII probe = d.registerFallback(
                        k, c10::KernelFunction::makeFromBoxedFunction<&k_boxed_fallback>(), "bench_c10 probe");
                    fallback_keys.push_back(k);
                } catch (const std::exception &) {
                }
            }
        if (fallback_keys.size() < 16) { fprintf(stderr, "bench_c10: fewer than 16 free fallback keys\n"); exit(1); }
    }
}
static void prepare_fallback_1k(long n) { prepare_fallback(n, 1000); }
static void prepare_fallback_10k(long n) { prepare_fallback(n, 10000); }
static long register_fallbacks(Pool *p, long n) {
    c10::Dispatcher &d = c10::Dispatcher::singleton();
    for (long i = 0; i < n; i++)
        p->fallbacks.emplace_back(d.registerFallback(fallback_keys[i],
                                                     c10::KernelFunction::makeFromBoxedFunction<&k_boxed_fallback>(),
                                                     "registered by bench_c10 (fallback row)"));
    return n;
}
extern "C" {
NOINLINE long row_fallback_1k(long n) { return register_fallbacks(fallback_pool, n); }
NOINLINE long row_fallback_10k(long n) { return register_fallbacks(fallback_pool, n); }
}

// ---- measurement (as bench.c) --------------------------------------------------------
#include "measure.h"

static const bench_row all_rows[] = { BENCH_FORALL_ROWS(BENCH_CALL_ENTRY, BENCH_PREPARED_ENTRY) };
static const size_t n_rows = sizeof all_rows / sizeof all_rows[0];
static result prepared(const char *name, long n, int reps) {
    return measure_prepared(bench_find(all_rows, n_rows, name), n, reps);
}

// ---- rows with their own shape ----------------------------------------------------------

// teardown: 1,000 operators x (def + 4 kernels) = 5,000 handles, registered
// through the dispatcher (a handle each) and deregistered one by one, newest
// first; ns per handle. c10 has no registry to destroy whole.
#define TEARDOWN_OPS 1000
static double sample_teardown(void) {
    static int generation;
    c10::Dispatcher &d = c10::Dispatcher::singleton();
    std::vector<std::optional<c10::RegistrationHandleRAII>> handles(TEARDOWN_OPS * 5);
    char name[48];
    size_t k = 0;
    for (long i = 0; i < TEARDOWN_OPS; i++) {
        snprintf(name, sizeof name, "t%d::op%ld(Tensor a) -> Tensor", generation, i);
        handles[k++].emplace(d.registerDef(torch::schema(name), "registered by bench_c10 (teardown)"));
        *strchr(name, '(') = '\0';
        c10::OperatorName on(name, "");
        handles[k++].emplace(d.registerImpl(on, DispatchKey::CPU, c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(k_cpu1)),
                                            c10::impl::CppSignature::make<Sig1>(), nullptr, "bench_c10 teardown"));
        handles[k++].emplace(d.registerImpl(on, DispatchKey::CUDA, c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(k_cpu1)),
                                            c10::impl::CppSignature::make<Sig1>(), nullptr, "bench_c10 teardown"));
        handles[k++].emplace(d.registerImpl(on, DispatchKey::AutogradCPU,
                                            c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(k_autograd)),
                                            c10::impl::CppSignature::make<Sig1>(), nullptr, "bench_c10 teardown"));
        handles[k++].emplace(d.registerImpl(on, DispatchKey::CompositeImplicitAutograd,
                                            c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(k_cpu1)),
                                            c10::impl::CppSignature::make<Sig1>(), nullptr, "bench_c10 teardown"));
    }
    generation++;
    double a = now_ns();
    for (size_t j = handles.size(); j-- > 0;) handles[j].reset();
    return (now_ns() - a) / (TEARDOWN_OPS * 5);
}

// memory: glibc heap bytes in use (mallinfo2: uordblks + hblkhd, chunk sizes)
// grown by n operators (def + one CPU kernel, through Library objects)
static size_t heap_in_use(void) {
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}
static double memory_per_op(long n) {
    torch::Library *def = new_lib(torch::Library::DEF, "m", c10::nullopt);
    torch::Library *cpu = new_lib(torch::Library::IMPL, "m", DispatchKey::CPU);
    char name[48];
    size_t before = heap_in_use();
    for (long i = 0; i < n; i++) {
        snprintf(name, sizeof name, "m::op%ld(Tensor a) -> Tensor", i);
        def->def(name);
        *strchr(name, '(') = '\0';
        cpu->impl(name, TORCH_FN(k_cpu1));
    }
    double per_op = (double)(heap_in_use() - before) / (double)n;
    delete cpu;
    delete def;
    return per_op;
}

// threads calling at once (measure.h's print_thread_rows), each thread with
// its own tensors (shared ones would bounce their refcounts between cores):
// call_fallthrough's call and its function-pointer control
static long thread_dispatched(int t, long n) { return call_fallthrough_on(t ? cpu_full2 : cpu_full, n); }
static long thread_control(int t, long n) {
    const at::Tensor *ts = t ? cpu_full2 : cpu_full;
    long i, s = 0;
    for (i = 0; i < n; i++) {
        const at::Tensor &a = ts[i & (NT - 1)];
        s += (long)(size_t)fnptr(nullptr, a.key_set(), a).unsafeGetTensorImpl();
    }
    return s;
}

int main(int argc, char **argv) {
    const long N = 5000000;
    if (argc >= 2 && strcmp(argv[1], "--list") == 0) { // no libtorch work needed to list
        bench_list(all_rows, n_rows);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--instr-atstart") == 0) {
        bench_instr_atstart();
        return 0;
    }
    setup();
    if (argc >= 4 && strcmp(argv[1], "--row") == 0) {
        long s = bench_run_row(all_rows, n_rows, argv[2], atol(argv[3]));
        SINK(s);
        fflush(stdout);
        _exit(0);
    }
    perf_open();
    printf("c10 bench (real dispatcher, libtorch-dev 1.13.1, %d runtime slots); ns/op: median "
           "(min-max) of %d runs (5 for registration rows); instructions/op from hardware counters (%s)\n\n",
           (int)c10::num_runtime_entries, REPS,
           perf_fd >= 0 ? "available" : "not available here: see bench/icount.sh");
    bench_print_heading();
    print_row("loop_baseline", "loop over rotating keysets, no work", measure(row_loop_baseline, N), "");
    print_row("highest_key", "DispatchKeySet::highestPriorityTypeId", measure(row_highest_key, N), "loop_baseline");
    print_row("table_index", "getDispatchTableIndexForDispatchKeySet", measure(row_table_index, N), "loop_baseline");
    print_row("keyset_to_kernel", "tensor -> kernel (extractor: TLS, mask; lookup)", measure(row_keyset_to_kernel, N),
              "loop_baseline");
    print_row("direct_call", "direct call Tensor(const Tensor&) (+refcount)", measure(row_direct_call, N), "");
    print_row("fnptr_call", "fn pointer, c10 unboxed shape (+refcount)", measure(row_fnptr_call, N), "");
    print_row("call_one_hop", "typed call, keyset {CPU} (TensorImpl subclass)", measure(row_call_one_hop, N), "fnptr_call");
    print_row("site_fnptr", "a function holding one call through a pointer", measure(row_site_fnptr, N), "");
    print_row("site_one_hop", "a function holding one typed call", measure(row_site_one_hop, N), "site_fnptr");
    print_row("call_fallthrough", "call skipping libtorch's fallthroughs (autograd etc)",
              measure(row_call_fallthrough, N), "fnptr_call");
    print_row("call_two_args", "two tensor arguments", measure(row_call_two_args, N), "fnptr_call");
    print_row("call_two_hops", "AutogradCPU kernel redispatching to CPU", measure(row_call_two_hops, N),
              "2 x call_fallthrough");
    print_row("redispatch", "typed redispatch alone (no TLS, no extraction)", measure(row_redispatch, N), "fnptr_call");
    print_row("boxed_fallback", "typed call on a boxed fallback (GenericWrapper)", measure(row_boxed_fallback, N / 5),
              "fnptr_call");
    print_row("boxed_call", "callBoxed (Stack of IValues) into an unboxed kernel", measure(row_boxed_call, N / 5),
              "fnptr_call");
    // registration first, while the dispatcher holds aten's operators and no pool
    print_row("def", "Library::def (schema string parsed)", prepared("def", 5000, 5), "");
    print_row("impl", "Library::impl (one CPU kernel)", prepared("impl", 5000, 5), "");
    print_row("deregister", "destroy one impl's RegistrationHandleRAII", prepared("deregister", 5000, 5), "");
    drop_rate_state();
    print_row("teardown_1000x4", "destroy 5,000 def/impl handles one by one (ns/handle)",
              median_of(sample_teardown, 5), "");
    print_row("memory_per_op", "heap bytes per operator, def + CPU impl (mallinfo2)", once(memory_per_op(5000)), "");
    print_row("memory_per_slot", "bytes per runtime slot (sizeof KernelFunction)", once((double)sizeof(c10::KernelFunction)), "");
    print_row("fallback_1k", "registerFallback, 1,000 operators (+ aten's)", prepared("fallback_1k", 8, 5), "");
    print_row("fallback_10k", "registerFallback, 10,000 operators (+ aten's)", prepared("fallback_10k", 8, 5),
              "fallback_1k (O(1))");
    keep_only(0);
    print_row("lookup_1k", "findSchema rotating over 1,000 names (+ aten's)", prepared("lookup_1k", N / 5, REPS), "");
    print_row("lookup_10k", "findSchema rotating over 10,000 names (+ aten's)", prepared("lookup_10k", N / 5, REPS), "");
    print_row("lookup_100k", "findSchema rotating over 100,000 names (+ aten's)", prepared("lookup_100k", N / 5, REPS), "");
    print_row("rotate_10", "call rotating over 10 operators, shuffled", prepared("rotate_10", N / 2, REPS),
              "call_fallthrough");
    print_row("rotate_1k", "call rotating over 1,000 operators, shuffled", prepared("rotate_1k", N / 2, REPS),
              "call_fallthrough");
    print_row("rotate_100k", "call rotating over 100,000 operators, shuffled", prepared("rotate_100k", N / 2, REPS), "");
    print_row("rotate_100k_seq", "call rotating over 100,000 operators, in order",
              prepared("rotate_100k_seq", N / 2, REPS), "rotate_100k");
    print_thread_rows(thread_dispatched, thread_control, "call_fallthrough's call");
    fflush(stdout);
    _exit(0); // skip static destructors of libtorch (the objects above are leaked on purpose)
}
