/* make: variants=2_11 */
/* Property test: the live dispatch table always equals a full recomputation.

   A model records every live registration (per operator: impls in
   registration order; per slot: the backend fallback). A reference resolver,
   written from the spec of c10's computeDispatchTableEntryWithDebug and kept
   deliberately simple and slow (it rescans the registrations for every rule
   of every slot), says for each operator and slot which registration must be
   there, or that the slot is missing / the AutogradOther ambiguity sentinel.
   The dispatcher's table and fallthrough masks are compared with it after
   random sequences of register / deregister (test_random_sequences), for
   every order of two fixed sets of registrations (test_permutations), and
   after everything has been deregistered (end of every random run).

   Only public keyset helpers of dispatch.h are used for the reference
   (dk_key_in_alias, dk_alias_runtime_set, dk_autograd_key_backend_set, dk_ks_has,
   dk_slot_key, dk_key_slot, DK_KS_FOREACH), never its resolution code.
   A registration is identified by its user_data: the address of tags[id]. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- PRNG (splitmix64, fixed seeds) --------------------------------------- */

static uint64_t rng_state;
static uint64_t rnd64(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int rnd(int n) { return (int)(rnd64() % (uint64_t)n); }

/* ---- the model -------------------------------------------------------------- */

#define NOPS 3
#define MAX_REGS 40000 /* registrations per run (ids), including failed attempts */
#define MAX_LIVE 4096

enum { R_DEF, R_IMPL, R_FALLBACK };

typedef struct mreg {
    dk_registration *h;
    int type;   /* R_* */
    int op;     /* def, impl */
    dk_key key; /* impl: effective key (catch-all = CompositeImplicitAutograd); fallback: as given */
    int ft;     /* fallthrough */
    int live;
} mreg;

typedef struct mop {
    int impls[MAX_LIVE]; /* live impl ids, oldest first */
    int n;
    int def_id; /* -1: no def */
} mop;

static char tags[MAX_REGS];
static mreg regs[MAX_REGS];
static int nregs;
static mop ops[NOPS];
static int fb[DK_NUM_SLOTS]; /* fallback id per slot, -1 */
static int live_ids[MAX_LIVE], nlive;
static int dead_ids[MAX_REGS], ndead;

static dk_registry *reg;
static int nops_used = NOPS;
static const char *const op_names[NOPS] = { "prop::op0", "prop::op1.ovl" , "prop::op2" };
static const char *const op_schemas[NOPS] = { "prop::op0(Tensor a) -> Tensor", "prop::op1.ovl(Tensor a, int b) -> Tensor",
                                              "prop::op2(Tensor[] a) -> ()" };

static long n_operations, n_slots;
/* how often each rule decided a slot in the random test (coverage evidence) */
static long fallthrough_hits, dup_fallbacks, bad_handles;
static const char *phase = "";
static long step_no;

static void kern(void) {}
static void boxed_fb(const dk_kernel *k, const dk_operator *op, dk_keyset ks, dk_stack *stack) {
    (void)k; (void)op; (void)ks; (void)stack;
}
static void quiet_log(dk_log_level level, dk_log_item item, const char *message, void *user_data) {
    (void)user_data;
    (void)item;
    if (level != DK_LOG_WARNING) fprintf(stderr, "dispatch error: %s\n", message);
}

static dk_registry *new_registry(void) {
    dk_registry_desc d;
    dk_registry *r = NULL;
    memset(&d, 0, sizeof d);
    d.logger.func = quiet_log;
    d.no_default_fallthroughs = 1; /* the model starts from an empty registry */
    assert_int_equal(dk_registry_create(&d, &r), DK_OK);
    assert_non_null(r);
    return r;
}

static void model_reset(void) {
    int i;
    nregs = 0; nlive = 0; ndead = 0;
    for (i = 0; i < NOPS; i++) { ops[i].n = 0; ops[i].def_id = -1; }
    for (i = 0; i < DK_NUM_SLOTS; i++) fb[i] = -1;
}

/* ---- the reference resolver (from the spec, simple and slow) ---------------- */

enum { A_REG, A_MISSING, A_AMBIGUOUS };
/* The rule that decided, by c10's debug string. */
enum { W_KERNEL, W_DEFAULT_BACKEND, W_NESTED, W_MATH, W_AMBIGUOUS, W_AUTOGRAD, W_BATCHED, W_FALLBACK, W_MISSING,
       NREASONS };
static const char *const reasons[NREASONS] = { "kernel", "default backend kernel", "nested kernel", "math kernel",
                                               "ambiguous autogradother", "autograd kernel", "batched kernel",
                                               "backend fallback", "missing" };
static long reason_hits[NREASONS];
typedef struct answer { int what; int id; int ft; int reason; } answer;

/* newest[key]: the newest live impl of the operator registered at exactly
   `key`, or -1 (one pass over the impls, oldest first, later ones win). */
typedef int front_t[DK_NUM_KEYS];
static void newest_per_key(const mop *m, front_t newest) {
    int i;
    for (i = 0; i < DK_NUM_KEYS; i++) newest[i] = -1;
    for (i = 0; i < m->n; i++) newest[regs[m->impls[i]].key] = m->impls[i];
    newest[DK_Undefined] = -1; /* an alias role missing from the key list is Undefined */
}

/* c10 hasKernelForAnyDispatchKey: a live impl at a non-alias key in ks. */
static int has_kernel_in(const mop *m, dk_keyset ks) {
    int i;
    if (dk_ks_is_empty(ks)) return 0;
    for (i = 0; i < m->n; i++) {
        dk_key k = regs[m->impls[i]].key;
        if (!dk_key_is_alias(k) && dk_ks_has(ks, k)) return 1;
    }
    return 0;
}

/* isIncludedInAlias, memoised per (key, alias) since it is a pure function. */
static signed char in_alias_memo[DK_NUM_KEYS][DK_NUM_KEYS];
static int in_alias(dk_key k, int alias) {
    signed char *v = &in_alias_memo[k][alias];
    if (*v == 0) *v = (alias != DK_Undefined && dk_key_in_alias(k, (dk_key)alias)) ? 1 : -1;
    return *v > 0;
}

static answer found(int id, int reason) {
    answer a;
    a.what = A_REG; a.id = id; a.ft = regs[id].ft; a.reason = reason;
    return a;
}

static answer resolve(const mop *m, const front_t newest, int slot) {
    answer a;
    dk_key k = dk_slot_key(slot);
    int und = (k == DK_Undefined), id, has_backend_kernel;
    /* 1: a kernel registered directly for k (newest wins) */
    if (!und && (id = newest[k]) >= 0) return found(id, W_KERNEL);
    /* 2.1, 2.2: CompositeExplicitAutogradNonFunctional, CompositeExplicitAutograd (Undefined too) */
    if ((und || in_alias(k, DK__ALIAS_NON_FUNCTIONAL)) && (id = newest[DK__ALIAS_NON_FUNCTIONAL]) >= 0)
        return found(id, W_DEFAULT_BACKEND);
    if ((und || in_alias(k, DK__ALIAS_BACKEND)) && (id = newest[DK__ALIAS_BACKEND]) >= 0)
        return found(id, W_DEFAULT_BACKEND);
    has_backend_kernel = newest[DK__ALIAS_BACKEND] >= 0 || has_kernel_in(m, dk_autograd_key_backend_set(k));
    /* 2.3a: CompositeImplicitAutogradNestedTensor (not Undefined) */
    if (!und && in_alias(k, DK__ALIAS_NESTED) && (id = newest[DK__ALIAS_NESTED]) >= 0)
        return found(id, W_NESTED);
    /* 2.3b: CompositeImplicitAutograd (Undefined too) */
    if ((und || in_alias(k, DK__ALIAS_MATH)) && (id = newest[DK__ALIAS_MATH]) >= 0) {
        if (k == DK_AutogradOther && has_kernel_in(m, DK_KS_OTHER_BACKENDS)) {
            a.what = A_AMBIGUOUS; a.id = -1; a.ft = 0; a.reason = W_AMBIGUOUS;
            return a;
        }
        if (!has_backend_kernel) return found(id, W_MATH);
    }
    /* 2.4: Autograd; 2.5: FuncTorchBatchedDecomposition */
    if (in_alias(k, DK__ALIAS_AUTOGRAD) && (id = newest[DK__ALIAS_AUTOGRAD]) >= 0)
        return found(id, W_AUTOGRAD);
    if (in_alias(k, DK__ALIAS_BATCHED) && (id = newest[DK__ALIAS_BATCHED]) >= 0)
        return found(id, W_BATCHED);
    /* 3: backend fallback; 4: missing */
    if (fb[slot] >= 0) return found(fb[slot], W_FALLBACK);
    a.what = A_MISSING; a.id = -1; a.ft = 0; a.reason = W_MISSING;
    return a;
}

/* ---- comparing the dispatcher with the reference ------------------------------ */

/* The registration a kernel record stands for, as an answer (reason unused). */
static answer decode(const dk_kernel *k) {
    answer a;
    a.reason = -1; a.ft = 0; a.id = -1;
    if (k->kind == DK_KERNEL_MISSING) { a.what = A_MISSING; return a; }
    if (k->kind == DK_KERNEL_AMBIGUOUS) { a.what = A_AMBIGUOUS; return a; }
    a.what = A_REG;
    a.ft = k->kind == DK_KERNEL_FALLTHROUGH;
    if (k->user_data && (const char *)k->user_data >= tags && (const char *)k->user_data < tags + MAX_REGS)
        a.id = (int)((const char *)k->user_data - tags);
    return a;
}

static void describe(char *buf, size_t n, answer a) {
    if (a.what == A_MISSING) snprintf(buf, n, "missing");
    else if (a.what == A_AMBIGUOUS) snprintf(buf, n, "ambiguous");
    else if (a.id < 0) snprintf(buf, n, "unidentified kernel%s", a.ft ? " (fallthrough)" : "");
    else
        snprintf(buf, n, "reg #%d (%s %s%s)", a.id,
                 regs[a.id].type == R_FALLBACK ? "fallback" : "impl", dk_key_name(regs[a.id].key),
                 a.ft ? ", fallthrough" : "");
}

static int kernel_matches(const dk_kernel *k, answer want) {
    answer got = decode(k);
    if (got.what != want.what) return 0;
    if (want.what != A_REG) return 1;
    if (got.ft != want.ft) return 0;
    if (k->is_fallback != (regs[want.id].type == R_FALLBACK)) return 0;
    if (k->key != regs[want.id].key) return 0;
    /* user_data identifies the registration; a fallthrough that dropped its
       user_data is accepted on kind + is_fallback + key alone */
    return got.id == want.id || (want.ft && k->user_data == NULL);
}

/* On a failure: the model's live registrations, to rebuild the case by hand. */
static void dump_model(int o) {
    int i, s;
    print_error("  live impls of %s, oldest first:", op_names[o]);
    for (i = 0; i < ops[o].n; i++) {
        const mreg *g = &regs[ops[o].impls[i]];
        print_error(" #%d %s%s", ops[o].impls[i], dk_key_name(g->key), g->ft ? "(fallthrough)" : "");
    }
    print_error("\n  def: %s; fallbacks:", ops[o].def_id >= 0 ? "yes" : "no");
    for (s = 0; s < DK_NUM_SLOTS; s++)
        if (fb[s] >= 0 && (s == 0 || fb[s - 1] != fb[s]))
            print_error(" #%d at %s%s (from slot %d)", fb[s], dk_key_name(regs[fb[s]].key),
                        regs[fb[s]].ft ? "(fallthrough)" : "", s);
    print_error("\n");
}

static void slot_mismatch(int o, int slot, const dk_kernel *k, answer want, const char *what) {
    char e[160], g[160];
    describe(e, sizeof e, want);
    describe(g, sizeof g, decode(k));
    print_error("%s: %s step %ld, operator %s, slot %d (%s): expected %s [%s], table has %s (key %s)\n", what,
                phase, step_no, op_names[o], slot, dk_key_name(dk_slot_key(slot)), e, reasons[want.reason], g,
                dk_key_name(k->key));
    dump_model(o);
    fail();
}

/* Compares every slot and the fallthrough masks of operator o with the
   reference. thorough: also compare with dk_op_compute_slot (kernel and reason). */
static void check_op(int o, int thorough) {
    const mop *m = &ops[o];
    dk_operator *op = dk_op_lookup(reg, op_names[o]);
    uint64_t masks[DK_NUM_BACKENDS];
    front_t newest;
    int slot, b, visible = m->def_id >= 0 || m->n > 0;
    if ((op != NULL) != visible) {
        print_error("%s step %ld: %s visible=%d, model says %d\n", phase, step_no, op_names[o], op != NULL, visible);
        fail();
    }
    if (!op) return;
    newest_per_key(m, newest);
    for (b = 0; b < DK_NUM_BACKENDS; b++) masks[b] = DK_KS_FULL.repr;
    for (slot = 0; slot < DK_NUM_SLOTS; slot++) {
        answer want = resolve(m, newest, slot);
        const dk_kernel *k = dk_op_slot_kernel(op, slot);
        const dk_table_entry *e = dk_op_table_entry(dk_op_table_of(op), slot);
        dk_key key = dk_slot_key(slot);
        assert_non_null(k);
        if (!kernel_matches(k, want)) slot_mismatch(o, slot, k, want, "table");
        if (e->fn != e->kernel->fn) { /* a call runs the entry's fn with the entry's record */
            print_error("%s step %ld: %s slot %d (%s): the entry's fn is not its record's\n", phase, step_no,
                        op_names[o], slot, dk_key_name(key));
            fail();
        }
        if (thorough) {
            const char *reason = NULL;
            const dk_kernel *c = dk_op_compute_slot(op, slot, &reason);
            assert_non_null(c);
            if (!kernel_matches(c, want)) slot_mismatch(o, slot, c, want, "dk_op_compute_slot");
            if (!reason || strcmp(reason, reasons[want.reason]) != 0) {
                print_error("%s step %ld: %s slot %d (%s): reason '%s', spec says '%s'\n", phase, step_no,
                            op_names[o], slot, dk_key_name(key), reason ? reason : "(null)", reasons[want.reason]);
                fail();
            }
        }
        n_slots++;
        reason_hits[want.reason]++;
        fallthrough_hits += want.ft;
        if (slot == 0 || !want.ft) continue; /* Undefined has no functionality bit */
        if (dk_key_is_per_backend_functionality(dk_key_functionality(key))) {
            b = (int)dk_key_backend(key) - 1;
            masks[b] = dk_ks_remove(dk_ks_raw(masks[b]), key).repr;
        } else {
            for (b = 0; b < DK_NUM_BACKENDS; b++) masks[b] = dk_ks_remove(dk_ks_raw(masks[b]), key).repr;
        }
    }
    for (b = 0; b < DK_NUM_BACKENDS; b++) {
        if (dk_op_table_nonfallthrough(dk_op_table_of(op), b) != masks[b]) {
            print_error("%s step %ld: %s nonfallthrough[%d] (%s) = %#llx, expected %#llx (diff %#llx)\n", phase,
                        step_no, op_names[o], b, dk_backend_name((dk_backend)(b + 1)),
                        (unsigned long long)dk_op_table_nonfallthrough(dk_op_table_of(op), b), (unsigned long long)masks[b],
                        (unsigned long long)(dk_op_table_nonfallthrough(dk_op_table_of(op), b) ^ masks[b]));
            fail();
        }
    }
}

static void check_all(int thorough) {
    int o;
    for (o = 0; o < nops_used; o++) check_op(o, thorough);
}

/* ---- registration through the model ------------------------------------------ */

static int new_id(int type, int op, dk_key key, int ft) {
    int id = nregs++;
    assert_true(id < MAX_REGS);
    regs[id].h = NULL; regs[id].type = type; regs[id].op = op; regs[id].key = key; regs[id].ft = ft;
    regs[id].live = 0;
    return id;
}

static dk_kernel_desc desc_for(int id, int boxed) {
    dk_kernel_desc d;
    if (regs[id].ft) {
        d = dk_fallthrough();
        d.user_data = &tags[id];
    } else if (boxed) {
        d = dk_boxed(boxed_fb, &tags[id]);
    } else {
        d = dk_unboxed(DK_FN(kern), &tags[id]);
    }
    return d;
}

static void make_live(int id, dk_registration *h) {
    assert_non_null(h);
    regs[id].h = h; regs[id].live = 1;
    assert_true(nlive < MAX_LIVE);
    live_ids[nlive++] = id;
}

static void do_impl(int o, dk_key key, int ft) {
    dk_registration *h = NULL;
    dk_key eff = key == DK_Undefined ? (dk_key)DK__ALIAS_MATH : key;
    int id = new_id(R_IMPL, o, eff, ft);
    assert_int_equal(dk_impl(reg, op_names[o], key, desc_for(id, 0), &h), DK_OK);
    make_live(id, h);
    assert_true(ops[o].n < MAX_LIVE);
    ops[o].impls[ops[o].n++] = id;
}

/* The slots a fallback at `key` covers: its own, or every runtime key of the alias. */
static int fallback_slots(dk_key key, int *slots) {
    int n = 0;
    dk_key k;
    dk_keyset set;
    if (!dk_key_is_alias(key)) { slots[0] = dk_key_slot(key); return 1; }
    set = dk_alias_runtime_set(key);
    DK_KS_FOREACH(k, set) slots[n++] = dk_key_slot(k);
    return n;
}

/* Returns 1 if registered, 0 if the model expected (and got) a duplicate. */
static int do_fallback(dk_key key, int ft) {
    int slots[DK_NUM_SLOTS], n, i, taken = 0, id;
    dk_registration *h = NULL;
    dk_status st;
    if (key == DK_Undefined) {
        dk_kernel_desc d = ft ? dk_fallthrough() : dk_boxed(boxed_fb, NULL);
        assert_int_equal(dk_fallback(reg, key, d, &h), DK_ERR_BAD_KEY);
        assert_null(h);
        return 0;
    }
    n = fallback_slots(key, slots);
    assert_true(n > 0);
    for (i = 0; i < n; i++) taken |= fb[slots[i]] >= 0;
    id = new_id(R_FALLBACK, -1, key, ft);
    st = dk_fallback(reg, key, desc_for(id, 1), &h);
    if (taken) {
        if (st != DK_ERR_DUPLICATE_FALLBACK) {
            print_error("%s step %ld: fallback at %s: status %s, expected duplicate\n", phase, step_no,
                        dk_key_name(key), dk_status_message(st));
            fail();
        }
        assert_null(h);
        dup_fallbacks++;
        return 0;
    }
    assert_int_equal(st, DK_OK);
    make_live(id, h);
    for (i = 0; i < n; i++) fb[slots[i]] = id;
    return 1;
}

static void do_def(int o) {
    dk_registration *h = NULL;
    dk_status st = dk_def(reg, op_schemas[o], &h);
    if (ops[o].def_id >= 0) {
        assert_int_equal(st, DK_ERR_DUPLICATE_DEF);
        assert_null(h);
        return;
    }
    assert_int_equal(st, DK_OK);
    ops[o].def_id = new_id(R_DEF, o, DK_Undefined, 0);
    make_live(ops[o].def_id, h);
}

/* Deregisters live_ids[li]; returns the operator touched, or -1 for a fallback. */
static int do_deregister(int li) {
    int id = live_ids[li], i, o = regs[id].op;
    assert_int_equal(dk_deregister(regs[id].h), DK_OK);
    regs[id].live = 0;
    live_ids[li] = live_ids[--nlive];
    dead_ids[ndead++] = id;
    switch (regs[id].type) {
    case R_DEF: ops[o].def_id = -1; return o;
    case R_IMPL:
        for (i = 0; ops[o].impls[i] != id; i++) {}
        memmove(&ops[o].impls[i], &ops[o].impls[i + 1], (size_t)(ops[o].n - i - 1) * sizeof(int));
        ops[o].n--;
        return o;
    default:
        for (i = 0; i < DK_NUM_SLOTS; i++)
            if (fb[i] == id) fb[i] = -1;
        return -1;
    }
}

typedef struct snapshot {
    dk_operator *op[NOPS];
    const dk_kernel *table[NOPS][DK_NUM_SLOTS];
    uint64_t masks[NOPS][DK_NUM_BACKENDS];
} snapshot;
static snapshot snap_before, snap_after;

static void take_snapshot(snapshot *s) {
    int o;
    memset(s, 0, sizeof *s);
    for (o = 0; o < nops_used; o++) {
        s->op[o] = dk_op_lookup(reg, op_names[o]);
        if (!s->op[o]) continue;
        const dk_op_table *t = dk_op_table_of(s->op[o]);
        int slot, b;
        for (slot = 0; slot < DK_NUM_SLOTS; slot++) s->table[o][slot] = dk_op_table_entry(t, slot)->kernel;
        for (b = 0; b < DK_NUM_BACKENDS; b++) s->masks[o][b] = dk_op_table_nonfallthrough(t, b);
    }
}

/* Deregistering a dead handle: DK_ERR_BAD_HANDLE, nothing changes. */
static void do_deregister_dead(void) {
    int id = dead_ids[rnd(ndead)];
    take_snapshot(&snap_before);
    assert_int_equal(dk_deregister(regs[id].h), DK_ERR_BAD_HANDLE);
    bad_handles++;
    take_snapshot(&snap_after);
    assert_memory_equal(&snap_before, &snap_after, sizeof snap_before);
}

/* ---- key pools ------------------------------------------------------------------ */

/* Every kind of key: dense / other / per-backend runtime keys of every
   functionality, autograd keys (own, AutogradOther-mapped, nested), plain
   functionality keys, and every alias key; DK_Undefined is the catch-all. */
static const dk_key key_pool[] = {
    DK_CPU, DK_CUDA, DK_HIP, DK_XLA, DK_Lazy, DK_Meta, DK_MTIA, DK_VE, DK_PrivateUse1,
    DK_FPGA, DK_MAIA, DK_MkldnnCPU,
    DK_QuantizedCPU, DK_QuantizedCUDA, DK_SparseCPU, DK_SparseXLA, DK_SparseCsrCUDA, DK_SparseCsrCPU,
    DK_NestedTensorCPU, DK_NestedTensorHIP,
    DK_AutogradCPU, DK_AutogradCUDA, DK_AutogradHIP, DK_AutogradXLA, DK_AutogradMeta, DK_AutogradMTIA,
    DK_AutogradOther, DK_AutogradNestedTensor,
    DK_Tracer, DK_FuncTorchBatched, DK_Functionalize, DK_BackendSelect, DK_Python, DK_ADInplaceOrView,
    DK_AutocastCPU, DK_PythonDispatcher,
    DK_Autograd, DK_CompositeImplicitAutograd, DK_FuncTorchBatchedDecomposition,
    DK_CompositeImplicitAutogradNestedTensor, DK_CompositeExplicitAutograd,
    DK_CompositeExplicitAutogradNonFunctional, DK_Undefined
};
#define KEY_POOL_N ((int)(sizeof key_pool / sizeof key_pool[0]))

static dk_key any_runtime_key(void) { return dk_slot_key(1 + rnd(DK_NUM_SLOTS - 1)); }

static dk_key pick_impl_key(void) {
    if (rnd(6) == 0) return any_runtime_key();
    return key_pool[rnd(KEY_POOL_N)];
}

static dk_key pick_fallback_key(void) {
    static const dk_key aliases[] = { DK_Autograd, DK_CompositeImplicitAutograd, DK_FuncTorchBatchedDecomposition,
                                      DK_CompositeImplicitAutogradNestedTensor, DK_CompositeExplicitAutograd,
                                      DK_CompositeExplicitAutogradNonFunctional };
    int r = rnd(40);
    if (r == 0) return DK_Undefined;
    if (r < 6) return aliases[rnd(6)];
    if (r < 16) return any_runtime_key();
    return key_pool[rnd(KEY_POOL_N)]; /* aliases and Undefined included */
}

/* ---- test 1: random sequences ---------------------------------------------------- */

#define RUNS 5
#define OPS_PER_RUN 25000
#define FULL_CHECK_EVERY 64

static void deregister_everything_and_compare_with_fresh(void) {
    int o, slot;
    dk_registry *fresh;
    dk_operator *fop;
    dk_registration *hs[NOPS], *fh = NULL;
    phase = "teardown";
    while (nlive > 0) {
        int touched = do_deregister(rnd(nlive));
        step_no++;
        n_operations++;
        if (touched >= 0) check_op(touched, 0);
        else check_all(0);
    }
    for (o = 0; o < NOPS; o++) assert_true(ops[o].n == 0 && ops[o].def_id < 0);
    for (slot = 0; slot < DK_NUM_SLOTS; slot++) assert_int_equal(fb[slot], -1);
    check_all(1); /* every operator invisible again */

    /* A fresh registry's operator after a def is the "never had anything" table. */
    fresh = new_registry();
    assert_int_equal(dk_def(fresh, op_schemas[0], &fh), DK_OK);
    fop = dk_op_lookup(fresh, op_names[0]);
    assert_non_null(fop);
    for (o = 0; o < NOPS; o++) {
        dk_operator *op;
        int b;
        assert_int_equal(dk_def(reg, op_schemas[o], &hs[o]), DK_OK);
        op = dk_op_lookup(reg, op_names[o]);
        assert_non_null(op);
        for (slot = 0; slot < DK_NUM_SLOTS; slot++) {
            const dk_kernel *a = dk_op_slot_kernel(op, slot), *f = dk_op_slot_kernel(fop, slot);
            /* a missing record's user_data is its registry's own (the slot's
               boxed fallback, dk__deferred's): the same slot's in both */
            ptrdiff_t at_a = (const char *)a->user_data - (const char *)dk_op_slot_kernel(op, 0)->user_data;
            ptrdiff_t at_f = (const char *)f->user_data - (const char *)dk_op_slot_kernel(fop, 0)->user_data;
            if (a->kind != DK_KERNEL_MISSING || a->kind != f->kind || !a->user_data || at_a != at_f ||
                a->is_fallback != f->is_fallback) {
                print_error("after teardown: %s slot %d (%s) differs from a fresh operator's\n", op_names[o], slot,
                            dk_key_name(dk_slot_key(slot)));
                fail();
            }
            n_slots++;
        }
        for (b = 0; b < DK_NUM_BACKENDS; b++) {
            assert_true(dk_op_table_nonfallthrough(dk_op_table_of(op), b) == dk_op_table_nonfallthrough(dk_op_table_of(fop), b));
            assert_true(dk_op_table_nonfallthrough(dk_op_table_of(op), b) == DK_KS_FULL.repr);
        }
    }
    for (o = 0; o < NOPS; o++) assert_int_equal(dk_deregister(hs[o]), DK_OK);
    assert_int_equal(dk_deregister(fh), DK_OK);
    dk_registry_destroy(fresh);
}

static void test_random_sequences(void **state) {
    int run;
    (void)state;
    n_operations = 0; n_slots = 0; nops_used = NOPS;
    memset(reason_hits, 0, sizeof reason_hits);
    assert_int_equal(dk_deregister(NULL), DK_ERR_BAD_HANDLE);
    for (run = 0; run < RUNS; run++) {
        long i;
        char phase_buf[32];
        rng_state = 0x5EED0000ull + (uint64_t)run * 0x1234567ull;
        snprintf(phase_buf, sizeof phase_buf, "run %d", run);
        phase = phase_buf;
        reg = new_registry();
        model_reset();
        for (i = 0; i < OPS_PER_RUN; i++) {
            int r = rnd(100), touched, o = rnd(NOPS);
            int dereg_pct = nlive > 45 ? 60 : nlive > 25 ? 35 : 15;
            step_no = i;
            if (r < dereg_pct && nlive > 0) {
                touched = do_deregister(rnd(nlive));
            } else if (r < dereg_pct + 2 && ndead > 0) {
                do_deregister_dead();
                touched = -1;
            } else {
                r = rnd(100);
                if (r < 55) { do_impl(o, pick_impl_key(), 0); touched = o; }
                else if (r < 70) { do_impl(o, pick_impl_key(), 1); touched = o; }
                else if (r < 82) { do_fallback(pick_fallback_key(), 0); touched = -1; }
                else if (r < 92) { do_fallback(pick_fallback_key(), 1); touched = -1; }
                else { do_def(o); touched = o; }
            }
            n_operations++;
            if (i % FULL_CHECK_EVERY == 0) check_all(1);
            else if (touched >= 0) check_op(touched, 0);
            else check_all(0);
        }
        phase = phase_buf;
        check_all(1);
        deregister_everything_and_compare_with_fresh();
        dk_registry_destroy(reg);
        reg = NULL;
    }
    printf("resolution_property random: %d runs, %ld operations, %ld slots compared (%ld duplicate fallbacks, "
           "%ld dead-handle deregistrations, %ld fallthrough slots; by rule:",
           RUNS, n_operations, n_slots, dup_fallbacks, bad_handles, fallthrough_hits);
    for (run = 0; run < NREASONS; run++) printf(" %s %ld%s", reasons[run], reason_hits[run], run + 1 < NREASONS ? "," : ")\n");
}

/* ---- test 2: permutations of a fixed set ------------------------------------------ */

typedef struct fixed_reg { dk_key key; int fallback; int ft; } fixed_reg;
#define NFIXED 7

static const fixed_reg set_a[NFIXED] = {
    { DK_CPU, 0, 0 },
    { DK_AutogradCPU, 0, 0 },
    { DK_Autograd, 0, 0 },
    { DK_CompositeImplicitAutograd, 0, 0 },
    { DK_CompositeExplicitAutograd, 0, 0 },
    { DK_SparseCPU, 0, 0 },
    { DK_Tracer, 1, 1 },
};
static const fixed_reg set_b[NFIXED] = {
    { DK_CompositeImplicitAutogradNestedTensor, 0, 0 },
    { DK_NestedTensorCPU, 0, 1 },
    { DK_FuncTorchBatchedDecomposition, 0, 0 },
    { DK_QuantizedCPU, 0, 0 },
    { DK_CompositeExplicitAutogradNonFunctional, 0, 1 },
    { DK_Undefined, 0, 0 }, /* catch-all = CompositeImplicitAutograd */
    { DK_AutogradOther, 1, 0 },
};

static int next_permutation(int *a, int n) {
    int i = n - 2, j, t;
    while (i >= 0 && a[i] >= a[i + 1]) i--;
    if (i < 0) return 0;
    j = n - 1;
    while (a[j] <= a[i]) j--;
    t = a[i]; a[i] = a[j]; a[j] = t;
    for (i++, j = n - 1; i < j; i++, j--) { t = a[i]; a[i] = a[j]; a[j] = t; }
    return 1;
}

static answer first_answers[DK_NUM_SLOTS];
static uint64_t first_masks[DK_NUM_BACKENDS];

static void run_permutations(const fixed_reg *set, const char *name, long *perms) {
    int perm[NFIXED], i, first = 1;
    dk_registration *def = NULL;
    for (i = 0; i < NFIXED; i++) perm[i] = i;
    nops_used = 1;
    rng_state = 0xFEEDull;
    phase = name;
    do {
        int slot, b;
        dk_operator *op;
        reg = new_registry();
        model_reset();
        step_no = *perms;
        /* ids 0..NFIXED-1 are the set's indices; they are reserved up front */
        for (i = 0; i < NFIXED; i++) {
            dk_key eff = (!set[i].fallback && set[i].key == DK_Undefined) ? (dk_key)DK__ALIAS_MATH : set[i].key;
            new_id(set[i].fallback ? R_FALLBACK : R_IMPL, set[i].fallback ? -1 : 0, eff, set[i].ft);
        }
        assert_int_equal(dk_def(reg, op_schemas[0], &def), DK_OK);
        ops[0].def_id = new_id(R_DEF, 0, DK_Undefined, 0);
        make_live(ops[0].def_id, def);
        for (i = 0; i < NFIXED; i++) {
            int id = perm[i];
            dk_registration *h = NULL;
            if (set[id].fallback) {
                int slots[DK_NUM_SLOTS], n = fallback_slots(set[id].key, slots), j;
                assert_int_equal(dk_fallback(reg, set[id].key, desc_for(id, 1), &h), DK_OK);
                for (j = 0; j < n; j++) fb[slots[j]] = id;
            } else {
                assert_int_equal(dk_impl(reg, op_names[0], set[id].key, desc_for(id, 0), &h), DK_OK);
                ops[0].impls[ops[0].n++] = id;
            }
            make_live(id, h);
            n_operations++;
        }
        check_op(0, 1);
        op = dk_op_lookup(reg, op_names[0]);
        for (slot = 0; slot < DK_NUM_SLOTS; slot++) {
            answer a = decode(dk_op_slot_kernel(op, slot));
            if (first) {
                first_answers[slot] = a;
            } else if (a.what != first_answers[slot].what || a.id != first_answers[slot].id ||
                       a.ft != first_answers[slot].ft) {
                char e[160], g[160];
                describe(e, sizeof e, first_answers[slot]);
                describe(g, sizeof g, a);
                print_error("%s: permutation %ld: slot %d (%s) is %s, first permutation had %s\n", name, *perms,
                            slot, dk_key_name(dk_slot_key(slot)), g, e);
                fail();
            }
        }
        for (b = 0; b < DK_NUM_BACKENDS; b++) {
            if (first) first_masks[b] = dk_op_table_nonfallthrough(dk_op_table_of(op), b);
            else assert_true(first_masks[b] == dk_op_table_nonfallthrough(dk_op_table_of(op), b));
        }
        first = 0;
        /* deregister the set (and the def, last or not) in a random order */
        while (nlive > 0) {
            do_deregister(rnd(nlive));
            n_operations++;
            check_op(0, 0);
        }
        dk_registry_destroy(reg);
        reg = NULL;
        (*perms)++;
    } while (next_permutation(perm, NFIXED));
}

static void test_permutations(void **state) {
    long perms_a = 0, perms_b = 0;
    (void)state;
    n_operations = 0; n_slots = 0;
    run_permutations(set_a, "permutations of set A", &perms_a);
    run_permutations(set_b, "permutations of set B", &perms_b);
    assert_int_equal(perms_a, 5040);
    assert_int_equal(perms_b, 5040);
    nops_used = NOPS;
    printf("resolution_property permutations: %ld + %ld orders, %ld operations, %ld slots compared\n", perms_a,
           perms_b, n_operations, n_slots);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_sequences),
        cmocka_unit_test(test_permutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
