/* Translation units compiled in different configurations (other key lists,
   another reclamation mode, another DK_EXPLAIN_MAX_ARGS): the mismatch is
   detected and explained by its first differing item, never silently
   mis-indexed; a signature is compared by its text, whatever its address. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

dk_status other_unit_config_check(void);
dk_status other_unit_register(dk_registry *r);
dk_status setting_unit_config_check_epochs(void);
dk_status setting_unit_register_epochs(dk_registry *r);
dk_status setting_unit_config_check_explain(void);

static int cpu_kernel(int x) { return x; }

static void test_same_configuration_passes(void **state) {
    (void)state;
    assert_int_equal(dk_config_check(), DK_OK);
    assert_string_equal(dk_config_signature(), DK_CONFIG_SIGNATURE);
}

/* Other key lists: the first item that differs is named with both values. */
static void test_other_lists_detected(void **state) {
    (void)state;
    assert_int_equal(other_unit_config_check(), DK_ERR_CONFIG_MISMATCH);
    assert_non_null(strstr(dk_last_error(), "another configuration"));
    /* custom_config.h's CPU has no autocast layer, the default lists' has */
    assert_non_null(strstr(dk_last_error(),
                           "item 1 differs: caller 'backend CPU 1 Undefined 0', "
                           "implementation 'backend CPU 1 AutocastCPU 0'"));
    assert_non_null(strstr(dk_status_message(DK_ERR_CONFIG_MISMATCH), "configuration"));
}

/* The same lists in another reclamation mode: the last items differ, and
   the message names that one (not a cut prefix of two equal lists). */
static void test_other_reclamation_mode_named(void **state) {
    (void)state;
    assert_int_equal(setting_unit_config_check_epochs(), DK_ERR_CONFIG_MISMATCH);
    assert_non_null(strstr(dk_last_error(),
                           "caller 'reclamation call epochs', implementation 'reclamation quiescent reclaim'"));
}

/* DK_EXPLAIN_MAX_ARGS changes dk_explanation's size: it is in the signature. */
static void test_explain_max_args_in_signature(void **state) {
    (void)state;
    assert_non_null(strstr(DK_CONFIG_SIGNATURE, "DK_EXPLAIN_MAX_ARGS 16"));
    assert_int_equal(setting_unit_config_check_explain(), DK_ERR_CONFIG_MISMATCH);
    assert_non_null(strstr(dk_last_error(),
                           "caller 'DK_EXPLAIN_MAX_ARGS 4', implementation 'DK_EXPLAIN_MAX_ARGS 16'"));
}

/* Detected at the first registration, before any slot is indexed; the
   registry is left as it was. */
static void test_registration_from_other_configurations_refused(void **state) {
    dk_registry *r;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(other_unit_register(r), DK_ERR_CONFIG_MISMATCH);
    assert_non_null(strstr(dk_last_error(), "another configuration"));
    assert_int_equal(setting_unit_register_epochs(r), DK_ERR_CONFIG_MISMATCH);
    assert_null(dk_op_lookup(r, "mismatch::op"));
    dk_registry_destroy(r);
}

/* A signature is its text. One buffer, as a plugin loaded where an earlier
   one was or a foreign caller reusing its buffer gives it: accepted with
   the right text, then refused at the same address with a wrong one, at
   every registration (no address is remembered). */
static void test_same_address_other_text_refused(void **state) {
    dk_registry *r;
    dk_registration *h;
    dk_status s;
    size_t n = strlen(dk_config_signature());
    char *buf = (char *)malloc(n + 1), *p;
    (void)state;
    assert_non_null(buf);
    memcpy(buf, dk_config_signature(), n + 1);
    assert_int_equal(dk__registry_create(NULL, &r, buf), DK_OK);
    assert_int_equal(dk__impl(r, "buf::a", DK_CPU, dk_unboxed(DK_FN(cpu_kernel), NULL), "f.c", 1, &h, buf), DK_OK);
    /* the same buffer now says reclamation by call epochs */
    p = strstr(buf, "reclamation quiescent reclaim");
    assert_non_null(p);
    memcpy(p, "reclamation call epochs;", strlen("reclamation call epochs;"));
    memmove(p + strlen("reclamation call epochs;"), p + strlen("reclamation quiescent reclaim;"),
            strlen(p + strlen("reclamation quiescent reclaim;")) + 1);
    s = dk__impl(r, "buf::b", DK_CPU, dk_unboxed(DK_FN(cpu_kernel), NULL), "f.c", 2, &h, buf);
    assert_int_equal(s, DK_ERR_CONFIG_MISMATCH);
    assert_non_null(strstr(dk_last_error(), "caller 'reclamation call epochs'"));
    assert_null(dk_op_lookup(r, "buf::b"));
    assert_int_equal(dk__def(r, "buf::c(Tensor a) -> Tensor", NULL, "f.c", 3, &h, buf), DK_ERR_CONFIG_MISMATCH);
    assert_null(dk_op_lookup(r, "buf::c"));
    /* and accepted again once the text is right */
    memcpy(buf, dk_config_signature(), n + 1);
    assert_int_equal(dk__impl(r, "buf::b", DK_CPU, dk_unboxed(DK_FN(cpu_kernel), NULL), "f.c", 4, &h, buf), DK_OK);
    /* a caller's list shorter than the implementation's: the missing item is named */
    buf[strlen("backend CPU 1 AutocastCPU 0;")] = '\0';
    assert_int_equal(dk__config_check(buf), DK_ERR_CONFIG_MISMATCH);
    assert_non_null(strstr(dk_last_error(),
                           "item 2 differs: caller '(none: the caller's list ends here)', "
                           "implementation 'backend CUDA 1 AutocastCUDA 0'"));
    assert_int_equal(dk__config_check(NULL), DK_ERR_NULL);
    free(buf);
    dk_registry_destroy(r);
}

/* A unit that only calls (config_mismatch_caller.c) as a shared object:
   built in this configuration it loads and its typed call runs our kernel;
   built with other key lists it is refused at load time, naming a
   configuration-named symbol, before any of its code runs (the Makefile's
   rule checks that the same unit does not link into a program). */
static const char *self_path;

typedef struct cm_value { dk_keyset ks; int v; } cm_value;
DK_DECLARE_OP(cm_twice, int, a.ks, (cm_value, a))
static int twice_cpu(const dk_kernel *k, dk_keyset ks, cm_value a) { (void)k; (void)ks; return 2 * a.v; }

static void test_calling_unit_of_other_lists_refused_at_load(void **state) {
    char path[4096];
    void *so;
    int (*call)(const dk_operator *, int);
    const char *err;
    dk_registry *r;
    dk_registration *h;
    const dk_operator *op;
    int i;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(DK_IMPL_TYPED(cm_twice, r, "cm::twice", DK_CPU, twice_cpu, NULL, &h), DK_OK);
    assert_non_null(op = dk_op_lookup(r, "cm::twice"));

    snprintf(path, sizeof path, "%s-good.so", self_path);
    so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!so) fail_msg("%s", dlerror());
    *(void **)(void *)&call = dlsym(so, "caller_unit_call");
    assert_non_null(call);
    assert_int_equal(call(op, 21), 42);
    dlclose(so);

    for (i = 0; i < 2; i++) {   /* other key lists; this configuration with an older private ABI */
        snprintf(path, sizeof path, "%s-%s.so", self_path, i ? "old" : "bad");
        so = dlopen(path, RTLD_LAZY | RTLD_LOCAL); /* even lazy binding: data and TLS are bound at load */
        err = dlerror();
        if (so) dlclose(so);
        assert_null(so);
        assert_non_null(err);
        if (!strstr(err, "undefined symbol: dk__tls_c") && !strstr(err, "undefined symbol: dk__trace_hook_c"))
            fail_msg("unexpected dlopen error: %s", err);
    }
    dk_registry_destroy(r);
}

/* A plugin whose library block was refused still loads (dlopen cannot
   know): the host asks the registry how many blocks ran and failed. */
static void test_host_sees_a_failed_library_block(void **state) {
    char path[4096];
    void *so;
    dk_registry *r = dk_registry_default();
    unsigned long run0, failed0, run, failed;
    (void)state;
    assert_non_null(r);
    assert_int_equal(dk_library_blocks(r, &run0, &failed0), DK_OK);

    snprintf(path, sizeof path, "%s-block-good.so", self_path);
    so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!so) fail_msg("%s", dlerror());
    assert_int_equal(dk_library_blocks(r, &run, &failed), DK_OK);
    assert_int_equal(run, run0 + 1);
    assert_int_equal(failed, failed0);
    assert_true(dk_op_has_kernel_for_key(dk_op_lookup(r, "cmblock::inc"), DK_CPU));
    dlclose(so);
    assert_false(dk_op_has_kernel_for_key(dk_op_lookup(r, "cmblock::inc"), DK_CPU));

    snprintf(path, sizeof path, "%s-block-bad.so", self_path);
    so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!so) fail_msg("%s", dlerror()); /* it loads: only its block is refused */
    assert_int_equal(dk_library_blocks(r, &run, &failed), DK_OK);
    assert_int_equal(run, run0 + 2);
    assert_int_equal(failed, failed0 + 1);
    assert_non_null(strstr(dk_last_error(), "caller 'reclamation call epochs'"));
    assert_false(dk_op_has_kernel_for_key(dk_op_lookup(r, "cmblock::inc"), DK_CPU));
    dlclose(so);

    assert_int_equal(dk_library_blocks(NULL, &run, &failed), DK_ERR_NULL);
    assert_int_equal(dk_library_blocks(r, NULL, &failed), DK_ERR_NULL);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_configuration_passes),
        cmocka_unit_test(test_other_lists_detected),
        cmocka_unit_test(test_other_reclamation_mode_named),
        cmocka_unit_test(test_explain_max_args_in_signature),
        cmocka_unit_test(test_registration_from_other_configurations_refused),
        cmocka_unit_test(test_same_address_other_text_refused),
        cmocka_unit_test(test_calling_unit_of_other_lists_refused_at_load),
        cmocka_unit_test(test_host_sees_a_failed_library_block),
    };
    (void)argc;
    self_path = argv[0];
    return cmocka_run_group_tests_name("configuration mismatch between translation units", tests, NULL, NULL);
}
