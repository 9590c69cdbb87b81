/*
 * clockshift: an LD_PRELOAD shim that shifts a process's wall clock.
 *
 * It replaces gettimeofday, time and clock_gettime, and adds the offset in
 * the environment variable named SHIFT_ENV (milliseconds, may be negative;
 * unset or 0 shifts nothing) to the wall-clock readings:
 * gettimeofday, time, and clock_gettime of CLOCK_REALTIME and its variants
 * (_COARSE, _ALARM, and CLOCK_TAI). Other clocks, CLOCK_MONOTONIC among
 * them, are passed through unchanged, so that timeouts and timers run at
 * the real pace. Each replacement calls the next definition of its
 * function (dlsym RTLD_NEXT), the C library's, and only shifts the result:
 * nothing else of the process is touched (unlike libfaketime, which is
 * known to hang redis-server 7).
 *
 * Build, naming the variable (redistest does, in clockshift.go):
 *   gcc -shared -fPIC '-DSHIFT_ENV="CLOCK_SHIFT_MS"' -o clockshift.so clockshift.c -ldl
 */
#define _GNU_SOURCE
/* Declare the C library's gettimeofday under another name: its second
 * parameter is void * or struct timezone * depending on the glibc version,
 * and the definition below must not conflict with either. */
#define gettimeofday clockshift_libc_gettimeofday
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#undef gettimeofday

#ifndef SHIFT_ENV
#error "define SHIFT_ENV as the variable's name, a string literal: see Build above"
#endif
#define NSEC_PER_SEC 1000000000LL

typedef int (*clock_gettime_func)(clockid_t, struct timespec *);
typedef int (*gettimeofday_func)(struct timeval *, void *);

/* Set once by setup, before ready is; a second concurrent setup writes the
 * same values. */
static long long shift_ns;
static clock_gettime_func next_clock_gettime;
static gettimeofday_func next_gettimeofday;
static int ready;

static void setup(void) {
    const char *ms = getenv(SHIFT_ENV);
    char *end = NULL;
    long long n = ms ? strtoll(ms, &end, 10) : 0;
    if (ms && (*ms == '\0' || *end != '\0')) {
        fprintf(stderr, "clockshift: %s=%s is not a whole number of milliseconds\n", SHIFT_ENV, ms);
        abort();
    }
    shift_ns = n * 1000000LL;
    next_clock_gettime = (clock_gettime_func)dlsym(RTLD_NEXT, "clock_gettime");
    next_gettimeofday = (gettimeofday_func)dlsym(RTLD_NEXT, "gettimeofday");
    if (!next_clock_gettime || !next_gettimeofday) {
        fprintf(stderr, "clockshift: dlsym: %s\n", dlerror());
        abort();
    }
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
}

/* Runs when the shim is loaded; the functions below also call setup if a
 * constructor that ran earlier reads the clock. */
__attribute__((constructor)) static void init(void) { setup(); }

static void await_setup(void) {
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        setup();
    }
}

static int is_wall_clock(clockid_t id) {
    switch (id) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_REALTIME_ALARM:
    case CLOCK_TAI:
        return 1;
    default:
        return 0;
    }
}

/* shift adds shift_ns to ts, keeping tv_nsec in [0, 1e9). */
static void shift(struct timespec *ts) {
    long long ns = (long long)ts->tv_nsec + shift_ns % NSEC_PER_SEC;
    time_t sec = ts->tv_sec + (time_t)(shift_ns / NSEC_PER_SEC);
    if (ns < 0) {
        ns += NSEC_PER_SEC;
        sec--;
    } else if (ns >= NSEC_PER_SEC) {
        ns -= NSEC_PER_SEC;
        sec++;
    }
    ts->tv_sec = sec;
    ts->tv_nsec = (long)ns;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    await_setup();
    int err = next_clock_gettime(id, ts);
    if (err == 0 && is_wall_clock(id)) {
        shift(ts);
    }
    return err;
}

int gettimeofday(struct timeval *tv, void *tz) {
    await_setup();
    int err = next_gettimeofday(tv, tz);
    if (err == 0 && tv) {
        struct timespec ts = {tv->tv_sec, tv->tv_usec * 1000L};
        shift(&ts);
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000L;
    }
    return err;
}

/* time reads the coarse wall clock, as the C library's does. */
time_t time(time_t *t) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME_COARSE, &ts) != 0) {
        return (time_t)-1;
    }
    if (t) {
        *t = ts.tv_sec;
    }
    return ts.tv_sec;
}
