/*
 * painter: keeps an X screen busy for bench/screen.py, as cheaply as possible.
 *
 *   painter DISPLAY still   FRAMES.bgra COUNT LOG
 *   painter DISPLAY motion  FRAMES.bgra COUNT LOG [RATE]
 *   painter DISPLAY desktop FRAMES.bgra COUNT LOG RATE BACKGROUND.bgra WxH+X+Y BLOCK_W LAP_S
 *
 * FRAMES.bgra holds COUNT raw BGRA frames of the screen's size (desktop: of the region's size;
 * bench/screen.py makes them with ffmpeg's testsrc2). They are uploaded once into server-side
 * pixmaps, so painting costs the painter almost nothing: the X server copies a pixmap onto the
 * root window.
 *
 * still:   paints frame 0 once as the root window's background, prints "ready", then sleeps.
 * motion:  paints frame i % COUNT at RATE per second (default 60) and, over the top 16 rows,
 *          a barcode of the paint index i. Each paint's CLOCK_MONOTONIC time is logged to LOG
 *          as "i sent done" (nanoseconds), so the moment a recorded frame was on screen can be
 *          read back from its barcode. Paints that fall behind are skipped (the index follows
 *          the clock).
 * desktop: BACKGROUND.bgra (one screen-sized frame: a desktop with windows) is the root
 *          window's background. At RATE per second frame i % COUNT is painted into the region
 *          WxH+X+Y (a video playing in a window) with the barcode over the region's top 16
 *          rows, and the pointer is warped one step along an ellipse (centre (W/2, 0.6 H),
 *          radii 0.4 W and 0.3 H of the screen, one lap in LAP_S seconds), so the cursor moves
 *          every paint. With MOVE_S and REST_S it moves for MOVE_S seconds, then rests for
 *          REST_S (not warped), and so on, as a presenter's pointer does; the lap counts the
 *          moving time only. The pointer gets the usual arrow (left_ptr). Logged like motion.
 *
 * Barcode: 24 blocks of BLOCK_W x 16 pixels (64 in motion) from the left edge of the painted
 * area: block 0 white, block 1 black (markers), blocks 2..23 the index, most significant bit
 * first, white = 1. It is drawn with one PutImage, so a capture never sees half of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
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

/* Reads COUNT frames of width x height from path into new pixmaps. */
static xcb_pixmap_t *load_pixmaps(xcb_connection_t *c, xcb_window_t root, xcb_gcontext_t gc, uint8_t depth,
                                  const char *path, int count, int width, int height) {
    size_t frame_bytes = (size_t)width * height * 4;
    uint8_t *buffer = malloc(frame_bytes);
    if (!buffer) die("out of memory");
    FILE *frames = fopen(path, "rb");
    if (!frames) die("cannot open a frames file");
    xcb_pixmap_t *pixmaps = calloc((size_t)count, sizeof *pixmaps);
    if (!pixmaps) die("out of memory");
    for (int i = 0; i < count; i++) {
        if (fread(buffer, 1, frame_bytes, frames) != frame_bytes) die("a frames file is too short");
        pixmaps[i] = xcb_generate_id(c);
        xcb_create_pixmap(c, depth, pixmaps[i], root, (uint16_t)width, (uint16_t)height);
        upload(c, pixmaps[i], gc, depth, buffer, width, height);
        sync_server(c);
    }
    fclose(frames);
    free(buffer);
    return pixmaps;
}

/* Makes pixmap the root window's background and shows it. */
static void set_background(xcb_connection_t *c, xcb_window_t root, xcb_pixmap_t pixmap) {
    uint32_t values[] = { pixmap };
    xcb_change_window_attributes(c, root, XCB_CW_BACK_PIXMAP, values);
    xcb_clear_area(c, 0, root, 0, 0, 0, 0);
    sync_server(c);
}

/* The arrow a desktop shows (left_ptr of the server's cursor font) on the root window; the
 * server's default is a large X. Left as it is if the cursor font is missing. */
static void set_arrow_cursor(xcb_connection_t *c, xcb_window_t root) {
    enum { XC_LEFT_PTR = 68 };
    xcb_font_t font = xcb_generate_id(c);
    xcb_generic_error_t *error = xcb_request_check(c, xcb_open_font_checked(c, font, 6, "cursor"));
    if (error) {
        free(error);
        fprintf(stderr, "painter: no cursor font; the pointer keeps the server's default shape\n");
        return;
    }
    xcb_cursor_t cursor = xcb_generate_id(c);
    xcb_create_glyph_cursor(c, cursor, font, font, XC_LEFT_PTR, XC_LEFT_PTR + 1, 0, 0, 0, 0xFFFF, 0xFFFF, 0xFFFF);
    uint32_t values[] = { cursor };
    xcb_change_window_attributes(c, root, XCB_CW_CURSOR, values);
    xcb_close_font(c, font);
    sync_server(c);
}

/* Fills bar (BAR_BLOCKS * block_w x BAR_H) with the barcode of index. */
static void draw_barcode(uint32_t *bar, int block_w, int64_t index) {
    int bar_w = BAR_BLOCKS * block_w;
    for (int b = 0; b < BAR_BLOCKS; b++) {
        int bit = b == 0 ? 1 : b == 1 ? 0 : (int)((index >> (BAR_BITS - 1 - (b - 2))) & 1);
        uint32_t colour = bit ? 0x00FFFFFFu : 0x00000000u;
        for (int y = 0; y < BAR_H; y++) {
            uint32_t *p = bar + (size_t)y * bar_w + (size_t)b * block_w;
            for (int x = 0; x < block_w; x++) p[x] = colour;
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: painter DISPLAY still|motion FRAMES.bgra COUNT LOG [RATE]\n"
                        "       painter DISPLAY desktop FRAMES.bgra COUNT LOG RATE BACKGROUND.bgra WxH+X+Y BLOCK_W LAP_S [MOVE_S REST_S]\n");
        return 2;
    }
    const char *display = argv[1];
    int motion = strcmp(argv[2], "motion") == 0;
    int desktop = strcmp(argv[2], "desktop") == 0;
    if (!motion && !desktop && strcmp(argv[2], "still") != 0) die("the mode must be still, motion or desktop");
    const char *frames_path = argv[3];
    int count = atoi(argv[4]);
    const char *log_path = argv[5];
    double rate = argc > 6 ? atof(argv[6]) : 60.0;
    if (count < 1 || rate <= 0) die("bad COUNT or RATE");
    if (!motion && !desktop) count = 1;

    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    xcb_connection_t *c = xcb_connect(display, NULL);
    if (!c || xcb_connection_has_error(c)) die("cannot connect to the X display");
    xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    int width = screen->width_in_pixels, height = screen->height_in_pixels;
    uint8_t depth = screen->root_depth;
    xcb_window_t root = screen->root;
    if (depth != 24) die("the screen must be 24-bit");

    /* The painted area: the whole screen (motion) or the region (desktop). */
    int area_x = 0, area_y = 0, area_w = width, area_h = height, block_w = BAR_BLOCK_W;
    double lap = 8, move_s = 0, rest_s = 0;
    const char *background_path = NULL;
    if (desktop) {
        if (argc < 11) die("desktop needs RATE BACKGROUND.bgra WxH+X+Y BLOCK_W LAP_S");
        background_path = argv[7];
        if (sscanf(argv[8], "%dx%d+%d+%d", &area_w, &area_h, &area_x, &area_y) != 4) die("bad region WxH+X+Y");
        block_w = atoi(argv[9]);
        lap = atof(argv[10]);
        if (argc > 12) {
            move_s = atof(argv[11]);
            rest_s = atof(argv[12]);
            if (move_s <= 0 || rest_s < 0) die("bad MOVE_S REST_S");
        }
        if (area_w < 1 || area_h <= BAR_H || area_x < 0 || area_y < 0 || area_x + area_w > width ||
            area_y + area_h > height)
            die("the region must lie inside the screen and be more than 16 rows high");
        if (block_w < 1 || BAR_BLOCKS * block_w > area_w) die("the barcode does not fit in the region");
        if (lap <= 0) die("bad LAP_S");
    }

    xcb_gcontext_t gc = xcb_generate_id(c);
    xcb_create_gc(c, gc, root, 0, NULL);
    xcb_pixmap_t *pixmaps = load_pixmaps(c, root, gc, depth, frames_path, count, area_w, area_h);

    if (!motion && !desktop) {
        set_background(c, root, pixmaps[0]);
        printf("ready\n");
        fflush(stdout);
        while (!stop_requested) pause();
        xcb_disconnect(c);
        return 0;
    }
    if (desktop) {
        xcb_pixmap_t *background = load_pixmaps(c, root, gc, depth, background_path, 1, width, height);
        set_background(c, root, background[0]);
        set_arrow_cursor(c, root);
    }

    FILE *log = fopen(log_path, "w");
    if (!log) die("cannot open the log");
    int bar_w = BAR_BLOCKS * block_w;
    uint32_t *bar = malloc((size_t)bar_w * BAR_H * 4);
    if (!bar) die("out of memory");

    int64_t period = (int64_t)(1e9 / rate);
    int64_t t0 = now_ns() + 100000000;  /* start on a clean slot 0.1 s from now */
    int64_t index = 0;
    int started = 0;
    while (!stop_requested) {
        sleep_until(t0 + index * period);
        if (stop_requested) break;
        /* The picture below the barcode (desktop: and beside it), then the barcode in one
         * request. (Motion leaves the top rows right of the barcode as they were.) */
        xcb_pixmap_t source = pixmaps[index % count];
        xcb_copy_area(c, source, root, gc, 0, BAR_H, (int16_t)area_x, (int16_t)(area_y + BAR_H), (uint16_t)area_w,
                      (uint16_t)(area_h - BAR_H));
        if (desktop && bar_w < area_w)
            xcb_copy_area(c, source, root, gc, (int16_t)bar_w, 0, (int16_t)(area_x + bar_w), (int16_t)area_y,
                          (uint16_t)(area_w - bar_w), BAR_H);
        draw_barcode(bar, block_w, index);
        xcb_put_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, root, gc, (uint16_t)bar_w, BAR_H, (int16_t)area_x,
                      (int16_t)area_y, 0, depth, (uint32_t)((size_t)bar_w * BAR_H * 4), (const uint8_t *)bar);
        if (desktop) {
            /* The pointer's next step along its ellipse, from the paint index (so a late paint
             * puts it where it should be by now). */
            double t = (double)index / rate, moving = t;
            int rests = 0;
            if (rest_s > 0) {
                double cycle = move_s + rest_s, within = fmod(t, cycle);
                moving = floor(t / cycle) * move_s + fmin(within, move_s);
                rests = within > move_s && within - move_s > 1.0 / rate;
            }
            double angle = 2 * M_PI * moving / lap;
            int16_t px = (int16_t)lround(width * (0.5 + 0.4 * cos(angle)));
            int16_t py = (int16_t)lround(height * (0.6 + 0.3 * sin(angle)));
            if (!rests) xcb_warp_pointer(c, XCB_NONE, root, 0, 0, 0, 0, px, py);
        }
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
