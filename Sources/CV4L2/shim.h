#ifndef REEL_CV4L2_SHIM_H
#define REEL_CV4L2_SHIM_H
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#endif
