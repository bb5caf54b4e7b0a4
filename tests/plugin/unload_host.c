/* Unloading a plugin while a kernel of another thread uses the dynamic
   loader (issue 21, item 4.5).

   A caller thread takes part in quiescent points and calls, without pause,
   plug::add (the plugin's PrivateUse1 kernel, or the clean error) and
   plug::dl, whose CPU kernel calls dlsym: it needs the dynamic loader's
   lock. dlclose runs the plugin's block destructors under that lock; if
   they had to wait there for the caller's next quiescent point (or, with
   call epochs, for its call to end), the caller, blocked on the lock inside
   its kernel, could never give it: a deadlock. The host therefore calls
   dk_library_unload(address in the plugin) before dlclose: the plugin's
   blocks close and the wait happens outside the loader's lock; dlclose
   then has nothing left to wait for. LOADS cycles; alarm() turns a
   deadlock into a failure.

   usage: unload_host path/to/plugin.so */
#define _GNU_SOURCE 1   /* RTLD_DEFAULT */
#define DISPATCH_IMPLEMENTATION
#define PLUG_HOST
#include "plug.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef LOADS
#define LOADS 200
#endif


/* a kernel that uses the dynamic loader */
static int dl_cpu(const dk_kernel *k, dk_keyset ks, plug_tensor a) {
    (void)k; (void)ks;
    return dlsym(RTLD_DEFAULT, "malloc") != NULL ? a.v : -1;
}

static const dk_operator *add_op, *dl_op;
static int stop;
static long ran_plugin, failed_cleanly, loader_calls, wrong;

static void quiet(const dk_operator *op, dk_keyset ks, dk_status s, const char *m, void *ud) {
    dk_call_error_report(op, ks, s, m, ud);
}
/* 1 = the plugin's kernel ran, 0 = the clean error, -1 = anything else */
static int call_once(void) {
    int r;
    (void)dk_last_call_status();
    r = plug_add_call(add_op, tensor_at(DK_PrivateUse1, 5));
    if (dk_last_call_status() == DK_OK) return r == 5 + PLUG_PLUGIN_OFFSET ? 1 : -1;
    return r == 0 ? 0 : -1;
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
        if (plug_add_call(dl_op, tensor_at(DK_CPU, 7)) == 7) loader_calls++;
        else wrong++;
        if (++n % 50 == 0) CHECK(dk_registry_reclaim(dk_registry_default()) == DK_OK);
    }
    CHECK(dk_thread_offline() == DK_OK);
    return NULL;
}

int main(int argc, char **argv) {
    dk_registry *r = dk_registry_default();
    dk_registration *def, *cpu, *dldef, *dlimpl;
    pthread_t t;
    int i;
    CHECK(argc == 2);
    CHECK(r != NULL);
    CHECK(dk_registry_set_call_error(r, quiet, NULL) == DK_OK);
    CHECK(dk_def(r, "plug::add(Tensor a) -> Tensor", &def) == DK_OK);
    CHECK(dk_impl(r, "plug::add", DK_CPU, dk_unboxed(DK_FN(add_cpu), NULL), &cpu) == DK_OK);
    CHECK(dk_def(r, "plug::dl(Tensor a) -> Tensor", &dldef) == DK_OK);
    CHECK(dk_impl(r, "plug::dl", DK_CPU, dk_unboxed(DK_FN(dl_cpu), NULL), &dlimpl) == DK_OK);
    add_op = dk_op_lookup(r, "plug::add");
    dl_op = dk_op_lookup(r, "plug::dl");
    CHECK(dk_library_unload(&stop) == DK_ERR_NOT_FOUND);   /* the host has no blocks of its own */
    CHECK(pthread_create(&t, NULL, caller, NULL) == 0);
    alarm(300);
    for (i = 0; i < LOADS; i++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        void *inside;
        if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
        CHECK((inside = dlsym(h, "plug_marker")) != NULL);
        CHECK(call_once() == 1);
        CHECK(dk_library_unload(inside) == DK_OK);            /* closed and waited for, outside the loader */
        CHECK(call_once() == 0);                              /* gone before dlclose */
        CHECK(dk_library_unload(inside) == DK_ERR_NOT_FOUND); /* nothing left: dlclose will not wait */
        CHECK(dlclose(h) == 0);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    alarm(0);
    printf("%s: %d unloads before dlclose; the caller ran the plugin's kernel %ld times, got the clean error %ld "
           "times, ran a kernel that uses the dynamic loader %ld times, %ld other outcomes\n",
#ifdef DK_CALL_EPOCHS
           "call epochs",
#else
           "quiescent points",
#endif
           LOADS, ran_plugin, failed_cleanly, loader_calls, wrong);
    CHECK(wrong == 0);
    CHECK(loader_calls > 0);
    return 0;
}
