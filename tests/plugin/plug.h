/* What the hosts and plugins share: the tensor and the operator's signature;
   with PLUG_HOST, the hosts' checks and helpers. */
#ifndef PLUG_H
#define PLUG_H
#include "dispatch.h"

typedef struct plug_tensor { dk_keyset ks; int v; } plug_tensor;
DK_DECLARE_OP(plug_add, int, a.ks, (plug_tensor, a))

enum { PLUG_PLUGIN_OFFSET = 1000 };

#ifdef PLUG_HOST   /* what the hosts (host.c, unload_host.c, two_blocks_host.c) share */
#include <stdio.h>
#include <stdlib.h>
#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) { fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); exit(1); } \
    } while (0)
/* the host's own CPU kernel of plug::add */
static int add_cpu(const dk_kernel *k, dk_keyset ks, plug_tensor a) { (void)k; (void)ks; return a.v + 1; }
static DK__UNUSED plug_tensor tensor_at(dk_key k, int v) {
    plug_tensor t;
    t.ks = dk_ks_from_key(k);
    t.v = v;
    return t;
}
#endif
#endif
