/* Item 4.8 of the memory issue: loading and unloading the implementation
   (libdispatch.so, as Python's ctypes or a plugin host would) must not
   leak the states of the threads that used it and are still alive.
   usage: unload_leak path/to/libdispatch[-epochs].so

   CYCLES times: dlopen the library, make a registry; a second thread that
   stays alive the whole run and the main thread each fail a registration
   (their 4 KB dk_last_error state is allocated) and attach a reader record
   (dk_thread_online; dk__reader_attach, the call path's entry, for call
   epochs); the registry is destroyed and the library dlclose'd (checked:
   really unloaded). The process heap (mallinfo2's in-use bytes; under
   AddressSanitizer its allocator's count) may grow from cycle WARMUP to
   the end by at most BOUND bytes more than it does over as many cycles
   that only load and unload: a leak of one state per thread and cycle is
   2 x 4 KB x (CYCLES - WARMUP), about 45 times more. Under ASan with
   detect_leaks the second thread is joined before exit, so whatever it
   left is reported. The test is compiled with the library's configuration
   (DK_CONFIG_SIGNATURE). */
#define _GNU_SOURCE
#define DK_NO_LINK_CHECK   /* the header for its types only: the library is dlopen'ed */
#include "dispatch.h"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#ifndef CYCLES
#define CYCLES 200
#endif
#define WARMUP 20
#define BOUND (32 * 1024)

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifdef UNDER_ASAN
size_t __sanitizer_get_current_allocated_bytes(void);   /* <sanitizer/allocator_interface.h> */
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
#else
static size_t heap_in_use(void) { return mallinfo2().uordblks; }
#endif

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

typedef dk_status (*create_fn)(const dk_registry_desc *, dk_registry **, const char *);
typedef dk_status (*def_fn)(dk_registry *, const char *, const dk_op_adapters *, const char *, int,
                            dk_registration **, const char *);
typedef void (*destroy_fn)(dk_registry *);
typedef const char *(*last_error_fn)(void);
typedef dk_status (*status_fn)(void);
typedef void (*void_fn)(void);

static struct api {
    create_fn create;
    def_fn def;
    destroy_fn destroy;
    last_error_fn last_error;
    status_fn online, offline;
    void_fn attach;
} api;
static dk_registry *reg;
static int go, done, quit;
static long failures;

/* A failed registration (the thread's state), a reader record. */
static void use_library(void) {
    dk_registration *h;
    if (api.def(reg, "leak::bad(", NULL, __FILE__, __LINE__, &h, DK_CONFIG_SIGNATURE) == DK_OK) failures++;
    if (!api.last_error()[0]) failures++;
    if (api.online() != DK_OK) failures++;
    api.attach();
    if (api.offline() != DK_OK) failures++;
}

static void *second_thread(void *arg) {
    int seen = 0;
    (void)arg;
    for (;;) {
        int g;
        while ((g = LOAD(&go)) == seen && !LOAD(&quit)) sched_yield();
        if (LOAD(&quit)) return NULL;
        seen = g;
        use_library();
        STORE(&done, g);
    }
}

static int load(const char *path, void **so) {
    if (!(*so = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 0;
    }
    *(void **)&api.create = dlsym(*so, "dk__registry_create");
    *(void **)&api.def = dlsym(*so, "dk__def");
    *(void **)&api.destroy = dlsym(*so, "dk_registry_destroy");
    *(void **)&api.last_error = dlsym(*so, "dk_last_error");
    *(void **)&api.online = dlsym(*so, "dk_thread_online");
    *(void **)&api.offline = dlsym(*so, "dk_thread_offline");
    *(void **)&api.attach = dlsym(*so, "dk__reader_attach");
    return api.create && api.def && api.destroy && api.last_error && api.online && api.offline && api.attach;
}

/* CYCLES loads; returns the heap's growth from cycle WARMUP to the end.
   use = 0: load and unload only (the baseline: AddressSanitizer's runtime
   keeps 64 B per dlopen of an object that calls atexit). */
static long cycles(const char *path, int use, long *still_loaded) {
    size_t at_warmup = 0;
    int i;
    for (i = 1; i <= CYCLES; i++) {
        void *so;
        if (!load(path, &so)) return -1;
        if (use) {
            if (api.create(NULL, &reg, DK_CONFIG_SIGNATURE) != DK_OK) return -1;
            STORE(&go, LOAD(&go) + 1);
            use_library();
            while (LOAD(&done) != LOAD(&go)) sched_yield();
            api.destroy(reg);
        }
        if (dlclose(so) != 0) return -1;
        if ((so = dlopen(path, RTLD_NOW | RTLD_NOLOAD)) != NULL) { ++*still_loaded; dlclose(so); }
        if (i == WARMUP) at_warmup = heap_in_use();
    }
    return (long)heap_in_use() - (long)at_warmup;
}

int main(int argc, char **argv) {
    pthread_t t;
    long base, growth, still_loaded = 0;
    if (argc != 2) return 2;
    if (pthread_create(&t, NULL, second_thread, NULL) != 0) return 2;
    if ((base = cycles(argv[1], 0, &still_loaded)) < 0 || (growth = cycles(argv[1], 1, &still_loaded)) < 0) return 1;
    STORE(&quit, 1);
    pthread_join(t, NULL);
    printf("%d dlopen/dlclose cycles, two threads using the library each time (one alive throughout): heap growth "
           "from cycle %d to %d %ld B, %ld B without using it (bound: %d B more); still loaded after dlclose %ld; "
           "failures %ld\n", CYCLES, WARMUP, CYCLES, growth, base, BOUND, still_loaded, failures);
    return growth <= base + BOUND && still_loaded == 0 && failures == 0 ? 0 : 1;
}
