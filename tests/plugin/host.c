/* Plugins that load and unload while other threads call them.

   The host defines plug::add with a CPU kernel; plugin.so adds a
   PrivateUse1 kernel through a DK_LIBRARY_IMPL block. The host loads and
   unloads the plugin LOADS times; the main thread checks after each load
   that its block ran and registered (dk_library_blocks), and after each
   load and unload that calls run the plugin's kernel, then fail cleanly with
   DK_ERR_NO_KERNEL ("Could not run ..."), and the registry's memory stays
   bounded. A second thread calls plug::add on a PrivateUse1 tensor without
   pause meanwhile: every call must run the plugin's kernel or fail
   cleanly, never crash. The unload (the block's destructor, inside
   dlclose) waits until no thread can be running the plugin's code: with
   DK_CALL_EPOCHS for the calls in flight; in the default mode for every
   thread that takes part to pass a quiescent point -- here the caller
   declares one (dk_registry_reclaim) every QS_EVERY calls, and both
   threads take part from their start (dk_thread_online).

   usage: host path/to/plugin.so */
#define _POSIX_C_SOURCE 200809L
#define DISPATCH_IMPLEMENTATION
#define PLUG_HOST
#include "plug.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LOADS
#define LOADS 1000
#endif
#ifndef QS_EVERY
#define QS_EVERY 100
#endif



static const dk_operator *add_op;
static int stop;
static long ran_plugin, failed_cleanly, wrong;

/* Failed calls are counted by the caller through dk_last_call_status. */
static void quiet(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    dk_call_error_report(op, ks, s, m, ud);
}

static plug_tensor pu1(int v) {
    plug_tensor t;
    t.ks = dk_ks_from_key(DK_PrivateUse1);
    t.v = v;
    return t;
}

/* One call: 1 = the plugin's kernel ran, 0 = the clean error, -1 = anything else. */
static int call_once(void) {
    int r = plug_add_call(add_op, pu1(5));
    dk_status s = dk_last_call_status();
    if (s == DK_OK && r == 5 + PLUG_PLUGIN_OFFSET) return 1;
    if (s == DK_ERR_NO_KERNEL && r == 0 && strstr(dk_last_error(), "Could not run 'plug::add'")) return 0;
    return -1;
}

static void *caller(void *arg) {
    long n = 0;
    (void)arg;
    CHECK(dk_thread_online() == DK_OK);
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        switch (call_once()) {
        case 1: ran_plugin++; break;
        case 0: failed_cleanly++; break;
        default: wrong++; break;
        }
        if (++n % QS_EVERY == 0) CHECK(dk_registry_reclaim(dk_registry_default()) == DK_OK);
    }
    CHECK(dk_thread_offline() == DK_OK);
    return NULL;
}

int main(int argc, char **argv) {
    dk_registry *r = dk_registry_default();
    dk_registration *def, *cpu;
    dk_registry_stats st;
    size_t live_after_first = 0;
    int i;
    pthread_t t;
    CHECK(argc == 2);
    CHECK(r != NULL);
    CHECK(dk_registry_set_call_error(r, quiet, NULL) == DK_OK);
    CHECK(dk_def(r, "plug::add(Tensor a) -> Tensor", &def) == DK_OK);
    CHECK(dk_impl(r, "plug::add", DK_CPU, dk_unboxed(DK_FN(add_cpu), NULL), &cpu) == DK_OK);
    add_op = dk_op_lookup(r, "plug::add");
    CHECK(call_once() == 0); /* before any load: the clean error */
    CHECK(dk_thread_online() == DK_OK);
    CHECK(pthread_create(&t, NULL, caller, NULL) == 0);
    for (i = 0; i < LOADS; i++) {
        unsigned long run0, failed0, run, failed;
        void *h;
        CHECK(dk_library_blocks(r, &run0, &failed0) == DK_OK);
        h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
        /* the plugin's one block ran and registered (dlopen alone cannot say) */
        CHECK(dk_library_blocks(r, &run, &failed) == DK_OK);
        CHECK(run == run0 + 1 && failed == failed0);
        CHECK(call_once() == 1);
        CHECK(dlclose(h) == 0);
        CHECK(call_once() == 0);
        CHECK(dk_registry_reclaim(r) == DK_OK); /* the main thread's quiescent point */
        if (i == 0) {
            dk_registry_read_stats(r, &st);
            live_after_first = st.live_bytes;
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    dk_registry_read_stats(r, &st);
    printf("%s: %d loads and unloads; the caller thread ran the plugin's kernel %ld times and got the clean error %ld "
           "times, %ld other outcomes; registry: %lu live bytes, %lu waiting for a reclaim\n",
#ifdef DK_CALL_EPOCHS
           "call epochs",
#else
           "quiescent reclaim",
#endif
           LOADS, ran_plugin, failed_cleanly, wrong, (unsigned long)st.live_bytes, (unsigned long)st.retired_bytes);
    CHECK(wrong == 0);
    CHECK(st.retired_bytes == 0);                      /* every unload freed what it removed */
    CHECK(st.live_bytes <= 2 * live_after_first);
    CHECK(dk_registry_reclaim(r) == DK_OK);            /* no call runs now: a quiescent point */
    dk_registry_read_stats(r, &st);
    CHECK(st.retired_bytes == 0);
    return 0;
}
