// BGRA → I420 (yuv420p) and → NV12 through libswscale, configured as Reel's VideoEncoder
// configures it (same size, SWS_POINT, BT.709 full-range RGB in, BT.709 limited range out),
// against libyuv's ARGBToI420 / ARGBToNV12 (libyuv's "ARGB" is BGRA in memory on a
// little-endian machine). Single thread, the same input picture for every converter, many
// iterations; prints ms per frame (wall and thread CPU, the median of several batches) and how
// far libyuv's pixels are from swscale's.
//
//   cc -O2 bench/convert.c -o /tmp/convert $(pkg-config --cflags --libs libswscale libavutil) -lyuv
//   /tmp/convert 1920 1080 200
//
// Run by bench/convert.sh, which builds it and runs both sizes.
#include <libswscale/swscale.h>
#include <libavutil/pixfmt.h>
#include <libyuv.h>
#include "CReelConvert.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// A picture with both smooth areas and detail: gradients with a deterministic noise on top,
// and blocks of saturated colours (where the matrices differ most).
static void fill(uint8_t *bgra, int width, int height) {
    uint32_t seed = 12345;
    for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
            seed = seed * 1664525u + 1013904223u;
            uint8_t *p = bgra + ((size_t)y * width + x) * 4;
            int block = ((x / 64) + (y / 64)) % 4;
            if (block == 0) {
                p[0] = (uint8_t)(x * 255 / width); p[1] = (uint8_t)(y * 255 / height); p[2] = (uint8_t)((x + y) & 255);
            } else if (block == 1) {
                p[0] = seed >> 24; p[1] = seed >> 16; p[2] = seed >> 8;
            } else if (block == 2) {
                static const uint8_t colours[6][3] = {{0, 0, 255}, {0, 255, 0}, {255, 0, 0}, {0, 255, 255}, {255, 0, 255}, {255, 255, 0}};
                const uint8_t *c = colours[(x / 64 + y / 32) % 6];
                p[0] = c[0]; p[1] = c[1]; p[2] = c[2];
            } else {
                uint8_t g = (uint8_t)((x ^ y) & 255);
                p[0] = g; p[1] = g; p[2] = g;
            }
            p[3] = 255;
        }
    }
}

typedef struct {
    const char *name;
    void (*convert)(void *state);
    void *state;
} Converter;

typedef struct {
    struct SwsContext *context;
    const uint8_t *source[4];
    int sourceStride[4];
    uint8_t *destination[4];
    int destinationStride[4];
    int height;
} SwsState;

static void run_sws(void *s) {
    SwsState *state = s;
    sws_scale(state->context, state->source, state->sourceStride, 0, state->height,
              state->destination, state->destinationStride);
}

typedef struct {
    const uint8_t *bgra;
    int width, height;
    uint8_t *y, *u, *v, *uv;
} YuvState;

static void run_yuv_i420(void *s) {
    YuvState *state = s;
    ARGBToI420(state->bgra, state->width * 4, state->y, state->width, state->u, state->width / 2,
               state->v, state->width / 2, state->width, state->height);
}

static void run_yuv_nv12(void *s) {
    YuvState *state = s;
    ARGBToNV12(state->bgra, state->width * 4, state->y, state->width, state->uv, state->width,
               state->width, state->height);
}

static void run_reel(void *s) {
    YuvState *state = s;
    reel_bgra_to_i420_rows(state->bgra, state->width * 4, state->width, 0, state->height, state->y, state->width,
                           state->u, state->width / 2, state->v, state->width / 2);
}

static struct SwsContext *context_with(int width, int height, enum AVPixelFormat destination, int matrix) {
    struct SwsContext *context = sws_getContext(width, height, AV_PIX_FMT_BGRA, width, height, destination,
                                                SWS_POINT, NULL, NULL, NULL);
    if (!context) { fprintf(stderr, "sws_getContext failed\n"); exit(1); }
    // As Scaler.prepare does for VideoEncoder: BT.709 full range in, BT.709 limited range out.
    sws_setColorspaceDetails(context, sws_getCoefficients(matrix), 1,
                             sws_getCoefficients(matrix), 0, 0, 1 << 16, 1 << 16);
    return context;
}

static struct SwsContext *reel_context(int width, int height, enum AVPixelFormat destination) {
    return context_with(width, height, destination, SWS_CS_ITU709);
}

static void measure(const Converter *c, int iterations, int width, int height) {
    enum { batches = 5 };
    double wall[batches], cpu[batches];
    c->convert(c->state); // warm up: caches, lazily made tables
    int per = iterations / batches > 0 ? iterations / batches : 1;
    for (int b = 0; b < batches; b++) {
        double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
        for (int i = 0; i < per; i++) c->convert(c->state);
        wall[b] = (now(CLOCK_MONOTONIC) - w0) / per;
        cpu[b] = (now(CLOCK_THREAD_CPUTIME_ID) - c0) / per;
    }
    qsort(wall, batches, sizeof wall[0], compare_doubles);
    qsort(cpu, batches, sizeof cpu[0], compare_doubles);
    printf("%dx%d  %-32s  wall %7.3f ms/frame (min %7.3f)  cpu %7.3f ms/frame (min %7.3f)  %d frames\n",
           width, height, c->name, wall[batches / 2], wall[0], cpu[batches / 2], cpu[0], per * batches);
}

static void difference_of(const char *who, const char *what, const uint8_t *a, const uint8_t *b, size_t n) {
    int worst = 0;
    size_t within = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        if (d > worst) worst = d;
        if (d <= 1) within++;
    }
    printf("  %s vs swscale %-3s: max |diff| %3d, %.2f%% of samples within ±1\n", who, what, worst, 100.0 * within / n);
}

static void difference(const char *what, const uint8_t *a, const uint8_t *b, size_t n) {
    difference_of("libyuv", what, a, b, n);
}

int main(int argc, char **argv) {
    int width = argc > 1 ? atoi(argv[1]) : 1920;
    int height = argc > 2 ? atoi(argv[2]) : 1080;
    int iterations = argc > 3 ? atoi(argv[3]) : 200;
    size_t pixels = (size_t)width * height;
    uint8_t *bgra = aligned_alloc(64, pixels * 4);
    fill(bgra, width, height);

    uint8_t *sy = aligned_alloc(64, pixels), *su = aligned_alloc(64, pixels / 4), *sv = aligned_alloc(64, pixels / 4);
    uint8_t *sny = aligned_alloc(64, pixels), *snuv = aligned_alloc(64, pixels / 2);
    uint8_t *ly = aligned_alloc(64, pixels), *lu = aligned_alloc(64, pixels / 4), *lv = aligned_alloc(64, pixels / 4);
    uint8_t *lny = aligned_alloc(64, pixels), *lnuv = aligned_alloc(64, pixels / 2);

    SwsState i420 = {reel_context(width, height, AV_PIX_FMT_YUV420P), {bgra}, {width * 4},
                     {sy, su, sv}, {width, width / 2, width / 2}, height};
    SwsState nv12 = {reel_context(width, height, AV_PIX_FMT_NV12), {bgra}, {width * 4},
                     {sny, snuv}, {width, width}, height};
    YuvState yuvI420 = {bgra, width, height, ly, lu, lv, NULL};
    YuvState yuvNV12 = {bgra, width, height, lny, NULL, NULL, lnuv};
    uint8_t *ry = aligned_alloc(64, pixels), *ru = aligned_alloc(64, pixels / 4), *rv = aligned_alloc(64, pixels / 4);
    YuvState reel = {bgra, width, height, ry, ru, rv, NULL};
    Converter converters[] = {
        {"swscale BGRA->yuv420p (BT.709)", run_sws, &i420},
        {"reel BGRA->yuv420p (BT.709)", run_reel, &reel},
        {"libyuv ARGBToI420 (BT.601)", run_yuv_i420, &yuvI420},
        {"swscale BGRA->nv12 (BT.709)", run_sws, &nv12},
        {"libyuv ARGBToNV12 (BT.601)", run_yuv_nv12, &yuvNV12},
    };
    for (size_t i = 0; i < sizeof converters / sizeof converters[0]; i++)
        measure(&converters[i], iterations, width, height);

    // Reel's own converter (Sources/CReelConvert, what VideoEncoder uses) against swscale.
    printf("  (reel's converter runs its %s code)\n", reel_bgra_to_i420_variant());
    difference_of("reel", "Y", sy, ry, pixels);
    difference_of("reel", "U", su, ru, pixels / 4);
    difference_of("reel", "V", sv, rv, pixels / 4);
    // The pixels: libyuv has no BT.709 RGB→YUV, so its BT.601 output is compared with what
    // Reel writes today (swscale BT.709 limited).
    difference("Y", sy, ly, pixels);
    difference("U", su, lu, pixels / 4);
    difference("V", sv, lv, pixels / 4);
    // The same comparison with swscale set to BT.601 limited, libyuv's matrix: shows that the
    // difference above is the matrix, not the comparison.
    SwsState i601 = {context_with(width, height, AV_PIX_FMT_YUV420P, SWS_CS_ITU601), {bgra}, {width * 4},
                     {sy, su, sv}, {width, width / 2, width / 2}, height};
    run_sws(&i601);
    printf("  (swscale set to BT.601 limited, libyuv's matrix:)\n");
    difference("Y", sy, ly, pixels);
    difference("U", su, lu, pixels / 4);
    difference("V", sv, lv, pixels / 4);
    return 0;
}
