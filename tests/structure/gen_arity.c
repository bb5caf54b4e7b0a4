/* A generated <op>_calld given a count of arguments it does not take: with
   -DWRONG_ARITY=n (n arguments, the operator included) this must NOT
   compile, and the error names the operator, the counts it takes and n
   (structure.sh checks both ways). Also: the NULL-safe DKGEN_TENSOR_KEYSET
   that the generated header's comment shows lets a call pass NULL for a
   Tensor argument. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

typedef struct tensor { dk_keyset ks; double v; } tensor;
#define DKGEN_TENSOR tensor *
#define DKGEN_TENSOR_KEYSET(t) ((t) ? (t)->ks : DK_KS_EMPTY)
#include "sample_ops.h"

static tensor *add_cpu(const dk_kernel *k, dk_keyset ks, tensor *self, tensor *other, double alpha) {
    (void)k; (void)ks;
    self->v += other ? alpha * other->v : 100;
    return self;
}

int main(void) {
    dk_registry *r;
    dk_registration *h;
    const dk_operator *add = NULL;
    tensor x = { { 0 }, 2 }, y = { { 0 }, 1 };
    if (dk_registry_create(NULL, &r) != DK_OK || sample_add_Tensor_def(r, &h) != DK_OK ||
        sample_add_Tensor_impl(r, DK_CPU, add_cpu, NULL, &h) != DK_OK || sample_add_Tensor_bind(r, &add) != DK_OK)
        return 1;
    x.ks = y.ks = dk_ks_from_key(DK_CPU);
#if WRONG_ARITY == 2
    sample_add_Tensor_calld(add, &x);
#elif WRONG_ARITY == 5
    sample_add_Tensor_calld(add, &x, &y, 1.0, 2.0);
#else
    sample_add_Tensor_calld(add, &x, &y);         /* alpha = 1: 2 + 1 */
    sample_add_Tensor_calld(add, &x, &y, 2.0);    /* 3 + 2 */
    sample_add_Tensor_call(add, &x, NULL, 1.0);   /* dispatched on x's keys; the kernel sees the NULL: + 100 */
#endif
    dk_registry_destroy(r);
    return x.v == 105 ? 0 : 2;
}
