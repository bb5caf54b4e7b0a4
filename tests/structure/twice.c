/* The header included twice in one translation unit (declarations only). */
#include "dispatch.h"
#include "dispatch.h"

int main(void);
int main(void) {
    const char *name = dk_key_name(dk_ks_highest_key(dk_ks_from_key(DK_AutogradCPU)));
    return (name && dk_key_slot(DK_CPU) == 1 && dk_version_number() == DK_VERSION_NUMBER) ? 0 : 1;
}
