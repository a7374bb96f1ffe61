#include "reel_pipewire.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/param/video/format-utils.h>
#include <spa/param/video/type-info.h>
#include <spa/pod/builder.h>
#include <spa/utils/result.h>

struct reel_pw_stream {
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct pw_stream *stream;
    struct pw_registry *registry;
    struct spa_hook registry_listener;
    uint32_t node;
    struct spa_hook core_listener;
    struct spa_hook stream_listener;
    int has_core_listener, has_stream_listener, has_registry_listener;

    /* Negotiated format (loop thread only). */
    int32_t width, height, format;

    /* The newest picture and the state, under `lock`. */
    pthread_mutex_t lock;
    uint8_t *pixels;
    size_t capacity;
    reel_pw_picture picture;
    int state;
    char message[256];
};

static void set_state(struct reel_pw_stream *s, int state, const char *message) {
    pthread_mutex_lock(&s->lock);
    /* The first end or failure is the one that counts. */
    if (s->state != REEL_PW_ENDED && s->state != REEL_PW_FAILED) {
        s->state = state;
        if (message) snprintf(s->message, sizeof s->message, "%s", message);
    }
    pthread_mutex_unlock(&s->lock);
}

static int32_t reel_format(uint32_t spa) {
    switch (spa) {
    case SPA_VIDEO_FORMAT_BGRx: return REEL_PW_FORMAT_BGRX;
    case SPA_VIDEO_FORMAT_BGRA: return REEL_PW_FORMAT_BGRA;
    case SPA_VIDEO_FORMAT_RGBx: return REEL_PW_FORMAT_RGBX;
    case SPA_VIDEO_FORMAT_RGBA: return REEL_PW_FORMAT_RGBA;
    default: return REEL_PW_FORMAT_NONE;
    }
}

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    (void)seq;
    struct reel_pw_stream *s = data;
    if (id != PW_ID_CORE) return;
    char text[256];
    snprintf(text, sizeof text, "the PipeWire connection failed: %s (%s)", message ? message : "", spa_strerror(res));
    set_state(s, REEL_PW_FAILED, text);
    pw_thread_loop_signal(s->loop, false);
}

static const struct pw_core_events core_events = {
    PW_VERSION_CORE_EVENTS,
    .error = on_core_error,
};

/* The node going away is the end of the cast (the portal's backend stopped it or died); the
 * stream itself only pauses then. */
static void on_global_remove(void *data, uint32_t id) {
    struct reel_pw_stream *s = data;
    if (id != s->node) return;
    set_state(s, REEL_PW_ENDED, "the screen cast ended: its PipeWire node went away");
    pw_thread_loop_signal(s->loop, false);
}

static const struct pw_registry_events registry_events = {
    PW_VERSION_REGISTRY_EVENTS,
    .global_remove = on_global_remove,
};

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct reel_pw_stream *s = data;
    char text[256];
    switch (state) {
    case PW_STREAM_STATE_ERROR:
        snprintf(text, sizeof text, "the PipeWire stream failed: %s", error ? error : "unknown error");
        set_state(s, REEL_PW_FAILED, text);
        break;
    case PW_STREAM_STATE_UNCONNECTED:
        if (old != PW_STREAM_STATE_UNCONNECTED)
            set_state(s, REEL_PW_ENDED, "the PipeWire stream was disconnected (the screen cast ended)");
        break;
    case PW_STREAM_STATE_STREAMING:
        pthread_mutex_lock(&s->lock);
        if (s->state == REEL_PW_CONNECTING) s->state = REEL_PW_STREAMING;
        pthread_mutex_unlock(&s->lock);
        break;
    default:
        break;
    }
    pw_thread_loop_signal(s->loop, false);
}

static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct reel_pw_stream *s = data;
    if (param == NULL || id != SPA_PARAM_Format) return;
    uint32_t media_type, media_subtype;
    if (spa_format_parse(param, &media_type, &media_subtype) < 0) return;
    if (media_type != SPA_MEDIA_TYPE_video || media_subtype != SPA_MEDIA_SUBTYPE_raw) return;
    struct spa_video_info_raw info;
    spa_zero(info);
    if (spa_format_video_raw_parse(param, &info) < 0) return;
    s->width = (int32_t)info.size.width;
    s->height = (int32_t)info.size.height;
    s->format = reel_format(info.format);

    /* Shared memory only: MemFd (what compositors without a GPU give) or MemPtr. A producer
     * that offers DMA-BUF only fails to negotiate, with a message saying so. */
    uint8_t buffer[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof buffer);
    const struct spa_pod *params[2];
    params[0] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 16),
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr)));
    params[1] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    pw_stream_update_params(s->stream, params, 2);
}

static void on_process(void *data) {
    struct reel_pw_stream *s = data;
    struct pw_buffer *b = NULL, *newer;
    /* Only the newest buffer matters; give the older ones straight back. */
    while ((newer = pw_stream_dequeue_buffer(s->stream)) != NULL) {
        if (b) pw_stream_queue_buffer(s->stream, b);
        b = newer;
    }
    if (b == NULL) return;
    struct spa_buffer *buf = b->buffer;
    struct spa_meta_header *h = spa_buffer_find_meta_data(buf, SPA_META_Header, sizeof *h);
    struct spa_data *d = &buf->datas[0];
    int corrupted = h && (h->flags & SPA_META_HEADER_FLAG_CORRUPTED);
    if (buf->n_datas < 1 || corrupted || s->format == REEL_PW_FORMAT_NONE) goto done;
    if (d->type == SPA_DATA_DmaBuf && d->data == NULL) {
        set_state(s, REEL_PW_FAILED, "the screen cast delivers DMA-BUF buffers, which Reel does not handle yet");
        goto done;
    }
    if (d->data == NULL || d->chunk == NULL || d->chunk->size == 0) goto done;
    {
        int32_t stride = d->chunk->stride > 0 ? d->chunk->stride : s->width * 4;
        uint32_t offset = d->chunk->offset % (d->maxsize ? d->maxsize : 1);
        size_t needed = (size_t)stride * (size_t)s->height;
        if (stride < s->width * 4 || offset + needed > d->maxsize) goto done;
        pthread_mutex_lock(&s->lock);
        if (s->capacity < needed) {
            uint8_t *grown = realloc(s->pixels, needed);
            if (grown == NULL) { pthread_mutex_unlock(&s->lock); goto done; }
            s->pixels = grown;
            s->capacity = needed;
        }
        memcpy(s->pixels, (const uint8_t *)d->data + offset, needed);
        s->picture.pixels = s->pixels;
        s->picture.width = s->width;
        s->picture.height = s->height;
        s->picture.stride = stride;
        s->picture.format = s->format;
        s->picture.serial += 1;
        if (s->state == REEL_PW_CONNECTING) s->state = REEL_PW_STREAMING;
        pthread_mutex_unlock(&s->lock);
    }
done:
    pw_stream_queue_buffer(s->stream, b);
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .process = on_process,
};

static void fail(char *error, size_t size, const char *what) {
    if (error && size) snprintf(error, size, "%s: %s", what, strerror(errno));
}

reel_pw_stream *reel_pw_stream_open(int fd, uint32_t node, char *error, size_t error_size) {
    pw_init(NULL, NULL);
    struct reel_pw_stream *s = calloc(1, sizeof *s);
    if (s == NULL) { close(fd); fail(error, error_size, "out of memory"); return NULL; }
    pthread_mutex_init(&s->lock, NULL);
    s->loop = pw_thread_loop_new("reel.pipewire", NULL);
    if (s->loop == NULL) { close(fd); fail(error, error_size, "cannot make PipeWire's loop"); reel_pw_stream_close(s); return NULL; }
    s->context = pw_context_new(pw_thread_loop_get_loop(s->loop), NULL, 0);
    if (s->context == NULL) { close(fd); fail(error, error_size, "cannot make a PipeWire context"); reel_pw_stream_close(s); return NULL; }
    if (pw_thread_loop_start(s->loop) < 0) { close(fd); fail(error, error_size, "cannot start PipeWire's thread"); reel_pw_stream_close(s); return NULL; }

    pw_thread_loop_lock(s->loop);
    s->core = pw_context_connect_fd(s->context, fd, NULL, 0);
    if (s->core == NULL) {
        pw_thread_loop_unlock(s->loop);
        fail(error, error_size, "cannot connect to PipeWire through the portal's connection");
        reel_pw_stream_close(s);
        return NULL;
    }
    pw_core_add_listener(s->core, &s->core_listener, &core_events, s);
    s->has_core_listener = 1;
    s->node = node;
    s->registry = pw_core_get_registry(s->core, PW_VERSION_REGISTRY, 0);
    if (s->registry) {
        pw_registry_add_listener(s->registry, &s->registry_listener, &registry_events, s);
        s->has_registry_listener = 1;
    }
    s->stream = pw_stream_new(s->core, "Reel screen",
        pw_properties_new(PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE, "Screen", NULL));
    if (s->stream == NULL) {
        pw_thread_loop_unlock(s->loop);
        fail(error, error_size, "cannot make a PipeWire stream");
        reel_pw_stream_close(s);
        return NULL;
    }
    pw_stream_add_listener(s->stream, &s->stream_listener, &stream_events, s);
    s->has_stream_listener = 1;

    uint8_t buffer[1024];
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof buffer);
    struct spa_rectangle size_default = SPA_RECTANGLE(1920, 1080), size_min = SPA_RECTANGLE(1, 1), size_max = SPA_RECTANGLE(16384, 16384);
    struct spa_fraction rate_default = SPA_FRACTION(30, 1), rate_min = SPA_FRACTION(0, 1), rate_max = SPA_FRACTION(1000, 1);
    const struct spa_pod *params[1];
    params[0] = spa_pod_builder_add_object(&b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(5, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRx,
                                                        SPA_VIDEO_FORMAT_BGRA, SPA_VIDEO_FORMAT_RGBx, SPA_VIDEO_FORMAT_RGBA),
        SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&size_default, &size_min, &size_max),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_CHOICE_RANGE_Fraction(&rate_default, &rate_min, &rate_max));
    int result = pw_stream_connect(s->stream, PW_DIRECTION_INPUT, node,
                                   PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS, params, 1);
    pw_thread_loop_unlock(s->loop);
    if (result < 0) {
        if (error && error_size) snprintf(error, error_size, "cannot connect to PipeWire node %u: %s", node, spa_strerror(result));
        reel_pw_stream_close(s);
        return NULL;
    }
    return s;
}

int reel_pw_stream_state(reel_pw_stream *s, char *message, size_t message_size) {
    pthread_mutex_lock(&s->lock);
    int state = s->state;
    if (message && message_size) snprintf(message, message_size, "%s", s->message);
    pthread_mutex_unlock(&s->lock);
    return state;
}

int reel_pw_stream_lock_picture(reel_pw_stream *s, reel_pw_picture *picture) {
    pthread_mutex_lock(&s->lock);
    if (s->picture.serial == 0) {
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    *picture = s->picture;
    return 1;
}

void reel_pw_stream_unlock_picture(reel_pw_stream *s) {
    pthread_mutex_unlock(&s->lock);
}

void reel_pw_stream_close(reel_pw_stream *s) {
    if (s == NULL) return;
    if (s->loop) {
        pw_thread_loop_lock(s->loop);
        if (s->stream) pw_stream_disconnect(s->stream);
        pw_thread_loop_unlock(s->loop);
        pw_thread_loop_stop(s->loop);
    }
    if (s->stream) {
        if (s->has_stream_listener) spa_hook_remove(&s->stream_listener);
        pw_stream_destroy(s->stream);
    }
    if (s->registry) {
        if (s->has_registry_listener) spa_hook_remove(&s->registry_listener);
        pw_proxy_destroy((struct pw_proxy *)s->registry);
    }
    if (s->core) {
        if (s->has_core_listener) spa_hook_remove(&s->core_listener);
        pw_core_disconnect(s->core);
    }
    if (s->context) pw_context_destroy(s->context);
    if (s->loop) pw_thread_loop_destroy(s->loop);
    pthread_mutex_destroy(&s->lock);
    free(s->pixels);
    free(s);
}

void reel_fit_picture(const uint8_t *source, int32_t source_format, int32_t source_stride,
                      int32_t crop_x, int32_t crop_y, int32_t crop_width, int32_t crop_height,
                      uint8_t *destination, int32_t destination_stride, int32_t destination_width, int32_t destination_height,
                      int32_t fit_x, int32_t fit_y, int32_t fit_width, int32_t fit_height) {
    int swap = source_format == REEL_PW_FORMAT_RGBX || source_format == REEL_PW_FORMAT_RGBA;
    int same_size = crop_width == fit_width && crop_height == fit_height;
    int32_t *columns = NULL;
    if (!same_size) {
        columns = malloc(sizeof(int32_t) * (size_t)(fit_width > 0 ? fit_width : 1));
        if (columns == NULL) return;
        for (int32_t x = 0; x < fit_width; x++)
            columns[x] = crop_x + (int32_t)(((int64_t)x * crop_width + crop_width / 2) / fit_width);
    }
    for (int32_t y = 0; y < destination_height; y++) {
        uint32_t *row = (uint32_t *)(destination + (size_t)y * (size_t)destination_stride);
        if (y < fit_y || y >= fit_y + fit_height) {
            for (int32_t x = 0; x < destination_width; x++) row[x] = 0xFF000000u;
            continue;
        }
        for (int32_t x = 0; x < fit_x; x++) row[x] = 0xFF000000u;
        for (int32_t x = fit_x + fit_width; x < destination_width; x++) row[x] = 0xFF000000u;
        int32_t sy = same_size ? crop_y + (y - fit_y)
                               : crop_y + (int32_t)(((int64_t)(y - fit_y) * crop_height + crop_height / 2) / fit_height);
        if (sy >= crop_y + crop_height) sy = crop_y + crop_height - 1;
        const uint32_t *in = (const uint32_t *)(source + (size_t)sy * (size_t)source_stride);
        uint32_t *out = row + fit_x;
        for (int32_t x = 0; x < fit_width; x++) {
            uint32_t p = same_size ? in[crop_x + x] : in[columns[x]];
            /* Bytes in memory B,G,R,X (little-endian 0xXXRRGGBB) or R,G,B,X (0xXXBBGGRR). */
            if (swap) p = (p & 0x0000FF00u) | ((p & 0xFFu) << 16) | ((p >> 16) & 0xFFu);
            out[x] = p | 0xFF000000u;
        }
    }
    free(columns);
}

const char *reel_pw_library_version(void) {
    return pw_get_library_version();
}
