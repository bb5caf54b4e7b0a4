/* A backend plugin: one library block, registered when the object is loaded
   into the host, removed when it is unloaded. No DISPATCH_IMPLEMENTATION:
   the host's (built with -rdynamic) is used. */
#include "arr.h"

int npu_plugin_version = 1;   /* exported: the host's dlsym finds an address inside the plugin */

static double scale_npu(const dk_kernel *k, dk_keyset ks, arr x) {
    (void)k; (void)ks;
    return 10 * x.v;
}

DK_LIBRARY_IMPL(arr, PrivateUse1, m) {
    dk_library_impl(m, "scale", DK_Undefined, dk_unboxed(DK_FN(scale_npu), NULL));
}
