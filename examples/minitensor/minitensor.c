/* minitensor.c - the runtime: tensors, CPU kernels, the autograd layer, the
   tracing layer, and their registration (mt_init, at the end).

   How a call travels, e.g. mt_add(a, b) on two CPU tensors:

     mt_add_call(op.add, a, b)          keyset = a->keys | b->keys, plus the
                                        keys thread-local state includes
       [Tracer]   trace_fallback        only while tracing (TLS includes Tracer);
                                        boxed, redispatches below Tracer
       [AutogradCPU] add_autograd       redispatches below autograd, then
                                        records a tape node
       [CPU]      add_cpu               computes

   Each layer is an ordinary kernel registered at a dispatch key; none of
   them knows about the others. */
#include "minitensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==== 1. Tensors ==========================================================
   Plain C: making a tensor is not an operator call. Every tensor goes on
   one list so that mt_free_all() can release them (a real runtime counts
   references). */

static mt_tensor *all_tensors;

void mt_check(int ok, const char *what) {
    if (ok) return;
    fprintf(stderr, "minitensor: %s\n", what);
    abort();
}

mt_tensor *mt_new(dk_backend backend, int ndim, int rows, int cols) {
    size_t n = (size_t)rows * (size_t)cols;
    mt_tensor *t = (mt_tensor *)calloc(1, sizeof *t + n * sizeof(float));
    mt_check(t != NULL, "out of memory");
    mt_check(ndim == 2 || (ndim == 1 && rows == 1), "a tensor is 1-D (1 x n) or 2-D");
    /* The keys a tensor carries, as in PyTorch: its backend's key (CPU is
       the Dense functionality on the CPU backend bit) plus that backend's
       autograd-related keys (AutogradCPU and ADInplaceOrView). Every tensor
       carries its autograd key; the autograd kernel decides whether there
       is anything to record. */
    t->keys = dk_ks_or(dk_ks_from_key(dk_key_runtime(DK_Dense, backend)), dk_backend_autograd_related_set(backend));
    t->ndim = ndim;
    t->rows = rows;
    t->cols = cols;
    t->data = (float *)(t + 1);   /* the floats follow the struct in the same block */
    t->requires_grad = 0;
    t->grad = NULL;
    t->next = all_tensors;
    all_tensors = t;
    return t;
}

mt_tensor *mt_vector(int n, const float *values) {
    mt_tensor *t = mt_new(DK_CPUBit, 1, 1, n);
    memcpy(t->data, values, (size_t)n * sizeof(float));
    return t;
}

mt_tensor *mt_matrix(int rows, int cols, const float *values) {
    mt_tensor *t = mt_new(DK_CPUBit, 2, rows, cols);
    memcpy(t->data, values, (size_t)rows * (size_t)cols * sizeof(float));
    return t;
}

dk_backend mt_backend(const mt_tensor *t) { return dk_ks_highest_backend(t->keys); }
int mt_numel(const mt_tensor *t) { return t->rows * t->cols; }
int mt_same_shape(const mt_tensor *a, const mt_tensor *b) {
    return a->ndim == b->ndim && a->rows == b->rows && a->cols == b->cols;
}

mt_tensor *mt_empty_like(const mt_tensor *t) { return mt_new(mt_backend(t), t->ndim, t->rows, t->cols); }

mt_tensor *mt_full_like(const mt_tensor *t, float value) {
    mt_tensor *out = mt_empty_like(t);
    int i;
    for (i = 0; i < mt_numel(out); i++) out->data[i] = value;
    return out;
}

mt_tensor *mt_transpose(const mt_tensor *t) {
    mt_tensor *out = mt_new(mt_backend(t), 2, t->cols, t->rows);
    int i, j;
    mt_check(t->ndim == 2, "transpose: a 2-D tensor");
    for (i = 0; i < t->rows; i++)
        for (j = 0; j < t->cols; j++) out->data[j * t->rows + i] = t->data[i * t->cols + j];
    return out;
}

/* Moving to another backend is a copy with other keys: from then on every
   operator on the copy dispatches to that backend's kernels. */
mt_tensor *mt_to(const mt_tensor *t, dk_backend backend) {
    mt_tensor *out = mt_new(backend, t->ndim, t->rows, t->cols);
    memcpy(out->data, t->data, (size_t)mt_numel(t) * sizeof(float));
    return out;
}

mt_tensor *mt_requires_grad(mt_tensor *t) {
    t->requires_grad = 1;
    return t;
}

static const char *backend_name(const mt_tensor *t) { return dk_key_name(dk_key_runtime(DK_Dense, mt_backend(t))); }

void mt_describe(const mt_tensor *t, char *buf, size_t size) {
    if (t->ndim == 1) snprintf(buf, size, "Tensor(%d, %s)", t->cols, backend_name(t));
    else snprintf(buf, size, "Tensor(%dx%d, %s)", t->rows, t->cols, backend_name(t));
}

void mt_print(const char *label, const mt_tensor *t) {
    int i, j;
    printf("%s = %s", label, t->ndim == 2 ? "[" : "");
    for (i = 0; i < t->rows; i++) {
        printf("%s[", i ? ", " : "");
        for (j = 0; j < t->cols; j++) {
            double v = t->data[i * t->cols + j];
            printf("%s%g", j ? ", " : "", v == 0 ? 0.0 : v);   /* -0 prints as 0 */
        }
        printf("]");
    }
    printf("%s", t->ndim == 2 ? "]" : "");
    if (mt_backend(t) != DK_CPUBit) printf(" (%s)", backend_name(t));
    printf("\n");
}

/* ==== 2. Operators ==========================================================
   The public functions are one typed call each. op.add etc. are bound in
   mt_init (mt_add_bind checks the operator's C signature once, so the calls
   below cannot use a wrong one). */

static struct { const dk_operator *add, *mul, *sum, *relu, *matmul, *exp; } op;

mt_tensor *mt_add(mt_tensor *a, mt_tensor *b) { return mt_add_call(op.add, a, b); }
mt_tensor *mt_mul(mt_tensor *a, mt_tensor *b) { return mt_mul_call(op.mul, a, b); }
mt_tensor *mt_sum(mt_tensor *a) { return mt_sum_call(op.sum, a); }
mt_tensor *mt_relu(mt_tensor *a) { return mt_relu_call(op.relu, a); }
mt_tensor *mt_matmul(mt_tensor *a, mt_tensor *b) { return mt_matmul_call(op.matmul, a, b); }
mt_tensor *mt_exp(mt_tensor *a) { return mt_exp_call(op.exp, a); }

/* ==== 3. CPU kernels ========================================================
   A kernel is  R fn(const dk_kernel *k, dk_keyset ks, args...): the kernel's
   own record (k->user_data is what was given at registration) and the
   dispatch keyset it was called with (needed to redispatch; unused here). */

static mt_tensor *add_cpu(const dk_kernel *k, dk_keyset ks, mt_tensor *a, mt_tensor *b) {
    mt_tensor *out = mt_empty_like(a);
    int i;
    (void)k; (void)ks;
    mt_check(mt_same_shape(a, b), "add: shapes differ");
    for (i = 0; i < mt_numel(a); i++) out->data[i] = a->data[i] + b->data[i];
    return out;
}

static mt_tensor *mul_cpu(const dk_kernel *k, dk_keyset ks, mt_tensor *a, mt_tensor *b) {
    mt_tensor *out = mt_empty_like(a);
    int i;
    (void)k; (void)ks;
    mt_check(mt_same_shape(a, b), "mul: shapes differ");
    for (i = 0; i < mt_numel(a); i++) out->data[i] = a->data[i] * b->data[i];
    return out;
}

static mt_tensor *sum_cpu(const dk_kernel *k, dk_keyset ks, mt_tensor *a) {
    mt_tensor *out = mt_new(mt_backend(a), 1, 1, 1);
    int i;
    (void)k; (void)ks;
    for (i = 0; i < mt_numel(a); i++) out->data[0] += a->data[i];
    return out;
}

static mt_tensor *matmul_cpu(const dk_kernel *k, dk_keyset ks, mt_tensor *a, mt_tensor *b) {
    mt_tensor *out = mt_new(mt_backend(a), 2, a->rows, b->cols);
    int i, j, n;
    (void)k; (void)ks;
    mt_check(a->ndim == 2 && b->ndim == 2 && a->cols == b->rows, "matmul: shapes do not fit");
    for (i = 0; i < a->rows; i++)
        for (j = 0; j < b->cols; j++)
            for (n = 0; n < a->cols; n++) out->data[i * b->cols + j] += a->data[i * a->cols + n] * b->data[n * b->cols + j];
    return out;
}

static mt_tensor *exp_cpu(const dk_kernel *k, dk_keyset ks, mt_tensor *a) {
    mt_tensor *out = mt_empty_like(a);
    int i;
    (void)k; (void)ks;
    for (i = 0; i < mt_numel(a); i++) out->data[i] = expf(a->data[i]);
    return out;
}

/* relu has no CPU kernel: one kernel at CompositeExplicitAutograd serves
   every backend (its data is ordinary memory on all of ours). It fills the
   CPU slot, and also the PrivateUse1 slot, whether the plugin is loaded or
   not. */
static mt_tensor *relu_any_backend(const dk_kernel *k, dk_keyset ks, mt_tensor *a) {
    mt_tensor *out = mt_empty_like(a);
    int i;
    (void)k; (void)ks;
    for (i = 0; i < mt_numel(a); i++) out->data[i] = a->data[i] > 0 ? a->data[i] : 0;
    return out;
}

/* ==== 4. Autograd ============================================================
   One kernel per operator at the Autograd alias key, which stands for every
   backend's autograd key (AutogradCPU, AutogradPrivateUse1, ...). Each one
   redispatches to the layer below autograd, then records a node on the tape.
   The backward pass walks the tape in reverse. */

typedef struct mt_node mt_node;
struct mt_node {
    const char *name;                              /* for mt_tape_print */
    void (*backward)(mt_node *n, mt_tensor *grad); /* adds d(loss)/d(input) to the inputs' .grad */
    mt_tensor *a, *b, *out;                        /* b is NULL for unary operators */
};

static mt_node *tape;
static int tape_length, tape_capacity;

int mt_tape_length(void) { return tape_length; }
void mt_tape_clear(void) { tape_length = 0; }
void mt_tape_print(void) {
    int i;
    printf("tape:");
    for (i = 0; i < tape_length; i++) printf(" %s", tape[i].name);
    printf("%s\n", tape_length ? "" : " (empty)");
}

/* c10's after_autograd_keyset: the keyset without the autograd keys.
   Redispatching with it runs the next kernel down (the backend's), never
   this layer again. */
static dk_keyset below_autograd(dk_keyset ks) { return dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD); }

/* Records `out = name(a, b)` when an input requires grad. out is NULL when
   the call below failed (and the call-error hook said why). */
static mt_tensor *record(const char *name, void (*backward)(mt_node *, mt_tensor *), mt_tensor *a, mt_tensor *b,
                         mt_tensor *out) {
    mt_node *n;
    if (!out || !(a->requires_grad || (b && b->requires_grad))) return out;
    if (tape_length == tape_capacity) {
        tape_capacity = tape_capacity ? 2 * tape_capacity : 16;
        tape = (mt_node *)realloc(tape, (size_t)tape_capacity * sizeof *tape);
        mt_check(tape != NULL, "out of memory");
    }
    n = &tape[tape_length++];
    n->name = name;
    n->backward = backward;
    n->a = a;
    n->b = b;
    n->out = out;
    out->requires_grad = 1;
    return out;
}

/* The gradient formulas. They call the operators themselves (mt_mul,
   mt_matmul, mt_add), so a backward pass on PrivateUse1 tensors runs the
   plugin's kernels; mt_backward runs them under no_grad, so they record
   nothing. */
static void accumulate(mt_tensor *t, mt_tensor *grad) { t->grad = t->grad ? mt_add(t->grad, grad) : grad; }

static void add_backward(mt_node *n, mt_tensor *grad) {
    if (n->a->requires_grad) accumulate(n->a, grad);
    if (n->b->requires_grad) accumulate(n->b, grad);
}
static void mul_backward(mt_node *n, mt_tensor *grad) {
    if (n->a->requires_grad) accumulate(n->a, mt_mul(grad, n->b));
    if (n->b->requires_grad) accumulate(n->b, mt_mul(grad, n->a));
}
static void sum_backward(mt_node *n, mt_tensor *grad) {
    accumulate(n->a, mt_full_like(n->a, grad->data[0]));   /* every element contributed once */
}
static void relu_backward(mt_node *n, mt_tensor *grad) {
    mt_tensor *positive = mt_empty_like(n->a);   /* 1 where the input was > 0 */
    int i;
    for (i = 0; i < mt_numel(positive); i++) positive->data[i] = n->a->data[i] > 0 ? 1.0f : 0.0f;
    accumulate(n->a, mt_mul(grad, positive));
}
static void matmul_backward(mt_node *n, mt_tensor *grad) {
    if (n->a->requires_grad) accumulate(n->a, mt_matmul(grad, mt_transpose(n->b)));
    if (n->b->requires_grad) accumulate(n->b, mt_matmul(mt_transpose(n->a), grad));
}

/* The autograd kernels: compute below autograd, then record. */
static mt_tensor *add_autograd(const dk_kernel *k, dk_keyset ks, mt_tensor *a, mt_tensor *b) {
    (void)k;
    return record("add", add_backward, a, b, mt_add_redispatch(op.add, below_autograd(ks), a, b));
}
static mt_tensor *mul_autograd(const dk_kernel *k, dk_keyset ks, mt_tensor *a, mt_tensor *b) {
    (void)k;
    return record("mul", mul_backward, a, b, mt_mul_redispatch(op.mul, below_autograd(ks), a, b));
}
static mt_tensor *sum_autograd(const dk_kernel *k, dk_keyset ks, mt_tensor *a) {
    (void)k;
    return record("sum", sum_backward, a, NULL, mt_sum_redispatch(op.sum, below_autograd(ks), a));
}
static mt_tensor *relu_autograd(const dk_kernel *k, dk_keyset ks, mt_tensor *a) {
    (void)k;
    return record("relu", relu_backward, a, NULL, mt_relu_redispatch(op.relu, below_autograd(ks), a));
}
static mt_tensor *matmul_autograd(const dk_kernel *k, dk_keyset ks, mt_tensor *a, mt_tensor *b) {
    (void)k;
    return record("matmul", matmul_backward, a, b, mt_matmul_redispatch(op.matmul, below_autograd(ks), a, b));
}

/* Operators without an autograd kernel (mt::exp): one backend fallback at
   the Autograd alias, dk_autograd_not_implemented, runs them below autograd
   and hands each result to mark_not_implemented when an input requires
   grad. The node it records has no derivative: a backward pass that
   reaches it reports "derivative for mt::exp is not implemented" (c10's
   autogradNotImplementedFallback). The other choice, a fallthrough
   fallback, would skip autograd and lose the gradient without a word. */
static const char *backward_error;
const char *mt_backward_error(void) { return backward_error; }

static void not_implemented_backward(mt_node *n, mt_tensor *grad) {
    static char message[128];
    (void)grad;
    snprintf(message, sizeof message, "derivative for %s is not implemented", n->name);
    backward_error = message;
}
static int arg_requires_grad(const dk_value *arg, void *ud) {
    (void)ud;
    return arg->tag == DK_VALUE_TENSOR && ((const mt_tensor *)arg->as.tensor)->requires_grad;
}
static void mark_not_implemented(dk_value *result, const char *op_name, void *ud) {
    mt_tensor *out = (mt_tensor *)result->as.tensor;
    (void)ud;
    out->requires_grad = 1;   /* an input requires grad: the fallback asked arg_requires_grad */
    record(op_name, not_implemented_backward, out, NULL, out);   /* no inputs to give a gradient to */
}
static const dk_autograd_ni_desc not_implemented = { mark_not_implemented, arg_requires_grad, NULL };

/* no_grad: thread-local state excludes the autograd keys, so calls skip the
   autograd kernels and go straight to the backend (dk_guard_below_autograd()
   does the same; c10 calls it AutoDispatchBelowAutograd). Guards nest: pop
   undoes exactly what push changed. */
dk_guard mt_no_grad_begin(void) { return dk_guard_exclude(DK_KS_AUTOGRAD); }
void mt_no_grad_end(dk_guard g) { dk_guard_pop(g); }

void mt_backward(mt_tensor *loss) {
    dk_guard g = mt_no_grad_begin();   /* the backward pass itself records nothing */
    int i;
    backward_error = NULL;
    loss->grad = mt_full_like(loss, 1.0f);
    for (i = tape_length - 1; i >= 0; i--)   /* reverse order: a node's output grad is complete */
        if (tape[i].out->grad) tape[i].backward(&tape[i], tape[i].out->grad);
    mt_no_grad_end(g);
}

/* ==== 5. Tracing ============================================================
   One boxed kernel for every operator: a backend fallback at the Tracer key.
   No tensor carries Tracer; mt_trace_begin adds it to the keys thread-local
   state includes in every call, so while it is pushed every call lands here
   first. A boxed kernel sees any operator's arguments as dk_values on a
   stack (the generated adapters boxed them), logs them, and redispatches
   below itself; the typed kernels further down run unchanged. */

static void describe_value(const dk_value *v, char *buf, size_t size) {
    if (v->tag == DK_VALUE_TENSOR) mt_describe((const mt_tensor *)v->as.tensor, buf, size);
    else snprintf(buf, size, "(value)");
}

static void trace_fallback(const dk_kernel *k, const dk_operator *o, dk_keyset ks, dk_stack *stack) {
    const dk_schema *schema = dk_op_function_schema(o);
    size_t n = schema ? (size_t)schema->num_arguments : 0, base = stack->size - n, i, len;
    char line[512], value[64];
    (void)k;
    len = (size_t)snprintf(line, sizeof line, "trace: %s(", o->name);
    for (i = 0; i < n && len < sizeof line; i++) {   /* the arguments, bottom of the stack first */
        describe_value(&stack->values[base + i], value, sizeof value);
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%s", i ? ", " : "", value);
    }
    /* Below itself: the same keyset without Tracer. The call consumes the
       arguments and pushes the result. */
    dk_redispatch_boxed(o, dk_ks_remove(ks, DK_Tracer), stack);
    if (stack->size > base) describe_value(dk_stack_peek(stack, 0), value, sizeof value);
    else snprintf(value, sizeof value, "(failed)");
    if (len < sizeof line) snprintf(line + len, sizeof line - len, ") -> %s", value);
    printf("  %s\n", line);
}

dk_guard mt_trace_begin(void) { return dk_guard_include(dk_ks_from_key(DK_Tracer)); }
void mt_trace_end(dk_guard g) { dk_guard_pop(g); }

/* ==== 6. Registration ========================================================= */

/* A call with no kernel for its keys (say mt::add on a backend nobody
   implements) is not a crash: the registry hands c10's message to its
   call-error hook and the call returns a zero-filled result (NULL here).
   This hook prints the message's first sentence, then stores the error as
   the default hook does, for dk_last_error() and dk_last_call_status(). A
   real runtime would raise an exception instead. */
static void report_call_error(const dk_operator *o, dk_keyset ks, dk_status status, const char *message, void *ud) {
    const char *end = strchr(message, '\n');   /* the first line says what failed */
    printf("  error: %.*s\n", end ? (int)(end - message) : (int)strlen(message), message);
    dk_call_error_report(o, ks, status, message, ud);
}

/* The registry, set up in one place.
   minitensor uses the process-wide default registry because DK_LIBRARY
   blocks register there: that is where the plugin's kernels land. Its hooks
   can be set before or after the first block runs. */
static dk_registry *registry_setup(void) {
    dk_registry_desc d;
    dk_registry *r;
    memset(&d, 0, sizeof d);
    d.tensor_keyset = dkgen_tensor_keyset;   /* generated from DKGEN_TENSOR_KEYSET: boxed calls find the tensors' keysets */
    mt_check(dk_registry_default_configure(&d) == DK_OK, dk_last_error());
    r = dk_registry_default();
    mt_check(r != NULL, "no default registry");
    mt_check(dk_registry_set_call_error(r, report_call_error, NULL) == DK_OK, dk_last_error());
    return r;
}

static void ok(dk_status s) { mt_check(s == DK_OK, dk_last_error()); }

dk_registry *mt_init(void) {
    dk_registry *r = registry_setup();
    dk_registration *h;   /* minitensor keeps its registrations for the whole run */

    /* The operators: schema (parsed and checked) and boxing adapters. */
    ok(mt_add_def(r, &h));
    ok(mt_mul_def(r, &h));
    ok(mt_sum_def(r, &h));
    ok(mt_relu_def(r, &h));
    ok(mt_matmul_def(r, &h));
    ok(mt_exp_def(r, &h));

    /* Backend kernels. The generated _impl helpers take the typed kernel,
       so the compiler checks its signature. */
    ok(mt_add_impl(r, DK_CPU, add_cpu, NULL, &h));
    ok(mt_mul_impl(r, DK_CPU, mul_cpu, NULL, &h));
    ok(mt_sum_impl(r, DK_CPU, sum_cpu, NULL, &h));
    ok(mt_matmul_impl(r, DK_CPU, matmul_cpu, NULL, &h));
    ok(mt_relu_impl(r, DK_CompositeExplicitAutograd, relu_any_backend, NULL, &h));
    ok(mt_exp_impl(r, DK_CPU, exp_cpu, NULL, &h));

    /* The autograd layer, for every backend at once. */
    ok(mt_add_impl(r, DK_Autograd, add_autograd, NULL, &h));
    ok(mt_mul_impl(r, DK_Autograd, mul_autograd, NULL, &h));
    ok(mt_sum_impl(r, DK_Autograd, sum_autograd, NULL, &h));
    ok(mt_relu_impl(r, DK_Autograd, relu_autograd, NULL, &h));
    ok(mt_matmul_impl(r, DK_Autograd, matmul_autograd, NULL, &h));
    ok(dk_fallback(r, DK_Autograd, dk_autograd_not_implemented(&not_implemented), &h));   /* mt::exp */

    /* The tracing layer, for every operator at once. */
    ok(dk_fallback(r, DK_Tracer, dk_boxed(trace_fallback, NULL), &h));

    /* Handles for the calls, signature-checked. */
    ok(mt_add_bind(r, &op.add));
    ok(mt_mul_bind(r, &op.mul));
    ok(mt_sum_bind(r, &op.sum));
    ok(mt_relu_bind(r, &op.relu));
    ok(mt_matmul_bind(r, &op.matmul));
    ok(mt_exp_bind(r, &op.exp));
    return r;
}

void mt_free_all(void) {
    while (all_tensors) {
        mt_tensor *next = all_tensors->next;
        free(all_tensors);
        all_tensors = next;
    }
    free(tape);
    tape = NULL;
    tape_length = tape_capacity = 0;
}
