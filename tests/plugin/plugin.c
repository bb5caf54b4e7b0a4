/* A backend plugin: one library block registering a PrivateUse1 kernel.
   Loaded and unloaded again and again by host.c while another thread calls
   the kernel. It carries no dispatcher of its own (the host's, -rdynamic). */
#include "dispatch.h"
#include "plug.h"

/* an address inside this object, for the host's dk_library_unload */
int plug_marker = 1;

static int add_plugin(const dk_kernel *k, dk_keyset ks, plug_tensor a) {
    volatile int spin;
    int i;
    (void)k; (void)ks;
    for (i = 0; i < 200; i++) spin = i; /* stay in this object's code for a while */
    (void)spin;
    return a.v + PLUG_PLUGIN_OFFSET;
}

DK_LIBRARY_IMPL(plug, PrivateUse1, m) {
    dk_library_impl(m, "add", DK_Undefined, dk_unboxed(DK_FN(add_plugin), NULL));
}
