/* make: flags=-DDK_PRESET_TORCH_1_13_1 args=tests/conformance/keyspace-1.13.1.txt */
/* Key-space conformance with the real c10 of PyTorch 1.13.1.

   Built with DK_PRESET_TORCH_1_13_1; reads the vectors that
   tests/conformance/gen_keyspace.cpp recorded from libtorch 1.13.1 (path in
   argv[1], format in tests/conformance/README.md) and checks every record.
   Where dispatch.h deliberately differs (names of the StartOf/EndOf markers,
   parsing names c10 cannot parse) the test checks our documented behaviour
   instead and counts the cases. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define VECTORS_PRINTED_MISMATCHES 10
#include "vectors.h"

static const char *vectors_path = "tests/conformance/keyspace-1.13.1.txt";

/* One pass over the file per test: calls `check` for each line with the tag. */
typedef int (*line_check)(char **f, int n, const char *rest);

/* Returns how many records with `tag` were checked; failures go to mismatch(). */
static int for_each_record(const char *tag, line_check check) {
    char *text = read_all(vectors_path, "pass the path as argv[1]"), *p = text, *line;
    int count = 0;
    while ((line = next_line(&p)) != NULL) {
        char copy[16384], *fields[17];
        int n;
        const char *rest;
        if (line[0] == '#' || line[0] == '\0') continue;
        assert_true(strlen(line) < sizeof copy);
        strcpy(copy, line);
        n = split_fields(copy, fields, 17, NULL);
        if (strcmp(fields[0], tag) != 0) continue;
        /* the text after "<tag> <first field> " (for P records) */
        rest = line + strlen(tag) + 1;
        rest = strchr(rest, ' ') ? strchr(rest, ' ') + 1 : "";
        count += check(fields + 1, n - 1, rest);
    }
    free(text);
    return count;
}

/* A comma list of key values ("-" = empty) as a 256-bit membership mask. */
typedef struct { uint64_t w[4]; } keymask;
static keymask parse_list(const char *s) {
    keymask m;
    memset(&m, 0, sizeof m);
    if (strcmp(s, "-") == 0) return m;
    while (*s) {
        int v = atoi(s);
        m.w[v / 64] |= (uint64_t)1 << (v % 64);
        s = strchr(s, ',');
        if (!s) break;
        s++;
    }
    return m;
}
static int in_mask(keymask m, int v) { return (int)((m.w[v / 64] >> (v % 64)) & 1); }

/* Our iteration of ks, as the generator prints it. */
static void iteration_list(dk_keyset ks, char *buf, size_t size) {
    dk_key k;
    size_t len = 0;
    buf[0] = '\0';
    DK_KS_FOREACH(k, ks) len += (size_t)snprintf(buf + len, size - len, len ? ",%d" : "%d", (int)k);
    if (!len) snprintf(buf, size, "-");
}

static int is_marker(int k) {
    return k == DK_EndOfFunctionalityKeys ||
           (k > DK_EndOfFunctionalityKeys && k <= DK_EndOfRuntimeBackendKeys && dk_key_backend((dk_key)k) == DK_InvalidBit);
}

/* ---- N: sizes ------------------------------------------------------------ */
static int check_N(char **f, int n, const char *rest) {
    (void)rest;
    assert_int_equal(n, 8);
    if (num(f[0]) != DK_NUM_BACKENDS) mismatch("num_backends %s vs %d", f[0], DK_NUM_BACKENDS);
    if (num(f[1]) != DK_NUM_FUNCTIONALITY_KEYS) mismatch("num_functionality_keys %s", f[1]);
    if (num(f[2]) != DK_NUM_SLOTS) mismatch("num_runtime_entries %s vs %d", f[2], DK_NUM_SLOTS);
    if (hex(f[3]) != DK_KS_FULL.repr) mismatch("FULL %s", f[3]);
    if (num(f[4]) != DK_EndOfFunctionalityKeys) mismatch("EndOfFunctionalityKeys %s", f[4]);
    if (num(f[5]) != DK_EndOfRuntimeBackendKeys) mismatch("EndOfRuntimeBackendKeys %s", f[5]);
    if (num(f[6]) != DK_StartOfAliasKeys) mismatch("StartOfAliasKeys %s", f[6]);
    if (num(f[7]) != DK_EndOfAliasKeys) mismatch("EndOfAliasKeys %s", f[7]);
    return 1;
}

/* ---- B: backend component names ------------------------------------------ */
static int check_B(char **f, int n, const char *rest) {
    dk_backend parsed;
    (void)rest;
    assert_int_equal(n, 2);
    if (strcmp(dk_backend_name((dk_backend)num(f[0])), f[1]) != 0)
        mismatch("backend %s: name %s vs %s", f[0], dk_backend_name((dk_backend)num(f[0])), f[1]);
    if (dk_backend_parse(f[1], &parsed) != DK_OK || (int)parsed != num(f[0])) mismatch("parse backend %s", f[1]);
    return 1;
}

/* ---- K: every key value -------------------------------------------------- */
static int c10_cannot_parse, markers_renamed;
static int check_K(char **f, int n, const char *rest) {
    int k = num(f[0]), parsed_c10 = num(f[8]);
    dk_key key = (dk_key)k, parsed;
    (void)rest;
    assert_int_equal(n, 10);
    if (is_marker(k)) {
        /* c10 prints markers as "Unknown...", as we do, but cannot parse
           them back; we parse them, and their enumerator names too. */
        char enumerator[64];
        markers_renamed++;
        if (k == DK_EndOfFunctionalityKeys) snprintf(enumerator, sizeof enumerator, "EndOfFunctionalityKeys");
        else snprintf(enumerator, sizeof enumerator, "StartOf%sBackends", dk_key_name(dk_key_functionality(key)));
        if (dk_key_parse(enumerator, &parsed) != DK_OK || parsed != key) mismatch("marker %s does not parse", enumerator);
    }
    if (strcmp(dk_key_name(key), f[1]) != 0) {
        mismatch("key %d: name %s vs c10 %s", k, dk_key_name(key), f[1]);
    }
    if (dk_key_parse(dk_key_name(key), &parsed) != DK_OK || parsed != key) mismatch("key %d does not round-trip", k);
    if (parsed_c10 < 0) c10_cannot_parse++;
    else if (parsed_c10 != k) mismatch("c10 parses %s to %d", f[1], parsed_c10);
    if (dk_key_is_alias(key) != num(f[2])) mismatch("key %s: is_alias", f[1]);
    if (dk_key_is_per_backend_functionality(key) != num(f[3])) mismatch("key %s: per-backend", f[1]);
    if ((int)dk_key_functionality(key) != num(f[4])) mismatch("key %s: functionality %d vs %s", f[1], dk_key_functionality(key), f[4]);
    if ((int)dk_key_backend(key) != num(f[5])) mismatch("key %s: backend", f[1]);
    if (strcmp(f[6], "-") != 0 && dk_key_slot(key) != num(f[6]))
        mismatch("key %s: table index %d vs %s", f[1], dk_key_slot(key), f[6]);
    if (dk_ks_from_key(key).repr != hex(f[7])) mismatch("key %s: repr %llx vs %s", f[1], (unsigned long long)dk_ks_from_key(key).repr, f[7]);
    if (dk_key_is_backend(key) != num(f[9])) mismatch("key %s: is_backend %d vs %s", f[1], dk_key_is_backend(key), f[9]);
    return 1;
}

/* ---- S: keysets --------------------------------------------------------- */
static int check_S(char **f, int n, const char *rest) {
    dk_keyset ks = dk_ks_raw(hex(f[0]));
    char iter[4096];
    (void)rest;
    assert_int_equal(n, 8);
    if ((int)dk_ks_highest_key(ks) != num(f[1])) mismatch("%s: highest key %d vs %s", f[0], dk_ks_highest_key(ks), f[1]);
    if (dk_ks_slot(ks) != num(f[2])) mismatch("%s: table index %d vs %s", f[0], dk_ks_slot(ks), f[2]);
    if ((int)dk_ks_highest_functionality(ks) != num(f[3])) mismatch("%s: highest functionality", f[0]);
    if ((int)dk_ks_highest_backend(ks) != num(f[4])) mismatch("%s: highest backend", f[0]);
    if (dk_ks_backend_index(ks) != num(f[5])) mismatch("%s: backend index", f[0]);
    iteration_list(ks, iter, sizeof iter);
    if (strcmp(iter, f[6]) != 0) mismatch("%s: iteration %s vs %s", f[0], iter, f[6]);
    if ((int)dk_ks_highest_backend_key(ks) != num(f[7])) mismatch("%s: highest backend key", f[0]);
    return 1;
}

/* ---- P: printing ---------------------------------------------------------- */
static int check_P(char **f, int n, const char *rest) {
    char buf[4096];
    int len = dk_ks_to_string(dk_ks_raw(hex(f[0])), buf, sizeof buf);
    assert_true(n >= 2);
    if (strcmp(buf, rest) != 0) mismatch("%s: printed %s vs %s", f[0], buf, rest);
    if (len != (int)strlen(rest)) mismatch("%s: length %d", f[0], len);
    return 1;
}

/* ---- O, R, RB: set algebra --------------------------------------------- */
static int check_O(char **f, int n, const char *rest) {
    dk_keyset a = dk_ks_raw(hex(f[0])), b = dk_ks_raw(hex(f[1]));
    (void)rest;
    assert_int_equal(n, 7);
    if (dk_ks_minus(a, b).repr != hex(f[2])) mismatch("%s - %s", f[0], f[1]);
    if (dk_ks_or(a, b).repr != hex(f[3])) mismatch("%s | %s", f[0], f[1]);
    if (dk_ks_and(a, b).repr != hex(f[4])) mismatch("%s & %s", f[0], f[1]);
    if (dk_ks_has_all(a, b) != num(f[5])) mismatch("%s has_all %s", f[0], f[1]);
    if (strcmp(f[6], "-") != 0 && dk_ks_has_any(a, b) != num(f[6])) mismatch("%s has_any %s", f[0], f[1]);
    return 1;
}

static int check_R(char **f, int n, const char *rest) {
    dk_keyset a = dk_ks_raw(hex(f[0]));
    dk_key k = (dk_key)num(f[1]);
    (void)rest;
    assert_int_equal(n, 5);
    if (dk_ks_remove(a, k).repr != hex(f[2])) mismatch("%s remove %s", f[0], f[1]);
    if (dk_ks_add(a, k).repr != hex(f[3])) mismatch("%s add %s", f[0], f[1]);
    if (dk_ks_has(a, k) != num(f[4])) mismatch("%s has %s", f[0], f[1]);
    return 1;
}

static int check_RB(char **f, int n, const char *rest) {
    (void)rest;
    assert_int_equal(n, 3);
    if (dk_ks_remove_backend(dk_ks_raw(hex(f[0])), (dk_backend)num(f[1])).repr != hex(f[2]))
        mismatch("%s remove_backend %s", f[0], f[1]);
    return 1;
}

/* ---- A, AH: alias keys ---------------------------------------------------- */
static int check_A(char **f, int n, const char *rest) {
    dk_key alias = (dk_key)num(f[0]);
    keymask included = parse_list(n > 2 ? f[2] : "-");
    int k;
    (void)rest;
    if (dk_alias_runtime_set(alias).repr != hex(f[1])) mismatch("alias %s: runtime set", dk_key_name(alias));
    for (k = 0; k <= DK_EndOfRuntimeBackendKeys; k++)
        if (dk_key_in_alias((dk_key)k, alias) != in_mask(included, k))
            mismatch("key %s in alias %s: %d", dk_key_name((dk_key)k), dk_key_name(alias), in_mask(included, k));
    return 1;
}

/* c10's runtimeDispatchKeySetHas also says yes for Undefined (the empty set
   is a subset of anything); dk_key_in_alias never includes Undefined. */
static int check_AH(char **f, int n, const char *rest) {
    dk_key alias = (dk_key)num(f[0]);
    keymask has = parse_list(n > 1 ? f[1] : "-");
    int k;
    (void)rest;
    if (!in_mask(has, 0)) mismatch("alias %s: c10 no longer includes Undefined", dk_key_name(alias));
    for (k = 1; k <= DK_EndOfRuntimeBackendKeys; k++)
        if (dk_key_in_alias((dk_key)k, alias) != in_mask(has, k)) mismatch("AH %d %d", (int)alias, k);
    return 1;
}

/* ---- HB, HA: helper mappings -------------------------------------------- */
static int check_HB(char **f, int n, const char *rest) {
    dk_backend b = (dk_backend)num(f[0]);
    (void)rest;
    assert_int_equal(n, 4);
    if (dk_backend_autograd_related_set(b).repr != hex(f[1])) mismatch("backend %s: autograd set", f[0]);
    if (dk_backend_autocast_set(b).repr != hex(f[2])) mismatch("backend %s: autocast set", f[0]);
    if ((int)dk_backend_autograd_key(b) != num(f[3])) mismatch("backend %s: autograd key", f[0]);
    return 1;
}

static int check_HA(char **f, int n, const char *rest) {
    dk_key k = (dk_key)num(f[0]);
    (void)rest;
    assert_int_equal(n, 2);
    if (dk_autograd_key_backend_set(k).repr != hex(f[1]))
        mismatch("key %s: backend set of autograd %llx vs %s", dk_key_name(k), (unsigned long long)dk_autograd_key_backend_set(k).repr, f[1]);
    return 1;
}

/* ---- C: named keysets ------------------------------------------------------ */

static int check_C(char **f, int n, const char *rest) {
    struct { const char *name; dk_keyset ks; } ours[] = {
        { "autograd_dispatch_keyset", DK_KS_AUTOGRAD },
        { "autocast_dispatch_keyset", DK_KS_AUTOCAST },
        { "default_included_set", DK_KS_DEFAULT_INCLUDED },
        { "default_excluded_set", DK_KS_DEFAULT_EXCLUDED },
        { "autograd_dispatch_keyset_with_ADInplaceOrView", DK_KS_AUTOGRAD_WITH_INPLACE_VIEW },
        { "python_ks", DK_KS_PYTHON },
        { "sparse_ks", DK_KS_SPARSE },
        { "sparse_csr_ks", DK_KS_SPARSE_CSR },
        { "mkldnn_ks", DK_KS_MKLDNN },
        { "autogradother_backends", DK_KS_OTHER_BACKENDS },
        { "after_autograd_keyset", DK_KS_AFTER_AUTOGRAD },
        { "after_ADInplaceOrView_keyset", DK_KS_AFTER_INPLACE_VIEW },
        { "after_func_keyset", DK_KS_AFTER_FUNCTIONALIZE },
        /* the public FULL_AFTER of the keys c10 built these two from */
        { "after_autograd_keyset", DK_KS_FULL_AFTER(DK_AutogradOther) },
        { "after_autograd_keyset", dk_ks_full_after(DK_AutogradOther) },
        { "after_ADInplaceOrView_keyset", DK_KS_FULL_AFTER(DK_ADInplaceOrView) },
        { "after_ADInplaceOrView_keyset", dk_ks_full_after(DK_ADInplaceOrView) },
        { "backend_bitset_mask", DK_KS_BACKENDS },
        { "inplace_or_view_ks", DK_KS_INPLACE_OR_VIEW },
        { "autograd_cpu_ks", dk_ks_from_key(DK_AutogradCPU) },
        { "autograd_ipu_ks", dk_ks_from_key(DK_AutogradIPU) },
        { "autograd_xpu_ks", dk_ks_from_key(DK_AutogradXPU) },
        { "autograd_cuda_ks", dk_ks_from_key(DK_AutogradCUDA) },
        { "autograd_xla_ks", dk_ks_from_key(DK_AutogradXLA) },
        { "autograd_lazy_ks", dk_ks_from_key(DK_AutogradLazy) },
        { "autograd_meta_ks", dk_ks_from_key(DK_AutogradMeta) },
        { "autograd_mps_ks", dk_ks_from_key(DK_AutogradMPS) },
        { "autograd_hpu_ks", dk_ks_from_key(DK_AutogradHPU) },
        { "autograd_privateuse1_ks", dk_ks_from_key(DK_AutogradPrivateUse1) },
        { "autograd_privateuse2_ks", dk_ks_from_key(DK_AutogradPrivateUse2) },
        { "autograd_privateuse3_ks", dk_ks_from_key(DK_AutogradPrivateUse3) },
        { "autograd_other_ks", dk_ks_from_key(DK_AutogradOther) },
        { "autograd_nested", dk_ks_from_key(DK_AutogradNestedTensor) },
        { "functorch_transforms_ks", DK_KS_FUNCTORCH },
        { "backend_functionality_keys", DK_KS_BACKEND_FUNCTIONALITY },
        { "CompositeExplicitAutograd", DK_KS_BACKEND },
        { "CompositeExplicitAutogradNonFunctional", DK_KS_NON_FUNCTIONAL_BACKEND },
        { "CompositeImplicitAutograd", DK_KS_MATH },
        { "CompositeImplicitAutogradNestedTensor", DK_KS_NESTED },
        { "Autograd", DK_KS_AUTOGRAD_ALIAS },
    };
    size_t i;
    int found = 0;
    (void)rest;
    assert_int_equal(n, 2);
    for (i = 0; i < sizeof ours / sizeof ours[0]; i++) { /* every entry of that name */
        if (strcmp(ours[i].name, f[0]) != 0) continue;
        if (ours[i].ks.repr != hex(f[1]))
            mismatch("named keyset %s: %llx vs %s", f[0], (unsigned long long)ours[i].ks.repr, f[1]);
        found = 1;
    }
    if (!found) mismatch("named keyset %s has no counterpart", f[0]);
    return 1;
}

/* ---- T, TG: thread-local defaults, and what c10's guards make of them ---- */
static int check_T(char **f, int n, const char *rest) {
    (void)rest;
    assert_int_equal(n, 4);
    if (hex(f[0]) != 0 || hex(f[1]) != 0) mismatch("c10 TLS is not zero-initialised");
    if (DK_KS_DEFAULT_INCLUDED.repr != hex(f[2])) mismatch("default included");
    if (DK_KS_DEFAULT_EXCLUDED.repr != hex(f[3])) mismatch("default excluded");
    return 1;
}

static int check_TG(char **f, int n, const char *rest) {
    uint64_t inc = DK_KS_DEFAULT_INCLUDED.repr, exc = DK_KS_DEFAULT_EXCLUDED.repr;
    (void)rest;
    assert_int_equal(n, 3);
    if (strcmp(f[0], "at::AutoDispatchBelowAutograd") == 0) exc |= DK_KS_AUTOGRAD.repr;
    else if (strcmp(f[0], "at::AutoDispatchBelowADInplaceOrView") == 0) exc |= DK_KS_AUTOGRAD_WITH_INPLACE_VIEW.repr;
    else if (strcmp(f[0], "at::AutoDispatchSkipFunctionalize") == 0) exc |= dk_ks_from_key(DK_Functionalize).repr;
    else if (strcmp(f[0], "c10::InferenceMode") == 0) {
        inc = dk_ks_remove(dk_ks_raw(inc), DK_ADInplaceOrView).repr;
        exc |= DK_KS_AUTOGRAD.repr;
    } else if (strncmp(f[0], "c10::impl::IncludeDispatchKeyGuard(Tracer)", 42) == 0 || strncmp(f[0], "nested:", 7) == 0)
        inc |= dk_ks_from_key(DK_Tracer).repr;
    if (inc != hex(f[1]) || exc != hex(f[2])) mismatch("guard %s: %llx %llx", f[0], (unsigned long long)inc, (unsigned long long)exc);
    return 1;
}

#define RECORD_TEST(tag, at_least)                                      \
    static void test_##tag(void **state) {                              \
        int n;                                                          \
        (void)state;                                                    \
        mismatches = 0;                                                 \
        n = for_each_record(#tag, check_##tag);                         \
        printf("  %-3s %6d records checked, %d mismatches\n", #tag, n, mismatches); \
        assert_true(n >= (at_least));                                   \
        assert_int_equal(mismatches, 0);                                \
    }
RECORD_TEST(N, 1)
RECORD_TEST(B, DK_NUM_BACKENDS + 1)
RECORD_TEST(K, DK_NUM_KEYS)
RECORD_TEST(S, 20000)
RECORD_TEST(P, 300)
RECORD_TEST(O, 3000)
RECORD_TEST(R, 3000)
RECORD_TEST(RB, 500)
RECORD_TEST(A, DK_NUM_ALIAS_KEYS)
RECORD_TEST(AH, DK_NUM_ALIAS_KEYS)
RECORD_TEST(HB, DK_NUM_BACKENDS + 1)
RECORD_TEST(HA, DK_EndOfRuntimeBackendKeys + 1)
RECORD_TEST(C, 36)
RECORD_TEST(T, 1)
RECORD_TEST(TG, 7)

/* c10's parseDispatchKey fails for 34 of its 106 runtime keys plus the
   markers; every one of ours parses back (checked in test_K). */
static void test_parse_beats_c10(void **state) {
    (void)state;
    c10_cannot_parse = markers_renamed = 0;
    mismatches = 0;
    for_each_record("K", check_K);
    printf("  c10 cannot parse %d key names; dispatch.h parses all %d; %d markers also parse by enumerator\n",
           c10_cannot_parse, DK_NUM_KEYS, markers_renamed);
    assert_true(c10_cannot_parse > 0);
    assert_int_equal(markers_renamed, 1 + DK_NUM_PER_BACKEND_FUNCTIONALITIES);
    assert_int_equal(mismatches, 0);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_N),  cmocka_unit_test(test_B),  cmocka_unit_test(test_K),
        cmocka_unit_test(test_S),  cmocka_unit_test(test_P),  cmocka_unit_test(test_O),
        cmocka_unit_test(test_R),  cmocka_unit_test(test_RB), cmocka_unit_test(test_A),
        cmocka_unit_test(test_AH), cmocka_unit_test(test_HB), cmocka_unit_test(test_HA),
        cmocka_unit_test(test_C),  cmocka_unit_test(test_T),  cmocka_unit_test(test_TG),
        cmocka_unit_test(test_parse_beats_c10),
    };
    if (argc > 1) vectors_path = argv[1];
    return cmocka_run_group_tests_name("conformance with libtorch 1.13.1", tests, NULL, NULL);
}
