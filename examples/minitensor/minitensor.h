/* minitensor.h - a small tensor runtime built on dispatch.h.

   A tensor is a float array (1-D or 2-D) that carries a dk_keyset: the
   dispatch keys of its backend (CPU, or PrivateUse1 for the plugin's backend)
   and of that backend's autograd layer. Operators are declared by schemas in
   mt_ops.txt; gen/dkgen turned them into mt_ops.h, which gives every operator
   a typed call (mt_add_call), a typed redispatch (mt_add_redispatch), typed
   registration helpers (mt_add_def, mt_add_impl, mt_add_bind), the kernel
   type (mt_add_fn) and the boxing adapters that let a boxed layer (the
   tracer) sit in front of typed kernels.

   Who includes what:
     minitensor.c    the runtime: tensors, CPU kernels, autograd, tracing
     main.c          the demo: uses the runtime, loads and unloads the plugin
     plugin.c        minitensor_plugin.so: kernels for the PrivateUse1 backend
     dispatch_impl.c the dispatcher's implementation (DISPATCH_IMPLEMENTATION)
   The executable holds the runtime and the dispatcher and is linked with
   -rdynamic, so the plugin calls the host's mt_* functions and registers into
   the host's registry: there is exactly one registry in the process. */
#ifndef MINITENSOR_H
#define MINITENSOR_H

#include "dispatch.h"

typedef struct mt_tensor {
    dk_keyset keys;          /* the dispatch keys: backend + its autograd key */
    int ndim;                /* 1 or 2 */
    int rows, cols;          /* a 1-D tensor of n elements: rows = 1, cols = n */
    float *data;             /* rows * cols floats, row-major */
    int requires_grad;       /* gradients flow to it (a leaf that asked, or computed from one) */
    struct mt_tensor *grad;  /* after mt_backward: d(loss)/d(this), or NULL */
    struct mt_tensor *next;  /* the runtime's list of every tensor (mt_free_all) */
} mt_tensor;

/* Tell the generated bindings what a tensor handle is and where its keys are,
   then include them. */
#define DKGEN_TENSOR mt_tensor *
#define DKGEN_TENSOR_KEYSET(t) ((t)->keys)
#include "mt_ops.h"

/* ---- setup ---------------------------------------------------------------- */

/* Registers minitensor's operators, kernels and layers into the default
   registry (where DK_LIBRARY blocks register, hence where the plugin's kernels
   land) and returns it. Call once, first. */
dk_registry *mt_init(void);

/* ---- tensors: plain functions, nothing here dispatches --------------------- */

mt_tensor *mt_new(dk_backend backend, int ndim, int rows, int cols);   /* zeros */
mt_tensor *mt_vector(int n, const float *values);                      /* 1-D, on CPU */
mt_tensor *mt_matrix(int rows, int cols, const float *values);         /* 2-D, on CPU */
mt_tensor *mt_empty_like(const mt_tensor *t);           /* zeros, same shape and backend */
mt_tensor *mt_full_like(const mt_tensor *t, float value);
mt_tensor *mt_transpose(const mt_tensor *t);            /* a 2-D copy, rows and columns swapped */
mt_tensor *mt_to(const mt_tensor *t, dk_backend backend);  /* a copy on another backend */
mt_tensor *mt_requires_grad(mt_tensor *t);              /* marks a leaf; returns t */
dk_backend mt_backend(const mt_tensor *t);
int mt_numel(const mt_tensor *t);
int mt_same_shape(const mt_tensor *a, const mt_tensor *b);
void mt_print(const char *label, const mt_tensor *t);   /* "label = [[1, 2], [3, 4]]" */
void mt_describe(const mt_tensor *t, char *buf, size_t size);   /* "Tensor(2x2, CPU)" */
void mt_check(int ok, const char *what);                /* aborts with `what` unless ok */
void mt_free_all(void);                                 /* every tensor and the tape */

/* ---- operators: each call goes through the dispatcher ---------------------- */

mt_tensor *mt_add(mt_tensor *a, mt_tensor *b);
mt_tensor *mt_mul(mt_tensor *a, mt_tensor *b);
mt_tensor *mt_sum(mt_tensor *a);                        /* a 1-D tensor of one element */
mt_tensor *mt_relu(mt_tensor *a);
mt_tensor *mt_matmul(mt_tensor *a, mt_tensor *b);       /* 2-D x 2-D */
mt_tensor *mt_exp(mt_tensor *a);                        /* no derivative: backward reports it */

/* ---- autograd ---------------------------------------------------------------- */

void mt_backward(mt_tensor *loss);          /* fills .grad of every tensor that requires grad */
const char *mt_backward_error(void);        /* what the last mt_backward could not do, or NULL */
int mt_tape_length(void);
void mt_tape_print(void);                   /* "tape: matmul add relu" */
void mt_tape_clear(void);
/* no_grad: nothing records while the guard is pushed. */
dk_guard mt_no_grad_begin(void);
void mt_no_grad_end(dk_guard g);

/* ---- tracing ----------------------------------------------------------------- */

/* Every operator call prints one line while the guard is pushed. */
dk_guard mt_trace_begin(void);
void mt_trace_end(dk_guard g);

#endif /* MINITENSOR_H */
