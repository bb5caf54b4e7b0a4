/* What the host and its plugins share: the array handle and the operator's
   C signature (one declaration, compiled into both). */
#ifndef ARR_H
#define ARR_H
#include "dispatch.h"

typedef struct arr { dk_keyset ks; double v; } arr;   /* the keyset first: DK_DECLARE_OP reads x.ks */
DK_DECLARE_OP(arr_scale, double, x.ks, (arr, x))       /* arr_scale_call(op, x) */
#endif
