/* make: variants=1_13_1,2_11 */
/* Every 64-bit keyset, valid or not: iteration, printing, slots, explain and
   calls terminate and give the keys of exactly the bits that are keys. Bits
   above EndOfFunctionalityKeys's bit (bit 63 of the default key space, bits
   55-63 under DK_PRESET_TORCH_1_13_1; none under DK_PRESET_TORCH_2_11, whose
   marker bit is 63) used to make iteration restart forever. Built three
   times: test_keyset_bits (default lists), test_keyset_bits_1_13_1
   (-DDK_PRESET_TORCH_1_13_1) and test_keyset_bits_2_11. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

enum {
    B = DK_NUM_BACKENDS,
    F = DK_NUM_FUNCTIONALITY_KEYS,   /* == EndOfFunctionalityKeys */
    END_BIT = B + F - 1,             /* EndOfFunctionalityKeys's bit, just above FULL */
    FIRST_UNKNOWN_BIT = B + F,       /* this bit and every one above it is no key */
    MAX_KEYS = 1024                  /* far more than any keyset has */
};
#define UNKNOWN_MASK (FIRST_UNKNOWN_BIT >= 64 ? (uint64_t)0 : ~(((uint64_t)1 << FIRST_UNKNOWN_BIT) - 1))

static uint64_t rng = 0x5eed0f0b175ULL;
static uint64_t splitmix64(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The library's iteration, bounded: a keyset that does not end fails the test
   instead of hanging it. */
static int iterate(dk_keyset ks, dk_key *out) {
    int n = 0;
    dk_key k;
    for (k = dk_ks_first(ks); k != DK_Undefined; k = dk_ks_next(ks, k)) {
        if (n == MAX_KEYS) fail_msg("iteration of %016llx does not end", (unsigned long long)ks.repr);
        out[n++] = k;
    }
    return n;
}

/* The same through DK_KS_FOREACH, bounded the same way. */
static int iterate_macro(dk_keyset ks, dk_key *out) {
    int n = 0;
    dk_key k;
    DK_KS_FOREACH(k, ks) {
        if (n == MAX_KEYS) fail_msg("DK_KS_FOREACH over %016llx does not end", (unsigned long long)ks.repr);
        out[n++] = k;
    }
    return n;
}

/* What iteration must give, written independently: functionality bits
   ascending; a per-backend functionality gives one runtime key per backend
   bit (none without backend bits); EndOfFunctionalityKeys's bit gives that
   marker, as c10's iterator does; higher bits give nothing. */
static int reference_keys(dk_keyset ks, dk_key *out) {
    int n = 0, f, b;
    for (f = 1; f <= F; f++) {
        if (!((ks.repr >> (B + f - 1)) & 1)) continue;
        if (f < F && dk_key_is_per_backend_functionality((dk_key)f)) {
            for (b = 1; b <= B; b++)
                if ((ks.repr >> (b - 1)) & 1) out[n++] = dk_key_runtime((dk_key)f, (dk_backend)b);
        } else {
            out[n++] = (dk_key)f;
        }
    }
    return n;
}

static void reference_string(dk_keyset ks, char *buf, size_t size) {
    dk_key keys[MAX_KEYS];
    int n = reference_keys(ks, keys), i;
    size_t len = (size_t)snprintf(buf, size, "DispatchKeySet(");
    uint64_t unknown = ks.repr & UNKNOWN_MASK; /* the marker's bit is no key's and prints nothing (c10) */
    if (n && keys[n - 1] == DK_EndOfFunctionalityKeys) n--;
    for (i = 0; i < n; i++) len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", dk_key_name(keys[i]));
    if (unknown)
        len += (size_t)snprintf(buf + len, size - len, "%sUnknownBits(0x%llx)", n ? ", " : "", (unsigned long long)unknown);
    snprintf(buf + len, size - len, ")");
}

static dk_registry *reg;
static const dk_operator *op;
typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(probe, int, t.ks, (tensor, t))
static int probe_cpu(const dk_kernel *k, dk_keyset ks, tensor t) {
    (void)k; (void)ks; (void)t;
    return 1;
}

static long keysets_checked, keys_seen, with_unknown_bits;

/* Everything the library does with one keyset. */
static void check_keyset(dk_keyset ks, int call) {
    dk_key got[MAX_KEYS], got2[MAX_KEYS], want[MAX_KEYS], valid[MAX_KEYS];
    char text[8192], expect[8192], small[8];
    dk_explanation e;
    int n = iterate(ks, got), i, len;
    assert_int_equal(iterate_macro(ks, got2), n);
    assert_int_equal(reference_keys(ks, want), n);
    for (i = 0; i < n; i++) {
        assert_int_equal(got[i], want[i]);
        assert_int_equal(got2[i], want[i]);
        assert_true(dk_ks_has(ks, got[i]));
    }
    /* the unknown bits change nothing about the keys */
    assert_int_equal(iterate(dk_ks_raw(ks.repr & ~UNKNOWN_MASK), valid), n);
    assert_memory_equal(valid, got, (size_t)n * sizeof got[0]);
    keys_seen += n;

    /* printing, whole and truncated (snprintf semantics) */
    len = dk_ks_to_string(ks, text, sizeof text);
    reference_string(ks, expect, sizeof expect);
    assert_string_equal(text, expect);
    assert_int_equal(len, (int)strlen(expect));
    assert_int_equal(dk_ks_to_string(ks, small, sizeof small), len);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_int_equal(dk_ks_to_string(ks, NULL, 0), len);

    /* the slot: any bit above FULL maps to slot 0 (Undefined's) */
    if (ks.repr >> END_BIT) assert_int_equal(dk_ks_slot(ks), 0);
    else if (n && dk_key_functionality(got[n - 1]) == dk_ks_highest_functionality(ks))
        assert_int_equal(dk_ks_slot(ks), dk_key_slot(got[n - 1]));
    assert_true(dk_ks_slot(ks) >= 0 && dk_ks_slot(ks) < DK_NUM_SLOTS);
    assert_non_null(dk_key_name(dk_ks_highest_key(ks)));
    assert_non_null(dk_key_name(dk_ks_highest_backend_key(ks)));

    /* explain (this used to hang) and, for some, the call itself */
    assert_int_equal(dk_explain(op, ks, &e), DK_OK);
    len = dk_explain_to_string(op, &e, text, sizeof text);
    assert_true(len > 0 && len < (int)sizeof text);
    if (strlen(expect) < 1000) { /* explain prints keysets into 1024-byte buffers */
        const char *at = strstr(text, "  arguments:  ");
        assert_non_null(at);
        assert_memory_equal(at + 14, expect, strlen(expect));
        assert_int_equal(at[14 + strlen(expect)], '\n');
    }
    /* a call masks with the operator's non-fallthrough keys, which start as
       FULL (c10's nonFallthroughKeys_ too): bits above FULL never reach the
       slot, so the call is the call of ks & FULL */
    assert_true((e.final.repr >> END_BIT) == 0);
    assert_int_equal(e.slot, dk_ks_slot(e.final));
    {
        dk_explanation v;
        assert_int_equal(dk_explain(op, dk_ks_raw(ks.repr & DK_KS_FULL.repr), &v), DK_OK);
        assert_true(v.final.repr == e.final.repr);
        assert_int_equal(v.slot, e.slot);
        assert_ptr_equal(v.kernel, e.kernel);
    }
    if (ks.repr & ~DK_KS_FULL.repr) with_unknown_bits++;
    if (ks.repr & UNKNOWN_MASK) {   /* the bits above the marker's print as unknown */
        if (strlen(expect) < 1000) assert_non_null(strstr(text, "UnknownBits(0x"));
    }
    if (call) {
        tensor t;
        int r, r_valid;
        dk_status s, s_valid;
        (void)dk_last_call_status();
        t.ks = ks;
        r = probe_call(op, t);
        s = dk_last_call_status();
        t.ks = dk_ks_raw(ks.repr & DK_KS_FULL.repr);
        r_valid = probe_call(op, t);
        s_valid = dk_last_call_status();
        assert_int_equal(s, s_valid);
        assert_int_equal(r, r_valid);
        assert_int_equal(r, s == DK_OK ? 1 : 0);
        /* redispatch: the slot of ks as given (bits above FULL: slot 0) */
        r = probe_redispatch(op, ks, t);
        s = dk_last_call_status();
        if (dk_ks_slot(ks) == dk_key_slot(DK_CPU)) {
            assert_int_equal(r, 1);
            assert_int_equal(s, DK_OK);
        } else {
            assert_int_equal(r, 0);
            assert_int_not_equal(s, DK_OK);
        }
    }
    keysets_checked++;
}

static int setup(void **state) {
    dk_registration *h;
    (void)state;
    assert_int_equal(dk_registry_create(NULL, &reg), DK_OK);
    assert_int_equal(dk_def(reg, "kb::probe(Tensor a) -> Tensor", &h), DK_OK);
    assert_int_equal(dk_impl(reg, "kb::probe", DK_CPU, dk_unboxed(DK_FN(probe_cpu), NULL), &h), DK_OK);
    op = dk_op_lookup(reg, "kb::probe");
    assert_non_null(op);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    dk_registry_destroy(reg);
    return 0;
}

static void test_layout(void **state) {
    (void)state;
#ifdef DK_PRESET_TORCH_1_13_1
    assert_int_equal(FIRST_UNKNOWN_BIT, 55); /* bits 55..63 are no key */
#elif defined(DK_PRESET_TORCH_2_11)
    assert_int_equal(FIRST_UNKNOWN_BIT, 64); /* bit 63 is EndOfFunctionalityKeys's, none above */
#else
    assert_int_equal(FIRST_UNKNOWN_BIT, 63); /* bit 63 is no key */
#endif
    assert_int_equal(DK_NUM_KEYSET_BITS, END_BIT);
    assert_true(DK_KS_FULL.repr == ((uint64_t)1 << END_BIT) - 1);
}

/* Every single-bit keyset, alone, with the CPU bit, and with every backend bit. */
static void test_single_bits(void **state) {
    int i, pass;
    char text[8192];
    dk_key keys[MAX_KEYS];
    (void)state;
    keysets_checked = 0;
    for (pass = 0; pass < 3; pass++)
        for (i = 0; i < 64; i++) {
            uint64_t extra = pass == 0 ? 0 : pass == 1 ? 1 : DK_KS_BACKENDS.repr;
            check_keyset(dk_ks_raw(((uint64_t)1 << i) | extra), 1);
        }
    assert_int_equal(keysets_checked, 3 * 64);
    /* spelled out for the bits that used to hang and the ones around them */
    assert_int_equal(iterate(dk_ks_raw((uint64_t)1 << END_BIT), keys), 1);
    assert_int_equal(keys[0], DK_EndOfFunctionalityKeys);
    dk_ks_to_string(dk_ks_raw((uint64_t)1 << END_BIT), text, sizeof text);
    /* the marker's bit is no key's: c10 prints nothing for it (libtorch
       1.13.1's texts vectors; c10 2.11: DispatchKeySet() for it alone) */
    assert_string_equal(text, "DispatchKeySet()");
    for (i = FIRST_UNKNOWN_BIT; i < 64; i++) {
        char expect[64];
        assert_int_equal(iterate(dk_ks_raw((uint64_t)1 << i), keys), 0);
        assert_int_equal(iterate(dk_ks_raw(((uint64_t)1 << i) | 1), keys), 0);
        assert_int_equal(iterate(dk_ks_raw(((uint64_t)1 << i) | dk_ks_from_key(DK_AutogradCPU).repr), keys), 1);
        assert_int_equal(keys[0], DK_AutogradCPU);
        snprintf(expect, sizeof expect, "DispatchKeySet(UnknownBits(0x%llx))", 1ULL << i);
        dk_ks_to_string(dk_ks_raw((uint64_t)1 << i), text, sizeof text);
        assert_string_equal(text, expect);
    }
    dk_ks_to_string(dk_ks_raw(((uint64_t)1 << 63) | dk_ks_from_key(DK_AutogradCPU).repr), text, sizeof text);
    /* bit 63: 2.11's EndOfFunctionalityKeys's (prints nothing), no key's in the others */
    assert_string_equal(text, END_BIT == 63 ? "DispatchKeySet(AutogradCPU)"
                                            : "DispatchKeySet(AutogradCPU, UnknownBits(0x8000000000000000))");
    dk_ks_to_string(dk_ks_raw(~(uint64_t)0), text, sizeof text);
    assert_non_null(strstr(text, END_BIT == 63 ? ", PythonDispatcher)" : ", PythonDispatcher, UnknownBits(0x"));
    printf("  %ld single-bit keysets, %ld keys iterated\n", keysets_checked, keys_seen);
}

/* Fixed-seed random keysets: any 64 bits, valid ones, and sparse ones
   (a few keys and backends) with and without bits above FULL. */
static void test_random_keysets(void **state) {
    int i;
    (void)state;
    keysets_checked = keys_seen = with_unknown_bits = 0;
    for (i = 0; i < 20000; i++) {
        uint64_t x = splitmix64(), ks;
        switch (i % 4) {
        case 0: ks = x; break;                                 /* anything */
        case 1: ks = x & DK_KS_FULL.repr; break;               /* valid */
        default: {                                             /* sparse */
            int picks = 1 + (int)(x % 6), p;
            ks = 0;
            for (p = 0; p < picks; p++) ks |= (uint64_t)1 << (splitmix64() % 64);
            if (i % 4 == 3) ks &= DK_KS_FULL.repr;
            else ks |= (uint64_t)1 << (END_BIT + (int)(splitmix64() % (uint64_t)(64 - END_BIT))); /* a bit above FULL */
        }
        }
        check_keyset(dk_ks_raw(ks), i % 8 == 0);
    }
    check_keyset(dk_ks_raw(~(uint64_t)0), 1);
    check_keyset(DK_KS_FULL, 1);
    check_keyset(DK_KS_EMPTY, 1);
    printf("  %ld random keysets (%ld with bits above FULL), %ld keys iterated\n", keysets_checked,
           with_unknown_bits, keys_seen);
    assert_int_equal(keysets_checked, 20003);
    assert_true(with_unknown_bits > 4000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_single_bits),
        cmocka_unit_test(test_random_keysets),
    };
#ifdef DK_PRESET_TORCH_1_13_1
    return cmocka_run_group_tests_name("keyset bits (1.13.1 preset)", tests, setup, teardown);
#elif defined(DK_PRESET_TORCH_2_11)
    return cmocka_run_group_tests_name("keyset bits (2.11 preset)", tests, setup, teardown);
#else
    return cmocka_run_group_tests_name("keyset bits (default key space)", tests, setup, teardown);
#endif
}
