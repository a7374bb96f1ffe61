import Foundation
internal import CFFmpeg

extension FFmpeg {
    /// Silences libav's own logging and bounds its allocations, once per process (later calls
    /// do nothing): Reel reports
    /// through `ReelError`, and a damaged file would otherwise put libav's lines next to the one
    /// clear error. `REEL_FFMPEG_LOG=error` (or `warning`, `info`, `debug`) brings them back for
    /// debugging. Every entry point that opens libav calls it first.
    static func silenceLibraryLogging() {
        _ = logLevelSet
    }

    /// Runs once, on first use: Swift initialises a static `let` exactly once, thread-safely.
    private static let logLevelSet: Void = {
        let levels: [String: Int32] = ["error": AV_LOG_ERROR, "warning": AV_LOG_WARNING, "info": AV_LOG_INFO, "debug": AV_LOG_DEBUG]
        let wanted = ProcessInfo.processInfo.environment["REEL_FFMPEG_LOG"].flatMap { levels[$0.lowercased()] }
        av_log_set_level(wanted ?? AV_LOG_QUIET)
        // No single allocation of libav's above 1 GB (an 8K picture is 141 MB; minterpolate
        // on a 4K picture takes more than 512 MB): a damaged header that claims billions of
        // entries makes a demuxer fail with ENOMEM instead of taking gigabytes (the fuzzer
        // found a MOV that asked for 2.8 GB).
        av_max_alloc(1 << 30)
    }()
}
