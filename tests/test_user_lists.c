/* make: flags='-DDK_CONFIG_HEADER="user_lists_config.h"' flags=-Itests */
/* User key lists (tests/user_lists_config.h): registrations that could never
   run in these lists are refused with a status and change nothing; user
   aliases (KEYS(...)) take one fallback for every key they cover; messages
   name only keys the lists have; thread-local defaults are empty. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

typedef struct handle { uint64_t ks; } handle;
static dk_keyset keyset_of(const void *t, void *user_data) {
    (void)user_data;
    return dk_ks_raw(((const handle *)t)->ks);
}
static int runs;
static void mark(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)op; (void)ks;
    runs++;
    dk_stack_pop(s);
    dk_stack_push(s, dk_int((int64_t)(intptr_t)k->user_data));
}
static int64_t call(dk_registry *r, const char *name, uint64_t ks) {
    handle h;
    dk_value storage[2];
    dk_stack s;
    h.ks = ks;
    dk_stack_init(&s, storage, 2);
    dk_stack_push(&s, dk_tensor(&h));
    dk_call_boxed(dk_op_lookup(r, name), &s);
    if (dk_last_call_status() != DK_OK) return -1;
    return dk_stack_pop(&s).as.i;
}
static dk_registry *make(void) {
    dk_registry_desc desc;
    dk_registry *r;
    dk_registration *h;
    memset(&desc, 0, sizeof desc);
    desc.tensor_keyset = keyset_of;
    assert_int_equal(dk_registry_create(&desc, &r), DK_OK);
    assert_int_equal(dk_def(r, "t::f(Tensor x) -> int", &h), DK_OK);
    assert_int_equal(dk_impl(r, "t::f", DK_Paper, dk_boxed(mark, (void *)1), &h), DK_OK);
    return r;
}

static void test_defaults(void **state) {
    (void)state;
    assert_true(dk_ks_is_empty(dk_tls_included()));
    assert_true(dk_ks_is_empty(dk_tls_excluded()));
    assert_true(dk_tls_is_default());
    /* no autograd layer: c10's autograd queries give nothing */
    assert_true(dk_ks_is_empty(dk_autograd_key_backend_set(DK_Paper)));
    assert_int_equal(dk_backend_autograd_key(DK_PaperBit), DK_Undefined);
    assert_true(dk_ks_is_empty(dk_ks_and(dk_alias_runtime_set(DK_Autograd), dk_ks_raw(~DK_KS_BACKENDS.repr))));
}

/* Autograd covers no runtime key here: a kernel or a fallback there could
   never run. Refused, and nothing changes. */
static void test_alias_without_keys_refused(void **state) {
    dk_registry *r = make();
    dk_registration *h = NULL;
    char before[4096], after[4096];
    (void)state;
    dk_op_state_to_string(dk_op_lookup(r, "t::f"), before, sizeof before);
    assert_int_equal(dk_impl(r, "t::f", DK_Autograd, dk_boxed(mark, (void *)2), &h), DK_ERR_BAD_KEY);
    assert_non_null(strstr(dk_last_error(), "'Autograd' covers no runtime key of this key list"));
    assert_null(h);
    assert_int_equal(dk_fallback(r, DK_Autograd, dk_boxed(mark, (void *)2), &h), DK_ERR_BAD_KEY);
    assert_null(h);
    assert_int_equal(dk_impl(r, "t::new_op", DK_Autograd, dk_boxed(mark, (void *)2), &h), DK_ERR_BAD_KEY);
    assert_null(dk_op_lookup(r, "t::new_op"));
    dk_op_state_to_string(dk_op_lookup(r, "t::f"), after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(call(r, "t::f", dk_ks_from_key(DK_Paper).repr), 1);
    dk_registry_destroy(r);
}

/* A second alias of a role, or a KEYS(...) alias: resolution reads neither,
   so a kernel there is refused; the first alias of the role works. */
static void test_roleless_alias_kernel_refused(void **state) {
    dk_registry *r = make();
    dk_registration *h = NULL;
    char before[4096], after[4096];
    (void)state;
    dk_op_state_to_string(dk_op_lookup(r, "t::f"), before, sizeof before);
    assert_int_equal(dk_impl(r, "t::f", DK_AlsoEverywhere, dk_boxed(mark, (void *)3), &h), DK_ERR_BAD_KEY);
    assert_non_null(strstr(dk_last_error(), "plays no resolution role"));
    assert_int_equal(dk_impl(r, "t::f", DK_AllGlow, dk_boxed(mark, (void *)3), &h), DK_ERR_BAD_KEY);
    assert_null(h);
    dk_op_state_to_string(dk_op_lookup(r, "t::f"), after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(dk_impl(r, "t::f", DK_Everywhere, dk_boxed(mark, (void *)4), &h), DK_OK);
    assert_int_equal(call(r, "t::f", dk_ks_from_key(DK_Screen).repr), 4);
    assert_int_equal(call(r, "t::f", dk_ks_from_key(DK_Paper).repr), 1);
    dk_registry_destroy(r);
}

/* One fallback for a whole per-backend layer: KEYS(Glow) covers GlowPaper
   and GlowScreen; one deregistration removes both. */
static void test_keys_alias_fallback(void **state) {
    dk_registry *r = make();
    dk_registration *h;
    uint64_t glow_screen = dk_ks_or(dk_ks_from_key(DK_Screen), dk_ks_from_key(DK_GlowScreen)).repr;
    uint64_t glow_paper = dk_ks_or(dk_ks_from_key(DK_Paper), dk_ks_from_key(DK_GlowPaper)).repr;
    (void)state;
    assert_true(dk_key_in_alias(DK_GlowPaper, DK_AllGlow) && dk_key_in_alias(DK_GlowScreen, DK_AllGlow));
    assert_false(dk_key_in_alias(DK_Paper, DK_AllGlow) || dk_key_in_alias(DK_Trace, DK_AllGlow));
    assert_true(dk_key_in_alias(DK_Trace, DK_TraceAndGlow) && dk_key_in_alias(DK_GlowScreen, DK_TraceAndGlow));
    assert_int_equal(dk_fallback(r, DK_AllGlow, dk_boxed(mark, (void *)5), &h), DK_OK);
    assert_int_equal(call(r, "t::f", glow_paper), 5);
    assert_int_equal(call(r, "t::f", glow_screen), 5);
    assert_int_equal(call(r, "t::f", dk_ks_from_key(DK_Paper).repr), 1);
    assert_int_equal(dk_deregister(h), DK_OK);
    assert_int_equal(call(r, "t::f", glow_paper), -1); /* GlowPaper: no kernel, no fallback now */
    dk_registry_destroy(r);
}

/* Messages suggest only keys the lists have. */
static void test_messages(void **state) {
    dk_registry *r = make();
    dk_registration *h;
    (void)state;
    assert_int_equal(call(r, "t::f", dk_ks_from_key(DK_Screen).repr), -1);
    assert_non_null(strstr(dk_last_error(), "no Everywhere kernel or backend fallback covers it"));
    assert_null(strstr(dk_last_error(), "Composite"));
    assert_int_equal(dk_impl(r, "t::f", DK_Undefined, dk_boxed(mark, NULL), &h), DK_ERR_BAD_KEY);
    assert_non_null(strstr(dk_last_error(), "an alias key with the MATH set, which this key list lacks"));
    assert_null(strstr(dk_last_error(), "Composite"));
    assert_int_equal(dk_impl(r, "t::f", DK_Glow, dk_boxed(mark, NULL), &h), DK_ERR_BAD_KEY);
    assert_non_null(strstr(dk_last_error(), "e.g. 'GlowPaper'"));
    assert_null(strstr(dk_last_error(), "CPU"));
    dk_registry_destroy(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_alias_without_keys_refused),
        cmocka_unit_test(test_roleless_alias_kernel_refused),
        cmocka_unit_test(test_keys_alias_fallback),
        cmocka_unit_test(test_messages),
    };
    return cmocka_run_group_tests_name("user key lists", tests, NULL, NULL);
}
