/* A consumer built by `make install-test` against an installed
   configuration other than the default (key lists of tests/custom_config.h
   and DK_CALL_EPOCHS): it must be compiled with the flags the installed
   pkg-config / CMake files give. It checks the configuration, registers a
   kernel, makes a typed call and prints its second backend's name. Built
   with CONSUMER_IMPLEMENTATION it holds the implementation (header only);
   otherwise it links the installed library. */
#ifdef CONSUMER_IMPLEMENTATION
#define DISPATCH_IMPLEMENTATION
#endif
#include "dispatch.h"
#include <stdio.h>

typedef struct value { dk_keyset ks; int v; } value;
DK_DECLARE_OP(twice, int, a.ks, (value, a))

static int twice_cpu(const dk_kernel *k, dk_keyset ks, value a) { (void)k; (void)ks; return 2 * a.v; }

int main(void) {
    dk_registry *r;
    dk_registration *h;
    value a;
    int result;
    if (dk_config_check() != DK_OK) { printf("configuration: %s\n", dk_last_error()); return 1; }
    if (dk_registry_create(NULL, &r) != DK_OK ||
        DK_IMPL_TYPED(twice, r, "consumer::twice", DK_CPU, twice_cpu, NULL, &h) != DK_OK) {
        printf("registration: %s\n", dk_last_error());
        return 1;
    }
    a.ks = dk_ks_from_key(DK_CPU);
    a.v = 21;
    result = twice_call(dk_op_lookup(r, "consumer::twice"), a);
    printf("twice(21) = %d; backends: %d, the second %s\n", result, (int)DK_NUM_BACKENDS,
           dk_backend_name((dk_backend)2));
    dk_registry_destroy(r);
    return result == 42 ? 0 : 1;
}
