/* DK_DECLARE_OP's typed registration rejects a kernel of the wrong type at
   compile time; built with -DWRONG_KERNEL it must NOT compile (structure.sh
   checks both ways). */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

typedef struct tensor { dk_keyset ks; float v; } tensor;
DK_DECLARE_OP(neg, float, x.ks, (tensor, x))

static float neg_cpu(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return -x.v; }
#ifdef WRONG_KERNEL
/* forgot the (kernel, ks) parameters: DK_FN would take it silently */
static float neg_wrong(tensor x) { return -x.v; }
#define KERNEL neg_wrong
#else
#define KERNEL neg_cpu
#endif

int main(void) {
    dk_registry *r;
    dk_registration *h;
    tensor x;
    float y;
    if (dk_registry_create(NULL, &r) != DK_OK) return 1;
    if (DK_IMPL_TYPED(neg, r, "my::neg", DK_CPU, KERNEL, NULL, &h) != DK_OK) return 2;
    x.ks = dk_ks_from_key(DK_CPU);
    x.v = 2;
    y = neg_call(dk_op_lookup(r, "my::neg"), x);
    dk_registry_destroy(r);
    return y == -2 ? 0 : 3;
}
