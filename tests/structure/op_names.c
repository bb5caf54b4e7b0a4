/* DK_DECLARE_OP's helpers stay out of the user's way: kernels named as the
   helpers of 0.x were (neg_slow, neg_invoke, neg_dispatch_invoke) and
   operators named as the header's own functions (call: dk__call_slow) all
   compile, register and run. make structure builds and runs it. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

typedef struct tensor { dk_keyset ks; float v; } tensor;
DK_DECLARE_OP(neg, float, x.ks, (tensor, x))
DK_DECLARE_OP(call, float, x.ks, (tensor, x))
DK_DECLARE_OP(lookup, float, x.ks, (tensor, x))

static float neg_slow(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return -x.v; }
static float neg_invoke(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return 10 * x.v; }
static float neg_dispatch_invoke(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return 100 * x.v; }
static float call_cpu(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return x.v + 1; }
static float lookup_cpu(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return x.v + 2; }

int main(void) {
    dk_registry *r;
    dk_registration *h;
    tensor x;
    int ok;
    if (dk_registry_create(NULL, &r) != DK_OK) return 1;
    if (DK_IMPL_TYPED(neg, r, "my::neg", DK_CPU, neg_slow, NULL, &h) != DK_OK ||
        DK_IMPL_TYPED(neg, r, "my::neg", DK_CUDA, neg_invoke, NULL, &h) != DK_OK ||
        DK_IMPL_TYPED(neg, r, "my::neg", DK_XLA, neg_dispatch_invoke, NULL, &h) != DK_OK ||
        DK_IMPL_TYPED(call, r, "my::call", DK_CPU, call_cpu, NULL, &h) != DK_OK ||
        DK_IMPL_TYPED(lookup, r, "my::lookup", DK_CPU, lookup_cpu, NULL, &h) != DK_OK)
        return 2;
    x.v = 2;
    x.ks = dk_ks_from_key(DK_CPU);
    ok = neg_call(dk_op_lookup(r, "my::neg"), x) == -2 && call_call(dk_op_lookup(r, "my::call"), x) == 3 &&
         lookup_call(dk_op_lookup(r, "my::lookup"), x) == 4;
    x.ks = dk_ks_from_key(DK_CUDA);
    ok = ok && neg_call(dk_op_lookup(r, "my::neg"), x) == 20;
    x.ks = dk_ks_from_key(DK_XLA);
    ok = ok && neg_redispatch(dk_op_lookup(r, "my::neg"), x.ks, x) == 200;
    dk_registry_destroy(r);
    return ok ? 0 : 3;
}
