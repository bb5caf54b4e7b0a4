/* Two translation units compiled with different key lists: the mismatch is
   detected and explained, never silently mis-indexed. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

dk_status other_unit_config_check(void);
dk_status other_unit_register(dk_registry *r);

static void test_same_lists_pass(void **state) {
    (void)state;
    assert_int_equal(dk_config_check(), DK_OK);
}

static void test_other_lists_detected(void **state) {
    (void)state;
    assert_int_equal(other_unit_config_check(), DK_ERR_CONFIG_MISMATCH);
    assert_non_null(strstr(dk_last_error(), "different key lists"));
    assert_non_null(strstr(dk_last_error(), "GPU")); /* the caller's lists are quoted */
    assert_non_null(strstr(dk_last_error(), "MTIA")); /* and the implementation's */
    assert_string_equal(dk_status_str(DK_ERR_CONFIG_MISMATCH),
                        "translation units were compiled with different key lists");
}

/* Detected at the first registration, before any slot is indexed. */
static void test_registration_from_other_lists_refused(void **state) {
    dk_registry *r;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(other_unit_register(r), DK_ERR_CONFIG_MISMATCH);
    assert_non_null(strstr(dk_last_error(), "different key lists"));
    assert_null(dk_op_lookup(r, "mismatch::op"));
    dk_registry_destroy(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_lists_pass),
        cmocka_unit_test(test_other_lists_detected),
        cmocka_unit_test(test_registration_from_other_lists_refused),
    };
    return cmocka_run_group_tests_name("configuration mismatch between translation units", tests, NULL, NULL);
}
