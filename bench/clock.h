/* bench/clock.h - the monotonic clock in nanoseconds and the comparison a
   median sorts with, shared by bench/measure.h (bench.c, bench_c10.cpp)
   and bench/churn.c. C99 and C++; include after <stdlib.h> and <time.h>. */
#ifndef DK_BENCH_CLOCK_H
#define DK_BENCH_CLOCK_H

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#endif
