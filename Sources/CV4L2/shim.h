#ifndef REEL_CV4L2_SHIM_H
#define REEL_CV4L2_SHIM_H
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <poll.h>

// The ioctl request numbers are function-like macros (_IOR/_IOWR with sizeof), which Swift
// cannot import: compute them here.
static const unsigned long reel_vidioc_querycap = VIDIOC_QUERYCAP;
static const unsigned long reel_vidioc_enum_fmt = VIDIOC_ENUM_FMT;
static const unsigned long reel_vidioc_enum_framesizes = VIDIOC_ENUM_FRAMESIZES;
static const unsigned long reel_vidioc_enum_frameintervals = VIDIOC_ENUM_FRAMEINTERVALS;
static const unsigned long reel_vidioc_g_fmt = VIDIOC_G_FMT;
static const unsigned long reel_vidioc_s_fmt = VIDIOC_S_FMT;
static const unsigned long reel_vidioc_g_parm = VIDIOC_G_PARM;
static const unsigned long reel_vidioc_s_parm = VIDIOC_S_PARM;
static const unsigned long reel_vidioc_reqbufs = VIDIOC_REQBUFS;
static const unsigned long reel_vidioc_querybuf = VIDIOC_QUERYBUF;
static const unsigned long reel_vidioc_qbuf = VIDIOC_QBUF;
static const unsigned long reel_vidioc_dqbuf = VIDIOC_DQBUF;
static const unsigned long reel_vidioc_streamon = VIDIOC_STREAMON;
static const unsigned long reel_vidioc_streamoff = VIDIOC_STREAMOFF;

// ioctl is variadic in C, which Swift cannot call: a fixed-argument wrapper.
static inline int reel_v4l2_ioctl(int fd, unsigned long request, void *argument) {
    return ioctl(fd, request, argument);
}
#endif
