#ifndef CREELCONVERT_H
#define CREELCONVERT_H

#include <stddef.h>
#include <stdint.h>

/// Converts rows [top, bottom) of a BGRA picture `width` pixels wide (full-range RGB, the
/// alpha byte ignored) into the same rows of a planar 4:2:0 picture in BT.709 limited range
/// (what libswscale makes of it with SWS_POINT, to within 1 in every sample). `top` and
/// `bottom` are even, `width` is even; each chroma sample is the mean of the two pixels of the
/// lower row of its pair. The planes are those of the whole picture (row 0 at their start).
void reel_bgra_to_i420_rows(const uint8_t *bgra, ptrdiff_t bgra_stride, int width, int top, int bottom,
                            uint8_t *y, ptrdiff_t y_stride, uint8_t *u, ptrdiff_t u_stride,
                            uint8_t *v, ptrdiff_t v_stride);

/// Which code the conversion runs on this processor: "avx2", "sse4.1" or "default".
const char *reel_bgra_to_i420_variant(void);

/// Copies a plane of `width` x `height` pixels of `bytes_per_pixel` bytes (1, 2 or 4) into
/// `destination`, turned clockwise by `rotation` degrees (0, 90, 180 or 270) and then, if
/// `mirrored`, flipped left to right: the destination plane is `height` x `width` pixels for 90
/// and 270. Rows are `source_stride` and `destination_stride` bytes apart. Returns 0, or -1 for
/// a rotation or pixel size it does not know (nothing written).
int reel_turn_plane(const uint8_t *source, ptrdiff_t source_stride, int width, int height, int bytes_per_pixel,
                    uint8_t *destination, ptrdiff_t destination_stride, int rotation, int mirrored);

#endif
