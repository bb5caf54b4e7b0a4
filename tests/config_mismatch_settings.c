/* Compiled with the default key lists but another setting (-DOTHER_SETTING
   gives the function names a suffix): DK_CALL_EPOCHS or DK_EXPLAIN_MAX_ARGS
   differs from the implementation's, a mismatch of configuration. */
#include "dispatch.h"

#define SETTING_FN(name) DK__XCAT(name, OTHER_SETTING)

dk_status SETTING_FN(setting_unit_config_check_)(void);
dk_status SETTING_FN(setting_unit_config_check_)(void) { return dk_config_check(); }

static int setting_cpu(int x) { return x; }

dk_status SETTING_FN(setting_unit_register_)(dk_registry *r);
dk_status SETTING_FN(setting_unit_register_)(dk_registry *r) {
    dk_registration *h;
    return dk_impl(r, "mismatch::op", DK_CPU, dk_unboxed(DK_FN(setting_cpu), NULL), &h);
}
