/* make: variants=2_11 */
/* Thread-local guards in every order. A push flips bits and a pop flips the
   same bits back, so (the promise of >>tls):
     - whenever every guard pushed after some moment has been popped, in
       whatever order, the state is exactly the state of that moment;
     - properly nested use gives c10's state at every step.
   Checked for every sequence of two and of three guards (pushes in every
   order, pops in every order, pushes and pops interleaved in every way) over
   include / exclude / force guards and the helpers, with keys that overlap
   each other and the defaults, from several starting states. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

typedef enum { INCLUDE, EXCLUDE, FORCE, BELOW_AUTOGRAD, BELOW_INPLACE_VIEW, SKIP_FUNCTIONALIZE } kind;
typedef struct spec { const char *name; kind kind; dk_keyset a, b; } spec;

#define K(k) dk_ks_from_key(DK_##k)
#define K2(k1, k2) dk_ks_or(K(k1), K(k2))
static spec specs[12];
static int num_specs;

static void make_specs(void) {
    spec s[] = {
        { "include(Tracer)", INCLUDE, { 0 }, { 0 } },
        { "include(Tracer, BackendSelect)", INCLUDE, { 0 }, { 0 } },   /* BackendSelect: included by default */
        { "include(AutogradCPU)", INCLUDE, { 0 }, { 0 } },             /* a backend bit too */
        { "exclude(Tracer)", EXCLUDE, { 0 }, { 0 } },
        { "exclude(Tracer, AutocastCPU)", EXCLUDE, { 0 }, { 0 } },     /* AutocastCPU: excluded by default */
        { "exclude(AutogradCPU)", EXCLUDE, { 0 }, { 0 } },
        { "below_autograd", BELOW_AUTOGRAD, { 0 }, { 0 } },
        { "below_inplace_view", BELOW_INPLACE_VIEW, { 0 }, { 0 } },
        { "skip_functionalize", SKIP_FUNCTIONALIZE, { 0 }, { 0 } },
        { "force(empty, FULL)", FORCE, { 0 }, { 0 } },
        { "force({Tracer, AutogradCPU}, {AutocastCPU})", FORCE, { 0 }, { 0 } },
        { "force(defaults)", FORCE, { 0 }, { 0 } },
    };
    s[0].a = K(Tracer);
    s[1].a = K2(Tracer, BackendSelect);
    s[2].a = K(AutogradCPU);
    s[3].a = K(Tracer);
    s[4].a = K2(Tracer, AutocastCPU);
    s[5].a = K(AutogradCPU);
    s[6].a = DK_KS_AUTOGRAD;
    s[7].a = DK_KS_AUTOGRAD_WITH_INPLACE_VIEW;
    s[8].a = K(Functionalize);
    s[9].a = DK_KS_EMPTY; s[9].b = DK_KS_FULL;
    s[10].a = K2(Tracer, AutogradCPU); s[10].b = K(AutocastCPU);
    s[11].a = DK_KS_DEFAULT_INCLUDED; s[11].b = DK_KS_DEFAULT_EXCLUDED;
    num_specs = (int)(sizeof s / sizeof s[0]);
    memcpy(specs, s, sizeof s);
}

static dk_guard push(const spec *s) {
    switch (s->kind) {
    case INCLUDE: return dk_guard_include(s->a);
    case EXCLUDE: return dk_guard_exclude(s->a);
    case FORCE: return dk_guard_force(s->a, s->b);
    case BELOW_AUTOGRAD: return dk_guard_below_autograd();
    case BELOW_INPLACE_VIEW: return dk_guard_below_inplace_view();
    default: return dk_guard_skip_functionalize();
    }
}

/* ---- models of c10's guards, for properly nested use --------------------- */

typedef struct tls { uint64_t inc, exc; } tls;
static tls now(void) {
    tls s;
    s.inc = dk_tls_included().repr;
    s.exc = dk_tls_excluded().repr;
    return s;
}
static int same(tls a, tls b) { return a.inc == b.inc && a.exc == b.exc; }

/* One model frame: what the guard's destructor needs. */
typedef struct frame { tls saved; uint64_t delta; } frame;

/* c10 exactly (LocalDispatchKeySet.cpp): delta = ks - set, with c10's minus,
   which keeps ks's backend bits; the destructor removes delta's
   functionality bits only (set - delta), so a backend bit stays behind. */
static uint64_t c10_minus(uint64_t a, uint64_t b) { return a & (DK_KS_BACKENDS.repr | ~b); }
static frame c10_push(tls *m, const spec *s) {
    frame f;
    f.saved = *m;
    f.delta = 0;
    switch (s->kind) {
    case INCLUDE: f.delta = c10_minus(s->a.repr, m->inc); m->inc |= f.delta; break;
    case FORCE: m->inc = s->a.repr; m->exc = s->b.repr; break;
    default: {
        uint64_t ks = s->kind == EXCLUDE ? s->a.repr : s->kind == BELOW_AUTOGRAD ? DK_KS_AUTOGRAD.repr
                      : s->kind == BELOW_INPLACE_VIEW ? DK_KS_AUTOGRAD_WITH_INPLACE_VIEW.repr : K(Functionalize).repr;
        f.delta = c10_minus(ks, m->exc);
        m->exc |= f.delta;
    }
    }
    return f;
}
static void c10_pop(tls *m, const spec *s, frame f) {
    if (s->kind == FORCE) *m = f.saved;
    else if (s->kind == INCLUDE) m->inc = c10_minus(m->inc, f.delta);
    else m->exc = c10_minus(m->exc, f.delta);
}

/* c10's semantics with the documented difference (docs/c10.md, "Differences from
   c10"): backend bits are bits like any other, so a pop removes exactly the
   bits its push added. */
static frame bitwise_push(tls *m, const spec *s) {
    frame f;
    f.saved = *m;
    f.delta = 0;
    switch (s->kind) {
    case INCLUDE: f.delta = s->a.repr & ~m->inc; m->inc |= f.delta; break;
    case FORCE: m->inc = s->a.repr; m->exc = s->b.repr; break;
    default: {
        uint64_t ks = s->kind == EXCLUDE ? s->a.repr : s->kind == BELOW_AUTOGRAD ? DK_KS_AUTOGRAD.repr
                      : s->kind == BELOW_INPLACE_VIEW ? DK_KS_AUTOGRAD_WITH_INPLACE_VIEW.repr : K(Functionalize).repr;
        f.delta = ks & ~m->exc;
        m->exc |= f.delta;
    }
    }
    return f;
}
static void bitwise_pop(tls *m, const spec *s, frame f) {
    if (s->kind == FORCE) *m = f.saved;
    else if (s->kind == INCLUDE) m->inc &= ~f.delta;
    else m->exc &= ~f.delta;
}

/* ---- sequences ----------------------------------------------------------- */

/* An event: guard g pushed (pop = 0) or popped (pop = 1). Guards are pushed
   in index order; which spec each guard has ranges over every tuple, so every
   push order is covered. */
typedef struct event { int g, pop; } event;
#define MAX_EVENTS 6
static event orders[64][MAX_EVENTS];
static int num_orders;

/* Every interleaving of n pushes (in order) and n pops (any order, each after its push). */
static void gen_orders(int n, event *seq, int len, int pushed, unsigned popped) {
    int g;
    if (len == 2 * n) {
        memcpy(orders[num_orders++], seq, sizeof(event) * (size_t)len);
        return;
    }
    if (pushed < n) {
        seq[len].g = pushed; seq[len].pop = 0;
        gen_orders(n, seq, len + 1, pushed + 1, popped);
    }
    for (g = 0; g < pushed; g++)
        if (!(popped & (1u << g))) {
            seq[len].g = g; seq[len].pop = 1;
            gen_orders(n, seq, len + 1, pushed, popped | (1u << g));
        }
}

static long sequences_run, nested_steps_checked, restore_points_checked, out_of_order_sequences;

static void describe(const int *which, int n, const event *ev, char *buf, size_t size) {
    int i;
    size_t len = 0;
    for (i = 0; i < 2 * n; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s %s", i ? ", " : "", ev[i].pop ? "pop" : "push",
                                specs[which[ev[i].g]].name);
}

/* Runs one sequence from the current state and checks every step. */
static void run_sequence(const int *which, int n, const event *ev) {
    dk_guard guards[3];
    frame c10f[3], bwf[3];
    tls snap[MAX_EVENTS + 1], c10m = now(), bwm = now();
    int pushed_at[3], popped_at[3], stack[3], depth = 0, nested = 1, t, c, g, i;
    char what[512];
    uint64_t fmask = ~DK_KS_BACKENDS.repr;
    snap[0] = now();
    for (c = 0; c < 2 * n; c++) {
        const event *e = &ev[c];
        const spec *s = &specs[which[e->g]];
        if (!e->pop) {
            guards[e->g] = push(s);
            pushed_at[e->g] = c;
            popped_at[e->g] = -1;
            stack[depth++] = e->g;
            if (nested) {
                c10f[e->g] = c10_push(&c10m, s);
                bwf[e->g] = bitwise_push(&bwm, s);
            }
        } else {
            dk_guard_pop(guards[e->g]);
            popped_at[e->g] = c;
            if (stack[depth - 1] != e->g) nested = 0;
            for (i = 0; i < depth && stack[i] != e->g; i++) {}
            assert_true(i < depth);
            for (; i + 1 < depth; i++) stack[i] = stack[i + 1];
            depth--;
            if (nested) {
                c10_pop(&c10m, s, c10f[e->g]);
                bitwise_pop(&bwm, s, bwf[e->g]);
            }
        }
        snap[c + 1] = now();
        /* properly nested so far: c10's state at this step */
        if (nested) {
            if (!same(snap[c + 1], bwm) || (snap[c + 1].inc & fmask) != (c10m.inc & fmask) ||
                (snap[c + 1].exc & fmask) != (c10m.exc & fmask)) {
                describe(which, n, ev, what, sizeof what);
                fail_msg("not c10's state after step %d of: %s", c + 1, what);
            }
            nested_steps_checked++;
        }
        /* every moment t after which every pushed guard is popped again: back to that moment's state */
        for (t = 0; t <= c; t++) {
            int all_popped = 1;
            for (g = 0; g < n; g++)
                if (pushed_at[g] >= t && pushed_at[g] <= c && !(popped_at[g] >= 0 && popped_at[g] <= c))
                    all_popped = 0;
            /* also: guards already live at t have not been popped since */
            for (g = 0; g < n; g++)
                if (pushed_at[g] < t && popped_at[g] >= t && popped_at[g] <= c) all_popped = 0;
            if (!all_popped) continue;
            if (!same(snap[c + 1], snap[t])) {
                describe(which, n, ev, what, sizeof what);
                fail_msg("state after step %d is not the state after step %d, in: %s", c + 1, t, what);
            }
            restore_points_checked++;
        }
    }
    if (!nested) out_of_order_sequences++;
    assert_true(same(now(), snap[0]));
    sequences_run++;
}

static void start_state(int which) {
    switch (which) {
    case 0: dk_tls_set_included(DK_KS_DEFAULT_INCLUDED); dk_tls_set_excluded(DK_KS_DEFAULT_EXCLUDED); break;
    case 1:
        dk_tls_set_included(dk_ks_or(DK_KS_DEFAULT_INCLUDED, K2(Tracer, AutogradCPU)));
        dk_tls_set_excluded(dk_ks_or(DK_KS_DEFAULT_EXCLUDED, K2(Python, AutogradCPU)));
        break;
    default: dk_tls_set_included(DK_KS_FULL); dk_tls_set_excluded(DK_KS_EMPTY); break;
    }
}

static void run_all(int n) {
    event seq[MAX_EVENTS];
    int which[3] = { 0, 0, 0 }, o, st, combos = 1, c, i;
    num_orders = 0;
    gen_orders(n, seq, 0, 0, 0);
    for (i = 0; i < n; i++) combos *= num_specs;
    for (st = 0; st < 3; st++) {
        tls initial;
        start_state(st);
        initial = now();
        for (c = 0; c < combos; c++) {
            int x = c;
            for (i = 0; i < n; i++) { which[i] = x % num_specs; x /= num_specs; }
            for (o = 0; o < num_orders; o++) {
                run_sequence(which, n, orders[o]);
                assert_true(same(now(), initial));
            }
        }
    }
    dk_tls_set_included(DK_KS_DEFAULT_INCLUDED);
    dk_tls_set_excluded(DK_KS_DEFAULT_EXCLUDED);
    assert_true(dk_tls_is_default());
}

static void test_two_guards_every_order(void **state) {
    (void)state;
    make_specs();
    sequences_run = nested_steps_checked = restore_points_checked = out_of_order_sequences = 0;
    run_all(2);
    printf("  %ld sequences (%d orders of push/pop x %d x %d guards x 3 start states), %ld out of order; "
           "%ld nested steps equal to c10, %ld restore points exact\n", sequences_run, num_orders, num_specs,
           num_specs, out_of_order_sequences, nested_steps_checked, restore_points_checked);
    assert_int_equal(num_orders, 3);
    assert_int_equal(sequences_run, 3L * 3 * 12 * 12);
}

static void test_three_guards_every_order(void **state) {
    (void)state;
    make_specs();
    sequences_run = nested_steps_checked = restore_points_checked = out_of_order_sequences = 0;
    run_all(3);
    printf("  %ld sequences (%d orders of push/pop x %d^3 guards x 3 start states), %ld out of order; "
           "%ld nested steps equal to c10, %ld restore points exact\n", sequences_run, num_orders, num_specs,
           out_of_order_sequences, nested_steps_checked, restore_points_checked);
    assert_int_equal(num_orders, 15);
    assert_int_equal(sequences_run, 3L * 15 * 12 * 12 * 12);
}

/* The two reports of issue 10, spelled out. */
static void test_reported_orders(void **state) {
    dk_guard inc, force;
    (void)state;
    /* include, force, pop include, pop force */
    inc = dk_guard_include(K(Tracer));
    force = dk_guard_force(DK_KS_EMPTY, DK_KS_EMPTY);
    dk_guard_pop(inc);
    dk_guard_pop(force);
    assert_false(dk_tls_is_included(DK_Tracer));
    assert_true(dk_tls_is_default());
    /* force, include, pop force, pop include */
    force = dk_guard_force(DK_KS_EMPTY, DK_KS_EMPTY);
    inc = dk_guard_include(K(Tracer));
    dk_guard_pop(force);
    dk_guard_pop(inc);
    assert_false(dk_tls_is_included(DK_Tracer));
    assert_true(dk_tls_is_default());
    /* c10, nested: including what is included changes nothing, and its pop leaves it included */
    inc = dk_guard_include(K(BackendSelect));
    assert_true(inc.included_delta == 0 && inc.excluded_delta == 0);
    dk_guard_pop(inc);
    assert_true(dk_tls_is_included(DK_BackendSelect));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reported_orders),
        cmocka_unit_test(test_two_guards_every_order),
        cmocka_unit_test(test_three_guards_every_order),
    };
    return cmocka_run_group_tests_name("guards in every order", tests, NULL, NULL);
}
