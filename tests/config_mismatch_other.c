/* Compiled with DK_CONFIG_HEADER="custom_config.h" and linked with an
   implementation built from the default lists: a configuration mismatch. */
#include "dispatch.h"

dk_status other_unit_config_check(void);
dk_status other_unit_config_check(void) { return dk_config_check(); }
