/* make: flags=-DDK_PRESET_TORCH_2_11 */
/* The DK_PRESET_TORCH_2_11 key space against what a real PyTorch 2.11.0
   says of itself (pytorch-2.11-facts.md: counts and markers, backend
   components with their autograd and autocast keys, c10's offsetsAndMasks()
   for every functionality key, the named keysets' raw values and how c10
   prints them), plus what follows from them: slots, names, aliases. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#if DK_C10_VERSION != 21100
#error "build with -DDK_PRESET_TORCH_2_11"
#endif

static void test_counts_and_markers(void **state) {
    (void)state;
    assert_int_equal(DK_C10_VERSION, 21100);
    assert_int_equal(DK_NUM_BACKENDS, 16);                      /* num_backends */
    assert_int_equal(DK_NUM_FUNCTIONALITY_KEYS, 48);            /* num_functionality_keys */
    assert_int_equal(DK_NUM_SLOTS, 138);              /* num_runtime_entries */
    assert_int_equal(DK_NUM_PER_BACKEND_FUNCTIONALITIES, 6);    /* numPerBackendFunctionalityKeys */
    assert_true(DK_KS_BACKENDS.repr == 0xffffULL);              /* full_backend_mask */
    assert_true(DK_KS_FULL.repr == 0x7fffffffffffffffULL);      /* FULL */
    assert_int_equal(DK_EndOfFunctionalityKeys, 48);
    assert_int_equal(DK_StartOfDenseBackends, 49);
    assert_int_equal(DK_EndOfRuntimeBackendKeys, 150);
    assert_int_equal(DK_StartOfAliasKeys, 151);
    assert_int_equal(DK_EndOfAliasKeys, 156);
    assert_int_equal(DK_NUM_ALIAS_KEYS, 6);
}

/* Backend components: value, c10's name, bit, getAutogradKeyFromBackend and
   the autocast key (facts table; "" = none). */
static void test_backend_components(void **state) {
    static const struct { dk_backend b; const char *name, *autograd, *autocast; } facts[] = {
        { DK_CPUBit, "CPUBit", "AutogradCPU", "AutocastCPU" },
        { DK_CUDABit, "CUDABit", "AutogradCUDA", "AutocastCUDA" },
        { DK_HIPBit, "HIPBit", "AutogradOther", "" },
        { DK_XLABit, "XLABit", "AutogradXLA", "AutocastXLA" },
        { DK_MPSBit, "MPSBit", "AutogradMPS", "AutocastMPS" },
        { DK_IPUBit, "IPUBit", "AutogradIPU", "AutocastIPU" },
        { DK_XPUBit, "XPUBit", "AutogradXPU", "AutocastXPU" },
        { DK_HPUBit, "HPUBit", "AutogradHPU", "AutocastHPU" },
        { DK_VEBit, "VEBit", "AutogradOther", "" },
        { DK_LazyBit, "LazyBit", "AutogradLazy", "" },
        { DK_MTIABit, "MTIA", "AutogradMTIA", "AutocastMTIA" },
        { DK_MAIABit, "MAIA", "AutogradMAIA", "AutocastMAIA" },
        { DK_PrivateUse1Bit, "PrivateUse1Bit", "AutogradPrivateUse1", "AutocastPrivateUse1" },
        { DK_PrivateUse2Bit, "PrivateUse2Bit", "AutogradPrivateUse2", "" },
        { DK_PrivateUse3Bit, "PrivateUse3Bit", "AutogradPrivateUse3", "" },
        { DK_MetaBit, "MetaBit", "AutogradMeta", "" },
    };
    int i;
    (void)state;
    assert_int_equal(sizeof facts / sizeof facts[0], DK_NUM_BACKENDS);
    for (i = 0; i < DK_NUM_BACKENDS; i++) {
        char bit_name[32];
        dk_backend parsed = DK_InvalidBit;
        dk_keyset autocast = dk_backend_autocast_set(facts[i].b);
        assert_int_equal(facts[i].b, i + 1);                                   /* value */
        assert_true(dk_ks_from_backend(facts[i].b).repr == (uint64_t)1 << i); /* bit = priority order */
        /* c10's names, MTIA and MAIA without "Bit"; the enumerator's
           name (MTIABit) parses too */
        assert_string_equal(dk_backend_name(facts[i].b), facts[i].name);
        snprintf(bit_name, sizeof bit_name, "%s%s", facts[i].name, strstr(facts[i].name, "Bit") ? "" : "Bit");
        assert_int_equal(dk_backend_parse(bit_name, &parsed), DK_OK);
        assert_int_equal(parsed, facts[i].b);
        assert_string_equal(dk_key_name(dk_backend_autograd_key(facts[i].b)), facts[i].autograd);
        if (facts[i].autocast[0]) {
            assert_int_equal(dk_ks_highest_key(autocast), dk_ks_first(autocast));
            assert_string_equal(dk_key_name(dk_ks_highest_key(autocast)), facts[i].autocast);
        } else {
            assert_true(dk_ks_is_empty(autocast));
        }
    }
    assert_int_equal(DK_MetaBit, 16);
    assert_int_equal(DK_EndOfBackendKeys, DK_MetaBit);
    /* MTIA and MAIA have autograd keys of their own, but c10 2.11's
       getBackendKeySetFromAutograd(AutogradMTIA) is empty (no case for it) */
    assert_true(dk_ks_is_empty(dk_autograd_key_backend_set(DK_AutogradMTIA)));
    assert_true(dk_ks_equal(dk_autograd_key_backend_set(DK_AutogradMAIA), dk_ks_from_key(DK_MAIA)));
}

/* So with a CompositeImplicitAutograd kernel and an MTIA kernel, 2.11 fills
   AutogradMTIA with the composite kernel (no backend kernel is seen under
   it), AutogradMAIA with the autograd fallback when MAIA has a kernel. */
static void k_plain(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks; (void)s;
}
static void test_autograd_mtia_sits_on_no_backend(void **state) {
    dk_registry *r;
    dk_registration *h;
    const dk_operator *op;
    const dk_kernel *cia, *ag_mtia, *ag_maia;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_def(r, "t::h(Tensor x) -> ()", &h), DK_OK);
    assert_int_equal(dk_impl(r, "t::h", DK_CompositeImplicitAutograd, dk_boxed(k_plain, NULL), &h), DK_OK);
    assert_int_equal(dk_impl(r, "t::h", DK_MTIA, dk_boxed(k_plain, NULL), &h), DK_OK);
    assert_int_equal(dk_impl(r, "t::h", DK_MAIA, dk_boxed(k_plain, NULL), &h), DK_OK);
    op = dk_op_lookup(r, "t::h");
    cia = dk_op_slot_kernel(op, dk_key_slot(DK_CUDA));
    ag_mtia = dk_op_slot_kernel(op, dk_key_slot(DK_AutogradMTIA));
    ag_maia = dk_op_slot_kernel(op, dk_key_slot(DK_AutogradMAIA));
    assert_int_equal(cia->key, DK_CompositeImplicitAutograd);
    assert_int_equal(ag_mtia->kind, DK_KERNEL_FUNCTION);
    assert_true(ag_mtia == cia);
    assert_int_equal(ag_maia->kind, DK_KERNEL_MISSING);  /* no autograd fallback in this registry */
    dk_registry_destroy(r);
}

/* c10's offsetsAndMasks(): every functionality key's name, first runtime
   slot and backend mask, in order (facts, verbatim). */
static void test_offsets_and_masks(void **state) {
    static const struct { const char *name; int offset; unsigned mask; } facts[] = {
        { "Undefined", 0, 0 }, { "Dense", 1, 0xffff }, { "FPGA", 17, 0 }, { "Vulkan", 18, 0 }, { "Metal", 19, 0 },
        { "Quantized", 20, 0xffff }, { "CustomRNGKeyId", 36, 0 }, { "MkldnnCPU", 37, 0 }, { "Sparse", 38, 0xffff },
        { "SparseCsr", 54, 0xffff }, { "NestedTensor", 70, 0xffff }, { "BackendSelect", 86, 0 },
        { "Python", 87, 0 }, { "Fake", 88, 0 }, { "FuncTorchDynamicLayerBackMode", 89, 0 },
        { "Functionalize", 90, 0 }, { "Named", 91, 0 }, { "Conjugate", 92, 0 }, { "Negative", 93, 0 },
        { "ZeroTensor", 94, 0 }, { "ADInplaceOrView", 95, 0 }, { "AutogradOther", 96, 0 },
        { "AutogradFunctionality", 97, 0xffff }, { "AutogradNestedTensor", 113, 0 }, { "Tracer", 114, 0 },
        { "AutocastCPU", 115, 0 }, { "AutocastMTIA", 116, 0 }, { "AutocastMAIA", 117, 0 },
        { "AutocastXPU", 118, 0 }, { "AutocastIPU", 119, 0 }, { "AutocastHPU", 120, 0 },
        { "AutocastXLA", 121, 0 }, { "AutocastMPS", 122, 0 }, { "AutocastCUDA", 123, 0 },
        { "AutocastPrivateUse1", 124, 0 }, { "FuncTorchBatched", 125, 0 }, { "BatchedNestedTensor", 126, 0 },
        { "FuncTorchVmapMode", 127, 0 }, { "Batched", 128, 0 }, { "VmapMode", 129, 0 },
        { "FuncTorchGradWrapper", 130, 0 }, { "DeferredInit", 131, 0 }, { "PythonTLSSnapshot", 132, 0 },
        { "FuncTorchDynamicLayerFrontMode", 133, 0 }, { "TESTING_ONLY_GenericWrapper", 134, 0 },
        { "TESTING_ONLY_GenericMode", 135, 0 }, { "PreDispatch", 136, 0 }, { "PythonDispatcher", 137, 0 },
    };
    int k;
    (void)state;
    assert_int_equal(sizeof facts / sizeof facts[0], DK_NUM_FUNCTIONALITY_KEYS);
    for (k = 0; k < DK_NUM_FUNCTIONALITY_KEYS; k++) {
        dk_offset_mask om = dk_key_offset_and_mask((dk_key)k);
        dk_key parsed = DK_Undefined;
        assert_string_equal(dk_key_name((dk_key)k), facts[k].name);
        assert_int_equal(dk_key_parse(facts[k].name, &parsed), DK_OK);
        assert_int_equal(parsed, k);
        assert_int_equal(om.offset, facts[k].offset);
        assert_int_equal(om.mask, facts[k].mask);
        assert_int_equal(dk_key_is_per_backend_functionality((dk_key)k), facts[k].mask != 0);
        if (!facts[k].mask) {
            assert_int_equal(dk_key_slot((dk_key)k), facts[k].offset);
            assert_int_equal(dk_slot_key(facts[k].offset), k);
        }
    }
    /* MAIA is no functionality key any more: the name is MAIA's Dense key */
    assert_int_equal(DK_MAIA, dk_key_runtime(DK_Dense, DK_MAIABit));
    assert_int_equal(dk_key_slot(DK_MAIA), 1 + 11);
    assert_int_equal(dk_key_slot(DK_Meta), 1 + 15);
    assert_int_equal(dk_key_slot(DK_AutogradMAIA), 97 + 11);
    assert_int_equal(dk_key_slot(DK_AutogradMeta), 97 + 15);
    assert_int_equal(dk_key_slot(DK_QuantizedMTIA), 20 + 10);
}

/* The slots and keys are inverse bijections; a keyset's slot is its highest key's. */
static void test_runtime_table(void **state) {
    int slot, k, runtime = 0;
    (void)state;
    for (slot = 0; slot < DK_NUM_SLOTS; slot++) {
        assert_true(dk_key_is_runtime(dk_slot_key(slot)));
        assert_int_equal(dk_key_slot(dk_slot_key(slot)), slot);
    }
    for (k = 0; k < DK_NUM_KEYS; k++) runtime += dk_key_is_runtime((dk_key)k);
    assert_int_equal(runtime, DK_NUM_SLOTS);
    /* Meta is bit 15: a Meta key wins over every other backend */
    assert_int_equal(dk_ks_highest_key(dk_ks_or(dk_ks_from_key(DK_MAIA), dk_ks_from_key(DK_Meta))), DK_Meta);
    assert_int_equal(dk_ks_highest_key(dk_ks_or(dk_ks_from_key(DK_MAIA), dk_ks_from_key(DK_PrivateUse1))),
                     DK_PrivateUse1);
    assert_int_equal(dk_ks_highest_key(dk_ks_or(dk_ks_from_key(DK_MAIA), dk_ks_from_key(DK_MTIA))), DK_MAIA);
}

/* The named keysets: raw value and c10's text (the long ones are cut in the facts). */
static void test_named_keysets(void **state) {
    static const struct { const char *what; uint64_t raw; const char *text; } facts[] = {
        { "autograd_dispatch_keyset", 0x0000007000000000ULL, "DispatchKeySet(AutogradOther, AutogradNestedTensor)" },
        { "autocast_dispatch_keyset", 0x0003ff0000000000ULL, "DispatchKeySet(AutocastCPU, AutocastMTIA, AutocastMAIA, "
          "AutocastXPU, AutocastIPU, AutocastHPU, AutocastXLA, AutocastMPS, AutocastCUDA, AutocastPrivateUse1)" },
        { "default_included_set", 0x0000000804000000ULL, "DispatchKeySet(BackendSelect, ADInplaceOrView)" },
        { "default_excluded_set", 0x0003ff0000000000ULL, "DispatchKeySet(AutocastCPU, AutocastMTIA, AutocastMAIA, "
          "AutocastXPU, AutocastIPU, AutocastHPU, AutocastXLA, AutocastMPS, AutocastCUDA, AutocastPrivateUse1)" },
        { "autograd_dispatch_keyset_with_ADInplaceOrView", 0x0000007800000000ULL,
          "DispatchKeySet(ADInplaceOrView, AutogradOther, AutogradNestedTensor)" },
        { "python_ks", 0x0200000008000000ULL, "DispatchKeySet(Python, PythonTLSSnapshot)" },
        { "sparse_ks", 0x0000000000800000ULL, "DispatchKeySet()" },
        { "sparse_csr_ks", 0x0000000001000000ULL, "DispatchKeySet()" },
        { "mkldnn_ks", 0x0000000000400000ULL, "DispatchKeySet(MkldnnCPU)" },
        { "autogradother_backends", 0x0000000001feffffULL, "DispatchKeySet(FPGA, Vulkan, Metal, QuantizedCPU, "
          "QuantizedCUDA, QuantizedHIP, QuantizedXLA, QuantizedMPS, QuantizedIPU, QuantizedXPU, QuantizedHPU, "
          "QuantizedVE, QuantizedLazy, QuantizedMT" },
        { "after_autograd_keyset", 0x4000000fffffffffULL, "DispatchKeySet(CPU, CUDA, HIP, XLA, MPS, IPU, XPU, HPU, "
          "VE, Lazy, MTIA, MAIA, PrivateUse1, PrivateUse2, PrivateUse3, Meta, FPGA, Vulkan, Metal, QuantizedCPU, "
          "QuantizedCUDA, QuantizedHIP, Qu" },
        { "after_ADInplaceOrView_keyset", 0x40000007ffffffffULL, "DispatchKeySet(CPU, CUDA, HIP, XLA, MPS, IPU, "
          "XPU, HPU, VE, Lazy, MTIA, MAIA, PrivateUse1, PrivateUse2, PrivateUse3, Meta, FPGA, Vulkan, Metal, "
          "QuantizedCPU, QuantizedCUDA, Quantized" },
        { "after_func_keyset", 0x400000003fffffffULL, "DispatchKeySet(CPU, CUDA, HIP, XLA, MPS, IPU, XPU, HPU, VE, "
          "Lazy, MTIA, MAIA, PrivateUse1, PrivateUse2, PrivateUse3, Meta, FPGA, Vulkan, Metal, QuantizedCPU, "
          "QuantizedCUDA, QuantizedHIP, Quanti" },
        { "backend_bitset_mask", 0x000000000000ffffULL, "DispatchKeySet()" },
        { "functorch_transforms_ks", 0x00f4000000000000ULL,
          "DispatchKeySet(FuncTorchBatched, FuncTorchVmapMode, Batched, VmapMode, FuncTorchGradWrapper)" },
        { "backend_functionality_keys", 0x000000000191ffffULL, "DispatchKeySet(CPU, CUDA, HIP, XLA, MPS, IPU, "
          "XPU, HPU, VE, Lazy, MTIA, MAIA, PrivateUse1, PrivateUse2, PrivateUse3, Meta, QuantizedCPU, "
          "QuantizedCUDA, QuantizedHIP, QuantizedXLA, Quan" },
        { "inplace_or_view_ks", 0x0000000800000000ULL, "DispatchKeySet(ADInplaceOrView)" },
        { "autograd_other_ks", 0x0000001000000000ULL, "DispatchKeySet(AutogradOther)" },
        { "autograd_nested", 0x0000004000000000ULL, "DispatchKeySet(AutogradNestedTensor)" },
        { "functorch_batched_ks", 0x0004000000000000ULL, "DispatchKeySet(FuncTorchBatched)" },
    };
    const dk_keyset ours[] = {
        DK_KS_AUTOGRAD, DK_KS_AUTOCAST, DK_KS_DEFAULT_INCLUDED, DK_KS_DEFAULT_EXCLUDED,
        DK_KS_AUTOGRAD_WITH_INPLACE_VIEW, DK_KS_PYTHON, DK_KS_SPARSE, DK_KS_SPARSE_CSR, DK_KS_MKLDNN,
        DK_KS_OTHER_BACKENDS, DK_KS_AFTER_AUTOGRAD, DK_KS_AFTER_INPLACE_VIEW, DK_KS_AFTER_FUNCTIONALIZE,
        DK_KS_BACKENDS, DK_KS_FUNCTORCH, DK_KS_BACKEND_FUNCTIONALITY, DK_KS_INPLACE_OR_VIEW,
        dk_ks_from_key(DK_AutogradOther), dk_ks_from_key(DK_AutogradNestedTensor), DK_KS_FUNCTORCH_BATCHED,
    };
    static char text[4096];
    size_t i;
    (void)state;
    assert_int_equal(sizeof facts / sizeof facts[0], sizeof ours / sizeof ours[0]);
    for (i = 0; i < sizeof facts / sizeof facts[0]; i++) {
        if (ours[i].repr != facts[i].raw)
            print_error("%s: 0x%016llx, c10 2.11 0x%016llx\n", facts[i].what, (unsigned long long)ours[i].repr,
                        (unsigned long long)facts[i].raw);
        assert_true(ours[i].repr == facts[i].raw);
        dk_ks_to_string(ours[i], text, sizeof text);
        if (strncmp(text, facts[i].text, strlen(facts[i].text)))
            print_error("%s:\n  ours %s\n  c10  %s\n", facts[i].what, text, facts[i].text);
        assert_memory_equal(text, facts[i].text, strlen(facts[i].text));
        if (facts[i].text[strlen(facts[i].text) - 1] == ')') assert_string_equal(text, facts[i].text);
    }
}

/* The alias keys cover what they cover in 2.7.1, MAIA's keys as a backend's. */
static void test_aliases(void **state) {
    int k, n_autograd = 0;
    (void)state;
    assert_string_equal(dk_key_name(DK_StartOfAliasKeys), "Autograd");
    assert_string_equal(dk_key_name(DK_EndOfAliasKeys), "CompositeExplicitAutogradNonFunctional");
    for (k = 1; k <= DK_EndOfRuntimeBackendKeys; k++) {
        dk_key key = (dk_key)k;
        if (!dk_key_is_runtime(key)) continue;
        n_autograd += dk_key_in_alias(key, DK_Autograd);
        assert_true(dk_key_in_alias(key, key));   /* c10 isIncludedInAlias(k, k) */
        assert_int_equal(dk_key_in_alias(key, DK_CompositeExplicitAutograd), dk_key_is_backend(key));
    }
    assert_int_equal(n_autograd, DK_NUM_BACKENDS + 2); /* Autograd<each>, AutogradOther, AutogradNestedTensor */
    assert_true(dk_key_in_alias(DK_AutogradMAIA, DK_Autograd));
    assert_true(dk_key_in_alias(DK_AutogradMTIA, DK_CompositeImplicitAutograd));
    assert_true(dk_key_in_alias(DK_SparseCsrMAIA, DK_CompositeExplicitAutograd));
    assert_true(dk_key_in_alias(DK_MAIA, DK_CompositeExplicitAutogradNonFunctional));
    assert_false(dk_key_in_alias(DK_XLA, DK_CompositeExplicitAutogradNonFunctional));
    assert_true(dk_key_in_alias(DK_NestedTensorMAIA, DK_CompositeImplicitAutogradNestedTensor));
    assert_true(dk_key_in_alias(DK_FuncTorchBatched, DK_FuncTorchBatchedDecomposition));
    /* c10 2.11's DispatchKeySet(FULL_AFTER, Undefined) */
    assert_true(DK_KS_FULL_AFTER(DK_Undefined).repr == 0x4000000000007fffULL);
    assert_true(dk_ks_full_after(DK_Undefined).repr == 0x4000000000007fffULL);
    /* c10 2.11's getRuntimeDispatchKeySet(CompositeImplicitAutograd), and
       isIncludedInAlias(Functionalize, CompositeImplicitAutograd) false */
    assert_true(dk_alias_runtime_set(DK_CompositeImplicitAutograd).repr == 0x0000007003ffffffULL);
    assert_true(DK_KS_MATH.repr == 0x0000007003ffffffULL);
    assert_false(dk_key_in_alias(DK_Functionalize, DK_CompositeImplicitAutograd));
}

/* A CompositeImplicitAutograd kernel leaves the Functionalize slot to the
   Functionalize fallback (2.11 keeps libtorch's fallback there). */
static void fb_functionalize(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks; (void)s;
}
static void k_any(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks; (void)s;
}
static void test_composite_leaves_functionalize(void **state) {
    dk_registry *r;
    dk_registration *h;
    const dk_operator *op;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_def(r, "t::g(Tensor x) -> ()", &h), DK_OK);
    assert_int_equal(dk_impl(r, "t::g", DK_CompositeImplicitAutograd, dk_boxed(k_any, NULL), &h), DK_OK);
    op = dk_op_lookup(r, "t::g");
    assert_int_equal(dk_op_slot_kernel(op, dk_key_slot(DK_Functionalize))->kind, DK_KERNEL_MISSING);
    assert_int_equal(dk_op_slot_kernel(op, dk_key_slot(DK_CPU))->kind, DK_KERNEL_FUNCTION);
    assert_int_equal(dk_fallback(r, DK_Functionalize, dk_boxed(fb_functionalize, NULL), &h), DK_OK);
    assert_true(dk_op_slot_kernel(op, dk_key_slot(DK_Functionalize))->is_fallback);
    dk_registry_destroy(r);
}

/* Every key and component name parses back (StartOfDenseBackends prints
   as Undefined, which parses as Undefined: its enumerator name parses to
   it); markers print in c10 2.11's words. */
static void test_names(void **state) {
    int k, b;
    (void)state;
    char text[64];
    dk_key marker = DK_Undefined;
    for (k = 0; k < DK_NUM_KEYS; k++) {
        dk_key parsed = DK_Undefined;
        assert_int_equal(dk_key_parse(dk_key_name((dk_key)k), &parsed), DK_OK);
        assert_int_equal(parsed, k == DK_StartOfDenseBackends ? DK_Undefined : k);
    }
    assert_int_equal(dk_key_parse("StartOfDenseBackends", &marker), DK_OK);
    assert_int_equal(marker, DK_StartOfDenseBackends);
    for (b = 0; b <= DK_NUM_BACKENDS; b++) {
        dk_backend parsed = DK_InvalidBit;
        assert_int_equal(dk_backend_parse(dk_backend_name((dk_backend)b), &parsed), DK_OK);
        assert_int_equal(parsed, b);
    }
    assert_string_equal(dk_key_name(DK_MAIA), "MAIA");
    assert_string_equal(dk_key_name(DK_AutogradMAIA), "AutogradMAIA");
    assert_string_equal(dk_key_name(DK_QuantizedMAIA), "QuantizedMAIA");
    assert_string_equal(dk_key_name(DK_AutocastMAIA), "AutocastMAIA");
    assert_string_equal(dk_key_name(DK_StartOfDenseBackends), "Undefined");
    assert_string_equal(dk_key_name(DK_StartOfQuantizedBackends), "QuantizedUndefined");
    assert_string_equal(dk_key_name(DK_StartOfSparseBackends), "SparseUndefined");
    assert_string_equal(dk_key_name(DK_StartOfAutogradFunctionalityBackends), "AutogradUndefined");
    assert_string_equal(dk_key_name(DK_EndOfFunctionalityKeys), "UnknownUnknown");
    /* the highest key of a keyset with a per-backend bit and no backend bit */
    assert_string_equal(dk_key_name(dk_ks_highest_key(dk_ks_raw(DK_KS_SPARSE.repr))), "SparseUndefined");
    /* the keyset holding only EndOfFunctionalityKeys's bit: c10 2.11 prints DispatchKeySet() */
    dk_ks_to_string(dk_ks_raw(0x8000000000000000ULL), text, sizeof text);
    assert_string_equal(text, "DispatchKeySet()");
}

/* A registry and a call in this key space: a MAIA kernel, autograd on top. */
static int maia_runs, autograd_runs;
static void k_maia(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks; (void)s;
    maia_runs++;
}
static void k_autograd(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k;
    autograd_runs++;
    dk_redispatch_boxed(op, dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD), s);
}
static dk_keyset tensor_ks(const void *t, void *ud) { (void)ud; return *(const dk_keyset *)t; }
static void test_call_on_maia(void **state) {
    dk_registry *r;
    dk_registry_desc d;
    dk_registration *h;
    dk_keyset maia = dk_ks_or(dk_ks_from_key(DK_MAIA), dk_ks_from_key(DK_AutogradMAIA));
    dk_value storage[2];
    dk_stack st;
    (void)state;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = tensor_ks;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    assert_int_equal(dk_def(r, "t::f(Tensor x) -> ()", &h), DK_OK);
    assert_int_equal(dk_impl(r, "t::f", DK_MAIA, dk_boxed(k_maia, NULL), &h), DK_OK);
    assert_int_equal(dk_impl(r, "t::f", DK_Autograd, dk_boxed(k_autograd, NULL), &h), DK_OK);
    dk_stack_init(&st, storage, 2);
    dk_stack_push(&st, dk_tensor(&maia));
    dk_call_boxed(dk_op_lookup(r, "t::f"), &st);
    assert_int_equal(autograd_runs, 1);
    assert_int_equal(maia_runs, 1);
    dk_registry_destroy(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_markers),
        cmocka_unit_test(test_backend_components),
        cmocka_unit_test(test_autograd_mtia_sits_on_no_backend),
        cmocka_unit_test(test_offsets_and_masks),
        cmocka_unit_test(test_runtime_table),
        cmocka_unit_test(test_named_keysets),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_composite_leaves_functionalize),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_call_on_maia),
    };
    return cmocka_run_group_tests_name("key space (2.11 preset), against PyTorch 2.11.0's own answers", tests, NULL, NULL);
}
