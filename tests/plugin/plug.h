/* What host.c and plugin.c share: the tensor and the operator's signature. */
#ifndef PLUG_H
#define PLUG_H
#include "dispatch.h"

typedef struct plug_tensor { dk_keyset ks; int v; } plug_tensor;
DK_DECLARE_OP(plug_add, int, a.ks, (plug_tensor, a))

enum { PLUG_PLUGIN_OFFSET = 1000 };
#endif
