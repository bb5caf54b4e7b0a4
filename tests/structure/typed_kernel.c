/* DK_DECLARE_OP's typed registration rejects a kernel of the wrong type at
   compile time, with any compiler flags: built with -DWRONG_KERNEL both
   registrations below are wrong (one kernel lacks (kernel, ks), the other
   takes a float where the operator declares a double) and the unit must
   NOT compile, as C99, C11 or C++ (structure.sh checks both ways). */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

typedef struct tensor { dk_keyset ks; float v; } tensor;
DK_DECLARE_OP(neg, float, x.ks, (tensor, x))
DK_DECLARE_OP(scale, double, x.ks, (tensor, x), (double, a))

static float neg_cpu(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return -x.v; }
static double scale_cpu(const dk_kernel *k, dk_keyset ks, tensor x, double a) { (void)k; (void)ks; return x.v * a; }
#ifdef WRONG_KERNEL
/* forgot the (kernel, ks) parameters: DK_FN would take it silently */
static float neg_wrong(tensor x) { return -x.v; }
/* float where the operator passes a double: C converts the pointer with a
   warning only, and the call would read the wrong register */
static double scale_wrong(const dk_kernel *k, dk_keyset ks, tensor x, float a) { (void)k; (void)ks; return x.v * a; }
#define NEG_KERNEL neg_wrong
#define SCALE_KERNEL scale_wrong
#else
#define NEG_KERNEL neg_cpu
#define SCALE_KERNEL scale_cpu
#endif

static void block(dk_library *lib) { DK_LIBRARY_IMPL_TYPED(scale, lib, "scale", DK_CPU, SCALE_KERNEL, NULL); }

int main(void) {
    dk_registry *r;
    dk_registration *h;
    dk_library *lib;
    tensor x;
    float y;
    double z;
    if (dk_registry_create(NULL, &r) != DK_OK) return 1;
    if (DK_IMPL_TYPED(neg, r, "my::neg", DK_CPU, NEG_KERNEL, NULL, &h) != DK_OK) return 2;
    if (dk_library_run(r, DK_LIBRARY_KIND_FRAGMENT, "my", DK_Undefined, block, &lib) != DK_OK) return 3;
    x.ks = dk_ks_from_key(DK_CPU);
    x.v = 2;
    y = neg_call(dk_op_lookup(r, "my::neg"), x);
    z = scale_call(dk_op_lookup(r, "my::scale"), x, 3.0);
    dk_registry_destroy(r);
    return y == -2 && z == 6 ? 0 : 4;
}
