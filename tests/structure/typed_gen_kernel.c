/* gen/'s <op>_impl takes only the operator's kernel type: built with
   -DWRONG_KERNEL this must NOT compile (structure.sh checks both ways). */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

typedef struct tensor { dk_keyset ks; double v; } tensor;
#define DKGEN_TENSOR tensor *
#define DKGEN_TENSOR_KEYSET(t) ((t)->ks)
#include "sample_ops.h"

static tensor *neg_cpu(const dk_kernel *k, dk_keyset ks, tensor *self) { (void)k; (void)ks; self->v = -self->v; return self; }
#ifdef WRONG_KERNEL
static tensor *neg_wrong(tensor *self) { self->v = -self->v; return self; }   /* no (kernel, ks) */
#define KERNEL neg_wrong
#else
#define KERNEL neg_cpu
#endif

int main(void) {
    dk_registry *r;
    dk_registration *h;
    const dk_operator *op = NULL;
    tensor x = { { 0 }, 2 };
    if (dk_registry_create(NULL, &r) != DK_OK || sample_neg_def(r, &h) != DK_OK) return 1;
    if (sample_neg_impl(r, DK_CPU, KERNEL, NULL, &h) != DK_OK || sample_neg_bind(r, &op) != DK_OK) return 2;
    x.ks = dk_ks_from_key(DK_CPU);
    sample_neg_call(op, &x);
    dk_registry_destroy(r);
    return x.v == -2 ? 0 : 3;
}
