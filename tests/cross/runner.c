/* The cross-target test runner (make test-cross): one self-contained program,
   built for every target of tests/cross/cross.mk and run there (natively,
   under qemu-user or under wine). It checks real behaviour with its own
   CHECK (counted; any failure makes the exit status non-zero) and prints
   the deterministic part of what it computed on stdout, which cross.mk
   compares byte for byte with the host's: name hashes, keyset prints and
   slots, the CUDA "Could not run" message, the computed table and state
   dumps, the schema round trips, the outcome totals of a 2-thread stress,
   thread-exit cleanup, calls from destructors after dispatch.h's thread-exit
   destructor, and a plugin loaded and unloaded again and again.
   What depends on timing (how the stress calls split between the two
   kernels) goes to stderr.

   usage: runner SCHEMAS-FILE [PLUGIN]
     SCHEMAS-FILE  tests/conformance/schemas-1.13.1.txt
     PLUGIN        a .so / .dll built from tests/plugin/plugin.c; without it
                   the plugin section is skipped (its lines are not printed)

   Build switches: DK_CALL_EPOCHS (the call-epochs mode), DK_SINGLE_THREADED
   (no second thread: the stress interleaves writer and caller in one
   thread), RUNNER_NO_UNLOAD (the C library never unmaps an object at
   dlclose, as musl: the plugin's kernel stays registered). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"
#include "plug.h" /* tests/plugin: plug::add and its tensor */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
#elif !defined(DK_SINGLE_THREADED)
#include <pthread.h>
#include <dlfcn.h>
#else
#include <dlfcn.h>
#endif

static long checks, failures;
#define CHECK(c)                                                                            \
    do {                                                                                    \
        checks++;                                                                           \
        if (!(c)) { failures++; fprintf(stderr, "runner.c:%d: check failed: %s\n", __LINE__, #c); } \
    } while (0)

static void print_hex64(uint64_t v) { printf("%08lx%08lx", (unsigned long)(v >> 32), (unsigned long)(v & 0xffffffffu)); }

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t next_rand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

/* ---- name hashes: the registry's index (DK_HASH64 = XXH3) must hash alike on
   every byte order and word size ----------------------------------------------- */
static void test_hashes(void) {
    static const char *const names[] = {
        "", "a", "aten::add", "aten::add.Tensor", "my::neg", "plug::add",
        "aten::_native_multi_head_attention.out", "ns::a_very_long_operator_name_that_crosses_several_blocks.of_xxh3"
    };
    char buf[300];
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        printf("hash %-70s ", names[i]);
        print_hex64(DK_HASH64(names[i], strlen(names[i])));
        printf("\n");
    }
    for (i = 0; i < sizeof buf; i++) buf[i] = (char)('!' + (next_rand() % 90));
    for (i = 0; i <= sizeof buf; i += 37) {
        printf("hash random[%3lu] ", (unsigned long)i);
        print_hex64(DK_HASH64(buf, i));
        printf("\n");
    }
    CHECK(DK_HASH64("aten::add", 9) != DK_HASH64("aten::add.Tensor", 16));
}

/* ---- keysets: every runtime slot's key, and random keysets ------------------- */
static void test_keysets(void) {
    char text[1024];
    int slot, i, bad_round_trip = 0;
    for (slot = 0; slot < DK_NUM_SLOTS; slot++) {
        dk_key k = dk_slot_key(slot);
        dk_key back;
        dk_keyset ks = dk_ks_from_key(k);
        dk_ks_to_string(ks, text, sizeof text);
        printf("slot %3d %-32s %s\n", slot, dk_key_name(k), text);
        if (slot > 0 && dk_ks_slot(ks) != slot) bad_round_trip++;
        if (dk_key_parse(dk_key_name(k), &back) != DK_OK || back != k) bad_round_trip++;
    }
    CHECK(bad_round_trip == 0);
    for (i = 0; i < 300; i++) {
        uint64_t bits = next_rand() & next_rand(); /* sparse */
        dk_keyset ks = dk_ks_raw(i < 250 ? bits & DK__R_FULL : bits);
        int n = dk_ks_to_string(ks, text, sizeof text);
        CHECK(n > 0 && (size_t)n < sizeof text);
        printf("ks ");
        print_hex64(ks.repr);
        printf(" %s -> %s slot %d\n", text, dk_key_name(dk_ks_highest_key(ks)), dk_ks_slot(ks));
    }
}

/* ---- registry and calls: def, CPU kernel, call, the CUDA error, dumps --------- */
typedef struct tensor { dk_keyset ks; float v; } tensor;
DK_DECLARE_OP(neg, float, x.ks, (tensor, x))
static float neg_cpu(const dk_kernel *k, dk_keyset ks, tensor x) { (void)k; (void)ks; return -x.v; }
static float neg_autograd(const dk_kernel *k, dk_keyset ks, tensor x) {
    (void)k;
    return 10.0f + neg_redispatch(dk_op_lookup(dk_registry_default(), "my::neg"), dk_ks_and(ks, DK_KS_AFTER_AUTOGRAD), x);
}
static void quiet_call_error(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    dk_call_error_report(op, ks, s, m, ud);
}
static void quiet_log(dk_log_level l, dk_log_item i, const char *m, void *ud) { (void)l; (void)i; (void)m; (void)ud; }

static void test_registry(void) {
    dk_registry *r = dk_registry_default();
    dk_registry_desc desc;
    dk_registration *def, *cpu, *ag;
    const dk_operator *op;
    static char text[1 << 16];
    tensor x;
    float y;
    dk_status s;
    memset(&desc, 0, sizeof desc);
    desc.c10_messages = 1;
    desc.logger.func = quiet_log;
    CHECK(dk_registry_set_hooks(r, &desc) == DK_OK);
    CHECK(dk_registry_set_call_error(r, quiet_call_error, NULL) == DK_OK);
    CHECK(dk_def(r, "my::neg(Tensor x) -> Tensor", &def) == DK_OK);
    CHECK(dk_impl(r, "my::neg", DK_CPU, dk_unboxed(DK_FN(neg_cpu), NULL), &cpu) == DK_OK);
    op = dk_op_lookup(r, "my::neg");
    CHECK(op != NULL);
    x.ks = dk_ks_from_key(DK_CPU);
    x.v = 2.0f;
    y = neg_call(op, x);
    CHECK(dk_last_call_status() == DK_OK && y == -2.0f);
    printf("call CPU: %g\n", (double)y);

    x.ks = dk_ks_from_key(DK_CUDA);
    y = neg_call(op, x);
    s = dk_last_call_status();
    CHECK(s == DK_ERR_NO_KERNEL && y == 0.0f);
    CHECK(strstr(dk_last_error(), "Could not run 'my::neg' with arguments from the 'CUDA' backend") != NULL);
    printf("call CUDA: %s\n", dk_status_message(s));
    printf("%s\n", dk_last_error());

    CHECK(dk_impl(r, "my::neg", DK_Autograd, dk_unboxed(DK_FN(neg_autograd), NULL), &ag) == DK_OK);
    x.ks = dk_ks_or(dk_ks_from_key(DK_CPU), dk_ks_from_key(DK_AutogradCPU));
    y = neg_call(op, x);
    CHECK(dk_last_call_status() == DK_OK && y == 8.0f);
    printf("call CPU+AutogradCPU: %g\n", (double)y);

    CHECK(dk_op_computed_table_to_string(op, text, sizeof text) < (int)sizeof text);
    printf("computed table:\n%s", text);
    CHECK(strstr(text, "CPU: fn ") != NULL || strstr(text, "CPU:") != NULL);
    CHECK(dk_op_state_to_string(op, text, sizeof text) < (int)sizeof text);
    printf("state:\n%s", text);
    CHECK(dk_deregister(ag) == DK_OK);
    CHECK(dk_deregister(cpu) == DK_OK);
    x.ks = dk_ks_from_key(DK_CPU);
    (void)neg_call(op, x);
    CHECK(dk_last_call_status() == DK_ERR_NO_KERNEL);
    CHECK(dk_deregister(def) == DK_OK);
    CHECK(dk_registry_reclaim(r) == DK_OK);
    CHECK(dk_op_lookup(r, "my::neg") == NULL);
}

/* ---- schemas: parse and print every operator schema of libtorch 1.13.1 ------- */
static void test_schemas(const char *path) {
    FILE *f = fopen(path, "r");
    static char line[1 << 16];
    long total = 0, same_text = 0, same_bits = 0;
    uint64_t digest = 0;
    CHECK(f != NULL);
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        dk_schema *s = NULL;
        char printed[4096];
        unsigned long long bits;
        if (line[0] == '#' || !tab) continue;
        *tab = '\0';
        bits = strtoull(tab + 1, NULL, 16);
        total++;
        if (dk_schema_parse(line, &s) != DK_OK) { fprintf(stderr, "does not parse: %s\n", line); continue; }
        if (dk_schema_to_string(s, printed, sizeof printed) < (int)sizeof printed && !strcmp(printed, line)) same_text++;
        if (s->dispatch_args == bits) same_bits++;
        digest = DK_HASH64(printed, strlen(printed)) ^ (digest * 31u) ^ s->dispatch_args;
        if (total <= 200) printf("schema %s\n", printed);
        dk_schema_free(s);
    }
    fclose(f);
    printf("schemas: %ld parsed, %ld printed back byte-identical, %ld dispatch bitsets equal, digest ", total, same_text,
           same_bits);
    print_hex64(digest);
    printf("\n");
    CHECK(total > 2500);
    CHECK(same_text == total);
    CHECK(same_bits == total);
}

/* ---- threads: a writer re-registering kernels while a caller calls --------------
   Every call must run kernel 1, kernel 2 or fail with the clean error
   (deregistered for a moment), never anything else. */
enum { STRESS_CALLS = 20000, STRESS_STEPS = 2000 };
static const dk_operator *stress_op;
static int kernel_ids[3] = { 0, 1, 2 };
static long outcome[3], wrong;
static int writer_steps_done;
static int caller_started, writer_done; /* the caller calls from before the first step to after the last */
static long calls_made;

static int probe(const dk_kernel *k, dk_keyset ks, plug_tensor a) { (void)ks; (void)a; return *(const int *)k->user_data; }

static void stress_call(void) {
    plug_tensor a;
    int v;
    dk_status s;
    a.ks = dk_ks_from_key(DK_CPU);
    a.v = 0;
    v = plug_add_call(stress_op, a);
    s = dk_last_call_status();
    if (s == DK_OK && (v == 1 || v == 2)) outcome[v]++;
    else if (s == DK_ERR_NO_KERNEL && v == 0) outcome[0]++;
    else wrong++;
}

static void writer_step(dk_registry *r, int i, dk_registration **live) {
    if (*live) {
        CHECK(dk_deregister(*live) == DK_OK);
        *live = NULL;
    } else {
        CHECK(dk_impl(r, "stress::op", DK_CPU, dk_unboxed(DK_FN(probe), &kernel_ids[1 + (i / 2) % 2]), live) == DK_OK);
    }
}

#ifndef DK_SINGLE_THREADED
typedef struct { void (*fn)(void); } thread_arg;  /* a function pointer cannot travel as a void * */
static thread_arg thread_args[16];
static int thread_args_used;
#if defined(_WIN32)
typedef HANDLE thread_t;
static DWORD WINAPI thread_main(LPVOID arg) { ((thread_arg *)arg)->fn(); return 0; }
static int thread_start(thread_t *t, void (*fn)(void)) {
    thread_arg *a = &thread_args[thread_args_used++ % 16];
    a->fn = fn;
    *t = CreateThread(NULL, 0, thread_main, a, 0, NULL);
    return *t != NULL;
}
static void thread_join(thread_t t) { WaitForSingleObject(t, INFINITE); CloseHandle(t); }
#else
typedef pthread_t thread_t;
static void *thread_main(void *arg) { ((thread_arg *)arg)->fn(); return NULL; }
static int thread_start(thread_t *t, void (*fn)(void)) {
    thread_arg *a = &thread_args[thread_args_used++ % 16];
    a->fn = fn;
    return pthread_create(t, NULL, thread_main, a) == 0;
}
static void thread_join(thread_t t) { pthread_join(t, NULL); }
#endif
#endif

#ifndef DK_SINGLE_THREADED
static void caller_thread(void) {
    DK__STORE_REL(&caller_started, 1);
    while (calls_made < STRESS_CALLS || !DK__LOAD_ACQ(&writer_done)) {
        stress_call();
        calls_made++;
    }
}
#endif

static void test_stress(void) {
    dk_registry *r = dk_registry_default();
    dk_registration *def, *live = NULL;
    dk_registry_stats st;
    int i;
    CHECK(dk_def(r, "stress::op(Tensor a) -> Tensor", &def) == DK_OK);
    stress_op = dk_op_lookup(r, "stress::op");
    CHECK(stress_op != NULL);
#ifdef DK_SINGLE_THREADED
    for (i = 0; i < STRESS_CALLS; i++) {
        if (i % (STRESS_CALLS / STRESS_STEPS) == 0) writer_step(r, writer_steps_done++, &live);
        stress_call();
        calls_made++;
    }
#else
    {
        thread_t t;
        CHECK(thread_start(&t, caller_thread));
        while (!DK__LOAD_ACQ(&caller_started)) dk__yield();
        for (i = 0; i < STRESS_STEPS; i++) writer_step(r, writer_steps_done++, &live);
        DK__STORE_REL(&writer_done, 1);
        thread_join(t);
    }
#endif
    if (live) CHECK(dk_deregister(live) == DK_OK);
    CHECK(dk_deregister(def) == DK_OK);
    CHECK(dk_registry_reclaim(r) == DK_OK);
    dk_registry_read_stats(r, &st);
    fprintf(stderr, "stress: %ld calls; kernel 1 ran %ld times, kernel 2 %ld times, clean error %ld times\n",
            calls_made, outcome[1], outcome[2], outcome[0]);
    printf("stress: %d registrations and deregistrations racing calls (at least %d), %ld wrong outcomes, "
           "%lu bytes waiting for a reclaim\n", writer_steps_done, STRESS_CALLS, wrong, (unsigned long)st.retired_bytes);
    CHECK(wrong == 0);
    CHECK(calls_made >= STRESS_CALLS);
    CHECK(outcome[0] + outcome[1] + outcome[2] == calls_made);
    CHECK(writer_steps_done == STRESS_STEPS);
    CHECK(st.retired_bytes == 0);
}

/* ---- thread exit: what a thread allocated (its message buffer, its call-epoch
   record) is released when it exits (pthread key destructor, FLS callback).
   Observable under DK_CALL_EPOCHS: threads run one after another reuse one
   reader record instead of adding one each; in the default mode, threads
   that never declare a quiescent point get none. */
#ifndef DK_SINGLE_THREADED
static void short_thread(void) {
    plug_tensor a;
    a.ks = dk_ks_from_key(DK_CUDA);
    a.v = 0;
    (void)plug_add_call(stress_op, a);   /* the clean error: allocates the thread's message buffer */
    if (dk_last_call_status() != DK_ERR_NO_KERNEL) wrong++;
}
#endif

static void test_thread_exit(void) {
#ifndef DK_SINGLE_THREADED
    dk_registry *r = dk_registry_default();
    dk_registration *def;
    int i;
    long records = 0;
    const dk__reader *rec;
    CHECK(dk_def(r, "exit::op(Tensor a) -> Tensor", &def) == DK_OK);
    stress_op = dk_op_lookup(r, "exit::op");
    for (i = 0; i < 8; i++) {
        thread_t t;
        CHECK(thread_start(&t, short_thread));
        thread_join(t);
    }
    for (rec = dk__readers; rec; rec = rec->next) records++;
#ifdef DK_CALL_EPOCHS
    CHECK(records == 2); /* the main thread's and the one each short thread reused */
#else
    CHECK(records == 1); /* the main thread's (its reclaims made it take part); the short threads took none */
#endif
    CHECK(wrong == 0);
    CHECK(dk_deregister(def) == DK_OK);
    CHECK(dk_registry_reclaim(r) == DK_OK);
#endif
    printf("thread exit: 8 threads ran one after another, their per-thread state released\n");
}

/* ---- late calls: a destructor that runs after dispatch.h's thread-exit
   destructor (Windows: an FLS callback of an index allocated after
   dispatch.h's, which Windows runs once; POSIX: a pthread key made after
   dispatch.h's, set again in every destructor round up to the last one)
   calls an op. The call answers, and no record keeps the gone thread's call
   word (under call epochs it would be read after the thread's TLS is gone). */
#ifndef DK_SINGLE_THREADED
static const dk_operator *late_op;
static long late_answered, late_wrong;
static void late_call(void) {
    plug_tensor a;
    a.ks = dk_ks_from_key(DK_CPU);
    a.v = 0;
    if (plug_add_call(late_op, a) == 1) late_answered++;
    else late_wrong++;
}
#if defined(_WIN32)
static DWORD late_index = FLS_OUT_OF_INDEXES;
static void WINAPI late_callback(void *p) { (void)p; late_call(); }
static void late_thread(void) { late_call(); FlsSetValue(late_index, (void *)&kernel_ids[1]); }
#else
static pthread_key_t late_key;
static int late_rounds;
static void late_destructor(void *p) {
    late_call();
    if (++late_rounds < PTHREAD_DESTRUCTOR_ITERATIONS) pthread_setspecific(late_key, p);
}
static void late_thread(void) { late_call(); pthread_setspecific(late_key, (void *)&kernel_ids[1]); }
#endif
#endif

static void test_late_calls(void) {
#ifndef DK_SINGLE_THREADED
    dk_registry *r = dk_registry_default();
    dk_registration *def, *impl;
    thread_t t;
    long linked = 0;
    const dk__reader *rec;
    CHECK(dk_def(r, "late::op(Tensor a) -> Tensor", &def) == DK_OK);
    CHECK(dk_impl(r, "late::op", DK_CPU, dk_unboxed(DK_FN(probe), &kernel_ids[1]), &impl) == DK_OK);
    late_op = dk_op_lookup(r, "late::op");
    /* dispatch.h's index / key exists (the errors above made this thread's state): ours comes after it */
#if defined(_WIN32)
    late_index = FlsAlloc(late_callback);
    CHECK(late_index != FLS_OUT_OF_INDEXES);
#else
    CHECK(pthread_key_create(&late_key, late_destructor) == 0);
#endif
    CHECK(thread_start(&t, late_thread));
    thread_join(t);
#ifdef DK_CALL_EPOCHS
    for (rec = dk__readers; rec; rec = rec->next)
        if (rec->ctr && rec->ctr != &dk__rd.ctr) linked++;
    CHECK(dk__late_calls == 0);
#else
    (void)rec;
#endif
    fprintf(stderr, "late calls: %ld answered\n", late_answered);
    CHECK(late_answered >= 2);   /* the thread's own and at least one late one */
    CHECK(late_wrong == 0);
    CHECK(linked == 0);
    CHECK(dk_deregister(impl) == DK_OK);
    CHECK(dk_deregister(def) == DK_OK);
    CHECK(dk_registry_synchronize(r) == DK_OK);
#if defined(_WIN32)
    FlsFree(late_index);
#else
    pthread_key_delete(late_key);
#endif
#endif
    printf("late calls: a thread-exit destructor after dispatch.h's called an op: answered, no record kept the "
           "gone thread's word\n");
}

/* ---- a library block without constructors (dk_library_run / _close): what a
   compiler without them (tcc, MSVC) writes instead of DK_LIBRARY ------------ */
static int twice_cpu(const dk_kernel *k, dk_keyset ks, plug_tensor a) { (void)k; (void)ks; return 2 * a.v; }
static void explicit_block(dk_library *m) {
    CHECK(dk_library_def(m, "twice(Tensor a) -> Tensor") == DK_OK);
    CHECK(dk_library_impl(m, "twice", DK_CPU, dk_unboxed(DK_FN(twice_cpu), NULL)) == DK_OK);
}

static void test_library_explicit(void) {
    dk_registry *r = dk_registry_default();
    dk_library *lib = NULL;
    const dk_operator *op;
    plug_tensor a;
    int v;
    dk_status s;
    CHECK(dk_library_run(r, DK_LIBRARY_KIND_DEF, "explicit", DK_Undefined, explicit_block, &lib) == DK_OK);
    op = dk_op_lookup(r, "explicit::twice");
    CHECK(op != NULL);
    if (!op) return;
    a.ks = dk_ks_from_key(DK_CPU);
    a.v = 21;
    v = plug_add_call(op, a);
    s = dk_last_call_status();
    CHECK(s == DK_OK && v == 42);
    printf("library block run explicitly: explicit::twice(21) = %d (%s)\n", v, dk_status_message(s));
    CHECK(dk_library_close(lib) == DK_OK);
    CHECK(dk_registry_reclaim(r) == DK_OK);
    CHECK(dk_op_lookup(r, "explicit::twice") == NULL);
}

/* ---- plugin: a library block in a .so / .dll, loaded and unloaded -------------- */
enum { PLUGIN_LOADS = 50 };
static int add_cpu(const dk_kernel *k, dk_keyset ks, plug_tensor a) { (void)k; (void)ks; return a.v + 1; }

/* 1 = the plugin's kernel ran, 0 = the clean error, -1 = anything else. */
static int plugin_call(const dk_operator *op) {
    plug_tensor a;
    int v;
    dk_status s;
    a.ks = dk_ks_from_key(DK_PrivateUse1);
    a.v = 5;
    v = plug_add_call(op, a);
    s = dk_last_call_status();
    if (s == DK_OK && v == 5 + PLUG_PLUGIN_OFFSET) return 1;
    if (s == DK_ERR_NO_KERNEL && v == 0 && strstr(dk_last_error(), "Could not run 'plug::add'")) return 0;
    return -1;
}

static void test_plugin(const char *path) {
    dk_registry *r = dk_registry_default();
    dk_registration *def, *cpu;
    const dk_operator *op;
    dk_registry_stats st;
    size_t live_after_first = 0;
    int i, loaded = 0, ran = 0, clean_after_unload = 0;
#if defined(_WIN32)
    char win_path[1024], *c; /* LoadLibrary wants backslashes */
    strncpy(win_path, path, sizeof win_path - 1);
    win_path[sizeof win_path - 1] = '\0';
    for (c = win_path; *c; c++) if (*c == '/') *c = '\\';
#endif
    CHECK(dk_def(r, "plug::add(Tensor a) -> Tensor", &def) == DK_OK);
    CHECK(dk_impl(r, "plug::add", DK_CPU, dk_unboxed(DK_FN(add_cpu), NULL), &cpu) == DK_OK);
    op = dk_op_lookup(r, "plug::add");
    CHECK(plugin_call(op) == 0);
    for (i = 0; i < PLUGIN_LOADS; i++) {
#if defined(_WIN32)
        HMODULE h = LoadLibraryA(win_path);
        if (!h) { fprintf(stderr, "LoadLibrary(%s) failed: error %lu\n", path, (unsigned long)GetLastError()); break; }
#else
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); break; }
#endif
        loaded++;
        ran += plugin_call(op) == 1;
#if defined(_WIN32)
        CHECK(FreeLibrary(h));
#else
        CHECK(dlclose(h) == 0);
#endif
#ifdef RUNNER_NO_UNLOAD
        clean_after_unload += plugin_call(op) == 1; /* still mapped and registered */
#else
        clean_after_unload += plugin_call(op) == 0;
#endif
        CHECK(dk_registry_reclaim(r) == DK_OK);
        if (i == 0) {
            dk_registry_read_stats(r, &st);
            live_after_first = st.live_bytes;
        }
    }
    dk_registry_read_stats(r, &st);
    CHECK(loaded == PLUGIN_LOADS);
    CHECK(ran == PLUGIN_LOADS);
    CHECK(clean_after_unload == PLUGIN_LOADS);
    CHECK(st.retired_bytes == 0);
    CHECK(st.live_bytes <= 2 * live_after_first);
    printf("plugin: %d loads, the plugin's kernel ran after %d of them, %d unloads checked\n", loaded, ran,
           clean_after_unload);
}

int main(int argc, char **argv) {
#ifdef DK_CALL_EPOCHS
    printf("dispatch.h %s, call epochs\n", DK_VERSION_STRING);
#else
    printf("dispatch.h %s, quiescent reclaim\n", DK_VERSION_STRING);
#endif
    if (argc < 2) { fprintf(stderr, "usage: runner SCHEMAS-FILE [PLUGIN]\n"); return 2; }
    test_hashes();
    test_keysets();
    test_registry();
    test_schemas(argv[1]);
    test_stress();
    test_thread_exit();
    test_late_calls();
    test_library_explicit();
    if (argc > 2) test_plugin(argv[2]);
    fprintf(stderr, "%ld checks, %ld failed\n", checks, failures);
    fflush(stdout);
    return failures ? 1 : 0;
}
