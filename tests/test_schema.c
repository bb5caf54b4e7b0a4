/* make: args=tests/conformance/schemas-1.13.1.txt */
/* The function-schema parser: c10 1.13.1's grammar, its printed form, the
   dispatch-argument bitset, the model, every class of error, and no leak
   when an allocation fails. Conformance: every schema libtorch 1.13.1
   registers (argv[1], default tests/conformance/schemas-1.13.1.txt) parses
   and prints back byte-identical, with c10's dispatch bitset. Expected texts
   below are what libtorch 1.13.1 prints unless a comment says otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <locale.h>

/* Counting allocator for the parser (its test hook): fails the n-th call. */
static long g_live, g_calls, g_fail_at = -1;
static void *counting_malloc(size_t n) {
    if (g_calls++ == g_fail_at) return NULL;
    g_live++;
    return malloc(n);
}
static void counting_free(void *p) {
    if (p) g_live--;
    free(p);
}
#define DK__SCHEMA_MALLOC(n) counting_malloc(n)
#define DK__SCHEMA_FREE(p) counting_free(p)
/* The parser's work (its test hook): bytes lexed, names compared. */
static unsigned long long g_steps;
#define DK__SCHEMA_STEPS(n) ((void)(g_steps += (unsigned long long)(n)))

#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <cmocka.h>

static const char *g_vectors = "tests/conformance/schemas-1.13.1.txt";

/* ---- helpers --------------------------------------------------------------- */

static dk_schema *parse_ok(const char *text) {
    dk_schema *s = NULL;
    dk_status st = dk_schema_parse(text, &s);
    if (st != DK_OK) print_error("unexpected failure for: %s\n%s\n", text, dk_last_error());
    assert_int_equal(st, DK_OK);
    assert_non_null(s);
    return s;
}

/* in prints as out, and out prints as itself. */
static void check_print(const char *in, const char *out) {
    dk_schema *s = parse_ok(in), *again;
    if (strcmp(s->text, out)) print_error("input:    %s\nexpected: %s\nprinted:  %s\n", in, out, s->text);
    assert_string_equal(s->text, out);
    again = parse_ok(s->text);
    assert_string_equal(again->text, out);
    assert_true(again->dispatch_args == s->dispatch_args);
    dk_schema_free(again);
    dk_schema_free(s);
}

/* The printed form of one argument: "x::y(<arg>) -> ()". */
static void check_arg(const char *arg, const char *printed) {
    char in[512], out[512];
    snprintf(in, sizeof in, "x::y(%s) -> ()", arg);
    snprintf(out, sizeof out, "x::y(%s) -> ()", printed);
    check_print(in, out);
}

static void check_error(const char *in, long pos, const char *fragment) {
    dk_schema *s = (dk_schema *)&s;
    char at[48];
    dk_status st = dk_schema_parse(in, &s);
    if (st != DK_ERR_BAD_SCHEMA || !strstr(dk_last_error(), fragment))
        print_error("input: %s\nstatus %d, message:\n%s\nwanted: %s\n", in, (int)st, dk_last_error(), fragment);
    assert_int_equal(st, DK_ERR_BAD_SCHEMA);
    assert_null(s);
    assert_non_null(strstr(dk_last_error(), fragment));
    snprintf(at, sizeof at, " at position %ld:\n", pos);
    if (!strstr(dk_last_error(), at)) print_error("input: %s\nwanted%s got:\n%s\n", in, at, dk_last_error());
    assert_non_null(strstr(dk_last_error(), at));
}

/* ---- conformance with libtorch 1.13.1 ------------------------------------------ */

static void test_conformance_vectors(void **state) {
    FILE *f = fopen(g_vectors, "r");
    static char line[1 << 16];
    long total = 0, same_text = 0, same_bits = 0, aten = 0;
    (void)state;
    if (!f) fail_msg("cannot open %s", g_vectors);
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        dk_schema *s = NULL;
        unsigned long long bits;
        if (line[0] == '#' || !tab) continue;
        *tab = '\0';
        bits = strtoull(tab + 1, NULL, 16);
        total++;
        aten += strncmp(line, "aten::", 6) == 0;
        if (dk_schema_parse(line, &s) != DK_OK) {
            print_error("does not parse: %s\n%s\n", line, dk_last_error());
            continue;
        }
        if (!strcmp(s->text, line)) same_text++;
        else print_error("c10:  %s\nours: %s\n", line, s->text);
        if (s->dispatch_args == bits) same_bits++;
        else print_error("bitset of %s: c10 %llx, ours %llx\n", line, bits, (unsigned long long)s->dispatch_args);
        dk_schema_free(s);
    }
    fclose(f);
    print_message("%ld schemas (%ld aten): %ld printed byte-identical, %ld dispatch bitsets equal\n", total, aten,
                  same_text, same_bits);
    assert_true(total > 2500);
    assert_int_equal(same_text, total);
    assert_int_equal(same_bits, total);
}

/* pytorch-facts §7 oracle round-trips. */
static void test_oracle_roundtrips(void **state) {
    static const char *const texts[] = {
        "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
        "myns::listop(Tensor[] xs, *, Tensor(a!) out, int k=3) -> Tensor(a!)",
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) check_print(texts[i], texts[i]);
    check_arg("float f=1e-3", "float f=0.001");
    check_arg("str reduction='mean'", "str reduction=\"mean\"");
}

/* ---- the model ------------------------------------------------------------------------ */

static void test_model(void **state) {
    dk_schema *s = parse_ok("ns::op.out(Tensor(a -> *) self, int[2] size=1, Tensor?[] idx, *, "
                            "ScalarType? dtype=long, Device dev=\"cuda:1\", Tensor(b!) out) -> (Tensor(b!) r, ...)");
    const dk_arg *a = s->arguments;
    (void)state;
    assert_string_equal(s->name, "ns::op");
    assert_string_equal(s->overload, "out");
    assert_false(s->name_only);
    assert_int_equal(s->num_arguments, 6);
    assert_int_equal(s->num_returns, 1);
    assert_false(s->is_vararg);
    assert_true(s->is_varret);
    assert_true(s->dispatch_args == 0x29); /* self (bit 5), idx (bit 3), out (bit 0) */
    assert_true(dk_schema_dispatch_args(s) == 0x29);
    /* Tensor(a -> *) self */
    assert_string_equal(a[0].name, "self");
    assert_string_equal(a[0].type_text, "Tensor(a -> *)");
    assert_int_equal(a[0].type->kind, DK_TYPE_Tensor);
    assert_int_equal(a[0].alias->num_before, 1);
    assert_string_equal(a[0].alias->before[0], "a");
    assert_int_equal(a[0].alias->num_after, 1);
    assert_string_equal(a[0].alias->after[0], "*");
    assert_false(a[0].alias->is_write);
    assert_true(a[0].is_dispatch);
    assert_null(a[0].default_value);
    /* int[2] size=1: c10 stores [1, 1] and prints 1 */
    assert_int_equal(a[1].type->kind, DK_TYPE_List);
    assert_int_equal(a[1].type->contained[0]->kind, DK_TYPE_Int);
    assert_int_equal(a[1].list_size, 2);
    assert_int_equal(a[1].default_value->kind, DK_DEFAULT_LIST);
    assert_int_equal(a[1].default_value->count, 2);
    assert_int_equal(a[1].default_value->items[1].i, 1);
    assert_string_equal(a[1].default_text, "1");
    /* Tensor?[] idx */
    assert_string_equal(a[2].type->str, "Tensor?[]");
    assert_int_equal(a[2].type->contained[0]->kind, DK_TYPE_Optional);
    assert_int_equal(a[2].list_size, -1);
    assert_true(a[2].is_dispatch);
    /* ScalarType? dtype=long: real type ScalarType?, fake int?, default 4 */
    assert_true(a[3].kwarg_only);
    assert_string_equal(a[3].type->str, "ScalarType?");
    assert_string_equal(a[3].fake_type->str, "int?");
    assert_int_equal(a[3].default_value->kind, DK_DEFAULT_INT);
    assert_int_equal(a[3].default_value->i, 4);
    /* Device dev="cuda:1" */
    assert_int_equal(a[4].default_value->kind, DK_DEFAULT_DEVICE);
    assert_string_equal(a[4].default_value->s, "cuda:1");
    assert_int_equal(a[4].default_value->i, 1);
    assert_string_equal(a[4].default_text, "cuda:1");
    /* Tensor(b!) out: an out argument */
    assert_true(a[5].is_out);
    assert_true(a[5].alias->is_write);
    assert_false(a[3].is_out);
    /* return */
    assert_string_equal(s->returns[0].name, "r");
    assert_false(s->returns[0].is_out);
    assert_false(s->returns[0].is_dispatch);
    assert_string_equal(s->text, "ns::op.out(Tensor(a -> *) self, int[2] size=1, Tensor?[] idx, *, ScalarType? dtype=4, "
                                 "Device dev=cuda:1, Tensor(b!) out) -> (Tensor(b!) r, ...)");
    dk_schema_free(s);
}

static void test_model_alias_containers(void **state) {
    dk_schema *s = parse_ok("x::y(Tensor(a!)[] a, Tensor(a)[](b) b, Tensor! c) -> ()");
    const dk_arg *a = s->arguments;
    (void)state;
    /* Tensor(a!)[]: an empty container annotation (write copied) holding (a!) */
    assert_int_equal(a[0].alias->num_before, 0);
    assert_true(a[0].alias->is_write);
    assert_string_equal(a[0].alias->contained->before[0], "a");
    assert_true(a[0].alias->contained->is_write);
    assert_string_equal(a[1].alias->before[0], "b");
    assert_string_equal(a[1].alias->contained->before[0], "a");
    /* Tensor!: a fresh set with an empty after-set */
    assert_string_equal(a[2].alias->before[0], "$0");
    assert_int_equal(a[2].alias->num_after, 0);
    assert_string_equal(s->text, "x::y(Tensor(a!)[] a, Tensor(a)[](b) b, Tensor($0! -> ) c) -> ()");
    dk_schema_free(s);
}

static void test_model_defaults(void **state) {
    dk_schema *s;
    const dk_arg *a;
    (void)state;
    s = parse_ok("x::y(str s='a\\000b', complex c=2.5j, float[] f=[1, .5], bool[2] b=True, Scalar? n=None) -> ()");
    a = s->arguments;
    assert_int_equal(a[0].default_value->kind, DK_DEFAULT_STRING);
    assert_int_equal(a[0].default_value->len, 3);
    assert_memory_equal(a[0].default_value->s, "a\0b", 3);
    assert_string_equal(a[0].default_text, "\"a\\000b\"");
    assert_int_equal(a[1].default_value->kind, DK_DEFAULT_COMPLEX);
    assert_true(a[1].default_value->re == 0 && a[1].default_value->im == 2.5);
    assert_int_equal(a[2].default_value->count, 2);
    assert_true(a[2].default_value->items[0].kind == DK_DEFAULT_DOUBLE && a[2].default_value->items[0].re == 1.0);
    assert_int_equal(a[3].default_value->count, 2);
    assert_true(a[3].default_value->items[1].b);
    assert_int_equal(a[4].default_value->kind, DK_DEFAULT_NONE);
    dk_schema_free(s);
}

static void test_name_only(void **state) {
    dk_schema *s = parse_ok("aten::add.Tensor");
    (void)state;
    assert_true(s->name_only);
    assert_string_equal(s->name, "aten::add");
    assert_string_equal(s->overload, "Tensor");
    assert_int_equal(s->num_arguments, 0);
    assert_int_equal(s->num_returns, 0);
    assert_string_equal(s->text, "aten::add.Tensor");
    dk_schema_free(s);
    check_print("foo", "foo");
    check_print("  aten : : relu\n", "aten::relu");
}

/* A default of a kind its type cannot hold is refused, where c10 1.13.1 takes
   it and fails only when a kernel unboxes it; c10's conversions stay. */
static void test_default_kinds(void **state) {
    (void)state;
    check_error("x::y(int n=1.5) -> ()", 11, "argument n of type int cannot have a float default");
    check_error("x::y(bool n=1) -> ()", 12, "argument n of type bool cannot have an int default");
    check_error("x::y(float n=\"x\") -> ()", 13, "argument n of type float cannot have a str default");
    check_error("x::y(str n=1) -> ()", 11, "argument n of type str cannot have an int default");
    check_error("x::y(int n=True) -> ()", 11, "argument n of type int cannot have a bool default");
    check_error("x::y(int n=None) -> ()", 11, "argument n of type int cannot have a None default (only an optional type can)");
    check_error("x::y(bool n=\"True\") -> ()", 12, "argument n of type bool cannot have a str default");
    check_error("x::y(int a=1, *, int b=1e3) -> ()", 23, "argument b of type int cannot have a float default");
    check_error("x::y(float x=1j) -> ()", 13, "argument x of type float cannot have a complex default");
    check_error("x::y(Scalar s=\"s\") -> ()", 14, "argument s of type Scalar cannot have a str default");
    check_error("x::y(Scalar s=None) -> ()", 14, "argument s of type Scalar cannot have a None default");
    check_error("x::y(ScalarType t=1.5) -> ()", 18, "argument t of type ScalarType cannot have a float default");
    check_error("x::y(int? n=1.5) -> ()", 12, "argument n of type int? cannot have a float default");
    check_error("x::y(Tensor? t=1) -> ()", 15, "argument t of type Tensor? cannot have an int default");
    /* c10 keeps an int for an optional list (no list: a boxed call fails) */
    check_error("x::y(int[2]? d=1) -> ()", 15, "argument d of type int[]? cannot have an int default");
    check_error("x::y(int? a=1j) -> ()", 12, "argument a of type int? cannot have a complex default");
    check_error("x::y(str? d=1) -> ()", 12, "argument d of type str? cannot have an int default");
    check_error("x::y(int[]? e=1) -> ()", 14, "argument e of type int[]? cannot have an int default");
    check_error("x::y(str d=None) -> ()", 11, "argument d of type str cannot have a None default");
    /* c10's conversions: an integer (or a dtype name) for a float or complex,
       any number or bool for a Scalar, None for an optional; a type variable
       holds anything */
    check_arg("float a=1, float b=long, complex c=2j, Scalar d=True, Scalar e=2, Scalar f=1.5, int? g=None, "
              "str? h=None, bool? i=None, Scalar? j=None, ScalarType k=long, t? l=1",
              "float a=1., float b=long, complex c=0.+2.j, Scalar d=True, Scalar e=2, Scalar f=1.5, int? g=None, "
              "str? h=None, bool? i=None, Scalar? j=None, ScalarType k=4, t? l=1");
}

/* ---- printing: c10's normalised form ------------------------------------------------ */

static void test_print_types(void **state) {
    (void)state;
    check_arg("Dimname d", "str d");                                  /* Dimname is a str */
    check_arg("ConstQuantizerPtr q", "int q");
    check_arg("ScalarType a, Layout b, MemoryFormat c, SymInt d", "ScalarType a, Layout b, MemoryFormat c, SymInt d");
    check_arg("(ScalarType, Layout) a", "(int, int) a");              /* containers hold fake types */
    check_arg("Dict(str, SymInt) b", "Dict(str, int) b");
    check_arg("Future(MemoryFormat) c", "Future(int) c");
    check_arg("ScalarType?[] e", "ScalarType?[] e");
    check_arg("None a, NoneType b", "NoneType a, NoneType b");
    check_arg("t a, t1 b, double c", "t a, t1 b, double c");          /* lower-case: type variables */
    check_arg("int?? a, Tensor?? b", "int? a, Tensor? b");
    check_arg("Union(Tensor, None) a", "Tensor? a");
    check_arg("Union(int, Union(str, float)) a", "Union(float, int, str) a");
    check_arg("Union(int, None, str) a", "Union(int, NoneType, str) a");
    check_arg("Union(int, str)? a", "Union(int, str)? a");
    check_arg("Union(int, None, str)? a", "Union(int, str)? a");
    check_arg("Union(int, float, complex) a", "Union(Scalar) a");
    check_arg("Union(int, float, complex, None) a", "Scalar? a");
    check_arg("Union(Tensor, str, Scalar) a", "Union(Tensor, str, Scalar) a");
    check_arg("Union(AnyEnumType, Tensor, Storage, bool, Device) a", "Union(AnyEnumType, Tensor, Storage, bool, Device) a");
    check_arg("Union(Tensor[], Tensor?[]) a", "Union(Tensor?[], Tensor[]) a");
    check_arg("Union(Dict(str, int), Dict(str, Any)) a", "Union(Dict(str, Any), Dict(str, int)) a");
    check_arg("Any? a, Scalar? b", "Any? a, Scalar? b");
    check_arg("Tensor(a)[][] a", "Tensor[]()[] a");
    check_arg("Tensor(a)[](b)[](c) a", "Tensor[](b)[](c) a");
    check_arg("Tensor(a)?[] a", "Tensor?(a)[] a");
    check_arg("Tensor(a!)[]?[] a", "Tensor[]?(!)[] a");
    check_arg("Tensor(a)[]? a, Tensor[](a)? b", "Tensor(a)[]? a, Tensor[](a)? b");
    check_arg("int[2]? a, int[2](a) b, Tensor(a!)[2]? e", "int[2]? a, int[2](a) b, Tensor(a!)[2]? e");
    check_arg("int(a)?[2](b)? a", "int?(a)[2](b)? a");
    check_arg("Tensor[](a -> *) a", "Tensor[](a -> *) a");
    check_arg("Tensor[]! a", "Tensor[]($0! -> ) a");
    check_arg("Dict(str, Tensor)! a, Tensor! b", "Dict(str, Tensor)($0! -> ) a, Tensor($1! -> ) b");
    check_arg("Dict(Tensor(a), str) d, (Tensor(a), int) t", "Dict(Tensor, str) d, (Tensor, int) t");
    check_arg("() a, (Tensor) b, (int, str)[] c", "() a, (Tensor) b, (int, str)[] c");
    check_arg("__torch__ . torch . classes . ns . Cls c", "__torch__.torch.classes.ns.Cls c");
    check_arg("Tensor[99999] a", "Tensor[99999] a");
    check_arg("Tensor[1.5] a, int[0x10] b", "Tensor[1] a, int[0] b");  /* std::stoll of the number */
}

static void test_print_defaults(void **state) {
    (void)state;
    check_arg("float a=1, float b=1.5, float c=-0.0, float d=1e-5, float e=1E5, float f=.5, float g=5.",
              "float a=1., float b=1.5, float c=0., float d=1.0000000000000001e-05, float e=100000., float f=0.5, float g=5.");
    check_arg("float a=1e17, float b=9.3e18, float c=1e300, float d=-1e16, float e=0x10, float f=0x1p-3",
              "float a=100000000000000000., float b=9.3e+18, float c=1.0000000000000001e+300, "
              "float d=-10000000000000000., float e=16., float f=0.125");
    check_arg("float a=0.1, float b=3.14159, float c=2.2250738585072014e-308",
              "float a=0.10000000000000001, float b=3.1415899999999999, float c=2.2250738585072014e-308");
    check_arg("int c=-5, int e=1E5, int f=0x10, int g=007", "int c=-5, int e=1, int f=0, int g=7");
    check_arg("int a=9223372036854775807, int b=-9223372036854775808, int c = - 1",
              "int a=9223372036854775807, int b=-9223372036854775808, int c=-1");
    check_arg("Scalar a=1, Scalar b=1.5, Scalar c=True, Scalar e=1j, Scalar f=-2.5j, Scalar g=0j, Scalar h=-0j",
              "Scalar a=1, Scalar b=1.5, Scalar c=True, Scalar e=0.+1.j, Scalar f=0.-2.5j, Scalar g=0.+0.j, Scalar h=0.+0.j");
    check_arg("complex a=1j, complex b=1.5, complex c=15, complex d=1e3j", /* c10 drops the last character */
              "complex a=0.+1.j, complex b=0.+1.j, complex c=0.+1.j, complex d=0.+1000.j");
    check_arg("complex[] a=[15, 2j], complex[2] b=2j", "complex[] a=[0.+1.j, 0.+2.j], complex[2] b=[0.+2.j, 0.+2.j]");
    check_arg("float[] a=[1, 2.5, -3e-7], int[] b=[1, -2], bool[] c=[True, False], int[] d=[], float[2] e=1, bool[3] f=True",
              "float[] a=[1., 2.5, -2.9999999999999999e-07], int[] b=[1, -2], bool[] c=[True, False], int[] d=[], "
              "float[2] e=[1., 1.], bool[3] f=[True, True, True]");
    check_arg("int[2] a=[1, 1], int[2] b=[1, 2], int[3] c=5, int[2] d=[], int[1] e=[3]",
              "int[2] a=1, int[2] b=[1, 2], int[3] c=5, int[2] d=[], int[1] e=[3]");
    check_arg("SymInt[2] c=1, ScalarType[2] s=[4, 4], int[0] e=3, bool[0] f=True",
              "SymInt[2] c=[1, 1], ScalarType[2] s=[4, 4], int[0] e=[], bool[0] f=[]");
    check_arg("int[] a=[long, Mean], ScalarType b=float, ScalarType? c=complex, Layout d=strided, "
              "MemoryFormat e=contiguous_format", "int[] a=[4, 1], ScalarType b=6, ScalarType? c=9, Layout d=0, MemoryFormat e=0");
    check_arg("str a=\"x\", str b='y', str c='a\"b', str d=\"a'b\", str e=\"\\n\\t\\\\\\\"\", str f=\"\\101\"",
              "str a=\"x\", str b=\"y\", str c=\"a\\\"b\", str d=\"a\\'b\", str e=\"\\n\\t\\\\\\\"\", str f=\"A\"");
    check_arg("str a='', str b=\"\", str c=\"\"\"\"\"\", str d='''a'b\"c''', str e=\"a\\a\\b\\f\\v\\001\\177\"",
              "str a=\"\", str b=\"\", str c=\"\", str d=\"a\\'b\\\"c\", str e=\"a\\a\\b\\f\\v\\001\\177\"");
    check_arg("str a=\"tab\tx\", str b=\"a\\\nb\", str c=\"\"\"a\nb\"\"\"", "str a=\"tab\\tx\", str b=\"a\\nb\", str c=\"a\\nb\"");
    check_arg("str? a=\"x\", str? b=None, Dimname c=\"n\"", "str? a=\"x\", str? b=None, str c=\"n\"");
    check_arg("Device a=\"cpu\", Device b=\"cuda:0\", Device c=\"cpu:1\", Device d=\"privateuseone:3\", Device? e=None",
              "Device a=cpu, Device b=cuda:0, Device c=cpu:1, Device d=privateuseone:3, Device? e=None");
    check_arg("Tensor? a=None, Generator? b=None, Tensor c=None, Quantizer q=None, Scalar? d=None, int[]? e=None",
              "Tensor? a=None, Generator? b=None, Tensor c=None, Quantizer q=None, Scalar? d=None, int[]? e=None");
    check_arg("float? b=1.5, Scalar? c=True, float? d=2", "float? b=1.5, Scalar? c=True, float? d=2");
}

static void test_print_alias(void **state) {
    (void)state;
    check_arg("Tensor(a!) a, Tensor(a) b, Tensor(a -> *) c, Tensor(a! -> *) d, Tensor(*) e",
              "Tensor(a!) a, Tensor(a) b, Tensor(a -> *) c, Tensor(a! -> *) d, Tensor(*) e");
    check_arg("Tensor(a|a) a, Tensor(*|*) b, Tensor(a -> a) c, Tensor(a|b -> b|a) d, Tensor(a -> *|*) e",
              "Tensor(a) a, Tensor(*) b, Tensor(a) c, Tensor(a|b) d, Tensor(a -> *) e");
    check_arg("Tensor( a ! ) a, Tensor(a->b) b, Tensor(a1_B) c, Tensor(Tensor) d, int(a) e, str(b!) f, Scalar(a -> *) g",
              "Tensor(a!) a, Tensor(a -> b) b, Tensor(a1_B) c, Tensor(Tensor) d, int(a) e, str(b!) f, Scalar(a -> *) g");
    /* c10 prints its unordered_set ("b|a", "c|b"); we keep the source order */
    check_arg("Tensor(a|b) a, Tensor(a -> b|c) b, Tensor(a|*) c", "Tensor(a|b) a, Tensor(a -> b|c) b, Tensor(a|*) c");
    check_print("static_runtime::select_tensor(Tensor(a) a, Tensor(b) b, bool use_b) -> Tensor(b|a)",
                "static_runtime::select_tensor(Tensor(a) a, Tensor(b) b, bool use_b) -> Tensor(b|a)");
    check_print("x::y(Tensor! a) -> (Tensor!, Tensor(a!))", "x::y(Tensor($0! -> ) a) -> (Tensor($1! -> ), Tensor(a!))");
}

static void test_print_arguments_and_returns(void **state) {
    (void)state;
    check_print("x::y(Tensor a, *) -> ()", "x::y(Tensor a) -> ()");
    check_print("x::y(*, *, Tensor a) -> ()", "x::y(*, Tensor a) -> ()");
    check_print("x::y(*, ...) -> ()", "x::y(...) -> ()");
    check_print("x::y(*, int a, ...) -> ()", "x::y(*, int a, ...) -> ()");
    check_print("x::y(int a=1, *, int b) -> ()", "x::y(int a=1, *, int b) -> ()");
    check_print("x::y(int a=1, int[] b, int[2] c) -> ()", "x::y(int a=1, int[] b, int[2] c) -> ()");
    check_print("x::y(Tensor a, Tensor a) -> ()", "x::y(Tensor a, Tensor a) -> ()");
    check_print("x::y(Tensor from, Tensor lambda, Tensor yield) -> ()", "x::y(Tensor from, Tensor lambda, Tensor yield) -> ()");
    check_print("x::y(Tensor a) -> (...)", "x::y(Tensor a) -> ...");
    check_print("x::y(...) -> ...", "x::y(...) -> ...");
    check_print("x::y(Tensor a) -> (Tensor, ...)", "x::y(Tensor a) -> (Tensor, ...)");
    check_print("x::y(Tensor a) -> (Tensor b)", "x::y(Tensor a) -> Tensor b");
    check_print("x::y(Tensor a) -> (\nTensor b)", "x::y(Tensor a) -> Tensor b");
    check_print("x::y(Tensor a) -> (Tensor b, Tensor)", "x::y(Tensor a) -> (Tensor b, Tensor)");
    check_print("x::y(Tensor a) -> ((int, int))", "x::y(Tensor a) -> ((int, int))");
    check_print("x::y(Tensor a) -> ((int, int)[])", "x::y(Tensor a) -> ((int, int)[])");
    check_print("x::y(Tensor a) -> ((int, int) x)", "x::y(Tensor a) -> ((int, int) x)");
    check_print("x::y(Tensor a) -> int[2] x", "x::y(Tensor a) -> int[2] x");
    check_print("x::y() -> ()", "x::y() -> ()");
    check_print("x : : y . z ( Tensor a , int b = 1 ) -> ( Tensor c , ... )", "x::y.z(Tensor a, int b=1) -> (Tensor c, ...)");
    check_print("y() -> ()", "y() -> ()");
    check_print("x::y._default() -> ()", "x::y._default() -> ()");
    check_print("x::y.default_() -> ()", "x::y.default_() -> ()");
}

/* Layout: blanks, comments, line continuations, newlines inside brackets,
   one trailing newline. */
static void test_print_layout(void **state) {
    (void)state;
    check_print("  x::y() -> ()", "x::y() -> ()");
    check_print("\tx::y() -> ()\r\n", "x::y() -> ()");
    check_print("x::y() -> ()  # comment", "x::y() -> ()");
    check_print("# leading comment\nx::y() -> ()", "x::y() -> ()");
    check_print("\n\nx::y() -> ()\n\n\n", "x::y() -> ()");
    check_print("x::y(\n  Tensor a,  # the input\n  int b) -> ()", "x::y(Tensor a, int b) -> ()");
    check_print("x::y() -> \\\n()", "x::y() -> ()");
    check_print("x::y(Tensor a) -> ()\n  \n", "x::y(Tensor a) -> ()");
    check_print("x::y(int[2\n] a=[1,\n2]) -> ()", "x::y(int[2] a=[1, 2]) -> ()");
    check_print("x::y(str a=\"# not a comment\") -> ()", "x::y(str a=\"# not a comment\") -> ()");
    check_print("x::y(int a=1 \\\n, int b=2) -> ()", "x::y(int a=1, int b=2) -> ()");
}

/* Texts c10 prints but cannot read back; we read them (Note [Schema deviations]). */
static void test_extensions_round_trip(void **state) {
    (void)state;
    check_arg("Tensor($0! -> ) a", "Tensor($0! -> ) a");
    check_arg("Tensor[]()[] a, Tensor[]?(!)[] b", "Tensor[]()[] a, Tensor[]?(!)[] b");
    check_arg("Tensor?(a)[] a", "Tensor?(a)[] a");
    check_arg("Tensor?(a) a", "Tensor(a)? a");
    check_print("x::y(*, Tensor(a)[](!) c) -> ()", "x::y(*, Tensor(a)[] c) -> ()");
    check_arg("Device a=cuda:1, Device b=cpu, Device c=cuda : 0", "Device a=cuda:1, Device b=cpu, Device c=cuda:0");
    check_arg("complex a=0.+1.j, Scalar b=0.-2.5j, complex[] c=[0.+1.j, 3.-2.j]",
              "complex a=0.+1.j, Scalar b=0.-2.5j, complex[] c=[0.+1.j, 3.-2.j]");
    check_arg("str a=\"\\r\"", "str a=\"\\r\"");
    /* deviations: where c10 prints unreadable text we print readable text */
    check_arg("str a=\"\303\251\\200\"", "str a=\"\\303\\251\\200\"");   /* c10: "\0)+\/.)\.00" */
    check_arg("Device? f=\"cpu\"", "Device? f=\"cpu\""); /* c10: f=cpu */
    check_arg("int[] b=[1, 1]", "int[] b=[1, 1]");                     /* c10: int[] b=1 */
    check_arg("int[1] d=[-1, -1], int[2] f=[7, 7, 7]", "int[1] d=[-1, -1], int[2] f=[7, 7, 7]"); /* c10: d=-1, f=7 */
    check_arg("Union(str, int, float, complex) a", "Union(str, Scalar) a"); /* c10: Union(, str, Scalar) */
    check_arg("Union(Scalar, None, str) a", "Union(NoneType, str, Scalar) a");
    check_arg("Scalar?? a, Union(Scalar, None)? b", "Scalar? a, Scalar? b");  /* c10: Union(Scalar)? */
}

/* ---- round trips the fuzzer broke (inputs kept in tests/fuzz/corpus/regress-*) ------------ */

/* An annotation on an optional tuple, Future, RRef or custom class: c10 prints
   "T(a)?" (its form for every type), which c10 cannot read; we read it. */
static void test_regress_annotated_optional(void **state) {
    (void)state;
    check_print("y(__torch__.torch.classes.a.B?(t) f) -> ()", "y(__torch__.torch.classes.a.B(t)? f) -> ()");
    check_arg("Union((int), None)(a) a, Union(Future(int), None)(b!) b, RRef(int)?(c) c",
              "(int)(a)? a, Future(int)(b!)? b, RRef(int)(c)? c");
    check_arg("Future(int)(a) a, (int, str)(b) b, __torch__.torch.classes.n.C(c -> *)[] c",
              "Future(int)(a) a, (int, str)(b) b, __torch__.torch.classes.n.C(c -> *)[] c");
}

/* A dtype (layout, reduction, memory format) name is an int default; c10
   prints the int, which a float or complex argument reads back as a float
   or a complex (or, "9" of complex, not at all): we print the name. */
static void test_regress_named_default_of_float(void **state) {
    (void)state;
    check_print("aten::stftt.ecenr(Tensor self, int n_fft, str pad_mo=\"ct\", float ps=complex) -> Tensor",
                "aten::stftt.ecenr(Tensor self, int n_fft, str pad_mo=\"ct\", float ps=complex) -> Tensor");
    check_arg("float a=long, complex b=float, float c=contiguous_format, complex d=Mean, float? e=long, int f=long",
              "float a=long, complex b=float, float c=strided, complex d=Mean, float? e=4, int f=4");
}

/* ---- dispatch-argument bitset ------------------------------------------------------------ */

static void test_dispatch_bits(void **state) {
    char text[4096];
    int i, n;
    dk_schema *s;
    (void)state;
    s = parse_ok("x::y(Tensor(a) a, None b, NoneType c, Tensor? d, Tensor[] e, Tensor?[] f, Tensor[]? g, Any h, "
                 "Union(Tensor, None) i, Tensor[3] j, Tensor(a!)[](b) k, Tensor?? l, t m) -> Tensor");
    assert_true(s->dispatch_args == 0x1F9E); /* all but g, h and m; returns never count */
    dk_schema_free(s);
    s = parse_ok("x::y(Tensor? a, Tensor?[]? b, (Tensor, Tensor) c, Tensor[][] d, int e, *, Tensor out) -> ()");
    assert_true(s->dispatch_args == 0x21);
    dk_schema_free(s);
    /* 64 arguments: the first one is bit 63 */
    n = snprintf(text, sizeof text, "x::y(Tensor a0");
    for (i = 1; i < 64; i++) n += snprintf(text + n, sizeof text - (size_t)n, ", int a%d", i);
    snprintf(text + n, sizeof text - (size_t)n, ") -> ()");
    s = parse_ok(text);
    assert_true(s->dispatch_args == (uint64_t)1 << 63);
    dk_schema_free(s);
    snprintf(text + n, sizeof text - (size_t)n, ", Tensor a64) -> ()");
    check_error(text, 0, "The function schema has 65 arguments but this PyTorch build only supports 64");
}

/* ---- errors --------------------------------------------------------------------------------- */

static void test_errors_lexical(void **state) {
    (void)state;
    check_error("", 0, "expected ident but found end of input");
    check_error("x::y(Tensor $ a) -> ()", 12, "expected a valid token but found '$'");
    check_error("x::y(Tensor a) -> ()\\", 20, "expected a valid token but found '\\'");
    check_error("x::y(str a=\"unterminated) -> ()", 11, "expected a valid token but found '\"'");
    check_error("x::y(str a=\"a\nb\") -> ()", 11, "expected a valid token");
    check_error("x::y(Tensor \303\251) -> ()", 12, "expected a valid token but found '?'");
    check_error("x::y(Tensor a) -> () # type: int", 21, "expected end of input but found '# type:'");
}

static void test_errors_layout(void **state) {
    (void)state;
    check_error("x::y(Tensor a) -> ()\nx::z() -> ()", 21, "expected end of input but found 'x'");
    check_error("x::y() ->\n ()", 10, "expected ident but found indent");
    check_error("x::y() ->\n()", 10, "expected ident but found newline");
    check_error("x::y(Tensor a)\n -> ()", 15, "expected '->' but found indent");
    check_error("  x::y(Tensor a) -> ()\nfoo", 23, "invalid indent level 0");
    check_error("x::y(Tensor a) -> () extra", 21, "expected end of input but found 'extra'");
    check_error("x::y(Tensor a)", 14, "expected '->' but found end of input");
    check_error("x::y(Tensor a) ->", 17, "expected ident but found end of input");
}

static void test_errors_names(void **state) {
    (void)state;
    check_error("x::y.default(Tensor a) -> ()", 5, "default is not a legal overload name for aten operators");
    check_error("foo::y.__x() -> ()", 7, "__x is not a legal overload name for aten operators");
    check_error("y.default", 2, "default is not a legal overload name");
    check_error("x::in() -> ()", 3, "expected ident but found 'in'");
    check_error("x::y.in() -> ()", 5, "expected ident but found 'in'");
    check_error("x:y() -> ()", 2, "expected ':' but found 'y'");
    check_error("::y() -> ()", 0, "expected ident but found ':'");
    check_error("x::y(Tensor def) -> ()", 12, "expected ident but found 'def'");
    check_error("x::y(Tensor) -> ()", 11, "expected ident but found ')'");
    check_error("x::y(Tensor a) -> Tensor b c", 27, "expected end of input but found 'c'");
}

static void test_errors_argument_lists(void **state) {
    (void)state;
    check_error("x::y(Tensor a,) -> ()", 14, "expected ident but found ')'");
    /* an annotation naming no set, where c10 never prints one: refused as c10 refuses it */
    check_error("x::y(Tensor(!) a) -> ()", 12, "expected ident but found '!'");
    check_error("x::y(*, Tensor( !) a) -> ()", 16, "expected ident but found '!'");
    check_error("x::y(Tensor( -> a) a) -> ()", 13, "expected ident but found '->'");
    check_error("x::y(Tensor() a) -> ()", 12, "expected ident but found ')'");
    check_error("x::y(Tensor?(!) a) -> ()", 13, "expected ident but found '!'");
    check_error("x::y(Tensor[](!) a) -> ()", 14, "expected ident but found '!'");
    check_error("x::y(int(!) a) -> ()", 9, "expected ident but found '!'");
    check_error("x::y(Union(Tensor(!), int) a) -> ()", 18, "expected ident but found '!'");
    check_error("x::y(Dict(str, Tensor)(!) a) -> ()", 23, "expected ident but found '!'");
    check_error("x::y(Tensor a) -> Tensor(!)", 25, "expected ident but found '!'");
    check_error("x::y(..., Tensor a) -> ()", 10, "... must be the last element of the argument list");
    check_error("x::y(...,) -> ()", 9, "... must be the last element of the argument list");
    check_error("x::y(int a=1, ...) -> ()", 19, "schemas with vararg (...) can't have default value args");
    check_error("x::y(Tensor a) -> (..., Tensor)", 24, "... must be the last element of the return list");
    check_error("x::y(Tensor a) -> (Tensor b,)", 28, "expected ident but found ')'");
    check_error("x::y(Tensor a) -> (int, int)[]", 28, "expected end of input but found '['");
    check_error("x::y(Tensor a) -> Tensor a=1", 26, "expected end of input but found '='");
    check_error("x::y(int a=1, int b) -> ()", 14, "Non-default positional argument follows default argument. Parameter b");
    check_error("x::y(int a=1, Tensor b) -> ()", 14, "Parameter b");
}

static void test_errors_types(void **state) {
    (void)state;
    check_error("x::y(Foo a) -> ()", 5, "unknown type specifier 'Foo'");
    check_error("x::y(SymFloat a) -> ()", 5, "unknown type specifier 'SymFloat'");
    check_error("x::y(Await(int) a) -> ()", 5, "unknown type specifier 'Await'");
    check_error("x::y((int,) a) -> ()", 10, "expected ident but found ')'");
    check_error("x::y(Tensor!(a) a) -> ()", 12, "expected ident but found '('");
    check_error("x::y(Tensor(a) ! a) -> ()", 15, "expected ident but found '!'");
    check_error("x::y(Tensor(a b) f) -> ()", 14, "expected ')' but found 'b'");
    check_error("x::y(Tensor(*|a) f) -> ()", 14, "expected ')' but found 'a'");
    check_error("x::y(Tensor(a!!) a) -> ()", 14, "expected ')' but found '!'");
    check_error("x::y(Tensor(None) f) -> ()", 12, "expected ident but found 'None'");
    check_error("x::y(Tensor[3][] a) -> ()", 14, "expected ident but found '['");
    check_error("x::y(Tensor[-1] a) -> ()", 12, "expected number but found '-'");
    check_error("x::y(Tensor[.5] a) -> ()", 12, "invalid integer literal '.5'");
    check_error("x::y(Tensor(a)[3]?(b) a) -> ()", 18, "expected ident but found '('");
    check_error("x::y(__torch__.torch.nope.ns.C a) -> ()", 21, "Expected classes namespace but got nope");
    check_error("x::y(Dict(None, int) a) -> ()", 10, "Cannot create dict for key type 'NoneType'");
    check_error("x::y(Dict(int?, int) a) -> ()", 10, "Cannot create dict for key type 'int?'");
    check_error("x::y(Union(Tensor) a) -> ()", 5, "has the single type Tensor");
    check_error("x::y(Union(Tensor, Any) a) -> ()", 5, "has the single type Any");
    check_error("x::y(Union((int, None), (int, int)) a) -> ()", 5, "has the single type (int, int?)");
    check_error("x::y(None? a) -> ()", 5, "has the single type NoneType");
    check_error("x::y(Union() a) -> ()", 11, "expected ident but found ')'");
}

static void test_errors_defaults(void **state) {
    (void)state;
    check_error("x::y(Tensor a=1) -> ()", 14, "expected None but found '1'");
    check_error("x::y(Any a=None) -> ()", 11, "an argument of type Any cannot have a default value");
    check_error("x::y(Dict(str, int) a=None) -> ()", 22, "cannot have a default value");
    check_error("x::y(float a=inf) -> ()", 13, "invalid numeric default value 'inf'");
    check_error("x::y(float a=-inf) -> ()", 14, "expected number but found 'inf'");
    check_error("x::y(bool d=true) -> ()", 12, "invalid numeric default value 'true'");
    check_error("x::y(int a=+1) -> ()", 11, "expected number but found '+'");
    check_error("x::y(int a=--1) -> ()", 12, "expected number but found '-'");
    check_error("x::y(float a=1e400) -> ()", 13, "floating-point literal '1e400' out of range");
    check_error("x::y(float a=1e-310) -> ()", 13, "out of range");
    check_error("x::y(int a=9223372036854775808) -> ()", 11, "integer literal '9223372036854775808' out of range");
    check_error("x::y(complex a=1) -> ()", 15, "invalid floating-point literal ''");
    check_error("x::y(int[] a=5) -> ()", 13, "expected '[' but found '5'");
    check_error("x::y(int[] a=None) -> ()", 13, "expected '[' but found 'None'");
    check_error("x::y(int[] a=bar) -> ()", 13, "expected None but found 'bar'");
    check_error("x::y(int[2] a=None) -> ()", 14, "a int list cannot hold the None default element");
    check_error("x::y(int[] a=[1, 2.5]) -> ()", 17, "a int list cannot hold the float default element");
    check_error("x::y(float[] a=[1, True]) -> ()", 19, "a float list cannot hold the bool");
    check_error("x::y(bool[] a=[1]) -> ()", 15, "a bool list cannot hold the int");
    check_error("x::y(complex[] a=[1j, float]) -> ()", 22, "a complex list cannot hold the int");
    check_error("x::y(str[] a=[\"a\"]) -> ()", 13, "lists are only supported for float, int and complex types");
    check_error("x::y(Tensor?[] a=[]) -> ()", 17, "lists are only supported");
    check_error("x::y(int[]? c=[1]) -> ()", 14, "expected number but found '['");
    check_error("x::y(Device a=None) -> ()", 14, "expected string literal but found 'None'");
    check_error("x::y(Device a=\"foo\") -> ()", 14, "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, "
                "ideep, hip, ve, fpga, ort, xla, lazy, vulkan, mps, meta, hpu, privateuseone device type at start of "
                "device string: foo");
    check_error("x::y(Device a=\"cuda:01\") -> ()", 14, "Invalid device string: 'cuda:01'");
    check_error("x::y(Device a=\"cuda:\") -> ()", 14, "Invalid device string: 'cuda:'");
    check_error("x::y(Device a=\":1\") -> ()", 14, "Invalid device string: ':1'");
    check_error("x::y(Device a=\"cuda:-1\") -> ()", 14, "Invalid device string: 'cuda:-1'");
    check_error("x::y(Device a=\"\") -> ()", 14, "Device string must not be empty");
    check_error("x::y(str a=\"\\x41\") -> ()", 11, "unsupported hex specifier");
    check_error("x::y(str a=\"\\u00e9\") -> ()", 11, "unsupported unicode specifier");
    check_error("x::y(str a=\"\\q\") -> ()", 11, "ill formed octal specifier");
    check_error("x::y(str a=\"\\400\") -> ()", 11, "ill formed octal specifier");
    check_error("x::y(str a=\"\\12\") -> ()", 11, "ill formed octal specifier");
    check_error("x::y(str a=\"a\" \"b\") -> ()", 15, "expected ')' but found '\"b\"'");
}

/* Limits c10 does not have (Note [Schema deviations]). */
static void test_errors_limits(void **state) {
    char deep[512];
    int i, n = 0;
    (void)state;
    check_error("x::y(Tensor[2147483648] a) -> ()", 12, "list size 2147483648 does not fit c10's int32");
    check_error("x::y(int[1025] a=1) -> ()", 17, "a repeated default longer than 1024 elements");
    check_error("x::y(Device a=\"cuda:128\") -> ()", 14, "device index in 'cuda:128' out of range");
    n += snprintf(deep, sizeof deep, "x::y(");
    for (i = 0; i < 70; i++) n += snprintf(deep + n, sizeof deep - (size_t)n, "(");
    snprintf(deep + n, sizeof deep - (size_t)n, "int");
    check_error(deep, 69, "types nested deeper than 64");
    n = snprintf(deep, sizeof deep, "x::y(int");
    for (i = 0; i < 70; i++) n += snprintf(deep + n, sizeof deep - (size_t)n, "[]");
    snprintf(deep + n, sizeof deep - (size_t)n, " a) -> ()");
    check_error(deep, 5, "types nested deeper than 64");
}

/* The message shows the line with a caret under the position. */
static void test_error_message_shape(void **state) {
    dk_schema *s;
    (void)state;
    assert_int_equal(dk_schema_parse("x::y(Tensor) -> ()", &s), DK_ERR_BAD_SCHEMA);
    assert_string_equal(dk_last_error(), "expected ident but found ')' at position 11:\nx::y(Tensor) -> ()\n           ^");
    assert_string_equal(dk_status_message(DK_ERR_BAD_SCHEMA), "malformed function schema");
}

/* ---- API ------------------------------------------------------------------------------------- */

static void test_api(void **state) {
    dk_schema *s = (dk_schema *)&s;
    char buf[16];
    (void)state;
    assert_int_equal(dk_schema_parse(NULL, &s), DK_ERR_NULL);
    assert_null(s);
    assert_int_equal(dk_schema_parse("x::y() -> ()", NULL), DK_ERR_NULL);
    dk_schema_free(NULL);
    s = parse_ok("x::y(Tensor a) -> ()");
    assert_int_equal(dk_schema_to_string(s, buf, sizeof buf), 20);
    assert_string_equal(buf, "x::y(Tensor a) ");
    assert_int_equal(dk_schema_to_string(s, NULL, 0), 20);
    assert_int_equal(dk_schema_to_string(s, buf, 1), 20);
    assert_string_equal(buf, "");
    dk_schema_free(s);
    assert_string_equal(dk_type_kind_name(DK_TYPE_Tensor), "Tensor");
    assert_string_equal(dk_type_kind_name(DK_TYPE_Union), "Union");
    assert_null(dk_type_kind_name(DK__TYPE_END));
}

/* ---- hostile sizes: parse work grows linearly ------------------------------------ */

/* "x::y(<head><item 0><sep><item 1>...<tail>) -> ()" with n items; item i is
   fmt with i % distinct. */
static char *repeat_text(const char *head, const char *fmt, const char *sep, long n, long distinct, const char *tail) {
    size_t cap = strlen(head) + strlen(tail) + (size_t)n * (strlen(fmt) + strlen(sep) + 12) + 32, len;
    char *t = (char *)malloc(cap);
    long i;
    assert_non_null(t);
    len = (size_t)sprintf(t, "x::y(%s", head);
    for (i = 0; i < n; i++) {
        if (i) len += (size_t)sprintf(t + len, "%s", sep);
        len += (size_t)sprintf(t + len, fmt, i % distinct);
    }
    sprintf(t + len, "%s) -> ()", tail);
    return t;
}

/* The parser's work on text, in its own steps (DK__SCHEMA_STEPS: bytes
   lexed, names compared), and the status. Counted, not timed: the same
   text is the same count on every machine and under every load. */
static unsigned long long parse_steps(const char *text, dk_status *st) {
    dk_schema *s = NULL;
    g_steps = 0;
    *st = dk_schema_parse(text, &s);
    dk_schema_free(s);
    return g_steps;
}

/* Doubling the text multiplies the parser's work by at most `bound`: 2.5
   for a set of names sorted once (n log n: about 2.1x here; quadratic work
   would be 4x), 1 where the parser stops at a limit (nothing past it is
   read). Was, in time: a 0.7 MB Union 3.0 s, 1.3 MB 11 s; a 0.3 MB alias
   set 4.7 s. */
static void check_doubling(const char *what, char *small, char *big, double bound, dk_status want) {
    dk_status s1, s2;
    unsigned long long w1 = parse_steps(small, &s1), w2 = parse_steps(big, &s2);
    print_message("%s: %lu -> %lu bytes, %llu -> %llu steps (x%.2f)\n", what, (unsigned long)strlen(small),
                  (unsigned long)strlen(big), w1, w2, (double)w2 / (double)(w1 ? w1 : 1));
    assert_int_equal(s1, want);
    assert_int_equal(s2, want);
    assert_true(w1 > 0);
    assert_true((double)w2 <= bound * (double)w1);
    free(small);
    free(big);
}

static void test_hostile_sizes(void **state) {
    dk_schema *s;
    char *t, name[32];
    (void)state;
    /* a Union holds at most 256 members (distinct classes here), flattened:
       Scalar is three, a nested Union its members */
    t = repeat_text("Union(", "__torch__.torch.classes.ns.C%ld", ", ", 256, 1000000, ") u");
    s = parse_ok(t);
    assert_int_equal(s->arguments[0].type->num_contained, 256);
    dk_schema_free(s);
    free(t);
    t = repeat_text("Union(", "__torch__.torch.classes.ns.C%ld", ", ", 257, 1000000, ") u");
    check_error(t, (long)(strstr(t, "C256") - t) - (long)strlen("__torch__.torch.classes.ns."),
                "a Union of more than 256 members");   /* at the 257th */
    free(t);
    t = repeat_text("Union(Scalar, ", "__torch__.torch.classes.ns.C%ld", ", ", 254, 1000000, ") u");
    check_error(t, 5, "a Union of more than 256 members");
    free(t);
    /* 0.35 MB and 0.7 MB of Union: refused after 256 members, nothing more read */
    check_doubling("Union", repeat_text("Union(", "int", ", ", 70000, 1, ") u"),
                   repeat_text("Union(", "int", ", ", 140000, 1, ") u"), 1.0, DK_ERR_BAD_SCHEMA);
    /* 0.15 MB and 0.3 MB of alias set, each name twice: n log n */
    t = repeat_text("Tensor(", "a%ld", "|", 40000, 20000, ") t");
    s = parse_ok(t);
    assert_int_equal(s->arguments[0].alias->num_before, 20000);   /* the first of each, in source order */
    assert_string_equal(s->arguments[0].alias->before[0], "a0");
    assert_string_equal(s->arguments[0].alias->before[1], "a1");
    snprintf(name, sizeof name, "a%d", 19999);
    assert_string_equal(s->arguments[0].alias->before[19999], name);
    assert_int_equal(s->arguments[0].alias->num_after, 20000);
    dk_schema_free(s);
    check_doubling("alias set", t, repeat_text("Tensor(", "a%ld", "|", 80000, 40000, ") t"), 2.5, DK_OK);
    /* the same big set before and after, in another order: no " -> " printed */
    t = repeat_text("Tensor(", "b%ld", "|", 20000, 20000, "");
    {
        size_t len = strlen(t) - strlen(") -> ()");
        char *u = (char *)malloc(len * 2 + 64), *v;
        long i;
        int n;
        assert_non_null(u);
        memcpy(u, t, len);
        n = sprintf(u + len, " -> b19999");
        for (i = 19998; i >= 0; i--) n += sprintf(u + len + n, "|b%ld", i);
        sprintf(u + len + n, ") t) -> ()");
        s = parse_ok(u);
        assert_int_equal(s->arguments[0].alias->num_after, 20000);
        v = strstr(s->text, " -> ");
        assert_non_null(v);
        assert_string_equal(v, " -> ()");      /* the only arrow is the return's */
        dk_schema_free(s);
        u[len + 10] = '8';                     /* b19999|b19998 -> b199998b19998: the sets differ */
        s = parse_ok(u);
        assert_int_equal(s->arguments[0].alias->num_after, 19999);
        assert_non_null(strstr(s->text, "|b19999 -> b199998b19998|b19997|"));
        dk_schema_free(s);
        free(u);
    }
    free(t);
    /* and a wildcard repeated (c10 takes no more names after one) */
    t = repeat_text("Tensor(a|", "*", "|", 40000, 1, ") t");
    s = parse_ok(t);
    assert_int_equal(s->arguments[0].alias->num_before, 2);
    dk_schema_free(s);
    free(t);
}

/* Every allocation can fail: DK_ERR_NO_MEMORY, nothing left allocated. */
static void test_allocation_failure(void **state) {
    static const char *const texts[] = {
        "aten::_cudnn_rnn_backward.out(Tensor input, Tensor[] weight, int weight_stride0, Tensor? cx, "
        "SymInt[] batch_sizes, bool[4] output_mask, *, Tensor(a!) out0, Tensor(d!)[] out3) -> ()",
        "x::y(Union(int, Union(str, float), None) u, Dict(str, (Tensor, int)) d, float[] f=[1, 2.5], str s='abc', "
        "Device dev=\"cuda:1\", Tensor(a|b -> *)[](c)? t=None) -> (Tensor! r, ...)",
        "x::y(Union(Tensor) a) -> ()",
    };
    size_t i;
    long k;
    (void)state;
    assert_int_equal(g_live, 0);
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        for (k = 0;; k++) {
            dk_schema *s = NULL;
            dk_status st;
            g_calls = 0;
            g_fail_at = k;
            st = dk_schema_parse(texts[i], &s);
            g_fail_at = -1;
            if (st == DK_ERR_NO_MEMORY) {
                assert_null(s);
                assert_int_equal(g_live, 0);
                continue;
            }
            assert_true(st == DK_OK || st == DK_ERR_BAD_SCHEMA);
            dk_schema_free(s);
            assert_int_equal(g_live, 0);
            break;
        }
        assert_true(k > 0);
    }
}

/* A parsed schema's chunks are sized to what it holds: over aten's schemas,
   the chunks (headers included) are at most 1.35x the bytes the schema
   uses, 1,200 bytes on average (chunks of 1 KB, then doubling, took 3,805;
   before static types and returns, 1,531); a one-argument schema takes at
   most 400 bytes (its Tensor type and its return are the static ones, its
   name is printed with no copy left over). */
static size_t chunk_bytes(const dk_schema *s, size_t *used) {
    const dk__sp_chunk *c;
    size_t total = 0;
    *used = 0;
    for (c = (const dk__sp_chunk *)s->dk__memory; c; c = c->next) {
        total += offsetof(dk__sp_chunk, data) + c->size * sizeof(dk__sp_align);
        *used += c->used * sizeof(dk__sp_align);
    }
    return total;
}
static void test_arena_sized(void **state) {
    FILE *f = fopen(g_vectors, "r");
    static char line[1 << 16];
    double total = 0, used = 0;
    long n = 0;
    size_t u, one;
    dk_schema *s = NULL;
    (void)state;
    if (!f) fail_msg("cannot open %s", g_vectors);
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || !tab) continue;
        *tab = '\0';
        assert_int_equal(dk_schema_parse(line, &s), DK_OK);
        total += (double)chunk_bytes(s, &u);
        used += (double)u;
        n++;
        dk_schema_free(s);
    }
    fclose(f);
    print_message("%ld schemas: %.0f bytes of chunks, %.0f used, per schema\n", n, total / n, used / n);
    assert_true(n > 2500);
    assert_true(total <= 1.35 * used);
    assert_true(total / n <= 1200);
    assert_int_equal(dk_schema_parse("m::op(Tensor a) -> Tensor", &s), DK_OK);
    one = chunk_bytes(s, &u);
    print_message("m::op(Tensor a) -> Tensor: %lu bytes of chunks, %lu used\n", (unsigned long)one, (unsigned long)u);
    assert_true(one <= 400);
    dk_schema_free(s);
}

/* A def keeps its schema copied into its own record (dk__sp_copy): the
   copy equals the parse, node for node, and every pointer in it is into the
   def's block (the operator's, whose name the schema's name or overload
   may be) or into static storage (a literal, a static type, name or
   default), none into the scratch arena the def parsed in. */
static const char *g_block;
static size_t g_block_size;
static void check_ptr(const void *p) {
    const char *c = (const char *)p;
    if (!p) return;
    if (c >= g_block && c < g_block + g_block_size) return;
    /* else static: a literal or a static type node, not the heap's nor the stack's */
    assert_true((const void *)c < (const void *)&g_block || (const void *)c > (const void *)&c);
}
static void same_type(const dk_type *a, const dk_type *b) {
    int i;
    assert_int_equal(a->kind, b->kind);
    assert_string_equal(a->str, b->str);
    check_ptr(b);
    check_ptr(b->str);
    check_ptr(b->contained);
    assert_int_equal(a->num_contained, b->num_contained);
    for (i = 0; i < a->num_contained; i++) same_type(a->contained[i], b->contained[i]);
}
static void same_names(int n, const char *const *a, const char *const *b) {
    int i;
    check_ptr(b);
    for (i = 0; i < n; i++) {
        assert_string_equal(a[i], b[i]);
        check_ptr(b[i]);
    }
}
static void same_alias(const dk_alias_info *a, const dk_alias_info *b) {
    if (!a) {
        assert_null(b);
        return;
    }
    check_ptr(b);
    assert_int_equal(a->num_before, b->num_before);
    assert_int_equal(a->num_after, b->num_after);
    assert_int_equal(a->is_write, b->is_write);
    same_names(a->num_before, a->before, b->before);
    same_names(a->num_after, a->after, b->after);
    same_alias(a->contained, b->contained);
}
static void same_default(const dk_default *a, const dk_default *b) {
    size_t i;
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->b, b->b);
    assert_true(a->i == b->i);
    assert_memory_equal(&a->re, &b->re, sizeof a->re);
    assert_memory_equal(&a->im, &b->im, sizeof a->im);
    assert_true(a->len == b->len && a->count == b->count);
    assert_true(!a->s == !b->s);
    if (a->s) assert_memory_equal(a->s, b->s, a->len + 1);
    check_ptr(b->s);
    check_ptr(b->items);
    for (i = 0; i < a->count; i++) same_default(&a->items[i], &b->items[i]);
}
static void same_args(int n, const dk_arg *a, const dk_arg *b) {
    int i;
    check_ptr(b);
    for (i = 0; i < n; i++) {
        assert_string_equal(a[i].name, b[i].name);
        assert_string_equal(a[i].type_text, b[i].type_text);
        check_ptr(b[i].name);
        check_ptr(b[i].type_text);
        same_type(a[i].type, b[i].type);
        same_type(a[i].fake_type, b[i].fake_type);
        assert_int_equal(a[i].list_size, b[i].list_size);
        same_alias(a[i].alias, b[i].alias);
        assert_true(!a[i].default_value == !b[i].default_value);
        if (a[i].default_value) {
            check_ptr(b[i].default_value);
            same_default(a[i].default_value, b[i].default_value);
        }
        assert_true(!a[i].default_text == !b[i].default_text);
        if (a[i].default_text) assert_string_equal(a[i].default_text, b[i].default_text);
        check_ptr(b[i].default_text);
        assert_int_equal(a[i].kwarg_only, b[i].kwarg_only);
        assert_int_equal(a[i].is_out, b[i].is_out);
        assert_int_equal(a[i].is_dispatch, b[i].is_dispatch);
    }
}
static void check_def_copy(dk_registry *r, const char *text) {
    dk_schema *a = parse_ok(text);
    const dk_schema *b;
    dk_registration *def;
    const dk__block *block;
    assert_int_equal(dk_def(r, text, &def), DK_OK);
    b = dk_op_function_schema(&def->op->pub);
    assert_ptr_equal(b, DK__DEF(def)->info.parsed);
    assert_null(b->dk__memory);   /* nothing of its own: it goes with the record */
    g_block = dk__def_in_op(def) ? def->op->pub.name : (const char *)def;
    block = (const dk__block *)(const void *)g_block - 1;
    g_block_size = dk__block_size(&block->h) - sizeof *block;
    check_ptr(b);
    check_ptr(b->text);
    check_ptr(b->name);
    check_ptr(b->overload);
    assert_string_equal(a->text, b->text);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->overload, b->overload);
    assert_int_equal(a->name_only, b->name_only);
    assert_int_equal(a->num_arguments, b->num_arguments);
    assert_int_equal(a->num_returns, b->num_returns);
    assert_int_equal(a->is_vararg, b->is_vararg);
    assert_int_equal(a->is_varret, b->is_varret);
    assert_true(a->dispatch_args == b->dispatch_args);
    same_args(a->num_arguments, a->arguments, b->arguments);
    same_args(a->num_returns, a->returns, b->returns);
    dk_schema_free(a);
}
static void test_def_schema_copy(void **state) {
    static const char *const texts[] = {
        "x::y(Union(int, Union(str, float), None) u, Dict(str, (Tensor, int)) d, float[] f=[1, 2.5], str s='a\\000b', "
        "Device dev=\"cuda:1\", Tensor(a|b -> *)[](c)? t=None, int[2] k=1, complex z=0.5+1j, "
        "ScalarType? dt=long, bool[] e=[]) -> (Tensor! r, ...)",
        "x::z.over(Tensor(a) self, Tensor(a!) other, *, Tensor(b!)[] out, __torch__.torch.classes.ns.Cls c, t v) -> "
        "Tensor(a)",
        "x::w(Tensor a) -> Tensor",
        "x::v() -> ()",
        "x::u(...) -> ...",
    };
    FILE *f = fopen(g_vectors, "r");
    static char line[1 << 16];
    dk_registry *r;
    dk_registry_desc d;
    size_t i;
    long n = 0;
    static char big[8192];
    size_t k;
    (void)state;
    memset(&d, 0, sizeof d);
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) check_def_copy(r, texts[i]);
    /* 64 arguments: more than the def's chunk on the stack holds, so the
       copy gathers several chunks */
    k = (size_t)snprintf(big, sizeof big, "x::big(Tensor(a!) self");
    for (i = 1; i < 64; i++) {
        if (i % 2) k += (size_t)snprintf(big + k, sizeof big - k, ", Tensor(b%d)[]? t%d=None", (int)i, (int)i);
        else k += (size_t)snprintf(big + k, sizeof big - k, ", int[2] n%d=[%d, 1]", (int)i, (int)i);
    }
    snprintf(big + k, sizeof big - k, ") -> (Tensor(a!) self, float f)");
    check_def_copy(r, big);
    if (!f) fail_msg("cannot open %s", g_vectors);
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || !tab) continue;
        *tab = '\0';
        check_def_copy(r, line);
        n++;
    }
    fclose(f);
    assert_true(n > 2500);
    dk_registry_destroy(r);
}

/* The copy holds only what the schema reaches, strings byte by byte: a
   schema's name is the operator's name (an overload the end of it), common
   argument names, defaults, one-set annotations and Optional and List types
   of leaf types are static, a type text equal to its type's str is that str; a parse that grew its argument list (9 arguments: the
   first 8 on the stack, then arrays in the arena) leaves the old arrays
   behind. Sizes from the record: the copy ends where the debug text starts. */
static size_t copy_bytes(const dk_registration *def) {
    return (size_t)(DK__DEF(def)->debug - (const char *)DK__DEF(def)->info.parsed);
}
static void test_def_schema_compact(void **state) {
    static const char big[] = "cc::big(Tensor a, Tensor b, Tensor c, Tensor d, Tensor e, Tensor f, Tensor g, Tensor h, "
                              "Tensor i) -> Tensor";
    dk_registry *r;
    dk_registration *def;
    const dk_schema *s;
    const dk_arg *a;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &r), DK_OK);
    assert_int_equal(dk_def(r, "cc::op(Tensor a) -> Tensor", &def), DK_OK);
    s = DK__DEF(def)->info.parsed;
    assert_ptr_equal(s->name, def->op->pub.name);
    assert_ptr_equal(s->arguments[0].name, dk__sp_letters[0]);
    assert_int_equal(copy_bytes(def), sizeof(dk_schema) + sizeof(dk_arg) + sizeof "cc::op(Tensor a) -> Tensor");
    assert_int_equal(dk_def(r, big, &def), DK_OK);
    s = DK__DEF(def)->info.parsed;
    assert_int_equal(s->num_arguments, 9);
    assert_string_equal(s->arguments[8].name, "i");
    assert_int_equal(copy_bytes(def), sizeof(dk_schema) + 9 * sizeof(dk_arg) + sizeof big);
    assert_int_equal(dk_def(r, "cc::op2.ovl(Tensor self, int dim=1, bool keepdim=False, Tensor? x=None, int k=7, "
                               "*, Tensor(a!) zzz_out) -> Tensor(a!)", &def), DK_OK);
    s = DK__DEF(def)->info.parsed;
    assert_string_equal(s->name, "cc::op2");
    assert_ptr_equal(s->overload, def->op->pub.name + strlen("cc::op2."));
    a = s->arguments;
    assert_ptr_equal(a[0].name, dk__sp_common_names[0]);
    assert_ptr_equal(a[1].default_value, &dk__sp_common_defaults[4]);
    assert_ptr_equal(a[1].default_text, dk__sp_common_default_texts[4]);
    assert_ptr_equal(a[2].default_value, &dk__sp_common_defaults[1]);
    assert_ptr_equal(a[3].default_value, &dk__sp_common_defaults[0]);
    assert_string_equal(a[3].default_text, "None");
    assert_string_equal(a[3].type_text, "Tensor?");
    assert_ptr_equal(a[3].type_text, a[3].type->str);
    assert_true(a[4].default_value->kind == DK_DEFAULT_INT && a[4].default_value->i == 7);
    assert_true((const char *)a[4].default_value > (const char *)s && (const char *)a[4].default_value < DK__DEF(def)->debug);
    assert_true(a[5].name > (const char *)s && a[5].name < DK__DEF(def)->debug);   /* an uncommon name: copied */
    assert_string_equal(a[5].name, "zzz_out");
    assert_true(a[5].is_out);
    assert_ptr_equal(a[5].alias, &dk__sp_common_aliases[1]);   /* "(a!)" */
    assert_ptr_equal(a[3].type, &dk__sp_static_optionals[DK_TYPE_Tensor].pub);   /* "Tensor?" */
    assert_ptr_equal(a[3].type->contained[0], &dk__sp_static_types[DK_TYPE_Tensor].pub);
    assert_true(DK__DEF(def)->info.defaults[1].as.i == 1);   /* the def's value of a static default */
    dk_registry_destroy(r);
}

/* Numbers read and print the same whatever the program's LC_NUMERIC is. */
static void test_locale(void **state) {
    static const char *const names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "de_DE", "fr_FR" };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (setlocale(LC_NUMERIC, names[i])) break;
    if (i == sizeof names / sizeof names[0]) {
        print_message("no locale with a decimal comma installed; checked under \"C\" only\n");
        check_arg("float a=0.5, float b=1e-5", "float a=0.5, float b=1.0000000000000001e-05");
        return;
    }
    check_arg("float a=0.5, float b=1e-5, float[] c=[2.25, 3.]", "float a=0.5, float b=1.0000000000000001e-05, float[] c=[2.25, 3.]");
    setlocale(LC_NUMERIC, "C");
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conformance_vectors),
        cmocka_unit_test(test_oracle_roundtrips),
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_model_alias_containers),
        cmocka_unit_test(test_model_defaults),
        cmocka_unit_test(test_default_kinds),
        cmocka_unit_test(test_name_only),
        cmocka_unit_test(test_print_types),
        cmocka_unit_test(test_print_defaults),
        cmocka_unit_test(test_print_alias),
        cmocka_unit_test(test_print_arguments_and_returns),
        cmocka_unit_test(test_print_layout),
        cmocka_unit_test(test_extensions_round_trip),
        cmocka_unit_test(test_regress_annotated_optional),
        cmocka_unit_test(test_regress_named_default_of_float),
        cmocka_unit_test(test_dispatch_bits),
        cmocka_unit_test(test_errors_lexical),
        cmocka_unit_test(test_errors_layout),
        cmocka_unit_test(test_errors_names),
        cmocka_unit_test(test_errors_argument_lists),
        cmocka_unit_test(test_errors_types),
        cmocka_unit_test(test_errors_defaults),
        cmocka_unit_test(test_errors_limits),
        cmocka_unit_test(test_error_message_shape),
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_hostile_sizes),
        cmocka_unit_test(test_allocation_failure),
        cmocka_unit_test(test_arena_sized),
        cmocka_unit_test(test_def_schema_copy),
        cmocka_unit_test(test_def_schema_compact),
        cmocka_unit_test(test_locale),
    };
    if (argc > 1) g_vectors = argv[1];
    return cmocka_run_group_tests_name("function schemas (libtorch 1.13.1)", tests, NULL, NULL);
}
