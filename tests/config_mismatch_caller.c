/* A unit that only calls: it never registers, so it never passes its
   signature. Built in the program's configuration it links and calls;
   built with other key lists (DK_CONFIG_HEADER="custom_config.h") it refers
   to dk__tls and dk__trace_hook under its own configuration's names (Note
   [Configuration in a symbol name]): linked into a program it fails to
   link, as a shared object it fails to load. test_config_mismatch checks
   both (the Makefile's rule: the link; the test: dlopen). */
#include "dispatch.h"

typedef struct cm_value { dk_keyset ks; int v; } cm_value;
DK_DECLARE_OP(cm_twice, int, a.ks, (cm_value, a))

int caller_unit_call(const dk_operator *op, int v);
int caller_unit_call(const dk_operator *op, int v) {
    cm_value a;
    a.ks = dk_ks_from_key(DK_CPU); /* a key of either list */
    a.v = v;
    return cm_twice_call(op, a);
}
