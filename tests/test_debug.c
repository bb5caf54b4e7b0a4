/* What torch.library users expect (issue #15): typed registration that
   rejects wrong kernels and records where, which function and which C
   type; per-argument keysets in explain; the autograd-not-implemented
   fallback; the HTML picture of the dispatch table. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

typedef struct tensor { dk_keyset ks; float v; } tensor;
DK_DECLARE_OP(neg, float, x.ks, (tensor, x))
DK_DECLARE_OP(mix, float, dk_ks_or(a.ks, b.ks), (tensor, a), (tensor, b), (const char *, tag))

static float neg_cpu(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return -x.v; }
static float mix_cpu(const dk_kernel *k, dk_keyset ks, tensor a, tensor b, const char *tag) {
    (void)k; (void)ks; (void)tag;
    return a.v + b.v;
}

static tensor cpu(float v) {
    tensor t;
    t.ks = dk_ks_from_key(DK_CPU);
    t.v = v;
    return t;
}

static char text[8192];
static int site_line;   /* the line of the registration under test */

static dk_registry *new_registry(void) {
    dk_registry *r = NULL;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    return r;
}

/* DK_IMPL_TYPED: the call works; dump_state names this file's line, the
   kernel's function and its C type where c10 prints the inferred schema. */
static void test_typed_impl_dump_state(void **state) {
    dk_registry *r = new_registry();
    dk_registration *h;
    char want[512];
    (void)state;
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    site_line = __LINE__ + 1;
    assert_int_equal(DK_IMPL_TYPED(neg, r, "my::neg", DK_CPU, neg_cpu, NULL, &h), DK_OK);
    assert_true(neg_call(dk_op_lookup(r, "my::neg"), cpu(2)) == -2.0f);
    dk_op_dump_state(dk_op_lookup(r, "my::neg"), text, sizeof text);
    snprintf(want, sizeof want, "CPU: registered at %s:%d (neg_cpu) :: float(const dk_kernel *, dk_keyset, tensor) "
             "[ unboxed ]\n", __FILE__, site_line);
    assert_non_null(strstr(text, want));
    assert_string_equal(h->kernel.signature, "float(const dk_kernel *, dk_keyset, tensor)");
    /* an untyped registration still says (none) */
    assert_int_equal(dk_impl(r, "my::neg", DK_CUDA, dk_unboxed(DK_FN(neg_cpu), NULL), &h), DK_OK);
    dk_op_dump_state(dk_op_lookup(r, "my::neg"), text, sizeof text);
    assert_non_null(strstr(text, "CUDA: registered at "));
    assert_non_null(strstr(strstr(text, "CUDA: registered at "), " :: (none) [ unboxed ]"));
    dk_registry_destroy(r);
}

/* Several arguments, a pointer type among them. */
static void test_typed_signature_text(void **state) {
    dk_kernel_desc d = DK_KERNEL(mix, mix_cpu, NULL);
    (void)state;
    assert_string_equal(d.signature, "float(const dk_kernel *, dk_keyset, tensor, tensor, const char *)");
    assert_string_equal(d.name, "mix_cpu");
    assert_true(d.fn == DK_FN(mix_cpu));
}

static void typed_block(dk_library *lib) {
    site_line = __LINE__ + 1;
    assert_int_equal(DK_LIB_IMPL_TYPED(neg, lib, "neg", DK_Undefined, neg_cpu, NULL), DK_OK);
}

/* In a library block the record names the line of the impl, not the block's. */
static void test_typed_lib_impl(void **state) {
    dk_registry *r = new_registry();
    dk_library *lib;
    dk_registration *h;
    char want[512];
    (void)state;
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_library_run(r, DK_LIB_IMPL, "my", DK_CPU, typed_block, &lib), DK_OK);
    assert_true(neg_call(dk_op_lookup(r, "my::neg"), cpu(3)) == -3.0f);
    dk_op_dump_state(dk_op_lookup(r, "my::neg"), text, sizeof text);
    snprintf(want, sizeof want, "CPU: registered at %s:%d (neg_cpu) :: float(", __FILE__, site_line);
    assert_non_null(strstr(text, want));
    assert_int_equal(dk_library_close(lib), DK_OK);
    assert_false(dk_op_has_kernel_for_key(dk_op_lookup(r, "my::neg"), DK_CPU));
    dk_registry_destroy(r);
}

/* Bad inputs: a clear status and message, nothing registered. */
static void test_typed_lib_impl_errors(void **state) {
    dk_registry *r = new_registry();
    dk_library *lib;
    dk_registration *h;
    (void)state;
    assert_int_equal(DK_LIB_IMPL_TYPED(neg, NULL, "neg", DK_CPU, neg_cpu, NULL), DK_ERR_NULL);
    assert_non_null(strstr(dk_last_error(), "NULL library"));
    assert_int_equal(dk_def(r, "my::neg(Tensor x) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_library_open(r, DK_LIB_IMPL, "my", DK_CPU, &lib), DK_OK);
    assert_int_equal(DK_LIB_IMPL_TYPED(neg, lib, "neg", DK_CUDA, neg_cpu, NULL), DK_ERR_KEY_MISMATCH);
    assert_non_null(strstr(dk_last_error(), "inconsistent with the dispatch key"));
    assert_int_equal(DK_IMPL_TYPED(neg, r, "bad name", DK_CPU, neg_cpu, NULL, &h), DK_ERR_BAD_NAME);
    dk_op_dump_state(dk_op_lookup(r, "my::neg"), text, sizeof text);
    assert_null(strstr(text, "neg_cpu"));
    assert_int_equal(dk_library_close(lib), DK_OK);
    dk_registry_destroy(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typed_impl_dump_state),
        cmocka_unit_test(test_typed_signature_text),
        cmocka_unit_test(test_typed_lib_impl),
        cmocka_unit_test(test_typed_lib_impl_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
