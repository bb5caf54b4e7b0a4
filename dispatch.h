/* dispatch.h - v0.1.0 - PyTorch's c10 dispatcher for C99, in one header.

   LICENSE: MIT, see the end of this file.

   DO THIS IN EXACTLY ONE .c FILE, before #including it:

       #define DISPATCH_IMPLEMENTATION
       #include "dispatch.h"

   Every other file just #includes "dispatch.h". Link with nothing but libc:
   xxhash is included header-only (XXH_INLINE_ALL) inside the implementation.

   EXAMPLE (keysets, the part every later layer builds on)

       dk_keyset ks = dk_ks_or(dk_ks_from_key(DK_CPU),
                               dk_ks_from_key(DK_AutogradCPU));
       char buf[128];
       dk_ks_to_string(ks, buf, sizeof buf);     // "DispatchKeySet(CPU, AutogradCPU)"
       dk_key top  = dk_ks_highest_key(ks);      // DK_AutogradCPU
       int   slot  = dk_ks_table_index(ks);      // 93: the AutogradCPU runtime slot
       dk_keyset below = dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD);   // CPU only

   TABLE OF CONTENTS (grep for the >>tag)

       >>config      configuration macros, presets, user lists
       >>lists       the X-macro lists: backends, functionality keys, alias keys
       >>enums       dk_backend, dk_key, counts, runtime slots, static asserts
       >>roles       role flags of functionality keys, and the named keysets
       >>keyset      dk_keyset and its algebra (all static inline)
       >>keys        key queries: alias / runtime / per-backend, conversions
       >>status      dk_status (X-macro list), last-error message
       >>api         prototypes of the out-of-line functions
       >>impl        implementation (DISPATCH_IMPLEMENTATION only)

   CONFIGURATION MACROS

       DISPATCH_IMPLEMENTATION  define in one .c file to emit the implementation
       DISPATCH_STATIC          make every function static (implementation and
                                all users in the same translation unit)
       DK_CONFIG_HEADER         "file.h" included first in every translation unit;
                                may define the three lists (see >>config).
                                MUST be the same in every translation unit.
       DK_PRESET_TORCH_1_13_1   use PyTorch 1.13.1's key lists instead of 2.7.1's.
                                MUST be the same in every translation unit.
       DK_THREAD_LOCAL          storage class for thread-local variables
       DK_ASSERT(c)             internal assertion, default assert()

   CONCEPTS

   Dispatch key       one layer of behaviour (CPU, AutogradCUDA, Tracer, ...).
                      Higher value = higher priority. Three kinds: functionality
                      keys (one bit each), per-backend runtime keys (a
                      per-backend functionality x a backend component, e.g.
                      AutogradCPU = AutogradFunctionality x CPUBit) and alias
                      keys (CompositeImplicitAutograd, ...) that stand for a set
                      of runtime keys at registration time.
   Keyset             64 bits: backend components in the low bits, functionality
                      keys above them. The highest functionality bit, combined
                      with the highest backend bit when it is per-backend, is the
                      key a call dispatches to.
   Runtime slot       every runtime key has one slot in an operator's dispatch
                      table; dk_ks_table_index() maps a keyset to its slot with
                      two bit scans and one table load, never a loop.

   Everything about the key space is generated at compile time from the lists
   in >>lists; nothing is maintained by hand beside them.

   ERRORS   Fallible functions return dk_status (DK_OK == 0); dk_last_error()
            gives a thread-local message with the details.
   THREADS  Keyset algebra and key queries are pure functions.
*/

#ifndef DISPATCH_H
#define DISPATCH_H

#define DK_VERSION_MAJOR 0
#define DK_VERSION_MINOR 1
#define DK_VERSION_PATCH 0
#define DK_VERSION_NUMBER (DK_VERSION_MAJOR * 10000 + DK_VERSION_MINOR * 100 + DK_VERSION_PATCH)
#define DK_VERSION_STRING "0.1.0"

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

/* DK_API marks every public function: static (and possibly unused) under
   DISPATCH_STATIC, extern otherwise. */
#ifdef DISPATCH_STATIC
#define DK_API static DK__UNUSED
#else
#define DK_API extern
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
   DK_PRESET_TORCH_1_13_1. Every translation unit must see the same lists:
   dk_config_check() (called by the registry on every registration) compares
   the caller's lists with the implementation's and reports
   DK_ERR_CONFIG_MISMATCH instead of silently mis-indexing.

   Row formats (see Note [Roles] for the role flags):

     DK_FORALL_BACKEND_COMPONENTS(X, extra):
       X(Name, OwnAutograd, AutocastKey, Functional, extra)
         Name         backend component; the enumerator is DK_<Name>Bit
         OwnAutograd  1: has an Autograd<Name> key; 0: its autograd is AutogradOther
         AutocastKey  functionality key of its autocast layer, or Undefined
         Functional   1: a functional backend (XLA, Lazy), outside
                      CompositeExplicitAutogradNonFunctional

     DK_FORALL_FUNCTIONALITY_KEYS(X, extra):   ORDER KEYS (priority ascending)
       X(Name, PerBackend, Prefix, Roles, extra)
         PerBackend   1: one runtime key per backend, named <Prefix><Backend>
         Prefix       runtime-key name prefix (empty for Dense)
         Roles        DK_R_* flags, or 0

     DK_FORALL_ALIAS_KEYS(X, extra):
       X(Name, Set, extra)
         Set          the named keyset (DK_KS_<Set>) of runtime keys it covers
*/

#ifdef DK_CONFIG_HEADER
#include DK_CONFIG_HEADER
#endif

/* >>lists ------------------------------------------------------------------- */

#if defined(DK_FORALL_BACKEND_COMPONENTS) != defined(DK_FORALL_FUNCTIONALITY_KEYS)
#error "dispatch.h: define both DK_FORALL_BACKEND_COMPONENTS and DK_FORALL_FUNCTIONALITY_KEYS, or neither"
#endif

#if !defined(DK_FORALL_BACKEND_COMPONENTS) && defined(DK_PRESET_TORCH_1_13_1)
#define DK_C10_VERSION 11301

/* PyTorch 1.13.1: 14 backends, Meta before PrivateUse1..3. */
#define DK_FORALL_BACKEND_COMPONENTS(X, extra)        \
    X(CPU,         1, AutocastCPU,  0, extra)         \
    X(CUDA,        1, AutocastCUDA, 0, extra)         \
    X(HIP,         0, Undefined,    0, extra)         \
    X(XLA,         1, AutocastCUDA, 1, extra)         \
    X(MPS,         1, Undefined,    0, extra)         \
    X(IPU,         1, Undefined,    0, extra)         \
    X(XPU,         1, AutocastXPU,  0, extra)         \
    X(HPU,         1, Undefined,    0, extra)         \
    X(VE,          0, Undefined,    0, extra)         \
    X(Lazy,        1, Undefined,    1, extra)         \
    X(Meta,        1, Undefined,    0, extra)         \
    X(PrivateUse1, 1, Undefined,    0, extra)         \
    X(PrivateUse2, 1, Undefined,    0, extra)         \
    X(PrivateUse3, 1, Undefined,    0, extra)

/* PyTorch 1.13.1: 40 functionality keys after Undefined; SparseCsrCPU and
   SparseCsrCUDA are plain (non-customizable) backend keys. */
#define DK_FORALL_FUNCTIONALITY_KEYS(X, extra)                                          \
    X(Dense,                          1,             , DK_R_BACKEND|DK_R_BACKEND_FN, extra)    \
    X(FPGA,                           0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(ORT,                            0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(Vulkan,                         0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(Metal,                          0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(Quantized,                      1, Quantized   , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_BACKEND_FN, extra) \
    X(CustomRNGKeyId,                 0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(MkldnnCPU,                      0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(Sparse,                         1, Sparse      , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_BACKEND_FN|DK_R_SPARSE, extra) \
    X(SparseCsrCPU,                   0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(SparseCsrCUDA,                  0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(NestedTensor,                   1, NestedTensor, DK_R_NESTED|DK_R_MATH, extra)    \
    X(BackendSelect,                  0,             , DK_R_INCLUDED, extra)            \
    X(Python,                         0,             , DK_R_PYTHON, extra)              \
    X(Fake,                           0,             , 0, extra)                        \
    X(FuncTorchDynamicLayerBackMode,  0,             , 0, extra)                        \
    X(Functionalize,                  0,             , DK_R_FUNCTIONALIZE, extra)       \
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
    X(AutocastXPU,                    0,             , DK_R_AUTOCAST, extra)            \
    X(AutocastCUDA,                   0,             , DK_R_AUTOCAST, extra)            \
    X(FuncTorchBatched,               0,             , DK_R_FUNCTORCH|DK_R_BATCHED, extra) \
    X(FuncTorchVmapMode,              0,             , DK_R_FUNCTORCH, extra)           \
    X(Batched,                        0,             , DK_R_FUNCTORCH, extra)           \
    X(VmapMode,                       0,             , DK_R_FUNCTORCH, extra)           \
    X(FuncTorchGradWrapper,           0,             , DK_R_FUNCTORCH, extra)           \
    X(DeferredInit,                   0,             , 0, extra)                        \
    X(PythonTLSSnapshot,              0,             , DK_R_PYTHON, extra)              \
    X(FuncTorchDynamicLayerFrontMode, 0,             , 0, extra)                        \
    X(TESTING_ONLY_GenericWrapper,    0,             , 0, extra)                        \
    X(TESTING_ONLY_GenericMode,       0,             , 0, extra)                        \
    X(PythonDispatcher,               0,             , DK_R_ALWAYS_AFTER, extra)

#define DK_FORALL_ALIAS_KEYS(X, extra)                                  \
    X(Autograd,                               AUTOGRAD_ALIAS, extra)    \
    X(CompositeImplicitAutograd,              MATH, extra)              \
    X(CompositeImplicitAutogradNestedTensor,  NESTED, extra)            \
    X(CompositeExplicitAutograd,              BACKEND, extra)           \
    X(CompositeExplicitAutogradNonFunctional, NON_FUNCTIONAL_BACKEND, extra)

#elif !defined(DK_FORALL_BACKEND_COMPONENTS)
#define DK_C10_VERSION 20701

/* PyTorch 2.7.1 (the default): 15 backends, MTIA added, Meta moved last so a
   Meta key wins over every other backend. */
#define DK_FORALL_BACKEND_COMPONENTS(X, extra)               \
    X(CPU,         1, AutocastCPU,         0, extra)         \
    X(CUDA,        1, AutocastCUDA,        0, extra)         \
    X(HIP,         0, Undefined,           0, extra)         \
    X(XLA,         1, AutocastXLA,         1, extra)         \
    X(MPS,         1, AutocastMPS,         0, extra)         \
    X(IPU,         1, AutocastIPU,         0, extra)         \
    X(XPU,         1, AutocastXPU,         0, extra)         \
    X(HPU,         1, AutocastHPU,         0, extra)         \
    X(VE,          0, Undefined,           0, extra)         \
    X(Lazy,        1, Undefined,           1, extra)         \
    X(MTIA,        0, AutocastMTIA,        0, extra)         \
    X(PrivateUse1, 1, AutocastPrivateUse1, 0, extra)         \
    X(PrivateUse2, 1, Undefined,           0, extra)         \
    X(PrivateUse3, 1, Undefined,           0, extra)         \
    X(Meta,        1, Undefined,           0, extra)

/* PyTorch 2.7.1: 47 functionality keys after Undefined, 6 per backend. */
#define DK_FORALL_FUNCTIONALITY_KEYS(X, extra)                                          \
    X(Dense,                          1,             , DK_R_BACKEND|DK_R_BACKEND_FN, extra)    \
    X(FPGA,                           0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(MAIA,                           0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(Vulkan,                         0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(Metal,                          0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(Quantized,                      1, Quantized   , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_BACKEND_FN, extra) \
    X(CustomRNGKeyId,                 0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(MkldnnCPU,                      0,             , DK_R_BACKEND|DK_R_OTHER_BACKEND, extra) \
    X(Sparse,                         1, Sparse      , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_BACKEND_FN|DK_R_SPARSE, extra) \
    X(SparseCsr,                      1, SparseCsr   , DK_R_BACKEND|DK_R_OTHER_BACKEND|DK_R_BACKEND_FN, extra) \
    X(NestedTensor,                   1, NestedTensor, DK_R_NESTED|DK_R_MATH, extra)    \
    X(BackendSelect,                  0,             , DK_R_INCLUDED, extra)            \
    X(Python,                         0,             , DK_R_PYTHON, extra)              \
    X(Fake,                           0,             , 0, extra)                        \
    X(FuncTorchDynamicLayerBackMode,  0,             , 0, extra)                        \
    X(Functionalize,                  0,             , DK_R_FUNCTIONALIZE|DK_R_MATH, extra) \
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
    X(AutocastMTIA,                   0,             , DK_R_AUTOCAST, extra)            \
    X(AutocastXPU,                    0,             , DK_R_AUTOCAST, extra)            \
    X(AutocastIPU,                    0,             , DK_R_AUTOCAST, extra)            \
    X(AutocastHPU,                    0,             , DK_R_AUTOCAST, extra)            \
    X(AutocastXLA,                    0,             , DK_R_AUTOCAST, extra)            \
    X(AutocastMPS,                    0,             , DK_R_AUTOCAST, extra)            \
    X(AutocastCUDA,                   0,             , DK_R_AUTOCAST, extra)            \
    X(AutocastPrivateUse1,            0,             , DK_R_AUTOCAST, extra)            \
    X(FuncTorchBatched,               0,             , DK_R_FUNCTORCH|DK_R_BATCHED, extra) \
    X(BatchedNestedTensor,            0,             , 0, extra)                        \
    X(FuncTorchVmapMode,              0,             , DK_R_FUNCTORCH, extra)           \
    X(Batched,                        0,             , DK_R_FUNCTORCH, extra)           \
    X(VmapMode,                       0,             , DK_R_FUNCTORCH, extra)           \
    X(FuncTorchGradWrapper,           0,             , DK_R_FUNCTORCH, extra)           \
    X(DeferredInit,                   0,             , 0, extra)                        \
    X(PythonTLSSnapshot,              0,             , DK_R_PYTHON, extra)              \
    X(FuncTorchDynamicLayerFrontMode, 0,             , 0, extra)                        \
    X(TESTING_ONLY_GenericWrapper,    0,             , 0, extra)                        \
    X(TESTING_ONLY_GenericMode,       0,             , 0, extra)                        \
    X(PreDispatch,                    0,             , 0, extra)                        \
    X(PythonDispatcher,               0,             , DK_R_ALWAYS_AFTER, extra)

#define DK_FORALL_ALIAS_KEYS(X, extra)                                  \
    X(Autograd,                               AUTOGRAD_ALIAS, extra)    \
    X(CompositeImplicitAutograd,              MATH, extra)              \
    X(FuncTorchBatchedDecomposition,          FUNCTORCH_BATCHED, extra) \
    X(CompositeImplicitAutogradNestedTensor,  NESTED, extra)            \
    X(CompositeExplicitAutograd,              BACKEND, extra)           \
    X(CompositeExplicitAutogradNonFunctional, NON_FUNCTIONAL_BACKEND, extra)

#endif /* default lists */

#ifndef DK_C10_VERSION
#define DK_C10_VERSION 0 /* user lists: c10 2.7.1 behaviour */
#endif

/* A user configuration may leave the alias list out: c10's aliases are
   defined through roles, so they fit any list of functionality keys. */
#ifndef DK_FORALL_ALIAS_KEYS
#define DK_FORALL_ALIAS_KEYS(X, extra)                                  \
    X(Autograd,                               AUTOGRAD_ALIAS, extra)    \
    X(CompositeImplicitAutograd,              MATH, extra)              \
    X(CompositeImplicitAutogradNestedTensor,  NESTED, extra)            \
    X(CompositeExplicitAutograd,              BACKEND, extra)           \
    X(CompositeExplicitAutogradNonFunctional, NON_FUNCTIONAL_BACKEND, extra)
#endif

/* >>enums -------------------------------------------------------------------

   Numbering is c10's (see Note [Key numbering]):
     0                          Undefined
     1 .. F-1                   functionality keys, list order
     F                          EndOfFunctionalityKeys
     then per per-backend functionality P, in list order:
       StartOf<P>Backends       (stands for InvalidBit: key - start = backend)
       <Prefix><Backend> ...    one per backend, EndOf<P>Backends = the last
     then the alias keys; StartOfAliasKeys / EndOfAliasKeys name the ends.
*/

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
#define DK__COUNT_PB(name, pb, prefix, roles, extra) + pb
#define DK__COUNT_ALIAS(name, set, extra) + 1

enum {
    DK_NUM_BACKENDS = DK__BACKEND_END - 1,
    DK_NUM_PER_BACKEND_FUNCTIONALITIES = 0 DK_FORALL_FUNCTIONALITY_KEYS(DK__COUNT_PB, ~),
    DK_NUM_ALIAS_KEYS = 0 DK_FORALL_ALIAS_KEYS(DK__COUNT_ALIAS, ~)
};
#undef DK__COUNT_PB
#undef DK__COUNT_ALIAS

/* Runtime keys of one per-backend functionality: DK_<prefix><backend>. */
#define DK__RT_KEY(name, own_ag, autocast, functional, prefix) DK_##prefix##name,
#define DK__FK_BLOCK(name, pb, prefix, roles, extra)                       \
    DK__PER_BACKEND_##pb(DK_StartOf##name##Backends,                       \
        DK_FORALL_BACKEND_COMPONENTS(DK__RT_KEY, prefix)                   \
        DK_EndOf##name##Backends = DK_StartOf##name##Backends + DK_NUM_BACKENDS,)
#define DK__FK_ENUM(name, pb, prefix, roles, extra) DK_##name,
#define DK__ALIAS_ENUM(name, set, extra) DK_##name,
typedef enum dk_key {
    DK_Undefined = 0,
    DK_CatchAll = DK_Undefined,
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
#undef DK__FK_ENUM
#undef DK__ALIAS_ENUM

/* Runtime slots, LuaJIT-style running totals: DK__SLOT_<F> is the first slot
   of functionality F, one slot per backend when F is per-backend. Slot 0 is
   Undefined's. See Note [Runtime slots]. */
#define DK__FK_SLOT(name, pb, prefix, roles, extra) \
    DK__SLOT_##name, DK__SLOT_##name##_LAST = DK__SLOT_##name + (pb ? DK_NUM_BACKENDS : 1) - 1,
enum {
    DK__SLOT_Undefined = 0,
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_SLOT, ~)
    DK_NUM_RUNTIME_ENTRIES
};
#undef DK__FK_SLOT

enum {
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
DK_STATIC_ASSERT(DK_NUM_RUNTIME_ENTRIES ==
                 DK_NUM_FUNCTIONALITY_KEYS + DK_NUM_PER_BACKEND_FUNCTIONALITIES * (DK_NUM_BACKENDS - 1),
                 "runtime slots: c10's num_runtime_entries formula");
DK_STATIC_ASSERT(DK_NUM_RUNTIME_ENTRIES < 65536, "slot offsets are 16 bits wide");

/* >>roles -------------------------------------------------------------------

   Note [Roles]. c10 spells its named keysets out key by key, in several
   places that drifted apart. Here each functionality row says which named
   keysets it belongs to, and the keysets are computed from the rows; special
   keys (AutogradOther, ADInplaceOrView, ...) are found by role too, so a user
   list may rename or drop them. */
enum dk_role {
    DK_R_BACKEND        = 1 << 0,  /* backend key: CompositeExplicitAutograd covers it */
    DK_R_OTHER_BACKEND  = 1 << 1,  /* backend whose autograd layer is AutogradOther */
    DK_R_BACKEND_FN     = 1 << 2,  /* backend functionality (highestPriorityBackendTypeId) */
    DK_R_SPARSE         = 1 << 3,  /* outside CompositeExplicitAutogradNonFunctional */
    DK_R_AUTOGRAD       = 1 << 4,  /* autograd layer */
    DK_R_MATH           = 1 << 5,  /* CompositeImplicitAutograd covers it (besides backends, autograd) */
    DK_R_NESTED         = 1 << 6,  /* CompositeImplicitAutogradNestedTensor covers it */
    DK_R_AUTOCAST       = 1 << 7,  /* autocast layer: excluded by default */
    DK_R_INCLUDED       = 1 << 8,  /* included by default in thread-local state */
    DK_R_PYTHON         = 1 << 9,  /* python layer */
    DK_R_FUNCTORCH      = 1 << 10, /* functorch transform */
    DK_R_BATCHED        = 1 << 11, /* FuncTorchBatchedDecomposition covers it */
    DK_R_AUTOGRAD_OTHER = 1 << 12, /* the autograd key of backends without their own */
    DK_R_INPLACE_VIEW   = 1 << 13, /* ADInplaceOrView */
    DK_R_FUNCTIONALIZE  = 1 << 14, /* Functionalize */
    DK_R_ALWAYS_AFTER   = 1 << 15  /* kept in every "after X" keyset (PythonDispatcher) */
};

/* Raw keyset bits of a functionality key value / a backend component. */
#define DK__FBIT(k) ((uint64_t)1 << (DK_NUM_BACKENDS + (k) - 1))
#define DK__BBIT(b) ((uint64_t)1 << ((b) - 1))
#define DK__R_BACKENDS (((uint64_t)1 << DK_NUM_BACKENDS) - 1)
#define DK__R_FULL ((uint64_t)-1 >> (64 - DK_NUM_KEYSET_BITS))

/* Functionality bits of every row that has `role`; first key that has it. */
#define DK__ROLE_TERM(name, pb, prefix, roles, role) | (((roles) & (role)) ? DK__FBIT(DK_##name) : 0)
#define DK__ROLE_BITS(role) ((uint64_t)0 DK_FORALL_FUNCTIONALITY_KEYS(DK__ROLE_TERM, role))
#define DK__ROLE_FIRST(name, pb, prefix, roles, role) ((roles) & (role)) ? DK_##name :
#define DK__ROLE_KEY(role) (DK_FORALL_FUNCTIONALITY_KEYS(DK__ROLE_FIRST, role) DK_Undefined)
#define DK__PB_ROLE_FIRST(name, pb, prefix, roles, role) (pb && ((roles) & (role))) ? DK_##name :
#define DK__PB_ROLE_KEY(role) (DK_FORALL_FUNCTIONALITY_KEYS(DK__PB_ROLE_FIRST, role) DK_Undefined)
/* Backend bits of every backend component whose column `col` is 1. */
#define DK__BC_OWN_AUTOGRAD(name, own_ag, autocast, functional, extra) | (own_ag ? DK__BBIT(DK_##name##Bit) : 0)
#define DK__BC_FUNCTIONAL(name, own_ag, autocast, functional, extra) | (functional ? DK__BBIT(DK_##name##Bit) : 0)

enum {
    /* special keys, found by role (Undefined when a user list has none) */
    DK_KEY_AUTOGRAD_OTHER = DK__ROLE_KEY(DK_R_AUTOGRAD_OTHER),
    DK_KEY_INPLACE_VIEW = DK__ROLE_KEY(DK_R_INPLACE_VIEW),
    DK_KEY_FUNCTIONALIZE = DK__ROLE_KEY(DK_R_FUNCTIONALIZE),
    DK_KEY_FIRST_AUTOGRAD = DK__ROLE_KEY(DK_R_AUTOGRAD),
    /* the per-backend autograd functionality (AutogradFunctionality) */
    DK_KEY_AUTOGRAD_FUNCTIONALITY = DK__PB_ROLE_KEY(DK_R_AUTOGRAD)
};

/* c10's DispatchKeySet(FULL_AFTER, k): every bit below k's functionality bit,
   plus the always-after keys. Full set when k is Undefined (no such key). */
#define DK__R_FULL_AFTER(k) \
    ((int)(k) != 0 ? ((DK__FBIT(k) - 1) | DK__ROLE_BITS(DK_R_ALWAYS_AFTER)) : DK__R_FULL)

/* The raw named keysets (c10 names in comments). */
#define DK__R_AUTOGRAD        DK__ROLE_BITS(DK_R_AUTOGRAD)                 /* autograd_dispatch_keyset */
#define DK__R_AUTOGRAD_ALIAS  (DK__R_AUTOGRAD | DK__R_BACKENDS)            /* runtime set of Autograd */
#define DK__R_AUTOGRAD_WITH_INPLACE_VIEW (DK__R_AUTOGRAD | DK__ROLE_BITS(DK_R_INPLACE_VIEW))
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
#define DK__R_MATH            (DK__R_BACKEND | DK__R_AUTOGRAD | DK__ROLE_BITS(DK_R_MATH)) /* math_dispatch_keyset */
#define DK__R_NESTED          (DK__ROLE_BITS(DK_R_NESTED) | DK__R_BACKENDS) /* nested_dispatch_keyset */
#define DK__R_AFTER_AUTOGRAD  DK__R_FULL_AFTER(DK_KEY_FIRST_AUTOGRAD)      /* after_autograd_keyset */
#define DK__R_AFTER_INPLACE_VIEW DK__R_FULL_AFTER(DK_KEY_INPLACE_VIEW)     /* after_ADInplaceOrView_keyset */
#define DK__R_AFTER_FUNCTIONALIZE                                          /* after_func_keyset */ \
    (DK__R_FULL_AFTER(DK_KEY_FUNCTIONALIZE) & ~DK__ROLE_BITS(DK_R_INPLACE_VIEW))

/* >>keyset ------------------------------------------------------------------ */

/* A set of dispatch keys: backend bits low, functionality bits above. */
typedef struct dk_keyset { uint64_t repr; } dk_keyset;

DK_INLINE dk_keyset dk_ks_raw(uint64_t repr) { dk_keyset ks; ks.repr = repr; return ks; }

/* The named keysets, as dk_keyset values. */
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

/* Note [Runtime slots]. c10's offsetsAndMasks(), generated at compile time:
   for functionality f, the first slot and the backend mask (all backends when
   f is per-backend, else 0). Indexed by functionality key value; entries
   past the last functionality are {0, 0}, so a keyset with bits above FULL
   lands on the Undefined slot instead of reading out of bounds (c10 does). */
typedef struct dk_offset_mask { uint16_t offset; uint16_t mask; } dk_offset_mask;
#define DK__FK_OFFSET_MASK(name, pb, prefix, roles, extra) \
    { (uint16_t)DK__SLOT_##name, (uint16_t)(pb ? DK__R_BACKENDS : 0) },
static const dk_offset_mask dk__offsets_and_masks[65 - DK_NUM_BACKENDS] DK__UNUSED = {
    { 0, 0 },
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_OFFSET_MASK, ~)
};
#undef DK__FK_OFFSET_MASK

/* Per-backend functionality keys in list order (block j of the runtime keys). */
#define DK__FK_PB(name, pb, prefix, roles, extra) DK__PER_BACKEND_##pb(DK_##name,)
static const uint8_t dk__per_backend_functionalities[DK_NUM_PER_BACKEND_FUNCTIONALITIES + 1] DK__UNUSED = {
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_PB, ~) 0
};
#undef DK__FK_PB

/* First runtime key (the StartOf marker) of each functionality, 0 if not per-backend. */
#define DK__FK_START(name, pb, prefix, roles, extra) DK__PER_BACKEND_##pb(DK_StartOf##name##Backends) + 0,
static const uint8_t dk__per_backend_start[DK_NUM_FUNCTIONALITY_KEYS] DK__UNUSED = {
    0, DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_START, ~)
};
#undef DK__FK_START

/* Role flags (Note [Roles]) of each functionality key. */
#define DK__FK_ROLES(name, pb, prefix, roles, extra) (uint16_t)(roles),
static const uint16_t dk__functionality_roles[DK_NUM_FUNCTIONALITY_KEYS] DK__UNUSED = {
    0, DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_ROLES, ~)
};
#undef DK__FK_ROLES

/* Position of the highest set bit, 1-based; 0 when x == 0. x < 2^63. */
DK_INLINE int dk__bit_width(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return 63 - __builtin_clzll((x << 1) | 1);
#else
    int n = 0;
    while (x) { n++; x >>= 1; }
    return n;
#endif
}

/* Position of the lowest set bit, 0-based; x != 0. */
DK_INLINE int dk__lowest_bit(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) { n++; x >>= 1; }
    return n;
#endif
}

/* Does functionality key f carry role flag(s) `role` (Note [Roles])? */
DK_INLINE int dk_key_has_role(dk_key f, int role) {
    return f > DK_Undefined && f < DK_EndOfFunctionalityKeys && (dk__functionality_roles[f] & role) != 0;
}

DK_INLINE int dk_key_is_alias(dk_key k) { return k >= DK_StartOfAliasKeys && k <= DK_EndOfAliasKeys; }

/* Per-backend functionality key (Dense, Sparse, AutogradFunctionality, ...). */
DK_INLINE int dk_key_is_per_backend_functionality(dk_key k) {
    return k > DK_Undefined && k < DK_EndOfFunctionalityKeys && dk__offsets_and_masks[k].mask != 0;
}

/* The functionality of a key (c10 toFunctionalityKey): itself for a
   functionality key, the per-backend functionality for a runtime key,
   Undefined for alias keys. */
DK_INLINE dk_key dk_key_functionality(dk_key k) {
    if (k <= DK_EndOfFunctionalityKeys) return k;
    if (k > DK_EndOfRuntimeBackendKeys) return DK_Undefined;
    return (dk_key)dk__per_backend_functionalities[(k - DK_EndOfFunctionalityKeys - 1) / (DK_NUM_BACKENDS + 1)];
}

/* The backend component of a per-backend runtime key (c10 toBackendComponent);
   InvalidBit for every other key. */
DK_INLINE dk_backend dk_key_backend(dk_key k) {
    if (k <= DK_EndOfFunctionalityKeys || k > DK_EndOfRuntimeBackendKeys) return DK_InvalidBit;
    return (dk_backend)((k - DK_EndOfFunctionalityKeys - 1) % (DK_NUM_BACKENDS + 1));
}

/* The runtime key of (per-backend functionality, backend) (c10
   toRuntimePerBackendFunctionalityKey); f itself when f is not per-backend. */
DK_INLINE dk_key dk_key_runtime(dk_key f, dk_backend b) {
    if (!dk_key_is_per_backend_functionality(f)) return f;
    return (dk_key)(dk__per_backend_start[f] + b);
}

/* A key with a slot of its own: Undefined, a functionality key that is not
   per-backend, or a per-backend runtime key (not a StartOf marker). */
DK_INLINE int dk_key_is_runtime(dk_key k) {
    if (k < DK_EndOfFunctionalityKeys) return !dk_key_is_per_backend_functionality(k);
    return k <= DK_EndOfRuntimeBackendKeys && dk_key_backend(k) != DK_InvalidBit;
}

DK_INLINE dk_keyset dk_ks_from_backend(dk_backend b) {
    return dk_ks_raw(b == DK_InvalidBit || b > DK_EndOfBackendKeys ? 0 : DK__BBIT(b));
}

/* c10 DispatchKeySet(k): a functionality bit, plus a backend bit for a
   per-backend runtime key. Undefined and alias keys give the empty set. */
DK_INLINE dk_keyset dk_ks_from_key(dk_key k) {
    dk_key f = dk_key_functionality(k);
    if (f == DK_Undefined) return dk_ks_raw(0);
    return dk_ks_raw(DK__FBIT(f) | dk_ks_from_backend(dk_key_backend(k)).repr);
}

DK_INLINE dk_keyset dk_ks_or(dk_keyset a, dk_keyset b) { return dk_ks_raw(a.repr | b.repr); }
DK_INLINE dk_keyset dk_ks_and(dk_keyset a, dk_keyset b) { return dk_ks_raw(a.repr & b.repr); }
DK_INLINE int dk_ks_equal(dk_keyset a, dk_keyset b) { return a.repr == b.repr; }
DK_INLINE int dk_ks_is_empty(dk_keyset a) { return a.repr == 0; }

/* c10's operator-: removes b's functionality bits; a's backend bits stay. */
DK_INLINE dk_keyset dk_ks_minus(dk_keyset a, dk_keyset b) {
    return dk_ks_raw(a.repr & (DK__R_BACKENDS | ~b.repr));
}
DK_INLINE dk_keyset dk_ks_add(dk_keyset a, dk_key k) { return dk_ks_or(a, dk_ks_from_key(k)); }
/* Clears only k's functionality bit (backend bits may serve other keys). */
DK_INLINE dk_keyset dk_ks_remove(dk_keyset a, dk_key k) {
    return dk_ks_raw(a.repr & ~(dk_ks_from_key(k).repr & ~DK__R_BACKENDS));
}
DK_INLINE dk_keyset dk_ks_remove_backend(dk_keyset a, dk_backend b) {
    return dk_ks_raw(a.repr & ~dk_ks_from_backend(b).repr);
}
DK_INLINE int dk_ks_has_all(dk_keyset a, dk_keyset b) { return (a.repr & b.repr) == b.repr; }
DK_INLINE int dk_ks_has_any(dk_keyset a, dk_keyset b) { return (a.repr & b.repr) != 0; }
/* Every bit of k present. False for Undefined and alias keys (no bits). */
DK_INLINE int dk_ks_has(dk_keyset a, dk_key k) {
    dk_keyset s = dk_ks_from_key(k);
    return s.repr != 0 && dk_ks_has_all(a, s);
}

DK_INLINE dk_key dk_ks_highest_functionality(dk_keyset a) {
    return (dk_key)dk__bit_width(a.repr >> DK_NUM_BACKENDS);
}
DK_INLINE dk_backend dk_ks_highest_backend(dk_keyset a) {
    return (dk_backend)dk__bit_width(a.repr & DK__R_BACKENDS);
}
/* c10 getBackendIndex: index of the highest backend bit, 0 for CPU or none. */
DK_INLINE int dk_ks_backend_index(dk_keyset a) {
    return dk__bit_width((a.repr & DK__R_BACKENDS) >> 1);
}
/* c10 highestPriorityTypeId: the key a call with this keyset dispatches to. */
DK_INLINE dk_key dk_ks_highest_key(dk_keyset a) {
    return dk_key_runtime(dk_ks_highest_functionality(a), dk_ks_highest_backend(a));
}
/* c10 highestPriorityBackendTypeId. */
DK_INLINE dk_key dk_ks_highest_backend_key(dk_keyset a) {
    return dk_ks_highest_key(dk_ks_and(a, DK_KS_BACKEND_FUNCTIONALITY));
}

/* c10 getDispatchTableIndexForDispatchKeySet: the runtime slot of the
   highest key. Two bit scans and one load: (repr >> (B-1)) | 1 puts the
   functionality bits one place up, so its bit width minus one is f. */
DK_INLINE int dk_ks_table_index(dk_keyset a) {
    dk_offset_mask om = dk__offsets_and_masks[dk__bit_width(a.repr >> DK_NUM_BACKENDS)];
    return om.offset + dk__bit_width((a.repr & om.mask) >> 1);
}

/* The slot of a key (c10 getDispatchTableIndexForDispatchKey). */
DK_INLINE int dk_key_table_index(dk_key k) { return dk_ks_table_index(dk_ks_from_key(k)); }

/* Iteration in c10's order: functionality keys ascending, and for a
   per-backend functionality one runtime key per backend bit, ascending.
       for (k = dk_ks_first(ks); k != DK_Undefined; k = dk_ks_next(ks, k)) */
DK_INLINE dk_key dk__ks_from_functionality(dk_keyset a, int f) {
    uint64_t fbits = (a.repr >> DK_NUM_BACKENDS) & ~(((uint64_t)1 << f) - 1);
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
        uint64_t later = a.repr & DK__R_BACKENDS & ~(((uint64_t)1 << dk_key_backend(k)) - 1);
        if (later) return dk_key_runtime(f, (dk_backend)(dk__lowest_bit(later) + 1));
    }
    return dk__ks_from_functionality(a, f);
}
#define DK_KS_FOREACH(k, ks) for ((k) = dk_ks_first(ks); (k) != DK_Undefined; (k) = dk_ks_next((ks), (k)))

/* >>keys -------------------------------------------------------------------- */

/* c10 isBackendDispatchKey: a runtime key covered by CompositeExplicitAutograd. */
DK_INLINE int dk_key_is_backend(dk_key k) {
    return !dk_key_is_alias(k) && dk_ks_has(DK_KS_BACKEND, k);
}

/* Runtime keyset of an alias key (c10 getRuntimeDispatchKeySet); for a
   non-alias key, the key's own set. See "Differences from c10" in README:
   FuncTorchBatchedDecomposition maps to {FuncTorchBatched} (c10: empty). */
DK_INLINE dk_keyset dk_alias_runtime_set(dk_key alias) {
#define DK__ALIAS_SET(name, set, extra) if (alias == DK_##name) return dk_ks_raw(DK__R_##set);
    DK_FORALL_ALIAS_KEYS(DK__ALIAS_SET, ~)
#undef DK__ALIAS_SET
    return dk_ks_from_key(alias);
}

/* c10 isIncludedInAlias: runtime key k is covered by alias `alias`. */
DK_INLINE int dk_key_in_alias(dk_key k, dk_key alias) {
    if (k == DK_Undefined || dk_key_is_alias(k) || !dk_key_is_alias(alias)) return 0;
    return dk_ks_has(dk_alias_runtime_set(alias), k);
}

/* c10 getAutogradRelatedKeySetFromBackend: ADInplaceOrView + the backend's autograd key. */
DK_INLINE dk_keyset dk_backend_autograd_related_set(dk_backend b) {
    uint64_t own = (uint64_t)0 DK_FORALL_BACKEND_COMPONENTS(DK__BC_OWN_AUTOGRAD, ~);
    dk_keyset ag = (b != DK_InvalidBit && (own & dk_ks_from_backend(b).repr))
                       ? dk_ks_from_key(dk_key_runtime((dk_key)DK_KEY_AUTOGRAD_FUNCTIONALITY, b))
                       : dk_ks_from_key((dk_key)DK_KEY_AUTOGRAD_OTHER);
    return dk_ks_or(ag, dk_ks_from_key((dk_key)DK_KEY_INPLACE_VIEW));
}

/* c10 getAutogradKeyFromBackend: AutogradCPU for CPUBit, AutogradOther for HIPBit. */
DK_INLINE dk_key dk_backend_autograd_key(dk_backend b) {
    return dk_ks_highest_key(dk_backend_autograd_related_set(b));
}

/* c10 getAutocastRelatedKeySetFromBackend. */
DK_INLINE dk_keyset dk_backend_autocast_set(dk_backend b) {
#define DK__BC_AUTOCAST(name, own_ag, autocast, functional, extra) \
    if (b == DK_##name##Bit) return dk_ks_from_key(DK_##autocast);
    DK_FORALL_BACKEND_COMPONENTS(DK__BC_AUTOCAST, ~)
#undef DK__BC_AUTOCAST
    return DK_KS_EMPTY;
}

/* c10 getBackendKeySetFromAutograd: the backend keys an autograd key sits on. */
DK_INLINE dk_keyset dk_autograd_backend_set(dk_key k) {
    uint64_t own = (uint64_t)0 DK_FORALL_BACKEND_COMPONENTS(DK__BC_OWN_AUTOGRAD, ~);
    dk_key f = dk_key_functionality(k);
    dk_backend b = dk_key_backend(k);
    if (k == DK_Undefined || f == DK_Undefined || !dk_key_has_role(f, DK_R_AUTOGRAD)) return DK_KS_EMPTY;
    if (dk_key_has_role(f, DK_R_AUTOGRAD_OTHER)) return DK_KS_OTHER_BACKENDS;
    if (dk_key_has_role(f, DK_R_NESTED)) /* AutogradNestedTensor: every NestedTensor key */
        return dk_ks_raw((DK__ROLE_BITS(DK_R_NESTED) & ~DK__R_AUTOGRAD) | DK__R_BACKENDS);
    if (b != DK_InvalidBit && (own & dk_ks_from_backend(b).repr))
        return dk_ks_from_key(dk_key_runtime(DK_Dense, b));
    return DK_KS_EMPTY;
}

/* >>status ------------------------------------------------------------------ */

#define DK_FORALL_STATUS(X)                                                     \
    X(OK,                "ok")                                                  \
    X(ERR_NULL,          "a required pointer argument is NULL")                 \
    X(ERR_UNKNOWN_KEY,   "no dispatch key or backend component has that name")  \
    X(ERR_BAD_KEY,       "the value is not a valid key for this use")           \
    X(ERR_CONFIG_MISMATCH, "translation units were compiled with different key lists")

#define DK__STATUS_ENUM(name, text) DK_##name,
typedef enum dk_status { DK_FORALL_STATUS(DK__STATUS_ENUM) DK__STATUS_END } dk_status;
#undef DK__STATUS_ENUM

/* >>api --------------------------------------------------------------------- */

/* Signature of this translation unit's lists, compared by dk_config_check. */
#define DK__SIG_BC(name, own_ag, autocast, functional, extra) name own_ag autocast functional;
#define DK__SIG_FK(name, pb, prefix, roles, extra) name pb prefix roles;
#define DK__SIG_ALIAS(name, set, extra) name set;
#define DK_CONFIG_SIGNATURE                                                  \
    DK__XSTR(DK_FORALL_BACKEND_COMPONENTS(DK__SIG_BC, ~) |                   \
             DK_FORALL_FUNCTIONALITY_KEYS(DK__SIG_FK, ~) |                   \
             DK_FORALL_ALIAS_KEYS(DK__SIG_ALIAS, ~))

DK_API int dk_version_number(void);
DK_API const char *dk_status_str(dk_status s);
/* The detailed message of the last failure on this thread ("" if none). */
DK_API const char *dk_last_error(void);

/* Names exactly as c10 prints them ("CPU", "AutogradCUDA", "CPUBit");
   markers print their enumerator names. NULL for a value out of range. */
DK_API const char *dk_key_name(dk_key k);
DK_API const char *dk_backend_name(dk_backend b);
/* Name -> key. Every name dk_key_name returns parses back; unknown names give
   DK_ERR_UNKNOWN_KEY and leave *out untouched. */
DK_API dk_status dk_key_parse(const char *name, dk_key *out);
DK_API dk_status dk_backend_parse(const char *name, dk_backend *out);
/* snprintf-like: writes "DispatchKeySet(CPU, AutogradCPU)", returns the
   length the full text needs. */
DK_API int dk_ks_to_string(dk_keyset ks, char *buf, size_t size);
/* The runtime key of each slot (c10's runtime-key table). */
DK_API dk_key dk_slot_key(int slot);

/* Compares a signature with the implementation's; DK_ERR_CONFIG_MISMATCH
   (with both signatures in dk_last_error) when they differ. */
DK_API dk_status dk__config_check(const char *caller_signature);
#define dk_config_check() dk__config_check(DK_CONFIG_SIGNATURE)

#ifdef __cplusplus
}
#endif

#endif /* DISPATCH_H */

/* >>impl ==================================================================== */

#if defined(DISPATCH_IMPLEMENTATION) && !defined(DK__IMPLEMENTATION_INCLUDED)
#define DK__IMPLEMENTATION_INCLUDED

#include <stdio.h>
#include <string.h>
#include <stdarg.h>

#ifndef DK_ASSERT
#include <assert.h>
#define DK_ASSERT(c) assert(c)
#endif

#ifndef DK_THREAD_LOCAL
#if defined(__cplusplus) && __cplusplus >= 201103L
#define DK_THREAD_LOCAL thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define DK_THREAD_LOCAL _Thread_local
#elif defined(_MSC_VER)
#define DK_THREAD_LOCAL __declspec(thread)
#elif defined(__GNUC__) || defined(__clang__)
#define DK_THREAD_LOCAL __thread
#else
#error "dispatch.h: define DK_THREAD_LOCAL for this compiler"
#endif
#endif

#define DK__PRIVATE static DK__UNUSED

#ifdef __cplusplus
extern "C" {
#endif

/* >>impl-errors ------------------------------------------------------------- */

static DK_THREAD_LOCAL char dk__error_text[2048];

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
DK__PRIVATE dk_status dk__fail(dk_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dk__error_text, sizeof dk__error_text, fmt, ap);
    va_end(ap);
    return s;
}

DK_API int dk_version_number(void) { return DK_VERSION_NUMBER; }

DK_API const char *dk_status_str(dk_status s) {
#define DK__STATUS_TEXT(name, text) text,
    static const char *const texts[] = { DK_FORALL_STATUS(DK__STATUS_TEXT) };
#undef DK__STATUS_TEXT
    return (unsigned)s < (unsigned)DK__STATUS_END ? texts[s] : "unknown status";
}

DK_API const char *dk_last_error(void) { return dk__error_text; }

/* >>impl-names -------------------------------------------------------------- */

/* Every key value's name, generated from the lists (ORDER KEYS). */
#define DK__FK_NAME(name, pb, prefix, roles, extra) #name,
#define DK__RT_NAME(name, own_ag, autocast, functional, prefix) DK__STR(prefix) #name,
#define DK__FK_BLOCK_NAMES(name, pb, prefix, roles, extra) \
    DK__PER_BACKEND_##pb("StartOf" #name "Backends", DK_FORALL_BACKEND_COMPONENTS(DK__RT_NAME, prefix))
#define DK__ALIAS_NAME(name, set, extra) #name,
static const char *const dk__key_names[DK_NUM_KEYS] = {
    "Undefined",
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_NAME, ~)
    "EndOfFunctionalityKeys",
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_BLOCK_NAMES, ~)
    DK_FORALL_ALIAS_KEYS(DK__ALIAS_NAME, ~)
};
#undef DK__FK_NAME
#undef DK__RT_NAME
#undef DK__FK_BLOCK_NAMES
#undef DK__ALIAS_NAME

#define DK__BC_NAME(name, own_ag, autocast, functional, extra) #name "Bit",
static const char *const dk__backend_names[DK_NUM_BACKENDS + 1] = {
    "InvalidBit", DK_FORALL_BACKEND_COMPONENTS(DK__BC_NAME, ~)
};
#undef DK__BC_NAME

DK_API const char *dk_key_name(dk_key k) {
    return (unsigned)k < (unsigned)DK_NUM_KEYS ? dk__key_names[k] : NULL;
}

DK_API const char *dk_backend_name(dk_backend b) {
    return (unsigned)b <= (unsigned)DK_NUM_BACKENDS ? dk__backend_names[b] : NULL;
}

DK__PRIVATE int dk__find_name(const char *const *names, int n, const char *name) {
    int i;
    for (i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

DK_API dk_status dk_key_parse(const char *name, dk_key *out) {
    int i;
    if (!name || !out) return dk__fail(DK_ERR_NULL, "dk_key_parse: NULL argument");
    i = dk__find_name(dk__key_names, DK_NUM_KEYS, name);
    if (i < 0) return dk__fail(DK_ERR_UNKNOWN_KEY, "dk_key_parse: no dispatch key is named '%s'", name);
    *out = (dk_key)i;
    return DK_OK;
}

DK_API dk_status dk_backend_parse(const char *name, dk_backend *out) {
    int i;
    if (!name || !out) return dk__fail(DK_ERR_NULL, "dk_backend_parse: NULL argument");
    i = dk__find_name(dk__backend_names, DK_NUM_BACKENDS + 1, name);
    if (i < 0) return dk__fail(DK_ERR_UNKNOWN_KEY, "dk_backend_parse: no backend component is named '%s'", name);
    *out = (dk_backend)i;
    return DK_OK;
}

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

DK_API int dk_ks_to_string(dk_keyset ks, char *buf, size_t size) {
    size_t len = 0;
    dk_key k;
    const char *sep = "";
    if (buf && size) buf[0] = '\0';
    else size = 0;
    dk__append(buf, size, &len, "DispatchKeySet(");
    DK_KS_FOREACH(k, ks) {
        dk__append(buf, size, &len, sep);
        dk__append(buf, size, &len, dk__key_names[k]);
        sep = ", ";
    }
    dk__append(buf, size, &len, ")");
    return (int)len;
}

/* >>impl-slots --------------------------------------------------------------- */

/* c10's runtime-key table: slot -> key. */
#define DK__RT_SLOT_KEY(name, own_ag, autocast, functional, prefix) DK_##prefix##name,
#define DK__FK_SLOT_KEYS(name, pb, prefix, roles, extra) \
    DK__PER_BACKEND_##pb(DK_FORALL_BACKEND_COMPONENTS(DK__RT_SLOT_KEY, prefix)) \
    DK__NOT_PER_BACKEND_##pb(DK_##name,)
static const dk_key dk__slot_keys[DK_NUM_RUNTIME_ENTRIES] = {
    DK_Undefined,
    DK_FORALL_FUNCTIONALITY_KEYS(DK__FK_SLOT_KEYS, ~)
};
#undef DK__RT_SLOT_KEY
#undef DK__FK_SLOT_KEYS

DK_API dk_key dk_slot_key(int slot) {
    return slot >= 0 && slot < DK_NUM_RUNTIME_ENTRIES ? dk__slot_keys[slot] : DK_Undefined;
}

/* >>impl-config -------------------------------------------------------------- */

DK_API dk_status dk__config_check(const char *caller_signature) {
    static const char own[] = DK_CONFIG_SIGNATURE;
    if (!caller_signature) return dk__fail(DK_ERR_NULL, "dk_config_check: NULL signature");
    if (caller_signature == own || strcmp(caller_signature, own) == 0) return DK_OK;
    return dk__fail(DK_ERR_CONFIG_MISMATCH,
                    "dispatch.h: this translation unit was compiled with different key lists than the "
                    "implementation (DK_CONFIG_HEADER / DK_PRESET_TORCH_1_13_1 must be the same everywhere); "
                    "caller: %.600s; implementation: %.600s",
                    caller_signature, own);
}

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
