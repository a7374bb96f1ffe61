#include "reel_pipewire_audio.h"
#include "reel_pipewire_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pipewire/pipewire.h>
#include <spa/node/io.h>
#include <spa/param/audio/format-utils.h>
#include <spa/pod/builder.h>
#include <spa/utils/result.h>

struct reel_pw_capture {
    struct reel_pw_connection c;
    struct pw_registry *registry;
    struct spa_hook registry_listener;
    int has_registry_listener;
    struct pw_proxy *sink;
    struct spa_hook sink_listener;
    int has_sink_listener;
    struct pw_stream *stream;
    struct spa_hook stream_listener;
    int has_stream_listener;
    uint32_t sink_id;
    uint32_t channels, bytes_per_frame, rate;

    /* The graph's position, as the stream's io gives it (read on the data thread), and the
     * driver's clock as the previous cycle saw it: a cycle the stream missed shows as the
     * clock having run further than the previous cycle lasted. */
    struct spa_io_position *position;
    int has_cycle;
    uint32_t cycle_clock;
    uint64_t cycle_position, cycle_duration;

    /* The sound that arrived and the state, under `lock` (the loop's threads write it). */
    pthread_mutex_t lock;
    pthread_cond_t arrived;
    uint8_t *ring;
    size_t ring_size, ring_start, ring_count;
    /* Silence owed after what the ring holds, in frames: sound lost (cycles missed, or a full
     * ring). Nothing newer enters the ring while any is owed, so the count of frames the reader
     * gets is the graph's, and each loss is at its place. */
    uint64_t owed;
    /* Frames put in stream order since the open (sound and silence owed), and the losses not
     * yet taken by the reader: where each began (in that count) and how long it is. */
    uint64_t written;
    reel_pw_loss losses[REEL_PW_LOSSES];
    int loss_count;
    uint64_t newest_ns;
    int flowing;
    int failed;
    char message[256];
};

static void capture_fail(struct reel_pw_capture *c, const char *message) {
    pthread_mutex_lock(&c->lock);
    if (!c->failed) {
        c->failed = 1;
        reel_copy_text(c->message, sizeof c->message, message);
    }
    pthread_cond_broadcast(&c->arrived);
    pthread_mutex_unlock(&c->lock);
    if (c->c.loop) pw_thread_loop_signal(c->c.loop, false);
}

static void on_capture_global_remove(void *data, uint32_t id) {
    struct reel_pw_capture *c = data;
    if (id == c->sink_id && c->sink_id != SPA_ID_INVALID)
        capture_fail(c, "Reel's PipeWire sink for the application's sound was removed by another program");
}

static const struct pw_registry_events capture_registry_events = {
    PW_VERSION_REGISTRY_EVENTS,
    .global_remove = on_capture_global_remove,
};

static void on_sink_bound(void *data, uint32_t global_id) {
    struct reel_pw_capture *c = data;
    c->sink_id = global_id;
    pw_thread_loop_signal(c->c.loop, false);
}

static void on_sink_error(void *data, int seq, int res, const char *message) {
    (void)seq;
    char text[256];
    snprintf(text, sizeof text, "PipeWire refused Reel's sink: %s (%s)", message ? message : "", spa_strerror(res));
    capture_fail(data, text);
}

static const struct pw_proxy_events sink_events = {
    PW_VERSION_PROXY_EVENTS,
    .bound = on_sink_bound,
    .error = on_sink_error,
};

static void on_capture_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    (void)seq;
    if (id != PW_ID_CORE) return;
    char text[256];
    snprintf(text, sizeof text, "the PipeWire connection failed: %s (%s)", message ? message : "", spa_strerror(res));
    capture_fail(data, text);
}

static const struct pw_core_events capture_core_events = {
    PW_VERSION_CORE_EVENTS,
    .error = on_capture_core_error,
};

static void on_capture_state(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    (void)old;
    struct reel_pw_capture *c = data;
    if (state == PW_STREAM_STATE_ERROR) {
        char text[256];
        snprintf(text, sizeof text, "the PipeWire stream failed: %s", error ? error : "unknown error");
        capture_fail(c, text);
    } else if (state == PW_STREAM_STATE_UNCONNECTED && old != PW_STREAM_STATE_UNCONNECTED) {
        capture_fail(c, "the PipeWire stream was disconnected");
    }
    pw_thread_loop_signal(c->c.loop, false);
}

static void on_capture_io_changed(void *data, uint32_t id, void *area, uint32_t size) {
    struct reel_pw_capture *c = data;
    if (id == SPA_IO_Position) {
        c->position = size >= sizeof(struct spa_io_position) ? area : NULL;
        c->has_cycle = 0;
    }
}

/* Notes `frames` lost at the end of what was put in stream order. Under `lock`. */
static void note_loss(struct reel_pw_capture *c, uint64_t frames, reel_pw_loss_kind kind) {
    if (frames == 0) return;
    reel_pw_loss *last = c->loss_count > 0 ? &c->losses[c->loss_count - 1] : NULL;
    if (last && last->kind == kind && last->start + last->frames == c->written) {
        last->frames += frames;
    } else if (c->loss_count < REEL_PW_LOSSES) {
        c->losses[c->loss_count++] = (reel_pw_loss){ .start = c->written, .frames = frames, .kind = kind };
    } else {
        /* The reader has not taken them for long: the last one grows (its place is then
         * approximate; the count of frames stays exact), an overflow if either was (a loss
         * the recording cannot do without is not said as a busy machine's). */
        last->frames += frames;
        if (kind == REEL_PW_LOSS_OVERFLOW) last->kind = kind;
    }
    c->owed += frames;
    c->written += frames;
}

/* Puts what is owed into the ring while there is room. Under `lock`. */
static void pay_owed(struct reel_pw_capture *c) {
    while (c->owed > 0 && c->ring_count + c->bytes_per_frame <= c->ring_size) {
        for (uint32_t i = 0; i < c->bytes_per_frame; i++) c->ring[(c->ring_start + c->ring_count + i) % c->ring_size] = 0;
        c->ring_count += c->bytes_per_frame;
        c->owed--;
    }
}

/* How many frames of this stream the graph's driver ran past since the previous cycle
 * without this stream (0 for the first cycle, or when the driver changed). */
static uint64_t missed_frames(struct reel_pw_capture *c) {
    struct spa_io_position *p = c->position;
    if (p == NULL) return 0;
    uint32_t clock = p->clock.id;
    uint64_t position = p->clock.position, duration = p->clock.duration;
    struct spa_fraction rate = p->clock.rate;
    uint64_t missed = 0;
    if (c->has_cycle && clock == c->cycle_clock && rate.num > 0 && rate.denom > 0
        && position > c->cycle_position + c->cycle_duration) {
        uint64_t ticks = position - (c->cycle_position + c->cycle_duration);
        missed = ticks * rate.num * c->rate / rate.denom;
    }
    c->has_cycle = 1;
    c->cycle_clock = clock;
    c->cycle_position = position;
    c->cycle_duration = duration;
    return missed;
}

static void on_capture_process(void *data) {
    struct reel_pw_capture *c = data;
    uint64_t missed = missed_frames(c);
    if (missed > 0) {
        /* Cycles missed on a busy machine come a few milliseconds at a time; a gap longer than
         * the ring holds is reel not run for longer than its capture keeps sound (the process
         * was stopped): a stall, lost as sound that overflowed the ring is. */
        reel_pw_loss_kind kind = missed * c->bytes_per_frame > c->ring_size ? REEL_PW_LOSS_OVERFLOW : REEL_PW_LOSS_MISSED_CYCLES;
        pthread_mutex_lock(&c->lock);
        note_loss(c, missed, kind);
        pthread_mutex_unlock(&c->lock);
    }
    struct pw_buffer *b = pw_stream_dequeue_buffer(c->stream);
    if (b == NULL) return;
    struct spa_buffer *buf = b->buffer;
    if (buf->n_datas > 0 && buf->datas[0].data && buf->datas[0].chunk) {
        struct spa_data *d = &buf->datas[0];
        uint32_t offset = d->chunk->offset % (d->maxsize ? d->maxsize : 1);
        uint32_t size = d->chunk->size;
        if (offset + size > d->maxsize) size = d->maxsize - offset;
        size -= size % c->bytes_per_frame;
        const uint8_t *bytes = (const uint8_t *)d->data + offset;
        /* When the sound was rendered: the graph cycle's time (not when this thread got to run,
         * later on a loaded machine), less the delay from the sink, plus the buffer's length
         * for its newest sample. */
        uint64_t now = reel_monotonic_ns();
        struct pw_time time;
        if (pw_stream_get_time_n(c->stream, &time, sizeof time) == 0 && time.now > 0 && time.rate.denom > 0) {
            int64_t delay = time.delay * (int64_t)time.rate.num * 1000000000ll / (int64_t)time.rate.denom;
            int64_t frames = (int64_t)(size / c->bytes_per_frame);
            int64_t newest = time.now - delay + (frames > 0 ? (frames - 1) * 1000000000ll / (int64_t)c->rate : 0);
            if (newest > 0 && (uint64_t)newest < now + 1000000000ull) now = (uint64_t)newest;
        }
        pthread_mutex_lock(&c->lock);
        pay_owed(c);
        /* Nobody read for seconds: what does not fit is lost, and owed as silence. */
        size_t room = c->owed > 0 ? 0 : c->ring_size - c->ring_count;
        size_t fits = size < room ? size : room;
        fits -= fits % c->bytes_per_frame;
        for (size_t i = 0; i < fits; i++) c->ring[(c->ring_start + c->ring_count + i) % c->ring_size] = bytes[i];
        c->ring_count += fits;
        c->written += fits / c->bytes_per_frame;
        note_loss(c, (size - fits) / c->bytes_per_frame, REEL_PW_LOSS_OVERFLOW);
        if (size > 0) {
            c->newest_ns = now;
            c->flowing = 1;
            pthread_cond_broadcast(&c->arrived);
        }
        pthread_mutex_unlock(&c->lock);
    }
    pw_stream_queue_buffer(c->stream, b);
}

static const struct pw_stream_events capture_stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_capture_state,
    .io_changed = on_capture_io_changed,
    .process = on_capture_process,
};

/* Whether the sink is there (or the capture failed). */
static int sink_bound(void *data) {
    struct reel_pw_capture *c = data;
    return c->sink_id != SPA_ID_INVALID || c->failed;
}

reel_pw_capture *reel_pw_capture_open(const char *remote, const char *sink_name, uint32_t rate, uint32_t channels,
                                      char *error, size_t error_size) {
    if (channels < 1 || channels > 2) { reel_copy_text(error, error_size, "Reel's PipeWire sink has 1 or 2 channels"); return NULL; }
    struct reel_pw_capture *c = calloc(1, sizeof *c);
    if (c == NULL) { reel_copy_text(error, error_size, "out of memory"); return NULL; }
    pthread_mutex_init(&c->lock, NULL);
    reel_init_condition(&c->arrived);
    c->sink_id = SPA_ID_INVALID;
    c->channels = channels;
    c->rate = rate;
    c->bytes_per_frame = channels * sizeof(float);
    c->ring_size = (size_t)rate * c->bytes_per_frame * 4;
    c->ring = malloc(c->ring_size);
    if (c->ring == NULL) { reel_copy_text(error, error_size, "out of memory"); reel_pw_capture_close(c); return NULL; }
    if (reel_connect(&c->c, remote, "reel.pipewire-capture", error, error_size) < 0) { reel_pw_capture_close(c); return NULL; }

    const char *position = channels == 1 ? "[ MONO ]" : "[ FL FR ]";
    pw_thread_loop_lock(c->c.loop);
    pw_core_add_listener(c->c.core, &c->c.core_listener, &capture_core_events, c);
    c->c.has_core_listener = 1;
    c->registry = pw_core_get_registry(c->c.core, PW_VERSION_REGISTRY, 0);
    if (c->registry) {
        pw_registry_add_listener(c->registry, &c->registry_listener, &capture_registry_events, c);
        c->has_registry_listener = 1;
    }
    /* Internal: PulseAudio clients do not see it, so nothing plays into it by mistake. */
    struct pw_properties *sink_props = pw_properties_new(
        PW_KEY_FACTORY_NAME, "support.null-audio-sink", PW_KEY_NODE_NAME, sink_name,
        PW_KEY_NODE_DESCRIPTION, "Reel application audio", PW_KEY_MEDIA_CLASS, "Audio/Sink/Internal",
        PW_KEY_NODE_VIRTUAL, "true", PW_KEY_OBJECT_LINGER, "false", SPA_KEY_AUDIO_POSITION, position,
        "monitor.channel-volumes", "false", NULL);
    pw_properties_setf(sink_props, PW_KEY_AUDIO_CHANNELS, "%u", channels);
    pw_properties_setf(sink_props, PW_KEY_AUDIO_RATE, "%u", rate);
    c->sink = pw_core_create_object(c->c.core, "adapter", PW_TYPE_INTERFACE_Node, PW_VERSION_NODE, &sink_props->dict, 0);
    pw_properties_free(sink_props);
    if (c->sink) {
        pw_proxy_add_listener(c->sink, &c->sink_listener, &sink_events, c);
        c->has_sink_listener = 1;
    }
    /* The stream reads the sink's monitor: the session manager links it, as it links any
     * recording of a sink, once the sink is there. */
    int result = -1;
    if (c->sink == NULL || reel_wait_until(&c->c, sink_bound, c, 5) < 0 || c->failed) {
        pw_thread_loop_unlock(c->c.loop);
        reel_copy_text(error, error_size, c->failed ? c->message : "PipeWire did not make Reel's sink within 5 s");
        reel_pw_capture_close(c);
        return NULL;
    }
    struct pw_properties *stream_props = pw_properties_new(
        PW_KEY_MEDIA_TYPE, "Audio", PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE, "Production",
        PW_KEY_STREAM_CAPTURE_SINK, "true", PW_KEY_NODE_DONT_RECONNECT, "true", NULL);
    pw_properties_setf(stream_props, PW_KEY_NODE_NAME, "%s-capture", sink_name);
    pw_properties_setf(stream_props, PW_KEY_TARGET_OBJECT, "%s", sink_name);
    pw_properties_setf(stream_props, PW_KEY_NODE_LATENCY, "%u/%u", rate / 100, rate);
    c->stream = pw_stream_new(c->c.core, "Reel application audio", stream_props);
    if (c->stream) {
        pw_stream_add_listener(c->stream, &c->stream_listener, &capture_stream_events, c);
        c->has_stream_listener = 1;
        uint8_t buffer[1024];
        struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, sizeof buffer);
        struct spa_audio_info_raw info = SPA_AUDIO_INFO_RAW_INIT(.format = SPA_AUDIO_FORMAT_F32, .rate = rate, .channels = channels);
        if (channels == 1) {
            info.position[0] = SPA_AUDIO_CHANNEL_MONO;
        } else {
            info.position[0] = SPA_AUDIO_CHANNEL_FL;
            info.position[1] = SPA_AUDIO_CHANNEL_FR;
        }
        const struct spa_pod *params[1] = { spa_format_audio_raw_build(&b, SPA_PARAM_EnumFormat, &info) };
        result = pw_stream_connect(c->stream, PW_DIRECTION_INPUT, PW_ID_ANY,
                                   PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS | PW_STREAM_FLAG_RT_PROCESS, params, 1);
    }
    pw_thread_loop_unlock(c->c.loop);
    /* The sound comes on the stream's real-time thread, which signals `arrived`. */
    int flowing = 0;
    if (result >= 0) {
        uint64_t deadline = reel_monotonic_ns() + 5000000000ull;
        pthread_mutex_lock(&c->lock);
        while (!c->flowing && !c->failed && reel_monotonic_ns() < deadline) reel_wait_for(&c->arrived, &c->lock, 100000);
        flowing = c->flowing && !c->failed;
        pthread_mutex_unlock(&c->lock);
    }
    if (!flowing) {
        reel_copy_text(error, error_size, c->failed ? c->message : result < 0 ? "PipeWire refused Reel's stream"
                  : "no sound came from Reel's PipeWire sink within 5 s (is WirePlumber, PipeWire's session manager, running?)");
        reel_pw_capture_close(c);
        return NULL;
    }
    return c;
}

int reel_pw_capture_wait(reel_pw_capture *c, int32_t timeout_us, char *error, size_t error_size) {
    pthread_mutex_lock(&c->lock);
    if (c->ring_count == 0 && c->owed == 0 && !c->failed) reel_wait_for(&c->arrived, &c->lock, timeout_us);
    int result = c->ring_count > 0 || c->owed > 0 ? 1 : c->failed ? -1 : 0;
    if (result < 0) reel_copy_text(error, error_size, c->message);
    pthread_mutex_unlock(&c->lock);
    return result;
}

size_t reel_pw_capture_read(reel_pw_capture *c, uint8_t *buffer, size_t capacity, uint64_t *newest_ns) {
    pthread_mutex_lock(&c->lock);
    size_t take = c->ring_count < capacity ? c->ring_count : capacity;
    take -= take % c->bytes_per_frame;
    for (size_t i = 0; i < take; i++) buffer[i] = c->ring[(c->ring_start + i) % c->ring_size];
    c->ring_start = (c->ring_start + take) % c->ring_size;
    c->ring_count -= take;
    /* Read to the end of the ring: the silence owed comes next. */
    if (c->ring_count == 0 && c->owed > 0 && take < capacity) {
        uint64_t frames = (capacity - take) / c->bytes_per_frame;
        if (frames > c->owed) frames = c->owed;
        memset(buffer + take, 0, frames * c->bytes_per_frame);
        take += frames * c->bytes_per_frame;
        c->owed -= frames;
    }
    if (newest_ns) *newest_ns = c->newest_ns;
    pthread_mutex_unlock(&c->lock);
    return take;
}

int reel_pw_capture_take_losses(reel_pw_capture *c, reel_pw_loss *losses, int capacity) {
    pthread_mutex_lock(&c->lock);
    int count = c->loss_count < capacity ? c->loss_count : capacity;
    memcpy(losses, c->losses, (size_t)count * sizeof *losses);
    memmove(c->losses, c->losses + count, (size_t)(c->loss_count - count) * sizeof *c->losses);
    c->loss_count -= count;
    pthread_mutex_unlock(&c->lock);
    return count;
}

void reel_pw_capture_close(reel_pw_capture *c) {
    if (c == NULL) return;
    if (c->c.loop) pw_thread_loop_lock(c->c.loop);
    if (c->stream) {
        pw_stream_disconnect(c->stream);
        if (c->has_stream_listener) spa_hook_remove(&c->stream_listener);
        pw_stream_destroy(c->stream);
    }
    if (c->sink) {
        if (c->has_sink_listener) spa_hook_remove(&c->sink_listener);
        pw_proxy_destroy(c->sink);
    }
    if (c->registry) {
        if (c->has_registry_listener) spa_hook_remove(&c->registry_listener);
        pw_proxy_destroy((struct pw_proxy *)c->registry);
    }
    if (c->c.loop) pw_thread_loop_unlock(c->c.loop);
    reel_disconnect(&c->c);
    pthread_cond_destroy(&c->arrived);
    pthread_mutex_destroy(&c->lock);
    free(c->ring);
    free(c);
}
