/* dkgen: the torchgen of dispatch.h.

   dkgen OPS_FILE OUT_HEADER   typed C bindings for the operators in OPS_FILE
   dkgen --keys                the key tables (names, bits, slots) as Markdown

   OPS_FILE holds one operator schema per line, in PyTorch's schema language
   (`ns::name.overload(args) -> returns`); a line whose first non-blank
   character is '#' is a comment, the schema language's own trailing '#'
   comments are allowed, blank lines are ignored, and a line may be of any
   length. Every schema dk_schema_parse accepts generates. Every line is
   read; every error names its line; any error means no header (exit
   status 1). Two operators whose C names would clash (my::a_b and my::a.b)
   both generate, the second under a numbered name, with a warning.

   For each operator the header defines (<op> is the operator name with "::"
   and "." replaced by "_": aten::add.Tensor -> aten_add_Tensor):
     <op>_fn, <op>_args     the kernel type and the argument pack
     <op>_call(op, args...) the typed call; <op>_redispatch(op, ks, args...)
     <op>_keyset(args...)   the dispatch keyset of the tensor arguments
     <op>_def(r, &h)        def the schema with its boxing adapters
     <op>_library_def(lib)  the same inside a DK_LIBRARY block
     <op>_impl(r, key, fn, user_data, &h)   register a typed kernel (a fn of
                            another type than <op>_fn does not compile);
                            <op>_library_impl(lib, key, fn, user_data)
     <op>_adapters          the boxing adapters
     <op>_bind(r, &op)      look the operator up, checking its C signature
     <op>_SCHEMA, <op>_NAME, <op>_SIGNATURE  the schema, the operator name
                            and the C signature in schema words
     <op>_result            a tuple's returns, named as in the schema
                            (values, indices; r<i> when unnamed)
   and, when some arguments have defaults:
     <op>_calld(op, required..., [defaulted...])  a macro: the required
                            arguments in schema order, then any leading part
                            of the defaulted ones (in schema order); the rest
                            take their defaults; another count is an error
                            naming the counts it takes
     <op>_opts, <op>_defaults()   the defaulted arguments, and their values
     <op>_call_opts(op, required..., &opts)   opts NULL: every default
   Operators with varargs ("...") or without an argument list are bound
   boxed: <op>_def, <op>_impl(r, key, boxed_fn, user_data, &h), <op>_bind,
   <op>_call(op, stack), <op>_redispatch(op, ks, stack).
   Every generated header defines the registry's tensor_keyset hook,
   dkgen_tensor_keyset, from DKGEN_TENSOR_KEYSET, and
   DKGEN_FORALL_<FILE>(X), X(<op>) for each operator.

   The user describes their tensor type once, before including the header:
     #define DKGEN_TENSOR my_tensor *            (a pointer type)
     #define DKGEN_TENSOR_KEYSET(t) ((t)->keys)  (its dispatch keyset)
   (applied to every non-optional Tensor argument of a call: make it NULL-safe,
   ((t) ? (t)->keys : DK_KS_EMPTY), if a caller may pass NULL there)
   C types: Tensor -> DKGEN_TENSOR (Tensor?: NULL is None); Tensor[],
   Tensor?[] and other lists -> dk_value_list (of dk_tensor()/dk_none()/...
   values); int[] (SymInt[]...) -> dk_int_list; float[] -> dk_double_list;
   int, SymInt, ScalarType, Layout, MemoryFormat, QScheme -> int64_t;
   float and Scalar -> double; bool -> int; str and Device -> const char *;
   Generator, Storage, Stream, custom classes -> void *; optional scalars and
   optional lists -> a pointer (NULL is None); any other type (Any, Dict,
   tuples, unions...) -> dk_value, passed as it is; complex -> dk_complex
   (complex? and complex[]: dk_value, dk_value_list). A return of an
   optional scalar or list is a dk_value. Argument names that C or C++
   reserve, that look like macros or that clash with generated names are
   prefixed "arg_" (parameters carry a trailing '_'). */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- memory and growing strings ------------------------------------------ */

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) { fputs("dkgen: out of memory\n", stderr); exit(1); }
    return p;
}
static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return (char *)memcpy(xrealloc(NULL, n), s, n);
}

/* A growing NUL-terminated string. */
typedef struct sbuf { char *p; size_t len, cap; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = (char *)xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}
static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_putc(sbuf *b, char c) { sb_put(b, &c, 1); }
static void sb_vprintf(sbuf *b, const char *fmt, va_list ap) {
    char small[256];
    va_list ap2;
    int n;
    va_copy(ap2, ap);
    n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof small) sb_put(b, small, (size_t)n);
    else {
        char *big = (char *)xrealloc(NULL, (size_t)n + 1);
        vsnprintf(big, (size_t)n + 1, fmt, ap2);
        sb_put(b, big, (size_t)n);
        free(big);
    }
    va_end(ap2);
}
static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}
/* The string built so far (malloc'ed, "" if nothing); b starts over. */
static char *sb_take(sbuf *b) {
    char *p = b->p ? b->p : xstrdup("");
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}
static char *xprintf(const char *fmt, ...) {
    sbuf b = { NULL, 0, 0 };
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    return sb_take(&b);
}

/* ---- a set of names (generated global names -> the line that made them) ---- */

typedef struct nameset { char **keys; int *lines; size_t n, cap; } nameset;

static size_t ns_hash(const char *s) {
    size_t h = 2166136261u;
    while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}
static int ns_find(const nameset *set, const char *key) {   /* its line, or 0 */
    size_t i;
    if (!set->cap) return 0;
    for (i = ns_hash(key) & (set->cap - 1); set->keys[i]; i = (i + 1) & (set->cap - 1))
        if (strcmp(set->keys[i], key) == 0) return set->lines[i];
    return 0;
}
static void ns_add(nameset *set, const char *key, int line) {
    size_t i;
    if (2 * (set->n + 1) > set->cap) {   /* grow and rehash */
        nameset big;
        big.cap = set->cap ? 2 * set->cap : 1024;
        big.n = 0;
        big.keys = (char **)xrealloc(NULL, big.cap * sizeof *big.keys);
        big.lines = (int *)xrealloc(NULL, big.cap * sizeof *big.lines);
        memset(big.keys, 0, big.cap * sizeof *big.keys);
        for (i = 0; i < set->cap; i++)
            if (set->keys[i]) ns_add(&big, set->keys[i], set->lines[i]);
        free(set->keys);
        free(set->lines);
        *set = big;
    }
    for (i = ns_hash(key) & (set->cap - 1); set->keys[i]; i = (i + 1) & (set->cap - 1)) {}
    set->keys[i] = (char *)key;
    set->lines[i] = line;
    set->n++;
}
static void ns_free(nameset *set, int owns_keys) {
    size_t i;
    for (i = 0; owns_keys && i < set->cap; i++) free(set->keys[i]);
    free(set->keys);
    free(set->lines);
}

/* ---- how schema types map to C ------------------------------------------- */

typedef enum ckind {
    K_TENSOR, K_OPT_TENSOR, K_TENSOR_LIST, K_LIST, K_OPT_LIST, K_INT, K_OPT_INT, K_DOUBLE, K_OPT_DOUBLE,
    K_BOOL, K_OPT_BOOL, K_STRING, K_OBJECT, K_INT_LIST, K_OPT_INT_LIST, K_DOUBLE_LIST, K_OPT_DOUBLE_LIST, K_COMPLEX,
    K_VALUE
} ckind;

/* Per kind: the C type, its word in the C signature, the helper that boxes
   a C value ("" = the value is a dk_value already) and the one that unboxes
   a dk_value (with a scratch slot for the optional ones: the pointer points
   into it). The helpers are in the header's prelude (emit_prelude). */
static const struct kind_info {
    const char *c, *sig, *box, *unbox;
    int scratch;
} KINDS[] = {
    /* K_TENSOR */          { "dkgen_tensor", "Tensor", "dkgen_box_tensor", "dkgen_tensor_of", 0 },
    /* K_OPT_TENSOR */      { "dkgen_tensor", "Tensor?", "dkgen_box_opt_tensor", "dkgen_tensor_of", 0 },
    /* K_TENSOR_LIST */     { "dk_value_list", "Tensor[]", "dkgen_box_list", "dkgen_list_of", 0 },
    /* K_LIST */            { "dk_value_list", "list", "dkgen_box_list", "dkgen_list_of", 0 },
    /* K_OPT_LIST */        { "const dk_value_list *", "list?", "dkgen_box_opt_list", "dkgen_opt_list_of", 1 },
    /* K_INT */             { "int64_t", "int", "dk_int", "dkgen_int_of", 0 },
    /* K_OPT_INT */         { "const int64_t *", "int?", "dkgen_box_opt_int", "dkgen_opt_int_of", 1 },
    /* K_DOUBLE */          { "double", "float", "dk_double", "dkgen_double_of", 0 },
    /* K_OPT_DOUBLE */      { "const double *", "float?", "dkgen_box_opt_double", "dkgen_opt_double_of", 1 },
    /* K_BOOL */            { "int", "bool", "dk_bool", "dkgen_bool_of", 0 },
    /* K_OPT_BOOL */        { "const int *", "bool?", "dkgen_box_opt_bool", "dkgen_opt_bool_of", 1 },
    /* K_STRING */          { "const char *", "str", "dkgen_box_string", "dkgen_string_of", 0 },
    /* K_OBJECT */          { "void *", "object", "dkgen_box_object", "dkgen_object_of", 0 },
    /* K_INT_LIST */        { "dk_int_list", "int[]", "dk_ints", "dkgen_int_list_of", 0 },
    /* K_OPT_INT_LIST */    { "const dk_int_list *", "int[]?", "dkgen_box_opt_int_list", "dkgen_opt_int_list_of", 1 },
    /* K_DOUBLE_LIST */     { "dk_double_list", "float[]", "dk_doubles", "dkgen_double_list_of", 0 },
    /* K_OPT_DOUBLE_LIST */ { "const dk_double_list *", "float[]?", "dkgen_box_opt_double_list",
                              "dkgen_opt_double_list_of", 1 },
    /* K_COMPLEX */         { "dk_complex", "complex", "dkgen_box_complex", "dkgen_complex_of", 0 },
    /* K_VALUE */           { "dk_value", "value", "", "", 0 },
};

static int is_int_like(dk_type_kind k) {
    return k == DK_TYPE_Int || k == DK_TYPE_SymInt || k == DK_TYPE_ScalarType || k == DK_TYPE_Layout ||
           k == DK_TYPE_MemoryFormat || k == DK_TYPE_QScheme;
}
static int is_float_like(dk_type_kind k) { return k == DK_TYPE_Float || k == DK_TYPE_Number; }
static int is_object(dk_type_kind k) {
    return k == DK_TYPE_Generator || k == DK_TYPE_Storage || k == DK_TYPE_StreamObj || k == DK_TYPE_Class ||
           k == DK_TYPE_Capsule || k == DK_TYPE_Quantizer || k == DK_TYPE_AnyClass;
}

static ckind map_list(const dk_type *e, int optional) {
    if (e->kind == DK_TYPE_Tensor || (e->kind == DK_TYPE_Optional && e->contained[0]->kind == DK_TYPE_Tensor))
        return optional ? K_OPT_LIST : K_TENSOR_LIST;
    if (is_int_like(e->kind)) return optional ? K_OPT_INT_LIST : K_INT_LIST;
    if (e->kind == DK_TYPE_Float) return optional ? K_OPT_DOUBLE_LIST : K_DOUBLE_LIST;
    return optional ? K_OPT_LIST : K_LIST;
}

/* Every type maps: what has no C type of its own is a dk_value. A return
   never points into storage that the adapters would have to keep alive. */
static ckind map_type(const dk_type *t, int is_return) {
    ckind k;
    if (t->kind == DK_TYPE_Tensor) return K_TENSOR;
    if (is_int_like(t->kind)) return K_INT;
    if (is_float_like(t->kind)) return K_DOUBLE;
    if (t->kind == DK_TYPE_Complex) return K_COMPLEX;
    if (t->kind == DK_TYPE_Bool) return K_BOOL;
    if (t->kind == DK_TYPE_String || t->kind == DK_TYPE_DeviceObj) return K_STRING;
    if (is_object(t->kind)) return K_OBJECT;
    if (t->kind == DK_TYPE_List) return map_list(t->contained[0], 0);
    if (t->kind != DK_TYPE_Optional) return K_VALUE;
    t = t->contained[0];
    if (t->kind == DK_TYPE_Tensor) return K_OPT_TENSOR;
    if (t->kind == DK_TYPE_String || t->kind == DK_TYPE_DeviceObj) return K_STRING;
    if (is_object(t->kind)) return K_OBJECT;
    if (is_int_like(t->kind)) k = K_OPT_INT;
    else if (is_float_like(t->kind)) k = K_OPT_DOUBLE;
    else if (t->kind == DK_TYPE_Bool) k = K_OPT_BOOL;
    else if (t->kind == DK_TYPE_List) k = map_list(t->contained[0], 1);
    else return K_VALUE;
    return is_return ? K_VALUE : k;
}

/* ---- C names --------------------------------------------------------------- */

/* Names an argument or a tuple field must not take: C (C89 to C23) and C++
   keywords and alternative tokens; macros and objects of the C library
   headers that dispatch.h and its users include; and the generated code's
   own names (its locals are these with a trailing '_', as parameters are
   argument names with a trailing '_'; "result" is a field of <op>_args). */
static const char *const RESERVED[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
    "bool", "true", "false", "nullptr", "constexpr", "static_assert", "thread_local", "alignas", "alignof",
    "typeof", "typeof_unqual", "asm",
    "and", "and_eq", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const_cast", "consteval", "constinit", "co_await", "co_return", "co_yield", "decltype", "delete",
    "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "operator", "or", "or_eq", "private", "protected", "public", "reinterpret_cast", "requires", "static_cast",
    "template", "this", "throw", "try", "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq",
    "assert", "errno", "stdin", "stdout", "stderr", "offsetof", "setjmp", "sigsetjmp", "longjmp", "va_arg",
    "va_copy", "va_end", "va_start", "alloca", "linux", "unix", "i386", "complex", "imaginary", "I",
    "noreturn", "sched_priority", "strdupa", "strndupa", "assert_perror", "environ", "optarg", "optind",
    "opterr", "optopt", "timezone", "daylight", "tzname", "signgam", "pthread_cleanup_push",
    "pthread_cleanup_pop", "pthread_cleanup_push_defer_np", "pthread_cleanup_pop_restore_np",
    "be16toh", "be32toh", "be64toh", "htobe16", "htobe32", "htobe64", "htole16", "htole32", "htole64",
    "le16toh", "le32toh", "le64toh",
    "op", "ks", "kernel", "pack", "ret", "val", "tmp", "stack", "reg", "handle", "key", "fn", "user_data",
    "idx", "opts", "all", "args", "result", "status", "found",
};

static int is_reserved_word(const char *n) {
    size_t i;
    for (i = 0; i < sizeof RESERVED / sizeof *RESERVED; i++)
        if (strcmp(RESERVED[i], n) == 0) return 1;
    return 0;
}

/* A name the generated code can use as it is. */
static int is_safe_name(const char *n, const nameset *globals) {
    size_t len = strlen(n), i, upper = 0, lower = 0;
    if (is_reserved_word(n) || ns_find(globals, n)) return 0;
    if (n[0] == '_' && (n[1] == '_' || isupper((unsigned char)n[1]))) return 0;   /* reserved to the implementation */
    if (tolower((unsigned char)n[0]) == 'd' && tolower((unsigned char)n[1]) == 'k') return 0;   /* dk_, DK_, dkgen_ */
    if (len >= 2 && n[len - 2] == '_' && n[len - 1] == 't') return 0;   /* POSIX types: size_t, int64_t */
    if (strncmp(n, "arg", 3) == 0) {   /* dkgen's own renamings: arg_x, arg3_x */
        for (i = 3; isdigit((unsigned char)n[i]); i++) {}
        if (n[i] == '_') return 0;
    }
    for (i = 0; i < len; i++) {
        if (isupper((unsigned char)n[i])) upper++;
        if (islower((unsigned char)n[i])) lower++;
    }
    return !(upper >= 2 && lower == 0);   /* all capitals: a macro, maybe (NULL, EOF) */
}

/* The C name of argument or return `index`: the schema's name if it is
   safe, else arg_<name>; then arg<index>_<name> if an earlier one took it
   (or a generated global has it), then arg<index>_<k>_<name>. */
static char *c_field_name(const char *name, int index, char *const *names, const nameset *globals) {
    char *cand = is_safe_name(name, globals) ? xstrdup(name) : xprintf("arg_%s", name);
    int i, taken, attempt;
    for (attempt = 0;; attempt++) {
        for (taken = 0, i = 0; i < index && !taken; i++) taken = strcmp(names[i], cand) == 0;
        if (!taken && !ns_find(globals, cand)) return cand;
        free(cand);
        cand = attempt == 0 ? xprintf("arg%d_%s", index, name) : xprintf("arg%d_%d_%s", index, attempt, name);
    }
}

/* "ns::name.overload" -> "ns_name_overload"; dispatch.h's and dkgen's
   prefixes (dk..., DK..., any case) get "op_" in front. */
static char *c_op_ident(const dk_schema *s) {
    sbuf b = { NULL, 0, 0 };
    const char *p;
    if (tolower((unsigned char)s->name[0]) == 'd' && tolower((unsigned char)s->name[1]) == 'k') sb_puts(&b, "op_");
    for (p = s->name; *p; p++) {
        if (p[0] == ':' && p[1] == ':') { sb_putc(&b, '_'); p++; }
        else sb_putc(&b, *p);
    }
    if (s->overload[0]) sb_printf(&b, "_%s", s->overload);
    return sb_take(&b);
}

/* ---- what dkgen knows of one operator ------------------------------------- */

/* Where a default lives: nowhere (a literal), a static scalar, a static list. */
enum { STORE_NONE, STORE_SCALAR, STORE_LIST };

typedef struct cvalue {        /* an argument or a return, as C sees it */
    const dk_arg *a;
    ckind kind;
    char *field;               /* struct field and name in C; the parameter is field + "_" */
    int has_default;           /* the schema's default has a C value */
    int store;                 /* STORE_*: the default needs a static object */
    char *dflt;                /* the default as a C expression */
    char *dflt_decl;           /* the static object's definition, or NULL */
} cvalue;

typedef struct opinfo {
    dk_schema *s;
    int line;
    char *id;
    const char *boxed_only;    /* why it is bound boxed only, or NULL */
    int n, nr, ndefaults;
    cvalue *args, *rets;
} opinfo;

/* ---- defaults as C values ------------------------------------------------- */

static void put_int64(sbuf *b, int64_t v) {
    if (v == INT64_MIN) sb_puts(b, "(-9223372036854775807 - 1)");
    else sb_printf(b, "%lld", (long long)v);
}
/* A double literal that reads back exactly; 0 for inf and nan. */
static int put_double(sbuf *b, double d) {
    char tmp[64];
    if (!isfinite(d)) return 0;
    snprintf(tmp, sizeof tmp, "%.17g", d);
    sb_puts(b, tmp);
    if (!strpbrk(tmp, ".eE")) sb_puts(b, ".0");
    return 1;
}
/* A C string literal of n bytes: escapes, octal for anything unprintable,
   and no trigraph ("??/" would be a backslash under -std=c99). */
static void put_c_string(sbuf *b, const char *s, size_t n) {
    size_t i;
    sb_putc(b, '"');
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { sb_putc(b, '\\'); sb_putc(b, (char)c); }
        else if (c == '?' && i > 0 && s[i - 1] == '?') sb_puts(b, "\\?");
        else if (c >= 0x20 && c < 0x7f) sb_putc(b, (char)c);
        else sb_printf(b, "\\%03o", c);
    }
    sb_putc(b, '"');
}

/* A scalar default as a literal of kind K_INT, K_DOUBLE, K_BOOL or
   K_COMPLEX (dkgen_complex(re, im)); 0 when the value has no exact C
   literal of that kind. The parser refuses a default of a kind the type
   cannot hold ("int n=True", "bool n=1"); what is left are c10's
   conversions, which the boxed defaults make too: an integer for a float
   or a complex, an integer or bool for a Scalar (a C double). */
static int put_scalar(sbuf *b, ckind k, const dk_default *d) {
    if (k == K_COMPLEX && (d->kind == DK_DEFAULT_COMPLEX || d->kind == DK_DEFAULT_DOUBLE || d->kind == DK_DEFAULT_INT)) {
        int ok;
        sb_puts(b, "dkgen_complex(");
        ok = put_double(b, d->kind == DK_DEFAULT_INT ? (double)d->i : d->re);
        sb_puts(b, ", ");
        ok = ok && put_double(b, d->kind == DK_DEFAULT_COMPLEX ? d->im : 0.0);
        sb_puts(b, ")");
        return ok;
    }
    if (k == K_INT && d->kind == DK_DEFAULT_INT) { put_int64(b, d->i); return 1; }
    if (k == K_DOUBLE && d->kind == DK_DEFAULT_DOUBLE) return put_double(b, d->re);
    if (k == K_DOUBLE && d->kind == DK_DEFAULT_INT) return put_double(b, (double)d->i);
    if (k == K_DOUBLE && d->kind == DK_DEFAULT_BOOL) { sb_puts(b, d->b ? "1.0" : "0.0"); return 1; }
    if (k == K_BOOL && d->kind == DK_DEFAULT_BOOL) { sb_puts(b, d->b ? "1" : "0"); return 1; }
    return 0;
}

/* The scalar kind of an optional scalar or of a list's elements. */
static ckind element_kind(ckind k) {
    switch (k) {
    case K_OPT_INT: case K_INT_LIST: case K_OPT_INT_LIST: return K_INT;
    case K_OPT_DOUBLE: case K_DOUBLE_LIST: case K_OPT_DOUBLE_LIST: return K_DOUBLE;
    case K_OPT_BOOL: return K_BOOL;
    default: return K_VALUE;
    }
}
static int is_pointer_kind(ckind k) {
    return k == K_TENSOR || k == K_OPT_TENSOR || k == K_STRING || k == K_OBJECT || k == K_OPT_LIST ||
           k == K_OPT_INT || k == K_OPT_DOUBLE || k == K_OPT_BOOL || k == K_OPT_INT_LIST || k == K_OPT_DOUBLE_LIST;
}

enum { MAX_DEFAULT_STRING = 1024 };
enum { MAX_STRING_LITERAL = 4000 };   /* C99 compilers need not take more than 4095 */

/* Whether argument v's default has a C value, and where it lives. Kept
   apart from default_text (which needs the operator's C name) so that the
   generated names are known before the text is written. */
static int default_store(const cvalue *v, int *store) {
    const dk_default *d = v->a->default_value;
    size_t i;
    sbuf tmp = { NULL, 0, 0 };
    int ok = 1;
    *store = STORE_NONE;
    if (!d) return 0;
    if (d->kind == DK_DEFAULT_NONE) return is_pointer_kind(v->kind) || v->kind == K_VALUE;
    switch (v->kind) {
    case K_INT: case K_DOUBLE: case K_BOOL: case K_COMPLEX:
        ok = put_scalar(&tmp, v->kind, d);
        break;
    case K_OPT_INT: case K_OPT_DOUBLE: case K_OPT_BOOL:
        ok = put_scalar(&tmp, element_kind(v->kind), d);
        *store = STORE_SCALAR;
        break;
    case K_STRING:
        ok = (d->kind == DK_DEFAULT_STRING && d->len <= MAX_DEFAULT_STRING && !memchr(d->s, '\0', d->len)) ||
             (d->kind == DK_DEFAULT_DEVICE && strlen(d->s) <= MAX_DEFAULT_STRING);
        break;
    case K_VALUE:
        ok = d->kind == DK_DEFAULT_BOOL || d->kind == DK_DEFAULT_INT ||
             (d->kind == DK_DEFAULT_DOUBLE && isfinite(d->re)) ||
             (d->kind == DK_DEFAULT_STRING && d->len <= MAX_DEFAULT_STRING && !memchr(d->s, '\0', d->len)) ||
             (d->kind == DK_DEFAULT_DEVICE && strlen(d->s) <= MAX_DEFAULT_STRING);
        break;
    case K_INT_LIST: case K_OPT_INT_LIST: case K_DOUBLE_LIST: case K_OPT_DOUBLE_LIST:
        ok = d->kind == DK_DEFAULT_LIST;
        for (i = 0; ok && i < d->count; i++) ok = put_scalar(&tmp, element_kind(v->kind), &d->items[i]);
        *store = STORE_LIST;
        break;
    case K_TENSOR_LIST: case K_LIST: case K_OPT_LIST:   /* empty, or bools: a static dk_value holds a bool */
        ok = d->kind == DK_DEFAULT_LIST;
        for (i = 0; ok && i < d->count; i++) ok = d->items[i].kind == DK_DEFAULT_BOOL;
        *store = STORE_LIST;
        break;
    default:
        ok = 0;
    }
    free(tmp.p);
    if (!ok) *store = STORE_NONE;
    return ok;
}

/* The default of argument i as a C expression, and the definition of the
   static object it refers to (<op>_default<i>, <op>_default<i>_items). */
static void default_text(const opinfo *op, int i, cvalue *v) {
    const dk_default *d = v->a->default_value;
    const char *item_type = v->kind == K_INT_LIST || v->kind == K_OPT_INT_LIST         ? "int64_t"
                            : v->kind == K_DOUBLE_LIST || v->kind == K_OPT_DOUBLE_LIST ? "double"
                                                                                       : "dk_value";
    sbuf e = { NULL, 0, 0 }, decl = { NULL, 0, 0 };
    size_t j;
    if (d->kind == DK_DEFAULT_NONE) sb_puts(&e, v->kind == K_VALUE ? "dk_none()" : "NULL");
    else if (v->store == STORE_SCALAR) {
        sb_printf(&decl, "static const %s %s_default%d = ", KINDS[element_kind(v->kind)].c, op->id, i);
        put_scalar(&decl, element_kind(v->kind), d);
        sb_puts(&decl, ";\n");
        sb_printf(&e, "&%s_default%d", op->id, i);
    } else if (v->store == STORE_LIST) {
        const char *list_type = KINDS[v->kind == K_OPT_LIST ? K_LIST : v->kind == K_OPT_INT_LIST ? K_INT_LIST
                                      : v->kind == K_OPT_DOUBLE_LIST ? K_DOUBLE_LIST : v->kind].c;
        if (d->count) {
            sb_printf(&decl, "static const %s %s_default%d_items[] = {", item_type, op->id, i);
            for (j = 0; j < d->count; j++) {
                sb_puts(&decl, j ? ", " : " ");
                if (element_kind(v->kind) != K_VALUE) put_scalar(&decl, element_kind(v->kind), &d->items[j]);
                else sb_printf(&decl, "{ DK_VALUE_BOOL, { %d } }", d->items[j].b ? 1 : 0);   /* as.b comes first */
            }
            sb_puts(&decl, " };\n");
            sb_printf(&decl, "static const %s %s_default%d = { %s_default%d_items, %lu };\n", list_type, op->id, i,
                      op->id, i, (unsigned long)d->count);
        } else {
            sb_printf(&decl, "static const %s %s_default%d = { NULL, 0 };\n", list_type, op->id, i);
        }
        sb_printf(&e, "%s%s_default%d", is_pointer_kind(v->kind) ? "&" : "", op->id, i);
    } else if (v->kind == K_STRING || (v->kind == K_VALUE && (d->kind == DK_DEFAULT_STRING ||
                                                              d->kind == DK_DEFAULT_DEVICE))) {
        if (v->kind == K_VALUE) sb_puts(&e, "dk_string(");
        if (d->kind == DK_DEFAULT_STRING) put_c_string(&e, d->s, d->len);
        else put_c_string(&e, d->s, strlen(d->s));
        if (v->kind == K_VALUE) sb_puts(&e, ")");
    } else if (v->kind == K_VALUE) {
        ckind k = d->kind == DK_DEFAULT_BOOL ? K_BOOL : d->kind == DK_DEFAULT_INT ? K_INT : K_DOUBLE;
        sb_printf(&e, "%s(", KINDS[k].box);
        put_scalar(&e, k, d);
        sb_puts(&e, ")");
    } else {
        put_scalar(&e, v->kind, d);
    }
    v->dflt = sb_take(&e);
    v->dflt_decl = decl.p ? sb_take(&decl) : NULL;
}

/* ---- describing the operators -------------------------------------------- */

static void describe(opinfo *op) {
    const dk_schema *s = op->s;
    int i, store;
    op->n = s->num_arguments;
    op->nr = s->num_returns;
    if (s->name_only) op->boxed_only = "a bare operator name";
    else if (s->is_vararg || s->is_varret) op->boxed_only = "varargs";
    if (op->boxed_only) op->n = op->nr = 0;
    op->args = (cvalue *)xrealloc(NULL, ((size_t)op->n + 1) * sizeof *op->args);
    op->rets = (cvalue *)xrealloc(NULL, ((size_t)op->nr + 1) * sizeof *op->rets);
    memset(op->args, 0, ((size_t)op->n + 1) * sizeof *op->args);
    memset(op->rets, 0, ((size_t)op->nr + 1) * sizeof *op->rets);
    for (i = 0; i < op->n; i++) {
        cvalue *v = &op->args[i];
        v->a = &s->arguments[i];
        v->kind = map_type(v->a->type, 0);
        v->has_default = default_store(v, &store);
        v->store = store;
        op->ndefaults += v->has_default;
    }
    for (i = 0; i < op->nr; i++) {
        op->rets[i].a = &s->returns[i];
        op->rets[i].kind = map_type(s->returns[i].type, 1);
    }
}

/* ---- warnings: what a schema says that may not be what its author meant ---- */

/* C type names that the schema language reads as type variables (a
   lower-case unknown name is one: any value, a dk_value in C), with the
   schema type the author most likely meant. */
static const char *c_type_meant(const char *name) {
    static const char *const ints[] = { "size_t", "ssize_t", "ptrdiff_t", "intptr_t", "uintptr_t", "int8_t",
                                        "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
                                        "uint64_t", "long", "short", "unsigned", "signed", "char" };
    size_t i;
    if (!strcmp(name, "double")) return "float";
    if (!strcmp(name, "string")) return "str";
    if (!strcmp(name, "void")) return "() as the return, or no argument";
    for (i = 0; i < sizeof ints / sizeof *ints; i++)
        if (!strcmp(name, ints[i])) return "int";
    return NULL;
}

static void warn_type(const opinfo *op, const char *path, const dk_type *t, const char *what, const char *name) {
    int i;
    if (t->kind == DK_TYPE_Var && c_type_meant(t->str))
        fprintf(stderr, "%s:%d: warning: %s %s: '%s' is no schema type but a type variable (any value, a dk_value "
                "in C); the schema type is %s\n", path, op->line, what, name, t->str, c_type_meant(t->str));
    for (i = 0; i < t->num_contained; i++) warn_type(op, path, t->contained[i], what, name);
}

/* Type variables named as C types; defaults that have no C value (the
   argument is then required in <op>_calld and <op>_call_opts). */
static void warn_op(const opinfo *op, const char *path) {
    int i;
    for (i = 0; i < op->n; i++) {
        const cvalue *v = &op->args[i];
        warn_type(op, path, v->a->type, "argument", v->a->name);
        if (v->a->default_value && !v->has_default) {
            size_t len = strlen(v->a->default_text);
            fprintf(stderr, "%s:%d: warning: argument %s: the default %.*s%s has no C value of type %s; %s_calld "
                    "and %s_call_opts take the argument as required\n", path, op->line, v->a->name,
                    len > 40 ? 36 : (int)len, v->a->default_text, len > 40 ? " ..." : "", KINDS[v->kind].c,
                    op->id, op->id);
        }
    }
    for (i = 0; i < op->nr; i++)
        warn_type(op, path, op->rets[i].a->type, "return", op->rets[i].a->name[0] ? op->rets[i].a->name : "(unnamed)");
}

/* Calls fn with every global name operator `op` generates under C name id
   (until fn returns non-zero). */
static char *signature(const opinfo *op);
static int each_global_name(const opinfo *op, const char *id, int (*fn)(const char *name, void *ud), void *ud) {
    static const char *const typed[] = { "keyset", "fn", "args", "slow", "invoke", "call", "redispatch",
                                         "SIGNATURE", "box", "unbox_result", "call_unboxed", "adapters" };
    static const char *const both[] = { "SCHEMA", "NAME", "def_at", "def", "library_def", "kernel", "impl_at", "impl",
                                        "library_impl", "bind" };
    static const char *const with_defaults[] = { "opts", "defaults", "call_opts", "calld", "calld_wrong" };
    const char *names[64];
    char *sig = op->boxed_only ? NULL : signature(op), *name;
    size_t n = 0, i, name_len = strlen(op->s->name) + (op->s->overload[0] ? 1 + strlen(op->s->overload) : 0);
    int stop = 0, k;
    for (i = 0; i < sizeof both / sizeof *both; i++) names[n++] = both[i];
    if (strlen(op->s->text) > MAX_STRING_LITERAL) names[n++] = "SCHEMA_text";
    if (name_len > MAX_STRING_LITERAL) names[n++] = "NAME_text";
    if (op->boxed_only) names[n++] = "call", names[n++] = "redispatch";
    for (i = 0; !op->boxed_only && i < sizeof typed / sizeof *typed; i++) names[n++] = typed[i];
    if (sig && strlen(sig) > MAX_STRING_LITERAL) names[n++] = "SIGNATURE_text";
    if (op->nr > 1) names[n++] = "result";
    for (i = 0; op->ndefaults && i < sizeof with_defaults / sizeof *with_defaults; i++) names[n++] = with_defaults[i];
    free(sig);
    for (i = 0; i < n && !stop; i++) {
        name = xprintf("%s_%s", id, names[i]);
        stop = fn(name, ud);
        free(name);
    }
    for (k = 0; op->ndefaults && k <= op->ndefaults && !stop; k++) {   /* calld_<number of macro arguments> */
        name = xprintf("%s_calld_%d", id, 1 + op->n - op->ndefaults + k);
        stop = fn(name, ud);
        free(name);
        if (stop) break;
        name = xprintf("%s_calld_takes_%d", id, 1 + op->n - op->ndefaults + k);
        stop = fn(name, ud);
        free(name);
    }
    for (k = 0; k < op->n && !stop; k++) {
        if (!op->args[k].has_default || op->args[k].store == STORE_NONE) continue;
        name = xprintf("%s_default%d", id, k);
        stop = fn(name, ud);
        free(name);
        if (op->args[k].store != STORE_LIST || stop) continue;
        name = xprintf("%s_default%d_items", id, k);
        stop = fn(name, ud);
        free(name);
    }
    return stop;
}

static int name_taken(const char *name, void *set) { return ns_find((const nameset *)set, name) != 0; }
typedef struct add_ctx { nameset *set; int line; } add_ctx;
static int name_add(const char *name, void *ud) {
    add_ctx *c = (add_ctx *)ud;
    ns_add(c->set, xstrdup(name), c->line);
    return 0;
}
typedef struct find_ctx { const nameset *set; int line; char *name; } find_ctx;
static int name_find(const char *name, void *ud) {
    find_ctx *c = (find_ctx *)ud;
    if (!(c->line = ns_find(c->set, name))) return 0;
    c->name = xstrdup(name);
    return 1;
}

/* The operator's C name: its own, or numbered when one of its names was
   taken by an earlier operator (a warning tells which). */
static void assign_id(opinfo *op, nameset *globals, const char *path) {
    char *base = c_op_ident(op->s), *id = xstrdup(base);
    int k = 2;
    find_ctx clash = { NULL, 0, NULL };
    add_ctx add;
    clash.set = globals;
    if (each_global_name(op, id, name_find, &clash)) {
        while (each_global_name(op, id, name_taken, globals)) {
            free(id);
            id = xprintf("%s_%d", base, k++);
        }
        fprintf(stderr, "%s:%d: warning: %s is generated for line %d already; this operator is %s\n", path, op->line,
                clash.name, clash.line, id);
        free(clash.name);
    }
    free(base);
    op->id = id;
    add.set = globals;
    add.line = op->line;
    each_global_name(op, id, name_add, &add);
}

/* Field names of the arguments and of a tuple's returns (once every global
   name is known: a field must not be one of the object-like macros). */
static void assign_fields(opinfo *op, const nameset *globals) {
    char **names = (char **)xrealloc(NULL, ((size_t)op->n + (size_t)op->nr + 1) * sizeof *names);
    int i;
    for (i = 0; i < op->n; i++) names[i] = op->args[i].field = c_field_name(op->args[i].a->name, i, names, globals);
    for (i = 0; i < op->nr; i++) {
        const char *n = op->rets[i].a->name;
        char *unnamed = xprintf("r%d", i);
        names[i] = op->rets[i].field = c_field_name(n[0] ? n : unnamed, i, names, globals);
        free(unnamed);
    }
    free(names);
    for (i = 0; i < op->n; i++)
        if (op->args[i].has_default) default_text(op, i, &op->args[i]);
}

/* ---- writing C ------------------------------------------------------------ */

/* text in a comment: no comment end or start, no trigraph, printable only */
static void emit_comment_text(FILE *o, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '*' && s[1] == '/') fputs("*\\/", o), s++;
        else if (c == '/' && s[1] == '*') fputs("/\\*", o), s++;
        else if (c == '?' && s[1] == '?') fputs("?\\", o);
        else if (c >= 0x20 && c < 0x7f) fputc(c, o);
        else fprintf(o, "\\%03o", c);
    }
}


/* #define <id>_<what> "text": a string literal, or for a long text an
   array (-pedantic rejects string literals over 4095 bytes). */
static void emit_string_macro(FILE *o, const char *id, const char *what, const char *text) {
    size_t n = strlen(text), i;
    if (n <= MAX_STRING_LITERAL) {
        sbuf b = { NULL, 0, 0 };
        put_c_string(&b, text, n);
        fprintf(o, "#define %s_%s %s\n", id, what, b.p);
        free(b.p);
        return;
    }
    fprintf(o, "static const char %s_%s_text[] = {", id, what);
    for (i = 0; i <= n; i++) fprintf(o, "%s'\\%03o'", i % 16 ? ", " : i ? ",\n    " : "\n    ", (unsigned char)text[i]);
    fprintf(o, "\n};\n#define %s_%s %s_%s_text\n", id, what, id, what);
}

/* "type name", without a space after a '*' */
static void emit_decl(FILE *o, const char *type, const char *name, const char *suffix) {
    size_t n = strlen(type);
    fprintf(o, "%s%s%s%s", type, n && type[n - 1] == '*' ? "" : " ", name, suffix);
}

/* ", T1 a1_, T2 a2_": the parameters (sep: what comes before the first) */
static void emit_params(FILE *o, const opinfo *op, const char *sep, int only_required) {
    int i;
    for (i = 0; i < op->n; i++) {
        if (only_required && op->args[i].has_default) continue;
        fputs(sep, o);
        emit_decl(o, KINDS[op->args[i].kind].c, op->args[i].field, "_");
        sep = ", ";
    }
}
/* ", a1_, a2_" (prefix before each name: "" or "pack_.") */
static void emit_arg_names(FILE *o, const opinfo *op, const char *sep, const char *prefix, const char *suffix) {
    int i;
    for (i = 0; i < op->n; i++) {
        fprintf(o, "%s%s%s%s", sep, prefix, op->args[i].field, suffix);
        sep = ", ";
    }
}

static const char *ret_type(const opinfo *op, char **owned) {
    *owned = NULL;
    if (op->nr == 0) return "void";
    if (op->nr == 1) return KINDS[op->rets[0].kind].c;
    return *owned = xprintf("%s_result", op->id);
}

/* "(Tensor, Tensor) (Tensor, int[], bool)": the C signature in schema words,
   as dispatch.h computes it from a def's schema (dk_schema_c_signature) to
   check gen's kernels against the def: the two must be the same text, or
   every typed registration would be refused */
static char *signature(const opinfo *op) {
    sbuf b = { NULL, 0, 0 };
    char *mine;
    int i, n;
    sb_puts(&b, "(");
    for (i = 0; i < op->nr; i++) sb_printf(&b, "%s%s", i ? ", " : "", KINDS[op->rets[i].kind].sig);
    sb_puts(&b, ") (");
    for (i = 0; i < op->n; i++) sb_printf(&b, "%s%s", i ? ", " : "", KINDS[op->args[i].kind].sig);
    sb_puts(&b, ")");
    mine = sb_take(&b);
    n = dk_schema_c_signature(op->s, NULL, 0);
    if (n >= 0) {
        char *theirs = (char *)xrealloc(NULL, (size_t)n + 1);
        dk_schema_c_signature(op->s, theirs, (size_t)n + 1);
        if (strcmp(mine, theirs) != 0) {
            fprintf(stderr, "dkgen: internal error: %s: signature %s, dispatch.h's %s\n", op->s->text, mine, theirs);
            exit(1);
        }
        free(theirs);
    }
    return mine;
}

static char *op_name(const dk_schema *s) { return xprintf("%s%s%s", s->name, s->overload[0] ? "." : "", s->overload); }

/* The comment that opens an operator, and its string macros. */
static void emit_op_heading(FILE *o, const opinfo *op) {
    char *name = op_name(op->s);
    fputs("/* ---- ", o);
    emit_comment_text(o, op->s->text);
    if (op->boxed_only) fprintf(o, " (bound boxed: %s)", op->boxed_only);
    fputs(" */\n", o);
    emit_string_macro(o, op->id, "SCHEMA", op->s->text);
    emit_string_macro(o, op->id, "NAME", name);
    if (!op->boxed_only) {
        char *sig = signature(op);
        emit_string_macro(o, op->id, "SIGNATURE", sig);
        free(sig);
    }
    free(name);
}

/* <op>_result, <op>_fn, <op>_args */
static void emit_types(FILE *o, const opinfo *op) {
    char *owned;
    const char *rt = ret_type(op, &owned);
    int i;
    if (op->nr > 1) {
        fprintf(o, "typedef struct %s_result { ", op->id);
        for (i = 0; i < op->nr; i++) emit_decl(o, KINDS[op->rets[i].kind].c, op->rets[i].field, "; ");
        fprintf(o, "} %s_result;\n", op->id);
    }
    fprintf(o, "typedef %s (*%s_fn)(const dk_kernel *kernel_, dk_keyset ks_", rt, op->id);
    emit_params(o, op, ", ", 0);
    fprintf(o, ");\ntypedef struct %s_args {", op->id);
    for (i = 0; i < op->n; i++) fputs(" ", o), emit_decl(o, KINDS[op->args[i].kind].c, op->args[i].field, ";");
    if (op->nr) fputs(" ", o), emit_decl(o, rt, "result", ";");
    if (!op->n && !op->nr) fputs(" char unused_;", o);   /* C has no empty struct */
    fprintf(o, " } %s_args;\n", op->id);
    free(owned);
}

/* <op>_keyset: the keys of the dispatch arguments (Tensor, Tensor?,
   Tensor[], Tensor?[]), as the boxed path takes them from the stack. */
static void emit_keyset(FILE *o, const opinfo *op) {
    int i;
    fprintf(o, "DK_INLINE dk_keyset %s_keyset(", op->id);
    emit_params(o, op, "", 0);
    fprintf(o, "%s) {\n    dk_keyset ks_ = DK_KS_EMPTY;\n", op->n ? "" : "void");
    for (i = 0; i < op->n; i++) {
        const char *a = op->args[i].field, *keys = NULL;
        if (op->args[i].a->is_dispatch) switch (op->args[i].kind) {
            case K_TENSOR: keys = "DKGEN_TENSOR_KEYSET"; break;
            case K_OPT_TENSOR: keys = "dkgen_opt_tensor_keyset"; break;
            case K_TENSOR_LIST: case K_LIST: keys = "dkgen_list_keyset"; break;
            case K_OPT_LIST: keys = "dkgen_opt_list_keyset"; break;
            case K_VALUE: keys = "dkgen_value_keyset"; break;
            default: break;
            }
        if (keys) fprintf(o, "    ks_ = dk_ks_or(ks_, %s(%s_));\n", keys, a);
        else fprintf(o, "    (void)%s_;\n", a);
    }
    fputs("    return ks_;\n}\n", o);
}

/* Per-operator call code has no if statement: gcc's -Wmisleading-indentation
   reads the source lines around each one, which takes minutes in a header of
   thousands of operators. */

/* dkgen_<op>_slow: a kernel record without fn (its argument pack goes to
   dk_call_packed, with table_, the snapshot the record was read from: the
   adapters that box the pack come from the same state), or any record
   while a trace hook is set (or whose entry has no fn: a table rewritten
   in place), between dk_trace_report_begin (the hook's report: the
   dispatch primitives make none) and dk_trace_end (a timeline's event);
   re_: a redispatch, last (helpers are dkgen_-prefixed: out of the way of
   kernels' names). Out of line (DKGEN_SLOW_PATH), so that the call site
   stays a test and a tail call of the kernel; the record and keyset come
   first, as the kernel takes them, so both ways find them in the same
   registers. */
static void emit_slow(FILE *o, const opinfo *op, const char *rt) {
    int i;
    fprintf(o, "static DKGEN_SLOW_PATH %s dkgen_%s_slow(const dk_kernel *kernel_, dk_keyset ks_, "
            "const dk_op_table *table_, const dk_operator *op_", rt, op->id);
    emit_params(o, op, ", ", 0);
    fprintf(o, ", int re_) {\n    %s_args pack_;\n    unsigned trace_ = dk_trace_report_begin(op_, ks_, kernel_, re_);\n", op->id);
    for (i = 0; i < op->n; i++) fprintf(o, "    pack_.%s = %s_;\n", op->args[i].field, op->args[i].field);
    if (!op->n && !op->nr) fputs("    pack_.unused_ = 0;\n", o);
    fprintf(o, "    kernel_->fn ? %s((%s_fn)kernel_->fn)(kernel_, ks_", op->nr ? "(void)(pack_.result = " : "", op->id);
    emit_arg_names(o, op, ", ", "", "_");
    if (op->nr)
        fputs(")) : dk_call_packed(op_, table_, ks_, kernel_, &pack_, &pack_.result, sizeof pack_.result);\n"
              "    dk_trace_end(trace_);\n    return pack_.result;\n}\n", o);
    else
        fputs(") : dk_call_packed(op_, table_, ks_, kernel_, &pack_, NULL, 0);\n    dk_trace_end(trace_);\n}\n", o);
}

/* fn_ ? the kernel : dkgen_<op>_slow, the call site's one branch, in
   parentheses: fn_ is the fn read with the record from its entry
   (dk_dispatch_kernel_with_fn, dk_redispatch_kernel_with_fn), NULL while
   a trace hook is set. Both are tail calls where no call bracket follows. */
static void emit_invoke(FILE *o, const opinfo *op, int re) {
    fprintf(o, "(DKGEN_LIKELY(fn_ != NULL) ? ((%s_fn)fn_)(kernel_, ks_", op->id);
    emit_arg_names(o, op, ", ", "", "_");
    fprintf(o, ") : dkgen_%s_slow(kernel_, ks_, table_, op_", op->id);
    emit_arg_names(o, op, ", ", "", "_");
    fprintf(o, ", %d))", re);
}

/* kernel_ = the read: the record, its snapshot and its fn; a call's
   keyset from its arguments, a redispatch's as given */
static void emit_read(FILE *o, const opinfo *op, int re) {
    if (re) {
        fputs("kernel_ = dk_redispatch_kernel_with_fn(op_, ks_, &table_, &fn_)", o);
        return;
    }
    fprintf(o, "kernel_ = dk_dispatch_kernel_with_fn(op_, %s_keyset(", op->id);
    emit_arg_names(o, op, "", "", "_");
    fputs("), &ks_, &table_, &fn_)", o);
}

/* "R <pre><op>_<what><post>(const dk_operator *op_[, dk_keyset ks_], params) {"
   and the locals the read fills */
static void emit_entry_head(FILE *o, const opinfo *op, const char *rt, const char *pre, const char *post, int re) {
    fprintf(o, "%s %s%s_%s%s(const dk_operator *op_%s", rt, pre, op->id, re ? "redispatch" : "call", post,
            re ? ", dk_keyset ks_" : "");
    emit_params(o, op, ", ", 0);
    fprintf(o, ") {\n%s    const dk_op_table *table_;\n    const dk_kernel *kernel_;\n    dk_fn fn_;\n",
            re ? "" : "    dk_keyset ks_;\n");
}

/* <op>_call (re 0) and <op>_redispatch (re 1): read, then invoke. Under
   DK_CALL_EPOCHS inside the call bracket, as DK_DECLARE_OP's: the
   outermost enter of an attached thread inline (dk_call_enter_outermost,
   dk_call_exit_outermost), any other tail-calls dkgen_<op>_call_any /
   _redispatch_any, an out-of-line copy between dk_call_enter and
   dk_call_exit, so that nothing is live across a call on the inline way
   (the call site saves no register for it). */
static void emit_entry(FILE *o, const opinfo *op, const char *rt, int re) {
    const char *what = re ? "redispatch" : "call";
    fputs("#ifdef DK_CALL_EPOCHS\nstatic DKGEN_SLOW_PATH ", o);
    emit_entry_head(o, op, rt, "dkgen_", "_any", re);
    if (op->nr) fprintf(o, "    %s ret_;\n", rt);
    fputs("    dk_call_enter();\n    ", o);
    emit_read(o, op, re);
    fprintf(o, ";\n    %s", op->nr ? "ret_ = " : "");
    emit_invoke(o, op, re);
    fprintf(o, ";\n    dk_call_exit();\n%s}\n#endif\n", op->nr ? "    return ret_;\n" : "");
    fputs("DK_INLINE ", o);
    emit_entry_head(o, op, rt, "", "", re);
    fputs("#ifdef DK_CALL_EPOCHS\n", o);
    if (op->nr) fprintf(o, "    %s ret_;\n    return ", rt);
    else fputs("    ", o);
    fputs("DKGEN_LIKELY(dk_call_enter_outermost()) ? ", o);
    fputs(op->nr ? "(" : "(void)(", o);
    emit_read(o, op, re);
    fputs(op->nr ? ", ret_ = " : ", ", o);
    emit_invoke(o, op, re);
    fprintf(o, ", dk_call_exit_outermost()%s) : dkgen_%s_%s_any(op_%s", op->nr ? ", ret_" : "", op->id, what,
            re ? ", ks_" : "");
    emit_arg_names(o, op, ", ", "", "_");
    fputs(");\n#else\n    ", o);
    emit_read(o, op, re);
    fputs(op->nr ? ";\n    return " : ";\n    ", o);
    emit_invoke(o, op, re);
    fputs(";\n#endif\n}\n", o);
}

static void emit_calls(FILE *o, const opinfo *op) {
    char *owned;
    const char *rt = ret_type(op, &owned);
    emit_slow(o, op, rt);
    emit_entry(o, op, rt, 0);
    emit_entry(o, op, rt, 1);
    free(owned);
}

/* dk_stack_push(stack_, <boxed expr>); */
static void emit_push(FILE *o, const cvalue *v, const char *prefix) {
    fprintf(o, "    dk_stack_push(stack_, %s(%s%s));\n", KINDS[v->kind].box, prefix, v->field);
}

/* typed -> boxed: push the argument pack, in order */
static void emit_box_fn(FILE *o, const opinfo *op) {
    int i;
    fprintf(o, "static void %s_box(const void *args_, dk_stack *stack_) {\n", op->id);
    if (op->n) fprintf(o, "    const %s_args *pack_ = (const %s_args *)args_;\n", op->id, op->id);
    else fputs("    (void)args_; (void)stack_;\n", o);
    for (i = 0; i < op->n; i++) emit_push(o, &op->args[i], "pack_->");
    fputs("}\n", o);
}

/* boxed -> typed: the returns, popped (the last is on top) */
static void emit_unbox_result_fn(FILE *o, const opinfo *op) {
    char *owned;
    const char *rt = ret_type(op, &owned);
    int i;
    fprintf(o, "static void %s_unbox_result(dk_stack *stack_, void *result_) {\n", op->id);
    if (op->nr == 0) fputs("    (void)stack_; (void)result_;\n", o);
    else fprintf(o, "    %s *ret_ = (%s *)result_;\n", rt, rt);
    if (op->nr == 1) fprintf(o, "    *ret_ = %s(dk_stack_pop(stack_));\n", KINDS[op->rets[0].kind].unbox);
    for (i = op->nr - 1; op->nr > 1 && i >= 0; i--)
        fprintf(o, "    ret_->%s = %s(dk_stack_pop(stack_));\n", op->rets[i].field, KINDS[op->rets[i].kind].unbox);
    fputs("}\n", o);
    free(owned);
}

/* boxed -> typed kernel: read the arguments where they are, call, write the
   returns over them. The library calls call_unboxed only on a stack it has
   checked against the def's schema (dk_call_boxed's fast way, or
   dk__check_stack for the general way and dk_redispatch_boxed), and the
   schema is the one of this signature (a def or dk_op_set_adapters refuses
   another): the stack holds at least the n arguments, the top n are its
   values, so they are read in place without a pop's check. A Tensor
   argument is read as the tensor the check found there; the other kinds
   through their unbox helpers, which read each value by its tag (the check
   lets through kinds the C type does not hold, e.g. a bool or an int for a
   Scalar, any value for a QScheme). A Tensor return over
   a Tensor argument's place writes the pointer only (the value there is a
   tensor), the others their whole value. Returns beyond the n arguments'
   places are pushed; a stack without room for them fails the call
   (DK_ERR_BAD_STACK, the arguments consumed) before the kernel runs, where
   a push would drop them unreported. An operator without arguments reads
   no place (v_ is not computed: stack_->values may be NULL). */
static void emit_call_unboxed_fn(FILE *o, const opinfo *op) {
    char *owned;
    const char *rt = ret_type(op, &owned);
    int i, scratch = 0, in_place = op->nr < op->n ? op->nr : op->n;
    for (i = 0; i < op->n; i++) scratch |= KINDS[op->args[i].kind].scratch;
    fprintf(o, "static void %s_call_unboxed(const dk_kernel *kernel_, const dk_operator *op_, dk_keyset ks_, "
               "dk_stack *stack_) {\n", op->id);
    if (op->n)
        fprintf(o, "    dk_value *v_ = stack_->values + (stack_->size - %d);   /* checked by the library (Note "
                   "[Boxed fast way]) */\n", op->n);
    if (scratch) fprintf(o, "    dkgen_scratch tmp_[%d];\n", op->n);
    if (op->nr) fprintf(o, "    %s ret_;\n", rt);
    fputs(op->n || op->nr ? "    (void)op_;\n" : "    (void)op_; (void)stack_;\n", o);
    if (op->nr > op->n) {   /* no room for the returns past the arguments: reported, nothing runs */
        fprintf(o, "    if (stack_->capacity - stack_->size < %d) {\n", op->nr - op->n);
        fprintf(o, "        dk_call_fail(op_, kernel_, ks_, DK_ERR_BAD_STACK, \"%%s: the stack has room for %%lu "
                   "value(s), its %d return(s) need %%lu: the kernel was not called (its arguments consumed, as a "
                   "failed call's)\", op_->name, (unsigned long)stack_->capacity, "
                   "(unsigned long)(stack_->size + %d));\n",
                op->nr, op->nr - op->n);
        if (op->n) fprintf(o, "        stack_->size -= %d;\n", op->n);
        fputs("        return;\n    }\n", o);
    }
    fprintf(o, "    %s((%s_fn)kernel_->fn)(kernel_, ks_", op->nr ? "ret_ = " : "", op->id);
    for (i = 0; i < op->n; i++) {
        const cvalue *v = &op->args[i];
        if (v->kind == K_TENSOR) fprintf(o, ", (dkgen_tensor)(uintptr_t)v_[%d].as.tensor", i);   /* checked a tensor */
        else if (KINDS[v->kind].scratch) fprintf(o, ", %s(v_[%d], &tmp_[%d])", KINDS[v->kind].unbox, i, i);
        else fprintf(o, ", %s(v_[%d])", KINDS[v->kind].unbox, i);
    }
    fputs(");\n", o);
    for (i = 0; i < in_place; i++) {
        const char *ret = op->nr > 1 ? "ret_." : "ret_", *field = op->nr > 1 ? op->rets[i].field : "";
        /* a Tensor return over a Tensor argument: the value there is a tensor already (checked) */
        if (op->rets[i].kind == K_TENSOR && op->args[i].kind == K_TENSOR)
            fprintf(o, "    v_[%d].as.tensor = (void *)(uintptr_t)%s%s;\n", i, ret, field);
        else fprintf(o, "    v_[%d] = %s(%s%s);\n", i, KINDS[op->rets[i].kind].box, ret, field);
    }
    if (op->n > op->nr) fprintf(o, "    stack_->size -= %d;\n", op->n - op->nr);
    if (op->nr == 1 && !in_place) fprintf(o, "    dk_stack_push(stack_, %s(ret_));\n", KINDS[op->rets[0].kind].box);
    for (i = in_place; op->nr > 1 && i < op->nr; i++) emit_push(o, &op->rets[i], "ret_.");
    fputs("}\n", o);
    free(owned);
}

static void emit_adapters(FILE *o, const opinfo *op) {
    emit_box_fn(o, op);
    emit_unbox_result_fn(o, op);
    emit_call_unboxed_fn(o, op);
    fprintf(o, "static const dk_op_adapters %s_adapters = { %s_SIGNATURE, %d, %d, %s_box, %s_unbox_result, "
               "%s_call_unboxed };\n", op->id, op->id, op->n, op->nr, op->id, op->id, op->id);
}

/* <op>_def(reg, &handle): the def (with the adapters of a typed operator),
   a macro recording the caller's file:line */
static void emit_def(FILE *o, const opinfo *op) {
    fprintf(o, "DK_INLINE dk_status %s_def_at(dk_registry *reg_, const char *file_, int line_, "
               "dk_registration **handle_) {\n", op->id);
    if (op->boxed_only)
        fprintf(o, "    return dk_def_at(reg_, %s_SCHEMA, NULL, file_, line_, handle_);\n}\n", op->id);
    else
        fprintf(o, "    dk_def_options opts_;\n    opts_.adapters = &%s_adapters;\n"
                   "    opts_.alias_analysis = DK_ALIAS_ANALYSIS_FROM_SCHEMA;\n    opts_.tags = NULL;\n"
                   "    opts_.num_tags = 0;\n    return dk_def_at(reg_, %s_SCHEMA, &opts_, file_, line_, handle_);\n}\n",
                op->id, op->id);
    fprintf(o, "#define %s_def(reg_, handle_) %s_def_at((reg_), __FILE__, __LINE__, (handle_))\n", op->id, op->id);
    /* in a DK_LIBRARY / DK_LIBRARY_FRAGMENT block: dk_library_def alone
       would leave a typed operator without adapters (its _bind fails, its
       typed calls cannot be boxed) */
    fprintf(o, "DK_INLINE dk_status %s_library_def(dk_library *lib_) {\n    dk_def_options opts_;\n", op->id);
    if (op->boxed_only) fputs("    opts_.adapters = NULL;\n", o);
    else fprintf(o, "    opts_.adapters = &%s_adapters;\n", op->id);
    fprintf(o, "    opts_.alias_analysis = DK_ALIAS_ANALYSIS_FROM_SCHEMA;\n    opts_.tags = NULL;\n    opts_.num_tags = 0;\n"
               "    return dk_library_def_with(lib_, %s_SCHEMA, &opts_);\n}\n", op->id);
}

/* <op>_kernel(fn, user_data, fn_name): a kernel description that only a
   function of the operator's kernel type converts to (boxed_fn for an
   operator bound boxed), with its name and C signature for dump_state */
static void emit_kernel_desc(FILE *o, const opinfo *op) {
    if (op->boxed_only)
        fprintf(o, "DK_INLINE dk_kernel_desc %s_kernel(dk_boxed_fn fn_, void *user_data_, const char *fn_name_) {\n"
                   "    return dk_kernel_named(dk_boxed(fn_, user_data_), fn_name_, NULL);\n}\n", op->id);
    else
        fprintf(o, "DK_INLINE dk_kernel_desc %s_kernel(%s_fn fn_, void *user_data_, const char *fn_name_) {\n"
                   "    return dk_kernel_named(dk_unboxed(DK_FN(fn_), user_data_), fn_name_, %s_SIGNATURE);\n}\n",
                op->id, op->id, op->id);
}

/* <op>_impl(reg, key, fn, user_data, &handle) and, inside a library block,
   <op>_library_impl(lib, key, fn, user_data): macros, so that the record says
   the caller's file:line and the kernel's name, not this header's line; a fn
   of another type than <op>_fn (dk_boxed_fn for an operator bound boxed) is
   a compile error naming the type expected, whatever the warning flags
   (DK_KERNEL_TYPE_CHECK; C alone would convert the pointer with a warning) */
static void emit_impl(FILE *o, const opinfo *op) {
    const char *id = op->id;
    char *type = op->boxed_only ? xstrdup("dk_boxed_fn") : xprintf("%s_fn", id);
    char *check = xprintf("DK_KERNEL_TYPE_CHECK(%s, fn_, wrong_kernel_type__expected_%s)", type, type);
    fprintf(o, "DK_INLINE dk_status %s_impl_at(dk_registry *reg_, dk_key key_, dk_kernel_desc kernel_, "
               "const char *file_, int line_, dk_registration **handle_) {\n"
               "    return dk_impl_at(reg_, %s_NAME, key_, kernel_, file_, line_, handle_);\n}\n",
            id, id);
    fprintf(o, "#define %s_impl(reg_, key_, fn_, user_data_, handle_) \\\n"
               "    (%s, \\\n"
               "     %s_impl_at((reg_), (key_), %s_kernel((fn_), (user_data_), #fn_), __FILE__, __LINE__, (handle_)))\n",
            id, check, id, id);
    fprintf(o, "#define %s_library_impl(lib_, key_, fn_, user_data_) \\\n"
               "    (%s, \\\n"
               "     dk_library_impl_at((lib_), %s_NAME, (key_), %s_kernel((fn_), (user_data_), #fn_), __FILE__, __LINE__))\n",
            id, check, id, id);
    free(check);
    free(type);
}

/* <op>_def, <op>_kernel, <op>_impl, <op>_library_impl, <op>_bind */
static void emit_registration(FILE *o, const opinfo *op) {
    const char *id = op->id;
    emit_def(o, op);
    emit_kernel_desc(o, op);
    emit_impl(o, op);
    fprintf(o, "DK_INLINE dk_status %s_bind(dk_registry *reg_, const dk_operator **op_) {\n"
               "    return dkgen_bind(reg_, %s_NAME, %s%s, op_);\n}\n", id, id, op->boxed_only ? "NULL" : id,
            op->boxed_only ? "" : "_SIGNATURE");
}

/* an operator bound boxed: calls take a stack */
static void emit_boxed_calls(FILE *o, const opinfo *op) {
    fprintf(o, "DK_INLINE void %s_call(const dk_operator *op_, dk_stack *stack_) { dk_call_boxed(op_, stack_); }\n"
               "DK_INLINE void %s_redispatch(const dk_operator *op_, dk_keyset ks_, dk_stack *stack_) {\n"
               "    dk_redispatch_boxed(op_, ks_, stack_);\n}\n", op->id, op->id);
}

/* <op>_opts and <op>_defaults(): the defaulted arguments and their values */
static void emit_opts(FILE *o, const opinfo *op) {
    int i;
    for (i = 0; i < op->n; i++)
        if (op->args[i].dflt_decl) fputs(op->args[i].dflt_decl, o);
    fprintf(o, "typedef struct %s_opts {\n", op->id);
    for (i = 0; i < op->n; i++) {
        if (!op->args[i].has_default) continue;
        fputs("    ", o);
        emit_decl(o, KINDS[op->args[i].kind].c, op->args[i].field, ";");
        fputs("   /* = ", o);
        emit_comment_text(o, op->args[i].a->default_text);
        fputs(" */\n", o);
    }
    fprintf(o, "} %s_opts;\nDK_INLINE %s_opts %s_defaults(void) {\n    %s_opts opts_;\n", op->id, op->id, op->id, op->id);
    for (i = 0; i < op->n; i++)
        if (op->args[i].has_default) fprintf(o, "    opts_.%s = %s;\n", op->args[i].field, op->args[i].dflt);
    fputs("    return opts_;\n}\n", o);
}

/* <op>_call_opts(op, required..., opts): NULL opts is every default */
static void emit_call_opts(FILE *o, const opinfo *op) {
    char *owned;
    const char *rt = ret_type(op, &owned);
    int i;
    fprintf(o, "DK_INLINE %s %s_call_opts(const dk_operator *op_", rt, op->id);
    emit_params(o, op, ", ", 1);
    fprintf(o, ", const %s_opts *opts_) {\n    %s_opts all_ = opts_ ? *opts_ : %s_defaults();\n"
               "    %s%s_call(op_", op->id, op->id, op->id, op->nr ? "return " : "", op->id);
    for (i = 0; i < op->n; i++)
        fprintf(o, op->args[i].has_default ? ", all_.%s" : ", %s_", op->args[i].field);
    fputs(");\n}\n", o);
    free(owned);
}

/* <op>_calld(op, required..., [defaulted...]): one macro per count, each
   count marked taken (<op>_calld_takes_<n>, see DKGEN_CALLD); another count
   is an error naming the operator and the counts it takes */
static void emit_calld(FILE *o, const opinfo *op) {
    int nreq = op->n - op->ndefaults, given, i, p;
    fprintf(o, "#define %s_calld(...) DKGEN_CALLD(%s, DKGEN_NARGS(__VA_ARGS__))(__VA_ARGS__)\n", op->id, op->id);
    fprintf(o, "#define %s_calld_wrong(n_) %s_calld__takes_%d_to_%d_arguments__not_##n_\n", op->id, op->id, 1 + nreq,
            1 + op->n);
    for (given = 0; given <= op->ndefaults; given++) {
        int seen = 0, next_default = nreq;   /* the macro parameter of the next defaulted argument */
        fprintf(o, "#define %s_calld_takes_%d ~, 1\n", op->id, 1 + nreq + given);
        fprintf(o, "#define %s_calld_%d(p0_", op->id, 1 + nreq + given);
        for (p = 1; p <= nreq + given; p++) fprintf(o, ", p%d_", p);
        fprintf(o, ") %s_call(p0_", op->id);
        for (i = 0, p = 1; i < op->n; i++) {
            if (!op->args[i].has_default) fprintf(o, ", p%d_", p++);
            else if (seen++ < given) fprintf(o, ", p%d_", 1 + next_default++);
            else fprintf(o, ", %s", op->args[i].dflt);
        }
        fputs(")\n", o);
    }
}

static void emit_op(FILE *o, const opinfo *op) {
    emit_op_heading(o, op);
    if (op->boxed_only) {
        emit_registration(o, op);
        emit_boxed_calls(o, op);
        fputs("\n", o);
        return;
    }
    emit_types(o, op);
    emit_keyset(o, op);
    emit_calls(o, op);
    emit_adapters(o, op);
    emit_registration(o, op);
    if (op->ndefaults) {
        emit_opts(o, op);
        emit_call_opts(o, op);
        emit_calld(o, op);
    }
    fputs("\n", o);
}

/* The helpers every generated header shares (the first one defines them). */
static void emit_prelude(FILE *o) {
    int i;
    fputs("#ifndef DKGEN_PRELUDE_1\n#define DKGEN_PRELUDE_1\n"
          "typedef DKGEN_TENSOR dkgen_tensor;\n"
          "/* The registry's tensor_keyset hook, from DKGEN_TENSOR_KEYSET: with it boxed calls\n"
          "   find the keys of the tensors on a stack (desc.tensor_keyset = dkgen_tensor_keyset). */\n"
          "DK_INLINE dk_keyset dkgen_tensor_keyset(const void *tensor_, void *user_data_) {\n"
          "    (void)user_data_;\n"
          "    return DKGEN_TENSOR_KEYSET((dkgen_tensor)(uintptr_t)tensor_);\n"
          "}\n"
          "/* The keys of the tensors in a Tensor[] or Tensor?[] argument. */\n"
          "DK_INLINE dk_keyset dkgen_list_keyset(dk_value_list l_) {\n"
          "    dk_keyset ks_ = DK_KS_EMPTY;\n"
          "    size_t i_;\n"
          "    for (i_ = 0; i_ < l_.n; i_++)\n"
          "        if (l_.items[i_].tag == DK_VALUE_TENSOR)\n"
          "            ks_ = dk_ks_or(ks_, DKGEN_TENSOR_KEYSET((dkgen_tensor)(uintptr_t)l_.items[i_].as.tensor));\n"
          "    return ks_;\n"
          "}\n"
          "DK_INLINE dk_keyset dkgen_opt_tensor_keyset(dkgen_tensor t_) { return t_ ? DKGEN_TENSOR_KEYSET(t_) : DK_KS_EMPTY; }\n"
          "DK_INLINE dk_keyset dkgen_opt_list_keyset(const dk_value_list *l_) { return l_ ? dkgen_list_keyset(*l_) : DK_KS_EMPTY; }\n"
          "/* a dk_value argument that the schema makes a dispatch argument: as dk_call_boxed reads it */\n"
          "DK_INLINE dk_keyset dkgen_value_keyset(dk_value v_) {\n"
          "    dk_value_list l_ = { NULL, 0 };\n"
          "    if (v_.tag == DK_VALUE_TENSOR) return DKGEN_TENSOR_KEYSET((dkgen_tensor)(uintptr_t)v_.as.tensor);\n"
          "    if (v_.tag == DK_VALUE_LIST) { l_.items = v_.as.list.items; l_.n = v_.as.list.n; }\n"
          "    return dkgen_list_keyset(l_);\n"
          "}\n"
          "/* <op>_bind: the operator, if defined with this C signature (NULL: bound boxed) */\n"
          "DK_INLINE dk_status dkgen_bind(dk_registry *reg_, const char *name_, const char *signature_, const dk_operator **op_) {\n"
          "    dk_operator *found_;\n"
          "    dk_status status_ = dk_op_lookup_defined(reg_, name_, &found_);\n"
          "    if (status_ == DK_OK && signature_) status_ = dk_op_check_signature(found_, signature_);\n"
          "    if (status_ == DK_OK) *op_ = found_;\n"
          "    return status_;\n"
          "}\n", o);
    fputs("/* C value -> dk_value; NULL is None where the type is a pointer */\n"
          "DK_INLINE dk_value dkgen_box_tensor(dkgen_tensor t_) { return dk_tensor((void *)(uintptr_t)t_); }\n"
          "DK_INLINE dk_value dkgen_box_opt_tensor(dkgen_tensor t_) { return t_ ? dkgen_box_tensor(t_) : dk_none(); }\n"
          "DK_INLINE dk_value dkgen_box_list(dk_value_list l_) { return dk_list(l_.items, l_.n); }\n"
          "DK_INLINE dk_value dkgen_box_opt_list(const dk_value_list *l_) { return l_ ? dk_list(l_->items, l_->n) : dk_none(); }\n"
          "DK_INLINE dk_value dkgen_box_opt_int(const int64_t *p_) { return p_ ? dk_int(*p_) : dk_none(); }\n"
          "DK_INLINE dk_value dkgen_box_opt_double(const double *p_) { return p_ ? dk_double(*p_) : dk_none(); }\n"
          "DK_INLINE dk_value dkgen_box_opt_bool(const int *p_) { return p_ ? dk_bool(*p_) : dk_none(); }\n"
          "DK_INLINE dk_value dkgen_box_string(const char *s_) { return s_ ? dk_string(s_) : dk_none(); }\n"
          "DK_INLINE dk_value dkgen_box_object(void *p_) { return p_ ? dk_object(p_) : dk_none(); }\n"
          "DK_INLINE dk_value dkgen_box_opt_int_list(const dk_int_list *l_) { return l_ ? dk_ints(*l_) : dk_none(); }\n"
          "DK_INLINE dk_value dkgen_box_opt_double_list(const dk_double_list *l_) {\n"
          "    return l_ ? dk_doubles(*l_) : dk_none();\n}\n"
          "/* dk_value -> C value; an optional one points into the caller's scratch slot */\n"
          "typedef union dkgen_scratch { int64_t i; double d; int b; dk_int_list il; dk_double_list dl; dk_value_list vl; } dkgen_scratch;\n"
          "DK_INLINE dkgen_tensor dkgen_tensor_of(dk_value v_) {\n"
          "    return v_.tag == DK_VALUE_TENSOR ? (dkgen_tensor)(uintptr_t)v_.as.tensor : (dkgen_tensor)0;\n}\n"
          "DK_INLINE int64_t dkgen_int_of(dk_value v_) { return v_.tag == DK_VALUE_BOOL ? (int64_t)v_.as.b : v_.as.i; }\n"
          "DK_INLINE double dkgen_double_of(dk_value v_) {\n"
          "    return v_.tag == DK_VALUE_DOUBLE ? v_.as.d : v_.tag == DK_VALUE_BOOL ? (double)v_.as.b : (double)v_.as.i;\n}\n"
          "DK_INLINE int dkgen_bool_of(dk_value v_) { return v_.tag == DK_VALUE_BOOL ? v_.as.b : v_.as.i != 0; }\n"
          "DK_INLINE const char *dkgen_string_of(dk_value v_) { return v_.tag == DK_VALUE_STRING ? v_.as.s : NULL; }\n"
          "DK_INLINE void *dkgen_object_of(dk_value v_) { return v_.tag == DK_VALUE_OBJECT ? v_.as.object : NULL; }\n"
          "DK_INLINE dk_value_list dkgen_list_of(dk_value v_) {\n"
          "    dk_value_list l_ = { NULL, 0 };\n"
          "    if (v_.tag == DK_VALUE_LIST) { l_.items = v_.as.list.items; l_.n = v_.as.list.n; }\n"
          "    return l_;\n}\n"
          "DK_INLINE dk_int_list dkgen_int_list_of(dk_value v_) {\n"
          "    dk_int_list l_ = { NULL, 0 };\n"
          "    if (v_.tag == DK_VALUE_INT_LIST) { l_.items = v_.as.ints.items; l_.n = v_.as.ints.n; }\n"
          "    return l_;\n}\n"
          "DK_INLINE dk_double_list dkgen_double_list_of(dk_value v_) {\n"
          "    dk_double_list l_ = { NULL, 0 };\n"
          "    if (v_.tag == DK_VALUE_DOUBLE_LIST) { l_.items = v_.as.doubles.items; l_.n = v_.as.doubles.n; }\n"
          "    return l_;\n}\n"
          "/* complex: dk_complex both ways (a complex default: dkgen_complex(re, im)) */\n"
          "DK_INLINE dk_complex dkgen_complex(double re_, double im_) {\n"
          "    dk_complex c_;\n    c_.re = re_;\n    c_.im = im_;\n    return c_;\n}\n"
          "DK_INLINE dk_value dkgen_box_complex(dk_complex c_) { return dk_complex_double(c_.re, c_.im); }\n"
          "DK_INLINE dk_complex dkgen_complex_of(dk_value v_) {\n"
          "    return v_.tag == DK_VALUE_COMPLEX ? v_.as.c : dkgen_complex(dkgen_double_of(v_), 0.0);\n}\n", o);
    {
        static const char *const opt[][4] = {   /* name, C type, scratch field, converter */
            { "int", "int64_t", "i", "dkgen_int_of" }, { "double", "double", "d", "dkgen_double_of" },
            { "bool", "int", "b", "dkgen_bool_of" }, { "list", "dk_value_list", "vl", "dkgen_list_of" },
            { "int_list", "dk_int_list", "il", "dkgen_int_list_of" },
            { "double_list", "dk_double_list", "dl", "dkgen_double_list_of" },
        };
        for (i = 0; i < (int)(sizeof opt / sizeof *opt); i++)
            fprintf(o, "DK_INLINE const %s *dkgen_opt_%s_of(dk_value v_, dkgen_scratch *s_) {\n"
                       "    if (v_.tag == DK_VALUE_NONE) return NULL;\n    s_->%s = %s(v_);\n    return &s_->%s;\n}\n",
                    opt[i][1], opt[i][0], opt[i][2], opt[i][3], opt[i][2]);
    }
    fputs("/* DKGEN_NARGS(...): how many arguments (1 to 65); <op>_calld picks its macro by it */\n"
          "#define DKGEN_CAT(a, b) DKGEN_CAT_(a, b)\n#define DKGEN_CAT_(a, b) a##b\n#define DKGEN_NARGS(...) DKGEN_NARGS_(__VA_ARGS__", o);
    for (i = 65; i >= 0; i--) fprintf(o, ", %d", i);
    fputs(")\n#define DKGEN_NARGS_(", o);
    for (i = 1; i <= 65; i++) fprintf(o, "a%d, ", i);
    fputs("n, ...) n\n", o);
    fputs("/* DKGEN_CALLD(op, n): <op>_calld_<n> when <op>_calld takes n arguments (<op>_calld_takes_<n>\n"
          "   is defined), else (<op>_calld__takes_<lo>_to_<hi>_arguments__not_<n>): an undeclared name, an\n"
          "   error whatever the flags, that says which operator and how many arguments */\n"
          "#define DKGEN_SECOND_(a_, b_, ...) b_\n"
          "#define DKGEN_TAKES_(probe_) DKGEN_SECOND_(probe_, 0, ~)\n"
          "#define DKGEN_CALLD(op_, n_) DKGEN_CALLD_(op_, n_, DKGEN_TAKES_(DKGEN_CAT(op_##_calld_takes_, n_)))\n"
          "#define DKGEN_CALLD_(op_, n_, taken_) DKGEN_CAT(DKGEN_CALLD_IF_, taken_)(op_, n_)\n"
          "#define DKGEN_CALLD_IF_1(op_, n_) DKGEN_CAT(op_##_calld_, n_)\n"
          "#define DKGEN_CALLD_IF_0(op_, n_) (op_##_calld_wrong(n_))\n"
          "#endif\n", o);
    /* Under a guard of its own: a header from an older dkgen, included first, has
       defined DKGEN_PRELUDE_1 without these. */
    fputs("#ifndef DKGEN_PRELUDE_2\n#define DKGEN_PRELUDE_2\n"
          "/* A call site's kernel is the likely way (else GCC spends moves on the slow path's\n"
          "   registers); dkgen_<op>_slow is out of line, one copy (GCC would inline it where one\n"
          "   function calls the operator, or clone it for the flag each caller passes). */\n"
          "#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)\n"
          "#define DKGEN_LIKELY(x_) __builtin_expect(!!(x_), 1)\n"
          "#define DKGEN_SLOW_PATH __attribute__((noinline, noclone))\n"
          "#elif defined(__GNUC__) || defined(__clang__)\n"
          "#define DKGEN_LIKELY(x_) __builtin_expect(!!(x_), 1)\n"
          "#define DKGEN_SLOW_PATH __attribute__((noinline))\n"
          "#else\n"
          "#define DKGEN_LIKELY(x_) (x_)\n"
          "#define DKGEN_SLOW_PATH\n"
          "#endif\n"
          "#endif\n\n", o);
}

/* "sample_ops.h" -> "SAMPLE_OPS_H" (upper: 1) or "sample_ops" stem upper-cased without the extension (0) */
static char *file_macro(const char *base, int with_ext) {
    sbuf b = { NULL, 0, 0 };
    const char *dot = strrchr(base, '.'), *p;
    for (p = base; *p && (with_ext || !dot || p < dot); p++)
        sb_putc(&b, isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_');
    return sb_take(&b);
}

static void emit_header_start(FILE *o, const char *in_base, const char *out_base) {
    char *guard = file_macro(out_base, 1);
    fprintf(o, "/* GENERATED by gen/dkgen from %s -- do not edit; regenerate with dkgen.\n\n", in_base);
    fputs("   Before including it, describe the tensor type:\n"
          "       #define DKGEN_TENSOR my_tensor *            (a pointer type)\n"
          "       #define DKGEN_TENSOR_KEYSET(t) ((t)->keys)  (its dispatch keyset)\n"
          "   <op>_call and <op>_keyset apply DKGEN_TENSOR_KEYSET to every Tensor argument that is\n"
          "   not optional: a NULL there crashes unless the macro is NULL-safe, e.g.\n"
          "       #define DKGEN_TENSOR_KEYSET(t) ((t) ? (t)->keys : DK_KS_EMPTY)\n"
          "   (the call then dispatches on the other arguments' keys; the kernel gets the NULL).\n"
          "   Each operator <op> has:\n"
          "     <op>_call(op, args...), <op>_redispatch(op, ks, args...)   typed calls\n"
          "     <op>_def(reg, &h); in a DK_LIBRARY block <op>_library_def(lib)   the def, with the\n"
          "         boxing adapters (dk_def / dk_library_def of the schema alone has none: <op>_bind\n"
          "         then fails with DK_ERR_NO_ADAPTER, and boxed fallbacks cannot see typed calls)\n"
          "     <op>_impl(reg, key, fn, user_data, &h), <op>_library_impl(lib, key, fn, user_data)\n"
          "         macros: fn must be an <op>_fn (any other type is a compile error); they record\n"
          "         the caller's file:line, fn's name and <op>_SIGNATURE\n"
          "     <op>_bind(reg, &op)   the operator, if defined with <op>_SIGNATURE\n"
          "     <op>_fn, <op>_kernel   the kernel type, and its dk_kernel_desc\n"
          "     <op>_args, <op>_keyset(args...), <op>_adapters   the argument pack, the arguments'\n"
          "         dispatch keyset, the boxing adapters\n"
          "     <op>_SCHEMA, <op>_NAME, <op>_SIGNATURE   the schema, the operator name, the C\n"
          "         signature in schema words (dk_schema_c_signature)\n"
          "   A tuple return is a struct <op>_result with the schema's return names. With defaults,\n"
          "   <op>_calld(op, required..., [defaulted...]) (another count of arguments is an error\n"
          "   naming the counts it takes) and <op>_call_opts(op, required..., &opts or NULL) fill in\n"
          "   the omitted ones. dkgen_tensor_keyset is the registry's tensor_keyset hook for boxed\n"
          "   calls. */\n", o);
    fprintf(o, "#ifndef DKGEN_%s\n#define DKGEN_%s\n", guard, guard);
    fputs("#if !defined(DKGEN_TENSOR) || !defined(DKGEN_TENSOR_KEYSET)\n"
          "#error \"define DKGEN_TENSOR (a pointer type) and DKGEN_TENSOR_KEYSET(t) first\"\n#endif\n"
          "#include \"dispatch.h\"\n\n", o);
    emit_prelude(o);
    free(guard);
}

static void emit_header_end(FILE *o, const opinfo *ops, int n, const char *out_base) {
    char *stem = file_macro(out_base, 0), *guard = file_macro(out_base, 1);
    int i;
    /* the parameter cannot be an operator's C name (none starts with "DK") */
    fprintf(o, "/* X(<op>) for every operator of this header */\n#define DKGEN_FORALL_%s(DKGEN_X)", stem);
    for (i = 0; i < n; i++) fprintf(o, " \\\n    DKGEN_X(%s)", ops[i].id);
    fprintf(o, "\n\n#endif /* DKGEN_%s */\n", guard);
    free(stem);
    free(guard);
}

/* ---- reading the schema file ---------------------------------------------- */

/* One line of any length, without its end; 0 at the end of the file. */
static int read_line(FILE *in, sbuf *line, int *has_nul) {
    int c, any = 0;
    line->len = 0;
    sb_put(line, "", 0);
    *has_nul = 0;
    while ((c = getc(in)) != EOF) {
        any = 1;
        if (c == '\n') break;
        if (c == '\0') *has_nul = 1;
        sb_putc(line, (char)c);
    }
    if (line->len && line->p[line->len - 1] == '\r') line->p[--line->len] = '\0';
    return any;
}

static void free_ops(opinfo *ops, int n) {
    int i, j;
    for (i = 0; i < n; i++) {
        for (j = 0; j < ops[i].n; j++) {
            free(ops[i].args[j].field);
            free(ops[i].args[j].dflt);
            free(ops[i].args[j].dflt_decl);
        }
        for (j = 0; j < ops[i].nr; j++) free(ops[i].rets[j].field);
        free(ops[i].args);
        free(ops[i].rets);
        free(ops[i].id);
        dk_schema_free(ops[i].s);
    }
    free(ops);
}

/* Reads every schema of `in`, then writes the header to `o`; returns the
   number of errors (each reported on stderr with its line). */
static int generate_stream(FILE *in, const char *in_path, FILE *o, const char *out_base) {
    const char *in_base = strrchr(in_path, '/') ? strrchr(in_path, '/') + 1 : in_path;
    sbuf line = { NULL, 0, 0 };
    opinfo *ops = NULL;
    nameset globals = { NULL, NULL, 0, 0 };
    int lineno = 0, n = 0, cap = 0, bad = 0, has_nul, i;
    while (read_line(in, &line, &has_nul)) {
        const char *p = line.p;
        dk_schema *s;
        lineno++;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || (!*p && !has_nul)) continue;
        if (has_nul) {
            fprintf(stderr, "%s:%d: the line holds a NUL byte\n", in_path, lineno);
            bad++;
            continue;
        }
        if (dk_schema_parse(p, &s) != DK_OK) {
            fprintf(stderr, "%s:%d: %s\n", in_path, lineno, dk_last_error());
            bad++;
            continue;
        }
        if (n == cap) ops = (opinfo *)xrealloc(ops, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *ops);
        memset(&ops[n], 0, sizeof ops[n]);
        ops[n].s = s;
        ops[n].line = lineno;
        describe(&ops[n++]);
    }
    free(line.p);
    if (ferror(in)) {
        fprintf(stderr, "%s: read error\n", in_path);
        bad++;
    }
    for (i = 0; i < n; i++) assign_id(&ops[i], &globals, in_path);
    for (i = 0; i < n; i++) assign_fields(&ops[i], &globals);
    for (i = 0; i < n; i++) warn_op(&ops[i], in_path);
    if (!bad) {
        emit_header_start(o, in_base, out_base);
        for (i = 0; i < n; i++) emit_op(o, &ops[i]);
        emit_header_end(o, ops, n, out_base);
    }
    ns_free(&globals, 1);
    free_ops(ops, n);
    return bad;
}

#ifndef DKGEN_NO_MAIN   /* the command line (gen/fuzz_dkgen.c calls generate_stream) */

/* Writes OUT_HEADER through a temporary file: an error leaves none. */
static int generate(const char *in_path, const char *out_path) {
    FILE *in = fopen(in_path, "r"), *o;
    const char *out_base = strrchr(out_path, '/') ? strrchr(out_path, '/') + 1 : out_path;
    char *tmp = xprintf("%s.tmp", out_path);
    int bad;
    if (!in) { fprintf(stderr, "dkgen: cannot read %s\n", in_path); free(tmp); return 1; }
    o = fopen(tmp, "w");
    if (!o) { fprintf(stderr, "dkgen: cannot write %s\n", tmp); fclose(in); free(tmp); return 1; }
    bad = generate_stream(in, in_path, o, out_base);
    fclose(in);
    if (fclose(o) != 0 && !bad) { fprintf(stderr, "dkgen: cannot write %s\n", tmp); bad = 1; }
    if (!bad && rename(tmp, out_path) != 0) { fprintf(stderr, "dkgen: cannot write %s\n", out_path); bad = 1; }
    if (bad) {
        remove(tmp);
        fprintf(stderr, "dkgen: %d error%s, %s not written\n", bad, bad == 1 ? "" : "s", out_path);
    }
    free(tmp);
    return bad ? 1 : 0;
}

/* ---- dkgen --keys ---------------------------------------------------------- */

/* The key tables of the lists this binary was compiled with, as Markdown. */
static void print_keys(void) {
    int k, b;
    printf("| backend component | value | keyset bit |\n|---|---|---|\n");
    for (b = 1; b <= DK_NUM_BACKENDS; b++) printf("| `%s` | %d | %d |\n", dk_backend_name((dk_backend)b), b, b - 1);
    printf("\n| functionality key | value | keyset bit | per backend | runtime slots |\n|---|---|---|---|---|\n");
    for (k = 1; k < DK_EndOfFunctionalityKeys; k++) {
        int pb = dk_key_is_per_backend_functionality((dk_key)k);
        int first = dk_key_slot((dk_key)k);
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
           DK_NUM_BACKENDS, DK_NUM_FUNCTIONALITY_KEYS, DK_NUM_PER_BACKEND_FUNCTIONALITIES, DK_NUM_SLOTS);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--keys") == 0) { print_keys(); return 0; }
    if (argc == 3) return generate(argv[1], argv[2]);
    fprintf(stderr, "usage: dkgen OPS_FILE OUT_HEADER | dkgen --keys\n");
    return 2;
}
#endif
