/* Dispatch-table conformance with the real libtorch 1.13.1.

   Built with DK_PRESET_TORCH_1_13_1; reads the vectors that
   tests/conformance/gen_tables.cpp recorded from libtorch 1.13.1 (path in
   argv[1], format in tests/conformance/README.md, section "Dispatch-table
   conformance vectors"). For every COMBO it builds a fresh registry, registers
   the built-in backend fallbacks of the BASE| block with their exact debug
   strings, replays the combination's registrations with the debug strings
   "registered at combo.cpp:<N>", and compares:

     test_computed_tables  dk_op_dump_computed_table with the "| " lines, byte
                           for byte (and the BASE| block with an operator that
                           has no kernels);
     test_dump_state       dk_op_dump_state with the "S| " lines; only the text
                           after " :: " on kernel lines is normalised (c10
                           prints the inferred C++ schema and "[ boxed unboxed ]",
                           dispatch.h ":: (none)" and its own kernel record);
     test_live_tables      the live table op->table[slot] with the THIRD column
                           of every LIVE| line (c10's recomputed answer), which
                           is also where c10 1.13.1 had stale slots.

   Every test also checks the registration results: a registration the vectors
   record as ERROR must fail (DK_ERR_DUPLICATE_FALLBACK for the duplicate
   fallback errors, with c10's message) and leave the operator unchanged; every
   other one must succeed.

   Deliberate difference: c10 registers an alias fallback one runtime key at a
   time and keeps the keys before a failing one (combo 68); dispatch.h is
   all-or-nothing. A combo whose table shows effects of a failed registration
   is not compared with c10's table or its LIVE lines for that registration;
   the test checks instead that the failed call changed nothing, and that our
   table is c10's table without the lines of the failed registration. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *vectors_path = "tests/conformance/tables-1.13.1.txt";

#define MAX_BASE 64
#define MAX_COMBOS 256
#define MAX_REGS 16
#define MAX_TABLE 256
#define MAX_STATE 32
#define MAX_LIVE 32
#define MIN_COMBOS 60

/* ---- the parsed vectors ---------------------------------------------------- */

typedef enum { K_DEF, K_IMPL, K_CATCHALL, K_FALLTHROUGH, K_FALLBACK, K_FALLTHROUGH_FALLBACK } reg_kind;

typedef struct {
    const char *token;     /* "impl:CPU@14001" */
    reg_kind kind;
    char key[64];          /* "-" for def and catchall */
    int line;              /* N of "registered at combo.cpp:N" */
    int failed;            /* an ERROR line names this token */
    const char *error;     /* its first E| line */
    int partial;           /* c10 failed, but the table shows its effects */
} reg;

typedef struct { const char *key, *live, *computed; } live_line;

typedef struct {
    int id;
    reg regs[MAX_REGS];
    int n_regs;
    const char *table[MAX_TABLE];   /* "| " lines without the prefix */
    int n_table;
    const char *state[MAX_STATE];   /* "S| " lines without the prefix */
    int n_state;
    live_line live[MAX_LIVE];
    int n_live;
    const char *name, *schema;      /* from "S| name: " and "S| schema: " */
} combo;

static char *text;                  /* the whole file, lines NUL-terminated */
static const char *base[MAX_BASE];  /* "BASE| " lines without the prefix */
static int n_base;
static combo *combos;
static int n_combos;

static const char *after(const char *s, const char *prefix) {
    size_t n = strlen(prefix);
    return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

static reg_kind parse_kind(const char *s, size_t n) {
    static const char *const names[] = { "def", "impl", "catchall", "fallthrough", "fallback",
                                         "fallthrough_fallback" };
    int i;
    for (i = 0; i < 6; i++)
        if (strlen(names[i]) == n && strncmp(names[i], s, n) == 0) return (reg_kind)i;
    fail_msg("unknown registration kind in '%s'", s);
    return K_DEF;
}

/* "def:-@1000,impl:CPU@1001": tokens are kept as pointers into the line. */
static void parse_regs(combo *c, char *list) {
    char *tok = list;
    while (tok && *tok) {
        char *comma = strchr(tok, ','), *colon, *at;
        reg *g;
        if (comma) *comma = '\0';
        assert_true(c->n_regs < MAX_REGS);
        g = &c->regs[c->n_regs++];
        memset(g, 0, sizeof *g);
        g->token = tok;
        colon = strchr(tok, ':');
        at = strrchr(tok, '@');
        assert_non_null(colon);
        assert_non_null(at);
        assert_true(at > colon && (size_t)(at - colon - 1) < sizeof g->key);
        g->kind = parse_kind(tok, (size_t)(colon - tok));
        memcpy(g->key, colon + 1, (size_t)(at - colon - 1));
        g->key[at - colon - 1] = '\0';
        g->line = atoi(at + 1);
        tok = comma ? comma + 1 : NULL;
    }
}

static void load_vectors(void) {
    FILE *fp = fopen(vectors_path, "rb");
    long size;
    char *p, *end;
    combo *c = NULL;
    reg *last_error = NULL;
    if (!fp) fail_msg("cannot open the vectors '%s' (pass the path as argv[1])", vectors_path);
    assert_int_equal(fseek(fp, 0, SEEK_END), 0);
    size = ftell(fp);
    assert_true(size > 0);
    rewind(fp);
    text = (char *)malloc((size_t)size + 1);
    combos = (combo *)calloc(MAX_COMBOS, sizeof *combos);
    assert_non_null(text);
    assert_non_null(combos);
    assert_int_equal(fread(text, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    text[size] = '\0';

    for (p = text, end = text + size; p < end; ) {
        char *nl = strchr(p, '\n'), *line = p;
        const char *v;
        if (nl) *nl = '\0';
        p = nl ? nl + 1 : end;
        if (line[0] == '#' || line[0] == '\0') continue;
        if ((v = after(line, "BASE| ")) != NULL) {
            assert_true(n_base < MAX_BASE);
            base[n_base++] = v;
        } else if ((v = after(line, "COMBO ")) != NULL) {
            char *sp = strchr(line + 6, ' ');
            assert_null(c);
            assert_true(n_combos < MAX_COMBOS);
            assert_non_null(sp);
            c = &combos[n_combos++];
            c->id = atoi(v);
            parse_regs(c, sp + 1);
            last_error = NULL;
        } else if ((v = after(line, "ERROR ")) != NULL) {
            int i;
            assert_non_null(c);
            last_error = NULL;
            for (i = 0; i < c->n_regs; i++)
                if (strcmp(c->regs[i].token, v) == 0) last_error = &c->regs[i];
            if (!last_error) fail_msg("combo %d: ERROR names an unknown token '%s'", c->id, v);
            last_error->failed = 1;
        } else if ((v = after(line, "E| ")) != NULL) {
            assert_non_null(last_error);
            if (!last_error->error) last_error->error = v;
        } else if ((v = after(line, "| ")) != NULL) {
            assert_non_null(c);
            assert_true(c->n_table < MAX_TABLE);
            c->table[c->n_table++] = v;
        } else if ((v = after(line, "S| ")) != NULL) {
            const char *w;
            assert_non_null(c);
            assert_true(c->n_state < MAX_STATE);
            c->state[c->n_state++] = v;
            if ((w = after(v, "name: ")) != NULL) c->name = w;
            if ((w = after(v, "schema: ")) != NULL) c->schema = w;
        } else if ((v = after(line, "LIVE| ")) != NULL) {
            live_line *l;
            char *s1, *s2;
            assert_non_null(c);
            assert_true(c->n_live < MAX_LIVE);
            l = &c->live[c->n_live++];
            s1 = strchr(line + 6, ' ');
            assert_non_null(s1);
            s2 = strchr(s1 + 1, ' ');
            assert_non_null(s2);
            *s1 = *s2 = '\0';
            l->key = v;
            l->live = s1 + 1;
            l->computed = s2 + 1;
        } else if (strcmp(line, "END") == 0) {
            int i, j;
            assert_non_null(c);
            if (!c->name || !c->schema) fail_msg("combo %d: no S| name: / schema: line", c->id);
            /* A failed registration whose debug string appears in c10's table
               was partially applied by c10. */
            for (i = 0; i < c->n_regs; i++) {
                char needle[64];
                if (!c->regs[i].failed) continue;
                snprintf(needle, sizeof needle, "registered at combo.cpp:%d [", c->regs[i].line);
                for (j = 0; j < c->n_table; j++)
                    if (strstr(c->table[j], needle)) c->regs[i].partial = 1;
            }
            c = NULL;
        } else {
            fail_msg("unexpected line in the vectors: '%s'", line);
        }
    }
    assert_null(c);
    assert_true(n_base > 0);
}

static void free_vectors(void) {
    free(text);
    free(combos);
    text = NULL;
    combos = NULL;
    n_base = n_combos = 0;
}

static int combo_partial(const combo *c) {
    int i;
    for (i = 0; i < c->n_regs; i++)
        if (c->regs[i].partial) return 1;
    return 0;
}

/* ---- helpers ---------------------------------------------------------------- */

static void dummy_unboxed(void) {}
static void dummy_boxed(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k; (void)op; (void)ks; (void)stack;
}

static int warnings;
static void quiet_log(int is_error, const char *message, void *user_data) {
    (void)message; (void)user_data;
    if (!is_error) warnings++; /* "Overriding a previously registered kernel": c10 printed it too */
    else fprintf(stderr, "dispatch.h error: %s\n", message);
}

static dk_key key_of(const char *name) {
    dk_key k = DK_Undefined;
    if (dk_key_parse(name, &k) != DK_OK) fail_msg("dk_key_parse('%s') failed: %s", name, dk_last_error());
    return k;
}

static char *dump_table(const dk_operator *op) {
    int n = dk_op_dump_computed_table(op, NULL, 0);
    char *b = (char *)malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(dk_op_dump_computed_table(op, b, (size_t)n + 1), n);
    return b;
}

static char *dump_state(const dk_operator *op) {
    int n = dk_op_dump_state(op, NULL, 0);
    char *b = (char *)malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(dk_op_dump_state(op, b, (size_t)n + 1), n);
    return b;
}

/* The lines joined with '\n', each followed by '\n'; skip_debug: leave out
   the lines containing that text (NULL: none). */
static char *join(const char *const *lines, int n, const char *skip) {
    size_t len = 1;
    int i;
    char *b, *q;
    for (i = 0; i < n; i++) len += strlen(lines[i]) + 1;
    b = q = (char *)malloc(len);
    assert_non_null(b);
    for (i = 0; i < n; i++) {
        size_t l = strlen(lines[i]);
        if (skip && strstr(lines[i], skip)) continue;
        memcpy(q, lines[i], l);
        q += l;
        *q++ = '\n';
    }
    *q = '\0';
    return b;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static int mismatches;
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void mismatch(const char *fmt, ...) {
    va_list ap;
    if (mismatches++ < 20) {
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
    }
}

/* Reports the first differing line of two dumps. */
static void report_diff(int id, const char *what, const char *expected, const char *got) {
    int line = 1;
    const char *e = expected, *g = got;
    while (*e && *e == *g) {
        if (*e == '\n') line++;
        e++; g++;
    }
    {
        const char *es = e, *gs = g;
        int el, gl;
        while (es > expected && es[-1] != '\n') es--;
        while (gs > got && gs[-1] != '\n') gs--;
        el = (int)strcspn(es, "\n");
        gl = (int)strcspn(gs, "\n");
        mismatch("combo %d: %s differs at line %d\n  c10:        %.*s\n  dispatch.h: %.*s", id, what, line, el, es,
                 gl, gs);
    }
}

/* ---- building a registry ----------------------------------------------------- */

/* "Key: [fallthrough ]registered at <file>:<line> [backend fallback]" */
static void register_base(dk_registry *r) {
    int i;
    for (i = 0; i < n_base; i++) {
        const char *s = base[i], *colon = strstr(s, ": "), *rest, *close, *lc;
        char key[64], file[256];
        int ft = 0, line;
        size_t fl;
        dk_registration *h = NULL;
        dk_status st;
        assert_non_null(colon);
        assert_true((size_t)(colon - s) < sizeof key);
        memcpy(key, s, (size_t)(colon - s));
        key[colon - s] = '\0';
        rest = colon + 2;
        if (after(rest, "fallthrough ")) { ft = 1; rest += strlen("fallthrough "); }
        rest = after(rest, "registered at ");
        assert_non_null(rest);
        close = strstr(rest, " [backend fallback]");
        assert_non_null(close);
        lc = close;
        while (lc > rest && *lc != ':') lc--;
        assert_true(*lc == ':');
        fl = (size_t)(lc - rest);
        assert_true(fl < sizeof file);
        memcpy(file, rest, fl);
        file[fl] = '\0';
        line = atoi(lc + 1);
        st = dk__fallback(r, key_of(key), ft ? dk_fallthrough() : dk_boxed(dummy_boxed, NULL), file, line, &h,
                          DK_CONFIG_SIGNATURE);
        if (st != DK_OK) fail_msg("BASE fallback '%s': %s", base[i], dk_last_error());
    }
}

static dk_registry *new_registry(void) {
    dk_registry_desc desc;
    dk_registry *r = NULL;
    memset(&desc, 0, sizeof desc);
    desc.log = quiet_log;
    desc.no_default_fallthroughs = 1; /* libtorch's own fallbacks come from the BASE lines */
    assert_int_equal(dk_registry_create(&desc, &r), DK_OK);
    register_base(r);
    return r;
}

static dk_status replay_one(dk_registry *r, const combo *c, const reg *g) {
    dk_registration *h = NULL;
    switch (g->kind) {
    case K_DEF:
        return dk__def(r, c->schema, "combo.cpp", g->line, &h, DK_CONFIG_SIGNATURE);
    case K_IMPL:
        return dk__impl(r, c->name, key_of(g->key), dk_unboxed(DK_FN(dummy_unboxed), NULL), "combo.cpp", g->line,
                        &h, DK_CONFIG_SIGNATURE);
    case K_CATCHALL:
        return dk__impl(r, c->name, DK_Undefined, dk_unboxed(DK_FN(dummy_unboxed), NULL), "combo.cpp", g->line, &h,
                        DK_CONFIG_SIGNATURE);
    case K_FALLTHROUGH:
        return dk__impl(r, c->name, key_of(g->key), dk_fallthrough(), "combo.cpp", g->line, &h,
                        DK_CONFIG_SIGNATURE);
    case K_FALLBACK:
        return dk__fallback(r, key_of(g->key), dk_boxed(dummy_boxed, NULL), "combo.cpp", g->line, &h,
                            DK_CONFIG_SIGNATURE);
    case K_FALLTHROUGH_FALLBACK:
        return dk__fallback(r, key_of(g->key), dk_fallthrough(), "combo.cpp", g->line, &h, DK_CONFIG_SIGNATURE);
    }
    return DK_ERR_BAD_ARGUMENT;
}

static int errors_checked;

/* Replays every registration of c; checks each result against the vectors. */
static dk_operator *replay(dk_registry *r, const combo *c) {
    int i;
    for (i = 0; i < c->n_regs; i++) {
        const reg *g = &c->regs[i];
        dk_operator *op = dk_op_lookup(r, c->name);
        char *t0 = NULL, *s0 = NULL;
        dk_status st;
        if (g->failed) {
            assert_non_null(op); /* the def comes first */
            t0 = dump_table(op);
            s0 = dump_state(op);
        }
        st = replay_one(r, c, g);
        if (!g->failed) {
            if (st != DK_OK)
                mismatch("combo %d: %s failed (%s) but c10 accepted it", c->id, g->token, dk_last_error());
            continue;
        }
        errors_checked++;
        if (st == DK_OK) {
            mismatch("combo %d: %s succeeded but c10 failed: %s", c->id, g->token, g->error ? g->error : "");
        } else if (g->error && after(g->error, "Tried to register multiple backend fallbacks")) {
            if (st != DK_ERR_DUPLICATE_FALLBACK)
                mismatch("combo %d: %s gave %s, expected DK_ERR_DUPLICATE_FALLBACK", c->id, g->token,
                         dk_status_str(st));
            if (strcmp(dk_last_error(), g->error) != 0)
                mismatch("combo %d: %s message\n  c10:        %s\n  dispatch.h: %s", c->id, g->token, g->error,
                         dk_last_error());
        }
        if (st != DK_OK) {
            char *t1 = dump_table(op), *s1 = dump_state(op);
            if (strcmp(t0, t1) != 0) report_diff(c->id, "table after a failed registration", t0, t1);
            if (strcmp(s0, s1) != 0) report_diff(c->id, "state after a failed registration", s0, s1);
            free(t1);
            free(s1);
        }
        free(t0);
        free(s0);
    }
    {
        dk_operator *op = dk_op_lookup(r, c->name);
        if (!op) fail_msg("combo %d: operator %s not found after its def", c->id, c->name);
        return op;
    }
}

typedef struct {
    int combos, lines, partial, stale_fixed;
} stats;

typedef void (*combo_check)(const combo *c, dk_operator *op, stats *st);

static stats run_all(combo_check check) {
    stats st;
    int i;
    memset(&st, 0, sizeof st);
    mismatches = 0;
    errors_checked = 0;
    for (i = 0; i < n_combos; i++) {
        const combo *c = &combos[i];
        dk_registry *r = new_registry();
        dk_operator *op = replay(r, c);
        check(c, op, &st);
        dk_registry_destroy(r);
    }
    return st;
}

/* ---- computed tables ------------------------------------------------------------ */

static void check_table(const combo *c, dk_operator *op, stats *st) {
    char *got = dump_table(op);
    int i;
    if (!combo_partial(c)) {
        char *want = join(c->table, c->n_table, NULL);
        if (strcmp(want, got) != 0) report_diff(c->id, "dumpComputedTable", want, got);
        st->combos++;
        st->lines += c->n_table;
        free(want);
    } else {
        /* c10 kept part of a failed alias fallback; dispatch.h is all-or-nothing
           (the failed call changed nothing, checked in replay). Our table must be
           c10's without the lines of the failed registration. */
        for (i = 0; i < c->n_regs; i++) {
            char needle[64], *want;
            int kept;
            if (!c->regs[i].partial) continue;
            snprintf(needle, sizeof needle, "registered at combo.cpp:%d [", c->regs[i].line);
            want = join(c->table, c->n_table, needle);
            kept = count_lines(want);
            printf("combo %d: c10 applied the failed %s partially (%d of its slots kept); dispatch.h is "
                   "all-or-nothing: compared with c10's table minus those %d lines\n",
                   c->id, c->regs[i].token, c->n_table - kept, c->n_table - kept);
            if (strcmp(want, got) != 0) report_diff(c->id, "dumpComputedTable (without the partial fallback)", want,
                                                    got);
            st->lines += kept;
            free(want);
        }
        st->partial++;
    }
    free(got);
}

static void test_computed_tables(void **state) {
    stats st;
    (void)state;
    /* The BASE| block itself: an operator with no kernels. */
    {
        dk_registry *r = new_registry();
        dk_registration *h = NULL;
        char *want = join(base, n_base, NULL), *got;
        assert_int_equal(dk__def(r, "base::op(Tensor a) -> Tensor", "combo.cpp", 0, &h, DK_CONFIG_SIGNATURE), DK_OK);
        got = dump_table(dk_op_lookup(r, "base::op"));
        mismatches = 0;
        if (strcmp(want, got) != 0) report_diff(0, "BASE| block", want, got);
        assert_int_equal(mismatches, 0);
        free(want);
        free(got);
        dk_registry_destroy(r);
    }
    st = run_all(check_table);
    printf("test_computed_tables: %d combos compared byte for byte, %d combo(s) with a partial c10 failure "
           "treated separately, %d table lines compared (+%d BASE), %d failed registrations checked\n",
           st.combos, st.partial, st.lines, n_base, errors_checked);
    assert_int_equal(mismatches, 0);
    assert_true(st.combos >= MIN_COMBOS);
    assert_true(st.partial >= 1);
    assert_true(errors_checked >= 1);
}

/* ---- dumpState ------------------------------------------------------------------ */

/* Kernel lines: everything after " :: " becomes a placeholder; returns a new
   joined dump. If bad_ours is given, counts the kernel lines whose ":: ..."
   part is none of dispatch.h's forms ("(none) [ unboxed ]", "(none) [ boxed ]",
   "(none) [ fallthrough boxed ]"). */
static char *normalise_state(const char *dump, int *bad_ours) {
    size_t n = strlen(dump);
    char *b = (char *)malloc(n + 32 * (size_t)(count_lines(dump) + 1) + 1), *q = b;
    const char *p = dump;
    assert_non_null(b);
    while (*p) {
        size_t l = strcspn(p, "\n");
        const char *sep = NULL, *s;
        int header = after(p, "name: ") || after(p, "schema: ") || after(p, "debug: ") ||
                     after(p, "alias analysis kind: ");
        for (s = p; !header && s + 4 <= p + l; s++)
            if (strncmp(s, " :: ", 4) == 0) { sep = s; break; }
        if (sep) {
            if (bad_ours) {
                size_t tl = (size_t)(p + l - (sep + 4));
                if (!((tl == strlen("(none) [ unboxed ]") && strncmp(sep + 4, "(none) [ unboxed ]", tl) == 0) ||
                      (tl == strlen("(none) [ boxed ]") && strncmp(sep + 4, "(none) [ boxed ]", tl) == 0) ||
                      (tl == strlen("(none) [ fallthrough boxed ]") &&
                       strncmp(sep + 4, "(none) [ fallthrough boxed ]", tl) == 0)))
                    (*bad_ours)++;
            }
            memcpy(q, p, (size_t)(sep - p));
            q += sep - p;
            memcpy(q, " :: <signature and kernel state>", 32);
            q += 32;
        } else {
            memcpy(q, p, l);
            q += l;
        }
        p += l;
        if (*p == '\n') { *q++ = '\n'; p++; }
    }
    *q = '\0';
    return b;
}

static void check_state(const combo *c, dk_operator *op, stats *st) {
    char *want_raw = join(c->state, c->n_state, NULL), *got_raw = dump_state(op);
    int bad = 0;
    char *want = normalise_state(want_raw, NULL), *got = normalise_state(got_raw, &bad);
    if (strcmp(want, got) != 0) report_diff(c->id, "dumpState (normalised)", want, got);
    if (bad) mismatch("combo %d: %d kernel lines of ours have an unexpected ':: ...' part:\n%s", c->id, bad, got_raw);
    st->combos++;
    st->lines += c->n_state;
    free(want_raw);
    free(got_raw);
    free(want);
    free(got);
}

static void test_dump_state(void **state) {
    stats st;
    (void)state;
    st = run_all(check_state);
    printf("test_dump_state: %d combos compared, %d S| lines compared (text after \" :: \" normalised on kernel "
           "lines)\n", st.combos, st.lines);
    assert_int_equal(mismatches, 0);
    assert_true(st.combos >= MIN_COMBOS);
}

/* ---- live tables ------------------------------------------------------------------- */

/* Does kernel k match a LIVE| classification? */
static int live_matches(const dk_kernel *k, const char *want) {
    char debug[64];
    if (strcmp(want, "fallthrough") == 0) return k->kind == DK_KERNEL_FALLTHROUGH;
    if (strcmp(want, "ambiguous") == 0) return k->kind == DK_KERNEL_AMBIGUOUS;
    if (strcmp(want, "missing") == 0) return k->kind == DK_KERNEL_MISSING;
    if (strcmp(want, "other") == 0) /* a built-in non-fallthrough fallback */
        return k->kind == DK_KERNEL_FUNCTION && k->is_fallback && !strstr(k->debug, "combo.cpp:");
    snprintf(debug, sizeof debug, "registered at combo.cpp:%d", atoi(want));
    return k->kind == DK_KERNEL_FUNCTION && strcmp(k->debug, debug) == 0;
}

static const char *kind_name(const dk_kernel *k) {
    switch (k->kind) {
    case DK_KERNEL_FUNCTION: return k->debug;
    case DK_KERNEL_FALLTHROUGH: return "fallthrough";
    case DK_KERNEL_AMBIGUOUS: return "ambiguous";
    case DK_KERNEL_MISSING: return "missing";
    }
    return "?";
}

static void check_live(const combo *c, dk_operator *op, stats *st) {
    int i, j, skipped = 0;
    for (i = 0; i < c->n_live; i++) {
        const live_line *l = &c->live[i];
        int slot = dk_key_table_index(key_of(l->key)), partial = 0;
        const dk_kernel *k = op->table[slot], *computed;
        const char *reason;
        for (j = 0; j < c->n_regs; j++)
            if (c->regs[j].partial && atoi(l->computed) == c->regs[j].line) partial = 1;
        /* our invariant: the live slot is the recomputed one */
        computed = dk_op_compute_slot(op, slot, &reason);
        if (computed != k)
            mismatch("combo %d: %s: live slot (%s) != dk_op_compute_slot (%s)", c->id, l->key, kind_name(k),
                     kind_name(computed));
        if (partial) {
            /* c10's answer comes from the partially applied failed fallback */
            skipped++;
            if (live_matches(k, l->computed))
                mismatch("combo %d: %s runs the failed registration %s", c->id, l->key, l->computed);
            continue;
        }
        st->lines++;
        if (!live_matches(k, l->computed)) {
            mismatch("combo %d: live %s: c10 recomputed %s (c10 live %s), dispatch.h runs %s", c->id, l->key,
                     l->computed, l->live, kind_name(k));
        } else if (strcmp(l->live, l->computed) != 0) {
            st->stale_fixed++;
        }
    }
    if (skipped) {
        printf("combo %d: %d LIVE lines name the partially applied failed fallback: not compared\n", c->id, skipped);
        st->partial++;
    } else {
        st->combos++;
    }
}

static void test_live_tables(void **state) {
    stats st;
    (void)state;
    st = run_all(check_live);
    printf("test_live_tables: %d combos compared (+%d partial-c10 combos in part), %d LIVE lines compared, "
           "%d stale c10 slots that dispatch.h gets right\n", st.combos, st.partial, st.lines, st.stale_fixed);
    assert_int_equal(mismatches, 0);
    assert_true(st.combos >= MIN_COMBOS);
    assert_true(st.stale_fixed > 0);
}

static int setup(void **state) {
    (void)state;
    load_vectors();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free_vectors();
    return 0;
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_computed_tables),
        cmocka_unit_test(test_dump_state),
        cmocka_unit_test(test_live_tables),
    };
    if (argc > 1) vectors_path = argv[1];
    return cmocka_run_group_tests_name("dispatch tables: conformance with libtorch 1.13.1", tests, setup, teardown);
}
