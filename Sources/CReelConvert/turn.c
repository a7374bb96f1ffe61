// Turning a plane by quarter turns and mirroring it: the orientation stage of a capture
// connection (CaptureConnection.videoOrientation, isVideoMirrored).
//
// Each destination row is read from the source along a straight line: a source row forwards
// or backwards (0 and 180 degrees), or a source column downwards or upwards (90 and 270). So
// every destination pixel is `source[start + x * step]` with a start and a step fixed for its
// row; copying whole rows (0 degrees, not mirrored) is a memcpy. Pixels are moved as 1, 2 or
// 4-byte units, which keeps Y, interleaved CbCr and BGRA pixels whole.
#include "CReelConvert.h"
#include <string.h>

#define TURN_ROW(type)                                                                         \
    do {                                                                                       \
        const type *s = (const type *)(const void *)(source + start);                         \
        type *d = (type *)(void *)(destination + y * destination_stride);                     \
        ptrdiff_t st = step / (ptrdiff_t)sizeof(type);                                         \
        for (int x = 0; x < out_width; x++) d[x] = s[x * st];                                  \
    } while (0)

int reel_turn_plane(const uint8_t *source, ptrdiff_t source_stride, int width, int height, int bytes_per_pixel,
                    uint8_t *destination, ptrdiff_t destination_stride, int rotation, int mirrored) {
    if (bytes_per_pixel != 1 && bytes_per_pixel != 2 && bytes_per_pixel != 4) return -1;
    if (rotation != 0 && rotation != 90 && rotation != 180 && rotation != 270) return -1;
    if (width <= 0 || height <= 0) return 0;
    const ptrdiff_t bpp = bytes_per_pixel;
    const int quarter = rotation == 90 || rotation == 270;
    const int out_width = quarter ? height : width, out_height = quarter ? width : height;
    // Turned clockwise, then mirrored: destination (x, y) is the turned picture's
    // (mirrored ? out_width - 1 - x : x, y), which is source pixel:
    //     0: (x, y)    90: (y, height - 1 - x)    180: (width - 1 - x, height - 1 - y)    270: (width - 1 - y, x)
    for (int y = 0; y < out_height; y++) {
        ptrdiff_t start, step;   // in bytes: where destination x = 0 reads, and the move per x
        switch (rotation) {
        case 0: start = y * source_stride; step = bpp; break;
        case 90: start = (ptrdiff_t)(height - 1) * source_stride + y * bpp; step = -source_stride; break;
        case 180: start = (ptrdiff_t)(height - 1 - y) * source_stride + (ptrdiff_t)(width - 1) * bpp; step = -bpp; break;
        default: start = (ptrdiff_t)(width - 1 - y) * bpp; step = source_stride; break;
        }
        if (mirrored) {
            start += (ptrdiff_t)(out_width - 1) * step;
            step = -step;
        }
        if (step == bpp) {
            memcpy(destination + y * destination_stride, source + start, (size_t)out_width * (size_t)bpp);
        } else if (bpp == 1) {
            TURN_ROW(uint8_t);
        } else if (bpp == 2) {
            TURN_ROW(uint16_t);
        } else {
            TURN_ROW(uint32_t);
        }
    }
    return 0;
}
