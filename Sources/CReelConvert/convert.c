// BGRA (full-range RGB) to 4:2:0 YUV in BT.709 limited range, in fixed point.
//
// Y  = 16  + 219/255 * (Kr R + Kg G + Kb B)
// Cb = 128 + 224/255 * (B - Y') / (2 (1 - Kb))
// Cr = 128 + 224/255 * (R - Y') / (2 (1 - Kr))      Kr = 0.2126, Kb = 0.0722
//
// Coefficients carry 16 fractional bits. Chroma is taken from the lower row of each pair of
// rows, the mean of two neighbouring pixels, as libswscale's point-sampling conversion takes
// it. The loops are written for the compiler to vectorise; the function is built for AVX2,
// SSE4.1 and the x86-64 baseline, and the loader picks the best the processor runs.
#include "CReelConvert.h"

#define FRACTION 16
#define ROUND (1 << (FRACTION - 1))

enum {
    YR = 11966, YG = 40254, YB = 4064,        // round(K * 219/255 * 65536); they sum to 219/255
    UR = -6596, UG = -22188, UB = 28784,      // Cb: -Kr, -Kg, 1 - Kb over 2 (1 - Kb), * 224/255;
    VR = 28784, VG = -26145, VB = -2639,      // Cr likewise; each sums to 0, so grey is 128
};

#if defined(__x86_64__) && defined(__clang__)
#define VARIANTS __attribute__((target_clones("avx2", "sse4.1", "default")))
#else
#define VARIANTS
#endif

VARIANTS
static void luma_row(const uint8_t *restrict p, uint8_t *restrict d, int width) {
    for (int x = 0; x < width; x++) {
        int32_t b = p[4 * x], g = p[4 * x + 1], r = p[4 * x + 2];
        d[x] = (uint8_t)((YR * r + YG * g + YB * b + (16 << FRACTION) + ROUND) >> FRACTION);
    }
}

VARIANTS
static void chroma_row(const uint8_t *restrict p, uint8_t *restrict du, uint8_t *restrict dv, int half) {
    for (int x = 0; x < half; x++) {
        int32_t b = p[8 * x] + p[8 * x + 4], g = p[8 * x + 1] + p[8 * x + 5], r = p[8 * x + 2] + p[8 * x + 6];
        // Sums of two pixels: one more fractional bit.
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
