/* main.c - minitensor's demo and test: operators, autograd checked against
   finite differences, no_grad, tracing, a backend loaded from a shared
   object and unloaded again, and an operator without an autograd kernel.
   Its output is compared with expected.txt.

   usage: minitensor [path/to/minitensor_plugin.so [dispatch-table.html [timeline.json]]]
   With a second argument it also writes every operator's dispatch table,
   as the plugin left it, to that file as an HTML page (docs/ has one);
   with a third, a timeline of the dispatches of part 4 (forward and
   backward through the Tracer fallback and the autograd kernels), as
   Chrome trace event JSON (dk_timeline_save; docs/calling.md shows one). */
#define _POSIX_C_SOURCE 200809L   /* dlopen() and friends are POSIX, not ISO C */

#include "minitensor.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect(int ok, const char *what) {
    printf("  %s: %s\n", what, ok ? "yes" : "NO");
    if (!ok) failures++;
}

/* The model of the demo: loss = sum(relu(x @ w + b) * c). */
static mt_tensor *model(mt_tensor *x, mt_tensor *w, mt_tensor *b, mt_tensor *c) {
    return mt_sum(mt_mul(mt_relu(mt_add(mt_matmul(x, w), b)), c));
}

/* ---- finite differences: d(loss)/d(v) ~ (loss(v + h) - loss(v - h)) / 2h */

static float loss_value(mt_tensor *const in[4]) {
    dk_guard g = mt_no_grad_begin();   /* a plain number: nothing goes on the tape */
    float v = model(in[0], in[1], in[2], in[3])->data[0];
    mt_no_grad_end(g);
    return v;
}

/* The largest difference between leaf->grad and the numeric gradient. */
static float gradient_error(mt_tensor *leaf, mt_tensor *const in[4]) {
    const float h = 1e-2f;
    float worst = 0;
    int i;
    for (i = 0; i < mt_numel(leaf); i++) {
        float saved = leaf->data[i], up, down;
        leaf->data[i] = saved + h;
        up = loss_value(in);
        leaf->data[i] = saved - h;
        down = loss_value(in);
        leaf->data[i] = saved;
        worst = fmaxf(worst, fabsf((up - down) / (2 * h) - leaf->grad->data[i]));
    }
    return worst;
}

static int same_values(const mt_tensor *a, const mt_tensor *b) {
    return a && b && mt_same_shape(a, b) && memcmp(a->data, b->data, (size_t)mt_numel(a) * sizeof(float)) == 0;
}

/* The picture of every dispatch table (dk_registry_html_to_string), written to a file. */
static int write_html(const char *path) {
    int n = dk_registry_html_to_string(dk_registry_default(), NULL, 0);
    char *html = (char *)malloc((size_t)n + 1);
    FILE *f = fopen(path, "w");
    int ok = html && f;
    if (ok) dk_registry_html_to_string(dk_registry_default(), html, (size_t)n + 1);
    if (ok) ok = fputs(html, f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    free(html);
    if (!ok) fprintf(stderr, "minitensor: cannot write %s\n", path);
    return ok;
}

/* What would run for mt::add on t, on this thread, and why (dk_explain). */
static void explain_add(const char *when, const mt_tensor *t) {
    dk_explanation e;
    char what[64];
    dk_explain(dk_op_lookup(dk_registry_default(), "mt::add"), t->keys, &e);
    mt_describe(t, what, sizeof what);
    printf("  %s, mt::add on %s runs the %s at %s\n", when, what, e.reason, dk_key_name(e.key));
}

/* Every operator's dispatch table as text (c10's dumpComputedTable). */
static void dump_tables(char *buf, size_t size) {
    static const char *const names[] = { "mt::add", "mt::mul", "mt::sum", "mt::relu", "mt::matmul" };
    size_t i, len = 0;
    for (i = 0; i < sizeof names / sizeof names[0] && len < size; i++)
        len += (size_t)dk_op_computed_table_to_string(dk_op_lookup(dk_registry_default(), names[i]), buf + len, size - len);
}

/* add and relu on a PrivateUse1 tensor: what the plugin changes. */
static void use_private_backend(mt_tensor *a) {
    mt_tensor *s = mt_add(a, a);
    if (s) mt_print("  add(a, a)", s);
    else printf("  add(a, a) returned NULL; dk_last_call_status(): %s\n", dk_status_message(dk_last_call_status()));
    mt_print("  relu(a)", mt_relu(a));
}

int main(int argc, char **argv) {
    static const float xv[] = { 1, 2, -1, 0.5f, -1, 2 };
    static const float wv[] = { 0.5f, -1, 1, 0.5f, -0.5f, 1 };
    static const float bv[] = { 0.5f, -0.5f, 1, 1 };
    static const float cv[] = { 1, 2, -1, 0.5f };
    static const float av[] = { -1, 2, -3 };
    static char before[1 << 16], after[1 << 16];
    const char *plugin_path = argc > 1 ? argv[1] : "./minitensor_plugin.so";
    mt_tensor *x, *w, *b, *c, *loss, *in[4];
    dk_guard g;
    void *plugin;
    int i;

    mt_init();

    printf("== 1. operators on CPU\n");
    x = mt_matrix(2, 3, xv);
    w = mt_matrix(3, 2, wv);
    b = mt_matrix(2, 2, bv);
    c = mt_matrix(2, 2, cv);
    mt_print("x", x);
    mt_print("w", w);
    mt_print("matmul(x, w)", mt_matmul(x, w));
    mt_print("add(matmul(x, w), b)", mt_add(mt_matmul(x, w), b));
    mt_print("relu(add(matmul(x, w), b))", mt_relu(mt_add(mt_matmul(x, w), b)));
    mt_print("sum(c)", mt_sum(c));

    printf("\n== 2. autograd: loss = sum(relu(x @ w + b) * c)\n");
    in[0] = mt_requires_grad(x);
    in[1] = mt_requires_grad(w);
    in[2] = mt_requires_grad(b);
    in[3] = mt_requires_grad(c);
    loss = model(x, w, b, c);
    mt_print("loss", loss);
    mt_tape_print();
    mt_backward(loss);
    mt_print("d(loss)/dx", x->grad);
    mt_print("d(loss)/dw", w->grad);
    mt_print("d(loss)/db", b->grad);
    mt_print("d(loss)/dc", c->grad);
    for (i = 0; i < 4; i++) {
        static const char *const what[] = { "x", "w", "b", "c" };
        char text[96];
        snprintf(text, sizeof text, "d(loss)/d%s agrees with finite differences (within 1e-3)", what[i]);
        expect(gradient_error(in[i], in) < 1e-3f, text);
    }
    mt_tape_clear();

    printf("\n== 3. no_grad: thread-local state excludes the autograd keys\n");
    explain_add("with grad", x);
    g = mt_no_grad_begin();
    explain_add("under no_grad", x);
    mt_print("  loss", model(x, w, b, c));
    mt_no_grad_end(g);
    mt_tape_print();

    printf("\n== 4. tracing: a boxed fallback at Tracer, switched on through TLS\n");
    {
        mt_tensor *w2 = mt_requires_grad(mt_to(w, DK_CPUBit));   /* only w2 requires grad */
        mt_tensor *x2 = mt_to(x, DK_CPUBit), *b2 = mt_to(b, DK_CPUBit), *c2 = mt_to(c, DK_CPUBit);
        if (argc > 3 && dk_timeline_start(0) != DK_OK) return 1;
        g = mt_trace_begin();
        printf("forward:\n");
        loss = model(x2, w2, b2, c2);
        printf("backward (only what w2's gradient needs):\n");
        mt_backward(loss);
        mt_trace_end(g);
        if (argc > 3) {
            dk_timeline_stop();
            if (dk_timeline_save(argv[3]) != DK_OK) { fprintf(stderr, "%s\n", dk_last_error()); return 1; }
        }
        expect(same_values(w2->grad, w->grad), "same d(loss)/dw as in 2");
        mt_tape_clear();
    }

    printf("\n== 5. a backend in a plugin: PrivateUse1\n");
    {
        mt_tensor *a = mt_to(mt_vector(3, av), DK_PrivateUse1Bit);
        mt_print("a", a);
        printf("before loading the plugin:\n");
        use_private_backend(a);
        dump_tables(before, sizeof before);

        plugin = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
        if (!plugin) {
            fprintf(stderr, "minitensor: cannot load the plugin: %s\n", dlerror());
            return 1;
        }
        printf("loaded minitensor_plugin.so:\n");
        use_private_backend(a);
        if (argc > 2 && !write_html(argv[2])) return 1;
        {   /* the same model on PrivateUse1: the plugin's kernels, the host's autograd */
            mt_tensor *wp = mt_requires_grad(mt_to(w, DK_PrivateUse1Bit));
            printf("loss and d(loss)/dw on PrivateUse1:\n");
            loss = model(mt_to(x, DK_PrivateUse1Bit), wp, mt_to(b, DK_PrivateUse1Bit), mt_to(c, DK_PrivateUse1Bit));
            mt_backward(loss);
            mt_print("  d(loss)/dw", wp->grad);
            expect(same_values(wp->grad, w->grad), "same d(loss)/dw as on CPU");
            mt_tape_clear();
        }

        if (dlclose(plugin) != 0) {
            fprintf(stderr, "minitensor: dlclose: %s\n", dlerror());
            return 1;
        }
        printf("unloaded the plugin:\n");
        use_private_backend(a);
        dump_tables(after, sizeof after);
        expect(strcmp(before, after) == 0, "every dispatch table is what it was before loading");
    }

    printf("\n== 6. an operator without an autograd kernel: the autograd-not-implemented fallback\n");
    {
        mt_tensor *v = mt_requires_grad(mt_vector(3, av)), *y = mt_exp(v);   /* exp_cpu, below autograd */
        mt_print("exp(v)", y);
        loss = mt_sum(y);
        mt_tape_print();
        mt_backward(loss);
        printf("  backward: %s\n", mt_backward_error() ? mt_backward_error() : "ok");
        expect(mt_backward_error() != NULL && v->grad == NULL, "no gradient reaches v, and backward says why");
        mt_tape_clear();
    }

    mt_free_all();
    printf("\n%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
