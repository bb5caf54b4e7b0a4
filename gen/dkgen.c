/* dkgen: the torchgen of dispatch.h.

   dkgen OPS_FILE OUT_HEADER   typed C bindings for the operators in OPS_FILE
   dkgen --keys                the key tables (names, bits, slots) as Markdown

   OPS_FILE holds one operator schema per line, in PyTorch's schema language
   (`ns::name.overload(args) -> returns`); '#' starts a comment; blank lines
   are ignored. For each operator the header defines, on top of
   DK_DECLARE_OP (typed call / redispatch, argument pack):
     <op>_keyset(args...)   the dispatch keyset of the tensor arguments
     <op>_def(r, &h)        def the schema with its boxing adapters (one registration)
     <op>_impl(r, key, fn, user_data, &h)   register a typed kernel
     <op>_bind(r, &op)      look the operator up, checking its C signature
   and the adapters that let boxed calls reach the typed kernels and typed
   calls reach boxed kernels and fallbacks. <op> is the operator name with
   "::" and "." replaced by "_" (aten::add.Tensor -> aten_add_Tensor).

   The user describes their tensor type once, before including the header:
     #define DKGEN_TENSOR my_tensor *            (a pointer type)
     #define DKGEN_TENSOR_KEYSET(t) ((t)->keys)  (its dispatch keyset)
   C types: Tensor -> DKGEN_TENSOR (Tensor?: NULL is None), Tensor[] and
   Tensor?[] -> dk_value_list of dk_tensor()/dk_none() values, int / SymInt /
   ScalarType / Layout / MemoryFormat -> int64_t, float and Scalar -> double,
   bool -> int, str -> const char *, optional scalars -> pointer (NULL is
   None), int[] -> dk_int_list, float[] -> dk_double_list, Generator? ->
   void *. Returns: one value, a tuple (a struct <op>_result), or nothing. */
#define DISPATCH_IMPLEMENTATION
#include "../dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How one schema type maps to C. */
typedef struct ctype {
    const char *c;          /* C type */
    const char *box;        /* printf format producing a dk_value from %s (the C expression) */
    const char *sig;        /* name in the operator's C signature string */
    int kind;               /* how it is unboxed, and how it contributes to the keyset */
} ctype;
enum { K_TENSOR, K_OPT_TENSOR, K_TENSOR_LIST, K_INT, K_OPT_INT, K_DOUBLE, K_OPT_DOUBLE, K_BOOL, K_OPT_BOOL,
       K_STRING, K_INT_LIST, K_DOUBLE_LIST, K_OBJECT };

static const ctype C_TENSOR = { "DKGEN_TENSOR", "dk_tensor((void *)(%s))", "Tensor", K_TENSOR };
static const ctype C_OPT_TENSOR = { "DKGEN_TENSOR", "((%s) ? dk_tensor((void *)(%s)) : dk_none())", "Tensor?", K_OPT_TENSOR };
static const ctype C_TENSOR_LIST = { "dk_value_list", "dk_list((%s).items, (%s).n)", "Tensor[]", K_TENSOR_LIST };
static const ctype C_INT = { "int64_t", "dk_int(%s)", "int", K_INT };
static const ctype C_OPT_INT = { "const int64_t *", "((%s) ? dk_int(*(%s)) : dk_none())", "int?", K_OPT_INT };
static const ctype C_DOUBLE = { "double", "dk_double(%s)", "float", K_DOUBLE };
static const ctype C_OPT_DOUBLE = { "const double *", "((%s) ? dk_double(*(%s)) : dk_none())", "float?", K_OPT_DOUBLE };
static const ctype C_BOOL = { "int", "dk_bool(%s)", "bool", K_BOOL };
static const ctype C_OPT_BOOL = { "const int *", "((%s) ? dk_bool(*(%s)) : dk_none())", "bool?", K_OPT_BOOL };
static const ctype C_STRING = { "const char *", "((%s) ? dk_string(%s) : dk_none())", "str", K_STRING };
static const ctype C_INT_LIST = { "dk_int_list", "dk_int_list_value(%s)", "int[]", K_INT_LIST };
static const ctype C_DOUBLE_LIST = { "dk_double_list", "dk_double_list_value(%s)", "float[]", K_DOUBLE_LIST };
static const ctype C_OBJECT = { "void *", "((%s) ? dk_object(%s) : dk_none())", "object", K_OBJECT };

static int is_int_like(dk_type_kind k) {
    return k == DK_TYPE_Int || k == DK_TYPE_SymInt || k == DK_TYPE_ScalarType || k == DK_TYPE_Layout ||
           k == DK_TYPE_MemoryFormat;
}

/* NULL when dkgen cannot map the type. */
static const ctype *map_type(const dk_type *t) {
    const dk_type *e;
    if (t->kind == DK_TYPE_Tensor) return &C_TENSOR;
    if (is_int_like(t->kind)) return &C_INT;
    if (t->kind == DK_TYPE_Float || t->kind == DK_TYPE_Number) return &C_DOUBLE;
    if (t->kind == DK_TYPE_Bool) return &C_BOOL;
    if (t->kind == DK_TYPE_String || t->kind == DK_TYPE_DeviceObj) return &C_STRING;
    if (t->kind == DK_TYPE_Optional) {
        e = t->contained[0];
        if (e->kind == DK_TYPE_Tensor) return &C_OPT_TENSOR;
        if (is_int_like(e->kind)) return &C_OPT_INT;
        if (e->kind == DK_TYPE_Float || e->kind == DK_TYPE_Number) return &C_OPT_DOUBLE;
        if (e->kind == DK_TYPE_Bool) return &C_OPT_BOOL;
        if (e->kind == DK_TYPE_String || e->kind == DK_TYPE_DeviceObj) return &C_STRING;
        if (e->kind == DK_TYPE_Generator) return &C_OBJECT;
        return NULL;
    }
    if (t->kind == DK_TYPE_List) {
        e = t->contained[0];
        if (e->kind == DK_TYPE_Tensor) return &C_TENSOR_LIST;
        if (e->kind == DK_TYPE_Optional && e->contained[0]->kind == DK_TYPE_Tensor) return &C_TENSOR_LIST;
        if (is_int_like(e->kind)) return &C_INT_LIST;
        if (e->kind == DK_TYPE_Float) return &C_DOUBLE_LIST;
    }
    return NULL;
}

static void c_ident(const dk_schema *s, char *out, size_t n) {
    size_t i, j = 0;
    char full[512];
    snprintf(full, sizeof full, "%s%s%s", s->name, s->overload[0] ? "." : "", s->overload);
    for (i = 0; full[i] && j + 1 < n; i++) {
        if (full[i] == ':' && full[i + 1] == ':') { out[j++] = '_'; i++; }
        else out[j++] = full[i] == '.' ? '_' : full[i];
    }
    out[j] = '\0';
}

static void emit_box(FILE *o, const ctype *c, const char *expr) {
    fprintf(o, c->box, expr, expr);
}

/* The statement that unboxes stack value `v` into C variable `var`. */
static void emit_unbox(FILE *o, const ctype *c, const char *var, const char *v, const char *store) {
    switch (c->kind) {
    case K_TENSOR: fprintf(o, "%s = (DKGEN_TENSOR)%s.as.tensor;", var, v); break;
    case K_OPT_TENSOR:
        fprintf(o, "%s = %s.tag == DK_VALUE_TENSOR ? (DKGEN_TENSOR)%s.as.tensor : NULL;", var, v, v);
        break;
    case K_TENSOR_LIST: fprintf(o, "%s.items = %s.as.list.items; %s.n = %s.as.list.n;", var, v, var, v); break;
    case K_INT: fprintf(o, "%s = %s.as.i;", var, v); break;
    case K_DOUBLE: fprintf(o, "%s = %s.tag == DK_VALUE_INT ? (double)%s.as.i : %s.as.d;", var, v, v, v); break;
    case K_BOOL: fprintf(o, "%s = %s.as.b;", var, v); break;
    case K_STRING: fprintf(o, "%s = %s.tag == DK_VALUE_STRING ? %s.as.s : NULL;", var, v, v); break;
    case K_OBJECT: fprintf(o, "%s = %s.tag == DK_VALUE_OBJECT ? %s.as.object : NULL;", var, v, v); break;
    case K_OPT_INT: fprintf(o, "%s.i = %s.as.i; %s = %s.tag == DK_VALUE_INT ? &%s.i : NULL;", store, v, var, v, store); break;
    case K_OPT_DOUBLE:
        fprintf(o, "%s.d = %s.tag == DK_VALUE_INT ? (double)%s.as.i : %s.as.d; %s = %s.tag != DK_VALUE_NONE ? &%s.d : NULL;",
                store, v, v, v, var, v, store);
        break;
    case K_OPT_BOOL: fprintf(o, "%s.b = %s.as.b; %s = %s.tag == DK_VALUE_BOOL ? &%s.b : NULL;", store, v, var, v, store); break;
    case K_INT_LIST: fprintf(o, "%s.items = %s.as.ints.items; %s.n = %s.as.ints.n;", var, v, var, v); break;
    case K_DOUBLE_LIST: fprintf(o, "%s.items = %s.as.doubles.items; %s.n = %s.as.doubles.n;", var, v, var, v); break;
    }
}

typedef struct opinfo {
    const dk_schema *s;
    char id[256];
    const ctype *args[64], *rets[16];
} opinfo;

static int describe(const dk_schema *s, opinfo *op, const char *path, int line) {
    int i;
    memset(op, 0, sizeof *op);
    op->s = s;
    c_ident(s, op->id, sizeof op->id);
    if (s->name_only || s->is_vararg || s->is_varret) {
        fprintf(stderr, "%s:%d: %s: dkgen needs a full schema without varargs\n", path, line, op->id);
        return 0;
    }
    if (s->num_arguments < 1 || s->num_arguments > 12 || s->num_returns > 16) {
        fprintf(stderr, "%s:%d: %s: dkgen supports 1 to 12 arguments and up to 16 returns\n", path, line, op->id);
        return 0;
    }
    for (i = 0; i < s->num_arguments; i++)
        if (!(op->args[i] = map_type(s->arguments[i].type))) {
            fprintf(stderr, "%s:%d: %s: argument '%s' of type %s has no C mapping in dkgen\n", path, line, op->id,
                    s->arguments[i].name, s->arguments[i].type_text);
            return 0;
        }
    for (i = 0; i < s->num_returns; i++)
        if (!(op->rets[i] = map_type(s->returns[i].type)) || op->rets[i]->kind == K_TENSOR_LIST) {
            fprintf(stderr, "%s:%d: %s: return %d of type %s has no C mapping in dkgen\n", path, line, op->id, i,
                    s->returns[i].type_text);
            return 0;
        }
    return 1;
}

static const char *ret_type(const opinfo *op, char *buf, size_t n) {
    if (op->s->num_returns == 0) return "void";
    if (op->s->num_returns == 1) return op->rets[0]->c;
    snprintf(buf, n, "%s_result", op->id);
    return buf;
}

static void emit_op(FILE *o, const opinfo *op) {
    const dk_schema *s = op->s;
    int i, n = s->num_arguments, nr = s->num_returns;
    char rbuf[300], sig[2048];
    const char *rt = ret_type(op, rbuf, sizeof rbuf);
    size_t len = 0;
    /* the C signature, in schema words: what _bind compares */
    len += (size_t)snprintf(sig + len, sizeof sig - len, "(");
    for (i = 0; i < nr; i++) len += (size_t)snprintf(sig + len, sizeof sig - len, "%s%s", i ? ", " : "", op->rets[i]->sig);
    len += (size_t)snprintf(sig + len, sizeof sig - len, ") (");
    for (i = 0; i < n; i++) len += (size_t)snprintf(sig + len, sizeof sig - len, "%s%s", i ? ", " : "", op->args[i]->sig);
    snprintf(sig + len, sizeof sig - len, ")");

    fprintf(o, "/* ---- %s */\n", s->text);
    if (nr > 1) {
        fprintf(o, "typedef struct %s_result {", op->id);
        for (i = 0; i < nr; i++) fprintf(o, " %s r%d;", op->rets[i]->c, i);
        fprintf(o, " } %s_result;\n", op->id);
    }
    /* the keyset of the tensor arguments */
    fprintf(o, "DK_INLINE dk_keyset %s_keyset(", op->id);
    for (i = 0; i < n; i++) fprintf(o, "%s%s %s", i ? ", " : "", op->args[i]->c, s->arguments[i].name);
    fprintf(o, ") {\n    dk_keyset ks = DK_KS_EMPTY;\n");
    for (i = 0; i < n; i++) {
        const char *a = s->arguments[i].name;
        if (op->args[i]->kind == K_TENSOR) fprintf(o, "    ks = dk_ks_or(ks, DKGEN_TENSOR_KEYSET(%s));\n", a);
        else if (op->args[i]->kind == K_OPT_TENSOR) fprintf(o, "    if (%s) ks = dk_ks_or(ks, DKGEN_TENSOR_KEYSET(%s));\n", a, a);
        else if (op->args[i]->kind == K_TENSOR_LIST)
            fprintf(o, "    { size_t i_; for (i_ = 0; i_ < %s.n; i_++) if (%s.items[i_].tag == DK_VALUE_TENSOR) "
                       "ks = dk_ks_or(ks, DKGEN_TENSOR_KEYSET((DKGEN_TENSOR)%s.items[i_].as.tensor)); }\n", a, a, a);
        else fprintf(o, "    (void)%s;\n", a);
    }
    fprintf(o, "    return ks;\n}\n");
    /* typed call / redispatch / argument pack */
    fprintf(o, "%s(%s, %s%s%s_keyset(", nr ? "DK_DECLARE_OP" : "DK_DECLARE_OP_VOID", op->id, nr ? rt : "",
            nr ? ", " : "", op->id);
    for (i = 0; i < n; i++) fprintf(o, "%s%s", i ? ", " : "", s->arguments[i].name);
    fprintf(o, ")");
    for (i = 0; i < n; i++) fprintf(o, ", (%s, %s)", op->args[i]->c, s->arguments[i].name);
    fprintf(o, ")\n");
    fprintf(o, "#define %s_SCHEMA \"", op->id);
    for (i = 0; s->text[i]; i++) fprintf(o, s->text[i] == '"' || s->text[i] == '\\' ? "\\%c" : "%c", s->text[i]);
    fprintf(o, "\"\n#define %s_SIGNATURE \"%s\"\n", op->id, sig);
    /* typed -> boxed: push the arguments in order; pop the returns */
    fprintf(o, "static void %s_box(const void *args_, dk_stack *stack) {\n", op->id);
    fprintf(o, "    const %s_args *args = (const %s_args *)args_;\n", op->id, op->id);
    for (i = 0; i < n; i++) {
        char expr[300];
        snprintf(expr, sizeof expr, "args->%s", s->arguments[i].name);
        fprintf(o, "    dk_push(stack, ");
        emit_box(o, op->args[i], expr);
        fprintf(o, ");\n");
    }
    fprintf(o, "}\nstatic void %s_unbox_result(dk_stack *stack, void *result_) {\n", op->id);
    if (nr == 1) {
        fprintf(o, "    %s *result = (%s *)result_;\n    dk_value v = dk_pop(stack);\n    union { int64_t i; double d; int b; } s_;\n    (void)s_;\n    ", rt, rt);
        emit_unbox(o, op->rets[0], "*result", "v", "s_");
        fprintf(o, "\n");
    } else if (nr > 1) {
        fprintf(o, "    %s *result = (%s *)result_;\n    dk_value v;\n    union { int64_t i; double d; int b; } s_;\n    (void)s_;\n", rt, rt);
        for (i = nr - 1; i >= 0; i--) {
            char var[32];
            snprintf(var, sizeof var, "result->r%d", i);
            fprintf(o, "    v = dk_pop(stack); ");
            emit_unbox(o, op->rets[i], var, "v", "s_");
            fprintf(o, "\n");
        }
    } else {
        fprintf(o, "    (void)stack; (void)result_;\n");
    }
    /* boxed -> typed: pop the arguments (the last is on top), call, push the returns */
    fprintf(o, "}\nstatic void %s_call_unboxed(const dk_kernel *kernel, const dk_operator *op, dk_keyset ks, dk_stack *stack) {\n", op->id);
    fprintf(o, "    %s_args a;\n    dk_value v;\n    union { int64_t i; double d; int b; } s_[%d];\n    (void)op; (void)s_;\n", op->id, n);
    for (i = n - 1; i >= 0; i--) {
        char var[300], store[32];
        snprintf(var, sizeof var, "a.%s", s->arguments[i].name);
        snprintf(store, sizeof store, "s_[%d]", i);
        fprintf(o, "    v = dk_pop(stack); ");
        emit_unbox(o, op->args[i], var, "v", store);
        fprintf(o, "\n");
    }
    fprintf(o, "    %s((%s_fn)kernel->fn)(kernel, ks", nr ? "a.result = " : "", op->id);
    for (i = 0; i < n; i++) fprintf(o, ", a.%s", s->arguments[i].name);
    fprintf(o, ");\n");
    if (nr == 1) {
        fprintf(o, "    dk_push(stack, ");
        emit_box(o, op->rets[0], "a.result");
        fprintf(o, ");\n");
    }
    for (i = 0; nr > 1 && i < nr; i++) {
        char expr[64];
        snprintf(expr, sizeof expr, "a.result.r%d", i);
        fprintf(o, "    dk_push(stack, ");
        emit_box(o, op->rets[i], expr);
        fprintf(o, ");\n");
    }
    fprintf(o, "}\nstatic const dk_op_adapters %s_adapters = { %s_SIGNATURE, %d, %d, %s_box, %s_unbox_result, "
               "%s_call_unboxed };\n", op->id, op->id, n, nr, op->id, op->id, op->id);
    /* registration and typed access */
    fprintf(o,
            "DK_INLINE dk_status %s_def(dk_registry *r, dk_registration **out) {\n"
            "    return dk_def_with_adapters(r, %s_SCHEMA, &%s_adapters, out);\n}\n",
            op->id, op->id, op->id);
    fprintf(o,
            "DK_INLINE dk_status %s_impl(dk_registry *r, dk_key key, %s_fn fn, void *user_data, dk_registration **out) {\n"
            "    return dk_impl(r, \"%s%s%s\", key, dk_unboxed(DK_FN(fn), user_data), out);\n}\n",
            op->id, op->id, s->name, s->overload[0] ? "." : "", s->overload);
    fprintf(o,
            "DK_INLINE dk_status %s_bind(dk_registry *r, const dk_operator **out) {\n"
            "    dk_operator *op;\n"
            "    dk_status s = dk_op_find(r, \"%s%s%s\", &op);\n"
            "    if (s == DK_OK) s = dk_op_check_signature(op, %s_SIGNATURE);\n"
            "    if (s == DK_OK) *out = op;\n"
            "    return s;\n}\n\n",
            op->id, s->name, s->overload[0] ? "." : "", s->overload, op->id);
}

static int generate(const char *in_path, const char *out_path) {
    FILE *in = fopen(in_path, "r"), *o;
    char line[8192];
    int lineno = 0, n = 0, bad = 0;
    const char *base = strrchr(in_path, '/') ? strrchr(in_path, '/') + 1 : in_path;
    if (!in) { fprintf(stderr, "dkgen: cannot read %s\n", in_path); return 1; }
    o = fopen(out_path, "w");
    if (!o) { fprintf(stderr, "dkgen: cannot write %s\n", out_path); fclose(in); return 1; }
    fprintf(o, "/* GENERATED by gen/dkgen from %s -- do not edit; regenerate with dkgen. */\n"
               "#ifndef DKGEN_TENSOR\n#error \"define DKGEN_TENSOR (a pointer type) and DKGEN_TENSOR_KEYSET(t) first\"\n#endif\n"
               "#include \"dispatch.h\"\n\n", base);
    while (fgets(line, sizeof line, in)) {
        char *p = line, *hash;
        dk_schema *s;
        opinfo op;
        lineno++;
        if ((hash = strchr(p, '#')) != NULL) *hash = '\0';
        while (*p == ' ' || *p == '\t') p++;
        p[strcspn(p, "\r\n")] = '\0';
        if (!*p) continue;
        if (dk_schema_parse(p, &s) != DK_OK) {
            fprintf(stderr, "%s:%d: %s\n", in_path, lineno, dk_last_error());
            bad++;
            continue;
        }
        if (describe(s, &op, in_path, lineno)) { emit_op(o, &op); n++; }
        else bad++;
        dk_schema_free(s);
    }
    fclose(in);
    fclose(o);
    if (bad) { remove(out_path); return 1; }
    fprintf(stderr, "dkgen: %d operators -> %s\n", n, out_path);
    return 0;
}

/* The key tables of the lists this binary was compiled with, as Markdown. */
static void print_keys(void) {
    int k, b;
    printf("| backend component | value | keyset bit |\n|---|---|---|\n");
    for (b = 1; b <= DK_NUM_BACKENDS; b++) printf("| `%s` | %d | %d |\n", dk_backend_name((dk_backend)b), b, b - 1);
    printf("\n| functionality key | value | keyset bit | per backend | runtime slots |\n|---|---|---|---|---|\n");
    for (k = 1; k < DK_EndOfFunctionalityKeys; k++) {
        int pb = dk_key_is_per_backend_functionality((dk_key)k);
        int first = dk_key_table_index((dk_key)k);
        if (pb) printf("| `%s` | %d | %d | yes | %d-%d |\n", dk_key_name((dk_key)k), k, DK_NUM_BACKENDS + k - 1, first,
                       first + DK_NUM_BACKENDS - 1);
        else printf("| `%s` | %d | %d | | %d |\n", dk_key_name((dk_key)k), k, DK_NUM_BACKENDS + k - 1, first);
    }
    printf("\n| alias key | value | runtime keys |\n|---|---|---|\n");
    for (k = DK_StartOfAliasKeys; k <= DK_EndOfAliasKeys; k++) {
        dk_key r;
        int count = 0;
        DK_KS_FOREACH(r, dk_alias_runtime_set((dk_key)k)) count++;
        printf("| `%s` | %d | %d |\n", dk_key_name((dk_key)k), k, count);
    }
    printf("\n%d backends, %d functionality keys (with Undefined), %d per backend, %d runtime slots.\n",
           DK_NUM_BACKENDS, DK_NUM_FUNCTIONALITY_KEYS, DK_NUM_PER_BACKEND_FUNCTIONALITIES, DK_NUM_RUNTIME_ENTRIES);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--keys") == 0) { print_keys(); return 0; }
    if (argc == 3) return generate(argv[1], argv[2]);
    fprintf(stderr, "usage: dkgen OPS_FILE OUT_HEADER | dkgen --keys\n");
    return 2;
}
