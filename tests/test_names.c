/* make: flags=-DDK_PRESET_TORCH_1_13_1 args=tests/conformance/texts-1.13.1.txt tsan=plain */
/* Names and words: backend renaming (c10's rename_privateuse1_backend),
   operator tags and alias-analysis kinds on def (torch.library's
   def(schema, alias_analysis=..., tags=...)), the public FULL_AFTER keysets,
   and c10's texts recorded by tests/conformance/gen_texts.cpp from libtorch
   1.13.1 (path in argv[1]; format in tests/conformance/README.md).

   Built with DK_PRESET_TORCH_1_13_1 so that key values and texts line up
   with the recorded ones. Renaming is process-wide and once per backend:
   test_rename_* run in the order listed in main and build on each other. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define VECTORS_PRINTED_MISMATCHES 10
#include "vectors.h"

static const char *texts_path = "tests/conformance/texts-1.13.1.txt";

static dk_registry *make_registry(int c10_messages) {
    dk_registry_desc d;
    dk_registry *r = NULL;
    memset(&d, 0, sizeof d);
    d.c10_messages = c10_messages;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    return r;
}

typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(unary, int, x.ks, (tensor, x))
static int k_one(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k; (void)ks; (void)x;
    return 1;
}

/* ---- conformance: c10's texts ------------------------------------------------ */

/* One recorded text: "<TAG> <what> <text>", text unescaped (\n, \\). */
typedef struct record { char tag[16], what[64], text[2048]; } record;

static int load_records(record *out, int max) {
    char *text = read_all(texts_path, "pass the path as argv[1]"), *p = text, *line;
    int n = 0;
    while ((line = next_line(&p)) != NULL) {
        const char *a, *b;
        size_t i, j = 0;
        if (line[0] == '#' || line[0] == '\0') continue;
        assert_true(n < max);
        a = strchr(line, ' ');
        assert_non_null(a);
        b = strchr(a + 1, ' ');
        assert_non_null(b);
        assert_true((size_t)(a - line) < sizeof out[n].tag && (size_t)(b - a - 1) < sizeof out[n].what);
        memcpy(out[n].tag, line, (size_t)(a - line));
        out[n].tag[a - line] = '\0';
        memcpy(out[n].what, a + 1, (size_t)(b - a - 1));
        out[n].what[b - a - 1] = '\0';
        for (i = 1; b[i] && j + 1 < sizeof out[n].text; i++) {
            if (b[i] == '\\' && b[i + 1] == 'n') out[n].text[j++] = '\n', i++;
            else if (b[i] == '\\' && b[i + 1] == '\\') out[n].text[j++] = '\\', i++;
            else out[n].text[j++] = b[i];
        }
        out[n].text[j] = '\0';
        n++;
    }
    free(text);
    return n;
}

static record recs[64];
static int n_recs;

static const record *find_record(const char *tag, const char *what) {
    int i;
    for (i = 0; i < n_recs; i++)
        if (strcmp(recs[i].tag, tag) == 0 && strcmp(recs[i].what, what) == 0) return &recs[i];
    fail_msg("no %s %s record in %s", tag, what, texts_path);
    return NULL;
}

/* c10's text with its API names replaced by ours: the one difference the
   library-block messages keep (docs/c10.md, "Differences from c10"). */
static void our_words(const char *c10, char *out, size_t size) {
    static const char *const map[][2] = {
        { "TORCH_LIBRARY", "DK_LIBRARY" },
        { "m.fallback(...)", "dk_library_fallback(m, ...)" },
    };
    size_t len = 0, i;
    while (*c10 && len + 1 < size) {
        for (i = 0; i < sizeof map / sizeof map[0]; i++)
            if (strncmp(c10, map[i][0], strlen(map[i][0])) == 0) break;
        if (i < sizeof map / sizeof map[0]) {
            len += (size_t)snprintf(out + len, size - len, "%s", map[i][1]);
            c10 += strlen(map[i][0]);
        } else {
            out[len++] = *c10++;
        }
    }
    out[len < size ? len : size - 1] = '\0';
}

static void test_texts_highest_key(void **state) {
    int i, checked = 0;
    (void)state;
    for (i = 0; i < n_recs; i++) {
        if (strcmp(recs[i].tag, "HIGHEST") != 0) continue;
        assert_string_equal(dk_key_name(dk_ks_highest_key(dk_ks_raw(hex(recs[i].what)))), recs[i].text);
        checked++;
    }
    assert_int_equal(checked, DK_NUM_PER_BACKEND_FUNCTIONALITIES);
    assert_string_equal(dk_key_name(DK_EndOfFunctionalityKeys), "UnknownUnknown");
}

/* c10 drops EndOfFunctionalityKeys's bit, as we do, and aborts on higher
   ones, which we print as UnknownBits (a documented difference). */
static void test_texts_keysets(void **state) {
    int i, checked = 0;
    (void)state;
    for (i = 0; i < n_recs; i++) {
        char ours[256], want[256];
        uint64_t repr;
        if (strcmp(recs[i].tag, "KEYSET") != 0) continue;
        repr = hex(recs[i].what);
        dk_ks_to_string(dk_ks_raw(repr), ours, sizeof ours);
        if (recs[i].text[0] == '(') { /* c10 crashed */
            assert_non_null(strstr(recs[i].text, "killed by signal"));
            snprintf(want, sizeof want, "DispatchKeySet(UnknownBits(0x%llx))",
                     (unsigned long long)(repr & ~DK_KS_FULL.repr));
            assert_string_equal(ours, want);
        } else {
            /* only EndOfFunctionalityKeys's bit beyond FULL: c10's text */
            assert_true((repr & ~DK_KS_FULL.repr) == (uint64_t)1 << DK_NUM_KEYSET_BITS);
            assert_string_equal(ours, recs[i].text);
        }
        checked++;
    }
    assert_int_equal(checked, 4);
}

static dk_status parse_error(const char *name) {
    dk_key k = DK_Tracer;
    dk_status s = dk_key_parse(name, &k);
    assert_int_equal(k, DK_Tracer);
    return s;
}

static void test_texts_errors(void **state) {
    dk_registry *r = make_registry(0);
    dk_library *lib;
    dk_registration *h;
    dk_operator *op = NULL;
    char want[2048];
    (void)state;
    assert_int_equal(parse_error("NotAKey"), DK_ERR_UNKNOWN_KEY);
    assert_string_equal(dk_last_error(), find_record("ERROR", "parse_unknown")->text);
    assert_int_equal(parse_error(""), DK_ERR_UNKNOWN_KEY);
    assert_string_equal(dk_last_error(), find_record("ERROR", "parse_empty")->text);

    assert_int_equal(dk_op_lookup_defined(r, "tx::nope", &op), DK_ERR_NOT_FOUND);
    assert_string_equal(dk_last_error(), find_record("ERROR", "find_schema")->text);
    assert_int_equal(dk_op_lookup_defined(r, "tx::nope.ov", &op), DK_ERR_NOT_FOUND);
    assert_string_equal(dk_last_error(), find_record("ERROR", "find_schema_overload")->text);
    assert_int_equal(dk_impl(r, "tx::implonly", DK_CPU, dk_unboxed(DK_FN(k_one), NULL), &h), DK_OK);
    assert_int_equal(dk_op_lookup_defined(r, "tx::implonly", &op), DK_ERR_NOT_FOUND);
    assert_string_equal(dk_last_error(), find_record("ERROR", "find_schema_impl_only")->text);
    assert_null(op);

    /* library blocks opened where the generator opened c10's */
#define OPEN(kind, ns, key, file, line) \
    assert_int_equal(dk__library_open(r, kind, ns, key, file, line, &lib, DK_CONFIG_SIGNATURE), DK_OK)
#define EXPECT(what) (our_words(find_record("ERROR", what)->text, want, sizeof want), \
                      assert_string_equal(dk_last_error(), want))
    OPEN(DK_LIBRARY_KIND_IMPL, "tx", DK_CPU, "x.cpp", 80);
    assert_int_equal(dk_library_def(lib, "f(Tensor a) -> Tensor"), DK_ERR_WRONG_BLOCK);
    EXPECT("def_in_impl_block");
    assert_int_equal(dk_library_close(lib), DK_OK);
    OPEN(DK_LIBRARY_KIND_DEF, "ty", DK_Undefined, "y.cpp", 20);
    assert_int_equal(dk_library_fallback(lib, dk_fallthrough()), DK_ERR_WRONG_BLOCK);
    EXPECT("fallback_in_def_block");
    assert_int_equal(dk_library_close(lib), DK_OK);
    OPEN(DK_LIBRARY_KIND_FRAGMENT, "tx", DK_Undefined, "z.cpp", 30);
    assert_int_equal(dk_library_fallback(lib, dk_fallthrough()), DK_ERR_WRONG_BLOCK);
    EXPECT("fallback_in_fragment_block");
    assert_int_equal(dk_library_close(lib), DK_OK);
    OPEN(DK_LIBRARY_KIND_IMPL, "tx", DK_TESTING_ONLY_GenericWrapper, "fb.cpp", 10);
    assert_int_equal(dk_library_fallback(lib, dk_fallthrough()), DK_ERR_WRONG_BLOCK);
    EXPECT("fallback_namespaced");
    assert_int_equal(dk_library_close(lib), DK_OK);
    OPEN(DK_LIBRARY_KIND_IMPL, "tx", DK_CPU, "k.cpp", 40);
    assert_int_equal(dk_library_impl(lib, "f", DK_CUDA, dk_unboxed(DK_FN(k_one), NULL)), DK_ERR_KEY_MISMATCH);
    EXPECT("impl_key_mismatch");
    assert_int_equal(dk_library_close(lib), DK_OK);
    OPEN(DK_LIBRARY_KIND_FRAGMENT, "tx", DK_Undefined, "n.cpp", 50);
    assert_int_equal(dk_library_def(lib, "other::f(Tensor a) -> Tensor"), DK_ERR_NAMESPACE_MISMATCH);
    EXPECT("def_namespace_mismatch");
    assert_int_equal(dk_library_close(lib), DK_OK);
    OPEN(DK_LIBRARY_KIND_IMPL, "tx", DK_CPU, "n.cpp", 60);
    assert_int_equal(dk_library_impl(lib, "other::f", DK_Undefined, dk_unboxed(DK_FN(k_one), NULL)),
                     DK_ERR_NAMESPACE_MISMATCH);
    EXPECT("impl_namespace_mismatch");
    assert_int_equal(dk_library_close(lib), DK_OK);
    assert_int_equal(dk__library_open(r, DK_LIBRARY_KIND_FRAGMENT, "_", DK_Undefined, "w.cpp", 70, &lib, DK_CONFIG_SIGNATURE),
                     DK_ERR_WRONG_BLOCK);
    EXPECT("fragment_wildcard");
#undef OPEN
#undef EXPECT
    dk_registry_destroy(r);
}

/* The "alias analysis kind:" line of a dump. */
static void alias_line(const char *dump, char *out, size_t size) {
    const char *a = strstr(dump, "alias analysis kind:"), *e;
    assert_non_null(a);
    e = strchr(a, '\n');
    snprintf(out, size, "%.*s", (int)(e ? e - a : (long)strlen(a)), a);
}

static void test_texts_alias_analysis(void **state) {
    static const char *const kinds[] = { "FROM_SCHEMA", "CONSERVATIVE", "PURE_FUNCTION" };
    dk_registry *r = make_registry(0);
    dk_registration *h;
    dk_def_options o;
    char line[128], schema[64], *dump;
    size_t i;
    (void)state;
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        memset(&o, 0, sizeof o);
        assert_int_equal(dk_alias_analysis_parse(kinds[i], &o.alias_analysis), DK_OK);
        snprintf(schema, sizeof schema, "ta%d::f(Tensor a) -> Tensor", (int)i);
        assert_int_equal(dk_def_with(r, schema, &o, &h), DK_OK);
        *strchr(schema, '(') = '\0';
        dump = dump_state(dk_op_lookup(r, schema));
        alias_line(dump, line, sizeof line);
        assert_string_equal(line, find_record("STATE", kinds[i])->text);
        free(dump);
    }
    /* a plain def: FROM_SCHEMA, as torch::Library::def(string) */
    assert_int_equal(dk_def(r, "tplain::f(Tensor a) -> Tensor", &h), DK_OK);
    dump = dump_state(dk_op_lookup(r, "tplain::f"));
    alias_line(dump, line, sizeof line);
    assert_string_equal(line, find_record("STATE", "def_string")->text);
    free(dump);
    /* documented differences: a def cannot leave the kind unset (c10 then
       prints "CONSERVATIVE (default)") nor choose INTERNAL_SPECIAL_CASE */
    assert_string_equal(find_record("STATE", "def_unset")->text, "alias analysis kind: CONSERVATIVE (default)");
    assert_string_equal(find_record("STATE", "INTERNAL_SPECIAL_CASE")->text,
                        "alias analysis kind: INTERNAL_SPECIAL_CASE");
    assert_string_equal(dk_alias_analysis_name(DK_ALIAS_ANALYSIS_INTERNAL_SPECIAL_CASE), "INTERNAL_SPECIAL_CASE");
    dk_registry_destroy(r);
}

/* c10's dumpState of a def with tags has no tags line; ours adds one. */
static void test_texts_tags_in_dump(void **state) {
    static const dk_tag tags[] = { DK_TAG_inplace_view, DK_TAG_generated };
    dk_registry *r = make_registry(0);
    dk_registration *h;
    dk_def_options o;
    char want[4096], *dump, *at;
    (void)state;
    memset(&o, 0, sizeof o);
    o.tags = tags;
    o.num_tags = 2;
    assert_int_equal(dk__def_with(r, "ttags::f(Tensor a) -> Tensor", &o, "aa.cpp", 4, &h, DK_CONFIG_SIGNATURE), DK_OK);
    dump = dump_state(dk_op_lookup(r, "ttags::f"));
    snprintf(want, sizeof want, "%s", find_record("STATE", "def_tags")->text);
    at = strstr(want, "FROM_SCHEMA\n") + strlen("FROM_SCHEMA\n");
    memmove(at + strlen("tags: generated, inplace_view\n"), at, strlen(at) + 1);
    memcpy(at, "tags: generated, inplace_view\n", strlen("tags: generated, inplace_view\n"));
    assert_string_equal(dump, want);
    free(dump);
    dk_registry_destroy(r);
}

/* ---- operator tags and alias analysis -------------------------------------- */

static void test_tag_names(void **state) {
    /* 1.13.1's at::Tag (ATen/core/enum_tag.h) is a subset of 2.7.1's */
    static const char *const c10_1_13_1[] = { "data_dependent_output", "dynamic_output_shape", "generated",
                                              "inplace_view", "nondeterministic_bitwise",
                                              "nondeterministic_seeded", "view_copy" };
    dk_tag t = DK_TAG_core;
    dk_alias_analysis k = DK_ALIAS_ANALYSIS_PURE_FUNCTION;
    int i;
    (void)state;
    assert_int_equal(DK_NUM_TAGS, 13);
    for (i = 0; i < DK_NUM_TAGS; i++) {
        assert_int_equal(dk_tag_parse(dk_tag_name((dk_tag)i), &t), DK_OK);
        assert_int_equal(t, i);
        if (i) assert_true(strcmp(dk_tag_name((dk_tag)(i - 1)), dk_tag_name((dk_tag)i)) < 0); /* torchgen's order */
    }
    for (i = 0; i < (int)(sizeof c10_1_13_1 / sizeof c10_1_13_1[0]); i++)
        assert_int_equal(dk_tag_parse(c10_1_13_1[i], &t), DK_OK);
    assert_string_equal(dk_tag_name(DK_TAG_pt2_compliant_tag), "pt2_compliant_tag");
    assert_null(dk_tag_name(DK_NUM_TAGS));
    assert_null(dk_tag_name((dk_tag)-1));
    t = DK_TAG_core;
    assert_int_equal(dk_tag_parse("pointwize", &t), DK_ERR_UNKNOWN_TAG);
    assert_string_equal(dk_last_error(), "dk_tag_parse: no operator tag is named 'pointwize'");
    assert_int_equal(t, DK_TAG_core);
    assert_int_equal(dk_tag_parse(NULL, &t), DK_ERR_NULL);
    assert_int_equal(dk_tag_parse("core", NULL), DK_ERR_NULL);
    assert_int_equal(dk_alias_analysis_parse("", &k), DK_OK);
    assert_int_equal(k, DK_ALIAS_ANALYSIS_FROM_SCHEMA);
    assert_int_equal(dk_alias_analysis_parse("CONSERVATIVE", &k), DK_OK);
    assert_int_equal(k, DK_ALIAS_ANALYSIS_CONSERVATIVE);
    assert_int_equal(dk_alias_analysis_parse("conservative", &k), DK_ERR_UNKNOWN_TAG);
    assert_string_equal(dk_last_error(), "dk_alias_analysis_parse: Invalid alias_analysis type conservative");
    assert_int_equal(k, DK_ALIAS_ANALYSIS_CONSERVATIVE);
    assert_null(dk_alias_analysis_name((dk_alias_analysis)4));
    assert_string_equal(dk_status_message(DK_ERR_UNKNOWN_TAG), "no operator tag or alias-analysis kind has that name");
}

static void test_def_with_tags(void **state) {
    static const dk_tag tags[] = { DK_TAG_pointwise, DK_TAG_core, DK_TAG_pointwise };
    dk_registry *r = make_registry(0);
    dk_registration *def, *impl;
    dk_operator *op;
    dk_def_options o;
    char *dump;
    int i;
    (void)state;
    memset(&o, 0, sizeof o);
    o.alias_analysis = DK_ALIAS_ANALYSIS_CONSERVATIVE;
    o.tags = tags;
    o.num_tags = 3; /* repeats allowed: a set */
    assert_int_equal(dk_def_with(r, "t::mul(Tensor a, Tensor b) -> Tensor", &o, &def), DK_OK);
    op = dk_op_lookup(r, "t::mul");
    assert_non_null(op);
    for (i = 0; i < DK_NUM_TAGS; i++)
        assert_int_equal(dk_op_has_tag(op, (dk_tag)i), i == DK_TAG_pointwise || i == DK_TAG_core);
    assert_true(dk_op_tags(op) == (((uint64_t)1 << DK_TAG_pointwise) | ((uint64_t)1 << DK_TAG_core)));
    assert_false(dk_op_has_tag(op, DK_NUM_TAGS));
    assert_false(dk_op_has_tag(op, (dk_tag)-1));
    assert_int_equal(dk_op_alias_analysis(op), DK_ALIAS_ANALYSIS_CONSERVATIVE);
    dump = dump_state(op);
    assert_non_null(strstr(dump, "\nalias analysis kind: CONSERVATIVE\ntags: core, pointwise\n"));
    free(dump);
    /* the tags belong to the def: gone with it, back with a new one */
    assert_int_equal(dk_impl(r, "t::mul", DK_CPU, dk_unboxed(DK_FN(k_one), NULL), &impl), DK_OK);
    assert_int_equal(dk_deregister(def), DK_OK);
    assert_true(dk_op_tags(op) == 0);
    assert_int_equal(dk_op_alias_analysis(op), DK_ALIAS_ANALYSIS_FROM_SCHEMA);
    assert_int_equal(dk_def(r, "t::mul(Tensor a, Tensor b) -> Tensor", &def), DK_OK);
    assert_true(dk_op_tags(op) == 0);
    dump = dump_state(op);
    assert_non_null(strstr(dump, "\nalias analysis kind: FROM_SCHEMA\nCPU: "));
    assert_null(strstr(dump, "tags:"));
    free(dump);
    /* NULL options = dk_def */
    assert_int_equal(dk_def_with(r, "t::neg(Tensor a) -> Tensor", NULL, &def), DK_OK);
    assert_true(dk_op_tags(dk_op_lookup(r, "t::neg")) == 0);
    dk_registry_destroy(r);
}

static void test_def_with_bad_options(void **state) {
    static const dk_tag bad_tags[] = { DK_TAG_core, (dk_tag)DK_NUM_TAGS };
    static const dk_tag neg_tags[] = { (dk_tag)-1 };
    struct { const char *what; dk_alias_analysis kind; const dk_tag *tags; size_t n; dk_status expect; const char *msg; }
        cases[] = {
            { "tag out of range", DK_ALIAS_ANALYSIS_FROM_SCHEMA, bad_tags, 2, DK_ERR_BAD_ARGUMENT, "tag 1 has the value 13" },
            { "negative tag", DK_ALIAS_ANALYSIS_FROM_SCHEMA, neg_tags, 1, DK_ERR_BAD_ARGUMENT, "which is no dk_tag" },
            { "NULL tags", DK_ALIAS_ANALYSIS_FROM_SCHEMA, NULL, 2, DK_ERR_NULL, "2 tags but a NULL tag array" },
            { "internal kind", DK_ALIAS_ANALYSIS_INTERNAL_SPECIAL_CASE, NULL, 0, DK_ERR_BAD_ARGUMENT,
              "INTERNAL_SPECIAL_CASE is c10's own" },
            { "kind out of range", (dk_alias_analysis)42, NULL, 0, DK_ERR_BAD_ARGUMENT, "alias analysis kind 42" },
        };
    dk_registry *r = make_registry(0);
    dk_registration *h = NULL;
    dk_library *lib;
    size_t i;
    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dk_def_options o;
        dk_registry_stats before, after;
        memset(&o, 0, sizeof o);
        o.alias_analysis = cases[i].kind;
        o.tags = cases[i].tags;
        o.num_tags = cases[i].n;
        dk_registry_read_stats(r, &before);
        assert_int_equal(dk_def_with(r, "t::bad(Tensor a) -> Tensor", &o, &h), cases[i].expect);
        if (!strstr(dk_last_error(), cases[i].msg)) fail_msg("%s: %s", cases[i].what, dk_last_error());
        assert_null(dk_op_lookup(r, "t::bad"));
        dk_registry_read_stats(r, &after);
        assert_true(before.live_bytes == after.live_bytes && before.operators == after.operators);
        assert_null(h);
    }
    /* the same options through a library block */
    assert_int_equal(dk_library_open(r, DK_LIBRARY_KIND_DEF, "t", DK_Undefined, &lib), DK_OK);
    {
        dk_def_options o;
        static const dk_tag ok_tags[] = { DK_TAG_view_copy };
        memset(&o, 0, sizeof o);
        o.tags = bad_tags;
        o.num_tags = 2;
        assert_int_equal(dk_library_def_with(lib, "bad(Tensor a) -> Tensor", &o), DK_ERR_BAD_ARGUMENT);
        assert_null(dk_op_lookup(r, "t::bad"));
        o.tags = ok_tags;
        o.num_tags = 1;
        o.alias_analysis = DK_ALIAS_ANALYSIS_PURE_FUNCTION;
        assert_int_equal(dk_library_def_with(lib, "good(Tensor a) -> Tensor", &o), DK_OK);
        assert_true(dk_op_has_tag(dk_op_lookup(r, "t::good"), DK_TAG_view_copy));
        assert_int_equal(dk_op_alias_analysis(dk_op_lookup(r, "t::good")), DK_ALIAS_ANALYSIS_PURE_FUNCTION);
    }
    assert_int_equal(dk_library_close(lib), DK_OK);
    assert_null(dk_op_lookup(r, "t::good"));
    dk_registry_destroy(r);
}

/* ---- public FULL_AFTER keysets ------------------------------------------------ */

static void test_full_after(void **state) {
    dk_keyset t = DK_KS_FULL_AFTER(DK_Tracer);
    (void)state;
    assert_false(dk_ks_has(t, DK_Tracer));
    assert_true(dk_ks_has(t, DK_AutogradCPU) && dk_ks_has(t, DK_CPU) && dk_ks_has(t, DK_AutogradNestedTensor));
    assert_true(dk_ks_has(t, DK_PythonDispatcher)); /* always after, as c10 */
    assert_false(dk_ks_has_any(t, DK_KS_AUTOCAST));
    assert_true(dk_ks_equal(dk_ks_full_after(DK_Tracer), t));
    /* a runtime key counts as its functionality: every backend bit stays */
    assert_true(dk_ks_equal(dk_ks_full_after(DK_AutogradCPU), DK_KS_FULL_AFTER(DK_AutogradFunctionality)));
    assert_true(dk_ks_has_all(dk_ks_full_after(DK_AutogradCUDA), DK_KS_BACKENDS));
    /* c10's named "after" keysets are FULL_AFTER of their keys */
    assert_true(dk_ks_equal(dk_ks_full_after(DK_AutogradOther), DK_KS_AFTER_AUTOGRAD));
    assert_true(dk_ks_equal(dk_ks_full_after(DK_ADInplaceOrView), DK_KS_AFTER_INPLACE_VIEW));
    /* no functionality: c10's formula for Undefined (libtorch 1.13.1:
       DispatchKeySet(FULL_AFTER, k).raw_repr() for Undefined 0x20000000001fff,
       StartOfDenseBackends 0x20000000003fff, AutogradCPU 0x20001fffffffff) */
    assert_true(dk_ks_full_after(DK_Undefined).repr == 0x20000000001fffULL);
    assert_true(dk_ks_full_after(DK_StartOfDenseBackends).repr == 0x20000000003fffULL);
    assert_true(dk_ks_full_after(DK_AutogradCPU).repr == 0x20001fffffffffULL);
    assert_true(dk_ks_full_after((dk_key)-1).repr == 0x20000000001fffULL);
    assert_true(dk_ks_full_after((dk_key)DK_NUM_KEYS).repr == 0x20000000001fffULL);
    assert_true(dk_ks_equal(dk_ks_full_after(DK_EndOfFunctionalityKeys), DK_KS_FULL));
    /* an alias key: below every key it stands for (a fallback there cannot
       reach itself; c10 gives its Undefined value, 0x20000000001fff) */
    assert_true(dk_ks_equal(dk_ks_full_after(DK_Autograd), DK_KS_AFTER_AUTOGRAD));
    {
        int a;
        for (a = DK_StartOfAliasKeys; a <= DK_EndOfAliasKeys; a++) {
            dk_keyset below = dk_ks_full_after((dk_key)a), set = dk_alias_runtime_set((dk_key)a);
            dk_key k;
            DK_KS_FOREACH(k, set) assert_false(dk_ks_has(below, k));
            assert_true(dk_ks_has_all(below, DK_KS_BACKENDS));
        }
    }
    assert_true(dk_ks_equal(DK_KS_FULL_AFTER(DK_AutogradCPU), DK_KS_FULL)); /* the macro: functionality keys only */
    assert_true(DK_KS_FULL_AFTER(DK_Undefined).repr == 0x20000000001fffULL);
    /* the singleton keysets of c10 */
    assert_true(dk_ks_equal(DK_KS_SPARSE, dk_ks_from_key(DK_Sparse)));
    assert_true(dk_ks_equal(DK_KS_SPARSE_CSR, dk_ks_or(dk_ks_from_key(DK_SparseCsrCPU), dk_ks_from_key(DK_SparseCsrCUDA))));
    assert_true(dk_ks_equal(DK_KS_MKLDNN, dk_ks_from_key(DK_MkldnnCPU)));
    assert_true(dk_ks_equal(DK_KS_INPLACE_OR_VIEW, dk_ks_from_key(DK_ADInplaceOrView)));
}

/* ---- backend renaming ------------------------------------------------------------ */

static void test_rename_bad_input(void **state) {
    static const struct { dk_backend b; const char *name; dk_status expect; const char *msg; } cases[] = {
        { DK_PrivateUse1Bit, NULL, DK_ERR_NULL, "NULL name" },
        { DK_CPUBit, "npu", DK_ERR_BAD_KEY, "only a PrivateUse backend component can be renamed, not CPUBit" },
        { DK_MetaBit, "npu", DK_ERR_BAD_KEY, "not MetaBit" },
        { DK_InvalidBit, "npu", DK_ERR_BAD_KEY, "not InvalidBit" },
        { (dk_backend)99, "npu", DK_ERR_BAD_KEY, "(out of range)" },
        { (dk_backend)-1, "npu", DK_ERR_BAD_KEY, "(out of range)" },
        { DK_PrivateUse1Bit, "", DK_ERR_BAD_NAME, "an identifier of 1 to 32 characters" },
        { DK_PrivateUse1Bit, "1npu", DK_ERR_BAD_NAME, "an identifier" },
        { DK_PrivateUse1Bit, "n-pu", DK_ERR_BAD_NAME, "an identifier" },
        { DK_PrivateUse1Bit, "npu ", DK_ERR_BAD_NAME, "an identifier" },
        { DK_PrivateUse1Bit, "a234567890123456789012345678901234", DK_ERR_BAD_NAME, "1 to 32" },
        { DK_PrivateUse1Bit, "cpu", DK_ERR_BAD_NAME, "its key 'CPU' would have the name of another dispatch key" },
        { DK_PrivateUse1Bit, "CPU", DK_ERR_BAD_NAME, "'CPU' already names a dispatch key or backend" },
        { DK_PrivateUse1Bit, "Tracer", DK_ERR_BAD_NAME, "'Tracer' already names" },
        { DK_PrivateUse1Bit, "PrivateUse2", DK_ERR_BAD_NAME, "'PrivateUse2' already names" },
        { DK_PrivateUse1Bit, "Autograd", DK_ERR_BAD_NAME, "'Autograd' already names" },
        { DK_PrivateUse1Bit, "Unknown", DK_ERR_BAD_NAME, "'Unknown' already names" },
        { DK_PrivateUse1Bit, "xla", DK_ERR_BAD_NAME, "'XLA'" },
    };
    size_t i;
    int k;
    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dk_status s = dk_backend_rename(cases[i].b, cases[i].name);
        if (s != cases[i].expect || !strstr(dk_last_error(), cases[i].msg))
            fail_msg("case %d ('%s'): status %d, '%s'", (int)i, cases[i].name ? cases[i].name : "NULL", (int)s,
                     dk_last_error());
    }
    /* nothing changed */
    assert_string_equal(dk_key_name(DK_PrivateUse1), "PrivateUse1");
    assert_string_equal(dk_backend_name(DK_PrivateUse1Bit), "PrivateUse1Bit");
    for (k = 0; k < DK_NUM_KEYS; k++) {
        dk_key parsed;
        assert_int_equal(dk_key_parse(dk_key_name((dk_key)k), &parsed), DK_OK);
        assert_int_equal(parsed, k);
    }
}

static void test_rename_names_and_parsing(void **state) {
    dk_registry *r = make_registry(0);
    dk_key k = DK_Undefined;
    dk_backend b = DK_InvalidBit;
    int i;
    char text[256];
    (void)state;
    assert_int_equal(dk_backend_rename(DK_PrivateUse1Bit, "npu"), DK_OK);
    assert_string_equal(dk_key_name(DK_PrivateUse1), "NPU");
    assert_string_equal(dk_key_name(DK_AutogradPrivateUse1), "AutogradNPU");
    assert_string_equal(dk_key_name(DK_SparsePrivateUse1), "SparseNPU");
    assert_string_equal(dk_key_name(DK_QuantizedPrivateUse1), "QuantizedNPU");
    assert_string_equal(dk_key_name(DK_NestedTensorPrivateUse1), "NestedTensorNPU");
    assert_string_equal(dk_backend_name(DK_PrivateUse1Bit), "NPUBit");
    assert_string_equal(dk_key_name(DK_PrivateUse2), "PrivateUse2"); /* the others keep theirs */
    assert_string_equal(dk_key_name(DK_AutogradPrivateUse2), "AutogradPrivateUse2");
    /* every name parses back, the new ones, the given one and the old ones */
    for (i = 0; i < DK_NUM_KEYS; i++) {
        assert_int_equal(dk_key_parse(dk_key_name((dk_key)i), &k), DK_OK);
        assert_int_equal(k, i);
    }
    for (i = 0; i <= DK_NUM_BACKENDS; i++) {
        assert_int_equal(dk_backend_parse(dk_backend_name((dk_backend)i), &b), DK_OK);
        assert_int_equal(b, i);
    }
    assert_int_equal(dk_key_parse("npu", &k), DK_OK);
    assert_int_equal(k, DK_PrivateUse1);
    assert_int_equal(dk_key_parse("AutogradNPU", &k), DK_OK);
    assert_int_equal(k, DK_AutogradPrivateUse1);
    assert_int_equal(dk_key_parse("SparseNPU", &k), DK_OK);
    assert_int_equal(k, DK_SparsePrivateUse1);
    assert_int_equal(dk_key_parse("AutogradPrivateUse1", &k), DK_OK);
    assert_int_equal(k, DK_AutogradPrivateUse1);
    assert_int_equal(dk_key_parse("Autogradnpu", &k), DK_ERR_UNKNOWN_KEY);
    assert_int_equal(dk_backend_parse("npu", &b), DK_OK);
    assert_int_equal(b, DK_PrivateUse1Bit);
    assert_int_equal(dk_backend_parse("PrivateUse1Bit", &b), DK_OK);
    assert_int_equal(b, DK_PrivateUse1Bit);
    /* keysets print the new names */
    dk_ks_to_string(dk_ks_or(dk_ks_from_key(DK_PrivateUse1), dk_ks_from_key(DK_AutogradPrivateUse1)), text, sizeof text);
    assert_string_equal(text, "DispatchKeySet(NPU, AutogradNPU)");
    /* again with the same name: nothing to do; another name: refused */
    assert_int_equal(dk_backend_rename(DK_PrivateUse1Bit, "npu"), DK_OK);
    assert_int_equal(dk_backend_rename(DK_PrivateUse1Bit, "tpu"), DK_ERR_ALREADY_NAMED);
    assert_string_equal(dk_last_error(), "rename_backend(PrivateUse1Bit, \"tpu\"): Backend name has already been set to npu");
    assert_string_equal(dk_key_name(DK_PrivateUse1), "NPU");
    /* names of other backends must not collide with the new ones */
    assert_int_equal(dk_backend_rename(DK_PrivateUse2Bit, "npu"), DK_ERR_BAD_NAME);
    assert_int_equal(dk_backend_rename(DK_PrivateUse2Bit, "NPU"), DK_ERR_BAD_NAME);
    assert_string_equal(dk_key_name(DK_PrivateUse2), "PrivateUse2");
    assert_string_equal(dk_status_message(DK_ERR_ALREADY_NAMED), "the backend component already has another name");
    dk_registry_destroy(r);
}

/* After the rename (test_rename_names_and_parsing), every text a registry
   writes uses the new names. */
static void test_rename_in_texts(void **state) {
    dk_registry *r = make_registry(1), *plain = make_registry(0);
    dk_registration *h;
    dk_operator *op;
    dk_explanation e;
    tensor x;
    char buf[16384], *dump;
    (void)state;
    assert_int_equal(dk_def(r, "n::op(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(r, "n::op", DK_CPU, dk_unboxed(DK_FN(k_one), NULL), &h), DK_OK);
    assert_int_equal(dk_impl(r, "n::op", DK_AutogradPrivateUse1, dk_unboxed(DK_FN(k_one), NULL), &h), DK_OK);
    op = dk_op_lookup(r, "n::op");
    dump = dump_state(op);
    assert_non_null(strstr(dump, "\nAutogradNPU: registered at "));
    free(dump);
    dk_op_computed_table_to_string(op, buf, sizeof buf);
    assert_non_null(strstr(buf, "\nAutogradNPU: registered at "));
    /* a call that misses: c10's message with the new name */
    x.ks = dk_ks_from_key(DK_PrivateUse1);
    assert_int_equal(unary_call(op, x), 0);
    assert_int_equal(dk_last_call_status(), DK_ERR_NO_KERNEL);
    assert_non_null(strstr(dk_last_error(), "Could not run 'n::op' with arguments from the 'NPU' backend."));
    assert_non_null(strstr(dk_last_error(), "AutogradNPU"));
    assert_null(strstr(dk_last_error(), "PrivateUse1"));
    assert_int_equal(dk_explain(op, x.ks, &e), DK_OK);
    dk_explain_to_string(op, &e, buf, sizeof buf);
    assert_non_null(strstr(buf, "NPU"));
    assert_null(strstr(buf, "PrivateUse1"));
    /* the registry's own words, too */
    assert_int_equal(dk_def(plain, "n::op(Tensor x) -> Tensor", &h), DK_OK);
    op = dk_op_lookup(plain, "n::op");
    assert_int_equal(unary_call(op, x), 0);
    assert_non_null(strstr(dk_last_error(), "NPU"));
    assert_null(strstr(dk_last_error(), "PrivateUse1"));
    dk_registry_destroy(r);
    dk_registry_destroy(plain);
}

/* Readers racing a rename see the old name or the new one, never anything
   else (the record is published whole). Bounded loops, counted outcomes. */
static int race_go;
static void *name_reader(void *arg) {
    long *counts = (long *)arg;
    int i;
    while (!DK__LOAD_ACQ(&race_go)) {}
    for (i = 0; i < 200000; i++) {
        const char *n = dk_key_name(DK_AutogradPrivateUse3);
        dk_key k;
        if (strcmp(n, "AutogradPrivateUse3") == 0) counts[0]++;
        else if (strcmp(n, "AutogradMYDEV") == 0 && dk_key_parse(n, &k) == DK_OK && k == DK_AutogradPrivateUse3)
            counts[1]++;
        else counts[2]++;
    }
    return NULL;
}

static void test_rename_races_readers(void **state) {
    pthread_t th[2];
    long counts[2][3];
    int i;
    (void)state;
    memset(counts, 0, sizeof counts);
    for (i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, name_reader, counts[i]), 0);
    DK__STORE_REL(&race_go, 1);
    assert_int_equal(dk_backend_rename(DK_PrivateUse3Bit, "mydev"), DK_OK);
    for (i = 0; i < 2; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    for (i = 0; i < 2; i++) {
        assert_int_equal(counts[i][0] + counts[i][1], 200000);
        assert_int_equal(counts[i][2], 0);
    }
    assert_string_equal(dk_key_name(DK_AutogradPrivateUse3), "AutogradMYDEV");
}

/* With c10's messages, the executed-fallthrough and ambiguous-AutogradOther
   errors begin as c10's internal asserts do, and every override warns
   (1.13.1's TORCH_WARN): the ASSERT and WARN records, replayed with the
   generator's names and sites. The ambiguity's text stops at c10's first
   newline (c10 goes on with an inference-mode hint and dumpState), and the
   warning's previous kernel is the one shadowed (c10: the one that fixed
   the C++ signature): both documented differences. */
static int n_warned;
static char warned[2048];
static void capture_warning(dk_log_level level, dk_log_item item, const char *message, void *ud) {
    (void)level; (void)ud;
    if (item != DK_LOG_KERNEL_OVERRIDDEN) return;
    n_warned++;
    snprintf(warned, sizeof warned, "%s", message);
}
static void boxed_noop(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks; (void)s;
}
#define SITE(file, line) (file), (line), &h, DK_CONFIG_SIGNATURE
static void test_c10_assert_and_override_words(void **state) {
    dk_registry *r;
    dk_registry_desc d;
    dk_registration *h;
    dk_value storage[2];
    dk_stack st;
    char c10[2048];
    const char *nl, *prev;
    (void)state;
    memset(&d, 0, sizeof d);
    d.c10_messages = 1;
    d.logger.func = capture_warning;
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    assert_int_equal(dk__def(r, "tq::amb(Tensor a) -> Tensor", NULL, SITE("tq.cpp", 1)), DK_OK);
    assert_int_equal(dk__def(r, "tq::ft(Tensor a) -> Tensor", NULL, SITE("tq.cpp", 1)), DK_OK);
    assert_int_equal(dk__impl(r, "tq::amb", DK_SparseCPU, dk_boxed(boxed_noop, NULL), SITE("tq.cpp", 2)), DK_OK);
    assert_int_equal(dk__impl(r, "tq::amb", DK_CompositeImplicitAutograd, dk_boxed(boxed_noop, NULL),
                              SITE("tq.cpp", 3)), DK_OK);
    assert_int_equal(dk__impl(r, "tq::ft", DK_CPU, dk_fallthrough(), SITE("tq.cpp", 4)), DK_OK);
    (void)dk_last_call_status();
    dk_stack_init(&st, storage, 2);
    dk_stack_push(&st, dk_tensor(&st));   /* any tensor: redispatch reads no keys */
    dk_redispatch_boxed(dk_op_lookup(r, "tq::amb"), dk_ks_from_key(DK_AutogradOther), &st);
    assert_int_equal(dk_last_call_status(), DK_ERR_AMBIGUOUS_AUTOGRAD_OTHER);
    snprintf(c10, sizeof c10, "%s", find_record("ASSERT", "ambiguous_autogradother")->text);
    assert_non_null(nl = strchr(c10, '\n'));
    c10[nl - c10] = '\0';
    assert_string_equal(dk_last_error(), c10);
    dk_stack_init(&st, storage, 2);
    dk_stack_push(&st, dk_tensor(&st));
    dk_redispatch_boxed(dk_op_lookup(r, "tq::ft"), dk_ks_from_key(DK_CPU), &st);
    assert_int_equal(dk_last_call_status(), DK_ERR_FALLTHROUGH_CALLED);
    assert_string_equal(dk_last_error(), find_record("ASSERT", "fallthrough_executed")->text);
    /* three overrides: CPU of two operators, then Meta; 1.13.1 warns at each */
    assert_int_equal(dk__def(r, "tw::f(Tensor a) -> Tensor", NULL, SITE("tw.cpp", 1)), DK_OK);
    assert_int_equal(dk__def(r, "tw::g(Tensor a) -> Tensor", NULL, SITE("tw.cpp", 1)), DK_OK);
    assert_int_equal(dk__impl(r, "tw::f", DK_CPU, dk_boxed(boxed_noop, NULL), SITE("tw.cpp", 2)), DK_OK);
    assert_int_equal(dk__impl(r, "tw::g", DK_CPU, dk_boxed(boxed_noop, NULL), SITE("tw.cpp", 2)), DK_OK);
    assert_int_equal(dk__impl(r, "tw::f", DK_CPU, dk_boxed(boxed_noop, NULL), SITE("tw.cpp", 3)), DK_OK);
    assert_int_equal(dk__impl(r, "tw::g", DK_CPU, dk_boxed(boxed_noop, NULL), SITE("tw.cpp", 3)), DK_OK);
    assert_int_equal(dk__impl(r, "tw::f", DK_Meta, dk_boxed(boxed_noop, NULL), SITE("tw.cpp", 4)), DK_OK);
    assert_int_equal(dk__impl(r, "tw::f", DK_Meta, dk_boxed(boxed_noop, NULL), SITE("tw.cpp", 4)), DK_OK);
    assert_int_equal(n_warned, atoi(find_record("WARN", "override_count")->text));
    snprintf(c10, sizeof c10, "%s", find_record("WARN", "override")->text);
    assert_non_null(prev = strstr(c10, "  previous kernel: registered at tw.cpp:2\n"));
    memcpy(c10 + (prev - c10) + strlen("  previous kernel: registered at tw.cpp:"), "4", 1);
    assert_string_equal(warned, c10);
    dk_registry_destroy(r);
}
#undef SITE

/* FULL_AFTER of keys without a functionality (an alias key's is a
   documented difference, docs/c10.md), and the schema parser's complex defaults ("complex x=2.5" reads as 0.+2.j), as libtorch 1.13.1. */
static void test_full_after_and_complex_texts(void **state) {
    int i, checked = 0, aliases = 0;
    (void)state;
    for (i = 0; i < n_recs; i++) {
        const char *slash = strchr(recs[i].what, '/');
        if (strcmp(recs[i].tag, "FULLAFTER") != 0) continue;
        assert_non_null(slash);
        if (dk_key_is_alias((dk_key)atoi(slash + 1))) {   /* a difference: below the keys it stands for */
            aliases++;
            continue;
        }
        assert_true(dk_ks_full_after((dk_key)atoi(slash + 1)).repr == hex(recs[i].text));
        checked++;
    }
    assert_int_equal(checked, 3);
    assert_int_equal(aliases, 1);
    for (i = 0; i < n_recs; i++) {
        static const char *const schemas[] = { "tc::f(complex x=2.5) -> ()", "tc::f(complex x=1j) -> ()",
                                               "tc::f(complex x=-2.5) -> ()", "tc::f(complex[] x=[1j, 2.5]) -> ()",
                                               "tc::f(Scalar x=1j) -> ()" };
        char text[256];
        dk_schema *s;
        int n;
        if (strcmp(recs[i].tag, "SCHEMA") != 0) continue;
        n = atoi(recs[i].what + strlen("complex"));
        assert_true(n >= 0 && n < 5);
        assert_int_equal(dk_schema_parse(schemas[n], &s), DK_OK);
        dk_schema_to_string(s, text, sizeof text);
        assert_string_equal(text, recs[i].text);
        dk_schema_free(s);
        checked++;
    }
    assert_int_equal(checked, 3 + 5);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_texts_highest_key),
        cmocka_unit_test(test_texts_keysets),
        cmocka_unit_test(test_texts_errors),
        cmocka_unit_test(test_texts_alias_analysis),
        cmocka_unit_test(test_texts_tags_in_dump),
        cmocka_unit_test(test_tag_names),
        cmocka_unit_test(test_def_with_tags),
        cmocka_unit_test(test_def_with_bad_options),
        cmocka_unit_test(test_full_after),
        cmocka_unit_test(test_c10_assert_and_override_words),
        cmocka_unit_test(test_full_after_and_complex_texts),
        /* process-wide renames, in this order */
        cmocka_unit_test(test_rename_bad_input),
        cmocka_unit_test(test_rename_names_and_parsing),
        cmocka_unit_test(test_rename_in_texts),
        cmocka_unit_test(test_rename_races_readers),
    };
    if (argc > 1) texts_path = argv[1];
    n_recs = load_records(recs, (int)(sizeof recs / sizeof recs[0]));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
