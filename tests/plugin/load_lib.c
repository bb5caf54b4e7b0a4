/* dispatch.h compiled into a shared object the ordinary way (one
   DISPATCH_IMPLEMENTATION unit, -fPIC -shared) loads with dlopen after
   the program started: its initial-exec TLS is only the two keysets and
   the call-epoch record, small enough for the static TLS glibc keeps for
   late-loaded objects. usage: load_lib path/to/libdispatch.so */
#define _POSIX_C_SOURCE 200809L
#include "dispatch.h"

#include <dlfcn.h>
#include <stdio.h>

/* This program has no implementation of its own (it dlopens one): it answers
   the header's link check for programs without DISPATCH_IMPLEMENTATION. */
void dk_no_file_defines_DISPATCH_IMPLEMENTATION_before_including_dispatch_h(void) {}

typedef dk_status (*create_fn)(const dk_registry_desc *, dk_registry **, const char *);
typedef dk_status (*def_fn)(dk_registry *, const char *, const dk_op_adapters *, const char *, int,
                            dk_registration **, const char *);
typedef void (*destroy_fn)(dk_registry *);
typedef int (*version_fn)(void);

int main(int argc, char **argv) {
    void *h;
    dk_registry *r;
    dk_registration *g;
    create_fn create;
    def_fn def;
    destroy_fn destroy;
    version_fn version;
    if (argc != 2) return 2;
    if (!(h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    /* object and function pointers: POSIX guarantees dlsym's conversion */
    *(void **)&create = dlsym(h, "dk__registry_create");
    *(void **)&def = dlsym(h, "dk__def");
    *(void **)&destroy = dlsym(h, "dk_registry_destroy");
    *(void **)&version = dlsym(h, "dk_version_number");
    if (!create || !def || !destroy || !version) return 1;
    if (create(NULL, &r, DK_CONFIG_SIGNATURE) != DK_OK) return 1;
    if (def(r, "lib::op(Tensor x) -> Tensor", NULL, __FILE__, __LINE__, &g, DK_CONFIG_SIGNATURE) != DK_OK) return 1;
    destroy(r);
    printf("dlopen'ed the implementation (version %d), made a registry and a def\n", version());
    return dlclose(h) == 0 ? 0 : 1;
}
