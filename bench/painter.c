/*
 * painter: keeps an X screen busy for bench/screen.py, as cheaply as possible.
 *
 *   painter DISPLAY still  FRAMES.bgra COUNT LOG
 *   painter DISPLAY motion FRAMES.bgra COUNT LOG [RATE]
 *
 * FRAMES.bgra holds COUNT raw BGRA frames of the screen's size (bench/screen.py makes them with
 * ffmpeg's testsrc2). They are uploaded once into server-side pixmaps, so painting costs the
 * painter almost nothing: the X server copies a pixmap onto the root window.
 *
 * still:  paints frame 0 once as the root window's background, prints "ready", then sleeps.
 * motion: paints frame i % COUNT at RATE per second (default 60) and, over the top 16 rows,
 *         a barcode of the paint index i. Each paint's CLOCK_MONOTONIC time is logged to LOG
 *         as "i nanoseconds", so the moment a recorded frame was on screen can be read back
 *         from its barcode. Paints that fall behind are skipped (the index follows the clock).
 *
 * Barcode: 24 blocks of 64x16 pixels from the left edge: block 0 white, block 1 black
 * (markers), blocks 2..23 the index, most significant bit first, white = 1. It is drawn with
 * one PutImage, so a capture never sees half of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xcb/xcb.h>

enum { BAR_BLOCKS = 24, BAR_BLOCK_W = 64, BAR_H = 16, BAR_BITS = BAR_BLOCKS - 2 };

static volatile sig_atomic_t stop_requested = 0;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t t) {
    struct timespec ts = { .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop_requested) {}
}

static void sync_server(xcb_connection_t *c) {
    free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), NULL));
}

static void die(const char *what) {
    fprintf(stderr, "painter: %s\n", what);
    exit(1);
}

/* Uploads one frame into a pixmap in bands that fit the maximum request length. */
static void upload(xcb_connection_t *c, xcb_pixmap_t pixmap, xcb_gcontext_t gc, uint8_t depth,
                   const uint8_t *pixels, int width, int height) {
    size_t max_bytes = (size_t)xcb_get_maximum_request_length(c) * 4;
    size_t row = (size_t)width * 4;
    int band = (int)((max_bytes - 64) / row);
    if (band < 1) die("the server's maximum request is smaller than one row");
    if (band > 256) band = 256;
    for (int y = 0; y < height; y += band) {
        int h = y + band <= height ? band : height - y;
        xcb_put_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, pixmap, gc, (uint16_t)width, (uint16_t)h, 0, (int16_t)y, 0, depth,
                      (uint32_t)(row * (size_t)h), pixels + row * (size_t)y);
    }
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: painter DISPLAY still|motion FRAMES.bgra COUNT LOG [RATE]\n");
        return 2;
    }
    const char *display = argv[1];
    int motion = strcmp(argv[2], "motion") == 0;
    const char *frames_path = argv[3];
    int count = atoi(argv[4]);
    const char *log_path = argv[5];
    double rate = argc > 6 ? atof(argv[6]) : 60.0;
    if (count < 1 || rate <= 0) die("bad COUNT or RATE");
    if (!motion) count = 1;

    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    xcb_connection_t *c = xcb_connect(display, NULL);
    if (!c || xcb_connection_has_error(c)) die("cannot connect to the X display");
    xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    int width = screen->width_in_pixels, height = screen->height_in_pixels;
    uint8_t depth = screen->root_depth;
    xcb_window_t root = screen->root;
    if (depth != 24) die("the screen must be 24-bit");

    size_t frame_bytes = (size_t)width * height * 4;
    uint8_t *buffer = malloc(frame_bytes);
    if (!buffer) die("out of memory");
    FILE *frames = fopen(frames_path, "rb");
    if (!frames) die("cannot open the frames file");

    xcb_gcontext_t gc = xcb_generate_id(c);
    xcb_create_gc(c, gc, root, 0, NULL);
    xcb_pixmap_t *pixmaps = calloc((size_t)count, sizeof *pixmaps);
    for (int i = 0; i < count; i++) {
        if (fread(buffer, 1, frame_bytes, frames) != frame_bytes) die("the frames file is too short");
        pixmaps[i] = xcb_generate_id(c);
        xcb_create_pixmap(c, depth, pixmaps[i], root, (uint16_t)width, (uint16_t)height);
        upload(c, pixmaps[i], gc, depth, buffer, width, height);
        sync_server(c);
    }
    fclose(frames);
    free(buffer);

    if (!motion) {
        uint32_t values[] = { pixmaps[0] };
        xcb_change_window_attributes(c, root, XCB_CW_BACK_PIXMAP, values);
        xcb_clear_area(c, 0, root, 0, 0, 0, 0);
        sync_server(c);
        printf("ready\n");
        fflush(stdout);
        while (!stop_requested) pause();
        xcb_disconnect(c);
        return 0;
    }

    FILE *log = fopen(log_path, "w");
    if (!log) die("cannot open the log");
    int bar_w = BAR_BLOCKS * BAR_BLOCK_W;
    uint32_t *bar = malloc((size_t)bar_w * BAR_H * 4);
    if (!bar) die("out of memory");

    int64_t period = (int64_t)(1e9 / rate);
    int64_t t0 = now_ns() + 100000000;  /* start on a clean slot 0.1 s from now */
    int64_t index = 0;
    int started = 0;
    while (!stop_requested) {
        sleep_until(t0 + index * period);
        if (stop_requested) break;
        /* The picture below the barcode, then the barcode in one request. */
        xcb_copy_area(c, pixmaps[index % count], root, gc, 0, BAR_H, 0, BAR_H, (uint16_t)width, (uint16_t)(height - BAR_H));
        for (int b = 0; b < BAR_BLOCKS; b++) {
            int bit = b == 0 ? 1 : b == 1 ? 0 : (int)((index >> (BAR_BITS - 1 - (b - 2))) & 1);
            uint32_t colour = bit ? 0x00FFFFFFu : 0x00000000u;
            for (int y = 0; y < BAR_H; y++) {
                uint32_t *p = bar + (size_t)y * bar_w + (size_t)b * BAR_BLOCK_W;
                for (int x = 0; x < BAR_BLOCK_W; x++) p[x] = colour;
            }
        }
        xcb_put_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, gc, (uint16_t)bar_w, BAR_H, 0, 0, 0, depth,
                      (uint32_t)((size_t)bar_w * BAR_H * 4), (const uint8_t *)bar);
        int64_t sent = now_ns();
        /* One round trip per paint: the queue never grows, and the paint is on screen now. */
        sync_server(c);
        fprintf(log, "%lld %lld %lld\n", (long long)index, (long long)sent, (long long)now_ns());
        if (!started) {
            started = 1;
            printf("ready\n");
            fflush(stdout);
        }
        if ((index & 31) == 0) fflush(log);
        index++;
        /* Fell behind by more than a slot: follow the clock instead of bursting. */
        int64_t due = (now_ns() - t0) / period;
        if (due > index) index = due;
        if (xcb_connection_has_error(c)) die("lost the X display");
    }
    fclose(log);
    xcb_disconnect(c);
    return 0;
}
