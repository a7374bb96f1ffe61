/*
 * resumeprobe.c — an LD_PRELOAD shim for bench/resume.py: logs when reel hands frames to its
 * encoders and packets to its muxers, on CLOCK_MONOTONIC, so that the time from a resume to the
 * first frame of the new clip can be read from the outside, the same way for any version of reel
 * (both call FFmpeg's shared libraries through these entry points).
 *
 * Each call appends one line to the file named by $REEL_RESUMEPROBE_LOG:
 *
 *   open   T0 T1 CTX CODEC      avcodec_open2 entered at T0, returned at T1 (an encoder opened)
 *   send   T CTX PTS            avcodec_send_frame of a video frame (PTS -1: the flush, NULL)
 *   recv   T CTX PTS KEY        avcodec_receive_packet returned a video packet
 *   header T FMT                avformat_write_header (a file's muxer began)
 *   write  T FMT PTS KEY        av_interleaved_write_frame / av_write_frame of a video packet
 *
 * T are nanoseconds of CLOCK_MONOTONIC (Python's time.monotonic_ns()). Audio frames and packets
 * are not logged. One write(2) per line on an O_APPEND descriptor: lines from the encoder's and
 * the file's threads do not mix. Build: gcc -O2 -shared -fPIC resumeprobe.c -o resumeprobe.so -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

static int log_fd = -1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void open_log(void) {
    const char *path = getenv("REEL_RESUMEPROBE_LOG");
    if (path && *path) log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void put(const char *line, int n) {
    pthread_once(&once, open_log);
    if (log_fd >= 0 && n > 0) {
        ssize_t ignored = write(log_fd, line, (size_t)n);
        (void)ignored;
    }
}

#define NEXT(name) \
    static __typeof__(name) *real; \
    if (!real) real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

int avcodec_open2(AVCodecContext *ctx, const AVCodec *codec, AVDictionary **options) {
    NEXT(avcodec_open2);
    int64_t t0 = now_ns();
    int ret = real(ctx, codec, options);
    int64_t t1 = now_ns();
    const AVCodec *c = codec ? codec : (ctx ? ctx->codec : NULL);
    if (ret == 0 && c && av_codec_is_encoder(c) && c->type == AVMEDIA_TYPE_VIDEO) {
        char line[160];
        put(line, snprintf(line, sizeof line, "open %" PRId64 " %" PRId64 " %p %s\n", t0, t1, (void *)ctx, c->name));
    }
    return ret;
}

int avcodec_send_frame(AVCodecContext *ctx, const AVFrame *frame) {
    NEXT(avcodec_send_frame);
    if (ctx && ctx->codec_type == AVMEDIA_TYPE_VIDEO && av_codec_is_encoder(ctx->codec)) {
        char line[128];
        put(line, snprintf(line, sizeof line, "send %" PRId64 " %p %" PRId64 "\n", now_ns(), (void *)ctx,
                           frame ? (int64_t)frame->pts : (int64_t)-1));
    }
    return real(ctx, frame);
}

int avcodec_receive_packet(AVCodecContext *ctx, AVPacket *pkt) {
    NEXT(avcodec_receive_packet);
    int ret = real(ctx, pkt);
    if (ret == 0 && ctx && ctx->codec_type == AVMEDIA_TYPE_VIDEO) {
        char line[128];
        put(line, snprintf(line, sizeof line, "recv %" PRId64 " %p %" PRId64 " %d\n", now_ns(), (void *)ctx,
                           (int64_t)pkt->pts, (pkt->flags & AV_PKT_FLAG_KEY) ? 1 : 0));
    }
    return ret;
}

int avformat_write_header(AVFormatContext *s, AVDictionary **options) {
    NEXT(avformat_write_header);
    char line[96];
    put(line, snprintf(line, sizeof line, "header %" PRId64 " %p\n", now_ns(), (void *)s));
    return real(s, options);
}

static void log_write(AVFormatContext *s, AVPacket *pkt) {
    if (!s || !pkt || pkt->stream_index < 0 || (unsigned)pkt->stream_index >= s->nb_streams) return;
    if (s->streams[pkt->stream_index]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) return;
    char line[128];
    put(line, snprintf(line, sizeof line, "write %" PRId64 " %p %" PRId64 " %d\n", now_ns(), (void *)s,
                       (int64_t)pkt->pts, (pkt->flags & AV_PKT_FLAG_KEY) ? 1 : 0));
}

int av_interleaved_write_frame(AVFormatContext *s, AVPacket *pkt) {
    NEXT(av_interleaved_write_frame);
    log_write(s, pkt);
    return real(s, pkt);
}

int av_write_frame(AVFormatContext *s, AVPacket *pkt) {
    NEXT(av_write_frame);
    log_write(s, pkt);
    return real(s, pkt);
}
