/* A plugin whose object registers through two library blocks: a
   PrivateUse1 kernel of the host's plug::add (DK_LIBRARY_IMPL) and an
   operator of its own, plug2::mul, defined with a kernel (DK_LIBRARY).
   two_blocks_host.c checks that unloading the object removes what both
   blocks registered. */
#include "dispatch.h"
#include "plug.h"

/* an address inside this object, for the host's dk_library_unload */
int plug_marker = 2;

static int add_plugin(const dk_kernel *k, dk_keyset ks, plug_tensor a) {
    (void)k; (void)ks;
    return a.v + PLUG_PLUGIN_OFFSET;
}
static int mul_plugin(const dk_kernel *k, dk_keyset ks, plug_tensor a) {
    (void)k; (void)ks;
    return a.v * 2;
}

DK_LIBRARY_IMPL(plug, PrivateUse1, m) {
    dk_library_impl(m, "add", DK_Undefined, dk_unboxed(DK_FN(add_plugin), NULL));
}

DK_LIBRARY(plug2, m) {
    dk_library_def(m, "mul(Tensor a) -> Tensor");
    dk_library_impl(m, "mul", DK_CPU, dk_unboxed(DK_FN(mul_plugin), NULL));
}
