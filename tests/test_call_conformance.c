/* make: flags=-DDK_PRESET_TORCH_1_13_1 args=tests/conformance/calls-1.13.1.txt args=tests/conformance/tables-1.13.1.txt */
/* Call conformance with the real libtorch 1.13.1.

   Built with DK_PRESET_TORCH_1_13_1; reads the vectors that
   tests/conformance/gen_calls.cpp recorded from real calls through libtorch
   1.13.1's c10::Dispatcher (argv[1], default
   tests/conformance/calls-1.13.1.txt; format in tests/conformance/README.md,
   section "Call conformance vectors") and the registration details of the same
   combinations from tests/conformance/tables-1.13.1.txt (argv[2]): the BASE|
   block (libtorch's own backend fallbacks), the ERROR records and the
   operator schemas.

   For every COMBO it builds one registry (created with
   no_default_fallthroughs, then the BASE| fallbacks with their exact debug
   strings), replays the combination with dk__def / dk__impl / dk__fallback and
   then makes every CALL line's call through dispatch.h's real call path
   (DK_DECLARE_OP's cop_call) with the input's keyset and the mode's
   thread-local state forced with dk_guard_force. Every kernel and fallback we
   register returns its own registration line; failures come through the
   registry's call-error hook.

     test_call_outcomes  which registration ran, or which error (status and the
                         first 60 characters of the message, normalised as the
                         vectors are);
     test_call_keys      key=: the highest key of the final dispatch keyset
                         (dk_explain under the same forced TLS);
     test_basecall       BASECALL lines: an operator with no kernels, only the
                         built-in fallbacks (outcome and key).

   Registrations the vectors mark as failed in c10 must fail here too
   (DK_ERR_DUPLICATE_FALLBACK). Deliberate difference: c10 registers an alias
   fallback one runtime key at a time and keeps the keys before the failing one
   (combo 68); dispatch.h is all-or-nothing. CALL lines whose c10 outcome is
   such a partially applied failed fallback are not compared (counted and
   printed). The include_tracer calls ("# skipped" lines) were never made by
   the generator and are ignored.

   Where c10 1.13.1's live table was stale (CompositeImplicitAutograd
   registered before CompositeExplicitAutograd: combos 25-32 and 60, the LIVE|
   lines whose stored value differs from the recomputed one), c10 did not
   recompute the Autograd* and NestedTensor* slots (nor their fallthrough bits)
   after the CEA registration, and its real calls ran the stale slots.
   dispatch.h recomputes every slot, as test_table_conformance expects. The
   project's rule: where c10's live table is stale, the recomputed table's
   answer is the truth. The vectors say so: every CALL line of such a
   combination carries recomputed= / recomputed_key=, c10's own answer after
   replaying the same registrations in an order it handles correctly, and the
   tests compare against those there (and against the live answer everywhere
   else). They also check that the vectors flag exactly the combinations whose
   LIVE| lines show a stale slot, that every line where the two answers differ
   is explained by such a slot, and that there are such lines. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vectors.h"

static const char *calls_path = "tests/conformance/calls-1.13.1.txt";
static const char *tables_path = "tests/conformance/tables-1.13.1.txt";

#define MAX_CALLS 8192
#define MIN_CALLS 2000
#define MSG_LEN 60 /* the vectors keep the first 60 characters of a message */

/* ---- the operator and its kernels --------------------------------------------- */

typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(cop, int, t.ks, (tensor, t))

static const int builtin_fallback = -1; /* a BASE| fallback that is not a fallthrough ran */

static int kernel_ran;          /* how many of our kernels / fallbacks ran in this call */
static dk_keyset kernel_ks;     /* the keyset the last one received */

static int unboxed_kernel(const dk_kernel *k, dk_keyset ks, tensor t) {
    (void)t;
    kernel_ran++;
    kernel_ks = ks;
    return *(const int *)k->user_data;
}

/* A typed call that reaches a boxed fallback of an operator without boxing
   adapters hands it the call's argument pack (cop_args) in the stack. */
static void boxed_fallback(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    cop_args *args = (cop_args *)stack->unboxed_args;
    (void)op;
    kernel_ran++;
    kernel_ks = ks;
    if (!args) fail_msg("boxed fallback %s: no argument pack on the stack", k->debug);
    args->result = *(const int *)k->user_data;
}

/* The call-error hook. */
static dk_status call_status;
static char call_message[1024];
static int call_errors;

static void error_hook(const dk_operator *op, dk_keyset ks, dk_status status, const char *message, void *user_data) {
    (void)op; (void)ks; (void)user_data;
    call_errors++;
    call_status = status;
    snprintf(call_message, sizeof call_message, "%s", message ? message : "");
}

/* ---- the parsed vectors ----------------------------------------------------------- */

typedef struct {
    int id;                         /* 0 for BASECALL */
    int file_line;
    const char *input, *mode;
    uint64_t ks, inc, exc;
    const char *outcome;            /* the answer compared: recomputed= if present, else <outcome> */
    const char *key;                /* the same: recomputed_key= if present, else key= */
    const char *live_outcome;       /* c10's live answer: <outcome> ("<line>" or "error:<msg>") */
    const char *live_key;           /* after "key=" */
    int recomputed;                 /* the line has recomputed= / recomputed_key= */
} call_line;

static char *calls_text;
static call_line *calls;
static int n_calls, n_basecalls, n_skipped;

static combo *combo_by_id(int id) {
    int i;
    for (i = 0; i < n_combos; i++)
        if (combos[i].id == id) return &combos[i];
    return NULL;
}

/* "CALL <id> <input> <mode> <ks> <inc> <exc> <outcome> key=<Key>[ recomputed=<outcome> recomputed_key=<Key>]" */
static void parse_call(char *line, int file_line, int is_base) {
    char *f[12], *s;
    int n;
    call_line *l;
    n = split_fields(line, f, 12, &s);
    if (n < 9 || s) fail_msg("line %d: a %s line needs 9 fields (11 with recomputed=)", file_line,
                             is_base ? "BASECALL" : "CALL");
    if (after(f[8 + (n > 9)], "then=")) fail_msg("line %d: then= on a line that was not skipped", file_line);
    if (n != 9 && n != 11) fail_msg("line %d: %d fields", file_line, n);
    assert_true(n_calls < MAX_CALLS);
    l = &calls[n_calls++];
    l->id = atoi(f[1]);
    l->file_line = file_line;
    l->input = f[2];
    l->mode = f[3];
    l->ks = hex(f[4]);
    l->inc = hex(f[5]);
    l->exc = hex(f[6]);
    l->live_outcome = f[7];
    l->live_key = after(f[8], "key=");
    if (!l->live_key) fail_msg("line %d: no key= field", file_line);
    l->outcome = l->live_outcome;
    l->key = l->live_key;
    if (n == 11) {
        l->recomputed = 1;
        l->outcome = after(f[9], "recomputed=");
        l->key = after(f[10], "recomputed_key=");
        if (!l->outcome || !l->key || !*l->outcome || !*l->key)
            fail_msg("line %d: fields 10 and 11 must be recomputed=<outcome> recomputed_key=<Key>", file_line);
        if (is_base) fail_msg("line %d: recomputed= on a BASECALL line", file_line);
    }
    if (is_base != (l->id == 0)) fail_msg("line %d: BASECALL lines have id 0, CALL lines do not", file_line);
    if (is_base) {
        n_basecalls++;
    } else {
        combo *c = combo_by_id(l->id);
        if (!c) fail_msg("line %d: CALL for combo %d, which tables-1.13.1.txt does not have", file_line, l->id);
        c->n_calls++;
        c->n_recomputed += l->recomputed;
    }
}

static void load_calls(void) {
    char *p, *line;
    combo *c = NULL;
    int file_line = 0;
    calls_text = read_all(calls_path, "pass the call vectors as argv[1]");
    calls = (call_line *)calloc(MAX_CALLS, sizeof *calls);
    assert_non_null(calls);
    p = calls_text;
    while ((line = next_line(&p)) != NULL) {
        const char *v;
        file_line++;
        if (line[0] == '\0') continue;
        if ((v = after(line, "# registration ")) != NULL) {
            const char *end = strstr(v, " threw");
            int i, found = 0;
            assert_non_null(c);
            assert_non_null(end);
            for (i = 0; i < c->n_regs; i++)
                if (strlen(c->regs[i].token) == (size_t)(end - v) && strncmp(c->regs[i].token, v, (size_t)(end - v)) == 0) {
                    c->regs[i].threw = 1;
                    found = 1;
                }
            if (!found) fail_msg("line %d: unknown registration in '%s'", file_line, line);
        } else if (after(line, "# skipped ")) {
            n_skipped++;
        } else if ((v = after(line, "# stale: combo ")) != NULL) {
            assert_non_null(c);
            if (atoi(v) != c->id) fail_msg("line %d: '# stale: combo %d' under COMBO %d", file_line, atoi(v), c->id);
            c->stale_comment++;
        } else if (line[0] == '#') {
            continue;
        } else if ((v = after(line, "COMBO ")) != NULL) {
            const char *sp = strchr(v, ' ');
            assert_non_null(sp);
            c = combo_by_id(atoi(v));
            if (!c) fail_msg("line %d: combo %d is not in tables-1.13.1.txt", file_line, atoi(v));
            c->calls_regs_text = sp + 1;
        } else if (after(line, "BASECALL ")) {
            parse_call(line, file_line, 1);
        } else if (after(line, "CALL ")) {
            assert_non_null(c);
            parse_call(line, file_line, 0);
            if (calls[n_calls - 1].id != c->id)
                fail_msg("line %d: CALL for combo %d under COMBO %d", file_line, calls[n_calls - 1].id, c->id);
        } else {
            fail_msg("unexpected line %d in the call vectors: '%s'", file_line, line);
        }
    }
}

/* c10 1.13.1 did not recompute some slots after a later registration: the
   LIVE| lines whose stored value differs from the recomputed one
   (CompositeImplicitAutograd registered before CompositeExplicitAutograd,
   combos 25-32 and 60: the Autograd* and NestedTensor* slots keep the math
   kernel, and their fallthrough bits stay non-fallthrough). Real calls ran
   those stale slots. */
static int has_stale_live_line(const combo *c) {
    int i;
    for (i = 0; i < c->n_live; i++)
        if (strcmp(c->live[i].live, c->live[i].computed) != 0) return 1;
    return 0;
}

/* Returns the stale LIVE line that accounts for c10's live answer of l (the
   stale slot at c10's live key ran it), or NULL. *no_live_line is set when
   c10's key has no LIVE line (AutogradXLA: the same stale math kernel). */
static const live_line *stale_slot(const combo *c, const call_line *l, int *no_live_line) {
    const live_line *any = NULL;
    int i;
    *no_live_line = 0;
    for (i = 0; i < c->n_live; i++)
        if (strcmp(c->live[i].live, c->live[i].computed) != 0 && !any) any = &c->live[i];
    if (!any) return NULL;
    for (i = 0; i < c->n_live; i++)
        if (strcmp(c->live[i].key, l->live_key) == 0)
            return strcmp(c->live[i].live, c->live[i].computed) != 0 && strcmp(c->live[i].live, l->live_outcome) == 0
                       ? &c->live[i] : NULL;
    if ((after(l->live_key, "Autograd") || strstr(l->live_key, "NestedTensor")) &&
        strcmp(l->live_outcome, any->live) == 0) {
        *no_live_line = 1;
        return any;
    }
    return NULL;
}

/* The call vectors flag (recomputed= on every CALL line, one "# stale:" line)
   exactly the combinations whose LIVE| lines in the tables show a stale slot,
   and every CALL line whose live answer differs from the recomputed one ran
   such a stale slot in c10. */
static void check_stale_combo(const combo *c) {
    const int stale = has_stale_live_line(c);
    int j;
    if (stale != (c->n_recomputed > 0))
        fail_msg("combo %d: the tables %s a stale LIVE| slot, but %d of its CALL lines have recomputed=", c->id,
                 stale ? "show" : "do not show", c->n_recomputed);
    if (c->n_recomputed && c->n_recomputed != c->n_calls)
        fail_msg("combo %d: only %d of its %d CALL lines have recomputed=", c->id, c->n_recomputed, c->n_calls);
    if (c->stale_comment != stale)
        fail_msg("combo %d: %d '# stale: combo %d' lines, expected %d", c->id, c->stale_comment, c->id, stale);
    for (j = 0; j < n_calls; j++) {
        const call_line *l = &calls[j];
        int no_live_line;
        if (l->id != c->id || !l->recomputed) continue;
        if (strcmp(l->live_outcome, l->outcome) == 0 && strcmp(l->live_key, l->key) == 0) continue;
        if (!stale_slot(c, l, &no_live_line))
            fail_msg("line %d (combo %d): live %s key=%s, recomputed %s key=%s, but no stale LIVE| slot ran %s",
                     l->file_line, c->id, l->live_outcome, l->live_key, l->outcome, l->key, l->live_outcome);
    }
}

/* Both files describe the same combinations and the same failed registrations. */
static void check_vectors_agree(void) {
    int i, j;
    for (i = 0; i < n_combos; i++) {
        combo *c = &combos[i];
        if (!c->calls_regs_text) fail_msg("combo %d has no COMBO line in the call vectors", c->id);
        if (strcmp(c->regs_text, c->calls_regs_text) != 0)
            fail_msg("combo %d: the COMBO lines differ:\n  tables: %s\n  calls:  %s", c->id, c->regs_text,
                     c->calls_regs_text);
        for (j = 0; j < c->n_regs; j++)
            if (c->regs[j].failed != c->regs[j].threw)
                fail_msg("combo %d: %s: tables says failed=%d, calls says threw=%d", c->id, c->regs[j].token,
                         c->regs[j].failed, c->regs[j].threw);
        check_stale_combo(c);
    }
}

/* ---- one call ----------------------------------------------------------------------------- */

typedef enum { O_LINE, O_NO_KERNEL, O_NO_TENSOR, O_FALLTHROUGH, O_AMBIGUOUS, O_COUNT } outcome_class;
static const char *const class_names[O_COUNT] = { "kernel line", "Could not run", "no tensor arguments",
                                                  "fallthrough executed", "ambiguous AutogradOther" };

static outcome_class classify(const call_line *l) {
    const char *m = after(l->outcome, "error:");
    if (!m) {
        if (atoi(l->outcome) <= 0) fail_msg("line %d: unexpected outcome '%s'", l->file_line, l->outcome);
        return O_LINE;
    }
    if (after(m, "Could_not_run_")) return O_NO_KERNEL;
    if (after(m, "There_were_no_tensor_arguments")) return O_NO_TENSOR;
    if (after(m, "fallthrough_kernel_was_executed")) return O_FALLTHROUGH;
    if (strstr(m, "_has_kernels_registered_to_both_")) return O_AMBIGUOUS;
    fail_msg("line %d: unknown error outcome '%s'", l->file_line, l->outcome);
    return O_COUNT;
}

/* The vectors' normalisation: c10's internal-assert prefix removed, the first
   60 characters kept, spaces, tabs and newlines replaced by '_'. */
static void normalise(const char *msg, char *out) {
    const char *ia = strstr(msg, " INTERNAL ASSERT FAILED at ");
    size_t i;
    if (ia) {
        const char *tail = strstr(ia, "please report a bug to PyTorch. ");
        if (tail) msg = tail + strlen("please report a bug to PyTorch. ");
    }
    for (i = 0; i < MSG_LEN && msg[i]; i++)
        out[i] = (msg[i] == ' ' || msg[i] == '\t' || msg[i] == '\n') ? '_' : msg[i];
    out[i] = '\0';
}

typedef struct {
    int result;                 /* what cop_call returned */
    int ran;                    /* how many of our kernels / fallbacks ran */
    dk_keyset ran_ks;
    int errors;                 /* call-error hook invocations */
    dk_status status;
    char message[MSG_LEN + 1];  /* normalised */
    dk_explanation e;
} our_call;

static void do_call(const dk_operator *op, const call_line *l, our_call *o) {
    tensor t;
    dk_guard g;
    memset(o, 0, sizeof *o);
    t.ks = dk_ks_raw(l->ks);
    kernel_ran = 0;
    kernel_ks = dk_ks_raw(0);
    call_errors = 0;
    call_status = DK_OK;
    call_message[0] = '\0';
    g = dk_guard_force(dk_ks_raw(l->inc), dk_ks_raw(l->exc));
    assert_true(dk_tls_included().repr == l->inc && dk_tls_excluded().repr == l->exc);
    o->result = cop_call(op, t);
    assert_int_equal(dk_explain(op, t.ks, &o->e), DK_OK);
    dk_guard_pop(g);
    o->ran = kernel_ran;
    o->ran_ks = kernel_ks;
    o->errors = call_errors;
    o->status = call_status;
    normalise(call_message, o->message);
}

static const char *where(const call_line *l) {
    static char b[128];
    snprintf(b, sizeof b, "line %d (combo %d, %s, %s%s)", l->file_line, l->id, l->input, l->mode,
             l->recomputed ? ", c10's recomputed answer" : "");
    return b;
}

/* Compares the outcome of one call; returns 1 if it matches. */
static int compare_outcome(const call_line *l, const our_call *o, outcome_class cls) {
    static const dk_status want_status[O_COUNT] = { DK_OK, DK_ERR_NO_KERNEL, DK_ERR_NO_KERNEL,
                                                    DK_ERR_FALLTHROUGH_CALLED, DK_ERR_AMBIGUOUS_AUTOGRAD_OTHER };
    if (cls == O_LINE) {
        int want = atoi(l->outcome);
        if (o->errors) {
            mismatch("%s: c10 ran registration %d, dispatch.h failed: %s (%s...)", where(l), want,
                     dk_status_message(o->status), o->message);
            return 0;
        }
        if (o->ran != 1 || o->result != want) {
            mismatch("%s: c10 ran registration %d, dispatch.h ran %d kernel(s) returning %d%s", where(l), want,
                     o->ran, o->result, o->result == builtin_fallback ? " (a built-in fallback)" : "");
            return 0;
        }
        if (o->ran_ks.repr != o->e.final.repr) {
            mismatch("%s: the kernel received keyset %llx, dk_explain's final keyset is %llx", where(l),
                     (unsigned long long)o->ran_ks.repr, (unsigned long long)o->e.final.repr);
            return 0;
        }
        return 1;
    }
    if (o->errors != 1 || o->ran != 0) {
        mismatch("%s: c10 failed with %s, dispatch.h ran %d kernel(s) (result %d) and reported %d error(s)",
                 where(l), l->outcome, o->ran, o->result, o->errors);
        return 0;
    }
    if (o->status != want_status[cls]) {
        mismatch("%s: c10 failed with %s, dispatch.h status %s, expected %s", where(l), l->outcome,
                 dk_status_message(o->status), dk_status_message(want_status[cls]));
        return 0;
    }
    if (strcmp(o->message, after(l->outcome, "error:")) != 0) {
        mismatch("%s: message\n  c10:        %s\n  dispatch.h: %s", where(l), after(l->outcome, "error:"),
                 o->message);
        return 0;
    }
    if (o->result != 0) {
        mismatch("%s: a failed call returned %d, not a zero-filled result", where(l), o->result);
        return 0;
    }
    return 1;
}

static int compare_key(const call_line *l, const our_call *o) {
    const char *ours = dk_key_name(dk_ks_highest_key(o->e.final));
    if (!ours || strcmp(ours, l->key) != 0) {
        mismatch("%s: key: c10 %s, dispatch.h %s (final keyset %llx)", where(l), l->key, ours ? ours : "(null)",
                 (unsigned long long)o->e.final.repr);
        return 0;
    }
    return 1;
}

/* Is the c10 outcome of this CALL a failed registration that c10 kept in part? */
static const reg *partial_outcome(const combo *c, const call_line *l) {
    int i;
    if (after(l->outcome, "error:")) return NULL;
    for (i = 0; i < c->n_regs; i++)
        if (c->regs[i].partial && atoi(l->outcome) == c->regs[i].line) return &c->regs[i];
    return NULL;
}

/* ---- the tests ---------------------------------------------------------------------------------- */

typedef struct {
    int compared, matched;
    int by_class[O_COUNT];
    int partial_skipped;
    int stale_checked;          /* lines with recomputed=: compared against c10's recomputed answer */
    int stale_differ;           /* ... of which c10's live answer (this aspect) differs from it */
    char stale_combos[256];
} stats;

/* A line checked against c10's recomputed answer (its combination's live table
   was stale); differ: c10's live answer for this aspect was different. */
static void note_stale(stats *st, const call_line *l, int differ) {
    char id[16];
    st->stale_checked++;
    st->stale_differ += differ;
    snprintf(id, sizeof id, " %d", l->id);
    if (!strstr(st->stale_combos, id) && strlen(st->stale_combos) + strlen(id) < sizeof st->stale_combos)
        strcat(st->stale_combos, id);
}

typedef enum { ASPECT_OUTCOME, ASPECT_KEY } aspect;

typedef struct {
    aspect what;
    stats *st;
} run;

/* Makes the calls of combination c on its replayed operator op. */
static void check_calls(const combo *c, dk_operator *op, void *ctx) {
    const aspect what = ((run *)ctx)->what;
    stats *st = ((run *)ctx)->st;
    int j, skipped_here = 0;
    for (j = 0; j < n_calls; j++) {
        const call_line *l = &calls[j];
        const reg *pr;
        our_call o;
        outcome_class cls;
        if (l->id != c->id) continue;
        cls = classify(l);
        do_call(op, l, &o);
        if (what == ASPECT_OUTCOME) {
            if ((pr = partial_outcome(c, l)) != NULL) {
                /* c10 ran the half-registered fallback; ours was rejected whole */
                skipped_here++;
                if (o.ran && o.result == pr->line)
                    mismatch("%s: dispatch.h ran the rejected registration %s", where(l), pr->token);
                continue;
            }
            if (compare_outcome(l, &o, cls)) st->matched++;
            if (l->recomputed) note_stale(st, l, strcmp(l->live_outcome, l->outcome) != 0);
        } else {
            /* key= depends only on the keysets and the fallthrough masks, which
               a non-fallthrough fallback (even a half-registered one) leaves alone */
            if (compare_key(l, &o)) st->matched++;
            if (l->recomputed) note_stale(st, l, strcmp(l->live_key, l->key) != 0);
        }
        st->compared++;
        st->by_class[cls]++;
    }
    if (skipped_here)
        printf("combo %d: %d CALL lines ran c10's partially registered failed fallback: not compared\n", c->id,
               skipped_here);
    st->partial_skipped += skipped_here;
}

static void run_combos(aspect what, stats *st) {
    run ctx;
    memset(st, 0, sizeof *st);
    ctx.what = what;
    ctx.st = st;
    replay_all(check_calls, &ctx);
}

static void print_summary(const char *name, const stats *st) {
    printf("%s: %d CALL lines compared, %d match (%s %d, %s %d, %s %d, %s %d, %s %d); %d skipped (partial c10 "
           "fallback, combo 68); %d failed registrations checked; %d include_tracer lines ignored\n",
           name, st->compared, st->matched, class_names[O_LINE], st->by_class[O_LINE], class_names[O_NO_KERNEL],
           st->by_class[O_NO_KERNEL], class_names[O_NO_TENSOR], st->by_class[O_NO_TENSOR],
           class_names[O_FALLTHROUGH], st->by_class[O_FALLTHROUGH], class_names[O_AMBIGUOUS],
           st->by_class[O_AMBIGUOUS], st->partial_skipped, failed_regs_checked, n_skipped);
    printf("%s: %d lines where c10 1.13.1's live table was stale: checked against c10's recomputed answer "
           "(combos%s; on %d of them c10's live answer differs)\n",
           name, st->stale_checked, st->stale_combos[0] ? st->stale_combos : " -", st->stale_differ);
    if (st->compared != st->matched) printf("%s: %d mismatches\n", name, st->compared - st->matched);
}

static void test_call_outcomes(void **state) {
    stats st;
    (void)state;
    run_combos(ASPECT_OUTCOME, &st);
    print_summary("test_call_outcomes", &st);
    assert_int_equal(mismatches, 0);
    assert_true(st.compared >= MIN_CALLS);
    assert_int_equal(st.matched, st.compared);
    assert_true(st.partial_skipped >= 1);
    assert_true(failed_regs_checked >= 1);
    assert_true(st.by_class[O_LINE] > 0 && st.by_class[O_NO_KERNEL] > 0 && st.by_class[O_NO_TENSOR] > 0 &&
                st.by_class[O_FALLTHROUGH] > 0 && st.by_class[O_AMBIGUOUS] > 0);
    /* the vectors really contain c10 1.13.1's stale-table behaviour, and
       dispatch.h gives the recomputed answer there (no mismatch above) */
    assert_true(st.stale_checked > 0);
    assert_true(st.stale_differ > 0);
}

static void test_call_keys(void **state) {
    stats st;
    (void)state;
    run_combos(ASPECT_KEY, &st);
    print_summary("test_call_keys", &st);
    assert_int_equal(mismatches, 0);
    assert_true(st.compared >= MIN_CALLS);
    assert_int_equal(st.matched, st.compared);
    assert_true(st.stale_checked > 0);
    assert_true(st.stale_differ > 0);
}

static void test_basecall(void **state) {
    dk_registry *r = new_registry();
    const dk_operator *op = def_base_op(r);
    stats st;
    int j;
    (void)state;
    memset(&st, 0, sizeof st);
    mismatches = 0;
    for (j = 0; j < n_calls; j++) {
        const call_line *l = &calls[j];
        our_call o;
        outcome_class cls;
        int ok;
        if (l->id != 0) continue;
        cls = classify(l);
        do_call(op, l, &o);
        ok = compare_outcome(l, &o, cls);
        ok &= compare_key(l, &o);
        st.matched += ok;
        st.compared++;
        st.by_class[cls]++;
    }
    printf("test_basecall: %d BASECALL lines compared (outcome and key), %d match (%s %d, %s %d)\n", st.compared,
           st.matched, class_names[O_NO_KERNEL], st.by_class[O_NO_KERNEL], class_names[O_NO_TENSOR],
           st.by_class[O_NO_TENSOR]);
    dk_registry_destroy(r);
    assert_int_equal(mismatches, 0);
    assert_int_equal(st.compared, n_basecalls);
    assert_true(st.compared >= 33); /* 11 inputs x 3 modes */
    assert_int_equal(st.matched, st.compared);
}

static int setup(void **state) {
    (void)state;
    load_tables(tables_path, "pass the tables vectors as argv[2]");
    load_calls();
    check_vectors_agree();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free_tables();
    free(calls_text);
    free(calls);
    calls_text = NULL;
    calls = NULL;
    n_calls = n_basecalls = n_skipped = 0;
    return 0;
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_call_outcomes),
        cmocka_unit_test(test_call_keys),
        cmocka_unit_test(test_basecall),
    };
    (void)cop_redispatch; /* declared by DK_DECLARE_OP; only cop_call is used (clang's -Wunused-function) */
    replay_kernels.unboxed = DK_FN(unboxed_kernel);
    replay_kernels.boxed = boxed_fallback;
    replay_kernels.base_user_data = (void *)&builtin_fallback;
    replay_kernels.call_error = error_hook;
    if (argc > 1) calls_path = argv[1];
    if (argc > 2) tables_path = argv[2];
    return cmocka_run_group_tests_name("dispatch calls: conformance with libtorch 1.13.1", tests, setup, teardown);
}
