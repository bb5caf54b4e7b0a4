/* Compiled with DK_CONFIG_HEADER="custom_config.h" and linked with an
   implementation built from the default lists: a configuration mismatch. */
#include "dispatch.h"

dk_status other_unit_config_check(void);
dk_status other_unit_config_check(void) { return dk_config_check(); }

static int other_cpu(int x) { return x; }

/* A registration from this unit into a registry made by the other one. */
dk_status other_unit_register(dk_registry *r);
dk_status other_unit_register(dk_registry *r) {
    dk_registration *h;
    return dk_impl(r, "mismatch::op", DK_CPU, dk_unboxed(DK_FN(other_cpu), NULL), &h);
}
