/* The default key space (PyTorch 2.7.1): the numbers of pytorch-facts.md §1-§3
   (there is no 2.7.1 binary to compare with), plus the parts of the API whose
   behaviour is ours rather than c10's: names, parsing, errors, printing. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

static dk_keyset ks_of(const dk_key *keys, int n) {
    dk_keyset ks = DK_KS_EMPTY;
    int i;
    for (i = 0; i < n; i++) ks = dk_ks_add(ks, keys[i]);
    return ks;
}

static void test_sizes(void **state) {
    (void)state;
    assert_int_equal(DK_NUM_BACKENDS, 15);
    assert_int_equal(DK_NUM_FUNCTIONALITY_KEYS, 48);
    assert_int_equal(DK_NUM_PER_BACKEND_FUNCTIONALITIES, 6);
    assert_int_equal(DK_NUM_SLOTS, 132);
    assert_int_equal(DK_NUM_ALIAS_KEYS, 6);
    assert_true(DK_KS_FULL.repr == 0x3fffffffffffffffULL);
    assert_true(DK_KS_BACKENDS.repr == 0x7fff);
    assert_int_equal(DK_C10_VERSION, 20701);
}

/* Enum values, pytorch-facts.md §1.1, §1.3, §1.4 (v2.7.1 column). */
static void test_enum_values(void **state) {
    (void)state;
    assert_int_equal(DK_MTIABit, 11);
    assert_int_equal(DK_MetaBit, 15);
    assert_int_equal(DK_EndOfBackendKeys, DK_MetaBit);
    assert_int_equal(DK_MAIA, 3);
    assert_int_equal(DK_SparseCsr, 10);
    assert_int_equal(DK_NestedTensor, 11);
    assert_int_equal(DK_AutogradOther, 22);
    assert_int_equal(DK_AutocastCPU, 26);
    assert_int_equal(DK_AutocastMTIA, 27);
    assert_int_equal(DK_AutocastCUDA, 33);
    assert_int_equal(DK_FuncTorchBatched, 35);
    assert_int_equal(DK_PreDispatch, 46);
    assert_int_equal(DK_PythonDispatcher, 47);
    assert_int_equal(DK_EndOfFunctionalityKeys, 48);
    assert_int_equal(DK_StartOfDenseBackends, 49);
    assert_int_equal(DK_CPU, 50);
    assert_int_equal(DK_Meta, 64);
    assert_int_equal(DK_EndOfDenseBackends, 64);
    assert_int_equal(DK_StartOfQuantizedBackends, 65);
    assert_int_equal(DK_EndOfQuantizedBackends, 80);
    assert_int_equal(DK_SparseCPU, 82);
    assert_int_equal(DK_StartOfSparseCsrBackends, 97);
    assert_int_equal(DK_EndOfSparseCsrBackends, 112);
    assert_int_equal(DK_StartOfNestedTensorBackends, 113);
    assert_int_equal(DK_StartOfAutogradFunctionalityBackends, 129);
    assert_int_equal(DK_AutogradCPU, 130);
    assert_int_equal(DK_EndOfRuntimeBackendKeys, 144);
    assert_int_equal(DK_Autograd, 145);
    assert_int_equal(DK_StartOfAliasKeys, 145);
    assert_int_equal(DK_CompositeImplicitAutograd, 146);
    assert_int_equal(DK_FuncTorchBatchedDecomposition, 147);
    assert_int_equal(DK_CompositeImplicitAutogradNestedTensor, 148);
    assert_int_equal(DK_CompositeExplicitAutograd, 149);
    assert_int_equal(DK_CompositeExplicitAutogradNonFunctional, 150);
    assert_int_equal(DK_EndOfAliasKeys, 150);
    assert_int_equal(DK_CatchAll, DK_Undefined);
}

/* Offsets table, pytorch-facts.md §1.5 (v2.7.1 column). */
static void test_offsets(void **state) {
    static const struct { dk_key key; int slot; } expect[] = {
        { DK_Undefined, 0 },      { DK_CPU, 1 },           { DK_CUDA, 2 },          { DK_Meta, 15 },
        { DK_FPGA, 16 },          { DK_MAIA, 17 },         { DK_Vulkan, 18 },       { DK_Metal, 19 },
        { DK_QuantizedCPU, 20 },  { DK_QuantizedMeta, 34 }, { DK_CustomRNGKeyId, 35 }, { DK_MkldnnCPU, 36 },
        { DK_SparseCPU, 37 },     { DK_SparseMeta, 51 },   { DK_SparseCsrCPU, 52 }, { DK_SparseCsrMeta, 66 },
        { DK_NestedTensorCPU, 67 }, { DK_NestedTensorMeta, 81 }, { DK_BackendSelect, 82 },
        { DK_ADInplaceOrView, 91 }, { DK_AutogradOther, 92 }, { DK_AutogradCPU, 93 }, { DK_AutogradMeta, 107 },
        { DK_AutogradNestedTensor, 108 }, { DK_Tracer, 109 }, { DK_AutocastCPU, 110 }, { DK_AutocastMTIA, 111 },
        { DK_AutocastXPU, 112 },  { DK_PythonDispatcher, 131 },
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        assert_int_equal(dk_key_slot(expect[i].key), expect[i].slot);
        assert_int_equal(dk_slot_key(expect[i].slot), expect[i].key);
    }
    assert_int_equal(dk_key_offset_and_mask(DK_Dense).mask, 0x7fff);
    assert_int_equal(dk_key_offset_and_mask(DK_FPGA).mask, 0);
    assert_int_equal(dk_key_offset_and_mask(DK_PythonDispatcher).offset, 131);
    assert_int_equal(dk_key_offset_and_mask(DK_Undefined).offset, 0);
    assert_int_equal(dk_key_offset_and_mask(DK_CPU).mask, 0);  /* a runtime key, not a functionality */
}

/* The runtime-key table and key -> slot are inverse bijections. */
static void test_runtime_table(void **state) {
    int slot, k, runtime = 0;
    (void)state;
    for (slot = 0; slot < DK_NUM_SLOTS; slot++) {
        dk_key key = dk_slot_key(slot);
        assert_true(dk_key_is_runtime(key));
        assert_int_equal(dk_key_slot(key), slot);
    }
    for (k = 0; k < DK_NUM_KEYS; k++) runtime += dk_key_is_runtime((dk_key)k);
    assert_int_equal(runtime, DK_NUM_SLOTS);
    assert_int_equal(dk_slot_key(-1), DK_Undefined);
    assert_int_equal(dk_slot_key(DK_NUM_SLOTS), DK_Undefined);
}

/* Property: the slot of a keyset is the slot of its highest key. */
static void test_table_index_is_highest_key_slot(void **state) {
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    int i;
    (void)state;
    for (i = 0; i < 100000; i++) {
        dk_keyset ks;
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        ks = dk_ks_and(dk_ks_raw(x & (x >> 11)), DK_KS_FULL);
        assert_int_equal(dk_ks_slot(ks), dk_key_slot(dk_ks_highest_key(ks)));
    }
}

/* Bits above FULL never index past the offsets table (c10 reads out of bounds). */
static void test_table_index_out_of_range_bits(void **state) {
    (void)state;
    assert_int_equal(dk_ks_slot(dk_ks_raw(~(uint64_t)0 << DK_NUM_KEYSET_BITS)), 0);
    assert_int_equal(dk_ks_slot(dk_ks_raw(~(uint64_t)0)), 0);
    assert_int_equal(dk_key_slot(DK_EndOfFunctionalityKeys), 0);
}

static void test_meta_wins_and_priority(void **state) {
    dk_key keys[] = { DK_CPU, DK_Meta, DK_AutogradCPU };
    (void)state;
    assert_int_equal(dk_ks_highest_key(ks_of(keys, 2)), DK_Meta);
    /* backend bits are shared: CPU + Meta + AutogradCPU also means AutogradMeta */
    assert_int_equal(dk_ks_highest_key(ks_of(keys, 3)), DK_AutogradMeta);
    assert_int_equal(dk_ks_highest_key(DK_KS_EMPTY), DK_Undefined);
    assert_int_equal(dk_ks_highest_key(dk_ks_from_backend(DK_CUDABit)), DK_Undefined);
    assert_int_equal(dk_ks_slot(DK_KS_EMPTY), 0);
}

static void test_names_round_trip(void **state) {
    int k, b;
    dk_key k0 = DK_Undefined;
    dk_backend b0 = DK_InvalidBit;
    (void)state;
    for (k = 0; k < DK_NUM_KEYS; k++) {
        dk_key parsed = DK_Undefined;
        assert_non_null(dk_key_name((dk_key)k));
        assert_int_equal(dk_key_parse(dk_key_name((dk_key)k), &parsed), DK_OK);
        /* c10 2.x prints StartOfDenseBackends as "Undefined", Undefined's name */
        assert_int_equal(parsed, k == DK_StartOfDenseBackends ? DK_Undefined : k);
    }
    for (b = 0; b <= DK_NUM_BACKENDS; b++) {
        dk_backend parsed = DK_InvalidBit;
        assert_int_equal(dk_backend_parse(dk_backend_name((dk_backend)b), &parsed), DK_OK);
        assert_int_equal(parsed, b);
    }
    assert_string_equal(dk_key_name(DK_CPU), "CPU");
    assert_string_equal(dk_key_name(DK_AutogradMTIA), "AutogradMTIA");
    assert_string_equal(dk_key_name(DK_SparseCsrCUDA), "SparseCsrCUDA");
    /* the markers in c10 2.6.0's words (pytorch-facts.md 1.4; 2.7.1 = 2.6.0 there) */
    assert_string_equal(dk_key_name(DK_StartOfSparseBackends), "SparseUndefined");
    assert_string_equal(dk_key_name(DK_StartOfDenseBackends), "Undefined");
    assert_string_equal(dk_key_name(DK_StartOfAutogradFunctionalityBackends), "AutogradUndefined");
    assert_string_equal(dk_key_name(DK_EndOfFunctionalityKeys), "UnknownUnknown");
    assert_int_equal(dk_key_parse("StartOfDenseBackends", &k0), DK_OK);
    assert_int_equal(k0, DK_StartOfDenseBackends);
    assert_string_equal(dk_key_name(DK_FuncTorchBatchedDecomposition), "FuncTorchBatchedDecomposition");
    /* c10 2.6.0's toString(MTIABit) is "MTIA" (pytorch-facts.md 1.1); "MTIABit" parses too */
    assert_string_equal(dk_backend_name(DK_MTIABit), "MTIA");
    assert_int_equal(dk_backend_parse("MTIABit", &b0), DK_OK);
    assert_int_equal(b0, DK_MTIABit);
    assert_string_equal(dk_backend_name(DK_LazyBit), "LazyBit");
    /* c10's FULL_AFTER formula for Undefined: the backend bits below the
       highest one, plus PythonDispatcher; EndOfFunctionalityKeys's bit
       alone prints as c10 prints it */
    assert_true(DK_KS_FULL_AFTER(DK_Undefined).repr == 0x2000000000003fffULL);
    assert_true(dk_ks_full_after(DK_Undefined).repr == 0x2000000000003fffULL);
    /* an alias key: below every key it stands for (docs/c10.md: c10 gives the Undefined value) */
    assert_false(dk_ks_has(dk_ks_full_after(DK_CompositeImplicitAutograd), DK_CPU));
    {
        char text[64];
        dk_ks_to_string(dk_ks_raw(0x4000000000000000ULL), text, sizeof text);
        assert_string_equal(text, "DispatchKeySet()");
        dk_ks_to_string(dk_ks_raw(0xc000000000000000ULL), text, sizeof text);
        assert_string_equal(text, "DispatchKeySet(UnknownBits(0x8000000000000000))");
    }
    assert_null(dk_key_name((dk_key)DK_NUM_KEYS));
    assert_null(dk_backend_name((dk_backend)(DK_NUM_BACKENDS + 1)));
    /* every function that turns a value into text: NULL out of range */
    assert_null(dk_status_message((dk_status)dk_abi_num_statuses()));
    assert_null(dk_status_message((dk_status)-1));
    assert_string_equal(dk_status_message(DK_ERR_NO_MEMORY), "out of memory");
    assert_null(dk_log_item_name((dk_log_item)-1));
    assert_null(dk_log_item_name((dk_log_item)1000));
    assert_string_equal(dk_log_item_name(DK_LOG_KERNEL_OVERRIDDEN), "KERNEL_OVERRIDDEN");
    /* texts that fit every object they are returned for: dk_library_unload and
       dk_backend_rename return these too */
    assert_null(strstr(dk_status_message(DK_ERR_NOT_FOUND), "operator"));
    assert_null(strstr(dk_status_message(DK_ERR_BAD_NAME), "operator"));
}

static void test_parse_errors(void **state) {
    dk_key k = DK_Tracer;
    dk_backend b = DK_CPUBit;
    (void)state;
    assert_int_equal(dk_key_parse("NoSuchKey", &k), DK_ERR_UNKNOWN_KEY);
    assert_int_equal(k, DK_Tracer);
    assert_string_equal(dk_last_error(), "could not parse dispatch key: NoSuchKey");
    assert_int_equal(dk_key_parse("cpu", &k), DK_ERR_UNKNOWN_KEY); /* names are case-sensitive */
    assert_int_equal(dk_key_parse("", &k), DK_ERR_UNKNOWN_KEY);
    assert_int_equal(dk_key_parse(NULL, &k), DK_ERR_NULL);
    assert_int_equal(dk_key_parse("CPU", NULL), DK_ERR_NULL);
    assert_int_equal(k, DK_Tracer);
    assert_int_equal(dk_backend_parse("CPU", &b), DK_ERR_UNKNOWN_KEY); /* backends end in Bit */
    assert_int_equal(b, DK_CPUBit);
    assert_string_equal(dk_status_message(DK_ERR_UNKNOWN_KEY), "no dispatch key or backend component has that name");
    assert_null(dk_status_message((dk_status)999));
}

static void test_printing(void **state) {
    char buf[64];
    dk_key keys[] = { DK_AutogradCPU, DK_CPU };
    int n;
    (void)state;
    assert_int_equal(dk_ks_to_string(ks_of(keys, 2), buf, sizeof buf), 32);
    assert_string_equal(buf, "DispatchKeySet(CPU, AutogradCPU)");
    dk_ks_to_string(DK_KS_EMPTY, buf, sizeof buf);
    assert_string_equal(buf, "DispatchKeySet()");
    /* a per-backend functionality bit without backend bits prints nothing */
    dk_ks_to_string(DK_KS_AUTOGRAD, buf, sizeof buf);
    assert_string_equal(buf, "DispatchKeySet(AutogradOther, AutogradNestedTensor)");
    /* truncation: snprintf semantics */
    n = dk_ks_to_string(ks_of(keys, 2), buf, 10);
    assert_int_equal(n, 32);
    assert_string_equal(buf, "DispatchK");
    assert_int_equal(dk_ks_to_string(ks_of(keys, 2), NULL, 0), 32);
}

static void test_iteration_order(void **state) {
    dk_key keys[] = { DK_AutogradCUDA, DK_FPGA, DK_SparseCPU, DK_Tracer };
    dk_key expect[] = { DK_CPU, DK_CUDA, DK_FPGA, DK_SparseCPU, DK_SparseCUDA, DK_AutogradCPU, DK_AutogradCUDA, DK_Tracer };
    dk_keyset ks = dk_ks_or(ks_of(keys, 4), dk_ks_from_key(DK_Dense));
    dk_key k;
    int i = 0;
    (void)state;
    DK_KS_FOREACH(k, ks) {
        assert_true(i < 8);
        assert_int_equal(k, expect[i++]);
    }
    assert_int_equal(i, 8);
}

static void test_algebra(void **state) {
    dk_keyset cpu_ag = dk_ks_or(dk_ks_from_key(DK_CPU), dk_ks_from_key(DK_AutogradCPU));
    dk_keyset below;
    (void)state;
    /* c10's minus keeps the left operand's backend bits */
    below = dk_ks_minus(cpu_ag, DK_KS_AUTOGRAD);
    assert_true(dk_ks_equal(below, dk_ks_from_key(DK_CPU)));
    /* remove clears the functionality bit only */
    assert_true(dk_ks_equal(dk_ks_remove(cpu_ag, DK_AutogradCPU), dk_ks_from_key(DK_CPU)));
    assert_true(dk_ks_equal(dk_ks_remove_backend(cpu_ag, DK_CPUBit),
                            dk_ks_raw(cpu_ag.repr & ~(uint64_t)1)));
    assert_true(dk_ks_has(cpu_ag, DK_AutogradCPU));
    assert_false(dk_ks_has(cpu_ag, DK_AutogradCUDA));
    assert_false(dk_ks_has(cpu_ag, DK_Undefined));
    assert_false(dk_ks_has(DK_KS_FULL, DK_Autograd)); /* alias keys have no bits */
    assert_true(dk_ks_has_any(cpu_ag, DK_KS_AUTOGRAD));
    assert_true(dk_ks_has_all(DK_KS_FULL, cpu_ag));
    assert_true(dk_ks_is_empty(dk_ks_and(cpu_ag, DK_KS_AUTOCAST)));
    assert_true(dk_ks_equal(dk_ks_and(cpu_ag, DK_KS_AFTER_AUTOGRAD), dk_ks_from_key(DK_CPU)));
    assert_int_equal(dk_ks_backend_index(dk_ks_from_key(DK_AutogradXLA)), 3);
    assert_int_equal(dk_ks_highest_backend_key(cpu_ag), DK_CPU);
}

static void test_key_queries(void **state) {
    (void)state;
    assert_true(dk_key_is_alias(DK_CompositeExplicitAutograd));
    assert_false(dk_key_is_alias(DK_AutogradMeta));
    assert_true(dk_key_is_per_backend_functionality(DK_SparseCsr));
    assert_false(dk_key_is_per_backend_functionality(DK_MkldnnCPU));
    assert_false(dk_key_is_runtime(DK_Dense));
    assert_false(dk_key_is_runtime(DK_StartOfDenseBackends));
    assert_true(dk_key_is_runtime(DK_Undefined));
    assert_true(dk_key_is_runtime(DK_SparseCsrMeta));
    assert_false(dk_key_is_runtime(DK_Autograd));
    assert_int_equal(dk_key_functionality(DK_NestedTensorXLA), DK_NestedTensor);
    assert_int_equal(dk_key_backend(DK_NestedTensorXLA), DK_XLABit);
    assert_int_equal(dk_key_runtime(DK_AutogradFunctionality, DK_MTIABit), DK_AutogradMTIA);
    assert_int_equal(dk_key_runtime(DK_Tracer, DK_CUDABit), DK_Tracer);
    assert_true(dk_key_is_backend(DK_SparseCsrCUDA));
    assert_true(dk_key_is_backend(DK_MAIA));
    assert_false(dk_key_is_backend(DK_NestedTensorCPU));
    assert_false(dk_key_is_backend(DK_AutogradCPU));
    assert_false(dk_key_is_backend(DK_CompositeExplicitAutograd));
}

/* Alias runtime sets, pytorch-facts.md §3 (2.7.1). */
static void test_alias_sets(void **state) {
    int k, n_autograd = 0, n_ftbd = 0;
    (void)state;
    for (k = 0; k <= DK_EndOfRuntimeBackendKeys; k++) {
        dk_key key = (dk_key)k;
        if (!dk_key_is_runtime(key)) continue;
        n_autograd += dk_key_in_alias(key, DK_Autograd);
        n_ftbd += dk_key_in_alias(key, DK_FuncTorchBatchedDecomposition);
        /* CEANF = CEA minus Sparse* and minus the functional XLA / Lazy backends */
        assert_int_equal(dk_key_in_alias(key, DK_CompositeExplicitAutogradNonFunctional),
                         dk_key_in_alias(key, DK_CompositeExplicitAutograd) &&
                             dk_key_functionality(key) != DK_Sparse && dk_key_backend(key) != DK_XLABit &&
                             dk_key_backend(key) != DK_LazyBit);
        /* CEA covers exactly the backend keys */
        assert_int_equal(dk_key_in_alias(key, DK_CompositeExplicitAutograd), k != 0 && dk_key_is_backend(key));
    }
    assert_int_equal(n_autograd, DK_NUM_BACKENDS + 2); /* Autograd<each>, AutogradOther, AutogradNestedTensor */
    assert_int_equal(n_ftbd, 1);
    assert_true(dk_key_in_alias(DK_FuncTorchBatched, DK_FuncTorchBatchedDecomposition));
    assert_true(dk_key_in_alias(DK_Functionalize, DK_CompositeImplicitAutograd)); /* 2.x */
    assert_true(dk_key_in_alias(DK_NestedTensorCUDA, DK_CompositeImplicitAutograd));
    assert_true(dk_key_in_alias(DK_AutogradNestedTensor, DK_CompositeImplicitAutogradNestedTensor));
    assert_false(dk_key_in_alias(DK_Undefined, DK_CompositeImplicitAutograd));
    /* c10 isIncludedInAlias(CPU, CPU): a runtime key covers itself, and only
       itself, as its runtime set dk_alias_runtime_set(k) is {k} */
    for (k = 1; k <= DK_EndOfRuntimeBackendKeys; k++) {
        dk_key key = (dk_key)k;
        if (!dk_key_is_runtime(key)) continue;
        assert_true(dk_key_in_alias(key, key));
        assert_int_equal(dk_alias_runtime_set(key).repr, dk_ks_from_key(key).repr);
    }
    assert_false(dk_key_in_alias(DK_CPU, DK_CUDA));
    assert_false(dk_key_in_alias(DK_CPU, DK_AutogradCPU));
    assert_false(dk_key_in_alias(DK_AutogradCPU, DK_CPU));
    assert_false(dk_key_in_alias(DK_Undefined, DK_Undefined));
    assert_false(dk_key_in_alias(DK_Autograd, DK_Autograd));
    assert_false(dk_key_in_alias(DK_Tracer, DK_CompositeImplicitAutograd));
}

static void test_named_keysets_2_7_1(void **state) {
    dk_key autocast[] = { DK_AutocastCPU, DK_AutocastMTIA, DK_AutocastXPU, DK_AutocastIPU, DK_AutocastHPU,
                          DK_AutocastXLA, DK_AutocastMPS, DK_AutocastCUDA, DK_AutocastPrivateUse1 };
    dk_key included[] = { DK_BackendSelect, DK_ADInplaceOrView };
    dk_key batched[] = { DK_FuncTorchBatched };
    (void)state;
    assert_true(dk_ks_equal(DK_KS_AUTOCAST, ks_of(autocast, 9)));
    assert_true(dk_ks_equal(DK_KS_DEFAULT_EXCLUDED, ks_of(autocast, 9)));
    assert_true(dk_ks_equal(DK_KS_DEFAULT_INCLUDED, ks_of(included, 2)));
    assert_true(dk_ks_equal(DK_KS_FUNCTORCH_BATCHED, ks_of(batched, 1)));
    /* FULL_AFTER re-adds PythonDispatcher */
    assert_true(dk_ks_has(DK_KS_AFTER_AUTOGRAD, DK_PythonDispatcher));
    assert_false(dk_ks_has(DK_KS_AFTER_AUTOGRAD, DK_AutogradOther));
    assert_true(dk_ks_has(DK_KS_AFTER_AUTOGRAD, DK_ADInplaceOrView));
    assert_false(dk_ks_has(DK_KS_AFTER_INPLACE_VIEW, DK_ADInplaceOrView));
    assert_false(dk_ks_has(DK_KS_AFTER_FUNCTIONALIZE, DK_Functionalize));
    assert_true(dk_ks_has(DK_KS_AFTER_FUNCTIONALIZE, DK_FuncTorchDynamicLayerBackMode));
    assert_true(dk_ks_has(DK_KS_OTHER_BACKENDS, DK_SparseCsrMTIA));
    assert_false(dk_ks_has(DK_KS_OTHER_BACKENDS, DK_CPU));
    assert_true(dk_ks_has(DK_KS_BACKEND_FUNCTIONALITY, DK_SparseCsrCPU));
}

/* The tables of the implementation (Note [Tables in one unit]) hold what
   the formulas of c10 give: every backend's autograd-related set (Autograd<b>
   with OwnAutograd 1, else AutogradOther; plus ADInplaceOrView), InvalidBit's
   and out-of-range values' (AutogradOther), and the guards' keysets. */
#define OWN_AG(name, own_ag, autocast, functional, extra) own_ag,
static void test_tables_of_the_implementation(void **state) {
    static const int own[] = { 0, DK_FORALL_BACKEND_COMPONENTS(OWN_AG, ~) 0 };
    dk_keyset iv = dk_ks_from_key(DK_ADInplaceOrView), other = dk_ks_from_key(DK_AutogradOther);
    int b;
    (void)state;
    for (b = 0; b <= DK_NUM_BACKENDS + 2; b++) {
        int valid = b >= 1 && b <= DK_NUM_BACKENDS;
        dk_keyset want = valid && own[b] ? dk_ks_from_key(dk_key_runtime(DK_AutogradFunctionality, (dk_backend)b)) : other;
        assert_true(dk_ks_equal(dk_backend_autograd_related_set((dk_backend)b), dk_ks_or(want, iv)));
        assert_int_equal(dk_backend_autograd_key((dk_backend)b), valid && own[b] ? dk_key_runtime(DK_AutogradFunctionality, (dk_backend)b) : DK_AutogradOther);
    }
    assert_true(dk_ks_equal(dk_backend_autograd_related_set(DK_CPUBit), ks_of((const dk_key[]){ DK_AutogradCPU, DK_ADInplaceOrView }, 2)));
    {
        dk_guard g = dk_guard_below_autograd();
        assert_true(dk_ks_equal(dk_tls_excluded(), dk_ks_or(DK_KS_DEFAULT_EXCLUDED, DK_KS_AUTOGRAD)));
        dk_guard_pop(g);
        g = dk_guard_below_inplace_view();
        assert_true(dk_ks_equal(dk_tls_excluded(), dk_ks_or(DK_KS_DEFAULT_EXCLUDED, DK_KS_AUTOGRAD_WITH_INPLACE_VIEW)));
        assert_true(dk_ks_has(dk_tls_excluded(), DK_ADInplaceOrView) && dk_ks_has(dk_tls_excluded(), DK_AutogradOther));
        dk_guard_pop(g);
        g = dk_guard_skip_functionalize();
        assert_true(dk_ks_equal(dk_tls_excluded(), dk_ks_add(DK_KS_DEFAULT_EXCLUDED, DK_Functionalize)));
        dk_guard_pop(g);
        assert_true(dk_tls_is_default());
    }
}
#undef OWN_AG

static void test_helper_mappings_2_7_1(void **state) {
    (void)state;
    assert_int_equal(dk_backend_autograd_key(DK_CPUBit), DK_AutogradCPU);
    assert_int_equal(dk_backend_autograd_key(DK_MetaBit), DK_AutogradMeta);
    assert_int_equal(dk_backend_autograd_key(DK_MTIABit), DK_AutogradOther);
    assert_int_equal(dk_backend_autograd_key(DK_HIPBit), DK_AutogradOther);
    assert_true(dk_ks_has(dk_backend_autograd_related_set(DK_XPUBit), DK_ADInplaceOrView));
    assert_true(dk_ks_equal(dk_backend_autocast_set(DK_MTIABit), dk_ks_from_key(DK_AutocastMTIA)));
    assert_true(dk_ks_equal(dk_backend_autocast_set(DK_XLABit), dk_ks_from_key(DK_AutocastXLA)));
    assert_true(dk_ks_is_empty(dk_backend_autocast_set(DK_MetaBit)));
    assert_true(dk_ks_equal(dk_autograd_key_backend_set(DK_AutogradMeta), dk_ks_from_key(DK_Meta)));
    assert_true(dk_ks_is_empty(dk_autograd_key_backend_set(DK_AutogradMTIA)));
    assert_true(dk_ks_equal(dk_autograd_key_backend_set(DK_AutogradOther), DK_KS_OTHER_BACKENDS));
    assert_true(dk_ks_has(dk_autograd_key_backend_set(DK_AutogradNestedTensor), DK_NestedTensorMeta));
    assert_true(dk_ks_is_empty(dk_autograd_key_backend_set(DK_CPU)));
}

static void test_config_check_same_lists(void **state) {
    (void)state;
    assert_int_equal(dk_config_check(), DK_OK);
    assert_int_equal(dk__config_check(NULL), DK_ERR_NULL);
    assert_int_equal(dk_version_number(), DK_VERSION_NUMBER);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_enum_values),
        cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_runtime_table),
        cmocka_unit_test(test_table_index_is_highest_key_slot),
        cmocka_unit_test(test_table_index_out_of_range_bits),
        cmocka_unit_test(test_meta_wins_and_priority),
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_printing),
        cmocka_unit_test(test_iteration_order),
        cmocka_unit_test(test_algebra),
        cmocka_unit_test(test_key_queries),
        cmocka_unit_test(test_alias_sets),
        cmocka_unit_test(test_named_keysets_2_7_1),
        cmocka_unit_test(test_helper_mappings_2_7_1),
        cmocka_unit_test(test_tables_of_the_implementation),
        cmocka_unit_test(test_config_check_same_lists),
    };
    return cmocka_run_group_tests_name("key space (PyTorch 2.7.1 default)", tests, NULL, NULL);
}
