#include "reel_pipewire_audio.h"
#include "reel_pipewire_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pipewire/pipewire.h>
#include <spa/utils/result.h>

struct bound_node {
    struct reel_pw_graph *graph;
    struct pw_proxy *proxy;
    struct spa_hook listener;
    uint32_t id;
    int announced;
    struct bound_node *next;
};

struct link_entry {
    struct reel_pw_graph *graph;
    struct pw_proxy *proxy;
    struct spa_hook listener;
    uint32_t handle;
    struct link_entry *next;
};

/* What the graph knows of a global id: a node or a port (so its removal can be said). */
struct known {
    uint32_t id;
    int32_t kind; /* REEL_PW_NODE_ADDED or REEL_PW_PORT_ADDED */
    int announced;
};

struct reel_pw_graph {
    struct reel_pw_connection c;
    struct pw_registry *registry;
    struct spa_hook registry_listener;
    int has_registry_listener;
    struct bound_node *nodes;
    struct link_entry *links;
    uint32_t next_handle;

    /* Events and the state, under `lock` (taken by the loop thread too). */
    pthread_mutex_t lock;
    pthread_cond_t arrived;
    reel_pw_graph_event *queue;
    size_t count, capacity;
    struct known *known;
    size_t known_count, known_capacity;
    int failed;
    char message[256];
};

static void graph_push(struct reel_pw_graph *g, const reel_pw_graph_event *event) {
    pthread_mutex_lock(&g->lock);
    if (g->count == g->capacity) {
        size_t grown = g->capacity ? g->capacity * 2 : 64;
        reel_pw_graph_event *bigger = realloc(g->queue, grown * sizeof *bigger);
        if (bigger == NULL) { pthread_mutex_unlock(&g->lock); return; }
        g->queue = bigger;
        g->capacity = grown;
    }
    g->queue[g->count++] = *event;
    pthread_cond_broadcast(&g->arrived);
    pthread_mutex_unlock(&g->lock);
}

static void graph_fail(struct reel_pw_graph *g, const char *message) {
    pthread_mutex_lock(&g->lock);
    if (!g->failed) {
        g->failed = 1;
        reel_copy_text(g->message, sizeof g->message, message);
    }
    pthread_cond_broadcast(&g->arrived);
    pthread_mutex_unlock(&g->lock);
    pw_thread_loop_signal(g->c.loop, false);
}

/* Remembers what `id` is; with `announced` whether its removal is to be said. Loop thread. */
static void graph_remember(struct reel_pw_graph *g, uint32_t id, int32_t kind, int announced) {
    for (size_t i = 0; i < g->known_count; i++) {
        if (g->known[i].id == id) { g->known[i].kind = kind; g->known[i].announced = announced; return; }
    }
    if (g->known_count == g->known_capacity) {
        size_t grown = g->known_capacity ? g->known_capacity * 2 : 128;
        struct known *bigger = realloc(g->known, grown * sizeof *bigger);
        if (bigger == NULL) return;
        g->known = bigger;
        g->known_capacity = grown;
    }
    g->known[g->known_count++] = (struct known){ id, kind, announced };
}

static void fill_node(reel_pw_graph_event *e, uint32_t id, const struct spa_dict *props) {
    memset(e, 0, sizeof *e);
    e->kind = REEL_PW_NODE_ADDED;
    e->id = id;
    e->pid = -1;
    if (props == NULL) return;
    reel_copy_text(e->media_class, sizeof e->media_class, spa_dict_lookup(props, PW_KEY_MEDIA_CLASS));
    reel_copy_text(e->node_name, sizeof e->node_name, spa_dict_lookup(props, PW_KEY_NODE_NAME));
    reel_copy_text(e->application_name, sizeof e->application_name, spa_dict_lookup(props, PW_KEY_APP_NAME));
    reel_copy_text(e->binary, sizeof e->binary, spa_dict_lookup(props, PW_KEY_APP_PROCESS_BINARY));
    const char *pid = spa_dict_lookup(props, PW_KEY_APP_PROCESS_ID);
    if (pid && *pid) e->pid = (int32_t)strtol(pid, NULL, 10);
}

/* A stream's full properties (its process and program) come with its info, not its global. */
static void on_node_info(void *data, const struct pw_node_info *info) {
    struct bound_node *n = data;
    if (n->announced || info == NULL || (info->change_mask & PW_NODE_CHANGE_MASK_PROPS) == 0) return;
    n->announced = 1;
    reel_pw_graph_event e;
    fill_node(&e, n->id, info->props);
    graph_push(n->graph, &e);
}

static const struct pw_node_events node_events = {
    PW_VERSION_NODE_EVENTS,
    .info = on_node_info,
};

static void on_global(void *data, uint32_t id, uint32_t permissions, const char *type, uint32_t version,
                      const struct spa_dict *props) {
    (void)permissions; (void)version;
    struct reel_pw_graph *g = data;
    if (strcmp(type, PW_TYPE_INTERFACE_Node) == 0) {
        const char *media_class = props ? spa_dict_lookup(props, PW_KEY_MEDIA_CLASS) : NULL;
        if (media_class && strncmp(media_class, "Stream/Output/Audio", 19) == 0) {
            /* Said once its info (with the application's process) has come. */
            struct bound_node *n;
            struct pw_proxy *proxy = pw_registry_bind(g->registry, id, PW_TYPE_INTERFACE_Node, PW_VERSION_NODE, 0);
            if (proxy == NULL || (n = calloc(1, sizeof *n)) == NULL) {
                if (proxy) pw_proxy_destroy(proxy);
                return;
            }
            n->graph = g;
            n->proxy = proxy;
            n->id = id;
            n->next = g->nodes;
            g->nodes = n;
            pw_proxy_add_object_listener(proxy, &n->listener, &node_events, n);
            graph_remember(g, id, REEL_PW_NODE_ADDED, 1);
            return;
        }
        reel_pw_graph_event e;
        fill_node(&e, id, props);
        graph_remember(g, id, REEL_PW_NODE_ADDED, 1);
        graph_push(g, &e);
    } else if (strcmp(type, PW_TYPE_INTERFACE_Port) == 0 && props) {
        reel_pw_graph_event e;
        memset(&e, 0, sizeof e);
        e.kind = REEL_PW_PORT_ADDED;
        e.id = id;
        e.pid = -1;
        const char *node = spa_dict_lookup(props, PW_KEY_NODE_ID);
        const char *direction = spa_dict_lookup(props, PW_KEY_PORT_DIRECTION);
        const char *monitor = spa_dict_lookup(props, PW_KEY_PORT_MONITOR);
        if (node == NULL || direction == NULL) return;
        e.node = (uint32_t)strtoul(node, NULL, 10);
        e.output = strcmp(direction, "out") == 0;
        e.monitor = monitor && (strcmp(monitor, "true") == 0 || strcmp(monitor, "1") == 0);
        reel_copy_text(e.channel, sizeof e.channel, spa_dict_lookup(props, PW_KEY_AUDIO_CHANNEL));
        graph_remember(g, id, REEL_PW_PORT_ADDED, 1);
        graph_push(g, &e);
    }
}

static void on_global_remove(void *data, uint32_t id) {
    struct reel_pw_graph *g = data;
    for (struct bound_node **p = &g->nodes; *p; p = &(*p)->next) {
        if ((*p)->id != id) continue;
        struct bound_node *n = *p;
        *p = n->next;
        spa_hook_remove(&n->listener);
        pw_proxy_destroy(n->proxy);
        free(n);
        break;
    }
    for (size_t i = 0; i < g->known_count; i++) {
        if (g->known[i].id != id) continue;
        reel_pw_graph_event e;
        memset(&e, 0, sizeof e);
        e.kind = g->known[i].kind == REEL_PW_NODE_ADDED ? REEL_PW_NODE_REMOVED : REEL_PW_PORT_REMOVED;
        e.id = id;
        e.pid = -1;
        g->known[i] = g->known[--g->known_count];
        graph_push(g, &e);
        return;
    }
}

static const struct pw_registry_events registry_events = {
    PW_VERSION_REGISTRY_EVENTS,
    .global = on_global,
    .global_remove = on_global_remove,
};

static void on_graph_core_done(void *data, uint32_t id, int seq) {
    struct reel_pw_graph *g = data;
    if (id == PW_ID_CORE && seq == g->c.sync_seq) g->c.synced = 1;
    pw_thread_loop_signal(g->c.loop, false);
}

static void on_graph_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    (void)seq;
    struct reel_pw_graph *g = data;
    if (id != PW_ID_CORE) return;
    char text[256];
    snprintf(text, sizeof text, "the PipeWire connection failed: %s (%s)", message ? message : "", spa_strerror(res));
    graph_fail(g, text);
}

static const struct pw_core_events graph_core_events = {
    PW_VERSION_CORE_EVENTS,
    .done = on_graph_core_done,
    .error = on_graph_core_error,
};

static int graph_synced(void *data) {
    struct reel_pw_graph *g = data;
    return g->c.synced || g->failed;
}

reel_pw_graph *reel_pw_graph_open(const char *remote, char *error, size_t error_size) {
    struct reel_pw_graph *g = calloc(1, sizeof *g);
    if (g == NULL) { reel_copy_text(error, error_size, "out of memory"); return NULL; }
    pthread_mutex_init(&g->lock, NULL);
    reel_init_condition(&g->arrived);
    g->next_handle = 1;
    if (reel_connect(&g->c, remote, "reel.pipewire-graph", error, error_size) < 0) { reel_pw_graph_close(g); return NULL; }
    pw_thread_loop_lock(g->c.loop);
    pw_core_add_listener(g->c.core, &g->c.core_listener, &graph_core_events, g);
    g->c.has_core_listener = 1;
    g->registry = pw_core_get_registry(g->c.core, PW_VERSION_REGISTRY, 0);
    if (g->registry) {
        pw_registry_add_listener(g->registry, &g->registry_listener, &registry_events, g);
        g->has_registry_listener = 1;
    }
    /* Twice: the first round trip brings the globals, the second the info of the nodes bound
     * on the way. */
    for (int round = 0; round < 2 && !g->failed; round++) {
        g->c.synced = 0;
        g->c.sync_seq = pw_core_sync(g->c.core, PW_ID_CORE, 0);
        if (reel_wait_until(&g->c, graph_synced, g, 5) < 0) {
            pw_thread_loop_unlock(g->c.loop);
            reel_copy_text(error, error_size, "PipeWire did not answer within 5 s");
            reel_pw_graph_close(g);
            return NULL;
        }
    }
    pw_thread_loop_unlock(g->c.loop);
    if (g->failed) {
        reel_copy_text(error, error_size, g->message);
        reel_pw_graph_close(g);
        return NULL;
    }
    return g;
}

int reel_pw_graph_next_events(reel_pw_graph *g, reel_pw_graph_event *events, int capacity, int32_t timeout_us,
                              char *error, size_t error_size) {
    pthread_mutex_lock(&g->lock);
    if (g->count == 0 && !g->failed) reel_wait_for(&g->arrived, &g->lock, timeout_us);
    size_t taken = g->count < (size_t)capacity ? g->count : (size_t)capacity;
    memcpy(events, g->queue, taken * sizeof *events);
    memmove(g->queue, g->queue + taken, (g->count - taken) * sizeof *events);
    g->count -= taken;
    int failed = g->failed && taken == 0;
    if (failed) reel_copy_text(error, error_size, g->message);
    pthread_mutex_unlock(&g->lock);
    return failed ? -1 : (int)taken;
}

static void on_link_error(void *data, int seq, int res, const char *message) {
    (void)seq;
    struct link_entry *l = data;
    reel_pw_graph_event e;
    memset(&e, 0, sizeof e);
    e.kind = REEL_PW_LINK_FAILED;
    e.id = l->handle;
    e.pid = -1;
    snprintf(e.message, sizeof e.message, "%s (%s)", message ? message : "refused", spa_strerror(res));
    graph_push(l->graph, &e);
}

static const struct pw_proxy_events link_events = {
    PW_VERSION_PROXY_EVENTS,
    .error = on_link_error,
};

uint32_t reel_pw_graph_link(reel_pw_graph *g, uint32_t out_node, uint32_t out_port, uint32_t in_node, uint32_t in_port,
                            char *error, size_t error_size) {
    struct link_entry *l = calloc(1, sizeof *l);
    if (l == NULL) { reel_copy_text(error, error_size, "out of memory"); return 0; }
    struct pw_properties *props = pw_properties_new(PW_KEY_OBJECT_LINGER, "false", NULL);
    pw_properties_setf(props, PW_KEY_LINK_OUTPUT_NODE, "%u", out_node);
    pw_properties_setf(props, PW_KEY_LINK_OUTPUT_PORT, "%u", out_port);
    pw_properties_setf(props, PW_KEY_LINK_INPUT_NODE, "%u", in_node);
    pw_properties_setf(props, PW_KEY_LINK_INPUT_PORT, "%u", in_port);
    pw_thread_loop_lock(g->c.loop);
    struct pw_proxy *proxy = pw_core_create_object(g->c.core, "link-factory", PW_TYPE_INTERFACE_Link, PW_VERSION_LINK, &props->dict, 0);
    uint32_t handle = 0;
    if (proxy) {
        l->graph = g;
        l->proxy = proxy;
        l->handle = handle = g->next_handle++;
        l->next = g->links;
        g->links = l;
        pw_proxy_add_listener(proxy, &l->listener, &link_events, l);
    }
    pw_thread_loop_unlock(g->c.loop);
    pw_properties_free(props);
    if (proxy == NULL) {
        free(l);
        reel_copy_text(error, error_size, "PipeWire could not make a link");
    }
    return handle;
}

void reel_pw_graph_unlink(reel_pw_graph *g, uint32_t handle) {
    pw_thread_loop_lock(g->c.loop);
    for (struct link_entry **p = &g->links; *p; p = &(*p)->next) {
        if ((*p)->handle != handle) continue;
        struct link_entry *l = *p;
        *p = l->next;
        spa_hook_remove(&l->listener);
        pw_proxy_destroy(l->proxy);
        free(l);
        break;
    }
    pw_thread_loop_unlock(g->c.loop);
}

void reel_pw_graph_close(reel_pw_graph *g) {
    if (g == NULL) return;
    if (g->c.loop) pw_thread_loop_lock(g->c.loop);
    while (g->links) {
        struct link_entry *l = g->links;
        g->links = l->next;
        spa_hook_remove(&l->listener);
        pw_proxy_destroy(l->proxy);
        free(l);
    }
    while (g->nodes) {
        struct bound_node *n = g->nodes;
        g->nodes = n->next;
        spa_hook_remove(&n->listener);
        pw_proxy_destroy(n->proxy);
        free(n);
    }
    if (g->registry) {
        if (g->has_registry_listener) spa_hook_remove(&g->registry_listener);
        pw_proxy_destroy((struct pw_proxy *)g->registry);
    }
    if (g->c.loop) pw_thread_loop_unlock(g->c.loop);
    reel_disconnect(&g->c);
    pthread_cond_destroy(&g->arrived);
    pthread_mutex_destroy(&g->lock);
    free(g->queue);
    free(g->known);
    free(g);
}
