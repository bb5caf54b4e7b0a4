/* Calls and name lookups racing registration: readers take no lock, and
   every call must run a kernel that was registered at some moment during
   the call. Run under ThreadSanitizer by `make test` (target tsan). */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(probe, int, t.ks, (tensor, t))

#define MAX_KERNELS 4096
#define READERS 3

/* Logical clock: ticked by the writer around every change. */
static uint64_t clock_now;
static uint64_t registered_at[MAX_KERNELS], deregistered_at[MAX_KERNELS];
static int ids[MAX_KERNELS];
static int writer_done;
static long calls_checked[READERS], violations, lookups_failed;
static dk_registry *reg;
static const dk_operator *op;

static uint64_t tick(void) { return __atomic_add_fetch(&clock_now, 1, __ATOMIC_SEQ_CST); }
static uint64_t now(void) { return __atomic_load_n(&clock_now, __ATOMIC_SEQ_CST); }

static int probe_impl(const dk_kernel *k, dk_keyset ks, tensor t) {
    (void)ks; (void)t;
    return *(const int *)k->user_data;
}
static void probe_fallback(const dk_kernel *k, const dk_operator *o, dk_keyset ks, dk_stack *stack) {
    (void)o; (void)ks;
    ((probe_args *)stack->unboxed_args)->result = *(const int *)k->user_data;
}
static void silent(dk_log_level level, dk_log_item item, const char *m, void *ud) { (void)level; (void)item; (void)m; (void)ud; }

static void *writer(void *arg) {
    dk_registration *live[8] = { 0 };
    int live_id[8] = { 0 };
    int next = 1, step;
    uint64_t x = 0x2545F4914F6CDD1DULL;
    (void)arg;
    for (step = 0; step < 3000 && next < MAX_KERNELS; step++) {
        int slot;
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        slot = (int)(x % 8);
        if (live[slot]) {
            int id = live_id[slot];
            assert_int_equal(dk_deregister(live[slot]), DK_OK);
            __atomic_store_n(&deregistered_at[id], tick(), __ATOMIC_SEQ_CST);
            live[slot] = NULL;
        } else {
            int id = next++;
            dk_status s;
            __atomic_store_n(&registered_at[id], tick(), __ATOMIC_SEQ_CST);
            if (slot < 5) /* kernels at CPU / Autograd / CompositeImplicitAutograd / AutogradCPU */
                s = dk_impl(reg, "mt::probe", slot < 2 ? DK_CPU : slot == 2 ? DK_Autograd : slot == 3 ?
                            DK_CompositeImplicitAutograd : DK_AutogradCPU, dk_unboxed(DK_FN(probe_impl), &ids[id]),
                            &live[slot]);
            else if (slot < 7) /* fallbacks */
                s = dk_fallback(reg, slot == 5 ? DK_Tracer : DK_AutogradCPU, dk_boxed(probe_fallback, &ids[id]),
                                &live[slot]);
            else { /* more operators: the name index grows under the readers */
                char name[64];
                snprintf(name, sizeof name, "mt::extra%d(Tensor a) -> Tensor", id);
                s = dk_def(reg, name, &live[slot]);
                live[slot] = NULL;
            }
            if (s != DK_OK) live[slot] = NULL; /* the AutogradCPU fallback slot may be taken */
            live_id[slot] = id;
        }
    }
    __atomic_store_n(&writer_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *reader(void *arg) {
    int me = (int)(size_t)arg;
    tensor t;
    t.ks = dk_ks_or(dk_ks_from_key(DK_CPU), dk_ks_from_key(DK_AutogradCPU));
    while (!__atomic_load_n(&writer_done, __ATOMIC_SEQ_CST)) {
        uint64_t t0, t1;
        int id;
        dk_guard g = dk_include_push(me == 0 ? dk_ks_from_key(DK_Tracer) : DK_KS_EMPTY);
        t0 = now();
        id = probe_call(op, t);
        t1 = now();
        dk_guard_pop(g);
        (void)dk_last_call_status(); /* no kernel at all is a valid outcome */
        if (id) {
            uint64_t reg_at = __atomic_load_n(&registered_at[id], __ATOMIC_SEQ_CST);
            uint64_t dereg_at = __atomic_load_n(&deregistered_at[id], __ATOMIC_SEQ_CST);
            if (reg_at == 0 || reg_at > t1 || (dereg_at != 0 && dereg_at <= t0))
                __atomic_add_fetch(&violations, 1, __ATOMIC_SEQ_CST);
            calls_checked[me]++;
        }
        if (dk_op_lookup(reg, "mt::probe") != op) __atomic_add_fetch(&lookups_failed, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static void test_calls_during_registration(void **state) {
    pthread_t w, r[READERS];
    dk_registration *d;
    dk_registry_desc desc;
    int i;
    long total = 0;
    (void)state;
    memset(&desc, 0, sizeof desc);
    desc.logger.func = silent;
    for (i = 0; i < MAX_KERNELS; i++) ids[i] = i;
    assert_int_equal(dk_registry_create(&desc, &reg), DK_OK);
    assert_int_equal(dk_def(reg, "mt::probe(Tensor a) -> Tensor", &d), DK_OK);
    op = dk_op_lookup(reg, "mt::probe");
    dk_registry_set_call_error(reg, dk_call_error_report, NULL);
    for (i = 0; i < READERS; i++) assert_int_equal(pthread_create(&r[i], NULL, reader, (void *)(size_t)i), 0);
    assert_int_equal(pthread_create(&w, NULL, writer, NULL), 0);
    pthread_join(w, NULL);
    for (i = 0; i < READERS; i++) {
        pthread_join(r[i], NULL);
        total += calls_checked[i];
    }
    printf("  %ld calls that ran a kernel checked against registration times, %ld violations\n", total, violations);
    assert_int_equal(violations, 0);
    assert_int_equal(lookups_failed, 0);
    assert_true(total > 0);
    dk_registry_destroy(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_during_registration),
    };
    return cmocka_run_group_tests_name("threads", tests, NULL, NULL);
}
