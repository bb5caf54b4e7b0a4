/* Compiles a dkgen header and, run, defs and binds every operator of it
   through the generated helpers (DKGEN_FORALL_<FILE>).

   cc -I. -Igen/tests -DDKGEN_HEADER='"ops.h"' -DDKGEN_FORALL=DKGEN_FORALL_OPS gen/tests/driver.c

   The tensor type is called `tensor` on purpose: schemas name arguments
   `tensor` too. Run with "all": every def and bind must succeed; without,
   the counts are printed (fuzzed files repeat operator names). */
#ifndef DRIVER_NO_IMPLEMENTATION
#define DISPATCH_IMPLEMENTATION
#endif
#include "dispatch.h"

#include <stdio.h>
#include <string.h>

typedef struct tensor { dk_keyset ks; } tensor;
#define DKGEN_TENSOR tensor *
#define DKGEN_TENSOR_KEYSET(t) ((t)->ks)
#include DKGEN_HEADER
#include DKGEN_HEADER /* the include guard */

static int total, defined, bound;

#define DRIVER_DEF(op)                                                                   \
    total++;                                                                             \
    if (op##_def(r, &h) == DK_OK) defined++;                                             \
    else if (all) printf("def %s: %s\n", #op, dk_last_error());
#define DRIVER_BIND(op)                                                                  \
    if (op##_bind(r, &bound_op) == DK_OK) bound++;                                       \
    else if (all) printf("bind %s: %s\n", #op, dk_last_error());

int main(int argc, char **argv) {
    dk_registry_desc d;
    dk_registry *r;
    dk_registration *h;
    const dk_operator *bound_op;
    int all = argc > 1 && strcmp(argv[1], "all") == 0;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = dkgen_tensor_keyset;
    if (dk_registry_create(&d, &r) != DK_OK) return 1;
    (void)h; (void)bound_op;   /* a header may have no operator */
    DKGEN_FORALL(DRIVER_DEF)
    DKGEN_FORALL(DRIVER_BIND)
    printf("%d operators: %d defined, %d bound\n", total, defined, bound);
    dk_registry_destroy(r);
    return all && (defined != total || bound != total);
}
