/* A plugin host: it holds dispatch.h's implementation, defines arr::scale
   with a CPU kernel, names PrivateUse1 "npu", and loads a backend plugin
   while a worker thread calls without pause. What a host does, in order:
     1. every thread that calls takes part in quiescent points
        (dk_thread_online; dk_registry_reclaim between calls; offline when
        done) -- or the program is built with -DDK_CALL_EPOCHS, host and
        plugin alike, and does none of it;
     2. around dlopen, dk_library_blocks says whether the plugin's blocks
        registered (a plugin built in another configuration is refused);
     3. to unload: dk_library_unload(an address inside the plugin), then
        dlclose: the wait for the threads that may run the plugin's kernels
        happens outside the dynamic loader's lock;
     4. at exit, threads need not be joined (this one is, to count).
   usage: host ./npu.so */
#define _GNU_SOURCE 1
#define DISPATCH_IMPLEMENTATION
#include "arr.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static double scale_cpu(const dk_kernel *k, dk_keyset ks, arr x) { (void)k; (void)ks; return 2 * x.v; }

static const dk_operator *scale;
static int stop;
static long wrong;

static void *worker(void *unused) {   /* calls on an npu array without pause */
    arr x;
    long n = 0;
    (void)unused;
    x.ks = dk_ks_from_key(DK_PrivateUse1);
    x.v = 1;
    dk_thread_online();
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        double y;
        (void)dk_last_call_status();   /* clear, call, read: this call's status */
        y = arr_scale_call(scale, x);
        if (dk_last_call_status() == DK_OK ? y != 10 : y != 0) wrong++;
        if (++n % 1000 == 0) dk_registry_reclaim(dk_registry_default());   /* a quiescent point */
    }
    dk_thread_offline();
    return NULL;
}

int main(int argc, char **argv) {
    dk_registry *r = dk_registry_default();
    dk_registration *def, *cpu;
    unsigned long run0, failed0, run, failed;
    pthread_t t;
    void *so;
    arr x;
    double y;
    if (argc != 2 || !r) return 2;
    dk_backend_rename(DK_PrivateUse1Bit, "npu");
    dk_def(r, "arr::scale(Tensor x) -> Tensor", &def);
    dk_impl(r, "arr::scale", DK_CPU, dk_unboxed(DK_FN(scale_cpu), NULL), &cpu);
    scale = dk_op_lookup(r, "arr::scale");
    dk_thread_online();                                   /* main calls too */
    pthread_create(&t, NULL, worker, NULL);

    dk_library_blocks(r, &run0, &failed0);
    if (!(so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) { printf("dlopen: %s\n", dlerror()); return 1; }
    dk_library_blocks(r, &run, &failed);
    printf("loaded %s: %lu block(s) run, %lu failed\n", argv[1], run - run0, failed - failed0);

    x.ks = dk_ks_from_key(DK_PrivateUse1);
    x.v = 3;
    printf("scale on npu: %g\n", arr_scale_call(scale, x));   /* the plugin's kernel: 30 */

    printf("unload: %s\n", dk_status_message(dk_library_unload(dlsym(so, "npu_plugin_version"))));
    dlclose(so);
    (void)dk_last_call_status();
    y = arr_scale_call(scale, x);
    printf("scale on npu after unloading: %g, %s\n", y, dk_status_message(dk_last_call_status()));

    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    dk_thread_offline();
    printf("worker: %ld wrong results\n", wrong);
    return wrong != 0;
}
