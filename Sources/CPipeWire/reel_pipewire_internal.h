#ifndef REEL_PIPEWIRE_INTERNAL_H
#define REEL_PIPEWIRE_INTERNAL_H
/* What the graph and the capture share: a connection on a loop thread of its own, and small
 * helpers (not part of the module's API). */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <pipewire/pipewire.h>

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t reel_monotonic_ns(void);

/* Copies `from` (NULL: "") into `to` of `size` bytes, always terminated. */
void reel_copy_text(char *to, size_t size, const char *from);

/* A condition variable on CLOCK_MONOTONIC, and a wait on it of at most `timeout_us`. */
void reel_init_condition(pthread_cond_t *condition);
void reel_wait_for(pthread_cond_t *condition, pthread_mutex_t *lock, int32_t timeout_us);

/* A loop thread, a context and a core on a remote. */
struct reel_pw_connection {
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct spa_hook core_listener;
    int has_core_listener;
    int sync_seq, synced;
};

/* Connects to `remote` (NULL: the usual one); -1 with a message on failure. */
int reel_connect(struct reel_pw_connection *c, const char *remote, const char *thread_name, char *error, size_t error_size);

/* Waits, holding the loop's lock, until `done(data)` or `seconds` have passed (-1). The loop
 * thread signals the loop when something changed. */
int reel_wait_until(struct reel_pw_connection *c, int (*done)(void *), void *data, int seconds);

/* Stops the loop and frees the connection's parts. */
void reel_disconnect(struct reel_pw_connection *c);

#endif
