/* libFuzzer harness for registration sequences (`make fuzz-registry`, see
   tests/fuzz_registry.mk).

   The input drives a sequence of steps on one registry: def, impl, fallback,
   fallthrough impl / fallback, deregistration of a live handle or of a dead
   one, library open (or dk_library_run) / lib_def / lib_impl / lib_fallback /
   close, and an injected allocation failure (the registry's desc.alloc fails
   the Nth allocation of the next step). A small model records every
   registration that succeeded, in order, and whether it is still live.

   After every step:
   (a) a FRESH registry holding only the surviving registrations, replayed in
       their original order through the same helper functions (so debug
       strings agree), must show, for every operator with a def or a live
       registration: the same kernel in every runtime slot (dk_redispatch_kernel of the
       slot key; kernels are identified by user_data, kind, key, fallback
       flag, entry points, debug string), the same fallthrough masks
       (dk_dispatch_kernel under a forced-empty TLS with every functionality bit plus
       one backend bit: final keysets and kernels), and byte-identical
       dk_op_state_to_string / dk_op_computed_table_to_string. An operator without def
       or registrations may be absent or present-but-empty, in either. (The
       fresh registry is rebuilt from nothing after any removal; a new
       registration, being the newest, is appended to it.)
   (b) a step that fails (bad input, dead handle, or the injected allocation
       failure) leaves dk_op_state_to_string, dk_op_computed_table_to_string, the live
       tables and masks of every operator, the operators dk_op_lookup finds
       and the dk_registry_each_op list byte-identical to before the step.
   Besides, every status must be the one the model expects (DK_ERR_NO_MEMORY
   only when the injected failure happened), a failed registration must not
   set its handle, and both registries must free everything they allocated.
   At the end, unless the input says otherwise, every library is closed and
   every handle deregistered, and (a) is checked once more.
   A violation prints the decoded steps and aborts (a libFuzzer crash).
   Only the public API is used: no private (double-underscore) name.

   Input format: byte 0 holds flags (bit 0: desc.no_default_fallthroughs;
   bit 1: no teardown, the registry is destroyed with everything live);
   then steps, each an opcode byte (mod NSTEPS, see enum step) followed by a
   fixed number of operand bytes (see step_operands); missing bytes read as 0.
   tests/fuzz/registry-seeds.txt spells the operands out.
   FUZZ_REGISTRY_TRACE=1 in the environment prints every decoded step.

   clang -std=c99 -fsanitize=fuzzer,address,undefined -I<dir of dispatch.h> tests/fuzz_registry.c
   (the make fragment adds -fno-sanitize-coverage=trace-cmp: three times faster) */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- limits and pools ------------------------------------------------------- */

#define MAX_STEPS 128
#define MAX_REGS MAX_STEPS
#define MAX_LIBS MAX_STEPS
#define MAX_OPEN 6

/* operators: namespace x short name */
#define NNS 2
#define NSHORT 3
#define NOPS (NNS * NSHORT)
static const char *const ns_names[NNS] = { "fz", "gz" };
static const char *const short_names[NSHORT] = { "a", "b.ovl", "c" };
static const char *const short_args[NSHORT] = { "(Tensor x) -> Tensor", "(Tensor x, int y) -> Tensor",
                                                "(Tensor[] xs) -> ()" };
/* names nothing ever registers: dk_op_lookup must not find them */
static const char *const probe_names[] = { "fz::b", "_::a", "fz::a.ovl", "gz::" };
#define NPROBES ((int)(sizeof probe_names / sizeof probe_names[0]))
static char op_names[NOPS][32];

/* keys: ok = a valid key for impl (runtime, alias or Undefined = catch-all) */
typedef struct pool_key { dk_key key; int ok; } pool_key;
static const pool_key keys[] = {
    { DK_CPU, 1 },
    { DK_CUDA, 1 },
    { DK_AutogradCPU, 1 },
    { DK_AutogradCUDA, 1 },
    { DK_AutogradOther, 1 },
    { DK_SparseCPU, 1 },          /* per-backend, an "other" backend (AutogradOther ambiguity) */
    { DK_MkldnnCPU, 1 },          /* a plain other-backend key */
    { DK_BackendSelect, 1 },      /* default fallthrough fallback */
    { DK_ADInplaceOrView, 1 },    /* default fallthrough fallback */
    { DK_FuncTorchBatched, 1 },
    { DK_Tracer, 1 },
    { DK_Meta, 1 },
    { DK_Autograd, 1 },
    { DK_CompositeImplicitAutograd, 1 },
    { DK_CompositeExplicitAutograd, 1 },
    { DK_CompositeExplicitAutogradNonFunctional, 1 },
    { DK_FuncTorchBatchedDecomposition, 1 },
    { DK_Undefined, 1 },          /* catch-all for impl; BAD_KEY for fallback */
    { DK_NestedTensorCPU, 1 },
    { DK_CompositeImplicitAutogradNestedTensor, 1 },
    { DK_AutogradNestedTensor, 1 },
    { DK_Functionalize, 1 },
    { DK_Dense, 0 },              /* per-backend functionality: no slot */
    { (dk_key)DK_NUM_KEYS, 0 },   /* not a key at all */
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))

/* library namespaces: the operators' two, the wildcard, and a malformed one */
#define LNS_WILD 2
#define LNS_BAD 3
static const char *const lib_ns_names[] = { "fz", "gz", "_", "9z" };
static const char *const lib_kind_names[] = { "DEF", "FRAGMENT", "IMPL" };

/* kernel descriptions */
enum { KD_UNBOXED, KD_BOXED, KD_BOTH, KD_FALLTHROUGH, KD_NONE, KD_BAD_FALLTHROUGH, NKD };
static const char *const kd_names[NKD] = { "unboxed", "boxed", "unboxed+boxed", "fallthrough", "no-function",
                                           "fallthrough-with-function" };
static int kd_ok_impl(int kd) { return kd <= KD_FALLTHROUGH; }
static int kd_ok_fallback(int kd) { return kd == KD_BOXED || kd == KD_BOTH || kd == KD_FALLTHROUGH; }

/* schema variants of a def: 0..5 good, 6 malformed schema, 7 no schema at all */
#define NDEF_VARIANTS 8
#define DEF_BAD_SCHEMA 6
#define DEF_NO_SCHEMA 7

enum step {
    S_DEF, S_IMPL, S_FALLBACK, S_FT_IMPL, S_FT_FALLBACK, S_DEREG, S_DEREG_DEAD,
    S_LIB_OPEN, S_LIB_DEF, S_LIB_IMPL, S_LIB_FALLBACK, S_LIB_CLOSE, S_INJECT, NSTEPS
};
/* operand bytes after the opcode, by step */
static const int step_operands[NSTEPS] = { 2, 3, 2, 3, 2, 1, 1, 3, 3, 4, 2, 1, 1 };

/* ---- kernels (never called) ----------------------------------------------- */

static void kfn(void) {}
static void kboxed(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k; (void)op; (void)ks; (void)stack;
}

static dk_kernel_desc make_desc(int kd, void *user_data) {
    dk_kernel_desc d;
    switch (kd) {
    case KD_UNBOXED: d = dk_unboxed(DK_FN(kfn), user_data); break;
    case KD_BOXED: d = dk_boxed(kboxed, user_data); break;
    case KD_BOTH: d = dk_unboxed(DK_FN(kfn), user_data); d.boxed = kboxed; break;
    case KD_FALLTHROUGH: d = dk_fallthrough(); d.user_data = user_data; break;
    case KD_NONE: d = dk_unboxed(NULL, user_data); break;
    default: d = dk_fallthrough(); d.fn = DK_FN(kfn); d.user_data = user_data; break;
    }
    return d;
}

/* ---- allocation hook ---------------------------------------------------------- */

typedef struct alloc_ctx {
    int armed;          /* fail one allocation: the one after `countdown` more */
    unsigned countdown;
    int fired;          /* the injected failure happened */
    long outstanding;   /* allocations not yet freed */
} alloc_ctx;

static void *fz_alloc(size_t n, void *ud) {
    alloc_ctx *a = (alloc_ctx *)ud;
    void *p;
    if (a->armed) {
        if (a->countdown == 0) {
            a->armed = 0;
            a->fired = 1;
            return NULL;
        }
        a->countdown--;
    }
    p = malloc(n);
    if (p) a->outstanding++;
    return p;
}
static void fz_free(void *p, void *ud) {
    alloc_ctx *a = (alloc_ctx *)ud;
    if (p) a->outstanding--;
    free(p);
}
static void quiet_log(dk_log_level level, dk_log_item item, const char *message, void *ud) { (void)level; (void)item; (void)message; (void)ud; }

/* ---- the model ----------------------------------------------------------------- */

enum { T_DEF, T_IMPL, T_FALLBACK };
static const char *const type_names[] = { "def", "impl", "fallback" };

typedef struct mreg {
    int type;             /* T_* */
    int op;               /* def, impl: the operator (index into op_names) */
    char text[96];        /* the schema / name as passed */
    dk_key key;           /* as passed */
    int kd;               /* KD_* */
    int lib;              /* the library record, or -1 */
    int live;
    dk_registration *h;   /* the live registry's handle (direct registrations) */
} mreg;

typedef struct mlib {
    dk_library_kind kind;
    int ns;               /* index into lib_ns_names */
    dk_key key;
    int run;              /* opened by dk_library_run (an empty block) */
    int open;
    dk_library *live, *fresh;
} mlib;

typedef struct state {
    dk_registry *live, *fresh;
    alloc_ctx live_alloc, fresh_alloc;
    int no_default_fallthroughs;
    mreg regs[MAX_REGS];
    int nregs;
    mlib libs[MAX_LIBS];
    int nlibs;
    int open[MAX_OPEN], nopen;  /* open library records */
    long version;               /* counts changes of the model */
    long fresh_version;         /* the model version the fresh registry holds */
    long fresh_builds;          /* changes of the fresh registry (its view is cached) */
    long fresh_view_build;      /* the fresh_builds its view was taken at */
    long rebuilds, appends;
    int step;
    int inject_pending;
    unsigned inject_n;
    /* decoded steps, printed on a violation */
    char *log;
    size_t log_len, log_cap;
} state;

static char tags[MAX_REGS];   /* user_data of registration i: &tags[i] */
static state S;
static int trace;

static void log_add(const char *fmt, ...) {
    char line[512];
    va_list ap;
    size_t n;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    n = strlen(line);
    if (trace) fputs(line, stderr);
    if (S.log_len + n + 1 > S.log_cap) {
        size_t cap = S.log_cap ? S.log_cap * 2 : 8192;
        while (cap < S.log_len + n + 1) cap *= 2;
        S.log = (char *)realloc(S.log, cap);
        if (!S.log) abort();
        S.log_cap = cap;
    }
    memcpy(S.log + S.log_len, line, n + 1);
    S.log_len += n;
}

static void violation(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "\nfuzz_registry: VIOLATION at step %d: ", S.step);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nregistry created with no_default_fallthroughs=%d; steps:\n%s\n", S.no_default_fallthroughs,
            S.log ? S.log : "");
    fflush(stderr);
    abort();
}

static const char *key_name(dk_key k) {
    const char *n = dk_key_name(k);
    return n ? n : "<not a key>";
}

static int op_index(int ns, int sh) { return ns * NSHORT + sh; }

static int op_has_registration(int o) {
    int i;
    for (i = 0; i < S.nregs; i++)
        if (S.regs[i].live && S.regs[i].type != T_FALLBACK && S.regs[i].op == o) return 1;
    return 0;
}
static int op_has_def(int o) {
    int i;
    for (i = 0; i < S.nregs; i++)
        if (S.regs[i].live && S.regs[i].type == T_DEF && S.regs[i].op == o) return 1;
    return 0;
}

/* ---- fallback slots (public key-space helpers) ---------------------------------- */

/* The runtime slots a fallback at `key` occupies; 0 when it covers none. */
static int fallback_slots(dk_key key, int *slots) {
    int n = 0;
    dk_key k;
    if (dk_key_is_alias(key)) {
        dk_keyset set = dk_alias_runtime_set(key);
        DK_KS_FOREACH(k, set) slots[n++] = dk_key_slot(k);
        return n;
    }
    slots[0] = dk_key_slot(key);
    return 1;
}

/* A fallback is registered at a slot: a default fallthrough or a live one. */
static int slot_taken(int slot) {
    int i, j, n, slots[DK_NUM_SLOTS];
    dk_key k;
    if (!S.no_default_fallthroughs) {
        DK_KS_FOREACH(k, DK_KS_DEFAULT_INCLUDED)
            if (dk_key_slot(k) == slot) return 1;
    }
    for (i = 0; i < S.nregs; i++) {
        if (!S.regs[i].live || S.regs[i].type != T_FALLBACK) continue;
        n = fallback_slots(S.regs[i].key, slots);
        for (j = 0; j < n; j++)
            if (slots[j] == slot) return 1;
    }
    return 0;
}

/* ---- registration helpers: the live steps and the replay go through these
        same lines, so both registries record the same "registered at" ---------- */

static dk_status h_def(dk_registry *r, const char *schema, dk_registration **out) {
    return dk_def(r, schema, out);
}
static dk_status h_impl(dk_registry *r, const char *name, dk_key key, dk_kernel_desc d, dk_registration **out) {
    return dk_impl(r, name, key, d, out);
}
static dk_status h_fallback(dk_registry *r, dk_key key, dk_kernel_desc d, dk_registration **out) {
    return dk_fallback(r, key, d, out);
}
static void empty_block(dk_library *lib) { (void)lib; }
static dk_status h_lib_open(dk_registry *r, const mlib *l, dk_library **out) {
    if (l->run) return dk_library_run(r, l->kind, lib_ns_names[l->ns], l->key, empty_block, out);
    return dk_library_open(r, l->kind, lib_ns_names[l->ns], l->key, out);
}

/* ---- registries ---------------------------------------------------------------- */

static dk_registry *new_registry(alloc_ctx *a) {
    dk_registry_desc d;
    dk_registry *r = NULL;
    memset(&d, 0, sizeof d);
    memset(a, 0, sizeof *a);
    d.alloc = fz_alloc;
    d.free = fz_free;
    d.alloc_user_data = a;
    d.logger.func = quiet_log;
    d.no_default_fallthroughs = S.no_default_fallthroughs;
    if (dk_registry_create(&d, &r) != DK_OK || !r) violation("dk_registry_create failed: %s", dk_last_error());
    return r;
}

static void destroy_registry(dk_registry **r, alloc_ctx *a, const char *which) {
    if (!*r) return;
    dk_registry_destroy(*r);
    *r = NULL;
    if (a->outstanding != 0) violation("the %s registry leaked %ld allocations", which, a->outstanding);
}

/* ---- the fresh registry ----------------------------------------------------------

   It only ever receives the surviving registrations, in their original
   order: a new registration is appended to it (it is the newest one), and
   any removal (deregistration, library close) rebuilds it from nothing. */

static void replay_one(int i) {
    mreg *g = &S.regs[i];
    dk_kernel_desc d = make_desc(g->kd, &tags[i]);
    dk_registration *h = NULL;
    dk_status st;
    if (g->lib < 0) {
        if (g->type == T_DEF) st = h_def(S.fresh, g->text, &h);
        else if (g->type == T_IMPL) st = h_impl(S.fresh, g->text, g->key, d, &h);
        else st = h_fallback(S.fresh, g->key, d, &h);
        if (st == DK_OK && !h) violation("replay of registration #%d: DK_OK without a handle", i);
    } else {
        mlib *l = &S.libs[g->lib];
        if (!l->fresh && (st = h_lib_open(S.fresh, l, &l->fresh)) != DK_OK)
            violation("replay: opening library L%d in the fresh registry: %s (%s)", g->lib, dk_status_message(st),
                      dk_last_error());
        if (g->type == T_DEF) st = dk_library_def(l->fresh, g->text);
        else if (g->type == T_IMPL) st = dk_library_impl(l->fresh, g->text, g->key, d);
        else st = dk_library_fallback(l->fresh, d);
    }
    if (st != DK_OK)
        violation("replay of surviving registration #%d (%s) in a fresh registry failed: %s (%s)", i,
                  type_names[g->type], dk_status_message(st), dk_last_error());
}

static void rebuild_fresh(void) {
    int i;
    destroy_registry(&S.fresh, &S.fresh_alloc, "fresh");
    for (i = 0; i < S.nlibs; i++) S.libs[i].fresh = NULL;
    S.fresh = new_registry(&S.fresh_alloc);
    for (i = 0; i < S.nregs; i++)
        if (S.regs[i].live) replay_one(i);
    S.fresh_version = S.version;
    S.fresh_builds++;
    S.rebuilds++;
}

/* ---- reading a registry through the public API ------------------------------------ */

typedef struct buf { char *p; size_t len, cap; } buf;

static void buf_reserve(buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    b->cap = b->cap ? b->cap : 4096;
    while (b->cap < b->len + extra + 1) b->cap *= 2;
    b->p = (char *)realloc(b->p, b->cap);
    if (!b->p) abort();
}
static void buf_add(buf *b, const char *s) {
    size_t n = strlen(s);
    buf_reserve(b, n);
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}
/* Appends a dump (an snprintf-like function) to b; returns its offset. */
static size_t buf_dump(buf *b, int (*fn)(const dk_operator *, char *, size_t), const dk_operator *op) {
    size_t at = b->len;
    int n;
    buf_reserve(b, 8192);
    n = fn(op, b->p + at, b->cap - at);
    if (n < 0) violation("a dump returned %d", n);
    if ((size_t)n >= b->cap - at) {
        buf_reserve(b, (size_t)n);
        if (fn(op, b->p + at, b->cap - at) != n) violation("a dump returned two lengths for one operator");
    }
    if (strlen(b->p + at) != (size_t)n)
        violation("a dump wrote %lu bytes but returned %d", (unsigned long)strlen(b->p + at), n);
    b->len = at + (size_t)n;
    buf_add(b, "\n");   /* separator: the text stays NUL-terminated at b->len */
    b->p[b->len - 1] = '\0';
    return at;
}

/* What the public API shows of one operator name. */
typedef struct opview {
    const dk_operator *op;                        /* dk_op_lookup, or NULL */
    size_t state, table;                          /* offsets of the two dumps in the view's text */
    const dk_kernel *slot[DK_NUM_SLOTS]; /* dk_redispatch_kernel of each slot's key */
    uint64_t mask_ks[DK_NUM_BACKENDS + 1];        /* dk_dispatch_kernel: final keyset per backend (0: none) */
    const dk_kernel *mask_k[DK_NUM_BACKENDS + 1]; /* ... and its kernel */
} opview;
#define NNAMES (NOPS + NPROBES)
typedef struct view {
    opview ops[NNAMES];
    buf text;     /* the dumps, NUL-separated, then the dk_registry_each_op list */
    size_t each;  /* offset of that list */
} view;

static view live_before, live_now, fresh_view;

static const char *name_of(int i) { return i < NOPS ? op_names[i] : probe_names[i - NOPS]; }

/* The keyset of every functionality bit plus backend b (none for b = 0). */
static dk_keyset mask_probe(int b) {
    return dk_ks_or(dk_ks_raw(DK_KS_FULL.repr & ~DK_KS_BACKENDS.repr), dk_ks_from_backend((dk_backend)b));
}

static int each_op_collect(dk_operator *op, void *ud) {
    buf_add((buf *)ud, op->name);
    buf_add((buf *)ud, " ");
    return 0;
}

static void take_view(dk_registry *r, view *v) {
    int i, slot, bk;
    dk_guard g;
    buf text = v->text;
    memset(v->ops, 0, sizeof v->ops);
    text.len = 0;
    buf_reserve(&text, 0);
    text.p[0] = '\0';
    for (i = 0; i < NNAMES; i++) {
        opview *o = &v->ops[i];
        o->op = dk_op_lookup(r, name_of(i));
        if (!o->op) continue;
        o->state = buf_dump(&text, dk_op_state_to_string, o->op);
        o->table = buf_dump(&text, dk_op_computed_table_to_string, o->op);
        for (slot = 0; slot < DK_NUM_SLOTS; slot++)
            o->slot[slot] = dk_redispatch_kernel(o->op, dk_ks_from_key(dk_slot_key(slot)));
        g = dk_guard_force(DK_KS_EMPTY, DK_KS_EMPTY);
        for (bk = 0; bk <= DK_NUM_BACKENDS; bk++) {
            dk_keyset out;
            o->mask_k[bk] = dk_dispatch_kernel(o->op, mask_probe(bk), &out);
            o->mask_ks[bk] = out.repr;
        }
        dk_guard_pop(g);
    }
    v->each = text.len;
    dk_registry_each_op(r, each_op_collect, &text);
    v->text = text;
}

static void print_view(const view *v) {
    int i;
    for (i = 0; i < NNAMES; i++) {
        const opview *o = &v->ops[i];
        fprintf(stderr, "[%s] %s\n", name_of(i), o->op ? "found" : "not found");
        if (o->op) fprintf(stderr, "%s--\n%s--\n", v->text.p + o->state, v->text.p + o->table);
    }
    fprintf(stderr, "dk_registry_each_op: %s\n", v->text.p + v->each);
}

/* (b): byte-identical, pointers included. */
static void check_unchanged(const view *before, const view *after) {
    int i, slot, bk;
    for (i = 0; i < NNAMES; i++) {
        const opview *a = &before->ops[i], *b = &after->ops[i];
        const char *what = NULL;
        if (a->op != b->op) what = "dk_op_lookup";
        else if (a->op && strcmp(before->text.p + a->state, after->text.p + b->state) != 0) what = "dk_op_state_to_string";
        else if (a->op && strcmp(before->text.p + a->table, after->text.p + b->table) != 0)
            what = "dk_op_computed_table_to_string";
        for (slot = 0; !what && slot < DK_NUM_SLOTS; slot++)
            if (a->slot[slot] != b->slot[slot]) what = "the live table (dk_redispatch_kernel)";
        for (bk = 0; !what && bk <= DK_NUM_BACKENDS; bk++)
            if (a->mask_ks[bk] != b->mask_ks[bk] || a->mask_k[bk] != b->mask_k[bk])
                what = "the fallthrough mask (dk_dispatch_kernel)";
        if (what) {
            fprintf(stderr, "=== before the step:\n");
            print_view(before);
            fprintf(stderr, "=== after the step:\n");
            print_view(after);
            violation("a failed step changed %s of %s (both views above)", what, name_of(i));
        }
    }
    if (strcmp(before->text.p + before->each, after->text.p + after->each) != 0)
        violation("a failed step changed dk_registry_each_op: before \"%s\", after \"%s\"",
                  before->text.p + before->each, after->text.p + after->each);
}

static void describe_kernel(char *out, size_t n, const dk_kernel *k) {
    long id = -1;
    if (!k) { snprintf(out, n, "(null)"); return; }
    if ((const char *)k->user_data >= tags && (const char *)k->user_data < tags + MAX_REGS)
        id = (long)((const char *)k->user_data - tags);
    snprintf(out, n, "{kind %d, reg #%ld, key %s, fallback %d, fn %s, boxed %s, debug \"%s\"}", (int)k->kind, id,
             key_name(k->key), k->is_fallback, k->fn ? "set" : "NULL", k->boxed ? "set" : "NULL",
             k->debug ? k->debug : "(null)");
}

/* Kernels of two registries are the same registration's: user_data (distinct
   per registration), kind, key, fallback flag, entry points; the debug string
   too when there is no user_data (the dumps show the others' debug strings).
   A missing record's user_data is its own registry's (the slot's boxed
   fallback, dk__deferred's), so two registries' differ: test_resolution_property
   checks they stand for the same slot. */
static int same_kernel(const dk_kernel *a, const dk_kernel *b) {
    int missing;
    if (!a || !b) return 0;
    missing = a->kind == DK_KERNEL_MISSING && b->kind == DK_KERNEL_MISSING;
    if (a->kind != b->kind || (!missing && a->user_data != b->user_data) || a->key != b->key ||
        a->is_fallback != b->is_fallback || a->fn != b->fn || a->boxed != b->boxed)
        return 0;
    if (missing) return 1;
    if (a->user_data) return 1; /* a registration's: the dumps compare its debug string */
    if (!a->debug || !b->debug) return a->debug == b->debug;
    return strcmp(a->debug, b->debug) == 0;
}

static void kernel_mismatch(const char *what, const char *name, const char *where, const dk_kernel *l,
                            const dk_kernel *f) {
    char a[512], b[512];
    describe_kernel(a, sizeof a, l);
    describe_kernel(b, sizeof b, f);
    violation("%s of %s at %s differs from a fresh registry's:\n  live:  %s\n  fresh: %s", what, name, where, a, b);
}

/* An operator without def or registrations, if present at all, shows none. */
static void check_empty_op(const char *which, const char *name, const view *v, const opview *o) {
    char want[256];
    if (!o->op) return;
    snprintf(want, sizeof want, "name: %s\nschema: (none)\n", name);
    if (strcmp(v->text.p + o->state, want) != 0)
        violation("%s is found in the %s registry without def or registrations, but its state is:\n%s", name, which,
                  v->text.p + o->state);
}

/* (a): the live registry (view live_now) against the fresh one. */
static void check_against_fresh(void) {
    int i, slot, bk;
    if (!S.fresh || S.fresh_version != S.version) rebuild_fresh();
    if (S.fresh_view_build != S.fresh_builds) {
        take_view(S.fresh, &fresh_view);
        S.fresh_view_build = S.fresh_builds;
    }
    for (i = NOPS; i < NNAMES; i++)
        if (live_now.ops[i].op || fresh_view.ops[i].op)
            violation("dk_op_lookup finds %s, which nothing registered", name_of(i));
    for (i = 0; i < NOPS; i++) {
        const char *name = op_names[i];
        const opview *l = &live_now.ops[i], *f = &fresh_view.ops[i];
        const char *lt, *ft;
        if (!op_has_registration(i)) {
            check_empty_op("live", name, &live_now, l);
            check_empty_op("fresh", name, &fresh_view, f);
            continue;
        }
        if (!l->op || !f->op)
            violation("%s has a live registration but dk_op_lookup finds it in %s", name,
                      !l->op && !f->op ? "neither registry" : !l->op ? "the fresh registry only" : "the live registry only");
        if (strcmp(l->op->name, name) != 0) violation("dk_op_lookup(%s) gives an operator named %s", name, l->op->name);
        if (op_has_def(i) != (dk_op_schema(l->op) != NULL))
            violation("%s: the model says def=%d, the operator's schema is %s", name, op_has_def(i),
                      dk_op_schema(l->op) ? dk_op_schema(l->op) : "NULL");
        for (slot = 0; slot < DK_NUM_SLOTS; slot++)
            if (!same_kernel(l->slot[slot], f->slot[slot])) {
                char where[96];
                snprintf(where, sizeof where, "slot %d (%s)", slot, key_name(dk_slot_key(slot)));
                kernel_mismatch("the live table", name, where, l->slot[slot], f->slot[slot]);
            }
        for (bk = 0; bk <= DK_NUM_BACKENDS; bk++) {
            const char *bname = bk ? dk_backend_name((dk_backend)bk) : "(none)";
            if (l->mask_ks[bk] != f->mask_ks[bk]) {
                char a[1024], b[1024];
                dk_ks_to_string(dk_ks_raw(l->mask_ks[bk]), a, sizeof a);
                dk_ks_to_string(dk_ks_raw(f->mask_ks[bk]), b, sizeof b);
                violation("the fallthrough mask of %s for backend %s differs from a fresh registry's "
                          "(final keysets of dk_dispatch_kernel):\n  live:  %s (%llx)\n  fresh: %s (%llx)",
                          name, bname, a, (unsigned long long)l->mask_ks[bk], b, (unsigned long long)f->mask_ks[bk]);
            }
            if (!same_kernel(l->mask_k[bk], f->mask_k[bk])) {
                char where[96];
                snprintf(where, sizeof where, "dk_dispatch_kernel for backend %s", bname);
                kernel_mismatch("the kernel", name, where, l->mask_k[bk], f->mask_k[bk]);
            }
        }
        lt = live_now.text.p + l->state;
        ft = fresh_view.text.p + f->state;
        if (strcmp(lt, ft) != 0)
            violation("dk_op_state_to_string of %s differs from a fresh registry's:\n--- live:\n%s--- fresh:\n%s---", name,
                      lt, ft);
        lt = live_now.text.p + l->table;
        ft = fresh_view.text.p + f->table;
        if (strcmp(lt, ft) != 0)
            violation("dk_op_computed_table_to_string of %s differs from a fresh registry's:\n--- live:\n%s--- fresh:\n%s---",
                      name, lt, ft);
    }
}

/* ---- steps --------------------------------------------------------------------- */

typedef struct reader { const uint8_t *p; size_t n, i; } reader;
static unsigned rd(reader *r) { return r->i < r->n ? r->p[r->i++] : 0; }

#define BIT(st) (1u << (unsigned)(st))

/* The outcome of one registration call against the statuses the model allows
   (`allowed`: DK_OK alone, or the errors that apply). */
static void check_status(dk_status st, unsigned allowed, int fired) {
    if (fired) allowed |= BIT(DK_ERR_NO_MEMORY);
    if ((unsigned)st >= 32 || !(allowed & BIT(st))) {
        char exp[512];
        size_t n = 0;
        int s;
        exp[0] = '\0';
        for (s = 0; s < 32; s++)
            if (allowed & BIT(s)) n += (size_t)snprintf(exp + n, sizeof exp - n, "%s%s", n ? " or " : "", dk_status_message((dk_status)s));
        violation("status %s (%s), expected %s%s", dk_status_message(st), dk_last_error(), exp,
                  fired ? " (an allocation failure was injected)" : "");
    }
}

static int new_reg(int type, int op, const char *text, dk_key key, int kd, int lib) {
    mreg *g = &S.regs[S.nregs];
    memset(g, 0, sizeof *g);
    g->type = type;
    g->op = op;
    snprintf(g->text, sizeof g->text, "%s", text ? text : "");
    g->key = key;
    g->kd = kd;
    g->lib = lib;
    return S.nregs;
}

/* A registration succeeded: into the model, and appended to the fresh
   registry when that one is current (it is the newest registration). */
static void commit_reg(int id, dk_registration *h) {
    int current = S.fresh && S.fresh_version == S.version;
    S.regs[id].live = 1;
    S.regs[id].h = h;
    S.nregs = id + 1;
    S.version++;
    if (!current) return;
    replay_one(id);
    S.fresh_version = S.version;
    S.fresh_builds++;
    S.appends++;
}

static void schema_text(char *out, size_t n, const char *prefix, int sh, int variant) {
    if (variant == DEF_BAD_SCHEMA) snprintf(out, n, "%s%s(Tensor x -> Tensor", prefix, short_names[sh]);
    else if (variant == DEF_NO_SCHEMA) snprintf(out, n, "%s%s", prefix, short_names[sh]);
    else snprintf(out, n, "%s%s%s", prefix, short_names[sh], short_args[sh]);
}

/* The errors of a def of operator o (or 0 for a good one). */
static unsigned def_errors(int o, int variant) {
    if (variant == DEF_BAD_SCHEMA) return BIT(DK_ERR_BAD_SCHEMA);
    if (variant == DEF_NO_SCHEMA) return BIT(DK_ERR_BAD_NAME);
    return op_has_def(o) ? BIT(DK_ERR_DUPLICATE_DEF) : 0;
}

/* A key byte: the pool, or from 0xC0 on any runtime key (every slot's). */
static dk_key key_from_byte(unsigned b) {
    if (b < 0xC0) return keys[b % NKEYS].key;
    return dk_slot_key(1 + (int)((b - 0xC0) % (DK_NUM_SLOTS - 1)));
}

/* A valid key for a kernel (runtime, alias, or Undefined = catch-all). */
static int key_ok(dk_key key) {
    int i;
    for (i = 0; i < NKEYS; i++)
        if (keys[i].key == key) return keys[i].ok;
    return 1; /* a slot's runtime key */
}

static unsigned impl_errors(dk_key key, int kd) {
    unsigned e = 0;
    if (!key_ok(key)) e |= BIT(DK_ERR_BAD_KEY);
    if (!kd_ok_impl(kd)) e |= BIT(DK_ERR_BAD_KERNEL);
    return e;
}

static unsigned fallback_errors(dk_key key, int kd) {
    unsigned e = 0;
    int slots[DK_NUM_SLOTS], n, i;
    if (!key_ok(key) || key == DK_Undefined) e |= BIT(DK_ERR_BAD_KEY);
    if (!kd_ok_fallback(kd)) e |= BIT(DK_ERR_BAD_KERNEL);
    if (e & BIT(DK_ERR_BAD_KEY)) return e;
    n = fallback_slots(key, slots);
    if (n == 0) return e | BIT(DK_ERR_BAD_KEY);
    for (i = 0; i < n; i++)
        if (slot_taken(slots[i])) return e | BIT(DK_ERR_DUPLICATE_FALLBACK);
    return e;
}

/* A registration call's result: the handle rule, then the model. */
static void registration_result(dk_status st, unsigned errors, int fired, int id, dk_registration *h, int direct) {
    check_status(st, errors ? errors : BIT(DK_OK), fired);
    if (st != DK_OK) {
        if (direct && h) violation("a failed registration (%s) set its handle", dk_status_message(st));
        return;
    }
    if (direct && !h) violation("DK_OK without a handle");
    commit_reg(id, h);
}

static int pick_open_lib(unsigned byte) {
    return S.nopen ? S.open[byte % (unsigned)S.nopen] : -1;
}

static const char *status_name(dk_status st) { return st == DK_OK ? "OK" : dk_status_message(st); }

/* Runs one step; returns 1 when the step failed on purpose or by injection
   (the registry must then be unchanged), 0 otherwise. */
static int run_step(reader *in, int fired_out[1]) {
    unsigned op_byte = rd(in), ops[4], i;
    enum step kind = (enum step)(op_byte % NSTEPS);
    dk_registration *h = NULL;
    dk_status st = DK_OK;
    int injected = S.inject_pending, failed = 0;
    char text[96];
    for (i = 0; i < 4; i++) ops[i] = i < (unsigned)step_operands[kind] ? rd(in) : 0;
    S.inject_pending = 0;
    S.live_alloc.fired = 0;
    if (injected) {
        S.live_alloc.armed = 1;
        S.live_alloc.countdown = S.inject_n;
    }
    log_add("%3d: ", S.step);
#define ARMED_CALL(call) do { st = (call); S.live_alloc.armed = 0; } while (0)
    switch (kind) {
    case S_DEF: {
        int o = (int)(ops[0] % NOPS), variant = (int)(ops[1] % NDEF_VARIANTS), id;
        char prefix[8];
        snprintf(prefix, sizeof prefix, "%s::", ns_names[o / NSHORT]);
        schema_text(text, sizeof text, prefix, o % NSHORT, variant);
        id = new_reg(T_DEF, o, text, DK_Undefined, 0, -1);
        ARMED_CALL(h_def(S.live, text, &h));
        log_add("def \"%s\" -> %s\n", text, status_name(st));
        registration_result(st, def_errors(o, variant), S.live_alloc.fired, id, h, 1);
        break;
    }
    case S_IMPL:
    case S_FT_IMPL: {
        /* operator 0..5, or a malformed / NULL name */
        int o = (int)(ops[0] % (NOPS + 3)), id, kd;
        dk_key key = key_from_byte(ops[1]);
        const char *name = o < NOPS ? op_names[o] : o == NOPS ? "fz:a" : o == NOPS + 1 ? "fz::a(" : NULL;
        unsigned errors;
        if (kind == S_IMPL) kd = (int)(ops[2] % NKD);
        else kd = ops[2] % 8 == 7 ? KD_BAD_FALLTHROUGH : KD_FALLTHROUGH;
        errors = impl_errors(key, kd);
        if (o == NOPS || o == NOPS + 1) errors |= BIT(DK_ERR_BAD_NAME);
        if (!name) errors |= BIT(DK_ERR_NULL);
        id = new_reg(T_IMPL, o, name, key, kd, -1);
        ARMED_CALL(h_impl(S.live, name, key, make_desc(kd, &tags[id]), &h));
        log_add("impl %s%s%s @%s %s -> %s\n", name ? "\"" : "", name ? name : "NULL", name ? "\"" : "",
                key_name(key), kd_names[kd], status_name(st));
        registration_result(st, errors, S.live_alloc.fired, id, h, 1);
        break;
    }
    case S_FALLBACK:
    case S_FT_FALLBACK: {
        dk_key key = key_from_byte(ops[0]);
        int id, kd;
        if (kind == S_FALLBACK) kd = (int)(ops[1] % NKD);
        else kd = ops[1] % 8 == 7 ? KD_BAD_FALLTHROUGH : KD_FALLTHROUGH;
        id = new_reg(T_FALLBACK, -1, "", key, kd, -1);
        ARMED_CALL(h_fallback(S.live, key, make_desc(kd, &tags[id]), &h));
        log_add("fallback @%s %s -> %s\n", key_name(key), kd_names[kd], status_name(st));
        registration_result(st, fallback_errors(key, kd), S.live_alloc.fired, id, h, 1);
        break;
    }
    case S_DEREG: {
        int cand[MAX_REGS], n = 0, id;
        for (id = 0; id < S.nregs; id++)
            if (S.regs[id].live && S.regs[id].lib < 0) cand[n++] = id;
        if (!n) { log_add("deregister: no live handle, nothing done\n"); break; }
        id = cand[ops[0] % (unsigned)n];
        ARMED_CALL(dk_deregister(S.regs[id].h));
        log_add("deregister #%d (%s) -> %s\n", id, type_names[S.regs[id].type], status_name(st));
        check_status(st, BIT(DK_OK), S.live_alloc.fired);
        if (st == DK_OK) { S.regs[id].live = 0; S.version++; }
        break;
    }
    case S_DEREG_DEAD: {
        int cand[MAX_REGS], n = 0, id;
        for (id = 0; id < S.nregs; id++)
            if (!S.regs[id].live && S.regs[id].h) cand[n++] = id;
        if (!n) {
            ARMED_CALL(dk_deregister(NULL));
            log_add("deregister NULL -> %s\n", status_name(st));
        } else {
            id = cand[ops[0] % (unsigned)n];
            ARMED_CALL(dk_deregister(S.regs[id].h));
            log_add("deregister dead #%d (%s) -> %s\n", id, type_names[S.regs[id].type], status_name(st));
        }
        if (st != DK_ERR_BAD_HANDLE) violation("deregistering a dead handle: %s, expected %s", status_name(st),
                                               dk_status_message(DK_ERR_BAD_HANDLE));
        break;
    }
    case S_LIB_OPEN: {
        mlib *l = &S.libs[S.nlibs];
        unsigned errors = 0;
        int j;
        dk_library *lib = NULL;
        if (S.nopen == MAX_OPEN) { log_add("library open: %d open already, nothing done\n", MAX_OPEN); break; }
        memset(l, 0, sizeof *l);
        l->kind = (dk_library_kind)(ops[0] % 3);
        l->run = (ops[0] & 0x80) != 0;
        l->ns = (int)(ops[1] % 4);
        l->key = key_from_byte(ops[2]);
        if (l->kind != DK_LIBRARY_KIND_IMPL && !(ops[2] & 0x80)) l->key = DK_Undefined;
        if (l->ns == LNS_WILD && l->kind != DK_LIBRARY_KIND_IMPL) errors |= BIT(DK_ERR_WRONG_BLOCK);
        if (l->ns == LNS_BAD) errors |= BIT(DK_ERR_BAD_NAME);
        if (l->kind != DK_LIBRARY_KIND_IMPL && l->key != DK_Undefined) errors |= BIT(DK_ERR_BAD_KEY);
        if (l->kind == DK_LIBRARY_KIND_IMPL && !key_ok(l->key)) errors |= BIT(DK_ERR_BAD_KEY);
        if (l->kind == DK_LIBRARY_KIND_DEF)
            for (j = 0; j < S.nopen; j++)
                if (S.libs[S.open[j]].kind == DK_LIBRARY_KIND_DEF && S.libs[S.open[j]].ns == l->ns)
                    errors |= BIT(DK_ERR_DUPLICATE_LIBRARY);
        ARMED_CALL(h_lib_open(S.live, l, &lib));
        log_add("library %s L%d %s ns \"%s\" key %s -> %s\n", l->run ? "run" : "open", S.nlibs,
                lib_kind_names[l->kind],
                lib_ns_names[l->ns], key_name(l->key), status_name(st));
        check_status(st, errors ? errors : BIT(DK_OK), S.live_alloc.fired);
        if (st == DK_OK) {
            if (!lib) violation("library open: DK_OK without a library");
            l->open = 1;
            l->live = lib;
            S.open[S.nopen++] = S.nlibs++;
        }
        break;
    }
    case S_LIB_DEF:
    case S_LIB_IMPL: {
        int li = pick_open_lib(ops[0]), sh = (int)(ops[1] % NSHORT), qual = (int)(ops[1] / NSHORT % 3), ns, o, id;
        unsigned errors = 0;
        mlib *l;
        char prefix[8] = "";
        if (li < 0) { log_add("library %s: no open library, nothing done\n", kind == S_LIB_DEF ? "def" : "impl"); break; }
        l = &S.libs[li];
        /* qualified with the block's namespace (fz for _) or the other one */
        ns = l->ns < NNS ? l->ns : 0;
        if (qual == 2) ns = 1 - ns;
        if (qual) snprintf(prefix, sizeof prefix, "%s::", ns_names[ns]);
        if (qual && l->ns != LNS_WILD && ns != l->ns) errors |= BIT(DK_ERR_NAMESPACE_MISMATCH);
        if (!qual && l->ns == LNS_WILD) errors |= BIT(DK_ERR_BAD_NAME);
        o = op_index(ns, sh);
        if (kind == S_LIB_DEF) {
            int variant = (int)(ops[2] % NDEF_VARIANTS);
            schema_text(text, sizeof text, prefix, sh, variant);
            if (l->kind == DK_LIBRARY_KIND_IMPL) errors |= BIT(DK_ERR_WRONG_BLOCK);
            errors |= def_errors(o, variant);
            id = new_reg(T_DEF, o, text, DK_Undefined, 0, li);
            ARMED_CALL(dk_library_def(l->live, text));
            log_add("L%d def \"%s\" -> %s\n", li, text, status_name(st));
        } else {
            int kd = (int)(ops[3] % NKD);
            dk_key key = key_from_byte(ops[2]), eff = l->kind == DK_LIBRARY_KIND_IMPL ? l->key : key;
            snprintf(text, sizeof text, "%s%s", prefix, short_names[sh]);
            if (l->kind == DK_LIBRARY_KIND_IMPL && key != DK_Undefined && key != l->key) errors |= BIT(DK_ERR_KEY_MISMATCH);
            errors |= impl_errors(eff, kd);
            id = new_reg(T_IMPL, o, text, key, kd, li);
            ARMED_CALL(dk_library_impl(l->live, text, key, make_desc(kd, &tags[id])));
            log_add("L%d impl \"%s\" @%s %s -> %s\n", li, text, key_name(key), kd_names[kd], status_name(st));
        }
        registration_result(st, errors, S.live_alloc.fired, id, NULL, 0);
        break;
    }
    case S_LIB_FALLBACK: {
        int li = pick_open_lib(ops[0]), kd = (int)(ops[1] % NKD), id;
        unsigned errors = 0;
        mlib *l;
        if (li < 0) { log_add("library fallback: no open library, nothing done\n"); break; }
        l = &S.libs[li];
        if (l->kind != DK_LIBRARY_KIND_IMPL || l->ns != LNS_WILD) errors |= BIT(DK_ERR_WRONG_BLOCK);
        else errors = fallback_errors(l->key, kd);
        id = new_reg(T_FALLBACK, -1, "", l->key, kd, li);
        ARMED_CALL(dk_library_fallback(l->live, make_desc(kd, &tags[id])));
        log_add("L%d fallback %s -> %s\n", li, kd_names[kd], status_name(st));
        registration_result(st, errors, S.live_alloc.fired, id, NULL, 0);
        break;
    }
    case S_LIB_CLOSE: {
        int li = pick_open_lib(ops[0]), j;
        if (li < 0) { log_add("library close: no open library, nothing done\n"); break; }
        ARMED_CALL(dk_library_close(S.libs[li].live));
        log_add("library close L%d -> %s\n", li, status_name(st));
        check_status(st, BIT(DK_OK), S.live_alloc.fired);
        if (st != DK_OK) break;
        S.libs[li].open = 0;
        S.libs[li].live = NULL;
        for (j = 0; j < S.nopen; j++)
            if (S.open[j] == li) S.open[j] = S.open[--S.nopen];
        for (j = 0; j < S.nregs; j++)
            if (S.regs[j].lib == li && S.regs[j].live) { S.regs[j].live = 0; S.version++; }
        break;
    }
    case S_INJECT:
    default:
        S.inject_pending = 1;
        S.inject_n = ops[0] % 12;
        log_add("inject: the next step's allocation #%u fails\n", S.inject_n + 1);
        break;
    }
#undef ARMED_CALL
    S.live_alloc.armed = 0;
    fired_out[0] = S.live_alloc.fired;
    if (S.live_alloc.fired) log_add("     (the injected allocation failure happened)\n");
    failed = st != DK_OK;
    return failed;
}

/* ---- the entry point ------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int initialised;
    reader in;
    unsigned flags;
    if (!initialised) {
        const char *t = getenv("FUZZ_REGISTRY_TRACE");
        int o;
        trace = t && *t && strcmp(t, "0") != 0;
        for (o = 0; o < NOPS; o++)
            snprintf(op_names[o], sizeof op_names[o], "%s::%s", ns_names[o / NSHORT], short_names[o % NSHORT]);
        for (o = 0; o < DK_NUM_SLOTS; o++)
            if (dk_ks_slot(dk_ks_from_key(dk_slot_key(o))) != o) {
                fprintf(stderr, "fuzz_registry: slot %d does not round-trip through its key\n", o);
                abort();
            }
        initialised = 1;
    }
    {
        char *keep = S.log;
        size_t cap = S.log_cap;
        memset(&S, 0, sizeof S);
        S.log = keep;
        S.log_cap = cap;
        if (S.log) S.log[0] = '\0';
    }
    in.p = data;
    in.n = size;
    in.i = 0;
    flags = rd(&in);
    S.no_default_fallthroughs = (int)(flags & 1);
    S.fresh_version = -1;
    S.fresh_view_build = -1;
    S.live = new_registry(&S.live_alloc);
    take_view(S.live, &live_now);
    check_against_fresh();
    for (S.step = 0; S.step < MAX_STEPS && in.i < in.n; S.step++) {
        int fired = 0, failed;
        view t = live_before;
        live_before = live_now;   /* the state before this step */
        live_now = t;
        failed = run_step(&in, &fired);
        take_view(S.live, &live_now);
        if (failed) check_unchanged(&live_before, &live_now);   /* (b) */
        check_against_fresh();                                   /* (a) */
    }
    if (!(flags & 2)) {
        /* teardown: close the libraries, deregister the rest; every operator
           must end up empty, as in a fresh registry */
        int i;
        log_add("teardown: close every library, deregister every handle\n");
        for (i = 0; i < S.nlibs; i++)
            if (S.libs[i].open) {
                dk_status st = dk_library_close(S.libs[i].live);
                if (st != DK_OK) violation("closing L%d at the end: %s", i, dk_status_message(st));
                S.libs[i].open = 0;
            }
        for (i = 0; i < S.nregs; i++) {
            dk_status st;
            if (!S.regs[i].live) continue;
            S.regs[i].live = 0;
            if (S.regs[i].lib >= 0) continue;
            if ((st = dk_deregister(S.regs[i].h)) != DK_OK)
                violation("deregistering #%d at the end: %s", i, dk_status_message(st));
        }
        S.version++;
        take_view(S.live, &live_now);
        check_against_fresh();
    }
    if (trace)
        fprintf(stderr, "%d steps, %d registrations; the fresh registry was rebuilt %ld times, extended %ld times\n",
                S.step, S.nregs, S.rebuilds, S.appends);
    destroy_registry(&S.live, &S.live_alloc, "live");
    destroy_registry(&S.fresh, &S.fresh_alloc, "fresh");
    return 0;
}
