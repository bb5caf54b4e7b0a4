/* Built by tests/limits/limits.sh with a generated list at a limit: every
   key of the list round-trips (name, functionality x backend, slot), every
   slot's 4-bit reason round-trips (in the rows' spare bytes and past them:
   1 backend with 64 slots, 16 backends with 769), every keyset prints, and
   a kernel at the highest runtime key runs. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <stdio.h>
#include <string.h>

static int failures;
#define CHECK(c)                                                                          \
    do {                                                                                  \
        if (!(c)) { failures++; if (failures < 10) printf("FAIL line %d: %s\n", __LINE__, #c); } \
    } while (0)

typedef struct tensor { uint64_t ks; } tensor;
static dk_keyset keyset_of(const void *t, void *user_data) {
    (void)user_data;
    return dk_ks_raw(((const tensor *)t)->ks);
}
static void kernel(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)k; (void)op; (void)ks;
    dk_stack_pop(s);
    dk_stack_push(s, dk_int(42));
}

int main(void) {
    static int slot_seen[DK_NUM_SLOTS];
    char buf[4096];
    int k, runtime = 0, highest = 0, s;
    for (k = 0; k < DK_NUM_KEYS; k++) {
        dk_key key = (dk_key)k, parsed;
        CHECK(dk_key_name(key) != NULL);
        CHECK(dk_key_parse(dk_key_name(key), &parsed) == DK_OK && parsed == key);
        if (!dk_key_is_runtime(key)) continue;
        runtime++;
        if (dk_key_backend(key) != DK_InvalidBit)
            CHECK(dk_key_runtime(dk_key_functionality(key), dk_key_backend(key)) == key);
        CHECK(dk_key_slot(key) >= 0 && dk_key_slot(key) < DK_NUM_SLOTS);
        slot_seen[dk_key_slot(key)]++;
        CHECK(dk_slot_key(dk_key_slot(key)) == key);
        if (key != DK_Undefined) {
            CHECK(dk_ks_highest_key(dk_ks_from_key(key)) == key);
            CHECK(dk_ks_to_string(dk_ks_from_key(key), buf, sizeof buf) > 0 && strstr(buf, dk_key_name(key)));
            highest = k;
        }
    }
    CHECK(runtime == DK_NUM_SLOTS);
    for (s = 0; s < DK_NUM_SLOTS; s++) CHECK(slot_seen[s] == 1);
    CHECK(dk_ks_to_string(DK_KS_FULL, buf, sizeof buf) > 0);
    {   /* every slot's reason (4 bits) round-trips, in the rows' spare bytes
           and, past them (1 backend, 64 slots), in the table's own bytes */
        static dk_op_table t;
        int b, v;
        memset(&t, 0x5A, sizeof t);
        for (v = 0; v < 16; v++) {
            for (s = 0; s < DK_NUM_SLOTS; s++) dk__reason_set(&t, s, (dk_source_detail)((s * 7 + v) & 15));
            for (s = 0; s < DK_NUM_SLOTS; s++) CHECK(dk__reason_at(&t, s) == ((s * 7 + v) & 15));
        }
        for (b = 0; b < DK_NUM_BACKENDS; b++) CHECK(t.rows[b].nonfallthrough == 0x5A5A5A5A5A5A5A5Aull);
    }
    {
        dk_registry_desc desc;
        dk_registry *r;
        dk_registration *h;
        dk_value storage[4];
        dk_stack st;
        tensor t;
        memset(&desc, 0, sizeof desc);
        desc.tensor_keyset = keyset_of;
        CHECK(dk_registry_create(&desc, &r) == DK_OK);
        CHECK(dk_def(r, "t::f(Tensor x) -> int", &h) == DK_OK);
        CHECK(dk_impl(r, "t::f", (dk_key)highest, dk_boxed(kernel, NULL), &h) == DK_OK);
        t.ks = dk_ks_from_key((dk_key)highest).repr;
        dk_stack_init(&st, storage, 4);
        dk_stack_push(&st, dk_tensor(&t));
        dk_call_boxed(dk_op_lookup(r, "t::f"), &st);
        CHECK(st.size == 1 && st.values[0].tag == DK_VALUE_INT && st.values[0].as.i == 42);
        dk_registry_destroy(r);
    }
    printf("%s: %d backends, %d functionality keys (%d per backend), %d keys, %d runtime slots, highest key %s\n",
           failures ? "FAIL" : "ok", DK_NUM_BACKENDS, DK_NUM_FUNCTIONALITY_KEYS - 1,
           DK_NUM_PER_BACKEND_FUNCTIONALITIES, DK_NUM_KEYS, DK_NUM_SLOTS, dk_key_name((dk_key)highest));
    return failures != 0;
}
