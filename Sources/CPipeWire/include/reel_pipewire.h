#ifndef REEL_PIPEWIRE_H
#define REEL_PIPEWIRE_H
/* The little of libpipewire that Reel's Wayland screen source needs, behind plain C types:
 * SPA (PipeWire's plugin API) is mostly static inline functions and macros that Swift cannot
 * call, so reel_pipewire.c does the stream set-up, the format negotiation and the buffer
 * handling, and keeps the newest picture for the capture thread to take. */
#include <stddef.h>
#include <stdint.h>

/* Pixel formats a screen stream may carry (the byte order in memory). */
enum reel_pw_format {
    REEL_PW_FORMAT_NONE = 0,
    REEL_PW_FORMAT_BGRX = 1,
    REEL_PW_FORMAT_BGRA = 2,
    REEL_PW_FORMAT_RGBX = 3,
    REEL_PW_FORMAT_RGBA = 4,
};

/* Where a stream is. */
enum reel_pw_state {
    REEL_PW_CONNECTING = 0,  /* negotiating; no picture yet */
    REEL_PW_STREAMING = 1,
    REEL_PW_ENDED = 2,       /* the producer went away (the cast was stopped) */
    REEL_PW_FAILED = 3,      /* an error: the message says which */
};

/* A picture: pixels, size and layout, and a serial number that grows with each new one. */
typedef struct reel_pw_picture {
    const uint8_t *pixels;
    int32_t width, height, stride;
    int32_t format; /* enum reel_pw_format */
    uint64_t serial;
} reel_pw_picture;

typedef struct reel_pw_stream reel_pw_stream;

/* Connects to the PipeWire remote `fd` (taken over: closed by the stream, also on failure) and
 * starts a stream from `node`. NULL on failure, with a message in `error`. */
reel_pw_stream *reel_pw_stream_open(int fd, uint32_t node, char *error, size_t error_size);

/* The stream's state; for ENDED and FAILED, a message in `message`. */
int reel_pw_stream_state(reel_pw_stream *stream, char *message, size_t message_size);

/* Locks the newest picture for reading and fills `picture`; 0 when there is none yet (the lock
 * is then not held). Unlock with reel_pw_stream_unlock_picture soon: the stream waits. */
int reel_pw_stream_lock_picture(reel_pw_stream *stream, reel_pw_picture *picture);
void reel_pw_stream_unlock_picture(reel_pw_stream *stream);

/* Disconnects and frees everything. */
void reel_pw_stream_close(reel_pw_stream *stream);

/* Converts the `crop` part of a picture to BGRA (alpha 255) into the `fit` rectangle of a
 * BGRA destination, scaled by nearest neighbour, and paints the rest of the destination black
 * (letterbox). The caller keeps every rectangle inside its picture. */
void reel_fit_picture(const uint8_t *source, int32_t source_format, int32_t source_stride,
                      int32_t crop_x, int32_t crop_y, int32_t crop_width, int32_t crop_height,
                      uint8_t *destination, int32_t destination_stride, int32_t destination_width, int32_t destination_height,
                      int32_t fit_x, int32_t fit_y, int32_t fit_width, int32_t fit_height);

/* The version of libpipewire loaded. */
const char *reel_pw_library_version(void);

#endif
