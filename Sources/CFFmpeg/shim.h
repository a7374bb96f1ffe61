#ifndef REEL_CFFMPEG_SHIM_H
#define REEL_CFFMPEG_SHIM_H
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/opt.h>
#include <libavutil/imgutils.h>
#include <libavutil/channel_layout.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/tx.h>
#include <libavutil/error.h>
#include <libswscale/swscale.h>
// libavfilter for its types only: module.modulemap does not link it, and Reel reaches its
// functions through dlopen when a filter is first made (Sources/ReelFFmpeg/LibAVFilter.swift).
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersrc.h>
#include <libavfilter/buffersink.h>
#include <libswresample/swresample.h>

// Macros Swift cannot import.
static inline int reel_averror(int errnum) { return AVERROR(errnum); }
static inline int reel_averror_eof(void) { return AVERROR_EOF; }
static inline int reel_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int64_t reel_av_nopts_value(void) { return AV_NOPTS_VALUE; }
#endif
