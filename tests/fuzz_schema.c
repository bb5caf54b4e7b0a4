/* libFuzzer harness for the schema parser (make fuzz-short / make fuzz, see tests/fuzz.mk).

   For every input: parse it; on failure the error must be DK_ERR_BAD_SCHEMA
   with a positioned message. On success the printed text must parse again
   and print identically (round-trip stability), the two models must agree
   (names, printed types, default kinds, flags),
   the dispatch bitset must only use the argument bits, and
   dk_schema_to_string must truncate like snprintf. Any violation aborts,
   which libFuzzer reports as a crash; AddressSanitizer reports leaks.

   clang -fsanitize=fuzzer,address,undefined -I<dir of dispatch.h> tests/fuzz_schema.c */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "fuzz_schema: check failed: %s (line %d)\n", #c, __LINE__); \
            abort();                                                               \
        }                                                                          \
    } while (0)

/* The printed text carries the values; the kinds must survive it too
   ("float x=complex" holds an int, which must not read back as a float). */
static int same_default_kind(const dk_default *a, const dk_default *b) {
    size_t i;
    if (a->kind != b->kind) return 0;
    if (a->kind != DK_DEFAULT_LIST) return 1;
    if (a->count != b->count) return 0;
    for (i = 0; i < a->count; i++)
        if (!same_default_kind(&a->items[i], &b->items[i])) return 0;
    return 1;
}

static void check_args(const dk_arg *a, const dk_arg *b, int n) {
    int i;
    for (i = 0; i < n; i++) {
        CHECK(strcmp(a[i].name, b[i].name) == 0);
        CHECK(strcmp(a[i].type_text, b[i].type_text) == 0);
        CHECK(strcmp(a[i].type->str, b[i].type->str) == 0);
        CHECK(a[i].kwarg_only == b[i].kwarg_only && a[i].list_size == b[i].list_size);
        CHECK(!a[i].default_value == !b[i].default_value);
        CHECK(!a[i].default_value || same_default_kind(a[i].default_value, b[i].default_value));
        CHECK(!a[i].default_text || strcmp(a[i].default_text, b[i].default_text) == 0);
        CHECK(a[i].is_dispatch == b[i].is_dispatch && a[i].is_out == b[i].is_out);
    }
}

/* snprintf-like truncation at a few buffer sizes. */
static void check_to_string(const dk_schema *s) {
    char small[8];
    size_t n = strlen(s->text), k;
    for (k = 0; k <= sizeof small; k++) {
        memset(small, 'x', sizeof small);
        CHECK((size_t)dk_schema_to_string(s, small, k) == n);
        if (k) CHECK(strlen(small) == (n < k - 1 ? n : k - 1) && memcmp(small, s->text, strlen(small)) == 0);
        else CHECK(small[0] == 'x');
    }
}

static void check_schema(const dk_schema *s) {
    dk_schema *again = NULL;
    uint64_t used = s->num_arguments >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << s->num_arguments) - 1);
    CHECK(s->text && s->name && s->overload);
    CHECK((s->dispatch_args & ~used) == 0);
    CHECK(s->num_arguments <= 64);
    check_to_string(s);
    if (dk_schema_parse(s->text, &again) != DK_OK) {
        fprintf(stderr, "fuzz_schema: printed text does not parse:\n%s\n%s\n", s->text, dk_last_error());
        abort();
    }
    if (strcmp(again->text, s->text) != 0) {
        fprintf(stderr, "fuzz_schema: not stable:\n first:  %s\n second: %s\n", s->text, again->text);
        abort();
    }
    CHECK(strcmp(again->name, s->name) == 0 && strcmp(again->overload, s->overload) == 0);
    CHECK(again->name_only == s->name_only && again->dispatch_args == s->dispatch_args);
    CHECK(again->num_arguments == s->num_arguments && again->num_returns == s->num_returns);
    CHECK(again->is_vararg == s->is_vararg && again->is_varret == s->is_varret);
    check_args(s->arguments, again->arguments, s->num_arguments);
    check_args(s->returns, again->returns, s->num_returns);
    dk_schema_free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = (char *)malloc(size + 1);
    dk_schema *s = NULL;
    dk_status st;
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    st = dk_schema_parse(text, &s);
    if (st == DK_OK) {
        check_schema(s);
        dk_schema_free(s);
    } else {
        CHECK(st == DK_ERR_BAD_SCHEMA && s == NULL);
        CHECK(strstr(dk_last_error(), " at position ") != NULL);
    }
    free(text);
    return 0;
}
