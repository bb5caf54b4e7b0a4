/* make: flags='-DDK_CONFIG_HEADER="custom_config.h"' flags=-Itests */
/* A user-supplied key space (tests/custom_config.h) compiles and behaves:
   every table is generated from the user's rows, and special rows are found
   by role (the plain-kernel row is called Plain, not Dense). */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

static void test_generated_sizes(void **state) {
    (void)state;
    assert_int_equal(DK_NUM_BACKENDS, 2);
    assert_int_equal(DK_NUM_FUNCTIONALITY_KEYS, 4); /* Undefined, Plain, AutogradFunctionality, Tracing */
    assert_int_equal(DK_NUM_SLOTS, 6);
    assert_int_equal(DK_C10_VERSION, 0);
    assert_int_equal(DK_GPUBit, 2);
    assert_int_equal(DK_CPU, DK_StartOfPlainBackends + 1);
    assert_int_equal(DK_AutogradGPU, DK_StartOfAutogradFunctionalityBackends + 2);
    assert_int_equal(DK_Autograd, DK_StartOfAliasKeys);
    assert_true(DK_KS_FULL.repr == 0x1f);
}

static void test_slots(void **state) {
    static const dk_key by_slot[] = { DK_Undefined, DK_CPU, DK_GPU, DK_AutogradCPU, DK_AutogradGPU, DK_Tracing };
    int slot;
    (void)state;
    for (slot = 0; slot < DK_NUM_SLOTS; slot++) {
        assert_int_equal(dk_slot_key(slot), by_slot[slot]);
        assert_int_equal(dk_key_slot(by_slot[slot]), slot);
    }
}

static void test_dispatch_order(void **state) {
    char buf[128];
    dk_keyset ks = dk_ks_or(dk_ks_from_key(DK_GPU), dk_ks_from_key(DK_AutogradGPU));
    (void)state;
    assert_int_equal(dk_ks_highest_key(ks), DK_AutogradGPU);
    assert_int_equal(dk_ks_highest_key(dk_ks_add(ks, DK_Tracing)), DK_Tracing);
    /* below autograd: FULL_AFTER the first autograd key keeps the dense keys */
    assert_int_equal(dk_ks_highest_key(dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD)), DK_GPU);
    assert_int_equal(dk_ks_highest_key(dk_ks_minus(dk_ks_add(ks, DK_Tracing), DK_KS_AUTOGRAD)), DK_Tracing);
    dk_ks_to_string(dk_ks_add(ks, DK_Tracing), buf, sizeof buf);
    assert_string_equal(buf, "DispatchKeySet(GPU, AutogradGPU, Tracing)");
}

static void test_aliases_from_roles(void **state) {
    (void)state;
    assert_true(dk_key_in_alias(DK_AutogradCPU, DK_Autograd));
    assert_false(dk_key_in_alias(DK_Tracing, DK_Autograd));
    assert_true(dk_key_in_alias(DK_GPU, DK_CompositeExplicitAutograd));
    assert_true(dk_key_in_alias(DK_AutogradGPU, DK_CompositeImplicitAutograd));
    assert_false(dk_key_in_alias(DK_Tracing, DK_CompositeImplicitAutograd));
    assert_true(dk_ks_is_empty(dk_ks_and(dk_alias_runtime_set(DK_CompositeImplicitAutogradNestedTensor),
                                         dk_ks_raw(~DK_KS_BACKENDS.repr))));
    assert_int_equal(dk_backend_autograd_key(DK_GPUBit), DK_AutogradGPU);
    assert_true(dk_ks_equal(dk_autograd_key_backend_set(DK_AutogradGPU), dk_ks_from_key(DK_GPU)));
    /* no autocast, no default-included keys in this configuration */
    assert_true(dk_ks_is_empty(DK_KS_DEFAULT_INCLUDED));
    assert_true(dk_ks_is_empty(DK_KS_DEFAULT_EXCLUDED));
    assert_true(dk_ks_is_empty(dk_backend_autocast_set(DK_CPUBit)));
}

static void test_names(void **state) {
    dk_key k;
    (void)state;
    assert_string_equal(dk_key_name(DK_AutogradGPU), "AutogradGPU");
    assert_string_equal(dk_backend_name(DK_GPUBit), "GPUBit");
    assert_int_equal(dk_key_parse("Tracing", &k), DK_OK);
    assert_int_equal(k, DK_Tracing);
    assert_int_equal(dk_key_parse("CUDA", &k), DK_ERR_UNKNOWN_KEY);
    assert_int_equal(dk_config_check(), DK_OK);
}

/* The plain-kernel row is found by its role (DK_R_BACKEND_FN, per backend),
   whatever the list calls it: c10's getBackendKeySetFromAutograd. */
static void test_plain_row_by_role(void **state) {
    (void)state;
    assert_true(dk_ks_equal(dk_autograd_key_backend_set(DK_AutogradCPU), dk_ks_from_key(DK_CPU)));
    assert_true(dk_ks_equal(dk_autograd_key_backend_set(DK_AutogradGPU), dk_ks_from_key(DK_GPU)));
    assert_true(dk_ks_is_empty(dk_autograd_key_backend_set(DK_Tracing)));
    assert_true(dk_ks_is_empty(dk_autograd_key_backend_set(DK_GPU)));
}

/* A message that suggests a key names one of this list's keys. */
static void test_messages_name_this_lists_keys(void **state) {
    dk_registry *r;
    dk_registration *h;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_impl(r, "t::f", DK_Plain, dk_fallthrough(), &h), DK_ERR_BAD_KEY);
    assert_non_null(strstr(dk_last_error(), "e.g. 'CPU'"));
    assert_int_equal(dk_impl(r, "t::f", DK_AutogradFunctionality, dk_fallthrough(), &h), DK_ERR_BAD_KEY);
    assert_non_null(strstr(dk_last_error(), "e.g. 'AutogradCPU'"));
    dk_registry_destroy(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generated_sizes),
        cmocka_unit_test(test_slots),
        cmocka_unit_test(test_dispatch_order),
        cmocka_unit_test(test_aliases_from_roles),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_plain_row_by_role),
        cmocka_unit_test(test_messages_name_this_lists_keys),
    };
    return cmocka_run_group_tests_name("custom configuration", tests, NULL, NULL);
}
