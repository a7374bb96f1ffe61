// BGRA (full-range RGB) to 4:2:0 YUV in BT.709 limited range, in fixed point.
//
// Y  = 16  + 219/255 * (Kr R + Kg G + Kb B)
// Cb = 128 + 224/255 * (B - Y') / (2 (1 - Kb))
// Cr = 128 + 224/255 * (R - Y') / (2 (1 - Kr))      Kr = 0.2126, Kb = 0.0722
//
// Coefficients carry 16 fractional bits. Chroma is taken from the lower row of each pair of
// rows, the mean of two neighbouring pixels, as libswscale's point-sampling conversion takes
// it. The loops work on 16 pixels at a time in the compiler's vector types, so that even an
// unoptimised build (SwiftPM's debug builds are -O0, and a package cannot ask for more without
// an unsafe flag) runs vector instructions: 1.7 ms a 1080p frame at -O0, 0.6 ms at -O2, where
// the same loops written per pixel took 8.3 ms at -O0 (bench/convert.sh, bench/RESULTS.md).
// Each function is built for AVX2, SSE4.1 and the x86-64 baseline; the loader picks the best
// the processor runs. The tail of a row (under 16 pixels) is done one pixel at a time.
#include "CReelConvert.h"

#define FRACTION 16
#define ROUND (1 << (FRACTION - 1))

enum {
    YR = 11966, YG = 40254, YB = 4064,        // round(K * 219/255 * 65536); they sum to 219/255
    UR = -6596, UG = -22188, UB = 28784,      // Cb: -Kr, -Kg, 1 - Kb over 2 (1 - Kb), * 224/255;
    VR = 28784, VG = -26145, VB = -2639,      // Cr likewise; each sums to 0, so grey is 128
};

// 16 pixels (BGRA, one 32-bit lane each), their 32-bit sums, and 16 bytes out; loads and
// stores need no alignment.
#define LANES 16
typedef uint32_t pixels __attribute__((vector_size(4 * LANES), aligned(1), may_alias));
typedef int32_t sums __attribute__((vector_size(4 * LANES)));
typedef uint8_t bytes __attribute__((vector_size(LANES), aligned(1), may_alias));

// Where B, G and R sit in a pixel read as a 32-bit number.
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
enum { BS = 24, GS = 16, RS = 8 };
#else
enum { BS = 0, GS = 8, RS = 16 };
#endif

#if defined(__x86_64__) && defined(__clang__)
#define VARIANTS __attribute__((target_clones("avx2", "sse4.1", "default")))
#else
#define VARIANTS
#endif

VARIANTS
static void luma_row(const uint8_t *restrict p, uint8_t *restrict d, int width) {
    int x = 0;
    for (; x + LANES <= width; x += LANES) {
        pixels v = *(const pixels *)(p + 4 * x);
        sums b = (sums)((v >> BS) & 0xff), g = (sums)((v >> GS) & 0xff), r = (sums)((v >> RS) & 0xff);
        sums y = (YR * r + YG * g + YB * b + ((16 << FRACTION) + ROUND)) >> FRACTION;
        *(bytes *)(d + x) = __builtin_convertvector(y, bytes);
    }
    for (; x < width; x++) {
        int32_t b = p[4 * x], g = p[4 * x + 1], r = p[4 * x + 2];
        d[x] = (uint8_t)((YR * r + YG * g + YB * b + (16 << FRACTION) + ROUND) >> FRACTION);
    }
}

// The left and right pixel of each of 16 pairs, from 32 pixels in two vectors.
#define EVEN 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30
#define ODD 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31

VARIANTS
static void chroma_row(const uint8_t *restrict p, uint8_t *restrict du, uint8_t *restrict dv, int half) {
    int x = 0;
    for (; x + LANES <= half; x += LANES) {
        pixels a = *(const pixels *)(p + 8 * x), c = *(const pixels *)(p + 8 * x + 4 * LANES);
        pixels left = __builtin_shufflevector(a, c, EVEN), right = __builtin_shufflevector(a, c, ODD);
        sums b = (sums)(((left >> BS) & 0xff) + ((right >> BS) & 0xff));
        sums g = (sums)(((left >> GS) & 0xff) + ((right >> GS) & 0xff));
        sums r = (sums)(((left >> RS) & 0xff) + ((right >> RS) & 0xff));
        sums u = (UR * r + UG * g + UB * b + ((256 << FRACTION) + (1 << FRACTION))) >> (FRACTION + 1);
        sums v = (VR * r + VG * g + VB * b + ((256 << FRACTION) + (1 << FRACTION))) >> (FRACTION + 1);
        *(bytes *)(du + x) = __builtin_convertvector(u, bytes);
        *(bytes *)(dv + x) = __builtin_convertvector(v, bytes);
    }
    for (; x < half; x++) {
        int32_t b = p[8 * x] + p[8 * x + 4], g = p[8 * x + 1] + p[8 * x + 5], r = p[8 * x + 2] + p[8 * x + 6];
        du[x] = (uint8_t)((UR * r + UG * g + UB * b + (256 << FRACTION) + (1 << FRACTION)) >> (FRACTION + 1));
        dv[x] = (uint8_t)((VR * r + VG * g + VB * b + (256 << FRACTION) + (1 << FRACTION)) >> (FRACTION + 1));
    }
}

void reel_bgra_to_i420_rows(const uint8_t *bgra, ptrdiff_t bgra_stride, int width, int top, int bottom,
                            uint8_t *y, ptrdiff_t y_stride, uint8_t *u, ptrdiff_t u_stride,
                            uint8_t *v, ptrdiff_t v_stride) {
    for (int row = top; row < bottom; row++) {
        luma_row(bgra + row * bgra_stride, y + row * y_stride, width);
    }
    for (int row = top / 2; row < bottom / 2; row++) {
        chroma_row(bgra + (2 * row + 1) * bgra_stride, u + row * u_stride, v + row * v_stride, width / 2);
    }
}

const char *reel_bgra_to_i420_variant(void) {
#if defined(__x86_64__) && defined(__clang__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) return "avx2";
    if (__builtin_cpu_supports("sse4.1")) return "sse4.1";
#endif
    return "default";
}
