/* vectors.h - what the libtorch 1.13.1 conformance tests share.

   Included by test_conformance.c, test_table_conformance.c and
   test_call_conformance.c, after dispatch.h (with DISPATCH_IMPLEMENTATION)
   and cmocka.h. Everything here is static; the functions are static inline,
   so a test that does not use one of them gets no unused-function warning.

     - reading a vectors file and splitting it into lines and fields, parsing
       hex and decimal fields;
     - mismatch reporting: the first VECTORS_PRINTED_MISMATCHES mismatches of
       a test are printed (define it before the include to change it), all
       are counted in `mismatches`;
     - tests/conformance/tables-1.13.1.txt (format in
       tests/conformance/README.md, "Dispatch-table conformance vectors"): its
       BASE| block and COMBO records, and their replay into a fresh registry:
       the built-in backend fallbacks of the BASE| block with their exact
       debug strings, then the combination's registrations with the debug
       strings "registered at combo.cpp:<N>", each result checked against
       c10's (a registration c10 rejected must fail with
       DK_ERR_DUPLICATE_FALLBACK, c10's message, and change nothing). */
#ifndef DK_TESTS_VECTORS_H
#define DK_TESTS_VECTORS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading and parsing ------------------------------------------------------ */

/* The prefix's tail of s if s starts with prefix, else NULL. */
static inline const char *after(const char *s, const char *prefix) {
    size_t n = strlen(prefix);
    return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

static inline uint64_t hex(const char *s) { return strtoull(s, NULL, 16); }
static inline int num(const char *s) { return atoi(s); }

/* The whole file, NUL-terminated (free it); fails the test if it cannot be
   read. hint: how to pass the path. */
static inline char *read_all(const char *path, const char *hint) {
    FILE *fp = fopen(path, "rb");
    long size;
    char *b;
    if (!fp) fail_msg("cannot open '%s' (%s)", path, hint);
    assert_int_equal(fseek(fp, 0, SEEK_END), 0);
    size = ftell(fp);
    assert_true(size > 0);
    rewind(fp);
    b = (char *)malloc((size_t)size + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    b[size] = '\0';
    return b;
}

/* Splits the text in place into NUL-terminated lines; returns the next line or NULL. */
static inline char *next_line(char **p) {
    char *line = *p, *nl;
    if (!*line) return NULL;
    nl = strchr(line, '\n');
    if (nl) { *nl = '\0'; *p = nl + 1; } else { *p = line + strlen(line); }
    return line;
}

/* Splits s in place at every space into at most max fields; returns how many.
   *more (if not NULL) is set to what follows the max-th field, NULL if the
   fields took the whole line. */
static inline int split_fields(char *s, char **f, int max, char **more) {
    int n = 0;
    while (n < max && s) {
        char *sp = strchr(s, ' ');
        f[n++] = s;
        if (sp) *sp = '\0';
        s = sp ? sp + 1 : NULL;
    }
    if (more) *more = s;
    return n;
}

/* ---- mismatches ----------------------------------------------------------------- */

#ifndef VECTORS_PRINTED_MISMATCHES
#define VECTORS_PRINTED_MISMATCHES 20
#endif

static int mismatches;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static inline void mismatch(const char *fmt, ...) {
    va_list ap;
    if (mismatches++ < VECTORS_PRINTED_MISMATCHES) {
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
    }
}

/* Reports the first differing line of two dumps. */
static inline void report_diff(int id, const char *what, const char *expected, const char *got) {
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

/* ---- tables-1.13.1.txt ------------------------------------------------------------ */

#define MAX_BASE 64
#define MAX_COMBOS 256
#define MAX_REGS 16
#define MAX_TABLE 256
#define MAX_STATE 32
#define MAX_LIVE 32

typedef enum { K_DEF, K_IMPL, K_CATCHALL, K_FALLTHROUGH, K_FALLBACK, K_FALLTHROUGH_FALLBACK } reg_kind;

typedef struct {
    const char *token;     /* "impl:CPU@14001" */
    reg_kind kind;
    char key[64];          /* "-" for def and catchall */
    int line;              /* N of "registered at combo.cpp:N"; the user data of its kernel */
    int failed;            /* tables: an ERROR line names this token */
    const char *error;     /* its first E| line */
    int partial;           /* c10 failed, but its table shows effects of it */
    int threw;             /* calls (test_call_conformance): "# registration <token> threw" */
} reg;

typedef struct { const char *key, *live, *computed; } live_line;

typedef struct {
    int id;
    const char *regs_text;          /* the COMBO line's registrations */
    reg regs[MAX_REGS];
    int n_regs;
    const char *table[MAX_TABLE];   /* "| " lines without the prefix */
    int n_table;
    const char *state[MAX_STATE];   /* "S| " lines without the prefix */
    int n_state;
    live_line live[MAX_LIVE];       /* LIVE| lines: c10's stored slot vs. its recomputed one */
    int n_live;
    const char *name, *schema;      /* from "S| name: " and "S| schema: " */
    /* what the call vectors say about the combination (test_call_conformance) */
    const char *calls_regs_text;    /* the COMBO line's registrations in the calls file */
    int n_calls;
    int n_recomputed;               /* CALL lines with recomputed= */
    int stale_comment;              /* the call vectors have a "# stale: combo <id>" line */
} combo;

static char *tables_text;           /* the whole file, lines NUL-terminated */
static const char *base[MAX_BASE];  /* "BASE| " lines without the prefix */
static int n_base;
static combo *combos;
static int n_combos;

static inline reg_kind parse_kind(const char *s, size_t n) {
    static const char *const names[] = { "def", "impl", "catchall", "fallthrough", "fallback",
                                         "fallthrough_fallback" };
    int i;
    for (i = 0; i < 6; i++)
        if (strlen(names[i]) == n && strncmp(names[i], s, n) == 0) return (reg_kind)i;
    fail_msg("unknown registration kind in '%s'", s);
    return K_DEF;
}

/* "def:-@1000,impl:CPU@1001" (the list is copied: the tokens live in it;
   regs[0].token is the copy). */
static inline void parse_regs(combo *c, const char *list) {
    char *copy = (char *)malloc(strlen(list) + 1), *tok;
    assert_non_null(copy);
    strcpy(copy, list);
    tok = copy;
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

/* Reads the tables vectors into base[] and combos[]; hint: how to pass the path. */
static inline void load_tables(const char *path, const char *hint) {
    char *p, *line;
    combo *c = NULL;
    reg *last_error = NULL;
    tables_text = read_all(path, hint);
    combos = (combo *)calloc(MAX_COMBOS, sizeof *combos);
    assert_non_null(combos);
    p = tables_text;
    while ((line = next_line(&p)) != NULL) {
        const char *v;
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
            c->regs_text = sp + 1;
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
            fail_msg("unexpected line in the tables vectors: '%s'", line);
        }
    }
    assert_null(c);
    assert_true(n_base > 0);
}

static inline void free_tables(void) {
    int i;
    for (i = 0; i < n_combos; i++)
        if (combos[i].n_regs) free((void *)combos[i].regs[0].token); /* parse_regs' copy */
    free(tables_text);
    free(combos);
    tables_text = NULL;
    combos = NULL;
    n_base = n_combos = 0;
}

/* ---- replaying a combination -------------------------------------------------------- */

/* What the replay registers; the test fills it in before its first new_registry(). */
static struct {
    dk_fn unboxed;                  /* every impl and catch-all kernel; user data: &reg.line */
    dk_boxed_fn boxed;              /* every boxed fallback; user data: &reg.line */
    void *base_user_data;           /* user data of the BASE| boxed fallbacks (which use `boxed` too) */
    dk_call_error_fn call_error;    /* the registry's call-error hook, NULL for none */
} replay_kernels;

static int warnings;
static inline void quiet_log(dk_log_level level, dk_log_item item, const char *message, void *user_data) {
    (void)user_data; (void)item;
    if (level == DK_LOG_WARNING) warnings++; /* "Overriding a previously registered kernel": c10 printed it too */
    else fprintf(stderr, "dispatch.h error: %s\n", message);
}

static inline dk_key key_of(const char *name) {
    dk_key k = DK_Undefined;
    if (dk_key_parse(name, &k) != DK_OK) fail_msg("dk_key_parse('%s') failed: %s", name, dk_last_error());
    return k;
}

/* A dump (dk_op_computed_table_to_string or dk_op_state_to_string) in a new buffer. */
static inline char *dump(int (*fn)(const dk_operator *op, char *buf, size_t size), const dk_operator *op) {
    int n = fn(op, NULL, 0);
    char *b = (char *)malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fn(op, b, (size_t)n + 1), n);
    return b;
}
static inline char *dump_table(const dk_operator *op) { return dump(dk_op_computed_table_to_string, op); }
static inline char *dump_state(const dk_operator *op) { return dump(dk_op_state_to_string, op); }

/* "Key: [fallthrough ]registered at <file>:<line> [backend fallback]" */
static inline void register_base(dk_registry *r) {
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
        st = dk__fallback(r, key_of(key),
                          ft ? dk_fallthrough() : dk_boxed(replay_kernels.boxed, replay_kernels.base_user_data),
                          file, line, &h, DK_CONFIG_SIGNATURE);
        if (st != DK_OK) fail_msg("BASE fallback '%s': %s", base[i], dk_last_error());
    }
}

/* A registry with libtorch's own fallbacks only: those of the BASE| block. */
static inline dk_registry *new_registry(void) {
    dk_registry_desc desc;
    dk_registry *r = NULL;
    memset(&desc, 0, sizeof desc);
    desc.logger.func = quiet_log;
    desc.no_default_fallthroughs = 1; /* libtorch's own fallbacks come from the BASE lines */
    desc.c10_messages = 1;            /* the vectors hold c10's words */
    assert_int_equal(dk_registry_create(&desc, &r), DK_OK);
    if (replay_kernels.call_error) dk_registry_set_call_error(r, replay_kernels.call_error, NULL);
    register_base(r);
    return r;
}

/* base::op, an operator with no kernels (the BASE| block, the BASECALL lines). */
static inline dk_operator *def_base_op(dk_registry *r) {
    dk_registration *h = NULL;
    dk_operator *op;
    assert_int_equal(dk__def(r, "base::op(Tensor a) -> Tensor", NULL, "combo.cpp", 0, &h, DK_CONFIG_SIGNATURE), DK_OK);
    op = dk_op_lookup(r, "base::op");
    assert_non_null(op);
    return op;
}

static inline dk_status replay_one(dk_registry *r, const combo *c, reg *g) {
    dk_registration *h = NULL;
    void *ud = &g->line;
    switch (g->kind) {
    case K_DEF:
        return dk__def(r, c->schema, NULL, "combo.cpp", g->line, &h, DK_CONFIG_SIGNATURE);
    case K_IMPL:
        return dk__impl(r, c->name, key_of(g->key), dk_unboxed(replay_kernels.unboxed, ud), "combo.cpp", g->line,
                        &h, DK_CONFIG_SIGNATURE);
    case K_CATCHALL:
        return dk__impl(r, c->name, DK_Undefined, dk_unboxed(replay_kernels.unboxed, ud), "combo.cpp", g->line,
                        &h, DK_CONFIG_SIGNATURE);
    case K_FALLTHROUGH:
        return dk__impl(r, c->name, key_of(g->key), dk_fallthrough(), "combo.cpp", g->line, &h,
                        DK_CONFIG_SIGNATURE);
    case K_FALLBACK:
        return dk__fallback(r, key_of(g->key), dk_boxed(replay_kernels.boxed, ud), "combo.cpp", g->line, &h,
                            DK_CONFIG_SIGNATURE);
    case K_FALLTHROUGH_FALLBACK:
        return dk__fallback(r, key_of(g->key), dk_fallthrough(), "combo.cpp", g->line, &h, DK_CONFIG_SIGNATURE);
    }
    return DK_ERR_BAD_ARGUMENT;
}

static int failed_regs_checked;

/* Replays every registration of c; checks each result against the vectors:
   a registration c10 accepted must succeed; one c10 rejected must fail with
   DK_ERR_DUPLICATE_FALLBACK (with c10's message where c10 reported a
   duplicate fallback) and leave the operator's table and state unchanged. */
static inline dk_operator *replay(dk_registry *r, combo *c) {
    int i;
    dk_operator *op;
    for (i = 0; i < c->n_regs; i++) {
        reg *g = &c->regs[i];
        char *t0 = NULL, *s0 = NULL;
        dk_status st;
        op = dk_op_lookup(r, c->name);
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
        failed_regs_checked++;
        if (st == DK_OK) {
            mismatch("combo %d: %s succeeded but c10 failed: %s", c->id, g->token, g->error ? g->error : "");
        } else {
            char *t1, *s1;
            if (st != DK_ERR_DUPLICATE_FALLBACK)
                mismatch("combo %d: %s gave %s, expected DK_ERR_DUPLICATE_FALLBACK", c->id, g->token,
                         dk_status_message(st));
            if (g->error && after(g->error, "Tried to register multiple backend fallbacks") &&
                strcmp(dk_last_error(), g->error) != 0)
                mismatch("combo %d: %s message\n  c10:        %s\n  dispatch.h: %s", c->id, g->token, g->error,
                         dk_last_error());
            t1 = dump_table(op);
            s1 = dump_state(op);
            if (strcmp(t0, t1) != 0) report_diff(c->id, "table after a failed registration", t0, t1);
            if (strcmp(s0, s1) != 0) report_diff(c->id, "state after a failed registration", s0, s1);
            free(t1);
            free(s1);
        }
        free(t0);
        free(s0);
    }
    op = dk_op_lookup(r, c->name);
    if (!op) fail_msg("combo %d: operator %s not found after its def", c->id, c->name);
    return op;
}

typedef void (*combo_check)(const combo *c, dk_operator *op, void *ctx);

/* Resets mismatches and failed_regs_checked, then replays every combination
   into a fresh registry and hands its operator to check. */
static inline void replay_all(combo_check check, void *ctx) {
    int i;
    mismatches = 0;
    failed_regs_checked = 0;
    for (i = 0; i < n_combos; i++) {
        dk_registry *r = new_registry();
        check(&combos[i], replay(r, &combos[i]), ctx);
        dk_registry_destroy(r);
    }
}

#endif /* DK_TESTS_VECTORS_H */
