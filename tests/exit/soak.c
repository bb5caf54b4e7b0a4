/* Item 5 of the memory issue: the long churn. One writer makes STEPS
   changes of every kind -- overrides (a second kernel at a key that has
   one), fallthrough fallback toggles, def toggles, library open/close,
   hook replacements, tag changes (a def replaced by one with other tags)
   -- beside two readers that make typed and boxed calls, explain and print
   the explanation, look names up, dump an operator's state and read its
   tags, passing a quiescent point (dk_registry_reclaim) every QS_EVERY
   rounds. Every answer is checked against the answers the registrations
   allow; printed: reader operations, wrong results (must be 0), the
   registry's bytes (through its allocator: live + retired) at the start,
   at their peak and at the end.
   `make soak`: STEPS=1000000 in both modes, plain, ASan+UBSan and
   ThreadSanitizer; `make test` (exit.mk) runs the same program shorter.
   Exits 0 when nothing was wrong and everything was freed at the end. */
#define _POSIX_C_SOURCE 200809L
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>

#ifndef STEPS
#define STEPS 20000
#endif
#define READERS 2
#define QS_EVERY 64
#define RECLAIM_EVERY 256     /* writer steps between two of its reclaims */

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)

typedef struct tensor { dk_keyset ks; } tensor;
DK_DECLARE_OP(sk, int, x.ks, (tensor, x))

/* answers: the CompositeImplicitAutograd kernel 7 (for soak::op's
   CPU+AutogradCPU calls: never, while it has a CPU kernel), the CPU kernels 1 and 2
   (override), soak::toggled's CPU kernel 5, soak::boxed's 11 and 12
   (override), the library's 9 */
static const int v_math = 7, v_cpu1 = 1, v_cpu2 = 2, v_toggled = 5, v_lib = 9;
static const int v_boxed1 = 11, v_boxed2 = 12;

static int k_value(const dk_kernel *k, dk_keyset ks, tensor x) { (void)ks; (void)x; return *(const int *)k->user_data; }
static void k_boxed(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *s) {
    (void)op; (void)ks;
    dk_stack_pop(s);
    dk_stack_push(s, dk_int(*(const int *)k->user_data));
}
static void silent(dk_log_level l, dk_log_item i, const char *m, void *ud) { (void)l; (void)i; (void)m; (void)ud; }
static dk_keyset ks_a, ks_b;   /* two hook records giving the same answer */
static dk_keyset hook_ks(const void *t, void *ud) { (void)t; return *(const dk_keyset *)ud; }

/* the registry's memory through its allocator hooks */
static size_t live_bytes, peak_bytes;
static void *counting_alloc(size_t n, void *ud) {
    size_t *p = (size_t *)malloc(n + 16), live;
    (void)ud;
    if (!p) return NULL;
    p[0] = n;
    live = ADD(&live_bytes, n);
    if (live > LOAD(&peak_bytes)) STORE(&peak_bytes, live);
    return (char *)p + 16;
}
static void counting_free(void *q, void *ud) {
    size_t *p = (size_t *)((char *)q - 16);
    (void)ud;
    __atomic_sub_fetch(&live_bytes, p[0], __ATOMIC_RELAXED);
    free(p);
}

static dk_registry *reg;
static const dk_operator *op_main, *op_toggled, *op_boxed, *op_tagged;
static int writer_done;
static long wrong_at[16];
static long reader_ops[READERS], wrong, explained, dumped, lib_calls;
static dk_registry_desc desc;

static void lib_block(dk_library *m) {
    dk_library_def(m, "op(Tensor x) -> Tensor");
    dk_library_impl(m, "op", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&v_lib));
}

static uint64_t tag_mask(dk_tag t) { return (uint64_t)1 << t; }

static void *writer(void *arg) {
    dk_registration *cpu_over = NULL, *boxed_over = NULL, *ft = NULL, *def_toggled = NULL, *def_tagged = NULL;
    dk_library *lib = NULL;
    dk_def_options tags;
    dk_tag tag_core = DK_TAG_core, tag_pointwise = DK_TAG_pointwise;
    long step;
    (void)arg;
    memset(&tags, 0, sizeof tags);
    tags.num_tags = 1;
    for (step = 0; step < STEPS; step++) {
        dk_status s = DK_OK;
        switch (step % 7) {
        case 0:   /* override: a second CPU kernel over the first, then gone */
            if (cpu_over) { s = dk_deregister(cpu_over); cpu_over = NULL; }
            else s = dk_impl(reg, "soak::op", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&v_cpu2), &cpu_over);
            break;
        case 1:   /* the fallthrough fallback at AutogradCPU: soak::op goes to CPU or stays at the math kernel */
            if (ft) { s = dk_deregister(ft); ft = NULL; }
            else s = dk_fallback(reg, DK_AutogradCPU, dk_fallthrough(), &ft);
            break;
        case 2:   /* soak::toggled's def goes and comes back (its kernel keeps the operator) */
            if (def_toggled) { s = dk_deregister(def_toggled); def_toggled = NULL; }
            else s = dk_def(reg, "soak::toggled(Tensor x) -> Tensor", &def_toggled);
            break;
        case 3:   /* a library opened and closed */
            if (lib) { s = dk_library_close(lib); lib = NULL; }
            else s = dk_library_run(reg, DK_LIBRARY_KIND_DEF, "soaklib", DK_Undefined, lib_block, &lib);
            break;
        case 4:   /* the hooks replaced */
            desc.tensor_keyset_user_data = step % 2 ? &ks_a : &ks_b;
            s = dk_registry_set_hooks(reg, &desc);
            break;
        case 5:   /* soak::tagged's def replaced by one with the other tag */
            if (def_tagged) s = dk_deregister(def_tagged);
            tags.tags = step % 2 ? &tag_core : &tag_pointwise;
            if (s == DK_OK) s = dk_def_with(reg, "soak::tagged(Tensor x) -> Tensor", &tags, &def_tagged);
            break;
        default:  /* the boxed operator's override */
            if (boxed_over) { s = dk_deregister(boxed_over); boxed_over = NULL; }
            else s = dk_impl(reg, "soak::boxed", DK_CPU, dk_boxed(k_boxed, (void *)&v_boxed2), &boxed_over);
            break;
        }
        if (s != DK_OK) {
            fprintf(stderr, "writer step %ld: %s\n", step, dk_last_error());
            abort();
        }
        if (step % RECLAIM_EVERY == 0 && dk_registry_reclaim(reg) != DK_OK) abort();
    }
    if (lib) dk_library_close(lib);
    if (dk_thread_offline() != DK_OK) abort();
    STORE(&writer_done, 1);
    return NULL;
}

static int one_of(int v, int a, int b, int c) { return v == a || v == b || v == c; }

#define CHECK(i, c) ((c) ? (ADD(&wrong_at[i], 1), 1) : 0)
static void *reader(void *arg) {
    int me = (int)(size_t)arg;
    long n = 0, bad = 0;
    tensor x, xa;
    dk_keyset args[1];
    char text[4096];
    x.ks = dk_ks_from_key(DK_CPU);
    xa.ks = dk_ks_or(dk_ks_from_key(DK_CPU), dk_ks_from_key(DK_AutogradCPU));
    args[0] = xa.ks;
    if (dk_thread_online() != DK_OK) abort();
    while (!LOAD(&writer_done)) {
        dk_value storage[4];
        dk_stack st;
        dk_explanation e;
        const dk_operator *o;
        uint64_t t;
        int v;
        /* typed calls */
        bad += CHECK(1, !one_of(sk_call(op_main, x), v_cpu1, v_cpu2, -1));
        /* AutogradCPU: the CPU kernels through the fallthrough fallback,
           or without it no kernel (a CPU kernel keeps the math one from
           the autograd slot) */
        (void)dk_last_call_status();
        v = sk_call(op_main, xa);
        bad += CHECK(2, v ? !one_of(v, v_cpu1, v_cpu2, -1) : dk_last_call_status() != DK_ERR_NO_KERNEL);
        bad += CHECK(3, sk_call(op_toggled, x) != v_toggled);
        /* a boxed call */
        dk_stack_init(&st, storage, 4);
        dk_stack_push(&st, dk_tensor(&x));
        dk_call_boxed(op_boxed, &st);
        bad += CHECK(4, st.size != 1 || st.values[0].tag != DK_VALUE_INT ||
               !one_of((int)st.values[0].as.i, v_boxed1, v_boxed2, -1));
        /* explain, printed afterwards */
        if (dk_explain_args(op_main, args, 1, &e) != DK_OK) bad++;
        else {
            dk_explain_to_string(op_main, &e, text, sizeof text);
            bad += CHECK(5, strstr(text, "soak::op") == NULL);
            ADD(&explained, 1);
        }
        /* lookups: the kept operators are found, the library's may be */
        bad += CHECK(6, dk_op_lookup(reg, "soak::op") != op_main || dk_op_lookup(reg, "soak::toggled") != op_toggled);
        dk_call_enter();   /* (call epochs: the operator found is held until the exit) */
        if ((o = dk_op_lookup(reg, "soaklib::op")) != NULL) {
            v = sk_call(o, x);   /* 0: closed between the lookup and the call */
            bad += CHECK(7, v != v_lib && v != 0);
            ADD(&lib_calls, 1);
        }
        dk_call_exit();
        /* tags: one def's tags, never a mix. The accessor reads the current
           table: with call epochs only a bracket holds it (outside one the
           table may be freed at once); in the default mode this thread's
           next quiescent point ends what it holds */
        dk_call_enter();
        t = dk_op_tags(op_tagged);
        dk_call_exit();
        bad += CHECK(8, t != 0 && t != tag_mask(DK_TAG_core) && t != tag_mask(DK_TAG_pointwise));
        if (n % 16 == 0) {   /* a dump (it takes the registry's lock) */
            bad += CHECK(9, dk_op_state_to_string(op_main, text, sizeof text) <= 0 || strstr(text, "soak::op") == NULL);
            ADD(&dumped, 1);
        }
        n += 8;
        if ((n / 8) % QS_EVERY == 0 && dk_registry_reclaim(reg) != DK_OK) abort();
    }
    if (dk_thread_offline() != DK_OK) abort();
    reader_ops[me] = n;
    ADD(&wrong, bad);
    return NULL;
}

int main(void) {
    dk_registration *h;
    dk_registry_stats st;
    pthread_t w, r[READERS];
    size_t at_start;
    long total = 0;
    int i;
    ks_a = dk_ks_from_key(DK_CPU);
    ks_b = dk_ks_from_key(DK_CPU);
    memset(&desc, 0, sizeof desc);
    desc.alloc = counting_alloc;
    desc.free = counting_free;
    desc.logger.func = silent;
    desc.tensor_keyset = hook_ks;
    desc.tensor_keyset_user_data = &ks_a;
    if (dk_registry_create(&desc, &reg) != DK_OK ||
        dk_def(reg, "soak::op(Tensor x) -> Tensor", &h) != DK_OK ||
        dk_impl(reg, "soak::op", DK_CompositeImplicitAutograd, dk_unboxed(DK_FN(k_value), (void *)&v_math), &h) != DK_OK ||
        dk_impl(reg, "soak::op", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&v_cpu1), &h) != DK_OK ||
        dk_impl(reg, "soak::toggled", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&v_toggled), &h) != DK_OK ||
        dk_def(reg, "soak::boxed(Tensor x) -> int", &h) != DK_OK ||
        dk_impl(reg, "soak::boxed", DK_CPU, dk_boxed(k_boxed, (void *)&v_boxed1), &h) != DK_OK ||
        dk_impl(reg, "soak::tagged", DK_CPU, dk_unboxed(DK_FN(k_value), (void *)&v_cpu1), &h) != DK_OK)
        return 2;
    op_main = dk_op_lookup(reg, "soak::op");
    op_toggled = dk_op_lookup(reg, "soak::toggled");
    op_boxed = dk_op_lookup(reg, "soak::boxed");
    op_tagged = dk_op_lookup(reg, "soak::tagged");
    at_start = LOAD(&live_bytes);
    for (i = 0; i < READERS; i++)
        if (pthread_create(&r[i], NULL, reader, (void *)(size_t)i) != 0) return 2;
    if (pthread_create(&w, NULL, writer, NULL) != 0) return 2;
    pthread_join(w, NULL);
    for (i = 0; i < READERS; i++) {
        pthread_join(r[i], NULL);
        total += reader_ops[i];
    }
    if (dk_registry_reclaim(reg) != DK_OK) return 2;
    dk_registry_read_stats(reg, &st);
    for (i = 0; i < 16; i++) if (LOAD(&wrong_at[i])) fprintf(stderr, "wrong at check %d: %ld\n", i, LOAD(&wrong_at[i]));
    printf("soak (%s): %d writer steps beside %d readers: %ld reader operations (%ld explanations printed, %ld dumps, "
           "%ld library calls), %ld wrong results; registry bytes %lu at the start, peak %lu, %lu at the end "
           "(%lu retired)\n",
#ifdef DK_CALL_EPOCHS
           "call epochs",
#else
           "default",
#endif
           STEPS, READERS, total, LOAD(&explained), LOAD(&dumped), LOAD(&lib_calls), LOAD(&wrong), (unsigned long)at_start,
           (unsigned long)LOAD(&peak_bytes), (unsigned long)LOAD(&live_bytes), (unsigned long)st.retired_bytes);
    if (dk_thread_offline() != DK_OK) return 2;
    dk_registry_destroy(reg);
    return LOAD(&wrong) == 0 && st.retired_bytes == 0 && LOAD(&live_bytes) == 0 ? 0 : 1;   /* all freed */
}
