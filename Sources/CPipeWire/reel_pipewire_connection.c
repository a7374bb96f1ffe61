#include "reel_pipewire_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pipewire/pipewire.h>
#include <spa/utils/result.h>

uint64_t reel_monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

void reel_copy_text(char *to, size_t size, const char *from) {
    if (size == 0) return;
    snprintf(to, size, "%s", from ? from : "");
}

/* A condition variable on CLOCK_MONOTONIC, waited on for at most `timeout_us`. */
void reel_init_condition(pthread_cond_t *condition) {
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(condition, &attributes);
    pthread_condattr_destroy(&attributes);
}

void reel_wait_for(pthread_cond_t *condition, pthread_mutex_t *lock, int32_t timeout_us) {
    if (timeout_us <= 0) return;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + (uint64_t)timeout_us * 1000ull;
    until.tv_sec += (time_t)(ns / 1000000000ull);
    until.tv_nsec = (long)(ns % 1000000000ull);
    pthread_cond_timedwait(condition, lock, &until);
}

int reel_connect(struct reel_pw_connection *c, const char *remote, const char *thread_name, char *error, size_t error_size) {
    pw_init(NULL, NULL);
    c->loop = pw_thread_loop_new(thread_name, NULL);
    if (c->loop == NULL) { reel_copy_text(error, error_size, "cannot make PipeWire's loop"); return -1; }
    /* client-rt.conf loads module-rt: the data thread, where sound is taken from the graph
     * (PW_STREAM_FLAG_RT_PROCESS), runs real-time where the system allows it (RTKit, or the
     * rlimits of root). Under load, a client thread of normal priority came too late for the
     * graph's cycle and PipeWire went on without it: that cycle's sound was lost. */
    c->context = pw_context_new(pw_thread_loop_get_loop(c->loop), pw_properties_new(PW_KEY_CONFIG_NAME, "client-rt.conf", NULL), 0);
    if (c->context == NULL) { reel_copy_text(error, error_size, "cannot make a PipeWire context"); return -1; }
    if (pw_thread_loop_start(c->loop) < 0) { reel_copy_text(error, error_size, "cannot start PipeWire's thread"); return -1; }
    pw_thread_loop_lock(c->loop);
    struct pw_properties *props = remote ? pw_properties_new(PW_KEY_REMOTE_NAME, remote, NULL) : NULL;
    c->core = pw_context_connect(c->context, props, 0);
    int saved = errno;
    pw_thread_loop_unlock(c->loop);
    if (c->core == NULL) {
        if (error && error_size)
            snprintf(error, error_size, "cannot connect to PipeWire%s%s: %s", remote ? " at " : "", remote ? remote : "", strerror(saved));
        return -1;
    }
    return 0;
}

/* Waits (holding the loop's lock) until `done` is true or `seconds` have passed. */
int reel_wait_until(struct reel_pw_connection *c, int (*done)(void *), void *data, int seconds) {
    uint64_t deadline = reel_monotonic_ns() + (uint64_t)seconds * 1000000000ull;
    while (!done(data)) {
        if (reel_monotonic_ns() >= deadline) return -1;
        pw_thread_loop_timed_wait(c->loop, 1);
    }
    return 0;
}

void reel_disconnect(struct reel_pw_connection *c) {
    if (c->loop) pw_thread_loop_stop(c->loop);
    if (c->core) {
        if (c->has_core_listener) spa_hook_remove(&c->core_listener);
        pw_core_disconnect(c->core);
    }
    if (c->context) pw_context_destroy(c->context);
    if (c->loop) pw_thread_loop_destroy(c->loop);
}
