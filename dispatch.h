/* dispatch.h - v1.0.0 - PyTorch's c10 dispatcher for C99, in one header.

   LICENSE: MIT, see the end of this file.

   DO THIS IN EXACTLY ONE .c FILE, before #including it:

       #define DISPATCH_IMPLEMENTATION
       #include "dispatch.h"

   Every other file just #includes "dispatch.h". Link with nothing but libc:
   xxhash is included header-only (XXH_INLINE_ALL) inside the implementation.

   STEP BY STEP, from an empty file to a kernel that redispatches below
   autograd (make structure compiles this program with the project's warning
   flags, runs it and compares what it prints with the block after it):

   [example steps]
       // 1. One .c file defines the implementation before including the header.
       #define DISPATCH_IMPLEMENTATION
       #include "dispatch.h"
       #include <stdio.h>

       // 2. A tensor carries the keyset of its dispatch keys (its backend,
       //    autograd, ...): the call dispatches on it.
       typedef struct tensor { dk_keyset ks; float v; } tensor;

       // 3. The operator's C type. This defines neg_fn (the kernel type),
       //    neg_kernel, neg_args, neg_call and neg_redispatch (>>public).
       DK_DECLARE_OP(neg, float, x.ks, (tensor, x))
       static const dk_operator *neg_op;

       // 4. A kernel takes its record, the call's keyset, then the arguments.
       static float neg_cpu(const dk_kernel *k, dk_keyset ks, tensor x) {
           (void)k; (void)ks;
           return -x.v;
       }

       // 5. An autograd kernel does its part, then redispatches below
       //    autograd: the same keyset with the autograd keys taken out.
       static float neg_autograd(const dk_kernel *k, dk_keyset ks, tensor x) {
           (void)k;
           printf("autograd: recording neg\n");
           return neg_redispatch(neg_op, dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD),
                                 x);
       }

       int main(void) {
           dk_registry *r;
           dk_registration *def, *cpu, *autograd;
           tensor x;
           // 6. A registry, the operator's schema, a kernel per key. Every
           //    function that can fail returns a dk_status (DK_OK is 0).
           if (dk_registry_create(NULL, &r) != DK_OK) return 1;
           if (dk_def(r, "my::neg(Tensor x) -> Tensor", &def) != DK_OK ||
               DK_IMPL_TYPED(neg, r, "my::neg", DK_CPU, neg_cpu, NULL,
                             &cpu) != DK_OK ||
               DK_IMPL_TYPED(neg, r, "my::neg", DK_Autograd, neg_autograd, NULL,
                             &autograd) != DK_OK) {
               printf("%s\n", dk_last_error());
               return 1;
           }
           // 7. Look the operator up once, then call it.
           neg_op = dk_op_lookup(r, "my::neg");
           x.v = 2.0f;
           x.ks = dk_ks_or(dk_ks_from_key(DK_CPU),
                           dk_ks_from_key(DK_AutogradCPU));
           printf("%g\n", neg_call(neg_op, x));   // autograd, then CPU
           x.ks = dk_ks_from_key(DK_CPU);
           printf("%g\n", neg_call(neg_op, x));   // CPU alone
           // 8. Take a kernel away again; destroy the registry.
           if (dk_deregister(autograd) != DK_OK) return 1;
           printf("%g\n", neg_call(neg_op, x));
           dk_registry_destroy(r);
           return 0;
       }
   [/example]

   It prints:

   [output steps]
       autograd: recording neg
       -2
       -2
       -2
   [/output]

   BASIC USE: the names the program above uses are most of what a program
   needs. dk_registry_create / dk_registry_destroy; dk_def (an operator from
   its schema); DK_DECLARE_OP (its C type: name_call, name_redispatch);
   DK_IMPL_TYPED (a kernel of that type for a key; dk_impl with dk_unboxed
   or dk_boxed registers any other); dk_deregister; dk_op_lookup (an
   operator by name); dk_ks_from_key, dk_ks_or, dk_ks_and and the named
   keysets DK_KS_* (what a tensor carries and what a kernel redispatches
   to); dk_guard_below_autograd / dk_guard_pop (call below autograd from
   outside a kernel); dk_last_error and dk_status_message (what went wrong).
   A thread that calls while others register: WHAT A PROGRAM DOES (below);
   a real-time one (an audio callback): REAL-TIME THREADS, after it.
   Everything else is advanced: THE API BY TASK (below) says where it is.

   TABLE OF CONTENTS (grep for the >>tag)

       >>config      configuration macros, presets, user lists
       >>lists       the X-macro lists: backends, functionality keys, alias keys;
                     Note [Custom key lists] (a program's own keys, worked example)
       >>enums       dk_backend, dk_key, counts, runtime slots, static asserts
       >>public      THE API: every public function, macro and type
       >>private     the library's own (dk__ / DK__) and the bodies of the
                     public inline functions, each under its contract, by
                     subject:
       >>roles       role flags of functionality keys, the raw named keysets
                     (Note [Roles])
       >>keyset      the keyset algebra's bodies; Note [Tables in one unit],
                     Note [Runtime slots]
       >>keys        key queries (the ones that expand many roles are
                     functions, defined in impl-slots)
       >>status      the enum helpers' #undefs
       >>api         the configuration signature and its hash (Note
                     [Configuration in a symbol name])
       >>aliases     alias keys found by role (Autograd, CompositeImplicitAutograd...)
       >>boxed       the stack functions' and value makers' bodies
       >>registry    the table reads, the private def / impl / library entries
       >>tls         the thread-local state, the read sections, the guards' bodies
                     (Note [Guards])
       >>call        the inline call path: dispatch, redispatch, DK_DECLARE_OP's
                     helpers (Note [Typed registration]), the link check
       >>schema      the schema readers' bodies
       >>impl        implementation (DISPATCH_IMPLEMENTATION only), each exported
                     function under its contract:
                     >>impl-threads, >>impl-errors, >>impl-epochs (Note
                     [Reclamation]), >>impl-names, >>impl-slots (the tables, some
                     key queries), >>impl-config,
                     >>impl-registry (Note [Resolution]), >>impl-call, >>impl-abi
                     (Note [The C ABI]), >>impl-schema

   KEYS AND KEYSETS (>>public: "Keysets and keys"; docs/keys.md)

   A dispatch key is one layer of behaviour (CPU, AutogradCUDA, Tracer...);
   a higher value is a higher priority. Functionality keys have one bit
   each; a per-backend runtime key is a per-backend functionality x a
   backend component (AutogradCPU = AutogradFunctionality x CPUBit); an
   alias key (Autograd, CompositeImplicitAutograd...) stands for a set of
   runtime keys when registering. A dk_keyset is 64 bits, backend components
   low, functionality keys above: a call dispatches to its highest
   functionality, with its highest backend when that one is per-backend.
   Build keysets with dk_ks_from_key, dk_ks_or, dk_ks_and, dk_ks_remove and
   c10's named keysets DK_KS_*; print them with dk_ks_to_string. Each
   runtime key has one slot in an operator's table (dk_ks_slot: a keyset's,
   dk_key_slot: a key's, dk_slot_key: a slot's key). A program's own keys:
   Note [Custom key lists]; PyTorch 1.13.1's or 2.11's: CONFIGURATION.

   DEFINING OPERATORS AND REGISTERING KERNELS (>>public: "Defining
   operators", "Plugins"; docs/registering.md)

   dk_def gives an operator its schema (dk_def_with: adapters, alias
   analysis, tags). dk_impl registers a kernel for one key of an operator,
   a runtime key or an alias key; DK_IMPL_TYPED one of the type
   DK_DECLARE_OP declared (any other type does not compile); DK_CatchAll
   (c10's CatchAll, the value of DK_Undefined) the catch-all kernel, which
   fills CompositeImplicitAutograd's slots. dk_fallback registers a boxed
   kernel, or dk_fallthrough(), for every operator at one key. A kernel is
   described by dk_unboxed(DK_FN(fn), user_data), dk_boxed(fn, user_data)
   or dk_fallthrough(). Each registration returns a handle that
   dk_deregister removes exactly, restoring what it shadowed. Library
   blocks (DK_LIBRARY, DK_LIBRARY_FRAGMENT, DK_LIBRARY_IMPL; dk_library_run
   where there are no constructors) register at load and deregister when
   their library is closed or their object unloaded; inside a
   DK_LIBRARY_IMPL block no key (DK_Undefined) means the block's key.

   CALLING AND REDISPATCHING (>>public: "Calling"; docs/calling.md)

   DK_DECLARE_OP(name, R, keyset_expr, (T1, a1), ...) (DK_DECLARE_OP_VOID
   for void) declares name_call(op, a1, ...): it computes c10's dispatch
   keyset from the arguments' keysets and this thread's included /
   excluded sets, then runs the kernel of its highest key; and
   name_redispatch(op, ks, a1, ...), which runs the kernel of ks as given
   (no thread state, no mask): what a kernel calls to continue below its
   own layer, with dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD) or, from a fallback
   at key K, dk_ks_full_after(K). Guards change this thread's sets until
   dk_guard_pop: dk_guard_include, dk_guard_exclude,
   dk_guard_below_autograd... A kernel fails its own call with
   dk_call_fail; a slot without a kernel reports through the registry's
   call-error hook (ERRORS), and the call returns zeroes.

   BOXED CALLS AND SCHEMAS (>>public: "Boxed calls and values", "Schemas";
   docs/calling.md, docs/schemas-and-gen.md)

   A schema is c10's text, parsed in full (dk_schema_parse;
   dk_op_function_schema: an operator's). dk_call_boxed runs an operator
   on a dk_stack of dk_value (dk_stack_init, dk_stack_push, dk_stack_pop),
   checked against the schema first; a boxed kernel continues below its
   layer with dk_redispatch_boxed. An unboxed kernel is reached from a
   boxed call, and a boxed kernel or fallback from a typed call, through
   the def's adapters, which gen/'s bindings (dkgen) generate from the
   schemas.

   ERRORS (>>public: "Errors, logging, configuration, version")

   Three channels, one per kind of caller:
     - A function that can fail returns a dk_status (DK_OK == 0;
       dk_status_message describes it) and dk_last_error() gives this
       thread's detailed message; a failed registration changes nothing.
     - A failed call goes to the registry's call-error hook
       (dk_registry_set_call_error; default: dk_last_error and
       dk_last_call_status, which returns the last FAILED call's status and
       clears it: a call that succeeds leaves it alone, so clear it before
       a call you check; example above its definition).
     - What has no caller to return to (an overridden kernel, a failure
       inside a library block, a panic before abort) goes to the registry's
       logger (dk_registry_desc.logger), one DK_FORALL_LOG_ITEMS item per
       message; the default logger, dk_log_stderr, is the only code that
       prints.
   A misuse the debug checks find (DK_DEBUG_READS, DK_DEBUG_THREADS:
   CONFIGURATION) goes to dk_log_stderr as DEBUG_CHECK_FAILED, naming the
   function or the thread, and abort() follows. Listeners and the logger
   run under the registry's mutex: calls and read-only introspection work
   from them; registering from them returns DK_ERR_REENTRANT.

   INSPECTING (>>public: "Inspecting"; docs/calling.md, docs/registering.md)

   A slot holds a kernel record (dk_kernel) of one dk_kernel_kind: a
   function, a fallthrough, the ambiguous-autogradother sentinel or
   missing; where it comes from (the key itself, an alias, a backend
   fallback...) is its dk_source, and c10's words for that its
   dk_source_detail. dk_explain says what a call would do and why
   (dk_explain_args: which argument brought which key);
   dk_op_state_to_string prints an operator's registrations and table;
   dk_registry_html_to_string draws every table; dk_trace_set reports every
   call; dk_timeline_start records a timeline that chrome://tracing opens.
   The library's readers read inside a read section of their own (Note
   [One read primitive]); the inline accessors (dk_op_table_of,
   dk_op_slot_kernel, dk_op_function_schema, dk_op_schema,
   dk_dispatch_kernel, dk_redispatch_kernel and their _with_fn forms)
   leave it to their caller: inside a call, or, under DK_CALL_EPOCHS,
   between dk_call_enter and dk_call_exit (DK_DEBUG_READS checks it; how
   long what they return lives: their one-liners, in full above their
   definitions).

   WHAT A PROGRAM DOES (threads, memory, plugins, exit), in each mode
   (>>public: "Threads and memory", "Plugins";
   docs/threads-memory-plugins.md)

   Registration takes the registry's mutex; calls and name lookups take no
   lock and write nothing shared, and a call racing a registration runs
   what the state before or the state after it would run. What a change
   unpublishes (old tables, deregistered kernel records, operators left
   with no def and no kernel, old name indexes) is freed once no thread
   can still read it (Note [Reclamation]), so a registry's memory is
   bounded by what is registered now, not by its history -- if the program
   does what its mode asks:
     Default build (nothing is added to the call path; the program says
     when a thread holds nothing, per thread):
       - Every thread that calls while registrations change takes part:
         dk_registry_reclaim(r) between calls (once per request, per
         training step, every ~10,000 calls) is its quiescent point and
         frees what every thread taking part has passed; a thread that
         must not free calls dk_thread_quiescent() instead (REAL-TIME
         THREADS); dk_thread_offline() before it blocks or idles for long,
         dk_thread_online() when it calls again (exited threads are
         dropped). A thread that never takes part must be outside every
         call of r whenever any thread reclaims r -- which a
         single-threaded program always is (DK_DEBUG_THREADS checks it).
       - Before freeing what a deregistered kernel used (its user data,
         its code): dk_registry_synchronize(r), which waits for the
         threads taking part. dk_deregister and dk_library_close never
         wait.
     DK_CALL_EPOCHS: calls bracket themselves (dk_call_enter/exit, one
       thread-local word; what a call pays: docs/bench.md); nothing to
       declare. dk_registry_reclaim and dk_registry_synchronize wait for
       the calls in flight.
     Both modes:
       - Memory: registries allocate through dk_registry_desc.alloc/free.
         Calls never allocate but for a thread's own state, malloc'ed
         once: its 16 KB message buffer at its first error and, under call
         epochs, its record at its first call, or both ahead of them at
         dk_thread_attach (REAL-TIME THREADS). Memory that waits is
         visible in dk_registry_read_stats (retired bytes, the threads it
         waits for, by dk_thread_id); the logger warns once past
         desc.retired_warn_bytes (64 MiB).
       - Plugins: DK_LIBRARY* blocks close when their object is unloaded,
         and the unload waits until no thread can be running its kernels.
         A plugin is compiled in the host's configuration; the host reads
         dk_library_blocks around dlopen to see whether its blocks ran
         (examples/plugin-host). Unload with
         dk_library_unload(dlsym(handle, "a symbol")), then dlclose(handle):
         the wait then happens outside the dynamic loader's lock (why, at
         dk_library_unload).
       - Exit: threads need not be joined. Once exit() begins nothing is
         freed and nothing waits, so a thread still calling reads valid
         memory until the process ends.
       - A kernel left by longjmp (or an exception): dk_thread_offline()
         at the landing point, outside every call.
       - fork() while other threads register is safe: the child's
         registries are whole and unlocked.

   REAL-TIME THREADS (an audio callback, a control loop: a thread that must
   never block), both modes:
     - dk_thread_attach() once, before its first call (at thread start, or
       in the driver's first callback): it allocates everything the thread
       will need and makes it take part.
     - Then calls of every kind -- typed, boxed, redispatches, guards,
       boxed fallbacks, failing calls (their message goes to the thread's
       buffer, allocated at attach) -- never allocate, lock or make a
       system call on it. A failing call builds its message on the stack:
       about 20 KB while it reports (dk_call_fail, a missing kernel), never
       while a kernel runs; size a real-time thread's stack for it.
     - dk_thread_quiescent() between calls (once per block): its quiescent
       point; it never blocks, allocates or frees.
     - Never dk_registry_reclaim nor dk_registry_synchronize on it: another
       thread (the one that registers, a housekeeping timer) reclaims, and
       frees there. dk_thread_offline() when it stops (the driver stops its
       stream), dk_thread_attach() again when it starts.

   FOREIGN CALLERS (>>public: "The C ABI"; docs/threads-memory-plugins.md,
   "Other languages"; examples/ctypes)

   The C ABI (dk_abi_*) gives foreign callers (Python's ctypes, cffi...)
   the registry, def / impl / fallback, kernel descriptions, failing a
   call, schemas, keyset algebra and the named keysets, stacks and lists,
   guards, sizes, the names and numbers of statuses and value tags as real
   functions of plain C types. Which build a foreign host loads (a Python
   host: the call-epochs one) and every lifetime: Note [The C ABI], above
   dk_abi_registry_create's definition.

   CONFIGURATION (>>config)

       DISPATCH_IMPLEMENTATION  define in one .c file to emit the implementation
       DISPATCH_STATIC          make every function static (implementation and
                                all users in the same translation unit)
       DK_SHARED                the implementation lives in a shared library:
                                define it in every unit (what it exports and
                                imports: docs/building.md)
       DK_API                   linkage of every public function (default:
                                extern, or as set by DISPATCH_STATIC /
                                DK_SHARED); define it to take over
                                (beginning with extern).
       DK_CONFIG_HEADER         "file.h" included first in every translation unit;
                                may define the three lists (see >>config).
                                MUST be the same in every translation unit.
       DK_CONFIG_HEADER_FILE    the same header named without quotes
                                (-DDK_CONFIG_HEADER_FILE=my_keys.h), for
                                make's and pkg-config's flags, which lose
                                quotes; no word of the name may be a macro
       DK_PRESET_TORCH_1_13_1   use PyTorch 1.13.1's key lists instead of 2.7.1's.
                                MUST be the same in every translation unit.
       DK_PRESET_TORCH_2_11     use PyTorch 2.11's key lists (MAIA a backend
                                component, 16 backends). Same in every unit.
       DK_THREAD_LOCAL          storage class for thread-local variables
                                (default: __thread, thread_local,
                                _Thread_local or __declspec(thread))
       DK_TLS_MODEL             TLS model attribute (initial-exec on glibc and
                                non-Linux ELF; musl refuses it in dlopen)
       DK_SINGLE_THREADED       one thread only uses dispatch.h: plain
                                variables for TLS, plain accesses for
                                atomics (compilers without either: tcc).
                                MUST be the same in every translation unit.
       DK_WIN32_ATOMICS         Windows Interlocked atomics (default with
                                MSVC, x86/x64; mingw-w64 may set it to
                                test that path). Same in every unit.
       DK_NO_TRACE              remove the trace-hook check from calls (per unit)
       DK_NO_LINK_CHECK         a unit that includes the header for its types
                                only (dlopen + dlsym): no reference to the
                                implementation (per unit)
       DK_NO_DLADDR             no dladdr: dk_library_unload refuses
       DK_EXPLAIN_MAX_ARGS      argument keysets a dk_explanation holds
                                (default 16; its size).
                                MUST be the same in every translation unit.
       DK_CALL_EPOCHS           calls bracket their kernels with a per-thread
                                epoch; memory is freed without quiescent
                                points (WHAT A PROGRAM DOES).
                                MUST be the same in every translation unit.
       DK_HASH64(p, n)          name hash (default xxhash's XXH3_64bits;
                                the implementation's unit)
       DK_ASSERT(c)             internal assertion, default assert() (the
                                implementation's unit)
       DK_DEBUG_READS           debug check (per unit; on in the test
                                builds): a read of an operator's snapshot,
                                a kernel record, a def's record or the name
                                index outside a read section (INSPECTING)
                                stops the program naming the function
       DK_DEBUG_THREADS         debug check (per unit; on in the test
                                builds), default build: once a thread has
                                taken part (WHAT A PROGRAM DOES), a call
                                from one that never has stops the program,
                                naming the thread and what to call. Turn
                                it on while developing a program whose
                                threads call while others reclaim or
                                unload (an audio driver's callback thread
                                easily is one). Neither check changes a
                                release build's call path.
       The MUSTs (with DK_C10_VERSION, which the presets set) make the
       configuration: a unit in another is refused at its first registration
       or does not link (see >>config).

   THE API BY TASK is the >>public block, after the configuration and the
   lists: every public function, macro and type, each with a one-line
   comment (its full contract -- parameters, errors, lifetimes, threads --
   is the comment above its definition, or the Note the line names), the
   types first, then one part per task under a one-line banner that names
   its manual section and docs page: keysets and keys; registries; defining operators and registering
   kernels; calling (typed calls, redispatch, thread-local keysets and
   guards); boxed calls and values; threads and memory; plugins (library
   blocks); inspecting; schemas; errors, logging, configuration, version;
   the C ABI (FOREIGN CALLERS).
   Names with dk__ / DK__ are the implementation's (>>private). The exported ones
   (dk__def, dk__impl, dk__library_open, dk__config_check...) are what the
   lowercase macros above expand to, adding the caller's configuration
   signature and site; only tests of that entry (a NULL signature) and of
   c10's exact texts (a given file:line) call them directly.
*/

#ifndef DISPATCH_H
#define DISPATCH_H

#define DK_VERSION_MAJOR 1
#define DK_VERSION_MINOR 0
#define DK_VERSION_PATCH 0
#define DK_VERSION_NUMBER (DK_VERSION_MAJOR * 10000 + DK_VERSION_MINOR * 100 + DK_VERSION_PATCH)
#define DK_VERSION_STRING "1.0.0"

/* The private ABI revision: bump it whenever anything the header compiles
   into a user's unit changes shape without a new version number: the
   private functions the inline call path and DK_DECLARE_OP call (their
   names, parameters), the layouts of the structs they read. The
   configuration hash reads it (Note [Configuration in a symbol name]), so
   a unit compiled with an older header fails to link or load instead of
   dying at its first slow call. (Defined outside only by
   test_config_mismatch, to build such a unit.) 1: dk__call_slow_at. */
#ifndef DK__ABI_REVISION
#define DK__ABI_REVISION 1
#endif

#include <stddef.h>
#include <stdint.h>


#if defined(__cplusplus)
#define DK_INLINE static inline
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L
#define DK_INLINE static inline
#else
#define DK_INLINE static
#endif

#if defined(__GNUC__) || defined(__clang__)
#define DK__UNUSED __attribute__((unused))
#else
#define DK__UNUSED
#endif

/* DK_API marks every public function, the few variables the inline call
   path reads and the generated tables the inline functions read (Note
   [Tables in one unit]): static (and possibly unused) under DISPATCH_STATIC,
   extern otherwise. DK_SHARED adds what a shared library needs: exported from the
   unit that defines DISPATCH_IMPLEMENTATION (before its first #include),
   imported everywhere else on Windows; default visibility elsewhere, so the
   library can be built with -fvisibility=hidden. A user's own DK_API wins
   (it must begin with extern, or static with DISPATCH_STATIC). */
#ifndef DK_API
#if defined(DISPATCH_STATIC)
#define DK_API static DK__UNUSED
#elif defined(DK_SHARED) && (defined(_WIN32) || defined(__CYGWIN__))
#ifdef DISPATCH_IMPLEMENTATION
#define DK_API extern __declspec(dllexport)
#else
#define DK_API extern __declspec(dllimport)
#endif
#elif defined(DK_SHARED) && (defined(__GNUC__) || defined(__clang__))
#define DK_API extern __attribute__((visibility("default")))
#else
#define DK_API extern
#endif
#endif

#define DK__STR(x) #x
#define DK__XSTR(x) DK__STR(x)
#define DK__CAT(a, b) a##b
#define DK__XCAT(a, b) DK__CAT(a, b)

/* Static assertion usable at file scope in C99, C11 and C++. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define DK_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define DK_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#else
#define DK_STATIC_ASSERT(cond, msg) \
    extern int DK__XCAT(dk__static_assert_, __LINE__)[(cond) ? 1 : -1]
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* >>config ------------------------------------------------------------------

   The key space is three X-macro lists. A program may supply its own through
   DK_CONFIG_HEADER (defining DK_FORALL_BACKEND_COMPONENTS and
   DK_FORALL_FUNCTIONALITY_KEYS, optionally DK_FORALL_ALIAS_KEYS); otherwise
   the lists of PyTorch 2.7.1 are used, or those of 1.13.1 under
   DK_PRESET_TORCH_1_13_1, or those of 2.11 under DK_PRESET_TORCH_2_11.
   DK_CONFIG_HEADER_FILE=my_keys.h names the same header without quotes.
   Every translation unit must be compiled in the same configuration: these
   lists and DK_CALL_EPOCHS, DK_EXPLAIN_MAX_ARGS, DK_C10_VERSION,
   DK_SINGLE_THREADED (DK_CONFIG_SIGNATURE in >>public).
   dk_config_check() (called by the registry on every registration) compares
   the caller's signature with the implementation's and reports
   DK_ERR_CONFIG_MISMATCH, naming the first item that differs, instead of
   silently mis-indexing; a unit that only calls fails to link or load
   instead (Note [Configuration in a symbol name]).

   Row formats (see Note [Roles] for the role flags):

     DK_FORALL_BACKEND_COMPONENTS(X, extra):
       X(Name, OwnAutograd, AutocastKey, Functional, extra)
         Name         backend component; the enumerator is DK_<Name>Bit
         OwnAutograd  1: has an Autograd<Name> key; 0: its autograd is AutogradOther;
                      2: has one, but the key sits on no backend key
                      (dk_autograd_key_backend_set: empty; c10 2.11's AutogradMTIA)
         AutocastKey  functionality key of its autocast layer, or Undefined
         Functional   1: a functional backend (XLA, Lazy), outside
                      CompositeExplicitAutogradNonFunctional; plus 2: the
                      component's name has no "Bit" (c10 2.x's MTIA, MAIA)

     DK_FORALL_FUNCTIONALITY_KEYS(X, extra):   ORDER KEYS (priority ascending)
       X(Name, PerBackend, Prefix, Roles, extra)
         PerBackend   1: one runtime key per backend, named <Prefix><Backend>
         Prefix       runtime-key name prefix (empty for Dense)
         Roles        DK_R_* flags, or 0

     DK_FORALL_ALIAS_KEYS(X, extra):
       X(Name, Set, extra)
         Set          the resolution role it plays (BACKEND, MATH, ...: the
                      named keyset DK_KS_<Set> is what it covers), or
                      KEYS(key, ...) (see Note [Custom key lists])
*/

#ifdef DK_CONFIG_HEADER
#include DK_CONFIG_HEADER
#elif defined(DK_CONFIG_HEADER_FILE)
/* the same without quotes (-DDK_CONFIG_HEADER_FILE=my_keys.h), for the
   places that lose them: make's and pkg-config's flags. The name is
   stringized, so none of its words may be a macro. */
#define DK_CONFIG_HEADER DK__XSTR(DK_CONFIG_HEADER_FILE)
#include DK_CONFIG_HEADER
#endif

/* >>lists -------------------------------------------------------------------

   Note [Custom key lists]. A program with its own domain brings its own
   keys: define the lists in a header and pass it as DK_CONFIG_HEADER
   ("doc_keys.h") to every unit, the library's included. Everything is
   generated from the rows (enums, names, slots, keysets, resolution).

   Backends: X(Name, OwnAutograd, AutocastKey, Functional, extra), where a
   call lands (DK_<Name>Bit). Outside PyTorch: OwnAutograd 1 when the list
   has a per-backend autograd row and this backend uses its own key of it
   (0: it shares the DK_R_AUTOGRAD_OTHER key, or there is no autograd),
   AutocastKey Undefined, Functional 0.

   Functionality keys, lowest priority first: X(Name, PerBackend, Prefix,
   Roles, extra). A layer is a row; PerBackend 1 gives it one key per
   backend, <Prefix><Backend>. Special rows are found by role, never by name
   (Note [Roles]); a list needs only the first:
     DK_R_BACKEND | DK_R_BACKEND_FN, per backend, empty prefix: the
         plain-kernel row (PyTorch's Dense): its keys are named after the
         backends (DK_Raster) and hold each backend's own kernels. The first
         per-backend DK_R_BACKEND_FN row is it (dk_autograd_key_backend_set).
     DK_R_BACKEND          more rows of backend kernels (the BACKEND alias
                           covers them): Quantized, Sparse in PyTorch
     DK_R_AUTOGRAD         a layer above the backends that the AUTOGRAD_ALIAS
                           alias covers and dk_guard_below_autograd excludes;
                           the first such row starts DK_KS_AFTER_AUTOGRAD
     DK_R_AUTOGRAD_OTHER, DK_R_OTHER_BACKEND   one shared autograd key for
                           backends with OwnAutograd 0, and the rows it serves
     DK_R_MATH             also covered by the MATH alias
     DK_R_INCLUDED         on in every thread by default (TLS included set)
     DK_R_AUTOCAST         off in every thread by default (TLS excluded set)
     the rest (DK_R_INPLACE_VIEW, _FUNCTIONALIZE, _PYTHON, _FUNCTORCH,
     _BATCHED, _NESTED, _SPARSE, _SPARSE_CSR, _MKLDNN, _ALWAYS_AFTER) serve
     PyTorch's own layers; a list without them loses only those keysets.
   Thread-local defaults come from the roles: with no DK_R_INCLUDED or
   DK_R_AUTOCAST row both sets are empty and every layer is off until a
   keyset or a guard (dk_guard_include, per thread) switches it on.

   Limits: Note [List limits] (>>enums), checked at compile time.

   Alias keys: X(Name, Set, extra), names of the user's choosing. Set is a
   resolution role, c10's rules under any name:
     BACKEND                 one kernel for every backend without its own
                             (PyTorch's CompositeExplicitAutograd)
     NON_FUNCTIONAL_BACKEND  the same, Functional backends and DK_R_SPARSE
                             rows left out
     MATH                    a kernel for backends, autograd and DK_R_MATH
                             rows; the catch-all (DK_CatchAll) registers here
     AUTOGRAD_ALIAS          every DK_R_AUTOGRAD key
     NESTED, FUNCTORCH_BATCHED   PyTorch's nested and batched layers
   or KEYS(k1, ..., k4): functionality keys of the lists, each on every
   backend when per backend ("Accessibility on every backend"). A KEYS
   alias takes one fallback for all its keys (dk_fallback: one call, one
   handle); kernels go to its runtime keys (dk_impl at it is refused, as it
   is at a second alias of a role: resolution reads the first). Without an
   alias list, PyTorch 1.13.1's five apply with their roles; one that covers
   no runtime key of the lists (Autograd without an autograd row) refuses
   registrations (DK_ERR_BAD_KEY), as does any such alias.

   Handles that are not tensors: a call's keyset comes from its "Tensor"
   arguments only (schemas give no other argument keys). A program passes
   its handle as a Tensor: typed calls read it through DK_DECLARE_OP's
   keyset expression, or dkgen's bindings through DKGEN_TENSOR (the handle
   type) and DKGEN_TENSOR_KEYSET(h); boxed calls through the registry's
   tensor_keyset hook (dkgen_tensor_keyset from the same macros).
   Foreign callers reach the same through the dk_abi_* functions (>>public).
   dk_backend_rename renames only backends whose names begin with
   PrivateUse (c10's rule): name a placeholder backend PrivateUse1.

   Worked example (examples/docrender: docrender.c, compiled as C99 and
   C++ and run by `make test`, example-docrender, which also checks that
   these rows are doc_keys.h's). A document renderer:

    #define DK_FORALL_BACKEND_COMPONENTS(X, extra) \
        X(Raster, 0, Undefined, 0, extra)          \
        X(Vector, 0, Undefined, 0, extra)          \
        X(Text,   0, Undefined, 0, extra)
    #define DK_FORALL_FUNCTIONALITY_KEYS(X, extra)                              \
        X(Render,        1,           , DK_R_BACKEND | DK_R_BACKEND_FN, extra)  \
        X(Cache,         0,           , 0, extra)                               \
        X(Accessibility, 1, Accessible, 0, extra)                               \
        X(Logging,       0,           , 0, extra)                               \
        X(Profile,       0,           , 0, extra)
    #define DK_FORALL_ALIAS_KEYS(X, extra)      \
        X(AnyBackend,    BACKEND, extra)        \
        X(Portable,      MATH, extra)           \
        X(AllAccessible, KEYS(Accessibility), extra)

   gives keys DK_Raster, DK_Vector, DK_Text, DK_Cache, DK_AccessibleRaster...,
   DK_Logging, DK_Profile and the aliases. Then (doc_ops.txt declares
   "doc::render(Tensor d, int width) -> int"; a document is a struct whose
   ks member is its keyset, DKGEN_TENSOR const doc *):

    doc_render_impl(r, DK_Raster, render_raster, NULL, &h);      // own kernels
    doc_render_impl(r, DK_AnyBackend, render_any, NULL, &h);     // Text's
    doc_render_impl(r, DK_Cache, render_cache, NULL, &h);        // a layer kernel
    dk_fallback(r, DK_Cache, dk_fallthrough(), &h);              // other operators
    dk_fallback(r, DK_AllAccessible, dk_boxed(accessible, NULL), &h);
    dk_fallback(r, DK_Logging, dk_boxed(logging, NULL), &h);
    poster.ks = dk_ks_add(dk_ks_from_key(DK_Raster), DK_Accessibility);
    doc_render_call(render_op, &poster, 40);   // AccessibleRaster, then Raster
    g = dk_guard_include(dk_ks_from_key(DK_Logging));   // this thread only
    ... dk_guard_pop(g);

   and a layer kernel goes below itself with
   doc_render_redispatch(op, dk_ks_and(ks, DK_KS_FULL_AFTER(DK_Cache)), ...).
   Messages name this list's keys ("no Portable / AnyBackend kernel or
   backend fallback covers it"). */

#if defined(DK_FORALL_BACKEND_COMPONENTS) != defined(DK_FORALL_FUNCTIONALITY_KEYS)
#error "dispatch.h: define both DK_FORALL_BACKEND_COMPONENTS and DK_FORALL_FUNCTIONALITY_KEYS, or neither"
#endif

/* The presets are one list per kind. A row either belongs to every PyTorch
   version or is wrapped in V1(...) (1.13.1 only), V2(...) (2.7.1 and 2.11),
   V27(...) (2.7.1 only) or V211(...) (2.11 only); a preset keeps its own
   rows with DK__KEEP and drops the others' with DK__DROP, so the rows the
   versions share are written once. */
#define DK__KEEP(row) row
#define DK__DROP(row)

/* 1.13.1: 14 backends, Meta before PrivateUse1..3. 2.7.1: 15, MTIA added,
   Meta moved last so a Meta key wins over every other backend. 2.11: 16,
   MAIA a backend after MTIA; MTIA and MAIA have autograd keys of their own,
   but c10 2.11's getBackendKeySetFromAutograd has no case for AutogradMTIA
   (OwnAutograd 2). c10 2.x prints MTIA and MAIA without "Bit" (Functional 2). */
#define DK__TORCH_BACKEND_COMPONENTS(X, extra, V1, V2, V27, V211) \
    X(CPU,         1, AutocastCPU,         0, extra)       \
    X(CUDA,        1, AutocastCUDA,        0, extra)       \
    X(HIP,         0, Undefined,           0, extra)       \
 V1(X(XLA,         1, AutocastCUDA,        1, extra))      \
 V2(X(XLA,         1, AutocastXLA,         1, extra))      \
 V1(X(MPS,         1, Undefined,           0, extra))      \
 V1(X(IPU,         1, Undefined,           0, extra))      \
 V2(X(MPS,         1, AutocastMPS,         0, extra))      \
 V2(X(IPU,         1, AutocastIPU,         0, extra))      \
    X(XPU,         1, AutocastXPU,         0, extra)       \
 V1(X(HPU,         1, Undefined,           0, extra))      \
 V2(X(HPU,         1, AutocastHPU,         0, extra))      \
    X(VE,          0, Undefined,           0, extra)       \
    X(Lazy,        1, Undefined,           1, extra)       \
 V27(X(MTIA,       0, AutocastMTIA,        2, extra))      \
 V211(X(MTIA,      2, AutocastMTIA,        2, extra))      \
 V211(X(MAIA,      1, AutocastMAIA,        2, extra))      \
 V1(X(Meta,        1, Undefined,           0, extra))      \
 V1(X(PrivateUse1, 1, Undefined,           0, extra))      \
 V2(X(PrivateUse1, 1, AutocastPrivateUse1, 0, extra))      \
    X(PrivateUse2, 1, Undefined,           0, extra)       \
    X(PrivateUse3, 1, Undefined,           0, extra)       \
 V2(X(Meta,        1, Undefined,           0, extra))

/* 1.13.1: 40 functionality keys after Undefined, SparseCsrCPU and
   SparseCsrCUDA plain (non-customizable) backend keys. 2.7.1: 47, 6 of them
   per backend. 2.11: 47, MAIA gone (a backend), AutocastMAIA added.
   Functionalize is in CompositeImplicitAutograd's set (DK_R_MATH) in 2.7.1
   only: its source's math_dispatch_keyset adds it; c10 1.13.1 and 2.11
   answer isIncludedInAlias(Functionalize, CompositeImplicitAutograd) false. */
#define DK__TORCH_FUNCTIONALITY_KEYS(X, extra, V1, V2, V27, V211)                        \
    X(Dense,                          1,             , DK_R_BACKEND|DK_R_BACKEND_FN, extra)    \
    X(FPGA,                           0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
 V1(X(ORT,                            0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra)) \
 V27(X(MAIA,                          0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra)) \
    X(Vulkan,                         0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(Metal,                          0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(Quantized,                      1, Quantized   , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_BACKEND_FN, extra) \
    X(CustomRNGKeyId,                 0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(MkldnnCPU,                      0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_MKLDNN, extra) \
    X(Sparse,                         1, Sparse      , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_BACKEND_FN|DK_R_SPARSE, extra) \
 V1(X(SparseCsrCPU,                   0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_SPARSE_CSR, extra)) \
 V1(X(SparseCsrCUDA,                  0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_SPARSE_CSR, extra)) \
 V2(X(SparseCsr,                      1, SparseCsr   , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_BACKEND_FN|DK_R_SPARSE_CSR, extra)) \
    X(NestedTensor,                   1, NestedTensor, DK_R_NESTED|DK_R_MATH, extra)    \
    X(BackendSelect,                  0,             , DK_R_INCLUDED, extra)            \
    X(Python,                         0,             , DK_R_PYTHON, extra)              \
    X(Fake,                           0,             , 0, extra)                        \
    X(FuncTorchDynamicLayerBackMode,  0,             , 0, extra)                        \
 V1(X(Functionalize,                  0,             , DK_R_FUNCTIONALIZE, extra))      \
 V27(X(Functionalize,                 0,             , DK_R_FUNCTIONALIZE|DK_R_MATH, extra)) \
 V211(X(Functionalize,                0,             , DK_R_FUNCTIONALIZE, extra))      \
    X(Named,                          0,             , 0, extra)                        \
    X(Conjugate,                      0,             , 0, extra)                        \
    X(Negative,                       0,             , 0, extra)                        \
    X(ZeroTensor,                     0,             , 0, extra)                        \
    X(ADInplaceOrView,                0,             , DK_R_INCLUDED|DK_R_INPLACE_VIEW, extra) \
    X(AutogradOther,                  0,             , DK_R_AUTOGRAD|DK_R_AUTOGRAD_OTHER, extra) \
    X(AutogradFunctionality,          1, Autograd    , DK_R_AUTOGRAD, extra)            \
    X(AutogradNestedTensor,           0,             , DK_R_AUTOGRAD|DK_R_NESTED, extra) \
    X(Tracer,                         0,             , 0, extra)                        \
    X(AutocastCPU,                    0,             , DK_R_AUTOCAST, extra)            \
 V2(X(AutocastMTIA,                   0,             , DK_R_AUTOCAST, extra))           \
 V211(X(AutocastMAIA,                 0,             , DK_R_AUTOCAST, extra))           \
    X(AutocastXPU,                    0,             , DK_R_AUTOCAST, extra)            \
 V2(X(AutocastIPU,                    0,             , DK_R_AUTOCAST, extra))           \
 V2(X(AutocastHPU,                    0,             , DK_R_AUTOCAST, extra))           \
 V2(X(AutocastXLA,                    0,             , DK_R_AUTOCAST, extra))           \
 V2(X(AutocastMPS,                    0,             , DK_R_AUTOCAST, extra))           \
    X(AutocastCUDA,                   0,             , DK_R_AUTOCAST, extra)            \
 V2(X(AutocastPrivateUse1,            0,             , DK_R_AUTOCAST, extra))           \
    X(FuncTorchBatched,               0,             , DK_R_FUNCTORCH|DK_R_BATCHED, extra) \
 V2(X(BatchedNestedTensor,            0,             , 0, extra))                       \
    X(FuncTorchVmapMode,              0,             , DK_R_FUNCTORCH, extra)           \
    X(Batched,                        0,             , DK_R_FUNCTORCH, extra)           \
    X(VmapMode,                       0,             , DK_R_FUNCTORCH, extra)           \
    X(FuncTorchGradWrapper,           0,             , DK_R_FUNCTORCH, extra)           \
    X(DeferredInit,                   0,             , 0, extra)                        \
    X(PythonTLSSnapshot,              0,             , DK_R_PYTHON, extra)              \
    X(FuncTorchDynamicLayerFrontMode, 0,             , 0, extra)                        \
    X(TESTING_ONLY_GenericWrapper,    0,             , 0, extra)                        \
    X(TESTING_ONLY_GenericMode,       0,             , 0, extra)                        \
 V2(X(PreDispatch,                    0,             , 0, extra))                       \
    X(PythonDispatcher,               0,             , DK_R_ALWAYS_AFTER, extra)

/* The alias keys; the rows of both versions are also the default for a
   user configuration that leaves the alias list out: c10's aliases are
   defined through roles, so they fit any list of functionality keys. */
#define DK__TORCH_ALIAS_KEYS(X, extra, V1, V2, V27, V211)               \
    X(Autograd,                               AUTOGRAD_ALIAS, extra)    \
    X(CompositeImplicitAutograd,              MATH, extra)              \
 V2(X(FuncTorchBatchedDecomposition,          FUNCTORCH_BATCHED, extra)) \
    X(CompositeImplicitAutogradNestedTensor,  NESTED, extra)            \
    X(CompositeExplicitAutograd,              BACKEND, extra)           \
    X(CompositeExplicitAutogradNonFunctional, NON_FUNCTIONAL_BACKEND, extra)

#if !defined(DK_FORALL_BACKEND_COMPONENTS) && defined(DK_PRESET_TORCH_1_13_1) && defined(DK_PRESET_TORCH_2_11)
#error "dispatch.h: define one of DK_PRESET_TORCH_1_13_1 and DK_PRESET_TORCH_2_11, not both"
#elif !defined(DK_FORALL_BACKEND_COMPONENTS) && defined(DK_PRESET_TORCH_1_13_1)
#define DK_C10_VERSION 11301
#define DK__TORCH_ROWS DK__KEEP, DK__DROP, DK__DROP, DK__DROP
#elif !defined(DK_FORALL_BACKEND_COMPONENTS) && defined(DK_PRESET_TORCH_2_11)
#define DK_C10_VERSION 21100
#define DK__TORCH_ROWS DK__DROP, DK__KEEP, DK__DROP, DK__KEEP
#elif !defined(DK_FORALL_BACKEND_COMPONENTS)
#define DK_C10_VERSION 20701 /* the default */
#define DK__TORCH_ROWS DK__DROP, DK__KEEP, DK__KEEP, DK__DROP
#endif
#ifdef DK__TORCH_ROWS /* a preset: its rows (one helper per list: the lists nest) */
#define DK__TORCH_BC(args) DK__TORCH_BACKEND_COMPONENTS args
#define DK__TORCH_FK(args) DK__TORCH_FUNCTIONALITY_KEYS args
#define DK__TORCH_AK(args) DK__TORCH_ALIAS_KEYS args
#define DK_FORALL_BACKEND_COMPONENTS(X, extra) DK__TORCH_BC((X, extra, DK__TORCH_ROWS))
#define DK_FORALL_FUNCTIONALITY_KEYS(X, extra) DK__TORCH_FK((X, extra, DK__TORCH_ROWS))
#define DK_FORALL_ALIAS_KEYS(X, extra)         DK__TORCH_AK((X, extra, DK__TORCH_ROWS))
#endif

#ifndef DK_C10_VERSION
#define DK_C10_VERSION 0 /* user lists: c10 2.7.1 behaviour */
#endif

#ifndef DK_FORALL_ALIAS_KEYS
#define DK_FORALL_ALIAS_KEYS(X, extra) DK__TORCH_ALIAS_KEYS(X, extra, DK__DROP, DK__DROP, DK__DROP, DK__DROP)
#endif

/* >>enums -------------------------------------------------------------------

   Note [Key numbering]. The numbering is c10's, so that every key has the
   value c10 gives it and names, dumps and conformance vectors line up:
     0                          Undefined
     1 .. F-1                   functionality keys, list order
     F                          EndOfFunctionalityKeys
     then per per-backend functionality P, in list order:
       StartOf<P>Backends       (stands for InvalidBit: key - start = backend)
       <Prefix><Backend> ...    one per backend, EndOf<P>Backends = the last
     then the alias keys; StartOfAliasKeys / EndOfAliasKeys name the ends.
*/

/* Note [List limits]. What the lists may hold, checked by the preprocessor
   so that under every standard (C99 included) a list past a limit gets one
   message that names the limit and the fix, then a fatal stop (no
   follow-on errors). B backend rows, N functionality rows, P of them per
   backend, A alias rows:
     1 <= B <= 16            backend masks and the slot tables are 16 wide
     B + N <= 64             one keyset bit per backend and per functionality
     PerBackend is 0 or 1    the column selects rows by token pasting
   Every table is wide enough for every list within them: there are
   N + 2 + P * (B + 1) + A key values (at most 866 + A: dk_key and uint16_t
   tables), 1 + N + P * (B - 1) runtime slots (at most 769), and an
   operator's table stays below 32 KB (the static assertions below restate
   what the limits imply).
   tests/limits/limits.sh builds lists at each limit and one past it. The
   presets' lists are within them (their units skip the four #if, each of
   which expands the lists: what that costs, docs/bench.md). */
#ifndef DK__TORCH_ROWS
#define DK__PP_ROW_BC(name, own_ag, autocast, functional, extra) + 1
#define DK__PP_ROW_FK(name, pb, prefix, roles, extra) + 1
#define DK__PP_BAD_PB(name, pb, prefix, roles, extra) + ((pb) != 0 && (pb) != 1)
#if (0 DK_FORALL_BACKEND_COMPONENTS(DK__PP_ROW_BC, ~)) < 1
#error "dispatch.h: limit: at least 1 backend component; add a row to DK_FORALL_BACKEND_COMPONENTS"
#define DK__LIST_LIMIT_FAILED
#endif
#if (0 DK_FORALL_BACKEND_COMPONENTS(DK__PP_ROW_BC, ~)) > 16
#error "dispatch.h: limit: at most 16 backend components (DK_FORALL_BACKEND_COMPONENTS has more); remove rows, or serve several devices with one component"
#define DK__LIST_LIMIT_FAILED
#endif
#if (0 DK_FORALL_FUNCTIONALITY_KEYS(DK__PP_BAD_PB, ~)) != 0
#error "dispatch.h: limit: the PerBackend column of DK_FORALL_FUNCTIONALITY_KEYS is 0 or 1 (a literal); fix the rows that have another value"
#define DK__LIST_LIMIT_FAILED
#endif
#if (0 DK_FORALL_BACKEND_COMPONENTS(DK__PP_ROW_BC, ~) DK_FORALL_FUNCTIONALITY_KEYS(DK__PP_ROW_FK, ~)) > 64
#error "dispatch.h: limit: backend components + functionality keys <= 64 (one keyset bit each; the lists have more); remove functionality rows or backend components"
#define DK__LIST_LIMIT_FAILED
#endif
#ifdef DK__LIST_LIMIT_FAILED /* a fatal error: stop here, before the tables give follow-on errors */
#include "dispatch.h: compilation stopped at the list limit reported above"
#endif
#undef DK__PP_ROW_BC
#undef DK__PP_ROW_FK
#undef DK__PP_BAD_PB
#endif /* !DK__TORCH_ROWS */

/* Backend components: InvalidBit = 0, then DK_<Name>Bit in list order. */
#define DK__BC_ENUM(name, own_ag, autocast, functional, extra) DK_##name##Bit,
typedef enum dk_backend {
    DK_InvalidBit = 0,
    DK_FORALL_BACKEND_COMPONENTS(DK__BC_ENUM, ~)
    DK__BACKEND_END,
    DK_EndOfBackendKeys = DK__BACKEND_END - 1
} dk_backend;
#undef DK__BC_ENUM

/* Row selection by the PerBackend column: DK__PER_BACKEND_##pb(...). */
#define DK__PER_BACKEND_0(...)
#define DK__PER_BACKEND_1(...) __VA_ARGS__
#define DK__NOT_PER_BACKEND_0(...) __VA_ARGS__
#define DK__NOT_PER_BACKEND_1(...)

enum {
    DK_NUM_BACKENDS = DK__BACKEND_END - 1
};

/* Runtime keys of one per-backend functionality: DK_<prefix><backend>. The
   row's block is a macro of its own, chosen by PerBackend, so that the
   backend list is expanded once, where the block is emitted (passed through
   DK__PER_BACKEND_1's arguments it was expanded there and rescanned again,
   in every unit). */
#define DK__RT_KEY(name, own_ag, autocast, functional, prefix) DK_##prefix##name,
#define DK__FK_BLOCK(name, pb, prefix, roles, extra) DK__FK_BLOCK_##pb(name, prefix)
#define DK__FK_BLOCK_0(name, prefix)
#define DK__FK_BLOCK_1(name, prefix)                                       \
    DK_StartOf##name##Backends, DK_FORALL_BACKEND_COMPONENTS(DK__RT_KEY, prefix) \
    DK_EndOf##name##Backends = DK_StartOf##name##Backends + DK_NUM_BACKENDS,
#define DK__FK_ENUM(name, pb, prefix, roles, extra) DK_##name,
#define DK__ALIAS_ENUM(name, set, extra) DK_##name,
typedef enum dk_key {
    DK_Undefined = 0,
    DK_CatchAll = DK_Undefined,  /* dk_impl's catch-all key (c10's CatchAll) */
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_ENUM, ~)
    DK_EndOfFunctionalityKeys,
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_BLOCK, ~)
    DK__AFTER_RUNTIME_KEYS,
    DK_EndOfRuntimeBackendKeys = DK__AFTER_RUNTIME_KEYS - 1,
    DK__ALIAS_BEFORE = DK_EndOfRuntimeBackendKeys,
    DK_FORALL_ALIAS_KEYS(DK__ALIAS_ENUM, ~)
    DK__AFTER_ALIAS_KEYS,
    DK_StartOfAliasKeys = DK_EndOfRuntimeBackendKeys + 1,
    DK_EndOfAliasKeys = DK__AFTER_ALIAS_KEYS - 1
} dk_key;
#undef DK__RT_KEY
#undef DK__FK_BLOCK
#undef DK__FK_BLOCK_0
#undef DK__FK_BLOCK_1
#undef DK__FK_ENUM
#undef DK__ALIAS_ENUM

/* Runtime slots, LuaJIT-style running totals: DK__SLOT_<F> is the first slot
   of functionality F, one slot per backend when F is per-backend. Slot 0 is
   Undefined's. See Note [Runtime slots]. The enum (DK__SLOT_NUMBERS) goes
   with the tables' definitions (Note [Tables in one unit]): no declaration
   names a slot of its own, and the count is c10's formula, which the
   implementation checks against the running total. */
#define DK__FK_SLOT(name, pb, prefix, roles, extra) \
    DK__SLOT_##name, DK__SLOT_##name##_LAST = DK__SLOT_##name + (pb ? DK_NUM_BACKENDS : 1) - 1,
#define DK__SLOT_NUMBERS enum { DK__SLOT_Undefined = 0, DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_SLOT, ~) DK__SLOT_END };

enum {
    /* counted from the key values (a block of StartOf and one key per
       backend for each per-backend functionality; the implementation
       checks the counts against the lists) */
    DK_NUM_PER_BACKEND_FUNCTIONALITIES = (DK__AFTER_RUNTIME_KEYS - DK_EndOfFunctionalityKeys - 1) / (DK_NUM_BACKENDS + 1),
    DK_NUM_ALIAS_KEYS = DK__AFTER_ALIAS_KEYS - DK_StartOfAliasKeys,
    /* runtime slots (c10's num_runtime_entries) */
    DK_NUM_SLOTS = DK_EndOfFunctionalityKeys + DK_NUM_PER_BACKEND_FUNCTIONALITIES * (DK_NUM_BACKENDS - 1),
    /* functionality keys, counting Undefined (c10's num_functionality_keys) */
    DK_NUM_FUNCTIONALITY_KEYS = DK_EndOfFunctionalityKeys,
    /* every value 0 .. EndOfAliasKeys, markers included */
    DK_NUM_KEYS = DK_EndOfAliasKeys + 1,
    /* keyset bits in use: FULL = (1 << DK_NUM_KEYSET_BITS) - 1 */
    DK_NUM_KEYSET_BITS = DK_NUM_BACKENDS + DK_NUM_FUNCTIONALITY_KEYS - 1
};

DK_STATIC_ASSERT(DK_NUM_BACKENDS >= 1, "at least one backend component");
DK_STATIC_ASSERT(DK_NUM_BACKENDS <= 16, "backend masks are 16 bits wide");
DK_STATIC_ASSERT(DK_NUM_KEYSET_BITS <= 64, "backend + functionality bits must fit in 64");
DK_STATIC_ASSERT(DK_NUM_SLOTS < 65536, "slot offsets are 16 bits wide");

/* >>public ==================================================================

   THE API: every public function, macro and type a program uses. The
   types first (and the macros they expand), then one part per task; each
   declaration has a one-line comment, or points at its Note. Its full
   contract is the comment above its definition: in >>private for an inline
   function (a macro: above what it expands to), in the implementation for
   the others. tools/one-line-api.txt holds the one-liners and
   tools/one-line-api.py puts them here (make structure checks). */

/* --- Types: the values every part below passes (manual BASIC USE) --------- */

/* Role flags of functionality rows (Note [Roles]): one list makes enum dk_role and checks the hash's DK_R_*. */
#define DK__FORALL_ROLES(X)                                                                      \
    X(BACKEND,         0) /* backend key: CompositeExplicitAutograd covers it */                 \
    X(OTHER_BACKEND,   1) /* backend whose autograd layer is AutogradOther */                    \
    X(BACKEND_FN,      2) /* backend functionality (highestPriorityBackendTypeId) */             \
    X(SPARSE,          3) /* outside CompositeExplicitAutogradNonFunctional */                   \
    X(AUTOGRAD,        4) /* autograd layer */                                                   \
    X(MATH,            5) /* CompositeImplicitAutograd covers it (besides backends, autograd) */ \
    X(NESTED,          6) /* CompositeImplicitAutogradNestedTensor covers it */                  \
    X(AUTOCAST,        7) /* autocast layer: excluded by default */                              \
    X(INCLUDED,        8) /* included by default in thread-local state */                        \
    X(PYTHON,          9) /* python layer */                                                     \
    X(FUNCTORCH,      10) /* functorch transform */                                              \
    X(BATCHED,        11) /* FuncTorchBatchedDecomposition covers it */                          \
    X(AUTOGRAD_OTHER, 12) /* the autograd key of backends without their own */                   \
    X(INPLACE_VIEW,   13) /* ADInplaceOrView */                                                  \
    X(FUNCTIONALIZE,  14) /* Functionalize */                                                    \
    X(ALWAYS_AFTER,   15) /* kept in every "after X" keyset (PythonDispatcher) */                \
    X(SPARSE_CSR,     16) /* sparse compressed layouts (c10 sparse_csr_ks) */                    \
    X(MKLDNN,         17) /* MKL-DNN tensors (c10 mkldnn_ks) */
enum dk_role {
#define DK__ROLE_ENUMERATOR(name, bit) DK_R_##name = 1 << (bit),
    DK__FORALL_ROLES(DK__ROLE_ENUMERATOR)
#undef DK__ROLE_ENUMERATOR
    DK__ROLE_END /* not a role */
};

/* A set of dispatch keys: backend bits low, functionality bits above. */
typedef struct dk_keyset { uint64_t repr; } dk_keyset;

/* A functionality's first slot and backend mask (Note [Runtime slots]). */
typedef struct dk_offset_mask { uint16_t offset; uint16_t mask; } dk_offset_mask;

/* Every status a function returns: X(NAME, description); dk_status_message gives the description. */
#define DK_FORALL_STATUS(X)                                                     \
    X(OK,                "ok")                                                  \
    X(ERR_NULL,          "a required pointer argument is NULL")                 \
    X(ERR_UNKNOWN_KEY,   "no dispatch key or backend component has that name")  \
    X(ERR_UNKNOWN_TAG,   "no operator tag or alias-analysis kind has that name") \
    X(ERR_ALREADY_NAMED, "the backend component already has another name")     \
    X(ERR_BAD_KEY,       "the value is not a valid key for this use")           \
    X(ERR_CONFIG_MISMATCH, "translation units were compiled in different configurations") \
    X(ERR_NO_MEMORY,     "out of memory")                                       \
    X(ERR_BAD_ARGUMENT,  "an argument is out of range")                         \
    X(ERR_BAD_NAME,      "the name is malformed or too long for what it names")  \
    X(ERR_BAD_KERNEL,    "the kernel description is not valid here")            \
    X(ERR_BAD_HANDLE,    "the handle is not a live registration")               \
    X(ERR_DUPLICATE_DEF, "the operator is already defined")                     \
    X(ERR_DUPLICATE_LIBRARY, "the namespace already has a DK_LIBRARY block")     \
    X(ERR_DUPLICATE_FALLBACK, "the key already has a backend fallback")         \
    X(ERR_WRONG_BLOCK,   "not allowed in this kind of library block")           \
    X(ERR_NAMESPACE_MISMATCH, "the name's namespace is not the block's")        \
    X(ERR_KEY_MISMATCH,  "the key is not the block's")                          \
    X(ERR_NOT_FOUND,     "what was asked for does not exist")                   \
    X(ERR_NO_KERNEL,     "no kernel for this call")                             \
    X(ERR_FALLTHROUGH_CALLED, "a fallthrough kernel was executed")              \
    X(ERR_AMBIGUOUS_AUTOGRAD_OTHER, "the AutogradOther slot is ambiguous")      \
    X(ERR_NO_ADAPTER,    "the operator has no boxing adapters")                 \
    X(ERR_WRONG_SIGNATURE, "the operator was registered with another C signature") \
    X(ERR_BAD_SCHEMA,    "malformed function schema")                      \
    X(ERR_REENTRANT,     "a registration from a listener or the logger of the same registry") \
    X(ERR_IN_CALL,       "must not be called from inside a call (a kernel or hook)") \
    X(ERR_BAD_STACK,     "the boxed stack does not match the operator's schema") \
    X(ERR_KERNEL_FAILED, "a kernel failed the call")                             \
    X(ERR_DESTROYED,     "the registry was destroyed")

#define DK__STATUS_ENUM(name, text) DK_##name,

/* DK_OK, or DK_ERR_* (DK_FORALL_STATUS). */
typedef enum dk_status { DK_FORALL_STATUS(DK__STATUS_ENUM) DK__STATUS_END } dk_status;

/* What has no caller to return to goes to the logger, one item a message: X(ITEM, level, meaning). */
#define DK_FORALL_LOG_ITEMS(X)                                                                         \
    X(KERNEL_OVERRIDDEN,    WARNING, "a kernel replaced an earlier one of the same operator and key")   \
    X(LIBRARY_BLOCK_FAILED, ERROR,   "a registration inside a library block failed (it has no caller " \
                                     "to return a status to)")                                          \
    X(CALL_ABORTED,         PANIC,   "a call failed under dk_call_error_abort; abort() follows")          \
    X(CALL_EPOCHS_FAILED,   PANIC,   "a thread cannot take part in call epochs safely (out of memory "    \
                                     "attaching it, no thread-exit destructor, membarrier failing, calls " \
                                     "nested too deep); abort() follows")                                  \
    X(RETIRED_MEMORY,       WARNING, "retired memory passed dk_registry_desc.retired_warn_bytes: threads " \
                                     "that do not pass quiescent points hold it (once per registry)")          \
    X(DEBUG_CHECK_FAILED,   PANIC,   "a debug check failed: published state read outside a read section "   \
                                     "(DK_DEBUG_READS), or a call from a thread that never declared itself "  \
                                     "(DK_DEBUG_THREADS); abort() follows")                                    \
    X(UNLOAD_WAITING,       WARNING, "a library block's destructor (inside dlclose) has waited about a "   \
                                     "second for a thread that may run its kernels; it keeps waiting (once " \
                                     "per unload; unload in two steps: dk_library_unload, then dlclose)")

/* How bad a log item is: PANIC (abort follows), ERROR, WARNING. */
typedef enum dk_log_level { DK_LOG_PANIC, DK_LOG_ERROR, DK_LOG_WARNING } dk_log_level;

#define DK__LOG_ITEM_ENUM(item, level, text) DK_LOG_##item,

/* DK_LOG_<ITEM> of DK_FORALL_LOG_ITEMS; dk_log_item_name names it. */
typedef enum dk_log_item { DK_FORALL_LOG_ITEMS(DK__LOG_ITEM_ENUM) DK__LOG_ITEM_END } dk_log_item;

/* sokol's shape: a function and its user data, passed together. */
typedef void (*dk_log_fn)(dk_log_level level, dk_log_item item, const char *message, void *user_data);

/* A logger and its user data (dk_registry_desc.logger; func NULL: dk_log_stderr). */
typedef struct dk_logger { dk_log_fn func; void *user_data; } dk_logger;

/* The configuration as text (lists, reclamation mode, DK_C10_VERSION, threads): units in another one are refused. */
#define DK_CONFIG_SIGNATURE                                                                                 \
    DK__XSTR(DK_FORALL_BACKEND_COMPONENTS(DK__SIG_BC, ~) DK_FORALL_FUNCTIONALITY_KEYS(DK__SIG_FK, ~)         \
             DK_FORALL_ALIAS_KEYS(DK__SIG_ALIAS, ~))                                                         \
    " reclamation " DK__SIG_MODE "; DK_EXPLAIN_MAX_ARGS " DK__XSTR(DK_EXPLAIN_MAX_ARGS) "; DK_C10_VERSION "  \
    DK__XSTR(DK_C10_VERSION) "; " DK__SIG_THREADS

/* Argument keysets a dk_explanation holds (CONFIGURATION). */
#ifndef DK_EXPLAIN_MAX_ARGS
#define DK_EXPLAIN_MAX_ARGS 16
#endif

/* Handles (declared first: boxed kernels name them): dk_operator, dk_kernel read, never written; the rest opaque. */
typedef struct dk_registry dk_registry;

typedef struct dk_operator dk_operator;

typedef struct dk_kernel dk_kernel;

/* A registration's handle: dk_deregister undoes exactly it. */
typedef struct dk_registration dk_registration;

/* An open library block (dk_library_open, a DK_LIBRARY block). */
typedef struct dk_library dk_library;

/* Any unboxed kernel: stored as dk_fn, cast back to its real type to call. */
typedef void (*dk_fn)(void);

/* What a boxed value holds: X(TAG, name in messages); new tags go last (C ABI); COMPLEX: ComplexDouble. */
#define DK_FORALL_VALUE_TAGS(X)                                                                  \
    X(NONE, "none") X(BOOL, "bool") X(INT, "int") X(DOUBLE, "float") X(STRING, "string")          \
    X(TENSOR, "tensor") X(LIST, "list") X(INT_LIST, "int list") X(DOUBLE_LIST, "float list")      \
    X(OBJECT, "object") X(COMPLEX, "complex")

#define DK__VALUE_TAG_ENUM(tag, name) DK_VALUE_##tag,

/* DK_VALUE_<TAG> of DK_FORALL_VALUE_TAGS. */
typedef enum dk_value_tag { DK_FORALL_VALUE_TAGS(DK__VALUE_TAG_ENUM) } dk_value_tag;

/* A complex double (c10::complex<double>): a schema's "complex", defaults ("1j", "1.+2.j") too; gen/'s C type. */
typedef struct dk_complex { double re, im; } dk_complex;

/* A boxed value: a tag and what it holds (strings, lists and tensors are the caller's, never copied). */
typedef struct dk_value {
    dk_value_tag tag;
    union {
        int b;
        int64_t i;
        double d;
        const char *s;
        void *tensor;
        struct { const struct dk_value *items; size_t n; } list;  /* Tensor[], Tensor?[]: tensors and nones */
        struct { const int64_t *items; size_t n; } ints;          /* int[] */
        struct { const double *items; size_t n; } doubles;        /* float[] */
        void *object;
        dk_complex c;                                             /* complex */
    } as;
} dk_value;

/* Lists as typed arguments: the caller's arrays, never copied. */
typedef struct dk_value_list { const dk_value *items; size_t n; } dk_value_list;
typedef struct dk_int_list { const int64_t *items; size_t n; } dk_int_list;
typedef struct dk_double_list { const double *items; size_t n; } dk_double_list;

/* A boxed stack over caller-owned storage; a typed call without adapters passes its pack in unboxed_args. */
typedef struct dk_stack {
    dk_value *values;         /* caller-owned storage */
    size_t size, capacity;
    /* a typed call without boxing adapters passes its argument pack here */
    void *unboxed_args;
} dk_stack;

/* A boxed kernel or backend fallback: the operator (one fallback serves every one), the keyset, the stack. */
typedef void (*dk_boxed_fn)(const dk_kernel *kernel, const dk_operator *op, dk_keyset ks, dk_stack *stack);

/* gen/'s boxing of a C signature: box a typed call's pack, unbox_result its returns, call_unboxed a kernel (of the def's schema only: dk_op_set_adapters). */
typedef struct dk_op_adapters {
    const char *signature;    /* the C signature in schema words, e.g. "(Tensor) (Tensor, Tensor, float)" */
    int num_arguments, num_returns;
    void (*box)(const void *args, dk_stack *stack);
    void (*unbox_result)(dk_stack *stack, void *result);
    void (*call_unboxed)(const dk_kernel *kernel, const dk_operator *op, dk_keyset ks, dk_stack *stack);
} dk_op_adapters;

/* Operator tags, c10's at::Tag (PyTorch 2.7.1, sorted by name): a def's set, read by passes, not dispatch. */
#define DK_FORALL_TAGS(X)          \
    X(core)                        \
    X(data_dependent_output)       \
    X(dynamic_output_shape)        \
    X(flexible_layout)             \
    X(generated)                   \
    X(inplace_view)                \
    X(maybe_aliasing_or_mutating)  \
    X(needs_fixed_stride_order)    \
    X(nondeterministic_bitwise)    \
    X(nondeterministic_seeded)     \
    X(pointwise)                   \
    X(pt2_compliant_tag)           \
    X(view_copy)

#define DK__TAG_ENUM(name) DK_TAG_##name,

/* DK_TAG_<name> of DK_FORALL_TAGS; DK_NUM_TAGS of them. */
typedef enum dk_tag { DK_FORALL_TAGS(DK__TAG_ENUM) DK_NUM_TAGS } dk_tag;

/* c10's AliasAnalysisKind: what the JIT may assume of aliasing; FROM_SCHEMA (0) by default. */
#define DK_FORALL_ALIAS_ANALYSIS(X) \
    X(FROM_SCHEMA)                  \
    X(CONSERVATIVE)                 \
    X(PURE_FUNCTION)                \
    X(INTERNAL_SPECIAL_CASE)

#define DK__AA_ENUM(name) DK_ALIAS_ANALYSIS_##name,

/* DK_ALIAS_ANALYSIS_<kind> of DK_FORALL_ALIAS_ANALYSIS. */
typedef enum dk_alias_analysis { DK_FORALL_ALIAS_ANALYSIS(DK__AA_ENUM) DK__ALIAS_ANALYSIS_END } dk_alias_analysis;

/* What a kernel record is: a function, a fallthrough, c10's ambiguity sentinel, or missing. */
typedef enum dk_kernel_kind {
    DK_KERNEL_FUNCTION = 0,   /* a real kernel (unboxed, boxed or both) */
    DK_KERNEL_FALLTHROUGH,    /* skip this key: masked out of the keyset */
    DK_KERNEL_AMBIGUOUS,      /* c10's ambiguous_autogradother sentinel */
    DK_KERNEL_MISSING         /* no kernel: calling it reports an error */
} dk_kernel_kind;

/* An immutable kernel record; dispatch tables point at these. */
struct dk_kernel {
    dk_fn fn;                 /* unboxed entry point, or NULL */
    dk_boxed_fn boxed;        /* boxed entry point, or NULL */
    void *user_data;          /* given at registration (a missing record's: the library's own) */
    const char *debug;        /* "registered at file:line" */
    dk_key key;               /* the key it was registered for (alias keys too) */
    dk_kernel_kind kind;
    int is_fallback;          /* 1: a backend fallback */
    /* the kernel's C type when registered through a typed helper: DK_KERNEL's
       "float(const dk_kernel *, dk_keyset, tensor)", or gen/'s <op>_impl's in
       schema words, "(Tensor) (Tensor)"; else NULL. dump_state prints it where
       c10 prints the inferred schema; registration compares it (dk_impl's contract, above dk__impl). */
    const char *signature;
};

/* What to register: made by dk_unboxed, dk_boxed, dk_fallthrough or DK_KERNEL; name, signature optional. */
typedef struct dk_kernel_desc {
    dk_fn fn;
    dk_boxed_fn boxed;
    void *user_data;
    int fallthrough;
    const char *name;
    const char *signature;
} dk_kernel_desc;

/* Why a slot holds its kernel: c10's words (computeDispatchTableEntryWithDebug), their dk_source. */
#define DK_FORALL_SOURCE_DETAILS(X)                                              \
    X(KERNEL,         "kernel",                  DK_SOURCE_KERNEL)          \
    X(NON_FUNCTIONAL, "default backend kernel",  DK_SOURCE_DEFAULT_BACKEND) \
    X(BACKEND,        "default backend kernel",  DK_SOURCE_DEFAULT_BACKEND) \
    X(NESTED,         "nested kernel",           DK_SOURCE_MATH)            \
    X(MATH,           "math kernel",             DK_SOURCE_MATH)            \
    X(AMBIGUOUS,      "ambiguous autogradother", DK_SOURCE_AMBIGUOUS)       \
    X(AUTOGRAD,       "autograd kernel",         DK_SOURCE_AUTOGRAD)        \
    X(BATCHED,        "batched kernel",          DK_SOURCE_BATCHED)         \
    X(FALLBACK,       "backend fallback",        DK_SOURCE_FALLBACK)        \
    X(MISSING,        "missing",                 DK_SOURCE_MISSING)

#define DK__REASON_ENUM(name, text, source) DK_SOURCE_DETAIL_##name,

/* DK_SOURCE_DETAIL_<name> of DK_FORALL_SOURCE_DETAILS. */
typedef enum dk_source_detail { DK_FORALL_SOURCE_DETAILS(DK__REASON_ENUM) DK__REASON_END } dk_source_detail;

/* One slot: the kernel record and its fn (NULL: the call takes the slow path); dk_op_table_entry. */
typedef struct dk_table_entry {
    dk_fn fn;
    const dk_kernel *kernel;  /* never NULL */
} dk_table_entry;

/* Backend b's row: its fallthrough mask and its first per-backend slot, 32 aligned bytes. */
typedef struct dk_backend_row {
    uint64_t nonfallthrough;  /* keys whose slot is not a fallthrough, for c10 getBackendIndex() == b */
    dk_table_entry first;
    /* 32 bytes with 64- and 32-bit pointers: rows in aligned halves of cache
       lines; the bytes left hold the table's slot reasons (the implementation's dk__reason_at) */
    uint8_t spare[32 - sizeof(uint64_t) - sizeof(dk_table_entry)];
} dk_backend_row;

/* Slots in the rows: the first per-backend functionality's, one per
   backend (none when the lists have no per-backend functionality). Its
   first slot is its key value (every row before it has one slot, as
   Undefined, slot 0 and key 0, has): the implementation checks it. */
#define DK__FIRST_PB_KEY_OF(name, pb, prefix, roles, extra) pb ? DK_##name :

enum {
    DK__ROW_SLOTS = DK_NUM_PER_BACKEND_FUNCTIONALITIES > 0 ? DK_NUM_BACKENDS : 0,
    DK__ROW_FIRST_SLOT = DK_FORALL_FUNCTIONALITY_KEYS(DK__FIRST_PB_KEY_OF, ~) 0
};

/* Bytes of slot reasons (4 bits a slot) beyond the rows' spare bytes. */
#define DK__ROW_SPARE ((int)(32 - sizeof(uint64_t) - sizeof(dk_table_entry)))

#define DK__REASON_REST ((DK_NUM_SLOTS + 1) / 2 - DK_NUM_BACKENDS * DK__ROW_SPARE)

/* What a def says: parsed schema, defaults, adapters, tags, alias analysis; immutable but for adapters. */
typedef struct dk_op_def_info {
    uint64_t tags;                /* first: with 32-bit pointers, no padding (a def's record keeps this in a kernel's bytes) */
    const struct dk_schema *parsed;
    const dk_value *defaults;
    const dk_op_adapters *adapters;
    dk_alias_analysis alias_analysis;
} dk_op_def_info;

/* What a call reads of an operator: one immutable snapshot (table, masks, def), one release store. */
typedef struct dk_op_table {
    dk_backend_row rows[DK_NUM_BACKENDS];
    /* every other slot, in slot order; a slot left to a boxed backend
       fallback holds the registry's missing record of that slot, which
       calls and dk_op_slot_kernel resolve (Note [Resolution]) */
    dk_table_entry entries[DK_NUM_SLOTS - DK__ROW_SLOTS];
    /* what the def says, or NULL without one: a record in the def's
       registration, which lives as long as any snapshot pointing at it */
    const dk_op_def_info *def;
    /* the dk_source_detail of each slot, 4 bits each: in the rows' spare bytes,
       then here when they do not hold them all (the implementation's dk__reason_at) */
    uint8_t reasons_rest[DK__REASON_REST > 0 ? DK__REASON_REST : 1];
} dk_op_table;

/* An operator: a stable pointer with a dense id, valid while it has a def or a kernel (WHAT A PROGRAM DOES). */
struct dk_operator {
    const dk_op_table *table;  /* the current snapshot: read with dk_op_table_of() */
    const char *name;          /* "ns::name" or "ns::name.overload" */
    uint32_t id;               /* dense: the lowest id no live operator uses */
    dk_registry *registry;
};

/* A registry's memory functions, logger, tensor keyset hook and choices; zero-initialise, set what you need. */
typedef struct dk_registry_desc {
    /* Both or neither (NULL: malloc and free). alloc returns a pointer
       aligned for a pointer, a double and a uint64_t (8 bytes on the usual
       targets: an arena's pointers do), or NULL; one aligned as malloc's
       (16 bytes on x86-64 and AArch64) costs nothing more, a block of one
       aligned less is allocated again with 15 bytes more.
       dk_registry_create answers DK_ERR_BAD_ARGUMENT when the registry's
       own pointer is aligned less than that. */
    void *(*alloc)(size_t size, void *user_data);
    void (*free)(void *ptr, void *user_data);
    void *alloc_user_data;
    /* warnings and errors that have no caller to return to (DK_FORALL_LOG_ITEMS);
       func NULL: dk_log_stderr */
    dk_logger logger;
    /* The keyset of a tensor handle on a boxed stack (dk_call_boxed). */
    dk_keyset (*tensor_keyset)(const void *tensor, void *user_data);
    void *tensor_keyset_user_data;
    /* A new registry registers a fallthrough fallback for every key that
       thread-local state includes by default (BackendSelect,
       ADInplaceOrView), as libtorch does at load: such a key then only acts
       for operators that register a kernel for it. 1 = start empty. */
    int no_default_fallthroughs;
    /* 1: c10's words, as the preset's c10 writes them: a call without a
       kernel reports c10's message word for word (the conformance tests
       compare it), an executed fallthrough or AutogradOther ambiguity
       begins with c10's internal-assert line, and the override warning
       follows c10 (1.13.1: every time; 2.x: once per process for all
       operators, never for Meta, in 2.11 nor MTIA); 0: a shorter message
       that says what is registered and the likely cause, and a warning
       at every override. */
    int c10_messages;
    /* The logger warns once (DK_LOG_RETIRED_MEMORY) when the memory that
       waits for quiescent points passes this many bytes. 0: 64 MiB;
       SIZE_MAX: never. */
    size_t retired_warn_bytes;
} dk_registry_desc;

/* Statistics: bytes held through desc.alloc, the bytes waiting for quiescent points, the threads they wait for. */
enum { DK_STATS_MAX_THREADS = 8 };

/* What dk_registry_read_stats fills. */
typedef struct dk_registry_stats {
    size_t live_bytes, retired_bytes, operators;
    size_t retired_blocks;          /* retired allocations not yet freed */
    unsigned threads;               /* threads taking part now (tracked / inside call epochs) */
    unsigned threads_waited_for;    /* of those, the ones the oldest retired memory waits for */
    unsigned waited_for[DK_STATS_MAX_THREADS];   /* their dk_thread_id()s (the first ones) */
} dk_registry_stats;

/* A def's options besides its schema (torch.library's def): adapters, alias analysis, tags; zero: none, FROM_SCHEMA. */
typedef struct dk_def_options {
    const dk_op_adapters *adapters;     /* boxing adapters (gen/'s), or NULL */
    dk_alias_analysis alias_analysis;   /* DK_ALIAS_ANALYSIS_*, 0 = FROM_SCHEMA */
    const dk_tag *tags;                 /* num_tags tags (repeats allowed), or NULL */
    size_t num_tags;
} dk_def_options;

/* Listener: told when an operator gets its def and when its last def goes; adding one replays on_registered. */
typedef void (*dk_op_listener)(const dk_operator *op, void *user_data);

/* Library blocks as torch/library.h: DEF, FRAGMENT, IMPL; dk_library_close undoes their registrations. */
#define DK__FORALL_LIBRARY_KINDS(X) X(DEF, DK_LIBRARY) X(FRAGMENT, DK_LIBRARY_FRAGMENT) X(IMPL, DK_LIBRARY_IMPL)

#define DK__LIBRARY_KIND_ENUM(kind, block) DK_LIBRARY_KIND_##kind,

/* DK_LIBRARY_KIND_DEF, _FRAGMENT, _IMPL. */
typedef enum dk_library_kind { DK__FORALL_LIBRARY_KINDS(DK__LIBRARY_KIND_ENUM) DK__LIB_END } dk_library_kind;

/* A block's body: runs inside a library opened with its arguments, left open until dk_library_close. */
typedef void (*dk_library_block)(dk_library *lib);

/* DK_LIBRARY, DK_LIBRARY_FRAGMENT, DK_LIBRARY_IMPL: static library blocks, run at load, closed at unload. */
#if defined(__GNUC__) || defined(__clang__)
#define DK__CONSTRUCTOR(fn) static void fn(void) __attribute__((constructor)); static void fn(void)
#define DK__DESTRUCTOR(fn) static void fn(void) __attribute__((destructor)); static void fn(void)
#define DK__LIBRARY_STATIC(kind, ns, key, m, uid)                                                    \
    static void DK__XCAT(dk__lib_block_, uid)(dk_library *m);                                         \
    static dk_library *DK__XCAT(dk__lib_, uid);                                                       \
    DK__CONSTRUCTOR(DK__XCAT(dk__lib_init_, uid)) {                                                  \
        dk__library_static(kind, #ns, key, DK__XCAT(dk__lib_block_, uid), __FILE__, __LINE__,         \
                           &DK__XCAT(dk__lib_, uid), DK_CONFIG_SIGNATURE);                            \
    }                                                                                                \
    DK__DESTRUCTOR(DK__XCAT(dk__lib_fini_, uid)) { dk__library_static_close(&DK__XCAT(dk__lib_, uid)); } \
    static void DK__XCAT(dk__lib_block_, uid)(dk_library *m)
#define DK_LIBRARY(ns, m) DK__LIBRARY_STATIC(DK_LIBRARY_KIND_DEF, ns, DK_Undefined, m, DK__XCAT(ns##_def_, __LINE__))
#define DK_LIBRARY_FRAGMENT(ns, m) \
    DK__LIBRARY_STATIC(DK_LIBRARY_KIND_FRAGMENT, ns, DK_Undefined, m, DK__XCAT(ns##_frag_, __LINE__))
#define DK_LIBRARY_IMPL(ns, key, m) \
    DK__LIBRARY_STATIC(DK_LIBRARY_KIND_IMPL, ns, DK_##key, m, DK__XCAT(ns##_##key##_impl_, __LINE__))
#endif

/* The thread-local storage keyword (define it for a compiler not known here). */
#ifndef DK_THREAD_LOCAL
#if defined(DK_SINGLE_THREADED)
#define DK_THREAD_LOCAL /* one thread: plain variables */
#elif defined(__GNUC__) || defined(__clang__)
#define DK_THREAD_LOCAL __thread
#elif defined(__cplusplus) && __cplusplus >= 201103L
#define DK_THREAD_LOCAL thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define DK_THREAD_LOCAL _Thread_local
#elif defined(_MSC_VER)
#define DK_THREAD_LOCAL __declspec(thread)
#else
#error "dispatch.h: no thread-local storage known for this compiler: define DK_THREAD_LOCAL to its keyword, or define DK_SINGLE_THREADED if one thread only uses dispatch.h (tcc has no TLS)"
#endif
#endif

/* This thread's keysets, as the inline call path reads them (dk_tls_included...). */
typedef struct dk_tls_state { uint64_t included, keep, excluded, included_row; } dk_tls_state;

/* Trace hook: called for every call and redispatch while set (see dk_trace_set). */
typedef void (*dk_trace_fn)(const dk_operator *op, dk_keyset ks, dk_key key, int is_redispatch, void *user_data);

/* A guard: the XOR delta its push flipped; popping flips it back, pops in any order (Note [Guards]). */
typedef struct dk_guard { uint64_t included_delta, excluded_delta; } dk_guard;

struct dk_explanation;   /* defined below */

/* A compile error unless fn has type T: what makes typed registration typed (Note [Typed registration]). */
#if defined(__cplusplus)
#define DK_KERNEL_TYPE_CHECK(T, fn, field) ((void)0)
#else
#if defined(__GNUC__) || defined(__clang__)
#define DK__FN_TYPE_IS(T, fn) __builtin_types_compatible_p(__typeof__(&*(fn)), T)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define DK__FN_TYPE_IS(T, fn) _Generic(&*(fn), T: 1, default: 0)
#else
#define DK__FN_TYPE_IS(T, fn) 1 /* no way to tell: the conversion's warning only */
#endif
#define DK_KERNEL_TYPE_CHECK(T, fn, field) ((void)sizeof(struct { int field : DK__FN_TYPE_IS(T, fn) ? 1 : -1; }))
#endif

/* A call-error hook, told of failed calls: no kernel, a fallthrough or the ambiguity executed. */
typedef void (*dk_call_error_fn)(const dk_operator *op, dk_keyset ks, dk_status status, const char *message,
                                 void *user_data);

/* What dk_autograd_not_implemented's fallback calls: mark_result, requires_grad (c10's fallback). */
typedef struct dk_autograd_ni_desc {
    /* each Tensor (or Tensor[] list) result, replaceable in place */
    void (*mark_result)(dk_value *result, const char *op_name, void *user_data);
    /* does this Tensor (or Tensor[]) argument require grad? NULL: assume
       yes. No argument does: the results are left alone. */
    int (*requires_grad)(const dk_value *arg, void *user_data);
    void *user_data;
} dk_autograd_ni_desc;

/* Where an explained slot's kernel comes from (dk_explain, on this thread). */
typedef enum dk_source {
    DK_SOURCE_KERNEL,              /* registered at the key itself */
    DK_SOURCE_DEFAULT_BACKEND,     /* CompositeExplicitAutograd[NonFunctional] */
    DK_SOURCE_MATH,                /* CompositeImplicitAutograd[NestedTensor] */
    DK_SOURCE_AUTOGRAD,            /* the Autograd alias */
    DK_SOURCE_BATCHED,             /* FuncTorchBatchedDecomposition */
    DK_SOURCE_FALLBACK,            /* a backend fallback */
    DK_SOURCE_FALLTHROUGH,         /* a fallthrough (only reachable when every key fell through) */
    DK_SOURCE_AMBIGUOUS,           /* c10's ambiguous_autogradother */
    DK_SOURCE_MISSING              /* nothing: the call reports an error */
} dk_source;

/* An explanation's own copies of its texts, cut to fit: printing it never reads the registry. */
enum { DK_EXPLAIN_NAME_MAX = 256, DK_EXPLAIN_DEBUG_MAX = 512, DK_EXPLAIN_ARG_NAME_MAX = 64 };

/* What dk_explain fills. */
typedef struct dk_explanation {
    dk_keyset args;                /* the argument keyset given */
    dk_keyset after_tls;           /* (args | included) - excluded */
    dk_keyset final;               /* after the fallthrough mask: what the kernel receives */
    int slot;
    dk_key key;                    /* the runtime key of the slot */
    /* what runs: a registry record, freed once retired (WHAT A PROGRAM
       DOES): read it before this thread's next quiescent point, or under
       DK_CALL_EPOCHS inside a call bracket around the explain;
       kernel_debug is the explanation's own copy of its text */
    const dk_kernel *kernel;
    dk_source source;
    const char *reason;            /* c10's words: "kernel", "math kernel", ... (static text) */
    char op_name[DK_EXPLAIN_NAME_MAX];       /* the operator's name */
    char kernel_debug[DK_EXPLAIN_DEBUG_MAX]; /* kernel->debug: "registered at file:line", or "" */
    /* Each dispatch argument's keyset (dk_explain_args, dk_explain_stack;
       dk_explain gives only their union: num_args 0). index: position in
       the schema's arguments; name: the schema's name, or "" (no def, or
       more arguments than the schema has). */
    int num_args;
    struct dk_explained_arg { int index; char name[DK_EXPLAIN_ARG_NAME_MAX]; dk_keyset ks; } arg[DK_EXPLAIN_MAX_ARGS];
} dk_explanation;

/* Type kinds in c10's TypeKind order: X(Name, c10's text, base type: 1 parsed, 2 an int in c10's fake type). */
#define DK_FORALL_TYPE_KINDS(X)                                                                    \
    X(Any, "Any", 1) X(AnyEnum, "AnyEnumType", 1) X(Tensor, "Tensor", 0) X(Storage, "Storage", 1)   \
    X(Tuple, "", 0) X(List, "", 0) X(Dict, "", 0) X(Number, "Scalar", 1) X(Float, "float", 1)       \
    X(Complex, "complex", 1) X(Future, "", 0) X(RRef, "", 0) X(Int, "int", 1)                        \
    X(None, "NoneType", 0) X(String, "str", 1) X(Generator, "Generator", 1)                          \
    X(Quantizer, "Quantizer", 1) X(Bool, "bool", 1) X(Optional, "", 0) X(Var, "", 0)                 \
    X(DeviceObj, "Device", 1) X(StreamObj, "Stream", 1) X(Class, "", 0) X(Capsule, "Capsule", 1)     \
    X(QScheme, "QScheme", 1) X(ScalarType, "ScalarType", 2) X(Layout, "Layout", 2)                   \
    X(MemoryFormat, "MemoryFormat", 2) X(AnyClass, "AnyClassType", 1) X(SymInt, "SymInt", 2)         \
    X(Union, "", 0)

#define DK__TYPE_ENUM(name, text, base) DK_TYPE_##name,

/* DK_TYPE_<Name> of DK_FORALL_TYPE_KINDS. */
typedef enum dk_type_kind { DK_FORALL_TYPE_KINDS(DK__TYPE_ENUM) DK__TYPE_END } dk_type_kind;

/* A parsed type: its kind, c10's str() ("int[]") and the types it contains. */
typedef struct dk_type {
    dk_type_kind kind;
    const char *str;                        /* c10's Type::str(): "int[]", "Dict(str, Tensor)" */
    int num_contained;                      /* List/Optional/Future/RRef 1, Dict 2, Tuple/Union n */
    const struct dk_type *const *contained;
} dk_type;

/* An alias annotation: Tensor(a), Tensor(a!), Tensor(a -> *), Tensor(a|b), Tensor!, in source order. */
typedef struct dk_alias_info {
    int num_before;
    const char *const *before;
    int num_after;
    const char *const *after;
    int is_write;
    const struct dk_alias_info *contained;  /* annotation of a list's elements, or NULL */
} dk_alias_info;

/* A default value's kind, as c10 stores it (an IValue). */
#define DK_FORALL_DEFAULT_KINDS(X)                                                              \
    X(NONE, "None") X(BOOL, "bool") X(INT, "int") X(DOUBLE, "float") X(COMPLEX, "complex")        \
    X(STRING, "str") X(DEVICE, "Device") X(LIST, "list")

#define DK__DEFAULT_KIND_ENUM(kind, name) DK_DEFAULT_##kind,

/* DK_DEFAULT_<KIND> of DK_FORALL_DEFAULT_KINDS. */
typedef enum dk_default_kind { DK_FORALL_DEFAULT_KINDS(DK__DEFAULT_KIND_ENUM) } dk_default_kind;

/* A parsed default: its kind and value. */
typedef struct dk_default {
    dk_default_kind kind;
    int b;                                  /* BOOL */
    int64_t i;                              /* INT; DEVICE: index, -1 if none */
    double re, im;                          /* DOUBLE (re); COMPLEX */
    const char *s;                          /* STRING bytes (may hold NUL); DEVICE "cuda:1" */
    size_t len;                             /* bytes of s */
    const struct dk_default *items;         /* LIST */
    size_t count;
} dk_default;

/* An argument or a return. */
typedef struct dk_arg {
    const char *name;                       /* "" for an unnamed return */
    const char *type_text;                  /* as printed: "Tensor(a!)", "int[2]", "Tensor?[]" */
    const dk_type *type;                    /* as written: ScalarType stays ScalarType */
    const dk_type *fake_type;               /* c10's fake type: ScalarType/Layout/MemoryFormat/SymInt -> int */
    const dk_alias_info *alias;             /* NULL without annotation */
    const dk_default *default_value;        /* NULL without default */
    const char *default_text;               /* as printed ("1", "[0, 1]", "\"mean\""), or NULL */
    int list_size;                          /* N of a sized list "int[N]", else -1 (beside the other ints: no padding) */
    int kwarg_only;                         /* after a lone '*' */
    int is_out;                             /* keyword-only and written to: c10's is_out() */
    int is_dispatch;                        /* Tensor, Tensor?, Tensor[] or Tensor?[] (any annotation) */
} dk_arg;

/* A parsed function schema (dk_schema_parse, dk_op_function_schema): read-only. */
typedef struct dk_schema {
    const char *name;                       /* "ns::name" */
    const char *overload;                   /* "" if none */
    int name_only;                          /* a bare name: no argument or return list */
    int num_arguments, num_returns;
    const dk_arg *arguments, *returns;
    int is_vararg, is_varret;               /* "..." ends the arguments / the returns */
    uint64_t dispatch_args;                 /* bit n-1-i: argument i is a dispatch argument */
    const char *text;                       /* c10's normalised form (dk_schema_to_string) */
    void *dk__memory;                       /* private */
} dk_schema;

/* --- Keysets and keys: building, combining, querying, naming (KEYS AND KEYSETS; docs/keys.md) --- */

/* The keyset of a raw repr. */
DK_INLINE dk_keyset dk_ks_raw(uint64_t repr);

/* The named keysets, as dk_keyset values (c10's names beside their DK__R_* bits, >>roles). */
#define DK_KS_EMPTY               dk_ks_raw(0)
#define DK_KS_FULL                dk_ks_raw(DK__R_FULL)
#define DK_KS_BACKENDS            dk_ks_raw(DK__R_BACKENDS)             /* backend_bitset_mask */
#define DK_KS_AUTOGRAD            dk_ks_raw(DK__R_AUTOGRAD)
#define DK_KS_AUTOGRAD_ALIAS      dk_ks_raw(DK__R_AUTOGRAD_ALIAS)
#define DK_KS_AUTOGRAD_WITH_INPLACE_VIEW dk_ks_raw(DK__R_AUTOGRAD_WITH_INPLACE_VIEW)
#define DK_KS_AUTOCAST            dk_ks_raw(DK__R_AUTOCAST)
#define DK_KS_DEFAULT_INCLUDED    dk_ks_raw(DK__R_DEFAULT_INCLUDED)
#define DK_KS_DEFAULT_EXCLUDED    dk_ks_raw(DK__R_DEFAULT_EXCLUDED)
#define DK_KS_PYTHON              dk_ks_raw(DK__R_PYTHON)
#define DK_KS_FUNCTORCH           dk_ks_raw(DK__R_FUNCTORCH)
#define DK_KS_FUNCTORCH_BATCHED   dk_ks_raw(DK__R_FUNCTORCH_BATCHED)
#define DK_KS_OTHER_BACKENDS      dk_ks_raw(DK__R_OTHER_BACKENDS)       /* autogradother_backends */
#define DK_KS_BACKEND_FUNCTIONALITY dk_ks_raw(DK__R_BACKEND_FUNCTIONALITY)
#define DK_KS_BACKEND             dk_ks_raw(DK__R_BACKEND)
#define DK_KS_NON_FUNCTIONAL_BACKEND dk_ks_raw(DK__R_NON_FUNCTIONAL_BACKEND)
#define DK_KS_MATH                dk_ks_raw(DK__R_MATH)
#define DK_KS_NESTED              dk_ks_raw(DK__R_NESTED)
#define DK_KS_AFTER_AUTOGRAD      dk_ks_raw(DK__R_AFTER_AUTOGRAD)
#define DK_KS_AFTER_INPLACE_VIEW  dk_ks_raw(DK__R_AFTER_INPLACE_VIEW)
#define DK_KS_AFTER_FUNCTIONALIZE dk_ks_raw(DK__R_AFTER_FUNCTIONALIZE)
#define DK_KS_SPARSE              dk_ks_raw(DK__R_SPARSE)
#define DK_KS_SPARSE_CSR          dk_ks_raw(DK__R_SPARSE_CSR)
#define DK_KS_MKLDNN              dk_ks_raw(DK__R_MKLDNN)
#define DK_KS_INPLACE_OR_VIEW     dk_ks_raw(DK__R_INPLACE_VIEW)

/* c10's FULL_AFTER for a functionality key, a constant expression (any key: dk_ks_full_after). */
#define DK_KS_FULL_AFTER(k) \
    dk_ks_raw((unsigned)(k) < (unsigned)DK_EndOfFunctionalityKeys ? DK__R_FULL_AFTER_C10((unsigned)(k) < (unsigned)DK_EndOfFunctionalityKeys ? (int)(k) : 0) : DK__R_FULL)

/* c10's offsetsAndMasks()[f]: f's first runtime slot and backend mask; {0, 0} for a non-functionality. */
DK_INLINE dk_offset_mask dk_key_offset_and_mask(dk_key f);

/* Does functionality key f carry role flag(s) `role` (Note [Roles])? */
DK_INLINE int dk_key_has_role(dk_key f, int role);

/* Is k an alias key; the functionality of k (CPU: Dense). */
DK_INLINE int dk_key_is_alias(dk_key k);
DK_INLINE dk_key dk_key_functionality(dk_key k);

/* The backend component of a per-backend runtime key (c10 toBackendComponent); InvalidBit for every other. */
DK_INLINE dk_backend dk_key_backend(dk_key k);

/* The runtime key of (per-backend functionality f, backend b); f itself when f is not per-backend. */
DK_INLINE dk_key dk_key_runtime(dk_key f, dk_backend b);

/* Per-backend functionality key (Dense, Sparse, AutogradFunctionality, ...). */
DK_INLINE int dk_key_is_per_backend_functionality(dk_key k);

/* A key with a slot of its own: Undefined, a non-per-backend functionality, a per-backend runtime key, no marker. */
DK_INLINE int dk_key_is_runtime(dk_key k);

/* The keyset of a backend bit alone. */
DK_INLINE dk_keyset dk_ks_from_backend(dk_backend b);

/* c10 DispatchKeySet(k): its functionality bit (and backend bit); empty for Undefined and alias keys. */
DK_INLINE dk_keyset dk_ks_from_key(dk_key k);

/* Union, intersection, equality, emptiness. */
DK_INLINE dk_keyset dk_ks_or(dk_keyset a, dk_keyset b);
DK_INLINE dk_keyset dk_ks_and(dk_keyset a, dk_keyset b);
DK_INLINE int dk_ks_equal(dk_keyset a, dk_keyset b);
DK_INLINE int dk_ks_is_empty(dk_keyset a);

/* c10's operator-: removes b's functionality bits; a's backend bits stay. */
DK_INLINE dk_keyset dk_ks_minus(dk_keyset a, dk_keyset b);

/* Adds k's bits. */
DK_INLINE dk_keyset dk_ks_add(dk_keyset a, dk_key k);

/* Clears only k's functionality bit (backend bits may serve other keys). */
DK_INLINE dk_keyset dk_ks_remove(dk_keyset a, dk_key k);

/* Clears a backend bit; has every bit of b; has any bit of b. */
DK_INLINE dk_keyset dk_ks_remove_backend(dk_keyset a, dk_backend b);
DK_INLINE int dk_ks_has_all(dk_keyset a, dk_keyset b);
DK_INLINE int dk_ks_has_any(dk_keyset a, dk_keyset b);

/* Every bit of k present. False for Undefined and alias keys (no bits). */
DK_INLINE int dk_ks_has(dk_keyset a, dk_key k);

/* The highest functionality key, backend, backend index of a keyset. */
DK_INLINE dk_key dk_ks_highest_functionality(dk_keyset a);
DK_INLINE dk_backend dk_ks_highest_backend(dk_keyset a);
DK_INLINE int dk_ks_backend_index(dk_keyset a);

/* c10 highestPriorityTypeId: the key a call with this keyset dispatches to. */
DK_INLINE dk_key dk_ks_highest_key(dk_keyset a);

/* c10 highestPriorityBackendTypeId (a function of the implementation, >>keys). */
DK_API dk_key dk_ks_highest_backend_key(dk_keyset a);

/* The slot a call with this keyset reads. */
DK_INLINE int dk_ks_slot(dk_keyset a);

/* The slot of a key (c10 getDispatchTableIndexForDispatchKey). */
DK_INLINE int dk_key_slot(dk_key k);

/* A keyset's keys in key order, lowest first: the first, the one after k (DK_Undefined at the end). */
DK_INLINE dk_key dk_ks_first(dk_keyset a);
DK_INLINE dk_key dk_ks_next(dk_keyset a, dk_key k);

/* For each key k of ks, lowest first (dk_ks_first, dk_ks_next). */
#define DK_KS_FOREACH(k, ks) for ((k) = dk_ks_first(ks); (k) != DK_Undefined; (k) = dk_ks_next((ks), (k)))

/* c10 isBackendDispatchKey: a runtime key covered by CompositeExplicitAutograd. */
DK_API int dk_key_is_backend(dk_key k);

/* Runtime keyset of an alias key (c10 getRuntimeDispatchKeySet); a non-alias key's own set. */
DK_API dk_keyset dk_alias_runtime_set(dk_key alias);

/* c10 isIncludedInAlias: runtime key k is covered by `alias` (a non-alias covers itself alone). */
DK_INLINE int dk_key_in_alias(dk_key k, dk_key alias);

/* c10's FULL_AFTER for any key; for an alias, below every key it stands for (never itself). */
DK_API dk_keyset dk_ks_full_after(dk_key k);

/* c10 getAutogradRelatedKeySetFromBackend. */
DK_INLINE dk_keyset dk_backend_autograd_related_set(dk_backend b);

/* c10 getAutogradKeyFromBackend: AutogradCPU for CPUBit, AutogradOther for HIPBit. */
DK_INLINE dk_key dk_backend_autograd_key(dk_backend b);

/* c10 getAutocastRelatedKeySetFromBackend (a function of the implementation: it expands the list). */
DK_API dk_keyset dk_backend_autocast_set(dk_backend b);

/* c10 getBackendKeySetFromAutograd: the backend keys an autograd key sits on. */
DK_API dk_keyset dk_autograd_key_backend_set(dk_key k);

/* A key's name as the preset's c10 prints it ("CPU", "AutogradCUDA", markers too); NULL out of range. */
DK_API const char *dk_key_name(dk_key k);

/* A backend component's name ("CPUBit"); NULL out of range. */
DK_API const char *dk_backend_name(dk_backend b);

/* Name -> key; every dk_key_name parses back; DK_ERR_UNKNOWN_KEY and *out untouched otherwise. */
DK_API dk_status dk_key_parse(const char *name, dk_key *out);

/* Name -> backend component, as dk_key_parse. */
DK_API dk_status dk_backend_parse(const char *name, dk_backend *out);

/* "DispatchKeySet(CPU, AutogradCPU)"; snprintf-like, as every function that writes text. */
DK_API int dk_ks_to_string(dk_keyset ks, char *buf, size_t size);

/* The runtime key of each slot (c10's runtime-key table). */
DK_API dk_key dk_slot_key(int slot);

/* Names a PrivateUse backend (c10's rename_privateuse1_backend), once, process-wide; DK_ERR_* on a bad name. */
DK_API dk_status dk_backend_rename(dk_backend b, const char *name);

/* --- Registries: creating, configuring, hooks, statistics (ERRORS, WHAT A PROGRAM DOES) --- */

/* Creates a registry (desc NULL: the defaults) into *out; DK_ERR_* on a bad desc. */
#define dk_registry_create(desc, out) dk__registry_create((desc), (out), DK_CONFIG_SIGNATURE)

/* Frees everything the registry owns, handles too; no call, lookup or registration may run or start. */
DK_API void dk_registry_destroy(dk_registry *r);

/* The process-wide registry of the DK_LIBRARY macros, made on first use as dk_registry_default_configure says. */
DK_API dk_registry *dk_registry_default(void);

/* Sets the default registry's hooks (and memory functions before it exists), before or after it is made. */
DK_API dk_status dk_registry_default_configure(const dk_registry_desc *desc);

/* Replaces logger, tensor_keyset and c10_messages; calls see the old set or the new one, never a mix. */
DK_API dk_status dk_registry_set_hooks(dk_registry *r, const dk_registry_desc *desc);

/* Fills *out with the registry's statistics (dk_registry_stats). */
DK_API void dk_registry_read_stats(dk_registry *r, dk_registry_stats *out);
/* Adds a listener pair (replaying on_registered for every defined operator); dk_deregister removes it. */
DK_API dk_status dk_registry_add_listener(dk_registry *r, dk_op_listener on_registered, dk_op_listener on_deregistered,
                                 void *user_data, dk_registration **out);

/* Every operator's dispatch table as a self-contained HTML page; snprintf-like. */
DK_API int dk_registry_html_to_string(dk_registry *r, char *buf, size_t size);

/* Operators with a def or a kernel, in id order; calls fn for each, stops when it returns non-zero. */
DK_API void dk_registry_each_op(dk_registry *r, int (*fn)(dk_operator *op, void *user_data), void *user_data);

/* Operators with a kernel registered directly at key k (c10 getRegistrationsForDispatchKey). */
DK_API void dk_registry_each_op_for_key(dk_registry *r, dk_key k, int (*fn)(dk_operator *op, void *user_data),
                                        void *user_data);

/* What the registry does on a failed call: dk_call_error_report (default), dk_call_error_abort, or yours. */
DK_API dk_status dk_registry_set_call_error(dk_registry *r, dk_call_error_fn fn, void *user_data);

/* --- Defining operators, finding them, registering kernels (DEFINING OPERATORS...; docs/registering.md) --- */

/* Any kernel function as a dk_fn (unchecked: DK_KERNEL checks the type). */
#define DK_FN(f) ((dk_fn)(f))

/* A tag's name as c10 prints it ("pointwise"); NULL out of range. */
DK_API const char *dk_tag_name(dk_tag t);

/* An alias-analysis kind's name ("CONSERVATIVE"); NULL out of range. */
DK_API const char *dk_alias_analysis_name(dk_alias_analysis k);

/* Name -> tag; DK_ERR_UNKNOWN_TAG and *out untouched for a name that is none. */
DK_API dk_status dk_tag_parse(const char *name, dk_tag *out);

/* Name -> alias-analysis kind, as dk_tag_parse; "" parses as FROM_SCHEMA. */
DK_API dk_status dk_alias_analysis_parse(const char *name, dk_alias_analysis *out);
/* Kernel descriptions: an unboxed function, a boxed one, a fallthrough. */
DK_INLINE dk_kernel_desc dk_unboxed(dk_fn fn, void *user_data);
DK_INLINE dk_kernel_desc dk_boxed(dk_boxed_fn fn, void *user_data);
DK_INLINE dk_kernel_desc dk_fallthrough(void);

/* The same description with the kernel's function name and C type. */
DK_INLINE dk_kernel_desc dk_kernel_named(dk_kernel_desc d, const char *name, const char *signature);

/* Gives an operator its schema; DK_ERR_* (a bad schema, a second def) and the registry unchanged on a bad input. */
#define dk_def(r, schema, out) dk__def((r), (schema), NULL, __FILE__, __LINE__, (out), DK_CONFIG_SIGNATURE)

/* dk_def with options (adapters, alias analysis, tags). */
#define dk_def_with(r, schema, opts, out) \
    dk__def_with((r), (schema), (opts), __FILE__, __LINE__, (out), DK_CONFIG_SIGNATURE)

/* Registers a kernel for one key (alias keys too) of an operator; DK_ERR_* and the registry unchanged on a bad input. */
#define dk_impl(r, op, key, kernel, out) \
    dk__impl((r), (op), (key), (kernel), __FILE__, __LINE__, (out), DK_CONFIG_SIGNATURE)

/* Registers a backend fallback: the kernel of key for every operator without one there. */
#define dk_fallback(r, key, kernel, out) \
    dk__fallback((r), (key), (kernel), __FILE__, __LINE__, (out), DK_CONFIG_SIGNATURE)

/* dk_def_with and dk_impl at the caller's caller's site (gen/'s macros pass __FILE__, __LINE__). */
#define dk_def_at(r, schema, opts, file, line, out) \
    dk__def_with((r), (schema), (opts), (file), (line), (out), DK_CONFIG_SIGNATURE)

/* dk_impl at the given site. */
#define dk_impl_at(r, op, key, kernel, file, line, out) \
    dk__impl((r), (op), (key), (kernel), (file), (line), (out), DK_CONFIG_SIGNATURE)

/* Removes exactly what the handle registered, at once; calls in flight may still run it; the handle is freed. */
DK_API dk_status dk_deregister(dk_registration *h);

/* The operator named "ns::name[.overload]" if it has a def or a kernel, else NULL; lock-free. */
DK_API dk_operator *dk_op_lookup(dk_registry *r, const char *name);

/* As dk_op_lookup, but the operator must be defined (c10 findSchemaOrThrow). */
DK_API dk_status dk_op_lookup_defined(dk_registry *r, const char *name, dk_operator **out);

/* Argument i's default as a value; DK_ERR_NOT_FOUND without one, DK_ERR_BAD_ARGUMENT out of range. */
DK_API dk_status dk_op_default(const dk_operator *op, int i, dk_value *out);

/* The index of the argument named name, or -1. */
DK_API int dk_op_argument_index(const dk_operator *op, const char *name);

/* c10's typed<>() check of adapters against a C signature: DK_ERR_WRONG_SIGNATURE / DK_ERR_NO_ADAPTER. */
DK_API dk_status dk_op_check_signature(const dk_operator *op, const char *signature);

/* A typed kernel description: a compile error unless fn has the operator's type (Note [Typed registration]). */
#define DK_KERNEL(op, fn, user_data) \
    (DK_KERNEL_TYPE_CHECK(op##_fn, fn, wrong_kernel_type__expected_##op##_fn), op##_kernel((fn), (user_data), #fn))

/* dk_impl of a typed kernel (DK_KERNEL). */
#define DK_IMPL_TYPED(op, r, op_name, key, fn, user_data, out) \
    dk_impl((r), (op_name), (key), DK_KERNEL(op, fn, user_data), (out))

/* c10's autogradNotImplementedFallback as a boxed kernel for DK_Autograd (dk_autograd_ni_desc). */
DK_API dk_kernel_desc dk_autograd_not_implemented(const dk_autograd_ni_desc *desc);

/* --- Calling: typed calls, redispatch, thread-local keysets and guards (CALLING...; docs/calling.md) --- */

/* This thread's included and excluded keysets, read and set (not guards: pops do not undo a set). */
DK_INLINE dk_keyset dk_tls_included(void);
DK_INLINE dk_keyset dk_tls_excluded(void);
DK_INLINE void dk_tls_set_included(dk_keyset ks);
DK_INLINE void dk_tls_set_excluded(dk_keyset ks);

/* This thread's state is c10's defaults (never changed, or every guard popped). */
DK_API int dk_tls_is_default(void);

/* Is k in this thread's included, excluded keyset. */
DK_INLINE int dk_tls_is_included(dk_key k);
DK_INLINE int dk_tls_is_excluded(dk_key k);

/* c10 IncludeDispatchKeyGuard: includes what ks adds, until popped (Note [Guards]). */
DK_INLINE dk_guard dk_guard_include(dk_keyset ks);

/* c10 ExcludeDispatchKeyGuard: excludes what ks adds, until popped. */
DK_INLINE dk_guard dk_guard_exclude(dk_keyset ks);

/* c10 ForceDispatchKeyGuard: replaces the whole state until popped. */
DK_INLINE dk_guard dk_guard_force(dk_keyset included, dk_keyset excluded);

/* Pops a guard, once, on its thread; the guards c10's kernels push (below autograd, ...). */
DK_INLINE void dk_guard_pop(dk_guard g);
DK_INLINE dk_guard dk_guard_below_autograd(void);
DK_INLINE dk_guard dk_guard_below_inplace_view(void);
DK_INLINE dk_guard dk_guard_skip_functionalize(void);

/* The kernel a redispatch with ks runs (no TLS, no mask); reported to the trace hook. */
DK_INLINE const dk_kernel *dk_redispatch_kernel(const dk_operator *op, dk_keyset ks);

/* The kernel a call with these argument keysets runs, and the keyset it gets; reported to the trace hook. */
DK_INLINE const dk_kernel *dk_dispatch_kernel(const dk_operator *op, dk_keyset args, dk_keyset *out_ks);

/* The same two with the snapshot (for dk_call_packed) and the fn to call directly: gen/'s call sites; no trace report. */
DK_INLINE const dk_kernel *dk_redispatch_kernel_with_fn(const dk_operator *op, dk_keyset ks,
                                                        const dk_op_table **out_table, dk_fn *out_fn);
DK_INLINE const dk_kernel *dk_dispatch_kernel_with_fn(const dk_operator *op, dk_keyset args, dk_keyset *out_ks,
                                                      const dk_op_table **out_table, dk_fn *out_fn);

/* Calls k, read from snapshot t, with an argument pack (gen/'s bindings); a failure is reported and *result zero-filled. */
DK_INLINE void dk_call_packed(const dk_operator *op, const dk_op_table *t, dk_keyset ks, const dk_kernel *k,
                              void *args, void *result, size_t result_size);

/* Declares a typed operator: name_fn, name_kernel, name_args, name_call, name_redispatch. */
#define DK_DECLARE_OP(name, R, keyset_expr, ...)                                                     \
    DK__DECLARE_OP_COMMON(name, R, __VA_ARGS__)                                                      \
    typedef struct name##_args { DK__MAP(DK__OP_FIELD, __VA_ARGS__) R result; } name##_args;         \
    DK__DECLARE_OP_BODY(name, R, return, keyset_expr, &dk__a.result, sizeof dk__a.result, __VA_ARGS__)

/* DK_DECLARE_OP for an operator that returns nothing. */
#define DK_DECLARE_OP_VOID(name, keyset_expr, ...)                                                   \
    DK__DECLARE_OP_COMMON(name, void, __VA_ARGS__)                                                   \
    typedef struct name##_args { DK__MAP(DK__OP_FIELD, __VA_ARGS__) } name##_args;                   \
    DK__DECLARE_OP_BODY(name, void, void, keyset_expr, NULL, 0, __VA_ARGS__)

/* From inside a kernel: fails the current call with a status and a printf-style message; nothing unwinds. */
DK_API void dk_call_fail(const dk_operator *op, const dk_kernel *kernel, dk_keyset ks, dk_status status,
                         const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* The fn to call directly, NULL while tracing: then bracket the call with dk_trace_begin / _end. */
DK_INLINE dk_fn dk_kernel_direct_fn(const dk_kernel *k);

/* --- Boxed calls and values: stacks, values, adapters (BOXED CALLS AND SCHEMAS; docs/calling.md) --- */

/* A stack over the caller's storage of capacity values. */
DK_INLINE void dk_stack_init(dk_stack *s, dk_value *storage, size_t capacity);

/* Push returns 0 when the stack is full (nothing pushed). */
DK_INLINE int dk_stack_push(dk_stack *s, dk_value v);

/* Pops the top value. */
DK_INLINE dk_value dk_stack_pop(dk_stack *s);

/* The value `depth` below the top (0 = top). */
DK_INLINE dk_value *dk_stack_peek(dk_stack *s, size_t depth);

/* Value makers (strings, lists, tensors and objects are the caller's, never copied). */
DK_INLINE dk_value dk_none(void);
DK_INLINE dk_value dk_bool(int b);
DK_INLINE dk_value dk_int(int64_t i);
DK_INLINE dk_value dk_double(double d);
DK_INLINE dk_value dk_string(const char *s);
DK_INLINE dk_value dk_tensor(void *t);
DK_INLINE dk_value dk_list(const dk_value *items, size_t n);
DK_INLINE dk_value dk_ints(dk_int_list l);
DK_INLINE dk_value dk_doubles(dk_double_list l);
DK_INLINE dk_value dk_object(void *p);

/* A complex value: re + im j (v.as.c). */
DK_INLINE dk_value dk_complex_double(double re, double im);

/* The keyset a boxed call of this stack dispatches with (its schema's dispatch arguments). */
DK_API dk_keyset dk_stack_dispatch_keyset(const dk_operator *op, const dk_stack *stack);

/* Boxed call, redispatch: the stack checked against the schema (DK_ERR_BAD_STACK: nothing runs). */
DK_API void dk_call_boxed(const dk_operator *op, dk_stack *stack);
DK_API void dk_redispatch_boxed(const dk_operator *op, dk_keyset ks, dk_stack *stack);

/* Pushes the defaults of the arguments after the stack's values; DK_ERR_BAD_STACK naming one without. */
DK_API dk_status dk_stack_fill_defaults(const dk_operator *op, dk_stack *stack);

/* Pushes the default of the next argument (keyword arguments); DK_ERR_BAD_STACK, DK_ERR_NOT_FOUND. */
DK_API dk_status dk_stack_push_default(const dk_operator *op, dk_stack *stack);

/* Checks the top values against the schema, as dk_call_boxed: DK_OK or DK_ERR_BAD_STACK. */
DK_API dk_status dk_stack_check(const dk_operator *op, const dk_stack *stack);

/* Sets the operator's boxing adapters (gen/ does); another signature than the one set, or than the schema's, is an error. */
DK_API dk_status dk_op_set_adapters(dk_operator *op, const dk_op_adapters *adapters);

/* --- Threads and memory: quiescent points, reclaiming (WHAT A PROGRAM DOES; docs/threads-memory-plugins.md) --- */

/* This thread's quiescent point, then frees what r can; never waits (DK_CALL_EPOCHS: waits for calls). */
DK_API dk_status dk_registry_reclaim(dk_registry *r);

/* Waits until nothing r retired before can be held, then frees it; call before freeing a kernel's data. */
DK_API dk_status dk_registry_synchronize(dk_registry *r);

/* This thread holds nothing and will not call until dk_thread_online; nobody waits for it meanwhile. */
DK_API dk_status dk_thread_offline(void);

/* This thread takes part again (a quiescent point). */
DK_API dk_status dk_thread_online(void);

/* Allocates what this thread's calls will need: after it a call never allocates, locks or makes a system call. */
DK_API dk_status dk_thread_attach(void);

/* A real-time thread's quiescent point: one store; never blocks, allocates or frees once attached. */
DK_API dk_status dk_thread_quiescent(void);

/* This thread's number in the statistics and the logger (1, 2, ...), 0 before it takes part. */
DK_API unsigned dk_thread_id(void);

/* A call bracket: what a read returns lives until dk_call_exit (DK_CALL_EPOCHS). */
DK_INLINE void dk_call_enter(void);
DK_INLINE void dk_call_exit(void);

/* A bracket's inline way (gen/'s call sites): 1 when it entered, left with dk_call_exit_outermost; 0: use dk_call_enter / _exit. */
DK_INLINE int dk_call_enter_outermost(void);
DK_INLINE void dk_call_exit_outermost(void);

/* --- Plugins: library blocks that load and unload (WHAT A PROGRAM DOES; docs/threads-memory-plugins.md) --- */

/* Opens a library block in r (DEF, FRAGMENT, IMPL); its registrations live until dk_library_close. */
#define dk_library_open(r, kind, ns, key, out) \
    dk__library_open((r), (kind), (ns), (key), __FILE__, __LINE__, (out), DK_CONFIG_SIGNATURE)

/* Closes a library block, undoing every registration made through it. */
DK_API dk_status dk_library_close(dk_library *lib);

/* Inside a block: def with the block's namespace. */
DK_API dk_status dk_library_def(dk_library *lib, const char *schema);

/* dk_library_def with options. */
DK_API dk_status dk_library_def_with(dk_library *lib, const char *schema, const dk_def_options *opts);
/* Inside a block: a kernel for name at key (DK_Undefined: the block's key). */
DK_API dk_status dk_library_impl(dk_library *lib, const char *name, dk_key key, dk_kernel_desc kernel);

/* dk_library_impl recording the given file:line (DK_LIBRARY_IMPL_TYPED and gen/'s pass their caller's). */
DK_API dk_status dk_library_impl_at(dk_library *lib, const char *name, dk_key key, dk_kernel_desc kernel,
                                 const char *file, int line);

/* Inside an IMPL block of namespace _: a fallback at the block's key. */
DK_API dk_status dk_library_fallback(dk_library *lib, dk_kernel_desc kernel);

/* Runs block(lib) in a library opened with these arguments; it stays open until dk_library_close. */
#define dk_library_run(r, kind, ns, key, block, out) \
    dk__library_run((r), (kind), (ns), (key), (block), __FILE__, __LINE__, (out), DK_CONFIG_SIGNATURE)

/* Library blocks run in r and how many failed (counts only grow): a plugin host reads them around dlopen. */
DK_API dk_status dk_library_blocks(dk_registry *r, unsigned long *run, unsigned long *failed);

/* Unloads a plugin's blocks (any address inside it) and waits for its kernels: call before dlclose. */
DK_API dk_status dk_library_unload(const void *address);

/* dk_library_impl of a typed kernel (DK_KERNEL), at the caller's site. */
#define DK_LIBRARY_IMPL_TYPED(op, lib, name, key, fn, user_data) \
    dk_library_impl_at((lib), (name), (key), DK_KERNEL(op, fn, user_data), __FILE__, __LINE__)

/* A plugin's link check: the name is its message. */
DK_API void dk_plugin_finds_no_dispatch_h_in_its_host__link_the_host_with_rdynamic_or_libdispatch_so(void);

/* --- Inspecting: tables, explanations, traces, the timeline (INSPECTING; docs/calling.md) --- */

/* Slot s's entry of a snapshot (its kernel record and fn). */
DK_INLINE const dk_table_entry *dk_op_table_entry(const dk_op_table *t, int s);

/* Backend b's fallthrough mask (b < DK_NUM_BACKENDS). */
DK_INLINE uint64_t dk_op_table_nonfallthrough(const dk_op_table *t, int b);

/* The operator's current snapshot; everything in it is complete (acquire). */
DK_INLINE const dk_op_table *dk_op_table_of(const dk_operator *op);

/* The kernel record a call would run at a slot; valid until this thread's next quiescent point (call epochs: dk_call_exit). */
DK_INLINE const dk_kernel *dk_op_slot_kernel(const dk_operator *op, int slot);

/* The def's schema in c10's normalised form, or NULL without a def; valid as dk_op_slot_kernel's. */
DK_INLINE const char *dk_op_schema(const dk_operator *op);

/* The def's parsed schema, or NULL without a def; read-only, valid as dk_op_slot_kernel's. */
DK_INLINE const struct dk_schema *dk_op_function_schema(const dk_operator *op);

/* The def's tags as a mask of bits DK_TAG_x (no def: 0); values, safe anywhere. */
DK_API uint64_t dk_op_tags(const dk_operator *op);

/* Does the def carry tag t; its alias-analysis kind (no def: FROM_SCHEMA). */
DK_API int dk_op_has_tag(const dk_operator *op, dk_tag t);
DK_API dk_alias_analysis dk_op_alias_analysis(const dk_operator *op);

/* A kernel registered directly at key k (c10 hasKernelForDispatchKey). */
DK_API int dk_op_has_kernel_for_key(const dk_operator *op, dk_key k);

/* The slot of runtime key k holds a kernel (fallthrough included). */
DK_API int dk_op_has_computed_kernel_for_key(const dk_operator *op, dk_key k);

/* c10's dumpState format; snprintf-like (the length the whole text needs). */
DK_API int dk_op_state_to_string(const dk_operator *op, char *buf, size_t size);

/* c10's dumpComputedTable; snprintf-like. */
DK_API int dk_op_computed_table_to_string(const dk_operator *op, char *buf, size_t size);

/* Resolution of one slot and why (c10 computeDispatchTableEntryWithDebug): "kernel", ..., "missing". */
DK_API const dk_kernel *dk_op_compute_slot(const dk_operator *op, int slot, const char **reason);

/* dk_registry_html_to_string's cells: X(name, colour, text, legend), CSS class dk-<name>; alias: its capitals. */
#define DK_FORALL_HTML_CELLS(X)                                                                  \
    X(kernel,      "#3fa34d", "K",  "kernel registered at this key")                            \
    X(alias,       "#6fa8dc", "",   "from an alias key's kernel (named in the cell)")           \
    X(fallback,    "#f6b26b", "FB", "the key's backend fallback")                               \
    X(fallthrough, "#d9d9d9", "FT", "fallthrough: the key is skipped")                          \
    X(ambiguous,   "#e06666", "?",  "ambiguous (CompositeImplicitAutograd and an AutogradOther backend)") \
    X(missing,     "#ffffff", "",   "missing: a call that lands here fails")

/* What a call with this argument keyset would do on this thread, into *out. */
DK_API dk_status dk_explain(const dk_operator *op, dk_keyset args, dk_explanation *out);

/* As dk_explain, from each typed argument's keyset (at most DK_EXPLAIN_MAX_ARGS). */
DK_API dk_status dk_explain_args(const dk_operator *op, const dk_keyset *arg_keysets, int n, dk_explanation *out);

/* As dk_explain, for a boxed call of this stack; DK_ERR_NOT_FOUND without a def, DK_ERR_BAD_STACK. */
DK_API dk_status dk_explain_stack(const dk_operator *op, const dk_stack *stack, dk_explanation *out);

/* Text of an explanation, from its own copies (never the registry); snprintf-like. */
DK_API int dk_explain_to_string(const dk_operator *op, const dk_explanation *e, char *buf, size_t size);

/* Trace every call and redispatch (process-wide); NULL turns it off. */
DK_API void dk_trace_set(dk_trace_fn fn, void *user_data);

/* Inside a trace hook: the stack of the boxed call being traced, NULL for a typed call. */
DK_API const dk_stack *dk_trace_stack(void);

/* Bracket of a call made through dk_kernel_direct_fn, for the timeline. */
DK_INLINE unsigned dk_trace_begin(const dk_operator *op, dk_keyset ks, const dk_kernel *k, int is_redispatch);
DK_INLINE void dk_trace_end(unsigned token);

/* dk_trace_begin that also tells the trace hook (gen/'s slow path, after a _with_fn read). */
DK_INLINE unsigned dk_trace_report_begin(const dk_operator *op, dk_keyset ks, const dk_kernel *k, int is_redispatch);

/* Records a timeline of dispatches (Chrome trace JSON), bounded per thread; DK_OK. */
DK_API dk_status dk_timeline_start(size_t events_per_thread);

/* Ends the recording; dk_timeline_save writes it to path after stop (DK_ERR_BAD_ARGUMENT: recording, unwritable). */
DK_API void dk_timeline_stop(void);
DK_API dk_status dk_timeline_save(const char *path);

/* --- Schemas: parsing and printing (BOXED CALLS AND SCHEMAS; docs/schemas-and-gen.md) --- */

/* Parses a schema into a new *out; DK_ERR_BAD_SCHEMA and *out = NULL on a bad text. */
DK_API dk_status dk_schema_parse(const char *text, dk_schema **out);

/* dk_schema_parse through a registry description's alloc / free (dk_schema_free uses them too). */
DK_API dk_status dk_schema_parse_with(const char *text, const dk_registry_desc *desc, dk_schema **out);

/* Frees a parsed schema. */
DK_API void dk_schema_free(dk_schema *s);

/* c10's toString(FunctionSchema); snprintf-like. */
DK_API int dk_schema_to_string(const dk_schema *s, char *buf, size_t size);

/* A type kind's name as in DK_FORALL_TYPE_KINDS ("Tensor", "List"); NULL out of range. */
DK_API const char *dk_type_kind_name(dk_type_kind k);

/* The C signature in schema words gen/ binds to ("(Tensor) (Tensor, float)"); -1 when boxed only. */
DK_API int dk_schema_c_signature(const dk_schema *s, char *buf, size_t size);

/* The dispatch arguments' bits (dk_schema.dispatch_args). */
DK_INLINE uint64_t dk_schema_dispatch_args(const dk_schema *s);

/* --- Errors, logging, configuration, version (ERRORS, CONFIGURATION) ------ */

/* DK_VERSION_NUMBER of the implementation that was linked. */
DK_API int dk_version_number(void);

/* A status's description ("out of memory", ...); NULL out of range. */
DK_API const char *dk_status_message(dk_status s);

/* "KERNEL_OVERRIDDEN", ...; NULL out of range, as every name function. */
DK_API const char *dk_log_item_name(dk_log_item item);

/* The default logger: "Warning: ..." (c10's words for an override), "dispatch.h error: ..." on stderr. */
DK_API void dk_log_stderr(dk_log_level level, dk_log_item item, const char *message, void *user_data);

/* The detailed message of the last failure on this thread ("" if none). */
DK_API const char *dk_last_error(void);

/* DK_OK when this unit's configuration is the implementation's; DK_ERR_CONFIG_MISMATCH. */
#define dk_config_check() dk__config_check(DK_CONFIG_SIGNATURE)

/* The implementation's own signature (what a foreign caller passes as `signature`). */
DK_API const char *dk_config_signature(void);

/* The default call-error hook: the message into dk_last_error, the status into dk_last_call_status. */
DK_API void dk_call_error_report(const dk_operator *op, dk_keyset ks, dk_status status, const char *message,
                                 void *user_data);

/* A call-error hook that prints and aborts. */
DK_API void dk_call_error_abort(const dk_operator *op, dk_keyset ks, dk_status status, const char *message,
                                void *user_data);

/* The status of this thread's last FAILED call, and clears it: clear before a call, read after. */
DK_API dk_status dk_last_call_status(void);

/* --- The C ABI: plain C types for foreign callers (FOREIGN CALLERS; Note [The C ABI]) --- */

/* Creates a registry whose tensors' keysets come from keyset_of (NULL: a handle's first 8 bytes). */
DK_API dk_status dk_abi_registry_create(uint64_t (*keyset_of)(const void *tensor, void *user_data), void *user_data,
                                        dk_registry **out);

/* dk_abi_registry_create with the registry's logger (NULL: dk_log_stderr). */
DK_API dk_status dk_abi_registry_create_with(uint64_t (*keyset_of)(const void *tensor, void *user_data),
                                             void *user_data, dk_log_fn log, void *log_user_data,
                                             dk_registry **out);

/* Destroys a registry (DK_ERR_DESTROYED twice, DK_ERR_IN_CALL); op_lookup: DK_ERR_NOT_FOUND for none. */
DK_API dk_status dk_abi_registry_destroy(dk_registry *r);
DK_API dk_status dk_abi_op_lookup(dk_registry *r, const char *name, const dk_operator **out);

/* Kernel descriptions: an opaque buffer of this many bytes. */
DK_API size_t dk_abi_kernel_desc_size(void);

/* Fills a kernel description: boxed, unboxed, fallthrough; named after its function. */
DK_API void dk_abi_boxed(void *kernel, dk_boxed_fn fn, void *user_data);
DK_API void dk_abi_unboxed(void *kernel, dk_fn fn, void *user_data);
DK_API void dk_abi_fallthrough(void *kernel);
DK_API void dk_abi_kernel_named(void *kernel, const char *name);
/* Registration, as dk_def / dk_impl / dk_fallback (site "<foreign caller>:0"; _at: the caller's site). */
DK_API dk_status dk_abi_def(dk_registry *r, const char *schema, dk_registration **out);
DK_API dk_status dk_abi_impl(dk_registry *r, const char *op_name, int key, const void *kernel, dk_registration **out);
DK_API dk_status dk_abi_fallback(dk_registry *r, int key, const void *kernel, dk_registration **out);
DK_API dk_status dk_abi_def_at(dk_registry *r, const char *schema, const char *site, int line,
                               dk_registration **out);
DK_API dk_status dk_abi_impl_at(dk_registry *r, const char *op_name, int key, const void *kernel, const char *site,
                                int line, dk_registration **out);
DK_API dk_status dk_abi_fallback_at(dk_registry *r, int key, const void *kernel, const char *site, int line,
                                    dk_registration **out);

/* Boxed calls returning this call's status (inside a call a failure stays set for the outer call). */
DK_API dk_status dk_abi_call_boxed(const dk_operator *op, dk_stack *stack);
DK_API dk_status dk_abi_redispatch_boxed(const dk_operator *op, uint64_t ks, dk_stack *stack);

/* From inside a kernel: fails the current call with the message as it is (dk_call_fail). */
DK_API void dk_abi_call_fail(const dk_operator *op, const dk_kernel *kernel, uint64_t ks, int status,
                             const char *message);

/* What a boxed kernel receives: its user_data, the operator's name. */
DK_API void *dk_abi_kernel_user_data(const dk_kernel *kernel);
DK_API const char *dk_abi_op_name(const dk_operator *op);

/* The def's schema, copied (snprintf-like; -1 and "" without a def). */
DK_API int dk_abi_op_schema(const dk_operator *op, char *buf, size_t size);

/* The def's arguments and returns: counts, names, types, defaults as written (-1: none). */
DK_API int dk_abi_op_num_arguments(const dk_operator *op);
DK_API int dk_abi_op_num_returns(const dk_operator *op);
DK_API int dk_abi_op_argument_name(const dk_operator *op, int i, char *buf, size_t size);
DK_API int dk_abi_op_argument_type(const dk_operator *op, int i, char *buf, size_t size);
DK_API int dk_abi_op_argument_default(const dk_operator *op, int i, char *buf, size_t size);
DK_API int dk_abi_op_argument_kwarg_only(const dk_operator *op, int i);
DK_API int dk_abi_op_return_name(const dk_operator *op, int i, char *buf, size_t size);
DK_API int dk_abi_op_return_type(const dk_operator *op, int i, char *buf, size_t size);

/* The key space: counts of backends, functionality keys, keys, slots. */
DK_API int dk_abi_num_backends(void);
DK_API int dk_abi_num_functionality_keys(void);
DK_API int dk_abi_num_keys(void);
DK_API int dk_abi_num_slots(void);

/* Names and numbers of the C enums and named keysets (NULL / DK_ERR_NOT_FOUND out of range). */
DK_API int dk_abi_num_statuses(void);
DK_API const char *dk_abi_status_name(int status);
DK_API int dk_abi_num_value_tags(void);
DK_API const char *dk_abi_value_tag_name(int tag);
DK_API int dk_abi_num_named_keysets(void);
DK_API const char *dk_abi_ks_named_name(int i);
DK_API dk_status dk_abi_ks_named(const char *name, uint64_t *out);

/* Keyset algebra on uint64_t, as the dk_ks_* functions. */
DK_API uint64_t dk_abi_ks_from_key(int key);
DK_API uint64_t dk_abi_ks_from_backend(int backend);
DK_API uint64_t dk_abi_ks_or(uint64_t a, uint64_t b);
DK_API uint64_t dk_abi_ks_and(uint64_t a, uint64_t b);
DK_API uint64_t dk_abi_ks_minus(uint64_t a, uint64_t b);
DK_API uint64_t dk_abi_ks_add(uint64_t a, int key);
DK_API uint64_t dk_abi_ks_remove(uint64_t a, int key);
DK_API int dk_abi_ks_has(uint64_t a, int key);
DK_API int dk_abi_ks_highest_key(uint64_t a);
DK_API int dk_abi_ks_slot(uint64_t a);
DK_API uint64_t dk_abi_ks_full_after(int key);
DK_API uint64_t dk_abi_ks_full(void);
DK_API uint64_t dk_abi_alias_runtime_set(int alias);
DK_API int dk_abi_ks_first(uint64_t a);
DK_API int dk_abi_ks_next(uint64_t a, int key);
DK_API int dk_abi_ks_to_string(uint64_t a, char *buf, size_t size);
DK_API int dk_abi_key_runtime(int functionality, int backend);

/* Sizes of the structs a caller passes (guard, value, explanation, statistics). */
DK_API size_t dk_abi_guard_size(void);
DK_API size_t dk_abi_value_size(void);
DK_API size_t dk_abi_explanation_size(void);
DK_API size_t dk_abi_registry_stats_size(void);
/* dk_explain with the keyset as a uint64_t, and the explanation's fields. */
DK_API dk_status dk_abi_explain(const dk_operator *op, uint64_t args, struct dk_explanation *out);
DK_API uint64_t dk_abi_explanation_final(const struct dk_explanation *e);
DK_API int dk_abi_explanation_key(const struct dk_explanation *e);
DK_API int dk_abi_explanation_slot(const struct dk_explanation *e);

/* Stacks: created here (NULL out of memory), one thread at a time. */
DK_API dk_stack *dk_abi_stack_create(size_t capacity);
DK_API void dk_abi_stack_destroy(dk_stack *s);
DK_API size_t dk_abi_stack_size(const dk_stack *s);
DK_API void dk_abi_stack_clear(dk_stack *s);
DK_API int dk_abi_stack_peek_tag(const dk_stack *s, size_t depth);   /* a dk_value_tag, -1 past the bottom */

/* Pushes (1, or 0 when full) and pops (DK_ERR_BAD_STACK on the wrong tag, the stack unchanged). */
DK_API int dk_abi_stack_push_none(dk_stack *s);
DK_API int dk_abi_stack_push_bool(dk_stack *s, int b);
DK_API int dk_abi_stack_push_int(dk_stack *s, int64_t i);
DK_API int dk_abi_stack_push_double(dk_stack *s, double d);
DK_API int dk_abi_stack_push_string(dk_stack *s, const char *str);
DK_API int dk_abi_stack_push_tensor(dk_stack *s, void *tensor);
DK_API int dk_abi_stack_push_object(dk_stack *s, void *object);
DK_API int dk_abi_stack_push_ints(dk_stack *s, const int64_t *items, size_t n);
DK_API int dk_abi_stack_push_doubles(dk_stack *s, const double *items, size_t n);
DK_API int dk_abi_stack_push_list(dk_stack *s, const dk_value *items, size_t n);
DK_API dk_status dk_abi_stack_pop_bool(dk_stack *s, int *out);
DK_API dk_status dk_abi_stack_pop_int(dk_stack *s, int64_t *out);
DK_API dk_status dk_abi_stack_pop_double(dk_stack *s, double *out);
DK_API dk_status dk_abi_stack_pop_string(dk_stack *s, const char **out);
DK_API dk_status dk_abi_stack_pop_tensor(dk_stack *s, void **out);
DK_API dk_status dk_abi_stack_pop_object(dk_stack *s, void **out);
DK_API dk_status dk_abi_stack_pop_none(dk_stack *s);
DK_API dk_status dk_abi_stack_pop_ints(dk_stack *s, const int64_t **items, size_t *n);
DK_API dk_status dk_abi_stack_pop_doubles(dk_stack *s, const double **items, size_t *n);
DK_API dk_status dk_abi_stack_pop_list(dk_stack *s, const dk_value **items, size_t *n);
/* A list's values: their tag and tensor, set to a tensor or none. */
DK_API int dk_abi_value_tag(const dk_value *items, size_t i);
DK_API void *dk_abi_value_tensor(const dk_value *items, size_t i);
DK_API void dk_abi_value_set_tensor(dk_value *items, size_t i, void *tensor);
DK_API void dk_abi_value_set_none(dk_value *items, size_t i);

/* This thread's state and guards, as dk_tls_* and dk_guard_* (a guard popped on its thread). */
DK_API uint64_t dk_abi_tls_included(void);
DK_API uint64_t dk_abi_tls_excluded(void);
DK_API void dk_abi_tls_set_included(uint64_t ks);
DK_API void dk_abi_tls_set_excluded(uint64_t ks);
DK_API void dk_abi_guard_include(uint64_t ks, dk_guard *out);
DK_API void dk_abi_guard_exclude(uint64_t ks, dk_guard *out);
DK_API void dk_abi_guard_force(uint64_t included, uint64_t excluded, dk_guard *out);
DK_API void dk_abi_guard_below_autograd(dk_guard *out);
DK_API void dk_abi_guard_below_inplace_view(dk_guard *out);
DK_API void dk_abi_guard_skip_functionalize(dk_guard *out);
DK_API int dk_abi_tls_is_default(void);
DK_API void dk_abi_guard_pop(const dk_guard *g);

/* >>private =================================================================

   Everything below up to the end of the declarations is the library's own:
   names with dk__ / DK__, the tables and variables the inline call path
   reads, and the bodies of the inline functions declared above. */

/* >>roles -------------------------------------------------------------------

   Note [Roles]. c10 spells its named keysets out key by key, in several
   places that drifted apart. Here each functionality row says which named
   keysets it belongs to, and the keysets are computed from the rows; special
   keys (AutogradOther, ADInplaceOrView, ...) are found by role too, so a user
   list may rename or drop them. */

/* Raw keyset bits of a functionality key value / a backend component. */
#define DK__FBIT(k) ((uint64_t)1 << (DK_NUM_BACKENDS + (k) - 1))

#define DK__BBIT(b) ((uint64_t)1 << ((b) - 1))

#define DK__R_BACKENDS (((uint64_t)1 << DK_NUM_BACKENDS) - 1)

/* Every role flag (DK__FORALL_ROLES, in >>public; Note [Roles] above):
   enum dk_role is made from that one list, and the DK_R_* macros of the
   configuration hash (>>api) are checked against it there. */
#define DK__R_FULL ((uint64_t)-1 >> (64 - DK_NUM_KEYSET_BITS))

/* Functionality bits of every row that has `role`; first key that has it.
   Each term reads the row's own columns: no enum of roles and bit
   positions per row is declared for them (one would cost compile time in
   every unit that includes the header, which names no role: docs/bench.md). */
#define DK__ROLE_TERM(name, pb, prefix, roles, role) | (uint64_t)!!((roles) & (role)) << (DK_NUM_BACKENDS + DK_##name - 1)

#define DK__ROLE_BITS(role) ((uint64_t)0 DK_FORALL_FUNCTIONALITY_KEYS(DK__ROLE_TERM, role))

#define DK__ROLE_FIRST(name, pb, prefix, roles, role) ((roles) & (role)) ? DK_##name :

#define DK__ROLE_KEY(role) (DK_FORALL_FUNCTIONALITY_KEYS(DK__ROLE_FIRST, role) DK_Undefined)

#define DK__PB_ROLE_FIRST(name, pb, prefix, roles, role) (pb && ((roles) & (role))) ? DK_##name :

#define DK__PB_ROLE_KEY(role) (DK_FORALL_FUNCTIONALITY_KEYS(DK__PB_ROLE_FIRST, role) DK_Undefined)

/* Backend bits of the functional components (Functional's bit 1). */
#define DK__BC_FUNCTIONAL(name, own_ag, autocast, functional, extra) | ((functional) & 1 ? DK__BBIT(DK_##name##Bit) : 0)

/* Special keys, found by role (Undefined when a user list has none):
   constant expressions, expanded where they are used (the implementation,
   the tables, the named keysets DK_KS_AFTER_*), never in a unit that only
   includes the header; private: code outside the header names keys as the
   lists do. */
#define DK__KEY_AUTOGRAD_OTHER DK__ROLE_KEY(DK_R_AUTOGRAD_OTHER)

#define DK__KEY_INPLACE_VIEW DK__ROLE_KEY(DK_R_INPLACE_VIEW)

#define DK__KEY_FUNCTIONALIZE DK__ROLE_KEY(DK_R_FUNCTIONALIZE)

#define DK__KEY_FIRST_AUTOGRAD DK__ROLE_KEY(DK_R_AUTOGRAD)

/* the per-backend autograd functionality (AutogradFunctionality) */
#define DK__KEY_AUTOGRAD_FUNCTIONALITY DK__PB_ROLE_KEY(DK_R_AUTOGRAD)

/* c10's DispatchKeySet(FULL_AFTER, k) for a functionality key k (a constant
   expression; dk_ks_full_after() also takes runtime keys): every key below
   k, PythonDispatcher included, k itself not. What a fallback at k passes
   to redispatch: dk_ks_and(ks, DK_KS_FULL_AFTER(DK_Tracer)). Undefined
   gives c10's value (the backend bits below the highest one, plus
   PythonDispatcher: 0x4000000000007fff in 2.11); any other value gives FULL
   (never a shift out of range) -- for a runtime or an alias key use
   dk_ks_full_after(), whose answer for an alias never holds the alias's
   own keys (FULL would let a fallback there call itself). */
/* c10's DispatchKeySet(FULL_AFTER, k) for a functionality key k below
   EndOfFunctionalityKeys: every bit below k's functionality bit, plus the
   always-after keys; for Undefined (k 0) the backend bits below the highest
   one plus the always-after keys, as c10's formula gives
   (DK_KS_FULL_AFTER, dk_ks_full_after). DK__R_FULL_AFTER, for the named
   keysets of a role key: the full set when a user list has no such key. */
#define DK__R_FULL_AFTER_C10(k) ((DK__FBIT(k) - 1) | DK__ROLE_BITS(DK_R_ALWAYS_AFTER))

#define DK__R_FULL_AFTER(k) ((int)(k) != 0 ? DK__R_FULL_AFTER_C10(k) : DK__R_FULL)

/* The raw named keysets (c10 names in comments). */
#define DK__R_AUTOGRAD        DK__ROLE_BITS(DK_R_AUTOGRAD)                 /* autograd_dispatch_keyset */

#define DK__R_AUTOGRAD_ALIAS  (DK__R_AUTOGRAD | DK__R_BACKENDS)            /* runtime set of Autograd */

#define DK__R_AUTOGRAD_WITH_INPLACE_VIEW DK__ROLE_BITS(DK_R_AUTOGRAD | DK_R_INPLACE_VIEW)

#define DK__R_AUTOCAST        DK__ROLE_BITS(DK_R_AUTOCAST)                 /* autocast_dispatch_keyset */

#define DK__R_DEFAULT_INCLUDED DK__ROLE_BITS(DK_R_INCLUDED)                /* default_included_set */

#define DK__R_DEFAULT_EXCLUDED DK__R_AUTOCAST                              /* default_excluded_set */

#define DK__R_PYTHON          DK__ROLE_BITS(DK_R_PYTHON)                   /* python_ks */

#define DK__R_FUNCTORCH       DK__ROLE_BITS(DK_R_FUNCTORCH)                /* functorch_transforms_ks */

#define DK__R_FUNCTORCH_BATCHED DK__ROLE_BITS(DK_R_BATCHED)                /* functorch_batched_ks */

#define DK__R_OTHER_BACKENDS  (DK__ROLE_BITS(DK_R_OTHER_BACKEND) | DK__R_BACKENDS) /* autogradother_backends */

#define DK__R_BACKEND_FUNCTIONALITY (DK__ROLE_BITS(DK_R_BACKEND_FN) | DK__R_BACKENDS) /* backend_functionality_keys */

#define DK__R_BACKEND         (DK__ROLE_BITS(DK_R_BACKEND) | DK__R_BACKENDS) /* backend_dispatch_keyset */

#define DK__R_NON_FUNCTIONAL_BACKEND                                       /* non_functional_backend_dispatch_keyset */ \
    (DK__R_BACKEND & ~DK__ROLE_BITS(DK_R_SPARSE) & ~((uint64_t)0 DK_FORALL_BACKEND_COMPONENTS(DK__BC_FUNCTIONAL, ~)))

#define DK__R_MATH            (DK__ROLE_BITS(DK_R_BACKEND | DK_R_AUTOGRAD | DK_R_MATH) | DK__R_BACKENDS) /* math_dispatch_keyset */

#define DK__R_NESTED          (DK__ROLE_BITS(DK_R_NESTED) | DK__R_BACKENDS) /* nested_dispatch_keyset */

#define DK__R_AFTER_AUTOGRAD  DK__R_FULL_AFTER(DK__KEY_FIRST_AUTOGRAD)      /* after_autograd_keyset */

#define DK__R_AFTER_INPLACE_VIEW DK__R_FULL_AFTER(DK__KEY_INPLACE_VIEW)     /* after_ADInplaceOrView_keyset */

#define DK__R_AFTER_FUNCTIONALIZE                                          /* after_func_keyset */ \
    (DK__R_FULL_AFTER(DK__KEY_FUNCTIONALIZE) & ~DK__ROLE_BITS(DK_R_INPLACE_VIEW))

#define DK__R_SPARSE          DK__ROLE_BITS(DK_R_SPARSE)                   /* sparse_ks */

#define DK__R_SPARSE_CSR      DK__ROLE_BITS(DK_R_SPARSE_CSR)               /* sparse_csr_ks */

#define DK__R_MKLDNN          DK__ROLE_BITS(DK_R_MKLDNN)                   /* mkldnn_ks */

#define DK__R_INPLACE_VIEW    DK__ROLE_BITS(DK_R_INPLACE_VIEW)             /* inplace_or_view_ks */

/* >>keyset ------------------------------------------------------------------ */

DK_INLINE dk_keyset dk_ks_raw(uint64_t repr) { dk_keyset ks; ks.repr = repr; return ks; }

/* Note [Runtime slots]. c10's offsetsAndMasks(), generated at compile time:
   for functionality f, the first slot and the backend mask (all backends when
   f is per-backend, else 0). Indexed by functionality key value; entries
   past the last functionality are {0, 0}, so a keyset with bits above FULL
   lands on the Undefined slot instead of reading out of bounds (c10 does). */

/* Note [Tables in one unit]. Every generated table the inline functions
   read is defined once, by the implementation (>>impl-slots), and declared
   here as a DK_API const array: a unit that only includes the header
   expands none of them and emits none (at -O0 neither: a compiler keeps an
   unused static const table there). The call path reads an extern table
   with the same instructions: a direct address in a program (PIE
   included), a GOT cell in position-independent code, which holds the
   address the static table's lea computed before. DISPATCH_STATIC units
   define them here, static. DK__TABLE(type, name, init) declares (or
   defines) one; DK__TABLE_DEFINE(type, name, init) is the implementation's
   definition; init is the name of a function-like macro that expands to the
   initialiser, so that a declaration never expands it. */
#ifdef DISPATCH_STATIC
#define DK__TABLE(type, name, init) static const type name DK__UNUSED = init();
#else
#define DK__TABLE(type, name, init) DK_API const type name;
#endif

#define DK__FK_OFFSET_MASK(name, pb, prefix, roles, extra) \
    { (uint16_t)DK__SLOT_##name, (uint16_t)(pb ? DK__R_BACKENDS : 0) },

#define DK__OFFSETS_AND_MASKS_INIT() { { 0, 0 }, DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_OFFSET_MASK, ~) }

typedef dk_offset_mask dk__offset_masks[65 - DK_NUM_BACKENDS];

#ifdef DISPATCH_STATIC
DK__SLOT_NUMBERS
#endif

DK__TABLE(dk__offset_masks, dk__offsets_and_masks, DK__OFFSETS_AND_MASKS_INIT)

/* The slot itself, by the keyset's highest bit msb(repr | 1) and the backend
   index b (< 16): offset + (b & mask) of the bit's functionality
   precomputed (rows of the backend bits and of bits above the last key are
   slot 0), so that a call pays one load for it instead of two loads, an and
   and an add. */
#define DK__SB(o, m, b) (uint16_t)(o + (b & m))

#define DK__SB_ROW(o, m)                                                                                     \
    { DK__SB(o, m, 0), DK__SB(o, m, 1), DK__SB(o, m, 2), DK__SB(o, m, 3), DK__SB(o, m, 4), DK__SB(o, m, 5),   \
      DK__SB(o, m, 6), DK__SB(o, m, 7), DK__SB(o, m, 8), DK__SB(o, m, 9), DK__SB(o, m, 10), DK__SB(o, m, 11), \
      DK__SB(o, m, 12), DK__SB(o, m, 13), DK__SB(o, m, 14), DK__SB(o, m, 15) },

/* DK__SBM_f: f's backend mask (every backend bit when f is per backend),
   short to expand in each cell; the enum goes with the table's definition
   (DK__SLOT_ENUMS) */
#define DK__SBM(name, pb, prefix, roles, extra) DK__SBM_##name = (pb) ? (1 << DK_NUM_BACKENDS) - 1 : 0,

#define DK__SLOT_ENUMS enum { DK_FORALL_FUNCTIONALITY_KEYS(DK__SBM, ~) DK__SBM_END };

#define DK__BC_NO_SLOT(name, own_ag, autocast, functional, extra) DK__SB_ROW(0, 0)

#define DK__FK_SLOT_ROW(name, pb, prefix, roles, extra) DK__SB_ROW(DK__SLOT_##name, DK__SBM_##name)

#define DK__SLOT_BY_BIT_BACKEND_INIT() \
    { DK_FORALL_BACKEND_COMPONENTS(DK__BC_NO_SLOT, ~) DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_SLOT_ROW, ~) }

typedef uint16_t dk__slot_cells[64][16];

#ifdef DISPATCH_STATIC
DK__SLOT_ENUMS
#endif

DK__TABLE(dk__slot_cells, dk__slot_by_bit_backend, DK__SLOT_BY_BIT_BACKEND_INIT)

/* First runtime key (the StartOf marker) of each functionality, 0 if not per-backend. */
#define DK__FK_START(name, pb, prefix, roles, extra) DK__PER_BACKEND_##pb(DK_StartOf##name##Backends) + 0,

#define DK__PER_BACKEND_START_INIT() { 0, DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_START, ~) }

typedef uint16_t dk__pb_starts[DK_NUM_FUNCTIONALITY_KEYS];

DK__TABLE(dk__pb_starts, dk__per_backend_start, DK__PER_BACKEND_START_INIT)

/* Role flags (Note [Roles]) of each functionality key. */
#define DK__FK_ROLES(name, pb, prefix, roles, extra) (uint32_t)(roles),

#define DK__FUNCTIONALITY_ROLES_INIT() { 0, DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_ROLES, ~) }

typedef uint32_t dk__fk_roles[DK_NUM_FUNCTIONALITY_KEYS];

DK__TABLE(dk__fk_roles, dk__functionality_roles, DK__FUNCTIONALITY_ROLES_INIT)

/* DK__OPAQUE(x): the compiler forgets how x was computed (GCC, Clang), so
   it keeps x as it is instead of recomputing a variant of it, or
   reassociating the operations around it. */
#if defined(__GNUC__) || defined(__clang__)
#define DK__OPAQUE(x) __asm__("" : "+r"(x))
#else
#define DK__OPAQUE(x) ((void)0)
#endif

/* Index of the highest set bit of x != 0 (one bsr / lzcnt). Every caller ORs
   in bit 0, which turns "1-based bit width, 0 for none" into a plain bit
   scan: width(x) == msb((x << 1) | 1). */
/* Index of the highest set bit of x (x != 0), as a 64-bit value so that it
   indexes a table without a zero extension (gcc adds one to its builtin;
   clang 14 leaves 63 ^ (63 ^ bsr) unfolded in the call path). The operand
   is "rm" for GCC, "r" for Clang (which takes "rm" as memory: a spill). */
#if defined(__clang__)
#define DK__ASM_RM "r"
#else
#define DK__ASM_RM "rm"
#endif

DK_INLINE size_t dk__msb(uint64_t x) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    uint64_t r;
    __asm__("bsrq %1, %0" : "=r"(r) : DK__ASM_RM(x));
    return (size_t)r;
#elif defined(__GNUC__) || defined(__clang__)
    return (size_t)(63u ^ (unsigned)__builtin_clzll(x));
#else
    size_t n = 0;
    while (x >>= 1) n++;
    return n;
#endif
}

/* Index of the highest set bit of x, 0 for x == 0: dk__msb(x | 1) without
   the or, and x kept (x86-64: bsr leaves its destination as it was for 0,
   as AMD documents and Intel's processors do; Linux's fls64 relies on it). */
DK_INLINE size_t dk__msb0(uint64_t x) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    uint64_t r = 0;
    __asm__("bsrq %1, %0" : "+r"(r) : DK__ASM_RM(x));
    return (size_t)r;
#else
    return dk__msb(x | 1);
#endif
}

DK_INLINE int dk__lowest_bit(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) { n++; x >>= 1; }
    return n;
#endif
}

DK_INLINE dk_offset_mask dk_key_offset_and_mask(dk_key f) {
    dk_offset_mask none = { 0, 0 };
    return f > DK_Undefined && f < DK_EndOfFunctionalityKeys ? dk__offsets_and_masks[f] : none;
}

DK_INLINE int dk_key_has_role(dk_key f, int role) {
    return f > DK_Undefined && f < DK_EndOfFunctionalityKeys && (dk__functionality_roles[f] & (uint32_t)role) != 0;
}

DK_INLINE int dk_key_is_alias(dk_key k) { return k >= DK_StartOfAliasKeys && k <= DK_EndOfAliasKeys; }

/* dk_key_functionality compares with the per-backend rows instead of
   reading a table, so that a compiler folds it for a constant key
   (dk_ks_from_key(DK_CPU) is a constant) while the tables stay in the
   implementation (Note [Tables in one unit]).

   The functionality of a key (c10 toFunctionalityKey): itself for a
   functionality key, the per-backend functionality for a runtime key,
   Undefined for alias keys. */
#define DK__FK_OF_RUNTIME(name, pb, prefix, roles, extra) DK__FK_OF_RUNTIME_##pb(name)
#define DK__FK_OF_RUNTIME_0(name)
#define DK__FK_OF_RUNTIME_1(name) if (k <= DK_EndOf##name##Backends) return DK_##name;

DK_INLINE dk_key dk_key_functionality(dk_key k) {
    if (k <= DK_EndOfFunctionalityKeys) return k;
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_OF_RUNTIME, ~) /* the blocks ascend in list order */
    return DK_Undefined;
}

#undef DK__FK_OF_RUNTIME
#undef DK__FK_OF_RUNTIME_0
#undef DK__FK_OF_RUNTIME_1

DK_INLINE dk_backend dk_key_backend(dk_key k) {
    if (k <= DK_EndOfFunctionalityKeys || k > DK_EndOfRuntimeBackendKeys) return DK_InvalidBit;
    return (dk_backend)((k - DK_EndOfFunctionalityKeys - 1) % (DK_NUM_BACKENDS + 1));
}

/* The runtime key of (per-backend functionality, backend) (c10
   toRuntimePerBackendFunctionalityKey); f itself when f is not per-backend.
   It reads the first runtime key of f's block from dk__per_backend_start
   (a comparison with each per-backend row, folded for a constant f, costs
   every unit that includes the header compile time, docs/bench.md; no
   call reads it). */
DK_INLINE dk_key dk_key_runtime(dk_key f, dk_backend b) {
    return (unsigned)f < (unsigned)DK_EndOfFunctionalityKeys && dk__per_backend_start[f] != 0
               ? (dk_key)((int)dk__per_backend_start[f] + (int)b)
               : f;
}

DK_INLINE int dk_key_is_per_backend_functionality(dk_key k) {
    return (unsigned)k < (unsigned)DK_EndOfFunctionalityKeys && dk__per_backend_start[k] != 0;
}

DK_INLINE int dk_key_is_runtime(dk_key k) {
    if (k < DK_EndOfFunctionalityKeys) return !dk_key_is_per_backend_functionality(k);
    return k <= DK_EndOfRuntimeBackendKeys && dk_key_backend(k) != DK_InvalidBit;
}

DK_INLINE dk_keyset dk_ks_from_backend(dk_backend b) {
    return dk_ks_raw(b == DK_InvalidBit || b > DK_EndOfBackendKeys ? 0 : DK__BBIT(b));
}

DK_INLINE dk_keyset dk_ks_from_key(dk_key k) {
    dk_key f = dk_key_functionality(k);
    if (f == DK_Undefined) return dk_ks_raw(0);
    return dk_ks_raw(DK__FBIT(f) | dk_ks_from_backend(dk_key_backend(k)).repr);
}

DK_INLINE dk_keyset dk_ks_or(dk_keyset a, dk_keyset b) { return dk_ks_raw(a.repr | b.repr); }

DK_INLINE dk_keyset dk_ks_and(dk_keyset a, dk_keyset b) { return dk_ks_raw(a.repr & b.repr); }

DK_INLINE int dk_ks_equal(dk_keyset a, dk_keyset b) { return a.repr == b.repr; }

DK_INLINE int dk_ks_is_empty(dk_keyset a) { return a.repr == 0; }

DK_INLINE dk_keyset dk_ks_minus(dk_keyset a, dk_keyset b) {
    return dk_ks_raw(a.repr & (DK__R_BACKENDS | ~b.repr));
}

DK_INLINE dk_keyset dk_ks_add(dk_keyset a, dk_key k) { return dk_ks_or(a, dk_ks_from_key(k)); }

DK_INLINE dk_keyset dk_ks_remove(dk_keyset a, dk_key k) {
    return dk_ks_raw(a.repr & ~(dk_ks_from_key(k).repr & ~DK__R_BACKENDS));
}

DK_INLINE dk_keyset dk_ks_remove_backend(dk_keyset a, dk_backend b) {
    return dk_ks_raw(a.repr & ~dk_ks_from_backend(b).repr);
}

DK_INLINE int dk_ks_has_all(dk_keyset a, dk_keyset b) { return (a.repr & b.repr) == b.repr; }

DK_INLINE int dk_ks_has_any(dk_keyset a, dk_keyset b) { return (a.repr & b.repr) != 0; }

DK_INLINE int dk_ks_has(dk_keyset a, dk_key k) {
    dk_keyset s = dk_ks_from_key(k);
    return s.repr != 0 && dk_ks_has_all(a, s);
}

DK_INLINE dk_key dk_ks_highest_functionality(dk_keyset a) {
    size_t f = dk__msb((a.repr >> (DK_NUM_BACKENDS - 1)) | 1);   /* a variable: -Wbad-function-cast */
    return (dk_key)f;
}

DK_INLINE dk_backend dk_ks_highest_backend(dk_keyset a) {
    size_t b = dk__msb(((a.repr & DK__R_BACKENDS) << 1) | 1);
    return (dk_backend)b;
}

/* c10's getBackendIndex: the highest backend bit's index (0 for CPU or
   without one). The one formula: the call path, the TLS row and this use it. */
DK_INLINE size_t dk__backend_index(uint64_t repr) { return dk__msb((repr & DK__R_BACKENDS) | 1); }

DK_INLINE int dk_ks_backend_index(dk_keyset a) { return (int)dk__backend_index(a.repr); }

DK_INLINE dk_key dk_ks_highest_key(dk_keyset a) {
    return dk_key_runtime(dk_ks_highest_functionality(a), dk_ks_highest_backend(a));
}

/* c10 getDispatchTableIndexForDispatchKeySet: the slot of the highest key.
   Two bit scans and one load: the keyset's highest bit and the backend
   index b pick the slot in dk__slot_by_bit_backend (the functionality's
   first slot, plus b when it is per-backend). dk__slot_at takes b computed
   already (the call path has it). */
DK_INLINE size_t dk__slot_at(uint64_t repr, size_t b) {
    return dk__slot_by_bit_backend[dk__msb0(repr)][b];
}

DK_INLINE size_t dk__slot(uint64_t repr) { return dk__slot_at(repr, dk__backend_index(repr)); }

DK_INLINE int dk_ks_slot(dk_keyset a) { return (int)dk__slot(a.repr); }

DK_INLINE int dk_key_slot(dk_key k) { return dk_ks_slot(dk_ks_from_key(k)); }

/* Iteration in c10's order: functionality keys ascending, and for a
   per-backend functionality one runtime key per backend bit, ascending.
       for (k = dk_ks_first(ks); k != DK_Undefined; k = dk_ks_next(ks, k))
   Defined for every 64-bit keyset: the bit just above FULL yields
   EndOfFunctionalityKeys (as c10's iterator does); bits above that are no
   key, are never yielded, and cannot make the loop restart (they used to:
   their "key" looked like a per-backend runtime key). dk_ks_to_string
   prints all of them, that bit included, as UnknownBits(0x...). */
#define DK__FBITS_KEYS ((uint64_t)-1 >> (64 - DK_NUM_FUNCTIONALITY_KEYS)) /* keys 1..EndOfFunctionalityKeys */

DK_INLINE dk_key dk__ks_from_functionality(dk_keyset a, int f) {
    uint64_t fbits;
    if (f >= DK_NUM_FUNCTIONALITY_KEYS) return DK_Undefined;
    fbits = (a.repr >> DK_NUM_BACKENDS) & DK__FBITS_KEYS & ~(((uint64_t)1 << f) - 1);
    for (; fbits; fbits &= fbits - 1) {
        dk_key fk = (dk_key)(dk__lowest_bit(fbits) + 1);
        if (!dk_key_is_per_backend_functionality(fk)) return fk;
        if (a.repr & DK__R_BACKENDS)
            return dk_key_runtime(fk, (dk_backend)(dk__lowest_bit(a.repr & DK__R_BACKENDS) + 1));
    }
    return DK_Undefined;
}

DK_INLINE dk_key dk_ks_first(dk_keyset a) { return dk__ks_from_functionality(a, 0); }

DK_INLINE dk_key dk_ks_next(dk_keyset a, dk_key k) {
    dk_key f = dk_key_functionality(k);
    if (dk_key_is_per_backend_functionality(f)) {
        dk_backend kb = dk_key_backend(k);
        uint64_t later = a.repr & DK__R_BACKENDS & ~(((uint64_t)1 << (unsigned)kb) - 1);
        if (later) return dk_key_runtime(f, (dk_backend)(dk__lowest_bit(later) + 1));
    }
    return dk__ks_from_functionality(a, (int)f);
}

/* >>keys -------------------------------------------------------------------- */

/* The queries below that a named keyset of many roles would expand in
   every unit (dk_key_is_backend, dk_alias_runtime_set, dk_ks_full_after,
   dk_autograd_key_backend_set, dk_ks_highest_backend_key) and the one that
   expands the backend list (dk_backend_autocast_set) are functions of the
   implementation (>>impl-slots); none is on the call path. */

/* c10 isIncludedInAlias: runtime key k is covered by alias `alias`; a key
   that is no alias covers itself alone (c10: isIncludedInAlias(CPU, CPU)),
   as dk_alias_runtime_set(k) is {k}. Never for Undefined or an alias k. */
DK_INLINE int dk_key_in_alias(dk_key k, dk_key alias) {
    if (k == DK_Undefined || dk_key_is_alias(k)) return 0;
    if (!dk_key_is_alias(alias)) return k == alias;
    return dk_ks_has(dk_alias_runtime_set(alias), k);
}

/* c10 getAutogradRelatedKeySetFromBackend: ADInplaceOrView + the backend's
   autograd key: Autograd<b> for a backend with OwnAutograd 1 (when the
   lists have a per-backend autograd row), else AutogradOther; InvalidBit
   and values out of range take AutogradOther. By backend in
   dk__autograd_related (Note [Tables in one unit]; its enum names the
   three keys once). */
#define DK__AGR_FBIT(k) ((int)(k) != 0 ? DK__FBIT(k) : 0)

#define DK__AGR(own_ag, b)                                                                              \
    ((((own_ag) && (int)DK__AGR_FUNCTIONALITY != 0) ? DK__FBIT(DK__AGR_FUNCTIONALITY) | DK__BBIT(b)       \
                                                   : DK__AGR_FBIT(DK__AGR_OTHER)) | DK__AGR_FBIT(DK__AGR_INPLACE_VIEW))

#define DK__AGR_ENUMS                                                                                    \
    enum { DK__AGR_FUNCTIONALITY = DK__KEY_AUTOGRAD_FUNCTIONALITY, DK__AGR_OTHER = DK__KEY_AUTOGRAD_OTHER, \
           DK__AGR_INPLACE_VIEW = DK__KEY_INPLACE_VIEW };

#define DK__BC_AGR(name, own_ag, autocast, functional, extra) DK__AGR(own_ag, DK_##name##Bit),

/* InvalidBit: OwnAutograd 0 (its backend bit, never used, is a valid shift) */
#define DK__AUTOGRAD_RELATED_INIT() { DK__AGR(0, 1), DK_FORALL_BACKEND_COMPONENTS(DK__BC_AGR, ~) }

typedef uint64_t dk__backend_keysets[DK_NUM_BACKENDS + 1];

#ifdef DISPATCH_STATIC
DK__AGR_ENUMS
#endif

DK__TABLE(dk__backend_keysets, dk__autograd_related, DK__AUTOGRAD_RELATED_INIT)

DK_INLINE dk_keyset dk_backend_autograd_related_set(dk_backend b) {
    return dk_ks_raw(dk__autograd_related[(unsigned)b <= (unsigned)DK_NUM_BACKENDS ? (int)b : 0]);
}

DK_INLINE dk_key dk_backend_autograd_key(dk_backend b) {
    return dk_ks_highest_key(dk_backend_autograd_related_set(b));
}

/* >>status ------------------------------------------------------------------ */

#undef DK__STATUS_ENUM

#undef DK__LOG_ITEM_ENUM

/* >>api --------------------------------------------------------------------- */

/* Signature of this translation unit's configuration, compared by
   dk_config_check: one item per backend row, functionality row and alias
   row, then one per setting that changes a layout or a behaviour shared by
   every unit (reclamation mode, DK_EXPLAIN_MAX_ARGS, DK_C10_VERSION,
   DK_SINGLE_THREADED), separated by ";". A mismatch names the first item
   that differs. Per-unit choices (DK_NO_TRACE, DK_TLS_MODEL, DK_API,
   DISPATCH_STATIC) are not in it. */
#define DK__SIG_BC(name, own_ag, autocast, functional, extra) backend name own_ag autocast functional;

#define DK__SIG_FK(name, pb, prefix, roles, extra) key name pb prefix roles;

#define DK__SIG_ALIAS(name, set, extra) alias name set;

#ifdef DK_CALL_EPOCHS
#define DK__SIG_MODE "call epochs"
#else
#define DK__SIG_MODE "quiescent reclaim"
#endif

#ifdef DK_SINGLE_THREADED
#define DK__SIG_THREADS "one thread"
#else
#define DK__SIG_THREADS "threads"
#endif

/* Note [Configuration in a symbol name]. A unit that only calls never
   passes its signature anywhere, so the check above cannot see it. Instead
   its calls read two variables the implementation defines, dk__tls (every
   dispatch) and dk__trace_hook (every typed call's trace test), under names
   that carry a hash of the configuration (dk__tls_cXXXXX): a unit compiled
   in another configuration refers to names the implementation does not
   define, and fails to link (a program, or a shared library linked with
   -z defs) or to load (dlopen: "undefined symbol: dk__tls_c..."). The same
   instructions run: only the names differ (the symbols' names: an asm
   label under GCC and Clang, the C names elsewhere; DK__CONFIG_LABEL
   below). The preprocessor computes the
   hash in #if, from what it can read as numbers: each row's flags
   (OwnAutograd, Functional; PerBackend, Roles) in order, the number of
   rows of each list, the settings of the signature and the private ABI
   revision (DK__ABI_REVISION: a unit of an older header whose inline
   code calls a private function this one lacks). Key names are
   not numbers to it: two lists that differ only in names (or in a
   backend's AutocastKey, or an alias's keyset) link, and are told apart
   by the signature at the first registration. The role flags are macros
   here only while the hash is computed, with enum dk_role's values (checked
   against DK__FORALL_ROLES right after them: a role missing would count as 0). With a preset (no lists of the
   program's own) the rows are those of DK_C10_VERSION in this version of
   the header, so the hash reads DK_VERSION_NUMBER and DK_C10_VERSION instead
   of the rows: each #if below expands the three lists otherwise, which costs
   every unit preprocessing time (docs/bench.md; a preset unit and a unit with lists of
   its own never link together, even with the same rows: the configuration
   header must be the same in every unit). */

#ifdef DK_CALL_EPOCHS
#define DK__CH_EPOCHS 1u
#else
#define DK__CH_EPOCHS 0u
#endif

#ifdef DK_SINGLE_THREADED
#define DK__CH_SINGLE 1u
#else
#define DK__CH_SINGLE 0u
#endif

#define DK_R_BACKEND (1u << 0)

#define DK_R_OTHER_BACKEND (1u << 1)

#define DK_R_BACKEND_FN (1u << 2)

#define DK_R_SPARSE (1u << 3)

#define DK_R_AUTOGRAD (1u << 4)

#define DK_R_MATH (1u << 5)

#define DK_R_NESTED (1u << 6)

#define DK_R_AUTOCAST (1u << 7)

#define DK_R_INCLUDED (1u << 8)

#define DK_R_PYTHON (1u << 9)

#define DK_R_FUNCTORCH (1u << 10)

#define DK_R_BATCHED (1u << 11)

#define DK_R_AUTOGRAD_OTHER (1u << 12)

#define DK_R_INPLACE_VIEW (1u << 13)

#define DK_R_FUNCTIONALIZE (1u << 14)

#define DK_R_ALWAYS_AFTER (1u << 15)

#define DK_R_SPARSE_CSR (1u << 16)

#define DK_R_MKLDNN (1u << 17)
#define DK__ROLE_MACRO_DIFFERS(name, bit) (DK_R_##name + 0 != (1u << (bit))) ||
#if DK__FORALL_ROLES(DK__ROLE_MACRO_DIFFERS) 0
#error "a DK_R_* macro of the configuration hash is not the value DK__FORALL_ROLES gives enum dk_role"
#endif
#undef DK__ROLE_MACRO_DIFFERS
/* Unsigned arithmetic, no shift by 32 or more and no division: #if
   computes in 64 bits (C99) or in unsigned int (tcc), and the low 32 bits
   are the same either way, so the hash is masked once, at the end. A row
   opens a parenthesis; its term closes it. */
#define DK__CH_OPEN_BC(name, own_ag, autocast, functional, extra) (

#define DK__CH_OPEN_FK(name, pb, prefix, roles, extra) (

#define DK__CH_OPEN_ALIAS(name, set, extra) (

#define DK__CH_BC(name, own_ag, autocast, functional, extra) * 16777619u + 0x100u + 4u * (own_ag) + (functional))

#define DK__CH_FK(name, pb, prefix, roles, extra) * 16777619u + 0x200u + (pb) + 2u * (0u | roles))

#define DK__CH_ALIAS(name, set, extra) * 16777619u + 0x300u)

#define DK__CH_STEP(h, v) ((h) * 16777619u + (v))

#ifdef DK__TORCH_ROWS
/* a preset: the header's version and DK_C10_VERSION name its rows; the
   steps written out (the value of the nested DK__CH_STEP below, a third of
   its cost in each of the 20 #if) */
#define DK__CH_ALL                                                                                               \
    (((((((2166136261u * 16777619u + (0x400u + DK_VERSION_NUMBER)) * 16777619u + (DK_C10_VERSION)) * 16777619u +   \
        (DK_EXPLAIN_MAX_ARGS)) * 16777619u + (DK_C10_VERSION)) * 16777619u + (DK__CH_EPOCHS)) * 16777619u +         \
      (DK__CH_SINGLE)) * 16777619u + (DK__ABI_REVISION))
#else
#define DK__CH_LISTS                                                                                         \
    (DK_FORALL_BACKEND_COMPONENTS(DK__CH_OPEN_BC, ~) DK_FORALL_FUNCTIONALITY_KEYS(DK__CH_OPEN_FK, ~)          \
     DK_FORALL_ALIAS_KEYS(DK__CH_OPEN_ALIAS, ~) 2166136261u DK_FORALL_BACKEND_COMPONENTS(DK__CH_BC, ~)       \
     DK_FORALL_FUNCTIONALITY_KEYS(DK__CH_FK, ~) DK_FORALL_ALIAS_KEYS(DK__CH_ALIAS, ~))
#define DK__CH_ALL                                                                                           \
    DK__CH_STEP(DK__CH_STEP(DK__CH_STEP(DK__CH_STEP(DK__CH_STEP(DK__CH_LISTS, DK_EXPLAIN_MAX_ARGS),           \
                                                    DK_C10_VERSION), DK__CH_EPOCHS), DK__CH_SINGLE),        \
                DK__ABI_REVISION)
#endif

/* 20 bits of it, mixed (the high bits of a multiplicative hash) */
#define DK__CH (((((DK__CH_ALL) & 0xffffffffu) * 0x45d9f3bu) & 0xffffffffu) >> 12)

#if (DK__CH >> 0) & 1
#define DK__CB0 1
#else
#define DK__CB0 0
#endif

#if (DK__CH >> 1) & 1
#define DK__CB1 1
#else
#define DK__CB1 0
#endif

#if (DK__CH >> 2) & 1
#define DK__CB2 1
#else
#define DK__CB2 0
#endif

#if (DK__CH >> 3) & 1
#define DK__CB3 1
#else
#define DK__CB3 0
#endif

#if (DK__CH >> 4) & 1
#define DK__CB4 1
#else
#define DK__CB4 0
#endif

#if (DK__CH >> 5) & 1
#define DK__CB5 1
#else
#define DK__CB5 0
#endif

#if (DK__CH >> 6) & 1
#define DK__CB6 1
#else
#define DK__CB6 0
#endif

#if (DK__CH >> 7) & 1
#define DK__CB7 1
#else
#define DK__CB7 0
#endif

#if (DK__CH >> 8) & 1
#define DK__CB8 1
#else
#define DK__CB8 0
#endif

#if (DK__CH >> 9) & 1
#define DK__CB9 1
#else
#define DK__CB9 0
#endif

#if (DK__CH >> 10) & 1
#define DK__CB10 1
#else
#define DK__CB10 0
#endif

#if (DK__CH >> 11) & 1
#define DK__CB11 1
#else
#define DK__CB11 0
#endif

#if (DK__CH >> 12) & 1
#define DK__CB12 1
#else
#define DK__CB12 0
#endif

#if (DK__CH >> 13) & 1
#define DK__CB13 1
#else
#define DK__CB13 0
#endif

#if (DK__CH >> 14) & 1
#define DK__CB14 1
#else
#define DK__CB14 0
#endif

#if (DK__CH >> 15) & 1
#define DK__CB15 1
#else
#define DK__CB15 0
#endif

#if (DK__CH >> 16) & 1
#define DK__CB16 1
#else
#define DK__CB16 0
#endif

#if (DK__CH >> 17) & 1
#define DK__CB17 1
#else
#define DK__CB17 0
#endif

#if (DK__CH >> 18) & 1
#define DK__CB18 1
#else
#define DK__CB18 0
#endif

#if (DK__CH >> 19) & 1
#define DK__CB19 1
#else
#define DK__CB19 0
#endif

#undef DK_R_BACKEND

#undef DK_R_OTHER_BACKEND

#undef DK_R_BACKEND_FN

#undef DK_R_SPARSE

#undef DK_R_AUTOGRAD

#undef DK_R_MATH

#undef DK_R_NESTED

#undef DK_R_AUTOCAST

#undef DK_R_INCLUDED

#undef DK_R_PYTHON

#undef DK_R_FUNCTORCH

#undef DK_R_BATCHED

#undef DK_R_AUTOGRAD_OTHER

#undef DK_R_INPLACE_VIEW

#undef DK_R_FUNCTIONALIZE

#undef DK_R_ALWAYS_AFTER

#undef DK_R_SPARSE_CSR

#undef DK_R_MKLDNN

#define DK__HX_0000 0

#define DK__HX_0001 1

#define DK__HX_0010 2

#define DK__HX_0011 3

#define DK__HX_0100 4

#define DK__HX_0101 5

#define DK__HX_0110 6

#define DK__HX_0111 7

#define DK__HX_1000 8

#define DK__HX_1001 9

#define DK__HX_1010 a

#define DK__HX_1011 b

#define DK__HX_1100 c

#define DK__HX_1101 d

#define DK__HX_1110 e

#define DK__HX_1111 f

#define DK__HX(a, b, c, d) DK__HX_##a##b##c##d

#define DK__XHX(a, b, c, d) DK__HX(a, b, c, d)

#define DK__CID(name, h4, h3, h2, h1, h0) name##_c##h4##h3##h2##h1##h0

#define DK__XCID(name, h4, h3, h2, h1, h0) DK__CID(name, h4, h3, h2, h1, h0)

/* name_cXXXXX: the name with this configuration's hash */
#define DK__CONFIG_NAME(name)                                                                               \
    DK__XCID(name, DK__XHX(DK__CB19, DK__CB18, DK__CB17, DK__CB16), DK__XHX(DK__CB15, DK__CB14, DK__CB13, DK__CB12), \
             DK__XHX(DK__CB11, DK__CB10, DK__CB9, DK__CB8), DK__XHX(DK__CB7, DK__CB6, DK__CB5, DK__CB4),             \
             DK__XHX(DK__CB3, DK__CB2, DK__CB1, DK__CB0))

/* GCC and Clang (outside Windows) keep the C names dk__tls and
   dk__trace_hook and give their symbols the hashed names with an asm label
   on the declarations (>>tls): a use expands no macro (DK__CONFIG_NAME is
   costly to expand, and the inline functions of every unit use the names
   14 times: docs/bench.md); elsewhere the names are macros. */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(_WIN32) && !defined(__CYGWIN__)
#define DK__CONFIG_LABEL(name) __asm__(DK__XSTR(__USER_LABEL_PREFIX__) DK__XSTR(DK__CONFIG_NAME(name)))
#else
#define DK__CONFIG_LABEL(name)
#define dk__tls DK__CONFIG_NAME(dk__tls)
#define dk__trace_hook DK__CONFIG_NAME(dk__trace_hook)
#endif

/* Compares a signature's text with the implementation's (never only its
   address: a plugin loaded where another was, or a reused buffer, is
   compared again); DK_ERR_CONFIG_MISMATCH when they differ, dk_last_error
   naming the first item that differs and its two values. */
DK_API dk_status dk__config_check(const char *caller_signature);

/* Publication of tables and pointers to lock-free readers. Three
   implementations, chosen by the preprocessor:
     DK_SINGLE_THREADED      plain accesses, no fences (one thread only; tcc)
     Windows Interlocked     MSVC (x86 / x64), or DK_WIN32_ATOMICS (mingw-w64
                             builds it to test this path under wine)
     GCC / Clang __atomic    everything else (mingw-w64 and clang-cl too) */
#if defined(DK_SINGLE_THREADED)
#define DK__LOAD_ACQ(p) (*(p))
#define DK__LOAD_RLX(p) (*(p))
#define DK__LOAD_RLX64(p) (*(p))
#define DK__LOAD_ACQ64(p) (*(p))
#define DK__STORE_REL(p, v) (*(p) = (v))
#define DK__STORE_RLX(p, v) (*(p) = (v))
#define DK__FENCE_SEQ() ((void)0)
#define DK__FENCE_ACQ() ((void)0)
#define DK__FENCE_REL() ((void)0)
#define DK__COMPILER_BARRIER() ((void)0)
#define DK__FETCH_ADD(p, v) (*(p) += (v))
#define DK__CAS(p, expected, desired) \
    (*(p) == *(expected) ? (*(p) = (desired), 1) : (*(expected) = *(p), 0))
#elif defined(DK_WIN32_ATOMICS) || (defined(_MSC_VER) && !defined(__clang__))
#if defined(_MSC_VER) && !defined(_M_IX86) && !defined(_M_X64)
#error "dispatch.h: with MSVC only x86 and x64 are supported (plain loads and stores are ordered there); use clang-cl elsewhere"
#endif
/* x86 and x64: aligned loads are acquire and stores release in hardware;
   the compiler barriers keep the compiler from moving accesses across them
   (a load is followed by its barrier through the comma: the value is read
   first, the barrier orders what comes after). Read-modify-writes are
   Interlocked functions, 32-bit (int fields) or 64-bit / pointer-sized,
   chosen by the operand's size. */
#include <intrin.h>
#if defined(_MSC_VER) && !defined(__clang__)
#define DK__COMPILER_BARRIER() _ReadWriteBarrier()
#else
#define DK__COMPILER_BARRIER() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#endif
#define DK__LOAD_ACQ(p) (DK__COMPILER_BARRIER(), *(p))
#define DK__LOAD_RLX(p) (*(p))
/* A uint64_t's load (the epochs and call words): on 32-bit x86 a plain one
   is two 32-bit loads, which a concurrent increment can tear (the epoch
   read as ahead of the true one by the carry); a compare-exchange of 0
   with 0 reads all 8 bytes at once (and writes back what is there). */
#if defined(_M_IX86) || defined(__i386__)
#define DK__LOAD_RLX64(p) ((uint64_t)_InterlockedCompareExchange64((volatile __int64 *)(p), 0, 0))
#define DK__LOAD_ACQ64(p) DK__LOAD_RLX64(p)
#else
#define DK__LOAD_RLX64(p) DK__LOAD_RLX(p)
#define DK__LOAD_ACQ64(p) DK__LOAD_ACQ(p)
#endif
#define DK__STORE_REL(p, v) (DK__COMPILER_BARRIER(), *(p) = (v), DK__COMPILER_BARRIER())
#define DK__STORE_RLX(p, v) (*(p) = (v))
#define DK__FENCE_SEQ() _mm_mfence()
#define DK__FENCE_ACQ() DK__COMPILER_BARRIER()
#define DK__FENCE_REL() DK__COMPILER_BARRIER()
/* uint64_t counters only */
#define DK__FETCH_ADD(p, v) ((uint64_t)_InterlockedExchangeAdd64((volatile __int64 *)(p), (__int64)(v)) + (v))
DK_INLINE int dk__cas32(volatile long *p, void *expected, long desired) {
    long e = *(long *)expected, old = _InterlockedCompareExchange(p, desired, e);
    if (old == e) return 1;
    *(long *)expected = old;
    return 0;
}
DK_INLINE int dk__cas_ptr(void *volatile *p, void *expected, void *desired) {
    void *e = *(void **)expected, *old = _InterlockedCompareExchangePointer(p, desired, e);
    if (old == e) return 1;
    *(void **)expected = old;
    return 0;
}
/* *p is an int (32 bits, as long on Windows) or a pointer */
#define DK__CAS(p, expected, desired)                                                                   \
    (sizeof(*(p)) == sizeof(long) ? dk__cas32((volatile long *)(void *)(p), (expected), (long)(intptr_t)(desired)) \
                                  : dk__cas_ptr((void *volatile *)(void *)(p), (expected), (void *)(intptr_t)(desired)))
#elif defined(__GNUC__) || defined(__clang__)
#define DK__LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define DK__LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define DK__LOAD_RLX64(p) DK__LOAD_RLX(p)
#define DK__LOAD_ACQ64(p) DK__LOAD_ACQ(p)
#define DK__STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define DK__STORE_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#if defined(__SANITIZE_THREAD__)
#define DK__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DK__TSAN 1
#endif
#endif
#ifdef DK__TSAN
/* ThreadSanitizer models no standalone fence: a seq_cst RMW stands in. */
static int dk__tsan_fence_word DK__UNUSED;
#define DK__FENCE_SEQ() ((void)__atomic_fetch_add(&dk__tsan_fence_word, 0, __ATOMIC_SEQ_CST))
#define DK__FENCE_ACQ() DK__FENCE_SEQ()
#define DK__FENCE_REL() DK__FENCE_SEQ()
#else
#define DK__FENCE_SEQ() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define DK__FENCE_ACQ() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define DK__FENCE_REL() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif
#define DK__COMPILER_BARRIER() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define DK__FETCH_ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define DK__CAS(p, expected, desired) \
    __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
#else
#error "dispatch.h: no atomics known for this compiler: define DK_SINGLE_THREADED if one thread only uses dispatch.h (tcc), or port the DK__LOAD/STORE/FENCE/FETCH_ADD/CAS block to the compiler's atomics"
#endif

/* >>aliases -----------------------------------------------------------------

   Each alias plays the role named by its Set column; the resolution rules
   find aliases by role, so a user alias list may drop any of them (the role
   constant is then Undefined). The roles are one list, in c10's resolution
   order (computeDispatchTableEntry): X(Set, Alias, Reason) gives the Set
   column's name, the private DK__ALIAS_<Alias> constant (code outside the
   header names keys as the lists do: DK_CompositeImplicitAutograd) and the
   dk_source_detail a kernel
   found through the role has. Everything about roles is generated from it:
   the role numbers, their bits, the alias key of each role, the resolution
   loop (Note [Resolution]). */
#define DK__FORALL_ALIAS_ROLES(X)                                      \
    X(NON_FUNCTIONAL_BACKEND, NON_FUNCTIONAL, NON_FUNCTIONAL)           \
    X(BACKEND,                BACKEND,        BACKEND)                  \
    X(NESTED,                 NESTED,         NESTED)                   \
    X(MATH,                   MATH,           MATH)                     \
    X(AUTOGRAD_ALIAS,         AUTOGRAD,       AUTOGRAD)                 \
    X(FUNCTORCH_BATCHED,      BATCHED,        BATCHED)

#define DK__ROLE_NUMBER(set, alias, reason) DK__SET_##set,

enum { DK__SET_NONE_ = 0, DK__FORALL_ALIAS_ROLES(DK__ROLE_NUMBER) DK__NUM_ROLES_PLUS_1 };

#undef DK__ROLE_NUMBER

#define DK__SET_KEYS(...) 0 /* a user alias's KEYS(...) set: no role */

/* >>boxed -------------------------------------------------------------------

   Boxed values: a tagged union, and a stack whose storage the caller owns
   (no allocation per call, no reference counting in the dispatcher). A
   boxed kernel pops its arguments (the last argument is on top) and pushes
   its returns, as c10's boxed calling convention. Tensors are the caller's
   own handles (void *); the registry's tensor_keyset hook tells their keys. */

DK_INLINE void dk_stack_init(dk_stack *s, dk_value *storage, size_t capacity) {
    s->values = storage; s->size = 0; s->capacity = capacity; s->unboxed_args = NULL;
}

DK_INLINE int dk_stack_push(dk_stack *s, dk_value v) {
    if (s->size >= s->capacity) return 0;
    s->values[s->size++] = v;
    return 1;
}

DK_INLINE dk_value dk_stack_pop(dk_stack *s) {
    dk_value none;
    if (s->size) return s->values[--s->size];
    none.tag = DK_VALUE_NONE; none.as.i = 0;
    return none;
}

DK_INLINE dk_value *dk_stack_peek(dk_stack *s, size_t depth) { return depth < s->size ? &s->values[s->size - 1 - depth] : NULL; }

/* Every byte of a value is set: values are copied whole (the complex's two
   doubles are the union's widest member where pointers are 4 bytes). */
DK_INLINE dk_value dk__value(dk_value_tag tag) {
    dk_value v;
    v.tag = tag;
    v.as.c.re = 0.0;
    v.as.c.im = 0.0;
    v.as.list.items = NULL;
    v.as.list.n = 0;
    return v;
}

DK_INLINE dk_value dk_none(void) { return dk__value(DK_VALUE_NONE); }

DK_INLINE dk_value dk_bool(int b) { dk_value v = dk__value(DK_VALUE_BOOL); v.as.b = b != 0; return v; }

DK_INLINE dk_value dk_int(int64_t i) { dk_value v = dk__value(DK_VALUE_INT); v.as.i = i; return v; }

DK_INLINE dk_value dk_double(double d) { dk_value v = dk__value(DK_VALUE_DOUBLE); v.as.d = d; return v; }

DK_INLINE dk_value dk_string(const char *s) { dk_value v = dk__value(DK_VALUE_STRING); v.as.s = s; return v; }

DK_INLINE dk_value dk_tensor(void *t) { dk_value v = dk__value(DK_VALUE_TENSOR); v.as.tensor = t; return v; }

DK_INLINE dk_value dk_list(const dk_value *items, size_t n) {
    dk_value v; v.tag = DK_VALUE_LIST; v.as.list.items = items; v.as.list.n = n; return v;
}

DK_INLINE dk_value dk_ints(dk_int_list l) {
    dk_value v; v.tag = DK_VALUE_INT_LIST; v.as.ints.items = l.items; v.as.ints.n = l.n; return v;
}

DK_INLINE dk_value dk_doubles(dk_double_list l) {
    dk_value v; v.tag = DK_VALUE_DOUBLE_LIST; v.as.doubles.items = l.items; v.as.doubles.n = l.n; return v;
}

DK_INLINE dk_value dk_object(void *p) { dk_value v = dk__value(DK_VALUE_OBJECT); v.as.object = p; return v; }

DK_INLINE dk_value dk_complex_double(double re, double im) {
    dk_value v = dk__value(DK_VALUE_COMPLEX);
    v.as.c.re = re;
    v.as.c.im = im;
    return v;
}

/* >>registry ----------------------------------------------------------------

   A dk_registry holds operators, their kernels and the backend fallbacks.
   Registries are independent; dk_registry_default() is the process-wide one
   the DK_LIBRARY macros use. Every registration returns a dk_registration
   handle; dk_deregister() removes exactly that registration and restores what
   it shadowed. Invariant: every operator's dispatch table, as read through
   dk_op_slot_kernel, equals a full recomputation from its current
   registrations (see Note [Resolution]: boxed backend fallbacks are read
   from the registry, not stored in the tables). */

#undef DK__TAG_ENUM

DK_STATIC_ASSERT(DK_NUM_TAGS <= 64, "a def keeps its tags in one 64-bit mask");

#undef DK__AA_ENUM

DK_INLINE dk_kernel_desc dk__kernel_desc(dk_fn fn, dk_boxed_fn boxed, void *user_data, int fallthrough) {
    dk_kernel_desc d;
    d.fn = fn; d.boxed = boxed; d.user_data = user_data; d.fallthrough = fallthrough;
    d.name = NULL; d.signature = NULL;
    return d;
}

/* What to register: build with dk_unboxed(), dk_boxed(), dk_fallthrough(),
   or typed with DK_KERNEL(op, fn, user_data) (>>public). name (the
   kernel's function name, shown after its file:line) and signature (its C
   type, kept as a pointer: a string literal) are optional. */
DK_INLINE dk_kernel_desc dk_unboxed(dk_fn fn, void *user_data) { return dk__kernel_desc(fn, NULL, user_data, 0); }

DK_INLINE dk_kernel_desc dk_boxed(dk_boxed_fn fn, void *user_data) { return dk__kernel_desc(NULL, fn, user_data, 0); }

DK_INLINE dk_kernel_desc dk_fallthrough(void) { return dk__kernel_desc(NULL, NULL, NULL, 1); }

DK_INLINE dk_kernel_desc dk_kernel_named(dk_kernel_desc d, const char *name, const char *signature) {
    d.name = name; d.signature = signature; return d;
}

#undef DK__REASON_ENUM

#undef DK__FIRST_PB_KEY_OF

/* Where slot s's entry is, in bytes from the start of the table; the
   generated tables hold it minus slot 0's (a signed 16-bit value, 0 for
   slot 0, so that their zero cells stand for slot 0). */
enum {
    DK__EA_ROWS = (int)(offsetof(dk_op_table, rows) + offsetof(dk_backend_row, first)),
    DK__EA_ENTRIES = (int)offsetof(dk_op_table, entries),
    DK__EA_ROW_SIZE = (int)sizeof(dk_backend_row),
    DK__EA_ENTRY_SIZE = (int)sizeof(dk_table_entry)
};

#define DK__ENTRY_AT(s)                                                                                 \
    ((size_t)((unsigned)(s) - (unsigned)DK__ROW_FIRST_SLOT < (unsigned)DK__ROW_SLOTS                      \
         ? (unsigned)DK__EA_ROWS + ((unsigned)(s) - (unsigned)DK__ROW_FIRST_SLOT) * (unsigned)DK__EA_ROW_SIZE \
         : (unsigned)DK__EA_ENTRIES +                                                                      \
               ((unsigned)(s) - ((unsigned)(s) > (unsigned)DK__ROW_FIRST_SLOT ? (unsigned)DK__ROW_SLOTS : 0u)) * \
                   (unsigned)DK__EA_ENTRY_SIZE))

enum { DK__EA_ZERO = (int)DK__ENTRY_AT(0) };

#define DK__ENTRY_OFFSET(s) ((int16_t)((long)DK__ENTRY_AT(s) - (long)DK__EA_ZERO))

DK_STATIC_ASSERT(sizeof(dk_backend_row) == 32, "a backend row is 32 bytes");

DK_STATIC_ASSERT(DK__REASON_END <= 16, "a slot's reason fits in 4 bits");

DK_STATIC_ASSERT(sizeof(dk_op_table) < 32768, "entry offsets are signed 16-bit values");

/* Per functionality f, computed once (the tables below name these short
   constants instead of expanding DK__ENTRY_OFFSET in each of their cells,
   which made every unit's preprocessed text large: docs/bench.md): DK__EOF_f, the entry
   offset of f's first slot, and DK__ESF_f, the step between the entries of
   f's backends (a backend row for the functionality whose slots live in
   the rows, one entry for the other per-backend ones, 0 when f is not per
   backend). Backend b's entry of f is DK__EOF_f + b * DK__ESF_f. The enum
   (DK__ENTRY_ENUMS) goes with the tables' definitions (Note [Tables in one
   unit]). */
#define DK__EO_CONST(name, pb, prefix, roles, extra)                                                  \
    DK__EOF_##name = DK__ENTRY_OFFSET(DK__SLOT_##name),                                                 \
    DK__ESF_##name = !(pb) ? 0 : (int)DK__SLOT_##name == (int)DK__ROW_FIRST_SLOT ? (int)DK__EA_ROW_SIZE : (int)DK__EA_ENTRY_SIZE,

#define DK__EO_B(b) DK__EOB_##b = (b) < DK_NUM_BACKENDS ? (b) : 0

#define DK__ENTRY_ENUMS                                                                                        \
    enum {                                                                                                     \
        DK_FORALL_FUNCTIONALITY_KEYS(DK__EO_CONST, ~)                                                         \
        /* backend index b as the tables use it (0 past the last backend) */                                  \
        DK__EO_B(0), DK__EO_B(1), DK__EO_B(2), DK__EO_B(3), DK__EO_B(4), DK__EO_B(5), DK__EO_B(6), DK__EO_B(7), \
        DK__EO_B(8), DK__EO_B(9), DK__EO_B(10), DK__EO_B(11), DK__EO_B(12), DK__EO_B(13), DK__EO_B(14), DK__EO_B(15) \
    };

/* Entry offsets (DK__ENTRY_OFFSET) by backend index b and a keyset's
   highest bit, msb(repr | 1): a call adds one to the table's address and
   loads fn and kernel from there. Bits without a slot (backend bits, bits
   above the last key) give slot 0's, offset 0. Rows are backend-major so
   that b * 32, a backend row's byte offset in a table, also finds b's row
   here (see dk__entry_at). */
#define DK__EO_BC(name, own_ag, autocast, functional, b) 0,

#define DK__EO_FK(name, pb, prefix, roles, b) (int16_t)(DK__EOF_##name + DK__EOB_##b * DK__ESF_##name),

#define DK__EO_ROW(b) { DK_FORALL_BACKEND_COMPONENTS(DK__EO_BC, b) DK_FORALL_FUNCTIONALITY_KEYS(DK__EO_FK, b) }

#define DK__ENTRY_BY_BACKEND_BIT_INIT()                                                                        \
    { DK__EO_ROW(0), DK__EO_ROW(1), DK__EO_ROW(2), DK__EO_ROW(3), DK__EO_ROW(4), DK__EO_ROW(5), DK__EO_ROW(6), \
      DK__EO_ROW(7), DK__EO_ROW(8), DK__EO_ROW(9), DK__EO_ROW(10), DK__EO_ROW(11), DK__EO_ROW(12), DK__EO_ROW(13), \
      DK__EO_ROW(14), DK__EO_ROW(15) }

typedef int16_t dk__entry_cells[16][64];

#ifdef DISPATCH_STATIC
DK__ENTRY_ENUMS
#endif

DK__TABLE(dk__entry_cells, dk__entry_by_backend_bit, DK__ENTRY_BY_BACKEND_BIT_INIT)

/* By slot. */
#define DK__BC_SLOT_OFFSET(name, own_ag, autocast, functional, f) (int16_t)(DK__EOF_##f + (DK_##name##Bit - 1) * DK__ESF_##f),

#define DK__FK_SLOT_OFFSETS(name, pb, prefix, roles, extra)                     \
    DK__PER_BACKEND_##pb(DK_FORALL_BACKEND_COMPONENTS(DK__BC_SLOT_OFFSET, name)) \
    DK__NOT_PER_BACKEND_##pb((int16_t)DK__EOF_##name,)

#define DK__ENTRY_BY_SLOT_INIT() { 0, DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_SLOT_OFFSETS, ~) }

typedef int16_t dk__slot_entry_offsets[DK_NUM_SLOTS];

DK__TABLE(dk__slot_entry_offsets, dk__entry_by_slot, DK__ENTRY_BY_SLOT_INIT)

/* One slot of an operator's table: the kernel record, and beside it the
   record's fn, NULL when a call takes the slow path (a boxed kernel, a
   fallback, a fallthrough, an ambiguity, a missing kernel). A call reads
   both from one cache line and never the record itself: the record is
   only handed to the kernel. Read with dk_op_table_entry(). */
DK_INLINE const dk_table_entry *dk_op_table_entry(const dk_op_table *t, int s) {
    return (const dk_table_entry *)(const void *)((const char *)t + DK__ENTRY_AT(0) + dk__entry_by_slot[s]);
}

/* Backend b's row of a table: its fallthrough mask and the entry of its
   slot of the first per-backend functionality (Dense: CPU, CUDA, ...), in
   one aligned 32 bytes, so that a call ending at a backend kernel reads its
   mask and its kernel from one cache line. */
DK_INLINE uint64_t dk_op_table_nonfallthrough(const dk_op_table *t, int b) { return t->rows[b].nonfallthrough; }

/* An entry's kernel record (read with acquire: see dk__entry_set). */
#define DK__ENTRY_KERNEL(e) DK__LOAD_ACQ(&(e)->kernel)

/* DK_DEBUG_READS (Note [One read primitive]): stops the program, naming
   fn, unless this thread is inside a read section. Under DK_CALL_EPOCHS
   the public accessors below check that their caller brackets them (in
   the default build they may be used anywhere between quiescent points). */
DK_API void dk__read_check(const char *fn);

#if defined(DK_DEBUG_READS) && defined(DK_CALL_EPOCHS)
#define DK__CALLER_READ_CHECK(fn) dk__read_check(fn)
#else
#define DK__CALLER_READ_CHECK(fn) ((void)0)
#endif

/* Everything a call reads of an operator, as one immutable snapshot: the
   dispatch table, the fallthrough masks and what the def says (a pointer
   to the def's record of it). A change
   builds a new snapshot and publishes it with one release store, so a call
   sees the state before or the state after a registration, never a mix
   (WHAT A PROGRAM DOES in the manual). The slots live in two places (the backend
   rows and `entries`); dk_op_table_entry() finds a slot's entry. */
DK_INLINE const dk_op_table *dk_op_table_of(const dk_operator *op) {
    DK__CALLER_READ_CHECK("dk_op_table_of");
    return DK__LOAD_ACQ(&op->table);
}

/* A table slot without an operator-level kernel holds its registry's
   missing record of that slot; a boxed backend fallback registered at the
   slot is read from the registry (Note [Resolution]). dk__deferred gives
   what such a record stands for now: the fallback, or k itself. */
DK_API const dk_kernel *dk__deferred(const dk_operator *op, const dk_kernel *k);

/* The pointers dk_op_slot_kernel, dk_op_schema and dk_op_function_schema return point into what the
   registry retires when the def or kernel goes: use them before this
   thread's next quiescent point (default mode) or, under DK_CALL_EPOCHS,
   between dk_call_enter() and dk_call_exit() around the call and the use
   (outside a call, a retired table may be freed at any time; there
   DK_DEBUG_READS stops a call of them outside a bracket). */
/* The kernel record a call would run at a slot (dk_ks_slot). */
DK_INLINE const dk_kernel *dk_op_slot_kernel(const dk_operator *op, int slot) {
    const dk_kernel *k;
    DK__CALLER_READ_CHECK("dk_op_slot_kernel");
    k = DK__ENTRY_KERNEL(dk_op_table_entry(dk_op_table_of(op), slot));
    return k->kind == DK_KERNEL_MISSING ? dk__deferred(op, k) : k;
}

/* What the def says (dk_op_def_info), or NULL without a def. */
DK_INLINE const dk_op_def_info *dk__op_def(const dk_op_table *t) { return DK__LOAD_ACQ(&t->def); }

/* What an operator's def says, as boxed calls and inspection read it (a
   snapshot's `def`): the parsed schema (read-only; its text is c10's
   normalised form, its dispatch_args bit j says the j-th value from the top
   of a boxed call's stack is a dispatch argument: Tensor, Tensor?,
   Tensor[], Tensor?[]; its num_arguments and num_returns), per argument its
   default as a value (NONE tag if none), the boxing adapters (or NULL), the
   tags (bit DK_TAG_x) and the alias-analysis kind. Immutable once
   published, but for `adapters`, which dk_op_set_adapters may set, or
   replace with adapters of the same signature (an atomic pointer: read it
   once, with acquire). */
/* The def's parsed schema (arguments, types, defaults, alias annotations,
   return names; see dk_schema), or NULL without a def. Read-only. */
DK_INLINE const struct dk_schema *dk_op_function_schema(const dk_operator *op) {
    const dk_op_def_info *d;
    DK__CALLER_READ_CHECK("dk_op_function_schema");
    d = dk__op_def(dk_op_table_of(op));
    return d ? d->parsed : NULL;
}

DK_API dk_status dk__registry_create(const dk_registry_desc *desc, dk_registry **out, const char *signature);

/* def: an operator schema "ns::name.overload(args) -> returns". dk_def_with
   also takes the options above (NULL = none): boxing adapters (gen/ passes
   its generated ones; they belong to the def and go with it; gen/'s of
   another schema are DK_ERR_WRONG_SIGNATURE, see dk_op_set_adapters, after
   DK_ERR_DUPLICATE_DEF for a name defined already), tags, alias analysis;
   a bad tag or alias-analysis value is DK_ERR_BAD_ARGUMENT. */
DK_API dk_status dk__def(dk_registry *r, const char *schema, const dk_op_adapters *adapters, const char *file,
                         int line, dk_registration **out, const char *signature);

/* impl: a kernel for one key of an operator (runtime or alias key;
   DK_CatchAll, the value of DK_Undefined: the catch-all, registered as
   CompositeImplicitAutograd; in a DK_LIBRARY_IMPL block, no key given
   (DK_Undefined) is the block's key). The operator need
   not be defined yet. A kernel with a signature (typed registration) whose
   signature differs from another live typed kernel's of the operator, or
   (gen/'s, in schema words) from the def's schema's, is refused with
   DK_ERR_WRONG_SIGNATURE naming both and both sites (c10's "Mismatch in
   kernel C++ signatures"); so is a def whose schema differs from the typed
   kernels registered before it. */
DK_API dk_status dk__impl(dk_registry *r, const char *op_name, dk_key key, dk_kernel_desc kernel,
                          const char *file, int line, dk_registration **out, const char *signature);

/* fallback: a boxed kernel (or a fallthrough) for every operator at one key;
   an alias key registers every runtime key of the alias. */
DK_API dk_status dk__fallback(dk_registry *r, dk_key key, dk_kernel_desc kernel,
                              const char *file, int line, dk_registration **out, const char *signature);

DK_API dk_status dk__def_with(dk_registry *r, const char *schema, const dk_def_options *opts, const char *file,
                              int line, dk_registration **out, const char *signature);

DK_API dk_status dk__library_open(dk_registry *r, dk_library_kind kind, const char *ns, dk_key key,
                                  const char *file, int line, dk_library **out, const char *signature);

DK_API dk_status dk__library_run(dk_registry *r, dk_library_kind kind, const char *ns, dk_key key,
                                 dk_library_block block, const char *file, int line, dk_library **out,
                                 const char *signature);

/* Static registration before main (GCC / Clang constructors):
       DK_LIBRARY(myops, m) { dk_library_def(m, "add(Tensor a, Tensor b) -> Tensor"); }
       DK_LIBRARY_IMPL(myops, CPU, m) { dk_library_impl(m, "add", DK_Undefined, dk_unboxed(DK_FN(add_cpu), NULL)); }
   Each block registers into dk_registry_default() when its object is
   loaded and closes its library when the object is unloaded by dlclose:
   everything it registered goes away, and the unload waits until no
   thread can be running its kernels (dk_library_unload does the same
   before dlclose, outside the loader's lock). At exit it does nothing
   (threads may still be calling). Without constructors
   (or when a static library would drop the object), write the block as a
   function and call dk_library_run() / dk_library_close() yourself. */
DK_API dk_status dk__library_static(dk_library_kind kind, const char *ns, dk_key key, dk_library_block block,
                                    const char *file, int line, dk_library **slot, const char *signature);

/* A static block's destructor: closes its library and waits (as
   dk_registry_synchronize) for the threads that may still run its kernels;
   at process exit it does nothing (threads may still be calling). */
DK_API void dk__library_static_close(dk_library **slot);

/* >>tls ---------------------------------------------------------------------

   Thread-local included / excluded keysets, initialised to c10's defaults
   (included DK_KS_DEFAULT_INCLUDED, excluded DK_KS_DEFAULT_EXCLUDED) by the
   TLS image itself: constants, so no guard and no constructor (c10 XORs
   its state with the defaults to get this from zero). Next to them, what a
   call needs pre-combined: keep = backend bits | ~excluded, so the call's
   keyset is (args | included) & keep; and included_row, the byte offset
   in a table of the backend row (see dk__row) of included's highest
   backend bit (0 without one): the 1.13.1 preset's slot backend is the
   higher of the arguments' and this one. Initial-exec TLS where the platform
   has it (no __tls_get_addr call when dispatch.h is in a shared library). */

/* initial-exec on ELF systems whose dlopen takes it (glibc keeps static TLS
   for late-loaded objects; musl refuses to load them, so Linux without
   glibc gets the compiler's default model), in code built for a shared
   object: an executable's (position-independent or not) gets initial-exec
   or better by default, and local-exec for what it defines, which GCC does
   not take once initial-exec is asked for (one load and one register less
   on a call path) */
#ifndef DK_TLS_MODEL
#if (defined(__GNUC__) || defined(__clang__)) && defined(__ELF__) && !defined(DK_SINGLE_THREADED) && \
    (defined(__GLIBC__) || !defined(__linux__)) && (defined(__PIC__) && !defined(__PIE__))
#define DK_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#define DK_TLS_MODEL
#endif
#endif

#define DK__TLS_DEFAULTS { DK__R_DEFAULT_INCLUDED, DK__R_BACKENDS | ~DK__R_DEFAULT_EXCLUDED, DK__R_DEFAULT_EXCLUDED, 0 }

/* A thread's record in the list writers scan (Note [Reclamation]): under
   call epochs where its thread's call word is, otherwise the epoch of its
   last quiescent point. */
typedef struct dk__reader {
    const uint64_t *ctr;          /* call epochs: its thread's dk__rd.ctr while attached (under dk__threads_lock) */
    uint64_t qs;                  /* the epoch at its last quiescent point; 0 = not waited for */
    struct dk__reader *next;      /* every record ever attached (reused, freed at unload) */
    int in_use;
    unsigned id;                  /* dk_thread_id() */
} dk__reader;

/* A thread's side. ctr, the call word (call epochs): bits 0-22 count the
   calls the thread is inside, bit 23 (DK__CTR_SLOW) says its next
   outermost call takes the out-of-line way (not attached yet, or no
   asymmetric barrier: it fences), bits 24-63 the epoch its outermost call
   entered at (the low 40 bits of it: writers rebuild the rest). nesting
   counts the out-of-line calls and hooks the thread is inside (default
   mode). exited: the thread's exit destructor has run (call epochs): its
   word is never linked again, its later calls are late ones (see
   dk__late_calls; DK__CTR_SLOW stays set). rec: its record, once
   attached. */
typedef struct dk__reader_tls { uint64_t ctr; unsigned nesting; int exited; dk__reader *rec; } dk__reader_tls;

#define DK__CTR_NEST ((uint64_t)0x7fffff)

#define DK__CTR_SLOW ((uint64_t)0x800000)

#define DK__CTR_LOW ((uint64_t)0xffffff)

#define DK__CTR_SHIFT 24

#define DK__READER_TLS_INIT { DK__CTR_SLOW, 0, 0, NULL }

#ifdef DISPATCH_STATIC
static DK_THREAD_LOCAL dk_tls_state dk__tls DK_TLS_MODEL = DK__TLS_DEFAULTS;
static DK_THREAD_LOCAL dk__reader_tls dk__rd DK_TLS_MODEL = DK__READER_TLS_INIT;
static dk_trace_fn dk__trace_hook;
static uintptr_t dk__fn_mask = ~(uintptr_t)0;
static uint64_t dk__epoch DK__UNUSED = 1;
static uint64_t dk__gp_ctr DK__UNUSED = ((uint64_t)1 << DK__CTR_SHIFT) | 1;
static int dk__asymmetric DK__UNUSED;
#else
DK_API DK_THREAD_LOCAL dk_tls_state dk__tls DK__CONFIG_LABEL(dk__tls) DK_TLS_MODEL;
DK_API DK_THREAD_LOCAL dk__reader_tls dk__rd DK_TLS_MODEL;
DK_API dk_trace_fn dk__trace_hook DK__CONFIG_LABEL(dk__trace_hook);
DK_API uintptr_t dk__fn_mask;
DK_API uint64_t dk__epoch;
DK_API uint64_t dk__gp_ctr;
DK_API int dk__asymmetric;
#endif

DK_INLINE dk_keyset dk_tls_included(void) { return dk_ks_raw(dk__tls.included); }

DK_INLINE dk_keyset dk_tls_excluded(void) { return dk_ks_raw(dk__tls.excluded); }

DK_INLINE void dk_tls_set_included(dk_keyset ks) {
    dk__tls.included = ks.repr;
    dk__tls.included_row = dk__backend_index(ks.repr) * sizeof(dk_backend_row);
}

DK_INLINE void dk_tls_set_excluded(dk_keyset ks) {
    dk__tls.excluded = ks.repr;
    dk__tls.keep = DK__R_BACKENDS | ~ks.repr;
}

DK_INLINE int dk_tls_is_included(dk_key k) { return dk_ks_has(dk_tls_included(), k); }

DK_INLINE int dk_tls_is_excluded(dk_key k) { return dk_ks_has(dk_tls_excluded(), k); }

DK_INLINE dk_guard dk__guard(uint64_t included_delta, uint64_t excluded_delta) {
    dk_guard g;
    g.included_delta = included_delta;
    g.excluded_delta = excluded_delta;
    dk_tls_set_included(dk_ks_raw(dk__tls.included ^ included_delta));
    dk_tls_set_excluded(dk_ks_raw(dk__tls.excluded ^ excluded_delta));
    return g;
}

/* Note [Guards]. A push flips bits of this thread's (included, excluded) state and
   returns exactly which ones, as an XOR delta; dk_guard_pop(g) flips those
   same bits back. The exact guarantee:

   - Any order. Pops commute: once every guard pushed after some moment has
     been popped again, in any order and interleaved in any way with other
     pushes and pops, while every guard that was live at that moment is
     still live, the state (included and excluded) is bit for bit what it
     was at that moment. In particular, when all guards are popped the state
     is the one before the first push. This holds as long as only guards
     change the state in between: dk_tls_set_included / _excluded are not
     guards, and pops do not undo them.
   - Properly nested (each pop undoes the most recent live push), every step
     is c10's: dk_guard_include adds only the keys not yet included and its
     pop removes only those (a key that was already included stays
     included); dk_guard_exclude likewise for the excluded set; dk_guard_force
     replaces both sets and its pop restores the ones it replaced. (Backend
     bits count as any other bit: see docs/c10.md.)
   - Out of order, the state between pops is not c10's (c10's guards leave
     it wrong for good): popping a guard flips back its own delta even when a
     later guard (a force, say) has changed those bits since. The state is
     exact again once the later guards are popped too.

   Pop each guard once, on the thread that pushed it. */
DK_INLINE dk_guard dk_guard_include(dk_keyset ks) { return dk__guard(ks.repr & ~dk_tls_included().repr, 0); }

DK_INLINE dk_guard dk_guard_exclude(dk_keyset ks) { return dk__guard(0, ks.repr & ~dk_tls_excluded().repr); }

DK_INLINE dk_guard dk_guard_force(dk_keyset included, dk_keyset excluded) {
    return dk__guard(included.repr ^ dk_tls_included().repr, excluded.repr ^ dk_tls_excluded().repr);
}

DK_INLINE void dk_guard_pop(dk_guard g) {
    dk_tls_set_included(dk_ks_raw(dk__tls.included ^ g.included_delta));
    dk_tls_set_excluded(dk_ks_raw(dk__tls.excluded ^ g.excluded_delta));
}

/* c10 at::AutoDispatchBelowAutograd, AutoDispatchBelowADInplaceOrView,
   AutoDispatchSkipFunctionalize. The two keysets are read from a table
   (Note [Tables in one unit]): an immediate operand becomes a load of the
   same length, and a unit that includes the header does not expand the
   role lists (what each costs a C++ compiler: docs/bench.md). */
#define DK__GUARD_SETS_INIT() \
    { DK__R_AUTOGRAD, DK__R_AUTOGRAD_WITH_INPLACE_VIEW, DK__AGR_FBIT(DK__KEY_FUNCTIONALIZE) }

typedef uint64_t dk__guard_keysets[3];

DK__TABLE(dk__guard_keysets, dk__guard_sets, DK__GUARD_SETS_INIT)

DK_INLINE dk_guard dk_guard_below_autograd(void) { return dk_guard_exclude(dk_ks_raw(dk__guard_sets[0])); }

DK_INLINE dk_guard dk_guard_below_inplace_view(void) { return dk_guard_exclude(dk_ks_raw(dk__guard_sets[1])); }

DK_INLINE dk_guard dk_guard_skip_functionalize(void) { return dk_guard_exclude(dk_ks_raw(dk__guard_sets[2])); }

/* >>call ---------------------------------------------------------------------

   A kernel is  R fn(const dk_kernel *kernel, dk_keyset ks, args...).
   dk_dispatch_kernel() computes c10's dispatch keyset
       ((args | tls.included) - tls.excluded) & nonfallthrough[backend index]
   and returns the kernel record of its slot; dk_redispatch_kernel() is redispatch's:
   the slot of ks as given, no TLS, no mask. A record whose fn is NULL (boxed
   kernel, backend fallback, fallthrough, ambiguity, missing) goes through
   dk__call_slow_at. DK_DECLARE_OP generates typed call / redispatch functions
   for any signature. */
#if defined(__GNUC__) || defined(__clang__)
#define DK__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define DK__LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define DK__UNLIKELY(x) (x)
#define DK__LIKELY(x) (x)
#endif

DK_API void dk__trace(const dk_operator *op, dk_keyset ks, int is_redispatch);

/* A traced kernel call (a typed call's _traced, dk_trace_begin, a boxed
   call): dk__trace_call reports it to the hook (unless DK__TRACE_TOLD: the
   dispatch primitive did) or, while a timeline records, opens its event
   and returns a token for dk__trace_return, which closes it (0: nothing
   open). flags: 1 a redispatch, DK__TRACE_BOXED, DK__TRACE_TOLD. */
#define DK__TRACE_BOXED 2

#define DK__TRACE_TOLD 4

DK_API unsigned dk__trace_call(const dk_operator *op, dk_keyset ks, const dk_kernel *k, int flags);

DK_API void dk__trace_return(unsigned token);

DK_API void dk__reader_attach(void);

DK_API void dk__call_enter_slow(void);

DK_API void dk__call_exit_late(void);

/* DK_DEBUG_THREADS, default build: stops a call from a thread that has
   not declared itself (no quiescent record) once some thread has
   (DK_DEBUG_THREADS in the manual's CONFIGURATION). */
DK_API void dk__thread_check(void);

#if defined(DK_DEBUG_THREADS) && !defined(DK_CALL_EPOCHS)
#define DK__THREAD_CHECK() dk__thread_check()
#else
#define DK__THREAD_CHECK() ((void)0)
#endif

/* Brackets of a call under DK_CALL_EPOCHS (the typed calls and boxed calls
   use them; a program that calls dk_dispatch_kernel / dk_redispatch_kernel and then the
   kernel itself brackets both): while any thread is inside, memory it may
   read is not freed and dk_registry_synchronize waits for it. Nest freely. Without
   DK_CALL_EPOCHS they compile to nothing.
   One thread-local word (dk__reader_tls.ctr) is all they touch: the
   outermost enter copies dk__gp_ctr (the epoch, shifted, with a count of
   1) into it, then a compiler barrier -- the writers' membarrier is the
   other half of the fence (Note [Reclamation]); a nested enter adds 1; an
   exit subtracts 1 (a release store). A thread not attached yet, or one
   that must fence (no membarrier), has DK__CTR_SLOW set while outside
   calls: the same test sends it to dk__call_enter_slow, as does a count
   about to overflow. A thread whose exit destructor has run (exited) has
   it set too: its outermost calls are late ones, counted where writers
   see them (dk__late_calls), and dk_call_exit's test of exited sends
   their last exit to dk__call_exit_late. The typed calls' inline way
   (dk__call_enter_outermost) is never a late one: its exit is the plain
   decrement (dk__call_exit_attached). */
#ifdef DK_CALL_EPOCHS
/* The outermost enter of an attached thread with membarrier: 1 when it
   entered, 0 when dk_call_enter must (nested, or the slow way). Only its
   own thread writes the word (writers read it): its reads are plain, which
   lets a compiler test it in memory; its writes are atomic. */
DK_INLINE int dk__call_enter_outermost(void) {
    if (DK__UNLIKELY((uint32_t)dk__rd.ctr & (uint32_t)DK__CTR_LOW)) return 0;   /* GCC: one test in memory */
    DK__STORE_RLX(&dk__rd.ctr, DK__LOAD_RLX64(&dk__gp_ctr));
    DK__COMPILER_BARRIER();   /* the word is stored before any table is read */
    return 1;
}
#endif

DK_INLINE void dk_call_enter(void) {
#ifdef DK_CALL_EPOCHS
    uint64_t c = dk__rd.ctr;
    if (DK__LIKELY((c & DK__CTR_LOW) == 0)) {
        DK__STORE_RLX(&dk__rd.ctr, DK__LOAD_RLX64(&dk__gp_ctr));
        DK__COMPILER_BARRIER();   /* the word is stored before any table is read */
    } else if (DK__LIKELY(((c + 1) & DK__CTR_NEST) > 1)) {
        DK__STORE_RLX(&dk__rd.ctr, c + 1);
    } else {
        dk__call_enter_slow();
    }
#endif
}

#ifdef DK_CALL_EPOCHS
/* The exit of a call that is not a late one. */
DK_INLINE void dk__call_exit_attached(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(DK__TSAN)
    /* one instruction: x86's stores are releases; the clobber keeps the
       call's reads before it (writers read the word with an atomic load) */
    __asm__ __volatile__("subq $1, %0" : "+m"(dk__rd.ctr) : : "memory");
#else
    DK__STORE_REL(&dk__rd.ctr, dk__rd.ctr - 1);
#endif
}
#endif

DK_INLINE void dk_call_exit(void) {
#ifdef DK_CALL_EPOCHS
    if (DK__UNLIKELY(dk__rd.exited)) dk__call_exit_late();
    else dk__call_exit_attached();
#endif
}

/* The typed calls' inline way for a caller outside the header (gen/'s
   bindings, which cannot name dk__call_enter_outermost): 1 when the
   outermost enter of an attached thread happened here, and then the exit
   is dk_call_exit_outermost, the plain decrement (such an enter is never
   a late one); 0 when the caller must bracket with dk_call_enter and
   dk_call_exit instead (nested, the thread's first call, no membarrier).
   Without DK_CALL_EPOCHS: 1, and the exit nothing. */
DK_INLINE int dk_call_enter_outermost(void) {
#ifdef DK_CALL_EPOCHS
    return dk__call_enter_outermost();
#else
    return 1;
#endif
}

DK_INLINE void dk_call_exit_outermost(void) {
#ifdef DK_CALL_EPOCHS
    dk__call_exit_attached();
#endif
}

/* c10's dispatch keyset, written once (dk_dispatch_kernel, dk_explain): the
   arguments with the thread's included keys, minus its excluded ones
   (backend bits are never excluded), ... */
DK_INLINE uint64_t dk__call_keyset_after_tls(uint64_t args) { return (args | dk__tls.included) & dk__tls.keep; }

/* ... then the operator's fallthrough mask of the highest backend, b (the
   masks leave backend bits alone, so b is also the slot's backend). */
DK_INLINE uint64_t dk__row_mask(const dk_op_table *tab, size_t row);

DK_INLINE size_t dk__row(size_t b);

DK_INLINE uint64_t dk__call_keyset_masked(const dk_op_table *tab, uint64_t args, uint64_t ks, size_t row) {
#if DK_C10_VERSION == 11301 /* 1.13.1 picks the per-backend mask by the arguments' backend */
    (void)row;
    return ks & dk__row_mask(tab, dk__row(dk__backend_index(args)));
#else
    (void)args;
    return ks & dk__row_mask(tab, row);
#endif
}

/* Backend b's row: its byte offset in a table, row = b * 32, is also its
   row of 64 cells in dk__entry_by_backend_bit times 2 (b * 128 bytes), so
   one shift serves the mask and the slot (a plain [b][bit] index would
   cost the call a second shift). */
DK_INLINE size_t dk__row(size_t b) {
    size_t row = b * sizeof(dk_backend_row);
    DK__OPAQUE(row); /* or gcc computes b * 64 for the cell apart: one instruction more */
    return row;
}

DK_INLINE uint64_t dk__row_mask(const dk_op_table *tab, size_t row) {
    const uint64_t *mask = (const uint64_t *)(const void *)((const char *)tab + offsetof(dk_op_table, rows) + row);
#ifdef DK__TSAN /* a table rewritten in place (out of memory) changes its masks with relaxed stores */
    return DK__LOAD_RLX(mask);
#else
    return *mask;
#endif
}

/* Where a call's entry is: its table and the entry's DK__ENTRY_OFFSET. */
typedef struct dk__entry_ref { const dk_op_table *tab; ptrdiff_t off; } dk__entry_ref;

/* The entry of the slot of keyset ks, whose backend's row is row. */
DK_INLINE dk__entry_ref dk__entry_at(const dk_op_table *tab, uint64_t ks, size_t row) {
    dk__entry_ref e;
    e.tab = tab;
    e.off = (&dk__entry_by_backend_bit[0][0])[row * 2 + dk__msb0(ks)];
    return e;
}

/* The entry's record, then its fn, in this order: a table rewritten in
   place (out of memory, see dk__entry_set) clears an fn before it changes
   the record, so a call that sees a new record sees no fn and takes the
   slow path, which reads the fn from that record. x86-64 (GCC, Clang): two
   loads from table + offset, which a compiler would add up first (one
   instruction more); x86 does not reorder loads. */
DK_INLINE void dk__entry_load(dk__entry_ref e, const dk_kernel **k, dk_fn *fn) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(DK__TSAN)
    __asm__("movq %c[ko](%[t],%[o]), %[k]\n\tmovq %c[fo](%[t],%[o]), %[f]"
            : [k] "=&r"(*k), [f] "=r"(*fn)
            : [t] "r"(e.tab), [o] "r"(e.off), [ko] "i"(DK__ENTRY_AT(0) + offsetof(dk_table_entry, kernel)),
              [fo] "i"(DK__ENTRY_AT(0) + offsetof(dk_table_entry, fn)), "m"(*e.tab));
#else
    const dk_table_entry *p = (const dk_table_entry *)(const void *)((const char *)e.tab + DK__ENTRY_AT(0) + e.off);
    *k = DK__LOAD_ACQ(&p->kernel);
    *fn = DK__LOAD_RLX(&p->fn);
#endif
}

/* The same for a typed call, whose kernel and slow path both take the
   record as their first argument. With the 1.13.1 preset or call epochs
   on x86-64 it is loaded into that register (rdi): GCC otherwise loads it
   elsewhere and moves it, once the slow path is handed the snapshot too
   (one instruction more in bench/shape.sh's loops). The default build of
   the 2.7.1 preset keeps the free choice: forced there, GCC saves an
   instruction its call-epochs build does not, and bench/shape.sh reports
   the bracket one over its target. */
DK_INLINE void dk__entry_load_arg0(dk__entry_ref e, const dk_kernel **k, dk_fn *fn) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(DK__TSAN) && !defined(_WIN32) && \
    (DK_C10_VERSION == 11301 || defined(DK_CALL_EPOCHS))
    __asm__("movq %c[ko](%[t],%[o]), %[k]\n\tmovq %c[fo](%[t],%[o]), %[f]"
            : [k] "=&D"(*k), [f] "=r"(*fn)
            : [t] "r"(e.tab), [o] "r"(e.off), [ko] "i"(DK__ENTRY_AT(0) + offsetof(dk_table_entry, kernel)),
              [fo] "i"(DK__ENTRY_AT(0) + offsetof(dk_table_entry, fn)), "m"(*e.tab));
#else
    dk__entry_load(e, k, fn);
#endif
}

DK_INLINE const dk_kernel *dk__entry_kernel(dk__entry_ref e) {
    const dk_kernel *k;
    dk_fn fn;
    dk__entry_load(e, &k, &fn);
    return k;
}

/* The entry of the slot of ks as given (redispatch), and the entry of a
   call's keyset (computed into *out_ks); the typed calls use these, and
   report to the trace hook on their slow path. */
DK_INLINE dk__entry_ref dk__lookup_in(const dk_op_table *tab, dk_keyset ks) {
    return dk__entry_at(tab, ks.repr, dk__row(dk__backend_index(ks.repr)));
}

DK_INLINE dk__entry_ref dk__lookup(const dk_operator *op, dk_keyset ks) {
    return dk__lookup_in(DK__LOAD_ACQ(&op->table), ks);
}

/* In snapshot tab (one snapshot: mask and slot agree); boxed calls pass
   the snapshot their schema and adapters came from. */
DK_INLINE dk__entry_ref dk__dispatch_in(const dk_op_table *tab, dk_keyset args, dk_keyset *out_ks) {
    uint64_t ks = dk__call_keyset_after_tls(args.repr);
#if DK_C10_VERSION == 11301
    /* the mask is the arguments' backend's (row_a), the slot the keyset's:
       the higher of the arguments' and the thread's included backends */
    size_t row_a = dk__row(dk__backend_index(args.repr)), row = dk__tls.included_row;
    ks &= dk__row_mask(tab, row_a);
    if (row < row_a) row = row_a;
#else
    size_t row = dk__row(dk__backend_index(ks));
    ks = dk__call_keyset_masked(tab, args.repr, ks, row);
#endif
    out_ks->repr = ks;
    return dk__entry_at(tab, ks, row);
}

DK_INLINE dk__entry_ref dk__dispatch(const dk_operator *op, dk_keyset args, dk_keyset *out_ks) {
    return dk__dispatch_in(DK__LOAD_ACQ(&op->table), args, out_ks);
}

/* Is a trace hook set? Calls test it beside the kernel's fn, in one branch. */
#if defined(DK_NO_TRACE)
#define DK__TRACING() 0
#elif defined(DK__TSAN)
#define DK__TRACING() (DK__LOAD_RLX(&dk__trace_hook) != NULL)
#else
/* A plain read of one aligned pointer that dk_trace_set stores atomically:
   the compiler folds it into a compare with memory (one instruction less at
   a call site than the atomic load, which it never folds). */
#define DK__TRACING() (dk__trace_hook != NULL)
#endif

/* The fn a typed call runs directly: the entry's fn, or NULL (the slow
   path) when it has none or while a trace hook is set (dk_trace_set clears
   dk__fn_mask): one and with memory and one branch at a call site. */
#if defined(DK_NO_TRACE)
#define DK__DIRECT_FN(fn) (fn)
#elif defined(DK__TSAN)
#define DK__DIRECT_FN(fn) ((dk_fn)((uintptr_t)(fn) & DK__LOAD_RLX(&dk__fn_mask)))
#else
#define DK__DIRECT_FN(fn) ((dk_fn)((uintptr_t)(fn) & dk__fn_mask))
#endif

/* dk_redispatch_kernel and dk_dispatch_kernel (below) for a call site that
   calls the kernel itself (gen/'s bindings): *out_table is the snapshot of
   the operator the record was read from (it lives as long as the record),
   and *out_fn the fn to call directly, DK_DECLARE_OP's, read with the
   record from the slot's entry (dk__entry_load_arg0: no load after the
   record's, the record in the kernel's first argument register where
   DK_DECLARE_OP puts it), as dk_kernel_direct_fn would give it from the
   record: NULL while a trace hook is set or when the entry has no fn. They
   tell the trace hook nothing and leave a missing record (fn NULL) as it
   is: the caller hands record and snapshot to its slow path, which reports
   the call with dk_trace_report_begin and calls the record's fn or
   dk_call_packed (which runs the backend fallback a missing record stands
   for) before dk_trace_end; one snapshot, one entry, read once. But for
   the debug checks they call nothing, so a call site keeps no register
   across a call. */
DK_INLINE const dk_kernel *dk_redispatch_kernel_with_fn(const dk_operator *op, dk_keyset ks,
                                                        const dk_op_table **out_table, dk_fn *out_fn) {
    const dk_op_table *t;
    const dk_kernel *k;
    dk_fn fn;
    DK__CALLER_READ_CHECK("dk_redispatch_kernel_with_fn");
    DK__THREAD_CHECK();
    t = DK__LOAD_ACQ(&op->table);
    *out_table = t;
    dk__entry_load_arg0(dk__lookup_in(t, ks), &k, &fn);
    *out_fn = DK__DIRECT_FN(fn);
    return k;
}

DK_INLINE const dk_kernel *dk_dispatch_kernel_with_fn(const dk_operator *op, dk_keyset args, dk_keyset *out_ks,
                                                      const dk_op_table **out_table, dk_fn *out_fn) {
    const dk_op_table *t;
    const dk_kernel *k;
    dk_fn fn;
    DK__CALLER_READ_CHECK("dk_dispatch_kernel_with_fn");
    DK__THREAD_CHECK();
    t = DK__LOAD_ACQ(&op->table);
    *out_table = t;
    dk__entry_load_arg0(dk__dispatch_in(t, args, out_ks), &k, &fn);
    *out_fn = DK__DIRECT_FN(fn);
    return k;
}

DK_INLINE const dk_kernel *dk_redispatch_kernel(const dk_operator *op, dk_keyset ks) {
    const dk_kernel *k;
    DK__CALLER_READ_CHECK("dk_redispatch_kernel");
    DK__THREAD_CHECK();   /* before the trace hook runs */
    if (DK__UNLIKELY(DK__TRACING())) dk__trace(op, ks, 1);
    k = dk__entry_kernel(dk__lookup_in(DK__LOAD_ACQ(&op->table), ks));
    return DK__UNLIKELY(k->kind == DK_KERNEL_MISSING) ? dk__deferred(op, k) : k;
}

DK_INLINE const dk_kernel *dk_dispatch_kernel(const dk_operator *op, dk_keyset args, dk_keyset *out_ks) {
    const dk_kernel *k;
    DK__CALLER_READ_CHECK("dk_dispatch_kernel");
    DK__THREAD_CHECK();
    k = dk__entry_kernel(dk__dispatch_in(DK__LOAD_ACQ(&op->table), args, out_ks));
    if (DK__UNLIKELY(DK__TRACING())) dk__trace(op, *out_ks, 0);
    return DK__UNLIKELY(k->kind == DK_KERNEL_MISSING) ? dk__deferred(op, k) : k;
}

/* The slow path: a boxed kernel or fallback gets (kernel, op, ks, args);
   anything else is reported through the registry's error hook and the
   result is zero-filled. dk__call_slow_at takes the snapshot t that k was
   read from (a typed call's, dk_call_packed's: Note [One read primitive]);
   its first four parameters are the registers DK_DECLARE_OP's _slow0 /
   _slow1 receive k, ks, t and op in, so that they stay where they are;
   args_ks, the arguments' keyset, is for a failed call's message. (Its
   name is new with this shape, dk__call_slow_in's was (op, t, args_ks, ks,
   k, ...): a unit compiled against the older header does not link, and
   DK__ABI_REVISION 1 makes it fail to load too, even lazily bound.) */
DK_API void dk__call_slow_at(const dk_kernel *k, dk_keyset ks, const dk_op_table *t, const dk_operator *op,
                             void *args, void *result, size_t result_size, dk_keyset args_ks);

/* dk_dispatch_kernel / dk_redispatch_kernel, then the call, for typed calls written out in full (gen/dkgen's bindings): a
   kernel record k whose fn is NULL gets the argument pack `args` (boxed
   through the adapters of the def of snapshot t, or handed to a boxed
   kernel as stack->unboxed_args); a failed call is reported (ks standing
   for the arguments' keyset in the message, which describes t) and
   *result zero-filled. t is the snapshot k was read from
   (dk_dispatch_kernel_with_fn, dk_redispatch_kernel_with_fn), so
   that a def replaced since then cannot box the caller's pack: Note [One
   read primitive]. */
DK_INLINE void dk_call_packed(const dk_operator *op, const dk_op_table *t, dk_keyset ks, const dk_kernel *k,
                              void *args, void *result, size_t result_size) {
    dk__call_slow_at(k, ks, t, op, args, result, result_size, ks);
}

/* DK_DECLARE_OP(name, R, keyset_expr, (T1, a1), (T2, a2), ...) defines
     typedef R (*name_fn)(const dk_kernel *, dk_keyset, T1 a1, T2 a2, ...);
     dk_kernel_desc name_kernel(name_fn fn, void *user_data, const char *fn_name);
     typedef struct name_args { T1 a1; T2 a2; ...; R result; } name_args;
     R name_call(const dk_operator *op, T1 a1, T2 a2, ...);
     R name_redispatch(const dk_operator *op, dk_keyset ks, T1 a1, T2 a2, ...);
   keyset_expr computes the arguments' keyset from a1, a2, ...; a boxed
   kernel or fallback receives a name_args* and writes ->result.
   DK_DECLARE_OP_VOID is the same for functions returning nothing. Up to 12
   arguments; a type with a comma in it needs a typedef. */
#define DK__NARGS(...) DK__NARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)

#define DK__NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n

#define DK__MAP(f, ...) DK__XCAT(DK__MAP_, DK__NARGS(__VA_ARGS__))(f, __VA_ARGS__)

#define DK__MAP_1(f, x) f x

#define DK__MAP_2(f, x, ...) f x DK__MAP_1(f, __VA_ARGS__)

#define DK__MAP_3(f, x, ...) f x DK__MAP_2(f, __VA_ARGS__)

#define DK__MAP_4(f, x, ...) f x DK__MAP_3(f, __VA_ARGS__)

#define DK__MAP_5(f, x, ...) f x DK__MAP_4(f, __VA_ARGS__)

#define DK__MAP_6(f, x, ...) f x DK__MAP_5(f, __VA_ARGS__)

#define DK__MAP_7(f, x, ...) f x DK__MAP_6(f, __VA_ARGS__)

#define DK__MAP_8(f, x, ...) f x DK__MAP_7(f, __VA_ARGS__)

#define DK__MAP_9(f, x, ...) f x DK__MAP_8(f, __VA_ARGS__)

#define DK__MAP_10(f, x, ...) f x DK__MAP_9(f, __VA_ARGS__)

#define DK__MAP_11(f, x, ...) f x DK__MAP_10(f, __VA_ARGS__)

#define DK__MAP_12(f, x, ...) f x DK__MAP_11(f, __VA_ARGS__)

#define DK__OP_PARAM(T, n) , T n

#define DK__OP_ARG(T, n) , n

#define DK__OP_FIELD(T, n) T n;

#define DK__OP_PACK(T, n) dk__a.n = n;

#define DK__OP_SIGTYPE(T, n) ", " #T

/* Note [Typed registration]. Typed registration of an operator declared with DK_DECLARE_OP (or
   generated by gen/): the kernel must have the operator's type name_fn, or
   the program does not compile, whatever the warning flags (DK_FN takes any
   function). The record says where it was registered (the caller's
   file:line), the function's name and its C type, which dk_op_state_to_string
   prints:
       DK_IMPL_TYPED(neg, r, "my::neg", DK_CPU, neg_cpu, NULL, &h);
       DK_LIBRARY_IMPL_TYPED(neg, lib, "neg", DK_CPU, neg_cpu, NULL);  (in a block)
       dk_fallback / dk_impl(r, ..., DK_KERNEL(neg, neg_cpu, NULL), &h);
   A kernel of another type is an error that names the type expected:
       error: negative width in bit-field 'wrong_kernel_type__expected_neg_fn'
   (C passes a function of another pointer type with only a warning, which
   gcc before 14 and clang before 16 do not make an error: the registration
   would compile and the call run the kernel with the wrong arguments). In
   C++ the conversion itself is the error. At registration the kernel's C
   type is also compared with the operator's other typed kernels (see
   dk_impl, DK_ERR_WRONG_SIGNATURE).
   DK_KERNEL_TYPE_CHECK(T, fn, field): (void)0 if the function fn has type T
   (a function pointer type), else a compile error naming field (an
   identifier); the typed registration macros and gen/'s use it. In C++ it
   is (void)0: the conversion of fn to T that follows is the check. */
/* name_fn, the kernel type, and name_kernel(fn, user_data, fn_name): a
   dk_kernel_desc that only a kernel of type name_fn converts to, carrying
   the kernel's name and its C type as text. */
#define DK__DECLARE_OP_COMMON(name, R, ...)                                                          \
    typedef R (*name##_fn)(const dk_kernel *dk__kernel, dk_keyset dk__ks DK__MAP(DK__OP_PARAM, __VA_ARGS__)); \
    DK_INLINE DK__UNUSED dk_kernel_desc name##_kernel(name##_fn dk__f, void *dk__ud, const char *dk__name) {   \
        return dk_kernel_named(dk_unboxed(DK_FN(dk__f), dk__ud), dk__name,                                   \
                               #R "(const dk_kernel *, dk_keyset" DK__MAP(DK__OP_SIGTYPE, __VA_ARGS__) ")"); \
    }

#if defined(__GNUC__) || defined(__clang__)
#define DK__NOINLINE __attribute__((noinline))
#else
#define DK__NOINLINE
#endif

/* An operator's _slow keeps its shape in every unit: in one that never
   redispatches the operator, every call passes dk__re = 0, and GCC would
   clone _slow with that argument propagated (and dropped), so that its
   callers no longer find the kernel's arguments in the registers they came
   in and gain moves (docs/bench.md counts them).
   noclone keeps the one out-of-line function; Clang does not clone it. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
#define DK__SLOW_PATH __attribute__((noinline, noclone))
#else
#define DK__SLOW_PATH DK__NOINLINE
#endif

/* Each operator gets helpers named dk__declared_<name>_..., out of the way
   of any kernel's name and of the header's own: _invoke, which calls an unboxed kernel directly unless
   tracing is on, and otherwise tail-calls _slow0 or _slow1 (a call's or a
   redispatch's: so a call site needs no
   stack frame of its own; _slow takes the kernel's first two arguments, so
   both calls find them in the same registers, then the snapshot the record
   came from, Note [One read primitive]); _slow, out of line, which
   hands a call to _traced while a trace hook is set, then calls the
   record's fn or, for a record
   without one (boxed kernel, fallback, fallthrough, ambiguity, missing),
   packs the arguments for dk__call_slow_at; _traced (its parameters in
   _slow's order, then the flag), the same between
   dk__trace_call and dk__trace_return (the hook's report, a timeline's
   event with its end: no tail call); _dispatch, a call's dispatch
   step; and the entries <name>_call and <name>_redispatch. */
/* _slow<re>: re (0 a call, 1 a redispatch) is in its name, so that the
   entry the inline path read takes the argument register the flag took */
#define DK__OP_SLOW(name, R, ret, keyset_expr, result_ptr, result_size, re, ...)                             \
    static DK__SLOW_PATH DK__UNUSED R dk__declared_##name##_slow##re(const dk_kernel *dk__k, dk_keyset dk__ks,          \
                                                 const dk_op_table *dk__tab, const dk_operator *dk__o         \
                                                 DK__MAP(DK__OP_PARAM, __VA_ARGS__)) {                        \
        name##_args dk__a;                                                                                    \
        if (DK__TRACING())                                                                                    \
            DK__OP_TAIL_##ret(R, dk__declared_##name##_traced(dk__k, dk__ks, dk__tab, dk__o, re DK__MAP(DK__OP_ARG, __VA_ARGS__))) \
        if (dk__k->fn) {                                                                                      \
            DK__OP_TAIL_##ret(R, ((name##_fn)dk__k->fn)(dk__k, dk__ks DK__MAP(DK__OP_ARG, __VA_ARGS__)))       \
        }                                                                                                     \
        DK__MAP(DK__OP_PACK, __VA_ARGS__)                                                                     \
        dk__call_slow_at(dk__k, dk__ks, dk__tab, dk__o, &dk__a, result_ptr, result_size, (keyset_expr));       \
        DK__OP_RESULT_##ret                                                                                   \
    }

/* DK_DECLARE_OP(name, R, keyset_expr, (T1, a1), (T2, a2), ...) declares a
   typed operator of up to 12 arguments; keyset_expr computes the
   arguments' keyset from a1, a2, ... It defines, in the user's namespace:
       name_fn          the kernel's type: R (*)(const dk_kernel *, dk_keyset, T1, T2, ...)
       name_kernel      dk_kernel_desc name_kernel(name_fn, void *user_data, const char *fn_name)
       name_args        the argument pack { T1 a1; T2 a2; ...; R result; } a
                        boxed kernel gets as stack->unboxed_args
       name_call        R name_call(const dk_operator *, T1, T2, ...): dispatch and call
       name_redispatch  R name_redispatch(const dk_operator *, dk_keyset ks, T1, ...):
                        call the kernel of ks as given (no TLS, no mask)
   and the helpers dk__declared_name_dispatch, dk__declared_name_invoke,
   dk__declared_name_slow0 / _slow1 and dk__declared_name_traced (and,
   under DK_CALL_EPOCHS, dk__declared_name_call_any / _redispatch_any).
   DK_DECLARE_OP_VOID(name, keyset_expr, ...) is the same for void. */
#define DK__DECLARE_OP_BODY(name, R, ret, keyset_expr, result_ptr, result_size, ...)                      \
    static DK__NOINLINE DK__UNUSED R dk__declared_##name##_traced(const dk_kernel *dk__k, dk_keyset dk__ks,              \
                                                 const dk_op_table *dk__tab, const dk_operator *dk__o, int dk__re \
                                                 DK__MAP(DK__OP_PARAM, __VA_ARGS__)) {                        \
        name##_args dk__a;                                                                                    \
        unsigned dk__t = dk__trace_call(dk__o, dk__ks, dk__k, dk__re);                                        \
        if (dk__k->fn) {                                                                                      \
            DK__OP_KEEP_##ret(((name##_fn)dk__k->fn)(dk__k, dk__ks DK__MAP(DK__OP_ARG, __VA_ARGS__)))          \
        } else {                                                                                              \
            DK__MAP(DK__OP_PACK, __VA_ARGS__)                                                                 \
            dk__call_slow_at(dk__k, dk__ks, dk__tab, dk__o, &dk__a, result_ptr, result_size, (keyset_expr));   \
        }                                                                                                     \
        dk__trace_return(dk__t);                                                                              \
        DK__OP_RESULT_##ret                                                                                   \
    }                                                                                                         \
    DK__OP_SLOW(name, R, ret, keyset_expr, result_ptr, result_size, 0, __VA_ARGS__)                           \
    DK__OP_SLOW(name, R, ret, keyset_expr, result_ptr, result_size, 1, __VA_ARGS__)                           \
    DK_INLINE DK__UNUSED R dk__declared_##name##_invoke(const dk_operator *dk__o, dk_keyset dk__ks, dk__entry_ref dk__e,     \
                                         int dk__re DK__MAP(DK__OP_PARAM, __VA_ARGS__)) {                     \
        const dk_kernel *dk__k;                                                                               \
        dk_fn dk__raw;                                                                                        \
        name##_fn dk__f;                                                                                      \
        dk__entry_load_arg0(dk__e, &dk__k, &dk__raw);                                                         \
        dk__f = (name##_fn)DK__DIRECT_FN(dk__raw);                                                            \
        if (DK__LIKELY(dk__f != NULL))                                                                        \
            DK__OP_TAIL_##ret(R, dk__f(dk__k, dk__ks DK__MAP(DK__OP_ARG, __VA_ARGS__)))                       \
        if (dk__re)                                                                                           \
            DK__OP_TAIL_##ret(R, dk__declared_##name##_slow1(dk__k, dk__ks, dk__e.tab, dk__o DK__MAP(DK__OP_ARG, __VA_ARGS__))) \
        DK__OP_TAIL_##ret(R, dk__declared_##name##_slow0(dk__k, dk__ks, dk__e.tab, dk__o DK__MAP(DK__OP_ARG, __VA_ARGS__))) \
    }                                                                                                         \
    DK__DECLARE_OP_ENTRIES(name, R, ret, keyset_expr, __VA_ARGS__)

#define DK__OP_RESULT_return return dk__a.result;

#define DK__OP_RESULT_void

#define DK__OP_KEEP_return(call) dk__a.result = call;

#define DK__OP_KEEP_void(call) call;

/* DK__OP_BODY_<ret>(R, call, other): the body of an entry; under
   DK_CALL_EPOCHS the call runs between an enter and dk_call_exit. The
   outermost call of an attached thread enters inline; any other (nested,
   the thread's first, no membarrier, a late call after the thread's exit
   destructor) tail-calls `other`, an out-of-line copy of the entry with
   the whole dk_call_enter and dk_call_exit: nothing stays live
   across a call to the slow way, so the call site saves no register for
   it (DK__OP_BRACKETED). */
#define DK__OP_TAIL_return(R, call) return call;

#define DK__OP_TAIL_void(R, call) { call; return; }

#ifdef DK_CALL_EPOCHS
#define DK__OP_BODY_return(R, call, other) \
    R dk__r; if (!dk__call_enter_outermost()) return other; dk__r = call; dk__call_exit_attached(); return dk__r;
#define DK__OP_BODY_void(R, call, other) \
    if (!dk__call_enter_outermost()) { other; return; } call; dk__call_exit_attached();
#define DK__OP_ENTERED_return(R, call) R dk__r; dk_call_enter(); dk__r = call; dk_call_exit(); return dk__r;
#define DK__OP_ENTERED_void(R, call) dk_call_enter(); call; dk_call_exit();
/* the out-of-line copies of name_call and name_redispatch */
#define DK__OP_BRACKETED(name, R, ret, ...)                                                          \
    static DK__NOINLINE DK__UNUSED R dk__declared_##name##_call_any(const dk_operator *dk__o              \
                                                        DK__MAP(DK__OP_PARAM, __VA_ARGS__)) {        \
        DK__OP_ENTERED_##ret(R, dk__declared_##name##_dispatch(dk__o DK__MAP(DK__OP_ARG, __VA_ARGS__)))   \
    }                                                                                                \
    static DK__NOINLINE DK__UNUSED R dk__declared_##name##_redispatch_any(const dk_operator *dk__o,       \
                                      dk_keyset dk__ks DK__MAP(DK__OP_PARAM, __VA_ARGS__)) {         \
        DK__OP_ENTERED_##ret(R, dk__declared_##name##_invoke(dk__o, dk__ks, dk__lookup(dk__o, dk__ks), 1   \
                                                DK__MAP(DK__OP_ARG, __VA_ARGS__)))                   \
    }
#else
#define DK__OP_BODY_return(R, call, other) DK__THREAD_CHECK(); return call;
#define DK__OP_BODY_void(R, call, other) { DK__THREAD_CHECK(); call; return; }
#define DK__OP_BRACKETED(name, R, ret, ...)
#endif

#define DK__DECLARE_OP_ENTRIES(name, R, ret, keyset_expr, ...)                                       \
    DK_INLINE DK__UNUSED R dk__declared_##name##_dispatch(const dk_operator *dk__o DK__MAP(DK__OP_PARAM, __VA_ARGS__)) { \
        dk_keyset dk__ks;                                                                            \
        dk__entry_ref dk__e = dk__dispatch(dk__o, (keyset_expr), &dk__ks);                          \
        DK__OP_TAIL_##ret(R, dk__declared_##name##_invoke(dk__o, dk__ks, dk__e, 0 DK__MAP(DK__OP_ARG, __VA_ARGS__))) \
    }                                                                                                \
    DK__OP_BRACKETED(name, R, ret, __VA_ARGS__)                                                      \
    DK_INLINE DK__UNUSED R name##_call(const dk_operator *dk__o DK__MAP(DK__OP_PARAM, __VA_ARGS__)) {          \
        DK__OP_BODY_##ret(R, dk__declared_##name##_dispatch(dk__o DK__MAP(DK__OP_ARG, __VA_ARGS__)),       \
                          dk__declared_##name##_call_any(dk__o DK__MAP(DK__OP_ARG, __VA_ARGS__)))          \
    }                                                                                                \
    DK_INLINE DK__UNUSED R name##_redispatch(const dk_operator *dk__o, dk_keyset dk__ks                        \
                                  DK__MAP(DK__OP_PARAM, __VA_ARGS__)) {                              \
        DK__OP_BODY_##ret(R, dk__declared_##name##_invoke(dk__o, dk__ks, dk__lookup(dk__o, dk__ks), 1             \
                                            DK__MAP(DK__OP_ARG, __VA_ARGS__)),                       \
                          dk__declared_##name##_redispatch_any(dk__o, dk__ks DK__MAP(DK__OP_ARG, __VA_ARGS__))) \
    }

/* For a caller that dispatches with dk_dispatch_kernel / dk_redispatch_kernel
   and calls the kernel itself: dk_kernel_direct_fn(k) is the fn to call
   directly, NULL while a trace hook is set, and then the caller brackets
   its call of the kernel with
       unsigned t = dk_trace_begin(op, ks, k, is_redispatch); ...; dk_trace_end(t);
   so a timeline sees the call with its duration. The dispatch primitive
   already told the trace hook: these two report to a timeline only. Off,
   dk_trace_begin is a test that returns 0 and dk_trace_end(0) nothing.
   After their _with_fn forms (gen/'s bindings dispatch with
   dk_dispatch_kernel_with_fn / dk_redispatch_kernel_with_fn, whose fn is
   this one's, read from the entry), which tell the hook nothing,
   dk_trace_report_begin takes dk_trace_begin's place: it tells the hook,
   then opens the timeline's event (the same token for dk_trace_end). */
DK_INLINE dk_fn dk_kernel_direct_fn(const dk_kernel *k) { return DK__DIRECT_FN(k->fn); }

DK_INLINE unsigned dk_trace_begin(const dk_operator *op, dk_keyset ks, const dk_kernel *k, int is_redispatch) {
    return DK__UNLIKELY(DK__TRACING()) ? dk__trace_call(op, ks, k, (is_redispatch ? 1 : 0) | DK__TRACE_TOLD) : 0u;
}

DK_INLINE unsigned dk_trace_report_begin(const dk_operator *op, dk_keyset ks, const dk_kernel *k, int is_redispatch) {
    return DK__UNLIKELY(DK__TRACING()) ? dk__trace_call(op, ks, k, is_redispatch ? 1 : 0) : 0u;
}

DK_INLINE void dk_trace_end(unsigned token) {
    if (DK__UNLIKELY(token != 0)) dk__trace_return(token);
}

/* A program whose files all include dispatch.h without one of them defining
   DISPATCH_IMPLEMENTATION first fails to link; among the undefined symbols
   the linker lists, this one says why (GCC / Clang; every file that
   includes the header refers to it, DISPATCH_STATIC files excepted):
       undefined reference to `dk_no_file_defines_DISPATCH_IMPLEMENTATION_before_including_dispatch_h'
   The fix: in exactly one .c file,
       #define DISPATCH_IMPLEMENTATION
       #include "dispatch.h"
   or link the library built from it (make lib: libdispatch.a / .so). A
   program that only dlopens the library and takes its functions with
   dlsym defines DK_NO_LINK_CHECK (it links nothing of dispatch.h).
   A unit compiled for a shared object (-fPIC without -fPIE: a plugin)
   refers to the second symbol instead, which dlopen names when the host
   does not export the implementation:
       undefined symbol: dk_plugin_finds_no_dispatch_h_in_its_host__link_the_host_with_rdynamic_or_libdispatch_so
   The fix is in the host, not the plugin (defining DISPATCH_IMPLEMENTATION
   in the plugin gives it a private registry that the host never sees):
   link the host with -rdynamic, or link both with libdispatch.so. */
DK_API void dk_no_file_defines_DISPATCH_IMPLEMENTATION_before_including_dispatch_h(void);

#if (defined(__GNUC__) || defined(__clang__)) && !defined(DISPATCH_STATIC) && !defined(_WIN32) && \
    !defined(__CYGWIN__) && !defined(DK_NO_LINK_CHECK)
#if defined(__PIC__) && !defined(__PIE__)
static void (*const dk__link_check)(void) __attribute__((used)) =
    dk_plugin_finds_no_dispatch_h_in_its_host__link_the_host_with_rdynamic_or_libdispatch_so;
#else
static void (*const dk__link_check)(void) __attribute__((used)) =
    dk_no_file_defines_DISPATCH_IMPLEMENTATION_before_including_dispatch_h;
#endif
#endif

/* >>schema ------------------------------------------------------------------

   Function schemas in c10's language (PyTorch 1.13.1):

       aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)

   dk_schema_parse() accepts what c10's parser accepts, builds the same model
   (types, alias annotations, default values) and prints it back exactly as
   c10's toString(FunctionSchema) does; dispatch_args is the bitset c10's
   DispatchKeyExtractor computes. A bare operator name ("aten::add.Tensor")
   parses too, with name_only set. A schema is immutable and owns all of its
   memory but what every schema shares (static: the types named by their
   kind alone, "Tensor", "int", and the return lists of "-> Tensor", "->
   Tensor(a!)" and "-> (Tensor, Tensor)" up to four): one
   dk_schema_free() releases it. Where c10 prints text that its
   own parser cannot read back, see Note [Schema deviations] (>>impl-schema).

   Errors: DK_ERR_BAD_SCHEMA; dk_last_error() tells the 0-based byte position,
   what was expected, and shows the line with a caret under the position. */

#undef DK__TYPE_ENUM

DK_INLINE uint64_t dk_schema_dispatch_args(const dk_schema *s) { return s->dispatch_args; }

/* The def's schema in c10's normalised form, or NULL without a def
   (defined here, after dk_schema, whose text it returns). */
DK_INLINE const char *dk_op_schema(const dk_operator *op) {
    const dk_schema *s = dk_op_function_schema(op);
    return s ? s->text : NULL;
}

/* <<schema */

#ifdef __cplusplus
}
#endif


#endif /* DISPATCH_H */


/* >>impl ==================================================================== */

#if defined(DISPATCH_IMPLEMENTATION) && !defined(DK__IMPLEMENTATION_INCLUDED)
#define DK__IMPLEMENTATION_INCLUDED

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <time.h>

#ifndef DK_ASSERT
#include <assert.h>
#define DK_ASSERT(c) assert(c)
#endif


#define DK__PRIVATE static DK__UNUSED

/* Optimisation spans: GCC compiles each span of the implementation at the
   level of what runs there, when the unit is optimised for speed (the
   target is the implementation's compile time at plain -O2, docs/bench.md);
   other compilers, -O0 and -Os units compile every span as the rest (an
   -Og unit gets the spans, the C ABI's at -O1: GCC defines __OPTIMIZE__ at
   -Og and no macro tells it from -O1). One
   mechanism: a span's BEGIN pushes GCC's options and sets its own, its END
   pops them, so spans nest (a COLD region inside the COOL or WARM span drops
   to -Og and comes back to that span's options). GCC inlines no function
   compiled with an optimize attribute into a caller whose options differ,
   so a span holds no function that code outside it calls on a hot path;
   the code before the WARM span (threads, errors, epochs, names, slots,
   config) has no attribute outside its COLD regions and inlines into
   every span.

   COLD, -Og: the text dumps, the HTML table, explanations, the timeline's
   file, backend renames and keysets as text, run when a person looks, and
   the messages of what failed (a call with no kernel to run, dk_call_fail,
   a schema's parse error, a named keyset looked up by a foreign caller's
   text), never by a call, a boxed call or a registration that succeeds.
   -Og is GCC's cheapest level that still optimises (about half -O2's
   compile time per function; in an -O2 unit GCC inlines none of the
   header's inline functions into it, their options differ, so a region's
   calls to them stay calls). A region holds no function
   the hot code calls, except out of line once it has failed
   (dk__call_failed, dk__sp_fail), nor calls one with a constant the hot
   callers share (GCC would stop specialising it: the library blocks and
   dk__explain_stack_in stay outside for that).

   COOL, -O1: the C ABI (>>impl-abi), one span: each function converts a
   foreign caller's plain C types and calls the C API's function, which
   stays in the WARM span (a call, where -O2 inlined some). -O1 inlines
   only the smallest of the header's inline functions into them; the
   others (dk_ks_has, dk_ks_remove, the guards, the registry's lock
   helpers) are calls there, to one out-of-line copy each. What a foreign
   caller's own call costs (ctypes, cffi, a JIT's trampoline) is larger
   than what -O2 took off.

   WARM: the registration paths, the boxed and slow call paths (>>impl-registry
   to >>impl-call) and the schema parser (>>impl-schema), with the C ABI's
   COOL span between them, run by every def, impl and deregister but not by
   an inline call (that is in the caller's unit). GCC compiles them at -O2
   without the passes that cost compile time and, measured on the bench's
   def, impl, deregister and boxed rows, no instructions (docs/bench.md):
   among them the second scheduler, the alignment, PRE, GCSE, code hoisting, VRP (and
   IPA's), the vectorisers, tail merging, crossjumping, peephole2, ICF, and
   IRA's regions, DSE, copy propagation, bit-CCP, IPA's pure-const (each of
   the second set kept only where no row grew). Jump threading, IPA-CP, IPA-SRA and -fexpensive-optimizations stay on
   (without them a def costs more), and -fdevirtualize: GCC inlines no
   function compiled with it into one compiled without it. The span
   is one region so that its functions, all with the same options, inline
   into each other. */
#if defined(__GNUC__) && __GNUC__ >= 8 && !defined(__clang__) && !defined(__INTEL_COMPILER) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__) /* 8: the oldest GCC that knows every option below */
#define DK__SPAN_BEGIN(options) _Pragma("GCC push_options") _Pragma(options)
#define DK__SPAN_END _Pragma("GCC pop_options")
#else
#define DK__SPAN_BEGIN(options)
#define DK__SPAN_END
#endif
#define DK__COLD_BEGIN DK__SPAN_BEGIN("GCC optimize(\"Og\")")
#define DK__COLD_END DK__SPAN_END
#define DK__COOL_BEGIN DK__SPAN_BEGIN("GCC optimize(\"O1\")")
#define DK__COOL_END DK__SPAN_END
#define DK__WARM_BEGIN DK__SPAN_BEGIN("GCC optimize(\"no-tree-pre\", \"no-gcse\", \"no-code-hoisting\", \"no-tree-vrp\", \"no-schedule-insns2\", \"no-tree-vectorize\", \"no-align-functions\", \"no-align-jumps\", \"no-align-loops\", \"no-align-labels\", \"no-reorder-blocks-and-partition\", \"no-tree-slp-vectorize\", \"no-tree-loop-vectorize\", \"no-tree-tail-merge\", \"no-isolate-erroneous-paths-dereference\", \"no-peephole2\", \"no-ipa-icf\", \"no-tree-loop-distribute-patterns\", \"no-hoist-adjacent-loads\", \"no-ipa-vrp\", \"no-ipa-bit-cp\", \"no-crossjumping\", \"no-ree\", \"no-cse-follow-jumps\", \"ira-region=one\", \"no-dse\", \"no-tree-dse\", \"no-lra-remat\", \"no-if-conversion2\", \"no-ipa-reference\", \"no-tree-copy-prop\", \"no-split-wide-types\", \"no-tree-bit-ccp\", \"no-ipa-pure-const\")")
#define DK__WARM_END DK__SPAN_END

/* The implementation expands the role lists hundreds of times: here a
   term names the row's roles and bit position as enum constants, shorter
   to expand than the row's columns (>>roles; the same values). */
#define DK__FR_FP(name, pb, prefix, roles, extra) DK__FR_##name = (roles), DK__FP_##name = DK_NUM_BACKENDS + DK_##name - 1,
enum { DK_FORALL_FUNCTIONALITY_KEYS(DK__FR_FP, ~) DK__FR_FP_END };
#undef DK__FR_FP
#undef DK__ROLE_TERM
#undef DK__ROLE_FIRST
#undef DK__PB_ROLE_FIRST
#define DK__ROLE_TERM(name, pb, prefix, roles, role) | (uint64_t)!!(DK__FR_##name & (role)) << DK__FP_##name
#define DK__ROLE_FIRST(name, pb, prefix, roles, role) (DK__FR_##name & (role)) ? DK_##name :
#define DK__PB_ROLE_FIRST(name, pb, prefix, roles, role) (pb && (DK__FR_##name & (role))) ? DK_##name :
#define DK__ALIAS_FIRST(name, set, want) (DK__SET_##set == (want)) ? DK_##name :

#define DK__ALIAS_KEY(want) (DK_FORALL_ALIAS_KEYS(DK__ALIAS_FIRST, want) DK_Undefined)

/* DK__ALIAS_AUTOGRAD (Autograd), DK__ALIAS_MATH (CompositeImplicitAutograd, the
   catch-all), DK__ALIAS_NESTED, DK__ALIAS_BACKEND (CompositeExplicitAutograd),
   DK__ALIAS_NON_FUNCTIONAL (...NonFunctional), DK__ALIAS_BATCHED
   (FuncTorchBatchedDecomposition): the alias key of each role. Only the
   implementation names them: the enum goes with it (each constant expands
   the alias list). */
#define DK__ROLE_ALIAS(set, alias, reason) DK__ALIAS_##alias = DK__ALIAS_KEY(DK__SET_##set),
/* the alias key of each role (>>aliases) */
enum { DK__FORALL_ALIAS_ROLES(DK__ROLE_ALIAS) DK__ALIAS_ROLES_END_ };
#undef DK__ROLE_ALIAS

#ifdef __cplusplus
extern "C" {
#endif

/* >>impl-threads --------------------------------------------------------------

   Platform pieces: one mutex per registry (and one process-wide, for the
   default registry and the trace hook; one for the list of thread states), and per-thread
   state kept OUT of static TLS: a dlopen'ed object may only have a small
   initial-exec block (glibc reserves a few hundred bytes for all of them),
   so the hot keysets and the call-epoch word and record pointer (24 bytes) are initial-exec,
   and the 16 KB message buffer is allocated on a thread's first error and
   freed when the thread exits. */
#if defined(_WIN32)
#include <windows.h>
typedef SRWLOCK dk__mutex;
#define DK__MUTEX_INITIALIZER SRWLOCK_INIT
#define dk__mutex_init(m) InitializeSRWLock(m)
#define dk__mutex_destroy(m) ((void)(m))
#define dk__mutex_lock(m) AcquireSRWLockExclusive(m)
#define dk__mutex_unlock(m) ReleaseSRWLockExclusive(m)
#define dk__mutex_trylock(m) (TryAcquireSRWLockExclusive(m) != 0)
#define dk__yield() SwitchToThread()
#else
#include <pthread.h>
#include <sched.h>
typedef pthread_mutex_t dk__mutex;
#define DK__MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define dk__mutex_init(m) pthread_mutex_init((m), NULL)
#define dk__mutex_destroy(m) pthread_mutex_destroy(m)
#define dk__mutex_lock(m) pthread_mutex_lock(m)
#define dk__mutex_unlock(m) pthread_mutex_unlock(m)
#define dk__mutex_trylock(m) (pthread_mutex_trylock(m) == 0)   /* the fork handlers, dk_registry_reclaim */
#define dk__yield() sched_yield()
#endif

static dk__mutex dk__global_lock = DK__MUTEX_INITIALIZER;

/* A thread's message buffer, and the failing call's own (on its stack):
   16 KB holds c10's missing-kernel message of a registry the size of
   libtorch 2.11's (39 fallbacks: 5.1 KB) three times over; a longer
   message ends in a marker that says it was cut (dk__mark_cut). */
enum { DK__MESSAGE_MAX = 16384 };

/* What a thread owns outside TLS; released by dk__thread_exit. Every live
   state is on one list (under the global lock), so unloading the object
   that holds the implementation frees the states of threads still alive. */
typedef struct dk__thread_state {
    char message[DK__MESSAGE_MAX];   /* dk_last_error() */
    dk__reader *reader;              /* its reader record, or NULL */
    int exit_registered;             /* dk__thread_exit will run for it (its key / FLS value set) */
    struct dk__thread_state *next, **prev;
} dk__thread_state;

static DK_THREAD_LOCAL dk__thread_state *dk__thread;
static DK_THREAD_LOCAL dk_status dk__call_status;
/* Failed calls reported on this thread, whatever the hook: a boxed call
   tells a kernel that failed its call from one that left the wrong number
   of results (dk__run_boxed). Counted on the failing path only. */
static DK_THREAD_LOCAL unsigned dk__call_failures;
static DK_THREAD_LOCAL char dk__me;  /* its address names the thread (lock owner) */

/* its own lock: a state is made on a thread's first error, which may come
   while the thread holds dk__global_lock */
static dk__mutex dk__threads_lock = DK__MUTEX_INITIALIZER;
static dk__thread_state *dk__threads;   /* under dk__threads_lock */
static int dk__unloading;  /* Windows: the DLL is going; states are freed for every thread at once */
/* exit() has begun: nothing is freed and nothing waits from then on (other
   threads may still be running kernels; the process is going anyway). */
static int dk__exiting;

/* Gives the thread's record back: no writer waits for it any more (its
   call word already unlinked, under dk__threads_lock). */
DK__PRIVATE void dk__reader_release(dk__reader *rec) {
    DK__STORE_REL(&rec->qs, (uint64_t)0);
    DK__STORE_REL(&rec->in_use, 0);
}

/* The exiting thread's side (not while unloading: see below): its word is
   never linked again. A call after this one (a later destructor, glibc's
   next rounds or its last, Windows' later FLS callbacks, DLL_THREAD_DETACH,
   C++ thread_local destructors) is a late one: DK__CTR_SLOW sends it to
   dk__call_enter_slow, which counts it in dk__late_calls instead of
   attaching (Note [Reclamation]). */
DK__PRIVATE void dk__thread_mark_exited(void) {
    dk__rd.exited = 1;
    dk__rd.nesting = 0;
    dk__rd.ctr = DK__CTR_SLOW;
}

static void dk__thread_exit(void *p) {
    dk__thread_state *t = (dk__thread_state *)p;
    if (!t) return;
    dk__mutex_lock(&dk__threads_lock);
    /* call epochs: writers read the record's word in this thread's TLS
       under this lock; the TLS goes away with the thread, so the word is
       unlinked first, at exit too (a writer may still scan then) */
    if (t->reader) t->reader->ctr = NULL;
    if (DK__LOAD_ACQ(&dk__exiting)) {   /* exit: leave the rest (see dk__exiting) */
        dk__mutex_unlock(&dk__threads_lock);
        if (!dk__unloading) dk__thread_mark_exited();   /* its later calls are late ones, seen by writers */
        return;
    }
    if (t->prev) { *t->prev = t->next; if (t->next) t->next->prev = t->prev; }
    dk__mutex_unlock(&dk__threads_lock);
    if (t->reader) dk__reader_release(t->reader);   /* free for another thread */
    /* not while unloading: this runs on the unloading thread for every
       thread's state, and the module's TLS may already be torn down
       (mingw-w64's emulated TLS is, at DLL_PROCESS_DETACH). Otherwise it
       runs on the exiting thread: a call from a destructor that runs after
       this one never writes into the record just given back (which
       another thread may already own) nor links the word again: it is a
       late call (dk__thread_mark_exited). An error then makes a fresh
       state (its message). */
    if (!dk__unloading) {
        dk__thread = NULL;
        dk__rd.rec = NULL;
        dk__thread_mark_exited();
    }
    free(t);
}

#if defined(_WIN32)
static DWORD dk__thread_key = FLS_OUT_OF_INDEXES;
static void WINAPI dk__thread_exit_win(void *p) { dk__thread_exit(p); }
/* A DLL holding the implementation must not leave Windows an FLS callback
   pointing into its unmapped code: the index is freed (its callback run
   for the values still set) when the DLL is unloaded, through atexit,
   which a DLL's C runtime (MSVC's and mingw-w64's) runs at
   DLL_PROCESS_DETACH. In an executable nothing is done: at exit, other
   threads may still be using their state. */
static void dk__thread_key_unload(void) {
    dk__unloading = 1;
    if (dk__thread_key != FLS_OUT_OF_INDEXES) FlsFree(dk__thread_key);
    dk__thread_key = FLS_OUT_OF_INDEXES;
}
static BOOL CALLBACK dk__thread_key_init(PINIT_ONCE o, PVOID p, PVOID *c) {
    HMODULE self = NULL;
    (void)o; (void)p; (void)c;
    dk__thread_key = FlsAlloc(dk__thread_exit_win);
    if (dk__thread_key != FLS_OUT_OF_INDEXES &&
        GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           (LPCSTR)&dk__thread_key, &self) &&
        self != GetModuleHandleA(NULL))
        atexit(dk__thread_key_unload);
    return TRUE;
}
static INIT_ONCE dk__thread_key_once = INIT_ONCE_STATIC_INIT;
/* 1 when dk__thread_exit will run for t (FLS is per fiber: see Note
   [Reclamation]) */
static int dk__thread_register(dk__thread_state *t) {
    InitOnceExecuteOnce(&dk__thread_key_once, dk__thread_key_init, NULL, NULL);
    return dk__thread_key != FLS_OUT_OF_INDEXES && FlsSetValue(dk__thread_key, t);
}
#else
static pthread_key_t dk__thread_key;
static int dk__thread_key_ok;
static pthread_once_t dk__thread_key_once = PTHREAD_ONCE_INIT;
static void dk__thread_key_init(void) { dk__thread_key_ok = pthread_key_create(&dk__thread_key, dk__thread_exit) == 0; }
/* 1 when dk__thread_exit will run for t (pthread_setspecific may fail: ENOMEM) */
static int dk__thread_register(dk__thread_state *t) {
    pthread_once(&dk__thread_key_once, dk__thread_key_init);
    return dk__thread_key_ok && pthread_setspecific(dk__thread_key, t) == 0;
}
#if (defined(__GNUC__) || defined(__clang__)) && !defined(DISPATCH_STATIC)
static void dk__free_all_threads(void);
static void dk__at_exit(void) { DK__STORE_REL(&dk__exiting, 1); }
/* atexit handlers run before the objects' destructors (glibc and musl
   register the destructors' runner first): dk__exiting is set before any
   library block's destructor runs at exit. In a shared object unloaded by
   dlclose, the handler runs at that dlclose, after its users are gone. */
__attribute__((constructor)) static void dk__watch_exit(void) { atexit(dk__at_exit); }
/* Unloading the object that holds the implementation must not leave glibc
   a destructor pointing into unmapped code, nor the states of the threads
   still alive allocated. At exit nothing is touched: other threads may
   still be running. */
__attribute__((destructor)) static void dk__thread_key_unload(void) {
    if (DK__LOAD_ACQ(&dk__exiting)) return;
    if (dk__thread_key_ok) pthread_key_delete(dk__thread_key);
    dk__thread_key_ok = 0;
    dk__free_all_threads();
}
#endif
#endif

/* The calling thread's state, allocated on first use (NULL when out of memory). */
DK__PRIVATE dk__thread_state *dk__thread_state_get(void) {
    dk__thread_state *t = dk__thread;
    if (t) return t;
    if (!(t = (dk__thread_state *)calloc(1, sizeof *t))) return NULL;
    dk__mutex_lock(&dk__threads_lock);
    t->next = dk__threads;
    t->prev = &dk__threads;
    if (dk__threads) dk__threads->prev = &t->next;
    dk__threads = t;
    dk__mutex_unlock(&dk__threads_lock);
    dk__thread = t;
    t->exit_registered = dk__thread_register(t);   /* tried again at attach (dk__reader_get) */
    return t;
}

/* >>impl-errors ------------------------------------------------------------- */

static const char dk__no_message[] = "(no message: out of memory for this thread's message buffer)";

/* A message is never cut without saying so: when the whole text (len
   bytes, the NUL not counted) did not fit in buf's size bytes, its end is
   overwritten with " ... [message cut: N bytes in all]". No allocation
   (the failing call's path uses it). */
DK__PRIVATE void dk__mark_cut(char *buf, size_t size, size_t len) {
    char mark[64];
    int n;
    if (len < size || !size) return;
    n = snprintf(mark, sizeof mark, " ... [message cut: %lu bytes in all]", (unsigned long)len);
    if (n > 0 && (size_t)n < size) memcpy(buf + size - 1 - (size_t)n, mark, (size_t)n + 1);
}

DK__PRIVATE void dk__set_message(const char *fmt, va_list ap) {
    dk__thread_state *t = dk__thread_state_get();
    int n;
    if (!t) return;
    n = vsnprintf(t->message, sizeof t->message, fmt, ap);
    if (n > 0) dk__mark_cut(t->message, sizeof t->message, (size_t)n);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
DK__PRIVATE dk_status dk__fail(dk_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dk__set_message(fmt, ap);
    va_end(ap);
    return s;
}

DK_API int dk_version_number(void) { return DK_VERSION_NUMBER; }
/* what every file that includes the header refers to (see >>call) */
DK_API void dk_no_file_defines_DISPATCH_IMPLEMENTATION_before_including_dispatch_h(void) {}
DK_API void dk_plugin_finds_no_dispatch_h_in_its_host__link_the_host_with_rdynamic_or_libdispatch_so(void) {}

DK_API const char *dk_status_message(dk_status s) {
#define DK__STATUS_TEXT(name, text) text,
    static const char *const texts[] = { DK_FORALL_STATUS(DK__STATUS_TEXT) };
#undef DK__STATUS_TEXT
    return (unsigned)s < (unsigned)DK__STATUS_END ? texts[s] : NULL;
}

DK_API const char *dk_last_error(void) {
    dk__thread_state *t = dk__thread_state_get();
    return t ? t->message : dk__no_message;
}

/* ---- the logger ------------------------------------------------------------ */

DK_API const char *dk_log_item_name(dk_log_item item) {
    static const char *const names[] = {
#define DK__LOG_ITEM_NAME(name, level, text) #name,
        DK_FORALL_LOG_ITEMS(DK__LOG_ITEM_NAME)
#undef DK__LOG_ITEM_NAME
    };
    return (unsigned)item < (unsigned)DK__LOG_ITEM_END ? names[item] : NULL;
}

/* What is not a registration's status nor a call's error goes to the
   registry's logger (dk_registry_desc.logger), one item of this list per
   message: X(ITEM, level, what it means). The default logger,
   dk_log_stderr, is the only code of the library that prints. */
/* The default logger: "Warning: <message>" (c10's words for an override),
   "dispatch.h error: ..." or "dispatch.h panic: ..." on stderr. */
DK_API void dk_log_stderr(dk_log_level level, dk_log_item item, const char *message, void *user_data) {
    (void)item; (void)user_data;
    fprintf(stderr, "%s: %s\n", level == DK_LOG_WARNING ? "Warning" : level == DK_LOG_ERROR ? "dispatch.h error"
                                 : "dispatch.h panic", message);
}

DK__PRIVATE dk_log_level dk__log_level(dk_log_item item) {
    static const dk_log_level levels[] = {
#define DK__LOG_ITEM_LEVEL(name, level, text) DK_LOG_##level,
        DK_FORALL_LOG_ITEMS(DK__LOG_ITEM_LEVEL)
#undef DK__LOG_ITEM_LEVEL
    };
    return levels[item];
}

/* Without a registry (a thread attaching to call epochs): the default logger. */
DK__PRIVATE void dk__log_to(const dk_logger *l, dk_log_item item, const char *message) {
    if (l && l->func) l->func(dk__log_level(item), item, message, l->user_data);
    else dk_log_stderr(dk__log_level(item), item, message, NULL);
}

/* >>impl-epochs ----------------------------------------------------------------

   Note [Reclamation]. Readers (calls, lookups) never lock, so memory a
   registration unpublishes (an old table snapshot, a kernel record, an
   operator's block, an old name index) may still be read; an operator's
   slot in the registry's slabs is not a block: it is given back once its
   block is freed, with the newest block of its generation
   (dk__slot_retire). What is unpublished is retired (appended
   to the registry's list), tagged in a batch with what else waits with a
   grace-period number g (the process-wide epoch after an increment that
   follows the unpublishing stores: one per batch, kept in the registry,
   not in each block), and freed once no reader can hold it. Each thread that takes part has a record in one list; memory
   tagged g is safe once every record reads 0 or a value >= g.
   - default (no DK_CALL_EPOCHS), quiescent-state-based (liburcu's QSBR
     flavour): readers do nothing on the call path. A thread declares a
     quiescent point (dk_registry_reclaim, dk_registry_synchronize,
     dk_thread_online) by storing the current epoch in its record with
     release: what it read before is ordered before the store, and its
     acquire load of the epoch orders every unpublish tagged at most that
     epoch before what it reads next. Offline, exited and never-declared
     threads read 0. Frees happen at reclaim and synchronize (under the
     registry's lock); no change frees by itself, so a thread that never
     takes part is safe while it is outside calls at every reclaim, as
     before per-thread quiescent points.
   - DK_CALL_EPOCHS (liburcu's memb flavour, with epochs instead of its
     two phases): each thread has one word in its TLS, dk__rd.ctr: the
     count of calls it is inside (bits 0-22) and the epoch its outermost
     call entered at (bits 24-63; see dk__reader_tls). The outermost
     enter copies dk__gp_ctr (the epoch shifted, with a count of 1: one
     load, one store), then a compiler barrier when Linux membarrier makes
     writers pay for both sides, a full fence otherwise; a nested enter
     adds 1, an exit subtracts 1 with a release store. Count 0 = outside:
     the epoch bits left over are not looked at. Bit 23 (DK__CTR_SLOW),
     set while the thread is outside calls and not attached yet or without
     membarrier, sends the outermost enter the slow way
     (dk__call_enter_slow) through the test that also finds a nested call;
     a typed call then tail-calls an out-of-line copy of itself. What
     the bracket costs a call: docs/bench.md. Without membarrier
     (Windows, macOS, the BSDs, ThreadSanitizer builds, kernels before
     4.14, qemu-user) every outermost call takes the out-of-line way and
     a full fence.
     A grace period adds 1 to dk__epoch (64 bits: the tags), then to
     dk__gp_ctr's epoch (a reader never copies an epoch dk__epoch has not
     reached), then a full barrier: a reader that stored its word before
     the barrier is seen by the scan, one that stored it after sees the
     new pointers. On CPUs that reorder loads a barrier comes first too
     (a reader could read a table before it copies the epoch). A writer
     reads each attached thread's word through its record (rec->ctr)
     under dk__threads_lock, and rebuilds the 40 epoch bits to 64 around
     dk__epoch read after the word. A thread's exit destructor unlinks
     the word under that lock before its TLS goes away (at exit too) and
     marks the thread exited (dk__rd.exited; DK__CTR_SLOW stays set): the
     word is never linked again, since nothing would unlink it (glibc
     stops running destructors after PTHREAD_DESTRUCTOR_ITERATIONS
     rounds, Windows runs an FLS callback once, and DLL_THREAD_DETACH,
     TLS callbacks and C++ thread_local destructors may come after it).
     A call after that, a late call, goes the slow way and counts itself
     in one process-wide word, dk__late_calls, read by writers under the
     same protocol as a thread's word: while it is not 0 nothing is freed
     and dk_registry_synchronize waits. A thread the exit destructor
     cannot be registered for (pthread_setspecific or FlsSetValue failed)
     is never attached: its first call tries again, and if that fails too
     stops the process with a message.
     Windows fibers: FLS values belong to a fiber, so the thread's state
     is registered with the fiber current at its first call or error,
     and deleting that fiber runs the exit destructor: on the same thread
     its later calls are late ones (safe, each one a locked add and a
     fence); deleted from another thread while the thread still calls,
     its word is unlinked under its calls. Make a thread's first call
     from a fiber that lives as long as the thread (the one
     ConvertThreadToFiber made). Grace periods are batched as
     liburcu's call_rcu batches callbacks: a change only tags what it
     retired; one grace period is started when DK__BATCH_BYTES are
     pending (and at reclaim / synchronize), and then frees what is safe
     without waiting.
   Neither mode frees anything at exit (dk__exiting). */
#ifndef DISPATCH_STATIC
DK_THREAD_LOCAL dk__reader_tls dk__rd DK_TLS_MODEL = DK__READER_TLS_INIT;
uint64_t dk__epoch = 1;
uint64_t dk__gp_ctr = ((uint64_t)1 << DK__CTR_SHIFT) | 1;
int dk__asymmetric;
#endif

/* Asymmetric barriers: on Linux (4.14+) membarrier's private expedited
   command runs a full barrier on every thread of the process, so readers
   need only a compiler barrier. Enabled once, before main (or before
   dlopen returns), so readers and writers agree on it all along; without
   it (other systems, old kernels, qemu-user, ThreadSanitizer) readers
   fence. */
#if defined(DK_CALL_EPOCHS) && defined(__linux__) && !defined(DK__TSAN) && (defined(__GNUC__) || defined(__clang__))
#include <unistd.h>
#include <sys/syscall.h>
#if defined(__NR_membarrier)
#define DK__MEMBARRIER 1
#if !defined(__USE_MISC)
extern long syscall(long number, ...);
#endif
enum { DK__MEMBARRIER_PRIVATE_EXPEDITED = 8, DK__MEMBARRIER_REGISTER_PRIVATE_EXPEDITED = 16 };
__attribute__((constructor)) static void dk__membarrier_init(void) {
    if (syscall(__NR_membarrier, (int)DK__MEMBARRIER_REGISTER_PRIVATE_EXPEDITED, 0) == 0)
        DK__STORE_REL(&dk__asymmetric, 1);
}
#endif
#endif

/* The writer's side of a barrier pair with every reader. membarrier can
   fail (ENOMEM: the kernel could not allocate its CPU mask). There is no
   falling back to fences then: a thread already in the asymmetric mode
   has DK__CTR_SLOW clear and enters with a compiler barrier only, and no
   other thread may set the bit in its word (the owner's updates are not
   read-modify-writes), so no writer could know when every reader fences.
   Without the barrier a reader's word may not be seen and a table it
   reads could be freed: the writer tries again (yielding), then stops the
   process with a message rather than go on unsafely. */
DK__PRIVATE void dk__barrier_all(void) {
    DK__FENCE_SEQ();
#ifdef DK__MEMBARRIER
    if (DK__LOAD_RLX(&dk__asymmetric)) {
        int tries = 0;
        while (syscall(__NR_membarrier, (int)DK__MEMBARRIER_PRIVATE_EXPEDITED, 0) != 0) {
            if (++tries == 1000) {
                dk__log_to(NULL, DK_LOG_CALL_EPOCHS_FAILED, "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) keeps "
                                                              "failing: a grace period cannot be made safe");
                abort();
            }
            dk__yield();
        }
    }
#endif
}
static dk__reader *dk__readers;    /* every record ever attached; reused, freed at unload */
/* Call epochs: the calls in progress of threads whose exit destructor has
   run (late calls, dk__rd.exited). Their words are never linked (the TLS
   may be gone before they return, and nothing would unlink it), so they
   count here instead: a writer reads it as it reads a word (after its
   barrier, with acquire) and while it is not 0 holds back everything
   (dk__oldest_reader: no frees, synchronize waits). */
static uint64_t dk__late_calls DK__UNUSED;
/* Some thread has declared itself (has a record): from then on, under
   DK_DEBUG_THREADS, a call from a thread without one is stopped. */
static int dk__declared_any;
static uint64_t dk__next_thread_id;   /* 64-bit: every DK__FETCH_ADD is (Windows' Interlocked one) */

/* Attaches the calling thread's record (reusing one a gone thread gave
   back); NULL when out of memory, and under call epochs when the thread's
   exit destructor cannot be registered or has already run. */
DK__PRIVATE dk__reader *dk__reader_get(void) {
    dk__thread_state *t;
    dk__reader *rec, *head;
    if (dk__rd.rec) return dk__rd.rec;
    if (!(t = dk__thread_state_get())) return NULL;
#ifdef DK_CALL_EPOCHS
    /* its word would outlive its TLS in the list: no exit destructor (the
       key could not be made or set), or it already ran (a late caller) */
    if (dk__rd.exited) return NULL;
    if (!t->exit_registered && !(t->exit_registered = dk__thread_register(t))) return NULL;
#endif
    for (rec = DK__LOAD_ACQ(&dk__readers); rec; rec = rec->next) {
        int expected = 0;
        if (DK__LOAD_RLX(&rec->in_use) == 0 && DK__CAS(&rec->in_use, &expected, 1)) break;
    }
    if (!rec) {
        if (!(rec = (dk__reader *)calloc(1, sizeof *rec))) return NULL;
        rec->in_use = 1;
        head = DK__LOAD_RLX(&dk__readers);
        do rec->next = head; while (!DK__CAS(&dk__readers, &head, rec));
    }
    rec->id = (unsigned)DK__FETCH_ADD(&dk__next_thread_id, (uint64_t)1);
#ifdef DK_CALL_EPOCHS
    dk__mutex_lock(&dk__threads_lock);
    rec->ctr = &dk__rd.ctr;   /* until dk__thread_exit unlinks it */
    dk__mutex_unlock(&dk__threads_lock);
#endif
    t->reader = rec;
    dk__rd.rec = rec;
    DK__STORE_REL(&dk__declared_any, 1);
    return rec;
}

/* A call cannot fail, and a thread that cannot be tracked would let memory
   it reads be freed under it: nothing safe is left but to stop. */
DK_API void dk__reader_attach(void) {
    if (!dk__reader_get()) {
        dk__log_to(NULL, DK_LOG_CALL_EPOCHS_FAILED,
                   "out of memory, or no thread-exit destructor could be registered (pthread_setspecific / "
                   "FlsSetValue), attaching a thread to call epochs");
        abort();
    }
}

/* dk_call_enter's other way: the thread's first call (it attaches), every
   outermost call of a thread that fences (no membarrier), a late call (its
   exit destructor has run) and a count that would overflow into
   DK__CTR_SLOW. */
DK_API void dk__call_enter_slow(void) {
#ifdef DK_CALL_EPOCHS
    uint64_t c = dk__rd.ctr;
    if (c & DK__CTR_NEST) {   /* 2^23 - 1 calls deep: no stack holds that many frames */
        dk__log_to(NULL, DK_LOG_CALL_EPOCHS_FAILED, "calls nested more than 8,388,607 deep on one thread");
        abort();
    }
    if (dk__rd.exited) {
        /* counted where writers look (a seq_cst read-modify-write, then a
           fence: seen before any table is read); the word, unlinked, only
           counts the nesting for dk__call_exit_late */
        (void)DK__FETCH_ADD(&dk__late_calls, (uint64_t)1);
        DK__FENCE_SEQ();
        dk__rd.ctr = DK__CTR_SLOW | 1;
        return;
    }
    if (!dk__rd.rec) dk__reader_attach();
    DK__STORE_RLX(&dk__rd.ctr, DK__LOAD_RLX64(&dk__gp_ctr) | (DK__LOAD_RLX(&dk__asymmetric) ? 0 : DK__CTR_SLOW));
    DK__FENCE_SEQ();   /* the word is visible before any table is read */
#endif
}

/* The rule is deterministic (DK_DEBUG_THREADS): a call is stopped when its thread
   has no record and another thread has one, i.e. someone may reclaim
   while this thread is inside a call it is not waited for. A
   single-threaded program that never declares is never stopped. */
DK_API void dk__thread_check(void) {
    char message[512];
    /* an exited thread declared itself: its calls from later destructors are late ones (WHAT A PROGRAM DOES) */
    if (dk__rd.rec || dk__rd.exited || !DK__LOAD_ACQ(&dk__declared_any)) return;
    snprintf(message, sizeof message, "thread %lu calls without having declared itself, while other threads "
             "take part in reclamation: it is not waited for, and memory or code it runs could be freed under "
             "it. Call dk_thread_attach() on it before its first call (and dk_thread_quiescent() or "
             "dk_registry_reclaim(r) between calls; dk_thread_offline() before it idles) (DK_DEBUG_THREADS)",
#if defined(_WIN32)
             (unsigned long)GetCurrentThreadId()
#else
             (unsigned long)(uintptr_t)pthread_self()
#endif
             );
    dk__log_to(NULL, DK_LOG_DEBUG_CHECK_FAILED, message);
    abort();
}

/* dk_call_exit of a thread whose exit destructor has run: a nested call
   only counts down; the outermost late call's exit takes its count back
   (a seq_cst read-modify-write: the call's reads come before it). */
DK_API void dk__call_exit_late(void) {
#ifdef DK_CALL_EPOCHS
    uint64_t c = dk__rd.ctr;
    if ((c & DK__CTR_NEST) > 1) { dk__rd.ctr = c - 1; return; }
    dk__rd.ctr = DK__CTR_SLOW;
    if (c & DK__CTR_NEST) (void)DK__FETCH_ADD(&dk__late_calls, ~(uint64_t)0);
#endif
}

#if (defined(__GNUC__) || defined(__clang__)) && !defined(DISPATCH_STATIC) && !defined(_WIN32)
/* At unload (not at exit): every thread's state and every record. */
static void dk__free_all_threads(void) {
    dk__thread_state *t, *nt;
    dk__reader *rec, *nrec;
    dk__mutex_lock(&dk__threads_lock);
    for (t = dk__threads; t; t = nt) { nt = t->next; free(t); }
    dk__threads = NULL;
    for (rec = dk__readers; rec; rec = nrec) { nrec = rec->next; free(rec); }
    dk__readers = NULL;
    dk__mutex_unlock(&dk__threads_lock);
    dk__thread = NULL;
    dk__rd.rec = NULL;
    dk__rd.ctr = DK__CTR_SLOW;
}
#endif

/* Inside a call or hook the library can see: boxed calls, hooks, explain
   (and every call under DK_CALL_EPOCHS). */
#ifdef DK_CALL_EPOCHS
DK__PRIVATE int dk__in_call(void) { return (DK__LOAD_RLX(&dk__rd.ctr) & DK__CTR_NEST) != 0; }
#else
DK__PRIVATE int dk__in_call(void) { return dk__rd.nesting > 0; }
#endif
#ifdef DK_CALL_EPOCHS
#define DK__HOLD() dk_call_enter()
#define DK__UNHOLD() dk_call_exit()
#else
#define DK__HOLD() ((void)dk__rd.nesting++)
#define DK__UNHOLD() ((void)dk__rd.nesting--)
#endif

/* Note [One read primitive]. What calls and lookups read without the
   registry's lock -- an operator's snapshot, and through it the def's
   record and the kernel records; the name index -- the implementation
   reads through dk__snapshot and dk__index_of only, inside a read section:
   DK__HOLD() ... DK__UNHOLD(), the call bracket under DK_CALL_EPOCHS (what
   a writer waits for), a nesting count in the default build (what
   dk_registry_reclaim refuses inside). A boxed call reads its snapshot
   once and passes it down (its fast way to dk__dispatch_in and
   dk__run_boxed, the general way to dk__dispatch_boxed, dk__run_boxed
   and, with no kernel to run, dk__call_failed: Note [Boxed fast way]):
   its schema, adapters and kernel come from one state, and the backend
   fallback of an empty slot is looked up once. A typed call (DK_DECLARE_OP)
   does too: its inline path hands the snapshot it read its kernel record
   from to its slow path (_slow0 / _slow1, the redispatch flag in the name
   so that the snapshot takes the flag's argument register, then
   dk__call_slow_at), so a boxed kernel or fallback gets the argument pack
   boxed by the adapters of the def the caller's state had, and a failed
   call's message speaks of that state (bench/shape.sh's counts stay as
   they were, gcc's 1.13.1 call site one shorter: dk__entry_load_arg0). gen/'s
   bindings do the same in the open: dk_dispatch_kernel_with_fn and
   dk_redispatch_kernel_with_fn give the record with the snapshot it
   came from and the entry's fn, and the slow path hands the first two
   to dk_call_packed; like DK_DECLARE_OP's
   inline path these two call nothing (the trace report and a missing
   record's fallback wait for the slow path), so gen's call sites became
   shorter (gcc and clang, both presets and call epochs). Under DK_DEBUG_READS both
   readers stop the program, naming the function, outside a read section,
   so a function that forgot its bracket fails the first test that calls
   it, single-threaded, in either mode; tests/structure.sh refuses any
   other read of op->table or r->index in the implementation. */
DK_API void dk__read_check(const char *fn) {
    char message[256];
    if (dk__in_call()) return;
    snprintf(message, sizeof message, "%s read an operator's snapshot, a kernel record, a def's record or the "
             "name index outside a read section (DK_DEBUG_READS; under DK_CALL_EPOCHS, bracket such a read with "
             "dk_call_enter() and dk_call_exit())", fn);
    dk__log_to(NULL, DK_LOG_DEBUG_CHECK_FAILED, message);
    abort();
}
#ifdef DK_DEBUG_READS
#define dk__snapshot(op) (dk__read_check(__func__), dk_op_table_of(op))
#define dk__index_of(r) (dk__read_check(__func__), DK__LOAD_ACQ(&(r)->index))
#else
#define dk__snapshot(op) dk_op_table_of(op)
#define dk__index_of(r) DK__LOAD_ACQ(&(r)->index)
#endif

/* What a record holds back: the epoch its call entered at (call epochs;
   the caller holds dk__threads_lock) or of its last quiescent point
   (default); 0 = nothing. */
DK__PRIVATE uint64_t dk__held(const dk__reader *rec) {
#ifdef DK_CALL_EPOCHS
    const uint64_t half = (uint64_t)1 << (63 - DK__CTR_SHIFT);   /* 2^39 */
    uint64_t c, now, lag, e;
    if (!rec->ctr) return 0;
    c = DK__LOAD_ACQ64(rec->ctr);
    if (!(c & DK__CTR_NEST)) return 0;
    /* the 40 bits rebuilt around dk__epoch read after the word: the
       reader's epoch is at most that (see dk__grace_start) and lags it by
       less than 2^39. One that looks ahead of it was misread (a torn
       64-bit load, should one ever happen): it holds back everything
       (epoch 1: every tag is larger), never frees because of it. */
    now = DK__LOAD_ACQ64(&dk__epoch);
    lag = ((now << DK__CTR_SHIFT) - (c & ~DK__CTR_LOW)) >> DK__CTR_SHIFT;
    if (lag >= half) return 1;
    e = now - lag;
    return e ? e : 1;
#else
    return DK__LOAD_ACQ(&rec->qs);
#endif
}
/* Call epochs: the records' words are read under dk__threads_lock. */
#ifdef DK_CALL_EPOCHS
#define DK__SCAN_LOCK() dk__mutex_lock(&dk__threads_lock)
#define DK__SCAN_UNLOCK() dk__mutex_unlock(&dk__threads_lock)
#else
#define DK__SCAN_LOCK() ((void)0)
#define DK__SCAN_UNLOCK() ((void)0)
#endif

/* The calling thread's quiescent point (default mode): it holds nothing
   read before, and what it reads next was published at the epoch it
   stores or later. */
DK__PRIVATE dk_status dk__quiescent(void) {
#ifndef DK_CALL_EPOCHS
    dk__reader *rec = dk__reader_get();
    if (!rec) return dk__fail(DK_ERR_NO_MEMORY, "out of memory attaching the thread to quiescent points");
    DK__STORE_REL(&rec->qs, DK__LOAD_ACQ(&dk__epoch));
#endif
    return DK_OK;
}

/* Starts a grace period; memory unpublished before it is tagged with the result. */
DK__PRIVATE uint64_t dk__grace_start(void) {
    uint64_t g;
#if defined(DK_CALL_EPOCHS) && defined(DK__MEMBARRIER) && !defined(__x86_64__) && !defined(__i386__)
    /* a CPU that reorders loads: a reader with only a compiler barrier may
       read a table before it copies dk__gp_ctr. A barrier on every thread
       first (liburcu's memb flavour does the same): a reader that copies
       the new epoch copied it after that barrier, and reads the new
       pointers. x86 keeps loads in order. */
    dk__barrier_all();
#endif
    g = DK__FETCH_ADD(&dk__epoch, 1);
#ifdef DK_CALL_EPOCHS
    /* after dk__epoch: a reader never copies an epoch dk__epoch has not reached (dk__held) */
    (void)DK__FETCH_ADD(&dk__gp_ctr, (uint64_t)1 << DK__CTR_SHIFT);
#endif
    dk__barrier_all();
    return g;
}

/* The oldest epoch some record holds back, or UINT64_MAX when none does;
   1 (older than every tag) while a late call is in progress (call
   epochs: dk__late_calls). */
DK__PRIVATE uint64_t dk__oldest_reader(void) {
    uint64_t oldest = UINT64_MAX;
    const dk__reader *rec;
    DK__FENCE_SEQ();
    DK__SCAN_LOCK();
#ifdef DK_CALL_EPOCHS
    if (DK__LOAD_ACQ64(&dk__late_calls)) oldest = 1;
#endif
    for (rec = DK__LOAD_ACQ(&dk__readers); rec; rec = rec->next) {
        uint64_t e = dk__held(rec);
        if (e && e < oldest) oldest = e;
    }
    DK__SCAN_UNLOCK();
    return oldest;
}

/* The dk_thread_id of a thread that holds back something older than g
   (0: a late call, under call epochs). */
DK__PRIVATE unsigned dk__holder(uint64_t g) {
    const dk__reader *rec;
    unsigned id = 0;
    DK__SCAN_LOCK();
    for (rec = DK__LOAD_ACQ(&dk__readers); rec && !id; rec = rec->next) {
        uint64_t e = dk__held(rec);
        if (e && e < g && DK__LOAD_RLX(&rec->in_use)) id = rec->id;
    }
    DK__SCAN_UNLOCK();
    return id;
}

/* Waits until every record holds back nothing older than g (never called
   from inside a call: the caller's own record holds nothing). A library
   block's destructor (warn: its registry's logger, copied under the lock)
   waits inside dlclose, where a thread that needs the loader's lock never
   comes back: after about a second (time()'s whole seconds: 1 to 2) it
   says so, once, and waits on -- the code may not be unmapped before. */
DK__PRIVATE void dk__grace_wait_in(uint64_t g, const dk_logger *warn) {
    unsigned spins = 0;
    time_t start = warn ? time(NULL) : (time_t)0;
    while (dk__oldest_reader() < g) {
        char whom[64], msg[640];
        unsigned id;
        if (++spins <= 64) continue;
        dk__yield();
        if (!warn || spins % 64 != 0 || difftime(time(NULL), start) < 2) continue;
        if ((id = dk__holder(g)) != 0) snprintf(whom, sizeof whom, "thread %u", id);
        else snprintf(whom, sizeof whom, "a late call (one made after its thread's exit destructor)");
        snprintf(msg, sizeof msg, "a library block's destructor has waited about a second inside dlclose (thread "
                 "%u unloads) for %s %s: if that thread waits for the dynamic loader (a kernel calling dlopen, "
                 "dlsym or dladdr), this never ends. Unload in two steps, the wait outside the loader's lock: "
                 "dk_library_unload(dlsym(handle, \"a symbol\")), then dlclose(handle). Still waiting.",
                 dk_thread_id(), whom,
#ifdef DK_CALL_EPOCHS
                 "to leave its call"
#else
                 "to pass a quiescent point"
#endif
                 );
        dk__log_to(warn, DK_LOG_UNLOAD_WAITING, msg);
        warn = NULL;
    }
}

/* ---- hooks published as one unit -------------------------------------------

   The trace hook is process-wide: its function and user data sit behind a
   sequence counter (odd while written), so a reader never pairs one hook
   with another's user data. */
static unsigned dk__trace_seq;
static void *dk__trace_user_data;

DK_API void dk_trace_set(dk_trace_fn fn, void *user_data) {
    unsigned s;
    dk__mutex_lock(&dk__global_lock);
    s = DK__LOAD_RLX(&dk__trace_seq);
    DK__STORE_RLX(&dk__trace_seq, s + 1);
    DK__FENCE_REL();
    DK__STORE_RLX(&dk__trace_user_data, user_data);
    DK__STORE_RLX(&dk__trace_hook, fn);
    DK__STORE_RLX(&dk__fn_mask, fn ? (uintptr_t)0 : ~(uintptr_t)0);
    DK__STORE_REL(&dk__trace_seq, s + 2);
    dk__mutex_unlock(&dk__global_lock);
}

DK_API void dk__trace(const dk_operator *op, dk_keyset ks, int is_redispatch) {
    dk_trace_fn fn;
    void *ud;
    unsigned s1, s2;
    do {
        s1 = DK__LOAD_ACQ(&dk__trace_seq);
        fn = DK__LOAD_RLX(&dk__trace_hook);
        ud = DK__LOAD_RLX(&dk__trace_user_data);
        DK__FENCE_ACQ();
        s2 = DK__LOAD_RLX(&dk__trace_seq);
    } while ((s1 & 1) || s1 != s2);
    if (fn) {
        DK__HOLD();
        fn(op, ks, dk_ks_highest_key(ks), is_redispatch, ud);
        DK__UNHOLD();
    }
}

/* ---- the timeline (dk_timeline_*) -----------------------------------------

   Note [Timeline]: the recorder is the trace hook's consumer that sees a
   call's end too. The typed calls' _traced, dk_trace_begin and the boxed
   calls call dk__trace_call, which, while the hook is the timeline's,
   opens an event in the calling thread's buffer and returns its token
   (its index + 1; DK__TL_DROPPED past the cap); dk__trace_return closes
   it. Only the owning thread writes its buffer, so the call path takes no
   lock; the buffers are on one list, pushed with a CAS on a thread's first
   event, which dk_timeline_save walks after dk_timeline_stop (an event's
   end and a buffer's count are relaxed atomics: a call still running
   then may close its event while the file is written). A recording is a
   generation: a buffer of an older one is emptied by its thread at its
   next event, and skipped by dk_timeline_save. */
enum { DK__TL_NAME = 64, DK__TL_DEFAULT_EVENTS = 16384 };
#define DK__TL_DROPPED 0xffffffffu
#define DK__TL_FAILED 8    /* event flags beside DK__TRACE_BOXED and 1 (a redispatch) */
#define DK__TL_FALLBACK 16
#define DK__TL_BOXED_KERNEL 32
typedef struct dk__tl_event {
    uint64_t begin, end;          /* ns since the recording started; end 0 while the call runs */
    int parent;                   /* the enclosing event's index in this buffer, -1 */
    unsigned short key;           /* the slot's key (dk_ks_highest_key of the call's keyset) */
    unsigned char flags, depth;   /* DK__TL_*; depth: calls it is nested in (dropped ones too) */
    int status;                   /* a failed call's dk_status */
    char op[DK__TL_NAME], kernel[DK__TL_NAME];
} dk__tl_event;
typedef struct dk__tl_buffer {
    struct dk__tl_buffer *next;   /* the list of every thread's buffer */
    unsigned gen, tid;            /* the recording it holds; the thread's number in the file (1, 2, ...) */
    size_t n, cap, dropped;       /* n: events written (relaxed: dk_timeline_save reads it) */
    int open;                     /* the innermost open event, -1 */
    unsigned depth;               /* open calls, dropped ones too */
    dk__tl_event *events;
} dk__tl_buffer;
static dk__tl_buffer *dk__tl_all;
static DK_THREAD_LOCAL dk__tl_buffer *dk__tl_mine;
static unsigned dk__tl_gen;       /* the recording (odd while one records) */
static size_t dk__tl_cap;
static uint64_t dk__tl_t0;

/* A monotonic clock in ns: clock_gettime where <time.h> declares it (the
   includer asked for POSIX), else on Linux / glibc the same function
   declared here (strict C99 hides it), QueryPerformanceCounter on
   Windows, else timespec_get (C11) or clock(). */
#if defined(_WIN32)
DK__PRIVATE uint64_t dk__now_ns(void) {
    LARGE_INTEGER c, f;
    QueryPerformanceCounter(&c);
    QueryPerformanceFrequency(&f);
    return (uint64_t)((double)c.QuadPart * 1e9 / (double)f.QuadPart);
}
#else
#if defined(CLOCK_MONOTONIC)
DK__PRIVATE uint64_t dk__now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#elif defined(__linux__) && defined(__GLIBC__)
struct dk__timespec { long tv_sec, tv_nsec; };   /* struct timespec on glibc (64-bit time or 32-bit long) */
extern int clock_gettime(int clock, struct dk__timespec *t);
DK__PRIVATE uint64_t dk__now_ns(void) {
    struct dk__timespec t;
    clock_gettime(1 /* CLOCK_MONOTONIC */, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#elif defined(TIME_UTC)
DK__PRIVATE uint64_t dk__now_ns(void) {
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#else
DK__PRIVATE uint64_t dk__now_ns(void) { return (uint64_t)((double)clock() * 1e9 / CLOCKS_PER_SEC); }
#endif
#endif

/* The timeline's trace hook: the calls' own reports (dk__trace_call) make
   the events, so the dispatch primitives' reports are dropped here. */
static void dk__tl_hook(const dk_operator *op, dk_keyset ks, dk_key key, int is_redispatch, void *user_data) {
    (void)op; (void)ks; (void)key; (void)is_redispatch; (void)user_data;
}

/* dst gets src, cut to DK__TL_NAME - 1 bytes keeping its end after "..." */
DK__PRIVATE void dk__tl_name(char *dst, const char *src) {
    size_t n = src ? strlen(src) : 0;
    if (n < DK__TL_NAME) { memcpy(dst, src ? src : "", n + 1); return; }
    memcpy(dst, "...", 3);
    memcpy(dst + 3, src + n - (DK__TL_NAME - 4), DK__TL_NAME - 3);
}

/* This thread's buffer for the recording gen, emptied or made (NULL: out of memory). */
DK__PRIVATE dk__tl_buffer *dk__tl_buffer_of(unsigned gen) {
    dk__tl_buffer *b = dk__tl_mine;
    size_t cap = DK__LOAD_RLX(&dk__tl_cap);
    if (b && b->gen == gen) return b;
    if (!b) {
        dk__tl_buffer *head;
        if (!(b = (dk__tl_buffer *)calloc(1, sizeof *b))) return NULL;
        head = DK__LOAD_RLX(&dk__tl_all);
        do {
            b->next = head;
            b->tid = (head ? head->tid : 0) + 1;
        } while (!DK__CAS(&dk__tl_all, &head, b));
        dk__tl_mine = b;
    }
    if (b->cap != cap) {   /* this thread's alone until its gen is the recording's */
        free(b->events);
        b->events = (dk__tl_event *)malloc(cap * sizeof *b->events);
        b->cap = b->events ? cap : 0;
    }
    DK__STORE_RLX(&b->n, (size_t)0);
    b->dropped = 0;
    b->open = -1;
    b->depth = 0;
    DK__STORE_REL(&b->gen, gen);
    return b;
}

DK__PRIVATE unsigned dk__tl_open(const dk_operator *op, dk_keyset ks, const dk_kernel *k, int flags) {
    unsigned gen = DK__LOAD_ACQ(&dk__tl_gen);
    dk__tl_buffer *b;
    dk__tl_event *e;
    size_t i;
    if (!(gen & 1) || !(b = dk__tl_buffer_of(gen))) return 0;
    b->depth++;
    if ((i = DK__LOAD_RLX(&b->n)) >= b->cap) { b->dropped++; return DK__TL_DROPPED; }
    e = &b->events[i];
    e->parent = b->open;
    e->key = (unsigned short)dk_ks_highest_key(ks);
    e->depth = (unsigned char)(b->depth - 1 < 255 ? b->depth - 1 : 255);
    e->flags = (unsigned char)(flags & (1 | DK__TRACE_BOXED));
    if (k && k->is_fallback) e->flags |= DK__TL_FALLBACK;
    if (k && k->boxed) e->flags |= DK__TL_BOXED_KERNEL;
    e->status = 0;
    dk__tl_name(e->op, op->name);
    dk__tl_name(e->kernel, !k ? "" : k->kind == DK_KERNEL_MISSING ? "missing"
                         : k->kind == DK_KERNEL_FALLTHROUGH ? "fallthrough"
                         : k->kind == DK_KERNEL_AMBIGUOUS ? "ambiguous" : k->debug);
    DK__STORE_RLX(&e->end, (uint64_t)0);
    e->begin = dk__now_ns() - dk__tl_t0;
    b->open = (int)i;
    DK__STORE_REL(&b->n, i + 1);
    return (unsigned)i + 1;
}

DK_API unsigned dk__trace_call(const dk_operator *op, dk_keyset ks, const dk_kernel *k, int flags) {
    dk_trace_fn fn;
    void *ud;
    unsigned s1, s2, t = 0;
    do {
        s1 = DK__LOAD_ACQ(&dk__trace_seq);
        fn = DK__LOAD_RLX(&dk__trace_hook);
        ud = DK__LOAD_RLX(&dk__trace_user_data);
        DK__FENCE_ACQ();
        s2 = DK__LOAD_RLX(&dk__trace_seq);
    } while ((s1 & 1) || s1 != s2);
    if (!fn) return 0;
    DK__HOLD();
    /* a typed call's record is the slot's (DK_DECLARE_OP, gen/'s
       bindings): the event names the fallback a missing record stands for */
    if (k && k->kind == DK_KERNEL_MISSING) k = dk__deferred(op, k);
    if (fn == dk__tl_hook) t = dk__tl_open(op, ks, k, flags);
    else if (!(flags & DK__TRACE_TOLD)) fn(op, ks, dk_ks_highest_key(ks), flags & 1, ud);
    DK__UNHOLD();
    return t;
}

DK_API void dk__trace_return(unsigned token) {
    dk__tl_buffer *b = dk__tl_mine;
    if (!token || !b) return;
    if (b->depth) b->depth--;
    if (token == DK__TL_DROPPED || token > DK__LOAD_RLX(&b->n)) return;
    DK__STORE_RLX(&b->events[token - 1].end, dk__now_ns() - dk__tl_t0 + 1);   /* + 1: never 0 (open) */
    b->open = b->events[token - 1].parent;
}

/* A call failed (dk__call_error): its event, the innermost open one on this
   thread if it is op's, says so. */
DK__PRIVATE void dk__tl_failed(const dk_operator *op, dk_status status) {
    dk__tl_buffer *b = dk__tl_mine;
    dk__tl_event *e;
    char name[DK__TL_NAME];
    if (!b || b->open < 0 || b->gen != DK__LOAD_RLX(&dk__tl_gen)) return;
    e = &b->events[b->open];
    dk__tl_name(name, op->name);
    if (strcmp(e->op, name) != 0) return;   /* not in its own call: a boxed stack refused */
    e->flags |= DK__TL_FAILED;
    e->status = (int)status;
}

/* A timeline of dispatches, written as Chrome trace event JSON (the format
   chrome://tracing and Perfetto open). Opt-in and built on the trace hook:
   dk_timeline_start sets the hook (replacing one set with dk_trace_set;
   dk_trace_set while it records stops its events, and dk_timeline_stop
   then leaves the new hook), so a program that never starts one pays
   nothing on its calls. While it records, every
   typed call (DK_DECLARE_OP's, gen/'s), redispatch and boxed call is one
   complete event: the operator's name, the key of the slot that ran, the
   kernel's debug text ("registered at file:line"; fallthrough, missing,
   a fallback's), the thread (numbered 1, 2, ... in the order threads
   first recorded), begin and duration, nested
   under the call whose kernel redispatched it (its "parent" and "depth"
   args, and in time). A call that lands on a boxed kernel or fallback says
   so ("boxed": 1, "fallback": 1); a failed call (no kernel, ambiguous,
   fallthrough called, a kernel's dk_call_fail) has "failed": 1 and its
   status. A call whose dispatch primitive the caller used alone (no
   dk_trace_begin) is not an event.
   Each thread records into a buffer of its own, allocated on its first
   event (no lock on the call path, and calls take a few hundred ns more
   while recording: the clock twice and the names copied, at most 63 bytes
   each, a longer one keeping its end after "..."). Memory is bounded: at
   most events_per_thread events a thread (0: 16,384; 160 bytes each)
   from its first event on, later ones dropped and counted; the file says
   the cap and the number dropped ("otherData"). A buffer stays allocated
   until the process ends (a thread's later recordings reuse its own).
   dk_timeline_start begins a new recording (the last one's events are
   forgotten) and returns DK_OK; a thread whose buffer cannot be allocated
   records nothing. Under -DDK_NO_TRACE nothing is recorded (calls never
   test the hook). dk_timeline_stop ends it (the hook cleared if it is
   still the timeline's); dk_timeline_save writes the last recording's events to
   path, after dk_timeline_stop (DK_ERR_BAD_ARGUMENT while recording; a
   call still running then has "open": 1 and the duration it had so far);
   DK_ERR_NULL for a NULL path, DK_ERR_BAD_ARGUMENT if the file cannot be
   written. */
DK_API dk_status dk_timeline_start(size_t events_per_thread) {
    unsigned g;
    dk__mutex_lock(&dk__global_lock);
    g = DK__LOAD_RLX(&dk__tl_gen);
    DK__STORE_RLX(&dk__tl_cap, events_per_thread ? events_per_thread : (size_t)DK__TL_DEFAULT_EVENTS);
    dk__tl_t0 = dk__now_ns();
    DK__STORE_REL(&dk__tl_gen, (g | 1) + 2);   /* a new odd generation */
    dk__mutex_unlock(&dk__global_lock);
    dk_trace_set(dk__tl_hook, NULL);
    return DK_OK;
}

DK_API void dk_timeline_stop(void) {
    dk__mutex_lock(&dk__global_lock);
    DK__STORE_REL(&dk__tl_gen, DK__LOAD_RLX(&dk__tl_gen) & ~1u);
    dk__mutex_unlock(&dk__global_lock);
    if (DK__LOAD_RLX(&dk__trace_hook) == dk__tl_hook) dk_trace_set(NULL, NULL);
}

DK__COLD_BEGIN
/* s as a JSON string's contents */
DK__PRIVATE void dk__tl_json(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
}

DK_API dk_status dk_timeline_save(const char *path) {
    FILE *f;
    const dk__tl_buffer *b;
    unsigned gen = DK__LOAD_ACQ(&dk__tl_gen) | 1, id = 0;
    size_t dropped = 0;
    uint64_t now;
    int first = 1, ok;
    if (!path) return dk__fail(DK_ERR_NULL, "timeline_save: NULL path");
    if (DK__LOAD_ACQ(&dk__tl_gen) & 1)
        return dk__fail(DK_ERR_BAD_ARGUMENT, "timeline_save: the timeline is recording (dk_timeline_stop first)");
    if (!(f = fopen(path, "w")))
        return dk__fail(DK_ERR_BAD_ARGUMENT, "timeline_save: cannot write %s", path);
    now = dk__now_ns() - dk__tl_t0;
    fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n", f);
    for (b = DK__LOAD_ACQ(&dk__tl_all); b; b = b->next) {
        size_t i, n;
        if (DK__LOAD_ACQ(&b->gen) != gen) continue;
        n = DK__LOAD_ACQ(&b->n);
        dropped += b->dropped;
        fprintf(f, "%s{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": %u, \"args\": {\"name\": "
                   "\"thread %u\"}}", first ? "" : ",\n", b->tid, b->tid);
        first = 0;
        for (i = 0; i < n; i++) {
            const dk__tl_event *e = &b->events[i];
            uint64_t end = DK__LOAD_RLX64(&e->end), dur;
            int open = end == 0;
            dur = open ? (now > e->begin ? now - e->begin : 0) : end - 1 - e->begin;
            fputs(",\n{\"ph\": \"X\", \"name\": \"", f);
            dk__tl_json(f, e->op);
            fprintf(f, "\", \"cat\": \"%s\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"id\": %u, "
                       "\"parent\": %d, \"depth\": %u, \"key\": \"",
                    e->flags & DK__TL_FAILED ? "failed" : e->flags & DK__TRACE_BOXED ? "boxed call"
                    : e->flags & 1 ? "redispatch" : "call",
                    b->tid, (double)e->begin / 1000.0, (double)dur / 1000.0, id + (unsigned)i,
                    e->parent < 0 ? -1 : (int)(id + (unsigned)e->parent), (unsigned)e->depth);
            dk__tl_json(f, dk_key_name((dk_key)e->key));
            fputs("\", \"kernel\": \"", f);
            dk__tl_json(f, e->kernel);
            fprintf(f, "\", \"redispatch\": %d, \"boxed_call\": %d, \"boxed\": %d, \"fallback\": %d",
                    e->flags & 1 ? 1 : 0, e->flags & DK__TRACE_BOXED ? 1 : 0, e->flags & DK__TL_BOXED_KERNEL ? 1 : 0,
                    e->flags & DK__TL_FALLBACK ? 1 : 0);
            if (e->flags & DK__TL_FAILED)
                fprintf(f, ", \"failed\": 1, \"status\": \"%s\"",
                        dk_status_message((dk_status)e->status) ? dk_status_message((dk_status)e->status) : "?");
            if (open) fputs(", \"open\": 1", f);
            fputs("}}", f);
        }
        id += (unsigned)n;
    }
    fprintf(f, "\n], \"otherData\": {\"recorder\": \"dispatch.h timeline\", \"events_per_thread\": %lu, "
               "\"dropped\": %lu, \"events\": %u}}\n",
            (unsigned long)DK__LOAD_RLX(&dk__tl_cap), (unsigned long)dropped, id);
    ok = !ferror(f);
    if (fclose(f) != 0) ok = 0;
    return ok ? DK_OK : dk__fail(DK_ERR_BAD_ARGUMENT, "timeline_save: writing %s failed", path);
}

DK__COLD_END

/* >>impl-names -------------------------------------------------------------- */

/* Every key value's name, generated from the lists (ORDER KEYS). Markers
   print as the preset's c10 prints them: StartOf<F>Backends (the runtime
   key of F without a backend, what a keyset with F's bit and no backend bit
   names) as <Prefix>Undefined in the 2.x presets ("Undefined" for Dense's,
   which parses as Undefined: its enumerator name parses to it), as
   <Prefix>Unknown in 1.13.1's and in user lists; EndOfFunctionalityKeys as
   UnknownUnknown in all. */
#if DK_C10_VERSION >= 20000
#define DK__MARKER_WORD "Undefined"
#else
#define DK__MARKER_WORD "Unknown"
#endif
#define DK__FK_NAME(name, pb, prefix, roles, extra) #name,
#define DK__RT_NAME(name, own_ag, autocast, functional, prefix) DK__STR(prefix) #name,
#define DK__FK_BLOCK_NAMES(name, pb, prefix, roles, extra) \
    DK__PER_BACKEND_##pb(DK__STR(prefix) DK__MARKER_WORD, DK_FORALL_BACKEND_COMPONENTS(DK__RT_NAME, prefix))
#define DK__ALIAS_NAME(name, set, extra) #name,
static const char *const dk__key_names[DK_NUM_KEYS] = {
    "Undefined",
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_NAME, ~)
    "UnknownUnknown",
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_BLOCK_NAMES, ~)
    DK_FORALL_ALIAS_KEYS(DK__ALIAS_NAME, ~)
};
#undef DK__FK_NAME
#undef DK__RT_NAME
#undef DK__FK_BLOCK_NAMES
#undef DK__ALIAS_NAME
#undef DK__MARKER_WORD

/* The markers' enumerator names, which parse too (earlier versions printed
   them): EndOfFunctionalityKeys, then StartOf<F>Backends per block. */
#define DK__FK_MARKER_NAME(name, pb, prefix, roles, extra) DK__PER_BACKEND_##pb("StartOf" #name "Backends",)
static const char *const dk__marker_names[DK_NUM_PER_BACKEND_FUNCTIONALITIES + 1] = {
    "EndOfFunctionalityKeys", DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_MARKER_NAME, ~)
};
#undef DK__FK_MARKER_NAME
/* Runtime-key name prefix of each per-backend functionality, block order. */
#define DK__FK_PB_PREFIX(name, pb, prefix, roles, extra) DK__PER_BACKEND_##pb(DK__STR(prefix),)
static const char *const dk__pb_prefixes[DK_NUM_PER_BACKEND_FUNCTIONALITIES + 1] = {
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_PB_PREFIX, ~) ""
};
#undef DK__FK_PB_PREFIX

/* Backend components: the enumerator names (DK_<Name>Bit without DK_),
   which always parse, and the names they print (c10 2.x prints MTIA and
   MAIA without "Bit": Functional 2). */
#define DK__BC_NAME(name, own_ag, autocast, functional, extra) #name "Bit",
static const char *const dk__backend_names[DK_NUM_BACKENDS + 1] = {
    "InvalidBit", DK_FORALL_BACKEND_COMPONENTS(DK__BC_NAME, ~)
};
#undef DK__BC_NAME
#define DK__BC_PRINTED(name, own_ag, autocast, functional, extra) ((functional) & 2) ? #name : #name "Bit",
static const char *const dk__backend_printed[DK_NUM_BACKENDS + 1] = {
    "InvalidBit", DK_FORALL_BACKEND_COMPONENTS(DK__BC_PRINTED, ~)
};
#undef DK__BC_PRINTED

/* Note [Backend names]. dk_backend_rename gives a PrivateUse backend a
   name, process-wide: key values are process-wide and dk_key_name,
   dk_key_parse and keyset printing take no registry. A name is one
   immutable record, built under dk__global_lock and published with one
   release store into dk__renamed[b]; it is never changed or freed, so a
   reader (a failing call formatting its message included) takes no lock
   and sees the old names or the new ones, never a mix. As c10's
   register_privateuse1_backend: once per backend (again with the same
   name is a no-op), at any time, since keys keep their values. */
enum { DK__BACKEND_NAME_MAX = 32 };
typedef struct dk__backend_alias {
    const char *given;        /* "npu", as given: parses as the backend's plain-kernel key (Dense's) and component */
    const char *bit;          /* "NPUBit": dk_backend_name */
    /* per per-backend functionality block: <Prefix><NAME> ("NPU", "AutogradNPU");
       the name upper-cased, as c10's get_privateuse1_backend(false) */
    const char *keys[DK_NUM_PER_BACKEND_FUNCTIONALITIES + 1];
} dk__backend_alias;
static dk__backend_alias *dk__renamed[DK_NUM_BACKENDS + 1];

/* A runtime key's block (its per-backend functionality's index in list order). */
DK__PRIVATE int dk__pb_block(dk_key k) { return (int)((k - DK_EndOfFunctionalityKeys - 1) / (DK_NUM_BACKENDS + 1)); }

/* Names exactly as the preset's c10 prints them ("CPU", "AutogradCUDA",
   "CPUBit"; 2.x: "MTIA" for MTIABit); markers too: StartOf<F>Backends (the
   key of a keyset with F's bit and no backend bit) as <Prefix>Unknown
   ("Unknown", "AutogradUnknown") in 1.13.1 and user lists, as
   <Prefix>Undefined ("Undefined", "AutogradUndefined") in the 2.x presets,
   EndOfFunctionalityKeys as "UnknownUnknown"; their enumerator names
   parse (StartOfDenseBackends, EndOfFunctionalityKeys; "MTIABit").
   NULL for a value out of range. */
DK_API const char *dk_key_name(dk_key k) {
    if ((unsigned)k >= (unsigned)DK_NUM_KEYS) return NULL;
    if (k > DK_EndOfFunctionalityKeys && k <= DK_EndOfRuntimeBackendKeys) {
        const dk__backend_alias *a = DK__LOAD_ACQ(&dk__renamed[dk_key_backend(k)]);
        if (a) return a->keys[dk__pb_block(k)];
    }
    return dk__key_names[k];
}

DK_API const char *dk_backend_name(dk_backend b) {
    const dk__backend_alias *a;
    if ((unsigned)b > (unsigned)DK_NUM_BACKENDS) return NULL;
    a = DK__LOAD_ACQ(&dk__renamed[b]);
    return a ? a->bit : dk__backend_printed[b];
}

DK__PRIVATE int dk__find_name(const char *const *names, int n, const char *name) {
    int i;
    for (i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

/* the plain-kernel row: the first per-backend backend functionality
   (Dense; a user list may call it anything) */
#define DK__KEY_PLAIN_BACKEND DK__PB_ROLE_KEY(DK_R_BACKEND_FN)

/* The key a name denotes (built-in names first, then the renamed backends'
   names, then the markers' enumerator names), or -1. */
DK__PRIVATE int dk__key_lookup(const char *name) {
    int i, b;
    if ((i = dk__find_name(dk__key_names, DK_NUM_KEYS, name)) >= 0) return i;
    for (b = 1; b <= DK_NUM_BACKENDS; b++) {
        const dk__backend_alias *a = DK__LOAD_ACQ(&dk__renamed[b]);
        if (!a) continue;
        if ((int)DK__KEY_PLAIN_BACKEND != 0 && strcmp(a->given, name) == 0)   /* the plain-kernel row's block */
            i = dk__pb_block((dk_key)(dk__per_backend_start[DK__KEY_PLAIN_BACKEND] + 1));
        else i = dk__find_name(a->keys, DK_NUM_PER_BACKEND_FUNCTIONALITIES, name);
        if (i >= 0) return DK_EndOfFunctionalityKeys + 1 + i * (DK_NUM_BACKENDS + 1) + b;
    }
    if ((i = dk__find_name(dk__marker_names, DK_NUM_PER_BACKEND_FUNCTIONALITIES + 1, name)) == 0)
        return DK_EndOfFunctionalityKeys;
    return i > 0 ? DK_EndOfFunctionalityKeys + 1 + (i - 1) * (DK_NUM_BACKENDS + 1) : -1;
}

/* The backend component a name denotes ("CPUBit", "MTIA" or "MTIABit"; a
   renamed one's "NPUBit" or "npu"), or -1. */
DK__PRIVATE int dk__backend_lookup(const char *name) {
    int b = dk__find_name(dk__backend_printed, DK_NUM_BACKENDS + 1, name);
    if (b >= 0 || (b = dk__find_name(dk__backend_names, DK_NUM_BACKENDS + 1, name)) >= 0) return b;
    for (b = 1; b <= DK_NUM_BACKENDS; b++) {
        const dk__backend_alias *a = DK__LOAD_ACQ(&dk__renamed[b]);
        if (a && (strcmp(a->bit, name) == 0 || strcmp(a->given, name) == 0)) return b;
    }
    return -1;
}

/* Name -> key. Every name dk_key_name returns parses back (2.x's
   "Undefined" to Undefined, not to StartOfDenseBackends); unknown names give
   DK_ERR_UNKNOWN_KEY ("could not parse dispatch key: X", c10's words) and
   leave *out untouched. */
DK_API dk_status dk_key_parse(const char *name, dk_key *out) {
    int i;
    if (!name || !out) return dk__fail(DK_ERR_NULL, "dk_key_parse: NULL argument");
    if ((i = dk__key_lookup(name)) < 0) return dk__fail(DK_ERR_UNKNOWN_KEY, "could not parse dispatch key: %s", name);
    *out = (dk_key)i;
    return DK_OK;
}

DK_API dk_status dk_backend_parse(const char *name, dk_backend *out) {
    int i;
    if (!name || !out) return dk__fail(DK_ERR_NULL, "dk_backend_parse: NULL argument");
    if ((i = dk__backend_lookup(name)) < 0)
        return dk__fail(DK_ERR_UNKNOWN_KEY, "could not parse backend component: %s", name);
    *out = (dk_backend)i;
    return DK_OK;
}

/* ---- dk_backend_rename (Note [Backend names]) ---- */

/* A name that is already a key's or a backend component's, or -1. */
DK__PRIVATE int dk__name_taken(const char *name) { return dk__key_lookup(name) >= 0 || dk__backend_lookup(name) >= 0; }

/* A backend name: an identifier of 1 to DK__BACKEND_NAME_MAX characters. */
DK__COLD_BEGIN
DK__PRIVATE int dk__backend_name_ok(const char *s) {
    size_t n = 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) return 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_')
        n++;
    return s[n] == '\0' && n <= DK__BACKEND_NAME_MAX;
}

/* The record for `name` (a valid name), or NULL out of memory. */
DK__PRIVATE dk__backend_alias *dk__backend_alias_new(const char *name) {
    size_t n = strlen(name), size = sizeof(dk__backend_alias) + 2 * n + 5, i, j;
    char *p, upper[DK__BACKEND_NAME_MAX + 1];
    dk__backend_alias *a;
    for (j = 0; j < DK_NUM_PER_BACKEND_FUNCTIONALITIES; j++) size += strlen(dk__pb_prefixes[j]) + n + 1;
    if (!(a = (dk__backend_alias *)malloc(size))) return NULL;
    for (i = 0; i <= n; i++) upper[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 'a' + 'A' : name[i]);
    p = (char *)(a + 1);
    a->given = strcpy(p, name), p += n + 1;
    a->bit = strcat(strcpy(p, upper), "Bit"), p += n + 4;
    for (j = 0; j < DK_NUM_PER_BACKEND_FUNCTIONALITIES; j++)
        a->keys[j] = strcat(strcpy(p, dk__pb_prefixes[j]), upper), p += strlen(a->keys[j]) + 1;
    a->keys[j] = NULL;
    return a;
}

/* DK_OK, or why record a (for `name`) cannot name backend b. */
DK__PRIVATE dk_status dk__rename_check(dk_backend b, const char *name, const dk__backend_alias *a) {
    size_t j;
    const char *what = dk__backend_names[b];
    if (dk__name_taken(a->given))
        return dk__fail(DK_ERR_BAD_NAME, "rename_backend(%s, \"%s\"): '%s' already names a dispatch key or backend",
                        what, name, a->given);
    for (j = 0; j < DK_NUM_PER_BACKEND_FUNCTIONALITIES; j++)
        if (dk__name_taken(a->keys[j]))
            return dk__fail(DK_ERR_BAD_NAME, "rename_backend(%s, \"%s\"): its key '%s' would have the name of "
                            "another dispatch key", what, name, a->keys[j]);
    if (dk__name_taken(a->bit))
        return dk__fail(DK_ERR_BAD_NAME, "rename_backend(%s, \"%s\"): '%s' already names a backend component",
                        what, name, a->bit);
    return DK_OK;
}

/* Names a PrivateUse backend component (c10's rename_privateuse1_backend):
   after dk_backend_rename(DK_PrivateUse1Bit, "npu"), its keys print as
   NPU, AutogradNPU, SparseNPU, ... (the name upper-cased, as c10 prints it
   in errors) and the component as NPUBit, everywhere: dk_key_name, keyset
   texts, errors, dumps, dk_explain. "npu", "NPU", "AutogradNPU", "NPUBit"
   parse; the PrivateUse1 names still do. The name is process-wide (as
   keys are: no registry), thread-safe and lock-free for
   readers, and set once: the same name again is DK_OK, another one
   DK_ERR_ALREADY_NAMED. DK_ERR_BAD_KEY for a component that is not a
   PrivateUse one, DK_ERR_BAD_NAME for a name that is not an identifier
   of 1 to 32 characters or that would make a name some key or component
   already has (renaming to "cpu" would make "CPU"). */
DK_API dk_status dk_backend_rename(dk_backend b, const char *name) {
    const dk__backend_alias *cur;
    dk__backend_alias *a;
    dk_status s = DK_OK;
    if (!name) return dk__fail(DK_ERR_NULL, "rename_backend: NULL name");
    if ((unsigned)b - 1u >= (unsigned)DK_NUM_BACKENDS || strncmp(dk__backend_names[b], "PrivateUse", 10) != 0)
        return dk__fail(DK_ERR_BAD_KEY, "rename_backend(%d, \"%s\"): only a PrivateUse backend component can be "
                        "renamed, not %s", (int)b, name, dk_backend_name(b) ? dk_backend_name(b) : "(out of range)");
    if (!dk__backend_name_ok(name))
        return dk__fail(DK_ERR_BAD_NAME, "rename_backend(%s, \"%s\"): a backend name is an identifier of 1 to %d "
                        "characters", dk__backend_names[b], name, (int)DK__BACKEND_NAME_MAX);
    dk__mutex_lock(&dk__global_lock);
    if ((cur = dk__renamed[b]) != NULL) {
        if (strcmp(cur->given, name) != 0)
            s = dk__fail(DK_ERR_ALREADY_NAMED, "rename_backend(%s, \"%s\"): Backend name has already been set to %s",
                         dk__backend_names[b], name, cur->given);
    } else if (!(a = dk__backend_alias_new(name))) {
        s = dk__fail(DK_ERR_NO_MEMORY, "rename_backend: out of memory");
    } else if ((s = dk__rename_check(b, name, a)) != DK_OK) {
        free(a);
    } else {
        DK__STORE_REL(&dk__renamed[b], a);
    }
    dk__mutex_unlock(&dk__global_lock);
    return s;
}

DK__COLD_END

/* Appends text at *len, keeping buf NUL-terminated within size. */
DK__PRIVATE void dk__append(char *buf, size_t size, size_t *len, const char *text) {
    size_t n = strlen(text);
    if (*len < size) {
        size_t room = size - *len - 1;
        memcpy(buf + *len, text, n < room ? n : room);
        buf[*len + (n < room ? n : room)] = '\0';
    }
    *len += n;
}

DK__COLD_BEGIN
DK__PRIVATE void dk__append_keyset(char *buf, size_t size, size_t *len, dk_keyset ks) {
    dk_key k;
    const char *sep = "";
    /* EndOfFunctionalityKeys's bit is no key's and c10 prints nothing for
       it (1.13.1 and 2.11 alike); the bits above it, UnknownBits below */
    uint64_t unknown = ks.repr & ~DK__R_FULL;
    if (DK_NUM_KEYSET_BITS < 64) unknown &= ~((uint64_t)1 << (DK_NUM_KEYSET_BITS & 63));
    dk__append(buf, size, len, "DispatchKeySet(");
    DK_KS_FOREACH(k, ks) {
        if (k == DK_EndOfFunctionalityKeys) break;
        dk__append(buf, size, len, sep);
        dk__append(buf, size, len, dk_key_name(k));
        sep = ", ";
    }
    if (unknown) { /* bits above every key */
        char hexbits[40];
        snprintf(hexbits, sizeof hexbits, "UnknownBits(0x%llx)", (unsigned long long)unknown);
        dk__append(buf, size, len, sep);
        dk__append(buf, size, len, hexbits);
    }
    dk__append(buf, size, len, ")");
}

/* Every function that writes text (dk_ks_to_string, dk_op_state_to_string,
   dk_op_computed_table_to_string, dk_explain_to_string, dk_schema_to_string)
   follows snprintf: it writes at most size - 1 characters and a NUL when
   size > 0, nothing when buf is NULL or size is 0, and returns the length
   of the whole text, so a second call with a buffer of that length + 1
   gets all of it.
   dk_ks_to_string writes "DispatchKeySet(CPU, AutogradCPU)". The bit of
   EndOfFunctionalityKeys (no key's) prints nothing, as in c10 (1.13.1 and
   2.11: "DispatchKeySet()" for it alone); the bits above it print last, as
   "UnknownBits(0x8000000000000000)" (c10 aborts on them). */
DK_API int dk_ks_to_string(dk_keyset ks, char *buf, size_t size) {
    size_t len = 0;
    if (buf && size) buf[0] = '\0';
    else size = 0;
    dk__append_keyset(buf, size, &len, ks);
    return (int)len;
}

DK__COLD_END

/* >>impl-slots --------------------------------------------------------------- */

/* The tables the inline functions read (Note [Tables in one unit]). */
#ifndef DISPATCH_STATIC
#define DK__TABLE_DEFINE(type, name, init) const type name = init();
DK__SLOT_NUMBERS
DK__SLOT_ENUMS
DK__ENTRY_ENUMS
DK__TABLE_DEFINE(dk__offset_masks, dk__offsets_and_masks, DK__OFFSETS_AND_MASKS_INIT)
DK__TABLE_DEFINE(dk__slot_cells, dk__slot_by_bit_backend, DK__SLOT_BY_BIT_BACKEND_INIT)
DK__TABLE_DEFINE(dk__pb_starts, dk__per_backend_start, DK__PER_BACKEND_START_INIT)
DK__TABLE_DEFINE(dk__fk_roles, dk__functionality_roles, DK__FUNCTIONALITY_ROLES_INIT)
DK__TABLE_DEFINE(dk__entry_cells, dk__entry_by_backend_bit, DK__ENTRY_BY_BACKEND_BIT_INIT)
DK__TABLE_DEFINE(dk__slot_entry_offsets, dk__entry_by_slot, DK__ENTRY_BY_SLOT_INIT)
DK__TABLE_DEFINE(dk__guard_keysets, dk__guard_sets, DK__GUARD_SETS_INIT)
DK__AGR_ENUMS
DK__TABLE_DEFINE(dk__backend_keysets, dk__autograd_related, DK__AUTOGRAD_RELATED_INIT)
#undef DK__TABLE_DEFINE
#endif

DK_STATIC_ASSERT((int)DK__SLOT_END == (int)DK_NUM_SLOTS, "runtime slots: c10's num_runtime_entries formula");
#define DK__COUNT_PB(name, pb, prefix, roles, extra) + pb
#define DK__COUNT_ALIAS(name, set, extra) + 1
DK_STATIC_ASSERT((int)DK_NUM_PER_BACKEND_FUNCTIONALITIES == 0 DK_FORALL_FUNCTIONALITY_KEYS(DK__COUNT_PB, ~),
                 "per-backend functionalities: the key values' count is the rows'");
DK_STATIC_ASSERT((int)DK_NUM_ALIAS_KEYS == 0 DK_FORALL_ALIAS_KEYS(DK__COUNT_ALIAS, ~), "alias keys: one a row");
#undef DK__COUNT_PB
#undef DK__COUNT_ALIAS
#define DK__FIRST_PB_SLOT_OF(name, pb, prefix, roles, extra) pb ? DK__SLOT_##name :
DK_STATIC_ASSERT((int)DK__ROW_FIRST_SLOT == (int)(DK_FORALL_FUNCTIONALITY_KEYS(DK__FIRST_PB_SLOT_OF, ~) 0),
                 "the rows' slots: the first per-backend functionality's, whose key value is its first slot");
#undef DK__FIRST_PB_SLOT_OF
/* (>>tls: dk__tls.included_row starts at 0, row 0 of the defaults) */
DK_STATIC_ASSERT((DK__R_DEFAULT_INCLUDED & DK__R_BACKENDS) == 0, "included by default: functionality keys only (row 0)");

/* This thread's state is c10's defaults (never changed, or every guard
   popped). */
/* The functions >>keys and >>tls declare whose named keysets expand the
   role lists: compiled here once rather than in every unit. */
DK_API int dk_tls_is_default(void) {
    return dk__tls.included == DK__R_DEFAULT_INCLUDED && dk__tls.excluded == DK__R_DEFAULT_EXCLUDED &&
           dk__tls.keep == (DK__R_BACKENDS | ~DK__R_DEFAULT_EXCLUDED);
}

DK_API dk_key dk_ks_highest_backend_key(dk_keyset a) {
    return dk_ks_highest_key(dk_ks_and(a, DK_KS_BACKEND_FUNCTIONALITY));
}

DK_API int dk_key_is_backend(dk_key k) {
    return !dk_key_is_alias(k) && dk_ks_has(DK_KS_BACKEND, k);
}

/* A user alias row's set: KEYS(k1, ..., k4), up to four functionality keys
   of the lists, each on every backend when it is per backend (an alias for
   "Accessibility on every backend"). Such an alias plays no resolution role
   (DK__SET_KEYS is 0): a fallback at it registers each of its runtime keys,
   a kernel (dk_impl) goes to the runtime keys themselves. */
#define DK__R_KEYS(...) (DK__R_BACKENDS | DK__KEYS_N(__VA_ARGS__, DK__KEYS4, DK__KEYS3, DK__KEYS2, DK__KEYS1, ~)(__VA_ARGS__))

#define DK__KEYS_N(a, b, c, d, n, ...) n

#define DK__KEYS1(a) DK__FBIT(DK_##a)

#define DK__KEYS2(a, b) DK__FBIT(DK_##a) | DK__FBIT(DK_##b)

#define DK__KEYS3(a, b, c) DK__FBIT(DK_##a) | DK__FBIT(DK_##b) | DK__FBIT(DK_##c)

#define DK__KEYS4(a, b, c, d) DK__FBIT(DK_##a) | DK__FBIT(DK_##b) | DK__FBIT(DK_##c) | DK__FBIT(DK_##d)

/* Runtime keyset of an alias key (c10 getRuntimeDispatchKeySet); for a
   non-alias key, the key's own set. See docs/c10.md, "Differences from c10":
   FuncTorchBatchedDecomposition maps to {FuncTorchBatched} (c10: empty). */
DK_API dk_keyset dk_alias_runtime_set(dk_key alias) {
#define DK__ALIAS_SET(name, set, extra) if (alias == DK_##name) return dk_ks_raw(DK__R_##set);
    DK_FORALL_ALIAS_KEYS(DK__ALIAS_SET, ~)
#undef DK__ALIAS_SET
    return dk_ks_from_key(alias);
}

/* c10's DispatchKeySet(FULL_AFTER, k) for any key: a per-backend runtime key
   (or its block's StartOf marker) counts as its functionality (AutogradCPU
   as AutogradFunctionality: every backend bit stays). An alias key gives
   what is below every key it stands for: FULL_AFTER of the lowest
   functionality in dk_alias_runtime_set (Autograd: DK_KS_AFTER_AUTOGRAD),
   so a fallback at an alias key that redispatches to dk_ks_and(ks,
   dk_ks_full_after(alias)) never reaches itself (c10 gives its value for
   Undefined, which does). Undefined and values out of range have no
   functionality and give c10's value for Undefined: the backend bits below
   the highest one, plus PythonDispatcher (1.13.1: 0x20000000001fff, 2.11:
   0x4000000000007fff); EndOfFunctionalityKeys gives FULL. */
DK_API dk_keyset dk_ks_full_after(dk_key k) {
    dk_key f = (unsigned)k >= (unsigned)DK_StartOfAliasKeys ? DK_Undefined : dk_key_functionality(k);
    if (dk_key_is_alias(k)) {   /* below the lowest functionality the alias stands for */
        uint64_t fbits = (dk_alias_runtime_set(k).repr >> DK_NUM_BACKENDS) & DK__FBITS_KEYS;
        return dk_ks_raw(DK__R_FULL_AFTER((dk_key)(fbits ? dk__lowest_bit(fbits) + 1 : 1)));
    }
    return dk_ks_raw(f == DK_EndOfFunctionalityKeys ? DK__R_FULL : DK__R_FULL_AFTER_C10(f));
}

/* Backend bits of the components whose autograd key sits on their plain
   key (OwnAutograd 1). */
#define DK__BC_OWN_AUTOGRAD(name, own_ag, autocast, functional, extra) | ((own_ag) == 1 ? DK__BBIT(DK_##name##Bit) : 0)

DK_API dk_keyset dk_autograd_key_backend_set(dk_key k) {
    uint64_t own = (uint64_t)0 DK_FORALL_BACKEND_COMPONENTS(DK__BC_OWN_AUTOGRAD, ~);
    dk_key f = dk_key_functionality(k);
    dk_backend b = dk_key_backend(k);
    if (k == DK_Undefined || f == DK_Undefined || !dk_key_has_role(f, DK_R_AUTOGRAD)) return DK_KS_EMPTY;
    if (dk_key_has_role(f, DK_R_AUTOGRAD_OTHER)) return DK_KS_OTHER_BACKENDS;
    if (dk_key_has_role(f, DK_R_NESTED)) /* AutogradNestedTensor: every NestedTensor key */
        return dk_ks_raw((DK__ROLE_BITS(DK_R_NESTED) & ~DK__R_AUTOGRAD) | DK__R_BACKENDS);
    if (b != DK_InvalidBit && (own & dk_ks_from_backend(b).repr) && (int)DK__KEY_PLAIN_BACKEND != 0)
        return dk_ks_from_key(dk_key_runtime((dk_key)DK__KEY_PLAIN_BACKEND, b));
    return DK_KS_EMPTY;
}

DK_API dk_keyset dk_backend_autocast_set(dk_backend b) {
#define DK__BC_AUTOCAST(name, own_ag, autocast, functional, extra) \
    if (b == DK_##name##Bit) return dk_ks_from_key(DK_##autocast);
    DK_FORALL_BACKEND_COMPONENTS(DK__BC_AUTOCAST, ~)
#undef DK__BC_AUTOCAST
    return DK_KS_EMPTY;
}

/* c10's runtime-key table: slot -> key. */
#define DK__RT_SLOT_KEY(name, own_ag, autocast, functional, prefix) DK_##prefix##name,
#define DK__FK_SLOT_KEYS(name, pb, prefix, roles, extra) \
    DK__PER_BACKEND_##pb(DK_FORALL_BACKEND_COMPONENTS(DK__RT_SLOT_KEY, prefix)) \
    DK__NOT_PER_BACKEND_##pb(DK_##name,)
static const dk_key dk__slot_keys[DK_NUM_SLOTS] = {
    DK_Undefined,
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_SLOT_KEYS, ~)
};
#undef DK__RT_SLOT_KEY
#undef DK__FK_SLOT_KEYS

DK_API dk_key dk_slot_key(int slot) {
    return slot >= 0 && slot < DK_NUM_SLOTS ? dk__slot_keys[slot] : DK_Undefined;
}

/* >>impl-config -------------------------------------------------------------- */

/* The implementation's signature: a literal, so that a unit of the same
   image whose identical literal the compiler or linker merged passes this
   very address (the one comparison no text can fool: the implementation's
   own memory holds nothing else while it is loaded); any other address is
   compared by its text, each time (a plugin may load where an unloaded one
   was, a foreign caller may reuse a buffer). */
static const char *const dk__own_signature = DK_CONFIG_SIGNATURE;

/* The implementation's own signature: what a caller without the header's
   macros (a foreign-function interface) passes as `signature`. */
DK_API const char *dk_config_signature(void) { return dk__own_signature; }

/* The item of a signature that starts at *p (up to ";" or the end, spaces
   trimmed): its start and length; *p moves past it. 0 at the end. */
DK__PRIVATE int dk__sig_item(const char **p, const char **start, int *len) {
    const char *s = *p, *e;
    while (*s == ' ') s++;
    if (!*s) { *p = s; return 0; }
    for (e = s; *e && *e != ';'; e++) {}
    *start = s;
    *len = (int)(e - s);
    while (*len > 0 && s[*len - 1] == ' ') (*len)--;
    *p = *e ? e + 1 : e;
    return 1;
}

DK_API dk_status dk__config_check(const char *caller_signature) {
    const char *own = dk__own_signature, *p = caller_signature, *q = own, *a = "", *b = "";
    int n = 0, la = 0, lb = 0, more_a, more_b;
    if (!caller_signature) return dk__fail(DK_ERR_NULL, "dk_config_check: NULL signature");
    if (caller_signature == own || strcmp(caller_signature, own) == 0) return DK_OK;
    for (;;) { /* the first item that differs */
        n++;
        more_a = dk__sig_item(&p, &a, &la);
        more_b = dk__sig_item(&q, &b, &lb);
        if (!more_a || !more_b || la != lb || memcmp(a, b, (size_t)la) != 0) break;
    }
    if (!more_a) { a = "(none: the caller's list ends here)"; la = (int)strlen(a); }
    if (!more_b) { b = "(none: the implementation's list ends here)"; lb = (int)strlen(b); }
    return dk__fail(DK_ERR_CONFIG_MISMATCH,
                    "dispatch.h: this translation unit was compiled in another configuration than the "
                    "implementation (the key lists, DK_CONFIG_HEADER or DK_PRESET_TORCH_1_13_1, and "
                    "DK_CALL_EPOCHS, DK_EXPLAIN_MAX_ARGS, DK_C10_VERSION, DK_SINGLE_THREADED must be the "
                    "same in every unit); item %d differs: caller '%.*s', implementation '%.*s' "
                    "(whole signatures: dk_config_signature() and DK_CONFIG_SIGNATURE)",
                    n, la, a, lb, b);
}

#ifndef DK_HASH64
#define XXH_INLINE_ALL
#include <xxhash.h>
#define DK_HASH64(ptr, len) XXH3_64bits((ptr), (len))
#endif

/* >>impl-registry ------------------------------------------------------------- */
DK__WARM_BEGIN

enum { DK__REG_DEF = 1, DK__REG_IMPL, DK__REG_FALLBACK, DK__REG_LISTENER };

struct dk_registration {
    /* first: dispatch tables point here; a def, which has no kernel, keeps
       its dk__def_part in these bytes instead (DK__DEF) */
    dk_kernel kernel;
    unsigned char type;           /* DK__REG_* */
    unsigned char live;           /* 0 once deregistered (until reclaimed) */
    unsigned char in_library;     /* 1: made by a library block; its dk__lib_link follows the type's part */
    struct dk__op *op;            /* def, impl */
    dk_registration *next;        /* op's impl list (newest first), listener list */
    /* A def or impl record ends here (DK__REG_SIZE): its registry is its
       operator's (dk__reg_registry); the rest is a fallback's, then a
       listener's, and the record holds only its type's part. */
    dk_registry *registry;        /* fallback, listener */
    dk_op_listener on_registered, on_deregistered;
};
/* The bytes of a record of type t (a DK__REG_*), its strings and defaults apart. */
#define DK__REG_SIZE(t)                                                                   \
    ((t) == DK__REG_LISTENER   ? sizeof(dk_registration)                                  \
     : (t) == DK__REG_FALLBACK ? offsetof(dk_registration, on_registered)                 \
                               : offsetof(dk_registration, registry))
/* A record made by a library block: the block, and the next record of its
   list (newest first); right after the record's type part, in those
   records only (DK__LIB_LINK). */
typedef struct dk__lib_link {
    dk_library *library;
    dk_registration *next;
} dk__lib_link;
#define DK__LIB_LINK(g) ((dk__lib_link *)(void *)((char *)(g) + DK__REG_SIZE((g)->type)))
/* A def's part of its record, where other records have their kernel: what
   its operator's table snapshots point at (their `def`): its parsed schema
   (c10's normalised text, the dispatch arguments and the argument counts
   are in it: DK__DEF_SCHEMA) in the record, after the defaults
   (dk__sp_copy); the defaults in the record, after its fixed part (the
   values, then list storage); adapters, tags, alias analysis; and its
   debug text. Only DK__DEF reads or writes a def's first bytes (never
   g->kernel), and dk__reg_debug any record's debug text. */
typedef struct dk__def_part {
    dk_op_def_info info;
    const char *debug;            /* "registered at file:line" */
    /* 1 + the number of arguments of a schema whose arguments are all
       plain Tensors (one at least, dispatch arguments, no varargs), else 0: dk_call_boxed's
       fast way checks such a stack and takes its keyset in one loop over
       the values (Note [Boxed fast way]) */
    uint32_t boxed_tensors;
} dk__def_part;
DK_STATIC_ASSERT(sizeof(dk__def_part) <= sizeof(dk_kernel), "a def's part fits in a kernel's bytes");
#define DK__DEF(g) ((dk__def_part *)(void *)(g))
DK_INLINE const char *dk__reg_debug(const dk_registration *g) {
    return g->type == DK__REG_DEF ? DK__DEF(g)->debug : g->kernel.debug;
}
/* A live def's schema text, c10's normalised form. */
#define DK__DEF_SCHEMA(def) ((const char *)DK__DEF(def)->info.parsed->text)

/* An operator, in a slot of its registry's slabs (below); its name, and the
   record of the def that created it, are in a block of their own (the
   operator's block, at pub.name: dk__op_prepare). */
typedef struct dk__op {
    dk_operator pub;              /* first: handles are dk_operator pointers */
    dk_registration *def;         /* at most one live def */
    dk_registration *impls;       /* live impls, newest first */
} dk__op;
/* Operators are kept dense, apart from their blocks and tables: a call's
   first load (pub.table) reads the slabs, a few MB for 10^5 operators,
   not one cache line per operator scattered in the heap. A slab is one
   allocation of DK__SLAB_MIN to DK__SLAB_MAX slots (16, 32, ... as slabs
   are added) that never moves; a slot is taken by a new operator and
   given back only once the removed operator's block is freed, with the
   newest block of its generation (dk__slot_retire), so a handle stays
   valid at least as long as that block; a slab with no slot in use is
   freed. Under AddressSanitizer a free slot is poisoned: a handle used
   after its operator's memory was freed is reported, not read as the
   operator that took the slot again. */
enum { DK__SLAB_MIN = 16, DK__SLAB_MAX = 256, DK__SLAB_WORDS = DK__SLAB_MAX / 64 };
typedef struct dk__slab {
    uint64_t used[DK__SLAB_WORDS];            /* slots holding an operator, live or removed */
    uint64_t waiting[2][DK__SLAB_WORDS];      /* removed, by generation (the registry's slab_mark) */
    unsigned n_slots, n_used, n_waiting[2];
} dk__slab;                                   /* followed by its n_slots slots */
#define DK__SLAB_SLOTS(s) ((dk__op *)(void *)((s) + 1))
/* The registry a record belongs to (a def's or impl's operator lives at
   least as long as the record can be read). */
DK_INLINE dk_registry *dk__reg_registry(const dk_registration *g) {
    return g->type == DK__REG_DEF || g->type == DK__REG_IMPL ? g->op->pub.registry : g->registry;
}

/* A lookup reads one bucket (two per cache line): a name shorter than
   DK__BUCKET_NAME bytes is compared there whole, a longer one there and
   then in the operator. */
#define DK__BUCKET_NAME 16
typedef struct dk__bucket {
    uint64_t hash;
    dk__op *op;
    char name[DK__BUCKET_NAME];   /* the name's first bytes, zero-padded */
} dk__bucket;
typedef struct dk__index {        /* open addressing, linear probing; removal leaves a tombstone */
    size_t mask, used;            /* used: live entries + tombstones */
    dk__bucket *buckets;          /* cache-line aligned, just past this header */
    const dk__op *tombstone;      /* the registry's */
} dk__index;

struct dk_library {
    dk_registry *registry;
    dk_library_kind kind;
    dk_key key;                   /* IMPL blocks; Undefined otherwise */
    int log_errors;               /* a static block: report failures through the logger */
    int failed;                   /* a registration of its block failed (counted once) */
    int closed;                   /* dk_library_close ran (kept until reclaimed) */
    dk_library **static_slot;     /* a static block's handle variable, cleared when closed */
    const void *object;           /* a static block's loaded object (dk_library_unload), or NULL */
    const char *ns, *debug, *where;  /* "registered at f:l", "f:l" */
    dk_registration *regs;        /* what the block registered, newest first */
    dk_library *next;             /* the registry's open libraries */
};

/* What resolution needs to know about a slot, computed once per registry:
   which alias roles cover its key (Undefined: c10's special rules), and the
   backend keys behind it when it is an autograd key. */
#define DK__ROLE_BIT(set, alias, reason) DK__IN_##alias = 1 << (DK__SET_##set - 1),
enum { DK__FORALL_ALIAS_ROLES(DK__ROLE_BIT) DK__IN_END_ };
#undef DK__ROLE_BIT
struct dk__slot_info {
    uint8_t in;                   /* DK__IN_* */
    uint8_t per_backend;          /* the key is a per-backend runtime key */
    uint8_t backend;              /* its backend index (0-based) */
    uint8_t autograd_other;       /* the AutogradOther slot (ambiguity rule) */
    uint8_t coupled;              /* its resolution looks at kernels of other keys */
    uint64_t fbit;                /* the key's functionality bit (0 for Undefined) */
    dk_keyset autograd_backends;  /* c10 getBackendKeySetFromAutograd */
};

/* The hooks calls read, published as one immutable record. */
typedef struct dk__hooks {
    dk_call_error_fn call_error;
    void *call_error_user_data;
    dk_keyset (*tensor_keyset)(const void *tensor, void *user_data);
    void *tensor_keyset_user_data;
    dk_logger logger;
    int c10_messages;
} dk__hooks;

/* The bytes of an operator's table (its snapshots are allocated and copied
   at this size): the whole struct, so that a snapshot copied as C copies a
   struct (dk_op_table t = *snapshot) stays inside its block,
   even where reasons_rest is not used (its byte and the padding: 8 bytes
   with the default lists). */
#define DK__TABLE_BYTES sizeof(dk_op_table)

/* Every allocation of a registry starts with this header (16 bytes with
   64-bit pointers): its size (for the statistics) with, in its low
   DK__SHIFT_BITS bits, the block's distance from the allocator's pointer
   (aligned tables; dk__block_size, dk__block_shift), and once retired the
   retired list's link. The grace periods are the list's batches' (the
   registry's `batches`), not each block's. An operator table's header may
   be after the table instead (dk__alloc_table): the list links the
   headers' `h`, which needs only a pointer's alignment. */
typedef struct dk__block_h { struct dk__block_h *next; size_t size_shift; } dk__block_h;
typedef union dk__block {
    dk__block_h h;
    long double align_ld;
    void *align_p;
    uint64_t align_u;
} dk__block;
/* alignments up to 32; the shift DK__SHIFT_TRAILER: the header is right
   after an operator table, at the allocator's pointer + DK__TABLE_BYTES */
enum { DK__SHIFT_BITS = 6, DK__SHIFT_TRAILER = (1 << DK__SHIFT_BITS) - 1 };
DK_INLINE size_t dk__block_size(const dk__block_h *b) { return b->size_shift >> DK__SHIFT_BITS; }
DK_INLINE size_t dk__block_shift(const dk__block_h *b) { return b->size_shift & (((size_t)1 << DK__SHIFT_BITS) - 1); }

/* Grace-period batches of retired blocks a registry tracks; past this many
   (threads that hold old epochs), the newest batch takes in the next with
   its later grace period: its blocks wait longer, never less. */
enum { DK__RETIRED_BATCHES = 16 };

/* The alignment of a block header: the most any field needs. */
typedef struct dk__max_align { char c; dk__block b; } dk__max_align;
#define DK__MAX_ALIGN offsetof(dk__max_align, b)
/* The alignment of what a record holds after it (a def's defaults and
   schema: values, pointers, doubles) and of a record in an operator's block. */
typedef struct dk__value_align { char c; dk_value v; } dk__value_align;
#define DK__VALUE_ALIGN offsetof(dk__value_align, v)
#define DK__ROUND_VALUE(n) (((n) + DK__VALUE_ALIGN - 1) / DK__VALUE_ALIGN * DK__VALUE_ALIGN)

struct dk_registry {
    dk__mutex lock;
    unsigned long blocks_run, blocks_failed;  /* library blocks (dk_library_blocks), under the lock */
    const char *owner;            /* &dk__me of the thread holding the lock, else NULL */
    dk_registry_desc desc;        /* alloc / free / no_default_fallthroughs */
    const dk__hooks *hooks;       /* published with release */
    dk__index *index;             /* published with release; read lock-free */
    dk__op **ops;                 /* by id; NULL = free id; only read under the lock */
    dk__slab **slabs;             /* where operators live, sorted by address (dk__slab_of) */
    uint32_t n_slabs, cap_slabs, slab_hint;   /* the slabs below slab_hint are full */
    /* the block of the newest operator removed in each generation of
       waiting slots: freeing slab_mark[0] gives generation 0's slots back
       (each block was retired at or before it), and 1 becomes 0 */
    const void *slab_mark[2];
    uint32_t n_ops, cap_ops;      /* ids in use are below n_ops */
    uint32_t live_ops, free_hint; /* no free id below free_hint */
    dk_registration *fallbacks[DK_NUM_SLOTS];
    /* the boxed fallback of each slot as calls read it (release / acquire);
       fallthrough fallbacks are in the tables instead (Note [Resolution]) */
    const dk_kernel *boxed_fallbacks[DK_NUM_SLOTS];
    dk_library *libraries;
    dk_registration *listeners;
    /* unpublished memory, oldest first: the list's batches, oldest first,
       each up to its newest block (`last`) with the grace period it waits
       for; the blocks after the newest batch's wait for the next one */
    dk__block_h *retired, *retired_last;
    struct { dk__block_h *last; uint64_t grace; } batches[DK__RETIRED_BATCHES];
    unsigned n_batches;
    size_t live_bytes, retired_bytes, retired_blocks;
    size_t pending_bytes;         /* retired, not yet tagged with a grace period */
    int warned_retired;           /* DK_LOG_RETIRED_MEMORY was logged */
    dk_kernel ambiguous;          /* sentinels: no table slot is ever NULL */
    dk_kernel missing[DK_NUM_SLOTS];   /* one per slot: it stands for the slot's boxed fallback (user_data:
                                          &boxed_fallbacks[slot]) */
    struct dk__slot_info slot_info[DK_NUM_SLOTS];
    int coupled[DK_NUM_SLOTS], n_coupled;   /* the slots whose slot_info.coupled is set */
    dk_op_table empty;            /* the table of an operator without kernels */
    dk__op tombstone;             /* marks a removed entry of the name index */
    dk_registry *next_registry;   /* every registry, listed under dk__global_lock (fork handlers) */
    int fork_locked;              /* its lock taken by dk__fork_prepare */
};

/* ---- locking ----------------------------------------------------------------

   Listeners and the logger run under the registry's lock. Read-only
   introspection from such a hook works (the lock knows its owner);
   registering from it fails with DK_ERR_REENTRANT instead of deadlocking. */
DK__PRIVATE int dk__owns(const dk_registry *r) { return DK__LOAD_RLX(&r->owner) == &dk__me; }

DK__PRIVATE void dk__lock(dk_registry *r) {
    dk__mutex_lock(&r->lock);
    DK__STORE_RLX(&r->owner, (const char *)&dk__me);
}
/* dk_registry_reclaim's way in: it never waits for a registration. */
DK__PRIVATE int dk__trylock(dk_registry *r) {
    if (!dk__mutex_trylock(&r->lock)) return 0;
    DK__STORE_RLX(&r->owner, (const char *)&dk__me);
    return 1;
}
DK__PRIVATE void dk__unlock(dk_registry *r) {
    DK__STORE_RLX(&r->owner, (const char *)NULL);
    dk__mutex_unlock(&r->lock);
}
/* For readers: locks unless this thread already holds the lock; returns
   whether it locked (pass it to dk__read_unlock). */
DK__PRIVATE int dk__read_lock(dk_registry *r) {
    if (dk__owns(r)) return 0;
    dk__lock(r);
    return 1;
}
DK__PRIVATE void dk__read_unlock(dk_registry *r, int locked) { if (locked) dk__unlock(r); }

DK__PRIVATE dk_status dk__reentrant(const char *what) {
    return dk__fail(DK_ERR_REENTRANT, "%s: called from a listener or the logger of the same registry, while it "
                                      "is changing (register from outside the hook)", what);
}

/* The hooks record calls read, and the logger (hooks and logging: below). */
DK__PRIVATE const dk__hooks *dk__hooks_of(const dk_registry *r) { return DK__LOAD_ACQ(&r->hooks); }

DK__PRIVATE void dk__log(dk_registry *r, dk_log_item item, const char *message) {
    dk__log_to(&dk__hooks_of(r)->logger, item, message);
}

/* ---- memory --------------------------------------------------------------- */

static void *dk__default_alloc(size_t n, void *ud) { (void)ud; return malloc(n); }
static void dk__default_free(void *p, void *ud) { (void)ud; free(p); }

/* n bytes after a block header; align (a power of two, or 1) is the
   alignment of the bytes, the header's shift how far it is from the
   allocator's pointer. The header needs DK__MAX_ALIGN (16 with x86-64's
   long double), which malloc's pointers have, so a larger align asks for
   align - DK__MAX_ALIGN bytes more; a pointer aligned less (a custom
   allocator: an arena's 8-aligned pointers) is given back and the
   allocation made again with the alignment's bytes - 1 more. NULL when out
   of memory, without a message (dk__alloc_aligned says it). */
DK_INLINE void *dk__alloc_quiet(dk_registry *r, size_t n, size_t align) {
    size_t a = align < DK__MAX_ALIGN ? DK__MAX_ALIGN : align;
    size_t slack = a - DK__MAX_ALIGN, total = sizeof(dk__block) + n + slack, shift;
    char *raw = total <= ((size_t)-1 >> DK__SHIFT_BITS) - a ? (char *)r->desc.alloc(total, r->desc.alloc_user_data)
                                                             : NULL;
    dk__block *b;
    if (raw && (shift = (0 - (uintptr_t)(raw + sizeof(dk__block))) & (a - 1)) > slack) {
        r->desc.free(raw, r->desc.alloc_user_data);
        total = sizeof(dk__block) + n + a - 1;
        raw = (char *)r->desc.alloc(total, r->desc.alloc_user_data);
    }
    if (!raw) return NULL;
    b = (dk__block *)(void *)(raw + ((0 - (uintptr_t)(raw + sizeof(dk__block))) & (a - 1)));
    b->h.next = NULL;
    b->h.size_shift = total << DK__SHIFT_BITS | (size_t)((char *)b - raw);
    r->live_bytes += total;
    return b + 1;
}
DK_INLINE void *dk__alloc_aligned(dk_registry *r, size_t n, size_t align) {
    void *p = dk__alloc_quiet(r, n, align);
    if (!p) dk__fail(DK_ERR_NO_MEMORY, "out of memory allocating %lu bytes", (unsigned long)n);
    return p;
}
DK__PRIVATE void *dk__alloc(dk_registry *r, size_t n) { return dk__alloc_aligned(r, n, 1); }
/* An operator table, 32-byte aligned: each backend row in one half of a
   cache line (a call reads a row's mask and entry from one line). Its
   header goes before it when the allocator's pointer + 16 is so aligned,
   after it when the pointer itself is (then the last spare byte of the
   rows, past every slot's reason, says so: DK__TABLE_AFTER), so that
   malloc's 16-byte alignment costs no slack (2,384 bytes, not 2,400, with
   the default lists); another pointer is given back for dk__alloc_aligned's
   slack. Only where one of the two places always fits a pointer aligned as
   malloc's (a 16-byte header, 16-byte alignment: x86-64, AArch64; not
   i386 or 32-bit ARM, whose tables keep the slack), with spare bytes left in
   the rows (DK__REASON_REST < 0) and a table's size a multiple of a
   header's `h` alignment. dk__table_block finds the header either way;
   dk__table_fill keeps the byte. */
typedef struct dk__block_h_align { char c; dk__block_h h; } dk__block_h_align;
#define DK__TABLE_TRAILER                                                                                 \
    (sizeof(dk__block) == DK__MAX_ALIGN && 2 * DK__MAX_ALIGN == sizeof(dk_backend_row) && DK__REASON_REST < 0 && \
     DK__TABLE_BYTES % offsetof(dk__block_h_align, h) == 0)
#define DK__TABLE_AFTER(t) ((t)->rows[DK_NUM_BACKENDS - 1].spare[DK__ROW_SPARE - 1])
DK_STATIC_ASSERT(2 * sizeof(dk_backend_row) <= DK__SHIFT_TRAILER + 1, "a table's shift fits in its header");
DK__PRIVATE dk_op_table *dk__alloc_table(dk_registry *r) {
    size_t total = sizeof(dk__block) + DK__TABLE_BYTES;
    char *raw;
    dk_op_table *t;
    dk__block_h *h;
    if (DK__TABLE_TRAILER) {
        if (!(raw = (char *)r->desc.alloc(total, r->desc.alloc_user_data))) {
            dk__fail(DK_ERR_NO_MEMORY, "out of memory allocating %lu bytes", (unsigned long)DK__TABLE_BYTES);
            return NULL;
        }
        if (((uintptr_t)raw + sizeof(dk__block)) % sizeof(dk_backend_row) == 0) {   /* the header first */
            h = &((dk__block *)(void *)raw)->h;
            t = (dk_op_table *)(void *)(raw + sizeof(dk__block));
            DK__TABLE_AFTER(t) = 0;
        } else if ((uintptr_t)raw % sizeof(dk_backend_row) == 0) {                  /* the header after */
            t = (dk_op_table *)(void *)raw;
            h = (dk__block_h *)(void *)(raw + DK__TABLE_BYTES);
            DK__TABLE_AFTER(t) = 1;
        } else {   /* a custom allocator's pointer aligned less */
            r->desc.free(raw, r->desc.alloc_user_data);
            if ((t = (dk_op_table *)dk__alloc_aligned(r, DK__TABLE_BYTES, sizeof(dk_backend_row))) != NULL)
                DK__TABLE_AFTER(t) = 0;
            return t;
        }
        h->next = NULL;
        h->size_shift = total << DK__SHIFT_BITS | (DK__TABLE_AFTER(t) ? DK__SHIFT_TRAILER : 0);
        r->live_bytes += total;
        return t;
    }
    return (dk_op_table *)dk__alloc_aligned(r, DK__TABLE_BYTES, sizeof(dk_backend_row));
}
/* The header of a block (b) or of a table's block (dk__table_block). */
DK_INLINE dk__block_h *dk__block_of(const void *p) { return &((dk__block *)(void *)(uintptr_t)p - 1)->h; }
DK_INLINE dk__block_h *dk__table_block(const dk_op_table *t) {
    if (DK__TABLE_TRAILER && DK__TABLE_AFTER(t)) return (dk__block_h *)(void *)((uintptr_t)t + DK__TABLE_BYTES);
    return dk__block_of(t);
}
DK__PRIVATE void dk__free_block(dk_registry *r, dk__block_h *b) {
    size_t shift = dk__block_shift(b);
    r->desc.free((char *)b - (shift == DK__SHIFT_TRAILER ? DK__TABLE_BYTES : shift), r->desc.alloc_user_data);
}
DK__PRIVATE void dk__free_h(dk_registry *r, dk__block_h *b) {
    r->live_bytes -= dk__block_size(b);
    dk__free_block(r, b);
}
DK__PRIVATE void dk__free(dk_registry *r, void *p) {
    if (p) dk__free_h(r, dk__block_of(p));
}
/* A table not published (no reader can hold it). */
DK__PRIVATE void dk__free_table(dk_registry *r, dk_op_table *t) {
    if (t) dk__free_h(r, dk__table_block(t));
}
/* Unpublished memory: freed when no reader can hold it (Note [Reclamation]).
   Appended to the retired list: dk__end_change tags it, with what else
   waits untagged, as one batch. */
DK__PRIVATE void dk__retire_h(dk_registry *r, dk__block_h *b) {
    b->next = NULL;
    if (r->retired_last) r->retired_last->next = b;
    else r->retired = b;
    r->retired_last = b;
    r->retired_bytes += dk__block_size(b);
    r->pending_bytes += dk__block_size(b);
    r->retired_blocks++;
}
DK__PRIVATE void dk__retire(dk_registry *r, const void *p) {
    if (p) dk__retire_h(r, dk__block_of(p));
}

/* An operator's table, unless it is still the registry's template. */
DK__PRIVATE void dk__retire_table(dk_registry *r, const dk_op_table *t) {
    if (t != &r->empty) dk__retire_h(r, dk__table_block(t));
}

/* ---- the operators' slabs (dk__slab) ------------------------------------- */

/* Under AddressSanitizer a free slot is poisoned (dk__slab's comment); a
   slab is unpoisoned before it goes back to the allocator hook, which may
   hand its bytes out again without ASan knowing. */
#if defined(__SANITIZE_ADDRESS__)
#define DK__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DK__ASAN 1
#endif
#endif
#ifdef DK__ASAN
#include <sanitizer/asan_interface.h>
#define DK__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define DK__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define DK__POISON(p, n) ((void)(p), (void)(n))
#define DK__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The index of the slab holding op (slabs are sorted by address). */
DK__PRIVATE uint32_t dk__slab_of(const dk_registry *r, const dk__op *op) {
    uint32_t lo = 0, hi = r->n_slabs;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((const char *)op < (const char *)DK__SLAB_SLOTS(r->slabs[mid])) hi = mid;
        else lo = mid;
    }
    return lo;
}

/* The list of slabs, moved to room for cap. */
DK__PRIVATE int dk__slabs_resize(dk_registry *r, uint32_t cap) {
    dk__slab **to = (dk__slab **)dk__alloc(r, cap * sizeof(dk__slab *));
    if (!to) return 0;
    if (r->n_slabs) memcpy(to, r->slabs, r->n_slabs * sizeof(dk__slab *));
    dk__free(r, r->slabs);
    r->slabs = to;
    r->cap_slabs = cap;
    return 1;
}

/* A free slot (zeroed) for a new operator, in the first slab with room;
   NULL when out of memory (a new slab, or a larger list of slabs). */
DK__PRIVATE dk__op *dk__slot_take(dk_registry *r) {
    dk__slab *s;
    uint32_t k, j;
    unsigned w, i, n;
    for (k = r->slab_hint; k < r->n_slabs && r->slabs[k]->n_used == r->slabs[k]->n_slots; k++) {}
    r->slab_hint = k;
    if (k == r->n_slabs) {
        n = r->n_slabs >= 4 ? DK__SLAB_MAX : DK__SLAB_MIN << r->n_slabs;
        if (!(s = (dk__slab *)dk__alloc(r, sizeof(dk__slab) + n * sizeof(dk__op)))) return NULL;
        if (r->n_slabs == r->cap_slabs && !dk__slabs_resize(r, r->cap_slabs ? 2 * r->cap_slabs : 8)) {
            dk__free(r, s);
            return NULL;
        }
        memset(s, 0, sizeof *s);
        s->n_slots = n;
        DK__POISON(DK__SLAB_SLOTS(s), n * sizeof(dk__op));
        for (k = 0; k < r->n_slabs && (const char *)r->slabs[k] < (const char *)s; k++) {}
        for (j = r->n_slabs; j > k; j--) r->slabs[j] = r->slabs[j - 1];
        r->slabs[k] = s;
        r->n_slabs++;
        r->slab_hint = k;   /* every other slab is full */
    }
    s = r->slabs[k];
    for (w = 0; !(uint64_t)~s->used[w]; w++) {}   /* a word with a free slot (n_used < n_slots) */
    i = w * 64 + (unsigned)dk__lowest_bit(~s->used[w]);
    s->used[w] |= (uint64_t)1 << (i % 64);
    s->n_used++;
    DK__UNPOISON(&DK__SLAB_SLOTS(s)[i], sizeof(dk__op));
    memset(&DK__SLAB_SLOTS(s)[i], 0, sizeof(dk__op));
    return &DK__SLAB_SLOTS(s)[i];
}

/* A slab goes back to the allocator hook. */
DK__PRIVATE void dk__slab_release(dk_registry *r, dk__slab *s) {
    DK__UNPOISON(DK__SLAB_SLOTS(s), s->n_slots * sizeof(dk__op));
    dk__free(r, s);
}
/* Slab k, now empty, goes. */
DK__PRIVATE void dk__slab_drop(dk_registry *r, uint32_t k) {
    dk__slab_release(r, r->slabs[k]);
    memmove(&r->slabs[k], &r->slabs[k + 1], (r->n_slabs - k - 1) * sizeof(dk__slab *));
    if (r->slab_hint > k) r->slab_hint--;
    if (!--r->n_slabs) {
        dk__free(r, r->slabs);
        r->slabs = NULL;
        r->cap_slabs = 0;
    }
    /* otherwise the list keeps its room: shrinking it would allocate on a
       path that frees (and could overwrite the thread's error message) */
}

/* A slot given back at once: an operator no reader has seen (abandoned). */
DK__PRIVATE void dk__slot_free(dk_registry *r, dk__op *op) {
    uint32_t k = dk__slab_of(r, op);
    dk__slab *s = r->slabs[k];
    unsigned i = (unsigned)(op - DK__SLAB_SLOTS(s));
    s->used[i / 64] &= ~((uint64_t)1 << (i % 64));
    DK__POISON(op, sizeof(dk__op));
    if (k < r->slab_hint) r->slab_hint = k;
    if (!--s->n_used) dk__slab_drop(r, k);
}

/* A removed operator's slot waits for the grace period that frees its
   block (just retired: block): it joins generation 0 if that is empty,
   else generation 1. */
DK__PRIVATE void dk__slot_retire(dk_registry *r, dk__op *op, const void *block) {
    dk__slab *s = r->slabs[dk__slab_of(r, op)];
    unsigned i = (unsigned)(op - DK__SLAB_SLOTS(s)), g = r->slab_mark[0] != NULL;
    s->waiting[g][i / 64] |= (uint64_t)1 << (i % 64);
    s->n_waiting[g]++;
    r->slab_mark[g] = block;
}

/* slab_mark[0] was freed: generation 0's slots are free, 1 becomes 0. */
DK__PRIVATE void dk__slab_turn(dk_registry *r) {
    uint32_t k = 0;
    unsigned w;
    while (k < r->n_slabs) {
        dk__slab *s = r->slabs[k];
        if (!s->n_waiting[0] && !s->n_waiting[1]) {
            k++;
            continue;
        }
        for (w = 0; w < DK__SLAB_WORDS; w++) {
#ifdef DK__ASAN
            uint64_t bits;
            for (bits = s->waiting[0][w]; bits; bits &= bits - 1)
                DK__POISON(&DK__SLAB_SLOTS(s)[w * 64 + dk__lowest_bit(bits)], sizeof(dk__op));
#endif
            s->used[w] &= ~s->waiting[0][w];
            s->waiting[0][w] = s->waiting[1][w];
            s->waiting[1][w] = 0;
        }
        s->n_used -= s->n_waiting[0];
        s->n_waiting[0] = s->n_waiting[1];
        s->n_waiting[1] = 0;
        if (k < r->slab_hint) r->slab_hint = k;
        if (!s->n_used) dk__slab_drop(r, k);
        else k++;
    }
    r->slab_mark[0] = r->slab_mark[1];
    r->slab_mark[1] = NULL;
}

/* Frees the retired batches whose grace period is at most `safe` (the
   oldest ones: a later batch never has an earlier grace period). */
DK__PRIVATE void dk__free_retired(dk_registry *r, uint64_t safe) {
    while (r->n_batches && r->batches[0].grace <= safe) {
        dk__block_h *last = r->batches[0].last, *b;
        int end, turn;
        do {
            b = r->retired;
            end = b == last;
            r->retired = b->next;
            r->retired_bytes -= dk__block_size(b);
            r->retired_blocks--;
            r->live_bytes -= dk__block_size(b);
            turn = r->slab_mark[0] && b == dk__block_of(r->slab_mark[0]);
            dk__free_block(r, b);
            if (turn) dk__slab_turn(r);
        } while (!end);
        memmove(&r->batches[0], &r->batches[1], --r->n_batches * sizeof r->batches[0]);
    }
    if (!r->retired) r->retired_last = NULL;
}

/* Call epochs start a grace period (an IPI to every core with membarrier)
   once this much is pending, not at every change. */
enum { DK__BATCH_BYTES = 256 * 1024 };
enum { DK__RETIRED_WARN_DEFAULT = 64 * 1024 * 1024 };

/* Fills the thread part of the statistics: the records taking part, and
   the ones that hold back the oldest retired block (under r's lock). */
DK__PRIVATE void dk__stats_threads(dk_registry *r, dk_registry_stats *out) {
    const dk__reader *rec;
    /* the oldest batch's grace period; untagged blocks alone wait for the
       next one: for every thread that holds anything now. UINT64_MAX:
       nothing waits */
    uint64_t oldest = r->n_batches ? r->batches[0].grace
                      : r->retired ? DK__LOAD_RLX(&dk__epoch) + 1 : UINT64_MAX;
    DK__SCAN_LOCK();
    for (rec = DK__LOAD_ACQ(&dk__readers); rec; rec = rec->next) {
        uint64_t e = dk__held(rec);
        if (!e || !DK__LOAD_RLX(&rec->in_use)) continue;
        out->threads++;
        if (e >= oldest || oldest == UINT64_MAX) continue;
        if (out->threads_waited_for < DK_STATS_MAX_THREADS) out->waited_for[out->threads_waited_for] = rec->id;
        out->threads_waited_for++;
    }
    DK__SCAN_UNLOCK();
}

/* Once per registry: retired memory passed the threshold (under the lock). */
DK__PRIVATE void dk__check_retired(dk_registry *r) {
    size_t limit = r->desc.retired_warn_bytes ? r->desc.retired_warn_bytes : (size_t)DK__RETIRED_WARN_DEFAULT;
    dk_registry_stats st;
    char msg[512];
    int n;
    if (r->warned_retired || r->retired_bytes <= limit) return;
    r->warned_retired = 1;
    memset(&st, 0, sizeof st);
    dk__stats_threads(r, &st);
    n = snprintf(msg, sizeof msg, "%lu bytes of retired memory wait to be freed (threshold %lu): ",
                 (unsigned long)r->retired_bytes, (unsigned long)limit);
    if (n < 0 || (size_t)n >= sizeof msg) n = 0;
    if (st.threads_waited_for)
        snprintf(msg + n, sizeof msg - (size_t)n,
#ifdef DK_CALL_EPOCHS
                 "%u of %u threads are inside calls that began before it was retired (first: thread %u); a call "
                 "that never returns holds it",
#else
                 "%u of %u threads taking part have not passed a quiescent point since it was retired (first: "
                 "thread %u): call dk_registry_reclaim between calls on every calling thread, and "
                 "dk_thread_offline before a thread idles",
#endif
                 st.threads_waited_for, st.threads, st.waited_for[0]);
    else
        snprintf(msg + n, sizeof msg - (size_t)n,
#ifdef DK_CALL_EPOCHS
                 "no call of the %u threads holds it now; a dk_registry_reclaim frees it (a change does once "
                 "256 KiB are pending)",
#else
                 "none of the %u threads taking part holds it; it waits for a dk_registry_reclaim (a thread "
                 "that registers alone frees it by calling dk_registry_reclaim now and then)",
#endif
                 st.threads);
    dk__log(r, DK_LOG_RETIRED_MEMORY, msg);
}

/* Ends a change (under the lock): tags what it retired with a new grace
   period -- at once without call epochs; with call epochs once
   DK__BATCH_BYTES are pending, or when forced -- and with call epochs
   frees what no reader holds any more, without waiting. */
DK__PRIVATE void dk__end_change_as(dk_registry *r, int force) {
    uint64_t g;
    int batch = 1;
#ifdef DK_CALL_EPOCHS
    batch = force || r->pending_bytes >= DK__BATCH_BYTES;
#else
    (void)force;
#endif
    if (batch && r->retired_last && (!r->n_batches || r->batches[r->n_batches - 1].last != r->retired_last)) {
        g = dk__grace_start();
        if (r->n_batches == DK__RETIRED_BATCHES) r->n_batches--;   /* the newest batch takes these in */
        r->batches[r->n_batches].last = r->retired_last;
        r->batches[r->n_batches++].grace = g;
        r->pending_bytes = 0;
#ifdef DK_CALL_EPOCHS
        if (!DK__LOAD_ACQ(&dk__exiting)) dk__free_retired(r, dk__oldest_reader());
#endif
    }
    dk__check_retired(r);
}
DK__PRIVATE void dk__end_change(dk_registry *r) { dk__end_change_as(r, 0); }

DK__PRIVATE dk_status dk__reclaim_check(dk_registry *r, const char *what) {
    if (!r) return dk__fail(DK_ERR_NULL, "%s: NULL registry", what);
    if (dk__in_call())
        return dk__fail(DK_ERR_IN_CALL, "%s: called from inside a call or hook (it would free what the call "
                                        "reads; call it between calls)", what);
    if (dk__owns(r)) return dk__reentrant(what);
    return DK_OK;
}

/* reclaim (wait = 0), synchronize (wait = 1) and a library block's
   destructor (wait = 2: synchronize, warning after about a second); see
   their declarations. Under call epochs all wait: a thread outside calls
   holds nothing. */
DK__PRIVATE dk_status dk__reclaim(dk_registry *r, int wait, const char *what) {
    dk_status s;
    dk_logger logger;
    uint64_t g;
    int taking_part = dk__rd.rec && DK__LOAD_RLX(&dk__rd.rec->qs) != 0;
    if ((s = dk__reclaim_check(r, what)) != DK_OK) return s;
    if (DK__LOAD_ACQ(&dk__exiting)) return DK_OK;   /* exit: nothing is freed */
    /* reclaim makes the caller take part; synchronize only waits */
    if ((!wait || taking_part) && (s = dk__quiescent()) != DK_OK) return s;
#ifdef DK_CALL_EPOCHS
    if (!wait) wait = 1;
#endif
    if (wait) dk__lock(r);
    else if (!dk__trylock(r)) return DK_OK;   /* a registration holds it: the next reclaim frees */
    dk__end_change_as(r, 1);
    g = DK__LOAD_RLX(&dk__epoch);
    if (wait) {
        logger = dk__hooks_of(r)->logger;   /* read under the lock: the record may go meanwhile */
        dk__unlock(r);
        /* waiting, it holds nothing: another waiter does not wait for it */
        if (dk__rd.rec) DK__STORE_REL(&dk__rd.rec->qs, (uint64_t)0);
        dk__grace_wait_in(g, wait == 2 ? &logger : NULL);
        if (taking_part && (s = dk__quiescent()) != DK_OK) return s;
        dk__lock(r);
    }
    if (!DK__LOAD_ACQ(&dk__exiting)) dk__free_retired(r, dk__oldest_reader());   /* exit began meanwhile */
    dk__unlock(r);
    return DK_OK;
}

/* Quiescent points (WHAT A PROGRAM DOES in the manual, Note [Reclamation]).
   dk_registry_reclaim: the calling thread's quiescent point -- it holds
   nothing of any registry now (it is outside every call, hook and
   lookup) -- then frees what r can free. Without DK_CALL_EPOCHS it never
   waits, for other threads nor for r's lock: memory is freed once every
   thread that declares quiescent points has passed one since the memory
   was retired (a thread takes part from its first reclaim,
   dk_thread_online, dk_thread_attach or dk_thread_quiescent until it
   exits or goes offline; a thread that never takes part must be outside
   every call of r while any thread reclaims it), and while a
   registration holds r's lock it frees nothing and leaves that to the
   next reclaim. It calls free(): a real-time thread passes
   dk_thread_quiescent instead (REAL-TIME THREADS in the manual). With
   DK_CALL_EPOCHS it waits for the calls in flight and frees everything
   retired before it. DK_ERR_IN_CALL from inside a boxed call, a hook or
   (DK_CALL_EPOCHS) any call; a kernel reached by a typed call must not
   call it without DK_CALL_EPOCHS (the library cannot see that call). */
DK_API dk_status dk_registry_reclaim(dk_registry *r) { return dk__reclaim(r, 0, "registry_reclaim"); }
/* Waits until no thread can still hold anything r retired before this
   call, then frees it: every thread taking part has passed a quiescent
   point (call epochs: has left the calls it was in). The caller passes a
   quiescent point itself if it takes part (synchronize does not make it
   take part). Call it before freeing what a deregistered
   kernel used (its user data, its code: dk_library_unload does it for a
   plugin); dk_deregister and dk_library_close never wait. Same errors as
   dk_registry_reclaim. */
DK_API dk_status dk_registry_synchronize(dk_registry *r) { return dk__reclaim(r, 1, "registry_synchronize"); }

/* Offline: the calling thread holds nothing of any registry and will not
   call until dk_thread_online (it blocks, sleeps, waits for work); nobody
   waits for it meanwhile. Call it only outside every call: it is also how
   a thread that left kernels by longjmp (or an exception) says it is
   outside them again (with DK_CALL_EPOCHS its brackets are reset; it may
   call again at once). Online: the thread takes part again (a quiescent
   point; a thread not attached yet is attached, as dk_thread_attach);
   DK_ERR_IN_CALL inside a call or hook, DK_ERR_NO_MEMORY. */
DK_API dk_status dk_thread_offline(void) {
    /* also the way back after a longjmp out of kernels: the thread is
       outside every call, whatever its brackets say */
    dk__rd.nesting = 0;
#ifdef DK_CALL_EPOCHS
    if (dk__rd.exited && (dk__rd.ctr & DK__CTR_NEST)) {   /* a late call left: its count back */
        dk__rd.ctr = DK__CTR_SLOW;
        (void)DK__FETCH_ADD(&dk__late_calls, ~(uint64_t)0);
    }
#endif
    DK__STORE_REL(&dk__rd.ctr, DK__LOAD_RLX(&dk__rd.ctr) & DK__CTR_SLOW);
    if (dk__rd.rec) DK__STORE_REL(&dk__rd.rec->qs, (uint64_t)0);
    return DK_OK;
}

DK_API dk_status dk_thread_online(void) {
    dk_status s;
    if (dk__in_call()) return dk__fail(DK_ERR_IN_CALL, "thread_online: called from inside a call or hook");
#ifdef DK_CALL_EPOCHS
    if (!dk__rd.rec && !dk__rd.exited) return dk_thread_attach();   /* taking part: attached ahead of its calls */
#endif
    if ((s = dk__quiescent()) != DK_OK) return s;
#ifndef DK_CALL_EPOCHS
    DK__FENCE_SEQ();   /* the record is visible before any table is read (Note [Reclamation]) */
#endif
    return DK_OK;
}

/* Attaches the calling thread ahead of its first call, in both modes:
   allocates everything it will ever need (its message buffer, its record
   in the list writers scan; under DK_CALL_EPOCHS its call word is linked)
   and makes it take part (default build: a quiescent point, as
   dk_thread_online). After it, nothing a call does on this thread
   allocates, locks or makes a system call, the failing call included
   (REAL-TIME THREADS in the manual). Attaching again is a quiescent point.
   DK_ERR_IN_CALL inside a call or hook, or after the thread's exit
   destructor ran (a late call's thread cannot attach); DK_ERR_NO_MEMORY
   (out of memory, or no thread-exit destructor could be registered). */
/* Everything a thread allocates for its calls, made now: its state (the
   message buffer), the exit destructor that gives it back (glibc's
   pthread_setspecific may allocate the first time), its record, and under
   call epochs its linked word, so that the thread's first call takes the
   fast way as every later one (DK__CTR_SLOW stays set only without
   membarrier: those threads fence on every outermost call). */
DK_API dk_status dk_thread_attach(void) {
    dk__thread_state *t;
    if (dk__in_call()) return dk__fail(DK_ERR_IN_CALL, "thread_attach: called from inside a call or hook");
#ifdef DK_CALL_EPOCHS
    if (dk__rd.exited)
        return dk__fail(DK_ERR_IN_CALL, "thread_attach: the thread's exit destructor has run (its calls from "
                                        "later destructors are late calls, which never attach)");
#endif
    if (!(t = dk__thread_state_get()) || (!t->exit_registered && !(t->exit_registered = dk__thread_register(t))))
        return dk__fail(DK_ERR_NO_MEMORY, "thread_attach: out of memory, or no thread-exit destructor could be "
                                          "registered (pthread_setspecific / FlsSetValue)");
    if (!dk__reader_get()) return dk__fail(DK_ERR_NO_MEMORY, "thread_attach: out of memory for the thread's record");
#ifdef DK_CALL_EPOCHS
    DK__STORE_RLX(&dk__rd.ctr, DK__LOAD_RLX(&dk__asymmetric) ? (uint64_t)0 : DK__CTR_SLOW);   /* outside calls */
    return DK_OK;
#else
    return dk_thread_online();
#endif
}

/* The quiescent point of a real-time thread: the calling thread holds
   nothing of any registry now (it is outside every call, hook and lookup).
   Default build: one atomic store (the current epoch into the thread's
   record) on an attached, online thread; it never blocks, allocates or
   frees -- freeing is dk_registry_reclaim's work, on a thread that may
   block. On a thread not attached yet it attaches first (dk_thread_attach:
   its one allocation); on one offline it comes back online (a fence
   more). Under DK_CALL_EPOCHS there is nothing to declare: it only checks
   that the thread is outside every call. DK_ERR_IN_CALL inside a call or
   hook; DK_ERR_NO_MEMORY only while attaching. */
DK_API dk_status dk_thread_quiescent(void) {
#ifndef DK_CALL_EPOCHS
    dk__reader *rec = dk__rd.rec;
#endif
    if (dk__in_call()) return dk__fail(DK_ERR_IN_CALL, "thread_quiescent: called from inside a call or hook");
#ifdef DK_CALL_EPOCHS
    return dk__rd.rec ? DK_OK : dk_thread_attach();
#else
    if (!rec) return dk_thread_attach();
    if (!DK__LOAD_RLX(&rec->qs)) return dk_thread_online();   /* offline: the way back fences */
    DK__STORE_REL(&rec->qs, DK__LOAD_ACQ(&dk__epoch));         /* dk__quiescent's store, nothing else */
    return DK_OK;
#endif
}

/* The number the statistics and the logger use for the calling thread
   (1, 2, ... in the order threads first took part), 0 before that. */
DK_API unsigned dk_thread_id(void) { return dk__rd.rec ? dk__rd.rec->id : 0; }

DK_API void dk_registry_read_stats(dk_registry *r, dk_registry_stats *out) {
    int locked;
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!r) return;
    locked = dk__read_lock(r);
    out->live_bytes = r->live_bytes;
    out->retired_bytes = r->retired_bytes;
    out->retired_blocks = r->retired_blocks;
    out->operators = r->live_ops;
    dk__stats_threads(r, out);
    dk__read_unlock(r, locked);
}

/* Copies the strings after `size` bytes of one allocation: no partial failures. */
DK__PRIVATE void *dk__alloc_with_strings(dk_registry *r, size_t size, const char **dst1, const char *s1,
                                        const char **dst2, const char *s2) {
    size_t n1 = s1 ? strlen(s1) + 1 : 0, n2 = s2 ? strlen(s2) + 1 : 0;
    char *p = (char *)dk__alloc(r, size + n1 + n2);
    if (!p) return NULL;
    memset(p, 0, size);
    if (s1) { memcpy(p + size, s1, n1); *dst1 = p + size; }
    if (s2) { memcpy(p + size + n1, s2, n2); *dst2 = p + size + n1; }
    return p;
}

/* ---- hooks and logging ------------------------------------------------------- */

/* Publishes a new hooks record built from the current one (under the lock). */
DK__PRIVATE dk_status dk__publish_hooks(dk_registry *r, const dk__hooks *h) {
    dk__hooks *n = (dk__hooks *)dk__alloc(r, sizeof *n);
    if (!n) return DK_ERR_NO_MEMORY;
    *n = *h;
    if (!n->call_error) n->call_error = dk_call_error_report;
    dk__retire(r, r->hooks);
    DK__STORE_REL(&r->hooks, (const dk__hooks *)n);
    return DK_OK;
}

DK__PRIVATE dk_status dk__set_hooks_locked(dk_registry *r, const dk_registry_desc *d) {
    dk__hooks h = *r->hooks;
    h.logger = d->logger;
    h.tensor_keyset = d->tensor_keyset;
    h.tensor_keyset_user_data = d->tensor_keyset_user_data;
    h.c10_messages = d->c10_messages;
    return dk__publish_hooks(r, &h);
}

/* Replaces a registry's logger and tensor_keyset hook and its c10_messages
   choice (desc's other fields are ignored); calls see the old set or the
   new one, never a mix. */
DK_API dk_status dk_registry_set_hooks(dk_registry *r, const dk_registry_desc *desc) {
    dk_status s;
    if (!r || !desc) return dk__fail(DK_ERR_NULL, "registry_set_hooks: NULL argument");
    if (dk__owns(r)) return dk__reentrant("registry_set_hooks");
    dk__lock(r);
    s = dk__set_hooks_locked(r, desc);
    dk__end_change(r);
    dk__unlock(r);
    return s;
}

/* What the registry does on a failed call: default dk_call_error_report
   (message in dk_last_error, status in dk_last_call_status); or
   dk_call_error_abort (print and abort), or a function of your own. */
DK_API dk_status dk_registry_set_call_error(dk_registry *r, dk_call_error_fn fn, void *user_data) {
    dk__hooks h;
    dk_status s;
    if (!r) return dk__fail(DK_ERR_NULL, "registry_set_call_error: NULL registry");
    if (dk__owns(r)) return dk__reentrant("registry_set_call_error");
    dk__lock(r);
    h = *r->hooks;
    h.call_error = fn;
    h.call_error_user_data = user_data;
    s = dk__publish_hooks(r, &h);
    dk__end_change(r);
    dk__unlock(r);
    return s;
}

/* Reports a failed call through the registry's hook (one hooks record). */
DK__PRIVATE void dk__call_error(const dk_operator *op, dk_keyset ks, dk_status status, const char *message) {
    const dk__hooks *h;
    dk__call_failures++;
    DK__HOLD();
    h = dk__hooks_of(op->registry);
    if (DK__UNLIKELY(DK__TRACING())) dk__tl_failed(op, status);   /* the timeline's event (Note [Timeline]) */
    h->call_error(op, ks, status, message, h->call_error_user_data);
    DK__UNHOLD();
}


/* ---- names -------------------------------------------------------------------

   "ns::name" or "ns::name.overload": identifiers of [A-Za-z0-9_], not
   starting with a digit. Returns the length of the name part of `text`
   (up to '(' or the end), 0 if malformed. */
DK__PRIVATE size_t dk__ident(const char *s) {
    size_t n = 0;
    if ((s[0] >= '0' && s[0] <= '9')) return 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_')
        n++;
    return n;
}

DK__PRIVATE size_t dk__op_name_length(const char *s, int need_ns) {
    size_t n = dk__ident(s), m;
    if (!n) return 0;
    if (s[n] == ':' && s[n + 1] == ':') {
        m = dk__ident(s + n + 2);
        if (!m) return 0;
        n += 2 + m;
    } else if (need_ns) {
        return 0;
    }
    if (s[n] == '.') {
        m = dk__ident(s + n + 1);
        if (!m) return 0;
        n += 1 + m;
    }
    return n;
}

/* ---- the name index ---------------------------------------------------------

   Readers probe without a lock. An entry is written once (hash and the
   name's first bytes, then the operator with release); removal replaces the
   operator by the registry's tombstone, which lookups skip. Tombstones are dropped
   when the index is rebuilt, which publishes a new index and retires the old. */

/* The first n < DK__BUCKET_NAME bytes of a bucket's name and of s equal:
   two overlapping 8-byte (or 4-byte) loads a side, no call. */
DK__PRIVATE int dk__bucket_name_eq(const char *b, const char *s, size_t n) {
    uint64_t x, y, u, v;
    uint32_t x4, y4, u4, v4;
    if (n >= 8) {
        memcpy(&x, b, 8); memcpy(&y, s, 8); memcpy(&u, b + n - 8, 8); memcpy(&v, s + n - 8, 8);
        return ((x ^ y) | (u ^ v)) == 0;
    }
    if (n >= 4) {
        memcpy(&x4, b, 4); memcpy(&y4, s, 4); memcpy(&u4, b + n - 4, 4); memcpy(&v4, s + n - 4, 4);
        return ((x4 ^ y4) | (u4 ^ v4)) == 0;
    }
    while (n && b[n - 1] == s[n - 1]) n--;
    return n == 0;
}
/* A name of DK__BUCKET_NAME bytes or more: the rest is the operator's. */
DK__PRIVATE DK__NOINLINE int dk__long_name_eq(const dk__bucket *b, const dk__op *op, const char *name, size_t len) {
    return memcmp(b->name, name, DK__BUCKET_NAME) == 0 &&
           strncmp(op->pub.name + DK__BUCKET_NAME, name + DK__BUCKET_NAME, len - DK__BUCKET_NAME) == 0 &&
           op->pub.name[len] == '\0';
}

DK_INLINE dk__op *dk__index_find(const dk__index *ix, uint64_t h, const char *name, size_t len) {
    size_t i;
    if (!ix) return NULL;
    for (i = (size_t)h & ix->mask;; i = (i + 1) & ix->mask) {
        const dk__bucket *b = &ix->buckets[i];
        dk__op *op = DK__LOAD_ACQ(&b->op);
        if (!op) return NULL;
        if (b->hash != h || op == ix->tombstone) continue;
        if (len < DK__BUCKET_NAME) {   /* name need not end at len (a schema's) */
            if (b->name[len] == '\0' && dk__bucket_name_eq(b->name, name, len)) return op;
        } else if (dk__long_name_eq(b, op, name, len)) {
            return op;
        }
    }
}

/* h: the name's hash (the operator keeps none: its registration computed it) */
DK__PRIVATE void dk__index_put(dk__index *ix, dk__op *op, uint64_t h) {
    size_t i = (size_t)h & ix->mask, n = strlen(op->pub.name);
    while (ix->buckets[i].op) i = (i + 1) & ix->mask;
    ix->buckets[i].hash = h;
    memcpy(ix->buckets[i].name, op->pub.name, n < DK__BUCKET_NAME ? n : DK__BUCKET_NAME);
    DK__STORE_REL(&ix->buckets[i].op, op);
    ix->used++;
}

/* A rebuild moves a live bucket as it is (hash, name bytes, operator):
   the operators themselves are not read. */
DK__PRIVATE void dk__index_move(dk__index *ix, const dk__bucket *from) {
    size_t i = (size_t)from->hash & ix->mask;
    while (ix->buckets[i].op) i = (i + 1) & ix->mask;
    ix->buckets[i].hash = from->hash;
    memcpy(ix->buckets[i].name, from->name, DK__BUCKET_NAME);
    DK__STORE_REL(&ix->buckets[i].op, from->op);
    ix->used++;
}

DK__PRIVATE void dk__index_remove(dk_registry *r, dk__op *op) {
    dk__index *ix = r->index;
    size_t i = (size_t)DK_HASH64(op->pub.name, strlen(op->pub.name)) & ix->mask;
    while (ix->buckets[i].op != op) i = (i + 1) & ix->mask;
    DK__STORE_REL(&ix->buckets[i].op, &r->tombstone);
}

DK__PRIVATE dk__index *dk__index_new(dk_registry *r, size_t nbuckets, int quiet) {
    size_t bytes = sizeof(dk__index) + 64 + nbuckets * sizeof(dk__bucket);
    dk__index *ix = (dk__index *)(quiet ? dk__alloc_quiet(r, bytes, 1) : dk__alloc(r, bytes));
    if (!ix) return NULL;
    ix->mask = nbuckets - 1;
    ix->used = 0;
    ix->tombstone = &r->tombstone;
    ix->buckets = (dk__bucket *)(void *)((char *)(ix + 1) + (64 - (size_t)((uintptr_t)(ix + 1) & 63)) % 64);
    memset(ix->buckets, 0, nbuckets * sizeof(dk__bucket));
    return ix;
}

/* ---- operators ---------------------------------------------------------------

   Creating an operator is split in two so that a registration allocates
   everything first and then commits without any step that can fail. The
   table of the registration's operator is allocated here too. */
typedef struct dk__op_prep {
    dk__op *op;                   /* existing or new */
    int is_new;
    void *def_room;               /* a new operator's block: room for its def's record, or NULL */
    dk_op_table *table;           /* the operator's next snapshot */
    dk__index *grown;             /* a rebuilt index to publish, or NULL */
    dk__op **grown_ops;           /* a larger ops array, or NULL */
    uint32_t grown_cap;
    uint64_t hash;                /* the name's */
} dk__op_prep;

/* Where a new operator's block keeps the record of the def that made it
   (dk__op_prepare's def_bytes): after its name, which begins the block. */
DK__PRIVATE size_t dk__op_def_offset(size_t len) {
    return DK__ROUND_VALUE(len + 1);
}
/* Is g a def record kept in its operator's block (freed with it)? */
DK__PRIVATE int dk__def_in_op(const dk_registration *g) {
    return g->type == DK__REG_DEF &&
           (const char *)g == g->op->pub.name + dk__op_def_offset(strlen(g->op->pub.name));
}

/* A new operator: a slot of the slabs, and its block (pub.name: the name,
   then with def_bytes the record of the def creating it, p->def_room: one
   allocation less per operator). The slot is taken last: a failure
   before it leaves the slabs as they were. */
DK__PRIVATE dk_status dk__op_prepare(dk_registry *r, const char *name, size_t len, size_t def_bytes, dk__op_prep *p) {
    size_t cap = r->index ? r->index->mask + 1 : 0;
    char *block = NULL;
    memset(p, 0, sizeof *p);
    p->hash = DK_HASH64(name, len);
    p->op = dk__index_find(r->index, p->hash, name, len);
    if (!(p->table = dk__alloc_table(r))) return DK_ERR_NO_MEMORY;
    if (p->op) return DK_OK;
    p->op = NULL;
    if (!(block = (char *)dk__alloc(r, def_bytes ? dk__op_def_offset(len) + def_bytes : len + 1))) goto fail;
    if (def_bytes) p->def_room = block + dk__op_def_offset(len);
    memcpy(block, name, len);
    block[len] = '\0';
    p->is_new = 1;
    if ((r->index ? r->index->used + 1 : 1) * 4 > cap * 3) { /* keep entries + tombstones <= 3/4 */
        /* at least 2 buckets per entry: the rebuilt index takes another
           (live + 1) / 2 entries or tombstones before the next rebuild
           (amortised O(1)); 4/3 to 4 buckets per operator, 43 to 128 B */
        size_t n = 64;
        while (n < (size_t)(r->live_ops + 1) * 2) n *= 2;
        if (!(p->grown = dk__index_new(r, n, 0))) goto fail;
    }
    if (r->live_ops == r->n_ops && r->n_ops == r->cap_ops) { /* no free id */
        p->grown_cap = r->cap_ops ? r->cap_ops + r->cap_ops / 2 : 64;   /* by half: 8 to 12 B an operator */
        if (!(p->grown_ops = (dk__op **)dk__alloc(r, p->grown_cap * sizeof(dk__op *)))) goto fail;
    }
    if (!(p->op = dk__slot_take(r))) goto fail;
    p->op->pub.name = block;
    return DK_OK;
fail:
    dk__free(r, p->grown);
    dk__free(r, p->grown_ops);
    dk__free(r, block);
    dk__free_table(r, p->table);
    memset(p, 0, sizeof *p);
    return DK_ERR_NO_MEMORY;
}

DK__PRIVATE void dk__op_abandon(dk_registry *r, dk__op_prep *p) {
    dk__free_table(r, p->table);
    if (!p->is_new) return;
    dk__free(r, p->grown);
    dk__free(r, p->grown_ops);
    dk__free(r, (void *)(uintptr_t)p->op->pub.name);
    dk__slot_free(r, p->op);
}

/* The lowest free id. */
DK__PRIVATE uint32_t dk__take_id(dk_registry *r) {
    uint32_t id = r->free_hint < r->n_ops ? r->free_hint : r->n_ops;
    while (id < r->n_ops && r->ops[id]) id++;
    if (id == r->n_ops) r->n_ops++;
    r->free_hint = id + 1;
    return id;
}

DK__PRIVATE void dk__op_commit(dk_registry *r, dk__op_prep *p) {
    dk__op *op = p->op;
    size_t i;
    if (!p->is_new) return;
    if (p->grown_ops) {
        if (r->n_ops) memcpy(p->grown_ops, r->ops, r->n_ops * sizeof(dk__op *));
        dk__free(r, r->ops);       /* only ever read under the lock */
        r->ops = p->grown_ops;
        r->cap_ops = p->grown_cap;
    }
    op->pub.id = dk__take_id(r);
    op->pub.registry = r;
    r->ops[op->pub.id] = op;
    r->live_ops++;
    /* until the registration publishes its table: the registry's template */
    op->pub.table = &r->empty;
    if (p->grown) {
        dk__index *old = r->index;
        if (old)
            for (i = 0; i <= old->mask; i++)
                if (old->buckets[i].op && old->buckets[i].op != &r->tombstone)
                    dk__index_move(p->grown, &old->buckets[i]);
        dk__index_put(p->grown, op, p->hash);
        DK__STORE_REL(&r->index, p->grown);
        dk__retire(r, old);
    } else {
        dk__index_put(r->index, op, p->hash);
    }
}

/* The name index and the id array follow what is registered now (WHAT A
   PROGRAM DOES in the manual), not the most operators the registry ever held: once the
   live operators fill at most 1/16 of the index's buckets, it is rebuilt
   at 2 to 4 buckets per operator (as it grows: 1/4 to 1/2 full, so that
   neither a rebuild to grow nor another to shrink comes before about as
   many changes as it moves); once the ids in use (below the highest live
   one: ids are stable) fill at most 1/4 of the id array, it moves to one
   of twice their number. Both at least 64. Out of memory, nothing
   shrinks and nothing fails (no message either: a deregistration's
   caller sees DK_OK). */
DK__PRIVATE void dk__op_shrink(dk_registry *r) {
    dk__index *ix = r->index, *small;
    size_t cap = ix ? ix->mask + 1 : 0, n = 64, i;
    if (cap > 64 && (size_t)r->live_ops * 16 <= cap) {
        while (n < (size_t)(r->live_ops + 1) * 2) n *= 2;
        if (n < cap && (small = dk__index_new(r, n, 1)) != NULL) {
            for (i = 0; i <= ix->mask; i++)
                if (ix->buckets[i].op && ix->buckets[i].op != &r->tombstone) dk__index_move(small, &ix->buckets[i]);
            DK__STORE_REL(&r->index, small);
            dk__retire(r, ix);
        }
    }
    if (r->cap_ops > 64 && (size_t)r->n_ops * 4 <= r->cap_ops) {
        uint32_t c = r->n_ops * 2 > 64 ? r->n_ops * 2 : 64;
        dk__op **to = (dk__op **)dk__alloc_quiet(r, c * sizeof(dk__op *), 1);
        if (to) {
            if (r->n_ops) memcpy(to, r->ops, r->n_ops * sizeof(dk__op *));
            dk__free(r, r->ops);   /* only ever read under the lock */
            r->ops = to;
            r->cap_ops = c;
        }
    }
}

/* An operator with neither a def nor a kernel goes away. */
DK__PRIVATE void dk__op_remove_if_unused(dk_registry *r, dk__op *op) {
    if (op->def || op->impls) return;
    dk__index_remove(r, op);
    r->ops[op->pub.id] = NULL;
    if (op->pub.id < r->free_hint) r->free_hint = op->pub.id;
    while (r->n_ops && !r->ops[r->n_ops - 1]) r->n_ops--;
    r->live_ops--;
    dk__retire_table(r, op->pub.table);
    dk__retire(r, op->pub.name);   /* the operator's block; its slot waits as long */
    dk__slot_retire(r, op, op->pub.name);
    dk__op_shrink(r);
}


/* ---- Note [Resolution] ---------------------------------------------------------

   A slot's kernel is a pure function of the operator's registrations and the
   registry's fallbacks, computed in c10's computeDispatchTableEntry order.
   Every change builds the operator's next snapshot: every slot it can affect
   recomputed, the rest copied (the whole table for a def / impl change, so
   the live table always equals a full recomputation whatever the order of
   changes; c10 1.13.1 updates only some slots and leaves stale ones; the
   fallback's slots in every operator for a fallthrough fallback change),
   the masks derived from the slots, the def's record pointed at. Then one
   release store publishes it and the old snapshot is retired (Note
   [Reclamation]).

   Boxed backend fallbacks stay out of the tables. A backend fallback is
   c10's last rule before "missing": no operator-level rule depends on it,
   so a slot resolving to a boxed fallback resolves to the missing record
   of that slot when the fallback is left out (and only fallthroughs change
   the masks). The table holds r->missing[slot] there (reason MISSING); a
   call reaching such a record (fn NULL: the slow path already) reads
   r->boxed_fallbacks[slot], published by itself with one release store
   (the record's user_data points at it: dk__deferred).
   Registering or removing a boxed fallback is O(its slots), whatever the
   number of operators; what reads a slot (dk_op_slot_kernel, dk_dispatch_kernel,
   dk_redispatch_kernel, explain, the messages) gives the fallback as before. A call
   reads the table, then the fallback: racing one registration it runs the
   state before or after it; racing two at the same slot (a kernel of the
   operator and a boxed fallback) it may pair the older table with the
   newer fallback. */

#define DK__NUM_ROLES (DK__NUM_ROLES_PLUS_1 - 1)

/* What resolution reads of an operator's impls: the newest per role (found
   once), and the list itself for a runtime key (short: scanned). */
typedef struct dk__front {
    const dk_registration *impls;                    /* newest first */
    const dk_registration *role[DK__NUM_ROLES + 1]; /* the active impl of each role's alias, by DK__SET_* */
    unsigned aliases;                                /* DK__IN_* of the roles that have one */
} dk__front;

/* The role (DK__SET_*) an alias key plays, 0 for any other key. */
DK__PRIVATE int dk__role_of(dk_key k) {
#define DK__ROLE_IF(set, alias, reason) if (k == (dk_key)DK__ALIAS_##alias) return DK__SET_##set;
    if (k == DK_Undefined) return 0;
    DK__FORALL_ALIAS_ROLES(DK__ROLE_IF)
#undef DK__ROLE_IF
    return 0;
}

DK__PRIVATE void dk__collect_front(const dk__op *op, dk__front *f) {
    const dk_registration *g;
    memset((void *)f, 0, sizeof *f);
    f->impls = op->impls;
    for (g = op->impls; g; g = g->next) {
        int role = dk_key_is_alias(g->kernel.key) ? dk__role_of(g->kernel.key) : 0;
        if (!role || f->role[role]) continue;
        f->role[role] = g;
        f->aliases |= 1u << (role - 1);
    }
}

/* The active (newest) impl at key k, or NULL. */
DK__PRIVATE const dk_registration *dk__front_at(const dk__front *f, int k) {
    const dk_registration *g;
    if (k == DK_Undefined) return NULL;
    if (dk_key_is_alias((dk_key)k)) return f->role[dk__role_of((dk_key)k)];
    for (g = f->impls; g && g->kernel.key != (dk_key)k; g = g->next) {}
    return g;
}

/* c10 hasKernelForAnyDispatchKey: a direct (non-alias) kernel for a key in ks. */
DK__PRIVATE int dk__has_kernel_in(const dk__op *op, dk_keyset ks) {
    const dk_registration *g;
    for (g = op->impls; g; g = g->next)
        if (!dk_key_is_alias(g->kernel.key) && dk_ks_has(ks, g->kernel.key)) return 1;
    return 0;
}

DK__PRIVATE int dk__covers(dk_key alias, dk_key k) {
    return alias != DK_Undefined && dk_key_in_alias(k, alias);
}

DK__PRIVATE void dk__slot_info_init(struct dk__slot_info *info) {
    int s;
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        dk_key k = dk__slot_keys[s];
        struct dk__slot_info *i = &info[s];
        memset(i, 0, sizeof *i);
        if (k == DK_Undefined) { /* c10: only the three composite aliases fill slot 0 */
            i->in = DK__IN_NON_FUNCTIONAL | DK__IN_BACKEND | DK__IN_MATH;
            continue;
        }
#define DK__ROLE_COVERS(set, alias, reason) | (dk__covers((dk_key)DK__ALIAS_##alias, k) ? DK__IN_##alias : 0)
        i->in = (uint8_t)(0 DK__FORALL_ALIAS_ROLES(DK__ROLE_COVERS));
#undef DK__ROLE_COVERS
        i->per_backend = (uint8_t)dk_key_is_per_backend_functionality(dk_key_functionality(k));
        i->backend = (uint8_t)(i->per_backend ? dk_key_backend(k) - 1 : 0);
        i->autograd_other = k == (dk_key)DK__KEY_AUTOGRAD_OTHER;
        i->fbit = DK__FBIT(dk_key_functionality(k));
        i->autograd_backends = dk_autograd_key_backend_set(k);
        i->coupled = (uint8_t)(i->autograd_other || !dk_ks_is_empty(i->autograd_backends));
    }
}

/* c10's special rules for a CompositeImplicitAutograd kernel at a slot it
   covers: the AutogradOther slot is ambiguous when a kernel sits at one of
   the other backends (returns the marker, why = AMBIGUOUS); it does not
   apply when a CompositeExplicitAutograd kernel exists or a backend under
   this autograd key has a kernel (has_backend_kernel; returns NULL). */
static dk_registration dk__ambiguous_marker; /* never read: only its address */
DK__PRIVATE const dk_registration *dk__math_rule(const dk_registry *r, const dk__op *op, const dk__front *f,
                                                const struct dk__slot_info *i, const dk_registration *math,
                                                dk_source_detail *why) {
    (void)r;
    if (i->autograd_other && dk__has_kernel_in(op, DK_KS_OTHER_BACKENDS)) {
        *why = DK_SOURCE_DETAIL_AMBIGUOUS;
        return &dk__ambiguous_marker;
    }
    if (f->role[DK__SET_BACKEND] ||
        (!dk_ks_is_empty(i->autograd_backends) && dk__has_kernel_in(op, i->autograd_backends)))
        return NULL;
    return math;
}

/* The kernel of one slot and why (a dk_source_detail). */
DK__PRIVATE const dk_kernel *dk__resolve(const dk_registry *r, const dk__op *op, const dk__front *f, int slot,
                                         dk_source_detail *why) {
    const struct dk__slot_info *i = &r->slot_info[slot];
    dk_key k = dk__slot_keys[slot];
    const dk_registration *g;
#define DK__CHOOSE(reg, reason) do { *why = DK_SOURCE_DETAIL_##reason; return &(reg)->kernel; } while (0)
    if ((g = dk__front_at(f, k)) != NULL) DK__CHOOSE(g, KERNEL);
    if (i->in & f->aliases) { /* an alias kernel covers this slot: the roles in c10's precedence */
#define DK__ROLE_TRY(set, alias, reason)                                                                   \
        if ((i->in & DK__IN_##alias) && (g = f->role[DK__SET_##set]) != NULL &&                          \
            (DK__SET_##set != DK__SET_MATH || (g = dk__math_rule(r, op, f, i, g, why)) != NULL)) {         \
            if (g == &dk__ambiguous_marker) return &r->ambiguous;                                         \
            DK__CHOOSE(g, reason);                                                                        \
        }
        DK__FORALL_ALIAS_ROLES(DK__ROLE_TRY)
#undef DK__ROLE_TRY
    }
    if (r->fallbacks[slot]) DK__CHOOSE(r->fallbacks[slot], FALLBACK);
#undef DK__CHOOSE
    *why = DK_SOURCE_DETAIL_MISSING;
    return &r->missing[slot];
}

/* Slot s's entry of a table being built (or rewritten in place), and its record. */
DK__PRIVATE dk_table_entry *dk__entry(dk_op_table *t, int s) { return (dk_table_entry *)dk_op_table_entry(t, s); }
DK__PRIVATE const dk_kernel *dk__kernel_at(const dk_op_table *t, int s) { return dk_op_table_entry(t, s)->kernel; }
/* Sets slot s of t to record k and k's fn; in the live table (out of memory,
   see dk__op_update) the fn is cleared first and the record stored after it
   (release), and the entry keeps no fn: a racing call reads the record
   first (dk__entry_load), so with a new record it sees no fn and takes
   the slow path, never an old fn with a new record. */
DK__PRIVATE void dk__entry_set(dk_op_table *t, int s, const dk_kernel *k, int live) {
    dk_table_entry *e = dk__entry(t, s);
    if (!live) {
        e->kernel = k;
        e->fn = k->fn;
    } else if (e->kernel != k) {
        DK__STORE_RLX(&e->fn, (dk_fn)0);
        DK__STORE_REL(&e->kernel, k);
    }
}

/* The byte that holds slot s's reason (low 4 bits: even s, high: odd s),
   and the reason itself, read relaxed: a table rewritten in place (out of
   memory) changes its reasons with relaxed stores (dk__reason_set). */
DK_INLINE const uint8_t *dk__reason_byte(const dk_op_table *t, int s) {
    int i = s >> 1;
    if (DK__REASON_REST <= 0 || i < DK_NUM_BACKENDS * DK__ROW_SPARE)
        return &t->rows[i / DK__ROW_SPARE].spare[i % DK__ROW_SPARE];
    return &t->reasons_rest[i - DK_NUM_BACKENDS * DK__ROW_SPARE];
}

DK_INLINE int dk__reason_at(const dk_op_table *t, int s) {
    return (DK__LOAD_RLX(dk__reason_byte(t, s)) >> ((s & 1) * 4)) & 15;
}

/* Sets slot s's reason (4 bits of a byte: dk__reason_byte), one relaxed
   store when it changes: a call may read the live table's reasons. */
DK_INLINE void dk__reason_set(dk_op_table *t, int s, dk_source_detail why) {
    uint8_t *p = (uint8_t *)t + (dk__reason_byte(t, s) - (const uint8_t *)t);   /* t is writable here */
    unsigned sh = (unsigned)(s & 1) * 4, b = *p, v = (b & ~(15u << sh)) | ((unsigned)why << sh);
    if (v != b) DK__STORE_RLX(p, (uint8_t)v);
}

/* c10 setOperatorHasFallthroughForKey, derived from the slots: a
   fallthrough slot clears its functionality bit in its backend's mask (in
   every mask for a key that is not per-backend). */
DK__PRIVATE void dk__table_masks(const dk_registry *r, dk_op_table *t) {
    uint64_t m[DK_NUM_BACKENDS];
    int s, b;
    for (b = 0; b < DK_NUM_BACKENDS; b++) m[b] = DK__R_FULL;
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        const struct dk__slot_info *i = &r->slot_info[s];
        if (dk__kernel_at(t, s)->kind != DK_KERNEL_FALLTHROUGH) continue;
        if (i->per_backend) m[i->backend] &= ~i->fbit;
        else
            for (b = 0; b < DK_NUM_BACKENDS; b++) m[b] &= ~i->fbit;
    }
    /* a mask that changes (atomically: the table may be live, see dk__op_update) */
    for (b = 0; b < DK_NUM_BACKENDS; b++)
        if (t->rows[b].nonfallthrough != m[b]) DK__STORE_RLX(&t->rows[b].nonfallthrough, m[b]);
}

/* The slots a kernel at `key` can change: its own, and those c10's
   resolution couples to every kernel (the autograd slots, whose math-kernel
   rule looks at the backend kernels under them, and AutogradOther's
   ambiguity rule); every slot (-1) for an alias key, whose kernel covers
   many and decides the precedence of the others. The property test checks
   the result against a full recomputation. */
DK__PRIVATE int dk__affected_slots(const dk_registry *r, dk_key key, int *slots) {
    dk_keyset ks = dk_ks_from_key(key); /* once: dk_ks_has(set, key) is ks != {} && set has all of ks */
    int j, n = 0, other = dk_ks_has(DK_KS_OTHER_BACKENDS, key);
    if (key == DK_Undefined || dk_key_is_alias(key)) return -1;
    slots[n++] = dk_key_slot(key);
    for (j = 0; j < r->n_coupled; j++) {   /* exactly the tests of dk__has_kernel_in in dk__math_rule */
        const struct dk__slot_info *i = &r->slot_info[r->coupled[j]];
        if (r->coupled[j] != slots[0] &&
            ((i->autograd_other && other) || (ks.repr != 0 && dk_ks_has_all(i->autograd_backends, ks))))
            slots[n++] = r->coupled[j];
    }
    return n;
}

/* Fills t (which may be op's own live table only when out of memory, see
   dk__op_update) from op's current table: the given slots resolved again
   (every slot when n < 0, none when n == 0: a def change), masks derived,
   `def` pointed at the def's record. */
DK__PRIVATE void dk__table_fill(const dk_registry *r, const dk__op *op, dk_op_table *t, const int *slots, int n) {
    const dk_op_table *cur = op->pub.table;
    const dk_registration *def = op->def;
    dk__front front;
    dk_source_detail why = DK_SOURCE_DETAIL_MISSING;   /* set by every resolve: -flto's maybe-uninitialized sees no further */
    int j;
    if (t != cur) {   /* t's own DK__TABLE_AFTER byte stays: where t's header is */
        uint8_t after = DK__TABLE_TRAILER ? DK__TABLE_AFTER(t) : 0;
        memcpy(t, cur, DK__TABLE_BYTES);
        if (DK__TABLE_TRAILER) DK__TABLE_AFTER(t) = after;
    }
    if (n != 0) {
        dk__collect_front(op, &front);
        int masks_change = t == cur;   /* in place: the masks are recomputed anyway */
        for (j = 0; j < (n < 0 ? DK_NUM_SLOTS : n); j++) {
            int s = n < 0 ? j : slots[j];
            const dk_kernel *k = dk__resolve(r, op, &front, s, &why);
            if (why == DK_SOURCE_DETAIL_FALLBACK && k->kind != DK_KERNEL_FALLTHROUGH) { /* read from the registry */
                k = &r->missing[s];
                why = DK_SOURCE_DETAIL_MISSING;
            }
            const dk_kernel *before = dk__kernel_at(t, s);
            masks_change |= !before || /* a template being built */
                            (k->kind == DK_KERNEL_FALLTHROUGH) != (before->kind == DK_KERNEL_FALLTHROUGH);
            dk__entry_set(t, s, k, t == cur);
            dk__reason_set(t, s, why);
        }
        if (masks_change || n < 0) dk__table_masks(r, t);
    }
    /* what the def says: one pointer to its record, stored in place only
       when it changes (a def's removal out of memory clears it; the
       template's never changes), with release */
    {
        const dk_op_def_info *info = def ? &DK__DEF(def)->info : (const dk_op_def_info *)NULL;
        if (t != cur) t->def = info;
        else if (t->def != info) DK__STORE_REL(&t->def, info);
    }
}

/* Publishes t (allocated by the caller) as op's table. */
DK__PRIVATE void dk__op_publish(dk_registry *r, dk__op *op, dk_op_table *t, const int *slots, int n) {
    const dk_op_table *old = op->pub.table;
    dk__table_fill(r, op, t, slots, n);
    DK__STORE_REL(&op->pub.table, (const dk_op_table *)t);
    dk__retire_table(r, old);
}

/* A change that cannot fail (a deregistration): a new snapshot if memory
   allows; otherwise the live table is rewritten in place (dk__entry_set,
   dk__table_masks), and only then can a call racing it see a mix of the
   two states (docs/threads-memory-plugins.md). */
DK__PRIVATE void dk__op_update(dk_registry *r, dk__op *op, const int *slots, int n) {
    dk_op_table *t;
    if (op->pub.table == &r->empty || !(t = dk__alloc_table(r))) {
        if (op->pub.table != &r->empty) {
            dk__table_fill(r, op, (dk_op_table *)(void *)op->pub.table, slots, n);
            return;
        }
        return; /* the template itself is never an operator's own table */
    }
    dk__op_publish(r, op, t, slots, n);
}

/* A fallback change: the template and every operator get the new slots.
   tables: one preallocated table per live operator (in id order), or NULL
   to allocate as dk__op_update does. */
DK__PRIVATE void dk__recompute_slots(dk_registry *r, const int *slots, int n, dk_op_table **tables) {
    uint32_t i, j = 0;
    dk__op empty_op;
    memset(&empty_op, 0, sizeof empty_op);
    empty_op.pub.table = &r->empty;
    dk__table_fill(r, &empty_op, &r->empty, slots, n);
    for (i = 0; i < r->n_ops; i++) {
        if (!r->ops[i]) continue;
        if (tables) dk__op_publish(r, r->ops[i], tables[j++], slots, n);
        else dk__op_update(r, r->ops[i], slots, n);
    }
}

/* Runtime slots a fallback at `key` occupies (an alias: every runtime key of it). */
DK__PRIVATE int dk__fallback_slots(dk_key key, int *slots) {
    int n = 0;
    dk_key k;
    if (!dk_key_is_alias(key)) { slots[0] = dk_key_slot(key); return 1; }
    DK_KS_FOREACH(k, dk_alias_runtime_set(key)) slots[n++] = dk_key_slot(k);
    return n;
}


/* ---- checks shared by the registration functions ----------------------------- */

/* The caller's configuration, compared by its text (see dk__config_check:
   no cache by address); the implementation's own literal, which a unit of
   the same image passes, is recognised here, without a call. */
DK__PRIVATE dk_status dk__check_signature(dk_registry *r, const char *signature) {
    (void)r;
    if (signature == dk__own_signature) return DK_OK;
    return dk__config_check(signature);
}

/* A kernel may be registered at a runtime key, Undefined (the catch-all), or
   an alias key that covers at least one runtime key of the lists. */
DK__PRIVATE dk_status dk__check_kernel_key(const char *what, dk_key key) {
    if ((unsigned)key >= (unsigned)DK_NUM_KEYS)
        return dk__fail(DK_ERR_BAD_KEY, "%s: %d is not a dispatch key", what, (int)key);
    if (dk_key_is_alias(key) && dk_ks_first(dk_alias_runtime_set(key)) == DK_Undefined)
        /* e.g. Autograd in a list without an autograd layer: a kernel there could never run */
        return dk__fail(DK_ERR_BAD_KEY,
                        "%s: the alias key '%s' covers no runtime key of this key list (it has no key with the "
                        "roles the alias stands for), so a kernel there could never run",
                        what, dk_key_name(key));
    if (key == DK_Undefined || dk_key_is_alias(key) || dk_key_is_runtime(key)) return DK_OK;
    {   /* suggest a runtime key of this list: key's own on the first backend, else the first runtime key */
        dk_key f = dk_key_functionality(key), eg = (dk_key)(DK_EndOfFunctionalityKeys + 2);
        /* a marker by its enumerator name too: c10 2.x's name for
           StartOfDenseBackends is Undefined's */
        int marker = key == DK_EndOfFunctionalityKeys ? 0
                   : key > DK_EndOfFunctionalityKeys && key <= DK_EndOfRuntimeBackendKeys &&
                     dk_key_backend(key) == DK_InvalidBit ? 1 + dk__pb_block(key) : -1;
        if (dk_key_is_per_backend_functionality(f)) eg = dk_key_runtime(f, (dk_backend)1);
        if (DK_NUM_PER_BACKEND_FUNCTIONALITIES == 0) eg = (dk_key)1;
        return dk__fail(DK_ERR_BAD_KEY,
                        "%s: '%s'%s%s%s is neither a runtime key nor an alias key (per-backend functionality keys and "
                        "markers have no slot; register at a runtime key, e.g. '%s')",
                        what, dk_key_name(key), marker >= 0 ? " (" : "", marker >= 0 ? dk__marker_names[marker] : "",
                        marker >= 0 ? ")" : "", dk_key_name(eg));
    }
}

DK__PRIVATE dk_status dk__check_kernel_desc(const char *what, dk_kernel_desc d) {
    if (d.fallthrough && (d.fn || d.boxed))
        return dk__fail(DK_ERR_BAD_KERNEL, "%s: a fallthrough kernel has no function", what);
    if (!d.fallthrough && !d.fn && !d.boxed)
        return dk__fail(DK_ERR_BAD_KERNEL, "%s: the kernel has neither an unboxed nor a boxed function", what);
    return DK_OK;
}

/* "registered at file:line", without printf (a registration's hot spot). */
DK__PRIVATE void dk__format_debug(char *buf, size_t n, const char *file, int line) {
    static const char prefix[] = "registered at ";
    char digits[16];
    size_t len = 0, f;
    int d = 0;
    unsigned u = line < 0 ? 0u : (unsigned)line;
    digits[15] = '\0';
    do digits[14 - d++] = (char)('0' + u % 10); while ((u /= 10) && d < 14);
    if (line < 0) digits[14 - d++] = '-';
    if (!file) file = "<unknown>";
    f = strlen(file);
    if (sizeof prefix + f + 1 + (size_t)d <= n) { /* it fits (always, in the callers' buffers): three copies */
        memcpy(buf, prefix, sizeof prefix - 1);
        memcpy(buf + sizeof prefix - 1, file, f);
        buf[sizeof prefix - 1 + f] = ':';
        memcpy(buf + sizeof prefix + f, digits + 15 - d, (size_t)d + 1);
        return;
    }
    buf[0] = '\0';
    dk__append(buf, n, &len, prefix);
    dk__append(buf, n, &len, file);
    dk__append(buf, n, &len, ":");
    dk__append(buf, n, &len, digits + 15 - d);
}

/* A kernel registered with its function's name: "registered at f:l (name)",
   so that dumps and error messages say which function, not only where. */
DK__PRIVATE void dk__debug_named(char *buf, size_t n, const char *name) {
    size_t len = strlen(buf);
    if (!name || !name[0]) return;
    dk__append(buf, n, &len, " (");
    dk__append(buf, n, &len, name);
    dk__append(buf, n, &len, ")");
}

/* A record is its type's part (DK__REG_SIZE), its dk__lib_link when a
   library block makes it (lib), then `extra` bytes, the caller's to fill
   (a def's defaults, DK__DEF(g)->info.defaults, and schema), then its
   debug text, in one piece
   of dk__registration_size bytes: a block of its own
   (dk__new_registration) or, for the def that creates its operator, the
   operator's block. */
DK__PRIVATE size_t dk__registration_head(int type, const dk_library *lib, size_t extra) {
    size_t head = DK__REG_SIZE(type) + (lib ? sizeof(dk__lib_link) : 0);
    return extra ? DK__ROUND_VALUE(head) : head;
}
/* dlen: strlen(debug) + 1, or 0 without debug text */
DK__PRIVATE size_t dk__registration_size(int type, const dk_library *lib, size_t dlen, size_t extra) {
    return dk__registration_head(type, lib, extra) + extra + dlen;
}
DK__PRIVATE dk_registration *dk__registration_init(void *room, dk_registry *r, int type, const dk_library *lib,
                                                   const char *debug, size_t dlen, size_t extra) {
    size_t head = dk__registration_head(type, lib, extra);
    dk_registration *g = (dk_registration *)room;
    memset(room, 0, head);
    if (type == DK__REG_FALLBACK || type == DK__REG_LISTENER) g->registry = r;
    g->type = (unsigned char)type;
    g->live = 1;
    g->in_library = lib != NULL;
    debug = dlen ? (const char *)memcpy((char *)room + head + extra, debug, dlen) : "";
    if (type == DK__REG_DEF) DK__DEF(g)->debug = debug;
    else g->kernel.debug = debug;
    if (extra) DK__DEF(g)->info.defaults = (const dk_value *)(void *)((char *)room + head);
    return g;
}
DK__PRIVATE dk_registration *dk__new_registration(dk_registry *r, int type, const dk_library *lib, const char *debug,
                                                  size_t extra) {
    size_t dlen = debug ? strlen(debug) + 1 : 0;
    void *room = dk__alloc(r, dk__registration_size(type, lib, dlen, extra));
    return room ? dk__registration_init(room, r, type, lib, debug, dlen, extra) : NULL;
}

/* g, made with lib's link (dk__registration_init), joins lib's list. */
DK__PRIVATE void dk__own(dk_library *lib, dk_registration *g) {
    if (!lib) return;
    DK__LIB_LINK(g)->library = lib;
    DK__LIB_LINK(g)->next = lib->regs;
    lib->regs = g;
}

/* ---- typed kernels' C signatures ------------------------------------------------

   A typed kernel records its C signature (dk_kernel_desc.signature) in one
   of two forms: DK_DECLARE_OP's C type, "float(const dk_kernel *, dk_keyset,
   tensor)", or gen/'s schema words, "(Tensor) (Tensor)" (it starts with
   '('). c10 refuses a kernel whose C++ signature differs from the one of a
   kernel already registered for the operator, and one whose inferred schema
   differs from the def's; here: a typed kernel whose signature, in the same
   form, differs from another live typed kernel's of the operator, and one
   in schema words that differs from its def's schema's
   (dk_schema_c_signature). The def is checked the same way against the
   kernels registered before it. Kernels without a signature (dk_unboxed,
   boxed, fallthrough) are never compared. */

DK__PRIVATE const char *dk__sig_list_word(const dk_type *e, int optional) {
    dk_type_kind k = e->kind;
    if (k == DK_TYPE_Tensor || (k == DK_TYPE_Optional && e->contained[0]->kind == DK_TYPE_Tensor))
        return optional ? "list?" : "Tensor[]";
    if (k == DK_TYPE_Int || k == DK_TYPE_SymInt || k == DK_TYPE_ScalarType || k == DK_TYPE_Layout ||
        k == DK_TYPE_MemoryFormat || k == DK_TYPE_QScheme)
        return optional ? "int[]?" : "int[]";
    if (k == DK_TYPE_Float) return optional ? "float[]?" : "float[]";
    return optional ? "list?" : "list";
}
/* gen/dkgen.c's map_type, in words: what has no C type of its own is a
   dk_value ("value"), and so is the return of an optional scalar or list */
DK__PRIVATE const char *dk__sig_word(const dk_type *t, int is_return) {
    int optional = 0;
    for (;;) {
        switch (t->kind) {
        case DK_TYPE_Tensor: return optional ? "Tensor?" : "Tensor";
        case DK_TYPE_Int: case DK_TYPE_SymInt: case DK_TYPE_ScalarType: case DK_TYPE_Layout:
        case DK_TYPE_MemoryFormat: case DK_TYPE_QScheme:
            return !optional ? "int" : is_return ? "value" : "int?";
        case DK_TYPE_Float: case DK_TYPE_Number: return !optional ? "float" : is_return ? "value" : "float?";
        case DK_TYPE_Bool: return !optional ? "bool" : is_return ? "value" : "bool?";
        case DK_TYPE_Complex: return !optional ? "complex" : "value";   /* dk_complex */
        case DK_TYPE_String: case DK_TYPE_DeviceObj: return "str";
        case DK_TYPE_Generator: case DK_TYPE_Storage: case DK_TYPE_StreamObj: case DK_TYPE_Class:
        case DK_TYPE_Capsule: case DK_TYPE_Quantizer: case DK_TYPE_AnyClass: return "object";
        case DK_TYPE_List: return optional && is_return ? "value" : dk__sig_list_word(t->contained[0], optional);
        case DK_TYPE_Optional:
            if (optional) return "value";
            optional = 1;
            t = t->contained[0];
            break;
        default: return "value";
        }
    }
}

/* snprintf-like: the C signature in schema words that gen/ binds the schema
   to, "(returns) (arguments)", e.g. "(Tensor) (Tensor, Tensor, float)" for
   add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor. A word
   per C type: Tensor, Tensor?, Tensor[], int, int?, float, float?, bool,
   bool?, str, object, int[], int[]?, float[], float[]?, list, list?, value
   (see gen/dkgen.c for the C types). gen/'s kernels and adapters record it,
   and a typed kernel's is compared with its def's (dk_impl's contract, above dk__impl). -1 (and
   "") for a schema gen/ binds boxed: a bare name, varargs. */
DK_API int dk_schema_c_signature(const dk_schema *s, char *buf, size_t size) {
    size_t len = 0;
    int i;
    if (size) buf[0] = '\0';
    if (!s || s->name_only || s->is_vararg || s->is_varret) return -1;
    dk__append(buf, size, &len, "(");
    for (i = 0; i < s->num_returns; i++) {
        if (i) dk__append(buf, size, &len, ", ");
        dk__append(buf, size, &len, dk__sig_word(s->returns[i].type, 1));
    }
    dk__append(buf, size, &len, ") (");
    for (i = 0; i < s->num_arguments; i++) {
        if (i) dk__append(buf, size, &len, ", ");
        dk__append(buf, size, &len, dk__sig_word(s->arguments[i].type, 0));
    }
    dk__append(buf, size, &len, ")");
    return (int)len;
}

/* Is a recorded signature gen/'s schema words (else DK_DECLARE_OP's C type)? */
#define DK__SIG_IN_SCHEMA_WORDS(sig) ((sig)[0] == '(')

/* p past word if it starts with it, else NULL (and NULL stays NULL). */
DK__PRIVATE const char *dk__sig_eat(const char *p, const char *word) {
    size_t n = strlen(word);
    return p && strncmp(p, word, n) == 0 ? p + n : NULL;
}
/* Is sig schema s's C signature in schema words (dk_schema_c_signature's
   text)? 1 or 0, compared a word at a time: no buffer, so a signature of
   any length is compared whole; -1 for a schema gen/ binds boxed. */
DK__PRIVATE int dk__sig_is(const dk_schema *s, const char *sig) {
    int i;
    if (!s || s->name_only || s->is_vararg || s->is_varret) return -1;
    sig = dk__sig_eat(sig, "(");
    for (i = 0; i < s->num_returns; i++)
        sig = dk__sig_eat(dk__sig_eat(sig, i ? ", " : ""), dk__sig_word(s->returns[i].type, 1));
    sig = dk__sig_eat(sig, ") (");
    for (i = 0; i < s->num_arguments; i++)
        sig = dk__sig_eat(dk__sig_eat(sig, i ? ", " : ""), dk__sig_word(s->arguments[i].type, 0));
    sig = dk__sig_eat(sig, ")");
    return sig && !*sig;
}
/* Schema s's C signature for a message, in buf; one longer than buf ends
   in a mark that says how long it is. */
DK__PRIVATE const char *dk__sig_shown(const dk_schema *s, char *buf, size_t size) {
    int n = dk_schema_c_signature(s, buf, size), m;
    char mark[64];
    if (n < 0 || (size_t)n < size) return buf;
    m = snprintf(mark, sizeof mark, " ... [%d characters in all]", n);
    if (m > 0 && (size_t)m < size) memcpy(buf + size - 1 - (size_t)m, mark, (size_t)m + 1);
    return buf;
}

/* c10's "Inferred operator schema for a C++ kernel function doesn't match
   the expected function schema", of a typed kernel's C signature: DK_OK
   unless sig is in schema words and differs from the def's schema's
   (parsed; none for a schema bound boxed). */
DK__PRIVATE dk_status dk__signature_vs_schema(const char *what, const dk_schema *parsed, const char *def_debug,
                                              const char *sig, const char *debug) {
    char expected[1024];
    if (!sig || !DK__SIG_IN_SCHEMA_WORDS(sig) || dk__sig_is(parsed, sig) != 0) return DK_OK;
    return dk__fail(DK_ERR_WRONG_SIGNATURE,
                    "%s: the C signature of a typed kernel doesn't match the operator's schema.\n"
                    "  operator: %s\n  expected signature: %s\n    %s\n  kernel signature:   %s\n    %s\n"
                    "The kernel's bindings were generated from another schema: regenerate them from the schema "
                    "the operator is defined with; nothing was registered.",
                    what, parsed->text, dk__sig_shown(parsed, expected, sizeof expected), def_debug, sig, debug);
}
/* A typed kernel's signature against its def's schema. */
DK__PRIVATE dk_status dk__check_def_signature(const char *what, const dk_registration *def, const char *sig,
                                              const char *debug) {
    if (!def) return DK_OK;
    return dk__signature_vs_schema(what, DK__DEF(def)->info.parsed, DK__DEF(def)->debug, sig, debug);
}
/* Boxing adapters against their def's schema. Adapters whose signature is
   in schema words (gen/'s) read a boxed call's arguments in place, trusting
   the kinds and the count the stack was checked for against the schema
   (Note [Boxed fast way]): they are accepted only for a schema of that
   signature, with its counts (and never for varargs, whose stacks are not
   checked). Adapters with a signature in other words are the caller's own,
   unchecked. */
DK__PRIVATE DK__NOINLINE dk_status dk__check_adapters(const char *what, const dk_schema *parsed, const dk_op_adapters *a) {
    char expected[1024];
    if (!a || !DK__SIG_IN_SCHEMA_WORDS(a->signature)) return DK_OK;
    if (dk__sig_is(parsed, a->signature) == 1 && a->num_arguments == parsed->num_arguments &&
        a->num_returns == parsed->num_returns)
        return DK_OK;
    dk__sig_shown(parsed, expected, sizeof expected);
    return dk__fail(DK_ERR_WRONG_SIGNATURE,
                    "%s: the boxing adapters' C signature doesn't match the operator's schema.\n"
                    "  operator: %s\n  expected signature: %s\n  adapters' signature: %s (%d arguments, %d "
                    "returns)\nThe adapters were generated from another schema: regenerate them from the schema "
                    "the operator is defined with; nothing was registered.",
                    what, parsed->text, expected[0] ? expected : "none (varargs: the operator is bound boxed)",
                    a->signature, a->num_arguments, a->num_returns);
}
/* A def's schema against the typed kernels registered before it (c10 checks
   them when the schema comes). */
DK__PRIVATE dk_status dk__check_def_kernels(const dk__op *op, const dk_schema *parsed, const char *debug) {
    const dk_registration *g;
    dk_status s;
    for (g = op->impls; g; g = g->next)
        if ((s = dk__signature_vs_schema("def", parsed, debug, g->kernel.signature, g->kernel.debug)) != DK_OK)
            return s;
    return DK_OK;
}

/* A typed kernel's signature (registered at key, debug) against the
   operator's live typed kernels: DK_OK, or DK_ERR_WRONG_SIGNATURE naming
   both kernels, their keys and sites (c10's "Mismatch in kernel C++
   signatures", of C types here). */
DK__PRIVATE dk_status dk__check_kernel_signature(const char *what, const dk__op *op, dk_key key, const char *sig,
                                                 const char *debug) {
    const dk_registration *g;
    dk_status s;
    if (!op || !sig) return DK_OK;
    if ((s = dk__check_def_signature(what, op->def, sig, debug)) != DK_OK) return s;
    for (g = op->impls; g; g = g->next) {
        const char *other = g->kernel.signature;
        if (!other || DK__SIG_IN_SCHEMA_WORDS(other) != DK__SIG_IN_SCHEMA_WORDS(sig) || strcmp(other, sig) == 0)
            continue;
        return dk__fail(DK_ERR_WRONG_SIGNATURE,
                        "\nMismatch in kernel C signatures\n  operator: %s\n    %s\n"
                        "  kernel 1: %s\n    dispatch key: %s\n    %s\n"
                        "  kernel 2: %s\n    dispatch key: %s\n    %s\n"
                        "Every typed kernel of an operator has the operator's C type; nothing was registered.",
                        op->def ? DK__DEF_SCHEMA(op->def) : op->pub.name, op->def ? DK__DEF(op->def)->debug : "no debug info",
                        other, dk_key_name(g->kernel.key), g->kernel.debug, sig, dk_key_name(key), debug);
    }
    return DK_OK;
}

/* ---- def ---------------------------------------------------------------------- */

/* A def keeps its parsed schema in its record (after its defaults): the
   text is parsed into a scratch arena (on the stack; chunks past it are
   registry blocks, given back at once), then what the schema reaches is
   copied into the record (dk__sp_copy_size, dk__sp_copy: >>impl-schema, a
   def's copy), so it is counted, retired and reclaimed with the record.
   Its name (or its overload) is the operator's name's bytes: the operator
   outlives every record of its def. */
static void *dk__block_alloc(size_t n, void *r) { return dk__alloc((dk_registry *)r, n); }
static void dk__block_free(void *p, void *r) { dk__free((dk_registry *)r, p); }

struct dk__sp_chunk;
DK__PRIVATE dk_status dk__sp_parse(const char *text, const dk_registry_desc *desc, struct dk__sp_chunk *first,
                                   size_t bytes, dk_schema **out);
/* A def's copy of its schema, being sized and made (>>impl-schema, a def's copy). */
typedef struct dk__sp_move {
    const struct dk__sp_chunk *arena;  /* the scratch schema's */
    uintptr_t first;                   /* its first chunk's data */
    size_t first_used;                 /* and the bytes it uses */
    char *nodes, *strs;                /* the next node's place, the last string's; NULL: sizing */
    size_t bytes;                      /* sizing: the copy's */
    /* the operator's name (sizing: the schema text's first `name_len`
       bytes, the name it will be; copying: the operator's), which the
       schema's name or overload is, when equal (`shared`: which) */
    const char *op_name;
    size_t name_len;
    int shared;
    /* the bytes of the first strings the walk meets (0: not the arena's),
       as sizing found them: the copy, which meets them in the same order,
       does not look again */
    unsigned n_lens, at;
    size_t lens[32];
} dk__sp_move;
DK__PRIVATE size_t dk__sp_copy_size(dk__sp_move *m, const dk_schema *s, const char *op_name, size_t name_len);
DK__PRIVATE dk_schema *dk__sp_copy(dk__sp_move *m, const dk_schema *s, char *base, size_t bytes, const char *op_name);

/* The scratch arena's first chunk (aten's schemas use 0.9 KB on average;
   a longer one goes on in chunks from the registry) */
enum { DK__DEF_SCRATCH = 4096 };
typedef union dk__def_scratch { void *p; double d; int64_t i; char bytes[DK__DEF_SCRATCH]; } dk__def_scratch;

DK__PRIVATE dk_status dk__parse_in(dk_registry *r, const char *schema, dk__def_scratch *scratch, dk_schema **out) {
    dk_registry_desc d;
    memset(&d, 0, sizeof d);
    d.alloc = dk__block_alloc;
    d.free = dk__block_free;
    d.alloc_user_data = r;
    return dk__sp_parse(schema, &d, (struct dk__sp_chunk *)(void *)scratch, sizeof *scratch, out);
}


/* The value a boxed call gets for an argument left off: its default. */
DK__PRIVATE size_t dk__default_extra(const dk_default *d) {
    return d && d->kind == DK_DEFAULT_LIST ? d->count * (sizeof(dk_value) > 8 ? sizeof(dk_value) : 8) : 0;
}
DK__PRIVATE dk_value dk__default_value(const dk_arg *a, char **extra) {
    const dk_default *d = a->default_value;
    const dk_type *t = a->fake_type;
    dk_value v = dk_none();
    size_t i;
    while (t && t->kind == DK_TYPE_Optional) t = t->contained[0];
    if (!d) return v;
    switch (d->kind) {
    case DK_DEFAULT_NONE: break;
    case DK_DEFAULT_BOOL: v = dk_bool(d->b); break;
    case DK_DEFAULT_INT:   /* c10's conversions: an int (a dtype name) for a float or a complex */
        v = t && t->kind == DK_TYPE_Float     ? dk_double((double)d->i)
          : t && t->kind == DK_TYPE_Complex ? dk_complex_double((double)d->i, 0.0)
                                            : dk_int(d->i);
        break;
    case DK_DEFAULT_DOUBLE:
        v = t && t->kind == DK_TYPE_Complex ? dk_complex_double(d->re, 0.0) : dk_double(d->re);
        break;
    case DK_DEFAULT_COMPLEX: v = dk_complex_double(d->re, d->im); break;
    case DK_DEFAULT_STRING: case DK_DEFAULT_DEVICE: v = dk_string(d->s); break;
    case DK_DEFAULT_LIST: {
        const dk_type *e = t && t->kind == DK_TYPE_List ? t->contained[0] : NULL;
        if (e && e->kind == DK_TYPE_Float) {
            double *items = (double *)(void *)*extra;
            for (i = 0; i < d->count; i++)
                items[i] = d->items[i].kind == DK_DEFAULT_INT ? (double)d->items[i].i : d->items[i].re;
            dk_double_list l;
            l.items = items;
            l.n = d->count;
            v = dk_doubles(l);
        } else if (e && (e->kind == DK_TYPE_Int || e->kind == DK_TYPE_SymInt)) {
            int64_t *items = (int64_t *)(void *)*extra;
            for (i = 0; i < d->count; i++) items[i] = d->items[i].i;
            dk_int_list l;
            l.items = items;
            l.n = d->count;
            v = dk_ints(l);
        } else {
            dk_value *items = (dk_value *)(void *)*extra;
            for (i = 0; i < d->count; i++)
                items[i] = d->items[i].kind == DK_DEFAULT_BOOL ? dk_bool(d->items[i].b)
                         : d->items[i].kind == DK_DEFAULT_INT ? dk_int(d->items[i].i)
                         : d->items[i].kind == DK_DEFAULT_DOUBLE ? dk_double(d->items[i].re)
                         : d->items[i].kind == DK_DEFAULT_COMPLEX ? dk_complex_double(d->items[i].re, d->items[i].im)
                                                                  : dk_none();
            v = dk_list(items, d->count);
        }
        *extra += dk__default_extra(d);
        break;
    }
    }
    return v;
}

/* A def's defaults live in its record (dk__new_registration's extra
   bytes): a value per argument, then the storage of list defaults; 0
   bytes when every argument's is none (no default, or None): the def
   points at dk__no_defaults (at most 64 arguments: the parser's limit). */
static dk_value dk__no_defaults[64];   /* all none; never written */
DK__PRIVATE size_t dk__defaults_size(const dk_schema *s) {
    size_t n = (size_t)s->num_arguments, size = n * sizeof(dk_value), i;
    int any = 0;
    for (i = 0; i < n; i++) {
        const dk_default *d = s->arguments[i].default_value;
        size += dk__default_extra(d);
        any |= d && d->kind != DK_DEFAULT_NONE;
    }
    return any ? DK__ROUND_VALUE(size) : 0;
}
DK__PRIVATE void dk__defaults_fill(dk_value *v, const dk_schema *s) {
    size_t n = (size_t)s->num_arguments, i;
    char *extra = (char *)(v + n);
    for (i = 0; i < n; i++) v[i] = dk__default_value(&s->arguments[i], &extra);
}

/* ---- tags and alias analysis ------------------------------------------------------ */

#define DK__TAG_NAME(name) #name,
static const char *const dk__tag_names[DK_NUM_TAGS] = { DK_FORALL_TAGS(DK__TAG_NAME) };
#undef DK__TAG_NAME
#define DK__AA_NAME(name) #name,
static const char *const dk__alias_analysis_names[DK__ALIAS_ANALYSIS_END] = { DK_FORALL_ALIAS_ANALYSIS(DK__AA_NAME) };
#undef DK__AA_NAME

/* Operator tags: c10's at::Tag (aten/src/ATen/native/tags.yaml of PyTorch
   2.7.1, in torchgen's order: sorted by name). A def carries a set of them;
   they mean nothing to dispatch and everything to the passes that read
   them (dk_op_has_tag). */
DK_API const char *dk_tag_name(dk_tag t) { return (unsigned)t < (unsigned)DK_NUM_TAGS ? dk__tag_names[t] : NULL; }

/* c10's AliasAnalysisKind: what the JIT may assume about the operator's
   aliasing. FROM_SCHEMA (0, what a def without options gets, as
   torch::Library::def) trusts the schema's annotations; CONSERVATIVE assumes
   anything; PURE_FUNCTION nothing. INTERNAL_SPECIAL_CASE is c10's own (JIT
   operators handled case by case): it prints and parses, a def refuses it. */
DK_API const char *dk_alias_analysis_name(dk_alias_analysis k) {
    return (unsigned)k < (unsigned)DK__ALIAS_ANALYSIS_END ? dk__alias_analysis_names[k] : NULL;
}

/* Name -> value; DK_ERR_UNKNOWN_TAG for a name that is none (out untouched).
   "" parses as FROM_SCHEMA, as torch.library's alias_analysis="". */
DK_API dk_status dk_tag_parse(const char *name, dk_tag *out) {
    int i;
    if (!name || !out) return dk__fail(DK_ERR_NULL, "dk_tag_parse: NULL argument");
    if ((i = dk__find_name(dk__tag_names, DK_NUM_TAGS, name)) < 0)
        return dk__fail(DK_ERR_UNKNOWN_TAG, "dk_tag_parse: no operator tag is named '%s'", name);
    *out = (dk_tag)i;
    return DK_OK;
}

DK_API dk_status dk_alias_analysis_parse(const char *name, dk_alias_analysis *out) {
    int i;
    if (!name || !out) return dk__fail(DK_ERR_NULL, "dk_alias_analysis_parse: NULL argument");
    i = name[0] ? dk__find_name(dk__alias_analysis_names, DK__ALIAS_ANALYSIS_END, name) : 0;
    if (i < 0) return dk__fail(DK_ERR_UNKNOWN_TAG, "dk_alias_analysis_parse: Invalid alias_analysis type %s", name);
    *out = (dk_alias_analysis)i;
    return DK_OK;
}

/* A def's options, checked before anything changes; *tags gets their mask. */
DK__PRIVATE dk_status dk__def_options_check(const char *schema, const dk_def_options *opts, uint64_t *tags) {
    size_t i;
    if (!opts) return DK_OK;
    if ((unsigned)opts->alias_analysis >= (unsigned)DK_ALIAS_ANALYSIS_INTERNAL_SPECIAL_CASE)
        return dk__fail(DK_ERR_BAD_ARGUMENT,
                        "def(\"%s\"): alias analysis kind %d is not one a def may choose (FROM_SCHEMA, "
                        "CONSERVATIVE or PURE_FUNCTION; INTERNAL_SPECIAL_CASE is c10's own)",
                        schema, (int)opts->alias_analysis);
    if (opts->num_tags && !opts->tags)
        return dk__fail(DK_ERR_NULL, "def(\"%s\"): %lu tags but a NULL tag array", schema,
                        (unsigned long)opts->num_tags);
    for (i = 0; i < opts->num_tags; i++) {
        if ((unsigned)opts->tags[i] >= (unsigned)DK_NUM_TAGS)
            return dk__fail(DK_ERR_BAD_ARGUMENT, "def(\"%s\"): tag %lu has the value %d, which is no dk_tag",
                            schema, (unsigned long)i, (int)opts->tags[i]);
        *tags |= (uint64_t)1 << opts->tags[i];
    }
    return DK_OK;
}

/* dump_state's lines after "debug:": c10's alias-analysis line (it adds
   " (default)" only to a schema whose kind was never set, which a def here
   cannot make), then the tags, a line c10 does not print, only when there
   are some. */
DK__PRIVATE void dk__append_def_extras(char *buf, size_t size, size_t *len, const dk_registration *def) {
    const char *sep = "\ntags: ";
    int t;
    dk__append(buf, size, len, "\nalias analysis kind: ");
    dk__append(buf, size, len, dk__alias_analysis_names[DK__DEF(def)->info.alias_analysis]);
    for (t = 0; t < DK_NUM_TAGS; t++) {
        if (!((DK__DEF(def)->info.tags >> t) & 1)) continue;
        dk__append(buf, size, len, sep);
        dk__append(buf, size, len, dk__tag_names[t]);
        sep = ", ";
    }
    dk__append(buf, size, len, "\n");
}

/* dk__def_part.boxed_tensors of schema s (dk_call_boxed's fast way). */
DK__PRIVATE uint32_t dk__boxed_tensors(const dk_schema *s) {
    int i;
    if (s->is_vararg || s->num_arguments == 0 || s->num_arguments >= 64) return 0;
    for (i = 0; i < s->num_arguments; i++)
        if (s->arguments[i].fake_type->kind != DK_TYPE_Tensor || !s->arguments[i].is_dispatch) return 0;
    return (uint32_t)s->num_arguments + 1;
}

DK__PRIVATE dk_status dk__def_locked(dk_registry *r, const char *schema, const dk_def_options *opts,
                                     const char *debug, dk_library *lib, dk_registration **out) {
    size_t len = dk__op_name_length(schema, 1);
    const dk_op_adapters *adapters = opts ? opts->adapters : NULL;
    uint64_t tags = 0;
    dk__op_prep prep;
    dk_registration *g, *l;
    dk_schema *parsed, *kept;
    dk__def_scratch scratch;
    dk__sp_move move;
    size_t dbytes, dlen, sbytes;
    dk_status s;
    if ((s = dk__def_options_check(schema, opts, &tags)) != DK_OK) return s;
    if (len && schema[len] == '\0')
        return dk__fail(DK_ERR_BAD_NAME,
                        "def(\"%s\"): Full schema string was not specified, and we couldn't infer schema either.  "
                        "Please explicitly provide a schema string.", schema);
    if (!len || schema[len] != '(')
        return dk__fail(DK_ERR_BAD_NAME,
                        "def(\"%s\"): expected a schema 'ns::name[.overload](args) -> returns' (at position %lu)",
                        schema, (unsigned long)len);
    if (adapters && !adapters->signature)
        return dk__fail(DK_ERR_NULL, "def(\"%s\"): the boxing adapters have no signature", schema);
    if ((s = dk__parse_in(r, schema, &scratch, &parsed)) != DK_OK) return s;
    dbytes = dk__defaults_size(parsed);
    sbytes = dk__sp_copy_size(&move, parsed, schema, len);
    dlen = debug ? strlen(debug) + 1 : 0;
    if ((s = dk__op_prepare(r, schema, len, dk__registration_size(DK__REG_DEF, lib, dlen, dbytes + sbytes), &prep)) != DK_OK) {
        dk_schema_free(parsed);
        return s;
    }
    if (prep.op->def) {
        dk__op_abandon(r, &prep);
        dk_schema_free(parsed);
        return dk__fail(DK_ERR_DUPLICATE_DEF,
                        "Tried to register an operator (%s) with the same name and overload name multiple times. "
                        "Each overload's schema should only be registered with a single call to def(). "
                        "Duplicate registration: %s. Original registration: %s",
                        schema, debug, DK__DEF(prep.op->def)->debug);
    }
    /* after the duplicate's check: a second def is reported as one, whatever its adapters' signature */
    if (adapters && (s = dk__check_adapters("def", parsed, adapters)) != DK_OK) {
        dk__op_abandon(r, &prep);
        dk_schema_free(parsed);
        return s;
    }
    if (!prep.is_new && (s = dk__check_def_kernels(prep.op, parsed, debug)) != DK_OK) {
        dk__op_abandon(r, &prep);
        dk_schema_free(parsed);
        return s;
    }
    /* keep the parsed schema (c10's normalised text, the dispatch arguments
       and the defaults drive boxed calls) */
    if (prep.def_room) g = dk__registration_init(prep.def_room, r, DK__REG_DEF, lib, debug, dlen, dbytes + sbytes);
    else if (!(g = dk__new_registration(r, DK__REG_DEF, lib, debug, dbytes + sbytes))) {
        dk__op_abandon(r, &prep);
        dk_schema_free(parsed);
        return DK_ERR_NO_MEMORY;
    }
    /* the record's extra bytes: the defaults, then the schema */
    kept = dk__sp_copy(&move, parsed, (char *)(void *)DK__DEF(g)->info.defaults + dbytes, sbytes, prep.op->pub.name);
    dk_schema_free(parsed);
    if (dbytes) dk__defaults_fill((dk_value *)(void *)DK__DEF(g)->info.defaults, kept);
    else DK__DEF(g)->info.defaults = dk__no_defaults;
    DK__DEF(g)->info.parsed = kept;
    DK__DEF(g)->boxed_tensors = dk__boxed_tensors(kept);
    DK__DEF(g)->info.adapters = adapters;
    DK__DEF(g)->info.tags = tags;
    DK__DEF(g)->info.alias_analysis = opts ? opts->alias_analysis : DK_ALIAS_ANALYSIS_FROM_SCHEMA;
    dk__op_commit(r, &prep);
    g->op = prep.op;
    prep.op->def = g;
    dk__op_publish(r, prep.op, prep.table, NULL, 0);
    dk__own(lib, g);
    for (l = r->listeners; l; l = l->next)
        if (l->on_registered) l->on_registered(&prep.op->pub, l->kernel.user_data);
    if (out) *out = g;
    return DK_OK;
}

/* ---- impl --------------------------------------------------------------------- */

/* c10 2.x warns once per process for every operator (TORCH_WARN_ONCE),
   never for Meta (2.11: nor MTIA) and with a first line of its own; 1.13.1
   at every override. With c10_messages a registry follows its preset's c10;
   without, it warns at every override (a later override in another library
   would go unnoticed otherwise). */
#if defined(DK__TORCH_ROWS) && DK_C10_VERSION >= 20000
static int dk__override_warned;   /* c10 2.x, c10_messages: the process's one warning is given */
#endif

DK__PRIVATE void dk__warn_override(dk_registry *r, const dk__op *op, dk_key key, const dk_registration *old,
                                   const char *debug) {
    char msg[2048];
    const char *once = "";
    int n;
#if defined(DK__TORCH_ROWS) && DK_C10_VERSION >= 20000
    if (dk__hooks_of(r)->c10_messages) {
        int expected = 0;
        if (key == DK_Meta || (DK_C10_VERSION >= 21100 && key == DK_MTIA)) return;
        if (!DK__CAS(&dk__override_warned, &expected, 1)) return;
        once = "Warning only once for all operators,  other operators may also be overridden.\n  ";
    }
#endif
    n = snprintf(msg, sizeof msg,
                 "%sOverriding a previously registered kernel for the same operator and the same dispatch key\n"
                 "  operator: %s\n    %s\n  dispatch key: %s\n  previous kernel: %s\n       new kernel: %s", once,
                 op->def ? DK__DEF_SCHEMA(op->def) : op->pub.name, op->def ? DK__DEF(op->def)->debug : "no debug info",
                 dk_key_name(key), old->kernel.debug, debug);
    if (n > 0) dk__mark_cut(msg, sizeof msg, (size_t)n);
    dk__log(r, DK_LOG_KERNEL_OVERRIDDEN, msg);
}

DK__PRIVATE dk_status dk__impl_locked(dk_registry *r, const char *name, dk_key key, dk_kernel_desc d,
                                      const char *debug, dk_library *lib, dk_registration **out) {
    size_t len = dk__op_name_length(name, 1);
    dk__op_prep prep;
    dk_registration *g;
    const dk_registration *old;
    dk_status s;
    const char *overload;
    if (!len || name[len] != '\0')
        return dk__fail(DK_ERR_BAD_NAME, "impl(\"%s\", ...): expected an operator name 'ns::name[.overload]'", name);
    /* as def (and c10's impl): no def could ever complete such an operator */
    if ((overload = strchr(name, '.')) != NULL && (!strcmp(overload + 1, "default") || !strncmp(overload + 1, "__", 2)))
        return dk__fail(DK_ERR_BAD_NAME, "impl(\"%s\", ...): %s is not a legal overload name for aten operators",
                        name, overload + 1);
    if ((s = dk__check_kernel_key("impl", key)) != DK_OK) return s;
    if (dk_key_is_alias(key) && !dk__role_of(key))   /* resolution would never read it */
        return dk__fail(DK_ERR_BAD_KEY,
                        "impl(\"%s\", %s): the alias key plays no resolution role (a KEYS(...) alias, or a "
                        "second alias of the same role): register the kernel at its runtime keys; a fallback "
                        "at the alias covers them all", name, dk_key_name(key));
    if ((s = dk__check_kernel_desc("impl", d)) != DK_OK) return s;
    if (key == DK_Undefined) { /* catch-all */
        if ((int)DK__ALIAS_MATH == 0)
            return dk__fail(DK_ERR_BAD_KEY, "impl(\"%s\", ...): a catch-all kernel needs an alias key with the "
                                            "MATH set, which this key list lacks",
                            name);
        key = (dk_key)DK__ALIAS_MATH;
    }
    if ((s = dk__op_prepare(r, name, len, 0, &prep)) != DK_OK) return s;
    if (d.signature && !prep.is_new &&
        (s = dk__check_kernel_signature("impl", prep.op, key, d.signature, debug)) != DK_OK) {
        dk__op_abandon(r, &prep);
        return s;
    }
    if (!(g = dk__new_registration(r, DK__REG_IMPL, lib, debug, 0))) {
        dk__op_abandon(r, &prep);
        return DK_ERR_NO_MEMORY;
    }
    dk__op_commit(r, &prep);
    g->op = prep.op;
    g->kernel.fn = d.fn;
    g->kernel.boxed = d.boxed;
    g->kernel.user_data = d.user_data;
    g->kernel.key = key;
    g->kernel.kind = d.fallthrough ? DK_KERNEL_FALLTHROUGH : DK_KERNEL_FUNCTION;
    g->kernel.signature = d.signature;
    for (old = prep.op->impls; old && old->kernel.key != key; old = old->next) {}
    if (old) dk__warn_override(r, prep.op, key, old, g->kernel.debug);
    g->next = prep.op->impls;
    prep.op->impls = g;
    {
        int slots[DK_NUM_SLOTS], n = dk__affected_slots(r, key, slots);
        dk__op_publish(r, prep.op, prep.table, slots, n);
    }
    dk__own(lib, g);
    if (out) *out = g;
    return DK_OK;
}

/* ---- fallback ----------------------------------------------------------------- */

DK__PRIVATE dk_status dk__fallback_locked(dk_registry *r, dk_key key, dk_kernel_desc d, const char *debug,
                                          dk_library *lib, dk_registration **out) {
    int slots[DK_NUM_SLOTS], n, i;
    dk_op_table **tables = NULL;
    dk_registration *g;
    uint32_t j;
    dk_status s;
    if ((s = dk__check_kernel_key("fallback", key)) != DK_OK) return s;
    if (key == DK_Undefined)
        return dk__fail(DK_ERR_BAD_KEY, "fallback: no backend fallback can be registered for Undefined");
    if ((s = dk__check_kernel_desc("fallback", d)) != DK_OK) return s;
    if (!d.fallthrough && !d.boxed)
        return dk__fail(DK_ERR_BAD_KERNEL, "fallback: a backend fallback must be boxed (or a fallthrough)");
    n = dk__fallback_slots(key, slots);
    if (n == 0) return dk__fail(DK_ERR_BAD_KEY, "fallback: alias '%s' covers no runtime key", dk_key_name(key));
    for (i = 0; i < n; i++)
        if (r->fallbacks[slots[i]])
            return dk__fail(DK_ERR_DUPLICATE_FALLBACK,
                            "Tried to register multiple backend fallbacks for the same dispatch key %s; "
                            "previous registration %s, new registration %s",
                            dk_key_name(dk__slot_keys[slots[i]]), r->fallbacks[slots[i]]->kernel.debug, debug);
    /* a fallthrough changes the tables' masks: every operator's next table
       first, so that nothing can fail after this; a boxed fallback is read
       from the registry (Note [Resolution]) */
    if (r->live_ops && d.fallthrough) {
        if (!(tables = (dk_op_table **)dk__alloc(r, r->live_ops * sizeof *tables))) return DK_ERR_NO_MEMORY;
        for (j = 0; j < r->live_ops; j++)
            if (!(tables[j] = dk__alloc_table(r))) {
                while (j--) dk__free_table(r, tables[j]);
                dk__free(r, tables);
                return DK_ERR_NO_MEMORY;
            }
    }
    if (!(g = dk__new_registration(r, DK__REG_FALLBACK, lib, debug, 0))) {
        for (j = 0; tables && j < r->live_ops; j++) dk__free_table(r, tables[j]);
        dk__free(r, tables);
        return DK_ERR_NO_MEMORY;
    }
    g->kernel.boxed = d.boxed;
    g->kernel.user_data = d.user_data;
    g->kernel.key = key;
    g->kernel.kind = d.fallthrough ? DK_KERNEL_FALLTHROUGH : DK_KERNEL_FUNCTION;
    g->kernel.is_fallback = 1;
    g->kernel.signature = d.signature;
    for (i = 0; i < n; i++) r->fallbacks[slots[i]] = g;
    if (d.fallthrough) dk__recompute_slots(r, slots, n, tables);
    else
        for (i = 0; i < n; i++) DK__STORE_REL(&r->boxed_fallbacks[slots[i]], (const dk_kernel *)&g->kernel);
    dk__free(r, tables);
    dk__own(lib, g);
    if (out) *out = g;
    return DK_OK;
}

/* ---- deregistration ------------------------------------------------------------ */

DK__PRIVATE void dk__unlink(dk_registration **head, dk_registration *g, int lib_list) {
    dk_registration **p;
    for (p = head; *p && *p != g; p = lib_list ? &DK__LIB_LINK(*p)->next : &(*p)->next) {}
    if (*p) *p = lib_list ? DK__LIB_LINK(g)->next : g->next;
}

DK__PRIVATE void dk__deregister_locked(dk_registry *r, dk_registration *g) {
    dk_registration *l;
    int slots[DK_NUM_SLOTS], n = 0, s;
    switch (g->type) {
    case DK__REG_DEF:
        for (l = r->listeners; l; l = l->next) /* told before the schema goes, as c10 */
            if (l->on_deregistered) l->on_deregistered(&g->op->pub, l->kernel.user_data);
        g->op->def = NULL;
        dk__op_update(r, g->op, NULL, 0);
        dk__op_remove_if_unused(r, g->op);
        break;
    case DK__REG_IMPL:
        dk__unlink(&g->op->impls, g, 0);
        n = dk__affected_slots(r, g->kernel.key, slots);
        dk__op_update(r, g->op, slots, n);
        dk__op_remove_if_unused(r, g->op);
        break;
    case DK__REG_FALLBACK:
        for (s = 0; s < DK_NUM_SLOTS; s++)
            if (r->fallbacks[s] == g) {
                r->fallbacks[s] = NULL;
                slots[n++] = s;
                if (g->kernel.kind != DK_KERNEL_FALLTHROUGH)
                    DK__STORE_REL(&r->boxed_fallbacks[s], (const dk_kernel *)NULL);
            }
        if (g->kernel.kind == DK_KERNEL_FALLTHROUGH) dk__recompute_slots(r, slots, n, NULL);
        break;
    default: /* listener */
        dk__unlink(&r->listeners, g, 0);
        break;
    }
    g->live = 0;
    /* calls may still be running its kernel; a def kept in its operator's
       block goes with the operator (retired above, or when it goes) */
    if (!dk__def_in_op(g)) dk__retire(r, g);
}

/* Removes exactly what the handle registered and returns at once; calls
   that began before may still run the kernel (dk_registry_synchronize
   waits for them). The handle is freed with what it retired (WHAT A
   PROGRAM DOES), so do not use it after. DK_ERR_BAD_HANDLE for NULL, or
   for a handle deregistered before and not yet freed; a handle of a
   destroyed registry is freed memory (dk_registry_destroy). */
DK_API dk_status dk_deregister(dk_registration *g) {
    dk_registry *r;
    if (!g) return dk__fail(DK_ERR_BAD_HANDLE, "dk_deregister: NULL handle");
    r = dk__reg_registry(g);
    if (dk__owns(r)) return dk__reentrant("dk_deregister");
    dk__lock(r);
    if (!g->live) {
        dk__unlock(r);
        return dk__fail(DK_ERR_BAD_HANDLE, "dk_deregister: this handle was already deregistered (%s)",
                        g->type == DK__REG_LISTENER ? "a listener" : dk__reg_debug(g));
    }
    if (g->in_library) dk__unlink(&DK__LIB_LINK(g)->library->regs, g, 1);
    dk__deregister_locked(r, g);
    dk__end_change(r);
    dk__unlock(r);
    return DK_OK;
}

/* ---- public registration entry points ------------------------------------------ */

#define DK__LOCKED_CALL(r, what, sig, call)                                     \
    do {                                                                        \
        dk_status st_ = DK_OK;                                                  \
        if (dk__owns(r)) return dk__reentrant(what);                            \
        dk__lock(r);                                                            \
        if ((st_ = dk__check_signature((r), (sig))) == DK_OK) st_ = (call);     \
        dk__end_change(r);                                                      \
        dk__unlock(r);                                                          \
        return st_;                                                             \
    } while (0)

DK_API dk_status dk__def(dk_registry *r, const char *schema, const dk_op_adapters *adapters, const char *file,
                         int line, dk_registration **out, const char *signature) {
    dk_def_options opts;
    memset(&opts, 0, sizeof opts);
    opts.adapters = adapters;
    return dk__def_with(r, schema, &opts, file, line, out, signature);
}

/* dk_def_with and dk_impl with the site given: helpers that are themselves called from
   the registering code (gen/'s <op>_def and <op>_impl macros) pass their
   caller's __FILE__ and __LINE__. */
DK_API dk_status dk__def_with(dk_registry *r, const char *schema, const dk_def_options *opts, const char *file,
                              int line, dk_registration **out, const char *signature) {
    char debug[512];
    if (!r || !schema) return dk__fail(DK_ERR_NULL, "def: NULL registry or schema");
    dk__format_debug(debug, sizeof debug, file, line);
    DK__LOCKED_CALL(r, "def", signature, dk__def_locked(r, schema, opts, debug, NULL, out));
}

DK_API dk_status dk__impl(dk_registry *r, const char *op_name, dk_key key, dk_kernel_desc kernel, const char *file,
                          int line, dk_registration **out, const char *signature) {
    char debug[512];
    if (!r || !op_name) return dk__fail(DK_ERR_NULL, "impl: NULL registry or operator name");
    dk__format_debug(debug, sizeof debug, file, line);
    dk__debug_named(debug, sizeof debug, kernel.name);
    DK__LOCKED_CALL(r, "impl", signature, dk__impl_locked(r, op_name, key, kernel, debug, NULL, out));
}

DK_API dk_status dk__fallback(dk_registry *r, dk_key key, dk_kernel_desc kernel, const char *file, int line,
                              dk_registration **out, const char *signature) {
    char debug[512];
    if (!r) return dk__fail(DK_ERR_NULL, "fallback: NULL registry");
    dk__format_debug(debug, sizeof debug, file, line);
    dk__debug_named(debug, sizeof debug, kernel.name);
    DK__LOCKED_CALL(r, "fallback", signature, dk__fallback_locked(r, key, kernel, debug, NULL, out));
}

DK_API dk_status dk_registry_add_listener(dk_registry *r, dk_op_listener on_registered, dk_op_listener on_deregistered,
                                 void *user_data, dk_registration **out) {
    dk_registration *g;
    uint32_t i;
    if (!r || (!on_registered && !on_deregistered)) return dk__fail(DK_ERR_NULL, "add_listener: NULL argument");
    if (dk__owns(r)) return dk__reentrant("add_listener");
    dk__lock(r);
    if (!(g = dk__new_registration(r, DK__REG_LISTENER, NULL, NULL, 0))) {
        dk__unlock(r);
        return DK_ERR_NO_MEMORY;
    }
    g->on_registered = on_registered;
    g->on_deregistered = on_deregistered;
    g->kernel.user_data = user_data;
    g->next = r->listeners;
    r->listeners = g;
    for (i = 0; i < r->n_ops; i++)
        if (r->ops[i] && r->ops[i]->def && on_registered) on_registered(&r->ops[i]->pub, user_data);
    dk__unlock(r);
    if (out) *out = g;
    return DK_OK;
}


/* ---- library blocks --------------------------------------------------------------- */

#define DK__LIBRARY_KIND_NAME(kind, block) #block,
/* the block macro of each kind, as c10's messages name them */
static const char *const dk__library_kind_names[] = { DK__FORALL_LIBRARY_KINDS(DK__LIBRARY_KIND_NAME) };

/* Library blocks run and failed, counted for dk_library_blocks. */
DK__PRIVATE void dk__count_block(dk_registry *r, int run, int failed) {
    int locked = dk__read_lock(r);
    r->blocks_run += (unsigned long)run;
    r->blocks_failed += (unsigned long)failed;
    dk__read_unlock(r, locked);
}

/* A failure inside a block: static blocks have no caller to return it to,
   so it goes to the logger and counts the block as failed (once). */
DK__PRIVATE dk_status dk__lib_result(dk_library *lib, dk_status s) {
    if (s != DK_OK && lib->log_errors) {
        dk__log(lib->registry, DK_LOG_LIBRARY_BLOCK_FAILED, dk_last_error());
        if (!lib->failed) {
            lib->failed = 1;
            dk__count_block(lib->registry, 0, 1);
        }
    }
    return s;
}

/* Library blocks run in r (dk_library_run and the static DK_LIBRARY blocks)
   and how many of them failed: could not open (another configuration,
   a second DK_LIBRARY of a namespace...) or had a registration fail. Both
   counts only grow; a failure's message went to the registry's logger
   (DK_LOG_LIBRARY_BLOCK_FAILED) and is in dk_last_error() of the thread
   that ran the block. A plugin host reads them around dlopen:
       unsigned long run0, failed0, run, failed;
       dk_library_blocks(dk_registry_default(), &run0, &failed0);
       void *so = dlopen(path, RTLD_NOW);
       dk_library_blocks(dk_registry_default(), &run, &failed);
       if (so && failed != failed0) { dlclose(so); ... refuse it: dk_last_error() says why }
   (run - run0: the plugin's blocks; 0 when a static block was dropped). */
DK_API dk_status dk_library_blocks(dk_registry *r, unsigned long *run, unsigned long *failed) {
    int locked;
    if (!r || !run || !failed) return dk__fail(DK_ERR_NULL, "library_blocks: NULL argument");
    locked = dk__read_lock(r);
    *run = r->blocks_run;
    *failed = r->blocks_failed;
    dk__read_unlock(r, locked);
    return DK_OK;
}

DK__PRIVATE dk_status dk__library_open_locked(dk_registry *r, dk_library_kind kind, const char *ns, dk_key key,
                                              const char *file, int line, dk_library **out) {
    const char *kname = dk__library_kind_names[kind];
    char debug[512], where[512];
    dk_library *lib, *other;
    size_t n = strlen(ns);
    dk_status s;
    snprintf(where, sizeof where, "%s:%d", file ? file : "<unknown>", line);
    dk__format_debug(debug, sizeof debug, file, line);
    if (strcmp(ns, "_") == 0 && kind != DK_LIBRARY_KIND_IMPL)
        return dk__fail(DK_ERR_WRONG_BLOCK,
                        "%s: cannot define %s with the wildcard namespace _ (every %s defines operators for a "
                        "distinct namespace!) Did you mean to use DK_LIBRARY_IMPL instead?  "
                        "(Error occurred while processing %s block at %s)", kname, kname, kname, kname, where);
    if (strcmp(ns, "_") != 0 && (dk__ident(ns) != n || n == 0))
        return dk__fail(DK_ERR_BAD_NAME, "%s: '%s' is not a namespace identifier", kname, ns);
    if (kind != DK_LIBRARY_KIND_IMPL && key != DK_Undefined)
        return dk__fail(DK_ERR_BAD_KEY, "%s: only DK_LIBRARY_IMPL blocks have a dispatch key", kname);
    if (kind == DK_LIBRARY_KIND_IMPL && (s = dk__check_kernel_key(kname, key)) != DK_OK) return s;
    if (kind == DK_LIBRARY_KIND_DEF)
        for (other = r->libraries; other; other = other->next)
            if (other->kind == DK_LIBRARY_KIND_DEF && strcmp(other->ns, ns) == 0)
                return dk__fail(DK_ERR_DUPLICATE_LIBRARY,
                                "Only a single DK_LIBRARY can be used to register the namespace %s; please put all "
                                "of your definitions in a single DK_LIBRARY block.  If you were trying to specify "
                                "implementations, consider using DK_LIBRARY_IMPL (which can be duplicated).  If you "
                                "really intended to define operators for a single namespace in a distributed way, "
                                "you can use DK_LIBRARY_FRAGMENT to explicitly indicate this.  Previous "
                                "registration of DK_LIBRARY was %s; latest registration was %s",
                                ns, other->debug, debug);
    {
        const char *lns = NULL, *ldebug = NULL;
        lib = (dk_library *)dk__alloc_with_strings(r, sizeof *lib, &lns, ns, &ldebug, debug);
        if (!lib) return DK_ERR_NO_MEMORY;
        lib->ns = lns;
        lib->debug = ldebug;
        lib->where = ldebug + strlen("registered at ");
    }
    lib->registry = r;
    lib->kind = kind;
    lib->key = key;
    lib->next = r->libraries;
    r->libraries = lib;
    *out = lib;
    return DK_OK;
}

DK_API dk_status dk__library_open(dk_registry *r, dk_library_kind kind, const char *ns, dk_key key, const char *file,
                                  int line, dk_library **out, const char *signature) {
    if (!r || !ns || !out) return dk__fail(DK_ERR_NULL, "library_open: NULL argument");
    if ((unsigned)kind >= (unsigned)DK__LIB_END) return dk__fail(DK_ERR_BAD_ARGUMENT, "library_open: bad kind %d", (int)kind);
    DK__LOCKED_CALL(r, "library_open", signature, dk__library_open_locked(r, kind, ns, key, file, line, out));
}

DK__PRIVATE dk_status dk__library_closed(const char *what) {
    return dk__fail(DK_ERR_BAD_HANDLE, "%s: the library was already closed", what);
}

/* Undoes everything the block registered, newest first, and unlinks it. */
DK__PRIVATE void dk__library_close_locked(dk_registry *r, dk_library *lib) {
    dk_library **p;
    dk_registration *g;
    while ((g = lib->regs) != NULL) {
        lib->regs = DK__LIB_LINK(g)->next;
        if (g->live) dk__deregister_locked(r, g);
    }
    for (p = &r->libraries; *p != lib; p = &(*p)->next) {}
    *p = lib->next;
    if (lib->static_slot) *lib->static_slot = NULL;
    lib->closed = 1;
    dk__retire(r, lib);  /* a second close still finds it closed until the next reclaim */
}

/* Library blocks, as torch/library.h: DEF (one per namespace), FRAGMENT,
   IMPL (with a key; namespace "_" for fallbacks). Registrations made
   through a library are undone by dk_library_close(). */
DK_API dk_status dk_library_close(dk_library *lib) {
    dk_registry *r;
    if (!lib) return dk__fail(DK_ERR_NULL, "library_close: NULL library");
    r = lib->registry;
    if (dk__owns(r)) return dk__reentrant("library_close");
    dk__lock(r);
    if (lib->closed) {
        dk__unlock(r);
        return dk__library_closed("library_close");
    }
    dk__library_close_locked(r, lib);
    dk__end_change(r);
    dk__unlock(r);
    return DK_OK;
}

DK__PRIVATE const char *dk__kind_name(const dk_library *lib) { return dk__library_kind_names[lib->kind]; }

/* Qualifies `name` with the block's namespace into buf; an explicit namespace
   must be the block's. Returns DK_OK or a failure naming `what`. */
DK__PRIVATE dk_status dk__qualify(const dk_library *lib, const char *what, const char *name, char *buf, size_t n) {
    size_t id = dk__ident(name);
    if (id && name[id] == ':' && name[id + 1] == ':') {
        if (strcmp(lib->ns, "_") != 0 && (strlen(lib->ns) != id || strncmp(lib->ns, name, id) != 0)) {
            /* c10's two texts: a def's has no prefix and sends to the DEF block */
            char prefix[512] = "";
            int impl = strcmp(what, "impl") == 0;
            if (impl) snprintf(prefix, sizeof prefix, "impl(\"%.480s\", ...): ", name);
            return dk__fail(DK_ERR_NAMESPACE_MISMATCH,
                            "%sExplicitly provided namespace (%.*s) in %s does not match namespace of enclosing %s "
                            "block (%s).  Move this definition to the %s block corresponding to this namespace (and "
                            "consider deleting the namespace from your schema string.)  (Error occurred while "
                            "processing %s block at %s)",
                            prefix, (int)id, name, impl ? "operator name" : "schema string", dk__kind_name(lib),
                            lib->ns, impl ? "DK_LIBRARY_IMPL" : "(unique) DK_LIBRARY", dk__kind_name(lib), lib->where);
        }
        if (strlen(name) >= n) return dk__fail(DK_ERR_BAD_NAME, "%s: name too long", what);
        strcpy(buf, name);
        return DK_OK;
    }
    if (strcmp(lib->ns, "_") == 0)
        return dk__fail(DK_ERR_BAD_NAME, "%s(\"%s\"): a block of namespace _ needs names with an explicit namespace",
                        what, name);
    if (strlen(lib->ns) + 2 + strlen(name) >= n) return dk__fail(DK_ERR_BAD_NAME, "%s: name too long", what);
    sprintf(buf, "%s::%s", lib->ns, name);
    return DK_OK;
}

#define DK__QUALIFIED_MAX 4096

/* Inside a block: def ("name(args) -> ret" or "ns::name..." with the block's
   ns), impl ("name" or "ns::name"; DK_Undefined = the block's key, or
   catch-all in DEF/FRAGMENT blocks), fallback (IMPL blocks of namespace _). */
DK_API dk_status dk_library_def(dk_library *lib, const char *schema) { return dk_library_def_with(lib, schema, NULL); }

DK_API dk_status dk_library_def_with(dk_library *lib, const char *schema, const dk_def_options *opts) {
    char full[DK__QUALIFIED_MAX];
    dk_status s;
    if (!lib || !schema) return dk__fail(DK_ERR_NULL, "def: NULL library or schema");
    if (dk__owns(lib->registry)) return dk__reentrant("def");
    dk__lock(lib->registry);
    if (lib->closed)
        s = dk__library_closed("def");
    else if (lib->kind == DK_LIBRARY_KIND_IMPL)
        s = dk__fail(DK_ERR_WRONG_BLOCK,
                     "def(\"%.*s\"): Cannot define an operator inside of a DK_LIBRARY_IMPL block.  All def()s should "
                     "be placed in the (unique) DK_LIBRARY block for their namespace.  (Error occurred while "
                     "processing DK_LIBRARY_IMPL block at %s)",
                     (int)strcspn(schema, "("), schema, lib->where); /* c10 names the operator, not the schema */
    else if ((s = dk__qualify(lib, "def", schema, full, sizeof full)) == DK_OK)
        s = dk__def_locked(lib->registry, full, opts, lib->debug, lib, NULL);
    dk__end_change(lib->registry);
    dk__unlock(lib->registry);
    return dk__lib_result(lib, s);
}

DK_API dk_status dk_library_impl(dk_library *lib, const char *name, dk_key key, dk_kernel_desc kernel) {
    return dk_library_impl_at(lib, name, key, kernel, NULL, 0);
}

/* dk_library_impl recording the given file:line instead of the block's
   (DK_LIBRARY_IMPL_TYPED and gen/'s <op>_library_impl pass their caller's). */
/* file NULL: the block's own "registered at" (c10's: a library's kernels
   say where the block is); else the caller's file:line. */
DK_API dk_status dk_library_impl_at(dk_library *lib, const char *name, dk_key key, dk_kernel_desc kernel,
                                 const char *file, int line) {
    char full[DK__QUALIFIED_MAX], debug[512];
    dk_status s;
    if (!lib || !name) return dk__fail(DK_ERR_NULL, "impl: NULL library or name");
    if (file) dk__format_debug(debug, sizeof debug, file, line);
    else snprintf(debug, sizeof debug, "%s", lib->debug);
    dk__debug_named(debug, sizeof debug, kernel.name);
    if (dk__owns(lib->registry)) return dk__reentrant("impl");
    dk__lock(lib->registry);
    if (lib->closed)
        s = dk__library_closed("impl");
    else if (lib->kind == DK_LIBRARY_KIND_IMPL && key != DK_Undefined && key != lib->key)
        s = dk__fail(DK_ERR_KEY_MISMATCH,
                     "impl(\"%s\", ...): Explicitly provided dispatch key (%s) is inconsistent with the dispatch key "
                     "of the enclosing DK_LIBRARY_IMPL block (%s).  Please declare a separate DK_LIBRARY_IMPL block "
                     "for this dispatch key and move your impl() there.  (Error occurred while processing "
                     "DK_LIBRARY_IMPL block at %s)",
                     name, (unsigned)key < (unsigned)DK_NUM_KEYS ? dk_key_name(key) : "?", dk_key_name(lib->key),
                     lib->where);
    else if ((s = dk__qualify(lib, "impl", name, full, sizeof full)) == DK_OK)
        s = dk__impl_locked(lib->registry, full, lib->kind == DK_LIBRARY_KIND_IMPL ? lib->key : key, kernel, debug, lib, NULL);
    dk__end_change(lib->registry);
    dk__unlock(lib->registry);
    return dk__lib_result(lib, s);
}

DK__PRIVATE dk_status dk__lib_fallback_named(dk_library *lib, dk_kernel_desc kernel) {
    char debug[512];
    snprintf(debug, sizeof debug, "%s", lib->debug);
    dk__debug_named(debug, sizeof debug, kernel.name);
    return dk__fallback_locked(lib->registry, lib->key, kernel, debug, lib, NULL);
}

DK_API dk_status dk_library_fallback(dk_library *lib, dk_kernel_desc kernel) {
    dk_status s;
    if (!lib) return dk__fail(DK_ERR_NULL, "fallback: NULL library");
    if (dk__owns(lib->registry)) return dk__reentrant("fallback");
    dk__lock(lib->registry);
    if (lib->closed)
        s = dk__library_closed("fallback");
    else if (lib->kind != DK_LIBRARY_KIND_IMPL)
        s = dk__fail(DK_ERR_WRONG_BLOCK,
                     "fallback(...): Cannot define an operator inside of a %s block.  Did you mean to call this "
                     "function inside a DK_LIBRARY_IMPL block?  (Error occurred while processing %s block at %s)",
                     dk__kind_name(lib), dk__kind_name(lib), lib->where);
    else if (strcmp(lib->ns, "_") != 0)
        s = dk__fail(DK_ERR_WRONG_BLOCK,
                     "fallback(...): Fallback functions which apply to only a single namespace (you specified %s) "
                     "are not supported.  If you intended to apply this fallback function globally, please define a "
                     "separate block:\n\n    DK_LIBRARY_IMPL(_, %s, m) { dk_library_fallback(m, ...); }\n\n(Error "
                     "occurred while processing DK_LIBRARY_IMPL block at %s)",
                     lib->ns, dk_key_name(lib->key), lib->where);
    else
        s = dk__lib_fallback_named(lib, kernel);
    dk__end_change(lib->registry);
    dk__unlock(lib->registry);
    return dk__lib_result(lib, s);
}

/* The loaded object (its base address) holding p; NULL if not known. */
#if defined(_WIN32)
DK__PRIVATE const void *dk__object_of(const void *p) {
    HMODULE m = NULL;
    if (!GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCSTR)p, &m))
        return NULL;
    return (const void *)m;
}
#elif (defined(__linux__) || defined(__unix__) || defined(__APPLE__)) && !defined(DK_NO_DLADDR)
#include <dlfcn.h>
#if defined(__USE_GNU) || defined(__APPLE__) || (!defined(__GLIBC__) && (defined(_GNU_SOURCE) || defined(_BSD_SOURCE)))
/* dlfcn.h declared dladdr and Dl_info (glibc: _GNU_SOURCE; musl: by default) */
typedef Dl_info dk__dl_info;
#else   /* declared only with _GNU_SOURCE (glibc) or _BSD_SOURCE: the same layout */
typedef struct { const char *dli_fname; void *dli_fbase; const char *dli_sname; void *dli_saddr; } dk__dl_info;
extern int dladdr(const void *addr, dk__dl_info *info);
#endif
DK__PRIVATE const void *dk__object_of(const void *p) {
    dk__dl_info info;
    return dladdr(p, &info) && info.dli_fbase ? info.dli_fbase : NULL;
}
#else
DK__PRIVATE const void *dk__object_of(const void *p) { (void)p; return NULL; }
#endif

DK__PRIVATE dk_status dk__library_run_in(dk_registry *r, dk_library_kind kind, const char *ns, dk_key key,
                                         dk_library_block block, const char *file, int line, dk_library **out,
                                         dk_library **static_slot, const char *signature) {
    dk_library *lib = NULL;
    /* found here, outside the registry's lock: dladdr takes the loader's */
    const void *object = static_slot ? dk__object_of(static_slot) : NULL;
    dk_status s;
    if (!r || !block) {
        s = dk__fail(DK_ERR_NULL, "library_run: NULL registry or block (%s:%d)", file ? file : "?", line);
        if (r) dk__log(r, DK_LOG_LIBRARY_BLOCK_FAILED, dk_last_error());
        return s;
    }
    if ((s = dk__library_open(r, kind, ns, key, file, line, &lib, signature)) != DK_OK) {
        dk__log(r, DK_LOG_LIBRARY_BLOCK_FAILED, dk_last_error());
        dk__count_block(r, 1, 1);
        return s;
    }
    dk__count_block(r, 1, 0);
    dk__lock(r);
    lib->log_errors = 1;
    lib->static_slot = static_slot;
    lib->object = object;
    if (static_slot) *static_slot = lib;
    dk__unlock(r);
    block(lib);
    if (out) *out = lib;   /* otherwise it stays open until the registry is destroyed */
    return DK_OK;
}

DK_API dk_status dk__library_run(dk_registry *r, dk_library_kind kind, const char *ns, dk_key key,
                                 dk_library_block block, const char *file, int line, dk_library **out,
                                 const char *signature) {
    return dk__library_run_in(r, kind, ns, key, block, file, line, out, NULL, signature);
}

DK_API dk_status dk__library_static(dk_library_kind kind, const char *ns, dk_key key, dk_library_block block,
                                    const char *file, int line, dk_library **slot, const char *signature) {
    return dk__library_run_in(dk_registry_default(), kind, ns, key, block, file, line, NULL, slot, signature);
}

DK_API void dk__library_static_close(dk_library **slot) {
    dk_library *lib = *slot;
    dk_registry *r;
    if (!lib || DK__LOAD_ACQ(&dk__exiting)) return;
    r = lib->registry;
    if (dk_library_close(lib) == DK_OK && !dk__in_call()) (void)dk__reclaim(r, 2, "library block destructor");
}

/* Unloading a plugin: closes every static block (DK_LIBRARY*) of the
   default registry that the loaded object holding `address` ran (pass any
   address inside the plugin: dlsym(handle, "a_symbol_of_it")), then waits
   as dk_registry_synchronize until no thread can still run their kernels.
   Call it before dlclose(handle): the blocks' destructors then find
   nothing to close or wait for. Without it they wait inside dlclose, under
   the dynamic loader's lock -- which deadlocks if a thread that must pass
   a quiescent point (or leave a call) first needs that lock itself (a
   kernel calling dlopen, dlsym or dladdr). DK_ERR_NOT_FOUND when no open
   block belongs to that object; DK_ERR_BAD_ARGUMENT where the platform
   cannot tell the object (no dladdr, no GetModuleHandleEx); DK_ERR_IN_CALL
   from inside a call. Linking: dladdr is in libc from glibc 2.34 (older:
   -ldl). */
DK_API dk_status dk_library_unload(const void *address) {
    dk_registry *r;
    dk_library *lib, *next;
    const void *object;
    int closed = 0;
    if (!address) return dk__fail(DK_ERR_NULL, "library_unload: NULL address");
    if (dk__in_call()) return dk__fail(DK_ERR_IN_CALL, "library_unload: called from inside a call or hook");
    if (!(object = dk__object_of(address)))   /* before the registry's lock: dladdr takes the loader's */
        return dk__fail(DK_ERR_BAD_ARGUMENT, "library_unload: cannot tell which loaded object holds %p (no dladdr "
                                             "here, or not an address of a loaded object)", address);
    if (!(r = dk_registry_default())) return dk__fail(DK_ERR_NO_MEMORY, "library_unload: no default registry");
    if (dk__owns(r)) return dk__reentrant("library_unload");
    dk__lock(r);
    for (lib = r->libraries; lib; lib = next) {
        next = lib->next;
        if (lib->object != object) continue;
        dk__library_close_locked(r, lib);
        closed++;
    }
    dk__end_change(r);
    dk__unlock(r);
    if (!closed)
        return dk__fail(DK_ERR_NOT_FOUND, "library_unload: no open DK_LIBRARY block of the object holding %p "
                                          "(already unloaded, or its blocks failed)", address);
    return dk_registry_synchronize(r);
}

/* The def's tags (torch.Tag), as a mask with bit DK_TAG_x set for each, and
   (dk_op_has_tag) one of them; its alias-analysis kind (dk_op_alias_analysis). No def: no tags, FROM_SCHEMA.
   Values, read inside a call bracket: safe anywhere, in both modes. */
DK_API uint64_t dk_op_tags(const dk_operator *op) {
    const dk_op_def_info *d;
    uint64_t tags;
    DK__HOLD();   /* the table may be retired meanwhile: held, it is not freed */
    d = dk__op_def(dk__snapshot(op));
    tags = d ? d->tags : 0;
    DK__UNHOLD();
    return tags;
}
DK_API int dk_op_has_tag(const dk_operator *op, dk_tag t) {
    return (unsigned)t < (unsigned)DK_NUM_TAGS && ((dk_op_tags(op) >> t) & 1);
}
DK_API dk_alias_analysis dk_op_alias_analysis(const dk_operator *op) {
    const dk_op_def_info *d;
    dk_alias_analysis a;
    DK__HOLD();
    d = dk__op_def(dk__snapshot(op));
    a = d ? d->alias_analysis : DK_ALIAS_ANALYSIS_FROM_SCHEMA;
    DK__UNHOLD();
    return a;
}

/* ---- lookup and introspection -------------------------------------------------------

   Lookups and everything read from a snapshot take no lock; what walks the
   registrations (dump_state, has_kernel_for_key, compute_slot, the
   computed table, iteration) takes the lock unless this thread already
   holds it (inside a listener or the logger). */

/* An operator: a stable pointer with a dense id, valid while the operator
   has a def or a kernel (and until its memory is freed: WHAT A PROGRAM
   DOES; its id may be taken again before). After that the pointer may
   point at another operator, a new one given the same slot (under
   AddressSanitizer the slot is poisoned until then). The first field is
   what the call path reads; operators sit side by side in their
   registry's slabs (docs/threads-memory-plugins.md, "Memory"). */
/* The operator named "ns::name[.overload]" if it has a def or a kernel, else NULL. Lock-free. */
DK_API dk_operator *dk_op_lookup(dk_registry *r, const char *name) {
    size_t len;
    dk__op *op;
    if (!r || !name) return NULL;
    len = strlen(name);
    DK__HOLD();
    op = dk__index_find(dk__index_of(r), DK_HASH64(name, len), name, len);
    DK__UNHOLD();
    return op ? &op->pub : NULL;
}

DK_API dk_status dk_op_lookup_defined(dk_registry *r, const char *name, dk_operator **out) {
    dk_operator *op;
    int defined;
    if (!r || !name || !out) return dk__fail(DK_ERR_NULL, "op_find: NULL argument");
    DK__HOLD();   /* the snapshot and the def's record the schema is read from may be retired meanwhile */
    op = dk_op_lookup(r, name);
    defined = op && dk_op_schema(op);
    DK__UNHOLD();
    if (!defined)
        return dk__fail(DK_ERR_NOT_FOUND, "Could not find schema for %s%s%s", name,
                        strchr(name, '.') ? "" : ".", /* c10 prints name "." overload, overload "" or not */
                        op ? " but we found an implementation; did you forget to def() the operator?" : "");
    *out = op;
    return DK_OK;
}

DK_API int dk_op_has_kernel_for_key(const dk_operator *op, dk_key k) {
    const dk_registration *g;
    int found = 0, locked;
    if (!op) return 0;
    locked = dk__read_lock(op->registry);
    for (g = ((const dk__op *)op)->impls; g && !found; g = g->next) found = g->kernel.key == k;
    dk__read_unlock(op->registry, locked);
    return found;
}

/* What a slot's missing record stands for now (Note [Resolution]): the
   record's user_data is its slot of r->boxed_fallbacks (dk__registry_init),
   so a typed call's slow path finds the fallback without the record's
   index (a division by the record's size) or a range check: the missing
   records are the only ones of their kind. */
DK__PRIVATE const dk_kernel *dk__missing_fallback(const dk_kernel *missing) {   /* NULL: none now */
    return DK__LOAD_ACQ((const dk_kernel *const *)missing->user_data);
}
DK_API const dk_kernel *dk__deferred(const dk_operator *op, const dk_kernel *k) {
    const dk_kernel *f;
    (void)op;
    DK__CALLER_READ_CHECK("dk__deferred");   /* a fallback's record: read inside its caller's call */
    if (k->kind != DK_KERNEL_MISSING) return k;
    f = dk__missing_fallback(k);
    return f ? f : k;
}

/* t with the boxed fallbacks in its slots: the table as it was before
   they left the tables (messages, explain). */
DK__PRIVATE void dk__table_with_fallbacks(const dk_registry *r, dk_op_table *t) {
    int s;
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        const dk_kernel *f;
        if (dk__kernel_at(t, s) != &r->missing[s] || !(f = DK__LOAD_ACQ(&r->boxed_fallbacks[s]))) continue;
        dk__entry_set(t, s, f, 0);
        dk__reason_set(t, s, DK_SOURCE_DETAIL_FALLBACK);
    }
}

DK_API int dk_op_has_computed_kernel_for_key(const dk_operator *op, dk_key k) {
    const dk_kernel *kernel;
    int has;
    if (!op || !dk_key_is_runtime(k)) return 0;
    DK__HOLD();   /* the snapshot and the record read here may be retired meanwhile */
    kernel = DK__ENTRY_KERNEL(dk_op_table_entry(dk__snapshot(op), dk_key_slot(k)));
    has = dk__deferred(op, kernel)->kind != DK_KERNEL_MISSING;
    DK__UNHOLD();
    return has;
}

static const char *const dk__reason_texts[] = {
#define DK__REASON_TEXT(name, text, source) text,
    DK_FORALL_SOURCE_DETAILS(DK__REASON_TEXT)
#undef DK__REASON_TEXT
};

/* Resolution of one slot and why (c10 computeDispatchTableEntryWithDebug):
   *reason is "kernel", "default backend kernel", "math kernel", ... "missing". */
DK_API const dk_kernel *dk_op_compute_slot(const dk_operator *op, int slot, const char **reason) {
    dk__front front;
    const dk_kernel *k;
    dk_source_detail why;
    int locked;
    if (!op || slot < 0 || slot >= DK_NUM_SLOTS) return NULL;
    locked = dk__read_lock(op->registry);
    dk__collect_front((const dk__op *)op, &front);
    k = dk__resolve(op->registry, (const dk__op *)op, &front, slot, &why);
    dk__read_unlock(op->registry, locked);
    if (reason) *reason = dk__reason_texts[why];
    return k;
}

DK__COLD_BEGIN
DK__PRIVATE const char *dk__kernel_state(const dk_kernel *k) {
    if (k->kind == DK_KERNEL_FALLTHROUGH) return "fallthrough boxed ";
    if (k->fn && k->boxed) return "boxed unboxed ";
    return k->fn ? "unboxed " : "boxed ";
}

/* The output convention of every dump and *_to_string: snprintf's. buf may
   be NULL when size is 0; the text is cut to size - 1 characters and
   NUL-terminated when size > 0; the return value is the length of the
   whole text. */
DK__PRIVATE void dk__out_init(char *buf, size_t *size) {
    if (!buf) *size = 0;
    else if (*size) buf[0] = '\0';
}

DK_API int dk_op_state_to_string(const dk_operator *op, char *buf, size_t size) {
    const dk__op *o = (const dk__op *)op;
    const dk_registration *g;
    size_t len = 0;
    int k, locked;
    dk__out_init(buf, &size);
    if (!op) return 0;
    locked = dk__read_lock(op->registry);
    dk__append(buf, size, &len, "name: ");
    dk__append(buf, size, &len, op->name);
    if (o->def) {
        dk__append(buf, size, &len, "\nschema: ");
        dk__append(buf, size, &len, DK__DEF_SCHEMA(o->def));
        dk__append(buf, size, &len, "\ndebug: ");
        dk__append(buf, size, &len, DK__DEF(o->def)->debug);
        dk__append_def_extras(buf, size, &len, o->def);
    } else {
        dk__append(buf, size, &len, "\nschema: (none)\n");
    }
    for (k = 0; k < DK_NUM_KEYS; k++) {
        int seen = 0;
        for (g = o->impls; g; g = g->next) {
            if ((int)g->kernel.key != k) continue;
            dk__append(buf, size, &len, dk_key_name((dk_key)k));
            if (dk_key_is_alias((dk_key)k)) dk__append(buf, size, &len, "[alias]");
            if (seen++) dk__append(buf, size, &len, " (inactive)");
            dk__append(buf, size, &len, ": ");
            dk__append(buf, size, &len, g->kernel.debug);
            dk__append(buf, size, &len, " :: ");
            dk__append(buf, size, &len, g->kernel.signature ? g->kernel.signature : "(none)");
            dk__append(buf, size, &len, " [ ");
            dk__append(buf, size, &len, dk__kernel_state(&g->kernel));
            dk__append(buf, size, &len, "]\n");
        }
    }
    dk__read_unlock(op->registry, locked);
    return (int)len;
}

/* c10's dumpComputedTable text of slots with a kernel. */
DK__PRIVATE void dk__dump_slots(const dk_op_table *t, char *buf, size_t size, size_t *len) {
    int s;
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        const dk_kernel *k = dk__kernel_at(t, s);
        if (k->kind == DK_KERNEL_MISSING) continue;
        dk__append(buf, size, len, dk_key_name(dk__slot_keys[s]));
        dk__append(buf, size, len, k->kind == DK_KERNEL_FALLTHROUGH ? ": fallthrough " : ": ");
        dk__append(buf, size, len, k->debug);
        dk__append(buf, size, len, " [");
        dk__append(buf, size, len, dk__reason_texts[dk__reason_at(t, s)]);
        dk__append(buf, size, len, "]\n");
    }
}

/* Recomputed from the registrations (c10 dumpComputedTable), not read from
   the live table: tests compare the two. */
DK_API int dk_op_computed_table_to_string(const dk_operator *op, char *buf, size_t size) {
    dk_op_table computed;
    dk__front front;
    size_t len = 0;
    int s, locked;
    dk__out_init(buf, &size);
    if (!op) return 0;
    locked = dk__read_lock(op->registry);
    dk__collect_front((const dk__op *)op, &front);
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        dk_source_detail why;
        dk__entry_set(&computed, s, dk__resolve(op->registry, (const dk__op *)op, &front, s, &why), 0);
        dk__reason_set(&computed, s, why);
    }
    dk__dump_slots(&computed, buf, size, &len);
    dk__read_unlock(op->registry, locked);
    return (int)len;
}

/* ---- the dispatch table as HTML (dk_registry_html_to_string) ------------------------- */

#define DK__HTML_CELL_ENUM(name, colour, mark, legend) DK__CELL_##name,
enum { DK_FORALL_HTML_CELLS(DK__HTML_CELL_ENUM) DK__CELL_END };
#undef DK__HTML_CELL_ENUM
static const char *const dk__cell_names[] = {
#define DK__HTML_CELL_NAME(name, colour, mark, legend) #name,
    DK_FORALL_HTML_CELLS(DK__HTML_CELL_NAME)
#undef DK__HTML_CELL_NAME
};
static const char *const dk__cell_marks[] = {
#define DK__HTML_CELL_MARK(name, colour, mark, legend) mark,
    DK_FORALL_HTML_CELLS(DK__HTML_CELL_MARK)
#undef DK__HTML_CELL_MARK
};

typedef struct dk__html {
    char *buf;
    size_t size, len;
    uint8_t used[DK_NUM_SLOTS];   /* a column that matters (shown without the toggle) */
    uint8_t backends[DK_NUM_BACKENDS + 1];  /* a kernel or fallback registered at one of its keys */
    int ops;
} dk__html;

DK__PRIVATE int dk__cell_of(const dk_kernel *k, dk_source_detail why) {
    if (k->kind == DK_KERNEL_FALLTHROUGH) return DK__CELL_fallthrough;
    if (k->kind == DK_KERNEL_AMBIGUOUS) return DK__CELL_ambiguous;
    if (k->kind == DK_KERNEL_MISSING) return DK__CELL_missing;
    if (why == DK_SOURCE_DETAIL_FALLBACK) return DK__CELL_fallback;
    return why == DK_SOURCE_DETAIL_KERNEL ? DK__CELL_kernel : DK__CELL_alias;
}

/* Text inside an element or an attribute value. */
DK__PRIVATE void dk__html_text(dk__html *h, const char *text) {
    char one[2] = { 0, 0 };
    for (; *text; text++) {
        const char *esc = *text == '&' ? "&amp;" : *text == '<' ? "&lt;" : *text == '>' ? "&gt;"
                        : *text == '"' ? "&quot;" : NULL;
        one[0] = *text;
        dk__append(h->buf, h->size, &h->len, esc ? esc : one);
    }
}

/* An alias key by its capitals: CompositeImplicitAutograd -> CIA. */
DK__PRIVATE void dk__html_alias(dk__html *h, dk_key alias) {
    const char *n = dk_key_name(alias);
    char initials[16];
    size_t i = 0;
    for (; *n && i + 1 < sizeof initials; n++)
        if (*n >= 'A' && *n <= 'Z') initials[i++] = *n;
    initials[i] = '\0';
    dk__append(h->buf, h->size, &h->len, initials);
}

/* The columns that matter: a slot some operator fills, and for a
   per-backend key (CPU, AutogradCPU, SparseCPU...) only when its backend
   has a kernel or fallback registered at one of its keys; otherwise an
   alias (a CompositeExplicitAutograd kernel, a fallback at Autograd) would
   fill the columns of every backend. */
DK__PRIVATE int dk__html_scan(dk_operator *op, void *ud) {
    dk__html *h = (dk__html *)ud;
    dk_op_table full, *t = &full;
    int s;
    memcpy(&full, dk__snapshot(op), DK__TABLE_BYTES);
    dk__table_with_fallbacks(op->registry, &full);
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        const dk_kernel *k = dk__kernel_at(t, s);
        dk_backend b = dk_key_backend(dk__slot_keys[s]);
        /* registered at this very key: a kernel, or a fallback not given for an alias */
        int direct = dk__reason_at(t, s) == DK_SOURCE_DETAIL_KERNEL ||
                     (dk__reason_at(t, s) == DK_SOURCE_DETAIL_FALLBACK && !dk_key_is_alias(k->key));
        if (k->kind != DK_KERNEL_MISSING) h->used[s] = 1;
        if (k->kind == DK_KERNEL_FUNCTION && direct && b != DK_InvalidBit) h->backends[b] = 1;
    }
    h->ops++;
    return 0;
}
DK__PRIVATE void dk__html_columns_that_matter(dk__html *h) {
    int s;
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        dk_backend b = dk_key_backend(dk__slot_keys[s]);
        if (b != DK_InvalidBit && !h->backends[b]) h->used[s] = 0;
    }
}

DK__PRIVATE void dk__html_cell(dk__html *h, const dk_operator *op, const dk_op_table *t, int s) {
    const dk_kernel *k = dk__kernel_at(t, s);
    int cell = dk__cell_of(k, (dk_source_detail)dk__reason_at(t, s));
    dk__append(h->buf, h->size, &h->len, "<td class=\"dk-");
    dk__append(h->buf, h->size, &h->len, dk__cell_names[cell]);
    dk__append(h->buf, h->size, &h->len, h->used[s] ? "\" data-key=\"" : " dk-quiet\" data-key=\"");
    dk__append(h->buf, h->size, &h->len, dk_key_name(dk__slot_keys[s]));
    dk__append(h->buf, h->size, &h->len, "\" title=\"");
    dk__html_text(h, op->name);
    dk__append(h->buf, h->size, &h->len, " @ ");
    dk__append(h->buf, h->size, &h->len, dk_key_name(dk__slot_keys[s]));
    dk__append(h->buf, h->size, &h->len, ": ");
    dk__append(h->buf, h->size, &h->len,
               cell == DK__CELL_fallthrough ? "fallthrough" : dk__reason_texts[dk__reason_at(t, s)]);
    if (k->debug && k->debug[0]) {
        dk__append(h->buf, h->size, &h->len, ", ");
        dk__html_text(h, k->debug);
    }
    dk__append(h->buf, h->size, &h->len, "\">");
    if (cell == DK__CELL_alias) dk__html_alias(h, k->key);
    else dk__append(h->buf, h->size, &h->len, dk__cell_marks[cell]);
    dk__append(h->buf, h->size, &h->len, "</td>");
}

DK__PRIVATE int dk__html_row(dk_operator *op, void *ud) {
    dk__html *h = (dk__html *)ud;
    dk_op_table full, *t = &full;   /* one snapshot per row */
    int s;
    memcpy(&full, dk__snapshot(op), DK__TABLE_BYTES);
    dk__table_with_fallbacks(op->registry, &full);
    dk__append(h->buf, h->size, &h->len, "<tr data-op=\"");
    dk__html_text(h, op->name);
    dk__append(h->buf, h->size, &h->len, "\"><th>");
    dk__html_text(h, op->name);
    dk__append(h->buf, h->size, &h->len, "</th>");
    for (s = 0; s < DK_NUM_SLOTS; s++) dk__html_cell(h, op, t, s);
    dk__append(h->buf, h->size, &h->len, "</tr>\n");
    return 0;
}

/* The style (one rule per cell class) and the legend, from the X-macro list. */
DK__PRIVATE void dk__html_head(dk__html *h) {
    dk__append(h->buf, h->size, &h->len,
               "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>dispatch table</title>\n<style>\n"
               "body{font:13px sans-serif;margin:12px}h1{font-size:18px;margin:0 0 6px}p{margin:4px 0}\n"
               "table{border-collapse:collapse;margin-top:6px}\n"
               "th,td{border:1px solid #999;padding:2px 4px;text-align:center;min-width:18px}\n"
               "thead th{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;white-space:nowrap}\n"
               "thead th:first-child{writing-mode:horizontal-tb;transform:none;vertical-align:bottom}\n"
               "tbody th{text-align:left;white-space:nowrap}\n"
               "#dk-all:not(:checked)~table .dk-quiet{display:none}\n"
               ".legend i{display:inline-block;white-space:nowrap;font-style:normal;margin-right:12px}\n"
               ".legend span{display:inline-block;width:14px;height:14px;border:1px solid #999;"
               "vertical-align:middle;margin-right:4px}\n");
#define DK__HTML_CSS(name, colour, mark, legend) \
    dk__append(h->buf, h->size, &h->len, ".dk-" #name "{background:" colour "}\n");
    DK_FORALL_HTML_CELLS(DK__HTML_CSS)
#undef DK__HTML_CSS
    dk__append(h->buf, h->size, &h->len, "</style></head><body>\n<h1>Dispatch table</h1>\n<p class=\"legend\">");
#define DK__HTML_LEGEND(name, colour, mark, legend) \
    dk__append(h->buf, h->size, &h->len, "<i><span class=\"dk-" #name "\"></span>" legend "</i>");
    DK_FORALL_HTML_CELLS(DK__HTML_LEGEND)
#undef DK__HTML_LEGEND
    dk__append(h->buf, h->size, &h->len, "</p>\n<p>Hover a cell for its kernel. Alias cells name the alias key "
               "by its capitals (CIA: CompositeImplicitAutograd, A: Autograd, ...).</p>\n"
               "<input type=\"checkbox\" id=\"dk-all\"><label for=\"dk-all\"> show every runtime key</label>\n");
}

DK__PRIVATE void dk__html_columns(dk__html *h) {
    int s;
    dk__append(h->buf, h->size, &h->len, "<table class=\"dk-table\">\n<thead><tr><th>operator</th>");
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        dk__append(h->buf, h->size, &h->len, h->used[s] ? "<th>" : "<th class=\"dk-quiet\">");
        dk__append(h->buf, h->size, &h->len, dk_key_name(dk__slot_keys[s]));
        dk__append(h->buf, h->size, &h->len, "</th>");
    }
    dk__append(h->buf, h->size, &h->len, "</tr></thead>\n<tbody>\n");
}

/* A picture of every operator's dispatch table: a self-contained HTML page
   (no script), one row per operator and one column per runtime key, each
   cell coloured by what the live table holds there (the classes of DK_FORALL_HTML_CELLS),
   the alias key named in alias-derived cells, the kernel's "registered
   at" in each cell's tooltip. Columns that do not matter are hidden until
   "show every runtime key" is ticked: those where every operator's slot is
   missing, and the per-backend keys (CUDA, AutogradCUDA...) of backends
   with no kernel and no fallback registered at any of their keys.
   snprintf-like; a registration between the sizing call and the writing
   call may change the length. */
DK_API int dk_registry_html_to_string(dk_registry *r, char *buf, size_t size) {
    dk__html h;
    dk__out_init(buf, &size);
    if (!r) return 0;
    memset(&h, 0, sizeof h);
    h.buf = buf;
    h.size = size;
    dk_registry_each_op(r, dk__html_scan, &h);
    dk__html_columns_that_matter(&h);
    dk__html_head(&h);
    dk__html_columns(&h);
    dk_registry_each_op(r, dk__html_row, &h);
    dk__append(h.buf, h.size, &h.len, "</tbody></table>\n</body></html>\n");
    return (int)h.len;
}

/* The i-th operator id for which keep() holds, read under the lock (unless
   held); the callback then runs unlocked, inside a call bracket so that the
   operator stays readable. */
DK__COLD_END

DK__PRIVATE dk__op *dk__op_at(dk_registry *r, uint32_t i, dk_key k, int any_key, int *past_end) {
    dk__op *op = NULL;
    const dk_registration *g;
    int locked = dk__read_lock(r);
    *past_end = i >= r->n_ops;
    if (!*past_end && (op = r->ops[i]) != NULL && !any_key) {
        for (g = op->impls; g && g->kernel.key != k; g = g->next) {}
        if (!g) op = NULL;
    }
    dk__read_unlock(r, locked);
    return op;
}

DK__PRIVATE void dk__each(dk_registry *r, dk_key k, int any_key, int (*fn)(dk_operator *op, void *user_data),
                          void *user_data) {
    uint32_t i;
    int past_end = 0, stop = 0;
    if (!r || !fn) return;
    for (i = 0; !past_end && !stop; i++) {
        dk__op *op;
        DK__HOLD();
        if ((op = dk__op_at(r, i, k, any_key, &past_end)) != NULL) stop = fn(&op->pub, user_data);
        DK__UNHOLD();
    }
}

DK_API void dk_registry_each_op(dk_registry *r, int (*fn)(dk_operator *op, void *user_data), void *user_data) {
    dk__each(r, DK_Undefined, 1, fn, user_data);
}

DK_API void dk_registry_each_op_for_key(dk_registry *r, dk_key k, int (*fn)(dk_operator *op, void *user_data),
                                        void *user_data) {
    dk__each(r, k, 0, fn, user_data);
}


/* ---- registries ------------------------------------------------------------------------- */

/* fork() copies only the calling thread: a registry lock that another
   thread holds at that moment (a registration in progress) would stay
   locked in the child, and its first registration would block forever.
   Every registry is listed under dk__global_lock, and pthread_atfork
   handlers (installed with the first registry) take the global lock,
   every registry's lock and then the thread states' (dk__threads_lock)
   before fork, so no registration, thread attach or exit is half done in
   the child, then release them after it, in the parent and in the child.
   Where a lock is busy, the handler lets go of everything it took and
   tries again: a thread holding a registry's lock that waits for the
   global one (a listener calling dk_trace_set) never deadlocks with it. A
   registry lock the forking thread holds itself (fork from a listener) is
   left alone: that thread releases it, in both processes. glibc drops the
   handlers of a shared object when it is unloaded (dlclose). Windows has
   no fork. */
static dk_registry *dk__registries;

#if !defined(_WIN32)
static void dk__fork_release(void) {
    dk_registry *r;
    for (r = dk__registries; r; r = r->next_registry)
        if (r->fork_locked) {
            r->fork_locked = 0;
            dk__mutex_unlock(&r->lock);
        }
    dk__mutex_unlock(&dk__global_lock);
}
static void dk__fork_prepare(void) {
    for (;;) {
        dk_registry *r, *busy = NULL;
        dk__mutex_lock(&dk__global_lock);
        for (r = dk__registries; r && !busy; r = r->next_registry) {
            if (dk__owns(r)) continue;
            if (dk__mutex_trylock(&r->lock)) r->fork_locked = 1;
            else busy = r;
        }
        if (!busy) {   /* held until dk__fork_done, after fork */
            /* last: the scan of the records takes it inside a registry's lock */
            dk__mutex_lock(&dk__threads_lock);
            return;
        }
        dk__fork_release();
        dk__yield();
    }
}
static void dk__fork_done(void) {
    dk__mutex_unlock(&dk__threads_lock);
    dk__fork_release();
}
/* In the child only the forking thread exists: no other thread's record
   holds anything back (a call epoch or a quiescent point it will never
   pass again), nor another thread's late call (call epochs: the shared
   count keeps only the forking thread's own, if it is inside one). */
static void dk__fork_child(void) {
    dk__reader *rec;
    for (rec = dk__readers; rec; rec = rec->next)
        if (rec != dk__rd.rec) {
            rec->ctr = NULL;
            dk__reader_release(rec);
        }
#ifdef DK_CALL_EPOCHS
    DK__STORE_REL(&dk__late_calls, (uint64_t)(dk__rd.exited && (dk__rd.ctr & DK__CTR_NEST) ? 1 : 0));
#endif
    dk__fork_done();
}
static pthread_once_t dk__fork_once = PTHREAD_ONCE_INIT;
static void dk__fork_init(void) { (void)pthread_atfork(dk__fork_prepare, dk__fork_done, dk__fork_child); }
#endif

/* Lists r (the caller holds dk__global_lock). */
DK__PRIVATE void dk__registry_list(dk_registry *r) {
#if !defined(_WIN32)
    pthread_once(&dk__fork_once, dk__fork_init);
#endif
    r->next_registry = dk__registries;
    dk__registries = r;
}
/* Unlists r, if listed (the caller holds dk__global_lock). */
DK__PRIVATE void dk__registry_unlist(dk_registry *r) {
    dk_registry **p;
    for (p = &dk__registries; *p && *p != r; p = &(*p)->next_registry) {}
    if (*p) *p = r->next_registry;
}

DK__PRIVATE dk_status dk__registry_init(dk_registry *r) {
    dk__hooks h;
    int b;
    dk__mutex_init(&r->lock);
    for (b = 0; b < DK_NUM_SLOTS; b++) {
        r->missing[b].kind = DK_KERNEL_MISSING;
        r->missing[b].debug = "";
        r->missing[b].user_data = (void *)&r->boxed_fallbacks[b];   /* dk__deferred's */
    }
    r->ambiguous.kind = DK_KERNEL_AMBIGUOUS;
    r->ambiguous.debug = "ambiguous_autogradother";
    r->ambiguous.key = (dk_key)DK__KEY_AUTOGRAD_OTHER;
    r->tombstone.pub.name = "";
    dk__slot_info_init(r->slot_info);
    for (b = 0; b < DK_NUM_SLOTS; b++)
        if (r->slot_info[b].coupled) r->coupled[r->n_coupled++] = b;
    for (b = 0; b < DK_NUM_BACKENDS; b++) r->empty.rows[b].nonfallthrough = DK__R_FULL;
    {
        dk__op empty_op;
        memset(&empty_op, 0, sizeof empty_op);
        empty_op.pub.table = &r->empty;
        dk__table_fill(r, &empty_op, &r->empty, NULL, -1);
    }
    memset(&h, 0, sizeof h);
    h.logger = r->desc.logger;
    h.tensor_keyset = r->desc.tensor_keyset;
    h.tensor_keyset_user_data = r->desc.tensor_keyset_user_data;
    h.c10_messages = r->desc.c10_messages;
    if (dk__publish_hooks(r, &h) != DK_OK) return dk__fail(DK_ERR_NO_MEMORY, "registry_create: out of memory");
    if (!r->desc.no_default_fallthroughs) {
        dk_key k;
        DK_KS_FOREACH(k, DK_KS_DEFAULT_INCLUDED) {
            if (dk__fallback_locked(r, k, dk_fallthrough(), "registered by dk_registry_create (default fallthrough)",
                                    NULL, NULL) != DK_OK)
                return dk__fail(DK_ERR_NO_MEMORY, "registry_create: out of memory");
        }
    }
    return DK_OK;
}

DK__PRIVATE void dk__registry_free(dk_registry *r);

/* What alloc's pointers must be aligned to (dk_registry_desc.alloc): the
   registry's own struct; blocks take care of their header's alignment. */
typedef struct dk__registry_align { char c; dk_registry r; } dk__registry_align;
#define DK__REGISTRY_ALIGN offsetof(dk__registry_align, r)

/* A new registry, not listed yet (dk__registry_list). */
DK__PRIVATE dk_status dk__registry_new(const dk_registry_desc *desc, dk_registry **out, const char *signature) {
    dk_registry_desc d;
    dk_registry *r;
    dk_status s;
    if (!out) return dk__fail(DK_ERR_NULL, "registry_create: NULL out");
    if (desc) d = *desc;
    else memset(&d, 0, sizeof d);
    if (!d.alloc != !d.free)
        return dk__fail(DK_ERR_BAD_ARGUMENT, "registry_create: give both alloc and free, or neither");
    if ((s = dk__config_check(signature)) != DK_OK) return s;
    if (!d.alloc) { d.alloc = dk__default_alloc; d.free = dk__default_free; }
    r = (dk_registry *)d.alloc(sizeof *r, d.alloc_user_data);
    if (!r) return dk__fail(DK_ERR_NO_MEMORY, "registry_create: out of memory");
    if ((uintptr_t)r % DK__REGISTRY_ALIGN) {
        d.free(r, d.alloc_user_data);
        return dk__fail(DK_ERR_BAD_ARGUMENT, "registry_create: desc.alloc returned %p, aligned to fewer than the "
                        "%u bytes a registry needs (see dk_registry_desc.alloc)", (void *)r, (unsigned)DK__REGISTRY_ALIGN);
    }
    memset(r, 0, sizeof *r);
    r->desc = d;
    if ((s = dk__registry_init(r)) != DK_OK) {
        dk__registry_free(r);   /* not dk_registry_destroy: dk_registry_default holds the global lock */
        return dk__fail(s, "registry_create: out of memory");
    }
    dk__end_change(r);
    *out = r;
    return DK_OK;
}

DK_API dk_status dk__registry_create(const dk_registry_desc *desc, dk_registry **out, const char *signature) {
    dk_status s = dk__registry_new(desc, out, signature);
    if (s != DK_OK) return s;
    dk__mutex_lock(&dk__global_lock);
    dk__registry_list(*out);
    dk__mutex_unlock(&dk__global_lock);
    return DK_OK;
}

static dk_registry *dk__default_registry;
static dk_registry_desc dk__default_desc;

/* Frees everything r owns (r unlisted, or never listed). */
DK__PRIVATE void dk__registry_free(dk_registry *r) {
    dk_registration *g, *next;
    dk_library *lib, *nlib;
    dk__block_h *b, *nb;
    uint32_t i;
    int s, t;
    for (i = 0; i < r->n_ops; i++) {
        if (!r->ops[i]) continue;
        for (g = r->ops[i]->impls; g; g = next) { next = g->next; dk__free(r, g); }
        if (r->ops[i]->def && !dk__def_in_op(r->ops[i]->def)) dk__free(r, r->ops[i]->def);
        dk__retire_table(r, r->ops[i]->pub.table);
        dk__free(r, (void *)(uintptr_t)r->ops[i]->pub.name);
    }
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        if (!(g = r->fallbacks[s])) continue;
        for (t = s; t < DK_NUM_SLOTS; t++)
            if (r->fallbacks[t] == g) r->fallbacks[t] = NULL;
        dk__free(r, g);
    }
    for (g = r->listeners; g; g = next) { next = g->next; dk__free(r, g); }
    for (lib = r->libraries; lib; lib = nlib) {
        nlib = lib->next;
        if (lib->static_slot) *lib->static_slot = NULL;
        dk__free(r, lib);
    }
    dk__retire(r, r->hooks);
    dk__retire(r, r->index);
    for (b = r->retired; b; b = nb) { nb = b->next; dk__free_block(r, b); }
    for (i = 0; i < r->n_slabs; i++) dk__slab_release(r, r->slabs[i]);
    dk__free(r, r->slabs);
    dk__free(r, r->ops);
    dk__mutex_destroy(&r->lock);
    r->desc.free(r, r->desc.alloc_user_data);
}

/* Frees everything the registry owns, every handle included. The caller
   guarantees that no call, lookup or registration on it is running or will
   start. Destroying the default registry is allowed: the next
   dk_registry_default() creates a fresh one. After it, r and everything it
   gave (handles, operators) are freed memory: the C API does not recognise
   them, so a second destroy, a dk_deregister of one of its handles or a
   registration or lookup on r is undefined, not an error status. (Its
   memory went back to the allocator, desc.free's possibly, and a later
   registry may take the same addresses, so no check could tell a stale
   pointer from a live one without keeping that memory.) A caller whose
   registry pointer may outlive the registry (a garbage collector's
   finalizers) creates it with dk_abi_registry_create: the ABI's functions
   that take a registry keep its record and its address and refuse a
   destroyed one (DK_ERR_DESTROYED); its handles die with it there too. */
DK_API void dk_registry_destroy(dk_registry *r) {
    if (!r) return;
    dk__mutex_lock(&dk__global_lock);
    if (DK__LOAD_RLX(&dk__default_registry) == r) DK__STORE_REL(&dk__default_registry, (dk_registry *)NULL);
    dk__registry_unlist(r);
    dk__mutex_unlock(&dk__global_lock);
    dk__registry_free(r);
}

/* The default registry: created on first use, again after a destroy. */
DK_API dk_registry *dk_registry_default(void) {
    dk_registry *r = DK__LOAD_ACQ(&dk__default_registry);
    if (r) return r;
    dk__mutex_lock(&dk__global_lock);
    if (!(r = dk__default_registry)) {   /* the global lock is held: listed here */
        if (dk__registry_new(&dk__default_desc, &r, dk__own_signature) != DK_OK) r = NULL;
        else dk__registry_list(r);
    }
    DK__STORE_REL(&dk__default_registry, r);
    dk__mutex_unlock(&dk__global_lock);
    return r;
}

/* Sets the hooks of the default registry (logger, tensor_keyset, and the
   memory functions if it does not exist yet; see dk_registry_set_hooks),
   whether called before or after the first DK_LIBRARY block ran. */
DK_API dk_status dk_registry_default_configure(const dk_registry_desc *desc) {
    dk_registry *r;
    if (!desc) return dk__fail(DK_ERR_NULL, "registry_default_configure: NULL description");
    if (!desc->alloc != !desc->free)
        return dk__fail(DK_ERR_BAD_ARGUMENT, "registry_default_configure: give both alloc and free, or neither");
    dk__mutex_lock(&dk__global_lock);
    dk__default_desc = *desc;
    r = dk__default_registry;
    dk__mutex_unlock(&dk__global_lock);
    return r ? dk_registry_set_hooks(r, desc) : DK_OK;
}


/* >>impl-call ------------------------------------------------------------------- */

#ifndef DISPATCH_STATIC
DK_THREAD_LOCAL dk_tls_state dk__tls DK_TLS_MODEL = DK__TLS_DEFAULTS;
dk_trace_fn dk__trace_hook;
uintptr_t dk__fn_mask = ~(uintptr_t)0;
#endif

DK_API void dk_call_error_report(const dk_operator *op, dk_keyset ks, dk_status status, const char *message,
                                 void *user_data) {
    dk__thread_state *t = dk__thread_state_get();
    (void)op; (void)ks; (void)user_data;
    if (t) {
        size_t n;
        if (!message) message = "";
        n = strlen(message);
        memcpy(t->message, message, n < sizeof t->message ? n + 1 : sizeof t->message - 1);
        t->message[sizeof t->message - 1] = '\0';
        dk__mark_cut(t->message, sizeof t->message, n);
    }
    dk__call_status = status;
}

DK_API void dk_call_error_abort(const dk_operator *op, dk_keyset ks, dk_status status, const char *message,
                                void *user_data) {
    (void)ks; (void)status; (void)user_data;
    if (op) dk__log(op->registry, DK_LOG_CALL_ABORTED, message);
    else dk__log_to(NULL, DK_LOG_CALL_ABORTED, message);
    abort();
}

/* The status of the last FAILED call on this thread (with the default
   call-error hook), and resets it to DK_OK: it returns and clears. A call
   that succeeds does not touch it (that would cost every call a store), so
   it may hold a failure of an earlier call nobody read. To check one call,
   clear before and read after; a call whose result cannot say it failed
   (void, a Scalar) needs exactly this:

       (void)dk_last_call_status();         // clear what an earlier call left
       my_op_call(op, &t);                  // a void call
       if (dk_last_call_status() != DK_OK)  // this call failed
           fprintf(stderr, "%s\n", dk_last_error());
*/
DK_API dk_status dk_last_call_status(void) {
    dk_status s = dk__call_status;
    dk__call_status = DK_OK;
    return s;
}

DK__COLD_BEGIN
/* c10 reportError, from one snapshot (no lock, no allocation): the keys
   with a kernel, then the table. Cut to the caller's buffer. */
DK__PRIVATE void dk__c10_missing_message(const dk_operator *op, const dk_op_table *t, dk_key key, char *buf,
                                         size_t size) {
    const char *sep = "";
    size_t len = 0;
    int s;
    if (key == DK_Undefined) {
        dk__append(buf, size, &len, "There were no tensor arguments to this function (e.g., you passed an empty "
                                    "list of Tensors), but no fallback function is registered for schema ");
        dk__append(buf, size, &len, op->name);
        dk__append(buf, size, &len, ".  This usually means that this function requires a non-empty list of "
                                    "Tensors, or that you (the operator writer) forgot to register a fallback "
                                    "function.  Available functions are [");
    } else {
        dk__append(buf, size, &len, "Could not run '");
        dk__append(buf, size, &len, op->name);
        dk__append(buf, size, &len, "' with arguments from the '");
        dk__append(buf, size, &len, dk_key_name(key));
        dk__append(buf, size, &len, "' backend. This could be because the operator doesn't exist for this "
                                    "backend, or was omitted during the selective/custom build process (if using "
                                    "custom build). If you are a Facebook employee using PyTorch on mobile, "
                                    "please visit https://fburl.com/ptmfixes for possible resolutions. '");
        dk__append(buf, size, &len, op->name);
        dk__append(buf, size, &len, "' is only available for these backends: [");
    }
    for (s = 1; s < DK_NUM_SLOTS; s++) {
        if (dk__kernel_at(t, s)->kind == DK_KERNEL_MISSING) continue;
        dk__append(buf, size, &len, sep);
        dk__append(buf, size, &len, dk_key_name(dk__slot_keys[s]));
        sep = ", ";
    }
    dk__append(buf, size, &len, "].\n\n");
    dk__dump_slots(t, buf, size, &len);
    dk__mark_cut(buf, size, len);
}

/* The default message (PyTorch #46885): what was asked, what is there, and
   the likely cause, in a few lines. */
DK__PRIVATE void dk__missing_message(const dk_operator *op, const dk_op_table *t, dk_keyset args, dk_keyset ks,
                                     char *buf, size_t size) {
    dk_key key = dk_ks_highest_key(ks), seen[DK_NUM_SLOTS];
    int s, n = 0, i, has_fallback = 0;
    size_t len = 0;
    dk__append(buf, size, &len, "Could not run '");
    dk__append(buf, size, &len, op->name);
    if (key == DK_Undefined) {
        dk__append(buf, size, &len, "': the dispatch keyset is empty, and no kernel covers that.");
    } else {
        dk__append(buf, size, &len, "' for dispatch key ");
        dk__append(buf, size, &len, dk_key_name(key));
        dk__append(buf, size, &len, ": it has no kernel there.");
    }
    dk__append(buf, size, &len, "\n  argument keyset: ");
    dk__append_keyset(buf, size, &len, args);
    dk__append(buf, size, &len, "\n  dispatch keyset: ");
    dk__append_keyset(buf, size, &len, ks);
    dk__append(buf, size, &len, "\n  kernels: ");
    for (s = 0; s < DK_NUM_SLOTS; s++) {   /* the keys kernels were registered at, once each */
        const dk_kernel *k = dk__kernel_at(t, s);
        if (k->kind != DK_KERNEL_FUNCTION) continue;
        if (k->is_fallback) { has_fallback = 1; continue; }
        for (i = 0; i < n && seen[i] != k->key; i++) {}
        if (i < n) continue;
        seen[n++] = k->key;
        dk__append(buf, size, &len, n > 1 ? ", " : "");
        dk__append(buf, size, &len, dk_key_name(k->key));
    }
    if (!n) dk__append(buf, size, &len, "none");
    dk__append(buf, size, &len, has_fallback ? " (and backend fallbacks at other keys)" : "");
    dk__append(buf, size, &len, "\n  likely cause: ");
    if (key == DK_Undefined && n && !t->def)   /* a boxed call finds the tensors through the def's schema */
        dk__append(buf, size, &len, "the operator has kernels but no def, so a boxed call has no schema to find its "
                                    "tensor arguments in: define it (dk_def), or check the name the kernels were "
                                    "registered under for a typo");
    else if (key == DK_Undefined)
    {
        dk__append(buf, size, &len, "no tensor argument carried a dispatch key (an empty keyset); pass tensors, or "
                                    "register a fallback");
        if ((int)DK__ALIAS_MATH != 0) {
            dk__append(buf, size, &len, " or a ");
            dk__append(buf, size, &len, dk_key_name((dk_key)DK__ALIAS_MATH));
            dk__append(buf, size, &len, " kernel");
        }
    }
    else if (!n && !t->def)
        dk__append(buf, size, &len, "the operator has neither a def nor a kernel: was the library that registers "
                                    "it loaded?");
    else if (!n)
        dk__append(buf, size, &len, "the operator is defined but has no kernels yet");
    else if (dk_key_has_role(dk_key_functionality(key), DK_R_AUTOGRAD) && (int)DK__ALIAS_AUTOGRAD != 0) {
        const char *ag = dk_key_name((dk_key)DK__ALIAS_AUTOGRAD);  /* the list's own name for it */
        dk__append(buf, size, &len, "no autograd kernel: register one at this key or at ");
        dk__append(buf, size, &len, ag);
        dk__append(buf, size, &len, ", or (for operators without autograd support) a fallthrough fallback at ");
        dk__append(buf, size, &len, ag);
    } else if (dk_key_has_role(dk_key_functionality(key), DK_R_AUTOGRAD))
        dk__append(buf, size, &len, "no autograd kernel: register one at this key, or a fallthrough fallback at it");
    else {   /* names only the aliases this key list has */
        dk__append(buf, size, &len, "no kernel for this backend, and no ");
        if ((int)DK__ALIAS_MATH != 0) dk__append(buf, size, &len, dk_key_name((dk_key)DK__ALIAS_MATH));
        if ((int)DK__ALIAS_MATH != 0 && (int)DK__ALIAS_BACKEND != 0) dk__append(buf, size, &len, " / ");
        if ((int)DK__ALIAS_BACKEND != 0) dk__append(buf, size, &len, dk_key_name((dk_key)DK__ALIAS_BACKEND));
        dk__append(buf, size, &len, (int)DK__ALIAS_MATH != 0 || (int)DK__ALIAS_BACKEND != 0 ? " kernel or " : "");
        dk__append(buf, size, &len, "backend fallback covers it");
    }
    dk__mark_cut(buf, size, len);
}
DK__COLD_END

enum { DK__BOX_CAPACITY = 64 };   /* the values of the stack a typed call boxes its arguments on */
DK__PRIVATE DK__NOINLINE void dk__call_boxed_kernel(const dk_operator *op, const dk_op_table *t, dk_keyset ks,
                                                    const dk_kernel *k, const dk_op_adapters *a, void *args,
                                                    void *result, size_t result_size);
DK__PRIVATE DK__NOINLINE void dk__boxed_result_failed(const dk_operator *op, const dk_op_table *t, dk_keyset ks,
                                                      const dk_kernel *k, const dk_op_adapters *a, size_t left,
                                                      unsigned failures, void *result, size_t result_size);

DK__COLD_BEGIN
/* What the messages read of a live table (its entries, reasons and def
   pointer), copied into dst: field by field, relaxed, as a rewrite in place
   stores them (a deregistration out of memory, the registry's template
   on a fallthrough fallback change: see dk__op_update), never a plain
   copy of memory another thread may be writing. The rest is zero. */
DK__PRIVATE void dk__table_copy(dk_op_table *dst, const dk_op_table *src) {
    int s;
    memset((void *)dst, 0, sizeof *dst);
    for (s = 0; s < DK_NUM_SLOTS; s++) {
        const dk_table_entry *e = dk_op_table_entry(src, s);
        dk_table_entry *d = dk__entry(dst, s);
        d->kernel = DK__ENTRY_KERNEL(e);   /* the record first: with a new one, no older fn (dk__entry_set) */
        d->fn = DK__LOAD_RLX(&e->fn);
        dk__reason_set(dst, s, (dk_source_detail)dk__reason_at(src, s));
    }
    dst->def = dk__op_def(src);
}

/* c10 raises the executed-fallthrough and ambiguous-AutogradOther errors
   with TORCH_INTERNAL_ASSERT in KernelFunction.cpp (lines 14 and 23 from
   1.13.1 to 2.11), whose message begins with the assert's condition and
   site; with c10_messages, so does ours. The directory is the build's:
   libtorch 1.13.1 (Debian) prints "./aten/...", as run; the 2.x pip wheels
   are built in /pytorch. */
#if DK_C10_VERSION == 11301
#define DK__C10_ASSERT_AT(line) "0 INTERNAL ASSERT FAILED at \"./aten/src/ATen/core/boxing/KernelFunction.cpp\":" \
    #line ", please report a bug to PyTorch. "
#else
#define DK__C10_ASSERT_AT(line) "0 INTERNAL ASSERT FAILED at \"/pytorch/aten/src/ATen/core/boxing/KernelFunction.cpp\":" \
    #line ", please report a bug to PyTorch. "
#endif

/* A call that found no kernel to run at its slot (missing, fallthrough,
   ambiguous; k already resolved through dk__deferred by the caller, which
   is inside a read section with tab the snapshot the call read): reported,
   *result zero-filled. Out of line, so that its frame (the message buffer
   and a table copy, about 19 KB) is on the stack only while a call fails,
   never under a kernel a slow call runs. */
DK__PRIVATE DK__NOINLINE void dk__call_failed(const dk_operator *op, const dk_op_table *tab, dk_keyset args_ks,
                                              dk_keyset ks, const dk_kernel *k, void *result, size_t result_size) {
    dk_status status;
    char message[DK__MESSAGE_MAX];
    dk_op_table t;
    int c10_words, n;
    message[0] = '\0';
    if (result) memset(result, 0, result_size);
    c10_words = dk__hooks_of(op->registry)->c10_messages;
    if (k->kind == DK_KERNEL_FALLTHROUGH) {
        status = DK_ERR_FALLTHROUGH_CALLED;
        snprintf(message, sizeof message, "%sfallthrough_kernel was executed but it should have been short-circuited by the "
                 "dispatcher. This could occur if you registered a fallthrough kernel as a override for a specific "
                 "operator (as opposed to a backend fallback); this is NOT currently supported, and we do not intend "
                 "to add support for it in the near future.  If you do find yourself in need of this, let us know in "
                 "the bug tracker.", c10_words ? DK__C10_ASSERT_AT(14) : "");
    } else if (k->kind == DK_KERNEL_AMBIGUOUS) {
        status = DK_ERR_AMBIGUOUS_AUTOGRAD_OTHER;
        /* c10 goes on with an inference-mode hint and the operator's
           dumpState, which a failing call cannot read without the
           registry's lock (dk_op_state_to_string gives it) */
        n = snprintf(message, sizeof message, "%s%s has kernels registered to both CompositeImplicitAutograd and a backend "
                 "mapped to AutogradOther. This makes the backend kernel unreachable; the dispatcher will always "
                 "prefer the CompositeImplicitAutograd lowering (see Note [Ambiguity in AutogradOther kernel]). If "
                 "you want to override CompositeImplicitAutograd, please open an issue to request a dedicated "
                 "Autograd dispatch key for the backend.", c10_words ? DK__C10_ASSERT_AT(23) : "", op->name);
        if (n > 0) dk__mark_cut(message, sizeof message, (size_t)n);   /* an operator name of 16 KB */
    } else if (c10_words) {
        status = DK_ERR_NO_KERNEL;
        dk__table_copy(&t, tab);
        dk__table_with_fallbacks(op->registry, &t);
        dk__c10_missing_message(op, &t, dk_ks_highest_key(ks), message, sizeof message);
    } else {
        status = DK_ERR_NO_KERNEL;
        dk__table_copy(&t, tab);
        dk__table_with_fallbacks(op->registry, &t);
        dk__missing_message(op, &t, args_ks, ks, message, sizeof message);
    }
    dk__call_error(op, ks, status, message);
}
DK__COLD_END

/* What dk__call_slow_at keeps across the calls it makes, in memory: the
   stack is in it, and box, the kernel and unbox_result get the stack's
   address, so the compiler reloads these after each call instead of
   saving and restoring callee-saved registers around them (a store and a
   load each rather than a push, a move and a pop). */
typedef struct dk__boxing {
    const dk_kernel *k;
    const dk_operator *op;
    dk_keyset ks;
    const dk_op_adapters *a;
    void *result;
    const dk_op_table *t;
    unsigned failures;
    dk_stack st;
    dk_value storage[DK__BOX_CAPACITY];
} dk__boxing;

/* What dk__call_slow_at does not take the common way, with its arguments
   in its order (they stay in their registers) and then: f the record to run
   (k itself, or the fallback a missing record k stands for, NULL if none),
   a the def's adapters (NULL: none, no def, or not read because f is no
   boxed kernel), both as dk__call_slow_at read them. A boxed kernel or
   fallback without both adapters, or in a void call, goes to
   dk__call_boxed_kernel (boxed if it can be, else the argument pack);
   anything else is a call with no kernel to run (dk__call_failed). */
DK__PRIVATE DK__NOINLINE void dk__call_slow_other(const dk_kernel *k, dk_keyset ks, const dk_op_table *t,
                                                  const dk_operator *op, void *args, void *result,
                                                  size_t result_size, dk_keyset args_ks, const dk_kernel *f,
                                                  const dk_op_adapters *a) {
    if (f && f->boxed && f->kind == DK_KERNEL_FUNCTION) dk__call_boxed_kernel(op, t, ks, f, a, args, result, result_size);
    else dk__call_failed(op, t, args_ks, ks, f ? f : k, result, result_size);
}

DK_API void dk__call_slow_at(const dk_kernel *k, dk_keyset ks, const dk_op_table *t, const dk_operator *op,
                             void *args, void *result, size_t result_size, dk_keyset args_ks) {
    const dk_op_def_info *d;
    const dk_op_adapters *a = NULL;
    const dk_kernel *f = k;
    dk__boxing b;
    DK__HOLD();   /* the library sees this part of a typed call: reclaim refuses inside it */
    if (DK__LIKELY(k->kind == DK_KERNEL_MISSING)) {
        /* the slot's boxed fallback, read once; a boxed function by
           construction (dk__fallback_locked publishes no other) */
        f = dk__missing_fallback(k);
        if (DK__UNLIKELY(!f)) goto other;
    } else if (DK__UNLIKELY(!k->boxed || k->kind != DK_KERNEL_FUNCTION)) {
        goto other;
    }
    /* f is a boxed kernel or fallback: the def's adapters, read once (the
       one field set in place) */
    d = dk__op_def(t);
    if (DK__UNLIKELY(!d)) goto other;
    a = DK__LOAD_ACQ(&d->adapters);
    /* The common slow call, a boxed fallback or kernel of an operator with
       adapters, boxes here, in b */
    if (DK__UNLIKELY(!a || !result || !a->box || !a->unbox_result)) goto other;
    b.k = f;
    b.op = op;
    b.ks = ks;
    b.a = a;
    b.result = result;
    b.t = t;
    b.failures = dk__call_failures;
    dk_stack_init(&b.st, b.storage, DK__BOX_CAPACITY);
    a->box(args, &b.st);
    b.k->boxed(b.k, b.op, b.ks, &b.st);
    if (DK__LIKELY(b.st.size == (size_t)b.a->num_returns)) b.a->unbox_result(&b.st, b.result);
    else dk__boxed_result_failed(b.op, b.t, b.ks, b.k, b.a, b.st.size, b.failures, b.result, result_size);
    goto done;
other:
    dk__call_slow_other(k, ks, t, op, args, result, result_size, args_ks, f, a);
done:
    DK__UNHOLD();   /* one exit: one subtraction in place */
}

#undef DK__C10_ASSERT_AT

DK__COLD_BEGIN
/* From inside a kernel or fallback: fails the current call (c10's
   TORCH_CHECK) with a status (e.g. DK_ERR_KERNEL_FAILED) and a printf-style
   message, through the registry's call-error hook as a missing kernel is;
   with the default hook the caller finds them in dk_last_call_status() and
   dk_last_error(). Nothing unwinds: the kernel then returns (a zero result,
   say). op may be NULL for a kernel registered with dk_impl (found from
   the kernel); a backend fallback passes the op it received. */
DK_API void dk_call_fail(const dk_operator *op, const dk_kernel *kernel, dk_keyset ks, dk_status status,
                         const char *fmt, ...) {
    char message[DK__MESSAGE_MAX];
    va_list ap;
    message[0] = '\0';
    va_start(ap, fmt);
    if (fmt) {
        int n = vsnprintf(message, sizeof message, fmt, ap);
        if (n > 0) dk__mark_cut(message, sizeof message, (size_t)n);
    }
    va_end(ap);
    if (!op && kernel && !kernel->is_fallback && kernel->kind == DK_KERNEL_FUNCTION)
        op = &((const dk_registration *)(const void *)kernel)->op->pub;
    if (op) {
        dk__call_error(op, ks, status, message);
    } else {   /* no operator to find a hook through: the default hook's effect */
        dk__call_failures++;
        dk_call_error_report(NULL, ks, status, message, NULL);
    }
}
DK__COLD_END

/* ---- boxed calls --------------------------------------------------------------- */

/* What boxed calls read of a snapshot's def (NULL without one): its parsed
   schema (counts, dispatch arguments, text), its adapters (the one field
   dk_op_set_adapters may set in place: read once). */
DK__PRIVATE const dk_schema *dk__table_schema(const dk_op_table *t) {
    const dk_op_def_info *d = dk__op_def(t);
    return d ? d->parsed : NULL;
}
DK__PRIVATE const dk_op_adapters *dk__table_adapters(const dk_op_table *t) {
    const dk_op_def_info *d = dk__op_def(t);
    return d ? DK__LOAD_ACQ(&d->adapters) : NULL;
}

/* A boxed kernel that did not fail its call but left other than the
   schema's number of results fails it (a foreign kernel that raised, say). */
DK__PRIVATE void dk__results_miscounted(const dk_operator *op, dk_keyset ks, const dk_kernel *k, size_t left,
                                        int returns, const char *schema) {
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%s: the boxed kernel at %s (%s) left %lu values on the stack where the "
                     "schema has %d returns (a kernel that fails calls dk_call_fail)\n  schema: %s", op->name,
                     dk_key_name(dk_ks_highest_key(ks)), k->debug, (unsigned long)left, returns, schema ? schema : "");
    if (n > 0) dk__mark_cut(msg, sizeof msg, (size_t)n);
    dk__call_error(op, ks, DK_ERR_KERNEL_FAILED, msg);
}

/* A typed call that landed on a boxed kernel: box through the operator's
   adapters when it has them, else hand over the argument pack. Out of
   line: its stack of values stays out of dk__call_slow_at's frame. a:
   the adapters dk__call_slow_at read (NULL: none, or no def). */
DK__PRIVATE DK__NOINLINE void dk__call_boxed_kernel(const dk_operator *op, const dk_op_table *t, dk_keyset ks,
                                                    const dk_kernel *k, const dk_op_adapters *a, void *args,
                                                    void *result, size_t result_size) {
    dk_value storage[DK__BOX_CAPACITY];
    dk_stack st;
    dk_stack_init(&st, storage, DK__BOX_CAPACITY);
    if (a && a->box && a->unbox_result) {
        unsigned failures = dk__call_failures;
        a->box(args, &st);
        k->boxed(k, op, ks, &st);
        if (st.size != (size_t)a->num_returns && failures == dk__call_failures) {
            const dk_schema *sch = dk__table_schema(t);
            dk__results_miscounted(op, ks, k, st.size, a->num_returns, sch ? sch->text : NULL);
        }
        if (!result) return;
        if (st.size == (size_t)a->num_returns) a->unbox_result(&st, result);
        else memset(result, 0, result_size); /* the boxed path failed (and said so): no garbage */
        return;
    }
    st.unboxed_args = args;
    if (result) memset(result, 0, result_size);   /* a fallback that sets no result returns zero */
    k->boxed(k, op, ks, &st);
}

/* A typed call's boxed kernel left other than the number of results of
   the adapters a its call boxed with: the call fails (unless the kernel failed it already) and
   *result is zero-filled, no garbage (out of dk__call_slow_at's way). */
DK__PRIVATE DK__NOINLINE void dk__boxed_result_failed(const dk_operator *op, const dk_op_table *t, dk_keyset ks,
                                                      const dk_kernel *k, const dk_op_adapters *a, size_t left,
                                                      unsigned failures, void *result, size_t result_size) {
    if (failures == dk__call_failures) {
        const dk_schema *sch = dk__table_schema(t);
        dk__results_miscounted(op, ks, k, left, a->num_returns, sch ? sch->text : NULL);
    }
    memset(result, 0, result_size);
}

/* The keyset of one value of a boxed stack: a tensor's, or the union of a
   list's tensors' (none without a tensor_keyset hook). */
DK__PRIVATE dk_keyset dk__value_keyset(const dk__hooks *h, const dk_value *v) {
    uint64_t ks = 0;
    size_t i;
    if (!h->tensor_keyset) return dk_ks_raw(0);
    if (v->tag == DK_VALUE_TENSOR) ks = h->tensor_keyset(v->as.tensor, h->tensor_keyset_user_data).repr;
    for (i = 0; v->tag == DK_VALUE_LIST && i < v->as.list.n; i++)
        if (v->as.list.items[i].tag == DK_VALUE_TENSOR)
            ks |= h->tensor_keyset(v->as.list.items[i].as.tensor, h->tensor_keyset_user_data).repr;
    return dk_ks_raw(ks);
}

/* Inside a call bracket (the hooks record and t are read once, and held until it closes). */
DK__PRIVATE dk_keyset dk__stack_keyset(const dk_operator *op, const dk_op_table *t, const dk_stack *stack) {
    const dk__hooks *h = dk__hooks_of(op->registry);
    const dk_schema *sch = dk__table_schema(t);
    uint64_t bits = sch ? sch->dispatch_args : 0, ks = 0;
    if (!h->tensor_keyset) return dk_ks_raw(0);
    while (bits) {
        size_t j = (size_t)dk__lowest_bit(bits);
        const dk_value *v = j < stack->size ? &stack->values[stack->size - 1 - j] : NULL;
        bits &= bits - 1;
        if (v) ks |= dk__value_keyset(h, v).repr;
    }
    return dk_ks_raw(ks);
}

DK_API dk_keyset dk_stack_dispatch_keyset(const dk_operator *op, const dk_stack *stack) {
    dk_keyset ks;
    DK__HOLD();   /* a concurrent dk_registry_set_hooks retires the record read here */
    ks = dk__stack_keyset(op, dk__snapshot(op), stack);
    DK__UNHOLD();
    return ks;
}

/* ---- stack checks: the values against the def's schema ---------------------- */

#define DK__VALUE_TAG_NAME(tag, name) name,
static const char *const dk__value_tag_names[] = { DK_FORALL_VALUE_TAGS(DK__VALUE_TAG_NAME) };

DK__PRIVATE int dk__is_int_type(const dk_type *t) { return t->kind == DK_TYPE_Int || t->kind == DK_TYPE_SymInt; }

/* Does v fit type t (c10's fake type: ScalarType, Layout... are int)?
   Types without a value kind of their own (Device, Generator, classes,
   Dict, Tuple, Any...) take any value. */
DK__PRIVATE int dk__value_fits(const dk_type *t, const dk_value *v) {
    size_t i;
    switch (t->kind) {
    case DK_TYPE_Optional: return v->tag == DK_VALUE_NONE || dk__value_fits(t->contained[0], v);
    case DK_TYPE_Tensor: return v->tag == DK_VALUE_TENSOR;
    case DK_TYPE_Int: case DK_TYPE_SymInt: return v->tag == DK_VALUE_INT;
    case DK_TYPE_Float: return v->tag == DK_VALUE_DOUBLE;
    case DK_TYPE_Number:
        return v->tag == DK_VALUE_INT || v->tag == DK_VALUE_DOUBLE || v->tag == DK_VALUE_BOOL ||
               v->tag == DK_VALUE_COMPLEX;
    case DK_TYPE_Complex: return v->tag == DK_VALUE_COMPLEX;
    case DK_TYPE_Bool: return v->tag == DK_VALUE_BOOL;
    case DK_TYPE_String: return v->tag == DK_VALUE_STRING;
    case DK_TYPE_None: return v->tag == DK_VALUE_NONE;
    case DK_TYPE_List:
        if (v->tag == DK_VALUE_INT_LIST) return dk__is_int_type(t->contained[0]);
        if (v->tag == DK_VALUE_DOUBLE_LIST) return t->contained[0]->kind == DK_TYPE_Float;
        if (v->tag != DK_VALUE_LIST) return 0;
        for (i = 0; i < v->as.list.n; i++)
            if (!dk__value_fits(t->contained[0], &v->as.list.items[i])) return 0;
        return 1;
    default: return 1;
    }
}

DK__PRIVATE dk_status dk__bad_stack(char *msg, size_t size, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
DK__PRIVATE dk_status dk__bad_stack(char *msg, size_t size, const char *fmt, ...) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(msg, size, fmt, ap);
    va_end(ap);
    if (n > 0) dk__mark_cut(msg, size, (size_t)n);
    return DK_ERR_BAD_STACK;
}

/* The top num_arguments values against the schema; the message names the first mismatch. */
DK__PRIVATE dk_status dk__check_stack(const dk_operator *op, const dk_op_table *t, const dk_stack *stack,
                                      char *msg, size_t size) {
    const dk_schema *s = dk__table_schema(t);
    size_t n, base, j;
    if (!s || s->is_vararg) return DK_OK;
    n = (size_t)s->num_arguments;
    if (stack->size < n)
        return dk__bad_stack(msg, size, "%s: the schema has %lu arguments, the stack holds %lu values\n  schema: %s",
                             op->name, (unsigned long)n, (unsigned long)stack->size, s->text);
    base = stack->size - n;
    for (j = 0; j < n; j++) {
        const dk_arg *a = &s->arguments[j];
        const dk_value *v = &stack->values[base + j];
        if (!dk__value_fits(a->fake_type, v)) {
            /* the none value as schemas write it ("has None there", not "has a none there") */
            const char *kind = v->tag == DK_VALUE_NONE ? "None"
                               : (unsigned)v->tag < sizeof dk__value_tag_names / sizeof *dk__value_tag_names
                                   ? dk__value_tag_names[v->tag] : "value of unknown kind";
            return dk__bad_stack(msg, size, "%s: argument %lu '%s' is %s, the stack has %s%s there\n  schema: %s",
                                 op->name, (unsigned long)j, a->name, a->type_text,
                                 v->tag == DK_VALUE_NONE ? "" : strchr("aeiou", kind[0]) ? "an " : "a ", kind, s->text);
        }
    }
    return DK_OK;
}

/* The stack holds the first arguments of a call: push the others' defaults. */
DK__PRIVATE dk_status dk__fill_defaults(const dk_operator *op, const dk_op_table *t, dk_stack *stack, char *msg,
                                        size_t size) {
    /* the def's record once: its schema and its defaults belong together */
    const dk_op_def_info *d = dk__op_def(t);
    const dk_schema *s = d ? d->parsed : NULL;
    size_t n, j;
    if (!s || s->is_vararg) return DK_OK;
    n = (size_t)s->num_arguments;
    if (stack->size > n)
        return dk__bad_stack(msg, size, "%s: the schema has %lu arguments, the stack holds %lu values\n  schema: %s",
                             op->name, (unsigned long)n, (unsigned long)stack->size, s->text);
    for (j = stack->size; j < n; j++)
        if (!s->arguments[j].default_value)
            return dk__bad_stack(msg, size, "%s: argument %lu '%s' (%s) has no default and the stack does not "
                                 "give it\n  schema: %s", op->name, (unsigned long)j, s->arguments[j].name,
                                 s->arguments[j].type_text, s->text);
    if (n > stack->capacity)
        return dk__bad_stack(msg, size, "%s: the stack's capacity (%lu) is below the schema's %lu arguments",
                             op->name, (unsigned long)stack->capacity, (unsigned long)n);
    for (j = stack->size; j < n; j++) stack->values[stack->size++] = d->defaults[j];
    return DK_OK;
}

/* Pushes the defaults of the arguments after the stack's values (the stack
   holding the first arguments of a call of op): DK_ERR_BAD_STACK naming the
   first argument that has none, or when the stack is full or has more
   values than the schema has arguments. */
DK_API dk_status dk_stack_fill_defaults(const dk_operator *op, dk_stack *stack) {
    char msg[1024];
    dk_status s;
    if (!op || !stack) return dk__fail(DK_ERR_NULL, "stack_fill_defaults: NULL argument");
    DK__HOLD();
    s = dk__fill_defaults(op, dk__snapshot(op), stack, msg, sizeof msg);
    DK__UNHOLD();
    return s == DK_OK ? s : dk__fail(s, "%s", msg);
}

/* A default at any position (keyword arguments: push each argument given,
   and the default of each one left out, in the schema's order): pushes the
   default of the argument after the stack's values (the stack holding the
   first arguments of a call of op, as dk_stack_fill_defaults). DK_OK, or
   DK_ERR_BAD_STACK naming the argument when it has no default, the stack
   is full or holds all the arguments already; DK_ERR_NOT_FOUND without a
   def. */
DK_API dk_status dk_stack_push_default(const dk_operator *op, dk_stack *stack) {
    char msg[1024];
    const dk_op_def_info *d;
    const dk_schema *s;
    dk_status st = DK_OK;
    size_t j;
    if (!op || !stack) return dk__fail(DK_ERR_NULL, "stack_push_default: NULL argument");
    DK__HOLD();
    d = dk__op_def(dk__snapshot(op));
    s = d ? d->parsed : NULL;
    j = stack->size;
    if (!s) st = dk__fail(DK_ERR_NOT_FOUND, "stack_push_default: %s has no def (no schema, no defaults)", op->name);
    else if (j >= (size_t)s->num_arguments)
        st = dk__bad_stack(msg, sizeof msg,
                           "%s: the stack holds %lu values, the schema has %lu arguments\n  schema: %s", op->name, (unsigned long)j, (unsigned long)s->num_arguments, s->text);
    else if (!s->arguments[j].default_value)
        st = dk__bad_stack(msg, sizeof msg, "%s: argument %lu '%s' (%s) has no default\n  schema: %s", op->name,
                           (unsigned long)j, s->arguments[j].name, s->arguments[j].type_text, s->text);
    else if (!dk_stack_push(stack, d->defaults[j]))
        st = dk__bad_stack(msg, sizeof msg, "%s: the stack is full (capacity %lu) at argument %lu '%s'", op->name,
                           (unsigned long)stack->capacity, (unsigned long)j, s->arguments[j].name);
    DK__UNHOLD();
    return st == DK_ERR_BAD_STACK ? dk__fail(st, "%s", msg) : st;
}

/* Argument i's default as a value (what dk_stack_fill_defaults pushes; a
   string or list in it lives as long as the def): DK_OK; DK_ERR_NOT_FOUND
   (*out untouched, the message names the argument) without a def or when
   the argument has no default; DK_ERR_BAD_ARGUMENT when i is not an
   argument. dk_op_argument_index: the index of the argument named name, or
   -1 (no def, no such argument): together, a binding's keyword arguments. */
DK_API dk_status dk_op_default(const dk_operator *op, int i, dk_value *out) {
    const dk_op_def_info *d;
    const dk_schema *s;
    dk_status st = DK_OK;
    if (!op || !out) return dk__fail(DK_ERR_NULL, "op_default: NULL argument");
    DK__HOLD();
    d = dk__op_def(dk__snapshot(op));
    s = d ? d->parsed : NULL;
    if (!s) st = dk__fail(DK_ERR_NOT_FOUND, "op_default: %s has no def (no schema, no defaults)", op->name);
    else if (i < 0 || i >= s->num_arguments)
        st = dk__fail(DK_ERR_BAD_ARGUMENT, "op_default: %s has %d arguments, no argument %d\n  schema: %s", op->name,
                      s->num_arguments, i, s->text);
    else if (!s->arguments[i].default_value)
        st = dk__fail(DK_ERR_NOT_FOUND, "op_default: argument %d '%s' (%s) of %s has no default\n  schema: %s", i,
                      s->arguments[i].name, s->arguments[i].type_text, op->name, s->text);
    else *out = d->defaults[i];
    DK__UNHOLD();
    return st;
}

DK_API int dk_op_argument_index(const dk_operator *op, const char *name) {
    const dk_schema *s;
    int i, found = -1;
    if (!op || !name) return -1;
    DK__HOLD();
    s = dk__table_schema(dk__snapshot(op));
    for (i = 0; s && i < s->num_arguments && found < 0; i++)
        if (strcmp(s->arguments[i].name, name) == 0) found = i;
    DK__UNHOLD();
    return found;
}

/* Checks the top num_arguments values against the def's schema (count and
   kinds, as dk_call_boxed): DK_OK or DK_ERR_BAD_STACK with the argument in
   dk_last_error(). */
DK_API dk_status dk_stack_check(const dk_operator *op, const dk_stack *stack) {
    char msg[1024];
    dk_status s;
    if (!op || !stack) return dk__fail(DK_ERR_NULL, "stack_check: NULL argument");
    DK__HOLD();
    s = dk__check_stack(op, dk__snapshot(op), stack, msg, sizeof msg);
    DK__UNHOLD();
    return s == DK_OK ? s : dk__fail(s, "%s", msg);
}

DK__PRIVATE void dk__run_boxed(const dk_operator *op, const dk_op_table *t, dk_keyset args, dk_keyset ks,
                              const dk_kernel *k, dk_stack *stack) {
    const dk_op_adapters *a = dk__table_adapters(t);
    const dk_schema *sch = dk__table_schema(t);
    size_t nargs = sch ? (size_t)sch->num_arguments : 0;
    char msg[1024];
    if (k->kind == DK_KERNEL_FUNCTION && k->boxed) {
        unsigned failures = dk__call_failures;
        size_t base = stack->size - (nargs < stack->size ? nargs : stack->size);
        k->boxed(k, op, ks, stack);
        /* a kernel that did not fail its call left exactly the schema's returns */
        if (!sch || failures != dk__call_failures || stack->size == base + (size_t)sch->num_returns) return;
        dk__results_miscounted(op, ks, k, stack->size > base ? stack->size - base : 0, sch->num_returns, sch->text);
        stack->size = stack->size < base ? stack->size : base;
        return;
    }
    if (k->kind == DK_KERNEL_FUNCTION && a && a->call_unboxed) { a->call_unboxed(k, op, ks, stack); return; }
    if (k->kind == DK_KERNEL_FUNCTION) {
        int n = snprintf(msg, sizeof msg, "%s: the kernel at %s (%s) is unboxed and the operator has no boxing "
                         "adapters (define it through gen/'s <op>_def, or dk_def_with and dk_def_options.adapters)",
                         op->name, dk_key_name(dk_ks_highest_key(ks)), k->debug);
        if (n > 0) dk__mark_cut(msg, sizeof msg, (size_t)n);
        dk__call_error(op, ks, DK_ERR_NO_ADAPTER, msg);
    } else {   /* missing, fallthrough, ambiguous (k is resolved: dk__dispatch_boxed): reported */
        dk__call_failed(op, t, args, ks, k, NULL, 0);
    }
    /* a failed boxed call consumes its arguments and returns nothing */
    stack->size -= nargs < stack->size ? nargs : stack->size;
}

/* A boxed call that cannot start: NULL arguments, or a stack that does not fit. */
DK__PRIVATE int dk__boxed_refused(const dk_operator *op, const dk_op_table *t, dk_stack *stack, int fill) {
    char msg[1024];
    size_t given;
    dk_status s;
    if (!op || !stack) {
        dk_call_error_report(op, dk_ks_raw(0), DK_ERR_NULL, "boxed call: NULL operator or stack", NULL);
        return 1;
    }
    given = stack->size;
    s = fill ? dk__fill_defaults(op, t, stack, msg, sizeof msg) : DK_OK;
    if (s == DK_OK) s = dk__check_stack(op, t, stack, msg, sizeof msg);
    if (s == DK_OK) return 0;
    stack->size = given;   /* as it was given */
    dk__call_error(op, dk_ks_raw(0), s, msg);
    return 1;
}

/* The stack a trace hook may read (dk_trace_stack), set while a boxed call
   dispatches and restored after (calls nest). */
static DK_THREAD_LOCAL const dk_stack *dk__traced_stack;
/* Inside a trace hook: the stack of the boxed call or boxed redispatch being
   traced on this thread (NULL for a typed call, whose arguments the hook
   cannot see): dk_explain_stack(op, dk_trace_stack(), &e) then gives each
   dispatch argument's keyset. Boxed calls record their stack only while a
   hook is set, so a call racing dk_trace_set may show NULL here. */
DK_API const dk_stack *dk_trace_stack(void) { return dk__traced_stack; }

/* The kernel of a boxed call, from snapshot t: the one its stack was
   checked against and its adapters come from (dk_dispatch_kernel and
   dk_redispatch_kernel would read the operator's table again, and a def and
   kernel replaced in between would pair one state's adapters with the
   other's kernel). Reported to the trace hook as they report. */
DK__PRIVATE const dk_kernel *dk__dispatch_boxed(const dk_operator *op, const dk_op_table *t, dk_keyset args,
                                                dk_keyset *ks, const dk_stack *stack, int redispatch) {
    const dk_stack *saved = dk__traced_stack;
    const dk_kernel *k;
    int tracing = DK__TRACING();
    if (tracing) dk__traced_stack = stack;   /* the stack is only for a trace hook: no TLS writes without one */
    if (redispatch) {
        if (tracing) dk__trace(op, args, 1);
        k = dk__entry_kernel(dk__lookup_in(t, args));
    } else {
        k = dk__entry_kernel(dk__dispatch_in(t, args, ks));
        if (tracing) dk__trace(op, *ks, 0);
    }
    if (tracing) dk__traced_stack = saved;
    return k->kind == DK_KERNEL_MISSING ? dk__deferred(op, k) : k;
}

/* A boxed call while a trace hook is set: the timeline's event around the
   kernel (the dispatch already told the hook; Note [Timeline]). */
DK__PRIVATE void dk__run_boxed_traced(const dk_operator *op, const dk_op_table *t, dk_keyset args, dk_keyset ks,
                                      const dk_kernel *k, dk_stack *stack, int redispatch) {
    unsigned token = dk__trace_call(op, ks, k, redispatch | DK__TRACE_BOXED | DK__TRACE_TOLD);
    dk__run_boxed(op, t, args, ks, k, stack);
    dk__trace_return(token);
}

/* A boxed call by the general way: defaults filled, the stack checked with
   a message, the trace hook told (out of line: the fast way below falls
   back to it for everything but its common case). */
DK__PRIVATE DK__NOINLINE void dk__call_boxed_general(const dk_operator *op, const dk_op_table *t, dk_stack *stack) {
    const dk_kernel *k;
    dk_keyset args, ks;
    if (!dk__boxed_refused(op, t, stack, 1)) {
        args = dk__stack_keyset(op, t, stack);
        k = dk__dispatch_boxed(op, t, args, &ks, stack, 0);
        if (DK__UNLIKELY(DK__TRACING())) dk__run_boxed_traced(op, t, args, ks, k, stack, 0);
        else dk__run_boxed(op, t, args, ks, k, stack);
    }
}

/* The fast way's reading of a stack (Note [Boxed fast way]): does it fit
   the def's schema without a default to fill, and the keyset of its
   dispatch arguments (read in one read of the hooks), in registers. */
typedef struct dk__boxed_read { uint64_t args; int fits; } dk__boxed_read;

/* Do the n values at v fit schema s's arguments? The general check
   (dk__value_fits) for all but a Tensor argument holding a tensor. */
DK_INLINE int dk__boxed_fits(const dk_schema *s, const dk_value *v, size_t n) {
    const dk_arg *a = s->arguments;
    size_t j;
    for (j = 0; j < n; j++) {
        const dk_type *ty = a[j].fake_type;
        if (ty->kind == DK_TYPE_Tensor ? v[j].tag != DK_VALUE_TENSOR : !dk__value_fits(ty, &v[j])) return 0;
    }
    return 1;
}

/* A stack for any schema of fixed arity (out of line, as the one below: the
   one-tensor stack, most of aten's calls, is read in dk_call_boxed itself,
   with fewer values to keep across the hook's call): the count and kinds
   checked, then the dispatch arguments' keysets read where the schema
   says they are. */
DK__PRIVATE DK__NOINLINE dk__boxed_read dk__boxed_keys(const dk_operator *op, const dk_schema *s,
                                                       const dk_stack *stack) {
    const dk__hooks *h = dk__hooks_of(op->registry);
    uint64_t bits = s->dispatch_args;
    size_t n = stack->size;
    dk__boxed_read r;
    r.args = 0;
    r.fits = !s->is_vararg && (size_t)s->num_arguments == n && dk__boxed_fits(s, stack->values, n);
    if (r.fits && h->tensor_keyset)
        for (; bits; bits &= bits - 1) {
            const dk_value *v = &stack->values[n - 1 - (size_t)dk__lowest_bit(bits)];
            if (v->tag == DK_VALUE_TENSOR) r.args |= h->tensor_keyset(v->as.tensor, h->tensor_keyset_user_data).repr;
            else r.args |= dk__value_keyset(h, v).repr;   /* a list, or None for a Tensor? */
        }
    return r;
}

/* A stack for a schema of plain Tensors only (dk__def_part.boxed_tensors,
   its size checked by the caller): is every value a tensor? Their
   keysets' union, in the same loop. */
DK__PRIVATE DK__NOINLINE dk__boxed_read dk__boxed_tensor_keys(const dk__hooks *h, const dk_stack *stack) {
    dk_keyset (*keys)(const void *, void *) = h->tensor_keyset;
    const dk_value *v = stack->values, *end = v + stack->size;
    dk__boxed_read r;
    r.args = 0;
    r.fits = 0;
    do {   /* boxed_tensors counts one argument at least */
        if (v->tag != DK_VALUE_TENSOR) return r;
        if (keys) r.args |= keys(v->as.tensor, h->tensor_keyset_user_data).repr;
    } while (++v < end);
    r.fits = 1;
    return r;
}

/* The fast way's boxed kernel, and the count of the results it left (out
   of line: what it keeps across the kernel's call would cost the adapters'
   way registers too). */
DK__PRIVATE DK__NOINLINE void dk__boxed_fast_kernel(const dk_operator *op, const dk_schema *s, dk_keyset ks,
                                                    const dk_kernel *k, dk_stack *stack) {
    unsigned failures = dk__call_failures;
    k->boxed(k, op, ks, stack);
    /* a kernel that did not fail its call left exactly the schema's returns */
    if (failures != dk__call_failures || stack->size == (size_t)s->num_returns) return;
    dk__results_miscounted(op, ks, k, stack->size, s->num_returns, s->text);
    stack->size = 0;
}

/* Boxed calls. dk_call_boxed takes the stack's values as the call's
   arguments, the last one on top: trailing arguments left off get their
   schema defaults (as dk_stack_fill_defaults), then every value is checked
   against the def's schema (count and kinds, below); a mismatch is
   reported through the call-error hook as DK_ERR_BAD_STACK and nothing
   runs (the stack is left as it was given). What each schema type takes
   (no value is converted: a kernel reads the value as it was pushed):
       Tensor                 a tensor (dk_tensor)
       int, SymInt, and ScalarType, Layout, MemoryFormat (ints to c10)
                              an int (dk_int); not a bool, not a double
       float                  a double (dk_double); an int is refused
       Scalar                 an int, a double or a bool
       bool                   a bool (dk_bool)
       str                    a string (dk_string)
       T?                     none (dk_none), or what T takes
       int[], SymInt[]        an int list (dk_ints) or a list of ints
       float[]                a double list (dk_doubles) or a list of doubles
       other T[]              a list (dk_list) whose items each fit T:
                              Tensor[] tensors, Tensor?[] tensors or none
       anything else          any value, unchecked (Device, Generator,
                              Storage, Stream, classes, complex, Dict,
                              Tuple, Union, Any, QScheme...)
   The dispatch
   keyset comes from the schema's dispatch arguments through the registry's
   tensor_keyset hook, then TLS and masks as dk_dispatch_kernel. An unboxed kernel
   is reached through the def's adapters. dk_redispatch_boxed checks the top
   num_arguments values the same way and fills nothing. A NULL operator or
   stack: DK_ERR_NULL in dk_last_call_status(), nothing runs. An operator
   without a def is not checked. On return, a successful call has replaced
   the arguments by the results; a failed one has consumed its arguments. */
/* Note [Boxed fast way]: the common boxed call -- a def with a schema of
   fixed arity, exactly its arguments on the stack (no default to fill),
   values that fit, no trace hook -- makes the general way's checks
   without its detours: the snapshot, its def and the hooks are read
   once, the arguments checked in one loop, the dispatch arguments'
   keysets read where the schema says they are, and a boxed kernel or
   the adapters' call_unboxed run directly, with the result count
   checked as the general way checks it. A schema of plain Tensors only
   (at least one, every argument a dispatch argument: most of aten's) is
   counted at def (dk__def_part.boxed_tensors, 1 + its arguments): its
   stack is checked by comparing its size with that count and each
   value's tag, in the loop that takes the keysets, without reading the
   schema. The one-Tensor stack (aten's unary operators) is read in
   dk_call_boxed itself; the other stacks' reading (dk__boxed_tensor_keys,
   dk__boxed_keys) and a boxed kernel's call with its result count
   (dk__boxed_fast_kernel) are out of line, so that what dk_call_boxed
   keeps across the hook's and the kernel's calls is the operator, the
   stack, the snapshot and its def (docs/bench.md counts the registers). The
   slot's record is tested in the order of the work: no kernel (missing,
   fallthrough, ambiguous), a boxed kernel, the adapters; the slots
   without a kernel and an unboxed kernel without adapters are reported
   by dk__run_boxed, as the general way reports them. Anything else -- a
   bad stack (whose message the general way writes), defaults, a varargs
   schema, no def, a trace hook -- takes the general way, which does all
   over again from the same snapshot (nothing was changed: the checks
   only read).
   What call_unboxed may assume: the library calls it only here and from
   dk__run_boxed, each time after the stack was checked against the def's
   schema (here, or dk__check_stack for the general way and
   dk_redispatch_boxed), with the kernel and the adapters of that def
   from one snapshot; and adapters whose signature is in schema words
   (gen/'s) are accepted only for a schema of that signature and counts,
   never a varargs one (dk__check_adapters, at def and
   dk_op_set_adapters). So gen/'s call_unboxed reads the top
   num_arguments values in place, a Tensor argument as the tensor the
   check found, and writes its returns over them, without a second check.
   docs/bench.md says where the instructions of boxed_call go. */
DK_API void dk_call_boxed(const dk_operator *op, dk_stack *stack) {
    const dk_op_table *t;
    const dk_op_def_info *d;
    const dk_kernel *k;
    dk_keyset ks;
    uint64_t args;
    dk__boxed_read r;
    DK__THREAD_CHECK();
    DK__HOLD();
    t = op ? dk__snapshot(op) : NULL;
    d = op ? dk__op_def(t) : NULL;   /* an operator always has a snapshot (typed calls read it unchecked) */
    if (DK__LIKELY(d && stack && !DK__TRACING())) {
        const dk_value *v = stack->values;
        const dk__hooks *h = dk__hooks_of(op->registry);
        uint32_t tensors = ((const dk__def_part *)(const void *)d)->boxed_tensors;
        if (DK__LIKELY(tensors == 2 && stack->size == 1)) {   /* one plain Tensor: read here */
            r.fits = v->tag == DK_VALUE_TENSOR;
            r.args = r.fits && h->tensor_keyset ? h->tensor_keyset(v->as.tensor, h->tensor_keyset_user_data).repr : 0;
        } else if (tensors == stack->size + 1) {
            r = dk__boxed_tensor_keys(h, stack);
        } else {   /* a def's record always has its parsed schema */
            r = dk__boxed_keys(op, d->parsed, stack);
        }
    } else {
        r.fits = 0;
    }
    if (DK__LIKELY(r.fits)) {
        args = r.args;
        k = dk__entry_kernel(dk__dispatch_in(t, dk_ks_raw(args), &ks));
        if (DK__UNLIKELY(k->kind != DK_KERNEL_FUNCTION)) {   /* missing, fallthrough, ambiguous: reported */
            dk__run_boxed(op, t, dk_ks_raw(args), ks, k->kind == DK_KERNEL_MISSING ? dk__deferred(op, k) : k, stack);
        } else if (k->boxed) {
            dk__boxed_fast_kernel(op, d->parsed, ks, k, stack);
        } else {
            const dk_op_adapters *a = DK__LOAD_ACQ(&d->adapters);
            if (DK__LIKELY(a && a->call_unboxed)) a->call_unboxed(k, op, ks, stack);
            else dk__run_boxed(op, t, dk_ks_raw(args), ks, k, stack);   /* no adapters: reported */
        }
    } else {
        dk__call_boxed_general(op, t, stack);
    }
    DK__UNHOLD();
}

DK_API void dk_redispatch_boxed(const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    const dk_op_table *t;
    DK__THREAD_CHECK();
    DK__HOLD();
    t = op ? dk__snapshot(op) : NULL;
    if (!dk__boxed_refused(op, t, stack, 0)) {
        const dk_kernel *k = dk__dispatch_boxed(op, t, ks, NULL, stack, 1);
        if (DK__UNLIKELY(DK__TRACING())) dk__run_boxed_traced(op, t, ks, ks, k, stack, 1);
        else dk__run_boxed(op, t, ks, ks, k, stack);
    }
    DK__UNHOLD();
}

/* ---- autograd not implemented (c10's autogradNotImplementedFallback) -------- */

DK__PRIVATE int dk__ni_requires_grad(const dk_autograd_ni_desc *d, const dk_stack *stack, size_t base, size_t n) {
    size_t i;
    for (i = base; i < base + n; i++) {
        const dk_value *v = &stack->values[i];
        if (v->tag != DK_VALUE_TENSOR && v->tag != DK_VALUE_LIST) continue;
        if (!d->requires_grad || d->requires_grad(v, d->user_data)) return 1;
    }
    return 0;
}

DK__PRIVATE void dk__autograd_ni(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    const dk_autograd_ni_desc *d = (const dk_autograd_ni_desc *)k->user_data;
    const dk_op_table *t = dk__snapshot(op);
    const dk_schema *sch = dk__table_schema(t);
    size_t nargs = sch ? (size_t)sch->num_arguments : 0, base, i;
    int any;
    dk_guard g;
    if (stack->unboxed_args || !sch) {
        dk_call_fail(op, k, ks, stack->unboxed_args ? DK_ERR_NO_ADAPTER : DK_ERR_NOT_FOUND,
                     "%s: the autograd-not-implemented fallback is boxed and %s", op->name,
                     stack->unboxed_args ? "this typed call has no boxing adapters (define the operator with "
                                           "gen/'s <op>_def, or dk_def_with and dk_def_options.adapters)"
                                         : "the operator has no def (its returns are unknown)");
        return;
    }
    if (stack->size < nargs) nargs = stack->size;   /* the redispatch reports the short stack */
    base = stack->size - nargs;
    any = dk__ni_requires_grad(d, stack, base, nargs);
    g = dk_guard_below_inplace_view();
    dk_redispatch_boxed(op, dk_ks_and(ks, DK_KS_AFTER_INPLACE_VIEW), stack);
    dk_guard_pop(g);
    if (!any || !d->mark_result || stack->size != base + (size_t)sch->num_returns) return;   /* failed: reported */
    for (i = base; i < stack->size; i++)
        if (stack->values[i].tag == DK_VALUE_TENSOR || stack->values[i].tag == DK_VALUE_LIST)
            d->mark_result(&stack->values[i], op->name, d->user_data);
}

/* An operator without an autograd kernel, called on a tensor whose keyset
   has an autograd key (AutogradCPU...), finds that slot empty and fails.
   Two ready answers, registered once for every operator:
     dk_fallback(r, DK_Autograd, dk_fallthrough(), &h)
       autograd is skipped: the call runs the backend kernel and its
       results know nothing of autograd (a later backward silently misses
       this operator's contribution);
     dk_fallback(r, DK_Autograd, dk_autograd_not_implemented(&desc), &h)
       c10's autogradNotImplementedFallback: the call runs below autograd
       (and ADInplaceOrView) and, when an input requires grad, each result
       is handed to desc->mark_result, so that the program's autograd can
       give it a node whose backward fails with "derivative for <op> is not
       implemented". dispatch.h has no tensors: marking is the program's.
   The fallback is boxed: it needs the operator's def (to know its returns)
   and, for typed calls, the def's boxing adapters (gen/'s <op>_def gives
   them); a typed call of a DK_DECLARE_OP operator without adapters fails
   with DK_ERR_NO_ADAPTER. desc must outlive the registration. */
DK_API dk_kernel_desc dk_autograd_not_implemented(const dk_autograd_ni_desc *desc) {
    /* NULL desc: no boxed function, so registering it fails with DK_ERR_BAD_KERNEL */
    dk_kernel_desc d = dk_boxed(desc ? dk__autograd_ni : NULL, (void *)(uintptr_t)desc);
    return dk_kernel_named(d, "autograd_not_implemented", NULL);
}

/* Sets the operator's boxing adapters (gen/ does this when it registers).
   A different signature than the one already set is an error. Adapters
   whose signature is in schema words (gen/'s) are accepted only for a def
   of that signature and counts, never a varargs one (DK_ERR_WRONG_SIGNATURE,
   nothing changes; a def with them is checked the same way): their
   call_unboxed reads a boxed call's arguments in place, trusting the
   stack's check against the schema (Note [Boxed fast way]). */
/* Adapters belong to the operator's def: set here, they go when it goes. */
DK_API dk_status dk_op_set_adapters(dk_operator *op, const dk_op_adapters *adapters) {
    dk_registry *r;
    dk__op *o = (dk__op *)op;
    dk_status s = DK_OK;
    if (!op || !adapters || !adapters->signature) return dk__fail(DK_ERR_NULL, "set_adapters: NULL argument");
    r = op->registry;
    if (dk__owns(r)) return dk__reentrant("set_adapters");
    dk__lock(r);
    if (!o->def)
        s = dk__fail(DK_ERR_NOT_FOUND, "set_adapters: %s has no def; adapters belong to the def", op->name);
    else if (DK__DEF(o->def)->info.adapters && DK__DEF(o->def)->info.adapters != adapters &&
             strcmp(DK__DEF(o->def)->info.adapters->signature, adapters->signature) != 0)
        s = dk__fail(DK_ERR_WRONG_SIGNATURE,
                     "\nMismatch in kernel C signatures\n  operator: %s\n  kernel 1: %s\n  kernel 2: %s",
                     DK__DEF_SCHEMA(o->def), DK__DEF(o->def)->info.adapters->signature, adapters->signature);
    else if ((s = dk__check_adapters("set_adapters", DK__DEF(o->def)->info.parsed, adapters)) == DK_OK)
        /* in the def's record, which every snapshot of it points at: no new table */
        DK__STORE_REL(&DK__DEF(o->def)->info.adapters, adapters);
    dk__end_change(r);
    dk__unlock(r);
    return s;
}

/* dk_op_check_signature's reads and messages, inside its bracket: the
   snapshot and the def's record it reads may be retired meanwhile. */
DK__PRIVATE dk_status dk__check_signature_held(const dk_operator *op, const char *signature) {
    const dk_op_table *t;
    const dk_op_adapters *a;
    const char *schema;
    const dk_schema *parsed;
    t = dk__snapshot(op);
    a = dk__table_adapters(t);
    parsed = dk__table_schema(t);
    schema = parsed ? parsed->text : NULL;
    if (a && strcmp(a->signature, signature) == 0) return DK_OK;
    if (!schema)
        return dk__fail(DK_ERR_NO_ADAPTER,
                        "%s has no def, so no C signature to check %s against: define it (gen/'s <op>_def(reg, "
                        "&h), or <op>_library_def(lib) in a DK_LIBRARY block) before binding it",
                        op->name, signature);
    if (!a)
        return dk__fail(DK_ERR_NO_ADAPTER,
                        "%s was defined without boxing adapters (dk_def / dk_library_def of the schema alone), "
                        "so it has no C signature to check %s against%s, and its typed calls cannot be boxed: "
                        "define it with gen/'s <op>_def(reg, &h), or <op>_library_def(lib) in a DK_LIBRARY "
                        "block (or give it the adapters: dk_op_set_adapters(op, &<op>_adapters))\n  schema: %s",
                        op->name, signature,
                        parsed && dk__sig_is(parsed, signature) == 1 ? " (the schema's own is the same)"
                            : "",
                        schema);
    return dk__fail(DK_ERR_WRONG_SIGNATURE,
                    "\nTried to access or call an operator with a wrong signature.\n  operator: %s\n  correct "
                    "signature:  %s\n  accessed/called as: %s\nThis likely happened in a call to a generated "
                    "<op>_bind(). Please make sure that the function signature matches the signature in the operator "
                    "registration call.", schema, a->signature, signature);
}
/* c10's typed<>() check: DK_OK when the operator's adapters were
   registered for this C signature; DK_ERR_WRONG_SIGNATURE (both signatures
   in the message) when they were registered for another; DK_ERR_NO_ADAPTER
   when the operator has no def, or was defined without adapters (dk_def /
   dk_library_def of the schema alone: define it with gen/'s <op>_def or
   <op>_library_def, the message says). */
DK_API dk_status dk_op_check_signature(const dk_operator *op, const char *signature) {
    dk_status s;
    if (!op || !signature) return dk__fail(DK_ERR_NULL, "check_signature: NULL argument");
    DK__HOLD();
    s = dk__check_signature_held(op, signature);
    DK__UNHOLD();
    return s;
}

/* ---- explain ------------------------------------------------------------------ */

static const dk_source dk__reason_sources[] = {
#define DK__REASON_SOURCE(name, text, source) source,
    DK_FORALL_SOURCE_DETAILS(DK__REASON_SOURCE)
#undef DK__REASON_SOURCE
};

DK__PRIVATE dk_source dk__source_of(const dk_kernel *k, dk_source_detail why) {
    if (k->kind == DK_KERNEL_FALLTHROUGH) return DK_SOURCE_FALLTHROUGH;
    return dk__reason_sources[why];
}

/* Copies src into dst[size], cut to fit; src NULL gives "". */
DK__PRIVATE void dk__copy_text(char *dst, size_t size, const char *src) {
    size_t n = src ? strlen(src) : 0;
    if (n >= size) n = size - 1;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

/* Explains from table t, read inside the caller's call bracket: the
   keyset, the kernel and the reason all describe one state, and what the
   text needs is copied out of the registry before the bracket closes. */
DK__COLD_BEGIN
DK__PRIVATE void dk__explain_table(const dk_operator *op, const dk_op_table *t, dk_keyset args, dk_explanation *out) {
    const dk_kernel *k;
    dk_source_detail why;
    memset(out, 0, sizeof *out);
    out->args = args;
    out->after_tls = dk_ks_raw(dk__call_keyset_after_tls(args.repr));
    out->final = dk_ks_raw(dk__call_keyset_masked(t, args.repr, out->after_tls.repr,
                                                  dk__row(dk__backend_index(out->after_tls.repr))));
    out->slot = dk_ks_slot(out->final);
    out->key = dk__slot_keys[out->slot];
    k = DK__ENTRY_KERNEL(dk_op_table_entry(t, out->slot));
    out->kernel = dk__deferred(op, k);
    /* relaxed: a table rewritten in place (out of memory) changes its reasons so */
    why = out->kernel != k ? DK_SOURCE_DETAIL_FALLBACK : (dk_source_detail)dk__reason_at(t, out->slot);
    out->reason = dk__reason_texts[why];
    out->source = dk__source_of(out->kernel, why);
    dk__copy_text(out->op_name, sizeof out->op_name, op->name);
    dk__copy_text(out->kernel_debug, sizeof out->kernel_debug, out->kernel->debug);
}

/* The arguments' keysets, positions and names (from t's schema), inside the bracket. */
DK__PRIVATE void dk__explain_set_args(const dk_op_table *t, const dk_keyset *ks, const int *index, int n,
                                      dk_explanation *out) {
    const dk_schema *sch = dk__table_schema(t);
    int i;
    for (i = 0; i < n; i++) {
        out->arg[i].index = index ? index[i] : i;
        dk__copy_text(out->arg[i].name, sizeof out->arg[i].name,
                      sch && out->arg[i].index < sch->num_arguments ? sch->arguments[out->arg[i].index].name : NULL);
        out->arg[i].ks = ks[i];
    }
    out->num_args = n;
}

/* Explain: what a call with these argument keysets would do, on this thread.
   DK_EXPLAIN_MAX_ARGS (default 16, set in >>public: it sizes dk_explanation,
   so it is part of the configuration signature). */
DK_API dk_status dk_explain(const dk_operator *op, dk_keyset args, dk_explanation *out) {
    if (!op || !out) return dk__fail(DK_ERR_NULL, "explain: NULL argument");
    DK__HOLD();
    dk__explain_table(op, dk__snapshot(op), args, out);
    DK__UNHOLD();
    return DK_OK;
}

/* As dk_explain, from the keysets of a typed call's arguments, in order
   (DK_KS_EMPTY for an argument that is not a tensor): at most
   DK_EXPLAIN_MAX_ARGS (DK_ERR_BAD_ARGUMENT). */
DK_API dk_status dk_explain_args(const dk_operator *op, const dk_keyset *arg_keysets, int n, dk_explanation *out) {
    const dk_op_table *t;
    uint64_t all = 0;
    int i;
    if (!op || !out || (n > 0 && !arg_keysets)) return dk__fail(DK_ERR_NULL, "explain_args: NULL argument");
    if (n < 0 || n > DK_EXPLAIN_MAX_ARGS)
        return dk__fail(DK_ERR_BAD_ARGUMENT, "explain_args: %d arguments; between 0 and %d (DK_EXPLAIN_MAX_ARGS)", n,
                        DK_EXPLAIN_MAX_ARGS);
    for (i = 0; i < n; i++) all |= arg_keysets[i].repr;
    DK__HOLD();   /* one table for the kernel and the names, read before the bracket closes */
    t = dk__snapshot(op);
    dk__explain_table(op, t, dk_ks_raw(all), out);
    dk__explain_set_args(t, arg_keysets, NULL, n, out);
    DK__UNHOLD();
    return DK_OK;
}

DK__COLD_END

/* dk__check_stack, which the boxed calls share, keeps its -O2 clone when no
   cold code calls it */
/* Inside the bracket dk_explain_stack opens: one table, one hooks record. */
DK__PRIVATE dk_status dk__explain_stack_in(const dk_operator *op, const dk_op_table *t, const dk_stack *stack,
                                          dk_explanation *out) {
    dk_keyset ks[DK_EXPLAIN_MAX_ARGS] = { { 0 } };
    int index[DK_EXPLAIN_MAX_ARGS], n = 0, j, nargs;
    const dk__hooks *h = dk__hooks_of(op->registry);   /* once: every argument through the same hook */
    const dk_schema *sch = dk__table_schema(t);    /* once, and its own counts */
    uint64_t all = 0;
    char msg[1024];
    dk_status s;
    if (!sch)
        return dk__fail(DK_ERR_NOT_FOUND, "explain_stack: %s has no def: its dispatch arguments are unknown", op->name);
    if ((s = dk__check_stack(op, t, stack, msg, sizeof msg)) != DK_OK) return dk__fail(s, "%s", msg);
    nargs = sch->num_arguments;
    if ((size_t)nargs > stack->size)   /* a vararg schema is not checked */
        return dk__fail(DK_ERR_BAD_STACK, "explain_stack: %s has %d arguments, the stack holds %lu values", op->name,
                        nargs, (unsigned long)stack->size);
    for (j = 0; j < nargs; j++) {   /* argument j is the (nargs - 1 - j)-th value from the top */
        if (nargs - 1 - j >= 64 || !((sch->dispatch_args >> (nargs - 1 - j)) & 1)) continue;
        if (n == DK_EXPLAIN_MAX_ARGS)
            return dk__fail(DK_ERR_BAD_ARGUMENT, "explain_stack: %s has more than %d dispatch arguments "
                            "(DK_EXPLAIN_MAX_ARGS)", op->name, DK_EXPLAIN_MAX_ARGS);
        index[n] = j;
        ks[n] = dk__value_keyset(h, &stack->values[stack->size - (size_t)nargs + (size_t)j]);
        all |= ks[n++].repr;
    }
    dk__explain_table(op, t, dk_ks_raw(all), out);
    dk__explain_set_args(t, ks, index, n, out);
    return DK_OK;
}

/* As dk_explain, for a boxed call of this stack (its top num_arguments
   values): the schema's dispatch arguments through the registry's
   tensor_keyset hook, as dk_call_boxed. The operator needs a def
   (DK_ERR_NOT_FOUND) and the stack must fit it (DK_ERR_BAD_STACK). */
DK_API dk_status dk_explain_stack(const dk_operator *op, const dk_stack *stack, dk_explanation *out) {
    dk_status s;
    if (!op || !stack || !out) return dk__fail(DK_ERR_NULL, "explain_stack: NULL argument");
    DK__HOLD();   /* everything read of the operator and the hooks, read inside */
    s = dk__explain_stack_in(op, dk__snapshot(op), stack, out);
    DK__UNHOLD();
    return s;
}

DK__COLD_BEGIN
/* "    self (argument 0): DispatchKeySet(CPU)", one line per argument */
DK__PRIVATE void dk__append_arg_keysets(char *buf, size_t size, size_t *len, const dk_explanation *e) {
    char index[32];
    int i;
    for (i = 0; i < e->num_args && i < DK_EXPLAIN_MAX_ARGS; i++) {
        dk__append(buf, size, len, "\n    ");
        dk__append(buf, size, len, e->arg[i].name[0] ? e->arg[i].name : "arg");
        snprintf(index, sizeof index, " (argument %d): ", e->arg[i].index);
        dk__append(buf, size, len, index);
        dk__append_keyset(buf, size, len, e->arg[i].ks);
    }
}

/* An explanation owns what it prints: the operator's name, the kernel's
   debug text and the arguments' names are copied into it (cut to fit), so
   dk_explain_to_string reads nothing of the registry, however it changed
   since (a deregistration, a reclaim, the operator removed). */
/* Text of an explanation; snprintf-like. It reads the explanation alone
   (its own copies), never the registry: op, the operator explained, is not
   read (it may have been removed since); NULL op or e gives "". */
DK_API int dk_explain_to_string(const dk_operator *op, const dk_explanation *e, char *buf, size_t size) {
    static const char *const sources[] = { "kernel", "default backend kernel", "math kernel", "autograd kernel",
                                           "batched kernel", "backend fallback", "fallthrough", "ambiguous",
                                           "missing" };
    char slot[64];
    size_t len = 0;
    int n;
    dk__out_init(buf, &size);
    if (!op || !e) return 0;
    dk__append(buf, size, &len, e->op_name);   /* the explanation's copies only (op may be gone) */
    dk__append(buf, size, &len, "\n  arguments:  ");
    dk__append_keyset(buf, size, &len, e->args);
    dk__append_arg_keysets(buf, size, &len, e);
    dk__append(buf, size, &len, "\n  after TLS:  ");
    dk__append_keyset(buf, size, &len, e->after_tls);
    dk__append(buf, size, &len, "\n  dispatch:   ");
    dk__append_keyset(buf, size, &len, e->final);
    n = snprintf(slot, sizeof slot, "\n  slot %d (", e->slot);
    (void)n;
    dk__append(buf, size, &len, slot);
    dk__append(buf, size, &len, dk_key_name(e->key));
    dk__append(buf, size, &len, ") -> ");
    dk__append(buf, size, &len, sources[e->source]);
    dk__append(buf, size, &len, ": ");
    dk__append(buf, size, &len, e->kernel_debug[0] ? e->kernel_debug : "(no kernel)");
    dk__append(buf, size, &len, " [");
    dk__append(buf, size, &len, e->reason);
    dk__append(buf, size, &len, "]\n");
    return (int)len;
}

DK__COLD_END

/* >>impl-abi ------------------------------------------------------------------

   The C ABI for foreign callers (see >>tls): each function is the inline or
   macro version it names, with plain C types, but for the registries'
   records below (Note [Destroyed registries]). */
DK__COOL_BEGIN
/* Note [Destroyed registries]. A foreign caller's handle may outlive its
   registry (a second destroy, a registration or lookup after it: a
   garbage collector's order), so the ABI keeps a record of every registry
   it created, never freed (about 100 bytes each), listed newest first:
   live until dk_abi_registry_destroy, then dead. What takes a registry
   (destroy, registration, lookup) looks its pointer up there first and
   refuses a dead one with DK_ERR_DESTROYED; it never reads the dead
   registry itself. So that no later registry takes the same address (a
   stale handle would then name it), the registry's own block is not
   given back but shrunk to one byte (realloc, which glibc does in place):
   its address stays taken. An allocator that moves a shrunk block gives
   the address back (ASan's quarantine keeps it out of use for long,
   ThreadSanitizer's reuses it at once); a registry made there later is
   found first (the newest record), and the stale handle then names it:
   still never a read of freed memory. Calls
   (dk_abi_call_boxed: an operator, not a registry) are not checked: they
   pay nothing. Registries of dk_registry_create are not in the list and
   are taken as live. */
typedef struct dk__abi_reg {
    uint64_t (*keyset_of)(const void *, void *);
    void *user_data;
    dk_registry *reg;             /* set once, before the record is listed */
    void *held;                   /* the shrunk block that keeps reg's address taken, once dead */
    int live;                     /* 1 until destroyed (release / acquire) */
    struct dk__abi_reg *next;     /* older records; set before listing */
} dk__abi_reg;
static dk__abi_reg *dk__abi_regs;  /* newest first; written under dk__global_lock, read lock-free */
DK__PRIVATE dk_keyset dk__abi_tensor_keyset(const void *tensor, void *user_data) {
    const dk__abi_reg *h = (const dk__abi_reg *)user_data;
    uint64_t ks;
    if (h->keyset_of) return dk_ks_raw(h->keyset_of(tensor, h->user_data));
    if (!tensor) return dk_ks_raw(0);
    memcpy(&ks, tensor, sizeof ks);
    return dk_ks_raw(ks);
}
static void *dk__abi_alloc(size_t n, void *ud) { (void)ud; return malloc(n); }
/* the registry's own block (the last thing a destroy frees) is kept, shrunk */
static void dk__abi_free(void *p, void *ud) {
    dk__abi_reg *h = (dk__abi_reg *)ud;
    if (!p || p != (void *)h->reg) { free(p); return; }
    h->held = realloc(p, 1);
    if (!h->held) h->held = h->reg;   /* not shrunk: kept whole (the same pointer as p) */
}
/* The record of r (the newest one with its address), NULL when the ABI did not create r. */
DK__PRIVATE dk__abi_reg *dk__abi_reg_of(const dk_registry *r) {
    dk__abi_reg *h;
    for (h = DK__LOAD_ACQ(&dk__abi_regs); h; h = h->next)
        if (h->reg == r) return h;
    return NULL;
}
/* DK_OK for a registry the ABI may use (live, or not the ABI's) */
DK__PRIVATE dk_status dk__abi_usable(const dk_registry *r, const char *what) {
    const dk__abi_reg *h;
    if (!r) return dk__fail(DK_ERR_NULL, "%s: NULL registry", what);
    h = dk__abi_reg_of(r);
    if (h && !DK__LOAD_ACQ(&h->live))
        return dk__fail(DK_ERR_DESTROYED, "%s: the registry was destroyed (dk_abi_registry_destroy); its handle, "
                                          "and every handle it gave, are dead", what);
    return DK_OK;
}
DK_API dk_status dk_abi_registry_create_with(uint64_t (*keyset_of)(const void *tensor, void *user_data),
                                             void *user_data, dk_log_fn log, void *log_user_data,
                                             dk_registry **out) {
    dk_registry_desc desc;
    dk__abi_reg *h;
    dk_status s;
    if (!out) return dk__fail(DK_ERR_NULL, "dk_abi_registry_create: NULL out");
    if (!(h = (dk__abi_reg *)malloc(sizeof *h))) return dk__fail(DK_ERR_NO_MEMORY, "dk_abi_registry_create: out of memory");
    memset(h, 0, sizeof *h);
    h->keyset_of = keyset_of;
    h->user_data = user_data;
    memset(&desc, 0, sizeof desc);
    desc.alloc = dk__abi_alloc;
    desc.free = dk__abi_free;
    desc.alloc_user_data = h;
    desc.logger.func = log;
    desc.logger.user_data = log_user_data;
    desc.tensor_keyset = dk__abi_tensor_keyset;
    desc.tensor_keyset_user_data = h;
    if ((s = dk__registry_create(&desc, out, dk_config_signature())) != DK_OK) { free(h); return s; }
    h->reg = *out;
    h->live = 1;
    dk__mutex_lock(&dk__global_lock);
    h->next = dk__abi_regs;
    DK__STORE_REL(&dk__abi_regs, h);
    dk__mutex_unlock(&dk__global_lock);
    return DK_OK;
}
/* Note [The C ABI]. The C ABI for foreign callers (Python's ctypes, cffi, other languages'
   FFIs): a real exported function for what C gets as macros or static
   inline functions, with plain C types only. Keysets are uint64_t (the
   repr), keys, backends, statuses and value tags int, guards are written
   to a caller's buffer of dk_abi_guard_size() bytes (two uint64_t), a
   kernel description is an opaque buffer of dk_abi_kernel_desc_size()
   bytes, stacks are made and freed here; every other struct a caller
   meets has its size here and accessors for what it needs of it. The
   inline versions stay what C uses. Registration checks nothing against
   a caller's lists: a foreign caller uses the library's own
   (dk_abi_num_backends, dk_key_name, dk_key_parse tell them). A boxed
   kernel receives its dk_keyset, a struct of one uint64_t, passed as a
   uint64_t is by every ABI dispatch.h runs on. The real functions of the
   C API (dk_key_parse, dk_deregister, dk_registry_reclaim,
   dk_thread_offline, dk_last_error, dk_status_message, dk_explain_to_string,
   dk_stack_push_default...) are part of the ABI as they are.

   Which library to load. A host whose threads may sit idle outside the
   library without saying so (Python: a thread blocked in queue.get(),
   input() or a sleep) loads the call-epochs build (make lib CONFIG=epochs:
   libdispatch-epochs.so): calls bracket themselves, and memory is freed
   and dk_registry_synchronize returns once the calls in flight end. In
   the default build (libdispatch.so, quiescent points) every thread that
   calls while registrations change takes part (from its first
   dk_registry_reclaim or dk_thread_online until it exits or goes
   offline), and dk_registry_synchronize waits for each to pass its next
   quiescent point: it blocks for as long as one idles without
   dk_thread_offline() -- forever behind a Python thread waiting in
   queue.get() -- and retired memory grows meanwhile (WHAT A PROGRAM
   DOES). The default build suits a host that declares its threads'
   quiescent points and offline spells.

   Lifetimes, once:
     callbacks   a kernel, fallback, keyset_of or logger function and its
                 user data live as long as they are registered (the
                 registry, for keyset_of and the logger) and, after
                 dk_deregister, until dk_registry_synchronize returns
                 (calls in flight may still run them). A ctypes callback
                 object must be kept referenced: one the garbage collector
                 freed crashes the next call.
     strings     what the ABI takes to register (schemas, operator names,
                 sites, kernel names) and the message of dk_abi_call_fail
                 are copied: a name given to dk_abi_kernel_named lives
                 until the registration that takes the description
                 returns, the others until the function returns. What
                 is pushed (strings, and the arrays of
                 dk_abi_stack_push_ints / _doubles / _list) is not: it lives
                 until the call that consumes it returns, or until popped;
                 a string or array popped is the pushed one. Texts the
                 ABI returns: dk_abi_op_name lives as long as the
                 operator; dk_last_error until this thread's next failure;
                 the dk_abi_*_name functions return static text; the
                 schema functions copy into the caller's buffer.
     tensors     the library keeps no tensor pointer: one pushed lives
                 until the call that consumes it returns (keyset_of and the
                 kernels read it during the call), or until popped.
     stacks      dk_abi_stack_create to dk_abi_stack_destroy, one thread at a
                 time; a stack a kernel receives is the call's, for the
                 kernel's duration.
     registries  dk_abi_registry_create to dk_abi_registry_destroy; every
                 handle it gave (registrations, operators) dies with it.
                 The ABI's functions that take a registry recognise a
                 destroyed one and refuse it with DK_ERR_DESTROYED (Note
                 [Destroyed registries]: the lookup costs registrations
                 and lookups a list walk, calls nothing); the C API's
                 functions do not. A destroy from inside a call or hook on
                 its thread (a finalizer the garbage collector ran in a
                 kernel) is refused with DK_ERR_IN_CALL; one racing calls
                 on other threads is the caller's to prevent. */
/* registries: tensor handles' keysets come from keyset_of(tensor,
   user_data) or, when keyset_of is NULL, from the handle's first 8 bytes
   (a uint64_t: a struct whose first member is the keyset). _with: the
   registry's logger (what has no caller to return to: an overridden
   kernel, say; NULL: dk_log_stderr). destroy: DK_OK, DK_ERR_DESTROYED
   (destroyed before), DK_ERR_IN_CALL, DK_ERR_REENTRANT (from its own
   logger or listener), DK_ERR_NULL; it takes a dk_registry_create
   registry too. op_lookup: as dk_op_lookup, DK_ERR_NOT_FOUND without
   such an operator. */
DK_API dk_status dk_abi_registry_create(uint64_t (*keyset_of)(const void *tensor, void *user_data), void *user_data,
                                        dk_registry **out) {
    return dk_abi_registry_create_with(keyset_of, user_data, NULL, NULL, out);
}
DK_API dk_status dk_abi_registry_destroy(dk_registry *r) {
    dk__abi_reg *h;
    dk_status s;
    if ((s = dk__abi_usable(r, "dk_abi_registry_destroy")) != DK_OK) return s;
    if (dk__in_call())
        return dk__fail(DK_ERR_IN_CALL, "dk_abi_registry_destroy: called from inside a call or hook on this thread "
                                        "(a kernel, a fallback, a finalizer run there): destroy outside every call");
    if (dk__owns(r)) return dk__reentrant("dk_abi_registry_destroy");
    dk__mutex_lock(&dk__global_lock);
    h = dk__abi_reg_of(r);
    if (h && !h->live) {   /* a racing second destroy won */
        dk__mutex_unlock(&dk__global_lock);
        return dk__abi_usable(r, "dk_abi_registry_destroy");
    }
    if (h) DK__STORE_REL(&h->live, 0);
    dk__mutex_unlock(&dk__global_lock);
    dk_registry_destroy(r);
    return DK_OK;
}
DK_API dk_status dk_abi_op_lookup(dk_registry *r, const char *name, const dk_operator **out) {
    dk_status s;
    if (!out) return dk__fail(DK_ERR_NULL, "dk_abi_op_lookup: NULL out");
    *out = NULL;
    if ((s = dk__abi_usable(r, "dk_abi_op_lookup")) != DK_OK) return s;
    if (!name) return dk__fail(DK_ERR_NULL, "dk_abi_op_lookup: NULL name");
    if (!(*out = dk_op_lookup(r, name))) return dk__fail(DK_ERR_NOT_FOUND, "dk_abi_op_lookup: no operator %s", name);
    return DK_OK;
}
static const char dk__abi_site[] = "<foreign caller>";
DK_API size_t dk_abi_kernel_desc_size(void) { return sizeof(dk_kernel_desc); }
DK_API void dk_abi_boxed(void *kernel, dk_boxed_fn fn, void *user_data) {
    dk_kernel_desc d = dk_boxed(fn, user_data);
    if (kernel) memcpy(kernel, &d, sizeof d);
}
DK_API void dk_abi_unboxed(void *kernel, dk_fn fn, void *user_data) {
    dk_kernel_desc d = dk_unboxed(fn, user_data);
    if (kernel) memcpy(kernel, &d, sizeof d);
}
DK_API void dk_abi_fallthrough(void *kernel) {
    dk_kernel_desc d = dk_fallthrough();
    if (kernel) memcpy(kernel, &d, sizeof d);
}
DK_API dk_status dk_abi_def_at(dk_registry *r, const char *schema, const char *site, int line,
                               dk_registration **out) {
    dk_status s = dk__abi_usable(r, "dk_abi_def");
    return s != DK_OK ? s : dk__def(r, schema, NULL, site ? site : dk__abi_site, line, out, dk_config_signature());
}
DK_API dk_status dk_abi_impl_at(dk_registry *r, const char *op_name, int key, const void *kernel, const char *site,
                                int line, dk_registration **out) {
    dk_kernel_desc d;
    dk_status s = dk__abi_usable(r, "dk_abi_impl");
    if (s != DK_OK) return s;
    if (!kernel) return dk__fail(DK_ERR_NULL, "dk_abi_impl: NULL kernel description");
    memcpy(&d, kernel, sizeof d);
    return dk__impl(r, op_name, (dk_key)key, d, site ? site : dk__abi_site, line, out, dk_config_signature());
}
DK_API dk_status dk_abi_fallback_at(dk_registry *r, int key, const void *kernel, const char *site, int line,
                                    dk_registration **out) {
    dk_kernel_desc d;
    dk_status s = dk__abi_usable(r, "dk_abi_fallback");
    if (s != DK_OK) return s;
    if (!kernel) return dk__fail(DK_ERR_NULL, "dk_abi_fallback: NULL kernel description");
    memcpy(&d, kernel, sizeof d);
    return dk__fallback(r, (dk_key)key, d, site ? site : dk__abi_site, line, out, dk_config_signature());
}
/* registration, as dk_def / dk_impl / dk_fallback; kernel: a buffer filled
   by dk_abi_boxed, dk_abi_unboxed or dk_abi_fallthrough, and optionally
   named after its function (dk_abi_kernel_named: dumps and messages show
   "registered at site:line (name)"). The _at versions take the site the
   caller names (its file, or its function's name, and a line); the others
   record "<foreign caller>:0". */
DK_API dk_status dk_abi_def(dk_registry *r, const char *schema, dk_registration **out) {
    return dk_abi_def_at(r, schema, NULL, 0, out);
}
DK_API dk_status dk_abi_impl(dk_registry *r, const char *op_name, int key, const void *kernel, dk_registration **out) {
    return dk_abi_impl_at(r, op_name, key, kernel, NULL, 0, out);
}
DK_API dk_status dk_abi_fallback(dk_registry *r, int key, const void *kernel, dk_registration **out) {
    return dk_abi_fallback_at(r, key, kernel, NULL, 0, out);
}
DK_API void dk_abi_kernel_named(void *kernel, const char *name) {
    dk_kernel_desc d;
    if (!kernel) return;
    memcpy(&d, kernel, sizeof d);
    d.name = name;
    memcpy(kernel, &d, sizeof d);
}
/* This call's status. Outside every call the thread's failed-call status
   is consumed (an earlier one nobody read is not this call's); inside a
   call (a kernel or fallback calling on) a failure stays set for the
   outer call, and so does one of an earlier call of the same kernel. */
DK__PRIVATE dk_status dk__abi_status_after(int nested, dk_status earlier) {
    dk_status s = dk_last_call_status();
    if (nested) dk__call_status = s != DK_OK ? s : earlier;
    return s;
}
/* boxed calls, as dk_call_boxed / dk_redispatch_boxed, returning this
   call's status (what dk_last_call_status() would give after it: DK_OK
   with a registry whose call-error hook is the program's own). Outside
   every call they consume the thread's failed-call status; inside one (a
   kernel or fallback calling on, in a call the library sees: a boxed
   call, a typed call's boxed part, any call under call epochs) they leave
   a failure set, so that it reaches the outer call's status whatever the
   kernel does with the returned one (a fallback that recovers clears it:
   dk_last_call_status). */
DK_API dk_status dk_abi_call_boxed(const dk_operator *op, dk_stack *stack) {
    int nested = dk__in_call();
    dk_status earlier;
    if (!op || !stack) return dk__fail(DK_ERR_NULL, "dk_abi_call_boxed: NULL %s", op ? "stack" : "operator");
    earlier = dk_last_call_status();
    dk_call_boxed(op, stack);
    return dk__abi_status_after(nested, earlier);
}
DK_API dk_status dk_abi_redispatch_boxed(const dk_operator *op, uint64_t ks, dk_stack *stack) {
    int nested = dk__in_call();
    dk_status earlier;
    if (!op || !stack) return dk__fail(DK_ERR_NULL, "dk_abi_redispatch_boxed: NULL %s", op ? "stack" : "operator");
    earlier = dk_last_call_status();
    dk_redispatch_boxed(op, dk_ks_raw(ks), stack);
    return dk__abi_status_after(nested, earlier);
}
/* From inside a kernel or fallback: fails the current call, as
   dk_call_fail with the message as it is (no format); status is a
   dk_status, DK_ERR_KERNEL_FAILED for a kernel's own failure. */
DK_API void dk_abi_call_fail(const dk_operator *op, const dk_kernel *kernel, uint64_t ks, int status,
                             const char *message) {
    dk_call_fail(op, kernel, dk_ks_raw(ks), (dk_status)status, "%s", message ? message : "");
}
/* The def's schema, read inside a call bracket and copied out: nothing
   the caller holds can be freed under it. */
enum { DK__ABI_ARG_NAME, DK__ABI_ARG_TYPE, DK__ABI_ARG_DEFAULT, DK__ABI_RET_NAME, DK__ABI_RET_TYPE, DK__ABI_SCHEMA };
DK__PRIVATE int dk__abi_schema_text(const dk_operator *op, int what, int i, char *buf, size_t size) {
    const dk_schema *sch;
    const char *text = NULL;
    int n = -1;
    if (buf && size) buf[0] = '\0';
    if (!op) return -1;
    DK__HOLD();
    sch = dk__table_schema(dk__snapshot(op));
    if (sch && what == DK__ABI_SCHEMA) text = sch->text;
    else if (sch && what <= DK__ABI_ARG_DEFAULT && i >= 0 && i < sch->num_arguments)
        text = what == DK__ABI_ARG_NAME ? sch->arguments[i].name
             : what == DK__ABI_ARG_TYPE ? sch->arguments[i].type_text : sch->arguments[i].default_text;
    else if (sch && what >= DK__ABI_RET_NAME && i >= 0 && i < sch->num_returns)
        text = what == DK__ABI_RET_NAME ? sch->returns[i].name : sch->returns[i].type_text;
    if (text) n = snprintf(buf, buf ? size : 0, "%s", text);
    DK__UNHOLD();
    return n;
}
/* The def's schema (dk_op_function_schema), copied into buf, snprintf-like
   (the length the whole text needs); -1 and "" without a def or for an
   argument or return i that is not there. _schema: c10's normalised text;
   _num_arguments / _num_returns: -1 without a def; an argument's name,
   type as written ("int[1]", "Tensor(a!)", "Scalar?") and default as
   written ("1", "[0, 1]", "None"; -1 without a default); kwarg_only: 1
   after a lone '*', 0 before, -1 for no such argument. A return's name
   is "" when it has none. */
DK_API int dk_abi_op_schema(const dk_operator *op, char *buf, size_t size) {
    return dk__abi_schema_text(op, DK__ABI_SCHEMA, 0, buf, size);
}
DK_API int dk_abi_op_argument_name(const dk_operator *op, int i, char *buf, size_t size) {
    return dk__abi_schema_text(op, DK__ABI_ARG_NAME, i, buf, size);
}
DK_API int dk_abi_op_argument_type(const dk_operator *op, int i, char *buf, size_t size) {
    return dk__abi_schema_text(op, DK__ABI_ARG_TYPE, i, buf, size);
}
DK_API int dk_abi_op_argument_default(const dk_operator *op, int i, char *buf, size_t size) {
    return dk__abi_schema_text(op, DK__ABI_ARG_DEFAULT, i, buf, size);
}
DK_API int dk_abi_op_return_name(const dk_operator *op, int i, char *buf, size_t size) {
    return dk__abi_schema_text(op, DK__ABI_RET_NAME, i, buf, size);
}
DK_API int dk_abi_op_return_type(const dk_operator *op, int i, char *buf, size_t size) {
    return dk__abi_schema_text(op, DK__ABI_RET_TYPE, i, buf, size);
}
/* which: 0 arguments, 1 returns, 2 argument i's kwarg_only */
DK__PRIVATE int dk__abi_schema_int(const dk_operator *op, int which, int i) {
    const dk_schema *sch;
    int n = -1;
    if (!op) return -1;
    DK__HOLD();
    sch = dk__table_schema(dk__snapshot(op));
    if (sch && which == 0) n = sch->num_arguments;
    if (sch && which == 1) n = sch->num_returns;
    if (sch && which == 2 && i >= 0 && i < sch->num_arguments) n = sch->arguments[i].kwarg_only != 0;
    DK__UNHOLD();
    return n;
}
DK_API int dk_abi_op_num_arguments(const dk_operator *op) { return dk__abi_schema_int(op, 0, 0); }
DK_API int dk_abi_op_num_returns(const dk_operator *op) { return dk__abi_schema_int(op, 1, 0); }
DK_API int dk_abi_op_argument_kwarg_only(const dk_operator *op, int i) { return dk__abi_schema_int(op, 2, i); }

/* Names and numbers of what C has as enums and macros. Statuses and value
   tags are numbered 0 .. count-1: _name(i) is the C name ("DK_ERR_NO_KERNEL",
   "DK_VALUE_INT"; dk_status_message gives a status's text), NULL out of range.
   The named keysets (DK_KS_AFTER_AUTOGRAD...): ks_named_name(i) their C
   names, ks_named(name, &ks) one by its C name (DK_ERR_NOT_FOUND for
   another name). */
/* names from the lists themselves (DK_FORALL_STATUS, DK_FORALL_VALUE_TAGS) */
DK_API int dk_abi_num_statuses(void) { return (int)DK__STATUS_END; }
DK_API const char *dk_abi_status_name(int status) {
#define DK__ABI_STATUS_NAME(name, text) "DK_" #name,
    static const char *const names[] = { DK_FORALL_STATUS(DK__ABI_STATUS_NAME) };
#undef DK__ABI_STATUS_NAME
    return (unsigned)status < sizeof names / sizeof *names ? names[status] : NULL;
}
#define DK__ABI_COUNT_TAG(tag, name) +1
DK_API int dk_abi_num_value_tags(void) { return 0 DK_FORALL_VALUE_TAGS(DK__ABI_COUNT_TAG); }
#undef DK__ABI_COUNT_TAG
DK_API const char *dk_abi_value_tag_name(int tag) {
#define DK__ABI_TAG_NAME(tag, name) "DK_VALUE_" #tag,
    static const char *const names[] = { DK_FORALL_VALUE_TAGS(DK__ABI_TAG_NAME) };
#undef DK__ABI_TAG_NAME
    return (unsigned)tag < sizeof names / sizeof *names ? names[tag] : NULL;
}
/* The named keysets of >>keyset, each by its macro: a macro renamed or
   removed fails to compile here, and test_abi checks that every DK_KS_
   macro of the header is in this list. */
#define DK__ABI_NAMED_KEYSETS(X)                                                                                 \
    X(EMPTY) X(FULL) X(BACKENDS) X(AUTOGRAD) X(AUTOGRAD_ALIAS) X(AUTOGRAD_WITH_INPLACE_VIEW) X(AUTOCAST)           \
    X(DEFAULT_INCLUDED) X(DEFAULT_EXCLUDED) X(PYTHON) X(FUNCTORCH) X(FUNCTORCH_BATCHED) X(OTHER_BACKENDS)        \
    X(BACKEND_FUNCTIONALITY) X(BACKEND) X(NON_FUNCTIONAL_BACKEND) X(MATH) X(NESTED) X(AFTER_AUTOGRAD)            \
    X(AFTER_INPLACE_VIEW) X(AFTER_FUNCTIONALIZE) X(SPARSE) X(SPARSE_CSR) X(MKLDNN) X(INPLACE_OR_VIEW)
#define DK__ABI_KS_NAME(name) "DK_KS_" #name,
static const char *const dk__abi_ks_names[] = { DK__ABI_NAMED_KEYSETS(DK__ABI_KS_NAME) };
#undef DK__ABI_KS_NAME
DK_API int dk_abi_num_named_keysets(void) { return (int)(sizeof dk__abi_ks_names / sizeof *dk__abi_ks_names); }
DK_API const char *dk_abi_ks_named_name(int i) {
    return i >= 0 && i < dk_abi_num_named_keysets() ? dk__abi_ks_names[i] : NULL;
}
DK__COLD_BEGIN
DK_API dk_status dk_abi_ks_named(const char *name, uint64_t *out) {
    if (!name || !out) return dk__fail(DK_ERR_NULL, "dk_abi_ks_named: NULL argument");
#define DK__ABI_KS_IS(n) if (strcmp(name, "DK_KS_" #n) == 0) { *out = DK_KS_##n.repr; return DK_OK; }
    DK__ABI_NAMED_KEYSETS(DK__ABI_KS_IS)
#undef DK__ABI_KS_IS
    return dk__fail(DK_ERR_NOT_FOUND, "dk_abi_ks_named: no named keyset %s (the names are DK_KS_..., "
                                      "dk_abi_ks_named_name lists them)", name);
}
DK__COLD_END
#undef DK__ABI_NAMED_KEYSETS

/* Sizes of the structs a caller passes to the C API's real functions
   (dk_registry_read_stats, dk_explain_to_string, dk_op_default...), and an
   explanation's fields: dk_abi_explain is dk_explain with the keyset as a
   uint64_t, into a buffer of dk_abi_explanation_size() bytes. */
DK_API size_t dk_abi_guard_size(void) { return sizeof(dk_guard); }
DK_API size_t dk_abi_value_size(void) { return sizeof(dk_value); }
DK_API size_t dk_abi_explanation_size(void) { return sizeof(dk_explanation); }
DK_API size_t dk_abi_registry_stats_size(void) { return sizeof(dk_registry_stats); }
DK_API dk_status dk_abi_explain(const dk_operator *op, uint64_t args, dk_explanation *out) {
    return dk_explain(op, dk_ks_raw(args), out);
}
DK_API uint64_t dk_abi_explanation_final(const dk_explanation *e) { return e ? e->final.repr : 0; }
DK_API int dk_abi_explanation_key(const dk_explanation *e) { return e ? (int)e->key : DK_Undefined; }
DK_API int dk_abi_explanation_slot(const dk_explanation *e) { return e ? e->slot : -1; }
/* A missing record's user_data is the library's own (the slot's boxed
   fallback): NULL for it, as a record the user registered without one. */
DK_API void *dk_abi_kernel_user_data(const dk_kernel *kernel) {
    return kernel && kernel->kind != DK_KERNEL_MISSING ? kernel->user_data : NULL;
}
DK_API const char *dk_abi_op_name(const dk_operator *op) { return op ? op->name : NULL; }

DK_API int dk_abi_num_backends(void) { return DK_NUM_BACKENDS; }
DK_API int dk_abi_num_functionality_keys(void) { return DK_NUM_FUNCTIONALITY_KEYS; }
DK_API int dk_abi_num_keys(void) { return DK_NUM_KEYS; }
DK_API int dk_abi_num_slots(void) { return DK_NUM_SLOTS; }

/* keys out of range give the empty set / Undefined, as the inline versions
   do for Undefined (they would index tables with them) */
#define DK__ABI_KEY_OK(k) ((unsigned)(k) < (unsigned)DK_NUM_KEYS)
DK_API uint64_t dk_abi_ks_from_key(int key) { return DK__ABI_KEY_OK(key) ? dk_ks_from_key((dk_key)key).repr : 0; }
DK_API uint64_t dk_abi_ks_from_backend(int b) {
    return (unsigned)b <= (unsigned)DK_NUM_BACKENDS ? dk_ks_from_backend((dk_backend)b).repr : 0;
}
DK_API uint64_t dk_abi_ks_or(uint64_t a, uint64_t b) { return a | b; }
DK_API uint64_t dk_abi_ks_and(uint64_t a, uint64_t b) { return a & b; }
DK_API uint64_t dk_abi_ks_minus(uint64_t a, uint64_t b) { return dk_ks_minus(dk_ks_raw(a), dk_ks_raw(b)).repr; }
DK_API uint64_t dk_abi_ks_add(uint64_t a, int key) { return a | dk_abi_ks_from_key(key); }
DK_API uint64_t dk_abi_ks_remove(uint64_t a, int key) {
    return DK__ABI_KEY_OK(key) ? dk_ks_remove(dk_ks_raw(a), (dk_key)key).repr : a;
}
DK_API int dk_abi_ks_has(uint64_t a, int key) { return DK__ABI_KEY_OK(key) && dk_ks_has(dk_ks_raw(a), (dk_key)key); }
DK_API int dk_abi_ks_highest_key(uint64_t a) { return (int)dk_ks_highest_key(dk_ks_raw(a)); }
DK_API int dk_abi_ks_slot(uint64_t a) { return dk_ks_slot(dk_ks_raw(a)); }
DK_API uint64_t dk_abi_ks_full_after(int key) { return dk_ks_full_after((dk_key)key).repr; }
DK_API uint64_t dk_abi_ks_full(void) { return DK__R_FULL; }
DK_API uint64_t dk_abi_alias_runtime_set(int alias) {
    return DK__ABI_KEY_OK(alias) ? dk_alias_runtime_set((dk_key)alias).repr : 0;
}
DK_API int dk_abi_ks_first(uint64_t a) { return (int)dk_ks_first(dk_ks_raw(a)); }
DK_API int dk_abi_ks_next(uint64_t a, int key) {
    return DK__ABI_KEY_OK(key) && key != DK_Undefined ? (int)dk_ks_next(dk_ks_raw(a), (dk_key)key) : DK_Undefined;
}
DK_API int dk_abi_ks_to_string(uint64_t a, char *buf, size_t size) { return dk_ks_to_string(dk_ks_raw(a), buf, size); }
DK_API int dk_abi_key_runtime(int f, int b) {
    if (!DK__ABI_KEY_OK(f) || (unsigned)b > (unsigned)DK_NUM_BACKENDS) return DK_Undefined;
    if (dk_key_is_per_backend_functionality((dk_key)f) && b == DK_InvalidBit) return DK_Undefined;
    return (int)dk_key_runtime((dk_key)f, (dk_backend)b);
}
#undef DK__ABI_KEY_OK

/* stacks: dk_abi_stack_create(capacity) (NULL out of memory), pushes return 1
   or 0 when full; a pop of the wrong tag (or of an empty stack) returns
   DK_ERR_BAD_STACK and leaves the stack as it was. Lists: int[] and
   float[] as the caller's arrays (push_ints / push_doubles, not copied);
   other lists (Tensor[], Tensor?[]) as an array of n values, n *
   dk_abi_value_size() bytes, filled with dk_abi_value_set_tensor /
   _set_none and read with dk_abi_value_tag / _tensor (NULL for a value
   that is no tensor). */
/* a stack and its values in one allocation */
DK_API dk_stack *dk_abi_stack_create(size_t capacity) {
    dk_stack *s;
    if (capacity > ((size_t)-1 - sizeof(dk_stack)) / sizeof(dk_value)) return NULL;
    if (!(s = (dk_stack *)malloc(sizeof(dk_stack) + capacity * sizeof(dk_value)))) return NULL;
    dk_stack_init(s, (dk_value *)(void *)(s + 1), capacity);
    return s;
}
DK_API void dk_abi_stack_destroy(dk_stack *s) { free(s); }
DK_API size_t dk_abi_stack_size(const dk_stack *s) { return s ? s->size : 0; }
DK_API void dk_abi_stack_clear(dk_stack *s) { if (s) s->size = 0; }
DK_API int dk_abi_stack_peek_tag(const dk_stack *s, size_t depth) {
    return s && depth < s->size ? (int)s->values[s->size - 1 - depth].tag : -1;
}
DK_API int dk_abi_stack_push_none(dk_stack *s) { return s ? dk_stack_push(s, dk_none()) : 0; }
DK_API int dk_abi_stack_push_bool(dk_stack *s, int b) { return s ? dk_stack_push(s, dk_bool(b)) : 0; }
DK_API int dk_abi_stack_push_int(dk_stack *s, int64_t i) { return s ? dk_stack_push(s, dk_int(i)) : 0; }
DK_API int dk_abi_stack_push_double(dk_stack *s, double d) { return s ? dk_stack_push(s, dk_double(d)) : 0; }
DK_API int dk_abi_stack_push_string(dk_stack *s, const char *str) { return s ? dk_stack_push(s, dk_string(str)) : 0; }
DK_API int dk_abi_stack_push_tensor(dk_stack *s, void *t) { return s ? dk_stack_push(s, dk_tensor(t)) : 0; }
DK_API int dk_abi_stack_push_object(dk_stack *s, void *o) { return s ? dk_stack_push(s, dk_object(o)) : 0; }
DK_API int dk_abi_stack_push_ints(dk_stack *s, const int64_t *items, size_t n) {
    dk_int_list l;
    l.items = items; l.n = n;
    return s && (items || !n) ? dk_stack_push(s, dk_ints(l)) : 0;
}
DK_API int dk_abi_stack_push_doubles(dk_stack *s, const double *items, size_t n) {
    dk_double_list l;
    l.items = items; l.n = n;
    return s && (items || !n) ? dk_stack_push(s, dk_doubles(l)) : 0;
}
DK_API int dk_abi_stack_push_list(dk_stack *s, const dk_value *items, size_t n) {
    return s && (items || !n) ? dk_stack_push(s, dk_list(items, n)) : 0;
}
DK_API int dk_abi_value_tag(const dk_value *items, size_t i) { return items ? (int)items[i].tag : -1; }
DK_API void *dk_abi_value_tensor(const dk_value *items, size_t i) {
    return items && items[i].tag == DK_VALUE_TENSOR ? items[i].as.tensor : NULL;
}
DK_API void dk_abi_value_set_tensor(dk_value *items, size_t i, void *tensor) { if (items) items[i] = dk_tensor(tensor); }
DK_API void dk_abi_value_set_none(dk_value *items, size_t i) { if (items) items[i] = dk_none(); }
/* The top value when it has tag `tag` (popped), else NULL and a message. */
DK__PRIVATE const dk_value *dk__abi_pop(dk_stack *s, dk_value_tag tag, const char *what) {
    const char *names[] = {
#define DK__ABI_TAG_NAME(t, name) name,
        DK_FORALL_VALUE_TAGS(DK__ABI_TAG_NAME)
#undef DK__ABI_TAG_NAME
    };
    if (!s) { dk__fail(DK_ERR_NULL, "%s: NULL stack", what); return NULL; }
    if (!s->size) { dk__fail(DK_ERR_BAD_STACK, "%s: the stack is empty", what); return NULL; }
    if (s->values[s->size - 1].tag != tag) {
        dk__fail(DK_ERR_BAD_STACK, "%s: the top of the stack is a %s, not a %s", what,
                 (unsigned)s->values[s->size - 1].tag < sizeof names / sizeof *names
                     ? names[s->values[s->size - 1].tag] : "bad value", names[tag]);
        return NULL;
    }
    return &s->values[--s->size];
}
#define DK__ABI_POP(fname, type, tag, field)                                            \
    DK_API dk_status fname(dk_stack *s, type *out) {                                    \
        const dk_value *v;                                                              \
        if (!out) return dk__fail(DK_ERR_NULL, #fname ": NULL out");                    \
        if (!(v = dk__abi_pop(s, tag, #fname))) return s ? DK_ERR_BAD_STACK : DK_ERR_NULL; \
        *out = (type)v->as.field;                                                       \
        return DK_OK;                                                                   \
    }
DK__ABI_POP(dk_abi_stack_pop_bool, int, DK_VALUE_BOOL, b)
DK__ABI_POP(dk_abi_stack_pop_int, int64_t, DK_VALUE_INT, i)
DK__ABI_POP(dk_abi_stack_pop_double, double, DK_VALUE_DOUBLE, d)
DK__ABI_POP(dk_abi_stack_pop_string, const char *, DK_VALUE_STRING, s)
DK__ABI_POP(dk_abi_stack_pop_tensor, void *, DK_VALUE_TENSOR, tensor)
DK__ABI_POP(dk_abi_stack_pop_object, void *, DK_VALUE_OBJECT, object)
#undef DK__ABI_POP
#define DK__ABI_POP_LIST(fname, type, tag, field)                                                  \
    DK_API dk_status fname(dk_stack *s, const type **items, size_t *n) {                          \
        const dk_value *v;                                                                        \
        if (!items || !n) return dk__fail(DK_ERR_NULL, #fname ": NULL out");                      \
        if (!(v = dk__abi_pop(s, tag, #fname))) return s ? DK_ERR_BAD_STACK : DK_ERR_NULL;        \
        *items = v->as.field.items;                                                               \
        *n = v->as.field.n;                                                                       \
        return DK_OK;                                                                             \
    }
DK__ABI_POP_LIST(dk_abi_stack_pop_ints, int64_t, DK_VALUE_INT_LIST, ints)
DK__ABI_POP_LIST(dk_abi_stack_pop_doubles, double, DK_VALUE_DOUBLE_LIST, doubles)
DK__ABI_POP_LIST(dk_abi_stack_pop_list, dk_value, DK_VALUE_LIST, list)
#undef DK__ABI_POP_LIST
DK_API dk_status dk_abi_stack_pop_none(dk_stack *s) {
    if (!dk__abi_pop(s, DK_VALUE_NONE, "dk_abi_stack_pop_none")) return s ? DK_ERR_BAD_STACK : DK_ERR_NULL;
    return DK_OK;
}

DK_API uint64_t dk_abi_tls_included(void) { return dk_tls_included().repr; }
DK_API uint64_t dk_abi_tls_excluded(void) { return dk_tls_excluded().repr; }
DK_API void dk_abi_tls_set_included(uint64_t ks) { dk_tls_set_included(dk_ks_raw(ks)); }
DK_API void dk_abi_tls_set_excluded(uint64_t ks) { dk_tls_set_excluded(dk_ks_raw(ks)); }
DK_API void dk_abi_guard_include(uint64_t ks, dk_guard *out) {
    dk_guard g = dk_guard_include(dk_ks_raw(ks));
    if (out) *out = g;
}
DK_API void dk_abi_guard_exclude(uint64_t ks, dk_guard *out) {
    dk_guard g = dk_guard_exclude(dk_ks_raw(ks));
    if (out) *out = g;
}
DK_API void dk_abi_guard_force(uint64_t included, uint64_t excluded, dk_guard *out) {
    dk_guard g = dk_guard_force(dk_ks_raw(included), dk_ks_raw(excluded));
    if (out) *out = g;
}
DK_API void dk_abi_guard_below_autograd(dk_guard *out) {
    dk_guard g = dk_guard_below_autograd();
    if (out) *out = g;
}
DK_API void dk_abi_guard_below_inplace_view(dk_guard *out) {
    dk_guard g = dk_guard_below_inplace_view();
    if (out) *out = g;
}
DK_API void dk_abi_guard_skip_functionalize(dk_guard *out) {
    dk_guard g = dk_guard_skip_functionalize();
    if (out) *out = g;
}
DK_API int dk_abi_tls_is_default(void) { return dk_tls_is_default(); }
DK_API void dk_abi_guard_pop(const dk_guard *g) { if (g) dk_guard_pop(*g); }
DK__COOL_END
/* <<impl-abi */

/* >>impl-schema ---------------------------------------------------------------

   Function-schema parser (see >>schema). c10's grammar, reimplemented from
   its observable behaviour (libtorch 1.13.1): a lexer with the TorchScript
   token rules c10 uses (keywords such as `in` or `def` are not identifiers,
   a number is whatever strtod reads, plus an optional 'j'; a newline outside
   brackets ends the declaration), a recursive-descent parser, c10's type
   normalisation (fake types, Optional collapsing, Union flattening,
   unification and sorting) and c10's printer (Argument / FunctionSchema
   operator<<, IValue printing of defaults).

   Memory: every node and string of one schema lives in an arena (a list of
   chunks from dk__schema_malloc), so a failure, and dk_schema_free(), release
   everything at once; the static leaf types (and their Optional and List
   types), common return lists, argument names, one-set annotations and
   defaults are every schema's. A def keeps a copy in its record (a def's copy, below).
   A failure anywhere longjmps back to dk__sp_run().

   Note [Schema deviations] -- where c10 1.13.1 prints text that its own
   parser cannot read back, the text round-trips here instead:
   - the printed forms of alias annotations parse: "$0" set names and empty
     sets ("Tensor($0! -> )" from "Tensor!", "Tensor[]()[]", "(!)"), an
     annotation right after '?' ("Tensor?(a)[]" from "Tensor(a)?[]"), and one
     on a tuple, Future, RRef or class ("(int)(a)?" from "Union((int), None)(a)");
   - Device defaults print bare as in c10 ("cuda:1") and parse bare too;
   - complex defaults print as in c10 ("0.+1.j") and "<re>+<im>j" parses
     (c10's quirk stays: a complex default without 'j' loses its last
     character, read as the 'j': "complex x=2.5" is 0.+2.j, as libtorch
     1.13.1 parses it; "complex z=1" is an error there and here);
   - the escape "\r" parses (c10 prints it, then rejects it);
   - a dtype, layout, reduction or memory-format name as the default of a
     float or complex argument (an int, as in c10) prints as the name
     ("float x=long"; c10 prints "x=4", which reads back as a float);
   - alias sets print in source order (c10 prints its unordered_set, which
     reverses small sets: "Tensor(a|b)" prints "Tensor(b|a)");
   - a string default of a Device? prints quoted (c10: bare), bytes >=
     0x80 in strings as 3-digit octal (c10: garbage from a signed char);
   - a default of a kind its type cannot hold ("int n=1.5", "bool n=1",
     "int n=None", "str n=1") is refused, with the argument and the reason
     (c10 takes it and fails when a kernel unboxes it); c10's conversions
     stay: an integer or a dtype name for a float or complex, any number or
     bool for a Scalar, None for an optional (dk__sp_default_fits);
   - an int list default prints as one value only when it is N copies in an
     int[N]: "int[] x=[1, 1]" and "int[1] x=[1, 1]" print in full (c10
     prints "x=1", which reads back as [1] or as an error);
   - Union: c10 drops or misplaces the comma next to the Scalar group
     ("Union(, str, Scalar)"); we print "Union(str, Scalar)"; Scalar?? is
     Scalar? (c10: "Union(Scalar)?", which reads back as Scalar?);
   - a list's own annotation that names no set ("Tensor[]?(!)[]") keeps
     only what c10 prints of it (one elsewhere, "Tensor(!)", is refused as
     c10 refuses it);
   - limits c10 does not have: list size hint <= 2^31-1 (c10 wraps it to
     int32), device index <= 127 (c10 wraps it to int8), broadcast defaults
     "T[N] x=v" with N <= 1024, types nested <= 64 deep, Unions of <= 256
     members (Scalar and nested Unions flattened; c10's merge of members is
     quadratic: 0.7 MB of Union took seconds);
   - custom classes (__torch__.torch.classes.ns.Cls) are not looked up
     (c10: "Unknown custom class type ... Please ensure it is registered.").
*/

#include <setjmp.h>
#include <float.h>
#include <locale.h>

#define DK__SP_MAX_DEPTH 64
#define DK__SP_MAX_REPEAT 1024
#define DK__SP_MAX_UNION 256           /* members of a Union, flattened: merging them is quadratic */

/* Test hook: tests define these to inject allocation failures. */
#ifndef DK__SCHEMA_MALLOC
#define DK__SCHEMA_MALLOC(n) malloc(n)
#define DK__SCHEMA_FREE(p) free(p)
#endif
/* Test hook: the parser's work, counted where it grows with the text: each
   byte the lexer passes, each name a name of an alias set is compared with,
   each comparison of a sort of names. tests/test_schema.c defines it to a
   counter (doubling a text must at most double the count); otherwise it is
   nothing. */
#ifndef DK__SCHEMA_STEPS
#define DK__SCHEMA_STEPS(n) ((void)0)
#endif

#if defined(__GNUC__) || defined(__clang__)
#define DK__SP_NORETURN __attribute__((noreturn))
#define DK__SP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define DK__SP_NORETURN
#define DK__SP_PRINTF(f, a)
#endif

/* --- arena ----------------------------------------------------------------- */

typedef union dk__sp_align { void *p; double d; int64_t i; } dk__sp_align;
typedef struct dk__sp_chunk {
    struct dk__sp_chunk *next;
    void (*free)(void *ptr, void *user_data);   /* how this chunk goes back */
    void *user_data;
    size_t used, size;                 /* in units of dk__sp_align */
    dk__sp_align data[1];
} dk__sp_chunk;

/* The C allocator, when no registry description gives one. */
DK__PRIVATE void *dk__schema_malloc(size_t n, void *ud) { (void)ud; return DK__SCHEMA_MALLOC(n); }
DK__PRIVATE void dk__schema_mfree(void *p, void *ud) { (void)ud; DK__SCHEMA_FREE(p); }

DK__PRIVATE void dk__sp_arena_free(dk__sp_chunk *c) {
    while (c) {
        dk__sp_chunk *next = c->next;
        c->free(c, c->user_data);
        c = next;
    }
}

/* --- parser state and errors ------------------------------------------------ */

enum {
    DK__TK_EOF = 256, DK__TK_IDENT, DK__TK_NUMBER, DK__TK_STRING, DK__TK_WS, DK__TK_WS_EOF,
    DK__TK_NEWLINE, DK__TK_INDENT, DK__TK_ARROW, DK__TK_DOTS, DK__TK_TRUE, DK__TK_FALSE,
    DK__TK_NONE, DK__TK_NONETYPE, DK__TK_KEYWORD, DK__TK_OPERATOR, DK__TK_TYPE_COMMENT,
    DK__TK_ALIAS_ID                    /* "$0": the name c10 prints for a fresh set */
};

typedef struct dk__sp_tok { int kind; size_t start, end; } dk__sp_tok;

typedef struct dk__sp {
    const char *src;
    size_t len, pos;                   /* lexer position */
    int nesting;                       /* open ( [ { : newlines inside are blanks */
    size_t base_indent;
    dk__sp_tok cur, next;
    int has_next;
    int fresh;                         /* next "$n" of a bare '!' */
    dk__sp_tok empty;                  /* the token after '(' of the last annotation naming no set */
    int depth;                         /* parse_type recursion */
    size_t at;                         /* start of the type being built, for errors */
    dk__sp_chunk *arena;
    void *(*alloc)(size_t size, void *user_data);   /* the arena's allocator */
    void (*free)(void *ptr, void *user_data);
    void *alloc_user_data;
    const dk_type *basic[DK__TYPE_END];   /* Int, None, ... once per schema (static when named by their kind) */
    jmp_buf fail;
} dk__sp;

DK__COLD_BEGIN
/* The line around pos with a caret under it, for error messages. */
DK__PRIVATE void dk__sp_excerpt(const dk__sp *p, size_t pos, char *out, size_t size) {
    size_t ls = pos, le = pos, i, n = 0;
    while (ls > 0 && p->src[ls - 1] != '\n' && pos - ls < 60) ls--;
    while (le < p->len && p->src[le] != '\n' && le - pos < 60) le++;
    for (i = ls; i < le && n + 8 < size; i++) {
        unsigned char c = (unsigned char)p->src[i];
        out[n++] = c == '\t' ? ' ' : (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
    }
    out[n++] = '\n';
    for (i = ls; i < pos && n + 4 < size; i++) out[n++] = ' ';
    out[n++] = '^';
    out[n] = '\0';
}

DK__PRIVATE DK__SP_NORETURN DK__SP_PRINTF(3, 4) void dk__sp_fail(dk__sp *p, size_t pos, const char *fmt, ...) {
    char what[512], line[256];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (n > 0) dk__mark_cut(what, sizeof what, (size_t)n);
    dk__sp_excerpt(p, pos, line, sizeof line);
    dk__fail(DK_ERR_BAD_SCHEMA, "%s at position %lu:\n%s", what, (unsigned long)pos, line);
    longjmp(p->fail, 1);
}

DK__PRIVATE DK__SP_NORETURN void dk__sp_oom(dk__sp *p, size_t n) {
    dk__fail(DK_ERR_NO_MEMORY, "dk_schema_parse: out of memory allocating %lu bytes", (unsigned long)n);
    longjmp(p->fail, 2);
}
DK__COLD_END

/* A new chunk for units, out of line (dk__sp_alloc's fast path is a leaf). */
DK__PRIVATE DK__NOINLINE dk__sp_chunk *dk__sp_grow(dk__sp *p, size_t units, size_t bytes) {
    dk__sp_chunk *c = p->arena;
    {
        /* Chunks are sized to what the text needs: aten's schemas hold
           about 8.5 bytes per byte of text (nodes, names, the printed
           text). The first chunk takes 7 per byte of the whole text, a
           later one 7 per byte left to parse plus half the printed text
           (the fewest bytes in all over aten's). (A def parses in a chunk
           on its stack, dk__sp_parse, and keeps a copy.) */
        size_t grow = units, size, total;
        if (p->len < (size_t)-1 / 16)
            grow = (7 * (p->len - (c ? p->pos : 0)) + (c ? p->len / 2 + 64 : 96)) / sizeof(dk__sp_align);
        size = units > grow ? units : grow;
        total = offsetof(dk__sp_chunk, data) + size * sizeof(dk__sp_align);
        if (units > ((size_t)-1 - offsetof(dk__sp_chunk, data)) / sizeof(dk__sp_align) ||
            !(c = (dk__sp_chunk *)p->alloc(total, p->alloc_user_data)))
            dk__sp_oom(p, bytes);
        c->next = p->arena;
        c->free = p->free;
        c->user_data = p->alloc_user_data;
        c->used = 0;
        c->size = size;
        p->arena = c;
        memset(c->data, 0, size * sizeof(dk__sp_align));   /* once: every allocation is zeroed */
    }
    return c;
}

DK__PRIVATE void *dk__sp_alloc(dk__sp *p, size_t bytes) {
    size_t units = bytes ? (bytes + sizeof(dk__sp_align) - 1) / sizeof(dk__sp_align) : 1;
    dk__sp_chunk *c = p->arena;
    void *r;
    if (!c || c->size - c->used < units) c = dk__sp_grow(p, units, bytes);
    r = c->data + c->used;
    c->used += units;
    return r;
}

DK__PRIVATE char *dk__sp_strndup(dk__sp *p, const char *s, size_t n) {
    char *r = (char *)dk__sp_alloc(p, n + 1);
    memcpy(r, s, n);
    r[n] = '\0';
    return r;
}

/* A growing string in the arena (old copies stay in the arena). */
typedef struct dk__sp_buf { char *s; size_t n, cap; } dk__sp_buf;

/* An arena array with room for element n: doubled when full (the old copy
   stays in the arena, freed with it). */
DK__PRIVATE void *dk__sp_grow_array(dk__sp *p, void *v, int n, int *cap, size_t elem) {
    void *grown;
    if (n < *cap) return v;
    *cap = *cap ? 2 * *cap : 1;
    grown = dk__sp_alloc(p, (size_t)*cap * elem);
    if (n) memcpy(grown, v, (size_t)n * elem);
    return grown;
}

/* Room for n more bytes: in place when the string is the arena's newest
   allocation and its chunk has the room, else a copy. cap is the room the
   string has (whole arena units). */
DK__PRIVATE DK__NOINLINE void dk__sp_reserve(dk__sp *p, dk__sp_buf *b, size_t n) {
    size_t units = (2 * (b->cap + n) + 16 + sizeof(dk__sp_align) - 1) / sizeof(dk__sp_align);
    dk__sp_chunk *c = p->arena;
    char *t;
    if (b->s && b->s + b->cap == (char *)(c->data + c->used) &&
        units - b->cap / sizeof(dk__sp_align) <= c->size - c->used) {
        c->used += units - b->cap / sizeof(dk__sp_align);
        b->cap = units * sizeof(dk__sp_align);
        return;
    }
    t = (char *)dk__sp_alloc(p, units * sizeof(dk__sp_align));
    if (b->n) memcpy(t, b->s, b->n);
    b->s = t;
    b->cap = units * sizeof(dk__sp_align);
}
/* Inlined (the growth out of line): a literal's bytes are copied as a constant. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
DK_INLINE void dk__sp_put(dk__sp *p, dk__sp_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) dk__sp_reserve(p, b, n);
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}
/* Inlined, so that strlen of a literal is a constant. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
DK_INLINE void dk__sp_puts(dk__sp *p, dk__sp_buf *b, const char *s) { dk__sp_put(p, b, s, strlen(s)); }
/* The finished string; the room it does not use goes back to the arena
   when it is the newest allocation (still zero: a string only grows, and
   nothing past its '\0' was written). */
DK_INLINE const char *dk__sp_done(dk__sp *p, dk__sp_buf *b) {
    dk__sp_chunk *c = p->arena;
    if (!b->s) return dk__sp_strndup(p, "", 0);
    if (b->s + b->cap == (char *)(c->data + c->used))
        c->used -= (b->cap - b->n - 1) / sizeof(dk__sp_align);   /* whole units after the bytes and '\0' */
    return b->s;
}

/* --- lexer: c10's Lexer::match and lex, for one declaration --------------- */

/* Character classes of ASCII, one load per test: 1 blank (space \t \v \f
   \r), 2 digit, 4 letter, 8 word (letter, digit, _), 16 hex digit. */
#define DK__SP_B 1
#define DK__SP_D (2 | 8 | 16)
#define DK__SP_H (4 | 8 | 16)
#define DK__SP_L (4 | 8)
static const unsigned char dk__sp_classes[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, DK__SP_B, 0, DK__SP_B, DK__SP_B, DK__SP_B, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    DK__SP_B, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    DK__SP_D, DK__SP_D, DK__SP_D, DK__SP_D, DK__SP_D, DK__SP_D, DK__SP_D, DK__SP_D, DK__SP_D, DK__SP_D, 0, 0, 0, 0, 0, 0,
    0, DK__SP_H, DK__SP_H, DK__SP_H, DK__SP_H, DK__SP_H, DK__SP_H, DK__SP_L,
    DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L,
    DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L,
    DK__SP_L, DK__SP_L, DK__SP_L, 0, 0, 0, 0, 8,
    0, DK__SP_H, DK__SP_H, DK__SP_H, DK__SP_H, DK__SP_H, DK__SP_H, DK__SP_L,
    DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L,
    DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L, DK__SP_L,
    DK__SP_L, DK__SP_L, DK__SP_L, 0, 0, 0, 0, 0
};
#undef DK__SP_B
#undef DK__SP_D
#undef DK__SP_H
#undef DK__SP_L
DK__PRIVATE int dk__sp_blank(int c) { return dk__sp_classes[(unsigned char)c] & 1; }
DK__PRIVATE int dk__sp_digit(int c) { return dk__sp_classes[(unsigned char)c] & 2; }
DK__PRIVATE int dk__sp_alpha(int c) { return dk__sp_classes[(unsigned char)c] & 4; }
DK__PRIVATE int dk__sp_word(int c) { return dk__sp_classes[(unsigned char)c] & 8; }
DK__PRIVATE int dk__sp_xdigit(int c) { return dk__sp_classes[(unsigned char)c] & 16; }
DK__PRIVATE int dk__sp_has(const char *s, size_t n, const char *lit) {
    size_t k = strlen(lit);
    return n >= k && memcmp(s, lit, k) == 0;
}

/* Length of the number strtod would read at s (0 if none); the lexer only
   tries a number at a digit or a '.', the only characters one starts with
   (a sign is an operator token of its own). */
DK__PRIVATE size_t dk__sp_scan_number(const char *s, size_t n) {
    int hex = n >= 3 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
              (dk__sp_xdigit(s[2]) || (n >= 4 && s[2] == '.' && dk__sp_xdigit(s[3])));
    size_t i = hex ? 2 : 0, digits = 0, k;
    while (i < n && (hex ? dk__sp_xdigit(s[i]) : dk__sp_digit(s[i]))) i++, digits++;
    if (i < n && s[i] == '.')
        for (i++; i < n && (hex ? dk__sp_xdigit(s[i]) : dk__sp_digit(s[i])); i++) digits++;
    if (!digits) return 0;
    if (i < n && (hex ? (s[i] == 'p' || s[i] == 'P') : (s[i] == 'e' || s[i] == 'E'))) {
        k = i + 1;
        if (k < n && (s[k] == '+' || s[k] == '-')) k++;
        if (k < n && dk__sp_digit(s[k])) {
            while (k < n && dk__sp_digit(s[k])) k++;
            i = k;
        }
    }
    return i;
}

/* c10's isString: 1 or 3 quotes of either kind; a raw newline only inside
   triple quotes; a backslash skips the next character. */
DK__PRIVATE size_t dk__sp_scan_string(const char *s, size_t n) {
    char q = s[0];
    size_t ql = n >= 3 && s[1] == q && s[2] == q ? 3 : 1, end = ql;
    while (end < n && !(end + ql <= n && s[end] == q && (ql == 1 || (s[end + 1] == q && s[end + 2] == q)))) {
        if (s[end] == '\n' && ql != 3) return 0;
        if (s[end] == '\\') end++;
        end++;
    }
    return end < n ? end + ql : 0;
}

/* TorchScript keywords: tokens of their own, never identifiers. The lexer
   runs this on every word: a switch on the first character, then the
   candidates' lengths, then their bytes (constant-size compares). */
#define DK__SP_KW(lit, k) if (n == sizeof lit - 1 && memcmp(s, lit, sizeof lit - 1) == 0) return k;
DK__PRIVATE int dk__sp_keyword(const char *s, size_t n) {
    if (n < 2 || n > 8) return DK__TK_IDENT;
    switch (s[0]) {
    case 'T': DK__SP_KW("True", DK__TK_TRUE) break;
    case 'F': DK__SP_KW("False", DK__TK_FALSE) break;
    case 'N': DK__SP_KW("None", DK__TK_NONE) DK__SP_KW("NoneType", DK__TK_NONETYPE) break;
    case 'E': DK__SP_KW("Ellipsis", DK__TK_KEYWORD) break;
    case 'd': DK__SP_KW("def", DK__TK_KEYWORD) DK__SP_KW("del", DK__TK_KEYWORD) break;
    case 'i':
        DK__SP_KW("if", DK__TK_KEYWORD) DK__SP_KW("is", DK__TK_KEYWORD) DK__SP_KW("in", DK__TK_KEYWORD)
        DK__SP_KW("import", DK__TK_KEYWORD) break;
    case 'e': DK__SP_KW("else", DK__TK_KEYWORD) DK__SP_KW("elif", DK__TK_KEYWORD) break;
    case 'w': DK__SP_KW("while", DK__TK_KEYWORD) DK__SP_KW("with", DK__TK_KEYWORD) break;
    case 'r': DK__SP_KW("return", DK__TK_KEYWORD) DK__SP_KW("raise", DK__TK_KEYWORD) break;
    case 'a':
        DK__SP_KW("and", DK__TK_KEYWORD) DK__SP_KW("assert", DK__TK_KEYWORD) DK__SP_KW("as", DK__TK_KEYWORD) break;
    case 'o': DK__SP_KW("or", DK__TK_KEYWORD) break;
    case 'n': DK__SP_KW("not", DK__TK_KEYWORD) break;
    case 'g': DK__SP_KW("global", DK__TK_KEYWORD) break;
    case 'f': DK__SP_KW("for", DK__TK_KEYWORD) break;
    case 'b': DK__SP_KW("break", DK__TK_KEYWORD) break;
    case 'c': DK__SP_KW("continue", DK__TK_KEYWORD) DK__SP_KW("class", DK__TK_KEYWORD) break;
    case 'p': DK__SP_KW("pass", DK__TK_KEYWORD) break;
    default: break;
    }
    return DK__TK_IDENT;
}
#undef DK__SP_KW

/* Operators, longest match first; only -> and ... (and single characters)
   mean anything in a schema, the rest exist so that "**" is not "*" "*":
   <<= >>= **= <=> ...  then  -> != == <= >= // << >> += -= *= /= %= |= &= ^= **,
   then one character of +-*|/%@()[]:,={}><.?!&^~ . */
DK__PRIVATE size_t dk__sp_scan_operator(const char *s, size_t n, int *kind) {
    int c = (unsigned char)s[0], c1 = n > 1 ? (unsigned char)s[1] : 0, c2 = n > 2 ? (unsigned char)s[2] : 0;
    *kind = DK__TK_OPERATOR;
    if (c2 == '=' && c1 == c && (c == '<' || c == '>' || c == '*')) return 3;
    if (c == '<' && c1 == '=' && c2 == '>') return 3;
    if (c == '.' && c1 == '.' && c2 == '.') { *kind = DK__TK_DOTS; return 3; }
    if (c == '-' && c1 == '>') { *kind = DK__TK_ARROW; return 2; }
    switch (c) {
    case '!': case '=': case '+': case '-': case '%': case '|': case '&': case '^':
        if (c1 == '=') return 2;
        break;
    case '<': case '>': case '*': case '/':
        if (c1 == '=' || c1 == c) return 2;
        break;
    default: break;
    }
    switch (c) {
    case '+': case '-': case '*': case '/': case '%': case '@': case '(': case ')': case '[': case ']': case ':':
    case ',': case '=': case '{': case '}': case '>': case '<': case '.': case '?': case '!': case '&': case '^':
    case '|': case '~':
        *kind = c;
        return 1;
    default: return 0;
    }
}

/* Length and kind of the (non-blank) token at pos. */
DK__PRIVATE size_t dk__sp_scan_token(dk__sp *p, size_t pos, int *kind) {
    const char *s = p->src + pos;
    size_t n = p->len - pos, k = 0;
    int c = (unsigned char)s[0];
    if ((dk__sp_digit(c) || c == '.') && (k = dk__sp_scan_number(s, n)) > 0) {
        *kind = DK__TK_NUMBER;
        return k < n && s[k] == 'j' ? k + 1 : k;
    }
    if ((c == '"' || c == '\'') && (k = dk__sp_scan_string(s, n)) > 0) {
        *kind = DK__TK_STRING;
        return k;
    }
    if (dk__sp_alpha(c) || c == '_') {
        while (k < n && dk__sp_word(s[k])) k++;
        *kind = dk__sp_keyword(s, k);
        return k;
    }
    if (c == '$' && n > 1 && dk__sp_digit(s[1])) {
        for (k = 1; k < n && dk__sp_digit(s[k]); k++) {}
        *kind = DK__TK_ALIAS_ID;
        return k;
    }
    if (c == '#') { /* only "# type:" gets here */
        *kind = DK__TK_TYPE_COMMENT;
        return 7;
    }
    if ((k = dk__sp_scan_operator(s, n, kind)) > 0) return k;
    dk__sp_fail(p, pos, "expected a valid token but found '%c'", c >= 0x20 && c < 0x7f ? c : '?');
    return 0; /* not reached: for compilers that do not know dk__sp_fail does not return (tcc) */
}

/* c10's match(): blanks, comments and backslash-newlines are skipped; a
   newline outside brackets turns the next line's indentation into a
   whitespace token (ws), which dk__sp_lex makes a NEWLINE or an INDENT. */
DK__PRIVATE void dk__sp_lex_raw(dk__sp *p, int ws, dk__sp_tok *out) {
    const char *s = p->src;
    size_t n = p->len, pos = p->pos, start;
    dk__sp_tok t;
    for (;;) {
        start = pos;
        while (pos < n && dk__sp_blank(s[pos])) pos++;
        if (pos < n && s[pos] == '#' && !dk__sp_has(s + pos, n - pos, "# type:")) {
            while (pos < n && s[pos] != '\n') pos++;
        } else if (!ws && pos + 1 < n && s[pos] == '\\' && s[pos + 1] == '\n') {
            pos += 2;
        } else if (pos < n && s[pos] == '\n') {
            pos++;
            ws = p->nesting <= 0;
        } else {
            break;
        }
    }
    t.start = ws ? start : pos;
    t.end = pos;
    t.kind = ws ? (pos < n ? DK__TK_WS : DK__TK_WS_EOF) : DK__TK_EOF;
    if (!ws && pos < n) t.end = pos + dk__sp_scan_token(p, pos, &t.kind);
    if (t.kind == '(' || t.kind == '[' || t.kind == '{') p->nesting++;
    if (t.kind == ')' || t.kind == ']' || t.kind == '}') p->nesting--;
    DK__SCHEMA_STEPS(t.end - p->pos);
    p->pos = t.end;
    *out = t;
}

/* The next token into *t (the parser's cur or next: no copies). */
DK__PRIVATE void dk__sp_lex(dk__sp *p, dk__sp_tok *t) {
    dk__sp_lex_raw(p, 0, t);
    if (t->kind == DK__TK_WS || t->kind == DK__TK_WS_EOF) {
        size_t depth = t->kind == DK__TK_WS_EOF ? p->base_indent : t->end - t->start;
        if (depth < p->base_indent) dk__sp_fail(p, t->start, "invalid indent level %lu", (unsigned long)depth);
        t->kind = depth > p->base_indent ? DK__TK_INDENT : DK__TK_NEWLINE;
    }
}

DK__PRIVATE void dk__sp_advance(dk__sp *p) {
    if (p->has_next) p->cur = p->next;
    else dk__sp_lex(p, &p->cur);
    p->has_next = 0;
}

DK__PRIVATE const dk__sp_tok *dk__sp_peek(dk__sp *p) {
    if (!p->has_next) dk__sp_lex(p, &p->next);
    p->has_next = 1;
    return &p->next;
}

/* tmp: room for a quoted single character. */
DK__PRIVATE const char *dk__sp_kind_name(int kind, char tmp[4]) {
    switch (kind) {
    case DK__TK_EOF: return "end of input";
    case DK__TK_IDENT: return "ident";
    case DK__TK_NUMBER: return "number";
    case DK__TK_STRING: return "string literal";
    case DK__TK_NEWLINE: return "newline";
    case DK__TK_INDENT: return "indent";
    case DK__TK_ARROW: return "'->'";
    case DK__TK_NONE: return "None";
    default: break;
    }
    tmp[0] = '\'';
    tmp[1] = (char)kind;
    tmp[2] = '\'';
    tmp[3] = '\0';
    return tmp;
}

/* "expected X but found 'text'" at the current token. */
DK__PRIVATE DK__SP_NORETURN void dk__sp_expected_at(dk__sp *p, const dk__sp_tok *t, const char *what) {
    size_t n = t->end - t->start;
    char tmp[4];
    if (t->kind == DK__TK_EOF || t->kind == DK__TK_NEWLINE || t->kind == DK__TK_INDENT)
        dk__sp_fail(p, t->start, "expected %s but found %s", what, dk__sp_kind_name(t->kind, tmp));
    dk__sp_fail(p, t->start, "expected %s but found '%.*s'", what, (int)(n > 40 ? 40 : n), p->src + t->start);
}

DK__PRIVATE DK__SP_NORETURN void dk__sp_expected(dk__sp *p, const char *what) { dk__sp_expected_at(p, &p->cur, what); }

DK__PRIVATE int dk__sp_accept(dk__sp *p, int kind) {
    if (p->cur.kind != kind) return 0;
    dk__sp_advance(p);
    return 1;
}

DK__PRIVATE dk__sp_tok dk__sp_expect(dk__sp *p, int kind) {
    dk__sp_tok t = p->cur;
    char tmp[4];
    if (t.kind != kind) dk__sp_expected(p, dk__sp_kind_name(kind, tmp));
    dk__sp_advance(p);
    return t;
}

DK__PRIVATE const char *dk__sp_text(dk__sp *p, dk__sp_tok t) { return dk__sp_strndup(p, p->src + t.start, t.end - t.start); }
DK__PRIVATE const char *dk__sp_ident(dk__sp *p) { return dk__sp_text(p, dk__sp_expect(p, DK__TK_IDENT)); }
/* An argument's or a return's name: static when it is one letter or one of
   the names aten's schemas use most (as the static leaf types: a def's copy
   keeps no bytes for it), else the arena's. */
static const char dk__sp_letters[26][2] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m",
                                            "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z" };
static const char *const dk__sp_common_names[] = {
    "self", "out", "other", "dim", "input", "weight", "stride", "padding", "grad_output", "dtype", "dilation",
    "size", "keepdim", "bias", "output_size", "device", "layout", "pin_memory", "indices", "groups", "kernel_size",
    "generator", "alpha", "index", "values", "src", "mask", "scale", "result"
};
DK__PRIVATE const char *dk__sp_name(dk__sp *p) {
    dk__sp_tok t = dk__sp_expect(p, DK__TK_IDENT);
    const char *s = p->src + t.start;
    size_t n = t.end - t.start, i;
    if (n == 1 && *s >= 'a' && *s <= 'z') return dk__sp_letters[*s - 'a'];
    for (i = 0; i < sizeof dk__sp_common_names / sizeof dk__sp_common_names[0]; i++)
        if (dk__sp_common_names[i][0] == *s && !strncmp(dk__sp_common_names[i], s, n) && !dk__sp_common_names[i][n])
            return dk__sp_common_names[i];
    return dk__sp_strndup(p, s, n);
}
/* Inlined: w is a literal, its length a constant. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
DK_INLINE int dk__sp_is_word(const dk__sp *p, const char *w) {
    size_t n = p->cur.end - p->cur.start;
    return p->cur.kind == DK__TK_IDENT && strlen(w) == n && !memcmp(p->src + p->cur.start, w, n);
}

/* The token of that kind at the cursor (an identifier, a number), into b:
   no copy of its own in the arena. */
DK__PRIVATE void dk__sp_put_ident(dk__sp *p, dk__sp_buf *b, int kind) {
    dk__sp_tok t = dk__sp_expect(p, kind);
    dk__sp_put(p, b, p->src + t.start, t.end - t.start);
}

/* --- numbers: std::stoll / std::stod as c10 calls them, c10's printing ---- */

/* std::stoll of text (base 10, leading digits only: "0x10" is 0). */
DK__PRIVATE int64_t dk__sp_stoll(dk__sp *p, const char *text, size_t pos) {
    const char *s = text;
    int neg = *s == '-';
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
    if (neg) s++;
    if (!dk__sp_digit(*s)) dk__sp_fail(p, pos, "invalid integer literal '%s'", text);
    for (; dk__sp_digit(*s); s++) {
        if (v > (limit - (uint64_t)(*s - '0')) / 10u) dk__sp_fail(p, pos, "integer literal '%s' out of range", text);
        v = v * 10u + (uint64_t)(*s - '0');
    }
    return neg ? (int64_t)(0u - v) : (int64_t)v;
}

/* strtod in the "C" locale whatever the program's locale is. */
DK__PRIVATE double dk__sp_strtod(dk__sp *p, const char *s) {
    const char *dp = localeconv()->decimal_point;
    size_t n, k, i;
    char *copy;
    if (!dp || !strcmp(dp, ".") || !strchr(s, '.')) return strtod(s, NULL);
    n = strlen(s);
    k = strlen(dp);
    copy = (char *)dk__sp_alloc(p, n * k + 1);
    for (i = 0; *s; s++) {
        if (*s == '.') memcpy(copy + i, dp, k), i += k;
        else copy[i++] = *s;
    }
    copy[i] = '\0';
    return strtod(copy, NULL);
}

/* std::stod: the text must start with a number; out of range (overflow, or
   a nonzero value that underflows to a subnormal or zero) is an error. */
DK__PRIVATE double dk__sp_stod(dk__sp *p, const char *text, size_t pos) {
    const char *s = text + (*text == '-'), *m;
    int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X'), nonzero = 0;
    double d;
    if (!dk__sp_digit(*s) && !(*s == '.' && dk__sp_digit(s[1])))
        dk__sp_fail(p, pos, "invalid floating-point literal '%s'", text);
    for (m = s + (hex ? 2 : 0); *m && *m != (hex ? 'p' : 'e') && *m != (hex ? 'P' : 'E'); m++)
        if ((hex ? dk__sp_xdigit(*m) : dk__sp_digit(*m)) && *m != '0') nonzero = 1;
    d = dk__sp_strtod(p, text);
    if (d - d != 0 || (d != 0 && (d < 0 ? -d : d) < DBL_MIN) || (d == 0 && nonzero))
        dk__sp_fail(p, pos, "floating-point literal '%s' out of range", text);
    return d;
}

/* c10's IValue printing of a double: an integral value that fits int64
   prints as "3."; everything else as %.17g ("0.10000000000000001"). */
DK__PRIVATE void dk__sp_put_double(dk__sp *p, dk__sp_buf *b, double d) {
    char buf[40], *q;
    const char *dp = localeconv()->decimal_point;
    double a = d < 0 ? -d : d;
    if ((d == 0 || a >= DBL_MIN) && d >= -9223372036854775808.0 && d < 9223372036854775808.0 &&
        (double)(int64_t)d == d) {
        snprintf(buf, sizeof buf, "%lld.", (long long)(int64_t)d);
    } else {
        snprintf(buf, sizeof buf, "%.17g", d);
        if (dp && strcmp(dp, ".") && (q = strstr(buf, dp)) != NULL) {
            *q = '.';
            memmove(q + 1, q + strlen(dp), strlen(q + strlen(dp)) + 1);
        }
    }
    dk__sp_puts(p, b, buf);
}

/* --- types ----------------------------------------------------------------- */

typedef struct dk__sp_node { dk_type pub; int depth; } dk__sp_node;
typedef struct dk__sp_list { const dk_type **v; int n, cap; } dk__sp_list;

DK__PRIVATE void dk__sp_push(dk__sp *p, dk__sp_list *l, const dk_type *t) {
    l->v = (const dk_type **)dk__sp_grow_array(p, (void *)l->v, l->n, &l->cap, sizeof *l->v);
    l->v[l->n++] = t;
}

DK__PRIVATE int dk__sp_eq(const dk_type *a, const dk_type *b) {
    return a == b || (a->kind == b->kind && !strcmp(a->str, b->str));
}
DK__PRIVATE int dk__sp_numeric(const dk_type *t) {
    return t->kind == DK_TYPE_Int || t->kind == DK_TYPE_Float || t->kind == DK_TYPE_Complex;
}
DK__PRIVATE int dk__sp_any_kind(const dk_type *const *v, int n, dk_type_kind k) {
    int i;
    for (i = 0; i < n; i++)
        if (v[i]->kind == k) return 1;
    return 0;
}
DK__PRIVATE int dk__sp_has_kind(const dk_type *u, dk_type_kind k) { return dk__sp_any_kind(u->contained, u->num_contained, k); }
/* Members int, float and complex: c10 prints them as one "Scalar". */
DK__PRIVATE int dk__sp_numbers(const dk_type *const *v, int n) {
    return dk__sp_any_kind(v, n, DK_TYPE_Int) && dk__sp_any_kind(v, n, DK_TYPE_Float) && dk__sp_any_kind(v, n, DK_TYPE_Complex);
}
DK__PRIVATE int dk__sp_holds_number(const dk_type *u) { return dk__sp_numbers(u->contained, u->num_contained); }

DK__PRIVATE void dk__sp_put_union_str(dk__sp *p, dk__sp_buf *b, const dk_type *u) {
    int i, number = dk__sp_holds_number(u), n = 0;
    dk__sp_puts(p, b, "Union(");
    for (i = 0; i < u->num_contained; i++) {
        if (number && dk__sp_numeric(u->contained[i])) continue;
        if (n++) dk__sp_puts(p, b, ", ");
        dk__sp_puts(p, b, u->contained[i]->str);
    }
    if (number) dk__sp_puts(p, b, n ? ", Scalar" : "Scalar");
    dk__sp_puts(p, b, ")");
}

/* The leaf type of each kind named by its kind alone ("Tensor", "int"; ""
   for the other kinds): every schema's, static (a schema points at them,
   and owns the rest of its nodes). */
#define DK__TYPE_STATIC(name, text, base) { { DK_TYPE_##name, text, 0, NULL }, 1 },
static const dk__sp_node dk__sp_static_types[DK__TYPE_END] = { DK_FORALL_TYPE_KINDS(DK__TYPE_STATIC) };
#undef DK__TYPE_STATIC
/* And the Optional and the List of each ("Tensor?", "int[]"), the List of
   that Optional ("Tensor?[]") and the Optional of that List ("int[]?"):
   static too (only those of the kinds with a name are ever used). */
#define DK__TYPE_KID(name, text, base) &dk__sp_static_types[DK_TYPE_##name].pub,
static const dk_type *const dk__sp_static_kids[DK__TYPE_END] = { DK_FORALL_TYPE_KINDS(DK__TYPE_KID) };
#undef DK__TYPE_KID
#define DK__TYPE_OPT(name, text, base) { { DK_TYPE_Optional, text "?", 1, &dk__sp_static_kids[DK_TYPE_##name] }, 2 },
#define DK__TYPE_LIST(name, text, base) { { DK_TYPE_List, text "[]", 1, &dk__sp_static_kids[DK_TYPE_##name] }, 2 },
static const dk__sp_node dk__sp_static_optionals[DK__TYPE_END] = { DK_FORALL_TYPE_KINDS(DK__TYPE_OPT) };
static const dk__sp_node dk__sp_static_lists[DK__TYPE_END] = { DK_FORALL_TYPE_KINDS(DK__TYPE_LIST) };
#undef DK__TYPE_OPT
#undef DK__TYPE_LIST
#define DK__TYPE_KID(name, text, base) &dk__sp_static_optionals[DK_TYPE_##name].pub,
static const dk_type *const dk__sp_static_optional_kids[DK__TYPE_END] = { DK_FORALL_TYPE_KINDS(DK__TYPE_KID) };
#undef DK__TYPE_KID
#define DK__TYPE_KID(name, text, base) &dk__sp_static_lists[DK_TYPE_##name].pub,
static const dk_type *const dk__sp_static_list_kids[DK__TYPE_END] = { DK_FORALL_TYPE_KINDS(DK__TYPE_KID) };
#undef DK__TYPE_KID
#define DK__TYPE_LIST_OPT(name, text, base) \
    { { DK_TYPE_List, text "?[]", 1, &dk__sp_static_optional_kids[DK_TYPE_##name] }, 3 },
#define DK__TYPE_OPT_LIST(name, text, base) \
    { { DK_TYPE_Optional, text "[]?", 1, &dk__sp_static_list_kids[DK_TYPE_##name] }, 3 },
static const dk__sp_node dk__sp_static_list_optionals[DK__TYPE_END] = { DK_FORALL_TYPE_KINDS(DK__TYPE_LIST_OPT) };
static const dk__sp_node dk__sp_static_optional_lists[DK__TYPE_END] = { DK_FORALL_TYPE_KINDS(DK__TYPE_OPT_LIST) };
#undef DK__TYPE_LIST_OPT
#undef DK__TYPE_OPT_LIST
/* The static node of `kind` (Optional or List) of kid, or NULL. */
#define DK__SP_IN(table, t) ((size_t)((uintptr_t)(t) - (uintptr_t)(table)) < sizeof(table))
DK__PRIVATE const dk_type *dk__sp_static_of(dk_type_kind kind, const dk_type *kid) {
    const dk__sp_node *k = (const dk__sp_node *)(const void *)kid;
    if (DK__SP_IN(dk__sp_static_types, k))
        return kind == DK_TYPE_Optional ? &dk__sp_static_optionals[k - dk__sp_static_types].pub
                                        : &dk__sp_static_lists[k - dk__sp_static_types].pub;
    if (kind == DK_TYPE_List && DK__SP_IN(dk__sp_static_optionals, k))
        return &dk__sp_static_list_optionals[k - dk__sp_static_optionals].pub;
    if (kind == DK_TYPE_Optional && DK__SP_IN(dk__sp_static_lists, k))
        return &dk__sp_static_optional_lists[k - dk__sp_static_lists].pub;
    return NULL;
}
#undef DK__SP_IN

/* c10's Type::str() of a new node. */
DK__PRIVATE const char *dk__sp_type_str(dk__sp *p, const dk_type *t, const char *name) {
    dk__sp_buf b = { NULL, 0, 0 };
    const char *open = t->kind == DK_TYPE_Dict ? "Dict(" : t->kind == DK_TYPE_Future ? "Future("
                     : t->kind == DK_TYPE_RRef ? "RRef(" : "(";
    int i;
    if (name) return name;
    if (*dk__sp_static_types[t->kind].pub.str) return dk__sp_static_types[t->kind].pub.str;
    if (t->kind == DK_TYPE_List || t->kind == DK_TYPE_Optional) {
        dk__sp_puts(p, &b, t->contained[0]->str);
        dk__sp_puts(p, &b, t->kind == DK_TYPE_List ? "[]" : "?");
        return dk__sp_done(p, &b);
    }
    if (t->kind == DK_TYPE_Union) {
        dk__sp_put_union_str(p, &b, t);
        return dk__sp_done(p, &b);
    }
    dk__sp_puts(p, &b, open);
    for (i = 0; i < t->num_contained; i++) {
        if (i) dk__sp_puts(p, &b, ", ");
        dk__sp_puts(p, &b, t->contained[i]->str);
    }
    dk__sp_puts(p, &b, ")");
    return dk__sp_done(p, &b);
}

DK__PRIVATE const dk_type *dk__sp_type(dk__sp *p, dk_type_kind kind, int n, const dk_type *const *kids, const char *name) {
    dk__sp_node *t;
    const dk_type **v;
    int i, depth = 0;
    if (!n && !name && *dk__sp_static_types[kind].pub.str) return &dk__sp_static_types[kind].pub;
    if (n == 1 && !name && (kind == DK_TYPE_Optional || kind == DK_TYPE_List) && (t = (dk__sp_node *)(uintptr_t)dk__sp_static_of(kind, kids[0])) != NULL)
        return &t->pub;
    t = (dk__sp_node *)dk__sp_alloc(p, sizeof *t);
    v = n ? (const dk_type **)dk__sp_alloc(p, (size_t)n * sizeof *v) : NULL;
    for (i = 0; i < n; i++) {
        v[i] = kids[i];
        if (((const dk__sp_node *)kids[i])->depth > depth) depth = ((const dk__sp_node *)kids[i])->depth;
    }
    if (depth >= DK__SP_MAX_DEPTH) dk__sp_fail(p, p->at, "types nested deeper than %d", DK__SP_MAX_DEPTH);
    t->depth = depth + 1;
    t->pub.kind = kind;
    t->pub.num_contained = n;
    t->pub.contained = v;
    t->pub.str = dk__sp_type_str(p, &t->pub, name);
    return &t->pub;
}

DK__PRIVATE const dk_type *dk__sp_basic(dk__sp *p, dk_type_kind kind) {
    if (!p->basic[kind]) p->basic[kind] = dk__sp_type(p, kind, 0, NULL, NULL);
    return p->basic[kind];
}
DK__PRIVATE const dk_type *dk__sp_type1(dk__sp *p, dk_type_kind kind, const dk_type *kid) {
    return dk__sp_type(p, kind, 1, &kid, NULL);
}

/* c10's isSubtypeOf, restricted to the types a schema can spell. */
DK__PRIVATE int dk__sp_subtype(const dk_type *a, const dk_type *b) {
    int i;
    if (b->kind == DK_TYPE_Any || dk__sp_eq(a, b)) return 1;
    if (a->kind == DK_TYPE_Union) {
        for (i = 0; i < a->num_contained; i++)
            if (!dk__sp_subtype(a->contained[i], b)) return 0;
        return 1;
    }
    if (a->kind == DK_TYPE_Optional) {
        if (b->kind == DK_TYPE_Optional) return dk__sp_subtype(a->contained[0], b->contained[0]);
        return b->kind == DK_TYPE_Union && dk__sp_has_kind(b, DK_TYPE_None) && dk__sp_subtype(a->contained[0], b);
    }
    if (b->kind == DK_TYPE_Optional) return a->kind == DK_TYPE_None || dk__sp_subtype(a, b->contained[0]);
    if (b->kind == DK_TYPE_Union) {
        for (i = 0; i < b->num_contained; i++)
            if (dk__sp_subtype(a, b->contained[i])) return 1;
        return a->kind == DK_TYPE_Number && dk__sp_holds_number(b);
    }
    if (b->kind == DK_TYPE_Number) return dk__sp_numeric(a);
    if (b->kind == DK_TYPE_AnyClass) return a->kind == DK_TYPE_Class;
    if (a->kind == DK_TYPE_Var && b->kind == DK_TYPE_Var) return 1; /* c10 unifies any two */
    if (a->kind != b->kind || a->num_contained != b->num_contained) return 0;
    if (a->kind != DK_TYPE_Tuple && a->kind != DK_TYPE_Future) return 0; /* lists, dicts: invariant */
    for (i = 0; i < a->num_contained; i++)
        if (!dk__sp_subtype(a->contained[i], b->contained[i])) return 0;
    return 1;
}

DK__PRIVATE const dk_type *dk__sp_optional(dk__sp *p, const dk_type *x);

/* c10's unifyTypes(a, b) without default_to_union; NULL if none. */
DK__PRIVATE const dk_type *dk__sp_unify(dk__sp *p, const dk_type *a, const dk_type *b) {
    const dk_type *u;
    dk__sp_list l = { NULL, 0, 0 };
    int i;
    if (dk__sp_subtype(a, b)) return b;
    if (dk__sp_subtype(b, a)) return a;
    if ((a->kind == DK_TYPE_None) != (b->kind == DK_TYPE_None)) return dk__sp_optional(p, a->kind == DK_TYPE_None ? b : a);
    if (a->kind == DK_TYPE_Optional || b->kind == DK_TYPE_Optional) {
        const dk_type *o = a->kind == DK_TYPE_Optional ? a : b, *other = o == a ? b : a;
        return (u = dk__sp_unify(p, o->contained[0], other)) != NULL ? dk__sp_optional(p, u) : NULL;
    }
    if (a->kind != b->kind || a->num_contained != b->num_contained) return NULL;
    if (a->kind == DK_TYPE_Future)
        return (u = dk__sp_unify(p, a->contained[0], b->contained[0])) != NULL ? dk__sp_type1(p, DK_TYPE_Future, u) : NULL;
    if (a->kind != DK_TYPE_Tuple) return NULL;
    for (i = 0; i < a->num_contained; i++) {
        if (!(u = dk__sp_unify(p, a->contained[i], b->contained[i]))) return NULL;
        dk__sp_push(p, &l, u);
    }
    return dk__sp_type(p, DK_TYPE_Tuple, l.n, l.v, NULL);
}

/* Union members: nested Unions and Optionals flattened, Scalar split into
   int, float and complex. */
DK__PRIVATE void dk__sp_member(dk__sp *p, dk__sp_list *out, const dk_type *t) {
    if (out->n >= DK__SP_MAX_UNION) dk__sp_fail(p, p->at, "a Union of more than %d members", DK__SP_MAX_UNION);
    dk__sp_push(p, out, t);
}
DK__PRIVATE void dk__sp_flatten(dk__sp *p, const dk_type *t, dk__sp_list *out) {
    int i;
    if (t->kind == DK_TYPE_Union) {
        for (i = 0; i < t->num_contained; i++) dk__sp_flatten(p, t->contained[i], out);
    } else if (t->kind == DK_TYPE_Optional) {
        dk__sp_flatten(p, t->contained[0], out);
        dk__sp_member(p, out, dk__sp_basic(p, DK_TYPE_None));
    } else if (t->kind == DK_TYPE_Number) {
        dk__sp_member(p, out, dk__sp_basic(p, DK_TYPE_Int));
        dk__sp_member(p, out, dk__sp_basic(p, DK_TYPE_Float));
        dk__sp_member(p, out, dk__sp_basic(p, DK_TYPE_Complex));
    } else {
        dk__sp_member(p, out, t);
    }
}

/* c10's filterDuplicateSubtypes: from the right, merge each member into
   the first earlier one it unifies with (None only merges with None). */
DK__PRIVATE void dk__sp_filter(dk__sp *p, dk__sp_list *l) {
    int i, j, end = l->n - 1;
    const dk_type *u;
    for (i = l->n - 1; i > 0; i--) {
        for (j = i - 1 < end ? i - 1 : end; j >= 0; j--) {
            if ((l->v[i]->kind == DK_TYPE_None) != (l->v[j]->kind == DK_TYPE_None)) continue;
            if ((u = dk__sp_unify(p, l->v[i], l->v[j])) != NULL) {
                l->v[j] = u;
                l->v[i] = l->v[end--];
                break;
            }
        }
    }
    l->n = end + 1;
}

DK__PRIVATE int dk__sp_before(const dk_type *a, const dk_type *b) {
    return a->kind != b->kind ? a->kind < b->kind : strcmp(a->str, b->str) < 0;
}

/* Flatten, merge, sort by (kind, str): c10's standardizeVectorForUnion. */
DK__PRIVATE dk__sp_list dk__sp_standardize(dk__sp *p, const dk_type *const *v, int n) {
    dk__sp_list l = { NULL, 0, 0 };
    int i, j;
    for (i = 0; i < n; i++) dk__sp_flatten(p, v[i], &l);
    dk__sp_filter(p, &l);
    for (i = 1; i < l.n; i++) {
        const dk_type *t = l.v[i];
        for (j = i; j > 0 && dk__sp_before(t, l.v[j - 1]); j--) l.v[j] = l.v[j - 1];
        l.v[j] = t;
    }
    return l;
}

DK__PRIVATE DK__SP_NORETURN void dk__sp_single(dk__sp *p, const dk_type *const *v, int n, const dk_type *single) {
    dk__sp_buf b = { NULL, 0, 0 };
    int i;
    for (i = 0; i < n; i++) {
        if (i) dk__sp_puts(p, &b, ", ");
        dk__sp_puts(p, &b, v[i]->str);
    }
    dk__sp_fail(p, p->at, "after type unification the Union of {%s} has the single type %s; use that type",
                dk__sp_done(p, &b), single->str);
}

DK__PRIVATE const dk_type *dk__sp_other_than_none(const dk__sp_list *l) {
    return l->v[0]->kind == DK_TYPE_None ? l->v[1] : l->v[0];
}

/* c10's UnionType::create: a Union of T and None is Optional(T). */
DK__PRIVATE const dk_type *dk__sp_union(dk__sp *p, const dk_type *const *v, int n) {
    dk__sp_list l = dk__sp_standardize(p, v, n);
    if (l.n == 1) dk__sp_single(p, v, n, l.v[0]);
    if (dk__sp_any_kind(l.v, l.n, DK_TYPE_None)) {
        if (l.n == 4 && dk__sp_numbers(l.v, l.n)) return dk__sp_optional(p, dk__sp_basic(p, DK_TYPE_Number));
        if (l.n == 2) return dk__sp_optional(p, dk__sp_other_than_none(&l));
    }
    return dk__sp_type(p, DK_TYPE_Union, l.n, l.v, NULL);
}

/* c10's OptionalType(x): T?? is T?, Union(int, float, complex)? is Scalar?,
   a Union loses its None; None? is an error. (c10 makes Scalar?? a
   "Union(Scalar)?", which reads back as Scalar?: here it is Scalar?.) */
DK__PRIVATE const dk_type *dk__sp_optional(dk__sp *p, const dk_type *x) {
    const dk_type *pair[2], *c;
    dk__sp_list l, rest = { NULL, 0, 0 };
    int i;
    if (x->kind == DK_TYPE_Optional) return x;
    pair[0] = x;
    pair[1] = dk__sp_basic(p, DK_TYPE_None);
    l = dk__sp_standardize(p, pair, 2);
    if (l.n == 1) dk__sp_single(p, pair, 2, l.v[0]);
    if (l.n == 2) {
        c = dk__sp_other_than_none(&l);
    } else if (x->kind == DK_TYPE_Number || (x->kind == DK_TYPE_Union && x->num_contained == 3 && dk__sp_holds_number(x))) {
        c = dk__sp_basic(p, DK_TYPE_Number);
    } else {
        for (i = 0; i < l.n; i++)
            if (l.v[i]->kind != DK_TYPE_None) dk__sp_push(p, &rest, l.v[i]);
        c = dk__sp_union(p, rest.v, rest.n);
    }
    return dk__sp_type1(p, DK_TYPE_Optional, c);
}

/* c10's fake type: ScalarType, Layout, MemoryFormat and SymInt are ints
   (containers other than List and Optional already hold fake types). */
DK__PRIVATE const dk_type *dk__sp_fake(dk__sp *p, const dk_type *t) {
    const dk_type *c;
    switch (t->kind) {
    case DK_TYPE_ScalarType: case DK_TYPE_Layout: case DK_TYPE_MemoryFormat: case DK_TYPE_SymInt:
        return dk__sp_basic(p, DK_TYPE_Int);
    case DK_TYPE_List: case DK_TYPE_Optional:
        c = dk__sp_fake(p, t->contained[0]);
        return c == t->contained[0] ? t : dk__sp_type1(p, t->kind, c);
    default:
        return t;
    }
}

/* c10's DispatchKeyExtractor test: a subtype of Tensor, Tensor[], Tensor?[]
   or Tensor?, i.e. exactly these types (None is a subtype of Tensor?). */
DK__PRIVATE int dk__sp_is_dispatch(const dk_type *fake) {
    static const char *const names[] = { "Tensor", "Tensor?", "Tensor[]", "Tensor?[]", "NoneType" };
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(fake->str, names[i])) return fake->kind != DK_TYPE_Union;
    return 0;
}

/* --- alias annotations ----------------------------------------------------- */

typedef struct dk__sp_names { const char **v; int n, cap; } dk__sp_names;

enum { DK__SP_FEW_NAMES = 16 };       /* sets up to this size are kept unique as they grow */

DK__PRIVATE void dk__sp_add_name(dk__sp *p, dk__sp_names *s, const char *name) {
    int i;
    for (i = 0; i < s->n && i < DK__SP_FEW_NAMES; i++) {
        DK__SCHEMA_STEPS(1);
        if (!strcmp(s->v[i], name)) return;
    }
    s->v = (const char **)dk__sp_grow_array(p, (void *)s->v, s->n, &s->cap, sizeof *s->v);
    s->v[s->n++] = name;
}

/* A name and its place in the set, sorted by (name, place). */
typedef struct dk__sp_named { const char *name; int at; } dk__sp_named;
static int dk__sp_named_cmp(const void *a, const void *b) {
    const dk__sp_named *x = (const dk__sp_named *)a, *y = (const dk__sp_named *)b;
    int c = strcmp(x->name, y->name);
    DK__SCHEMA_STEPS(1);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* A big set's repeated names dropped, the first of each kept in source
   order: one sort, n log n (a scan per name made a 0.3 MB set take seconds). */
DK__PRIVATE void dk__sp_unique_names(dk__sp *p, dk__sp_names *s) {
    dk__sp_named *t = (dk__sp_named *)dk__sp_alloc(p, (size_t)s->n * sizeof *t);
    char *keep = (char *)dk__sp_alloc(p, (size_t)s->n);
    int i, n = 0;
    for (i = 0; i < s->n; i++) {
        t[i].name = s->v[i];
        t[i].at = i;
        keep[i] = 0;
    }
    qsort(t, (size_t)s->n, sizeof *t, dk__sp_named_cmp);
    for (i = 0; i < s->n; i++)
        if (i == 0 || strcmp(t[i].name, t[i - 1].name)) keep[t[i].at] = 1;
    for (i = 0; i < s->n; i++)
        if (keep[i]) s->v[n++] = s->v[i];
    s->n = n;
}

/* a|b|*: after a wildcard, c10 takes no more names (only more wildcards). */
DK__PRIVATE void dk__sp_alias_sets(dk__sp *p, dk__sp_names *s) {
    int wildcard = 0;
    do {
        if (dk__sp_accept(p, '*')) {
            dk__sp_add_name(p, s, "*");
            wildcard = 1;
        } else if (!wildcard) {
            if (p->cur.kind != DK__TK_IDENT && p->cur.kind != DK__TK_ALIAS_ID) dk__sp_expected(p, "ident");
            dk__sp_add_name(p, s, dk__sp_text(p, p->cur));
            dk__sp_advance(p);
        }
    } while (dk__sp_accept(p, '|'));
    if (s->n > DK__SP_FEW_NAMES) dk__sp_unique_names(p, s);
}

DK__PRIVATE dk_alias_info *dk__sp_alias_new(dk__sp *p, const dk__sp_names *before, const dk__sp_names *after, int write) {
    dk_alias_info *a = (dk_alias_info *)dk__sp_alloc(p, sizeof *a);
    a->num_before = before->n;
    a->before = before->v;
    a->num_after = after->n;
    a->after = after->v;
    a->is_write = write;
    return a;
}

/* (sets[!] [-> sets]) or a bare '!' (a fresh set, empty after-set); NULL if
   neither. An annotation that names no set ("(!)", "()", "( -> a)") only
   where c10 prints one (empty_ok: right after "[]" or "?", a list's own
   annotation); elsewhere, as in c10, "expected ident but found '!'". */
DK__PRIVATE dk_alias_info *dk__sp_alias(dk__sp *p, int empty_ok) {
    dk__sp_names before = { NULL, 0, 0 }, after = { NULL, 0, 0 };
    char fresh[24];
    int write;
    if (dk__sp_accept(p, '!')) {
        snprintf(fresh, sizeof fresh, "$%d", p->fresh++);
        dk__sp_add_name(p, &before, dk__sp_strndup(p, fresh, strlen(fresh)));
        return dk__sp_alias_new(p, &before, &after, 1);
    }
    if (!dk__sp_accept(p, '(')) return NULL;
    if (!empty_ok || (p->cur.kind != '!' && p->cur.kind != DK__TK_ARROW && p->cur.kind != ')'))
        dk__sp_alias_sets(p, &before);
    else
        p->empty = p->cur;
    write = dk__sp_accept(p, '!');
    if (!dk__sp_accept(p, DK__TK_ARROW)) after = before;
    else if (p->cur.kind != ')') dk__sp_alias_sets(p, &after);
    dk__sp_expect(p, ')');
    return dk__sp_alias_new(p, &before, &after, write);
}

/* The annotation of a list built from an annotated element type: c10 makes
   an (empty, same write flag) container annotation to hold the element's. */
DK__PRIVATE dk_alias_info *dk__sp_container(dk__sp *p, dk_alias_info *outer, dk_alias_info *inner) {
    dk__sp_names none = { NULL, 0, 0 };
    if (!inner) return outer;
    if (!outer) outer = dk__sp_alias_new(p, &none, &none, inner->is_write);
    outer->contained = inner;
    return outer;
}

/* --- type parser ----------------------------------------------------------- */

DK__PRIVATE const dk_type *dk__sp_parse_type(dk__sp *p, int fake, dk_alias_info **alias);

DK__PRIVATE const dk_type *dk__sp_nested(dk__sp *p) {
    dk_alias_info *ignored;
    return dk__sp_parse_type(p, 1, &ignored);
}

/* (T, ...), Future(T), RRef(T), Dict(K, V), Union(T, ...): elements are
   fake types and their annotations are dropped, as in c10. */
DK__PRIVATE const dk_type *dk__sp_parse_tuple(dk__sp *p) {
    dk__sp_list l = { NULL, 0, 0 };
    dk__sp_expect(p, '(');
    if (p->cur.kind != ')') {
        do dk__sp_push(p, &l, dk__sp_nested(p));
        while (dk__sp_accept(p, ','));
    }
    dk__sp_expect(p, ')');
    return dk__sp_type(p, DK_TYPE_Tuple, l.n, l.v, NULL);
}

DK__PRIVATE const dk_type *dk__sp_parse_wrapper(dk__sp *p, dk_type_kind kind) {
    const dk_type *e;
    dk__sp_advance(p);
    dk__sp_expect(p, '(');
    e = dk__sp_nested(p);
    dk__sp_expect(p, ')');
    return dk__sp_type1(p, kind, e);
}

/* c10's DictType::create allows only these key types. */
DK__PRIVATE void dk__sp_check_key(dk__sp *p, const dk_type *key, size_t pos) {
    switch (key->kind) {
    case DK_TYPE_Any: case DK_TYPE_Int: case DK_TYPE_Bool: case DK_TYPE_Float: case DK_TYPE_Complex:
    case DK_TYPE_String: case DK_TYPE_Tensor: case DK_TYPE_DeviceObj:
        return;
    default:
        dk__sp_fail(p, pos, "Cannot create dict for key type '%s', only int, float, complex, Tensor, device and "
                    "string keys are supported", key->str);
    }
}

DK__PRIVATE const dk_type *dk__sp_parse_dict(dk__sp *p, dk_alias_info **alias) {
    const dk_type *kv[2];
    size_t pos;
    dk__sp_advance(p);
    dk__sp_expect(p, '(');
    pos = p->cur.start;
    kv[0] = dk__sp_nested(p);
    dk__sp_check_key(p, kv[0], pos);
    dk__sp_expect(p, ',');
    kv[1] = dk__sp_nested(p);
    dk__sp_expect(p, ')');
    *alias = dk__sp_alias(p, 0);
    return dk__sp_type(p, DK_TYPE_Dict, 2, kv, NULL);
}

DK__PRIVATE const dk_type *dk__sp_parse_union(dk__sp *p, dk_alias_info **alias) {
    dk__sp_list l = { NULL, 0, 0 };
    dk__sp_advance(p);
    dk__sp_expect(p, '(');
    dk__sp_push(p, &l, dk__sp_nested(p));
    while (p->cur.kind != ')') {
        dk__sp_expect(p, ',');
        if (l.n >= DK__SP_MAX_UNION) dk__sp_fail(p, p->cur.start, "a Union of more than %d members", DK__SP_MAX_UNION);
        dk__sp_push(p, &l, dk__sp_nested(p));
    }
    dk__sp_expect(p, ')');
    *alias = dk__sp_alias(p, 0);
    return dk__sp_union(p, l.v, l.n);
}

DK__PRIVATE void dk__sp_expect_word(dk__sp *p, const char *w) {
    if (p->cur.kind == DK__TK_IDENT && !dk__sp_is_word(p, w))
        dk__sp_fail(p, p->cur.start, "Expected classes namespace but got %.*s",
                    (int)(p->cur.end - p->cur.start), p->src + p->cur.start);
    dk__sp_expect(p, DK__TK_IDENT);
    dk__sp_expect(p, '.');
}

/* __torch__.torch.classes.ns.Cls (not looked up: see the deviations). */
DK__PRIVATE const dk_type *dk__sp_parse_class(dk__sp *p) {
    dk__sp_buf b = { NULL, 0, 0 };
    dk__sp_advance(p);
    dk__sp_expect(p, '.');
    dk__sp_expect_word(p, "torch");
    dk__sp_expect_word(p, "classes");
    dk__sp_puts(p, &b, "__torch__.torch.classes.");
    dk__sp_put_ident(p, &b, DK__TK_IDENT);
    dk__sp_expect(p, '.');
    dk__sp_puts(p, &b, ".");
    dk__sp_put_ident(p, &b, DK__TK_IDENT);
    return dk__sp_type(p, DK_TYPE_Class, 0, NULL, dk__sp_done(p, &b));
}

/* A named base type; an unknown lower-case name is a type variable. */
DK__PRIVATE const dk_type *dk__sp_parse_base(dk__sp *p, int fake) {
#define DK__BASE_TYPE(name, text, base) { text, DK_TYPE_##name, base },
    /* the list's base types, and two names c10's parser maps to others */
    static const struct { const char *name; dk_type_kind kind; int base; } base[] = {
        DK_FORALL_TYPE_KINDS(DK__BASE_TYPE) { "Dimname", DK_TYPE_String, 1 }, { "ConstQuantizerPtr", DK_TYPE_Int, 1 }
    };
#undef DK__BASE_TYPE
    dk__sp_tok t = p->cur;
    size_t i;
    if (dk__sp_accept(p, DK__TK_NONE) || dk__sp_accept(p, DK__TK_NONETYPE)) return dk__sp_basic(p, DK_TYPE_None);
    dk__sp_expect(p, DK__TK_IDENT);
    for (i = 0; i < sizeof base / sizeof base[0]; i++)
        if (base[i].base && base[i].name[0] == p->src[t.start] && strlen(base[i].name) == t.end - t.start &&
            !memcmp(base[i].name, p->src + t.start, t.end - t.start))
            return dk__sp_basic(p, fake && base[i].base == 2 ? DK_TYPE_Int : base[i].kind);
    if (p->src[t.start] >= 'a' && p->src[t.start] <= 'z') return dk__sp_type(p, DK_TYPE_Var, 0, NULL, dk__sp_text(p, t));
    dk__sp_fail(p, t.start, "unknown type specifier '%.*s'", (int)(t.end - t.start), p->src + t.start);
    return NULL; /* not reached (tcc) */
}

/* T[] and T? suffixes; a list takes over its element's annotation. */
DK__PRIVATE const dk_type *dk__sp_parse_suffixes(dk__sp *p, const dk_type *t, dk_alias_info **alias) {
    for (;;) {
        if (p->cur.kind == '[' && dk__sp_peek(p)->kind == ']') {
            dk__sp_advance(p);
            dk__sp_advance(p);
            t = dk__sp_type1(p, DK_TYPE_List, t);
            *alias = dk__sp_container(p, dk__sp_alias(p, 1), *alias);
        } else if (dk__sp_accept(p, '?')) {
            t = dk__sp_optional(p, t);
            if (!*alias && p->cur.kind == '(') *alias = dk__sp_alias(p, 1); /* c10 prints "Tensor?(a)[]" */
        } else {
            return t;
        }
    }
}

DK__PRIVATE const dk_type *dk__sp_parse_type(dk__sp *p, int fake, dk_alias_info **alias) {
    const dk_type *t;
    size_t outer = p->at;
    *alias = NULL;
    p->at = p->cur.start;
    if (++p->depth > DK__SP_MAX_DEPTH) dk__sp_fail(p, p->at, "types nested deeper than %d", DK__SP_MAX_DEPTH);
    if (dk__sp_is_word(p, "Dict")) t = dk__sp_parse_dict(p, alias);
    else if (dk__sp_is_word(p, "Union")) t = dk__sp_parse_union(p, alias);
    else {
        if (p->cur.kind == '(') t = dk__sp_parse_tuple(p);
        else if (dk__sp_is_word(p, "Future")) t = dk__sp_parse_wrapper(p, DK_TYPE_Future);
        else if (dk__sp_is_word(p, "RRef")) t = dk__sp_parse_wrapper(p, DK_TYPE_RRef);
        else if (dk__sp_is_word(p, "__torch__")) t = dk__sp_parse_class(p);
        else if (dk__sp_is_word(p, "Tensor")) {
            dk__sp_advance(p);
            t = dk__sp_basic(p, DK_TYPE_Tensor);
        } else {
            t = dk__sp_parse_base(p, fake);
        }
        /* on a tuple, Future, RRef or class only our extension: c10 prints "(int)(a)?" */
        *alias = dk__sp_alias(p, 0);
    }
    t = dk__sp_parse_suffixes(p, t, alias);
    p->depth--;
    p->at = outer;
    return t;
}

/* --- default values ---------------------------------------------------------- */

DK__PRIVATE dk_default *dk__sp_value(dk__sp *p, dk_default_kind kind) {
    dk_default *v = (dk_default *)dk__sp_alloc(p, sizeof *v);
    v->kind = kind;
    v->i = kind == DK_DEFAULT_DEVICE ? -1 : 0;
    return v;
}

/* The character an escape "\<in[*i]...>" stands for; *i ends on its last
   character. \xNN and \uNNNN are errors; \nnn is octal, exactly 3 digits. */
DK__PRIVATE char dk__sp_escape(dk__sp *p, const char *in, size_t n, size_t *i, size_t pos) {
    static const char from[] = "\\'\"\nabfnrvt", to[] = "\\'\"\n\a\b\f\n\r\v\t";
    const char *hit = in[*i] ? strchr(from, in[*i]) : NULL;
    size_t k = *i;
    if (hit) return to[hit - from]; /* \r too: c10 rejects it but prints it */
    if (in[k] == 'x') dk__sp_fail(p, pos, "unsupported hex specifier");
    if (in[k] == 'u' || in[k] == 'U') dk__sp_fail(p, pos, "unsupported unicode specifier");
    if (k + 2 >= n || in[k] < '0' || in[k] > '3' || in[k + 1] < '0' || in[k + 1] > '7' || in[k + 2] < '0' || in[k + 2] > '7')
        dk__sp_fail(p, pos, "ill formed octal specifier");
    *i += 2;
    return (char)((in[k] - '0') * 64 + (in[k + 1] - '0') * 8 + (in[k + 2] - '0'));
}

/* c10's parseStringLiteral: quotes off, escapes replaced. */
DK__PRIVATE dk_default *dk__sp_string(dk__sp *p, dk__sp_tok t) {
    const char *s = p->src + t.start;
    size_t ql = (t.end - t.start >= 6 && s[1] == s[0] && s[2] == s[0]) ? 3 : 1;
    size_t n = t.end - t.start - 2 * ql, i, k = 0;
    const char *in = s + ql;
    char *out = (char *)dk__sp_alloc(p, n + 1);
    dk_default *v = dk__sp_value(p, DK_DEFAULT_STRING);
    for (i = 0; i < n; i++) {
        if (in[i] != '\\') out[k++] = in[i];
        else ++i, out[k++] = dk__sp_escape(p, in, n, &i, t.start);
    }
    v->s = out;
    v->len = k;
    return v;
}

/* c10 1.13.1's device type names, in the order its error message lists
   them; LAST marks the final one (no comma after it in the message). */
#define DK__FORALL_DEVICE_TYPES(X, LAST)                                                           \
    X("cpu") X("cuda") X("ipu") X("xpu") X("mkldnn") X("opengl") X("opencl") X("ideep") X("hip")   \
    X("ve") X("fpga") X("ort") X("xla") X("lazy") X("vulkan") X("mps") X("meta") X("hpu")          \
    LAST("privateuseone")
#define DK__DEVICE_TYPE_ITEM(name) name,
#define DK__DEVICE_TYPE_LISTED(name) name ", "
#define DK__DEVICE_TYPE_LAST(name) name

/* c10's Device(string): name[:index], index without leading zeros. */
DK__PRIVATE dk_default *dk__sp_device(dk__sp *p, const char *s, size_t pos) {
    static const char *const types[] = { DK__FORALL_DEVICE_TYPES(DK__DEVICE_TYPE_ITEM, DK__DEVICE_TYPE_ITEM) };
    size_t name = 0, i;
    long index = -1;
    dk_default *v = dk__sp_value(p, DK_DEFAULT_DEVICE);
    if (!*s) dk__sp_fail(p, pos, "Device string must not be empty");
    while (dk__sp_alpha(s[name]) || s[name] == '_') name++;
    if (!name || (s[name] && (s[name] != ':' || !dk__sp_digit(s[name + 1]) || (s[name + 1] == '0' && s[name + 2]))))
        dk__sp_fail(p, pos, "Invalid device string: '%s'", s);
    for (i = name + 1; s[name] && s[i]; i++) {
        if (!dk__sp_digit(s[i])) dk__sp_fail(p, pos, "Invalid device string: '%s'", s);
        index = (index < 0 ? 0 : index) * 10 + (s[i] - '0');
        if (index > 127) dk__sp_fail(p, pos, "device index in '%s' out of range (c10's DeviceIndex is 8 bits)", s);
    }
    for (i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i]) == name && !memcmp(types[i], s, name)) break;
    if (i == sizeof types / sizeof types[0])
        dk__sp_fail(p, pos, "Expected one of " DK__FORALL_DEVICE_TYPES(DK__DEVICE_TYPE_LISTED, DK__DEVICE_TYPE_LAST)
                    " device type at start of device string: %s", s);
    v->s = s;
    v->len = strlen(s);
    v->i = index;
    return v;
}

/* A Device default: a string literal, or the bare form c10 prints. */
DK__PRIVATE dk_default *dk__sp_device_default(dk__sp *p) {
    dk__sp_buf b = { NULL, 0, 0 };
    size_t pos = p->cur.start;
    dk_default *lit;
    if (p->cur.kind == DK__TK_IDENT) {
        dk__sp_put_ident(p, &b, DK__TK_IDENT);
        if (dk__sp_accept(p, ':')) {
            dk__sp_puts(p, &b, ":");
            dk__sp_put_ident(p, &b, DK__TK_NUMBER);
        }
        return dk__sp_device(p, dk__sp_done(p, &b), pos);
    }
    lit = dk__sp_string(p, dk__sp_expect(p, DK__TK_STRING));
    if (memchr(lit->s, '\0', lit->len)) dk__sp_fail(p, pos, "Invalid device string");
    return dk__sp_device(p, lit->s, pos);
}

/* Idents c10 accepts as numeric defaults: dtype, layout, reduction and
   memory-format names (as their enum values). */
static const struct { const char *name; int value; } dk__sp_constants[] = {
    { "float", 6 }, { "complex", 9 }, { "long", 4 }, { "strided", 0 }, { "Mean", 1 }, { "contiguous_format", 0 }
};

DK__PRIVATE dk_default *dk__sp_named_constant(dk__sp *p) {
    size_t i;
    dk_default *v = dk__sp_value(p, DK_DEFAULT_INT);
    for (i = 0; i < sizeof dk__sp_constants / sizeof dk__sp_constants[0]; i++)
        if (dk__sp_is_word(p, dk__sp_constants[i].name)) {
            v->i = dk__sp_constants[i].value;
            dk__sp_advance(p);
            return v;
        }
    dk__sp_fail(p, p->cur.start, "invalid numeric default value '%.*s'", (int)(p->cur.end - p->cur.start),
                p->src + p->cur.start);
    return NULL; /* not reached (tcc) */
}

/* [-]number: complex if the type is complex or it ends in 'j' (then c10
   drops the last character and reads the rest as the imaginary part),
   float if the type is float or it has '.' or 'e', else int. Our extension:
   number [+-] number'j' (how c10 prints a complex) is a complex. */
DK__PRIVATE dk_default *dk__sp_number(dk__sp *p, dk_type_kind kind) {
    size_t pos = p->cur.start;
    int neg = dk__sp_accept(p, '-');
    dk__sp_tok t = dk__sp_expect(p, DK__TK_NUMBER);
    dk__sp_buf b = { NULL, 0, 0 };
    const char *n;
    dk_default *v;
    dk__sp_puts(p, &b, neg ? "-" : "");
    dk__sp_put(p, &b, p->src + t.start, t.end - t.start);
    n = dk__sp_done(p, &b);
    if (n[b.n - 1] != 'j' && (p->cur.kind == '+' || p->cur.kind == '-') && dk__sp_peek(p)->kind == DK__TK_NUMBER &&
        p->src[p->next.end - 1] == 'j') {
        v = dk__sp_value(p, DK_DEFAULT_COMPLEX);
        v->re = dk__sp_stod(p, n, pos);
        neg = p->cur.kind == '-';
        dk__sp_advance(p);
        t = dk__sp_expect(p, DK__TK_NUMBER);
        v->im = dk__sp_stod(p, dk__sp_strndup(p, p->src + t.start, t.end - t.start - 1), t.start);
        if (neg) v->im = -v->im;
    } else if (kind == DK_TYPE_Complex || strchr(n, 'j')) {
        v = dk__sp_value(p, DK_DEFAULT_COMPLEX);
        v->im = dk__sp_stod(p, dk__sp_strndup(p, n, b.n - 1), pos);
    } else if (kind == DK_TYPE_Float || strchr(n, '.') || strchr(n, 'e')) {
        v = dk__sp_value(p, DK_DEFAULT_DOUBLE);
        v->re = dk__sp_stod(p, n, pos);
    } else {
        v = dk__sp_value(p, DK_DEFAULT_INT);
        v->i = dk__sp_stoll(p, n, pos);
    }
    return v;
}

/* c10's parseSingleConstant. */
DK__PRIVATE dk_default *dk__sp_constant(dk__sp *p, dk_type_kind kind) {
    dk_default *v;
    switch (p->cur.kind) {
    case DK__TK_TRUE: case DK__TK_FALSE:
        v = dk__sp_value(p, DK_DEFAULT_BOOL);
        v->b = p->cur.kind == DK__TK_TRUE;
        dk__sp_advance(p);
        return v;
    case DK__TK_NONE:
        dk__sp_advance(p);
        return dk__sp_value(p, DK_DEFAULT_NONE);
    case DK__TK_STRING:
        v = dk__sp_string(p, p->cur);
        dk__sp_advance(p);
        return v;
    case DK__TK_IDENT:
        return dk__sp_named_constant(p);
    default:
        return dk__sp_number(p, kind);
    }
}

/* c10's convertToList: the elements must already have the list's kind. */
DK__PRIVATE void dk__sp_check_item(dk__sp *p, dk_type_kind kind, const dk_default *v, size_t pos) {
    dk_default_kind want = kind == DK_TYPE_Complex ? DK_DEFAULT_COMPLEX : kind == DK_TYPE_Float ? DK_DEFAULT_DOUBLE
                         : kind == DK_TYPE_Int ? DK_DEFAULT_INT : DK_DEFAULT_BOOL;
#define DK__DEFAULT_KIND_NAME(kind, name) name,
    static const char *const names[] = { DK_FORALL_DEFAULT_KINDS(DK__DEFAULT_KIND_NAME) };
#undef DK__DEFAULT_KIND_NAME
    if (v->kind != want)
        dk__sp_fail(p, pos, "a %s list cannot hold the %s default element", kind == DK_TYPE_Complex ? "complex"
                    : kind == DK_TYPE_Float ? "float" : kind == DK_TYPE_Int ? "int" : "bool", names[v->kind]);
}

DK__PRIVATE dk_default *dk__sp_list_value(dk__sp *p, const dk_default *items, size_t count) {
    dk_default *v = dk__sp_value(p, DK_DEFAULT_LIST);
    v->items = items;
    v->count = count;
    return v;
}

/* [a, b, ...] or, for a sized list, one value repeated N times. */
DK__PRIVATE dk_default *dk__sp_list_default(dk__sp *p, dk_type_kind kind, int size) {
    size_t pos = p->cur.start, i;
    int n = 0, cap = 0;
    dk_default *items = NULL, *one;
    if (kind != DK_TYPE_Complex && kind != DK_TYPE_Float && kind != DK_TYPE_Int && kind != DK_TYPE_Bool) {
        if (p->cur.kind != '[' && size < 0) dk__sp_expected(p, "'['");
        dk__sp_fail(p, pos, "lists are only supported for float, int and complex types");
    }
    if (size >= 0 && p->cur.kind != '[') {
        one = dk__sp_constant(p, kind);
        dk__sp_check_item(p, kind, one, pos);
        if (size > DK__SP_MAX_REPEAT) dk__sp_fail(p, pos, "a repeated default longer than %d elements", DK__SP_MAX_REPEAT);
        items = (dk_default *)dk__sp_alloc(p, (size_t)(size ? size : 1) * sizeof *items);
        for (i = 0; i < (size_t)size; i++) items[i] = *one;
        return dk__sp_list_value(p, items, (size_t)size);
    }
    dk__sp_expect(p, '[');
    if (p->cur.kind != ']') do {
        size_t at = p->cur.start;
        one = dk__sp_constant(p, kind);
        dk__sp_check_item(p, kind, one, at);
        items = (dk_default *)dk__sp_grow_array(p, items, n, &cap, sizeof *items);
        items[n++] = *one;
    } while (dk__sp_accept(p, ','));
    dk__sp_expect(p, ']');
    return dk__sp_list_value(p, items, (size_t)n);
}

/* c10's parseDefaultValue, by the argument's fake type. */
DK__PRIVATE dk_default *dk__sp_default(dk__sp *p, const dk_type *fake, int size) {
    dk_type_kind elem;
    switch (fake->kind) {
    case DK_TYPE_Tensor: case DK_TYPE_Generator: case DK_TYPE_Quantizer:
        dk__sp_expect(p, DK__TK_NONE);
        return dk__sp_value(p, DK_DEFAULT_NONE);
    case DK_TYPE_String: case DK_TYPE_Optional: case DK_TYPE_Number: case DK_TYPE_Int:
    case DK_TYPE_Bool: case DK_TYPE_Float: case DK_TYPE_Complex:
        return dk__sp_constant(p, fake->kind);
    case DK_TYPE_DeviceObj:
        return dk__sp_device_default(p);
    case DK_TYPE_List:
        elem = fake->contained[0]->kind;
        if (p->cur.kind == DK__TK_IDENT) dk__sp_expected(p, "None");
        return dk__sp_list_default(p, elem, size);
    default:
        dk__sp_fail(p, p->cur.start, "an argument of type %s cannot have a default value", fake->str);
    }
    return NULL; /* not reached (tcc) */
}

/* Our check (c10 1.13.1 takes "int n=1.5", "bool n=1", "int n=None" and
   fails only when a kernel unboxes the value): a default must be of a kind
   the argument's fake type holds, so that the boxed stack check and a typed
   call read the same value. c10's conversions stay: an integer (a dtype,
   layout, reduction or memory-format name too) for a float or complex, any
   number or bool for a Scalar, None for an optional. */
DK__PRIVATE int dk__sp_default_fits(const dk_type *t, dk_default_kind k) {
    switch (t->kind) {
    case DK_TYPE_Optional: return k == DK_DEFAULT_NONE || dk__sp_default_fits(t->contained[0], k);
    case DK_TYPE_Int: return k == DK_DEFAULT_INT;
    case DK_TYPE_Float: return k == DK_DEFAULT_INT || k == DK_DEFAULT_DOUBLE;
    case DK_TYPE_Complex: return k == DK_DEFAULT_INT || k == DK_DEFAULT_DOUBLE || k == DK_DEFAULT_COMPLEX;
    case DK_TYPE_Number:
        return k == DK_DEFAULT_INT || k == DK_DEFAULT_DOUBLE || k == DK_DEFAULT_COMPLEX || k == DK_DEFAULT_BOOL;
    case DK_TYPE_Bool: return k == DK_DEFAULT_BOOL;
    case DK_TYPE_String: return k == DK_DEFAULT_STRING;
    case DK_TYPE_DeviceObj: return k == DK_DEFAULT_DEVICE || k == DK_DEFAULT_STRING;
    case DK_TYPE_List: return k == DK_DEFAULT_LIST;
    case DK_TYPE_Var: return 1;          /* "t? x=1": a type variable holds any value */
    default: return k == DK_DEFAULT_NONE; /* Tensor, Generator, Quantizer */
    }
}

DK__PRIVATE void dk__sp_check_default(dk__sp *p, const dk_arg *a, size_t pos) {
#define DK__DEFAULT_KIND_NAME(kind, name) name,
    static const char *const names[] = { DK_FORALL_DEFAULT_KINDS(DK__DEFAULT_KIND_NAME) };
#undef DK__DEFAULT_KIND_NAME
    dk_default_kind k = a->default_value->kind;
    if (dk__sp_default_fits(a->fake_type, k)) return;
    dk__sp_fail(p, pos, "argument %s of type %s cannot have a%s %s default%s", a->name, a->type->str,
                k == DK_DEFAULT_INT ? "n" : "", names[k], k == DK_DEFAULT_NONE ? " (only an optional type can)" : "");
}

/* --- declarations ------------------------------------------------------------ */

/* An argument list being parsed: its first DK__SP_ARGS_LOCAL arguments on
   the C stack, more in the arena (doubling); dk__sp_keep_args copies a list
   that stayed on the stack into the arena at its exact size (so a schema
   keeps no growing room for its arguments). Returns too. */
#define DK__SP_ARGS_LOCAL 8
typedef struct dk__sp_args { dk_arg *v; int n, cap; dk_arg local[DK__SP_ARGS_LOCAL]; } dk__sp_args;

DK__PRIVATE void dk__sp_add_arg(dk__sp *p, dk__sp_args *l, const dk_arg *a) {
    if (l->n == l->cap) {
        dk_arg *grown = l->local;
        l->cap = DK__SP_ARGS_LOCAL;
        if (l->n) {
            l->cap = 2 * l->n;
            grown = (dk_arg *)dk__sp_alloc(p, (size_t)l->cap * sizeof *grown);
            memcpy(grown, l->v, (size_t)l->n * sizeof *grown);
        }
        l->v = grown;
    }
    l->v[l->n++] = *a;
}
DK__PRIVATE dk_arg *dk__sp_keep_args(dk__sp *p, const dk__sp_args *l) {
    dk_arg *v;
    if (l->v != l->local) return l->v;   /* none (NULL), or already in the arena */
    v = (dk_arg *)dk__sp_alloc(p, (size_t)l->n * sizeof *v);
    memcpy(v, l->local, (size_t)l->n * sizeof *v);
    return v;
}
/* The return lists of "-> Tensor", the most common one, and of "-> (Tensor,
   Tensor)" up to four: static (the schema's returns point at them). */
#define DK__SP_TENSOR_RETURN                                                                                      \
    { "", "Tensor", &dk__sp_static_types[DK_TYPE_Tensor].pub, &dk__sp_static_types[DK_TYPE_Tensor].pub, NULL, NULL, \
      NULL, -1, 0, 0, 0 }
static const dk_arg dk__sp_tensor_returns[4] = { DK__SP_TENSOR_RETURN, DK__SP_TENSOR_RETURN, DK__SP_TENSOR_RETURN,
                                                 DK__SP_TENSOR_RETURN };
#undef DK__SP_TENSOR_RETURN
/* "-> Tensor(a!)", the return of in-place and out= operators: static too,
   and the bytes its parse took go back to the arena (dk__sp_schema). */
static const char *const dk__sp_set_a[1] = { "a" };
static const dk_alias_info dk__sp_write_a = { 1, dk__sp_set_a, 1, dk__sp_set_a, 1, NULL };
static const dk_arg dk__sp_write_a_return[1] = {
    { "", "Tensor(a!)", &dk__sp_static_types[DK_TYPE_Tensor].pub, &dk__sp_static_types[DK_TYPE_Tensor].pub,
      &dk__sp_write_a, NULL, NULL, -1, 0, 0, 0 }
};
DK__PRIVATE int dk__sp_is_write_a_return(const dk_arg *a) {
    const dk_type *t = &dk__sp_static_types[DK_TYPE_Tensor].pub;
    const dk_alias_info *x = a->alias;
    return a->type == t && a->fake_type == t && !*a->name && x && x->num_before == 1 && x->num_after == 1 &&
           !strcmp(x->before[0], "a") && !strcmp(x->after[0], "a") && x->is_write && !x->contained &&
           !a->default_value && a->list_size < 0 && !a->kwarg_only && !a->is_out && !a->is_dispatch;
}
DK__PRIVATE int dk__sp_is_tensor_return(const dk_arg *a) {
    const dk_type *t = &dk__sp_static_types[DK_TYPE_Tensor].pub;
    return a->type == t && a->fake_type == t && !*a->name && !a->alias && !a->default_value && a->list_size < 0 &&
           !a->kwarg_only && !a->is_out && !a->is_dispatch && !strcmp(a->type_text, "Tensor");
}

/* c10 prints an argument's own annotation only when it names a set. One
   that names none (a list's: "Tensor[]?(!)[]") keeps only what the printed
   text can carry: the list element's annotation and its write flag; with no
   element annotation either it would be lost ("Tensor?(!)", "Tensor[](!)"),
   and is refused as c10 refuses it. */
DK__PRIVATE dk_alias_info *dk__sp_printable_alias(dk__sp *p, dk_alias_info *a) {
    if (!a || a->num_before) return a;
    if (!a->contained) dk__sp_expected_at(p, &p->empty, "ident");
    a->num_after = 0;
    a->is_write = a->contained->is_write;
    return a;
}

/* T[N] (only here, at the argument level): std::stoll of the number. */
DK__PRIVATE const dk_type *dk__sp_sized_list(dk__sp *p, const dk_type *t, dk_arg *a, dk_alias_info **alias) {
    dk__sp_tok n = dk__sp_expect(p, DK__TK_NUMBER);
    int64_t size = dk__sp_stoll(p, dk__sp_text(p, n), n.start);
    if (size > INT32_MAX) dk__sp_fail(p, n.start, "list size %lld does not fit c10's int32", (long long)size);
    a->list_size = (int)size;
    dk__sp_expect(p, ']');
    t = dk__sp_type1(p, DK_TYPE_List, t);
    *alias = dk__sp_container(p, dk__sp_alias(p, 1), *alias);
    return dk__sp_accept(p, '?') ? dk__sp_optional(p, t) : t;
}

/* The defaults aten's schemas give most (None, False, True, 0, 1, -1, 2)
   and their texts: static, as the leaf types (a def's copy keeps no bytes
   for them). */
#define DK__SP_DEFAULT(kind, b, i) { DK_DEFAULT_##kind, b, i, 0, 0, NULL, 0, NULL, 0 }
static const dk_default dk__sp_common_defaults[7] = {
    DK__SP_DEFAULT(NONE, 0, 0), DK__SP_DEFAULT(BOOL, 0, 0), DK__SP_DEFAULT(BOOL, 1, 0), DK__SP_DEFAULT(INT, 0, 0),
    DK__SP_DEFAULT(INT, 0, 1), DK__SP_DEFAULT(INT, 0, -1), DK__SP_DEFAULT(INT, 0, 2)
};
#undef DK__SP_DEFAULT
static const char *const dk__sp_common_default_texts[7] = { "None", "False", "True", "0", "1", "-1", "2" };
/* The annotations of one set named a to h, "(a)" and "(a!)" (a def's
   arguments and returns hold them most): static too. */
static const char *const dk__sp_one_letter_sets[8] = { dk__sp_letters[0], dk__sp_letters[1], dk__sp_letters[2],
                                                  dk__sp_letters[3], dk__sp_letters[4], dk__sp_letters[5],
                                                  dk__sp_letters[6], dk__sp_letters[7] };
#define DK__SP_ALIAS(i) { 1, &dk__sp_one_letter_sets[i], 1, &dk__sp_one_letter_sets[i], 0, NULL }, \
                        { 1, &dk__sp_one_letter_sets[i], 1, &dk__sp_one_letter_sets[i], 1, NULL }
static const dk_alias_info dk__sp_common_aliases[16] = { DK__SP_ALIAS(0), DK__SP_ALIAS(1), DK__SP_ALIAS(2), DK__SP_ALIAS(3),
                                                         DK__SP_ALIAS(4), DK__SP_ALIAS(5), DK__SP_ALIAS(6), DK__SP_ALIAS(7) };
#undef DK__SP_ALIAS
DK__PRIVATE const dk_alias_info *dk__sp_common_alias(const dk_alias_info *x) {
    const char *n;
    if (!x || x->num_before != 1 || x->num_after != 1 || x->contained) return x;
    n = x->before[0];
    if (n[0] < 'a' || n[0] > 'h' || n[1] || strcmp(n, x->after[0])) return x;
    return &dk__sp_common_aliases[2 * (n[0] - 'a') + !!x->is_write];
}
DK__PRIVATE const dk_default *dk__sp_common_default(const dk_default *v) {
    int k = v->kind == DK_DEFAULT_NONE ? 0 : v->kind == DK_DEFAULT_BOOL ? 1 + !!v->b
          : v->kind == DK_DEFAULT_INT && v->i >= -1 && v->i <= 2 ? (v->i == -1 ? 5 : 3 + (int)v->i) : -1;
    return k >= 0 && !memcmp(v, &dk__sp_common_defaults[k], sizeof *v) ? &dk__sp_common_defaults[k] : v;
}

DK__PRIVATE void dk__sp_parse_arg(dk__sp *p, dk_arg *a, int is_return, int kwarg_only) {
    dk_alias_info *alias;
    const dk_type *t;
    memset(a, 0, sizeof *a);
    a->list_size = -1;
    p->at = p->cur.start;
    t = dk__sp_parse_type(p, 0, &alias);
    if (dk__sp_accept(p, '[')) t = dk__sp_sized_list(p, t, a, &alias);
    a->type = t;
    a->fake_type = dk__sp_fake(p, t);
    a->alias = dk__sp_common_alias(dk__sp_printable_alias(p, alias));
    a->kwarg_only = kwarg_only && !is_return;
    a->is_out = a->kwarg_only && a->alias && a->alias->is_write;
    a->is_dispatch = !is_return && dk__sp_is_dispatch(a->fake_type);
    if (is_return) {
        a->name = p->cur.kind == DK__TK_IDENT ? dk__sp_name(p) : "";
    } else {
        a->name = dk__sp_name(p);
        if (dk__sp_accept(p, '=')) {
            size_t at = p->cur.start;
            a->default_value = dk__sp_default(p, a->fake_type, a->list_size);
            dk__sp_check_default(p, a, at);
            a->default_value = dk__sp_common_default(a->default_value);
        }
    }
}

/* ns::name.overload; c10 rejects the overloads "default" and "__*". */
DK__PRIVATE void dk__sp_parse_name(dk__sp *p, dk_schema *s) {
    dk__sp_buf b = { NULL, 0, 0 };
    dk__sp_tok ov;
    dk__sp_put_ident(p, &b, DK__TK_IDENT);
    if (dk__sp_accept(p, ':')) {
        dk__sp_expect(p, ':');
        dk__sp_puts(p, &b, "::");
        dk__sp_put_ident(p, &b, DK__TK_IDENT);
    }
    s->name = dk__sp_done(p, &b);
    s->overload = "";
    if (!dk__sp_accept(p, '.')) return;
    ov = p->cur;
    s->overload = dk__sp_ident(p);
    if (!strcmp(s->overload, "default") || !strncmp(s->overload, "__", 2))
        dk__sp_fail(p, ov.start, "%s is not a legal overload name for aten operators", s->overload);
}

/* c10's checkSchema: after a default, positional arguments need one too
   (lists excepted, for old serialized schemas). */
DK__PRIVATE void dk__sp_check_order(dk__sp *p, const dk_arg *a, int *seen_default, size_t pos) {
    if (a->default_value) *seen_default = 1;
    else if (*seen_default && !a->kwarg_only && a->fake_type->kind != DK_TYPE_List)
        dk__sp_fail(p, pos, "Non-default positional argument follows default argument. Parameter %s", a->name);
}

DK__PRIVATE void dk__sp_parse_args(dk__sp *p, dk_schema *s, dk__sp_args *args) {
    int kwarg_only = 0, seen_default = 0, i;
    size_t pos;
    dk_arg a;
    dk__sp_expect(p, '(');
    if (p->cur.kind != ')') do {
        if (s->is_vararg) dk__sp_fail(p, p->cur.start, "... must be the last element of the argument list");
        pos = p->cur.start;
        if (dk__sp_accept(p, '*')) kwarg_only = 1;
        else if (dk__sp_accept(p, DK__TK_DOTS)) s->is_vararg = 1;
        else {
            dk__sp_parse_arg(p, &a, 0, kwarg_only);
            dk__sp_check_order(p, &a, &seen_default, pos);
            dk__sp_add_arg(p, args, &a);
        }
    } while (dk__sp_accept(p, ','));
    dk__sp_expect(p, ')');
    for (i = 0; s->is_vararg && i < args->n; i++)
        if (args->v[i].default_value)
            dk__sp_fail(p, p->cur.start, "schemas with vararg (...) can't have default value args");
}

DK__PRIVATE void dk__sp_parse_returns(dk__sp *p, dk_schema *s, dk__sp_args *rets) {
    dk_arg a;
    dk__sp_expect(p, DK__TK_ARROW);
    if (dk__sp_accept(p, DK__TK_DOTS)) {
        s->is_varret = 1;
    } else if (p->cur.kind == '(') {
        dk__sp_advance(p);
        if (p->cur.kind != ')') do {
            if (s->is_varret) dk__sp_fail(p, p->cur.start, "... must be the last element of the return list");
            if (dk__sp_accept(p, DK__TK_DOTS)) s->is_varret = 1;
            else {
                dk__sp_parse_arg(p, &a, 1, 0);
                dk__sp_add_arg(p, rets, &a);
            }
        } while (dk__sp_accept(p, ','));
        dk__sp_expect(p, ')');
    } else {
        dk__sp_parse_arg(p, &a, 1, 0);
        dk__sp_add_arg(p, rets, &a);
    }
}

/* --- printer: c10's operator<< for Argument and FunctionSchema -------------- */

DK__PRIVATE void dk__sp_put_sets(dk__sp *p, dk__sp_buf *b, const char *const *v, int n) {
    int i;
    for (i = 0; i < n; i++) {
        if (i) dk__sp_puts(p, b, "|");
        dk__sp_puts(p, b, v[i]);
    }
}

/* Set equality of an annotation's before and after sets (each without
   repeats): same order first, then a scan for few names, a sort for many. */
DK__PRIVATE int dk__sp_same_sets(dk__sp *p, const dk_alias_info *a) {
    int i, j, n = a->num_before;
    dk__sp_named *x, *y;
    if (n != a->num_after) return 0;
    for (i = 0; i < n && !strcmp(a->before[i], a->after[i]); i++) {}
    if (i == n) return 1;
    if (n <= DK__SP_FEW_NAMES) {
        for (i = 0; i < n; i++) {
            for (j = 0; j < n && strcmp(a->before[i], a->after[j]); j++) {}
            if (j == n) return 0;
        }
        return 1;
    }
    x = (dk__sp_named *)dk__sp_alloc(p, (size_t)n * sizeof *x);
    y = (dk__sp_named *)dk__sp_alloc(p, (size_t)n * sizeof *y);
    for (i = 0; i < n; i++) {
        x[i].name = a->before[i];
        y[i].name = a->after[i];
        x[i].at = y[i].at = 0;
    }
    qsort(x, (size_t)n, sizeof *x, dk__sp_named_cmp);
    qsort(y, (size_t)n, sizeof *y, dk__sp_named_cmp);
    for (i = 0; i < n && !strcmp(x[i].name, y[i].name); i++) {}
    return i == n;
}

DK__PRIVATE void dk__sp_put_alias(dk__sp *p, dk__sp_buf *b, const dk_alias_info *a) {
    dk__sp_puts(p, b, "(");
    dk__sp_put_sets(p, b, a->before, a->num_before);
    if (a->is_write) dk__sp_puts(p, b, "!");
    if (!dk__sp_same_sets(p, a)) {
        dk__sp_puts(p, b, " -> ");
        dk__sp_put_sets(p, b, a->after, a->num_after);
    }
    dk__sp_puts(p, b, ")");
}

/* c10's printQuotedString, with 3-digit octal for bytes >= 0x80. */
DK__PRIVATE void dk__sp_put_quoted(dk__sp *p, dk__sp_buf *b, const char *s, size_t n) {
    static const char from[] = "\\'\"\a\b\f\n\r\t\v", to[] = "\\'\"abfnrtv";
    char esc[8];
    size_t i;
    const char *hit;
    dk__sp_puts(p, b, "\"");
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c && (hit = strchr(from, c)) != NULL) {
            esc[0] = '\\';
            esc[1] = to[hit - from];
            dk__sp_put(p, b, esc, 2);
        } else if (c > 0x1f && c < 0x7f) {
            dk__sp_put(p, b, (const char *)&s[i], 1);
        } else {
            snprintf(esc, sizeof esc, "\\%03o", c);
            dk__sp_puts(p, b, esc);
        }
    }
    dk__sp_puts(p, b, "\"");
}

DK__PRIVATE void dk__sp_put_value(dk__sp *p, dk__sp_buf *b, const dk_default *v) {
    char num[32];
    size_t i;
    switch (v->kind) {
    case DK_DEFAULT_NONE: dk__sp_puts(p, b, "None"); break;
    case DK_DEFAULT_BOOL: dk__sp_puts(p, b, v->b ? "True" : "False"); break;
    case DK_DEFAULT_INT:
        snprintf(num, sizeof num, "%lld", (long long)v->i);
        dk__sp_puts(p, b, num);
        break;
    case DK_DEFAULT_DOUBLE: dk__sp_put_double(p, b, v->re); break;
    case DK_DEFAULT_COMPLEX:
        dk__sp_put_double(p, b, v->re);
        dk__sp_puts(p, b, v->im >= 0 ? "+" : "-");
        dk__sp_put_double(p, b, v->im >= 0 ? v->im : -v->im);
        dk__sp_puts(p, b, "j");
        break;
    case DK_DEFAULT_STRING: dk__sp_put_quoted(p, b, v->s, v->len); break;
    case DK_DEFAULT_DEVICE: dk__sp_puts(p, b, v->s); break;
    case DK_DEFAULT_LIST:
        dk__sp_puts(p, b, "[");
        for (i = 0; i < v->count; i++) {
            if (i) dk__sp_puts(p, b, ", ");
            dk__sp_put_value(p, b, &v->items[i]);
        }
        dk__sp_puts(p, b, "]");
        break;
    }
}

/* An int[N] default of N equal elements prints as one value ("int[2]
   stride=1"), as in native_functions.yaml. c10 also does so for any other
   count, and without N; that text reads back as something else, so not here. */
DK__PRIVATE const char *dk__sp_default_text(dk__sp *p, const dk_arg *a) {
    dk__sp_buf b = { NULL, 0, 0 };
    const dk_default *v = a->default_value;
    size_t i;
    int same = v->kind == DK_DEFAULT_LIST && v->count > 1 && a->list_size >= 0 && v->count == (size_t)a->list_size &&
               a->type->kind == DK_TYPE_List && a->type->contained[0]->kind == DK_TYPE_Int;
    for (i = 1; same && i < v->count; i++) same = v->items[i].i == v->items[0].i;
    if (v->kind == DK_DEFAULT_INT && (a->fake_type->kind == DK_TYPE_Float || a->fake_type->kind == DK_TYPE_Complex)) {
        /* only a name gives a float or complex argument an int (c10 prints the
           int, which reads back as a float or a complex) */
        for (i = 0; i < sizeof dk__sp_constants / sizeof dk__sp_constants[0]; i++)
            if (dk__sp_constants[i].value == v->i) return dk__sp_constants[i].name;
    }
    if ((size_t)((uintptr_t)v - (uintptr_t)dk__sp_common_defaults) < sizeof dk__sp_common_defaults)
        return dk__sp_common_default_texts[v - dk__sp_common_defaults];
    dk__sp_put_value(p, &b, same ? &v->items[0] : v);
    return dk__sp_done(p, &b);
}

/* Type(alias)? with c10's placement: "Tensor(a!)[]", "int[2](a)?". */
DK__PRIVATE const char *dk__sp_type_text(dk__sp *p, const dk_arg *a) {
    dk__sp_buf b = { NULL, 0, 0 };
    char n[24];
    const dk_type *t = a->type->kind == DK_TYPE_Optional ? a->type->contained[0] : a->type;
    if (t == a->type && t->kind != DK_TYPE_List && !(a->alias && a->alias->num_before))
        return t->str;   /* the text is the type's own: shared, not copied */
    if (t->kind == DK_TYPE_List) {
        dk__sp_puts(p, &b, t->contained[0]->str);
        if (a->alias && a->alias->contained) dk__sp_put_alias(p, &b, a->alias->contained);
        if (a->list_size >= 0) snprintf(n, sizeof n, "[%d]", a->list_size);
        dk__sp_puts(p, &b, a->list_size >= 0 ? n : "[]");
    } else {
        dk__sp_puts(p, &b, t->str);
    }
    if (a->alias && a->alias->num_before) dk__sp_put_alias(p, &b, a->alias);
    if (a->type->kind == DK_TYPE_Optional) dk__sp_puts(p, &b, "?");
    return dk__sp_done(p, &b);
}

/* An argument's texts, made before the schema's text is (dk__sp_print):
   nothing else is allocated while that text grows, so it grows in place
   and leaves no copies behind in the arena. */
DK__PRIVATE void dk__sp_arg_texts(dk__sp *p, dk_arg *v, int n) {
    int i;
    for (i = 0; i < n; i++) {
        if (!v[i].type_text) v[i].type_text = dk__sp_type_text(p, &v[i]);   /* a static return's is there */
        if (v[i].default_value) v[i].default_text = dk__sp_default_text(p, &v[i]);
    }
}
DK__PRIVATE void dk__sp_put_arg(dk__sp *p, dk__sp_buf *b, const dk_arg *a) {
    dk__sp_puts(p, b, a->type_text);
    if (*a->name) {
        dk__sp_puts(p, b, " ");
        dk__sp_puts(p, b, a->name);
    }
    if (a->default_value) {
        dk__sp_puts(p, b, "=");
        dk__sp_puts(p, b, a->default_text);
    }
}

/* Returns: bare when there is exactly one (unless it starts with '('). */
DK__PRIVATE void dk__sp_put_returns(dk__sp *p, dk__sp_buf *b, dk_schema *s, dk_arg *rets) {
    int i, single = s->num_returns == 1 && !s->is_varret;
    int paren = !(single || (s->num_returns == 0 && s->is_varret));
    if (single) {   /* in parentheses when its text starts with one (a tuple's), put around it after */
        size_t at = b->n, k;
        dk__sp_put_arg(p, b, &rets[0]);
        if (b->s[at] == '(') {
            k = b->n - at;
            dk__sp_puts(p, b, "()");
            memmove(b->s + at + 1, b->s + at, k);
            b->s[at] = '(';
            b->s[at + 1 + k] = ')';
        }
        return;
    }
    if (paren) dk__sp_puts(p, b, "(");
    for (i = 0; i < s->num_returns; i++) {
        if (i) dk__sp_puts(p, b, ", ");
        dk__sp_put_arg(p, b, &rets[i]);
    }
    if (s->is_varret) dk__sp_puts(p, b, s->num_returns ? ", ..." : "...");
    if (paren) dk__sp_puts(p, b, ")");
}

DK__PRIVATE const char *dk__sp_print(dk__sp *p, dk_schema *s, dk_arg *args, dk_arg *rets) {
    dk__sp_buf b = { NULL, 0, 0 };
    int i, kw = 0;
    dk__sp_arg_texts(p, args, s->num_arguments);
    dk__sp_arg_texts(p, rets, s->num_returns);
    dk__sp_puts(p, &b, s->name);
    if (*s->overload) {
        dk__sp_puts(p, &b, ".");
        dk__sp_puts(p, &b, s->overload);
    }
    if (s->name_only) return dk__sp_done(p, &b);
    dk__sp_puts(p, &b, "(");
    for (i = 0; i < s->num_arguments; i++) {
        if (i) dk__sp_puts(p, &b, ", ");
        if (args[i].kwarg_only && !kw++) dk__sp_puts(p, &b, "*, ");
        dk__sp_put_arg(p, &b, &args[i]);
    }
    if (s->is_vararg) dk__sp_puts(p, &b, s->num_arguments ? ", ..." : "...");
    dk__sp_puts(p, &b, ") -> ");
    dk__sp_put_returns(p, &b, s, rets);
    return dk__sp_done(p, &b);
}

/* --- a def's copy ------------------------------------------------------------

   A def keeps its schema in its own record, copied out of the parse's
   arena: the nodes the schema reaches (the schema, its argument and return
   arrays, types, alias annotations and their sets, defaults), each at the
   arena's alignment, from the copy's start, and their strings byte by
   byte, from its end down. What else the arena holds (grown arrays' old
   copies, scratch of alias sets, a type node's depth) stays behind, and
   what is not the arena's (literals, the static types, return lists and
   defaults) is kept as it is. An argument's type text equal to its type's
   str is that str. A type node the arena shares (an argument's type and
   fake type, a container's members) is copied once: sizing marks the
   arena's node (depth -1), the copy leaves in it where its copy is (depth
   -2, `contained`: the arena is scratch, freed after the copy). The same
   walk sizes the copy (dk__sp_copy_size: no `nodes`, and then it writes
   nothing but the marks) and makes it (dk__sp_copy). The walk's state,
   dk__sp_move, is declared with the def's code. */

/* ptr is in the arena (in the first chunk: one comparison). */
DK__PRIVATE DK__NOINLINE int dk__sp_owns_later(const dk__sp_move *m, const void *ptr) {
    const dk__sp_chunk *c;
    for (c = m->arena->next; c; c = c->next)
        if ((size_t)((uintptr_t)ptr - (uintptr_t)c->data) < c->used * sizeof(dk__sp_align)) return 1;
    return 0;
}
DK_INLINE int dk__sp_owns(const dk__sp_move *m, const void *ptr) {
    if ((size_t)((uintptr_t)ptr - m->first) < m->first_used) return 1;
    return m->arena->next ? dk__sp_owns_later(m, ptr) : 0;
}
/* A node of n bytes: its copy, or NULL when sizing. */
DK_INLINE void *dk__sp_move_node(dk__sp_move *m, const void *src, size_t n) {
    void *r = m->nodes;
    n = (n + sizeof(dk__sp_align) - 1) / sizeof(dk__sp_align) * sizeof(dk__sp_align);
    if (!r) {
        m->bytes += n;
        return NULL;
    }
    memcpy(r, src, n);
    m->nodes += n;
    return r;
}
/* The n bytes at *slot (a string and its '\0'), when they are the arena's. */
DK_INLINE void dk__sp_move_bytes(dk__sp_move *m, const char **slot, size_t n) {
    if (!m->nodes) {
        m->bytes += n;
        return;
    }
    m->strs -= n;
    memcpy(m->strs, *slot, n);
    *slot = m->strs;
}
DK_INLINE void dk__sp_move_str(dk__sp_move *m, const char **slot) {
    size_t n;
    if (!m->nodes) {   /* sizing */
        n = dk__sp_owns(m, *slot) ? strlen(*slot) + 1 : 0;
        if (m->n_lens < sizeof m->lens / sizeof m->lens[0]) m->lens[m->n_lens++] = n;
        m->bytes += n;
        return;
    }
    if (m->at < m->n_lens) n = m->lens[m->at++];
    else n = dk__sp_owns(m, *slot) ? strlen(*slot) + 1 : 0;
    if (n) dk__sp_move_bytes(m, slot, n);
}
/* (the checks whether a node is the arena's are inlined: most are not) */
DK__PRIVATE void dk__sp_move_type_node(dk__sp_move *m, const dk_type **slot);
DK_INLINE void dk__sp_move_type(dk__sp_move *m, const dk_type **slot) {
    if (dk__sp_owns(m, *slot)) dk__sp_move_type_node(m, slot);
}
DK__PRIVATE void dk__sp_move_type_node(dk__sp_move *m, const dk_type **slot) {
    dk__sp_node *src = (dk__sp_node *)(void *)(uintptr_t)*slot;
    dk_type *t;
    const dk_type **kids;
    int i;
    if (!m->nodes) {   /* sizing: each node once */
        if (src->depth == -1) return;
        src->depth = -1;
        dk__sp_move_node(m, src, sizeof(dk_type));
        dk__sp_move_str(m, &src->pub.str);
        if (dk__sp_owns(m, src->pub.contained))
            dk__sp_move_node(m, src->pub.contained, (size_t)src->pub.num_contained * sizeof *kids);
        for (i = 0; i < src->pub.num_contained; i++)
            dk__sp_move_type(m, (const dk_type **)(uintptr_t)&src->pub.contained[i]);
        return;
    }
    if (src->depth == -2) {   /* copied already */
        *slot = (const dk_type *)(const void *)src->pub.contained;
        return;
    }
    t = (dk_type *)dk__sp_move_node(m, &src->pub, sizeof(dk_type));
    src->depth = -2;
    src->pub.contained = (const dk_type *const *)(void *)t;
    *slot = t;
    dk__sp_move_str(m, &t->str);
    if (!dk__sp_owns(m, t->contained)) return;
    kids = (const dk_type **)dk__sp_move_node(m, t->contained, (size_t)t->num_contained * sizeof *kids);
    t->contained = kids;
    for (i = 0; i < t->num_contained; i++) dk__sp_move_type(m, &kids[i]);
}
DK__PRIVATE void dk__sp_move_names(dk__sp_move *m, const char *const **slot, int n) {
    const char **v;
    int i;
    if (!dk__sp_owns(m, *slot)) return;
    if (!(v = (const char **)dk__sp_move_node(m, *slot, (size_t)n * sizeof *v)))
        v = (const char **)(uintptr_t)*slot;   /* sizing: read only */
    else *slot = v;
    for (i = 0; i < n; i++) dk__sp_move_str(m, &v[i]);
}
DK__PRIVATE void dk__sp_move_alias(dk__sp_move *m, const dk_alias_info **slot) {
    dk_alias_info *a;
    int same;
    if (!(a = (dk_alias_info *)dk__sp_move_node(m, *slot, sizeof **slot)))
        a = (dk_alias_info *)(uintptr_t)*slot;   /* sizing: read only */
    else *slot = a;
    same = a->after == a->before;   /* "(a)": one set before and after */
    dk__sp_move_names(m, &a->before, a->num_before);
    if (same) {
        if (m->nodes) a->after = a->before;
    } else {
        dk__sp_move_names(m, &a->after, a->num_after);
    }
    if (dk__sp_owns(m, a->contained)) dk__sp_move_alias(m, &a->contained);
}
DK__PRIVATE void dk__sp_move_default(dk__sp_move *m, const dk_default **slot, size_t n) {
    dk_default *v;
    size_t i;
    if (!(v = (dk_default *)dk__sp_move_node(m, *slot, n * sizeof *v)))
        v = (dk_default *)(uintptr_t)*slot;   /* sizing: read only */
    else *slot = v;
    for (i = 0; i < n; i++) {
        if ((v[i].kind == DK_DEFAULT_STRING || v[i].kind == DK_DEFAULT_DEVICE) && dk__sp_owns(m, v[i].s))
            dk__sp_move_bytes(m, &v[i].s, v[i].len + 1);
        if (dk__sp_owns(m, v[i].items)) dk__sp_move_default(m, &v[i].items, v[i].count);
    }
}
DK__PRIVATE void dk__sp_move_args(dk__sp_move *m, const dk_arg **slot, int n) {
    dk_arg *v;
    int i;
    if (!(v = (dk_arg *)dk__sp_move_node(m, *slot, (size_t)n * sizeof *v)))
        v = (dk_arg *)(uintptr_t)*slot;   /* sizing: read only */
    else *slot = v;
    for (i = 0; i < n; i++) {
        int shared = v[i].type_text == v[i].type->str || !strcmp(v[i].type_text, v[i].type->str);
        dk__sp_move_str(m, &v[i].name);
        dk__sp_move_type(m, &v[i].type);
        dk__sp_move_type(m, &v[i].fake_type);
        if (!shared) dk__sp_move_str(m, &v[i].type_text);
        else if (m->nodes) v[i].type_text = v[i].type->str;
        if (v[i].default_text) dk__sp_move_str(m, &v[i].default_text);
        if (dk__sp_owns(m, v[i].alias)) dk__sp_move_alias(m, &v[i].alias);
        if (dk__sp_owns(m, v[i].default_value)) dk__sp_move_default(m, &v[i].default_value, 1);
    }
}
/* s's copy, made at m->nodes; sized when m->nodes is NULL. */
DK__PRIVATE dk_schema *dk__sp_move_schema(dk__sp_move *m, const dk_schema *s) {
    dk_schema *r = (dk_schema *)dk__sp_move_node(m, s, sizeof *s), *v = r ? r : (dk_schema *)(uintptr_t)s;
    const char *on = m->op_name;
    size_t n = m->name_len, k;
    if (r) r->dk__memory = NULL;
    if (!m->nodes) {   /* the operator's name "ns::name" is the name, "ns::name.overload" ends with the overload */
        if (!*s->overload) m->shared = !strncmp(s->name, on, n) && !s->name[n];
        else m->shared = 2 * ((k = strlen(s->overload)) < n && on[n - k - 1] == '.' && !memcmp(s->overload, on + n - k, k));
    }
    if (m->shared == 1) {
        if (m->nodes) v->name = on;
    } else {
        dk__sp_move_str(m, &v->name);
    }
    if (m->shared == 2) {
        if (m->nodes) v->overload = on + n - strlen(v->overload);
    } else {
        dk__sp_move_str(m, &v->overload);
    }
    dk__sp_move_str(m, &v->text);
    if (dk__sp_owns(m, v->arguments)) dk__sp_move_args(m, &v->arguments, v->num_arguments);
    if (dk__sp_owns(m, v->returns)) dk__sp_move_args(m, &v->returns, v->num_returns);
    return r;
}

DK_INLINE void dk__sp_move_start(dk__sp_move *m, const dk_schema *s, char *base, size_t bytes) {
    m->arena = (const dk__sp_chunk *)s->dk__memory;
    m->first = (uintptr_t)m->arena->data;
    m->first_used = m->arena->used * sizeof(dk__sp_align);
    m->nodes = base;
    m->strs = base ? base + bytes : NULL;
    m->bytes = 0;
    m->n_lens = m->at = 0;
}
/* The bytes a copy of s takes (once: it marks s's shared nodes). */
DK__PRIVATE size_t dk__sp_copy_size(dk__sp_move *m, const dk_schema *s, const char *op_name, size_t name_len) {
    dk__sp_move_start(m, s, NULL, 0);
    m->op_name = op_name;
    m->name_len = name_len;
    dk__sp_move_schema(m, s);
    return m->bytes;
}
/* s copied into base, the `bytes` dk__sp_copy_size gave (aligned for
   dk__sp_align): the copy, which owns no memory (dk__memory NULL: it goes
   with the bytes it is in). s is left for dk_schema_free alone. */
DK__PRIVATE dk_schema *dk__sp_copy(dk__sp_move *m, const dk_schema *s, char *base, size_t bytes, const char *op_name) {
    unsigned n_lens = m->n_lens;
    dk__sp_move_start(m, s, base, bytes);
    m->n_lens = n_lens;
    m->op_name = op_name;
    return dk__sp_move_schema(m, s);
}

/* --- driver -------------------------------------------------------------------- */

DK__PRIVATE uint64_t dk__sp_bitset(dk__sp *p, const dk__sp_args *args) {
    uint64_t bits = 0;
    int i;
    if (args->n > 64)
        dk__sp_fail(p, 0, "The function schema has %d arguments but this PyTorch build only supports 64", args->n);
    for (i = 0; i < args->n; i++)
        if (args->v[i].is_dispatch) bits |= (uint64_t)1 << (args->n - 1 - i);
    return bits;
}

DK__PRIVATE dk_schema *dk__sp_schema(dk__sp *p) {
    dk_schema *s = (dk_schema *)dk__sp_alloc(p, sizeof *s);
    dk__sp_args args, rets;
    dk_arg *kept_args;
    dk__sp_tok first;
    dk__sp_chunk *mark = NULL;
    size_t mark_used = 0;
    int i, write_a = 0;
    args.v = rets.v = NULL;
    args.n = args.cap = rets.n = rets.cap = 0;
    dk__sp_lex_raw(p, 1, &first);
    p->base_indent = first.end - first.start;
    dk__sp_advance(p);
    dk__sp_parse_name(p, s);
    if (p->cur.kind == '(') {
        dk__sp_parse_args(p, s, &args);
        mark = p->arena;           /* the schema's first node is there: not NULL */
        mark_used = mark->used;
        dk__sp_parse_returns(p, s, &rets);
    } else {
        s->name_only = 1;
    }
    dk__sp_accept(p, DK__TK_NEWLINE);
    if (p->cur.kind != DK__TK_EOF) dk__sp_expected(p, "end of input");
    if (rets.n == 1 && dk__sp_is_write_a_return(&rets.v[0])) {
        /* nothing after the returns is in the arena yet: what they took goes back (zeroed, as the arena's room is) */
        if (p->arena == mark) {
            memset(mark->data + mark_used, 0, (mark->used - mark_used) * sizeof(dk__sp_align));
            mark->used = mark_used;
        }
        rets.v[0] = dk__sp_write_a_return[0];
        write_a = 1;
    }
    s->num_arguments = args.n;
    s->num_returns = rets.n;
    s->dispatch_args = dk__sp_bitset(p, &args);
    kept_args = dk__sp_keep_args(p, &args);
    s->arguments = kept_args;
    s->text = dk__sp_print(p, s, kept_args, rets.v);   /* the returns' texts: in the list on the stack */
    for (i = 0; i < rets.n && i < 4 && dk__sp_is_tensor_return(&rets.v[i]); i++) {}
    s->returns = write_a ? dk__sp_write_a_return : i && i == rets.n ? dk__sp_tensor_returns : dk__sp_keep_args(p, &rets);
    s->dk__memory = p->arena;
    return s;
}

/* Separate from dk_schema_parse so that no local of the setjmp caller
   changes between setjmp and longjmp. */
DK__PRIVATE dk_status dk__sp_run(dk__sp *p, dk_schema **out) {
    int code = setjmp(p->fail);
    if (code) {
        dk__sp_arena_free(p->arena);
        return code == 1 ? DK_ERR_BAD_SCHEMA : DK_ERR_NO_MEMORY;
    }
    *out = dk__sp_schema(p);
    return DK_OK;
}

DK__PRIVATE void dk__sp_keep_chunk(void *ptr, void *ud) { (void)ptr; (void)ud; }

/* first (or NULL): the arena's first chunk, `bytes` of the caller's (a
   def's scratch, on its stack: the parse allocates nothing for a schema it
   holds); never given back. */
DK__PRIVATE dk_status dk__sp_parse(const char *text, const dk_registry_desc *desc, dk__sp_chunk *first, size_t bytes,
                                   dk_schema **out) {
    dk__sp p;
    if (!out) return dk__fail(DK_ERR_NULL, "dk_schema_parse: NULL out");
    *out = NULL;
    if (!text) return dk__fail(DK_ERR_NULL, "dk_schema_parse: NULL text");
    memset(&p, 0, sizeof p);
    p.src = text;
    p.len = strlen(text);
    if (desc && desc->alloc && desc->free) {
        p.alloc = desc->alloc;
        p.free = desc->free;
        p.alloc_user_data = desc->alloc_user_data;
    } else {
        p.alloc = dk__schema_malloc;
        p.free = dk__schema_mfree;
    }
    if (first) {   /* zeroed as dk__sp_grow's chunks, as far as the text may need (16 bytes a byte of text and
                      256: more than all but one of aten's schemas take; what a chunk on the stack holds costs
                      nothing but the zeroing) */
        size_t units = (bytes - offsetof(dk__sp_chunk, data)) / sizeof(dk__sp_align), want = units;
        if (p.len < units) want = (16 * p.len + 256) / sizeof(dk__sp_align);
        first->next = NULL;
        first->free = dk__sp_keep_chunk;
        first->user_data = NULL;
        first->used = 0;
        first->size = want < units ? want : units;
        memset(first->data, 0, first->size * sizeof(dk__sp_align));
        p.arena = first;
    }
    return dk__sp_run(&p, out);
}

/* dk_schema_parse, allocating through desc->alloc / desc->free (a registry's
   description; NULL or no alloc: the C allocator). dk_schema_free uses
   the same functions. */
DK_API dk_status dk_schema_parse_with(const char *text, const dk_registry_desc *desc, dk_schema **out) {
    return dk__sp_parse(text, desc, NULL, 0, out);
}

/* What a parse gives (the types dk_type, dk_alias_info and dk_default in
   >>public). A type: Var is a type variable ("t"); Class a custom class
   ("__torch__.torch.classes.ns.Cls"); Number prints as "Scalar". An alias
   annotation: Tensor(a), Tensor(a!), Tensor(a -> *), Tensor(a|b), Tensor!
   (a fresh set "$0" with an empty after-set); "*" is the wildcard; sets keep
   their source order (c10 keeps them in an unordered_set). A default value,
   as c10 stores it (an IValue): ints for ScalarType, Layout, MemoryFormat
   and reduction names; a list for int[N] x=1.

   dk_schema_parse parses text; on success *out owns a new schema, on failure *out = NULL and
   DK_ERR_BAD_SCHEMA (or DK_ERR_NO_MEMORY / DK_ERR_NULL) comes back. More than
   64 arguments is an error, as in c10's DispatchKeyExtractor. */
DK_API dk_status dk_schema_parse(const char *text, dk_schema **out) { return dk_schema_parse_with(text, NULL, out); }

DK_API void dk_schema_free(dk_schema *s) {
    if (s) dk__sp_arena_free((dk__sp_chunk *)s->dk__memory);
}

/* snprintf-like: c10's toString(FunctionSchema), or the operator name of a
   name_only schema; returns the length the full text needs. */
DK_API int dk_schema_to_string(const dk_schema *s, char *buf, size_t size) {
    size_t n = s ? strlen(s->text) : 0;
    if (buf && size) {
        size_t k = n < size - 1 ? n : size - 1;
        if (k) memcpy(buf, s->text, k);
        buf[k] = '\0';
    }
    return (int)n;
}

/* Type kinds, in c10's TypeKind order (Union members are sorted by it).
   X(Name, text, base): text is c10's name of the type (empty when it is
   built from its elements); base 1 marks a name the parser reads as a base
   type, 2 one that is an int in c10's fake type (the dispatcher's view). */
DK_API const char *dk_type_kind_name(dk_type_kind k) {
    static const char *const names[] = {
#define DK__TYPE_NAME(name, text, base) #name,
        DK_FORALL_TYPE_KINDS(DK__TYPE_NAME)
#undef DK__TYPE_NAME
    };
    return (unsigned)k < (unsigned)DK__TYPE_END ? names[k] : NULL;
}
DK__WARM_END
/* <<impl-schema */

#ifdef __cplusplus
}
#endif

#endif /* DISPATCH_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the dispatch.h authors

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
