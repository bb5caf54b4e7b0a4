/* Unloading an object that registered through more than one library block
   (plugin_two.c: a DK_LIBRARY_IMPL and a DK_LIBRARY block). Each cycle
   loads the plugin, checks that both blocks ran and registered, unloads it
   (even cycles: dk_library_unload then dlclose; odd cycles: dlclose alone,
   the blocks' destructors) and checks that nothing either block registered
   is left: the registrations themselves (dk_op_has_kernel_for_key walks
   them, not the tables), the def (dk_op_lookup_defined), and what calls
   run. One dk_library_unload closes both blocks (before dlclose), and a
   second one of the same object finds nothing. The
   outcomes are counted; every one must be the expected one.

   usage: two_blocks_host path/to/plugin_two.so */
#define _POSIX_C_SOURCE 200809L
#define DISPATCH_IMPLEMENTATION
#define PLUG_HOST
#include "plug.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LOADS
#define LOADS 50
#endif


static void quiet(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    dk_call_error_report(op, ks, s, m, ud);
}


int main(int argc, char **argv) {
    dk_registry *r = dk_registry_default();
    dk_registration *def, *cpu;
    const dk_operator *add;
    dk_operator *mul;
    int i, unloaded_whole = 0, unload_then_nothing = 0;
    CHECK(argc == 2);
    CHECK(dk_registry_set_call_error(r, quiet, NULL) == DK_OK);
    CHECK(dk_def(r, "plug::add(Tensor a) -> Tensor", &def) == DK_OK);
    CHECK(dk_impl(r, "plug::add", DK_CPU, dk_unboxed(DK_FN(add_cpu), NULL), &cpu) == DK_OK);
    CHECK(dk_thread_online() == DK_OK);
    add = dk_op_lookup(r, "plug::add");
    for (i = 0; i < LOADS; i++) {
        unsigned long run0, failed0, run, failed;
        void *h, *marker;
        CHECK(dk_library_blocks(r, &run0, &failed0) == DK_OK);
        h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
        CHECK(dk_library_blocks(r, &run, &failed) == DK_OK);
        CHECK(run == run0 + 2 && failed == failed0);   /* both blocks ran and registered */
        CHECK(dk_op_has_kernel_for_key(add, DK_PrivateUse1));
        CHECK(dk_op_lookup_defined(r, "plug2::mul", &mul) == DK_OK);
        CHECK(dk_op_has_kernel_for_key(mul, DK_CPU));
        CHECK(plug_add_call(add, tensor_at(DK_PrivateUse1, 5)) == 5 + PLUG_PLUGIN_OFFSET);
        CHECK(plug_add_call(mul, tensor_at(DK_CPU, 5)) == 10);
        marker = dlsym(h, "plug_marker");
        CHECK(marker != NULL);
        if (i % 2 == 0) {
            CHECK(dk_library_unload(marker) == DK_OK);
            /* before dlclose: both blocks closed by the one call, the second finds nothing */
            if (!dk_op_has_kernel_for_key(add, DK_PrivateUse1) && dk_op_lookup(r, "plug2::mul") == NULL &&
                dk_library_unload(marker) == DK_ERR_NOT_FOUND)
                unload_then_nothing++;
        }
        CHECK(dlclose(h) == 0);
        CHECK(dk_registry_reclaim(r) == DK_OK);
        /* nothing of either block is left */
        if (!dk_op_has_kernel_for_key(add, DK_PrivateUse1) && dk_op_lookup(r, "plug2::mul") == NULL &&
            dk_op_lookup_defined(r, "plug2::mul", &mul) == DK_ERR_NOT_FOUND &&
            plug_add_call(add, tensor_at(DK_PrivateUse1, 5)) == 0 && dk_last_call_status() == DK_ERR_NO_KERNEL &&
            plug_add_call(add, tensor_at(DK_CPU, 5)) == 6)
            unloaded_whole++;
    }
    printf("%d loads of a two-block plugin: %d unloads removed both blocks' registrations, %d "
           "dk_library_unload calls closed both blocks (a second one found nothing)\n", LOADS, unloaded_whole, unload_then_nothing);
    CHECK(unloaded_whole == LOADS);
    CHECK(unload_then_nothing == (LOADS + 1) / 2);
    return 0;
}
