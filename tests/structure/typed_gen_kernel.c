/* gen/'s <op>_impl and <op>_library_impl take only the operator's kernel
   type, with any compiler flags: built with -DWRONG_KERNEL both
   registrations below are wrong (one kernel lacks (kernel, ks), the other
   takes a float where the operator passes a double) and the unit must NOT
   compile, as C99, C11 or C++ (structure.sh checks both ways). */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

typedef struct tensor { dk_keyset ks; double v; } tensor;
#define DKGEN_TENSOR tensor *
#define DKGEN_TENSOR_KEYSET(t) ((t)->ks)
#include "sample_ops.h"

static tensor *neg_cpu(const dk_kernel *k, dk_keyset ks, tensor *self) { (void)k; (void)ks; self->v = -self->v; return self; }
static tensor *add_cpu(const dk_kernel *k, dk_keyset ks, tensor *self, tensor *other, double alpha) {
    (void)k; (void)ks;
    self->v += alpha * other->v;
    return self;
}
#ifdef WRONG_KERNEL
static tensor *neg_wrong(tensor *self) { self->v = -self->v; return self; }   /* no (kernel, ks) */
static tensor *add_wrong(const dk_kernel *k, dk_keyset ks, tensor *self, tensor *other, float alpha) { /* float */
    (void)k; (void)ks;
    self->v += alpha * other->v;
    return self;
}
#define NEG_KERNEL neg_wrong
#define ADD_KERNEL add_wrong
#else
#define NEG_KERNEL neg_cpu
#define ADD_KERNEL add_cpu
#endif

static void block(dk_library *lib) { sample_add_Tensor_library_impl(lib, DK_CPU, ADD_KERNEL, NULL); }

int main(void) {
    dk_registry *r;
    dk_registration *h;
    dk_library *lib;
    const dk_operator *op = NULL, *add = NULL;
    tensor x = { { 0 }, 2 }, y = { { 0 }, 1 };
    if (dk_registry_create(NULL, &r) != DK_OK || sample_neg_def(r, &h) != DK_OK || sample_add_Tensor_def(r, &h) != DK_OK)
        return 1;
    if (sample_neg_impl(r, DK_CPU, NEG_KERNEL, NULL, &h) != DK_OK || sample_neg_bind(r, &op) != DK_OK) return 2;
    if (dk_library_run(r, DK_LIBRARY_KIND_IMPL, "sample", DK_CPU, block, &lib) != DK_OK ||
        sample_add_Tensor_bind(r, &add) != DK_OK)
        return 3;
    x.ks = y.ks = dk_ks_from_key(DK_CPU);
    sample_neg_call(op, &x);                      /* -2 */
    sample_add_Tensor_call(add, &x, &y, 3.0);     /* -2 + 3 * 1 */
    dk_registry_destroy(r);
    return x.v == 1 ? 0 : 4;
}
