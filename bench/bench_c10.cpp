// make -f bench/c10.mk bench-c10: the cases of bench/bench.c measured with
// the real c10 dispatcher of libtorch 1.13.1 (Debian libtorch-dev), same row
// ids, same output format, same --list / --row NAME N modes and noinline
// row_<name>(long) functions (extern "C", so callgrind's --toggle-collect
// finds them under the same names and bench/icount.sh works unchanged).
//
// Build: g++ -std=c++17 -O2 -DNDEBUG bench/bench_c10.cpp -o build/bench_c10
//            -ltorch_cpu -lc10 -lpthread
//
// Differences from bench.c that cannot be avoided, each said in its row:
//  - c10 kernels take and return at::Tensor: every call, the baselines
//    included, pays one refcount increment + decrement (~13 instructions).
//  - c10's dispatcher is one process-wide singleton already holding the
//    ~2,500 aten operators and libtorch's own fallbacks; "a registry" here is
//    a set of torch::Library objects, destroyed to tear it down.
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
#include <memory>
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
static char names[NT][32];
extern "C" NOINLINE long row_lookup_by_name(long n) {
    long i, s = 0;
    c10::Dispatcher &d = c10::Dispatcher::singleton();
    for (i = 0; i < n; i++) s += (long)d.findSchema(c10::OperatorName(names[i & 3], "")).has_value();
    return s;
}

// registration rows: each iteration is a fresh operator, Library objects kept alive
static torch::Library *lib_rate_def, *lib_rate_impl;
static char (*rate_names)[40];
extern "C" NOINLINE long row_def(long n) {
    for (long i = 0; i < n; i++) lib_rate_def->def(rate_names[i]);
    return n;
}
extern "C" NOINLINE long row_impl(long n) {
    for (long i = 0; i < n; i++) {
        char name[40];
        memcpy(name, rate_names[i], sizeof name);
        *strchr(name, '(') = '\0';
        lib_rate_impl->impl(name, TORCH_FN(k_cpu1));
    }
    return n;
}
// Library objects registering n operators x 4 kernels, destroyed (time of the destruction)
extern "C" NOINLINE long row_teardown(long n) {
    std::vector<std::unique_ptr<torch::Library>> libs;
    libs.emplace_back(new_lib(torch::Library::DEF, "t", c10::nullopt));
    libs.emplace_back(new_lib(torch::Library::IMPL, "t", DispatchKey::CPU));
    libs.emplace_back(new_lib(torch::Library::IMPL, "t", DispatchKey::CUDA));
    libs.emplace_back(new_lib(torch::Library::IMPL, "t", DispatchKey::AutogradCPU));
    libs.emplace_back(new_lib(torch::Library::IMPL, "t", DispatchKey::CompositeImplicitAutograd));
    char name[48];
    for (long i = 0; i < n; i++) {
        snprintf(name, sizeof name, "t::op%ld(Tensor a) -> Tensor", i);
        libs[0]->def(name);
        *strchr(name, '(') = '\0';
        libs[1]->impl(name, TORCH_FN(k_cpu1));
        libs[2]->impl(name, TORCH_FN(k_cpu1));
        libs[3]->impl(name, TORCH_FN(k_autograd));
        libs[4]->impl(name, TORCH_FN(k_cpu1));
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    libs.clear();
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (long)((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec));
}

// ---- measurement (as bench.c) --------------------------------------------------------
#include "measure.h"

// ---- rows with their own shape ----------------------------------------------------------
struct thread_job { long n; const at::Tensor *t; double ns; };
static void *thread_calls(void *arg) {
    thread_job *j = (thread_job *)arg;
    double a = now_ns();
    long s = call_fallthrough_on(j->t, j->n);
    SINK(s);
    j->ns = now_ns() - a;
    return NULL;
}

static void scaling_rows(void) {
    static const long counts[] = { 10, 1000, 100000 };
    for (long nops : counts) {
        long rot = nops < 1024 ? nops : 1024;
        std::vector<Op1> ops;
        char name[48], what[80], id[32];
        double a = now_ns();
        torch::Library *def = new_lib(torch::Library::DEF, "s", c10::nullopt);
        torch::Library *cpu = new_lib(torch::Library::IMPL, "s", DispatchKey::CPU);
        for (long i = 0; i < nops; i++) {
            snprintf(name, sizeof name, "s::op%ld(Tensor a) -> Tensor", i);
            def->def(name);
            *strchr(name, '(') = '\0';
            cpu->impl(name, TORCH_FN(k_cpu1));
            if (i < rot) ops.push_back(c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig1>());
        }
        double reg_ns = (now_ns() - a) / (double)nops;
        result res;
        {
            Op1 *saved = op1;
            op1 = &ops[0];
            res = measure(row_call_fallthrough, 2000000);
            op1 = saved;
        }
        snprintf(id, sizeof id, "scale_call_%ld", nops);
        snprintf(what, sizeof what, "call, %ld operators registered (+ aten's)", nops);
        print_row(id, what, res, "flat is the target");
        {
            double t0 = now_ns();
            long s = 0, n = 2000000;
            for (long i = 0; i < n; i++) s += (long)(size_t)ops[i % rot].call(cpu_full[i & (NT - 1)]).unsafeGetTensorImpl();
            SINK(s);
            res = once((now_ns() - t0) / (double)n);
        }
        snprintf(id, sizeof id, "scale_rotate_%ld", nops);
        snprintf(what, sizeof what, "call rotating over %ld operators", rot);
        print_row(id, what, res, "tables out of L1");
        snprintf(id, sizeof id, "scale_register_%ld", nops);
        snprintf(what, sizeof what, "def + impl, average over %ld operators", nops);
        print_row(id, what, once(reg_ns), "");
        ops.clear();
        delete cpu;
        delete def;
    }
}

static const bench_row all_rows[] = { BENCH_FORALL_ROWS(BENCH_ROW_ENTRY) };
static const size_t n_rows = sizeof all_rows / sizeof all_rows[0];

int main(int argc, char **argv) {
    const long N = 5000000;
    result r;
    size_t i;
    if (argc >= 2 && strcmp(argv[1], "--list") == 0) { // no libtorch work needed to list
        bench_list(all_rows, n_rows);
        return 0;
    }
    setup();
    for (i = 0; i < 4; i++) snprintf(names[i], sizeof names[i], i == 0 ? "b::one" : i == 1 ? "b::two" : i == 2 ? "b::hops" : "b::boxed");
    if (argc >= 4 && strcmp(argv[1], "--row") == 0) {
        long n = atol(argv[3]), s = 0;
        START_INSTRUMENTATION();
        s = bench_run_row(all_rows, n_rows, argv[2], n);
        SINK(s);
        return 0;
    }
    perf_open();
    printf("c10 bench (real dispatcher, libtorch-dev 1.13.1, %d runtime slots); ns/op: median "
           "(min-max) of %d runs; instructions/op from hardware counters (%s)\n\n",
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
    print_row("call_two_hops", "AutogradCPU kernel redispatching to CPU", measure(row_call_two_hops, N), "2 x fnptr_call");
    print_row("redispatch", "typed redispatch alone (no TLS, no extraction)", measure(row_redispatch, N), "fnptr_call");
    print_row("boxed_fallback", "call on boxed fallback (GenericWrapper, not Tracer)", measure(row_boxed_fallback, N / 5),
              "fnptr_call");
    print_row("boxed_call", "callBoxed (Stack of IValues) into an unboxed kernel", measure(row_boxed_call, N / 5),
              "fnptr_call");
    print_row("lookup_by_name", "findSchema(OperatorName(string))", measure(row_lookup_by_name, N / 5), "");
    {   // registration rates
        long n = 20000, k;
        double a;
        rate_names = (char (*)[40])malloc((size_t)n * sizeof *rate_names);
        for (k = 0; k < n; k++) snprintf(rate_names[k], sizeof rate_names[k], "rate::op%ld(Tensor a) -> Tensor", k);
        lib_rate_def = new_lib(torch::Library::DEF, "rate", c10::nullopt);
        lib_rate_impl = new_lib(torch::Library::IMPL, "rate", DispatchKey::CPU);
        size_t heap0 = mallinfo2().uordblks;
        a = now_ns();
        row_def(n);
        print_row("def", "def (new operator, schema string parsed)", once((now_ns() - a) / (double)n), "");
        a = now_ns();
        row_impl(n);
        print_row("impl", "impl (one CPU kernel)", once((now_ns() - a) / (double)n), "");
        size_t heap1 = mallinfo2().uordblks;
        r = once((double)(heap1 - heap0) / (double)n);
        delete lib_rate_impl;
        delete lib_rate_def;
        free(rate_names);
    }
    {
        double t[5];
        for (int k = 0; k < 5; k++) t[k] = (double)row_teardown(1000);
        qsort(t, 5, sizeof t[0], cmp_double);
        result td;
        td.med = t[2]; td.min = t[0]; td.max = t[4]; td.instr = -1;
        print_row("teardown_1000x4", "destroy Library objects: 1,000 ops x 4 kernels (ns)", td, "");
    }
    print_row("memory_per_op", "sizeof(OperatorEntry): table, extractor masks, ...", once((double)sizeof(c10::impl::OperatorEntry)), "");
    print_row("memory_heap_per_op", "heap per def + CPU impl, entry incl. (mallinfo2)", r, "memory_per_op");
    print_row("memory_per_slot", "bytes per runtime slot (sizeof KernelFunction)", once((double)sizeof(c10::KernelFunction)), "");
    scaling_rows();
    {   // two threads at once, each with its own tensors (shared ones would bounce refcounts)
        pthread_t th[2];
        thread_job j[2];
        double one, both = 0;
        long n = 20000000;
        j[0].n = n;
        j[0].t = cpu_full;
        thread_calls(&j[0]);
        one = j[0].ns;
        for (int k = 0; k < 2; k++) { j[k].n = n; j[k].t = k ? cpu_full2 : cpu_full; pthread_create(&th[k], NULL, thread_calls, &j[k]); }
        for (int k = 0; k < 2; k++) { pthread_join(th[k], NULL); if (j[k].ns > both) both = j[k].ns; }
        print_row("two_threads", "throughput of 2 threads / 1 thread (x)", once((2.0 * n / both) / (n / one)), "2.0 is the target");
    }
    fflush(stdout);
    _exit(0); // skip static destructors of libtorch (the objects above are leaked on purpose)
}
