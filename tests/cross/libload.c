/* The implementation in a shared object (.so / .dll, built from
   tests/structure/impl.c) loaded and unloaded again and again while a
   thread that used it is still alive: the thread's state (message buffer)
   is registered with the thread-exit mechanism (pthread key, Windows FLS),
   so unloading the object must withdraw that registration, or the
   thread's exit calls into unmapped code and the program crashes.

   usage: libload LIBRARY          (part of make test-cross, every target) */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "dispatch.h"

#include <stdio.h>
#include <string.h>

/* This program has no implementation of its own (it dlopens one): it answers
   the header's link check for programs without DISPATCH_IMPLEMENTATION. */
void dk_no_file_defines_DISPATCH_IMPLEMENTATION_before_including_dispatch_h(void) {}

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#include <pthread.h>
#endif

enum { LOADS = 20 };

typedef dk_status (*create_fn)(const dk_registry_desc *, dk_registry **, const char *);
typedef dk_status (*def_fn)(dk_registry *, const char *, const dk_op_adapters *, const char *, int,
                            dk_registration **, const char *);
typedef dk_status (*find_fn)(dk_registry *, const char *, dk_operator **);
typedef const char *(*last_error_fn)(void);
typedef void (*destroy_fn)(dk_registry *);

static find_fn op_find;
static last_error_fn last_error;
static dk_registry *reg;
static long failures;

#define CHECK(c)                                                                          \
    do {                                                                                  \
        if (!(c)) { failures++; fprintf(stderr, "libload.c:%d: check failed: %s\n", __LINE__, #c); } \
    } while (0)

/* A failing lookup: the thread gets its state (and its exit registration). */
static void use_library(void) {
    dk_operator *op = NULL;
    CHECK(op_find(reg, "lib::missing", &op) != DK_OK && op == NULL);
    CHECK(strstr(last_error(), "lib::missing") != NULL);
}

/* One-shot events: the worker used the library; the library is gone. */
#if defined(_WIN32)
typedef HANDLE event;
static void event_init(event *e) { *e = CreateEventA(NULL, TRUE, FALSE, NULL); }
static void event_set(event *e) { SetEvent(*e); }
static void event_wait(event *e) { WaitForSingleObject(*e, INFINITE); }
static void event_free(event *e) { CloseHandle(*e); }
#else
typedef struct { pthread_mutex_t m; pthread_cond_t c; int set; } event;
static void event_init(event *e) { pthread_mutex_init(&e->m, NULL); pthread_cond_init(&e->c, NULL); e->set = 0; }
static void event_set(event *e) { pthread_mutex_lock(&e->m); e->set = 1; pthread_cond_broadcast(&e->c); pthread_mutex_unlock(&e->m); }
static void event_wait(event *e) {
    pthread_mutex_lock(&e->m);
    while (!e->set) pthread_cond_wait(&e->c, &e->m);
    pthread_mutex_unlock(&e->m);
}
static void event_free(event *e) { pthread_mutex_destroy(&e->m); pthread_cond_destroy(&e->c); }
#endif
static event used, unloaded;

static void worker(void) {
    use_library();
    event_set(&used);
    event_wait(&unloaded);
    /* returns: the thread exits after the library was unloaded */
}

#if defined(_WIN32)
static DWORD WINAPI worker_main(LPVOID arg) { (void)arg; worker(); return 0; }
#else
static void *worker_main(void *arg) { (void)arg; worker(); return NULL; }
#endif

int main(int argc, char **argv) {
    int i, done = 0;
    if (argc != 2) { fprintf(stderr, "usage: libload LIBRARY\n"); return 2; }
    for (i = 0; i < LOADS; i++) {
        create_fn create;
        def_fn def;
        destroy_fn destroy;
        dk_registration *g;
#if defined(_WIN32)
        HANDLE t;
        char path[1024], *c;
        HMODULE h;
        strncpy(path, argv[1], sizeof path - 1);
        path[sizeof path - 1] = '\0';
        for (c = path; *c; c++) if (*c == '/') *c = '\\';
        if (!(h = LoadLibraryA(path))) { fprintf(stderr, "LoadLibrary: error %lu\n", (unsigned long)GetLastError()); return 1; }
#define LOAD_SYM(var, name) do { FARPROC f_ = GetProcAddress(h, name); memcpy(&(var), &f_, sizeof f_); } while (0)
#else
        pthread_t t;
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
#define LOAD_SYM(var, name) (*(void **)&(var) = dlsym(h, name))
#endif
        /* POSIX guarantees dlsym's object-to-function pointer conversion; FARPROC is a function pointer */
        LOAD_SYM(create, "dk__registry_create");
        LOAD_SYM(def, "dk__def");
        LOAD_SYM(destroy, "dk_registry_destroy");
        LOAD_SYM(op_find, "dk_op_find");
        LOAD_SYM(last_error, "dk_last_error");
        if (!create || !def || !destroy || !op_find || !last_error) { fprintf(stderr, "missing symbols\n"); return 1; }
        CHECK(create(NULL, &reg, DK_CONFIG_SIGNATURE) == DK_OK);
        CHECK(def(reg, "lib::op(Tensor x) -> Tensor", NULL, "libload.c", __LINE__, &g, DK_CONFIG_SIGNATURE) == DK_OK);
        event_init(&used);
        event_init(&unloaded);
#if defined(_WIN32)
        CHECK((t = CreateThread(NULL, 0, worker_main, NULL, 0, NULL)) != NULL);
#else
        CHECK(pthread_create(&t, NULL, worker_main, NULL) == 0);
#endif
        event_wait(&used);
        use_library();             /* the main thread too */
        destroy(reg);
#if defined(_WIN32)
        CHECK(FreeLibrary(h));
#else
        CHECK(dlclose(h) == 0);
#endif
        event_set(&unloaded);      /* the worker exits now */
#if defined(_WIN32)
        WaitForSingleObject(t, INFINITE);
        CloseHandle(t);
#else
        pthread_join(t, NULL);
#endif
        event_free(&used);
        event_free(&unloaded);
        done++;
    }
    printf("libload: the implementation loaded and unloaded %d times, a thread that used it exiting after each unload\n",
           done);
    return failures ? 1 : 0;
}
