/* plugin.c - minitensor_plugin.so: a second backend, loaded at run time.

   This is what an out-of-tree backend looks like: a shared object that
   includes minitensor.h, writes kernels for its backend's key and registers
   them in a DK_LIBRARY_IMPL block. The block runs as a constructor when the
   host dlopen()s the object, into the default registry, which lives in the
   host executable (the plugin is linked against nothing: every dk_* and mt_*
   function it calls is the host's).

   Why PrivateUse1: it is the backend c10 reserves for backends that live
   outside the library, with keys of its own on every per-backend layer
   (AutogradPrivateUse1, ...). A tensor on the plugin's backend has the keys
   {PrivateUse1, ADInplaceOrView, AutogradPrivateUse1}, so:
     - its autograd key is covered by the host's kernels at the Autograd
       alias key: gradients work without a line of autograd code here;
     - tracing is a fallback for every operator: it works too;
     - mt::relu has a CompositeExplicitAutograd kernel, which fills every
       backend's slot: the plugin need not (and does not) implement it.

   The plugin's "device memory" is ordinary memory: each kernel computes like
   the CPU one and prints a line, so the demo shows which kernel ran. */
#include "minitensor.h"

#include <stdio.h>

static mt_tensor *add_pu1(const dk_kernel *k, dk_keyset ks, mt_tensor *a, mt_tensor *b) {
    mt_tensor *out = mt_empty_like(a);
    int i;
    (void)k; (void)ks;
    printf("  plugin: mt::add\n");
    mt_check(mt_same_shape(a, b), "add: shapes differ");
    for (i = 0; i < mt_numel(a); i++) out->data[i] = a->data[i] + b->data[i];
    return out;
}

static mt_tensor *mul_pu1(const dk_kernel *k, dk_keyset ks, mt_tensor *a, mt_tensor *b) {
    mt_tensor *out = mt_empty_like(a);
    int i;
    (void)k; (void)ks;
    printf("  plugin: mt::mul\n");
    mt_check(mt_same_shape(a, b), "mul: shapes differ");
    for (i = 0; i < mt_numel(a); i++) out->data[i] = a->data[i] * b->data[i];
    return out;
}

static mt_tensor *sum_pu1(const dk_kernel *k, dk_keyset ks, mt_tensor *a) {
    mt_tensor *out = mt_new(mt_backend(a), 1, 1, 1);
    int i;
    (void)k; (void)ks;
    printf("  plugin: mt::sum\n");
    for (i = 0; i < mt_numel(a); i++) out->data[0] += a->data[i];
    return out;
}

static mt_tensor *matmul_pu1(const dk_kernel *k, dk_keyset ks, mt_tensor *a, mt_tensor *b) {
    mt_tensor *out = mt_new(mt_backend(a), 2, a->rows, b->cols);
    int i, j, n;
    (void)k; (void)ks;
    printf("  plugin: mt::matmul\n");
    mt_check(a->ndim == 2 && b->ndim == 2 && a->cols == b->rows, "matmul: shapes do not fit");
    for (i = 0; i < a->rows; i++)
        for (j = 0; j < b->cols; j++)
            for (n = 0; n < a->cols; n++) out->data[i * b->cols + j] += a->data[i * a->cols + n] * b->data[n * b->cols + j];
    return out;
}

/* Runs when the host dlopen()s this object; when the host dlclose()s it,
   the block's library is closed before the code is unmapped, so every
   PrivateUse1 slot gets back what it had before the plugin was loaded. The names are relative to the
   block's namespace (mt::add); DK_Undefined means the block's own key. A
   failed registration inside a block goes to the registry's log hook
   (stderr by default), since a constructor has no caller to return it to. */
DK_LIBRARY_IMPL(mt, PrivateUse1, m) {
    mt_add_library_impl(m, DK_Undefined, add_pu1, NULL);
    mt_mul_library_impl(m, DK_Undefined, mul_pu1, NULL);
    mt_sum_library_impl(m, DK_Undefined, sum_pu1, NULL);
    mt_matmul_library_impl(m, DK_Undefined, matmul_pu1, NULL);
}

