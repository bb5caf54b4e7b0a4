/* A document renderer on dispatch.h with key lists of its own (doc_keys.h):
   backends Raster, Vector, Text; layers Cache, Accessibility (per backend),
   Logging and Profile. No tensors: a document handle carries its keyset,
   and the registry's tensor_keyset hook reads it for boxed calls.
   make example-docrender builds it and compares its output with
   expected.txt. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <stdio.h>
#include <string.h>

/* The handle. Schemas take keys from Tensor arguments only, so a document
   is passed as a "Tensor": dkgen's bindings (doc_ops.h, generated from
   doc_ops.txt) take a DKGEN_TENSOR and read its keyset with
   DKGEN_TENSOR_KEYSET; dkgen_tensor_keyset, the registry's tensor_keyset
   hook, does the same for boxed calls. */
typedef struct doc {
    dk_keyset ks;
    const char *title;
    int pages;
} doc;
#define DKGEN_TENSOR const doc *
#define DKGEN_TENSOR_KEYSET(d) ((d)->ks)
#include "doc_ops.h"

static const dk_operator *render_op;

static int64_t render_raster(const dk_kernel *k, dk_keyset ks, const doc *d, int64_t width) {
    (void)k; (void)ks;
    printf("    [Raster] %s: %d pages of %d-pixel-wide bitmaps\n", d->title, d->pages, (int)width * 8);
    return (int64_t)d->pages * width * 8;
}
static int64_t render_vector(const dk_kernel *k, dk_keyset ks, const doc *d, int64_t width) {
    (void)k; (void)ks;
    printf("    [Vector] %s: %d pages of paths, %d units wide\n", d->title, d->pages, (int)width);
    return (int64_t)d->pages * width;
}
/* one kernel for every backend without its own (AnyBackend: Text here) */
static int64_t render_any(const dk_kernel *k, dk_keyset ks, const doc *d, int64_t width) {
    (void)k;
    printf("    [AnyBackend] %s on %s: %d pages of %d columns\n", d->title,
           dk_backend_name(dk_ks_highest_backend(ks)), d->pages, (int)width);
    return (int64_t)d->pages;
}

/* Cache: a kernel at one key for render only; other operators fall through. */
static const char *cached_title;
static int64_t cached_width, cached_result;
static int64_t render_cache(const dk_kernel *k, dk_keyset ks, const doc *d, int64_t width) {
    (void)k;
    if (cached_title && strcmp(cached_title, d->title) == 0 && cached_width == width) {
        printf("    [Cache] %s: cached\n", d->title);
        return cached_result;
    }
    printf("    [Cache] %s: miss\n", d->title);
    cached_result = doc_render_redispatch(render_op, dk_ks_and(ks, DK_KS_FULL_AFTER(DK_Cache)), d, width);
    cached_title = d->title;
    cached_width = width;
    return cached_result;
}

/* Accessibility: one boxed fallback for every operator, registered once at
   the AllAccessible alias (every backend's Accessible key). */
static void accessible(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k;
    printf("    [%s] %s: alt text and reading order first\n", dk_key_name(dk_ks_highest_key(ks)), op->name);
    dk_redispatch_boxed(op, dk_ks_and(ks, DK_KS_FULL_AFTER(DK_Accessibility)), stack);
}

/* Logging: a boxed fallback, switched on per thread by an include guard. */
static void logging(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    char text[160];
    (void)k;
    dk_ks_to_string(ks, text, sizeof text);
    printf("    [Logging] %s with %s\n", op->name, text);
    dk_redispatch_boxed(op, dk_ks_and(ks, DK_KS_FULL_AFTER(DK_Logging)), stack);
}

/* doc::word_count: a boxed kernel, called boxed */
static void count_text(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    const doc *d = (const doc *)dk_stack_pop(stack).as.tensor;
    (void)k; (void)op; (void)ks;
    dk_stack_push(stack, dk_int((int64_t)d->pages * 300));
}

static void show(const char *what, const doc *d, int64_t width) {
    char text[160];
    dk_ks_to_string(d->ks, text, sizeof text);
    printf("%s: render(%s, %d), %s\n", what, d->title, (int)width, text);
    printf("    = %lld\n", (long long)doc_render_call(render_op, d, width));
}

#define CHECK(call)                                                                                      \
    do {                                                                                                 \
        dk_status s_ = (call);                                                                           \
        if (s_ != DK_OK) { printf("FAIL %s: %s\n", #call, dk_last_error()); return 1; }                  \
    } while (0)

int main(void) {
    dk_registry_desc desc;
    dk_registry *r;
    dk_registration *h;
    dk_value storage[4];
    dk_stack stack;
    dk_guard g;
    dk_status s;
    doc report = { { 0 }, "report", 3 }, poster = { { 0 }, "poster", 1 }, notes = { { 0 }, "notes", 2 };

    printf("key space: %d backends, %d functionality keys, %d key values, %d runtime slots\n", DK_NUM_BACKENDS,
           DK_NUM_FUNCTIONALITY_KEYS - 1, DK_NUM_KEYS, DK_NUM_SLOTS);
    printf("thread-local defaults: included %s, excluded %s (no layer is on by default)\n",
           dk_ks_is_empty(dk_tls_included()) ? "empty" : "not empty",
           dk_ks_is_empty(dk_tls_excluded()) ? "empty" : "not empty");

    memset(&desc, 0, sizeof desc);
    desc.tensor_keyset = dkgen_tensor_keyset;
    CHECK(dk_registry_create(&desc, &r));
    CHECK(doc_render_def(r, &h));
    CHECK(doc_render_impl(r, DK_Raster, render_raster, NULL, &h));
    CHECK(doc_render_impl(r, DK_Vector, render_vector, NULL, &h));
    CHECK(doc_render_impl(r, DK_AnyBackend, render_any, NULL, &h));
    CHECK(doc_render_impl(r, DK_Cache, render_cache, NULL, &h));
    CHECK(dk_fallback(r, DK_Cache, dk_fallthrough(), &h));
    CHECK(dk_fallback(r, DK_AllAccessible, dk_boxed(accessible, NULL), &h));   /* one call, every backend */
    CHECK(dk_fallback(r, DK_Logging, dk_boxed(logging, NULL), &h));
    CHECK(dk_fallback(r, DK_Profile, dk_fallthrough(), &h));
    CHECK(doc_word_count_def(r, &h));
    CHECK(dk_impl(r, "doc::word_count", DK_Text, dk_boxed(count_text, NULL), &h));
    CHECK(doc_render_bind(r, &render_op));

    /* what a document is: its backend's key, plus the layers it wants */
    report.ks = dk_ks_or(dk_ks_from_key(DK_Vector), dk_ks_from_key(DK_Cache));
    poster.ks = dk_ks_add(dk_ks_add(dk_ks_from_key(DK_Raster), DK_Accessibility), DK_Profile);
    notes.ks = dk_ks_from_key(DK_Text);
    show("vector, cached", &report, 80);
    show("again", &report, 80);
    show("raster, accessible", &poster, 40);
    show("text (AnyBackend)", &notes, 72);

    printf("logging on for this thread:\n");
    g = dk_guard_include(dk_ks_from_key(DK_Logging));
    show("  text", &notes, 72);
    dk_guard_pop(g);
    show("logging off again", &notes, 72);

    printf("a boxed call of doc::word_count on the notes:\n");
    dk_stack_init(&stack, storage, 4);
    dk_stack_push(&stack, dk_tensor(&notes));
    dk_call_boxed(dk_op_lookup(r, "doc::word_count"), &stack);
    printf("    = %lld words\n", (long long)dk_stack_pop(&stack).as.i);
    dk_stack_push(&stack, dk_tensor(&report));
    dk_call_boxed(dk_op_lookup(r, "doc::word_count"), &stack);
    printf("on the report (Vector): %s\n    %s\n", dk_status_message(dk_last_call_status()), dk_last_error());

    /* registrations this list cannot run are refused, and change nothing */
    s = dk_impl(r, "doc::render", DK_AllAccessible, dk_boxed(accessible, NULL), &h);
    printf("a kernel at AllAccessible: %s\n    %s\n", dk_status_message(s), dk_last_error());
    s = dk_impl(r, "doc::render", DK_Accessibility, dk_boxed(accessible, NULL), &h);
    printf("a kernel at Accessibility itself: %s\n    %s\n", dk_status_message(s), dk_last_error());

    dk_registry_destroy(r);
    return 0;
}
