/* bench/measure.h - the measurement harness shared by bench/bench.c and
   bench/bench_c10.cpp, so both systems are timed and printed the same way:
   median (min-max) ns/op over REPS repetitions after a warm-up, and
   instructions/op from perf_event_open where the machine has counters.
   C99 and C++; include after <stdio.h>, <stdlib.h>, <string.h>, <time.h>,
   <unistd.h>, <pthread.h> and (Linux) <linux/perf_event.h>, <sys/ioctl.h>, <sys/syscall.h>.
   The includer defines SINK(x), and START_INSTRUMENTATION() with
   HAVE_START_INSTRUMENTATION (1 when it starts callgrind's instrumentation). */
#ifndef DK_BENCH_MEASURE_H
#define DK_BENCH_MEASURE_H

#define REPS 11
static int perf_fd = -1;

static void perf_open(void) {
#if defined(__linux__)
    struct perf_event_attr pe;
    memset(&pe, 0, sizeof pe);
    pe.type = PERF_TYPE_HARDWARE;
    pe.size = sizeof pe;
    pe.config = PERF_COUNT_HW_INSTRUCTIONS;
    pe.disabled = 1;
    pe.exclude_kernel = 1;
    pe.exclude_hv = 1;
    perf_fd = (int)syscall(__NR_perf_event_open, &pe, 0, -1, -1, 0);
#endif
}
static long long perf_read(void) {
    long long v = -1;
    if (perf_fd < 0 || read(perf_fd, &v, sizeof v) != (ssize_t)sizeof v) return -1;
    return v;
}

#include "clock.h"

typedef struct result { double med, min, max, instr; } result;
/* A row measured once (registration rates, memory, ratios). */
static result once(double v) { result r; r.med = r.min = r.max = v; r.instr = -1; return r; }

static result measure(long (*row)(long), long n) {
    double t[REPS];
    long long i0, i1, best = -1;
    result r;
    int rep;
    row(n / 10); /* warm up */
    for (rep = 0; rep < REPS; rep++) {
        double a;
        long s;
#if defined(__linux__)
        if (perf_fd >= 0) { ioctl(perf_fd, PERF_EVENT_IOC_RESET, 0); ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0); }
#endif
        i0 = perf_read();
        a = now_ns();
        s = row(n);
        t[rep] = (now_ns() - a) / (double)n;
        i1 = perf_read();
        SINK(s);
        if (i0 >= 0 && i1 >= 0 && (best < 0 || i1 - i0 < best)) best = i1 - i0;
    }
    qsort(t, REPS, sizeof t[0], cmp_double);
    r.med = t[REPS / 2];
    r.min = t[0];
    r.max = t[REPS - 1];
    r.instr = best >= 0 ? (double)best / (double)n : -1;
    return r;
}

static void print_row(const char *id, const char *what, result r, const char *vs) {
    char instr[32];
    int d = r.max >= 1e5 ? 0 : 2; /* rows of 100 us and more without decimals */
    if (r.instr >= 0) snprintf(instr, sizeof instr, "%8.1f", r.instr);
    else snprintf(instr, sizeof instr, "%8s", "n/a");
    printf("%-22s %-52s %9.*f %9.*f-%-9.*f %s  %s\n", id, what, d, r.med, d, r.min, d, r.max, instr, vs);
    fflush(stdout);
}

/* The rows both benches count per operation, in print order; their
   row_<name>(n) functions are what bench/icount.sh counts under callgrind.
   X(name): a call row, n iterations of one call (callgrind: 200,000).
   P(name, n): a row with its own state, set up by prepare_<name>(n) before
   row_<name>(n) runs (outside the measurement); n is the iteration count
   bench/icount.sh uses (registration rows are slow under callgrind). */
#define BENCH_FORALL_ROWS(X, P)                                                                    \
    X(loop_baseline) X(highest_key) X(table_index) X(keyset_to_kernel) X(direct_call)              \
    X(fnptr_call) X(call_one_hop) X(site_fnptr) X(site_one_hop) X(call_fallthrough) X(call_two_args) \
    X(call_two_hops) X(redispatch) X(boxed_fallback) X(boxed_call)                                 \
    P(lookup_1k, 200000) P(lookup_10k, 200000) P(lookup_100k, 200000)                                                   \
    P(rotate_10, 200000) P(rotate_1k, 200000) P(rotate_100k, 200000) P(rotate_100k_seq, 200000)    \
    P(def, 1000) P(impl, 1000) P(deregister, 1000) P(fallback_1k, 4) P(fallback_10k, 4)
typedef struct bench_row { const char *name; long (*fn)(long); void (*prepare)(long); long icount_n; } bench_row;
#define BENCH_CALL_ENTRY(name) { #name, row_##name, NULL, 200000 },
#define BENCH_PREPARED_ENTRY(name, n) { #name, row_##name, prepare_##name, n },

static const bench_row *bench_find(const bench_row *rows, size_t n, const char *name) {
    size_t i;
    for (i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0) return &rows[i];
    fprintf(stderr, "bench: no row named %s\n", name);
    exit(2);
}

/* A prepared row: prepare_<name>(n) before each of `reps` runs of
   row_<name>(n) (prepare is outside the timing); median of the runs. */
static result measure_prepared(const bench_row *row, long n, int reps) {
    double t[REPS];
    long long i0, i1, best = -1;
    result r;
    int rep;
    if (reps > REPS) reps = REPS;
    for (rep = 0; rep < reps; rep++) {
        double a;
        long s;
        row->prepare(n);
#if defined(__linux__)
        if (perf_fd >= 0) { ioctl(perf_fd, PERF_EVENT_IOC_RESET, 0); ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0); }
#endif
        i0 = perf_read();
        a = now_ns();
        s = row->fn(n);
        t[rep] = (now_ns() - a) / (double)n;
        i1 = perf_read();
        SINK(s);
        if (i0 >= 0 && i1 >= 0 && (best < 0 || i1 - i0 < best)) best = i1 - i0;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    r.med = t[reps / 2];
    r.min = t[0];
    r.max = t[reps - 1];
    r.instr = best >= 0 ? (double)best / (double)n : -1;
    return r;
}
/* The median of `reps` samples taken by sample(). */
static result median_of(double (*sample)(void), int reps) {
    double t[REPS];
    result r;
    int k;
    if (reps > REPS) reps = REPS;
    for (k = 0; k < reps; k++) t[k] = sample();
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    r.med = t[reps / 2];
    r.min = t[0];
    r.max = t[reps - 1];
    r.instr = -1;
    return r;
}

/* Threads calling at once: ns per call per thread (the slowest thread's
   wall time over its THREAD_CALLS calls) with 1 and with 2 threads started
   together, for the dispatched call and for the same loop through a
   function pointer (the control: what the machine gives two threads),
   THREAD_ROUNDS rounds of the four, each round in the same moment. On a
   shared machine the absolute numbers and even the two-thread slowdown
   move with the load; the ratio of ratios, (dispatched 2 / 1) over
   (control 2 / 1), is what the library adds: 1.0 when its per-thread cost
   is as flat in the number of threads as a plain indirect call.
   calls(t, n) and control(t, n) run n calls as thread t (0 or 1). */
#define THREAD_CALLS 20000000L
#define THREAD_ROUNDS 7
typedef struct thread_job { long (*fn)(int, long); int t; long n; double ns; } thread_job;
static void *thread_run(void *arg) {
    thread_job *j = (thread_job *)arg;
    double a = now_ns();
    long s = j->fn(j->t, j->n);
    SINK(s);
    j->ns = now_ns() - a;
    return NULL;
}
static double per_thread_ns(long (*fn)(int, long), int threads, long n) {
    pthread_t th[2];
    thread_job j[2];
    double worst = 0;
    int k;
    for (k = 0; k < threads; k++) {
        j[k].fn = fn;
        j[k].t = k;
        j[k].n = n;
        if (pthread_create(&th[k], NULL, thread_run, &j[k]) != 0) { perror("pthread_create"); exit(1); }
    }
    for (k = 0; k < threads; k++) {
        pthread_join(th[k], NULL);
        if (j[k].ns > worst) worst = j[k].ns;
    }
    return worst / (double)n;
}
static result of_samples(double *v, int n) {
    result r;
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    r.med = v[n / 2];
    r.min = v[0];
    r.max = v[n - 1];
    r.instr = -1;
    return r;
}
static void print_thread_rows(long (*calls)(int, long), long (*control)(int, long), const char *what) {
    double d1[THREAD_ROUNDS], d2[THREAD_ROUNDS], f1[THREAD_ROUNDS], f2[THREAD_ROUNDS], rr[THREAD_ROUNDS];
    char desc[96];
    int r;
    calls(0, THREAD_CALLS / 10); /* warm up */
    control(0, THREAD_CALLS / 10);
    for (r = 0; r < THREAD_ROUNDS; r++) {
        d1[r] = per_thread_ns(calls, 1, THREAD_CALLS);
        f1[r] = per_thread_ns(control, 1, THREAD_CALLS);
        d2[r] = per_thread_ns(calls, 2, THREAD_CALLS);
        f2[r] = per_thread_ns(control, 2, THREAD_CALLS);
        rr[r] = (d2[r] / d1[r]) / (f2[r] / f1[r]);
    }
    snprintf(desc, sizeof desc, "%s, 1 thread (ns/call)", what);
    print_row("threads_1", desc, of_samples(d1, THREAD_ROUNDS), "fnptr_threads_1");
    snprintf(desc, sizeof desc, "%s, 2 threads at once (ns/call/thread)", what);
    print_row("threads_2", desc, of_samples(d2, THREAD_ROUNDS), "threads_1");
    print_row("fnptr_threads_1", "control: fn pointer loop, 1 thread (ns/call)", of_samples(f1, THREAD_ROUNDS), "");
    print_row("fnptr_threads_2", "control: fn pointer loop, 2 threads (ns/call/thread)", of_samples(f2, THREAD_ROUNDS),
              "fnptr_threads_1");
    print_row("two_threads", "ratio of ratios: threads_2/threads_1 over the control's (x)",
              of_samples(rr, THREAD_ROUNDS), "1.0 is flat");
}

/* --list: the row names and the iteration count bench/icount.sh runs each with. */
static void bench_list(const bench_row *rows, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) printf("%s %ld\n", rows[i].name, rows[i].icount_n);
}
/* --row NAME N: prepare, then run one row N times (for callgrind: the
   includer's START_INSTRUMENTATION() turns callgrind's instrumentation on
   only now, so set-up runs uninstrumented under --instr-atstart=no). */
static long bench_run_row(const bench_row *rows, size_t n, const char *name, long iters) {
    const bench_row *row = bench_find(rows, n, name);
    if (row->prepare) row->prepare(iters);
    START_INSTRUMENTATION();
    return row->fn(iters);
}
/* --instr-atstart: the valgrind option bench/icount.sh must pass ("no" when
   --row turns instrumentation on itself). */
static void bench_instr_atstart(void) { puts(HAVE_START_INSTRUMENTATION ? "no" : "yes"); }
static void bench_print_heading(void) {
    printf("%-22s %-52s %9s %19s %8s  %s\n", "row", "what", "median", "min-max", "instr", "compare with");
}

#endif
